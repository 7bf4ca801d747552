"""What a criterion may read from a fitted model: the contract between criteria and estimators.

Criteria never import an estimator class. They score any object that
satisfies :class:`EvidenceModel` (the evidence criteria need nothing more),
:class:`ObjectiveModel` (criteria that re-evaluate the fitted objective:
LOO, the Laplace criteria, ASC, k-fold refits) or :class:`OneVsRestModel`
(a classifier whose binary problems are scored one by one and combined).
``CompositionalGPRegressor`` implements :class:`ObjectiveModel`; each binary
problem of ``CompositionalGPClassifier`` is an :class:`ObjectiveModel` and
the classifier a :class:`OneVsRestModel`; scikit-learn's Gaussian processes
get adapters (:mod:`skgpsearch.criteria._adapters`) that implement what they can.

The members with a leading underscore are part of this contract but not of
the estimators' public API.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..grammar import Expr

__all__ = ["EvidenceModel", "ObjectiveModel", "OneVsRestModel"]


@runtime_checkable
class EvidenceModel(Protocol):
    """A fitted GP with one latent function, as the evidence criteria (lml, aic, bic, bic_light) read it."""

    #: The fitted structure (its number of base kernels for bic_light).
    structure_: Expr
    #: Free hyperparameters counted by the information criteria.
    n_hyperparameters_: int

    def log_marginal_likelihood_on(self, X: np.ndarray, y: np.ndarray) -> float:
        """log p(y | X) under the fitted hyperparameters (no refit); the fitted value on the training data."""


class ObjectiveModel(EvidenceModel, Protocol):
    """A fitted GP whose objective criteria can re-evaluate at, and around, its optimum."""

    #: Training targets' scale: a criterion in target units multiplies by it (LOO MSE).
    _y_train_std: float
    #: The fitted kernel without its noise term.
    _kernel_no_noise: Any

    def _fitted_objective(self, X: np.ndarray, y: np.ndarray) -> tuple[Any, np.ndarray, float]:
        """(objective on (X, y) with the fitted kernel, the fitted parameter vector, shift to original units).

        The objective is callable as ``objective(theta, eval_gradient=...)``
        and returns the log evidence on the fitting scale; adding the shift
        gives the original units.
        """

    def _prior_moments(self, prior: Any) -> tuple[np.ndarray, np.ndarray]:
        """Means and standard deviations of ``prior`` on the fitted parameter vector."""

    def _refit_structure(self, X: np.ndarray, y: np.ndarray, seed: int = 0) -> ObjectiveModel:
        """The same structure with hyperparameters refitted on (X, y).

        Raises ``NumericalError`` when the structure cannot be fitted there.
        """


@runtime_checkable
class OneVsRestModel(Protocol):
    """A classifier scored as the combination of its binary problems."""

    def _criterion_parts(self, X: np.ndarray, y: Any) -> list[tuple[ObjectiveModel, np.ndarray, np.ndarray]]:
        """(binary model, X, labels in {−1, +1}) per binary problem."""
