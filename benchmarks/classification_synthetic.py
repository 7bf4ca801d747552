"""Mrkšić 2014, §4.3 (Table 4.2) and §5.1 / Appendix B: synthetic GP-classification experiments.

``recovery``: for each of the thesis' ten structures (D = 3, 4, 10), one latent function is
drawn from the GP prior (inputs standard normal, every SE lengthscale 1, unit variance per
additive term) on N_max training points plus 1000 test points. Labels are sign(f + noise),
noise variance 10 % ("SNR 100") or 100 % ("SNR 1") of the latent function's variance; the data
sets of size 100 ⊂ 300 ⊂ 500 are nested, as in the thesis. The search (bic_light, probit)
runs on each; reported: the structure found (recovered = equal to the truth, canonical form),
the test accuracy, the *kernel rate* (accuracy of the classifier with the true structure,
hyperparameters fitted) and the *function rate* (accuracy of sign(f) on the noisy test labels).

``robust``: salt-and-pepper noise (thesis Appendix B): a fraction rho ∈ {0, 5 %, 20 %} of the
training labels is inverted after the SNR-100 labels are drawn (true kernel SE1 + SE2 + SE3,
D = 3, N = 300); probit vs robust likelihood (both bic_light): the estimated outlier rate ε
(inverting a fraction rho of labels is ε = 2 rho in the mixture ε/2 + (1 − ε) Φ), the
structure, and the test accuracy on uncorrupted test labels.

Run:  python benchmarks/classification_synthetic.py recovery [--sizes 100 300 500] [--n-jobs 2]
                                                      [--search beam --beam-width 2]
      python benchmarks/classification_synthetic.py robust [--draws 3]
"""

import argparse
import time
import warnings

import numpy as np
from joblib import Parallel, delayed

from skgpsearch import CompositionalGPClassifier
from skgpsearch.grammar import parse
from skgpsearch.grammar._grammars import SumOfProductsGrammar
from skgpsearch.kernels import to_kernel

#: The ten structures of Mrkšić 2014, Table 4.2 (its 1-based dimensions, here 0-based) and D.
STRUCTURES = [
    ("SE(0)", 3),
    ("SE(1) + SE(1) + SE(1)", 3),
    ("SE(1) * SE(2)", 3),
    ("SE(0) + SE(1) * SE(2) + SE(3)", 4),
    ("SE(0) + SE(1) * SE(2) + SE(3)", 10),
    ("SE(0) + SE(1) * SE(2) + SE(3) + SE(4) * SE(5)", 10),
    ("SE(2) * SE(4) * SE(6)", 10),
    ("SE(0) + SE(2) * SE(4) * SE(6) + SE(9)", 10),
    ("SE(2) * SE(4) * SE(6) * SE(8)", 10),
    ("SE(0) + SE(2) * SE(4) * SE(6) * SE(8) + SE(9)", 10),
]
N_TEST = 1000
NOISE = {"SNR 100": 0.1, "SNR 1": 1.0}


def latent_kernel(text, d):
    """The generating kernel: lengthscale 1 for every SE, unit variance per additive term.

    Repeated terms on one column (``SE(1) + SE(1) + SE(1)``) get lengthscales 0.5, 1, 2 so that
    they differ.
    """
    expr = parse(text)
    terms = []
    for i, term in enumerate(expr.terms()):
        same = [t for t in expr.terms() if t == term]
        scale = [0.5, 1.0, 2.0][len([t for t in expr.terms()[:i] if t == term])] if len(same) > 1 else 1.0
        terms.append(term.map_leaves(lambda leaf, s=scale: leaf.with_params({"variance": 1.0, "lengthscale": s})))
    return to_kernel(type(expr)._make(terms) if len(terms) > 1 else terms[0], np.zeros((2, d)))


def draw(text, d, n_train, seed):
    """Inputs and one latent function; redrawn (next seed) until sign(f) has at least 30 % of
    each class among the first 100 points and overall (a prior draw can be almost constant)."""
    kernel = latent_kernel(text, d)
    n = n_train + N_TEST
    for attempt in range(100):
        rng = np.random.default_rng(seed + 7919 * attempt)
        X = rng.normal(size=(n, d))
        f = np.linalg.cholesky(kernel(X) + 1e-8 * np.eye(n)) @ rng.normal(size=n)
        if min(np.mean(f[:100] > 0), np.mean(f[:100] < 0), np.mean(f > 0), np.mean(f < 0)) >= 0.3:
            return X, f, rng
    raise RuntimeError(f"no balanced draw of {text}")


def labels(f, noise_fraction, rng):
    return np.where(f + np.sqrt(noise_fraction * np.var(f)) * rng.normal(size=f.size) > 0, 1, 0)


def recovery_run(index, snr, sizes, search="greedy", beam_width=2):
    text, d = STRUCTURES[index]
    X, f, rng = draw(text, d, max(sizes), 1000 + index)
    y = labels(f, NOISE[snr], rng)
    test = slice(max(sizes), None)
    truth = parse(text)
    out = []
    for n in sizes:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = CompositionalGPClassifier(search=search, beam_width=beam_width, random_state=0).fit(X[:n], y[:n])
            seconds = time.perf_counter() - start
            # the true structure, hyperparameters fitted: max_depth=1 over a grammar whose only start is the truth
            true = CompositionalGPClassifier(grammar=_Only(truth), max_depth=1, random_state=0).fit(X[:n], y[:n])
        out.append(
            {
                "structure": text,
                "D": d,
                "snr": snr,
                "n": n,
                "found": str(clf.structure_),
                "recovered": clf.structure_ == truth,
                # criterion of the found and of the true structure: a miss with truth_score > score is
                # a search failure (the criterion prefers the truth), otherwise the criterion's choice
                "score": clf.best_score_,
                "truth_score": true.best_score_,
                "accuracy": clf.score(X[test], y[test]),
                "kernel_rate": true.score(X[test], y[test]),
                "function_rate": float(np.mean((f[test] > 0).astype(int) == y[test])),
                "seconds": seconds,
            }
        )
    return out


class _Only(SumOfProductsGrammar):
    """A grammar whose initial set is one given structure (to fit the true kernel)."""

    def __init__(self, structure):
        super().__init__(base_kernels=("SE",))
        self.structure = structure

    def initial(self, n_features):
        return [self.structure]

    def expand(self, expr, n_features):
        return []


def recovery(args):
    tasks = [(i, snr) for snr in NOISE for i in range(len(STRUCTURES))]
    start = time.perf_counter()
    runs = Parallel(n_jobs=args.n_jobs)(
        delayed(recovery_run)(i, snr, args.sizes, args.search, args.beam_width) for i, snr in tasks
    )
    rows = [row for run in runs for row in run]
    search = "greedy" if args.search == "greedy" else f"beam (width {args.beam_width})"
    print(f"Structure recovery, bic_light, probit, {search} search "
          f"({time.perf_counter() - start:.0f} s on {args.n_jobs} workers)\n")
    print("| true structure | D | N | SNR 100: found | acc. / kernel rate / function rate | SNR 1: found | acc. / kernel rate / function rate |")
    print("|---|---|---|---|---|---|---|")
    for text, d in STRUCTURES:
        for n in args.sizes:
            cells = []
            for snr in NOISE:
                (row,) = [r for r in rows if r["structure"] == text and r["D"] == d and r["n"] == n and r["snr"] == snr]
                found = f"**{row['found']}**" if row["recovered"] else (
                    f"{row['found']} ({_miss(row)})"
                )
                cells += [found, f"{100 * row['accuracy']:.1f} / {100 * row['kernel_rate']:.1f} / "
                                 f"{100 * row['function_rate']:.1f} ({row['seconds']:.0f} s)"]
            print(f"| {text} | {d} | {n} | " + " | ".join(cells) + " |")
    print("\nRecovered (of 10):")
    for n in args.sizes:
        counts = {snr: sum(r["recovered"] for r in rows if r["n"] == n and r["snr"] == snr) for snr in NOISE}
        print(f"- N = {n}: " + ", ".join(f"{snr}: {c}/10" for snr, c in counts.items()))
    misses = [r for r in rows if not r["recovered"]]
    search_misses = sum(_miss(r) == "search" for r in misses)
    print(f"\nMisses: {len(misses)}, of which the criterion prefers the truth (search failures): {search_misses}")


def _miss(row):
    """``search`` when the true structure scores higher than the one found, else ``criterion``."""
    return "search" if row["truth_score"] > row["score"] + 1e-6 else "criterion"


def robust_run(rho, draw_index):
    text, d = "SE(0) + SE(1) + SE(2)", 3
    n = 300
    X, f, rng = draw(text, d, n, 2000 + draw_index)
    y = labels(f, NOISE["SNR 100"], rng)
    corrupted = y.copy()
    flip = rng.permutation(n)[: int(round(rho * n))]
    corrupted[flip] = 1 - corrupted[flip]
    out = {"rho": rho, "draw": draw_index}
    for likelihood in ("probit", "robust"):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = CompositionalGPClassifier(likelihood=likelihood, random_state=0).fit(X[:n], corrupted[:n])
        out[likelihood] = {
            "structure": str(clf.structure_),
            "recovered": clf.structure_ == parse(text),
            "accuracy": clf.score(X[n:], y[n:]),
            "epsilon": getattr(clf, "outlier_rate_", None),
            "seconds": time.perf_counter() - start,
        }
    return out


def robust(args):
    tasks = [(rho, k) for rho in (0.0, 0.05, 0.2) for k in range(args.draws)]
    start = time.perf_counter()
    runs = Parallel(n_jobs=args.n_jobs)(delayed(robust_run)(rho, k) for rho, k in tasks)
    print(f"Salt-and-pepper noise, SE1 + SE2 + SE3, D = 3, N = 300, SNR 100, bic_light "
          f"({time.perf_counter() - start:.0f} s on {args.n_jobs} workers)\n")
    print("| flipped | draw | probit: structure | acc. | robust: structure | acc. | ε (truth 2·flipped) |")
    print("|---|---|---|---|---|---|---|")
    for run in runs:
        p, r = run["probit"], run["robust"]
        print(f"| {100 * run['rho']:.0f} % | {run['draw']} | {p['structure']} | {100 * p['accuracy']:.1f} | "
              f"{r['structure']} | {100 * r['accuracy']:.1f} | {r['epsilon']:.3f} ({2 * run['rho']:.2f}) |")
    for rho in (0.0, 0.05, 0.2):
        part = [run for run in runs if run["rho"] == rho]
        print(f"- {100 * rho:.0f} % flipped: mean accuracy probit {100 * np.mean([r['probit']['accuracy'] for r in part]):.1f}, "
              f"robust {100 * np.mean([r['robust']['accuracy'] for r in part]):.1f}; "
              f"median ε {np.median([r['robust']['epsilon'] for r in part]):.3f} (truth {2 * rho:.2f}); "
              f"s per fit probit {np.mean([r['probit']['seconds'] for r in part]):.0f}, "
              f"robust {np.mean([r['robust']['seconds'] for r in part]):.0f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", choices=["recovery", "robust"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 500])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--search", choices=["greedy", "beam"], default="greedy")
    parser.add_argument("--beam-width", type=int, default=2)
    args = parser.parse_args()
    recovery(args) if args.experiment == "recovery" else robust(args)


if __name__ == "__main__":
    main()
