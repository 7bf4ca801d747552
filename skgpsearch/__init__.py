"""skgpsearch: Gaussian-process kernel structure discovery, the scikit-learn way."""

from ._estimators import CompositionalGPClassifier, CompositionalGPRegressor, DecimalYears, KernelSearchCV
from ._search import (
    DegenerateOptimumWarning,
    LevelReport,
    OutlierWarning,
    RepeatedRowsWarning,
    print_progress,
    search_progress,
)

__version__ = "0.1.0"

__all__ = [
    "CompositionalGPClassifier",
    "CompositionalGPRegressor",
    "DecimalYears",
    "DegenerateOptimumWarning",
    "KernelSearchCV",
    "LevelReport",
    "OutlierWarning",
    "RepeatedRowsWarning",
    "__version__",
    "print_progress",
    "search_progress",
]
