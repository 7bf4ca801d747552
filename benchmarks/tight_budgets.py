"""Held-out error of the defaults under short time budgets, against a RandomForest and the unbounded default.

A user who bounds ``fit`` with ``time_budget`` still expects a model that predicts: on a table, at least as
well as one ARD kernel would. This script fits the defaults on three tables under a few budgets and prints,
per budget, the seconds ``fit`` took, the held-out error and the structure kept (per class for a multi-class
classifier): scikit-learn's diabetes (regression, 10 columns, SMSE), a synthetic 3-class problem of 4000
training rows and 5 columns (the classifier's 2000-row sample and its halving), and scikit-learn's
breast_cancer (30 columns). Columns are standardised; one fixed 70/30 or 80/20 split per table.

Run:  python benchmarks/tight_budgets.py [--budgets 1 3 10] [--n-jobs 2] [--unbounded]
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, make_classification
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor


def tables():
    """(name, estimator class, error name, X_train, X_test, y_train, y_test) of the measured tables."""
    X, y = load_diabetes(return_X_y=True)
    yield ("diabetes 309 x 10", CompositionalGPRegressor, "SMSE",
           *train_test_split(StandardScaler().fit_transform(X), y, test_size=0.3, random_state=0))
    X, y = make_classification(n_samples=5000, n_features=5, n_informative=4, n_redundant=0, n_classes=3,
                               n_clusters_per_class=2, random_state=0)
    yield ("3 classes 4000 x 5", CompositionalGPClassifier, "error %",
           *train_test_split(StandardScaler().fit_transform(X), y, test_size=0.2, random_state=0))
    X, y = load_breast_cancer(return_X_y=True)
    yield ("breast_cancer 455 x 30", CompositionalGPClassifier, "error %",
           *train_test_split(StandardScaler().fit_transform(X), y, test_size=0.2, random_state=0))


def error(model, X, y, regression):
    if regression:
        return float(np.mean((model.predict(X) - y) ** 2) / np.var(y))
    return 100.0 * float(np.mean(model.predict(X) != y))


def structures(model):
    found = model.structure_
    return "; ".join(map(str, found)) if isinstance(found, list) else str(found)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budgets", type=float, nargs="+", default=[1.0, 3.0, 10.0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--unbounded", action="store_true", help="also fit without a time budget")
    args = parser.parse_args()
    rows = []
    for name, estimator, error_name, X_train, X_test, y_train, y_test in tables():
        regression = estimator is CompositionalGPRegressor
        forest = (RandomForestRegressor if regression else RandomForestClassifier)(300, random_state=0, n_jobs=2)
        forest.fit(X_train, y_train)
        rows.append((name, "RandomForest (300 trees)", "", error(forest, X_test, y_test, regression), ""))
        for budget in args.budgets + ([None] if args.unbounded else []):
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = estimator(time_budget=budget, random_state=0, n_jobs=args.n_jobs).fit(X_train, y_train)
            seconds = time.perf_counter() - started
            label = "default, no budget" if budget is None else f"default, time_budget={budget:g}"
            rows.append((name, label, f"{seconds:.1f}", error(model, X_test, y_test, regression),
                         structures(model)))
            print(f"{name}: {label}: {seconds:.1f} s, {error_name} {rows[-1][3]:.4g}", flush=True)
    print()
    print(f"Short time budgets (n_jobs={args.n_jobs}); error: SMSE for regression, % wrong for classification")
    print()
    print("| table | method | seconds | error | structure |")
    print("|---|---|---|---|---|")
    for name, label, seconds, value, found in rows:
        print(f"| {name} | {label} | {seconds} | {value:.4g} | {found} |")


if __name__ == "__main__":
    main()
