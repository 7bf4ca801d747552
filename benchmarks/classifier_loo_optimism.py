"""How optimistic is a classifier's calibrated leave-one-out density, per hyperparameter?

The select stage stacks a classifier's finalists by their leave-one-out log densities, each
calibrated as the model would be if chosen (``BinaryLaplaceModel.loo_log_density``), discounted by
``LOO_OPTIMISM_PER_HYPERPARAMETER`` nats per hyperparameter: the hyperparameters were fitted on the
rows the densities score. This measures that optimism directly. Each structure (one ARD kernel,
the isotropic kernel, the additive kernel over all columns) is fitted alone on the training rows
of every fold (a fixed-structure grammar, the classifier's defaults otherwise, behind a
StandardScaler). For each binary problem of the fit (one for two classes, one per class for
more) it compares the summed leave-one-out log density of the training labels with the test rows'
log density under the same calibrated predictive, scaled to the training rows:

    optimism = LOO sum − n_train × (test sum / n_test)

The tables give the optimism summed over folds and problems, divided by the hyperparameters they
had, per structure and data set; and the pooled estimate over all of them with its standard error
(from the spread over problems and folds).

Run:  python benchmarks/classifier_loo_optimism.py [--datasets breast449 biopsy] [--n-jobs 2]
"""

import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

import tabular
import unseen
from skgpsearch import CompositionalGPClassifier
from skgpsearch.grammar import FixedStructureGrammar, parse

DATASETS = tabular.CLASSIFICATION + ["iris", "anes96", "participation", "crabs", "fgl", "vote92", "birthwt", "cats",
                                     "pima_tr", "fair", "biopsy", "mroz"]
N_FOLDS = 5


def load(name):
    if name in tabular.CLASSIFICATION:
        X, y = tabular.load(name)[:2]
        return X, y
    X, y, _ = unseen.load(name)
    return X, y


def structures(n_features):
    columns = range(n_features)
    return {
        "ARD": " * ".join(f"SE({c})" for c in columns),
        "isotropic": f"SE({', '.join(map(str, columns))})",
        "additive": " + ".join(f"SE({c})" for c in columns),
    }


def fold_optimism(name, fold, train, test, X, y):
    """[(structure, optimism in nats, hyperparameters, n_train, loo per row, test per row)] of one fold."""
    warnings.simplefilter("ignore")
    scaler = StandardScaler().fit(X[train])
    X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
    rows = []
    for label, text in structures(X.shape[1]).items():
        if label != "ARD" and X.shape[1] == 1:
            continue
        model = CompositionalGPClassifier(grammar=FixedStructureGrammar(parse(text)), random_state=0, n_jobs=1)
        model.fit(X_train, y[train])
        classes = model.classes_
        for i, binary in enumerate(model._binary_models):
            positive = classes[1] if len(classes) == 2 else classes[i]
            loo = float(np.nansum(binary.loo_log_density()))
            p = np.clip(binary.posterior.predict_proba(X_test), 1e-300, 1.0)
            is_positive = y[test] == positive
            test_sum = float(np.sum(np.log(np.where(is_positive, p, 1.0 - p))))
            n_train, n_test = len(train), len(test)
            rows.append((label, loo - n_train * test_sum / n_test, binary.n_hyperparameters_, n_train,
                         loo / n_train, test_sum / n_test))
    return name, fold, rows


def main():
    args = unseen.dataset_arguments(__doc__, DATASETS)
    jobs = []
    for name in args.datasets:
        X, y = load(name)
        splitter = StratifiedKFold(N_FOLDS, shuffle=True, random_state=0)
        jobs += [(name, fold, train, test, X, y) for fold, (train, test) in enumerate(splitter.split(X, y))]
    results = Parallel(n_jobs=args.n_jobs, verbose=0)(delayed(fold_optimism)(*job) for job in jobs)
    print("| data | structure | hyperparameters (a problem) | LOO / row | test / row | optimism per hyperparameter "
          "(nats) |\n|---|---|---|---|---|---|")
    pooled = {}
    for name in args.datasets:
        for label in ("ARD", "isotropic", "additive"):
            cells = [r for n, _, rows in results if n == name for r in rows if r[0] == label]
            if not cells:
                continue
            optimism = sum(c[1] for c in cells)
            k = sum(c[2] for c in cells)
            print(f"| {name} | {label} | {cells[0][2]} | {np.mean([c[4] for c in cells]):.4f} | "
                  f"{np.mean([c[5] for c in cells]):.4f} | {optimism / k:.2f} |", flush=True)
            pooled.setdefault(label, []).extend((c[1], c[2]) for c in cells)
    print("\n| structure | pooled optimism per hyperparameter | standard error | problems x folds |\n|---|---|---|---|")
    everything = []
    for label, pairs in pooled.items():
        o, k = np.array(pairs).T
        per = o / k
        everything.extend(pairs)
        print(f"| {label} | {o.sum() / k.sum():.2f} | {np.std(per, ddof=1) / np.sqrt(len(per)):.2f} | {len(per)} |")
    o, k = np.array(everything).T
    per = o / k
    print(f"| all | {o.sum() / k.sum():.2f} | {np.std(per, ddof=1) / np.sqrt(len(per)):.2f} | {len(per)} |")


if __name__ == "__main__":
    main()
