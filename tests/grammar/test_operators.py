"""Expansion operators: compositional and sum-of-products grammars."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skgpsearch.grammar import (
    Base,
    CompositionalGrammar,
    FixedStructureGrammar,
    Sum,
    SumOfProductsGrammar,
    add,
    get_grammar,
    multiply,
    parse,
)

from strategies import expressions


def sop_expressions():
    """Sums of products of per-column SE kernels: what the SoP grammar reaches."""
    term = st.lists(st.integers(0, 3), min_size=1, max_size=3).map(
        lambda cols: multiply(*(Base("SE", c) for c in cols))
    )
    return st.lists(term, min_size=1, max_size=4).map(lambda ts: add(*ts))


# -- compositional grammar ---------------------------------------------------------


def brute_force_cks_children(expr, bases, prune=True):
    """Children by the three rules (and pruning) written independently: rebuild the tree from text."""
    out = set()

    def walk(node, rebuild):
        for b in bases:
            out.add(rebuild(node + b))
            out.add(rebuild(node * b))
        if isinstance(node, Base):
            for b in bases:
                if b != node:
                    out.add(rebuild(b))
        combine = add if isinstance(node, Sum) else multiply
        if prune:
            for i in range(len(node.operands)):
                out.add(rebuild(combine(*(op for j, op in enumerate(node.operands) if j != i))))
        for i, op in enumerate(node.operands):
            def rebuild_child(new, i=i, node=node, rebuild=rebuild):
                ops = list(node.operands)
                ops[i] = new
                return rebuild((add if isinstance(node, Sum) else multiply)(*ops))

            walk(op, rebuild_child)

    walk(expr, lambda e: e)
    out.discard(expr)
    return out


def test_cks_children_of_a_base_kernel():
    g = CompositionalGrammar(["SE", "RQ", "PER", "LIN"])
    children = {str(c) for c in g.expand(parse("SE(0)"), n_features=1)}
    assert children == {
        "SE(0) + SE(0)", "SE(0) + RQ(0)", "SE(0) + PER(0)", "SE(0) + LIN(0)",
        "SE(0) * RQ(0)", "SE(0) * PER(0)", "SE(0) * LIN(0)",  # SE * SE simplifies to SE: dropped
        "RQ(0)", "PER(0)", "LIN(0)",
    }


def test_cks_with_white_noise_adds_noise_that_grows_along_an_input_in_one_step():
    # S + WN only duplicates the likelihood's noise: without S + WN * LIN a greedy search stops before it
    g = CompositionalGrammar(["SE", "LIN", "WN"])
    children = set(g.expand(parse("SE(0) + LIN(1)"), n_features=2))
    assert {parse("SE(0) + LIN(1) + LIN(0) * WN"), parse("SE(0) + LIN(1) + LIN(1) * WN")} <= children
    # a stationary factor has a constant diagonal: SE * WN is WN again, so it brings no such child
    assert not any(str(c).count("WN") and "SE(0) * WN" in str(c) for c in children)
    assert not any("WN" in str(c) for c in CompositionalGrammar(["SE", "LIN"]).expand(parse("SE(0)"), 1))


def test_cks_inner_subexpressions_are_expanded():
    g = CompositionalGrammar(["SE", "PER"])
    children = set(g.expand(parse("SE(0) + PER(0)"), n_features=1))
    assert parse("SE(0) * PER(0) + PER(0)") in children  # S * B at an operand
    assert parse("(SE(0) + PER(0)) * PER(0)") in children  # S * B at the root
    assert parse("SE(0) + PER(0) + PER(0)") in children  # S + B
    assert parse("PER(0) + PER(0)") in children  # B -> B'


@settings(max_examples=60, deadline=None)
@given(expressions(kinds=("SE", "PER", "LIN", "C"), max_leaves=5), st.integers(1, 3))
def test_cks_children_match_brute_force(expr, n_features):
    n_features = max(n_features, max(expr.columns, default=0) + 1)
    for prune in (True, False):
        g = CompositionalGrammar(["SE", "PER", "LIN", "C"], prune=prune)
        children = g.expand(expr, n_features)
        assert set(children) == brute_force_cks_children(expr, g.base_set(n_features), prune)


@settings(max_examples=60, deadline=None)
@given(expressions(max_leaves=6), st.integers(1, 4))
def test_cks_children_are_unique_canonical_and_new(expr, n_features):
    n_features = max(n_features, max(expr.columns, default=0) + 1)
    g = CompositionalGrammar(["SE", "PER", "LIN", "M32"])
    children = g.expand(expr, n_features)
    assert len(children) == len(set(children))
    assert expr not in children
    for c in children:
        assert parse(str(c)) == c
    # count before deduplication: 2|B| per node, |B| - [leaf in B] per leaf, one per operand pruned
    bases = g.base_set(n_features)
    nodes = list(expr.subexpressions())
    expected = sum(2 * len(bases) + len(node.operands) for _, node in nodes) + sum(
        len(bases) - (leaf in bases) for leaf in expr.leaves
    )
    assert g.n_candidates(expr, n_features) == expected
    assert len(children) <= expected


# -- sum-of-products grammar ----------------------------------------------------------


def test_sop_children_follow_the_thesis_operators():
    g = SumOfProductsGrammar(prune=False)
    parent = parse("SE(5) + SE(4) * SE(2)")  # 0-based: SE_6 + SE_5 x SE_3 of the thesis figure
    children = set(g.expand(parent, n_features=6))
    assert parse("SE(5) + SE(4) * SE(2) * SE(3)") in children  # the figure's next best
    assert parse("SE(5) + SE(4) * SE(2) + SE(0)") in children
    assert parse("SE(5) * SE(0) + SE(4) * SE(2)") in children
    # K_j * B with B already in K_j simplifies back to the parent: never listed
    assert parent not in children


@settings(max_examples=100, deadline=None)
@given(sop_expressions(), st.integers(4, 6))
def test_sop_counts_and_closure(expr, n_features):
    g = SumOfProductsGrammar(prune=False)
    m = len(expr.terms())
    assert g.n_candidates(expr, n_features) == n_features * (m + 1)
    children = g.expand(expr, n_features)
    assert len(children) == len(set(children)) and expr not in children
    # distinct children: every addition is new; a product child is new unless the term already has that SE
    additions = n_features
    products = sum(n_features - len(set(t.columns)) for t in expr.terms())
    distinct_products = {add(*expr.terms()[:j], t * Base("SE", c), *expr.terms()[j + 1:])
                         for j, t in enumerate(expr.terms()) for c in range(n_features)} - {expr}
    assert len(children) == len(set(expr + Base("SE", c) for c in range(n_features)) | distinct_products)
    assert len(children) <= additions + products
    for c in children:
        # closed: still a sum of products of base kernels
        assert all(all(isinstance(f, Base) for f in (t.operands or (t,))) for t in c.terms())
        assert parse(str(c)) == c


def test_pruning_drops_one_operand_and_keeps_the_sum_of_products_form():
    parent = parse("SE(0) + SE(1) + SE(2) * SE(3)")
    for g in (SumOfProductsGrammar(), CompositionalGrammar(["SE"])):
        children = set(g.expand(parent, n_features=4))
        for pruned in ("SE(1) + SE(2) * SE(3)", "SE(0) + SE(2) * SE(3)", "SE(0) + SE(1)",
                       "SE(0) + SE(1) + SE(3)", "SE(0) + SE(1) + SE(2)"):
            assert parse(pruned) in children
        assert all(c.terms() and all(all(isinstance(f, Base) for f in (t.operands or (t,))) for t in c.terms())
                   for c in children if isinstance(g, SumOfProductsGrammar))
    assert parse("SE(0) + SE(1)") not in SumOfProductsGrammar(prune=False).expand(parent, 4)
    # a base kernel has nothing to prune
    assert SumOfProductsGrammar().n_candidates(parse("SE(0)"), 3) == SumOfProductsGrammar(prune=False).n_candidates(parse("SE(0)"), 3)


def test_baselines_start_the_search_with_the_standard_models():
    g = CompositionalGrammar(["SE", "PER"], baselines=True)
    first = g.initial(3)
    assert first[:6] == g.base_set(3)
    assert first[6:] == [parse("SE(0) * SE(1) * SE(2)"), parse("SE(0) + SE(1) + SE(2)")]
    assert CompositionalGrammar(["SE"]).initial(3) == CompositionalGrammar(["SE"]).base_set(3)  # off by default
    assert CompositionalGrammar(["SE"], baselines=True).initial(1) == [parse("SE(0)")]  # one column: SE is both
    # only columns that admit SE; the size limits still hold
    g = SumOfProductsGrammar(["SE"], kernels_per_column={1: ("LIN",)}, baselines=True)
    assert g.baseline_structures(3) == [parse("SE(0) * SE(2)"), parse("SE(0) + SE(2)")]
    assert SumOfProductsGrammar(max_factors=2, baselines=True).baseline_structures(3) == [
        parse("SE(0) + SE(1) + SE(2)")
    ]


def test_the_linear_structure_spans_the_columns_that_admit_se():
    assert CompositionalGrammar(["SE"]).linear_structure(3) == parse("LIN(0, 1, 2)")
    assert parse("LIN(0, 1, 2)").n_hyperparameters == 4  # one slope variance, an offset per column
    g = SumOfProductsGrammar(["SE"], kernels_per_column={1: ("LIN",)})
    assert g.linear_structure(3) == parse("LIN(0, 2)")
    # one column has no linear model of its own beside its SE; a refit's grammar has none
    assert CompositionalGrammar(["SE", "LIN"]).linear_structure(1) is None
    assert FixedStructureGrammar(parse("SE(0)")).linear_structure(3) is None


def test_the_isotropic_structure_is_one_se_over_the_columns_that_admit_se():
    iso = CompositionalGrammar(["SE"]).isotropic_structure(3)
    assert iso == parse("SE(0, 1, 2)") and iso.n_hyperparameters == 2  # one amplitude, one lengthscale
    g = SumOfProductsGrammar(["SE"], kernels_per_column={1: ("LIN",)})
    assert g.isotropic_structure(3) == parse("SE(0, 2)")
    # on one column it is the column's SE (a base kernel already); a refit's grammar has none
    assert CompositionalGrammar(["SE"]).isotropic_structure(1) is None
    assert FixedStructureGrammar(parse("SE(0)")).isotropic_structure(3) is None


def test_the_random_walk_structure_is_a_linear_trend_plus_matern_half_on_one_column():
    walk = CompositionalGrammar(["SE", "LIN"]).random_walk_structure(1)
    assert walk == parse("LIN(0) + M12(0)")
    # one slope variance and offset, one amplitude and lengthscale
    assert walk.n_hyperparameters == 4
    # a series only: several columns have none, nor a grammar without a linear trend or with one-term sums
    assert CompositionalGrammar(["SE", "LIN"]).random_walk_structure(2) is None
    assert CompositionalGrammar(["SE", "PER"]).random_walk_structure(1) is None
    assert CompositionalGrammar(["SE", "LIN"], max_terms=1).random_walk_structure(1) is None
    assert FixedStructureGrammar(parse("SE(0)")).random_walk_structure(1) is None


def test_sop_with_several_kinds():
    g = SumOfProductsGrammar(["SE", "LIN"], prune=False)
    expr = parse("SE(0) + LIN(1)")
    assert g.n_candidates(expr, 2) == 2 * 2 * (2 + 1)


# -- restrictions and the base set ------------------------------------------------------


def test_base_set_and_kernels_per_column():
    g = CompositionalGrammar(["SE", "C"], kernels_per_column={1: ("PER", "LIN"), 2: ()})
    assert [str(b) for b in g.base_set(3)] == ["SE(0)", "PER(1)", "LIN(1)", "C"]
    assert g.initial(3) == g.base_set(3)


def test_max_terms_and_max_factors():
    g = CompositionalGrammar(["SE"], max_terms=2, max_factors=2)
    for child in g.expand(parse("SE(0) + SE(1)"), n_features=3):
        assert child.n_terms <= 2 and child.max_factors <= 2
    assert parse("SE(0) + SE(1) + SE(2)") not in g.expand(parse("SE(0) + SE(1)"), 3)
    assert parse("SE(0) * SE(1) * SE(2)") not in g.expand(parse("SE(0) * SE(1)"), 3)
    sop = SumOfProductsGrammar(max_terms=1)
    assert all(c.n_terms == 1 for c in sop.expand(parse("SE(0)"), 3))


def test_children_inherit_the_parents_values():
    fitted = Base("SE", 0, {"variance": 2.0, "lengthscale": 0.3})
    for child in SumOfProductsGrammar().expand(fitted, n_features=2):
        kept = [leaf for leaf in child.leaves if leaf.params]
        assert kept and kept[0].params == {"variance": 2.0, "lengthscale": 0.3}


def test_trend_variants_add_a_linear_term_the_structure_lacks():
    g = CompositionalGrammar(["SE", "PER", "LIN"])
    fitted = Base("SE", 0, {"variance": 2.0, "lengthscale": 0.3}) * Base("PER", 0)
    variants = g.trend_variants(fitted, n_features=2)
    assert [str(v) for v in variants] == ["LIN(0) + SE(0) * PER(0)", "LIN(1) + SE(0) * PER(0)"]
    # the parent's values ride along, the new term starts without any
    assert [leaf.params for leaf in variants[0].leaves if leaf.name == "SE"] == [{"variance": 2.0, "lengthscale": 0.3}]
    assert [str(v) for v in g.trend_variants(parse("LIN(0) + SE(0)"), 1)] == []  # already has one
    assert [str(v) for v in g.trend_variants(parse("SE(0) * LIN(0)"), 1)] == ["LIN(0) + SE(0) * LIN(0)"]
    assert CompositionalGrammar(["SE", "PER"]).trend_variants(parse("SE(0)"), 1) == []  # no LIN in the grammar
    assert CompositionalGrammar(["SE", "LIN"], max_terms=1).trend_variants(parse("SE(0)"), 1) == []
    assert FixedStructureGrammar(parse("SE(0)")).trend_variants(parse("SE(0)"), 1) == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"base_kernels": ["XX"]}, "Unknown base kernel"),
        ({"max_terms": 0}, "max_terms"),
        ({"max_factors": 1.5}, "max_factors"),
        ({"kernels_per_column": {7: ("SE",)}}, "column 7"),
        ({"base_kernels": [], "kernels_per_column": None}, "no base kernels"),
    ],
)
def test_bad_grammar_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CompositionalGrammar(**kwargs).expand(parse("SE(0)"), n_features=2)


def test_bad_arguments():
    g = CompositionalGrammar()
    with pytest.raises(ValueError, match="n_features"):
        g.initial(0)
    with pytest.raises(ValueError, match="expression"):
        g.expand("SE(0)", 1)


def test_get_grammar():
    assert isinstance(get_grammar("cks"), CompositionalGrammar)
    assert get_grammar("sum_of_products", max_terms=3) == SumOfProductsGrammar(max_terms=3)
    g = SumOfProductsGrammar()
    assert get_grammar(g) is g
    with pytest.raises(ValueError, match="Unknown grammar"):
        get_grammar("nope")
    assert repr(SumOfProductsGrammar(max_terms=3)) == "SumOfProductsGrammar(max_terms=3)"


def test_estimators_with_a_grammar_instance_can_be_cloned():
    # sklearn.base.clone rebuilds parameters that have get_params (with deep=False)
    from sklearn.base import clone

    from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor
    from skgpsearch.grammar import CompositionalGrammar, SumOfProductsGrammar

    for estimator in (
        CompositionalGPRegressor(grammar=CompositionalGrammar(["SE", "PER"], max_terms=3)),
        CompositionalGPClassifier(grammar=SumOfProductsGrammar(["SE"], max_factors=2)),
    ):
        copy = clone(estimator)
        assert copy.grammar == estimator.grammar and copy.grammar is not estimator.grammar
