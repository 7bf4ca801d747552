"""Data-driven period guesses from the Lomb-Scargle periodogram (irregular sampling allowed)."""

from __future__ import annotations

import numpy as np
from scipy.signal import lombscargle

__all__ = ["dominant_period"]


def dominant_period(x, r, low, high, max_frequencies=4000):
    """Period in [low, high] with the largest Lomb-Scargle power of ``r`` against ``x``.

    Parameters
    ----------
    x, r : ndarray (n,)
        Inputs of one column and the values (e.g. residuals) to analyse.
    low, high : float
        Range of periods to consider.

    Returns
    -------
    float or None
        ``None`` when the data cannot carry a periodicity (fewer than 4
        distinct inputs, constant values, empty range).
    """
    x = np.asarray(x, dtype=float)
    r = np.asarray(r, dtype=float)
    if np.unique(x).size < 4 or not np.ptp(r) > 0 or not 0 < low < high:
        return None
    span = float(np.ptp(x))
    f_low, f_high = 1.0 / high, 1.0 / low
    # resolution a quarter of the natural one (1 / span), capped
    n = int(min(max_frequencies, max(16, np.ceil((f_high - f_low) * span * 4))))
    freqs = np.linspace(f_low, f_high, n)
    power = lombscargle(x, r - r.mean(), 2.0 * np.pi * freqs)
    return float(1.0 / freqs[int(np.argmax(power))])
