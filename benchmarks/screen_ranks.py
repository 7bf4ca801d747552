"""Would fewer fits per depth keep a series' best candidates? The cheap score's ranks of each depth's best.

A level with more candidates than ``max_fits_per_depth`` (32) gives each a cheap score (a short fit
on a subset of the rows, see ``RegressionCandidateFitter.screen``) and fits only the best 32. On the
long extrapolation series a depth-3 level of 32 fits is most of the search's time (temperature, 899
rows: 167 of 264 s). Fitting fewer would be safe only if the candidates that end best by the
criterion also rank near the top by the cheap score. For each series given, this fits the default
regressor (as ``benchmarks/extrapolation.py`` does), records the cheap score of every candidate of
every screened level (``StructureSearch._cut`` wrapped in this process, where the search loop runs), and
prints, per screened level: its candidates, the cheap-score rank of the level's best criterion, the
ranks of the candidates within a nat of it, and the ranks of its five best.

With ``--spread``, instead: how much one candidate's cheap score moves with the rows it is computed on. The
children of wages' depth-2 best given are scored (the "screened" fitter, hints from that parent) on eight
random subsets each; their spread is set against the differences between them.

Run:  python benchmarks/screen_ranks.py [--series temperature births wages internet] [--n-jobs 2]
      python benchmarks/screen_ranks.py --spread
"""

import argparse
import time
import warnings

import numpy as np

from extrapolation import load
from skgpsearch import CompositionalGPRegressor
from skgpsearch._search import _loop
from skgpsearch._search._candidate_fitter import with_effort
from skgpsearch.criteria import get_criterion
from skgpsearch.grammar import parse

SPREAD_PARENT = "CP(0, RQ(0), RQ(0))"
SPREAD_CHILDREN = ["CW(0, CP(0, RQ(0), RQ(0)), C)", "CP(0, CW(0, C, RQ(0)), RQ(0))", "CP(0, RQ(0), RQ(0) + PER(0))",
                   "CP(0, SE(0) + RQ(0), RQ(0))"]


def capture_cut_scores(log):
    """Wrap ``StructureSearch._cut`` so that every screened level appends (depth, structure text, cheap score) to
    ``log``; returns the original to restore."""
    original = _loop.StructureSearch._cut

    def cut(self, candidates, scores, keep, depth, result, score_name):
        log.extend((depth, str(c.structure), float(s.score)) for c, s in zip(candidates, scores))
        return original(self, candidates, scores, keep, depth, result, score_name)

    _loop.StructureSearch._cut = cut
    return original


def level_ranks(log, table, depth):
    """(candidates, rank of the best, ranks within a nat of it, ranks of the five best) of one screened level;
    ranks count from 1 in the order of the cheap score."""
    scored = sorted(((score, text) for d, text, score in log if d == depth), reverse=True)
    criterion = {text: value for text, d, value, status in zip(table["structure"], table["depth"], table["criterion"],
                                                                 table["status"]) if d == depth and status == "ok"}
    values = np.array([criterion.get(text, -np.inf) for _, text in scored])
    by_criterion = np.argsort(-values, kind="stable")
    best = values.max()
    near = [int(i) + 1 for i in np.flatnonzero(values >= best - 1.0)]
    return len(scored), int(by_criterion[0]) + 1, near, [int(i) + 1 for i in by_criterion[:5]]


def subset_spread(name="wages", n_subsets=8):
    """Print the cheap score of each of SPREAD_CHILDREN on ``n_subsets`` row subsets (seeds 0, 1, ...)."""
    X, y = load(name, "train")
    model_fitter = CompositionalGPRegressor(random_state=0)._model_fitter(X, y, get_criterion("bic"))
    fitter = with_effort(model_fitter.candidate_fitter, "screened", X.shape[0])
    X_fit, y_fit = model_fitter.X, model_fitter.y
    parent = fitter(parse(SPREAD_PARENT), X_fit, y_fit, 0)
    hints = fitter.start_hints(parent, X_fit, y_fit, [0], [0])
    print(f"| child of {SPREAD_PARENT} ({name}) | mean cheap score | standard deviation over subsets | range |\n"
          "|---|---|---|---|")
    for text in SPREAD_CHILDREN:
        scores = [fitter.screen(parse(text), X_fit, y_fit, seed, parent.warm_state, hints).score
                  for seed in range(n_subsets)]
        spread = f"{np.std(scores, ddof=1):.2f} | {min(scores):.2f} .. {max(scores):.2f}"
        print(f"| {text} | {np.mean(scores):.2f} | {spread} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", default=["temperature", "births", "wages", "internet"])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--spread", action="store_true", help="the cheap score's spread over row subsets instead")
    args = parser.parse_args()
    if args.spread:
        warnings.simplefilter("ignore")
        subset_spread()
        return
    print("| series (rows) | depth | candidates | rank of the best | ranks within a nat of it | ranks of the five best "
          "| seconds |\n|---|---|---|---|---|---|---|")
    for name in args.series:
        X, y = load(name, "train")
        log = []
        original = capture_cut_scores(log)
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = CompositionalGPRegressor(random_state=0, n_jobs=args.n_jobs).fit(X, y)
        finally:
            _loop.StructureSearch._cut = original
        seconds = time.perf_counter() - start
        for depth in sorted({d for d, _, _ in log}):
            n, rank, near, five = level_ranks(log, model.search_results_, depth)
            print(f"| {name} ({len(y)}) | {depth} | {n} | {rank} | {near} | {five} | {seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
