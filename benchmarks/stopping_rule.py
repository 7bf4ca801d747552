"""When a regression search on a table stops: one nat per depth against log K nats for K candidates.

``min_improvement="auto"`` ends a search at the first depth that improves the best criterion by at
most 1 nat; since 2026-12-04 it also asks a depth of a table (two or more columns) for log K nats,
K being the depth's number of candidates (``skgpsearch._search._loop.required_improvement``). This
script fits the default regressor both ways on the same folds, ``min_improvement=1.0`` being the rule
before, and prints per dataset the held-out SMSE and MSLL (means over folds), the seconds and
likelihood evaluations of a fit, and the depth the search reached; scikit-learn's GP with one ARD RBF
kernel (plus ``WhiteKernel``, ``n_restarts_optimizer=2``) is the yardstick.

Data: the three regression tables of ``benchmarks/tabular.py`` (diabetes, auto_mpg, cpus; their first
5 of 10 folds) and the seven of ``benchmarks/unseen.py`` (star98, grunfeld, macrodata and the R set:
boston, caschool, windsor, quakes; 5 shuffled folds). Needs ``pip install ".[bench]"``.

Run:  python benchmarks/stopping_rule.py [--datasets boston cpus] [--n-jobs 2]
"""

import time
import warnings

import numpy as np
from scipy import stats
from sklearn.model_selection import KFold
from sklearn.preprocessing import StandardScaler

import tabular
import unseen
from skgpsearch import CompositionalGPRegressor

DATASETS = ["diabetes", "auto_mpg", "cpus", "star98", "grunfeld", "macrodata", "boston", "caschool", "windsor",
            "quakes"]
RULES = {"log K (now)": "auto", "1 nat (before)": 1.0}
N_FOLDS = 5


def splits(name):
    """(X, y, [(train, test), ...]) of a dataset."""
    if name in tabular.REGRESSION:
        X, y, task = tabular.load(name)
        return X, y, tabular.folds(X, y, task)[:N_FOLDS]
    X, y, _ = unseen.load(name)
    return X, y, list(KFold(N_FOLDS, shuffle=True, random_state=0).split(X, y))


def run_rule(min_improvement, X_train, y_train, X_test, y_test, n_jobs):
    scaler = StandardScaler().fit(X_train)
    estimator = CompositionalGPRegressor(random_state=0, n_jobs=n_jobs, min_improvement=min_improvement)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(scaler.transform(X_train), y_train)
    seconds = time.perf_counter() - start
    mean, std = estimator.predict(scaler.transform(X_test), return_std=True)
    results = estimator.search_results_
    depths = [d for d, s in zip(results["depth"], results["status"]) if d is not None and s == "ok"]
    return {**tabular._regression_scores(mean, stats.norm.logpdf(y_test, mean, std), y_train, y_test),
            "seconds": seconds, "evaluations": int(np.sum(results["n_evaluations"])), "depth": max(depths),
            "stop": estimator.search_stop_reason_}


def main():
    args = unseen.dataset_arguments(__doc__, DATASETS)
    rows = []
    for name in args.datasets:
        X, y, folds = splits(name)
        results = {rule: [] for rule in RULES}
        ard = []
        for fold, (train, test) in enumerate(folds):
            parts = (X[train], y[train], X[test], y[test], args.n_jobs)
            for rule, option in RULES.items():
                results[rule].append(run_rule(option, *parts))
            ard.append(tabular.run_baseline("sklearn GP ARD", "regression", *parts))
            print(f"{name} fold {fold}: " + "  ".join(
                f"{rule}: SMSE {r[-1]['smse']:.4f} MSLL {r[-1]['msll']:.3f} {r[-1]['seconds']:.1f} s "
                f"{r[-1]['evaluations']} evaluations depth {r[-1]['depth']}" for rule, r in results.items()),
                flush=True)
        for rule, folds_results in results.items():
            mean = {key: np.mean([r[key] for r in folds_results]) for key in ("smse", "msll", "seconds",
                                                                              "evaluations", "depth")}
            rows.append((f"{name} ({X.shape[0]} x {X.shape[1]})", rule, f"{mean['smse']:.4g} / {mean['msll']:.4g}",
                         f"{mean['seconds']:.1f}", f"{mean['evaluations']:.0f}", f"{mean['depth']:.1f}"))
        rows.append((f"{name} ({X.shape[0]} x {X.shape[1]})", "sklearn GP ARD",
                     f"{np.mean([r['smse'] for r in ard]):.4g} / {np.mean([r['msll'] for r in ard]):.4g}",
                     f"{np.mean([r['seconds'] for r in ard]):.1f}", "", ""))
    print("\n| data | rule | SMSE / MSLL | seconds a fold | evaluations a fold | depth reached |\n|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
