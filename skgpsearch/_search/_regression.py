"""Fitting GP regression models for one training set: normalisation, the engine, candidate fitters, models.

:class:`RegressionModelFitter` owns every engine decision of regression:
the exact GP, the sparse variational GP above ``SPARSE_THRESHOLD`` rows
(``approximation="auto"``), or Student-t noise by the Laplace engine
(``likelihood="student_t"``). The estimator gives it its parameters
(:class:`RegressionOptions`) and the data; the search pipeline gets its
candidate fitters from it, and the estimator gets the fitted models
(:class:`~skgpsearch._search._models.RegressionModel`) of the selected records.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from .._engine._exact import GPPosterior
from .._engine._laplace import LaplacePosterior
from .._engine._likelihoods import OUTLIER_CLIP, StudentT
from .._engine._linalg import NumericalError
from .._engine._sparse import SparsePosterior, choose_inducing_inputs
from ..criteria import LogMarginalLikelihood, SelectionCriterion
from ..grammar import Expr, Grammar
from ..kernels import DataSummary, looks_like_time_index, to_kernel
from . import _pipeline
from ._candidate_fitter import EXPLORE_THEN_POLISH, SCREENED_FROM_ROWS, CandidateFitter, with_effort
from ._diagnostics import MAD_TO_SD, _spread_rows, white_noise_term
from ._exact_fitter import RegressionCandidateFitter
from ._laplace_fitter import LaplaceCandidateFitter
from ._models import RegressionModel
from ._pipeline import PipelineResult
from ._records import CandidateRecord, single_threaded_blas
from ._sparse_fitter import SparseCandidateFitter
from ._warping_decision import REGRESSION_WARP_DECISION_ROWS, WarpComparison, warping_evidence_gain_of

__all__ = ["CROSS_VALIDATION_ROWS", "NOISE_BOUNDS", "SPARSE_THRESHOLD", "RegressionModelFitter", "RegressionOptions",
           "changes_within_latest", "forecast_split", "regression_warping_evidence_gain"]

#: Above this many rows, approximation="auto" uses the sparse variational GP.
SPARSE_THRESHOLD = 3000
#: Bounds of the noise variance relative to the variance of the (normalised) targets.
NOISE_BOUNDS = (1e-6, 10.0)
#: Up to this many rows, the select stage judges the finalists by cross-validation with refits (each refitted
#: on the other folds' rows, see ``cross_validated_log_density``) instead of leave-one-out
#: densities at hyperparameters fitted on every row. With a few rows per hyperparameter those flatter a model
#: that fits the training rows too closely: on statsmodels' scotland (32 x 7, 5 folds) the additive baseline,
#: its noise at the lower bound, had leave-one-out densities 25 nats above one ARD kernel's, took the whole
#: stacking weight in two folds and predicted their test rows with errors up to 20 standard deviations.
#: benchmarks/small_tables.py measures the rule on tables of 13-102 rows. The bound was 100 rows until the
#: refits started afresh (below): polished from the finalists' values, cross-validating up to 250 rows had
#: changed nothing beyond noise at 2-4x a fold's time (benchmarks/cv_stacking.py). Refitted afresh, up to 250
#: training rows (SMSE / MSLL, leave-one-out stacking -> cross-validated; benchmarks/tabular.py's 10 folds,
#: benchmarks/unseen.py's 5): mcycle (120 rows) 0.277 / -0.838 -> 0.276 / -1.057 (one ARD kernel 0.277 /
#: -0.720), cpus (188) 0.165 / -1.001 -> 0.162 / -1.005, engel (188) 0.234 / -1.256 -> 0.217 / -1.266,
#: macrodata (162) 0.000595 / -3.748 -> 0.000573 / -3.762, grunfeld (176) 0.0209 / -1.968 -> 0.0213 / -1.973,
#: benchmarks/one_covariate.py's synthetic covariate (200) 0.09325 / -1.332 -> 0.09328 / -1.333,
#: but star98 (242 rows x 20 columns) 0.211 / -0.800 -> 0.226 / -0.787, behind one ARD kernel's 0.216 / -0.799:
#: refits on four fifths of 242 rows judge 22 hyperparameters too harshly. Hence 200, below star98's 242;
#: a fold of those tables took 1.2-2x the time (at most 17 s).
#: The refits of that cross-validation start afresh, not from the finalist's values: those were fitted on the
#: rows each refit holds out, and a period, a change point or a short lengthscale placed on all the rows kept
#: "predicting" them from a polish on four fifths. On R's mammals (62 x 1, benchmarks/unseen.py, fold 0) a
#: periodic term of period 0.12 under a change point scored 16 nats above SE in cross-validation, took 90 % of
#: the weight and predicted the test rows with SMSE 0.22 against one ARD kernel's 0.18; refitted afresh it
#: scored below LIN, which the select stage kept (SMSE 0.12). Measured (SMSE / MSLL, 5 folds, polished from the
#: values -> refitted afresh): benchmarks/unseen.py's 11 tables of at most 102 rows, better on 9 (mammals
#: 0.113 / -1.049 -> 0.094 / -1.241, uscrime 0.873 / -0.233 -> 0.625 / -0.383, swiss 0.592 / -0.454 -> 0.519 /
#: -0.489, mtcars 0.382 / -0.467 -> 0.368 / -0.689), slightly worse on prestige (0.216 -> 0.222) and leinhardt
#: (0.686 -> 0.692); benchmarks/small_tables.py in benchmarks/results/small_tables_cold_refits.txt. A fold
#: of these tables took 1-4 s instead of 0.3-2 s.
CROSS_VALIDATION_ROWS = 200


@dataclass(frozen=True)
class RegressionOptions:
    """The regressor's parameters that decide how its models are fitted (see ``CompositionalGPRegressor``)."""

    likelihood: str = "gaussian"
    degrees_of_freedom: float | None = 4.0
    approximation: str = "auto"
    n_inducing: int = 256
    objective: str = "lml"
    n_restarts: int = 0
    max_optimize_samples: int | None = None
    normalize_y: bool = True
    baseline_models: bool = True
    #: Cycles a periodic kernel must show within the column's range (see ``DataSummary.min_cycles``).
    min_periodic_cycles: float = 1.0


def approximation_for(approximation: str, n_samples: int) -> str:
    """``"exact"`` or ``"sparse"``: the approximation the option ``approximation`` means for ``n_samples`` rows."""
    if approximation == "auto":
        return "sparse" if n_samples > SPARSE_THRESHOLD else "exact"
    return approximation


class RegressionModelFitter:
    """Fits GP regression models on one training set (``X``, ``y`` in original units).

    It normalises the targets (mean and standard deviation, or median and
    scaled MAD with Student-t noise), summarises the data for the kernels'
    defaults and bounds, chooses the engine, picks the inducing inputs of the
    sparse approximation, and builds the candidate fitters of the pipeline's
    stages and the fitted models of records. A :class:`~skgpsearch._search._pipeline.ModelFitter`.

    Parameters
    ----------
    options : RegressionOptions
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    criterion : SelectionCriterion
    random_state : int, RandomState instance or None
        Seeds the choice of the inducing inputs.
    make_estimator : callable or None
        Turns a candidate's :class:`RegressionModel` into what a criterion
        that reads a model is called with (a fitted estimator).

    Raises
    ------
    ValueError
        When the criterion or the objective needs the exact Gaussian model
        and the options ask for Student-t noise or the sparse approximation.
    """

    extra_initial: tuple[Expr, ...] = ()
    explore_fits_are_final = True
    max_rows = None

    @property
    def baseline_margin_se(self) -> float | None:
        """Hold back the search's structures that do not clear the best baseline, on small tables only.

        On more rows, the exact leave-one-out densities of Gaussian regression needed no margin: stacking every
        finalist predicted as well or better than holding back those within a standard error of the best
        baseline (benchmarks/tabular.py, 10 folds: MSLL on cpus -0.960 against -0.947, auto_mpg -1.100 against
        -1.077; diabetes the same). On the cross-validated small tables, the structures the search chose on
        all rows won their folds by chance often enough that the margin paid (benchmarks/small_tables.py,
        tuning set: geometric-mean SMSE ratio to one ARD kernel 0.897 -> 0.843, to RandomForest 0.869 ->
        0.817; the validation set's are in the regression guide, "Small tables").
        """
        return _pipeline.COMPOSITE_MARGIN_SE if self.cross_validates else None
    #: Stacking discounts the finalists' leave-one-out densities by their hyperparameters' optimism
    #: (_pipeline.LOO_OPTIMISM_PER_HYPERPARAMETER, where it is measured).
    discounts_loo_optimism = True
    #: ... but for the lengthscales flat on the data (_pipeline.FLAT_LENGTHSCALE_SPANS, where it is measured).
    discount_skips_flat_lengthscales = True
    @property
    def hopeless_finalist_gap(self) -> float | None:
        """Every depth's best is a finalist: stacking weighs in far worse structures that complement the best
        (see _pipeline.HOPELESS_FINALIST_GAP). Not on data whose full-effort fits run on a subset of the rows
        (:func:`~skgpsearch._search._candidate_fitter.full_effort_on_subset`): there each finalist costs a
        polish on all of them, and on 3000 rows of R's diamonds (6 columns) the polishes of the four depth bests
        40 to 180 nats behind the best (every one weighted 0) took 60 of the finalists stage's 200 s."""
        if _pipeline.table_full_effort_on_subset(self._fitter, self.X.shape[0], self.explore_effort) is None:
            return None
        return _pipeline.HOPELESS_FINALIST_GAP

    @property
    def explore_effort(self) -> str:
        if self.engine == "sparse" and not _pipeline.explores_on_sample(self, self.criterion):
            # a search of the sparse bound on all rows: its fits already screen every start on an exact subset
            return "full"
        # (a sparse model's search on a sample explores an exact GP, on subsets: _candidate_fitter.with_effort)
        return _pipeline.explore_effort_for(self.X.shape[1])

    def __init__(self, options: RegressionOptions, X: np.ndarray, y: np.ndarray, criterion: SelectionCriterion, *,
                 random_state: Any = None, make_estimator: Callable[[RegressionModel], Any] | None = None) -> None:
        self.options = options
        self.X = X
        self.criterion = criterion
        self.approximation = approximation_for(options.approximation, X.shape[0])
        robust = options.likelihood == "student_t"
        self.engine = "student_t" if robust else self.approximation
        _check_options(options, criterion, robust, self.approximation == "sparse")
        self.y_mean, self.y_std = 0.0, 1.0
        # Student-t noise's scale and latent mean have bounds in standard units: it always standardises (fit warns
        # when normalize_y=False; on raw targets around 500 both sat at their bound of 10)
        if options.normalize_y or robust:
            self.y_mean, self.y_std = _location_and_scale(y, robust=robust)
        self.y = (y - self.y_mean) / self.y_std
        # Student-t noise: the scale of the data without its gross outliers sets the kernels' defaults
        self.summary = DataSummary.from_data(X, np.clip(self.y, -OUTLIER_CLIP, OUTLIER_CLIP) if robust else self.y,
                                             min_cycles=options.min_periodic_cycles)
        if not options.normalize_y and not robust:
            # the GP's prior mean is 0: the kernels carry the targets' offset too, so their amplitudes start at
            # the targets' second moment (the variance about 0). From the centred variance (targets around 5,
            # variance 1) a child's starts sat 25x too low: the search recorded SE + PER 17 nats below the same
            # structure fitted alone, at the wrong period.
            second_moment = float(np.mean(self.y**2))
            if second_moment > 0:
                self.summary = dataclasses.replace(self.summary, target_variance=second_moment)
        self.noise_bounds = _noise_bounds(self.summary)
        self.inducing_inputs = None
        self.baseline_models = options.baseline_models
        self.searching = True
        self._models: dict[int, tuple[CandidateRecord, RegressionModel]] = {}
        common = dict(summary=self.summary, criterion=criterion, n_restarts=options.n_restarts,
                      max_optimize_samples=options.max_optimize_samples, y_std=self.y_std, y_mean=self.y_mean,
                      make_estimator=None if criterion.evidence_only else make_estimator)
        if robust:
            self._fitter = LaplaceCandidateFitter(
                **common, likelihood=StudentT(options.degrees_of_freedom),
                # white-noise latent terms are a legitimate regression model (as with Gaussian noise)
                reject_degenerate=False,
            )
            return
        common.update(noise_bounds=self.noise_bounds, objective=options.objective)
        self._exact = RegressionCandidateFitter(**common)
        self._fitter = self._exact
        if self.approximation == "sparse":
            seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
            self.inducing_inputs = choose_inducing_inputs(X, options.n_inducing, np.random.default_rng(seed))
            self._fitter = SparseCandidateFitter(**common, inducing_inputs=self.inducing_inputs)

    # -- what the pipeline asks (ModelFitter) ----------------------------------------------------
    @property
    def explores_samples(self) -> bool:
        """Large data are explored on a sample when the final model is sparse (it conditions on every row)."""
        return self.engine == "sparse"

    @property
    def candidate_fitter(self) -> CandidateFitter:
        return self._fitter

    def row_order(self, seed: int) -> np.ndarray:
        return np.random.default_rng(seed).permutation(self.X.shape[0])

    def sample_fitter(self, rows: np.ndarray) -> CandidateFitter:
        # the exact GP on the sample, with the sample's summary: its starts and period hints need the spacing
        # of the rows it sees (with the summary of all rows, a 100 000-row series offered the 2000-row search
        # periods below its own spacing, and SE + PER lost to SE + SE). Bounds of all rows contain the sample's.
        return dataclasses.replace(self._exact, summary=DataSummary.from_data(self.X[rows], self.y[rows],
                                                                              min_cycles=self.summary.min_cycles))

    def refit_fitter(self, n_rows: int) -> CandidateFitter:
        """The exact fitter for a sparse model's refits on samples of at most SPARSE_THRESHOLD rows; the model's
        own fitter on every row (a sparse model fitted on all rows maximises its bound, however few they are)."""
        if self.engine == "sparse" and n_rows <= SPARSE_THRESHOLD and n_rows < self.X.shape[0]:
            return self._exact
        return self._fitter

    def baseline_fitter(self) -> CandidateFitter:
        fitter = dataclasses.replace(self._fitter, max_optimize_samples=None)
        if self.engine == "exact" and self.explore_effort == _pipeline.EXPLORE_EFFORT:
            # explore, then converge, as the classifier's: the full start pool of a model with a hyperparameter
            # per column took about twice the evaluations to the same optimum (see EXPLORE_THEN_POLISH). One
            # column's search keeps full effort throughout, its baseline too.
            fitter = dataclasses.replace(fitter, effort=EXPLORE_THEN_POLISH)
        return fitter

    def baseline_structures(self, grammar: Grammar) -> list[Expr]:
        """One ARD kernel and the additive kernel (:meth:`~skgpsearch.grammar.Grammar.standard_structures`);
        on two or more columns one isotropic kernel (:meth:`~skgpsearch.grammar.Grammar.isotropic_structure`) and
        the linear model (:meth:`~skgpsearch.grammar.Grammar.linear_structure`); on a series (``is_series``) the
        random walk with drift (:meth:`~skgpsearch.grammar.Grammar.random_walk_structure`)."""
        if not self.baseline_models or grammar.single_structure:
            return []
        n_features = self.X.shape[1]
        structures = grammar.standard_structures(n_features)
        extra = [grammar.isotropic_structure(n_features), grammar.linear_structure(n_features)]
        if self.is_series:
            extra.append(grammar.random_walk_structure(n_features))
        return structures + [e for e in extra if e is not None]

    #: Its models condition on every training row (see :meth:`model`).
    conditions_on_all_rows = True

    def seconds_on_rows(self, n_rows: int) -> None:
        """Not predicted: an exact search fits on all rows (its time budget judges each level by its fits), and
        the sparse engine's rungs cost O(n m²), a few of its fits on the sample."""
        return None

    @property
    def has_loo(self) -> bool:
        """Whether the engine gives leave-one-out predictive densities (the select stage's "loo" and "stacking")."""
        return self.engine != "sparse"

    @property
    def forecasts(self) -> bool:
        """Whether its finalists can be judged by forecasting a series (the select stage's "forecast").

        One input column and the exact Gaussian engine: refitting every finalist on the earlier rows
        costs a few of its fits.
        """
        return self.X.shape[1] == 1 and self.engine == "exact"

    @property
    def is_series(self) -> bool:
        """Whether the data are a series: one input column that looks like a time index
        (:func:`skgpsearch.kernels.looks_like_time_index`), whose select stage forecasts by default."""
        return self.forecasts and looks_like_time_index(self.X[:, 0])

    def forecast_log_density(self, record: CandidateRecord, fraction: float,
                             seed: int) -> tuple[np.ndarray | None, CandidateRecord]:
        """Log densities of the latest ``fraction`` of the rows (in the input column's order), forecast by
        ``record``'s structure refitted on the earlier rows (None when that refit fails), and the refit's record.

        The refit starts from the record's fitted values and the structured starts, without random
        restarts (a finalist is already at an optimum on all rows), and screens them on runs of the
        earlier rows like the search's candidates (the "screened" effort, whenever the search's was: a
        series of ``SCREENED_FROM_ROWS`` rows or more, even where its earlier rows are fewer): measured on
        the 11 extrapolation series, every series selected a structure with the same forecast as with the
        full effort, and the refits took 2-3x less time; on the first 300 months of Mauna Loa
        (``benchmarks/bench_search.py``), whose earlier 255 rows were refitted with the full effort until
        2026-12-05, the fit took 14.1 s instead of 16.4 s on 2 jobs. Densities are in the target's units.

        A one-start polish from the finalist's own values, which would judge the very model the select
        stage keeps, was measured too (``benchmarks/results/forecast_judge_polish.txt``): 9-15 % fewer
        likelihood evaluations, but mauna's and unemployment's forecasts were worse and none better.
        """
        earlier, later = forecast_split(self.X[:, 0], fraction)
        refitted = self._refit_on(record, earlier, seed)
        with single_threaded_blas():
            return self._held_out_log_density(refitted, earlier, later), refitted

    def earlier_forecast_variance_scale(self, record: CandidateRecord, fraction: float,
                                        seed: int) -> tuple[float, CandidateRecord | None]:
        """The variance factor of :meth:`forecast_variance_scale` from an earlier forecast: the ``fraction`` of
        the rows before the latest ``fraction``, forecast by ``record``'s structure refitted on the rows before
        them (1 when the refit fails), and that refit's record (None when there was none).

        The select stage chose its finalist because it forecast the latest rows best, so its errors there are
        the smallest of several and understate its errors beyond the series: on 20 simulated random walks (96
        months, forecasting 20), whose chosen mean-reverting structures forecast the judged rows well, that
        factor was 1 on 16 and the 95 % bands held 74.5 % of the tests (see the regression guide).
        """
        earlier, _ = forecast_split(self.X[:, 0], fraction)
        first, middle = forecast_split(self.X[earlier, 0], fraction / (1.0 - fraction))
        first, middle = earlier[first], earlier[middle]
        if first.size < 2:
            return 1.0, None
        refitted = self._refit_on(record, first, seed)
        return self._variance_scale(refitted, first, middle), refitted

    def _refit_on(self, record: CandidateRecord, rows: np.ndarray, seed: int) -> CandidateRecord:
        """``record``'s structure refitted on the ``rows`` at the start of the series (see
        :meth:`forecast_log_density` for its starts and effort)."""
        # the effort of a fit on those rows, counted as at least SCREENED_FROM_ROWS where the whole series is
        n_rows = rows.size if self.X.shape[0] < SCREENED_FROM_ROWS else max(rows.size, SCREENED_FROM_ROWS)
        fitter = with_effort(dataclasses.replace(self._exact, n_restarts=0), "screened", n_rows)
        with single_threaded_blas():
            return fitter(record.structure, self.X[rows], self.y[rows], seed)

    @property
    def cross_validates(self) -> bool:
        """Whether the select stage judges held-out prediction by cross-validation with refits
        (:meth:`cross_validated_log_density`): exact Gaussian regression on at most ``CROSS_VALIDATION_ROWS``
        rows."""
        return self.engine == "exact" and self.X.shape[0] <= CROSS_VALIDATION_ROWS

    def cross_validated_log_density(self, record: CandidateRecord, folds: list[tuple[np.ndarray, np.ndarray]],
                                    seed: int) -> tuple[np.ndarray | None, list[CandidateRecord]]:
        """Log density of every row predicted by ``record``'s structure refitted on the rows of the other folds
        (None when a refit fails), and the refits' records.

        ``folds`` holds (train, test) rows that cover every row once as a test row. Each refit forgets the
        record's fitted values, which were fitted on the held-out rows too, and starts from the structure's own
        start pool (the "explore+polish" effort: its best starts, a few iterations each, the best then run to
        convergence), as measured under ``CROSS_VALIDATION_ROWS``. Densities are of a new observation (the noise
        included), in the target's units, as the leave-one-out densities.
        """
        fitter = dataclasses.replace(self._exact, effort=EXPLORE_THEN_POLISH)
        structure = record.structure.without_values()
        density = np.empty(self.y.shape[0])
        refits = []
        with single_threaded_blas():
            for train, test in folds:
                refitted = fitter(structure, self.X[train], self.y[train], seed)
                refits.append(refitted)
                held_out = self._held_out_log_density(refitted, train, test)
                if held_out is None:
                    return None, refits
                density[test] = held_out
        return density, refits

    def _held_out_log_density(self, refitted: CandidateRecord, train: np.ndarray,
                              test: np.ndarray) -> np.ndarray | None:
        """Log densities of new observations at the ``test`` rows under ``refitted``, a fit on the ``train`` rows
        (None when the fit or its factor failed), in the target's units as the leave-one-out densities."""
        errors = self._standardised_errors(refitted, train, test)
        if errors is None:
            return None
        z, variance = errors
        return -0.5 * (np.log(2 * np.pi * variance) + z**2) - np.log(self.y_std)

    def _standardised_errors(self, refitted: CandidateRecord, train: np.ndarray,
                             test: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(errors of the ``test`` rows in predictive standard deviations of a new observation, those variances on
        the fitting scale) under ``refitted``, a fit on the ``train`` rows; None when the fit or its factor failed."""
        if not refitted.ok:
            return None
        kernel = to_kernel(refitted.structure, summary=self.summary)
        try:
            posterior = GPPosterior(kernel, refitted.noise_variance, self.X[train], self.y[train])
        except NumericalError:
            return None
        mean, std = posterior.predict(self.X[test], return_std=True)
        variance = std**2 + refitted.noise_variance
        return (self.y[test] - mean) / np.sqrt(variance), variance

    def forecast_variance_scale(self, refit: CandidateRecord, fraction: float) -> float:
        """What the predictive variance of a forecast beyond the series is multiplied by: the mean squared error,
        in predictive standard deviations, of the latest ``fraction`` of the rows forecast by ``refit`` (the
        selected structure refitted on the earlier rows, as the select stage judged it), or 1 when that is less.

        A structure chosen among many, with hyperparameters at a point estimate, forecasts with too narrow a
        spread where the series moves in ways the training rows did not show: on series the defaults never saw
        (``benchmarks/unseen_series.py``), 0 of WWWusage's last 10 minutes and half of JohnsonJohnson's last
        8 quarters fell inside the 95 % interval. The factor is the maximum-likelihood scale of the forecast's
        variance on the latest rows the data have (the variance of a Gaussian with known mean); it only ever
        widens, since a spread that was wide enough there is left as it is. Measured in the regression guide.
        """
        earlier, later = forecast_split(self.X[:, 0], fraction)
        return self._variance_scale(refit, earlier, later)

    def _variance_scale(self, refitted: CandidateRecord, train: np.ndarray, test: np.ndarray) -> float:
        """The mean squared standardised error of the ``test`` rows forecast by ``refitted`` (a fit on the
        ``train`` rows), at least 1; 1 when the fit or its factor failed."""
        with single_threaded_blas():
            errors = self._standardised_errors(refitted, train, test)
        if errors is None or not np.all(np.isfinite(errors[0])):
            return 1.0
        return max(1.0, float(np.mean(errors[0] ** 2)))

    def interpolates_noise(self, record: CandidateRecord) -> bool:
        """Whether a term of ``record``'s structure, other than white noise by design (``WN``, ``LIN * WN``), acts
        as white noise on the training inputs (:func:`~skgpsearch._search._diagnostics.white_noise_term`): a
        signal term that correlates no two rows interpolates the noise, and a forecast carries whatever
        correlations it keeps at longer lags (a product of two short-lengthscale cycles that realign)."""
        return white_noise_term(record.structure, _spread_rows(self.X), self.summary, by_design=False) is not None

    def changes_in_forecast_rows(self, record: CandidateRecord, fraction: float) -> bool:
        """Whether ``record``'s structure changes within the latest ``fraction`` of the rows (see
        :func:`changes_within_latest`): a forecast of those rows from the earlier ones cannot judge it."""
        return changes_within_latest(record.structure, self.X[:, 0], fraction)

    # -- fitted models ------------------------------------------------------------------------------
    def model(self, record: CandidateRecord, rows: np.ndarray | None = None) -> RegressionModel:
        """The fitted model of a record, conditioned on every training row (the select stage's and the estimator's).

        A regression model conditions on all rows whatever rows its record
        was fitted on: the sparse engine makes that affordable on large data.
        """
        key = id(record)
        if key not in self._models:
            self._models[key] = (record, self._build_model(record))
        return self._models[key][1]

    def _build_model(self, record: CandidateRecord) -> RegressionModel:
        X, y = self.X, self.y
        kernel = to_kernel(record.structure, summary=self.summary)
        with single_threaded_blas():
            if self.engine == "sparse":
                posterior = SparsePosterior(kernel, record.noise_variance, X, y, self.inducing_inputs)
            elif self.engine == "exact":
                posterior = GPPosterior(kernel, record.noise_variance, X, y)
            else:
                p = kernel.n_dims
                theta = record.theta
                # the Newton start of the mode the criterion scored (Student-t posteriors can have several)
                posterior = LaplacePosterior(kernel, float(theta[p]), self._fitter.likelihood, theta[p + 1 :], X, y,
                                             a0=record.latent_start)
        log_marginal_likelihood = record.log_marginal_likelihood
        if self.engine != "student_t":
            # the model's own evidence (a sparse model's bound) on every row it conditions on: a record fitted
            # on a sample (a time budget that stopped the finalists' refits) or by the exact engine has another
            log_marginal_likelihood = posterior.log_marginal_likelihood - y.shape[0] * math.log(self.y_std)
        return RegressionModel(record.structure, kernel, posterior, X, y, y_mean=self.y_mean, y_std=self.y_std,
                               summary=self.summary, noise_bounds=self.noise_bounds,
                               inducing_inputs=self.inducing_inputs, log_marginal_likelihood=log_marginal_likelihood,
                               n_hyperparameters=record.n_hyperparameters)

    def models(self, outcome: PipelineResult) -> list[RegressionModel]:
        """The fitted models of a search's selected records (the selected one first, then the averaged ones)."""
        return [self.model(record) for record in outcome.selected]

    def refit(self, structure: Expr, seed: int = 0) -> RegressionModel:
        """The model of ``structure`` with its hyperparameters fitted on this training set (no search).

        Raises
        ------
        NumericalError
            When the structure cannot be fitted.
        """
        record = self._fitter(structure, self.X, self.y, seed)
        if not record.ok:
            raise NumericalError(f"Refitting {structure} failed: {record.message}")
        return self.model(record)


def _check_options(options, criterion, robust, sparse):
    if robust or sparse:
        setting = "likelihood='student_t'" if robust else "the sparse approximation"
        if not criterion.scores_approximate_models:
            raise ValueError(
                f"The criterion {criterion.display_name!r} needs the exact Gaussian evidence; with "
                f"{setting} use 'bic', 'aic', 'bic_light', 'lml' or a callable."
            )
        if options.objective != "lml":
            raise ValueError(f"objective={options.objective!r} needs the exact Gaussian likelihood; "
                             f"with {setting} use objective='lml'.")
    if robust and sparse:
        raise ValueError("likelihood='student_t' has no sparse approximation; use approximation='exact' "
                         "(with max_optimize_samples to optimise on a subset).")


def regression_warping_evidence_gain(X: np.ndarray, X_warped: np.ndarray, y: np.ndarray, seed: int,
                                     n_jobs: int | None = None) -> float:
    """Log evidence of one ARD kernel with Gaussian noise on ``X_warped`` minus that on ``X``.

    Both GPs (an SE over all columns, one lengthscale each, plus noise) are
    fitted with the explore effort from one start, on the same random sample
    of at most ``REGRESSION_WARP_DECISION_ROWS`` rows and the standardised targets; the
    two fits run in parallel over ``n_jobs``. The Gaussian model decides for
    Student-t noise too: the warp is a question about the inputs.
    """
    rows = np.sort(np.random.default_rng(seed).permutation(X.shape[0])[:REGRESSION_WARP_DECISION_ROWS])
    centre, scale = _location_and_scale(y[rows])
    ys = (y[rows] - centre) / scale
    fitters = []
    for inputs in (X, X_warped):
        summary = DataSummary.from_data(inputs[rows], ys)
        fitters.append(RegressionCandidateFitter(
            summary=summary, criterion=LogMarginalLikelihood(), n_restarts=0, effort="explore",
            noise_bounds=_noise_bounds(summary)))
    return warping_evidence_gain_of([WarpComparison(*fitters, X[rows], X_warped[rows], ys, seed)], n_jobs)


def forecast_split(x: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(the earlier rows, the latest ``fraction`` of the rows) of a series with time index ``x``.

    Rows that share a time stay on one side: the held-out part starts at the
    first time of its share (so it may hold a few more rows), unless that
    would leave no earlier row.
    """
    order = np.argsort(x, kind="stable")
    n_held = max(1, int(round(fraction * len(order))))
    start = x[order[-n_held]]
    n_held_tied = int(np.sum(x >= start))
    if n_held_tied < len(order):
        n_held = n_held_tied
    return order[:-n_held], order[-n_held:]


def changes_within_latest(structure: Expr, x: np.ndarray, fraction: float) -> bool:
    """Whether a fitted structure changes within the latest ``fraction`` of the rows of a series.

    True when a changepoint's location, or a change window's start or end,
    lies after the last earlier row and no later than the last row (time
    index ``x``, the values the structure's changes are located in).
    Refitted on the earlier rows, the structure has no change there to place.
    """
    earlier, later = forecast_split(x, fraction)
    after, last = x[earlier].max(), x[later].max()
    for change in structure.changes:
        location = change.params.get("location")
        if location is None:
            continue
        half = 0.5 * (change.params.get("duration") or 0.0) if change.operator == "CW" else 0.0
        if any(after < boundary <= last for boundary in (location - half, location + half)):
            return True
    return False


def _noise_bounds(summary: DataSummary) -> tuple[float, float]:
    """``NOISE_BOUNDS`` in the units of the summarised targets' variance."""
    return tuple(b * summary.target_variance for b in NOISE_BOUNDS)


def _location_and_scale(y, robust=False):
    """(centre, scale) that normalise the targets: mean and std, or median and scaled MAD when ``robust``.

    A zero scale (constant targets) becomes 1; a robust scale of zero (more
    than half the targets equal) falls back to the standard deviation.
    """
    if robust:
        centre = float(np.median(y))
        scale = MAD_TO_SD * float(np.median(np.abs(y - centre)))
        if not scale > 0:
            scale = float(np.std(y))
    else:
        centre, scale = float(np.mean(y)), float(np.std(y))
    return centre, scale if scale > 0 else 1.0
