"""The skeleton of fitting one candidate structure in a search worker; the engines' fitters fill in its steps."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from joblib import effective_n_jobs
from sklearn.gaussian_process.kernels import Kernel

from .._engine._linalg import NumericalError
from .._engine._optimizer import FTOL, StallRule, StartRace, deadline_passed, optimize_hyperparameters
from ..criteria import SelectionCriterion
from ..grammar import Expr
from ..kernels import DataSummary, from_kernel, to_kernel
from ._diagnostics import diagnose
from ._records import FAILED, CandidateRecord, ScreenScore, criterion_value, run_candidate
from ._starts import StartHints

__all__ = ["CandidateFitter", "EXPLORE_FTOL", "EXPLORE_MAXITER", "EXPLORE_SCREEN_MAXITER", "EXPLORE_SUBSET_FROM_ROWS",
           "EXPLORE_SUBSET_ROWS", "EXPLORE_THEN_POLISH", "RACED_FULL_EFFORT", "SCREENED_FROM_ROWS",
           "START_SHARDS_BELOW", "STOPPED_BY_BUDGET", "SUBSET_FULL_EFFORT", "full_effort_on_subset",
           "merge_start_shards", "start_shards", "unraced_fit_args", "with_deadline", "with_effort"]

#: The explore effort: every selected start runs EXPLORE_SCREEN_MAXITER L-BFGS iterations, and the best one
#: at most EXPLORE_MAXITER more to a loose tolerance (the finalists are then fitted with full effort).
EXPLORE_SCREEN_MAXITER = 10
EXPLORE_MAXITER = 50
EXPLORE_FTOL = 1e-6
#: From EXPLORE_SUBSET_FROM_ROWS rows on, the explore effort also optimises on a random subset of
#: EXPLORE_SUBSET_ROWS rows (as ABCD's first, partial fits do); the criterion is still computed on every row,
#: so candidates are compared on the same data. On benchmarks/scale.py's 4 columns x 10 000 rows (a 2000-row
#: search) depths 1-3 kept the same best structure and BIC for a quarter to a third of the rows x evaluations.
#: On fewer rows the savings are small and the greedy path moves: 250-row subsets on auto_mpg (353 rows) ended
#: 2-7 nats lower on 3 of 10 folds. From 600 rows (it was 1000), measured on tables the defaults never saw
#: (benchmarks/explore_subset.py): R's quakes (800 rows x 4, 5 folds) 40.9 -> 19.0 s a fold, SMSE 0.221 -> 0.219;
#: 720 rows x 8 of R's Cigar (3 folds) 74.5 -> 36.2 s, SMSE 0.0209 -> 0.0207; 999 rows x 9 of R's diamonds the
#: same structure and test scores in 131 s instead of 350 s.
EXPLORE_SUBSET_FROM_ROWS = 600
EXPLORE_SUBSET_ROWS = 400
#: The message of a record whose optimisation the time budget stopped.
STOPPED_BY_BUDGET = "optimisation stopped by the time budget"
#: The "screened" effort (a series' explore stage) applies from this many rows on; below, it is "full".
SCREENED_FROM_ROWS = 300
#: The effort of the baselines (the classifier's, and the regressor's on two or more columns with the exact
#: engine): the explore effort's few starts and short runs, then the best optimised to convergence, to the
#: full effort's tolerance, from where it ended (as "polish" does). The baselines have one or two
#: hyperparameters per column, and their full start pool, screened on a small subset of the rows, ranks
#: starts by that subset's optima (on breast_cancer it missed a basin that the two explore starts found).
#: On benchmarks/tabular.py's classification data this effort took 35-65 % of the baselines' evaluations and
#: predicted as well (benchmarks/results/classification_baseline_effort.txt); converging to the full effort's
#: tolerance instead of a 45 times tighter one (the Laplace engine's) took a further 10-25 % off a fold
#: (benchmarks/results/baseline_effort_round2.txt). Its starts and short runs stay on every row: run on 400
#: of 1000 rows (35 columns, 3 synthetic sets, 2026-12-05) they saved under 2 s of the finalists' 16-21 s, the
#: run to convergence being most of a baseline's cost, and one ARD baseline ended 4.8 nats lower. Since
#: 2026-12-05 the best start's run goes on to convergence in one L-BFGS-B run; it had stopped at the explore
#: tolerance and started again, without its curvature pairs and evaluating its start twice: on
#: benchmarks/tabular.py 4-13 % less time a fold, every error, SMSE and MSLL the same (to 3 decimals).
EXPLORE_THEN_POLISH = "explore+polish"
#: The effort of a record fitted with full effort whose start race (``CandidateFitter.start_race``) stopped one
#: or more of its starts: the same fit is made again with every start (:func:`unraced_fit_args`) where it matters,
#: for a level's best and for the finalists, as a screened record is fitted again with full effort.
RACED_FULL_EFFORT = "full, starts raced"
#: The effort of a record fitted with full effort on a random subset of ``full_effort_max_rows`` rows (its
#: criterion on every row): the explore stage's refits of each depth's best on large data. The finalists
#: stage polishes such a record on all rows (see full_effort_on_subset).
SUBSET_FULL_EFFORT = "full on a subset"


@dataclass
class CandidateFitter:
    """The skeleton of fitting one candidate structure; engines fill in the steps.

    :meth:`__call__` runs, for a structure: the rows to optimise on (all, or a
    random subset of ``max_optimize_samples``), the objective and its cheap
    screening copy (:meth:`_objectives`), the starts (:meth:`_starts`), the
    multi-start optimisation, the posterior on all the rows at the optimum
    (:meth:`_posterior`), and the criterion: from the evidence alone when the
    criterion allows it (``criterion.evidence_only``), else called with the
    candidate's fitted model (:meth:`_model`, wrapped by ``make_estimator``
    when it is given). A numerical failure anywhere fails this candidate only
    (:func:`run_candidate`).

    Subclasses are picklable dataclasses: they run in joblib workers.
    """

    summary: DataSummary
    criterion: SelectionCriterion
    n_restarts: int = 2
    maxiter: int = 200
    max_optimize_samples: int | None = None
    #: fitted model (see :meth:`_model`) -> what a criterion that reads a model is called with (None: the model).
    make_estimator: Callable[[Any], Any] | None = None
    #: Normalisation of the targets: the fitting scale is (y - y_mean) / y_std, and the log evidence of
    #: the original targets gets −n log y_std.
    y_std: float = 1.0
    y_mean: float = 0.0
    #: "full": the start pool's best starts and random restarts optimised to convergence; "explore": the best
    #: two or three starts, a few iterations each, the best to a loose tolerance (see skgpsearch._search._pipeline);
    #: "screened": the starts of "full", screened on a subset of the rows (runs of a series) before the best are
    #: optimised on all of them, as "full" does from more rows on (the engine's fitter says how; a fitter without
    #: screening treats it as "full"); "polish": the structure's own values only (and the warm state), optimised to
    #: convergence -- a structure already fitted with full effort on a sample, refitted on more rows;
    #: "explore+polish": the starts and short runs of "explore", the best then run on to convergence.
    effort: str = "full"
    #: From how many rows on the "full" effort screens the starts on a subset of the rows (None: a fitter without
    #: screening, for which "screened" is "full").
    full_effort_screens_from: ClassVar[int | None] = None
    #: From twice this many rows on, a search's full-effort fits optimise on a random subset of this many rows
    #: and the finalists are then polished on all of them (see full_effort_on_subset; None: always on all rows).
    full_effort_max_rows: ClassVar[int | None] = None
    #: :meth:`prescreen` ranks a large level's candidates as well as :meth:`screen` does: a level whose every
    #: candidate it scores is cut by it alone (see ``StructureSearch``).
    prescreen_decides: ClassVar[bool] = False
    #: When the "explore+polish" effort's run to convergence stops gaining (None: at the optimiser's tolerance).
    polish_stall: ClassVar[StallRule | None] = None
    #: Wall-clock time (``time.time()``) at which the optimisation stops where it is (None: no deadline): a
    #: time budget's bound on one fit (see :func:`~skgpsearch._engine._optimizer.optimize_hyperparameters`).
    deadline: float | None = None
    #: ``(index, count)``: this fit optimises only the starts ``index, index + count, ...`` of its starts, and
    #: :func:`merge_start_shards` makes one record of the ``count`` shards' (None: every start). The pipeline
    #: spreads a long fit over idle workers so; only where the starts are optimised independently of each
    #: other (:meth:`splits_starts`), so that the merged record is the unsplit fit's.
    start_shard: tuple[int, int] | None = None
    #: Where every start runs to convergence, each start after the first stops once it trails the best start
    #: before it so (None: every start to convergence; see the search's ``SearchSettings.start_race``). Its
    #: starts then depend on each other: such a fitter's starts are never split over workers.
    start_race: StartRace | None = None

    # -- what the search loop calls besides __call__ -------------------------------------------
    def start_hints(self, parent: CandidateRecord | None, X: np.ndarray, y: np.ndarray,
                    period_columns: list[int], change_columns: list[int]) -> StartHints:
        """What a fitted parent (or, without one, the data) tells its children's starts."""
        raise NotImplementedError

    def screen(self, expr: Expr, X: np.ndarray, y: np.ndarray, seed: int, warm_state: Any = None,
               hints: StartHints | None = None) -> ScreenScore:
        """A cheap score of the candidate, to rank the siblings of a large level (greater is better)."""
        raise NotImplementedError

    def prescreen(self, expr: Expr, X: np.ndarray, y: np.ndarray, seed: int, warm_state: Any = None,
                  hints: StartHints | None = None) -> ScreenScore | None:
        """A cheaper score than :meth:`screen` (no optimisation), to cut very large levels; None: not scored."""
        return None

    def screen_score(self, log_evidence: float, expr: Expr, n_parameters: int, n_scored: int, n_rows: int,
                     n_evaluations: int) -> ScreenScore:
        """A screening score on the scale of the search's criterion, from the log evidence of ``n_scored`` rows.

        The log evidence is scaled to the ``n_rows`` rows the criterion is computed on (``n_rows / n_scored``
        times), and the criterion's penalty is that of ``n_rows`` rows (BIC's for a criterion that needs a
        fitted model); ``n_evaluations`` evaluations of ``n_scored`` rows each are its cost. The scale matters:
        a log evidence grows with the rows, a penalty with their log, so the subset's own BIC (minus
        ½ k log 250) weighs a hyperparameter 2.3 times (661 rows) to 3.2 times (1000 rows) as heavily against
        the fit as the criterion on all the rows does, and ranked candidates with more hyperparameters, the
        change operators above all, too low (benchmarks/results/screen_ranks.txt).
        """
        estimate = log_evidence * n_rows / n_scored
        if self.criterion.evidence_only:
            score = self.criterion.from_evidence(estimate, n_parameters, n_rows, expr)
        else:
            score = estimate - 0.5 * n_parameters * math.log(n_rows)
        return ScreenScore(float(score), n_evaluations, n_evaluations * n_scored)

    def duplicates_likelihood(self, expr: Expr) -> bool:
        """Whether ``expr`` adds to a simpler structure only what the likelihood already has (see
        :attr:`~skgpsearch.grammar.Expr.adds_white_noise`): the search does not fit such a child."""
        return False

    def splits_starts(self, n_rows: int) -> bool:
        """Whether a fit on ``n_rows`` rows optimises each of its starts independently of the others (no
        screening that ranks them against each other), so that ``start_shard`` splits it exactly."""
        return False

    # -- the steps an engine provides ----------------------------------------------------
    def _n_parameters(self, expr: Expr) -> int:
        """Free parameters of a structure (for a failed record)."""
        raise NotImplementedError

    def _subset(self, y: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """Sorted rows of a random subset of ``size`` rows."""
        return np.sort(rng.choice(y.shape[0], size=min(size, y.shape[0]), replace=False))

    def _optimization_rows(self, y: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
        """The rows a fit optimises on: a random subset of ``max_optimize_samples`` rows (``rng``'s first
        draw, so that a fit and a score from the same seed see the same rows), or None for all of them."""
        if self.max_optimize_samples is not None and y.shape[0] > self.max_optimize_samples:
            return self._subset(y, self.max_optimize_samples, rng)
        return None

    def _own_hints(self, expr: Expr, X: np.ndarray, y: np.ndarray, hints):
        """Start hints of a structure fitted without a search's hints (``hints`` is None)."""
        return hints

    def _objectives(self, expr, kernel, X, y, rng):
        """(objective on the optimisation rows, its screening copy on a subset or None)."""
        raise NotImplementedError

    def _starts(self, expr, kernel, objective, screen, hints, warm_state, rng) -> list:
        """Parameter vectors the optimiser starts from."""
        raise NotImplementedError

    def _optimizer_options(self, screen) -> dict:
        raise NotImplementedError

    def _converged_ftol(self, screen) -> float:
        """L-BFGS-B's tolerance of a run to convergence ("polish", "explore+polish"): the full effort's (the
        Laplace engine's is looser: its evidence is an approximation)."""
        return self._optimizer_options(screen).get("ftol", FTOL)

    def _warm_start(self, kernel: Kernel, warm_state: Any) -> np.ndarray:
        """The parameter vector of the structure's own values (``kernel.theta``) and the warm state."""
        raise NotImplementedError

    def _posterior(self, kernel, theta, X, y, objective, X_opt):
        """The posterior on all the rows at ``theta`` (kernel already set), and the record's engine fields.

        ``objective`` was optimised on the rows ``X_opt`` (``X`` itself, or a subset of it)."""
        raise NotImplementedError

    def _model(self, structure: Expr, kernel: Kernel, posterior: Any, X: np.ndarray, y: np.ndarray, lml: float,
               k: int) -> Any:
        """The fitted model of a candidate (see :mod:`skgpsearch._search._models`), for criteria that read one."""
        raise NotImplementedError

    def _criterion_data(self, view: Any, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (X, y) a criterion that reads a model scores the candidate's model on."""
        return view.X_train_, view.y_train_

    def _noise(self, fields: dict) -> tuple[float, tuple[float, float]] | None:
        """The fitted Gaussian noise variance and its bounds (from the posterior's fields), or None."""
        return None

    @property
    def fits_binary_labels(self) -> bool:
        """Whether the targets are class labels of a latent function (a binary likelihood)."""
        return False

    def _check_fitted(self, record: CandidateRecord, X: np.ndarray) -> None:
        """Reject a fitted record the engine cannot use (see :meth:`CandidateRecord.fail`)."""

    # -- the skeleton ---------------------------------------------------------------------
    def __call__(self, expr: Expr, X: np.ndarray, y: np.ndarray, seed: int, warm_state: Any = None,
                 hints: StartHints | None = None) -> CandidateRecord | None:
        """The candidate's record; None for a ``start_shard`` left without starts."""
        try:
            return run_candidate(lambda: self._fit(expr, X, y, seed, warm_state, hints), expr, seed,
                                 self._n_parameters(expr))
        except _EmptyShard:
            return None

    def _fit(self, expr, X, y, seed, warm_state, hints):
        rng = np.random.default_rng(seed)
        n = X.shape[0]
        began_from = (expr, warm_state, hints)
        kernel = to_kernel(expr, summary=self.summary)
        X_opt, y_opt = X, y
        rows = self._optimization_rows(y, rng)
        if rows is not None:
            X_opt, y_opt = X[rows], y[rows]
        objective, screen = self._objectives(expr, kernel, X_opt, y_opt, rng)
        if self.effort == "polish":
            starts, options = [self._warm_start(kernel, warm_state)], {"ftol": self._converged_ftol(screen)}
        else:
            quick = dataclasses.replace(self, effort="explore") if self.effort == EXPLORE_THEN_POLISH else self
            hints = self._own_hints(expr, X, y, hints)
            starts = quick._starts(expr, kernel, objective, screen, hints, warm_state, rng)
            options = quick._optimizer_options(screen)
        if self.start_shard is not None:
            starts = self._shard_of(starts, options)
        maxiter = EXPLORE_MAXITER if self.effort == "explore" else self.maxiter
        if self.effort == EXPLORE_THEN_POLISH:
            # the best start's run goes on to the full effort's tolerance
            options.update(ftol=self._converged_ftol(screen), stall=self.polish_stall)
        race_stops = options["race_stops"] = [] if options.get("race") is not None else None
        theta, _, failures = optimize_hyperparameters(objective, starts, maxiter, deadline=self.deadline, **options)
        if theta is None:
            raise NumericalError("; ".join(dict.fromkeys(failures)) or "no start could be optimised")
        # (a run that converged just before the deadline is counted as stopped too: a rare, harmless mislabel)
        stopped_by_deadline = deadline_passed(self.deadline)
        kernel.theta = theta[: kernel.n_dims]
        posterior, fields = self._posterior(kernel, theta, X, y, objective, X_opt)
        # log p(y) of the original targets: the normalisation's Jacobian is -n log(y_std)
        lml = posterior.log_marginal_likelihood - n * math.log(self.y_std)
        fitted = from_kernel(kernel, n_features=X.shape[1])
        k = theta.size
        if self.criterion.evidence_only:
            score = self.criterion.from_evidence(lml, k, n, fitted)
        else:
            view = self._model(fitted, kernel, posterior, X, y, lml, k)
            if self.make_estimator is not None:
                view = self.make_estimator(view)
            score = criterion_value(self.criterion, view, *self._criterion_data(view, X, y))
        n_screen = 0 if screen is None else screen.n_evaluations
        record = CandidateRecord(
            fitted, theta=theta, log_marginal_likelihood=lml, criterion=score, n_hyperparameters=k,
            n_evaluations=objective.n_evaluations + n_screen,
            evaluated_rows=objective.n_evaluations * y_opt.shape[0] + n_screen * (0 if screen is None else
                                                                                   screen.y.shape[0]),
            effort=RACED_FULL_EFFORT if race_stops else self.effort,
            raced_from=began_from if race_stops else None,
            **fields,
        )
        if stopped_by_deadline:
            record.message = STOPPED_BY_BUDGET
        if not np.isfinite(score):
            record.fail(FAILED, f"criterion value {score}")
        else:
            record.diagnostics = diagnose(kernel, X, self._noise(fields), binary_labels=self.fits_binary_labels)
            self._check_fitted(record, X)
        return record

    def _shard_of(self, starts, options):
        """This shard's starts: every ``count``-th from ``index``. Starts that a screen ranks against each
        other cannot be split: the first shard then takes them all (a misuse of ``start_shard``, which
        :meth:`splits_starts` prevents), the others none."""
        index, count = self.start_shard
        screened = options.get("screen_objective") is not None or options.get("screen_maxiter") is not None
        if screened and len(starts) > options.get("n_refine", 1):
            starts = starts if index == 0 else []
        else:
            starts = starts[index::count]
        if not starts and index:
            raise _EmptyShard
        return starts


class _EmptyShard(Exception):
    """A start shard without starts (see ``CandidateFitter.start_shard``)."""


#: Fewer full-effort fits than this many per worker are split by their starts over the workers
#: (:func:`start_shards`): a series' two finalist refits took 37 and 22 s on internet (909 rows), one worker
#: idle for 15 s; split, 31 s. The search selects the same: the starts run independently, the best is kept.
START_SHARDS_BELOW = 2


def start_shards(fitter: Any, n_fits: int, n_rows: int, n_jobs: int | None) -> list:
    """The fitters that make each of ``n_fits`` fits on ``n_rows`` rows run on ``n_jobs`` workers: one start
    shard per worker (``CandidateFitter.start_shard``, merged by :func:`merge_start_shards`) when the fits are
    fewer than ``START_SHARDS_BELOW`` per worker and the fitter's starts run independently
    (:meth:`CandidateFitter.splits_starts`), else ``[fitter]``."""
    workers = effective_n_jobs(n_jobs)
    if (workers < 2 or not n_fits or n_fits >= START_SHARDS_BELOW * workers
            or not isinstance(fitter, CandidateFitter) or not fitter.splits_starts(n_rows)):
        return [fitter]
    return [dataclasses.replace(fitter, start_shard=(i, workers)) for i in range(workers)]


def merge_start_shards(records: list[CandidateRecord | None], n_shards: int) -> list[CandidateRecord | None]:
    """One record per fit from the records of its start shards (see ``CandidateFitter.start_shard``), which
    come as consecutive runs of ``n_shards`` in shard order: the shard whose optimum has the highest log
    evidence (the unsplit fit keeps its best start too), with the evaluations and time of every shard. An empty
    shard's record is None; the first shard always has one (None only where the time budget left it out)."""
    return [_merged(records[i: i + n_shards]) for i in range(0, len(records), n_shards)]


def _merged(records):
    fitted = [record for record in records if record is not None]
    if len(records) == 1 or not fitted:
        return records[0]
    best = max(fitted, key=lambda record: record.log_marginal_likelihood)
    return dataclasses.replace(best, n_evaluations=sum(r.n_evaluations for r in fitted),
                               evaluated_rows=sum(r.evaluated_rows for r in fitted),
                               fit_time=sum(r.fit_time for r in fitted))


def unraced_fit_args(record: CandidateRecord, structure: Expr, seed: int, warm_state: Any,
                     hints: StartHints | None = None) -> tuple:
    """``(structure, seed, warm_state, hints)`` of a full-effort refit of ``record``: those given, or for a
    record whose starts were raced (RACED_FULL_EFFORT) those its fit began from, so that the refit is that very
    fit with every start run to its end."""
    if record.raced_from is None:
        return structure, seed, warm_state, hints
    began, warm, began_hints = record.raced_from
    return began, record.seed, warm, began_hints


def with_deadline(fitter: CandidateFitter, deadline: float) -> CandidateFitter:
    """``fitter`` with its optimisations stopped at ``deadline``, a ``time.perf_counter()`` time of this
    process (converted to the wall-clock time that worker processes compare against). Any other fitter (a
    search's fitter may be any callable) is returned as it is."""
    if not isinstance(fitter, CandidateFitter):
        return fitter
    return dataclasses.replace(fitter, deadline=time.time() + (deadline - time.perf_counter()))


def full_effort_on_subset(fitter: CandidateFitter, n_rows: int) -> CandidateFitter | None:
    """``fitter`` (full effort) optimising on a random subset of its ``full_effort_max_rows`` rows, for data of
    at least twice as many rows (``n_rows``); None where full effort stays on all rows (fewer rows, or a fitter
    without the cap).

    The start pool to convergence is what a full-effort fit costs: on 3000 rows x 6 columns (R's diamonds) an
    evaluation of the exact GP took 0.55 s on one core, and the explore stage's refits of each depth's two best
    and the finalists' fits took most of a 625-s search. A subset of 1000 rows finds the basin; a polish on
    all rows from there (the "polish" effort, as the sample path's successive halving does) reaches its
    optimum: 234 s, the same held-out error; on 2500 rows 2-2.5x faster too, with an SMSE 1 % better on
    diamonds and, by another search path, 6 % worse on R's Computers (``benchmarks/large_tables.py``). On
    1100-1500 rows it saved nothing (every finalist then needs its polish on all rows), hence twice the
    subset's rows at least."""
    cap = getattr(fitter, "full_effort_max_rows", None)
    if cap is None or n_rows < 2 * cap:
        return None
    rows = cap if fitter.max_optimize_samples is None else min(cap, fitter.max_optimize_samples)
    return dataclasses.replace(fitter, effort="full", max_optimize_samples=rows)


def with_effort(fitter: CandidateFitter, effort: str, n_rows: int) -> CandidateFitter:
    """``fitter`` as the explore stage uses it on ``n_rows`` rows: unchanged for "full", and for "screened" on
    fewer than SCREENED_FROM_ROWS rows; for "explore", its few starts and iterations, from
    EXPLORE_SUBSET_FROM_ROWS rows on optimised on at most EXPLORE_SUBSET_ROWS of them."""
    if effort == "full":
        return fitter
    if effort == "screened":
        # only where it differs from "full": the full effort screens large data's starts already
        screens_from = fitter.full_effort_screens_from
        if screens_from is None or not SCREENED_FROM_ROWS <= n_rows < screens_from:
            return fitter
        return dataclasses.replace(fitter, effort=effort)
    rows = fitter.max_optimize_samples
    if n_rows >= EXPLORE_SUBSET_FROM_ROWS:
        rows = EXPLORE_SUBSET_ROWS if rows is None else min(rows, EXPLORE_SUBSET_ROWS)
    return dataclasses.replace(fitter, effort=effort, max_optimize_samples=rows)
