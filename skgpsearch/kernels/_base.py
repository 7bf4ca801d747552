"""Base kernels of the catalogue as scikit-learn kernels.

Each kind's kernel class lives with the rest of that kind's behaviour in
:mod:`skgpsearch.kernels._specs`, the machinery they share in
:mod:`skgpsearch.kernels._core`; this module keeps the names importable from
here, including the catalogue's text-notation aliases (``SE`` is
:class:`SquaredExponential`, and so on).
"""

from __future__ import annotations

# the machinery is re-exported too: it used to live here
from ._core import CatalogueKernel, _as_2d, _check_gradient_request, _num_samples, _Stationary  # noqa: F401
from ._specs import (  # noqa: F401
    KERNEL_CLASSES,
    CentredPeriodic,
    Constant,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    RationalQuadratic,
    SquaredExponential,
    WhiteNoise,
    centred_periodic_normaliser,
)

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
