"""Plain-language description of a fitted structure.

Each additive component (see :func:`decompose`) becomes one sentence built from its
factors: the base kernels on one column read as a function of that column (a
periodic kernel is the head, stationary and linear factors modulate it), factors on
different columns read as an interaction. The text works for any structure the
grammars produce; unfamiliar combinations fall back to naming the factors.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._engine._likelihoods import student_t_outliers
from .._search._classification import BinaryClassificationModelFitter
from .._search._diagnostics import advice_for, grouped_findings
from .._search._progress import structure_label
from .._search._pipeline import (COMPOSITE_MARGIN_SE, CROSS_VALIDATION_FOLDS, EARLIER_FORECAST_WIDENING_CAP,
                                 FORECAST_FRACTION, LATE_CHANGE_WIDENING_CAP, LOO_OPTIMISM_PER_HYPERPARAMETER,
                                 TREND_VARIANT_MESSAGE)
from .._search._regression import RegressionModelFitter
from ..grammar import Base, Change, Expr, Product, Sum, parse, random_walk_with_drift
from ..grammar._grammars import RANDOM_WALK_KIND
from ._decompose import (decompose, feature_names_of, gp_training_inputs, position, target_name_of, user_interval,
                         user_ranges)
from ._views import ClassificationView, explanation_view

__all__ = ["ard_relevances", "describe"]

#: A column whose ARD relevance (range / lengthscale) is below this -- a lengthscale more than
#: five times the column's range, the threshold at which a factor reads as "nearly linear or constant" --
#: is called at most nearly linear (effectively irrelevant, or a linear effect).
IRRELEVANT_RELEVANCE = 0.2


def _is_constant(factor):
    return isinstance(factor, Base) and factor.kind.constant


def describe(estimator: Any, feature_names: Sequence[str] | None = None, target_name: str | None = None) -> str:
    """Describe a fitted model in plain language, one sentence per component.

    Parameters
    ----------
    estimator : CompositionalGPRegressor, CompositionalGPClassifier or GaussianProcessRegressor
        A fitted estimator (scikit-learn's regressor, e.g. the ``best_estimator_``
        of :class:`~skgpsearch.KernelSearchCV`, gets no search summary).
    feature_names : sequence of str, optional
        Column names; by default ``feature_names_in_`` (set when the model was
        fitted on a DataFrame), else ``x0``, ``x1``, ...
    target_name : str, optional
        Name of the target for the text; by default ``target_name_`` (set when
        the model was fitted on a named pandas Series), else "the target".

    Returns
    -------
    str
        The chosen structure, one line per additive component (largest share of
        variance first), the noise level or likelihood, and what the search compared.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsearch import CompositionalGPRegressor
    >>> from skgpsearch.inspection import describe
    >>> X = np.linspace(0, 10, 80)[:, None]
    >>> y = 0.5 * X[:, 0] + np.sin(2 * np.pi * X[:, 0])  # no noise: the model interpolates
    >>> model = CompositionalGPRegressor(base_kernels=("PER", "LIN"), max_depth=2, random_state=0).fit(X, y)
    >>> print(describe(model, feature_names=["t"]))  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
    Structure: PER(t) + LIN(t)
    <BLANKLINE>
    - A linear trend in `t` explains 86 % of the variance of the target (its posterior mean has
      standard deviation ≈ 1.46).
    - A periodic component in `t` with period ≈ 1 and a nearly sinusoidal shape explains 20 % of
      the variance of the target (its posterior mean has standard deviation ≈ 0.703).
    - The shares add up to 106 %, while the whole model's mean explains 100 % of the variance of the
      target: each share counts one component alone, and over these data the components partly
      cancel each other (negative covariances).
    - The remaining noise has standard deviation ≈ 0.00158 (under 0.01 % of the variance).
    - Units: the values above are in the target's units. The fitted `kernel_` is that of the ...
    - Caution: the noise variance is at its lower bound: the model may be interpolating noise. For
      predictions: they reproduce the training rows and may wiggle between them, ... it is expected.
    <BLANKLINE>
    The greedy search compared ... candidate structures up to depth 2 (max_depth=2) under the
    criterion bic and stopped: max_depth reached.
    <BLANKLINE>
    The final model was chosen among ... finalists by how well each, refitted on the first 85 % of
    the series, forecasts its last 12 rows (...):
    - PER(t) + LIN(t): ... per row, criterion ... -- chosen
    ...
    """
    view = explanation_view(estimator)
    names = feature_names_of(estimator, feature_names)
    ranges = np.ptp(gp_training_inputs(estimator), axis=0)
    positions = user_ranges(estimator)  # changes are told in the user's units, lengthscales in the GP's
    target = target_name_of(estimator, target_name) or "the target"
    if isinstance(view, ClassificationView):
        classes = view.classes
        if len(classes) == 2:
            latent = view.latent_models[0]
            blocks = [_describe_latent(estimator, view, None, names, ranges, classes[1])
                      + _finalist_text(estimator, names, latent.X_train_.shape[0], latent.structure_)]
        else:
            blocks = [
                f"Class '{c}' versus the rest:\n" + _describe_latent(estimator, view, c, names, ranges, c)
                + _finalist_text(estimator, names, latent.X_train_.shape[0], latent.structure_, c)
                for c, latent in zip(classes, view.latent_models)
            ]
        cautions = _date_lines(estimator, names) + _warping_lines(estimator, names) + _diagnostic_lines(estimator, names)
        return "\n\n".join(blocks + (["\n".join(cautions)] if cautions else []) + [_search_summary(estimator, names)])
    parts = decompose(estimator)
    if hasattr(estimator, "structure_"):
        lines = [f"Structure: {estimator.structure_.to_string(names)}", ""]
    else:
        lines = [f"Kernel: {estimator.kernel_}", ""]
    if getattr(estimator, "degrees_of_freedom_", None) is not None:
        # Student-t noise: the shares are of the targets' variance without their gross outliers
        target += " without its gross outliers"
    for component in parts:
        lines.append(
            f"- {_capitalise(_component_phrase(component, names, ranges, _dates(estimator), positions))} explains "
            f"{_percent(component.variance_share)} of the variance of {target} "
            f"(its posterior mean has standard deviation ≈ {_num(np.std(component.mean))})."
        )
    lines += _shares_line(parts, target)
    lines += _ard_lines(getattr(estimator, "structure_", None), names, ranges)
    if hasattr(estimator, "structure_"):
        lines += _change_lines(estimator.structure_, names, estimator, _dates(estimator))
    lines.append(_noise_line(estimator, parts))
    lines += _units_line(estimator)
    lines += _date_lines(estimator, names)
    lines += _warping_lines(estimator, names)
    lines += _diagnostic_lines(estimator, names)
    weights = getattr(estimator, "model_weights_", None)
    if weights is not None and len(weights) > 1:
        models = ", ".join(
            f"{structure.to_string(names)} ({_percent(w)})"
            for structure, w in zip(estimator.averaged_structures_, weights)
        )
        how = _WEIGHTING.get(getattr(estimator, "selection_", "criterion"), _WEIGHTING["criterion"])
        if held_out_column(getattr(estimator, "finalists_", None) or {}) == "cv_log_density":
            how = how.replace("leave-one-out", "cross-validated")
        lines.append(
            f"- Predictions average {len(weights)} structures, weighted by {how}; "
            f"the components above are those of the first: {models}."
        )
    if not hasattr(estimator, "search_results_"):
        return "\n".join(lines)
    finalists = _finalist_text(estimator, names, len(estimator.y_train_), estimator.structure_)
    return "\n".join(lines + ["", _search_summary(estimator, names)]) + finalists


#: How averaged structures are weighted, per rule of the select stage.
_WEIGHTING = {
    "criterion": "exp(criterion − best criterion)",
    "loo": "exp(leave-one-out log density − best)",
    "stacking": "stacking of their leave-one-out predictive densities",
    "forecast": "exp(forecast log density − best)",
}


def held_out_column(table):
    """The column of a ``finalists_`` table that holds the held-out score the select stage judged by."""
    for column in ("forecast_log_density", "cv_log_density"):
        # (tables of models pickled before a column existed have none)
        if any(v is not None for v in table.get(column, ())):
            return column
    return "loo_log_density"


def finalist_label(table, i, names=None):
    """Row ``i`` of a ``finalists_`` table in words: its structure, and where it came from if not the search."""
    origin = (" (baseline)" if table["baseline"][i]
              else " (trend variant, fitted after the search)" if _is_trend_variant(table, i)
              else " (held back: not clearly better than the best baseline)" if _is_held_back(table, i) else "")
    return structure_label(parse(table["structure"][i]), names) + origin


def _is_trend_variant(table, i):
    # (tables of models pickled before the column existed have none)
    return bool(table.get("trend_variant") and table["trend_variant"][i])


def _is_held_back(table, i):
    return bool(table.get("held_back") and table["held_back"][i])


def _finalist_text(estimator, names, n_rows, chosen, target_class=None):
    """The finalists the select stage judged by held-out prediction, and why the chosen one won ('' if none); where
    the criterion chose on a series (a change within its latest rows), how the spread beyond the series widened."""
    text = _judged_finalist_text(estimator, names, n_rows, chosen, target_class)
    if getattr(estimator, "selection_", None) == "criterion":
        text += "".join(f"\n\n{line}" for line in _calibration_lines(estimator))
    return text


def _judged_finalist_text(estimator, names, n_rows, chosen, target_class=None):
    """The finalists the select stage judged by held-out prediction, and why the chosen one won ('' if none)."""
    table = getattr(estimator, "finalists_", None)
    if not table:
        return ""
    rows = [i for i in range(len(table["structure"]))
            if target_class is None or "class" not in table or table["class"][i] == target_class]
    column = held_out_column(table)
    forecast = column == "forecast_log_density"
    rows = [i for i in rows if table[column][i] is not None]
    if len(rows) == 1 and forecast:
        return "".join(f"\n\n{line}" for line in _calibration_lines(estimator))  # a lone structure, calibrated
    if len(rows) < 2:
        return ""
    rows.sort(key=lambda i: (-table["weight"][i], -table[column][i]))
    if forecast:
        n_rows = max(1, int(round(FORECAST_FRACTION * n_rows)))
        lines = [f"The final model was chosen among {len(rows)} finalists by how well each, refitted on the first "
                 f"{100 * (1 - FORECAST_FRACTION):.0f} % of the series, forecasts its last {n_rows} rows (log "
                 "density per forecast row, greater is better; the search's criterion beside it):"]
    elif column == "cv_log_density":
        lines = [f"The final model was chosen among {len(rows)} finalists by how well each, refitted on "
                 f"{CROSS_VALIDATION_FOLDS - 1} of {CROSS_VALIDATION_FOLDS} parts of the training rows, predicts the "
                 "part left out (cross-validated log density per row, greater is better; the search's criterion "
                 "beside it). On a table this small the leave-one-out densities at hyperparameters fitted on every "
                 "row would flatter the most flexible models:"]
    else:
        lines = [f"The final model was chosen among {len(rows)} finalists by how well each predicts every "
                 "training row from the others (leave-one-out log density per row, greater is better; the "
                 "search's criterion beside it):"]
    for i in rows:
        weight = table["weight"][i]
        note = (" -- chosen" if weight == 1.0 else f" -- weight {_percent(weight)}") if weight > 0 else ""
        lines.append(f"- {finalist_label(table, i, names)}: "
                     f"{_num(table[column][i] / n_rows)} per row, criterion {_num(table['criterion'][i])}"
                     f"{note}")
    model_fitter = BinaryClassificationModelFitter if hasattr(estimator, "classes_") else RegressionModelFitter
    if (getattr(estimator, "selection_", None) == "stacking" and model_fitter.discounts_loo_optimism
            and column == "loo_log_density"):
        lines.append(f"The stacking weights count {_num(LOO_OPTIMISM_PER_HYPERPARAMETER)} nat per hyperparameter "
                     "against each finalist: its hyperparameters were fitted on these same rows, which flatters "
                     "its leave-one-out densities.")
    chosen_row = rows[0]
    held_back = sum(_is_held_back(table, i) for i in rows)
    judged_by = "cross-validated" if column == "cv_log_density" else "leave-one-out"
    if held_back:
        lines.append(f"{held_back} structure{'s' if held_back > 1 else ''} of the search "
                     f"{'were' if held_back > 1 else 'was'} held back: none beat the best baseline's {judged_by} "
                     f"log density by more than {_num(COMPOSITE_MARGIN_SE)} standard error of the difference, which "
                     "the best of many structures chosen on these same rows gains by chance.")
    if table["baseline"][chosen_row]:
        composite = [i for i in rows if not table["baseline"][i]]
        what = ("One ARD kernel (an SE over all columns, one lengthscale each)" if isinstance(chosen, Product)
                else "The random walk with drift (a linear trend plus a Matérn 1/2 process: the forecast starts "
                     "at the last level and keeps the trend's slope)"
                if chosen.without_values() == random_walk_with_drift(0)
                else "The additive kernel (one SE per column)" if isinstance(chosen, Sum)
                else "One isotropic kernel (an SE over all columns, one lengthscale for all)"
                if len(chosen.columns) > 1 and chosen.name == "SE"
                else "The linear model (one linear kernel over all columns)" if len(chosen.columns) > 1
                else "The plain smooth model (one SE kernel)")
        if composite and forecast:
            lines.append(f"{what} forecast the series' end better than every structure of the search.")
        elif composite and table["weight"][chosen_row] < 1.0:
            lines.append(f"{what} carries the largest weight in the stacked prediction, above every composite "
                         "structure of the search.")
        elif composite and held_back:
            lines.append(f"{what} was chosen: no composite structure of the search predicted held-out rows "
                         "clearly better.")
        elif composite:
            lines.append(f"{what} predicted held-out rows better than every composite structure of the search.")
    elif forecast and _is_trend_variant(table, chosen_row):
        lines.append("The chosen structure is a finalist of the search plus a linear trend, added after the search: "
                     "a greedy search seldom adds a straight trend once its terms explain the training range, but "
                     "beyond that range only a straight trend keeps its direction, and this one forecast the "
                     "series' end best.")
    if forecast:
        lines += _calibration_lines(estimator)
    return "\n\n" + "\n".join(lines)


def _calibration_lines(estimator):
    """How much the forecasts of the series' end widened the spread beyond the series ([] when they did not)."""
    scale = getattr(estimator, "forecast_variance_scale_", 1.0)
    if scale <= 1.0:
        return []
    if getattr(estimator, "selection_", None) == "criterion":
        return [f"The chosen structure changes within the series' last {100 * FORECAST_FRACTION:.0f} %, so it was "
                "chosen by the criterion, not by a forecast of those rows from the earlier ones, which cannot place "
                "the change. That forecast still measures how far the series strays from such a model's band: it "
                "erred by more than the model's predictive standard deviations, so predictions beyond the series' "
                f"last time widen its spread {_num(math.sqrt(scale))}-fold (at most "
                f"{_num(math.sqrt(LATE_CHANGE_WIDENING_CAP))}-fold: its errors include the change itself)."]
    share = 100 * FORECAST_FRACTION
    return [f"Refitted on the start of the series, the chosen structure forecast its last {share:.0f} % (from the "
            f"first {100 - share:.0f} %) and the {share:.0f} % before them (from the first {100 - 2 * share:.0f} %); "
            f"the larger error was {_num(math.sqrt(scale))} of its predictive standard deviations (root mean square; "
            "1 would be calibrated; the earlier forecast's counted up to "
            f"{_num(math.sqrt(EARLIER_FORECAST_WIDENING_CAP))}), so predictions beyond the series' last time widen "
            f"its spread {_num(math.sqrt(scale))}-fold."]


def _dates(estimator):
    """``{column: years per unit of the column as the GP saw it}`` for the estimator's date columns
    (``date_columns_``, in decimal years) whose lengths can be told as durations.

    Warped inputs (``input_transformer_``) are standardised first: a date column only standardised (exponent 1)
    is years times a factor, so its periods and lengthscales are durations once multiplied by it; one warped by
    a power transform has no such factor, and its lengths stay in the warped units, as every warped column's.
    """
    columns = getattr(estimator, "date_columns_", None) or ()
    transformer = getattr(estimator, "input_transformer_", None)
    if transformer is None:
        return {c: 1.0 for c in columns}
    return {c: float(transformer.spread_[c] * transformer.scale_[c]) for c in columns
            if transformer.lambdas_[c] == 1.0}


def _component_phrase(component, names, ranges, dates=None, positions=None):
    """``ranges``: each column's range as the GP saw it (for lengthscales); ``positions``: in the user's units
    (for the switches' positions; default ``ranges``)."""
    if component.structure is None:
        return f"a component with the kernel {component.label}"
    phrase = describe_term(component.structure, names, ranges, dates)
    if component.switches:
        # the region first: the term's own phrase can be long
        spreads = ranges if positions is None else positions
        phrase = " and ".join(_region_phrase(switch, names, spreads) for switch in component.switches) + ", " + phrase
    return phrase


def _region_phrase(switch, names, ranges):
    """Where one side of a change is active, in words: "until ≈ 1978 in `year`" (``ranges``: the columns' ranges
    in the switch's units)."""
    var = _name(switch.column, names)
    start, end = (position(v, _spread((switch.column,), ranges)) for v in switch.bounds)
    return {
        "before": f"until ≈ {start} in {var}",
        "after": f"from ≈ {start} in {var} on",
        "inside": f"between ≈ {start} and {end} in {var}",
        "outside": f"outside ≈ {start}–{end} in {var}",
    }[switch.side]


def _diagnostic_lines(estimator, names):
    """One caution per kind of degenerate feature of the fitted optimum (the estimator's ``diagnostics_``, the
    terms a finding holds for named together), with its advice."""
    return [f"- Caution: {_with_names(finding, names)}. {advice_for(finding)}"
            for finding in grouped_findings(getattr(estimator, "diagnostics_", None) or [])]


#: A kernel's column references in structure text: "SE(0" before ")" or "CP(2" before ",".
_COLUMN_REFERENCE = re.compile(r"\b([A-Z][A-Z0-9]*)\((\d+(?:, \d+)*)(?=[,)])")


def _with_names(text, names):
    """Structure text inside a sentence with column indices replaced by names ("SE(0)" → "SE(year)")."""
    return _COLUMN_REFERENCE.sub(
        lambda m: f"{m.group(1)}({', '.join(names[int(c)] for c in m.group(2).split(', '))}", text)


def ard_relevances(structure: Expr, ranges: Sequence[float] | np.ndarray) -> list[tuple[Expr, dict[int, float]]]:
    """ARD relevances of the columns of each product of stationary kernels over several columns.

    A product of distance-based kernels (SE, RQ, Matérn) on different columns is
    automatic relevance determination (Sahani 2015): one lengthscale per column, and
    evidence maximisation drives the lengthscale of a column that does not matter
    towards infinity. The relevance of column c in such a product is

        relevance_c = range_c / ℓ_c,

    the column's spread in the training data (max − min) divided by its lengthscale
    (the smallest one when several factors of the product act on c): roughly how many
    lengthscales the function can vary across the column's data. Below
    ``IRRELEVANT_RELEVANCE`` (0.2: ℓ_c more than five times the range) the kernel
    is nearly linear or constant along c: the column is effectively irrelevant, or has a
    linear effect (a long lengthscale with a large variance). Other factors
    of the product (linear, periodic, changes) are left out.

    Parameters
    ----------
    structure : Expr
        A fitted structure (its base kernels carry lengthscales).
    ranges : sequence of float
        The spread of each input column.

    Returns
    -------
    list of (Expr, dict)
        One entry per additive term (of the distributed form) with two or more
        distance-based factors spanning at least two columns: the term and
        ``{column: relevance}``. An isotropic kernel (one factor over several
        columns, one lengthscale for all) has none.
    """
    out = []
    for term in structure.sum_of_products():
        factors = term.operands if isinstance(term, Product) else (term,)
        lengthscales, n_factors = {}, 0
        for factor in factors:
            if not (isinstance(factor, Base) and factor.kind.distance_based):
                continue
            n_factors += 1
            value = float(factor.params.get("lengthscale", np.nan))
            for column in factor.columns:
                lengthscales[column] = min(lengthscales.get(column, np.inf), value)
        # one kernel over several columns shares one lengthscale (isotropic): it determines no relevance
        if (n_factors >= 2 and len(lengthscales) >= 2
                and all(np.isfinite(v) and v > 0 for v in lengthscales.values())):
            out.append((term, {c: float(ranges[c]) / v for c, v in sorted(lengthscales.items())}))
    return out


def _ard_lines(structure, names, ranges):
    """One sentence per product of stationary kernels over several columns: its ARD relevances."""
    if structure is None:
        return []
    lines = []
    for term, relevances in ard_relevances(structure, ranges):
        ranked = sorted(relevances, key=lambda c: -relevances[c])
        values = ", ".join(f"{_name(c, names)} {_num(relevances[c])}" for c in ranked)
        irrelevant = [_name(c, names) for c in ranked if relevances[c] < IRRELEVANT_RELEVANCE]
        verdict = (f"{_join(irrelevant)} {'is' if len(irrelevant) == 1 else 'are'} at most nearly linear "
                   "(lengthscale over 5 times the column's range: effectively irrelevant, or a linear effect)"
                   if irrelevant else "no column is effectively irrelevant")
        lines.append(f"- ARD relevances (column range / lengthscale) in {term.to_string(names)}: {values}; {verdict}.")
    return lines


def _date_lines(estimator, names):
    """Which input columns hold dates, measured in years (``date_columns_``), if any do, and in which units
    the fitted values on them are."""
    columns = sorted(getattr(estimator, "date_columns_", None) or {})
    if not columns:
        return []
    listed = ", ".join(f"`{names[j]}`" for j in columns)
    it = "it" if len(columns) == 1 else "them"
    durations = _dates(estimator)
    told = [j for j in columns if j in durations]
    if len(told) == len(columns):
        lengths = f"periods and lengthscales on {it} are given as durations"
    elif told:
        lengths = (f"periods and lengthscales on {', '.join(f'`{names[j]}`' for j in told)} are given as durations, "
                   "on the others in their warped units (see Inputs)")
    else:
        lengths = f"periods and lengthscales on {it} are in {'its' if it == 'it' else 'their'} warped units (see Inputs)"
    fitted = ("are in years" if getattr(estimator, "input_transformer_", None) is None
              else f"are on {it} as the GP saw {it}, standardised (see Inputs)")
    return [f"- Dates: {listed} {'holds dates' if len(columns) == 1 else 'hold dates'}, measured in decimal years "
            f"(2015.5 is the middle of 2015): above, {lengths} and change locations as decimal years; "
            f"the fitted values (`structure_`, `kernel_`) {fitted}."]


def _warping_lines(estimator, names):
    """Which input columns the estimator warped before its GP saw them (``input_transformer_``), if it did."""
    transformer = getattr(estimator, "input_transformer_", None)
    if transformer is None:
        return []
    text = transformer.describe(names)
    if _dates(estimator):
        text = text[:-1] + " (but on dates: see Dates)."
    return [f"- Inputs: {text}"]


def _units_line(estimator):
    """Which units ``kernel_`` speaks in, when it is not the target's (``normalize_y``)."""
    scale = getattr(estimator, "_y_train_std", 1.0)
    if not getattr(estimator, "normalize_y", False) or not hasattr(estimator, "kernel_") or scale == 1.0:
        return []
    return [f"- Units: the values above are in the target's units. The fitted `kernel_` is that of the standardised "
            f"target (the target divided by its scale {_num(scale)}, the standard deviation, or a robust scale "
            f"with Student-t noise): multiply its variances and "
            f"noise by {_num(scale ** 2)} to compare; lengthscales and periods are the same."]


def _shares_line(parts, of_what):
    """Why the components' variance shares do not add up to the share of the whole model, when they do not."""
    if len(parts) < 2 or parts.target_variance <= 0:
        return []
    total = sum(component.variance_share for component in parts)
    whole = float(np.var(parts.mean) / parts.target_variance)
    if total <= 1.005 and abs(total - whole) < 0.05:
        return []
    how = ("partly cancel each other (negative covariances)" if total > whole
           else "move together (positive covariances)")
    return [f"- The shares add up to {_percent(total)}, while the whole model's mean explains {_percent(whole)} of "
            f"the variance of {of_what}: each share counts one component alone, and over these data the "
            f"components {how}."]


def _change_lines(structure, names, estimator, dates=None):
    """One sentence per outermost changepoint or change window of the structure, its positions in the user's
    units (through the inverse of the estimator's input warping, if any). A change inside a side of another is
    told within that one's sentence (it had a sentence of its own too: the inner change of CP(CP(C, C), C) twice)."""
    spreads = user_ranges(estimator)
    return [f"- The structure changes: {_change_phrase(_in_user_units(node, estimator), names, spreads, dates)}."
            for node in _outermost_changes(structure)]


def _outermost_changes(expr):
    """The change nodes of ``expr`` that no other change node contains, depth-first."""
    if isinstance(expr, Change):
        return [expr]
    return [node for operand in expr.operands for node in _outermost_changes(operand)]


def _in_user_units(node, estimator):
    """The change ``node`` with its location (and a window's duration) in the user's units."""
    params = node.params
    if "location" not in params:
        return node
    half = 0.5 * params.get("duration", 0.0)
    start, end = user_interval(estimator, node.column, params["location"] - half, params["location"] + half)
    params["location"] = 0.5 * (start + end)
    if "duration" in params:
        params["duration"] = end - start
    return node.with_params(params)


def _describe_latent(model, view, target_class, names, ranges, positive):
    parts = decompose(model, target_class=target_class)
    positions = user_ranges(model)  # changes are told in the user's units
    binary = view.latent_models[view.classes.index(positive) if len(view.classes) > 2 else 0]
    lines = [f"Structure: {binary.structure_.to_string(names)}", ""]
    link_name = getattr(binary.likelihood, "link_name", binary.likelihood.name)
    for component in parts:
        lines.append(
            f"- {_capitalise(_component_phrase(component, names, ranges, _dates(model), positions))} accounts for "
            f"{_percent(component.variance_share)} of the variance of the latent function "
            f"(standard deviation ≈ {_num(np.std(component.mean))} on the {link_name} scale)."
        )
    lines += _shares_line(parts, "the latent function")
    lines += _change_lines(binary.structure_, names, model, _dates(model))
    lines += _ard_lines(binary.structure_, names, ranges)
    lik_theta = binary.lik_theta
    baseline = float(binary.likelihood.predict_proba(np.array([parts.offset]), np.array([0.0]), lik_theta)[0])
    mixed = " (mixed with the label noise below)" if link_name != binary.likelihood.name else ""
    link = (f"- The probability of class '{positive}' is the {link_name} link of the latent function{mixed}; its "
            f"constant mean {_num(parts.offset)}")
    if 0.01 <= baseline <= 0.99:
        lines.append(f"{link} alone gives a probability of {_percent(baseline)}.")
    else:
        # a mean far from 0 is offset by the components; its own probability (e.g. 1e-22) says nothing
        side = "below 1 %" if baseline < 0.01 else "above 99 %"
        lines.append(f"{link} alone would give a probability {side}; the components above move it back, so the "
                     "mean is a reference level, not a base rate.")
    base_rate = getattr(getattr(binary, "posterior", None), "base_rate", None)
    if base_rate is not None:
        lines.append(f"- Far from every training row the probability turns to the class's frequency in training, "
                     f"{_percent(base_rate)} (with one row of each class added).")
    rate = binary.likelihood_params_.get("outlier_rate")
    if rate is not None:
        # p(y | f) = ε/2 + (1 − ε) Φ(y f): a share ε of the labels is a coin flip, half of which lands wrong
        wrong = _percent(rate / 2)
        lines.append(f"- An estimated {_percent(rate)} of the training labels are treated as random (label noise, "
                     f"outliers): {'' if wrong.startswith('under') else 'about '}{wrong} on the wrong class.")
    return "\n".join(lines)


def describe_term(term, names, ranges=None, dates=None):
    """Phrase for one additive term (a base kernel or a product of base kernels; a sum is told term by term).

    ``ranges``: the spread (max − min) of each input column, to call a factor
    whose lengthscale far exceeds it nearly constant. ``dates``: the indices of
    date columns (in decimal years), whose periods and lengthscales are given as
    durations ("7 days", "1 year"), or ``{column: years per unit}`` for date
    columns the GP saw rescaled.
    """
    if isinstance(term, Sum) or (isinstance(term, Product) and any(isinstance(f, Sum) for f in term.operands)):
        # a scikit-learn kernel that reads as a sum (DotProduct: C + LIN) is one component of its model
        return " plus ".join(describe_term(t, names, ranges, dates) for t in term.sum_of_products())
    operands = term.operands if isinstance(term, Product) else (term,)
    factors = [f for f in operands if not _is_constant(f)]
    if not factors:
        return operands[0].kind.phrase
    changes = [f for f in factors if isinstance(f, Change)]
    if changes:
        others = [f for f in factors if not isinstance(f, Change)]
        phrase = " times ".join(_change_phrase(change, names, ranges, dates) for change in changes)
        if not others:
            return phrase
        rest = Product._make(others) if len(others) > 1 else others[0]
        return f"{phrase}, multiplied by {describe_term(rest, names, ranges, dates)}"
    noise = [f for f in factors if f.kind.white_noise]
    if noise:
        return noise[0].kind.phrase + ("" if len(factors) == 1 else " whose variance varies with the inputs")
    groups = {}
    for factor in factors:
        groups.setdefault(factor.columns, []).append(factor)
    if len(groups) == 1:
        columns, group = next(iter(groups.items()))
        return _function_of(group, _variables(columns, names), _spread(columns, ranges), _in_years(columns, dates))
    flat = {columns: group for columns, group in groups.items() if _nearly_constant(group, _spread(columns, ranges))}
    pieces = [_short_phrase(group, _variables(columns, names), _spread(columns, ranges), _in_years(columns, dates))
              for columns, group in groups.items() if columns not in flat]
    if len(flat) == 1:
        columns, group = next(iter(flat.items()))
        pieces.append(_short_phrase(group, _variables(columns, names), _spread(columns, ranges),
                                    _in_years(columns, dates)))
    elif flat:
        # an ARD product over many columns, most of them irrelevant: one piece for all of those
        scales = [float(group[0].params["lengthscale"]) for group in flat.values()]
        variables = _join([_variables(columns, names) for columns in flat])
        pieces.append(f"nearly linear or constant in {variables} (lengthscales ≈ {_num(min(scales))} to "
                      f"{_num(max(scales))}, "
                      "over 5 times each column's range)")
    every = [c for columns in groups for c in columns]
    return f"an interaction of {_join([_name(c, names) for c in every])} ({'; '.join(pieces)})"


def _change_phrase(node, names, ranges, dates=None):
    """Phrase for a changepoint or change window: where it happens and what each side is."""
    var = _name(node.column, names)
    first, second = (_side_phrase(op, names, ranges, dates) for op in node.operands)
    location = node.params.get("location", np.nan)
    spread = _spread((node.column,), ranges)

    def at(value):
        return position(value, spread)

    if first is None and second is None:
        if node.operator == "CP":
            return f"a constant level until ≈ {at(location)} in {var}, then another (a step)"
        half = 0.5 * node.params.get("duration", np.nan)
        return (f"a constant level, with another between ≈ {at(location - half)} and {at(location + half)} "
                f"in {var}")
    if node.operator == "CP":
        where = f"≈ {at(location)} in {var}"
        if second is None:
            return f"{first} until {where}, then a constant level"
        if first is None:
            return f"a constant level until {where}, then {second}"
        return f"{first} until {where}, changing to {second}"
    half = 0.5 * node.params.get("duration", np.nan)
    window = f"between ≈ {at(location - half)} and {at(location + half)} in {var}"
    if second is None:
        return f"{first}, except {window} where it is replaced by a constant level"
    if first is None:
        return f"{second} only {window} (a constant level outside)"
    return f"{first}, replaced {window} by {second}"


def _side_phrase(expr, names, ranges, dates=None):
    """Phrase for one side of a change (``None`` for a constant)."""
    terms = expr.sum_of_products()
    if all(_is_constant(t) for t in terms if not isinstance(t, Product)) and not any(isinstance(t, Product) for t in terms):
        return None
    return " plus ".join(describe_term(t, names, ranges, dates) for t in terms)


def _function_of(group, var, spread, in_years=None):
    periodic = [f for f in group if f.kind.periodic]
    linear = [f for f in group if f.kind.polynomial_degree]
    smooth = [f for f in group if f.kind.distance_based]
    length = _length_teller(in_years)
    if periodic:
        periods = ", ".join(length(f.params.get("period", np.nan)) for f in periodic)
        head = (
            f"{periodic[0].kind.phrase.format(var=var)} with period ≈ {periods}"
            if len(periodic) == 1
            else f"a product of periodic components in {var} with periods ≈ {periods}"
        )
        if len(periodic) == 1:
            head += _periodic_shape(periodic[0])
        modifiers = []
        if smooth:
            scales = ", ".join(length(f.params.get("lengthscale", np.nan)) for f in smooth)
            units = "" if in_years is not None else f" (in units of {var})"
            modifiers.append(f"whose shape and amplitude change smoothly over ≈ {scales}{units}")
        if linear:
            modifiers.append(f"whose amplitude {_growth(len(linear), var)}")
        return head + (" " + " and ".join(modifiers) if modifiers else "")
    if smooth:
        first = smooth[0]
        head = first.kind.phrase.format(var=var)
        scales = ", ".join(length(f.params.get("lengthscale", np.nan)) for f in smooth)
        detail = f"lengthscale{'s' if len(smooth) > 1 else ''} ≈ {scales}"
        if "alpha" in first.kind.parameters and len(smooth) == 1:
            detail += f", α ≈ {_num(first.params.get('alpha', np.nan))}"
        if len(smooth) == 1 and first.kind.name == RANDOM_WALK_KIND and not linear:
            # an Ornstein-Uhlenbeck process: a random walk on spans below its lengthscale, however long that is
            detail += (": over shorter spans it wanders like a random walk, and beyond the data its forecast starts "
                       "at the last level and returns to the mean over about that span")
        elif all(f.params.get("lengthscale", 0) > 5 * spread for f in smooth):
            detail += ", far beyond the data's range: nearly linear there"
        head += f" ({detail})"
        if linear:
            head += f" whose amplitude {_growth(len(linear), var)}"
        return head
    degree = len(linear)
    if degree == 1:
        return linear[0].kind.phrase.format(var=var)
    if degree == 2:
        return f"a quadratic function of {var}"
    return f"a polynomial of degree {degree} in {var}"


def _nearly_constant(group, spread):
    """Whether a product's factors on one set of columns are one stationary kernel with a lengthscale far beyond
    the data's spread there."""
    return (len(group) == 1 and group[0].kind.distance_based and not group[0].kind.periodic
            and group[0].params.get("lengthscale", 0) > 5 * spread)


def _short_phrase(group, var, spread, in_years=None):
    length = _length_teller(in_years)
    pieces = []
    for factor in group:
        short = factor.kind.short_phrase.format(var=var)
        if factor.kind.periodic:
            pieces.append(f"{short} with period ≈ {length(factor.params.get('period', np.nan))}")
        elif factor.kind.polynomial_degree:
            pieces.append(short)
        elif factor.kind.distance_based and factor.params.get("lengthscale", 0) > 5 * spread:
            # a lengthscale far beyond the data makes the factor a line there: with a large variance a steep one
            # (SE(dose) * PER(t), lengthscale 76 over a range of 4: a slope of 0.5, as planted), else a constant
            pieces.append(f"nearly linear or constant in {var} (lengthscale ≈ {length(factor.params['lengthscale'])})")
        elif factor.kind.distance_based:
            pieces.append(
                short
                + f" with lengthscale ≈ {length(factor.params.get('lengthscale', np.nan))}"
            )
        else:
            pieces.append(f"{factor.name} in {var}")
    return ", ".join(pieces)


def _spread(columns, ranges):
    if ranges is None:
        return np.inf
    return float(max(ranges[c] for c in columns))


def _periodic_shape(factor):
    # the periodic lengthscale is relative to the period: large means close to a sinusoid
    lengthscale = float(factor.params.get("lengthscale", np.nan))
    if not np.isfinite(lengthscale):
        return ""
    if lengthscale >= 1.5:
        return " and a nearly sinusoidal shape"
    if lengthscale < 0.5:
        return " and a sharp, strongly non-sinusoidal shape"
    return " and a smooth non-sinusoidal shape"


def _growth(degree, var):
    if degree == 1:
        return f"changes linearly with {var}"
    return f"changes like a polynomial of degree {degree} in {var}"


def _noise_line(estimator, parts):
    """The sentence on the noise: its level, or for Student-t noise its scale, tails and outliers."""
    nu = getattr(estimator, "degrees_of_freedom_", None)
    if nu is None:
        noise_sd = float(np.sqrt(parts.noise_variance))
        if parts.noise_variance_range is not None:
            low, high = np.sqrt(parts.noise_variance_range)
            alpha = getattr(estimator, "alpha", None)  # a scikit-learn model's per-sample noise
            how = ("differs from row to row (the model's per-sample alpha)" if np.ndim(alpha) == 1 and np.ptp(alpha) > 0
                   else "changes with the inputs (a white-noise term of the structure)")
            return (f"- The remaining noise {how}: its "
                    f"standard deviation ranges from ≈ {_num(low)} to ≈ {_num(high)} over the training rows "
                    f"({_percent(parts.noise_variance / parts.target_variance)} of the variance on average).")
        return (f"- The remaining noise has standard deviation ≈ {_num(noise_sd)} "
                f"({_percent(parts.noise_variance / parts.target_variance)} of the variance).")
    scale = float(estimator.noise_scale_)
    tails = ("heavy tails" if nu < 10 else "moderate tails" if nu < 50 else "nearly Gaussian tails")
    line = (f"- The remaining noise is Student-t with scale ≈ {_num(scale)} and ν ≈ {_num(nu)} degrees of freedom "
            f"({tails})")
    if parts.residuals is not None:
        far = int(np.sum(student_t_outliers(parts.residuals, scale, nu)))
        if far:
            line += f"; {far} training point(s) lie beyond the central 99.9 % of this noise (outliers to the model)"
    return line + "."


def compared_structures(results: dict) -> int:
    """How many candidate structures a search compared (``search_results_``): its fits and the baselines', not
    the candidates screened out cheaply nor the trend variants fitted after the search (the finalists' text
    lists those)."""
    n_screened = sum(status == "screened out" for status in results["status"])
    n_variants = sum(message == TREND_VARIANT_MESSAGE for message in results["message"])
    return len(results["structure"]) - n_screened - n_variants


def _search_summary(estimator, names):
    criterion = estimator.criterion if isinstance(estimator.criterion, str) else getattr(
        estimator.criterion, "name", type(estimator.criterion).__name__
    )
    results = estimator.search_results_
    n_screened = sum(status == "screened out" for status in results["status"])
    n_total = compared_structures(results)
    n_failed = sum(status == "failed" for status in results["status"])
    n_degenerate = sum(status == "degenerate" for status in results["status"])
    depths = [level["depth"] for level in estimator.search_path_]
    reasons = estimator.search_stop_reason_
    reason = reasons if isinstance(reasons, str) else "; ".join(dict.fromkeys(reasons))
    text = (
        f"The {estimator.search} search compared {n_total} candidate structures"
        f"{f' ({n_failed} failed to fit)' if n_failed else ''}"
        f"{f' ({n_degenerate} rejected as white-noise optima)' if n_degenerate else ''}"
        f"{f' after screening out {n_screened} others cheaply' if n_screened else ''} up to depth {max(depths, default=0)} "
        f"(max_depth={estimator.max_depth}) under the criterion {criterion} and stopped: {reason}."
    )
    by_criterion = getattr(estimator, "selection_", "criterion") == "criterion"
    if by_criterion and ("class" not in results or len(set(results["class"])) == 1):  # one search
        runner = _runner_up(results, str(estimator.structure_))
        if runner is not None:
            structure, gap = runner
            text += f" The runner-up, {parse(structure).to_string(names)}, scored {_num(gap)} lower"
            # a criterion on the log-evidence scale: a gap under one nat is no evidence either way, and
            # which of the two a search keeps can differ between machines (rounding decides near-ties)
            text += (" -- within 1 nat: the data cannot tell these two apart." if gap < 1.0 else ".")
    return text


def _runner_up(results, chosen):
    ranked = sorted(
        (value, structure)
        for structure, value, status in zip(results["structure"], results["criterion"], results["status"])
        if status == "ok" and structure != chosen and np.isfinite(value)
    )
    best = [value for structure, value, status in zip(results["structure"], results["criterion"], results["status"])
            if structure == chosen and status == "ok"]
    if not ranked or not best:
        return None
    value, structure = ranked[-1]
    return structure, max(best) - value


def _name(column, names):
    return f"`{names[column]}`"


def _variables(columns, names):
    if len(columns) == 1:
        return _name(columns[0], names)
    return _join([_name(c, names) for c in columns]) + " jointly"


def _join(items):
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _in_years(columns, dates):
    """Years per unit of ``columns`` when every one is a date column of ``dates`` (see :func:`_dates`) with the
    same factor, else None: lengths on them are then told as durations. A set of columns counts as dates in
    years."""
    if not isinstance(dates, dict):
        dates = dict.fromkeys(dates or (), 1.0)
    factors = {dates[c] for c in columns if c in dates}
    if not columns or len(factors) != 1 or any(c not in dates for c in columns):
        return None
    return factors.pop()


def _length_teller(in_years):
    """How a period or lengthscale of factors on columns of ``in_years`` years per unit reads (see
    :func:`_in_years`): a duration, or the number itself when they are not dates."""
    if in_years is None:
        return _num
    return lambda value: _duration(float(value) * in_years)


def _duration(years):
    """A length in years as people say it: "1.5 years", "3.2 months", "7 days", "6 hours"."""
    years = float(years)
    if not np.isfinite(years):
        return "?"
    for unit, per_year, least in (("year", 1.0, 1.0), ("month", 12.0, 1.0), ("day", 365.25, 1.0),
                                  ("hour", 365.25 * 24, 0.0)):
        amount = years * per_year
        if amount >= least * 0.95:  # (a fitted yearly cycle of 0.99 years reads as years, not 11.9 months)
            text = _num(amount)
            return f"{text} {unit}" + ("" if text == "1" else "s")
    return _num(years)


def _num(value):
    value = float(value)
    if not np.isfinite(value):
        return "?"
    return f"{value:.3g}"


def _percent(fraction):
    value = 100 * float(fraction)
    if 0 < value < 0.01:
        return "under 0.01 %"  # "2.5e-09 %" reads as noise, and is
    return f"{value:.2g} %" if value < 10 else f"{value:.0f} %"


def _capitalise(text):
    return text[:1].upper() + text[1:]
