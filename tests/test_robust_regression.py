"""Robust regression: the Student-t likelihood, its Laplace evidence, and the regressor's outlier handling."""

import warnings

import numpy as np
import pytest
from scipy import stats

from skgpsearch import CompositionalGPRegressor, OutlierWarning
from skgpsearch._engine._classification import LaplaceObjective
from skgpsearch._engine._likelihoods import StudentT
from skgpsearch._engine._regression import GPPosterior
from skgpsearch.grammar import parse
from skgpsearch.kernels import to_kernel

STUDENT_T = [StudentT(None), StudentT(3.0)]


@pytest.mark.parametrize("likelihood", STUDENT_T, ids=["learned dof", "fixed dof"])
def test_student_t_density_and_derivatives(likelihood):
    rng = np.random.default_rng(0)
    f, y = rng.normal(scale=3.0, size=300), rng.normal(scale=3.0, size=300)
    theta = likelihood.default_theta() + 0.3
    sigma, nu = likelihood.scale_and_dof(theta)
    out = likelihood.derivatives(y, f, theta)
    np.testing.assert_allclose(out[0], stats.t.logpdf(y, nu, loc=f, scale=sigma), rtol=1e-12, atol=1e-12)
    h = 1e-5
    plus, minus = likelihood.derivatives(y, f + h, theta), likelihood.derivatives(y, f - h, theta)
    for order in range(3):
        np.testing.assert_allclose(out[order + 1], (plus[order] - minus[order]) / (2 * h), rtol=1e-5, atol=1e-7)
    d_params = likelihood.param_derivatives(y, f, theta)
    assert len(d_params[0]) == likelihood.n_params == (2 if likelihood.degrees_of_freedom is None else 1)
    for j in range(likelihood.n_params):
        e = np.zeros_like(theta)
        e[j] = h
        up, down = likelihood.derivatives(y, f, theta + e), likelihood.derivatives(y, f, theta - e)
        for order in range(3):
            np.testing.assert_allclose(d_params[order][j], (up[order] - down[order]) / (2 * h), rtol=1e-5, atol=1e-8)


def _regression_data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, size=(n, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    y[[3, 17]] += [4.0, -6.0]
    return X, y


@pytest.mark.parametrize("likelihood", STUDENT_T, ids=["learned dof", "fixed dof"])
def test_student_t_laplace_gradient_matches_finite_differences(likelihood, monkeypatch):
    import skgpsearch._engine._classification as engine

    # finite differences of the value need the Newton mode converged far beyond the default tolerance
    monkeypatch.setattr(engine, "NEWTON_TOL", 1e-13)
    X, y = _regression_data()
    kernel = to_kernel(parse("SE(0) * SE(1) + LIN(1)"), X)
    objective = LaplaceObjective(kernel, X, y, likelihood)
    rng = np.random.default_rng(1)
    theta = np.concatenate([kernel.theta, [0.2], likelihood.default_theta()]) + 0.1 * rng.normal(size=objective.n_dims)
    value, grad = objective(theta, eval_gradient=True)

    def fresh(t):  # a new objective per value: no warm start, so the Newton path moves smoothly with t
        return LaplaceObjective(kernel, X, y, likelihood)(t)

    h = 1e-3  # the Newton mode converges to ~1e-7 in f: finer steps resolve that, not the gradient
    fd = np.empty_like(theta)
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        fd[j] = (fresh(theta + e) - fresh(theta - e)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=3e-6)


def test_student_t_evidence_tends_to_the_gaussian_one():
    # as ν → ∞ the Student-t noise is Gaussian with variance σ², for which the Laplace approximation is exact
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 3, size=(30, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.3 * rng.normal(size=30)
    kernel = to_kernel(parse("SE(0) + LIN(1)"), X)
    sigma, mean = 0.4, 0.3
    likelihood = StudentT(1e9)
    laplace = LaplaceObjective(kernel, X, y, likelihood)(np.concatenate([kernel.theta, [mean], [np.log(sigma)]]))
    exact = GPPosterior(kernel, sigma**2, X, y - mean).log_marginal_likelihood
    assert laplace == pytest.approx(exact, abs=1e-6)


def _planted_outliers(seed):
    rng = np.random.default_rng(seed)
    n = 50
    X = rng.uniform(0, 5, size=(n, 2))
    f = np.sin(2 * np.pi * X[:, 0]) + 0.4 * X[:, 0]
    y = f + 0.1 * rng.normal(size=n)
    y[rng.choice(n, 3, replace=False)] += [30.0, -25.0, 1e4]
    return X, y, f


def test_student_t_recovers_the_structure_that_outliers_hide():
    # PER(0) + LIN(0) with column 1 irrelevant, and three gross outliers: the Gaussian model is
    # dragged by them (and warns), the Student-t model finds the structure with a clear margin
    X, y, f = _planted_outliers(seed=1)
    params = dict(base_kernels=("PER", "LIN"), max_depth=2, random_state=0)
    with pytest.warns(OutlierWarning, match="likelihood='student_t'"):
        gaussian = CompositionalGPRegressor(**params).fit(X, y)
    assert np.sqrt(np.mean((gaussian.predict(X) - f) ** 2)) > 100
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierWarning)
        robust = CompositionalGPRegressor(likelihood="student_t", **params).fit(X, y)
    assert robust.structure_ == parse("PER(0) + LIN(0)")
    scores = sorted((c for c in robust.search_results_["criterion"] if np.isfinite(c)), reverse=True)
    assert scores[0] - scores[1] > 3.0
    (period,) = [leaf.params["period"] for leaf in robust.structure_.leaves if leaf.name == "PER"]
    assert period == pytest.approx(1.0, abs=0.02)
    assert np.sqrt(np.mean((robust.predict(X) - f) ** 2)) < 0.1
    assert robust.degrees_of_freedom_ == 4.0
    assert 0.05 < robust.noise_scale_ < 0.2
    # components plus the offset are the prediction; the description names the noise model
    parts = robust.decompose()
    np.testing.assert_allclose(parts.mean, robust.predict(X), atol=1e-8)
    text = robust.describe()
    assert "Student-t" in text and "3 training point(s) lie beyond" in text


def test_student_t_model_state_is_consistent():
    X, y = _regression_data(n=25)
    params = dict(base_kernels=("SE",), max_depth=1, likelihood="student_t", random_state=0)
    learned = CompositionalGPRegressor(degrees_of_freedom=None, **params).fit(X, y)
    assert 1.0 <= learned.degrees_of_freedom_ <= 200.0
    model = CompositionalGPRegressor(**params).fit(X, y)
    # the evidence at the fitted parameters is the recorded one, and its gradient is that of the objective
    theta = np.concatenate([model.kernel_.theta, [(model.latent_mean_ - model._y_train_mean) / model._y_train_std],
                            model._posterior.lik_theta])
    assert model.log_marginal_likelihood(theta) == pytest.approx(model.log_marginal_likelihood_value_, abs=1e-6)
    assert model.log_marginal_likelihood_on(X, y) == pytest.approx(model.log_marginal_likelihood_value_, abs=1e-6)
    mean, std = model.predict(X[:5], return_std=True)
    _, cov = model.predict(X[:5], return_cov=True)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std, rtol=1e-6, atol=1e-9)
    assert model.L_ is None and model.alpha_.shape == (25,)


def test_student_t_refuses_what_needs_the_gaussian_evidence():
    X, y = _regression_data(n=20)
    with pytest.raises(ValueError, match="student_t.*'bic'"):
        CompositionalGPRegressor(likelihood="student_t", criterion="loo").fit(X, y)
    with pytest.raises(ValueError, match="objective='lml'"):
        CompositionalGPRegressor(likelihood="student_t", objective="map").fit(X, y)


def test_no_outlier_warning_on_gaussian_data():
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 5, size=(120, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=120)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierWarning)
        CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, random_state=0).fit(X, y)


def test_robust_normalisation_survives_mostly_equal_targets():
    # a median absolute deviation of 0 (most targets equal) falls back to the standard deviation
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(30, 1))
    y = np.zeros(30)
    y[:8] = rng.normal(size=8)
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, likelihood="student_t", random_state=0).fit(X, y)
    assert model._y_train_std == pytest.approx(np.std(y))
    assert np.all(np.isfinite(model.predict(X)))
