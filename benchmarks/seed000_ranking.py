"""Fischer et al. 2016, §3 (Fig. 3): which criterion ranks the data-generating kernel first?

Data: 1-D GP draws from a teacher kernel (SE, RQ, EXP = M12, PER; unit variance,
lengthscale 1, RQ alpha 0.5, PER period 2.5), inputs uniform on [0, 10], noise
standard deviation 0.1; N = 64 training points and 512 test points per draw.
Students: the same four kernels (+ noise), hyperparameters fitted by the log marginal
likelihood (``objective="lml"``) or by the closed-form LOO (``objective="loo"``).
The students are ranked by lml, loo, asc_bayes, asc_beta (J partitions, M = 2) and
by the test error (MSLL); the table gives the teacher's mean rank (1 = best) with a
95 % interval and how often it is ranked first; a second table gives, per teacher, how often
it is ranked first and which students beat it otherwise (with the median margin).

Run:  python benchmarks/seed000_ranking.py [--draws 32] [--partitions 256] [--n-jobs 2]
"""

import argparse
import collections
import time
import warnings

import numpy as np
from joblib import Parallel, delayed

from skgpsearch import CompositionalGPRegressor
from skgpsearch.criteria import ASCBayes, ASCBeta, get_criterion
from skgpsearch.kernels import M12, PER, RQ, SE, ActiveColumns

TEACHERS = {
    "SE": SE(variance=1.0, lengthscale=1.0),
    "RQ": RQ(variance=1.0, lengthscale=1.0, alpha=0.5),
    "M12": M12(variance=1.0, lengthscale=1.0),
    "PER": PER(variance=1.0, lengthscale=1.0, period=2.5),
}
STUDENTS = tuple(TEACHERS)
NOISE_SD = 0.1


def one_draw(teacher, seed, n_train, n_test, partitions):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, size=(n_train + n_test, 1))
    K = ActiveColumns(TEACHERS[teacher], [0])(X) + 1e-8 * np.eye(len(X))
    f = np.linalg.cholesky(K) @ rng.normal(size=len(X))
    y = f + NOISE_SD * rng.normal(size=len(X))
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    criteria = {
        "lml": get_criterion("lml"),
        "loo": get_criterion("loo"),
        "asc_bayes": ASCBayes(n_partitions=partitions),
        "asc_beta": ASCBeta(n_partitions=partitions),
    }
    out = {}
    for objective in ("lml", "loo"):
        scores = {name: [] for name in list(criteria) + ["test msll"]}
        for student in STUDENTS:
            model = CompositionalGPRegressor(base_kernels=(student,), max_depth=1, n_restarts=2,
                                             objective=objective, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X_train, y_train)
            for name, criterion in criteria.items():
                scores[name].append(criterion(model, X_train, y_train))
            scores["test msll"].append(get_criterion("msll")(model, X_test, y_test))
        teacher_index = STUDENTS.index(teacher)
        for name, values in scores.items():
            values = np.nan_to_num(np.asarray(values, dtype=float), nan=-np.inf)
            # rank 1 = best; ties share the better rank
            rank = 1 + int(np.sum(values > values[teacher_index]))
            best = int(np.argmax(values))
            # the winner when the teacher is not first, and by how much it beats the teacher
            margin = float(values[best] - values[teacher_index])
            out[(objective, name)] = (rank, STUDENTS[best], margin)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=32, help="draws per teacher")
    parser.add_argument("--partitions", type=int, default=256)
    parser.add_argument("--n-train", type=int, default=64)
    parser.add_argument("--n-test", type=int, default=512)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    start = time.perf_counter()
    tasks = [(t, 1000 * i + d) for i, t in enumerate(STUDENTS) for d in range(args.draws)]
    results = Parallel(n_jobs=args.n_jobs)(
        delayed(one_draw)(t, s, args.n_train, args.n_test, args.partitions) for t, s in tasks
    )
    print(f"Teacher rank among the students {STUDENTS} (1 = best), {args.draws} draws per teacher, "
          f"N = {args.n_train}, J = {args.partitions}, M = 2 ({time.perf_counter() - start:.0f} s)")
    keys = list(results[0])
    print()
    print("| hyperparameters by | criterion | " + " | ".join(f"teacher {t}" for t in STUDENTS) + " | all: mean rank [95 %] | ranked first |")
    print("|---|---|" + "---|" * len(STUDENTS) + "---|---|")
    for key in keys:
        cells = []
        for t in STUDENTS:
            ranks = np.array([r[key][0] for (teacher, _), r in zip(tasks, results) if teacher == t])
            cells.append(f"{ranks.mean():.2f}")
        ranks = np.array([r[key][0] for r in results])
        half = 1.96 * ranks.std(ddof=1) / np.sqrt(len(ranks))
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells)
              + f" | {ranks.mean():.2f} [{ranks.mean() - half:.2f}, {ranks.mean() + half:.2f}] | {100 * np.mean(ranks == 1):.0f} % |")

    print()
    print("Per teacher: % of draws with the teacher ranked first; when it is not, the students that beat it "
          "(count, median margin in the criterion's units)")
    print()
    print("| hyperparameters by | criterion | " + " | ".join(f"teacher {t}" for t in STUDENTS) + " |")
    print("|---|---|" + "---|" * len(STUDENTS))
    for key in keys:
        cells = []
        for t in STUDENTS:
            rows = [r[key] for (teacher, _), r in zip(tasks, results) if teacher == t]
            first = 100 * np.mean([rank == 1 for rank, _, _ in rows])
            winners = collections.defaultdict(list)
            for rank, winner, margin in rows:
                if rank > 1:
                    winners[winner].append(margin)
            text = ", ".join(f"{w} {len(m)} ({np.median(m):.2g})" for w, m in sorted(winners.items(), key=lambda i: -len(i[1])))
            cells.append(f"{first:.0f} %" + (f": {text}" if text else ""))
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
