"""Structure recovery on planted kernels: does the default search find the structure that generated the data?

``CASES`` (a module-level list, reused by ``multicolumn.py``) holds 23 planted
structures: 16 one-column time series mixing SE, RQ, PER and LIN (n = 300 on a
regular grid of [0, 10]) and 7 cases with 2 to 5 columns, some irrelevant, with
additive terms and interactions (n = 300 or 400, inputs uniform on [0, 5]).
Each dataset is one draw of a GP whose kernel is the planted structure with
hyperparameters set explicitly per case (catalogue kernels SE/RQ/PER/LIN in
``ActiveColumns``), plus Gaussian noise of sd 0.1 against a signal of variance
about 1 (the SNR column: variance of the drawn function / noise variance), with a
fixed seed per case.

The search is ``CompositionalGPRegressor(random_state=0)`` with its defaults
(``--base-kernels`` to change the base kernels). A case is recovered when the
found structure, without its values, is canonically equal to the planted one.
"found - planted" is the BIC (lml - k/2 log n, greater is better) of the found
structure minus that of the planted structure refitted by our candidate fitter
(best of a plain fit and a fit started at the true hyperparameters): on a miss,
a negative value means the planted structure scores higher, so the search did not
reach it ("search failure"); a positive value means the criterion prefers the
found structure ("criterion"). "planted in search" gives the planted structure's
BIC when the search evaluated it (else "-").
Goal: >= 18 of 20+ cases recovered. Cases run in parallel (joblib), each search
with n_jobs=1 and one BLAS thread.

Run:  python benchmarks/synthetic_recovery.py [--n-jobs 2] [--cases 0 1 16] [--base-kernels SE PER LIN]
                                              [--json rows.json]
"""

import argparse
import json
import time
import warnings
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from skgpsearch import CompositionalGPRegressor
from skgpsearch.criteria import get_criterion
from skgpsearch.grammar import parse
from skgpsearch.kernels import LIN, PER, RQ, SE, ActiveColumns, from_kernel, to_kernel

NOISE_SD = 0.1


def _on(kernel, column):
    return ActiveColumns(kernel, [column])


@dataclass(frozen=True)
class Case:
    """A planted structure: its text, the generating kernel (true values), the data design."""

    planted: str
    kernel: object
    n: int = 300
    n_features: int = 1
    seed: int = 0
    noise_sd: float = NOISE_SD


# Periods are well inside (2 x sampling interval, range) and the amplitudes of the
# terms are comparable, so that every term is visible in one draw of 300 points.
CASES = [
    # --- one column, regular grid on [0, 10] ---
    Case("SE(0) + PER(0)", _on(SE(1.0, 2.5), 0) + _on(PER(1.0, 1.0, 1.3), 0), seed=1),
    Case("SE(0) * PER(0)", _on(SE(1.0, 3.0), 0) * _on(PER(1.0, 1.0, 1.0), 0), seed=2),
    Case("LIN(0) + PER(0)", _on(LIN(0.05, 5.0), 0) + _on(PER(1.0, 1.0, 1.5), 0), seed=3),
    Case("LIN(0) * PER(0)", _on(LIN(0.06, -2.0), 0) * _on(PER(1.0, 1.0, 1.2), 0), seed=4),
    Case("RQ(0) + PER(0)", _on(RQ(1.0, 1.5, 0.3), 0) + _on(PER(0.5, 1.0, 0.8), 0), seed=5),
    Case("SE(0) + LIN(0)", _on(SE(0.5, 1.0), 0) + _on(LIN(0.05, 5.0), 0), seed=6),
    Case("RQ(0) + LIN(0)", _on(RQ(1.0, 1.0, 0.2), 0) + _on(LIN(0.05, 5.0), 0), seed=7),
    Case("PER(0) + PER(0)", _on(PER(1.0, 1.0, 0.7), 0) + _on(PER(1.0, 1.0, 3.1), 0), seed=8),
    Case("SE(0) * LIN(0)", _on(SE(1.0, 0.7), 0) * _on(LIN(0.02, -2.0), 0), seed=9),
    Case("LIN(0) + SE(0) * PER(0)", _on(LIN(0.02, 0.0), 0) + _on(SE(1.0, 4.0), 0) * _on(PER(0.5, 1.0, 1.0), 0),
         seed=10),
    Case("SE(0) + SE(0) * PER(0)", _on(SE(1.0, 3.0), 0) + _on(SE(1.0, 2.0), 0) * _on(PER(0.5, 1.0, 0.9), 0),
         seed=11),
    Case("PER(0)", _on(PER(1.0, 0.7, 2.0), 0), seed=12),
    Case("RQ(0)", _on(RQ(1.0, 1.0, 0.1), 0), seed=13),
    Case("SE(0) + PER(0) * LIN(0)", _on(SE(0.5, 2.0), 0) + _on(PER(1.0, 1.0, 1.1), 0) * _on(LIN(0.02, -2.0), 0),
         seed=14),
    Case("SE(0) + PER(0) + LIN(0)", _on(SE(0.5, 1.0), 0) + _on(PER(1.0, 1.0, 1.7), 0) + _on(LIN(0.04, 5.0), 0),
         seed=15),
    Case("SE(0)", _on(SE(1.0, 0.8), 0), seed=16),
    # --- several columns (some irrelevant), inputs uniform on [0, 5] ---
    Case("SE(0) + SE(1)", _on(SE(1.0, 1.0), 0) + _on(SE(1.0, 1.5), 1), n_features=3, seed=17),
    Case("SE(0) * SE(1)", _on(SE(1.0, 1.5), 0) * _on(SE(1.0, 1.5), 1), n_features=4, seed=18),
    Case("SE(0) * SE(1) + SE(2)", _on(SE(1.0, 1.5), 0) * _on(SE(1.0, 1.5), 1) + _on(SE(0.5, 1.0), 2),
         n=400, n_features=5, seed=19),
    Case("LIN(0) + SE(1)", _on(LIN(0.1, 2.5), 0) + _on(SE(1.0, 1.0), 1), n_features=3, seed=20),
    Case("SE(0) + SE(1) + SE(2)", _on(SE(1.0, 1.0), 0) + _on(SE(0.7, 1.5), 1) + _on(SE(0.5, 1.0), 2),
         n=400, n_features=4, seed=21),
    Case("SE(1) * LIN(0)", _on(SE(1.0, 1.2), 1) * _on(LIN(0.1, -1.0), 0), n_features=3, seed=22),
    Case("SE(1) + PER(0)", _on(PER(1.0, 1.0, 1.0), 0) + _on(SE(1.0, 1.5), 1), n_features=2, seed=23),
]


def make_data(case):
    """(X, y, f) of one case: inputs, noisy targets and the drawn noise-free function."""
    rng = np.random.default_rng(case.seed)
    if case.n_features == 1:
        X = np.linspace(0.0, 10.0, case.n)[:, None]
    else:
        X = rng.uniform(0.0, 5.0, size=(case.n, case.n_features))
    K = case.kernel(X)
    K[np.diag_indices_from(K)] += 1e-6 * np.mean(np.diag(K))
    f = np.linalg.cholesky(K) @ rng.normal(size=case.n)
    y = f + case.noise_sd * rng.normal(size=case.n)
    return X, y, f


def check_cases(cases=None):
    """Each case's kernel must have the planted structure (guards against typos)."""
    for case in CASES if cases is None else cases:
        expr = from_kernel(case.kernel, n_features=case.n_features).without_values()
        if expr != parse(case.planted):
            raise ValueError(f"{case.planted!r}: its kernel is {expr}")


def _true_start(case, summary, y_std):
    """The planted structure carrying the true values on the normalised target scale, or None.

    Every free amplitude is divided by y_std**2 (in a product only one factor keeps
    its amplitude); the result is checked against the true kernel / y_std**2.
    """
    expr = from_kernel(case.kernel, n_features=case.n_features)
    leaves = []
    for leaf, free in zip(expr.leaves, expr.free_amplitudes()):
        params = leaf.params
        if free:
            params["variance"] = params["variance"] / y_std**2
        leaves.append(leaf.with_params(params))
    scaled = iter(leaves)
    scaled = expr.map_leaves(lambda leaf: next(scaled))
    X_check = np.linspace(summary.minimum, summary.maximum, 25)
    expected = case.kernel(X_check) / y_std**2
    if not np.allclose(to_kernel(scaled, summary=summary)(X_check), expected, rtol=1e-6, atol=1e-9):
        return None  # true values outside the data-aware bounds, or scales not transferable
    return scaled


def refit_planted(case, X, y, seed=0):
    """Best BIC of the planted structure under our fitter: plain fit and fit from the true values."""
    estimator = CompositionalGPRegressor(random_state=seed)
    model_fitter = estimator._model_fitter(X, y, get_criterion("bic"))
    y_fit, y_std, summary, fitter = model_fitter.y, model_fitter.y_std, model_fitter.summary, model_fitter.candidate_fitter
    records = [fitter(parse(case.planted), X, y_fit, seed)]
    start = _true_start(case, summary, y_std)
    if start is not None:
        records.append(fitter(start, X, y_fit, seed, (case.noise_sd / y_std) ** 2))
    scores = [r.criterion for r in records if r.ok]
    return max(scores, default=-np.inf), start is not None


def run_case(index, base_kernels):
    case = CASES[index]
    X, y, f = make_data(case)
    planted = parse(case.planted)
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = CompositionalGPRegressor(base_kernels=base_kernels, random_state=0, n_jobs=1).fit(X, y)
        seconds = time.perf_counter() - start
        planted_bic, true_start = refit_planted(case, X, y)
    results = model.search_results_
    in_search = [c for s, c in zip(results["structure"], results["criterion"]) if parse(s) == planted]
    found = model.structure_.without_values()
    return {
        "case": index,
        "planted": str(planted),
        "n": case.n,
        "n_features": case.n_features,
        "snr": float(np.var(f) / case.noise_sd**2),
        "found": str(found),
        "recovered": bool(found == planted),
        "found_bic": float(model.best_score_),
        "planted_bic": float(planted_bic),
        "difference": float(model.best_score_ - planted_bic),
        "planted_in_search_bic": float(in_search[0]) if in_search else None,
        "true_start_used": true_start,
        "candidates": len(results["structure"]),
        "seconds": seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--cases", type=int, nargs="+", default=None, help="indices into CASES (default: all)")
    parser.add_argument("--base-kernels", nargs="+", default=["SE", "RQ", "PER", "LIN"])
    parser.add_argument("--json", default=None, help="save the rows (and settings) to this file")
    args = parser.parse_args()
    indices = list(range(len(CASES))) if args.cases is None else args.cases
    check_cases([CASES[i] for i in indices])

    print("Structure recovery on planted GP draws, default CompositionalGPRegressor (greedy, BIC, automatic depth: 2 + columns)")
    print(f"settings: cases {'all' if args.cases is None else indices} ({len(indices)} of {len(CASES)}); "
          f"base kernels {'/'.join(args.base_kernels)}; noise sd {NOISE_SD}; n_jobs = {args.n_jobs} "
          "(cases in parallel, each search n_jobs=1)", flush=True)
    start = time.perf_counter()
    order = sorted(indices, key=lambda i: -CASES[i].n * CASES[i].n_features)  # slow cases first
    rows = Parallel(n_jobs=args.n_jobs)(delayed(run_case)(i, tuple(args.base_kernels)) for i in order)
    rows.sort(key=lambda r: indices.index(r["case"]))
    wall = time.perf_counter() - start

    print()
    print("| # | planted | d | n | SNR | found | recovered | BIC found - planted | planted in search | miss | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        miss = ""
        if not r["recovered"]:
            miss = "search failure" if r["difference"] < 0 else "criterion"
        in_search = "-" if r["planted_in_search_bic"] is None else f"{r['planted_in_search_bic']:.2f}"
        print(f"| {r['case']} | {r['planted']} | {r['n_features']} | {r['n']} | {r['snr']:.0f} | {r['found']} | "
              f"{'yes' if r['recovered'] else 'no'} | {r['difference']:+.2f} | {in_search} | {miss} | "
              f"{r['seconds']:.1f} |")
    recovered = sum(r["recovered"] for r in rows)
    print()
    print(f"recovered: {recovered}/{len(rows)} (goal >= 18/20, i.e. >= 90 %); "
          f"search time {sum(r['seconds'] for r in rows):.0f} s in total, wall {wall:.0f} s")
    misses = [r for r in rows if not r["recovered"]]
    if misses:
        failures = sum(r["difference"] < 0 for r in misses)
        print(f"misses: {failures} search failures (planted scores higher), "
              f"{len(misses) - failures} preferred by the criterion")

    if args.json:
        with open(args.json, "w") as handle:
            clean = [{k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items()}
                     for r in rows]
            json.dump({"settings": vars(args), "wall_seconds": wall, "rows": clean}, handle, indent=1)
        print(f"\nrows saved to {args.json}")


if __name__ == "__main__":
    main()
