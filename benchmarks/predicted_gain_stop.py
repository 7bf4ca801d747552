"""When a table's search stops: the log K rule alone, or also on the next depth's predicted improvement.

A table's search (two or more columns, a criterion in nats) stops at the first depth that improves the
best criterion by at most log K nats for its K candidates (``required_improvement``). Searches often end
with depths whose improvements decay geometrically (breast_cancer: 24.6, 8.6, then 3.0 nats against
log 58 = 4.1): the last depth is paid in full to learn that it was not worth it. With
``PREDICTED_GAIN_STOP`` the search also stops when the next depth's improvement, predicted from the
last two as g_d² / g_(d-1) (``predicted_next_gain``), is at most what the rule would require of it.

This script fits the defaults with the rule on every fold; where it stopped the search (its stop reason
says so), it fits again without it, and prints both: held-out error (SMSE and MSLL for regression, % wrong
for classification), seconds, likelihood evaluations and the depth reached. Folds where the rule did not
fire are the same search both ways.

Data: the classification and regression tables of ``benchmarks/tabular.py`` and the regression tables of
``benchmarks/stopping_rule.py`` (``unseen.py``'s), their first ``--folds`` folds. Needs
``pip install ".[bench]"``.

Run:  python benchmarks/predicted_gain_stop.py [--datasets breast_cancer diabetes] [--folds 3] [--n-jobs 2]
"""

import argparse
import time
import warnings

import numpy as np
from scipy import stats
from sklearn.model_selection import KFold
from sklearn.preprocessing import StandardScaler

import tabular
import unseen
from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor
from skgpsearch._search import _loop

DATASETS = tabular.CLASSIFICATION + [d for d in tabular.REGRESSION if d != "mcycle"] + [
    "star98", "grunfeld", "macrodata", "boston", "caschool", "windsor", "quakes"]
FIRED = "the next depth's, predicted"


def load(name, n_folds):
    """(X, y, task, folds) of a dataset."""
    if name in tabular.CLASSIFICATION or name in tabular.REGRESSION:
        X, y, task = tabular.load(name)
        return X, y, task, tabular.folds(X, y, task)[:n_folds]
    X, y, _ = unseen.load(name)
    return X, y, "regression", list(KFold(5, shuffle=True, random_state=0).split(X, y))[:n_folds]


def fit(task, rule, X_train, y_train, X_test, y_test, n_jobs):
    _loop.PREDICTED_GAIN_STOP = rule
    scaler = StandardScaler().fit(X_train)
    estimator = (CompositionalGPRegressor if task == "regression" else CompositionalGPClassifier)(
        random_state=0, n_jobs=n_jobs)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(scaler.transform(X_train), y_train)
    seconds = time.perf_counter() - start
    results = estimator.search_results_
    reasons = estimator.search_stop_reason_
    reasons = reasons if isinstance(reasons, list) else [reasons]
    paths = estimator.search_path_
    paths = [paths] if isinstance(paths[0], dict) else paths  # one search, or one per class
    row = {"seconds": seconds, "evaluations": int(np.sum(results["n_evaluations"])),
           "depth": "/".join(str(max(level["depth"] for level in path)) for path in paths),
           "fired": any(FIRED in reason for reason in reasons), "structure": str(estimator.structure_)}
    X_test = scaler.transform(X_test)
    if task == "regression":
        mean, std = estimator.predict(X_test, return_std=True)
        row.update(tabular._regression_scores(mean, stats.norm.logpdf(y_test, mean, std), y_train, y_test))
        row["error"] = f"{row['smse']:.4f} / {row['msll']:.3f}"
    else:
        row["error"] = f"{100 * np.mean(estimator.predict(X_test) != y_test):.2f} %"
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    lines = []
    for name in args.datasets:
        X, y, task, folds = load(name, args.folds)
        for fold, (train, test) in enumerate(folds):
            parts = (X[train], y[train], X[test], y[test], args.n_jobs)
            new = fit(task, True, *parts)
            old = fit(task, False, *parts) if new["fired"] else new
            line = (f"| {name} | {fold} | {'yes' if new['fired'] else 'no'} | {old['error']} | {new['error']} | "
                    f"{old['seconds']:.1f} / {new['seconds']:.1f} | {old['evaluations']} / {new['evaluations']} | "
                    f"{old['depth']} / {new['depth']} |")
            print(line, flush=True)
            lines.append(line)
    _loop.PREDICTED_GAIN_STOP = True
    print("\n| data | fold | rule fired | error without | error with | seconds without / with | evaluations "
          "without / with | depth without / with |\n|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
