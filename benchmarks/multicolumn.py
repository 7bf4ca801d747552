"""Multi-column regression: the searched GP against a random forest and an ARD-SE GP, by cross-validation.

Datasets: scikit-learn's ``load_diabetes`` (442 x 10) and the multi-column cases
of the synthetic suite (``synthetic_recovery.CASES`` with more than one column,
named ``caseNN`` by their index there; 2 to 5 columns, some irrelevant).
K-fold cross-validation (default 10 folds, shuffled, seed 0); in every fold X and
y are standardised with the training fold's mean and standard deviation.

Methods:

* ours: ``CompositionalGPRegressor(random_state=0)`` with its defaults (on two or more
  columns SE on every column -- before issue 29's tabular default SE, RQ, PER, LIN --,
  compositional grammar, greedy, BIC, automatic depth 2 + columns, level screening);
* rf: ``RandomForestRegressor(n_estimators=500, random_state=0)``;
* ard: ``GaussianProcessRegressor(ConstantKernel() * RBF(length_scale=np.ones(d)) +
  WhiteKernel(), normalize_y=True, n_restarts_optimizer=2, random_state=0)``.

Score: the standardised mean squared error, SMSE = mean squared error on the test
fold / variance of the test fold's targets (1 = predicting the test mean; lower is
better), reported as mean +- sd over folds. For ours also the number of input columns
the chosen structure uses (``len(structure_.columns)``) per fold and the most
frequent structure. Seconds are fit + predict per fold. Every (dataset, fold, method)
is one joblib task with one BLAS thread.

Run:  python benchmarks/multicolumn.py [--n-jobs 2] [--folds 10] [--datasets diabetes case16]
                                       [--methods ours rf ard] [--max-n 200] [--json rows.json]
"""

import argparse
import collections
import json
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from skgpsearch import CompositionalGPRegressor
from synthetic_recovery import CASES, make_data

METHODS = ("ours", "rf", "ard")
SYNTHETIC = {f"case{i:02d}": i for i, case in enumerate(CASES) if case.n_features > 1}
DATASETS = ("diabetes",) + tuple(SYNTHETIC)


def load(name):
    """(X, y, description) of a dataset."""
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        return X, y, "sklearn load_diabetes"
    case = CASES[SYNTHETIC[name]]
    X, y, _ = make_data(case)
    return X, y, f"{case.planted} (d={case.n_features})"


def make_model(method, d):
    if method == "ours":
        return CompositionalGPRegressor(random_state=0)
    if method == "rf":
        return RandomForestRegressor(n_estimators=500, random_state=0, n_jobs=1)
    kernel = ConstantKernel() * RBF(length_scale=np.ones(d)) + WhiteKernel()
    return GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=2, random_state=0)


def run_fold(dataset, fold, method, X_train, y_train, X_test, y_test):
    """Fit one method on one fold (standardised with the training fold's statistics)."""
    x_mean, x_std = X_train.mean(axis=0), X_train.std(axis=0)
    x_std = np.where(x_std > 0, x_std, 1.0)
    y_mean, y_std = y_train.mean(), y_train.std()
    Xs_train, Xs_test = (X_train - x_mean) / x_std, (X_test - x_mean) / x_std
    ys_train, ys_test = (y_train - y_mean) / y_std, (y_test - y_mean) / y_std
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = make_model(method, X_train.shape[1]).fit(Xs_train, ys_train)
        prediction = model.predict(Xs_test)
        seconds = time.perf_counter() - start
    # SMSE is unchanged by the standardisation (both numerator and denominator scale by y_std**2)
    row = {
        "dataset": dataset, "fold": fold, "method": method, "n_test": int(len(y_test)),
        "smse": float(np.mean((prediction - ys_test) ** 2) / np.var(ys_test)),
        "seconds": seconds,
    }
    if method == "ours":
        row["structure"] = str(model.structure_)
        row["columns_used"] = len(model.structure_.columns)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS, metavar="NAME",
                        help=f"from {', '.join(DATASETS)}")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--max-n", type=int, default=None,
                        help="use a random subset of N rows of each dataset (seed 0)")
    parser.add_argument("--json", default=None, help="save the rows (and settings) to this file")
    args = parser.parse_args()

    data, descriptions = {}, {}
    for name in args.datasets:
        X, y, descriptions[name] = load(name)
        if args.max_n is not None and len(y) > args.max_n:
            rows = np.sort(np.random.default_rng(0).choice(len(y), size=args.max_n, replace=False))
            X, y = X[rows], y[rows]
        data[name] = (X, y)
    print("Multi-column regression, K-fold CV, SMSE = test MSE / variance of the test targets (lower is better)")
    print(f"settings: datasets {', '.join(args.datasets)}; methods {', '.join(args.methods)}; {args.folds} folds; "
          f"max-n = {args.max_n or 'all rows'}; n_jobs = {args.n_jobs} ((dataset, fold, method) tasks in parallel)",
          flush=True)

    tasks = []
    for name in args.datasets:
        X, y = data[name]
        for fold, (train, test) in enumerate(KFold(args.folds, shuffle=True, random_state=0).split(X)):
            for method in args.methods:
                tasks.append((name, fold, method, X[train], y[train], X[test], y[test]))
    # the searches first (the longest tasks), so that the queue ends with short ones
    tasks.sort(key=lambda t: (t[2] != "ours", -t[3].size))
    start = time.perf_counter()
    rows = Parallel(n_jobs=args.n_jobs)(delayed(run_fold)(*task) for task in tasks)
    wall = time.perf_counter() - start
    rows.sort(key=lambda r: (args.datasets.index(r["dataset"]), args.methods.index(r["method"]), r["fold"]))

    print()
    print("| dataset | n x d | method | SMSE mean +- sd | s per fold | columns used (ours) | most frequent structure (ours) |")
    print("|---|---|---|---|---|---|---|")
    for name in args.datasets:
        X, _ = data[name]
        for method in args.methods:
            sub = [r for r in rows if r["dataset"] == name and r["method"] == method]
            smse = np.array([r["smse"] for r in sub])
            seconds = np.mean([r["seconds"] for r in sub])
            used, common = "", ""
            if method == "ours":
                counts = [r["columns_used"] for r in sub]
                used = f"{np.mean(counts):.1f} of {X.shape[1]} ({min(counts)}-{max(counts)})"
                text, times = collections.Counter(r["structure"] for r in sub).most_common(1)[0]
                common = f"{text} ({times}/{len(sub)})"
            print(f"| {name}: {descriptions[name]} | {X.shape[0]} x {X.shape[1]} | {method} | "
                  f"{smse.mean():.3f} +- {smse.std(ddof=1) if len(smse) > 1 else 0.0:.3f} | {seconds:.1f} | "
                  f"{used} | {common} |")
    if "ours" in args.methods:
        print()
        print("ours per fold: columns used; seconds")
        print()
        print("| dataset | columns used per fold | seconds per fold |")
        print("|---|---|---|")
        for name in args.datasets:
            sub = [r for r in rows if r["dataset"] == name and r["method"] == "ours"]
            print(f"| {name} | {', '.join(str(r['columns_used']) for r in sub)} | "
                  f"{', '.join('%.0f' % r['seconds'] for r in sub)} |")
    print(f"\nwall time {wall:.0f} s; sum of task times {sum(r['seconds'] for r in rows):.0f} s")

    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"settings": vars(args), "wall_seconds": wall, "rows": rows}, handle, indent=1)
        print(f"rows saved to {args.json}")


if __name__ == "__main__":
    main()
