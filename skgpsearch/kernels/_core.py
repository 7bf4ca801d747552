"""Shared machinery of the catalogue kernels (scikit-learn kernels).

Every catalogue kernel has an amplitude ``variance`` (the signal variance
s2). Hyperparameters are exposed through ``theta`` in log space, except those
a kernel lists in ``_unconstrained`` (the linear kernel's ``offset``, a
location that may be negative: its ``theta`` entry is the offset itself and
its bounds are plain values; every other consumer of ``theta`` -- the
optimiser, random restarts, ``clone_with_theta`` -- only needs a
box-bounded unconstrained vector, which this still is).

Gradients returned with ``eval_gradient=True`` are with respect to ``theta``,
in the order of :attr:`hyperparameters` (amplitude first).

The kernels of the catalogue themselves, each next to the rest of its kind's
behaviour, are in :mod:`skgpsearch.kernels._specs`.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from scipy.spatial.distance import cdist, pdist, squareform
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

__all__ = ["CatalogueKernel", "StationaryProfile"]

#: Bounds of a hyperparameter: a ``(lower, upper)`` pair, one pair per element (an array of shape
#: (n_elements, 2)), or ``"fixed"``.
Bounds = tuple[float, float] | np.ndarray | Literal["fixed"]


def _as_2d(X, name="X"):
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, np.newaxis]
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_samples, n_features), got {X.ndim} dims.")
    return X


def _check_gradient_request(Y, eval_gradient):
    if eval_gradient and Y is not None:
        raise ValueError("Gradient can only be evaluated when Y is None.")


class CatalogueKernel(Kernel):
    """Shared machinery of the catalogue kernels.

    Subclasses list their hyperparameters in ``_hyperparameter_names``
    (amplitude first); names in ``_unconstrained`` are not log-transformed.
    """

    _hyperparameter_names = ("variance",)
    _unconstrained = ()
    #: Catalogue name of the kind (see :data:`skgpsearch.grammar.KINDS`).
    kind = None

    @property
    def hyperparameters(self) -> list[Hyperparameter]:
        return [getattr(self, "hyperparameter_" + name) for name in self._hyperparameter_names]

    @property
    def theta(self) -> np.ndarray:
        theta = []
        for hp in self.hyperparameters:
            if hp.fixed:
                continue
            value = np.atleast_1d(np.asarray(getattr(self, hp.name), dtype=float))
            if value.size != hp.n_elements:
                value = np.broadcast_to(value, (hp.n_elements,))
            theta.append(value if hp.name in self._unconstrained else np.log(value))
        return np.hstack(theta) if theta else np.array([])

    @theta.setter
    def theta(self, theta: np.ndarray) -> None:
        theta = np.asarray(theta, dtype=float)
        params, i = {}, 0
        for hp in self.hyperparameters:
            if hp.fixed:
                continue
            chunk = theta[i : i + hp.n_elements]
            if chunk.size != hp.n_elements:
                break
            value = chunk if hp.name in self._unconstrained else np.exp(chunk)
            params[hp.name] = value.copy() if hp.n_elements > 1 else float(value[0])
            i += hp.n_elements
        if i != theta.size or len(params) != sum(not hp.fixed for hp in self.hyperparameters):
            raise ValueError(
                f"theta has the wrong number of entries: {type(self).__name__} expects "
                f"{self.n_dims}, got {theta.size}."
            )
        self.set_params(**params)

    @property
    def bounds(self) -> np.ndarray:
        rows = []
        for hp in self.hyperparameters:
            if hp.fixed:
                continue
            b = np.asarray(hp.bounds, dtype=float)
            rows.append(b if hp.name in self._unconstrained else np.log(b))
        return np.vstack(rows) if rows else np.array([])

    def _fixed(self, name):
        return isinstance(getattr(self, name + "_bounds"), str) and getattr(self, name + "_bounds") == "fixed"

    @property
    def hyperparameter_variance(self) -> Hyperparameter:
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    def __repr__(self):
        parts = []
        for name in self._hyperparameter_names:
            value = np.asarray(getattr(self, name), dtype=float)
            text = (
                f"{float(value.ravel()[0]):.3g}"
                if value.size == 1
                else "[" + ", ".join(f"{v:.3g}" for v in value.ravel()) + "]"
            )
            parts.append(f"{name}={text}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def _gradient_stack(self, pieces):
        """Stack (name, array (n, n) or (n, n, k)) pieces of free hyperparameters."""
        arrays = []
        for name, piece in pieces:
            if self._fixed(name):
                continue
            arrays.append(piece if piece.ndim == 3 else piece[:, :, np.newaxis])
        if not arrays:
            n = pieces[0][1].shape[0]
            return np.empty((n, n, 0))
        return np.concatenate(arrays, axis=2) if len(arrays) > 1 else arrays[0]


class StationaryProfile:
    """How a distance-based kind depends on the scaled squared distance.

    With r² = Σ_k (x_k − x'_k)² / l_k² the kernel is k(x, x') = s2 g(r²). A
    profile evaluates g where it is needed, each place exactly as it has
    always computed it (the two agree to rounding, not bit for bit):

    - the scikit-learn kernel (:meth:`kernel_profile`,
      :meth:`kernel_shape_gradients`) on full matrices of r²;
    - the fast leaves of the regression engine (:meth:`leaf_profile`,
      :meth:`leaf_contractions`) on condensed pairs or lags of one column set.

    Each subclass's docstring gives g and the log-lengthscale derivative
    −∂log g/∂log l = −2 r² g'(r²) / g(r²) that the leaves contract.
    """

    #: Hyperparameters of g besides the lengthscale (RQ: ``("alpha",)``), in theta order.
    shape_parameters: tuple[str, ...] = ()
    #: An r² from which g is negligible (about e^-700) and may stand for larger r²: the engine's leaves cap
    #: r² there, sparing numpy's slow path for an underflowing exp. None: no such cap (a power law).
    negligible_r2: float | None = None
    #: :meth:`leaf_profile` computes g in the storage of its argument (and returns that array); the leaf then
    #: hands it the previous evaluation's values array to fill, and no vector is allocated per evaluation.
    profile_in_place: bool = False
    #: −∂log g/∂log l is r² itself and there are no shape parameters (SE): the lengthscale's contraction is
    #: Σ gk d² / l², taken from the stored squared distances without forming r² again.
    contraction_is_r2: bool = False

    def kernel_profile(self, r2: np.ndarray, shape: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """g(r²) and dg/dr²; ``shape`` holds the values of :attr:`shape_parameters`."""
        raise NotImplementedError

    def kernel_shape_gradients(
        self, r2: np.ndarray, K: np.ndarray, shape: Mapping[str, float]
    ) -> list[tuple[str, np.ndarray]]:
        """``(name, ∂K/∂log θ)`` for each shape parameter, where K = s2 g(r²)."""
        return []

    def leaf_profile(self, r2: np.ndarray, shape: Mapping[str, float]) -> tuple[np.ndarray, object]:
        """g(r²) as a new array, or in ``r2``'s storage with :attr:`profile_in_place` (the leaf scales it in
        place), and a state for :meth:`leaf_contractions`."""
        raise NotImplementedError

    def leaf_contractions(
        self, r2: np.ndarray, gk: np.ndarray, shape: Mapping[str, float], state: object, free: Sequence[str]
    ) -> dict[str, float]:
        """Σ_p gk_p ∂log K_p/∂log θ for the lengthscale and shape parameters among ``free``.

        ``gk`` is the contraction vector times K, per pair (or lag); ``state``
        is what :meth:`leaf_profile` returned for the same ``r2``.
        """
        raise NotImplementedError


class _Stationary(CatalogueKernel):
    """A kernel of the scaled squared distance r² = Σ_k (x_k - x'_k)² / l_k².

    ``lengthscale`` is a scalar (isotropic: one lengthscale shared by all
    columns) or one value per column. Subclasses set :attr:`profile`, which
    says how k depends on r² (its shape parameters, if any, are constructor
    arguments of the subclass).
    """

    _hyperparameter_names = ("variance", "lengthscale")
    #: k = variance * g(r²): see :class:`StationaryProfile`.
    profile: StationaryProfile | None = None

    def __init__(
        self,
        variance: float = 1.0,
        lengthscale: float | Sequence[float] | np.ndarray = 1.0,
        variance_bounds: Bounds = (1e-5, 1e5),
        lengthscale_bounds: Bounds = (1e-5, 1e5),
    ) -> None:
        self.variance = variance
        self.lengthscale = lengthscale
        self.variance_bounds = variance_bounds
        self.lengthscale_bounds = lengthscale_bounds

    @property
    def anisotropic(self) -> bool:
        return np.iterable(self.lengthscale) and len(self.lengthscale) > 1

    @property
    def hyperparameter_lengthscale(self) -> Hyperparameter:
        if self.anisotropic:
            return Hyperparameter("lengthscale", "numeric", self.lengthscale_bounds, len(self.lengthscale))
        return Hyperparameter("lengthscale", "numeric", self.lengthscale_bounds)

    def is_stationary(self) -> bool:
        return True

    def diag(self, X: np.ndarray) -> np.ndarray:
        return np.full(_as_2d(X).shape[0], float(self.variance))

    def _scaled(self, X):
        lengthscale = np.asarray(self.lengthscale, dtype=float).ravel()
        if lengthscale.size > 1 and lengthscale.size != X.shape[1]:
            raise ValueError(
                f"{type(self).__name__} has {lengthscale.size} lengthscales but X has {X.shape[1]} columns."
            )
        return X / lengthscale

    def _shape(self):
        return {name: float(getattr(self, name)) for name in self.profile.shape_parameters}

    def __call__(
        self, X: np.ndarray, Y: np.ndarray | None = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        _check_gradient_request(Y, eval_gradient)
        X = _as_2d(X)
        Xs = self._scaled(X)
        if Y is None:
            r2 = squareform(pdist(Xs, "sqeuclidean"))
        else:
            r2 = cdist(Xs, self._scaled(_as_2d(Y, "Y")), "sqeuclidean")
        shape = self._shape()
        g, dg = self.profile.kernel_profile(r2, shape)
        variance = float(self.variance)
        K = variance * g
        if not eval_gradient:
            return K
        if self._fixed("lengthscale"):
            d_length = np.empty(r2.shape + (0,))
        elif self.anisotropic:
            # dr²/dlog l_k = -2 (x_k - x'_k)² / l_k²
            diff2 = (Xs[:, np.newaxis, :] - Xs[np.newaxis, :, :]) ** 2
            d_length = (variance * dg)[:, :, np.newaxis] * (-2.0 * diff2)
        else:
            d_length = variance * dg * (-2.0 * r2)
        return K, self._gradient_stack(
            [("variance", K), ("lengthscale", d_length)] + self.profile.kernel_shape_gradients(r2, K, shape)
        )


def _num_samples(X):
    if isinstance(X, numbers.Number):
        raise ValueError("Expected an array of samples, got a scalar.")
    return len(X)
