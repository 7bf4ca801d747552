"""What a time budget keeps back for the finalists stage, against what that stage takes; and budgets swept.

A time budget stops the explore stage early enough to fit the finalists (``SearchPipeline._reserve``). This
script fits the defaults with an unbounded budget (so that the reserve is computed but never binds) on small
synthetic problems -- tables, a covariate, a series, classifiers -- and prints, per problem, the reserve
predicted when the explore stage ended, the seconds the finalists and select stages took, and their ratio
(above 1: the reserve is on the safe side; far above: a budget cuts searches short). ``--sweep`` then fits
two of the problems under a few budgets and prints the seconds used and the candidates fitted.

Run:  python benchmarks/budget_reserve.py [--n-jobs 1] [--sweep]
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor
from skgpsearch._search import _pipeline


def problems():
    """(name, estimator class, X, y) of the measured problems."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, (100, 2))
    yield "table 100 x 2", CompositionalGPRegressor, X, np.sin(2 * X[:, 0]) * X[:, 1] + 0.1 * rng.normal(size=100)
    X = rng.uniform(0, 5, (80, 3))
    yield "table 80 x 3", CompositionalGPRegressor, X, np.sin(X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=80)
    X = rng.uniform(0, 5, (250, 4))
    yield ("table 250 x 4", CompositionalGPRegressor, X,
           np.sin(X[:, 0]) * X[:, 1] + np.cos(X[:, 2]) + 0.1 * rng.normal(size=250))
    X = rng.uniform(0, 5, (400, 8))
    yield ("table 400 x 8", CompositionalGPRegressor, X,
           np.sin(X[:, 0]) * X[:, 1] + np.cos(X[:, 2]) + 0.3 * X[:, 3] + 0.1 * rng.normal(size=400))
    X, y = load_diabetes(return_X_y=True)
    yield "diabetes 442 x 10", CompositionalGPRegressor, X, y
    X = rng.uniform(0, 10, (150, 1))
    yield "covariate 150", CompositionalGPRegressor, X, np.sin(X[:, 0]) + 0.3 * X[:, 0] + 0.2 * rng.normal(size=150)
    X = np.arange(120.0)[:, None]
    yield ("series 120", CompositionalGPRegressor, X,
           np.sin(2 * np.pi * X[:, 0] / 12) + 0.02 * X[:, 0] + 0.2 * rng.normal(size=120))
    X = rng.normal(size=(200, 4))
    yield "classes 200 x 4", CompositionalGPClassifier, X, (X[:, 0] + X[:, 1] ** 2 + 0.5 * rng.normal(size=200) > 1)
    X = rng.normal(size=(150, 3))
    yield "3 classes 150 x 3", CompositionalGPClassifier, X, np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])


def instrument():
    """Record each reserve the search computes and when the finalists stage starts (returns the record)."""
    seen = {"reserves": [], "finalists": None}
    reserve, finalists = _pipeline.SearchPipeline._reserve, _pipeline.SearchPipeline.finalists

    def recording_reserve(self, model_fitter, grammar):
        function = reserve(self, model_fitter, grammar)
        if function is None:
            return None

        def recorded(seconds_for, largest):
            value = function(seconds_for, largest)
            seen["reserves"].append((time.perf_counter(), value))
            return value
        return recorded

    def recording_finalists(self, *args, **kwargs):
        seen["finalists"] = time.perf_counter()
        return finalists(self, *args, **kwargs)

    _pipeline.SearchPipeline._reserve = recording_reserve
    _pipeline.SearchPipeline.finalists = recording_finalists
    return seen


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    seen = instrument()
    print("| problem | whole fit s | explore s | finalists + select s | reserve predicted s | reserve / taken |")
    print("|---|---|---|---|---|---|")
    for name, estimator, X, y in problems():
        seen["reserves"].clear()
        seen["finalists"] = None
        start = time.perf_counter()
        # (a budget that never binds: the reserve is computed, the search runs as without one)
        estimator(time_budget=1e6, n_jobs=args.n_jobs, random_state=0).fit(X, y)
        end = time.perf_counter()
        split = seen["finalists"] or end
        before = [value for moment, value in seen["reserves"] if moment <= split]
        predicted = before[-1] if before else float("nan")
        taken = end - split
        print(f"| {name} | {end - start:.2f} | {split - start:.2f} | {taken:.2f} | {predicted:.2f} | "
              f"{predicted / taken if taken > 0 else float('nan'):.1f} |", flush=True)
    if not args.sweep:
        return
    print("\n| problem | time_budget s | seconds used | records | stop reason |")
    print("|---|---|---|---|---|")
    chosen = {name: (estimator, X, y) for name, estimator, X, y in problems()}
    for name, budgets in (("table 100 x 2", (None, 1, 2, 5)), ("table 400 x 8", (None, 5, 10, 20))):
        estimator, X, y = chosen[name]
        for budget in budgets:
            start = time.perf_counter()
            model = estimator(time_budget=budget, n_jobs=args.n_jobs, random_state=0).fit(X, y)
            reason = model.search_stop_reason_
            print(f"| {name} | {budget} | {time.perf_counter() - start:.2f} | "
                  f"{len(model.search_results_['structure'])} | {reason if isinstance(reason, str) else reason[0]} |",
                  flush=True)


if __name__ == "__main__":
    main()
