"""Laplace GP classification engine and likelihoods against independent ground truth."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit, logit
from scipy.stats import norm
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgpsearch._engine._laplace import (MEAN_BOUNDS, LaplaceObjective, LaplacePosterior, binary_mean_bounds,
                                         calibrate_predictive, data_support, find_mode,
                                         predictive_calibration)
from skgpsearch._engine._linalg import cholesky_lower
from skgpsearch._engine._likelihoods import Logistic, Probit, RobustProbit, get_likelihood
from skgpsearch.grammar import parse
from skgpsearch.kernels import to_kernel

from conftest import laplace_refit_loo_log_densities

LIKELIHOODS = [Logistic(), Probit(), RobustProbit()]


def _data(n=40, d=2, seed=0, flip=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    f = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.3
    y = np.where(f + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    flips = rng.random(n) < flip
    y[flips] *= -1
    return X, y


def _theta(objective, kernel, mean, likelihood, eps=0.1):
    lik = np.array([logit(eps)]) if likelihood.n_params else np.zeros(0)
    return np.concatenate([kernel.theta, [mean], lik])


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda l: l.name)
def test_likelihood_derivatives_match_finite_differences(likelihood):
    rng = np.random.default_rng(1)
    f = rng.normal(scale=3.0, size=200)
    y = np.where(rng.random(200) < 0.5, -1.0, 1.0)
    theta = likelihood.default_theta() + 0.3
    h = 1e-5
    out = likelihood.derivatives(y, f, theta)
    plus, minus = likelihood.derivatives(y, f + h, theta), likelihood.derivatives(y, f - h, theta)
    for order in range(3):
        fd = (plus[order] - minus[order]) / (2 * h)
        np.testing.assert_allclose(out[order + 1], fd, rtol=1e-5, atol=1e-7)
    if likelihood.n_params:
        d_params = likelihood.param_derivatives(y, f, theta)
        for j in range(likelihood.n_params):
            e = np.zeros_like(theta)
            e[j] = h
            up, down = likelihood.derivatives(y, f, theta + e), likelihood.derivatives(y, f, theta - e)
            for order in range(3):
                fd = (up[order] - down[order]) / (2 * h)
                np.testing.assert_allclose(d_params[order][j], fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda l: l.name)
def test_likelihood_is_a_probability(likelihood):
    f = np.linspace(-8, 8, 41)
    theta = likelihood.default_theta()
    pos = np.exp(likelihood.derivatives(np.ones_like(f), f, theta)[0])
    neg = np.exp(likelihood.derivatives(-np.ones_like(f), f, theta)[0])
    np.testing.assert_allclose(pos + neg, 1.0, atol=1e-12)


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda l: l.name)
def test_predictive_probability_matches_quadrature(likelihood):
    theta = likelihood.default_theta()
    for mean, var in [(0.3, 0.5), (-2.0, 4.0), (3.0, 0.01), (0.0, 25.0)]:
        def integrand(f):
            p = np.exp(likelihood.derivatives(np.ones(1), np.array([f]), theta)[0][0])
            return p * np.exp(-0.5 * (f - mean) ** 2 / var) / np.sqrt(2 * np.pi * var)

        sd = np.sqrt(var)
        expected = integrate.quad(integrand, mean - 12 * sd, mean + 12 * sd, limit=200)[0]
        got = likelihood.predict_proba(np.array([mean]), np.array([var]), theta)[0]
        assert abs(got - expected) < 1e-7


def test_robust_probabilities_are_in_the_mixture_range():
    lik = RobustProbit()
    theta = np.array([logit(0.2)])
    p = lik.predict_proba(np.array([-50.0, 50.0]), np.array([0.0, 0.0]), theta)
    np.testing.assert_allclose(p, [0.1, 0.9], atol=1e-12)


def test_zero_mean_logistic_evidence_matches_sklearn():
    X, y = _data(n=50)
    kernel = ConstantKernel(2.0) * RBF(0.7)
    objective = LaplaceObjective(kernel, X, y, Logistic())
    theta = np.concatenate([kernel.theta, [0.0]])
    gpc = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, (y > 0).astype(int))
    expected, expected_grad = gpc.log_marginal_likelihood(kernel.theta, eval_gradient=True)
    value, grad = objective(theta, eval_gradient=True)
    assert value == pytest.approx(expected, rel=1e-8)
    np.testing.assert_allclose(grad[: kernel.n_dims], expected_grad, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda l: l.name)
@pytest.mark.parametrize("text", ["SE(0)", "SE(0) * SE(1) + LIN(1)", "M32(0) + SE(1)"])
def test_gradient_matches_finite_differences(likelihood, text):
    X, y = _data(n=35, flip=0.15, seed=3)
    kernel = to_kernel(parse(text), X)
    objective = LaplaceObjective(kernel, X, y, likelihood)
    rng = np.random.default_rng(2)
    theta = _theta(objective, kernel, 0.3, likelihood) + 0.2 * rng.normal(size=objective.n_dims)
    value, grad = objective(theta, eval_gradient=True)
    h = 1e-5
    fd = np.empty_like(theta)
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        fd[j] = (objective(theta + e) - objective(theta - e)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_robust_gradient_with_negative_curvature_matches_finite_differences(monkeypatch):
    # confident wrong labels make W negative at the mode: the whitened path. Finite differences
    # of the value need the mode converged far beyond the default tolerance.
    import skgpsearch._engine._laplace as engine

    monkeypatch.setattr(engine, "NEWTON_TOL", 1e-13)
    X = np.linspace(-3, 3, 40)[:, None]
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    y[[1, 38]] *= -1
    # (a little latent white noise: K needs no jitter, whose size would move with the amplitude)
    kernel = ConstantKernel(10.0) * RBF(5.0) + WhiteKernel(1e-3)
    lik = RobustProbit()
    objective = LaplaceObjective(kernel, X, y, lik)
    theta = np.concatenate([kernel.theta, [0.0], [logit(0.05)]])
    K = kernel(X)
    mode = find_mode(K, y, 0.0, lik, theta[-1:])
    assert not mode.positive
    value, grad = objective(theta, eval_gradient=True)
    h = 1e-3
    fd = np.array([(objective(theta + h * e) - objective(theta - h * e)) / (2 * h) for e in np.eye(theta.size)])
    # On this non-concave path Newton stops where rounding stops its ascent; how close that is
    # to the mode depends on the BLAS build (seen: 1e-9 to 2.5e-8 of value noise, up to 1.2e-4 in
    # differences with a step of 1e-4; the step of 1e-3 divides that by 10). A wrong term of the
    # gradient is off by O(1).
    np.testing.assert_allclose(grad, fd, rtol=1e-3, atol=1e-4)


def test_mode_is_a_stationary_point_and_evidence_matches_brute_force_for_tiny_n():
    # n = 2: the Laplace evidence is a closed form of the 2-D Gaussian integral around the mode
    X = np.array([[0.0], [0.8]])
    y = np.array([1.0, -1.0])
    kernel = ConstantKernel(1.5) * RBF(1.0)
    K = kernel(X)
    lik = Probit()
    mode = find_mode(K, y, 0.2, lik, np.zeros(0))
    grad_psi = mode.d1 - np.linalg.solve(K, mode.f - 0.2)
    assert np.max(np.abs(grad_psi)) < 1e-8
    H = np.linalg.inv(K) + np.diag(mode.W)
    psi = np.sum(mode.log_p) - 0.5 * (mode.f - 0.2) @ np.linalg.solve(K, mode.f - 0.2)
    laplace = psi - 0.5 * np.linalg.slogdet(K)[1] - 0.5 * np.linalg.slogdet(H)[1]
    assert mode.log_marginal_likelihood == pytest.approx(laplace, rel=1e-10)


def test_probit_evidence_is_close_to_the_exact_integral_for_n_1():
    # exact evidence for one point: Φ(y m / sqrt(1 + k)); Laplace is an approximation of it
    kernel = ConstantKernel(0.5) * RBF(1.0)
    X, y = np.zeros((1, 1)), np.array([1.0])
    from scipy.special import ndtr

    exact = np.log(ndtr(0.4 / np.sqrt(1.5)))
    value = LaplaceObjective(kernel, X, y, Probit())(np.concatenate([kernel.theta, [0.4]]))
    assert value == pytest.approx(exact, abs=0.02)


def test_posterior_predictions_match_sklearn_latent_mean_and_variance(monkeypatch):
    # scikit-learn's mode is converged to rounding; the default stop leaves ours about 1e-8 away (3e-9 nats)
    import skgpsearch._engine._laplace as engine

    monkeypatch.setattr(engine, "NEWTON_PREDICTED_TOL", 1e-20)
    X, y = _data(n=60, seed=7)
    kernel = ConstantKernel(2.0) * RBF(0.8)
    gpc = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, (y > 0).astype(int))
    posterior = LaplacePosterior(kernel, 0.0, Logistic(), np.zeros(0), X, y)
    X_test = np.random.default_rng(0).normal(size=(30, 2))
    mean, var = posterior.predict_latent(X_test, return_var=True)
    sk = gpc.base_estimator_
    K_star = sk.kernel_(sk.X_train_, X_test)
    expected_mean = K_star.T.dot(sk.y_train_ - sk.pi_)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-7, atol=1e-9)
    v = np.linalg.solve(sk.L_, sk.W_sr_[:, None] * K_star)
    np.testing.assert_allclose(var, sk.kernel_.diag(X_test) - np.einsum("ij,ij->j", v, v), rtol=1e-7, atol=1e-9)
    # predictive probabilities: ours integrate the logistic exactly (quadrature); sklearn approximates
    np.testing.assert_allclose(posterior.predict_proba(X_test), gpc.predict_proba(X_test)[:, 1], atol=5e-3)


def test_unknown_likelihood_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown likelihood"):
        get_likelihood("cauchy")
    assert get_likelihood("PROBIT").name == "probit"
    assert expit(RobustProbit().default_theta()[0]) == pytest.approx(0.05)


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda l: l.name)
def test_log_odds_match_the_probabilities(likelihood):
    theta = likelihood.default_theta()
    mean = np.array([-3.0, -0.2, 0.0, 0.4, 2.5])
    var = np.array([0.1, 2.0, 1.0, 0.0, 5.0])
    p = likelihood.predict_proba(mean, var, theta)
    np.testing.assert_allclose(likelihood.predict_log_odds(mean, var, theta), np.log(p / (1 - p)), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("likelihood, lik_theta", [(Probit(), []), (Logistic(), []), (RobustProbit(), [-3.0])],
                         ids=["probit", "logistic", "robust"])
def test_loo_predictive_of_the_cavity_is_close_to_refits_without_each_point(likelihood, lik_theta):
    # the cavity approximation (Vehtari et al. 2016) against n Laplace posteriors on n - 1 labels at the same
    # hyperparameters: each held-out label's log predictive probability agrees to a few thousandths of a nat
    rng = np.random.default_rng(0)
    n = 50
    X = rng.uniform(-2, 2, size=(n, 2))
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] + 0.4 * rng.normal(size=n) > 0, 1.0, -1.0)
    kernel = to_kernel(parse("SE(0) + SE(1)"), X)
    theta = np.asarray(lik_theta, dtype=float)
    approximate = LaplacePosterior(kernel, 0.1, likelihood, theta, X, y).loo_log_density(y)
    refits = laplace_refit_loo_log_densities(kernel, 0.1, likelihood, theta, X, y)
    np.testing.assert_allclose(approximate, refits, rtol=0.01, atol=0.01)
    assert abs(approximate.sum() - np.sum(refits)) < 0.05


@pytest.mark.parametrize("likelihood", [Logistic(), Probit()], ids=lambda l: l.name)
def test_newton_from_the_previous_latent_values_reaches_the_same_mode_in_fewer_factorisations(likelihood, monkeypatch):
    # an optimiser's next point: the amplitude x4 and the lengthscale x1.3. The previous weights a give
    # f = K a four times too large; the previous latent values are next to the new mode.
    import skgpsearch._engine._laplace as engine

    X, y = _data(n=80, flip=0.1, seed=4)
    previous = ConstantKernel(2.0) * RBF(1.0)
    moved = ConstantKernel(8.0) * RBF(1.3)
    mode0 = find_mode(previous(X), y, 0.1, likelihood, np.zeros(0))
    factorisations = []

    def counting(A, *args, **kwargs):
        factorisations.append(A.shape)
        return cholesky_lower(A, *args, **kwargs)

    monkeypatch.setattr(engine, "cholesky_lower", counting)
    K = moved(X)
    counts, modes = [], []
    for f0 in (None, mode0.f):
        factorisations.clear()
        modes.append(find_mode(K, y, 0.1, likelihood, np.zeros(0), mode0.a, f0))
        counts.append(len(factorisations))
    monkeypatch.setattr(engine, "NEWTON_TOL", 1e-14)
    exact = find_mode(K, y, 0.1, likelihood, np.zeros(0))  # from f = m, converged far beyond the default
    for mode in modes:
        np.testing.assert_allclose(mode.f, exact.f, rtol=0, atol=1e-5)
        assert mode.log_marginal_likelihood == pytest.approx(exact.log_marginal_likelihood, abs=1e-7)
    assert counts[1] < counts[0], counts


@pytest.mark.parametrize("likelihood", [Logistic(), Probit()], ids=lambda l: l.name)
def test_newton_keeps_the_factor_of_its_last_iterate_when_the_next_step_would_gain_nothing(likelihood, monkeypatch):
    # every factorisation is a Newton step's: none is repeated at the mode, and the evidence and the weights
    # are those of the mode converged to rounding
    import skgpsearch._engine._laplace as engine

    X, y = _data(n=120, flip=0.1, seed=2)
    K = (ConstantKernel(4.0) * RBF(0.9))(X)
    steps, factorisations = [], []
    newton_weights = engine._newton_weights

    def counting_steps(*args, **kwargs):
        steps.append(1)
        return newton_weights(*args, **kwargs)

    def counting(A, *args, **kwargs):
        factorisations.append(A.shape)
        return cholesky_lower(A, *args, **kwargs)

    monkeypatch.setattr(engine, "_newton_weights", counting_steps)
    monkeypatch.setattr(engine, "cholesky_lower", counting)
    mode = find_mode(K, y, 0.1, likelihood, np.zeros(0))
    assert len(factorisations) == len(steps) >= 3
    monkeypatch.setattr(engine, "NEWTON_PREDICTED_TOL", 1e-30)
    monkeypatch.setattr(engine, "NEWTON_TOL", 1e-16)
    exact = find_mode(K, y, 0.1, likelihood, np.zeros(0))
    assert mode.log_marginal_likelihood == pytest.approx(exact.log_marginal_likelihood, abs=1e-7)
    np.testing.assert_allclose(mode.d1, exact.d1, rtol=0, atol=1e-6)
    # the kept factor is B's at the returned latent values
    B = np.eye(120) + np.sqrt(mode.W)[:, None] * K * np.sqrt(mode.W)[None, :]
    np.testing.assert_allclose(np.tril(mode.L) @ np.tril(mode.L).T, B, atol=1e-10)


@pytest.mark.parametrize("likelihood", [Logistic(), Probit()], ids=lambda l: l.name)
def test_a_posterior_started_at_a_subsets_predictions_is_the_posterior_from_scratch(likelihood, monkeypatch):
    # the explore stage optimises on a subset and then builds the posterior on every row, starting Newton at
    # the subset mode's predictions: the same mode as from f = m, in fewer factorisations
    import skgpsearch._engine._laplace as engine

    X, y = _data(n=400, flip=0.1, seed=1)
    kernel = ConstantKernel(3.0) * RBF(0.8)
    subset = np.arange(0, 400, 2)
    sub_mode = find_mode(kernel(X[subset]), y[subset], 0.1, likelihood, np.zeros(0))
    predictions = 0.1 + kernel(X, X[subset]) @ sub_mode.a
    factorisations = []

    def counting(A, *args, **kwargs):
        factorisations.append(A.shape)
        return cholesky_lower(A, *args, **kwargs)

    monkeypatch.setattr(engine, "cholesky_lower", counting)
    counts, posteriors = [], []
    for f0 in (None, predictions):
        factorisations.clear()
        posteriors.append(LaplacePosterior(kernel, 0.1, likelihood, np.zeros(0), X, y, f0=f0))
        counts.append(len(factorisations))
    np.testing.assert_allclose(posteriors[1].mode.f, posteriors[0].mode.f, rtol=0, atol=1e-5)
    assert posteriors[1].log_marginal_likelihood == pytest.approx(posteriors[0].log_marginal_likelihood, abs=1e-7)
    assert counts[1] < counts[0], counts
    # the explore stage's looser stop, for an evidence that only ranks: fewer factorisations, within 0.01 nats
    factorisations.clear()
    ranking = LaplacePosterior(kernel, 0.1, likelihood, np.zeros(0), X, y, f0=predictions,
                               newton_tolerance=engine.EXPLORE_NEWTON_TOL)
    assert len(factorisations) < counts[1]
    assert ranking.log_marginal_likelihood == pytest.approx(posteriors[0].log_marginal_likelihood, abs=0.01)


def _separable_posterior(likelihood, n=120, seed=0, mean=0.0):
    # two Gaussian classes 6 standard deviations apart: a large amplitude, labels the posterior barely contracts
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(n, 2)) + 3.0 * y[:, None] * np.array([1.0, 0.0])
    kernel = to_kernel(parse("SE(0) * SE(1)"), X)
    kernel.theta = np.log([50.0, 4.0, 100.0])  # amplitude, lengthscales across and along the classes
    return LaplacePosterior(kernel, mean, likelihood, likelihood.default_theta(), X, y), X, y


def _support_by_hand(posterior, X=None):
    """The largest absolute prior correlation of each point of X (each training row, itself left out) with a
    training row."""
    if X is None:
        K = posterior.kernel(posterior.X)
        correlation = np.abs(K) / np.sqrt(np.outer(np.diag(K), np.diag(K)))
        np.fill_diagonal(correlation, 0.0)
        return correlation.max(axis=1)
    K = posterior.kernel(posterior.X, X)
    prior = posterior.kernel.diag(X)
    return np.array([max(abs(K[i, j]) / np.sqrt(posterior.kernel.diag(posterior.X[i:i + 1])[0] * prior[j])
                         for i in range(K.shape[0])) for j in range(K.shape[1])])


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda l: l.name)
def test_the_calibrated_variance_scale_maximises_the_leave_one_out_density(likelihood):
    posterior, X, y = _separable_posterior(likelihood)
    densities = posterior.calibrate_variance(y)
    mean, variance = posterior.loo_moments(y)
    far = (1 - _support_by_hand(posterior)) ** 4
    base = np.where(y > 0, np.sum(y > 0), np.sum(y < 0)) / (len(y) + 1)  # of each label among the other rows
    floor = 1.0 / (len(y) + 1)

    def total(scale):  # independent of the method: the floored predictive density, by hand
        p = np.exp(likelihood.log_predictive_density(y, mean, scale * variance, posterior.lik_theta))
        return np.sum(np.log((1 - far) * (floor + (1 - 2 * floor) * p) + far * base))

    grid = np.exp(np.linspace(np.log(1e-6), 0.0, 200))
    assert posterior.variance_scale < 0.1  # separable labels: far more confident than the raw Laplace predictive
    assert densities.sum() == pytest.approx(total(posterior.variance_scale), rel=1e-9)
    assert densities.sum() >= max(total(s) for s in grid) - 1e-3
    assert densities.sum() > total(1.0) + 1.0


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda l: l.name)
def test_calibrated_probabilities_keep_the_floor_and_match_their_log_odds(likelihood):
    posterior, X, y = _separable_posterior(likelihood)
    posterior.calibrate_variance(y)
    X_test = np.vstack([X[:10], [[3.0, 0.0], [-3.0, 0.0], [0.0, 0.0]]])  # the class centres, the boundary
    p = posterior.predict_proba(X_test)
    eps = 1.0 / (len(y) + 2)
    assert posterior.probability_floor == eps
    assert np.all(p >= eps) and np.all(p <= 1 - eps)
    # at the class centres more confident than the raw Laplace predictive
    calibrated = p[-3:-1]
    np.testing.assert_allclose(posterior.predict_log_odds(X_test), np.log(p / (1 - p)), rtol=1e-8, atol=1e-10)
    posterior.variance_scale, posterior.probability_floor = 1.0, 0.0
    raw = posterior.predict_proba(X_test[-3:-1])
    assert calibrated[0] > raw[0] and calibrated[1] < raw[1]


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda l: l.name)
def test_far_from_every_training_row_the_predictive_turns_to_the_base_rate(likelihood):
    # a latent mean far from the class fraction: what the calibrated plug-in carried to every distant point
    posterior, X, y = _separable_posterior(likelihood, mean=2.0)
    posterior.calibrate_variance(y)
    scale, floor = posterior.variance_scale, posterior.probability_floor
    base = (np.sum(y > 0) + 1) / (len(y) + 2)
    assert scale < 0.01 and posterior.base_rate == pytest.approx(base)
    X_test = np.array([[3.0, 0.0], [-3.0, 0.0], [0.0, 0.0], [12.0, 0.0], [1e4, 1e4]])  # centres, boundary, far
    far = (1 - _support_by_hand(posterior, X_test)) ** 4
    assert far[0] < 1e-4 and far[1] < 1e-4 and far[-1] == pytest.approx(1.0)
    p = posterior.predict_proba(X_test)
    posterior.base_rate, posterior.probability_floor = None, 0.0
    laplace = posterior.predict_proba(X_test)  # calibrated, without the turn and the floor
    # floored, then turned: far away the base rate itself (floored after the turn, it was ε + (1 - 2ε) π)
    np.testing.assert_allclose(p, (1 - far) * (floor + (1 - 2 * floor) * laplace) + far * base, rtol=1e-12)
    assert p[-1] == pytest.approx(base, rel=1e-12)
    assert abs(p[-1] - (1 + y.mean()) / 2) < 0.02 < abs(laplace[-1] - 0.5)  # y in {-1, 1}: fraction (1 + ȳ) / 2
    posterior.base_rate, posterior.probability_floor = base, floor
    np.testing.assert_allclose(posterior.predict_log_odds(X_test), np.log(p / (1 - p)), rtol=1e-8, atol=1e-10)


def test_data_support_is_the_largest_absolute_correlation_with_a_training_row():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    kernel = to_kernel(parse("SE(0) * SE(1) + LIN(0)"), X)
    posterior = LaplacePosterior(kernel, 0.0, Probit(), np.zeros(0), X, y)
    X_test = np.vstack([rng.normal(size=(5, 2)), [[-50.0, 3.0], [0.0, 40.0]]])
    K_cross = kernel(X, X_test)
    np.testing.assert_allclose(data_support(K_cross, kernel.diag(X), kernel.diag(X_test)),
                               _support_by_hand(posterior, X_test), rtol=1e-12)
    np.testing.assert_allclose(posterior.loo_support(), _support_by_hand(posterior), rtol=1e-12)
    # along the line the linear term still correlates with the data; off it, nothing does
    assert _support_by_hand(posterior, X_test)[-2] > 0.9 and _support_by_hand(posterior, X_test)[-1] < 0.1


def test_calibration_keeps_the_variance_where_it_gains_little():
    # overlapping classes: the leave-one-out density is nearly flat in the scale
    X, y = _data(n=60, flip=0.2)
    kernel = to_kernel(parse("SE(0) + SE(1)"), X)
    posterior = LaplacePosterior(kernel, 0.0, Probit(), np.zeros(0), X, y)
    raw = posterior.loo_log_density(y)
    calibrated = posterior.calibrate_variance(y)
    assert posterior.variance_scale == 1.0 and posterior.probability_floor == 0.0
    # the Laplace predictive's own densities, turned towards each label's base rate among the other rows
    far = (1 - _support_by_hand(posterior)) ** 4
    base = np.where(y > 0, np.sum(y > 0), np.sum(y < 0)) / (len(y) + 1)
    np.testing.assert_allclose(calibrated, np.log((1 - far) * np.exp(raw) + far * base), rtol=1e-10)
    assert np.max(np.abs(calibrated - raw)) < 0.01  # the rows inform each other: the turn is small


def _two_separable_posteriors():
    """Two posteriors of the separable classes (an ARD product and a sum) and weights to average them."""
    first, X, y = _separable_posterior(Probit())
    kernel = to_kernel(parse("SE(0) + SE(1)"), X)
    kernel.theta = np.log([30.0, 3.0, 1.0, 100.0])
    second = LaplacePosterior(kernel, 0.0, Probit(), np.zeros(0), X, y)
    return first, second, y, np.array([0.6, 0.4])


def test_an_average_of_posteriors_is_calibrated_as_one_predictive():
    first, second, y, weights = _two_separable_posteriors()
    densities = calibrate_predictive([first, second], weights, y)
    assert first.variance_scale == second.variance_scale < 0.1
    assert first.probability_floor == second.probability_floor == 1.0 / (len(y) + 2)
    moments = [first.loo_moments(y), second.loo_moments(y)]
    far = [(1 - _support_by_hand(first)) ** 4, (1 - _support_by_hand(second)) ** 4]
    base = np.where(y > 0, np.sum(y > 0), np.sum(y < 0)) / (len(y) + 1)
    floor = 1.0 / (len(y) + 1)

    def total(scale):  # the floored weighted average of the members' leave-one-out probabilities, by hand
        p = sum(w * ((1 - f) * np.exp(Probit().log_predictive_density(y, m, scale * v, np.zeros(0))) + f * base)
                for w, (m, v), f in zip(weights, moments, far))
        return np.sum(np.log(floor + (1 - 2 * floor) * p))

    assert densities.sum() == pytest.approx(total(first.variance_scale), rel=1e-9)
    assert densities.sum() >= max(total(s) for s in np.exp(np.linspace(np.log(1e-6), 0.0, 200))) - 1e-3


@pytest.mark.parametrize("likelihood, inverse_link", [(Probit(), norm.ppf), (Logistic(), logit)])
@pytest.mark.parametrize("n_rows", [10, 300, 10_000])
def test_a_binary_problems_latent_mean_is_bounded_by_the_rule_of_succession(likelihood, inverse_link, n_rows):
    low, high = binary_mean_bounds(likelihood, n_rows)
    assert low == pytest.approx(inverse_link(1.0 / (n_rows + 2))) and high == pytest.approx(-low)
    assert MEAN_BOUNDS[0] < low < 0.0 < high < MEAN_BOUNDS[1]
    X = np.linspace(0.0, 1.0, 20)[:, np.newaxis]
    objective = LaplaceObjective(to_kernel(parse("SE(0)")), X, np.where(X[:, 0] > 0.5, 1.0, -1.0), likelihood,
                                 (low, high))
    assert tuple(objective.bounds[-1]) == (low, high)


def test_the_calibration_of_a_predictive_can_be_read_without_changing_it():
    first, second, y, weights = _two_separable_posteriors()
    scale, floor, densities = predictive_calibration([first, second], weights, y)
    # the posteriors keep the Laplace predictive's own variance
    assert (first.variance_scale, first.probability_floor) == (second.variance_scale, second.probability_floor) == (1.0, 0.0)
    # and calibrating them gives that scale, floor and those densities
    np.testing.assert_allclose(calibrate_predictive([first, second], weights, y), densities, rtol=1e-12)
    assert first.variance_scale == scale < 0.1 and first.probability_floor == floor == 1.0 / (len(y) + 2)
    # a separable problem: the calibrated leave-one-out log density is far above the Laplace predictive's own
    alone = predictive_calibration([first], np.ones(1), y)[2]
    first.variance_scale, first.probability_floor = 1.0, 0.0
    assert alone.sum() > first.loo_log_density(y).sum() + 5.0  # measured: -3.4 against -11.4
