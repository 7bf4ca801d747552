"""Whether to warp the inputs: one ARD kernel's log evidence on the warped and on the user's columns.

The estimators' ``warp_inputs="auto"`` keeps the warp of a table only where
the evidence prefers it. The inputs are part of the model of y given X, so
the evidence compares the two sets of columns directly, with no Jacobian
term. Each comparison fits the same structure (one SE over all columns, one
lengthscale each) with the same fitter settings on the same rows; only the
columns differ. The task modules build the fitters: the Laplace one for each
binary problem of a classifier, the exact Gaussian one for a regressor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from ..grammar import Base, Expr, multiply
from ._candidate_fitter import CandidateFitter

__all__ = ["REGRESSION_WARP_DECISION_ROWS", "WARP_DECISION_ROWS", "WARP_MIN_EVIDENCE_GAIN", "WarpComparison",
           "ard_structure", "warping_evidence_gain_of"]

#: ``warp_inputs="auto"`` warps a table only when one ARD kernel's log evidence on the warped columns beats
#: its evidence on the user's columns by more than this many nats, summed over the problems compared (a
#: Bayes factor above e).
WARP_MIN_EVIDENCE_GAIN = 1.0
#: Each ARD kernel of that comparison is fitted (explore effort, one start) on a sample of at most this many
#: rows (stratified by label for a classifier; see REGRESSION_WARP_DECISION_ROWS for the regressor).
WARP_DECISION_ROWS = 300
#: The regressor's comparison fits its two ARD kernels on at most this many rows. On 300 of the 404 training
#: rows of a Boston-housing fold the gain swung between -16.9 and +13.1 nats with the sample drawn (four seeds
#: each, five folds of benchmarks/unseen.py; on all rows -9.6), and the warp was kept on all five folds where
#: it raised one ARD kernel's test SMSE from 0.112 to 0.138 (all rows: kept on one fold). An ARD kernel on
#: 1000 rows takes a few seconds.
REGRESSION_WARP_DECISION_ROWS = 1000


@dataclass
class WarpComparison:
    """One problem of the comparison: the fitters and rows of the user's and of the warped columns.

    The two fitters differ only in what they derive from their columns (the
    data summary's lengthscale defaults and bounds).
    """

    plain_fitter: CandidateFitter
    warped_fitter: CandidateFitter
    X_plain: np.ndarray
    X_warped: np.ndarray
    y: np.ndarray
    seed: int


def ard_structure(n_features: int) -> Expr:
    """One SE over every column, one lengthscale each."""
    return multiply(*[Base("SE", c) for c in range(n_features)])


def warping_evidence_gain_of(comparisons: Sequence[WarpComparison], n_jobs: int | None = None) -> float:
    """Log evidence of the ARD kernel on the warped columns minus that on the plain ones, summed over problems.

    The fits run in parallel over ``n_jobs``. A problem where either fit
    fails counts as no evidence either way (a gain of 0).
    """
    jobs = []
    for c in comparisons:
        ard = ard_structure(c.X_plain.shape[1])
        jobs.append((c.plain_fitter, (ard, c.X_plain, c.y, c.seed)))
        jobs.append((c.warped_fitter, (ard, c.X_warped, c.y, c.seed)))
    records = Parallel(n_jobs=n_jobs, prefer="processes")(delayed(fitter)(*arguments) for fitter, arguments in jobs)
    gain = 0.0
    for plain, warped in zip(records[::2], records[1::2]):
        if plain.ok and warped.ok:
            gain += warped.log_marginal_likelihood - plain.log_marginal_likelihood
    return gain
