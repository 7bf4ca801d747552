"""Small datasets bundled with the package (see ``README.md`` beside this file for provenance)."""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_mauna_loa"]


def load_mauna_loa(*, return_X_y: bool = False, n_samples: int | None = None) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Monthly Mauna Loa CO2 concentrations, 1958-03 to 2003-12 (545 months).

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a Bunch.
    n_samples : int, optional
        Keep only the first ``n_samples`` months.

    Returns
    -------
    Bunch with ``data`` (n, 1): time in decimal years (year + (month - 1) / 12),
    ``target`` (n,): CO2 in ppm, ``feature_names`` (``["year"]``),
    ``target_names`` and ``DESCR``; or ``(data, target)``.

    Examples
    --------
    >>> from skgpsearch.datasets import load_mauna_loa
    >>> X, y = load_mauna_loa(return_X_y=True)
    >>> X.shape, round(float(X[0, 0]), 3), float(y[0])
    ((545, 1), 1958.167, 315.7)
    """
    source = resources.files(__name__)
    with source.joinpath("mauna_loa.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if n_samples is not None:
        if n_samples < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}.")
        rows = rows[:n_samples]
    years = np.array(
        [int(r["Date"][:4]) + (int(r["Date"][5:7]) - 1) / 12.0 for r in rows], dtype=float
    )
    X = years[:, np.newaxis]
    y = np.array([float(r["CO2"]) for r in rows])
    if return_X_y:
        return X, y
    return Bunch(
        data=X,
        target=y,
        feature_names=["year"],
        target_names=["CO2"],
        DESCR=source.joinpath("README.md").read_text(),
    )
