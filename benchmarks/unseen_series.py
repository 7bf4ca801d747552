"""Forecasts of series the defaults were not tuned on, with and without the change operators.

Five series that come with statsmodels (``pip install ".[bench]"``): ``nile`` (the Nile's yearly
flow at Aswan, 1871-1970, with a known drop in 1898), ``sunspots`` (yearly, 1700-2008), and three
quarterly US series of ``macrodata`` (1959-2009): ``realgdp`` (log real GDP), ``unemp`` (the
unemployment rate) and ``infl`` (inflation). Each is fitted on its first 90 % and forecasts the
rest, with the regressor's defaults (``change_operators="auto"``: changepoints and change windows
on a series) and with ``change_operators=None``; ``n_jobs=2``. Printed: RMSE of the predictive
mean, MNLP (mean negative log predictive density of a test point, noise included), the share of
test points inside the 95 % interval, seconds, the structure; beside them the RMSE of the naive
forecast with drift (the last value plus the mean step of the training series).

Run:  python benchmarks/unseen_series.py [--series nile sunspots] [--n-jobs 2]
"""

import argparse
import time
import warnings

import numpy as np
from scipy import stats

from skgpsearch import CompositionalGPRegressor

SERIES = ["nile", "sunspots", "realgdp", "unemp", "infl"]


def load(name):
    """(time, values) of a statsmodels series."""
    import statsmodels.api as sm

    if name == "nile":
        data = sm.datasets.nile.load_pandas().data
        return data["year"].to_numpy(float), data["volume"].to_numpy(float)
    if name == "sunspots":
        data = sm.datasets.sunspots.load_pandas().data
        return data["YEAR"].to_numpy(float), data["SUNACTIVITY"].to_numpy(float)
    data = sm.datasets.macrodata.load_pandas().data
    t = (data["year"] + (data["quarter"] - 1) / 4).to_numpy(float)
    values = data[name].to_numpy(float)
    return t, np.log(values) if name == "realgdp" else values


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=SERIES, choices=SERIES)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    print("| series (rows) | naive + drift RMSE | change_operators | RMSE | MNLP | inside the 95 % interval "
          "| s | structure |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.series:
        t, y = load(name)
        n = int(round(0.9 * len(y)))
        X_train, y_train, X_test, y_test = t[:n, None], y[:n], t[n:, None], y[n:]
        drift = y_train[-1] + (y_train[-1] - y_train[0]) / (n - 1) * np.arange(1, len(y_test) + 1)
        naive = float(np.sqrt(np.mean((drift - y_test) ** 2)))
        for operators in ("auto", None):
            model = CompositionalGPRegressor(random_state=0, n_jobs=args.n_jobs, change_operators=operators)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X_train, y_train)
            seconds = time.perf_counter() - start
            mean, std = model.predict(X_test, return_std=True)
            rmse = float(np.sqrt(np.mean((mean - y_test) ** 2)))
            mnlp = float(-np.mean(stats.norm.logpdf(y_test, mean, std)))
            inside = float(np.mean(np.abs(y_test - mean) < 1.96 * std))
            print(f"| {name} ({len(y)}) | {naive:.4g} | {operators} | {rmse:.4g} | {mnlp:.3f} | {inside:.0%} "
                  f"| {seconds:.1f} | {model.structure_} |", flush=True)


if __name__ == "__main__":
    main()
