"""Shared test helpers: the scikit-learn estimator checks split by cost, and fits several test files reuse.

The README's ``python -m pytest`` runs the fast suite (``-m 'not slow'`` in
pyproject); ``python -m pytest -m slow`` runs the rest, as CI's second step.
"""

from __future__ import annotations

import functools
import os
import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_limits
from sklearn.utils.estimator_checks import estimator_checks_generator

from skgpsearch import CompositionalGPClassifier, DegenerateOptimumWarning


if os.environ.get("PYTEST_XDIST_WORKER"):
    # test processes share the cores: threaded BLAS in each would oversubscribe them
    threadpool_limits(limits=1, user_api="blas")


def _check_name(check) -> str:
    return check.func.__name__ if isinstance(check, functools.partial) else check.__name__


def _param_id(value) -> str:
    if callable(value) and not hasattr(value, "get_params"):
        return _check_name(value)
    return repr(value).replace("\n", "").replace(" ", "")


#: The scikit-learn checks of input handling alone (dtypes, NaN, shapes, sparse and read-only arrays, y that is
#: not a target): an estimator validates its input once, before any likelihood, grammar or selection rule acts,
#: so the first configuration checks it for every other.
INPUT_CHECKS = frozenset({
    "check_dtype_object", "check_estimators_dtypes", "check_complex_data", "check_estimators_nan_inf",
    "check_estimators_empty_data_messages", "check_fit2d_1sample", "check_fit2d_1feature", "check_fit1d",
    "check_fit2d_predict1d", "check_supervised_y_no_nan", "check_supervised_y_2d", "check_requires_y_none",
    "check_regressor_data_not_an_array", "check_classifier_data_not_an_array", "check_regressors_int",
    "check_classifiers_regression_target", "check_f_contiguous_array_estimator", "check_readonly_memmap_input",
    "check_estimator_sparse_array", "check_estimator_sparse_matrix", "check_estimator_sparse_tag",
    "check_positive_only_tag_during_fit", "check_n_features_in_after_fitting", "check_array_api_input",
})


def estimator_checks(fast=(), slow=(), slow_checks=(), first_only=frozenset()):
    """``parametrize_with_checks`` over ``fast`` and ``slow`` estimators, with the costly pairs marked slow.

    Every check of a ``slow`` estimator is marked slow, and so are the
    checks named in ``slow_checks`` (those that fit on the checks' largest
    data) of the ``fast`` ones. Checks scikit-learn expects to fail are
    xfail, as with ``parametrize_with_checks``. The read-only reruns of the
    training checks that others cover are left out (see
    ``_repeats_read_only_input``): each refits on the checks' largest data;
    so are the checks named in ``first_only`` of every estimator but the
    first (for example ``INPUT_CHECKS``, where the configurations share
    their code).
    """
    params = []
    estimators = [(e, False) for e in fast] + [(e, True) for e in slow]
    for position, (estimator, costly) in enumerate(estimators):
        for instance, check in estimator_checks_generator(estimator, legacy=True, mark="xfail"):
            if _repeats_read_only_input(check, costly) or (position > 0 and _check_name(check) in first_only):
                continue
            marked = costly or _check_name(check) in slow_checks
            params.append(pytest.param(instance, check, marks=[pytest.mark.slow] if marked else []))
    return pytest.mark.parametrize("estimator, check", params, ids=_param_id)


def _repeats_read_only_input(check, costly) -> bool:
    """Whether ``check`` is a read-only rerun of a training check that others cover: its float32 read-only
    variant (and ``check_readonly_memmap_input``) reads read-only memory too, and a ``slow`` estimator (another
    likelihood) validates its input with the same code as the ``fast`` ones, whose variants run."""
    keywords = check.keywords if isinstance(check, functools.partial) else {}
    if not keywords.get("readonly_memmap") or not _check_name(check).endswith("_train"):
        return False
    return costly or "X_dtype" not in keywords


def two_moons_like(n=150, seed=0, flip=0.0):
    """Three columns; labels from 2 sin(2 x0) + 1.5 x1 (column 2 irrelevant), a share ``flip`` of them flipped."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 3))
    f = 2.0 * np.sin(2 * X[:, 0]) + 1.5 * X[:, 1]
    y = (f > 0).astype(int)
    if flip:
        flipped = rng.random(n) < flip
        y[flipped] = 1 - y[flipped]
    return X, y


def regression_data_with_outliers(n=30, seed=0):
    """Two columns; y = sin(2 x0) + 0.3 x1 + noise, with two gross outliers (rows 3 and 17)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, size=(n, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    y[[3, 17]] += [4.0, -6.0]
    return X, y


def laplace_refit_loo_log_densities(kernel, mean, likelihood, lik_theta, X, y):
    """Brute-force leave-one-out: log p(y_i | y_-i) from a Laplace posterior fitted without row i, row by row."""
    from skgpsearch._engine._laplace import LaplacePosterior

    densities = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        posterior = LaplacePosterior(kernel, mean, likelihood, lik_theta, X[keep], y[keep])
        latent_mean, latent_var = posterior.predict_latent(X[i:i + 1], return_var=True)
        densities.append(likelihood.log_predictive_density(y[i:i + 1], latent_mean, latent_var, lik_theta)[0])
    return np.array(densities)


@pytest.fixture(scope="session")
def three_class_fit():
    """A one-vs-rest classifier (depth 1) on three classes cut from column 0 of 90 rows.

    Returns (model, X, y, the DegenerateOptimumWarnings its fit raised).
    """
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(90, 2))
    y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.7, 0.7])]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = CompositionalGPClassifier(max_depth=1, n_restarts=0, random_state=0).fit(X, y)
    return model, X, y, [w for w in caught if issubclass(w.category, DegenerateOptimumWarning)]


@pytest.fixture
def search_settings(monkeypatch):
    """The ``SearchSettings`` of every pipeline an estimator runs while the test runs, in order."""
    from skgpsearch._search import _pipeline

    seen = []
    run = _pipeline.SearchPipeline.run

    def recording_run(self, *args, **kwargs):
        seen.append(self.settings)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(_pipeline.SearchPipeline, "run", recording_run)
    return seen
