"""Which rule of the select stage picks the series finalist that forecasts best? (issues 29 and 31)

The series default (``selection="forecast"``) refits each finalist on the first 85 % of the training
series and keeps the one whose forecast of the rest has the highest log density. This script fits the
defaults once per series, keeps the select stage's finalists with their fitted values, and scores
them under other rules without searching again, so a new rule is measured on every series in seconds:

- ``refit``: the value the select stage computed (the script lets every finalist forecast);
- ``default``: ``refit``, but the criterion's pick when the finalist with the best criterion
  changes (a changepoint, a change window's start or end) within the held-out rows, as the
  select stage does since 2026-11-29;
- ``criterion``: the search's criterion alone;
- ``fixed 85``: the finalist's hyperparameters as fitted on all training rows, conditioned on the
  first 85 % of them; the log density of the rest (no refit: cheap, and no optimum to lose);
- ``rolling 3x10``: the same, summed over cuts at 70, 80 and 90 %, each forecasting the next 10 %;
- ``rolling 2x15``: cuts at 70 and 85 %, each forecasting the next 15 %;
- ``stacking 2x15``: no pick, a mixture: stacking weights (Yao et al. 2018) on the pointwise
  densities of ``rolling 2x15``; its RMSE is that of the mixture's mean;
- ``oracle``: the finalist with the lowest test RMSE, which no rule can beat with these finalists.

A rule picks the finalist with the highest score; those within ``FORECAST_TIE`` nats of it are tied
and the criterion decides, as in the select stage. Printed: the test RMSE and MNLP (mean negative
log predictive density, noise included) of each rule's pick per series, and per rule the geometric
mean over series of RMSE / oracle RMSE and its worst ratio, the median MNLP and on how many series its
MNLP is below (and above) the refit rule's; on the shared series also the wins over ABCD and the
median relative RMSE of ``extrapolation.py``, on the unseen ones the wins over the naive forecast
with drift.

Series: the 11 of ``extrapolation.py`` (train/test as there), and with ``--unseen`` the five of
``unseen_series.py`` plus statsmodels' ``co2`` (monthly means, 420 months to train, 106 to forecast,
as in issue 31), which need ``pip install ".[bench]"``. ``--cache DIR`` keeps each series' finalists
(pickled), so a second run, with a rule added below, refits nothing.

Run:  python benchmarks/forecast_judges.py [--series airline solar] [--unseen] [--cache DIR] [--n-jobs 2]
"""

import argparse
import pickle
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from extrapolation import PUBLISHED
from extrapolation import load as load_shared
from skgpsearch import CompositionalGPRegressor
from skgpsearch._engine._exact import GPPosterior
from skgpsearch._search import _pipeline
from skgpsearch._search._regression import RegressionModelFitter, changes_within_latest
from skgpsearch.kernels import to_kernel
from unseen_series import naive_forecasts

UNSEEN = ["nile", "sunspots", "realgdp", "unemp", "infl", "co2"]
#: name -> (cuts as fractions of the training rows, rows each cut forecasts as a fraction, None: the rest)
FIXED_RULES = {
    "fixed 85": ([0.85], None),
    "rolling 3x10": ([0.7, 0.8, 0.9], 0.1),
    "rolling 2x15": ([0.7, 0.85], 0.15),
}
STACKED_RULE = ("stacking 2x15", "rolling 2x15")
RULES = ["refit", "default", "criterion", *FIXED_RULES, STACKED_RULE[0], "oracle"]


def load_series(name):
    """(X_train, y_train, X_test, y_test) of a shared or an unseen series."""
    if name in PUBLISHED:
        (X, y), (X_test, y_test) = load_shared(name, "train"), load_shared(name, "test")
        return X, y, X_test, y_test
    if name == "co2":
        import statsmodels.api as sm

        monthly = sm.datasets.co2.load_pandas().data["co2"].resample("MS").mean().interpolate()
        t = (monthly.index.year + (monthly.index.month - 1) / 12.0).to_numpy(float)
        values, n = monthly.to_numpy(float), 420
    else:
        from unseen_series import load as load_unseen

        t, values = load_unseen(name)
        n = int(round(0.9 * len(values)))
    return t[:n, None], values[:n], t[n:, None], values[n:]


def fit_finalists(name, n_jobs, seed):
    """Fit the defaults on a series; what the rules need of its select stage's finalists."""
    X, y, X_test, y_test = load_series(name)
    seen = {}
    select = _pipeline.SearchPipeline.select
    changes = RegressionModelFitter.changes_in_forecast_rows

    def keeping_the_finalists(self, model_fitter, exploration, finalists):
        outcome = select(self, model_fitter, exploration, finalists)
        seen.update(fitter=model_fitter, records=list(finalists.records), selection=outcome.selection)
        return outcome

    def forecasting_anyway(self, record, fraction):
        return False  # every finalist forecasts, whatever the default would skip (the rule "default" replays it)

    _pipeline.SearchPipeline.select = keeping_the_finalists
    RegressionModelFitter.changes_in_forecast_rows = forecasting_anyway
    try:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = CompositionalGPRegressor(random_state=seed, n_jobs=n_jobs).fit(X, y)
        seconds = time.perf_counter() - start
    finally:
        _pipeline.SearchPipeline.select = select
        RegressionModelFitter.changes_in_forecast_rows = changes
    fitter = seen["fitter"]
    finalists = [dict(structure=r.structure, noise_variance=r.noise_variance, criterion=r.criterion,
                      refit=r.predictive_score) for r in seen["records"]]
    return dict(name=name, X=X, y=y, X_test=X_test, y_test=y_test, finalists=finalists, selection=seen["selection"],
                y_mean=fitter.y_mean, y_std=fitter.y_std, summary=fitter.summary, seconds=seconds,
                structure=str(model.structure_), rmse=rmse(model.predict(X_test), y_test))


def _predict(series, finalist, fit_rows, X_new):
    """Mean and predictive variance (noise included) on the fitting scale."""
    y_fit = (series["y"][fit_rows] - series["y_mean"]) / series["y_std"]
    kernel = to_kernel(finalist["structure"], summary=series["summary"])
    posterior = GPPosterior(kernel, finalist["noise_variance"], series["X"][fit_rows], y_fit)
    mean, std = posterior.predict(X_new, return_std=True)
    return mean, std**2 + finalist["noise_variance"]


def cut_log_densities(series, finalist, cuts, horizon):
    """Pointwise log densities of the rows after each cut, forecast from the rows before it with the
    finalist's fitted hyperparameters (fitting scale)."""
    order = np.argsort(series["X"][:, 0], kind="stable")
    n = order.size
    y = (series["y"] - series["y_mean"]) / series["y_std"]
    densities = []
    for cut in cuts:
        first = int(round(cut * n))
        last = n if horizon is None else min(n, first + int(round(horizon * n)))
        ahead = order[first:last]
        mean, variance = _predict(series, finalist, order[:first], series["X"][ahead])
        densities.append(-0.5 * (np.log(2 * np.pi * variance) + (y[ahead] - mean) ** 2 / variance))
    return np.concatenate(densities)


def test_forecast(series, finalist):
    """Mean and standard deviation of the finalist's forecast of the test rows, in the target's units."""
    mean, variance = _predict(series, finalist, np.arange(series["y"].size), series["X_test"])
    return mean * series["y_std"] + series["y_mean"], np.sqrt(variance) * series["y_std"]


def rmse(mean, y):
    return float(np.sqrt(np.mean((mean - y) ** 2)))


def judge(series):
    """{rule: (test RMSE, test MNLP) of its pick (of its mixture for the stacking rule)}."""
    finalists, y_test = series["finalists"], series["y_test"]
    forecasts = [test_forecast(series, f) for f in finalists]
    # (test rows, finalists): log densities of the test values, noise included
    test_densities = np.column_stack([stats.norm.logpdf(y_test, mean, std) for mean, std in forecasts])
    errors = np.array([rmse(mean, y_test) for mean, _ in forecasts])
    criteria = np.array([f["criterion"] for f in finalists])
    pointwise = {rule: np.column_stack([cut_log_densities(series, f, *spec) for f in finalists])
                 for rule, spec in FIXED_RULES.items()}
    scores = {"refit": np.array([-np.inf if f["refit"] is None else f["refit"] for f in finalists]),
              "criterion": criteria}
    scores.update({rule: densities.sum(axis=0) for rule, densities in pointwise.items()})
    best = finalists[int(np.argmax(criteria))]["structure"]
    late_change = changes_within_latest(best, series["X"][:, 0], _pipeline.FORECAST_FRACTION)
    scores["default"] = criteria if late_change else scores["refit"]
    picked = {}
    for rule, score in scores.items():
        i = _pick(score, criteria)
        picked[rule] = (errors[i], -test_densities[:, i].mean())
    weights = _pipeline.stacking_weights(pointwise[STACKED_RULE[1]])
    used = weights > 0
    mixture = logsumexp(test_densities[:, used] + np.log(weights[used]), axis=1)
    picked[STACKED_RULE[0]] = (rmse(sum(w * mean for w, (mean, _) in zip(weights, forecasts)), y_test),
                               -mixture.mean())
    picked["oracle"] = (float(errors.min()), -test_densities[:, int(np.argmin(errors))].mean())
    return picked


def _pick(scores, criteria):
    """The finalist with the best score; among those within FORECAST_TIE of it, the best criterion."""
    if not np.isfinite(scores).any():
        return int(np.argmax(criteria))
    tied = np.flatnonzero(scores >= np.max(scores[np.isfinite(scores)]) - _pipeline.FORECAST_TIE)
    return int(tied[np.argmax(criteria[tied])])


def naive_drift_rmse(series):
    forecast, _ = naive_forecasts(series["y"], series["y_test"].size, None)
    return rmse(forecast, series["y_test"])


def print_table(title, names, picks, reference, reference_name):
    print(f"\n{title}: test RMSE / MNLP of each rule's pick\n")
    print("| series | " + " | ".join(RULES) + f" | {reference_name} RMSE |")
    print("|---" * (len(RULES) + 2) + "|")
    for name in names:
        print(f"| {name} | " + " | ".join(f"{picks[name][rule][0]:.4g} / {picks[name][rule][1]:.2f}" for rule in RULES)
              + f" | {reference[name][0]:.4g} |")
    print()
    print(f"| rule | geometric mean of RMSE / oracle | worst | better than {reference_name} |"
          + (" median relative RMSE |" if reference_name == "ABCD" else "") + " median MNLP | MNLP below the refit's |")
    print("|---|---|---|---|---|---|" + ("---|" if reference_name == "ABCD" else ""))
    for rule in RULES:
        ratios = [picks[name][rule][0] / picks[name]["oracle"][0] for name in names]
        wins = sum(picks[name][rule][0] < reference[name][0] for name in names)
        line = f"| {rule} | {np.exp(np.mean(np.log(ratios))):.3f} | {max(ratios):.2f} | {wins} of {len(names)} |"
        if reference_name == "ABCD":
            # as extrapolation.py: RMSE / the best of the published methods and this rule's
            relative = [picks[name][rule][0] / min(reference[name][3], picks[name][rule][0]) for name in names]
            line += f" {np.median(relative):.2f} |"
        mnlp = [picks[name][rule][1] for name in names]
        better = sum(picks[name][rule][1] < picks[name]["refit"][1] - 1e-9 for name in names)
        worse = sum(picks[name][rule][1] > picks[name]["refit"][1] + 1e-9 for name in names)
        line += f" {np.median(mnlp):.2f} | {better} (above: {worse}) |"
        print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=list(PUBLISHED), choices=list(PUBLISHED) + UNSEEN,
                        metavar="NAME")
    parser.add_argument("--unseen", action="store_true", help="add the unseen series (statsmodels)")
    parser.add_argument("--cache", type=Path, default=None, help="keep (and reuse) each series' finalists here")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    names = list(dict.fromkeys(args.series + (UNSEEN if args.unseen else [])))
    if args.cache is not None:
        args.cache.mkdir(parents=True, exist_ok=True)
    picks, references = {}, {}
    for name in names:
        path = None if args.cache is None else args.cache / f"{name}-seed{args.seed}.pkl"
        if path is not None and path.exists():
            with path.open("rb") as file:
                series = pickle.load(file)
        else:
            series = fit_finalists(name, args.n_jobs, args.seed)
            if path is not None:
                with path.open("wb") as file:
                    pickle.dump(series, file)
        if series["selection"] != "forecast":
            print(f"{name}: the select stage ran by {series['selection']!r}, not by forecasts; left out")
            continue
        picks[name] = judge(series)
        references[name] = PUBLISHED.get(name) or (naive_drift_rmse(series),)
        print(f"{name}: {len(series['finalists'])} finalists, default pick {series['structure']} "
              f"(RMSE {series['rmse']:.4g}), fit {series['seconds']:.1f} s", flush=True)
    shared = [name for name in picks if name in PUBLISHED]
    unseen = [name for name in picks if name not in PUBLISHED]
    if shared:
        print_table("Shared series", shared, picks, references, "ABCD")
    if unseen:
        print_table("Unseen series", unseen, picks, references, "naive + drift")


if __name__ == "__main__":
    main()
