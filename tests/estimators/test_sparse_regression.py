"""A sparse GP regressor: search, prediction, decomposition, and the large-data path (subset, finalists)."""

import math
import pickle
import time

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import skgpsearch._search._pipeline as pipeline_module
import skgpsearch._search._regression as regression_module
from skgpsearch import CompositionalGPRegressor
from skgpsearch._engine._exact import RegressionObjective


@pytest.fixture(scope="module")
def periodic_series():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0, 12, 400))
    y = np.sin(2 * np.pi * x / 1.5) + 0.2 * x + 0.1 * rng.normal(size=400)
    return x[:, None], y


@pytest.fixture(scope="module")
def sparse_model(periodic_series):
    X, y = periodic_series
    return CompositionalGPRegressor(("SE", "PER", "LIN"), max_depth=2, approximation="sparse", n_inducing=60,
                                    random_state=0).fit(X, y)


@pytest.mark.slow
def test_a_sparse_search_finds_the_period_and_predicts_like_the_exact_model(periodic_series, sparse_model):
    X, y = periodic_series
    model = sparse_model
    assert model.approximation_ == "sparse" and model.inducing_inputs_.shape == (60, 1)
    periods = [leaf.params["period"] for leaf in model.structure_.leaves if leaf.kind.periodic]
    assert periods and min(abs(p - 1.5) for p in periods) < 0.02
    exact = CompositionalGPRegressor(("SE", "PER", "LIN"), max_depth=2, approximation="exact",
                                     random_state=0).fit(X, y)
    X_test = np.linspace(0.2, 11.8, 300)[:, None]
    truth = np.sin(2 * np.pi * X_test[:, 0] / 1.5) + 0.2 * X_test[:, 0]
    rmse = [np.sqrt(np.mean((m.predict(X_test) - truth) ** 2)) for m in (model, exact)]
    assert rmse[0] < 0.05 and rmse[0] < 1.5 * rmse[1]
    # the bound is a lower bound of the exact evidence of the same hyperparameters
    objective = RegressionObjective(model._kernel_no_noise, X, (y - model._y_train_mean) / model._y_train_std,
                                    (1e-300, 1e300))
    shift = -len(y) * math.log(model._y_train_std)
    assert model.log_marginal_likelihood_value_ <= objective(model.kernel_.theta) + shift + 1e-6
    assert model.log_marginal_likelihood() == pytest.approx(model.log_marginal_likelihood_value_, rel=1e-9)


@pytest.mark.slow
def test_a_sparse_model_decomposes_and_round_trips(periodic_series, sparse_model):
    X, y = periodic_series
    model = sparse_model
    X_new = np.linspace(-1, 13, 50)[:, None]
    for points in (None, X_new):
        parts = model.decompose(points)
        np.testing.assert_allclose(parts.mean, model.predict(X if points is None else points), atol=1e-8)
    assert "period ≈ 1.5" in model.describe()
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.predict(X_new), model.predict(X_new))
    mean, std = model.predict(X_new, return_std=True)
    _, cov = model.predict(X_new, return_cov=True)
    np.testing.assert_allclose(std, np.sqrt(np.clip(np.diag(cov), 0, None)), atol=1e-8)


def test_sparse_settings_refuse_what_needs_the_exact_model(periodic_series):
    X, y = periodic_series
    with pytest.raises(ValueError, match="exact Gaussian evidence"):
        CompositionalGPRegressor(criterion="loo", approximation="sparse").fit(X, y)
    with pytest.raises(ValueError, match="objective='lml'"):
        CompositionalGPRegressor(objective="map", approximation="sparse").fit(X, y)
    with pytest.raises(ValueError, match="no sparse approximation"):
        CompositionalGPRegressor(likelihood="student_t", approximation="sparse").fit(X, y)


def test_auto_switches_to_sparse_above_the_threshold(periodic_series, monkeypatch):
    X, y = periodic_series
    options = dict(base_kernels=("SE",), max_depth=1, n_inducing=30, random_state=0)
    assert CompositionalGPRegressor(**options).fit(X, y).approximation_ == "exact"
    monkeypatch.setattr(regression_module, "SPARSE_THRESHOLD", 100)
    model = CompositionalGPRegressor(**options).fit(X, y)
    assert model.approximation_ == "sparse" and model.inducing_inputs_.shape == (30, 1)


@pytest.mark.slow
def test_a_large_sparse_fit_searches_a_subset_and_refits_the_finalists(periodic_series, monkeypatch):
    X, y = periodic_series
    monkeypatch.setattr(pipeline_module, "EXPLORE_ROWS", 120)
    monkeypatch.setattr(regression_module, "SPARSE_THRESHOLD", 200)
    model = CompositionalGPRegressor(("SE", "PER", "LIN"), max_depth=2, n_inducing=60, random_state=0).fit(X, y)
    assert model.approximation_ == "sparse"
    results = model.search_results_
    finalists = [i for i, m in enumerate(results["message"]) if m.startswith("finalist refitted on 400 rows")]
    assert 1 <= len(finalists) <= pipeline_module.FIRST_FINALISTS
    assert model.best_score_ == max(results["criterion"][i] for i in finalists)
    assert "finalists refitted on 400 rows" in model.search_stop_reason_
    periods = [leaf.params["period"] for leaf in model.structure_.leaves if leaf.kind.periodic]
    assert periods and min(abs(p - 1.5) for p in periods) < 0.02
    X_test = np.linspace(0.2, 11.8, 300)[:, None]
    truth = np.sin(2 * np.pi * X_test[:, 0] / 1.5) + 0.2 * X_test[:, 0]
    assert np.sqrt(np.mean((model.predict(X_test) - truth) ** 2)) < 0.05


@pytest.mark.slow
def test_a_sparse_search_of_a_table_explores_cheap_fits_on_subsets_of_its_sample(monkeypatch):
    import skgpsearch._search._candidate_fitter as candidate_fitter_module

    # the large-data path at a tenth of its sizes: sample of 200 of the 400 rows, explored on 60-row subsets
    monkeypatch.setattr(regression_module, "SPARSE_THRESHOLD", 300)
    monkeypatch.setattr(pipeline_module, "EXPLORE_ROWS", 200)
    monkeypatch.setattr(candidate_fitter_module, "EXPLORE_SUBSET_FROM_ROWS", 150)
    monkeypatch.setattr(candidate_fitter_module, "EXPLORE_SUBSET_ROWS", 60)
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(400, 2))
    truth = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1]
    y = truth + 0.1 * rng.normal(size=400)
    model = CompositionalGPRegressor(("SE", "LIN"), max_depth=2, n_inducing=40, random_state=0).fit(X, y)
    assert model.approximation_ == "sparse"
    table = model.search_results_
    rows_per_evaluation = [rows / n for rows, n, status in
                           zip(table["evaluated_rows"], table["n_evaluations"], table["status"]) if status == "ok"]
    # explored fits saw 60 rows an evaluation; those fitted again with full effort, and the finalists, more
    assert sum(r == 60 for r in rows_per_evaluation) >= 3
    assert max(rows_per_evaluation) > 60
    assert np.sqrt(np.mean((model.predict(X) - truth) ** 2)) < 0.1


def _bound_and_gradient(model):
    """The sparse model's bound (original units) and its gradient at the fitted hyperparameters."""
    return model.log_marginal_likelihood(model.kernel_.theta, eval_gradient=True)


def test_a_sparse_model_on_few_rows_maximises_its_bound_and_reports_it(periodic_series, monkeypatch):
    X, y = periodic_series
    # forced on fewer rows than SPARSE_THRESHOLD, and more than a search explores: the finalists' refit on all
    # rows is the sparse fit, not the exact one
    monkeypatch.setattr(pipeline_module, "EXPLORE_ROWS", 120)
    model = CompositionalGPRegressor(("SE",), max_depth=1, approximation="sparse", n_inducing=15,
                                     baseline_models=False, random_state=0).fit(X, y)
    bound, gradient = _bound_and_gradient(model)
    assert model.log_marginal_likelihood() == pytest.approx(bound, abs=1e-6)
    assert model.log_marginal_likelihood_on(X, y + 1e-12) == pytest.approx(bound, abs=1e-6)
    # at the bound's optimum (the exact evidence's optimum is tens of nats away in the bound: gradients of 10-1000)
    assert np.max(np.abs(gradient)) < 0.05
    k = model.n_hyperparameters_
    assert model.best_score_ == pytest.approx(bound - 0.5 * k * math.log(len(y)), abs=1e-6)


def test_a_sparse_model_whose_finalists_were_not_refitted_reports_its_bound_on_all_rows(periodic_series, monkeypatch):
    X, y = periodic_series
    monkeypatch.setattr(pipeline_module, "EXPLORE_ROWS", 120)
    monkeypatch.setattr(regression_module, "SPARSE_THRESHOLD", 200)
    # as when the time budget runs out before the finalists' refits on more rows
    monkeypatch.setattr(pipeline_module, "refit_finalists", lambda *args, **kwargs: [])
    model = CompositionalGPRegressor(("SE",), max_depth=1, n_inducing=15, baseline_models=False,
                                     random_state=0).fit(X, y)
    assert model.approximation_ == "sparse" and model.X_train_.shape[0] == 400
    bound, _ = _bound_and_gradient(model)
    assert model.log_marginal_likelihood() == pytest.approx(bound, abs=1e-6)
    assert "hyperparameters are those fitted on the search's 120 rows (it conditions on all 400)" in \
        model.search_stop_reason_


@pytest.mark.slow  # over 3 s on 2 cores
def test_finalists_refitted_on_more_rows_stop_at_the_time_budget(periodic_series, monkeypatch):
    X, y = periodic_series
    monkeypatch.setattr(pipeline_module, "EXPLORE_ROWS", 120)
    monkeypatch.setattr(regression_module, "SPARSE_THRESHOLD", 200)
    deadlines = []
    halving = pipeline_module.SearchPipeline._finalists_by_halving

    def recording_deadline(self, *args):
        deadlines.append(self._deadline)
        return halving(self, *args)

    def late(refit_finalists):
        # each rung's refit starts only once the budget has run out (as when the search took it all)
        def run(records, rungs, *args, **kwargs):
            def after_the_deadline(fit):
                def fit_late(record, rows):
                    time.sleep(max(0.0, deadlines[-1] - time.perf_counter()) + 0.05)
                    return fit(record, rows)
                return fit_late
            return refit_finalists(records, [(rows, after_the_deadline(fit)) for rows, fit in rungs], *args,
                                   **{**kwargs, "stop": None})
        return run

    monkeypatch.setattr(pipeline_module.SearchPipeline, "_finalists_by_halving", recording_deadline)
    monkeypatch.setattr(pipeline_module, "refit_finalists", late(pipeline_module.refit_finalists))
    # (the search on 120 rows takes 0.4 s of the budget; the refits wait for the rest of it)
    with pytest.warns(ConvergenceWarning, match="time budget while fitting the finalists"):
        model = CompositionalGPRegressor(("SE", "PER"), max_depth=1, n_inducing=15, baseline_models=False,
                                         random_state=0, time_budget=3.0, n_jobs=1).fit(X, y)
    assert "finalists' refits on 400 rows stopped before they converged" in model.search_stop_reason_
    # stopped where it started: one evaluation of each refit, none of the hundreds a polish to convergence takes
    table = model.search_results_
    refits = [n for n, m in zip(table["n_evaluations"], table["message"]) if m.startswith("finalist refitted on 400")]
    assert refits and max(refits) <= 2
    assert model.predict(X[:3]).shape == (3,)


def test_the_sparse_approximation_searches_no_white_noise_and_refuses_it_by_name():
    # the bound charges a white-noise term's whole variance to its trace penalty: a LIN * WN finalist refitted on
    # 6 000 rows ended with the signal's variance at 1e-6, everything in the noise
    from skgpsearch.grammar import FixedStructureGrammar

    rng = np.random.default_rng(4)
    X = rng.uniform(0, 10, (150, 1))
    y = np.sin(X[:, 0]) + (0.05 + 0.1 * X[:, 0]) * rng.standard_normal(150)
    model = CompositionalGPRegressor(approximation="sparse", max_depth=1, n_jobs=1, random_state=0).fit(X, y)
    searched = model.search_results_["structure"]
    assert searched and not any("WN" in structure for structure in searched)
    for options in ({"grammar": FixedStructureGrammar("SE(0) + LIN(0) * WN")}, {"base_kernels": ["SE", "WN"]}):
        with pytest.raises(ValueError, match=r"sparse approximation cannot fit white-noise kernels \(WN\).*'exact'"):
            CompositionalGPRegressor(approximation="sparse", max_depth=1, **options).fit(X, y)
    # the exact engine keeps them
    exact = CompositionalGPRegressor(grammar=FixedStructureGrammar("SE(0) + LIN(0) * WN"), n_jobs=1).fit(X, y)
    assert "WN" in str(exact.structure_)


def test_predictions_go_through_blocks_of_rows_with_the_same_result(monkeypatch):
    # all rows at once took about 5 x 8 bytes x m per row (977 MB for 100 000 rows of a 256-inducing-point model)
    import skgpsearch._search._models as models_module

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, (120, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=120)
    model = CompositionalGPRegressor(base_kernels=("SE", "RQ"), max_depth=1, model_averaging=2, n_jobs=1,
                                     selection="criterion", baseline_models=False, random_state=0).fit(X, y)
    new = np.linspace(-2, 12, 1000)[:, None]
    whole = model.predict(new, return_std=True)
    calls = []
    original = models_module.regression_mixture_moments
    monkeypatch.setattr(models_module, "PREDICT_BLOCK_ROWS", 300)
    monkeypatch.setattr(models_module, "regression_mixture_moments",
                        lambda *args, **kwargs: calls.append(len(args[2])) or original(*args, **kwargs))
    blocked = model.predict(new, return_std=True)
    np.testing.assert_allclose(blocked[0], whole[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(blocked[1], whole[1], rtol=1e-12, atol=1e-12)
    assert calls == [300, 300, 300, 100] and len(model.model_weights_) == 2
    assert np.array_equal(model.predict(new), blocked[0])
