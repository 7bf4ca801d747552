"""Fitting one candidate structure of binary GP classification (runs in search workers)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._engine._classification import LAPLACE_FTOL, ClassificationPosterior, LaplaceObjective
from ._engine._linalg import NumericalError
from ._engine._regression import optimize_hyperparameters, random_starts
from ._search import REFINE_MARGIN, SCREEN_MAXITER, candidate_record, criterion_value
from ._starts import StartHints, evaluate_starts, select_starts, start_pool
from .kernels import from_kernel, to_kernel

__all__ = ["ClassificationCandidateFitter"]

#: Size of the random subset on which the starts are screened (multi-fidelity restarts).
SCREEN_SIZE = 150
#: Starts optimised on all the data after screening.
N_REFINE = 2


@dataclass
class ClassificationCandidateFitter:
    """Fits one candidate structure of binary Laplace GP classification.

    ``y`` holds labels in {−1, +1}. The parameters are the kernel's
    log-hyperparameters, the constant latent mean and the likelihood's own
    parameters; the warm state passed between parent and child is
    ``[mean, likelihood parameters]``.
    """

    summary: object
    criterion: object
    likelihood: object
    mean_init: float = 0.0
    n_restarts: int = 2
    maxiter: int = 200
    max_optimize_samples: int | None = None
    make_estimator: object = None

    def __call__(self, expr, X, y, seed, warm_state=None, hints=None):
        return candidate_record(
            lambda: self._fit(expr, X, y, seed, warm_state, hints), expr, seed,
            expr.n_hyperparameters + 1 + self.likelihood.n_params,
        )

    def start_hints(self, parent, X, y, period_columns, change_columns=()):
        """No periodogram hints (labels carry no usable spectrum) and no residual variance."""
        return StartHints()

    def default_extra(self):
        return np.concatenate([[self.mean_init], self.likelihood.default_theta()])

    def _fit(self, expr, X, y, seed, warm_state, hints):
        rng = np.random.default_rng(seed)
        n = X.shape[0]
        kernel = to_kernel(expr, summary=self.summary)
        X_opt, y_opt = X, y
        if self.max_optimize_samples is not None and n > self.max_optimize_samples:
            rows = _stratified_subset(y, self.max_optimize_samples, rng)
            X_opt, y_opt = X[rows], y[rows]
        objective = LaplaceObjective(kernel, X_opt, y_opt, self.likelihood)
        p = kernel.n_dims
        extra = self.default_extra() if warm_state is None else np.asarray(warm_state, dtype=float)
        screen = None
        n_opt = X_opt.shape[0]
        # the outlier rate of a robust likelihood is not identifiable on a small screen subset
        if n_opt >= 2 * SCREEN_SIZE and self.likelihood.log_concave:
            rows = _stratified_subset(y_opt, SCREEN_SIZE, rng)
            screen = LaplaceObjective(to_kernel(expr, summary=self.summary), X_opt[rows], y_opt[rows], self.likelihood)
        # structured starts (lengthscales at several scales, new terms taking over variance),
        # each scored by one Laplace evaluation; see skgpsearch._starts
        # (no noise variance here: cold starts differing only in their noise are duplicates)
        pool = [start for start in start_pool(expr, self.summary, hints) if start.kind != "cold" or start.noise_factor == 1.0]
        thetas = [
            np.concatenate([to_kernel(start.expr, summary=self.summary).theta,
                            extra if start.kind != "cold" else self.default_extra()])
            for start in pool
        ]
        values = evaluate_starts(screen or objective, thetas)
        starts = [thetas[i] for i in select_starts(pool, values)]
        cold = to_kernel(expr.without_values(), summary=self.summary).theta
        for theta in random_starts(kernel, cold, objective.bounds[:p], self.n_restarts, rng, with_noise=False):
            starts.append(np.concatenate([theta, [self.mean_init], self.likelihood.random_theta(rng)]))
        theta, _, failures = optimize_hyperparameters(
            objective, starts, self.maxiter, screen_objective=screen, screen_maxiter=SCREEN_MAXITER,
            n_refine=N_REFINE, refine_margin=REFINE_MARGIN, ftol=LAPLACE_FTOL,
        )
        if theta is None:
            raise NumericalError("; ".join(dict.fromkeys(failures)) or "no start could be optimised")
        kernel.theta = theta[:p]
        mean, lik_theta = float(theta[p]), theta[p + 1 :]
        # on the optimisation data, start Newton at the mode the optimiser saw (the posterior of
        # a likelihood that is not log-concave can have several modes)
        a0 = objective.mode_start(theta) if X_opt is X else None
        posterior = ClassificationPosterior(kernel, mean, self.likelihood, lik_theta, X, y, a0=a0)
        lml = posterior.log_marginal_likelihood
        fitted = from_kernel(kernel, n_features=X.shape[1])
        k = theta.size
        if getattr(self.criterion, "evidence_only", False):
            score = self.criterion.from_evidence(lml, k, n, fitted)
        else:
            view = self.make_estimator(fitted, kernel, mean, lik_theta, posterior, lml, k)
            score = criterion_value(self.criterion, view, X, y)
        record = {
            "structure": fitted,
            "theta": theta,
            "noise_variance": None,
            "warm_state": theta[p:].copy(),
            # the Newton start that reproduces this mode when the model is rebuilt
            "latent_start": posterior.mode.a,
            "log_marginal_likelihood": lml,
            "criterion": score,
            "n_hyperparameters": k,
            "n_evaluations": objective.n_evaluations,
        }
        if not np.isfinite(score):
            record.update(status="failed", message=f"criterion value {score}", criterion=-np.inf)
        return record


def _stratified_subset(y, size, rng):
    """Sorted row indices of a random subset of ``size`` rows with the class proportions of ``y``."""
    n = y.shape[0]
    if size >= n:
        return np.arange(n)
    positive = np.flatnonzero(y > 0)
    negative = np.flatnonzero(y <= 0)
    n_pos = int(round(size * positive.size / n))
    n_pos = min(max(n_pos, min(1, positive.size)), positive.size, size)
    n_neg = min(size - n_pos, negative.size)
    rows = np.concatenate([rng.choice(positive, n_pos, replace=False), rng.choice(negative, n_neg, replace=False)])
    return np.sort(rows)
