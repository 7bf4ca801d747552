"""KernelSearchCV: kernel-structure selection as a scikit-learn model-selection meta-estimator."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.sparse import issparse
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import Kernel, Sum, WhiteKernel
from sklearn.metrics import get_scorer_names
from sklearn.model_selection._search import BaseSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

from ..datasets._dates import column_labels, date_columns
from .._search import FAILED, NUMERICAL_FAILURES, CandidateRecord, StructureSearch
from ..criteria import Criterion, criterion_names, get_criterion
from ..criteria._adapters import SKLEARN_CLASSIFIER_CRITERIA, SKLEARN_REGRESSOR_CRITERIA, check_sklearn_gp_supports
from ..grammar import Grammar, default_base_kernels, default_grammar, get_grammar, parse
from ..kernels import DataSummary, from_kernel, inherit_values, to_kernel
from ._base import GRAMMAR_CONSTRAINTS, BaseKernels, base_kernel_names

__all__ = ["KernelSearchCV"]


class _InSampleSplit:
    """One "split" whose training and test sets are all the data: in-sample criteria, one fit per candidate."""

    def split(self, X, y=None, groups=None):
        indices = np.arange(len(X))
        yield indices, indices

    def get_n_splits(self, X=None, y=None, groups=None):
        return 1

    def __repr__(self):
        return "_InSampleSplit()"


class KernelSearchCV(BaseSearchCV):
    """Search the kernel structure of any Gaussian-process estimator, like GridSearchCV.

    The candidates are kernel structures: either the list ``kernels`` or the
    structures of a greedy/beam search over a grammar of base kernels (each
    level's best structures are refitted, and their children start from
    their fitted hyperparameters). Each candidate is the ``estimator`` with
    its kernel parameter set to the candidate kernel. Candidates are scored
    by an in-sample criterion of :mod:`skgpsearch.criteria` (one fit per
    candidate on all the data, no refits per fold; the default) or by
    cross-validation with any scikit-learn scorer, exactly as in
    :class:`~sklearn.model_selection.GridSearchCV`.

    Parameters
    ----------
    estimator : estimator with a kernel parameter
        E.g. ``GaussianProcessRegressor()``, ``GaussianProcessClassifier()``
        or a Pipeline ending in one (then ``kernel_param="gp__kernel"``).
    kernels : list of sklearn kernels, default=None
        Fixed candidates. ``None``: a grammar search.
    base_kernels : sequence of str or sklearn kernels, default=None
        Base kernels of the grammar (each on every input column). ``None``:
        those of :func:`skgpsearch.grammar.default_base_kernels` -- for
        regressors ``("SE", "RQ", "PER", "LIN", "WN")`` on one input column and
        ``("SE",)`` on two or more; for classifiers ``("SE",)``.
    grammar : {"compositional", "sum_of_products"} or Grammar, default=None
        Default: compositional for regressors, sum-of-products for classifiers.
    scoring : str, callable, list, tuple or dict, default=None
        A criterion name of :func:`skgpsearch.criteria.criterion_names`
        (``"bic"``, ``"loo"``, ...), a criterion object, a scikit-learn scorer
        name or callable, or several (list/dict, with ``refit=<name>``).
        ``None``: ``"bic"`` in sample (``cv=None``), the estimator's ``score``
        with ``cv``.
    cv : int, cross-validation generator or iterable, default=None
        ``None`` with criteria: in-sample scoring (``n_splits_ == 1``).
        ``None`` with a scikit-learn scorer: 5-fold, as in GridSearchCV.
        With criteria and a ``cv``, a criterion scores each test fold with
        the hyperparameters fitted on the training folds.
    max_depth : int, default=3
        The most levels of the grammar search; it stops earlier at a level
        that does not improve the best score.
    search : {"greedy", "beam"}, default="greedy"
    beam_width : int, default=2
    add_noise : bool, default=True
        For regressors, every grammar candidate gets a ``WhiteKernel`` term
        (the observation noise, fitted with the kernel; a child's starts from
        its parent's fitted noise level).
    refit : bool, str or callable, default=True
        As in GridSearchCV.
    n_jobs : int, default=None
        Candidates and folds fitted in parallel (joblib).
    error_score : "raise" or float, default=np.nan
        Score of a candidate whose fit fails; the search goes on.
    verbose : int, default=0
    return_train_score : bool, default=False
    kernel_param : str, default="kernel"
        Name of the kernel parameter of ``estimator`` (``"gp__kernel"`` for
        a Pipeline step named ``gp``).
    pre_dispatch : int or str, default="2*n_jobs"

    Attributes
    ----------
    cv_results_ : dict of ndarrays
        As in GridSearchCV (params, split scores, mean/std/rank, fit and
        score times), plus ``structure`` (text) and ``depth`` (search level,
        0 for fixed candidates).
    best_estimator_, best_params_, best_score_, best_index_, refit_time_, n_splits_, scorer_
        As in GridSearchCV.
    best_kernel_ : sklearn Kernel
        The best candidate's kernel, fitted (from ``best_estimator_``) when ``refit``.
    best_structure_ : skgpsearch.grammar.Expr or None
        Its structure (``None`` if the kernel has no catalogue counterpart).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process import GaussianProcessRegressor
    >>> from skgpsearch import KernelSearchCV
    >>> rng = np.random.default_rng(0)
    >>> X = np.linspace(0, 6, 60)[:, None]
    >>> y = np.sin(3 * X[:, 0]) + 0.5 * X[:, 0] + 0.1 * rng.normal(size=60)
    >>> search = KernelSearchCV(GaussianProcessRegressor(), base_kernels=("SE", "LIN"), max_depth=2).fit(X, y)
    >>> print(search.best_structure_)    # the SE absorbs the trend; WN is the fitted noise term
    SE(0) + WN
    >>> search.n_splits_                 # in-sample BIC: one fit per candidate
    1
    """

    _parameter_constraints = {
        **BaseSearchCV._parameter_constraints,
        "scoring": [
            StrOptions(set(get_scorer_names()) | set(criterion_names())),
            callable,
            list,
            tuple,
            dict,
            None,
        ],
        "kernels": [list, tuple, None],
        **GRAMMAR_CONSTRAINTS,
        "base_kernels": [*GRAMMAR_CONSTRAINTS["base_kernels"], None],
        "grammar": [*GRAMMAR_CONSTRAINTS["grammar"], None],
        "max_depth": [Interval(numbers.Integral, 1, None, closed="left")],
        "add_noise": ["boolean"],
        "kernel_param": [str],
    }

    def __init__(
        self,
        estimator: Any,
        *,
        kernels: Sequence[Kernel] | None = None,
        base_kernels: BaseKernels | None = None,
        grammar: str | Grammar | None = None,
        scoring: Any = None,
        cv: Any = None,
        max_depth: int = 3,
        search: str = "greedy",
        beam_width: int = 2,
        add_noise: bool = True,
        refit: bool | str | Callable[..., Any] = True,
        n_jobs: int | None = None,
        error_score: str | float = np.nan,
        verbose: int = 0,
        return_train_score: bool = False,
        kernel_param: str = "kernel",
        pre_dispatch: int | str = "2*n_jobs",
    ) -> None:
        super().__init__(
            estimator=estimator,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.kernels = kernels
        self.base_kernels = base_kernels
        self.grammar = grammar
        self.max_depth = max_depth
        self.search = search
        self.beam_width = beam_width
        self.add_noise = add_noise
        self.kernel_param = kernel_param

    # -- scoring ----------------------------------------------------------------------
    def _scoring_entries(self):
        scoring = self.scoring
        if scoring is None or isinstance(scoring, str) or callable(scoring):
            return [scoring]
        return list(scoring.values()) if isinstance(scoring, dict) else list(scoring)

    @staticmethod
    def _is_criterion(entry):
        return isinstance(entry, Criterion) or (isinstance(entry, str) and entry.lower() in criterion_names())

    def _in_sample(self):
        # (during fit, cv is temporarily the in-sample splitter)
        return (self.cv is None or isinstance(self.cv, _InSampleSplit)) and all(e is None or self._is_criterion(e) for e in self._scoring_entries())

    def _scores_with_criteria(self):
        """Whether a model-selection criterion scores the candidates (in sample, or on folds)."""
        return self._in_sample() or any(self._is_criterion(e) for e in self._scoring_entries())

    def _translated_scoring(self):
        """Criterion names become criterion objects; None becomes bic when scoring in sample."""
        scoring = self.scoring
        if scoring is None:
            return get_criterion("bic") if self._in_sample() else None
        if isinstance(scoring, str):
            return get_criterion(scoring) if self._is_criterion(scoring) else scoring
        if callable(scoring):
            return scoring
        if isinstance(scoring, dict):
            return {k: (get_criterion(v) if isinstance(v, str) and self._is_criterion(v) else v) for k, v in scoring.items()}
        # a list of names: a dict keyed by the names, as sklearn does for lists
        return {v: (get_criterion(v) if self._is_criterion(v) else v) for v in scoring}

    def _get_scorers(self):
        original = self.scoring
        self.scoring = self._translated_scoring()
        try:
            return super()._get_scorers()
        finally:
            self.scoring = original

    # -- fitting ------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike | None = None, **params) -> KernelSearchCV:
        """Run the search (see :class:`~sklearn.model_selection.GridSearchCV`.fit).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Several targets only with a scikit-learn scorer on held-out folds:
            the model-selection criteria score a GP of one target (a
            ``ValueError`` says so).
        **params : dict
            Fit parameters routed as in GridSearchCV.

        Returns
        -------
        self : object
        """
        if not hasattr(self.estimator, "get_params"):
            raise ValueError(
                f"estimator must be a scikit-learn estimator with a kernel parameter (a GaussianProcessRegressor or "
                f"GaussianProcessClassifier, or a Pipeline ending in one), got {self.estimator!r}."
            )
        if self.kernels is not None:
            if isinstance(self.kernels, (Kernel, str)) or not isinstance(self.kernels, Sequence):
                raise ValueError(f"kernels must be a list of scikit-learn kernels, got {self.kernels!r}: wrap one "
                                 "kernel in a list, or give None for a grammar search.")
            named = [k for k in self.kernels if isinstance(k, str)]
            if named:
                raise ValueError(f"kernels holds {named[0]!r}, a name: give scikit-learn kernel objects (e.g. "
                                 "RBF() + WhiteKernel()), or kernels=None with base_kernels=[...] to search a "
                                 "grammar over named base kernels.")
            others = [k for k in self.kernels if not isinstance(k, Kernel)]
            if others:
                raise ValueError(f"kernels holds {others[0]!r}, which is not a scikit-learn kernel.")
        if self.kernel_param not in self.estimator.get_params(deep=True):
            raise ValueError(
                f"{type(self.estimator).__name__} has no parameter {self.kernel_param!r}; set kernel_param to the "
                "name of its kernel parameter (e.g. 'gp__kernel' for a Pipeline step named 'gp')."
            )
        if self.kernels is not None and len(self.kernels) == 0:
            raise ValueError("kernels is empty: give at least one candidate kernel, or None for a grammar search.")
        self._check_criteria()
        if y is not None and self._scores_with_criteria():
            y = self._one_target_for_criteria(y)
        saved_cv = self.cv
        self._search_data = (X, y, params)
        if self._in_sample():
            self.cv = _InSampleSplit()
        try:
            super().fit(X, y, **params)
        finally:
            self.cv = saved_cv
            del self._search_data
        if self.refit:
            self.best_kernel_ = self._fitted_kernel(self.best_estimator_)
        elif hasattr(self, "best_index_"):
            self.best_kernel_ = self.cv_results_["params"][self.best_index_][self.kernel_param]
        if hasattr(self, "best_kernel_"):
            try:
                self.best_structure_ = from_kernel(self.best_kernel_, n_features=self._n_gp_features)
            except ValueError:
                # a multi-class classifier's fitted kernel is one per class (a CompoundKernel): the candidate's
                # structure as the search recorded it
                self.best_structure_ = self._searched_structure()
        return self

    def _check_criteria(self):
        """A ``ValueError`` for a criterion the GP step cannot be scored by, naming those it can: the views of
        scikit-learn's GPs compute only some (see ``skgpsearch.criteria._adapters``); every candidate would
        otherwise score NaN and the first be called best."""
        step = self._gp_step()
        regression = self._is_regression()
        supported = SKLEARN_REGRESSOR_CRITERIA if regression else SKLEARN_CLASSIFIER_CRITERIA
        sklearn_gp = isinstance(step, (GaussianProcessRegressor, GaussianProcessClassifier))
        ours = callable(getattr(step, "log_marginal_likelihood_on", None))
        in_sample = self._in_sample()
        for entry in self._scoring_entries():
            entry = "bic" if entry is None and in_sample else entry  # (the in-sample default)
            if not self._is_criterion(entry):
                continue
            if not (sklearn_gp or ours):
                # (every candidate would score NaN, with warnings only, and the first be called best)
                name = entry if isinstance(entry, str) else getattr(entry, "name", None) or type(entry).__name__
                raise ValueError(
                    f"The criterion {name!r} scores Gaussian-process models, but the estimator's last step is "
                    f"{type(step).__name__}. Use a GaussianProcessRegressor or GaussianProcessClassifier (or a "
                    "Pipeline ending in one), or score the candidates with a scikit-learn scorer on held-out folds "
                    "(for example scoring='neg_mean_squared_error' or 'accuracy', cv=5)."
                )
            criterion = get_criterion(entry) if isinstance(entry, str) else entry
            task = "regression" if regression else "classification"
            if not getattr(criterion, task, True):
                raise ValueError(f"The criterion {criterion.name!r} does not apply to {task}; use one of "
                                 f"{', '.join(supported)}, or a scikit-learn scorer on folds (scoring=..., cv=5).")
            if sklearn_gp:
                check_sklearn_gp_supports(criterion.name, step)

    def _one_target_for_criteria(self, y):
        """``y`` as the criteria score it: one target (a column vector flattened, with scikit-learn's warning),
        and two classes for a classifier; a ``ValueError`` naming the alternative otherwise."""
        targets = np.asarray(y)
        if targets.ndim == 2:
            if targets.shape[1] != 1:
                raise ValueError(
                    f"y has {targets.shape[1]} target columns, but the model-selection criteria score a GP of one "
                    "target. Search each target separately, or score the candidates with a scikit-learn scorer on "
                    "held-out folds (for example scoring='neg_mean_squared_error', cv=5)."
                )
            y = column_or_1d(y, warn=True)
            targets = np.asarray(y)
        if not is_classifier(self.estimator):
            return y
        check_classification_targets(targets)  # a continuous target: scikit-learn's "Unknown label type"
        target_type = type_of_target(targets, input_name="y")
        if target_type != "binary":
            raise ValueError(
                f"Only binary classification is supported. The type of the target is {target_type} "
                f"({np.unique(targets).size} classes): the model-selection criteria score a binary "
                "GaussianProcessClassifier (a multi-class one fits a kernel per class). Score the candidates on "
                "held-out folds instead, for example scoring='accuracy' or 'neg_log_loss' with cv=5."
            )
        return y

    def _searched_structure(self):
        """The best candidate's structure as recorded in ``cv_results_`` (None without one or a catalogue form)."""
        structures = self.cv_results_.get("structure")
        text = structures[self.best_index_] if structures is not None and hasattr(self, "best_index_") else None
        try:
            return parse(text) if isinstance(text, str) else None
        except ValueError:
            return None

    def score(self, X: ArrayLike, y: ArrayLike | None = None, **params) -> float:
        """Score of the refitted best estimator on (X, y).

        With a scikit-learn scorer, that scorer (as in GridSearchCV). With an
        in-sample criterion the criterion only *selects*; ``score`` is then the
        best estimator's own ``score`` (R² or accuracy), so that KernelSearchCV
        is scored like any regressor or classifier, e.g. in ``cross_val_score``.
        """
        if self.scoring is None or all(self._is_criterion(e) for e in self._scoring_entries()):
            check_is_fitted(self)
            if not self.refit:
                raise ValueError("score needs refit=True (no best estimator was refitted).")
            return self.best_estimator_.score(X, y, **params)
        return super().score(X, y, **params)

    def _fitted_kernel(self, fitted):
        """The fitted kernel (``kernel_``) of the GP inside ``fitted``."""
        *path, name = self.kernel_param.split("__")
        owner = fitted
        for part in path:
            # a meta-estimator that fits a clone keeps it as ``part_`` (TransformedTargetRegressor.regressor_)
            clone_fitted = getattr(owner, part + "_", None)
            if hasattr(clone_fitted, "get_params"):
                owner = clone_fitted
            else:
                owner = (owner.get_params(deep=False)[part] if part in owner.get_params(deep=False)
                         else owner.get_params()[part])
        return getattr(owner, name + "_", getattr(owner, name))

    def _run_search(self, evaluate_candidates):
        X, y, params = self._search_data
        Xt = self._gp_inputs(X, y)
        n_features = self._n_gp_features = Xt.shape[1]
        if self.kernels is not None:
            candidates = [clone(k) for k in self.kernels]
            structures = []
            for kernel in candidates:
                try:
                    structures.append(str(from_kernel(kernel, n_features=n_features)))
                except ValueError:
                    structures.append(repr(kernel))
            evaluate_candidates(
                [{self.kernel_param: k} for k in candidates],
                more_results={"structure": structures, "depth": [0] * len(candidates)},
            )
            return
        regression = self._is_regression()
        targets = self._gp_targets(y) if regression and y is not None else None
        # (the variance of every output together: a (n, 1) target gives the same defaults as (n,))
        summary = DataSummary.from_data(Xt, None if targets is None else targets.ravel())
        grammar = self._grammar(regression, n_features)
        several_metrics = "A grammar search with several metrics needs refit=<metric name> to steer it."
        if isinstance(self._translated_scoring(), dict) and not isinstance(self.refit, str):
            raise ValueError(several_metrics)

        def score_key(results):
            # (a callable scoring that returns a dict of metrics shows itself only in the results)
            if "mean_test_score" in results:
                return "mean_test_score"
            if not isinstance(self.refit, str):
                raise ValueError(several_metrics)
            return f"mean_test_{self.refit}"
        kernels = {}
        # a child's added noise term starts from its parent's fitted noise (the children of the first level: None)
        noise_of = {}

        def evaluate(candidates, deadline):
            level = [c.structure for c in candidates]
            for expr in level:
                kernels[expr] = self._candidate_kernel(expr, summary, regression, noise_of.get(expr))
            results = evaluate_candidates(
                [{self.kernel_param: kernels[e]} for e in level],
                more_results={"structure": [str(e) for e in level], "depth": [c.depth for c in candidates]},
            )
            scores = np.asarray(results[score_key(results)][-len(level):], dtype=float)
            for expr, score in zip(level, scores):
                record = CandidateRecord(expr, criterion=float(score))
                if not np.isfinite(score):
                    record.fail(FAILED, f"score {score}")
                yield record

        def expand(record):
            # a level's best is refitted on all the data, so that its children start from its fitted values
            parent, noise = self._refitted_structure(kernels[record.structure], X, y, params, record.structure,
                                                     n_features)
            children = grammar.expand(parent, n_features)
            for child in children:
                noise_of.setdefault(child, noise)
            return children

        StructureSearch(
            evaluate,
            expand,
            initial=grammar.initial(n_features),
            max_depth=self.max_depth,
            beam_width=1 if self.search == "greedy" else self.beam_width,
            require_success=False,
        ).run()

    def _candidate_kernel(self, expr, summary, regression, noise=None):
        """The candidate's kernel: the structure's, plus (``add_noise``) a WhiteKernel from ``noise`` (its parent's
        fitted noise level), else from a tenth of the target variance, within 1e-6 to 10 times that variance."""
        kernel = to_kernel(expr, summary=summary)
        if regression and self.add_noise and not any(leaf.kind.white_noise for leaf in expr.leaves):
            v = summary.target_variance
            low, high = 1e-6 * v, 10.0 * v
            start = 0.1 * v if noise is None else float(np.clip(noise, low, high))
            kernel = kernel + WhiteKernel(start, noise_level_bounds=(low, high))
        return kernel

    def _gp_targets(self, y):
        """The regression targets as the GP step fits them: standardised when it has ``normalize_y=True`` (the
        candidates' initial values and bounds, the noise's too, are then on that scale, whatever y's units)."""
        targets = np.asarray(y, dtype=float)
        *path, _ = self.kernel_param.split("__")
        if self.estimator.get_params(deep=True).get("__".join([*path, "normalize_y"])) is True:
            std = targets.std(axis=0)
            targets = (targets - targets.mean(axis=0)) / np.where(std > 0, std, 1.0)
        return targets

    def _refitted_structure(self, kernel, X, y, params, expr, n_features):
        """A level's best refitted on all the data: its structure carrying the fitted values, and the fitted
        noise level of the WhiteKernel ``add_noise`` added (None without one)."""
        model = clone(self.estimator).set_params(**{self.kernel_param: kernel})
        try:
            # the estimator's own fit parameters: groups and the like are the splitter's and the scorer's
            model.fit(X, y, **self._get_routed_params_for_fit(params).estimator.fit)
        except NUMERICAL_FAILURES:
            return expr, None
        fitted_kernel = self._fitted_kernel(model)
        noise = None
        if isinstance(fitted_kernel, Sum) and isinstance(fitted_kernel.k2, WhiteKernel):
            noise = float(fitted_kernel.k2.noise_level)
        try:
            fitted = from_kernel(fitted_kernel, n_features=n_features)
        except ValueError:  # a fitted kernel without a counterpart in the grammar
            return expr, noise
        # keep the searched structure's shape; take the fitted values where the base kernels match
        return inherit_values(expr, fitted), noise

    def _gp_inputs(self, X, y):
        """X as the GP step sees it (a Pipeline's transformers fitted once for the defaults)."""
        estimator = self.estimator
        if isinstance(estimator, Pipeline) and len(estimator.steps) > 1:
            X = clone(estimator[:-1]).fit_transform(X, y)
        dates = date_columns(X)
        if dates:
            raise ValueError(
                f"column(s) {column_labels(X, dates)} of X hold dates, which scikit-learn's validation would read "
                "as micro- or nanoseconds since 1970 (a yearly cycle of period about 3e13): measure them in years "
                "first, with skgpsearch.DecimalYears as the pipeline's first step, e.g. make_pipeline(DecimalYears(), "
                "GaussianProcessRegressor()) and kernel_param='gaussianprocessregressor__kernel'."
            )
        if issparse(X):
            raise ValueError(
                "Sparse input is not supported: Gaussian-process kernels need dense inputs; convert with X.toarray()."
            )
        return check_array(X, dtype=np.float64)

    def _gp_step(self):
        estimator = self.estimator
        return estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator

    def _is_regression(self):
        return is_regressor(self._gp_step()) and not is_classifier(self._gp_step())

    def _grammar(self, regression, n_features):
        if isinstance(self.grammar, Grammar):
            return self.grammar
        task = "regression" if regression else "classification"
        base = default_base_kernels(task, n_features) if self.base_kernels is None else self.base_kernels
        return get_grammar(self.grammar or default_grammar(task), base_kernels=base_kernel_names(base))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # BaseSearchCV does not pass the target tags through; the criteria score a GP of one target
        inner = get_tags(self.estimator).target_tags
        tags.target_tags.multi_output = inner.multi_output and not self._scores_with_criteria()
        tags.target_tags.single_output = inner.single_output
        if tags.classifier_tags is not None and self._scores_with_criteria():
            tags.classifier_tags.multi_class = False  # the criteria score a binary classifier
        return tags
