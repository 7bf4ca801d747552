"""Our defaults against one ARD kernel and a RandomForest on data the defaults were not tuned on.

The datasets of ``benchmarks/tabular.py`` chose the defaults; these did not (until they were
first run, 2026-11-28: engel then led to WN in the one-column regression default, see the
regression guide). They come with scikit-learn and statsmodels (``pip install ".[bench]"``):

- classification: ``iris`` (150 x 4, 3 classes), ``anes96`` (944 x 9, the 1996 US presidential
  vote from party identification, ideology scores, age, education, income; raw population dropped
  for its log);
- regression: ``star98`` (303 x 20, the share of a California school district's pupils above the
  national median maths score), ``engel`` (235 x 1, food expenditure against income; the noise
  grows with income), ``grunfeld`` (220 x 4, log investment of 10 US firms from log value, log
  capital, firm and year), ``macrodata`` (203 x 11, log real investment from the other US
  quarterly series).

Each method runs on the same 5 shuffled folds (stratified for classes), the GPs behind a
``StandardScaler``; ours with defaults and ``n_jobs=2``, scikit-learn's GP with one ARD RBF kernel
(plus ``WhiteKernel`` for regression, ``n_restarts_optimizer=2``), RandomForest with 500 trees.
Printed: classification error %, regression SMSE and MSLL (mean over folds), seconds per fold.

Run:  python benchmarks/unseen.py [--datasets iris engel] [--n-jobs 2]
"""

import argparse
import time
import warnings

import numpy as np
from scipy import stats
from sklearn.datasets import load_iris
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor
from tabular import _regression_scores, run_baseline

DATASETS = ["iris", "anes96", "star98", "engel", "grunfeld", "macrodata"]
METHODS = ["ours: default", "sklearn GP ARD", "RandomForest"]
N_FOLDS = 5


def load(name):
    """(X, y, task) of a dataset."""
    if name == "iris":
        X, y = load_iris(return_X_y=True)
        return X, y.astype(str), "classification"
    try:
        from statsmodels import datasets
    except ImportError:
        raise SystemExit(f"{name} comes with statsmodels: pip install '.[bench]'") from None
    frame = getattr(datasets, name).load_pandas().data.copy()
    if name == "anes96":
        y = frame.pop("vote").astype(int).astype(str).to_numpy()
        return frame.drop(columns=["popul"]).to_numpy(float), y, "classification"
    if name == "star98":
        y = frame["NABOVE"] / (frame["NABOVE"] + frame["NBELOW"])
        return frame.drop(columns=["NABOVE", "NBELOW"]).to_numpy(float), y.to_numpy(float), "regression"
    if name == "engel":
        return frame[["income"]].to_numpy(float), frame["foodexp"].to_numpy(float), "regression"
    if name == "grunfeld":
        y = np.log(frame.pop("invest").astype(float) + 1.0)
        frame["firm"] = frame["firm"].astype("category").cat.codes
        frame["value"] = np.log(frame["value"].astype(float))
        frame["capital"] = np.log(frame["capital"].astype(float) + 1.0)
        return frame.to_numpy(float), y.to_numpy(float), "regression"
    if name == "macrodata":
        y = np.log(frame.pop("realinv"))
        return frame.drop(columns=["year", "quarter"]).to_numpy(float), y.to_numpy(float), "regression"
    raise ValueError(f"Unknown dataset {name!r}; use one of {', '.join(DATASETS)}.")


def run_ours(task, X_train, y_train, X_test, y_test, n_jobs, **params):
    """Our estimator with defaults (and ``params``) behind a StandardScaler: its scores, seconds and structure."""
    estimator = (CompositionalGPClassifier if task == "classification" else CompositionalGPRegressor)(
        random_state=0, n_jobs=n_jobs, **params)
    model = make_pipeline(StandardScaler(), estimator)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    structure = estimator.structure_
    text = " | ".join(map(str, structure)) if isinstance(structure, list) else str(structure)
    out = {"seconds": time.perf_counter() - start, "structure": text}
    if task == "classification":
        out["error"] = float(np.mean(model.predict(X_test) != y_test))
    else:
        mean, std = model.predict(X_test, return_std=True)
        out.update(_regression_scores(mean, stats.norm.logpdf(y_test, mean, std), y_train, y_test))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=DATASETS, choices=DATASETS)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for name in args.datasets:
        X, y, task = load(name)
        splitter = (StratifiedKFold if task == "classification" else KFold)(N_FOLDS, shuffle=True, random_state=0)
        results = {method: [] for method in METHODS}
        for fold, (train, test) in enumerate(splitter.split(X, y)):
            parts = (task, X[train], y[train], X[test], y[test], args.n_jobs)
            results["ours: default"].append(run_ours(*parts))
            for method in METHODS[1:]:
                results[method].append(run_baseline(method, *parts))
            print(f"{name} fold {fold}: ours {results['ours: default'][-1]['structure']}", flush=True)
        keys = ["error"] if task == "classification" else ["smse", "msll"]
        for method in METHODS:
            cells = []
            for key in keys:
                values = [r[key] for r in results[method] if r.get(key) is not None]
                scale = 100.0 if key == "error" else 1.0
                cells.append(f"{scale * np.mean(values):.4g}" if values else "—")
            seconds = np.mean([r["seconds"] for r in results[method]])
            rows.append((f"{name} ({X.shape[0]} x {X.shape[1]})", method, " / ".join(cells), f"{seconds:.1f}"))
    print("\n| data | method | error % (classes) or SMSE / MSLL | seconds a fold |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
