"""The staged search: explore the grammar, refit the finalists, select the model.

Every structure search of the estimators runs these three stages, in
:class:`SearchPipeline`:

**explore**
    The greedy or beam search over the grammar (:func:`run_search`). On
    large data (more than ``EXPLORE_ROWS`` rows, a criterion computed from
    the evidence alone, and a model fitter that explores samples) it runs on
    ``EXPLORE_ROWS`` rows: the first rows of the model fitter's nested row
    order, with a data summary of those rows.
**finalists**
    The structures the final model is chosen from, fitted on the rows the
    final model conditions on:

    - after exploring a sample: the ``FIRST_FINALISTS`` best distinct
      structures (the model fitter's baselines, fitted on the sample,
      compete for those places) are refitted on ``HALVING_FACTOR`` times as
      many rows from their fitted values, the better half of them on
      ``HALVING_FACTOR`` times more, and so on up to all rows (at most
      ``model_fitter.max_rows``): successive halving;
    - after exploring all rows: the search's best, re-optimised on all rows
      from its optimum when the search optimised on a subset of the rows
      (the polished fit replaces it when it is at least as good), and the
      baselines, fitted on all rows with full effort.

    Failure policy: a finalist whose fit fails is recorded and left out; if
    every finalist of a rung fails, the exploration's best is kept, on the
    rows it was fitted on, and the stop reason says so.
**select**
    The finalist with the best criterion; with ``model_averaging=k``, also
    the ``k - 1`` best other structures fitted on the same rows, weighted by
    exp(criterion − selected criterion) (structures below
    ``MIN_AVERAGING_WEIGHT`` of the selected one's weight are left out).

The stages know nothing of engines: a :class:`ModelFitter` (regression:
:class:`~skgpsearch._search._regression.RegressionModelFitter`;
classification:
:class:`~skgpsearch._search._classification.BinaryClassificationModelFitter`)
says which candidate fitters they use, which rows they may sample, and which
baselines compete; it builds the fitted models of the selected records.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from ..criteria import SelectionCriterion
from ..grammar import Expr, Grammar
from ._candidate_fitter import CandidateFitter
from ._loop import SearchResult, SearchSettings, run_search
from ._progress import ProgressCallback
from ._records import OK, CandidateRecord, candidate_seed

__all__ = [
    "EXPLORE_ROWS",
    "FIRST_FINALISTS",
    "HALVING_FACTOR",
    "LAPLACE_POSTERIOR_ROWS",
    "Exploration",
    "Finalists",
    "ModelFitter",
    "PipelineResult",
    "SearchPipeline",
    "distinct_best",
    "halving_sizes",
    "refit_finalists",
]

#: The stages' sizes, in one place. Above EXPLORE_ROWS rows the search explores a sample of that many
#: rows; its FIRST_FINALISTS best distinct structures are refitted on HALVING_FACTOR times as many rows
#: per rung, halving their number. The Laplace engine is exact (O(n³) time, O(n²) memory per fit), so a
#: classifier's last rung, the rows its posterior conditions on, has at most LAPLACE_POSTERIOR_ROWS rows.
EXPLORE_ROWS = 2000
FIRST_FINALISTS = 4
HALVING_FACTOR = 5
LAPLACE_POSTERIOR_ROWS = 5000
#: Averaged models below this fraction of the selected one's weight are dropped.
MIN_AVERAGING_WEIGHT = 1e-6


class ModelFitter(Protocol):
    """What the pipeline's stages need from a task: engines, rows and baselines for one training set.

    ``X`` and ``y`` are the training rows on the fitting scale (normalised
    targets, or labels in {−1, +1}).
    """

    X: np.ndarray
    y: np.ndarray
    #: Structures the search always fits at depth 1 besides the grammar's (e.g. the constant model).
    extra_initial: tuple[Expr, ...]
    #: Whether a large training set may be explored on a sample (then refitted by successive halving).
    explores_samples: bool
    #: Whether the explore stage fits every candidate with full effort on the rows it is given; if not,
    #: the selected structure is polished on all rows.
    explore_fits_are_final: bool
    #: The most rows a finalist is fitted on (None: all).
    max_rows: int | None

    @property
    def candidate_fitter(self) -> CandidateFitter:
        """The explore stage's fitter on all rows."""

    def row_order(self, seed: int) -> np.ndarray:
        """A permutation of the rows; samples and rungs are its prefixes, so that they are nested."""

    def sample_fitter(self, rows: np.ndarray) -> CandidateFitter:
        """The explore stage's fitter on a sample of the rows (its starts and bounds from the sample)."""

    def refit_fitter(self, n_rows: int) -> CandidateFitter:
        """The fitter of finalists refitted on ``n_rows`` rows from their fitted values (full effort)."""

    def baseline_fitter(self) -> CandidateFitter:
        """The fitter of the baselines on all rows (full effort)."""

    def baseline_structures(self, grammar: Grammar) -> list[Expr]:
        """Structures that compete with the search's best at the end (never expanded)."""


@dataclass
class Exploration:
    """What the explore stage found: the search's result, the rows it saw, and the fitter it used."""

    result: SearchResult
    fitter: CandidateFitter
    #: Sorted rows of the sample explored (None: all rows).
    rows: np.ndarray | None = None
    #: The nested row order the sample is a prefix of (None without a sample).
    order: np.ndarray | None = None


@dataclass
class Finalists:
    """The finalist stage's records, all fitted on the same rows: what select chooses from."""

    #: The records the final model is chosen from.
    records: list[CandidateRecord]
    #: Every usable record fitted on those rows (the pool of model averaging), the finalists included.
    comparable: list[CandidateRecord]
    #: Sorted rows they were fitted on (None: all rows).
    rows: np.ndarray | None = None


@dataclass
class PipelineResult:
    """The outcome of a staged search.

    ``search`` holds every record (explored, baselines, finalists' refits),
    the search path and the stop reason; ``selected`` the selected record
    first, then the averaged ones, with their ``weights``; ``rows`` the rows
    they were fitted on (None: all).
    """

    search: SearchResult
    selected: list[CandidateRecord]
    weights: np.ndarray
    rows: np.ndarray | None = None

    @property
    def best(self) -> CandidateRecord:
        return self.selected[0]


class SearchPipeline:
    """Explore, finalists, select (see the module docstring); :meth:`run` runs the three stages.

    Parameters
    ----------
    settings : SearchSettings
        Depth, beam, budgets, parallelism, progress and ``model_averaging``.
    """

    def __init__(self, settings: SearchSettings) -> None:
        self.settings = settings

    def run(self, model_fitter: ModelFitter, grammar: Grammar, criterion: SelectionCriterion,
            seed: int) -> PipelineResult:
        exploration = self.explore(model_fitter, grammar, criterion, seed)
        finalists = self.finalists(model_fitter, exploration, grammar, seed)
        return self.select(exploration, finalists)

    # -- explore -----------------------------------------------------------------------------
    def explore(self, model_fitter: ModelFitter, grammar: Grammar, criterion: SelectionCriterion,
                seed: int) -> Exploration:
        """The grammar search, on all rows or on a sample of ``EXPLORE_ROWS`` of them."""
        X, y = model_fitter.X, model_fitter.y
        # a criterion that reads a model scores it on the estimator's data, all rows: no sample then
        if model_fitter.explores_samples and criterion.evidence_only and X.shape[0] > EXPLORE_ROWS:
            order = model_fitter.row_order(seed)
            rows = np.sort(order[:EXPLORE_ROWS])
            fitter = model_fitter.sample_fitter(rows)
            result = run_search(fitter, X[rows], y[rows], grammar, self.settings, base_seed=seed,
                                extra_initial=model_fitter.extra_initial)
            return Exploration(result, fitter, rows, order)
        fitter = model_fitter.candidate_fitter
        result = run_search(fitter, X, y, grammar, self.settings, base_seed=seed,
                            extra_initial=model_fitter.extra_initial)
        return Exploration(result, fitter)

    # -- finalists -----------------------------------------------------------------------------
    def finalists(self, model_fitter: ModelFitter, exploration: Exploration, grammar: Grammar,
                  seed: int) -> Finalists:
        """The records select chooses from, fitted on the final rows (see the module docstring)."""
        if exploration.rows is None:
            return self._finalists_on_all_rows(model_fitter, exploration, grammar, seed)
        return self._finalists_by_halving(model_fitter, exploration, grammar, seed)

    def _finalists_on_all_rows(self, model_fitter, exploration, grammar, seed):
        result = exploration.result
        X, y = model_fitter.X, model_fitter.y
        best = result.best
        polished = best
        if not model_fitter.explore_fits_are_final:
            polished = _polished(model_fitter.refit_fitter(X.shape[0]), best, X, y, seed)
        records = [polished]
        baselines = [s for s in model_fitter.baseline_structures(grammar) if s != best.structure]
        if baselines:
            fitter = model_fitter.baseline_fitter()
            for structure in baselines:
                record = fitter(structure, X, y, candidate_seed(seed, structure))
                record.depth, record.parent = 1, None
                record.message = record.message or "baseline, fitted on all rows after the search"
                result.records.append(record)
                records.append(record)
        comparable = [polished if r is best else r for r in result.records]
        return Finalists([r for r in records if r.status == OK], [r for r in comparable if r.status == OK])

    def _finalists_by_halving(self, model_fitter, exploration, grammar, seed):
        result, rows, order = exploration.result, exploration.rows, exploration.order
        X, y = model_fitter.X, model_fitter.y
        for structure in model_fitter.baseline_structures(grammar):
            if structure == result.best.structure:
                continue
            # on the sample they compete for the finalist places
            record = exploration.fitter(structure, X[rows], y[rows], candidate_seed(seed, structure))
            record.depth, record.parent = 1, None
            record.message = record.message or "baseline, fitted on the search's rows"
            result.records.append(record)
        explored = list(result.records)
        last_size = X.shape[0] if model_fitter.max_rows is None else min(X.shape[0], model_fitter.max_rows)

        def refit(record, rung_rows):
            fitter = model_fitter.refit_fitter(rung_rows.size)
            refitted = fitter(record.structure, X[rung_rows], y[rung_rows], candidate_seed(seed, record.structure),
                              record.warm_state)
            return _as_finalist(refitted, record, rung_rows.size)

        rungs = [(np.sort(order[:size]), refit) for size in halving_sizes(rows.size, last_size)]
        rounds = refit_finalists(explored, rungs, FIRST_FINALISTS, n_jobs=self.settings.n_jobs,
                                 progress=self.settings.progress)
        for records in rounds:
            result.records.extend(records)
        last = [r for r in rounds[-1] if r.status == OK] if len(rounds) == len(rungs) else []
        if last:
            result.stop_reason += f"; finalists refitted on {', '.join(str(len(r)) for r, _ in rungs)} rows"
            return Finalists(last, last, rungs[-1][0])
        result.stop_reason += (f"; every finalist failed to fit on more rows, the model uses the search's "
                               f"{rows.size}")
        kept = distinct_best(explored, 1)
        return Finalists(kept, [r for r in explored if r.status == OK and np.isfinite(r.criterion)], rows)

    # -- select --------------------------------------------------------------------------------
    def select(self, exploration: Exploration, finalists: Finalists) -> PipelineResult:
        """The finalist with the best criterion, and the models averaged with it (``model_averaging``)."""
        selected = finalists.records[0]
        for record in finalists.records[1:]:
            if record.criterion > selected.criterion:
                selected = record
        chosen = [selected]
        k = self.settings.model_averaging
        if k is not None and k > 1:
            ranked = sorted((r for r in finalists.comparable if np.isfinite(r.criterion) and r is not selected),
                            key=lambda r: -r.criterion)
            chosen += [r for r in ranked[: k - 1]
                       if r.criterion - selected.criterion > math.log(MIN_AVERAGING_WEIGHT)]
        scores = np.array([r.criterion for r in chosen], dtype=float)
        weights = np.exp(scores - scores.max())
        return PipelineResult(exploration.result, chosen, weights / weights.sum(), finalists.rows)


def _polished(fitter: CandidateFitter, record: CandidateRecord, X: np.ndarray, y: np.ndarray,
              seed: int) -> CandidateRecord:
    """The record's structure re-optimised on all rows from its optimum; the record if that is not better.

    A subset of a few hundred rows ranks structures well but leaves their
    hyperparameters short of the full data's optimum (on the 449-row
    Wisconsin breast-cancer data, 404 training rows per fold, an ARD model
    optimised on 300 of them made 6.5 % test error over 10 folds, on all of
    them 4.7 %). The search's bookkeeping (depth, parent, seed) stays that
    of the record.
    """
    refit = fitter(record.structure, X, y, seed, warm_state=record.warm_state)
    if not refit.ok or not refit.log_marginal_likelihood >= record.log_marginal_likelihood:
        return record
    return dataclasses.replace(record, **{key: getattr(refit, key) for key in (
        "structure", "theta", "warm_state", "latent_start", "noise_variance", "log_marginal_likelihood", "criterion",
        "diagnostics")})


def _as_finalist(refitted: CandidateRecord, record: CandidateRecord, n_rows: int) -> CandidateRecord:
    """A finalist's refit keeps the search's bookkeeping of its record and says on how many rows it was fitted."""
    refitted.depth, refitted.parent = record.depth, record.parent
    note = f"finalist refitted on {n_rows} rows"
    refitted.message = f"{note}: {refitted.message}" if refitted.message else note
    return refitted


def distinct_best(records: Sequence[CandidateRecord], k: int) -> list[CandidateRecord]:
    """The ``k`` best usable records with distinct structures, best first."""
    ranked = sorted((r for r in records if r.status == OK and np.isfinite(r.criterion)), key=lambda r: -r.criterion)
    chosen, seen = [], set()
    for record in ranked:
        if record.structure not in seen:
            seen.add(record.structure)
            chosen.append(record)
        if len(chosen) == k:
            break
    return chosen


def halving_sizes(first: int, last: int, factor: int | None = None) -> list[int]:
    """Rows of the rungs after a search on ``first`` rows: ``factor`` times more per rung, up to ``last``."""
    factor = HALVING_FACTOR if factor is None else factor
    sizes = [first]
    while sizes[-1] * factor < last:
        sizes.append(sizes[-1] * factor)
    return sizes[1:] + [last]


def refit_finalists(
    records: Sequence[CandidateRecord],
    rungs: Sequence[tuple[np.ndarray, Callable[[CandidateRecord, np.ndarray], CandidateRecord]]],
    first_keep: int,
    *,
    n_jobs: int | None = None,
    progress: ProgressCallback | None = None,
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
        The refitted records of each rung, best first (fewer rounds than
        rungs when every refit of a rung failed); the best of the last rung
        is the chosen model.
    """
    current = distinct_best(records, first_keep)
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
