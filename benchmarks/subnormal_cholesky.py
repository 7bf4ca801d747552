"""Cholesky factorisations of covariances with tiny entries: as given, and with them set to 0 first.

A stationary kernel's far pairs give entries far below the diagonal (an SE kernel
beyond about 12 lengthscales is under 1e-32, a product of several kernels more so).
Products of such entries inside the factorisation fall into the subnormal range,
which x86 CPUs compute in microcode. ``skgpsearch._engine._linalg.cholesky_lower``
sets the entries below eps² x the largest diagonal entry to 0 before LAPACK's
potrf, when a sample of the matrix holds any. This script times one factorisation
(one BLAS thread) of the matrix I + 0.16 K, K an SE kernel on Gaussian points of
6 columns whose spread (in lengthscales) sets the share of tiny entries: plain
LAPACK on the matrix as given, and ``cholesky_lower`` (check, flush, potrf), with
the largest difference between the two factors.

Run:  python benchmarks/subnormal_cholesky.py [--sizes 150 300 1000]
"""

import argparse
import time

import numpy as np
from scipy.linalg import lapack
from threadpoolctl import threadpool_limits

from skgpsearch._engine._linalg import cholesky_lower


def covariance(n, spread, seed=0):
    X = spread * np.random.default_rng(seed).normal(size=(n, 6))
    squared = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return 0.16 * np.exp(-0.5 * squared) + np.eye(n)


def median_ms(factorise, A, repeats):
    times = []
    for _ in range(repeats):
        work = A.copy()
        start = time.perf_counter()
        factorise(work)
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[150, 300, 1000])
    args = parser.parse_args()
    print("| rows | spread (lengthscales) | share of entries in (0, 1e-32) | LAPACK as given (ms) | "
          "cholesky_lower (ms) | speed-up | largest factor difference |")
    print("|---|---|---|---|---|---|---|")
    with threadpool_limits(limits=1, user_api="blas"):
        for n in args.sizes:
            repeats = max(5, 20000 // n)
            for spread in (1.0, 3.0, 12.0):
                A = covariance(n, spread)
                share = float(np.mean((A > 0) & (A < 1e-32)))
                plain = median_ms(lambda M: lapack.dpotrf(M.T, lower=1, clean=0, overwrite_a=1), A, repeats)
                ours = median_ms(lambda M: cholesky_lower(M, overwrite_a=True, clean=False), A, repeats)
                difference = np.max(np.abs(np.tril(lapack.dpotrf(A.T, lower=1)[0]) - cholesky_lower(A)[0]))
                print(f"| {n} | {spread:g} | {share:.3f} | {plain:.3f} | {ours:.3f} | {plain / ours:.1f}x | "
                      f"{difference:.1e} |")


if __name__ == "__main__":
    main()
