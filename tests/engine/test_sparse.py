"""The sparse variational GP engine: its bound against dense computations, its gradient and posterior."""

import math

import numpy as np
import pytest

import skgpsearch._engine._sparse as sparse_module
from skgpsearch._engine._exact import GPPosterior, RegressionObjective
from skgpsearch._engine._sparse import SparseObjective, SparsePosterior, choose_inducing_inputs
from skgpsearch.grammar import parse
from skgpsearch.kernels import DataSummary, to_kernel

STRUCTURES = ["SE(0)", "SE(0) * PER(0) + LIN(1)", "RQ(0, 1) + M32(1)"]


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.sort(rng.uniform(0, 5, n)), rng.uniform(-1, 1, n)])
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def _kernel_and_theta(text, X, y, noise=0.05):
    kernel = to_kernel(parse(text), summary=DataSummary.from_data(X, y))
    return kernel, np.append(kernel.theta, math.log(noise))


def _dense_bound(kernel, X, y, Z, noise):
    """The collapsed bound written densely (n × n matrices), as in Titsias (2009), eq. (9)."""
    Kmm = kernel(Z) + 1e-12 * np.eye(len(Z))
    Knm = kernel(X, Z)
    Q = Knm @ np.linalg.solve(Kmm, Knm.T)
    C = Q + noise * np.eye(len(X))
    sign, logdet = np.linalg.slogdet(C)
    log_normal = -0.5 * (len(X) * math.log(2 * math.pi) + logdet + y @ np.linalg.solve(C, y))
    return log_normal - np.trace(kernel(X) - Q) / (2 * noise)


@pytest.mark.parametrize("text", STRUCTURES)
def test_the_bound_equals_a_dense_computation_and_the_exact_evidence_when_inducing_on_the_data(text):
    X, y = _data()
    kernel, theta = _kernel_and_theta(text, X, y)
    exact = RegressionObjective(kernel, X, y, (1e-6, 10.0))(theta)
    on_data = SparseObjective(kernel, X, y, X, (1e-6, 10.0), block_rows=17)(theta)
    assert on_data == pytest.approx(exact, rel=1e-9, abs=1e-7)
    Z = X[::4]
    bound = SparseObjective(kernel, X, y, Z, (1e-6, 10.0), block_rows=23)(theta)
    # (K_mm of close inducing inputs is ill-conditioned: both sides regularise it slightly differently)
    assert bound == pytest.approx(_dense_bound(kernel, X, y, Z, 0.05), rel=1e-6)
    assert bound <= exact + 1e-6  # (a smooth SE is nearly captured by 15 inducing inputs: no real gap)


def test_the_bound_grows_with_nested_inducing_sets_up_to_the_exact_evidence():
    X, y = _data(80)
    kernel, theta = _kernel_and_theta("SE(0) * PER(0) + LIN(1)", X, y)
    exact = RegressionObjective(kernel, X, y, (1e-6, 10.0))(theta)
    order = np.random.default_rng(1).permutation(len(X))
    values = [SparseObjective(kernel, X, y, X[order[:m]], (1e-6, 10.0))(theta) for m in (5, 10, 20, 40, 80)]
    assert all(b >= a - 1e-8 for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(exact, rel=1e-9)
    assert values[0] < exact - 1.0  # a real gap to close


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("text", STRUCTURES)
def test_the_gradient_matches_finite_differences(text, cache, monkeypatch):
    if not cache:
        monkeypatch.setattr(sparse_module, "TREE_CACHE_BYTES", 0)
    X, y = _data(50)
    kernel, theta = _kernel_and_theta(text, X, y)
    objective = SparseObjective(kernel, X, y, X[::5], (1e-6, 10.0), block_rows=16)
    value, gradient = objective(theta, eval_gradient=True)
    assert value == pytest.approx(objective(theta))
    step = 1e-6
    numeric = np.array([(objective(theta + e) - objective(theta - e)) / (2 * step) for e in step * np.eye(theta.size)])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-5 * (1 + np.max(np.abs(numeric))))


def test_the_posterior_on_the_data_is_the_exact_posterior():
    X, y = _data(40)
    kernel, _ = _kernel_and_theta("SE(0) * PER(0) + LIN(1)", X, y)
    X_new = _data(7, seed=3)[0]
    sparse = SparsePosterior(kernel, 0.05, X, y, X)
    exact = GPPosterior(kernel, 0.05, X, y)
    for option in ({}, {"return_std": True}, {"return_cov": True}):
        ours, theirs = sparse.predict(X_new, **option), exact.predict(X_new, **option)
        np.testing.assert_allclose(ours[0], theirs[0], atol=1e-9)
        if option:
            np.testing.assert_allclose(ours[1], theirs[1], atol=1e-8)
    assert sparse.log_marginal_likelihood == pytest.approx(exact.log_marginal_likelihood, rel=1e-10)


def test_inducing_inputs_spread_over_the_data():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 100, 3000), rng.uniform(0, 1, 3000)])
    Z = choose_inducing_inputs(X, 50, rng)
    assert Z.shape == (50, 2) and len(np.unique(Z, axis=0)) == 50
    # every data point is near an inducing input, in units of the columns' spread
    scale = X.std(axis=0)
    nearest = np.min(np.linalg.norm((X[:, None, :] - Z[None]) / scale, axis=2), axis=1)
    assert np.quantile(nearest, 0.95) < 0.4
    assert np.array_equal(choose_inducing_inputs(X[:10], 50, rng), np.unique(X[:10], axis=0))
