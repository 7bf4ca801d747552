"""The structure search: one greedy/beam loop over a grammar, driven by an ``evaluate`` callback.

:class:`StructureSearch` knows nothing about how a candidate is fitted: it
expands and deduplicates structures, asks for start hints per parent,
applies the budgets (screening, candidate count, time), hands the level to
``evaluate`` and ranks the records it gets back, reports progress, and
decides when to stop. It is the *explore* stage of the search pipeline
(:mod:`skgpsearch._search._pipeline`). The estimators evaluate candidates
with a :class:`~skgpsearch._search._candidate_fitter.CandidateFitter` in
joblib workers (:class:`ParallelCandidateFits`, :func:`run_search`);
:class:`~skgpsearch.KernelSearchCV` evaluates them with scikit-learn's
``evaluate_candidates``.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils.parallel import Parallel, delayed

from .._engine._optimizer import StartRace
from ..grammar import Expr, Grammar
from ._candidate_fitter import SUBSET_FULL_EFFORT, CandidateFitter, full_effort_on_subset, merge_start_shards
from ._candidate_fitter import start_shards, unraced_fit_args, with_deadline, with_effort
from ._progress import LevelReport, ProgressCallback
from ._records import FAILED, OK, SCREENED_OUT, CandidateRecord, ScreenScore, candidate_seed

__all__ = [
    "Candidate",
    "ParallelCandidateFits",
    "SearchResult",
    "StructureSearch",
    "automatic_depth",
    "deadline_batches",
    "enough_rows_for",
    "expected_fit_seconds",
    "fit_times",
    "full_effort_cost",
    "merge_full_effort_refit",
    "parallel_rounds",
    "required_improvement",
    "run_search",
]

#: Largest depth limit of a search without max_depth (see automatic_depth).
MAX_SEARCH_DEPTH = 10
#: A level with more than this many times ``max_fits_per_depth`` candidates is first cut to that many by
#: the fitter's ``prescreen`` (its starts next to the parent, evaluated once each, no optimisation).
PRESCREEN_FACTOR = 2
#: What a time budget expects a full-effort fit to cost, in fits of the explore stage's "screened" effort, or of
#: its "explore" effort on a subset of the rows: 3-8x on the internet and births series (893-909 rows), 7-12x on
#: a synthetic 800 x 3 table explored on 400 rows (2026-12-06).
FULL_EFFORT_COST = 8.0
#: The same for the "explore" effort on all the rows: 0.9-3.3x, most 1.3-2.1x (2026-12-06: synthetic tables of
#: 80-400 rows and 2-8 columns, scikit-learn's diabetes, classifiers of 150-700 rows). At FULL_EFFORT_COST a
#: time budget held back four times what the finalists stage took and stopped the search a depth or two early.
EXPLORE_FULL_EFFORT_COST = 3.0
#: The search expands a structure only into children with at least this many rows per hyperparameter (the
#: noise's included); the base kernels and the baselines are always fitted. Without it, on a series of 6-12 rows
#: the defaults chose change points and change windows of 6-10 hyperparameters that interpolated the rows, the
#: noise at 1-3 % of its true level: on 12 simulated series (a line plus unit noise, the next 3 values
#: forecast) 7 held none of the 3 values inside their 95 % bands, up to 478 standard deviations out (mean
#: negative log density up to 1e5). With 4 rows each (trend variants too), all 12 chose one base kernel (LIN,
#: SE or WN): at most 2.6 standard deviations out, mean negative log density 1.1-3.5. R's airmiles (22 training
#: years) forecast its 2 test years with RMSE 5539 instead of 9044 (SE + LIN instead of CP(LIN, RQ); naive with
#: drift 2768); uspop (17) 23.3 instead of 12.7 (SE instead of LIN + SE * CW(C, PER); naive with drift 27.2).
#: From 48 rows no benchmark changed. 3 rows each left airmiles at CP(C, RQ) + LIN.
ROWS_PER_HYPERPARAMETER = 4
#: The columns of ``search_results_``, in order.
RESULT_COLUMNS = ("structure", "depth", "parent", "criterion", "log_marginal_likelihood",
                  "n_hyperparameters", "fit_time", "n_evaluations", "evaluated_rows", "status", "message",
                  "diagnostics", "baseline")


@dataclass
class Candidate:
    """A structure to evaluate, with the parent it was expanded from."""

    structure: Expr
    parent_index: int | None = None
    parent: CandidateRecord | None = None
    hints: object = None
    depth: int = 1
    #: What screening this candidate cost (added to its record's).
    screen_cost: ScreenScore | None = None


@dataclass
class SearchResult:
    """What a search found: one record per evaluated candidate, and the best."""

    records: list = field(default_factory=list)
    best_index: int | None = None
    stop_reason: str = ""
    levels: list = field(default_factory=list)

    @property
    def best(self) -> CandidateRecord | None:
        return None if self.best_index is None else self.records[self.best_index]

    def table(self) -> dict:
        """The records as ``search_results_``: a dict of lists, structures as text."""
        table = {key: [] for key in RESULT_COLUMNS}
        for record in self.records:
            for key in RESULT_COLUMNS:
                value = getattr(record, key)
                if key == "structure":
                    value = str(value)
                elif key == "diagnostics":
                    value = "; ".join(value)
                table[key].append(value)
        return table


def automatic_depth(n_features: int) -> int:
    """Depth limit of a search without ``max_depth``: 3 for one column, one more per further column, at most 10.

    Each level adds one base kernel, so a depth-d search uses at most d
    columns; on one column, deeper greedy searches (measured on the
    extrapolation series) keep improving BIC slowly at 5-10x the time.
    """
    return min(MAX_SEARCH_DEPTH, 2 + n_features)


def required_improvement(min_improvement: float, n_candidates: int, multiplicity_penalty: bool) -> float:
    """How much a depth with ``n_candidates`` candidates must improve the best criterion for the search to go on.

    ``min_improvement``, or with ``multiplicity_penalty`` at least log K nats
    for K candidates. A depth keeps the best of its K children of the
    parent: under a structure prior that gives stopping at the parent as
    much mass as going deeper, and splits the latter evenly among the
    children, the best child is more probable than the parent only if its
    Bayes factor exceeds K. On ten regression tables (5 folds each,
    benchmarks/results/stopping_rule.txt) it cut the likelihood evaluations
    by 28 % (Boston housing 56 200 -> 36 900 a fold, auto_mpg 19 400 ->
    11 400), with SMSE 9 % lower on Boston, 4 % on star98, 3 % on auto_mpg,
    and within 2 % on the other seven.
    """
    if not multiplicity_penalty or n_candidates < 2:
        return min_improvement
    return max(min_improvement, math.log(n_candidates))


#: Under the multiplicity rule, also stop when the next depth's improvement, predicted from the last two
#: (see predicted_next_gain), would be at most what the rule required of the depth just fitted (the next
#: depth's K is usually larger: the rule errs towards going on).
PREDICTED_GAIN_STOP = True


def predicted_next_gain(gains: Sequence[float]) -> float | None:
    """The next depth's improvement of the best criterion, extrapolated from the last two ``gains`` as a
    geometric decay (g_d² / g_(d-1)); None unless the last two are positive and decreasing."""
    if len(gains) < 2 or not 0 < gains[-1] < gains[-2]:
        return None
    return gains[-1] ** 2 / gains[-2]


class StructureSearch:
    """Greedy (``beam_width=1``) or beam search over structures; :meth:`run` returns a :class:`SearchResult`.

    Level 1 evaluates ``initial``; each further level evaluates the children
    (``expand(record)``) of the ``beam_width`` best records of the previous
    level that were not evaluated before. The search stops at ``max_depth``,
    when a level does not improve on the best criterion, when the candidate
    or time budget runs out (it then keeps what it found), or on a
    KeyboardInterrupt (with what was found so far).

    Parameters
    ----------
    evaluate : callable
        ``evaluate(candidates, deadline)`` yields one :class:`CandidateRecord`
        per candidate, in order; it may stop early once ``time.perf_counter()``
        passes ``deadline`` (``None``: no deadline).
    expand : callable
        ``expand(record)`` -> the child structures of an evaluated record.
    initial : sequence of Expr
    max_depth : int
    beam_width : int, default=1
    protected : set of Expr, default=()
        Structures that screening never drops (the standard models).
    hint : callable or None
        ``hint(parent_record or None)`` -> start hints shared by a parent's children.
    screen : callable or None
        ``screen(candidates)`` -> one :class:`ScreenScore` per candidate (the
        cheap score and its cost); used when a level has more than
        ``max_fits_per_depth`` candidates.
    prescreen : callable or None
        ``prescreen(candidates)`` -> one :class:`ScreenScore` or ``None`` per
        candidate: a cheaper score still (no optimisation). A level with more
        than ``PRESCREEN_FACTOR`` times ``max_fits_per_depth`` candidates is
        first cut to that many by it (``None`` always passes); only they get
        the cheap score.
    prescreen_decides : bool, default=False
        A level with more than ``max_fits_per_depth`` candidates, all scored
        by ``prescreen``, is cut to ``max_fits_per_depth`` by those scores
        alone, without the cheap score (a fitter whose prescreen ranks as
        well, see ``CandidateFitter.prescreen_decides``).
    max_fits_per_depth, max_candidates, time_budget : int, int, float or None
        Budgets (see the estimators).
    progress : callable or None
        Called with a :class:`LevelReport` after each depth.
    criterion_name, feature_names
        For display in the reports.
    require_success : bool, default=True
        Raise ``ValueError`` when every candidate of the first level fails.
    depth_limit_reason : str, default="max_depth reached"
    reserve : callable or None
        ``reserve(seconds_for, largest)`` -> seconds of ``time_budget`` to
        keep for what follows the search (the finalists), given
        ``seconds_for(n_base_kernels)``, the expected time of one fit of a
        structure that size, and the size of the largest structure
        evaluated so far. Before each batch
        of ``n_jobs`` fits the search predicts how long the batch will take
        (:func:`expected_fit_seconds`) and sends it only when it would end
        before the rest of the budget is spent, counting the reserve that
        the batch's own structures would need as finalists.
    n_jobs : int or None
        How many fits run at once (the batch size under a time budget).
    min_improvement : float, default=0.0
        Stop when a depth improves the best criterion by no more than this
        (the improvement is kept; the search does not go deeper).
    multiplicity_penalty : bool, default=False
        Under a criterion in nats: a depth must also improve the best
        criterion by more than log K, K being its number of candidates (see
        :func:`required_improvement`).
    refine : callable or None
        ``refine(pairs)`` -> (refitted records, their effort), for
        ``(candidate, record)`` pairs: the ``refine_per_level`` best records
        of each depth that were fitted with the explore effort are fitted
        again with full effort before the depth is ranked and expanded; a
        refit replaces its record when its evidence is at least as high.
    refine_per_level : int, default=2
    refine_cost : float, default=1.0
        How many explore fits one ``refine`` refit costs, for a time budget:
        a level's refits are made only when they are predicted to end
        within it (the finalists stage refits what they leave out).
    """

    def __init__(
        self,
        evaluate: Callable[[list, float | None], Iterable[CandidateRecord]],
        expand: Callable[[CandidateRecord], Sequence[Expr]],
        *,
        initial: Sequence[Expr],
        max_depth: int,
        beam_width: int = 1,
        protected: Iterable[Expr] = (),
        hint: Callable | None = None,
        screen: Callable | None = None,
        prescreen: Callable | None = None,
        prescreen_decides: bool = False,
        max_fits_per_depth: int | None = None,
        max_candidates: int | None = None,
        time_budget: float | None = None,
        progress: Callable[[LevelReport], None] | None = None,
        require_success: bool = True,
        depth_limit_reason: str = "max_depth reached",
        criterion_name: str = "criterion",
        feature_names: Sequence[str] | None = None,
        reserve: Callable[[Callable[[int], float], int], float] | None = None,
        min_improvement: float = 0.0,
        multiplicity_penalty: bool = False,
        refine: Callable | None = None,
        refine_per_level: int = 2,
        n_jobs: int | None = None,
        refine_cost: float = 1.0,
    ):
        self.n_jobs = n_jobs
        self.refine_cost = refine_cost
        self.refine = refine
        self.refine_per_level = refine_per_level
        self.reserve = reserve
        self.min_improvement = min_improvement
        self.multiplicity_penalty = multiplicity_penalty
        self.evaluate = evaluate
        self.expand = expand
        self.initial = list(initial)
        self.max_depth = max_depth
        self.beam_width = beam_width
        self.protected = set(protected)
        self.hint = hint
        self.screen = screen
        self.prescreen = prescreen
        self.prescreen_decides = prescreen_decides
        self.max_fits_per_depth = max_fits_per_depth
        self.max_candidates = max_candidates
        self.time_budget = time_budget
        self.progress = progress
        self.require_success = require_success
        self.depth_limit_reason = depth_limit_reason
        self.criterion_name = criterion_name
        self.feature_names = feature_names

    def run(self) -> SearchResult:
        result = SearchResult()
        self._seen = set()
        self._fit_times = []
        self._start = time.perf_counter()
        best_score = -np.inf
        gains = []  # each depth's improvement of the best criterion, from depth 2 on
        frontier = [(expr, None) for expr in self.initial]
        try:
            for depth in range(1, self.max_depth + 1):
                candidates = self._hint(self._deduplicate(frontier, depth, result), result)
                n_level = len(candidates)
                candidates = self._screen_level(candidates, depth, result)
                candidates = self._apply_candidate_budget(candidates, result)
                if candidates is None:
                    break
                if not candidates:
                    result.stop_reason = "no new candidates"
                    break
                level = self._evaluate_level(candidates, depth, result)
                if not level and result.stop_reason.startswith("time budget"):
                    break  # no fit of this depth was sent: it is no depth of the search
                self._refine_level(candidates, level, result)
                ranked = self._rank(level, depth, result)
                level_best = ranked[0] if ranked else None
                gain = result.records[level_best].criterion - best_score if level_best is not None else -np.inf
                improved = gain > 0
                if improved:
                    best_score = result.records[level_best].criterion
                    result.best_index = level_best
                self._report(depth, level, level_best, result)
                if self._stop(depth, improved, result):
                    break
                required = required_improvement(self.min_improvement, n_level, self.multiplicity_penalty)
                by_multiplicity = required != self.min_improvement
                bound = f"log({n_level}) = {required:.3g}" if by_multiplicity else \
                    f"min_improvement={self.min_improvement:g}"
                if depth > 1 and gain <= required:
                    multiplicity = f", the multiplicity of the depth's {n_level} candidates" if by_multiplicity else ""
                    result.stop_reason = f"improvement of {gain:.3g} at most {bound}{multiplicity}"
                    break
                if depth > 1:
                    gains.append(gain)
                predicted = predicted_next_gain(gains)
                if self.multiplicity_penalty and PREDICTED_GAIN_STOP and predicted is not None and predicted <= required:
                    result.stop_reason = (f"improvement of {gain:.3g} after {gains[-2]:.3g}: the next depth's, "
                                          f"predicted {predicted:.3g}, at most {bound}")
                    break
                frontier = [(child, b) for b in ranked[: self.beam_width] for child in self.expand(result.records[b])]
        except KeyboardInterrupt:
            result.stop_reason = "interrupted"
            # the best of every fitted record: the unfinished depth's too (its records are kept as they arrive)
            fitted = [i for i, record in enumerate(result.records) if record.status == OK]
            if fitted:
                best = max(fitted, key=lambda i: result.records[i].criterion)
                if result.best_index is None or result.records[best].criterion > best_score:
                    result.best_index = best
            if result.best_index is None:
                raise
            warnings.warn("Search interrupted: keeping the best structure found so far.", RuntimeWarning)
        return result

    # -- the steps -------------------------------------------------------------------------
    def _deduplicate(self, frontier, depth, result):
        """The frontier's structures not evaluated before (canonical structures compare equal), first parent kept."""
        candidates = []
        for expr, parent_index in frontier:
            if expr in self._seen:
                continue
            self._seen.add(expr)
            parent = None if parent_index is None else result.records[parent_index]
            candidates.append(Candidate(expr, parent_index, parent, depth=depth))
        return candidates

    def _hint(self, candidates, result):
        """Start hints, computed once per parent and shared by its children."""
        if self.hint is None:
            return candidates
        cache = {}
        for candidate in candidates:
            if candidate.parent_index not in cache:
                cache[candidate.parent_index] = self.hint(candidate.parent)
            candidate.hints = cache[candidate.parent_index]
        return candidates

    def _screen_level(self, candidates, depth, result):
        """Budget: above ``max_fits_per_depth`` candidates, keep the best cheap scores (and the protected)."""
        keep = self.max_fits_per_depth
        if keep is None or len(candidates) <= keep or self.screen is None:
            return candidates
        prescored = [None] * len(candidates)
        if self.prescreen is not None and (self.prescreen_decides or len(candidates) > PRESCREEN_FACTOR * keep):
            prescored = self.prescreen(candidates)
            if self.prescreen_decides and all(score is not None for score in prescored):
                return self._cut(candidates, prescored, keep, depth, result, "score of its starts next to the parent")
            # a candidate without a prescreen score (no start next to a parent) always passes
            unscored = [i for i, score in enumerate(prescored) if score is None]
            scored = [i for i, score in enumerate(prescored) if score is not None]
            room = max(PRESCREEN_FACTOR * keep - len(unscored), 0)
            best = self._best([candidates[i] for i in scored], [prescored[i].score for i in scored], room)
            passing = sorted(unscored + [scored[j] for j in best])
            for i in sorted(set(range(len(candidates))) - set(passing)):
                self._record_screened_out(
                    candidates[i], prescored[i], depth, result,
                    f"screened out before the cheap score: score of its starts next to the parent "
                    f"{prescored[i].score:.2f} (the {len(passing)} best of {len(candidates)} were scored)")
            candidates, prescored = [candidates[i] for i in passing], [prescored[i] for i in passing]
        screened = [_plus(score, pre) for score, pre in zip(self.screen(candidates), prescored)]
        return self._cut(candidates, screened, keep, depth, result, "cheap score")

    def _cut(self, candidates, scores, keep, depth, result, score_name):
        """The ``keep`` candidates of the best ``scores`` (the protected first), the others recorded as
        screened out; each kept candidate carries what scoring it cost."""
        fitted = self._best(candidates, [s.score for s in scores], keep)
        for i in sorted(set(range(len(candidates))) - set(fitted)):
            self._record_screened_out(
                candidates[i], scores[i], depth, result,
                f"screened out: {score_name} {scores[i].score:.2f} (the {keep} best of {len(candidates)} were fitted)")
        for i in fitted:
            candidates[i].screen_cost = scores[i]
        return [candidates[i] for i in fitted]

    def _best(self, candidates, scores, count):
        """Sorted indices of the ``count`` best ``scores``, the protected structures first; ties keep the
        grammar's order."""
        order = sorted(range(len(candidates)), key=lambda i: (candidates[i].structure not in self.protected, -scores[i]))
        return sorted(order[:count])

    @staticmethod
    def _record_screened_out(candidate, score, depth, result, message):
        result.records.append(CandidateRecord(
            candidate.structure,
            status=SCREENED_OUT,
            message=message,
            depth=depth,
            parent=None if candidate.parent is None else str(candidate.parent.structure),
            parent_index=candidate.parent_index,
            screen_score=score.score,
            n_evaluations=score.n_evaluations,
            evaluated_rows=score.evaluated_rows,
        ))

    def _apply_candidate_budget(self, candidates, result):
        """Budget: at most ``max_candidates`` fits in all (screened-out ones do not count); None stops the search."""
        if self.max_candidates is None:
            return candidates
        room = self.max_candidates - sum(r.status != SCREENED_OUT for r in result.records)
        if room <= 0:
            result.stop_reason = "candidate budget reached"
            return None
        if len(candidates) > room:
            result.stop_reason = "candidate budget reached"
            return candidates[:room]
        return candidates

    def _seconds_left(self, result, batch=(), keep_reserve=True):
        """Seconds of ``time_budget`` the search may still use, the finalists' reserve kept back -- the reserve
        for a search whose largest structure is at least as large as the largest in ``batch``."""
        elapsed = time.perf_counter() - self._start
        if self.reserve is None or not keep_reserve:
            return self.time_budget - elapsed
        sizes = [r.structure.n_base_kernels for r in result.records if r.status == OK]
        sizes += [c.structure.n_base_kernels for c in batch]
        fits = list(self._fit_times)
        reserve = self.reserve(lambda n_base_kernels: expected_fit_seconds(n_base_kernels, fits), max(sizes, default=1))
        return self.time_budget - elapsed - reserve

    def _evaluate_level(self, candidates, depth, result):
        """Evaluate a level; records are appended in candidate order as they arrive (kept on an interruption).

        Under a time budget the level goes in batches of ``n_jobs``; a batch predicted to end after the
        budget (the finalists' reserve kept back) is not sent. The first level, the base kernels, keeps
        no reserve back (the finalists stage then fits what the rest of the budget allows) and its first
        batch is always sent: a search always ends with a fitted model.
        """
        indices = []
        timed = self.time_budget is not None
        for batch in deadline_batches(len(candidates), self.n_jobs, timed):
            chunk = candidates[batch]
            deadline = None
            if timed:
                left = self._seconds_left(result, chunk, keep_reserve=depth > 1)
                # screened-out records are not fits: until one candidate is fitted, the batch goes
                fitted = any(r.status == OK for r in result.records)
                if fitted and expected_batch_seconds(chunk, self._fit_times) > left:
                    result.stop_reason = "time budget reached"
                    break
                deadline = time.perf_counter() + left
            for candidate, record in zip(chunk, self.evaluate(chunk, deadline)):
                if candidate.screen_cost is not None:
                    record.n_evaluations += candidate.screen_cost.n_evaluations
                    record.evaluated_rows += candidate.screen_cost.evaluated_rows
                record.depth = depth
                record.parent = None if candidate.parent is None else str(candidate.parent.structure)
                record.parent_index = candidate.parent_index
                result.records.append(record)
                indices.append(len(result.records) - 1)
                # the explore effort's own times (a full-effort refit of the level's best adds to its record's)
                self._fit_times += fit_times([record])
        if timed and self._seconds_left(result) <= 0:
            result.stop_reason = "time budget reached"
        return indices

    def _refine_level(self, candidates, level, result):
        """The level's best records fitted with the explore effort, fitted again with full effort (under a time
        budget, only when the refits are predicted to end within it, the finalists' reserve kept back)."""
        if self.refine is None or not level:
            return
        by_record = dict(zip(level, candidates))
        best = sorted((i for i in level if result.records[i].status == OK), key=lambda i: -result.records[i].criterion)
        refitted = ("full", SUBSET_FULL_EFFORT)
        chosen = [i for i in best[: self.refine_per_level] if result.records[i].effort not in refitted]
        if not chosen:
            return
        if self.time_budget is not None:
            size = max(result.records[i].structure.n_base_kernels for i in chosen)
            rounds = parallel_rounds(len(chosen), self.n_jobs)
            seconds = rounds * self.refine_cost * expected_fit_seconds(size, self._fit_times)
            if seconds > self._seconds_left(result):
                return
        refits, effort = self.refine([(by_record[i], result.records[i]) for i in chosen])
        for i, refit in zip(chosen, refits):
            result.records[i] = merge_full_effort_refit(result.records[i], refit, effort)

    def _rank(self, level, depth, result):
        """The level's usable records, best first (stable: ties keep the evaluation order)."""
        ok = [i for i in level if result.records[i].status == OK]
        if depth == 1 and not ok and self.require_success:
            causes = sorted({result.records[i].message for i in level} - {""}) or ["no base kernel was fitted"]
            raise ValueError("Every candidate structure failed to fit; causes: " + "; ".join(causes))
        return sorted(ok, key=lambda i: -result.records[i].criterion)

    def _report(self, depth, level, level_best, result):
        elapsed = time.perf_counter() - self._start
        previous = result.levels[-1]["elapsed"] if result.levels else 0.0
        best = None if level_best is None else result.records[level_best]
        at_depth = [r for r in result.records if r.depth == depth]
        n_evaluations = sum(r.n_evaluations for r in at_depth)
        evaluated_rows = sum(r.evaluated_rows for r in at_depth)
        result.levels.append({
            "depth": depth,
            "n_candidates": len(level),
            "best_structure": None if best is None else str(best.structure),
            "best_criterion": -np.inf if best is None else best.criterion,
            "elapsed": elapsed,
            "n_evaluations": n_evaluations,
            "evaluated_rows": evaluated_rows,
        })
        if self.progress is not None:
            self.progress(LevelReport(
                depth=depth,
                best=best,
                n_candidates=len(level),
                n_failed=sum(result.records[i].status == FAILED for i in level),
                n_screened=sum(r.status == SCREENED_OUT and r.depth == depth for r in result.records),
                elapsed=elapsed,
                level_seconds=elapsed - previous,
                criterion_name=self.criterion_name,
                feature_names=self.feature_names,
                n_evaluations=n_evaluations,
                evaluated_rows=evaluated_rows,
                time_left=None if self.time_budget is None else max(0.0, self.time_budget - elapsed),
            ))

    def _stop(self, depth, improved, result):
        if result.stop_reason:
            return True
        if not improved:
            result.stop_reason = "no improvement"
            return True
        if depth == self.max_depth:
            result.stop_reason = self.depth_limit_reason
            return True
        return False


def merge_full_effort_refit(record: CandidateRecord, refit: CandidateRecord,
                            effort: str = "full") -> CandidateRecord:
    """``record`` after a full-effort refit: the refit's values when they are at least as good, and both costs;
    its ``effort`` says how hard it is now fitted ("full", or SUBSET_FULL_EFFORT after a refit on a subset)."""
    kept = refit if refit.ok and refit.log_marginal_likelihood >= record.log_marginal_likelihood else record
    return dataclasses.replace(
        kept, effort=effort, raced_from=None, depth=record.depth, parent=record.parent,
        parent_index=record.parent_index, baseline=record.baseline,
        n_evaluations=record.n_evaluations + refit.n_evaluations,
        evaluated_rows=record.evaluated_rows + refit.evaluated_rows, fit_time=record.fit_time + refit.fit_time,
    )


def _plus(score: ScreenScore, earlier: ScreenScore | None) -> ScreenScore:
    """``score`` with the cost of an earlier score of the same candidate added."""
    if earlier is None:
        return score
    return ScreenScore(score.score, score.n_evaluations + earlier.n_evaluations,
                       score.evaluated_rows + earlier.evaluated_rows)


def enough_rows_for(structure: Expr, n_rows: int) -> bool:
    """Whether ``n_rows`` rows give ``structure`` at least ROWS_PER_HYPERPARAMETER rows for each hyperparameter
    (its own and one for the noise)."""
    return (structure.n_hyperparameters + 1) * ROWS_PER_HYPERPARAMETER <= n_rows


def full_effort_cost(explore_fitter: CandidateFitter, n_rows: int) -> float:
    """What a time budget expects a full-effort fit to cost, in fits of ``explore_fitter`` (the explore stage's
    fitter on ``n_rows`` rows, see :func:`~skgpsearch._search._candidate_fitter.with_effort`)."""
    if explore_fitter.effort == "full":
        return 1.0
    subset = explore_fitter.max_optimize_samples
    if explore_fitter.effort == "explore" and (subset is None or subset >= n_rows):
        return EXPLORE_FULL_EFFORT_COST
    return FULL_EFFORT_COST


def expected_fit_seconds(n_base_kernels: int, fits: Sequence[tuple[int, float]], quantile: float = 50.0) -> float:
    """The expected time of one fit of a structure with ``n_base_kernels`` base kernels, from earlier
    ``(n_base_kernels, seconds)`` fits of the same effort: the ``quantile`` of the times of that size, else of
    the nearest smaller size (or the smallest) scaled in proportion to the size; 0 before any fit.

    Measured on 900-row series, a fit's time grows about in proportion to the structure's size (medians
    1.2, 2.4 and 4.0 s for 1, 2 and 3 base kernels).
    """
    times = {}
    for size, seconds in fits:
        times.setdefault(size, []).append(seconds)
    if not times:
        return 0.0
    smaller = [size for size in times if size <= n_base_kernels]
    size = max(smaller) if smaller else min(times)
    return float(np.percentile(times[size], quantile)) * max(n_base_kernels, 1) / max(size, 1)


def fit_times(records: Iterable[CandidateRecord]) -> list[tuple[int, float]]:
    """``(n_base_kernels, fit_time)`` of the fitted ``records``, for :func:`expected_fit_seconds`."""
    return [(r.structure.n_base_kernels, r.fit_time) for r in records if r.status == OK and r.fit_time > 0]


def expected_batch_seconds(candidates: Sequence, fits: Sequence[tuple[int, float]]) -> float:
    """The expected time of fitting ``candidates`` at once: the slowest of them, each at the upper quartile of
    its size's fit times (a batch lasts as long as its slowest fit)."""
    return max((expected_fit_seconds(c.structure.n_base_kernels, fits, 75.0) for c in candidates), default=0.0)


def parallel_rounds(n_fits: int, n_jobs: int | None) -> int:
    """How many rounds of ``n_jobs`` parallel fits ``n_fits`` fits take."""
    return math.ceil(n_fits / effective_n_jobs(n_jobs))


def deadline_batches(n_tasks: int, n_jobs: int | None, timed: bool) -> Iterator[slice]:
    """Slices of ``range(n_tasks)`` to send to joblib: all at once when not ``timed``, else batches of
    ``n_jobs`` so that the caller can check the time between them."""
    size = max(1, effective_n_jobs(n_jobs) if timed else n_tasks)
    for first in range(0, n_tasks, size):
        yield slice(first, first + size)


class ParallelCandidateFits:
    """The ``evaluate``, ``hint`` and ``screen`` callbacks of a search that fits candidates with a fitter.

    Candidates are fitted in parallel with joblib (any backend); each gets
    its own seed (:func:`candidate_seed`), so results do not depend on
    ``n_jobs``; the cheap scores of a level's siblings share the search's
    seed (the same rows). With a deadline the level is sent in batches of
    ``n_jobs`` candidates and the deadline is checked between batches (every
    finished fit is kept).
    """

    def __init__(self, fitter: CandidateFitter, X: np.ndarray, y: np.ndarray, *, base_seed: int = 0,
                 n_jobs: int | None = None, prefer: str = "processes", period_columns: Sequence[int] = (),
                 change_columns: Sequence[int] = (), full_fitter: CandidateFitter | None = None) -> None:
        self.fitter, self.X, self.y = fitter, X, y
        self.full_fitter = fitter if full_fitter is None else full_fitter
        self.base_seed, self.n_jobs, self.prefer = base_seed, n_jobs, prefer
        self.period_columns, self.change_columns = period_columns, change_columns

    def _warm_state(self, candidate):
        return None if candidate.parent is None else candidate.parent.warm_state

    def __call__(self, candidates: list[Candidate], deadline: float | None = None) -> Iterator[CandidateRecord]:
        # each fit also stops its optimisation at the deadline (a fit of a large structure can outlast a budget)
        fitter = self.fitter if deadline is None else with_deadline(self.fitter, deadline)
        for batch in deadline_batches(len(candidates), self.n_jobs, deadline is not None):
            chunk = candidates[batch]
            # a generator, so that the fits finished before an interruption are kept
            yield from Parallel(n_jobs=self.n_jobs, prefer=self.prefer, return_as="generator")(
                delayed(fitter)(c.structure, self.X, self.y, candidate_seed(self.base_seed, c.structure),
                                self._warm_state(c), c.hints)
                for c in chunk
            )
            if deadline is not None and time.perf_counter() > deadline:
                return

    def refine(self, pairs: list[tuple[Candidate, CandidateRecord]]) -> tuple[list[CandidateRecord], str]:
        """Full-effort refits of explored records, from their fitted values (the candidates' seeds and hints),
        and their effort: on large data on a subset of the rows (:func:`full_effort_on_subset`; the finalists
        stage polishes the finalists among them on all rows). A few refits are split by their starts over the
        workers (:func:`start_shards`)."""
        # a series keeps its rows (see _pipeline.table_full_effort_on_subset)
        subset = full_effort_on_subset(self.full_fitter, self.X.shape[0]) if self.fitter.effort == "explore" else None
        fitter = self.full_fitter if subset is None else subset
        shards = start_shards(fitter, len(pairs), self.X.shape[0], self.n_jobs)
        # (a raced record's refit is its own fit again, with every start: see RACED_FULL_EFFORT)
        args = [unraced_fit_args(record, record.structure, candidate_seed(self.base_seed, c.structure),
                                 self._warm_state(c), c.hints) for c, record in pairs]
        refits = Parallel(n_jobs=self.n_jobs, prefer=self.prefer)(
            delayed(shard)(structure, self.X, self.y, seed, warm_state, hints)
            for structure, seed, warm_state, hints in args for shard in shards
        )
        return merge_start_shards(refits, len(shards)), "full" if subset is None else SUBSET_FULL_EFFORT

    def hint(self, parent: CandidateRecord | None) -> object:
        return self.fitter.start_hints(parent, self.X, self.y, self.period_columns, self.change_columns)

    def screen(self, candidates: list[Candidate]) -> list[ScreenScore]:
        return self._scores(self.fitter.screen, candidates)

    def prescreen(self, candidates: list[Candidate]) -> list[ScreenScore | None]:
        return self._scores(self.fitter.prescreen, candidates)

    def _scores(self, method, candidates):
        # Every sibling is scored with the search's own seed, so on the same subset of the rows: the scores
        # rank candidates against each other, and a log likelihood on another subset differs by more than
        # the candidates do. With a subset per candidate (its fit's seed), wages' best depth-3 candidate
        # ranked 25th of 54 by the cheap score; on one subset, 12th (benchmarks/results/screen_ranks.txt).
        return Parallel(n_jobs=self.n_jobs, prefer=self.prefer)(
            delayed(method)(c.structure, self.X, self.y, self.base_seed, self._warm_state(c), c.hints)
            for c in candidates
        )


@dataclass(frozen=True)
class SearchSettings:
    """How far and how wide a search goes, what it may spend, and whom it tells (see the estimators)."""

    max_depth: int | None = None
    beam_width: int = 1
    n_jobs: int | None = None
    max_candidates: int | None = None
    max_fits_per_depth: int | None = None
    time_budget: float | None = None
    model_averaging: int | None = None
    #: How the select stage chooses: "criterion", "loo" or "stacking" (see skgpsearch._search._pipeline).
    selection: str = "criterion"
    #: Stop when a depth improves the criterion by no more than this many nats.
    min_improvement: float = 0.0
    #: A depth must also improve the criterion by more than the log of its number of candidates
    #: (see required_improvement).
    multiplicity_penalty: bool = False
    #: How hard the explore stage fits candidates ("full" or "explore"), and how many of each depth's best
    #: explored candidates it then fits with full effort.
    explore_effort: str = "full"
    refine_per_level: int = 2
    #: The explore stage's candidates fitted with full effort (a series of fewer than SCREENED_FROM_ROWS rows)
    #: race their starts so (see _pipeline.EXPLORE_START_RACE; None: every start to convergence).
    start_race: StartRace | None = None
    #: Under a time budget, fit one ARD kernel before the search (see SearchPipeline._baseline_first).
    baseline_first: bool = True
    progress: ProgressCallback | None = None
    criterion_name: str = "criterion"
    feature_names: Sequence[str] | None = None
    prefer: str = "processes"


def run_search(fitter: CandidateFitter, X: np.ndarray, y: np.ndarray, grammar: Grammar, settings: SearchSettings, *,
               base_seed: int = 0, extra_initial: Sequence[Expr] = (),
               reserve: Callable[[Callable[[int], float], int], float] | None = None) -> SearchResult:
    """Search ``grammar`` with candidates fitted by ``fitter``; returns a :class:`SearchResult`.

    ``settings.max_depth=None`` gives :func:`automatic_depth`.
    ``extra_initial`` structures join the first level and, like the
    grammar's baselines, are always fitted (e.g. the classifier's constant
    model). When a level has more than ``max_fits_per_depth`` candidates,
    only the most promising (by the fitter's cheap ``screen``) are fitted;
    the others are recorded with status ``"screened out"``. Children that add to a simpler structure
    only what the fitter's likelihood already has (``fitter.duplicates_likelihood``) are not candidates.
    """
    n_features = X.shape[1]
    initial = list(grammar.initial(n_features))
    initial += [expr for expr in extra_initial if expr not in initial]
    explore = with_effort(fitter, settings.explore_effort, X.shape[0])
    if settings.start_race is not None and isinstance(explore, CandidateFitter) and explore.effort == "full":
        # (the depth bests' and the finalists' full-effort refits keep every start: they use ``fitter``)
        explore = dataclasses.replace(explore, start_race=settings.start_race)
    fits = ParallelCandidateFits(
        explore, X, y, base_seed=base_seed, n_jobs=settings.n_jobs, prefer=settings.prefer,
        period_columns=grammar.period_columns(n_features), change_columns=grammar.change_columns(n_features),
        full_fitter=fitter,
    )
    search = StructureSearch(
        fits,
        lambda record: [child for child in grammar.expand(record.structure, n_features)
                        if not fitter.duplicates_likelihood(child) and enough_rows_for(child, X.shape[0])],
        initial=initial,
        max_depth=automatic_depth(n_features) if settings.max_depth is None else settings.max_depth,
        beam_width=settings.beam_width,
        # the standard models are always fitted: the search must not end below them
        protected=set(grammar.baseline_structures(n_features)) | set(extra_initial),
        hint=fits.hint,
        screen=fits.screen,
        prescreen=fits.prescreen,
        prescreen_decides=getattr(explore, "prescreen_decides", False),
        max_fits_per_depth=settings.max_fits_per_depth,
        max_candidates=settings.max_candidates,
        time_budget=settings.time_budget,
        progress=settings.progress,
        criterion_name=settings.criterion_name,
        feature_names=settings.feature_names,
        depth_limit_reason="max_depth reached" if settings.max_depth is not None else "depth limit reached",
        reserve=reserve,
        min_improvement=settings.min_improvement,
        multiplicity_penalty=settings.multiplicity_penalty,
        # (the "screened" effort only where it differs from the full one: see with_effort; a raced full effort
        # fits a level's best again with every start where the race stopped some, RACED_FULL_EFFORT)
        refine=fits.refine if explore.effort != "full" or getattr(explore, "start_race", None) else None,
        refine_per_level=settings.refine_per_level,
        n_jobs=settings.n_jobs,
        refine_cost=full_effort_cost(explore, X.shape[0]),
    )
    return search.run()
