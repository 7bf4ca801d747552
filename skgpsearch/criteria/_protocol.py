"""The contracts of the criteria: what a criterion is, and what it may read from a fitted model.

:class:`SelectionCriterion` is what every criterion offers the search (the
estimators, :class:`~skgpsearch.KernelSearchCV` and the CLI read nothing
else): its name, the tasks it applies to, whether its value follows from the
evidence alone, and the scorer-like call. :class:`~skgpsearch.criteria.Criterion`
implements it; :func:`~skgpsearch.criteria.get_criterion` wraps a user's
callable into one.

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

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..grammar import Expr

__all__ = ["EvidenceModel", "ObjectiveModel", "OneVsRestModel", "SelectionCriterion"]


@runtime_checkable
class SelectionCriterion(Protocol):
    """A model-selection criterion as the search uses it; greater is better."""

    #: Registry name (None for a user's callable).
    name: str | None
    #: Whether it applies to GP regression, and to GP classification.
    regression: bool
    classification: bool
    #: True when :meth:`from_evidence` gives the value: candidates are then scored without building a model.
    evidence_only: bool
    #: True when it scores approximate models too -- the sparse bound, the Laplace evidence of Student-t
    #: noise -- as the evidence criteria and callables do; False when it needs the exact Gaussian objective.
    scores_approximate_models: bool
    #: The name progress lines and messages use.
    display_name: str

    def __call__(self, estimator: Any, X: Any, y: Any) -> float:
        """The value for a fitted model on (X, y), like a scikit-learn scorer."""

    def from_evidence(self, lml: float, k: int, n: int, structure: Expr | None = None) -> float:
        """The value from the maximised log evidence, the free parameters and the samples (evidence_only)."""

    def combine(self, values: Iterable[float]) -> float:
        """One value from the values of a one-vs-rest classifier's binary problems."""


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
