"""Figures of a fitted model: components, the full fit, the search path.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state), so they work
headless and in reports; matplotlib is imported only when a function here is called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._search._progress import structure_label
from ..grammar import Base, Product, parse
from ._decompose import (axis_label, check_rows, decompose, feature_names_of, label_input_axis, numeric_inputs,
                         target_name_of)
from ._views import check_fitted_search_estimator

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_components", "plot_fit", "plot_search_path"]


def _figure(width=6.4, height=3.6):
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "Plotting needs matplotlib; install it with: pip install 'skgpsearch[plot]'"
        ) from None
    return Figure(figsize=(width, height), layout="constrained")


def _as_input(estimator, X):
    """Arrays as the estimator was fitted: a DataFrame with its column names if it had them."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return X
    import pandas as pd

    return pd.DataFrame(X, columns=names)


def _grid_along(X_train, columns, n_grid, extend=0.05, unpadded=()):
    """Inputs varying along ``columns`` over the training range, others at their medians; the range is
    extended by ``extend`` of it on both sides except on the ``unpadded`` columns."""
    low, high = X_train.min(axis=0), X_train.max(axis=0)
    pad = extend * (high - low)
    pad[list(unpadded)] = 0.0
    base = np.median(X_train, axis=0)
    axes = [np.linspace(low[c] - pad[c], high[c] + pad[c], n_grid) for c in columns]
    mesh = np.meshgrid(*axes, indexing="ij")
    grid = np.tile(base, (mesh[0].size, 1))
    for c, values in zip(columns, mesh):
        grid[:, c] = values.ravel()
    return grid, axes


def plot_components(
    estimator: Any,
    *,
    target_class: Any = None,
    n_grid: int = 200,
    max_components: int | None = None,
    feature_names: Sequence[str] | None = None,
    target_name: str | None = None,
) -> list[Figure]:
    """One figure per additive component of a fitted model.

    A component of one column is drawn as its posterior mean ± 2 standard
    deviations against that column, with the partial residuals of a regressor
    (targets minus every other component and the offset); a component of two
    columns as a contour plot of its mean with the training inputs; a component
    of more columns as its mean at the training inputs against each column.

    Parameters
    ----------
    estimator : fitted CompositionalGPRegressor or CompositionalGPClassifier
    target_class : object, optional
        For a multi-class classifier, whose latent function to show.
    n_grid : int, default=200
        Grid points of the one-column curves.
    max_components : int, optional
        Show only the largest components (by share of variance).
    feature_names : sequence of str, optional
        Column names for the labels; by default ``feature_names_in_``, else ``x0``, ``x1``, ...
    target_name : str, optional
        Name of a regressor's target for the axis labels; by default ``target_name_`` (a model fitted on a
        named pandas Series), else "target".

    Returns
    -------
    list of matplotlib.figure.Figure
    """
    check_fitted_search_estimator(estimator, "plot_components")
    names = feature_names_of(estimator, feature_names)
    X_train = estimator.X_train_
    training = decompose(estimator, target_class=target_class)
    on_grid = {}  # components on the same columns share one grid and one decomposition

    # a column warped by a power transform is drawn over its data only: 5 % beyond them in its units can be
    # many lengthscales in the GP's (or outside the column's domain, below 0 for a positive one)
    transformer = getattr(estimator, "input_transformer_", None)
    warped = [] if transformer is None else np.flatnonzero(transformer.lambdas_ != 1.0)

    def at_grid(columns, size):
        if columns not in on_grid:
            grid, axes = _grid_along(X_train, columns, size, unpadded=warped)
            on_grid[columns] = axes, decompose(estimator, _as_input(estimator, grid), target_class=target_class)
        return on_grid[columns]

    figures = []
    for index, component in enumerate(training.components[:max_components]):
        label = component.to_string(names, np.ptp(X_train, axis=0))
        title = f"{label}  ({100 * component.variance_share:.3g} % of the variance)"
        unit = "latent f" if training.task == "classification" else f"component of {target_name_of(estimator, target_name) or 'the target'}"
        columns = component.columns
        if len(columns) == 1:
            fig = _figure()
            ax = fig.add_subplot()
            (axis,), parts = at_grid(columns, n_grid)
            part = parts[index]
            ax.fill_between(axis, part.mean - 2 * part.std, part.mean + 2 * part.std, alpha=0.25,
                            label="± 2 sd")
            ax.plot(axis, part.mean, lw=2, label="posterior mean")
            if training.residuals is not None:
                ax.scatter(X_train[:, columns[0]], component.mean + training.residuals, s=6, c="k", alpha=0.5,
                           label="partial residuals")
            else:
                ax.plot(X_train[:, columns[0]], np.full(len(X_train), ax.get_ylim()[0]), "|", c="k", alpha=0.4)
            label_input_axis(ax, "x", axis_label(estimator, names, columns[0]))
            ax.set_ylabel(unit)
            ax.legend(loc="best", fontsize="small")
        elif len(columns) == 2:
            fig = _figure(5.6, 4.4)
            ax = fig.add_subplot()
            (a, b), parts = at_grid(columns, 50)
            part = parts[index]
            values = part.mean.reshape(len(a), len(b)).T
            norm = None
            if values.min() < 0 < values.max():
                from matplotlib.colors import TwoSlopeNorm

                # white at zero: the sign of a component is what it adds or takes away
                norm = TwoSlopeNorm(vcenter=0.0, vmin=values.min(), vmax=values.max())
            contour = ax.contourf(a, b, values, levels=15, cmap="RdBu_r", norm=norm)
            fig.colorbar(contour, ax=ax, label=unit)
            ax.scatter(X_train[:, columns[0]], X_train[:, columns[1]], s=5, c="k", alpha=0.4)
            label_input_axis(ax, "x", axis_label(estimator, names, columns[0]))
            label_input_axis(ax, "y", axis_label(estimator, names, columns[1]))
        elif not columns:
            # a constant (the classifier's base rate, or a C term): the same value at every input
            fig = _figure()
            ax = fig.add_subplot()
            ax.axhline(float(np.mean(component.mean)), lw=2, label="posterior mean (the same at every input)")
            ax.set_xticks([])
            ax.set_xlabel("no input: a constant")
            ax.set_ylabel(unit)
            ax.legend(loc="best", fontsize="small")
        else:
            fig = _figure(3.2 * len(columns), 3.4)
            axes = fig.subplots(1, len(columns), sharey=True)
            for ax, c in zip(axes, columns):
                ax.scatter(X_train[:, c], component.mean, s=6, alpha=0.6)
                label_input_axis(ax, "x", axis_label(estimator, names, c))
            axes[0].set_ylabel(f"{unit} at the training inputs")
        fig.suptitle(title, fontsize="medium")
        figures.append(fig)
    return figures


def plot_fit(
    estimator: Any,
    X: ArrayLike | None = None,
    y: ArrayLike | None = None,
    *,
    n_grid: int = 400,
    feature_names: Sequence[str] | None = None,
    target_name: str | None = None,
) -> Figure:
    """The full fit with the data.

    Regression with one input: the training data, the posterior mean with its
    95 % band (including the noise), and ``(X, y)`` if given (e.g. held-out or
    future points, which extend the plotted range). Regression with several
    inputs: predicted against observed values. Classification: a reliability
    diagram (predicted probability against observed frequency, in deciles).

    Parameters
    ----------
    estimator : fitted CompositionalGPRegressor or CompositionalGPClassifier
    X, y : array-like, optional
        Extra data to show (the training data are always shown).
    n_grid : int, default=400
    feature_names : sequence of str, optional
    target_name : str, optional
        Name of a regressor's target for the axis labels; by default ``target_name_`` (a model fitted on a
        named pandas Series), else "target".

    Returns
    -------
    matplotlib.figure.Figure
    """
    check_fitted_search_estimator(estimator, "plot_fit")
    if (X is None) != (y is None):
        raise ValueError("plot_fit shows extra data as (X, y) pairs: pass both X and y, or neither.")
    if X is not None:
        check_rows(X, y, "plot_fit")
    names = feature_names_of(estimator, feature_names)
    X_train = estimator.X_train_
    fig = _figure()
    ax = fig.add_subplot()
    if hasattr(estimator, "classes_"):
        return _reliability(estimator, X, y, fig, ax)
    y_train = estimator.y_train_
    target = target_name_of(estimator, target_name) or "target"
    if X_train.shape[1] == 1:
        low, high = X_train[:, 0].min(), X_train[:, 0].max()
        if X is not None:
            X_extra = numeric_inputs(estimator, X).reshape(-1, 1)
            low, high = min(low, X_extra.min()), max(high, X_extra.max())
        grid = np.linspace(low, high, n_grid)[:, None]
        mean, band = _predictive_half_width(estimator, _as_input(estimator, grid))
        ax.fill_between(grid[:, 0], mean - band, mean + band, alpha=0.25, label="95 % predictive band")
        ax.plot(grid[:, 0], mean, lw=1.5, label="posterior mean")
        ax.scatter(X_train[:, 0], y_train, s=5, c="k", label="training data")
        if X is not None and y is not None:
            ax.scatter(numeric_inputs(estimator, X).ravel(), y, s=8, c="C3", label="other data")
        label_input_axis(ax, "x", axis_label(estimator, names, 0))
        ax.set_ylabel(target)
    else:
        mean, std = estimator.predict(_as_input(estimator, X_train), return_std=True, include_noise=False)
        ax.errorbar(y_train, mean, yerr=2 * std, fmt="o", ms=3, alpha=0.5, label="training data")
        if X is not None and y is not None:
            m, s = estimator.predict(X, return_std=True, include_noise=False)
            ax.errorbar(y, m, yerr=2 * s, fmt="o", ms=3, c="C3", alpha=0.6, label="other data")
        lims = [min(ax.get_xlim()[0], ax.get_ylim()[0]), max(ax.get_xlim()[1], ax.get_ylim()[1])]
        ax.plot(lims, lims, "k--", lw=1)
        ax.set_xlabel(f"observed {target}")
        ax.set_ylabel(f"predicted {target} (± 2 sd)")
    ax.legend(loc="best", fontsize="small")
    ax.set_title(f"Fit of {estimator.structure_.to_string(names)}", fontsize="medium")
    return fig


def _reliability(estimator, X, y, fig, ax):
    sets = [("training data", _as_input(estimator, estimator.X_train_), estimator.y_train_)]
    if X is not None and y is not None:
        sets.append(("other data", X, np.asarray(y)))
    for label, inputs, labels in sets:
        proba = estimator.predict_proba(inputs)
        # the predicted probability of the class each row is predicted to be, against being right
        confidence = proba.max(axis=1)
        correct = estimator.classes_[proba.argmax(axis=1)] == labels
        edges = np.unique(np.quantile(confidence, np.linspace(0, 1, 11)))
        which = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, len(edges) - 2)
        centres = [confidence[which == b].mean() for b in range(len(edges) - 1) if np.any(which == b)]
        rates = [correct[which == b].mean() for b in range(len(edges) - 1) if np.any(which == b)]
        ax.plot(centres, rates, "o-", label=label)
    ax.plot([0, 1], [0, 1], "k--", lw=1)
    ax.set_xlabel("predicted probability of the predicted class")
    ax.set_ylabel("observed accuracy")
    ax.set_title("Calibration (deciles of confidence)", fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    return fig


def plot_search_path(estimator: Any, *, feature_names: Sequence[str] | None = None) -> Figure:
    """The search: every candidate's criterion per depth and the best structure of each level.

    Parameters
    ----------
    estimator : fitted CompositionalGPRegressor or CompositionalGPClassifier
    feature_names : sequence of str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    check_fitted_search_estimator(estimator, "plot_search_path")
    results = estimator.search_results_
    fig = _figure(7.0, 4.0)
    ax = fig.add_subplot()
    values = np.asarray(results["criterion"], dtype=float)
    depths = np.asarray(results["depth"], dtype=float)
    # the baselines are fitted beside the search, not at a depth of it: drawn apart, left of the first depth
    baseline = np.asarray(results.get("baseline", [False] * len(values)), dtype=bool)
    ok = np.isfinite(values) & ~baseline
    ax.scatter(depths[ok], values[ok], s=10, c="0.6", label="candidates")
    classes = results.get("class")
    groups = [None] if classes is None else list(dict.fromkeys(classes))
    for group in groups:
        levels = [lv for lv in estimator.search_path_ if group is None or lv.get("class") == group]
        x = [lv["depth"] for lv in levels]
        best = [lv["best_criterion"] for lv in levels]
        ax.plot(x, best, "o-", label="best per depth" if group is None else f"class {group}: best per depth")
        middle = (min(depths[ok]) + max(depths[ok])) / 2 if ok.any() else 0.0
        for depth, value, level in zip(x, best, levels):
            if level["best_structure"] is None:
                continue
            text = parse(level["best_structure"]).to_string(feature_names_of(estimator, feature_names))
            # labels right of the middle run leftwards, so the last depth's label stays inside the figure
            right_half = depth > middle
            ax.annotate(text, (depth, value), textcoords="offset points", xytext=(-4 if right_half else 4, 4),
                        ha="right" if right_half else "left", fontsize="x-small")
    ticks = sorted({int(d) for d in depths[ok]})
    shown = baseline & np.isfinite(values)
    if shown.any():
        apart = (min(ticks) if ticks else 1) - 1
        ax.scatter(np.full(shown.sum(), apart), values[shown], s=28, marker="D", c="tab:orange",
                   label="baselines (beside the search)")
        names = feature_names_of(estimator, feature_names)
        for value, structure in zip(values[shown], np.asarray(results["structure"], dtype=object)[shown]):
            ax.annotate(_baseline_name(parse(structure), names), (apart, value),
                        textcoords="offset points", xytext=(6, 3), ha="left", fontsize="x-small")
        ax.set_xticks([apart] + ticks, ["baselines"] + [str(t) for t in ticks])
    else:
        ax.set_xticks(ticks)
    ax.set_xlabel("depth")
    criterion = estimator.criterion if isinstance(estimator.criterion, str) else "criterion"
    ax.set_ylabel(f"{criterion} (higher is better)")
    ax.legend(loc="best", fontsize="small")
    ax.set_title("Structure search", fontsize="medium")
    return fig


def _baseline_name(structure, names):
    """A baseline's name by its shape ("ARD SE", "additive SE", "isotropic SE", "LIN"), else its text."""
    leaves = structure.leaves
    kinds = {leaf.kind.name for leaf in leaves}
    if len(kinds) == 1 and len(leaves) > 1 and all(len(leaf.columns) == 1 for leaf in leaves):
        return f"{'ARD' if isinstance(structure, Product) else 'additive'} {kinds.pop()}"
    if isinstance(structure, Base) and len(structure.columns) > 1:
        return f"{'' if structure.kind.name == 'LIN' else 'isotropic '}{structure.kind.name}"
    return structure_label(structure, names)


def _predictive_half_width(estimator, X):
    """The predictive mean at ``X`` and the half-width of the 95 % band of a new observation there.

    Gaussian noise: twice the std of a new observation (a model average's models each with their
    own noise). Student-t noise has no useful variance for small ν; its 97.5 % quantile q_ν σ
    stands in for the noise's 2σ: 2 √(std² + (q_ν σ / 2)²), std the latent f's.
    """
    nu = getattr(estimator, "degrees_of_freedom_", None)
    if nu is None:
        mean, std = estimator.predict(X, return_std=True)
        return mean, 2 * std
    from scipy.stats import t as student_t

    mean, std = estimator.predict(X, return_std=True, include_noise=False)
    half_quantile = 0.5 * float(student_t.ppf(0.975, nu)) * estimator.noise_scale_
    return mean, 2 * np.sqrt(std**2 + half_quantile**2)
