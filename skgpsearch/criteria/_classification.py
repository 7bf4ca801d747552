"""Criteria specific to GP classification."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .._engine._linalg import NumericalError
from ._base import Criterion

__all__ = ["CVAccuracy"]


class CVAccuracy(Criterion):
    """Cross-validated training accuracy with the hyperparameters held fixed (Mrkšić 2014, §4.2.4).

    The data is split into ``cv`` stratified folds; for each fold the GP with
    the *fitted* hyperparameters (not refitted) is conditioned on the other
    folds and classifies the held-out one. The value is the mean accuracy
    (a fraction, greater is better). It has no complexity penalty, so a
    search guided by it stops only when no candidate raises the accuracy or
    at ``max_depth``. For a one-vs-rest multi-class classifier it is the mean
    of the binary problems' accuracies. Called with other data, the
    cross-validation runs on that data. The criterion is one of those of the
    GP-classification structure search of [1]_.

    Parameters
    ----------
    cv : int, default=10
        Number of stratified folds (shuffled with a fixed seed, so every
        candidate sees the same splits).

    References
    ----------
    .. [1] N. Mrkšić, "Kernel Structure Discovery for Gaussian Process
       Classification", dissertation (Part III of the Computer Science Tripos),
       University of Cambridge, 2014, §4.2.4.
    """

    name = "cv_accuracy"
    classification = True
    regression = False

    def __init__(self, cv: int = 10) -> None:
        self.cv = cv

    def _score(self, estimator, X, y):
        from sklearn.model_selection import StratifiedKFold

        X = np.asarray(X, dtype=float)
        y = np.asarray(y)
        n_splits = min(int(self.cv), int(np.min(np.unique(y, return_counts=True)[1])))
        if n_splits < 2:
            return float("nan")
        splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=0)
        # on the training data, each fold's Newton iteration starts from the full-data mode
        on_training_data = estimator._is_training_data(X, y)
        correct = 0
        for train, test in splitter.split(X, y):
            try:
                warm = train if on_training_data else None
                latent = estimator._conditioned(X[train], y[train], warm=warm).predict_latent(X[test])
            except NumericalError:
                return float("nan")
            correct += int(np.sum(np.where(latent > 0, 1.0, -1.0) == y[test]))
        return correct / len(y)

    def combine(self, values: Iterable[float]) -> float:
        return float(np.mean(values))

    def __eq__(self, other):
        return type(self) is type(other) and self.cv == other.cv

    def __hash__(self):
        return hash((type(self).__name__, self.cv))

    def __repr__(self):
        return f"CVAccuracy(cv={self.cv!r})"
