"""Sparse variational GP regression: the collapsed bound of Titsias (2009), its gradient, its posterior.

With m inducing inputs Z, Q = K_nm K_mm⁻¹ K_mn and noise variance σ², the
collapsed evidence lower bound (SGPR / VFE) is

    F = log N(y | 0, Q + σ² I) − tr(K_nn − Q) / (2σ²)  ≤  log p(y).

It costs O(n m²) time and O(n m) memory, and equals the exact log marginal
likelihood when Z = X. Written with L L^T = K_mm, A = L⁻¹ K_mn / σ,
B = I + A Aᵀ = L_B L_Bᵀ and c = L_B⁻¹ A y / σ:

    F = −n/2 log 2π − n/2 log σ² − log|L_B| − yᵀy / (2σ²) + cᵀc / 2
        − (Σ_i k(x_i, x_i) − σ² tr(A Aᵀ)) / (2σ²).

Gradient. With G = ½(ααᵀ − (Q + σ²I)⁻¹), α = (Q + σ²I)⁻¹ y and
W = K_mm⁻¹ K_mn, the partial derivatives are

    ∂F/∂K_nm = 2 G Wᵀ + Wᵀ/σ²,   ∂F/∂K_mm = −W G Wᵀ − W Wᵀ/(2σ²),
    ∂F/∂k(x_i, x_i) = −1/(2σ²),  ∂F/∂σ² = tr G + tr(K_nn − Q)/(2σ⁴),

all formed as n × m or m × m matrices (never n × n), and contracted with the
kernel's derivatives by :class:`~skgpsearch._engine._kernel_tree.KernelTree`
on blocks of rows stacked on Z -- so the kernel tree, its fast leaves and
its sharing of distances are the exact engine's, and the memory stays
O(block² + n m).

References
----------
.. [1] M. Titsias, "Variational Learning of Inducing Variables in Sparse
   Gaussian Processes", AISTATS 2009, PMLR 5, pp. 567–574.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import solve_triangular

from ._kernel_tree import KernelTree
from ._linalg import NumericalError, jittered_cholesky
from ._optimizer import amplitude_indices

__all__ = ["SparseObjective", "SparsePosterior", "choose_inducing_inputs"]

_LOG_2PI = math.log(2.0 * math.pi)
#: Rows per block of the kernel evaluations (each block is stacked on the inducing inputs).
BLOCK_ROWS = 512
#: The blocks' kernel trees are cached up to about this many bytes (per objective, so per worker).
TREE_CACHE_BYTES = 400 * 2**20
#: Bytes a kernel tree holds per pair of rows and column (measured: a 50 000-row search with an
#: estimate of 8 peaked at 7.4 GB over three processes).
TREE_BYTES_PER_PAIR = 64


def choose_inducing_inputs(X: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` inducing inputs from the data: the centres of a k-means clustering of the columns scaled to unit spread.

    k-means spreads the inputs over where the data are, independently of the
    kernel, so every candidate structure of a search shares them. With at
    least as many distinct rows as ``m`` wanted, the result has ``m``
    distinct rows; otherwise the distinct rows themselves.
    """
    from sklearn.cluster import KMeans, MiniBatchKMeans

    unique = np.unique(X, axis=0)
    if unique.shape[0] <= m:
        return unique
    scale = np.std(X, axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    seed = int(rng.integers(2**31 - 1))
    model = (MiniBatchKMeans(m, random_state=seed, n_init=3, batch_size=max(1024, 4 * m))
             if X.shape[0] > 20000 else KMeans(m, random_state=seed, n_init=1))
    model.fit(X / scale)
    return model.cluster_centers_ * scale


class _SparseFactors:
    """The shared factors of the bound and the posterior at one parameter vector."""

    def __init__(self, Kmm, Kmn, diag, y, noise):
        m, n = Kmn.shape
        self.noise = noise
        self.L, self.jitter = jittered_cholesky(Kmm)
        sigma = math.sqrt(noise)
        self.A = solve_triangular(self.L, Kmn, lower=True, check_finite=False) / sigma
        B = np.eye(m) + self.A @ self.A.T
        self.LB, _ = jittered_cholesky(B)
        self.Ay = self.A @ y
        self.c = solve_triangular(self.LB, self.Ay, lower=True, check_finite=False) / sigma
        self.trace_Q = noise * float(np.sum(self.A * self.A))
        self.trace_K = float(np.sum(diag))
        self.yy = float(y @ y)
        self.n = n

    def bound(self):
        n, noise = self.n, self.noise
        return float(
            -0.5 * n * (_LOG_2PI + math.log(noise)) - np.sum(np.log(np.diag(self.LB)))
            - 0.5 * self.yy / noise + 0.5 * self.c @ self.c
            - 0.5 * (self.trace_K - self.trace_Q) / noise
        )

    def weights(self):
        """β with posterior mean k(x, Z) β: L⁻ᵀ L_B⁻ᵀ c."""
        v = solve_triangular(self.LB, self.c, lower=True, trans=1, check_finite=False)
        return solve_triangular(self.L, v, lower=True, trans=1, check_finite=False)


class SparseObjective:
    """The collapsed bound as a function of ``theta = [kernel.theta, log σ²]`` (fixed inducing inputs).

    Callable like :class:`~skgpsearch._engine._exact.RegressionObjective`
    (value, or value and gradient), with the same ``bounds`` layout, so the
    optimiser and the candidate fitters use either.

    Parameters
    ----------
    kernel : sklearn Kernel
        Compiled at construction (its theta order is the order of ``theta``).
    X, y : ndarray
    Z : ndarray of shape (m, n_features)
        Inducing inputs.
    noise_bounds : pair of float
    block_rows : int, default=BLOCK_ROWS
    """

    def __init__(self, kernel, X, y, Z, noise_bounds, block_rows=BLOCK_ROWS):
        self.kernel = kernel
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float).ravel()
        self.Z = np.asarray(Z, dtype=float)
        self.block_rows = int(block_rows)
        kb = np.asarray(kernel.bounds, dtype=float).reshape(-1, 2)
        self.bounds = np.vstack([kb, np.log(np.asarray(noise_bounds, dtype=float))[np.newaxis, :]])
        self.amplitudes = amplitude_indices(kernel)
        self.n_evaluations = 0
        self._z_tree = KernelTree(kernel, self.Z)
        n, m = self.X.shape[0], self.Z.shape[0]
        self._blocks = [slice(start, min(n, start + self.block_rows)) for start in range(0, n, self.block_rows)]
        # the blocks' trees are kept when they fit in TREE_CACHE_BYTES; a tree holds about
        # TREE_BYTES_PER_PAIR per pair of its rows (distances, pair indices, node values)
        size = n * (min(n, self.block_rows) + m) // 2 * TREE_BYTES_PER_PAIR * max(1, self.X.shape[1])
        self._trees = {} if size <= TREE_CACHE_BYTES else None

    @property
    def n_dims(self):
        return self.bounds.shape[0]

    def _block_tree(self, rows):
        if self._trees is not None and rows.start in self._trees:
            return self._trees[rows.start]
        # a block stacked on the inducing inputs is not a grid: no lag detection
        tree = KernelTree(self.kernel, np.vstack([self.X[rows], self.Z]), use_lags=False)
        if self._trees is not None:
            self._trees[rows.start] = tree
        return tree

    def _matrices(self, theta):
        """(K_mm, K_mn, diag K_nn) at the kernel part of ``theta``."""
        kernel_theta = theta[:-1]
        self._z_tree.set_theta(kernel_theta)
        Kmm = self._z_tree.matrix()
        m = self.Z.shape[0]
        Kmn = np.empty((m, self.X.shape[0]))
        diag = np.empty(self.X.shape[0])
        for rows in self._blocks:
            tree = self._block_tree(rows)
            tree.set_theta(kernel_theta)
            K = tree.matrix()
            b = rows.stop - rows.start
            Kmn[:, rows] = K[b:, :b]
            diag[rows] = np.diag(K)[:b]
        return Kmm, Kmn, diag

    def factors(self, theta):
        """The factors of the bound at ``theta`` (for the posterior)."""
        theta = np.asarray(theta, dtype=float)
        Kmm, Kmn, diag = self._matrices(theta)
        return _SparseFactors(Kmm, Kmn, diag, self.y, math.exp(theta[-1])), Kmn

    def __call__(self, theta, eval_gradient=False):
        """The bound (and its gradient w.r.t. ``theta``).

        Raises
        ------
        NumericalError
            When K_mm or B is not positive definite even with jitter.
        """
        self.n_evaluations += 1
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (self.n_dims,):
            raise ValueError(f"theta must have {self.n_dims} entries, got shape {theta.shape}.")
        f, Kmn = self.factors(theta)
        value = f.bound()
        if not np.isfinite(value):
            raise NumericalError("the sparse bound is not finite")
        if not eval_gradient:
            return value
        return value, self._gradient(theta, f, Kmn)

    def _gradient(self, theta, f, Kmn):
        noise, y = f.noise, self.y
        n = y.shape[0]
        L, LB = f.L, f.LB
        # W = K_mm⁻¹ K_mn = L⁻ᵀ A σ
        sigma = math.sqrt(noise)
        W = solve_triangular(L, f.A * sigma, lower=True, trans=1, check_finite=False)
        # (Q + σ²I)⁻¹ v = v/σ² − Aᵀ B⁻¹ A v / σ²  (Woodbury in the A, B form)
        def inv_apply(V):
            inner = solve_triangular(LB, f.A @ V, lower=True, check_finite=False)
            inner = solve_triangular(LB, inner, lower=True, trans=1, check_finite=False)
            return (V - f.A.T @ inner) / noise

        alpha = inv_apply(y)
        Wt_inv = inv_apply(W.T)  # (Q + σ²I)⁻¹ Wᵀ, n × m
        Walpha = W @ alpha
        # ∂F/∂K_nm = 2 G Wᵀ + Wᵀ/σ², G Wᵀ = ½(α (Wα)ᵀ − (Q+σ²I)⁻¹ Wᵀ)
        dKnm = np.outer(alpha, Walpha) - Wt_inv + W.T / noise
        # ∂F/∂K_mm = −W G Wᵀ − W Wᵀ/(2σ²)
        WGW = 0.5 * (np.outer(Walpha, Walpha) - W @ Wt_inv)
        dKmm = -WGW - (W @ W.T) / (2.0 * noise)
        # trace of (Q + σ²I)⁻¹ = n/σ² − tr(B⁻¹ A Aᵀ)/σ²
        BinvAAt = solve_triangular(LB, solve_triangular(LB, f.A @ f.A.T, lower=True, check_finite=False),
                                   lower=True, trans=1, check_finite=False)
        trace_inv = (n - float(np.trace(BinvAAt))) / noise
        trace_G = 0.5 * float(alpha @ alpha) - 0.5 * trace_inv
        d_noise = trace_G + 0.5 * (f.trace_K - f.trace_Q) / noise**2
        grad = np.zeros(self.n_dims)
        grad[-1] = d_noise * noise  # with respect to log σ²
        kernel_theta = theta[:-1]
        # (the value pass left the inducing tree, and cached block trees, evaluated at this theta)
        grad[:-1] += self._z_tree.contract(dKmm)
        m = self.Z.shape[0]
        for rows in self._blocks:
            b = rows.stop - rows.start
            cached = self._trees is not None and rows.start in self._trees
            tree = self._block_tree(rows)
            if not cached:
                tree.set_theta(kernel_theta)
                tree.forward()
            G = np.zeros((b + m, b + m))
            G[:b, b:] = dKnm[rows]
            G[np.arange(b), np.arange(b)] = -0.5 / noise
            grad[:-1] += tree.contract(G)
        return grad

    def profile_amplitude(self, theta):
        """Not available on the bound: starts are screened on an exact subset (see the sparse fitter)."""
        raise NotImplementedError("screen starts with an exact objective on a subset")


class SparsePosterior:
    """The SGPR posterior of the latent function at the fitted ``theta``.

    The mean is k(x, Z) β; the variance k(x, x) − k(x, Z)(K_mm⁻¹ − Σ) k(Z, x)
    with Σ = (K_mm + K_mn K_nm / σ²)⁻¹, the optimal q(u) of the bound.

    Attributes
    ----------
    log_marginal_likelihood : float
        The bound at ``theta`` (a lower bound of the exact value).
    alpha : ndarray of shape (m,)
        β, the weights of the mean on the inducing inputs.
    mean : float
        0 (the targets are centred by the estimator).
    Z : ndarray of shape (m, n_features)
    noise_variance : float
    """

    mean = 0.0

    def __init__(self, kernel, noise_variance, X, y, Z):
        objective = SparseObjective(kernel, X, y, Z, (noise_variance, noise_variance))
        theta = np.append(kernel.theta, math.log(noise_variance))
        self._f, _ = objective.factors(theta)
        self.kernel = kernel
        self.Z = objective.Z
        self.noise_variance = float(noise_variance)
        self.log_marginal_likelihood = self._f.bound()
        self.alpha = self._f.weights()
        self.L = None

    def variance_reduction(self, K_cross):
        """diag(K_crossᵀ (K_mm⁻¹ − Σ) K_cross) for K_cross = k(Z, X*) of shape (m, n*)."""
        f = self._f
        V = solve_triangular(f.L, K_cross, lower=True, check_finite=False)
        U = solve_triangular(f.LB, V, lower=True, check_finite=False)
        return np.einsum("ij,ij->j", V, V) - np.einsum("ij,ij->j", U, U)

    def predict(self, X, return_std=False, return_cov=False):
        """Posterior mean of the latent function at ``X``, with its std or covariance (normalised scale)."""
        K_cross = self.kernel(self.Z, X)
        mean = K_cross.T @ self.alpha
        if return_cov:
            f = self._f
            V = solve_triangular(f.L, K_cross, lower=True, check_finite=False)
            U = solve_triangular(f.LB, V, lower=True, check_finite=False)
            return mean, self.kernel(X) - V.T @ V + U.T @ U
        if return_std:
            var = self.kernel.diag(X) - self.variance_reduction(K_cross)
            return mean, np.sqrt(np.maximum(var, 0.0))
        return mean, None
