"""Sahani 2015: evidence, BIC, Laplace and LOO side by side on nested models, and ARD relevances.

Part 1 (criteria side by side). One data set from a known generating model: x ~ U(0, 10),
f ~ GP(0, SE + PER) with SE variance 1 and lengthscale 3, PER variance 0.5, lengthscale 1
and period 1.3, noise standard deviation 0.2; 100 training points and 200 held-out points
(drawn jointly with the training points). The family of models is nested, each one the
previous plus one additive term:

    SE  ⊂  SE + PER  ⊂  SE + PER + LIN  ⊂  SE + PER + LIN + M12  ⊂  SE + PER + LIN + M12 + RQ

Every kernel carries its own variance, so a model is its successor with the new term's
variance at zero: the nesting is real (up to the variance's lower bound), and the maximised
log evidence (lml) can only grow along the family. Each model is fitted once, by maximising
lml (``objective="lml"``), starting from its predecessor's optimum plus a small new term
(and the package's usual cold starts), then scored by every criterion on the training data:
lml = log p(y | X, θ̂), aic = lml − k, bic = lml − ½ k log n, the Laplace approximation
of the evidence integrated over the hyperparameters, log ∫ p(y | θ) p(θ) dθ, and its
floored variants (laplace_0 / laplace_aic / laplace_bic), map = lml + log p(θ̂), and the
closed-form leave-one-out log predictive density (loo). The reference is the held-out
log predictive density Σ log p(y*_i | x*_i, X, y, θ̂) of the 200 test points.

BIC and Laplace approximate one quantity, the log evidence with the hyperparameters
integrated out under the package's default hyperprior (``HyperPrior``). It is also
estimated directly by importance sampling (column "IS"): draws from a multivariate
Student-t (5 degrees of freedom) centred at θ̂ with the inverse Laplace Hessian as scale,
weights p(y | θ) p(θ) / q(θ); its Monte-Carlo standard error and the effective sample size
are printed. The "Occam factors" (each criterion minus lml) show how far each
approximation moves from the maximised likelihood.

Part 2 (ARD). x ~ U(0, 1)^5, f ~ GP(0, SE(x0) × SE(x1)) with lengthscales 0.25 and 0.5
(columns 2, 3 and 4 irrelevant), noise standard deviation 0.1, 150 points. The ARD model
SE(0) × SE(1) × ... × SE(4) is fitted by lml and its relevances (column range divided by
lengthscale, as ``describe`` reports them) are compared with the columns of the structure
the default search of ``CompositionalGPRegressor`` chooses.

The tables of both parts are for one draw (``--seed``); each part is then repeated on
``--repeats`` further draws, reporting only which model each criterion picks (part 1) and
which columns ARD and the search keep (part 2), so that one draw's story can be checked.
Everything runs on one core (n_jobs=1); about 4 minutes with the defaults.

Run:  python benchmarks/seed002_criteria_side_by_side.py [--seed 2] [--n-train 100]
      [--is-draws 4000] [--repeats 5] [--figure docs/_static/seed002_criteria_side_by_side.png]
      [--no-search]
"""

import argparse
import math
import time
import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp
from scipy.stats import multivariate_t
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, ExpSineSquared

from skgpsearch import CompositionalGPRegressor
from skgpsearch._engine._linalg import NumericalError
from skgpsearch.criteria import HyperPrior, get_criterion
from skgpsearch.criteria._laplace import laplace_log_evidence, log_posterior_hessian
from skgpsearch.grammar import Base, CompositionalGrammar, add
from skgpsearch.inspection import ard_relevances, describe
from skgpsearch.inspection._describe import IRRELEVANT_RELEVANCE
from skgpsearch.grammar import FixedStructureGrammar

NOISE_SD = 0.2
PERIOD = 1.3
#: The nested family: each model adds one base kernel on column 0 to the previous one.
ADDED_TERMS = ("SE", "PER", "LIN", "M12", "RQ")
TRUE_MODEL = 1  # SE + PER
CRITERIA = ("lml", "aic", "bic", "map", "laplace", "laplace_0", "laplace_aic", "laplace_bic", "loo")
#: Criteria on the log-evidence scale, whose difference from lml is an Occam factor.
EVIDENCE_LIKE = ("bic", "laplace", "laplace_0", "laplace_aic", "laplace_bic")

ARD_LENGTHSCALES = (0.25, 0.5)
ARD_COLUMNS = 5
ARD_NOISE_SD = 0.1


def fit_structure(structure, X, y, seed):
    model = CompositionalGPRegressor(grammar=FixedStructureGrammar(structure), max_depth=1, criterion="lml",
                                     objective="lml", n_jobs=1, random_state=seed)
    with warnings.catch_warnings():
        # optimiser notes on restarts that hit a bound; the value kept is the best start's
        warnings.simplefilter("ignore")
        return model.fit(X, y)


def draw_periodic(seed, n_train, n_test):
    kernel = ConstantKernel(1.0) * RBF(3.0) + ConstantKernel(0.5) * ExpSineSquared(1.0, PERIOD)
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 10.0, size=(n_train + n_test, 1))
    f = np.linalg.cholesky(kernel(X) + 1e-10 * np.eye(len(X))) @ rng.standard_normal(len(X))
    y = f + NOISE_SD * rng.standard_normal(len(X))
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def held_out_log_density(model, X_test, y_test):
    """Σ_i log p(y*_i | x*_i, training data, θ̂): pointwise predictive densities, noise included."""
    mean, std = model.predict(X_test, return_std=True)  # of a new observation: noise included
    var = std**2
    return float(np.sum(-0.5 * np.log(2 * np.pi * var) - 0.5 * (y_test - mean) ** 2 / var))


def log_prior_of(theta, means, sds):
    z = (theta - means) / sds
    return -0.5 * np.sum(z * z, axis=-1) - np.sum(np.log(sds)) - 0.5 * len(means) * math.log(2 * math.pi)


def integrated_evidence(model, X, y, n_draws, seed):
    """log ∫ p(y | θ) p(θ) dθ under the default HyperPrior: Laplace at the posterior mode, and importance sampling.

    The lml optimum θ̂ is not where the posterior p(θ | y) peaks when a term is superfluous (its
    variance runs to the lower bound, where the prior puts almost no mass), so the posterior
    mode is found first, from θ̂. Importance sampling then draws from a multivariate Student-t
    (5 degrees of freedom) centred at the mode with the inverse Hessian as scale.

    Returns (Laplace at the mode, IS estimate, its Monte-Carlo standard error, effective sample size).
    """
    objective, theta, shift = model._fitted_objective(X, y)
    means, sds = model._prior_moments(HyperPrior())
    precision = np.diag(1.0 / sds**2)

    def negative_log_posterior(t):
        try:
            value, gradient = objective(t, eval_gradient=True)
        except NumericalError:
            return np.inf, np.zeros_like(t)
        return -(value + log_prior_of(t, means, sds)), -(gradient - (t - means) / sds**2)

    mode = minimize(negative_log_posterior, theta, jac=True, method="L-BFGS-B").x
    laplace_at_mode = laplace_log_evidence(objective, mode, float(log_prior_of(mode, means, sds)), precision) + shift
    H = log_posterior_hessian(objective, mode, precision)
    # Where the likelihood is not concave even at the mode, the prior's curvature is the most the
    # posterior can be trusted to have.
    eigenvalues, vectors = np.linalg.eigh(H)
    eigenvalues = np.maximum(eigenvalues, 1.0 / np.max(sds) ** 2)
    proposal = multivariate_t(loc=mode, shape=(vectors / eigenvalues) @ vectors.T, df=5, seed=seed)
    draws = np.atleast_2d(proposal.rvs(size=n_draws))
    log_lik = np.empty(n_draws)
    for i, t in enumerate(draws):
        try:
            log_lik[i] = objective(t) + shift
        except NumericalError:  # a singular covariance matrix: the draw contributes nothing
            log_lik[i] = -np.inf
    log_w = log_lik + log_prior_of(draws, means, sds) - proposal.logpdf(draws)
    estimate = logsumexp(log_w) - math.log(n_draws)
    w = np.exp(log_w - np.max(log_w))
    ess = np.sum(w) ** 2 / np.sum(w**2)
    # delta method: the relative standard error of the mean weight is the s.e. of its log
    standard_error = np.std(w) / np.mean(w) / math.sqrt(n_draws)
    return float(laplace_at_mode), float(estimate), float(standard_error), float(ess)


def nested_family(X, y, seed):
    """Fitted models of the family, each started from its predecessor's optimum."""
    models, structure = [], None
    for kind in ADDED_TERMS:
        term = Base(kind, 0)
        structure = term if structure is None else add(models[-1].structure_, term)
        models.append(fit_structure(structure, X, y, seed))
    return models


#: Values closer than this (nats) are a tie, which goes to the smaller model: a superfluous term
#: whose variance went to its bound adds only optimiser noise to a criterion.
TIE = 0.05


def pick(values):
    """Index of the model a criterion chooses: the smallest one within TIE of the maximum."""
    values = np.asarray(values, dtype=float)
    return int(np.flatnonzero(values >= np.nanmax(values) - TIE)[0])


def fmt(value, width=9):
    return f"{value:{width}.1f}" if np.isfinite(value) else f"{'nan':>{width}}"


def score_family(seed, n_train, n_test, is_draws):
    """The fitted family on one draw and every model's scores (dict: column -> one value per model)."""
    X, y, X_test, y_test = draw_periodic(seed, n_train, n_test)
    models = nested_family(X, y, seed)
    scores = {c: [get_criterion(c)(m, X, y) for m in models] for c in CRITERIA}
    scores["test"] = [held_out_log_density(m, X_test, y_test) for m in models]
    evidence = [integrated_evidence(m, X, y, is_draws, seed) for m in models]
    scores["laplace@mode"] = [e[0] for e in evidence]
    scores["IS"] = [e[1] for e in evidence]
    return models, scores, evidence


def part_one(args):
    start = time.perf_counter()
    models, scores, evidence = score_family(args.seed, args.n_train, args.n_test, args.is_draws)
    names = [str(m.structure_.without_values()) for m in models]
    k = [m.n_hyperparameters_ for m in models]
    seconds = time.perf_counter() - start

    print(f"Part 1: nested models on one draw (seed {args.seed}) of SE + PER (lengthscale 3; period {PERIOD}), "
          f"noise sd {NOISE_SD}; n = {args.n_train} training, {args.n_test} held-out points ({seconds:.0f} s)")
    print("Fitted by maximising lml; values in nats, greater is better. k = hyperparameters (noise included); "
          "laplace@mode = Laplace at the posterior mode; IS = importance-sampled log evidence over the "
          f"hyperparameters; test = held-out log predictive density of the {args.n_test} points.")
    print()
    columns = ["k"] + list(CRITERIA) + ["laplace@mode", "IS", "test"]
    labels = ["SE"] + [f"+{term}" for term in ADDED_TERMS[1:]]
    print("| model | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    best = {c: pick(scores[c]) for c in scores}
    for i, name in enumerate(names):
        cells = [str(k[i])]
        for c in columns[1:]:
            cell = fmt(scores[c][i]).strip()
            cells.append(f"**{cell}**" if best[c] == i else cell)
        marker = " (truth)" if i == TRUE_MODEL else ""
        print(f"| {name}{marker} | " + " | ".join(cells) + " |")
    print()
    print(f"Bold: the model each criterion chooses (its maximum; models within {TIE} nats of it are a tie, "
          "which goes to the smaller model). The choice, its margin over the best model outside the tie, "
          "and the models tied with it:")
    for c in columns[1:]:
        values = np.asarray(scores[c], dtype=float)
        tied = values >= np.nanmax(values) - TIE
        margin = values[best[c]] - np.nanmax(np.where(tied, -np.inf, values))
        partners = [labels[j] for j in np.flatnonzero(tied) if j != best[c]]
        print(f"  {c:13s} {names[best[c]]:42s} {margin:+6.2f}" + (f"   tied: {', '.join(partners)}" if partners else ""))
    print()
    print("Occam factors: each evidence approximation minus lml (nats); IS is the quantity BIC and Laplace "
          "approximate.")
    print()
    occam_columns = list(EVIDENCE_LIKE) + ["laplace@mode", "IS"]
    print("| model | k | " + " | ".join(occam_columns) + " | IS s.e. | IS ESS | bic − IS | laplace − IS "
          "| laplace@mode − IS |")
    print("|---|---|" + "---|" * (len(occam_columns) + 5))
    for i, name in enumerate(names):
        lml = scores["lml"][i]
        cells = [fmt(scores[c][i] - lml).strip() for c in occam_columns]
        cells += [f"{evidence[i][2]:.2f}", f"{evidence[i][3]:.0f}"]
        cells += [fmt(scores[c][i] - scores["IS"][i]).strip() for c in ("bic", "laplace", "laplace@mode")]
        print(f"| {name} | {k[i]} | " + " | ".join(cells) + " |")
    print()
    increments = np.diff(scores["lml"])
    print("lml increments along the family (nested models: negative only by optimiser error): "
          + ", ".join(f"{d:+.2f}" for d in increments))
    print()
    print("Fitted hyperparameters (original units of x; variances on the normalised target scale):")
    for m in models:
        leaves = "; ".join(
            f"{leaf.name} " + ", ".join(f"{key} {' '.join(f'{v:.3g}' for v in np.ravel(value))}"
                                        for key, value in leaf.params.items())
            for leaf in m.structure_.leaves
        )
        print(f"  {m.structure_}: {leaves}; noise variance {m.noise_variance_:.3g}")
    print()
    return names, k, scores


def part_one_repeats(args, names):
    """How often each criterion picks each model over further draws (the table above is one draw)."""
    seeds = range(args.seed + 1, args.seed + 1 + args.repeats)
    start = time.perf_counter()
    picks = {}
    for seed in seeds:
        _, scores, _ = score_family(seed, args.n_train, args.n_test, args.repeat_is_draws)
        for c, values in scores.items():
            picks.setdefault(c, []).append(pick(values))
    print(f"Part 1 repeated on {args.repeats} further draws (seeds {seeds.start}-{seeds.stop - 1}, "
          f"{args.repeat_is_draws} IS draws per model, {time.perf_counter() - start:.0f} s): "
          f"number of draws in which each criterion picks each model (ties within {TIE} nats to the smaller)")
    print()
    labels = ["SE"] + [f"+{term}" for term in ADDED_TERMS[1:]]
    print("| criterion | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for c, chosen in picks.items():
        counts = np.bincount(chosen, minlength=len(names))
        cells = [f"**{n}**" if i == TRUE_MODEL else str(n) for i, n in enumerate(counts)]
        print(f"| {c} | " + " | ".join(cells) + " |")
    print()
    print(f"(bold: the generating model, {names[TRUE_MODEL]}; the column heads are the term each model adds)")
    print()


def draw_ard(seed, n):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, ARD_COLUMNS))
    kernel = RBF(list(ARD_LENGTHSCALES))
    relevant = X[:, : len(ARD_LENGTHSCALES)]
    f = np.linalg.cholesky(kernel(relevant) + 1e-10 * np.eye(n)) @ rng.standard_normal(n)
    return X, f + ARD_NOISE_SD * rng.standard_normal(n)


def searched_structure(X, y, seed):
    search = CompositionalGPRegressor(n_jobs=1, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return search.fit(X, y)


def part_two(args):
    X, y = draw_ard(args.seed, args.n_ard)
    ranges = np.ptp(X, axis=0)
    ard = CompositionalGrammar(base_kernels=("SE",)).standard_structures(ARD_COLUMNS)[0]
    start = time.perf_counter()
    model = fit_structure(ard, X, y, args.seed)
    ard_seconds = time.perf_counter() - start
    relevances = ard_relevances(model.structure_, ranges)[0][1]
    lengthscales = {leaf.columns[0]: leaf.params["lengthscale"] for leaf in model.structure_.leaves}
    print(f"Part 2: ARD on {args.n_ard} points, {ARD_COLUMNS} columns on [0, 1]; f ~ GP(SE(x0) × SE(x1)), "
          f"lengthscales {ARD_LENGTHSCALES}, noise sd {ARD_NOISE_SD}; columns 2-4 irrelevant (seed {args.seed})")
    print(f"ARD model {ard} fitted by lml in {ard_seconds:.1f} s: lml {model.log_marginal_likelihood_value_:.1f}, "
          f"bic {get_criterion('bic')(model, X, y):.1f}, k = {model.n_hyperparameters_}")
    searched = {}
    if not args.no_search:
        start = time.perf_counter()
        search = searched_structure(X, y, args.seed)
        for leaf in search.structure_.leaves:
            for c in leaf.columns:
                searched.setdefault(c, []).append(f"{leaf.name} ℓ {leaf.params.get('lengthscale', np.nan):.3g}")
        print(f"default search (criterion bic, {len(search.search_results_['structure'])} candidates, "
              f"{time.perf_counter() - start:.0f} s): {search.structure_.without_values()}, "
              f"bic {search.best_score_:.1f}, lml {search.log_marginal_likelihood_value_:.1f}, "
              f"k = {search.n_hyperparameters_}")
    print()
    print("| column | truth | ARD lengthscale | ARD relevance (range / lengthscale) | ARD verdict "
          "| in the searched structure |")
    print("|---|---|---|---|---|---|")
    for c in range(ARD_COLUMNS):
        truth = f"relevant (ℓ = {ARD_LENGTHSCALES[c]})" if c < len(ARD_LENGTHSCALES) else "irrelevant"
        verdict = "irrelevant" if relevances[c] < IRRELEVANT_RELEVANCE else "relevant"
        used = "(not run)" if args.no_search else ("; ".join(searched[c]) if c in searched else "no")
        print(f"| x{c} | {truth} | {lengthscales[c]:.3g} | {relevances[c]:.3g} | {verdict} | {used} |")
    print()
    print("describe(ARD model):")
    print(describe(model))
    print()
    if args.repeats == 0:
        return
    seeds = range(args.seed + 1, args.seed + 1 + args.repeats)
    start = time.perf_counter()
    rows = []
    for seed in seeds:
        X, y = draw_ard(seed, args.n_ard)
        fitted = fit_structure(ard, X, y, seed)
        flagged = {c for c, r in ard_relevances(fitted.structure_, np.ptp(X, axis=0))[0][1].items()
                   if r >= IRRELEVANT_RELEVANCE}
        used = set() if args.no_search else set(searched_structure(X, y, seed).structure_.columns)
        rows.append((seed, flagged, used))
    truth = set(range(len(ARD_LENGTHSCALES)))
    print(f"Part 2 repeated on {args.repeats} further draws ({time.perf_counter() - start:.0f} s): "
          "columns the ARD model calls relevant, and columns the searched structure uses")
    print()
    print("| seed | ARD: relevant columns | search: columns used |")
    print("|---|---|---|")
    for seed, flagged, used in rows:
        print(f"| {seed} | {sorted(flagged)} | {sorted(used) if not args.no_search else '(not run)'} |")
    print()
    print(f"exactly the relevant columns {sorted(truth)}: ARD in {sum(f == truth for _, f, _ in rows)} of "
          f"{len(rows)} draws, search in {sum(u == truth for _, _, u in rows)} of {len(rows)}")
    print()


def save_figure(path, k, scores):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no figure")
        return
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(16, 5))
    evidence_scale = ("lml", "aic", "bic", "map", "laplace", "laplace_0", "laplace_aic", "laplace_bic",
                      "laplace@mode", "IS")
    colours = dict(zip(evidence_scale, plt.get_cmap("tab10").colors))
    colours.update({"IS": "black", "test": "black", "loo": "tab:blue"})
    markers = dict(zip(evidence_scale, "osD^v<>phX"))

    def plot(axis, name, values):
        values = np.asarray(values, dtype=float)
        style = {"linewidth": 2.5} if name == "IS" else {}
        axis.plot(k, values, marker=markers.get(name, "o"), color=colours.get(name, "black"), label=name, **style)
        i = pick(values)
        axis.plot(k[i], values[i], marker="*", markersize=17, markerfacecolor="none", markeredgecolor="red",
                  markeredgewidth=1.5)

    for name in evidence_scale:
        plot(left, name, scores[name])
    left.set_ylabel("criterion on the training data (nats)")
    left.set_title("Evidence-scale criteria (red star: each one's maximum)")
    left.legend(fontsize=8, ncol=2)
    for name in ("bic", "laplace", "laplace_0", "laplace_bic", "laplace@mode"):
        middle.plot(k, np.asarray(scores[name]) - np.asarray(scores["IS"]), marker=markers[name],
                    color=colours[name], label=name)
    middle.axhline(0.0, color="black", linewidth=2.5, label="IS (reference)")
    middle.set_ylabel("approximation − importance-sampled log evidence (nats)")
    middle.set_title("Approximations of the log evidence")
    middle.legend(fontsize=8)
    plot(right, "loo", scores["loo"])
    plot(right, "test", scores["test"])
    right.lines[-2].set_label("held-out log predictive density (200 points)")
    right.lines[0].set_label("LOO log predictive density (training)")
    right.set_ylabel("log predictive density (nats)")
    right.set_title("Predictive criteria (red star: maximum)")
    right.legend(fontsize=8)
    labels = ["SE"] + [f"+{term}" for term in ADDED_TERMS[1:]]
    for axis in (left, middle, right):
        axis.set_xticks(k)
        axis.set_xticklabels([f"{kk}\n{label}" for kk, label in zip(k, labels)])
        axis.set_xlabel("hyperparameters k (each model adds one term)")
        axis.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"figure saved to {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--n-train", type=int, default=100)
    parser.add_argument("--n-test", type=int, default=200)
    parser.add_argument("--n-ard", type=int, default=150)
    parser.add_argument("--is-draws", type=int, default=4000, help="importance-sampling draws per model")
    parser.add_argument("--figure", default="docs/_static/seed002_criteria_side_by_side.png")
    parser.add_argument("--repeats", type=int, default=5, help="further draws of each part (choice counts)")
    parser.add_argument("--repeat-is-draws", type=int, default=1000, help="importance-sampling draws in the repeats")
    parser.add_argument("--no-search", action="store_true", help="skip the default structure search of part 2")
    args = parser.parse_args()
    names, k, scores = part_one(args)
    if args.repeats:
        part_one_repeats(args, names)
    part_two(args)
    if args.figure:
        save_figure(args.figure, k, scores)


if __name__ == "__main__":
    main()
