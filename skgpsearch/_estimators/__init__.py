"""The scikit-learn estimators: validation, parameters, fitted attributes, prediction; the search is delegated.

``_base`` holds what the two structure-searching estimators share;
``_regressor``, ``_classifier`` and ``_kernel_search_cv`` the estimators.
They import the search pipeline (:mod:`skgpsearch._search`), never an engine module.
"""

from ._classifier import CompositionalGPClassifier
from ._kernel_search_cv import KernelSearchCV
from ._regressor import CompositionalGPRegressor

__all__ = ["CompositionalGPClassifier", "CompositionalGPRegressor", "KernelSearchCV"]
