"""Our default structure search against a plain scikit-learn CKS loop, on the 11 extrapolation series.

Data: the training parts of the time-series extrapolation benchmark
(``../shared/datasets/extrapolation/NAME-train.csv``); ``--max-n N`` thins each
series to N evenly spaced rows.

* ours: ``CompositionalGPRegressor(random_state=0, n_jobs=N)`` with its defaults
  (base kernels SE, RQ, PER, LIN and the change operators, compositional grammar,
  greedy, BIC, depth 3, the structured starts and no random restarts; ``--our-restarts``
  adds some); the series are run one after the other, each
  search using ``--n-jobs`` workers; wall-clock seconds (the worker processes are
  started once, by a small warm-up search, before the timed runs).
* plain loop: what a user would write with scikit-learn alone: a greedy search over
  the same grammar (``CompositionalGrammar(["SE", "RQ", "PER", "LIN"])``, same depth,
  stop when a level does not improve the BIC, canonical structures fitted once),
  every candidate fitted with ``GaussianProcessRegressor(to_kernel(structure) +
  WhiteKernel(0.1, (1e-6, 10)), normalize_y=True, n_restarts_optimizer=2,
  random_state=0)`` from the data-aware initial values, and the best structure of
  each level expanded without its fitted values. One loop is serial; the loops of
  different series run in parallel (joblib, one BLAS thread each) and their time
  is reported as the serial-equivalent sum of the per-series times.

Both are scored with the same BIC (greater is better): lml - k/2 log n, lml in the
units of the original targets, k the free hyperparameters including the noise.
Goals: ours >= loop on every series; total loop time / total our time >= 20x.

Run:  python benchmarks/search_vs_loop.py [--n-jobs 2] [--series airline solar] [--max-n 200]
                                          [--max-depth 3] [--json rows.json]
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import WhiteKernel
from threadpoolctl import threadpool_limits

from skgpsearch import CompositionalGPRegressor
from skgpsearch.grammar import CompositionalGrammar
from skgpsearch.kernels import DataSummary, to_kernel

# the series, their loader and the thinning are fit_quality's (the same data in both benchmarks)
from fit_quality import DATA_DIR, NOISE_BOUNDS, SERIES, load_series, thin

BASE_KERNELS = ("SE", "RQ", "PER", "LIN")


def bic(lml, k, n):
    """BIC on the log-evidence scale (greater is better), as in skgpsearch."""
    return float(lml) - 0.5 * k * np.log(n)


def run_ours(X, y, max_depth, n_restarts, n_jobs):
    start = time.perf_counter()
    restarts = {} if n_restarts is None else {"n_restarts": n_restarts}
    model = CompositionalGPRegressor(max_depth=max_depth, random_state=0, n_jobs=n_jobs, **restarts)
    model.fit(X, y)
    seconds = time.perf_counter() - start
    return {
        "ours_structure": str(model.structure_),
        "ours_bic": bic(model.log_marginal_likelihood_value_, model.n_hyperparameters_, len(y)),
        "ours_best_score": float(model.best_score_),
        "ours_seconds": seconds,
        "ours_candidates": len(model.search_results_["structure"]),
    }


def fit_candidate(expr, X, y, summary, n_restarts):
    """BIC of one structure fitted by scikit-learn's GaussianProcessRegressor (-inf if it fails)."""
    kernel = to_kernel(expr, summary=summary) + WhiteKernel(0.1, NOISE_BOUNDS)
    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=n_restarts, random_state=0)
    try:
        gp.fit(X, y)
    except (np.linalg.LinAlgError, ValueError):
        return -np.inf
    # scikit-learn reports log p of the normalised targets; shift to the original units
    lml = gp.log_marginal_likelihood_value_ - len(y) * np.log(np.std(y))
    return bic(lml, gp.kernel_.n_dims, len(y))


def sklearn_loop(X, y, max_depth, n_restarts):
    """Greedy CKS search with scikit-learn fits: (best structure, its BIC, seconds, candidates fitted)."""
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        summary = DataSummary.from_data(X, (y - y.mean()) / np.std(y))
        grammar = CompositionalGrammar(list(BASE_KERNELS))
        n_features = X.shape[1]
        frontier = grammar.initial(n_features)
        seen = set()
        best, best_bic = None, -np.inf
        for _ in range(max_depth):
            level = [expr for expr in frontier if expr not in seen]
            seen.update(level)
            if not level:
                break
            scores = [fit_candidate(expr, X, y, summary, n_restarts) for expr in level]
            i = int(np.argmax(scores))
            if not scores[i] > best_bic:
                break  # the level did not improve the BIC
            best, best_bic = level[i], scores[i]
            frontier = grammar.expand(best.without_values(), n_features=n_features)
        seconds = time.perf_counter() - start
    return {
        "loop_structure": None if best is None else str(best),
        "loop_bic": float(best_bic),
        "loop_seconds": seconds,
        "loop_candidates": len(seen),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--series", nargs="+", default=list(SERIES), choices=SERIES, metavar="NAME")
    parser.add_argument("--max-n", type=int, default=None, help="thin each series to N evenly spaced rows")
    parser.add_argument("--max-depth", type=int, default=3, help="search depth of both (default: ours' default 3)")
    parser.add_argument("--n-restarts", type=int, default=2, help="the plain loop's n_restarts_optimizer")
    parser.add_argument("--our-restarts", type=int, default=None,
                        help="our n_restarts (default: the estimator's default, 0)")
    parser.add_argument("--skip-loop", action="store_true", help="only run our search")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--json", type=Path, default=None, help="save the rows (and settings) to this file")
    args = parser.parse_args()

    data = {name: load_series(name, args.data_dir) for name in args.series}
    full_n = {name: len(y) for name, (_, y) in data.items()}
    data = {name: thin(X, y, args.max_n) for name, (X, y) in data.items()}
    print("Structure search: skgpsearch defaults vs a plain scikit-learn CKS loop (greedy, BIC)")
    print(f"settings: series = {', '.join(args.series)}; max-n = {args.max_n or 'all rows'}; "
          f"max_depth = {args.max_depth}; restarts: loop {args.n_restarts}, "
          f"ours {'default' if args.our_restarts is None else args.our_restarts}; base kernels {'/'.join(BASE_KERNELS)}; "
          f"n_jobs = {args.n_jobs} (ours: per search; loop: series in parallel)")
    thinned = [f"{name} {full_n[name]} -> {len(data[name][1])}" for name in args.series
               if len(data[name][1]) < full_n[name]]
    if thinned:
        print(f"thinned: {'; '.join(thinned)}")
    print(flush=True)

    # start joblib's worker processes once, so that no timed search pays for it
    warm_X, warm_y = data[args.series[0]]
    run_ours(warm_X[:20], warm_y[:20], 1, 0, args.n_jobs)
    rows = []
    for name in args.series:
        X, y = data[name]
        row = {"series": name, "n": int(len(y))}
        row.update(run_ours(X, y, args.max_depth, args.our_restarts, args.n_jobs))
        print(f"ours done: {name} (n = {len(y)}): {row['ours_structure']} in {row['ours_seconds']:.1f} s", flush=True)
        rows.append(row)
    if not args.skip_loop:
        start = time.perf_counter()
        order = sorted(range(len(rows)), key=lambda i: -rows[i]["n"])  # long loops first
        loops = Parallel(n_jobs=args.n_jobs)(
            delayed(sklearn_loop)(*data[rows[i]["series"]], args.max_depth, args.n_restarts) for i in order
        )
        loop_wall = time.perf_counter() - start
        for i, loop in zip(order, loops):
            rows[i].update(loop)
            rows[i]["difference"] = rows[i]["ours_bic"] - loop["loop_bic"]
            rows[i]["speed_up"] = loop["loop_seconds"] / rows[i]["ours_seconds"]

    print()
    if args.skip_loop:
        print("| series | n | our structure | our BIC | our s | candidates |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['series']} | {r['n']} | {r['ours_structure']} | {r['ours_bic']:.2f} | "
                  f"{r['ours_seconds']:.1f} | {r['ours_candidates']} |")
    else:
        print("| series | n | our structure | our BIC | loop structure | loop BIC | ours - loop | our s | loop s "
              "| speed-up | candidates ours/loop |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['series']} | {r['n']} | {r['ours_structure']} | {r['ours_bic']:.2f} | {r['loop_structure']} | "
                  f"{r['loop_bic']:.2f} | {r['difference']:+.2f} | {r['ours_seconds']:.1f} | {r['loop_seconds']:.1f} | "
                  f"{r['speed_up']:.1f}x | {r['ours_candidates']}/{r['loop_candidates']} |")
        wins = [r["difference"] >= 0 for r in rows]
        total_ours = sum(r["ours_seconds"] for r in rows)
        total_loop = sum(r["loop_seconds"] for r in rows)
        print()
        print(f"series with our BIC >= loop BIC: {sum(wins)}/{len(rows)} (goal: all)")
        behind = [r for r, ok in zip(rows, wins) if not ok]
        for r in behind:
            print(f"- behind on {r['series']} by {-r['difference']:.2f}: ours {r['ours_structure']}, "
                  f"loop {r['loop_structure']}")
        print(f"total time: ours {total_ours:.1f} s (wall, n_jobs = {args.n_jobs}), loop {total_loop:.1f} s "
              f"(serial-equivalent; {loop_wall:.0f} s wall on {args.n_jobs} workers); "
              f"ratio {total_loop / total_ours:.1f}x (goal >= 20x)")
    mismatch = [r for r in rows if abs(r["ours_bic"] - r["ours_best_score"]) > 1e-6 * max(1.0, abs(r["ours_bic"]))]
    for r in mismatch:
        print(f"note: {r['series']}: best_score_ {r['ours_best_score']:.4f} differs from the BIC recomputed from "
              f"lml and k ({r['ours_bic']:.4f})")

    if args.json:
        settings = {key: (str(value) if isinstance(value, Path) else value) for key, value in vars(args).items()}
        clean = [{k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items()} for r in rows]
        args.json.write_text(json.dumps({"settings": settings, "rows": clean}, indent=1))
        print(f"\nrows saved to {args.json}")


if __name__ == "__main__":
    main()
