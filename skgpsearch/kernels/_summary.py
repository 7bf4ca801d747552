"""What the default hyperparameters are derived from: per-column statistics of the training data."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["DataSummary", "discrete_columns", "looks_like_time_index", "sampling_step"]


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
    #: Per-column step of the grid the values lie on (see :func:`sampling_step`; None: use ``median_gap``).
    grid_step: np.ndarray | None = None
    #: How many cycles of a periodic kernel the data must hold: its period is at most the column's range
    #: divided by this.
    min_cycles: float = 1.0

    @classmethod
    def from_data(
        cls,
        X: ArrayLike,
        y: ArrayLike | None = None,
        discrete_features: ArrayLike | None = None,
        spacing_floor: bool = False,
        min_cycles: float = 1.0,
    ) -> DataSummary:
        """Summarise training inputs ``X`` (n_samples, n_features) and optional targets ``y``.

        ``discrete_features`` (a boolean mask of the columns) puts the
        lengthscale floor of those columns at their smallest gap between
        distinct values (see :func:`discrete_columns`). ``spacing_floor=True``
        puts the floor of every other column at its median spacing of distinct
        values (the typical distance to the nearest neighbour on that column):
        a shorter lengthscale separates almost every pair of points, so the
        kernel acts as white noise on the data. ``min_cycles``: the periods of
        periodic kernels are at most the column's range divided by it.
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
        steps = np.empty(X.shape[1])
        for j in range(X.shape[1]):
            diffs = np.diff(np.unique(X[:, j]))
            gaps[j] = diffs.min() if diffs.size else np.nan
            median_gaps[j] = np.median(diffs) if diffs.size else np.nan
            steps[j] = sampling_step(diffs)
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
            grid_step=steps,
            min_cycles=float(min_cycles),
        )

    @classmethod
    def unit(cls, n_features: int) -> DataSummary:
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
    def n_features(self) -> int:
        return self.mean.shape[0]

    def _check(self, columns):
        for c in columns:
            if c < 0 or c >= self.n_features:
                raise ValueError(
                    f"The structure uses column {c}, but the data has {self.n_features} columns."
                )

    def spread(self, columns: Iterable[int]) -> float:
        s = float(np.sqrt(np.sum(self.std[list(columns)] ** 2)))
        return s if s > 0 else 1.0

    def range(self, columns: Iterable[int]) -> float:
        cols = list(columns)
        r = float(np.sqrt(np.sum((self.maximum[cols] - self.minimum[cols]) ** 2)))
        return r if r > 0 else 1.0

    def lengthscale_floor_of(self, columns: Iterable[int]) -> float | None:
        """The largest lengthscale floor among ``columns`` (None without one)."""
        if self.lengthscale_floor is None:
            return None
        return _positive(self.lengthscale_floor, columns, max)

    def nyquist_spacing(self, columns: Iterable[int]) -> float | None:
        """The largest sampling step among ``columns`` (None if none): half the shortest period the data can show.

        The step of the grid the values lie on (:func:`sampling_step`), else
        the median spacing (:meth:`typical_gap`).
        """
        if self.grid_step is None:
            return self.typical_gap(columns)
        return _positive(self.grid_step, columns, max)

    def smallest_gap(self, columns: Iterable[int]) -> float | None:
        return _positive(self.min_gap, columns, min)

    def typical_gap(self, columns: Iterable[int]) -> float | None:
        """The largest median spacing of distinct values among ``columns`` (None if none)."""
        return _positive(self.min_gap if self.median_gap is None else self.median_gap, columns, max)


def _positive(values: np.ndarray, columns: Iterable[int], reduce) -> float | None:
    """``reduce`` (min or max) of the positive finite ``values`` of ``columns`` (None if there are none)."""
    chosen = values[list(columns)]
    chosen = chosen[np.isfinite(chosen) & (chosen > 0)]
    return float(reduce(chosen)) if chosen.size else None


#: A column's values lie on a grid of its smallest gap when every gap of about k steps is within
#: GRID_TOLERANCE + GRID_DRIFT * k steps of k, and at least GRID_MIN_SHARE of the gaps, and GRID_MIN_COUNT
#: of them, are one step. GRID_DRIFT allows a step whose length varies a little, as a day does in decimal
#: years when a year has 365 or 366 days (0.27 %).
GRID_TOLERANCE = 0.05
GRID_DRIFT = 0.003
GRID_MIN_SHARE = 0.05
GRID_MIN_COUNT = 10


def sampling_step(gaps: np.ndarray) -> float:
    """The step that sets the shortest period visible in a column, from its gaps between sorted distinct values.

    Days sampled at random (a daily series with most days missing) have a
    median gap of several days, yet a weekly cycle shows in them: the values
    lie on a grid of one day, so only periods under two days alias. When the
    gaps are whole multiples of the smallest one and that one is common, the
    step is the smallest gap; otherwise (regular sampling, calendar months,
    irregular times, a stray close pair, too few gaps to tell) it is the
    median gap: irregular times have no grid, and their smallest gap would
    admit periods that fit noise. NaN without gaps.
    """
    gaps = np.asarray(gaps, dtype=float)
    if gaps.size == 0:
        return float("nan")
    step = _grid_step(gaps)
    return float(np.median(gaps)) if step is None else step


def _grid_step(gaps: np.ndarray) -> float | None:
    """The smallest gap when every gap is a whole multiple of it and one-step gaps are common, else None."""
    step = float(gaps.min())
    if not step > 0:
        return None
    multiples = gaps / step
    whole = np.round(multiples)
    on_grid = bool(np.all(np.abs(multiples - whole) <= GRID_TOLERANCE + GRID_DRIFT * whole))
    one_step = whole == 1
    common = one_step.sum() >= GRID_MIN_COUNT and one_step.mean() >= GRID_MIN_SHARE
    return step if on_grid and common else None


#: A column looks like the times of a series when at most SERIES_MAX_REPEATED of its values repeat another and
#: its gaps are regular: on a grid (see sampling_step), or at least REGULAR_SHARE of them within
#: REGULAR_TOLERANCE of a whole positive multiple of the median gap (calendar months: 28 to 31 days).
SERIES_MAX_REPEATED = 0.05
REGULAR_TOLERANCE = 0.1
REGULAR_SHARE = 0.9


def looks_like_time_index(values: ArrayLike) -> bool:
    """Whether a column's values look like the times of a series rather than draws of a covariate.

    A series is recorded by a clock: one value per time, at a regular step
    (monthly, daily, hourly; with some times missing, still on the step's
    grid). A covariate measured with its response (an income, a dose, a
    body-mass index) is drawn as it comes: irregular gaps, and repeated values
    wherever it is rounded or several measurements share one. The shared
    extrapolation series and the statsmodels series of
    ``benchmarks/unseen_series.py`` all look like time indexes (the most
    repeated, hourly internet traffic, repeats 0.9 % of its times); the
    motorcycle-crash times of mcycle (repeated runs: 29 % repeated) and
    engel's incomes (irregular) do not.

    Parameters
    ----------
    values : array-like
        The column's values, in any order.

    Returns
    -------
    bool
        True when at most ``SERIES_MAX_REPEATED`` of the values repeat
        another and the gaps between distinct values are regular: on a grid
        (see :func:`sampling_step`), or at least ``REGULAR_SHARE`` of them
        within ``REGULAR_TOLERANCE`` of a whole positive multiple of the
        median gap. False for fewer than two distinct values.

    Examples
    --------
    >>> import numpy as np
    >>> looks_like_time_index(1990 + np.arange(48) / 12)  # months in decimal years
    True
    >>> looks_like_time_index(np.tile(np.arange(20.0), 3))  # three runs on one clock
    False
    """
    values = np.asarray(values, dtype=float).ravel()
    distinct = np.unique(values)
    if distinct.size < 2 or 1.0 - distinct.size / values.size > SERIES_MAX_REPEATED:
        return False
    gaps = np.diff(distinct)
    if _grid_step(gaps) is not None:
        return True
    multiples = gaps / np.median(gaps)
    whole = np.round(multiples)
    return bool(np.mean((whole >= 1) & (np.abs(multiples - whole) <= REGULAR_TOLERANCE)) >= REGULAR_SHARE)


def discrete_columns(X: ArrayLike) -> np.ndarray:
    """Boolean mask of the columns that look discretised: few distinct values.

    A column is discretised when it has at most ``max(20, n_samples // 4)``
    distinct values (on average four or more rows per value), e.g. counts,
    ages in years, ordinal scores, binary indicators.
    """
    X = np.asarray(X, dtype=float)
    limit = max(20, X.shape[0] // 4)
    return np.array([np.unique(X[:, j]).size <= limit for j in range(X.shape[1])], dtype=bool)
