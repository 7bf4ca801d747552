"""Input warping of tables: the transform against scikit-learn's, and what it does for the estimators."""

import re

import numpy as np
import pytest
from sklearn.metrics import log_loss
from sklearn.preprocessing import PowerTransformer

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor
from skgpsearch._estimators._warping import InputWarping
from skgpsearch._search import (WARP_MIN_EVIDENCE_GAIN, classification_likelihood, classification_warping_evidence_gain,
                                regression_warping_evidence_gain)


def _skewed_table(n, seed):
    rng = np.random.default_rng(seed)
    # a log-normal column, an exponential one, a uniform one and a flag
    return np.column_stack([np.exp(rng.normal(size=n)), rng.exponential(3.0, size=n), rng.uniform(-2, 2, size=n),
                            rng.integers(0, 2, size=n)])


def test_skewed_columns_are_warped_as_scikit_learn_would_and_the_others_only_standardised():
    X = _skewed_table(400, 0)
    warping = InputWarping().fit(X)
    Z = warping.transform(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(Z.std(axis=0), 1.0, atol=1e-10)
    # skewed columns: scikit-learn's own Yeo-Johnson fit (another optimiser) on the columns in units of their sd
    assert warping.lambdas_[0] != 1.0 and warping.lambdas_[1] != 1.0
    reference = PowerTransformer(method="yeo-johnson").fit(X[:, :2] / X[:, :2].std(axis=0))
    np.testing.assert_allclose(warping.lambdas_[:2], reference.lambdas_, rtol=1e-3)
    np.testing.assert_allclose(Z[:, :2], reference.transform(X[:, :2] / X[:, :2].std(axis=0)), atol=1e-3)
    # a uniform column is not made clearly more normal, a flag has two values (at most 10): both stay linear
    assert warping.lambdas_[2] == 1.0 and warping.lambdas_[3] == 1.0
    np.testing.assert_allclose(Z[:, 2:], (X[:, 2:] - X[:, 2:].mean(axis=0)) / X[:, 2:].std(axis=0), atol=1e-10)


def test_the_warp_does_not_depend_on_units_and_stays_finite_far_outside_the_data():
    X = _skewed_table(300, 1)
    Z = InputWarping().fit(X).transform(X)
    np.testing.assert_allclose(InputWarping().fit(X * 1000.0).transform(X * 1000.0), Z, atol=1e-6)
    warping = InputWarping().fit(X)
    far = warping.transform(np.array([[1e300, 1e300, -1e300, 5.0], [0.0, 0.0, 0.0, 0.0]]))
    assert np.all(np.isfinite(far))
    # a skewed rating of at most 10 levels stays linear: its levels are not moved by how often they occur
    ratings = np.minimum(np.random.default_rng(7).geometric(0.4, size=300), 10).astype(float)
    assert InputWarping().fit(np.column_stack([ratings, X[:, 0]])).lambdas_.tolist()[0] == 1.0
    constant = InputWarping().fit(np.column_stack([np.ones(20), np.arange(20.0)]))
    assert np.all(np.isfinite(constant.transform(np.array([[1.0, 3.0], [2.0, 50.0]]))))


@pytest.mark.slow  # over 3 s on 2 cores
def test_a_skewed_table_is_predicted_better_warped_and_explained_in_its_own_units():
    rng = np.random.default_rng(2)
    X = _skewed_table(150, 3)
    y = np.sin(2 * np.log(X[:, 0])) + 0.1 * rng.normal(size=150)
    X_test = _skewed_table(300, 4)
    y_test = np.sin(2 * np.log(X_test[:, 0]))
    # (one model each, selected by the criterion: then the components add up to the prediction exactly)
    warped = CompositionalGPRegressor(max_depth=2, random_state=0, selection="criterion").fit(X, y)
    plain = CompositionalGPRegressor(max_depth=2, random_state=0, selection="criterion", warp_inputs=False).fit(X, y)
    assert warped.input_transformer_ is not None and plain.input_transformer_ is None
    assert warped.input_transformer_.evidence_gain_ > WARP_MIN_EVIDENCE_GAIN
    error_warped = np.mean((warped.predict(X_test) - y_test) ** 2)
    error_plain = np.mean((plain.predict(X_test) - y_test) ** 2)
    assert error_warped < 0.5 * error_plain
    # the training inputs stay in the user's units; the components add up to predict on new rows
    np.testing.assert_array_equal(warped.X_train_, X)
    parts = warped.decompose(X_test[:20])
    np.testing.assert_allclose(parts.X, X_test[:20])
    np.testing.assert_allclose(parts.mean, warped.predict(X_test[:20]), atol=1e-8)
    assert "Yeo-Johnson" in warped.describe() and "`x0` (exponent" in warped.describe()


def test_auto_warps_tables_of_distance_based_kernels_only():
    rng = np.random.default_rng(5)
    series = np.exp(rng.uniform(0, 3, size=(40, 1)))
    y = np.log(series[:, 0]) + 0.1 * rng.normal(size=40)
    # one column (a series): its periodic and linear kernels need its own units
    assert CompositionalGPRegressor(max_depth=1, random_state=0).fit(series, y).input_transformer_ is None
    X = _skewed_table(40, 6)
    # (no baselines: the decision is made before the search, from the base kernels; a third of these fits' time)
    with_periodic = CompositionalGPRegressor(base_kernels=("SE", "PER"), max_depth=1, baseline_models=False,
                                             random_state=0).fit(X, y)
    assert with_periodic.input_transformer_ is None
    forced = CompositionalGPRegressor(base_kernels=("SE", "PER"), max_depth=1, baseline_models=False, random_state=0,
                                      warp_inputs=True).fit(X, y)
    assert forced.input_transformer_ is not None
    labels = (X[:, 0] > np.median(X[:, 0])).astype(int)
    clf = CompositionalGPClassifier(max_depth=1, baseline_models=False, random_state=0, warp_inputs=True).fit(X, labels)
    assert clf.input_transformer_ is not None and clf.input_transformer_.lambdas_[0] != 1.0
    with pytest.raises(ValueError, match="warp_inputs"):
        CompositionalGPRegressor(warp_inputs="always").fit(X, y)


def _wavy_in_log_labels(n, seed, noise=0.5):
    """Labels of a latent function that oscillates in log(x0): fast where x0 is dense, slowly in its tail."""
    X = _skewed_table(n, seed)
    latent = 3.0 * np.sin(3.0 * np.log(X[:, 0]))
    return X, (latent + noise * np.random.default_rng(seed).normal(size=n) > 0).astype(int)


@pytest.mark.slow  # over 5 s on 2 cores
def test_the_classifier_warps_where_the_evidence_prefers_the_warped_columns():
    X, y = _wavy_in_log_labels(150, 1)
    X_test, y_test = _wavy_in_log_labels(2000, 101)
    auto = CompositionalGPClassifier(max_depth=1, baseline_models=False, random_state=0).fit(X, y)
    plain = CompositionalGPClassifier(max_depth=1, baseline_models=False, random_state=0, warp_inputs=False).fit(X, y)
    assert auto.input_transformer_ is not None and plain.input_transformer_ is None
    assert auto.input_transformer_.evidence_gain_ > WARP_MIN_EVIDENCE_GAIN
    # the evidence's choice predicts fresh noisy labels better: here a test log loss of 0.042 against 0.134
    # (5.5 % wrong against 10.3 % on the noise-free labels)
    assert log_loss(y_test, auto.predict_proba(X_test)) < 0.6 * log_loss(y_test, plain.predict_proba(X_test))


@pytest.mark.slow  # over 5 s on 2 cores
def test_the_evidence_gain_of_the_warp_is_a_difference_of_two_fits_on_the_same_rows():
    X, y = _wavy_in_log_labels(200, 2)
    X_warped = InputWarping().fit(X).transform(X)
    labels = [np.where(y == 1, 1.0, -1.0)]
    likelihood, discrete = classification_likelihood("probit"), np.array([False, False, False, True])
    gain = classification_warping_evidence_gain(X, X_warped, labels, likelihood, discrete, seed=0)
    # swapping the inputs swaps the fits (same rows, same seeds): the gain changes sign exactly
    swapped = classification_warping_evidence_gain(X_warped, X, labels, likelihood, discrete, seed=0)
    assert gain == pytest.approx(-swapped)
    assert gain > WARP_MIN_EVIDENCE_GAIN
    # two binary problems (as a 3-class fit has) add their gains; the same problem twice doubles it
    assert classification_warping_evidence_gain(X, X_warped, labels * 2, likelihood, discrete, seed=0, n_jobs=2) == \
        pytest.approx(gain + classification_warping_evidence_gain(X, X_warped, labels, likelihood, discrete, seed=1),
                      rel=1e-6)


@pytest.mark.slow  # over 5 s on 2 cores
def test_the_regressor_leaves_a_table_unwarped_where_the_evidence_prefers_its_own_columns():
    # y linear in the skewed column itself: the warp bends a straight line into an exponential
    rng = np.random.default_rng(8)
    X = _skewed_table(150, 9)
    y = X[:, 0] + 0.3 * X[:, 1] + 0.2 * rng.normal(size=150)
    X_warped = InputWarping().fit(X).transform(X)
    gain = regression_warping_evidence_gain(X, X_warped, y, seed=0)
    assert gain < -WARP_MIN_EVIDENCE_GAIN
    # an independent check of the sign: scikit-learn's own ARD GP, fitted on both inputs
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    def evidence(inputs):
        kernel = ConstantKernel() * RBF(np.ones(4)) + WhiteKernel(0.1)
        gp = GaussianProcessRegressor(kernel, n_restarts_optimizer=2, random_state=0)
        return gp.fit(inputs, (y - y.mean()) / y.std()).log_marginal_likelihood_value_

    assert evidence(X_warped) < evidence(X) - WARP_MIN_EVIDENCE_GAIN
    assert gain == pytest.approx(-regression_warping_evidence_gain(X_warped, X, y, seed=0))
    auto = CompositionalGPRegressor(max_depth=1, random_state=0).fit(X, y)
    assert auto.input_transformer_ is None and auto._warping_evidence_gain == pytest.approx(gain)
    # and the evidence's choice predicts better than the warp (here 0.0018 against 0.0094 squared error)
    forced = CompositionalGPRegressor(max_depth=1, random_state=0, warp_inputs=True).fit(X, y)
    X_test = _skewed_table(500, 10)
    y_test = X_test[:, 0] + 0.3 * X_test[:, 1]
    assert np.mean((auto.predict(X_test) - y_test) ** 2) < 0.5 * np.mean((forced.predict(X_test) - y_test) ** 2)


@pytest.mark.slow  # over 5 s on 2 cores
def test_the_regressors_warp_decision_fits_every_row_up_to_a_thousand():
    """The gain is the evidence difference of the two ARD kernels on all 450 rows (scikit-learn's fits as the
    reference), not on a sample of them."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    rng = np.random.default_rng(3)
    X = _skewed_table(450, 11)
    y = np.log1p(X[:, 0]) + 0.3 * X[:, 1] + 0.3 * rng.normal(size=450)
    X_warped = InputWarping().fit(X).transform(X)
    standardised = (y - y.mean()) / y.std()

    def evidence(inputs):
        gp = GaussianProcessRegressor(ConstantKernel() * RBF(np.ones(4)) + WhiteKernel(0.1), random_state=0)
        return gp.fit(inputs, standardised).log_marginal_likelihood_value_

    reference = evidence(X_warped) - evidence(X)
    assert abs(reference) > 5.0
    assert regression_warping_evidence_gain(X, X_warped, y, seed=0) == pytest.approx(reference, abs=0.5)


def test_the_inverse_of_the_warp_gives_back_the_users_values_on_both_sides_of_zero():
    rng = np.random.default_rng(5)
    # right- and left-skewed columns that cross zero: both branches of Yeo-Johnson, exponents below and above 1
    X = np.column_stack([np.exp(rng.normal(size=300)) - 1.2, 1.5 - np.exp(rng.normal(size=300)),
                         rng.uniform(-2, 2, size=300)])
    warping = InputWarping().fit(X)
    assert warping.lambdas_[0] < 1.0 < warping.lambdas_[1] and warping.lambdas_[2] == 1.0
    Z = warping.transform(X)
    for j in range(3):
        np.testing.assert_allclose(warping.inverse_transform_column(j, Z[:, j]), X[:, j], atol=1e-9)
    # independent: scikit-learn's inverse of the same Yeo-Johnson exponents, on the columns in units of their sd
    reference = PowerTransformer(method="yeo-johnson", standardize=False)
    reference.fit(X[:, :2] / warping.spread_[:2])
    reference.lambdas_ = warping.lambdas_[:2]
    grid = np.linspace(-2.5, 2.5, 11)
    unscaled = np.column_stack([grid * warping.scale_[j] + warping.mean_[j] for j in range(2)])
    expected = reference.inverse_transform(unscaled) * warping.spread_[:2]
    for j in range(2):
        np.testing.assert_allclose(warping.inverse_transform_column(j, grid), expected[:, j], rtol=1e-9, atol=1e-12)


def test_a_change_on_a_warped_column_is_described_where_it_is_in_the_users_units():
    from skgpsearch.grammar import FixedStructureGrammar, parse
    rng = np.random.default_rng(3)
    # a log-normal column with a step at 2 (the 75th percentile or so), a second column of noise
    X = np.column_stack([np.exp(rng.normal(size=150)), rng.uniform(-1, 1, size=150)])
    y = np.where(X[:, 0] < 2.0, 0.0, 2.0) + 0.1 * rng.normal(size=150)
    model = CompositionalGPRegressor(grammar=FixedStructureGrammar(parse("CP(0, C, C) + SE(1)")), max_depth=1,
                                     baseline_models=False, random_state=0, warp_inputs=True).fit(X, y)
    assert model.input_transformer_ is not None and model.input_transformer_.lambdas_[0] != 1.0
    switch = next(s for c in model.decompose() for s in c.switches)
    # between the two training values the step lies between (independent of the warp)
    below, above = X[X[:, 0] < 2.0, 0].max(), X[X[:, 0] >= 2.0, 0].min()
    assert below - 0.1 <= switch.location <= above + 0.1
    text = model.describe()
    told = re.search(r"a constant level until ≈ ([0-9.]+) in `x0`, then another \(a step\)", text)
    assert told and below - 0.1 <= float(told.group(1)) <= above + 0.1
