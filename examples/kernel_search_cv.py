"""KernelSearchCV next to GridSearchCV and RandomForest, on one regression and one classification dataset.

Regression: the airline passengers series (1949-1960), trained on the first ten years and
tested on the last two (extrapolation). Classification: Pima diabetes, a stratified 75/25
split. For each: GridSearchCV over a hand-written list of kernels (5-fold CV), KernelSearchCV
searching the grammar (in-sample BIC, one fit per candidate), and a RandomForest baseline.

Run:  python examples/kernel_search_cv.py
"""

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, DotProduct, ExpSineSquared, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skgpsearch import KernelSearchCV

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def timed(model, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model, time.perf_counter() - start


def regression():
    frame = pd.read_csv(DATA / "airline.csv")
    X = frame[["time"]].to_numpy(float)
    y = np.log(frame["passengers"].to_numpy(float))
    X_train, X_test, y_train, y_test = X[:120], X[120:], y[:120], y[120:]
    grid = GridSearchCV(
        GaussianProcessRegressor(normalize_y=True),
        {"kernel": [C() * RBF() + WhiteKernel(), C() * RBF() * ExpSineSquared(periodicity=1.0) + WhiteKernel(),
                    DotProduct() + C() * ExpSineSquared(periodicity=1.0) + WhiteKernel()]},
        cv=5,
    )
    search = KernelSearchCV(GaussianProcessRegressor(normalize_y=True, n_restarts_optimizer=2, random_state=0),
                            base_kernels=("SE", "PER", "LIN"), max_depth=3)
    forest = RandomForestRegressor(n_estimators=500, random_state=0)
    print("Airline passengers (log), train 1949-1958, test 1959-1960")
    print("| method | chosen kernel | test RMSE (log passengers) | fit seconds |")
    print("|---|---|---|---|")
    for name, model in [("GridSearchCV, 3 kernels", grid), ("KernelSearchCV, grammar", search),
                        ("RandomForest", forest)]:
        model, seconds = timed(model, X_train, y_train)
        rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
        if name.startswith("Grid"):
            chosen = str(model.best_estimator_.kernel_)[:60]
        elif name.startswith("Kernel"):
            chosen = str(model.best_structure_)
        else:
            chosen = "-"
        print(f"| {name} | {chosen} | {rmse:.3f} | {seconds:.1f} |")


def classification():
    frame = pd.read_csv(DATA / "pima.csv")
    y = frame.pop("diabetes").to_numpy()
    X = frame.to_numpy(float)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    d = X.shape[1]
    grid = GridSearchCV(make_pipeline(StandardScaler(), GaussianProcessClassifier()),
                        {"gaussianprocessclassifier__kernel": [C() * RBF(), C() * RBF(np.ones(d))]}, cv=5)
    search = KernelSearchCV(make_pipeline(StandardScaler(), GaussianProcessClassifier()), max_depth=3,
                            kernel_param="gaussianprocessclassifier__kernel", n_jobs=2)
    forest = RandomForestClassifier(n_estimators=500, random_state=0, n_jobs=2)
    print("\nPima diabetes, stratified 75/25 split")
    print("| method | chosen kernel | test accuracy | fit seconds |")
    print("|---|---|---|---|")
    for name, model in [("GridSearchCV, isotropic vs ARD RBF", grid), ("KernelSearchCV, sum of products", search),
                        ("RandomForest", forest)]:
        model, seconds = timed(model, X_train, y_train)
        accuracy = float(np.mean(model.predict(X_test) == y_test))
        if name.startswith("Grid"):
            chosen = "ARD" if model.best_index_ == 1 else "isotropic"
        elif name.startswith("Kernel"):
            chosen = str(model.best_structure_) + "  (" + ", ".join(f"{i}={c}" for i, c in enumerate(frame.columns)) + ")"
        else:
            chosen = "-"
        print(f"| {name} | {chosen} | {accuracy:.3f} | {seconds:.1f} |")


if __name__ == "__main__":
    regression()
    classification()
