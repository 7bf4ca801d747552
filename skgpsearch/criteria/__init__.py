"""Model-selection criteria: scorer-like callables ``criterion(estimator, X, y) -> float``.

Greater is better, and evidence-type values are in nats on the log-evidence
scale: the information criteria are returned as −½·AIC and −½·BIC, the
test-set losses (``msll``, ``smse``) negated. Every criterion works as the
``criterion=`` of the estimators and as ``scoring=`` in scikit-learn's model
selection tools.
"""

from __future__ import annotations

from collections.abc import Callable

from ._asc import ASCBayes, ASCBeta
from ._base import AIC, BIC, BICLight, CallableCriterion, Criterion, LogMarginalLikelihood
from ._classification import CVAccuracy
from ._laplace import MAP, Laplace, Laplace0, LaplaceAIC, LaplaceBIC
from ._predictive import LOO, LOOMSE, MSLL, SMSE, KFoldCV
from ._priors import DEFAULT_PRIOR_SD, HyperPrior
from ._protocol import SelectionCriterion

_CRITERIA = {
    cls.name: cls
    for cls in (LogMarginalLikelihood, AIC, BIC, BICLight, CVAccuracy, ASCBayes, ASCBeta, MAP, Laplace, Laplace0, LaplaceAIC, LaplaceBIC, LOO, LOOMSE, KFoldCV, MSLL, SMSE)
}


#: The tasks a criterion can apply to (see ``Criterion.regression`` and ``Criterion.classification``).
TASKS = ("regression", "classification")


def criterion_names(task: str | None = None) -> tuple[str, ...]:
    """Names accepted by :func:`get_criterion` and by the estimators' ``criterion``.

    Parameters
    ----------
    task : {"regression", "classification"} or None, default=None
        Only the criteria that apply to this task; ``None``: all.
    """
    if task is not None and task not in TASKS:
        raise ValueError(f"Unknown task {task!r}; use one of {', '.join(TASKS)}.")
    return tuple(sorted(name for name, cls in _CRITERIA.items() if task is None or getattr(cls, task)))


def check_criterion_task(criterion: SelectionCriterion | Callable[..., float], task: str) -> None:
    """Raise a ValueError saying which criteria to use when ``criterion`` does not apply to ``task``.

    Callables without the flags are assumed to apply to every task.
    """
    if getattr(criterion, task, True):
        return
    other = "classifiers" if task == "regression" else "regression"
    name = getattr(criterion, "name", None) or type(criterion).__name__
    raise ValueError(
        f"The criterion {name!r} applies to {other} only; for {task} use one of "
        f"{', '.join(criterion_names(task))}, or a callable (estimator, X, y) -> float."
    )


def get_criterion(criterion: str | Callable[..., float]) -> Criterion:
    """A criterion object from a name (case-insensitive); a callable becomes a :class:`CallableCriterion`.

    A :class:`Criterion` instance is returned as it is. Every result
    satisfies :class:`~skgpsearch.criteria._protocol.SelectionCriterion`.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones), or an object
        that is neither a name nor a callable.
    """
    if isinstance(criterion, str):
        cls = _CRITERIA.get(criterion.lower())
        if cls is None:
            raise ValueError(
                f"Unknown criterion {criterion!r}; use one of {', '.join(criterion_names())} "
                "or a callable (estimator, X, y) -> float."
            )
        return cls()
    if isinstance(criterion, Criterion):
        return criterion
    if callable(criterion):
        return CallableCriterion(criterion)
    raise ValueError(f"criterion must be a name or a callable, got {type(criterion).__name__}.")


__all__ = [
    "AIC",
    "ASCBayes",
    "ASCBeta",
    "BIC",
    "BICLight",
    "CVAccuracy",
    "CallableCriterion",
    "Criterion",
    "DEFAULT_PRIOR_SD",
    "HyperPrior",
    "KFoldCV",
    "LOO",
    "LOOMSE",
    "Laplace",
    "Laplace0",
    "LaplaceAIC",
    "LaplaceBIC",
    "LogMarginalLikelihood",
    "MAP",
    "MSLL",
    "SMSE",
    "SelectionCriterion",
    "check_criterion_task",
    "criterion_names",
    "get_criterion",
]
