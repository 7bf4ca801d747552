"""What the search knows about one candidate: its record, its seed, and how a failed fit is recorded.

A candidate fitter (:mod:`skgpsearch._search._candidate_fitter`) turns a
structure into a :class:`CandidateRecord` -- fitted structure,
hyperparameters, scores, status -- never into a fitted model, so that records
are small to send back from worker processes.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import zlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .._engine._linalg import NumericalError
from ..criteria import SelectionCriterion
from ..grammar import Expr

__all__ = [
    "ScreenScore",
    "DEGENERATE",
    "FAILED",
    "OK",
    "SCREENED_OUT",
    "CandidateRecord",
    "NUMERICAL_FAILURES",
    "candidate_seed",
    "criterion_value",
    "run_candidate",
    "single_threaded_blas",
    "user_stacklevel",
]

#: Status of a candidate whose fit succeeded and whose criterion is finite.
OK = "ok"
#: Status of a candidate that a numerical failure (or a non-finite criterion) kept from a score.
FAILED = "failed"
#: Status of candidates that a cheap screen kept from a full fit (see the search's max_fits_per_depth).
SCREENED_OUT = "screened out"
#: Status of a classification candidate at a white-noise optimum (see skgpsearch._search._laplace_fitter).
DEGENERATE = "degenerate"

#: What a candidate's fit may raise and still be a failed candidate rather than an error:
#: numerical failures (a singular or non-finite matrix; an overflow, underflow to zero or
#: division by zero on data of extreme scale), never an exception raised by a criterion.
NUMERICAL_FAILURES = (ArithmeticError, np.linalg.LinAlgError)


class ScreenScore(NamedTuple):
    """A candidate's cheap score (greater is better) and what computing it cost."""

    score: float
    n_evaluations: int = 0
    evaluated_rows: int = 0


@dataclass
class CandidateRecord:
    """What the search knows about one candidate structure.

    Failed, degenerate and screened-out candidates carry ``criterion`` and
    ``log_marginal_likelihood`` of ``-inf`` so that ranking ignores them.

    Attributes
    ----------
    structure : Expr
        The fitted structure (base kernels carry their fitted values), or the
        candidate as proposed when it was not fitted.
    seed : int
        The candidate's own random seed (see :func:`candidate_seed`).
    status : {"ok", "failed", "degenerate", "screened out"}
    message : str
        Why it failed, was rejected or screened out.
    criterion, log_marginal_likelihood : float
        Criterion value and maximised log evidence (original target units).
    theta : ndarray or None
        All fitted parameters in the engine's layout.
    noise_variance : float or None
        Gaussian noise variance on the fitting scale (exact regression only).
    warm_state : object
        What a child's fit starts from besides the structure's values (the
        noise variance; the latent mean and likelihood parameters).
    n_hyperparameters : int or None
        Free parameters counted by the criteria.
    latent_start : ndarray or None
        Laplace engine: the Newton start that reproduces the scored mode.
    n_evaluations : int
        Likelihood evaluations the fit took (scoring starts, screening
        subsets and optimisation; a screened-out candidate's screening), and
        those of the later fits of a finalist that have no record of their
        own: its full-effort refit, its polish on all rows, its refit on the
        start of a series whose end the select stage forecasts. Summed over
        a search's records, every evaluation of the search.
    evaluated_rows : int
        The rows of those evaluations, summed: ``evaluated_rows /
        n_evaluations`` rows per evaluation.
    fit_time : float
        Seconds in the workers, those later fits included.
    depth, parent, parent_index
        Position in the search (set by the search loop).
    screen_score : float or None
        The cheap score of a screened-out candidate.
    diagnostics : tuple of str
        Degenerate features of the optimum (see :func:`skgpsearch._search._diagnostics.diagnose`).
    effort : {"full", "full, starts raced", "screened", "explore", "polish", "explore+polish", "full on a subset"}
        How hard its hyperparameters were optimised: today's start pool to
        convergence, the same with starts stopped by the explore stage's race
        (see ``CandidateFitter.start_race``), the same starts screened on runs
        of a series before the best are optimised on all rows, the explore
        stage's few starts and iterations, only from its own values (a
        structure fitted with full effort on fewer rows, refitted on more),
        the explore stage's starts and iterations with the best then
        optimised to convergence (the baselines; the regressor's on two or
        more columns), or the start pool to convergence on a random subset of
        the rows (a depth's best on a table of 2000 rows or more; a finalist
        is then polished on all rows, and its effort is "full").
    raced_from : tuple or None
        ``(structure, warm_state, hints)`` the fit began from, with ``seed``:
        kept where its start race stopped starts, so that the same fit can be
        made again with every start (see ``CandidateFitter.start_race``).
    predictive_score : float or None
        A finalist's leave-one-out log predictive density Σ_i log p(y_i | y_−i)
        at its fitted hyperparameters (set by the select stage; None otherwise).
    baseline : bool
        One of the model fitter's standard structures (one ARD kernel, the
        additive kernel), fitted after the search to compete as a finalist.
    """

    structure: Expr
    seed: int = 0
    status: str = OK
    message: str = ""
    criterion: float = -np.inf
    log_marginal_likelihood: float = -np.inf
    theta: np.ndarray | None = None
    noise_variance: float | None = None
    warm_state: Any = None
    n_hyperparameters: int | None = None
    latent_start: np.ndarray | None = None
    n_evaluations: int = 0
    evaluated_rows: int = 0
    fit_time: float = 0.0
    depth: int | None = None
    parent: str | None = None
    parent_index: int | None = None
    screen_score: float | None = None
    diagnostics: tuple = ()
    effort: str = "full"
    raced_from: tuple | None = None
    predictive_score: float | None = None
    baseline: bool = False

    @property
    def ok(self) -> bool:
        return self.status == OK

    def fail(self, status: str, message: str) -> None:
        """Mark the record unusable (its criterion becomes -inf)."""
        self.status, self.message, self.criterion = status, message, -np.inf


_BLAS_LOCK = threading.Lock()
_BLAS_STATE = {"controller": None, "limiter": None, "depth": 0}


#: The package's folder: warnings point at the first frame outside it (see user_stacklevel).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` of a ``warnings.warn`` in the calling function that points at the first frame outside
    this package: the user's ``fit`` (or scikit-learn's, for a fit inside ``cross_val_score``), however many of
    the package's calls lie between (a classifier's per-class searches, KernelSearchCV, the pipeline's stages)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


@contextmanager
def single_threaded_blas():
    """Limit BLAS to one thread while any candidate of this process is being fitted.

    Candidates are the unit of parallelism: several BLAS threads per worker
    oversubscribe the cores (OpenBLAS threads spinning on a busy core are
    orders of magnitude slower), and results would depend on n_jobs through
    the summation order of threaded BLAS. The limit is process-wide, so
    nested and concurrent (thread-backend) entries share one reference count.
    """
    with _BLAS_LOCK:
        if _BLAS_STATE["depth"] == 0:
            if _BLAS_STATE["controller"] is None:
                from threadpoolctl import ThreadpoolController

                _BLAS_STATE["controller"] = ThreadpoolController()
            _BLAS_STATE["limiter"] = _BLAS_STATE["controller"].limit(limits=1, user_api="blas")
        _BLAS_STATE["depth"] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_STATE["depth"] -= 1
            if _BLAS_STATE["depth"] == 0:
                _BLAS_STATE["limiter"].restore_original_limits()
                _BLAS_STATE["limiter"] = None


def criterion_value(criterion: SelectionCriterion, estimator: Any, X: np.ndarray, y: np.ndarray) -> float:
    """``float(criterion(estimator, X, y))``.

    A numerical failure (:class:`NumericalError`, ``LinAlgError``) fails the
    candidate; any other exception -- an error in a user's criterion, a bug in
    ours -- propagates with its own type and message, plus a note saying which
    criterion raised it: it would fail every candidate alike and hide behind
    "every candidate structure failed to fit".
    """
    try:
        return float(criterion(estimator, X, y))
    except (NumericalError, np.linalg.LinAlgError):
        raise
    except Exception as exc:
        try:
            exc._raised_by_criterion = True  # so that run_candidate does not take it for a numerical failure
        except AttributeError:  # an exception class with __slots__
            pass
        if hasattr(exc, "add_note"):  # Python >= 3.11
            exc.add_note(f"(raised by the criterion {criterion.display_name} while scoring a candidate structure)")
        raise


def run_candidate(fit: Callable[[], CandidateRecord], expr: Expr, seed: int, n_hyperparameters: int) -> CandidateRecord:
    """``fit()``'s record, or a failed record if it raised a numerical failure.

    A numerical failure of one candidate (``NUMERICAL_FAILURES``) is recorded
    (status, message) and never aborts the search; other exceptions propagate.
    """
    start = time.perf_counter()
    try:
        with single_threaded_blas():
            record = fit()
    except NUMERICAL_FAILURES as exc:
        if getattr(exc, "_raised_by_criterion", False):
            raise
        record = CandidateRecord(expr, status=FAILED, message=f"{type(exc).__name__}: {exc}",
                                 n_hyperparameters=n_hyperparameters)
    record.seed = seed
    record.fit_time = time.perf_counter() - start
    return record


def candidate_seed(base_seed: int, expr: Expr) -> int:
    """Seed of one candidate: a function of the search seed and the structure only."""
    return (base_seed + zlib.crc32(str(expr).encode())) % (2**32)
