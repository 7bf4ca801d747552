"""Fixed structures on series, scored as the select stage judges them and on the test segment.

Each series of ``benchmarks/unseen_series.py`` is cut as there: its first 90 % trains, the rest
is the test segment. Every structure given is fitted on the training rows (a fixed-structure
grammar, the regressor's defaults otherwise) and scored on the test segment (RMSE of the
predictive mean, sum of the log predictive densities); and it is refitted on the first 85 % of
the training rows and scored on the rest of them, as the select stage's "forecast" judge does
(the judge starts its refit from the finalist's fitted values; here the refit starts afresh).
Beside them, the RMSE of the naive forecast with drift and, for monthly and quarterly series, of
the seasonal naive forecast with drift.

It asks whether structures with a random walk inside (``LIN + M12``, the random walk with drift,
and larger ones) would forecast better, and whether the judge would see it, without searching.

Run:  python benchmarks/random_walk_structures.py --series austres WWWusage \\
          --structures "LIN(0) + M12(0)" "RQ(0) * PER(0)"
"""

import argparse
import math
import warnings

import numpy as np

import unseen_series
from skgpsearch import CompositionalGPRegressor
from skgpsearch._search._pipeline import FORECAST_FRACTION
from skgpsearch.grammar import FixedStructureGrammar, parse

DEFAULT_STRUCTURES = ["LIN(0) + M12(0)", "LIN(0) + M12(0) + SE(0)", "LIN(0) + M12(0) + PER(0)",
                      "LIN(0) + M12(0) + PER(0) * M12(0)", "LIN(0) + M12(0) + PER(0) * LIN(0)"]


def fitted(structure, X, y):
    grammar = FixedStructureGrammar(parse(structure))
    return CompositionalGPRegressor(grammar=grammar, random_state=0, n_jobs=1).fit(X, y)


def forecast_scores(model, X, y):
    """(RMSE, sum of log predictive densities) of ``model``'s forecast of ``y`` at ``X``."""
    mean, std = model.predict(X, return_std=True)
    log_density = -0.5 * np.log(2 * math.pi * std**2) - 0.5 * ((y - mean) / std) ** 2
    return float(np.sqrt(np.mean((mean - y) ** 2))), float(np.sum(log_density))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=["austres", "WWWusage", "nhtemp"],
                        choices=unseen_series.SERIES + unseen_series.R_SERIES)
    parser.add_argument("--structures", nargs="+", default=DEFAULT_STRUCTURES)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    print("| series | naive + drift RMSE | seasonal naive + drift | structure | test RMSE | test log density "
          "| judged log density |")
    print("|---|---|---|---|---|---|---|")
    for name in args.series:
        t, values = unseen_series.load(name)
        n_train = int(round(0.9 * t.size))
        X, y, X_test, y_test = t[:n_train, None], values[:n_train], t[n_train:, None], values[n_train:]
        n_earlier = int(round((1 - FORECAST_FRACTION) * n_train))
        naive = [None if f is None else float(np.sqrt(np.mean((f - y_test) ** 2)))
                 for f in unseen_series.naive_forecasts(y, y_test.size, unseen_series.season_length(t))]
        for structure in args.structures:
            rmse, test_density = forecast_scores(fitted(structure, X, y), X_test, y_test)
            _, judged_density = forecast_scores(fitted(structure, X[:n_earlier], y[:n_earlier]),
                                                X[n_earlier:], y[n_earlier:])
            cells = [f"{v:.4g}" if v is not None else "" for v in naive]
            print(f"| {name} ({t.size}) | {cells[0]} | {cells[1]} | {structure} | {rmse:.4g} | {test_density:.1f} "
                  f"| {judged_density:.1f} |", flush=True)


if __name__ == "__main__":
    main()
