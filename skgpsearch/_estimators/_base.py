"""What the structure-searching estimators share: parameters, grammar, criterion, the search call."""

from __future__ import annotations

import inspect
import numbers
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._search import _pipeline
from .._search import (
    SELECTIONS,
    WARP_MIN_EVIDENCE_GAIN,
    PipelineResult,
    ProgressCallback,
    SearchPipeline,
    SearchSettings,
    progress_callback,
    resolve_selection,
    user_stacklevel,
)
from .._search._records import single_threaded_blas
from ..criteria import SelectionCriterion, check_criterion_task, get_criterion
from ..grammar import Grammar, default_base_kernels, get_grammar, get_kind, grammar_names
from ..kernels import from_kernel
from ._validation import validate_numeric_data
from ._warping import InputWarping

__all__ = ["BaseKernels", "CandidateEstimator", "CriterionLike", "RandomStateLike", "StructureSearchMixin",
           "base_kernel_names", "validate_numeric_data"]

#: Base kernels by catalogue name or as scikit-learn kernels, one or several.
BaseKernels = str | Kernel | Sequence[str | Kernel]
#: A criterion name or a callable ``(estimator, X, y) -> float``.
CriterionLike = str | Callable[[Any, Any, Any], float]
#: What ``sklearn.utils.check_random_state`` accepts.
RandomStateLike = int | np.random.RandomState | None
#: A search whose ``time_budget`` was spent before it started still gets this many seconds: it then fits the
#: base kernels only and returns the best of them, fitted and warned.
MIN_SEARCH_BUDGET = 1e-6
#: ``min_improvement="auto"`` under a criterion in nats: a depth that improves the best criterion by at most one
#: nat (a Bayes factor of e, "not worth more than a bare mention" on Jeffreys' scale) ends the search.
MIN_IMPROVEMENT_NATS = 1.0


def base_kernel_names(base_kernels: BaseKernels) -> tuple[str, ...]:
    """Catalogue names from names or scikit-learn kernel instances (duplicates dropped, order kept)."""
    if isinstance(base_kernels, (str, Kernel)):
        base_kernels = [base_kernels]
    names = []
    for item in base_kernels:
        if isinstance(item, str):
            names.append(get_kind(item).name)
        elif isinstance(item, Kernel):
            expr = from_kernel(item, n_features=1)
            if len(expr.leaves) != 1:
                raise ValueError(
                    f"The kernel {item!r} corresponds to {expr}, not to one base kernel; "
                    "list the base kernels by name instead."
                )
            names.append(expr.leaves[0].name)
        else:
            raise ValueError(
                f"base_kernels entries must be kernel names or scikit-learn kernels, got {item!r}."
            )
    if not names:
        raise ValueError("base_kernels is empty.")
    return tuple(dict.fromkeys(names))


def distinct_rows(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(X, y) without the rows that repeat an earlier row exactly, inputs and target; and how many there were.

    Under Gaussian (or Student-t) noise an exact repeat is a second measurement
    that agrees with the first to the last digit: the likelihood grows without
    bound as the noise shrinks, so the noise runs to its lower bound and the
    model interpolates. Measured on 80 rows, each repeated once: one ARD kernel
    in scikit-learn predicted the noise-free function with RMSE 0.33 instead of
    0.024, our search 0.68 instead of 0.021. Repeats with different targets (true
    replicates) carry the noise level and are kept. The first occurrences keep
    their order. If fewer than two distinct rows remain, nothing is removed.
    """
    _, first = np.unique(np.column_stack([X, y]), axis=0, return_index=True)
    if first.size == y.shape[0] or first.size < 2:
        return X, y, 0
    keep = np.sort(first)
    return X[keep], y[keep], y.shape[0] - keep.size


#: Constraints of the grammar-related parameters (also used by KernelSearchCV).
GRAMMAR_CONSTRAINTS = {
    "base_kernels": ["array-like", str, Kernel],
    "grammar": [StrOptions(set(grammar_names())), Grammar],
    "search": [StrOptions({"greedy", "beam"})],
    "beam_width": [Interval(numbers.Integral, 1, None, closed="left")],
}


class StructureSearchMixin:
    """The part of :class:`CompositionalGPRegressor` and :class:`CompositionalGPClassifier` that searches.

    It holds the constraints of the parameters both share, builds the
    grammar and the criterion from them (checking that the criterion applies
    to the estimator's ``_task``), enforces the ``n_jobs`` rule, and runs the
    search with the estimator's budgets and progress reporting. Subclasses
    set ``_task`` (``"regression"`` or ``"classification"``) and give
    :meth:`_run_pipeline` the model fitter of their training set.
    """

    _task = None

    _shared_parameter_constraints = {
        **GRAMMAR_CONSTRAINTS,
        "criterion": [str, callable],
        "n_restarts": [Interval(numbers.Integral, 0, None, closed="left")],
        "max_optimize_samples": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "max_candidates": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "max_fits_per_depth": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "time_budget": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "model_averaging": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "selection": [StrOptions({"auto", *SELECTIONS})],
        "min_improvement": [Interval(numbers.Real, 0, None, closed="left"), StrOptions({"auto"})],
        "baseline_models": ["boolean"],
        "warp_inputs": ["boolean", StrOptions({"auto"})],
    }

    def _unfitted_copy(self) -> Any:
        """A clone that knows the input features (for candidate views and refits)."""
        model = clone(self)
        model.n_features_in_ = self.n_features_in_
        model.date_columns_ = getattr(self, "date_columns_", {})
        if hasattr(self, "feature_names_in_"):
            model.feature_names_in_ = self.feature_names_in_
        return model

    def _fit_input_warping(self, X: np.ndarray, evidence_gain: Callable[[np.ndarray], float]) -> np.ndarray:
        """Set ``input_transformer_`` (None: no warping) and return the training inputs as the GP sees them.

        ``warp_inputs="auto"`` warps a table (two or more columns) searched
        over distance-based base kernels only (SE, RQ, the Matérns: one
        lengthscale per column, which a skewed column does not suit), by a
        grammar given by name. Never a single column -- a series, whose
        periodic, linear and change-point kernels need its own units -- nor a
        table searched with such kernels. "auto" then keeps the warp only
        where the transform changes a column and ``evidence_gain(X_warped)``,
        the task's gain in log evidence of the warped inputs over ``X``,
        exceeds ``WARP_MIN_EVIDENCE_GAIN``.
        """
        warp = self.warp_inputs
        if warp == "auto":
            auto = isinstance(self.base_kernels, str) and self.base_kernels == "auto"
            names = default_base_kernels(self._task, X.shape[1]) if auto else base_kernel_names(self.base_kernels)
            warp = (X.shape[1] >= 2 and not isinstance(self.grammar, Grammar)
                    and all(get_kind(name).distance_based for name in names))
        transformer = InputWarping().fit(X) if warp else None
        gain = None
        if transformer is not None and self.warp_inputs == "auto":
            gain = evidence_gain(transformer.transform(X)) if np.any(transformer.lambdas_ != 1.0) else None
            transformer.evidence_gain_ = gain
            progress = self._progress()
            if gain is not None and progress is not None:
                progress(f"inputs warped: the warp raised the ARD kernel's log evidence by {gain:.1f}"
                         if gain > WARP_MIN_EVIDENCE_GAIN else
                         f"inputs left unwarped: the warp changed the ARD kernel's log evidence by {gain:+.1f}")
            if gain is None or gain <= WARP_MIN_EVIDENCE_GAIN:
                transformer = None
        self.input_transformer_ = transformer
        # the measured gain, also where it left the inputs unwarped (benchmarks/tabular.py records it)
        self._warping_evidence_gain = gain
        return X if transformer is None else transformer.transform(X)

    def _model_inputs(self, X: np.ndarray) -> np.ndarray:
        """Validated inputs ``X`` (user units) as the fitted GP sees them (after ``input_transformer_``)."""
        transformer = getattr(self, "input_transformer_", None)
        return X if transformer is None else transformer.transform(X)

    def _check_n_jobs(self) -> None:
        if self.n_jobs == 0:
            raise ValueError("n_jobs == 0 has no meaning; use None or 1 for sequential fits, -1 for all cores.")

    def _grammar(self, n_features: int, change_operators: tuple[str, ...] | None = None,
                 X: np.ndarray | None = None, white_noise: bool = True) -> Grammar:
        """The grammar: the instance given, or the named one over ``base_kernels``.

        ``base_kernels="auto"`` takes the task's defaults for ``n_features``
        columns (:func:`skgpsearch.grammar.default_base_kernels`). A Grammar
        instance brings its own base kernels and change operators; options set
        to other than the estimator's defaults are ignored next to one, with a
        warning. ``change_operators`` (the regressor's, resolved): passed to a
        named grammar, which must take them; None or empty: none.

        A named grammar puts no base kernel on a column of ``X`` (the inputs the search fits) that is constant
        while others vary: it carries nothing to learn from, and a kernel on it would make predictions depend
        on values it never saw (on one such column, a classifier's isotropic baseline turned a probability of
        0.02 into 0.95 at a new value).

        ``white_noise=False`` (the sparse approximation) leaves the white-noise kernels out of the default base
        kernels and refuses them elsewhere: the sparse bound charges a white-noise term's whole variance to its
        trace penalty (it has no inducing-point part), and a finalist with ``LIN * WN`` refitted on 6 000 rows
        from its exact fit on a sample ended with the signal's variance at 1e-6 and all of it in the noise.
        """
        auto = isinstance(self.base_kernels, str) and self.base_kernels == "auto"
        names = default_base_kernels(self._task, n_features) if auto else base_kernel_names(self.base_kernels)
        if not white_noise:
            self._refuse_white_noise(names, auto, n_features)
            names = [name for name in names if not get_kind(name).white_noise]
        if isinstance(self.grammar, Grammar):
            declared = inspect.signature(type(self).__init__).parameters["base_kernels"].default
            if not auto and (isinstance(declared, str) or names != base_kernel_names(declared)):
                warnings.warn(
                    "base_kernels is ignored when grammar is a Grammar instance; set the grammar's "
                    "own base_kernels instead.",
                    UserWarning,
                )
            explicit = getattr(self, "change_operators", "auto")
            if not (isinstance(explicit, str) and explicit == "auto"):
                warnings.warn(
                    "change_operators is ignored when grammar is a Grammar instance; set the grammar's "
                    "own change_operators instead.",
                    UserWarning,
                )
            for structure in self.grammar.initial(n_features):
                outside = [c for c in structure.columns if not 0 <= c < n_features]
                if outside:
                    # (a change operator's column is read by the start hints before any kernel is built)
                    raise ValueError(f"The structure {structure} uses column {outside[0]}, but the data has "
                                     f"{n_features} columns.")
            return self.grammar
        options = {"base_kernels": names}
        if X is not None:
            constant = [int(c) for c in np.flatnonzero(np.ptp(X, axis=0) == 0)]
            if constant and len(constant) < n_features:
                options["kernels_per_column"] = {c: () for c in constant}
                progress = self._progress()
                if progress is not None:
                    columns = getattr(self, "feature_names_in_", None)
                    progress("no base kernel on the columns constant in the training data: "
                             + ", ".join(str(columns[c]) if columns is not None else f"x{c}" for c in constant))
        if not change_operators:
            return get_grammar(self.grammar, **options)
        if not get_grammar(self.grammar).takes_change_operators:
            raise ValueError(
                f"change_operators={tuple(change_operators)!r} needs grammar='compositional'; the "
                f"{self.grammar!r} grammar has no change operators. Use change_operators=None or 'auto'."
            )
        grammar = get_grammar(self.grammar, change_operators=tuple(change_operators), **options)
        grammar._operators()  # unknown names: a ValueError now, not deep inside the search
        return grammar

    def _refuse_white_noise(self, names: Sequence[str], auto: bool, n_features: int) -> None:
        """A ValueError naming the white-noise kernels the user asked for by name: in ``base_kernels`` (the
        defaults' are left out quietly) or in a Grammar instance's structures and base set."""
        white = [name for name in names if get_kind(name).white_noise] if not auto else []
        if isinstance(self.grammar, Grammar):
            structures = self.grammar.initial(n_features)
            try:
                structures = structures + list(self.grammar.base_set(n_features))
            except (AttributeError, NotImplementedError, ValueError):
                pass  # a grammar without a base set of its own (one fixed structure)
            white = sorted({leaf.name for s in structures for leaf in s.leaves if leaf.kind.white_noise})
        if white:
            raise ValueError(
                f"The sparse approximation cannot fit white-noise kernels ({', '.join(white)}): its bound has "
                "no inducing-point part for them. Leave them out (the likelihood's noise is constant white "
                "noise), or use approximation='exact' for noise that changes along the inputs (LIN * WN)."
            )

    def _criterion(self) -> SelectionCriterion:
        """The criterion object (a callable is wrapped), checked against the estimator's task."""
        criterion = get_criterion(self.criterion)
        check_criterion_task(criterion, self._task)
        if getattr(criterion, "held_out_only", False):
            raise ValueError(
                f"criterion={self.criterion!r} measures predictions of held-out data, but a search scores its "
                "candidates on the training rows, where it rewards a model that interpolates the noise. Use it "
                "as the scoring of KernelSearchCV or cross_val_score, or search with the default criterion (with "
                "Gaussian noise, also one that holds rows out itself: 'loo', 'loo_mse' or 'kfold')."
            )
        return criterion

    def _base_seed(self) -> int:
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _progress(self) -> ProgressCallback | None:
        """The progress callback (see :func:`skgpsearch.search_progress`; None when quiet)."""
        return progress_callback(self.verbose)

    def _start_fit_clock(self) -> None:
        """Forget an earlier fit, and start the clock ``time_budget`` bounds: everything ``fit`` does from here
        counts against it.

        Every fitted attribute (a name ending in ``_``) of an earlier fit goes: a refit with other options
        sets only its own (a Gaussian refit of a Student-t model had kept ``noise_scale_`` and
        ``degrees_of_freedom_``, and ``describe()`` then called its noise Student-t).
        """
        self._forget_fit()
        self._fit_started = time.perf_counter()

    def _forget_fit(self) -> None:
        for name in [name for name in vars(self) if name.endswith("_") and not name.startswith("__")]:
            delattr(self, name)

    def _fit_or_forget(self, fit: Callable[[Any, Any], Any], X: Any, y: Any) -> Any:
        """``fit(X, y)``; when it raises (input it refuses, a Ctrl-C before anything was fitted, an error in a
        progress callback), every fitted attribute goes with it: the estimator then reads as unfitted
        (``NotFittedError``), not as fitted with parts missing (``n_features_in_`` and ``classes_`` are set
        before the search).

        BLAS keeps one thread for the whole fit: its candidates each asked for one and gave the process's
        setting back when none was running, and under joblib's threading backend the thread count then
        changed while another thread was inside LAPACK; OpenBLAS's pool stalled there for minutes on a busy
        machine (a 5-second fit took 154-437 s)."""
        try:
            with single_threaded_blas():
                return fit(X, y)
        except BaseException:
            self._forget_fit()
            raise

    @staticmethod
    def _target_name(y: Any) -> str | None:
        """The name of a pandas Series ``y`` (a non-empty string), else None: ``target_name_``, by which the
        descriptions, figures and reports call the target."""
        name = getattr(y, "name", None)
        return name if isinstance(name, str) and name else None

    def _search_time_budget(self, searches_left: int = 1) -> float | None:
        """The next search's share of ``time_budget``: what this fit has left (after the warp decision and
        the searches before), split evenly over the ``searches_left`` searches still to run."""
        if self.time_budget is None:
            return None
        left = self.time_budget - (time.perf_counter() - self._fit_started)
        return max(left / searches_left, MIN_SEARCH_BUDGET)

    def _min_improvement(self, criterion: SelectionCriterion) -> float:
        """The search's ``min_improvement``: the option, or for "auto" ``MIN_IMPROVEMENT_NATS`` under a
        criterion on the log evidence's scale (nats) and 0 under any other (its units are unknown)."""
        if isinstance(self.min_improvement, str):
            return MIN_IMPROVEMENT_NATS if criterion.evidence_only else 0.0
        return self.min_improvement

    def _multiplicity_penalty(self, criterion: SelectionCriterion, n_features: int) -> bool:
        """Whether ``min_improvement="auto"`` also asks each depth of a table's search (two or more columns) for
        log of its number of candidates in nats, under a criterion in nats (see
        :func:`skgpsearch._search._loop.required_improvement`)."""
        return isinstance(self.min_improvement, str) and criterion.evidence_only and n_features >= 2

    def _fits_per_depth(self, n_features: int) -> int | None:
        """The search's ``max_fits_per_depth`` on ``n_features`` columns (the option, or what "auto" means)."""
        return self.max_fits_per_depth

    def _run_pipeline(self, model_fitter: Any, grammar: Grammar, criterion: SelectionCriterion,
                      seed: int, searches_left: int = 1, budget: float | None = None) -> PipelineResult:
        """The staged search (explore, finalists, select) with this estimator's depth, beam, budgets and progress;
        ``searches_left`` (this one included) share what is left of ``time_budget``, unless ``budget`` (seconds)
        is given: then it fits its first base kernel only (no ARD kernel before it)."""
        selection = resolve_selection(self.selection, model_fitter.has_loo, model_fitter.forecasts,
                                      model_fitter.is_series)
        if self.model_averaging is not None and self.model_averaging > 1 and selection == "stacking":
            warnings.warn(
                f"model_averaging={self.model_averaging} is not used: selection={self.selection!r} chooses "
                "'stacking' here, which predicts with the mixture of finalists whose weights maximise the held-out "
                "log score. Set selection='criterion' (or 'loo') to average the best structures instead.",
                UserWarning, stacklevel=user_stacklevel())
        # one structure, or one level: its candidates are the finalists, nothing to explore cheaply
        explore_effort = "full" if grammar.single_structure or self.max_depth == 1 else model_fitter.explore_effort
        settings = SearchSettings(
            max_depth=self.max_depth,
            beam_width=1 if self.search == "greedy" else self.beam_width,
            n_jobs=self.n_jobs,
            max_candidates=self.max_candidates,
            max_fits_per_depth=self._fits_per_depth(model_fitter.X.shape[1]),
            time_budget=self._search_time_budget(searches_left) if budget is None else budget,
            baseline_first=budget is None,
            model_averaging=self.model_averaging,
            selection=selection,
            min_improvement=self._min_improvement(criterion),
            multiplicity_penalty=self._multiplicity_penalty(criterion, model_fitter.X.shape[1]),
            explore_effort=explore_effort,
            refine_per_level=(_pipeline.REFINE_PER_LEVEL if explore_effort == _pipeline.EXPLORE_EFFORT
                              else _pipeline.SCREENED_REFINE_PER_LEVEL),
            # a search, not one structure or one level, races the starts of what it fits with full effort
            start_race=_pipeline.EXPLORE_START_RACE if explore_effort != "full" else None,
            progress=self._progress(),
            criterion_name=criterion.display_name,
            feature_names=getattr(self, "feature_names_in_", None),
        )
        return SearchPipeline(settings).run(model_fitter, grammar, criterion, seed)


class CandidateEstimator:
    """A candidate's fitted model as a fitted estimator: what a criterion that reads a model receives.

    The fit's context, its training data, is passed explicitly (not parked on
    the estimator); ``template._adopt(models, X, y)`` makes a copy the model.
    """

    def __init__(self, template: Any, X: np.ndarray, y: np.ndarray) -> None:
        self.template, self.X, self.y = template, X, y

    def __call__(self, model: Any) -> Any:
        view = self.template._unfitted_copy()
        # a criterion scores the view on the search's numeric arrays, which carry no column names: with the
        # user's names kept, every prediction would warn that X has none
        view.__dict__.pop("feature_names_in_", None)
        view._adopt([model], self.X, self.y)
        return view
