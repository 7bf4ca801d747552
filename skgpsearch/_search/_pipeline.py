"""The staged search: explore the grammar, refit the finalists, select the model.

Every structure search of the estimators runs these three stages, in
:class:`SearchPipeline`:

**explore**
    The greedy or beam search over the grammar (:func:`run_search`). On
    large data (more than ``EXPLORE_ROWS`` rows, a criterion computed from
    the evidence alone, and a model fitter that explores samples) it runs on
    ``EXPLORE_ROWS`` rows: the first rows of the model fitter's nested row
    order, with a data summary of those rows. Under a time budget, on two or
    more columns, the first baseline (one ARD kernel) is fitted on those rows
    before the search, so that a budget the search spends still ends with it.
**finalists**
    The structures the final model is chosen from, fitted on the rows the
    final model conditions on (the model fitter's baselines -- one ARD
    kernel and the additive kernel -- always among them; they compete at the
    end and add no children to the search):

    - after exploring a sample: the ``FIRST_FINALISTS`` best distinct
      structures (the model fitter's baselines, fitted on the sample,
      compete for those places), fitted with full effort on the sample where
      the search explored them cheaply, are refitted on ``HALVING_FACTOR``
      times as many rows from their fitted values only (the "polish" effort:
      the full start pool found the same optimum on 10 000 rows at 2.5-3x the
      cost), the better half of them on ``HALVING_FACTOR`` times more, and so
      on up to all rows (at most ``model_fitter.max_rows``): successive
      halving;
    - after exploring all rows: the search's best -- and, when the select
      stage judges held-out prediction, the ``PREDICTIVE_FINALISTS`` best
      distinct structures and the best of every depth -- re-optimised on all
      rows from their optima when the search optimised on subsets of the rows
      (the "polish" effort: from their own values only, their start pools
      having run on the subset; a polished fit replaces its record when it
      is at least as good), and
      the baselines, fitted on all rows with full effort. Those the search
      fitted cheaply are fitted again with full effort first; after a
      "screened" exploration (a series), only the
      ``SCREENED_FULL_EFFORT_FINALISTS`` best of them. When the select
      stage forecasts a series, the ``TREND_VARIANT_PARENTS`` best of them by
      the criterion also bring their trend variants, ``S + LIN``
      (:meth:`~skgpsearch.grammar.Grammar.trend_variants`), fitted from the
      parent's values like a child of the search: the evidence of a training
      range seldom tells a smooth trend from a linear one, a forecast does.

    Failure policy: a finalist whose fit fails is recorded and left out; if
    every finalist of a rung fails, the exploration's best is kept, on the
    rows it was fitted on, and the stop reason says so.
**select**
    ``settings.selection`` says how:

    - ``"criterion"``: the finalist with the best search criterion; with
      ``model_averaging=k``, also the ``k - 1`` best other structures fitted
      on the same rows, weighted by exp(criterion − selected criterion);
    - ``"loo"``: the finalist whose leave-one-out log predictive density
      Σ_i log p(y_i | y_−i) at its fitted hyperparameters is highest (exact
      for Gaussian regression, the Laplace cavity approximation otherwise);
      with ``model_averaging=k``, the ``k`` best by that density weighted by
      exp(density − best density) (pseudo-BMA, Yao et al. 2018);
    - ``"stacking"``: every finalist, weighted to maximise the leave-one-out
      log score of their mixture, Σ_i log Σ_k w_k p_k(y_i | y_−i) (stacking
      of predictive distributions, Yao, Vehtari, Simpson & Gelman 2018); with
      a model fitter's ``discounts_loo_optimism`` (the regressor's and the
      classifier's), each
      p_k discounted by exp(−k_k / n) for its k_k hyperparameters (see
      ``LOO_OPTIMISM_PER_HYPERPARAMETER``);
    - under "loo" and "stacking", a model fitter that ``cross_validates``
      (the regressor's, on small data) gives each finalist's densities from
      ``CROSS_VALIDATION_FOLDS``-fold cross-validation instead: refitted
      afresh (not from its values, which saw every row) on the other folds'
      rows, it predicts each fold's rows
      (:func:`cross_validation_folds`, the same folds for every finalist);
      stacking takes them undiscounted;
    - ``"forecast"`` (a series: one input column): every finalist is refitted
      on the earliest ``1 − FORECAST_FRACTION`` of the rows in the column's
      order, from its fitted values, and forecasts the rest; the one whose
      forecast has the highest log predictive density is selected -- of those
      within ``FORECAST_TIE`` nats of it, the one with the best criterion
      (with ``model_averaging=k``, the ``k`` best weighted by
      exp(density − selected's density)). When the finalist with the best
      criterion changes (a changepoint, a change window's start or end)
      within those latest rows, the criterion selects: refitted on the rows
      before, no structure can place that change, and the forecasts mostly
      measure how wide each finalist's band is where the series breaks.
      Finalists with a term that acts as white noise on the data (other than
      white noise by design: a model fitter's ``interpolates_noise``) are not
      judged, unless every finalist has one: such a term interpolates the
      noise, and a refit can forecast a few judged rows well by chance.

    Structures below ``MIN_AVERAGING_WEIGHT`` of the largest weight are left out.
    With the baselines among the finalists and a model fitter's
    ``baseline_margin_se`` (the classifier's: ``COMPOSITE_MARGIN_SE``), "loo"
    and "stacking" judge only the search's structures that beat the best
    baseline's leave-one-out log density by more than that many standard
    errors of the pointwise difference: the search chose them on the same
    rows, so a small advantage is expected by chance; the others are
    ``held_back``.

The stages know nothing of engines: a :class:`ModelFitter` (regression:
:class:`~skgpsearch._search._regression.RegressionModelFitter`;
classification:
:class:`~skgpsearch._search._classification.BinaryClassificationModelFitter`)
says which candidate fitters they use, which rows they may sample, and which
baselines compete; it builds the fitted models of the selected records.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from joblib import effective_n_jobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.parallel import Parallel, delayed

from .._engine._linalg import NumericalError
from .._engine._optimizer import StartRace
from ..criteria import SelectionCriterion
from ..grammar import Expr, Grammar
from ..kernels import DataSummary
from ._candidate_fitter import (
    EXPLORE_THEN_POLISH,
    RACED_FULL_EFFORT,
    STOPPED_BY_BUDGET,
    SUBSET_FULL_EFFORT,
    CandidateFitter,
    full_effort_on_subset,
    merge_start_shards,
    start_shards,
    unraced_fit_args,
    with_deadline,
    with_effort,
)
from ._loop import (FULL_EFFORT_COST, SearchResult, SearchSettings, deadline_batches, enough_rows_for,
                    expected_fit_seconds, fit_times, full_effort_cost, merge_full_effort_refit, parallel_rounds,
                    run_search)
from ._progress import ProgressCallback, cost_text, structure_label
from ._records import OK, CandidateRecord, candidate_seed, user_stacklevel

__all__ = [
    "COMPOSITE_MARGIN_SE",
    "CROSS_VALIDATION_FOLDS",
    "EXPLORE_EFFORT",
    "EXPLORE_ROWS",
    "FIRST_FINALISTS",
    "FORECAST_FRACTION",
    "HALVING_FACTOR",
    "LAPLACE_POSTERIOR_ROWS",
    "ONE_COLUMN_EXPLORE_EFFORT",
    "PREDICTIVE_FINALISTS",
    "SELECTIONS",
    "Exploration",
    "Finalists",
    "ModelFitter",
    "PipelineResult",
    "SearchPipeline",
    "cross_validation_folds",
    "distinct_best",
    "explore_effort_for",
    "explores_on_sample",
    "finalists_table",
    "halving_sizes",
    "refit_finalists",
    "resolve_selection",
    "stacking_weights",
    "table_full_effort_on_subset",
]

#: The stages' sizes, in one place. Above EXPLORE_ROWS rows the search explores a sample of that many
#: rows; its FIRST_FINALISTS best distinct structures are refitted on HALVING_FACTOR times as many rows
#: per rung, halving their number. The Laplace engine is exact (O(n³) time, O(n²) memory per fit), so a
#: classifier's last rung, the rows its posterior conditions on, has at most LAPLACE_POSTERIOR_ROWS rows.
EXPLORE_ROWS = 2000
FIRST_FINALISTS = 4
HALVING_FACTOR = 5
#: Under a time budget, a rung of the halving starts only when its refits can make this many evaluations each
#: (and the select stage its models) in the time left (a refit stops at the deadline, but not inside an
#: evaluation: a Laplace evaluation on 5000 rows took 36 s, and four refits of a 30-s budget's search 168 s).
MIN_POLISH_EVALUATIONS = 2
#: A search given less than this many seconds of the estimator's time_budget had it spent before it began.
SPENT_BEFORE_THE_SEARCH = 1e-3
LAPLACE_POSTERIOR_ROWS = 5000
#: When the select stage judges held-out prediction, the search's best this many distinct structures (and
#: the best of every depth) are finalists besides the baselines.
PREDICTIVE_FINALISTS = 4
#: ... but the classifier's (its ``hopeless_finalist_gap``), in a leave-one-out selection ("loo", "stacking"),
#: not those whose criterion trails the search's best by more than this many nats (the shallow depths' bests
#: of a long search): on benchmarks/tabular.py's tables (benchmarks/results/tabular.json, 591 finalists of
#: the search on the nine of one target) every finalist 10 nats behind was 19 or more nats behind the best
#: leave-one-out density, 20 nats behind 35 or more. Leaving them out of the classifier's select stage
#: changed no test error of the six classification tables and no log loss by 1e-4 (2026-12-05); on 1000
#: rows x 35 columns their fits on all rows had cost 3 of the finalists stage's 28 CPU seconds. Not the
#: regressor's: its stacking of cross-validated densities gave auto_mpg's SE(3) + SE(5), 21-23 nats behind,
#: a weight that made the MSLL of 3 of 10 folds 0.02 better (the mean -1.119 without it, -1.126 with it).
HOPELESS_FINALIST_GAP = 20.0
#: The select stage's "forecast" holds out this fraction of a series, its latest rows; finalists whose
#: forecast log densities are within FORECAST_TIE nats of the best are tied, and the criterion decides.
FORECAST_FRACTION = 0.15
FORECAST_TIE = 1.0
#: Where the criterion selects because its best finalist changes within those rows, the selected structure's refit
#: on the earlier rows still forecasts them, to calibrate the spread beyond the series, but its factor is capped at
#: this: the refit cannot place the change, so its errors measure the change's surprise as much as the structure's
#: spread, and the cap bounds what an unneeded widening costs a calibrated forecast (standard deviations at most
#: twice as wide: log 2 - 3/8 = 0.32 nats a forecast row). Measured (benchmarks/results/late_change_widening.txt):
#: R's sunspot.year and uspop, whose bands held 45 and 0 % of their tests, MNLP 23.75 -> 9.26 and 19.25 -> 6.85;
#: wages 4.51 -> 3.77, call-centre 4.20 -> 4.32; benchmarks/late_breaks.py's 12 series 35.61 -> 35.90 in all. The
#: factor uncapped: 44.19 there, call-centre 5.97.
LATE_CHANGE_WIDENING_CAP = 4.0
#: The factor of the chosen structure's earlier forecast (see RegressionModelFitter.earlier_forecast_variance_scale)
#: widens the spread beyond the series up to this; the judged forecast's own factor is not capped. Measured after
#: the fact on 2026-12-07 (benchmarks/results/earlier_forecast_widening.txt), MNLP of the test segments, without
#: the earlier factor -> capped at 4 / uncapped: 20 simulated random walks (mean) 6.16 -> 3.71 / 3.13; 34 series
#: (sum) 130.99 -> 129.01 / 131.59: uncapped, austres' factor of 97 (its earlier forecast missed an acceleration its
#: test does not repeat) cost 1.9 nats a test point, lynx's of 12.6 0.85.
EARLIER_FORECAST_WIDENING_CAP = 4.0
#: When the select stage forecasts, the trend variants of this many of the best finalists compete too;
#: their records' message.
TREND_VARIANT_PARENTS = 2
TREND_VARIANT_MESSAGE = "trend variant of a finalist, fitted after the search"
#: Averaged models below this fraction of the largest weight are dropped.
MIN_AVERAGING_WEIGHT = 1e-6
#: The classifier's ``baseline_margin_se``: when the baselines compete in a leave-one-out selection ("loo",
#: "stacking"), a structure of the search takes part only if its leave-one-out log density beats the best
#: baseline's by more than this many standard errors of their pointwise difference. The search chose its
#: structures on these very rows, so the best of them beats a fixed baseline by about a standard error by
#: chance alone. Measured on benchmarks/tabular.py's folds: breast449's error 6.0 % -> 4.7 %, held-out log
#: loss better on all four binary datasets; 1.5 or 2 standard errors lost on liver.
COMPOSITE_MARGIN_SE = 1.0
#: The regressor's "stacking" weighs finalists by leave-one-out densities discounted by this many nats per
#: hyperparameter in all (k / n per row for k hyperparameters): each finalist's hyperparameters were fitted
#: on the very rows its leave-one-out densities predict, which AIC's argument puts at about one nat each.
#: Without it, the additive baseline's 2d + 1 hyperparameters outweighed one ARD kernel's d + 2 on held-out
#: rows they predicted worse. Measured (SMSE / MSLL, mean over folds, against stacking undiscounted):
#: statsmodels' star98 (303 x 20, 5 folds, never tuned on) 0.220 / -0.768 -> 0.207 / -0.798 (one ARD
#: kernel 0.216 / -0.799), macrodata's MSLL -3.715 -> -3.739, grunfeld level; diabetes 0.517 / -0.341 ->
#: 0.511 / -0.347, auto_mpg level, cpus 0.171 / -0.980 -> 0.173 / -0.974 (benchmarks/tabular.py, 10 folds).
LOO_OPTIMISM_PER_HYPERPARAMETER = 1.0
#: The discount does not count a lengthscale above this many times the span of its columns: such a kernel is
#: flat in those columns, and a value anywhere up to its bound fits (and flatters) the rows alike. On star98
#: ten of one ARD kernel's twenty lengthscales sit there, and the isotropic kernel, which the discount charged
#: 19 nats less, took the largest weight although the ARD kernel's leave-one-out densities led by 12 nats.
#: Measured (SMSE / MSLL, mean over folds, counting every lengthscale -> not the flat ones): star98 0.205 /
#: -0.785 -> 0.211 / -0.800 (one ARD kernel 0.216 / -0.799; MSLL better in all 5 folds); benchmarks/tabular.py's
#: four regression tables, caschool, boston and benchmarks/unseen.py's 16 further regression tables the same
#: to within 0.001 SMSE (benchmarks/results/stacking_flat_lengthscales.txt). The regressor's rule only (a model
#: fitter's ``discount_skips_flat_lengthscales``): on seven classification tables of benchmarks/unseen.py the
#: classifier's error rose on birthwt (31.2 -> 32.3 %) and pima_tr (23.0 -> 24.5 %), fell on iris (4.7 -> 4.0 %)
#: and stayed on four (4 folds worse, 1 better of 35).
FLAT_LENGTHSCALE_SPANS = 10.0
#: Folds of the select stage's cross-validation (a model fitter's ``cross_validates``: small regression data).
CROSS_VALIDATION_FOLDS = 5
#: How hard the explore stage fits candidates (a model fitter's ``explore_effort``, see explore_effort_for):
#: "full" (each candidate's start pool to convergence), "screened" (below) or "explore" (its best two or three
#: starts, a few iterations each, from 1000 rows on optimised on subsets (_candidate_fitter.with_effort), then
#: the REFINE_PER_LEVEL best of each depth and every finalist fitted again with full effort on all rows).
#: Two or more columns explore: same held-out error on 10 folds of breast449, pima, liver and heart_cleveland, and
#: the same search result on 3 folds of diabetes and cpus (benchmarks/tabular.py's), in 1.5-2.6x less time.
#: One column (a series) is "screened" (every start of the full effort, screened on runs of the series before
#: the best are optimised on all rows; from SCREENED_FROM_ROWS rows on, below that "full"), and only the
#: SCREENED_FULL_EFFORT_FINALISTS best finalists are fitted again with full effort: the explore effort ended 6
#: nats of BIC lower on Mauna Loa (benchmarks/bench_search.py) and lost the forecasts of mauna, airline and
#: call-centre, while on the 8 series of 361-909 rows of benchmarks/extrapolation.py "screened" ended at the
#: same search criterion or better (births 39 nats, mauna 0.6), 2-5x faster, and on bench_search.py's Mauna
#: Loa 2.8 nats better in 2.4x less time.
EXPLORE_EFFORT = "explore"
ONE_COLUMN_EXPLORE_EFFORT = "screened"
REFINE_PER_LEVEL = 2
#: A series searched with the "screened" effort fits each depth's best again with full effort before the depth
#: is ranked and expanded, so that the next depth starts from its full-effort values. On births (893 rows) the
#: screened fit of PER at depth 1 had landed 11 or 19 nats below its full-effort optimum, by rounding-level
#: changes of the kernel, and the path parted there (RQ + PER or SE + PER as depth 2's parent). With the refit,
#: on the 11 series of benchmarks/extrapolation.py: births SE + PER + PER, RMSE 30.07 (was RQ + PER + PER, 30.31),
#: 6 % fewer likelihood evaluations; the other ten the same structures and RMSE (mauna 0.6175 -> 0.623), their
#: evaluations -1 % to +3 %.
SCREENED_REFINE_PER_LEVEL = 1
SCREENED_FULL_EFFORT_FINALISTS = 2
#: ... and every other finalist within this many nats of the best criterion: the explore stage's screened fits
#: cannot tell them apart. On births (benchmarks/extrapolation.py) three structures ended depth 3 within 0.4 nats;
#: the one of them that gains 17 nats from full effort, SE + PER + PER, was second by 0.09 nats, and a change of
#: rounding (a faster triangular inverse, benchmarks/results/triangular_inverse.txt) made it third: it kept its
#: screened fit and the search chose SE + SE * PER (RMSE 32.4 instead of 24.6). With all three refitted it chose
#: SE + PER + PER (+ LIN) under either rounding (24.6, 24.5), for 15 s more; no other of the 11 series had such a tie.
FULL_EFFORT_TIE = 1.0
#: The explore stage's candidates fitted with full effort (a series of fewer than SCREENED_FROM_ROWS rows: every
#: start of the pool to convergence on all rows) race their starts: each start after the first stops once it has
#: made 50 evaluations and still trails the best start before it by more than 30 nats (a StartRace). A fit whose
#: race stopped a start (RACED_FULL_EFFORT) is made again with every start where its values matter: a depth's best
#: before the depth is expanded, and every finalist. Measured 2026-12-08 side by side with the code before
#: (benchmarks/results/start_races.txt): benchmarks/short_series.py's 16 series the same structures, criteria and
#: forecasts with 8.5 % fewer likelihood evaluations (airline 27 %); benchmarks/search_vs_loop.py --skip-loop
#: --max-n 150 and 200 the same on all 22 in 24 % less time. The margin is wide: a run 80 nats behind after 30
#: evaluations can still end 113 nats ahead (benchmarks/start_races.py), and 30 evaluations and 20 nats, raced
#: everywhere, lost unemployment's search (150 rows) by 6.3 nats.
EXPLORE_START_RACE = StartRace(window=50, nats=30.0)
#: The rules of the select stage (see the module docstring).
SELECTIONS = ("criterion", "loo", "stacking", "forecast")
#: Stop reasons of the explore stage after which no finalist is fitted: the user's bounds hold. (A time budget
#: keeps back what the finalists need, see SearchPipeline.explore: they are fitted in the time left.)
STOPS_WITHOUT_MORE_FITS = ("candidate budget reached", "interrupted")
#: A margin on the finalists stage's modelled time (each fit at its structure's size and effort, in rounds
#: of n_jobs), which a time budget keeps back: diabetes' two 10-column baselines took 1.4x their estimate.
FINALIST_FIT_COST = 1.5
#: What a baseline fitted with the "explore+polish" effort costs a time budget, in explore fits of a structure
#: of its size (see cost_size); the three costs below were measured on 2026-12-06 (synthetic tables of 80-400
#: rows and 2-8 columns, scikit-learn's diabetes, a 120-month series, classifiers of 150-200 rows, n_jobs=1),
#: where the polished finalists and the baselines took 0.5-2.1 explore fits of the largest structure a job,
#: a cross-validation job 1.1-2.7 and a forecast job 0.1-0.3. The reserve had charged a baseline 8 full-effort
#: fits, a cross-validation job 5 and a forecast job 1, and held back 4-20x what the finalists stage took: a
#: 5 s budget stopped a 1.2 s search at depth 1 after 0.4 s, a 20 s budget a 55 s search after 6 s. Now it
#: holds back 1.2-1.5x on the tables and classifiers and 5x on the series (0.75x on a 150-row covariate, whose
#: finalists stage took 0.1 s).
POLISHED_BASELINE_COST = 1.0
#: What one job of the select stage's cross-validation (a finalist's refits on every fold's training rows, each
#: from its structure's start pool) costs a time budget, in explore fits of the finalist: 1.8-11.6, median 6, on
#: the ARD and additive kernels of swiss, mtcars, prestige and two structures of mammals (1.5 when the refits
#: were polished from the finalist's values).
CROSS_VALIDATION_JOB_COST = 6.0
#: What a trend variant's fit or a forecast refit (each from a finalist's values, on a series) costs a time
#: budget, in explore fits of the search's largest structure.
FORECAST_JOB_COST = 0.5


def cost_size(structure: Expr) -> int:
    """The size a time budget prices a structure's fit at: its base kernels, or half its hyperparameters where
    that is more (one ARD kernel over ten columns is one base kernel with eleven hyperparameters)."""
    return max(structure.n_base_kernels, math.ceil(structure.n_hyperparameters / 2))


class ModelFitter(Protocol):
    """What the pipeline's stages need from a task: engines, rows and baselines for one training set.

    ``X`` and ``y`` are the training rows on the fitting scale (normalised
    targets, or labels in {−1, +1}).
    """

    X: np.ndarray
    y: np.ndarray
    #: Structures the search always fits at depth 1 besides the grammar's (e.g. the constant model).
    extra_initial: tuple[Expr, ...]
    #: Whether a large training set may be explored on a sample (then refitted by successive halving).
    explores_samples: bool
    #: Whether the explore stage fits every candidate with full effort on the rows it is given; if not,
    #: the selected structure is polished on all rows.
    explore_fits_are_final: bool
    #: How hard the explore stage fits candidates: "full", "screened" or "explore" (see explore_effort_for).
    explore_effort: str
    #: The most rows a finalist is fitted on (None: all).
    max_rows: int | None
    #: Whether the final model conditions on all rows whatever rows its hyperparameters were fitted on (the
    #: sparse regression), or on those rows only (the classifier, on at most ``max_rows``).
    conditions_on_all_rows: bool
    #: Whether its models have leave-one-out predictive densities (select by "loo" and "stacking").
    has_loo: bool
    #: Whether its records can forecast the end of a series from its start (select by "forecast").
    forecasts: bool
    #: Whether its data are a series (one input column that looks like a time index): "auto" forecasts.
    is_series: bool
    #: In a leave-one-out selection, a structure of the search competes only if it beats the best baseline
    #: by this many standard errors (see COMPOSITE_MARGIN_SE); None: every finalist competes.
    baseline_margin_se: float | None
    #: Whether "stacking" discounts each finalist's leave-one-out densities by the optimism of its
    #: hyperparameters (see LOO_OPTIMISM_PER_HYPERPARAMETER).
    discounts_loo_optimism: bool
    #: Whether that discount leaves out the lengthscales flat on the data (see FLAT_LENGTHSCALE_SPANS).
    discount_skips_flat_lengthscales: bool
    #: Per-column statistics of the training rows (the column spans of flat lengthscales).
    summary: DataSummary
    #: Whether "loo" and "stacking" judge cross-validated densities of refits (cross_validated_log_density)
    #: instead of leave-one-out densities at the finalists' fitted hyperparameters (small data).
    cross_validates: bool
    #: In a leave-one-out selection, a structure of the search is a finalist only if its criterion trails the
    #: search's best by at most this many nats (see HOPELESS_FINALIST_GAP); None: every depth's best is one.
    hopeless_finalist_gap: float | None

    @property
    def candidate_fitter(self) -> CandidateFitter:
        """The explore stage's fitter on all rows."""

    def row_order(self, seed: int) -> np.ndarray:
        """A permutation of the rows; samples and rungs are its prefixes, so that they are nested."""

    def sample_fitter(self, rows: np.ndarray) -> CandidateFitter:
        """The explore stage's fitter on a sample of the rows (its starts and bounds from the sample)."""

    def refit_fitter(self, n_rows: int) -> CandidateFitter:
        """The fitter of finalists refitted on ``n_rows`` rows (the pipeline gives it the "polish" effort: from
        their fitted values only)."""

    def baseline_fitter(self) -> CandidateFitter:
        """The fitter of the baselines on all rows (full effort, or the effort the model fitter chose for them)."""

    def seconds_on_rows(self, n_rows: int) -> tuple[float, float] | None:
        """Predicted seconds, on ``n_rows`` rows, of one evaluation of a candidate's objective with its gradient
        and of one model with its leave-one-out densities; None where the fits' costs are not predicted so
        (a time budget then starts a finalists' rung without a prediction)."""

    def baseline_structures(self, grammar: Grammar) -> list[Expr]:
        """Structures that compete with the search's best at the end (never expanded)."""

    def model(self, record: CandidateRecord, rows: np.ndarray | None = None) -> Any:
        """The fitted model of a record conditioned on ``rows`` (None: all); it has ``loo_log_density()``."""

    def forecast_log_density(self, record: CandidateRecord, fraction: float,
                             seed: int) -> tuple[np.ndarray | None, CandidateRecord | None]:
        """Log densities of the latest ``fraction`` of the rows forecast from the record refitted on the rest
        (None when the refit fails), and that refit's record (None when there was none), whose cost the
        pipeline charges to ``record``."""

    def cross_validated_log_density(self, record: CandidateRecord, folds: list[tuple[np.ndarray, np.ndarray]],
                                    seed: int) -> tuple[np.ndarray | None, list[CandidateRecord]]:
        """Log density of every row predicted by the record refitted on the other folds' rows (None when a refit
        fails), and the refits' records, whose costs the pipeline charges to ``record``."""

    def interpolates_noise(self, record: CandidateRecord) -> bool:
        """Whether a term of the record's structure, other than white noise by design, acts as white noise on the
        training inputs: the select stage's "forecast" does not judge such a finalist."""

    def changes_in_forecast_rows(self, record: CandidateRecord, fraction: float) -> bool:
        """Whether the record's structure places a change (a changepoint, a change window's start or end)
        within the latest ``fraction`` of the rows, which a forecast from the earlier rows cannot judge."""

    def forecast_variance_scale(self, refit: CandidateRecord, fraction: float) -> float:
        """What a forecast's predictive variance is multiplied by: the mean squared standardised error of the
        latest ``fraction`` of the rows forecast by ``refit`` (a fit on the earlier rows), at least 1."""

    def earlier_forecast_variance_scale(self, record: CandidateRecord, fraction: float,
                                        seed: int) -> tuple[float, CandidateRecord | None]:
        """The same factor from the ``fraction`` of the rows before the latest ``fraction``, forecast by the
        record refitted on the rows before them, and that refit's record (None when there was none), whose cost
        the pipeline charges to ``record``."""


@dataclass
class Exploration:
    """What the explore stage found: the search's result, the rows it saw, and the fitter it used."""

    result: SearchResult
    fitter: CandidateFitter
    #: Sorted rows of the sample explored (None: all rows).
    rows: np.ndarray | None = None
    #: The nested row order the sample is a prefix of (None without a sample).
    order: np.ndarray | None = None
    #: The baselines fitted before the search (under a time budget, see SearchPipeline._baseline_first), also
    #: in ``result.records``.
    baselines_first: list[CandidateRecord] = dataclasses.field(default_factory=list)


@dataclass
class Finalists:
    """The finalist stage's records, all fitted on the same rows: what select chooses from."""

    #: The records the final model is chosen from.
    records: list[CandidateRecord]
    #: Every usable record fitted on those rows (the pool of model averaging), the finalists included.
    comparable: list[CandidateRecord]
    #: Sorted rows they were fitted on (None: all rows).
    rows: np.ndarray | None = None


@dataclass
class PipelineResult:
    """The outcome of a staged search.

    ``search`` holds every record (explored, baselines, finalists' refits),
    the search path and the stop reason; ``selected`` the selected record
    first, then the averaged ones, with their ``weights``; ``rows`` the rows
    they were fitted on (None: all).
    """

    search: SearchResult
    selected: list[CandidateRecord]
    weights: np.ndarray
    rows: np.ndarray | None = None
    #: The records select chose from (with their ``predictive_score`` when it judged prediction).
    finalists: list[CandidateRecord] = dataclasses.field(default_factory=list)
    #: The rule select applied ("criterion", "loo" or "stacking").
    selection: str = "criterion"
    #: The search's finalists left out of a leave-one-out selection: not clearly better than the best
    #: baseline (see ``ModelFitter.baseline_margin_se``).
    held_back: list[CandidateRecord] = dataclasses.field(default_factory=list)
    #: Whether "loo" or "stacking" judged cross-validated densities of refits (small data), not leave-one-out ones.
    cross_validated: bool = False
    #: What the predictive variance of a forecast beyond the series is multiplied by (see
    #: ``ModelFitter.forecast_variance_scale``): 1 unless select judged forecasts.
    forecast_variance_scale: float = 1.0

    @property
    def held_out_kind(self) -> str:
        """What the finalists' ``predictive_score`` measures: "forecast", "cv" or "loo"."""
        return "forecast" if self.selection == "forecast" else "cv" if self.cross_validated else "loo"

    @property
    def best(self) -> CandidateRecord:
        return self.selected[0]


class SearchPipeline:
    """Explore, finalists, select (see the module docstring); :meth:`run` runs the three stages.

    Parameters
    ----------
    settings : SearchSettings
        Depth, beam, budgets, parallelism, progress and ``model_averaging``.
    """

    def __init__(self, settings: SearchSettings) -> None:
        self.settings = settings

    def run(self, model_fitter: ModelFitter, grammar: Grammar, criterion: SelectionCriterion,
            seed: int) -> PipelineResult:
        budget = self.settings.time_budget
        self._deadline = None if budget is None else time.perf_counter() + budget
        self._seed = seed
        self._model_fitter = model_fitter
        self._full_effort_cost = self._full_effort_cost_of(model_fitter)
        exploration = self.explore(model_fitter, grammar, criterion, seed)
        result = exploration.result
        explore_stopped = result.stop_reason.startswith("time budget")
        if explore_stopped:
            depth = max((level["depth"] for level in result.levels), default=0)
            # the estimator's time_budget less what fit spent before this search (or this class's share of it)
            left = self._deadline - time.perf_counter()
            if budget < SPENT_BEFORE_THE_SEARCH:
                # (the estimator gives a search at least a token budget: its first fits always go)
                when = ("The time budget (time_budget) was spent before the search began (on preparing the data, "
                        "e.g. the input warping's decision or the inducing inputs)")
            elif left > 0.05 * budget:
                when = (f"The search stopped at depth {depth} with {left:.3g} s of its {budget:.3g}-s time budget "
                        "left, kept for fitting the finalists (a further depth was predicted not to fit in it)")
            else:
                when = f"The search reached its time budget at depth {depth} (it had {budget:.3g} s when it started)"
            warnings.warn(f"{when}: the model is the best structure found by then; raise "
                          "time_budget to search further.", ConvergenceWarning, stacklevel=user_stacklevel())
        if result.stop_reason == "candidate budget reached":
            depth = max((level["depth"] for level in result.levels), default=0)
            warnings.warn(f"The search reached max_candidates={self.settings.max_candidates} at depth {depth}: the "
                          "model is the best structure found by then, with no finalists refitted and no baselines "
                          "compared; raise max_candidates (or use time_budget) to search further.",
                          ConvergenceWarning, stacklevel=user_stacklevel())
        if result.stop_reason in STOPS_WITHOUT_MORE_FITS:
            # a spent budget or an interruption: no more fits, the model is the search's best
            return self.select(model_fitter, exploration, _search_best_only(exploration))
        explored, started = _evaluation_cost(result.records), time.perf_counter()
        # a Ctrl-C from here on (in the finalists' fits, the select stage's judges or a progress note) keeps the
        # search's best structure: the search is done
        try:
            self._note(f"explore stage done: {cost_text(*explored)}; fitting the finalists")
            finalists = self.finalists(model_fitter, exploration, grammar, seed)
            outcome = self.select(model_fitter, exploration, finalists)
        except KeyboardInterrupt:
            kept = "search's best structure" + (" (or the better by the criterion of it and the baseline fitted "
                                                "before the search)" if exploration.baselines_first else "")
            warnings.warn(f"Search interrupted after its explore stage, in the finalists and selection: keeping the "
                          f"{kept}.", RuntimeWarning, stacklevel=user_stacklevel())
            result.stop_reason += "; interrupted in the finalists and selection"
            return self.select(model_fitter, exploration, _search_best_only(exploration))
        if budget is not None and not explore_stopped and "time budget" in result.stop_reason:
            warnings.warn(f"The search reached its time budget while fitting the finalists (it had {budget:.3g} s "
                          "of time_budget when it started): some were fitted less than fully (see "
                          "search_stop_reason_); raise time_budget to fit them fully.", ConvergenceWarning,
                          stacklevel=user_stacklevel())
        spent = _evaluation_cost(result.records)
        try:
            self._note(f"finalists and selection: {cost_text(spent[0] - explored[0], spent[1] - explored[1])} in "
                       f"{time.perf_counter() - started:.1f} s; the whole search {cost_text(*spent)}")
        except KeyboardInterrupt:
            pass  # the outcome is complete: only the closing note is lost
        return outcome

    def _note(self, text):
        if self.settings.progress is not None:
            left = "" if self._deadline is None else f" ({max(self._deadline - time.perf_counter(), 0.0):.1f} s left)"
            self.settings.progress(text + left)

    # -- explore -----------------------------------------------------------------------------
    def explore(self, model_fitter: ModelFitter, grammar: Grammar, criterion: SelectionCriterion,
                seed: int) -> Exploration:
        """The grammar search, on all rows or on a sample of ``EXPLORE_ROWS`` of them."""
        X, y = model_fitter.X, model_fitter.y
        rows = order = None
        fitter = model_fitter.candidate_fitter
        if explores_on_sample(model_fitter, criterion):
            order = model_fitter.row_order(seed)
            rows = np.sort(order[:EXPLORE_ROWS])
            fitter = model_fitter.sample_fitter(rows)
            X, y = X[rows], y[rows]
        # (the finalists stage fits the baselines on the sample with the explore's fitter, on all rows with its own)
        first = self._baseline_first(model_fitter, grammar, fitter if rows is not None else
                                     model_fitter.baseline_fitter(), X, y, seed)
        self._finalists_reserve = self._reserve(model_fitter, grammar, fitted=[r.structure for r in first])
        settings = self.settings
        if first:
            settings = dataclasses.replace(settings, time_budget=max(self._deadline - time.perf_counter(), 0.0))
        try:
            result = run_search(fitter, X, y, grammar, settings, base_seed=seed,
                                extra_initial=model_fitter.extra_initial, reserve=self._finalists_reserve)
        except KeyboardInterrupt:
            if not first:
                raise
            # before the search had a fitted record: the baselines fitted before it are what it found
            result = SearchResult(best_index=0, stop_reason="interrupted")
        result.records.extend(first)
        return Exploration(result, fitter, rows, order, first)

    def _baseline_first(self, model_fitter, grammar, fitter, X, y, seed):
        """Under a time budget, on two or more columns: the first baseline (one ARD kernel where the grammar
        admits it) fitted on the search's rows before it, with the next baselines no costlier than it
        (``fit_cost``) on the other workers where its starts cannot be split over them; their usable records
        (none without a budget, or with ``max_candidates``).

        A budget spent on the search's first depth (one-column kernels) had left no time for the baselines:
        a classifier of 3 classes on 4000 rows x 5 with 1-3 s kept SE(0) or SE(1) per class, 55 % right
        where one ARD kernel per class gets 89 %; breast_cancer with 10 s, SE(22). The kernel that predicts well on
        most tables comes first, and the search has the rest of the budget. (One column's ARD kernel is
        the search's own first candidate.) It always goes, as the search's first fits do: past the deadline
        a fit evaluates its first start only, and the criterion then chooses between them.
        """
        baselines = model_fitter.baseline_structures(grammar)
        if (self._deadline is None or not self.settings.baseline_first or not baselines or X.shape[1] < 2
                or self.settings.max_candidates is not None):  # (max_candidates counts the search's fits only)
            return []
        shards = start_shards(fitter, 1, X.shape[0], self.settings.n_jobs)
        if len(shards) > 1:  # its starts split over the workers
            jobs = [(shard, (baselines[0], X, y, candidate_seed(seed, baselines[0]))) for shard in shards]
            records = merge_start_shards(self._fit_in_parallel(jobs, always=True), len(shards))
        else:
            # a fit whose starts cannot be split keeps one worker: the next baselines no costlier than it take the
            # others (the additive kernel over 30 columns took twice the ARD kernel's time, and the search waited)
            partners = [b for b in baselines[1:] if fit_cost(b) <= fit_cost(baselines[0])]
            chosen = baselines[:1] + partners[:effective_n_jobs(self.settings.n_jobs) - 1]
            records = self._fit_in_parallel([(fitter, (s, X, y, candidate_seed(seed, s))) for s in chosen],
                                            always=True)
        fitted = [r for r in records if r is not None and r.status == OK]
        for record in fitted:
            record.depth, record.parent, record.baseline = 1, None, True
            note = "baseline, fitted before the search (time budget)"
            record.message = f"{note}; {record.message}" if record.message else note
        return fitted

    def _reserve(self, model_fitter, grammar, fitted=()):
        """``reserve(seconds_for, largest)``: the seconds the finalists stage will take, given the expected time
        of an explore fit of a structure of each size and the size of the search's largest structure (the
        search's loop predicts them from its fits so far).

        The stage's fits run ``n_jobs`` at a time, so each step costs its number of rounds. The baselines
        are as large as they are, fitted with full effort. The full-effort refits of finalists the search
        fitted cheaply are left out: they are made only when the time left allows them
        (:meth:`_affordable_full_effort`), so a tight budget buys a deeper search instead.
        """
        if self.settings.time_budget is None:
            return None
        rounds = self._rounds
        standard = model_fitter.baseline_structures(grammar)
        # those fitted before the search are not fitted again, but are judged (forecast, cross-validated) as finalists
        to_fit = [cost_size(s) for s in standard if s not in fitted]
        baselines = [cost_size(s) for s in standard]
        baseline_cost = POLISHED_BASELINE_COST if model_fitter.baseline_fitter().effort == EXPLORE_THEN_POLISH \
            else self._full_effort_cost_of(model_fitter)
        n_polished = 0
        if not model_fitter.explore_fits_are_final:
            n_polished = 1 if self.settings.selection == "criterion" else PREDICTIVE_FINALISTS
        forecast = self.settings.selection == "forecast"
        cross_validating = self.settings.selection in ("loo", "stacking") and model_fitter.cross_validates
        n_variants = 2 * TREND_VARIANT_PARENTS

        def reserve(seconds_for, largest):
            finalist = seconds_for(largest)
            baseline = max((seconds_for(size) for size in baselines), default=0.0)
            fitted_baseline = max((seconds_for(size) for size in to_fit), default=0.0)
            total = rounds(len(to_fit)) * baseline_cost * fitted_baseline + rounds(n_polished) * finalist
            if forecast:
                # the trend variants' fits, then one refit on the start of the series per finalist
                total += (rounds(n_variants) + rounds(PREDICTIVE_FINALISTS + n_variants)) * FORECAST_JOB_COST * finalist
                total += rounds(len(baselines)) * FORECAST_JOB_COST * baseline
            if cross_validating:
                # a job per finalist: its refits on each fold's training rows
                total += rounds(PREDICTIVE_FINALISTS + len(baselines)) * CROSS_VALIDATION_JOB_COST * \
                    max(finalist, baseline)
            return FINALIST_FIT_COST * total

        return reserve

    def _full_effort_cost_of(self, model_fitter):
        """What a full-effort fit costs in fits of the explore stage's effort on the model fitter's rows."""
        n_rows = model_fitter.X.shape[0]
        return full_effort_cost(with_effort(model_fitter.candidate_fitter, self.settings.explore_effort, n_rows),
                                n_rows)

    def _rounds(self, n_fits):
        return parallel_rounds(n_fits, self.settings.n_jobs)

    def _affordable_full_effort(self, records, wanted, result):
        """How many of the ``wanted`` best ``records`` the time left allows to refit with full effort (all
        without a time budget): each costs ``_full_effort_cost`` times its cheap fit, ``n_jobs`` at a
        time, and the rest of the finalists stage is kept back."""
        cheap = [r for r in records[:wanted] if r.effort != "full"]
        if self._deadline is None or not cheap:
            return wanted
        # the search's fits at its own effort (a record refitted with full effort has both times)
        fits = fit_times(r for r in result.records if r.effort == cheap[0].effort)
        left = self._deadline - time.perf_counter() - self._finalists_reserve(
            lambda n_base_kernels: expected_fit_seconds(n_base_kernels, fits),
            max(r.structure.n_base_kernels for r in records))
        affordable = 0
        for count in range(1, len(cheap) + 1):
            if self._full_effort_cost * self._rounds(count) * max(r.fit_time for r in cheap[:count]) > left:
                break
            affordable = count
        if affordable < len(cheap):
            result.stop_reason += (f"; time budget: {len(cheap) - affordable} of the finalists kept their cheap fit "
                                   "(no time for full effort)")
        return records.index(cheap[affordable]) if affordable < len(cheap) else wanted

    def _full_effort(self, fitter, result, records, X, y, seed):
        """``records`` fitted by ``fitter`` (full effort), in parallel (replaced in ``result.records`` too).

        A record the explore stage already fitted with full effort is kept as
        it is, and so is one the time budget leaves no time for. On large data
        searched with the "explore" effort (tables, :func:`full_effort_on_subset`)
        full effort runs on a subset of the rows, and every record so fitted,
        by the explore stage's refits too, is then polished on all of them from
        its values (:func:`table_full_effort_on_subset`).
        """
        subset = table_full_effort_on_subset(fitter, X.shape[0], self.settings.explore_effort)
        if subset is None:
            return self._refit_records(fitter, result, [r for r in records if r.effort != "full"], X, y, seed,
                                       "full", records)
        cheap = [r for r in records if r.effort not in ("full", SUBSET_FULL_EFFORT)]
        records = self._refit_records(subset, result, cheap, X, y, seed, SUBSET_FULL_EFFORT, records)
        polish = dataclasses.replace(fitter, effort="polish")
        return self._refit_records(polish, result, [r for r in records if r.effort == SUBSET_FULL_EFFORT], X, y,
                                   seed, "full", records)

    def _refit_records(self, fitter, result, refitted, X, y, seed, effort, records):
        """``records`` with those in ``refitted`` fitted again by ``fitter`` and merged with their refits
        (:func:`merge_full_effort_refit`, as ``effort``), in ``result.records`` too."""
        # few refits are split by their starts over the workers, so that none waits for the longest
        shards = start_shards(fitter, len(refitted), X.shape[0], self.settings.n_jobs)
        # (a raced record's refit is its own fit again, with every start: see RACED_FULL_EFFORT)
        args = [unraced_fit_args(r, r.structure, candidate_seed(seed, r.structure), r.warm_state) for r in refitted]
        refits = self._fit_in_parallel(
            [(shard, (structure, X, y, fit_seed, warm_state, hints))
             for structure, fit_seed, warm_state, hints in args for shard in shards],
            [fit_cost(r.structure, polish=fitter.effort == "polish") for r in refitted for _ in shards],
            n_rows=X.shape[0])
        refits = merge_start_shards(refits, len(shards))
        refined = {}
        for record, refit in zip(refitted, refits):
            if refit is None:
                continue
            refined[id(record)] = merged = merge_full_effort_refit(record, refit, effort)
            position = next(i for i, r in enumerate(result.records) if r is record)
            result.records[position] = merged
            if result.best is record:
                result.best_index = position
        return [refined.get(id(r), r) for r in records]

    def _fit_in_parallel(self, jobs, costs=None, priority=None, n_rows=None, always=False):
        """``function(*arguments)`` for each ``(function, arguments)`` job, in parallel; None where the time
        budget ran out first (then the jobs go in batches of ``n_jobs`` and the budget is checked between them).

        With ``costs`` (one expected cost per job) the jobs are sent costliest first: the workers take them
        in order, so a long job sent last would run alone at the end. Under a time budget, ``priority`` (the
        jobs' indices, the most wanted first) orders them instead: those the budget leaves out are the least
        wanted; and for fits on ``n_rows`` rows a batch goes only while the time left holds the
        MIN_POLISH_EVALUATIONS evaluations the model fitter predicts there (a fit stops at the deadline, but
        not inside an evaluation, which on a classifier's 1500 rows takes a second or more). The results keep
        the order of ``jobs``. With ``always`` the first batch goes whatever the time left.
        """
        order = list(range(len(jobs))) if costs is None else sorted(range(len(jobs)), key=lambda i: -costs[i])
        if priority is not None and self._deadline is not None:
            order = list(priority)
        jobs = [self._bounded(job) for job in jobs]
        results = [None] * len(jobs)
        least = (0.0 if n_rows is None or self._deadline is None else
                 self._predicted_seconds(n_rows, evaluations=MIN_POLISH_EVALUATIONS))
        for batch in deadline_batches(len(jobs), self.settings.n_jobs, self._deadline is not None):
            if (self._out_of_time() or self._outlasts_budget(least)) and not (always and batch.start == 0):
                break
            sent = order[batch]
            for i, result in zip(sent, Parallel(n_jobs=self.settings.n_jobs, prefer=self.settings.prefer)(
                    delayed(jobs[i][0])(*jobs[i][1]) for i in sent)):
                results[i] = result
        return results

    def _bounded(self, job):
        """A job whose candidate fitters (the function or an argument) stop optimising at the deadline: one
        fit of a large baseline can outlast the whole budget (the jobs of a batch are not interrupted)."""
        if self._deadline is None:
            return job
        function, arguments = job
        return self._bounded_fitter(function), tuple(self._bounded_fitter(argument) for argument in arguments)

    def _bounded_fitter(self, fitter):
        """``fitter`` stopping its optimisations at the deadline (itself without a time budget)."""
        return fitter if self._deadline is None else with_deadline(fitter, self._deadline)

    def _out_of_time(self):
        return self._deadline is not None and time.perf_counter() > self._deadline

    def _predicted_seconds(self, n_rows, evaluations=0, models=0):
        """The seconds the model fitter predicts for ``evaluations`` objective evaluations and ``models`` models
        with their leave-one-out densities on ``n_rows`` rows (see ``ModelFitter.seconds_on_rows``); 0 where it
        predicts none."""
        costs = self._model_fitter.seconds_on_rows(n_rows)
        return 0.0 if costs is None else evaluations * costs[0] + models * costs[1]

    def _outlasts_budget(self, seconds):
        """Whether work predicted to take ``seconds`` would end after the deadline (never without a budget)."""
        return self._deadline is not None and seconds > self._deadline - time.perf_counter()

    # -- finalists -----------------------------------------------------------------------------
    def finalists(self, model_fitter: ModelFitter, exploration: Exploration, grammar: Grammar,
                  seed: int) -> Finalists:
        """The records select chooses from, fitted on the final rows (see the module docstring)."""
        if exploration.rows is None:
            return self._finalists_on_all_rows(model_fitter, exploration, grammar, seed)
        return self._finalists_by_halving(model_fitter, exploration, grammar, seed)

    def _finalists_on_all_rows(self, model_fitter, exploration, grammar, seed):
        result = exploration.result
        X, y = model_fitter.X, model_fitter.y
        best = result.best
        chosen = [best]
        # (a baseline fitted before the search, under a time budget, competes as the baselines fitted below)
        first = exploration.baselines_first
        searched = [r for r in result.records if all(r is not b for b in first)]
        if self.settings.selection != "criterion":
            chosen = distinct_best([best] + _level_bests(searched) + distinct_best(searched, PREDICTIVE_FINALISTS),
                                   len(result.records))
            chosen.sort(key=lambda r: -r.criterion)
            gap = model_fitter.hopeless_finalist_gap
            if self.settings.selection in ("loo", "stacking") and gap is not None:
                chosen = [chosen[0]] + [r for r in chosen[1:] if r.criterion >= chosen[0].criterion - gap]
        # finalists get full effort: those the explore stage fitted cheaply are fitted again from their values
        n_full = len(chosen)
        if self.settings.explore_effort == "screened" and not any(r.effort == RACED_FULL_EFFORT for r in chosen):
            # the best few, and every finalist the explore stage could not tell from the best (but every finalist
            # whose starts were raced: the race may have stopped the start of its basin)
            tied = sum(r.criterion >= chosen[0].criterion - FULL_EFFORT_TIE for r in chosen)
            n_full = max(SCREENED_FULL_EFFORT_FINALISTS, tied)
        n_full = self._affordable_full_effort(chosen, n_full, result)
        chosen = self._full_effort(model_fitter.candidate_fitter, result, chosen[:n_full], X, y, seed) + chosen[n_full:]
        if self.settings.selection == "forecast":
            chosen += self._trend_variants(model_fitter, result, chosen, grammar, seed)
        # the polishing of the finalists on all rows and the baselines' fits, in parallel
        jobs, costs = [], []
        if not model_fitter.explore_fits_are_final:
            fitter = dataclasses.replace(model_fitter.refit_fitter(X.shape[0]), effort="polish")
            jobs += [(_polished, (fitter, r, X, y, seed)) for r in chosen]
            costs += [fit_cost(r.structure, polish=True) for r in chosen]
        standard = model_fitter.baseline_structures(grammar)
        baselines = [s for s in standard if all(s != r.structure for r in chosen + first)]
        if baselines:
            fitter = model_fitter.baseline_fitter()
            jobs += [(fitter, (structure, X, y, candidate_seed(seed, structure))) for structure in baselines]
            costs += [fit_cost(structure) for structure in baselines]
        # under a time budget the fits that matter most go first: the baselines in their order (one ARD kernel
        # first), then the finalists' polish, the best first. The costliest first had left one ARD kernel out for
        # the additive model on tables of a few columns; the best finalist first, a robust classifier on 1500 x 4
        # with 15 s kept SE(0), polished (63.5 % right), where one ARD kernel first gave 86 % in 19 s
        n_polished = len(jobs) - len(baselines)
        priority = list(range(n_polished, len(jobs))) + list(range(n_polished))
        fitted = self._fit_in_parallel(jobs, costs, priority, n_rows=X.shape[0])
        skipped = sum(record is None for record in fitted)
        polished = {id(r): r for r in chosen}
        if not model_fitter.explore_fits_are_final:
            for record, refit in zip(chosen, fitted):
                if refit is not None:
                    # the search's record keeps its values and carries what its structure cost in all
                    _take_costs(record, refit)
                    polished[id(record)] = refit
            fitted = fitted[len(chosen):]
        # (the search may have reached a baseline's structure too: its own record stands for it)
        records = [polished[id(r)] for r in chosen] + [r for r in first if all(r.structure != c.structure
                                                                               for c in chosen)]
        for record in records:
            # a baseline the search reached too is still a baseline: it always competes, never held back
            record.baseline = record.baseline or record.structure in standard
        for record in fitted:
            if record is None:
                continue
            record.depth, record.parent, record.baseline = 1, None, True
            record.message = record.message or "baseline, fitted on all rows after the search"
            result.records.append(record)
            records.append(record)
        if skipped:
            result.stop_reason += f"; time budget: {skipped} finalist fits left out"
        comparable = [polished.get(id(r), r) for r in result.records]
        return Finalists([r for r in records if r.status == OK], [r for r in comparable if r.status == OK])

    def _trend_variants(self, model_fitter, result, chosen, grammar, seed):
        """The fitted trend variants of the best finalists (recorded in ``result.records`` too).

        A variant the search already fitted is reused; the others are fitted in
        parallel, each from its parent's values and start hints.
        """
        X, y = model_fitter.X, model_fitter.y
        if self._out_of_time():
            return []
        fitted = {r.structure.without_values(): r for r in result.records if r.status == OK}
        taken = {r.structure.without_values() for r in chosen}
        reused, jobs = [], {}
        for parent in sorted(chosen, key=lambda r: -r.criterion)[:TREND_VARIANT_PARENTS]:
            for variant in grammar.trend_variants(parent.structure, X.shape[1]):
                key = variant.without_values()
                if key in taken or not enough_rows_for(variant, X.shape[0]):
                    continue
                taken.add(key)
                if key in fitted:
                    reused.append(fitted[key])
                else:
                    jobs[key] = (variant, parent)
        fitter = model_fitter.candidate_fitter
        if self.settings.explore_effort == "screened":
            # screened like the search's children: full effort is for the criterion's best finalists only
            fitter = with_effort(fitter, "screened", X.shape[0])
        else:
            reused = self._full_effort(fitter, result, reused, X, y, seed)
        if not jobs:
            return reused
        n_features = X.shape[1]
        hints = {id(parent): fitter.start_hints(parent, X, y, grammar.period_columns(n_features),
                                                grammar.change_columns(n_features))
                 for _, parent in jobs.values()}
        records = self._fit_in_parallel([
            (fitter, (variant, X, y, candidate_seed(seed, variant), parent.warm_state, hints[id(parent)]))
            for variant, parent in jobs.values()], [fit_cost(variant) for variant, _ in jobs.values()])
        fitted = [(record, parent) for record, (_, parent) in zip(records, jobs.values()) if record is not None]
        for record, parent in fitted:
            record.depth = None if parent.depth is None else parent.depth + 1
            record.parent = str(parent.structure)
            record.message = record.message or TREND_VARIANT_MESSAGE
            result.records.append(record)
        return reused + [record for record, _ in fitted if record.status == OK]

    def _finalists_by_halving(self, model_fitter, exploration, grammar, seed):
        result, rows, order = exploration.result, exploration.rows, exploration.order
        X, y = model_fitter.X, model_fitter.y
        # on the sample the baselines compete for the finalist places (one fitted before the search is there)
        fitted = {r.structure for r in exploration.baselines_first}
        baselines = [s for s in model_fitter.baseline_structures(grammar)
                     if s != result.best.structure and s not in fitted]
        fitted = self._fit_in_parallel([(exploration.fitter, (s, X[rows], y[rows], candidate_seed(seed, s)))
                                        for s in baselines], [fit_cost(s) for s in baselines])
        for record in fitted:
            if record is None:
                continue
            record.depth, record.parent, record.baseline = 1, None, True
            record.message = record.message or "baseline, fitted on the search's rows"
            result.records.append(record)
        # full effort for the finalists on the sample; on more rows each is polished from its values
        first = self._full_effort(exploration.fitter, result, distinct_best(result.records, FIRST_FINALISTS),
                                  X[rows], y[rows], seed)
        explored = list(result.records)
        last_size = X.shape[0] if model_fitter.max_rows is None else min(X.shape[0], model_fitter.max_rows)

        sizes = halving_sizes(rows.size, last_size)
        # (made here: a worker's clock cannot convert the deadline, see with_deadline)
        rung_fitters = {size: self._bounded_fitter(dataclasses.replace(model_fitter.refit_fitter(size),
                                                                       effort="polish")) for size in sizes}

        def refit(record, rung_rows):
            fitter = rung_fitters[rung_rows.size]
            refitted = fitter(record.structure, X[rung_rows], y[rung_rows], candidate_seed(seed, record.structure),
                              record.warm_state)
            return _as_finalist(refitted, record, rung_rows.size)

        rungs = [(np.sort(order[:size]), refit) for size in sizes]
        unaffordable = []

        def stop(n_rows, n_refits):
            # the rung's refits, n_jobs at a time, then the select stage's models of them on its rows
            if self._out_of_time():
                return True
            seconds = self._predicted_seconds(n_rows, self._rounds(n_refits) * MIN_POLISH_EVALUATIONS, n_refits)
            if self._outlasts_budget(seconds):
                unaffordable.append(n_rows)
                return True
            return False

        rounds = refit_finalists(first, rungs, FIRST_FINALISTS, n_jobs=self.settings.n_jobs,
                                 progress=self.settings.progress, stop=None if self._deadline is None else stop)
        for records in rounds:
            result.records.extend(records)
        stopped = sorted({size for size, records in zip(sizes, rounds) for r in records
                          if STOPPED_BY_BUDGET in r.message})
        if stopped:
            result.stop_reason += (f"; time budget: finalists' refits on {', '.join(map(str, stopped))} rows stopped "
                                   "before they converged")
        if unaffordable:
            result.stop_reason += (f"; time budget: no finalist refitted on {unaffordable[0]} rows (predicted to "
                                   "take longer than the time left)")
        last = [r for r in rounds[-1] if r.status == OK] if len(rounds) == len(rungs) else []
        if last:
            result.stop_reason += f"; finalists refitted on {', '.join(str(len(r)) for r, _ in rungs)} rows"
            return Finalists(last, last, rungs[-1][0])
        why = ("the time budget ran out before" if self._out_of_time() or unaffordable else
               "every finalist failed to fit on")
        conditions = (f"it conditions on all {X.shape[0]}" if model_fitter.conditions_on_all_rows else
                      f"and it conditions on them only, of {X.shape[0]}")
        result.stop_reason += (f"; {why} more rows: the model's hyperparameters are those fitted on the search's "
                               f"{rows.size} rows ({conditions})")
        kept = distinct_best(explored, 1)
        return Finalists(kept, [r for r in explored if r.status == OK and np.isfinite(r.criterion)], rows)

    # -- select --------------------------------------------------------------------------------
    def select(self, model_fitter: ModelFitter, exploration: Exploration, finalists: Finalists) -> PipelineResult:
        """The selected finalist, and the models averaged with it, by ``settings.selection``."""
        selection, k = self.settings.selection, self.settings.model_averaging
        records = finalists.records
        forecast_refits = {}
        held_back = []
        late_change = False
        cross_validated = (selection in ("loo", "stacking") and model_fitter.cross_validates and len(records) > 1
                           and finalists.rows is None)
        if selection == "forecast" and (self._out_of_time() or (
                len(records) == 1 and exploration.result.stop_reason in STOPS_WITHOUT_MORE_FITS)):
            # no time left for the refits on the start of the series, or a spent budget. (A lone finalist, such as
            # a fixed structure's, is still judged: its forecast of the series' end calibrates its spread beyond.)
            selection = "criterion"
        elif selection == "forecast" and model_fitter.changes_in_forecast_rows(
                _first_best(records, lambda r: r.criterion), FORECAST_FRACTION):
            # the evidence's best model has the series change in the rows the forecast would hold out: a refit
            # on the rows before cannot place that change, so every forecast mostly measures the surprise
            exploration.result.stop_reason += ("; selected by the criterion: its best finalist changes within "
                                               "the latest rows, which a forecast from the earlier ones cannot judge")
            selection, late_change = "criterion", True
        if selection in ("loo", "stacking") and self._deadline is not None and len(records) == 1:
            selection = "criterion"  # nothing to choose from, under a time budget: no leave-one-out densities
        elif selection in ("loo", "stacking") and not cross_validated and self._outlasts_budget(
                self._predicted_seconds(model_fitter.X.shape[0] if finalists.rows is None else finalists.rows.size,
                                        models=len(records) - 1)):
            exploration.result.stop_reason += ("; time budget: selected by the criterion (the finalists' "
                                               "leave-one-out densities were predicted to take longer than the time "
                                               "left)")
            selection = "criterion"
        if selection == "criterion":
            selected = _first_best(records, lambda r: r.criterion)
            pool = [r for r in finalists.comparable if np.isfinite(r.criterion) and r is not selected]
            chosen, weights = _averaged(selected, pool, k, lambda r: r.criterion)
        else:
            if selection == "forecast":
                # a finalist with a signal term that correlates no two rows interpolates the noise; its refit can
                # forecast a few judged rows well by chance (discoveries: benchmarks/results/unseen_series.txt)
                judged = [r for r in records if not model_fitter.interpolates_noise(r)] or records
                if len(judged) < len(records):
                    exploration.result.stop_reason += (
                        f"; {len(records) - len(judged)} of the finalists not judged by their forecasts: a term of "
                        "each acts as white noise on the data (it interpolates the noise)")
                try:
                    densities, forecast_refits = self._forecast_densities(model_fitter, judged,
                                                                          getattr(self, "_seed", 0))
                except KeyboardInterrupt:
                    warnings.warn("Search interrupted while the finalists forecast the series: selecting by the "
                                  "criterion.", RuntimeWarning, stacklevel=user_stacklevel())
                    exploration.result.stop_reason += "; interrupted while the finalists forecast"
                    densities = {}
            else:
                densities = None
                if cross_validated:
                    densities = self._cross_validated_densities(model_fitter, records, getattr(self, "_seed", 0),
                                                                exploration.result)
                    cross_validated = densities is not None
                if densities is None:
                    densities = self._loo_densities(model_fitter, records, finalists.rows)
            scored = [r for r in records if id(r) in densities]
            if selection != "forecast" and model_fitter.baseline_margin_se is not None:
                scored, held_back = _clear_of_the_baselines(scored, densities, model_fitter.baseline_margin_se,
                                                            simplest=model_fitter.extra_initial)
            if not scored:  # no finalist has a usable held-out density: fall back on the criterion
                kind = "forecast" if selection == "forecast" else "cross-validated" if cross_validated else "leave-one-out"
                exploration.result.stop_reason += f"; no finalist had a {kind} density, selected by criterion"
                selected = _first_best(records, lambda r: r.criterion)
                chosen, weights = [selected], np.ones(1)
            elif selection in ("loo", "forecast"):
                selected = _first_best(scored, lambda r: r.predictive_score)
                if selection == "forecast":
                    # a forecast of a few rows cannot tell finalists within a nat apart: the evidence decides
                    level = selected.predictive_score - FORECAST_TIE
                    selected = _first_best([r for r in scored if r.predictive_score >= level], lambda r: r.criterion)
                pool = [r for r in scored if r is not selected]
                chosen, weights = _averaged(selected, pool, k, lambda r: r.predictive_score)
            else:
                log_densities = np.column_stack([densities[id(r)] for r in scored])
                if model_fitter.discounts_loo_optimism and not cross_validated:
                    # (a refit's held-out densities have not seen the rows they score)
                    flat_on = model_fitter.summary if model_fitter.discount_skips_flat_lengthscales else None
                    log_densities = log_densities - loo_optimism(scored, log_densities.shape[0], flat_on)
                weights = stacking_weights(log_densities)
                keep = [i for i in np.argsort(-weights, kind="stable") if weights[i] >= MIN_AVERAGING_WEIGHT * weights.max()]
                chosen = [scored[i] for i in keep]
                weights = weights[keep] / weights[keep].sum()
        variance_scale = 1.0
        # the chosen finalist's forecast on the series' end, as judged, also calibrates its spread beyond the series
        refit = forecast_refits.get(id(chosen[0]))
        if selection == "forecast" and refit is not None and chosen[0].predictive_score is not None:
            earlier = self._earlier_forecast_variance_scale(model_fitter, chosen[0], getattr(self, "_seed", 0))
            variance_scale = max(model_fitter.forecast_variance_scale(refit, FORECAST_FRACTION),
                                 min(EARLIER_FORECAST_WIDENING_CAP, earlier))
        elif late_change and not self._out_of_time():
            variance_scale = self._late_change_variance_scale(model_fitter, chosen[0], getattr(self, "_seed", 0))
        outcome = PipelineResult(exploration.result, chosen, weights, finalists.rows, list(records), selection,
                                 held_back, cross_validated and bool(scored), variance_scale)
        if self.settings.progress is not None:
            self.settings.progress(_finalists_note(outcome, selection, self.settings.feature_names))
        return outcome

    def _forecast_densities(self, model_fitter, records, seed):
        """({id(record): log densities of the series' latest rows forecast from its earlier ones}, {id(record): the
        refit on the earlier rows}), in parallel; the records the time budget leaves no time for have neither."""
        densities = self._fit_in_parallel([(model_fitter.forecast_log_density,
                                            (r, FORECAST_FRACTION, candidate_seed(seed, r.structure)))
                                           for r in records], [fit_cost(r.structure) for r in records])
        outcomes = [(None, []) if outcome is None else (outcome[0], [] if outcome[1] is None else [outcome[1]])
                    for outcome in densities]
        refits = {id(r): fits[0] for r, (_, fits) in zip(records, outcomes) if fits}
        return _scored(records, outcomes), refits

    def _earlier_forecast_variance_scale(self, model_fitter, record, seed):
        """The variance factor beyond the series from ``record``'s earlier forecast
        (``earlier_forecast_variance_scale``), 1 when there is no time left for its refit, it fails or is
        interrupted. The refit is charged to ``record``."""
        if self._out_of_time():
            return 1.0
        outcome = self._calibrating_refit(model_fitter.earlier_forecast_variance_scale, record, seed)
        if outcome is None:
            return 1.0
        scale, refit = outcome
        if refit is not None:
            _charge(record, refit)
        return scale

    def _late_change_variance_scale(self, model_fitter, record, seed):
        """The variance factor beyond the series of ``record``, selected by the criterion because it changes within
        the rows the forecast judge holds out: its refit's factor, at most LATE_CHANGE_WIDENING_CAP (1 when the
        refit fails or is interrupted). The refit is charged to ``record``; its forecast judges nothing."""
        outcome = self._calibrating_refit(model_fitter.forecast_log_density, record, seed)
        if outcome is None or outcome[1] is None:
            return 1.0
        refit = outcome[1]
        _charge(record, refit)
        return min(LATE_CHANGE_WIDENING_CAP, model_fitter.forecast_variance_scale(refit, FORECAST_FRACTION))

    def _calibrating_refit(self, method, record, seed):
        """``method(record, FORECAST_FRACTION, seed)`` of the model fitter, a refit that only calibrates the spread
        beyond the series, bounded by the time budget; None (with a warning) when it is interrupted."""
        seed = candidate_seed(seed, record.structure)
        function, arguments = self._bounded((method, (record, FORECAST_FRACTION, seed)))
        try:
            return function(*arguments)
        except KeyboardInterrupt:
            warnings.warn("Search interrupted while calibrating the forecast's spread beyond the series: that "
                          "calibration is skipped.", RuntimeWarning, stacklevel=user_stacklevel())
            return None

    def _cross_validated_densities(self, model_fitter, records, seed, result):
        """{id(record): the log density of every row predicted by its refits on the other folds}, in parallel;
        the same folds for every record (stacking mixes their densities row by row). None when the time budget
        or an interrupt left a finalist without its refits: then every finalist is judged by leave-one-out."""
        folds = cross_validation_folds(model_fitter.y.shape[0], seed)
        try:
            outcomes = self._fit_in_parallel([(model_fitter.cross_validated_log_density,
                                               (r, folds, candidate_seed(seed, r.structure))) for r in records],
                                             [fit_cost(r.structure, polish=True) for r in records])
        except KeyboardInterrupt:
            warnings.warn("Search interrupted while the finalists were cross-validated: judging them by "
                          "leave-one-out densities.", RuntimeWarning, stacklevel=user_stacklevel())
            result.stop_reason += "; interrupted while the finalists were cross-validated, judged by leave-one-out"
            return None
        if any(outcome is None for outcome in outcomes):
            result.stop_reason += "; time budget: the finalists were judged by leave-one-out, not cross-validated"
            return None
        return _scored(records, outcomes)

    @staticmethod
    def _loo_densities(model_fitter, records, rows):
        """{id(record): its leave-one-out log densities}, for the finalists whose model has them."""
        outcomes = []
        for record in records:
            try:
                outcomes.append((model_fitter.model(record, rows).loo_log_density(), []))
            except (NumericalError, np.linalg.LinAlgError):
                outcomes.append((None, []))
        return _scored(records, outcomes)


#: The columns of an estimator's ``finalists_``.
FINALIST_COLUMNS = ("structure", "criterion", "loo_log_density", "cv_log_density", "forecast_log_density", "weight",
                    "baseline", "trend_variant", "held_back")


def finalists_table(outcome: PipelineResult) -> dict[str, list]:
    """The finalists of a staged search as a dict of lists (an estimator's ``finalists_``).

    ``loo_log_density``: Σ_i log p(y_i | y_−i) (None unless the select stage
    judged leave-one-out prediction); ``cv_log_density``: the same sum with
    each row predicted by the finalist refitted on the other folds' rows
    (None unless the select stage cross-validated: small regression data);
    ``forecast_log_density``: the log
    density of the series' latest rows forecast from the earlier ones (None
    unless the select stage judged forecasts); ``weight``: the finalist's
    weight in the prediction (0 when it was not selected); ``baseline``: one
    of the standard models; ``trend_variant``: a finalist plus a linear
    trend, fitted after the search (see the module docstring); ``held_back``:
    a structure of the search left out of a leave-one-out selection because
    its held-out advantage over the best baseline was within the noise (see
    ``ModelFitter.baseline_margin_se``). The models a criterion-weighted
    average (``model_averaging``) takes from the search's other fits follow
    the finalists, so that the weights add up to one.
    """
    weights = {id(r): float(w) for r, w in zip(outcome.selected, outcome.weights)}
    held_back = {id(r) for r in outcome.held_back}
    table = {key: [] for key in FINALIST_COLUMNS}
    listed = {id(r) for r in outcome.finalists}
    for record in list(outcome.finalists) + [r for r in outcome.selected if id(r) not in listed]:
        table["structure"].append(str(record.structure))
        table["criterion"].append(float(record.criterion))
        kind = outcome.held_out_kind
        for column in ("loo", "cv", "forecast"):
            table[f"{column}_log_density"].append(record.predictive_score if kind == column else None)
        table["weight"].append(weights.get(id(record), 0.0))
        table["baseline"].append(record.baseline)
        table["held_back"].append(id(record) in held_back)
        table["trend_variant"].append(record.message == TREND_VARIANT_MESSAGE)
    return table


def resolve_selection(selection: str, has_loo: bool, forecasts: bool = False, is_series: bool = False) -> str:
    """The select stage's rule for an estimator's ``selection``, its engine and its data.

    ``"auto"`` is ``"forecast"`` for a series (``is_series``: one input
    column that looks like a time index, where the model fitter can refit its
    finalists on the start of the series): leaving one point out measures
    interpolation between neighbours, which a short-lengthscale kernel wins
    (on Mauna Loa it preferred SE + LIN to SE + PER, BIC 64 nats lower, with
    worse forecasts), while the evidence prefers flexible trends that revert
    to the mean beyond the data; a forecast of the series' latest rows judges
    what a series model is for (``benchmarks/extrapolation.py``). Otherwise
    -- a table, or one covariate with irregular or repeated values, whose
    model predicts between its values -- it is ``"stacking"`` where the
    engine gives leave-one-out densities (on ``benchmarks/tabular.py`` it
    predicted better than ``"loo"`` and ``"criterion"``; on six covariates
    better than forecasting their largest values or about as well, mcycle's
    mean MSLL apart: see the regression guide), else ``"criterion"``.

    Raises
    ------
    ValueError
        For a rule the engine cannot serve, naming the alternatives.
    """
    if selection == "auto":
        if forecasts and is_series:
            return "forecast"
        return "stacking" if has_loo else "criterion"
    if selection not in SELECTIONS:
        raise ValueError(f"Unknown selection {selection!r}; use 'auto' or one of {', '.join(SELECTIONS)}.")
    if selection == "forecast" and not forecasts:
        others = "'criterion', 'loo' or 'stacking'" if has_loo else "'criterion'"
        raise ValueError(
            f"selection='forecast' needs one input column (a series) and exact Gaussian regression; use {others} "
            "(or 'auto')."
        )
    if selection in ("loo", "stacking") and not has_loo:
        raise ValueError(
            f"selection={selection!r} needs leave-one-out predictive densities, which the sparse approximation does "
            "not have; use selection='criterion' (or 'auto'), or approximation='exact'."
        )
    return selection


def _search_best_only(exploration: Exploration) -> Finalists:
    """The search's best as the only finalist, or a baseline fitted before the search where its criterion is
    better (averaging may still use the records fitted on its rows)."""
    result = exploration.result
    comparable = [r for r in result.records if r.status == OK and np.isfinite(r.criterion)]
    kept = _first_best([result.best] + exploration.baselines_first, lambda r: r.criterion)
    return Finalists([kept], comparable, exploration.rows)


def _clear_of_the_baselines(scored, densities, margin_se, simplest=()):
    """(``scored`` without the search's structures that do not clearly beat the best baseline, those left out).

    Clearly: the sum of the pointwise leave-one-out log density gains over
    the best baseline exceeds ``margin_se`` standard errors of that sum.
    Without a baseline among ``scored`` every record stays, and so do the
    ``simplest`` structures (a classifier's constant model, simpler than any
    baseline: the rule guards against composite structures that fit noise).
    """
    baselines = [r for r in scored if r.baseline]
    if not baselines:
        return scored, []
    best = densities[id(max(baselines, key=lambda r: r.predictive_score))]
    kept, held_back = [], []
    for record in scored:
        gain = densities[id(record)] - best
        clear = gain.sum() > margin_se * math.sqrt(gain.size) * (gain.std(ddof=1) if gain.size > 1 else 0.0)
        (kept if record.baseline or clear or record.structure in simplest else held_back).append(record)
    return kept, held_back


def _evaluation_cost(records: Sequence[CandidateRecord]) -> tuple[int, int]:
    """(likelihood evaluations, their rows summed) of a search's records: every fit of every stage is charged
    to a record (polishes and forecast refits to the finalist they refit)."""
    return sum(r.n_evaluations for r in records), sum(r.evaluated_rows for r in records)


def loo_optimism(records: Sequence[CandidateRecord], n_rows: int,
                 flat_on: DataSummary | None = None) -> np.ndarray:
    """Per-row optimism of each record's leave-one-out log densities at hyperparameters fitted on the same
    rows: ``LOO_OPTIMISM_PER_HYPERPARAMETER`` nats per hyperparameter, spread over the ``n_rows`` rows; with
    ``flat_on``, the summary of those rows, not counting the lengthscales flat on them (``flat_lengthscales``)."""
    def counted(record):
        flat = 0 if flat_on is None else flat_lengthscales(record.structure, flat_on)
        return max(0, (record.n_hyperparameters or 0) - flat)

    return np.array([LOO_OPTIMISM_PER_HYPERPARAMETER * counted(r) / n_rows for r in records])


def flat_lengthscales(structure: Expr, summary: DataSummary) -> int:
    """How many of ``structure``'s fitted lengthscales exceed ``FLAT_LENGTHSCALE_SPANS`` times the span of their
    columns (the widest, for a kernel on several columns): those its kernel is flat along."""
    spans = np.asarray(summary.maximum, dtype=float) - np.asarray(summary.minimum, dtype=float)
    count = 0
    for leaf in structure.leaves:
        lengthscale = leaf.params.get("lengthscale")
        if lengthscale is None or not leaf.columns or leaf.kind.periodic:
            continue
        lengthscale = np.atleast_1d(np.asarray(lengthscale, dtype=float))
        columns = spans[list(leaf.columns)]
        # one lengthscale shared by the columns, or (a kind registered so) one per column; the widest span, not
        # DataSummary.range's Euclidean norm of the spans: the rule was measured so
        reach = columns.max() if lengthscale.size == 1 else columns
        count += int(np.sum(lengthscale > FLAT_LENGTHSCALE_SPANS * reach))
    return count


def _first_best(records, score):
    """The record with the highest score (the first of equals)."""
    best = records[0]
    for record in records[1:]:
        if score(record) > score(best):
            best = record
    return best


def _averaged(selected, pool, k, score):
    """``selected`` and the ``k - 1`` best other structures of ``pool`` by ``score``, weighted by
    exp(score − selected's score). A structure fitted twice (by the search and again as a baseline) counts once,
    by its better fit: twice, it had doubled its weight and pushed out the next structure."""
    chosen = [selected]
    if k is not None and k > 1:
        for record in sorted(pool, key=lambda r: -score(r)):
            if len(chosen) == k or score(record) - score(selected) <= math.log(MIN_AVERAGING_WEIGHT):
                break
            if all(record.structure != other.structure for other in chosen):
                chosen.append(record)
    scores = np.array([score(r) for r in chosen], dtype=float)
    weights = np.exp(scores - scores.max())
    return chosen, weights / weights.sum()


def _level_bests(records: Sequence[CandidateRecord]) -> list[CandidateRecord]:
    """The best usable record of every depth of a search's ``records``."""
    bests = {}
    for record in records:
        if record.status == OK and np.isfinite(record.criterion) and record.depth is not None:
            if record.depth not in bests or record.criterion > bests[record.depth].criterion:
                bests[record.depth] = record
    return [bests[depth] for depth in sorted(bests)]


def _finalists_note(outcome: PipelineResult, selection: str, names: Sequence[str] | None = None) -> str:
    """One progress line: the finalists (in column names), their scores, and what was selected."""
    weights = {id(r): w for r, w in zip(outcome.selected, outcome.weights)}
    parts = []
    for record in outcome.finalists:
        text = f"{structure_label(record.structure, names)}  criterion={record.criterion:.3f}"
        if record.predictive_score is not None:
            text += f" {outcome.held_out_kind}={record.predictive_score:.3f}"
        if id(record) in weights and len(outcome.selected) > 1:
            text += f" weight={weights[id(record)]:.3f}"
        parts.append(text)
    return f"finalists (selected by {selection}: {structure_label(outcome.best.structure, names)}): " + "; ".join(parts)


def cross_validation_folds(n_rows: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) rows of ``CROSS_VALIDATION_FOLDS`` shuffled folds of ``n_rows`` rows (fewer with fewer rows):
    every row is a test row once."""
    order = np.random.default_rng(seed).permutation(n_rows)
    tests = np.array_split(order, min(CROSS_VALIDATION_FOLDS, n_rows))
    return [(np.sort(np.setdiff1d(order, test)), np.sort(test)) for test in tests]


def stacking_weights(log_densities: np.ndarray, tol: float = 1e-10, max_iter: int = 10_000) -> np.ndarray:
    """Weights on the simplex maximising Σ_i log Σ_k w_k exp(log_densities[i, k]).

    The log score of a mixture is concave in its weights; EM for mixture
    weights with fixed components climbs it monotonically to its maximum.
    Each row's densities are divided by its largest (no row underflows), which
    leaves the responsibilities, and so every EM step, unchanged: a step is
    then one matrix-vector product, not an exponential of every entry. (EM
    converges slowly where a weight tends to zero: thousands of steps.)
    """
    log_densities = np.asarray(log_densities, dtype=float)
    n_rows, n_models = log_densities.shape
    densities = np.exp(log_densities - log_densities.max(axis=1, keepdims=True))
    weights = np.full(n_models, 1.0 / n_models)
    for _ in range(max_iter):
        # responsibilities w_k p_ik / Σ_j w_j p_ij, averaged over the rows
        updated = weights * (densities.T @ (1.0 / (densities @ weights))) / n_rows
        if np.max(np.abs(updated - weights)) < tol:
            return updated
        weights = updated
    return weights


def _polished(fitter: CandidateFitter, record: CandidateRecord, X: np.ndarray, y: np.ndarray,
              seed: int) -> CandidateRecord:
    """The record's structure re-optimised on all rows from its optimum; a copy of the record if that is not
    better. Either way its likelihood evaluations, rows and seconds include the polish's.

    A subset of a few hundred rows ranks structures well but leaves their
    hyperparameters short of the full data's optimum (on the 449-row
    Wisconsin breast-cancer data, 404 training rows per fold, an ARD model
    optimised on 300 of them made 6.5 % test error over 10 folds, on all of
    them 4.7 %). The search's bookkeeping (depth, parent, seed) stays that
    of the record.
    """
    refit = fitter(record.structure, X, y, seed, warm_state=record.warm_state)
    polished = dataclasses.replace(record)
    _charge(polished, refit)
    if not refit.ok or not refit.log_marginal_likelihood >= record.log_marginal_likelihood:
        return polished
    return dataclasses.replace(polished, **{key: getattr(refit, key) for key in (
        "structure", "theta", "warm_state", "latent_start", "noise_variance", "log_marginal_likelihood", "criterion",
        "diagnostics")})


def _scored(records: Sequence[CandidateRecord],
            outcomes: Sequence[tuple[np.ndarray | None, Sequence[CandidateRecord]]]) -> dict[int, np.ndarray]:
    """{id(record): its held-out log densities} for the records whose (densities, refits) outcome has finite
    ones, which become their ``predictive_score`` (the sum); every refit is charged to its record."""
    scored = {}
    for record, (density, refits) in zip(records, outcomes):
        for refit in refits:
            _charge(record, refit)
        if density is not None and np.all(np.isfinite(density)):
            record.predictive_score = float(np.sum(density))
            scored[id(record)] = density
    return scored


def _charge(record: CandidateRecord, fit: CandidateRecord) -> None:
    """Add the likelihood evaluations, their rows and the seconds of ``fit`` (a further fit of ``record``'s
    structure that has no record of its own) to ``record``'s."""
    record.n_evaluations += fit.n_evaluations
    record.evaluated_rows += fit.evaluated_rows
    record.fit_time += fit.fit_time


def _take_costs(record: CandidateRecord, polished: CandidateRecord) -> None:
    """Give ``record`` the costs of its polished copy (its own and the polish's)."""
    record.n_evaluations, record.evaluated_rows, record.fit_time = (polished.n_evaluations, polished.evaluated_rows,
                                                                    polished.fit_time)


def fit_cost(structure: Expr, polish: bool = False) -> float:
    """The relative cost of fitting ``structure`` on all rows, to send the costliest fits first.

    An evaluation costs about one kernel matrix per base kernel, and L-BFGS
    needs about as many evaluations as there are hyperparameters; a full-effort
    fit optimises several starts (``FULL_EFFORT_COST``), a polish one. On
    breast_cancer (512 x 30) the additive baseline (60 hyperparameters) took
    15 s, the ARD baseline (31) 7 s and a polish of a finalist 0.6-2 s.
    """
    return structure.n_base_kernels * structure.n_hyperparameters * (1.0 if polish else FULL_EFFORT_COST)


def _as_finalist(refitted: CandidateRecord, record: CandidateRecord, n_rows: int) -> CandidateRecord:
    """A finalist's refit keeps the search's bookkeeping of its record and says on how many rows it was fitted."""
    refitted.depth, refitted.parent, refitted.baseline = record.depth, record.parent, record.baseline
    note = f"finalist refitted on {n_rows} rows"
    refitted.message = f"{note}: {refitted.message}" if refitted.message else note
    return refitted


def explores_on_sample(model_fitter: ModelFitter, criterion: SelectionCriterion) -> bool:
    """Whether the explore stage searches a sample of ``EXPLORE_ROWS`` rows rather than all of them.

    Only for large data whose final model conditions on every row (``model_fitter.explores_samples``), and a
    criterion computed from the evidence: one that reads a model scores it on the estimator's data, all rows.
    """
    return model_fitter.explores_samples and criterion.evidence_only and model_fitter.X.shape[0] > EXPLORE_ROWS


def table_full_effort_on_subset(fitter: CandidateFitter, n_rows: int, explore_effort: str) -> CandidateFitter | None:
    """:func:`full_effort_on_subset` for a search with the "explore" effort (a table), else None: a series keeps
    its rows (a random subset thins its sampling, which can hide a cycle near the Nyquist period)."""
    return full_effort_on_subset(fitter, n_rows) if explore_effort == EXPLORE_EFFORT else None


def explore_effort_for(n_features: int) -> str:
    """How hard the explore stage of a search fits candidates on data with ``n_features`` columns (see EXPLORE_EFFORT)."""
    return EXPLORE_EFFORT if n_features >= 2 else ONE_COLUMN_EXPLORE_EFFORT


def distinct_best(records: Sequence[CandidateRecord], k: int) -> list[CandidateRecord]:
    """The ``k`` best usable records with distinct structures, best first."""
    ranked = sorted((r for r in records if r.status == OK and np.isfinite(r.criterion)), key=lambda r: -r.criterion)
    chosen, seen = [], set()
    for record in ranked:
        if record.structure not in seen:
            seen.add(record.structure)
            chosen.append(record)
        if len(chosen) == k:
            break
    return chosen


def halving_sizes(first: int, last: int, factor: int | None = None) -> list[int]:
    """Rows of the rungs after a search on ``first`` rows: ``factor`` times more per rung, up to ``last``."""
    factor = HALVING_FACTOR if factor is None else factor
    sizes = [first]
    while sizes[-1] * factor < last:
        sizes.append(sizes[-1] * factor)
    return sizes[1:] + [last]


def refit_finalists(
    records: Sequence[CandidateRecord],
    rungs: Sequence[tuple[np.ndarray, Callable[[CandidateRecord, np.ndarray], CandidateRecord]]],
    first_keep: int,
    *,
    n_jobs: int | None = None,
    progress: ProgressCallback | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[list[CandidateRecord]]:
    """Successive halving of a search's best structures over growing sets of rows.

    The ``first_keep`` best distinct structures of ``records`` (a search on a
    subset of the rows) are refitted on the rows of the first rung, starting
    from their fitted values; the better half of them on the next rung's
    rows, and so on -- so that a search on large data costs one search on a
    subset plus a few fits on more rows. ``rungs`` are ``(rows, fit)`` pairs,
    where ``fit(record, rows)`` returns the refitted record (criteria on the
    same rows are comparable; across rungs they are not). ``stop(n_rows,
    n_refits)``, when given, is asked before each rung with its rows and
    number of refits: True ends the halving there.

    Returns
    -------
    list of lists of CandidateRecord
        The refitted records of each rung, best first (fewer rounds than
        rungs when every refit of a rung failed); the best of the last rung
        is the chosen model.
    """
    current = distinct_best(records, first_keep)
    rounds = []
    for i, (rows, fit) in enumerate(rungs):
        if stop is not None and stop(len(rows), len(current)):
            break
        refits = Parallel(n_jobs=n_jobs, prefer="processes")(delayed(fit)(record, rows) for record in current)
        refits = sorted(refits, key=lambda r: -r.criterion if r.status == OK else np.inf)
        rounds.append(refits)
        if progress is not None:
            best = refits[0] if refits and refits[0].status == OK else None
            text = "none" if best is None else f"{best.structure}  criterion={best.criterion:.3f}"
            progress(f"finalists on {len(rows)} rows: best {text} ({len(refits)} refitted)")
        usable = [r for r in refits if r.status == OK]
        if not usable:
            break
        keep = len(usable) if i == len(rungs) - 1 else max(1, len(usable) // 2)
        current = usable[:keep]
    return rounds
