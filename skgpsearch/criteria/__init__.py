"""Model-selection criteria: scorer-like callables ``criterion(estimator, X, y) -> float``.

Greater is better, and values are on the log-evidence scale in nats: the
information criteria are returned as −½·AIC and −½·BIC.
"""

from ._base import AIC, BIC, Criterion, LogMarginalLikelihood, criterion_names, get_criterion

__all__ = ["AIC", "BIC", "Criterion", "LogMarginalLikelihood", "criterion_names", "get_criterion"]
