"""How the forecast's spread beyond a series is widened, and what that does to its test scores.

For each series the defaults are fitted on its first part and forecast the rest. Printed: the chosen structure,
``forecast_variance_scale_`` (the factor ``predict`` multiplies the predictive variance beyond the series by:
the larger of the judged forecast's factor and the earlier forecast's, capped at ``EARLIER_FORECAST_WIDENING_CAP``;
see the regression guide), and the test segment's MNLP and share inside the 95 % interval, as ``predict`` gives
them and without the widening (the factor divided out again).

Series: ``--random-walks N`` simulated random walks (y = cumsum(N(0, 1)), 96 monthly values, the last 20
forecast; seeds 0 to N-1), and any series of ``benchmarks/extrapolation.py`` (its split) or
``benchmarks/unseen_series.py`` (the first 90 %).

Run:  python benchmarks/forecast_widening.py [--random-walks 20] [--series infl wool ...] [--n-jobs 2]
"""

import argparse
import math
import warnings

import numpy as np
from scipy import stats

from short_series import split
from skgpsearch import CompositionalGPRegressor


def random_walk(seed):
    rng = np.random.default_rng(seed)
    y = np.cumsum(rng.normal(size=96))
    t = (2000 + np.arange(96) / 12.0)[:, np.newaxis]
    return t[:76], y[:76], t[76:], y[76:]


def scores(y_test, mean, std):
    return float(-np.mean(stats.norm.logpdf(y_test, mean, std))), float(np.mean(np.abs(y_test - mean) < 1.96 * std))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random-walks", type=int, default=20)
    parser.add_argument("--series", nargs="*", default=[])
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    runs = [(f"random walk {seed}", random_walk(seed)) for seed in range(args.random_walks)]
    runs += [(name, split(name)) for name in args.series]
    print("| series | structure | factor | MNLP | inside the 95 % interval | MNLP unwidened | inside, unwidened |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for name, (X, y, X_test, y_test) in runs:
        model = CompositionalGPRegressor(random_state=0, n_jobs=args.n_jobs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y)
        mean, std = model.predict(X_test, return_std=True)
        beyond = X_test[:, 0] > X[:, 0].max()
        plain = np.where(beyond, std / math.sqrt(model.forecast_variance_scale_), std)
        (mnlp, inside), (mnlp_plain, inside_plain) = scores(y_test, mean, std), scores(y_test, mean, plain)
        rows.append((name.startswith("random walk"), mnlp, inside, mnlp_plain, inside_plain))
        print(f"| {name} | {model.structure_} | {model.forecast_variance_scale_:.3g} | {mnlp:.3f} | {inside:.0%} "
              f"| {mnlp_plain:.3f} | {inside_plain:.0%} |", flush=True)
    for walks, label in [(True, "random walks"), (False, "other series")]:
        chosen = np.array([row[1:] for row in rows if row[0] == walks])
        if chosen.size:
            print(f"{label} ({len(chosen)}): mean MNLP {chosen[:, 0].mean():.3f} (unwidened {chosen[:, 2].mean():.3f}), "
                  f"mean share inside {chosen[:, 1].mean():.1%} (unwidened {chosen[:, 3].mean():.1%})")


if __name__ == "__main__":
    main()
