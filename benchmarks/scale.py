"""Benchmark: structure search on large data (issue 17).

For each size n, on synthetic data with a planted structure:
- the default CompositionalGPRegressor (``approximation="auto"``: exact up to 3000 rows; above,
  a structure search on 2000 rows and successive halving of its 4 best structures, refitted
  as sparse GPs with 256 inducing inputs on up to all the rows);
- where ``n <= --exact-max``, the exact model of the structure found (a single fit on all
  rows, started from the sparse fit), for the RMSE comparison;
- a RandomForest (300 trees).

It prints search time, peak memory (the process and its workers, sampled), test RMSE
against the noise-free function, and whether the planted structure was found.

Run:  python benchmarks/scale.py [--sizes 2000 5000 10000] [--data series multi] [--n-jobs 2]
"""

from __future__ import annotations

import argparse
import threading
import time
import warnings

import numpy as np
from sklearn.ensemble import RandomForestRegressor

from skgpsearch import CompositionalGPRegressor
from skgpsearch.grammar import parse

#: Planted structures and their noise-free functions.
DATA = {
    "series": ("PER(0) + LIN(0)", 1),
    "multi": ("SE(0) * SE(1) + LIN(2)", 4),
}
NOISE_SD = 0.2


def make_data(name, n, rng):
    _, d = DATA[name]
    if name == "series":
        X = np.sort(rng.uniform(0, 40, n))[:, None]
        f = np.sin(2 * np.pi * X[:, 0] / 1.7) + 0.05 * X[:, 0]
    else:
        X = rng.uniform(-2, 2, (n, d))
        f = np.exp(-0.5 * ((X[:, 0] / 0.8) ** 2 + (X[:, 1] / 1.2) ** 2)) * 2 + 0.5 * X[:, 2]
    return X, f


class PeakMemory:
    """Peak resident memory (MB) of this process and its children, sampled every 0.2 s."""

    def __enter__(self):
        try:
            import psutil
        except ImportError:  # no sampling: the column shows "n/a"
            self.peak, self._thread = None, None
            return self
        self._process, self.peak, self._stop = psutil.Process(), 0.0, threading.Event()

        def sample():
            while not self._stop.is_set():
                try:
                    rss = self._process.memory_info().rss + sum(
                        c.memory_info().rss for c in self._process.children(recursive=True))
                except psutil.Error:
                    rss = 0
                self.peak = max(self.peak, rss / 2**20)
                self._stop.wait(0.2)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()


def rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


def run(name, n, args):
    rng = np.random.default_rng(n)
    X, f = make_data(name, n + args.n_test, rng)
    y = f + NOISE_SD * rng.normal(size=f.size)
    # test points drawn with the training points (interpolation; the series' order does not matter)
    order = rng.permutation(n + args.n_test)
    train, test = np.sort(order[:n]), np.sort(order[n:])
    X_train, y_train, X_test, f_test = X[train], y[train], X[test], f[test]
    base = ("SE", "PER", "LIN") if name == "series" else ("SE", "LIN")
    model = CompositionalGPRegressor(base, random_state=0, n_jobs=args.n_jobs, verbose=1)
    with warnings.catch_warnings(), PeakMemory() as memory:
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - start
    row = {
        "data": name, "n": n, "approximation": model.approximation_, "structure": str(model.structure_.without_values()),
        "found": model.structure_.without_values() == parse(DATA[name][0]), "seconds": seconds,
        "peak_mb": memory.peak, "rmse": rmse(model.predict(X_test), f_test),
    }
    if model.approximation_ == "sparse" and n <= args.exact_max:
        # the exact GP of the same structure, fitted on all rows from the sparse model's values
        model.approximation = "exact"
        try:
            start = time.perf_counter()
            refit = model._refit_structure(X_train, y_train)
            row["exact_rmse"] = rmse(refit.predict(X_test), f_test)
            row["exact_seconds"] = time.perf_counter() - start
        finally:
            model.approximation = "auto"
    forest = RandomForestRegressor(300, n_jobs=args.n_jobs, random_state=0).fit(X_train, y_train)
    row["forest_rmse"] = rmse(forest.predict(X_test), f_test)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000])
    parser.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--n-test", type=int, default=1000)
    parser.add_argument("--exact-max", type=int, default=5000, help="largest n with the exact comparison")
    args = parser.parse_args()
    rows = []
    for name in args.data:
        for n in args.sizes:
            rows.append(run(name, n, args))
            print(rows[-1], flush=True)
    print(f"\nPlanted structures: {', '.join(f'{k}: {v[0]}' for k, v in DATA.items())}; noise sd {NOISE_SD}; "
          f"{args.n_test} test points; n_jobs = {args.n_jobs}\n")
    print("| data | n | approximation | found structure | planted? | search s | peak MB | test RMSE | exact RMSE "
          "(same structure) | RandomForest RMSE |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        exact = r.get("exact_rmse", "—")
        exact = f"{exact:.4f}" if isinstance(exact, float) else exact
        peak = "n/a" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
        print(f"| {r['data']} | {r['n']} | {r['approximation']} | {r['structure']} | {'yes' if r['found'] else 'no'} | "
              f"{r['seconds']:.0f} | {peak} | {r['rmse']:.4f} | {exact} | {r['forest_rmse']:.4f} |")


if __name__ == "__main__":
    main()
