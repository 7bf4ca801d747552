"""Fitting one candidate structure with the Laplace engine (runs in search workers).

Used by the classifier (binary likelihoods) and by the regressor's robust
(Student-t) likelihood.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._engine._laplace import EXPLORE_NEWTON_TOL, LAPLACE_FTOL, MEAN_BOUNDS, LaplaceObjective, LaplacePosterior
from .._engine._likelihoods import OUTLIER_CLIP, Likelihood
from .._engine._optimizer import PriorObjective, StallRule, optimize_hyperparameters, random_starts
from ..criteria import HyperPrior
from ..grammar import Expr
from ..kernels import DataSummary, to_kernel
from ..kernels._convert import structure_theta
from ._candidate_fitter import EXPLORE_FTOL, EXPLORE_SCREEN_MAXITER, CandidateFitter
from ._diagnostics import WHITE_NOISE_CORRELATION, white_noise_term
from ._exact_fitter import REFINE_MARGIN, SCREEN_CANDIDATE_MAXITER, SCREEN_MAXITER, regression_start_hints
from ._models import BinaryLaplaceModel, RegressionModel, latent_prior_moments
from ._records import DEGENERATE, CandidateRecord, ScreenScore, single_threaded_blas
from ._starts import StartHints, evaluate_starts, select_starts, start_pool

__all__ = ["LaplaceCandidateFitter"]

#: Size of the random subset on which the starts are screened (multi-fidelity restarts).
SCREEN_SIZE = 150
#: Rows of the cheap score that ranks the candidates of a large level (see ``screen``).
SCREEN_CANDIDATE_ROWS = 120
#: Starts optimised on all the data after screening.
N_REFINE = 2


@dataclass
class LaplaceCandidateFitter(CandidateFitter):
    """Fits one candidate structure by the Laplace approximation.

    ``y`` holds labels in {−1, +1} for a binary likelihood, real targets on
    the fitting scale (normalised by ``y_std``) for a regression one. The
    parameters are the kernel's log-hyperparameters, the constant latent mean
    and the likelihood's own parameters; the warm state passed between parent
    and child is ``[mean, likelihood parameters]``.
    """

    likelihood: Likelihood | None = None
    mean_init: float = 0.0
    #: Bounds of the constant latent mean (a binary problem's: ``binary_mean_bounds`` of all its rows).
    mean_bounds: tuple[float, float] = MEAN_BOUNDS
    #: Record white-noise optima as "degenerate" (see :func:`degenerate_reason`); off for a refit of one structure.
    reject_degenerate: bool = True
    #: Maximise the evidence plus this hyperprior's log density (binary likelihoods; None: the evidence alone).
    prior: HyperPrior | None = None
    #: The baselines' runs to convergence end once 20 evaluations gain under 0.05 nats. On 1000 x 35 synthetic
    #: classes the additive baseline (71 hyperparameters) took 119-198 evaluations on all rows, of which the
    #: last 45-115 gained 0.03-0.1 nats together, at about 0.2 s each (hence 0.02 nats, 2026-12-03). With 0.05
    #: (2026-12-05) two of its three runs ended 60-70 evaluations earlier (97 -> 34 and 92 -> 22), 0.52 and
    #: 0.36 nats lower, their test log loss +0.007 and -0.001 (benchmarks/results/baseline_stall.txt).
    polish_stall: ClassVar[StallRule | None] = StallRule(window=20, nats=0.05)
    #: A large level is cut by its candidates' starts next to the parent, evaluated on the rows the fits use
    #: (:meth:`prescreen`). Measured on 10 screened levels of breast_cancer and 1000 x 35 synthetic classes
    #: (every candidate also fitted): it kept each level's best fit, where the short fits on 120 rows of
    #: :meth:`screen` lost it on 4 of 5 levels of a breast_cancer fold (by 1.5-3.4 nats) and cost more.
    prescreen_decides: ClassVar[bool] = True

    @property
    def fits_binary_labels(self) -> bool:
        return self.likelihood.binary

    def _noise(self, fields):
        """Student-t noise: its squared scale and bounds, diagnosed as the Gaussian noise variance is (a scale at
        its lower bound on noise-free rows had no finding); a binary likelihood has no noise."""
        bounds = getattr(self.likelihood, "SCALE_BOUNDS", None)
        if self.likelihood.binary or bounds is None:
            return None
        scale = math.exp(float(fields["warm_state"][1]))  # [latent mean, log scale, (log ν)]
        return scale**2, (bounds[0] ** 2, bounds[1] ** 2)

    def start_hints(self, parent: CandidateRecord | None, X: np.ndarray, y: np.ndarray, period_columns: list[int],
                    change_columns: list[int] = ()) -> StartHints:
        """Classification: none (labels carry no usable spectrum). Regression: periods and change
        locations from the clipped targets (the parent has no Gaussian residuals to use)."""
        if self.likelihood.binary:
            return StartHints()
        return regression_start_hints(None, X, np.clip(y, -OUTLIER_CLIP, OUTLIER_CLIP), self.summary, period_columns,
                                      change_columns)

    def screen(self, expr: Expr, X: np.ndarray, y: np.ndarray, seed: int, warm_state: np.ndarray | None = None,
               hints: StartHints | None = None) -> ScreenScore:
        """A cheap score of the candidate, to rank the siblings of a large level.

        The Laplace log evidence on a stratified random subset of
        ``SCREEN_CANDIDATE_ROWS`` rows after ``SCREEN_CANDIDATE_MAXITER`` L-BFGS
        iterations from the two best starts of the pool, on the criterion's
        scale (see :meth:`CandidateFitter.screen_score`); ``-inf`` when no
        start can be evaluated.
        """
        rng = np.random.default_rng(seed)
        rows = self._subset(y, SCREEN_CANDIDATE_ROWS, rng)
        extra = self._extra(warm_state)
        with single_threaded_blas():
            objective = LaplaceObjective(to_kernel(expr, summary=self.summary), X[rows], y[rows], self.likelihood,
                                         self.mean_bounds)
            _, thetas = self._start_thetas(expr, hints, extra)
            values = np.asarray(evaluate_starts(objective, thetas), dtype=float)
            best = [i for i in np.argsort(-values)[:2] if np.isfinite(values[i])]
            value = None
            if best:
                _, value, _ = optimize_hyperparameters(objective, [thetas[i] for i in best], SCREEN_CANDIDATE_MAXITER,
                                                       ftol=LAPLACE_FTOL)
        if value is None or not np.isfinite(value):
            value = -np.inf
        return self.screen_score(value, expr, objective.bounds.shape[0], rows.size, y.shape[0],
                                 objective.n_evaluations)

    def prescreen(self, expr: Expr, X: np.ndarray, y: np.ndarray, seed: int, warm_state: np.ndarray | None = None,
                  hints: StartHints | None = None) -> ScreenScore | None:
        """The cheapest score: the Laplace log evidence of the best start next to the parent's optimum.

        The nested and warm starts of the pool, on the rows the fits optimise
        on (all of ``X``, or a ``max_optimize_samples`` subset drawn with
        ``seed``: the search gives every sibling the same), without
        optimisation, on the criterion's scale; ``None`` for a candidate without
        such starts (no fitted parent). As many rows as a fit sees, because the
        scores of a smaller subset rank differently: on a level of
        breast_cancer the best fit ranked 17th of 59 by the 120 rows of
        :meth:`screen` (measured when each candidate had a subset of its own).
        """
        _, thetas = self._start_thetas(expr, hints, self._extra(warm_state), cold=False)
        if not thetas:
            return None
        rows = self._optimization_rows(y, np.random.default_rng(seed))
        rows = np.arange(y.shape[0]) if rows is None else rows
        with single_threaded_blas():
            objective = LaplaceObjective(to_kernel(expr, summary=self.summary), X[rows], y[rows], self.likelihood,
                                         self.mean_bounds)
            value = max(evaluate_starts(objective, thetas))
        return self.screen_score(value, expr, objective.bounds.shape[0], rows.size, y.shape[0],
                                 objective.n_evaluations)

    def _subset(self, y, size, rng):
        """Sorted rows of a random subset: stratified by class for labels."""
        if self.likelihood.binary:
            return _stratified_subset(y, size, rng)
        return super()._subset(y, size, rng)

    def default_extra(self):
        return np.concatenate([[self.mean_init], self.likelihood.default_theta()])

    def _extra(self, warm_state):
        """[mean, likelihood parameters]: the warm state's, or the defaults without one."""
        return self.default_extra() if warm_state is None else np.asarray(warm_state, dtype=float)

    def _start_thetas(self, expr, hints, extra, cold=True):
        """The start pool of ``expr`` and its parameter vectors [kernel theta, mean, likelihood parameters].

        Structured starts (lengthscales at several scales, new terms taking over
        variance; see skgpsearch._starts) carry the parent's ``extra``; cold ones the
        defaults. There is no noise variance here: cold starts differing only in
        their noise are duplicates.
        """
        pool = [start for start in start_pool(expr, self.summary, hints, cold=cold)
                if start.kind != "cold" or start.noise_factor == 1.0]
        thetas = [
            np.concatenate([structure_theta(start.expr, self.summary),
                            extra if start.kind != "cold" else self.default_extra()])
            for start in pool
        ]
        return pool, thetas

    # -- the steps of CandidateFitter ------------------------------------------------------
    def _n_parameters(self, expr):
        return expr.n_hyperparameters + 1 + self.likelihood.n_params

    def _objectives(self, expr, kernel, X, y, rng):
        objective = self._with_prior(expr, LaplaceObjective(kernel, X, y, self.likelihood, self.mean_bounds))
        screen = None
        # the outlier rate of a robust likelihood is not identifiable on a small screen subset
        if X.shape[0] >= 2 * SCREEN_SIZE and self.likelihood.log_concave:
            rows = self._subset(y, SCREEN_SIZE, rng)
            screen = self._with_prior(expr, LaplaceObjective(to_kernel(expr, summary=self.summary), X[rows], y[rows],
                                                             self.likelihood, self.mean_bounds))
        return objective, screen

    def _with_prior(self, expr, objective):
        """The objective, plus the log hyperprior when the fitter maximises the posterior (MAP)."""
        if self.prior is None:
            return objective
        return PriorObjective(objective, *latent_prior_moments(self.prior, expr, self.summary, self.likelihood,
                                                               self.mean_init))

    def _starts(self, expr, kernel, objective, screen, hints, warm_state, rng):
        extra = self._extra(warm_state)
        # each start scored by one Laplace evaluation
        pool, thetas = self._start_thetas(expr, hints, extra)
        values = evaluate_starts(screen or objective, thetas, self.deadline)
        if self.effort == "explore":
            return [thetas[i] for i in select_starts(pool, values, n_warm=1, n_cold=1)]
        starts = [thetas[i] for i in select_starts(pool, values)]
        cold = to_kernel(expr.without_values(), summary=self.summary).theta
        p = kernel.n_dims
        for theta in random_starts(kernel, cold, objective.bounds[:p], self.n_restarts, rng, with_noise=False):
            starts.append(np.concatenate([theta, [self.mean_init], self.likelihood.random_theta(rng)]))
        return starts

    def _optimizer_options(self, screen):
        if self.effort == "explore":
            return dict(screen_objective=screen, screen_maxiter=EXPLORE_SCREEN_MAXITER, n_refine=1, ftol=EXPLORE_FTOL)
        return dict(screen_objective=screen, screen_maxiter=SCREEN_MAXITER, n_refine=N_REFINE,
                    refine_margin=REFINE_MARGIN, ftol=LAPLACE_FTOL)

    def _warm_start(self, kernel, warm_state):
        return np.concatenate([kernel.theta, self._extra(warm_state)])

    def _posterior(self, kernel, theta, X, y, objective, X_opt):
        p = kernel.n_dims
        mean = float(theta[p])
        # start Newton at the mode the optimiser saw (the posterior of a likelihood that is not
        # log-concave can have several modes); optimised on a subset, one Newton iterate from that
        # mode's predictions for every row (on 1000 rows about 2 of 7 factorisations fewer than from f = m)
        a0, f0, tolerance = objective.mode_start(theta), None, None
        if X_opt is not X:
            f0 = None if a0 is None else mean + kernel(X, X_opt) @ a0
            a0 = None
            # an evidence that ranks the candidate: a subset's optimum is refitted on all rows if it is a finalist
            tolerance = EXPLORE_NEWTON_TOL
        posterior = LaplacePosterior(kernel, mean, self.likelihood, theta[p + 1 :], X, y, a0=a0, f0=f0,
                                     newton_tolerance=tolerance)
        # latent_start: the Newton start that reproduces this mode when the model is rebuilt
        return posterior, {"warm_state": theta[p:].copy(), "latent_start": posterior.mode.a}

    def _model(self, structure, kernel, posterior, X, y, lml, k):
        if self.likelihood.binary:
            model = BinaryLaplaceModel(structure, kernel, posterior.mean, self.likelihood, posterior.lik_theta,
                                       posterior, X, y, self.summary, mean_bounds=self.mean_bounds)
            model.n_hyperparameters_ = k
            return model
        return RegressionModel(structure, kernel, posterior, X, y, y_mean=self.y_mean, y_std=self.y_std,
                               summary=self.summary, noise_bounds=(0.0, np.inf), inducing_inputs=None,
                               log_marginal_likelihood=lml, n_hyperparameters=k)

    def _criterion_data(self, view, X, y):
        # binary problems are scored on their {−1, +1} labels; regression on the targets as the user gave them
        return (X, y) if self.likelihood.binary else super()._criterion_data(view, X, y)

    def _check_fitted(self, record, X):
        if self.reject_degenerate:
            reason = degenerate_reason(record.structure, X, self.summary)
            if reason is not None:
                record.fail(DEGENERATE, reason)


def degenerate_reason(expr: Expr, X: np.ndarray, summary: DataSummary) -> str | None:
    """Why a fitted classification structure is a degenerate (white-noise) optimum, or None.

    Two forms: a stationary kernel on continuous columns whose lengthscale ended
    at the floor, the spacing of the column's values (the optimum lies beyond it,
    in white noise); and an additive term under which the median training point
    correlates with no other above ``WHITE_NOISE_CORRELATION`` (a product of
    per-column kernels can be white noise in several columns jointly although no
    lengthscale is at its floor). Such a term gives every training point its own
    latent value; the likelihood is flat at the mode for points far from the
    boundary, so the Laplace approximation sees almost no posterior contraction
    and overrates the evidence by about the log-probability each such point
    loses to the prior spread. On labels without structure it then prefers the
    white-noise model to the constant one, and its probabilities are pulled
    towards 1/2 instead of the base rate.
    """
    floored = summary.spacing_floored
    if floored is not None:
        for leaf in expr.leaves:
            lengthscale = leaf.params.get("lengthscale")
            if lengthscale is None or leaf.kind.periodic or not leaf.columns or not all(floored[list(leaf.columns)]):
                continue
            floor = summary.lengthscale_floor_of(leaf.columns)
            if floor is not None and np.min(lengthscale) <= FLOOR_TOLERANCE * floor:
                return (f"{leaf.without_values()} has its lengthscale at the spacing of its column's values: "
                        "a white-noise optimum, which the Laplace evidence overrates")
    term = white_noise_term(expr, X[:WHITE_NOISE_ROWS], summary)
    if term is not None:
        return (f"{term.without_values()} acts as white noise on the data (the median training point correlates "
                f"with no other above {WHITE_NOISE_CORRELATION}), which the Laplace evidence overrates")
    return None


#: A lengthscale within this factor of its floor counts as at the floor.
FLOOR_TOLERANCE = 1.05


#: The white-noise check uses at most this many training rows (their nearest neighbours among themselves).
WHITE_NOISE_ROWS = 2000


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
