"""Series that break near their end: the select stage with and without its late-change rule (issue 31).

Synthetic monthly series (180 months to train, 24 to forecast): a linear trend, a yearly cycle
and noise (sd 2), with a level drop of 25 at a chosen fraction of the training months, which
holds through the test months. The default regressor is fitted as it is, and again with the
select stage's late-change rule switched off (``RegressionModelFitter.changes_in_forecast_rows``
returning False), so that the forecast of the latest 15 % of the training rows judges the
finalists whatever their changes. A drop before 85 % lies in the rows those forecasts are
refitted on; one after it lies in the rows they forecast. Beside them: the naive forecast with
drift (the last value plus the last year's mean monthly change) and the seasonal naive forecast
with drift (the last year repeated, shifted by the last year's change per year ahead).

Printed per series: the rule the select stage applied, the structure, the RMSE of the forecast,
its MNLP (mean negative log predictive density of a test month, noise included), the share of
test months inside the 95 % interval, and seconds.

Then per rule, over the series with a drop in the held-out rows (after 85 %): the mean and the
worst RMSE, the mean MNLP and the mean share inside the interval.

Run:  python benchmarks/late_breaks.py [--drops 0.7 0.88 0.92 0.96] [--seeds 0 1 2 3] [--n-jobs 2]
"""

import argparse

import numpy as np

from skgpsearch import CompositionalGPRegressor
from skgpsearch._search._regression import RegressionModelFitter
from unseen_series import fit_and_forecast

N_TRAIN, N_TEST = 180, 24


def series(seed, drop_at):
    """(X_train, y_train, X_test, y_test): trend + cycle + noise, down by 25 from ``drop_at`` of the training rows on."""
    rng = np.random.default_rng(seed)
    t = 2000 + np.arange(N_TRAIN + N_TEST) / 12.0
    y = 100 + 2.0 * (t - 2000) + 5 * np.sin(2 * np.pi * t) + 2 * rng.normal(size=t.size)
    y -= 25.0 * (t >= t[int(drop_at * N_TRAIN)])
    return t[:N_TRAIN, None], y[:N_TRAIN], t[N_TRAIN:, None], y[N_TRAIN:]


def fit(X, y, X_test, y_test, n_jobs, late_change_rule):
    rule = RegressionModelFitter.changes_in_forecast_rows
    if not late_change_rule:
        RegressionModelFitter.changes_in_forecast_rows = lambda self, record, fraction: False
    try:
        model = CompositionalGPRegressor(random_state=0, n_jobs=n_jobs)
        seconds, rmse, mnlp, inside = fit_and_forecast(model, X, y, X_test, y_test)
    finally:
        RegressionModelFitter.changes_in_forecast_rows = rule
    return model.selection_, str(model.structure_), rmse, mnlp, inside, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drops", type=float, nargs="+", default=[0.7, 0.88, 0.92, 0.96])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    print("| drop at (share of the training months) | seed | select stage | selection | structure | RMSE | MNLP "
          "| inside the 95 % interval | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    late = {}  # rule -> [(RMSE, MNLP, inside)] of the series whose drop lies in the held-out rows
    for drop_at in args.drops:
        for seed in args.seeds:
            X, y, X_test, y_test = series(seed, drop_at)
            scores = {}
            for rule in (True, False):
                selection, structure, rmse, mnlp, inside, seconds = fit(X, y, X_test, y_test, args.n_jobs, rule)
                name = "default" if rule else "without the late-change rule"
                scores[name] = (rmse, mnlp, inside)
                print(f"| {drop_at:.2f} | {seed} | {name} | {selection} | {structure} | {rmse:.2f} | {mnlp:.3f} "
                      f"| {inside:.0%} | {seconds:.0f} |", flush=True)
            step = (y[-1] - y[-13]) / 12.0
            naive = y[-1] + step * np.arange(1, N_TEST + 1)
            seasonal = y[-12:][np.arange(N_TEST) % 12] + 12.0 * step * (1 + np.arange(N_TEST) // 12)
            for name, forecast in (("naive + drift", naive), ("seasonal naive + drift", seasonal)):
                scores[name] = (float(np.sqrt(np.mean((forecast - y_test) ** 2))), None, None)
                print(f"| {drop_at:.2f} | {seed} | {name} | | | {scores[name][0]:.2f} | | | |", flush=True)
            if drop_at > 0.85:
                for name, score in scores.items():
                    late.setdefault(name, []).append(score)
    if late:
        print("\nDrops in the held-out rows (after 85 % of the training months):\n")
        print("| forecast | mean RMSE | worst RMSE | mean MNLP | mean share inside the 95 % interval |\n"
              "|---|---|---|---|---|")
        for name, scores in late.items():
            rmse = [r for r, _, _ in scores]
            mnlp = [m for _, m, _ in scores if m is not None]
            inside = [i for _, _, i in scores if i is not None]
            share = f"{np.mean(inside):.0%}" if inside else ""
            print(f"| {name} | {np.mean(rmse):.2f} | {max(rmse):.2f} | {f'{np.mean(mnlp):.3f}' if mnlp else ''} "
                  f"| {share} |")


if __name__ == "__main__":
    main()
