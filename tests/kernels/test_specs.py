"""Every registered kernel spec (skgpsearch.kernels._specs) against independent ground truth.

Each test runs over all of :data:`SPECS`, so a new base kernel is checked as
soon as its spec is registered: the stationary profile against central finite
differences, the engine leaf against the scikit-learn kernel and against
finite differences of its own matrix, the registry against the grammar
catalogue, the data-aware defaults against their bounds, and the description
against the kind's phrases.
"""

import math

import numpy as np
import pytest

from skgpsearch._engine._kernel_tree import KernelTree, _GenericLeaf, _StationaryLeaf
from skgpsearch.criteria import DEFAULT_PRIOR_SD
from skgpsearch.grammar import KINDS, Base, kind_names
from skgpsearch.inspection._describe import describe_term
from skgpsearch.kernels import (
    KERNEL_CLASSES,
    SPECS,
    ActiveColumns,
    DataSummary,
    from_kernel,
    get_spec,
    to_kernel,
)

NAMES = tuple(SPECS)
rng = np.random.default_rng(11)
N = 40
# column 0 is a regular grid (the engine stores it by lag), columns 1-2 are scattered
X = np.column_stack([np.arange(N, dtype=float) / 4.0, rng.uniform(-2, 2, size=N), rng.normal(size=N)])
y = np.sin(X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=N)
SUMMARY = DataSummary.from_data(X, y)
FEATURES = ["x0", "x1", "x2"]


def column_choices(spec):
    """A couple of column sets the kind accepts: gridded, scattered, several columns."""
    rule = spec.kind.columns
    if rule == "none":
        return [()]
    if rule == "one":
        return [(0,), (1,)]
    return [(0,), (1,), (1, 2)]


def cases():
    return [pytest.param(name, cols, id=f"{name}{list(cols)}") for name in NAMES for cols in column_choices(SPECS[name])]


def values(spec, cols, scale=1.3):
    """Hyperparameter values on ``cols``: the defaults moved off their initial point."""
    out = {}
    for name, (init, _) in spec.default_hyperparameters(cols, SUMMARY).items():
        init = np.asarray(init, dtype=float)
        value = init + 0.3 if name in spec.unconstrained else init * scale
        out[name] = value.copy() if value.size > 1 else float(value.ravel()[0])
    return out


def catalogue_kernel(name, cols, **kwargs):
    spec = SPECS[name]
    kernel = spec.kernel_class(**{**values(spec, cols), **kwargs})
    return kernel if not cols else ActiveColumns(kernel, list(cols))


# -- registry ------------------------------------------------------------------------------


def test_every_grammar_kind_has_a_numeric_spec_and_vice_versa():
    assert tuple(SPECS) == kind_names()
    assert set(KERNEL_CLASSES) == set(KINDS)
    for name, spec in SPECS.items():
        assert spec.name == name
        assert spec.kind is KINDS[name]
        assert get_spec(name) is spec
        assert get_spec(name.lower()) is spec
        assert get_spec(KINDS[name]) is spec
        assert KERNEL_CLASSES[name] is spec.kernel_class


def test_unknown_kind_has_no_spec():
    with pytest.raises(ValueError, match="known kernels are"):
        get_spec("NOPE")


@pytest.mark.parametrize("name", NAMES)
def test_spec_agrees_with_the_kinds_facts(name):
    spec, kind = SPECS[name], KINDS[name]
    assert tuple(spec.kernel_class._hyperparameter_names) == kind.parameters
    assert tuple(spec.defaults) and set(spec.defaults) == set(kind.parameters)
    # a profile exactly for the kinds that depend on the scaled distance only
    assert (spec.profile is not None) == kind.distance_based
    if spec.profile is not None:
        assert set(spec.profile.shape_parameters) == set(kind.parameters) - {"variance", "lengthscale"}
    assert set(spec.unconstrained) <= set(kind.parameters)
    for parameter in kind.parameters:
        if parameter not in spec.unconstrained:
            assert spec.prior_key(parameter) in DEFAULT_PRIOR_SD


# -- stationary profiles -------------------------------------------------------------------

PROFILED = [name for name in NAMES if SPECS[name].profile is not None]
SHAPES = {"alpha": 0.7}
R2 = np.concatenate([np.linspace(0.01, 4.0, 25), [9.0, 30.0]])
H = 1e-6


def _shape(profile, **changes):
    return {name: changes.get(name, SHAPES[name]) for name in profile.shape_parameters}


@pytest.mark.parametrize("name", PROFILED)
def test_profile_derivative_in_r2_matches_finite_differences(name):
    profile = SPECS[name].profile
    shape = _shape(profile)
    g, dg = profile.kernel_profile(R2, shape)
    numeric = (profile.kernel_profile(R2 + H, shape)[0] - profile.kernel_profile(R2 - H, shape)[0]) / (2 * H)
    np.testing.assert_allclose(dg, numeric, rtol=1e-6, atol=1e-10)
    assert g.shape == R2.shape and np.all((g > 0) & (g <= 1.0))
    assert profile.kernel_profile(np.zeros(1), shape)[0][0] == pytest.approx(1.0)  # k(x, x) = s2


@pytest.mark.parametrize("name", PROFILED)
def test_leaf_profile_equals_kernel_profile(name):
    profile = SPECS[name].profile
    shape = _shape(profile)
    leaf_g, _ = profile.leaf_profile(R2.copy(), shape)  # (a profile in place overwrites its argument)
    np.testing.assert_allclose(leaf_g, profile.kernel_profile(R2, shape)[0], rtol=1e-13, atol=0)


@pytest.mark.parametrize("name", PROFILED)
def test_leaf_caps_r2_where_the_profile_would_underflow(name):
    """At a short lengthscale exp would underflow (numpy's slow path): the leaf caps r² where g is ~1e-304,
    and its matrix and contractions still match the kernel's."""
    profile = SPECS[name].profile
    kernel = catalogue_kernel(name, (0,), lengthscale=1e-4 * float(np.ptp(X[:, 0])), lengthscale_bounds="fixed")
    tree = KernelTree(kernel, X)
    K, dK = kernel(X, eval_gradient=True)
    matrix = tree.matrix()
    underflowing = K == 0.0
    if profile.negligible_r2 is None:  # a power law: no cap
        assert not underflowing.any()
    else:
        assert underflowing.mean() > 0.5
        assert np.all(matrix[underflowing] > 0) and np.all(matrix[underflowing] < 1e-290)  # capped
        assert profile.kernel_profile(np.array([profile.negligible_r2]), _shape(profile))[0][0] < 1e-290
    np.testing.assert_allclose(matrix, K, rtol=1e-12, atol=1e-100)
    G = np.random.default_rng(3).normal(size=K.shape)
    np.testing.assert_allclose(tree.contract(G), np.einsum("ij,ijk->k", G, dK), rtol=1e-9, atol=1e-250)


def test_periodic_leaf_floors_its_exponent_at_a_short_lengthscale():
    kernel = catalogue_kernel("PER", (1,), lengthscale=0.02, lengthscale_bounds="fixed")
    K, dK = kernel(X, eval_gradient=True)
    tree = KernelTree(kernel, X)
    matrix = tree.matrix()
    underflowing = K == 0.0
    assert underflowing.mean() > 0.5
    assert np.all(matrix[underflowing] > 0) and np.all(matrix[underflowing] < 1e-290)
    np.testing.assert_allclose(matrix, K, rtol=1e-12, atol=1e-100)
    G = np.random.default_rng(4).normal(size=K.shape)
    np.testing.assert_allclose(tree.contract(G), np.einsum("ij,ijk->k", G, dK), rtol=1e-9, atol=1e-250)


@pytest.mark.parametrize("name", PROFILED)
def test_leaf_contractions_match_finite_differences(name):
    """Σ w ∂K/∂log θ from the leaf hook against central differences of K = s2 g(d²/l²)."""
    profile = SPECS[name].profile
    d2, variance, lengthscale = R2, 1.7, 0.8
    w = np.random.default_rng(3).normal(size=d2.shape)
    parameters = ("lengthscale",) + tuple(profile.shape_parameters)
    base = {"lengthscale": lengthscale, **_shape(profile)}

    def K(**changes):
        values = {**base, **changes}
        g, _ = profile.leaf_profile(d2 / values["lengthscale"] ** 2, values)
        return variance * g

    values = dict(base)
    r2 = d2 / lengthscale**2
    k = K()
    _, state = profile.leaf_profile(r2.copy(), values)
    got = profile.leaf_contractions(r2, w * k, values, state, parameters)
    assert set(got) == set(parameters)
    for parameter in parameters:
        up = K(**{parameter: base[parameter] * math.exp(H)})
        down = K(**{parameter: base[parameter] * math.exp(-H)})
        expected = float(np.dot(w, (up - down) / (2 * H)))
        assert got[parameter] == pytest.approx(expected, rel=1e-6, abs=1e-9), parameter
    # fixed parameters are left out
    assert profile.leaf_contractions(r2, w * k, values, state, ()) == {}


@pytest.mark.parametrize("name", [n for n in PROFILED if SPECS[n].profile.shape_parameters])
def test_kernel_shape_gradients_match_finite_differences(name):
    profile = SPECS[name].profile
    K = 1.7 * profile.kernel_profile(R2, _shape(profile))[0]
    for parameter, gradient in profile.kernel_shape_gradients(R2, K, _shape(profile)):
        up = 1.7 * profile.kernel_profile(R2, _shape(profile, **{parameter: SHAPES[parameter] * math.exp(H)}))[0]
        down = 1.7 * profile.kernel_profile(R2, _shape(profile, **{parameter: SHAPES[parameter] * math.exp(-H)}))[0]
        np.testing.assert_allclose(gradient, (up - down) / (2 * H), rtol=1e-6, atol=1e-8)


# -- engine leaves -------------------------------------------------------------------------


@pytest.mark.parametrize("name, cols", cases())
def test_engine_leaf_gram_matrix_equals_the_sklearn_kernel(name, cols):
    kernel = catalogue_kernel(name, cols)
    tree = KernelTree(kernel, X)
    expected = kernel(X)
    assert SPECS[name].kind.constant or not np.allclose(expected, expected[0, 0])  # a real comparison
    np.testing.assert_allclose(tree.matrix(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, cols", cases())
def test_engine_leaf_contractions_match_finite_differences(name, cols):
    kernel = catalogue_kernel(name, cols)
    tree = KernelTree(kernel, X)
    G = np.random.default_rng(5).normal(size=(N, N))
    tree.forward()
    got = tree.contract(G)
    theta = kernel.theta
    expected = []
    for i in range(theta.size):
        step = np.zeros_like(theta)
        step[i] = H
        tree.set_theta(theta + step)
        up = float(np.sum(G * tree.matrix()))
        tree.set_theta(theta - step)
        down = float(np.sum(G * tree.matrix()))
        expected.append((up - down) / (2 * H))
    assert got.shape == (kernel.n_dims,) and kernel.n_dims == len(SPECS[name].kind.parameters) + (
        len(cols) - 1 if SPECS[name].kind.per_column_parameters else 0
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, cols", cases())
def test_engine_leaf_with_fixed_hyperparameters(name, cols):
    """A fixed amplitude (a factor of a product) leaves the other contractions unchanged."""
    kernel = catalogue_kernel(name, cols, variance_bounds="fixed")
    tree = KernelTree(kernel, X)
    np.testing.assert_allclose(tree.matrix(), kernel(X), rtol=1e-12, atol=1e-12)
    G = np.random.default_rng(6).normal(size=(N, N))
    _, dK = kernel(X, eval_gradient=True)
    tree.forward()
    np.testing.assert_allclose(tree.contract(G), np.einsum("ij,ijk->k", G, dK), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", PROFILED)
def test_distance_based_kinds_get_the_profile_leaf(name):
    tree = KernelTree(catalogue_kernel(name, (0,)), X)
    assert isinstance(tree.root, _StationaryLeaf) and tree.root.profile is SPECS[name].profile
    assert tree.root.lags is not None  # the gridded column is stored by lag


@pytest.mark.parametrize("name", ["PER", "CPER", "LIN", "C", "WN"])
def test_other_catalogue_kinds_get_fast_leaves(name):
    cols = column_choices(SPECS[name])[0]
    assert not isinstance(KernelTree(catalogue_kernel(name, cols), X).root, _GenericLeaf)


# -- defaults, conversion, description -------------------------------------------------------

DEGENERATE = np.column_stack([np.ones(N), np.repeat([0.0, 1.0], N // 2), rng.normal(size=N)])
SUMMARIES = [
    SUMMARY,
    DataSummary.from_data(X, y, discrete_features=[True, False, False]),
    DataSummary.from_data(X, y, spacing_floor=True),
    DataSummary.from_data(DEGENERATE),
    DataSummary.unit(3),
]


@pytest.mark.parametrize("name, cols", cases())
def test_defaults_lie_within_their_bounds(name, cols):
    spec = SPECS[name]
    for summary in SUMMARIES:
        defaults = spec.default_hyperparameters(cols, summary)
        assert tuple(defaults) and set(defaults) == set(spec.kind.parameters)
        for parameter, (init, (low, high)) in defaults.items():
            init, low, high = (np.asarray(v, dtype=float) for v in (init, low, high))
            assert np.all(np.isfinite(init)), parameter
            assert np.all(low < init) and np.all(init < high), (parameter, init, low, high)
            expected_size = len(cols) if parameter in spec.kind.per_column_parameters else 1
            assert init.size == low.size == high.size == expected_size
        assert spec.unit_amplitude(cols, summary) > 0


@pytest.mark.parametrize("name, cols", cases())
def test_structure_kernel_structure_round_trip(name, cols):
    leaf = Base(name, cols)
    kernel = to_kernel(leaf, summary=SUMMARY)
    assert isinstance(kernel.kernel if cols else kernel, SPECS[name].kernel_class)
    back = from_kernel(kernel, n_features=X.shape[1])
    assert back == leaf
    assert set(back.params) == set(SPECS[name].kind.parameters)


@pytest.mark.parametrize("name, cols", cases())
def test_describe_has_a_phrase_for_the_kind(name, cols):
    kind = KINDS[name]
    assert kind.phrase
    leaf = from_kernel(to_kernel(Base(name, cols), summary=SUMMARY), n_features=X.shape[1])
    var = " and ".join(f"`{FEATURES[c]}`" for c in cols) + (" jointly" if len(cols) > 1 else "")
    assert kind.phrase.format(var=var) in describe_term(leaf, FEATURES)
    if cols:
        # one factor of an interaction between columns: the short phrase
        assert kind.short_phrase
        other = 2 if 2 not in cols else 0
        interaction = describe_term(leaf * Base("LIN", other, {"variance": 1.0, "offset": 0.0}), FEATURES)
        assert kind.short_phrase.format(var=var) in interaction, interaction
