"""Small datasets bundled with the package, loaded as scikit-learn's ``load_*`` functions load theirs.

``README.md`` beside this file gives each dataset's provenance; it is also each loader's ``DESCR``.
"""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_airline", "load_mauna_loa", "load_pima"]


def load_mauna_loa(*, return_X_y: bool = False, as_frame: bool = False,
                   n_samples: int | None = None) -> Bunch | tuple:
    """Monthly Mauna Loa CO2 concentrations, 1958-03 to 2003-12 (545 months).

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        Return the data as a pandas DataFrame and the target as a Series (needs pandas).
    n_samples : int, optional
        Keep only the first ``n_samples`` months.

    Returns
    -------
    Bunch with ``data`` (n, 1): time in decimal years (year + (month - 1) / 12),
    ``target`` (n,): CO2 in ppm, ``feature_names`` (``["year"]``),
    ``target_names`` (``["CO2"]``), ``frame`` (with ``as_frame``, else None) and
    ``DESCR``; or ``(data, target)``.

    Examples
    --------
    >>> from skgpsearch.datasets import load_mauna_loa
    >>> X, y = load_mauna_loa(return_X_y=True)
    >>> X.shape, round(float(X[0, 0]), 3), float(y[0])
    ((545, 1), 1958.167, 315.7)
    """
    rows = _rows("mauna_loa.csv")
    if n_samples is not None:
        if n_samples < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}.")
        rows = rows[:n_samples]
    years = np.array([int(r["Date"][:4]) + (int(r["Date"][5:7]) - 1) / 12.0 for r in rows])
    target = np.array([float(r["CO2"]) for r in rows])
    return _result(years[:, np.newaxis], target, ["year"], "CO2", ["CO2"], "mauna_loa", return_X_y, as_frame)


def load_airline(*, return_X_y: bool = False, as_frame: bool = False) -> Bunch | tuple:
    """Monthly international airline passengers (thousands), 1949-01 to 1960-12 (144 months).

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        Return the data as a pandas DataFrame and the target as a Series (needs pandas).

    Returns
    -------
    Bunch with ``data`` (144, 1): time in decimal years, ``target`` (144,): passengers in
    thousands, ``feature_names`` (``["time"]``), ``target_names`` (``["passengers"]``),
    ``frame`` and ``DESCR``; or ``(data, target)``.

    Examples
    --------
    >>> from skgpsearch.datasets import load_airline
    >>> X, y = load_airline(return_X_y=True)
    >>> X.shape, float(X[12, 0]), float(y[0]), float(y.max())
    ((144, 1), 1950.0, 112.0, 622.0)
    """
    rows = _rows("airline.csv")
    time = np.array([[float(r["time"])] for r in rows])
    target = np.array([float(r["passengers"]) for r in rows])
    return _result(time, target, ["time"], "passengers", ["passengers"], "airline", return_X_y, as_frame)


def load_pima(*, return_X_y: bool = False, as_frame: bool = False) -> Bunch | tuple:
    """The Pima Indians diabetes data: 768 women, 8 clinical measurements, diabetes yes (1) or no (0).

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        Return the data as a pandas DataFrame and the target as a Series (needs pandas).

    Returns
    -------
    Bunch with ``data`` (768, 8), ``target`` (768,) of 0 (``"neg"``) and 1 (``"pos"``),
    ``feature_names``, ``target_names`` (``["neg", "pos"]``), ``frame`` and ``DESCR``;
    or ``(data, target)``.

    Examples
    --------
    >>> from skgpsearch.datasets import load_pima
    >>> data = load_pima()
    >>> data.data.shape, int(data.target.sum()), data.feature_names[:3]
    ((768, 8), 268, ['pregnant', 'glucose', 'pressure'])
    """
    rows = _rows("pima.csv")
    features = [name for name in rows[0] if name != "diabetes"]
    data = np.array([[float(r[name]) for name in features] for r in rows])
    target = np.array([r["diabetes"] == "pos" for r in rows], dtype=int)
    return _result(data, target, features, "diabetes", ["neg", "pos"], "pima", return_X_y, as_frame)


def _rows(file_name):
    with resources.files(__name__).joinpath(file_name).open(newline="") as handle:
        return list(csv.DictReader(handle))


def _description(section):
    """The README section of one dataset, from its ``## name`` heading to the next one."""
    text = resources.files(__name__).joinpath("README.md").read_text(encoding="utf-8")
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end + 1]


def _result(data, target, feature_names, target_column, target_names, section, return_X_y, as_frame):
    frame = None
    if as_frame:
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("as_frame=True needs pandas: pip install pandas") from None
        data = pd.DataFrame(data, columns=feature_names)
        target = pd.Series(target, name=target_column)
        frame = pd.concat([data, target], axis=1)
    if return_X_y:
        return data, target
    return Bunch(data=data, target=target, frame=frame, feature_names=list(feature_names),
                 target_names=list(target_names), DESCR=_description(section))
