"""Likelihoods of binary GP classification, p(y | f) with labels y ∈ {−1, +1}.

Each likelihood gives, per data point, log p(y_i | f_i) and its first three
derivatives with respect to f_i (what the Laplace approximation needs: the
mode, W = −∂² log p, and the gradient of log |B| through W), the
derivatives of log p, ∂ log p and ∂² log p with respect to its own
parameters, and the predictive probability p(y* = +1) under a Gaussian
posterior of the latent f*.

=============  ==============================================  ===========================
name           p(y | f)                                        parameters (theta)
=============  ==============================================  ===========================
``logistic``   σ(y f) = 1 / (1 + exp(−y f))                    none
``probit``     Φ(y f) (cumulative standard normal)             none
``robust``     ε/2 + (1 − ε) Φ(y f)  (seed 001 §5.1)           logit ε, ε ∈ [1e-4, 0.5]
=============  ==============================================  ===========================

The robust likelihood is a mixture of the probit likelihood and a uniform
label: a fraction ε of labels are random ("salt and pepper" outliers), so a
confident wrong label costs at most −log(ε/2). It is not log-concave (W can be
negative far on the wrong side of the boundary).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, log_ndtr, logit, ndtr, ndtri

__all__ = ["Likelihood", "Logistic", "Probit", "RobustProbit", "get_likelihood", "LIKELIHOODS"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
#: Gauss–Hermite rule for E[σ(f)] under a Gaussian (logistic predictive probabilities).
_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(48)
_GH_WEIGHTS = _GH_WEIGHTS / _GH_WEIGHTS.sum()


def _log_phi(z):
    return -0.5 * z * z - _HALF_LOG_2PI


class Likelihood:
    """Base class. ``theta`` is the vector of the likelihood's own (transformed) parameters."""

    name = None
    param_names = ()
    log_concave = True

    @property
    def n_params(self):
        return len(self.param_names)

    def default_theta(self):
        return np.zeros(0)

    def bounds(self):
        return np.zeros((0, 2))

    def random_theta(self, rng):
        """A random starting value of the parameters (for restarts)."""
        return self.default_theta()

    def derivatives(self, y, f, theta):
        """(log p, ∂ log p, ∂² log p, ∂³ log p), each of shape (n,), derivatives w.r.t. f."""
        raise NotImplementedError

    def param_derivatives(self, y, f, theta):
        """∂/∂theta_j of (log p, ∂ log p, ∂² log p): three arrays of shape (n_params, n)."""
        empty = np.zeros((0, np.size(f)))
        return empty, empty, empty

    def predict_proba(self, mean, var, theta):
        """p(y* = +1) = ∫ p(+1 | f) N(f | mean, var) df."""
        raise NotImplementedError

    def predict_log_odds(self, mean, var, theta):
        """log p(y* = +1) − log p(y* = −1): monotone in the predictive probability, > 0 iff it exceeds ½."""
        mean = np.asarray(mean, dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(mean, var, theta)) - np.log(self.predict_proba(-mean, var, theta))

    def describe(self, theta):
        """The parameters as a dict of readable values."""
        return {}

    def latent_of_probability(self, p):
        """The latent value f with p(y = +1 | f) = p (the starting constant mean)."""
        return float(ndtri(np.clip(p, 1e-3, 1 - 1e-3)))


class Logistic(Likelihood):
    """p(y | f) = σ(y f); predictive probabilities by 48-point Gauss–Hermite quadrature."""

    name = "logistic"

    def latent_of_probability(self, p):
        return float(logit(np.clip(p, 1e-3, 1 - 1e-3)))

    def derivatives(self, y, f, theta):
        z = y * f
        log_p = -np.logaddexp(0.0, -z)
        pi = expit(f)
        d1 = 0.5 * (y + 1.0) - pi
        d2 = -pi * (1.0 - pi)
        d3 = d2 * (1.0 - 2.0 * pi)
        return log_p, d1, d2, d3

    def predict_proba(self, mean, var, theta):
        mean = np.asarray(mean, dtype=float)
        sd = np.sqrt(np.maximum(np.asarray(var, dtype=float), 0.0))
        return expit(mean[:, np.newaxis] + sd[:, np.newaxis] * _GH_NODES) @ _GH_WEIGHTS


class Probit(Likelihood):
    """p(y | f) = Φ(y f); predictive probabilities exact: Φ(mean / sqrt(1 + var))."""

    name = "probit"

    def derivatives(self, y, f, theta):
        z = y * f
        log_p = log_ndtr(z)
        r = np.exp(_log_phi(z) - log_p)  # φ(z)/Φ(z), stable for very negative z
        d1 = y * r
        d2 = -r * (z + r)
        d3 = y * (-r + r * (z + r) * (z + 2.0 * r))
        return log_p, d1, d2, d3

    def predict_proba(self, mean, var, theta):
        return ndtr(np.asarray(mean) / np.sqrt(1.0 + np.asarray(var)))

    def predict_log_odds(self, mean, var, theta):
        z = np.asarray(mean) / np.sqrt(1.0 + np.asarray(var))
        return log_ndtr(z) - log_ndtr(-z)


class RobustProbit(Likelihood):
    """p(y | f) = ε/2 + (1 − ε) Φ(y f), with the outlier rate ε learned (theta = [logit ε]).

    Predictive probabilities are exact and lie in [ε/2, 1 − ε/2].
    """

    name = "robust"
    param_names = ("outlier_rate",)
    log_concave = False
    #: Range of the outlier rate ε.
    EPSILON_BOUNDS = (1e-4, 0.5)
    #: Initial outlier rate.
    EPSILON_INIT = 0.05

    def default_theta(self):
        return np.array([logit(self.EPSILON_INIT)])

    def bounds(self):
        return np.array([[logit(self.EPSILON_BOUNDS[0]), logit(self.EPSILON_BOUNDS[1])]])

    def random_theta(self, rng):
        # log-uniform over [0.005, 0.4]: the evidence is multimodal in ε (seed 001 §5.1.2
        # saw its estimates collapse to 0 or explode from a single start)
        return np.array([logit(math.exp(rng.uniform(math.log(0.005), math.log(0.4))))])

    def _parts(self, y, f, theta):
        eps = float(expit(theta[0]))
        z = y * f
        log_probit = log_ndtr(z)
        log_p = np.logaddexp(math.log(0.5 * eps), math.log1p(-eps) + log_probit)
        q1 = np.exp(math.log1p(-eps) + _log_phi(z) - log_p)  # p'(z) / p
        return eps, z, log_probit, log_p, q1

    def derivatives(self, y, f, theta):
        _, z, _, log_p, q1 = self._parts(y, f, theta)
        q2 = -z * q1  # p''(z) / p
        q3 = (z * z - 1.0) * q1  # p'''(z) / p
        d1 = y * q1
        d2 = q2 - q1 * q1
        d3 = y * (q3 - 3.0 * q1 * q2 + 2.0 * q1**3)
        return log_p, d1, d2, d3

    def param_derivatives(self, y, f, theta):
        eps, z, log_probit, log_p, q1 = self._parts(y, f, theta)
        # ∂p/∂ε = ½ − Φ(z); chain rule to η = logit ε: dε/dη = ε(1 − ε)
        c = (0.5 - np.exp(log_probit)) * np.exp(-log_p)
        jac = eps * (1.0 - eps)
        dq1 = -q1 * (1.0 / (1.0 - eps) + c)
        dq2 = -z * dq1
        d_log_p = c * jac
        d_d1 = y * dq1 * jac
        d_d2 = (dq2 - 2.0 * q1 * dq1) * jac
        return d_log_p[np.newaxis], d_d1[np.newaxis], d_d2[np.newaxis]

    def predict_proba(self, mean, var, theta):
        eps = float(expit(theta[0]))
        return 0.5 * eps + (1.0 - eps) * ndtr(np.asarray(mean) / np.sqrt(1.0 + np.asarray(var)))

    def predict_log_odds(self, mean, var, theta):
        eps = float(expit(theta[0]))
        z = np.asarray(mean) / np.sqrt(1.0 + np.asarray(var))
        log_half_eps, log_rest = math.log(0.5 * eps), math.log1p(-eps)
        return np.logaddexp(log_half_eps, log_rest + log_ndtr(z)) - np.logaddexp(log_half_eps, log_rest + log_ndtr(-z))

    def describe(self, theta):
        return {"outlier_rate": float(expit(theta[0]))}


LIKELIHOODS = {cls.name: cls for cls in (Logistic, Probit, RobustProbit)}


def get_likelihood(name):
    """A likelihood object by name (``"logistic"``, ``"probit"``, ``"robust"``)."""
    if isinstance(name, Likelihood):
        return name
    cls = LIKELIHOODS.get(str(name).lower())
    if cls is None:
        raise ValueError(f"Unknown likelihood {name!r}; use one of {', '.join(sorted(LIKELIHOODS))}.")
    return cls()
