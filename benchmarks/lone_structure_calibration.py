"""A fixed structure's forecast band, calibrated on the series' end as a searched model's is (issue 31).

A search that judges its finalists by forecasting the end of the training series multiplies the chosen
model's predictive variance beyond the series by the mean squared standardised error of that forecast
(``forecast_variance_scale_``, at least 1; ``forecast_calibration.py`` measured the rule). Since
2026-12-06 a lone finalist -- a fixed structure (``FixedStructureGrammar``), as the report's and the
command line's hold-out forecasts refit -- is judged too, only to calibrate. This script fits each
shared series' structure (``--structures``: the ``--json`` rows of ``extrapolation.py``, by default the
defaults' picks recorded below) as a fixed structure on the first 90 % and prints the test segment's
MNLP and coverage of the 95 % interval with the calibrated band and with the model's own (before).

Run:  python benchmarks/lone_structure_calibration.py [--structures rows.json] [--n-jobs 2]
"""

import argparse
import json
import math
import time
import warnings

import numpy as np

import extrapolation
from forecast_calibration import interval_scores
from skgpsearch import CompositionalGPRegressor
from skgpsearch.grammar import FixedStructureGrammar, parse

#: The defaults' structures on the shared series (benchmarks/results/extrapolation_default.txt, 2026-12-06).
DEFAULT_PICKS = {
    "airline": "LIN(0) + SE(0) * (RQ(0) + PER(0))",
    "solar": "LIN(0) + M12(0)",
    "mauna": "RQ(0) + RQ(0) + PER(0) + LIN(0)",
    "temperature": "PER(0)",
    "internet": "RQ(0) * PER(0) * PER(0)",
    "call-centre": "LIN(0) + CP(0, RQ(0) + PER(0), C)",
    "radio": "PER(0) * (RQ(0) + PER(0))",
    "sulphuric": "CP(0, C, RQ(0) * PER(0))",
    "unemployment": "LIN(0) + SE(0) * (RQ(0) + PER(0))",
    "births": "SE(0) * (SE(0) + PER(0))",
    "wages": "CW(0, CP(0, RQ(0), RQ(0)), C)",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--structures", default=None, help="extrapolation.py --json rows (default: DEFAULT_PICKS)")
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    picks = DEFAULT_PICKS
    if args.structures:
        picks = {row["series"]: row["structure"] for row in json.load(open(args.structures))["rows"]}
    print("| series | structure | variance x | MNLP before | MNLP now | inside before | inside now | s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, text in picks.items():
        X, y = extrapolation.load(name, "train")
        X_test, y_test = extrapolation.load(name, "test")
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = CompositionalGPRegressor(grammar=FixedStructureGrammar(parse(text)), random_state=0,
                                             n_jobs=args.n_jobs).fit(X, y)
        seconds = time.perf_counter() - start
        mean, std = model.predict(X_test, return_std=True)
        scale = model.forecast_variance_scale_
        before = interval_scores(y_test, mean, std / math.sqrt(scale))
        now = interval_scores(y_test, mean, std)
        print(f"| {name} | {text} | {scale:.3g} | {before[0]:.3f} | {now[0]:.3f} | {before[1]:.0%} | {now[1]:.0%} "
              f"| {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
