"""One input column that is no series: forecasting its largest values against stacking, as select rules.

A function of one covariate (an income, a dose, a body-mass index) is interpolated, not extended. The
regressor's ``selection="auto"`` forecasts only a series (one column that looks like a time index,
``skgpsearch.kernels.looks_like_time_index``) and stacks the finalists of a covariate; this script
measures both rules on covariates, beside one ARD kernel and a RandomForest:

- engel (statsmodels): food expenditure from income, 235 households;
- diabetes (scikit-learn): disease progression from body-mass index, 442 patients;
- auto_mpg (shared datasets): mpg from weight, and from horsepower, 392 cars;
- synthetic: sin x + 0.3 x with noise growing along x, x uniform on [0, 10], 250 rows.

Each on the same 5 shuffled folds, the GPs behind a ``StandardScaler``; ours with defaults and
``n_jobs=2`` under ``selection="forecast"`` and ``"stacking"``. Printed: mean SMSE / MSLL and seconds
per fold. (mcycle, the one-column data of ``benchmarks/tabular.py``, has its own folds there.)

Run:  python benchmarks/one_covariate.py [--datasets engel diabetes_bmi] [--n-jobs 2]
"""


import numpy as np
from sklearn.model_selection import KFold

from skgpsearch.kernels import looks_like_time_index
import tabular
import unseen

DATASETS = ["engel", "diabetes_bmi", "mpg_weight", "mpg_horsepower", "synthetic"]
RULES = ["forecast", "stacking"]
BASELINES = ["sklearn GP ARD", "RandomForest"]
N_FOLDS = 5


def load(name):
    """(X with one column, y) of a dataset."""
    if name == "engel":
        X, y, _ = unseen.load("engel")
        return X, y
    if name == "diabetes_bmi":
        X, y, _ = tabular.load("diabetes")
        return X[:, [2]], y
    if name in ("mpg_weight", "mpg_horsepower"):
        X, y, _ = tabular.load("auto_mpg")
        return X[:, [3 if name == "mpg_weight" else 2]], y
    if name == "synthetic":
        rng = np.random.default_rng(1)
        x = rng.uniform(0, 10, 250)
        return x[:, np.newaxis], np.sin(x) + 0.3 * x + rng.normal(0, 0.1 + 0.05 * x)
    raise ValueError(f"Unknown dataset {name!r}; use one of {', '.join(DATASETS)}.")


def main():
    args = unseen.dataset_arguments(__doc__, DATASETS)
    rows = []
    for name in args.datasets:
        X, y = load(name)
        results = {method: [] for method in RULES + BASELINES}
        for fold, (train, test) in enumerate(KFold(N_FOLDS, shuffle=True, random_state=0).split(X)):
            parts = (X[train], y[train], X[test], y[test], args.n_jobs)
            for rule in RULES:
                results[rule].append(unseen.run_ours("regression", *parts, selection=rule))
            for method in BASELINES:
                results[method].append(tabular.run_baseline(method, "regression", *parts))
            print(f"{name} fold {fold}: " + " | ".join(f"{rule} {results[rule][-1]['structure']}" for rule in RULES),
                  flush=True)
        label = f"{name} ({X.shape[0]} rows; a time index: {looks_like_time_index(X)})"
        for method in RULES + BASELINES:
            cells = []
            for key in ("smse", "msll"):
                values = [r[key] for r in results[method] if r.get(key) is not None]
                cells.append(f"{np.mean(values):.4g}" if values else "—")
            seconds = np.mean([r["seconds"] for r in results[method]])
            rows.append((label, method if method in BASELINES else f"ours: {method}", " / ".join(cells),
                         f"{seconds:.1f}"))
    print("\n| data | method | SMSE / MSLL | seconds a fold |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
