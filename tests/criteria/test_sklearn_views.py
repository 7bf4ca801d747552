"""The criteria on scikit-learn's GPs and on the wrong task, against values computed here with scipy."""

import math
import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgpsearch import CompositionalGPRegressor
from skgpsearch.criteria import get_criterion


def grams(n=30, scale=1000.0, seed=0):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0, 5, n))[:, None]
    return X, scale * (np.sin(X[:, 0]) + 0.1 * rng.normal(size=n))


@pytest.fixture(scope="module")
def normalised_gp():
    X, y = grams()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp = GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(0.1), normalize_y=True,
                                      random_state=0).fit(X, y)
    return gp, X, y


def test_the_evidence_of_a_normalising_gp_is_that_of_the_targets_in_their_units(normalised_gp):
    # scikit-learn's value is of y / sd: n log(sd) = 194.8 nats above log p(y) for targets in grams
    # (scikit-learn adds alpha = 1e-10 to the diagonal of the standardised kernel)
    gp, X, y = normalised_gp
    direct = multivariate_normal(np.full(y.size, y.mean()), y.std() ** 2 * (gp.kernel_(X) + gp.alpha * np.eye(y.size))
                                 ).logpdf(y)
    assert get_criterion("lml")(gp, X, y) == pytest.approx(direct, abs=1e-8)
    k = gp.kernel_.n_dims
    assert get_criterion("bic")(gp, X, y) == pytest.approx(direct - 0.5 * k * math.log(y.size), abs=1e-8)
    # on other rows, the fitted hyperparameters evaluated there, also in the targets' units
    X_new, y_new = grams(n=20, seed=1)
    direct_new = multivariate_normal(np.full(20, y.mean()), y.std() ** 2 * (gp.kernel_(X_new) + gp.alpha * np.eye(20))
                                     ).logpdf(y_new)
    assert get_criterion("lml")(gp, X_new, y_new) == pytest.approx(direct_new, abs=1e-8)
    # and equal to our estimator's at the same kernel (same structure, hyperparameters and units)
    ours = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, baseline_models=False, random_state=0,
                                    n_jobs=1).fit(X, y)
    theta = np.append(ours.kernel_.k1.theta, np.log(ours.kernel_.k2.noise_level))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp_at_ours = GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(0.1), normalize_y=True,
                                              optimizer=None).fit(X, y)
    gp_at_ours.kernel_.theta = theta
    gp_at_ours.log_marginal_likelihood_value_ = gp_at_ours.log_marginal_likelihood(theta)
    assert get_criterion("lml")(gp_at_ours, X, y) == pytest.approx(ours.log_marginal_likelihood_value_, abs=1e-6)


def test_an_evidence_criterion_ranks_normalize_y_by_the_targets_own_density():
    # targets in kilograms: normalising them is the far better model of y (81 nats of -BIC/2, computed here),
    # which the view's standardised evidence had hidden (it chose normalize_y=False)
    X, y = grams(scale=0.001)
    scores = {}
    for normalize in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gp = GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(0.1), normalize_y=normalize,
                                          random_state=0).fit(X, y)
        mean, scale = (y.mean(), y.std()) if normalize else (0.0, 1.0)
        covariance = scale**2 * (gp.kernel_(X) + gp.alpha * np.eye(y.size))
        direct = multivariate_normal(np.full(y.size, mean), covariance).logpdf(y)
        scores[normalize] = get_criterion("bic")(gp, X, y)
        assert scores[normalize] == pytest.approx(direct - 0.5 * gp.kernel_.n_dims * math.log(y.size), abs=1e-6)
    assert scores[True] > scores[False] + 50


def test_bic_light_does_not_count_the_white_noise_of_a_scikit_learn_regressor(normalised_gp):
    # the WhiteKernel is the noise, as our estimators' noise variance: one base kernel, SE
    gp, X, y = normalised_gp
    penalty = get_criterion("bic_light")(gp, X, y) - get_criterion("lml")(gp, X, y)
    assert penalty == pytest.approx(-0.5 * math.log(y.size))


@pytest.mark.parametrize("name", ["msll", "smse", "kfold", "map", "laplace", "asc_bayes"])
def test_criteria_a_scikit_learn_regressor_cannot_serve_are_refused_by_name(normalised_gp, name):
    gp, X, y = normalised_gp
    with pytest.raises(ValueError, match=rf"'{name}' needs a skgpsearch estimator; scikit-learn's "
                                         r"GaussianProcessRegressor can be scored by lml, aic, bic"):
        get_criterion(name)(gp, X, y)


def test_criteria_of_the_other_task_or_beyond_a_binary_classifier_are_refused():
    X, y = grams()
    gp = GaussianProcessRegressor(RBF()).fit(X, y)
    with pytest.raises(ValueError, match="'cv_accuracy' applies to classifiers only; for regression use one of"):
        get_criterion("cv_accuracy")(gp, X, y)
    ours = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, baseline_models=False, n_jobs=1).fit(X, y)
    with pytest.raises(ValueError, match="'cv_accuracy' applies to classifiers only"):
        get_criterion("cv_accuracy")(ours, X, y)  # was NaN
    labels = (y > np.median(y)).astype(int)
    binary = GaussianProcessClassifier(RBF()).fit(X, labels)
    for name in ("loo", "map", "cv_accuracy"):
        with pytest.raises(ValueError, match=rf"'{name}' (applies to regression only|needs a skgpsearch estimator)"):
            get_criterion(name)(binary, X, labels)
    assert np.isfinite(get_criterion("bic")(binary, X, labels))
    three = np.digitize(X[:, 0], [1.7, 3.4])
    multiclass = GaussianProcessClassifier(RBF()).fit(X, three)
    with pytest.raises(ValueError, match="has 3 classes, but the model-selection criteria score a binary one"):
        get_criterion("bic")(multiclass, X, three)


def test_msll_refuses_a_constant_training_target():
    X, _ = grams(n=12)
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, baseline_models=False,
                                     n_jobs=1).fit(X, np.full(12, 3.0))
    with pytest.raises(ValueError, match="training target is constant .* use smse, or loo"):
        get_criterion("msll")(model, X, np.full(12, 3.0))
