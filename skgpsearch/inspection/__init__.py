"""Explain fitted models: additive decomposition, plain-language description, plots, report.

Plotting needs matplotlib (the ``plot`` extra); it is imported only when a plotting
function (or a report with figures) is called.
"""

from __future__ import annotations

from ._decompose import Component, Decomposition, Switch, SwitchedKernel, additive_terms, decompose
from ._describe import ard_relevances, describe
from ._forecast import forecast_holdout, forecast_table, plot_forecast
from ._plots import plot_components, plot_fit, plot_search_path
from ._report import compare_with_random_forest, comparison_table, write_report
from ._views import ClassificationView, LatentModel, RegressionView, explanation_view, sklearn_regression_view

__all__ = [
    "ClassificationView",
    "Component",
    "Decomposition",
    "LatentModel",
    "RegressionView",
    "Switch",
    "SwitchedKernel",
    "additive_terms",
    "ard_relevances",
    "compare_with_random_forest",
    "comparison_table",
    "decompose",
    "describe",
    "explanation_view",
    "forecast_holdout",
    "forecast_table",
    "plot_components",
    "plot_fit",
    "plot_forecast",
    "plot_search_path",
    "sklearn_regression_view",
    "write_report",
]
