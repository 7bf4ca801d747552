"""Conversion between structures and scikit-learn kernels."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as sk

from skgpsearch.grammar import Base, CompositionalGrammar, parse
from skgpsearch.kernels import (
    KERNEL_CLASSES,
    ActiveColumns,
    DataSummary,
    default_hyperparameters,
    from_kernel,
    inherit_values,
    to_kernel,
)
from skgpsearch.kernels._convert import structure_theta

from strategies import expressions

rng = np.random.default_rng(3)
X = rng.uniform(-3, 3, size=(30, 4))
y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=30)
SUMMARY = DataSummary.from_data(X, y)


def literal_matrix(expr, Xe=X):
    """K(X) computed leaf by leaf from the carried values, every amplitude as carried."""
    if isinstance(expr, Base):
        kernel = KERNEL_CLASSES[expr.name](**expr.params)
        return (ActiveColumns(kernel, list(expr.columns)) if expr.columns else kernel)(Xe)
    mats = [literal_matrix(op, Xe) for op in expr.operands]
    return sum(mats) if expr.__class__.__name__ == "Sum" else np.prod(mats, axis=0)


@settings(max_examples=80, deadline=None)
@given(expressions(max_leaves=6))
def test_round_trip_through_sklearn_kernel(expr):
    kernel = to_kernel(expr, summary=SUMMARY)
    assert kernel.n_dims == expr.n_hyperparameters
    back = from_kernel(kernel)
    assert back == expr
    # every base kernel now carries values, and they rebuild the same covariance
    assert all(leaf.params for leaf in back.leaves)
    np.testing.assert_allclose(to_kernel(back, summary=SUMMARY)(X), kernel(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(literal_matrix(back), kernel(X), rtol=1e-10, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(expressions(kinds=("SE", "PER", "LIN", "M52", "C"), max_leaves=6), st.integers(0, 10**6))
def test_carried_scales_of_fixed_factors_move_to_the_keeper_exactly(expr, seed):
    """Values on every leaf, fixed amplitudes included, give exactly the literal covariance."""
    r = np.random.default_rng(seed)

    def valued(leaf):
        d = {}
        for p, (init, _) in default_hyperparameters(leaf.name, leaf.columns, SUMMARY).items():
            d[p] = np.exp(r.uniform(np.log(init) - 0.5, np.log(init) + 0.5)) if p != "offset" else init
        return leaf.with_params(d)

    expr = expr.map_leaves(valued)
    np.testing.assert_allclose(
        to_kernel(expr, summary=SUMMARY)(X), literal_matrix(expr), rtol=1e-9, atol=1e-12
    )


@settings(max_examples=80, deadline=None)
@given(expressions(max_leaves=6), st.integers(0, 10**6), st.booleans())
def test_structure_theta_is_the_kernels_theta(expr, seed, valued):
    """The start pools' shortcut gives exactly the built kernel's theta: defaults, or carried values
    drawn inside and beyond the bounds (clipped), fixed amplitudes and per-column offsets included."""
    if valued:
        kernel = to_kernel(expr, summary=SUMMARY)
        bounds = kernel.bounds
        width = bounds[:, 1] - bounds[:, 0]
        kernel.theta = np.random.default_rng(seed).uniform(bounds[:, 0] - 0.2 * width, bounds[:, 1] + 0.2 * width)
        expr = from_kernel(kernel)
    np.testing.assert_array_equal(structure_theta(expr, SUMMARY), to_kernel(expr, summary=SUMMARY).theta)


@pytest.mark.parametrize("text", ["CP(0, SE(0), SE(0) * PER(0))", "CW(1, LIN(1), C)", "CP(0, SE(0) + RQ(1), C) * LIN(0)",
                                  "CW(0, C, PER(0)) + CP(2, M32(2), WN)"])
def test_structure_theta_of_change_operators_lists_their_own_values_last(text):
    from skgpsearch._search._starts import start_pool

    pool = start_pool(parse(text), SUMMARY)
    assert pool
    for start in pool:
        np.testing.assert_array_equal(structure_theta(start.expr, SUMMARY), to_kernel(start.expr, summary=SUMMARY).theta)


def test_default_initial_values_come_from_the_data():
    k = to_kernel(parse("SE(1)"), X, y)
    assert k.kernel.variance == pytest.approx(np.var(y))
    assert k.kernel.lengthscale == pytest.approx(np.std(X[:, 1]))
    lin = to_kernel(parse("LIN(2)"), X, y).kernel
    assert lin.offset == pytest.approx(X[:, 2].mean())
    assert lin.variance == pytest.approx(np.var(y) / np.var(X[:, 2]))
    # without data: unit-scale defaults
    assert to_kernel(parse("SE(0)")).kernel.variance == 1.0


def test_product_fixes_all_but_one_amplitude():
    k = to_kernel(parse("SE(0) * PER(1) * LIN(2)"), X, y)
    names = [hp.name for hp in k.hyperparameters if not hp.fixed]
    assert sum(name.endswith("variance") for name in names) == 1


def test_values_outside_the_data_bounds_are_clipped():
    e = Base("SE", 0, {"variance": 1.0, "lengthscale": 1e9})
    k = to_kernel(e, summary=SUMMARY).kernel
    assert k.lengthscale == pytest.approx(k.lengthscale_bounds[1])


def test_child_starts_at_the_fitted_parent():
    parent_kernel = to_kernel(parse("SE(0) + LIN(1)"), X, y)
    gp = GaussianProcessRegressor(parent_kernel + sk.WhiteKernel(0.1), random_state=0).fit(X, y)
    fitted = from_kernel(gp.kernel_.k1)
    child = fitted + Base("PER", 0)
    child_kernel = to_kernel(child, summary=SUMMARY)
    per_default = to_kernel(Base("PER", 0), summary=SUMMARY)
    np.testing.assert_allclose(child_kernel(X), gp.kernel_.k1(X) + per_default(X), rtol=1e-10)


def test_new_factor_enters_a_product_with_unit_amplitude():
    parent = Base("LIN", 0, {"variance": 0.37, "offset": 0.5})
    child = parent * Base("SE", 0)  # the SE keeps the product's scale
    assert child.free_amplitudes() == (True, False)
    se_unit = KERNEL_CLASSES["SE"](variance=1.0, lengthscale=np.std(X[:, 0]))
    expected = literal_matrix(parent) * ActiveColumns(se_unit, [0])(X)
    np.testing.assert_allclose(to_kernel(child, summary=SUMMARY)(X), expected, rtol=1e-10)


def test_inherit_values_from_a_fitted_kernel():
    parent_kernel = to_kernel(parse("SE(0) + PER(1)"), X, y)
    parent_kernel.set_params(k1__kernel__lengthscale=0.77)
    child = parse("SE(0) + PER(1) + LIN(2)")
    inherited = inherit_values(child, parent_kernel)
    se = [leaf for leaf in inherited.leaves if leaf.name == "SE"][0]
    assert se.params["lengthscale"] == pytest.approx(0.77)
    assert not [leaf for leaf in inherited.leaves if leaf.name == "LIN"][0].params
    k = to_kernel(child, summary=SUMMARY, parent=parent_kernel)
    assert k.k1.k1.kernel.lengthscale == pytest.approx(0.77)


def test_grammar_children_warm_start_through_to_kernel():
    fitted = from_kernel(to_kernel(parse("SE(0)"), X, y).clone_with_theta(np.log([2.0, 0.4])))
    for child in CompositionalGrammar(["SE", "PER"]).expand(fitted, 4):
        if parse("SE(0)") in child.leaves and child.n_base_kernels == 2 and "+" in str(child):
            se = [leaf for leaf in child.leaves if leaf == parse("SE(0)")][0]
            assert se.params == pytest.approx({"variance": 2.0, "lengthscale": 0.4})


# -- scikit-learn kernels read back -----------------------------------------------------------


@pytest.mark.parametrize(
    "kernel, expected",
    [
        (sk.ConstantKernel(2.0) * sk.RBF(1.5), "SE(0, 1, 2, 3)"),
        (sk.RBF([1.0, 2.0, 0.5, 3.0]), "SE(0) * SE(1) * SE(2) * SE(3)"),
        (sk.Matern(0.7, nu=0.5) + sk.Matern(1.1, nu=2.5), "M12(0, 1, 2, 3) + M52(0, 1, 2, 3)"),
        (sk.RationalQuadratic(0.8, 2.0) * sk.WhiteKernel(0.1), "WN"),
        (sk.DotProduct(sigma_0=1.3), "LIN(0, 1, 2, 3) + C"),
        (ActiveColumns(sk.ExpSineSquared(1.2, 2.5), [2]) * ActiveColumns(sk.RBF(1.0), [0]), "SE(0) * PER(2)"),
        (ActiveColumns(sk.RBF([1.0, 2.0]), [1, 3]), "SE(1) * SE(3)"),
        (sk.ConstantKernel(0.5) + sk.WhiteKernel(0.2), "C + WN"),
    ],
)
def test_sklearn_kernels_read_back_exactly(kernel, expected):
    expr = from_kernel(kernel, n_features=4)
    assert str(expr) == expected
    np.testing.assert_allclose(to_kernel(expr, summary=SUMMARY)(X), kernel(X), rtol=1e-10, atol=1e-12)


def test_unsupported_kernels_raise():
    with pytest.raises(ValueError, match="no counterpart"):
        from_kernel(sk.RBF(1.0) ** 2, n_features=1)
    with pytest.raises(ValueError, match="no counterpart"):
        from_kernel(sk.Matern(1.0, nu=1.2), n_features=1)
    with pytest.raises(ValueError, match="pass n_features"):
        from_kernel(sk.RBF(1.0))
    with pytest.raises(ValueError, match="expression"):
        to_kernel("SE(0)")
    with pytest.raises(ValueError, match="column 7"):
        to_kernel(parse("SE(7)"), X, y)


@pytest.mark.parametrize("operator", ["add", "multiply"])
def test_bounds_of_a_long_chain_read_each_leaf_once(operator, monkeypatch):
    """scikit-learn's operators read each leaf of a chain 2^depth times: 0.4 s at 13 columns, hours at 30."""
    from skgpsearch.grammar import add, multiply
    from skgpsearch.kernels import CatalogueKernel

    expr = (add if operator == "add" else multiply)(*[Base("SE", c) for c in range(14)])
    kernel = to_kernel(expr)
    reads = []
    leaf_bounds = CatalogueKernel.bounds.fget
    monkeypatch.setattr(CatalogueKernel, "bounds", property(lambda self: reads.append(1) or leaf_bounds(self)))
    bounds = kernel.bounds
    assert len(reads) == len(expr.leaves)
    assert bounds.shape == (kernel.n_dims, 2)
    assert np.array_equal(bounds, np.vstack([leaf_bounds(leaf.kernel) for leaf in _leaves(kernel)]))
    assert isinstance(kernel, sk.Sum if operator == "add" else sk.Product)


def _leaves(kernel):
    if isinstance(kernel, sk.KernelOperator):
        return _leaves(kernel.k1) + _leaves(kernel.k2)
    return [kernel]


def test_constructor_arguments_follow_each_summary_through_the_defaults_cache():
    # the cached defaults are per summary: two data sets give two sets of bounds and initial values, each as
    # the default rules give them, with carried values clipped into them
    from skgpsearch.kernels._convert import _base_arguments

    rng = np.random.default_rng(3)
    summaries = [DataSummary.from_data(scale * rng.normal(size=(60, 2)), rng.normal(size=60)) for scale in (1.0, 50.0)]
    leaves = [parse("SE(0)"), parse("PER(1)"), parse("LIN(0, 1)"), parse("RQ(1)").with_params({"lengthscale": 1e9})]
    for summary in summaries * 2:  # the second round reads the cache
        for leaf in leaves:
            arguments = _base_arguments(leaf, summary, True)
            for param, (init, (low, high)) in default_hyperparameters(leaf.name, leaf.columns, summary).items():
                expected = np.clip(np.asarray(leaf.params.get(param, init), dtype=float), low, high)
                np.testing.assert_array_equal(np.ravel(arguments[param]), np.ravel(expected))
                np.testing.assert_array_equal(np.ravel(arguments[param + "_bounds"]),
                                              np.ravel(np.column_stack([low, high])))
    first, second = (_base_arguments(parse("SE(0)"), s, True)["lengthscale_bounds"] for s in summaries)
    assert first != second
