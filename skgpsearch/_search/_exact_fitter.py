"""Fitting one candidate structure for exact GP regression (runs in search workers)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._engine._exact import GPPosterior, RegressionObjective
from .._engine._linalg import NumericalError
from .._engine._optimizer import SCREEN_FTOL, optimize_hyperparameters, random_starts
from .._engine._periodogram import period_candidates
from ..criteria import HyperPrior
from ..grammar import Expr
from ..kernels import DataSummary, default_hyperparameters, to_kernel
from ..kernels._convert import structure_theta
from ._candidate_fitter import EXPLORE_FTOL, EXPLORE_SCREEN_MAXITER, CandidateFitter
from ._models import RegressionModel
from ._records import CandidateRecord, ScreenScore, single_threaded_blas
from ._starts import (
    StartHints,
    change_locations,
    explore_starts,
    profile_starts,
    select_raw_and_profiled,
    start_pool,
)

__all__ = ["RegressionCandidateFitter", "regression_start_hints"]

#: The explore effort's starts: "few" (the nested start and the best of each ranking) or "all" (those of the
#: full effort, each run EXPLORE_SCREEN_MAXITER iterations, the best then to convergence).
EXPLORE_STARTS = "few"
#: Rows and L-BFGS iterations of the cheap screen of candidates; for a series' "screened" effort at most half its
#: rows, as its starts are screened on at most half (measured 2026-12-05: benchmarks/bench_search.py's 300 months
#: 14.1 -> 12.9 s, the same structure and BIC; solar, mauna, sulphuric, unemployment, sunspots and co2, the
#: series of 300-499 rows measured, the same structures and forecasts; from 500 rows on nothing changes). Runs of
#: the series instead of a random subset lost wages' forecast (benchmarks/results/screened_levels_cheaper.txt).
SCREEN_CANDIDATE_ROWS = 250
SCREEN_CANDIDATE_MAXITER = 10
#: Successive halving of a candidate's starts from MIN_SUBSET_SCREEN rows on: SCREEN_MAXITER
#: iterations each on a random SCREEN_SIZE-row subset. Below, every selected start is optimised
#: to convergence: measured by benchmarks/fit_quality.py, halving on all the data for 15
#: iterations lost > 0.1 nats on 19 of 88 pairs (up to 187), and a random half of small data
#: halves the sampling density, which can hide a cycle near the Nyquist period. The "screened" effort
#: of a series (from _candidate_fitter.SCREENED_FROM_ROWS rows on) screens below MIN_SUBSET_SCREEN too, on
#: SCREEN_BLOCKS runs of consecutive rows (series_blocks) that keep the sampling density: SCREEN_SIZE rows,
#: at most half the series. A table of 600-999 rows is not subset-screened either (measured 2026-12-05 on R's
#: diamonds, 999 x 9, never tuned on): screening the full effort's starts (each level's two best, the
#: finalists) on 400 random rows cut the search from 131 to 74 s, but depth 3's best structure lost its basin
#: by 6 nats and the test SMSE rose from 0.0083 to 0.0092; on 600 rows, 83 s, depth 6 lost 4.5 nats.
SCREEN_SIZE = 400
MIN_SUBSET_SCREEN = 1000
SCREEN_MAXITER = 30
SCREEN_BLOCKS = 8
#: Starts optimised on all the data after screening: the best, and the runner-up when its
#: screened value is within REFINE_MARGIN nats (validated in benchmarks/fit_quality.py). The runner-up's run
#: seldom ends higher (on the internet series 1 of 30 pairs, temperature 2 of 42), but refining the best
#: alone for a series' "screened" effort (measured 2026-12-05) lost solar (RMSE 0.46 -> 0.56, the search ended
#: at RQ) and births (24.6 -> 32.5) for 16-20 % less time on the two slowest series.
N_REFINE = 2
REFINE_MARGIN = 2.0
#: The least constant noise variance, as a share of the target variance, of a structure with a noise term that
#: varies along an input (S + WN × B): B's variance reaches zero (LIN's at its offset), and where the constant
#: noise went to its lower bound too, such a model was nearly certain of new rows there. On mcycle (10 folds of
#: benchmarks/tabular.py) the stacked default scored MSLL -0.484 without the floor (a test row at -80 nats, its
#: standard deviation 0.11 g where the data scatter by 1 g) and -1.085 with it (one ARD kernel: -0.720).
VARYING_NOISE_FLOOR = 1e-3
#: The exact GP's full_effort_max_rows (see _candidate_fitter.full_effort_on_subset).
FULL_EFFORT_MAX_ROWS = 1000


@dataclass
class RegressionCandidateFitter(CandidateFitter):
    """Fits one candidate structure for exact GP regression (picklable, runs in workers).

    ``y`` passed to :meth:`__call__` is on the fitting scale (normalised when
    the estimator normalises); ``y_std`` maps the evidence back to the
    original targets. The warm state passed from parent to child is the
    parent's noise variance.

    Starts: the pool of :func:`skgpsearch._starts.start_pool` is scored by one
    likelihood evaluation per start (on the screening subset when there is
    one), as it is and rescaled to its best overall amplitude; the nested
    start, the best warm and cold starts of both rankings, the cold starts at
    the top candidate periods and ``n_restarts`` random starts are optimised
    to convergence (:func:`skgpsearch._starts.select_raw_and_profiled`).
    From ``MIN_SUBSET_SCREEN`` rows on, with ``screen_starts`` (the default),
    this is successive halving:
    every start runs ``SCREEN_MAXITER`` L-BFGS iterations on a random
    ``SCREEN_SIZE``-row subset, and only the best -- with the runner-up when
    within ``REFINE_MARGIN`` nats -- are optimised on all the data.
    """

    full_effort_screens_from: ClassVar[int | None] = MIN_SUBSET_SCREEN
    full_effort_max_rows: ClassVar[int | None] = FULL_EFFORT_MAX_ROWS
    noise_bounds: tuple = (1e-6, 10.0)
    objective: str = "lml"
    prior: HyperPrior | None = None
    screen_starts: bool = True

    def default_noise(self) -> float:
        return 0.1 * self.summary.target_variance

    def noise_bounds_of(self, expr: Expr) -> tuple[float, float]:
        """The bounds of a structure's constant noise variance in its fits: ``noise_bounds``, the lower one raised
        to ``VARYING_NOISE_FLOOR`` of the target variance when the structure has a white-noise term of its own.

        (The cheap screens of :meth:`screen` and :meth:`prescreen` keep ``noise_bounds``: they only rank the
        candidates of a large level, and the benchmarks measured the floor so.)"""
        low, high = self.noise_bounds
        if any(leaf.kind.white_noise for leaf in expr.leaves):
            low = max(low, VARYING_NOISE_FLOOR * self.summary.target_variance)
        return low, high

    def duplicates_likelihood(self, expr: Expr) -> bool:
        """A plain white-noise term duplicates the Gaussian noise variance: ``S + WN`` (or ``RQ * (PER + WN)``,
        whose ``RQ * WN`` is ``WN``) is ``S`` with one more hyperparameter, at best the parent's likelihood and
        a worse criterion. On the internet series three of depth 3's 41 candidates were such, each fitted to
        the parent's BIC less one parameter's penalty."""
        return expr.adds_white_noise

    def start_hints(self, parent: CandidateRecord | None, X: np.ndarray, y: np.ndarray, period_columns: list[int],
                    change_columns: list[int] = ()) -> StartHints:
        """:class:`StartHints` from a fitted parent's record (``None``: the data itself)."""
        return regression_start_hints(parent, X, y, self.summary, period_columns, change_columns)

    def screen(self, expr: Expr, X: np.ndarray, y: np.ndarray, seed: int, noise_init: float | None = None,
               hints: StartHints | None = None) -> ScreenScore:
        """A cheap score of the candidate, to rank the siblings of a large level.

        The log likelihood on a random subset of ``SCREEN_CANDIDATE_ROWS`` rows
        (for the "screened" effort at most half the rows) after
        ``SCREEN_CANDIDATE_MAXITER`` L-BFGS iterations from the two best
        starts of the pool, on the criterion's scale (see
        :meth:`~skgpsearch._search._candidate_fitter.CandidateFitter.screen_score`);
        ``-inf`` when no start is positive definite.
        """
        rows = self._candidate_screen_rows(X.shape[0], seed)
        noise_init = self.default_noise() if noise_init is None else noise_init
        with single_threaded_blas():
            objective = RegressionObjective(to_kernel(expr, summary=self.summary), X[rows], y[rows], self.noise_bounds)
            thetas = self._pool_thetas(start_pool(expr, self.summary, hints), noise_init)
            _, values, thetas = profile_starts(objective, thetas)
            best = sorted(range(len(thetas)), key=lambda i: -values[i])[:2]
            _, value, _ = optimize_hyperparameters(
                objective, [thetas[i] for i in best if np.isfinite(values[i])], SCREEN_CANDIDATE_MAXITER, ftol=SCREEN_FTOL
            )
        return self.screen_score(value, expr, objective.n_dims, rows.size, X.shape[0], objective.n_evaluations)

    def prescreen(self, expr: Expr, X: np.ndarray, y: np.ndarray, seed: int, noise_init: float | None = None,
                  hints: StartHints | None = None) -> ScreenScore | None:
        """The cheapest score: the log likelihood of the best start next to the parent's optimum.

        The nested and warm starts of the pool (the parent's fitted values,
        the new terms taking shares of the residual variance), each at its
        best overall amplitude, on the rows of :meth:`screen`, without
        optimisation, on the criterion's scale; ``None`` for a candidate without
        such starts (no fitted parent).
        """
        pool = start_pool(expr, self.summary, hints, cold=False)
        if not pool:
            return None
        rows = self._candidate_screen_rows(X.shape[0], seed)
        noise_init = self.default_noise() if noise_init is None else noise_init
        with single_threaded_blas():
            objective = RegressionObjective(to_kernel(expr, summary=self.summary), X[rows], y[rows], self.noise_bounds)
            _, values, _ = profile_starts(objective, self._pool_thetas(pool, noise_init))
        return self.screen_score(max(values), expr, objective.n_dims, rows.size, X.shape[0],
                                 objective.n_evaluations)

    def _candidate_screen_rows(self, n_rows: int, seed: int) -> np.ndarray:
        """The rows of :meth:`screen` and :meth:`prescreen` (see ``SCREEN_CANDIDATE_ROWS``)."""
        size = SCREEN_CANDIDATE_ROWS if self.effort != "screened" else min(SCREEN_CANDIDATE_ROWS, n_rows // 2)
        return _screen_rows(n_rows, seed, size)

    def _pool_thetas(self, pool, noise_init):
        """Parameter vectors [kernel theta, log noise] of the pool's starts."""
        thetas = []
        for start in pool:
            noise = self.default_noise() if start.kind == "cold" else noise_init
            log_noise = math.log(noise * start.noise_factor)
            thetas.append(np.append(structure_theta(start.expr, self.summary), log_noise))
        return thetas

    def splits_starts(self, n_rows):
        """Full effort below ``MIN_SUBSET_SCREEN`` optimisation rows (or without ``screen_starts``): every
        start runs to convergence on its own."""
        if self.effort != "full" or self.start_race is not None:
            return False
        rows = n_rows if self.max_optimize_samples is None else min(n_rows, self.max_optimize_samples)
        return not self.screen_starts or rows < MIN_SUBSET_SCREEN

    # -- the steps of CandidateFitter ------------------------------------------------------
    def _n_parameters(self, expr):
        return expr.n_hyperparameters + 1

    def _own_hints(self, expr, X, y, hints):
        if hints is not None:
            return hints
        # a structure fitted on its own: periods from the data themselves
        columns = sorted({leaf.columns[0] for leaf in expr.leaves if leaf.kind.periodic})
        return self.start_hints(None, X, y, columns, sorted({node.column for node in expr.changes}))

    def _objectives(self, expr, kernel, X, y, rng):
        kind = "loo" if self.objective == "loo" else "lml"
        prior = None
        if self.objective == "map":
            prior = (self.prior or HyperPrior()).moments(expr, self.summary)
        objective = RegressionObjective(kernel, X, y, self.noise_bounds_of(expr), kind=kind, prior=prior)
        screen = None
        rows = None
        if self.effort == "screened":
            rows = series_blocks(X[:, 0], min(SCREEN_SIZE, X.shape[0] // 2))
        elif X.shape[0] >= MIN_SUBSET_SCREEN:
            rows = np.sort(rng.choice(X.shape[0], size=SCREEN_SIZE, replace=False))
        if rows is not None:
            screen = RegressionObjective(
                to_kernel(expr, summary=self.summary), X[rows], y[rows], self.noise_bounds_of(expr), kind=kind,
                prior=prior
            )
        return objective, screen

    def _starts(self, expr, kernel, objective, screen, hints, warm_state, rng):
        noise_init = self._noise_init(warm_state)
        pool = start_pool(expr, self.summary, hints)
        thetas = self._pool_thetas(pool, noise_init)
        values, profiled_values, profiled_thetas = profile_starts(screen or objective, thetas, self.deadline)
        if self.effort == "explore" and EXPLORE_STARTS == "few":
            return explore_starts(pool, thetas, values, profiled_thetas, profiled_values)
        starts = select_raw_and_profiled(pool, thetas, values, profiled_thetas, profiled_values)
        cold = np.append(to_kernel(expr.without_values(), summary=self.summary).theta, math.log(self.default_noise()))
        return starts + random_starts(kernel, cold, objective.bounds, self.n_restarts, rng)

    def _optimizer_options(self, screen):
        if self.effort == "explore":
            return dict(screen_maxiter=EXPLORE_SCREEN_MAXITER, n_refine=1, ftol=EXPLORE_FTOL)
        return dict(
            screen_objective=screen if self.screen_starts else None,
            screen_maxiter=SCREEN_MAXITER if self.screen_starts and screen is not None else None,
            n_refine=N_REFINE, refine_margin=REFINE_MARGIN, race=self.start_race,
        )

    def _noise_init(self, warm_state):
        """The noise variance a fit starts from: the warm state's, or the default without one."""
        return self.default_noise() if warm_state is None else warm_state

    def _warm_start(self, kernel, warm_state):
        return np.append(kernel.theta, math.log(self._noise_init(warm_state)))

    def _noise(self, fields):
        return fields["noise_variance"], self.noise_bounds

    def _posterior(self, kernel, theta, X, y, objective, X_opt):
        noise = math.exp(theta[-1])
        return GPPosterior(kernel, noise, X, y), {"noise_variance": noise, "warm_state": noise}

    def _model(self, structure, kernel, posterior, X, y, lml, k, inducing_inputs=None):
        return RegressionModel(structure, kernel, posterior, X, y, y_mean=self.y_mean, y_std=self.y_std,
                               summary=self.summary, noise_bounds=self.noise_bounds, inducing_inputs=inducing_inputs,
                               log_marginal_likelihood=lml, n_hyperparameters=k)


def regression_start_hints(parent: CandidateRecord | None, X: np.ndarray, y: np.ndarray, summary: DataSummary,
                           period_columns: list[int], change_columns: list[int] = ()) -> StartHints:
    """Start hints of a regression candidate: the parent's residual variance, candidate periods and change locations.

    Periods per column come from :func:`period_candidates` applied to the
    parent's residuals (``y`` itself without a parent) and to ``y``. The
    residuals are leave-one-out residuals: a parent that interpolates the data
    (noise at its lower bound) has training residuals of nearly zero, which
    would start every new term at a share of nothing and hide the cycle it
    missed from the periodogram. Change locations per column are where those
    residuals change most in level or scale (:func:`change_locations`).
    """
    residuals = y
    residual_variance = None
    if parent is not None and parent.ok:
        try:
            kernel = to_kernel(parent.structure, summary=summary)
            with single_threaded_blas():
                posterior = GPPosterior(kernel, parent.noise_variance, X, y)
                residuals = posterior.loo_residuals()
            residual_variance = max(float(np.mean(residuals**2)), parent.noise_variance)
        except NumericalError:
            residuals = y
    periods = {}
    for c in period_columns:
        low, high = default_hyperparameters("PER", (c,), summary)["period"][1]
        candidates = period_candidates(X[:, c], residuals, y, low, high, summary.nyquist_spacing((c,)))
        if candidates:
            periods[c] = candidates
    changes = {c: change_locations(X[:, c], residuals) for c in change_columns}
    return StartHints(periods=periods, residual_variance=residual_variance, changes=changes)


def series_blocks(x: np.ndarray, size: int) -> np.ndarray:
    """Sorted rows of ``size`` rows of a series: SCREEN_BLOCKS runs of consecutive rows in the order of ``x``,
    spread evenly over its range.

    The "screened" effort screens a series' starts on them. Each run keeps
    the series' own sampling density, so a cycle of a few spacings stays as
    visible as in all the rows, and together they span the whole range, where
    trends and long cycles show; a random subset thins the series everywhere.
    On the daily births series (893 rows) the search on runs ended 8 nats of
    BIC higher than on a random subset, and its forecast RMSE was 32.0
    against 34.3 (benchmarks/extrapolation.py's split).
    """
    n = x.shape[0]
    if size >= n:
        return np.arange(n)
    order = np.argsort(x, kind="stable")
    run = size // SCREEN_BLOCKS
    firsts = np.linspace(0, n - run, SCREEN_BLOCKS).round().astype(int)
    return np.sort(order[(firsts[:, np.newaxis] + np.arange(run)).ravel()])


def _screen_rows(n: int, seed: int, size: int = SCREEN_CANDIDATE_ROWS) -> np.ndarray:
    """The rows a candidate's screening scores are computed on: a random subset of ``size`` rows."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=min(n, size), replace=False))
