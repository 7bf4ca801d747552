"""GP regression engine: likelihood, gradient contractions, jitter, optimiser, posterior."""

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import rosen, rosen_der
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as sk

import skgpsearch._engine._kernel_tree as kt
from skgpsearch._engine._kernel_tree import KernelTree, _PeriodicLeaf
from skgpsearch._engine._linalg import NumericalError, cholesky_inverse, cholesky_lower, jittered_cholesky
from skgpsearch._engine._periodogram import dominant_period
from skgpsearch._engine._exact import GPPosterior, RegressionObjective
from skgpsearch._engine._optimizer import StallRule, StartRace, optimize_hyperparameters, random_starts
from skgpsearch.grammar import parse
from skgpsearch.kernels import ActiveColumns, DataSummary, to_kernel

from strategies import expressions

rng = np.random.default_rng(7)
X = rng.uniform(-2, 2, size=(40, 4))
y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=40)
SUMMARY = DataSummary.from_data(X, y)

STRUCTURES = [
    "SE(0)",
    "SE(0) + M32(1) + RQ(2) + PER(0) + LIN(3)",
    "SE(0) * PER(0) + LIN(1) * SE(2)",
    "(SE(0) + PER(1)) * (LIN(0) + M52(2, 3))",
    "M12(0, 1) * RQ(2) + C + WN",
    "LIN(0, 1) * SE(2) + LIN(3)",
    "CPER(0) * LIN(1) + C + CPER(2) * SE(0)",
    "SE(0) * SE(1) * SE(2) * SE(3)",  # one node (an ARD kernel), see _SquaredExponentialProduct
    "SE(0) * SE(1, 2) + SE(3) * SE(0) * SE(2) + PER(1) * SE(2)",
]


def random_theta(kernel, seed):
    r = np.random.default_rng(seed)
    bounds = kernel.bounds
    theta = kernel.theta + r.normal(scale=0.3, size=kernel.n_dims)
    return np.clip(theta, bounds[:, 0] + 1e-3, bounds[:, 1] - 1e-3)


@pytest.mark.parametrize("text", STRUCTURES)
def test_likelihood_and_gradient_match_sklearn(text):
    """Same value and gradient as scikit-learn's GaussianProcessRegressor (independent code)."""
    kernel = to_kernel(parse(text), summary=SUMMARY)
    kernel.theta = random_theta(kernel, 1)
    theta = np.append(kernel.theta, math.log(0.05))
    ours, our_grad = RegressionObjective(kernel, X, y, (1e-6, 10.0))(theta, eval_gradient=True)
    reference = GaussianProcessRegressor(kernel + sk.WhiteKernel(0.05), optimizer=None, alpha=0.0).fit(X, y)
    value, grad = reference.log_marginal_likelihood(theta, eval_gradient=True)
    assert ours == pytest.approx(value, rel=1e-8)
    np.testing.assert_allclose(our_grad, grad, rtol=1e-7, atol=1e-8)


@settings(max_examples=40, deadline=None)
@given(expressions(max_leaves=5), st.integers(0, 1000))
def test_gradient_matches_finite_differences(expr, seed):
    kernel = to_kernel(expr, summary=SUMMARY)
    objective = RegressionObjective(kernel, X, y, (1e-6, 10.0))
    theta = np.append(random_theta(kernel, seed), math.log(0.2))
    value, grad = objective(theta, eval_gradient=True)
    h = 1e-6
    numeric = np.array(
        [(objective(theta + h * e) - objective(theta - h * e)) / (2 * h) for e in np.eye(theta.size)]
    )
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5 * max(1.0, abs(value)))


@settings(max_examples=40, deadline=None)
@given(expressions(max_leaves=5), st.integers(0, 1000))
def test_tree_matrix_and_contractions_match_sklearn_tensor(expr, seed):
    kernel = to_kernel(expr, summary=SUMMARY)
    kernel.theta = random_theta(kernel, seed)
    tree = KernelTree(kernel, X)
    K, dK = kernel(X, eval_gradient=True)
    np.testing.assert_allclose(tree.matrix(), K, rtol=1e-12, atol=1e-12)
    G = np.random.default_rng(seed).normal(size=K.shape)  # not symmetric on purpose
    expected = np.einsum("ij,ijk->k", G, dK)
    np.testing.assert_allclose(tree.contract(G), expected, rtol=1e-9, atol=1e-9)


# gridded inputs: a monthly time axis (column 0, as the series of the extrapolation benchmark)
# and integer-valued columns 1, 2; column 3 is continuous and gets no lag storage
GRID_X = np.column_stack(
    [1949.0 + np.arange(48) / 12.0, rng.integers(0, 4, 48), rng.integers(0, 3, 48), rng.normal(size=48)]
).astype(float)
GRID_SUMMARY = DataSummary.from_data(GRID_X, rng.normal(size=48))


def test_lag_storage_only_where_distances_repeat():
    tree = KernelTree(to_kernel(parse("SE(0) * PER(0) + RQ(1) + SE(3)"), summary=GRID_SUMMARY), GRID_X)
    lags = tree.lags((0,))
    assert lags is not None and lags.m == 47  # a regular grid of 48 points has 47 non-zero lags
    np.testing.assert_allclose(np.sqrt(lags.d2), np.arange(1, 48) / 12.0, rtol=1e-9)
    assert tree.lags((3,)) is None  # continuous: every pair has its own distance
    assert tree.root.lags is None  # the sum mixes columns 0, 1 and 3


def test_lag_storage_of_a_leaf_alone_only_for_few_lags(monkeypatch):
    """A distance-based leaf among other columns (one SE per column of a table) or inside a change operator
    takes lag storage only for at most LONE_LEAF_MOST_LAGS lags (or as many as rows): gathering its values and
    reducing its contractions cost about as much as its exponential on every pair once they outgrow the
    cache. Either storage gives the same covariance and contractions."""
    quantised = np.round(GRID_X[:, 3] / 0.02) * 0.02  # continuous values in steps of 0.02: more lags than rows
    X = np.column_stack([GRID_X[:, :3], quantised])
    kernel = to_kernel(parse("SE(1) + SE(3) + SE(0) * PER(0) + CW(3, RQ(3), C)"), summary=GRID_SUMMARY)
    kernel.theta = random_theta(kernel, 3)
    assert 48 < KernelTree(kernel, X).lags((3,)).m <= 48 * 47 // 8  # more lags than rows
    G = np.random.default_rng(3).normal(size=(48, 48))
    trees = {}
    for most in (kt.LONE_LEAF_MOST_LAGS, 10):
        monkeypatch.setattr(kt, "LONE_LEAF_MOST_LAGS", most)
        kt._lag_cache.clear()
        tree = trees[most] = KernelTree(kernel, X)
        lone_grid, lone_quantised, se, per, rq, _, _ = tree.root.leaves()
        assert isinstance(per, _PeriodicLeaf)
        assert se.lags is not None and se.lags is per.lags  # the product is on column 0 alone
        assert lone_grid.lags is not None and lone_grid.lags.m == 4  # values 0-3: a grid of distances 0-3
        few = most >= tree.lags((3,)).m
        assert (lone_quantised.lags is not None) == few and (rq.lags is not None) == few
        if not few:
            assert lone_quantised.d2.shape == rq.d2.shape == (48 * 47 // 2,)
    np.testing.assert_allclose(trees[10].matrix(), trees[kt.LONE_LEAF_MOST_LAGS].matrix(), rtol=1e-12)
    np.testing.assert_allclose(trees[10].contract(G), trees[kt.LONE_LEAF_MOST_LAGS].contract(G), rtol=1e-9)
    alone = KernelTree(to_kernel(parse("SE(3)"), summary=GRID_SUMMARY), X)
    assert alone.root.lags is not None  # the root gathers once either way


def test_lag_detection_with_a_bound_decides_as_counting_every_pair_would():
    """With a bound on the lags, the distinct distances of the first pairs often say "too many" at once (a
    continuous column); where they do not (rows that repeat one value first), every pair is counted. Either
    way lags come back exactly when the distinct distances of all pairs, counted here, are few enough."""
    rng = np.random.default_rng(5)
    n = 300
    columns = {
        "continuous": rng.normal(size=n),
        "grid": np.arange(n) % 40 / 7.0,
        "repeated first": np.concatenate([np.zeros(200), rng.normal(size=n - 200)]),
    }
    for name, column in columns.items():
        d2 = (column[:, None] - column[None, :])[np.triu_indices(n, 1)] ** 2
        width = kt.LAG_RESOLUTION_ULPS * np.finfo(float).eps * max(np.abs(column).max(), np.sqrt(d2.max()))
        distinct = np.unique(np.round(np.sqrt(d2) / width)).size
        for most in (None, 30, 39, 40, 1000, 5000):
            limit = kt.LAG_SHARE * d2.size if most is None else min(kt.LAG_SHARE * d2.size, most)
            lags, count = kt.Lags.from_squared_distances(d2, most, np.abs(column).max())
            assert (lags is not None) == (distinct <= limit), (name, most)
            assert count <= distinct and (lags is None or lags.m == distinct == count)
            if lags is None:
                assert count > limit
    # two trees on the continuous column: a lone leaf's bound does not stop a shared one from detecting
    X = np.column_stack([columns["grid"], columns["continuous"]])
    kt._lag_cache.clear()
    summary = DataSummary.from_data(X, rng.normal(size=n))
    lone = KernelTree(to_kernel(parse("SE(0) + SE(1)"), summary=summary), X)
    assert lone.lags((0,), most=39) is None and lone.lags((0,), most=40).m == 40
    assert lone.lags((1,), most=100) is None and lone.lags((1,)) is None


@settings(max_examples=40, deadline=None)
@given(expressions(max_leaves=6), st.integers(0, 1000))
def test_kernel_matrix_is_the_kernels_own_matrix(expr, seed):
    """``kernel_matrix`` takes the tree's fused SE products where a structure has them, with the same values."""
    kernel = to_kernel(expr, summary=GRID_SUMMARY)
    kernel.theta = random_theta(kernel, seed)
    np.testing.assert_allclose(kt.kernel_matrix(kernel, GRID_X), kernel(GRID_X), rtol=1e-10, atol=1e-12)


def test_kernel_matrix_uses_the_tree_only_for_a_product_of_se_kernels(monkeypatch):
    built = []
    monkeypatch.setattr(kt.KernelTree, "matrix", lambda self: built.append(self) or self.kernel(self.X))
    for text, fused in [("SE(0) * SE(1) * SE(3)", True), ("RQ(1) + CP(0, SE(0) * SE(1) * SE(3), C)", True),
                        ("SE(0) * SE(1)", False), ("SE(0) + SE(1) + SE(3)", False), ("SE(0) * SE(1) * PER(0)", False)]:
        built.clear()
        kt.kernel_matrix(to_kernel(parse(text), summary=GRID_SUMMARY), GRID_X)
        assert bool(built) == fused, text


def test_trees_on_equal_data_share_one_lag_detection_and_it_is_read_only():
    """Trees of other candidates on a copy of the rows reuse the detection; other rows get their own."""
    first = KernelTree(to_kernel(parse("SE(0) + RQ(1)"), summary=GRID_SUMMARY), GRID_X)
    again = KernelTree(to_kernel(parse("PER(0) * SE(0)"), summary=GRID_SUMMARY), GRID_X.copy())
    assert again.lags((0,)) is first.lags((0,)) and again.lags((1,)) is first.lags((1,))
    assert again.lags((3,)) is None
    with pytest.raises(ValueError):
        first.lags((0,)).d2[0] = 0.0
    shorter = KernelTree(to_kernel(parse("SE(0)"), summary=GRID_SUMMARY), GRID_X[:40])
    assert shorter.lags((0,)) is not first.lags((0,)) and shorter.lags((0,)).m == 39
    scaled = GRID_X.copy()
    scaled[:, 0] *= 2.0
    other = KernelTree(to_kernel(parse("SE(0)"), summary=GRID_SUMMARY), scaled)
    np.testing.assert_allclose(np.sqrt(other.lags((0,)).d2), np.arange(1, 48) / 6.0, rtol=1e-9)


@settings(max_examples=40, deadline=None)
@given(expressions(max_leaves=5), st.integers(0, 1000))
def test_lag_storage_matches_sklearn_tensor_on_gridded_inputs(expr, seed):
    """Per-lag evaluation and per-lag reduced contractions give scikit-learn's matrix and tensor."""
    kernel = to_kernel(expr, summary=GRID_SUMMARY)
    kernel.theta = random_theta(kernel, seed)
    tree = KernelTree(kernel, GRID_X)
    K, dK = kernel(GRID_X, eval_gradient=True)
    # distances of a gridded axis agree to rounding only, hence the looser tolerance than above
    np.testing.assert_allclose(tree.matrix(), K, rtol=1e-10, atol=1e-10 * np.abs(K).max())
    G = np.random.default_rng(seed).normal(size=K.shape)
    expected = np.einsum("ij,ijk->k", G, dK)
    scale = np.abs(G).sum() * max(np.abs(dK).max(), 1.0)
    np.testing.assert_allclose(tree.contract(G), expected, rtol=1e-8, atol=1e-11 * scale)


def test_lags_keep_distances_apart_that_differ_beyond_the_inputs_rounding():
    """Monthly decimal years rounded to 6 decimals over 33 years: steps of 0.083333 and 0.083334 are
    distinct distances (a bin relative to the largest distance merged them: K off by 9e-5 relative)."""
    X = np.round(1990 + np.arange(400) / 12, 6)[:, np.newaxis]
    kernel = to_kernel(parse("SE(0)"), summary=DataSummary.from_data(X, np.zeros(400)))
    kernel.theta = np.log([1.0, 0.03])
    tree = KernelTree(kernel, X)
    assert tree.root.lags is not None
    np.testing.assert_allclose(tree.matrix(), kernel(X), rtol=1e-10, atol=1e-14)
    y = np.sin(2 * np.pi * X[:, 0])
    theta = np.append(kernel.theta, math.log(1e-3))
    K = kernel(X) + 1e-3 * np.eye(400)
    expected = -0.5 * y @ np.linalg.solve(K, y) - 0.5 * np.linalg.slogdet(K)[1] - 200 * math.log(2 * math.pi)
    assert abs(RegressionObjective(kernel, X, y, (1e-6, 1.0))(theta) - expected) < 1e-8


def test_a_product_of_se_kernels_on_a_column_of_many_lengthscales_is_accurate():
    """Two clusters 1e5 lengthscales apart: r² from |s_a|² + |s_b|² − 2 s_a·s_b lost 1e-6 of K's entries
    near 1; the node takes pairwise differences there (K and every lengthscale's contraction)."""
    rng = np.random.default_rng(0)
    column = np.concatenate([rng.uniform(0, 5, 100), 1e5 + rng.uniform(0, 5, 100)])
    X = np.column_stack([column, rng.normal(size=200), rng.normal(size=200)])
    kernel = to_kernel(parse("SE(0) * SE(1) * SE(2)"), summary=DataSummary.from_data(X, np.zeros(200)))
    kernel.theta = np.zeros(kernel.n_dims)
    tree = KernelTree(kernel, X, use_lags=False)
    K, dK = kernel(X, eval_gradient=True)
    near = K > 1e-3
    assert np.abs(tree.matrix() - K)[near].max() < 1e-9
    G = rng.normal(size=K.shape)
    G += G.T
    np.testing.assert_allclose(tree.contract(G), np.einsum("ij,ijk->k", G, dK), rtol=1e-9)


@pytest.mark.parametrize("text", ["CPER(0)", "CPER(0) * SE(0) + C", "PER(0) + CPER(1) * LIN(0)"])
def test_centred_periodic_on_lags_matches_its_kernel(text):
    kernel = to_kernel(parse(text), summary=GRID_SUMMARY)
    kernel.theta = random_theta(kernel, 3)
    tree = KernelTree(kernel, GRID_X)
    K, dK = kernel(GRID_X, eval_gradient=True)
    np.testing.assert_allclose(tree.matrix(), K, rtol=1e-10, atol=1e-10 * np.abs(K).max())
    G = np.random.default_rng(3).normal(size=K.shape)
    np.testing.assert_allclose(tree.contract(G), np.einsum("ij,ijk->k", G, dK), rtol=1e-8,
                               atol=1e-11 * np.abs(G).sum() * max(np.abs(dK).max(), 1.0))


def test_a_product_of_lag_nodes_stays_on_lags():
    kernel = to_kernel(parse("(SE(0) + PER(0)) * RQ(0) + LIN(0)"), summary=GRID_SUMMARY)
    tree = KernelTree(kernel, GRID_X)
    np.testing.assert_allclose(tree.matrix(), kernel(GRID_X), rtol=1e-10)
    product = tree.root.left if tree.root.left.lags is not None else tree.root.right
    assert product.lags is tree.lags((0,)) and product.k.shape == (47,)
    assert tree.root.lags is None  # LIN is not a function of the lag


@pytest.mark.parametrize("text", ["SE(0) + SE(1) + SE(2)", "SE(0) * PER(1) + SE(2) + RQ(3)"])
def test_a_tree_evaluated_again_matches_the_kernel_at_each_new_value(text):
    """Leaves reuse their values' storage from one evaluation to the next and take the SE lengthscale's
    contraction from the stored distances (or from the capped r² at a lengthscale short enough to underflow):
    each evaluation of one tree matches the scikit-learn kernel (independent code) at its own values."""
    kernel = to_kernel(parse(text), summary=SUMMARY)
    tree = KernelTree(kernel, X)
    G = np.random.default_rng(1).normal(size=(X.shape[0], X.shape[0]))
    short = kernel.theta.copy()
    short[[i for i, hp in enumerate(kernel.hyperparameters) if "lengthscale" in hp.name][0]] = math.log(1e-3)
    for theta in (kernel.theta, random_theta(kernel, 2), short, random_theta(kernel, 3)):
        tree.set_theta(theta)
        at = kernel.clone_with_theta(theta)
        K, dK = at(X, eval_gradient=True)
        np.testing.assert_allclose(tree.matrix(), K, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(tree.contract(G), np.einsum("ij,ijk->k", G, dK), rtol=1e-9, atol=1e-9)


def test_generic_scikit_learn_leaves_and_anisotropic_kernels():
    kernel = (
        ActiveColumns(sk.RBF([1.0, 2.0]), [0, 1]) * sk.ConstantKernel(2.0)
        + sk.Matern(1.3, nu=1.5) ** 2
        + ActiveColumns(sk.DotProduct(0.5), [3])
    )
    tree = KernelTree(kernel, X)
    K, dK = kernel(X, eval_gradient=True)
    np.testing.assert_allclose(tree.matrix(), K, rtol=1e-12)
    G = np.random.default_rng(0).normal(size=K.shape)
    np.testing.assert_allclose(tree.contract(G), np.einsum("ij,ijk->k", G, dK), rtol=1e-9)
    tree.set_theta(kernel.theta + 0.1)
    np.testing.assert_allclose(tree.matrix(), kernel.clone_with_theta(kernel.theta + 0.1)(X), rtol=1e-12)


def test_jittered_cholesky():
    v = np.arange(1.0, 6.0)
    singular = np.outer(v, v)  # rank one: needs jitter
    L, jitter = jittered_cholesky(singular)
    assert jitter > 0
    np.testing.assert_allclose(L @ L.T, singular + jitter * np.eye(5), atol=1e-10)
    L, jitter = jittered_cholesky(np.eye(3))
    assert jitter == 0.0
    with pytest.raises(NumericalError, match="non-finite"):
        jittered_cholesky(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(NumericalError, match="not positive definite"):
        jittered_cholesky(np.array([[1.0, 0.0], [0.0, -5.0]]))


@pytest.mark.parametrize("order", ["C", "F"])
def test_jittered_cholesky_in_place_needs_the_same_jitter_as_on_a_copy(order):
    # the in-place attempt fails without jitter; the retries start from the matrix it had overwritten
    rng = np.random.default_rng(1)
    V = rng.normal(size=(40, 3))
    # rank 3 less a little: indefinite under every BLAS (with a zero diagonal shift, rounding let some builds
    # factor it without jitter)
    singular = np.array(V @ V.T - 1e-9 * np.eye(40), order=order)
    L, jitter = jittered_cholesky(singular.copy(order="K"))
    L_in_place, jitter_in_place = jittered_cholesky(singular.copy(order="K"), overwrite_k=True)
    assert jitter > 0 and jitter_in_place == jitter
    np.testing.assert_array_equal(L_in_place, L)
    np.testing.assert_allclose(L @ L.T, singular + jitter * np.eye(40), atol=1e-10)
    # unclean: the lower triangle is the same factor
    L_unclean, _ = jittered_cholesky(singular.copy(order="K"), overwrite_k=True, clean=False)
    np.testing.assert_array_equal(np.tril(L_unclean), L)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_cholesky_lower_is_numpys_factor_in_fortran_order_and_clean(order, overwrite):
    rng = np.random.default_rng(0)
    G = rng.normal(size=(60, 70))
    A = np.array(G @ G.T / 70 + 0.1 * np.eye(60), order=order)
    original = A.copy()
    L, info = cholesky_lower(A, overwrite_a=overwrite)
    assert info == 0 and L.flags.f_contiguous
    np.testing.assert_allclose(L, np.linalg.cholesky(original), rtol=1e-12, atol=1e-12)  # upper triangle zero
    assert np.array_equal(np.triu(L, 1), np.zeros_like(L))
    if not overwrite:
        assert np.array_equal(A, original)
    # the inverse from it, also when it overwrites the factor
    np.testing.assert_allclose(np.tril(cholesky_inverse(L.copy(order="F"), overwrite_l=True)),
                               np.tril(np.linalg.inv(original)), rtol=1e-9, atol=1e-9)
    # not positive definite: LAPACK's info says where it stopped
    B = np.array(original, order=order)
    B[5, 5] = -1.0
    assert cholesky_lower(B)[1] > 0


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_cholesky_lower_sets_tiny_entries_to_zero_within_rounding(order, overwrite):
    # an SE kernel on points far apart in lengthscales: a third of the entries in (0, 1e-150), whose products
    # in the factorisation would be subnormal
    rng = np.random.default_rng(3)
    X = 12.0 * rng.normal(size=(200, 6))
    A = np.array(np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1)) + np.eye(200), order=order)
    assert np.mean((A > 0) & (A < 1e-150)) > 0.2
    original = A.copy()
    reference = np.linalg.cholesky(original)  # numpy's factor of the given matrix, entries kept
    L, info = cholesky_lower(A, overwrite_a=overwrite)
    assert info == 0
    # the factor of the given matrix to rounding
    np.testing.assert_allclose(L, reference, rtol=0, atol=1e-14)
    # no subnormal entry in the factor (without the flush: a share of them, each computed in microcode)
    assert not np.any((L != 0) & (np.abs(L) < np.finfo(np.float64).tiny))
    assert np.any((reference != 0) & (np.abs(reference) < 1e-250))
    if not overwrite:
        assert np.array_equal(A, original)


def test_singular_regions_do_not_abort_the_optimiser():
    """A start whose covariance is singular is reported; the others are optimised."""
    Xd = np.repeat(np.linspace(0, 1, 10), 3)[:, None]  # duplicated inputs
    yd = np.sin(3 * Xd[:, 0])
    kernel = to_kernel(parse("SE(0)"), Xd, yd)
    objective = RegressionObjective(kernel, Xd, yd, (1e-12, 10.0))
    bad = np.array([math.log(1e3), math.log(10.0), math.log(1e-12)])  # huge, flat, noiseless
    good = np.append(kernel.theta, math.log(0.1))
    theta, value, failures = optimize_hyperparameters(objective, [good, bad])
    assert theta is not None and np.isfinite(value)


def _sine_problem():
    """(X, y, an SE(0) kernel, its objective) of 60 noisy points of a sine."""
    X1 = np.linspace(0, 5, 60)[:, None]
    y1 = np.sin(2 * X1[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=60)
    kernel = to_kernel(parse("SE(0)"), X1, y1)
    return X1, y1, kernel, RegressionObjective(kernel, X1, y1, (1e-6, 10.0))


def test_optimiser_reaches_at_least_sklearns_optimum():
    X1, y1, kernel, objective = _sine_problem()
    start = np.append(kernel.theta, math.log(0.1))
    theta, value, _ = optimize_hyperparameters(objective, [start])
    reference = GaussianProcessRegressor(
        kernel + sk.WhiteKernel(0.1, (1e-6, 10.0)), alpha=0.0, random_state=0
    ).fit(X1, y1)
    assert value >= reference.log_marginal_likelihood_value_ - 1e-6
    # at an interior optimum the gradient vanishes
    _, grad = objective(theta, eval_gradient=True)
    interior = (theta > objective.bounds[:, 0] + 1e-6) & (theta < objective.bounds[:, 1] - 1e-6)
    assert np.all(np.abs(grad[interior]) < 1e-3)


class _SlowObjective:
    """A RegressionObjective whose every evaluation takes at least ``seconds``."""

    def __init__(self, objective, seconds):
        self.objective, self.seconds = objective, seconds
        self.bounds = objective.bounds

    @property
    def n_evaluations(self):
        return self.objective.n_evaluations

    def __call__(self, theta, eval_gradient=False):
        time.sleep(self.seconds)
        return self.objective(theta, eval_gradient)


def test_a_deadline_stops_the_optimisation_at_its_best_point():
    X1, y1, kernel, objective = _sine_problem()
    start = np.append(kernel.theta, math.log(0.5))
    _, converged, _ = optimize_hyperparameters(objective, [start])
    start_value = objective(start)
    # a deadline already passed: the first start's own point, one evaluation, and no other start begun
    slow = _SlowObjective(RegressionObjective(kernel, X1, y1, (1e-6, 10.0)), 0.0)
    theta, value, _ = optimize_hyperparameters(slow, [start, start + 1.0], deadline=time.time() - 1.0)
    assert np.array_equal(theta, start) and value == pytest.approx(start_value)
    assert slow.n_evaluations == 1
    # a deadline mid-run: it ends near the deadline, at a point better than the start, short of the optimum
    slow = _SlowObjective(RegressionObjective(kernel, X1, y1, (1e-6, 10.0)), 0.02)
    began = time.time()
    theta, value, _ = optimize_hyperparameters(slow, [start] * 3, deadline=began + 0.2)
    assert time.time() - began < 0.2 + 0.1
    assert start_value < value < converged - 1e-3
    assert value == pytest.approx(objective(theta))


class _NegativeRosenbrock:
    """−Rosenbrock in 6 dimensions (a curved valley L-BFGS-B crawls along), recording every value."""

    bounds = np.tile([-5.0, 5.0], (6, 1))

    def __init__(self):
        self.values = []

    @property
    def n_evaluations(self):
        return len(self.values)

    def __call__(self, theta, eval_gradient=False):
        value = -float(rosen(theta))
        self.values.append(value)
        return (value, -rosen_der(theta)) if eval_gradient else value


def test_a_stall_rule_ends_a_run_at_the_first_window_that_gained_too_little():
    start = np.array([-1.2, 1.0, -1.2, 1.0, -1.2, 1.0])
    converged = _NegativeRosenbrock()
    _, converged_value, _ = optimize_hyperparameters(converged, [start])
    rule = StallRule(window=5, nats=1e-3)
    stalled = _NegativeRosenbrock()
    theta, value, _ = optimize_hyperparameters(stalled, [start], stall=rule)
    assert stalled.n_evaluations < converged.n_evaluations
    # it returns the best point it evaluated ...
    assert value == pytest.approx(-rosen(theta)) and value == max(stalled.values)
    assert value < converged_value
    # ... stopping at the first evaluation whose last `window` evaluations raised the best value by < `nats`
    best = np.maximum.accumulate(stalled.values)
    gains = best[rule.window:] - best[:-rule.window]
    assert gains[-1] < rule.nats and np.all(gains[:-1] >= rule.nats)


def test_a_start_race_stops_a_later_start_that_trails_the_best_before_it():
    near, far = np.full(6, 0.9), np.array([-4.0, 4.0, -4.0, 4.0, -4.0, 4.0])
    race = StartRace(window=5, nats=1.0)
    plain, raced = _NegativeRosenbrock(), _NegativeRosenbrock()
    _, plain_value, _ = optimize_hyperparameters(plain, [near, far])
    theta, value, _ = optimize_hyperparameters(raced, [near, far], race=race)
    # the first start reaches the optimum (0) either way; the far start's run is cut short
    assert value == pytest.approx(plain_value) and value > -1e-6
    assert raced.n_evaluations < plain.n_evaluations
    alone = _NegativeRosenbrock()
    optimize_hyperparameters(alone, [near])
    second = np.maximum.accumulate(raced.values[alone.n_evaluations:])
    # ... once its optimiser has made `window` evaluations (after the start's own) and still trails by `nats`
    assert second.size == 1 + race.window and second[-1] < value - race.nats


def test_a_start_race_keeps_a_later_start_that_leads():
    far, near = np.array([-4.0, 4.0, -4.0, 4.0, -4.0, 4.0]), np.full(6, 0.9)
    plain, raced = _NegativeRosenbrock(), _NegativeRosenbrock()
    plain_theta, plain_value, _ = optimize_hyperparameters(plain, [far, near])
    theta, value, _ = optimize_hyperparameters(raced, [far, near], race=StartRace(window=5, nats=1.0))
    assert value == plain_value and np.array_equal(theta, plain_theta)
    assert raced.values == plain.values
    # and screened starts (ranked against each other) are never raced
    plain, raced = _NegativeRosenbrock(), _NegativeRosenbrock()
    starts = [far, near, -far]
    plain_result = optimize_hyperparameters(plain, starts, screen_maxiter=5, n_refine=2, refine_margin=np.inf)
    raced_result = optimize_hyperparameters(raced, starts, screen_maxiter=5, n_refine=2, refine_margin=np.inf,
                                            race=StartRace(window=1, nats=0.0))
    assert raced.values == plain.values and raced_result[1] == plain_result[1]


def test_random_starts_lie_inside_the_bounds():
    kernel = to_kernel(parse("SE(0) * PER(1) + LIN(2)"), summary=SUMMARY)
    objective = RegressionObjective(kernel, X, y, (1e-6, 10.0))
    theta0 = np.append(kernel.theta, math.log(0.1))
    starts = random_starts(kernel, theta0, objective.bounds, 50, np.random.default_rng(0))
    for s in starts:
        assert np.all(s >= objective.bounds[:, 0]) and np.all(s <= objective.bounds[:, 1])
    assert len({tuple(s) for s in starts}) == 50


def test_posterior_matches_sklearn_prediction():
    kernel = to_kernel(parse("SE(0) + PER(1) * LIN(2)"), summary=SUMMARY)
    noise = 0.07
    posterior = GPPosterior(kernel, noise, X, y)
    reference = GaussianProcessRegressor(kernel, alpha=noise, optimizer=None).fit(X, y)
    Xt = np.random.default_rng(3).uniform(-2, 2, size=(15, 4))
    mean, std = posterior.predict(Xt, return_std=True)
    ref_mean, ref_std = reference.predict(Xt, return_std=True)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(std, ref_std, rtol=1e-7, atol=1e-9)
    _, cov = posterior.predict(Xt, return_cov=True)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std, rtol=1e-7, atol=1e-9)
    assert posterior.log_marginal_likelihood == pytest.approx(reference.log_marginal_likelihood_value_, rel=1e-10)


def test_periodogram_finds_the_period_with_irregular_sampling():
    x = np.sort(np.random.default_rng(0).uniform(0, 30, 200))
    values = np.sin(2 * np.pi * x / 2.7) + 0.5 * np.random.default_rng(1).normal(size=200)
    assert dominant_period(x, values, 0.2, 30.0) == pytest.approx(2.7, rel=0.02)
    assert dominant_period(x, np.ones(200), 0.2, 30.0) is None
    assert dominant_period(np.ones(10), values[:10], 0.2, 30.0) is None


def test_loo_residuals_equal_refits_without_each_point():
    rng = np.random.default_rng(5)
    X = np.sort(rng.uniform(0, 4, size=(25, 1)), axis=0)
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=25)
    kernel = to_kernel(parse("SE(0) + PER(0)"), summary=DataSummary.from_data(X, y))
    residuals = GPPosterior(kernel, 0.02, X, y).loo_residuals()
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        mean, _ = GPPosterior(kernel, 0.02, X[keep], y[keep]).predict(X[i:i + 1])
        assert residuals[i] == pytest.approx(y[i] - mean[0], rel=1e-6, abs=1e-9)


def test_loo_densities_and_residuals_share_one_inverse(monkeypatch):
    # the select stage's densities and the outlier check's residuals each inverted the factor (1.8 s on 2000 rows)
    import skgpsearch._engine._exact as exact_module

    rng = np.random.default_rng(7)
    X = rng.uniform(-2, 2, size=(40, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)
    kernel = to_kernel(parse("SE(0)"), summary=DataSummary.from_data(X, y))
    expected = GPPosterior(kernel, 0.02, X, y)
    expected = (expected.loo_log_density(), GPPosterior(kernel, 0.02, X, y).loo_residuals())
    calls = []
    monkeypatch.setattr(exact_module, "cholesky_inverse", lambda L, **kw: calls.append(1) or cholesky_inverse(L, **kw))
    posterior = GPPosterior(kernel, 0.02, X, y)
    np.testing.assert_array_equal(posterior.loo_log_density(), expected[0])
    np.testing.assert_array_equal(posterior.loo_residuals(), expected[1])
    assert len(calls) == 1


def test_loo_log_densities_equal_refits_without_each_point():
    # the closed form of R&W §5.4.2 against n posteriors on n - 1 points: predictive N(mean, var + noise)
    rng = np.random.default_rng(6)
    X = rng.uniform(-2, 2, size=(30, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1] + 0.2 * rng.normal(size=30)
    kernel = to_kernel(parse("SE(0) * SE(1)"), summary=DataSummary.from_data(X, y))
    densities = GPPosterior(kernel, 0.05, X, y).loo_log_density()
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        mean, std = GPPosterior(kernel, 0.05, X[keep], y[keep]).predict(X[i:i + 1], return_std=True)
        expected = -0.5 * np.log(2 * np.pi * (std[0] ** 2 + 0.05)) - 0.5 * (y[i] - mean[0]) ** 2 / (std[0] ** 2 + 0.05)
        assert densities[i] == pytest.approx(expected, rel=1e-8, abs=1e-10)
