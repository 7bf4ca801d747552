"""Restrict any scikit-learn kernel to a subset of the input columns."""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

from ._core import CatalogueKernel, _as_2d

__all__ = ["ActiveColumns"]


class ActiveColumns(Kernel):
    """A kernel evaluated on some input columns only (``active_dims``).

    k(x, x') = kernel(x[columns], x'[columns])

    Every hyperparameter of the wrapped kernel is exposed with the prefix
    ``kernel__`` and nothing else is added, so ``theta``, ``bounds``,
    ``n_dims`` and the gradient are exactly those of the wrapped kernel.

    Parameters
    ----------
    kernel : sklearn Kernel
        The kernel to evaluate on the selected columns.
    columns : int or sequence of int
        0-based indices of the input columns the kernel sees, in that order.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsearch.kernels import ActiveColumns
    >>> X = np.array([[0.0, 5.0], [1.0, -3.0]])
    >>> k = ActiveColumns(RBF(length_scale=1.0), columns=[0])
    >>> bool(np.allclose(k(X), RBF(1.0)(X[:, [0]])))
    True
    >>> k.theta.shape
    (1,)
    """

    def __init__(self, kernel: Kernel, columns: int | Iterable[int]) -> None:
        self.kernel = kernel
        self.columns = columns

    # -- parameters ---------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        params = {"kernel": self.kernel, "columns": self.columns}
        if deep:
            for key, value in self.kernel.get_params(deep=True).items():
                params["kernel__" + key] = value
        return params

    @property
    def hyperparameters(self) -> list[Hyperparameter]:
        return [
            Hyperparameter("kernel__" + hp.name, hp.value_type, hp.bounds, hp.n_elements, hp.fixed)
            for hp in self.kernel.hyperparameters
        ]

    @property
    def theta(self) -> np.ndarray:
        return self.kernel.theta

    @theta.setter
    def theta(self, theta: np.ndarray) -> None:
        self.kernel.theta = theta

    @property
    def bounds(self) -> np.ndarray:
        return self.kernel.bounds

    def __eq__(self, other):
        return (
            type(self) is type(other)
            and tuple(self._column_indices()) == tuple(other._column_indices())
            and self.kernel == other.kernel
        )

    def __repr__(self):
        cols = [int(c) for c in self._column_indices()]
        if isinstance(self.kernel, CatalogueKernel):
            inner = repr(self.kernel)
            name, _, rest = inner.partition("(")
            return f"{name}(columns={cols}, {rest}"
        return f"ActiveColumns({self.kernel!r}, columns={cols})"

    # -- evaluation ---------------------------------------------------------
    def _column_indices(self):
        columns = self.columns
        if isinstance(columns, numbers.Integral) and not isinstance(columns, bool):
            columns = [columns]
        try:
            columns = [c for c in columns]
        except TypeError:
            raise ValueError(f"columns must be an int or a sequence of ints, got {self.columns!r}.") from None
        if not columns:
            raise ValueError("ActiveColumns needs at least one column.")
        for c in columns:
            if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 0:
                raise ValueError(f"columns must be non-negative integers, got {c!r}.")
        return np.asarray(columns, dtype=np.intp)

    def _select(self, X, name):
        if X is None:
            return None
        X = _as_2d(X, name)
        cols = self._column_indices()
        if cols.max() >= X.shape[1]:
            raise ValueError(
                f"The kernel uses column {int(cols.max())}, but {name} has only {X.shape[1]} columns."
            )
        return X[:, cols]

    def __call__(
        self, X: np.ndarray, Y: np.ndarray | None = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        return self.kernel(self._select(X, "X"), self._select(Y, "Y"), eval_gradient=eval_gradient)

    def diag(self, X: np.ndarray) -> np.ndarray:
        return self.kernel.diag(self._select(X, "X"))

    def is_stationary(self) -> bool:
        return self.kernel.is_stationary()

    @property
    def requires_vector_input(self) -> bool:
        return True
