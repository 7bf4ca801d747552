"""Tests of ActiveColumns (skgpsearch.kernels._columns)."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, Product, Sum

from strategies import fd_gradient
from skgpsearch.kernels import LIN, PER, SE, WN, ActiveColumns


def _X(n=7, d=4, seed=0):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, size=(n, d))


def se_by_hand(A, B, variance, lengthscale):
    r2 = (((A[:, None, :] - B[None, :, :]) / np.asarray(lengthscale, float)) ** 2).sum(-1)
    return variance * np.exp(-0.5 * r2)


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------


def test_equals_wrapped_kernel_on_selected_columns_by_hand():
    X, Y = _X(7), _X(5, seed=1)
    cols = [2, 0]
    ls = [0.7, 1.9]
    k = ActiveColumns(SE(1.6, ls), columns=cols)
    np.testing.assert_allclose(k(X), se_by_hand(X[:, cols], X[:, cols], 1.6, ls), rtol=1e-12)
    np.testing.assert_allclose(k(X, Y), se_by_hand(X[:, cols], Y[:, cols], 1.6, ls), rtol=1e-12)
    # Order of the columns matters for anisotropic lengthscales.
    swapped = ActiveColumns(SE(1.6, ls), columns=[0, 2])
    assert not np.allclose(swapped(X), k(X))
    # Other columns are ignored.
    X2 = X.copy()
    X2[:, [1, 3]] = np.random.default_rng(2).normal(size=(7, 2)) * 100
    np.testing.assert_array_equal(k(X2), k(X))


def test_int_column_equals_one_element_list():
    X = _X()
    a = ActiveColumns(PER(1.2, 0.9, 1.1), columns=3)
    b = ActiveColumns(PER(1.2, 0.9, 1.1), columns=[3])
    x = X[:, 3]
    expected = 1.2 * np.exp(-2 * np.sin(np.pi * np.abs(x[:, None] - x[None, :]) / 1.1) ** 2 / 0.9**2)
    np.testing.assert_allclose(a(X), expected, rtol=1e-12)
    np.testing.assert_array_equal(a(X), b(X))
    assert a == b


def test_numpy_integer_columns_accepted():
    X = _X()
    k = ActiveColumns(SE(1.0, 0.8), columns=np.array([1, 3]))
    np.testing.assert_allclose(k(X), SE(1.0, 0.8)(X[:, [1, 3]]))
    k = ActiveColumns(SE(1.0, 0.8), columns=np.int64(2))
    np.testing.assert_allclose(k(X), SE(1.0, 0.8)(X[:, [2]]))


def test_diag_matches_diagonal():
    X = _X()
    for k in (ActiveColumns(SE(1.6, [0.7, 1.9]), [2, 0]), ActiveColumns(LIN(0.8, -0.3), [1, 3])):
        np.testing.assert_allclose(k.diag(X), np.diag(k(X)), rtol=1e-12)
    # LIN's diagonal depends on the selected columns only.
    k = ActiveColumns(LIN(0.8, -0.3), [1, 3])
    np.testing.assert_allclose(k.diag(X), 0.8 * ((X[:, [1, 3]] + 0.3) ** 2).sum(1), rtol=1e-12)


def test_is_stationary_is_delegated():
    assert ActiveColumns(SE(), [0]).is_stationary() is True
    assert ActiveColumns(PER(), [0]).is_stationary() is True
    assert ActiveColumns(LIN(), [0]).is_stationary() is False


# --------------------------------------------------------------------------
# Hyperparameters and gradient
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "inner, cols",
    [
        (SE(1.6, [0.7, 1.9]), [2, 0]),
        (LIN(0.8, [0.4, -1.1]), [3, 1]),
        (PER(1.2, 0.9, 1.1, variance_bounds="fixed"), [1]),
        (RBF([0.5, 2.0]), [0, 3]),
    ],
    ids=["SE", "LIN", "PER-fixed", "sklearn-RBF"],
)
def test_theta_bounds_gradient_identical_to_wrapped(inner, cols):
    X = _X()
    k = ActiveColumns(clone(inner), cols)
    np.testing.assert_array_equal(k.theta, inner.theta)
    np.testing.assert_array_equal(k.bounds, inner.bounds)
    assert k.n_dims == inner.n_dims
    K, G = k(X, eval_gradient=True)
    K_ref, G_ref = inner(X[:, cols], eval_gradient=True)
    np.testing.assert_array_equal(K, K_ref)
    np.testing.assert_array_equal(G, G_ref)
    assert G.shape == (7, 7, k.n_dims)
    np.testing.assert_allclose(G, fd_gradient(k, X), rtol=1e-6, atol=1e-8)

    hps, inner_hps = k.hyperparameters, inner.hyperparameters
    assert [hp.name for hp in hps] == ["kernel__" + hp.name for hp in inner_hps]
    for hp, ihp in zip(hps, inner_hps):
        assert hp.n_elements == ihp.n_elements
        assert hp.fixed == ihp.fixed
        if not ihp.fixed:
            np.testing.assert_array_equal(hp.bounds, ihp.bounds)


def test_hyperparameter_names_and_fixed_flags():
    k = ActiveColumns(SE(1.0, [1.0, 2.0], variance_bounds="fixed"), [0, 1])
    assert [hp.name for hp in k.hyperparameters] == ["kernel__variance", "kernel__lengthscale"]
    assert [hp.fixed for hp in k.hyperparameters] == [True, False]
    assert [hp.n_elements for hp in k.hyperparameters] == [1, 2]
    assert k.n_dims == 2


def test_theta_setter_and_clone_with_theta_update_wrapped_kernel():
    X = _X()
    k = ActiveColumns(SE(1.0, 1.0), [1, 2])
    k2 = k.clone_with_theta(np.log([2.0, 0.5]))
    assert k2.kernel.variance == pytest.approx(2.0)
    assert k2.kernel.lengthscale == pytest.approx(0.5)
    assert k.kernel.variance == 1.0 and k.kernel.lengthscale == 1.0  # original untouched
    np.testing.assert_allclose(k2(X), se_by_hand(X[:, [1, 2]], X[:, [1, 2]], 2.0, 0.5), rtol=1e-12)
    k.theta = np.log([3.0, 0.25])
    assert k.kernel.variance == pytest.approx(3.0)
    assert k.kernel.lengthscale == pytest.approx(0.25)


def test_get_params_and_set_params():
    X = _X()
    inner = SE(1.0, 1.0)
    k = ActiveColumns(inner, [0, 2])
    shallow = k.get_params(deep=False)
    assert shallow == {"kernel": inner, "columns": [0, 2]}
    deep = k.get_params()
    assert deep["kernel__lengthscale"] == 1.0
    assert deep["kernel__variance"] == 1.0
    assert deep["columns"] == [0, 2]

    k.set_params(kernel__lengthscale=0.3, kernel__variance=2.0)
    assert k.kernel.lengthscale == 0.3
    np.testing.assert_allclose(k(X), se_by_hand(X[:, [0, 2]], X[:, [0, 2]], 2.0, 0.3), rtol=1e-12)
    np.testing.assert_allclose(k.theta, np.log([2.0, 0.3]))

    k.set_params(columns=[1])
    np.testing.assert_allclose(k(X), se_by_hand(X[:, [1]], X[:, [1]], 2.0, 0.3), rtol=1e-12)
    with pytest.raises(ValueError):
        k.set_params(kernel__period=2.0)
    with pytest.raises(ValueError):
        k.set_params(nonsense=1)


def test_clone_and_pickle():
    X = _X()
    k = ActiveColumns(SE(1.6, [0.7, 1.9]), [2, 0])
    for k2 in (clone(k), pickle.loads(pickle.dumps(k))):
        assert k2 == k
        assert k2 is not k and k2.kernel is not k.kernel
        np.testing.assert_array_equal(k2(X), k(X))
        np.testing.assert_array_equal(k2.theta, k.theta)
    # The clone is independent of the original.
    c = clone(k)
    c.theta = c.theta + 1.0
    np.testing.assert_allclose(k.theta, np.log([1.6, 0.7, 1.9]))
    assert c != k


def test_equality_depends_on_columns_and_kernel():
    assert ActiveColumns(SE(), [0]) == ActiveColumns(SE(), 0)
    assert ActiveColumns(SE(), [0]) != ActiveColumns(SE(), [1])
    assert ActiveColumns(SE(), [0, 1]) != ActiveColumns(SE(), [1, 0])
    assert ActiveColumns(SE(), [0]) != ActiveColumns(SE(2.0), [0])
    assert ActiveColumns(SE(), [0]) != SE()


# --------------------------------------------------------------------------
# Wrapping scikit-learn kernels, and inside scikit-learn compositions
# --------------------------------------------------------------------------


@pytest.mark.parametrize("inner", [RBF(0.8), RBF([0.8, 1.7]), Matern(0.6, nu=1.5), Matern([0.6, 1.1], nu=2.5)])
def test_wraps_sklearn_kernels(inner):
    X, Y = _X(), _X(5, seed=3)
    cols = [3, 1]
    k = ActiveColumns(inner, cols)
    np.testing.assert_allclose(k(X), inner(X[:, cols]), rtol=1e-12)
    np.testing.assert_allclose(k(X, Y), inner(X[:, cols], Y[:, cols]), rtol=1e-12)
    np.testing.assert_allclose(k.diag(X), np.ones(7))
    names = [hp.name for hp in k.hyperparameters]
    assert names == ["kernel__length_scale"]
    np.testing.assert_allclose(k(X, eval_gradient=True)[1], fd_gradient(k, X), rtol=1e-6, atol=1e-8)
    assert k.is_stationary()


def test_inside_sklearn_sum_and_product():
    X, Y = _X(), _X(5, seed=4)
    a = ActiveColumns(SE(1.3, 0.8), [0])
    b = ActiveColumns(PER(0.7, 1.1, 1.4), [2])
    c = ActiveColumns(LIN(0.5, 0.2), [1, 3])
    ks = a + b
    kp = a * c
    assert isinstance(ks, Sum) and isinstance(kp, Product)
    x0, x2, x13 = X[:, [0]], X[:, [2]], X[:, [1, 3]]
    np.testing.assert_allclose(ks(X), SE(1.3, 0.8)(x0) + PER(0.7, 1.1, 1.4)(x2), rtol=1e-12)
    np.testing.assert_allclose(kp(X), SE(1.3, 0.8)(x0) * LIN(0.5, 0.2)(x13), rtol=1e-12)
    np.testing.assert_allclose(
        kp(X, Y), SE(1.3, 0.8)(x0, Y[:, [0]]) * LIN(0.5, 0.2)(x13, Y[:, [1, 3]]), rtol=1e-12
    )
    assert [hp.name for hp in ks.hyperparameters] == [
        "k1__kernel__variance",
        "k1__kernel__lengthscale",
        "k2__kernel__variance",
        "k2__kernel__lengthscale",
        "k2__kernel__period",
    ]
    assert ks.n_dims == 5 and kp.n_dims == 4
    assert kp.is_stationary() is False and ks.is_stationary() is True
    for k in (ks, kp):
        _, G = k(X, eval_gradient=True)
        np.testing.assert_allclose(G, fd_gradient(k, X), rtol=1e-6, atol=1e-8)
    ks.set_params(k1__kernel__lengthscale=2.0)
    assert a.kernel.lengthscale == 2.0
    assert clone(ks) == ks
    assert pickle.loads(pickle.dumps(kp)) == kp


def test_sklearn_constant_times_active_columns():
    X = _X()
    k = ConstantKernel(2.0) * ActiveColumns(RBF(0.5), [1])
    np.testing.assert_allclose(k(X), 2.0 * RBF(0.5)(X[:, [1]]), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sum_of_active_columns_in_gaussian_process_regressor():
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 4, size=(30, 2))
    y = np.sin(2 * X[:, 0]) + 0.5 * (X[:, 1] - 2) ** 2 + 0.05 * rng.standard_normal(30)
    kernel = ActiveColumns(SE(1.0, 1.0), [0]) + ActiveColumns(SE(1.0, 1.0), [1]) + WN(0.1)
    alpha = 1e-6
    gpr = GaussianProcessRegressor(kernel=kernel, alpha=alpha, random_state=0).fit(X, y)
    kernel_ = gpr.kernel_
    K = kernel_(X) + alpha * np.eye(30)
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L.T, np.linalg.solve(L, y))
    lml = -0.5 * y @ a - np.log(np.diag(L)).sum() - 15 * np.log(2 * np.pi)
    assert gpr.log_marginal_likelihood_value_ == pytest.approx(lml, rel=1e-7, abs=1e-7)
    assert gpr.log_marginal_likelihood_value_ > gpr.log_marginal_likelihood(kernel.theta)
    # The fitted additive model explains the data well: noise variance is small
    # relative to the signal and held-out predictions are close.
    assert kernel_.k2.variance < 0.1 * np.var(y)
    Xt = rng.uniform(0.2, 3.8, size=(20, 2))
    yt = np.sin(2 * Xt[:, 0]) + 0.5 * (Xt[:, 1] - 2) ** 2
    rmse = np.sqrt(np.mean((gpr.predict(Xt) - yt) ** 2))
    assert rmse < 0.2 * np.std(yt)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_column_out_of_range_raises():
    X = _X(5, 3)
    with pytest.raises(ValueError, match="column 3"):
        ActiveColumns(SE(), [0, 3])(X)
    with pytest.raises(ValueError, match="column"):
        ActiveColumns(SE(), 3).diag(X)
    with pytest.raises(ValueError, match="Y"):
        ActiveColumns(SE(), [2])(_X(5, 4), X[:, :2])


@pytest.mark.parametrize("columns", [[-1], -1, [], (), [1.0], 1.5, ["a"], "0", None, True, [True]])
def test_invalid_columns_raise(columns):
    X = _X(5, 3)
    with pytest.raises(ValueError):
        ActiveColumns(SE(), columns)(X)


def test_gradient_with_Y_raises():
    X = _X()
    with pytest.raises(ValueError):
        ActiveColumns(SE(), [0])(X, X, eval_gradient=True)
