"""Benchmark 1: one candidate fit against scikit-learn's GaussianProcessRegressor.

The structure SE + M32 + RQ + PER + LIN plus Gaussian noise (13 hyperparameters) on
1-D data, n = 500 (full fits, several seeds), 1000 and 2000 (one likelihood-and-gradient
evaluation and our full fits; scikit-learn's fit takes 18 minutes at n = 1000 here: pass
``--full-sklearn-max 1000`` to include it). Our fits get what a search gives a new periodic
kernel: the periodogram's period as the warm start's period.
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

from skgpsearch._engine._exact import RegressionObjective
from skgpsearch._search._records import single_threaded_blas
from skgpsearch._search._exact_fitter import RegressionCandidateFitter, regression_start_hints
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
    parser.add_argument("--full-sklearn-max", type=int, default=500)
    parser.add_argument("--seeds", type=int, default=5, help="random_state values of the full fits")
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
            hints = regression_start_hints(None, X, y, summary, [0])
            fits_ours, fits_ref = [], []
            for seed in range(args.seeds):
                start = time.perf_counter()
                record = fitter(parse(STRUCTURE), X, y, seed=seed, hints=hints)
                fits_ours.append((time.perf_counter() - start, record.log_marginal_likelihood))
                if n > args.full_sklearn_max:
                    continue
                gp = GaussianProcessRegressor(
                    kernel + WhiteKernel(0.1, NOISE_BOUNDS), alpha=0.0, n_restarts_optimizer=2, random_state=seed
                )
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    gp.fit(X, y)
                fits_ref.append((time.perf_counter() - start, gp.log_marginal_likelihood_value_))
            t_fit_ours = float(np.mean([t for t, _ in fits_ours]))
            lml_ours = [v for _, v in fits_ours]
            t_fit_ref = float(np.mean([t for t, _ in fits_ref])) if fits_ref else float("nan")
            lml_ref = [v for _, v in fits_ref] or [float("nan")]
            rows.append((n, t_fit_ours, t_fit_ref, t_eval_ours, t_eval_ref, mem_ours, mem_ref, lml_ours, lml_ref))
            print(f"done n={n}", flush=True)

    print(f"\nOne candidate fit: {STRUCTURE} + noise (13 hyperparameters), 3 starts, 1 BLAS thread, "
          f"{args.seeds} seeds")
    print("| n | mean fit: ours (s) | sklearn (s) | speed-up | one eval: ours (ms) | sklearn (ms) | "
          "peak MB per eval: ours | sklearn | LML reached, median [best]: ours | sklearn |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, tfo, tfr, teo, ter, mo, mr, lo, lr in rows:
        ratio = f"{tfr / tfo:.1f}x" if np.isfinite(tfr) else "n/a"
        ref = f"{np.median(lr):.2f} [{np.max(lr):.2f}]" if np.all(np.isfinite(lr)) else "n/a"
        print(f"| {n} | {tfo:.2f} | {tfr:.2f} | {ratio} | {teo * 1e3:.1f} | {ter * 1e3:.1f} | "
              f"{mo:.0f} | {mr:.0f} | {np.median(lo):.2f} [{np.max(lo):.2f}] | {ref} |")
    print("\nAgreement at identical hyperparameters (relative): ")
    print("| n | log marginal likelihood | gradient (max over entries) |")
    print("|---|---|---|")
    for n, dv, dg in agreement:
        print(f"| {n} | {dv:.1e} | {dg:.1e} |")


if __name__ == "__main__":
    main()
