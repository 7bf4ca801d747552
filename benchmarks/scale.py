"""Benchmark: structure search on large data (issue 17).

For each size n, on synthetic data with a planted structure:
- regression ("series", "multi"): the default CompositionalGPRegressor (``approximation="auto"``:
  exact up to 3000 rows; above, a structure search on 2000 rows and successive halving of its 4
  best structures, refitted as sparse GPs with 256 inducing inputs on up to all the rows); where
  ``n <= --exact-max``, also the exact model of the structure found (a single fit on all rows,
  started from the sparse fit);
- classification ("classes"): the default CompositionalGPClassifier (above 2000 rows, a search on
  2000 stratified rows and its finalists refitted on up to 5000, the Laplace posterior's rows);
- a RandomForest (300 trees).

It prints search time, peak memory (the process and its workers, sampled), the test score
(RMSE against the noise-free function; test error for classification) and whether the planted
structure was found.

Run:  python benchmarks/scale.py [--sizes 2000 5000 10000] [--data series multi classes] [--n-jobs 2]
      python benchmarks/scale.py --crossover 1000 2000 3000 5000   (one exact against one sparse fit)
"""

from __future__ import annotations

import argparse
import threading
import time
import warnings

import numpy as np
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor
from skgpsearch.criteria import get_criterion
from skgpsearch.grammar import parse

#: Planted structures and their noise-free functions.
DATA = {
    "series": ("SE(0) + PER(0)", 1),
    "multi": ("SE(0) * SE(1) + LIN(2)", 4),
    # classification: labels of the sign of a latent function plus logistic noise
    "classes": ("SE(0) * SE(1) + SE(2)", 4),
}
NOISE_SD = 0.2
#: The series' smooth part is the same function at every n (drawn once from this seed).
SERIES_SEED = 17


def smooth_function(x, lengthscale, rng, n_features=200):
    """A draw from a GP with an SE kernel (unit variance), by random Fourier features."""
    frequencies = rng.normal(0.0, 1.0 / lengthscale, n_features)
    phases = rng.uniform(0, 2 * np.pi, n_features)
    return np.sqrt(2.0 / n_features) * np.cos(np.outer(x, frequencies) + phases).sum(axis=1)


def periodic_profile(t):
    """A non-sinusoidal unit-period profile with mean 0 and amplitude about 1."""
    wave = np.exp(1.5 * np.sin(2 * np.pi * t))
    return (wave - 1.6467) / 2.0  # (the mean of exp(1.5 sin) is I0(1.5) = 1.6467)


def make_data(name, n, rng):
    _, d = DATA[name]
    if name == "series":
        X = np.sort(rng.uniform(0, 40, n))[:, None]
        f = smooth_function(X[:, 0], 4.0, np.random.default_rng(SERIES_SEED)) + periodic_profile(X[:, 0] / 1.7)
    elif name == "multi":
        X = rng.uniform(-2, 2, (n, d))
        f = np.exp(-0.5 * ((X[:, 0] / 0.8) ** 2 + (X[:, 1] / 1.2) ** 2)) * 2 + 0.5 * X[:, 2]
    else:
        X = rng.uniform(-2, 2, (n, d))
        f = 3.0 * np.sin(X[:, 0]) * np.cos(X[:, 1]) + 2.0 * np.sin(1.5 * X[:, 2])
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
    if name == "classes":
        return run_classification(name, n, args)
    rng = np.random.default_rng(n)
    X, f = make_data(name, n + args.n_test, rng)
    y = f + NOISE_SD * rng.normal(size=f.size)
    # test points drawn with the training points (interpolation; the series' order does not matter)
    order = rng.permutation(n + args.n_test)
    train, test = np.sort(order[:n]), np.sort(order[n:])
    X_train, y_train, X_test, f_test = X[train], y[train], X[test], f[test]
    base = ("SE", "PER", "LIN") if name == "series" else ("SE", "LIN")
    model = CompositionalGPRegressor(base, random_state=0, n_jobs=args.n_jobs, verbose=1)
    row = timed_fit(name, n, model, X_train, y_train)
    row["approximation"] = model.approximation_
    row["score"] = rmse(model.predict(X_test), f_test)
    if model.approximation_ == "sparse" and n <= args.exact_max:
        # the exact GP of the same structure, fitted on all rows from the sparse model's values
        model.approximation = "exact"
        try:
            start = time.perf_counter()
            refit = model._refit_structure(X_train, y_train)
            row["exact_score"] = rmse(refit.predict(X_test), f_test)
            row["exact_seconds"] = time.perf_counter() - start
        finally:
            model.approximation = "auto"
    forest = RandomForestRegressor(300, n_jobs=args.n_jobs, random_state=0).fit(X_train, y_train)
    row["forest_score"] = rmse(forest.predict(X_test), f_test)
    return row


def run_classification(name, n, args):
    """Labels sign(f + logistic noise); the score is the test error on noisy labels (Bayes: sign f)."""
    rng = np.random.default_rng(n)
    X, f = make_data(name, n + args.n_test, rng)
    y = (f + rng.logistic(size=f.size) > 0).astype(int)
    X_train, y_train, X_test, y_test = X[:n], y[:n], X[n:], y[n:]
    model = CompositionalGPClassifier(random_state=0, n_jobs=args.n_jobs, verbose=1)
    row = timed_fit(name, n, model, X_train, y_train)
    rows = model._binary_models[0].X_train_.shape[0]
    row["approximation"] = "Laplace" if rows == n else f"Laplace on {rows} rows"
    row["score"] = 1.0 - model.score(X_test, y_test)
    row["bayes_score"] = float(np.mean((f[n:] > 0) != y_test))
    forest = RandomForestClassifier(300, n_jobs=args.n_jobs, random_state=0).fit(X_train, y_train)
    row["forest_score"] = 1.0 - forest.score(X_test, y_test)
    return row


def timed_fit(name, n, model, X_train, y_train):
    with warnings.catch_warnings(), PeakMemory() as memory:
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - start
    return {"data": name, "n": n, "structure": str(model.structure_.without_values()),
            "found": model.structure_.without_values() == parse(DATA[name][0]), "seconds": seconds,
            "peak_mb": memory.peak}


def crossover(sizes):
    """One fit of the planted series structure on all rows, exact against sparse: seconds and log evidence."""
    print("\nOne fit of SE(0) + PER(0) on all rows (one core, same starts policy as a search's candidates); "
          "log evidence: exact, or the sparse model's bound\n")
    print("| n | exact s | sparse s | exact log evidence | sparse bound |")
    print("|---|---|---|---|---|")
    for n in sizes:
        rng = np.random.default_rng(n)
        X, f = make_data("series", n, rng)
        y = f + NOISE_SD * rng.normal(size=n)
        cells = {}
        for approximation in ("exact", "sparse"):
            model = CompositionalGPRegressor(("SE", "PER"), approximation=approximation, random_state=0)
            start = time.perf_counter()
            model_fitter = model._model_fitter(X, y, get_criterion("bic"))
            y_fit, fitter = model_fitter.y, model_fitter.candidate_fitter
            record = fitter(parse(DATA["series"][0]), X, y_fit, 0)
            cells[approximation] = (time.perf_counter() - start, record.log_marginal_likelihood)
        print(f"| {n} | {cells['exact'][0]:.1f} | {cells['sparse'][0]:.1f} | {cells['exact'][1]:.1f} | "
              f"{cells['sparse'][1]:.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000])
    parser.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--n-test", type=int, default=1000)
    parser.add_argument("--exact-max", type=int, default=5000, help="largest n with the exact comparison")
    parser.add_argument("--crossover", type=int, nargs="*", default=None,
                        help="instead: time one exact and one sparse fit at these n (the crossover)")
    args = parser.parse_args()
    if args.crossover:
        crossover(args.crossover)
        return
    rows = []
    for name in args.data:
        for n in args.sizes:
            rows.append(run(name, n, args))
            print(rows[-1], flush=True)
    print(f"\nPlanted structures: {', '.join(f'{k}: {v[0]}' for k, v in DATA.items())}; noise sd {NOISE_SD}; "
          f"{args.n_test} test points; n_jobs = {args.n_jobs}\n")
    print("Score: test RMSE against the noise-free function (regression), test error on noisy labels "
          "(classification; 'exact' column: the Bayes error of sign f)\n")
    print("| data | n | approximation | found structure | planted? | search s | peak MB | score | exact model's score "
          "(same structure) | RandomForest score |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        exact = r.get("exact_score", r.get("bayes_score", "—"))
        exact = f"{exact:.4f}" if isinstance(exact, float) else exact
        peak = "n/a" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
        print(f"| {r['data']} | {r['n']} | {r['approximation']} | {r['structure']} | {'yes' if r['found'] else 'no'} | "
              f"{r['seconds']:.0f} | {peak} | {r['score']:.4f} | {exact} | {r['forest_score']:.4f} |")


if __name__ == "__main__":
    main()
