"""Expressions: canonical form, its rules (each proved numerically), counting."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skgpsearch.grammar import Base, Product, Sum, add, multiply, parse
from skgpsearch.kernels import KERNEL_CLASSES, ActiveColumns, to_kernel
from sklearn.gaussian_process import kernels as sk

from strategies import expressions, rng, scrambled_text

X = np.random.default_rng(0).normal(size=(25, 4))


def kernel_of(leaf):
    """Catalogue kernel of a base kernel with its carried values, all amplitudes free."""
    kernel = KERNEL_CLASSES[leaf.name](**leaf.params)
    return kernel if not leaf.columns else ActiveColumns(kernel, list(leaf.columns))


def matrix(expr):
    """K(X) of an expression built literally (no canonical rules) from carried values."""
    if isinstance(expr, Base):
        return kernel_of(expr)(X)
    mats = [matrix(op) for op in expr.operands]
    return sum(mats) if isinstance(expr, Sum) else np.prod(mats, axis=0)


# -- canonical equality -------------------------------------------------------


def test_issue_example_compares_and_hashes_equal():
    a, b = parse("SE(2) + SE(1) * SE(0)"), parse("SE(0) * SE(1) + SE(2)")
    assert a == b and hash(a) == hash(b)
    assert str(a) == str(b)
    assert len({a, b}) == 1


def test_flattening_and_ordering():
    e = parse("(SE(1) + (LIN(0) + PER(0))) + SE(0)")
    assert isinstance(e, Sum) and len(e.operands) == 4
    assert str(e) == "SE(0) + SE(1) + PER(0) + LIN(0)"
    p = parse("LIN(1) * (PER(0) * SE(2))")
    assert isinstance(p, Product) and len(p.operands) == 3
    assert str(p) == "SE(2) * PER(0) * LIN(1)"


def test_distributivity_is_not_applied():
    assert parse("SE(0) * (SE(1) + SE(2))") != parse("SE(0) * SE(1) + SE(0) * SE(2)")


def test_duplicate_terms_are_kept():
    # Two SEs on one column with their own lengthscales are a richer family than one SE.
    assert parse("SE(0) + SE(0)").n_base_kernels == 2


@settings(max_examples=150, deadline=None)
@given(expressions(), st.integers(0, 10**6))
def test_reordering_and_regrouping_do_not_change_the_canonical_form(expr, seed):
    text = scrambled_text(expr, rng(seed))
    again = parse(text)
    assert again == expr and hash(again) == hash(expr)
    assert str(again) == str(expr)


@settings(max_examples=150, deadline=None)
@given(expressions())
def test_canonical_form_is_a_fixed_point(expr):
    if isinstance(expr, (Sum, Product)):
        rebuilt = (add if isinstance(expr, Sum) else multiply)(*reversed(expr.operands))
        assert rebuilt == expr
        assert rebuilt.operands == expr.operands
        assert list(expr.operands) == sorted(expr.operands)
        # flattened: no sum inside a sum, no product inside a product
        assert not any(type(op) is type(expr) for op in expr.operands)


# -- each simplification rule, proved on kernel matrices -------------------------


def test_rule_product_of_se_on_same_columns():
    a = Base("SE", 0, {"variance": 1.7, "lengthscale": 0.6})
    b = Base("SE", 0, {"variance": 0.4, "lengthscale": 1.3})
    merged = a * b
    assert merged == Base("SE", 0)
    np.testing.assert_allclose(matrix(merged), matrix(a) * matrix(b), rtol=1e-12)
    # on different columns nothing merges
    assert (a * Base("SE", 1)).n_base_kernels == 2


def test_rule_product_of_exponential_kernels_on_same_columns():
    a = Base("M12", (0, 1), {"variance": 1.2, "lengthscale": 0.8})
    b = Base("M12", (0, 1), {"variance": 2.0, "lengthscale": 2.5})
    merged = a * b
    assert merged == Base("M12", (0, 1))
    np.testing.assert_allclose(matrix(merged), matrix(a) * matrix(b), rtol=1e-12)


def test_products_that_are_not_closed_stay_products():
    for kind in ("RQ", "M32", "M52", "PER", "LIN"):
        assert parse(f"{kind}(0) * {kind}(0)").n_base_kernels == 2


def test_rule_constant_factor_is_absorbed_by_an_amplitude():
    c = Base("C", (), {"variance": 3.0})
    se = Base("SE", 1, {"variance": 0.5, "lengthscale": 0.7})
    per = Base("PER", 0, {"variance": 1.0, "lengthscale": 1.1, "period": 0.9})
    for other in (se, se * per, add(se, per)):
        absorbed = multiply(c, other)
        assert absorbed == other
        np.testing.assert_allclose(matrix(absorbed), 3.0 * matrix(other), rtol=1e-12)


def test_rule_product_of_constants_is_a_constant():
    e = multiply(Base("C", (), {"variance": 2.0}), Base("C", (), {"variance": 5.0}))
    assert e == Base("C") and e.params["variance"] == pytest.approx(10.0)


def test_rule_sum_of_constants_and_of_white_noise():
    e = add(Base("C", (), {"variance": 2.0}), Base("SE", 0), Base("C", (), {"variance": 0.5}))
    assert e == parse("SE(0) + C")
    assert [leaf.params for leaf in e.leaves if leaf.name == "C"] == [{"variance": 2.5}]
    w = add(Base("WN", (), {"variance": 0.1}), Base("WN", (), {"variance": 0.2}))
    assert w == Base("WN") and w.params["variance"] == pytest.approx(0.3)
    np.testing.assert_allclose(matrix(w), 0.3 * np.eye(len(X)), rtol=1e-12)


def test_rule_white_noise_times_constant_diagonal_is_white_noise():
    wn = Base("WN", (), {"variance": 0.3})
    se = Base("SE", 0, {"variance": 2.0, "lengthscale": 0.5})
    per = Base("PER", 1, {"variance": 1.5, "lengthscale": 1.0, "period": 2.0})
    for other in (se, add(se, per), se * per):
        product = multiply(wn, other)
        assert product == Base("WN")
        np.testing.assert_allclose(matrix(product), matrix(wn) * matrix(other), rtol=1e-12)
    # a linear kernel's diagonal varies: WN * LIN is heteroscedastic noise, not WN
    assert parse("WN * LIN(0)").n_base_kernels == 2
    # constant-diagonal factors are absorbed whatever the grouping (associativity)
    lin = Base("LIN", 0, {"variance": 0.7, "offset": 0.2})
    mixed = multiply(wn, se, add(se, lin))
    assert mixed == parse("WN * (SE(0) + LIN(0))") == multiply(multiply(se, wn), add(se, lin))
    np.testing.assert_allclose(matrix(mixed), matrix(wn) * matrix(se) * matrix(add(se, lin)), rtol=1e-12)


def test_singletons_unwrap():
    assert add(Base("SE", 0)) == Base("SE", 0)
    assert multiply(Base("SE", 0), Base("SE", 0)) == Base("SE", 0)
    assert isinstance(Sum(Base("SE", 0), Base("SE", 1)), Sum)
    assert Product(Base("C"), Base("C")) == Base("C")


@settings(max_examples=60, deadline=None)
@given(expressions(kinds=("SE", "M12", "C", "WN", "PER", "LIN"), max_leaves=5), st.integers(0, 10**6))
def test_canonicalisation_preserves_the_kernel_with_values(expr, seed):
    """Any expression built with values equals, as a matrix, its literal un-simplified tree."""
    r = np.random.default_rng(seed)

    def with_values(leaf):
        params = {"variance": float(r.uniform(0.5, 2.0))}
        if "lengthscale" in leaf.kind.parameters:
            params["lengthscale"] = float(r.uniform(0.5, 2.0))
        if "period" in leaf.kind.parameters:
            params["period"] = float(r.uniform(0.5, 2.0))
        if "offset" in leaf.kind.parameters:
            params["offset"] = [float(v) for v in r.normal(size=len(leaf.columns))]
        return leaf.with_params(params)

    literal_leaves = [with_values(leaf) for leaf in expr.leaves]
    # rebuild the same tree literally (no rules) and through the canonical constructors
    it = iter(literal_leaves)
    valued = expr.map_leaves(lambda leaf: next(it))
    it = iter(literal_leaves)

    def literal(node):
        if isinstance(node, Base):
            return kernel_of(next(it))(X)
        mats = [literal(op) for op in node.operands]
        return sum(mats) if isinstance(node, Sum) else np.prod(mats, axis=0)

    np.testing.assert_allclose(matrix(valued), literal(expr), rtol=1e-10, atol=1e-12)


# -- values ride along but never affect identity -----------------------------------


def test_values_do_not_affect_equality_hash_or_order():
    a = Base("SE", 0, {"variance": 1.0, "lengthscale": 2.0})
    b = Base("SE", 0)
    assert a == b and hash(a) == hash(b) and not a < b and not b < a
    assert a.params == {"variance": 1.0, "lengthscale": 2.0} and b.params == {}
    assert not (a + Base("PER", 0)).without_values().has_values


def test_base_validation():
    with pytest.raises(ValueError, match="exactly one column"):
        Base("PER", (0, 1))
    with pytest.raises(ValueError, match="does not depend on input columns"):
        Base("C", 0)
    with pytest.raises(ValueError, match="at least one column"):
        Base("SE")
    with pytest.raises(ValueError, match="Unknown base kernel"):
        Base("XX", 0)
    with pytest.raises(ValueError, match=">= 0"):
        Base("SE", -1)
    with pytest.raises(ValueError, match="int"):
        Base("SE", 1.5)
    with pytest.raises(ValueError, match="no hyperparameter"):
        Base("SE", 0, {"period": 1.0})
    with pytest.raises(ValueError, match="one value per column"):
        Base("LIN", (0, 1), {"offset": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="expressions"):
        add(Base("SE", 0), "SE(1)")
    assert Base("SE", np.int64(2)).columns == (2,)
    assert Base("se", (1, 0, 1)).columns == (0, 1)


@settings(max_examples=50, deadline=None)
@given(expressions())
def test_pickle_round_trip(expr):
    again = pickle.loads(pickle.dumps(expr))
    assert again == expr and str(again) == str(expr)
    assert [l.params for l in again.leaves] == [l.params for l in expr.leaves]


# -- counting -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, n_base, n_terms, max_factors, n_hyper",
    [
        ("SE(0)", 1, 1, 1, 2),
        ("SE(2) + SE(0) * SE(1)", 3, 2, 2, 2 + 3),
        ("SE(0) * PER(0) * LIN(1)", 3, 1, 3, (2 + 3 + 2) - 2),
        ("(SE(0) + PER(0)) * LIN(0)", 3, 2, 2, (2 + 3 + 2) - 1),
        ("(SE(0) + PER(0)) * (LIN(0) + SE(1))", 4, 4, 2, (2 + 3 + 2 + 2) - 1),
        ("LIN(0, 1) + C + WN", 3, 3, 1, 3 + 1 + 1),
        ("RQ(0, 1, 2)", 1, 1, 1, 3),
        # distributed terms merge factors (SE × SE = SE, C × K = K): SE(0) and SE(0), one factor each (it was 2)
        ("SE(0) * (SE(0) + C)", 3, 2, 1, (2 + 2 + 1) - 1),
        ("(SE(0) + SE(1)) * SE(1) * LIN(0)", 4, 2, 3, (2 + 2 + 2 + 2) - 2),
    ],
)
def test_counts_match_hand_formulas(text, n_base, n_terms, max_factors, n_hyper):
    e = parse(text)
    assert e.n_base_kernels == n_base
    assert e.n_terms == n_terms == len(e.sum_of_products())
    assert e.max_factors == max_factors
    assert e.n_hyperparameters == n_hyper


@settings(max_examples=100, deadline=None)
@given(expressions())
def test_counts_are_consistent(expr):
    terms = expr.sum_of_products()
    assert expr.n_terms == len(terms)
    # rules may merge factors of a distributed term, never add any
    assert max(t.n_base_kernels for t in terms) <= expr.max_factors
    assert expr.n_base_kernels == len(expr.leaves) == len(expr.free_amplitudes())
    # the scikit-learn kernel has exactly the counted free hyperparameters
    assert to_kernel(expr).n_dims == expr.n_hyperparameters


def all_free_kernel(expr):
    """The kernel of expr with every amplitude free (the over-parametrised form)."""
    if isinstance(expr, Base):
        defaults = {"variance": 1.3, "lengthscale": 0.9, "period": 1.7, "alpha": 1.4, "offset": 0.3}
        kernel = KERNEL_CLASSES[expr.name](**{p: defaults[p] for p in expr.kind.parameters})
        return kernel if not expr.columns else ActiveColumns(kernel, list(expr.columns))
    kernels = [all_free_kernel(op) for op in expr.operands]
    out = kernels[0]
    for k in kernels[1:]:
        out = (sk.Sum if isinstance(expr, Sum) else sk.Product)(out, k)
    return out


@pytest.mark.parametrize(
    "text",
    [
        "SE(0) * PER(0) * LIN(1)",
        "(SE(0) + PER(0)) * (LIN(0) + SE(1))",
        "SE(0) * SE(1) + SE(2)",
        "C + SE(0) * M32(1)",
        "(SE(0) + LIN(1)) * PER(0) + RQ(1)",
    ],
)
def test_free_hyperparameters_are_exactly_the_identifiable_ones(text):
    """The Jacobian of vec K w.r.t. all hyperparameters has rank = n_hyperparameters."""
    expr = parse(text)
    Xs = np.random.default_rng(1).uniform(-2, 2, size=(30, 3))
    _, grad = all_free_kernel(expr)(Xs, eval_gradient=True)
    jac = grad.reshape(-1, grad.shape[2])
    s = np.linalg.svd(jac, compute_uv=False)
    rank = int(np.sum(s > s[0] * 1e-9))
    assert grad.shape[2] > expr.n_hyperparameters  # over-parametrised form
    assert rank == expr.n_hyperparameters


def test_free_amplitudes_rule():
    assert parse("SE(0) * PER(0) * LIN(1)").free_amplitudes() == (True, False, False)
    # the sum keeps the product's scale; removing the other sum's scale fixes its first term
    assert parse("(SE(0) + PER(0)) * (SE(1) + LIN(0))").free_amplitudes() == (True, True, False, True)


@settings(max_examples=200, deadline=None)
@given(expressions(max_leaves=4), expressions(max_leaves=4), expressions(max_leaves=4))
def test_operators_are_associative_and_commutative(a, b, c):
    """The rules are confluent: grouping and order of operands never change the result."""
    for op in (add, multiply):
        results = {op(op(a, b), c), op(a, op(b, c)), op(c, b, a), op(b, op(c, a))}
        assert len(results) == 1
