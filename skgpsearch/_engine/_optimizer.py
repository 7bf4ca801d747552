"""Hyperparameter optimisation shared by every engine: L-BFGS-B from several starts, random starts.

Objectives are callables ``objective(theta, eval_gradient=False)`` returning
the value to maximise (and its gradient), with ``bounds`` (an (p, 2) array of
log-space bounds) and ``n_evaluations``; a singular point raises
:class:`~skgpsearch._engine._linalg.NumericalError`.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from ._linalg import NumericalError

__all__ = ["FTOL", "SCREEN_FTOL", "PriorObjective", "StartRace", "StallRule", "amplitude_indices", "deadline_passed",
           "optimize_hyperparameters", "random_starts"]

#: L-BFGS-B stops when the relative change of the objective falls below this
#: (1e-9 of a log likelihood of a few hundred nats is ~1e-7 nats).
FTOL = 2.2e-9
#: Tolerance of the screening runs of multi-fidelity restarts (they only rank starts).
SCREEN_FTOL = 1e-6


class _DeadlineReached(Exception):
    """Raised inside an L-BFGS-B run when its deadline has passed (caught by :func:`_lbfgsb`)."""


class _Stalled(Exception):
    """Raised inside an L-BFGS-B run whose last evaluations gained too little (caught by :func:`_lbfgsb`)."""


@dataclass(frozen=True)
class StallRule:
    """Stop an optimisation whose best value rose by less than ``nats`` over its last ``window`` evaluations.

    L-BFGS-B's own test is relative and per iteration: on a model with dozens
    of hyperparameters and a flat ridge it goes on for many evaluations that
    each gain a few hundred-thousandths of a nat, far below what changes a
    prediction or a model comparison.
    """

    window: int
    nats: float

    def stalled(self, history):
        return len(history) > self.window and history[-1] - history[-1 - self.window] < self.nats


@dataclass(frozen=True)
class StartRace:
    """Stop a later start's run that, after ``window`` evaluations, still trails the best start before it by more
    than ``nats`` (see :func:`optimize_hyperparameters`).

    A run that far behind that late seldom overtakes: a start that reaches another basin usually leads or
    follows within a few nats by then. The margin is wide because some runs crawl along a ridge and then gain
    tens of nats at once.
    """

    window: int
    nats: float

    def trailing(self, incumbent, stall=None):
        """A run's stop rule (as :class:`StallRule`'s ``stalled``) against ``incumbent``, the best value of the
        runs before it, and ``stall`` too if given."""
        return _Trailing(self.window, incumbent - self.nats, stall)


@dataclass
class _Trailing:
    window: int
    floor: float
    stall: StallRule | None = None
    #: Whether the race (not the stall rule) stopped the run.
    fired: bool = False

    def stalled(self, history):
        if len(history) > self.window and history[-1] < self.floor:
            self.fired = True
            return True
        return self.stall is not None and self.stall.stalled(history)


def deadline_passed(deadline):
    """Whether a wall-clock ``deadline`` (``time.time()`` seconds; None: none) has passed.

    Wall-clock time, unlike ``perf_counter``, means the same in every worker process of a machine."""
    return deadline is not None and time.time() > deadline


def _hyperparameter_names(kernel):
    names = []
    for hp in kernel.hyperparameters:
        if not hp.fixed:
            names += [hp.name] * hp.n_elements
    return names + ["noise_variance"]


def amplitude_indices(kernel):
    """Positions in ``kernel.theta`` of the amplitudes (variances) of the kernel's terms."""
    return [j for j, name in enumerate(_hyperparameter_names(kernel)[:-1]) if name.endswith("variance")]


def random_starts(kernel, theta0, bounds, n_starts, rng, with_noise=True):
    """Random starting points inside the bounds.

    Amplitudes and the noise variance are drawn log-uniformly within a factor
    of 10 of their initial value (their data-aware bounds are much wider than
    any useful start); every other hyperparameter log-uniformly (the LIN
    offset uniformly) over its whole bounds. Without ``with_noise``,
    ``theta0`` and ``bounds`` cover the kernel hyperparameters only.
    """
    names = _hyperparameter_names(kernel)
    if not with_noise:
        names = names[:-1]
    starts = []
    for _ in range(n_starts):
        theta = np.empty_like(theta0)
        for j, name in enumerate(names):
            low, high = bounds[j]
            if name.endswith("variance"):
                low, high = max(low, theta0[j] - math.log(10.0)), min(high, theta0[j] + math.log(10.0))
            theta[j] = rng.uniform(low, high)
        starts.append(theta)
    return starts


def optimize_hyperparameters(
    objective, starts, maxiter=200, screen_objective=None, n_refine=1, ftol=FTOL, screen_maxiter=None,
    refine_margin=np.inf, deadline=None, stall=None, race=None, race_stops=None,
):
    """Maximise the objective with L-BFGS-B in theta space from several starts.

    Multi-fidelity restarts (successive halving), when there are more than
    ``n_refine`` starts and either ``screen_objective`` or ``screen_maxiter``
    is given: every start is first optimised cheaply -- on
    ``screen_objective`` (the same model on a random subset of the data) to a
    loose tolerance, or on the objective itself for at most ``screen_maxiter``
    iterations -- the starts are ranked by the full objective at the point
    reached, and only the ``n_refine`` best are optimised to convergence on
    all the data, from where their screening run ended (the runners-up only
    if they are within ``refine_margin`` of the best). Otherwise every start
    is optimised on all the data.

    ``ftol`` is L-BFGS-B's relative tolerance of the full-data runs.

    ``deadline`` (wall-clock ``time.time()`` seconds, None: none) bounds the
    whole call: a run in progress when it passes stops at the best point it
    had evaluated, and the starts not begun are skipped -- except the first,
    which always evaluates at least its starting point, so that a call
    returns a point whenever one start is positive definite.

    ``stall`` (a :class:`StallRule`, None: none) ends each full-data run
    that stalls, at the best point it evaluated.

    ``race`` (a :class:`StartRace`, None: none), where every start runs to
    convergence (no screening): each start after the first stops, at the
    best point it evaluated, once it trails the best start before it as the
    race says. The starts' order then matters; a caller that splits them over
    workers must not race them. ``race_stops`` (a list, optional) receives
    the index of every start the race stopped.

    Returns
    -------
    best_theta, best_value : ndarray, float
        The optimum reached (``None, -inf`` if every start failed).
    failures : list of str
        Why starts failed.
    """
    failures = []
    starts = [np.clip(np.asarray(t, dtype=float), objective.bounds[:, 0], objective.bounds[:, 1]) for t in starts]
    screening = len(starts) > n_refine and (screen_objective is not None or screen_maxiter is not None)
    if screening:
        screened = []
        target = objective if screen_objective is None else screen_objective
        for theta0 in starts:
            if screened and deadline_passed(deadline):
                break
            # the screen only ranks the starts: a loose tolerance is enough
            theta, value = _lbfgsb(target, theta0, screen_maxiter or maxiter, failures, ftol=SCREEN_FTOL,
                                   deadline=deadline)
            if theta is None:
                continue
            if screen_objective is not None:
                try:
                    value = objective(theta)
                except NumericalError as exc:
                    failures.append(f"screened optimum not positive definite on all data: {exc}")
                    continue
            screened.append((value, theta))
        screened.sort(key=lambda item: -item[0])
        starts = [theta for value, theta in screened[:n_refine] if value >= screened[0][0] - refine_margin]
    best_theta, best_value = None, -np.inf
    for index, theta0 in enumerate(starts):
        if best_theta is not None and deadline_passed(deadline):
            break
        stop = stall
        if race is not None and not screening and best_theta is not None:
            stop = race.trailing(best_value, stall)
        theta, value = _lbfgsb(objective, theta0, maxiter, failures, ftol=ftol, deadline=deadline, stall=stop)
        if race_stops is not None and isinstance(stop, _Trailing) and stop.fired:
            race_stops.append(index)
        if theta is not None and value > best_value:
            best_theta, best_value = theta, value
    return best_theta, best_value, failures


def _lbfgsb(objective, theta0, maxiter, failures, ftol=None, deadline=None, stall=None):
    """One L-BFGS-B run; (None, -inf) and a recorded failure if the start is singular. Past ``deadline``
    or once ``stall`` says so (see :func:`optimize_hyperparameters`) the run stops at the best point it
    evaluated."""
    try:
        start_value = objective(theta0)
    except NumericalError as exc:
        failures.append(f"start not positive definite: {exc}")
        return None, -np.inf
    best = [float(start_value) if np.isfinite(start_value) else -np.inf, np.array(theta0, dtype=float)]
    history = [best[0]]

    def negative(theta):
        if deadline_passed(deadline):
            raise _DeadlineReached
        try:
            value, grad = objective(theta, eval_gradient=True)
        except NumericalError:
            # Steer the line search away from singular regions without aborting.
            return 1e25, np.zeros_like(theta)
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            return 1e25, np.zeros_like(theta)
        if value > best[0]:
            best[:] = [float(value), np.array(theta, dtype=float)]
        history.append(best[0])
        if stall is not None and stall.stalled(history):
            raise _Stalled
        return -value, -grad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            result = minimize(
                negative, theta0, jac=True, method="L-BFGS-B", bounds=objective.bounds,
                options={"maxiter": maxiter, "ftol": FTOL if ftol is None else ftol, "maxcor": 20},
            )
        except (_DeadlineReached, _Stalled):
            value, theta = best
            if not np.isfinite(value):
                failures.append("the time budget ended the optimisation before a positive-definite point")
                return None, -np.inf
            return theta, value
    value = -float(result.fun)
    if not value > -1e24:
        failures.append("the optimiser found no positive-definite point")
        return None, -np.inf
    return np.asarray(result.x, dtype=float), value


class PriorObjective:
    """An objective plus the log density of independent normal priors on its parameters (a MAP objective).

    ``objective(theta) + Σ_j log N(theta_j | means_j, sds_j)``, with its
    gradient; every other attribute (``bounds``, ``n_evaluations``, an
    engine's ``mode_start``) is the wrapped objective's.
    """

    def __init__(self, objective, means, sds):
        self.objective = objective
        self.means = np.asarray(means, dtype=float)
        self.sds = np.asarray(sds, dtype=float)
        self._log_normaliser = -float(np.sum(np.log(self.sds))) - 0.5 * self.means.size * math.log(2.0 * math.pi)

    def __getattr__(self, name):
        return getattr(self.objective, name)

    def __call__(self, theta, eval_gradient=False):
        theta = np.asarray(theta, dtype=float)
        z = (theta - self.means) / self.sds
        log_prior = self._log_normaliser - 0.5 * float(z @ z)
        if not eval_gradient:
            return self.objective(theta) + log_prior
        value, gradient = self.objective(theta, eval_gradient=True)
        return value + log_prior, gradient - z / self.sds
