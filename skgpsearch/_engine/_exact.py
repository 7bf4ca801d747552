"""Exact Gaussian-process regression: the objective (log evidence or LOO) and the posterior.

The noise variance is a likelihood hyperparameter: it is the last entry of
the parameter vector ``theta = [kernel.theta, log(noise_variance)]``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import blas, solve_triangular
from scipy.spatial.distance import squareform

from ._kernel_tree import KernelTree, expand
from ._linalg import cholesky_inverse, cholesky_solve, jittered_cholesky
from ._optimizer import amplitude_indices

__all__ = ["RegressionObjective", "GPPosterior"]

_LOG_2PI = math.log(2.0 * math.pi)


class RegressionObjective:
    """Objective of exact GP regression for hyperparameter fitting, and its gradient.

    Parameters
    ----------
    kernel : sklearn Kernel
        Compiled at construction (see :class:`KernelTree`).
    X : ndarray (n, d)
    y : ndarray (n,)
        Targets (already centred/scaled by the caller if wanted).
    noise_bounds : pair of float
        Bounds of the Gaussian noise variance.
    kind : {"lml", "loo"}, default="lml"
        ``"lml"``: log marginal likelihood; ``"loo"``: closed-form leave-one-out
        log predictive density Σ_i log p(y_i | y_−i, θ) (Rasmussen & Williams
        eq. 5.10, gradient eq. 5.13).
    prior : pair of ndarray, optional
        Means and standard deviations of independent normal priors on theta;
        when given, log p(theta) is added (``"lml"`` + prior = MAP).
    """

    def __init__(self, kernel, X, y, noise_bounds, kind="lml", prior=None):
        if kind not in ("lml", "loo"):
            raise ValueError(f"kind must be 'lml' or 'loo', got {kind!r}.")
        self.kernel = kernel
        self.tree = KernelTree(kernel, X)
        self.y = np.asarray(y, dtype=float)
        self.n = self.y.shape[0]
        self.kind = kind
        self.prior = prior
        kb = kernel.bounds
        kb = np.asarray(kb, dtype=float).reshape(-1, 2)
        self.bounds = np.vstack([kb, np.log(np.asarray(noise_bounds, dtype=float))[np.newaxis, :]])
        self.amplitudes = amplitude_indices(kernel)
        self.n_evaluations = 0

    @property
    def n_dims(self):
        return self.bounds.shape[0]

    def covariance(self, theta):
        """K(X, X) + noise I at ``theta`` (a new array)."""
        self.tree.set_theta(theta[:-1])
        k, kd = self.tree.forward()
        return expand(k, kd + math.exp(theta[-1]))

    def __call__(self, theta, eval_gradient=False):
        """The objective (and its gradient w.r.t. ``theta``).

        Raises
        ------
        NumericalError
            When the covariance is not positive definite even with jitter.
        """
        self.n_evaluations += 1
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (self.n_dims,):
            raise ValueError(
                f"theta must have {self.n_dims} entries (kernel hyperparameters and the log noise "
                f"variance), got shape {theta.shape}."
            )
        # the covariance is factorised in place; its factor is only solved with and inverted
        L, _ = jittered_cholesky(self.covariance(theta), overwrite_k=True, clean=False)
        alpha = cholesky_solve(L, self.y)
        if self.kind == "lml":
            out = self._log_marginal_likelihood(L, alpha, theta, eval_gradient)
        else:
            out = self._leave_one_out(L, alpha, theta, eval_gradient)
        if self.prior is None:
            return out
        means, sds = self.prior
        z = (theta - means) / sds
        log_prior = float(-0.5 * np.sum(z * z) - np.sum(np.log(sds)) - 0.5 * z.size * _LOG_2PI)
        if not eval_gradient:
            return out + log_prior
        return out[0] + log_prior, out[1] - z / sds

    def profile_amplitude(self, theta):
        """``theta`` rescaled to the covariance's best overall scale, the objective there, and at ``theta``.

        Every additive term of a compiled kernel carries exactly one amplitude
        (``...variance``), so adding ``log s`` to the amplitudes and the noise
        variance scales the whole covariance by ``s``. The log marginal
        likelihood of ``s K`` is maximised in closed form by
        ``s = yᵀK⁻¹y / n``, from the same Cholesky factor as the value at
        ``theta``: a start whose kernel shape fits but whose amplitudes are off
        (a cold start at the target variance, a noise-free start) is then
        ranked by its shape, not by its scale. For the leave-one-out and
        MAP objectives the scale is the likelihood's and the value is the
        objective's own at the rescaled point.

        Returns
        -------
        scaled_theta : ndarray
        scaled_value, value : float
            The objective at ``scaled_theta`` and at ``theta``.

        Raises
        ------
        NumericalError
            When the covariance at ``theta`` is not positive definite.
        """
        theta = np.asarray(theta, dtype=float)
        self.n_evaluations += 1
        L, _ = jittered_cholesky(self.covariance(theta), overwrite_k=True, clean=False)
        quadratic = float(self.y @ cholesky_solve(L, self.y))
        half_log_det = float(np.log(np.diag(L)).sum())
        exact = self.kind == "lml" and self.prior is None
        value = -0.5 * quadratic - half_log_det - 0.5 * self.n * _LOG_2PI if exact else self(theta)
        if not (self.amplitudes and np.isfinite(quadratic) and quadratic > 0.0):
            return theta, value, value
        log_scale = math.log(quadratic / self.n)
        scaled = theta.copy()
        scaled[self.amplitudes] += log_scale
        scaled[-1] += log_scale
        clipped = np.clip(scaled, self.bounds[:, 0], self.bounds[:, 1])
        if not exact or not np.array_equal(clipped, scaled):
            return clipped, self(clipped), value
        return scaled, -0.5 * self.n * (1.0 + log_scale + _LOG_2PI) - half_log_det, value

    def _log_marginal_likelihood(self, L, alpha, theta, eval_gradient):
        lml = -0.5 * float(self.y @ alpha) - float(np.log(np.diag(L)).sum()) - 0.5 * self.n * _LOG_2PI
        if not eval_gradient:
            return lml
        # W = αα^T − K^{-1}; dL/dθ_j = ½ tr(W ∂K/∂θ_j) = Σ_{a<b} W_ab ∂K_ab + ½ Σ_a W_aa ∂K_aa
        inverse = cholesky_inverse(L, overwrite_l=True)  # lower triangle only; L is not used again
        del L
        # K^{-1} − αα^T in place on the lower triangle (a BLAS rank-one update, no n × n temporary)
        inverse = blas.dsyr(-1.0, alpha, a=inverse, lower=1, overwrite_a=1)
        w = squareform(inverse.T, checks=False)
        w *= -1.0
        wd = -np.diag(inverse)
        del inverse
        noise = math.exp(theta[-1])
        grad_noise = 0.5 * noise * float(wd.sum())
        grad_kernel = self.tree.contract_condensed(w, 0.5 * wd)
        return lml, np.append(grad_kernel, grad_noise)

    def _leave_one_out(self, L, alpha, theta, eval_gradient):
        inverse = cholesky_inverse(L)
        inverse = np.tril(inverse)
        inverse += np.tril(inverse, -1).T
        d = np.diag(inverse).copy()
        # log p(y_i | y_-i) = ½ log d_i − ½ α_i²/d_i − ½ log 2π  (R&W eq. 5.10 with σ_i² = 1/d_i)
        value = float(np.sum(0.5 * np.log(d) - 0.5 * alpha * alpha / d) - 0.5 * self.n * _LOG_2PI)
        if not eval_gradient:
            return value
        # R&W eq. 5.13 as one contraction Σ_ab G_ab ∂K_ab with
        # G = (K^{-1} u) α^T − ½ K^{-1} diag(v) K^{-1},  u = α/d,  v = (1 + α²/d)/d
        u = alpha / d
        v = (1.0 + alpha * alpha / d) / d
        G = np.outer(inverse @ u, alpha)
        G -= 0.5 * (inverse * v) @ inverse
        noise = math.exp(theta[-1])
        grad_noise = noise * float(np.trace(G))
        return value, np.append(self.tree.contract(G), grad_noise)


class GPPosterior:
    """Posterior of exact GP regression at fixed hyperparameters.

    Parameters
    ----------
    kernel : sklearn Kernel
        Fitted kernel *without* the noise term.
    noise_variance : float
    X : ndarray (n, d)
    y : ndarray (n,)
        Targets on the scale the kernel was fitted on.
    """

    def __init__(self, kernel, noise_variance, X, y):
        self.kernel = kernel
        self.noise_variance = float(noise_variance)
        self.X = X
        self.y = np.asarray(y, dtype=float)
        K = KernelTree(kernel, X).matrix()
        K[np.diag_indices_from(K)] += self.noise_variance
        self.L, self.jitter = jittered_cholesky(K, overwrite_k=True)
        self.alpha = cholesky_solve(self.L, self.y)
        n = self.y.shape[0]
        self.log_marginal_likelihood = (
            -0.5 * float(self.y @ self.alpha) - float(np.log(np.diag(self.L)).sum()) - 0.5 * n * _LOG_2PI
        )

    #: The constant latent mean (none: the targets are centred by the estimator).
    mean = 0.0

    def variance_reduction(self, K_cross):
        """diag(k*ᵀ (K + σ² I)⁻¹ k*) for the columns k* of ``K_cross``."""
        V = solve_triangular(self.L, K_cross, lower=True, check_finite=False)
        return np.einsum("ij,ij->j", V, V)

    def loo_residuals(self):
        """Leave-one-out residuals y_i − E[y_i | y_−i] = α_i / [K⁻¹]_ii (R&W eq. 5.12).

        What the model fails to predict of each point from the others: unlike
        the training residuals, they do not vanish when the model interpolates
        the data (noise variance at its lower bound).
        """
        return self.alpha / self._inverse_diagonal()

    def loo_log_density(self):
        """log p(y_i | y_−i) of every training point at these hyperparameters (R&W §5.4.2, eq. 5.10).

        The leave-one-out predictive is N(y_i − α_i / [K⁻¹]_ii, 1 / [K⁻¹]_ii), so all n
        densities cost the inverse of one Cholesky factor.
        """
        inverse_diagonal = self._inverse_diagonal()
        residual = self.alpha / inverse_diagonal
        return 0.5 * np.log(inverse_diagonal) - 0.5 * residual**2 * inverse_diagonal - 0.5 * _LOG_2PI

    def _inverse_diagonal(self):
        """diag((K + σ² I)⁻¹), computed once: the select stage's leave-one-out densities and the outlier check's
        residuals both need it (on 2000 rows 1.8 s each)."""
        if getattr(self, "_inverse_diagonal_cache", None) is None:
            self._inverse_diagonal_cache = np.diag(cholesky_inverse(self.L)).copy()
        return self._inverse_diagonal_cache

    def predict(self, X, return_std=False, return_cov=False):
        """Posterior mean of the latent function at ``X``, and its std or covariance."""
        K_star = self.kernel(X, self.X)
        mean = K_star @ self.alpha
        if not (return_std or return_cov):
            return mean, None
        V = solve_triangular(self.L, K_star.T, lower=True, check_finite=False)
        if return_cov:
            cov = self.kernel(X) - V.T @ V
            return mean, cov
        var = self.kernel.diag(X) - np.einsum("ij,ij->j", V, V)
        np.maximum(var, 0.0, out=var)
        return mean, np.sqrt(var)
