"""Fitting one candidate structure with the sparse variational bound (runs in search workers)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._engine._exact import RegressionObjective
from .._engine._sparse import SparseObjective, SparsePosterior
from ..kernels import to_kernel
from ._exact_fitter import SCREEN_SIZE, RegressionCandidateFitter, regression_start_hints
from ._records import CandidateRecord
from ._starts import StartHints

__all__ = ["SparseCandidateFitter"]

#: Rows of the exact fits that give a sparse candidate its start hints (parent residuals, periodogram).
HINT_ROWS = 2000


@dataclass
class SparseCandidateFitter(RegressionCandidateFitter):
    """Fits one candidate by maximising the collapsed bound of a sparse GP (SGPR/VFE).

    The inducing inputs are fixed for the whole search (every candidate
    shares them). Starts are those of the exact fitter, screened by
    successive halving on an exact GP of a random ``SCREEN_SIZE``-row subset;
    the best (and a close runner-up) are then optimised on the bound over all
    the rows. The record's ``log_marginal_likelihood`` is the bound, a lower
    bound of the exact value; criteria computed from the evidence use it.
    Start hints come from exact fits on at most ``HINT_ROWS`` rows.
    """

    inducing_inputs: np.ndarray | None = None
    #: the sparse bound's fits are cheap on all rows (its large data are explored on a sample, refitted by halving)
    full_effort_max_rows: ClassVar[int | None] = None

    def start_hints(self, parent: CandidateRecord | None, X: np.ndarray, y: np.ndarray, period_columns: list[int],
                    change_columns: list[int] = ()) -> StartHints:
        rows = slice(None)
        if X.shape[0] > HINT_ROWS:
            # a regular subsample keeps the sampling regular (the periodogram's resolution)
            rows = np.linspace(0, X.shape[0] - 1, HINT_ROWS).round().astype(int)
        parent_noise = None
        if parent is not None and parent.ok:
            parent_noise = parent.noise_variance
        return regression_start_hints(parent if parent_noise is not None else None, X[rows], y[rows], self.summary,
                                      period_columns, change_columns)

    def _objectives(self, expr, kernel, X, y, rng):
        objective = SparseObjective(kernel, X, y, self.inducing_inputs, self.noise_bounds)
        rows = np.sort(rng.choice(X.shape[0], size=min(X.shape[0], SCREEN_SIZE), replace=False))
        screen = RegressionObjective(to_kernel(expr, summary=self.summary), X[rows], y[rows], self.noise_bounds)
        return objective, screen

    def _optimizer_options(self, screen):
        options = super()._optimizer_options(screen)
        # the exact subset always screens the starts: the bound over all rows is the expensive fidelity
        options.update(screen_objective=screen, screen_maxiter=30)
        return options

    def _posterior(self, kernel, theta, X, y, objective, X_opt):
        noise = math.exp(theta[-1])
        return SparsePosterior(kernel, noise, X, y, self.inducing_inputs), {"noise_variance": noise,
                                                                            "warm_state": noise}

    def _model(self, structure, kernel, posterior, X, y, lml, k, inducing_inputs=None):
        return super()._model(structure, kernel, posterior, X, y, lml, k, inducing_inputs=self.inducing_inputs)
