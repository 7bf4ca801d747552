"""The catalogue of base-kernel kinds, as plain data.

A *kind* is what the grammar knows about a base kernel without any numerics:
its name in the text notation, how many input columns it may act on, which
hyperparameters it has, and the algebraic facts that the canonical form uses
(does it carry an amplitude, is its diagonal constant, is it closed under
products on the same columns).  The numerical kernels live in
:mod:`skgpsearch.kernels`; this module must not import them.
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
    closed_under_product : bool
        Whether the product of two kernels of this kind on the same columns
        is a kernel of this kind (SE, M12: exponents add).
    periodic : bool
        Whether the kind has a ``period`` (period hints and priors apply).
    """

    name: str
    long_name: str
    formula: str
    columns: str
    parameters: tuple
    per_column_parameters: tuple = ()
    stationary: bool = True
    constant_diagonal: bool = True
    closed_under_product: bool = False
    periodic: bool = False

    @property
    def has_amplitude(self):
        """Whether the kind carries a signal variance (amplitude)."""
        return "variance" in self.parameters

    def n_parameters(self, n_columns):
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
        closed_under_product=True,
    ),
    KernelKind(
        "RQ",
        "rational quadratic",
        "s2 * (1 + |x - x'|^2 / (2 a l^2))^(-a)",
        "any",
        ("variance", "lengthscale", "alpha"),
    ),
    KernelKind(
        "PER",
        "periodic",
        "s2 * exp(-2 sin^2(pi |x - x'| / p) / l^2)",
        "one",
        ("variance", "lengthscale", "period"),
        periodic=True,
    ),
    KernelKind(
        "CPER",
        "centred periodic (periodic without its constant part)",
        "s2 * (exp(cos(2 pi |x - x'| / p) / l^2) - I0(1 / l^2)) / (exp(1 / l^2) - I0(1 / l^2))",
        "one",
        ("variance", "lengthscale", "period"),
        periodic=True,
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
    ),
    KernelKind(
        "M12",
        "Matern 1/2 (exponential)",
        "s2 * exp(-r),  r = |x - x'| / l",
        "any",
        ("variance", "lengthscale"),
        closed_under_product=True,
    ),
    KernelKind(
        "M32",
        "Matern 3/2",
        "s2 * (1 + sqrt(3) r) exp(-sqrt(3) r),  r = |x - x'| / l",
        "any",
        ("variance", "lengthscale"),
    ),
    KernelKind(
        "M52",
        "Matern 5/2",
        "s2 * (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r),  r = |x - x'| / l",
        "any",
        ("variance", "lengthscale"),
    ),
    KernelKind("C", "constant", "s2", "none", ("variance",)),
    KernelKind(
        "WN",
        "white noise",
        "s2 * [x and x' are the same training point]",
        "none",
        ("variance",),
    ),
)

#: All kinds by name, in catalogue order (which is also the canonical order).
KINDS = {kind.name: kind for kind in _CATALOGUE}

_RANK = {name: rank for rank, name in enumerate(KINDS)}


def kind_names():
    """Names of all base-kernel kinds, in canonical order."""
    return tuple(KINDS)


def get_kind(name):
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


def kind_rank(name):
    """Position of a kind in the catalogue (used for canonical ordering)."""
    return _RANK[name]
