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
from ._engine._periodogram import dominant_period
from ._engine._regression import GPPosterior, RegressionObjective, optimize_hyperparameters, random_starts
from .criteria import HyperPrior
from .grammar._expr import _scale
from .kernels import default_hyperparameters, from_kernel, to_kernel

__all__ = ["RegressionCandidateFitter", "SearchResult", "run_search"]

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


def candidate_record(fit, expr, seed, n_hyperparameters):
    """The record of one candidate: ``fit()``'s fields, or a failed record if it raised numerically.

    A numerical failure of one candidate is recorded (status, message) and
    never aborts the search; failed records carry -inf criterion and
    likelihood so that ranking ignores them.
    """
    start = time.perf_counter()
    record = {"structure": expr, "seed": seed, "status": "ok", "message": ""}
    try:
        with single_threaded_blas():
            record.update(fit())
    except (NumericalError, ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
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
    #: run_search computes periodogram hints of new periodic kernels for this fitter
    uses_period_hints = True

    def default_noise(self):
        return 0.1 * self.summary.target_variance

    def __call__(self, expr, X, y, seed, noise_init=None, period_hints=None):
        return candidate_record(
            lambda: self._fit(expr, X, y, seed, noise_init, period_hints), expr, seed, expr.n_hyperparameters + 1
        )

    def _fit(self, expr, X, y, seed, noise_init, period_hints):
        rng = np.random.default_rng(seed)
        n = X.shape[0]
        kernel = to_kernel(expr, summary=self.summary)
        X_opt, y_opt = X, y
        if self.max_optimize_samples is not None and n > self.max_optimize_samples:
            rows = np.sort(rng.choice(n, size=self.max_optimize_samples, replace=False))
            X_opt, y_opt = X[rows], y[rows]
        noise_init = self.default_noise() if noise_init is None else noise_init
        kind = "loo" if self.objective == "loo" else "lml"
        prior = None
        if self.objective == "map":
            prior = (self.prior or HyperPrior()).moments(expr, self.summary)
        objective = RegressionObjective(kernel, X_opt, y_opt, self.noise_bounds, kind=kind, prior=prior)
        log_noise = math.log(noise_init)
        # Warm start: the parent's values for the shared part; new periodic kernels
        # start at the periodogram's period (the first hint), the others at their defaults.
        hinted = _apply_period_hints(expr, period_hints, self.summary)
        warm = hinted[0] if hinted else expr
        starts = [np.append(to_kernel(warm, summary=self.summary).theta, log_noise)]
        cold = np.append(to_kernel(expr.without_values(), summary=self.summary).theta, math.log(self.default_noise()))
        nested = _nested_start(expr, warm, self.summary)
        if nested is not None:
            # the child at (almost) its parent: new additive terms start with 1 % of their variance
            starts.append(np.append(to_kernel(nested, summary=self.summary).theta, log_noise))
        starts += random_starts(kernel, cold, objective.bounds, self.n_restarts, rng)
        if len(hinted) > 1 and self.n_restarts > 0:
            # the second period candidate replaces the first random restart
            starts[1] = np.append(to_kernel(hinted[1], summary=self.summary).theta, log_noise)
        screen = None
        n_opt = X_opt.shape[0]
        screen_size = min(max(n_opt // 2, 64), 400)
        if len(starts) > 2 and n_opt >= 2 * screen_size:
            rows = np.sort(rng.choice(n_opt, size=screen_size, replace=False))
            screen = RegressionObjective(
                to_kernel(expr, summary=self.summary), X_opt[rows], y_opt[rows], self.noise_bounds, kind=kind, prior=prior
            )
        theta, _, failures = optimize_hyperparameters(objective, starts, self.maxiter, screen_objective=screen)
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
            score = float(self.criterion(estimator, estimator.X_train_, estimator.y_train_))
        if not np.isfinite(score):
            return {
                "status": "failed",
                "message": f"criterion value {score}",
                "theta": theta,
                "noise_variance": noise,
                "warm_state": noise,
                "log_marginal_likelihood": lml,
                "n_hyperparameters": k,
                "structure": fitted,
                "criterion": -np.inf,
            }
        return {
            "structure": fitted,
            "theta": theta,
            "noise_variance": noise,
            "warm_state": noise,
            "log_marginal_likelihood": lml,
            "criterion": score,
            "n_hyperparameters": k,
            "n_evaluations": objective.n_evaluations,
        }


def _apply_period_hints(expr, hints, summary):
    """Copies of the structure whose new periodic kernels start at the hinted periods.

    ``hints`` maps a column to a list of periods; copy k uses the k-th period
    of each column (or its last). Periodic kernels carrying values keep them.
    """
    if not hints:
        return []
    new_columns = {leaf.columns[0] for leaf in expr.leaves if leaf.name == "PER" and not leaf.params}
    new_columns &= set(hints)
    if not new_columns:
        return []
    copies = []
    for k in range(max(len(hints[c]) for c in new_columns)):

        def hint(leaf, k=k):
            if leaf.name == "PER" and not leaf.params and leaf.columns[0] in new_columns:
                periods = hints[leaf.columns[0]]
                return _with_default_values(leaf, summary, period=periods[min(k, len(periods) - 1)])
            return leaf

        copies.append(expr.map_leaves(hint))
    return copies


def _nested_start(expr, warm, summary):
    """``warm`` with every new additive term of ``expr`` (no base kernel carrying values) scaled by 0.01.

    A child S + B of a fitted parent S then starts next to the parent's
    optimum, so its fit can always fall back on the parent's likelihood.
    ``None`` when the structure has no values (no parent) or no new term.
    """
    if not expr.has_values:
        return None
    terms = expr.terms()
    new = [i for i, term in enumerate(terms) if not any(leaf.params for leaf in term.leaves)]
    if not new or len(new) == len(terms):
        return None

    def with_defaults(leaf):
        return leaf if leaf.params else _with_default_values(leaf, summary)

    scaled = list(warm.terms())
    for i in new:
        scaled[i] = _scale(scaled[i].map_leaves(with_defaults), 0.01)
    return type(warm)._make(scaled)


def _with_default_values(leaf, summary, **overrides):
    """The base kernel carrying its data-aware default values (some replaced by ``overrides``)."""
    defaults = default_hyperparameters(leaf.name, leaf.columns, summary)
    params = {name: value for name, (value, _) in defaults.items()}
    params.update(overrides)
    return leaf.with_params(params)


def _detrended(x, r):
    """r minus its least-squares line in x (a trend leaks into every low frequency)."""
    centred = x - x.mean()
    denominator = float(centred @ centred)
    slope = float(centred @ (r - r.mean())) / denominator if denominator > 0 else 0.0
    return r - r.mean() - slope * centred


def period_hints(X, residuals, y, summary, columns):
    """Candidate periods per column: periodogram peaks of the detrended residuals and of y."""
    hints = {}
    for c in columns:
        low, high = default_hyperparameters("PER", (c,), summary)["period"][1]
        periods = []
        for values in (residuals, y):
            period = dominant_period(X[:, c], _detrended(X[:, c], values), low, high)
            if period is not None and all(abs(period - p) > 0.05 * p for p in periods):
                periods.append(period)
        if periods:
            hints[c] = periods
    return hints


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
):
    """Greedy (beam_width=1) or beam search; returns a :class:`SearchResult`.

    Level 1 fits the grammar's initial structures; each further level fits the
    children of the ``beam_width`` best structures of the previous level that
    were not fitted before (canonical structures are cached). The search stops
    at ``max_depth``, when a level does not improve on the best criterion, or
    when the candidate or time budget runs out (it then keeps what it found).
    A KeyboardInterrupt also stops it with what was found so far.
    ``feature_names`` only changes how ``verbose`` prints structures.
    """
    n_features = X.shape[1]
    result = SearchResult()
    seen = {}
    start = time.perf_counter()
    period_columns = []
    if getattr(fitter, "uses_period_hints", False):
        period_columns = sorted({b.columns[0] for b in grammar.base_set(n_features) if b.name == "PER"})
    frontier = [(expr, None) for expr in grammar.initial(n_features)]
    best_score = -np.inf
    try:
        for depth in range(1, max_depth + 1):
            tasks = []
            hints_cache = {}
            for expr, parent_index in frontier:
                if expr in seen:
                    continue
                seen[expr] = None
                parent = None if parent_index is None else result.records[parent_index]
                if parent_index not in hints_cache:
                    hints_cache[parent_index] = _hints_for(parent, X, y, fitter, period_columns)
                tasks.append((expr, parent_index, parent, hints_cache[parent_index]))
            if max_candidates is not None:
                room = max_candidates - len(result.records)
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
                print(
                    f"[skgpsearch] depth {depth}: best {best_text}  {criterion_name}={score:.3f}  "
                    f"({len(level)} candidates, {sum(r['status'] != 'ok' for r in (result.records[i] for i in level))} failed, "
                    f"{elapsed:.1f} s)",
                    flush=True,
                )
            if result.stop_reason:
                break
            if not improved:
                result.stop_reason = "no improvement"
                break
            if depth == max_depth:
                result.stop_reason = "max_depth reached"
                break
            beam = ok[:beam_width]
            frontier = [(child, b) for b in beam for child in grammar.expand(result.records[b]["structure"], n_features)]
    except KeyboardInterrupt:
        result.stop_reason = "interrupted"
        if result.best_index is None:
            raise
        warnings.warn("Search interrupted: keeping the best structure found so far.", RuntimeWarning)
    return result




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


def _hints_for(parent, X, y, fitter, period_columns):
    """Periods suggested by the parent's residuals (or by y itself at the first level)."""
    if not period_columns:
        return None
    residuals = y
    if parent is not None and parent["status"] == "ok":
        try:
            kernel = to_kernel(parent["structure"], summary=fitter.summary)
            with single_threaded_blas():
                posterior = GPPosterior(kernel, parent["noise_variance"], X, y)
            residuals = y - posterior.predict(X)[0]
        except NumericalError:
            residuals = y
    return period_hints(X, residuals, y, fitter.summary, period_columns)
