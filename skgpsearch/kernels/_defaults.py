"""Data-aware initial values and bounds of base-kernel hyperparameters.

The defaults, per hyperparameter (v = variance of the target, 1 without
one; for a base kernel on several columns the spread is the Euclidean norm of
the per-column standard deviations and the range that of the ranges):

================  =========================================  ===========================================
hyperparameter    initial value                              bounds
================  =========================================  ===========================================
variance          v (LIN: v / Σ var(x_c), so that the        initial × [1e-6, 1e4]
                  linear term starts with variance v)
lengthscale       spread of the columns                      [½ smallest gap between distinct values,
(SE, RQ, M*)      (at least 2 × the floor, if any)           100 × range]; with a lengthscale floor
                                                             (discretised columns) at least the
                                                             smallest gap
alpha (RQ)        1                                          [0.1, 1e3]
period (PER)      geometric mean of its bounds               [2 × median spacing of the distinct values
                                                             (Nyquist for regular sampling; the
                                                             smallest gap of irregular inputs would
                                                             admit periods that fit noise), or 2 ×
                                                             the step of the grid they lie on when
                                                             some are missing (days sampled at
                                                             random), range of the column]
lengthscale (PER) 1 (relative to the period)                 [0.05, 50]
offset (LIN)      mean of the column                         [min − range, max + range]
variance (WN)     v / 10                                     v × [1e-6, 10]
================  =========================================  ===========================================

A fixed amplitude (all but one factor of a product, see
:meth:`skgpsearch.grammar.Expr.free_amplitudes`) is set to the *unit
amplitude*: 1 for every kind but LIN, 1 / Σ var(x_c) for LIN, so that the
factor has unit prior variance on the data.

Degenerate columns (constant, or a single distinct value) fall back to a
unit scale, so that every initial value lies strictly inside its bounds.

Each rule is implemented once in :mod:`skgpsearch.kernels._specs`, and each
kind's spec names the rules of its hyperparameters.
"""

from __future__ import annotations

from ._specs import _inside, get_spec
from ._summary import DataSummary

__all__ = ["default_hyperparameters", "change_defaults", "unit_amplitude"]


def unit_amplitude(kind: str, columns: tuple[int, ...], summary: DataSummary) -> float:
    """Value of a fixed amplitude: the one giving the factor unit prior variance."""
    return get_spec(kind).unit_amplitude(columns, summary)


def default_hyperparameters(kind: str, columns: tuple[int, ...], summary: DataSummary) -> dict[str, tuple]:
    """Initial values and bounds of a base kernel's hyperparameters.

    The rules are those of the module docstring; each kind's spec
    (``KernelSpec.defaults``, see :func:`get_spec`) lists the ones it uses.

    Parameters
    ----------
    kind : str
        Catalogue name, e.g. ``"SE"``.
    columns : tuple of int
        Columns the kernel acts on (empty for ``C`` and ``WN``).
    summary : DataSummary
        Statistics of the training data.

    Returns
    -------
    dict
        ``{name: (initial value, (lower, upper))}``; a per-column
        hyperparameter (LIN's offset) has arrays of one value per column.
    """
    summary._check(columns)
    return get_spec(kind).default_hyperparameters(columns, summary)


def change_defaults(operator: str, column: int, summary: DataSummary) -> dict[str, tuple[float, tuple[float, float]]]:
    """Initial values and bounds of a change operator's own hyperparameters.

    With the column's range [a, b], its median spacing h and span r = b − a:

    ========  ===================================  ====================================
    name      initial value                        bounds
    ========  ===================================  ====================================
    location  the middle of the range              [a, b]
    width     r / 20                               [h / 10, r / 8]
    duration  r / 4 (CW)                           [2 h, r]
    ========  ===================================  ====================================

    A transition narrower than a tenth of the spacing is a step between two
    samples: its exact width cannot be told from the data. One wider than an
    eighth of the span (its 10-90 % rise takes 4.4 widths) is no change but a
    sigmoid trend, which flattens beyond the data: with the span as bound, Mauna
    Loa's CO2 chose ``PER + CP(RQ, C)`` with a width of 0.44 of the span, a
    rising level that the forecast saturated.

    Parameters
    ----------
    operator : {"CP", "CW"}
    column : int
    summary : DataSummary

    Returns
    -------
    dict
        ``{name: (initial value, (lower, upper))}``.
    """
    summary._check((column,))
    low, high = float(summary.minimum[column]), float(summary.maximum[column])
    span = high - low if high > low else 1.0
    gap = summary.typical_gap((column,)) or span / 100.0
    out = {"location": (0.5 * (low + high), (low, high if high > low else low + span))}
    if operator == "CW":
        out["duration"] = _inside(span / 4.0, min(2.0 * gap, span / 8.0), span)
    out["width"] = _inside(span / 20.0, min(gap / 10.0, span / 200.0), span / 8.0)
    return out
