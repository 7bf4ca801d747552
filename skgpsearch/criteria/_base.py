"""Evidence-based criteria computed from a fitted GP model."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ._protocol import OneVsRestModel

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..grammar import Expr

__all__ = ["Criterion", "CallableCriterion", "LogMarginalLikelihood", "AIC", "BIC", "BICLight"]


def _names_for(task):
    """Names of the criteria defined so far that apply to ``task`` (every subclass with a name)."""
    names, stack = set(), [Criterion]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.name is not None and getattr(cls, task):
            names.add(cls.name)
    return sorted(names)


class Criterion:
    """Base class: a model-selection criterion, greater is better.

    A criterion is called like a scikit-learn scorer, ``criterion(estimator,
    X, y)``, with a fitted estimator. Subclasses that only need the maximised
    log marginal likelihood ``lml``, the number of free hyperparameters ``k``
    (noise included) and the number of samples ``n`` implement
    :meth:`from_evidence`; the search then scores candidates without
    building an estimator.

    A fitted Pipeline is scored through its last step on the transformed
    inputs; scikit-learn's GaussianProcessRegressor and
    GaussianProcessClassifier support the evidence criteria (and the
    regressor the closed-form LOO ones) through read-only views.

    A multi-class (one-vs-rest) classifier is scored as the combination
    (:meth:`combine`, a sum by default: the binary problems are independent)
    of its binary problems' values.
    """

    #: Public name (used by :func:`get_criterion`).
    name = None
    #: True when the value follows from (lml, k, n, structure) alone (:meth:`from_evidence`).
    evidence_only = False
    #: True when it also scores approximate models (the sparse bound, Student-t noise by Laplace).
    scores_approximate_models = False
    #: True when the criterion applies to GP classifiers (Laplace-approximate evidence).
    classification = False
    #: True when the criterion applies to GP regression.
    regression = True
    #: True for a metric of predictions on held-out data: on the training rows, where a search scores its
    #: candidates, it rewards a model that interpolates the noise. A scoring for cross-validation
    #: (``KernelSearchCV(scoring=...)``, ``cross_val_score``), not an estimator's search criterion.
    held_out_only = False

    def __call__(self, estimator: Any, X: ArrayLike, y: ArrayLike) -> float:
        from ._adapters import check_view_supports, criterion_target, criterion_task

        estimator, X = criterion_target(estimator, X)
        task = criterion_task(estimator)
        if task is not None and not getattr(self, task):
            owner = "classifiers" if task == "regression" else "regression"
            raise ValueError(
                f"The criterion {self.name or type(self).__name__!r} applies to {owner} only; for {task} use one "
                f"of {', '.join(_names_for(task))}."
            )
        check_view_supports(self, estimator)
        if not isinstance(estimator, OneVsRestModel):
            return self._score(estimator, X, y)
        parts = estimator._criterion_parts(X, y)
        return self.combine([self._score(view, X_part, y_part) for view, X_part, y_part in parts])

    def combine(self, values: Iterable[float]) -> float:
        """One value from the values of the binary problems of a one-vs-rest classifier."""
        return float(sum(values))

    def _score(self, estimator, X, y):
        lml = estimator.log_marginal_likelihood_on(X, y)
        return self.from_evidence(lml, estimator.n_hyperparameters_, len(y), estimator.structure_)

    def from_evidence(self, lml: float, k: int, n: int, structure: Expr | None = None) -> float:
        """Criterion value from the log marginal likelihood, ``k``, ``n`` and the structure."""
        raise NotImplementedError

    @property
    def display_name(self) -> str:
        """The name progress lines and messages use."""
        return self.name or type(self).__name__

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self).__name__)


class CallableCriterion(Criterion):
    """A user's callable ``(estimator, X, y) -> float`` as a criterion.

    It receives every fitted candidate (a fitted estimator, or one binary
    problem's model for a classifier) and the training data; it applies to
    every task unless the callable says otherwise (attributes ``regression``,
    ``classification``), and to approximate models.
    """

    scores_approximate_models = True

    def __init__(self, function: Callable[[Any, Any, Any], float]) -> None:
        if not callable(function):
            raise ValueError(f"criterion must be a name or a callable, got {type(function).__name__}.")
        self.function = function
        self.regression = bool(getattr(function, "regression", True))
        self.classification = bool(getattr(function, "classification", True))

    def __call__(self, estimator: Any, X: ArrayLike, y: ArrayLike) -> float:
        return self.function(estimator, X, y)

    @property
    def display_name(self) -> str:
        name = getattr(self.function, "__name__", "")
        return name if name.isidentifier() else "criterion"

    def __repr__(self):
        return f"CallableCriterion({self.function!r})"

    def __eq__(self, other):
        return isinstance(other, CallableCriterion) and other.function == self.function

    def __hash__(self):
        return hash(("CallableCriterion", id(self.function)))


class LogMarginalLikelihood(Criterion):
    """The maximised log marginal likelihood log p(y | X, θ̂) (the type-II evidence).

    On data other than the training data, the log marginal likelihood of
    that data under the fitted hyperparameters (no refit). See R&W §5.4.1 [1]_.

    References
    ----------
    .. [1] C. E. Rasmussen and C. K. I. Williams, "Gaussian Processes for Machine
       Learning", MIT Press, 2006, §5.4.1.
    """

    name = "lml"
    evidence_only = True
    scores_approximate_models = True
    classification = True

    def from_evidence(self, lml: float, k: int, n: int, structure: Expr | None = None) -> float:
        return float(lml)


class AIC(Criterion):
    """Akaike information criterion on the log-evidence scale: −½·AIC = lml − k.

    k counts the free kernel hyperparameters and the noise variance. On other
    data, the fitted hyperparameters are evaluated on that data. The criterion
    is Akaike's [1]_.

    References
    ----------
    .. [1] H. Akaike, "A new look at the statistical model identification",
       IEEE Transactions on Automatic Control 19(6), 716–723, 1974.
    """

    name = "aic"
    evidence_only = True
    scores_approximate_models = True
    classification = True

    def from_evidence(self, lml: float, k: int, n: int, structure: Expr | None = None) -> float:
        return float(lml) - k


class BIC(Criterion):
    """Bayesian information criterion on the log-evidence scale: −½·BIC = lml − (k/2) log n.

    k counts the free kernel hyperparameters and the noise variance, n the
    samples. On other data, the fitted hyperparameters are evaluated on it.
    The criterion is Schwarz's [1]_; as an approximation of the log evidence
    it is the large-n limit of the Laplace approximation [2]_.

    References
    ----------
    .. [1] G. Schwarz, "Estimating the dimension of a model", The Annals of
       Statistics 6(2), 461–464, 1978.
    .. [2] M. Sahani, "Model selection, Hyperparameter optimisation, and
       Gaussian Processes", lecture slides, Probabilistic & Unsupervised
       Learning, Gatsby Unit, University College London, 2015.
    """

    name = "bic"
    evidence_only = True
    scores_approximate_models = True
    classification = True

    def from_evidence(self, lml: float, k: int, n: int, structure: Expr | None = None) -> float:
        return float(lml) - 0.5 * k * math.log(n)


class BICLight(Criterion):
    """"BIC light" (Mrkšić 2014, §4.2.3): −½·BIC with k = the number of base kernels of the structure.

    In classification only the lengthscales move the decision boundary, so
    amplitudes (one per additive term), the noise or likelihood parameters and
    the mean are not counted: lml − (b/2) log n with b base kernels. Unlike
    ``bic`` it does not prefer extending a product over adding a new term. On
    other data, the fitted hyperparameters are evaluated on that data. The
    criterion is defined in [1]_ for the GP-classification structure search.

    References
    ----------
    .. [1] N. Mrkšić, "Kernel Structure Discovery for Gaussian Process
       Classification", dissertation (Part III of the Computer Science Tripos),
       University of Cambridge, 2014, §4.2.3.
    """

    name = "bic_light"
    evidence_only = True
    scores_approximate_models = True
    classification = True

    def from_evidence(self, lml: float, k: int, n: int, structure: Expr | None = None) -> float:
        if structure is None:
            raise ValueError("bic_light needs the structure (its number of base kernels).")
        return float(lml) - 0.5 * structure.n_base_kernels * math.log(n)
