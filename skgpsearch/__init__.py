"""skgpsearch: Gaussian-process kernel structure discovery, the scikit-learn way."""

from ._classifier import CompositionalGPClassifier
from ._diagnostics import DegenerateOptimumWarning
from ._kernel_search_cv import KernelSearchCV
from ._regressor import CompositionalGPRegressor, OutlierWarning
from ._search import LevelReport, print_progress, search_progress

__version__ = "0.1.0"

__all__ = [
    "CompositionalGPClassifier",
    "CompositionalGPRegressor",
    "DegenerateOptimumWarning",
    "KernelSearchCV",
    "LevelReport",
    "OutlierWarning",
    "__version__",
    "print_progress",
    "search_progress",
]
