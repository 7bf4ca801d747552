"""Quick start: discover the structure of the Mauna Loa CO2 series.

A greedy search over the compositional grammar (base kernels SE, RQ, PER, LIN)
under the Bayesian information criterion, on the first 20 years of monthly
CO2 concentrations, then a forecast of the next two years.

Run:  python examples/quickstart.py
"""

import time

import numpy as np

from skgpsearch import CompositionalGPRegressor
from skgpsearch.datasets import load_mauna_loa


def main(n_train=240, n_forecast=24, n_jobs=-1, max_depth=3):
    """Search on the first ``n_train`` months, up to ``max_depth`` terms, and forecast the next ``n_forecast``;
    ``n_jobs=-1`` uses every core."""
    X, y = load_mauna_loa(return_X_y=True, n_samples=n_train + n_forecast)
    X_train, y_train = X[:n_train], y[:n_train]
    X_test, y_test = X[n_train:], y[n_train:]

    model = CompositionalGPRegressor(
        base_kernels=("SE", "RQ", "PER", "LIN"), criterion="bic", max_depth=max_depth, n_jobs=n_jobs, random_state=0,
        verbose=1,
    )
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start

    print(f"\nChosen structure: {model.structure_}   (BIC/-2 = {model.best_score_:.2f}, "
          f"{len(model.search_results_['structure'])} candidates in {seconds:.1f} s)")
    for leaf in model.structure_.leaves:
        values = ", ".join(f"{name}={np.round(value, 3)}" for name, value in leaf.params.items())
        print(f"  {leaf}: {values}")
    print(f"  noise standard deviation: {np.sqrt(model.noise_variance_):.3f} ppm")

    mean, std = model.predict(X_test, return_std=True)
    rmse = float(np.sqrt(np.mean((mean - y_test) ** 2)))
    inside = float(np.mean(np.abs(mean - y_test) <= 1.96 * std))  # std of a new observation: noise included
    print(f"\nForecast of the next {n_forecast} months: RMSE {rmse:.2f} ppm, "
          f"{100 * inside:.0f} % of the months inside the 95 % band")


if __name__ == "__main__":
    main()
