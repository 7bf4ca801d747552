"""Benchmark 4.3: the cost of each criterion on top of the fit, per candidate, at n = 500.

A 1-D regression problem (n = 500), the structure SE(0) + PER(0) fitted once;
then every criterion is evaluated on the fitted model (median of 3 runs).

Run:  python benchmarks/bench_criteria_cost.py
"""

import time

import numpy as np

from skgpsearch import CompositionalGPRegressor
from skgpsearch._search._records import single_threaded_blas
from skgpsearch.criteria import criterion_names, get_criterion


def main(n=500):
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0, 10, size=(n, 1)), axis=0)
    y = np.sin(2 * np.pi * X[:, 0] / 1.3) + 0.3 * X[:, 0] + 0.2 * rng.normal(size=n)
    model = CompositionalGPRegressor(base_kernels=("SE", "PER"), max_depth=2, n_restarts=2, random_state=0)
    start = time.perf_counter()
    model.fit(X, y)
    search_seconds = time.perf_counter() - start
    per_candidate = search_seconds / len(model.search_results_["structure"])
    rows = []
    with single_threaded_blas():
        for name in criterion_names():
            criterion = get_criterion(name)
            times = []
            for _ in range(3):
                start = time.perf_counter()
                value = criterion(model, X, y)
                times.append(time.perf_counter() - start)
            rows.append((name, float(np.median(times)), value))
    print(f"n = {n}, structure {model.structure_} ({model.n_hyperparameters_} hyperparameters); "
          f"mean fit time per candidate of the search: {per_candidate:.2f} s")
    print("| criterion | seconds | x fit time per candidate | value |")
    print("|---|---|---|---|")
    for name, seconds, value in rows:
        print(f"| {name} | {seconds:.4f} | {seconds / per_candidate:.2f} | {value:.3f} |")


if __name__ == "__main__":
    main()
