"""Tests of the catalogue kernels (skgpsearch.kernels._base).

Ground truth is independent of the implementation: central finite differences
of K with respect to theta, scikit-learn's own kernels, and formulas written
out by hand with numpy.
"""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    ExpSineSquared,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from strategies import fd_gradient
from skgpsearch.kernels import (
    C,
    CPER,
    LIN,
    M12,
    M32,
    M52,
    PER,
    RQ,
    SE,
    WN,
    CentredPeriodic,
    Constant,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    RationalQuadratic as CatRQ,
    SquaredExponential,
    WhiteNoise,
)

N_COLS = 3
LS3 = [0.8, 1.3, 2.1]


def _X(n=7, d=N_COLS, seed=0):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, size=(n, d))


# (id, factory, number of input columns)
KERNEL_CASES = [
    ("SE", lambda: SE(variance=1.7, lengthscale=0.9), N_COLS),
    ("SE-aniso", lambda: SE(variance=1.7, lengthscale=LS3), N_COLS),
    ("RQ", lambda: RQ(variance=0.6, lengthscale=1.1, alpha=0.7), N_COLS),
    ("RQ-aniso", lambda: RQ(variance=0.6, lengthscale=LS3, alpha=2.5), N_COLS),
    ("PER", lambda: PER(variance=1.4, lengthscale=0.8, period=1.3), 1),
    ("CPER", lambda: CPER(variance=1.4, lengthscale=0.8, period=1.3), 1),
    ("CPER-smooth", lambda: CPER(variance=1.4, lengthscale=4.0, period=1.3), 1),
    ("LIN-scalar", lambda: LIN(variance=0.9, offset=-0.4), N_COLS),
    ("LIN-vector", lambda: LIN(variance=0.9, offset=[0.3, -1.2, 0.5]), N_COLS),
    ("M12", lambda: M12(variance=1.3, lengthscale=0.7), N_COLS),
    ("M12-aniso", lambda: M12(variance=1.3, lengthscale=LS3), N_COLS),
    ("M32", lambda: M32(variance=2.2, lengthscale=1.2), N_COLS),
    ("M32-aniso", lambda: M32(variance=2.2, lengthscale=LS3), N_COLS),
    ("M52", lambda: M52(variance=0.5, lengthscale=0.6), N_COLS),
    ("M52-aniso", lambda: M52(variance=0.5, lengthscale=LS3), N_COLS),
    ("C", lambda: C(variance=2.5), N_COLS),
    ("WN", lambda: WN(variance=0.3), N_COLS),
]
CASE_IDS = [c[0] for c in KERNEL_CASES]
CASES = [c[1:] for c in KERNEL_CASES]

# Expected number of free hyperparameters of each case above.
EXPECTED_N_DIMS = {
    "SE": 2,
    "SE-aniso": 4,
    "RQ": 3,
    "RQ-aniso": 5,
    "PER": 3,
    "CPER": 3,
    "CPER-smooth": 3,
    "LIN-scalar": 2,
    "LIN-vector": 4,
    "M12": 2,
    "M12-aniso": 4,
    "M32": 2,
    "M32-aniso": 4,
    "M52": 2,
    "M52-aniso": 4,
    "C": 1,
    "WN": 1,
}


# --------------------------------------------------------------------------
# 1. Gradients
# --------------------------------------------------------------------------


@pytest.mark.parametrize("factory, d", CASES, ids=CASE_IDS)
def test_gradient_matches_finite_differences(factory, d):
    k = factory()
    X = _X(d=d)
    K, G = k(X, eval_gradient=True)
    assert K.shape == (7, 7)
    assert G.shape == (7, 7, k.n_dims)
    np.testing.assert_allclose(K, k(X), rtol=1e-14, atol=0)
    np.testing.assert_allclose(G, fd_gradient(k, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_n_dims(case_id):
    factory, _ = CASES[CASE_IDS.index(case_id)]
    k = factory()
    assert k.n_dims == EXPECTED_N_DIMS[case_id]
    assert k.theta.shape == (k.n_dims,)
    assert k.bounds.shape == (k.n_dims, 2)


def _hp_slices(kernel):
    """{name: slice into theta} for the free hyperparameters of kernel."""
    out, i = {}, 0
    for hp in kernel.hyperparameters:
        if hp.fixed:
            continue
        out[hp.name] = slice(i, i + hp.n_elements)
        i += hp.n_elements
    return out


# (full kernel, the same kernel with some hyperparameters fixed, names fixed, n_cols)
FIXED_CASES = [
    (lambda **kw: SE(1.7, 0.9, **kw), {"variance_bounds": "fixed"}, N_COLS),
    (lambda **kw: SE(1.7, LS3, **kw), {"lengthscale_bounds": "fixed"}, N_COLS),
    (lambda **kw: M32(2.2, LS3, **kw), {"variance_bounds": "fixed"}, N_COLS),
    (lambda **kw: M12(1.3, 0.7, **kw), {"lengthscale_bounds": "fixed"}, N_COLS),
    (lambda **kw: RQ(0.6, LS3, 0.7, **kw), {"alpha_bounds": "fixed"}, N_COLS),
    (lambda **kw: RQ(0.6, 1.1, 0.7, **kw), {"variance_bounds": "fixed", "lengthscale_bounds": "fixed"}, N_COLS),
    (lambda **kw: PER(1.4, 0.8, 1.3, **kw), {"period_bounds": "fixed"}, 1),
    (lambda **kw: PER(1.4, 0.8, 1.3, **kw), {"variance_bounds": "fixed"}, 1),
    (lambda **kw: LIN(0.9, [0.3, -1.2, 0.5], **kw), {"variance_bounds": "fixed"}, N_COLS),
    (lambda **kw: LIN(0.9, -0.4, **kw), {"offset_bounds": "fixed"}, N_COLS),
    (lambda **kw: C(2.5, **kw), {"variance_bounds": "fixed"}, N_COLS),
    (lambda **kw: WN(0.3, **kw), {"variance_bounds": "fixed"}, N_COLS),
]


@pytest.mark.parametrize("factory, fixed, d", FIXED_CASES)
def test_fixed_hyperparameters_drop_gradient_columns(factory, fixed, d):
    full = factory()
    part = factory(**fixed)
    X = _X(d=d, seed=1)
    _, G_full = full(X, eval_gradient=True)
    K_part, G_part = part(X, eval_gradient=True)

    fixed_names = {key[: -len("_bounds")] for key in fixed}
    slices = _hp_slices(full)
    n_fixed = sum(slices[name].stop - slices[name].start for name in fixed_names)
    assert part.n_dims == full.n_dims - n_fixed
    assert part.theta.shape == (part.n_dims,)
    assert G_part.shape == (7, 7, part.n_dims)
    assert [hp.name for hp in part.hyperparameters if hp.fixed] == [
        hp.name for hp in full.hyperparameters if hp.name in fixed_names
    ]
    keep = np.concatenate(
        [np.arange(s.start, s.stop) for name, s in slices.items() if name not in fixed_names] or [np.array([], int)]
    )
    np.testing.assert_allclose(K_part, full(X))
    np.testing.assert_allclose(G_part, G_full[:, :, keep])
    np.testing.assert_allclose(G_part, fd_gradient(part, X), rtol=1e-6, atol=1e-8)


def test_all_fixed_gives_empty_gradient_and_theta():
    k = SE(1.0, 1.0, variance_bounds="fixed", lengthscale_bounds="fixed")
    X = _X()
    K, G = k(X, eval_gradient=True)
    assert G.shape == (7, 7, 0)
    assert k.n_dims == 0
    assert k.theta.shape == (0,)
    np.testing.assert_allclose(K, k(X))


@pytest.mark.parametrize("factory, d", CASES, ids=CASE_IDS)
def test_gradient_with_Y_raises(factory, d):
    k = factory()
    X = _X(d=d)
    with pytest.raises(ValueError, match="Y is None"):
        k(X, X[:3], eval_gradient=True)


def test_m12_gradient_with_duplicate_points_is_finite():
    # r = 0 off the diagonal: the derivative with respect to the lengthscale is 0 there.
    X = _X(5)
    X = np.vstack([X, X[:2]])
    k = M12(1.3, LS3)
    K, G = k(X, eval_gradient=True)
    assert np.all(np.isfinite(G))
    np.testing.assert_allclose(G[0, 5, 1:], 0.0, atol=0)
    np.testing.assert_allclose(G[0, 5, 0], K[0, 5])


# --------------------------------------------------------------------------
# 2. Independent ground truth against scikit-learn and numpy
# --------------------------------------------------------------------------


def _sklearn_equivalent(case_id):
    """Return (our kernel, equivalent sklearn kernel with the same theta layout, n_cols)."""
    v = 1.7
    if case_id in ("SE", "SE-aniso"):
        ls = 0.9 if case_id == "SE" else np.array(LS3)
        return SE(v, ls), ConstantKernel(v) * RBF(ls), N_COLS
    if case_id.startswith("M"):
        nu = {"M12": 0.5, "M32": 1.5, "M52": 2.5}[case_id[:3]]
        cls = {"M12": M12, "M32": M32, "M52": M52}[case_id[:3]]
        ls = 0.9 if "aniso" not in case_id else np.array(LS3)
        return cls(v, ls), ConstantKernel(v) * Matern(ls, nu=nu), N_COLS
    if case_id == "RQ":
        return RQ(v, 1.1, 0.7), ConstantKernel(v) * RationalQuadratic(length_scale=1.1, alpha=0.7), N_COLS
    if case_id == "PER":
        return PER(v, 0.8, 1.3), ConstantKernel(v) * ExpSineSquared(0.8, 1.3), 1
    if case_id == "C":
        return C(v), ConstantKernel(v), N_COLS
    if case_id == "WN":
        return WN(v), WhiteKernel(v), N_COLS
    raise KeyError(case_id)


SKLEARN_IDS = ["SE", "SE-aniso", "M12", "M12-aniso", "M32", "M32-aniso", "M52", "M52-aniso", "RQ", "PER", "C", "WN"]


@pytest.mark.parametrize("case_id", SKLEARN_IDS)
def test_equals_sklearn_kernel(case_id):
    ours, ref, d = _sklearn_equivalent(case_id)
    X, Y = _X(7, d, seed=2), _X(4, d, seed=3)
    np.testing.assert_allclose(ours(X), ref(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours(X, Y), ref(X, Y), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours.diag(X), ref.diag(X), rtol=1e-12)
    # Same parametrisation (log variance, log lengthscales, ...): same theta and gradient.
    # sklearn orders RationalQuadratic's hyperparameters (alpha, length_scale).
    order = [0, 2, 1] if case_id == "RQ" else list(range(ref.n_dims))
    np.testing.assert_allclose(ours.theta, ref.theta[order], rtol=1e-12, atol=1e-14)
    _, G = ours(X, eval_gradient=True)
    _, G_ref = ref(X, eval_gradient=True)
    np.testing.assert_allclose(G, G_ref[:, :, order], rtol=1e-7, atol=1e-10)


def test_rq_anisotropic_by_hand():
    v, ls, alpha = 0.6, np.array(LS3), 2.5
    X, Y = _X(6, seed=4), _X(5, seed=5)
    r2 = (((X[:, None, :] - Y[None, :, :]) / ls) ** 2).sum(-1)
    expected = v * (1 + r2 / (2 * alpha)) ** (-alpha)
    np.testing.assert_allclose(RQ(v, ls, alpha)(X, Y), expected, rtol=1e-12)


def test_rq_tends_to_se_for_large_alpha():
    X = _X(6, seed=6)
    np.testing.assert_allclose(RQ(1.2, LS3, 1e8)(X), SE(1.2, LS3)(X), rtol=1e-5)


def test_se_docstring_values_by_hand():
    X = np.array([[0.0], [0.5]])
    K = SE(variance=2.0, lengthscale=0.5)(X)
    np.testing.assert_allclose(K, [[2.0, 2.0 * np.exp(-0.5)], [2.0 * np.exp(-0.5), 2.0]])


def test_matern_by_hand_one_dimensional():
    x = np.array([[0.0], [0.3], [1.7]])
    r = np.abs(x - x.T) / 0.8
    s3, s5 = np.sqrt(3) * r, np.sqrt(5) * r
    np.testing.assert_allclose(M12(2.0, 0.8)(x), 2.0 * np.exp(-r))
    np.testing.assert_allclose(M32(2.0, 0.8)(x), 2.0 * (1 + s3) * np.exp(-s3))
    np.testing.assert_allclose(M52(2.0, 0.8)(x), 2.0 * (1 + s5 + s5**2 / 3) * np.exp(-s5))


def test_periodic_by_hand_and_periodicity():
    x = np.array([[0.0], [0.4], [1.1]])
    v, ls, p = 1.4, 0.8, 1.3
    expected = v * np.exp(-2 * np.sin(np.pi * np.abs(x - x.T) / p) ** 2 / ls**2)
    k = PER(v, ls, p)
    np.testing.assert_allclose(k(x), expected, rtol=1e-12)
    # Shifting one argument by a whole number of periods leaves k unchanged.
    np.testing.assert_allclose(k(x, x + 3 * p), k(x), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("lengthscale", [0.05, 0.3, 0.8, 2.0, 30.0])
def test_centred_periodic_is_the_periodic_kernel_minus_its_mean_over_a_period(lengthscale):
    """Independent route: the periodic kernel minus its mean over a period (quadrature), rescaled to k(x, x) = s2."""
    v, p = 1.4, 1.3
    x = np.array([[0.0], [0.4], [1.1], [2.9]])
    periodic = PER(1.0, lengthscale, p)
    grid = np.linspace(0.0, p, 4001)[:-1, None]
    mean = periodic(np.zeros((1, 1)), grid).mean()  # trapezoid rule on a periodic integrand: spectral accuracy
    expected = v * (periodic(x) - mean) / (1.0 - mean)
    np.testing.assert_allclose(CPER(v, lengthscale, p)(x), expected, rtol=1e-9, atol=1e-12)


def test_centred_periodic_limits_and_positive_definiteness():
    p = 0.7
    x = np.linspace(0.0, 3.0, 40)[:, None]
    # a large lengthscale leaves the first harmonic: s2 cos(2 pi d / p)
    np.testing.assert_allclose(CPER(2.0, 1e3, p)(x), 2.0 * np.cos(2 * np.pi * (x - x.T) / p), atol=1e-5)
    for lengthscale in (0.05, 0.5, 5.0, 1e4):
        K = CPER(1.0, lengthscale, p)(x)
        assert np.all(np.isfinite(K))
        assert np.linalg.eigvalsh(K).min() > -1e-9
    # a draw has no constant part: its mean over a period is zero, so adding C is not redundant
    np.testing.assert_allclose(CPER(1.0, 0.5, p)(np.zeros((1, 1)), np.linspace(0, p, 500, endpoint=False)[:, None]).mean(),
                               0.0, atol=1e-12)


def test_linear_zero_offset_equals_dot_product():
    X, Y = _X(7, seed=7), _X(4, seed=8)
    ref = ConstantKernel(0.9) * DotProduct(sigma_0=0.0, sigma_0_bounds="fixed")
    k = LIN(0.9, 0.0)
    np.testing.assert_allclose(k(X), ref(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k(X, Y), ref(X, Y), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k.diag(X), ref.diag(X), rtol=1e-12)


@pytest.mark.parametrize("offset", [-0.4, 1.3, [0.3, -1.2, 0.5]])
def test_linear_with_offset_by_hand(offset):
    X, Y = _X(7, seed=9), _X(4, seed=10)
    c = np.broadcast_to(np.asarray(offset, float), (N_COLS,))
    expected = 0.9 * np.einsum("ik,jk->ij", X - c, Y - c)
    k = LIN(0.9, offset)
    np.testing.assert_allclose(k(X, Y), expected, rtol=1e-12, atol=1e-14)
    expected_xx = 0.9 * sum(np.outer(X[:, j] - c[j], X[:, j] - c[j]) for j in range(N_COLS))
    np.testing.assert_allclose(k(X), expected_xx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k.diag(X), np.diag(expected_xx), rtol=1e-12)


def test_linear_draw_crosses_zero_at_offset():
    # The prior variance of f at x = c is zero.
    k = LIN(2.0, -1.5)
    assert k(np.array([[-1.5]]))[0, 0] == 0.0


def test_constant_and_white_noise_values():
    X, Y = _X(5), _X(3)
    np.testing.assert_array_equal(C(2.5)(X), np.full((5, 5), 2.5))
    np.testing.assert_array_equal(C(2.5)(X, Y), np.full((5, 3), 2.5))
    np.testing.assert_array_equal(WN(0.3)(X), 0.3 * np.eye(5))
    np.testing.assert_array_equal(WN(0.3)(X, Y), np.zeros((5, 3)))
    # Cross-covariance is zero even when Y is X itself (as sklearn's WhiteKernel).
    np.testing.assert_array_equal(WN(0.3)(X, X), np.zeros((5, 5)))
    np.testing.assert_array_equal(WN(0.3)(X, X), WhiteKernel(0.3)(X, X))


@pytest.mark.parametrize("factory, d", CASES, ids=CASE_IDS)
def test_cross_covariance_shape_diag_and_symmetry(factory, d):
    k = factory()
    X, Y = _X(6, d, seed=11), _X(4, d, seed=12)
    K = k(X)
    assert K.shape == (6, 6)
    assert k(X, Y).shape == (6, 4)
    assert k(Y, X).shape == (4, 6)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-14)
    np.testing.assert_allclose(k.diag(X), np.diag(K), rtol=1e-12, atol=1e-14)
    assert k.diag(X).shape == (6,)
    if not isinstance(k, WhiteNoise):
        np.testing.assert_allclose(k(X, Y), k(Y, X).T, rtol=1e-12, atol=1e-14)
        # k(X, X) given explicitly agrees with k(X).
        np.testing.assert_allclose(k(X, X), K, rtol=1e-12, atol=1e-14)
    # Positive semi-definite.
    assert np.linalg.eigvalsh(K).min() > -1e-10


def test_one_dimensional_input_is_a_column():
    x = np.linspace(0, 1, 5)
    for k in (SE(1.0, 0.5), PER(1.0, 1.0, 0.7), LIN(1.0, 0.2), M32(1.0, 0.3)):
        np.testing.assert_allclose(k(x), k(x[:, None]))


def test_anisotropic_lengthscale_column_mismatch_raises():
    with pytest.raises(ValueError, match="lengthscale"):
        SE(1.0, [1.0, 2.0])(_X(4, 3))


def test_linear_offset_column_mismatch_raises():
    with pytest.raises(ValueError, match="offset"):
        LIN(1.0, [1.0, 2.0])(_X(4, 3))


# --------------------------------------------------------------------------
# 3. scikit-learn contract
# --------------------------------------------------------------------------

HP_NAMES = {
    SquaredExponential: ["variance", "lengthscale"],
    Matern12: ["variance", "lengthscale"],
    Matern32: ["variance", "lengthscale"],
    Matern52: ["variance", "lengthscale"],
    CatRQ: ["variance", "lengthscale", "alpha"],
    Periodic: ["variance", "lengthscale", "period"],
    CentredPeriodic: ["variance", "lengthscale", "period"],
    Linear: ["variance", "offset"],
    Constant: ["variance"],
    WhiteNoise: ["variance"],
}


def test_catalogue_aliases():
    assert (SE, RQ, PER, LIN, M12, M32, M52, C, WN) == (
        SquaredExponential,
        CatRQ,
        Periodic,
        Linear,
        Matern12,
        Matern32,
        Matern52,
        Constant,
        WhiteNoise,
    )
    assert [k.kind for k in (SE, RQ, PER, LIN, M12, M32, M52, C, WN)] == [
        "SE", "RQ", "PER", "LIN", "M12", "M32", "M52", "C", "WN",
    ]


@pytest.mark.parametrize("factory, d", CASES, ids=CASE_IDS)
def test_hyperparameter_names_and_order(factory, d):
    k = factory()
    names = [hp.name for hp in k.hyperparameters]
    assert names == HP_NAMES[type(k)]
    assert names[0] == "variance"
    assert all(not hp.fixed for hp in k.hyperparameters)
    for hp in k.hyperparameters:
        value = np.atleast_1d(getattr(k, hp.name))
        assert hp.n_elements == value.size


@pytest.mark.parametrize("factory, d", CASES, ids=CASE_IDS)
def test_is_stationary(factory, d):
    k = factory()
    assert k.is_stationary() is (not isinstance(k, Linear))


@pytest.mark.parametrize("factory, d", CASES, ids=CASE_IDS)
def test_theta_and_bounds_are_logs_of_values(factory, d):
    k = factory()
    expected_theta, expected_bounds = [], []
    for name in HP_NAMES[type(k)]:
        value = np.atleast_1d(np.asarray(getattr(k, name), float))
        low, high = getattr(k, name + "_bounds")
        if name == "offset":
            expected_theta.extend(value)
            expected_bounds.extend([(low, high)] * value.size)
        else:
            expected_theta.extend(np.log(value))
            expected_bounds.extend([(np.log(low), np.log(high))] * value.size)
    np.testing.assert_allclose(k.theta, expected_theta, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(k.bounds, expected_bounds, rtol=1e-14)


def test_theta_values_explicit():
    k = SE(variance=np.e**2, lengthscale=[1.0, np.e, np.e**-1])
    np.testing.assert_allclose(k.theta, [2.0, 0.0, 1.0, -1.0], atol=1e-14)
    k = SE(variance=2.0, lengthscale=3.0, variance_bounds=(0.1, 10.0), lengthscale_bounds=(0.5, 50.0))
    np.testing.assert_allclose(k.bounds, np.log([[0.1, 10.0], [0.5, 50.0]]))


def test_linear_offset_is_raw_and_may_be_negative():
    k = LIN(variance=np.e, offset=-3.0, offset_bounds=(-10.0, 5.0))
    np.testing.assert_allclose(k.theta, [1.0, -3.0])
    np.testing.assert_allclose(k.bounds, [[np.log(1e-5), np.log(1e5)], [-10.0, 5.0]])
    k2 = k.clone_with_theta([0.0, -7.5])
    assert k2.offset == pytest.approx(-7.5)
    assert k2.variance == pytest.approx(1.0)
    x = np.array([[-7.5], [0.0]])
    assert k2(x)[0, 0] == pytest.approx(0.0)
    assert k2(x)[1, 1] == pytest.approx(7.5**2)

    kv = LIN(1.0, [0.3, -1.2, 0.5])
    np.testing.assert_allclose(kv.theta[1:], [0.3, -1.2, 0.5])
    kv.theta = [0.0, -1.0, -2.0, -3.0]
    np.testing.assert_allclose(kv.offset, [-1.0, -2.0, -3.0])


@pytest.mark.parametrize("factory, d", CASES, ids=CASE_IDS)
def test_clone_with_theta_round_trip(factory, d):
    k = factory()
    theta0 = k.theta.copy()
    rng = np.random.default_rng(13)
    new_theta = theta0 + rng.uniform(-0.5, 0.5, size=theta0.shape)
    k2 = k.clone_with_theta(new_theta)
    assert type(k2) is type(k)
    np.testing.assert_allclose(k2.theta, new_theta, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(k.theta, theta0)  # original untouched
    # Values are exp(theta) except the offset.
    i = 0
    for hp in k2.hyperparameters:
        chunk = new_theta[i : i + hp.n_elements]
        expected = chunk if hp.name == "offset" else np.exp(chunk)
        np.testing.assert_allclose(np.atleast_1d(getattr(k2, hp.name)), expected, rtol=1e-12)
        i += hp.n_elements
    X = _X(5, d)
    assert not np.allclose(k2(X), k(X))


@pytest.mark.parametrize("factory, d", CASES, ids=CASE_IDS)
def test_theta_setter_wrong_length_raises(factory, d):
    k = factory()
    with pytest.raises(ValueError):
        k.theta = np.zeros(k.n_dims + 1)


@pytest.mark.parametrize("factory, d", CASES, ids=CASE_IDS)
def test_sklearn_clone_and_pickle_round_trip(factory, d):
    k = factory()
    X = _X(5, d)
    for k2 in (clone(k), pickle.loads(pickle.dumps(k))):
        assert k2 is not k
        assert type(k2) is type(k)
        assert k2 == k
        np.testing.assert_array_equal(k2.theta, k.theta)
        np.testing.assert_array_equal(k2.bounds, k.bounds)
        np.testing.assert_array_equal(k2(X), k(X))
    # Different hyperparameters compare unequal.
    assert k.clone_with_theta(k.theta + 0.1) != k


def test_get_params_and_set_params():
    k = RQ(variance=0.6, lengthscale=LS3, alpha=0.7, alpha_bounds=(0.1, 10.0))
    params = k.get_params()
    assert set(params) == {
        "variance",
        "lengthscale",
        "alpha",
        "variance_bounds",
        "lengthscale_bounds",
        "alpha_bounds",
    }
    assert params["variance"] == 0.6
    assert params["lengthscale"] == LS3
    assert params["alpha_bounds"] == (0.1, 10.0)

    X = _X(5)
    k.set_params(alpha=3.0, lengthscale=2.0)
    assert k.alpha == 3.0 and k.lengthscale == 2.0
    np.testing.assert_allclose(k(X), RQ(0.6, 2.0, 3.0)(X))
    assert k.n_dims == 3
    with pytest.raises(ValueError):
        k.set_params(period=1.0)

    assert set(PER().get_params()) == {
        "variance", "lengthscale", "period", "variance_bounds", "lengthscale_bounds", "period_bounds",
    }
    assert set(LIN().get_params()) == {"variance", "offset", "variance_bounds", "offset_bounds"}
    assert set(C().get_params()) == {"variance", "variance_bounds"}
    assert set(WN().get_params()) == {"variance", "variance_bounds"}
    assert set(M52().get_params()) == {"variance", "lengthscale", "variance_bounds", "lengthscale_bounds"}


def test_set_params_fixed_bounds_changes_n_dims():
    k = PER(1.0, 1.0, 2.0)
    assert k.n_dims == 3
    k.set_params(period_bounds="fixed")
    assert k.n_dims == 2
    assert [hp.name for hp in k.hyperparameters if hp.fixed] == ["period"]


def test_repr_mentions_values():
    assert repr(SE(2.0, 0.5)) == "SquaredExponential(variance=2, lengthscale=0.5)"
    assert "lengthscale=[2, 3]" in repr(SE(1.0, np.array([2.0, 3.0])))


@pytest.mark.parametrize(
    "factory, expected",
    [(lambda: SE(1.0, [2.0]), "lengthscale=2"), (lambda: LIN(1.0, [0.5]), "offset=0.5")],
    ids=["SE-one-element-lengthscale", "LIN-one-element-offset"],
)
def test_repr_with_one_element_vector(factory, expected):
    # A one-element lengthscale/offset is valid input (one per column of a 1-column X):
    # the kernel evaluates fine, and so must its repr.
    kernel = factory()
    x = np.linspace(0, 1, 4)[:, None]
    assert kernel(x).shape == (4, 4)
    assert expected in repr(kernel)


def test_periodic_on_two_columns_raises_helpful_error():
    X = _X(5, 2)
    with pytest.raises(ValueError, match="one column") as info:
        PER()(X)
    assert "ActiveColumns" in str(info.value)
    with pytest.raises(ValueError, match="one column"):
        PER()(_X(5, 1), X)


def _lml_by_hand(K, y):
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return -0.5 * y @ a - np.log(np.diag(L)).sum() - 0.5 * len(y) * np.log(2 * np.pi)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "kernel",
    [
        SE() + WN(0.1),
        M52() + WN(0.1),
        RQ() + WN(0.1),
        PER(1.0, 1.0, 2.0, period_bounds=(0.5, 5.0)) * SE(1.0, 3.0) + WN(0.1),
        LIN(1.0, 0.0) + C(1.0) + WN(0.1),
    ],
    ids=["SE", "M52", "RQ", "PERxSE", "LIN+C"],
)
def test_inside_gaussian_process_regressor(kernel):
    rng = np.random.default_rng(14)
    X = np.sort(rng.uniform(0, 6, 30))[:, None]
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 0] + 0.1 * rng.standard_normal(30)
    alpha = 1e-6
    gpr = GaussianProcessRegressor(kernel=kernel, alpha=alpha, random_state=0).fit(X, y)
    kernel_ = gpr.kernel_
    assert np.all(np.isfinite(kernel_.theta))
    # The fitted theta lies in the bounds.
    assert np.all(kernel_.theta >= kernel_.bounds[:, 0] - 1e-8)
    assert np.all(kernel_.theta <= kernel_.bounds[:, 1] + 1e-8)
    K = kernel_(X) + alpha * np.eye(30)
    lml = _lml_by_hand(K, y)
    assert gpr.log_marginal_likelihood_value_ == pytest.approx(lml, rel=1e-7, abs=1e-7)
    # The optimiser improved on the initial hyperparameters.
    assert gpr.log_marginal_likelihood_value_ >= gpr.log_marginal_likelihood(kernel.theta) - 1e-8

    Xs = np.linspace(0, 6, 11)[:, None]
    mean, std = gpr.predict(Xs, return_std=True)
    Ks = kernel_(Xs, X)
    expected_mean = Ks @ np.linalg.solve(K, y)
    expected_var = kernel_.diag(Xs) - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T))
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(std, np.sqrt(np.clip(expected_var, 0, None)), rtol=1e-5, atol=1e-5)
