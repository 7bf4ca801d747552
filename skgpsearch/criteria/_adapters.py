"""What a criterion reads from a fitted estimator: our estimators, scikit-learn's GPs, pipelines.

Criteria are written against the protocols of
:mod:`skgpsearch.criteria._protocol` (``EvidenceModel``, ``ObjectiveModel``,
``OneVsRestModel``), which skgpsearch's estimators implement. A fitted :class:`~sklearn.pipeline.Pipeline` is
scored through its last step on the transformed inputs, and scikit-learn's
:class:`~sklearn.gaussian_process.GaussianProcessRegressor` /
:class:`~sklearn.gaussian_process.GaussianProcessClassifier` through small
read-only views, which support the evidence criteria (``lml``, ``aic``,
``bic``, ``bic_light``) and, for the regressor, the closed-form leave-one-out
criteria. Criteria that need our hyperprior or refits (``map``, the Laplace
criteria, ASC, ``kfold``, ``cv_accuracy``) need a skgpsearch estimator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import RegressorMixin, clone

from .._engine._linalg import NumericalError
from .._engine._exact import GPPosterior, RegressionObjective
from ..grammar._expr import Base
from ._protocol import OneVsRestModel

__all__ = ["SKLEARN_CLASSIFIER_CRITERIA", "SKLEARN_REGRESSOR_CRITERIA", "check_sklearn_gp_supports",
           "check_view_supports", "criterion_target", "criterion_task"]


def criterion_target(estimator: Any, X: Any) -> tuple[Any, Any]:
    """(the object a criterion reads, ``X`` as it reaches that object)."""
    from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
    from sklearn.pipeline import Pipeline

    if isinstance(estimator, Pipeline):
        Xt = X
        for _, step in estimator.steps[:-1]:
            if step is not None and step != "passthrough":
                Xt = step.transform(Xt)
        return criterion_target(estimator.steps[-1][1], Xt)
    # the protocol's defining methods (an unfitted estimator passes, and raises NotFittedError when read)
    if isinstance(estimator, OneVsRestModel) or callable(getattr(estimator, "log_marginal_likelihood_on", None)):
        return estimator, X
    if isinstance(estimator, GaussianProcessRegressor):
        return _SklearnRegressorView(estimator), X
    if isinstance(estimator, GaussianProcessClassifier):
        return _SklearnClassifierView(estimator), X
    raise ValueError(
        f"Criteria score fitted Gaussian-process models; got {type(estimator).__name__}. Use a skgpsearch "
        "estimator, scikit-learn's GaussianProcessRegressor/GaussianProcessClassifier, or a Pipeline ending in one."
    )


#: The criteria the views of scikit-learn's GPs can compute (the others need a skgpsearch estimator).
SKLEARN_REGRESSOR_CRITERIA = ("lml", "aic", "bic", "bic_light", "loo", "loo_mse")
SKLEARN_CLASSIFIER_CRITERIA = ("lml", "aic", "bic", "bic_light")


def criterion_task(target: Any) -> str | None:
    """The task of ``target`` (what :func:`criterion_target` returned): "classification", "regression", or None
    for a model of one problem inside a search, whose estimator checked its criterion's task before."""
    if isinstance(target, (OneVsRestModel, _SklearnClassifierView)):
        return "classification"
    if isinstance(target, (_SklearnRegressorView, RegressorMixin)):
        return "regression"
    return None


def check_view_supports(criterion: Any, target: Any) -> None:
    """A ``ValueError`` naming the alternatives when ``target`` is a view of scikit-learn's GPs that cannot
    compute the named ``criterion`` (otherwise an AttributeError deep inside, or NaN, which
    ``cross_val_score`` and ``GridSearchCV`` only warn about)."""
    if isinstance(target, _SklearnView):
        check_sklearn_gp_supports(getattr(criterion, "name", None), target.estimator)


def check_sklearn_gp_supports(name: str | None, estimator: Any) -> None:
    """A ``ValueError`` naming the alternatives when the criterion ``name`` is one scikit-learn's GP
    ``estimator`` (a regressor or a classifier) cannot be scored by (``None``: a user's callable, let through)."""
    from sklearn.base import is_classifier

    supported = SKLEARN_CLASSIFIER_CRITERIA if is_classifier(estimator) else SKLEARN_REGRESSOR_CRITERIA
    if name is not None and name not in supported:
        raise ValueError(
            f"The criterion {name!r} needs a skgpsearch estimator; scikit-learn's {type(estimator).__name__} can "
            f"be scored by {', '.join(supported)}, or by a scikit-learn scorer on held-out folds (for example "
            "scoring='neg_mean_squared_error' or 'accuracy', cv=5)."
        )


def _unsupported(what):
    raise ValueError(
        f"The criterion needs {what}, which scikit-learn's Gaussian-process estimators do not expose; "
        "use lml, aic, bic, bic_light (or loo, loo_mse for GaussianProcessRegressor), or a "
        "CompositionalGPRegressor / CompositionalGPClassifier."
    )


class _SklearnView:
    """Common part: hyperparameter count and structure of the fitted kernel."""

    def __init__(self, estimator):
        self.estimator = estimator

    @property
    def n_hyperparameters_(self):
        return int(self.estimator.kernel_.n_dims)

    @property
    def structure_(self):
        from ..kernels import from_kernel

        return from_kernel(self.estimator.kernel_, n_features=self._X_train().shape[1])

    def _X_train(self):
        est = self.estimator
        return est.X_train_ if hasattr(est, "X_train_") else getattr(est.base_estimator_, "X_train_", None)

    def _prior_moments(self, prior):
        _unsupported("the hyperprior of a skgpsearch structure")

    def _refit_structure(self, X, y, seed=0):
        _unsupported("refits of a skgpsearch structure")

    @property
    def _kernel_no_noise(self):
        _unsupported("the kernel without its noise term")

    def _check_features(self, X):
        # scikit-learn's GP sets no n_features_in_ when its kernel takes any input (WhiteKernel alone)
        expected = getattr(self.estimator, "n_features_in_", None)
        if expected is None:
            X_train = self._X_train()
            if np.ndim(X_train) != 2:
                return
            expected = np.shape(X_train)[1]
        if np.ndim(X) != 2 or np.shape(X)[1] != expected:
            raise ValueError(
                f"X has {np.shape(X)[-1] if np.ndim(X) else 0} features, but {type(self.estimator).__name__} "
                f"is expecting {expected} features as input."
            )

    def _is_training(self, X, y_values):
        X_train = self._X_train()
        return (
            X_train is not None
            and np.shape(X) == np.shape(X_train)
            and np.array_equal(np.asarray(X, dtype=float), X_train)
            and np.array_equal(np.asarray(y_values), np.asarray(self._training_targets()))
        )


class _SklearnRegressorView(_SklearnView):
    """Read-only view of a fitted GaussianProcessRegressor (noise = its ``alpha`` plus any WhiteKernel).

    Its evidence is that of the targets in their own units, as our estimators': scikit-learn's value is of
    the targets divided by their standard deviation when ``normalize_y``, n log(sd) nats higher. A
    ``WhiteKernel`` added to the kernel is the noise, which a structure (and so ``bic_light``'s count of
    base kernels) leaves out, as our estimators' structures do.
    """

    @property
    def structure_(self):
        from ..grammar import add

        structure = super().structure_
        signal = [term for term in structure.terms()
                  if not (isinstance(term, Base) and term.kind.white_noise)]
        return add(*signal) if signal and len(signal) < len(structure.terms()) else structure

    @property
    def _y_train_mean(self):
        return float(np.ravel(getattr(self.estimator, "_y_train_mean", 0.0))[0])

    @property
    def _y_train_std(self):
        return float(np.ravel(getattr(self.estimator, "_y_train_std", 1.0))[0])

    def _training_targets(self):
        return self.estimator.y_train_ * self._y_train_std + self._y_train_mean

    def _normalised(self, y):
        return (np.asarray(y, dtype=float) - self._y_train_mean) / self._y_train_std

    def _alpha(self):
        alpha = np.asarray(self.estimator.alpha, dtype=float)
        if alpha.size != 1:
            _unsupported("a scalar alpha")
        return float(alpha)

    def log_marginal_likelihood_on(self, X, y):
        est = self.estimator
        X = np.asarray(X, dtype=float)
        self._check_features(X)
        y = np.asarray(y, dtype=float).ravel()
        # the Jacobian of the normalisation: log p(y) = log p(y / sd) - n log(sd)
        jacobian = -y.size * np.log(self._y_train_std)
        if self._is_training(X, y):
            return float(est.log_marginal_likelihood_value_) + jacobian
        try:
            return GPPosterior(est.kernel_, self._alpha(), X, self._normalised(y)).log_marginal_likelihood + jacobian
        except NumericalError:
            return float("nan")

    def _fitted_objective(self, X, y):
        """Objective of the fitted kernel with the fixed ``alpha`` as its "noise" (for LOO)."""
        X = np.asarray(X, dtype=float)
        self._check_features(X)
        objective = RegressionObjective(clone(self.estimator.kernel_), X, self._normalised(y), (1e-300, 1e300))
        theta = np.append(self.estimator.kernel_.theta, np.log(max(self._alpha(), 1e-300)))
        return objective, theta, 0.0


class _SklearnClassifierView(_SklearnView):
    """Read-only view of a fitted binary GaussianProcessClassifier (its Laplace evidence)."""

    def __init__(self, estimator):
        classes = getattr(estimator, "classes_", None)
        if classes is not None and len(classes) > 2:
            raise ValueError(
                f"This GaussianProcessClassifier has {len(classes)} classes, but the model-selection criteria "
                "score a binary one (a multi-class one fits a kernel per class). Score it on held-out folds "
                "instead, for example scoring='accuracy' or 'neg_log_loss' with cv=5, or use a "
                "CompositionalGPClassifier, which the criteria score class by class."
            )
        super().__init__(estimator)

    def _training_targets(self):
        est = self.estimator
        base = est.base_estimator_
        if hasattr(base, "y_train_"):
            return est.classes_[base.y_train_.astype(int)]
        return None

    def log_marginal_likelihood_on(self, X, y):
        est = self.estimator
        self._check_features(X)
        if self._training_targets() is not None and self._is_training(X, y):
            return float(est.log_marginal_likelihood_value_)
        refit = clone(est).set_params(kernel=est.kernel_, optimizer=None)
        return float(refit.fit(X, y).log_marginal_likelihood_value_)
