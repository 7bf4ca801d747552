"""The search loop, candidate records and progress callbacks, independent of any GP engine."""

import dataclasses
import time

import numpy as np
import pytest

from skgpsearch import CompositionalGPRegressor, LevelReport, search_progress
from skgpsearch._search._candidate_fitter import CandidateFitter
from skgpsearch._search._loop import StructureSearch, expected_fit_seconds, fit_times
from skgpsearch._search._records import FAILED, SCREENED_OUT, CandidateRecord, ScreenScore, run_candidate
from skgpsearch.grammar import CompositionalGrammar, parse
from skgpsearch.kernels import DataSummary

GRAMMAR = CompositionalGrammar(["SE", "LIN", "PER"], change_operators=())


def _search(scores, **options):
    """A search over GRAMMAR on one column whose criterion is looked up in ``scores`` (default -10 per kernel)."""
    evaluated = []

    def evaluate(candidates, deadline):
        for candidate in candidates:
            evaluated.append(str(candidate.structure))
            value = scores.get(str(candidate.structure), -10.0 * candidate.structure.n_base_kernels)
            record = CandidateRecord(candidate.structure, criterion=value)
            if not np.isfinite(value):
                record.fail("failed", "no score")
            yield record

    search = StructureSearch(evaluate, lambda record: GRAMMAR.expand(record.structure, 1),
                             initial=GRAMMAR.initial(1), **{"max_depth": 3, **options})
    return search.run(), evaluated


def test_greedy_search_follows_the_best_child_and_stops_without_improvement():
    result, evaluated = _search({"PER(0)": 1.0, "PER(0) + LIN(0)": 2.0})
    assert str(result.best.structure) == "PER(0) + LIN(0)"
    assert result.stop_reason == "no improvement"
    assert [level["depth"] for level in result.levels] == [1, 2, 3]
    # every structure is evaluated once, and depth 3 only expands the depth-2 winner
    assert len(evaluated) == len(set(evaluated))
    depth_3 = [r for r in result.records if r.depth == 3]
    assert depth_3 and all(r.parent == "PER(0) + LIN(0)" for r in depth_3)


def test_beam_search_expands_the_two_best():
    result, _ = _search({"PER(0)": 1.0, "LIN(0)": 0.5, "LIN(0) * LIN(0)": 3.0}, beam_width=2, max_depth=2)
    parents = {r.parent for r in result.records if r.depth == 2}
    assert parents == {"PER(0)", "LIN(0)"}
    assert str(result.best.structure) == "LIN(0) * LIN(0)"
    assert result.stop_reason == "max_depth reached"


def test_budgets_and_screening():
    result, evaluated = _search({"PER(0)": 1.0, "PER(0) + LIN(0)": 2.0}, max_candidates=5)
    assert len(evaluated) == 5 and result.stop_reason == "candidate budget reached"

    def screen(candidates):
        return [ScreenScore(1.0 if "LIN" in str(c.structure) else 0.0, 3, 30) for c in candidates]

    protected = {parse("SE(0) + PER(0)")}
    result, evaluated = _search({"PER(0)": 1.0}, max_depth=2, screen=screen, max_fits_per_depth=2,
                                protected=protected)
    depth_2 = [r for r in result.records if r.depth == 2]
    fitted = [r for r in depth_2 if r.status != SCREENED_OUT]
    assert len(fitted) == 2 and all(r.status == SCREENED_OUT for r in depth_2 if r not in fitted)
    assert {str(r.structure) for r in fitted} >= {"SE(0) + PER(0)"}  # protected from screening
    assert any("LIN" in str(r.structure) for r in fitted)
    # the screening's cost is every depth-2 candidate's: 3 evaluations of 10 rows each
    assert all(r.n_evaluations == 3 and r.evaluated_rows == 30 for r in depth_2)
    assert result.levels[1]["n_evaluations"] == 3 * len(depth_2)


def _timed_search(monkeypatch, time_budget, **options):
    """A search on a fake clock where a fit takes one second per base kernel, one fit at a time; returns the
    result and the clock at its end."""
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])

    def evaluate(candidates, deadline):
        for candidate in candidates:
            seconds = float(candidate.structure.n_base_kernels)
            clock[0] += seconds
            record = CandidateRecord(candidate.structure, criterion=float(len(str(candidate.structure))))
            record.fit_time = seconds
            yield record

    search = StructureSearch(evaluate, lambda record: GRAMMAR.expand(record.structure, 1),
                             initial=GRAMMAR.initial(1), max_depth=5, time_budget=time_budget, n_jobs=1, **options)
    return search.run(), clock[0]


def test_a_time_budget_sends_only_the_fits_predicted_to_end_within_it(monkeypatch):
    # depth 1: three one-second fits; depth 2: two-second fits, predicted from depth 1's by size
    result, end = _timed_search(monkeypatch, 10.5)
    assert result.stop_reason == "time budget reached"
    assert end <= 10.5
    # it stopped because the next fit would not have ended in time, not before
    assert end + 2.0 > 10.5 and sum(r.depth == 2 for r in result.records) == 3
    # with a reserve for the finalists, a fit of size s counts 3 s of reserve: no two-kernel fit fits in 10.5 s
    result, end = _timed_search(monkeypatch, 10.5, reserve=lambda seconds_for, largest: 3.0 * seconds_for(largest))
    assert [r.depth for r in result.records] == [1, 1, 1] and end == 3.0
    # the first level is fitted whatever the reserve, and the first fit whatever the budget
    result, end = _timed_search(monkeypatch, 2.5, reserve=lambda seconds_for, largest: 100.0)
    assert [r.depth for r in result.records] == [1, 1] and result.stop_reason == "time budget reached"
    result, _ = _timed_search(monkeypatch, 1e-9)
    assert len(result.records) == 1 and result.best is not None


def test_expected_fit_seconds_scales_with_the_structure_size():
    records = [CandidateRecord(parse(text), criterion=0.0) for text in ("SE(0)", "PER(0)", "SE(0) + PER(0)", "LIN(0)")]
    for record, seconds in zip(records, (1.0, 3.0, 4.0, 0.0)):
        record.fit_time = seconds
    records[3].status = FAILED
    fits = fit_times(records)
    assert fits == [(1, 1.0), (1, 3.0), (2, 4.0)]  # a failed fit does not count
    assert expected_fit_seconds(1, fits) == pytest.approx(2.0)
    assert expected_fit_seconds(2, fits) == pytest.approx(4.0)
    assert expected_fit_seconds(4, fits) == pytest.approx(8.0)  # from the two-kernel fits, doubled
    assert expected_fit_seconds(1, fits[2:]) == pytest.approx(2.0)  # no smaller fit: scaled down from the smallest
    assert expected_fit_seconds(1, []) == 0.0


def test_very_large_levels_are_cut_by_the_prescreen_before_the_cheap_score():
    """Above twice max_fits_per_depth candidates only the best by the prescreen (the protected and the
    unscored always among them) get the cheap score; every record carries what scoring it cost."""
    screened = []

    def screen(candidates):
        screened.extend(str(c.structure) for c in candidates if c.depth == 2)
        return [ScreenScore(1.0 if "LIN" in str(c.structure) else 0.0, 3, 30) for c in candidates]

    def prescreen(candidates):
        return [None if str(c.structure) == "PER(0) * PER(0)" else
                ScreenScore(1.0 if "LIN" in str(c.structure) else 0.0, 1, 10) for c in candidates]

    result, evaluated = _search({"PER(0)": 1.0}, max_depth=2, screen=screen, prescreen=prescreen,
                                max_fits_per_depth=2, protected={parse("PER(0)"), parse("SE(0) + PER(0)")})
    depth_2 = {str(r.structure): r for r in result.records if r.depth == 2}
    assert len(depth_2) == 6  # PER(0)'s children not seen at depth 1
    assert sorted(screened) == sorted(["SE(0) + PER(0)", "PER(0) * PER(0)", "PER(0) + LIN(0)", "PER(0) * LIN(0)"])
    for text in ("SE(0) * PER(0)", "PER(0) + PER(0)"):
        record = depth_2[text]
        assert record.status == SCREENED_OUT and record.message.startswith("screened out before the cheap score")
        assert (record.n_evaluations, record.evaluated_rows) == (1, 10)
    assert [text for text, r in depth_2.items() if r.status != SCREENED_OUT] == ["SE(0) + PER(0)", "PER(0) + LIN(0)"]
    assert evaluated[-2:] == ["SE(0) + PER(0)", "PER(0) + LIN(0)"]
    assert (depth_2["PER(0) * PER(0)"].n_evaluations, depth_2["PER(0) * LIN(0)"].n_evaluations) == (3, 4)
    assert depth_2["PER(0) + LIN(0)"].n_evaluations == 4 and depth_2["PER(0) + LIN(0)"].evaluated_rows == 40
    # unscored candidates pass even when they alone fill the prescreen's places
    screened.clear()
    result, _ = _search({"PER(0)": 1.0}, max_depth=2, screen=screen, prescreen=lambda cs: [None] * len(cs),
                        max_fits_per_depth=2, protected={parse("PER(0)")})
    assert len(screened) == 6 and not any(r.message.startswith("screened out before") for r in result.records)
    # a level of at most twice max_fits_per_depth is not prescreened
    result, _ = _search({"PER(0)": 1.0}, max_depth=2, screen=screen, prescreen=prescreen, max_fits_per_depth=3,
                        protected={parse("PER(0)")})
    assert len([r for r in result.records if r.depth == 2]) == 6 and not any(r.message.startswith("screened out before") for r in result.records)


def test_a_first_level_without_success_raises_unless_told_not_to():
    scores = {s: -np.inf for s in ("SE(0)", "LIN(0)", "PER(0)")}
    with pytest.raises(ValueError, match="Every candidate structure failed"):
        _search(scores)
    result, _ = _search(scores, require_success=False)
    assert result.best is None and result.stop_reason == "no improvement"


def test_progress_callback_receives_one_report_per_depth():
    reports = []
    result, _ = _search({"PER(0)": 1.0}, progress=reports.append, criterion_name="bic")
    assert [r.depth for r in reports] == [level["depth"] for level in result.levels]
    assert all(isinstance(r, LevelReport) and r.criterion_name == "bic" for r in reports)
    assert reports[0].best.criterion == result.levels[0]["best_criterion"] == 1.0


def test_progress_lines_name_a_wide_kernel_by_its_shape():
    from skgpsearch._search._progress import LABELLED_BASE_KERNELS, structure_label

    ard = parse(" * ".join(f"SE({c})" for c in range(64)))
    assert structure_label(ard) == "one ARD SE kernel over 64 columns (0, 1, ..., 63)"
    names = [f"f{c}" for c in range(64)]
    assert structure_label(parse(" + ".join(f"SE({c})" for c in range(20))), names) == \
        "an additive SE kernel over 20 columns (f0, f1, ..., f19)"
    mixed = parse(" + ".join(f"SE({c}) * LIN({c + 1})" for c in range(10)))
    label = structure_label(mixed)
    assert label.endswith("... (20 base kernels)") and len(label) < 120
    assert structure_label(parse(f"SE({', '.join(map(str, range(20)))})"), names) == \
        "an isotropic SE kernel over 20 columns (f0, f1, ..., f19)"
    # up to LABELLED_BASE_KERNELS, the structure itself
    small = parse(" * ".join(f"SE({c})" for c in range(LABELLED_BASE_KERNELS)))
    assert structure_label(small, names) == small.to_string(names)


def test_search_progress_routes_an_estimators_progress(capsys):
    X = np.linspace(0, 4, 30)[:, None]
    y = np.sin(3 * X[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=30)
    events = []
    with search_progress(events.append):
        model = CompositionalGPRegressor(("SE", "LIN"), max_depth=2, random_state=0, verbose=1).fit(X, y)
    assert capsys.readouterr().out == ""  # the callback replaces the printing
    reports = [e for e in events if isinstance(e, LevelReport)]
    assert len(reports) == len(model.search_path_)
    assert [e.best.criterion for e in reports] == [level["best_criterion"] for level in model.search_path_]
    # and notes on the finalists and on what they cost close the search
    assert events[-2].startswith("finalists (selected by forecast: ")  # the default on one column
    assert events[-1].startswith("finalists and selection: ")
    model.fit(X, y)  # outside the block, verbose prints again
    assert "[skgpsearch] depth 1" in capsys.readouterr().out


def test_blas_keeps_one_thread_for_the_whole_fit_and_its_setting_after():
    """Between candidates the limit used to return to the process's setting; under joblib's threading
    backend it then changed while another thread was inside LAPACK (OpenBLAS stalled for minutes)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    X = np.linspace(0, 4, 30)[:, None]
    y = np.sin(3 * X[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=30)

    def blas_threads():
        return {info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"}

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        if before == {1}:
            pytest.skip("BLAS has one thread here: the limit cannot be told from the setting")
        seen = []
        with search_progress(lambda event: seen.append(blas_threads())):
            CompositionalGPRegressor(("SE", "LIN"), max_depth=2, random_state=0, verbose=1, n_jobs=1).fit(X, y)
        assert len(seen) > 3 and all(threads == {1} for threads in seen)
        assert blas_threads() == before


@dataclasses.dataclass
class _RaisingFitter(CandidateFitter):
    error: type = ArithmeticError

    def _n_parameters(self, expr):
        return 7

    def _objectives(self, expr, kernel, X, y, rng):
        raise self.error("boom")


def test_a_numerical_failure_fails_one_candidate_and_a_bug_propagates():
    X, y = np.linspace(0, 1, 10)[:, None], np.arange(10.0)
    fitter = _RaisingFitter(summary=DataSummary.from_data(X, y), criterion=None)
    record = fitter(parse("SE(0)"), X, y, seed=3)
    assert (record.status, record.criterion, record.n_hyperparameters, record.seed) == ("failed", -np.inf, 7, 3)
    assert "ArithmeticError: boom" in record.message
    with pytest.raises(TypeError, match="boom"):
        dataclasses.replace(fitter, error=TypeError)(parse("SE(0)"), X, y, seed=3)
    with pytest.raises(ValueError):
        run_candidate(lambda: (_ for _ in ()).throw(ValueError("a bug")), parse("SE(0)"), 0, 1)


def test_a_prescreen_that_decides_cuts_a_level_it_scores_entirely_without_the_cheap_score():
    """With ``prescreen_decides``, a level of more than max_fits_per_depth candidates (not only of more than
    twice as many) is cut by the prescreen alone when it scores every candidate; one it cannot score whole
    still gets the cheap score."""
    screened = []

    def screen(candidates):
        screened.extend(str(c.structure) for c in candidates if c.depth == 2)
        return [ScreenScore(0.0, 3, 30) for c in candidates]

    def prescreen(candidates):
        return [ScreenScore(1.0 if "LIN" in str(c.structure) else 0.0, 1, 10) for c in candidates]

    result, evaluated = _search({"PER(0)": 1.0}, max_depth=2, screen=screen, prescreen=prescreen,
                                prescreen_decides=True, max_fits_per_depth=3, protected={parse("PER(0)")})
    depth_2 = {str(r.structure): r for r in result.records if r.depth == 2}
    assert len(depth_2) == 6 and not screened
    kept = [text for text, r in depth_2.items() if r.status != SCREENED_OUT]
    assert sorted(kept) == sorted(["PER(0) + LIN(0)", "PER(0) * LIN(0)", "SE(0) + PER(0)"])  # grammar order breaks the tie
    for text in set(depth_2) - set(kept):
        record = depth_2[text]
        assert record.message.startswith("screened out: score of its starts next to the parent 0.00")
        assert (record.n_evaluations, record.evaluated_rows) == (1, 10)
    assert depth_2["PER(0) + LIN(0)"].n_evaluations == 1 and depth_2["PER(0) + LIN(0)"].evaluated_rows == 10
    # a candidate without a prescreen score: the level gets the cheap score
    result, _ = _search({"PER(0)": 1.0}, max_depth=2, screen=screen,
                        prescreen=lambda cs: [None] + prescreen(cs)[1:], prescreen_decides=True,
                        max_fits_per_depth=3, protected={parse("PER(0)")})
    assert len(screened) == 6


def test_a_regression_search_fits_no_child_whose_white_noise_term_duplicates_the_noise():
    from skgpsearch.grammar import FixedStructureGrammar

    rng = np.random.default_rng(3)
    X = np.sort(rng.uniform(0, 10, 60))[:, np.newaxis]
    # noise that grows along the input: LIN * WN is a real candidate, SE + WN is not
    y = np.sin(X[:, 0]) + (0.05 + 0.05 * X[:, 0]) * rng.normal(size=60)
    model = CompositionalGPRegressor(base_kernels=("SE", "LIN", "WN"), change_operators=(), max_depth=2,
                                     selection="criterion", random_state=0, n_jobs=1).fit(X, y)
    structures = [parse(text) for text in model.search_results_["structure"]]
    assert not any(expr.adds_white_noise for expr in structures)
    assert parse("WN") in structures and any("LIN(0) * WN" in str(expr) for expr in structures)
    # the ground truth of the rule: fitted alone, SE + WN reaches no higher likelihood than SE, whose noise
    # variance takes the white-noise term's variance
    se, se_wn = (CompositionalGPRegressor(grammar=FixedStructureGrammar(parse(text)), random_state=0,
                                          n_jobs=1).fit(X, y) for text in ("SE(0)", "SE(0) + WN"))
    assert se_wn.log_marginal_likelihood_value_ <= se.log_marginal_likelihood_value_ + 1e-6 * len(y)


def test_a_classification_search_keeps_white_noise_terms_of_its_latent_function():
    from skgpsearch._search._exact_fitter import RegressionCandidateFitter
    from skgpsearch._search._laplace_fitter import LaplaceCandidateFitter

    # without a noise variance in its likelihood, SE + WN is a latent function with its own noise
    assert not LaplaceCandidateFitter.duplicates_likelihood(None, parse("SE(0) + WN"))
    assert RegressionCandidateFitter.duplicates_likelihood(None, parse("SE(0) + WN"))
