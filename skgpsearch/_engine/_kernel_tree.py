"""Covariance and gradient *contractions* of a scikit-learn kernel tree.

The gradient of a Gaussian-process objective with respect to kernel
hyperparameters only ever needs the contractions

    g_j = Σ_ab G_ab ∂K_ab/∂θ_j

for a symmetric n × n matrix G (for the log marginal likelihood
G = ½(αα^T − K^{-1})). scikit-learn materialises the whole (n, n, p) tensor
∂K/∂θ through every Sum and Product node. Here the kernel is compiled once
per training set into a tree of evaluators: a sum passes G to both children,
a product passes G ⊙ K_other to each child, and a leaf contracts G with its
own derivative, computed from its cached value and cached input distances --
never stored as a tensor.

Every matrix is symmetric, so the tree works on *condensed* storage: the
strict upper triangle as a vector of length n(n−1)/2 (the layout of
``scipy.spatial.distance.pdist``) plus the diagonal. That halves both the
transcendental functions evaluated and the memory. In condensed form the
contraction reads Σ_{a<b} g_ab ∂k_ab + Σ_a gd_a ∂kd_a with g_ab = G_ab + G_ba
and gd_a = G_aa.

Catalogue kernels (optionally inside :class:`ActiveColumns`) have such fast
leaves: a distance-based kind through the profile of its spec (see
``skgpsearch.kernels._specs``), constant and white-noise kinds by their
kind's facts, the periodic and linear kernels through leaves of their own;
any other scikit-learn kernel is a leaf evaluated through its own
``eval_gradient``.

On gridded inputs (a regular time series, integer-valued columns) the
n(n−1)/2 pairwise distances take far fewer distinct values: n − 1 on a
regular 1-D grid. Stationary and periodic leaves then work on *lag
storage* -- one value per distinct distance -- and so do the sums and
products of leaves that share those lags (their covariance is a function of
the lag too, Toeplitz in 1-D). Values are gathered to condensed storage only
where a lag node meets a node without that structure (a LIN term, another
column, the root), and a contraction is first reduced to per-lag sums of g
there: Σ_{a<b} g_ab f(d_ab) = Σ_u f(d_u) Σ_{ab: d_ab = d_u} g_ab.
A distance-based leaf whose parent cannot share its lags (one SE per
column of a table, a kernel inside a change operator) keeps condensed
storage unless its lags are few (``LONE_LEAF_MOST_LAGS``): the gather and
the reduction cost about as much as its exponential on every pair once the
per-lag values no longer fit in the processor's cache.

A product of SE kernels (an ARD kernel: one SE per column) is one node,
:class:`_SquaredExponentialProduct`: exp(−½ Σ_c w_c (x_c − x'_c)²) with w_c
the sum of 1/l² over its factors on column c, from one matrix product of the
scaled columns and one exponential, and every lengthscale's contraction from
one matrix product of G ⊙ K with the columns. Leaf by leaf it took an
exponential, a product and a contraction over all pairs per column
(from ``SE_PRODUCT_NODE_FROM`` factors on).
"""

from __future__ import annotations

import hashlib
import math
import threading

import numpy as np
from scipy.spatial.distance import pdist, squareform
from sklearn.base import clone
from sklearn.gaussian_process import kernels as sk

from ..kernels._change import _ChangeOperator
from ..kernels._columns import ActiveColumns
from ..kernels._core import CatalogueKernel
from ..kernels._specs import (EXP_FLOOR, CentredPeriodic, Linear, Periodic, SquaredExponential,
                              centred_periodic_normaliser, spec_of)

__all__ = ["KernelTree", "condense", "expand", "kernel_matrix"]
#: Lag storage is used when the distinct distances are at most this share of the pairs.
LAG_SHARE = 0.25
#: Distances that differ by less than this many units in the last place of the largest coordinate share a
#: lag: their difference is the rounding of x_a − x_b itself, which the distances without lags carry too. A
#: width relative to the largest distance instead (1e-10 of it, until 2026-12-07) merged distinct distances
#: on long series: monthly decimal years rounded to 6 decimals (steps of 0.083333 and 0.083334) on 400 rows
#: shared lags, which moved an SE kernel's entries by 1e-5 to 1e-4 relative and the log evidence by 1e-4.
LAG_RESOLUTION_ULPS = 64
#: A distance-based leaf whose parent cannot share its lags takes lag storage when it has at most this many
#: lags, or as many as rows. Measured per evaluation with gradient (one core): RQ(0) * CW(0, PER(0), PER(0))
#: on the internet series (909 rows, 2925 lags: hours with some missing) 31.9 -> 22.6 ms, temperature's
#: LIN(0) + CW(0, CP(0, RQ(0), RQ(0)), C) 37.9 -> 25.4 ms, SE(0) + LIN(0) * WN on internet 21.4 -> 19.3 ms;
#: additive kernels on tables the same or faster (pima 768 x 8 20.2 -> 17.9 ms, breast_cancer 512 x 30
#: 15.8 -> 14.1 ms). With every column's lags, however many (up to 31 000 on breast_cancer), the table was
#: slower again (16.3 ms): a gather from a table larger than the cache costs more than the exponential.
LONE_LEAF_MOST_LAGS = 4096
#: A detection with a bound on the lags first counts the distinct distances of this many times as many
#: pairs as the bound: more than the bound among them are more among all pairs (see Lags.from_squared_distances).
LAG_PREFIX_FACTOR = 2
#: A product of this many SE kernels or more is one :class:`_SquaredExponentialProduct` node. With
#: fewer its matrix products cost more than the factors' exponentials: an evaluation and contraction of
#: SE(0) * SE(1) on 1000 rows took 4.6 ms as one node and 3.4 ms leaf by leaf; 3 factors 5.0 and 5.4 ms,
#: 10 factors 5.2 and 17 ms, 35 factors 10 and 60-190 ms.
SE_PRODUCT_NODE_FROM = 3
#: That node expands r² = |s_a|² + |s_b|² − 2 s_a·s_b (s: the centred columns over their lengthscales), whose
#: rounding is eps x the larger squared norm: on a column that spans many lengthscales (two clusters 1e5
#: lengthscales apart) entries of K near 1 were off by 1e-6 and the log evidence by 3e-5. Above this
#: squared norm (rounding 2e-11) r², and a column's contraction, are taken from pairwise differences.
EXPANDED_SQUARE_MOST = 1e5


class Lags:
    """The distinct pairwise distances of one column set and the map pair -> lag.

    Attributes
    ----------
    d2 : ndarray (m,)
        Squared distance of each lag.
    inverse : ndarray (n(n−1)/2,)
        Lag of each pair, in condensed order.
    """

    def __init__(self, d2, inverse):
        self.d2 = d2
        self.inverse = inverse
        self.m = d2.shape[0]
        self._d = None

    @classmethod
    def from_squared_distances(cls, d2, most=None, coordinate_scale=None):
        """Lags of condensed squared distances, or ``None`` when they are not few enough.

        With ``most``, more than ``most`` lags are too many as well, and a count
        of the distinct distances among the first pairs, a lower bound of
        theirs among all, usually says so: a column of continuous values has
        as many as pairs. Returns ``(lags, count)``, where ``count`` is the
        number of lags, or a lower bound of it when ``lags`` is None.

        Distances within ``LAG_RESOLUTION_ULPS`` units in the last place of
        ``coordinate_scale`` (the largest absolute coordinate of the rows,
        by default the largest distance) share a lag.
        """
        if d2.size < 64:
            return None, 0
        top = float(d2.max())
        if not top > 0.0:
            return None, 0
        limit = LAG_SHARE * d2.size if most is None else min(LAG_SHARE * d2.size, most)
        largest = max(math.sqrt(top), 0.0 if coordinate_scale is None else float(coordinate_scale))
        scale = 1.0 / (LAG_RESOLUTION_ULPS * np.finfo(np.float64).eps * largest)
        prefix = int(LAG_PREFIX_FACTOR * limit) + 1
        if prefix < d2.size:
            # the sort of every pair's distance took 47 ms on 1000 rows; the prefix's ends most detections
            count = np.unique(np.rint(np.sqrt(d2[:prefix]) * scale).astype(np.int64)).size
            if count > limit:
                return None, count
        keys = np.rint(np.sqrt(d2) * scale).astype(np.int64)
        unique_keys, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        if unique_keys.size > limit:
            return None, unique_keys.size
        return cls(d2[first], inverse.astype(np.intp, copy=False).ravel()), unique_keys.size

    @property
    def d(self):
        if self._d is None:
            self._d = np.sqrt(self.d2)
        return self._d

    def gather(self, values):
        """Condensed storage of per-lag values."""
        return values[self.inverse]

    def reduce(self, g):
        """Per-lag sums of a condensed vector."""
        return np.bincount(self.inverse, weights=g, minlength=self.m)


#: Gridded column sets whose lags are kept per process (each holds an index per pair), and how many
#: column sets remembered as not gridded (a key each); see ``_shared_lags``.
LAG_CACHE_SIZE = 16
NO_LAG_CACHE_SIZE = 4096
_lag_cache: dict = {}
_no_lags: set = set()
_lag_counts: dict = {}  # column sets' numbers of lags (a key and an int each), kept past their eviction
_lag_cache_lock = threading.Lock()


def _shared_lags(columns_data, squared_distances, most=None):
    """``Lags.from_squared_distances(squared_distances())``, remembered by the content of the columns;
    None also when there are more than ``most`` lags (if given).

    A search compiles a kernel tree for every candidate and every start
    screen on the same few row sets, and the detection sorts all n(n−1)/2
    distances of every column each time: on a 20-column table it took a
    tenth of the search. The key is a digest of the column values, so equal
    data share one detection whatever array holds them; shared ``Lags`` are
    read-only. The number of lags outlives the evicted detection: a table
    wider than the cache would otherwise detect its columns' lags anew for
    every candidate only to find them too many for a lone leaf.
    """
    data = np.ascontiguousarray(columns_data, dtype=float)
    key = (data.shape, hashlib.blake2b(data.tobytes(), digest_size=16).digest())
    with _lag_cache_lock:
        if key in _no_lags:
            return None
        if most is not None and _lag_counts.get(key, 0) > most:
            return None
        if key in _lag_cache:
            return _lag_cache[key] if most is None or _lag_cache[key].m <= most else None
    d2 = squared_distances()
    # the rounding of a coordinate difference is that of the largest coordinate (per column, summed in d²)
    coordinate_scale = math.sqrt(float(np.square(np.abs(data).max(axis=0, initial=0.0)).sum()))
    lags, count = Lags.from_squared_distances(d2, most, coordinate_scale)
    with _lag_cache_lock:
        if lags is None:
            if count > LAG_SHARE * d2.size or count == 0:
                if len(_no_lags) >= NO_LAG_CACHE_SIZE:
                    _no_lags.clear()
                _no_lags.add(key)
            else:
                # too many for ``most`` only: another caller may still take them
                if len(_lag_counts) >= NO_LAG_CACHE_SIZE:
                    _lag_counts.clear()
                _lag_counts[key] = max(count, _lag_counts.get(key, 0))
            return None
        lags.d2.setflags(write=False)
        lags.inverse.setflags(write=False)
        while len(_lag_cache) >= LAG_CACHE_SIZE:
            _lag_cache.pop(next(iter(_lag_cache)))
        _lag_cache[key] = lags
        if len(_lag_counts) >= NO_LAG_CACHE_SIZE:
            _lag_counts.clear()
        _lag_counts[key] = lags.m
    return lags if most is None or lags.m <= most else None


def condense(M):
    """(strict upper triangle as a vector, diagonal) of a symmetric matrix.

    Only the upper triangle is read, so a lower-triangle-only matrix may be
    passed transposed.
    """
    return squareform(M, checks=False), np.diag(M).copy()


def expand(k, kd):
    """Full symmetric matrix from condensed storage."""
    K = squareform(k, checks=False)
    K[np.diag_indices_from(K)] = kd
    return K


def kernel_matrix(kernel, X):
    """K(X, X) of an sklearn kernel, through its :class:`KernelTree` when that evaluates a product of
    ``SE_PRODUCT_NODE_FROM`` or more SE kernels as one node, else the kernel's own.

    The kernel's own product computes and multiplies a matrix per factor: on 1000 rows x 35 columns a
    product of six SE kernels took 22 ms instead of 2 (one core), the ARD product of 35 100 ms instead of
    3; a sum of per-column SE kernels, without such a node, 100 ms instead of the tree's 190.
    """
    if not _has_squared_exponential_product(kernel):
        return kernel(X)
    return KernelTree(kernel, X, use_lags=False).matrix()


def _has_squared_exponential_product(node):
    """Whether a kernel tree of ``node`` holds a :class:`_SquaredExponentialProduct` node."""
    if isinstance(node, sk.Product) and len(_squared_exponential_leaves(node, None) or ()) >= SE_PRODUCT_NODE_FROM:
        return True
    if isinstance(node, (sk.Sum, sk.Product, _ChangeOperator)):
        return _has_squared_exponential_product(node.k1) or _has_squared_exponential_product(node.k2)
    return False


def _squared_exponential_leaves(node, columns):
    """``[(leaf node, its SE kernel, its columns of X or None for all)]`` of a product of isotropic SE kernels,
    in theta order; None for any other node."""
    if isinstance(node, sk.Product):
        left = _squared_exponential_leaves(node.k1, columns)
        right = None if left is None else _squared_exponential_leaves(node.k2, columns)
        return None if right is None else left + right
    kernel, cols = KernelTree._catalogue_leaf(node, columns)
    if not isinstance(kernel, SquaredExponential) or kernel.anisotropic:
        return None
    return [(node, kernel, cols)]


class KernelTree:
    """Evaluate a kernel and contract its gradient on fixed inputs ``X``.

    Parameters
    ----------
    kernel : sklearn Kernel
        Compiled at construction; later changes to it are not seen. Its
        ``theta`` order is the order of :meth:`set_theta` and the contractions.
    X : ndarray of shape (n_samples, n_features)
    use_lags : bool, default=True
        Detect gridded inputs (lag storage). Off where the inputs are known
        not to be gridded, to skip the detection's sort of all distances.
    """

    def __init__(self, kernel, X, use_lags=True):
        self.kernel = kernel
        self.use_lags = use_lags
        self.X = np.asarray(X, dtype=float)
        self.n = self.X.shape[0]
        self._distances = {}
        self._offset = 0
        self.root = self._compile(kernel, None)
        self.n_dims = self._offset
        if self.n_dims != kernel.n_dims:
            raise AssertionError("kernel tree compiled with a wrong number of hyperparameters")
        self.set_theta(kernel.theta)

    # -- compilation ------------------------------------------------------------------
    def squared_distances(self, columns):
        """Condensed squared Euclidean distances over ``columns`` (cached, shared by leaves)."""
        key = ("d2", columns)
        if key not in self._distances:
            self._distances[key] = pdist(self.columns_of(columns), "sqeuclidean")
        return self._distances[key]

    def distances(self, columns):
        key = ("d", columns)
        if key not in self._distances:
            self._distances[key] = np.sqrt(self.squared_distances(columns))
        return self._distances[key]

    def lags(self, columns, most=None):
        """:class:`Lags` of ``columns`` when their distances are few (at most ``most`` if given), else
        ``None`` (cached)."""
        if not self.use_lags:
            return None
        key = ("lags", columns, most)
        if key not in self._distances:
            self._distances[key] = _shared_lags(self.columns_of(columns), lambda: self.squared_distances(columns),
                                                most)
        return self._distances[key]

    def pair_indices(self):
        """Row and column index of every pair in condensed order (cached)."""
        if "pairs" not in self._distances:
            rows, cols = np.triu_indices(self.n, 1)
            self._distances["pairs"] = (rows.astype(np.intp), cols.astype(np.intp))
        return self._distances["pairs"]

    def columns_of(self, columns):
        return self.X if columns is None else self.X[:, list(columns)]

    def _compile(self, node, columns, lags_shared=True):
        """The evaluator of ``node``; ``lags_shared``: its parent may share lag storage with it (see
        :meth:`_lag_columns`), else a distance-based leaf takes lag storage only for a grid's few lags."""
        factors = self._squared_exponential_factors(node, columns) if isinstance(node, sk.Product) else None
        if factors and len(factors) >= SE_PRODUCT_NODE_FROM:
            for factor in factors:
                factor.slice = slice(self._offset, self._offset + factor.n_dims)
                self._offset += factor.n_dims
            return _SquaredExponentialProduct(factors, self.X)
        if isinstance(node, (sk.Sum, sk.Product)):
            shared = self._lag_columns(node, columns) is not None
            left, right = self._compile(node.k1, columns, shared), self._compile(node.k2, columns, shared)
            return (_SumNode if isinstance(node, sk.Sum) else _ProductNode)(left, right)
        if isinstance(node, _ChangeOperator):
            left, right = self._compile(node.k1, columns, False), self._compile(node.k2, columns, False)
            switch_column = node.column if columns is None else columns[node.column]
            if switch_column >= self.X.shape[1]:
                node(self.X[:1])  # raises the explanatory ValueError
            change = _ChangeNode(node, left, right, self.X[:, switch_column], self.pair_indices())
            change.slice = slice(self._offset, self._offset + change.n_dims)
            self._offset += change.n_dims
            return change
        leaf = None
        kernel, cols = self._catalogue_leaf(node, columns)
        if kernel is not None:
            if cols is not None and max(cols) >= self.X.shape[1]:
                node(self.X[:1])  # raises the explanatory ValueError
            leaf = _fast_leaf(kernel, cols, self, lags_shared)
        if leaf is None:
            leaf = _GenericLeaf(node, self.columns_of(columns))
        leaf.slice = slice(self._offset, self._offset + leaf.n_dims)
        self._offset += leaf.n_dims
        return leaf

    def _squared_exponential_factors(self, node, columns):
        """The factors of a product of isotropic SE kernels, in theta order, or None for any other node."""
        leaves = _squared_exponential_leaves(node, columns)
        if leaves is None:
            return None
        factors = []
        for leaf, kernel, cols in leaves:
            cols = tuple(range(self.X.shape[1])) if cols is None else cols
            if max(cols) >= self.X.shape[1]:
                leaf(self.X[:1])  # raises the explanatory ValueError
            factors.append(_SquaredExponentialFactor(kernel, cols, self.n))
        return factors

    @staticmethod
    def _catalogue_leaf(node, columns):
        """(catalogue kernel, its columns of X) of a leaf node, or (None, None) for any other kernel."""
        if isinstance(node, ActiveColumns) and isinstance(node.kernel, CatalogueKernel):
            cols = tuple(int(c) for c in node._column_indices())
            return node.kernel, cols if columns is None else tuple(columns[c] for c in cols)
        if isinstance(node, CatalogueKernel):
            return node, columns
        return None, None

    def _lag_columns(self, node, columns):
        """``(columns,)`` when every leaf below ``node`` is a distance-based or periodic kernel on the same
        columns, so that the node's values may share its leaves' lag storage; else None.

        A distance-based leaf among nodes without its lags (one SE per column
        of a table) takes lag storage only when its lags are few
        (``LONE_LEAF_MOST_LAGS``, or as many as the rows: a grid, a regular
        series, an integer column): gathering its values and reducing its
        contractions cost about as much as its exponential on every pair once
        the per-lag values outgrow the cache. On breast_cancer (512 rows, 30
        columns of 1 500 to 31 000 distinct distances) an additive kernel's
        contraction took 6.6 ms with lag storage on every column and 4.9 ms
        without.
        """
        if isinstance(node, (sk.Sum, sk.Product)):
            left, right = self._lag_columns(node.k1, columns), self._lag_columns(node.k2, columns)
            return left if left is not None and left == right else None
        kernel, cols = self._catalogue_leaf(node, columns)
        spec = None if kernel is None else spec_of(kernel)
        if spec is None:
            return None
        distance_based = spec.profile is not None and not kernel.anisotropic
        return (cols,) if distance_based or isinstance(kernel, Periodic) else None

    # -- evaluation ---------------------------------------------------------------------
    def set_theta(self, theta):
        theta = np.asarray(theta, dtype=float)
        for leaf in self.root.leaves():
            leaf.set(theta[leaf.slice])

    def forward(self):
        """Condensed K(X, X) at the current theta: (upper triangle, diagonal)."""
        k, kd = self.root.forward()
        return _condensed(self.root, k), kd

    def matrix(self):
        """Full K(X, X) at the current theta (a new array)."""
        return expand(*self.forward())

    def contract_condensed(self, g, gd):
        """Σ_{a<b} g_ab ∂K_ab/∂θ_j + Σ_a gd_a ∂K_aa/∂θ_j; ``forward()`` must be current."""
        out = np.zeros(self.n_dims)
        self.root.backward(_in_own_storage(self.root, g), gd, out)
        return out

    def contract(self, G):
        """Σ_ab G_ab ∂K_ab/∂θ_j for a full (not necessarily symmetric) G."""
        return self.contract_condensed(squareform(G + G.T, checks=False), np.diag(G).copy())


def _condensed(node, k):
    """A node's off-diagonal values in condensed storage."""
    return k if node.lags is None else node.lags.gather(k)


def _in_own_storage(node, g):
    """A condensed contraction vector in ``node``'s storage (reduced to lags if it has them)."""
    return g if node.lags is None else node.lags.reduce(g)


class _SumNode:
    #: Whether :meth:`backward_gk` contracts from g ⊙ K alone (see ``_ProductNode``); a sum's children
    #: need g itself.
    takes_gk = False

    def __init__(self, left, right):
        self.left, self.right = left, right
        # both children on the same lags: this node's values are a function of the lag too
        self.lags = left.lags if left.lags is not None and left.lags is right.lags else None
        self._buffer = None  # see _values_buffer

    def leaves(self):
        return self.left.leaves() + self.right.leaves()

    def _children_forward(self):
        k1, d1 = self.left.forward()
        k2, d2 = self.right.forward()
        if self.lags is None:
            k1, k2 = _condensed(self.left, k1), _condensed(self.right, k2)
        return k1, d1, k2, d2

    def forward(self):
        k1, d1, k2, d2 = self._children_forward()
        self.k, self.kd = np.add(k1, k2, out=self._values_buffer(k1)), d1 + d2
        return self.k, self.kd

    def _values_buffer(self, like):
        """This node's values array, reused from one evaluation to the next.

        A fresh n(n−1)/2 vector per node and evaluation is paged in anew
        each time: in a chain of 29 nodes (a sum or product of one kernel per
        column) that took as long as the arithmetic. Whoever reads a node's
        values reads them before the next ``forward``.
        """
        if self._buffer is None or self._buffer.shape != like.shape:
            self._buffer = np.empty_like(like)
        return self._buffer

    def backward(self, g, gd, out):
        self._pass_down("backward", g, gd, out)

    def _pass_down(self, contraction, g, gd, out):
        """Both children's ``contraction`` ("backward" or "backward_gk") of the same g, each in its storage."""
        for child in (self.left, self.right):
            getattr(child, contraction)(g if self.lags is not None else _in_own_storage(child, g), gd, out)


class _ProductNode(_SumNode):
    """K1 ⊙ K2.

    A child whose contractions depend on g only through g ⊙ (its values)
    (``takes_gk``: amplitude-scaled leaves such as SE or PER, and products of
    them) receives g ⊙ K of this node, the same vector for both children:
    (g ⊙ K2) ⊙ K1 = g ⊙ K. A chain of such products (an ARD kernel: one SE per
    column) then multiplies once in all instead of twice per node, and
    allocates no vector per node.
    """

    def __init__(self, left, right):
        super().__init__(left, right)
        self.takes_gk = left.takes_gk and right.takes_gk

    def forward(self):
        k1, d1, k2, d2 = self._children_forward()
        self.k1, self.k2 = k1, k2  # each child's values in this node's storage
        self.k, self.kd = np.multiply(k1, k2, out=self._values_buffer(k1)), d1 * d2
        return self.k, self.kd

    def backward(self, g, gd, out):
        if self.takes_gk:
            self.backward_gk(g * self.k, gd * self.kd, out)
            return
        g_left, g_right = g * self.k2, g * self.k1
        if self.lags is None:
            g_left, g_right = _in_own_storage(self.left, g_left), _in_own_storage(self.right, g_right)
        self.left.backward(g_left, gd * self.right.kd, out)
        self.right.backward(g_right, gd * self.left.kd, out)

    def backward_gk(self, gk, gkd, out):
        """Contract from gk = g ⊙ K and gkd = gd ⊙ diag K (in this node's storage); needs ``takes_gk``."""
        self._pass_down("backward_gk", gk, gkd, out)


class _ChangeNode:
    """Changepoint / change window: s_a s_b K1 + t_a t_b K2 with t = 1 − s (see ``kernels._change``).

    Its own hyperparameters (location, widths) come after its children's in
    theta; like a leaf it takes them through :meth:`set` and writes their
    contractions: with ∂s/∂θ_j = ds_j and ∂t = −ds,

        Σ_{a<b} g_ab ∂K_ab + Σ_a gd_a ∂K_aa = Σ_a ds_ja [(G1 s)_a − (G2 t)_a + 2 gd_a (s_a K1_aa − t_a K2_aa)]

    where G1, G2 are the symmetric zero-diagonal matrices of g ⊙ K1 and g ⊙ K2.
    """

    lags = None  # the switch depends on the position, not on the distance
    takes_gk = False

    def __init__(self, kernel, left, right, x, pairs):
        self.operator = clone(kernel)
        self.left, self.right = left, right
        self.x = x
        self.rows, self.cols = pairs
        self.n_dims = len(self.operator._free_own())
        self.slice = None

    def leaves(self):
        return self.left.leaves() + self.right.leaves() + [self]

    def set(self, theta):
        self.operator.set_own_theta(theta)

    def forward(self):
        k1, d1 = self.left.forward()
        k2, d2 = self.right.forward()
        self.k1, self.d1 = _condensed(self.left, k1), d1
        self.k2, self.d2 = _condensed(self.right, k2), d2
        s, t, self.ds = self.operator.switch_and_derivatives(self.x)
        self.s, self.t = s, t
        self.ss = s[self.rows] * s[self.cols]
        self.tt = t[self.rows] * t[self.cols]
        self.k = self.ss * self.k1 + self.tt * self.k2
        self.kd = s * s * d1 + t * t * d2
        return self.k, self.kd

    def backward(self, g, gd, out):
        s, t = self.s, self.t
        self.left.backward(_in_own_storage(self.left, g * self.ss), gd * s * s, out)
        self.right.backward(_in_own_storage(self.right, g * self.tt), gd * t * t, out)
        if not self.n_dims:
            return
        r = squareform(g * self.k1, checks=False) @ s
        r -= squareform(g * self.k2, checks=False) @ t
        r += 2.0 * gd * (s * self.d1 - t * self.d2)
        out[self.slice] = self.ds.T @ r


class _Leaf:
    n_dims = 0
    slice = None
    lags = None
    #: Leaves that set it contract from g ⊙ K alone (``backward_gk``), see ``_ProductNode``.
    takes_gk = False

    def leaves(self):
        return [self]


class _GenericLeaf(_Leaf):
    """Any scikit-learn kernel: evaluated through its own ``eval_gradient``."""

    def __init__(self, kernel, X):
        self.kernel = clone(kernel)
        self.X = X
        self.n_dims = kernel.n_dims

    def set(self, theta):
        if self.n_dims:
            self.kernel.theta = theta

    def forward(self):
        self.k, self.kd = condense(self.kernel(self.X))
        return self.k, self.kd

    def backward(self, g, gd, out):
        if self.n_dims:
            _, dK = self.kernel(self.X, eval_gradient=True)
            G = squareform(0.5 * g, checks=False)
            G[np.diag_indices_from(G)] = gd
            out[self.slice] = G.reshape(-1) @ dK.reshape(-1, self.n_dims)


def _fast_leaf(kernel, columns, tree, lags_shared=True):
    spec = spec_of(kernel)
    if spec is None:
        return None
    if spec.profile is not None:
        if kernel.anisotropic:
            return None
        # alone, lags pay only when they are few: the gather and the reduction cost about as much as an
        # exponential on every pair once the lags outgrow the cache
        lags = tree.lags(columns, most=None if lags_shared else max(tree.n, LONE_LEAF_MOST_LAGS))
        d2 = tree.squared_distances(columns) if lags is None else lags.d2
        return _StationaryLeaf(kernel, spec.profile, d2, tree.n, lags)
    # the kind's facts fix these matrices: s2 everywhere, s2 on the diagonal
    if spec.kind.constant:
        return _ConstantLeaf(kernel, tree.n)
    if spec.kind.white_noise:
        return _WhiteNoiseLeaf(kernel, tree.n)
    for cls in type(kernel).__mro__:
        if cls in _LEAVES:
            return _LEAVES[cls](kernel, columns, tree)
    return None


def _periodic_leaf(kernel, columns, tree):
    X = tree.columns_of(columns)
    if X.shape[1] != 1:
        kernel._one_column(X, "X")  # raises the explanatory ValueError
    lags = tree.lags(columns)
    d = tree.distances(columns) if lags is None else lags.d
    leaf_class = _CentredPeriodicLeaf if isinstance(kernel, CentredPeriodic) else _PeriodicLeaf
    return leaf_class(kernel, d, tree.n, lags)


class _CatalogueLeaf(_Leaf):
    """Holds the current hyperparameter values of a catalogue kernel."""

    def __init__(self, kernel, n):
        self.n = n
        self.free = [name for name in kernel._hyperparameter_names if not kernel._fixed(name)]
        by_name = {hp.name: hp for hp in kernel.hyperparameters}
        self.sizes = [by_name[name].n_elements for name in self.free]
        self.unconstrained = set(kernel._unconstrained)
        self.values = {name: _normalised(getattr(kernel, name)) for name in kernel._hyperparameter_names}
        self.n_dims = sum(self.sizes)

    def set(self, theta):
        i = 0
        for name, size in zip(self.free, self.sizes):
            chunk = theta[i : i + size]
            value = chunk if name in self.unconstrained else np.exp(chunk)
            self.values[name] = value.copy() if size > 1 else float(value[0])
            i += size

    def value(self, name):
        return self.values[name]

    def _put(self, out, name, number):
        offset = self.slice.start
        for free_name, size in zip(self.free, self.sizes):
            if free_name == name:
                out[offset : offset + size] = number
                return
            offset += size


def _normalised(value):
    """A float for a scalar (or one-element) hyperparameter, else a float array."""
    array = np.asarray(value, dtype=float)
    return float(array.ravel()[0]) if array.size == 1 else array.ravel().copy()


class _StationaryLeaf(_CatalogueLeaf):
    """A distance-based kind on the squared distance d² (isotropic lengthscale l).

    With r² = d²/l², K = s2 g(r²) and diag K = s2; ∂K/∂log s2 = K, and the
    lengthscale and shape parameters (RQ's α) contract K ⊙ ∂log g/∂log θ
    as the kind's :class:`~skgpsearch.kernels.StationaryProfile` says.
    """

    def __init__(self, kernel, profile, d2, n, lags=None):
        super().__init__(kernel, n)
        self.profile = profile
        self.d2 = d2  # per pair, or per lag when ``lags`` is given
        self.d2_max = float(d2.max()) if d2.size else 0.0
        self.lags = lags
        self.profiled = ("lengthscale",) + tuple(profile.shape_parameters)

    def _r2(self, out=None):
        """d²/l² (in ``out`` when given), capped at the profile's ``negligible_r2`` where the farthest pair
        passes it."""
        inv_l2 = 1.0 / self.value("lengthscale") ** 2
        r2 = np.multiply(self.d2, inv_l2, out=out)
        if self._capped(inv_l2):
            np.minimum(r2, self.profile.negligible_r2, out=r2)
        return r2

    def _capped(self, inv_l2):
        cap = self.profile.negligible_r2
        return cap is not None and self.d2_max * inv_l2 > cap

    def forward(self):
        variance = self.value("variance")
        # the previous values are read before this forward (see _SumNode._values_buffer): their storage is free
        previous = getattr(self, "k", None) if self.profile.profile_in_place else None
        k, self.state = self.profile.leaf_profile(self._r2(out=previous), self.values)
        k *= variance
        self.k, self.kd = k, np.full(self.n, variance)
        return self.k, self.kd

    takes_gk = True

    def backward(self, g, gd, out):
        if self.n_dims:
            self.backward_gk(g * self.k, gd * self.kd, out)

    def backward_gk(self, gk, gkd, out):
        """Contract from gk = g ⊙ K and gkd = gd ⊙ diag K: every derivative is K ⊙ (a function of r²)."""
        if not self.n_dims:
            return
        if "variance" in self.free:
            self._put(out, "variance", float(gk.sum()) + float(gkd.sum()))
        if not any(name in self.free for name in self.profiled):
            return
        inv_l2 = 1.0 / self.value("lengthscale") ** 2
        if self.profile.contraction_is_r2 and not self._capped(inv_l2):
            self._put(out, "lengthscale", inv_l2 * float(np.dot(gk, self.d2)))
            return
        r2 = self._r2()
        for name, value in self.profile.leaf_contractions(r2, gk, self.values, self.state, self.free).items():
            self._put(out, name, value)


class _SquaredExponentialFactor(_CatalogueLeaf):
    """The values of one SE factor of a :class:`_SquaredExponentialProduct`, which evaluates them."""

    def __init__(self, kernel, columns, n):
        super().__init__(kernel, n)
        self.columns = columns


class _SquaredExponentialProduct:
    """Π_j SE_j = (Π_j s2_j) exp(−½ Σ_c w_c (x_c − x'_c)²), w_c = Σ_{j on c} 1/l_j².

    One matrix product of the scaled, centred columns Z gives every pair's
    r² = |z_a|² + |z_b|² − 2 z_a·z_b. The contractions come from gk = g ⊙ K
    (the node takes g ⊙ K, see ``_ProductNode``): ∂K/∂log s2_j = K, and
    ∂K/∂log l_j = K ⊙ Σ_{c of j} (x_c − x'_c)²/l_j², whose contraction over the
    pairs is, per column, with M the symmetric zero-diagonal matrix of gk,

        Σ_{a<b} gk_ab (x_ac − x_bc)² = Σ_a x_ac² (M 1)_a − Σ_a x_ac (M x_c)_a,

    one matrix product M X for all columns (x centred: the two sums are then
    no larger than the terms they cancel).
    """

    lags = None
    takes_gk = True

    def __init__(self, factors, X):
        self.factors = factors
        self.used = sorted({c for factor in factors for c in factor.columns})
        where = {c: i for i, c in enumerate(self.used)}
        self.positions = [[where[c] for c in factor.columns] for factor in factors]
        Z = X[:, self.used]
        self.Z = Z - Z.mean(axis=0)
        self.n = X.shape[0]

    #: r² is capped here, as the SE leaf caps it (see ``EXP_FLOOR``).
    negligible_r2 = SquaredExponential.profile.negligible_r2

    def leaves(self):
        return list(self.factors)

    def _weights(self):
        weights = np.zeros(len(self.used))
        for factor, positions in zip(self.factors, self.positions):
            weights[positions] += 1.0 / factor.value("lengthscale") ** 2
        return weights

    def forward(self):
        S = self.Z * np.sqrt(self._weights())
        squared_norms = np.einsum("ij,ij->i", S, S)
        if squared_norms.max(initial=0.0) > EXPANDED_SQUARE_MOST:
            r2 = pdist(S, "sqeuclidean")
        else:
            R2 = S @ S.T
            R2 *= -2.0
            R2 += squared_norms[:, np.newaxis]
            R2 += squared_norms[np.newaxis, :]
            r2 = squareform(R2, checks=False)
        np.clip(r2, 0.0, self.negligible_r2, out=r2)
        variance = math.prod(factor.value("variance") for factor in self.factors)
        k = np.exp(np.multiply(r2, -0.5, out=r2), out=r2)
        k *= variance
        self.k, self.kd = k, np.full(self.n, variance)
        return self.k, self.kd

    def backward(self, g, gd, out):
        self.backward_gk(g * self.k, gd * self.kd, out)

    def backward_gk(self, gk, gkd, out):
        variance_contraction = None
        column_contractions = None
        for factor, positions in zip(self.factors, self.positions):
            if "variance" in factor.free:
                if variance_contraction is None:
                    variance_contraction = float(gk.sum()) + float(gkd.sum())
                factor._put(out, "variance", variance_contraction)
            if "lengthscale" in factor.free:
                if column_contractions is None:
                    column_contractions = self._column_contractions(gk)
                factor._put(out, "lengthscale",
                            float(column_contractions[positions].sum()) / factor.value("lengthscale") ** 2)

    def _column_contractions(self, gk):
        """Σ_{a<b} gk_ab (x_ac − x_bc)² for every used column c."""
        M = squareform(gk, checks=False)
        MZ = M @ self.Z
        row_sums = M.sum(axis=1)
        contractions = row_sums @ (self.Z * self.Z) - np.einsum("ij,ij->j", self.Z, MZ)
        spans = np.square(self.Z).max(axis=0, initial=0.0) * self._weights()
        for c in np.flatnonzero(spans > EXPANDED_SQUARE_MOST):
            contractions[c] = float(gk @ pdist(self.Z[:, c:c + 1], "sqeuclidean"))
        return contractions


class _PeriodicLeaf(_CatalogueLeaf):
    """K = s2 exp(−2 sin²(a)/l²), a = π d/p, diag K = s2.

    ∂K/∂log l = K ⊙ 4 sin²(a)/l²; ∂K/∂log p = K ⊙ (2/l²) a sin(2a) = K ⊙ (4/l²) a sin(a) cos(a).
    """

    def __init__(self, kernel, d, n, lags=None):
        super().__init__(kernel, n)
        self.d = d  # per pair, or per lag when ``lags`` is given
        self.lags = lags

    def _squared_sines(self):
        """sin²(a) per pair (or lag), and a sin(a) cos(a) in ``a_sin_cos`` when the period is free."""
        a = self.d * (math.pi / self.value("period"))
        # sin²(a) has period π: reduce to b in [0, π) (cheap) before the transcendental
        b = a - math.pi * np.floor(a * (1.0 / math.pi))
        s = np.sin(b)
        if "period" in self.free:
            # a sin(a) cos(a) = a sin(b) cos(b); cos(b) = ±sqrt(1 − sin²b), negative past π/2
            c = np.sqrt(np.maximum(1.0 - s * s, 0.0))
            np.copysign(c, 0.5 * math.pi - b, out=c)
            c *= s
            c *= a
            self.a_sin_cos = c
        s *= s
        self.s2 = s
        return s

    def forward(self):
        s = self._squared_sines()
        inv_l2 = 1.0 / self.value("lengthscale") ** 2
        k = (-2.0 * inv_l2) * s
        if -2.0 * inv_l2 < EXP_FLOOR:  # a short lengthscale: spare numpy's slow path for an underflowing exp
            np.maximum(k, EXP_FLOOR, out=k)
        np.exp(k, out=k)
        k *= self.value("variance")
        self.k, self.kd = k, np.full(self.n, self.value("variance"))
        return self.k, self.kd

    takes_gk = True

    def backward(self, g, gd, out):
        if self.n_dims:
            self.backward_gk(g * self.k, gd * self.kd, out)

    def backward_gk(self, gk, gkd, out):
        """Contract from gk = g ⊙ K and gkd = gd ⊙ diag K: every derivative is K ⊙ (a function of d)."""
        if not self.n_dims:
            return
        inv_l2 = 1.0 / self.value("lengthscale") ** 2
        if "variance" in self.free:
            self._put(out, "variance", float(gk.sum()) + float(gkd.sum()))
        if "lengthscale" in self.free:
            self._put(out, "lengthscale", 4.0 * inv_l2 * float(np.dot(gk, self.s2)))
        if "period" in self.free:
            self._put(out, "period", 4.0 * inv_l2 * float(np.dot(gk, self.a_sin_cos)))


class _CentredPeriodicLeaf(_PeriodicLeaf):
    """K = s2 (1 + E/D), E = expm1(−2 z sin²(a)), z = 1/l², D = 1 − e^(−z) I0(z); diag K = s2.

    ∂K/∂log l = s2 2z (2 sin²(a) (1 + E) D + E D') / D², D' = dD/dz;
    ∂K/∂log p = s2 4z a sin(a) cos(a) (1 + E) / D.
    """

    takes_gk = False  # its derivatives are not K times a function of d

    def forward(self):
        s = self._squared_sines()
        z = 1.0 / self.value("lengthscale") ** 2
        self.z = z
        self.D, self.dD_dz = centred_periodic_normaliser(z)
        self.E = np.expm1((-2.0 * z) * s)
        k = self.E * (self.value("variance") / self.D)
        k += self.value("variance")
        self.k, self.kd = k, np.full(self.n, self.value("variance"))
        return self.k, self.kd

    def backward(self, g, gd, out):
        if not self.n_dims:
            return
        variance, z, D = self.value("variance"), self.z, self.D
        if "variance" in self.free:
            self._put(out, "variance", float(np.dot(g, self.k)) + variance * float(gd.sum()))
        if "lengthscale" in self.free or "period" in self.free:
            g_one_plus_E = g * (1.0 + self.E)
        if "lengthscale" in self.free:
            value = 2.0 * float(np.dot(g_one_plus_E, self.s2)) * D + float(np.dot(g, self.E)) * self.dD_dz
            self._put(out, "lengthscale", variance * 2.0 * z * value / D**2)
        if "period" in self.free:
            self._put(out, "period", variance * 4.0 * z * float(np.dot(g_one_plus_E, self.a_sin_cos)) / D)


class _LinearLeaf(_CatalogueLeaf):
    """K = s2 (X − c)(X − c)^T.

    ∂K_ab/∂c_q = −s2 (xc_aq + xc_bq), so the offset contraction is
    −s2 [Σ_a xc_aq r_a + 2 Σ_a gd_a xc_aq] with r_a = Σ_{b≠a} g_ab.
    """

    def __init__(self, kernel, X, n):
        super().__init__(kernel, n)
        self.X = X
        self.vector_offset = np.size(self.values["offset"]) > 1

    def forward(self):
        Xc = self.X - self.value("offset")
        self.Xc = Xc
        variance = self.value("variance")
        k, kd = condense(Xc @ Xc.T)
        k *= variance
        kd *= variance
        self.k, self.kd = k, kd
        return self.k, self.kd

    def backward(self, g, gd, out):
        if not self.n_dims:
            return
        if "variance" in self.free:
            self._put(out, "variance", float(np.dot(g, self.k)) + float(np.dot(gd, self.kd)))
        if "offset" in self.free:
            row_sums = squareform(g, checks=False).sum(axis=1)
            grad = -self.value("variance") * (self.Xc.T @ (row_sums + 2.0 * gd))
            self._put(out, "offset", grad if self.vector_offset else grad.sum())


class _ConstantLeaf(_CatalogueLeaf):
    def forward(self):
        variance = self.value("variance")
        self.k = np.full(self.n * (self.n - 1) // 2, variance)
        self.kd = np.full(self.n, variance)
        return self.k, self.kd

    takes_gk = True

    def backward(self, g, gd, out):
        if self.n_dims:
            self._put(out, "variance", self.value("variance") * (float(g.sum()) + float(gd.sum())))

    def backward_gk(self, gk, gkd, out):
        if self.n_dims:
            self._put(out, "variance", float(gk.sum()) + float(gkd.sum()))


class _WhiteNoiseLeaf(_ConstantLeaf):
    def forward(self):
        self.k = np.zeros(self.n * (self.n - 1) // 2)
        self.kd = np.full(self.n, self.value("variance"))
        return self.k, self.kd

    def backward(self, g, gd, out):
        if self.n_dims:
            self._put(out, "variance", self.value("variance") * float(gd.sum()))

    def backward_gk(self, gk, gkd, out):
        if self.n_dims:
            self._put(out, "variance", float(gkd.sum()))


#: Fast leaves of the other kernels with a structure of their own, by kernel class (subclasses included).
_LEAVES = {
    Periodic: _periodic_leaf,
    Linear: lambda kernel, columns, tree: _LinearLeaf(kernel, tree.columns_of(columns), tree.n),
}
