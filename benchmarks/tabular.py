"""Tabular data: the default estimators against one ARD kernel, a RandomForest and gradient boosting (issue 29).

For each dataset, 10 folds with fixed seeds (stratified for classification); every method sees
the same folds, Gaussian processes (ours and scikit-learn's) behind a StandardScaler.

Methods
- ours: the default CompositionalGPClassifier / CompositionalGPRegressor (``n_jobs`` below), fitted
  with ``selection="loo"`` so that its one search per fold gives every rule of the select stage,
  computed from the same finalists (the search's best structures, the best of each depth, the
  baselines); "ours: default" is the rule ``selection="auto"`` applies ("stacking" with two or
  more columns, "criterion" on one):
  * "today": the rule before issue 29 -- the search's best by its criterion (regressor: no
    baselines; classifier: the ARD, additive and, since 2026-12-05, isotropic baselines compete under the
    criterion);
  * "criterion": the best criterion among the search's best and the baselines;
  * "map": the best log evidence plus the log of the weak default hyperprior
    (:class:`~skgpsearch.criteria.HyperPrior`) at the fitted values (Corani et al. 2020);
  * "loo": the best leave-one-out log predictive density;
  * "stacking": the finalists' mixture with stacking weights (Yao et al. 2018);
  * "stacking-clear": the default's "stacking" since 2026-11-26: for the classifier, stacking of
    the baselines and the search's structures whose leave-one-out log density beats the best
    baseline's by more than one standard error of the per-row differences (the others are held
    back), and from 2026-12-05 "stacking-clear-aic"; for the regressor, "stacking", and from
    2026-11-28 "stacking-aic". Since 2026-12-05 a classifier finalist's leave-one-out densities
    are those of its calibrated predictive (``BinaryLaplaceModel.loo_log_density``) in every rule;
  * "stacking-2se": stacking where its leave-one-out log score beats the criterion's choice by
    more than two standard errors of the per-row differences, else the criterion's choice
    (measured from wine on; not a rule of the estimators);
  * "stacking-aic": stacking of the leave-one-out densities discounted by k / n nats per row for a
    finalist with k hyperparameters: they were fitted on the rows they predict, and AIC's argument
    puts that optimism at about k nats in all (the regressor's default from 2026-11-28, see
    ``_pipeline.LOO_OPTIMISM_PER_HYPERPARAMETER``);
  * "stacking-clear-aic" (classification): the classifier's "stacking-clear", its kept finalists'
    densities discounted as in "stacking-aic";
  * "pseudo-bma": the mixture weighted by exp(leave-one-out log density);
  * "bma": the mixture weighted by exp(criterion).
- sklearn GP ARD: scikit-learn's GaussianProcessClassifier / Regressor with one ARD RBF kernel
  (times a constant; plus a WhiteKernel for regression), n_restarts_optimizer=2;
- RandomForest (500 trees) and HistGradientBoosting (defaults).

Columns: mean error over the folds -- classification error % and test log loss (nats per point:
LOG_LOSS with the calibrated predictive the classifier returns, LOG_LOSS_RAW with the Laplace
predictive's own, for our rules only), regression SMSE and MSLL (mean standardised log loss,
R&W eq. 2.34; GPs only) -- with a "*" where a method is
significantly worse (p < 0.05) than the better of RandomForest and the ARD GP by the corrected
resampled t-test (Nadeau & Bengio 2003), seconds per fold, and the structures chosen.

Results are cached per fold in benchmarks/results/tabular.json, so runs can be split:

    python benchmarks/tabular.py [--datasets pima wine] [--folds 0 1 2] [--n-jobs 2] [--table-only]
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.ensemble import (HistGradientBoostingClassifier, HistGradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor
from skgpsearch._engine._laplace import calibrate_predictive
from skgpsearch._search import BinaryClassificationModelFitter
from skgpsearch._search._pipeline import _clear_of_the_baselines, loo_optimism, resolve_selection, stacking_weights
from skgpsearch.criteria import HyperPrior

from classification_real import HEART_CODES  # the benchmarks folder is on sys.path when run as a script

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
RESULTS = Path(__file__).resolve().parent / "results" / "tabular.json"
N_FOLDS = 10
CLASSIFICATION = ["breast449", "pima", "liver", "heart_cleveland", "breast_cancer", "wine"]
REGRESSION = ["auto_mpg", "cpus", "mcycle", "diabetes"]
RULES = ["today", "criterion", "map", "loo", "stacking", "stacking-clear", "stacking-2se", "stacking-aic",
         "stacking-clear-aic", "pseudo-bma",
         "bma"]


def load(name):
    """(X, y, task) of a dataset."""
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        return X, y, "classification"
    if name == "wine":
        X, y = load_wine(return_X_y=True)
        return X, y, "classification"
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        return X, y, "regression"
    frame = pd.read_csv(DATA / f"{name}.csv")
    if name == "heart_cleveland":
        for column, codes in HEART_CODES.items():
            frame[column] = frame[column].map(codes)
    targets = {"pima": "diabetes", "liver": "target", "heart_cleveland": "diameter narrowing", "breast449": "Class",
               "auto_mpg": "mpg", "cpus": "perf", "mcycle": "accel"}
    y = frame.pop(targets[name]).to_numpy()
    X = frame.to_numpy(dtype=float)
    if name in CLASSIFICATION:
        return X, y.astype(str), "classification"
    y = np.log(y.astype(float)) if name == "cpus" else y.astype(float)
    return X, y, "regression"


def folds(X, y, task):
    splitter = (StratifiedKFold if task == "classification" else KFold)(N_FOLDS, shuffle=True, random_state=0)
    return list(splitter.split(X, y))


class _Recording:
    """Keeps every binary problem's (model fitter, pipeline result) of a fit: the finalists' models."""

    def _run_pipeline(self, model_fitter, grammar, criterion, seed, **options):
        outcome = super()._run_pipeline(model_fitter, grammar, criterion, seed, **options)
        self._recorded.append((model_fitter, outcome))
        return outcome

    def fit(self, X, y):
        self._recorded = []
        return super().fit(X, y)


class RecordingRegressor(_Recording, CompositionalGPRegressor):
    pass


class RecordingClassifier(_Recording, CompositionalGPClassifier):
    pass


def _log_prior(model, prior):
    """log p(theta) of a fitted model under ``prior`` (independent normals)."""
    if hasattr(model, "_prior_moments"):  # a binary Laplace model
        means, sds = model._prior_moments(prior)
        theta = model.theta
    else:
        means, sds = model.prior_moments(prior)
        theta = np.append(model.kernel.theta, math.log(model.posterior.noise_variance)) \
            if model.engine != "student_t" else None
    if theta is None or theta.shape != means.shape:
        return 0.0
    return float(np.sum(stats.norm.logpdf(theta, means, sds)))


def rule_weights(model_fitter, outcome):
    """{rule: [(record, weight), ...]} for the rules of the select stage, from one search's finalists."""
    finalists = outcome.finalists
    rows = outcome.rows
    search_best = finalists[0]  # the search's best comes first (polished when the search optimised on subsets)
    baselines = [r for r in finalists if r.baseline]
    pool = [search_best] + baselines

    def best_of(records, score):
        best = records[0]
        for r in records[1:]:
            if score(r) > score(best):
                best = r
        return [(best, 1.0)]

    def weighted(records, scores):
        scores = np.asarray(scores, dtype=float)
        w = np.exp(scores - scores.max())
        w /= w.sum()
        return [(r, float(x)) for r, x in zip(records, w) if x >= 1e-6 * w.max()]

    prior = HyperPrior()
    maps = {id(r): r.log_marginal_likelihood + _log_prior(model_fitter.model(r, rows), prior) for r in finalists}
    out = {
        "today": best_of([search_best] + (baselines if isinstance(model_fitter, BinaryClassificationModelFitter)
                                          else []), lambda r: r.criterion),
        "criterion": best_of(pool, lambda r: r.criterion),
        "map": best_of(finalists, lambda r: maps[id(r)]),
        "bma": weighted(finalists, [r.criterion for r in finalists]),
    }
    scored = [r for r in finalists if r.predictive_score is not None]
    if scored:
        out["loo"] = best_of(scored, lambda r: r.predictive_score)
        out["pseudo-bma"] = weighted(scored, [r.predictive_score for r in scored])
        densities = np.column_stack([model_fitter.model(r, rows).loo_log_density() for r in scored])
        w = stacking_weights(densities)
        out["stacking"] = [(r, float(x)) for r, x in zip(scored, w) if x >= 1e-6 * w.max()]
        # stacking only where its held-out log score beats the criterion's choice by two standard errors
        chosen = out["criterion"][0][0]
        if any(r is chosen for r in scored):
            mixture = np.logaddexp.reduce(densities + np.log(np.maximum(w, 1e-300)), axis=1)
            gain = mixture - densities[:, [r is chosen for r in scored].index(True)]
            clear = gain.sum() > 2.0 * math.sqrt(gain.size) * gain.std()
            out["stacking-2se"] = out["stacking"] if clear else out["criterion"]
        # stacking of leave-one-out densities discounted by the optimism of hyperparameters fitted on the same
        # rows: k / n nats per row for k hyperparameters (AIC's correction, spread over the rows)
        n_rows = densities.shape[0]
        flat_on = model_fitter.summary if model_fitter.discount_skips_flat_lengthscales else None
        w = stacking_weights(densities - loo_optimism(scored, n_rows, flat_on))
        out["stacking-aic"] = [(r, float(x)) for r, x in zip(scored, w) if x >= 1e-6 * w.max()]
        # the default: stacking of the baselines and the structures that clearly beat the best baseline
        margin = model_fitter.baseline_margin_se
        kept = scored if margin is None else _clear_of_the_baselines(
            scored, {id(r): densities[:, i] for i, r in enumerate(scored)}, margin,
            simplest=model_fitter.extra_initial)[0]
        kept_densities = np.column_stack([densities[:, scored.index(r)] for r in kept])
        if margin is not None:
            # the classifier's rule with the regressor's discount on top (measured 2026-11-28)
            w = stacking_weights(kept_densities - loo_optimism(kept, n_rows, flat_on))
            out["stacking-clear-aic"] = [(r, float(x)) for r, x in zip(kept, w) if x >= 1e-6 * w.max()]
        if model_fitter.discounts_loo_optimism:  # the regressor's stacking since 2026-11-28
            kept_densities = kept_densities - loo_optimism(kept, n_rows, flat_on)
        w = stacking_weights(kept_densities)
        out["stacking-clear"] = [(r, float(x)) for r, x in zip(kept, w) if x >= 1e-6 * w.max()]
    return out


def _regression_density(models_weights, X, y):
    """Mean (original units) and log predictive density of y under a weighted mixture of regression models."""
    densities, means = [], []
    for model, w in models_weights:
        mean, std = model.predict(X, return_std=True)
        noise = model.fitted_attributes()["noise_variance_"]
        densities.append(math.log(w) + stats.norm.logpdf(y, mean, np.sqrt(std**2 + noise)))
        means.append(w * mean)
    return np.sum(means, axis=0), np.logaddexp.reduce(np.array(densities), axis=0)


def run_ours(task, X_train, y_train, X_test, y_test, n_jobs):
    scaler = StandardScaler().fit(X_train)
    Xs, X_test_scaled = scaler.transform(X_train), scaler.transform(X_test)
    # selection="loo" gives every rule's finalists; the default ("auto") is "stacking", "forecast" on a series
    estimator = (RecordingClassifier if task == "classification" else RecordingRegressor)(
        random_state=0, n_jobs=n_jobs, selection="loo")
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(Xs, y_train)
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "structure": _text(estimator.structure_),
           "selection": "loo" if X_train.shape[1] >= 2 else "criterion"}
    # the input warping (the classifier decides it by the evidence; its gain, where it measured one)
    out["warped"] = estimator.input_transformer_ is not None
    out["warp_evidence_gain"] = estimator._warping_evidence_gain
    rules = [rule_weights(f, o) for f, o in estimator._recorded]
    # the finalists' models take the inputs as the GP saw them (after the estimator's input warping)
    Xt = estimator._model_inputs(X_test_scaled)
    # each binary problem's search path: what a stopping rule on small gains would have kept and saved
    out["levels"] = [[{key: level[key] for key in ("depth", "best_criterion", "elapsed", "n_evaluations")}
                      for level in o.search.levels] for _, o in estimator._recorded]
    out["finalists"] = {_text(r.structure): {"criterion": r.criterion, "loo": r.predictive_score,
                                             "baseline": r.baseline}
                        for _, o in estimator._recorded for r in o.finalists}
    if task == "regression" and X_train.shape[1] == 1:
        # one column: the default select stage forecasts a series' latest rows (a column that looks like a time
        # index), which the finalists recorded under selection="loo" cannot replay; the estimator with its
        # defaults gives the default's scores
        default = CompositionalGPRegressor(random_state=0, n_jobs=n_jobs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            default.fit(Xs, y_train)
        mean, std = default.predict(X_test_scaled, return_std=True)  # of a new observation: noise included
        out["default"] = {**_regression_scores(mean, stats.norm.logpdf(y_test, mean, std),
                                               y_train, y_test),
                          "selection": default.selection_, "structures": [_text(default.structure_)],
                          "baseline": False}
    for rule in RULES:
        if any(rule not in r for r in rules):
            continue
        if task == "classification":
            raw, calibrated = [], []
            for (fitter, outcome), chosen in zip(estimator._recorded, rules):
                posteriors = [fitter.model(r, outcome.rows).posterior for r, _ in chosen[rule]]
                weights = [w for _, w in chosen[rule]]
                # the fit calibrated its own choice's posteriors; each rule starts from the raw predictive
                _set_calibration(posteriors, 1.0, 0.0)
                raw.append(sum(w * post.predict_proba(Xt) for post, w in zip(posteriors, weights)))
                # as the estimator's final model does for its mixture (see BinaryLaplaceModel.calibrate)
                calibrate_predictive(posteriors, weights, fitter.y)
                calibrated.append(sum(w * post.predict_proba(Xt) for post, w in zip(posteriors, weights)))
                _set_calibration(posteriors, 1.0, 0.0)
            p, p_raw = _class_probabilities(calibrated), _class_probabilities(raw)
            predicted = estimator.classes_[np.argmax(p, axis=1)]
            out[rule] = {"error": float(np.mean(predicted != y_test)),
                         "log_loss": _log_loss(p, estimator.classes_, y_test),
                         "log_loss_raw": _log_loss(p_raw, estimator.classes_, y_test),
                         "structures": [_text(r.structure) for chosen in rules for r, _ in chosen[rule][:1]],
                         "baseline": all(r.baseline for chosen in rules
                                         for r, _ in chosen[rule][:1])}
        else:
            (fitter, outcome), chosen = estimator._recorded[0], rules[0]
            mean, log_density = _regression_density([(fitter.model(r), w) for r, w in chosen[rule]], Xt, y_test)
            out[rule] = {**_regression_scores(mean, log_density, y_train, y_test),
                         "structures": [_text(chosen[rule][0][0].structure)],
                         "baseline": chosen[rule][0][0].baseline}
    return out


def _set_calibration(posteriors, scale, floor):
    """The Laplace predictive as it is (scale 1, floor 0, no turn to the base rate), or as given."""
    for posterior in posteriors:
        posterior.variance_scale, posterior.probability_floor, posterior.base_rate = scale, floor, None


def _class_probabilities(one_vs_rest):
    """(n, n_classes) probabilities from each binary problem's p(positive), as the classifier's predict_proba."""
    p = np.column_stack(one_vs_rest)
    return np.column_stack([1 - p[:, 0], p[:, 0]]) if p.shape[1] == 1 else p / p.sum(axis=1, keepdims=True)


def _log_loss(probabilities, classes, y_test):
    """Mean negative log probability of the test points' classes (nats per point; probabilities clipped at 1e-15
    as scikit-learn's log_loss does)."""
    column = np.searchsorted(classes, y_test)
    return float(-np.mean(np.log(np.clip(probabilities[np.arange(len(y_test)), column], 1e-15, None))))


def _text(structure):
    return str(structure) if not isinstance(structure, list) else " | ".join(str(s) for s in structure)


def _regression_scores(mean, log_density, y_train, y_test):
    smse = float(np.mean((mean - y_test) ** 2) / np.var(y_test))
    trivial = stats.norm.logpdf(y_test, np.mean(y_train), np.std(y_train))
    return {"smse": smse, "msll": float(np.mean(-log_density + trivial))}


def run_baseline(method, task, X_train, y_train, X_test, y_test, n_jobs):
    start = time.perf_counter()
    n_features = X_train.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "sklearn GP ARD":
            if task == "classification":
                kernel = ConstantKernel() * RBF(np.ones(n_features))
                model = make_pipeline(StandardScaler(), GaussianProcessClassifier(kernel, n_restarts_optimizer=2,
                                                                                  random_state=0))
            else:
                kernel = ConstantKernel() * RBF(np.ones(n_features)) + WhiteKernel()
                model = make_pipeline(StandardScaler(), GaussianProcessRegressor(kernel, normalize_y=True,
                                                                                 n_restarts_optimizer=2, random_state=0))
        elif method == "RandomForest":
            model = (RandomForestClassifier if task == "classification" else RandomForestRegressor)(
                n_estimators=500, random_state=0, n_jobs=n_jobs)
        else:
            model = (HistGradientBoostingClassifier if task == "classification" else HistGradientBoostingRegressor)(
                random_state=0)
        model.fit(X_train, y_train)
        out = {"seconds": time.perf_counter() - start}
        if task == "classification":
            out["error"] = float(np.mean(model.predict(X_test) != y_test))
            out["log_loss"] = _log_loss(model.predict_proba(X_test), model.classes_, y_test)
        elif method == "sklearn GP ARD":
            mean, std = model.predict(X_test, return_std=True)
            out.update(_regression_scores(mean, stats.norm.logpdf(y_test, mean, std), y_train, y_test))
        else:
            mean = model.predict(X_test)
            out.update(_regression_scores(mean, np.full(len(y_test), np.nan), y_train, y_test))
            out["msll"] = None
    return out


BASELINES = ["sklearn GP ARD", "RandomForest", "HistGradientBoosting"]


def load_results():
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def save_results(results):
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True))


def corrected_t_test(a, b, n_train, n_test):
    """p-value that method a's fold errors exceed b's (Nadeau & Bengio 2003, one-sided), corrected for overlap."""
    d = np.asarray(a) - np.asarray(b)
    k = len(d)
    var = np.var(d, ddof=1)
    if var == 0:
        return 1.0 if d.mean() <= 0 else 0.0
    t = d.mean() / math.sqrt((1.0 / k + n_test / n_train) * var)
    return float(stats.t.sf(t, k - 1))


def table(results, datasets):
    for task, metric_names in (("classification", ["error", "log_loss", "log_loss_raw"]),
                               ("regression", ["smse", "msll"])):
        names = [d for d in datasets if load(d)[2] == task and d in results]
        if not names:
            continue
        for metric in metric_names:
            print(f"\n### {task}: {'error %' if metric == 'error' else metric.upper()} (mean over folds; "
                  "* significantly worse than the better of RandomForest and the ARD GP, p < 0.05)")
            methods = ["ours: default"] + [f"ours: {r}" for r in RULES] + BASELINES
            print("| method | " + " | ".join(names) + " |")
            print("|---|" + "---|" * len(names))
            for method in methods:
                cells = []
                for name in names:
                    values = _fold_values(results[name], method, metric)
                    if values is None:
                        cells.append("")
                        continue
                    X, y, _ = load(name)
                    n_test = len(y) / N_FOLDS
                    mark = ""
                    references = [_fold_values(results[name], m, metric) for m in ("RandomForest", "sklearn GP ARD")]
                    references = [r for r in references if r is not None and not np.any(np.isnan(r))]
                    complete = len(values) == N_FOLDS and all(r is not None and len(r) == N_FOLDS for r in references)
                    if references and complete and not method.startswith(("RandomForest", "sklearn")) \
                            and not np.any(np.isnan(values)):
                        better = min(references, key=np.mean)
                        if corrected_t_test(values, better, len(y) - n_test, n_test) < 0.05:
                            mark = "*"
                    scale = 100 if metric == "error" else 1
                    partial = "" if len(values) == N_FOLDS else f" ({len(values)}/{N_FOLDS} folds)"
                    cells.append("—" if np.any(np.isnan(values)) else f"{scale * np.mean(values):.3f}{mark}{partial}"
                                 if metric != "error" else f"{scale * np.mean(values):.2f}{mark}{partial}")
                if any(cells):  # a rule of one task only has no row in the other's table
                    print(f"| {method} | " + " | ".join(cells) + " |")
        print(f"\n{task}: seconds per fold (ours: the default fit, n_jobs as recorded)")
        print("| method | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for method in ["ours"] + BASELINES:
            cells = []
            for name in names:
                folds_done = results[name].get("ours" if method == "ours" else method, {})
                cells.append(f"{np.mean([f['seconds'] for f in folds_done.values()]):.1f}" if folds_done else "")
            print(f"| {method} | " + " | ".join(cells) + " |")
        for name in names:
            ours = results[name].get("ours", {})
            if not ours:
                continue
            print(f"\n{name} ({len(ours)} folds): selection {Counter(f['selection'] for f in ours.values())}")
            for rule in ("stacking-clear", "loo", "stacking", "criterion", "today"):
                chosen = Counter(s for f in ours.values() if rule in f for s in f[rule]["structures"])
                composite = sum(not f[rule]["baseline"] for f in ours.values() if rule in f)
                print(f"- {rule}: composite in {composite}/{len(ours)} folds; "
                      + "; ".join(f"{s} (x{c})" if c > 1 else s for s, c in chosen.most_common(6)))


def _fold_values(result, method, metric):
    if method.startswith("ours: "):
        rule = method[len("ours: "):]
        folds_done = result.get("ours", {})
        if rule == "default":  # folds searched with selection="loo" on 2+ columns: today's "auto" rule there
            auto = resolve_selection("auto", has_loo=True)
            default = {"loo": "stacking-clear" if auto == "stacking" else auto, "criterion": "default"}
            values = [f[default[f["selection"]]].get(metric) for f in folds_done.values() if default[f["selection"]] in f]
        else:
            values = [f[rule].get(metric) for f in folds_done.values() if rule in f]
    else:
        folds_done = result.get(method, {})
        values = [f.get(metric) for f in folds_done.values()]
    if not folds_done or not values:
        return None
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=CLASSIFICATION + REGRESSION)
    parser.add_argument("--methods", nargs="+", default=["ours"] + BASELINES)
    parser.add_argument("--folds", type=int, nargs="+", default=list(range(N_FOLDS)))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--rerun", action="store_true")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    results = load_results()
    if not args.table_only:
        for name in args.datasets:
            X, y, task = load(name)
            splits = folds(X, y, task)
            for method in args.methods:
                for fold in args.folds:
                    cached = results.get(name, {}).get(method, {})
                    if str(fold) in cached and not args.rerun:
                        continue
                    train, test = splits[fold]
                    if method == "ours":
                        out = run_ours(task, X[train], y[train], X[test], y[test], args.n_jobs)
                    else:
                        out = run_baseline(method, task, X[train], y[train], X[test], y[test], args.n_jobs)
                    out["n_jobs"] = args.n_jobs
                    results = load_results()
                    results.setdefault(name, {}).setdefault(method, {})[str(fold)] = out
                    save_results(results)
                    score = {k: round(v, 4) for k, v in out.get("loo", out).items() if k in ("error", "smse", "msll")
                             and v is not None}
                    print(f"{name:14s} {method:22s} fold {fold}: {score} {out['seconds']:.1f} s "
                          f"{out.get('structure', '')}", flush=True)
    table(results, args.datasets)


if __name__ == "__main__":
    main()
