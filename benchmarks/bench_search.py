"""Benchmark 2: a whole structure search against the plain scikit-learn loop.

First 300 months of the Mauna Loa CO2 series (``../shared/datasets/mauna_loa.csv``,
also bundled), base kernels SE, RQ, PER, LIN, compositional grammar, greedy
search to depth 3, BIC; ours with its default starts (no random restarts), the
loop with 2 random restarts per candidate.

The "plain loop" is what a user would write without skgpsearch: for every
candidate structure of our search (the same list, so both do the same
work), ``GaussianProcessRegressor(kernel + WhiteKernel(), normalize_y=True,
n_restarts_optimizer=2).fit(X, y)`` and the BIC from its log marginal
likelihood. The loop runs serially, as such a loop would.

Run:  python benchmarks/bench_search.py [--n-jobs 2] [--skip-sklearn]
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import WhiteKernel

from skgpsearch import CompositionalGPRegressor
from skgpsearch.datasets import load_mauna_loa
from skgpsearch.grammar import parse
from skgpsearch.kernels import DataSummary, to_kernel


def sklearn_loop(structures, X, y, n_restarts):
    """Fit every structure with scikit-learn's GaussianProcessRegressor; return (best, BIC, seconds)."""
    y_norm = (y - y.mean()) / y.std()
    summary = DataSummary.from_data(X, y_norm)
    best, best_bic = None, -np.inf
    start = time.perf_counter()
    for text in structures:
        kernel = to_kernel(parse(text), summary=summary) + WhiteKernel(0.1, (1e-6, 10.0))
        gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=n_restarts, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            try:
                gp.fit(X, y)
            except (np.linalg.LinAlgError, ValueError):
                continue
        # sklearn reports log p of the normalised targets; shift to the original units as we do
        lml = gp.log_marginal_likelihood_value_ - len(y) * np.log(y.std())
        bic = lml - 0.5 * gp.kernel_.n_dims * np.log(len(y))
        if bic > best_bic:
            best, best_bic = text, bic
    return best, best_bic, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--n-months", type=int, default=300)
    parser.add_argument("--skip-sklearn", action="store_true")
    args = parser.parse_args()

    X, y = load_mauna_loa(return_X_y=True, n_samples=args.n_months)
    rows = []
    for n_jobs in sorted({1, args.n_jobs}):
        model = CompositionalGPRegressor(
            base_kernels=("SE", "RQ", "PER", "LIN"), criterion="bic", max_depth=3,
            random_state=0, n_jobs=n_jobs,
        )
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
        rows.append((f"skgpsearch (n_jobs={n_jobs})", str(model.structure_), model.best_score_, seconds,
                     len(model.search_results_["structure"]), sum(model.search_results_["n_evaluations"])))
    structures = model.search_results_["structure"]
    if not args.skip_sklearn:
        best, bic, seconds = sklearn_loop(structures, X, y, n_restarts=2)
        rows.append(("sklearn GPR loop (serial)", best, bic, seconds, len(structures), None))

    print(f"Mauna Loa CO2, n = {len(y)}, depth-3 greedy CKS search, BIC (loop: 2 restarts)")
    print(f"| {'method':28s} | {'chosen structure':34s} | {'BIC/-2':>9s} | {'seconds':>8s} | {'candidates':>10s} "
          f"| {'likelihood evaluations':>22s} |")
    print(f"|{'-' * 30}|{'-' * 36}|{'-' * 11}|{'-' * 10}|{'-' * 12}|{'-' * 24}|")
    for name, structure, bic, seconds, count, evaluations in rows:
        print(f"| {name:28s} | {structure:34s} | {bic:9.3f} | {seconds:8.1f} | {count:10d} "
              f"| {'' if evaluations is None else evaluations:>22} |")
    if not args.skip_sklearn:
        reference = rows[-1][3]
        for name, _, _, seconds, _, _ in rows[:-1]:
            print(f"speed-up of {name}: {reference / seconds:.1f}x")


if __name__ == "__main__":
    main()
