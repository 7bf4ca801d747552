"""KernelSearchCV: GridSearchCV semantics for kernel structures, checked against direct refits."""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, DotProduct, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from skgpsearch import KernelSearchCV
from skgpsearch.criteria import get_criterion
from skgpsearch.grammar import parse
from skgpsearch.kernels import from_kernel

from conftest import estimator_checks

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(0, 6, size=(50, 1)), axis=0)
y = np.sin(2.5 * X[:, 0]) + 0.4 * X[:, 0] + 0.1 * rng.normal(size=50)
X2 = rng.uniform(-2, 2, size=(60, 2))
y2 = (np.sin(2 * X2[:, 0]) + X2[:, 1] > 0).astype(int)
KERNELS = [C() * RBF(), C() * RBF() + WhiteKernel(), DotProduct() + WhiteKernel()]


# the checks that fit on their largest data are slow
@estimator_checks(
    fast=[
        KernelSearchCV(GaussianProcessRegressor(), kernels=[RBF(), RBF() + WhiteKernel()]),
        KernelSearchCV(GaussianProcessRegressor(), base_kernels=("SE",), max_depth=1),
        KernelSearchCV(GaussianProcessClassifier(), kernels=[RBF()], scoring="accuracy", cv=2),
    ],
    slow_checks={"check_regressors_train", "check_regressor_data_not_an_array", "check_regressors_int",
                 "check_classifiers_train", "check_positive_only_tag_during_fit"},
)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_fixed_list_in_sample_criterion_equals_direct_fits():
    search = KernelSearchCV(GaussianProcessRegressor(), kernels=KERNELS, scoring="bic").fit(X, y)
    assert search.n_splits_ == 1
    for i, kernel in enumerate(KERNELS):
        direct = GaussianProcessRegressor(kernel=kernel).fit(X, y)
        k = direct.kernel_.n_dims
        expected = direct.log_marginal_likelihood_value_ - 0.5 * k * np.log(len(y))
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(expected, rel=1e-9)
    assert search.best_score_ == max(search.cv_results_["mean_test_score"])
    assert list(search.cv_results_["depth"]) == [0, 0, 0]
    assert search.cv_results_["structure"][1] == "SE(0) + WN"
    assert search.best_structure_ == parse(str(search.best_structure_))
    assert {"params", "split0_test_score", "rank_test_score", "mean_fit_time", "mean_score_time"} <= set(
        search.cv_results_)


def test_cross_validated_scorer_equals_cross_val_score():
    cv = KFold(3, shuffle=True, random_state=0)
    search = KernelSearchCV(GaussianProcessRegressor(), kernels=KERNELS, scoring="r2", cv=cv).fit(X, y)
    assert search.n_splits_ == 3
    for i, kernel in enumerate(KERNELS):
        expected = cross_val_score(GaussianProcessRegressor(kernel=kernel), X, y, cv=cv, scoring="r2").mean()
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(expected, rel=1e-9)


def test_multimetric_with_refit_by_name():
    search = KernelSearchCV(GaussianProcessRegressor(), kernels=KERNELS, scoring=["bic", "r2"], refit="bic",
                            cv=KFold(3)).fit(X, y)
    assert {"mean_test_bic", "mean_test_r2"} <= set(search.cv_results_)
    assert search.best_index_ == int(np.argmax(search.cv_results_["mean_test_bic"]))


def test_grammar_search_levels_warm_start_and_stop():
    search = KernelSearchCV(GaussianProcessRegressor(), base_kernels=("SE", "LIN"), max_depth=3).fit(X, y)
    results = search.cv_results_
    depths = np.asarray(results["depth"])
    assert depths[0] == 1 and set(depths) <= {1, 2, 3}
    # level 2 are the grammar children of level 1's best not scored before, by the in-sample bic
    first = [s for s, d in zip(results["structure"], depths) if d == 1]
    best_first = first[int(np.argmax(np.asarray(results["mean_test_score"])[depths == 1]))]
    from skgpsearch.grammar import CompositionalGrammar

    children = {str(c) for c in CompositionalGrammar(["SE", "LIN"]).expand(parse(best_first), 1)} - set(first)
    assert {s for s, d in zip(results["structure"], depths) if d == 2} == children
    # children start from the parent's fitted hyperparameters (warm start)
    parent = GaussianProcessRegressor(kernel=results["params"][first.index(best_first)]["kernel"]).fit(X, y)
    parent_values = [leaf.params["lengthscale"] for leaf in from_kernel(parent.kernel_, n_features=1).leaves
                     if leaf.name == "SE"]
    for params, d in zip(results["params"], depths):
        if d == 2:
            child = from_kernel(params["kernel"], n_features=1)
            starts = [leaf.params["lengthscale"] for leaf in child.leaves if leaf.name == "SE"]
            assert any(np.isclose(v, parent_values[0], rtol=1e-6) for v in starts)
            # and the added noise term from the parent's fitted noise
            assert params["kernel"].k2.noise_level == pytest.approx(parent.kernel_.k2.noise_level, rel=1e-6)
    # the best score is the criterion of the refitted best model
    assert search.best_score_ == pytest.approx(get_criterion("bic")(search.best_estimator_, X, y), rel=1e-9)


def test_a_gp_that_normalises_its_targets_gets_the_same_search_in_any_units():
    # the candidates' initial values and bounds (the added noise term's too) follow the targets the GP fits
    searches = [KernelSearchCV(make_pipeline(StandardScaler(), GaussianProcessRegressor(normalize_y=True)),
                               kernel_param="gaussianprocessregressor__kernel", base_kernels=("SE", "LIN"),
                               max_depth=2).fit(X, y * scale) for scale in (1.0, 1e4)]
    assert searches[0].best_structure_ == searches[1].best_structure_
    np.testing.assert_allclose(searches[0].best_kernel_.theta, searches[1].best_kernel_.theta, rtol=1e-6)
    np.testing.assert_allclose(searches[1].predict(X) / 1e4, searches[0].predict(X), rtol=1e-6, atol=1e-9)


def test_inside_a_pipeline_and_wrapping_a_pipeline():
    outer = make_pipeline(StandardScaler(), KernelSearchCV(GaussianProcessRegressor(), kernels=KERNELS)).fit(X, y)
    assert outer.predict(X[:3]).shape == (3,)
    inner = KernelSearchCV(
        Pipeline([("scale", StandardScaler()), ("gp", GaussianProcessRegressor())]),
        base_kernels=("SE",), max_depth=2, kernel_param="gp__kernel",
    ).fit(X, y)
    assert "SE(0)" in str(inner.best_structure_)
    assert inner.best_estimator_.predict(X[:2]).shape == (2,)
    with pytest.raises(ValueError, match="kernel_param"):
        KernelSearchCV(make_pipeline(StandardScaler(), GaussianProcessRegressor()), kernels=KERNELS).fit(X, y)


def test_nested_cross_validation_and_grid_search_over_the_search():
    search = KernelSearchCV(GaussianProcessRegressor(), base_kernels=("SE", "LIN"), max_depth=1)
    scores = cross_val_score(search, X, y, cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    grid = GridSearchCV(search, {"scoring": ["bic", "loo"], "max_depth": [1, 2]}, cv=3).fit(X, y)
    assert len(grid.cv_results_["params"]) == 4
    assert grid.best_estimator_.best_structure_ is not None


@pytest.mark.slow  # over 5 s on 2 cores
def test_classifier_search_and_parallel_reproducibility():
    one = KernelSearchCV(GaussianProcessClassifier(), max_depth=2, n_jobs=1).fit(X2, y2)
    two = KernelSearchCV(GaussianProcessClassifier(), max_depth=2, n_jobs=2).fit(X2, y2)
    assert list(one.cv_results_["structure"]) == list(two.cv_results_["structure"])
    np.testing.assert_allclose(one.cv_results_["mean_test_score"], two.cv_results_["mean_test_score"])
    assert {leaf.columns[0] for leaf in one.best_structure_.leaves} <= {0, 1}
    assert one.score(X2, y2) > 0.9
    accuracy = KernelSearchCV(GaussianProcessClassifier(), kernels=[RBF(), C() * RBF()], scoring="accuracy",
                              cv=3).fit(X2, y2)
    assert accuracy.n_splits_ == 3


def test_metadata_routing_passes_groups_to_the_splitter():
    groups = np.repeat(np.arange(5), 10)
    with sklearn.config_context(enable_metadata_routing=True):
        search = KernelSearchCV(GaussianProcessRegressor(), kernels=KERNELS, scoring="r2", cv=GroupKFold(5))
        search.fit(X, y, groups=groups)
    assert search.n_splits_ == 5
    for train_index, test_index in GroupKFold(5).split(X, y, groups):
        assert len(set(groups[train_index]) & set(groups[test_index])) == 0


@pytest.mark.parametrize("routing", [False, True])
def test_groups_reach_the_splitter_and_not_the_refits_of_a_grammar_search(routing):
    # a grammar search refits each level's best on all rows (to start its children there): with the
    # estimator's own fit parameters only, as GridSearchCV's refit
    groups = np.repeat(np.arange(5), 10)
    # (two base kernels: each level's refit is what is checked; the default five made three times the candidates)
    with sklearn.config_context(enable_metadata_routing=routing):
        search = KernelSearchCV(GaussianProcessRegressor(), base_kernels=("SE", "LIN"), scoring="r2",
                                cv=GroupKFold(5), max_depth=2)
        search.fit(X, y, groups=groups)
    assert max(search.cv_results_["depth"]) == 2 and search.n_splits_ == 5
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("estimator, scoring, message", [
    (GaussianProcessRegressor(), "msll", "needs a skgpsearch estimator; scikit-learn's GaussianProcessRegressor can be "
                                         "scored by lml, aic, bic, bic_light, loo, loo_mse"),
    (GaussianProcessRegressor(), "laplace", "needs a skgpsearch estimator"),
    (GaussianProcessClassifier(), "loo", "'loo' does not apply to classification; use one of lml, aic, bic, bic_light"),
    (GaussianProcessClassifier(), "cv_accuracy", "needs a skgpsearch estimator"),
    (GaussianProcessRegressor(), ["bic", "kfold"], "'kfold' needs a skgpsearch estimator"),
])
def test_a_criterion_the_gp_cannot_be_scored_by_is_refused_before_the_search(estimator, scoring, message):
    # (every candidate had scored NaN, and the first was called best)
    target = y if isinstance(estimator, GaussianProcessRegressor) else (X[:, 0] > 0).astype(int)
    refit = scoring[0] if isinstance(scoring, list) else True
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        KernelSearchCV(estimator, scoring=scoring, cv=3, refit=refit, max_depth=1).fit(X, target)


class _Broken(RBF):
    def __call__(self, X, Y=None, eval_gradient=False):
        raise ValueError("broken kernel")


def test_a_failing_candidate_gets_the_error_score_and_the_search_goes_on():
    with pytest.warns(FitFailedWarning):
        search = KernelSearchCV(GaussianProcessRegressor(), kernels=[RBF(), _Broken()]).fit(X, y)
    assert np.isnan(search.cv_results_["mean_test_score"][1])
    assert search.best_index_ == 0
    with pytest.raises(ValueError, match="broken"):
        KernelSearchCV(GaussianProcessRegressor(), kernels=[_Broken()], error_score="raise").fit(X, y)


def test_multi_output_tag_passes_through():
    from sklearn.utils import get_tags

    scored_on_folds = KernelSearchCV(GaussianProcessRegressor(), scoring="neg_mean_squared_error", cv=3)
    assert get_tags(scored_on_folds).target_tags.multi_output
    # the criteria (the default: BIC in sample) score one target
    assert not get_tags(KernelSearchCV(GaussianProcessRegressor())).target_tags.multi_output
    assert not get_tags(KernelSearchCV(GaussianProcessRegressor(), scoring="loo", cv=3)).target_tags.multi_output
    clone(KernelSearchCV(GaussianProcessRegressor(), kernels=KERNELS))


def test_three_classes_are_scored_by_held_out_folds_and_refused_by_the_criteria():
    rng = np.random.default_rng(3)
    Xc = rng.normal(size=(60, 2))
    labels = np.digitize(Xc[:, 0] + 0.5 * Xc[:, 1], [-0.5, 0.5])
    # every candidate's criterion had failed (a kernel per class) and the first was called best
    with pytest.raises(ValueError, match=r"Only binary classification is supported. The type of the target is "
                                         r"multiclass \(3 classes\): the model-selection criteria score a binary"):
        KernelSearchCV(GaussianProcessClassifier(), max_depth=2).fit(Xc, labels)
    # a continuous target is no target of a classifier (it was called "y has 60 classes")
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        KernelSearchCV(GaussianProcessClassifier(), max_depth=2).fit(Xc, Xc[:, 0])
    # the criteria score a binary classifier: the tags say so
    assert not KernelSearchCV(GaussianProcessClassifier()).__sklearn_tags__().classifier_tags.multi_class
    assert KernelSearchCV(GaussianProcessClassifier(), scoring="accuracy",
                          cv=3).__sklearn_tags__().classifier_tags.multi_class
    search = KernelSearchCV(GaussianProcessClassifier(), scoring="accuracy", cv=3, max_depth=2).fit(Xc, labels)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    # the refitted kernel is one per class: the structure is the one the search recorded
    assert str(search.best_structure_) == search.cv_results_["structure"][search.best_index_]


def test_a_noise_only_candidate_is_scored_by_the_criteria():
    # scikit-learn's GP sets no n_features_in_ for a kernel of any input (WhiteKernel alone): it scored NaN
    noise = np.random.default_rng(0).normal(size=50)
    search = KernelSearchCV(GaussianProcessRegressor(random_state=0), kernels=[RBF() + WhiteKernel(), WhiteKernel()],
                            scoring="lml").fit(X, noise)
    direct = GaussianProcessRegressor(WhiteKernel(), random_state=0).fit(X, noise).log_marginal_likelihood_value_
    assert search.cv_results_["mean_test_score"][1] == pytest.approx(direct, rel=1e-10)


def test_criteria_need_a_gp_and_kernels_must_be_kernel_objects():
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.svm import SVR

    # every candidate scored NaN (warnings only) and the first was called best
    with pytest.raises(ValueError, match=r"The criterion 'bic' scores Gaussian-process models, but the estimator's "
                                         r"last step is SVR"):
        KernelSearchCV(SVR(), max_depth=1).fit(X, y)
    # scikit-learn's own errors from deep inside (TypeError, AttributeError) before
    with pytest.raises(ValueError, match="kernels must be a list of scikit-learn kernels"):
        KernelSearchCV(GaussianProcessRegressor(), kernels=RBF()).fit(X, y)
    with pytest.raises(ValueError, match="kernels holds 'SE', a name: .*base_kernels"):
        KernelSearchCV(GaussianProcessRegressor(), kernels=["SE", "LIN"]).fit(X, y)
    with pytest.raises(ValueError, match="estimator must be a scikit-learn estimator"):
        KernelSearchCV(None).fit(X, y)
    # a GP inside a meta-estimator that fits a clone: best_kernel_ is the clone's fitted kernel (it was the
    # candidate's starting values)
    ttr = TransformedTargetRegressor(regressor=GaussianProcessRegressor(random_state=0), transformer=StandardScaler())
    search = KernelSearchCV(ttr, kernel_param="regressor__kernel", max_depth=1, scoring="r2", cv=3).fit(X, y)
    assert search.best_kernel_ == search.best_estimator_.regressor_.kernel_
    assert search.best_kernel_ != search.best_params_["regressor__kernel"]


def test_a_grammar_search_steered_by_a_callable_of_several_metrics():
    from sklearn.metrics import mean_squared_error, r2_score

    def metrics(estimator, X_scored, y_scored):
        predicted = estimator.predict(X_scored)
        return {"r2": r2_score(y_scored, predicted), "nmse": -mean_squared_error(y_scored, predicted)}

    # KeyError: 'mean_test_score' before
    search = KernelSearchCV(GaussianProcessRegressor(random_state=0), scoring=metrics, refit="r2", cv=3,
                            max_depth=2).fit(X, y)
    assert np.isfinite(search.best_score_) and search.best_score_ == max(search.cv_results_["mean_test_r2"])


def test_two_targets_are_scored_by_held_out_folds_and_refused_by_the_criteria():
    Y = np.column_stack([y, -y])
    # criteria score a GP of one target: every candidate had failed and the first was called best
    with pytest.raises(ValueError, match="y has 2 target columns.*scoring='neg_mean_squared_error', cv=5"):
        KernelSearchCV(GaussianProcessRegressor(), base_kernels=("SE", "LIN"), max_depth=2).fit(X, Y)
    with pytest.raises(ValueError, match="y has 2 target columns"):
        KernelSearchCV(GaussianProcessRegressor(), kernels=KERNELS, scoring="bic", cv=3).fit(X, Y)
    # a scikit-learn scorer on folds scores both targets
    search = KernelSearchCV(GaussianProcessRegressor(), kernels=KERNELS, scoring="neg_mean_squared_error",
                            cv=3).fit(X, Y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.predict(X[:4]).shape == (4, 2)


def test_grammar_with_change_operators_scores_changepoint_candidates():
    """A change grammar works in KernelSearchCV: its CP children are scored, and their CV score is cross_val_score's."""
    from skgpsearch.grammar import CompositionalGrammar

    rng = np.random.default_rng(2)
    t = np.linspace(0.0, 10.0, 60)[:, None]
    y = np.where(t[:, 0] > 6.0, np.sin(4 * t[:, 0]), 0.0) + 0.05 * rng.normal(size=60)
    grammar = CompositionalGrammar(["SE", "PER"], change_operators=("CP",))
    search = KernelSearchCV(GaussianProcessRegressor(alpha=1e-2, normalize_y=True), grammar=grammar, max_depth=2,
                            cv=KFold(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(t, y)
    structures = [str(text) for text in search.cv_results_["structure"]]
    depth = np.asarray(search.cv_results_["depth"])
    scores = np.asarray(search.cv_results_["mean_test_score"])
    first = structures[int(np.argmax(np.where(depth == 1, scores, -np.inf)))]  # the parent of depth 2
    assert f"CP(0, {first}, {first})" in structures and f"CP(0, C, {first})" in structures
    i = structures.index(f"CP(0, C, {first})")
    kernel = search.cv_results_["params"][i]["kernel"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = cross_val_score(GaussianProcessRegressor(kernel, alpha=1e-2, normalize_y=True), t, y, cv=KFold(3))
    assert search.cv_results_["mean_test_score"][i] == pytest.approx(expected.mean(), rel=1e-9)
    assert from_kernel(kernel) == parse(f"WN + CP(0, C, {first})")  # the search adds the noise term
