"""Changepoint and change-window operators: values, gradients, sklearn contract, engine tree."""

import math
import pickle

import numpy as np
import pytest
from scipy.special import expit
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor

from skgpsearch._engine._kernel_tree import KernelTree
from skgpsearch._engine._exact import RegressionObjective
from skgpsearch.kernels import (
    LIN,
    PER,
    SE,
    ActiveColumns,
    ChangePoint,
    ChangeWindow,
    Constant,
    WhiteNoise,
)

from strategies import fd_gradient

rng = np.random.default_rng(3)
X = np.column_stack([np.sort(rng.uniform(0.0, 10.0, 35)), rng.normal(size=35)])
X_GRID = np.column_stack([np.arange(40) / 4.0, rng.normal(size=40)])  # column 0 gets lag storage


def on(kernel, column):
    return ActiveColumns(kernel, [column])


def cases():
    return {
        "cp-se-per": ChangePoint(on(SE(1.5, 2.0), 0), on(PER(0.7, 1.0, 3.0), 0), location=4.0, width=0.8),
        "cw-se-lin": ChangeWindow(on(SE(1.5, 2.0), 1), on(LIN(0.3, 1.0), 0), location=5.0, duration=3.0, width=0.5),
        "cp-switch-off": ChangePoint(SE(1.0, 1.0), Constant(0.5), column=1, location=0.2, width=0.3),
        "cp-fixed-width": ChangePoint(on(SE(), 0), on(SE(2.0, 0.5), 0), location=6.0, width=1.0, width_bounds="fixed"),
        "nested-in-product": on(SE(1.0, 3.0), 0)
        * ChangePoint(
            on(SE(1.5, 2.0), 0),
            ChangeWindow(on(PER(0.7, 1.0, 3.0), 0), on(SE(), 0), location=3.0, duration=2.0, width=0.3),
            location=4.0,
            width=0.8,
        ),
    }


IDS = list(cases())


def test_changepoint_by_hand():
    k = ChangePoint(on(SE(2.0, 1.5), 0), on(LIN(0.5, 1.0), 0), location=4.0, width=0.7)
    s = expit(-(X[:, 0] - 4.0) / 0.7)
    K1, K2 = on(SE(2.0, 1.5), 0)(X), on(LIN(0.5, 1.0), 0)(X)
    expected = np.outer(s, s) * K1 + np.outer(1 - s, 1 - s) * K2
    np.testing.assert_allclose(k(X), expected, rtol=1e-12)
    np.testing.assert_allclose(k.diag(X), np.diag(expected), rtol=1e-12)
    # far from the change each side is its own kernel
    assert k(np.array([[-50.0, 0.0], [-49.0, 0.0]]))[0, 1] == pytest.approx(K1[0, 0] * math.exp(-1 / (2 * 1.5**2)))
    far = np.array([[60.0, 0.0], [61.0, 0.0]])
    np.testing.assert_allclose(k(far), on(LIN(0.5, 1.0), 0)(far), rtol=1e-12)


def test_change_window_by_hand_and_edges():
    k = ChangeWindow(Constant(1.0), Constant(9.0), location=5.0, duration=4.0, width=0.05)
    x = np.array([[0.0], [2.5], [3.5], [5.0], [6.5], [7.5], [10.0]])  # 10 edge widths from the edges
    inside = (x[:, 0] > 3.0) & (x[:, 0] < 7.0)
    np.testing.assert_allclose(k.diag(x), np.where(inside, 9.0, 1.0), rtol=1e-3)  # σ(10) = 1 − 5e-5
    w = expit((x[:, 0] - 3.0) / 0.05) * expit((7.0 - x[:, 0]) / 0.05)
    expected = np.outer(1 - w, 1 - w) * 1.0 + np.outer(w, w) * 9.0
    np.testing.assert_allclose(k(x), expected, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("case_id", IDS)
def test_gradient_matches_finite_differences(case_id):
    k = cases()[case_id]
    K, dK = k(X, eval_gradient=True)
    assert dK.shape == (len(X), len(X), k.n_dims) and k.theta.shape == (k.n_dims,)
    np.testing.assert_allclose(dK, fd_gradient(k, X, h=1e-6), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case_id", IDS)
def test_positive_semidefinite_cross_covariance_and_diag(case_id):
    k = cases()[case_id]
    K = k(X)
    assert np.linalg.eigvalsh(K).min() > -1e-9 * np.abs(K).max()
    np.testing.assert_allclose(K, K.T, rtol=1e-14)
    np.testing.assert_allclose(k.diag(X), np.diag(K), rtol=1e-12)
    np.testing.assert_allclose(k(X[:5], X[5:9]), K[:5, 5:9], rtol=1e-12)


@pytest.mark.parametrize("case_id", IDS)
def test_clone_pickle_theta_round_trip(case_id):
    k = cases()[case_id]
    assert clone(k) == k and pickle.loads(pickle.dumps(k)) == k
    moved = k.clone_with_theta(k.theta + 0.05)
    np.testing.assert_allclose(moved.theta, k.theta + 0.05, rtol=1e-12)
    assert moved != k
    assert k.bounds.shape == (k.n_dims, 2)
    assert np.all(k.bounds[:, 0] <= k.theta) and np.all(k.theta <= k.bounds[:, 1])


def test_hyperparameter_names_and_theta_of_the_location():
    k = ChangePoint(on(SE(), 0), WhiteNoise(0.1), location=-3.0, width=2.0)
    names = [hp.name for hp in k.hyperparameters]
    assert names == ["k1__kernel__variance", "k1__kernel__lengthscale", "k2__variance", "location", "width"]
    # a location may be negative: its theta entry is the location itself, the width's is its log
    np.testing.assert_allclose(k.theta[-2:], [-3.0, math.log(2.0)])
    k.set_params(k1__kernel__lengthscale=4.0)
    assert k.k1.kernel.lengthscale == 4.0


def test_works_inside_scikit_learn_gaussian_process():
    """A step in the noise-free level is found by sklearn's own optimiser with our kernel."""
    x = np.linspace(0.0, 10.0, 60)[:, None]
    y = np.where(x[:, 0] < 6.0, np.sin(3 * x[:, 0]), 0.0)
    kernel = ChangePoint(
        SE(1.0, 0.5, lengthscale_bounds=(0.1, 10.0)), Constant(1e-3, "fixed"),
        location=5.0, width=0.5, location_bounds=(0.0, 10.0), width_bounds=(0.01, 2.0),
    )
    gp = GaussianProcessRegressor(kernel, alpha=1e-4).fit(x, y)
    assert abs(gp.kernel_.location - 6.0) < 0.5


def test_wrong_column_raises_a_clear_error():
    with pytest.raises(ValueError, match="switches on column 3"):
        ChangePoint(SE(), SE(), column=3)(X)
    with pytest.raises(ValueError, match="column must be a non-negative integer"):
        ChangeWindow(SE(), SE(), column=-1)(X)


@pytest.mark.parametrize("case_id", IDS)
@pytest.mark.parametrize("inputs", ["irregular", "grid"])
def test_tree_matches_the_kernel_and_its_tensor(case_id, inputs):
    Z = X if inputs == "irregular" else X_GRID
    k = cases()[case_id]
    tree = KernelTree(k, Z)
    K, dK = k(Z, eval_gradient=True)
    np.testing.assert_allclose(tree.matrix(), K, rtol=1e-10, atol=1e-12)
    G = np.random.default_rng(1).normal(size=K.shape)
    np.testing.assert_allclose(tree.contract(G), np.einsum("ij,ijk->k", G, dK), rtol=1e-8, atol=1e-10)
    tree.set_theta(k.theta - 0.1)
    np.testing.assert_allclose(tree.matrix(), k.clone_with_theta(k.theta - 0.1)(Z), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case_id", IDS)
def test_objective_gradient_matches_finite_differences(case_id):
    k = cases()[case_id]
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    objective = RegressionObjective(k, X, y, (1e-6, 10.0))
    theta = np.append(k.theta, math.log(0.1))
    _, grad = objective(theta, eval_gradient=True)
    h = 1e-6
    numeric = np.array([(objective(theta + h * e) - objective(theta - h * e)) / (2 * h) for e in np.eye(theta.size)])
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(numeric).max()))
