"""The fitters' screening scores: the cheap score and the cheaper prescreen that cuts very large levels."""

import dataclasses
import math

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import WhiteKernel

from skgpsearch._engine._laplace import LaplaceObjective
from skgpsearch._engine._likelihoods import get_likelihood
from skgpsearch._search._exact_fitter import SCREEN_CANDIDATE_ROWS, RegressionCandidateFitter
from skgpsearch._search._laplace_fitter import LaplaceCandidateFitter
from skgpsearch._search._loop import Candidate, ParallelCandidateFits
from skgpsearch._search._records import ScreenScore
from skgpsearch._search._starts import start_pool
from skgpsearch.criteria import get_criterion
from skgpsearch.grammar import CompositionalGrammar, parse
from skgpsearch.kernels import DataSummary, to_kernel

GRAMMAR = CompositionalGrammar(["SE"])
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 3))
f = np.sin(2 * X[:, 0]) + 0.8 * X[:, 1] ** 2
Y_REGRESSION = (f - f.mean()) / f.std() + 0.2 * rng.normal(size=300)
Y_LABELS = np.where(f + 0.3 * rng.normal(size=300) > np.median(f), 1.0, -1.0)
SUMMARY = DataSummary.from_data(X, Y_REGRESSION)


def _children_of_fitted(fitter, y, text="SE(0)"):
    parent = fitter(parse(text), X, y, 0)
    hints = fitter.start_hints(parent, X, y, [], [])
    # the children that keep the parent's kernel (the others, replacements, start cold: not prescored)
    children = [child for child in GRAMMAR.expand(parent.structure, X.shape[1]) if child.has_values]
    assert len(children) >= 4
    return parent, hints, children


def test_regression_prescreen_is_the_best_start_next_to_the_parent_and_below_the_cheap_score():
    fitter = RegressionCandidateFitter(summary=SUMMARY, criterion=get_criterion("bic"))
    parent, hints, children = _children_of_fitted(fitter, Y_REGRESSION)
    assert fitter.prescreen(parse("SE(1)"), X, Y_REGRESSION, 0) is None  # no fitted parent: not scored
    for seed, child in enumerate(children[:6]):
        pre = fitter.prescreen(child, X, Y_REGRESSION, seed, parent.warm_state, hints)
        cheap = fitter.screen(child, X, Y_REGRESSION, seed, parent.warm_state, hints)
        # the cheap score optimises from the best starts of the whole pool, of which these are a part
        assert pre.score <= cheap.score + 1e-8
        warm = [s for s in start_pool(child, SUMMARY, hints) if s.kind != "cold"]
        assert len(warm) <= pre.n_evaluations <= 2 * len(warm) < cheap.n_evaluations
        # at least each start's own log likelihood on the screening rows (scikit-learn's, unprofiled)
        # scaled to the 300 rows the criterion sees, with its penalty
        rows = np.sort(np.random.default_rng(seed).choice(300, SCREEN_CANDIDATE_ROWS, replace=False))
        penalty = 0.5 * (child.n_hyperparameters + 1) * math.log(300)
        for start in warm:
            kernel = to_kernel(start.expr, summary=SUMMARY) + WhiteKernel(parent.warm_state * start.noise_factor)
            gp = GaussianProcessRegressor(kernel, optimizer=None, normalize_y=False).fit(X[rows], Y_REGRESSION[rows])
            assert pre.score >= gp.log_marginal_likelihood_value_ * 300 / rows.size - penalty - 1e-6


def test_a_series_screened_effort_scores_candidates_on_at_most_half_its_rows():
    fitter = RegressionCandidateFitter(summary=SUMMARY, criterion=get_criterion("bic"))
    parent, hints, children = _children_of_fitted(fitter, Y_REGRESSION)
    screened = dataclasses.replace(fitter, effort="screened")
    for seed, child in enumerate(children[:2]):
        for candidate_fitter, size in [(fitter, SCREEN_CANDIDATE_ROWS), (screened, 150)]:
            cheap = candidate_fitter.screen(child, X, Y_REGRESSION, seed, parent.warm_state, hints)
            pre = candidate_fitter.prescreen(child, X, Y_REGRESSION, seed, parent.warm_state, hints)
            # every evaluation of both scores saw ``size`` of the 300 rows
            assert cheap.evaluated_rows == size * cheap.n_evaluations > 0
            assert pre.evaluated_rows == size * pre.n_evaluations > 0
            # the prescreen is the best start next to the parent on those rows, scaled to the 300 rows, minus
            # the BIC penalty of 300 rows
            rows = np.sort(np.random.default_rng(seed).choice(300, size, replace=False))
            penalty = 0.5 * (child.n_hyperparameters + 1) * math.log(300)
            kernels = [to_kernel(s.expr, summary=SUMMARY) + WhiteKernel(parent.warm_state * s.noise_factor)
                       for s in start_pool(child, SUMMARY, hints) if s.kind != "cold"]
            best = max(GaussianProcessRegressor(kernel, optimizer=None).fit(X[rows], Y_REGRESSION[rows])
                       .log_marginal_likelihood_value_ for kernel in kernels)
            assert pre.score >= best * 300 / size - penalty - 1e-6


def test_the_cheap_score_estimates_the_criterion_on_all_the_rows():
    """Scored on 250 of 800 rows, the cheap score is on the scale of the candidate's BIC on all of them: a log
    likelihood grows with the rows and the penalty with their log, so a subset's own BIC would weigh a
    hyperparameter 2.6 times as heavily against the fit (and be a third of the criterion here)."""
    gen = np.random.default_rng(1)
    X_many = gen.uniform(-2, 2, size=(800, 2))
    f_many = np.sin(2 * X_many[:, 0]) + 0.5 * X_many[:, 1]
    y_many = (f_many - f_many.mean()) / f_many.std() + 0.3 * gen.normal(size=800)
    fitter = RegressionCandidateFitter(summary=DataSummary.from_data(X_many, y_many), criterion=get_criterion("bic"))
    for text in ["SE(0)", "SE(1)"]:  # each leaves most of the variance to the noise, alike on any rows
        record = fitter(parse(text), X_many, y_many, 0)
        cheap = fitter.screen(parse(text), X_many, y_many, 0)
        assert cheap.evaluated_rows == SCREEN_CANDIDATE_ROWS * cheap.n_evaluations
        assert cheap.score == pytest.approx(record.criterion, rel=0.05)


def test_classification_prescreen_scores_the_starts_next_to_the_parent_on_the_rows_the_fit_uses():
    """The best nested or warm start's evidence on every row the fit optimises on, minus the BIC penalty: the
    candidate's fit, started from it on those rows, ends at least as high."""
    likelihood = get_likelihood("probit")
    fitter = LaplaceCandidateFitter(summary=DataSummary.from_data(X), criterion=get_criterion("bic"),
                                    likelihood=likelihood, effort="explore")
    Xs, ys = X[:200], Y_LABELS[:200]  # below the size from which the fit ranks its starts on a subset
    parent = fitter(parse("SE(0)"), Xs, ys, 0)
    hints = fitter.start_hints(parent, Xs, ys, [], [])
    children = [child for child in GRAMMAR.expand(parent.structure, X.shape[1]) if child.has_values]
    assert fitter.prescreen(parse("SE(2)"), Xs, ys, 0) is None
    for seed, child in enumerate(children[:4]):
        pre = fitter.prescreen(child, Xs, ys, seed, parent.warm_state, hints)
        objective = LaplaceObjective(to_kernel(child, summary=fitter.summary), Xs, ys, likelihood)
        warm = [theta for start, theta in zip(*fitter._start_thetas(child, hints, parent.warm_state))
                if start.kind != "cold"]
        penalty = 0.5 * objective.n_dims * math.log(200)
        best = max(objective(np.clip(theta, objective.bounds[:, 0], objective.bounds[:, 1])) for theta in warm)
        assert pre.score == pytest.approx(best - penalty, abs=1e-9)
        assert pre.n_evaluations == len(warm) and pre.evaluated_rows == 200 * len(warm)
        record = fitter(child, Xs, ys, seed, parent.warm_state, hints)
        assert record.log_marginal_likelihood >= best - 1e-6


def test_classification_prescreen_on_a_subset_is_on_the_scale_of_bic_light_on_every_row():
    """The default criterion counts base kernels, not hyperparameters, and is computed on all the rows: the
    prescreen's evidence on the fit's 100 optimisation rows is scaled to the 200 and penalised as bic_light."""
    likelihood = get_likelihood("probit")
    fitter = LaplaceCandidateFitter(summary=DataSummary.from_data(X), criterion=get_criterion("bic_light"),
                                    likelihood=likelihood, effort="explore", max_optimize_samples=100)
    Xs, ys = X[:200], Y_LABELS[:200]
    parent = fitter(parse("SE(0)"), Xs, ys, 0)
    hints = fitter.start_hints(parent, Xs, ys, [], [])
    children = [child for child in GRAMMAR.expand(parent.structure, X.shape[1]) if child.has_values]
    for seed, child in enumerate(children[:3]):
        pre = fitter.prescreen(child, Xs, ys, seed, parent.warm_state, hints)
        rows = fitter._optimization_rows(ys, np.random.default_rng(seed))
        assert rows.size == 100
        objective = LaplaceObjective(to_kernel(child, summary=fitter.summary), Xs[rows], ys[rows], likelihood)
        warm = [theta for start, theta in zip(*fitter._start_thetas(child, hints, parent.warm_state))
                if start.kind != "cold"]
        best = max(objective(np.clip(theta, objective.bounds[:, 0], objective.bounds[:, 1])) for theta in warm)
        assert pre.score == pytest.approx(2 * best - 0.5 * child.n_base_kernels * math.log(200), abs=1e-9)
        assert pre.evaluated_rows == 100 * pre.n_evaluations


class _SeedRecorder:
    """A fitter stub whose scores record the seed (and so the rows) each candidate was scored with."""

    def __init__(self):
        self.seeds = {}

    def screen(self, expr, X, y, seed, warm_state=None, hints=None):
        self.seeds[str(expr)] = seed
        return ScreenScore(0.0, 1, X.shape[0])

    prescreen = screen


@pytest.mark.parametrize("method", ["screen", "prescreen"])
def test_the_siblings_of_a_level_are_scored_on_the_same_rows(method):
    # A score's subset comes from its seed; scores on different subsets differ by more than the candidates do
    recorder = _SeedRecorder()
    fits = ParallelCandidateFits(recorder, X, Y_REGRESSION, base_seed=7, n_jobs=1, prefer="threads")
    candidates = [Candidate(parse(text), depth=2) for text in ("SE(0) + SE(1)", "SE(0) * SE(1)", "SE(0) + SE(2)")]
    getattr(fits, method)(candidates)
    assert len(recorder.seeds) == 3 and set(recorder.seeds.values()) == {7}
