"""Covariance and gradient *contractions* of a scikit-learn kernel tree.

The gradient of a Gaussian-process objective with respect to kernel
hyperparameters only ever needs the contractions

    g_j = Σ_ab G_ab ∂K_ab/∂θ_j

for some n × n matrix G (for the log marginal likelihood G = ½(αα^T − K^{-1})).
scikit-learn materialises the whole (n, n, p) tensor ∂K/∂θ through every Sum
and Product node. Here the tree is walked in reverse instead: a sum passes G
to both children, a product passes G ⊙ K_other to each child, and only at a
leaf is the (small) gradient of that leaf evaluated and contracted at once.
Peak memory is a few n × n matrices per product node, whatever p is.
"""

from __future__ import annotations

import numpy as np
from sklearn.gaussian_process import kernels as sk

__all__ = ["KernelTree"]


class KernelTree:
    """Evaluate a kernel and contract its gradient on fixed inputs ``X``.

    Parameters
    ----------
    kernel : sklearn Kernel
        Any kernel; top-level ``Sum`` and ``Product`` nodes are walked,
        everything else is a leaf evaluated with its own ``eval_gradient``.
    X : ndarray of shape (n_samples, n_features)
    """

    def __init__(self, kernel, X):
        self.kernel = kernel
        self.X = X
        self._cache = {}

    @property
    def theta(self):
        return self.kernel.theta

    @theta.setter
    def theta(self, theta):
        self.kernel.theta = theta
        self._cache = {}

    def matrix(self):
        """K(X, X); keeps the factor matrices that the backward pass needs."""
        self._cache = {}
        return self._forward(self.kernel, keep=False)

    def _forward(self, node, keep):
        if isinstance(node, sk.Sum):
            K = self._forward(node.k1, False) + self._forward(node.k2, False)
        elif isinstance(node, sk.Product):
            K = self._forward(node.k1, True) * self._forward(node.k2, True)
        else:
            K = node(self.X)
        if keep:
            self._cache[id(node)] = K
        return K

    def contract(self, G):
        """Vector of Σ_ab G_ab ∂K_ab/∂θ_j over the free hyperparameters (order of ``theta``).

        ``matrix()`` must have been called at the current ``theta``.
        """
        out = []
        self._backward(self.kernel, G, out)
        return np.concatenate(out) if out else np.zeros(0)

    def _backward(self, node, G, out):
        if isinstance(node, sk.Sum):
            self._backward(node.k1, G, out)
            self._backward(node.k2, G, out)
        elif isinstance(node, sk.Product):
            K1 = self._cache.pop(id(node.k1))
            K2 = self._cache.pop(id(node.k2))
            self._backward(node.k1, G * K2, out)
            del K2
            self._backward(node.k2, G * K1, out)
        else:
            n_dims = node.n_dims
            if n_dims == 0:
                return
            _, dK = node(self.X, eval_gradient=True)
            out.append(G.reshape(-1) @ dK.reshape(-1, n_dims))
