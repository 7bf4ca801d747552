"""The structure search: one greedy/beam loop over a grammar, driven by an ``evaluate`` callback.

:class:`StructureSearch` knows nothing about how a candidate is fitted: it
expands and deduplicates structures, asks for start hints per parent,
applies the budgets (screening, candidate count, time), hands the level to
``evaluate`` and ranks the records it gets back, reports progress, and
decides when to stop. The estimators evaluate candidates with a
:class:`~skgpsearch._candidates.CandidateFitter` in joblib workers
(:class:`ParallelCandidateFits`); :class:`~skgpsearch.KernelSearchCV`
evaluates them with scikit-learn's ``evaluate_candidates``.
"""

from __future__ import annotations

import contextvars
import math
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils.parallel import Parallel, delayed

from ._candidates import OK, SCREENED_OUT, CandidateRecord, candidate_seed
from .grammar import Expr, Grammar

__all__ = [
    "Candidate",
    "LevelReport",
    "ParallelCandidateFits",
    "SearchResult",
    "StructureSearch",
    "automatic_depth",
    "averaged_records",
    "print_progress",
    "refit_finalists",
    "run_search",
    "search_progress",
]

#: Largest depth limit of a search without max_depth (see automatic_depth).
MAX_SEARCH_DEPTH = 10
#: Averaged models below this fraction of the best one's weight are dropped.
MIN_AVERAGING_WEIGHT = 1e-6
#: The columns of ``search_results_``, in order.
RESULT_COLUMNS = ("structure", "depth", "parent", "criterion", "log_marginal_likelihood",
                  "n_hyperparameters", "fit_time", "status", "message", "diagnostics")


@dataclass
class Candidate:
    """A structure to evaluate, with the parent it was expanded from."""

    structure: Expr
    parent_index: int | None = None
    parent: CandidateRecord | None = None
    hints: object = None
    depth: int = 1


@dataclass
class LevelReport:
    """What the progress callback receives after each depth.

    ``elapsed`` counts seconds since the search started; ``criterion_name``
    and ``feature_names`` are for display.
    """

    depth: int
    best: CandidateRecord | None
    n_candidates: int
    n_failed: int
    n_screened: int
    elapsed: float
    criterion_name: str = "criterion"
    feature_names: Sequence[str] | None = None


#: The progress callback of the searches run inside ``search_progress`` (None: ``verbose`` prints).
_PROGRESS_CALLBACK = contextvars.ContextVar("skgpsearch_progress_callback", default=None)


@contextmanager
def search_progress(callback: Callable[[LevelReport | str], None]) -> Iterator[None]:
    """Send the progress of the searches run inside the block to ``callback``.

    ``callback`` receives a :class:`LevelReport` after each depth of a search,
    and short notes as strings (e.g. which one-vs-rest problem a classifier
    starts). Within the block it replaces what ``verbose=1`` would print, and
    reports even when ``verbose=0``. Example: progress on stderr::

        with search_progress(print_progress(file=sys.stderr)):
            model.fit(X, y)
    """
    token = _PROGRESS_CALLBACK.set(callback)
    try:
        yield
    finally:
        _PROGRESS_CALLBACK.reset(token)


def progress_callback(verbose) -> Callable | None:
    """The callback of a search: the one of an enclosing :func:`search_progress`, else printing when ``verbose``."""
    callback = _PROGRESS_CALLBACK.get()
    if callback is not None:
        return callback
    return print_progress() if verbose else None


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


def print_progress(file=None) -> Callable[[LevelReport | str], None]:
    """A progress callback that prints one line per depth (what ``verbose=1`` shows) to ``file`` (stdout)."""

    def report(event: LevelReport | str) -> None:
        if isinstance(event, str):
            print(f"[skgpsearch] {event}", file=file, flush=True)
            return
        best_text = "none" if event.best is None else event.best.structure.to_string(event.feature_names)
        score = -np.inf if event.best is None else event.best.criterion
        screened_text = f", {event.n_screened} more screened out" if event.n_screened else ""
        print(
            f"[skgpsearch] depth {event.depth}: best {best_text}  {event.criterion_name}={score:.3f}  "
            f"({event.n_candidates} candidates, {event.n_failed} failed{screened_text}, {event.elapsed:.1f} s)",
            file=file,
            flush=True,
        )

    return report


def automatic_depth(n_features: int) -> int:
    """Depth limit of a search without ``max_depth``: 3 for one column, one more per further column, at most 10.

    Each level adds one base kernel, so a depth-d search uses at most d
    columns; on one column, deeper greedy searches (measured on the
    extrapolation series) keep improving BIC slowly at 5-10x the time.
    """
    return min(MAX_SEARCH_DEPTH, 2 + n_features)


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
        ``screen(candidates)`` -> one cheap score per candidate; used when a
        level has more than ``max_fits_per_depth`` candidates.
    max_fits_per_depth, max_candidates, time_budget : int, int, float or None
        Budgets (see the estimators).
    progress : callable or None
        Called with a :class:`LevelReport` after each depth.
    criterion_name, feature_names
        For display in the reports.
    require_success : bool, default=True
        Raise ``ValueError`` when every candidate of the first level fails.
    depth_limit_reason : str, default="max_depth reached"
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
        max_fits_per_depth: int | None = None,
        max_candidates: int | None = None,
        time_budget: float | None = None,
        progress: Callable[[LevelReport], None] | None = None,
        require_success: bool = True,
        depth_limit_reason: str = "max_depth reached",
        criterion_name: str = "criterion",
        feature_names: Sequence[str] | None = None,
    ):
        self.evaluate = evaluate
        self.expand = expand
        self.initial = list(initial)
        self.max_depth = max_depth
        self.beam_width = beam_width
        self.protected = set(protected)
        self.hint = hint
        self.screen = screen
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
        self._start = time.perf_counter()
        best_score = -np.inf
        frontier = [(expr, None) for expr in self.initial]
        try:
            for depth in range(1, self.max_depth + 1):
                candidates = self._hint(self._deduplicate(frontier, depth, result), result)
                candidates = self._screen_level(candidates, depth, result)
                candidates = self._apply_candidate_budget(candidates, result)
                if candidates is None:
                    break
                if not candidates:
                    result.stop_reason = "no new candidates"
                    break
                level = self._evaluate_level(candidates, depth, result)
                ranked = self._rank(level, depth, result)
                level_best = ranked[0] if ranked else None
                improved = level_best is not None and result.records[level_best].criterion > best_score
                if improved:
                    best_score = result.records[level_best].criterion
                    result.best_index = level_best
                self._report(depth, level, level_best, result)
                if self._stop(depth, improved, result):
                    break
                frontier = [(child, b) for b in ranked[: self.beam_width] for child in self.expand(result.records[b])]
        except KeyboardInterrupt:
            result.stop_reason = "interrupted"
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
        scores = self.screen(candidates)
        # stable: ties keep the grammar's order
        order = sorted(range(len(candidates)), key=lambda i: (candidates[i].structure not in self.protected, -scores[i]))
        for i in sorted(order[keep:]):
            candidate = candidates[i]
            result.records.append(CandidateRecord(
                candidate.structure,
                status=SCREENED_OUT,
                message=f"screened out: cheap score {scores[i]:.2f} (the {keep} best of {len(candidates)} were fitted)",
                depth=depth,
                parent=None if candidate.parent is None else str(candidate.parent.structure),
                parent_index=candidate.parent_index,
                screen_score=scores[i],
            ))
        return [candidates[i] for i in sorted(order[:keep])]

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

    def _evaluate_level(self, candidates, depth, result):
        """Evaluate a level; records are appended in candidate order as they arrive (kept on an interruption)."""
        elapsed = time.perf_counter() - self._start
        if result.records and self.time_budget is not None and elapsed > self.time_budget:
            result.stop_reason = "time budget reached"
            return []
        deadline = None if self.time_budget is None else self._start + self.time_budget
        indices = []
        for candidate, record in zip(candidates, self.evaluate(candidates, deadline)):
            record.depth = depth
            record.parent = None if candidate.parent is None else str(candidate.parent.structure)
            record.parent_index = candidate.parent_index
            result.records.append(record)
            indices.append(len(result.records) - 1)
        if deadline is not None and time.perf_counter() > deadline:
            result.stop_reason = "time budget reached"
        return indices

    def _rank(self, level, depth, result):
        """The level's usable records, best first (stable: ties keep the evaluation order)."""
        ok = [i for i in level if result.records[i].status == OK]
        if depth == 1 and not ok and self.require_success:
            causes = sorted({result.records[i].message for i in level})
            raise ValueError("Every candidate structure failed to fit; causes: " + "; ".join(causes))
        return sorted(ok, key=lambda i: -result.records[i].criterion)

    def _report(self, depth, level, level_best, result):
        elapsed = time.perf_counter() - self._start
        best = None if level_best is None else result.records[level_best]
        result.levels.append({
            "depth": depth,
            "n_candidates": len(level),
            "best_structure": None if best is None else str(best.structure),
            "best_criterion": -np.inf if best is None else best.criterion,
            "elapsed": elapsed,
        })
        if self.progress is not None:
            self.progress(LevelReport(
                depth=depth,
                best=best,
                n_candidates=len(level),
                n_failed=sum(result.records[i].status == "failed" for i in level),
                n_screened=sum(r.status == SCREENED_OUT and r.depth == depth for r in result.records),
                elapsed=elapsed,
                criterion_name=self.criterion_name,
                feature_names=self.feature_names,
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


class ParallelCandidateFits:
    """The ``evaluate``, ``hint`` and ``screen`` callbacks of a search that fits candidates with a fitter.

    Candidates are fitted in parallel with joblib (any backend); each gets
    its own seed (:func:`candidate_seed`), so results do not depend on
    ``n_jobs``. With a deadline the level is sent in batches of ``n_jobs``
    candidates and the deadline is checked between batches (every finished
    fit is kept).
    """

    def __init__(self, fitter, X, y, *, base_seed=0, n_jobs=None, prefer="processes",
                 period_columns=(), change_columns=()):
        self.fitter, self.X, self.y = fitter, X, y
        self.base_seed, self.n_jobs, self.prefer = base_seed, n_jobs, prefer
        self.period_columns, self.change_columns = period_columns, change_columns

    def _warm_state(self, candidate):
        return None if candidate.parent is None else candidate.parent.warm_state

    def __call__(self, candidates, deadline=None):
        batch = len(candidates) if deadline is None else max(1, effective_n_jobs(self.n_jobs))
        for first in range(0, len(candidates), batch):
            chunk = candidates[first : first + batch]
            # a generator, so that the fits finished before an interruption are kept
            yield from Parallel(n_jobs=self.n_jobs, prefer=self.prefer, return_as="generator")(
                delayed(self.fitter)(c.structure, self.X, self.y, candidate_seed(self.base_seed, c.structure),
                                     self._warm_state(c), c.hints)
                for c in chunk
            )
            if deadline is not None and time.perf_counter() > deadline:
                return

    def hint(self, parent):
        return self.fitter.start_hints(parent, self.X, self.y, self.period_columns, self.change_columns)

    def screen(self, candidates):
        return Parallel(n_jobs=self.n_jobs, prefer=self.prefer)(
            delayed(self.fitter.screen)(c.structure, self.X, self.y, candidate_seed(self.base_seed, c.structure),
                                        self._warm_state(c), c.hints)
            for c in candidates
        )


def run_search(
    fitter,
    X: np.ndarray,
    y: np.ndarray,
    grammar: Grammar,
    *,
    max_depth: int | None,
    beam_width: int = 1,
    n_jobs: int | None = None,
    base_seed: int = 0,
    max_candidates: int | None = None,
    time_budget: float | None = None,
    prefer: str = "processes",
    max_fits_per_depth: int | None = None,
    extra_initial: Sequence[Expr] = (),
    progress: Callable[[LevelReport], None] | None = None,
    criterion_name: str = "criterion",
    feature_names: Sequence[str] | None = None,
) -> SearchResult:
    """Search ``grammar`` with candidates fitted by ``fitter``; returns a :class:`SearchResult`.

    ``max_depth=None`` gives :func:`automatic_depth`. ``extra_initial``
    structures join the first level and, like the grammar's baselines, are
    always fitted (e.g. the classifier's constant model). When a level has
    more than ``max_fits_per_depth`` candidates and the fitter can
    ``screen``, only the most promising are fitted; the others are recorded
    with status ``"screened out"``.
    """
    n_features = X.shape[1]
    initial = list(grammar.initial(n_features))
    initial += [expr for expr in extra_initial if expr not in initial]
    fits = ParallelCandidateFits(
        fitter, X, y, base_seed=base_seed, n_jobs=n_jobs, prefer=prefer,
        period_columns=sorted({b.columns[0] for b in grammar.base_set(n_features) if b.kind.periodic}),
        change_columns=getattr(grammar, "change_columns", lambda n: [])(n_features),
    )
    search = StructureSearch(
        fits,
        lambda record: grammar.expand(record.structure, n_features),
        initial=initial,
        max_depth=automatic_depth(n_features) if max_depth is None else max_depth,
        beam_width=beam_width,
        # the standard models are always fitted: the search must not end below them
        protected=set(getattr(grammar, "baseline_structures", lambda n: [])(n_features)) | set(extra_initial),
        hint=fits.hint,
        screen=fits.screen if hasattr(fitter, "screen") else None,
        max_fits_per_depth=max_fits_per_depth,
        max_candidates=max_candidates,
        time_budget=time_budget,
        progress=progress,
        criterion_name=criterion_name,
        feature_names=feature_names,
        depth_limit_reason="max_depth reached" if max_depth is not None else "depth limit reached",
    )
    return search.run()


def averaged_records(result: SearchResult, k: int | None) -> tuple[list, np.ndarray]:
    """The records of the ``k`` best fitted structures (the chosen one first) and their weights.

    Weights are exp(criterion − best criterion), normalised; structures below
    ``MIN_AVERAGING_WEIGHT`` of the best's weight are left out. ``k`` of
    ``None`` or 1 gives the chosen structure alone.
    """
    best = result.best
    chosen = [best]
    if k is not None and k > 1:
        ranked = sorted(
            (r for r in result.records if r.status == OK and np.isfinite(r.criterion) and r is not best),
            key=lambda r: -r.criterion,
        )
        chosen += [r for r in ranked[: k - 1] if r.criterion - best.criterion > math.log(MIN_AVERAGING_WEIGHT)]
    scores = np.array([r.criterion for r in chosen], dtype=float)
    weights = np.exp(scores - scores.max())
    return chosen, weights / weights.sum()


def finalists(records: Sequence[CandidateRecord], k: int) -> list[CandidateRecord]:
    """The ``k`` best usable records with distinct structures, best first."""
    ranked = sorted((r for r in records if r.status == OK and np.isfinite(r.criterion)), key=lambda r: -r.criterion)
    chosen, seen = [], set()
    for record in ranked:
        if record.structure.without_values() not in seen:
            seen.add(record.structure.without_values())
            chosen.append(record)
        if len(chosen) == k:
            break
    return chosen


def halving_sizes(first: int, last: int, factor: int = 5) -> list[int]:
    """Rows of successive halving's rungs after a search on ``first`` rows: ``factor`` times more per rung, up to ``last``."""
    sizes = [first]
    while sizes[-1] * factor < last:
        sizes.append(sizes[-1] * factor)
    return sizes[1:] + [last]


def as_finalist(refitted: CandidateRecord, record: CandidateRecord, n_rows: int) -> CandidateRecord:
    """A finalist's refit keeps the search's bookkeeping of its record and says on how many rows it was fitted."""
    refitted.depth, refitted.parent = record.depth, record.parent
    note = f"finalist refitted on {n_rows} rows"
    refitted.message = f"{note}: {refitted.message}" if refitted.message else note
    return refitted


def refit_search_finalists(result: SearchResult, rungs: Sequence[tuple[np.ndarray, Callable]], first_keep: int, *,
                           n_jobs: int | None = None, progress: Callable | None = None) -> list[CandidateRecord]:
    """:func:`refit_finalists` on a search's result: the refits join ``result.records``.

    Returns the usable records of the last rung, best first; empty when the
    halving stopped before it (every refit of a rung failed). On success the
    stop reason names the rungs.
    """
    rounds = refit_finalists(result.records, rungs, first_keep, n_jobs=n_jobs, progress=progress)
    for records in rounds:
        result.records.extend(records)
    last = [r for r in rounds[-1] if r.status == OK] if len(rounds) == len(rungs) else []
    if last:
        result.stop_reason += f"; finalists refitted on {', '.join(str(len(rows)) for rows, _ in rungs)} rows"
    return last


def refit_finalists(
    records: Sequence[CandidateRecord],
    rungs: Sequence[tuple[np.ndarray, Callable]],
    first_keep: int,
    *,
    n_jobs: int | None = None,
    progress: Callable | None = None,
) -> list[list[CandidateRecord]]:
    """Successive halving of a search's best structures over growing sets of rows.

    The ``first_keep`` best distinct structures of ``records`` (a search on a
    subset of the rows) are refitted on the rows of the first rung, starting
    from their fitted values; the better half of them on the next rung's
    rows, and so on -- so that a search on large data costs one search on a
    subset plus a few fits on more rows. ``rungs`` are ``(rows, fit)`` pairs,
    where ``fit(record, rows)`` returns the refitted record (criteria on the
    same rows are comparable; across rungs they are not).

    Returns
    -------
    list of lists of CandidateRecord
        The refitted records of each rung, best first; the best of the last
        rung is the chosen model.
    """
    current = finalists(records, first_keep)
    rounds = []
    for i, (rows, fit) in enumerate(rungs):
        refits = Parallel(n_jobs=n_jobs, prefer="processes")(delayed(fit)(record, rows) for record in current)
        refits = sorted(refits, key=lambda r: -r.criterion if r.status == OK else np.inf)
        rounds.append(refits)
        if progress is not None:
            best = refits[0] if refits and refits[0].status == OK else None
            text = "none" if best is None else f"{best.structure}  criterion={best.criterion:.3f}"
            progress(f"finalists on {len(rows)} rows: best {text} ({len(refits)} refitted)")
        usable = [r for r in refits if r.status == OK]
        if not usable:
            break
        keep = len(usable) if i == len(rungs) - 1 else max(1, len(usable) // 2)
        current = usable[:keep]
    return rounds

