"""Starting points of one candidate's hyperparameter fit.

A search is only as good as its worst candidate fit, and a GP likelihood is
multimodal: a periodic kernel started at the wrong period ends at a multiple
or an alias of the true one, a new additive term started with 1 % of the
variance stays there, a smooth kernel started short absorbs a cycle. A
candidate therefore starts from a *pool* of structured guesses:

- for every new base kernel (one that carries no fitted value yet), a few
  alternative values (:func:`leaf_options`): lengthscales short, medium and
  long relative to the column's spacing and range; rational-quadratic α
  small, 1 and large; periods from the periodogram, its harmonics and a
  log-spaced grid; linear offsets at the mean and half a range beyond each end;
- *warm* variants (the parent's fitted values for the shared kernels) in
  which every new additive term takes a real share of the parent's residual
  variance (several shares), and the *nested* variant in which it takes 1 %
  -- the child then starts next to its parent's optimum and its fit never
  ends below the parent's likelihood;
- *cold* variants (data-aware defaults for every kernel), from which a kernel
  that absorbed a component in the parent can move away;
- for every new changepoint or change window, its location at the points
  where the parent's residuals change most (:func:`change_locations`) and at
  the quartiles of the column (:func:`change_options`).

Every start of the pool is scored by one likelihood evaluation (one Cholesky
factorisation); the best few are optimised (:func:`select_starts`). For
regression the same factorisation also gives each start's value at its best
overall amplitude (:func:`profile_starts`), and the starts are ranked both
ways (:func:`select_raw_and_profiled`): the raw value favours starts whose
amplitudes and noise already fit (a nearly noise-free start that interpolates a
cycle), the profiled value starts whose covariance *shape* fits (a periodic
kernel at the right period whose default amplitude is far off, which an
unscaled start can leave in its first optimiser steps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._engine._linalg import NumericalError
from .._engine._optimizer import deadline_passed
from ..grammar._expr import Base, Change, Product, _scale
from ..kernels import change_defaults, default_hyperparameters

__all__ = [
    "StartHints", "Start", "start_pool", "select_starts", "leaf_options", "lengthscale_scales", "profile_starts",
    "evaluate_starts", "explore_starts", "select_raw_and_profiled", "change_options", "change_locations",
]

#: Shares of the parent's residual variance that a new additive term starts with (besides 1 %).
TAKE_OVER_SHARES = (0.2, 0.6)
#: Share of the nested start (the child next to its parent's optimum).
NESTED_SHARE = 0.01
#: Noise of cold starts relative to the default (a tenth of the target variance): a nearly
#: noise-free start lets a short-lengthscale kernel follow a fine structure (a cycle, say)
#: that a noisy start smooths away.
COLD_NOISE_FACTORS = (1.0, 0.01)
#: Candidate periods per periodic kernel whose cold start is always optimised.
PRIORITY_PERIODS = 3
#: Rational-quadratic α starts: many scales (small α) to nearly squared-exponential (large α).
RQ_ALPHAS = (1.0, 0.1, 10.0)
#: From this many distance-based factors on different columns, a product's cold starts include one with every
#: factor's lengthscale widened by √(factors) (:func:`_products_widened`). The classifier's ARD product on 400
#: rows of 10-20 independent columns reached the same optimum without it (3 seeds each); on 25 columns it
#: stayed at the white-noise plateau on 2 of 3, 200 nats below. Below that it only adds a start that can
#: land in another of two near-equal optima (wine, 13 columns: 0.02 nats higher, a worse held-out fit).
WIDENED_PRODUCT_FACTORS = 20


@dataclass(frozen=True)
class StartHints:
    """What the search learnt from a candidate's parent that helps start the candidate's fit.

    Attributes
    ----------
    periods : dict
        ``{column: [period, ...]}``, candidate periods of new periodic
        kernels on that column, most promising first.
    residual_variance : float or None
        Mean squared residual of the fitted parent on the fitting scale
        (at least its noise variance); ``None`` without a parent.
    """

    periods: dict = field(default_factory=dict)
    residual_variance: float | None = None
    #: ``{column: [location, ...]}``: where the residuals change most, most promising first.
    changes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Start:
    """One starting structure: the candidate carrying start values for every base kernel.

    ``kind`` is ``"nested"``, ``"warm"`` or ``"cold"``; ``noise_factor``
    multiplies the parent's noise variance (warm and nested starts) or the
    default noise variance (cold starts).
    """

    expr: object
    kind: str
    noise_factor: float = 1.0
    #: always optimised (a periodic kernel at one of the top candidate periods)
    priority: bool = False


def lengthscale_scales(columns, summary):
    """Lengthscale starts of a stationary kernel on ``columns``: medium, short, shortest, long.

    Medium is the data-aware default (the spread of the columns), short an
    eighth of it, shortest two typical spacings of the inputs (a rough
    component, e.g. a cycle a smooth kernel must follow), long twice the
    range. Starts within a factor 2 of a previous one are dropped.
    """
    spread, span = summary.spread(columns), summary.range(columns)
    gap = summary.typical_gap(columns)
    candidates = [spread, spread / 8.0]
    if gap is not None:
        candidates.append(2.0 * gap)
    candidates.append(2.0 * span)
    scales = []
    for scale in candidates:
        if all(abs(math.log(scale / other)) > math.log(2.0) for other in scales):
            scales.append(scale)
    return tuple(scales)


def leaf_options(leaf, summary, periods=None):
    """Alternative start values of a new base kernel, the most useful first.

    Parameters
    ----------
    leaf : Base
        The base kernel (its carried values are ignored).
    summary : DataSummary
    periods : sequence of float, optional
        Candidate periods of a periodic kernel (see
        :func:`skgpsearch._engine._periodogram.period_candidates`); the
        default period is used without them.

    Returns
    -------
    list of dict
        Complete hyperparameter dicts.
    """
    defaults = {name: value for name, (value, _) in default_hyperparameters(leaf.name, leaf.columns, summary).items()}
    variants = [{}]
    if leaf.kind.distance_based:
        scales = lengthscale_scales(leaf.columns, summary)
        alphas = RQ_ALPHAS if "alpha" in leaf.kind.parameters else (None,)
        variants = []
        for alpha in alphas:
            for scale in scales:
                variants.append({"lengthscale": scale} if alpha is None else {"lengthscale": scale, "alpha": alpha})
    elif leaf.kind.periodic and periods:
        variants = [{"period": float(p)} for p in periods]
    elif "offset" in leaf.kind.parameters:
        # an offset outside the data first: in a product the amplitude then grows across the data
        # (at the mean it would vanish in the middle); the mean is the data-aware default
        cols = list(leaf.columns)
        half = 0.5 * (summary.maximum[cols] - summary.minimum[cols])
        variants = [{"offset": summary.minimum[cols] - half}, {}, {"offset": summary.maximum[cols] + half}]
    return [{**defaults, **variant} for variant in variants]


def change_options(node, summary, locations=None):
    """Start values of a change operator's own hyperparameters, the most useful first.

    The location at each hinted point (see :func:`change_locations`), then at
    the middle and the quartiles of the column's range (those within a tenth of
    the range of an earlier one are dropped); the width (and the window's
    duration) at their defaults.
    """
    defaults = change_defaults(node.operator, node.column, summary)
    low, high = defaults["location"][1]
    candidates = list(locations or []) + [low + q * (high - low) for q in (0.5, 0.25, 0.75)]
    chosen = []
    for location in candidates:
        if low <= location <= high and all(abs(location - other) > 0.1 * (high - low) for other in chosen):
            chosen.append(float(location))
    base = {name: value for name, (value, _) in defaults.items()}
    return [{**base, "location": location} for location in chosen]


def change_locations(x, residuals, n_locations=2, min_segment=5):
    """Points of a column where a sequence of residuals changes most in level or in scale.

    For every split of the residuals ordered by ``x`` into a left and a right
    segment (each with at least ``min_segment`` points), the log-likelihood
    ratio of two Gaussian segments against one,
    n log σ² − k log σ_L² − (n − k) log σ_R² (maximum-likelihood variances
    about each segment's mean): a jump in level raises both segments' fit, a
    change of scale (a calm period, a volatile one) the variances'. The best
    splits, a tenth of the range apart, are returned as the midpoints
    between neighbouring inputs.
    """
    x = np.asarray(x, dtype=float)
    r = np.asarray(residuals, dtype=float)
    n = x.size
    if n < 2 * min_segment + 1:
        return []
    order = np.argsort(x, kind="stable")
    x, r = x[order], r[order]
    k = np.arange(1, n)
    s1, s2 = np.cumsum(r)[:-1], np.cumsum(r * r)[:-1]
    total1, total2 = s1[-1] + r[-1], s2[-1] + r[-1] ** 2
    tiny = 1e-12 * (total2 / n + 1e-300)
    var_left = np.maximum(s2 / k - (s1 / k) ** 2, tiny)
    var_right = np.maximum((total2 - s2) / (n - k) - ((total1 - s1) / (n - k)) ** 2, tiny)
    var_all = max(total2 / n - (total1 / n) ** 2, tiny)
    gain = n * math.log(var_all) - k * np.log(var_left) - (n - k) * np.log(var_right)
    valid = (k >= min_segment) & (n - k >= min_segment) & (x[1:] > x[:-1])
    span = x[-1] - x[0]
    chosen = []
    for i in np.argsort(-np.where(valid, gain, -np.inf)):
        if not valid[i] or len(chosen) == n_locations:
            break
        location = 0.5 * (x[i] + x[i + 1])
        if all(abs(location - other) > 0.1 * span for other in chosen):
            chosen.append(float(location))
    return chosen


def _assign_changes(expr, chosen):
    """``expr`` with the change nodes at the given preorder positions carrying the given params."""
    counter = iter(range(len(expr.changes)))

    def visit(node):
        if not node.operands:
            return node
        index = next(counter) if isinstance(node, Change) else None
        operands = [visit(op) for op in node.operands]
        if isinstance(node, Change):
            params = chosen.get(index, node.params)
            return Change(node.operator, node.column, *operands, params)
        return node._rebuild(operands)

    return visit(expr)


def _with_change_starts(pool, summary, hints):
    """Every start with its new change operators at their first option; the first start of
    each kind also with each other option of one operator at a time."""
    out = []
    seen_kinds = set()
    for start in pool:
        changes = start.expr.changes
        positions = [i for i, node in enumerate(changes) if not node.params]
        if not positions:
            out.append(start)
            continue
        options = {i: change_options(changes[i], summary, hints.changes.get(changes[i].column)) for i in positions}
        first = {i: opts[0] for i, opts in options.items()}
        out.append(Start(_assign_changes(start.expr, first), start.kind, start.noise_factor, start.priority))
        if start.kind in seen_kinds or start.noise_factor != 1.0 and start.kind == "cold":
            continue
        seen_kinds.add(start.kind)
        for i, opts in options.items():
            for option in opts[1:]:
                out.append(Start(_assign_changes(start.expr, {**first, i: option}), start.kind, start.noise_factor))
    return out


def _new_leaf_positions(expr):
    """Positions (in ``expr.leaves``) of base kernels without values; all of them without a parent."""
    leaves = expr.leaves
    if not expr.has_values:
        return list(range(len(leaves)))
    return [i for i, leaf in enumerate(leaves) if not leaf.params]


def _assign(expr, positions, values):
    """``expr`` with the leaves at ``positions`` carrying ``values`` (a dict each), others unchanged."""
    chosen = dict(zip(positions, values))
    counter = iter(range(len(expr.leaves)))

    def set_values(leaf):
        i = next(counter)
        return leaf.with_params(chosen[i]) if i in chosen else leaf

    return expr.map_leaves(set_values)


def _with_new_terms_scaled(expr, new_terms, share, residual_variance, summary):
    """The structure with every new additive term's amplitude at ``share`` × the residual variance."""
    terms = list(expr.terms())
    # new leaves carry the default amplitude, which is the target variance (see default_hyperparameters)
    factor = share * residual_variance / summary.target_variance
    for i in new_terms:
        terms[i] = _scale(terms[i], factor)
    return type(expr)._make(terms) if len(terms) > 1 else terms[0]


def start_pool(expr, summary, hints=None, cold=True):
    """The pool of starting structures of one candidate (see the module docstring).

    Parameters
    ----------
    expr : Expr
        The candidate; base kernels shared with a fitted parent carry its
        values, new ones carry none.
    summary : DataSummary
    hints : StartHints, optional
    cold : bool, default=True
        Whether the pool has its cold starts. The prescreens score the
        starts next to the parent's optimum only, and need not build the
        cold ones (every option of every kernel, a structure each) to drop
        them (a classifier's prescreen also turned each into a parameter
        vector; on 1000 rows x 35 columns no change of the fit's time was
        measurable).

    Returns
    -------
    list of Start
        The nested start first (if any), then warm, then cold variants.
    """
    hints = hints or StartHints()
    leaves = expr.leaves
    positions = _new_leaf_positions(expr)
    assignments = _one_at_a_time([_options(leaves[i], summary, hints) for i in positions])
    pool = []
    if expr.has_values and not positions:
        # every kernel carries fitted values (a refit on other rows, a child that dropped a term):
        # they are the natural warm start
        pool.append(Start(expr, "warm", 1.0))
    if expr.has_values and positions:
        terms = expr.terms()
        new_terms = [i for i, term in enumerate(terms) if not any(leaf.params for leaf in term.leaves)]
        if len(new_terms) == len(terms):
            new_terms = []
        residual = hints.residual_variance or summary.target_variance
        for n_assignment, assignment in enumerate(assignments):
            warm = _assign(expr, positions, assignment)
            if not new_terms:
                pool.append(Start(warm, "warm", 1.0))
                continue
            if n_assignment == 0:
                pool.append(Start(_with_new_terms_scaled(warm, new_terms, NESTED_SHARE, residual, summary), "nested", 1.0))
            for share in TAKE_OVER_SHARES:
                scaled = _with_new_terms_scaled(warm, new_terms, share, residual, summary)
                pool.append(Start(scaled, "warm", 1.0 - share))
    if not cold:
        return _with_change_starts(pool, summary, hints) if expr.changes else pool
    # cold starts vary every kernel, the parent's too (a parent's periodic kernel may sit at a
    # period that only suited the parent)
    cold_expr = expr.without_values()
    every = list(range(len(leaves)))
    cold_options = [_options(leaf, summary, hints, _rank(leaves, i)) for i, leaf in enumerate(leaves)]
    # the top candidate periods of each periodic kernel are optimised whatever their start value:
    # the other kernels' defaults can make the right period look bad before optimisation
    top_periods = {
        i: [option["period"] for option in opts[:PRIORITY_PERIODS]]
        for i, (leaf, opts) in enumerate(zip(leaves, cold_options)) if leaf.kind.periodic and hints.periods
    }
    for assignment in _one_at_a_time(cold_options):
        expr_start = _assign(cold_expr, every, assignment)
        for noise_factor in COLD_NOISE_FACTORS:
            priority = noise_factor == COLD_NOISE_FACTORS[0] and any(
                assignment[i]["period"] in periods and all(
                    assignment[j] is cold_options[j][0] for j in every if j != i
                )
                for i, periods in top_periods.items()
            )
            pool.append(Start(expr_start, "cold", noise_factor, priority))
    widened = _products_widened(_assign(cold_expr, every, [options[0] for options in cold_options]))
    if widened is not None:
        pool.append(Start(widened, "cold", 1.0))
    return _with_change_starts(pool, summary, hints) if expr.changes else pool


def _products_widened(expr):
    """``expr`` with each product of m >= WIDENED_PRODUCT_FACTORS distance-based kernels on different columns
    starting at √m times its lengthscales; None if it has no such product.

    Each factor's default lengthscale is its column's spread, at which two typical points correlate at about
    e^-1 in that column; a product of m such factors correlates them at about e^-m, so on many columns every
    default start is white noise, a flat evidence: the classifier's ARD baseline on 1000 rows x 35 columns
    climbed from there for over 200 evaluations, and on 300 rows x 30 columns it never left. Widened, the
    product correlates them as one factor does.
    """
    terms = list(expr.terms())
    widened = False
    for t, term in enumerate(terms):
        if not isinstance(term, Product):
            continue
        distance = [op for op in term.operands if isinstance(op, Base) and op.kind.distance_based]
        if len({leaf.columns for leaf in distance}) < WIDENED_PRODUCT_FACTORS:
            continue
        factor = math.sqrt(len(distance))

        def widen(leaf, factor=factor):
            if not leaf.kind.distance_based:
                return leaf
            scaled = factor * np.asarray(leaf.params["lengthscale"], dtype=float)
            scaled = float(scaled) if scaled.ndim == 0 else tuple(scaled.tolist())
            return leaf.with_params({**leaf.params, "lengthscale": scaled})

        terms[t] = term._rebuild([widen(op) if isinstance(op, Base) else op for op in term.operands])
        widened = True
    if not widened:
        return None
    return type(expr)._make(terms) if len(terms) > 1 else terms[0]


def _rank(leaves, i):
    """How many base kernels of the same kind and columns come before leaf ``i``."""
    return sum(leaf.name == leaves[i].name and leaf.columns == leaves[i].columns for leaf in leaves[:i])


def _options(leaf, summary, hints, rank=0):
    """The leaf's options; the k-th kernel of a kind on a column starts at the k-th period."""
    periods = hints.periods.get(leaf.columns[0]) if leaf.columns else None
    if periods and rank:
        periods = list(periods[rank % len(periods):]) + list(periods[:rank % len(periods)])
    return leaf_options(leaf, summary, periods)


def _one_at_a_time(options):
    """Assignments of one option per kernel: all first options, then each other option of one kernel."""
    assignments = [[opts[0] for opts in options]]
    for j, opts in enumerate(options):
        for option in opts[1:]:
            assignment = [opts_k[0] for opts_k in options]
            assignment[j] = option
            assignments.append(assignment)
    return assignments


def select_starts(pool, values, n_warm=2, n_cold=2):
    """Indices of the pool starts worth optimising: the nested start, the best warm and cold ones,
    and the priority starts (top candidate periods).

    ``values`` are the objective at each start (``-inf`` where it failed).
    Without a parent (no warm start) the ``n_warm + n_cold`` best cold
    starts are kept.
    """
    values = np.asarray(values, dtype=float)
    chosen = [i for i, start in enumerate(pool) if start.kind == "nested"]
    warm = [i for i, start in enumerate(pool) if start.kind == "warm" and np.isfinite(values[i])]
    cold = [i for i, start in enumerate(pool) if start.kind == "cold" and np.isfinite(values[i])]
    if not warm:
        n_cold += n_warm
    for group, count in ((warm, n_warm), (cold, n_cold)):
        group.sort(key=lambda i: -values[i])
        chosen += group[:count]
    chosen += [i for i in cold if pool[i].priority and i not in chosen]
    return chosen


def profile_starts(objective, thetas, deadline=None):
    """Each start as it is and rescaled to its best overall amplitude, with the objective at both.

    See :meth:`RegressionObjective.profile_amplitude`: one Cholesky per start,
    as :func:`evaluate_starts` (and, as there, past a wall-clock ``deadline``
    the starts after the first are not evaluated: ``-inf``). The rescaled start is compared by the shape of
    its covariance rather than by how well its amplitudes happen to match the
    data, and the optimiser starts it without a large initial scale gradient
    (whose first steps can throw a start out of its basin).

    Returns
    -------
    values, profiled_values : list of float
        ``-inf`` where a start is not positive definite.
    profiled_thetas : list of ndarray
        The rescaled starts (a failed start unchanged).
    """
    values, profiled_values, profiled_thetas = [], [], []
    for theta in thetas:
        theta = np.clip(theta, objective.bounds[:, 0], objective.bounds[:, 1])
        if values and deadline_passed(deadline):
            values.append(-math.inf)
            profiled_values.append(-math.inf)
            profiled_thetas.append(theta)
            continue
        try:
            scaled, scaled_value, value = objective.profile_amplitude(theta)
        except NumericalError:
            scaled, scaled_value, value = theta, -math.inf, -math.inf
        values.append(float(value) if np.isfinite(value) else -math.inf)
        profiled_values.append(float(scaled_value) if np.isfinite(scaled_value) else -math.inf)
        profiled_thetas.append(scaled)
    return values, profiled_values, profiled_thetas


def select_raw_and_profiled(pool, thetas, values, profiled_thetas, profiled_values, n_per_ranking=1):
    """Starting points to optimise, chosen by two rankings of the pool.

    The start values themselves favour starts whose amplitudes already fit
    (e.g. a nearly noise-free short-lengthscale start that interpolates a
    cycle); the amplitude-profiled values favour starts whose covariance
    shape fits. Each ranking contributes its nested start (raw ranking
    only: it must stay next to the parent's optimum), its ``n_per_ranking``
    best warm and cold starts (twice that many cold ones without a parent),
    and the priority starts, see :func:`select_starts` -- the cold starts at
    the top candidate periods both as they are and rescaled: which of the two
    reaches the periodic basin differs between data sets (measured in
    ``benchmarks/fit_quality.py``, each alone misses pairs the other finds).
    """
    chosen = [(i, thetas[i]) for i in select_starts(pool, values, n_per_ranking, n_per_ranking)]
    chosen += [(i, profiled_thetas[i]) for i in select_starts(pool, profiled_values, n_per_ranking, n_per_ranking)
               if pool[i].kind != "nested"]
    starts = []
    for i, theta in chosen:
        if not any(np.allclose(theta, other, rtol=0.0, atol=1e-6) for other in starts):
            starts.append(theta)
    return starts


def explore_starts(pool, thetas, values, profiled_thetas, profiled_values):
    """The explore effort's starts: the nested start, and the best of the pool by each ranking (at most three).

    The nested start keeps a child next to its parent's optimum; the best raw
    and best rescaled starts of any kind stand for the rest of the pool.
    """
    chosen = [(i, thetas[i]) for i, start in enumerate(pool) if start.kind == "nested"]
    for ranking, points in ((values, thetas), (profiled_values, profiled_thetas)):
        finite = [i for i in range(len(pool)) if np.isfinite(ranking[i])]
        if finite:
            best = max(finite, key=lambda i: ranking[i])
            chosen.append((best, points[best]))
    starts = []
    for _, theta in chosen:
        if not any(np.allclose(theta, other, rtol=0.0, atol=1e-6) for other in starts):
            starts.append(theta)
    return starts


def evaluate_starts(objective, thetas, deadline=None):
    """The objective at each start (one Cholesky each); ``-inf`` where it is not positive definite, and for the
    starts after the first once a wall-clock ``deadline`` (:func:`~skgpsearch._engine._optimizer.deadline_passed`)
    has passed: on a classifier's 1500 rows each costs a second or more, and a pool of them had run a
    time-budgeted fit 9 s past its deadline."""
    values = []
    for theta in thetas:
        if values and deadline_passed(deadline):
            values.append(-math.inf)
            continue
        theta = np.clip(theta, objective.bounds[:, 0], objective.bounds[:, 1])
        try:
            value = float(objective(theta))
        except NumericalError:
            value = -math.inf
        values.append(value if np.isfinite(value) else -math.inf)
    return values
