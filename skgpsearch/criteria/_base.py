"""Evidence-based criteria computed from a fitted GP model."""

from __future__ import annotations

import math


__all__ = ["Criterion", "LogMarginalLikelihood", "AIC", "BIC"]


class Criterion:
    """Base class: a model-selection criterion, greater is better.

    A criterion is called like a scikit-learn scorer, ``criterion(estimator,
    X, y)``, with a fitted estimator. Subclasses that only need the maximised
    log marginal likelihood ``lml``, the number of free hyperparameters ``k``
    (noise included) and the number of samples ``n`` implement
    :meth:`from_evidence`; the search then scores candidates without
    building an estimator.
    """

    #: Public name (used by :func:`get_criterion`).
    name = None
    #: True when the value follows from (lml, k, n) alone (:meth:`from_evidence`).
    evidence_only = False

    def __call__(self, estimator, X, y):
        lml = estimator.log_marginal_likelihood_on(X, y)
        return self.from_evidence(lml, estimator.n_hyperparameters_, len(y))

    def from_evidence(self, lml, k, n):
        """Criterion value from the log marginal likelihood, ``k`` and ``n``."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self).__name__)


class LogMarginalLikelihood(Criterion):
    """The maximised log marginal likelihood log p(y | X, θ̂) (the type-II evidence).

    On data other than the training data, the log marginal likelihood of
    that data under the fitted hyperparameters (no refit).
    """

    name = "lml"
    evidence_only = True

    def from_evidence(self, lml, k, n):
        return float(lml)


class AIC(Criterion):
    """Akaike information criterion on the log-evidence scale: −½·AIC = lml − k.

    k counts the free kernel hyperparameters and the noise variance. On other
    data, the fitted hyperparameters are evaluated on that data.
    """

    name = "aic"
    evidence_only = True

    def from_evidence(self, lml, k, n):
        return float(lml) - k


class BIC(Criterion):
    """Bayesian information criterion on the log-evidence scale: −½·BIC = lml − (k/2) log n.

    k counts the free kernel hyperparameters and the noise variance, n the
    samples. On other data, the fitted hyperparameters are evaluated on it.
    """

    name = "bic"
    evidence_only = True

    def from_evidence(self, lml, k, n):
        return float(lml) - 0.5 * k * math.log(n)
