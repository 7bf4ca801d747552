"""Fitted models: what a candidate record becomes once conditioned on data, and what predicts.

A :class:`~skgpsearch._search._records.CandidateRecord` holds a fitted
structure and its parameter vector, small enough to send back from a worker.
The models here hold the engine's posterior as well, and answer everything an
estimator, a criterion or the inspection tools ask of a fitted GP:

- :class:`RegressionModel`: one GP regression model on the fitting scale
  (exact, sparse or Student-t engine) with the targets' normalisation;
  predictions come back in the units of the original targets;
- :class:`BinaryLaplaceModel`: one binary Laplace GP classifier (labels in
  {−1, +1}), the latent model the classifier keeps per binary problem;
- :func:`regression_mixture_moments` and :func:`averaged_probability`:
  predictions of a weighted average of models (``model_averaging``).

The estimators never touch an engine object: they keep these models and
delegate to them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.gaussian_process.kernels import Kernel, WhiteKernel

from .._engine._exact import GPPosterior, RegressionObjective
from .._engine._laplace import (MEAN_BOUNDS, LaplaceObjective, LaplacePosterior, calibrate_predictive,
                               predictive_calibration)
from .._engine._likelihoods import OUTLIER_CLIP, Likelihood, student_t_outliers
from .._engine._linalg import NumericalError
from .._engine._sparse import SparseObjective, SparsePosterior
from ..grammar import Expr
from ..kernels import DataSummary
from ._diagnostics import white_noise_variance
from ._records import single_threaded_blas

__all__ = [
    "BinaryLaplaceModel",
    "RegressionModel",
    "averaged_log_odds",
    "averaged_probability",
    "latent_prior_moments",
    "regression_mixture_moments",
]

#: Objectives evaluated at given hyperparameters take any noise variance (the bounds are the optimiser's).
_UNBOUNDED_NOISE = (1e-300, 1e300)


class RegressionModel:
    """A fitted GP regression model: kernel, posterior on the training rows, and the targets' normalisation.

    Parameters
    ----------
    structure : Expr
        The fitted structure (base kernels carry their values).
    kernel : Kernel
        The fitted kernel without the noise, on the normalised scale.
    posterior : GPPosterior, SparsePosterior or LaplacePosterior
        The engine's posterior on ``(X, y_fit)``.
    X : ndarray of shape (n_samples, n_features)
        The rows the posterior conditions on.
    y_fit : ndarray of shape (n_samples,)
        Their targets on the fitting scale: ``(y - y_mean) / y_std``.
    y_mean, y_std : float
        The normalisation.
    summary : DataSummary
        The data summary the kernels' defaults and bounds come from.
    noise_bounds : tuple of float
        Bounds of the Gaussian noise variance on the fitting scale.
    inducing_inputs : ndarray or None
        The sparse approximation's inducing inputs.
    log_marginal_likelihood : float
        log p(y | X) of the original targets (the sparse bound; the Laplace
        approximation for Student-t noise).
    n_hyperparameters : int
        Free parameters counted by the criteria.
    """

    def __init__(self, structure: Expr, kernel: Kernel, posterior: Any, X: np.ndarray, y_fit: np.ndarray, *,
                 y_mean: float, y_std: float, summary: DataSummary, noise_bounds: tuple[float, float],
                 inducing_inputs: np.ndarray | None, log_marginal_likelihood: float, n_hyperparameters: int) -> None:
        self.structure = structure
        self.kernel = kernel
        self.posterior = posterior
        self.X, self.y_fit = X, y_fit
        self.y_mean, self.y_std = y_mean, y_std
        self.summary = summary
        self.noise_bounds = noise_bounds
        self.inducing_inputs = inducing_inputs
        self.log_marginal_likelihood = log_marginal_likelihood
        self.n_hyperparameters = n_hyperparameters

    @property
    def engine(self) -> str:
        """``"exact"``, ``"sparse"`` or ``"student_t"`` (the Laplace engine with Student-t noise)."""
        if isinstance(self.posterior, SparsePosterior):
            return "sparse"
        if isinstance(self.posterior, GPPosterior):
            return "exact"
        return "student_t"

    def fitted_attributes(self) -> dict[str, Any]:
        """The estimator's fitted attributes that describe this model (see ``CompositionalGPRegressor``)."""
        posterior, y_std = self.posterior, self.y_std
        if self.engine != "student_t":
            noise = posterior.noise_variance
            return {
                # kernel_.theta is then the full vector [kernel.theta, log noise] of log_marginal_likelihood
                "kernel_": self.kernel + WhiteKernel(noise, noise_level_bounds=self.noise_bounds),
                "noise_variance_": self.observation_noise * y_std**2,
                "alpha_": posterior.alpha,
                "L_": posterior.L,
                "latent_mean_": 0.0,
            }
        sigma, nu = posterior.likelihood.scale_and_dof(posterior.lik_theta)
        return {
            "kernel_": self.kernel,
            "noise_variance_": self.observation_noise * y_std**2,
            "noise_scale_": sigma * y_std,
            "degrees_of_freedom_": nu,
            "latent_mean_": posterior.mean * y_std + self.y_mean,
            "alpha_": posterior.alpha,
            "L_": None,
        }

    def explanation_fields(self, X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        """The fields of :class:`~skgpsearch.inspection.RegressionView` for training data (X, y) in original units."""
        robust = self.engine == "student_t"
        return dict(
            kernel=self.kernel,
            posterior=self.posterior,
            # a sparse posterior's weights are on the inducing inputs
            X_train=self.inducing_inputs if self.engine == "sparse" else X,
            y_train=y,
            y_mean=float(self.y_mean),
            y_std=float(self.y_std),
            noise_variance=float(self.fitted_attributes()["noise_variance_"]),
            # Student-t noise: shares of the variance of the targets without their gross outliers
            target_variance=self.variance_without_outliers(X, y) if robust else float(np.var(y)),
        )

    def variance_without_outliers(self, X: np.ndarray, y: np.ndarray) -> float:
        """The variance of the training targets (X, y) without the rows this Student-t model treats as outliers
        (residuals beyond the central 99.9 % of its noise, the rows ``describe`` counts) and without their gross
        outliers (:meth:`robust_target_variance`): what the components' shares are of. The latter alone had kept
        three outliers 4-5 robust units out, which halved a component's share (54 % instead of 101 %)."""
        sigma, nu = self.posterior.likelihood.scale_and_dof(self.posterior.lik_theta)
        z = self.normalised(y)  # on the fitting scale, as sigma and the latent mean
        kept = (np.abs(z) <= OUTLIER_CLIP) & ~student_t_outliers(z - self.fitting_scale_moments(X)[0], sigma, nu)
        return float(np.var(y[kept])) if np.count_nonzero(kept) >= 2 else self.robust_target_variance(y)

    def normalised(self, y: np.ndarray) -> np.ndarray:
        """Targets on the fitting scale."""
        return (y - self.y_mean) / self.y_std

    def robust_target_variance(self, y: np.ndarray) -> float:
        """The variance of the targets without their gross outliers (what Student-t components are shares of)."""
        z = self.normalised(y)
        return float(np.var(z[np.abs(z) <= OUTLIER_CLIP])) * self.y_std**2

    @property
    def observation_noise(self) -> float:
        """The variance of the noise of one observation on the fitting scale (Student-t: σ² ν / (ν − 2),
        infinite for ν ≤ 2)."""
        posterior = self.posterior
        if self.engine == "student_t":
            return float(posterior.likelihood.noise_variance(posterior.lik_theta))
        return float(posterior.noise_variance)

    def predict(self, X: np.ndarray, return_std: bool = False, return_cov: bool = False, include_noise: bool = False):
        """Posterior mean of f at ``X`` in original units, and its std or covariance (or None): of f, or with
        ``include_noise`` of a new observation y = f + noise."""
        mean, spread = self.fitting_scale_moments(X, return_std, return_cov, include_noise)
        return _to_original_units(mean, spread, self.y_mean, self.y_std, return_std, return_cov)

    def fitting_scale_moments(self, X: np.ndarray, return_std: bool = False, return_cov: bool = False,
                              include_noise: bool = False):
        """Mean and std or covariance (or None) at ``X`` on the fitting scale: of f, or with ``include_noise`` of a
        new observation. The kernel's terms with a white-noise factor (``WN``, ``LIN * WN``) are noise by design:
        a new observation has them, f has not (a structure ``WN`` on pure noise had given f the noise's spread)."""
        mean, spread = self.posterior.predict(X, return_std=return_std, return_cov=return_cov)
        if spread is None:
            return mean, None
        if include_noise:
            return mean, _with_noise(spread, self.observation_noise, return_std, return_cov)
        by_design = white_noise_variance(self.kernel, X)
        if by_design is not None:
            spread = _without_white_noise(spread, by_design, return_std, return_cov)
        return mean, spread

    def shift(self, n_samples: int) -> float:
        """What turns the log evidence of ``n_samples`` normalised targets into that of the original ones."""
        return -n_samples * math.log(self.y_std)

    def _objective(self, X: np.ndarray, y_fit: np.ndarray, warm: bool = False):
        kernel = clone(self.kernel)
        if self.engine == "student_t":
            objective = LaplaceObjective(kernel, X, y_fit, self.posterior.likelihood)
            if warm:
                # Newton from the fitted mode: the Student-t posterior of the latent values can have several
                objective._last_a = self.posterior.mode.a
            return objective
        if self.engine == "sparse":
            return SparseObjective(kernel, X, y_fit, self.inducing_inputs, _UNBOUNDED_NOISE)
        return RegressionObjective(kernel, X, y_fit, _UNBOUNDED_NOISE)

    def log_marginal_likelihood_at(self, theta: np.ndarray, eval_gradient: bool = False):
        """log p(y | X, θ) of the training targets (original units) at the parameter vector ``theta``.

        A point where the kernel matrix is not positive definite has ``-inf``
        (and a zero gradient).
        """
        objective = self._objective(self.X, self.y_fit, warm=True)
        shift = self.shift(self.y_fit.shape[0])
        try:
            out = objective(np.asarray(theta, dtype=float), eval_gradient=eval_gradient)
        except NumericalError:
            return (-np.inf, np.zeros(len(theta))) if eval_gradient else -np.inf
        if eval_gradient:
            return out[0] + shift, out[1]
        return out + shift

    def log_marginal_likelihood_on(self, X: np.ndarray, y: np.ndarray) -> float:
        """log p(y | X) of other data (original units) under the fitted hyperparameters, without a refit."""
        y_fit = self.normalised(y)
        if self.engine == "student_t":
            posterior = self.posterior
            laplace = LaplacePosterior(self.kernel, posterior.mean, posterior.likelihood, posterior.lik_theta, X, y_fit)
            return laplace.log_marginal_likelihood + self.shift(len(y))
        noise = self.posterior.noise_variance
        if self.engine == "sparse":
            posterior = SparsePosterior(self.kernel, noise, X, y_fit, self.inducing_inputs)
        else:
            posterior = GPPosterior(self.kernel, noise, X, y_fit)
        return posterior.log_marginal_likelihood + self.shift(len(y))

    def fitted_objective(self, X: np.ndarray, y: np.ndarray, theta: np.ndarray) -> tuple[Any, np.ndarray, float]:
        """(exact objective on (X, y) with this kernel, ``theta``, shift to original units), for the criteria.

        Raises ``ValueError`` for a sparse or Student-t model: those criteria
        need the exact Gaussian objective.
        """
        if self.engine != "exact":
            setting = "likelihood='student_t'" if self.engine == "student_t" else "approximation='sparse'"
            raise ValueError(f"This criterion needs the exact Gaussian objective; a model with {setting} "
                             "supports 'bic', 'aic', 'bic_light', 'lml' and callables.")
        objective = RegressionObjective(clone(self.kernel), X, self.normalised(y), _UNBOUNDED_NOISE)
        return objective, theta, self.shift(len(y))

    def prior_moments(self, prior: Any) -> tuple[np.ndarray, np.ndarray]:
        """Means and standard deviations of the hyperprior on ``[kernel.theta, log noise]``."""
        return prior.moments(self.structure, self.summary)

    @property
    def has_loo(self) -> bool:
        """Whether :meth:`loo_log_density` is available (not for the sparse approximation)."""
        return self.engine != "sparse"

    def loo_log_density(self) -> np.ndarray:
        """log p(y_i | y_−i) of every training row at the fitted hyperparameters, original target units.

        Exact for Gaussian noise (R&W §5.4.2); the Laplace cavity approximation
        for Student-t noise (Vehtari et al. 2016). Raises ``ValueError`` for
        the sparse approximation, which has no leave-one-out predictive.
        """
        if not self.has_loo:
            raise ValueError("the sparse approximation has no leave-one-out predictive density")
        with single_threaded_blas():
            if self.engine == "exact":
                density = self.posterior.loo_log_density()
            else:
                density = self.posterior.loo_log_density(self.y_fit)
        return density - math.log(self.y_std)

    def loo_residuals(self) -> np.ndarray:
        """Leave-one-out residuals of the exact model on the fitting scale."""
        with single_threaded_blas():
            return self.posterior.loo_residuals()


def _with_noise(spread, noise, return_std, return_cov):
    """A latent std or covariance (fitting scale) turned into that of a new observation with noise variance ``noise``."""
    if return_std:
        return np.sqrt(spread**2 + noise)
    if return_cov:
        # on the diagonal only (noise * eye would turn an infinite Student-t variance into NaN off it)
        spread = np.array(spread, dtype=float)
        spread[np.diag_indices_from(spread)] += noise
    return spread


def _without_white_noise(spread, variance, return_std, return_cov):
    """A std or covariance (fitting scale) without the white-noise terms' ``variance`` at each point (their
    covariance between distinct points is zero)."""
    if return_std:
        return np.sqrt(np.clip(spread**2 - variance, 0.0, None))
    spread = np.array(spread, dtype=float)
    diagonal = np.diag_indices_from(spread)
    spread[diagonal] = np.clip(spread[diagonal] - variance, 0.0, None)
    return spread


def _to_original_units(mean, spread, y_mean, y_std, return_std, return_cov):
    mean = mean * y_std + y_mean
    if return_std:
        return mean, spread * y_std
    if return_cov:
        return mean, spread * y_std**2
    return mean, None


#: Predictions without the covariance go through this many rows at a time: the cross-covariances of every new row
#: with every training (or inducing) input, and their solves, took about 5 x 8 bytes x m per row at once (977 MB
#: for 100 000 rows of a sparse model with 256 inducing inputs; an exact one on 2 000 rows would need 8 GB).
PREDICT_BLOCK_ROWS = 4096


def regression_mixture_moments(models: Sequence[RegressionModel], weights: np.ndarray, X: np.ndarray,
                               return_std: bool = False, return_cov: bool = False, include_noise: bool = False):
    """Mean (original units) and std or covariance of a weighted mixture of regression models at ``X``: of the
    latent f, or with ``include_noise`` of a new observation (each model with its own noise variance).

    The mean and variance of the mixture are exact: Σ w_i μ_i and
    Σ w_i (σ_i² + μ_i²) − μ². One model predicts as it is. Without the
    covariance, rows are predicted ``PREDICT_BLOCK_ROWS`` at a time.
    """
    if not return_cov and X.shape[0] > PREDICT_BLOCK_ROWS:
        blocks = [regression_mixture_moments(models, weights, X[start:start + PREDICT_BLOCK_ROWS], return_std,
                                             False, include_noise)
                  for start in range(0, X.shape[0], PREDICT_BLOCK_ROWS)]
        return (np.concatenate([mean for mean, _ in blocks]),
                np.concatenate([std for _, std in blocks]) if return_std else None)
    if len(models) == 1:
        return models[0].predict(X, return_std=return_std, return_cov=return_cov, include_noise=include_noise)
    means, spreads = [], []
    for model in models:
        mean, spread = model.fitting_scale_moments(X, return_std, return_cov, include_noise)
        means.append(mean)
        spreads.append(spread)
    means = np.asarray(means)
    mean = weights @ means
    spread = None
    if return_cov:
        # Σ w_i (C_i + μ_i μ_iᵀ) − μ μᵀ, written with the deviations μ_i − μ (no cancellation)
        deviations = means - mean
        spread = sum(w * c for w, c in zip(weights, spreads)) + (deviations.T * weights) @ deviations
    elif return_std:
        spread = np.sqrt(weights @ (np.asarray(spreads) ** 2 + (means - mean) ** 2))
    first = models[0]
    return _to_original_units(mean, spread, first.y_mean, first.y_std, return_std, return_cov)


class BinaryLaplaceModel:
    """A fitted binary Laplace GP classifier (labels in {−1, +1}): the latent model of one binary problem.

    It is what the criteria score (:class:`~skgpsearch.criteria._protocol.ObjectiveModel`)
    and what the inspection tools read (:class:`~skgpsearch.inspection.LatentModel`).
    ``mixture`` and ``weights`` are the posteriors and weights it predicts
    with (itself alone without model averaging).
    """

    def __init__(self, structure: Expr, kernel: Kernel, mean: float, likelihood: Likelihood, lik_theta: np.ndarray,
                 posterior: LaplacePosterior, X: np.ndarray, y: np.ndarray, summary: DataSummary,
                 mean_bounds: tuple[float, float] = MEAN_BOUNDS) -> None:
        self.structure_ = structure
        self.mean_bounds = mean_bounds
        self.kernel_ = kernel
        self.latent_mean_ = float(mean)
        self.likelihood = likelihood
        self.lik_theta = np.asarray(lik_theta, dtype=float)
        self.likelihood_params_ = likelihood.describe(self.lik_theta)
        self.posterior = posterior
        self.X_train_, self.y_train_ = X, y
        self._summary = summary
        self.log_marginal_likelihood_value_ = posterior.log_marginal_likelihood
        self.n_hyperparameters_ = kernel.n_dims + 1 + likelihood.n_params
        self.mixture: list[LaplacePosterior] = [posterior]
        self.weights = np.ones(1)
        self.criterion_value = float("nan")
        self.diagnostics: tuple[str, ...] = ()

    @property
    def theta(self) -> np.ndarray:
        return np.concatenate([self.kernel_.theta, [self.latent_mean_], self.lik_theta])

    def _is_training_data(self, X, y):
        return X.shape == self.X_train_.shape and np.array_equal(X, self.X_train_) and np.array_equal(y, self.y_train_)

    def log_marginal_likelihood_on(self, X: np.ndarray, y: np.ndarray) -> float:
        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        if self._is_training_data(X, y):
            return self.log_marginal_likelihood_value_
        with single_threaded_blas():
            return self._conditioned(X, y).log_marginal_likelihood

    def _conditioned(self, X: np.ndarray, y: np.ndarray, warm: np.ndarray | None = None) -> LaplacePosterior:
        """The posterior of the same hyperparameters conditioned on other data (X, y).

        ``warm``: the rows of the training data that (X, y) are; Newton then
        starts from the training mode's ∇ log p on those rows (a near-mode
        start when most rows are kept), instead of from f = m.
        """
        a0 = None if warm is None else self.posterior.weights[warm]
        return LaplacePosterior(self.kernel_, self.latent_mean_, self.likelihood, self.lik_theta, X, y, a0=a0)

    def _fitted_objective(self, X: np.ndarray, y: np.ndarray) -> tuple[Any, np.ndarray, float]:
        objective = LaplaceObjective(clone(self.kernel_), np.asarray(X, dtype=float), np.asarray(y, dtype=float),
                                     self.likelihood, self.mean_bounds)
        return objective, self.theta, 0.0

    def _prior_moments(self, prior: Any) -> tuple[np.ndarray, np.ndarray]:
        mean_prior = self.likelihood.latent_of_probability(float(np.mean(self.y_train_ > 0)))
        return latent_prior_moments(prior, self.structure_, self._summary, self.likelihood, mean_prior)

    def predict_latent(self, X: np.ndarray, return_var: bool = False):
        """Posterior mean (and variance) of the latent function at ``X``."""
        return self.posterior.predict_latent(X, return_var=return_var)

    #: The Laplace approximation always has a leave-one-out predictive.
    has_loo = True

    def loo_log_density(self) -> np.ndarray:
        """Approximate log p(y_i | y_−i) of every training label under this model's calibrated predictive.

        From the Laplace cavities (Vehtari et al. 2016), with the variance
        scale and floor that :meth:`calibrate` would give this model alone
        (:func:`~skgpsearch._engine._laplace.predictive_calibration`): what the
        model would predict if it were chosen. The Laplace predictive's own
        densities penalise a model by its amplitude, not its errors: on
        scikit-learn's digits (500 rows, 57 pixels) one ARD kernel for class 0
        had -192.7 (below the base rate's -162) and a product of three pixels
        -123.9, whose calibrated predictives then scored -5.4 and -43.2 on 500
        test rows.
        """
        with single_threaded_blas():
            return predictive_calibration([self.posterior], np.ones(1), self.y_train_)[2]

    def calibrate(self) -> None:
        """Calibrate the predictive of ``mixture`` (with ``weights``) by leave-one-out
        (:func:`~skgpsearch._engine._laplace.calibrate_predictive`): one variance scale and floor for all.

        The select stage compares and stacks the finalists by the densities
        of each one calibrated alone (:meth:`loo_log_density`); their
        average is then calibrated as a whole.
        """
        with single_threaded_blas():
            calibrate_predictive(self.mixture, self.weights, self.y_train_)


def latent_prior_moments(prior: Any, structure: Expr, summary: DataSummary, likelihood: Likelihood,
                         mean_prior: float) -> tuple[np.ndarray, np.ndarray]:
    """Means and standard deviations of ``prior`` on a Laplace model's [kernel theta, constant mean, likelihood theta].

    The constant mean's prior is centred at ``mean_prior`` (the latent value of
    the class frequency), the likelihood's parameters at their defaults.
    """
    means, sds = prior.kernel_moments(structure, summary)
    sd = prior.standard_deviations()
    means, sds = np.append(means, mean_prior), np.append(sds, sd["mean"])
    if likelihood.n_params:
        means = np.append(means, likelihood.default_theta())
        sds = np.append(sds, [sd["outlier_rate"]] * likelihood.n_params)
    return means, sds


def averaged_probability(model: BinaryLaplaceModel, X: np.ndarray) -> np.ndarray:
    """p(y = +1 | x) of a binary model: the weighted average over its mixture."""
    if len(model.mixture) == 1:
        return model.posterior.predict_proba(X)
    return sum(w * posterior.predict_proba(X) for w, posterior in zip(model.weights, model.mixture))


def averaged_log_odds(model: BinaryLaplaceModel, X: np.ndarray) -> np.ndarray:
    """Predictive log-odds of a binary model (of its averaged probability with a mixture)."""
    if len(model.mixture) == 1:
        return model.posterior.predict_log_odds(X)
    p = np.clip(averaged_probability(model, X), 1e-300, 1.0)
    q = np.clip(1.0 - p, 1e-300, 1.0)
    return np.log(p) - np.log(q)
