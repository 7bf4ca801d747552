"""MAP and Laplace approximations of the evidence integrated over the hyperparameters (Besginow et al. 2024).

log Z = ∫ p(y | θ) p(θ) dθ  ≈  log p(y | θ̂) + log p(θ̂) + (u/2) log 2π − ½ log |H|

with H = −∇∇ [log p(y | θ) + log p(θ)] at θ̂ over the u log-hyperparameters
(noise included). The variants of Besginow et al. 2024 (Lemma 3.1, Corollaries 3.2–3.4)
replace every eigenvalue λ of H below exp(−2r)·2π by that floor, so that a
hyperparameter can add at most r to the log evidence: r = 0 (``laplace_0``),
r = −1 (``laplace_aic``), r = −log n (``laplace_bic``). The plain ``laplace``
uses H as it is and is ``nan`` when H is not positive definite (its value is
then meaningless; with eigenvalues near zero it grows without bound).

H is the symmetrised central difference of the analytic gradient of the log
posterior: 2u gradient evaluations, plus the prior's exact Hessian.

The formula expands the log posterior around its mode. The criteria take θ̂
as the estimator's fitted hyperparameters, so fit with ``objective="map"``
(with the same prior) to make θ̂ the posterior mode, as Besginow et al. 2024 do (their
Appendix A: MAP loss for MAP and the Laplace variants). With the default
``objective="lml"``, θ̂ is the likelihood optimum, where the gradient of the
log posterior is the prior's and the quadratic expansion drops that linear
term. On the kernel-search benchmark of Besginow et al. 2024 the difference in recovery is
small (about 1 percentage point; see ``benchmarks/seed004_kernel_search.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._engine._linalg import NumericalError
from ._base import Criterion
from ._priors import HyperPrior

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["MAP", "Laplace", "Laplace0", "LaplaceAIC", "LaplaceBIC", "laplace_log_evidence", "log_posterior_hessian"]

_LOG_2PI = math.log(2.0 * math.pi)


def log_posterior_hessian(
    objective: Callable[..., Any], theta: ArrayLike, prior_precision: np.ndarray, step: float = 1e-4
) -> np.ndarray:
    """H = −∇∇ log p(y, θ) at ``theta`` by central differences of the analytic gradient."""
    theta = np.asarray(theta, dtype=float)
    u = theta.size
    H = np.empty((u, u))
    for i in range(u):
        e = np.zeros(u)
        e[i] = step
        _, g_plus = objective(theta + e, eval_gradient=True)
        _, g_minus = objective(theta - e, eval_gradient=True)
        H[:, i] = -(g_plus - g_minus) / (2.0 * step)
    H = 0.5 * (H + H.T)
    return H + prior_precision


def laplace_log_evidence(
    objective: Callable[..., Any],
    theta: np.ndarray,
    log_prior: float,
    prior_precision: np.ndarray,
    r: float | None = None,
    n: int | None = None,
) -> float:
    """Laplace approximation of log ∫ p(y|θ) p(θ) dθ around ``theta`` (see module docstring).

    Parameters
    ----------
    objective : RegressionObjective
    theta : ndarray
        The optimum θ̂ (kernel log-hyperparameters and log noise variance).
    log_prior : float
        log p(θ̂).
    prior_precision : ndarray (u, u)
        −∇∇ log p(θ) at θ̂.
    r : float or None
        Minimal contribution per hyperparameter; ``None`` for the plain
        approximation.

    Returns
    -------
    float
        ``nan`` for the plain approximation when H is not positive definite.
    """
    lml = objective(theta)
    H = log_posterior_hessian(objective, theta, prior_precision)
    eigenvalues = np.linalg.eigvalsh(H)
    if r is not None:
        eigenvalues = np.maximum(eigenvalues, math.exp(-2.0 * r) * 2.0 * math.pi)
    elif np.any(eigenvalues <= 0):
        return float("nan")
    u = theta.size
    return float(lml + log_prior + 0.5 * u * _LOG_2PI - 0.5 * np.sum(np.log(eigenvalues)))


class _PosteriorCriterion(Criterion):
    """Criteria that need the hyperprior: evaluated on the fitted hyperparameters."""

    classification = True

    def __init__(self, prior: HyperPrior | None = None) -> None:
        self.prior = prior

    def _parts(self, estimator, X, y):
        objective, theta, shift = estimator._fitted_objective(X, y)
        prior = self.prior if self.prior is not None else HyperPrior()
        means, sds = estimator._prior_moments(prior)
        if theta.shape != means.shape:
            raise ValueError(f"theta has {theta.size} entries; the prior of {estimator.structure_} has {means.size}.")
        z = (theta - means) / sds
        log_prior = float(-0.5 * np.sum(z * z) - np.sum(np.log(sds)) - 0.5 * means.size * _LOG_2PI)
        return objective, theta, shift, np.diag(1.0 / sds**2), log_prior

    def __eq__(self, other):
        return type(self) is type(other) and self.prior is other.prior

    def __hash__(self):
        return hash(type(self).__name__)

    def __repr__(self):
        return f"{type(self).__name__}()" if self.prior is None else f"{type(self).__name__}(prior={self.prior!r})"


class MAP(_PosteriorCriterion):
    """log p(y | θ̂) + log p(θ̂): the log marginal likelihood plus the log hyperprior.

    Parameters
    ----------
    prior : HyperPrior, optional
        The hyperprior (default: :class:`HyperPrior` with its documented defaults).

    Notes
    -----
    One of the criteria compared in [1]_ (there with the hyperparameters fitted
    by the MAP loss, ``objective="map"`` here).

    References
    ----------
    .. [1] A. Besginow, J. D. Hüwel, T. Pawellek, C. Beecks and
       M. Lange-Hegermann, "On the Laplace Approximation as Model Selection
       Criterion for Gaussian Processes", arXiv:2403.09215, 2024.
    """

    name = "map"

    def _score(self, estimator, X, y):
        objective, theta, shift, _, log_prior = self._parts(estimator, X, y)
        try:
            return float(objective(theta) + shift + log_prior)
        except NumericalError:
            return float("nan")


class Laplace(_PosteriorCriterion):
    """Plain Laplace approximation of the evidence over the log-hyperparameters (Besginow et al. 2024, eq. 4).

    ``nan`` when the Hessian of the log posterior is not positive definite.
    The standard Laplace approximation, eq. 4 of [1]_, without their floor on
    the eigenvalues.

    References
    ----------
    .. [1] A. Besginow, J. D. Hüwel, T. Pawellek, C. Beecks and
       M. Lange-Hegermann, "On the Laplace Approximation as Model Selection
       Criterion for Gaussian Processes", arXiv:2403.09215, 2024, eq. 4.
    """

    name = "laplace"
    floor_r = None

    def _r(self, n):
        return self.floor_r

    def _score(self, estimator, X, y):
        objective, theta, shift, precision, log_prior = self._parts(estimator, X, y)
        try:
            value = laplace_log_evidence(objective, theta, log_prior, precision, r=self._r(len(y)))
        except NumericalError:
            return float("nan")
        return value + shift


class Laplace0(Laplace):
    """Stabilised Laplace (Lap0): eigenvalues of H floored at 2π, so no hyperparameter adds evidence.

    The variant Lap0 of Besginow et al. (2024, Corollary 3.2); the reference is in
    :class:`Laplace`.
    """

    name = "laplace_0"
    floor_r = 0.0


class LaplaceAIC(Laplace):
    """AIC-corrected Laplace (LapA): eigenvalues floored at e²·2π (at least −1 per hyperparameter).

    The variant LapA of Besginow et al. (2024, Corollary 3.3); the reference is in
    :class:`Laplace`.
    """

    name = "laplace_aic"
    floor_r = -1.0


class LaplaceBIC(Laplace):
    """BIC-corrected Laplace (LapB): eigenvalues floored at 2π n² (at least −log n per hyperparameter).

    The variant LapB of Besginow et al. (2024, Corollary 3.4); the reference is in
    :class:`Laplace`.
    """

    name = "laplace_bic"

    def _r(self, n):
        return -math.log(n)
