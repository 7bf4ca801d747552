"""The search pipeline's stages: successive halving of finalists, polishing, baselines, selection."""

import dataclasses
import math
import time
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from scipy.special import logsumexp

import skgpsearch._search._pipeline as pipeline_module
from skgpsearch._search._loop import (
    EXPLORE_FULL_EFFORT_COST,
    SearchSettings,
    predicted_next_gain,
    required_improvement,
)
from skgpsearch._search._progress import LevelReport, search_progress
from skgpsearch._search._pipeline import (SearchPipeline, cross_validation_folds, finalists_table, refit_finalists,
                                         resolve_selection, stacking_weights)
from skgpsearch._search._records import FAILED, CandidateRecord
from skgpsearch.criteria import BIC, CallableCriterion
from skgpsearch.grammar import SumOfProductsGrammar, parse
from skgpsearch.kernels import DataSummary


def test_successive_halving_keeps_the_better_half_of_distinct_structures():
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


# -- the stages with a model fitter whose "fits" are a table: the pipeline's logic alone --------------------------

GRAMMAR = SumOfProductsGrammar(["SE"])


@dataclasses.dataclass
class _TableFitter:
    """A candidate fitter whose criterion is a table of (structure, rows) -> value; it records its calls.

    A call's name is the fitter's, with "/explore" or "/polish" appended for those efforts.
    """

    table: object
    name: str
    calls: list
    fail: object = ()
    effort: str = "full"
    max_optimize_samples: object = None

    def __call__(self, expr, X, y, seed, warm_state=None, hints=None):
        name = self.name if self.effort == "full" else f"{self.name}/{self.effort}"
        self.calls.append((name, str(expr), X.shape[0], warm_state))
        if self.fail is True:
            return CandidateRecord(expr, status=FAILED, message="numerical failure")
        value = self.table(str(expr), X.shape[0])
        return CandidateRecord(expr, criterion=value, log_marginal_likelihood=value, warm_state=f"w:{expr}",
                               effort=self.effort)

    def start_hints(self, parent, X, y, period_columns, change_columns):
        return None

    def screen(self, expr, X, y, seed, warm_state=None, hints=None):
        return 0.0

    def duplicates_likelihood(self, expr):
        return False


class _TableModel:
    """A fitted model whose leave-one-out log densities are given."""

    def __init__(self, densities):
        self.densities = densities

    def loo_log_density(self):
        return self.densities


class _TableModelFitter:
    """A ModelFitter over ``n`` rows of 3 columns with table fitters (see skgpsearch._search._pipeline)."""

    extra_initial = ()
    has_loo = True
    discounts_loo_optimism = False
    discount_skips_flat_lengthscales = True
    cross_validates = False
    hopeless_finalist_gap = None
    conditions_on_all_rows = True
    #: (seconds of an evaluation, of a model) on any rows; None: not predicted
    rung_costs = None

    def seconds_on_rows(self, n_rows):
        return self.rung_costs

    @property
    def baseline_margin_se(self):
        return pipeline_module.COMPOSITE_MARGIN_SE

    def __init__(self, n, table, *, explores_samples=True, final=True, baselines=(), fail=False):
        self.X = np.arange(3.0 * n).reshape(n, 3)
        self.y = np.where(np.arange(n) % 2, 1.0, -1.0)
        self.table, self.calls, self.fail = table, [], fail
        self.explores_samples, self.explore_fits_are_final = explores_samples, final
        self.baselines = [parse(b) for b in baselines]
        self.max_rows = None
        self.summary = DataSummary.from_data(self.X)

    def _fitter(self, name, fail=False):
        return _TableFitter(self.table, name, self.calls, fail)

    @property
    def candidate_fitter(self):
        return self._fitter("explore")

    def row_order(self, seed):
        return np.random.default_rng(seed).permutation(self.X.shape[0])

    def sample_fitter(self, rows):
        return self._fitter("sample")

    def refit_fitter(self, n_rows):
        return self._fitter("refit", self.fail)

    def baseline_fitter(self):
        return self._fitter("baseline")

    def baseline_structures(self, grammar):
        return self.baselines

    def model(self, record, rows=None):
        """Leave-one-out densities: those of ``self.densities``, else -5 per row."""
        n = self.X.shape[0] if rows is None else rows.size
        return _TableModel(getattr(self, "densities", {}).get(str(record.structure), np.full(n, -5.0)))


def _pipeline(**settings):
    return SearchPipeline(SearchSettings(**{"max_depth": 2, **settings}))


def _simpler_wins_on_more_rows(text, rows):
    """On the sample the richest structure wins; from 500 rows on, the one with fewest base kernels."""
    size = parse(text).n_base_kernels
    return float(size) if rows <= 100 else float(-size * rows + len(text))


def test_large_data_are_explored_on_a_sample_and_the_finalists_halved_up_to_all_rows(monkeypatch):
    monkeypatch.setattr(pipeline_module, "EXPLORE_ROWS", 100)
    model_fitter = _TableModelFitter(2600, _simpler_wins_on_more_rows, baselines=["SE(0) * SE(1) * SE(2)"])
    outcome = _pipeline(explore_effort="explore", refine_per_level=1).run(model_fitter, GRAMMAR, BIC(), seed=3)
    explored = {(name, rows) for name, _, rows, _ in model_fitter.calls if name.startswith(("sample", "explore"))}
    assert explored == {("sample/explore", 100), ("sample", 100)}  # never the explore fitter on all rows
    rungs = [rows for name, _, rows, _ in model_fitter.calls if name.startswith("refit")]
    assert sorted(set(rungs)) == [500, 2500, 2600]
    assert rungs.count(500) == pipeline_module.FIRST_FINALISTS and rungs.count(2500) == 2 and rungs.count(2600) == 1
    # every finalist was fitted with full effort on the sample; on more rows each is polished from its fitted
    # values (its warm state), not searched again from the start pool
    first_rung = [text for name, text, rows, _ in model_fitter.calls if name.startswith("refit") and rows == 500]
    full_on_sample = {text for name, text, rows, _ in model_fitter.calls if name == "sample"}
    assert set(first_rung) <= full_on_sample
    explored_only = {text for name, text, _, _ in model_fitter.calls if name == "sample/explore"} - full_on_sample
    assert explored_only, "the test needs structures the search fitted cheaply only"
    assert all(name == "refit/polish" and warm == f"w:{text}"
               for name, text, _, warm in model_fitter.calls if name.startswith("refit"))
    # the baseline was fitted on the sample with the explore effort, and competed for a place
    assert [(name, rows) for name, text, rows, _ in model_fitter.calls if text == "SE(0) * SE(1) * SE(2)"][:1] == [
        ("sample", 100)]
    # the selected model is the best of the last rung, fitted on all rows
    last = [r for r in outcome.search.records if r.message.startswith("finalist refitted on 2600 rows")]
    assert outcome.best in last and outcome.best.criterion == max(r.criterion for r in last)
    assert outcome.best.criterion == _simpler_wins_on_more_rows(str(outcome.best.structure), 2600)
    assert outcome.rows.size == 2600 and np.array_equal(outcome.rows, np.arange(2600))
    assert "finalists refitted on 500, 2500, 2600 rows" in outcome.search.stop_reason
    np.testing.assert_array_equal(outcome.weights, [1.0])
    # the baseline stays marked as one through the rungs: the held-back rule and finalists_ read the mark
    refitted = [r for r in outcome.search.records if r.message.startswith("finalist refitted")]
    assert any(r.baseline for r in refitted)
    assert all(r.baseline == (str(r.structure) == "SE(0) * SE(1) * SE(2)") for r in refitted)


def test_a_time_budget_starts_no_rung_predicted_to_outlast_it(monkeypatch):
    # every fit takes a second of a fake clock; the model fitter predicts each rung's evaluations and models
    monkeypatch.setattr(pipeline_module, "EXPLORE_ROWS", 100)
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])

    class _OneSecondFitter(_TableFitter):
        def __call__(self, *args, **kwargs):
            clock[0] += 1.0
            return super().__call__(*args, **kwargs)

    def run(rung_costs):
        clock[0] = 0.0
        model_fitter = _TableModelFitter(2600, _simpler_wins_on_more_rows)
        model_fitter.conditions_on_all_rows = False
        model_fitter._fitter = lambda name, fail=False: _OneSecondFitter(model_fitter.table, name, model_fitter.calls,
                                                                         fail)
        model_fitter.rung_costs = rung_costs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            outcome = _pipeline(time_budget=60.0, n_jobs=1).run(model_fitter, GRAMMAR, BIC(), seed=3)
        rungs = sorted({rows for name, _, rows, _ in model_fitter.calls if name.startswith("refit")})
        return outcome, rungs

    outcome, rungs = run(None)  # not predicted: every rung starts while there is time
    assert rungs == [500, 2500, 2600]
    # a rung of four refits of two 0.5-s evaluations and four 1-s models: 8 s, started; the next ones (two
    # refits, 4 s) too
    outcome, rungs = run((0.5, 1.0))
    assert rungs == [500, 2500, 2600] and outcome.rows.size == 2600
    # 10-s evaluations: the first rung would take 4 x 2 x 10 + 4 x 1 = 84 s, more than the budget; the model
    # keeps the sample's fit and says that it conditions on the sample only
    outcome, rungs = run((10.0, 1.0))
    assert rungs == [] and outcome.rows.size == 100
    assert "no finalist refitted on 500 rows (predicted to take longer than the time left)" in \
        outcome.search.stop_reason
    assert "fitted on the search's 100 rows (and it conditions on them only, of 2600)" in outcome.search.stop_reason


def test_a_time_budget_selects_by_the_criterion_when_the_judges_would_outlast_it(monkeypatch):
    clock, model_fitter = _one_second_fits(monkeypatch)
    model_fitter.table = lambda text, rows: -float(len(text))  # the criterion prefers the shortest structure...
    model_fitter.densities = {"SE(0) * SE(1) * SE(2)": np.zeros(40)}  # ... a baseline predicts best
    for rung_costs, selection in ((None, "loo"), ((0.1, 1.0), "loo"), ((0.1, 100.0), "criterion")):
        clock[0] = 0.0
        model_fitter.rung_costs = rung_costs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            outcome = _pipeline(max_depth=2, time_budget=30.0, selection="loo").run(model_fitter, GRAMMAR, BIC(),
                                                                                   seed=0)
        assert outcome.selection == selection
        assert (str(outcome.best.structure) == "SE(0) * SE(1) * SE(2)") == (selection == "loo")
        assert ("leave-one-out densities were predicted to take longer" in outcome.search.stop_reason) == (
            selection == "criterion")


def test_a_criterion_that_reads_a_model_explores_all_rows(monkeypatch):
    monkeypatch.setattr(pipeline_module, "EXPLORE_ROWS", 100)
    model_fitter = _TableModelFitter(300, _simpler_wins_on_more_rows)
    outcome = _pipeline().run(model_fitter, GRAMMAR, CallableCriterion(lambda est, X, y: 0.0), seed=0)
    assert {rows for _, _, rows, _ in model_fitter.calls} == {300} and outcome.rows is None


def test_when_every_finalist_fails_the_explorations_best_is_kept(monkeypatch):
    monkeypatch.setattr(pipeline_module, "EXPLORE_ROWS", 100)
    model_fitter = _TableModelFitter(400, _simpler_wins_on_more_rows, fail=True)
    outcome = _pipeline().run(model_fitter, GRAMMAR, BIC(), seed=0)
    best_explored = max((r for r in outcome.search.records if r.ok and r.depth is not None
                         and not r.message.startswith("finalist")), key=lambda r: r.criterion)
    assert outcome.best is best_explored and outcome.rows.size == 100
    assert ("every finalist failed to fit on more rows: the model's hyperparameters are those fitted on the "
            "search's 100 rows (it conditions on all 400)") in outcome.search.stop_reason
    assert any(r.status == FAILED and r.message.startswith("finalist refitted on 400 rows") for r in
               outcome.search.records)


def test_on_all_rows_a_subset_optimum_is_polished_and_the_baselines_compete_at_the_end():
    def table(text, rows):
        return {"SE(0) + SE(1)": 5.0, "SE(0) * SE(1) * SE(2)": 4.0}.get(text, -float(len(text)))

    model_fitter = _TableModelFitter(50, table, final=False, baselines=["SE(0) * SE(1) * SE(2)"])
    refits = {"SE(0) + SE(1)": 6.0}
    model_fitter.refit_fitter = lambda n: _TableFitter(lambda t, r: refits.get(t, -99.0), "refit", model_fitter.calls)
    outcome = _pipeline(max_depth=2).run(model_fitter, GRAMMAR, BIC(), seed=0)
    # the search's best, polished on all rows from its optimum only (the "polish" effort, not another start
    # pool): the polish is better, so it replaces the record
    assert [(name, text) for name, text, _, _ in model_fitter.calls if name.startswith("refit")] == [
        ("refit/polish", "SE(0) + SE(1)")]
    assert str(outcome.best.structure) == "SE(0) + SE(1)" and outcome.best.criterion == 6.0
    # the baseline was fitted on all rows with full effort; it is in the results, never expanded
    baseline = [r for r in outcome.search.records if str(r.structure) == "SE(0) * SE(1) * SE(2)"]
    assert len(baseline) == 1 and baseline[0].message == "baseline, fitted on all rows after the search"
    assert ("baseline", "SE(0) * SE(1) * SE(2)", 50, None) in model_fitter.calls
    # a worse polish leaves the record as it was
    refits["SE(0) + SE(1)"] = 1.0
    outcome = _pipeline(max_depth=2).run(_with_refits(table, refits), GRAMMAR, BIC(), seed=0)
    assert outcome.best.criterion == 5.0


def test_the_finalists_fits_are_sent_costliest_first_and_matched_back_to_their_structures():
    # breast_cancer: the additive baseline, sent last, ran alone for 4 s after the other fits had ended
    def table(text, rows):
        return {"SE(0) + SE(1)": 5.0, "SE(0)": 3.0, "SE(0) * SE(1) * SE(2)": 4.0}.get(text, -float(len(text)))

    baselines = ["SE(0) * SE(1) * SE(2)", "SE(0) + SE(1) + SE(2)"]
    model_fitter = _TableModelFitter(50, table, final=False, baselines=baselines)
    refits = {"SE(0) + SE(1)": 6.0, "SE(0)": 3.5}
    model_fitter.refit_fitter = lambda n: _TableFitter(lambda t, r: refits.get(t, -99.0), "refit", model_fitter.calls)
    outcome = _pipeline(max_depth=2, selection="loo").run(model_fitter, GRAMMAR, BIC(), seed=0)
    stage = [(name, text) for name, text, _, _ in model_fitter.calls if name in ("refit/polish", "baseline")]
    # the full-effort baselines before the one-start polishes; within each, more base kernels x hyperparameters first
    assert [name for name, _ in stage] == ["baseline"] * 2 + ["refit/polish"] * (len(stage) - 2)
    assert stage[0][1] == "SE(0) + SE(1) + SE(2)"
    costs = [pipeline_module.fit_cost(parse(text), polish=name == "refit/polish") for name, text in stage]
    assert costs == sorted(costs, reverse=True)
    # each result went back to its own structure
    fitted = {str(r.structure): r.criterion for r in outcome.finalists}
    assert fitted["SE(0) + SE(1)"] == 6.0 and fitted["SE(0) * SE(1) * SE(2)"] == 4.0
    assert fitted["SE(0) + SE(1) + SE(2)"] == table("SE(0) + SE(1) + SE(2)", 50)


def _with_refits(table, refits):
    model_fitter = _TableModelFitter(50, table, final=False)
    model_fitter.refit_fitter = lambda n: _TableFitter(lambda t, r: refits.get(t, -99.0), "refit", model_fitter.calls)
    return model_fitter


def test_a_baseline_that_beats_the_search_is_selected():
    model_fitter = _TableModelFitter(40, lambda text, rows: 10.0 if text == "SE(0) * SE(1) * SE(2)" else 1.0,
                                     baselines=["SE(0) * SE(1) * SE(2)"])
    outcome = _pipeline(max_depth=1).run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert str(outcome.best.structure) == "SE(0) * SE(1) * SE(2)" and outcome.best.depth == 1


def test_model_averaging_weights_are_the_normalised_exponentiated_criteria():
    values = {"SE(0)": 0.0, "SE(1)": -1.0, "SE(2)": -2.0, "SE(0) + SE(1)": 1.0, "SE(0) * SE(1)": -30.0}
    model_fitter = _TableModelFitter(40, lambda text, rows: values.get(text, -50.0))
    outcome = _pipeline(max_depth=2, model_averaging=4).run(model_fitter, GRAMMAR, BIC(), seed=0)
    chosen = [str(r.structure) for r in outcome.selected]
    assert chosen == ["SE(0) + SE(1)", "SE(0)", "SE(1)", "SE(2)"]
    expected = np.exp([1.0, 0.0, -1.0, -2.0])
    np.testing.assert_allclose(outcome.weights, expected / expected.sum(), rtol=1e-12)
    # structures below 1e-6 of the selected one's weight are left out
    values["SE(2)"] = 1.0 + np.log(1e-7)
    outcome = _pipeline(max_depth=2, model_averaging=4).run(_TableModelFitter(40, lambda t, r: values.get(t, -50.0)),
                                                            GRAMMAR, BIC(), seed=0)
    assert [str(r.structure) for r in outcome.selected] == ["SE(0) + SE(1)", "SE(0)", "SE(1)"]


def test_selection_by_leave_one_out_density_and_pseudo_bma():
    # the criterion prefers SE(0) + SE(1); held-out densities prefer the baseline ARD kernel
    def table(text, rows):
        return {"SE(0) + SE(1)": 5.0, "SE(0)": 1.0}.get(text, -float(len(text)))

    model_fitter = _TableModelFitter(40, table, baselines=["SE(0) * SE(1) * SE(2)"])
    model_fitter.densities = {"SE(0) * SE(1) * SE(2)": np.full(40, -0.5), "SE(0) + SE(1)": np.full(40, -0.6),
                              "SE(0)": np.full(40, -0.7)}
    outcome = _pipeline(max_depth=2, selection="loo").run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert str(outcome.best.structure) == "SE(0) * SE(1) * SE(2)" and outcome.selection == "loo"
    # the finalists: the best of each depth and the four best distinct structures, then the baseline
    finalists = [str(r.structure) for r in outcome.finalists]
    assert finalists[0] == "SE(0) + SE(1)" and finalists[-1] == "SE(0) * SE(1) * SE(2)" and "SE(0)" in finalists
    assert len(finalists) == len(set(finalists)) and len(finalists) <= pipeline_module.PREDICTIVE_FINALISTS + 3
    assert outcome.best.predictive_score == pytest.approx(-20.0)
    # every structure of the search predicts worse than the baseline: all are held back
    assert {str(r.structure) for r in outcome.held_back} == set(finalists[:-1])
    # model averaging weights the k best by exp(leave-one-out density - best) (pseudo-BMA); without a
    # baseline nothing is held back
    model_fitter.baselines = []
    outcome = _pipeline(max_depth=2, selection="loo", model_averaging=2).run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert [str(r.structure) for r in outcome.selected] == ["SE(0) + SE(1)", "SE(0)"] and not outcome.held_back
    np.testing.assert_allclose(outcome.weights, np.exp([0.0, -4.0]) / np.exp([0.0, -4.0]).sum(), rtol=1e-12)
    # by the criterion, as before: the search's best
    outcome = _pipeline(max_depth=2, selection="criterion").run(_TableModelFitter(40, table), GRAMMAR, BIC(), seed=0)
    assert str(outcome.best.structure) == "SE(0) + SE(1)" and outcome.finalists[0].predictive_score is None


def test_structures_not_clearly_better_than_the_best_baseline_are_held_back(monkeypatch):
    # gains over the baseline of mean 0.05 and sd 0.5 on 40 rows (sum 2 < one standard error, 3.2): held back;
    # of mean 0.3 and sd 0.2 (sum 12 > 1.3): kept, and stacking weighs it against the baselines only
    rng = np.random.default_rng(0)

    def gains(mean, sd):
        z = rng.normal(size=40)
        return mean + sd * (z - z.mean()) / z.std(ddof=1)

    base = rng.normal(-1.0, 0.3, size=40)
    model_fitter = _TableModelFitter(40, lambda text, rows: {"SE(0)": 2.0, "SE(1)": 1.0}.get(text, -50.0),
                                     baselines=["SE(0) * SE(1) * SE(2)", "SE(0) + SE(1) + SE(2)"])
    model_fitter.densities = {"SE(0) * SE(1) * SE(2)": base, "SE(0) + SE(1) + SE(2)": base - 0.1,
                              "SE(0)": base + gains(0.05, 0.5), "SE(1)": base + gains(0.3, 0.2)}
    for selection in ("loo", "stacking"):
        outcome = _pipeline(max_depth=1, selection=selection).run(model_fitter, GRAMMAR, BIC(), seed=0)
        assert [str(r.structure) for r in outcome.held_back] == ["SE(0)", "SE(2)"]  # SE(2): -5 a row, worse
        assert "SE(0)" not in [str(r.structure) for r in outcome.selected]
        assert str(outcome.best.structure) == "SE(1)"
        table = finalists_table(outcome)
        assert [s for s, h in zip(table["structure"], table["held_back"]) if h] == ["SE(0)", "SE(2)"]
    # with a larger margin SE(1) is held back too, and a baseline is selected
    monkeypatch.setattr(pipeline_module, "COMPOSITE_MARGIN_SE", 20.0)
    outcome = _pipeline(max_depth=1, selection="loo").run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert str(outcome.best.structure) == "SE(0) * SE(1) * SE(2)" and len(outcome.held_back) == 3


def test_the_constant_model_is_never_held_back():
    # a classifier's constant model (its extra_initial structure) is simpler than any baseline: on labels without
    # signal it had been held back as "not clearly better than the best baseline", and a baseline was selected
    model_fitter = _TableModelFitter(40, lambda text, rows: {"SE(0)": 2.0}.get(text, -50.0),
                                     baselines=["SE(0) * SE(1) * SE(2)"])
    model_fitter.extra_initial = (parse("SE(1)"),)  # (a stand-in for C: the table grammar has no constant)
    rng = np.random.default_rng(1)
    base = rng.normal(-1.0, 0.3, size=40)
    noise = rng.normal(size=40)
    noise = 0.3 * (noise - noise.mean()) / noise.std()
    # gains of 0.01 a row, sd 0.3: better on average, far from clearly (0.4 in all against a standard error of 1.9)
    model_fitter.densities = {"SE(0) * SE(1) * SE(2)": base, "SE(1)": base + 0.01 + noise, "SE(0)": base - 0.01}
    outcome = _pipeline(max_depth=1, selection="loo").run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert str(outcome.best.structure) == "SE(1)"
    assert [str(r.structure) for r in outcome.held_back] == ["SE(0)", "SE(2)"]  # SE(2): -5 a row


def test_a_baseline_the_search_reached_itself_is_still_a_baseline():
    # SE(0) is a baseline here and the search's best at depth 1: fitted once, marked a baseline, never held back
    # although it does not beat the best baseline
    model_fitter = _TableModelFitter(40, lambda text, rows: {"SE(0)": 2.0}.get(text, -50.0),
                                     baselines=["SE(0)", "SE(0) * SE(1) * SE(2)"])
    base = np.random.default_rng(1).normal(-1.0, 0.3, size=40)
    model_fitter.densities = {"SE(0) * SE(1) * SE(2)": base, "SE(0)": base - 0.01, "SE(1)": base - 0.02}
    outcome = _pipeline(max_depth=1, selection="loo").run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert ("baseline", "SE(0)", 40, None) not in model_fitter.calls
    se0 = [r for r in outcome.finalists if str(r.structure) == "SE(0)"]
    assert len(se0) == 1 and se0[0].baseline and se0[0].message != "baseline, fitted on all rows after the search"
    assert [str(r.structure) for r in outcome.held_back] == ["SE(1)", "SE(2)"]
    table = finalists_table(outcome)
    assert table["baseline"][table["structure"].index("SE(0)")] and not table["held_back"][
        table["structure"].index("SE(0)")]


def test_stacking_weights_maximise_the_held_out_log_score():
    rng = np.random.default_rng(1)
    densities = rng.normal(size=(200, 3)) - np.array([0.0, 0.3, 1.5])
    weights = stacking_weights(densities)
    assert weights.sum() == pytest.approx(1.0) and np.all(weights >= 0)

    def negative_score(z):
        w = np.exp(z - logsumexp(z))
        return -np.sum(logsumexp(densities + np.log(w), axis=1))

    independent = minimize(negative_score, np.zeros(3), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                                                                                         "maxiter": 20000})
    assert -negative_score(np.log(np.maximum(weights, 1e-300))) >= -independent.fun - 1e-6
    # one model that predicts every point better takes all the weight
    assert stacking_weights(np.column_stack([np.zeros(50), np.full(50, -1.0)]))[0] == pytest.approx(1.0, abs=1e-6)


def test_stacking_selects_a_mixture_of_complementary_finalists():
    # each of two finalists predicts half the rows well: stacking weights them near one half each
    values = {"SE(0)": 1.0, "SE(1)": 0.9}
    model_fitter = _TableModelFitter(40, lambda text, rows: values.get(text, -50.0))
    half = np.arange(40) < 20
    model_fitter.densities = {"SE(0)": np.where(half, 0.0, -3.0), "SE(1)": np.where(half, -3.0, 0.0)}
    outcome = _pipeline(max_depth=1, selection="stacking").run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert sorted(str(r.structure) for r in outcome.selected) == ["SE(0)", "SE(1)"]
    np.testing.assert_allclose(outcome.weights, [0.5, 0.5], atol=1e-3)


@pytest.mark.parametrize("discounts", [False, True])
def test_stacking_discounts_the_optimism_of_each_finalists_hyperparameters(discounts):
    # two finalists with nearly the same leave-one-out densities: undiscounted, stacking splits the weight;
    # discounted by one nat per hyperparameter, the one with fewer hyperparameters takes it all
    n = 40
    values = {"SE(0)": 1.0, "SE(1)": 0.9}
    model_fitter = _TableModelFitter(n, lambda text, rows: values.get(text, -50.0))
    model_fitter.discounts_loo_optimism = discounts
    rng = np.random.default_rng(0)
    shared = rng.normal(size=n) - 1.0
    model_fitter.densities = {"SE(0)": shared, "SE(1)": shared + 0.01 * rng.normal(size=n)}
    n_hyper = {"SE(0)": 3, "SE(1)": 7}
    fit = _TableFitter.__call__

    def with_hyperparameters(self, expr, *args, **kwargs):
        return dataclasses.replace(fit(self, expr, *args, **kwargs), n_hyperparameters=n_hyper.get(str(expr), 3))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_TableFitter, "__call__", with_hyperparameters)
        outcome = _pipeline(max_depth=1, selection="stacking").run(model_fitter, GRAMMAR, BIC(), seed=0)
    scored = [r for r in outcome.finalists if r.predictive_score is not None]
    assert {str(r.structure) for r in scored} >= set(n_hyper)
    densities = np.column_stack([model_fitter.densities.get(str(r.structure), np.full(n, -5.0)) for r in scored])
    optimism = np.array([r.n_hyperparameters for r in scored]) / n if discounts else 0.0
    expected = stacking_weights(densities - optimism)
    weights = dict(zip(map(id, outcome.selected), outcome.weights))
    np.testing.assert_allclose([weights.get(id(r), 0.0) for r in scored], expected / expected.sum(), atol=1e-6)
    chosen = {str(r.structure): w for r, w in zip(outcome.selected, outcome.weights)}
    if discounts:
        # 4 hyperparameters more cost 0.1 nat a row here, far more than the 0.01-nat noise between the two
        assert chosen == {"SE(0)": pytest.approx(1.0)}
    else:
        assert chosen.get("SE(1)", 0.0) > 0.1


def test_cross_validation_folds_cover_every_row_once():
    for n in (3, 13, 41):
        folds = cross_validation_folds(n, seed=7)
        assert len(folds) == min(5, n)
        tests = np.concatenate([test for _, test in folds])
        assert sorted(tests) == list(range(n))
        for train, test in folds:
            assert sorted(np.concatenate([train, test])) == list(range(n)) and max(test.size for _, test in folds) - test.size <= 1
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(cross_validation_folds(20, 1), cross_validation_folds(20, 1)))


class _CrossValidatingModelFitter(_TableModelFitter):
    """Its select stage scores the densities of ``cv_densities`` (from refits), not leave-one-out ones."""

    cross_validates = True
    discounts_loo_optimism = True

    def cross_validated_log_density(self, record, folds, seed):
        self.cv_calls.append([test for _, test in folds])
        refit = dataclasses.replace(record, n_evaluations=10, evaluated_rows=320, fit_time=0.0)
        return self.cv_densities.get(str(record.structure), np.full(self.X.shape[0], -5.0)), [refit] * len(folds)


def test_a_cross_validating_model_fitter_stacks_its_refits_densities_undiscounted():
    # leave-one-out densities favour SE(1); the refits' held-out densities split the weight between both:
    # stacking takes the latter, with no optimism discount, and the table names them cross-validated
    n = 40
    half = np.arange(n) < n // 2
    model_fitter = _CrossValidatingModelFitter(n, lambda text, rows: {"SE(0)": 1.0, "SE(1)": 0.9}.get(text, -50.0))
    model_fitter.cv_calls = []
    model_fitter.densities = {"SE(1)": np.zeros(n)}
    model_fitter.cv_densities = {"SE(0)": np.where(half, 0.0, -3.0), "SE(1)": np.where(half, -3.0, 0.0)}
    outcome = _pipeline(max_depth=1, selection="stacking").run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert sorted(str(r.structure) for r in outcome.selected) == ["SE(0)", "SE(1)"]
    np.testing.assert_allclose(outcome.weights, [0.5, 0.5], atol=1e-3)
    # every finalist scored on the same folds
    assert len(model_fitter.cv_calls) == len(outcome.finalists)
    assert all(all(np.array_equal(a, b) for a, b in zip(c, model_fitter.cv_calls[0])) for c in model_fitter.cv_calls)
    table = finalists_table(outcome)
    assert all(v is None for v in table["loo_log_density"]) and None not in table["cv_log_density"]
    assert table["cv_log_density"][table["structure"].index("SE(0)")] == pytest.approx(n // 2 * -3.0)
    # each record carries its refits' likelihood evaluations
    first = next(r for r in outcome.finalists if str(r.structure) == "SE(0)")
    assert first.n_evaluations >= 5 * 10


def _interrupting(record, folds, seed):
    raise KeyboardInterrupt


@pytest.mark.parametrize("cause", ["interrupt", "time budget"])
def test_finalists_left_without_their_refits_are_all_judged_by_leave_one_out(monkeypatch, cause):
    # the refits' densities would favour SE(0), the leave-one-out ones favour SE(1)
    n = 40
    model_fitter = _CrossValidatingModelFitter(n, lambda text, rows: {"SE(0)": 1.0, "SE(1)": 0.9}.get(text, -50.0))
    model_fitter.cv_calls = []
    model_fitter.densities = {"SE(1)": np.zeros(n)}
    model_fitter.cv_densities = {"SE(0)": np.zeros(n)}
    if cause == "interrupt":
        model_fitter.cross_validated_log_density = _interrupting
    else:
        spent = []
        folds = pipeline_module.cross_validation_folds
        monkeypatch.setattr(pipeline_module, "cross_validation_folds", lambda *a: spent.append(1) or folds(*a))
        monkeypatch.setattr(SearchPipeline, "_out_of_time", lambda self: bool(spent))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = _pipeline(max_depth=1, selection="stacking").run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert str(outcome.best.structure) == "SE(1)" and not outcome.cross_validated
    table = finalists_table(outcome)
    assert all(v is None for v in table["cv_log_density"]) and None not in table["loo_log_density"]
    assert "judged by leave-one-out" in outcome.search.stop_reason
    assert any("interrupted" in str(w.message) for w in caught) == (cause == "interrupt")
    assert not model_fitter.cv_calls


def test_a_time_budget_keeps_back_the_refits_of_a_cross_validating_model_fitter():
    # one second an explore fit, n_jobs=1: the reserve grows by a job for each of 4 finalists and one baseline
    # (its refits on the 5 folds, each from its fitted values), times the margin on modelled time
    pipeline = _pipeline(selection="stacking", time_budget=100.0)
    plain = _TableModelFitter(40, lambda text, rows: 0.0, baselines=["SE(0) * SE(1) * SE(2)"])
    validating = _CrossValidatingModelFitter(40, lambda text, rows: 0.0, baselines=["SE(0) * SE(1) * SE(2)"])
    extra = (pipeline._reserve(validating, GRAMMAR)(lambda size: 1.0, 1)
             - pipeline._reserve(plain, GRAMMAR)(lambda size: 1.0, 1))
    assert extra == pytest.approx(pipeline_module.FINALIST_FIT_COST * (pipeline_module.PREDICTIVE_FINALISTS + 1)
                                  * pipeline_module.CROSS_VALIDATION_JOB_COST)


def test_resolve_selection():
    assert resolve_selection("auto", has_loo=True) == "stacking"
    assert resolve_selection("auto", has_loo=False) == "criterion"
    # one column: a series forecasts, one covariate (irregular or repeated values) is a table of one column
    assert resolve_selection("auto", has_loo=True, forecasts=True, is_series=True) == "forecast"
    assert resolve_selection("auto", has_loo=True, forecasts=True, is_series=False) == "stacking"
    assert resolve_selection("stacking", has_loo=True, forecasts=True, is_series=True) == "stacking"
    assert resolve_selection("forecast", has_loo=True, forecasts=True, is_series=False) == "forecast"
    with pytest.raises(ValueError, match="sparse approximation does not have.*selection='criterion'"):
        resolve_selection("loo", has_loo=False)
    with pytest.raises(ValueError, match="needs one input column.*use 'criterion', 'loo' or 'stacking'"):
        resolve_selection("forecast", has_loo=True, forecasts=False)
    # a sparse model has no leave-one-out densities: only the criterion is offered
    with pytest.raises(ValueError, match=r"needs one input column.*use 'criterion' \(or 'auto'\)"):
        resolve_selection("forecast", has_loo=False, forecasts=False)


def test_a_spent_budget_fits_no_finalists():
    model_fitter = _TableModelFitter(40, lambda text, rows: -float(len(text)), baselines=["SE(0) * SE(1) * SE(2)"])
    outcome = _pipeline(max_depth=3, max_candidates=2, selection="loo").run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert [name for name, _, _, _ in model_fitter.calls] == ["explore", "explore"]
    assert outcome.search.stop_reason == "candidate budget reached" and len(outcome.finalists) == 1


def _one_second_fits(monkeypatch):
    """(a fake clock, a model fitter with two baselines whose every fit takes one second of it)."""
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])

    class _OneSecondFitter(_TableFitter):
        def __call__(self, *args, **kwargs):
            clock[0] += 1.0
            record = super().__call__(*args, **kwargs)
            record.fit_time = 1.0
            return record

    model_fitter = _TableModelFitter(40, lambda text, rows: float(len(text)), baselines=["SE(0) * SE(1) * SE(2)",
                                                                                     "SE(0) + SE(1) + SE(2)"])
    model_fitter._fitter = lambda name, fail=False: _OneSecondFitter(model_fitter.table, name, model_fitter.calls, fail)
    return clock, model_fitter


def test_a_time_budget_keeps_back_what_the_finalists_need(monkeypatch):
    # every fit takes one second; 10 s of budget, one ARD kernel fitted before the search and the additive
    # baseline at the end
    clock, model_fitter = _one_second_fits(monkeypatch)
    progress = []
    # (the warning says what was left: "the search reached its time budget at depth 1" had said it was spent)
    with pytest.warns(ConvergenceWarning, match="stopped at depth 1 with 6 s of its 10-s time budget left, kept for "
                                                "fitting the finalists"):
        outcome = _pipeline(max_depth=5, time_budget=10.0, progress=progress.append).run(model_fitter, GRAMMAR, BIC(),
                                                                                         seed=0)
    assert outcome.search.stop_reason == "time budget reached"
    # the ARD kernel first, then the search, which stopped expanding with 1.5 fits' time kept back; the additive
    # baseline was fitted in it
    calls = [(name, text) for name, text, _, _ in model_fitter.calls]
    assert calls[0] == ("baseline", "SE(0) * SE(1) * SE(2)") and calls[-1] == ("baseline", "SE(0) + SE(1) + SE(2)")
    assert [name for name, _ in calls].count("baseline") == 2
    assert clock[0] <= 10.0 + 1.0
    assert [r.time_left for r in progress if isinstance(r, LevelReport)][0] == pytest.approx(10.0 - 4.0)


def test_a_budget_spent_on_the_first_depth_still_ends_with_one_ard_kernel(monkeypatch):
    # a classifier of 3 classes on 4000 x 5 with 1-3 s per fit had kept SE(0) or SE(1) per class (55 % right, one
    # ARD kernel 89 %): the search's first depth took the budget, and the baselines came after it. Here the
    # richest structure has the best criterion, and the budget holds two fits
    clock, model_fitter = _one_second_fits(monkeypatch)
    with pytest.warns(ConvergenceWarning, match="time budget"):
        outcome = _pipeline(max_depth=5, time_budget=1.5).run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert str(outcome.selected[0].structure) == "SE(0) * SE(1) * SE(2)" and outcome.selected[0].baseline
    assert clock[0] == 2.0  # the ARD kernel, then the search's first fit (a search always fits its first batch)
    # interrupted in the search, the better of its best and the ARD kernel is kept; without a time budget there
    # is no fit before the search
    for time_budget, kept in ((100.0, "SE(0) * SE(1) * SE(2)"), (None, "SE(0)")):
        clock, model_fitter = _one_second_fits(monkeypatch)

        def interrupt(event):
            if isinstance(event, LevelReport):
                raise KeyboardInterrupt

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outcome = _pipeline(max_depth=5, time_budget=time_budget, progress=interrupt).run(
                model_fitter, GRAMMAR, BIC(), seed=0)
        assert outcome.search.stop_reason == "interrupted"
        assert [str(r.structure) for r in outcome.selected] == [kept]
    # on two workers a fit whose starts cannot be split keeps one: a baseline no costlier (the isotropic kernel,
    # not the additive one, whose fit can take twice as long) takes the other
    clock, model_fitter = _one_second_fits(monkeypatch)
    model_fitter.baselines.append(parse("SE(0, 1, 2)"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _pipeline(max_depth=5, time_budget=100.0, n_jobs=2, prefer="threads").run(model_fitter, GRAMMAR, BIC(),
                                                                                  seed=0)
    assert sorted((name, text) for name, text, *_ in model_fitter.calls[:2]) == [
        ("baseline", "SE(0) * SE(1) * SE(2)"), ("baseline", "SE(0, 1, 2)")]
    assert [name for name, *_ in model_fitter.calls].count("baseline") == 3
    # max_candidates bounds the fits: none before the search (its warning says no baselines were compared)
    clock, model_fitter = _one_second_fits(monkeypatch)
    with pytest.warns(ConvergenceWarning, match="no baselines compared"):
        outcome = _pipeline(max_depth=5, time_budget=100.0, max_candidates=2).run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert [name for name, *_ in model_fitter.calls] == ["explore", "explore"]


def test_the_baselines_fitted_before_the_search_are_no_second_finalist_and_survive_a_ctrl_c(monkeypatch):
    # the search reaches the ARD structure too (products best by the table): it was a finalist twice, and
    # stacking gave it two thirds of the weight
    table = lambda text, rows: 10.0 * text.count("*") + len(text)  # noqa: E731
    model_fitter = _TableModelFitter(40, table, explores_samples=False,
                                     baselines=["SE(0) * SE(1) * SE(2)", "SE(0) + SE(1) + SE(2)"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        outcome = _pipeline(max_depth=3, time_budget=100.0, selection="stacking").run(model_fitter, GRAMMAR, BIC(),
                                                                                      seed=0)
    assert str(outcome.search.best.structure) == "SE(0) * SE(1) * SE(2)"
    structures = [str(r.structure) for r in outcome.finalists]
    assert structures.count("SE(0) * SE(1) * SE(2)") == 1 and len(set(structures)) == len(structures)
    # a Ctrl-C before the search's first fit ended: the ARD kernel fitted before it is the model (it had raised)
    calls = []

    class _InterruptedFitter(_TableFitter):
        def __call__(self, *args, **kwargs):
            if self.name == "explore":
                raise KeyboardInterrupt
            return super().__call__(*args, **kwargs)

    model_fitter = _TableModelFitter(40, table, baselines=["SE(0) * SE(1) * SE(2)"])
    model_fitter._fitter = lambda name, fail=False: _InterruptedFitter(table, name, calls, fail)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = _pipeline(max_depth=3, time_budget=100.0).run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert outcome.search.stop_reason == "interrupted"
    assert [str(r.structure) for r in outcome.selected] == ["SE(0) * SE(1) * SE(2)"]
    with pytest.raises(KeyboardInterrupt):  # without a budget nothing was fitted before the search
        _pipeline(max_depth=3).run(model_fitter, GRAMMAR, BIC(), seed=0)


def test_a_time_budget_sends_no_finalist_fit_that_cannot_make_its_evaluations(monkeypatch):
    # one ARD kernel before the search (it always goes, as the search's first fits), 3 s of search: 4 s of 8 are
    # left, and the additive baseline's 1-s fit fits in them, unless an evaluation on these rows is predicted to
    # take 3 s (a fit stops at the deadline, but not inside an evaluation: a classifier's finalists on 1500 rows
    # had run 6 s past a 5-s budget)
    for rung_costs, fitted in ((None, 2), ((1.0, 0.0), 2), ((3.0, 0.0), 1)):
        clock, model_fitter = _one_second_fits(monkeypatch)
        model_fitter.rung_costs = rung_costs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            outcome = _pipeline(max_depth=5, time_budget=8.0).run(model_fitter, GRAMMAR, BIC(), seed=0)
        assert [name for name, *_ in model_fitter.calls].count("baseline") == fitted
        assert ("1 finalist fits left out" in outcome.search.stop_reason) == (fitted == 1)


def test_a_lone_finalist_under_a_time_budget_is_not_judged(monkeypatch):
    clock, model_fitter = _one_second_fits(monkeypatch)
    judged = []
    model = model_fitter.model
    model_fitter.model = lambda record, rows=None: judged.append(record) or model(record, rows)
    for time_budget, n_judged in ((None, 1), (100.0, 0)):
        judged.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            outcome = _pipeline(max_depth=2, max_candidates=1, selection="loo", time_budget=time_budget).run(
                model_fitter, GRAMMAR, BIC(), seed=0)
        # its leave-one-out densities (a model of all rows, and its inverse) would judge nothing under a budget
        assert len(outcome.finalists) == 1 and len(judged) == n_judged


def test_a_time_budget_leaves_out_the_least_wanted_finalist_fits(monkeypatch):
    # room for one baseline: one ARD kernel (the first baseline, fitted before the search), not the costlier
    # additive model that the costliest-first order of the parallel fits had sent first
    clock, model_fitter = _one_second_fits(monkeypatch)
    with pytest.warns(ConvergenceWarning, match="time budget"):
        outcome = _pipeline(max_depth=5, time_budget=1.5).run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert [text for name, text, _, _ in model_fitter.calls if name == "baseline"] == ["SE(0) * SE(1) * SE(2)"]
    assert "1 finalist fits left out" in outcome.search.stop_reason


def test_a_depth_the_time_budget_left_unfitted_is_no_depth_of_the_search(monkeypatch):
    # every fit takes one second; with 9.5 s (one ARD kernel fitted before the search) depth 1 ends with too
    # little left for a batch of depth 2
    _, model_fitter = _one_second_fits(monkeypatch)
    progress = []
    # it was recorded and printed as "depth 2: best none  bic=-inf  (0 candidates ...)", and the warning said depth 2
    with pytest.warns(ConvergenceWarning, match="stopped at depth 1 with"):
        outcome = _pipeline(max_depth=5, time_budget=9.5, progress=progress.append).run(model_fitter, GRAMMAR,
                                                                                         BIC(), seed=0)
    assert outcome.search.stop_reason == "time budget reached"
    assert [level["depth"] for level in outcome.search.levels] == [1]
    assert [report.depth for report in progress if isinstance(report, LevelReport)] == [1]


@pytest.mark.parametrize("where", ["explore stage done", "select", "finalists and selection"])
def test_a_ctrl_c_after_the_explore_stage_keeps_the_searchs_best(monkeypatch, where):
    # it propagated out of fit and the estimator forgot the finished search
    model_fitter = _TableModelFitter(40, lambda text, rows: float(len(text)), baselines=["SE(0) * SE(1) * SE(2)"])

    def progress(event):
        if isinstance(event, str) and event.startswith(where):
            raise KeyboardInterrupt

    if where == "select":
        original, calls = SearchPipeline.select, []

        def interrupted_once(self, *args):
            calls.append(args)
            if len(calls) == 1:
                raise KeyboardInterrupt
            return original(self, *args)

        monkeypatch.setattr(SearchPipeline, "select", interrupted_once)
    def run():
        try:
            return _pipeline(max_depth=2, progress=progress).run(model_fitter, GRAMMAR, BIC(), seed=0)
        except KeyboardInterrupt:  # not to pytest, which would end the session
            pytest.fail(f"a Ctrl-C at {where!r} left the search")

    if where == "finalists and selection":  # the outcome is complete: only the closing note is lost
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            outcome = run()
        assert len(outcome.finalists) > 1 and "interrupted" not in outcome.search.stop_reason
        return
    with pytest.warns(RuntimeWarning, match="interrupted after its explore stage.*keeping the search's best"):
        outcome = run()
    assert outcome.search.stop_reason.endswith("; interrupted in the finalists and selection")
    assert [r.structure for r in outcome.finalists] == [outcome.search.best.structure]


def test_a_time_budget_makes_the_finalists_full_effort_refits_only_when_they_fit(monkeypatch):
    # a fake clock: a screened fit takes one second, a full-effort fit FULL_EFFORT_COST seconds
    import skgpsearch._search._candidate_fitter as candidate_fitter_module

    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(candidate_fitter_module, "SCREENED_FROM_ROWS", 10)
    monkeypatch.setattr(_TableFitter, "full_effort_screens_from", 1000, raising=False)
    full_cost = pipeline_module.FULL_EFFORT_COST

    class _TimedFitter(_TableFitter):
        def __call__(self, *args, **kwargs):
            seconds = 1.0 if self.effort == "screened" else float(full_cost)
            clock[0] += seconds
            record = super().__call__(*args, **kwargs)
            record.fit_time = seconds
            return record

    model_fitter = _TableModelFitter(40, lambda text, rows: float(len(text)))
    model_fitter._fitter = lambda name, fail=False: _TimedFitter(model_fitter.table, name, model_fitter.calls, fail)

    def run(time_budget, refine_per_level=0):
        clock[0] = 0.0
        model_fitter.calls.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            outcome = _pipeline(max_depth=2, time_budget=time_budget, explore_effort="screened",
                                refine_per_level=refine_per_level).run(model_fitter, GRAMMAR, BIC(), seed=0)
        names = [name for name, *_ in model_fitter.calls]
        return outcome, names.count("explore/screened"), names.count("explore"), clock[0]

    # each depth's best refitted with full effort before the next depth expands it: depth 2's parent carries
    # full-effort values, and the best finalist (depth 2's best) needs no refit at the end
    outcome, _, n_full, _ = run(None, refine_per_level=1)
    assert n_full == 2 and outcome.selected[0].effort == "full"
    parent = next(r for r in outcome.search.records if str(r.structure) == outcome.search.records[-1].parent)
    assert parent.effort == "full"
    # unbounded: the depth-1 and depth-2 candidates screened, the best finalist refitted with full effort
    outcome, n_screened, n_full, end = run(None)
    assert n_full == 1 and end == n_screened + full_cost
    # a budget without room for the full-effort refit: the search goes as deep, and the refit is left out
    outcome, n_screened_tight, n_full, end = run(n_screened + full_cost - 1.0)
    assert n_full == 0 and n_screened_tight == n_screened and end <= n_screened + full_cost - 1.0
    assert "no time for full effort" in outcome.search.stop_reason
    assert outcome.selected[0].effort == "screened"


def test_a_time_budget_bounds_the_whole_search_with_large_baselines(monkeypatch):
    # a fake clock: a fit takes one second per base kernel with the explore effort (on all rows) and
    # EXPLORE_FULL_EFFORT_COST times that with full effort; two three-kernel baselines are fitted with full
    # effort (one ARD kernel before the search, the additive one at the end)
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    full_cost = EXPLORE_FULL_EFFORT_COST

    class _TimedFitter(_TableFitter):
        def __call__(self, expr, *args, **kwargs):
            seconds = expr.n_base_kernels * (1.0 if self.effort == "explore" else float(full_cost))
            clock[0] += seconds
            record = super().__call__(expr, *args, **kwargs)
            record.fit_time = seconds
            return record

    model_fitter = _TableModelFitter(40, lambda text, rows: float(len(text)),
                                     baselines=["SE(0) * SE(1) * SE(2)", "SE(0) + SE(1) + SE(2)"])
    model_fitter._fitter = lambda name, fail=False: _TimedFitter(model_fitter.table, name, model_fitter.calls, fail)
    depths = []
    for time_budget in (30.0, 40.0, 60.0, 400.0):
        clock[0] = 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            outcome = _pipeline(max_depth=3, time_budget=time_budget, explore_effort="explore").run(
                model_fitter, GRAMMAR, BIC(), seed=0)
        assert clock[0] <= time_budget
        assert sum(r.baseline for r in outcome.finalists) == 2
        depths.append(max(r.depth for r in outcome.search.records if not r.baseline))
    # more time, a deeper search; the largest budget is not binding
    assert depths == sorted(depths) and depths[0] < depths[-1] == 3


def test_min_improvement_stops_on_small_gains():
    gains = {"SE(0)": 1.0, "SE(0) + SE(1)": 1.5, "SE(0) + SE(1) + SE(2)": 9.0}
    model_fitter = _TableModelFitter(40, lambda text, rows: gains.get(text, -50.0))
    outcome = _pipeline(max_depth=3, min_improvement=1.0).run(model_fitter, GRAMMAR, BIC(), seed=0)
    # depth 2 gained 0.5 nats: kept, and the search went no deeper
    assert str(outcome.best.structure) == "SE(0) + SE(1)" and len(outcome.search.levels) == 2
    assert outcome.search.stop_reason.startswith("improvement of 0.5 at most min_improvement=1")
    deeper = _pipeline(max_depth=3).run(_TableModelFitter(40, lambda text, rows: gains.get(text, -50.0)), GRAMMAR,
                                        BIC(), seed=0)
    assert str(deeper.best.structure) == "SE(0) + SE(1) + SE(2)"


def test_the_multiplicity_penalty_asks_a_depth_for_log_of_its_candidates_in_nats():
    gains = {"SE(0)": 1.0, "SE(0) + SE(1)": 2.5, "SE(0) + SE(1) + SE(2)": 20.0}
    table = lambda text, rows: gains.get(text, -50.0)  # noqa: E731
    outcome = _pipeline(max_depth=3, min_improvement=1.0, multiplicity_penalty=True).run(
        _TableModelFitter(40, table), GRAMMAR, BIC(), seed=0)
    level_2 = [r for r in outcome.search.records if r.depth == 2]
    # depth 2 gained 1.5 nats, more than min_improvement but less than log of its candidates
    assert len(level_2) >= 5 and math.log(len(level_2)) > 1.5
    assert str(outcome.best.structure) == "SE(0) + SE(1)" and len(outcome.search.levels) == 2
    assert outcome.search.stop_reason.startswith(f"improvement of 1.5 at most log({len(level_2)}) = ")
    without = _pipeline(max_depth=3, min_improvement=1.0).run(_TableModelFitter(40, table), GRAMMAR, BIC(), seed=0)
    assert str(without.best.structure) == "SE(0) + SE(1) + SE(2)"


def test_the_multiplicity_rule_also_stops_on_the_next_depths_predicted_gain(monkeypatch):
    # improvements of 20 and 6 nats decay geometrically: the next depth's is predicted at 6² / 20 = 1.8 nats,
    # less than log of depth 3's candidates, so depth 4 is not fitted (breast_cancer's depth 4 had gained 3.0
    # nats after 24.6 and 8.6, against log 58 = 4.1: 16 s of a 62-s fit on one core, for nothing)
    gains = {"SE(0)": 1.0, "SE(0) + SE(1)": 21.0, "SE(0) + SE(1) + SE(2)": 27.0,
             "SE(1) + SE(2) + SE(0) * SE(1)": 60.0}
    table = lambda text, rows: gains.get(text, -50.0)  # noqa: E731
    outcome = _pipeline(max_depth=4, min_improvement=1.0, multiplicity_penalty=True).run(
        _TableModelFitter(40, table), GRAMMAR, BIC(), seed=0)
    n_level_3 = len([r for r in outcome.search.records if r.depth == 3])
    assert math.log(n_level_3) > 1.8 and len(outcome.search.levels) == 3
    assert outcome.search.stop_reason == (f"improvement of 6 after 20: the next depth's, predicted 1.8, at most "
                                          f"log({n_level_3}) = {math.log(n_level_3):.3g}")
    # not without the multiplicity rule (a series, a criterion in unknown units), nor when a depth gains more
    # than the one before it
    for penalty, table_gains in ((False, gains), (True, {**gains, "SE(0) + SE(1) + SE(2)": 45.0})):
        deeper = _pipeline(max_depth=4, min_improvement=1.0, multiplicity_penalty=penalty).run(
            _TableModelFitter(40, lambda text, rows: table_gains.get(text, -50.0)), GRAMMAR, BIC(), seed=0)
        assert str(deeper.best.structure) == "SE(1) + SE(2) + SE(0) * SE(1)"
    # a min_improvement above log K is the bound, and the reason names it (it had said "log(7) = 8")
    strict = _pipeline(max_depth=4, min_improvement=5.5, multiplicity_penalty=True).run(
        _TableModelFitter(40, table), GRAMMAR, BIC(), seed=0)
    assert strict.search.stop_reason == ("improvement of 6 after 20: the next depth's, predicted 1.8, at most "
                                         "min_improvement=5.5")
    assert predicted_next_gain([20.0, 6.0]) == pytest.approx(1.8)
    assert predicted_next_gain([6.0]) is None and predicted_next_gain([6.0, 20.0]) is None
    assert predicted_next_gain([-1.0, 3.0]) is None and predicted_next_gain([5.0, -1.0]) is None


@pytest.mark.parametrize("min_improvement, n_candidates, penalty, expected", [
    (1.0, 32, True, math.log(32)), (1.0, 2, True, 1.0), (5.0, 32, True, 5.0), (1.0, 32, False, 1.0),
    (0.0, 1, True, 0.0),
])
def test_required_improvement(min_improvement, n_candidates, penalty, expected):
    assert required_improvement(min_improvement, n_candidates, penalty) == pytest.approx(expected)


def test_explore_effort_fits_candidates_cheaply_and_the_best_of_each_depth_fully(monkeypatch):
    from skgpsearch import CompositionalGPRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(60, 2))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=60)
    monkeypatch.setattr(pipeline_module, "EXPLORE_EFFORT", "explore")
    model = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=2, random_state=0, n_restarts=1).fit(X, y)
    table = model.search_results_
    for depth in (1, 2):
        rows = [i for i, d in enumerate(table["depth"]) if d == depth and table["status"][i] == "ok"
                and not table["message"][i].startswith("baseline")]
        ranked = sorted(rows, key=lambda i: -table["criterion"][i])
        # the two best of the depth were fitted again with full effort: they cost more than the typical other
        cheap = [table["n_evaluations"][i] for i in ranked[2:]]
        assert cheap and min(table["n_evaluations"][i] for i in ranked[:2]) > np.median(cheap)
    # the finalists too (a refit keeps its record's place in the table): each cost more than the cheapest
    finalist_costs = [table["n_evaluations"][table["structure"].index(s)] for s, b in
                      zip(model.finalists_["structure"], model.finalists_["baseline"]) if not b]
    assert min(finalist_costs) > min(table["n_evaluations"])
    full = CompositionalGPRegressor(base_kernels=("SE", "LIN"), max_depth=2, random_state=0, n_restarts=1)
    monkeypatch.setattr(pipeline_module, "EXPLORE_EFFORT", "full")
    full.fit(X, y)
    assert sum(table["n_evaluations"]) < sum(full.search_results_["n_evaluations"])
    assert len(table["structure"]) == len(full.search_results_["structure"])


def test_the_explore_effort_optimises_large_data_on_a_subset_and_scores_every_row(monkeypatch):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import WhiteKernel

    import skgpsearch._search._candidate_fitter as candidate_fitter_module
    from skgpsearch._search._candidate_fitter import with_effort
    from skgpsearch._search._regression import RegressionModelFitter, RegressionOptions
    from skgpsearch.kernels import to_kernel

    # the same rule at smaller sizes (subsets of 150 rows from 400 rows on), to keep the test quick
    EXPLORE_SUBSET_FROM_ROWS, EXPLORE_SUBSET_ROWS = 400, 150
    monkeypatch.setattr(candidate_fitter_module, "EXPLORE_SUBSET_FROM_ROWS", EXPLORE_SUBSET_FROM_ROWS)
    monkeypatch.setattr(candidate_fitter_module, "EXPLORE_SUBSET_ROWS", EXPLORE_SUBSET_ROWS)
    rng = np.random.default_rng(3)
    n = EXPLORE_SUBSET_FROM_ROWS
    X = rng.uniform(-2, 2, size=(n, 2))
    y = 3.0 + 2.0 * (np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=n))
    model_fitter = RegressionModelFitter(RegressionOptions(), X, y, BIC())
    full = model_fitter.candidate_fitter
    assert with_effort(full, "full", n) is full and full.max_optimize_samples is None
    # below the threshold the explore effort sees every row; a user's own subset size is kept when smaller
    assert with_effort(full, "explore", n - 1).max_optimize_samples is None
    user = dataclasses.replace(full, max_optimize_samples=100)
    assert with_effort(user, "explore", n).max_optimize_samples == 100
    explore = with_effort(full, "explore", n)
    structure = parse("SE(0) * SE(1)")
    record = explore(structure, X, model_fitter.y, seed=0)
    assert record.ok and record.effort == "explore"
    # every likelihood evaluation of the optimisation saw EXPLORE_SUBSET_ROWS rows, not all n
    assert record.evaluated_rows == EXPLORE_SUBSET_ROWS * record.n_evaluations
    # ... and its evidence and criterion are those of all n rows at the fitted values (scikit-learn's GP,
    # original units: the normalisation's Jacobian is -n log(y_std))
    kernel = to_kernel(record.structure, summary=model_fitter.summary) + WhiteKernel(record.noise_variance)
    reference = GaussianProcessRegressor(kernel, optimizer=None).fit(X, model_fitter.y)
    lml = reference.log_marginal_likelihood_value_ - n * np.log(model_fitter.y_std)
    np.testing.assert_allclose(record.log_marginal_likelihood, lml, rtol=1e-8)
    np.testing.assert_allclose(record.criterion, lml - 0.5 * record.n_hyperparameters * np.log(n), rtol=1e-8)
    # the subset's optimum is near that of all rows: a full-effort fit gains under 0.01 nats a row
    fully = full(structure, X, model_fitter.y, seed=0)
    assert fully.evaluated_rows == n * fully.n_evaluations
    assert -1e-6 * n <= fully.log_marginal_likelihood - record.log_marginal_likelihood < 0.01 * n


def test_series_blocks_are_runs_of_consecutive_rows_spread_over_the_whole_series():
    from skgpsearch._search._exact_fitter import SCREEN_BLOCKS, series_blocks

    rng = np.random.default_rng(0)
    x = rng.permutation(np.arange(900.0))  # the rows of a series in any order
    rows = series_blocks(x, 400)
    assert rows.size == 400 and np.all(np.diff(rows) > 0)
    times = np.sort(x[rows])
    runs = np.split(times, np.flatnonzero(np.diff(times) > 1) + 1)
    assert len(runs) == SCREEN_BLOCKS and {run.size for run in runs} == {400 // SCREEN_BLOCKS}
    # consecutive times in each run (the series' own spacing), and the first and last rows of the series
    assert all(np.all(np.diff(run) == 1) for run in runs)
    assert times[0] == 0 and times[-1] == 899
    # evenly spread: the gaps between runs differ by at most a row
    gaps = [later[0] - earlier[-1] for earlier, later in zip(runs, runs[1:])]
    assert max(gaps) - min(gaps) <= 1
    np.testing.assert_array_equal(series_blocks(x[:300], 400), np.arange(300))


def test_the_screened_effort_applies_to_series_between_its_threshold_and_the_full_efforts_own_screening():
    from skgpsearch._search._candidate_fitter import SCREENED_FROM_ROWS, with_effort
    from skgpsearch._search._exact_fitter import MIN_SUBSET_SCREEN
    from skgpsearch._search._laplace_fitter import LaplaceCandidateFitter
    from skgpsearch._search._regression import RegressionModelFitter, RegressionOptions

    X = np.linspace(0, 1, 50)[:, np.newaxis]
    full = RegressionModelFitter(RegressionOptions(), X, np.sin(9 * X[:, 0]), BIC()).candidate_fitter
    for n_rows, effort in [(SCREENED_FROM_ROWS - 1, "full"), (SCREENED_FROM_ROWS, "screened"),
                           (MIN_SUBSET_SCREEN - 1, "screened"), (MIN_SUBSET_SCREEN, "full")]:
        assert with_effort(full, "screened", n_rows).effort == effort
    # the Laplace fitter screens its starts from fewer rows already: "screened" is its full effort
    assert LaplaceCandidateFitter.full_effort_screens_from is None or \
        LaplaceCandidateFitter.full_effort_screens_from <= SCREENED_FROM_ROWS


def test_a_forecast_refit_is_screened_whenever_the_series_search_was():
    from skgpsearch._search._candidate_fitter import SCREENED_FROM_ROWS
    from skgpsearch._search._pipeline import FORECAST_FRACTION
    from skgpsearch._search._regression import RegressionModelFitter, RegressionOptions, forecast_split

    rng = np.random.default_rng(0)
    for n_rows, effort in [(SCREENED_FROM_ROWS + 20, "screened"), (SCREENED_FROM_ROWS - 50, "full")]:
        X = np.arange(float(n_rows))[:, np.newaxis]
        y = np.sin(2 * np.pi * X[:, 0] / 12) + 0.01 * X[:, 0] + 0.1 * rng.normal(size=n_rows)
        model_fitter = RegressionModelFitter(RegressionOptions(), X, y, BIC())
        record = model_fitter.candidate_fitter(parse("SE(0)"), X, model_fitter.y, seed=0)
        densities, refitted = model_fitter.forecast_log_density(record, FORECAST_FRACTION, seed=0)
        # the earlier rows of the longer series are fewer than SCREENED_FROM_ROWS: screened all the same
        assert refitted.ok and refitted.effort == effort
        # one finite density per held-out row
        earlier, later = forecast_split(X[:, 0], FORECAST_FRACTION)
        assert earlier.size < SCREENED_FROM_ROWS and densities.shape == later.shape
        assert np.all(np.isfinite(densities))


def test_after_a_screened_exploration_only_the_best_finalists_are_refitted_with_full_effort(monkeypatch):
    import skgpsearch._search._candidate_fitter as candidate_fitter_module

    monkeypatch.setattr(candidate_fitter_module, "SCREENED_FROM_ROWS", 10)
    monkeypatch.setattr(_TableFitter, "full_effort_screens_from", 1000, raising=False)
    values = {"SE(0)": 3.0, "SE(1)": 2.0, "SE(2)": 1.0}
    model_fitter = _TableModelFitter(40, lambda text, rows: values.get(text, -float(len(text))))
    # (no full-effort refits of the depths' best: the finalists stage alone)
    outcome = _pipeline(explore_effort="screened", selection="loo", refine_per_level=0).run(model_fitter, GRAMMAR,
                                                                                           BIC(), seed=0)
    names = {name for name, *_ in model_fitter.calls}
    assert names == {"explore/screened", "explore"}
    refitted = [text for name, text, _, _ in model_fitter.calls if name == "explore"]
    n_full = pipeline_module.SCREENED_FULL_EFFORT_FINALISTS
    assert len(outcome.finalists) > n_full
    assert refitted == [str(r.structure) for r in sorted(outcome.finalists, key=lambda r: -r.criterion)[:n_full]]
    assert sorted(r.effort for r in outcome.finalists) == ["full"] * n_full + ["screened"] * (len(outcome.finalists)
                                                                                             - n_full)


def test_after_a_screened_exploration_finalists_tied_with_the_best_are_refitted_too(monkeypatch):
    """Finalists within FULL_EFFORT_TIE nats of the best criterion get full effort beyond the best few: the
    screened fits cannot tell them apart, and which of them full effort lifts is unknown."""
    import skgpsearch._search._candidate_fitter as candidate_fitter_module

    monkeypatch.setattr(candidate_fitter_module, "SCREENED_FROM_ROWS", 10)
    monkeypatch.setattr(_TableFitter, "full_effort_screens_from", 1000, raising=False)
    values = {"SE(0)": 3.0, "SE(1)": 2.8, "SE(2)": 2.6}  # the same size: criteria 0.2 and 0.4 nats apart
    model_fitter = _TableModelFitter(40, lambda text, rows: values.get(text, -float(len(text))))
    # (no full-effort refits of the depths' best: the finalists stage alone)
    outcome = _pipeline(explore_effort="screened", selection="loo", refine_per_level=0).run(model_fitter, GRAMMAR,
                                                                                           BIC(), seed=0)
    refitted = {text for name, text, _, _ in model_fitter.calls if name == "explore"}
    assert pipeline_module.SCREENED_FULL_EFFORT_FINALISTS < 3 and pipeline_module.FULL_EFFORT_TIE > 0.4
    assert refitted == {"SE(0)", "SE(1)", "SE(2)"}
    best = max(r.criterion for r in outcome.finalists)
    assert all(r.effort == "full" for r in outcome.finalists if r.criterion >= best - pipeline_module.FULL_EFFORT_TIE)


@pytest.mark.slow
def test_a_screened_series_search_gives_its_best_structures_full_effort(monkeypatch):
    import skgpsearch._search._candidate_fitter as candidate_fitter_module
    import skgpsearch._search._exact_fitter as exact_fitter_module
    from skgpsearch import CompositionalGPRegressor
    from skgpsearch.grammar import FixedStructureGrammar

    # the rule at smaller sizes (500 -> 120 rows, 400 -> 80-row blocks), to keep the test quick
    monkeypatch.setattr(candidate_fitter_module, "SCREENED_FROM_ROWS", 120)
    monkeypatch.setattr(exact_fitter_module, "SCREEN_SIZE", 80)
    rng = np.random.default_rng(4)
    n = 160
    X = np.sort(rng.uniform(0, 10, n))[:, np.newaxis]
    y = np.sin(2 * np.pi * X[:, 0] / 1.3) + 0.3 * X[:, 0] + 0.1 * rng.normal(size=n)
    model = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), max_depth=2, selection="criterion",
                                     random_state=0, n_jobs=1).fit(X, y)
    table = model.search_results_
    explored = [i for i, depth in enumerate(table["depth"]) if depth is not None and not table["message"][i]]
    # the explore stage screened the starts on the blocks: fewer rows than all n per evaluation
    assert all(table["evaluated_rows"][i] < n * table["n_evaluations"][i] for i in explored)
    period = next(leaf.params["period"] for leaf in model.structure_.leaves if leaf.name == "PER")
    assert period == pytest.approx(1.3, rel=0.02)
    # the selected structure has full effort: a full-effort fit of it from scratch is no better
    alone = CompositionalGPRegressor(grammar=FixedStructureGrammar(model.structure_.without_values()),
                                     random_state=0, n_jobs=1).fit(X, y)
    assert model.log_marginal_likelihood_value_ >= alone.log_marginal_likelihood_value_ - 1e-3 * n
    # ... and the search evaluated fewer rows than with full effort everywhere
    monkeypatch.setattr(pipeline_module, "ONE_COLUMN_EXPLORE_EFFORT", "full")
    reference = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), max_depth=2, selection="criterion",
                                         random_state=0, n_jobs=1).fit(X, y)
    # (0.79x here: the two finalists' full refits take back part of the saving at this small size)
    assert sum(table["evaluated_rows"]) < 0.95 * sum(reference.search_results_["evaluated_rows"])


def test_cross_validation_refits_forget_the_values_fitted_on_the_rows_they_hold_out():
    # a small table's finalist was fitted on every row, the ones each refit holds out included: its refits start
    # from the structure's own start pool, so its held-out densities are the same whatever values it carries
    from skgpsearch._search._regression import RegressionModelFitter, RegressionOptions

    rng = np.random.default_rng(3)
    X = np.sort(rng.uniform(0, 5, size=(60, 1)), axis=0)
    y = np.sin(2.5 * X[:, 0]) + 0.3 * X[:, 0] + 0.2 * rng.normal(size=60)
    model_fitter = RegressionModelFitter(RegressionOptions(), X, y, BIC())
    assert model_fitter.cross_validates
    fitted = model_fitter.candidate_fitter(parse("SE(0) + LIN(0)"), X, model_fitter.y, seed=0)
    assert fitted.ok and fitted.structure.has_values
    folds = cross_validation_folds(60, seed=2)
    densities, refits = model_fitter.cross_validated_log_density(fitted, folds, seed=4)
    unfitted = dataclasses.replace(fitted, structure=fitted.structure.without_values(), warm_state=None)
    again, _ = model_fitter.cross_validated_log_density(unfitted, folds, seed=4)
    np.testing.assert_allclose(densities, again, rtol=1e-8)
    assert len(refits) == len(folds) and all(r.ok for r in refits)


def test_the_stacking_discount_does_not_count_lengthscales_flat_on_the_data():
    from skgpsearch._search._pipeline import FLAT_LENGTHSCALE_SPANS, LOO_OPTIMISM_PER_HYPERPARAMETER, loo_optimism
    from skgpsearch.grammar import Base

    X = np.column_stack([np.linspace(0, 1, 50), np.linspace(-3, 3, 50), np.linspace(0, 2, 50)])
    summary = DataSummary.from_data(X)
    spans = X.max(axis=0) - X.min(axis=0)

    def ard(lengthscales):
        factors = [Base("SE", c, {"variance": 1.0, "lengthscale": ls}) for c, ls in enumerate(lengthscales)]
        return factors[0] * factors[1] * factors[2]

    # one lengthscale past FLAT_LENGTHSCALE_SPANS spans of its column, one just below it
    flat = ard([1.01 * FLAT_LENGTHSCALE_SPANS * spans[0], 0.99 * FLAT_LENGTHSCALE_SPANS * spans[1], 0.5])
    records = [CandidateRecord(flat, n_hyperparameters=5), CandidateRecord(ard([0.3, 2.0, 0.5]), n_hyperparameters=5)]
    np.testing.assert_allclose(loo_optimism(records, 50, summary),
                               LOO_OPTIMISM_PER_HYPERPARAMETER * np.array([4, 5]) / 50)
    # without the rows' summary (the classifier's discount) every lengthscale counts
    np.testing.assert_allclose(loo_optimism(records, 50), LOO_OPTIMISM_PER_HYPERPARAMETER * np.array([5, 5]) / 50)
    # a kernel over several columns is flat only beyond the widest of their spans (6, column 1's)
    isotropic = Base("SE", (0, 1, 2), {"variance": 1.0, "lengthscale": 30.0})
    wide = Base("SE", (0, 1, 2), {"variance": 1.0, "lengthscale": 61.0})
    np.testing.assert_allclose(loo_optimism([CandidateRecord(isotropic, n_hyperparameters=3),
                                             CandidateRecord(wide, n_hyperparameters=3)], 50, summary),
                               LOO_OPTIMISM_PER_HYPERPARAMETER * np.array([3, 2]) / 50)
    # a periodic kernel's lengthscale is relative to its period: never flat in this sense
    periodic = Base("PER", 0, {"variance": 1.0, "lengthscale": 40.0, "period": 0.3})
    assert loo_optimism([CandidateRecord(periodic, n_hyperparameters=4)], 50, summary)[0] == pytest.approx(4 / 50)


def test_the_polish_effort_optimises_a_fitted_structure_from_its_own_values():
    from skgpsearch._search._regression import RegressionModelFitter, RegressionOptions
    from skgpsearch.kernels import to_kernel

    rng = np.random.default_rng(5)
    n, n_sample = 400, 120
    X = rng.uniform(-2, 2, size=(n, 2))
    y = 1.0 + np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=n)
    model_fitter = RegressionModelFitter(RegressionOptions(), X, y, BIC())
    full = model_fitter.candidate_fitter
    polish = dataclasses.replace(full, effort="polish")
    structure = parse("SE(0) * SE(1)")
    # a finalist as the halving refits it: fitted with full effort on a sample, refitted on all rows
    sample = full(structure, X[:n_sample], model_fitter.y[:n_sample], seed=0)
    polished = polish(sample.structure, X, model_fitter.y, seed=0, warm_state=sample.warm_state)
    fully = full(structure, X, model_fitter.y, seed=0)
    assert polished.ok and polished.effort == "polish"
    # the same optimum as the start pool's full effort on all rows, for a fraction of the evaluations
    assert abs(polished.log_marginal_likelihood - fully.log_marginal_likelihood) < 1e-3 * n
    assert polished.n_evaluations < fully.n_evaluations / 3
    # it starts at the structure's values: from the optimum of all rows it stays there
    again = polish(fully.structure, X, model_fitter.y, seed=1, warm_state=fully.warm_state)
    assert again.n_evaluations <= 10
    assert abs(again.log_marginal_likelihood - fully.log_marginal_likelihood) < 1e-6 * n
    np.testing.assert_allclose(to_kernel(again.structure).theta, to_kernel(fully.structure).theta, atol=1e-2)


def test_the_classifiers_baselines_explore_then_converge():
    from skgpsearch._engine._laplace import LaplaceObjective
    from skgpsearch._search._laplace_fitter import LaplaceCandidateFitter
    from skgpsearch._search import BinaryClassificationModelFitter
    from skgpsearch._search._candidate_fitter import EXPLORE_THEN_POLISH
    from skgpsearch._search._classification import classification_likelihood, classification_summary
    from skgpsearch.criteria import get_criterion
    from skgpsearch.kernels import to_kernel

    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 4))
    y = np.where(X[:, 0] + X[:, 1] ** 2 - 1.0 + 0.5 * rng.normal(size=150) > 0, 1.0, -1.0)
    likelihood = classification_likelihood("probit")
    model_fitter = BinaryClassificationModelFitter(X, y, get_criterion("bic_light"), likelihood,
                                                   classification_summary(X))
    fitter = model_fitter.baseline_fitter()
    assert fitter.effort == EXPLORE_THEN_POLISH
    additive = model_fitter.baseline_structures(SumOfProductsGrammar())[1]
    record = fitter(additive, X, y, seed=0)
    assert record.ok and record.effort == EXPLORE_THEN_POLISH
    # converged: scipy's L-BFGS-B on the Laplace evidence, from the record's optimum, gains next to nothing (the
    # run ends once it stalls: here 3e-4 nats short; the rule allows up to its nats over its window)
    kernel = to_kernel(additive.without_values(), summary=model_fitter.summary)
    objective = LaplaceObjective(kernel, X, y, likelihood, fitter.mean_bounds)

    def negative(theta):
        value, gradient = objective(theta, eval_gradient=True)
        return -value, -gradient

    further = minimize(negative, record.theta, jac=True, method="L-BFGS-B", bounds=objective.bounds)
    assert record.log_marginal_likelihood == pytest.approx(objective(record.theta), abs=1e-4)
    assert -further.fun - record.log_marginal_likelihood < LaplaceCandidateFitter.polish_stall.nats
    # ... from the explore effort's optimum (the same starts and short runs, not stopped early), in fewer
    # evaluations than the full start pool
    explored = dataclasses.replace(fitter, effort="explore")(additive, X, y, seed=0)
    assert record.log_marginal_likelihood >= explored.log_marginal_likelihood - 1e-6
    full = dataclasses.replace(fitter, effort="full")(additive, X, y, seed=0)
    assert record.n_evaluations < full.n_evaluations


def test_the_classifiers_ard_baseline_on_many_columns_leaves_the_white_noise_plateau():
    # 30 columns: at the columns' spreads the ARD product is white noise (every label its own latent value,
    # flat evidence at n log 1/2); without the widened start this fit ended there (-207.94, 146 nats lower)
    from skgpsearch._search import BinaryClassificationModelFitter
    from skgpsearch._search._classification import classification_likelihood, classification_summary
    from skgpsearch.criteria import get_criterion

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 30))
    y = np.where(X[:, :5].sum(axis=1) + 0.5 * rng.normal(size=300) > 0, 1.0, -1.0)
    model_fitter = BinaryClassificationModelFitter(X, y, get_criterion("bic_light"),
                                                   classification_likelihood("probit"), classification_summary(X))
    ard = model_fitter.baseline_structures(SumOfProductsGrammar())[0]
    record = model_fitter.baseline_fitter()(ard, X, y, seed=0)
    plateau = 300 * np.log(0.5)
    assert record.ok and record.log_marginal_likelihood > plateau + 50
    # the relevant columns are the short ones
    lengthscale = {leaf.columns[0]: leaf.params["lengthscale"] for leaf in record.structure.leaves}
    assert max(lengthscale[j] for j in range(5)) < min(lengthscale[j] for j in range(5, 30))


def _count_likelihood_evaluations(monkeypatch):
    """{"n": evaluations, "rows": their rows summed}, counted at the engines' objectives themselves."""
    from skgpsearch._engine._exact import RegressionObjective
    from skgpsearch._engine._laplace import LaplaceObjective

    count = {"n": 0, "rows": 0}

    def counting(method):
        def counted(self, *args, **kwargs):
            count["n"] += 1
            count["rows"] += self.y.shape[0]
            return method(self, *args, **kwargs)
        return counted

    # profile_amplitude scores a start from one factorisation of its own (the exact engine counts it)
    for cls, name in [(RegressionObjective, "__call__"), (RegressionObjective, "profile_amplitude"),
                      (LaplaceObjective, "__call__")]:
        monkeypatch.setattr(cls, name, counting(getattr(cls, name)))
    return count


@pytest.mark.parametrize("task", ["series", "classes"])
def test_every_likelihood_evaluation_of_a_search_is_charged_to_a_record(monkeypatch, task):
    # the explore stage's fits, the finalists' full-effort refits and polishes, the baselines, the trend
    # variants and the forecast refits of the select stage: search_results_ must account for all of them
    from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor

    count = _count_likelihood_evaluations(monkeypatch)
    notes = []
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if task == "series":
            X = np.linspace(0, 6, 60)[:, None]
            y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 0] + 0.1 * rng.normal(size=60)
            model = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), max_depth=2, random_state=0)
        else:
            X = rng.normal(size=(120, 2))
            y = (X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=120) > 0).astype(int)
            model = CompositionalGPClassifier(max_depth=2, random_state=0, max_optimize_samples=60)
        with search_progress(notes.append):
            model.fit(X, y)
    assert model.selection_ == ("forecast" if task == "series" else "stacking")
    results = model.search_results_
    assert sum(results["n_evaluations"]) == count["n"] > 0
    assert sum(results["evaluated_rows"]) == count["rows"]
    stages = [note for note in notes if isinstance(note, str) and note.startswith("finalists and selection:")]
    assert len(stages) == 1 and f"the whole search {count['n']} likelihood evaluations" in stages[0]


@pytest.mark.parametrize("gain", [10.0, 30.0])
def test_a_finalist_far_behind_the_searchs_best_is_not_refitted_for_a_held_out_selection(gain):
    """For a model fitter with a ``hopeless_finalist_gap`` (the classifier's), the best of an early depth,
    ``gain`` nats behind the search's best, is a finalist (polished on all rows, judged by leave-one-out) only
    within that gap; a far worse fit does not win on held-out rows. Without one (the regressor), it is."""
    values = {"SE(0)": 0.0, "SE(0) + SE(1)": gain}
    model_fitter = _TableModelFitter(40, lambda text, rows: values.get(text, -50.0 - len(text)), final=False)
    model_fitter.hopeless_finalist_gap = pipeline_module.HOPELESS_FINALIST_GAP  # the classifier's
    outcome = _pipeline(selection="loo").run(model_fitter, GRAMMAR, BIC(), seed=0)
    within = gain <= pipeline_module.HOPELESS_FINALIST_GAP
    expected = {"SE(0) + SE(1)", "SE(0)"} if within else {"SE(0) + SE(1)"}
    assert {str(r.structure) for r in outcome.finalists} == expected
    polished = {text for name, text, _, _ in model_fitter.calls if name == "refit/polish"}
    assert polished == {str(r.structure) for r in outcome.finalists}
    assert "SE(0)" in {str(r.structure) for r in outcome.search.records}  # the search's records keep every fit
    model_fitter = _TableModelFitter(40, lambda text, rows: values.get(text, -50.0 - len(text)), final=False)
    outcome = _pipeline(selection="loo").run(model_fitter, GRAMMAR, BIC(), seed=0)
    assert {"SE(0) + SE(1)", "SE(0)"} <= {str(r.structure) for r in outcome.finalists}


def test_full_effort_on_large_data_runs_on_a_subset_and_every_finalist_ends_at_an_optimum_of_all_rows(monkeypatch):
    from skgpsearch import CompositionalGPRegressor
    from skgpsearch._engine._exact import RegressionObjective
    import skgpsearch._search._candidate_fitter as candidate_fitter_module
    import skgpsearch._search._loop as loop_module
    from skgpsearch._search._exact_fitter import RegressionCandidateFitter

    # the rules at smaller sizes (cheap fits on 100 of 300 rows, full effort on 120 of 240 rows and more),
    # to keep the test quick
    cap, n = 120, 300
    monkeypatch.setattr(RegressionCandidateFitter, "full_effort_max_rows", cap)
    monkeypatch.setattr(candidate_fitter_module, "EXPLORE_SUBSET_FROM_ROWS", 200)
    monkeypatch.setattr(candidate_fitter_module, "EXPLORE_SUBSET_ROWS", 100)
    subset_sizes = []

    def spy(fitter, n_rows):
        subset = candidate_fitter_module.full_effort_on_subset(fitter, n_rows)
        subset_sizes.append(None if subset is None else subset.max_optimize_samples)
        return subset

    monkeypatch.setattr(loop_module, "full_effort_on_subset", spy)
    monkeypatch.setattr(pipeline_module, "full_effort_on_subset", spy)
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, size=(n, 3))
    # SE(0) * SE(1) + SE(2): no baseline (the ARD product, the additive sum) has this structure
    y = 2.0 * np.exp(-0.5 * (X[:, 0] ** 2 + X[:, 1] ** 2)) + np.sin(2 * X[:, 2]) + 0.1 * rng.normal(size=n)
    model = CompositionalGPRegressor(max_depth=3, warp_inputs=False, random_state=0).fit(X, y)
    # the explore stage's refits and the finalists' full effort ran on the subset ...
    assert subset_sizes and all(size == cap for size in subset_sizes)
    # (which is at most half the rows)
    fitter = RegressionCandidateFitter(summary=None, criterion=None)
    assert candidate_fitter_module.full_effort_on_subset(fitter, 2 * cap - 1) is None
    assert candidate_fitter_module.full_effort_on_subset(fitter, 2 * cap).max_optimize_samples == cap
    # ... and every finalist was then polished on all rows: each model the fit predicts with (a composite of
    # the search among them) is at a stationary point of the log evidence of all rows (the gradient of every
    # hyperparameter off its bounds is ~0; at the optimum of a subset it is not)
    composites = [m for m in model._models if m.structure.without_values() not in
                  {parse("SE(0) * SE(1) * SE(2)"), parse("SE(0) + SE(1) + SE(2)")}]
    assert composites
    for fitted in model._models:
        objective = RegressionObjective(fitted.kernel, fitted.X, fitted.y_fit, fitted.noise_bounds)
        theta = np.append(fitted.kernel.theta, np.log(fitted.posterior.noise_variance))
        _, gradient = objective(theta, eval_gradient=True)
        inside = (theta > objective.bounds[:, 0] + 1e-6) & (theta < objective.bounds[:, 1] - 1e-6)
        assert np.max(np.abs(gradient[inside])) < 0.05, (fitted.structure, gradient)
