"""The catalogue of base-kernel kinds, as plain data.

A *kind* is what the grammar knows about a base kernel without any numerics:
its name in the text notation, how many input columns it may act on, which
hyperparameters it has, the algebraic facts that the canonical form uses
(does it carry an amplitude, is its diagonal constant, is it closed under
products or sums) and the phrases that describe it in plain language.  Code
that treats kinds differently asks these facts, never the kind's name, so a
new kind is one entry here plus its numeric spec in
:mod:`skgpsearch.kernels._specs` (see ``docs/extending.md``).  The numerical
kernels live in :mod:`skgpsearch.kernels`; this module must not import them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KernelKind", "KINDS", "get_kind", "kind_names"]

#: How many columns a kind acts on.
#: ``"none"``: no input dependence (constant, white noise);
#: ``"one"``: exactly one column (periodic: a sum of squared sines over several
#: columns is not positive semi-definite);
#: ``"any"``: one or more columns (Euclidean distance / dot product over them).
COLUMN_RULES = ("none", "one", "any")


@dataclass(frozen=True)
class KernelKind:
    """Static description of one base-kernel kind.

    Parameters
    ----------
    name : str
        Name in the text notation, e.g. ``"SE"``.
    long_name : str
        Human-readable name.
    formula : str
        The covariance function, for documentation and reports.
    columns : {"none", "one", "any"}
        How many input columns the kernel acts on.
    parameters : tuple of str
        Hyperparameter names, amplitude (``"variance"``) first.
    per_column_parameters : tuple of str
        Those of ``parameters`` that have one value per active column
        (the linear kernel's offset); the others are scalars.
    stationary : bool
        Whether k(x, x') depends on x - x' only.
    constant_diagonal : bool
        Whether k(x, x) is the same for every x (then a product with white
        noise is again white noise).
    product_power : float or None
        When not None, the product of two kernels of this kind on the same
        columns is a kernel of this kind whose lengthscale l satisfies
        l^(-p) = l_1^(-p) + l_2^(-p) with p = ``product_power`` (SE: 2 since
        exponents in r² add, M12: 1 since exponents in r add).
    periodic : bool
        Whether the kind has a ``period`` (period hints and priors apply; its
        ``lengthscale`` is relative to the period).
    constant : bool
        Whether k(x, x') = s2 for all inputs: as a factor of a product it
        only rescales the other factors (C).
    white_noise : bool
        Whether k(x, x') is zero unless x and x' are the same training
        point: a product with it keeps only the other factors' diagonals (WN).
    closed_under_sum : bool
        Whether the sum of two kernels of this kind is a kernel of this kind
        whose variance is the sum of theirs (C, WN).
    polynomial_degree : int
        Degree of the polynomial a draw is in its inputs (LIN: 1; 0 when it
        is not a polynomial); a product of such factors has the sum of
        their degrees.
    phrase : str
        Plain-language description of a component made of this kernel alone,
        with ``{var}`` for the variables, e.g. ``"a smooth function of {var}"``.
    short_phrase : str
        Shorter phrase for one factor of an interaction between columns,
        e.g. ``"smooth in {var}"``.
    """

    name: str
    long_name: str
    formula: str
    columns: str
    parameters: tuple[str, ...]
    per_column_parameters: tuple[str, ...] = ()
    stationary: bool = True
    constant_diagonal: bool = True
    product_power: float | None = None
    periodic: bool = False
    constant: bool = False
    white_noise: bool = False
    closed_under_sum: bool = False
    polynomial_degree: int = 0
    phrase: str = ""
    short_phrase: str = ""

    def __post_init__(self):
        if self.columns not in COLUMN_RULES:
            raise ValueError(f"{self.name}: columns must be one of {COLUMN_RULES}, got {self.columns!r}.")
        # the canonical rules merge kernels by adding variances and rescaling lengthscales
        if (self.closed_under_sum or self.constant or self.white_noise) and self.parameters != ("variance",):
            raise ValueError(f"{self.name}: constant, white-noise and sum-closed kinds have the variance only.")
        if self.product_power is not None and set(self.parameters) != {"variance", "lengthscale"}:
            raise ValueError(f"{self.name}: a kind closed under products has a variance and a lengthscale only.")
        if self.white_noise and not self.constant_diagonal:
            raise ValueError(f"{self.name}: white noise has a constant diagonal.")

    @property
    def has_amplitude(self) -> bool:
        """Whether the kind carries a signal variance (amplitude)."""
        return "variance" in self.parameters

    @property
    def closed_under_product(self) -> bool:
        """Whether the product of two kernels of this kind on the same columns is one of this kind."""
        return self.product_power is not None

    @property
    def distance_based(self) -> bool:
        """Whether k depends on the inputs only through the Euclidean distance over a lengthscale.

        These kinds (SE, RQ, the Matérns) have a lengthscale on the inputs' own
        scale; a periodic kind's lengthscale is relative to its period.
        """
        return self.stationary and "lengthscale" in self.parameters and not self.periodic

    def n_parameters(self, n_columns: int) -> int:
        """Number of scalar hyperparameters on ``n_columns`` columns."""
        return sum(
            n_columns if p in self.per_column_parameters else 1
            for p in self.parameters
        )


_CATALOGUE = (
    KernelKind(
        "SE",
        "squared exponential",
        "s2 * exp(-|x - x'|^2 / (2 l^2))",
        "any",
        ("variance", "lengthscale"),
        product_power=2.0,
        phrase="a smooth function of {var}",
        short_phrase="smooth in {var}",
    ),
    KernelKind(
        "RQ",
        "rational quadratic",
        "s2 * (1 + |x - x'|^2 / (2 a l^2))^(-a)",
        "any",
        ("variance", "lengthscale", "alpha"),
        phrase="a smooth function of {var} that varies on several scales",
        short_phrase="smooth, multi-scale in {var}",
    ),
    KernelKind(
        "PER",
        "periodic",
        "s2 * exp(-2 sin^2(pi |x - x'| / p) / l^2)",
        "one",
        ("variance", "lengthscale", "period"),
        periodic=True,
        phrase="a periodic component in {var}",
        short_phrase="periodic in {var}",
    ),
    KernelKind(
        "CPER",
        "centred periodic (periodic without its constant part)",
        "s2 * (exp(cos(2 pi |x - x'| / p) / l^2) - I0(1 / l^2)) / (exp(1 / l^2) - I0(1 / l^2))",
        "one",
        ("variance", "lengthscale", "period"),
        periodic=True,
        phrase="a periodic component in {var}",
        short_phrase="periodic in {var}",
    ),
    KernelKind(
        "LIN",
        "linear",
        "s2 * (x - c) . (x' - c)",
        "any",
        ("variance", "offset"),
        per_column_parameters=("offset",),
        stationary=False,
        constant_diagonal=False,
        polynomial_degree=1,
        phrase="a linear trend in {var}",
        short_phrase="linear in {var}",
    ),
    KernelKind(
        "M12",
        "Matern 1/2 (exponential)",
        "s2 * exp(-r),  r = |x - x'| / l",
        "any",
        ("variance", "lengthscale"),
        product_power=1.0,
        phrase="a rough, jagged function of {var} (Matérn 1/2)",
        short_phrase="rough in {var}",
    ),
    KernelKind(
        "M32",
        "Matern 3/2",
        "s2 * (1 + sqrt(3) r) exp(-sqrt(3) r),  r = |x - x'| / l",
        "any",
        ("variance", "lengthscale"),
        phrase="a somewhat rough function of {var} (Matérn 3/2)",
        short_phrase="somewhat rough in {var}",
    ),
    KernelKind(
        "M52",
        "Matern 5/2",
        "s2 * (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r),  r = |x - x'| / l",
        "any",
        ("variance", "lengthscale"),
        phrase="a fairly smooth function of {var} (Matérn 5/2)",
        short_phrase="fairly smooth in {var}",
    ),
    KernelKind(
        "C",
        "constant",
        "s2",
        "none",
        ("variance",),
        constant=True,
        closed_under_sum=True,
        phrase="a constant offset",
    ),
    KernelKind(
        "WN",
        "white noise",
        "s2 * [x and x' are the same training point]",
        "none",
        ("variance",),
        white_noise=True,
        closed_under_sum=True,
        phrase="white noise",
    ),
)

#: All kinds by name, in catalogue order (which is also the canonical order).
KINDS = {kind.name: kind for kind in _CATALOGUE}

_RANK = {name: rank for rank, name in enumerate(KINDS)}


def kind_names() -> tuple[str, ...]:
    """Names of all base-kernel kinds, in canonical order."""
    return tuple(KINDS)


def get_kind(name: str) -> KernelKind:
    """Look up a kind by name (case-insensitive).

    Raises
    ------
    ValueError
        If the name is not in the catalogue; the message lists the known ones.
    """
    if isinstance(name, str):
        kind = KINDS.get(name.upper())
        if kind is not None:
            return kind
    raise ValueError(
        f"Unknown base kernel {name!r}; known kernels are: {', '.join(KINDS)}."
    )


def kind_rank(name: str) -> int:
    """Position of a kind in the catalogue (used for canonical ordering)."""
    return _RANK[name]
