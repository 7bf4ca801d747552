"""The fitters' screening scores: the cheap score and the cheaper prescreen that cuts very large levels."""

import math

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import WhiteKernel

from skgpsearch._engine._likelihoods import get_likelihood
from skgpsearch._search._exact_fitter import SCREEN_CANDIDATE_ROWS, RegressionCandidateFitter
from skgpsearch._search._laplace_fitter import LaplaceCandidateFitter
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
        rows = np.sort(np.random.default_rng(seed).choice(300, SCREEN_CANDIDATE_ROWS, replace=False))
        penalty = 0.5 * (child.n_hyperparameters + 1) * math.log(rows.size)
        for start in warm:
            kernel = to_kernel(start.expr, summary=SUMMARY) + WhiteKernel(parent.warm_state * start.noise_factor)
            gp = GaussianProcessRegressor(kernel, optimizer=None, normalize_y=False).fit(X[rows], Y_REGRESSION[rows])
            assert pre.score >= gp.log_marginal_likelihood_value_ - penalty - 1e-6


def test_classification_prescreen_is_below_the_cheap_score():
    likelihood = get_likelihood("probit")
    fitter = LaplaceCandidateFitter(summary=DataSummary.from_data(X), criterion=get_criterion("bic"),
                                    likelihood=likelihood)
    parent, hints, children = _children_of_fitted(fitter, Y_LABELS)
    assert fitter.prescreen(parse("SE(2)"), X, Y_LABELS, 0) is None
    for seed, child in enumerate(children[:4]):
        pre = fitter.prescreen(child, X, Y_LABELS, seed, parent.warm_state, hints)
        cheap = fitter.screen(child, X, Y_LABELS, seed, parent.warm_state, hints)
        assert np.isfinite(pre.score) and pre.score <= cheap.score + 1e-8
        assert 0 < pre.n_evaluations < cheap.n_evaluations
