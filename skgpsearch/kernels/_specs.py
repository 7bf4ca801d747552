"""One home per base-kernel kind: the numeric specs of the catalogue.

Each kind of the grammar catalogue (:data:`skgpsearch.grammar.KINDS`, plain
data: parameters, algebraic facts, description phrases) has here one section
with everything numeric about it:

- its scikit-learn kernel class (whose docstring carries the formula);
- for distance-based kinds, its :class:`StationaryProfile`: g(r²) and the
  derivatives that the scikit-learn kernel and the engine's fast leaves use;
- its :class:`KernelSpec`: the class, the data-aware default value and bounds
  rule of every hyperparameter, the amplitude that makes a factor of unit
  prior variance, the scikit-learn kernels :func:`~skgpsearch.kernels.from_kernel`
  reads as this kind, and the hyperprior keys.

Everything else (conversion, defaults, priors, engine leaves, descriptions)
looks a kind's behaviour up in :data:`SPECS` (or in the kind's facts) and
never compares kind names, so a new base kernel is one section here plus one
``KernelKind`` entry in the grammar catalogue (see ``docs/extending.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import i0e, i1e
from sklearn.gaussian_process import kernels as sk
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

from ..grammar import Base, Expr, KernelKind, add, get_kind, multiply
from ._core import (
    Bounds,
    CatalogueKernel,
    StationaryProfile,
    _as_2d,
    _check_gradient_request,
    _num_samples,
    _Stationary,
)
from ._summary import DataSummary

__all__ = [
    "KernelSpec",
    "SklearnReader",
    "StationaryProfile",
    "SPECS",
    "KERNEL_CLASSES",
    "get_spec",
    "spec_of",
    "sklearn_readers",
]

Columns = tuple[int, ...]
#: ``rule(columns, summary) -> (initial value, (lower, upper))`` of one hyperparameter.
DefaultRule = Callable[[Columns, "DataSummary"], tuple]

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


@dataclass(frozen=True)
class SklearnReader:
    """How :func:`~skgpsearch.kernels.from_kernel` reads one scikit-learn kernel class as a kind.

    Parameters
    ----------
    kernel_type : type
        The scikit-learn kernel class (its subclasses too, unless a reader
        is registered for the subclass itself).
    read : callable
        ``read(kernel, columns) -> Expr or None``: the structure carrying
        the kernel's values, or None when the kernel is of ``kernel_type``
        but not of this kind (a Matérn of another nu). ``columns`` is the
        tuple of columns the kernel acts on, None when unknown.
    accepts : str
        Which kernels of the type this reader takes, for the error message
        when no reader of the type takes a kernel.
    """

    kernel_type: type
    read: Callable[[Kernel, Columns | None], Expr | None]
    accepts: str = ""


def _unit(columns: Columns, summary: DataSummary) -> float:
    return 1.0


@dataclass(frozen=True, eq=False)
class KernelSpec:
    """Everything numeric about one base-kernel kind.

    Parameters
    ----------
    kernel_class : type
        The scikit-learn kernel (a :class:`CatalogueKernel`); its ``kind``
        attribute names the grammar kind, the only place the name is written.
    defaults : mapping of str to callable
        For every hyperparameter of the kind, the data-aware rule
        ``rule(columns, summary) -> (initial value, (lower, upper))`` (see
        :func:`~skgpsearch.kernels.default_hyperparameters`), in the order
        the defaults are reported.
    unit_amplitude : callable, default: always 1
        ``unit_amplitude(columns, summary)``: the variance that gives a factor
        of this kind unit prior variance on the data (the value of a fixed
        amplitude in a product).
    sklearn_readers : tuple of SklearnReader, default=()
        scikit-learn kernels that read back as this kind.
    prior_keys : mapping of str to str, default={}
        Hyperparameters whose hyperprior standard deviation is not the one
        named like them in :data:`~skgpsearch.criteria.DEFAULT_PRIOR_SD`
        (PER: ``{"lengthscale": "periodic_lengthscale"}``).
    """

    kernel_class: type
    defaults: Mapping[str, DefaultRule]
    unit_amplitude: Callable[[Columns, DataSummary], float] = _unit
    sklearn_readers: tuple[SklearnReader, ...] = ()
    prior_keys: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """Kind name in the text notation."""
        return self.kernel_class.kind

    @property
    def kind(self) -> KernelKind:
        """The kind's plain-data facts in the grammar catalogue."""
        return get_kind(self.kernel_class.kind)

    @property
    def profile(self) -> StationaryProfile | None:
        """g(r²) and its derivatives for distance-based kinds, else None."""
        return getattr(self.kernel_class, "profile", None)

    @property
    def unconstrained(self) -> tuple[str, ...]:
        """Hyperparameters whose ``theta`` entries are their values, not logarithms (LIN's offset)."""
        return tuple(self.kernel_class._unconstrained)

    def default_hyperparameters(self, columns: Columns, summary: DataSummary) -> dict[str, tuple]:
        """``{name: (initial value, (lower, upper))}`` on ``columns`` (see :attr:`defaults`)."""
        return {name: rule(columns, summary) for name, rule in self.defaults.items()}

    def prior_key(self, name: str) -> str:
        """Key of the hyperprior standard deviation of hyperparameter ``name``."""
        return self.prior_keys.get(name, name)


# -- default rules shared by several kinds ----------------------------------------------
# v is the target variance (1 without targets); see the table in skgpsearch.kernels._defaults.


def _inside(init, low, high):
    """Widen (low, high) if needed so that low < init < high."""
    if low >= init:
        low = init / 10.0
    if high <= init:
        high = init * 10.0
    return init, (low, high)


def _amplitude(variance):
    return (variance, (1e-6 * variance, 1e4 * variance))


def _signal_variance(columns, summary):
    """v, within v × [1e-6, 1e4]."""
    return _amplitude(summary.target_variance)


def _input_lengthscale(columns, summary):
    """The spread of the columns, within [½ smallest gap, 100 × range] (raised to any lengthscale floor)."""
    spread, span = summary.spread(columns), summary.range(columns)
    gap = summary.smallest_gap(columns)
    low = 0.5 * gap if gap is not None else 1e-3 * span
    floor = summary.lengthscale_floor_of(columns)
    if floor is not None:
        # discretised features: no lengthscale shorter than the spacing of the values
        # (Mrkšić 2014, §4.4.1), so that the GP cannot fit isolated values
        low = max(low, floor)
        spread = max(spread, 2.0 * floor)
    return _inside(spread, low, 100.0 * span)


#: Distance-based kinds without shape parameters (SE, the Matérns).
DISTANCE_DEFAULTS: Mapping[str, DefaultRule] = {"variance": _signal_variance, "lengthscale": _input_lengthscale}


# -- conversion helpers of the readers ---------------------------------------------------


def _value(value):
    arr = np.asarray(value, dtype=float).ravel()
    return float(arr[0]) if arr.size == 1 else tuple(arr)


def _require_columns(columns, kernel):
    if columns is None:
        raise ValueError(
            f"{kernel!r} is not restricted to columns; pass n_features so that it acts on all of them."
        )
    return columns


def read_leaf(name: str, columns: Columns | None, params: dict, kernel: Kernel) -> Base:
    """The base kernel of kind ``name`` on ``columns`` carrying ``params`` read from ``kernel``."""
    kind = get_kind(name)
    if kind.columns == "none":
        return Base(name, (), params)
    cols = _require_columns(columns, kernel)
    if kind.columns == "any":
        lengthscale = params.get("lengthscale")
        if isinstance(lengthscale, tuple):
            if len(lengthscale) == 1:
                params["lengthscale"] = lengthscale[0]
            else:
                raise ValueError(
                    f"{kernel!r} has one lengthscale per column; structures use one lengthscale per "
                    "base kernel (write a product of per-column kernels instead)."
                )
    return Base(name, cols, params)


def _scaled_leaf_reader(kernel_class, **names):
    """Reader of a scikit-learn kernel without amplitude: ``names`` maps the kind's parameters to its attributes."""

    def read(kernel, columns):
        params = {"variance": 1.0, **{ours: _value(getattr(kernel, theirs)) for ours, theirs in names.items()}}
        return read_leaf(kernel_class.kind, columns, params, kernel)

    return read


def _matern_reader(kernel_class, nu):
    """Reader of scikit-learn's ``Matern`` with smoothness ``nu`` and one lengthscale."""

    def read(kernel, columns):
        if kernel.nu != nu or (np.ndim(kernel.length_scale) and np.size(kernel.length_scale) > 1):
            return None
        return read_leaf(kernel_class.kind, columns, {"variance": 1.0, "lengthscale": _value(kernel.length_scale)}, kernel)

    return SklearnReader(sk.Matern, read, f"isotropic Matern(nu={nu})")


# =======================================================================================
# SE: squared exponential
# =======================================================================================


#: The engine's leaves keep the argument of a kernel's exponential above this (each profile's
#: ``negligible_r2``): below about −708 exp underflows, and numpy computes underflowing results on a scalar
#: path up to ten times slower (on 130 000 pairs 0.07 ms became 0.7 ms; at a short lengthscale most pairs
#: underflow). exp(−700) ≈ 1e-304 is as negligible as 0 beside any diagonal.
EXP_FLOOR = -700.0


def _exp_in_place(argument: np.ndarray) -> np.ndarray:
    """exp of a temporary array, in its own storage."""
    return np.exp(argument, out=argument)


class _SquaredExponentialProfile(StationaryProfile):
    """g = exp(−r²/2); −∂log g/∂log l = r²."""

    negligible_r2 = -2.0 * EXP_FLOOR
    profile_in_place = True
    contraction_is_r2 = True

    def kernel_profile(self, r2, shape):
        g = np.exp(-0.5 * r2)
        return g, -0.5 * g

    def leaf_profile(self, r2, shape):
        return _exp_in_place(np.multiply(r2, -0.5, out=r2)), None

    def leaf_contractions(self, r2, gk, shape, state, free):
        return {"lengthscale": float(np.dot(gk, r2))} if "lengthscale" in free else {}


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
    profile = _SquaredExponentialProfile()


def _read_rbf(kernel, columns):
    lengthscale = np.atleast_1d(np.asarray(kernel.length_scale, dtype=float))
    if lengthscale.size == 1:
        return read_leaf(SquaredExponential.kind, columns, {"variance": 1.0, "lengthscale": float(lengthscale[0])}, kernel)
    cols = _require_columns(columns, kernel)
    if len(cols) != lengthscale.size:
        raise ValueError(f"{kernel!r} has {lengthscale.size} lengthscales for {len(cols)} columns.")
    # exp(-Σ_k d_k²/2l_k²) = Π_k exp(-d_k²/2l_k²): an ARD RBF is a product of per-column SEs.
    return multiply(
        *(Base(SquaredExponential.kind, c, {"variance": 1.0, "lengthscale": float(l)}) for c, l in zip(cols, lengthscale))
    )


_SE_SPEC = KernelSpec(
    SquaredExponential,
    defaults=DISTANCE_DEFAULTS,
    sklearn_readers=(SklearnReader(sk.RBF, _read_rbf, "RBF"),),
)


# =======================================================================================
# RQ: rational quadratic
# =======================================================================================


class _RationalQuadraticProfile(StationaryProfile):
    """g = (1 + u)^(−α), u = r²/(2α); −∂log g/∂log l = r²/(1 + u); ∂log g/∂log α = α (u/(1 + u) − log(1 + u))."""

    shape_parameters = ("alpha",)

    def kernel_profile(self, r2, shape):
        alpha = shape["alpha"]
        base = 1.0 + r2 / (2.0 * alpha)
        g = base**-alpha
        return g, -0.5 * g / base

    def kernel_shape_gradients(self, r2, K, shape):
        alpha = shape["alpha"]
        u = r2 / (2.0 * alpha)
        return [("alpha", K * alpha * (u / (1.0 + u) - np.log1p(u)))]

    def leaf_profile(self, r2, shape):
        log1p_u = np.log1p(r2 * (0.5 / shape["alpha"]))
        return _exp_in_place(-shape["alpha"] * log1p_u), log1p_u

    def leaf_contractions(self, r2, gk, shape, state, free):
        alpha = shape["alpha"]
        out = {}
        u_ratio = r2 * (0.5 / alpha)
        u_ratio /= 1.0 + u_ratio  # u / (1 + u)
        if "lengthscale" in free:
            out["lengthscale"] = float(np.dot(gk, (2.0 * alpha) * u_ratio))  # r² / (1 + u)
        if "alpha" in free:
            u_ratio -= state  # minus log(1 + u)
            out["alpha"] = alpha * float(np.dot(gk, u_ratio))
        return out


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
    profile = _RationalQuadraticProfile()
    _hyperparameter_names = ("variance", "lengthscale", "alpha")

    def __init__(
        self,
        variance: float = 1.0,
        lengthscale: float | Sequence[float] | np.ndarray = 1.0,
        alpha: float = 1.0,
        variance_bounds: Bounds = (1e-5, 1e5),
        lengthscale_bounds: Bounds = (1e-5, 1e5),
        alpha_bounds: Bounds = (1e-5, 1e5),
    ) -> None:
        super().__init__(variance, lengthscale, variance_bounds, lengthscale_bounds)
        self.alpha = alpha
        self.alpha_bounds = alpha_bounds

    @property
    def hyperparameter_alpha(self) -> Hyperparameter:
        return Hyperparameter("alpha", "numeric", self.alpha_bounds)


def _alpha(columns, summary):
    """1, within [0.1, 1e3].

    As α → 0 an RQ tends to a constant kernel (at α = 1e-3 points ten
    lengthscales apart still correlate at 0.99; at 0.1, at 0.54): the evidence
    then takes it for a trend or an amplitude that never changes inside the
    data, and its forecast reverts to the mean (co2: 3.66 ppm RMSE against 1.40).
    """
    return (1.0, (0.1, 1e3))


_RQ_SPEC = KernelSpec(
    RationalQuadratic,
    defaults={**DISTANCE_DEFAULTS, "alpha": _alpha},
    sklearn_readers=(
        SklearnReader(sk.RationalQuadratic, _scaled_leaf_reader(RationalQuadratic, lengthscale="length_scale", alpha="alpha")),
    ),
)


# =======================================================================================
# PER: periodic
# =======================================================================================


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
        variance: float = 1.0,
        lengthscale: float = 1.0,
        period: float = 1.0,
        variance_bounds: Bounds = (1e-5, 1e5),
        lengthscale_bounds: Bounds = (1e-5, 1e5),
        period_bounds: Bounds = (1e-5, 1e5),
    ) -> None:
        self.variance = variance
        self.lengthscale = lengthscale
        self.period = period
        self.variance_bounds = variance_bounds
        self.lengthscale_bounds = lengthscale_bounds
        self.period_bounds = period_bounds

    @property
    def hyperparameter_lengthscale(self) -> Hyperparameter:
        return Hyperparameter("lengthscale", "numeric", self.lengthscale_bounds)

    @property
    def hyperparameter_period(self) -> Hyperparameter:
        return Hyperparameter("period", "numeric", self.period_bounds)

    def is_stationary(self) -> bool:
        return True

    def diag(self, X: np.ndarray) -> np.ndarray:
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

    def __call__(
        self, X: np.ndarray, Y: np.ndarray | None = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
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


def _period(columns, summary):
    """The geometric mean of [2 × the sampling step, range of the column / ``summary.min_cycles``].

    Twice the step is the Nyquist period: the median spacing of the distinct
    values, or the step of the grid they lie on when some values are missing
    from it (:meth:`DataSummary.nyquist_spacing`).
    """
    span = summary.range(columns)
    gap = summary.nyquist_spacing(columns)
    low = 2.0 * gap if gap is not None else 1e-3 * span
    high = span / summary.min_cycles
    if low >= high:
        low = high / 100.0
    return (float(np.sqrt(low * high)), (low, high))


def _periodic_lengthscale(columns, summary):
    """1 (relative to the period), within [0.05, 50]."""
    return (1.0, (0.05, 50.0))


#: Periodic kinds: the period before the lengthscale, which is relative to it.
PERIODIC_DEFAULTS: Mapping[str, DefaultRule] = {
    "variance": _signal_variance,
    "period": _period,
    "lengthscale": _periodic_lengthscale,
}
#: The periodic lengthscale has its own hyperprior (it is relative to the period).
PERIODIC_PRIOR_KEYS: Mapping[str, str] = {"lengthscale": "periodic_lengthscale"}

_PER_SPEC = KernelSpec(
    Periodic,
    defaults=PERIODIC_DEFAULTS,
    sklearn_readers=(
        SklearnReader(sk.ExpSineSquared, _scaled_leaf_reader(Periodic, lengthscale="length_scale", period="periodicity")),
    ),
    prior_keys=PERIODIC_PRIOR_KEYS,
)


# =======================================================================================
# CPER: centred periodic
# =======================================================================================


def centred_periodic_normaliser(z: float) -> tuple[float, float]:
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

    def __call__(
        self, X: np.ndarray, Y: np.ndarray | None = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
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


_CPER_SPEC = KernelSpec(CentredPeriodic, defaults=PERIODIC_DEFAULTS, prior_keys=PERIODIC_PRIOR_KEYS)


# =======================================================================================
# LIN: linear
# =======================================================================================


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

    def __init__(
        self,
        variance: float = 1.0,
        offset: float | Sequence[float] | np.ndarray = 0.0,
        variance_bounds: Bounds = (1e-5, 1e5),
        offset_bounds: Bounds = (-1e5, 1e5),
    ) -> None:
        self.variance = variance
        self.offset = offset
        self.variance_bounds = variance_bounds
        self.offset_bounds = offset_bounds

    @property
    def hyperparameter_offset(self) -> Hyperparameter:
        if np.iterable(self.offset) and len(self.offset) > 1:
            return Hyperparameter("offset", "numeric", self.offset_bounds, len(self.offset))
        return Hyperparameter("offset", "numeric", self.offset_bounds)

    def is_stationary(self) -> bool:
        return False

    def _centred(self, X):
        offset = np.asarray(self.offset, dtype=float).ravel()
        if offset.size > 1 and offset.size != X.shape[1]:
            raise ValueError(f"Linear has {offset.size} offsets but X has {X.shape[1]} columns.")
        return X - offset

    def diag(self, X: np.ndarray) -> np.ndarray:
        Xc = self._centred(_as_2d(X))
        return float(self.variance) * np.einsum("ij,ij->i", Xc, Xc)

    def __call__(
        self, X: np.ndarray, Y: np.ndarray | None = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
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


def _inverse_input_variance(columns, summary):
    """1 / Σ var(x_c): the variance of a linear factor of unit prior variance on the data."""
    summary._check(columns)
    total = float(np.sum(summary.std[list(columns)] ** 2))
    return 1.0 / total if total > 0 else 1.0


def _linear_variance(columns, summary):
    """v / Σ var(x_c), so that the linear term starts with variance v; within that × [1e-6, 1e4]."""
    return _amplitude(summary.target_variance * _inverse_input_variance(columns, summary))


def _offset(columns, summary):
    """The mean of each column, within [min − range, max + range]."""
    cols = list(columns)
    span = summary.maximum[cols] - summary.minimum[cols]
    span = np.where(span > 0, span, 1.0)
    return (
        summary.mean[cols].copy(),
        (summary.minimum[cols] - span, summary.maximum[cols] + span),
    )


def _read_dot_product(kernel, columns):
    # sigma_0² + x · x' is a constant plus a linear kernel with zero offset
    cols = _require_columns(columns, kernel)
    return add(
        Base(Constant.kind, (), {"variance": kernel.sigma_0**2}),
        Base(Linear.kind, cols, {"variance": 1.0, "offset": [0.0] * len(cols)}),
    )


_LIN_SPEC = KernelSpec(
    Linear,
    defaults={"variance": _linear_variance, "offset": _offset},
    unit_amplitude=_inverse_input_variance,
    sklearn_readers=(SklearnReader(sk.DotProduct, _read_dot_product, "DotProduct"),),
)


# =======================================================================================
# M12: Matérn 1/2
# =======================================================================================


class _Matern12Profile(StationaryProfile):
    """g = exp(−r); −∂log g/∂log l = r."""

    negligible_r2 = EXP_FLOOR**2

    def kernel_profile(self, r2, shape):
        r = np.sqrt(r2)
        g = np.exp(-r)
        # dg/dr² = -exp(-r) / (2 r); where r = 0 every gradient term it multiplies is 0.
        dg = -0.5 * np.divide(g, r, out=np.zeros_like(r), where=r > 0)
        return g, dg

    def leaf_profile(self, r2, shape):
        return _exp_in_place(-np.sqrt(r2)), None

    def leaf_contractions(self, r2, gk, shape, state, free):
        return {"lengthscale": float(np.dot(gk, np.sqrt(r2)))} if "lengthscale" in free else {}


class Matern12(_Stationary):
    """Matérn kernel with ν = 1/2 (exponential kernel).

    k(x, x') = s2 * exp(-r),  r = sqrt(Σ_k (x_k - x'_k)² / l_k²)

    Parameters as for :class:`SquaredExponential`.
    """

    kind = "M12"
    profile = _Matern12Profile()


_M12_SPEC = KernelSpec(Matern12, defaults=DISTANCE_DEFAULTS, sklearn_readers=(_matern_reader(Matern12, 0.5),))


# =======================================================================================
# M32: Matérn 3/2
# =======================================================================================


class _Matern32Profile(StationaryProfile):
    """g = (1 + √3 r) exp(−√3 r); −∂log g/∂log l = 3 r² / (1 + √3 r)."""

    negligible_r2 = EXP_FLOOR**2 / 3.0

    def kernel_profile(self, r2, shape):
        r = np.sqrt(r2)
        e = np.exp(-_SQRT3 * r)
        return (1.0 + _SQRT3 * r) * e, -1.5 * e

    def leaf_profile(self, r2, shape):
        r = np.sqrt(r2)
        k = _exp_in_place(-_SQRT3 * r)
        k *= 1.0 + _SQRT3 * r
        return k, None

    def leaf_contractions(self, r2, gk, shape, state, free):
        if "lengthscale" not in free:
            return {}
        return {"lengthscale": float(np.dot(gk, 3.0 * r2 / (1.0 + _SQRT3 * np.sqrt(r2))))}


class Matern32(_Stationary):
    """Matérn kernel with ν = 3/2.

    k(x, x') = s2 * (1 + sqrt(3) r) * exp(-sqrt(3) r)

    Parameters as for :class:`SquaredExponential`.
    """

    kind = "M32"
    profile = _Matern32Profile()


_M32_SPEC = KernelSpec(Matern32, defaults=DISTANCE_DEFAULTS, sklearn_readers=(_matern_reader(Matern32, 1.5),))


# =======================================================================================
# M52: Matérn 5/2
# =======================================================================================


class _Matern52Profile(StationaryProfile):
    """g = (1 + √5 r + 5r²/3) exp(−√5 r); −∂log g/∂log l = (5/3) r² (1 + √5 r) / (1 + √5 r + 5r²/3)."""

    negligible_r2 = EXP_FLOOR**2 / 5.0

    def kernel_profile(self, r2, shape):
        r = np.sqrt(r2)
        e = np.exp(-_SQRT5 * r)
        return (1.0 + _SQRT5 * r + 5.0 * r2 / 3.0) * e, -(5.0 / 6.0) * (1.0 + _SQRT5 * r) * e

    def leaf_profile(self, r2, shape):
        r = np.sqrt(r2)
        k = _exp_in_place(-_SQRT5 * r)
        k *= 1.0 + _SQRT5 * r + (5.0 / 3.0) * r2
        return k, None

    def leaf_contractions(self, r2, gk, shape, state, free):
        if "lengthscale" not in free:
            return {}
        a = 1.0 + _SQRT5 * np.sqrt(r2)
        return {"lengthscale": float(np.dot(gk, (5.0 / 3.0) * r2 * a / (a + (5.0 / 3.0) * r2)))}


class Matern52(_Stationary):
    """Matérn kernel with ν = 5/2.

    k(x, x') = s2 * (1 + sqrt(5) r + 5 r² / 3) * exp(-sqrt(5) r)

    Parameters as for :class:`SquaredExponential`.
    """

    kind = "M52"
    profile = _Matern52Profile()


_M52_SPEC = KernelSpec(Matern52, defaults=DISTANCE_DEFAULTS, sklearn_readers=(_matern_reader(Matern52, 2.5),))


# =======================================================================================
# C: constant
# =======================================================================================


class _InputFreeKernel(CatalogueKernel):
    """The common part of the kernels without input dependence (C, WN): a variance, s2 on the diagonal."""

    def __init__(self, variance: float = 1.0, variance_bounds: Bounds = (1e-5, 1e5)) -> None:
        self.variance = variance
        self.variance_bounds = variance_bounds

    @property
    def requires_vector_input(self) -> bool:
        return False

    def is_stationary(self) -> bool:
        return True

    def diag(self, X: np.ndarray) -> np.ndarray:
        return np.full(_num_samples(X), float(self.variance))


class Constant(_InputFreeKernel):
    """Constant kernel: k(x, x') = s2.

    Parameters
    ----------
    variance : float, default=1.0
    variance_bounds : pair or "fixed", default=(1e-5, 1e5)
    """

    kind = "C"

    def __call__(
        self, X: np.ndarray, Y: np.ndarray | None = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        _check_gradient_request(Y, eval_gradient)
        n_y = _num_samples(X if Y is None else Y)
        K = np.full((_num_samples(X), n_y), float(self.variance))
        if not eval_gradient:
            return K
        return K, self._gradient_stack([("variance", K)])


_C_SPEC = KernelSpec(
    Constant,
    defaults={"variance": _signal_variance},
    sklearn_readers=(
        SklearnReader(sk.ConstantKernel, lambda kernel, columns: Base(Constant.kind, (), {"variance": kernel.constant_value})),
    ),
)


# =======================================================================================
# WN: white noise
# =======================================================================================


class WhiteNoise(_InputFreeKernel):
    """White-noise kernel: s2 on the diagonal of k(X, X), zero elsewhere.

    k(x_i, x_j) = s2 * [i == j] for the training covariance (``Y=None``) and
    0 for any cross-covariance, as scikit-learn's ``WhiteKernel``.

    Parameters
    ----------
    variance : float, default=1.0
    variance_bounds : pair or "fixed", default=(1e-5, 1e5)
    """

    kind = "WN"

    def __call__(
        self, X: np.ndarray, Y: np.ndarray | None = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        _check_gradient_request(Y, eval_gradient)
        n = _num_samples(X)
        if Y is not None:
            return np.zeros((n, _num_samples(Y)))
        K = float(self.variance) * np.eye(n)
        if not eval_gradient:
            return K
        return K, self._gradient_stack([("variance", K)])


def _noise_variance(columns, summary):
    """v / 10, within v × [1e-6, 10]."""
    v = summary.target_variance
    return (0.1 * v, (1e-6 * v, 10.0 * v))


_WN_SPEC = KernelSpec(
    WhiteNoise,
    defaults={"variance": _noise_variance},
    sklearn_readers=(
        SklearnReader(sk.WhiteKernel, lambda kernel, columns: Base(WhiteNoise.kind, (), {"variance": kernel.noise_level})),
    ),
)


# =======================================================================================
# registry
# =======================================================================================

#: The numeric spec of every kind, by name, in catalogue order.
SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (_SE_SPEC, _RQ_SPEC, _PER_SPEC, _CPER_SPEC, _LIN_SPEC, _M12_SPEC, _M32_SPEC, _M52_SPEC, _C_SPEC, _WN_SPEC)
}

#: Kernel class for every kind name of the grammar catalogue.
KERNEL_CLASSES: dict[str, type] = {name: spec.kernel_class for name, spec in SPECS.items()}


def get_spec(kind: str | KernelKind) -> KernelSpec:
    """The numeric spec of a kind, from its name (case-insensitive) or its :class:`KernelKind`.

    Raises
    ------
    ValueError
        If the kind is not in the catalogue, or has no numeric spec.
    """
    name = kind.name if isinstance(kind, KernelKind) else get_kind(kind).name
    spec = SPECS.get(name)
    if spec is None:
        raise ValueError(f"The base kernel {name!r} has no numeric spec in skgpsearch.kernels._specs.")
    return spec


def spec_of(kernel: Kernel) -> KernelSpec | None:
    """The spec of a catalogue kernel (an instance of its spec's class), else None."""
    spec = SPECS.get(getattr(kernel, "kind", None)) if isinstance(kernel, CatalogueKernel) else None
    return spec if spec is not None and isinstance(kernel, spec.kernel_class) else None


def sklearn_readers(kernel_type: type) -> tuple[SklearnReader, ...]:
    """Readers of the most derived class of ``kernel_type`` that has any, in catalogue order."""
    for cls in kernel_type.__mro__:
        readers = tuple(r for spec in SPECS.values() for r in spec.sklearn_readers if r.kernel_type is cls)
        if readers:
            return readers
    return ()
