"""Data-driven period guesses from the Lomb-Scargle periodogram (irregular sampling allowed).

A periodic kernel's likelihood is highly multimodal in the period: an optimiser
started one basin away ends at a multiple, a fraction or a tiny alias of the
true period. The search therefore starts periodic kernels at several
candidate periods (:func:`period_candidates`) and keeps the best few after a
cheap screen.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import czt, lombscargle

__all__ = ["dominant_period", "lomb_scargle_power", "period_candidates", "periodogram_peaks", "smooth_trend"]

#: Two periods closer than this (relative) are the same candidate.
SAME_PERIOD = 0.04
#: Most terms of the series that corrects a grid's sums for the inputs' offsets from it (see lomb_scargle_power).
TAYLOR_TERMS_MOST = 40
#: A grid with more than this many times as many slots as inputs (long gaps) is summed point by point.
MOST_GRID_SLOTS_PER_INPUT = 8


def _frequency_grid(x, low, high, max_frequencies):
    span = float(np.ptp(x))
    f_low, f_high = 1.0 / high, 1.0 / low
    # resolution a quarter of the natural one (1 / span), capped
    n = int(min(max_frequencies, max(16, np.ceil((f_high - f_low) * span * 4))))
    return np.linspace(f_low, f_high, n)


def _usable(x, r, low, high):
    return np.unique(x).size >= 4 and np.ptp(r) > 0 and 0 < low < high


def periodogram_peaks(x, r, low, high, n_peaks=3, max_frequencies=4000):
    """Periods of the ``n_peaks`` highest local maxima of the Lomb-Scargle power, strongest first.

    Parameters
    ----------
    x, r : ndarray (n,)
        Inputs of one column and the values (e.g. residuals) to analyse.
    low, high : float
        Range of periods to consider.

    Returns
    -------
    list of float
        Empty when the data cannot carry a periodicity (fewer than 4
        distinct inputs, constant values, empty range).
    """
    x = np.asarray(x, dtype=float)
    r = np.asarray(r, dtype=float)
    if not _usable(x, r, low, high):
        return []
    freqs = _frequency_grid(x, low, high, max_frequencies)
    power = lomb_scargle_power(x, r - r.mean(), freqs)
    # local maxima (the ends count when they beat their only neighbour)
    padded = np.concatenate([[-np.inf], power, [-np.inf]])
    is_peak = (padded[1:-1] >= padded[:-2]) & (padded[1:-1] > padded[2:])
    order = np.flatnonzero(is_peak)[np.argsort(-power[is_peak], kind="stable")]
    periods = []
    for i in order:
        period = float(1.0 / freqs[i])
        if _is_new(period, periods):
            periods.append(period)
        if len(periods) == n_peaks:
            break
    return periods


def lomb_scargle_power(x, r, freqs):
    """scipy.signal.lombscargle's power (its default scale) of ``r`` at the evenly spaced frequencies ``freqs``
    (cycles per unit of ``x``).

    scipy sums every input at every frequency through (n, k) matrices of sines and cosines: 0.7 s and
    about 150 MB on temperature's 899 days at 4000 frequencies, several times in every search. On inputs
    near multiples of one step (a regular series, gaps allowed, times rounded in a file) the two sums it
    needs at each frequency ω, Σ r e^{iωx} and Σ e^{2iωx}, are taken on the grid instead: with
    x = g + ε (g on the grid), e^{iωx} = e^{iωg} Σ_p (iωε)^p / p!, and each power of ε is one chirp-z
    transform over the grid (Bluestein's algorithm: FFTs of about n + k points): 1 term on an exact grid,
    about 20 where the offsets reach half a step (|ωε| up to π/3), TAYLOR_TERMS_MOST at most.
    Elsewhere scipy's own computation is used. The periodogram does not change when the inputs are
    shifted, so the sums are taken from the first input. Same result to rounding (relative differences
    at most 3e-10 of the largest power on the shared series, births; 1e-13 on an exact grid).
    """
    x = np.asarray(x, dtype=float)
    r = np.asarray(r, dtype=float)
    grid = _grid(x)
    if grid is None or freqs.size < 2:
        return lombscargle(x, r, 2.0 * np.pi * freqs)
    step, slot, offset = grid
    omega = 2.0 * np.pi * freqs
    n_terms = [_taylor_terms(scale * float(np.abs(omega).max()) * float(np.abs(offset).max())) for scale in (1, 2)]
    if None in n_terms:
        return lombscargle(x, r, 2.0 * np.pi * freqs)
    n = x.size
    z1 = _grid_sums(r, slot, offset, step, omega, n_terms[0])
    z2 = _grid_sums(np.ones(n), slot, offset, step, 2.0 * omega, n_terms[1])
    # scipy's formulas (weights 1/n), with Σcos²ωx = n/2 + ½Σcos 2ωx and Σcos ωx sin ωx = ½Σsin 2ωx
    cc = 0.5 + 0.5 * z2.real / n
    cs = 0.5 * z2.imag / n
    tau = 0.5 * np.arctan2(2.0 * cs, cc - (1.0 - cc))
    cos_tau, sin_tau = np.cos(tau), np.sin(tau)
    yc = (cos_tau * z1.real + sin_tau * z1.imag) / n
    ys = (cos_tau * z1.imag - sin_tau * z1.real) / n
    cc = 0.5 + 0.5 * (np.cos(2.0 * tau) * z2.real + np.sin(2.0 * tau) * z2.imag) / n
    epsneg = np.finfo(float).epsneg
    ss = np.maximum(1.0 - cc, epsneg)
    cc = np.maximum(cc, epsneg)
    return 2.0 * (yc * yc / cc + ys * ys / ss) * n / 4.0


def _grid_sums(weights, slot, offset, step, omega, n_terms):
    """Σ_i weights_i e^{iω(x_i − x_0)} at each of the evenly spaced ``omega``, for x_i − x_0 = slot_i step +
    offset_i, by chirp-z transforms over the grid (see :func:`lomb_scargle_power`)."""
    a = np.exp(-1j * omega[0] * step)
    w = np.exp(1j * (omega[1] - omega[0]) * step)
    # the offsets in units of their largest, so that no power of them or of ω leaves the floating-point range
    largest = float(np.abs(offset).max())
    scaled = offset / largest if largest > 0 else offset
    total = np.zeros(omega.size, dtype=complex)
    term = weights.astype(float)
    factor = np.ones(omega.size, dtype=complex)
    for p in range(n_terms):
        if p:
            term = term * scaled
            factor = factor * (1j * omega * largest) / p
        total += factor * czt(np.bincount(slot, weights=term), m=omega.size, w=w, a=a)
    return total


def _grid(x):
    """(step, slot of each input, its offset from the slot): the inputs' nearest multiples of the smallest gap
    between them, counted from the first, the step then fitted to the slots by least squares (times rounded in a
    file, or decimal years of 365 and 366 days, move it a little); None when there would be more than
    MOST_GRID_SLOTS_PER_INPUT slots per input (long gaps, irregular times)."""
    distinct = np.unique(x)
    if distinct.size < 3:
        return None
    step = float(np.diff(distinct).min())
    if not step > 0 or not np.isfinite(step):
        return None
    shifted = x - distinct[0]
    slot = np.rint(shifted / step)
    if slot.max() + 1 > MOST_GRID_SLOTS_PER_INPUT * x.size:
        return None
    step = float(slot @ shifted / (slot @ slot))
    return step, slot.astype(np.intp), shifted - slot * step


def _taylor_terms(largest_phase):
    """Terms of the series of e^{iθ} that reach 1e-15 for |θ| up to ``largest_phase``; None beyond
    TAYLOR_TERMS_MOST."""
    term, p = 1.0, 0
    while term > 1e-15:
        p += 1
        term *= largest_phase / p
        if p > TAYLOR_TERMS_MOST:
            return None
    return p


def dominant_period(x, r, low, high, max_frequencies=4000):
    """Period in [low, high] with the largest Lomb-Scargle power of ``r`` against ``x`` (None if none)."""
    peaks = periodogram_peaks(x, r, low, high, n_peaks=1, max_frequencies=max_frequencies)
    return peaks[0] if peaks else None


def smooth_trend(x, r, bandwidth, block=1024):
    """Nadaraya-Watson (Gaussian kernel) smooth of ``r`` against ``x``: the low-frequency part.

    A component of period P keeps a fraction exp(−2π² bandwidth² / P²) of
    its amplitude in the smooth, so with ``bandwidth`` = range / 20 a cycle
    shorter than a tenth of the range is removed from the trend (and kept in
    ``r − smooth_trend``) while a trend longer than half the range stays in it.
    Memory is O(block × n).
    """
    x = np.asarray(x, dtype=float)
    r = np.asarray(r, dtype=float)
    out = np.empty_like(r)
    for first in range(0, x.size, block):
        d = (x[first : first + block, np.newaxis] - x[np.newaxis, :]) / bandwidth
        w = np.exp(-0.5 * d * d)
        out[first : first + block] = (w @ r) / w.sum(axis=1)
    return out


def _detrended_line(x, r):
    """r minus its least-squares line in x."""
    centred = x - x.mean()
    denominator = float(centred @ centred)
    slope = float(centred @ (r - r.mean())) / denominator if denominator > 0 else 0.0
    return r - r.mean() - slope * centred


def _is_new(period, periods):
    return all(abs(period - p) > SAME_PERIOD * p for p in periods)


def period_candidates(x, residuals, y, low, high, typical_gap, n_grid=8):
    """Candidate starting periods for a new periodic kernel on one column, most promising first.

    In this order, without near-duplicates and inside [low, high]:

    1-2. interleaved, the three strongest periodogram peaks of the residuals
       (linearly detrended) and the two strongest peaks of the data after removing a *smooth* trend
       (a straight line leaves a curved trend whose leakage swamps the low
       frequencies, see :func:`smooth_trend`);
    3. harmonics and sub-harmonics (× ½, × 2, × ⅓, × 3) of the strongest peak of each;
    4. a log-spaced grid of ``n_grid`` periods between 2 × the typical input
       spacing and half the range (between ``low`` and ``high`` if tighter).

    Parameters
    ----------
    x : ndarray (n,)
        The column's inputs.
    residuals, y : ndarray (n,)
        A fitted parent's residuals (or ``y`` itself) and the targets.
    low, high : float
        Bounds of the period.
    typical_gap : float or None
        Typical (median) spacing of the column's distinct values.

    Returns
    -------
    list of float
    """
    x = np.asarray(x, dtype=float)
    span = float(np.ptp(x))
    if not (span > 0 and 0 < low < high):
        return []
    candidates = []

    def add(period):
        if low <= period <= high and _is_new(period, candidates):
            candidates.append(float(period))

    residual_peaks = periodogram_peaks(x, _detrended_line(x, np.asarray(residuals, dtype=float)), low, high, 3)
    gap = typical_gap if typical_gap and typical_gap > 0 else span / max(x.size - 1, 1)
    bandwidth = max(span / 20.0, 2.0 * gap)
    y = np.asarray(y, dtype=float)
    data_peaks = periodogram_peaks(x, y - smooth_trend(x, y, bandwidth), low, high, 2)
    # interleaved: when the residuals are mere noise (a parent that interpolates), the data's
    # peaks still come early
    for k in range(max(len(residual_peaks), len(data_peaks))):
        for peaks in (residual_peaks, data_peaks):
            if k < len(peaks):
                add(peaks[k])
    for top in (residual_peaks[:1] + data_peaks[:1]):
        for multiple in (0.5, 2.0, 1.0 / 3.0, 3.0):
            add(top * multiple)
    grid_low, grid_high = max(low, 2.0 * gap), min(high, 0.5 * span)
    if grid_low < grid_high:
        for period in np.geomspace(grid_low, grid_high, n_grid):
            add(period)
    return candidates
