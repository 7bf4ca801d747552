"""Mauna Loa decomposition: what the discovered structure says about the CO2 series.

Searches the structure of 20 years of monthly CO2 concentrations (bundled with the
package), prints the plain-language description, splits the posterior into its
additive components (trend, yearly cycle, ...) on the training months and on the
two held-out years, and saves one figure per component plus the full fit and the
search path as PNG files (with matplotlib installed).

Run:  python examples/mauna_loa_decomposition.py [output-folder]
"""

import sys
from pathlib import Path

import numpy as np

from skgpsearch import CompositionalGPRegressor
from skgpsearch.datasets import load_mauna_loa


def main(folder="mauna_loa_figures", n_train=240, n_forecast=24, n_jobs=-1, max_depth=3):
    """Search on ``n_train`` months, up to ``max_depth`` terms, explain them and the next ``n_forecast``;
    figures go to ``folder``."""
    X, y = load_mauna_loa(return_X_y=True, n_samples=n_train + n_forecast)
    X_train, y_train, X_future = X[:n_train], y[:n_train], X[n_train:]
    model = CompositionalGPRegressor(
        base_kernels=("SE", "RQ", "PER", "LIN"), criterion="bic", max_depth=max_depth, n_jobs=n_jobs,
        random_state=0,
    ).fit(X_train, y_train)

    print(model.describe(feature_names=["year"], target_name="CO2"))

    training = model.decompose()
    future = model.decompose(X_future)
    print("\nAdditive components (posterior means; ppm)")
    print("| component | share of the variance | sd over the training months | "
          "mean over the next two years | its posterior sd there |")
    print("|---|---|---|---|---|")
    for past, ahead in zip(training, future):
        label = past.structure.without_values().to_string(["year"])
        print(f"| {label} | {100 * past.variance_share:.1f} % | {np.std(past.mean):.2f} | "
              f"{np.mean(ahead.mean):.2f} | {np.mean(ahead.std):.2f} |")
    print(f"| offset (training mean) | | | {training.offset:.2f} | |")
    gap = np.max(np.abs(training.mean - model.predict(X_train)))
    print(f"\nThe components add up to the prediction (largest difference {gap:.1e} ppm).")

    try:
        from skgpsearch.inspection import plot_components, plot_fit, plot_search_path
    except ImportError:
        return
    try:
        figures = ([plot_fit(model, X_future, y[n_train:], feature_names=["year"], target_name="CO2 (ppm)")]
                   + plot_components(model, feature_names=["year"], target_name="CO2 (ppm)")
                   + [plot_search_path(model, feature_names=["year"])])
    except ImportError:
        print("(install matplotlib for the figures: pip install 'skgpsearch[plot]')")
        return
    out = Path(folder)
    out.mkdir(exist_ok=True)
    for number, figure in enumerate(figures, start=1):
        figure.savefig(out / f"figure_{number}.png", dpi=110)
    print(f"{len(figures)} figures written to {out}/")


if __name__ == "__main__":
    main(*sys.argv[1:2])
