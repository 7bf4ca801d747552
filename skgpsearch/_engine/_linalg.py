"""Dense linear algebra for GP engines: jittered Cholesky and friends."""

from __future__ import annotations

import functools
import time

import numpy as np
from scipy.linalg import lapack

__all__ = ["NumericalError", "cholesky_lower", "cholesky_seconds", "jittered_cholesky", "cholesky_inverse",
           "cholesky_solve"]

#: Before a matrix is factorised, its entries below this share of its largest diagonal entry (eps², 4.9e-32)
#: are set to 0. That keeps products inside potrf out of the subnormal range, which x86 CPUs compute in
#: microcode, 30-100 times slower per operation: a stationary kernel's far pairs give such entries (an SE
#: kernel beyond 12 lengthscales, a product of several). On 1000 rows with a third of them in (0, 1e-150)
#: potrf took 294 ms instead of 13, and a classifier's search on 1000 x 35 ran its subsets' Choleskys at a
#: quarter of their speed on clean matrices (benchmarks/results/subnormal_cholesky.txt). The change is below
#: the factorisation's own rounding: its backward error in entry (i, j) is about n·eps·sqrt(A_ii A_jj), more
#: than eps² x the largest diagonal entry unless the diagonal spans over 1/eps (a kernel's plus noise spans
#: a few orders of magnitude).
TINY_ENTRY = np.finfo(np.float64).eps ** 2
#: The flush, a pass over the matrix (1.9 ms at 1000 rows, a fifth of potrf), is made only when a sample of
#: the matrix, every 16th row and column, holds an entry (an exact 0 included) below SUBNORMAL_RISK x its
#: largest diagonal entry, where products begin to fall below the normal range (2.2e-308): entries down to
#: 1e-65 (an SE kernel on points up to 11 lengthscales apart) cost potrf nothing.
SUBNORMAL_RISK = 1e-150
TINY_SAMPLE_STRIDE = 16

#: Relative jitter levels tried, as multiples of the mean of diag(K).
JITTER_LEVELS = (0.0, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4)


class NumericalError(ArithmeticError):
    """A covariance matrix stayed numerically singular or non-finite."""


def cholesky_lower(A, overwrite_a=False, clean=True):
    """LAPACK's lower Cholesky factor of a symmetric matrix and its ``info`` (0: positive definite).

    The factor is Fortran-ordered, so later LAPACK calls take it without a
    copy. A C-ordered symmetric matrix is passed as its transpose, the same
    matrix in Fortran order, which LAPACK can factorise in place
    (``overwrite_a``) instead of through a transposed copy: on a fresh
    512 x 512 covariance that took 1.0 ms instead of 4.3 ms here, most of the
    difference being the copy's memory, not its arithmetic. The factor reads
    the lower triangle of ``A``'s Fortran-ordered form: the upper triangle of
    a C-ordered ``A``, the same values for a symmetric matrix.

    Parameters
    ----------
    A : ndarray of shape (n, n)
    overwrite_a : bool, default=False
        Factorise in place: ``A`` is then garbage, whether or not ``info`` is 0.
    clean : bool, default=True
        Zero the factor's upper triangle. Without it the upper triangle holds
        what ``A`` had there: enough for LAPACK's solves and inverses and for
        ``solve_triangular(..., lower=True)``, which read the lower triangle
        only, not for products with the factor.
    """
    scale = A.diagonal().max(initial=0.0)
    if _has_tiny_entries(A, scale):
        A = A if overwrite_a else A.copy(order="K")
        overwrite_a = True
        A *= np.abs(A) >= TINY_ENTRY * scale  # branch-free: 2.5x putmask's speed
    M = A.T if A.flags.c_contiguous and not A.flags.f_contiguous else A
    L, info = lapack.dpotrf(M, lower=1, clean=0, overwrite_a=overwrite_a)
    if clean and info == 0:
        # a column at a time: the wrapper's own clean loop strides across memory
        for j in range(1, L.shape[0]):
            L[:j, j] = 0.0
    return L, info


def _has_tiny_entries(A, scale):
    """Whether a sample of ``A``'s entries (every TINY_SAMPLE_STRIDE-th row and column) holds one below
    SUBNORMAL_RISK x ``scale``, its largest diagonal entry (an exact 0 counts: far pairs that underflowed
    have tiny neighbours, and one numpy reduction keeps the check at a few microseconds)."""
    return bool(np.abs(A[::TINY_SAMPLE_STRIDE, ::TINY_SAMPLE_STRIDE]).min(initial=np.inf) < SUBNORMAL_RISK * scale)


def jittered_cholesky(K, overwrite_k=False, clean=True):
    """Lower Cholesky factor of K, adding escalating jitter to the diagonal if needed.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric.
    overwrite_k : bool, default=False
        Factorise ``K`` in place when no jitter is needed (``K`` is garbage
        afterwards): for a covariance built only to be factorised.
    clean : bool, default=True
        See :func:`cholesky_lower`.

    Returns
    -------
    L : ndarray (n, n)
        Lower-triangular factor of K + jitter * I (Fortran-ordered).
    jitter : float
        The absolute jitter that was added (0.0 when none was needed).

    Raises
    ------
    NumericalError
        If K has non-finite entries or is not positive definite even with the
        largest jitter (1e-4 × mean diagonal).
    """
    # one sum instead of an n x n mask; only a non-finite sum needs the element-wise check
    if not np.isfinite(K.sum()) and not np.all(np.isfinite(K)):
        raise NumericalError("the covariance matrix has non-finite entries")
    scale = float(np.mean(np.diag(K)))
    if not scale > 0:
        raise NumericalError("the covariance matrix is not positive definite (non-positive mean diagonal)")
    diagonal = np.diag(K).copy()
    L, info = cholesky_lower(K, overwrite_a=overwrite_k, clean=clean)
    if info == 0:
        return L, 0.0
    if overwrite_k:
        K = _restored(K, diagonal)
    jittered = K.copy()
    for level in JITTER_LEVELS[1:]:
        jitter = level * scale
        # each level adds its jitter to the original diagonal (levels do not stack)
        jittered.flat[:: jittered.shape[0] + 1] = diagonal + jitter
        L, info = cholesky_lower(jittered, clean=clean)
        if info == 0:
            return L, jitter
    raise NumericalError(
        f"the covariance matrix is not positive definite even with jitter {JITTER_LEVELS[-1]:g} x mean diagonal"
    )


def _restored(K, diagonal):
    """The symmetric matrix whose failed in-place factorisation left ``K``: one triangle is intact."""
    # LAPACK wrote into the lower triangle of the Fortran-ordered matrix it was given (see cholesky_lower)
    F = K.T if K.flags.c_contiguous and not K.flags.f_contiguous else K
    restored = np.triu(F, 1)
    restored += restored.T
    restored.flat[:: restored.shape[0] + 1] = diagonal
    return restored


def cholesky_inverse(L, overwrite_l=False):
    """K^{-1} from the lower Cholesky factor of K (LAPACK potri).

    Only the lower triangle of the result is filled (the upper one holds
    leftovers of L): use ``result.T`` where an upper triangle is read. With
    ``overwrite_l`` a Fortran-ordered ``L`` (as :func:`cholesky_lower` gives
    it) becomes the result, saving a copy of the matrix.
    """
    inv, info = lapack.dpotri(L, lower=1, overwrite_c=overwrite_l)
    if info != 0:
        raise NumericalError("inverting the covariance matrix failed")
    return inv


def cholesky_solve(L, b):
    """K^{-1} b from the lower Cholesky factor of K (LAPACK potrs, no finiteness re-check)."""
    x, info = lapack.dpotrs(L, b, lower=1)
    if info != 0:
        raise NumericalError("solving with the covariance matrix failed")
    return x


#: The rows of the matrix that cholesky_seconds factorises: large enough that LAPACK's cubic work, not the call's
#: overhead, sets its time (6 ms on one core of a slow Xeon), small enough to cost nothing beside a search.
CHOLESKY_PROBE_ROWS = 800


def cholesky_seconds(n_rows: int) -> float:
    """The predicted seconds of one Cholesky factorisation of ``n_rows`` rows in this process, at the BLAS
    threads of the first call: a measured factorisation of CHOLESKY_PROBE_ROWS rows, scaled by the cube of the
    rows. A time budget asks it before fits whose cost it cannot predict from earlier fits (a finalist on five
    times the search's rows). On one core of a slow Xeon: 1.5 s predicted for 5000 rows, 1.1-1.3 s measured (larger
    blocks run faster; a time budget had rather overestimate)."""
    return _probe_seconds() * (n_rows / CHOLESKY_PROBE_ROWS) ** 3


@functools.lru_cache(maxsize=1)
def _probe_seconds() -> float:
    rng = np.random.default_rng(0)
    A = rng.standard_normal((CHOLESKY_PROBE_ROWS, CHOLESKY_PROBE_ROWS))
    A = np.asfortranarray(A @ A.T + CHOLESKY_PROBE_ROWS * np.eye(CHOLESKY_PROBE_ROWS))  # as LAPACK takes it
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        lapack.dpotrf(A, lower=1, overwrite_a=0)
        best = min(best, time.perf_counter() - start)
    return best
