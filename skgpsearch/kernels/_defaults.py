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
alpha (RQ)        1                                          [1e-3, 1e3]
period (PER)      geometric mean of its bounds               [2 × median spacing of the distinct values
                                                             (Nyquist for regular sampling; the
                                                             smallest gap of irregular inputs would
                                                             admit periods that fit noise),
                                                             range of the column]
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

from dataclasses import dataclass

import numpy as np

from ._specs import _inside, get_spec

__all__ = ["DataSummary", "default_hyperparameters", "change_defaults", "discrete_columns", "unit_amplitude"]


@dataclass(frozen=True)
class DataSummary:
    """Per-column statistics that the default hyperparameters are derived from.

    Build it with :meth:`from_data`; the fields are arrays of shape
    (n_features,) except ``target_variance``.
    """

    mean: np.ndarray
    std: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    min_gap: np.ndarray
    target_variance: float = 1.0
    #: Per-column median gap between consecutive distinct values (None: use ``min_gap``).
    median_gap: np.ndarray | None = None
    #: Per-column lower bound of lengthscales (nan: none), e.g. for discretised features.
    lengthscale_floor: np.ndarray | None = None
    #: Per-column: whether the floor is the spacing of a continuous column (``spacing_floor``).
    spacing_floored: np.ndarray | None = None

    @classmethod
    def from_data(cls, X, y=None, discrete_features=None, spacing_floor=False):
        """Summarise training inputs ``X`` (n_samples, n_features) and optional targets ``y``.

        ``discrete_features`` (a boolean mask of the columns) puts the
        lengthscale floor of those columns at their smallest gap between
        distinct values (see :func:`discrete_columns`). ``spacing_floor=True``
        puts the floor of every other column at its median spacing of distinct
        values (the typical distance to the nearest neighbour on that column):
        a shorter lengthscale separates almost every pair of points, so the
        kernel acts as white noise on the data.
        """
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[:, np.newaxis]
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}.")
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinity.")
        gaps = np.empty(X.shape[1])
        median_gaps = np.empty(X.shape[1])
        for j in range(X.shape[1]):
            diffs = np.diff(np.unique(X[:, j]))
            gaps[j] = diffs.min() if diffs.size else np.nan
            median_gaps[j] = np.median(diffs) if diffs.size else np.nan
        target_variance = 1.0
        if y is not None:
            y = np.asarray(y, dtype=float)
            if not np.all(np.isfinite(y)):
                raise ValueError("y contains NaN or infinity.")
            var = float(np.var(y)) if y.size > 1 else 0.0
            target_variance = var if var > 0 else 1.0
        floor = None
        mask = np.zeros(X.shape[1], dtype=bool)
        if discrete_features is not None:
            mask = np.asarray(discrete_features, dtype=bool)
            if mask.shape != (X.shape[1],):
                raise ValueError(f"discrete_features must have one entry per column ({X.shape[1]}).")
            floor = np.where(mask, gaps, np.nan)
        spacing_floored = None
        if spacing_floor:
            floor = np.where(mask, gaps, median_gaps)
            spacing_floored = ~mask & np.isfinite(median_gaps)
        return cls(
            mean=X.mean(axis=0),
            std=X.std(axis=0),
            minimum=X.min(axis=0),
            maximum=X.max(axis=0),
            min_gap=gaps,
            target_variance=target_variance,
            lengthscale_floor=floor,
            median_gap=median_gaps,
            spacing_floored=spacing_floored,
        )

    @classmethod
    def unit(cls, n_features):
        """Summary of standardised data (unit scales), used when no data is given."""
        ones = np.ones(n_features)
        return cls(
            mean=np.zeros(n_features),
            std=ones,
            minimum=-2.0 * ones,
            maximum=2.0 * ones,
            min_gap=0.01 * ones,
            target_variance=1.0,
        )

    @property
    def n_features(self):
        return self.mean.shape[0]

    def _check(self, columns):
        for c in columns:
            if c < 0 or c >= self.n_features:
                raise ValueError(
                    f"The structure uses column {c}, but the data has {self.n_features} columns."
                )

    def spread(self, columns):
        s = float(np.sqrt(np.sum(self.std[list(columns)] ** 2)))
        return s if s > 0 else 1.0

    def range(self, columns):
        cols = list(columns)
        r = float(np.sqrt(np.sum((self.maximum[cols] - self.minimum[cols]) ** 2)))
        return r if r > 0 else 1.0

    def lengthscale_floor_of(self, columns):
        """The largest lengthscale floor among ``columns`` (None without one)."""
        if self.lengthscale_floor is None:
            return None
        floors = self.lengthscale_floor[list(columns)]
        floors = floors[np.isfinite(floors) & (floors > 0)]
        return float(floors.max()) if floors.size else None

    def smallest_gap(self, columns):
        gaps = self.min_gap[list(columns)]
        gaps = gaps[np.isfinite(gaps) & (gaps > 0)]
        return float(gaps.min()) if gaps.size else None

    def typical_gap(self, columns):
        """The largest median spacing of distinct values among ``columns`` (None if none)."""
        source = self.min_gap if self.median_gap is None else self.median_gap
        gaps = source[list(columns)]
        gaps = gaps[np.isfinite(gaps) & (gaps > 0)]
        return float(gaps.max()) if gaps.size else None


def discrete_columns(X):
    """Boolean mask of the columns that look discretised: few distinct values.

    A column is discretised when it has at most ``max(20, n_samples // 4)``
    distinct values (on average four or more rows per value), e.g. counts,
    ages in years, ordinal scores, binary indicators.
    """
    X = np.asarray(X, dtype=float)
    limit = max(20, X.shape[0] // 4)
    return np.array([np.unique(X[:, j]).size <= limit for j in range(X.shape[1])], dtype=bool)


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


def change_defaults(operator, column, summary):
    """Initial values and bounds of a change operator's own hyperparameters.

    With the column's range [a, b], its median spacing h and span r = b − a:

    ========  ===================================  ====================================
    name      initial value                        bounds
    ========  ===================================  ====================================
    location  the middle of the range              [a, b]
    width     r / 20                               [h / 10, r]
    duration  r / 4 (CW)                           [2 h, r]
    ========  ===================================  ====================================

    A transition narrower than a tenth of the spacing is a step between two
    samples: its exact width cannot be told from the data.

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
    out["width"] = _inside(span / 20.0, min(gap / 10.0, span / 200.0), span)
    return out
