"""How far each series' chosen structure's forecast errs in its own predictive standard deviations, and widening.

For each of the 11 shared extrapolation series and the 17 series of ``unseen_series.py`` (first 90 % to
fit, the rest to forecast), the defaults are fitted; then the chosen structure is refitted on the first
85 % of the training series (as the select stage's forecast judge refits it) and forecasts the rest. z²,
the mean squared error of that forecast in its predictive standard deviations (1 when calibrated), is
printed beside the test segment's MNLP and coverage of the 95 % interval: of the model as fitted, and with
its spread widened by sqrt(max(1, z²)).

Since 2026-12-05 ``predict`` widens so by itself where the forecast judge selected
(``forecast_variance_scale_``, from the select stage's own refit; ``extrapolation.py`` and
``unseen_series.py`` measure that end to end). This script measures the rule after the fact on every
series, those where the select stage left the choice to the criterion included (a change within the
judged rows: call-centre, wages), with a refit of its own (the select stage's can differ), so its
unwidened columns reset the model's scale to 1.

Run:  python benchmarks/forecast_calibration.py {shared,unseen} [--n-jobs 2]   (one JSON line per series)
"""

import argparse
import json
import math
import time
import warnings

import numpy as np

import extrapolation
import unseen_series
from skgpsearch import CompositionalGPRegressor
from skgpsearch._search._pipeline import FORECAST_FRACTION
from skgpsearch._search._regression import forecast_split
from skgpsearch.grammar import FixedStructureGrammar


def interval_scores(y, mean, std):
    """(MNLP, share inside the 95 % interval) of ``y`` under independent Gaussians."""
    log_density = -0.5 * np.log(2 * math.pi * std**2) - 0.5 * (y - mean) ** 2 / std**2
    return float(-np.mean(log_density)), float(np.mean(np.abs(y - mean) <= 1.96 * std))


def judged_z2(structure, X, y):
    """Mean squared standardised error of ``structure`` refitted on the earlier rows, forecasting the latest."""
    earlier, later = forecast_split(X[:, 0], FORECAST_FRACTION)
    refit = CompositionalGPRegressor(grammar=FixedStructureGrammar(structure), random_state=0,
                                     n_jobs=1).fit(X[earlier], y[earlier])
    mean, std = extrapolation.component_predictions(refit, X[later])[0]
    return float(np.mean(((y[later] - mean) / std) ** 2))


def run(name, X, y, X_test, y_test, n_jobs):
    start = time.perf_counter()
    model = CompositionalGPRegressor(random_state=0, n_jobs=n_jobs).fit(X, y)
    seconds = time.perf_counter() - start
    scale = model.forecast_variance_scale_
    model.forecast_variance_scale_ = 1.0  # the model as fitted, before the select stage's widening
    mean, std = extrapolation.component_predictions(model, X_test)[0]
    z2 = judged_z2(model.structure_, X, y)
    mnlp, coverage = interval_scores(y_test, mean, std)
    widened_mnlp, widened_coverage = interval_scores(y_test, mean, std * math.sqrt(max(1.0, z2)))
    return dict(series=name, structure=str(model.structure_), selection=model.selection_, scale=scale,
                rmse=float(np.sqrt(np.mean((mean - y_test) ** 2))), z2=z2, mnlp=mnlp, cov=coverage,
                mnlp_cal=widened_mnlp, cov_cal=widened_coverage, secs=seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["shared", "unseen"])
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.which == "shared":
        for name in extrapolation.PUBLISHED:
            X, y = extrapolation.load(name, "train")
            X_test, y_test = extrapolation.load(name, "test")
            print(json.dumps(run(name, X, y, X_test, y_test, args.n_jobs)), flush=True)
    else:
        for name in unseen_series.R_SERIES + unseen_series.SERIES:
            t, values = unseen_series.load(name)
            n = int(round(0.9 * len(values)))
            print(json.dumps(run(name, t[:n, None], values[:n], t[n:, None], values[n:], args.n_jobs)), flush=True)


if __name__ == "__main__":
    main()
