"""KernelSearchCV next to GridSearchCV and RandomForest, on one regression and one classification dataset.

Regression: the airline passengers series (1949-1960, bundled), trained on the first ten
years and tested on the last two (extrapolation). Classification: Pima diabetes (bundled),
300 women drawn with stratification for training and the rest held out (scikit-learn's
Laplace GP classifier costs O(n³) per Newton step, and the grid below fits it 10 times).
For each: GridSearchCV over a hand-written list of kernels (5-fold CV), KernelSearchCV
searching the grammar (in-sample BIC, one fit per candidate), and a RandomForest baseline.

Run:  python examples/kernel_search_cv.py
"""

import time
import warnings

import numpy as np
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, DotProduct, ExpSineSquared, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skgpsearch import KernelSearchCV
from skgpsearch.datasets import load_airline, load_pima


def timed(model, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model, time.perf_counter() - start


def regression(max_depth, n_jobs):
    X, passengers = load_airline(return_X_y=True)
    y = np.log(passengers)
    X_train, X_test, y_train, y_test = X[:120], X[120:], y[:120], y[120:]
    grid = GridSearchCV(
        GaussianProcessRegressor(normalize_y=True),
        {"kernel": [C() * RBF() + WhiteKernel(), C() * RBF() * ExpSineSquared(periodicity=1.0) + WhiteKernel(),
                    DotProduct() + C() * ExpSineSquared(periodicity=1.0) + WhiteKernel()]},
        cv=5, n_jobs=n_jobs,
    )
    search = KernelSearchCV(GaussianProcessRegressor(normalize_y=True, n_restarts_optimizer=2, random_state=0),
                            base_kernels=("SE", "PER", "LIN"), max_depth=max_depth, n_jobs=n_jobs)
    forest = RandomForestRegressor(n_estimators=500, random_state=0, n_jobs=n_jobs)
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


def classification(n_train, max_depth, n_jobs):
    data = load_pima()
    X, y = data.data, data.target
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=n_train, stratify=y, random_state=0)
    d = X.shape[1]
    grid = GridSearchCV(make_pipeline(StandardScaler(), GaussianProcessClassifier()),
                        {"gaussianprocessclassifier__kernel": [C() * RBF(), C() * RBF(np.ones(d))]},
                        cv=5, n_jobs=n_jobs)
    search = KernelSearchCV(make_pipeline(StandardScaler(), GaussianProcessClassifier()), max_depth=max_depth,
                            kernel_param="gaussianprocessclassifier__kernel", n_jobs=n_jobs)
    forest = RandomForestClassifier(n_estimators=500, random_state=0, n_jobs=n_jobs)
    print(f"\nPima diabetes, {n_train} training women (stratified), {len(y_test)} held out")
    print("| method | chosen kernel | test accuracy | fit seconds |")
    print("|---|---|---|---|")
    for name, model in [("GridSearchCV, isotropic vs ARD RBF", grid), ("KernelSearchCV, sum of products", search),
                        ("RandomForest", forest)]:
        model, seconds = timed(model, X_train, y_train)
        accuracy = float(np.mean(model.predict(X_test) == y_test))
        if name.startswith("Grid"):
            chosen = "ARD" if model.best_index_ == 1 else "isotropic"
        elif name.startswith("Kernel"):
            chosen = model.best_structure_.to_string(data.feature_names)
        else:
            chosen = "-"
        print(f"| {name} | {chosen} | {accuracy:.3f} | {seconds:.1f} |")


def main(n_classification_train=300, max_depth=3, n_jobs=-1):
    """Both comparisons; ``max_depth`` bounds both structure searches, ``n_jobs=-1`` uses every core."""
    regression(max_depth, n_jobs)
    classification(n_classification_train, max_depth, n_jobs)


if __name__ == "__main__":
    main()
