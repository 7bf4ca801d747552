"""CompositionalGPRegressor: search, recovery, determinism, parallel backends, sklearn contract."""

import pickle
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import WhiteKernel

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor, RepeatedRowsWarning
from skgpsearch._estimators._base import distinct_rows
from skgpsearch._search import _pipeline as pipeline_module
from skgpsearch.datasets import load_airline
from skgpsearch._search._regression import CROSS_VALIDATION_ROWS, NOISE_BOUNDS
from skgpsearch.grammar import CompositionalGrammar, FixedStructureGrammar, SumOfProductsGrammar, parse
from skgpsearch.kernels import to_kernel

from conftest import INPUT_CHECKS, estimator_checks


def cheap(**params):
    defaults = dict(base_kernels=("SE",), max_depth=1, n_restarts=0, random_state=0)
    defaults.update(params)
    return CompositionalGPRegressor(**defaults)


# the checks that fit on their largest data, and every check of the Student-t configuration, are slow;
# only the first configuration fits the baselines (they take 40 % of a check's fit) and runs the checks of
# input handling (the others share its validation); the Student-t one optimises on a subset too, a seventh
# of its fit time on the checks' largest data
@estimator_checks(
    fast=[cheap(), cheap(max_depth=2, grammar="sum_of_products", criterion="aic", model_averaging=3,
                         baseline_models=False)],
    slow=[cheap(likelihood="student_t", model_averaging=2, max_optimize_samples=40, baseline_models=False)],
    slow_checks={"check_regressors_train", "check_regressor_data_not_an_array"},
    first_only=INPUT_CHECKS,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def draw_from(structure, X, noise, seed):
    """A sample of a GP with the given structure (unit-scale hyperparameters) plus noise."""
    kernel = to_kernel(parse(structure))
    K = kernel(X) + 1e-8 * np.eye(len(X))
    r = np.random.default_rng(seed)
    f = np.linalg.cholesky(K) @ r.normal(size=len(X))
    return f + np.sqrt(noise) * r.normal(size=len(X)), f


@pytest.fixture(scope="module")
def additive_interaction_draw():
    X = np.random.default_rng(0).uniform(-2, 2, size=(300, 3))
    y, f = draw_from("SE(0) + SE(1) * SE(2)", X, noise=0.01, seed=1)
    return X, y, f


@pytest.fixture(scope="module")
def additive_interaction_data(additive_interaction_draw):
    X, y, _ = additive_interaction_draw
    return X, y


@pytest.mark.slow
def test_recovers_a_known_structure(additive_interaction_draw):
    X, y, f = additive_interaction_draw
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=3, n_restarts=1, random_state=0, n_jobs=2)
    model.fit(X, y)
    assert model.structure_ == parse("SE(0) + SE(1) * SE(2)")
    assert model.search_stop_reason_ in ("no improvement", "max_depth reached")
    # the posterior mean recovers the noise-free function (noise variance 0.01)
    assert np.mean((model.predict(X) - f) ** 2) < 0.01
    assert model.noise_variance_ == pytest.approx(0.01, rel=0.3)


@pytest.mark.slow  # over 5 s on 2 cores
def test_search_results_layout_and_cache(additive_interaction_data):
    X, y = additive_interaction_data
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=2, n_restarts=0, random_state=0).fit(X, y)
    results = model.search_results_
    keys = {"structure", "depth", "parent", "criterion", "log_marginal_likelihood",
            "n_hyperparameters", "fit_time", "status", "message"}
    assert keys <= set(results)
    assert len({len(v) for v in results.values()}) == 1
    # the cache: no canonical structure fitted twice
    assert len(set(results["structure"])) == len(results["structure"])
    # best_score_ is the chosen structure's criterion (stacking chose it, not necessarily the best criterion),
    # and it is BIC on the log-evidence scale
    chosen = results["structure"].index(str(model.structure_))
    assert results["criterion"][chosen] == pytest.approx(model.best_score_, rel=1e-9)
    assert model.best_score_ == pytest.approx(
        model.log_marginal_likelihood_value_ - 0.5 * model.n_hyperparameters_ * np.log(len(y))
    )
    assert model.n_hyperparameters_ == model.structure_.n_hyperparameters + 1
    assert results["parent"][0] is None and results["depth"][0] == 1
    assert all(p is not None for p, d in zip(results["parent"], results["depth"]) if d == 2)


@pytest.mark.slow  # over 5 s on 2 cores
def test_same_random_state_same_results_for_any_n_jobs(additive_interaction_data):
    X, y = additive_interaction_data
    X, y = X[:120], y[:120]
    params = dict(base_kernels=("SE", "LIN"), max_depth=2, n_restarts=2, random_state=3)
    one = CompositionalGPRegressor(n_jobs=1, **params).fit(X, y)
    two = CompositionalGPRegressor(n_jobs=2, **params).fit(X, y)
    assert one.structure_ == two.structure_
    assert one.search_results_["structure"] == two.search_results_["structure"]
    np.testing.assert_array_equal(one.search_results_["criterion"], two.search_results_["criterion"])
    np.testing.assert_array_equal(one.predict(X[:5]), two.predict(X[:5]))


@pytest.mark.slow  # over 5 s on 2 cores
def test_runs_unchanged_on_a_dask_cluster(additive_interaction_data):
    distributed = pytest.importorskip("dask.distributed")
    X, y = additive_interaction_data
    X, y = X[:80], y[:80]
    params = dict(base_kernels=("SE",), max_depth=2, n_restarts=1, random_state=0, n_jobs=2)
    local = CompositionalGPRegressor(**params).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            with joblib.parallel_config(backend="dask"):
                remote = CompositionalGPRegressor(**params).fit(X, y)
    assert remote.structure_ == local.structure_
    assert remote.search_results_["structure"] == local.search_results_["structure"]
    # threads of a dask worker may align arrays differently: equal up to rounding
    np.testing.assert_allclose(remote.search_results_["criterion"], local.search_results_["criterion"], rtol=1e-12)


@pytest.mark.slow  # starting the cluster's processes takes most of its time
def test_runs_identically_on_a_cluster_of_worker_processes(additive_interaction_data):
    distributed = pytest.importorskip("dask.distributed")
    X, y = additive_interaction_data
    X, y = X[:80], y[:80]
    params = dict(base_kernels=("SE",), max_depth=2, n_restarts=1, random_state=0)
    local = CompositionalGPRegressor(**params, n_jobs=1).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            with joblib.parallel_config(backend="dask"):
                remote = CompositionalGPRegressor(**params, n_jobs=-1).fit(X, y)
    assert remote.search_results_["structure"] == local.search_results_["structure"]
    # another process: BLAS limited to one thread there too, so the same sums in the same order
    np.testing.assert_allclose(remote.search_results_["criterion"], local.search_results_["criterion"], rtol=1e-12)
    np.testing.assert_allclose(remote.predict(X[:5]), local.predict(X[:5]), rtol=1e-10)


def test_a_worker_task_carries_the_structure_not_the_data():
    # joblib's dask backend scatters the large arguments (X, y) once per level; the fitter
    # itself is sent with every task, so it must not hold the training data
    import pickle

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(2000, 3)), rng.normal(size=2000)
    for criterion in ("bic", "lml", "aic"):
        model = CompositionalGPRegressor(criterion=criterion, approximation="exact")
        fitter = model._model_fitter(X, y, model._criterion()).candidate_fitter
        assert len(pickle.dumps(fitter)) < 0.05 * X.nbytes, criterion


@pytest.mark.slow  # over 5 s on 2 cores
def test_periodic_structure_on_mauna_loa():
    from skgpsearch.datasets import load_mauna_loa

    X, y = load_mauna_loa(return_X_y=True, n_samples=120)
    model = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), max_depth=2, random_state=0).fit(X, y)
    periods = [leaf.params["period"] for leaf in model.structure_.leaves if leaf.name == "PER"]
    assert periods and periods[0] == pytest.approx(1.0, rel=0.01)  # one year


def test_a_weekly_cycle_in_days_sampled_at_random():
    # a fifth of the days of three years, in years: the median gap (4 days) is over half a week, so a
    # period bound of twice the median gap would hide the cycle; the days' grid shows it
    rng = np.random.default_rng(3)
    days = np.sort(rng.choice(3 * 365, size=200, replace=False))
    assert np.median(np.diff(days)) == 4
    weekly = np.array([0.0, 1.0, 1.5, 1.2, 0.8, -2.0, -2.5])

    def series(d):
        return 10 + weekly[d % 7]

    X, y = (1990 + days / 365.0)[:, None], series(days) + 0.3 * rng.normal(size=days.size)
    model = CompositionalGPRegressor(base_kernels=("SE", "PER"), max_depth=1, random_state=0).fit(X, y)
    periods = [leaf.params["period"] for leaf in model.structure_.leaves if leaf.name == "PER"]
    assert periods and periods[0] * 365 == pytest.approx(7.0, rel=0.005)
    ahead = np.arange(3 * 365, 3 * 365 + 28)  # the next four weeks
    error = model.predict((1990 + ahead / 365.0)[:, None]) - series(ahead)
    assert np.sqrt(np.mean(error**2)) < 0.3  # the cycle's spread is 1.4, the noise's 0.3


def test_prediction_matches_sklearn_with_the_fitted_kernel(additive_interaction_data):
    X, y = additive_interaction_data
    X, y = X[:100], y[:100]
    # one model, not a stacked mixture of finalists: its predictions are those of kernel_
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=2, n_restarts=0, random_state=0,
                                     selection="criterion").fit(X, y)
    # the GP sees the table as warp_inputs="auto" left it (warped or not); predict treats new rows the same way
    warp = model._model_inputs
    reference = GaussianProcessRegressor(model.kernel_, optimizer=None, alpha=0.0, normalize_y=True).fit(warp(X), y)
    Xt = np.random.default_rng(5).uniform(-2, 2, size=(20, 3))
    mean, std = model.predict(Xt, return_std=True)
    np.testing.assert_allclose(mean, reference.predict(warp(Xt)), rtol=1e-8, atol=1e-10)
    # like scikit-learn's with the WhiteKernel of kernel_, the default std is that of a new observation
    _, ref_std = reference.predict(warp(Xt), return_std=True)
    np.testing.assert_allclose(std, ref_std, rtol=1e-6)
    _, ref_cov = reference.predict(warp(Xt), return_cov=True)
    _, cov = model.predict(Xt, return_cov=True)
    np.testing.assert_allclose(cov, ref_cov, rtol=1e-6, atol=1e-10)
    # without the noise: the latent f's, the noise variance less
    latent_mean, latent_std = model.predict(Xt, return_std=True, include_noise=False)
    np.testing.assert_array_equal(latent_mean, mean)
    np.testing.assert_allclose(latent_std**2 + model.noise_variance_, std**2, rtol=1e-8)
    assert np.all(latent_std < std)
    _, latent_cov = model.predict(Xt, return_cov=True, include_noise=False)
    np.testing.assert_allclose(np.diag(latent_cov), latent_std**2, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(cov - latent_cov, model.noise_variance_ * np.eye(len(Xt)), atol=1e-10)
    samples = model.sample_y(Xt, n_samples=4000, random_state=0)
    assert samples.shape == (20, 4000)
    np.testing.assert_allclose(samples.mean(axis=1), mean, atol=4 * std.max() / np.sqrt(4000) + 1e-9)
    # sample_y draws noise-free functions: their spread is the latent std's
    np.testing.assert_allclose(samples.std(axis=1), latent_std, rtol=0.1)
    with pytest.raises(ValueError, match="At most one"):
        model.predict(Xt, return_std=True, return_cov=True)


def test_log_marginal_likelihood_methods(additive_interaction_data):
    X, y = additive_interaction_data
    X, y = X[:80], y[:80]
    model = cheap(max_depth=2).fit(X, y)
    theta = np.append(model.kernel_.k1.theta, np.log(model.kernel_.k2.noise_level))
    assert model.log_marginal_likelihood(theta) == pytest.approx(model.log_marginal_likelihood_value_, rel=1e-9)
    value, grad = model.log_marginal_likelihood(theta, eval_gradient=True)
    assert grad.shape == theta.shape
    assert model.log_marginal_likelihood_on(X, y) == pytest.approx(model.log_marginal_likelihood_value_)
    # on other data: the density of those targets under the fitted hyperparameters
    other = model.log_marginal_likelihood_on(X[:40], y[:40])
    assert np.isfinite(other) and other != pytest.approx(model.log_marginal_likelihood_value_)


def test_callable_criterion(additive_interaction_data):
    X, y = additive_interaction_data
    X, y = X[:80], y[:80]
    # (selection by the criterion: best_score_ is then the criterion of the one model that predicts)
    model = cheap(max_depth=2, criterion=lambda est, X_, y_: est.score(X_, y_), selection="criterion").fit(X, y)
    assert model.best_score_ == pytest.approx(model.score(X, y))


@pytest.mark.parametrize("n_jobs", [1, pytest.param(2, marks=pytest.mark.slow)])  # (worker processes start in 5 s)
def test_an_error_in_a_criterion_surfaces_as_itself(additive_interaction_data, n_jobs):
    """Not "every candidate failed": the user sees the criterion's own error."""
    def broken(estimator, X, y):
        return 1 / 0

    X, y = additive_interaction_data
    with pytest.raises(ZeroDivisionError) as raised:
        cheap(max_depth=1, criterion=broken, n_jobs=n_jobs).fit(X[:40], y[:40])
    if hasattr(raised.value, "add_note"):
        assert "raised by the criterion broken" in " ".join(getattr(raised.value, "__notes__", []))


def test_pandas_feature_names(additive_interaction_data):
    pd = pytest.importorskip("pandas")
    X, y = additive_interaction_data
    frame = pd.DataFrame(X[:60], columns=["age", "bmi", "dose"])
    model = cheap().fit(frame, y[:60])
    assert list(model.feature_names_in_) == ["age", "bmi", "dose"]
    assert model.structure_.to_string(model.feature_names_in_).startswith("SE(")


def test_clone_and_pickle_round_trips(additive_interaction_data):
    X, y = additive_interaction_data
    X, y = X[:60], y[:60]
    model = cheap(max_depth=2).fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    refit = clone(model).fit(X, y)
    np.testing.assert_array_equal(refit.predict(X), model.predict(X))
    assert refit.structure_ == model.structure_


def test_verbose_prints_one_line_per_depth(additive_interaction_data, capsys):
    X, y = additive_interaction_data
    model = cheap(max_depth=2, verbose=1).fit(X[:60], y[:60])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[skgpsearch]")]
    depths = [line for line in lines if line.startswith("[skgpsearch] depth")]
    assert len(depths) == len(model.search_path_)
    assert "depth 1" in depths[0] and "bic=" in depths[0] and "candidates" in depths[0]
    # then the explore stage's cost, one line on the finalists (each with its criterion and held-out density,
    # and the selected one) and the cost of the finalists and selection
    assert lines[-3].startswith("[skgpsearch] explore stage done: ") and "likelihood evaluations" in lines[-3]
    assert lines[-2].startswith("[skgpsearch] finalists (selected by stacking: ")
    assert all(f"{s}  criterion=" in lines[-2] for s in model.finalists_["structure"])
    total = sum(model.search_results_["n_evaluations"])
    assert lines[-1].startswith("[skgpsearch] finalists and selection: ")
    assert f"the whole search {total} likelihood evaluations" in lines[-1]


def test_budgets_keep_what_was_found(additive_interaction_data):
    X, y = additive_interaction_data
    X, y = X[:60], y[:60]
    # the spent candidate budget is said (it was silent: no finalists, no baselines, and no word)
    with pytest.warns(ConvergenceWarning, match=r"reached max_candidates=4 at depth \d: .*no baselines compared"):
        model = cheap(max_depth=3, max_candidates=4).fit(X, y)
    assert len(model.search_results_["structure"]) == 4
    assert model.search_stop_reason_ == "candidate budget reached"
    # the warning names the option and where it went (it had said "it had 1e-06 s of time_budget", the floor
    # MIN_SEARCH_BUDGET, a figure the user never gave)
    with pytest.warns(ConvergenceWarning, match=r"The time budget \(time_budget\) was spent before the search began") as caught:
        timed = cheap(max_depth=3, time_budget=1e-9).fit(X, y)
    # ... at the caller's fit, not at a line of the package
    assert {w.filename for w in caught if issubclass(w.category, ConvergenceWarning)} == {__file__}
    # a budget too short for even the first level: one ARD kernel (fitted before the search, on two or more
    # columns) and the search's first base kernel, fitted; no finalist fits
    assert [str(s) for s in timed.search_results_["structure"]] == ["SE(0)", "SE(0) * SE(1) * SE(2)"]
    assert timed.search_stop_reason_.startswith("time budget reached")
    assert "finalist fits left out" in timed.search_stop_reason_
    assert timed.predict(X[:3]).shape == (3,)
    # a first level thinned by cheap scores: the screened-out records are no fits, the first batch still goes
    with pytest.warns(ConvergenceWarning, match="time budget"):
        screened = cheap(base_kernels=("SE", "LIN"), max_depth=3, max_fits_per_depth=1, time_budget=1e-9).fit(X, y)
    statuses = list(screened.search_results_["status"])
    assert "screened out" in statuses and statuses.count("ok") >= 1
    assert screened.predict(X[:3]).shape == (3,)


@pytest.mark.slow  # over 3 s on 2 cores
def test_a_time_budget_well_above_the_searchs_time_leaves_it_as_it_is():
    # a 100 x 2 table: the unbounded search takes about a second; a budget of three times that plus a second
    # must buy the same search (its reserve for the finalists had held back 4-9x what they took, and the
    # search stopped at depth 1 with 0.3 s of a 5 s budget spent)
    import time

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, (100, 2))
    y = np.sin(2 * X[:, 0]) * X[:, 1] + 0.1 * rng.normal(size=100)
    start = time.perf_counter()
    free = CompositionalGPRegressor(random_state=0, n_jobs=1).fit(X, y)
    seconds = time.perf_counter() - start
    bounded = CompositionalGPRegressor(random_state=0, n_jobs=1, time_budget=3.0 * seconds + 1.0).fit(X, y)
    assert bounded.search_stop_reason_ == free.search_stop_reason_
    # with one ARD kernel fitted before the search (under any time budget, on two or more columns)
    results = bounded.search_results_
    first = ["before the search" in message for message in results["message"]]
    assert [str(s) for s, f in zip(results["structure"], first) if f] == ["SE(0) * SE(1)"]
    assert [s for s, f in zip(results["structure"], first) if not f] == free.search_results_["structure"]
    assert bounded.best_score_ == pytest.approx(free.best_score_)


@pytest.mark.parametrize("criterion, option, expected", [
    ("bic", "auto", 1.0), ("lml", "auto", 1.0), ("aic", "auto", 1.0),
    # units the estimator cannot know: a squared error, a user's score
    ("loo_mse", "auto", 0.0), (lambda est, X_, y_: est.log_marginal_likelihood_value_, "auto", 0.0),
    ("bic", 0.0, 0.0), ("loo_mse", 2.5, 2.5),
])
def test_min_improvement_auto_is_one_nat_only_for_criteria_in_nats(additive_interaction_data, search_settings,
                                                                   criterion, option, expected):
    X, y = additive_interaction_data
    cheap(criterion=criterion, min_improvement=option).fit(X[:30], y[:30])
    assert [settings.min_improvement for settings in search_settings] == [expected]


@pytest.mark.parametrize("n_columns, criterion, option, expected", [
    (3, "bic", "auto", True), (3, "aic", "auto", True),
    # a series, a criterion in unknown units, a number given
    (1, "bic", "auto", False), (3, "loo_mse", "auto", False), (3, "bic", 1.0, False),
])
def test_auto_min_improvement_asks_a_tables_depths_for_their_multiplicity(additive_interaction_data, search_settings,
                                                                        n_columns, criterion, option, expected):
    X, y = additive_interaction_data
    cheap(criterion=criterion, min_improvement=option).fit(X[:30, :n_columns], y[:30])
    assert [settings.multiplicity_penalty for settings in search_settings] == [expected]


def test_the_warp_decision_counts_against_the_time_budget(additive_interaction_data, monkeypatch):
    import time

    import skgpsearch._estimators._regressor as regressor_module

    def slow_decision(X, X_warped, y, seed, n_jobs=None):
        time.sleep(1.0)
        return 5.0

    monkeypatch.setattr(regressor_module, "regression_warping_evidence_gain", slow_decision)
    X, y = additive_interaction_data
    X, y = np.exp(X[:60]), y[:60]  # skewed columns: "auto" asks the (slow) evidence test
    with pytest.warns(ConvergenceWarning, match="time budget"):
        model = cheap(max_depth=3, time_budget=0.5).fit(X, y)
    # the decision took the whole budget: one ARD kernel and the search's first base kernel only, and the warp
    # is kept
    assert model.input_transformer_ is not None and model.input_transformer_.evidence_gain_ == 5.0
    assert len(model.search_results_["structure"]) == 2
    assert model.search_stop_reason_.startswith("time budget reached")


def test_sum_of_products_grammar_and_grammar_objects(additive_interaction_data):
    X, y = additive_interaction_data
    with pytest.warns(UserWarning, match="base_kernels is ignored"):
        model = cheap(max_depth=2, grammar=SumOfProductsGrammar(max_terms=1)).fit(X[:60], y[:60])
    assert all(parse(s).n_terms == 1 for s in model.search_results_["structure"])


def test_sklearn_kernel_instances_as_base_kernels(additive_interaction_data):
    from sklearn.gaussian_process.kernels import RBF, Matern

    X, y = additive_interaction_data
    model = cheap(base_kernels=[RBF(), Matern(nu=1.5)]).fit(X[:50], y[:50])
    searched = [s for s, m in zip(model.search_results_["structure"], model.search_results_["message"])
                if not m.startswith("baseline")]
    assert {parse(s).leaves[0].name for s in searched} == {"SE", "M32"}
    with pytest.raises(ValueError, match="not to one base kernel"):
        cheap(base_kernels=[RBF() + RBF()]).fit(X[:50], y[:50])


@pytest.mark.slow
def test_default_on_one_column_finds_noise_that_grows_along_the_input():
    # y = 2x + noise with standard deviation 0.3 x on [1, 10]: at x = 9.5 the noise is 6.3 times that at 1.5
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(1.0, 10.0, 150))
    y = 2.0 * x + rng.normal(0.0, 0.3 * x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CompositionalGPRegressor(max_depth=2, random_state=0).fit(x[:, np.newaxis], y)
    assert any(leaf.kind.white_noise for leaf in model.structure_.leaves), model.structure_
    _, std = model.predict(np.array([[1.5], [9.5]]), return_std=True)
    # a model with one noise level predicts nearly equal spreads (their ratio near 1)
    assert 3.5 < std[1] / std[0] < 12.0


def test_noise_that_varies_along_the_input_keeps_a_constant_floor(monkeypatch):
    # y = 2x + noise with standard deviation 0.3 |x - 4|: the LIN * WN term vanishes at its offset near 4
    import skgpsearch._search._exact_fitter as exact_fitter_module
    from skgpsearch.grammar import FixedStructureGrammar, parse

    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(1.0, 10.0, 150))[:, np.newaxis]
    y = 2.0 * x[:, 0] + rng.normal(0.0, 0.3 * np.abs(x[:, 0] - 4.0))
    share = exact_fitter_module.VARYING_NOISE_FLOOR
    floor = np.sqrt(share * np.var(y))

    def spread(noise_floor):
        monkeypatch.setattr(exact_fitter_module, "VARYING_NOISE_FLOOR", noise_floor)
        model = CompositionalGPRegressor(grammar=FixedStructureGrammar(parse("LIN(0) + LIN(0) * WN")), max_depth=1,
                                         random_state=0).fit(x, y)
        return model.predict(np.array([[4.0], [9.5]]), return_std=True)[1]

    unfloored = spread(0.0)
    assert unfloored[0] < 0.5 * floor  # nearly certain of a new row where its noise term vanishes
    floored = spread(share)
    assert floored[0] >= 0.99 * floor
    assert 0.8 < floored[1] < 3.2  # the truth there: 1.65


def test_automatic_base_kernels_depend_on_the_columns(additive_interaction_data):
    X, y = additive_interaction_data
    kinds = lambda model: {parse(s).leaves[0].name for s, d, m in zip(model.search_results_["structure"],
                                                                       model.search_results_["depth"],
                                                                       model.search_results_["message"])
                           if d == 1 and not m.startswith("baseline")}
    table = CompositionalGPRegressor(max_depth=1, n_restarts=0, random_state=0).fit(X[:60], y[:60])
    series = CompositionalGPRegressor(max_depth=1, n_restarts=0, random_state=0).fit(X[:60, :1], y[:60])
    assert kinds(table) == {"SE"} and kinds(series) == {"SE", "RQ", "PER", "LIN", "WN"}
    # explicit kernels are kept on a table, and a Grammar instance next to them warns that they are ignored
    explicit = CompositionalGPRegressor(base_kernels=("SE", "PER"), max_depth=1, n_restarts=0, random_state=0)
    assert kinds(explicit.fit(X[:60], y[:60])) == {"SE", "PER"}
    with pytest.warns(UserWarning, match="base_kernels is ignored"):
        explicit.set_params(grammar=SumOfProductsGrammar()).fit(X[:40], y[:40])


@pytest.mark.slow
def test_the_series_default_searches_change_operators_and_finds_a_level_change():
    # a level that drops by 3 at t = 6 of 10 (90 points): a change, not a smooth trend
    rng = np.random.default_rng(3)
    t = np.linspace(0.0, 10.0, 90)
    y = np.where(t > 6.0, -3.0, 0.0) + 0.1 * rng.normal(size=t.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CompositionalGPRegressor(max_depth=2, random_state=0).fit(t[:, np.newaxis], y)
        plain = CompositionalGPRegressor(max_depth=2, random_state=0, change_operators=None)
        plain.fit(t[:, np.newaxis], y)
    changes = lambda m: [s for s in m.search_results_["structure"] if s.startswith(("CP(", "CW("))]
    assert changes(model) and not changes(plain)
    assert str(model.structure_).startswith(("CP(", "CW(")), model.structure_
    locations = [v for k, v in model.kernel_.get_params().items() if k.endswith("location")]
    assert any(abs(location - 6.0) < 1.0 for location in locations), locations
    mean = model.predict(np.array([[5.0], [7.0]]))
    assert mean[0] - mean[1] == pytest.approx(3.0, abs=0.3)


def test_change_operators_apply_to_a_table_only_when_asked(additive_interaction_data):
    X, y = additive_interaction_data
    changes = lambda m: [s for s in m.search_results_["structure"] if "CP(" in s or "CW(" in s]
    table = CompositionalGPRegressor(max_depth=2, n_restarts=0, random_state=0, max_fits_per_depth=4)
    assert not changes(table.fit(X[:40], y[:40]))
    asked = table.set_params(change_operators=["CP"]).fit(X[:40], y[:40])
    assert changes(asked) and not [s for s in changes(asked) if "CW(" in s]


def test_change_operators_that_cannot_apply_are_refused_or_warned():
    X = np.linspace(0.0, 5.0, 30)[:, np.newaxis]
    y = np.sin(X[:, 0])
    with pytest.raises(ValueError, match="needs grammar='compositional'"):
        cheap(grammar="sum_of_products", change_operators=["CP"]).fit(X, y)
    with pytest.raises(ValueError, match="Unknown change operator 'XY'"):
        cheap(change_operators=["XY"]).fit(X, y)
    with pytest.warns(UserWarning, match="change_operators is ignored"):
        cheap(max_depth=1, grammar=CompositionalGrammar(["SE"]), change_operators=None).fit(X, y)


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_is_rejected(bad):
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = X[:, 0].copy()
    X_bad = X.copy()
    X_bad[3, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        cheap().fit(X_bad, y)
    y_bad = y.copy()
    y_bad[0] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        cheap().fit(X, y_bad)


def test_one_sample_is_rejected_with_a_clear_message():
    with pytest.raises(ValueError, match="1 sample"):
        cheap().fit([[1.0, 2.0]], [3.0])


@pytest.mark.parametrize("estimator", [cheap(), CompositionalGPClassifier(max_depth=1, n_restarts=0)])
def test_a_text_column_is_named_in_the_error(estimator):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"age": [30.0, 41.0, 52.0, 63.0], "city": ["Bern", "Basel", "Bern", "Chur"]})
    y = [0, 1, 0, 1]
    with pytest.raises(ValueError, match=r"Column 'city' of X is not numeric \(it holds 'Bern'\).*OneHotEncoder"):
        estimator.fit(frame, y)
    with pytest.raises(ValueError, match=r"Column 1 of X is not numeric.*encode it"):
        estimator.fit(frame.to_numpy(), y)
    # a categorical column beside a boolean one: numpy says "Cannot cast str dtype to float64" there
    mixed = frame.assign(member=[True, False, True, False], city=pd.Categorical(frame["city"]))
    with pytest.raises(ValueError, match=r"Column 'city' of X is not numeric \(it holds 'Bern'\)"):
        estimator.fit(mixed, y)
    fitted = clone(estimator).fit(frame[["age"]].to_numpy(), y)
    with pytest.raises(ValueError, match=r"Column 0 of X is not numeric \(it holds 'x'\)"):
        fitted.predict(np.array([["x"]], dtype=object))


def test_text_targets_are_rejected_with_a_clear_message():
    X = np.linspace(0, 1, 6)[:, None]
    with pytest.raises(ValueError, match=r"y holds values that are not numbers \(such as 'low'\).*Classifier"):
        cheap().fit(X, np.array(["low", "high"] * 3))
    # numbers written as text are numbers
    model = cheap().fit(X, np.array(["1.5", "2.0", "2.5", "3.0", "3.5", "4.0"]))
    assert model.predict(X).dtype == np.float64
    np.testing.assert_allclose(model.predict(X), np.linspace(1.5, 4.0, 6), atol=0.3)


def test_a_boolean_target_is_fitted_as_zeros_and_ones():
    # (numpy's "boolean subtract is not supported" had come from the target checks; scikit-learn's regressors take it)
    X = np.linspace(0, 5, 30)[:, None]
    flags = X[:, 0] > 2.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_flags = cheap().fit(X, flags)
        on_numbers = cheap().fit(X, flags.astype(float))
    np.testing.assert_array_equal(on_flags.predict(X), on_numbers.predict(X))


def test_a_criterion_that_predicts_gets_no_warning_about_column_names():
    # candidates are scored on the search's numeric arrays: views that kept the user's column names warned
    # "X does not have valid feature names" at every prediction (36 times in a search of depth 1)
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0, 5, 40), "b": rng.uniform(0, 5, 40)})
    y = np.sin(X["a"]) + 0.3 * X["b"] + 0.1 * rng.normal(size=40)
    seen = []

    def by_predictions(estimator, X_scored, y_scored):
        seen.append(type(X_scored))
        return -float(np.mean((estimator.predict(X_scored) - y_scored) ** 2))

    for criterion in ("loo", by_predictions):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = CompositionalGPRegressor(criterion=criterion, max_depth=1, random_state=0).fit(X, y)
        assert not [w for w in caught if "feature names" in str(w.message)], criterion
        assert list(model.feature_names_in_) == ["a", "b"]
    assert seen and all(kind is np.ndarray for kind in seen)


@pytest.mark.parametrize("name", ["smse", "msll"])
def test_a_metric_of_held_out_predictions_is_refused_as_the_search_criterion(name):
    # scored on the training rows it chose structures that interpolate the noise (test SMSE 0.07-0.56 where the
    # default reached 0.02 on a 3-column table); as a scoring of held-out folds it stays
    from sklearn.model_selection import cross_val_score

    from skgpsearch.criteria import get_criterion

    X = np.linspace(0, 4, 30)[:, None]
    y = np.sin(3 * X[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=30)
    with pytest.raises(ValueError, match=rf"criterion='{name}' measures predictions of held-out data.*"
                                         r"the default criterion.*'loo'"):
        CompositionalGPRegressor(criterion=name, max_depth=1).fit(X, y)
    scores = cross_val_score(cheap(max_depth=1), X, y, cv=2, scoring=get_criterion(name))
    assert np.all(np.isfinite(scores))


def test_without_normalize_y_a_child_reaches_what_its_structure_reaches_alone():
    # the kernels' defaults came from the centred variance while the GP's prior mean is 0 (targets around 14):
    # the search recorded SE + PER 17 nats below the same structure fitted alone, at period 7.5 instead of 2.5
    from skgpsearch.grammar import CompositionalGrammar, FixedStructureGrammar

    rng = np.random.default_rng(1)
    X = np.sort(rng.uniform(0, 10, 60))[:, None]
    y = 3.0 * (np.sin(2 * np.pi * X[:, 0] / 2.5) + 0.3 * X[:, 0] + 0.2 * rng.normal(size=60)) + 5
    common = dict(criterion="bic", selection="criterion", baseline_models=False, min_improvement=0, random_state=0,
                  normalize_y=False, n_jobs=1)
    searched = CompositionalGPRegressor(grammar=CompositionalGrammar(["SE", "PER", "LIN"]), max_depth=2,
                                        **common).fit(X, y)
    recorded = dict(zip(searched.search_results_["structure"], searched.search_results_["criterion"]))
    alone = CompositionalGPRegressor(grammar=FixedStructureGrammar("SE(0) + PER(0)"), **common).fit(X, y)
    assert recorded["SE(0) + PER(0)"] > alone.best_score_ - 1.0
    periods = [leaf.params["period"] for leaf in alone.structure_.leaves if "period" in leaf.params]
    assert periods == [pytest.approx(2.5, rel=0.02)]


def test_constant_target_gives_a_flat_model():
    X = np.linspace(0, 1, 25)[:, None]
    model = cheap(max_depth=2).fit(X, np.full(25, 4.2))
    np.testing.assert_allclose(model.predict(np.array([[0.3], [2.0]])), 4.2, atol=1e-6)


def test_every_candidate_failing_names_the_causes():
    X = np.linspace(0, 1, 25)[:, None]
    y = np.sin(6 * X[:, 0])
    with pytest.raises(ValueError, match="Every candidate structure failed.*criterion value nan"):
        cheap(criterion=lambda est, X_, y_: float("nan")).fit(X, y)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"base_kernels": ("XX",)}, "Unknown base kernel"),
        ({"criterion": "nope"}, "criterion"),
        ({"max_depth": 0}, "max_depth"),
        ({"search": "random"}, "search"),
    ],
)
def test_bad_parameters(params, message):
    X = np.linspace(0, 1, 10)[:, None]
    with pytest.raises(ValueError, match=message):
        cheap(**params).fit(X, X[:, 0])


def test_wrong_number_of_features_at_predict(additive_interaction_data):
    X, y = additive_interaction_data
    model = cheap().fit(X[:30], y[:30])
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:3, :2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.predict(X[:3])


def test_subsampled_optimisation_scores_on_all_data(additive_interaction_data):
    X, y = additive_interaction_data
    # (no baselines: they are fitted on all rows, and the ARD one, chosen by both fits, made them equal; without
    # them the chosen SE(1) * SE(2) has its hyperparameters from 60 rows, measured -130.4 against -125.4)
    model = cheap(max_depth=2, max_optimize_samples=60, baseline_models=False).fit(X[:200], y[:200])
    theta = np.append(model.kernel_.k1.theta, np.log(model.kernel_.k2.noise_level))
    # the reported likelihood is that of all 200 rows at the fitted hyperparameters
    assert model.log_marginal_likelihood(theta) == pytest.approx(model.log_marginal_likelihood_value_, rel=1e-9)
    full = cheap(max_depth=2, baseline_models=False).fit(X[:200], y[:200])
    assert model.log_marginal_likelihood_value_ <= full.log_marginal_likelihood_value_ + 1e-6


def test_interrupted_search_keeps_the_best_so_far(additive_interaction_data, monkeypatch):
    import skgpsearch._search._exact_fitter as search_module

    X, y = additive_interaction_data
    original = search_module.RegressionCandidateFitter.__call__
    calls = []
    n_first = len(CompositionalGrammar(["SE"]).initial(X.shape[1]))  # per-column SEs, ARD and additive
    refits = pipeline_module.REFINE_PER_LEVEL if pipeline_module.explore_effort_for(X.shape[1]) == "explore" else 0

    def interrupt_in_the_second_level(self, *args, **kwargs):
        calls.append(1)
        if len(calls) > n_first + refits:  # the first level's fits, and its best refitted with full effort
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(search_module.RegressionCandidateFitter, "__call__", interrupt_in_the_second_level)
    with pytest.warns(RuntimeWarning, match="interrupted"):
        model = cheap(max_depth=3).fit(X[:60], y[:60])
    assert model.search_stop_reason_ == "interrupted"
    assert len(model.search_results_["structure"]) == n_first
    assert model.predict(X[:2]).shape == (2,)


def _interrupt_after(monkeypatch, n_records):
    """A Ctrl-C as the search is about to receive a fitted candidate after ``n_records`` of them."""
    from skgpsearch._search import _loop

    original = _loop.StructureSearch.__init__

    def init(self, evaluate, *args, **kwargs):
        received = []

        def evaluate_then_interrupt(chunk, deadline):
            for record in evaluate(chunk, deadline):
                if len(received) >= n_records:
                    raise KeyboardInterrupt
                yield record
                received.append(record)

        original(self, evaluate_then_interrupt, *args, **kwargs)

    monkeypatch.setattr(_loop.StructureSearch, "__init__", init)


@pytest.mark.parametrize("n_records", [2, 5])
def test_an_interrupt_keeps_the_best_structure_fitted_so_far_at_any_depth(monkeypatch, n_records):
    # three base kernels, then SE(0) + SE(1) and SE(0) * SE(1) of depth 2: interrupted during depth 2, the search
    # had kept depth 1's SE(1) (BIC -166) over the SE(0) + SE(1) it had fitted (+83; training R² 0.76 against
    # 0.99); interrupted after two base kernels, fit raised the KeyboardInterrupt and returned nothing
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(150, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=150)
    _interrupt_after(monkeypatch, n_records)
    with pytest.warns(RuntimeWarning, match="Search interrupted: keeping the best structure found so far"):
        try:
            model = CompositionalGPRegressor(n_jobs=1, random_state=0).fit(X, y)
        except KeyboardInterrupt:  # (uncaught, it would end the test session)
            pytest.fail("the interrupt escaped fit")
    table = model.search_results_
    fitted = [(c, s) for c, s, status in zip(table["criterion"], table["structure"], table["status"]) if status == "ok"]
    assert len(fitted) >= n_records and model.search_stop_reason_.startswith("interrupted")
    best_criterion, best_structure = max(fitted)
    assert str(model.structure_) == best_structure
    if n_records == 5:
        assert best_criterion > max(c for c, s in fitted if "+" not in s and "*" not in s) + 100
    assert model.score(X, y) > (0.95 if n_records == 5 else 0.5)


def test_a_fit_that_raises_leaves_the_estimator_unfitted(monkeypatch):
    from sklearn.exceptions import NotFittedError

    from skgpsearch import CompositionalGPClassifier

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(30, 2))
    labels = (X[:, 0] > 0).astype(int)
    classifier = CompositionalGPClassifier(max_depth=1, n_restarts=0, random_state=0).fit(X, labels)
    with pytest.raises(ValueError, match="at least 2 classes"):
        classifier.fit(X, np.zeros(30, dtype=int))
    # classes_ and n_features_in_ of the failed fit had stayed, and predict raised an AttributeError
    with pytest.raises(NotFittedError):
        classifier.predict(X)
    _interrupt_after(monkeypatch, 0)
    model = cheap()
    with pytest.raises(KeyboardInterrupt):  # nothing fitted yet: there is nothing to keep
        model.fit(X, X[:, 0])
    with pytest.raises(NotFittedError):
        model.predict(X)


def test_review_regressions(additive_interaction_data):
    X, y = additive_interaction_data
    X, y = X[:60].copy(), y[:60].copy()
    model = cheap(max_depth=2).fit(X, y)
    # the training data is copied: changing the caller's array changes nothing
    before = model.predict(X[:3].copy())
    X += 3.0
    np.testing.assert_allclose(model.predict(X[:3] - 3.0), before, rtol=1e-10)
    X -= 3.0
    # kernel_.theta is the layout of log_marginal_likelihood's theta; wrong lengths are refused
    assert model.log_marginal_likelihood(model.kernel_.theta) == pytest.approx(model.log_marginal_likelihood_value_)
    with pytest.raises(ValueError, match="theta must have"):
        model.log_marginal_likelihood(np.append(model.kernel_.theta, 0.0))
    # other targets on the training inputs are not mistaken for the training data
    permuted = np.random.default_rng(0).permutation(y)
    assert model.log_marginal_likelihood_on(model.X_train_, permuted) < model.log_marginal_likelihood_value_
    # names are case-insensitive; n_jobs=0 is refused clearly
    assert cheap(criterion="BIC", max_depth=2).fit(X, y).best_score_ == pytest.approx(model.best_score_)
    with pytest.raises(ValueError, match="n_jobs == 0"):
        cheap(n_jobs=0).fit(X, y)


def test_failed_records_keep_the_values_that_were_computed():
    X = np.linspace(0, 1, 25)[:, None]
    y = np.sin(6 * X[:, 0])
    calls = []

    def criterion(est, X_, y_):
        calls.append(1)
        return float("nan") if len(calls) == 2 else est.log_marginal_likelihood_value_

    model = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=1, n_restarts=0,
                                     criterion=criterion).fit(X, y)
    results = model.search_results_
    failed = results["status"].index("failed")
    assert np.isfinite(results["log_marginal_likelihood"][failed])
    assert results["criterion"][failed] == -np.inf and "nan" in results["message"][failed]


def test_jitter_levels_do_not_stack():
    from skgpsearch._engine._linalg import jittered_cholesky

    v = np.arange(1.0, 6.0)
    K = np.outer(v, v)
    L, jitter = jittered_cholesky(K)
    np.testing.assert_allclose(L @ L.T, K + jitter * np.eye(5), atol=1e-12 * np.abs(K).max())


@pytest.mark.slow
def test_a_child_never_fits_worse_than_its_parent():
    """S + B contains S: the nested warm start keeps the child's likelihood at the parent's or above."""
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0, 10, size=(300, 1)), axis=0)
    y = np.sin(2 * np.pi * X[:, 0] / 1.3) + 0.3 * X[:, 0] + 0.2 * rng.normal(size=300)
    model = CompositionalGPRegressor(base_kernels=("SE", "PER"), max_depth=2, n_restarts=2, random_state=0).fit(X, y)
    results = model.search_results_
    lml = dict(zip(results["structure"], results["log_marginal_likelihood"]))
    parent = results["parent"][results["structure"].index("SE(0) + PER(0)")]
    assert lml["SE(0) + PER(0)"] >= lml[parent] - 0.5
    assert lml["SE(0) + SE(0)"] >= lml["SE(0)"] - 0.5


def test_automatic_depth_grows_with_the_columns():
    from skgpsearch._search._loop import automatic_depth

    assert [automatic_depth(d) for d in (1, 2, 5, 8, 30)] == [3, 4, 7, 10, 10]


@pytest.mark.slow
def test_many_columns_screened_levels_use_every_relevant_column():
    # five relevant columns of seven: a depth-3 search could use at most three
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(150, 7))
    y = (np.sin(2 * X[:, 0]) + 0.8 * X[:, 1] ** 2 + np.cos(1.5 * X[:, 2]) + 0.7 * X[:, 3]
         + np.sin(X[:, 4]) + 0.05 * rng.normal(size=150))
    model = CompositionalGPRegressor(base_kernels=("SE",), max_fits_per_depth=6, random_state=0).fit(X, y)
    # the search's best structure (the final model may stack it with the baselines, which use every column)
    table = model.search_results_
    searched = [i for i, (s, m) in enumerate(zip(table["status"], table["message"]))
                if s == "ok" and not m.startswith("baseline")]
    best = max(searched, key=lambda i: table["criterion"][i])
    assert set(parse(table["structure"][best]).columns) == {0, 1, 2, 3, 4}
    # from the additive baseline, pruning removes the irrelevant columns one by one
    grammar = CompositionalGrammar(["SE"], baselines=True)
    pruned = CompositionalGPRegressor(grammar=grammar, max_fits_per_depth=6, max_depth=3, random_state=0).fit(X, y)
    results = pruned.search_results_
    additive = "SE(0) + SE(1) + SE(2) + SE(3) + SE(4) + SE(5) + SE(6)"
    assert pruned.search_path_[0]["best_structure"] == additive
    score = dict(zip(results["structure"], results["criterion"]))
    # dropping an irrelevant column (5 or 6) of the additive model scores above it: BIC saves
    # two hyperparameters and the fit loses almost nothing (margin ~2.7 on this data)
    dropped = [score.get(additive.replace(f" + SE({c})", "")) for c in (5, 6)]
    assert max(d for d in dropped if d is not None) > score[additive] + 1.0
    status = model.search_results_["status"]
    screened = [i for i, s in enumerate(status) if s == "screened out"]
    assert screened, "levels with more than 6 children must be screened"
    assert all(model.search_results_["message"][i].startswith("screened out") for i in screened)
    messages, depths = model.search_results_["message"], model.search_results_["depth"]
    explored = [i for i, s in enumerate(status) if s != "screened out" and not messages[i].startswith("baseline")]
    # the three baselines (one ARD kernel, the additive kernel, the linear model) are finalists, not explored
    baselines = [table["structure"][i] for i in range(len(status)) if messages[i].startswith("baseline")]
    assert sorted(baselines) == sorted(["LIN(0, 1, 2, 3, 4, 5, 6)", "SE(0, 1, 2, 3, 4, 5, 6)", additive,
                                       additive.replace("+", "*")])
    for depth in set(depths):
        assert sum(depths[i] == depth for i in explored) <= 6
    assert "screening out" in model.describe()


def test_model_averaging_is_the_exact_mixture_of_the_best_structures():
    """Mixture mean and variance checked against scikit-learn GPs built from each averaged structure."""
    from skgpsearch.kernels import to_kernel

    rng = np.random.default_rng(2)
    X = np.sort(rng.uniform(0, 10, size=(60, 1)), axis=0)
    y = np.sin(X[:, 0]) + 0.1 * X[:, 0] + 0.1 * rng.normal(size=60)
    # (selected by the criterion: the weights are exp(criterion - best); no change operators: none of their
    # candidates is among the four best, and they took 40 % of the two fits)
    model = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), change_operators=None, max_depth=2,
                                     random_state=0, model_averaging=4, selection="criterion").fit(X, y)
    single = clone(model).set_params(model_averaging=None).fit(X, y)
    assert single.model_weights_.tolist() == [1.0] and str(single.structure_) == str(model.structure_)
    weights = model.model_weights_
    assert len(weights) == 4 and weights.sum() == pytest.approx(1.0) and np.all(np.diff(weights) <= 0)
    # weights: exp(criterion - best) of the search results
    scores = dict(zip(model.search_results_["structure"], model.search_results_["criterion"]))
    expected = np.exp([scores[str(s)] - model.best_score_ for s in model.averaged_structures_])
    np.testing.assert_allclose(weights, expected / expected.sum(), rtol=1e-10)
    X_test = np.array([[-1.0], [5.5], [11.0], [13.0]])
    means, variances, noises = [], [], []
    for structure in model.averaged_structures_:
        # each model's fitted hyperparameters, on the normalised scale, as a plain sklearn GP
        record = model.search_results_["structure"].index(str(structure))
        kernel = to_kernel(structure, summary=model._model.summary)
        noise = model._models[model.averaged_structures_.index(structure)].posterior.noise_variance
        gp = GaussianProcessRegressor(kernel, alpha=noise, optimizer=None, normalize_y=False)
        gp.fit(X, (y - y.mean()) / y.std())
        mu, sd = gp.predict(X_test, return_std=True)
        means.append(mu * y.std() + y.mean())
        variances.append((sd * y.std()) ** 2)
        noises.append(noise * y.std() ** 2)
        assert model.search_results_["status"][record] == "ok"
    means, variances = np.array(means), np.array(variances)
    mixture_mean = weights @ means
    mixture_var = weights @ (variances + means**2) - mixture_mean**2
    mean, std = model.predict(X_test, return_std=True, include_noise=False)
    np.testing.assert_allclose(mean, mixture_mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(std, np.sqrt(mixture_var), rtol=1e-5)
    _, cov = model.predict(X_test, return_cov=True, include_noise=False)
    np.testing.assert_allclose(np.diag(cov), mixture_var, rtol=1e-5)
    # a new observation: each model's predictive distribution has its own noise variance
    observation_var = weights @ (variances + np.array(noises)[:, None] + means**2) - mixture_mean**2
    assert np.ptp(noises) > 0
    _, observation_std = model.predict(X_test, return_std=True)
    np.testing.assert_allclose(observation_std, np.sqrt(observation_var), rtol=1e-5)
    assert np.linalg.eigvalsh(cov).min() > -1e-9
    assert "Predictions average 4 structures" in model.describe()


@pytest.fixture(scope="module")
def interaction_fit():
    """A product of all three columns, which a depth-1 search of single kernels cannot express; more rows than
    a small table (whose finalists are cross-validated: see the test of small tables)."""
    rng = np.random.default_rng(3)
    n = CROSS_VALIDATION_ROWS + 10
    X = rng.uniform(-2, 2, size=(n, 3))
    y = np.sin(1.5 * X[:, 0]) * np.cos(X[:, 1]) * (1 + 0.5 * X[:, 2]) + 0.05 * rng.normal(size=n)
    return cheap(base_kernels=("SE", "LIN"), max_depth=2, n_restarts=1, selection="loo").fit(X, y), X, y


def test_the_baselines_compete_as_finalists_and_held_out_prediction_selects(interaction_fit):
    model, X, y = interaction_fit
    table = model.finalists_
    assert model.selection_ == "loo"
    baselines = ("SE(0) * SE(1) * SE(2)", "SE(0) + SE(1) + SE(2)", "SE(0, 1, 2)", "LIN(0, 1, 2)")
    assert sorted(s for s, b in zip(table["structure"], table["baseline"]) if b) == sorted(baselines)
    # the baselines are finalists only: the search expanded none of them
    assert not any(p in baselines for p in model.search_results_["parent"])
    chosen = table["structure"].index(str(model.structure_.without_values()))
    assert table["weight"][chosen] == 1.0 and str(model.structure_) == "SE(0) * SE(1) * SE(2)"
    assert table["loo_log_density"][chosen] == max(table["loo_log_density"])
    # the held-out density of the chosen model, recomputed by n refits without each row (original units)
    kernel, noise = model._kernel_no_noise, model.noise_variance_ / model._y_train_std**2
    z = (y - model._y_train_mean) / model._y_train_std
    total = 0.0
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        gp = GaussianProcessRegressor(kernel, alpha=noise, optimizer=None).fit(X[keep], z[keep])
        mean, std = gp.predict(X[i:i + 1], return_std=True)
        total += -0.5 * np.log(2 * np.pi * (std[0] ** 2 + noise)) - 0.5 * (z[i] - mean[0]) ** 2 / (std[0] ** 2 + noise)
    assert table["loo_log_density"][chosen] == pytest.approx(total - len(y) * np.log(model._y_train_std), rel=1e-6)
    # above CROSS_VALIDATION_ROWS regression holds nothing back (no baseline_margin_se)
    assert not any(table["held_back"])
    assert all(v is None for v in table["cv_log_density"])
    text = model.describe()
    assert "chosen among" in text and "One ARD kernel" in text and "predicted held-out rows better" in text


def test_a_small_table_judges_its_finalists_by_cross_validation_with_refits():
    # at most CROSS_VALIDATION_ROWS rows: each finalist is refitted on 4/5 of the rows and predicts the rest
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, size=(40, 3))
    y = 3.0 + np.sin(1.5 * X[:, 0]) + 0.4 * X[:, 1] + 0.2 * rng.normal(size=40)
    model = cheap(max_depth=2).fit(X, y)
    table = model.finalists_
    assert model.selection_ == "stacking" and len(table["structure"]) >= 3
    assert all(v is None for v in table["loo_log_density"]) and all(v is not None for v in table["cv_log_density"])
    first = int(np.argmax(table["weight"]))  # the model whose kernel_ the estimator exposes
    assert table["structure"][first] == str(model.structure_.without_values())
    # its score recomputed by scikit-learn: per fold, its GP optimised on the other folds' rows (from the
    # finalist's values, which our refits forget: both reach the fold's one optimum), then the log density of
    # each held-out row (noise included, in the target's units)
    z = (y - model._y_train_mean) / model._y_train_std
    noise = model.noise_variance_ / model._y_train_std**2
    total = 0.0
    for train, test in pipeline_module.cross_validation_folds(len(y), model._base_seed()):
        assert len(test) == 8
        kernel = model._kernel_no_noise + WhiteKernel(noise, noise_level_bounds=NOISE_BOUNDS)
        gp = GaussianProcessRegressor(kernel, random_state=0).fit(X[train], z[train])
        mean, std = gp.predict(X[test], return_std=True)  # (the fitted WhiteKernel adds its noise to std)
        total += np.sum(-0.5 * np.log(2 * np.pi * std**2) - 0.5 * (z[test] - mean) ** 2 / std**2)
    assert table["cv_log_density"][first] == pytest.approx(total - len(y) * np.log(model._y_train_std), abs=0.05)
    # the search's structures compete only when clear of the best baseline: held back ones carry no weight
    assert all(w == 0.0 for w, h in zip(table["weight"], table["held_back"]) if h)
    assert not any(h for h, b in zip(table["held_back"], table["baseline"]) if b)
    # stacked undiscounted: the refits have not seen the rows they score
    text = model.describe()
    assert "cross-validated log density per row" in text and "nat per hyperparameter" not in text


def test_selection_rules_and_their_errors(interaction_fit):
    _, X, y = interaction_fit
    # a covariate drawn at random is a table of one column; "forecast" extends it beyond its largest values
    assert cheap(base_kernels=("SE", "LIN")).fit(X[:, :1], y).selection_ == "stacking"
    one_column = cheap(base_kernels=("SE", "LIN"), selection="forecast").fit(X[:, :1], y)
    assert one_column.selection_ == "forecast"
    table = one_column.finalists_
    assert len(table["structure"]) >= 2 and all(v is None for v in table["loo_log_density"])
    forecast = table["forecast_log_density"]
    chosen = table["weight"].index(1.0)
    # the best forecast, or one within a nat of it with a better criterion
    assert forecast[chosen] >= max(forecast) - 1.0
    assert all(table["criterion"][chosen] >= c for c, f in zip(table["criterion"], forecast) if f >= max(forecast) - 1.0)
    # densities in the target's units: scaling the target by 10 shifts each by -log(10) per forecast row
    scaled = cheap(base_kernels=("SE", "LIN"), selection="forecast").fit(X[:, :1], 10 * y)
    n_held = round(0.15 * len(y))
    np.testing.assert_allclose(scaled.finalists_["forecast_log_density"],
                               np.array(forecast) - n_held * np.log(10), rtol=1e-5)
    with pytest.raises(ValueError, match="needs one input column"):
        cheap(selection="forecast").fit(X, y)
    with pytest.raises(ValueError, match="sparse approximation does not have"):
        cheap(approximation="sparse", selection="loo", n_inducing=10).fit(X, y)
    stacked = cheap(base_kernels=("SE", "LIN")).fit(X, y)
    assert stacked.selection_ == "stacking"  # the default on tabular data
    assert "The stacking weights count 1 nat per hyperparameter against each finalist" in stacked.describe()
    assert stacked.model_weights_.sum() == pytest.approx(1.0)
    assert sum(w > 0 for w in stacked.finalists_["weight"]) == len(stacked.model_weights_)


@pytest.mark.slow  # over 5 s on 2 cores
def test_on_one_column_the_se_baseline_competes_as_a_finalist():
    # a cycle: the search's best structures are all periodic, so SE alone is a finalist only as the baseline
    rng = np.random.default_rng(1)
    X = np.linspace(0, 8, 64)[:, None]
    y = np.sin(2 * np.pi * X[:, 0]) + 0.1 * rng.normal(size=64)
    model = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), max_depth=2, change_operators=None,
                                     n_restarts=0, random_state=0).fit(X, y)
    table = model.finalists_
    assert table["structure"].count("SE(0)") == 1
    row = table["structure"].index("SE(0)")
    assert table["baseline"][row] and table["forecast_log_density"][row] is not None
    # judged like the others: it forecasts the cycle worse than the chosen structure
    assert table["forecast_log_density"][row] < table["forecast_log_density"][table["weight"].index(1.0)]


def test_a_random_walk_with_drift_is_forecast_from_its_last_level_and_drift():
    # unit steps with drift 0.5: the best forecast h steps ahead is the last value plus 0.5 h, spreading as sqrt(h)
    rng = np.random.default_rng(4)
    y = np.cumsum(0.5 + rng.normal(size=80))
    X = np.arange(80.0)[:, None]
    model = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=1, change_operators=None,
                                     random_state=0, n_jobs=1).fit(X, y)
    table = model.finalists_
    row = table["structure"].index("LIN(0) + M12(0)")
    assert table["baseline"][row] and table["forecast_log_density"][row] is not None
    steps = np.arange(1.0, 11.0)
    mean, std = model.predict(79.0 + steps[:, None], return_std=True)
    # the search's SE and SE + LIN revert toward the series' mean: 4.6 from the ideal forecast
    assert np.sqrt(np.mean((mean - (y[-1] + 0.5 * steps)) ** 2)) < 1.0
    assert std[-1] > 1.5 * std[0]
    # an input that is no time index (irregular, repeated values) has no random walk among its finalists
    x = np.round(rng.uniform(0, 80, 80), 0)[:, None]
    other = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=1, change_operators=None,
                                     random_state=0, n_jobs=1).fit(x, y)
    assert "LIN(0) + M12(0)" not in other.finalists_["structure"]


def test_the_finalists_table_lists_every_model_that_predicts_with_its_weight():
    rng = np.random.default_rng(5)
    X = np.arange(60.0)[:, None]
    y = np.sin(2 * np.pi * X[:, 0] / 12) + 0.03 * X[:, 0] + 0.3 * rng.normal(size=60)
    model = CompositionalGPRegressor(max_depth=2, random_state=0, n_jobs=1, model_averaging=3,
                                     selection="criterion").fit(X, y)
    table = model.finalists_
    # the average took a structure from the search's other fits: it had been missing, the weights short of one
    assert sum(table["weight"]) == pytest.approx(1.0)
    listed = dict(zip(table["structure"], table["weight"]))
    for structure, weight in zip(model.averaged_structures_, model.model_weights_):
        assert any(s == str(structure) and w == pytest.approx(weight) for s, w in zip(table["structure"],
                                                                                     table["weight"]))
    assert len(listed) >= 2
    # stacking has its own weights: a model_averaging asked for is not used, and the user is told
    X2 = rng.uniform(-2, 2, (60, 2))
    with pytest.warns(UserWarning, match="model_averaging=3 is not used: selection='auto' chooses 'stacking'"):
        CompositionalGPRegressor(max_depth=1, random_state=0, n_jobs=1, model_averaging=3).fit(X2, X2[:, 0] ** 2)


def test_a_refit_with_another_likelihood_keeps_no_attribute_of_the_first_fit():
    from skgpsearch import CompositionalGPClassifier

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (80, 2))
    y = X[:, 0] ** 2 + X[:, 1] + 0.1 * rng.normal(size=80)
    # (no baselines: the Student-t fits of the four on all rows took two thirds of the test's time)
    model = CompositionalGPRegressor(max_depth=1, baseline_models=False, random_state=0, n_jobs=1,
                                     likelihood="student_t").fit(X, y)
    assert hasattr(model, "degrees_of_freedom_")
    model.set_params(likelihood="gaussian").fit(X, y)
    # a Student-t fit's scale had stayed, and describe() called the Gaussian noise Student-t
    assert not hasattr(model, "noise_scale_") and not hasattr(model, "degrees_of_freedom_")
    fresh = CompositionalGPRegressor(max_depth=1, baseline_models=False, random_state=0, n_jobs=1).fit(X, y)
    assert model.describe() == fresh.describe()
    labels = (y > np.median(y)).astype(int)
    classifier = CompositionalGPClassifier(max_depth=1, random_state=0, likelihood="robust").fit(X, labels)
    assert hasattr(classifier, "outlier_rate_")
    assert not hasattr(classifier.set_params(likelihood="probit").fit(X, labels), "outlier_rate_")


def test_on_one_covariate_the_default_periodic_kernel_must_repeat_within_the_data():
    from skgpsearch.criteria import get_criterion
    from skgpsearch.kernels import default_hyperparameters

    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0, 10, 60))  # a covariate: irregular values
    y = np.sin(2 * np.pi * x / 8) + 0.1 * rng.normal(size=60)

    def period_bounds(model, X):
        summary = model._model_fitter(X, y, get_criterion("bic")).summary
        return default_hyperparameters("PER", (0,), summary)["period"][1]

    span = x.max() - x.min()
    assert period_bounds(CompositionalGPRegressor(), x[:, None])[1] == pytest.approx(span / 2)
    # PER named in base_kernels (an angle, an hour of the day: one cycle), a grammar given, a series: the range
    named = CompositionalGPRegressor(base_kernels=("SE", "PER"))
    assert period_bounds(named, x[:, None])[1] == pytest.approx(span)
    series = np.linspace(0, 10, 60)[:, None]
    assert period_bounds(CompositionalGPRegressor(), series)[1] == pytest.approx(10.0)
    # the search's fit of PER(0): the cycle of 8 (0.8 of the range) where the range is allowed, not beyond half
    for model, longest in ((CompositionalGPRegressor(), span / 2), (named, span)):
        fitter = model._model_fitter(x[:, None], y, get_criterion("bic"))
        record = fitter.candidate_fitter(parse("PER(0)"), fitter.X, fitter.y, 0)
        period = record.structure.leaves[0].params["period"]
        assert period <= longest * (1 + 1e-9)
        assert (period == pytest.approx(8.0, rel=0.1)) == (longest == span)


def test_a_short_series_is_not_interpolated_by_structures_with_as_many_hyperparameters_as_rows():
    # 12 years of a line plus unit noise: the defaults had chosen change windows of 8-10 hyperparameters that
    # interpolated the years and put the next three 100-478 standard deviations from their forecasts
    for seed in (1, 2, 3):
        rng = np.random.default_rng(seed)
        t = np.arange(2000.0, 2015.0)[:, None]
        y = 10 + 0.5 * np.arange(15.0) + rng.normal(size=15)
        model = CompositionalGPRegressor(random_state=0, n_jobs=1).fit(t[:12], y[:12])
        results = model.search_results_
        searched = [k for k, parent in zip(results["n_hyperparameters"], results["parent"]) if parent is not None]
        assert all(4 * k <= 12 for k in searched)
        mean, std = model.predict(t[12:], return_std=True)
        assert np.max(np.abs(y[12:] - mean) / std) < 5.0
        assert np.sqrt(model.noise_variance_) > 0.3


def test_series_finalists_gain_linear_trends_that_forecast_the_rise():
    # a cycle on a rising line, searched one level deep: no base kernel alone forecasts it
    rng = np.random.default_rng(0)
    X = np.linspace(0, 8, 64)[:, None]
    y = np.sin(2 * np.pi * X[:, 0]) + 0.3 * X[:, 0] + 0.1 * rng.normal(size=64)
    model = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), max_depth=1, n_restarts=0,
                                     random_state=0).fit(X, y)
    results = model.search_results_
    rows = {s: i for i, s in enumerate(results["structure"])}
    explored = sorted((s for s, d, m in zip(results["structure"], results["depth"], results["message"])
                       if d == 1 and not m.startswith("baseline")),
                      key=lambda s: -results["criterion"][rows[s]])
    parents = [s for s in explored[:2] if s != "LIN(0)"]  # the two best; LIN(0) has its trend already
    variants = {p: i for i, p in enumerate(results["parent"]) if p is not None}
    assert sorted(variants) == sorted(parents)
    for parent, i in variants.items():
        variant = results["structure"][i]
        assert sorted(variant.split(" + ")) == sorted([parent, "LIN(0)"])
        assert variant in model.finalists_["structure"]
        # fitted from the parent's values: the larger model is at least as likely
        assert results["log_marginal_likelihood"][i] >= results["log_marginal_likelihood"][rows[parent]] - 0.1
    # the variant of the periodic term forecasts the rise (by tens of nats) and is selected
    assert str(model.structure_.without_values()) == "PER(0) + LIN(0)"
    X_ahead = np.linspace(8.5, 10, 16)[:, None]
    truth = np.sin(2 * np.pi * X_ahead[:, 0]) + 0.3 * X_ahead[:, 0]
    assert np.sqrt(np.mean((model.predict(X_ahead) - truth) ** 2)) < 0.15
    flags = dict(zip(model.finalists_["structure"], model.finalists_["trend_variant"]))
    assert {s for s, flag in flags.items() if flag} == {results["structure"][i] for i in variants.values()}
    assert "PER(x0) + LIN(x0) (trend variant, fitted after the search)" in model.describe()


def test_finalists_that_interpolate_the_noise_are_not_judged_by_their_forecasts(monkeypatch):
    from skgpsearch._search._regression import RegressionModelFitter

    # a cycle, whose periodic finalists forecast best: flagged, they must give way to the others
    rng = np.random.default_rng(1)
    X = np.linspace(0, 8, 48)[:, None]
    y = np.sin(2 * np.pi * X[:, 0]) + 0.1 * rng.normal(size=48)
    flagged = []

    def interpolates(self, record):
        flagged.append(str(record.structure.without_values()))
        return "PER" in flagged[-1]

    monkeypatch.setattr(RegressionModelFitter, "interpolates_noise", interpolates)
    model = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), max_depth=1, change_operators=None,
                                     n_restarts=0, random_state=0, n_jobs=1).fit(X, y)
    table = model.finalists_
    periodic = [i for i, s in enumerate(table["structure"]) if "PER" in s]
    assert periodic and sorted(table["structure"][i] for i in periodic) == sorted(s for s in flagged if "PER" in s)
    assert all(table["forecast_log_density"][i] is None and table["weight"][i] == 0 for i in periodic)
    assert "PER" not in str(model.structure_)
    assert all(table["forecast_log_density"][i] is not None for i in range(len(table["structure"])) if i not in periodic)
    assert f"{len(periodic)} of the finalists not judged by their forecasts" in model.search_stop_reason_


def test_an_interrupt_while_forecasting_keeps_the_criterions_choice(monkeypatch):
    from skgpsearch._search._regression import RegressionModelFitter

    def interrupted(self, record, fraction, seed):
        raise KeyboardInterrupt

    monkeypatch.setattr(RegressionModelFitter, "forecast_log_density", interrupted)
    X = np.linspace(0, 6, 40)[:, None]
    y = np.sin(2 * X[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=40)
    with pytest.warns(RuntimeWarning, match="interrupted while the finalists forecast"):
        model = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=2, random_state=0).fit(X, y)
    assert "interrupted while the finalists forecast" in model.search_stop_reason_
    best = int(np.argmax(model.finalists_["criterion"]))
    assert model.finalists_["weight"][best] == 1.0  # the criterion's choice, fitted and usable
    assert np.all(np.isfinite(model.predict(X)))


def test_the_forecast_variance_scale_is_the_mean_squared_standardised_error_of_the_judged_forecast():
    import dataclasses

    from scipy.stats import norm
    from skgpsearch._search._regression import forecast_split
    from skgpsearch.criteria import get_criterion

    rng = np.random.default_rng(3)
    t = np.linspace(0, 10, 60)
    y = np.sin(t) + 0.1 * rng.normal(size=60)
    y[-9:] += 1.5  # the latest rows jump: a forecast from the earlier ones misses them by many deviations
    y = (y - y.mean()) / y.std()  # (so that the fitting scale is the target's)
    X = t[:, None]
    fitter = CompositionalGPRegressor(random_state=0)._model_fitter(X, y, get_criterion("bic"))
    record = fitter.candidate_fitter(parse("SE(0)"), X, y, 0)
    densities, refit = fitter.forecast_log_density(record, 0.15, 0)
    scale = fitter.forecast_variance_scale(refit, 0.15)
    # scikit-learn's GP with the refit's kernel and noise, fitted on the earlier rows, forecasts the rest
    earlier, later = forecast_split(t, 0.15)
    gp = GaussianProcessRegressor(to_kernel(refit.structure) + WhiteKernel(refit.noise_variance),
                                  optimizer=None).fit(X[earlier], y[earlier])
    mean, std = gp.predict(X[later], return_std=True)
    np.testing.assert_allclose(densities, norm.logpdf(y[later], mean, std), rtol=1e-6)
    assert scale == pytest.approx(np.mean(((y[later] - mean) / std) ** 2), rel=1e-6)
    assert scale > 4
    # a forecast whose spread covered its errors is left as it is
    cautious = dataclasses.replace(refit, noise_variance=100 * np.var(y))
    assert fitter.forecast_variance_scale(cautious, 0.15) == 1.0


def test_the_earlier_forecast_variance_scale_is_that_of_the_rows_before_the_judged_ones():
    from skgpsearch._search._regression import forecast_split
    from skgpsearch.criteria import get_criterion

    rng = np.random.default_rng(3)
    t = np.linspace(0, 10, 60)
    y = np.sin(t) + 0.1 * rng.normal(size=60)
    y[42:51] += 1.5  # the rows before the judged ones jump, the judged ones do not
    y = (y - y.mean()) / y.std()
    X = t[:, None]
    fitter = CompositionalGPRegressor(random_state=0)._model_fitter(X, y, get_criterion("bic"))
    record = fitter.candidate_fitter(parse("SE(0)"), X, y, 0)
    scale, refit = fitter.earlier_forecast_variance_scale(record, 0.15, 0)
    # the judged rows are the latest 9; the 9 before them are forecast from the 42 before those
    earlier, later = forecast_split(t, 0.15)
    assert later.tolist() == list(range(51, 60)) and earlier.tolist() == list(range(51))
    assert refit.ok and refit.structure.without_values() == parse("SE(0)")
    gp = GaussianProcessRegressor(to_kernel(refit.structure) + WhiteKernel(refit.noise_variance),
                                  optimizer=None).fit(X[:42], y[:42])
    mean, std = gp.predict(X[42:51], return_std=True)
    assert scale == pytest.approx(np.mean(((y[42:51] - mean) / std) ** 2), rel=1e-6)
    assert scale > 4
    # the judged forecast, from all 51 earlier rows, knows the jump: its own factor is far smaller
    _, judged = fitter.forecast_log_density(record, 0.15, 0)
    assert fitter.forecast_variance_scale(judged, 0.15) < scale / 2


@pytest.mark.parametrize("judged_scale, earlier_scale, expected", [(2.25, 1.0, 2.25), (1.0, 2.25, 2.25),
                                                                    (2.25, 1.5, 2.25), (1.0, 9.0, 4.0),
                                                                    (6.25, 9.0, 6.25)])
def test_predict_widens_the_spread_beyond_the_series_by_the_forecast_variance_scale(
        monkeypatch, judged_scale, earlier_scale, expected):
    from skgpsearch._search._regression import RegressionModelFitter

    judged, earlier = [], []

    def scale(self, refit, fraction):
        judged.append((refit, fraction))
        return judged_scale

    def earlier_scale_of(self, record, fraction, seed):
        earlier.append((record, fraction))
        return earlier_scale, None

    monkeypatch.setattr(RegressionModelFitter, "forecast_variance_scale", scale)
    monkeypatch.setattr(RegressionModelFitter, "earlier_forecast_variance_scale", earlier_scale_of)
    X = np.linspace(0, 6, 40)[:, None]
    y = np.sin(2 * X[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=40)
    model = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=1, random_state=0).fit(X, y)
    assert model.selection_ == "forecast" and model.forecast_variance_scale_ == expected
    # the larger of the factors of the chosen finalist's refit on the series' start, the one its forecast was
    # judged by, and of its earlier forecast
    (refit, fraction), = judged
    assert fraction == 0.15 and refit.structure.without_values() == model.structure_.without_values()
    (record, fraction), = earlier
    assert fraction == 0.15 and record.structure.without_values() == model.structure_.without_values()
    assert len(set(model.finalists_["structure"])) > 1
    # the earlier forecast's factor widens at most 4-fold (EARLIER_FORECAST_WIDENING_CAP), the judged one's fully
    assert pipeline_module.EARLIER_FORECAST_WIDENING_CAP == 4.0
    factor = np.sqrt(expected)
    text = model.describe()
    assert f"predictions beyond the series' last time widen its spread {factor:g}-fold" in text
    assert "its last 15 % (from the first 85 %) and the 15 % before them (from the first 70 %)" in text
    plain = pickle.loads(pickle.dumps(model))
    plain.forecast_variance_scale_ = 1.0
    X_new = np.linspace(3, 9, 25)[:, None]
    beyond = X_new[:, 0] > 6
    mean, std = model.predict(X_new, return_std=True)
    plain_mean, plain_std = plain.predict(X_new, return_std=True)
    np.testing.assert_array_equal(mean, plain_mean)
    np.testing.assert_allclose(std, np.where(beyond, factor, 1.0) * plain_std, rtol=1e-12)
    _, cov = model.predict(X_new, return_cov=True, include_noise=False)
    _, plain_cov = plain.predict(X_new, return_cov=True, include_noise=False)
    factors = np.where(beyond, factor, 1.0)
    np.testing.assert_allclose(cov, plain_cov * np.outer(factors, factors), rtol=1e-12)
    assert np.all(np.linalg.eigvalsh(cov) > -1e-8 * np.abs(cov).max())
    # a selection that does not forecast keeps the model's own spread
    other = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=1, selection="criterion",
                                     random_state=0).fit(X, y)
    assert other.forecast_variance_scale_ == 1.0
    assert "widen its spread" not in other.describe()


def test_an_interrupt_during_the_earlier_forecast_keeps_the_judged_factor(monkeypatch):
    from skgpsearch._search._regression import RegressionModelFitter

    def interrupted(self, record, fraction, seed):
        raise KeyboardInterrupt

    monkeypatch.setattr(RegressionModelFitter, "forecast_variance_scale", lambda self, refit, fraction: 2.25)
    monkeypatch.setattr(RegressionModelFitter, "earlier_forecast_variance_scale", interrupted)
    X = np.linspace(0, 6, 40)[:, None]
    y = np.sin(2 * X[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=40)
    with pytest.warns(RuntimeWarning, match="interrupted while calibrating the forecast's spread"):
        model = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=1, random_state=0).fit(X, y)
    assert model.selection_ == "forecast" and model.forecast_variance_scale_ == 2.25
    assert np.all(np.isfinite(model.predict(X)))


@pytest.mark.parametrize("refit_scale, expected", [(9.0, 4.0), (2.25, 2.25), (0.5, 1.0)])
def test_a_series_chosen_by_the_criterion_for_a_late_change_widens_by_its_refit_at_most_twofold(
        monkeypatch, refit_scale, expected):
    from skgpsearch._search._pipeline import LATE_CHANGE_WIDENING_CAP
    from skgpsearch._search._regression import RegressionModelFitter

    judged = []

    def scale(self, refit, fraction):
        judged.append((refit, fraction))
        return max(1.0, refit_scale)  # as the fitter's own: never below 1

    monkeypatch.setattr(RegressionModelFitter, "forecast_variance_scale", scale)
    monkeypatch.setattr(RegressionModelFitter, "changes_in_forecast_rows", lambda self, record, fraction: True)
    X = np.linspace(0, 6, 40)[:, None]
    y = np.sin(2 * X[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=40)
    model = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=1, random_state=0).fit(X, y)
    assert model.selection_ == "criterion"
    assert "changes within the latest rows" in model.search_stop_reason_
    assert LATE_CHANGE_WIDENING_CAP == 4.0
    assert model.forecast_variance_scale_ == expected
    # one refit on the series' start, of the structure the criterion chose; it judged nothing
    (refit, fraction), = judged
    assert fraction == 0.15 and refit.structure.without_values() == model.structure_.without_values()
    assert all(score is None for score in model.finalists_["forecast_log_density"])
    text = model.describe()
    if expected > 1:
        assert f"widen its spread {np.sqrt(expected):g}-fold (at most 2-fold" in text
    else:
        assert "widen its spread" not in text


def test_a_fixed_structure_on_a_series_is_calibrated_by_its_forecast_of_the_series_end(monkeypatch):
    from skgpsearch._search._regression import RegressionModelFitter

    rng = np.random.default_rng(3)
    X = np.linspace(0, 10, 60)[:, None]
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)
    y[-9:] += 1.5  # the latest rows jump: a forecast from the earlier ones misses them by many deviations
    fixed = FixedStructureGrammar(parse("SE(0)"))
    model = CompositionalGPRegressor(grammar=fixed, random_state=0).fit(X, y)
    # the lone finalist is judged, not to choose but to calibrate its spread beyond the series, as a search's is
    assert len(model.finalists_["structure"]) == 1 and model.selection_ == "forecast"
    assert model.forecast_variance_scale_ > 4
    assert "predictions beyond the series' last time widen its spread" in model.describe()
    assert "chosen among" not in model.describe()
    # a spent candidate budget fits nothing more, the judge's refit included
    calls = []
    original = RegressionModelFitter.forecast_log_density
    monkeypatch.setattr(RegressionModelFitter, "forecast_log_density",
                        lambda self, *args: calls.append(args) or original(self, *args))
    budget = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_candidates=1, random_state=0).fit(X, y)
    assert budget.search_stop_reason_.startswith("candidate budget reached") and not calls
    assert budget.forecast_variance_scale_ == 1.0


@pytest.mark.parametrize("drop_at", [5.0, 9.3])
def test_a_change_in_the_held_out_end_of_a_series_leaves_the_choice_to_the_criterion(monkeypatch, drop_at):
    # a level drop: before the latest 15 % of the rows it can be judged by a forecast of them, within them not
    from skgpsearch._search._regression import RegressionModelFitter

    forecast = RegressionModelFitter.forecast_log_density
    refitted = []

    def counted(self, record, fraction, seed):
        refitted.append(record.structure)
        return forecast(self, record, fraction, seed)

    monkeypatch.setattr(RegressionModelFitter, "forecast_log_density", counted)
    rng = np.random.default_rng(0)
    X = np.linspace(0, 10, 80)[:, None]
    y = np.sin(X[:, 0]) - 3.0 * (X[:, 0] > drop_at) + 0.1 * rng.normal(size=80)
    model = CompositionalGPRegressor(base_kernels=("SE",), change_operators=("CP",), max_depth=2, n_restarts=0,
                                     random_state=0).fit(X, y)
    best = int(np.argmax(model.finalists_["criterion"]))
    changes = model.structure_.changes
    held_out_from = X[-round(0.15 * 80) - 1, 0]  # the last row the forecasts' refits see
    if drop_at < held_out_from:
        assert model.selection_ == "forecast" and refitted
        assert all(d is not None for d in model.finalists_["forecast_log_density"])
    else:
        # the evidence places the drop where it is, within the rows a forecast would hold out; no finalist is
        # judged, only the chosen one refitted, to calibrate its spread beyond the series
        assert model.selection_ == "criterion"
        assert [s.without_values() for s in refitted] == [model.structure_.without_values()]
        assert model.finalists_["weight"][best] == 1.0
        assert changes and abs(changes[0].params["location"] - drop_at) < 0.2
        assert held_out_from < changes[0].params["location"]
        assert "a forecast from the earlier ones cannot judge" in model.search_stop_reason_
        assert all(d is None for d in model.finalists_["forecast_log_density"])
        # and it predicts the level after the drop
        assert abs(model.predict([[9.8]])[0] - (np.sin(9.8) - 3.0)) < 0.3


def test_rows_repeated_exactly_are_fitted_once():
    # an exact repeat (inputs and target) would tell the Gaussian likelihood that the noise is zero
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=60)
    order = rng.permutation(120)
    X_repeated, y_repeated = np.vstack([X, X])[order], np.concatenate([y, y])[order]
    settings = dict(max_depth=1, random_state=0, n_jobs=1)
    with pytest.warns(RepeatedRowsWarning, match="60 of the 120 training rows repeat"):
        repeated = CompositionalGPRegressor(**settings).fit(X_repeated, y_repeated)
    # the distinct rows, in the order of their first occurrences
    first = np.sort(np.unique(order % 60, return_index=True)[1])
    np.testing.assert_array_equal(repeated.y_train_, y_repeated[first])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        distinct = CompositionalGPRegressor(**settings).fit(X_repeated[first], y_repeated[first])
    assert distinct.noise_variance_ > 1e-3
    assert repeated.noise_variance_ == pytest.approx(distinct.noise_variance_, rel=1e-6)
    X_test = rng.normal(size=(50, 2))
    np.testing.assert_allclose(repeated.predict(X_test), distinct.predict(X_test), rtol=1e-6, atol=1e-9)


def test_replicates_with_their_own_targets_are_all_kept():
    rng = np.random.default_rng(4)
    X = np.repeat(rng.normal(size=(30, 1)), 3, axis=0)
    y = np.cos(X[:, 0]) + 0.2 * rng.normal(size=90)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedRowsWarning)
        model = CompositionalGPRegressor(max_depth=1, random_state=0, n_jobs=1).fit(X, y)
    assert model.X_train_.shape == (90, 1)
    # the replicates' scatter is the noise: 0.2 ** 2 = 0.04
    assert 0.01 < model.noise_variance_ < 0.1


def test_distinct_rows_keeps_data_of_fewer_than_two_distinct_rows():
    X, y = np.ones((5, 2)), np.full(5, 2.0)
    X_kept, y_kept, n_repeated = distinct_rows(X, y)
    assert n_repeated == 0 and X_kept.shape == (5, 2) and y_kept.shape == (5,)


def test_a_column_constant_in_training_gets_no_kernel_and_cannot_move_predictions():
    from skgpsearch import CompositionalGPClassifier

    rng = np.random.default_rng(1)
    x0, x2 = rng.uniform(0, 10, 60), rng.uniform(0, 10, 60)
    X = np.c_[x0, np.full(60, 7.0), x2]
    y = np.sin(x0) + 0.1 * x2 + 0.1 * rng.normal(size=60)
    X_new = np.c_[rng.uniform(0, 10, (5, 1)), np.full(5, 7.0), rng.uniform(0, 10, (5, 1))]
    moved = X_new.copy()
    moved[:, 1] = 100.0
    for model, target in ((CompositionalGPRegressor(max_depth=2, random_state=0), y),
                          (CompositionalGPClassifier(max_depth=1, random_state=0), y > 0.5)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, target)
        predict = model.predict if target is y else model.predict_proba
        np.testing.assert_array_equal(predict(moved), predict(X_new))
        structures = [str(s) for s in getattr(model, "averaged_structures_", [model.structure_])]
        assert not any("(1" in s or ", 1" in s for s in structures), structures


def test_constant_and_two_valued_targets_are_warned_about_plainly():
    X = np.linspace(0.0, 1.0, 20)[:, None]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = CompositionalGPRegressor(max_depth=1, random_state=0).fit(X, np.full(20, 3.0))
    # one warning that says what is the matter, at the caller's fit, and not the degenerate optimum it implies
    assert [str(w.message).split(":")[0] for w in caught] == ["y is constant (every target is 3)"]
    assert caught[0].filename == __file__
    np.testing.assert_allclose(model.predict(np.array([[0.5], [7.0]])), 3.0)
    with pytest.warns(UserWarning, match="y takes only two values: if they are class labels, use "
                                         "CompositionalGPClassifier"):
        CompositionalGPRegressor(max_depth=1, random_state=0).fit(X, (np.arange(20) % 2).astype(float))


def test_white_noise_terms_are_noise_not_uncertainty_about_f():
    from skgpsearch.grammar import FixedStructureGrammar, parse

    rng = np.random.default_rng(3)
    X = np.sort(rng.uniform(0.0, 10.0, 80))[:, None]
    y = 0.3 * X[:, 0] + (0.1 + 0.1 * X[:, 0]) * rng.normal(size=80)  # noise that grows along the input
    model = CompositionalGPRegressor(grammar=FixedStructureGrammar(parse("LIN(0) + LIN(0) * WN")), random_state=0).fit(X, y)
    X_new = np.array([[2.0], [5.0], [9.0]])
    _, with_noise = model.predict(X_new, return_std=True)
    _, latent = model.predict(X_new, return_std=True, include_noise=False)
    _, latent_cov = model.predict(X_new, return_cov=True, include_noise=False)
    # f is the line: its spread is the slope's and intercept's, far below the noise that grows to 1 at x = 9
    linear = CompositionalGPRegressor(grammar=FixedStructureGrammar(parse("LIN(0)")), random_state=0).fit(X, y)
    assert np.all(latent < 0.5 * with_noise) and with_noise[2] > with_noise[0]
    np.testing.assert_allclose(np.sqrt(np.diag(latent_cov)), latent, rtol=1e-6)
    assert np.all(latent < 3 * linear.predict(X_new, return_std=True, include_noise=False)[1])


def test_a_grammar_instance_is_checked_and_tuned_as_a_parameter():
    from sklearn.base import clone

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, size=(30, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    # a change operator on a column X does not have: the start hints read it first (IndexError deep inside)
    with pytest.raises(ValueError, match=r"CP\(4, SE\(0\), SE\(0\)\) uses column 4, but the data has 2 columns"):
        cheap(grammar=FixedStructureGrammar(parse("CP(4, SE(0), SE(0))"))).fit(X, y)
    # a structure's text is read as the structure (it failed inside fit: 'str' object has no attribute 'leaves')
    model = cheap(grammar=FixedStructureGrammar("SE(0) + LIN(1)")).fit(X, y)
    assert str(model.structure_) == "SE(0) + LIN(1)"
    with pytest.raises(ValueError, match="structure must be a structure .* or its text, got int"):
        cheap(grammar=FixedStructureGrammar(3)).fit(X, y)
    # the nested parameters get_params lists can be set (GridSearchCV's grammar__max_terms)
    searched = CompositionalGPRegressor(grammar=CompositionalGrammar(["SE", "LIN"]))
    assert searched.get_params()["grammar__max_terms"] is None
    searched.set_params(grammar__max_terms=1)
    assert searched.grammar.max_terms == 1 and clone(searched).get_params()["grammar__max_terms"] == 1
    with pytest.raises(ValueError, match="Invalid parameter 'max_term' for CompositionalGrammar"):
        searched.set_params(grammar__max_term=1)


def test_a_criterion_weighted_average_counts_a_structure_fitted_twice_once():
    # the search's SE(0) * SE(1) is fitted again as a baseline: both had entered the average of three, at twice
    # its weight (0.48 against 0.28), and pushed out SE(0, 1)
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 10, (60, 2))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.9 * rng.normal(size=60)
    model = CompositionalGPRegressor(max_depth=2, n_jobs=1, random_state=0, warp_inputs=False,
                                     selection="criterion", model_averaging=3).fit(X, y)
    structures = [str(s) for s in model.averaged_structures_]
    assert len(structures) == 3 == len(set(structures))
    # the weights are exp(criterion - best) over the three best distinct structures the search fitted
    best = {}
    for structure, criterion in zip(model.finalists_["structure"], model.finalists_["criterion"]):
        best[structure] = max(criterion, best.get(structure, -np.inf))
    top = sorted(best.items(), key=lambda item: -item[1])[:3]
    assert structures == [s for s, _ in top]
    expected = np.exp(np.array([c for _, c in top]) - top[0][1])
    np.testing.assert_allclose(model.model_weights_, expected / expected.sum(), rtol=1e-9)


@pytest.mark.slow  # two whole searches of a real series
def test_a_short_series_races_its_candidates_starts_and_refits_its_raced_finalists_with_every_start(monkeypatch):
    # a series under 300 rows fits every candidate with the full start pool; a start that trails the best before
    # it by 30 nats after 50 evaluations stops there, and a finalist whose fit lost starts so is fitted again
    X, y = load_airline(return_X_y=True)
    outcomes = []
    run = pipeline_module.SearchPipeline.run

    def recording_run(self, *args, **kwargs):
        outcomes.append(run(self, *args, **kwargs))
        return outcomes[-1]

    monkeypatch.setattr(pipeline_module.SearchPipeline, "run", recording_run)
    CompositionalGPRegressor(random_state=0, n_jobs=1).fit(X, y)
    [raced_search] = outcomes
    raced = [r for r in raced_search.search.records if r.effort == pipeline_module.RACED_FULL_EFFORT]
    assert raced and all(r.raced_from is not None for r in raced)
    assert all(r.effort != pipeline_module.RACED_FULL_EFFORT for r in raced_search.finalists)
    # without the race: the same search result (within half a nat), at a higher cost
    monkeypatch.setattr(pipeline_module, "EXPLORE_START_RACE", None)
    CompositionalGPRegressor(random_state=0, n_jobs=1).fit(X, y)
    plain_search = outcomes[1]
    assert not any(r.effort == pipeline_module.RACED_FULL_EFFORT for r in plain_search.search.records)
    assert raced_search.best.criterion >= plain_search.best.criterion - 0.5
    evaluations = [sum(r.n_evaluations for r in o.search.records) for o in outcomes]
    assert evaluations[0] < 0.9 * evaluations[1]
