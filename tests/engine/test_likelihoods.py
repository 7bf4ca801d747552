"""The Student-t likelihood of robust regression: density, derivatives, Laplace gradient, Gaussian limit, LOO."""

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import trapezoid

from skgpsearch._engine._exact import GPPosterior
from skgpsearch._engine import _laplace
from skgpsearch._engine._laplace import LaplaceObjective, LaplacePosterior
from skgpsearch._engine._likelihoods import StudentT
from skgpsearch.grammar import parse
from skgpsearch.kernels import to_kernel

from conftest import laplace_refit_loo_log_densities, regression_data_with_outliers

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


@pytest.mark.parametrize("likelihood", STUDENT_T, ids=["learned dof", "fixed dof"])
def test_student_t_laplace_gradient_matches_finite_differences(likelihood, monkeypatch):
    import skgpsearch._engine._laplace as engine

    # finite differences of the value need the Newton mode converged far beyond the default tolerance
    monkeypatch.setattr(engine, "NEWTON_TOL", 1e-13)
    X, y = regression_data_with_outliers()
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


def test_student_t_loo_predictive_of_the_cavity_is_close_to_refits():
    # robust regression: the cavity approximation against refits without each point, quadrature of the t density
    X, y = regression_data_with_outliers(n=40, seed=2)
    kernel = to_kernel(parse("SE(0) + LIN(1)"), X)
    likelihood, theta = StudentT(4.0), np.array([np.log(0.2)])
    approximate = LaplacePosterior(kernel, 0.0, likelihood, theta, X, y).loo_log_density(y)
    refits = laplace_refit_loo_log_densities(kernel, 0.0, likelihood, theta, X, y)
    np.testing.assert_allclose(approximate, refits, atol=0.08)
    # the quadrature is a density: it integrates the t noise over a Gaussian latent to a proper predictive
    grid = np.linspace(-30, 30, 20001)
    density = np.exp(likelihood.log_predictive_density(grid, np.zeros_like(grid), np.full_like(grid, 0.5), theta))
    assert trapezoid(density, grid) == pytest.approx(1.0, abs=2e-3)


def _near_interpolating_student_t_posterior():
    # near interpolation with heavy-tailed noise (the optimum of PER(0) + LIN(0) that a search reached on
    # benchmarks/robust_regression.py's data): many sites have W_i < 0 and some cavities are improper
    rng = np.random.default_rng(5)
    n = 50
    X = rng.uniform(0, 5, size=(n, 2))
    y = np.sin(2 * np.pi * X[:, 0]) + 0.4 * X[:, 0] + 0.1 * rng.normal(size=n)
    y[rng.choice(n, 1, replace=False)] += 30.0
    centre = np.median(y)
    y = (y - centre) / (1.4826 * np.median(np.abs(y - centre)))
    kernel = to_kernel(parse("PER(0) + LIN(0)"), X)
    kernel.theta = np.array([-0.26, -0.066, -0.0009, -1.93, 2.75])
    likelihood, theta = StudentT(None), np.array([-3.10, 0.338])
    return LaplacePosterior(kernel, 0.018, likelihood, theta, X, y), X, y


def test_student_t_loo_with_improper_cavities_comes_from_refits_without_each_point():
    # where a cavity is improper the cavity formula clips its variance: densities hundreds of nats too low in all
    posterior, X, y = _near_interpolating_student_t_posterior()
    kernel, likelihood, theta = posterior.kernel, posterior.likelihood, posterior.lik_theta
    mean, var, proper = posterior._cavities(kernel(X))
    assert not proper.all()
    loo = posterior.loo_log_density(y)
    refits = laplace_refit_loo_log_densities(kernel, posterior.mean, likelihood, theta, X, y)
    # the posteriors on n - 1 rows are multimodal: a refit from its own start may reach another mode on a row
    assert np.all(np.isfinite(loo))
    assert np.median(np.abs(loo - refits)) < 0.01
    assert loo.sum() == pytest.approx(np.sum(refits), abs=1.0)
    assert likelihood.log_predictive_density(y, mean, var, theta).sum() < loo.sum() - 100


def test_student_t_loo_with_improper_cavities_on_more_rows_than_refits_uses_clipped_sites(monkeypatch):
    # above LOO_REFIT_MAX_ROWS the negative site precisions are set to 0: proper cavities in O(n^3), a few nats
    # optimistic against the refits (measured 3-6 nats), never the clipped variances' hundreds of nats too low
    posterior, X, y = _near_interpolating_student_t_posterior()
    monkeypatch.setattr(_laplace, "LOO_REFIT_MAX_ROWS", 10)
    loo = posterior.loo_log_density(y)
    refits = laplace_refit_loo_log_densities(posterior.kernel, posterior.mean, posterior.likelihood,
                                             posterior.lik_theta, X, y)
    mean, var, _ = posterior._cavities(posterior.kernel(X))
    cavities = posterior.likelihood.log_predictive_density(y, mean, var, posterior.lik_theta)
    assert np.all(np.isfinite(loo))
    assert abs(loo.sum() - refits.sum()) < 10.0
    assert cavities.sum() < refits.sum() - 100


def test_student_t_predictive_variance_of_a_few_points_matches_the_dense_formula():
    # sites with W_i < 0: the latent variance k** - k*' W (I + K W)^-1 k* of a few test points, taken without
    # forming R, against the dense formula and against the path that forms R (many test points)
    posterior, X, _ = _near_interpolating_student_t_posterior()
    assert not posterior.mode.positive
    X_test = np.random.default_rng(1).uniform(0, 5, size=(3, 2))
    K, K_cross = posterior.kernel(X), posterior.kernel(X, X_test)
    W = np.diag(posterior.mode.W)
    R = np.linalg.solve((np.eye(len(X)) + K @ W).T, W.T).T
    dense = np.einsum("ij,ij->j", K_cross, R @ K_cross)
    few = posterior.variance_reduction(K_cross)
    many = posterior.variance_reduction(posterior.kernel(X, np.vstack([X_test, X])))[:3]
    np.testing.assert_allclose(few, dense, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(few, many, rtol=1e-8, atol=1e-10)
