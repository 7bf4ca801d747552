"""The scikit-learn estimators: validation, parameters, fitted attributes, prediction; the search is delegated.

``_base`` holds what the two structure-searching estimators share;
``_regressor``, ``_classifier`` and ``_kernel_search_cv`` the estimators; ``_decimal_years``
the transformer that measures dates in years for any other estimator.
They import the search pipeline (:mod:`skgpsearch._search`), never an engine module.
"""

from ._classifier import CompositionalGPClassifier
from ._decimal_years import DecimalYears
from ._kernel_search_cv import KernelSearchCV
from ._regressor import CompositionalGPRegressor

__all__ = ["CompositionalGPClassifier", "CompositionalGPRegressor", "DecimalYears", "KernelSearchCV"]
