"""The search pipeline: the middle layer between the engines and the estimators.

Modules, lowest first (``tests/test_architecture.py`` keeps their order):

- ``_records``, ``_progress``, ``_starts``, ``_diagnostics``: candidate
  records and statuses, progress callbacks, structured starts, diagnostics
  of degenerate optima and outliers;
- ``_candidate_fitter``: the skeleton of one candidate's fit;
  ``_exact_fitter``, ``_sparse_fitter``, ``_laplace_fitter``: its engines;
- ``_models``: fitted models (posteriors behind a small interface);
- ``_loop``: the greedy/beam search over a grammar (the explore stage);
- ``_pipeline``: the staged search (explore, finalists, select) and its constants;
- ``_warping_decision``: the evidence test of the estimators' input warping;
- ``_regression``, ``_classification``: the model fitters of the two tasks,
  which own the choice of engine and build the fitted models.

The estimators import this package only, never an engine module.
"""

from ._classification import (
    BinaryClassificationModelFitter,
    classification_likelihood,
    classification_summary,
    classification_warping_evidence_gain,
    discrete_feature_mask,
    fits_per_depth,
    likelihood_names,
)
from ._diagnostics import (
    DegenerateOptimumWarning,
    OutlierWarning,
    RepeatedRowsWarning,
    warn_about_degenerate_optimum,
    warn_about_outliers,
)
from ._loop import SearchResult, SearchSettings, StructureSearch, run_search
from ._models import (
    BinaryLaplaceModel,
    RegressionModel,
    averaged_log_odds,
    averaged_probability,
    regression_mixture_moments,
)
from ._pipeline import SELECTIONS, PipelineResult, SearchPipeline, finalists_table, resolve_selection
from ._progress import LevelReport, ProgressCallback, print_progress, progress_callback, search_progress
from ._records import FAILED, NUMERICAL_FAILURES, CandidateRecord, user_stacklevel
from ._regression import RegressionModelFitter, RegressionOptions, approximation_for, regression_warping_evidence_gain
from ._warping_decision import WARP_MIN_EVIDENCE_GAIN

__all__ = [
    "FAILED",
    "NUMERICAL_FAILURES",
    "BinaryClassificationModelFitter",
    "BinaryLaplaceModel",
    "CandidateRecord",
    "DegenerateOptimumWarning",
    "LevelReport",
    "OutlierWarning",
    "PipelineResult",
    "ProgressCallback",
    "RegressionModel",
    "RegressionModelFitter",
    "RegressionOptions",
    "RepeatedRowsWarning",
    "SELECTIONS",
    "WARP_MIN_EVIDENCE_GAIN",
    "SearchPipeline",
    "SearchResult",
    "SearchSettings",
    "StructureSearch",
    "approximation_for",
    "averaged_log_odds",
    "averaged_probability",
    "classification_likelihood",
    "classification_summary",
    "classification_warping_evidence_gain",
    "discrete_feature_mask",
    "finalists_table",
    "fits_per_depth",
    "likelihood_names",
    "print_progress",
    "progress_callback",
    "regression_mixture_moments",
    "regression_warping_evidence_gain",
    "resolve_selection",
    "run_search",
    "search_progress",
    "user_stacklevel",
    "warn_about_degenerate_optimum",
    "warn_about_outliers",
]
