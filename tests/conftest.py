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


def estimator_checks(fast=(), slow=(), slow_checks=()):
    """``parametrize_with_checks`` over ``fast`` and ``slow`` estimators, with the costly pairs marked slow.

    Every check of a ``slow`` estimator is marked slow, and so are the
    checks named in ``slow_checks`` (those that fit on the checks' largest
    data) of the ``fast`` ones. Checks scikit-learn expects to fail are
    xfail, as with ``parametrize_with_checks``.
    """
    params = []
    for estimator, costly in [(e, False) for e in fast] + [(e, True) for e in slow]:
        for instance, check in estimator_checks_generator(estimator, legacy=True, mark="xfail"):
            marked = costly or _check_name(check) in slow_checks
            params.append(pytest.param(instance, check, marks=[pytest.mark.slow] if marked else []))
    return pytest.mark.parametrize("estimator, check", params, ids=_param_id)


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
