"""A self-contained report of a fitted model, and its comparison with a RandomForest."""

from __future__ import annotations

import base64
import html
import io
import re
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import clone, is_classifier
from sklearn.metrics import accuracy_score, log_loss, mean_squared_error, r2_score
from sklearn.model_selection import BaseCrossValidator, KFold, StratifiedKFold, check_cv

from .._search._diagnostics import advice_for, grouped_findings
from ..datasets._dates import with_decimal_years
from ..kernels import looks_like_time_index
from ._decompose import check_rows, feature_names_of, numeric_inputs, structure_text, table_row, target_name_of
from ._views import check_fitted_search_estimator
from ._describe import _with_names, describe, finalist_label, held_out_column
from ._forecast import forecast_holdout, forecast_table, plot_forecast, refit_copy

__all__ = ["compare_with_random_forest", "write_report"]


def compare_with_random_forest(
    estimator: Any,
    X: ArrayLike,
    y: ArrayLike,
    *,
    cv: int | BaseCrossValidator | Iterable[Any] = 5,
    refit: str = "structure",
    n_estimators: int = 500,
    random_state: int | np.random.RandomState | None = 0,
    n_jobs: int | None = None,
    feature_names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Cross-validate a fitted model against a RandomForest on the same folds.

    Parameters
    ----------
    estimator : fitted CompositionalGPRegressor or CompositionalGPClassifier
    X, y : array-like
        The data (normally the training data of ``estimator``).
    cv : int or cross-validation splitter, default=5
        Folds; an int gives shuffled (stratified for classifiers) K-fold with ``random_state``.
    refit : {"structure", "search"}, default="structure"
        ``"structure"`` refits the chosen structure's hyperparameters on each
        training fold (fast; the structure itself was chosen on all the data,
        which favours the GP slightly); ``"search"`` reruns the whole structure
        search per fold (the honest estimate of the procedure, and slower). A
        multi-class classifier, with one structure per class, always uses ``"search"``.
    n_estimators : int, default=500
        Trees of the RandomForest.
    random_state : int, default=0
    n_jobs : int, optional
        Workers of the RandomForest.
    feature_names : sequence of str, optional
        Column names for the GP's label; by default ``feature_names_in_``.

    Returns
    -------
    dict
        ``{"metrics": [names], "rows": [{"method", metric means and stds, "seconds"}], "n_splits", "refit"}``.
        Regression metrics: RMSE and R²; classification: error rate and log loss.
    """
    check_fitted_search_estimator(estimator, "compare_with_random_forest")
    check_rows(X, y, "compare_with_random_forest")
    X = np.asarray(X, dtype=float) if not hasattr(X, "iloc") else X
    y = np.asarray(y)
    classification = is_classifier(estimator)
    if isinstance(cv, int):
        splitter = (StratifiedKFold if classification else KFold)(cv, shuffle=True, random_state=random_state)
    else:
        splitter = check_cv(cv, y, classifier=classification)
    if classification and len(estimator.classes_) > 2:
        refit = "search"
    gp = refit_copy(estimator, refit)
    # imported here: sklearn.ensemble is heavy, and most users never build a report
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    forest_class = RandomForestClassifier if classification else RandomForestRegressor
    forest = forest_class(n_estimators=n_estimators, random_state=random_state, n_jobs=n_jobs)
    names = feature_names if feature_names is not None else getattr(estimator, "feature_names_in_", None)
    label = f"GP {estimator.structure_.to_string(names)}" if refit == "structure" else "GP structure search"
    # the forest sees date columns in decimal years, as the GP does (a datetime64 column beside numbers is no
    # array of floats for it)
    forest_X = with_decimal_years(estimator, X, reset=False)
    methods = [(label, gp, X), (f"RandomForest ({n_estimators} trees)", forest, forest_X)]
    scores = {name: [] for name, _, _ in methods}
    seconds = {name: 0.0 for name, _, _ in methods}
    rows_of = (lambda data, idx: data.iloc[idx]) if hasattr(X, "iloc") else (lambda data, idx: data[idx])
    labels = np.unique(y) if classification else None
    with warnings.catch_warnings():
        # a class rarer than the folds (it is then missing from some training folds: scored below all the same)
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        folds = list(splitter.split(X, y))
    for train, test in folds:
        for name, model, inputs in methods:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = clone(model).fit(rows_of(inputs, train), y[train])
            seconds[name] += time.perf_counter() - start
            scores[name].append(_metrics(fitted, rows_of(inputs, test), y[test], labels))
    metric_names = ["error rate", "log loss"] if classification else ["RMSE", "R²"]
    rows = []
    for name, _, _ in methods:
        values = np.array(scores[name])
        row = {"method": name, "seconds": seconds[name]}
        for j, metric in enumerate(metric_names):
            row[metric] = float(values[:, j].mean())
            row[metric + " std"] = float(values[:, j].std())
        rows.append(row)
    return {"metrics": metric_names, "rows": rows, "n_splits": len(scores[label]), "refit": refit}


def _metrics(model, X, y, labels):
    """Error rate and log loss over all ``labels`` (a class missing from a fold's training rows has probability
    0 there), or RMSE and R² without labels."""
    if labels is not None:
        proba = np.zeros((len(y), len(labels)))
        proba[:, np.searchsorted(labels, model.classes_)] = model.predict_proba(X)
        return [1.0 - accuracy_score(y, model.predict(X)), log_loss(y, proba, labels=labels)]
    prediction = model.predict(X)
    return [float(np.sqrt(mean_squared_error(y, prediction))), r2_score(y, prediction) if len(y) > 1 else np.nan]


def comparison_table(comparison: Mapping[str, Any]) -> str:
    """The comparison as a markdown table."""
    metrics = comparison["metrics"]
    lines = ["| method | " + " | ".join(metrics) + " | fit seconds (all folds) |",
             "|---|" + "---|" * (len(metrics) + 1)]
    for row in comparison["rows"]:
        cells = [f"{row[m]:.4g} ± {row[m + ' std']:.2g}" for m in metrics]
        lines.append(table_row([row["method"], *cells, f"{row['seconds']:.1f}"]))
    return "\n".join(lines)


def write_report(
    estimator: Any,
    X: ArrayLike,
    y: ArrayLike,
    path: str | PathLike[str],
    *,
    title: str | None = None,
    target_name: str | None = None,
    feature_names: Sequence[str] | None = None,
    compare: bool = True,
    cv: int | BaseCrossValidator | Iterable[Any] = 5,
    refit: str = "structure",
    random_state: int | np.random.RandomState | None = 0,
    comparison: Mapping[str, Any] | None = None,
    forecast: bool | None = None,
    forecast_result: Mapping[str, Any] | None = None,
    max_candidates_listed: int = 25,
) -> Path:
    """Write a report of a fitted model: HTML with inline images, or markdown with PNG files.

    Contents: the data summary, the chosen structure and its plain-language
    description, the figures (full fit, each component -- not for a multi-class
    classifier, whose classes each have their own structure --, the search path;
    when matplotlib is installed), the table of candidates, a cross-validated
    comparison with a RandomForest on the same data, and for a series a
    time-ordered hold-out forecast.

    Parameters
    ----------
    estimator : fitted CompositionalGPRegressor or CompositionalGPClassifier
    X, y : array-like
        The training data.
    path : str or Path
        ``*.html`` gives one self-contained HTML file; ``*.md`` a markdown file
        with its PNG figures in ``<stem>_files/`` beside it.
    title : str, optional
    target_name : str, optional
        The target's name; by default ``target_name_`` (a model fitted on a named pandas Series).
    feature_names : sequence of str, optional
        Column names; by default ``feature_names_in_`` (a model fitted on a DataFrame).
    compare : bool, default=True
        Run :func:`compare_with_random_forest` (``cv``, ``refit``, ``random_state``).
    cv, refit, random_state
        Passed to :func:`compare_with_random_forest`.
    comparison : dict, optional
        A result of :func:`compare_with_random_forest` already computed (then
        ``compare``, ``cv``, ``refit`` and ``random_state`` are not used).
    forecast : bool, optional
        Add a time-ordered hold-out forecast (:func:`forecast_holdout`: fit on the
        first 80 % of the rows in input order, forecast the rest, with ``refit``).
        By default, for a regressor on a series: one input column that looks
        like a time index (:func:`skgpsearch.kernels.looks_like_time_index`).
    forecast_result : dict, optional
        A result of :func:`forecast_holdout` already computed (then ``forecast`` is not used).
    max_candidates_listed : int, default=25
        Rows of the candidate table (best first).

    Returns
    -------
    pathlib.Path
        The report's path.
    """
    check_fitted_search_estimator(estimator, "write_report")
    check_rows(X, y, "write_report")
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm", ".md"):
        raise ValueError(f"The report path must end in .html or .md, got {str(path)!r}.")
    markdown = path.suffix.lower() == ".md"
    sections = []  # (heading, kind, content); kind in {"text", "pre", "table", "figure"}
    y_array = np.asarray(y)
    task = "classification" if is_classifier(estimator) else "regression"
    names = feature_names_of(estimator, feature_names)
    target_name = target_name_of(estimator, target_name)
    summary = [f"{len(y_array)} rows, {len(names)} feature(s): {', '.join(names)}.", f"Task: {task}."]
    if task == "classification":
        values, counts = np.unique(y_array, return_counts=True)
        summary.append("Classes: " + ", ".join(f"{v} ({c})" for v, c in zip(values, counts)) + ".")
    else:
        summary.append(f"Target: mean {np.mean(y_array):.4g}, standard deviation {np.std(y_array):.4g}, "
                       f"range {np.min(y_array):.4g} to {np.max(y_array):.4g}.")
    sections.append(("Data", "text", " ".join(summary)))
    text = structure_text(estimator, names)
    sections.append(("Chosen structure", "pre", text))
    sections.append(("Description", "pre", describe(estimator, feature_names=names, target_name=target_name)))
    findings = getattr(estimator, "diagnostics_", None)
    if findings:
        sections.append(("Degenerate optimum", "text",
                         "The chosen model's optimum has these degenerate features; its hyperparameters may not "
                         "mean what they seem. " + " ".join(f"({i}) {_with_names(f, names)}. {advice_for(f)}"
                                                            for i, f in enumerate(grouped_findings(findings), 1))))
    sections += _figure_sections(estimator, names, target_name)
    finalists = _finalists_table(estimator, names)
    if finalists:
        sections.append(("Finalists", "table", finalists))
    sections.append(("Candidates", "table", _candidates_table(estimator, names, max_candidates_listed)))
    if comparison is None and compare:
        comparison = compare_with_random_forest(estimator, X, y, cv=cv, refit=refit, random_state=random_state,
                                                feature_names=names)
    if comparison is not None:
        note = (
            f"{comparison['n_splits']}-fold cross-validation on the same folds. "
            + ("The GP's structure was chosen on all the data; its hyperparameters are refitted on each "
               "training fold." if comparison["refit"] == "structure" else
               "The whole structure search is rerun on each training fold.")
        )
        sections.append(("Comparison with a RandomForest", "table", note + "\n\n" + comparison_table(comparison)))
    if forecast is None:
        forecast = task == "regression" and len(names) == 1 and looks_like_time_index(numeric_inputs(estimator, X))
    if forecast_result is None and forecast:
        forecast_result = forecast_holdout(estimator, X, y, refit=refit, random_state=random_state,
                                           feature_names=names)
    if forecast_result is not None:
        sections += _forecast_sections(forecast_result, target_name)
    heading = title or f"skgpsearch report: {text}"
    path.parent.mkdir(parents=True, exist_ok=True)
    if markdown:
        path.write_text(_markdown(heading, sections, path), encoding="utf-8")
    else:
        path.write_text(_html(heading, sections), encoding="utf-8")
    return path


def _forecast_sections(result, target_name):
    note = (f"Fitted on the first {result['n_train']} rows in the order of `{result['column']}` (up to "
            f"{result['split_at']:.6g}), forecasting the last {result['n_test']}. "
            + ("The GP's structure was chosen on all the data; its hyperparameters are refitted on the first part. "
               if result["refit"] == "structure" else "The whole structure search is rerun on the first part. ")
            + "MNLP: mean negative log predictive density of the held-out values (lower is better).")
    sections = [("Hold-out forecast", "table", note + "\n\n" + forecast_table(result))]
    import importlib.util

    if importlib.util.find_spec("matplotlib") is not None:
        sections.append(("Forecast", "figure", plot_forecast(result, target_name=target_name)))
    return sections


def _figure_sections(estimator, names, target_name):
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return [("Figures", "text", "Figures need matplotlib: pip install 'skgpsearch[plot]'.")]
    from ._plots import plot_components, plot_fit, plot_search_path

    sections = [("Fit", "figure", plot_fit(estimator, feature_names=names, target_name=target_name))]
    if len(getattr(estimator, "classes_", [0, 1])) <= 2:
        for figure in plot_components(estimator, feature_names=names, target_name=target_name):
            sections.append(("Component", "figure", figure))
    sections.append(("Search path", "figure", plot_search_path(estimator, feature_names=names)))
    return sections


def _candidates_table(estimator, names, limit):
    from ..grammar import parse

    results = estimator.search_results_
    order = sorted(range(len(results["structure"])),
                   key=lambda i: -results["criterion"][i] if np.isfinite(results["criterion"][i]) else np.inf)
    has_class = "class" in results
    head = "| " + ("class | " if has_class else "") + "structure | depth | criterion | log marginal likelihood | " \
           "hyperparameters | status | diagnostics |"
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for i in order[:limit]:
        try:
            text = parse(results["structure"][i]).to_string(names)
        except ValueError:
            text = results["structure"][i]
        cells = ([str(results["class"][i])] if has_class else []) + [
            text, str(results["depth"][i]), f"{results['criterion'][i]:.4g}",
            f"{results['log_marginal_likelihood'][i]:.4g}" if results["log_marginal_likelihood"][i] is not None else "",
            str(results["n_hyperparameters"][i]), str(results["status"][i]),
            _with_names(results.get("diagnostics", [""] * len(order))[i] or "", names),
        ]
        lines.append(table_row(cells))
    if len(order) > limit:
        lines.append(f"\n({len(order) - limit} more candidates not listed.)")
    return "\n".join(lines)


def _finalists_table(estimator: Any, names: Sequence[str]) -> str:
    """The structures the final model was chosen from, with their criterion, held-out score and weight ('' if none)."""
    table = getattr(estimator, "finalists_", None)
    if not table or not table["structure"]:
        return ""
    has_class = "class" in table
    column = held_out_column(table)
    heading = {"forecast_log_density": "log density of the forecast (end of the series)",
               "cv_log_density": "cross-validated log density"}.get(column, "leave-one-out log density")
    head = "| " + ("class | " if has_class else "") + f"structure | criterion | {heading} | weight |"
    lines = [f"Selected by {getattr(estimator, 'selection_', 'criterion')}.", "", head,
             "|---" * (head.count("|") - 1) + "|"]
    for i, text in enumerate(table["structure"]):
        loo = table[column][i]
        cells = ([str(table["class"][i])] if has_class else []) + [
            finalist_label(table, i, names),
            f"{table['criterion'][i]:.4g}", "" if loo is None else f"{loo:.4g}",
            f"{table['weight'][i]:.3g}" if table["weight"][i] else "",
        ]
        lines.append(table_row(cells))
    return "\n".join(lines)


#: Characters a markdown renderer would read as markup in names and labels (a column "dose <mg>" as an HTML
#: tag); each is escaped with a backslash, as CommonMark allows for any ASCII punctuation.
_MARKDOWN_MARKUP = re.compile(r"([<>&])")


def _markdown_text(text):
    """``text`` with the characters of ``_MARKDOWN_MARKUP`` escaped (outside code blocks)."""
    return _MARKDOWN_MARKUP.sub(r"\\\1", text)


def _png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _markdown(heading, sections, path):
    folder = path.with_name(path.stem + "_files")
    out = [f"# {_markdown_text(heading)}", ""]
    count = 0
    for title, kind, content in sections:
        if kind == "figure":
            folder.mkdir(exist_ok=True)
            count += 1
            name = f"figure_{count}.png"
            (folder / name).write_bytes(_png(content))
            out += [f"![{title}]({folder.name}/{name})", ""]
            continue
        out += [f"## {title}", ""]
        out += ([f"```\n{content}\n```"] if kind == "pre" else [_markdown_text(content)]) + [""]
    return "\n".join(out)


def _html(heading, sections):
    body = [f"<h1>{html.escape(heading)}</h1>"]
    for title, kind, content in sections:
        if kind == "figure":
            data = base64.b64encode(_png(content)).decode("ascii")
            body.append(f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{data}"></figure>')
            continue
        body.append(f"<h2>{html.escape(title)}</h2>")
        if kind == "pre":
            body.append(f"<pre>{html.escape(content)}</pre>")
        elif kind == "table":
            body.append(_html_table(content))
        else:
            body.append(f"<p>{html.escape(content)}</p>")
    style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
             "pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em}img{max-width:100%}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(heading)}</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _html_table(content):
    """Markdown table (with optional paragraphs around it) to HTML."""
    parts, rows = [], []
    for line in content.splitlines():
        if line.startswith("|"):
            # cells are split at the pipes that are not escaped (see table_row)
            cells = [c.strip().replace("\\|", "|") for c in _CELL_SEPARATOR.split(line.strip().strip("|"))]
            if all(set(c) <= set("-:") for c in cells):
                continue
            rows.append(cells)
            continue
        if rows:
            parts.append(_rows_html(rows))
            rows = []
        if line.strip():
            parts.append(f"<p>{html.escape(line)}</p>")
    if rows:
        parts.append(_rows_html(rows))
    return "\n".join(parts)


_CELL_SEPARATOR = re.compile(r"(?<!\\)\|")


def _rows_html(rows):
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
