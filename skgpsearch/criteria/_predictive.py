"""Predictive criteria: closed-form leave-one-out, and test-set metrics.

Leave-one-out (Rasmussen & Williams 2006, §5.4.2): with K_y = K + σ²I and
α = K_y^{-1} y, the predictive distribution of y_i from all other points at
fixed hyperparameters is N(μ_i, σ_i²) with

    μ_i = y_i − α_i / [K_y^{-1}]_ii,    σ_i² = 1 / [K_y^{-1}]_ii,

so all n held-out densities cost one Cholesky factorisation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._engine._linalg import NumericalError, cholesky_inverse, cholesky_solve, jittered_cholesky
from ._base import Criterion

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from sklearn.model_selection import BaseCrossValidator

    from .._engine._exact import RegressionObjective

__all__ = ["LOO", "LOOMSE", "KFoldCV", "MSLL", "SMSE", "loo_predictive"]

_LOG_2PI = math.log(2.0 * math.pi)


def loo_predictive(objective: RegressionObjective, theta: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out means and variances (fitting scale) at fixed hyperparameters."""
    K = objective.covariance(np.asarray(theta, dtype=float))
    L, _ = jittered_cholesky(K)
    alpha = cholesky_solve(L, objective.y)
    inverse_diagonal = np.diag(cholesky_inverse(L)).copy()
    variance = 1.0 / inverse_diagonal
    mean = objective.y - alpha * variance
    return mean, variance


def _loo_residuals(estimator, X, y):
    """Leave-one-out residuals and variances on the fitting scale, or None if singular."""
    objective, theta, _ = estimator._fitted_objective(X, y)
    try:
        mean, variance = loo_predictive(objective, theta)
    except NumericalError:
        return None
    return objective.y - mean, variance


class LOO(Criterion):
    """Closed-form leave-one-out log predictive density Σ_i log p(y_i | y_−i, θ̂), in nats.

    Hyperparameters are those of the fitted model (no refit per point). On data
    other than the training data, the same quantity for that data. The closed
    form is that of R&W §5.4.2 [1]_.

    References
    ----------
    .. [1] C. E. Rasmussen and C. K. I. Williams, "Gaussian Processes for Machine
       Learning", MIT Press, 2006, §5.4.2.
    """

    name = "loo"

    def _score(self, estimator, X, y):
        parts = _loo_residuals(estimator, X, y)
        if parts is None:
            return float("nan")
        residual, variance = parts
        scale = estimator._y_train_std
        densities = -0.5 * np.log(variance) - 0.5 * residual**2 / variance - 0.5 * _LOG_2PI - math.log(scale)
        return float(np.sum(densities))


class LOOMSE(Criterion):
    """Negative closed-form leave-one-out mean squared error (original units), greater is better.

    The leave-one-out means are those of :class:`LOO` (R&W §5.4.2 [1]_).

    References
    ----------
    .. [1] C. E. Rasmussen and C. K. I. Williams, "Gaussian Processes for Machine
       Learning", MIT Press, 2006, §5.4.2.
    """

    name = "loo_mse"

    def _score(self, estimator, X, y):
        parts = _loo_residuals(estimator, X, y)
        if parts is None:
            return float("nan")
        return -float(np.mean(parts[0] ** 2)) * estimator._y_train_std**2


class MSLL(Criterion):
    """Negative mean standardised log loss on test data (R&W eq. 2.34), greater is better.

    The loss of each test point is −log N(y_i | μ_i, σ_i² + σ_n²) minus that of
    a Gaussian with the training targets' mean and variance; 0 is the trivial
    model, positive values are better than it (R&W §2.5 [1]_).

    References
    ----------
    .. [1] C. E. Rasmussen and C. K. I. Williams, "Gaussian Processes for Machine
       Learning", MIT Press, 2006, §2.5, eq. 2.34.
    """

    name = "msll"
    held_out_only = True

    def _score(self, estimator, X, y):
        y = np.asarray(y, dtype=float).ravel()
        mean, std = estimator.predict(X, return_std=True)
        variance = std**2
        loss = 0.5 * np.log(2 * np.pi * variance) + 0.5 * (y - mean) ** 2 / variance
        m0, v0 = float(np.mean(estimator.y_train_)), float(np.var(estimator.y_train_))
        if not v0 > 0:
            raise ValueError(
                "msll compares the model's predictive density with a Gaussian of the training targets' mean and "
                "variance, but the training target is constant (variance 0), so there is nothing to compare with; "
                "use smse, or loo (the leave-one-out log predictive density)."
            )
        trivial = 0.5 * np.log(2 * np.pi * v0) + 0.5 * (y - m0) ** 2 / v0
        return -float(np.mean(loss - trivial))


class SMSE(Criterion):
    """Negative standardised mean squared error on test data: −mean((y − μ)²)/var(y), greater is better.

    The standardised mean squared error of R&W §2.5 [1]_, negated.

    References
    ----------
    .. [1] C. E. Rasmussen and C. K. I. Williams, "Gaussian Processes for Machine
       Learning", MIT Press, 2006, §2.5.
    """

    name = "smse"
    held_out_only = True

    def _score(self, estimator, X, y):
        y = np.asarray(y, dtype=float).ravel()
        mean = estimator.predict(X)
        variance = float(np.var(y))
        return -float(np.mean((y - mean) ** 2)) / (variance if variance > 0 else 1.0)


class KFoldCV(Criterion):
    """K-fold cross-validation with the hyperparameters refitted on every training fold.

    The structure of the estimator is kept; its hyperparameters are optimised
    again on each training fold (starting from the fitted ones) and the
    held-out fold is scored with a scikit-learn scorer. Called with other data,
    the cross-validation runs on that data.

    Parameters
    ----------
    cv : int or cross-validation splitter, default=5
        As in :func:`sklearn.model_selection.cross_val_score` (an int means
        ``KFold(cv)`` without shuffling).
    scoring : str or callable, default=None
        A scikit-learn scorer name or callable; ``None`` uses the estimator's
        ``score`` (R²).
    """

    name = "kfold"

    def __init__(
        self,
        cv: int | BaseCrossValidator | Iterable[Any] | None = 5,
        scoring: str | Callable[..., float] | None = None,
    ) -> None:
        self.cv = cv
        self.scoring = scoring

    def _score(self, estimator, X, y):
        from sklearn.metrics import check_scoring
        from sklearn.model_selection import check_cv

        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float).ravel()
        splitter = check_cv(self.cv)
        scorer = check_scoring(estimator, scoring=self.scoring)
        scores = []
        for fold, (train, test) in enumerate(splitter.split(X, y)):
            try:
                model = estimator._refit_structure(X[train], y[train], seed=fold)
            except NumericalError:  # this structure cannot be fitted on the fold
                return float("nan")
            scores.append(scorer(model, X[test], y[test]))
        return float(np.mean(scores))

    def __eq__(self, other):
        return type(self) is type(other) and (self.cv, self.scoring) == (other.cv, other.scoring)

    def __hash__(self):
        return hash((type(self).__name__, repr(self.scoring)))

    def __repr__(self):
        return f"KFoldCV(cv={self.cv!r}, scoring={self.scoring!r})"
