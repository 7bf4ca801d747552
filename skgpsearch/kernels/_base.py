"""Base kernels of the catalogue as scikit-learn kernels.

Each class is a small node whose docstring carries its formula. All of them
have an amplitude ``variance`` (the signal variance s2). Hyperparameters are
exposed through ``theta`` in log space, except the linear kernel's
``offset``, which is a location that may be negative: its ``theta`` entry is
the offset itself and its bounds are plain values (every other consumer of
``theta`` -- the optimiser, random restarts, ``clone_with_theta`` -- only
needs a box-bounded unconstrained vector, which this still is).

Gradients returned with ``eval_gradient=True`` are with respect to ``theta``,
in the order of :attr:`hyperparameters` (amplitude first).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.spatial.distance import cdist, pdist, squareform
from scipy.special import i0e, i1e
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

__all__ = [
    "SquaredExponential",
    "RationalQuadratic",
    "Periodic",
    "CentredPeriodic",
    "Linear",
    "Matern12",
    "Matern32",
    "Matern52",
    "Constant",
    "WhiteNoise",
    "SE",
    "RQ",
    "PER",
    "CPER",
    "LIN",
    "M12",
    "M32",
    "M52",
    "C",
    "WN",
]

_SQRT3 = np.sqrt(3.0)
_SQRT5 = np.sqrt(5.0)


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
    def hyperparameters(self):
        return [getattr(self, "hyperparameter_" + name) for name in self._hyperparameter_names]

    @property
    def theta(self):
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
    def theta(self, theta):
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
    def bounds(self):
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
    def hyperparameter_variance(self):
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


class _Stationary(CatalogueKernel):
    """A kernel of the scaled squared distance r² = Σ_k (x_k - x'_k)² / l_k².

    ``lengthscale`` is a scalar (isotropic: one lengthscale shared by all
    columns) or one value per column.
    """

    _hyperparameter_names = ("variance", "lengthscale")

    def __init__(self, variance=1.0, lengthscale=1.0, variance_bounds=(1e-5, 1e5), lengthscale_bounds=(1e-5, 1e5)):
        self.variance = variance
        self.lengthscale = lengthscale
        self.variance_bounds = variance_bounds
        self.lengthscale_bounds = lengthscale_bounds

    @property
    def anisotropic(self):
        return np.iterable(self.lengthscale) and len(self.lengthscale) > 1

    @property
    def hyperparameter_lengthscale(self):
        if self.anisotropic:
            return Hyperparameter("lengthscale", "numeric", self.lengthscale_bounds, len(self.lengthscale))
        return Hyperparameter("lengthscale", "numeric", self.lengthscale_bounds)

    def is_stationary(self):
        return True

    def diag(self, X):
        return np.full(_as_2d(X).shape[0], float(self.variance))

    def _scaled(self, X):
        lengthscale = np.asarray(self.lengthscale, dtype=float).ravel()
        if lengthscale.size > 1 and lengthscale.size != X.shape[1]:
            raise ValueError(
                f"{type(self).__name__} has {lengthscale.size} lengthscales but X has {X.shape[1]} columns."
            )
        return X / lengthscale

    def _profile(self, r2):
        """Return g(r²) and dg/dr² so that k = variance * g."""
        raise NotImplementedError

    def _extra_gradients(self, r2, K):
        return []

    def __call__(self, X, Y=None, eval_gradient=False):
        _check_gradient_request(Y, eval_gradient)
        X = _as_2d(X)
        Xs = self._scaled(X)
        if Y is None:
            r2 = squareform(pdist(Xs, "sqeuclidean"))
        else:
            r2 = cdist(Xs, self._scaled(_as_2d(Y, "Y")), "sqeuclidean")
        g, dg = self._profile(r2)
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
            [("variance", K), ("lengthscale", d_length)] + self._extra_gradients(r2, K)
        )


class SquaredExponential(_Stationary):
    """Squared exponential (SE, RBF) kernel with amplitude.

    k(x, x') = s2 * exp(-r² / 2),  r² = Σ_k (x_k - x'_k)² / l_k²

    Parameters
    ----------
    variance : float, default=1.0
        Signal variance s2 (the amplitude squared).
    lengthscale : float or array-like, default=1.0
        One lengthscale for all columns, or one per column.
    variance_bounds, lengthscale_bounds : pair of float or "fixed"
        Bounds (on the values, not their logarithms).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsearch.kernels import SE
    >>> SE(variance=2.0, lengthscale=0.5)(np.array([[0.0], [0.5]])).round(4)
    array([[2.    , 1.2131],
           [1.2131, 2.    ]])
    """

    kind = "SE"

    def _profile(self, r2):
        g = np.exp(-0.5 * r2)
        return g, -0.5 * g


class Matern12(_Stationary):
    """Matérn kernel with ν = 1/2 (exponential kernel).

    k(x, x') = s2 * exp(-r),  r = sqrt(Σ_k (x_k - x'_k)² / l_k²)

    Parameters as for :class:`SquaredExponential`.
    """

    kind = "M12"

    def _profile(self, r2):
        r = np.sqrt(r2)
        g = np.exp(-r)
        # dg/dr² = -exp(-r) / (2 r); where r = 0 every gradient term it multiplies is 0.
        dg = -0.5 * np.divide(g, r, out=np.zeros_like(r), where=r > 0)
        return g, dg


class Matern32(_Stationary):
    """Matérn kernel with ν = 3/2.

    k(x, x') = s2 * (1 + sqrt(3) r) * exp(-sqrt(3) r)

    Parameters as for :class:`SquaredExponential`.
    """

    kind = "M32"

    def _profile(self, r2):
        r = np.sqrt(r2)
        e = np.exp(-_SQRT3 * r)
        return (1.0 + _SQRT3 * r) * e, -1.5 * e


class Matern52(_Stationary):
    """Matérn kernel with ν = 5/2.

    k(x, x') = s2 * (1 + sqrt(5) r + 5 r² / 3) * exp(-sqrt(5) r)

    Parameters as for :class:`SquaredExponential`.
    """

    kind = "M52"

    def _profile(self, r2):
        r = np.sqrt(r2)
        e = np.exp(-_SQRT5 * r)
        return (1.0 + _SQRT5 * r + 5.0 * r2 / 3.0) * e, -(5.0 / 6.0) * (1.0 + _SQRT5 * r) * e


class RationalQuadratic(_Stationary):
    """Rational quadratic kernel: a scale mixture of SE kernels.

    k(x, x') = s2 * (1 + r² / (2 alpha))^(-alpha)

    Parameters
    ----------
    variance, lengthscale, variance_bounds, lengthscale_bounds
        As for :class:`SquaredExponential`.
    alpha : float, default=1.0
        Shape (scale-mixture) parameter; alpha → ∞ gives the SE kernel.
    alpha_bounds : pair of float or "fixed", default=(1e-5, 1e5)
    """

    kind = "RQ"
    _hyperparameter_names = ("variance", "lengthscale", "alpha")

    def __init__(
        self,
        variance=1.0,
        lengthscale=1.0,
        alpha=1.0,
        variance_bounds=(1e-5, 1e5),
        lengthscale_bounds=(1e-5, 1e5),
        alpha_bounds=(1e-5, 1e5),
    ):
        super().__init__(variance, lengthscale, variance_bounds, lengthscale_bounds)
        self.alpha = alpha
        self.alpha_bounds = alpha_bounds

    @property
    def hyperparameter_alpha(self):
        return Hyperparameter("alpha", "numeric", self.alpha_bounds)

    def _profile(self, r2):
        alpha = float(self.alpha)
        base = 1.0 + r2 / (2.0 * alpha)
        g = base**-alpha
        return g, -0.5 * g / base

    def _extra_gradients(self, r2, K):
        alpha = float(self.alpha)
        u = r2 / (2.0 * alpha)
        return [("alpha", K * alpha * (u / (1.0 + u) - np.log1p(u)))]


class Periodic(CatalogueKernel):
    """Periodic kernel (ExpSineSquared form) with amplitude, on one column.

    k(x, x') = s2 * exp(-2 sin²(pi |x - x'| / p) / l²)

    Only defined on a single input column: the same formula on a Euclidean
    distance over several columns is not positive semi-definite. Restrict it
    to a column with :class:`ActiveColumns`.

    Parameters
    ----------
    variance : float, default=1.0
    lengthscale : float, default=1.0
        Smoothness within a period (relative to the period).
    period : float, default=1.0
    variance_bounds, lengthscale_bounds, period_bounds : pair or "fixed"
    """

    kind = "PER"
    _hyperparameter_names = ("variance", "lengthscale", "period")

    def __init__(
        self,
        variance=1.0,
        lengthscale=1.0,
        period=1.0,
        variance_bounds=(1e-5, 1e5),
        lengthscale_bounds=(1e-5, 1e5),
        period_bounds=(1e-5, 1e5),
    ):
        self.variance = variance
        self.lengthscale = lengthscale
        self.period = period
        self.variance_bounds = variance_bounds
        self.lengthscale_bounds = lengthscale_bounds
        self.period_bounds = period_bounds

    @property
    def hyperparameter_lengthscale(self):
        return Hyperparameter("lengthscale", "numeric", self.lengthscale_bounds)

    @property
    def hyperparameter_period(self):
        return Hyperparameter("period", "numeric", self.period_bounds)

    def is_stationary(self):
        return True

    def diag(self, X):
        return np.full(_as_2d(X).shape[0], float(self.variance))

    @staticmethod
    def _one_column(X, name):
        X = _as_2d(X, name)
        if X.shape[1] != 1:
            raise ValueError(
                f"The periodic kernel acts on exactly one column, but {name} has {X.shape[1]}; "
                "wrap it in ActiveColumns(Periodic(...), columns=[j])."
            )
        return X

    def _phase(self, X, Y, eval_gradient):
        """a = pi |x − x'| / p and sin(a), after checking the inputs."""
        _check_gradient_request(Y, eval_gradient)
        X = self._one_column(X, "X")
        Y = X if Y is None else self._one_column(Y, "Y")
        arg = (np.pi / float(self.period)) * np.abs(X - Y.T)
        return arg, np.sin(arg)

    def __call__(self, X, Y=None, eval_gradient=False):
        arg, s = self._phase(X, Y, eval_gradient)
        inv_l2 = 1.0 / float(self.lengthscale) ** 2
        K = float(self.variance) * np.exp(-2.0 * inv_l2 * s * s)
        if not eval_gradient:
            return K
        return K, self._gradient_stack(
            [
                ("variance", K),
                ("lengthscale", K * 4.0 * inv_l2 * s * s),
                ("period", K * 4.0 * inv_l2 * s * np.cos(arg) * arg),
            ]
        )


def centred_periodic_normaliser(z):
    """D = 1 − e^(−z) I0(z) and dD/dz = e^(−z) (I0(z) − I1(z)) for the centred periodic kernel, z = 1/l².

    D is the variance left once the constant part e^(−z) I0(z) (the mean of the
    periodic kernel over a period) is removed; for small z it is computed from
    the series of I0 so that D ≈ z keeps its relative precision.
    """
    z = float(z)
    if z < 0.5:
        term, excess = 1.0, 0.0  # I0(z) − 1 = Σ_{k≥1} (z²/4)^k / (k!)²
        for k in range(1, 12):
            term *= 0.25 * z * z / (k * k)
            excess += term
        D = -math.expm1(-z) - math.exp(-z) * excess
    else:
        D = 1.0 - float(i0e(z))
    return D, float(i0e(z) - i1e(z))


class CentredPeriodic(Periodic):
    """Periodic kernel without its constant part, on one column (Lloyd et al. 2014).

    k(x, x') = s2 * (exp(cos(2 pi |x - x'| / p) / l²) − I0(1/l²)) / (exp(1/l²) − I0(1/l²))

    The periodic kernel exp(−2 sin²(pi d / p) / l²) = e^(−z) exp(z cos(2 pi d / p)),
    z = 1/l², has the constant e^(−z) I0(z) (its mean over a period; I0 is the
    modified Bessel function) as one of its parts: a draw is a periodic function
    plus a random offset. Subtracting the constant and rescaling to k(x, x) = s2
    leaves draws with mean zero over every period, so ``CPER * LIN`` is a
    periodic pattern whose amplitude grows linearly, without a linear trend of
    its own, and ``CPER + C`` says in the structure that there is an offset.
    As l → ∞ the kernel tends to s2 cos(2 pi d / p).

    Evaluated as s2 (1 + expm1(−2 z sin²(pi d / p)) / D), D = 1 − e^(−z) I0(z).

    Parameters
    ----------
    As for :class:`Periodic`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsearch.kernels import CentredPeriodic
    >>> x = np.linspace(0, 1, 200, endpoint=False)[:, None]
    >>> k = CentredPeriodic(lengthscale=0.7, period=1.0)
    >>> bool(abs(k(np.zeros((1, 1)), x).mean()) < 1e-12)  # no constant part: mean zero over a period
    True
    """

    kind = "CPER"

    def __call__(self, X, Y=None, eval_gradient=False):
        arg, s = self._phase(X, Y, eval_gradient)
        z = 1.0 / float(self.lengthscale) ** 2
        D, dD_dz = centred_periodic_normaliser(z)
        E = np.expm1(-2.0 * z * s * s)
        variance = float(self.variance)
        K = variance * (1.0 + E / D)
        if not eval_gradient:
            return K
        one_plus_E = 1.0 + E
        return K, self._gradient_stack(
            [
                ("variance", K),
                # ∂K/∂log l = −2z ∂K/∂z, ∂E/∂z = −2 sin² (1 + E)
                ("lengthscale", variance * 2.0 * z * (2.0 * s * s * one_plus_E * D + E * dD_dz) / D**2),
                ("period", variance * 4.0 * z * s * np.cos(arg) * arg * one_plus_E / D),
            ]
        )


class Linear(CatalogueKernel):
    """Linear kernel with amplitude and location (offset).

    k(x, x') = s2 * Σ_k (x_k - c_k)(x'_k - c_k)

    A draw is a linear function that crosses zero at x = c (in one column).
    ``offset`` is a location and may be negative, so its ``theta`` entries are
    the offsets themselves, not their logarithms, and its bounds are plain values.

    Parameters
    ----------
    variance : float, default=1.0
        Prior variance of the slope.
    offset : float or array-like, default=0.0
        One location for all columns, or one per column.
    variance_bounds : pair or "fixed", default=(1e-5, 1e5)
    offset_bounds : pair or "fixed", default=(-1e5, 1e5)
    """

    kind = "LIN"
    _hyperparameter_names = ("variance", "offset")
    _unconstrained = ("offset",)

    def __init__(self, variance=1.0, offset=0.0, variance_bounds=(1e-5, 1e5), offset_bounds=(-1e5, 1e5)):
        self.variance = variance
        self.offset = offset
        self.variance_bounds = variance_bounds
        self.offset_bounds = offset_bounds

    @property
    def hyperparameter_offset(self):
        if np.iterable(self.offset) and len(self.offset) > 1:
            return Hyperparameter("offset", "numeric", self.offset_bounds, len(self.offset))
        return Hyperparameter("offset", "numeric", self.offset_bounds)

    def is_stationary(self):
        return False

    def _centred(self, X):
        offset = np.asarray(self.offset, dtype=float).ravel()
        if offset.size > 1 and offset.size != X.shape[1]:
            raise ValueError(f"Linear has {offset.size} offsets but X has {X.shape[1]} columns.")
        return X - offset

    def diag(self, X):
        Xc = self._centred(_as_2d(X))
        return float(self.variance) * np.einsum("ij,ij->i", Xc, Xc)

    def __call__(self, X, Y=None, eval_gradient=False):
        _check_gradient_request(Y, eval_gradient)
        Xc = self._centred(_as_2d(X))
        Yc = Xc if Y is None else self._centred(_as_2d(Y, "Y"))
        variance = float(self.variance)
        K = variance * (Xc @ Yc.T)
        if not eval_gradient:
            return K
        if self._fixed("offset"):
            d_offset = np.empty(K.shape + (0,))
        elif np.iterable(self.offset) and len(self.offset) > 1:
            # dk/dc_k = -s2 ((x_k - c_k) + (x'_k - c_k))
            d_offset = -variance * (Xc[:, np.newaxis, :] + Xc[np.newaxis, :, :])
        else:
            s = Xc.sum(axis=1)
            d_offset = -variance * (s[:, np.newaxis] + s[np.newaxis, :])
        return K, self._gradient_stack([("variance", K), ("offset", d_offset)])


class Constant(CatalogueKernel):
    """Constant kernel: k(x, x') = s2.

    Parameters
    ----------
    variance : float, default=1.0
    variance_bounds : pair or "fixed", default=(1e-5, 1e5)
    """

    kind = "C"

    def __init__(self, variance=1.0, variance_bounds=(1e-5, 1e5)):
        self.variance = variance
        self.variance_bounds = variance_bounds

    @property
    def requires_vector_input(self):
        return False

    def is_stationary(self):
        return True

    def diag(self, X):
        return np.full(_num_samples(X), float(self.variance))

    def __call__(self, X, Y=None, eval_gradient=False):
        _check_gradient_request(Y, eval_gradient)
        n_y = _num_samples(X if Y is None else Y)
        K = np.full((_num_samples(X), n_y), float(self.variance))
        if not eval_gradient:
            return K
        return K, self._gradient_stack([("variance", K)])


class WhiteNoise(CatalogueKernel):
    """White-noise kernel: s2 on the diagonal of k(X, X), zero elsewhere.

    k(x_i, x_j) = s2 * [i == j] for the training covariance (``Y=None``) and
    0 for any cross-covariance, as scikit-learn's ``WhiteKernel``.

    Parameters
    ----------
    variance : float, default=1.0
    variance_bounds : pair or "fixed", default=(1e-5, 1e5)
    """

    kind = "WN"

    def __init__(self, variance=1.0, variance_bounds=(1e-5, 1e5)):
        self.variance = variance
        self.variance_bounds = variance_bounds

    @property
    def requires_vector_input(self):
        return False

    def is_stationary(self):
        return True

    def diag(self, X):
        return np.full(_num_samples(X), float(self.variance))

    def __call__(self, X, Y=None, eval_gradient=False):
        _check_gradient_request(Y, eval_gradient)
        n = _num_samples(X)
        if Y is not None:
            return np.zeros((n, _num_samples(Y)))
        K = float(self.variance) * np.eye(n)
        if not eval_gradient:
            return K
        return K, self._gradient_stack([("variance", K)])


def _num_samples(X):
    if isinstance(X, numbers.Number):
        raise ValueError("Expected an array of samples, got a scalar.")
    return len(X)


# Catalogue names (the text notation) for the classes.
SE = SquaredExponential
RQ = RationalQuadratic
PER = Periodic
CPER = CentredPeriodic
LIN = Linear
M12 = Matern12
M32 = Matern32
M52 = Matern52
C = Constant
WN = WhiteNoise

#: Kernel class for every kind name of the grammar catalogue.
KERNEL_CLASSES = {cls.kind: cls for cls in (SE, RQ, PER, CPER, LIN, M12, M32, M52, C, WN)}
