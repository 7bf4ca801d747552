"""Likelihoods of the Laplace engine: binary classification (labels y ∈ {−1, +1}) and robust regression.

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
``robust``     ε/2 + (1 − ε) Φ(y f)  (Mrkšić 2014, §5.1)      logit ε, ε ∈ [1e-4, 0.5]
=============  ==============================================  ===========================

The robust likelihood is a mixture of the probit likelihood and a uniform
label: a fraction ε of labels are random ("salt and pepper" outliers), so a
confident wrong label costs at most −log(ε/2). It is not log-concave (W can be
negative far on the wrong side of the boundary).

Regression (real-valued y):

=============  ==============================================  ===========================
``student_t``  Γ((ν+1)/2) / (Γ(ν/2) √(νπ) σ)                   log σ, log ν (ν learned) or
               × (1 + (y − f)² / (ν σ²))^(−(ν+1)/2)              log σ alone (ν fixed)
=============  ==============================================  ===========================

The Student-t noise has heavy tails: a residual r costs only about
(ν+1) log |r| instead of r² / 2σ², so a few gross outliers do not drag the
latent function or inflate the noise of every other point. It is not
log-concave: W = (ν+1)(νσ² − r²)/(νσ² + r²)² is negative for |r| > √ν σ.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betaln, digamma, expit, log_ndtr, logit, logsumexp, ndtr, ndtri

__all__ = [
    "Likelihood", "Logistic", "Probit", "RobustProbit", "StudentT", "get_likelihood", "LIKELIHOODS",
    "REGRESSION_LIKELIHOODS", "OUTLIER_CLIP",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
#: Robust regression: targets are clipped at this many robust standard units wherever a
#: summary of their scale or spectrum is needed (kernel defaults, period hints, variance
#: shares), which a single gross outlier would otherwise dominate.
OUTLIER_CLIP = 5.0
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
    #: Targets are labels in {−1, +1} (classification) rather than real values.
    binary = True

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

    def check_targets(self, y):
        """Raise ``ValueError`` when ``y`` is not a valid target vector of this likelihood."""
        if not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError("labels of binary GP classification must be -1 or +1")

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

    def log_predictive_density(self, y, mean, var, theta):
        """log ∫ p(y_i | f) N(f | mean_i, var_i) df for each i.

        Binary likelihoods are symmetric, p(y | f) = p(+1 | y f), so this is
        log p(+1) at the mean y_i · mean_i. Others: 48-point Gauss–Hermite
        quadrature of log p(y | f), summed in log space.
        """
        y = np.asarray(y, dtype=float)
        mean = np.asarray(mean, dtype=float)
        if self.binary:
            with np.errstate(divide="ignore"):
                return np.log(np.clip(self.predict_proba(y * mean, var, theta), 1e-300, 1.0))
        sd = np.sqrt(np.maximum(np.asarray(var, dtype=float), 0.0))
        f = mean[:, np.newaxis] + sd[:, np.newaxis] * _GH_NODES
        log_p = self.derivatives(np.repeat(y, _GH_NODES.size), f.ravel(), theta)[0].reshape(f.shape)
        return logsumexp(log_p + np.log(_GH_WEIGHTS), axis=1)

    def predict_log_odds(self, mean, var, theta):
        """log p(y* = +1) − log p(y* = −1): monotone in the predictive probability, > 0 iff it exceeds ½."""
        mean = np.asarray(mean, dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(mean, var, theta)) - np.log(self.predict_proba(-mean, var, theta))

    def describe(self, theta):
        """The parameters as a dict of readable values."""
        return {}

    def latent_of_probability(self, p, floor=1e-3):
        """The latent value f with p(y = +1 | f) = p, p clipped to [floor, 1 − floor] (the starting constant mean)."""
        return float(ndtri(np.clip(p, floor, 1 - floor)))


class Logistic(Likelihood):
    """p(y | f) = σ(y f); predictive probabilities by 48-point Gauss–Hermite quadrature."""

    name = "logistic"

    def latent_of_probability(self, p, floor=1e-3):
        return float(logit(np.clip(p, floor, 1 - floor)))

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

    def log_predictive_density(self, y, mean, var, theta):
        return log_ndtr(np.asarray(y) * np.asarray(mean) / np.sqrt(1.0 + np.asarray(var)))


class RobustProbit(Likelihood):
    """p(y | f) = ε/2 + (1 − ε) Φ(y f), with the outlier rate ε learned (theta = [logit ε]).

    Predictive probabilities are exact and lie in [ε/2, 1 − ε/2].
    """

    name = "robust"
    #: The latent function's scale is the probit's (the describe() texts name it).
    link_name = "probit"
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
        # log-uniform over [0.005, 0.4]: the evidence is multimodal in ε (Mrkšić 2014, §5.1.2
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


class StudentT(Likelihood):
    """Student-t noise for robust regression: y = f + σ t_ν.

    The observation model of Vanhatalo, Jylänki & Vehtari (2009), "Gaussian
    process regression with Student-t likelihood" (NIPS 22), whose inference
    is, as here, the Laplace approximation.

    Parameters
    ----------
    degrees_of_freedom : float or None, default=4.0
        ν fixed at this value, or ``None`` to learn it (theta = [log σ, log ν]);
        with ν fixed, theta = [log σ]. Small ν (1 is the Cauchy distribution)
        means heavy tails; as ν → ∞ the noise becomes Gaussian with variance σ².
    """

    name = "student_t"
    log_concave = False
    binary = False
    #: Range of the scale σ, in units of the (normalised) targets.
    SCALE_BOUNDS = (1e-3, 10.0)
    #: Range of a learned ν.
    DOF_BOUNDS = (1.0, 200.0)
    #: Starting values.
    SCALE_INIT = 0.3
    DOF_INIT = 4.0

    def __init__(self, degrees_of_freedom=4.0):
        self.degrees_of_freedom = None if degrees_of_freedom is None else float(degrees_of_freedom)

    @property
    def param_names(self):
        return ("noise_scale",) if self.degrees_of_freedom is not None else ("noise_scale", "degrees_of_freedom")

    def check_targets(self, y):
        if not np.all(np.isfinite(y)):
            raise ValueError("regression targets must be finite")

    def default_theta(self):
        theta = [math.log(self.SCALE_INIT)]
        if self.degrees_of_freedom is None:
            theta.append(math.log(self.DOF_INIT))
        return np.array(theta)

    def bounds(self):
        rows = [[math.log(b) for b in self.SCALE_BOUNDS]]
        if self.degrees_of_freedom is None:
            rows.append([math.log(b) for b in self.DOF_BOUNDS])
        return np.array(rows)

    def random_theta(self, rng):
        theta = [rng.uniform(math.log(0.03), math.log(1.0))]
        if self.degrees_of_freedom is None:
            theta.append(rng.uniform(math.log(2.0), math.log(30.0)))
        return np.array(theta)

    def scale_and_dof(self, theta):
        """(σ, ν) from theta."""
        nu = self.degrees_of_freedom if self.degrees_of_freedom is not None else math.exp(theta[1])
        return math.exp(theta[0]), nu

    def derivatives(self, y, f, theta):
        sigma, nu = self.scale_and_dof(theta)
        r = y - f
        s = nu * sigma * sigma
        q = s + r * r
        # log Γ((ν+1)/2) − log Γ(ν/2) − ½ log π = −log B(ν/2, ½), without the cancellation at large ν
        log_p = -betaln(0.5 * nu, 0.5) - 0.5 * math.log(nu) - math.log(sigma) - 0.5 * (nu + 1.0) * np.log1p(r * r / s)
        d1 = (nu + 1.0) * r / q
        d2 = (nu + 1.0) * (r * r - s) / (q * q)
        d3 = 2.0 * (nu + 1.0) * r * (r * r - 3.0 * s) / (q * q * q)
        return log_p, d1, d2, d3

    def param_derivatives(self, y, f, theta):
        sigma, nu = self.scale_and_dof(theta)
        r = y - f
        r2 = r * r
        s = nu * sigma * sigma
        q = s + r2
        # log σ moves s = ν σ² by 2s; log ν moves s by s and ν + 1 by ν
        d_log_p = [-1.0 + (nu + 1.0) * r2 / q]
        d_d1 = [-2.0 * s * (nu + 1.0) * r / (q * q)]
        d_d2 = [2.0 * s * (nu + 1.0) * (s - 3.0 * r2) / q**3]
        if self.degrees_of_freedom is None:
            d_log_p.append(0.5 * nu * (digamma(0.5 * (nu + 1.0)) - digamma(0.5 * nu) - 1.0 / nu - np.log1p(r2 / s))
                           + 0.5 * (nu + 1.0) * r2 / q)
            d_d1.append(nu * r / q - s * (nu + 1.0) * r / (q * q))
            d_d2.append(nu * (r2 - s) / (q * q) + (nu + 1.0) * s * (s - 3.0 * r2) / q**3)
        return np.array(d_log_p), np.array(d_d1), np.array(d_d2)

    def noise_variance(self, theta):
        """Variance of the noise σ² ν / (ν − 2); infinite for ν ≤ 2."""
        sigma, nu = self.scale_and_dof(theta)
        return sigma * sigma * nu / (nu - 2.0) if nu > 2.0 else math.inf

    def predict_proba(self, mean, var, theta):
        raise TypeError("the Student-t likelihood is a regression likelihood: it has no class probabilities")

    def describe(self, theta):
        sigma, nu = self.scale_and_dof(theta)
        return {"noise_scale": sigma, "degrees_of_freedom": nu}


LIKELIHOODS = {cls.name: cls for cls in (Logistic, Probit, RobustProbit)}
#: Likelihoods of the regressor's Laplace path (the Gaussian one is the exact engine's).
REGRESSION_LIKELIHOODS = {StudentT.name: StudentT}


def student_t_outliers(residuals, scale, nu):
    """Which residuals lie beyond the central 99.9 % of Student-t noise of ``scale`` and ``nu`` degrees of
    freedom: about 1 in 1000 points under the model (what ``describe`` counts as outliers to the model, and
    what a Student-t model's variance shares leave out)."""
    from scipy.stats import t as student_t

    return np.abs(residuals) > scale * float(student_t.ppf(0.9995, nu))


def get_likelihood(name):
    """A likelihood object by name (``"logistic"``, ``"probit"``, ``"robust"``)."""
    if isinstance(name, Likelihood):
        return name
    cls = LIKELIHOODS.get(str(name).lower())
    if cls is None:
        raise ValueError(f"Unknown likelihood {name!r}; use one of {', '.join(sorted(LIKELIHOODS))}.")
    return cls()
