"""Benchmark 1: one candidate fit against scikit-learn's GaussianProcessRegressor.

The structure SE + M32 + RQ + PER + LIN plus Gaussian noise (13 hyperparameters) on
1-D data, n = 500, 1000 (full fits) and 2000 (one likelihood-and-gradient
evaluation, and our full fit: scikit-learn's fit there takes too long to run here).
Both sides use the very same kernel object (the catalogue kernels are scikit-learn
kernels) and the same number of starts: scikit-learn's initial point plus
``n_restarts_optimizer=2`` random ones, ours the same three with multi-fidelity
screening. Printed: fit time and its ratio, peak memory of one likelihood-and-
gradient evaluation (tracemalloc), the log marginal likelihood each fit reached,
and the agreement of value and gradient at identical hyperparameters.

Run:  python benchmarks/bench_single_fit.py [--sizes 500 1000 2000] [--full-sklearn-max 1000]
"""

import argparse
import math
import time
import tracemalloc
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import WhiteKernel

from skgpsearch._engine._regression import RegressionObjective
from skgpsearch._search import RegressionCandidateFitter, single_threaded_blas
from skgpsearch.criteria import BIC
from skgpsearch.grammar import parse
from skgpsearch.kernels import DataSummary, to_kernel

STRUCTURE = "SE(0) + M32(0) + RQ(0) + PER(0) + LIN(0)"
NOISE_BOUNDS = (1e-6, 10.0)


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0, 20, size=(n, 1)), axis=0)
    f = np.sin(2 * np.pi * X[:, 0] / 1.3) + 0.1 * X[:, 0] + np.sin(X[:, 0] / 3.0)
    y = f + 0.2 * rng.normal(size=n)
    return X, (y - y.mean()) / y.std()


def peak_megabytes(function):
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--full-sklearn-max", type=int, default=1000)
    args = parser.parse_args()
    rows, agreement = [], []
    with single_threaded_blas():  # same BLAS threading for both sides
        for n in args.sizes:
            X, y = data(n)
            summary = DataSummary.from_data(X, y)
            kernel = to_kernel(parse(STRUCTURE), summary=summary)
            theta = np.append(kernel.theta, math.log(0.1))

            # identical hyperparameters: value and gradient
            ours = RegressionObjective(kernel.clone_with_theta(kernel.theta), X, y, NOISE_BOUNDS)
            reference = GaussianProcessRegressor(kernel + WhiteKernel(0.1, NOISE_BOUNDS), optimizer=None, alpha=0.0)
            reference.fit(X, y)
            v_ours, g_ours = ours(theta, eval_gradient=True)
            v_ref, g_ref = reference.log_marginal_likelihood(theta, eval_gradient=True)
            agreement.append((n, abs(v_ours - v_ref) / abs(v_ref), float(np.max(np.abs(g_ours - g_ref) / np.abs(g_ref).clip(1e-12)))))

            start = time.perf_counter()
            ours(theta, eval_gradient=True)
            t_eval_ours = time.perf_counter() - start
            start = time.perf_counter()
            reference.log_marginal_likelihood(theta, eval_gradient=True)
            t_eval_ref = time.perf_counter() - start
            mem_ours = peak_megabytes(lambda: ours(theta, eval_gradient=True))
            mem_ref = peak_megabytes(lambda: reference.log_marginal_likelihood(theta, eval_gradient=True))

            fitter = RegressionCandidateFitter(summary=summary, criterion=BIC(), noise_bounds=NOISE_BOUNDS, n_restarts=2)
            start = time.perf_counter()
            record = fitter(parse(STRUCTURE), X, y, seed=0)
            t_fit_ours = time.perf_counter() - start
            lml_ours = record["log_marginal_likelihood"]

            t_fit_ref, lml_ref = float("nan"), float("nan")
            if n <= args.full_sklearn_max:
                gp = GaussianProcessRegressor(
                    kernel + WhiteKernel(0.1, NOISE_BOUNDS), alpha=0.0, n_restarts_optimizer=2, random_state=0
                )
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    gp.fit(X, y)
                t_fit_ref = time.perf_counter() - start
                lml_ref = gp.log_marginal_likelihood_value_
            rows.append((n, t_fit_ours, t_fit_ref, t_eval_ours, t_eval_ref, mem_ours, mem_ref, lml_ours, lml_ref))
            print(f"done n={n}", flush=True)

    print(f"\nOne candidate fit: {STRUCTURE} + noise (13 hyperparameters), 3 starts, 1 BLAS thread")
    print("| n | fit: ours (s) | fit: sklearn (s) | speed-up | one eval: ours (ms) | sklearn (ms) | "
          "peak MB per eval: ours | sklearn | LML reached: ours | sklearn |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, tfo, tfr, teo, ter, mo, mr, lo, lr in rows:
        ratio = f"{tfr / tfo:.1f}x" if np.isfinite(tfr) else "n/a"
        print(f"| {n} | {tfo:.2f} | {tfr:.2f} | {ratio} | {teo * 1e3:.1f} | {ter * 1e3:.1f} | "
              f"{mo:.0f} | {mr:.0f} | {lo:.2f} | {lr:.2f} |")
    print("\nAgreement at identical hyperparameters (relative): ")
    print("| n | log marginal likelihood | gradient (max over entries) |")
    print("|---|---|---|")
    for n, dv, dg in agreement:
        print(f"| {n} | {dv:.1e} | {dg:.1e} |")


if __name__ == "__main__":
    main()
