"""Fitting binary GP classifiers (Laplace approximation) for one training set: candidate fitters and models.

:class:`BinaryClassificationModelFitter` is the
:class:`~skgpsearch._search._pipeline.ModelFitter` of one binary problem
(labels in {−1, +1}): the Laplace engine, the stratified row order of
large-data searches, the baselines (ARD, additive and isotropic SE) and the fitted
:class:`~skgpsearch._search._models.BinaryLaplaceModel` of the selected
records. :func:`classification_summary` derives the data summary (with
lengthscale floors) that every binary problem of a classifier shares.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import numpy as np

from .._engine._laplace import LaplacePosterior, binary_mean_bounds
from .._engine._linalg import cholesky_seconds
from .._engine._likelihoods import LIKELIHOODS, Likelihood, get_likelihood
from ..criteria import HyperPrior, LogMarginalLikelihood, SelectionCriterion
from ..grammar import Base, Expr, Grammar
from ..kernels import DataSummary, discrete_columns, to_kernel
from . import _pipeline
from ._candidate_fitter import EXPLORE_THEN_POLISH, CandidateFitter
from ._laplace_fitter import LaplaceCandidateFitter
from ._models import BinaryLaplaceModel
from ._pipeline import PipelineResult
from ._records import CandidateRecord, single_threaded_blas
from ._warping_decision import WARP_DECISION_ROWS, WarpComparison, warping_evidence_gain_of

__all__ = ["BinaryClassificationModelFitter", "classification_likelihood", "classification_summary",
           "classification_warping_evidence_gain", "discrete_feature_mask", "fits_per_depth", "likelihood_names",
           "stratified_order"]


#: ``max_fits_per_depth="auto"``: levels are screened from this many columns on, keeping this many fits. A
#: level has about two children per column of its parent. Measured on benchmarks/tabular.py's 10 folds
#: (n_jobs=2, 2026-11-26): breast_cancer (30 columns) 139 s a fold and 3.34 % error unscreened, 91 s and
#: 3.52 % (one test row more of 569) screened at 32; heart (13 columns) 27 s unscreened, 33 s screened at
#: 32 with the same error (the cheap scores cost more than the fits they saved).
SCREEN_FROM_COLUMNS = 20
SCREENED_FITS_PER_DEPTH = 32
#: A Laplace evaluation with its gradient costs about this many Choleskys of its rows (the Newton steps to the
#: mode, the inverse of B, a trace per hyperparameter), and a posterior with its leave-one-out densities about
#: LAPLACE_MODEL_CHOLESKYS. Measured on one core, SE ARD on 6 columns (make_classification): evaluation 20-33,
#: posterior 12, its leave-one-out densities 4.5 Choleskys of the same rows, on 1000, 2000 and 5000 rows
#: (36 s for an evaluation on 5000 rows).
LAPLACE_EVALUATION_CHOLESKYS = 30.0
LAPLACE_MODEL_CHOLESKYS = 17.0


def fits_per_depth(option: int | str | None, n_features: int) -> int | None:
    """The classifier's ``max_fits_per_depth`` on ``n_features`` columns: "auto" screens wide tables only."""
    if option == "auto":
        return SCREENED_FITS_PER_DEPTH if n_features >= SCREEN_FROM_COLUMNS else None
    return option


def likelihood_names() -> tuple[str, ...]:
    """Names of the classification likelihoods (``"probit"``, ``"logistic"``, ``"robust"``)."""
    return tuple(sorted(LIKELIHOODS))


def classification_likelihood(name: str) -> Likelihood:
    """The likelihood object of a name of :func:`likelihood_names`."""
    return get_likelihood(name)


def classification_summary(X: np.ndarray, discrete_features: Any = "auto",
                           discrete_mask: np.ndarray | None = None) -> DataSummary:
    """The data summary of a classifier: no lengthscale below the spacing of a column's values.

    On a continuous column such an SE separates every pair of points and acts
    as white noise, a latent value per training point; on a discretised
    column (``discrete_features``, see the classifier) the floor is the
    smallest gap between distinct values. ``discrete_mask`` overrides the
    option (a sample keeps the discrete columns of all rows).
    """
    mask = discrete_feature_mask(discrete_features, X) if discrete_mask is None else discrete_mask
    return DataSummary.from_data(X, discrete_features=mask, spacing_floor=True)


def discrete_feature_mask(option: Any, X: np.ndarray) -> np.ndarray:
    """The classifier's ``discrete_features`` option as a mask over the columns of ``X`` ("auto": detected)."""
    n_features = X.shape[1]
    if isinstance(option, str):
        return discrete_columns(X)
    if isinstance(option, (bool, np.bool_)):
        return np.full(n_features, bool(option))
    option = np.asarray(option)
    if option.dtype == bool:
        if option.shape != (n_features,):
            raise ValueError(f"discrete_features as a mask needs {n_features} entries, got {option.shape}.")
        return option
    mask = np.zeros(n_features, dtype=bool)
    for c in option.ravel():
        if not (isinstance(c, numbers.Integral) or np.issubdtype(type(c), np.integer)) or not 0 <= c < n_features:
            shown = c.item() if isinstance(c, np.generic) else c  # (7, not np.int64(7))
            raise ValueError(f"discrete_features lists column {shown!r}; columns are 0..{n_features - 1}.")
        mask[int(c)] = True
    return mask


def classification_warping_evidence_gain(X: np.ndarray, X_warped: np.ndarray, labels: list[np.ndarray],
                                         likelihood: Likelihood, discrete_mask: np.ndarray, seed: int,
                                         n_jobs: int | None = None) -> float:
    """Laplace log evidence of one ARD kernel on ``X_warped`` minus that on ``X``, summed over binary problems.

    ``labels`` holds each binary problem's labels in {−1, +1}. Each ARD
    kernel (an SE over all columns, one lengthscale each) is fitted with the
    explore effort from one start on a stratified sample of at most
    ``WARP_DECISION_ROWS`` rows, the same rows for both inputs; the fits run
    in parallel over ``n_jobs`` (see :func:`warping_evidence_gain_of`).
    """
    comparisons = []
    for k, y in enumerate(labels):
        rows = np.sort(stratified_order(y, np.random.default_rng(seed + k))[:WARP_DECISION_ROWS])
        ys = y[rows]
        fitters = [LaplaceCandidateFitter(
            summary=classification_summary(inputs[rows], discrete_mask=discrete_mask), criterion=_EVIDENCE,
            likelihood=likelihood, **_latent_mean_options(likelihood, ys), n_restarts=0, reject_degenerate=False,
            effort="explore") for inputs in (X, X_warped)]
        comparisons.append(WarpComparison(*fitters, X[rows], X_warped[rows], ys, seed + k))
    return warping_evidence_gain_of(comparisons, n_jobs)


_EVIDENCE = LogMarginalLikelihood()


def _latent_mean_options(likelihood: Likelihood, y: np.ndarray) -> dict[str, Any]:
    """A binary problem's constant latent mean for a LaplaceCandidateFitter: its start (the base rate of the
    labels ``y`` in {-1, +1}) and its bounds (the rule of succession, see ``binary_mean_bounds``)."""
    return {"mean_init": likelihood.latent_of_probability(float(np.mean(y > 0))),
            "mean_bounds": binary_mean_bounds(likelihood, y.shape[0])}


def stratified_order(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A permutation of the rows whose every prefix has about the class proportions of ``y``."""
    keys = np.empty(y.shape[0])
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        keys[rows] = (rng.permutation(rows.size) + rng.uniform(size=rows.size)) / rows.size
    return np.argsort(keys, kind="stable")


class BinaryClassificationModelFitter:
    """Fits binary Laplace GP classifiers on one training set (``y`` in {−1, +1}).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Labels in {−1, +1}.
    criterion : SelectionCriterion
    likelihood : Likelihood
    summary : DataSummary
        See :func:`classification_summary`.
    n_restarts : int
    max_optimize_samples : int or None
        The search optimises each candidate on a stratified subset of this
        many rows; the selected structure is then polished on all rows.
    baseline_models : bool
        The ARD, the additive and the isotropic SE models compete with the search's best.
    searching : bool
        False for a grammar of one structure (a refit): no constant-model
        candidate, no baselines, no rejection of white-noise optima, no sample.
    objective : {"lml", "map"}
        What the hyperparameters maximise: the Laplace evidence, or the
        evidence plus the log of the weak default hyperprior (MAP).
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, criterion: SelectionCriterion, likelihood: Likelihood,
                 summary: DataSummary, *, n_restarts: int = 2, max_optimize_samples: int | None = None,
                 baseline_models: bool = True, searching: bool = True, objective: str = "lml") -> None:
        self.X, self.y = X, y
        self.likelihood = likelihood
        self.summary = summary
        self.baseline_models = baseline_models
        self.searching = searching
        self._models: dict[tuple, tuple] = {}
        self._fitter = LaplaceCandidateFitter(
            summary=summary,
            criterion=criterion,
            likelihood=likelihood,
            **_latent_mean_options(likelihood, y),
            n_restarts=n_restarts,
            max_optimize_samples=max_optimize_samples,
            reject_degenerate=searching,
            prior=HyperPrior() if objective == "map" else None,
        )
        # the constant latent function (the base rate) is always a candidate: labels may carry no structure
        self.extra_initial: tuple[Expr, ...] = (Base("C"),) if searching else ()
        self.explores_samples = searching
        self.explore_fits_are_final = max_optimize_samples is None or X.shape[0] <= max_optimize_samples

    # -- what the pipeline asks (ModelFitter) ----------------------------------------------------
    @property
    def max_rows(self) -> int:
        return _pipeline.LAPLACE_POSTERIOR_ROWS

    @property
    def explore_effort(self) -> str:
        return _pipeline.explore_effort_for(self.X.shape[1])

    @property
    def baseline_margin_se(self) -> float:
        return _pipeline.COMPOSITE_MARGIN_SE

    #: Its approximate leave-one-out densities hold back the structures not clearly better than the best
    #: baseline (baseline_margin_se), and stacking discounts them as the regressor's (since 2026-12-05: without
    #: it the ARD and additive kernels' 65 and 129 hyperparameters outweighed the isotropic kernel's 3 on
    #: digits, which predicted better in 9 of 10 one-vs-rest problems; classification guide, "Selection").
    discounts_loo_optimism = True
    #: Every lengthscale counts, flat or not (measured in _pipeline.FLAT_LENGTHSCALE_SPANS).
    discount_skips_flat_lengthscales = False
    #: Far worse structures of the search are no finalists (see _pipeline.HOPELESS_FINALIST_GAP).
    hopeless_finalist_gap = _pipeline.HOPELESS_FINALIST_GAP

    @property
    def candidate_fitter(self) -> CandidateFitter:
        return self._fitter

    def row_order(self, seed: int) -> np.ndarray:
        return stratified_order(self.y, np.random.default_rng(seed))

    def sample_fitter(self, rows: np.ndarray) -> CandidateFitter:
        # the search's starts and lengthscale floors follow the spacing of the rows it sees (the floors of
        # all rows are lower: the refits start inside their bounds); discrete columns stay those of all rows
        summary = classification_summary(self.X[rows], discrete_mask=~self.summary.spacing_floored)
        return dataclasses.replace(self._fitter, summary=summary)

    def refit_fitter(self, n_rows: int) -> CandidateFitter:
        return dataclasses.replace(self._fitter, max_optimize_samples=None, n_restarts=0, reject_degenerate=False)

    def baseline_fitter(self) -> CandidateFitter:
        # explore, then converge: the full start pool of a model with a hyperparameter or two per column cost
        # up to three times the evaluations and predicted no better (see EXPLORE_THEN_POLISH)
        return dataclasses.replace(self._fitter, max_optimize_samples=None, effort=EXPLORE_THEN_POLISH)

    def baseline_structures(self, grammar: Grammar) -> list[Expr]:
        if not (self.searching and self.baseline_models):
            return []
        isotropic = grammar.isotropic_structure(self.X.shape[1])
        return grammar.standard_structures(self.X.shape[1]) + ([isotropic] if isotropic is not None else [])

    def seconds_on_rows(self, n_rows: int) -> tuple[float, float]:
        """Predicted seconds of one Laplace evaluation with its gradient, and of one posterior with its
        leave-one-out densities, on ``n_rows`` rows: LAPLACE_EVALUATION_CHOLESKYS and LAPLACE_MODEL_CHOLESKYS
        Choleskys of that size (:func:`~skgpsearch._engine._linalg.cholesky_seconds`)."""
        cholesky = cholesky_seconds(n_rows)
        return LAPLACE_EVALUATION_CHOLESKYS * cholesky, LAPLACE_MODEL_CHOLESKYS * cholesky

    # -- fitted models ------------------------------------------------------------------------------
    #: Its final model conditions on the rows its finalist was fitted on (at most ``max_rows``).
    conditions_on_all_rows = False
    #: The Laplace engine gives leave-one-out predictive densities (the select stage's "loo" and "stacking").
    has_loo = True
    #: A classifier's select stage never forecasts a series.
    forecasts = False
    is_series = False

    def forecast_log_density(self, record: CandidateRecord, fraction: float, seed: int) -> tuple[None, None]:
        """No forecast densities for classification (``forecasts`` is False)."""
        return None, None

    #: Its select stage judges the finalists' approximate leave-one-out densities, never refits.
    cross_validates = False

    def cross_validated_log_density(self, record: CandidateRecord, folds: list, seed: int) -> tuple[None, list]:
        """No cross-validated densities for classification (``cross_validates`` is False)."""
        return None, []

    def interpolates_noise(self, record: CandidateRecord) -> bool:
        """A classifier never forecasts (and its search rejects white-noise terms already)."""
        return False

    def changes_in_forecast_rows(self, record: CandidateRecord, fraction: float) -> bool:
        """A classifier never forecasts (``forecasts`` is False)."""
        return False

    def forecast_variance_scale(self, refit: CandidateRecord, fraction: float) -> float:
        """A classifier never forecasts (``forecasts`` is False)."""
        return 1.0

    def earlier_forecast_variance_scale(self, record: CandidateRecord, fraction: float,
                                        seed: int) -> tuple[float, None]:
        """A classifier never forecasts (``forecasts`` is False)."""
        return 1.0, None

    def model(self, record: CandidateRecord, rows: np.ndarray | None = None) -> BinaryLaplaceModel:
        """The fitted binary model of a record, conditioned on ``rows`` (None: all rows); built once."""
        key = (id(record), None if rows is None else id(rows))
        if key not in self._models:
            self._models[key] = (record, rows, self._build_model(record, rows))
        return self._models[key][2]

    def _build_model(self, record: CandidateRecord, rows: np.ndarray | None) -> BinaryLaplaceModel:
        X, y = (self.X, self.y) if rows is None else (self.X[rows], self.y[rows])
        likelihood = self.likelihood
        p = record.theta.size - 1 - likelihood.n_params
        kernel = to_kernel(record.structure, summary=self.summary)
        kernel.theta = record.theta[:p]
        mean, lik_theta = float(record.theta[p]), record.theta[p + 1 :]
        with single_threaded_blas():
            posterior = LaplacePosterior(kernel, mean, likelihood, lik_theta, X, y, a0=record.latent_start)
        model = BinaryLaplaceModel(record.structure, kernel, mean, likelihood, lik_theta, posterior, X, y,
                                   self.summary, mean_bounds=self._fitter.mean_bounds)
        model.n_hyperparameters_ = record.n_hyperparameters
        return model

    def final_model(self, outcome: PipelineResult) -> BinaryLaplaceModel:
        """The selected record's model, predicting with the average of the selected records' posteriors."""
        best = outcome.best
        model = self.model(best, outcome.rows)
        model.criterion_value = best.criterion
        model.diagnostics = best.diagnostics
        model.mixture = [model.posterior] + [self.model(r, outcome.rows).posterior for r in outcome.selected[1:]]
        model.weights = outcome.weights
        # from the leave-one-out moments the select stage computed for the finalists it scored
        model.calibrate()
        model.finalists = outcome.finalists
        model.finalist_weights = {id(r): w for r, w in zip(outcome.selected, outcome.weights)}
        return model
