"""Select-stage rules for series, replayed on the refits the default already makes (issues 29 and 31).

The series default (``selection="forecast"``) refits every finalist on the first 85 % of the
training series and keeps the one whose forecast of the rest has the highest log density (finalists
within ``FORECAST_TIE`` nats of it are tied and the criterion decides); when the criterion's best
finalist changes within those rows, the criterion alone decides. This script fits the defaults once
per series and keeps, for every finalist, the pointwise log densities of that judged forecast, the
variance factor its refit gives (``forecast_variance_scale_``), its criterion, whether it is a
baseline, and its forecast of the test segment from its fit on all training rows. Rules of the select
stage are then replayed on those numbers without fitting again:

- ``default``: the select stage as built;
- ``margin z``: the search's structures compete only if their judged forecast beats the best
  baseline's by more than ``z`` standard errors of the pointwise difference (the classifier's and the
  small tables' rule for leave-one-out and cross-validated densities, here on forecasts);
- ``prior l``: each finalist's judged log density plus ``l`` times its criterion's gap to the best
  criterion (the criterion as a prior that the few judged rows update);
- ``stacking``: no pick, the mixture of the finalists' test forecasts with stacking weights (Yao et al.
  2018) fitted to the judged pointwise densities.

Series: the 11 of ``extrapolation.py`` and the 23 of ``unseen_series.py`` (``pip install ".[bench]"``),
each cut as there. The select stage is replayed without the late-change rule, so that every finalist
forecasts; the rules apply it themselves. Printed: per series the naive reference (ABCD's RMSE for
the shared series, naive with drift for the others), each rule's test RMSE / MNLP / share inside the
95 % interval of its pick; per rule the wins over the reference, the geometric mean of RMSE over the
default's, how many series it changes for better or worse, and the sum of its MNLP changes.

``--cache DIR`` keeps each series' numbers (pickled; the default is a fresh temporary directory), so a
rule added below is measured on all 34 series in seconds.

Run:  python benchmarks/forecast_select_rules.py [--series airline nile ...] [--cache DIR] [--n-jobs 2]
"""

import argparse
import pickle
import tempfile
import time
import warnings
from pathlib import Path
from unittest.mock import patch

import numpy as np
from scipy import stats
from scipy.special import logsumexp

import extrapolation
import unseen_series
from skgpsearch import CompositionalGPRegressor
from skgpsearch._engine._exact import GPPosterior
from skgpsearch._search import _pipeline
from skgpsearch._search._regression import RegressionModelFitter
from skgpsearch.kernels import to_kernel

SERIES = list(extrapolation.PUBLISHED) + unseen_series.SERIES + unseen_series.R_SERIES + unseen_series.R_SERIES_MORE
MARGINS = [0.0, 0.5, 1.0, 2.0]
PRIORS = [0.05, 0.1, 0.25, 0.5, 1.0]


def load(name):
    """(X, y, X_test, y_test, reference RMSE): ABCD's for the shared series, naive with drift's for the others."""
    if name in extrapolation.PUBLISHED:
        X, y = extrapolation.load(name, "train")
        X_test, y_test = extrapolation.load(name, "test")
        return X, y, X_test, y_test, extrapolation.PUBLISHED[name][0]
    t, values = unseen_series.load(name)
    n = int(round(0.9 * values.size))
    drift, _ = unseen_series.naive_forecasts(values[:n], values.size - n, None)
    return t[:n, None], values[:n], t[n:, None], values[n:], float(np.sqrt(np.mean((drift - values[n:]) ** 2)))


def fit_series(name, n_jobs):
    """The defaults' fit on ``name``, with what the rules need of each finalist."""
    X, y, X_test, y_test, reference = load(name)
    seen = {}
    select, forecast_densities = _pipeline.SearchPipeline.select, _pipeline.SearchPipeline._forecast_densities
    changes = RegressionModelFitter.changes_in_forecast_rows

    def keeping_the_finalists(self, model_fitter, exploration, finalists):
        seen.update(fitter=model_fitter, records=list(finalists.records))
        return select(self, model_fitter, exploration, finalists)

    def keeping_the_densities(self, model_fitter, records, seed):
        densities, refits = forecast_densities(self, model_fitter, records, seed)
        seen["densities"] = densities
        seen["scales"] = {key: model_fitter.forecast_variance_scale(refit, _pipeline.FORECAST_FRACTION)
                          for key, refit in refits.items()}
        return densities, refits

    def every_finalist_forecasts(self, record, fraction):
        seen["late_change"] = changes(self, record, fraction)
        return False

    start = time.perf_counter()
    with (patch.object(_pipeline.SearchPipeline, "select", keeping_the_finalists),
          patch.object(_pipeline.SearchPipeline, "_forecast_densities", keeping_the_densities),
          patch.object(RegressionModelFitter, "changes_in_forecast_rows", every_finalist_forecasts),
          warnings.catch_warnings()):
        warnings.simplefilter("ignore")
        CompositionalGPRegressor(random_state=0, n_jobs=n_jobs).fit(X, y)
    seconds = time.perf_counter() - start
    fitter = seen["fitter"]
    y_fit = (y - fitter.y_mean) / fitter.y_std
    finalists = []
    for record in seen["records"]:
        posterior = GPPosterior(to_kernel(record.structure, summary=fitter.summary), record.noise_variance, X, y_fit)
        mean, std = posterior.predict(X_test, return_std=True)
        finalists.append(dict(
            structure=str(record.structure), baseline=record.baseline, criterion=record.criterion,
            judged=seen.get("densities", {}).get(id(record)), scale=seen.get("scales", {}).get(id(record)),
            interpolates=fitter.interpolates_noise(record),
            test_mean=mean * fitter.y_std + fitter.y_mean,
            test_std=np.sqrt(std**2 + record.noise_variance) * fitter.y_std,
        ))
    return dict(name=name, y_test=y_test, reference=reference, finalists=finalists,
                late_change=seen.get("late_change", False), seconds=seconds)


def judged_finalists(finalists):
    """Indices of the finalists the forecast judge scores (those that interpolate the noise left out)."""
    judged = [i for i, f in enumerate(finalists) if f["judged"] is not None]
    return [i for i in judged if not finalists[i]["interpolates"]] or judged


def pick(series, margin=None, prior=0.0):
    """The index of the finalist a rule picks (see the module docstring); ``margin=None``, ``prior=0``: default."""
    finalists = series["finalists"]
    criteria = np.array([f["criterion"] for f in finalists])
    judged = judged_finalists(finalists)
    if series["late_change"] or not judged:
        return int(np.argmax(criteria))
    if margin is not None:
        baselines = [i for i in judged if finalists[i]["baseline"]]
        if baselines:
            best = finalists[max(baselines, key=lambda i: finalists[i]["judged"].sum())]["judged"]
            judged = [i for i in judged if finalists[i]["baseline"] or _clears(finalists[i]["judged"] - best, margin)]
    top = max(criteria[i] for i in judged)
    scores = {i: finalists[i]["judged"].sum() + prior * (criteria[i] - top) for i in judged}
    level = max(scores.values()) - _pipeline.FORECAST_TIE
    return max((i for i in judged if scores[i] >= level), key=lambda i: criteria[i])


def _clears(gain, margin):
    spread = gain.std(ddof=1) * np.sqrt(gain.size) if gain.size > 1 else 0.0
    return gain.sum() > margin * spread


def spread_beyond(finalist):
    """The finalist's test standard deviations, widened by its refit's variance factor as ``predict`` does."""
    scale = finalist["scale"]
    return finalist["test_std"] * np.sqrt(max(1.0, scale if scale is not None else 1.0))


def scores_of(series, index):
    """(RMSE, MNLP, share inside the 95 % interval) of one finalist's test forecast."""
    finalist, y = series["finalists"][index], series["y_test"]
    mean, std = finalist["test_mean"], spread_beyond(finalist)
    return (float(np.sqrt(np.mean((mean - y) ** 2))), float(-stats.norm.logpdf(y, mean, std).mean()),
            float(np.mean(np.abs(y - mean) < stats.norm.ppf(0.975) * std)))


def stacked_scores(series):
    """(RMSE, MNLP, inside) of the stacking mixture of the judged finalists (the default's pick where the
    criterion decides)."""
    finalists, y = series["finalists"], series["y_test"]
    judged = judged_finalists(finalists)
    if series["late_change"] or not judged:
        return scores_of(series, pick(series))
    weights = _pipeline.stacking_weights(np.column_stack([finalists[i]["judged"] for i in judged]))
    used = [(w, finalists[i]) for w, i in zip(weights, judged) if w > _pipeline.MIN_AVERAGING_WEIGHT * weights.max()]
    total = sum(w for w, _ in used)
    means = np.column_stack([f["test_mean"] for _, f in used])
    stds = np.column_stack([spread_beyond(f) for _, f in used])
    w = np.array([w for w, _ in used]) / total
    mean = means @ w
    std = np.sqrt((stds**2 + means**2) @ w - mean**2)
    density = logsumexp(stats.norm.logpdf(y[:, None], means, stds) + np.log(w), axis=1)
    return (float(np.sqrt(np.mean((mean - y) ** 2))), float(-density.mean()),
            float(np.mean(np.abs(y - mean) < stats.norm.ppf(0.975) * std)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=SERIES, choices=SERIES)
    parser.add_argument("--cache", type=Path, default=None, help="keep (and reuse) each series' numbers here")
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="forecast_select_rules_"))
    cache.mkdir(parents=True, exist_ok=True)
    rules = {"default": lambda s: scores_of(s, pick(s))}
    rules.update({f"margin {z:g}": (lambda s, z=z: scores_of(s, pick(s, margin=z))) for z in MARGINS})
    rules.update({f"prior {p:g}": (lambda s, p=p: scores_of(s, pick(s, prior=p))) for p in PRIORS})
    rules["stacking"] = stacked_scores
    results = {}
    for name in args.series:
        path = cache / f"{name}.pkl"
        if path.exists():
            series = pickle.loads(path.read_bytes())
        else:
            series = fit_series(name, args.n_jobs)
            path.write_bytes(pickle.dumps(series))
            print(f"fitted {name} in {series['seconds']:.0f} s", flush=True)
        results[name] = (series, {rule: score(series) for rule, score in rules.items()})
    print("\n| series | reference RMSE | " + " | ".join(rules) + " |")
    print("|---" * (len(rules) + 2) + "|")
    for name, (series, scored) in results.items():
        cells = " | ".join(f"{r:.4g} / {m:.2f} / {inside:.0%}" for r, m, inside in scored.values())
        print(f"| {name} | {series['reference']:.4g} | {cells} |")
    print("\n(cells: test RMSE / MNLP / inside the 95 % interval; reference: ABCD for the shared series, naive with "
          "drift for the others)\n")
    print("| rule | beats the reference | RMSE / default's, geometric mean | RMSE better / worse | MNLP better / worse "
          "| MNLP change, sum | the sum without its largest change |")
    print("|---|---|---|---|---|---|---|")
    for rule in rules:
        pairs = [(scored[rule], scored["default"], series["reference"]) for series, scored in results.values()]
        wins = sum(mine[0] < reference for mine, _, reference in pairs)
        ratio = np.exp(np.mean([np.log(mine[0] / default[0]) for mine, default, _ in pairs]))
        better = sum(mine[0] < default[0] - 1e-12 for mine, default, _ in pairs)
        worse = sum(mine[0] > default[0] + 1e-12 for mine, default, _ in pairs)
        changes = np.array([mine[1] - default[1] for mine, default, _ in pairs])
        largest = changes[np.argmax(np.abs(changes))] if changes.size else 0.0
        print(f"| {rule} | {wins} of {len(pairs)} | {ratio:.3f} | {better} / {worse} | {np.sum(changes < -1e-9)} / "
              f"{np.sum(changes > 1e-9)} | {changes.sum():+.2f} | {changes.sum() - largest:+.2f} |")
    print(f"\n(numbers kept in {cache})")


if __name__ == "__main__":
    main()
