"""A long fit split by its starts over the workers: the merged record is the unsplit fit's."""

import dataclasses

import numpy as np
import pytest

from skgpsearch._engine._optimizer import StartRace
from skgpsearch._search._candidate_fitter import RACED_FULL_EFFORT, merge_start_shards, start_shards, unraced_fit_args
from skgpsearch._search._exact_fitter import MIN_SUBSET_SCREEN, RegressionCandidateFitter
from skgpsearch._search._laplace_fitter import LaplaceCandidateFitter
from skgpsearch._search._pipeline import EXPLORE_START_RACE
from skgpsearch.criteria import get_criterion
from skgpsearch.grammar import parse
from skgpsearch.kernels import DataSummary

rng = np.random.default_rng(4)
X = np.sort(rng.uniform(0.0, 10.0, size=(160, 1)), axis=0)
Y = np.sin(2.0 * X[:, 0]) + 0.1 * X[:, 0] + 0.2 * rng.normal(size=160)
Y = (Y - Y.mean()) / Y.std()
SUMMARY = DataSummary.from_data(X, Y)
STRUCTURE = parse("SE(0) + PER(0)")


def _fitter(**changes):
    return dataclasses.replace(RegressionCandidateFitter(summary=SUMMARY, criterion=get_criterion("bic"),
                                                         n_restarts=3), **changes)


@pytest.mark.parametrize("count", [2, 3])
def test_shards_merge_to_the_unsplit_fit(count):
    """Each shard optimises every count-th start; the best shard's optimum is the unsplit fit's best start's,
    bit for bit, and the merged record counts every shard's evaluations."""
    whole = _fitter()(STRUCTURE, X, Y, seed=7)
    shards = [_fitter(start_shard=(i, count))(STRUCTURE, X, Y, seed=7) for i in range(count)]
    assert all(shard is not None and shard.ok for shard in shards)
    [merged] = merge_start_shards(shards, count)
    np.testing.assert_array_equal(merged.theta, whole.theta)
    assert merged.log_marginal_likelihood == whole.log_marginal_likelihood
    assert merged.criterion == whole.criterion and merged.structure == whole.structure
    # each shard scores the whole start pool once before optimising its share of it
    assert whole.n_evaluations <= merged.n_evaluations == sum(s.n_evaluations for s in shards)
    # the split is real: no shard alone ran every start
    assert max(s.n_evaluations for s in shards) < whole.n_evaluations


def test_a_shard_beyond_the_starts_is_empty_and_merging_skips_it():
    polish = _fitter(effort="polish")  # one start: the structure's own values
    whole = polish(STRUCTURE, X, Y, seed=1)
    first, second = (dataclasses.replace(polish, start_shard=(i, 2))(STRUCTURE, X, Y, seed=1) for i in range(2))
    assert second is None
    [merged] = merge_start_shards([first, second], 2)
    np.testing.assert_array_equal(merged.theta, whole.theta)


def test_only_independent_starts_are_split():
    """Starts a screen ranks against each other (a series' screened effort, 1000 rows and more, the Laplace
    engine) are not split: the pipeline keeps such a fit whole."""
    full = _fitter()
    assert full.splits_starts(X.shape[0]) and full.splits_starts(MIN_SUBSET_SCREEN - 1)
    assert not full.splits_starts(MIN_SUBSET_SCREEN)
    assert _fitter(screen_starts=False).splits_starts(5 * MIN_SUBSET_SCREEN)
    assert _fitter(max_optimize_samples=500).splits_starts(5 * MIN_SUBSET_SCREEN)
    assert not _fitter(effort="screened").splits_starts(X.shape[0])
    assert not _fitter(effort="explore").splits_starts(X.shape[0])
    laplace = LaplaceCandidateFitter(summary=SUMMARY, criterion=get_criterion("bic"), likelihood="probit")
    assert not laplace.splits_starts(X.shape[0])
    # one shard per worker, only for fewer fits than two per worker
    assert [s.start_shard for s in start_shards(full, 2, X.shape[0], n_jobs=2)] == [(0, 2), (1, 2)]
    assert start_shards(full, 4, X.shape[0], n_jobs=2) == [full]
    assert start_shards(full, 1, X.shape[0], n_jobs=1) == [full]
    assert start_shards(_fitter(effort="screened"), 1, X.shape[0], n_jobs=2)[0].start_shard is None
    # a race makes each start depend on those before it
    raced = _fitter(start_race=StartRace(window=50, nats=30.0))
    assert not raced.splits_starts(X.shape[0]) and start_shards(raced, 1, X.shape[0], n_jobs=2) == [raced]


def test_a_raced_fit_of_a_candidate_keeps_its_best_start_for_fewer_evaluations():
    """The default race (each start after the first stops once it trails the best before it by 30 nats after 50
    evaluations), with random restarts besides the structure's start pool."""
    structure = parse("SE(0) + PER(0)")
    whole = _fitter(n_restarts=6)(structure, X, Y, seed=3)
    raced = _fitter(n_restarts=6, start_race=EXPLORE_START_RACE)(structure, X, Y, seed=3)
    assert raced.ok and raced.n_evaluations < whole.n_evaluations
    assert raced.log_marginal_likelihood >= whole.log_marginal_likelihood - 0.5
    # the record says so, and keeps what its fit began from: made again with every start, it is the unraced fit
    assert raced.effort == RACED_FULL_EFFORT and whole.effort == "full" and whole.raced_from is None
    began, seed, warm_state, hints = unraced_fit_args(raced, raced.structure, 0, None)
    assert began == structure and seed == 3
    again = _fitter(n_restarts=6)(began, X, Y, seed, warm_state, hints)
    np.testing.assert_array_equal(again.theta, whole.theta)
    assert again.n_evaluations == whole.n_evaluations


@pytest.mark.slow  # over 3 s on 2 cores
def test_a_misused_shard_of_screened_starts_keeps_them_whole_in_the_first():
    """A shard of a fit whose starts are screened together: the first shard fits as the unsplit fit does."""
    Xs = np.linspace(0.0, 40.0, 400)[:, None]  # a series long enough for the screened effort
    ys = np.sin(Xs[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=400)
    screened = _fitter(effort="screened", summary=DataSummary.from_data(Xs, ys))
    whole = screened(STRUCTURE, Xs, ys, seed=2)
    assert whole.evaluated_rows < whole.n_evaluations * 400  # its starts were screened on fewer rows
    first, second = (dataclasses.replace(screened, start_shard=(i, 2))(STRUCTURE, Xs, ys, seed=2) for i in range(2))
    assert second is None
    np.testing.assert_array_equal(first.theta, whole.theta)
