"""Progress of a search: what a callback receives, the printer behind ``verbose``, and ``search_progress``."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from ..grammar import Base, Expr, Product, Sum
from ._records import CandidateRecord

__all__ = ["LevelReport", "ProgressCallback", "cost_text", "print_progress", "progress_callback", "search_progress",
           "structure_label"]

#: A progress line names a structure of more base kernels than this by its shape: one ARD kernel over 64
#: columns had filled several kilobytes of each line.
LABELLED_BASE_KERNELS = 8


@dataclass
class LevelReport:
    """What the progress callback receives after each depth.

    ``elapsed`` counts seconds since the search started, ``level_seconds`` those
    of this depth; ``criterion_name`` and ``feature_names`` are for display.
    """

    depth: int
    best: CandidateRecord | None
    n_candidates: int
    n_failed: int
    n_screened: int
    elapsed: float
    criterion_name: str = "criterion"
    feature_names: Sequence[str] | None = None
    level_seconds: float | None = None
    #: Likelihood evaluations of the depth's candidates (screening included), and their rows summed.
    n_evaluations: int = 0
    evaluated_rows: int = 0
    #: Seconds of ``time_budget`` left (None without one).
    time_left: float | None = None


#: What a progress callback receives: a report after each depth, or a short note.
ProgressCallback = Callable[["LevelReport | str"], None]

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


def progress_callback(verbose: int | bool) -> ProgressCallback | None:
    """The callback of a search: the one of an enclosing :func:`search_progress`, else printing when ``verbose``."""
    callback = _PROGRESS_CALLBACK.get()
    if callback is not None:
        return callback
    return print_progress() if verbose else None


def print_progress(file: TextIO | None = None) -> ProgressCallback:
    """A progress callback that prints one line per depth (what ``verbose=1`` shows) to ``file`` (stdout)."""

    def report(event: LevelReport | str) -> None:
        if isinstance(event, str):
            print(f"[skgpsearch] {event}", file=file, flush=True)
            return
        best_text = "none" if event.best is None else structure_label(event.best.structure, event.feature_names)
        score = -np.inf if event.best is None else event.best.criterion
        screened_text = f", {event.n_screened} more screened out" if event.n_screened else ""
        cost = f", {cost_text(event.n_evaluations, event.evaluated_rows)}" if event.n_evaluations else ""
        candidates = f"{event.n_candidates} candidate{'' if event.n_candidates == 1 else 's'}"
        left = "" if event.time_left is None else f", {event.time_left:.1f} s left"
        this_depth = "" if event.level_seconds is None else f"{event.level_seconds:.1f} s for this depth, "
        print(
            f"[skgpsearch] depth {event.depth}: best {best_text}  {event.criterion_name}={score:.3f}  "
            # (the search's own clock: a classifier's one-vs-rest searches each start from 0)
            f"({candidates}, {event.n_failed} failed{screened_text}{cost}; {this_depth}{event.elapsed:.1f} s since the "
            f"search began{left})",
            file=file,
            flush=True,
        )

    return report


def cost_text(n_evaluations: int, evaluated_rows: int) -> str:
    """"N likelihood evaluations of R rows on average" (the cheap ones run on subsets of the rows)."""
    rows = evaluated_rows / n_evaluations if n_evaluations else 0.0
    return f"{n_evaluations} likelihood evaluations of {rows:.0f} rows on average"


def structure_label(structure: Expr, names: Sequence[str] | None = None) -> str:
    """A structure for a progress line: its text (in column ``names``), or, beyond LABELLED_BASE_KERNELS base
    kernels (or columns of one), its shape: "one ARD SE kernel over 64 columns (0, 1, ..., 63)" for a product of
    one kind over distinct single columns ("an additive SE kernel ..." for such a sum, "an isotropic SE kernel
    ..." for one over many columns), else its first base kernels and how many there are in all."""
    text = structure.to_string(names)
    leaves = structure.leaves

    def columns_text(columns):
        shown = [str(names[c]) if names is not None else str(c) for c in (columns[0], columns[1], columns[-1])]
        return f"{len(columns)} columns ({shown[0]}, {shown[1]}, ..., {shown[2]})"

    if isinstance(structure, Base) and len(structure.columns) > LABELLED_BASE_KERNELS:
        return f"an isotropic {structure.kind.name} kernel over {columns_text(structure.columns)}"
    if len(leaves) <= LABELLED_BASE_KERNELS:
        return text
    columns = [leaf.columns[0] for leaf in leaves if isinstance(leaf, Base) and len(leaf.columns) == 1]
    kinds = {leaf.kind.name for leaf in leaves}
    if len(kinds) == 1 and len(set(columns)) == len(leaves) and isinstance(structure, (Product, Sum)):
        shape = "one ARD" if isinstance(structure, Product) else "an additive"
        return f"{shape} {kinds.pop()} kernel over {columns_text(columns)}"
    return f"{text[:80]}... ({len(leaves)} base kernels)"
