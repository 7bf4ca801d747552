"""The classifier's probabilities far from its training rows, and what the turn to the base rate costs among them.

Far from every training row a GP classifier's latent function is its prior's: our calibrated
predictive turns there to the class frequency, p = (1 - w) p + w pi with w = far_weight(s) of the
point's largest prior correlation s with a training row (see ``LaplacePosterior.calibrate_variance``).

Part 1 prints P(class) at far points on a one-column sine (80 rows in [-3, 3]) and on four
blobs of 60, 45, 30 and 5 rows, beside scikit-learn's GaussianProcessClassifier and the class
frequencies. Part 2 fits the default classifier on 10 stratified folds of scikit-learn's wine
and breast_cancer (standardised) and prints the test log loss of its final mixture,
recalibrated for each power k of w = (1 - s)^k (k = none: no turn); the selection (the
finalists' weights) is kept as the fit with the library's power chose it.

Run:  python benchmarks/classifier_far_field.py [--folds 10]
"""

import argparse
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

import skgpsearch._engine._laplace as laplace
from skgpsearch import CompositionalGPClassifier

POWERS = [None, 2, 3, 4, 6]
LIBRARY_FAR_WEIGHT = laplace.far_weight


def far_examples():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (80, 1))
    y = (np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(80) > 0).astype(int)
    far = np.array([[-500.0], [60.0]])
    ours = CompositionalGPClassifier(random_state=0).fit(X, y).predict_proba(far)[:, 1]
    theirs = GaussianProcessClassifier(random_state=0).fit(X, y).predict_proba(far)[:, 1]
    print("| data | far point | ours | scikit-learn GPC | class frequency |\n|---|---|---|---|---|")
    for point, p, q in zip(far[:, 0], ours, theirs):
        print(f"| sine, P(class 1) | x = {point:g} | {p:.3f} | {q:.3f} | {y.mean():.3f} |")
    rng = np.random.default_rng(1)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 4.0]])
    counts = [60, 45, 30, 5]
    X = np.vstack([c + rng.normal(size=(k, 2)) for c, k in zip(centres, counts)])
    y = np.repeat(np.arange(4), counts)
    point = np.array([[1000.0, 1000.0]])
    ours = CompositionalGPClassifier(max_depth=1, random_state=0).fit(X, y).predict_proba(point)[0]
    theirs = GaussianProcessClassifier(random_state=0).fit(X, y).predict_proba(point)[0]
    frequency = np.array(counts) / sum(counts)
    print(f"| four blobs (60/45/30/5), P(classes) | (1000, 1000) | {np.round(ours, 3)} | {np.round(theirs, 3)} | "
          f"{np.round(frequency, 3)} |")


def set_power(k):
    laplace.far_weight = ((lambda s: np.zeros_like(np.asarray(s, dtype=float))) if k is None
                          else (lambda s, k=k: (1.0 - np.asarray(s, dtype=float)) ** k))


def power_costs(n_folds):
    print("\n| data | " + " | ".join(f"log loss, k = {k}" for k in POWERS) + " |")
    print("|---" * (len(POWERS) + 1) + "|")
    for name, loader in (("wine", load_wine), ("breast_cancer", load_breast_cancer)):
        X, y = loader(return_X_y=True)
        losses = {k: [] for k in POWERS}
        for fold, (train, test) in enumerate(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y)):
            if fold >= n_folds:
                break
            scaler = StandardScaler().fit(X[train])
            laplace.far_weight = LIBRARY_FAR_WEIGHT
            clf = CompositionalGPClassifier(random_state=0, n_jobs=2).fit(scaler.transform(X[train]), y[train])
            for k in POWERS:
                set_power(k)
                for model in clf._binary_models:
                    laplace.calibrate_predictive(model.mixture, model.weights, model.y_train_)
                    if k is None:
                        for posterior in model.mixture:
                            posterior.base_rate = None
                p = clf.predict_proba(scaler.transform(X[test]))
                losses[k].append(-np.mean(np.log(p[np.arange(len(test)), np.searchsorted(clf.classes_, y[test])])))
        print(f"| {name} ({n_folds} folds) | " + " | ".join(f"{np.mean(losses[k]):.4f}" for k in POWERS) + " |")
    laplace.far_weight = LIBRARY_FAR_WEIGHT


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=10)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    far_examples()
    power_costs(args.folds)


if __name__ == "__main__":
    main()
