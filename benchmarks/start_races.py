"""Could a candidate's later starts stop early? Rules replayed on every optimisation run of real searches.

A candidate fitted with full effort (a series under 300 rows, the finalists' refits) runs every start
of its pool to convergence on all rows, one after the other, and keeps the best; the "screened"
effort runs the best one or two screened starts so. Issue 30 asks for early rejection of partial
optimisations that trail the incumbent. This script fits the default regressor on each series given
(``benchmarks/extrapolation.py``'s split, ``n_jobs=1`` so that every fit runs in this process),
records the objective value of every evaluation of every L-BFGS-B run and which call of
``optimize_hyperparameters`` it belonged to, and replays three rules on the records afterwards:

- "trail W M": a start after the first stops once it has made W evaluations and its best value still
  trails the best value of the starts before it by more than M nats;
- "paced W M": the same, against the leading start's best value at the same evaluation count;
- "halving E k": every start runs E evaluations, the k best by then go on to convergence.

For each rule: the share of the full-row evaluations it saves, and in how many calls the value the
call returns ends more than 0.5 / 2 nats lower than without the rule (a call is one candidate's
fit). Whether a loss matters depends on the candidate; the search-level checks are
``benchmarks/search_vs_loop.py --skip-loop --max-n 150`` (and 200) and ``benchmarks/short_series.py``. The
defaults race the explore stage's full-effort fits by "trail 50 30" (``_pipeline.EXPLORE_START_RACE``); the
records here are of every call, the finalists' full-effort refits (which keep every start) included.

Run:  python benchmarks/start_races.py [--series airline call-centre radio solar births]
"""

import argparse
import time
import warnings

import numpy as np

from extrapolation import load
from skgpsearch import CompositionalGPRegressor
from skgpsearch._engine import _optimizer
from skgpsearch._search import _candidate_fitter, _exact_fitter, _laplace_fitter, _pipeline

TRAIL_RULES = [(10, 10), (20, 10), (20, 20), (30, 10), (30, 20), (40, 20), (50, 20), (50, 30)]
PACED_RULES = [(10, 10), (20, 10), (20, 20), (30, 20)]
HALVING_RULES = [(15, 2), (15, 4), (30, 2), (30, 3), (30, 4), (50, 2), (50, 3)]


class _LoggedObjective:
    """An objective that appends every value it returns to ``values``."""

    def __init__(self, objective, values):
        self._objective, self._values = objective, values

    def __getattr__(self, name):
        return getattr(self._objective, name)

    def __call__(self, theta, eval_gradient=False):
        out = self._objective(theta, eval_gradient)
        value = out[0] if eval_gradient else out
        self._values.append(float(value) if np.isfinite(value) else -1e30)
        return out


def capture_runs(calls):
    """Patch the optimiser so that every call of ``optimize_hyperparameters`` appends {"screened",
    "short_screen", "rows", "runs": [{"values", "final"} of each run on the call's objective]} to ``calls``,
    every run to its end (the defaults' race of starts is switched off); returns a function that undoes it."""
    original_run, original_call = _optimizer._lbfgsb, _optimizer.optimize_hyperparameters
    original_race = _pipeline.EXPLORE_START_RACE
    current = {}

    def run(objective, theta0, maxiter, failures, ftol=None, deadline=None, stall=None):
        values = []
        theta, value = original_run(_LoggedObjective(objective, values), theta0, maxiter, failures, ftol, deadline,
                                    stall)
        if current.get("objective") is objective:
            current["runs"].append({"values": values, "final": float(value) if np.isfinite(value) else None})
        return theta, value

    def call(objective, starts, *args, **kwargs):
        current.update(objective=objective, runs=[])
        try:
            return original_call(objective, starts, *args, **kwargs)
        finally:
            # (a screen of a few iterations on the objective itself, the explore effort's, is not told apart from
            # the runs after it: such calls are left out of every table)
            short_screen = kwargs.get("screen_maxiter") is not None and kwargs.get("screen_objective") is None
            calls.append({"screened": kwargs.get("screen_objective") is not None, "short_screen": short_screen,
                          "rows": int(getattr(objective, "n", 0)), "runs": current["runs"]})
            current.clear()

    modules = (_candidate_fitter, _exact_fitter, _laplace_fitter)
    _optimizer._lbfgsb, _optimizer.optimize_hyperparameters = run, call
    _pipeline.EXPLORE_START_RACE = None
    for module in modules:
        module.optimize_hyperparameters = call

    def restore():
        _optimizer._lbfgsb, _optimizer.optimize_hyperparameters = original_run, original_call
        _pipeline.EXPLORE_START_RACE = original_race
        for module in modules:
            module.optimize_hyperparameters = original_call

    return restore


def _runs(call):
    """The call's completed runs on all its rows as (best-so-far values, final value)."""
    return [(np.maximum.accumulate(np.asarray(r["values"])), r["final"]) for r in call["runs"]
            if r["final"] is not None and r["values"]]


def replay_trail(runs, window, nats, paced=False):
    """(evaluations saved, the call's loss in nats) of the "trail" (or "paced") rule on one call's runs."""
    saved, incumbent, leader = 0, -np.inf, None
    for values, final in runs:
        stop = None
        if leader is not None:
            if paced:
                reference = np.concatenate([leader, np.full(max(0, values.size - leader.size), leader[-1])])
                reference = reference[: values.size]
            else:
                reference = np.full(values.size, incumbent)
            behind = np.nonzero((np.arange(values.size) >= window) & (values < reference - nats))[0]
            stop = behind[0] + 1 if behind.size else None
        if stop is not None and stop < values.size:
            saved += values.size - stop
            incumbent = max(incumbent, values[stop - 1])
        else:
            if final > incumbent:
                leader = values
            incumbent = max(incumbent, final)
    return saved, max(final for _, final in runs) - incumbent


def replay_halving(runs, evaluations, keep):
    """(evaluations saved, the call's loss in nats) of the "halving" rule on one call's runs."""
    if len(runs) <= keep:
        return 0, 0.0
    early = [values[min(evaluations, values.size) - 1] for values, _ in runs]
    kept = set(np.argsort(early)[::-1][:keep].tolist())
    saved = sum(max(0, values.size - evaluations) for i, (values, _) in enumerate(runs) if i not in kept)
    return saved, max(final for _, final in runs) - max(runs[i][1] for i in kept)


def rule_table(calls, title):
    """Print one table: every rule's savings and losses over ``calls``."""
    runs_of = [_runs(call) for call in calls]
    runs_of = [runs for runs in runs_of if len(runs) >= 2]
    total = sum(values.size for runs in runs_of for values, _ in runs)
    print(f"\n{title}: {len(runs_of)} calls with two or more runs, {total} evaluations in them\n")
    print("| rule | evaluations saved | calls losing > 0.5 nats | > 2 nats | largest loss |")
    print("|---|---|---|---|---|")
    rules = ([(f"trail {w} {m}", lambda runs, w=w, m=m: replay_trail(runs, w, m)) for w, m in TRAIL_RULES]
             + [(f"paced {w} {m}", lambda runs, w=w, m=m: replay_trail(runs, w, m, paced=True)) for w, m in PACED_RULES]
             + [(f"halving {e} {k}", lambda runs, e=e, k=k: replay_halving(runs, e, k)) for e, k in HALVING_RULES])
    for name, rule in rules:
        outcomes = np.array([rule(runs) for runs in runs_of]).reshape(-1, 2)
        losses = outcomes[:, 1]
        print(f"| {name} | {outcomes[:, 0].sum() / max(total, 1):.0%} | {(losses > 0.5).sum()} | "
              f"{(losses > 2).sum()} | {losses.max(initial=0.0):.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=["airline", "call-centre", "radio", "solar", "births"])
    args = parser.parse_args()
    calls = []
    restore = capture_runs(calls)
    try:
        for name in args.series:
            X, y = load(name, "train")
            start, before = time.time(), len(calls)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = CompositionalGPRegressor(random_state=0, n_jobs=1).fit(X, y)
            print(f"{name} ({X.shape[0]} rows): {model.structure_} in {time.time() - start:.1f} s, "
                  f"{len(calls) - before} optimiser calls")
    finally:
        restore()
    unscreened = [c for c in calls if not c["screened"] and not c["short_screen"]]
    rule_table(unscreened, "Calls that run every start to convergence")
    rule_table([c for c in unscreened if c["rows"] >= 300],
               "... of them on 300 rows or more (a long series' finalists)")
    rule_table([c for c in calls if c["screened"]],
               "Calls that screen on runs of the series (the best one or two screened starts)")


if __name__ == "__main__":
    main()
