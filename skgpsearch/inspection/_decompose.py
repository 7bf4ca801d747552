"""Additive decomposition of a fitted model's posterior (Rasmussen & Williams §2.2, Duvenaud et al. 2013).

If f = Σ_i f_i with independent GP priors f_i ~ GP(0, k_i), then given the data

    E[f_i(X*) | y]   = K_i(X*, X) K_y⁻¹ (y − m)
    Cov[f_i(X*) | y] = K_i(X*, X*) − K_i(X*, X) K_y⁻¹ K_i(X, X*)

with K_y the covariance of the observations. For the Laplace classifier the same
holds for the latent function with K_y⁻¹ (y − m) replaced by ∇ log p(y | f̂) and
K_y by K + W⁻¹ (R&W §3.4.2). The components' posterior means add up to the
full posterior mean, because K_y⁻¹ (y − m) is shared.

The additive terms are those of the distributed form of the structure: a product
of a sum is split into one term per summand, each keeping the fitted
hyperparameter values (the sklearn kernel objects are recombined, not rebuilt).
A changepoint or change window s(x) s(x') k1 + (1 − s(x)) (1 − s(x')) k2 is split
the same way into its sides, each term of k1 weighted by the switch s and each term
of k2 by 1 − s (:class:`SwitchedKernel`); a component records where it is active
(:class:`Switch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.gaussian_process import kernels as sk
from sklearn.utils.validation import validate_data

from ..datasets._dates import with_decimal_years
from ..kernels import from_kernel
from ..kernels._change import ChangePoint, ChangeWindow, _ChangeOperator
from ..kernels._core import _as_2d
from ..kernels._specs import WhiteNoise
from ._views import ClassificationView, RegressionView, explanation_view

__all__ = ["Component", "Decomposition", "Switch", "SwitchedKernel", "decompose"]


class SwitchedKernel(sk.Kernel):
    """One side of a changepoint or change window: k(x, x') = w(x) w(x') kernel(x, x').

    w is the change's switch s(x) for ``side="first"`` (the side of its ``k1``)
    and 1 − s(x) for ``side="second"``. The change's own hyperparameters are
    taken as fixed: the kernel is for inspecting a fitted model (it has no
    free hyperparameters of its own, and the gradient with respect to its
    empty ``theta`` is empty).

    Parameters
    ----------
    kernel : sklearn Kernel
        A term of the change's ``k1`` or ``k2``.
    change : ChangePoint or ChangeWindow
        The fitted change operator.
    side : {"first", "second"}, default="first"
    """

    def __init__(self, kernel: sk.Kernel, change: ChangePoint | ChangeWindow, side: str = "first") -> None:
        self.kernel = kernel
        self.change = change
        self.side = side

    def weights(self, X: ArrayLike) -> np.ndarray:
        """w at the rows of ``X``."""
        if self.side not in ("first", "second"):
            raise ValueError(f"side must be 'first' or 'second', got {self.side!r}.")
        X = _as_2d(X)
        s, t, _ = self.change.switch_and_derivatives(self.change._column_values(X, "X"))
        return s if self.side == "first" else t

    def __call__(
        self, X: np.ndarray, Y: np.ndarray | None = None, eval_gradient: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        if eval_gradient and Y is not None:
            raise ValueError("Gradient can only be evaluated when Y is None.")
        w_x = self.weights(X)
        w_y = w_x if Y is None else self.weights(Y)
        K = np.outer(w_x, w_y) * self.kernel(X, Y)
        if eval_gradient:
            return K, np.empty(K.shape + (0,))
        return K

    def diag(self, X: np.ndarray) -> np.ndarray:
        return self.weights(X) ** 2 * self.kernel.diag(X)

    def is_stationary(self) -> bool:
        return False

    @property
    def requires_vector_input(self) -> bool:
        return True

    def __repr__(self):
        return f"{type(self).__name__}({self.kernel!r}, side={self.side!r} of {type(self.change).__name__})"


@dataclass(frozen=True)
class Switch:
    """Where a component of a changepoint or change window is active.

    Attributes
    ----------
    operator : {"CP", "CW"}
    column : int
        The column the change happens on.
    side : {"before", "after", "outside", "inside"}
        A changepoint's first operand holds before its location, the second
        after; a change window's first operand outside the window, the second
        inside.
    location : float
        The changepoint, or the centre of the window, in the user's units
        (after an input warping, the warped window's ends mapped back).
    duration : float or None
        The length of the window (None for a changepoint).
    """

    operator: str
    column: int
    side: str
    location: float
    duration: float | None = None

    @property
    def bounds(self) -> tuple[float, float]:
        """(start, end) of a window; (location, location) for a changepoint."""
        half = 0.5 * (self.duration or 0.0)
        return self.location - half, self.location + half

    def to_string(self, names: Sequence[str] | None = None, spread: float | None = None) -> str:
        """The region in symbols, e.g. ``year > 1978`` or ``1941 < year < 1945``."""
        var = names[self.column] if names is not None else f"x{self.column}"
        start, end = (position(v, spread) for v in self.bounds)
        return {
            "before": f"{var} < {start}",
            "after": f"{var} > {start}",
            "inside": f"{start} < {var} < {end}",
            "outside": f"{var} outside [{start}, {end}]",
        }[self.side]


def position(value, spread=None):
    """A position on a column to about a hundredth of its range (1956.3, not 1.96e+03)."""
    value = float(value)
    if not np.isfinite(value):
        return "?"
    if spread is None or not np.isfinite(spread) or spread <= 0 or value == 0:
        return f"{value:.4g}"
    digits = max(3, int(np.ceil(np.log10(abs(value) / (spread / 100.0)))))
    return f"{value:.{digits}g}"


@dataclass
class Component:
    """One additive term of a fitted structure, evaluated at some inputs.

    Attributes
    ----------
    structure : skgpsearch.grammar.Expr or None
        The term (a base kernel or a product of base kernels) carrying its
        fitted hyperparameter values; None for a scikit-learn kernel without a
        counterpart in the grammar.
    label : str
        The term in the text notation, with feature names when known.
    columns : tuple of int
        Input columns the term depends on.
    mean : ndarray of shape (n_samples,)
        Posterior mean of the component at the inputs (target units for a
        regressor, latent units for a classifier).
    std : ndarray of shape (n_samples,)
        Posterior standard deviation of the component at the inputs.
    switches : tuple of Switch
        For a side of a changepoint or change window, where the component is
        active (one entry per change it sits in); empty otherwise.
        ``structure`` is then the term without the switches.
    variance_share : float
        Variance of the component's posterior mean over the training inputs,
        as a fraction of the variance of the training targets (regression) or
        of the latent posterior mean (classification). Components are not
        orthogonal, so the shares need not add up to one.
    kernel : sklearn Kernel
        The term's covariance function with the fitted hyperparameters.
    """

    structure: object
    label: str
    columns: tuple
    mean: np.ndarray
    std: np.ndarray
    variance_share: float
    kernel: object = field(repr=False)
    switches: tuple = ()

    def to_string(
        self, names: Sequence[str] | None = None, spread: Sequence[float] | np.ndarray | None = None
    ) -> str:
        """The term in the text notation with the region it is active in, e.g. ``PER(year) for year > 1978``.

        ``spread``: the range of each column, to print positions to a hundredth of it.
        """
        text = self.label if self.structure is None else self.structure.without_values().to_string(names)
        if not self.switches:
            return text
        regions = " and ".join(
            s.to_string(names, None if spread is None else spread[s.column]) for s in self.switches
        )
        return f"{text} for {regions}"


@dataclass
class Decomposition:
    """The additive components of a fitted model's posterior at some inputs.

    Attributes
    ----------
    components : list of Component
        Ordered by ``variance_share``, largest first.
    offset : float
        What the components are added to: the training-target mean of a
        regressor (with ``normalize_y``), the constant latent mean of a classifier.
    X : ndarray of shape (n_samples, n_features)
        The inputs the components were evaluated at.
    task : {"regression", "classification"}
    feature_names : list of str or None
    noise_variance : float or None
        Observation-noise variance of a regressor (target units), including
        white-noise terms of the structure (their mean over the training
        inputs); None for a classifier.
    noise_variance_range : pair of float or None
        The smallest and largest noise variance over the training inputs when
        a white-noise term of the structure varies with the inputs
        (e.g. ``LIN * WN``: noise that grows along the input); None when the
        noise level is the same everywhere.
    target_variance : float
        Variance of the training targets (regression) or of the latent
        posterior mean at the training inputs (classification): the
        denominator of the variance shares.
    residuals : ndarray of shape (n_samples,) or None
        Targets minus the full posterior mean, when X are the training inputs
        of a regressor (``components[i].mean + residuals`` are the partial
        residuals of component i); None otherwise.
    target_class : object or None
        For a classifier, the class whose one-vs-rest latent function this is.
    """

    components: list
    offset: float
    X: np.ndarray
    task: str
    feature_names: list | None = None
    noise_variance: float | None = None
    target_variance: float = 1.0
    residuals: np.ndarray | None = None
    target_class: object = None
    noise_variance_range: tuple | None = None

    @property
    def mean(self) -> np.ndarray:
        """Full posterior mean: ``offset`` plus the sum of the components' means."""
        total = np.full(self.X.shape[0], float(self.offset))
        for component in self.components:
            total = total + component.mean
        return total

    def __len__(self):
        return len(self.components)

    def __iter__(self):
        return iter(self.components)

    def __getitem__(self, index):
        return self.components[index]


def additive_terms(kernel: sk.Kernel) -> list[sk.Kernel]:
    """Split a scikit-learn kernel into the additive terms of its distributed form.

    ``Product(Sum(a, b), c)`` gives ``[Product(a, c), Product(b, c)]``; the
    kernel objects (and so their hyperparameter values) are reused, so the
    terms add up to ``kernel`` exactly.
    """
    if isinstance(kernel, sk.Sum):
        return additive_terms(kernel.k1) + additive_terms(kernel.k2)
    if isinstance(kernel, sk.Product):
        return [sk.Product(a, b) for a in additive_terms(kernel.k1) for b in additive_terms(kernel.k2)]
    if isinstance(kernel, _ChangeOperator):
        return [SwitchedKernel(t, kernel, "first") for t in additive_terms(kernel.k1)] + [
            SwitchedKernel(t, kernel, "second") for t in additive_terms(kernel.k2)
        ]
    return [kernel]


def _without_switches(term):
    """The term with its SwitchedKernel factors unwrapped, and the changes it sits in (outermost first)."""
    if isinstance(term, SwitchedKernel):
        inner, switches = _without_switches(term.kernel)
        return inner, [(term.change, term.side)] + switches
    if isinstance(term, sk.Product):
        left, left_switches = _without_switches(term.k1)
        right, right_switches = _without_switches(term.k2)
        if not (left_switches or right_switches):
            return term, []
        return sk.Product(left, right), left_switches + right_switches
    return term, []


def _switch(change, side, estimator):
    """The Switch of one side of ``change``, its region in the user's units (see :func:`user_interval`)."""
    operator = "CP" if isinstance(change, ChangePoint) else "CW"
    sides = ("before", "after") if operator == "CP" else ("outside", "inside")
    half = 0.0 if operator == "CP" else 0.5 * float(change.duration)
    start, end = user_interval(estimator, int(change.column), float(change.location) - half,
                               float(change.location) + half)
    return Switch(
        operator=operator,
        column=int(change.column),
        side=sides[side == "second"],
        location=0.5 * (start + end),
        duration=None if operator == "CP" else end - start,
    )


def user_interval(estimator, column, start, end):
    """(start, end), positions on ``column`` of the inputs the GP saw, in the user's units: through the inverse
    of the estimator's input warping (``input_transformer_``), if it has one, else as they are."""
    transformer = getattr(estimator, "input_transformer_", None)
    if transformer is None:
        return start, end
    start, end = transformer.inverse_transform_column(column, np.array([start, end]))
    return float(start), float(end)


def user_ranges(estimator):
    """The range (max − min) of each training column in the user's units (dates in decimal years)."""
    return np.ptp(np.asarray(estimator.X_train_, dtype=float), axis=0)


def _is_white_noise(kernel):
    """Whether a term is white noise (possibly scaled): zero cross-covariance."""
    if isinstance(kernel, (WhiteNoise, sk.WhiteKernel)):
        return True
    if isinstance(kernel, sk.Product):
        return _is_white_noise(kernel.k1) or _is_white_noise(kernel.k2)
    if isinstance(kernel, (SwitchedKernel, sk.Exponentiation)):
        return _is_white_noise(kernel.kernel)
    return False


def decompose(estimator: Any, X: ArrayLike | None = None, *, target_class: Any = None) -> Decomposition:
    """Posterior mean and standard deviation of each additive component of a fitted model.

    Parameters
    ----------
    estimator : CompositionalGPRegressor, CompositionalGPClassifier or GaussianProcessRegressor
        A fitted estimator; scikit-learn's regressor too (e.g. the
        ``best_estimator_`` of :class:`~skgpsearch.KernelSearchCV`).
    X : array-like of shape (n_samples, n_features), default=None
        Where to evaluate the components; the training inputs by default.
    target_class : object, optional
        For a multi-class classifier, the class whose one-vs-rest latent
        function is decomposed (required then). For a binary classifier the
        latent function is that of ``classes_[1]``.

    Returns
    -------
    Decomposition
        The components ordered by the share of variance they explain on the
        training data; ``offset + sum(c.mean for c in components)`` equals
        ``estimator.predict(X)`` for a regressor and ``predict_latent(X)`` for
        a classifier that predict with one model. A model that predicts with a
        weighted mixture of structures (``model_weights_`` of more than one
        entry: the default ``selection="stacking"`` on tables, or
        ``model_averaging``) is decomposed by its first structure,
        ``structure_``, the one with the largest weight; its components then
        add up to that structure's posterior mean, which differs from the
        mixture's predictions by the other structures' share (``describe()``
        names the weights).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsearch import CompositionalGPRegressor
    >>> from skgpsearch.inspection import decompose
    >>> X = np.linspace(0, 10, 80)[:, None]
    >>> y = 0.5 * X[:, 0] + np.sin(2 * np.pi * X[:, 0])
    >>> model = CompositionalGPRegressor(base_kernels=("PER", "LIN"), max_depth=2, random_state=0).fit(X, y)
    >>> parts = decompose(model)
    >>> bool(np.allclose(parts.mean, model.predict(X)))
    True
    """
    view = explanation_view(estimator)
    if isinstance(view, ClassificationView):
        return _decompose_classifier(estimator, view, X, target_class)
    if target_class is not None:
        raise ValueError("target_class applies to classifiers only.")
    return _decompose_regressor(estimator, view, X)


def _inputs(estimator, X):
    """(``X``, ``X`` as the estimator's GP sees them, whether they are the training inputs); default: training inputs."""
    if X is None:
        return estimator.X_train_, gp_training_inputs(estimator), True
    X = validate_data(estimator, with_decimal_years(estimator, X, reset=False), reset=False, dtype=np.float64)
    if X.shape == estimator.X_train_.shape and np.array_equal(X, estimator.X_train_):
        return X, gp_training_inputs(estimator), True
    to_model = getattr(estimator, "_model_inputs", None)
    return X, (X if to_model is None else to_model(X)), False


def gp_training_inputs(estimator):
    """The training inputs as the estimator's GP saw them: after its input warping (``input_transformer_``), if any."""
    return getattr(estimator, "_gp_X_train", estimator.X_train_)


def _feature_names(estimator):
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def check_rows(X, y, caller):
    """A ``ValueError`` naming ``caller`` unless ``y`` holds one target value for each row of ``X``."""
    n_rows = X.shape[0] if hasattr(X, "shape") and len(X.shape) else len(X)
    shape = np.shape(y)
    if len(shape) != 1:
        raise ValueError(f"{caller} needs y as one target value per row of X (one dimension); got shape {shape}.")
    if shape[0] != n_rows:
        raise ValueError(f"{caller} needs one target value per row of X: X has {n_rows} rows, y has {shape[0]} "
                         "values. Pass the data the model was fitted on, or rows and targets that match.")


def numeric_inputs(estimator, X):
    """``X`` as a float array, its date columns in decimal years as the estimator measures them
    (``date_columns_``; see :func:`skgpsearch.datasets._dates.with_decimal_years`)."""
    return np.asarray(with_decimal_years(estimator, X, reset=False), dtype=float)


def axis_label(estimator, names, column):
    """A figure's label for input ``column``: its name, and for a date column its unit."""
    dated = column in (getattr(estimator, "date_columns_", None) or {})
    return f"{names[column]} (decimal years)" if dated else names[column]


def label_input_axis(ax, which, label):
    """Label axis ``which`` ("x" or "y") of a figure with an input's :func:`axis_label`; a date axis in decimal
    years gets plain tick labels (2020.05, where matplotlib writes 0.05 and an offset of "+2.02e3" on a span
    short against the year)."""
    getattr(ax, f"set_{which}label")(label)
    if label.endswith("(decimal years)"):
        try:
            ax.ticklabel_format(axis=which, style="plain", useOffset=False)
        except AttributeError:  # an axis without matplotlib's scalar tick labels keeps its own
            pass


def feature_names_of(estimator, feature_names=None):
    """Column names for text and figures: given ones, else ``feature_names_in_``, else ``x0``, ``x1``, ..."""
    if feature_names is not None:
        names = [str(n) for n in feature_names]
        if len(names) != estimator.n_features_in_:
            raise ValueError(f"feature_names has {len(names)} names for {estimator.n_features_in_} features.")
        return names
    return _feature_names(estimator) or [f"x{i}" for i in range(estimator.n_features_in_)]


def target_name_of(estimator, target_name=None):
    """The target's name for text and figures: the given one, else ``target_name_`` (the name of a pandas
    Series the model was fitted on), else None (the caller's generic wording)."""
    return target_name if target_name is not None else getattr(estimator, "target_name_", None)


def structure_text(estimator, names):
    """The chosen structure in the text notation (one per class for a multi-class classifier)."""
    structure = estimator.structure_
    if isinstance(structure, list):
        return "; ".join(f"class {c}: {s.to_string(names)}" for c, s in zip(estimator.classes_, structure))
    return structure.to_string(names)


def _terms(kernel):
    """The non-white-noise additive terms of a kernel, and the white-noise ones."""
    terms, noise = [], []
    for term in additive_terms(kernel):
        (noise if _is_white_noise(term) else terms).append(term)
    return terms, noise


def _decompose_regressor(model, view: RegressionView, X):
    X_user, X, at_training = _inputs(model, X)
    posterior, scale, X_train = view.posterior, view.y_std, view.X_train
    terms, noise_terms = _terms(view.kernel)
    # a white-noise term times other factors (LIN * WN) has a variance that changes with the inputs
    white = sum((t.diag(X_train) for t in noise_terms), np.zeros(X_train.shape[0])) * scale**2
    # ... and a scikit-learn model's per-sample alpha is noise of its own per row
    per_row = white + view.noise_variance
    noise_range = None
    if per_row.max() > 1.01 * per_row.min():
        noise_range = (float(per_row.min()), float(per_row.max()))
    # the posterior's weights refer to the training inputs, or to a sparse model's inducing inputs
    on_training_inputs = X_train is gp_training_inputs(model)
    components = []
    for term in terms:
        if on_training_inputs:
            K_train = term(X_train, X_train)
            K_cross = K_train if at_training else term(X_train, X)
        else:
            K_train = term(gp_training_inputs(model), X_train)  # the component at the training inputs
            K_cross = K_train.T if at_training else term(X_train, X)
        train_mean = K_train @ posterior.alpha * scale
        mean = (K_cross.T @ posterior.alpha) * scale
        var = term.diag(X) - posterior.variance_reduction(K_cross)
        components.append(
            _component(model, term, mean, np.sqrt(np.maximum(var, 0.0)) * scale, _share(train_mean, view.target_variance))
        )
    decomposition = Decomposition(
        components=_ordered(components),
        offset=view.y_mean + posterior.mean * scale,
        X=X_user,
        task="regression",
        feature_names=_feature_names(model),
        noise_variance=float(per_row.mean()),
        noise_variance_range=noise_range,
        target_variance=view.target_variance,
    )
    if at_training:
        decomposition.residuals = view.y_train - decomposition.mean
    return decomposition


def _decompose_classifier(model, view: ClassificationView, X, target_class):
    classes = view.classes
    if len(view.latent_models) == 1:
        if target_class is not None and target_class not in classes:
            raise ValueError(f"target_class {target_class!r} is not a class of the model; classes: {classes}.")
        binary, target = view.latent_models[0], classes[1]
        if target_class is not None and target_class != target:
            raise ValueError(
                f"A binary classifier has one latent function, that of class {target!r} "
                f"(the other class's is its negative); pass target_class={target!r} or None."
            )
    else:
        if target_class is None:
            raise ValueError(
                f"A multi-class classifier has one latent function per class; pass target_class, one of {classes}."
            )
        if target_class not in classes:
            raise ValueError(f"target_class {target_class!r} is not a class of the model; classes: {classes}.")
        target = target_class
        binary = view.latent_models[classes.index(target_class)]
    X_user, X, at_training = _inputs(model, X)
    posterior, X_train = binary.posterior, binary.X_train_
    terms, _ = _terms(binary.kernel_)
    latent_var = float(np.var(posterior.predict_latent(X_train)))
    components = []
    for term in terms:
        K_train = term(X_train, X_train)
        train_mean = K_train @ posterior.weights
        K_cross = K_train if at_training else term(X_train, X)
        mean = K_cross.T @ posterior.weights
        std = np.sqrt(posterior.mode.latent_variance(K_cross, term.diag(X)))
        components.append(_component(model, term, mean, std, _share(train_mean, latent_var)))
    return Decomposition(
        components=_ordered(components),
        offset=float(binary.latent_mean_),
        X=X_user,
        task="classification",
        feature_names=_feature_names(model),
        target_variance=latent_var,
        target_class=target,
    )


def _share(train_mean, total_variance):
    return float(np.var(train_mean) / total_variance) if total_variance > 0 else 0.0


def _component(model, term, mean, std, share):
    inner, changes = _without_switches(term)
    switches = tuple(_switch(change, side, model) for change, side in changes)
    try:
        structure = from_kernel(inner, n_features=model.n_features_in_)
    except ValueError:
        # a scikit-learn kernel without a counterpart in the grammar: decomposed, not named
        structure = None
    if structure is None:
        columns = tuple(range(model.n_features_in_))
    else:
        columns = tuple(sorted(set(structure.columns) | {s.column for s in switches}))
    component = Component(
        structure=structure,
        label=str(inner),
        columns=columns,
        mean=mean,
        std=std,
        variance_share=share,
        kernel=term,
        switches=switches,
    )
    if structure is not None:
        # the label's positions are those of its switches, in the user's units
        component.label = component.to_string(_feature_names(model), user_ranges(model))
    return component


def _ordered(components):
    return sorted(components, key=lambda c: -c.variance_share)


def table_row(cells: Sequence[Any]) -> str:
    """One row of a markdown table; a ``|`` inside a cell (a column name, a class label) is escaped."""
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"
