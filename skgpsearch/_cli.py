"""The ``skgpsearch`` command line: ``demo``, ``discover DATA.csv`` and ``predict MODEL DATA.csv``.

Results go to stdout, search progress to stderr; errors are one line on stderr with
exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import difflib
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from . import OutlierWarning, __version__, print_progress, search_progress
from ._estimators._validation import is_number
from .criteria import criterion_names
from .inspection._decompose import numeric_inputs
from .kernels import looks_like_time_index

MIN_ROWS = 5


class UsageError(Exception):
    """An error the user can fix; printed as one line."""


def main(argv=None):
    """Entry point of the ``skgpsearch`` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    with contextlib.suppress(AttributeError, ValueError):
        # results and progress (stderr) then appear in order when stdout is a pipe
        sys.stdout.reconfigure(line_buffering=True)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except UsageError as error:
        print(f"skgpsearch: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("skgpsearch: interrupted", file=sys.stderr)
        return 130


def _parser():
    parser = argparse.ArgumentParser(
        prog="skgpsearch",
        description="Discover the kernel structure of a Gaussian process that explains your data.",
    )
    parser.add_argument("--version", action="version", version=f"skgpsearch {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="search the structure of the bundled Mauna Loa CO2 series and write a report",
        description="Search the structure of 20 years of monthly Mauna Loa CO2 concentrations (bundled), "
        "describe it, compare it with a RandomForest and write a report.",
    )
    demo.add_argument("--report", default="skgpsearch-demo-report.html", metavar="PATH",
                      help="report file, .html or .md (default: %(default)s)")
    demo.add_argument("--save-model", default=None, metavar="PATH", help=SAVE_MODEL_HELP)
    demo.add_argument("--max-depth", type=int, default=3, metavar="N",
                      help="largest number of search steps (default: %(default)s; 2 takes about a third of the time)")
    demo.add_argument("--n-jobs", type=int, default=2, metavar="N", help="parallel candidate fits (default: 2)")
    demo.add_argument("--random-state", type=int, default=0, metavar="N")
    demo.set_defaults(run=_demo)

    discover = commands.add_parser(
        "discover",
        help="search the structure for the columns of a CSV file",
        description="Search a GP kernel structure that predicts one column of a CSV file from the others.",
    )
    discover.add_argument("data", metavar="DATA.csv",
                          help="CSV file with a header row; features must be numbers or ISO dates (2015-03-01)")
    discover.add_argument("--target", required=True, metavar="COLUMN", help="the column to predict")
    discover.add_argument("--task", choices=("auto", "regression", "classification"), default="auto",
                          help="auto: classification for text targets or few integer values (default: auto)")
    discover.add_argument("--criterion", default=None, metavar="NAME",
                          help="model-selection criterion (default: bic for regression, bic_light for "
                          f"classification; known: {', '.join(criterion_names())})")
    discover.add_argument("--max-depth", type=int, default=None, metavar="N",
                          help="largest number of search steps (default: regression 2 + the number of input "
                          "columns, from 3 to 10; classification 6)")
    discover.add_argument("--base-kernels", default=None, metavar="KINDS",
                          help="comma-separated base kernels, e.g. SE,PER,LIN (default: regression SE,RQ,PER,LIN,WN "
                          "on one input column, SE on several; classification SE)")
    changes = discover.add_mutually_exclusive_group()
    changes.add_argument("--changepoints", action="store_true",
                         help="regression: search changepoints and change windows (CP, CW) on every column "
                         "(default: on one input column only)")
    changes.add_argument("--no-changepoints", action="store_true",
                         help="regression: no changepoints or change windows, also on one input column")
    discover.add_argument("--model-averaging", type=int, default=None, metavar="K",
                          help="regression: predict with the mixture of the K best structures, weighted by "
                          "their criterion (instead of the default choice among the finalists by held-out "
                          "prediction)")
    discover.add_argument("--robust", action="store_true",
                          help="regression: Student-t noise (robust to outliers) instead of Gaussian noise")
    discover.add_argument("--n-jobs", type=int, default=None, metavar="N", help="parallel candidate fits")
    discover.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                          help="bound the model's fit (search, finalists, final refit) to about this many seconds; "
                          "the best model found by then is kept (the comparison and the report come on top)")
    discover.add_argument("--report", default=None, metavar="PATH", help="write a report (.html or .md)")
    discover.add_argument("--save-model", default=None, metavar="PATH", help=SAVE_MODEL_HELP)
    discover.add_argument("--no-compare", action="store_true",
                          help="skip the cross-validated comparison with a RandomForest (and, for a series, "
                               "the hold-out forecast beside simple forecasters)")
    discover.add_argument("--random-state", type=int, default=0, metavar="N")
    discover.add_argument("--quiet", action="store_true", help="no progress on stderr")
    discover.set_defaults(run=_discover)

    predict = commands.add_parser(
        "predict",
        help="predict the rows of a CSV file with a model saved by --save-model",
        description="Predict every row of a CSV file with a model saved by 'skgpsearch discover --save-model'. "
        "The output is the input's columns followed by the predictions: for regression predicted_mean, "
        "predicted_std (of the underlying function) and predicted_std_with_noise (of a new observation); "
        "for classification predicted_class and one probability_<class> column per class. "
        "Loading a model file runs code stored in it: load only files you trust.",
    )
    predict.add_argument("model", metavar="MODEL", help="a model file written by --save-model")
    predict.add_argument("data", metavar="DATA.csv",
                         help="CSV file with a header row and the model's feature columns (other columns are copied)")
    predict.add_argument("--output", default=None, metavar="PATH",
                         help="write the predictions to this CSV file (default: standard output)")
    predict.set_defaults(run=_predict)
    return parser


SAVE_MODEL_HELP = ("save the fitted model with joblib, for 'skgpsearch predict' or joblib.load "
                   "(loading a model file runs code stored in it: load only files you trust)")


# -- demo -----------------------------------------------------------------------------
def _demo(args):
    from . import CompositionalGPRegressor
    from .datasets import load_mauna_loa
    from .inspection import compare_with_random_forest
    from .inspection import comparison_table

    _check_report_path(args.report)
    if args.save_model:
        _check_writable(args.save_model, "the model")
    _check_max_depth(args.max_depth)
    n_train, n_forecast = 240, 24
    data = load_mauna_loa(n_samples=n_train + n_forecast)
    names = list(data.feature_names)
    X, y = _table({name: data.data[:, j] for j, name in enumerate(names)}, names), data.target
    X_train, y_train = _rows(X, slice(0, n_train)), y[:n_train]
    X_test, y_test = _rows(X, slice(n_train, None)), y[n_train:]
    print(f"Mauna Loa CO2, monthly, {n_train} months from 1958 (bundled with the package); "
          f"the next {n_forecast} months are held out.")
    model = CompositionalGPRegressor(
        base_kernels=("SE", "RQ", "PER", "LIN"), criterion="bic", max_depth=args.max_depth, n_jobs=args.n_jobs,
        random_state=args.random_state, verbose=1,
    )
    seconds = _fit(model, X_train, y_train, quiet=False)
    _print_model(model, seconds, target_name="CO2", names=names)

    print("\nCross-validated comparison with a RandomForest (5 shuffled folds of the 240 months):")
    comparison = compare_with_random_forest(model, X_train, y_train, cv=5, random_state=args.random_state,
                                            n_jobs=args.n_jobs, feature_names=names)
    print(comparison_table(comparison))
    forest = _forest(args)
    forest.fit(X_train, y_train)
    gp_rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
    rf_rmse = float(np.sqrt(np.mean((forest.predict(X_test) - y_test) ** 2)))
    print(f"\nForecast of the next {n_forecast} months (extrapolation): RMSE GP {gp_rmse:.2f} ppm, "
          f"RandomForest {rf_rmse:.2f} ppm.")
    _write_report(model, X_train, y_train, args.report, comparison=comparison, target_name="CO2",
                  feature_names=names, title="skgpsearch demo: Mauna Loa CO2")
    if args.save_model:
        _save_model(model, args.save_model)
    return 0


def _check_max_depth(max_depth):
    if max_depth < 1:
        raise UsageError(f"--max-depth must be at least 1, got {max_depth}.")


def _forest(args):
    from sklearn.ensemble import RandomForestRegressor

    return RandomForestRegressor(n_estimators=500, random_state=args.random_state, n_jobs=args.n_jobs)


# -- discover -------------------------------------------------------------------------
def _discover(args):
    from . import CompositionalGPClassifier, CompositionalGPRegressor

    if args.report:
        _check_report_path(args.report)
    if args.save_model:
        _check_writable(args.save_model, "the model")
    header, columns, lines = _read_csv(args.data)
    if args.target not in header:
        hint = _separator_hint(header)
        if not hint and all(is_number(name) for name in header):
            hint = " (numbers: the file's first line should name the columns)"
        close = [name for name in header if name.strip().casefold() == args.target.strip().casefold()]
        close = close or difflib.get_close_matches(args.target, header, n=1, cutoff=0.75)
        if not hint and close:
            hint = f" (did you mean {close[0]!r}?)"
        raise UsageError(
            f"{args.data} has no column {args.target!r}; its columns are: {', '.join(header)}{hint}."
        )
    features = [name for name in header if name != args.target]
    if not features:
        raise UsageError(f"{args.data} has no feature columns besides the target {args.target!r}.")
    target = columns[args.target]
    values = {name: _numeric(columns[name]) for name in features}
    values.update({name: _dates(columns[name]) for name, column in values.items() if column is None})
    text_features = [name for name in features if values[name] is None]
    formatted = [name for name in text_features if _formatted_numbers(columns[name])]
    if formatted:
        raise UsageError(f"feature column(s) {', '.join(map(repr, formatted))} hold {_FORMATTED_ADVICE}.")
    for name in text_features:
        _refuse_mostly_dates(columns[name], name, lines)
    if text_features:
        raise UsageError(
            f"non-numeric feature column(s) {', '.join(map(repr, text_features))}: encode categories as "
            "numbers first (e.g. one column per category), or drop these columns. (Dates are read in ISO "
            f"form: {_ISO_DATE_FORMS}.)"
        )
    bad = [name for name in features if not np.all(_finite(values[name]))]
    if bad:
        raise UsageError(
            f"feature column(s) {', '.join(map(repr, bad))} have missing or infinite values: "
            "fill or drop those rows first."
        )
    if any(value.strip().lower() in _MISSING for value in target):
        raise UsageError(f"the target column {args.target!r} has missing values (empty, NA, ...): drop those rows "
                         "first.")
    task, y, reason = _task(target, args.task, lines)
    if len(y) < MIN_ROWS:
        raise UsageError(f"{args.data} has {len(y)} data rows; the search needs at least {MIN_ROWS}.")
    if task == "classification" and len(set(y.tolist())) < 2:
        raise UsageError(f"the target column {args.target!r} has a single class; a classifier needs two or more.")
    estimator_class = CompositionalGPRegressor if task == "regression" else CompositionalGPClassifier
    # the estimator's own default criterion
    criterion = args.criterion or estimator_class().get_params()["criterion"]
    if criterion.lower() not in criterion_names():
        raise UsageError(f"unknown criterion {criterion!r}; known criteria: {', '.join(criterion_names())}.")
    params = {"criterion": criterion, "n_jobs": args.n_jobs, "random_state": args.random_state,
              "verbose": 0 if args.quiet else 1}
    if args.max_depth is not None:
        _check_max_depth(args.max_depth)
        params["max_depth"] = args.max_depth
    if args.time_budget is not None:
        if not 0 < args.time_budget < math.inf:
            raise UsageError(f"--time-budget must be a positive number of seconds, got {args.time_budget:g}.")
        params["time_budget"] = args.time_budget
    if args.base_kernels:
        params["base_kernels"] = tuple(k.strip() for k in args.base_kernels.split(",") if k.strip())
        if not params["base_kernels"]:
            raise UsageError(f"--base-kernels names no kernel ({args.base_kernels!r}); give comma-separated kinds, "
                             "e.g. SE,PER,LIN.")
    if (args.changepoints or args.no_changepoints or args.robust or args.model_averaging is not None) \
            and task != "regression":
        raise UsageError("--changepoints, --no-changepoints, --robust and --model-averaging apply to regression only.")
    if args.robust:
        params["likelihood"] = "student_t"
    if args.model_averaging is not None:
        if args.model_averaging < 1:
            raise UsageError(f"--model-averaging must be at least 1, got {args.model_averaging}.")
        params["model_averaging"] = args.model_averaging
        # the user asks for the mixture of the K best structures: the default select rule on a table (stacking
        # the finalists) would set it aside
        params["selection"] = "criterion"
    if args.changepoints or args.no_changepoints:
        params["change_operators"] = ("CP", "CW") if args.changepoints else None
    model = estimator_class(**params)
    X = _table(values, features)
    print(f"{args.data}: {len(y)} rows, {len(features)} feature{'s' if len(features) != 1 else ''}; "
          f"{task} of {args.target!r} ({reason}).")
    dated = [name for name in features if values[name].dtype.kind == "M"]
    if dated:
        print(f"Dates in {', '.join(map(repr, dated))}: measured in decimal years (2015.5 is the middle of 2015), "
              "so periods and lengthscales read in years.")
    try:
        seconds = _fit(model, X, y, quiet=args.quiet, lines=lines)
    except ValueError as error:
        raise UsageError(_cli_terms(str(error))) from None
    _print_model(model, seconds, target_name=args.target, names=features)
    if args.save_model:
        # before the comparison and the report: the search's result is kept whatever they meet
        _save_model(model, args.save_model)
    comparison = forecast = None
    if not args.no_compare:
        from .inspection import compare_with_random_forest
        from .inspection import comparison_table

        print("\nCross-validated comparison with a RandomForest (5 folds; the chosen structure refitted per fold):")
        comparison = compare_with_random_forest(model, X, y, cv=5, random_state=args.random_state,
                                                n_jobs=args.n_jobs, feature_names=features)
        print(comparison_table(comparison))
        if task == "regression" and len(features) == 1 and looks_like_time_index(numeric_inputs(model, X)):
            forecast = _print_forecast(model, X, y, args, features)
    if args.report:
        _write_report(model, X, y, args.report, comparison=comparison, compare=False, target_name=args.target,
                      feature_names=features, title=f"skgpsearch: {args.target} in {Path(args.data).name}",
                      forecast=False, forecast_result=forecast)
    return 0


def _print_forecast(model, X, y, args, features):
    """For a series: fit on its first 80 % in time, forecast the rest, beside simple forecasters."""
    from .inspection import forecast_holdout, forecast_table

    try:
        forecast = forecast_holdout(model, X, y, random_state=args.random_state, n_jobs=args.n_jobs,
                                    feature_names=features)
    except ValueError as error:  # too short a series: the shuffled comparison stands alone
        print(f"\n(No hold-out forecast: {error})")
        return None
    print(f"\nHold-out forecast: fitted on the first {forecast['n_train']} rows in the order of {features[0]!r}, "
          f"forecasting the last {forecast['n_test']} (MNLP: mean negative log predictive density, lower is better):")
    print(forecast_table(forecast))
    return forecast


def _read_csv(path, keep_empty_rows=False):
    """The header, the columns by name and each data row's line number. Blank lines are skipped, and so are
    rows of empty cells unless ``keep_empty_rows`` (predict: every row gets its prediction, or an error)."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{str(path)!r} is a directory; give the path of a CSV file.")
    if not path.is_file():
        raise UsageError(f"no such file: {str(path)!r}.")
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            # each row with the file's line number where it ends (blank lines are dropped below, not renumbered)
            numbered = [(reader.line_num, row) for row in reader]
    except (UnicodeDecodeError, csv.Error) as error:
        advice = "; save it as UTF-8" if isinstance(error, UnicodeDecodeError) else ""
        raise UsageError(f"{str(path)!r} is not a readable CSV file ({error}){advice}.") from None
    numbered = [(line, row) for line, row in numbered
                if any(cell.strip() for cell in row) or (keep_empty_rows and len(row) > 1)]
    if not numbered:
        raise UsageError(f"{str(path)!r} is empty.")
    header = [name.strip() for name in numbered[0][1]]
    body = [row for _, row in numbered[1:]]
    lines = [line for line, _ in numbered[1:]]
    # a comma at the end of every line (as some spreadsheets export): an unnamed column without values
    while len(header) > 1 and header[-1] == "" and all(len(row) == len(header) and not row[-1].strip()
                                                       for row in body):
        header, body = header[:-1], [row[:-1] for row in body]
    if header[0] == "" and len(header) > 1 and _is_row_index(row[0] for row in body if row):
        print(f"The first column of {path.name} has no name and counts the rows (0, 1, 2, ...): the index pandas "
              "writes without index=False; it is left out.", file=sys.stderr)
        header, body = header[1:], [row[1:] for row in body]
    if "" in header:
        raise UsageError(f"column {header.index('') + 1} of {str(path)!r} has no name in the header: name it, or "
                         "remove the column.")
    if len(set(header)) != len(header):
        raise UsageError(f"{str(path)!r} has repeated column names in its header.")
    for number, row in zip(lines, body):
        if len(row) != len(header):
            hint = _separator_hint(header)
            raise UsageError(f"line {number} of {str(path)!r} has {len(row)} fields, the header has "
                             f"{len(header)}{hint}.")
    return header, {name: [row[j] for row in body] for j, name in enumerate(header)}, lines


def _is_row_index(cells):
    """Whether a column's cells are 0, 1, 2, ... (a pandas index written to the file)."""
    cells = [cell.strip() for cell in cells]
    return bool(cells) and cells == [str(i) for i in range(len(cells))]


def _separator_hint(header):
    """A hint when a header read as one column holds another separator."""
    if len(header) == 1 and any(mark in header[0] for mark in ";\t|"):
        return " (one column: are its values separated by commas? skgpsearch reads comma-separated files)"
    return ""


#: A number written with thousands separators ("5,012.6") or a decimal comma ("3,5").
_FORMATTED_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+(\.\d*)?|\d+,\d+)$")


def _formatted_numbers(values):
    """Whether a column's cells that are not plain numbers are all numbers written with commas."""
    cells = [v.strip() for v in values if v.strip().lower() not in _MISSING]
    odd = [cell for cell in cells if _numeric([cell]) is None]
    return bool(odd) and all(_FORMATTED_NUMBER.match(cell) for cell in odd)


_FORMATTED_ADVICE = ("numbers written with commas (thousands separators or decimal commas, as in '5,012.6' or "
                     "'3,5'): write them as plain numbers (5012.6, 3.5)")


_MISSING = {"", "na", "nan", "null", "none", "?"}
_ISO_DATE_FORMS = "2015-03-01, 2015-03 or 2015-03-01 14:30"


def _numeric(values):
    """The column as floats (missing cells NaN), or None if a cell is text."""
    out = np.empty(len(values))
    for i, value in enumerate(values):
        text = value.strip()
        if text.lower() in _MISSING:
            out[i] = math.nan
            continue
        try:
            out[i] = float(text)
        except ValueError:
            return None
    return out


def _dates(values):
    """The column as datetime64 (missing cells NaT) when every cell is an ISO date or empty, else None."""
    cells = [value.strip() for value in values]
    cells = ["NaT" if cell.lower() in _MISSING else cell for cell in cells]
    if all(cell == "NaT" for cell in cells):
        return None
    if any(cell != "NaT" and _numeric([cell]) is not None for cell in cells):
        return None  # numpy reads 2016 as a year and 20160101 as the year 20 million: a number is no date here
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "2015-03-01T00:00Z": numpy keeps no time zone, read as UTC
            return np.array(cells, dtype="datetime64[us]")
    except ValueError:
        return None


def _finite(column):
    return ~np.isnat(column) if column.dtype.kind == "M" else np.isfinite(column)


def _table(values, names):
    """The feature columns as the model takes them: a DataFrame (the model learns the column names, and dates
    stay dates) when pandas is installed."""
    try:
        import pandas as pd
    except ImportError:
        return _array(values, names)
    return pd.DataFrame({name: values[name] for name in names}, columns=list(names))


def _array(values, names):
    if len({values[name].dtype.kind for name in names}) > 1:
        raise UsageError("a table of dates and numbers needs pandas (pip install pandas).")
    return np.column_stack([values[name] for name in names])


def _task(values, task, lines):
    numbers = _numeric(values)
    if numbers is None and task != "classification":
        _refuse_mostly_numeric(values, lines)
        if _formatted_numbers(values):
            raise UsageError(f"the target column holds {_FORMATTED_ADVICE}.")
        if _dates(values) is not None:
            raise UsageError("the target column holds dates: a date is an input here (a feature column, read as "
                             "decimal years), not a target.")
    if task == "classification" or (task == "auto" and numbers is None):
        labels = np.array([v.strip() for v in values])
        if numbers is not None and np.all(numbers == np.round(numbers)):
            labels = numbers.astype(int)
        reason = "text target" if task == "auto" else "--task classification"
        return "classification", labels, reason
    if numbers is None:
        raise UsageError("--task regression needs a numeric target column.")
    if not np.all(np.isfinite(numbers)):
        raise UsageError("the target column has missing or infinite values: drop those rows first.")
    distinct = np.unique(numbers)
    if task == "auto" and distinct.size <= 10 and np.all(distinct == np.round(distinct)):
        return "classification", numbers.astype(int), f"{distinct.size} distinct integer values; use --task to override"
    reason = "numeric target" if task == "auto" else "--task regression"
    return "regression", numbers, reason


def _refuse_mostly_numeric(values, lines):
    """A target column that is numbers but for a few cells is a data error, not a set of class labels."""
    bad = _a_few_bad_cells(values, lines, _numeric)
    if bad:
        raise UsageError(
            f"the target column is numeric except for {len(bad)} cell(s) ({_cells_text(bad)}): fix them (a decimal "
            "point, not a comma), or pass --task classification if the values are class labels."
        )


def _a_few_bad_cells(values, lines, parse):
    """The (line, text) of the non-missing cells that ``parse`` refuses, when they are at most half of them
    (a column of such values with a few errors); otherwise none."""
    cells = [(line, v.strip()) for line, v in zip(lines, values) if v.strip().lower() not in _MISSING]
    bad = [(line, text) for line, text in cells if parse([text]) is None]
    return bad if len(bad) <= 0.5 * len(cells) else []


def _cells_text(bad):
    return ", ".join(f"{text!r} on line {line}" for line, text in bad[:3])


# -- predict ----------------------------------------------------------------------------
def _predict(args):
    model = _load_model(args.model)
    if args.output:
        _check_writable(args.output, "the predictions")
    header, columns, lines = _read_csv(args.data, keep_empty_rows=True)
    names = _model_columns(model, header, args.data)
    if not columns[header[0]]:
        raise UsageError(f"{args.data} has no data rows.")
    dated = getattr(model, "date_columns_", None) or {}
    values = {name: _feature_column(columns[name], name, args.data, lines, dates=j in dated)
              for j, name in enumerate(names)}
    # a model fitted without column names takes an array (of numbers, or of dates)
    X = _table(values, names) if hasattr(model, "feature_names_in_") else _array(values, names)
    try:
        names_out, values = _predictions(model, X)
    except ValueError as error:
        raise UsageError(_cli_terms(str(error))) from None
    clashes = [name for name in names_out if name in header]
    if clashes:  # checked after predicting: the class columns' names come from the model
        raise UsageError(f"{args.data} already has column(s) {', '.join(map(repr, clashes))}; rename them first.")
    rows = [[columns[name][i] for name in header] + values[i] for i in range(len(X))]
    if args.output:
        try:
            with open(args.output, "w", newline="", encoding="utf-8") as handle:
                _write_rows(handle, header + names_out, rows)
        except OSError as error:
            raise UsageError(f"cannot write the predictions to {args.output!r}: {error.strerror or error}.") from None
        print(f"{len(rows)} predictions written to {args.output}", file=sys.stderr)
    else:
        _write_rows(sys.stdout, header + names_out, rows)
    return 0


def _load_model(path):
    import joblib

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such model file: {str(path)!r}.")
    try:
        model = joblib.load(path)
    except Exception as error:  # a file of any other kind fails in many ways inside pickle
        raise UsageError(f"{str(path)!r} is not a model file written by --save-model ({type(error).__name__}: "
                         f"{error}).") from None
    if not (hasattr(model, "predict") and hasattr(model, "n_features_in_")):
        raise UsageError(f"{str(path)!r} does not hold a fitted model (it holds a {type(model).__name__}).")
    return model


def _model_columns(model, header, data):
    """The CSV columns the model was fitted on: by name, or all columns when it was fitted without names."""
    if hasattr(model, "feature_names_in_"):
        names = [str(name) for name in model.feature_names_in_]
        missing = [name for name in names if name not in header]
        if missing:
            raise UsageError(f"{data} lacks the model's feature column(s) {', '.join(map(repr, missing))}; "
                             f"the model needs: {', '.join(names)}{_separator_hint(header)}.")
        return names
    if len(header) != model.n_features_in_:
        raise UsageError(f"the model was fitted without column names on {model.n_features_in_} column(s); "
                         f"{data} has {len(header)}: give exactly the training feature columns, in their order.")
    return header


def _feature_column(values, name, data, lines, dates=False):
    """A feature column of ``data`` to predict: where the model was fitted on dates, ISO dates or decimal years
    (said on stderr; a number that is no calendar year, such as 20160101, is refused), else numbers (dates
    there: the model's own error says so)."""
    if dates:
        numbers = _numeric(values)
        if numbers is not None:
            odd = np.flatnonzero(np.isfinite(numbers) & ~((numbers >= 1) & (numbers < 10000)))
            if odd.size:
                raise UsageError(f"the feature column {name!r} of {data} holds {values[odd[0]].strip()!r} (line "
                                 f"{lines[odd[0]]}), and the model was fitted on dates in it: give ISO dates "
                                 f"({_ISO_DATE_FORMS}), or decimal years (2015.5 is the middle of 2015).")
            print(f"The numbers in {name!r}, a column of dates for the model, are read as decimal years (2015.5 is "
                  "the middle of 2015).", file=sys.stderr)
        else:
            numbers = _dates(values)
        if numbers is None:
            _refuse_mostly_dates(values, name, lines, numbers=False)
            raise UsageError(f"the feature column {name!r} of {data} holds no dates, and the model was fitted on "
                             f"dates in it: give them in ISO form ({_ISO_DATE_FORMS}), as for training.")
    else:
        numbers = _numeric(values)
        if numbers is None:
            numbers = _dates(values)
    if numbers is None:
        if _formatted_numbers(values):
            raise UsageError(f"the feature column {name!r} of {data} holds {_FORMATTED_ADVICE}.")
        _refuse_mostly_dates(values, name, lines)
        raise UsageError(f"the feature column {name!r} of {data} is not numbers, and the model was fitted on numbers "
                         "in it: encode it as it was for training.")
    bad = np.flatnonzero(~_finite(numbers))
    if bad.size:
        where = ", ".join(str(lines[i]) for i in bad[:5])
        raise UsageError(f"the feature column {name!r} of {data} has missing or infinite values "
                         f"(line {where}{', ...' if bad.size > 5 else ''}): fill or drop those rows first.")
    return numbers


def _refuse_mostly_dates(values, name, lines, numbers=True):
    """A column of numbers (unless not ``numbers``) or of ISO dates but for a few cells (a typo, an impossible
    day) is a data error: say which cells, rather than call the column text to encode."""
    kinds = [(_numeric, "numbers", "a decimal point, not a comma")] if numbers else []
    for parse, what, form in kinds + [(_dates, "ISO dates", _ISO_DATE_FORMS)]:
        bad = _a_few_bad_cells(values, lines, parse)
        if bad:
            raise UsageError(f"the column {name!r} holds {what} except for {len(bad)} cell(s) ({_cells_text(bad)}): "
                             f"fix them ({form}), or empty them and drop those rows.")


def _predictions(model, X):
    """Column names and one list of formatted values per row."""
    if hasattr(model, "noise_variance_"):
        mean, std = model.predict(X, return_std=True, include_noise=False)
        with_noise = model.predict(X, return_std=True)[1]
        columns = np.column_stack([mean, std, with_noise])
        return (["predicted_mean", "predicted_std", "predicted_std_with_noise"],
                [[repr(float(v)) for v in row] for row in columns])
    labels = model.predict(X)
    names = ["predicted_class"]
    if hasattr(model, "predict_proba"):
        probabilities = model.predict_proba(X)
        names += [f"probability_{label}" for label in model.classes_.tolist()]
        return names, [[str(label)] + [f"{p:.6g}" for p in row]
                       for label, row in zip(labels.tolist(), probabilities)]
    return names, [[str(label)] for label in labels.tolist()]


def _write_rows(handle, header, rows):
    writer = csv.writer(handle)
    writer.writerow(header)
    writer.writerows(rows)


# -- shared -----------------------------------------------------------------------------
def _rows(X, index):
    return X.iloc[index] if hasattr(X, "iloc") else X[index]


def _fit(model, X, y, quiet, lines=None):
    start = time.perf_counter()
    target = contextlib.nullcontext() if quiet else search_progress(print_progress(file=sys.stderr))
    with target, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", OutlierWarning)
        model.fit(X, y)
    shown = set()
    for warning in caught:
        text = str(warning.message)
        if issubclass(warning.category, OutlierWarning):
            # the same finding, with the command-line spelling of the remedy
            if lines is not None:
                # the model counts training rows from 0; the user looks for the line of the file
                text = re.sub(r"\brow (\d+),", lambda match: f"on line {lines[int(match.group(1))]},", text)
        text = _cli_terms(text)
        if text not in shown:
            # a sentence for the user, not Python's file and line of the library
            print(f"Warning: {text}", file=sys.stderr)
            shown.add(text)
    return time.perf_counter() - start


def _cli_terms(text):
    """A message of the library in the command line's terms: its options, not the estimators' parameters."""
    text = text.replace("likelihood='student_t'", "--robust")
    text = re.sub(r",? or a callable \(estimator, X, y\) -> float", "", text)
    return re.sub(r"\b(time_budget|base_kernels)\b", lambda match: "--" + match.group(1).replace("_", "-"), text)


def _print_model(model, seconds, target_name, names):
    from .inspection import describe
    from .inspection._decompose import structure_text
    from .inspection._describe import compared_structures

    # names are passed explicitly: without pandas the model never sees the column names
    print(f"\nChosen structure: {structure_text(model, names)}   "
          f"({compared_structures(model.search_results_)} candidate structures compared in {seconds:.1f} s)")
    print()
    print(describe(model, feature_names=names, target_name=target_name))


def _check_report_path(path):
    """Refuse a report path before the search, not after it: the suffix, and that the file can be written."""
    if Path(path).suffix.lower() not in (".html", ".htm", ".md"):
        raise UsageError(f"the report path must end in .html or .md, got {str(path)!r}.")
    _check_writable(path, "the report")


def _check_writable(path, what):
    """Refuse an output path that cannot be written, before any work: a folder, or a missing or read-only folder."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"the path for {what}, {str(path)!r}, is a directory; give a file name.")
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"cannot write {what} to {str(path)!r}: {str(folder)!r} is not a directory.")
    if not folder.exists():
        raise UsageError(f"cannot write {what} to {str(path)!r}: the folder {str(folder)!r} does not exist; "
                         "create it first or choose another path.")
    target = path if path.exists() else folder
    if not os.access(target, os.W_OK):
        raise UsageError(f"cannot write {what} to {str(path)!r}: {str(target)!r} is not writable.")


def _save_model(model, path):
    import joblib

    try:
        joblib.dump(model, path)
    except OSError as error:
        raise UsageError(f"cannot write the model to {str(path)!r}: {error.strerror or error}.") from None
    print(f"\nModel saved to {path} (predict with: skgpsearch predict {path} DATA.csv)")


def _write_report(model, X, y, path, **options):
    from .inspection import write_report

    try:
        written = write_report(model, X, y, path, **options)
    except ImportError as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(f"cannot write the report to {str(path)!r}: {error.strerror or error}.") from None
    print(f"\nReport written to {written}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
