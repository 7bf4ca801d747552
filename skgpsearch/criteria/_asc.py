"""Approximation set coding (Fischer et al. 2016): posterior agreement of two halves of the data.

The data is split at random into halves D1, D2; M latent function values f̃
at M inputs X̃ drawn from the data play the role of the parameters. The
posterior agreement is

    η = ∫ p(f̃ | D1) p(f̃ | D2) p(f̃) df̃

with p(f̃) = N(0, K̃) the GP prior at X̃ and, for each half i,

* Bayesian ASC: p(f̃ | D_i) = N(s_i, V_i), the GP posterior at X̃;
* β-noise ASC (β = 1): the maximum-entropy density ∝ p(y_i | f̃), which is
  N(Λ_i^{-1} r_i, Λ_i^{-1}) with Λ_i = A_i Σ_i^{-1} A_i^T, r_i = A_i Σ_i^{-1} y_i,
  A_i = K̃^{-1} K̃_i^T, Σ_i = K_i − K̃_i A_i (it needs |D_i| ≥ M).

Both are Gaussian, so η is a product-of-Gaussians integral in closed form
(computed here in precision form). The criterion is the log-mean-exp of η
over ``n_partitions`` random halvings, in nats; partitions whose matrices are
numerically singular (Fischer et al. 2016 report this as frequent) are skipped, and the
value is ``nan`` only when every partition fails. Targets are centred (zero
mean function), as the estimators normalise them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.special import logsumexp

from ._base import Criterion

if TYPE_CHECKING:
    from sklearn.gaussian_process.kernels import Kernel

__all__ = ["ASCBayes", "ASCBeta", "gaussian_product_integral", "posterior_agreement"]

_LOG_2PI = math.log(2.0 * math.pi)


def _logdet(C):
    return 2.0 * float(np.sum(np.log(np.diag(C[0]))))


def gaussian_product_integral(precisions: Sequence[np.ndarray], shifts: Sequence[np.ndarray]) -> float:
    """log ∫ Π_k N(f | P_k^{-1} b_k, P_k^{-1}) df for precisions P_k and shifts b_k = P_k μ_k.

    log ∫ = Σ_k [½ log|P_k| − ½ b_k^T P_k^{-1} b_k] + ½ b^T P^{-1} b − ½ log|P| − (K − 1)(M/2) log 2π
    with P = Σ P_k and b = Σ b_k.
    """
    M = precisions[0].shape[0]
    total = 0.0
    for P_k, b_k in zip(precisions, shifts):
        C = cho_factor(P_k, lower=True)
        total += 0.5 * _logdet(C) - 0.5 * float(b_k @ cho_solve(C, b_k))
    P = sum(precisions)
    b = sum(shifts)
    C = cho_factor(P, lower=True)
    total += 0.5 * float(b @ cho_solve(C, b)) - 0.5 * _logdet(C)
    return total - (len(precisions) - 1) * 0.5 * M * _LOG_2PI


def _half_posteriors(kernel, noise, X_half, y_half, X_latent, K_latent_inv, variant):
    """(precision, shift) of p(f̃ | D_i) for one half."""
    K_i = kernel(X_half)
    K_i[np.diag_indices_from(K_i)] += noise
    K_cross = kernel(X_half, X_latent)  # K̃_i, shape (n_i, M)
    if variant == "bayes":
        C = cho_factor(K_i, lower=True)
        B = cho_solve(C, K_cross)  # K_i^{-1} K̃_i
        s = B.T @ y_half
        V = kernel(X_latent) - K_cross.T @ B
        V = 0.5 * (V + V.T)
        CV = cho_factor(V, lower=True)
        precision = cho_solve(CV, np.eye(len(s)))
        return 0.5 * (precision + precision.T), precision @ s
    A = K_latent_inv @ K_cross.T  # (M, n_i)
    Sigma = K_i - K_cross @ A
    Sigma = 0.5 * (Sigma + Sigma.T)
    C = cho_factor(Sigma, lower=True)
    Lam = A @ cho_solve(C, A.T)
    r = A @ cho_solve(C, y_half)
    return 0.5 * (Lam + Lam.T), r


def posterior_agreement(
    kernel: Kernel,
    noise: float,
    X: np.ndarray,
    y: np.ndarray,
    variant: Literal["bayes", "beta"],
    n_partitions: int = 256,
    n_points: int = 2,
    random_state: int | np.random.Generator | None = 0,
    max_condition: float = 1e8,
) -> tuple[float, int]:
    """Log-mean-exp over random halvings of log η (see the module docstring).

    Returns
    -------
    value : float
        ``nan`` when every partition failed numerically.
    n_failed : int
        Partitions skipped because a matrix was singular.
    """
    rng = np.random.default_rng(random_state)
    n = X.shape[0]
    values, failed = [], 0
    for _ in range(n_partitions):
        order = rng.permutation(n)
        first, second = order[: n // 2], order[n // 2 :]
        try:
            latent = None
            for _attempt in range(10):
                candidate = np.sort(rng.choice(n, size=n_points, replace=False))
                K_latent = kernel(X[candidate])
                if np.linalg.cond(K_latent) < max_condition:
                    latent = candidate
                    break
            if latent is None:
                raise LinAlgError("no well-conditioned latent points")
            X_latent = X[latent]
            K_latent = kernel(X_latent)
            K_latent_inv = np.linalg.inv(K_latent)
            K_latent_inv = 0.5 * (K_latent_inv + K_latent_inv.T)
            halves = [
                _half_posteriors(kernel, noise, X[idx], y[idx], X_latent, K_latent_inv, variant)
                for idx in (first, second)
            ]
            precisions = [h[0] for h in halves] + [K_latent_inv]
            shifts = [h[1] for h in halves] + [np.zeros(n_points)]
            value = gaussian_product_integral(precisions, shifts)
        except (LinAlgError, ValueError):  # not positive definite, or non-finite (cho_factor's finiteness check)
            failed += 1
            continue
        if np.isfinite(value):
            values.append(value)
        else:
            failed += 1
    if not values:
        return float("nan"), failed
    return float(logsumexp(values) - math.log(len(values))), failed


class _ASC(Criterion):
    variant = None

    def __init__(self, n_partitions: int = 256, n_points: int = 2, random_state: int = 0) -> None:
        self.n_partitions = n_partitions
        self.n_points = n_points
        self.random_state = random_state

    def _score(self, estimator, X, y):
        objective, theta, _ = estimator._fitted_objective(X, y)
        kernel = estimator._kernel_no_noise
        noise = math.exp(theta[-1])
        value, _ = posterior_agreement(
            kernel, noise, objective.tree.X, objective.y, self.variant,
            self.n_partitions, self.n_points, self.random_state,
        )
        return value

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash(type(self).__name__)

    def __repr__(self):
        return f"{type(self).__name__}(n_partitions={self.n_partitions}, n_points={self.n_points})"


class ASCBayes(_ASC):
    """Bayesian approximation set coding (Fischer et al. 2016, §2.2): log posterior agreement of the GP posteriors.

    Parameters
    ----------
    n_partitions : int, default=256
        Random halvings J averaged (log-mean-exp).
    n_points : int, default=2
        Latent points M per partition, drawn from the inputs so that K̃ is
        well-conditioned (condition number below 1e8).
    random_state : int, default=0
        Seed of the partitions (fixed, so that candidates are compared on the same halvings).

    Notes
    -----
    The criterion is that of [1]_; see the module docstring for the formulas.

    References
    ----------
    .. [1] B. Fischer, N. Gorbach, S. Bauer, Y. Bian and J. M. Buhmann, "Model
       Selection for Gaussian Process Regression by Approximation Set Coding",
       arXiv:1610.00907, 2016, §2.2.
    """

    name = "asc_bayes"
    variant = "bayes"


class ASCBeta(_ASC):
    """β-noise approximation set coding (Fischer et al. 2016, §2.2, β = 1): agreement of the maximum-entropy posteriors.

    Parameters as for :class:`ASCBayes`. The criterion is that of [1]_ with the
    noise parameter β = 1.

    References
    ----------
    .. [1] B. Fischer, N. Gorbach, S. Bauer, Y. Bian and J. M. Buhmann, "Model
       Selection for Gaussian Process Regression by Approximation Set Coding",
       arXiv:1610.00907, 2016, §2.2.
    """

    name = "asc_beta"
    variant = "beta"
