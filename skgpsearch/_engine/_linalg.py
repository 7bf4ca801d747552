"""Dense linear algebra for GP engines: jittered Cholesky and friends."""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

__all__ = ["NumericalError", "jittered_cholesky", "cholesky_inverse", "cholesky_solve"]

#: Relative jitter levels tried, as multiples of the mean of diag(K).
JITTER_LEVELS = (0.0, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4)


class NumericalError(ArithmeticError):
    """A covariance matrix stayed numerically singular or non-finite."""


def jittered_cholesky(K):
    """Lower Cholesky factor of K, adding escalating jitter to the diagonal if needed.

    Returns
    -------
    L : ndarray (n, n)
        Lower-triangular factor of K + jitter * I.
    jitter : float
        The absolute jitter that was added (0.0 when none was needed).

    Raises
    ------
    NumericalError
        If K has non-finite entries or is not positive definite even with the
        largest jitter (1e-4 × mean diagonal).
    """
    if not np.all(np.isfinite(K)):
        raise NumericalError("the covariance matrix has non-finite entries")
    scale = float(np.mean(np.diag(K)))
    if not scale > 0:
        raise NumericalError("the covariance matrix is not positive definite (non-positive mean diagonal)")
    diagonal = np.diag(K).copy()
    jittered = None
    for level in JITTER_LEVELS:
        jitter = level * scale
        A = K
        if jitter:
            # each level adds its jitter to the original diagonal (levels do not stack)
            jittered = K.copy() if jittered is None else jittered
            jittered[np.diag_indices_from(jittered)] = diagonal + jitter
            A = jittered
        L, info = lapack.dpotrf(A, lower=1, clean=1, overwrite_a=0)
        if info == 0:
            return L, jitter
    raise NumericalError(
        f"the covariance matrix is not positive definite even with jitter {JITTER_LEVELS[-1]:g} x mean diagonal"
    )


def cholesky_inverse(L):
    """K^{-1} from the lower Cholesky factor of K (LAPACK potri).

    Only the lower triangle of the result is filled (the upper one holds
    leftovers of L): use ``result.T`` where an upper triangle is read.
    """
    inv, info = lapack.dpotri(L, lower=1)
    if info != 0:
        raise NumericalError("inverting the covariance matrix failed")
    return inv


def cholesky_solve(L, b):
    """K^{-1} b from the lower Cholesky factor of K (LAPACK potrs, no finiteness re-check)."""
    x, info = lapack.dpotrs(L, b, lower=1)
    if info != 0:
        raise NumericalError("solving with the covariance matrix failed")
    return x
