"""skgpsearch: Gaussian-process kernel structure discovery, the scikit-learn way."""
__version__ = "0.1.0"

