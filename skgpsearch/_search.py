"""Greedy and beam search over a kernel grammar: cache, warm starts, joblib parallelism.

Workers receive a structure (carrying its parent's fitted values for the
warm start) and return a small record -- the fitted structure, hyperparameters,
scores, timing, status -- never a fitted model.
"""

from __future__ import annotations

import math
import threading
import time
import warnings
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils.parallel import Parallel, delayed

from ._engine._linalg import NumericalError
from ._engine._periodogram import period_candidates
from ._engine._regression import (
    SCREEN_FTOL,
    GPPosterior,
    RegressionObjective,
    optimize_hyperparameters,
    random_starts,
)
from ._starts import StartHints, change_locations, profile_starts, select_raw_and_profiled, start_pool
from .criteria import HyperPrior
from .kernels import default_hyperparameters, from_kernel, to_kernel

__all__ = ["RegressionCandidateFitter", "SearchResult", "run_search"]

#: Status of candidates that a cheap screen kept from a full fit (see run_search's max_fits_per_depth).
SCREENED_OUT = "screened out"
#: Largest depth limit of a search without max_depth (see automatic_depth).
MAX_SEARCH_DEPTH = 10
#: Rows and L-BFGS iterations of the cheap screen of candidates.
SCREEN_CANDIDATE_ROWS = 250
SCREEN_CANDIDATE_MAXITER = 10
#: Successive halving of a candidate's starts from MIN_SUBSET_SCREEN rows on: SCREEN_MAXITER
#: iterations each on a random SCREEN_SIZE-row subset. Below, every selected start is optimised
#: to convergence: measured by benchmarks/fit_quality.py, halving on all the data for 15
#: iterations lost > 0.1 nats on 19 of 88 pairs (up to 187), and a random half of small data
#: halves the sampling density, which can hide a cycle near the Nyquist period.
SCREEN_SIZE = 400
MIN_SUBSET_SCREEN = 1000
SCREEN_MAXITER = 30
#: Starts optimised on all the data after screening: the best, and the runner-up when its
#: screened value is within REFINE_MARGIN nats (validated in benchmarks/fit_quality.py).
N_REFINE = 2
REFINE_MARGIN = 2.0

_BLAS_LOCK = threading.Lock()
_BLAS_STATE = {"controller": None, "limiter": None, "depth": 0}


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


def criterion_value(criterion, estimator, X, y):
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
            exc._raised_by_criterion = True  # so that candidate_record does not take it for a numerical failure
        except AttributeError:  # an exception class with __slots__
            pass
        if hasattr(exc, "add_note"):  # Python >= 3.11
            name = getattr(criterion, "name", None) or getattr(criterion, "__name__", None) or type(criterion).__name__
            exc.add_note(f"(raised by the criterion {name} while scoring a candidate structure)")
        raise


#: What a candidate's fit may raise and still be a failed candidate rather than an error:
#: numerical failures (a singular or non-finite matrix; an overflow, underflow to zero or
#: division by zero on data of extreme scale), never an exception raised by a criterion.
NUMERICAL_FAILURES = (ArithmeticError, np.linalg.LinAlgError)


def candidate_record(fit, expr, seed, n_hyperparameters):
    """The record of one candidate: ``fit()``'s fields, or a failed record if it raised numerically.

    A numerical failure of one candidate (``NUMERICAL_FAILURES``) is recorded
    (status, message) and never aborts the search; other exceptions propagate.
    Failed records carry -inf criterion and likelihood so that ranking ignores
    them.
    """
    start = time.perf_counter()
    record = {"structure": expr, "seed": seed, "status": "ok", "message": ""}
    try:
        with single_threaded_blas():
            record.update(fit())
    except NUMERICAL_FAILURES as exc:
        if getattr(exc, "_raised_by_criterion", False):
            raise
        record.update(status="failed", message=f"{type(exc).__name__}: {exc}")
    if record["status"] != "ok":
        record["criterion"] = -np.inf
        for key, default in (
            ("log_marginal_likelihood", -np.inf),
            ("theta", None),
            ("noise_variance", None),
            ("warm_state", None),
            ("n_hyperparameters", n_hyperparameters),
        ):
            record.setdefault(key, default)
    record["fit_time"] = time.perf_counter() - start
    return record


def candidate_seed(base_seed, expr):
    """Seed of one candidate: a function of the search seed and the structure only."""
    return (base_seed + zlib.crc32(str(expr).encode())) % (2**32)


@dataclass
class RegressionCandidateFitter:
    """Fits one candidate structure for exact GP regression (picklable, runs in workers).

    ``y`` passed to :meth:`__call__` is on the fitting scale (normalised when
    the estimator normalises); ``y_mean``/``y_std`` map it back for criteria
    and for the log marginal likelihood of the original targets.

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

    summary: object
    criterion: object
    noise_bounds: tuple
    n_restarts: int = 2
    maxiter: int = 200
    max_optimize_samples: int | None = None
    y_mean: float = 0.0
    y_std: float = 1.0
    make_estimator: object = None
    objective: str = "lml"
    prior: object = None
    screen_starts: bool = True

    def default_noise(self):
        return 0.1 * self.summary.target_variance

    def __call__(self, expr, X, y, seed, noise_init=None, hints=None):
        return candidate_record(
            lambda: self._fit(expr, X, y, seed, noise_init, hints), expr, seed, expr.n_hyperparameters + 1
        )

    def start_hints(self, parent, X, y, period_columns, change_columns=()):
        """:class:`StartHints` from a fitted parent's record (``None``: the data itself)."""
        return regression_start_hints(parent, X, y, self.summary, period_columns, change_columns)

    def screen(self, expr, X, y, seed, noise_init=None, hints=None):
        """A cheap score of the candidate, to rank the siblings of a large level.

        The log likelihood on a random subset of ``SCREEN_CANDIDATE_ROWS`` rows
        after ``SCREEN_CANDIDATE_MAXITER`` L-BFGS iterations from the two best
        starts of the pool, minus the BIC penalty ½ k log(rows); ``-inf`` when
        no start is positive definite.
        """
        rng = np.random.default_rng(seed)
        n = X.shape[0]
        rows = np.sort(rng.choice(n, size=min(n, SCREEN_CANDIDATE_ROWS), replace=False))
        noise_init = self.default_noise() if noise_init is None else noise_init
        with single_threaded_blas():
            objective = RegressionObjective(to_kernel(expr, summary=self.summary), X[rows], y[rows], self.noise_bounds)
            thetas = self._pool_thetas(start_pool(expr, self.summary, hints), noise_init)
            _, values, thetas = profile_starts(objective, thetas)
            best = sorted(range(len(thetas)), key=lambda i: -values[i])[:2]
            _, value, _ = optimize_hyperparameters(
                objective, [thetas[i] for i in best if np.isfinite(values[i])], SCREEN_CANDIDATE_MAXITER, ftol=SCREEN_FTOL
            )
        return float(value - 0.5 * objective.n_dims * math.log(rows.size))

    def _pool_thetas(self, pool, noise_init):
        """Parameter vectors [kernel theta, log noise] of the pool's starts."""
        thetas = []
        for start in pool:
            noise = self.default_noise() if start.kind == "cold" else noise_init
            log_noise = math.log(noise * start.noise_factor)
            thetas.append(np.append(to_kernel(start.expr, summary=self.summary).theta, log_noise))
        return thetas

    def _fit(self, expr, X, y, seed, noise_init, hints):
        rng = np.random.default_rng(seed)
        n = X.shape[0]
        kernel = to_kernel(expr, summary=self.summary)
        X_opt, y_opt = X, y
        if self.max_optimize_samples is not None and n > self.max_optimize_samples:
            rows = np.sort(rng.choice(n, size=self.max_optimize_samples, replace=False))
            X_opt, y_opt = X[rows], y[rows]
        if hints is None:
            # a structure fitted on its own: periods from the data themselves
            columns = sorted({leaf.columns[0] for leaf in expr.leaves if leaf.kind.periodic})
            hints = self.start_hints(None, X, y, columns, sorted({node.column for node in expr.changes}))
        noise_init = self.default_noise() if noise_init is None else noise_init
        kind = "loo" if self.objective == "loo" else "lml"
        prior = None
        if self.objective == "map":
            prior = (self.prior or HyperPrior()).moments(expr, self.summary)
        objective = RegressionObjective(kernel, X_opt, y_opt, self.noise_bounds, kind=kind, prior=prior)
        screen = None
        n_opt = X_opt.shape[0]
        if n_opt >= MIN_SUBSET_SCREEN:
            rows = np.sort(rng.choice(n_opt, size=SCREEN_SIZE, replace=False))
            screen = RegressionObjective(
                to_kernel(expr, summary=self.summary), X_opt[rows], y_opt[rows], self.noise_bounds, kind=kind, prior=prior
            )
        pool = start_pool(expr, self.summary, hints)
        thetas = self._pool_thetas(pool, noise_init)
        values, profiled_values, profiled_thetas = profile_starts(screen or objective, thetas)
        starts = select_raw_and_profiled(pool, thetas, values, profiled_thetas, profiled_values)
        cold = np.append(to_kernel(expr.without_values(), summary=self.summary).theta, math.log(self.default_noise()))
        starts += random_starts(kernel, cold, objective.bounds, self.n_restarts, rng)
        theta, _, failures = optimize_hyperparameters(
            objective, starts, self.maxiter,
            screen_objective=screen if self.screen_starts else None,
            screen_maxiter=SCREEN_MAXITER if self.screen_starts and screen is not None else None,
            n_refine=N_REFINE, refine_margin=REFINE_MARGIN,
        )
        if theta is None:
            raise NumericalError("; ".join(dict.fromkeys(failures)) or "no start could be optimised")
        kernel.theta = theta[:-1]
        noise = math.exp(theta[-1])
        posterior = GPPosterior(kernel, noise, X, y)
        # log p(y) of the original targets: the normalisation's Jacobian is -n log(y_std)
        lml = posterior.log_marginal_likelihood - n * math.log(self.y_std)
        fitted = from_kernel(kernel, n_features=X.shape[1])
        k = objective.n_dims
        if getattr(self.criterion, "evidence_only", False):
            score = self.criterion.from_evidence(lml, k, n, fitted)
        else:
            estimator = self.make_estimator(fitted, kernel, noise, posterior, lml, k)
            # the training arrays as the user gave them (the same values in every process)
            score = criterion_value(self.criterion, estimator, estimator.X_train_, estimator.y_train_)
        record = {
            "structure": fitted,
            "theta": theta,
            "noise_variance": noise,
            "warm_state": noise,
            "log_marginal_likelihood": lml,
            "criterion": score,
            "n_hyperparameters": k,
            "n_evaluations": objective.n_evaluations + (0 if screen is None else screen.n_evaluations),
        }
        if not np.isfinite(score):
            record.update(status="failed", message=f"criterion value {score}", criterion=-np.inf)
        return record


def regression_start_hints(parent, X, y, summary, period_columns, change_columns=()):
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
    if parent is not None and parent["status"] == "ok":
        try:
            kernel = to_kernel(parent["structure"], summary=summary)
            with single_threaded_blas():
                posterior = GPPosterior(kernel, parent["noise_variance"], X, y)
                residuals = posterior.loo_residuals()
            residual_variance = max(float(np.mean(residuals**2)), parent["noise_variance"])
        except NumericalError:
            residuals = y
    periods = {}
    for c in period_columns:
        low, high = default_hyperparameters("PER", (c,), summary)["period"][1]
        candidates = period_candidates(X[:, c], residuals, y, low, high, summary.typical_gap((c,)))
        if candidates:
            periods[c] = candidates
    changes = {c: change_locations(X[:, c], residuals) for c in change_columns}
    return StartHints(periods=periods, residual_variance=residual_variance, changes=changes)


@dataclass
class SearchResult:
    """What a search found: one record per evaluated candidate, and the best."""

    records: list = field(default_factory=list)
    best_index: int | None = None
    stop_reason: str = ""
    levels: list = field(default_factory=list)

    @property
    def best(self):
        return None if self.best_index is None else self.records[self.best_index]


#: Averaged models below this fraction of the best one's weight are dropped.
MIN_AVERAGING_WEIGHT = 1e-6


def averaged_records(result, k):
    """The records of the ``k`` best fitted structures (the chosen one first) and their weights.

    Weights are exp(criterion − best criterion), normalised; structures below
    ``MIN_AVERAGING_WEIGHT`` of the best's weight are left out. ``k`` of
    ``None`` or 1 gives the chosen structure alone.
    """
    best = result.best
    chosen = [best]
    if k is not None and k > 1:
        ranked = sorted(
            (r for r in result.records if r["status"] == "ok" and np.isfinite(r["criterion"]) and r is not best),
            key=lambda r: -r["criterion"],
        )
        chosen += [r for r in ranked[: k - 1] if r["criterion"] - best["criterion"] > math.log(MIN_AVERAGING_WEIGHT)]
    scores = np.array([r["criterion"] for r in chosen], dtype=float)
    weights = np.exp(scores - scores.max())
    return chosen, weights / weights.sum()


def automatic_depth(n_features):
    """Depth limit of a search without ``max_depth``: 3 for one column, one more per further column, at most 10.

    Each level adds one base kernel, so a depth-d search uses at most d
    columns; on one column, deeper greedy searches (measured on the
    extrapolation series) keep improving BIC slowly at 5-10x the time.
    """
    return min(MAX_SEARCH_DEPTH, 2 + n_features)


def run_search(
    fitter,
    X,
    y,
    grammar,
    *,
    max_depth,
    beam_width=1,
    n_jobs=None,
    base_seed=0,
    verbose=0,
    max_candidates=None,
    time_budget=None,
    criterion_name="criterion",
    prefer="processes",
    feature_names=None,
    max_fits_per_depth=None,
    extra_initial=(),
):
    """Greedy (beam_width=1) or beam search; returns a :class:`SearchResult`.

    Level 1 fits the grammar's initial structures; each further level fits the
    children of the ``beam_width`` best structures of the previous level that
    were not fitted before (canonical structures are cached). The search stops
    at ``max_depth`` (``None``: :func:`automatic_depth`), when a level does not improve
    on the best criterion, or when the candidate or time budget runs out (it
    then keeps what it found). A KeyboardInterrupt also stops it with what was
    found so far. ``feature_names`` only changes how ``verbose`` prints structures.
    ``extra_initial`` structures join the first level and, like the grammar's
    baselines, are always fitted (e.g. the classifier's constant model).

    When a level has more than ``max_fits_per_depth`` candidates and the
    fitter can ``screen``, every candidate is first scored cheaply (a short
    fit on a subset, see :meth:`RegressionCandidateFitter.screen`) and only the
    ``max_fits_per_depth`` most promising are fitted; the others are recorded
    with status ``"screened out"``.
    """
    n_features = X.shape[1]
    result = SearchResult()
    seen = {}
    start = time.perf_counter()
    period_columns = sorted({b.columns[0] for b in grammar.base_set(n_features) if b.kind.periodic})
    change_columns = getattr(grammar, "change_columns", lambda n: [])(n_features)
    initial = list(grammar.initial(n_features))
    initial += [expr for expr in extra_initial if expr not in initial]
    frontier = [(expr, None) for expr in initial]
    # the standard models are always fitted: the search must not end below them
    baselines = set(getattr(grammar, "baseline_structures", lambda n: [])(n_features)) | set(extra_initial)
    best_score = -np.inf
    last_depth = automatic_depth(n_features) if max_depth is None else max_depth
    try:
        for depth in range(1, last_depth + 1):
            tasks = []
            hints_cache = {}
            for expr, parent_index in frontier:
                if expr in seen:
                    continue
                seen[expr] = None
                parent = None if parent_index is None else result.records[parent_index]
                if parent_index not in hints_cache:
                    hints_cache[parent_index] = fitter.start_hints(parent, X, y, period_columns, change_columns)
                tasks.append((expr, parent_index, parent, hints_cache[parent_index]))
            if max_fits_per_depth is not None and len(tasks) > max_fits_per_depth and hasattr(fitter, "screen"):
                tasks = _screen_level(tasks, fitter, X, y, depth, base_seed, n_jobs, prefer, max_fits_per_depth, result,
                                      protected=baselines)
            if max_candidates is not None:
                room = max_candidates - sum(r["status"] != SCREENED_OUT for r in result.records)
                if room <= 0:
                    result.stop_reason = "candidate budget reached"
                    break
                if len(tasks) > room:
                    tasks = tasks[:room]
                    result.stop_reason = "candidate budget reached"
            if not tasks:
                result.stop_reason = "no new candidates"
                break
            level = _evaluate(tasks, fitter, X, y, depth, base_seed, n_jobs, prefer, start, time_budget, result)
            ok = [i for i in level if result.records[i]["status"] == "ok"]
            if depth == 1 and not ok:
                causes = sorted({result.records[i]["message"] for i in level})
                raise ValueError(
                    "Every candidate structure failed to fit; causes: " + "; ".join(causes)
                )
            ok.sort(key=lambda i: -result.records[i]["criterion"])
            elapsed = time.perf_counter() - start
            level_best = ok[0] if ok else None
            improved = level_best is not None and result.records[level_best]["criterion"] > best_score
            if improved:
                best_score = result.records[level_best]["criterion"]
                result.best_index = level_best
            result.levels.append(
                {
                    "depth": depth,
                    "n_candidates": len(level),
                    "best_structure": None if level_best is None else str(result.records[level_best]["structure"]),
                    "best_criterion": -np.inf if level_best is None else result.records[level_best]["criterion"],
                    "elapsed": elapsed,
                }
            )
            if verbose:
                best_text = (
                    "none" if level_best is None else result.records[level_best]["structure"].to_string(feature_names)
                )
                score = -np.inf if level_best is None else result.records[level_best]["criterion"]
                n_screened = sum(r["status"] == SCREENED_OUT and r["depth"] == depth for r in result.records)
                screened_text = f", {n_screened} more screened out" if n_screened else ""
                print(
                    f"[skgpsearch] depth {depth}: best {best_text}  {criterion_name}={score:.3f}  "
                    f"({len(level)} candidates, {sum(r['status'] == 'failed' for r in (result.records[i] for i in level))} failed"
                    f"{screened_text}, {elapsed:.1f} s)",
                    flush=True,
                )
            if result.stop_reason:
                break
            if not improved:
                result.stop_reason = "no improvement"
                break
            if depth == last_depth:
                result.stop_reason = "max_depth reached" if max_depth is not None else "depth limit reached"
                break
            beam = ok[:beam_width]
            frontier = [(child, b) for b in beam for child in grammar.expand(result.records[b]["structure"], n_features)]
    except KeyboardInterrupt:
        result.stop_reason = "interrupted"
        if result.best_index is None:
            raise
        warnings.warn("Search interrupted: keeping the best structure found so far.", RuntimeWarning)
    return result




def _screen_level(tasks, fitter, X, y, depth, base_seed, n_jobs, prefer, keep, result, protected=()):
    """The ``keep`` tasks with the best cheap scores (and the ``protected`` structures); the others are recorded as screened out."""
    scores = Parallel(n_jobs=n_jobs, prefer=prefer)(
        delayed(fitter.screen)(
            expr, X, y, candidate_seed(base_seed, expr), None if parent is None else parent["warm_state"], hints
        )
        for expr, _, parent, hints in tasks
    )
    # stable: ties keep the grammar's order
    order = sorted(range(len(tasks)), key=lambda i: (tasks[i][0] not in protected, -scores[i]))
    kept = sorted(order[:keep])
    for i in sorted(order[keep:]):
        expr, parent_index, parent, _ = tasks[i]
        result.records.append(
            {
                "structure": expr,
                "seed": candidate_seed(base_seed, expr),
                "status": SCREENED_OUT,
                "message": f"screened out: cheap score {scores[i]:.2f} (the {keep} best of {len(tasks)} were fitted)",
                "criterion": -np.inf,
                "log_marginal_likelihood": -np.inf,
                "theta": None,
                "noise_variance": None,
                "warm_state": None,
                "n_hyperparameters": None,
                "fit_time": 0.0,
                "depth": depth,
                "parent": None if parent is None else str(parent["structure"]),
                "parent_index": parent_index,
                "screen_score": scores[i],
            }
        )
    return [tasks[i] for i in kept]


def _evaluate(tasks, fitter, X, y, depth, base_seed, n_jobs, prefer, start, time_budget, result):
    """Fit the tasks of one level in parallel; records are appended in task order.

    With a time budget the level is sent in batches of ``n_jobs`` candidates
    and the budget is checked between batches (every finished fit is kept).
    """
    if result.records and time_budget is not None and time.perf_counter() - start > time_budget:
        result.stop_reason = "time budget reached"
        return []
    batch = len(tasks) if time_budget is None else max(1, effective_n_jobs(n_jobs))
    indices = []
    for first in range(0, len(tasks), batch):
        chunk = tasks[first : first + batch]
        # a generator, so that the fits finished before an interruption are kept
        records = Parallel(n_jobs=n_jobs, prefer=prefer, return_as="generator")(
            delayed(fitter)(
                expr,
                X,
                y,
                candidate_seed(base_seed, expr),
                None if parent is None else parent["warm_state"],
                hints,
            )
            for expr, _, parent, hints in chunk
        )
        for (expr, parent_index, parent, _), record in zip(chunk, records):
            record["depth"] = depth
            record["parent"] = None if parent is None else str(parent["structure"])
            record["parent_index"] = parent_index
            result.records.append(record)
            indices.append(len(result.records) - 1)
        if time_budget is not None and time.perf_counter() - start > time_budget:
            result.stop_reason = "time budget reached"
            break
    return indices
