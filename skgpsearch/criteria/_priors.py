"""Hyperpriors: independent normal priors on the (log-)hyperparameters of a structure.

Every prior is centred at the data-aware default of its hyperparameter
(:func:`skgpsearch.kernels.default_hyperparameters`), so that it adapts to the
scale of each input column and of the (normalised) targets. Default standard
deviations, in log space (the LIN offset in its own units):

=====================  =========================================  ==================
hyperparameter         prior mean (log)                           standard deviation
=====================  =========================================  ==================
amplitude (variance)   log var(y) (LIN: log var(y) / Σ var(x_c))  2.0
lengthscale            log spread of the columns                  2.0
period (PER)           log geometric mean of the period bounds    1.5
lengthscale (PER)      log 1                                      1.5
alpha (RQ)             log 1                                      2.0
offset (LIN)           mean of the column (not logged)            range of the column
location (CP, CW)      middle of the column's range (not logged)  range / 3
width, duration        log of their defaults                      2.0
noise variance         log (var(y) / 10)                          3.0
constant mean (GPC)    latent value of the class frequency        2.0
outlier rate (GPC)     logit 0.05 (robust likelihood, in logit)   2.0
=====================  =========================================  ==================

For classifiers the latent function has no target variance: v = 1.

Override with ``HyperPrior(sd={"lengthscale": 1.0, ...})``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..grammar import Base, Change
from ..kernels import change_defaults, default_hyperparameters, get_spec

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..grammar import Expr
    from ..kernels import DataSummary

__all__ = ["HyperPrior", "DEFAULT_PRIOR_SD"]

#: Default standard deviations per hyperparameter type (see the module docstring).
DEFAULT_PRIOR_SD = {
    "variance": 2.0,
    "lengthscale": 2.0,
    "period": 1.5,
    "periodic_lengthscale": 1.5,
    "alpha": 2.0,
    "noise": 3.0,
    "mean": 2.0,
    "outlier_rate": 2.0,
}

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class HyperPrior:
    """Independent normal prior on ``theta = [kernel.theta, log noise variance]``.

    Parameters
    ----------
    sd : dict, optional
        Standard deviations overriding :data:`DEFAULT_PRIOR_SD` (keys:
        ``variance``, ``lengthscale``, ``period``, ``periodic_lengthscale``,
        ``alpha``, ``noise``, and for classifiers ``mean``, ``outlier_rate``).
        The LIN offset's standard deviation is the range of its column.
    """

    def __init__(self, sd: Mapping[str, float] | None = None) -> None:
        self.sd = sd

    def moments(self, structure: Expr, summary: DataSummary) -> tuple[np.ndarray, np.ndarray]:
        """Prior means and standard deviations, in the order of the structure's ``theta``.

        The order is that of :func:`skgpsearch.kernels.to_kernel`: base kernels
        depth first, each kernel's free hyperparameters (amplitude first), then
        the noise variance.
        """
        means, sds = self.kernel_moments(structure, summary)
        sd = self.standard_deviations()
        return np.append(means, math.log(0.1 * summary.target_variance)), np.append(sds, sd["noise"])

    def standard_deviations(self) -> dict[str, float]:
        """The standard deviation per hyperparameter type (defaults and overrides)."""
        sd = dict(DEFAULT_PRIOR_SD)
        unknown = set(self.sd or {}) - set(sd)
        if unknown:
            raise ValueError(f"Unknown hyperprior keys {sorted(unknown)}; known: {sorted(sd)}.")
        sd.update(self.sd or {})
        return sd

    def kernel_moments(self, structure: Expr, summary: DataSummary) -> tuple[np.ndarray, np.ndarray]:
        """Prior means and standard deviations of the kernel hyperparameters only."""
        sd = self.standard_deviations()
        means, sds = [], []
        free_flags = iter(structure.free_amplitudes())
        # theta order of to_kernel: depth first, a change operator's own after its operands'
        stack = [structure]
        order = []
        while stack:
            node = stack.pop()
            if isinstance(node, Change):
                stack.append(("own", node))
            if isinstance(node, tuple) or isinstance(node, Base):
                order.append(node)
                continue
            stack.extend(reversed(node.operands))
        for item in order:
            if isinstance(item, tuple):
                self._change_moments(item[1], summary, sd, means, sds)
            else:
                self._leaf_moments(item, next(free_flags), summary, sd, means, sds)
        return np.asarray(means, dtype=float), np.asarray(sds, dtype=float)

    @staticmethod
    def _leaf_moments(leaf, free, summary, sd, means, sds):
        spec = get_spec(leaf.kind)
        defaults = default_hyperparameters(leaf.name, leaf.columns, summary)
        for name in leaf.kind.parameters:
            if name == "variance" and not free:
                continue
            init, (low, high) = defaults[name]
            if name in spec.unconstrained:
                # a location (LIN's offset): normal on the value, a third of its range wide
                means.extend(np.ravel(init))
                sds.extend(np.ravel(high - low) / 3.0)
                continue
            means.append(math.log(init))
            sds.append(sd[spec.prior_key(name)])

    @staticmethod
    def _change_moments(node, summary, sd, means, sds):
        defaults = change_defaults(node.operator, node.column, summary)
        for name in node.parameter_names:
            init, (low, high) = defaults[name]
            if name == "location":
                means.append(init)
                sds.append((high - low) / 3.0)
            else:
                means.append(math.log(init))
                sds.append(sd["lengthscale"])

    def log_pdf(
        self, theta: ArrayLike, structure: Expr, summary: DataSummary, eval_gradient: bool = False
    ) -> float | tuple[float, np.ndarray]:
        """log p(theta), and its gradient if asked."""
        means, sds = self.moments(structure, summary)
        theta = np.asarray(theta, dtype=float)
        if theta.shape != means.shape:
            raise ValueError(f"theta has {theta.size} entries; the prior of {structure} has {means.size}.")
        z = (theta - means) / sds
        value = float(-0.5 * np.sum(z * z) - np.sum(np.log(sds)) - means.size * _HALF_LOG_2PI)
        if not eval_gradient:
            return value
        return value, -z / sds

    def precision(self, structure: Expr, summary: DataSummary) -> np.ndarray:
        """−∇∇ log p(theta): the diagonal matrix of inverse variances."""
        _, sds = self.moments(structure, summary)
        return np.diag(1.0 / sds**2)

    def __repr__(self):
        return "HyperPrior()" if not self.sd else f"HyperPrior(sd={self.sd!r})"
