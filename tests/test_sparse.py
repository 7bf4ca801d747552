"""The sparse variational GP: its bound against dense computations, its gradient, posterior and estimator."""

import math
import pickle

import numpy as np
import pytest

import skgpsearch._engine._sparse as sparse_module
import skgpsearch._regressor as regressor_module
from skgpsearch import CompositionalGPRegressor
from skgpsearch._engine._regression import GPPosterior, RegressionObjective
from skgpsearch._engine._sparse import SparseObjective, SparsePosterior, choose_inducing_inputs
from skgpsearch.grammar import parse
from skgpsearch.kernels import DataSummary, to_kernel

STRUCTURES = ["SE(0)", "SE(0) * PER(0) + LIN(1)", "RQ(0, 1) + M32(1)"]


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.sort(rng.uniform(0, 5, n)), rng.uniform(-1, 1, n)])
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def _kernel_and_theta(text, X, y, noise=0.05):
    kernel = to_kernel(parse(text), summary=DataSummary.from_data(X, y))
    return kernel, np.append(kernel.theta, math.log(noise))


def _dense_bound(kernel, X, y, Z, noise):
    """The collapsed bound written densely (n × n matrices), as in Titsias (2009), eq. (9)."""
    Kmm = kernel(Z) + 1e-12 * np.eye(len(Z))
    Knm = kernel(X, Z)
    Q = Knm @ np.linalg.solve(Kmm, Knm.T)
    C = Q + noise * np.eye(len(X))
    sign, logdet = np.linalg.slogdet(C)
    log_normal = -0.5 * (len(X) * math.log(2 * math.pi) + logdet + y @ np.linalg.solve(C, y))
    return log_normal - np.trace(kernel(X) - Q) / (2 * noise)


@pytest.mark.parametrize("text", STRUCTURES)
def test_the_bound_equals_a_dense_computation_and_the_exact_evidence_when_inducing_on_the_data(text):
    X, y = _data()
    kernel, theta = _kernel_and_theta(text, X, y)
    exact = RegressionObjective(kernel, X, y, (1e-6, 10.0))(theta)
    on_data = SparseObjective(kernel, X, y, X, (1e-6, 10.0), block_rows=17)(theta)
    assert on_data == pytest.approx(exact, rel=1e-9, abs=1e-7)
    Z = X[::4]
    bound = SparseObjective(kernel, X, y, Z, (1e-6, 10.0), block_rows=23)(theta)
    # (K_mm of close inducing inputs is ill-conditioned: both sides regularise it slightly differently)
    assert bound == pytest.approx(_dense_bound(kernel, X, y, Z, 0.05), rel=1e-6)
    assert bound <= exact + 1e-6  # (a smooth SE is nearly captured by 15 inducing inputs: no real gap)


def test_the_bound_grows_with_nested_inducing_sets_up_to_the_exact_evidence():
    X, y = _data(80)
    kernel, theta = _kernel_and_theta("SE(0) * PER(0) + LIN(1)", X, y)
    exact = RegressionObjective(kernel, X, y, (1e-6, 10.0))(theta)
    order = np.random.default_rng(1).permutation(len(X))
    values = [SparseObjective(kernel, X, y, X[order[:m]], (1e-6, 10.0))(theta) for m in (5, 10, 20, 40, 80)]
    assert all(b >= a - 1e-8 for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(exact, rel=1e-9)
    assert values[0] < exact - 1.0  # a real gap to close


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("text", STRUCTURES)
def test_the_gradient_matches_finite_differences(text, cache, monkeypatch):
    if not cache:
        monkeypatch.setattr(sparse_module, "TREE_CACHE_BYTES", 0)
    X, y = _data(50)
    kernel, theta = _kernel_and_theta(text, X, y)
    objective = SparseObjective(kernel, X, y, X[::5], (1e-6, 10.0), block_rows=16)
    value, gradient = objective(theta, eval_gradient=True)
    assert value == pytest.approx(objective(theta))
    step = 1e-6
    numeric = np.array([(objective(theta + e) - objective(theta - e)) / (2 * step) for e in step * np.eye(theta.size)])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-5 * (1 + np.max(np.abs(numeric))))


def test_the_posterior_on_the_data_is_the_exact_posterior():
    X, y = _data(40)
    kernel, _ = _kernel_and_theta("SE(0) * PER(0) + LIN(1)", X, y)
    X_new = _data(7, seed=3)[0]
    sparse = SparsePosterior(kernel, 0.05, X, y, X)
    exact = GPPosterior(kernel, 0.05, X, y)
    for option in ({}, {"return_std": True}, {"return_cov": True}):
        ours, theirs = sparse.predict(X_new, **option), exact.predict(X_new, **option)
        np.testing.assert_allclose(ours[0], theirs[0], atol=1e-9)
        if option:
            np.testing.assert_allclose(ours[1], theirs[1], atol=1e-8)
    assert sparse.log_marginal_likelihood == pytest.approx(exact.log_marginal_likelihood, rel=1e-10)


def test_inducing_inputs_spread_over_the_data():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 100, 3000), rng.uniform(0, 1, 3000)])
    Z = choose_inducing_inputs(X, 50, rng)
    assert Z.shape == (50, 2) and len(np.unique(Z, axis=0)) == 50
    # every data point is near an inducing input, in units of the columns' spread
    scale = X.std(axis=0)
    nearest = np.min(np.linalg.norm((X[:, None, :] - Z[None]) / scale, axis=2), axis=1)
    assert np.quantile(nearest, 0.95) < 0.4
    assert np.array_equal(choose_inducing_inputs(X[:10], 50, rng), np.unique(X[:10], axis=0))


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
    monkeypatch.setattr(regressor_module, "SPARSE_THRESHOLD", 100)
    model = CompositionalGPRegressor(**options).fit(X, y)
    assert model.approximation_ == "sparse" and model.inducing_inputs_.shape == (30, 1)


def test_successive_halving_keeps_the_better_half_of_distinct_structures():
    from skgpsearch._candidates import CandidateRecord
    from skgpsearch._search import refit_finalists

    texts = ["SE(0)", "PER(0)", "LIN(0)", "SE(0) + LIN(0)", "SE(0) * PER(0)", "PER(0) + LIN(0)"]
    records = [CandidateRecord(parse(t), criterion=float(i)) for i, t in enumerate(texts)]
    records.append(CandidateRecord(parse("PER(0) + LIN(0)"), criterion=2.0))  # a duplicate structure
    calls = []

    def fit(record, rows):
        calls.append((str(record.structure), rows.size))
        # on more rows the order changes: the simpler structure wins
        return CandidateRecord(record.structure, criterion=-record.structure.n_base_kernels * rows.size)

    rungs = [(np.arange(size), fit) for size in (10, 50, 250)]
    rounds = refit_finalists(records, rungs, 4)
    assert [len(r) for r in rounds] == [4, 2, 1]
    assert [t for t, size in calls if size == 10] == ["PER(0) + LIN(0)", "SE(0) * PER(0)", "SE(0) + LIN(0)", "LIN(0)"]
    assert str(rounds[-1][0].structure) == "LIN(0)"


def test_a_large_sparse_fit_searches_a_subset_and_refits_the_finalists(periodic_series, monkeypatch):
    X, y = periodic_series
    monkeypatch.setattr(regressor_module, "SEARCH_ROWS", 120)
    monkeypatch.setattr(regressor_module, "SPARSE_THRESHOLD", 200)
    model = CompositionalGPRegressor(("SE", "PER", "LIN"), max_depth=2, n_inducing=60, random_state=0).fit(X, y)
    assert model.approximation_ == "sparse"
    results = model.search_results_
    finalists = [i for i, m in enumerate(results["message"]) if m.startswith("finalist refitted on 400 rows")]
    assert 1 <= len(finalists) <= regressor_module.FIRST_FINALISTS
    assert model.best_score_ == max(results["criterion"][i] for i in finalists)
    assert "finalists refitted on 400 rows" in model.search_stop_reason_
    periods = [leaf.params["period"] for leaf in model.structure_.leaves if leaf.kind.periodic]
    assert periods and min(abs(p - 1.5) for p in periods) < 0.02
    X_test = np.linspace(0.2, 11.8, 300)[:, None]
    truth = np.sin(2 * np.pi * X_test[:, 0] / 1.5) + 0.2 * X_test[:, 0]
    assert np.sqrt(np.mean((model.predict(X_test) - truth) ** 2)) < 0.05
