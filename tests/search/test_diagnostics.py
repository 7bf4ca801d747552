"""Diagnostics of degenerate optima: hyperparameters at bounds, terms constant or white noise on the data."""

import math
import warnings

import numpy as np
import pytest

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor, DegenerateOptimumWarning, OutlierWarning
from skgpsearch._search._diagnostics import (
    CONSTANT_CORRELATION,
    CONSTANT_SPREAD,
    WHITE_NOISE_CORRELATION,
    diagnose,
    grouped_findings,
    warn_about_degenerate_optimum,
    warn_about_outliers,
    white_noise_term,
)
from skgpsearch.grammar import Base, kind_names, parse
from skgpsearch.inspection import describe
from skgpsearch.kernels import DataSummary, to_kernel

NOISE_BOUNDS = (1e-6, 10.0)


def _grid(n=200):
    return np.linspace(0.0, 1.0, n)[:, None]


def _fresh_kernel(text, X):
    return to_kernel(parse(text), summary=DataSummary.from_data(X, np.sin(6 * X[:, 0])))


@pytest.mark.parametrize("kind", kind_names())
def test_each_parameter_at_each_bound_is_reported_once_and_defaults_are_clean(kind):
    X = _grid()
    text = kind if kind in ("C", "WN") else f"{kind}(0)"
    kernel = _fresh_kernel(text, X)
    # the defaults sit inside their bounds, in a model whose terms are neither constant nor white noise
    assert diagnose(kernel, X, (0.1, NOISE_BOUNDS)) == ()
    names = [h.name.split("__")[-1] for h in kernel.hyperparameters if not h.fixed]
    assert len(names) == kernel.theta.size
    interior = kernel.theta.copy()
    for i, name in enumerate(names):
        for side, column in (("lower", 0), ("upper", 1)):
            theta = interior.copy()
            theta[i] = kernel.bounds[i, column]
            kernel.theta = theta
            at_bound = [f for f in diagnose(kernel, X) if "bound" in f]
            if name == "lengthscale" and side == "upper" and kind in ("PER", "CPER"):
                assert at_bound == []  # the sinusoid limit of a periodic shape is not degenerate
                continue
            assert len(at_bound) == 1 and at_bound[0].startswith(f"{text} has its {name} at its {side} bound"), at_bound
    kernel.theta = interior


def test_a_classifiers_amplitude_at_its_upper_bound_is_no_finding():
    """Cleanly separated labels ask for a latent function as steep as the bounds allow; the default classifier
    warned of it on a clean table (test error 4-8 %), with advice that did not apply."""
    X = _grid()
    kernel = _fresh_kernel("SE(0)", X)
    theta = kernel.theta.copy()
    theta[0] = kernel.bounds[0, 1]  # the variance
    kernel.theta = theta
    assert diagnose(kernel, X)[0].startswith("SE(0) has its variance at its upper bound")
    assert diagnose(kernel, X, binary_labels=True) == ()
    theta[0] = kernel.bounds[0, 0]
    kernel.theta = theta
    assert diagnose(kernel, X, binary_labels=True)[0].startswith("SE(0) has its variance at its lower bound")
    # the constant model of labels without signal: its variance at the lower bound is its answer, not a caution
    # ("a structure without the term predicts the same": there is none)
    constant = _fresh_kernel("C", X)
    constant.theta = constant.bounds[:, 0]
    assert diagnose(constant, X)[0].startswith("C has its variance at its lower bound")
    assert diagnose(constant, X, binary_labels=True) == ()
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(80, 3))
    y = (np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.7 > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateOptimumWarning)
        model = CompositionalGPClassifier(max_depth=2, n_jobs=1, random_state=0).fit(X, y)
    findings = [finding for record in model.search_results_["diagnostics"] for finding in record]
    assert not any("variance at its upper bound" in finding for finding in findings)


@pytest.mark.parametrize("value, side", [(1e-6, "lower"), (1.0000005e-6, "lower"), (10.0, "upper")])
def test_noise_variance_at_a_bound(value, side):
    X = _grid()
    findings = diagnose(_fresh_kernel("SE(0)", X), X, (value, NOISE_BOUNDS))
    assert findings[0].startswith(f"the noise variance is at its {side} bound")
    assert diagnose(_fresh_kernel("SE(0)", X), X, (1e-4, NOISE_BOUNDS)) == ()


def _se_with_lengthscale(X, lengthscale):
    kernel = _fresh_kernel("SE(0)", X)
    kernel.set_params(kernel__lengthscale=lengthscale)
    return kernel


def test_white_noise_threshold_matches_the_nearest_neighbour_correlation():
    # equally spaced inputs, spacing d: the nearest neighbour's SE correlation is exp(-d²/2l²), which
    # falls below WHITE_NOISE_CORRELATION when l < d / sqrt(-2 log c)
    X = _grid(200)
    spacing = 1.0 / 199
    critical = spacing / math.sqrt(-2 * math.log(WHITE_NOISE_CORRELATION))
    below = diagnose(_se_with_lengthscale(X, 0.97 * critical), X)
    assert any("acts as white noise" in f for f in below)
    assert not any("acts as white noise" in f for f in diagnose(_se_with_lengthscale(X, 1.03 * critical), X))


def test_constant_threshold_matches_the_farthest_pair_correlation():
    # the farthest pair (distance = range R) has correlation exp(-R²/2l²), above CONSTANT_CORRELATION
    # for l > R / sqrt(-2 log c)
    X = _grid(200)
    critical = 1.0 / math.sqrt(-2 * math.log(CONSTANT_CORRELATION))
    assert any("is constant on the data" in f for f in diagnose(_se_with_lengthscale(X, 1.03 * critical), X))
    assert diagnose(_se_with_lengthscale(X, 0.97 * critical), X) == ()


def test_a_nearly_constant_factor_of_a_large_term_is_not_called_constant():
    # SE(0) * PER(0): a long SE times PER's constant part is a trend, as large as the term's variance allows
    X = _grid(200)
    kernel = _fresh_kernel("SE(0) * PER(0)", X)
    critical = 1.0 / math.sqrt(-2 * math.log(CONSTANT_CORRELATION))
    kernel.set_params(k1__kernel__lengthscale=1.5 * critical, k2__kernel__variance=1.0)  # all pairs above 0.99
    least = math.exp(-0.5 / (1.5 * critical) ** 2)
    for value, constant in ((0.5 * CONSTANT_SPREAD / (1 - least), True), (2 * CONSTANT_SPREAD / (1 - least), False)):
        kernel.set_params(k1__kernel__variance=value)
        findings = diagnose(kernel, X)
        assert any("SE(0) is constant on the data" in f for f in findings) == constant, (value, findings)


def test_a_short_lengthscale_on_the_levels_of_a_discrete_column_is_not_fitting_noise():
    rng = np.random.default_rng(0)
    levels = rng.integers(0, 3, 60).astype(float)[:, None]
    distinct = rng.uniform(0.0, 2.0, 60)[:, None]
    for X, reported in ((levels, False), (distinct, True)):
        kernel = _fresh_kernel("SE(0)", X)
        lower = next(h.bounds[0, 0] for h in kernel.hyperparameters if h.name.endswith("lengthscale"))
        kernel.set_params(kernel__lengthscale=lower)
        assert any("lengthscale at its lower bound" in f for f in diagnose(kernel, X)) == reported


def test_a_long_periodic_lengthscale_is_not_called_constant():
    # PER with a long lengthscale is a constant plus a sinusoid: highly correlated but not constant
    X = _grid(200)
    kernel = _fresh_kernel("PER(0)", X)
    kernel.set_params(kernel__lengthscale=30.0, kernel__period=0.2)
    assert not any("constant" in f for f in diagnose(kernel, X))


def test_a_column_that_does_not_matter_to_an_ard_product_is_not_degenerate():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (200, 3))
    summary = DataSummary.from_data(X, np.sin(6 * X[:, 0]))

    def column_2_at_its_longest_lengthscale(text):
        kernel = to_kernel(parse(text), summary=summary)
        params = kernel.get_params()
        for hyperparameter in kernel.hyperparameters:
            name = hyperparameter.name
            owner = kernel if name.count("__") < 2 else params[name.rsplit("__", 2)[0]]
            if name.endswith("lengthscale") and list(owner.columns) == [2]:
                kernel.set_params(**{hyperparameter.name: hyperparameter.bounds[0, 1]})
        return diagnose(kernel, X)

    # one ARD kernel whose third column does not matter: the product is the other two factors', well posed
    assert column_2_at_its_longest_lengthscale("SE(0) * SE(1) * SE(2)") == ()
    assert column_2_at_its_longest_lengthscale("SE(0) * SE(2) + SE(1) * SE(2)") == ()
    # the same base kernel alone as a term of the sum is still constant on the data, wherever else it is
    for text in ("SE(0) * SE(1) + SE(2)", "SE(2) + SE(0) * SE(2)", "SE(2)"):
        findings = column_2_at_its_longest_lengthscale(text)
        assert any("SE(2) has its lengthscale at its upper bound" in f for f in findings), (text, findings)
        assert any("SE(2) is constant on the data" in f for f in findings), (text, findings)


def test_products_acting_as_white_noise_jointly_are_reported():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (300, 2))
    kernel = _fresh_kernel("SE(0) * SE(1)", X)
    # each factor alone correlates neighbours along its column; jointly no pair is close
    kernel.set_params(k1__kernel__lengthscale=0.02, k2__kernel__lengthscale=0.02)
    assert any("SE(0) * SE(1) acts as white noise" in f for f in diagnose(kernel, X))


def _fit_quietly(model, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return [w for w in caught if issubclass(w.category, DegenerateOptimumWarning)]


def test_well_posed_regression_has_no_diagnostics():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, (120, 1))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(0.3 * X[:, 0]) + 0.1 * rng.normal(size=120)
    model = CompositionalGPRegressor(("SE", "LIN"), max_depth=2, random_state=0)
    assert _fit_quietly(model, X, y) == []
    assert model.diagnostics_ == []
    assert "Caution" not in describe(model)


def test_noise_free_data_drive_the_noise_to_its_lower_bound_and_everything_reports_it():
    # a smooth function without noise: the evidence optimum interpolates, noise variance at its floor
    X = np.linspace(0, 5, 60)[:, None]
    y = np.sin(X[:, 0])
    model = CompositionalGPRegressor(("SE",), max_depth=1, random_state=0)
    caught = _fit_quietly(model, X, y)
    assert model.noise_variance_ <= 1.01 * 1e-6 * np.var(y)
    expected = "the noise variance is at its lower bound: the model may be interpolating noise"
    assert model.diagnostics_ == [expected]
    assert len(caught) == 1 and expected in str(caught[0].message)
    assert f"Caution: {expected}." in describe(model)
    chosen = model.search_results_["structure"].index(str(model.structure_.without_values()))
    assert model.search_results_["diagnostics"][chosen] == expected


def test_targets_without_signal_end_in_a_degenerate_optimum():
    # pure noise: the SE term has nothing to explain; it ends constant, switched off (a bound), or
    # shares the noise as white noise (lengthscale below the spacing) -- all degenerate
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 10, (100, 1))
    y = rng.normal(size=100)
    model = CompositionalGPRegressor(("SE",), max_depth=1, random_state=0)
    caught = _fit_quietly(model, X, y)
    assert model.diagnostics_ and len(caught) == 1
    assert all(any(word in f for word in ("bound", "constant", "white noise")) for f in model.diagnostics_)


def test_feature_names_appear_in_the_caution():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"time": np.linspace(0, 5, 60)})
    y = np.sin(X["time"].to_numpy())
    model = CompositionalGPRegressor(("SE",), max_depth=1, random_state=0)
    _fit_quietly(model, X, y)
    # the noise finding names no column; a column finding would read SE(time)
    model.diagnostics_ = model.diagnostics_ + ["SE(0) is constant on the data"]
    assert "Caution: SE(time) is constant on the data." in describe(model)


def test_classifier_reports_per_class_diagnostics(three_class_fit):
    clf, _, _, caught = three_class_fit
    assert isinstance(clf.diagnostics_, list)
    assert all(f.startswith("class '") for f in clf.diagnostics_)
    assert (len(caught) == 1) == bool(clf.diagnostics_)
    assert "diagnostics" in clf.search_results_


def test_well_posed_classification_has_no_diagnostics():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (200, 2))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=200) > 0).astype(int)
    clf = CompositionalGPClassifier(max_depth=2, random_state=0)
    assert _fit_quietly(clf, X, y) == []
    assert clf.diagnostics_ == []


def test_the_warning_says_once_what_holds_for_several_terms():
    """One ARD kernel over many columns, most of them irrelevant: one sentence per finding, not per column."""
    upper = "has its lengthscale at its upper bound: the term is nearly constant (or linear) over the data"
    constant = ("is constant on the data (every pair of training points correlates above 0.99): a simpler "
                "structure says the same")
    noise = "the noise variance is at its lower bound: the model may be interpolating noise"
    findings = [noise, f"SE(6) {upper}", f"SE(8) {upper}", f"SE(5) {constant}", f"SE(11) {upper}",
                f"SE(6) {constant}", f"SE(0) * SE(1) acts as white noise on the data"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_about_degenerate_optimum(findings)
    message = str(caught[0].message)
    assert message.startswith(f"The chosen model's optimum is degenerate: {noise}; each of SE(6), SE(8) and "
                              f"SE(11) {upper}; each of SE(5) and SE(6) {constant}; SE(0) * SE(1) acts as white "
                              "noise on the data. ")


def test_noise_at_its_lower_bound_is_a_finding_unless_a_noise_term_covers_every_row():
    X = np.linspace(1.0, 10.0, 50)[:, None]
    kernel = to_kernel(parse("LIN(0) + LIN(0) * WN"), summary=DataSummary.from_data(X, X[:, 0]))
    at_bound = (NOISE_BOUNDS[0], NOISE_BOUNDS)
    # the offset below the data: LIN * WN has variance (x - 0)^2 >= 1 on every row, the noise is modelled
    kernel.set_params(k2__k1__kernel__offset=0.0)
    assert not any("noise variance" in finding for finding in diagnose(kernel, X, at_bound))
    # the offset at a training input: the noise vanishes there, as sure of that row as an interpolation
    kernel.set_params(k2__k1__kernel__offset=float(X[20, 0]))
    assert any("noise variance is at its lower bound" in finding for finding in diagnose(kernel, X, at_bound))
    # without a white-noise term the bound is always a finding
    plain = to_kernel(parse("LIN(0)"), summary=DataSummary.from_data(X, X[:, 0]))
    assert any("noise variance is at its lower bound" in finding for finding in diagnose(plain, X, at_bound))


@pytest.mark.parametrize("text", ["SE(0)", "SE(1) * SE(2)", "SE(0) * SE(1) * SE(2) * SE(3)", "SE(0, 1) * SE(3)",
                                  "SE(2) * C", "RQ(0) * SE(1)", "M32(0, 2)"])
def test_nearest_and_least_correlations_match_the_kernel_matrix(text):
    # the fast paths (scaled coordinates for SE products, the farthest pair for distance-based kernels)
    # against the brute-force n x n correlation matrix, on columns of different scales with tied values
    from skgpsearch._search._diagnostics import _least_correlation, _nearest_correlations
    from skgpsearch.kernels import from_kernel

    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 4)) * [1.0, 10.0, 0.1, 1.0] + [0.0, 50.0, 0.0, 0.0]
    X[:40, 3] = X[40:80, 3]
    kernel = _fresh_kernel(text, X)
    for _ in range(5):
        theta = kernel.theta + rng.normal(size=kernel.theta.size)
        kernel.theta = np.clip(theta, kernel.bounds[:, 0], kernel.bounds[:, 1])
        K = kernel(X)
        correlation = K / np.sqrt(np.outer(np.diag(K), np.diag(K)))
        term = from_kernel(kernel, n_features=X.shape[1])
        nearest = correlation.copy()
        np.fill_diagonal(nearest, -np.inf)
        np.testing.assert_allclose(_nearest_correlations(term, X, lambda: kernel), nearest.max(axis=1),
                                   rtol=0, atol=1e-10)
        if len(term.leaves) == 1:
            assert _least_correlation(kernel, term, X) == pytest.approx(correlation.min(), abs=1e-12)


def test_findings_of_different_binary_problems_are_not_merged():
    upper = "has its lengthscale at its upper bound: the term is nearly constant (or linear) over the data"
    findings = [f"class 'a' vs rest: SE(1) {upper}", f"class 'b' vs rest: SE(1) {upper}",
                f"class 'a' vs rest: SE(2) {upper}", "the noise variance is at its lower bound",
                "the noise variance is at its lower bound"]
    assert grouped_findings(findings) == [f"class 'a' vs rest: each of SE(1) and SE(2) {upper}",
                                          f"class 'b' vs rest: SE(1) {upper}",
                                          "the noise variance is at its lower bound"]


def test_describe_names_the_terms_of_one_finding_in_one_caution():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["time", "depth", "mass"])
    y = np.sin(X["time"].to_numpy())
    model = CompositionalGPRegressor(("SE",), max_depth=1, random_state=0)
    _fit_quietly(model, X, y)
    model.diagnostics_ = [f"SE({c}) is constant on the data" for c in range(3)]
    text = describe(model)
    assert text.count("Caution:") == 1
    assert "Caution: each of SE(time), SE(depth) and SE(mass) is constant on the data." in text


def test_a_white_noise_term_is_found_inside_a_product_with_a_white_noise_kernel():
    # a cycle times a kernel that correlates no two years: white noise in the form of a signal, which interpolates
    X = np.arange(1860.0, 1950.0)[:, None]
    cycle = Base("PER", 0, {"variance": 1.0, "lengthscale": 0.83, "period": 7.86})
    rough = Base("SE", 0, {"variance": 1.2, "lengthscale": 0.1})
    term = cycle * rough
    correlation = np.asarray(to_kernel(term)(X))
    correlation /= np.sqrt(np.outer(np.diag(correlation), np.diag(correlation)))
    np.fill_diagonal(correlation, -np.inf)
    assert np.median(correlation.max(axis=1)) < 1e-6  # the ground truth of the check, by brute force
    # PER * (SE + WN) = PER * SE + PER * WN: the signal term is found, though the product has a WN factor
    found = white_noise_term(cycle * (rough + Base("WN", params={"variance": 1e-6})), X, by_design=False)
    assert found is not None and sorted(leaf.kind.name for leaf in found.leaves) == ["PER", "SE"]
    # white noise by design (a WN factor) is found only when asked for; a smooth term is no white noise
    noise = Base("LIN", 0, {"variance": 1.0, "offset": 1800.0}) * Base("WN", params={"variance": 0.5})
    assert white_noise_term(noise, X) is not None and white_noise_term(noise, X, by_design=False) is None
    assert white_noise_term(cycle * Base("SE", 0, {"variance": 1.0, "lengthscale": 5.0}), X, by_design=False) is None


def test_the_diagnostics_find_a_white_noise_term_of_the_structure_multiplied_out():
    # discoveries' PER * (PER + WN): its PER * PER correlates no two years, though no top-level term is white noise
    X = np.arange(1860.0, 1950.0)[:, None]
    cycle = Base("PER", 0, {"variance": 1.0, "lengthscale": 0.83, "period": 7.86})
    rough = Base("SE", 0, {"variance": 1.2, "lengthscale": 0.1})
    smooth = Base("SE", 0, {"variance": 1.2, "lengthscale": 5.0})
    noise = Base("WN", params={"variance": 1e-3})
    summary = DataSummary.from_data(X, np.sin(X[:, 0]))
    findings = diagnose(to_kernel(cycle * (rough + noise), summary=summary), X)
    assert [f for f in findings if "acts as white noise" in f] == [
        f"{(cycle * rough).without_values()} acts as white noise on the data (the median training point correlates "
        f"with no other above {WHITE_NOISE_CORRELATION}): the model may be interpolating noise"]
    # the same product with a smooth factor is a signal
    assert not any("white noise" in f for f in diagnose(to_kernel(cycle * (smooth + noise), summary=summary), X))


def test_outliers_must_be_far_out_in_robust_units_and_large_against_the_targets():
    rng = np.random.default_rng(0)
    residuals = 1e-5 * rng.normal(size=60)
    residuals[0] = 7e-4  # noise-free data: the end of the inputs, 50 robust units out but 0.07 % of the targets' sd
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierWarning)
        warn_about_outliers(residuals, target_spread=1.0)
    with pytest.warns(OutlierWarning, match="row 0"):
        warn_about_outliers(residuals)  # without the targets' spread, robust units alone
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierWarning)
        # too few residuals for a robust spread: the first nine of them, the same far one among them
        warn_about_outliers(residuals[:9])
    residuals[0] = 0.5
    with pytest.warns(OutlierWarning, match="1 training point"):
        warn_about_outliers(residuals, target_spread=1.0)


def test_a_noise_free_function_is_not_said_to_have_outliers():
    x = np.linspace(0, 5, 40)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierWarning)
        CompositionalGPRegressor(max_depth=1, n_jobs=1, random_state=0).fit(x, np.sin(x[:, 0]))


def test_the_white_noise_by_design_is_that_of_the_products_with_a_white_noise_factor():
    from skgpsearch._search._diagnostics import white_noise_variance

    X = np.linspace(0.0, 10.0, 30)[:, None]
    summary = DataSummary.from_data(X, np.sin(X[:, 0]))
    kernel = to_kernel(parse("SE(0) + LIN(0) * WN"), summary=summary)
    noise_term = to_kernel(parse("LIN(0) * WN"), summary=summary)
    noise_term.theta = kernel.theta[-noise_term.theta.size:]  # (the terms' hyperparameters, in order)
    np.testing.assert_allclose(white_noise_variance(kernel, X), noise_term.diag(X))
    assert white_noise_variance(to_kernel(parse("SE(0) + LIN(0)"), summary=summary), X) is None
    # a change operator's sides meet in its switch: its white noise is not a term of its own
    assert white_noise_variance(to_kernel(parse("CP(0, C, SE(0) + LIN(0) * WN)"), summary=summary), X) is None
