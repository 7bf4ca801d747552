"""Sollich 2004, §3 and Fig. 2: learning curves of evidence maximisation under model mismatch.

Teacher: inputs x ~ U(0, 1); a GP with the paper's MB2 covariance C*(x, x') = a* e^(-b) (1 + b),
b = |x - x'| / l*, with a* = 1, l* = 0.1, and Gaussian output noise of variance σ*² = 0.1 (the
paper's "l* = σ*² = 0.1": σ*² is the noise variance of the training outputs, not an amplitude;
the amplitude a* = 1 is the one of its fixed student "equal to the teacher", Fig. 3). MB2 is the
Matérn 3/2 kernel; the package's M32 writes it (1 + √3 r) e^(-√3 r), r = |x - x'| / l, so the
teacher is M32 with l = √3 · 0.1, and the MB2 student's fitted l is divided by √3 below to be
on the paper's scale. The OU (M12) and RBF (SE) students use the paper's parameterisations.

Students: OU, MB2 and RBF, each a single base kernel with amplitude a, lengthscale l and noise
variance σ² fitted by evidence maximisation (``CompositionalGPRegressor`` with that one base
kernel and ``max_depth=1``: the structure M12(0), M32(0) or SE(0), fitted by the package's
multi-start L-BFGS on the log marginal likelihood); plus the OU student with the teacher's
values fixed (a = 1, l = σ² = 0.1), scikit-learn's ``GaussianProcessRegressor`` with
``optimizer=None``.

Faithfulness: ``normalize_y=False``, because the paper's students are zero-mean GPs on the raw
outputs (normalising would subtract the sample mean, a different model). The package's default
bounds are kept: noise variance in var(y) x [1e-6, 10], amplitude in var(y) x [1e-6, 1e4],
lengthscale in [½ smallest gap between inputs, 100 x input range]. The paper's degenerate
optima (σ² = 0 and l → ∞) then sit at a bound: σ² = 1e-6 var(y) interpolates the data as
σ² = 0 does, and l = 100 (a hundred times the input range) is the "essentially constant"
covariance. The paper's theory (thin lines) assumes periodic boundary conditions; the
simulations, like these, are on the interval.

Generalisation error: ε = mean over a midpoint grid of ``--test-points`` inputs on [0, 1] of
(posterior mean - teacher function)², the teacher function drawn jointly with the training
outputs (Cholesky of the teacher covariance on training and grid inputs, jitter 1e-8),
averaged over ``--draws`` data sets per n. The slope of log ε against log n is fitted by least
squares on the per-n means for n >= ``--slope-from``; its standard error is from a bootstrap
over the data sets of each n. Goal (issue 18): the slopes of the three fitted students within
0.1 of the Bayes-optimal -3/4 = -(r* - 1)/r*, r* = 4 for MB2.

Degenerate optima, counted per n and student: "at a bound" when the fitted value is within 1%
(|log value - log bound| < 0.01) of the package's bound: noise variance at its lower bound (the
model interpolates the noisy outputs), lengthscale at its upper bound (constant covariance:
a constant function plus noise) or lower bound (white noise on the data); amplitude at either
bound is counted apart. "Effectively" degenerate, whatever the bounds: σ² < 0.01 σ*²,
l > 10 (ten input ranges) or l below the median spacing of the inputs.

Before the experiment the script checks the package against scikit-learn on a small data set:
for each student, ``GaussianProcessRegressor(optimizer=None)`` with the package's fitted kernel
and noise must give the same posterior mean and log marginal likelihood; and the paper's MB2
formula must equal scikit-learn's Matern(nu=1.5, length_scale=√3 l); and scikit-learn's own
evidence maximisation (5 restarts) is printed next to the package's optimum.

Run:  python benchmarks/seed003_learning_curves.py [--draws 40] [--sizes 10 18 32 56 100 178 316 562 1000]
      [--restarts 1] [--slope-from 100] [--test-points 256] [--seed 0]
      [--output benchmarks/results/seed003_learning_curves.txt]
      [--figure docs/_static/seed003_learning_curves.png]
"""

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgpsearch import CompositionalGPRegressor

ROOT = Path(__file__).resolve().parents[1]
TEACHER_AMPLITUDE = 1.0
TEACHER_LENGTHSCALE = 0.1  # the paper's MB2 lengthscale (b = |x - x'| / l)
TEACHER_NOISE = 0.1
JITTER = 1e-8
SQRT3 = math.sqrt(3.0)
#: name in the tables -> (catalogue kind, scikit-learn kernel of unit amplitude, factor from the
#: package's lengthscale to the paper's)
STUDENTS = {
    "OU": ("M12", lambda l: Matern(length_scale=l, nu=0.5), 1.0),
    "MB2": ("M32", lambda l: Matern(length_scale=l, nu=1.5), 1.0 / SQRT3),
    "RBF": ("SE", lambda l: RBF(length_scale=l), 1.0),
}
FIXED = "OU fixed"
BOUND_TOL = 0.01  # in log units: within 1% of a bound


def mb2(x, z, lengthscale=TEACHER_LENGTHSCALE, amplitude=TEACHER_AMPLITUDE):
    """The paper's MB2 covariance a e^(-b) (1 + b), b = |x - z| / l, of 1-D inputs."""
    b = np.abs(x[:, None] - z[None, :]) / lengthscale
    return amplitude * np.exp(-b) * (1.0 + b)


def draw(n, grid, rng):
    """Training inputs and outputs, and the teacher function on the test grid (drawn jointly)."""
    x = rng.uniform(0.0, 1.0, size=n)
    points = np.concatenate([x, grid])
    K = mb2(points, points) + JITTER * np.eye(points.size)
    f = np.linalg.cholesky(K) @ rng.normal(size=points.size)
    y = f[:n] + math.sqrt(TEACHER_NOISE) * rng.normal(size=n)
    return x, y, f[n:]


def fit_student(kind, x, y, restarts, seed):
    model = CompositionalGPRegressor(base_kernels=(kind,), max_depth=1, normalize_y=False,
                                     n_restarts=restarts, random_state=seed, n_jobs=1)
    with warnings.catch_warnings():
        # the warnings (outliers of an interpolating fit, ...) are what this benchmark counts itself
        warnings.simplefilter("ignore")
        model.fit(x[:, None], y)
    return model


def fitted_values(model, scale):
    """(a, l on the paper's scale, σ², flags) of a fitted single-kernel model."""
    (leaf,) = model.structure_.leaves
    a, l, noise = leaf.params["variance"], leaf.params["lengthscale"], model.noise_variance_
    theta, bounds = model.kernel_.theta, model.kernel_.bounds
    names = [h.name.rsplit("__", 1)[-1] for h in model.kernel_.hyperparameters]
    at_low = dict(zip(names, np.abs(theta - bounds[:, 0]) < BOUND_TOL))
    at_high = dict(zip(names, np.abs(theta - bounds[:, 1]) < BOUND_TOL))
    x = np.sort(model.X_train_[:, 0])
    spacing = float(np.median(np.diff(x)))
    flags = {
        "noise_low": bool(at_low["noise_level"]),
        "l_high": bool(at_high["lengthscale"]),
        "l_low": bool(at_low["lengthscale"]),
        "a_bound": bool(at_low["variance"] or at_high["variance"]),
        "eff_noise": noise < 0.01 * TEACHER_NOISE,
        "eff_const": l * scale > 10.0,
        "eff_white": l * scale < spacing,
        # the package's own check (skgpsearch._diagnostics): any finding in the model's diagnostics_
        "diagnostics": bool(model.diagnostics_),
    }
    return a, l * scale, noise, flags


def run(n, seed, grid, restarts):
    rng = np.random.default_rng(seed)
    x, y, f_grid = draw(n, grid, rng)
    out = {}
    for name, (kind, _, scale) in STUDENTS.items():
        model = fit_student(kind, x, y, restarts, seed)
        eps = float(np.mean((model.predict(grid[:, None]) - f_grid) ** 2))
        out[name] = (eps,) + fitted_values(model, scale)
    fixed = GaussianProcessRegressor(ConstantKernel(TEACHER_AMPLITUDE, "fixed") * Matern(TEACHER_LENGTHSCALE, "fixed", nu=0.5),
                                     alpha=TEACHER_NOISE, optimizer=None, normalize_y=False).fit(x[:, None], y)
    eps = float(np.mean((fixed.predict(grid[:, None]) - f_grid) ** 2))
    out[FIXED] = (eps, TEACHER_AMPLITUDE, TEACHER_LENGTHSCALE, TEACHER_NOISE, {})
    return out


def check_against_sklearn(emit, restarts):
    """Independent checks: the package's posterior and evidence equal scikit-learn's; the teacher kernel."""
    rng = np.random.default_rng(12345)
    grid = np.linspace(0.0, 1.0, 101)
    mb2_sk = Matern(length_scale=SQRT3 * TEACHER_LENGTHSCALE, nu=1.5)(grid[:, None])
    emit(f"check: paper's MB2 vs sklearn Matern(nu=1.5, length_scale=√3·l): max |diff| = "
         f"{np.abs(mb2(grid, grid) - mb2_sk).max():.1e}")
    x, y, _ = draw(30, grid, rng)
    for name, (kind, sk_kernel, _) in STUDENTS.items():
        model = fit_student(kind, x, y, restarts, 0)
        (leaf,) = model.structure_.leaves
        reference = GaussianProcessRegressor(
            ConstantKernel(leaf.params["variance"], "fixed") * sk_kernel(leaf.params["lengthscale"]),
            alpha=model.noise_variance_, optimizer=None, normalize_y=False).fit(x[:, None], y)
        mean_diff = np.abs(model.predict(grid[:, None]) - reference.predict(grid[:, None])).max()
        lml_diff = abs(model.log_marginal_likelihood_value_ - reference.log_marginal_likelihood_value_)
        emit(f"check: {name} student ({kind}) on n=30 vs sklearn GaussianProcessRegressor, same kernel and noise: "
             f"max |posterior mean diff| = {mean_diff:.1e}, |log evidence diff| = {lml_diff:.1e}")
        if mean_diff > 1e-6 or lml_diff > 1e-6:
            raise AssertionError(f"{name}: the package's posterior disagrees with scikit-learn's")
        # scikit-learn's own evidence maximisation must not find a higher optimum than the package's
        searched = GaussianProcessRegressor(
            ConstantKernel(1.0, (1e-6, 1e4)) * sk_kernel(0.3) + WhiteKernel(0.1, (1e-7, 10.0)),
            n_restarts_optimizer=5, normalize_y=False, random_state=0).fit(x[:, None], y)
        emit(f"check: {name} log evidence maximised by the package {model.log_marginal_likelihood_value_:.4f}, "
             f"by sklearn (5 restarts) {searched.log_marginal_likelihood_value_:.4f}")


def slope(sizes, eps_by_n, from_n, rng, n_boot=500):
    """Least-squares slope of log(mean ε) on log n for n >= from_n, with its bootstrap standard error."""
    keep = [i for i, n in enumerate(sizes) if n >= from_n]
    logn = np.log([sizes[i] for i in keep])

    def fit(samples):
        return np.polyfit(logn, np.log([np.mean(s) for s in samples]), 1)[0]

    samples = [np.asarray(eps_by_n[i]) for i in keep]
    boot = [fit([s[rng.integers(0, s.size, s.size)] for s in samples]) for _ in range(n_boot)]
    return fit(samples), float(np.std(boot))


def figure(path, sizes, results, from_n, emit):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        emit("matplotlib is not installed: no figure (pip install matplotlib)")
        return
    colors = {"OU": "C0", "MB2": "C1", "RBF": "C2", FIXED: "C0"}
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    n = np.asarray(sizes, dtype=float)
    ax = axes[0, 0]
    for name in list(STUDENTS) + [FIXED]:
        eps = [np.mean([r[name][0] for r in results[s]]) for s in sizes]
        sem = [np.std([r[name][0] for r in results[s]], ddof=1) / math.sqrt(len(results[s])) for s in sizes]
        style = {"ls": "--", "marker": "s", "mfc": "none"} if name == FIXED else {"marker": "o"}
        label = "OU, fixed a = 1, l = σ² = 0.1" if name == FIXED else f"{name} student"
        ax.errorbar(n, eps, yerr=sem, color=colors[name], label=label, capsize=2, **style)
    anchor = np.mean([r["MB2"][0] for r in results[sizes[-1]]])
    ax.plot(n, anchor * (n / n[-1]) ** -0.75, "k:", label="∝ n^(-3/4)")
    ax.axvline(from_n, color="0.8", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="n", ylabel="generalisation error ε", title="ε (mean ± s.e.)")
    ax.legend(fontsize=8)
    for ax, (index, label, truth) in zip(axes.flat[1:], [(1, "amplitude a", TEACHER_AMPLITUDE),
                                                        (2, "lengthscale l (paper's scale)", TEACHER_LENGTHSCALE),
                                                        (3, "noise variance σ²", TEACHER_NOISE)]):
        for name in STUDENTS:
            values = [np.array([r[name][index] for r in results[s]]) for s in sizes]
            ax.plot(n, [np.median(v) for v in values], marker="o", color=colors[name], label=name)
            ax.fill_between(n, [np.percentile(v, 25) for v in values], [np.percentile(v, 75) for v in values],
                            color=colors[name], alpha=0.15, lw=0)
        ax.axhline(truth, color="k", ls=":", lw=1, label="teacher")
        ax.set(xscale="log", yscale="log", xlabel="n", ylabel=label, title=f"fitted {label} (median, quartiles)")
        ax.legend(fontsize=8)
    fig.suptitle("MB2 teacher (l* = σ*² = 0.1), students fitted by evidence maximisation (Sollich 2004, Fig. 2)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    emit(f"figure saved to {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=40, help="data sets per n")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 18, 32, 56, 100, 178, 316, 562, 1000])
    parser.add_argument("--restarts", type=int, default=1, help="random restarts per fit (n_restarts)")
    parser.add_argument("--slope-from", type=int, default=100, help="smallest n of the slope fit")
    parser.add_argument("--test-points", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "seed003_learning_curves.txt")
    parser.add_argument("--figure", type=Path, default=ROOT / "docs" / "_static" / "seed003_learning_curves.png")
    args = parser.parse_args()
    lines = []

    def emit(line=""):
        print(line, flush=True)
        lines.append(line)

    start = time.perf_counter()
    check_against_sklearn(emit, args.restarts)
    grid = (np.arange(args.test_points) + 0.5) / args.test_points
    results = {}
    for i, n in enumerate(args.sizes):
        tic = time.perf_counter()
        results[n] = [run(n, 100_000 * args.seed + 1000 * i + d, grid, args.restarts) for d in range(args.draws)]
        print(f"  n={n}: {time.perf_counter() - tic:.1f} s", flush=True)
    elapsed = time.perf_counter() - start

    emit()
    emit(f"Sollich 2004 Fig. 2: MB2 teacher (a* = 1, l* = 0.1, σ*² = 0.1), x ~ U(0, 1), {args.draws} data sets "
         f"per n, ε on a {args.test_points}-point grid, n_restarts={args.restarts}, seed={args.seed}; "
         f"{elapsed:.0f} s single-threaded")
    for name in list(STUDENTS) + [FIXED]:
        emit()
        title = ("OU student with fixed a = 1, l = σ² = 0.1" if name == FIXED
                 else f"{name} student ({STUDENTS[name][0]}), hyperparameters by evidence maximisation")
        emit(f"{title} (l on the paper's scale; medians over data sets)")
        emit()
        emit("| n | ε mean | ε s.e. | median a | median l | median σ² |")
        emit("|---|---|---|---|---|---|")
        for n in args.sizes:
            eps = np.array([r[name][0] for r in results[n]])
            a, l, s2 = (np.median([r[name][k] for r in results[n]]) for k in (1, 2, 3))
            emit(f"| {n} | {eps.mean():.4g} | {eps.std(ddof=1) / math.sqrt(eps.size):.2g} | {a:.3g} | {l:.3g} | {s2:.3g} |")

    emit()
    slope_sizes = [s for s in args.sizes if s >= args.slope_from]
    if len(slope_sizes) < 2:
        emit(f"No slope: fewer than two sizes n >= --slope-from {args.slope_from}.")
    else:
        emit(f"Slope of log ε on log n for n in [{min(slope_sizes)}, {max(slope_sizes)}] (least squares on "
             "the per-n means; ± bootstrap s.e. over data sets); goal: fitted students within 0.1 of -0.75")
        emit()
        emit("| student | slope | ± s.e. | |slope + 0.75| <= 0.1 |")
        emit("|---|---|---|---|")
        rng = np.random.default_rng(args.seed)
        for name in list(STUDENTS) + [FIXED]:
            eps = [[r[name][0] for r in results[n]] for n in args.sizes]
            value, se = slope(args.sizes, eps, args.slope_from, rng)
            verdict = "(fixed: -1/2 expected)" if name == FIXED else ("yes" if abs(value + 0.75) <= 0.1 else "NO")
            emit(f"| {name} | {value:.3f} | {se:.3f} | {verdict} |")

    emit()
    emit(f"Degenerate optima per n (of {args.draws}): at a bound of the package (within 1%): σ²@low = noise "
         "variance at its lower bound (interpolation), l@high = lengthscale at its upper bound (constant), "
         "l@low = at its lower bound (white noise), a@bd = amplitude at a bound; effectively: σ² < 0.01 σ*², "
         "l > 10, l < median input spacing; diagnostics_ = the fitted model's diagnostics_ is not empty "
         "(its own rules: a bound within 0.1 % of the log-range, a term acting as white noise or constant)")
    keys = [("noise_low", "σ²@low"), ("l_high", "l@high"), ("l_low", "l@low"), ("a_bound", "a@bd"),
            ("eff_noise", "σ²<0.001"), ("eff_const", "l>10"), ("eff_white", "l<spacing"),
            ("diagnostics", "diagnostics_")]
    for name in STUDENTS:
        emit()
        emit(f"{name} student")
        emit()
        emit("| n | " + " | ".join(label for _, label in keys) + " | any at a bound |")
        emit("|---|" + "---|" * (len(keys) + 1))
        totals = np.zeros(len(keys) + 1, dtype=int)
        for n in args.sizes:
            flags = [r[name][4] for r in results[n]]
            counts = [sum(f[k] for f in flags) for k, _ in keys]
            counts.append(sum(f["noise_low"] or f["l_high"] or f["l_low"] for f in flags))
            totals += counts
            emit(f"| {n} | " + " | ".join(str(c) for c in counts) + " |")
        emit("| all | " + " | ".join(str(c) for c in totals) + " |")

    emit()
    figure(args.figure, args.sizes, results, args.slope_from, emit)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"output saved to {args.output}")


if __name__ == "__main__":
    main()
