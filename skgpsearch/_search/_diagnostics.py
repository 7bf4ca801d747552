"""Degenerate optima of a fitted candidate: hyperparameters at their bounds, terms constant or white noise on the data.

Evidence maximisation has two classic failure modes (Sollich; Rasmussen &
Williams §5.4): the noise variance runs to its lower bound while a rough
kernel interpolates the noise, or a lengthscale runs to its upper bound so
that a term is a constant (the model is a constant plus noise). Both are
optima of the evidence, so the optimiser reports success; :func:`diagnose`
names them in plain language, one string per finding, for the candidate
records (the ``diagnostics`` column of ``search_results_``), the estimators'
``diagnostics_`` and :class:`DegenerateOptimumWarning`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import Kernel, Sum
from sklearn.gaussian_process.kernels import Product as KernelProduct

from ..grammar import Base, Expr, Product
from ..kernels import ActiveColumns, DataSummary, from_kernel, to_kernel
from ._records import user_stacklevel

__all__ = ["DegenerateOptimumWarning", "OutlierWarning", "RepeatedRowsWarning", "advice_for", "diagnose", "grouped_findings", "warn_about_degenerate_optimum",
           "warn_about_outliers", "white_noise_term", "white_noise_variance"]

#: A parameter within this fraction of its (log-)range from a bound sits at that bound. L-BFGS-B
#: stops exactly on a bound it runs into; an interior optimum this close to one is as suspect.
AT_BOUND = 1e-3
#: The noise variance at its lower bound is no finding when the structure's white-noise terms keep the noise
#: of every training row above this many times that bound.
NOISE_TERM_CARRIES = 100.0
#: A term is white noise on the data when, for the median training point, no other training
#: point has a correlation above this under it (every point gets its own value).
WHITE_NOISE_CORRELATION = 0.5
#: A stationary, non-periodic base kernel is constant on the data when every pair of training
#: points has a correlation above this under it. (Not periodic ones: a periodic kernel with a long
#: lengthscale is a large constant plus a small sinusoid, highly correlated yet not constant.)
CONSTANT_CORRELATION = 0.99
#: ... and the terms it multiplies vary by little even so: the largest variance of such a term on the data
#: times (1 - that least correlation) is below this (on the scale of the normalised targets, or of the latent
#: function). A long-lengthscale SE times PER carries a trend through PER's constant part: on a 96-month
#: seasonal series with a trend its correlations were all above 0.99, its term's variance 228, and PER alone
#: fitted 161 nats worse.
CONSTANT_SPREAD = 0.01
#: The data checks use at most this many rows, evenly spread over the training rows' order
#: (their spacing is that of this many points: a check of the sample, not of every row).
DIAGNOSTIC_ROWS = 1000

#: A Gaussian model warns when a training point's leave-one-out residual, in robust standard
#: units of all of them, exceeds this (|z| > 5 has probability 6e-7 per normal point).
OUTLIER_THRESHOLD = 5.0
#: ... and whose residual is at least this share of the targets' standard deviation: sin x on 40-150 points
#: without noise has leave-one-out residuals below 8e-4 of it, the largest 9 robust units out at the ends.
OUTLIER_MIN_SHARE = 0.01
#: ... and only among at least this many rows: the median absolute deviation of three residuals is one of them
#: (three points on a clean line had the third called an outlier at 6.2 robust units).
OUTLIER_MIN_ROWS = 10
#: Scale of the median absolute deviation that makes it a standard deviation under normality.
MAD_TO_SD = 1.4826

_CONSEQUENCES = {
    ("noise variance", "lower"): "the model may be interpolating noise",
    ("noise variance", "upper"): "the kernel explains almost none of the data, which the model treats as noise",
    ("lengthscale", "lower"): "the term may be fitting noise",
    ("lengthscale", "upper"): "the term is nearly constant (or linear) over the data",
    ("variance", "lower"): "the term contributes nothing",
    ("period", "upper"): "the period is longer than the data can show",
    ("period", "lower"): "the period is as short as the bounds allow and may alias the sampling",
    ("alpha", "lower"): "the term mixes lengthscales over a very wide range",
    ("alpha", "upper"): "the term behaves as an SE",
}

_INTERPOLATION_ADVICE = (
    "For predictions: they reproduce the training rows and may wiggle between them, with error bars that are "
    "too narrow. If the data are noisy, check the held-out error (cross_val_score, or compare_with_random_forest "
    "in skgpsearch.inspection); a smaller max_depth or more rows usually ends it. For noise-free data "
    "(a simulator) it is expected."
)
_HARMLESS_ADVICE = "Predictions are not affected; only the hyperparameter's value is not meaningful."
#: What a finding means for the user's predictions and what to do, keyed by a phrase of the finding.
_ADVICE = {
    "may be interpolating noise": _INTERPOLATION_ADVICE,
    "may be fitting noise": _INTERPOLATION_ADVICE,
    "explains almost none of the data": (
        "Predictions stay close to the target's mean: at this noise level the columns do not predict it. "
        "Check the held-out error against a simple baseline."),
    "nearly constant (or linear)": (
        "Predictions are not affected; the term acts as a constant (or linear) function, and its lengthscale only "
        "says 'longer than the data span'."),
    "contributes nothing": "Predictions are not affected; a structure without the term predicts the same.",
    "longer than the data can show": (
        "The periodic term acts as a smooth trend: do not read its period as a cycle, nor expect it to repeat in "
        "a forecast."),
    "may alias the sampling": (
        "Check the period against the spacing of the data; if no cycle is expected, leave PER out of "
        "base_kernels."),
    "a simpler structure says the same": (
        "Predictions are not affected; over the data the term is nearly constant, or with a large variance a "
        "slow trend, and its lengthscale only says 'longer than the data span'."),
    "mixes lengthscales over a very wide range": (
        "Predictions are not affected; the term's lengthscale stands for a wide spread of scales, not one."),
    "behaves as an SE": _HARMLESS_ADVICE,
}


class DegenerateOptimumWarning(ConvergenceWarning):
    """The chosen model's optimum is degenerate: a hyperparameter at a bound, or a term constant or white noise.

    The model still predicts; the warning says its hyperparameters may not
    mean what they seem (see the estimator's ``diagnostics_``).
    """


class OutlierWarning(UserWarning):
    """The chosen Gaussian model has training points far outside its noise (see ``likelihood``)."""


class RepeatedRowsWarning(UserWarning):
    """Training rows repeat earlier rows exactly (inputs and target): the regressor fits each distinct row once."""


def warn_about_outliers(residuals: np.ndarray, target_spread: float | None = None) -> None:
    """Warn (:class:`OutlierWarning`) when training points lie far outside a Gaussian model's fit.

    ``residuals`` are the leave-one-out residuals y_i − E[y_i | y_−i]; they
    are compared in robust standard units (median absolute deviation), not
    each divided by its own predictive standard deviation: a fitted Gaussian
    model accommodates a gross outlier by inflating the noise or the prior
    variance where the outlier lies, which masks it in those units. With
    ``target_spread`` (the targets' standard deviation, on the residuals'
    scale) a point is an outlier only if its residual is also at least
    ``OUTLIER_MIN_SHARE`` of it: on noise-free data the residuals are tiny and
    the largest, at the ends of the inputs, were called outliers. Fewer than
    ``OUTLIER_MIN_ROWS`` residuals give no robust spread: no warning.
    """
    if residuals.size < OUTLIER_MIN_ROWS:
        return
    centre = np.median(residuals)
    spread = MAD_TO_SD * np.median(np.abs(residuals - centre))
    if not spread > 0:
        return
    deviation = np.abs(residuals - centre)
    z = deviation / spread
    large = deviation >= OUTLIER_MIN_SHARE * target_spread if target_spread else True
    outliers = np.flatnonzero((z > OUTLIER_THRESHOLD) & large)
    if outliers.size:
        worst = int(outliers[np.argmax(z[outliers])])
        warnings.warn(
            f"{outliers.size} training point(s) lie more than {OUTLIER_THRESHOLD:g} robust standard deviations "
            f"from the model's leave-one-out predictions (the worst, row {worst}, at {z[worst]:.3g}). Outliers "
            "can distort the chosen structure and the noise level of a Gaussian model; consider "
            "likelihood='student_t' (robust regression), or check these rows.",
            OutlierWarning,
            stacklevel=user_stacklevel(),
        )


def warn_about_degenerate_optimum(diagnostics: list[str]) -> None:
    """Warn (:class:`DegenerateOptimumWarning`) with a fitted model's diagnostics, if there are any.

    Findings that say the same of several terms become one sentence ("each
    of SE(5), SE(6) and SE(9) has its lengthscale at its upper bound: ..."):
    one ARD kernel over 20 columns, 15 of them irrelevant, otherwise warned
    in 30 sentences. ``diagnostics_`` keeps one finding per term.
    """
    if diagnostics:
        warnings.warn(
            "The chosen model's optimum is degenerate: " + "; ".join(grouped_findings(diagnostics)) + ". Its hyperparameters may "
            "not mean what they seem (see diagnostics_); consider other base kernels, more data, or "
            "describe(model) for the whole picture.",
            DegenerateOptimumWarning,
            stacklevel=user_stacklevel(),
        )


#: Where the subject of a finding about one term ends (see :func:`grouped_findings`).
_PREDICATES = (" has its ", " is constant on the data", " acts as white noise")
#: A multiclass classifier's findings start with the binary problem they belong to.
_PROBLEM_PREFIX = re.compile(r"^class '[^']*' vs rest: ")


def grouped_findings(findings: Sequence[str]) -> list[str]:
    """``findings`` with those that differ only in their term merged into one sentence, in first-seen order.

    "SE(5) has its lengthscale at its upper bound: ..." and the same of SE(6)
    become "each of SE(5) and SE(6) has its lengthscale at its upper bound:
    ...". Findings of different binary problems of a multiclass classifier
    (their "class 'a' vs rest: " prefix) are never merged.
    """
    subjects: dict[tuple[str, str], list[str]] = {}
    for finding in findings:
        match = _PROBLEM_PREFIX.match(finding)
        prefix = match.group(0) if match else ""
        body = finding[len(prefix):]
        cut = min((i for i in (body.find(p) for p in _PREDICATES) if i > 0), default=-1)
        predicate = body[cut + 1:] if cut > 0 else body
        terms = subjects.setdefault((prefix, predicate), [])
        if cut > 0 and body[:cut] not in terms:
            terms.append(body[:cut])
    sentences = []
    for (prefix, predicate), terms in subjects.items():
        if len(terms) <= 1:
            sentences.append(prefix + (f"{terms[0]} {predicate}" if terms else predicate))
        else:
            sentences.append(f"{prefix}each of {', '.join(terms[:-1])} and {terms[-1]} {predicate}")
    return sentences


def advice_for(finding: str) -> str:
    """What one finding of :func:`diagnose` means for predictions, and what to do about it."""
    for phrase, advice in _ADVICE.items():
        if phrase in finding:
            return advice
    return ("Predictions are usually not affected: the data do not pin this hyperparameter down. Check the "
            "held-out error if in doubt.")


def diagnose(kernel: Kernel, X: np.ndarray, noise: tuple[float, tuple[float, float]] | None = None,
             binary_labels: bool = False) -> tuple[str, ...]:
    """Plain-language findings about a fitted kernel's optimum on its training inputs (empty when none).

    Parameters
    ----------
    kernel : Kernel
        The fitted kernel (a :func:`~skgpsearch.kernels.to_kernel` tree).
    X : ndarray of shape (n_samples, n_features)
        The training inputs.
    noise : (variance, (lower, upper)) or None
        The fitted Gaussian noise variance and its bounds, when the model has one.
    binary_labels : bool, default=False
        The kernel is a latent function's behind class labels: an amplitude at
        its upper bound is then no finding. Labels that a boundary separates
        cleanly ask for a latent function as steep as the bounds allow (its
        probabilities near 0 and 1): the default classifier on a clean
        3-column table warned about it in two of three draws, with a test
        error of 4-8 %. Nor is anything found about a latent function that
        is a constant alone (the base rate of labels without signal).

    Returns
    -------
    tuple of str
        One sentence per hyperparameter at a bound (except a periodic
        kernel's lengthscale at its upper bound: the sinusoid limit of its
        shape, a well-posed model; and the lengthscale at its upper bound of a
        factor that multiplies factors on other columns: its column does not
        matter to that product, which is what an ARD kernel is for, see
        :func:`_irrelevant_column_factors`), per term of the structure multiplied out
        (``PER * (PER + WN)`` has the terms ``PER * PER`` and ``PER * WN``)
        that acts as white noise on the data without a white-noise factor,
        and per stationary, non-periodic base kernel that is constant on the
        data (but such a factor of a product over other columns too).
    """
    findings = []
    n_features = X.shape[1]
    if binary_labels and all(_as_base(leaf, n_features).kind.constant for leaf in _base_kernels(kernel)):
        # the classifier's constant model: its latent mean is the base rate, and labels without signal send the
        # constant's variance to its lower bound, the model's own answer ("no input matters")
        return ()
    terms = _distributed_terms(kernel)
    irrelevant = _irrelevant_column_factors(terms, n_features)
    if noise is not None:
        value, (low, high) = noise
        side = _bound_side(np.log(value), np.log(low), np.log(high))
        if side == "lower" and value + _least_white_noise(kernel, X, n_features) > NOISE_TERM_CARRIES * low:
            side = None  # a white-noise term (LIN * WN, noise that grows along an input) carries the noise
        if side is not None:
            findings.append(_at_bound_sentence("the noise variance is", "noise variance", side))
    findings += _parameters_at_bounds(kernel, n_features, irrelevant, _on_repeated_values(kernel, X, n_features),
                                      steep_latent=binary_labels)
    rows = _spread_rows(X)
    factor_matrices = {}  # the factors' matrices on the rows, shared by the terms they multiply
    for term in terms:
        leaves = [_as_base(leaf, n_features) for leaf in _base_kernels(term)]
        if any(leaf.kind.white_noise for leaf in leaves) or not any(leaf.columns for leaf in leaves):
            continue  # white noise by design, or a constant
        if _acts_as_white_noise(from_kernel(term, n_features=n_features), rows,
                                lambda term=term: lambda Z: _product_matrix(term, Z, factor_matrices)):
            findings.append(f"{_text(term, n_features)} acts as white noise on the data (the median training "
                            f"point correlates with no other above {WHITE_NOISE_CORRELATION}): the model may be "
                            "interpolating noise")
    for leaf in _base_kernels(kernel):
        base = _as_base(leaf, n_features)
        kind = base.kind
        if not (base.columns and kind.stationary and not (kind.periodic or kind.constant or kind.white_noise)
                and str(base.without_values()) not in irrelevant and rows.shape[0] > 1):
            continue
        least = _least_correlation(leaf, base, rows)
        if least > CONSTANT_CORRELATION and (1.0 - least) * _term_variance(leaf, terms, rows) < CONSTANT_SPREAD:
            findings.append(f"{base.without_values()} is constant on the data (every pair of training points "
                            f"correlates above {CONSTANT_CORRELATION}): a simpler structure says the same")
    return tuple(dict.fromkeys(findings))


def _least_white_noise(kernel, X, n_features):
    """The smallest variance over the rows of ``X`` of the kernel's white-noise terms (0 without one).

    ``LIN * WN`` vanishes where the input meets the linear kernel's offset: a
    model whose only noise is such a term is as sure of a row there as one
    that interpolates.
    """
    terms = [term for term in _additive_terms(kernel)
             if any(_as_base(leaf, n_features).kind.white_noise for leaf in _base_kernels(term))]
    if not terms:
        return 0.0
    return float(np.min(sum(term.diag(X) for term in terms)))


def white_noise_term(expr: Expr, X: np.ndarray, summary: DataSummary | None = None,
                     by_design: bool = True) -> Expr | None:
    """The first additive term of ``expr`` (a fitted structure) that acts as white noise on ``X``, or None.

    White noise: for the median row of ``X``, no other row has a correlation
    above ``WHITE_NOISE_CORRELATION`` under the term. ``summary``: the data
    summary the structure was fitted with (its values lie within its bounds).
    ``by_design=False`` passes over terms with a white-noise factor (``LIN *
    WN``: noise whose level varies, white noise by design): what is left is
    a signal term in the form of noise, which interpolates the training rows.
    The terms are those of the structure's expansion into a sum of products,
    so that ``PER * (PER + WN)`` is checked as ``PER * PER + PER * WN``.
    """
    for term in expr.sum_of_products():
        if not by_design and any(leaf.kind.white_noise for leaf in term.leaves):
            continue
        if term.columns and _acts_as_white_noise(term, X, lambda term=term: to_kernel(term, summary=summary)):
            return term
    return None


def _acts_as_white_noise(term, X, make_kernel):
    """Whether the median row of ``X`` correlates with no other row above WHITE_NOISE_CORRELATION under
    the additive term ``term`` (a structure with its fitted values; ``make_kernel()`` its kernel, or any
    callable that gives the term's matrix on ``X``)."""
    return bool(np.median(_nearest_correlations(term, X, make_kernel)) < WHITE_NOISE_CORRELATION)


def _nearest_correlations(term, X, make_kernel):
    """Each row's largest correlation with another row of ``X`` under ``term`` (``make_kernel()``: its kernel).

    A product of SE kernels (and constants) correlates two rows as exp(−½ |Δ|²) in coordinates
    scaled by its lengthscales: the largest correlation is the nearest neighbour's there, which a
    sort (one column) or one matrix product finds without the n x n kernel of every factor.
    """
    scaled = _se_product_coordinates(term, X)
    if scaled is None:
        correlation = _correlation(make_kernel(), X)
        np.fill_diagonal(correlation, -np.inf)
        return correlation.max(axis=1)
    return np.exp(-0.5 * _nearest_squared_distances(scaled))


def _se_product_coordinates(term, X):
    """``X`` scaled so that ``term`` correlates two rows as exp(−½ |Δ|²), or None when ``term`` is not
    an SE kernel or a product of SE kernels (and constants)."""
    if isinstance(term, Base):
        factors = (term,)
    elif isinstance(term, Product) and all(isinstance(factor, Base) for factor in term.operands):
        factors = term.operands
    else:
        return None
    weights = np.zeros(X.shape[1])
    for leaf in factors:
        if leaf.kind.constant:
            continue
        if leaf.kind.name != "SE" or not leaf.columns or "lengthscale" not in leaf.params:
            return None
        columns = list(leaf.columns)
        lengthscale = np.broadcast_to(np.asarray(leaf.params["lengthscale"], dtype=float), (len(columns),))
        weights[columns] += 1.0 / lengthscale**2
    used = np.flatnonzero(weights)
    if used.size == 0:
        return None
    # centred, which keeps the rounding of |a|² + |b|² − 2 a·b small next to |a − b|²
    return (X[:, used] - X[:, used].mean(axis=0)) * np.sqrt(weights[used])


def _nearest_squared_distances(Z):
    """Each row's squared Euclidean distance to its nearest other row of ``Z`` (inf for a single row)."""
    n = Z.shape[0]
    if n < 2:
        return np.full(n, np.inf)
    if Z.shape[1] == 1:
        order = np.argsort(Z[:, 0], kind="stable")
        gaps = np.diff(Z[order, 0])
        nearest = np.minimum(np.concatenate([[np.inf], gaps]), np.concatenate([gaps, [np.inf]]))
        out = np.empty(n)
        out[order] = nearest**2
        return out
    D2 = _squared_distance_matrix(Z)
    np.fill_diagonal(D2, np.inf)
    return np.maximum(D2.min(axis=1), 0.0)


def _squared_distance_matrix(Z):
    """|z_a|² + |z_b|² − 2 z_a·z_b for every pair of rows of ``Z`` (one matrix product; centre ``Z`` first)."""
    squared_norms = np.einsum("ij,ij->i", Z, Z)
    D2 = Z @ Z.T
    D2 *= -2.0
    D2 += squared_norms[:, np.newaxis]
    D2 += squared_norms[np.newaxis, :]
    return D2


def white_noise_variance(kernel: Kernel, X: np.ndarray) -> np.ndarray | None:
    """The variance at each row of ``X`` of the kernel's terms (multiplied out) that are products of base
    kernels with a white-noise factor: noise by design (``WN``, ``LIN * WN``); None without such a term. (A
    change operator's term mixes its sides' terms through its switch: it is left out, white noise or not.)"""
    n_features = X.shape[1]
    terms = [term for term in _distributed_terms(kernel) if _product_of_base_kernels(term)
             and any(_as_base(leaf, n_features).kind.white_noise for leaf in _base_kernels(term))]
    return sum(term.diag(X) for term in terms) if terms else None


def _product_of_base_kernels(kernel):
    if isinstance(kernel, KernelProduct):
        return _product_of_base_kernels(kernel.k1) and _product_of_base_kernels(kernel.k2)
    return isinstance(kernel, ActiveColumns) or not (hasattr(kernel, "k1") and hasattr(kernel, "k2"))


def _term_variance(leaf, terms, X):
    """The largest variance on the rows ``X`` of the distributed ``terms`` that hold the base kernel ``leaf``."""
    return max((float(np.max(term.diag(X))) for term in terms if any(b is leaf for b in _base_kernels(term))),
               default=0.0)


def _least_correlation(kernel, leaf, X):
    """The least correlation between two rows of ``X`` under ``kernel``, the base kernel ``leaf``.

    A distance-based kernel (SE, RQ, the Matérns) decreases with the distance
    between its inputs: its least correlation is that of the two rows farthest
    apart on its columns, evaluated at two points that far apart.
    """
    if not leaf.kind.distance_based:
        return float(_correlation(kernel, X).min())
    columns = list(leaf.columns)
    Z = X[:, columns] - X[:, columns].mean(axis=0)
    if len(columns) == 1:
        diameter = float(np.ptp(Z[:, 0]))
    else:
        diameter = float(np.sqrt(max(_squared_distance_matrix(Z).max(), 0.0)))
    pair = np.zeros((2, X.shape[1]))
    pair[1, columns[0]] = diameter
    return float(_correlation(kernel, pair)[0, 1])


def _additive_terms(kernel):
    if isinstance(kernel, Sum):
        return _additive_terms(kernel.k1) + _additive_terms(kernel.k2)
    return [kernel]


def _product_matrix(term, X, cache):
    """``term(X)`` for a term of :func:`_distributed_terms`, each factor's matrix computed once in ``cache``."""
    if isinstance(term, KernelProduct):
        return _product_matrix(term.k1, X, cache) * _product_matrix(term.k2, X, cache)
    if id(term) not in cache:
        cache[id(term)] = (term, term(X))  # the kernel is kept so that its id stays its own
    return cache[id(term)][1]


def _distributed_terms(kernel):
    """The terms of a kernel tree multiplied out (``PER * (PER + WN)``: ``PER * PER`` and ``PER * WN``), each a
    product of the tree's own fitted kernels; a change operator's switch multiplies its sides: one term."""
    if isinstance(kernel, Sum):
        return _distributed_terms(kernel.k1) + _distributed_terms(kernel.k2)
    if isinstance(kernel, KernelProduct):
        return [KernelProduct(a, b) for a in _distributed_terms(kernel.k1) for b in _distributed_terms(kernel.k2)]
    return [kernel]


def _base_kernels(kernel):
    """The base kernels of a kernel tree (sums, products and change operators have ``k1`` and ``k2``)."""
    if isinstance(kernel, ActiveColumns) or not (hasattr(kernel, "k1") and hasattr(kernel, "k2")):
        return [kernel]
    return _base_kernels(kernel.k1) + _base_kernels(kernel.k2)


def _as_base(kernel, n_features):
    return from_kernel(kernel, n_features=n_features)


def _text(kernel, n_features):
    return str(from_kernel(kernel, n_features=n_features).without_values())


def _correlation(kernel, X):
    K = kernel(X)
    scale = np.sqrt(np.clip(np.diag(K), 1e-300, None))
    return K / np.outer(scale, scale)


def _spread_rows(X):
    if X.shape[0] <= DIAGNOSTIC_ROWS:
        return X
    return X[np.linspace(0, X.shape[0] - 1, DIAGNOSTIC_ROWS).round().astype(int)]


def _irrelevant_column_factors(terms, n_features):
    """The base kernels (their text without values) that occur in the distributed ``terms`` only as factors of
    products with a factor on another column, as one ARD kernel's do.

    Such a factor at its longest lengthscale, constant on the data, says that its column does not matter to
    the product: the product is then that of the other factors, a well-posed model, and what an ARD kernel
    is for (``describe()`` reports it among the columns' relevances). On a classifier's 12-column table
    with 6 informative columns every fit had been warned as degenerate for it.
    """
    in_products, elsewhere = set(), set()
    for term in terms:
        leaves = [_as_base(leaf, n_features) for leaf in _base_kernels(term)]
        for i, leaf in enumerate(leaves):
            other_columns = {c for j, other in enumerate(leaves) if j != i for c in other.columns}
            (in_products if other_columns - set(leaf.columns) else elsewhere).add(str(leaf.without_values()))
    return in_products - elsewhere


def _on_repeated_values(kernel, X, n_features):
    """The base kernels (text without values) whose columns take each value on two or more rows of ``X`` (on
    the median row): levels of a discrete column. At its shortest lengthscale such a kernel correlates the
    rows of one level only, the levels' means -- a well-posed model (a 3-level column fitted its group means
    and the noise within 15 %), not one fitting noise."""
    repeated = set()
    for leaf in _base_kernels(kernel):
        base = _as_base(leaf, n_features)
        if base.columns:
            _, counts = np.unique(X[:, list(base.columns)], axis=0, return_counts=True)
            if np.median(np.repeat(counts, counts)) >= 2:
                repeated.add(str(base.without_values()))
    return repeated


def _parameters_at_bounds(kernel, n_features, irrelevant=frozenset(), repeated=frozenset(), steep_latent=False):
    """Sentences for the free hyperparameters of ``kernel`` that sit at a bound (in the optimiser's coordinates),
    but the lengthscales at their upper bound of the ``irrelevant`` factors (see _irrelevant_column_factors)
    and at their lower bound of the kernels on ``repeated`` values (see _on_repeated_values), and with
    ``steep_latent`` (a classifier's latent function) the amplitudes at their upper bound."""
    findings = []
    theta, bounds = kernel.theta, kernel.bounds
    i = 0
    for hyperparameter in kernel.hyperparameters:
        if hyperparameter.fixed:
            continue
        for j in range(i, i + hyperparameter.n_elements):
            side = _bound_side(theta[j], *bounds[j])
            if side is None:
                continue
            owner, parameter = _owner(kernel, hyperparameter.name, n_features)
            if side == "upper" and parameter == "lengthscale" and getattr(getattr(owner, "kind", None), "periodic", False):
                continue  # the sinusoid limit of a periodic shape: a well-posed model, not a degenerate one
            if side == "upper" and parameter == "lengthscale" and _text_of(owner) in irrelevant:
                continue  # a column that does not matter to its product (ARD)
            if side == "lower" and parameter == "lengthscale" and _text_of(owner) in repeated:
                continue  # the levels of a discrete column, each its own mean
            if side == "upper" and parameter == "variance" and steep_latent:
                continue  # cleanly separated classes: probabilities near 0 and 1
            findings.append(_at_bound_sentence(f"{_text_of(owner)} has its {parameter}", parameter, side))
        i += hyperparameter.n_elements
    return findings


def _bound_side(value, low, high):
    tolerance = AT_BOUND * (high - low)
    if value <= low + tolerance:
        return "lower"
    if value >= high - tolerance:
        return "upper"
    return None


def _at_bound_sentence(subject, parameter, side):
    consequence = _CONSEQUENCES.get((parameter, side))
    sentence = f"{subject} at its {side} bound"
    return f"{sentence}: {consequence}" if consequence else sentence


def _text_of(owner):
    return owner if isinstance(owner, str) else str(owner.without_values())


def _owner(kernel, name, n_features):
    """The structure (or, without a grammar counterpart, the class name) owning the hyperparameter ``name``, and the parameter's name."""
    *path, parameter = name.split("__")
    if path and path[-1] == "kernel":
        path = path[:-1]  # the parameters of an ActiveColumns' kernel belong to the ActiveColumns
    owner = kernel
    for step in path:
        owner = getattr(owner, step)
    try:
        return from_kernel(owner, n_features=n_features), parameter
    except ValueError:  # a kernel with no grammar counterpart
        return type(owner).__name__, parameter
