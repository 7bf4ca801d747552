"""Changepoint and change-window operators as scikit-learn kernels.

Both blend two kernels with a smooth switch s(x) in [0, 1] on one input column:

    k(x, x') = s(x) s(x') k1(x, x') + (1 − s(x)) (1 − s(x')) k2(x, x')

which is positive semi-definite whenever k1 and k2 are (each term is a kernel
multiplied by f(x) f(x')). Lloyd et al. (2014, "Automatic construction and
natural-language description of nonparametric regression models") introduced
them to the compositional grammar so that structure can change over time:
a changepoint switches from k1 to k2 at a location; a change window replaces
k1 by k2 inside an interval.

Hyperparameters: those of ``k1`` (prefix ``k1__``), then those of ``k2``
(prefix ``k2__``), then the operator's own. Locations may be negative, so
their ``theta`` entries are the values themselves (bounded, not
log-transformed), as the linear kernel's offset; widths and durations are
positive and log-transformed.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

from ._core import Bounds, _as_2d, _check_gradient_request

__all__ = ["ChangePoint", "ChangeWindow"]


class _ChangeOperator(Kernel):
    """Shared machinery: parameters, theta, evaluation from the switch and its derivatives."""

    #: Own hyperparameters, in theta order.
    _own_names = ()
    #: Own hyperparameters whose theta entry is the value itself (not its log).
    _unconstrained = ("location",)

    # -- parameters ---------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        params = {name: getattr(self, name) for name in self._init_names()}
        if deep:
            for prefix in ("k1", "k2"):
                for key, value in getattr(self, prefix).get_params(deep=True).items():
                    params[f"{prefix}__{key}"] = value
        return params

    @classmethod
    def _init_names(cls):
        names = ["k1", "k2", "column"]
        for name in cls._own_names:
            names += [name, name + "_bounds"]
        return names

    def _own_hyperparameters(self):
        return [Hyperparameter(name, "numeric", getattr(self, name + "_bounds")) for name in self._own_names]

    @property
    def hyperparameters(self) -> list[Hyperparameter]:
        out = []
        for prefix in ("k1", "k2"):
            for hp in getattr(self, prefix).hyperparameters:
                out.append(Hyperparameter(f"{prefix}__{hp.name}", hp.value_type, hp.bounds, hp.n_elements, hp.fixed))
        return out + self._own_hyperparameters()

    def _free_own(self):
        return [hp.name for hp in self._own_hyperparameters() if not hp.fixed]

    @property
    def theta(self) -> np.ndarray:
        own = [
            float(getattr(self, name)) if name in self._unconstrained else np.log(float(getattr(self, name)))
            for name in self._free_own()
        ]
        return np.concatenate([self.k1.theta, self.k2.theta, np.asarray(own, dtype=float)])

    @theta.setter
    def theta(self, theta: np.ndarray) -> None:
        theta = np.asarray(theta, dtype=float)
        n1, n2, own = self.k1.n_dims, self.k2.n_dims, self._free_own()
        if theta.size != n1 + n2 + len(own):
            raise ValueError(
                f"theta has the wrong number of entries: {type(self).__name__} expects "
                f"{n1 + n2 + len(own)}, got {theta.size}."
            )
        self.k1.theta = theta[:n1]
        self.k2.theta = theta[n1 : n1 + n2]
        self.set_own_theta(theta[n1 + n2 :])

    def set_own_theta(self, values: Iterable[float]) -> None:
        """Set the free own hyperparameters from their ``theta`` entries (locations as they are, the rest logged)."""
        for name, value in zip(self._free_own(), values):
            setattr(self, name, float(value) if name in self._unconstrained else float(np.exp(value)))

    @property
    def bounds(self) -> np.ndarray:
        rows = [b for b in (self.k1.bounds, self.k2.bounds) if np.size(b)]
        for hp in self._own_hyperparameters():
            if not hp.fixed:
                b = np.asarray(hp.bounds, dtype=float).reshape(1, 2)
                rows.append(b if hp.name in self._unconstrained else np.log(b))
        return np.vstack(rows) if rows else np.empty((0, 2))

    def __eq__(self, other):
        if type(self) is not type(other):
            return False
        mine, theirs = self.get_params(deep=False), other.get_params(deep=False)
        return all(
            (mine[k] == theirs[k]) if k in ("k1", "k2") else np.array_equal(np.asarray(mine[k]), np.asarray(theirs[k]))
            for k in mine
        )

    def __repr__(self):
        own = ", ".join(f"{name}={float(getattr(self, name)):.4g}" for name in self._own_names)
        return f"{type(self).__name__}({self.k1!r}, {self.k2!r}, column={self.column}, {own})"

    # -- evaluation ---------------------------------------------------------
    def _column_values(self, X, name):
        column = self.column
        if isinstance(column, bool) or not isinstance(column, numbers.Integral) or column < 0:
            raise ValueError(f"column must be a non-negative integer, got {column!r}.")
        if column >= X.shape[1]:
            raise ValueError(f"{type(self).__name__} switches on column {column}, but {name} has {X.shape[1]} columns.")
        return X[:, column]

    def switch(self, x: ArrayLike) -> np.ndarray:
        """Weight s(x) of ``k1`` at the column values ``x`` (``k2`` has 1 − s)."""
        return self.switch_and_derivatives(x)[0]

    def switch_and_derivatives(self, x: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """s(x), 1 − s(x) (computed without cancellation) and ∂s/∂θ_j of the free own θ_j, shape (n, p)."""
        raise NotImplementedError

    def __call__(
        self, X: np.ndarray, Y: np.ndarray | None = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        _check_gradient_request(Y, eval_gradient)
        X = _as_2d(X)
        s_x, t_x, ds = self.switch_and_derivatives(self._column_values(X, "X"))
        if Y is None:
            s_y, t_y = s_x, t_x
        else:
            Y = _as_2d(Y, "Y")
            s_y, t_y, _ = self.switch_and_derivatives(self._column_values(Y, "Y"))
        if not eval_gradient:
            return np.outer(s_x, s_y) * self.k1(X, Y) + np.outer(t_x, t_y) * self.k2(X, Y)
        K1, dK1 = self.k1(X, eval_gradient=True)
        K2, dK2 = self.k2(X, eval_gradient=True)
        ss, tt = np.outer(s_x, s_x), np.outer(t_x, t_x)
        K = ss * K1 + tt * K2
        own = []
        for j in range(ds.shape[1]):
            d = ds[:, j]
            # ∂(s s')/∂θ = ds s' + s ds'; ∂(t t')/∂θ = −(ds t' + t ds') since t = 1 − s
            d_ss = np.outer(d, s_x)
            d_ss += d_ss.T
            d_tt = np.outer(d, t_x)
            d_tt += d_tt.T
            own.append(d_ss * K1 - d_tt * K2)
        gradient = np.concatenate(
            [ss[:, :, None] * dK1, tt[:, :, None] * dK2] + [g[:, :, None] for g in own], axis=2
        )
        return K, gradient

    def diag(self, X: np.ndarray) -> np.ndarray:
        X = _as_2d(X)
        s, t, _ = self.switch_and_derivatives(self._column_values(X, "X"))
        return s * s * self.k1.diag(X) + t * t * self.k2.diag(X)

    def is_stationary(self) -> bool:
        return False

    @property
    def requires_vector_input(self) -> bool:
        return True


class ChangePoint(_ChangeOperator):
    """Changepoint: ``k1`` before a location on one column, ``k2`` after it.

    k(x, x') = s(x) s(x') k1(x, x') + (1 − s(x)) (1 − s(x')) k2(x, x'),
    s(x) = 1 / (1 + exp((x_c − location) / width))

    The switch falls from 1 to 0 around ``location``; 76 % of the change
    (tanh 1) happens within ± 2 ``width`` of it, and its 10-90 % fall takes
    2 ln 9 ≈ 4.4 widths.

    Parameters
    ----------
    k1, k2 : sklearn Kernel
        The kernels before and after the change (they see every column).
    column : int, default=0
        The input column the change happens on (time, for a series).
    location : float, default=0.0
    width : float, default=1.0
        Transition width, in units of the column.
    location_bounds : pair or "fixed", default=(-1e5, 1e5)
    width_bounds : pair or "fixed", default=(1e-5, 1e5)

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsearch.kernels import ChangePoint, Constant, SquaredExponential
    >>> k = ChangePoint(SquaredExponential(), Constant(0.0001), location=5.0, width=0.1)
    >>> X = np.array([[0.0], [1.0], [9.0], [10.0]])
    >>> np.round(k(X), 3)  # correlated before 5, almost nothing after
    array([[1.   , 0.607, 0.   , 0.   ],
           [0.607, 1.   , 0.   , 0.   ],
           [0.   , 0.   , 0.   , 0.   ],
           [0.   , 0.   , 0.   , 0.   ]])
    """

    _own_names = ("location", "width")

    def __init__(
        self,
        k1: Kernel,
        k2: Kernel,
        column: int = 0,
        location: float = 0.0,
        width: float = 1.0,
        location_bounds: Bounds = (-1e5, 1e5),
        width_bounds: Bounds = (1e-5, 1e5),
    ) -> None:
        self.k1 = k1
        self.k2 = k2
        self.column = column
        self.location = location
        self.width = width
        self.location_bounds = location_bounds
        self.width_bounds = width_bounds

    def switch_and_derivatives(self, x: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        width = float(self.width)
        z = (np.asarray(x, dtype=float) - float(self.location)) / width
        s, t = expit(-z), expit(z)
        # ∂s/∂location = s t / width; ∂s/∂log width = s t z
        columns = {"location": s * t / width, "width": s * t * z}
        free = self._free_own()
        ds = np.column_stack([columns[name] for name in free]) if free else np.empty((len(s), 0))
        return s, t, ds


class ChangeWindow(_ChangeOperator):
    """Change window: ``k2`` replaces ``k1`` inside an interval of one column.

    k(x, x') = s(x) s(x') k1(x, x') + (1 − s(x)) (1 − s(x')) k2(x, x'),
    1 − s(x) = w(x) = σ((x_c − start) / width) σ((end − x_c) / width),

    with start = location − duration / 2, end = location + duration / 2 and
    σ the logistic function: w is ≈ 1 inside [start, end] and ≈ 0 outside.

    Parameters
    ----------
    k1, k2 : sklearn Kernel
        The kernel outside and inside the window (they see every column).
    column : int, default=0
    location : float, default=0.0
        Centre of the window.
    duration : float, default=1.0
        Length of the window.
    width : float, default=0.1
        Width of its two edges, in units of the column.
    location_bounds : pair or "fixed", default=(-1e5, 1e5)
    duration_bounds, width_bounds : pair or "fixed", default=(1e-5, 1e5)

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsearch.kernels import ChangeWindow, Constant, WhiteNoise
    >>> k = ChangeWindow(Constant(1.0), Constant(4.0), location=5.0, duration=2.0, width=0.01)
    >>> np.round(k.diag(np.array([[0.0], [5.0], [10.0]])), 6)  # variance 4 only inside [4, 6]
    array([1., 4., 1.])
    """

    _own_names = ("location", "duration", "width")

    def __init__(
        self,
        k1: Kernel,
        k2: Kernel,
        column: int = 0,
        location: float = 0.0,
        duration: float = 1.0,
        width: float = 0.1,
        location_bounds: Bounds = (-1e5, 1e5),
        duration_bounds: Bounds = (1e-5, 1e5),
        width_bounds: Bounds = (1e-5, 1e5),
    ) -> None:
        self.k1 = k1
        self.k2 = k2
        self.column = column
        self.location = location
        self.duration = duration
        self.width = width
        self.location_bounds = location_bounds
        self.duration_bounds = duration_bounds
        self.width_bounds = width_bounds

    def switch_and_derivatives(self, x: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        width, half = float(self.width), 0.5 * float(self.duration)
        x = np.asarray(x, dtype=float) - float(self.location)
        u1, u2 = (x + half) / width, (half - x) / width
        r1, r2 = expit(-u1), expit(-u2)  # 1 − σ(u1), 1 − σ(u2)
        w = expit(u1) * expit(u2)
        # 1 − w = 1 − σ1 σ2 = r1 + r2 − r1 r2 without cancellation where w ≈ 1
        s = r1 + r2 - r1 * r2
        # ∂w/∂location = w (σ1 − σ2) / width = w (r2 − r1) / width;
        # ∂w/∂log duration = w (r1 + r2) half / width; ∂w/∂log width = −w (r1 u1 + r2 u2); ∂s = −∂w
        columns = {
            "location": -w * (r2 - r1) / width,
            "duration": -w * (r1 + r2) * (half / width),
            "width": w * (r1 * u1 + r2 * u2),
        }
        free = self._free_own()
        ds = np.column_stack([columns[name] for name in free]) if free else np.empty((len(s), 0))
        return s, w, ds
