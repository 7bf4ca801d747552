"""scikit-learn's synthetic tables: our defaults against one ARD kernel and a RandomForest.

A quick check on data no default was tuned on, each with a known structure: Friedman's three
regression functions (#1 is a sum of an interaction, a sine and linear and quadratic terms over 5
of its 10 columns), a linear regression with 4 of 8 columns informative, two-moons and circles
(2 columns, curved boundaries) and Hastie et al.'s 10-column problem, whose class is whether the sum
of squares exceeds a chi-squared median: an additive function that one ARD kernel models poorly.

Each method sees the same 3 shuffled folds (stratified for classes), behind a StandardScaler: ours
with defaults (``n_jobs=2``), scikit-learn's GP with one ARD RBF kernel (plus a ``WhiteKernel`` for
regression; ``n_restarts_optimizer=2``) and a RandomForest (500 trees). Printed: the mean test SMSE
(regression) or error % (classification), and seconds per fold.

Run:  python benchmarks/synthetic_tabular.py [--datasets friedman1 hastie]
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import (make_circles, make_friedman1, make_friedman2, make_friedman3, make_hastie_10_2,
                              make_moons, make_regression)
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as Constant
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor

DATASETS = {
    "friedman1": lambda: ("regression",) + make_friedman1(300, 10, noise=1.0, random_state=1),
    "friedman2": lambda: ("regression",) + make_friedman2(300, noise=50, random_state=1),
    "friedman3": lambda: ("regression",) + make_friedman3(300, noise=0.1, random_state=1),
    "linear": lambda: ("regression",) + make_regression(300, 8, n_informative=4, noise=20, random_state=1)[:2],
    "moons": lambda: ("classification",) + make_moons(400, noise=0.3, random_state=1),
    "circles": lambda: ("classification",) + make_circles(400, noise=0.15, factor=0.5, random_state=1),
    "hastie": lambda: ("classification",) + make_hastie_10_2(500, random_state=1),
}
METHODS = ["ours", "sklearn GP ARD", "RandomForest"]


def make_estimator(method, task, n_columns, n_jobs):
    classify = task == "classification"
    if method == "ours":
        return (CompositionalGPClassifier if classify else CompositionalGPRegressor)(n_jobs=n_jobs, random_state=0)
    if method == "sklearn GP ARD":
        kernel = Constant(1.0) * RBF(np.ones(n_columns))
        if classify:
            return GaussianProcessClassifier(kernel, n_restarts_optimizer=2, random_state=0)
        return GaussianProcessRegressor(kernel + WhiteKernel(), normalize_y=True, n_restarts_optimizer=2,
                                        random_state=0)
    return (RandomForestClassifier if classify else RandomForestRegressor)(500, random_state=0, n_jobs=n_jobs)


def score(task, prediction, y_test):
    if task == "classification":
        return 100.0 * float(np.mean(prediction != y_test))
    return float(np.mean((prediction - y_test) ** 2) / np.var(y_test))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    print("| dataset | rows x columns | measure | " + " | ".join(METHODS) + " | s / fold (ours, ARD GP, RF) |")
    print("|---|---|---|" + "---|" * len(METHODS) + "---|")
    for name in args.datasets:
        task, X, y = DATASETS[name]()
        splitter = (StratifiedKFold if task == "classification" else KFold)(3, shuffle=True, random_state=0)
        scores, seconds = {}, {}
        for method in METHODS:
            fold_scores, fold_seconds = [], []
            for train, test in splitter.split(X, y):
                model = make_pipeline(StandardScaler(), make_estimator(method, task, X.shape[1], args.n_jobs))
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X[train], y[train])
                fold_seconds.append(time.perf_counter() - start)
                fold_scores.append(score(task, model.predict(X[test]), y[test]))
            scores[method], seconds[method] = np.mean(fold_scores), np.mean(fold_seconds)
        measure = "error %" if task == "classification" else "SMSE"
        best = min(scores.values())
        cells = [f"**{scores[m]:.4g}**" if scores[m] == best else f"{scores[m]:.4g}" for m in METHODS]
        print(f"| {name} | {X.shape[0]} x {X.shape[1]} | {measure} | " + " | ".join(cells) + " | "
              + ", ".join(f"{seconds[m]:.1f}" for m in METHODS) + " |", flush=True)


if __name__ == "__main__":
    main()
