"""CompositionalGPClassifier next to a RandomForest on the Pima diabetes data.

The Pima Indians diabetes data (768 women, 8 clinical measurements, diabetes yes/no;
bundled with the package), split 75/25 with stratification (seed 0). The GP classifier
searches sums of products of one squared-exponential kernel per feature under its default
settings; the forest has 500 trees. The table gives test accuracy, log loss and fit time;
the chosen structure is printed with the feature names.

Run:  python examples/pima_vs_random_forest.py
"""

import time

from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split

from skgpsearch import CompositionalGPClassifier
from skgpsearch.datasets import load_pima


def main(n_rows=None, n_jobs=-1):
    """Fit both models on a stratified 75 % of the first ``n_rows`` women (all by default); ``n_jobs=-1`` uses every core."""
    data = load_pima()
    X, y, names = data.data[:n_rows], data.target[:n_rows], data.feature_names
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    print(f"Pima diabetes: {len(X_train)} training and {len(X_test)} test rows, "
          f"{X_train.shape[1]} features, {100 * y.mean():.0f} % with diabetes\n")

    models = {
        "CompositionalGPClassifier": CompositionalGPClassifier(random_state=0, n_jobs=n_jobs, verbose=1),
        "RandomForest, 500 trees": RandomForestClassifier(n_estimators=500, random_state=0, n_jobs=n_jobs),
    }
    rows = []
    for name, model in models.items():
        start = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - start
        proba = model.predict_proba(X_test)
        rows.append((name, accuracy_score(y_test, model.predict(X_test)),
                     log_loss(y_test, proba, labels=model.classes_), seconds))

    print("\n| model | test accuracy | test log loss | fit seconds |")
    print("|---|---|---|---|")
    for name, accuracy, loss, seconds in rows:
        print(f"| {name} | {accuracy:.3f} | {loss:.3f} | {seconds:.1f} |")

    gp = models["CompositionalGPClassifier"]
    print(f"\nChosen structure: {gp.structure_.to_string(names)}")
    print(f"  (column indices: {gp.structure_}; criterion {gp.best_score_:.2f}, "
          f"{len(gp.search_results_['structure'])} candidates, stopped: {gp.search_stop_reason_})")
    print()
    print(gp.describe(feature_names=names))


if __name__ == "__main__":
    main()
