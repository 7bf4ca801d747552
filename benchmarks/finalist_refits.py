"""What the finalists' full-effort refits gain over the screened fits of a series' explore stage.

A series of 300 to 999 rows is explored with the "screened" effort (every start of the full
effort, screened on runs of the series, the best optimised on all rows); the two best finalists
are then fitted again with the full effort (every start to convergence on all rows). This script
runs the default search on shared extrapolation series and prints, per refitted finalist, the
criterion of the screened fit and of the full-effort refit, and the seconds and likelihood
evaluations of each.

Run:  python benchmarks/finalist_refits.py [--series internet births mauna]
"""

import argparse
import time
import warnings

from extrapolation import DATA_DIR, load
from skgpsearch import CompositionalGPRegressor
from skgpsearch._search import _pipeline

SERIES = ["internet", "temperature", "births", "wages", "mauna", "sulphuric", "unemployment", "solar"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=SERIES)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    refits = []
    merge = _pipeline.merge_full_effort_refit

    def recorded(record, refit):
        refits.append((record, refit))
        return merge(record, refit)

    _pipeline.merge_full_effort_refit = recorded
    print("| series | rows | finalist | screened BIC | full-effort BIC | gain | screened s / evaluations "
          "| full-effort s / evaluations |\n|---|---|---|---|---|---|---|---|")
    for name in args.series:
        X, y = load(name, "train", DATA_DIR)
        refits.clear()
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            CompositionalGPRegressor(random_state=0, n_jobs=args.n_jobs).fit(X, y)
        seconds = time.perf_counter() - start
        for record, refit in refits:
            print(f"| {name} ({seconds:.0f} s) | {len(y)} | {record.structure} | {record.criterion:.2f} | "
                  f"{refit.criterion:.2f} | {refit.criterion - record.criterion:+.2f} | "
                  f"{record.fit_time:.1f} / {record.n_evaluations} | {refit.fit_time:.1f} / {refit.n_evaluations} |",
                  flush=True)


if __name__ == "__main__":
    main()
