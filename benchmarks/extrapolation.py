"""Time-series extrapolation benchmark: forecast the last 10 % of 11 series.

For each series of ``../shared/datasets/extrapolation/`` the model is fitted on
``NAME-train.csv`` (time in column ``x``, value in ``y``) and predicts
``NAME-test.csv``. Reported per series: RMSE of the predictive mean (raw units),
MNLP (mean negative log predictive density of a test point: the latent variance plus
the noise variance), the share of test points inside the 95 % predictive interval, the
structure found and the seconds of ``fit``; beside them the
published RMSEs of ABCD, CKS, the spectral-mixture kernel and the best of 10 methods
(from the dataset's README). Summary: each method's median over series of RMSE /
best RMSE of all methods (ours included), and on how many series we beat ABCD.

With ``--model-averaging K`` the same fit also predicts with the mixture of the
K best structures (``model_averaging=K``); the table then gives the RMSE and MNLP
of both the chosen model and the mixture (the mixture's MNLP is the exact mixture
density, each component with its own noise variance).

Run:  python benchmarks/extrapolation.py [--series airline mauna] [--change-operators auto | none | CP CW]
                                         [--max-depth 3] [--model-averaging 3] [--n-jobs 2]
                                         [--selection criterion]
                                         [--json rows.json]
"""

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from skgpsearch import CompositionalGPRegressor

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "extrapolation"
#: Published RMSEs (the dataset README): ABCD, CKS, spectral mixture, best of 10 methods.
PUBLISHED = {
    "airline": (16.67, 16.84, 14.62, 14.62),
    "solar": (0.383, 0.493, 0.460, 0.382),
    "mauna": (1.925, 0.812, 1.812, 0.812),
    "temperature": (2.763, 2.742, 2.827, 2.742),
    "internet": (5160, 5991, 17450, 5160),
    "call-centre": (40.68, 30.77, 150.6, 13.65),
    "radio": (1.989, 1.177, 0.641, 0.641),
    "sulphuric": (29.07, 47.78, 41.47, 29.07),
    "unemployment": (267.5, 152.9, 442.2, 123.9),
    "births": (29.12, 31.05, 42.38, 27.52),
    "wages": (14.90, 15.96, 17.87, 4.918),
}
#: ABCD's published MNLP where available.
ABCD_MNLP = {"airline": 4.27, "solar": 0.650, "mauna": 3.15}
METHODS = ("ABCD", "CKS", "SM")


def load(name, part, data_dir=DATA_DIR):
    data = np.loadtxt(Path(data_dir) / f"{name}-{part}.csv", delimiter=",", skiprows=1, ndmin=2)
    return data[:, :1].copy(), data[:, 1].copy()


def run_series(name, args):
    X, y = load(name, "train", args.data_dir)
    X_test, y_test = load(name, "test", args.data_dir)
    operators = args.change_operators
    operators = "auto" if operators == ["auto"] else None if operators in ([], ["none"]) else operators
    model = CompositionalGPRegressor(
        base_kernels=args.base_kernels, change_operators=operators, max_depth=args.max_depth,
        n_restarts=args.n_restarts, max_fits_per_depth=args.max_fits_per_depth, random_state=args.seed,
        n_jobs=args.n_jobs, model_averaging=args.model_averaging, selection=args.selection,
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    seconds = time.perf_counter() - start
    weights = getattr(model, "model_weights_", np.ones(1))
    log_densities, means, sds = [], [], []
    for mean, sd in component_predictions(model, X_test):
        means.append(mean)
        sds.append(sd)
        log_densities.append(-0.5 * np.log(2 * math.pi * sd**2) - 0.5 * (y_test - mean) ** 2 / sd**2)
    averaged_mean = model.predict(X_test)
    row = {"series": name, "n": len(y), "structure": str(model.structure_),
           "rmse": _rmse(means[0], y_test), "mnlp": float(-np.mean(log_densities[0])),
           "coverage": float(np.mean(np.abs(y_test - means[0]) <= 1.96 * sds[0])),
           "seconds": seconds, "criterion": float(model.best_score_),
           # every fit of the search, the finalists' and the select stage's refits included
           "evaluations": int(sum(model.search_results_["n_evaluations"])),
           "variance_scale": float(model.forecast_variance_scale_)}
    if args.model_averaging:
        mixture_log_density = logsumexp(np.asarray(log_densities), axis=0, b=np.asarray(weights)[:, None])
        row.update(averaged_rmse=_rmse(averaged_mean, y_test), averaged_mnlp=float(-np.mean(mixture_log_density)),
                   n_averaged=len(means), top_weight=float(np.max(weights)))
    return row


def component_predictions(model, X_test):
    """(mean, standard deviation) of a new observation (noise included), in the target's units, for each
    component of a fitted regressor's mixture (the chosen model first).

    Read from the fitted model's private state: the public predict gives the mixture's moments, not its
    density or the chosen model alone. Beyond the series' last time the spread is widened as predict widens
    it (``forecast_variance_scale_``).
    """
    widen = np.where(X_test[:, 0] > np.max(model.X_train_[:, 0]), math.sqrt(model.forecast_variance_scale_), 1.0)
    predictions = []
    for component in model._models:
        posterior = component.posterior
        mean, std = posterior.predict(X_test, return_std=True)
        predictions.append((mean * model._y_train_std + model._y_train_mean,
                            widen * np.sqrt(std**2 + posterior.noise_variance) * model._y_train_std))
    return predictions


def _rmse(prediction, y_true):
    return float(np.sqrt(np.mean((prediction - y_true) ** 2)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=list(PUBLISHED), choices=list(PUBLISHED), metavar="NAME")
    parser.add_argument("--base-kernels", nargs="+", default=["SE", "RQ", "PER", "LIN", "WN"])
    parser.add_argument("--change-operators", nargs="*", default=["auto"], choices=["auto", "none", "CP", "CW"],
                        help="the regressor's change_operators (default: auto, which is CP and CW on a series)")
    parser.add_argument("--max-depth", type=int, default=None)
    parser.add_argument("--n-restarts", type=int, default=0)
    parser.add_argument("--max-fits-per-depth", type=int, default=32,
                        help="the regressor's max_fits_per_depth (default: its default, 32)")
    parser.add_argument("--model-averaging", type=int, default=None, metavar="K")
    parser.add_argument("--selection", default="auto", choices=["auto", "criterion", "loo", "stacking", "forecast"],
                        help="the select stage's rule (default: auto, which is 'forecast' on a series)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--json", type=Path, default=None, help="save the rows (and settings) to this file")
    args = parser.parse_args()

    rows = []
    for name in args.series:
        row = run_series(name, args)
        rows.append(row)
        print(f"done: {name} (n = {row['n']}): {row['structure']}, RMSE {row['rmse']:.4g} in {row['seconds']:.1f} s, "
              f"{row['evaluations']} likelihood evaluations, forecast variance x {row['variance_scale']:.3g}", flush=True)

    print()
    print("Extrapolation (train on the first 90 %, forecast the last 10 %); ours: CompositionalGPRegressor("
          f"base kernels {'/'.join(args.base_kernels)}, change operators {' '.join(args.change_operators) or 'none'}, "
          f"max_depth={args.max_depth}, n_restarts={args.n_restarts}, "
          f"max_fits_per_depth={args.max_fits_per_depth}, selection={args.selection!r}, "
          f"random_state={args.seed}, n_jobs={args.n_jobs})")
    print()
    print("| series | ours RMSE | ABCD | CKS | SM | best of 10 | ours MNLP | ABCD MNLP | inside the 95 % interval "
          "| our structure | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    relative = {m: [] for m in ("ours",) + METHODS}
    wins = 0
    for row in rows:
        abcd, cks, sm, best10 = PUBLISHED[row["series"]]
        best = min(row["rmse"], best10)
        for method, value in zip(("ours",) + METHODS, (row["rmse"], abcd, cks, sm)):
            relative[method].append(value / best)
        wins += row["rmse"] < abcd
        mnlp_ref = ABCD_MNLP.get(row["series"])
        print(f"| {row['series']} | {row['rmse']:.4g} | {abcd:.4g} | {cks:.4g} | {sm:.4g} | {best10:.4g} | "
              f"{row['mnlp']:.3f} | {'' if mnlp_ref is None else f'{mnlp_ref:.3f}'} | "
              f"{100 * row['coverage']:.0f} % | {row['structure']} | "
              f"{row['seconds']:.1f} |")
    print()
    print("median relative RMSE (RMSE / best of all methods, ours included): "
          + ", ".join(f"{m} {np.median(v):.2f}" for m, v in relative.items()))
    print(f"better than ABCD on {wins}/{len(rows)} series (goal: >= 8 of 11, median <= 1.00); "
          f"median series {np.median([r['seconds'] for r in rows]):.1f} s (goal: < 60 s), "
          f"slowest {max(r['seconds'] for r in rows):.1f} s (goal: < 240 s), "
          f"total {sum(r['seconds'] for r in rows):.1f} s")
    if args.model_averaging:
        print()
        print(f"Model averaging (model_averaging={args.model_averaging}), same fits:")
        print()
        print("| series | models | top weight | RMSE chosen | RMSE averaged | MNLP chosen | MNLP averaged |")
        print("|---|---|---|---|---|---|---|")
        averaged_relative, averaged_wins = [], 0
        for row in rows:
            abcd, _, _, best10 = PUBLISHED[row["series"]]
            averaged_relative.append(row["averaged_rmse"] / min(row["averaged_rmse"], best10))
            averaged_wins += row["averaged_rmse"] < abcd
            print(f"| {row['series']} | {row['n_averaged']} | {row['top_weight']:.3f} | {row['rmse']:.4g} | "
                  f"{row['averaged_rmse']:.4g} | {row['mnlp']:.3f} | {row['averaged_mnlp']:.3f} |")
        print()
        print(f"averaged: median relative RMSE {np.median(averaged_relative):.2f}, "
              f"better than ABCD on {averaged_wins}/{len(rows)}")
    if args.json:
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        args.json.write_text(json.dumps({"settings": settings, "rows": rows}, indent=1))
        print(f"rows saved to {args.json}")


if __name__ == "__main__":
    main()
