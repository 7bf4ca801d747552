"""Would a search on the log of a positive series forecast better, and would the evidence say so? (issue 31)

Issue 31 names "an amplitude that does not grow" among the possible causes of a poor forecast: on
many positive series (airline passengers, calls, production) the seasonal swing grows with the
level, which a sum of stationary and linear kernels on the raw values can only imitate. On the log
scale such a series is a trend plus a cycle of constant amplitude. This script measures whether
that helps, before anything is built into the estimator:

- ``raw``: the defaults on the series as it is (what ``extrapolation.py`` runs);
- ``log``: the defaults on ``log y``; the forecast in the series' units is the log-normal
  predictive distribution: mean ``exp(mu + s^2 / 2)`` (its RMSE is printed), log density
  ``log N(log y; mu, s^2) - log y``, 95 % interval ``exp(mu -+ 1.96 s)``.

For both, the search's best criterion (BIC) is printed on the raw series' scale: a model of
``log y`` is a model of ``y`` whose log evidence is that of ``log y`` minus ``sum(log y)`` (the
Jacobian of the transform), so the two are comparable, as in a Box-Cox choice by likelihood. The
column "evidence prefers" says which scale a rule "keep the better BIC" would take, and its forecast.

Printed: per series the RMSE, MNLP (noise included) and coverage of the 95 % interval of each
scale's default pick, the best BIC on each scale, and ABCD's RMSE; then how often the log scale's
forecast is better and how the evidence's choice would have done.

Run:  python benchmarks/log_target.py [--series airline call-centre] [--n-jobs 2]
"""

import argparse
import math
import time
import warnings

import numpy as np

from extrapolation import PUBLISHED, component_predictions
from extrapolation import load as load_series
from skgpsearch import CompositionalGPRegressor


def forecast(name, scale, n_jobs, seed):
    """The defaults fitted to a series on ``scale`` ("raw" or "log"): test RMSE, MNLP, coverage, best BIC."""
    X, y = load_series(name, "train")
    X_test, y_test = load_series(name, "test")
    target = np.log(y) if scale == "log" else y
    model = CompositionalGPRegressor(random_state=seed, n_jobs=n_jobs)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, target)
    seconds = time.perf_counter() - start
    mean, sd = component_predictions(model, X_test)[0]
    observed = np.log(y_test) if scale == "log" else y_test
    log_density = -0.5 * np.log(2 * math.pi * sd**2) - 0.5 * (observed - mean) ** 2 / sd**2
    if scale == "log":
        log_density -= np.log(y_test)
        point = np.exp(mean + sd**2 / 2)
    else:
        point = mean
    criteria = np.asarray(model.search_results_["criterion"], dtype=float)
    best_bic = float(np.max(criteria[np.isfinite(criteria)]))
    if scale == "log":
        best_bic -= float(np.sum(np.log(y)))
    return {
        "rmse": float(np.sqrt(np.mean((point - y_test) ** 2))),
        "mnlp": float(-np.mean(log_density)),
        "coverage": float(np.mean(np.abs(observed - mean) <= 1.96 * sd)),
        "bic": best_bic,
        "structure": str(model.structure_),
        "seconds": seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=list(PUBLISHED), choices=list(PUBLISHED), metavar="NAME")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rows = []
    for name in args.series:
        _, y = load_series(name, "train")
        if np.any(y <= 0):
            print(f"skipped: {name} has values <= 0, no log scale", flush=True)
            continue
        row = {"series": name}
        for scale in ("raw", "log"):
            row[scale] = forecast(name, scale, args.n_jobs, args.seed)
            print(f"done: {name} {scale}: {row[scale]['structure']}, RMSE {row[scale]['rmse']:.4g}, "
                  f"in {row[scale]['seconds']:.1f} s", flush=True)
        rows.append(row)

    print()
    print("| series | raw RMSE | log RMSE | ABCD | raw MNLP | log MNLP | raw / log inside 95 % | raw BIC | log BIC "
          "(Jacobian) | evidence prefers | raw structure | log structure |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        raw, log = row["raw"], row["log"]
        prefers = "log" if log["bic"] > raw["bic"] else "raw"
        print(f"| {row['series']} | {raw['rmse']:.4g} | {log['rmse']:.4g} | {PUBLISHED[row['series']][0]:.4g} | "
              f"{raw['mnlp']:.3f} | {log['mnlp']:.3f} | {raw['coverage']:.0%} / {log['coverage']:.0%} | "
              f"{raw['bic']:.1f} | {log['bic']:.1f} | {prefers} | {raw['structure']} | {log['structure']} |")
    if not rows:
        return
    better_rmse = sum(r["log"]["rmse"] < r["raw"]["rmse"] for r in rows)
    better_mnlp = sum(r["log"]["mnlp"] < r["raw"]["mnlp"] for r in rows)
    print(f"\nlog scale better: RMSE on {better_rmse} of {len(rows)} series, MNLP on {better_mnlp}")
    chosen = [r["log"] if r["log"]["bic"] > r["raw"]["bic"] else r["raw"] for r in rows]
    for label, picks in (("raw (today)", [r["raw"] for r in rows]), ("evidence's choice", chosen),
                         ("log always", [r["log"] for r in rows])):
        wins = sum(p["rmse"] < PUBLISHED[r["series"]][0] for p, r in zip(picks, rows))
        print(f"{label}: better than ABCD on {wins} of {len(rows)}, median MNLP "
              f"{np.median([p['mnlp'] for p in picks]):.3f}, geometric mean RMSE / raw "
              f"{math.exp(np.mean([math.log(p['rmse'] / r['raw']['rmse']) for p, r in zip(picks, rows)])):.3f}")


if __name__ == "__main__":
    main()
