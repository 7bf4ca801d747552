"""What the inspection tools may read from a fitted model: small views, one per kind of model.

A model is explainable when it offers ``_explanation_view()`` returning a
:class:`RegressionView` or a :class:`ClassificationView` (the skgpsearch
estimators do). scikit-learn's
:class:`~sklearn.gaussian_process.GaussianProcessRegressor` gets its view
from the adapter :func:`sklearn_regression_view`. The inspection tools read
nothing else from a model than these views and its public fitted attributes
(``X_train_``, ``n_features_in_``, ``feature_names_in_``, ``structure_``,
``search_results_``, ...), so they import no estimator class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils.validation import check_is_fitted

from ..grammar import Expr

if TYPE_CHECKING:
    from sklearn.gaussian_process import GaussianProcessRegressor

__all__ = ["ClassificationView", "LatentModel", "RegressionView", "check_fitted_search_estimator", "explanation_view",
           "sklearn_regression_view"]


class RegressionPosterior(Protocol):
    """The posterior of a regression view, on the normalised target scale."""

    #: Weights of the posterior mean: mean(x) = k(x, X_train) @ alpha + mean.
    alpha: np.ndarray
    #: Constant latent mean (0 for a Gaussian model with centred targets).
    mean: float

    def variance_reduction(self, K_cross: np.ndarray) -> np.ndarray:
        """diag(K_crossᵀ (posterior precision) K_cross): what the data remove from the prior variance."""


@dataclass(frozen=True)
class RegressionView:
    """What inspection reads from a fitted GP regressor.

    Attributes
    ----------
    kernel : Kernel
        The fitted kernel on the normalised scale; its white-noise terms
        count as noise, its other additive terms are the components.
    posterior : RegressionPosterior
        ``alpha``, ``mean`` and ``variance_reduction`` of the posterior.
    X_train, y_train : ndarray
        Training inputs and targets (original units).
    y_mean, y_std : float
        Normalisation: original = normalised * y_std + y_mean.
    noise_variance : float or ndarray of shape (n_train,)
        Noise outside ``kernel``, in original units (one per training row
        for a scikit-learn model fitted with a per-sample ``alpha``).
    target_variance : float
        The variance that components' shares are fractions of.
    """

    kernel: Kernel
    posterior: RegressionPosterior
    X_train: np.ndarray
    y_train: np.ndarray
    y_mean: float
    y_std: float
    noise_variance: float | np.ndarray
    target_variance: float


@runtime_checkable
class LatentModel(Protocol):
    """One binary problem of a classifier: a Laplace posterior of a latent function."""

    structure_: Expr
    kernel_: Kernel
    latent_mean_: float
    likelihood: Any
    lik_theta: np.ndarray
    likelihood_params_: dict
    posterior: Any
    X_train_: np.ndarray


@dataclass(frozen=True)
class ClassificationView:
    """What inspection reads from a fitted GP classifier: one latent model per binary problem.

    ``latent_models`` has one entry for a binary classifier (the latent
    function of ``classes[1]``) and one per class (one-vs-rest) otherwise.
    """

    classes: list
    latent_models: list


class _CholeskyPosterior:
    """The posterior of a scikit-learn GaussianProcessRegressor from its ``alpha_`` and ``L_``."""

    mean = 0.0

    def __init__(self, alpha, L):
        self.alpha, self.L = alpha, L

    def variance_reduction(self, K_cross):
        V = solve_triangular(self.L, K_cross, lower=True, check_finite=False)
        return np.einsum("ij,ij->j", V, V)


def sklearn_regression_view(model: GaussianProcessRegressor) -> RegressionView:
    """The adapter of a fitted scikit-learn GaussianProcessRegressor (e.g. the ``best_estimator_`` of KernelSearchCV)."""
    check_is_fitted(model, "kernel_")
    alpha = np.asarray(model.alpha_)
    if alpha.ndim == 2 and alpha.shape[1] == 1:
        alpha = alpha[:, 0]  # one target given as a column
    if alpha.ndim != 1:
        raise ValueError(f"decompose supports single-target regression only; this model was fitted on "
                         f"{alpha.shape[1]} targets: fit one GaussianProcessRegressor per target to explain each.")
    scale, offset = float(np.ravel(model._y_train_std)[0]), float(np.ravel(model._y_train_mean)[0])
    y = np.ravel(model.y_train_) * scale + offset
    # scikit-learn's ``alpha`` is extra noise variance on the normalised scale, a scalar or one per sample
    extra_noise = np.asarray(model.alpha, dtype=float) * scale**2
    return RegressionView(
        kernel=model.kernel_,
        posterior=_CholeskyPosterior(alpha, model.L_),
        X_train=np.asarray(model.X_train_, dtype=float),
        y_train=y,
        y_mean=offset,
        y_std=scale,
        noise_variance=float(extra_noise) if extra_noise.ndim == 0 else extra_noise.copy(),
        target_variance=float(np.var(y)),
    )


def explanation_view(estimator: Any) -> RegressionView | ClassificationView:
    """The view of a fitted model that the inspection tools read.

    Raises
    ------
    ValueError
        For a model that is not explainable.
    NotFittedError
        For an unfitted one.
    """
    if hasattr(estimator, "_explanation_view"):
        check_is_fitted(estimator, "structure_")
        return estimator._explanation_view()
    from sklearn.gaussian_process import GaussianProcessRegressor

    if isinstance(estimator, GaussianProcessRegressor):
        return sklearn_regression_view(estimator)
    raise ValueError(
        f"Needs a fitted CompositionalGPRegressor, CompositionalGPClassifier or scikit-learn "
        f"GaussianProcessRegressor, got {type(estimator).__name__} (for a Pipeline, pass its last step and "
        "the transformed inputs)."
    )


def check_fitted_search_estimator(estimator: Any, function: str) -> None:
    """Raise unless ``estimator`` is a fitted CompositionalGPRegressor or CompositionalGPClassifier.

    Raises
    ------
    NotFittedError
        For one of those estimators before ``fit``.
    ValueError
        For any other model, naming what ``function`` takes.
    """
    if not hasattr(estimator, "_explanation_view"):
        raise ValueError(
            f"{function} needs a fitted CompositionalGPRegressor or CompositionalGPClassifier, got "
            f"{type(estimator).__name__} (for a Pipeline, pass its last step and the transformed inputs; "
            "a scikit-learn GaussianProcessRegressor is explained by decompose and describe)."
        )
    check_is_fitted(estimator, "structure_")
