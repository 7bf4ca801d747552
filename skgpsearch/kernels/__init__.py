"""Scikit-learn kernels of the base-kernel catalogue, and conversion from structures.

Every class here is a real :class:`sklearn.gaussian_process.kernels.Kernel`:
it works in scikit-learn's ``GaussianProcessRegressor`` and composes with
scikit-learn's own kernels. Everything numeric about a kind -- its class,
default hyperparameters, engine profile, conversion from scikit-learn kernels
-- is its :class:`KernelSpec` in :data:`SPECS` (see :func:`get_spec`).
"""

from __future__ import annotations

from ._base import (
    C,
    CPER,
    CentredPeriodic,
    LIN,
    M12,
    M32,
    M52,
    PER,
    RQ,
    SE,
    WN,
    CatalogueKernel,
    Constant,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    RationalQuadratic,
    SquaredExponential,
    WhiteNoise,
)
from ._change import ChangePoint, ChangeWindow
from ._columns import ActiveColumns
from ._convert import from_kernel, inherit_values, to_kernel
from ._core import StationaryProfile
from ._defaults import change_defaults, default_hyperparameters, unit_amplitude
from ._specs import KERNEL_CLASSES, SPECS, KernelSpec, SklearnReader, get_spec
from ._summary import DataSummary, discrete_columns, looks_like_time_index

__all__ = [
    "ActiveColumns",
    "C",
    "CPER",
    "CatalogueKernel",
    "CentredPeriodic",
    "ChangePoint",
    "ChangeWindow",
    "Constant",
    "DataSummary",
    "KERNEL_CLASSES",
    "KernelSpec",
    "LIN",
    "Linear",
    "M12",
    "M32",
    "M52",
    "Matern12",
    "Matern32",
    "Matern52",
    "PER",
    "Periodic",
    "RQ",
    "RationalQuadratic",
    "SE",
    "SPECS",
    "SklearnReader",
    "SquaredExponential",
    "StationaryProfile",
    "WN",
    "WhiteNoise",
    "discrete_columns",
    "change_defaults",
    "default_hyperparameters",
    "from_kernel",
    "get_spec",
    "inherit_values",
    "looks_like_time_index",
    "to_kernel",
    "unit_amplitude",
]
