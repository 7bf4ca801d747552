"""CompositionalGPClassifier: GP classification whose kernel structure is searched."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._search import (
    BinaryClassificationModelFitter,
    BinaryLaplaceModel,
    PipelineResult,
    averaged_log_odds,
    finalists_table,
    averaged_probability,
    classification_likelihood,
    classification_summary,
    classification_warping_evidence_gain,
    discrete_feature_mask,
    fits_per_depth,
    likelihood_names,
    warn_about_degenerate_optimum,
    user_stacklevel,
)
from ..grammar import Grammar
from ..inspection import ClassificationView, Decomposition, decompose, describe
from ._base import (MIN_SEARCH_BUDGET, BaseKernels, CriterionLike, RandomStateLike, StructureSearchMixin,
                    validate_numeric_data)

__all__ = ["CompositionalGPClassifier"]


#: Random restarts of ``n_restarts="auto"`` for a likelihood with parameters of its own (the robust mixture):
#: only random starts draw other outlier rates; probit and logistic get none (benchmarks/results/
#: classifier_restarts_2026-12-02.txt: the same test error on 60 folds, 5-9 % fewer evaluations).
AUTO_RESTARTS_WITH_LIKELIHOOD_PARAMETERS = 2


class CompositionalGPClassifier(StructureSearchMixin, ClassifierMixin, BaseEstimator):
    """Gaussian-process classification with a searched kernel structure (Laplace approximation).

    ``fit`` searches sums of products of base kernels (by default one
    squared-exponential kernel per input column, the sum-of-products grammar
    of Mrkšić 2014, §4.1.2), fits every candidate's kernel hyperparameters, a
    constant latent mean and the likelihood's parameters by maximising the
    Laplace-approximate log marginal likelihood (R&W §3.4, §5.5.1), scores
    each candidate with a criterion (default "BIC light") and keeps the best.

    Multi-class problems are solved one-vs-rest: one binary GP, with its own
    searched structure, per class; the class probabilities are the binary
    probabilities normalised to sum to one. (A joint multi-class Laplace
    model would couple the classes' structures and make each candidate's fit
    K times as large; one-vs-rest keeps each class's structure readable.)

    On large data (more than 2000 rows, with a criterion computed from the
    evidence alone: ``"bic_light"``, ``"bic"``, ``"aic"``, ``"lml"``), each binary
    problem's structures are searched on 2000 rows drawn with the class
    proportions; the 4 best distinct structures, the baselines competing,
    are refitted on 5 times as many rows, halving their number, up to 5000
    rows, and the final model conditions on those 5000. The Laplace engine
    is exact (O(n³) time per fit), so the posterior stays on that subset;
    ``search_results_`` marks the refits (``"finalist refitted on N rows"``).

    Parameters
    ----------
    base_kernels : sequence of str or sklearn kernels, default=("SE",)
        Base kernels of the grammar, each tried on every input column but those
        constant in the training data (see :class:`CompositionalGPRegressor`).
        Ignored when ``grammar`` is a :class:`~skgpsearch.grammar.Grammar`
        instance.
    grammar : {"sum_of_products", "compositional"} or Grammar, default="sum_of_products"
        The sum-of-products grammar of Mrkšić 2014 (add a base kernel as a new
        term, or multiply one term by a base kernel) or the full
        compositional grammar.
    criterion : str or callable, default="bic_light"
        ``"bic_light"`` (−½ BIC counting base kernels only, Mrkšić 2014, §4.2.3),
        ``"bic"``, ``"aic"``, ``"lml"``, ``"laplace"``, ``"laplace_0"``,
        ``"laplace_aic"``, ``"laplace_bic"`` (Laplace-approximate evidence
        integrated over the hyperparameters, Besginow et al. 2024), ``"cv_accuracy"``
        (10-fold cross-validated accuracy with the fitted hyperparameters,
        Mrkšić 2014, §4.2.4; it has no complexity penalty, so ``max_depth`` is its
        guard), or a callable ``(estimator, X, y) -> float`` (it receives a
        binary model and labels in {−1, +1}).
    likelihood : {"probit", "logistic", "robust"}, default="probit"
        ``"probit"`` Φ(y f) (as in Mrkšić 2014), ``"logistic"`` σ(y f), or
        ``"robust"`` ε/2 + (1 − ε) Φ(y f) whose outlier rate ε (label noise
        far from the boundary) is learned.
    max_depth : int, default=6
        Largest number of expansion steps (depth 1 = single base kernels).
    search : {"greedy", "beam"}, default="greedy"
    beam_width : int, default=2
    n_restarts : int or "auto", default="auto"
        Random restarts of the hyperparameter optimisation per candidate, on
        top of the structured starts and the warm start from the parent.
        ``"auto"``: 2 with ``likelihood="robust"`` (its evidence is multimodal in
        the outlier rate, and only random starts draw other rates), none
        otherwise: on the 60 folds of ``benchmarks/tabular.py`` two restarts
        changed no test error and cost 5-9 % of the evaluations.
    discrete_features : "auto", bool, array-like of int or bool, default="auto"
        Columns whose lengthscales may not be shorter than their smallest gap
        between distinct values (Mrkšić 2014, §4.4.1: otherwise the GP fits
        isolated values of a discretised feature). ``"auto"``: columns with at
        most ``max(20, n_samples // 4)`` distinct values; ``False``: none;
        ``True``: all; or a mask / list of column indices. Every other
        column's lengthscales may not be shorter than the median spacing of
        its distinct values (the typical distance to a neighbour): shorter,
        an SE separates almost every pair of points and acts as white noise.
    max_optimize_samples : int or None, default=300
        During the search, hyperparameters are optimised on a random
        stratified subset of this many rows when the data has more (the
        criterion uses all the data); the chosen structure is then refitted
        on all the rows, starting from its subset optimum.
    baseline_models : bool, default=True
        After the search, three standard models -- the ARD product of SE
        kernels over all columns, the additive model (one SE per column) and
        one isotropic SE kernel over all columns (one lengthscale for all) --
        are fitted on all the rows and compete in the select stage with the
        search's structures, so the search never ends below them. Listed in
        ``search_results_`` (depth 1, message "baseline"). Only for grammars
        that offer them (per-column SE kernels); on one column the three are
        the one SE kernel.
    max_candidates : int, default=None
        Budget of candidate fits per binary problem; a problem's search stops with
        the best found so far (no finalists refitted, no baselines compared), and a
        warning says so.
    max_fits_per_depth : int, "auto" or None, default="auto"
        Levels with more candidates than this (many columns) are screened:
        every candidate gets a cheap score and only the most promising are
        fitted; the others appear in ``search_results_`` with status
        ``"screened out"``. From depth 2 on the score is the Laplace evidence
        of the candidate's starts next to its parent's optimum, on the rows
        its fit uses, without optimisation; on the first level, whose
        candidates have no parent, a short Laplace fit on a stratified subset
        of 120 rows.
        ``None`` fits every candidate. "auto" screens at 32 from 20 columns
        on and fits every candidate below: on 30 columns (breast_cancer)
        screening cut a fold from 139 to 91 s for one test row in 569, on
        13 (heart) it cost more than it saved.
    time_budget : float, default=None
        Budget in seconds for the whole ``fit``, the warp decision (see
        ``warp_inputs``) and the finalists included: on two or more columns
        each search fits one ARD kernel first, then sends a
        batch of fits only when its predicted time ends before its budget,
        less what its finalists will need, and a fit still running at the
        end of the budget stops its optimisation where it is (see the
        regressor's ``time_budget``); a warning says where it stopped. With several
        classes, each one-vs-rest search gets an even share of what is
        left when it starts, so time a search did not use goes to the next.
    n_jobs : int, default=None
        Candidates fitted in parallel (joblib).
    random_state : int, RandomState instance or None, default=None
        With an int, results are reproducible and the same for any ``n_jobs``.
    verbose : int, default=0
        ``1`` prints one line per search depth.
    model_averaging : int or None, default=None
        ``None``: predict with what ``selection`` chooses (one model, or the
        stacking mixture). An int ``k >= 2``: per binary problem,
        ``predict_proba`` averages the class probabilities of the ``k`` best
        fitted structures, weighted by exp(criterion − best criterion) with
        ``selection="criterion"``, by their leave-one-out log scores with
        ``"loo"`` (models below 1e-6 of the best's weight are dropped; Mrkšić
        2014, §5.2 averages over the searched models too). ``"stacking"`` (the
        default) has its own weights and ignores ``k`` (with a warning). ``structure_`` and
        ``describe`` keep the chosen model.
    selection : {"auto", "criterion", "loo", "stacking"}, default="auto"
        How each binary problem's final model is chosen among its finalists
        (the search's best structures, the best of each depth within 20 nats
        of the criterion's best, and the baselines): by the search ``criterion``; by the approximate
        leave-one-out log predictive probability of the labels at the fitted
        hyperparameters (``"loo"``, from the Laplace posterior's cavities,
        Vehtari et al. 2016, under each finalist's calibrated predictive, see
        ``probability_calibration_``); or as the mixture of finalists whose
        weights maximise that held-out log score, less one nat per
        hyperparameter (``"stacking"``, Yao et al. 2018).
        ``"auto"``: ``"stacking"`` (on any number of columns: the Laplace
        engine gives every finalist's leave-one-out densities).
        ``finalists_`` lists the finalists.
    objective : {"lml", "map"}, default="lml"
        What each candidate's hyperparameters maximise: the Laplace evidence,
        or the evidence plus the log of the weak default hyperprior
        (:class:`~skgpsearch.criteria.HyperPrior`: normal priors on the log
        lengthscales and amplitudes, the constant mean and the outlier rate),
        the MAP estimate. The criteria still read the evidence.
    min_improvement : float or "auto", default="auto"
        Each binary search stops at a depth that improves its criterion by no
        more than this (the improvement is kept; 0: only a depth that does not
        improve). ``"auto"`` is 1 nat under ``bic_light``, ``bic``, ``aic``
        and ``lml`` and 0 under the others; on the six classification tables
        of ``benchmarks/tabular.py`` it stopped 19 of 80 searches a depth
        earlier, with the same or lower error. On two or more columns "auto"
        also asks each depth for log K nats, K being its number of candidates,
        and stops when the next depth's improvement, predicted from the last
        two, would be less (see the regressor's ``min_improvement``).
    warp_inputs : "auto" or bool, default="auto"
        Warp each input column with a Yeo-Johnson power transform (exponent
        by maximum likelihood) and standardise it before the search, and
        apply the same transform to new inputs. A skewed column (a few rows
        far out) defeats a kernel with one lengthscale per column; on
        ``benchmarks/tabular.py`` the warp took one ARD GP from 30.7 % to
        26.7 % error on liver and from 0.216 to 0.170 SMSE on cpus. A column
        is warped only where the transform clearly makes it more normal (a
        likelihood-ratio test), after division by its standard deviation.
        "auto" considers tables (two or more columns) searched over SE, RQ
        or Matérn base kernels, and warps one only where the evidence asks
        for it: one ARD kernel's Laplace log evidence on the warped columns
        must beat that on yours by more than ``WARP_MIN_EVIDENCE_GAIN`` (1
        nat, summed over the binary problems; each fitted on at most 300
        rows). Warping helps some tables and hurts others (measured: liver
        29.2 to 27.8 % error, pima 22.1 to 22.8 %), and the evidence told
        them apart on every fold. True always warps, False never.
        ``X_train_`` keeps your units; lengthscales are in the warped units
        (see ``input_transformer_`` and :meth:`describe`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    structure_ : Expr, or list of Expr (one per class, multi-class)
        The chosen structure(s); base kernels carry their fitted values.
    kernel_ : sklearn Kernel, or list of them
        The fitted kernel(s) of the latent function.
    latent_mean_ : float or ndarray of shape (n_classes,)
        The fitted constant mean of the latent function(s).
    outlier_rate_ : float or ndarray of shape (n_classes,)
        The fitted outlier rate ε (``likelihood="robust"`` only).
    best_score_ : float
        Criterion value of the chosen model (summed over the binary problems;
        averaged for ``cv_accuracy``).
    log_marginal_likelihood_value_ : float
        Laplace-approximate log marginal likelihood (summed over classes).
    n_hyperparameters_ : int
        Free hyperparameters (kernel, mean, likelihood), summed over classes.
    search_results_ : dict of lists
        One entry per evaluated candidate (see the regressor), plus ``class``
        (the positive class of the binary problem).
    search_path_ : list of dict
        Per binary problem and depth: best structure, criterion, candidates.
    selection_ : str
        The rule that chose the final models (what ``selection="auto"`` became).
    finalists_ : dict of lists
        Per binary problem (``class``), the structures its final model was
        chosen from, as in the regressor (``loo_log_density``: Σ_i log p(y_i |
        y_−i) of the labels).
    search_stop_reason_ : str or list of str
    model_weights_ : ndarray, or list of them (multi-class)
        Weights of the averaged structures (``[1.0]`` without ``model_averaging``).
    probability_calibration_ : list of dict, or list of them (multi-class)
        For each averaged model (in the order of ``model_weights_``), the
        leave-one-out calibration of its predictive probabilities:
        ``variance_scale``, the factor on the latent variance they integrate
        (1: the Laplace predictive as it is), ``base_rate``, the probability
        of the class the predictive turns to far from every training row
        (see :meth:`predict_proba`), and ``probability_floor``, the
        least probability either class gets (see :meth:`predict_proba`).
    diagnostics_ : list of str
        Degenerate features of the chosen latent models' optima (a
        hyperparameter at a bound, a term constant or white noise on the
        training inputs; see the regressor), prefixed by the class for
        multi-class problems. Fitting warns
        (:class:`~skgpsearch.DegenerateOptimumWarning`) when there are any.
    input_transformer_ : object or None
        The input warping (``spread_``, ``lambdas_``, ``mean_``, ``scale_`` per column,
        ``transform(X)`` and, under "auto", ``evidence_gain_``: the gain in log evidence
        that decided it), or None when the inputs were used as given.
    date_columns_ : dict
        The columns that held dates, by index, with the rule that measures each in decimal
        years (see the regressor's ``date_columns_``); empty when there were none.
    X_train_ : ndarray
        Training inputs.
    y_train_ : ndarray
        Training labels (as given).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
    target_name_ : str or None
        The name of ``y`` when it was a named pandas Series (used by ``describe()`` and the report).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsearch import CompositionalGPClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(120, 3))
    >>> y = (np.sin(2 * X[:, 0]) + X[:, 1] > 0).astype(int)
    >>> clf = CompositionalGPClassifier(max_depth=2, random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    _task = "classification"

    _parameter_constraints = {
        **StructureSearchMixin._shared_parameter_constraints,
        "likelihood": [StrOptions(set(likelihood_names()))],
        "max_depth": [Interval(numbers.Integral, 1, None, closed="left")],
        "discrete_features": [StrOptions({"auto"}), "boolean", "array-like"],
        "objective": [StrOptions({"lml", "map"})],
        "max_fits_per_depth": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "n_restarts": [Interval(numbers.Integral, 0, None, closed="left"), StrOptions({"auto"})],
    }

    def __init__(
        self,
        base_kernels: BaseKernels = ("SE",),
        *,
        grammar: str | Grammar = "sum_of_products",
        criterion: CriterionLike = "bic_light",
        likelihood: str = "probit",
        max_depth: int | None = 6,
        search: str = "greedy",
        beam_width: int = 2,
        n_restarts: int | str = "auto",
        discrete_features: str | bool | ArrayLike = "auto",
        max_optimize_samples: int | None = 300,
        baseline_models: bool = True,
        max_candidates: int | None = None,
        max_fits_per_depth: int | str | None = "auto",
        time_budget: float | None = None,
        n_jobs: int | None = None,
        random_state: RandomStateLike = None,
        verbose: int = 0,
        model_averaging: int | None = None,
        selection: str = "auto",
        objective: str = "lml",
        min_improvement: float | str = "auto",
        warp_inputs: str | bool = "auto",
    ) -> None:
        self.warp_inputs = warp_inputs
        self.model_averaging = model_averaging
        self.selection = selection
        self.objective = objective
        self.min_improvement = min_improvement
        self.base_kernels = base_kernels
        self.grammar = grammar
        self.criterion = criterion
        self.likelihood = likelihood
        self.max_depth = max_depth
        self.search = search
        self.beam_width = beam_width
        self.n_restarts = n_restarts
        self.discrete_features = discrete_features
        self.max_optimize_samples = max_optimize_samples
        self.baseline_models = baseline_models
        self.max_candidates = max_candidates
        self.max_fits_per_depth = max_fits_per_depth
        self.time_budget = time_budget
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # -- fitting ------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike) -> CompositionalGPClassifier:
        """Search the kernel structure(s) and fit the GP classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric features.
        y : array-like of shape (n_samples,)
            Class labels (at least two classes; strings or integers).

        Returns
        -------
        self : object
        """
        return self._fit_or_forget(self._search_and_fit, X, y)

    def _search_and_fit(self, X: ArrayLike, y: ArrayLike) -> CompositionalGPClassifier:
        """The work of :meth:`fit`."""
        self._validate_params()
        self._start_fit_clock()
        target_name = self._target_name(y)
        X, y = _validate_training_data(self, X, y)
        self.target_name_ = target_name
        self._check_n_jobs()
        check_classification_targets(y)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                f"A classifier needs samples of at least 2 classes; the data has only class {self.classes_.tolist()[0]!r}."
            )
        criterion = self._criterion()
        likelihood = classification_likelihood(self.likelihood)
        n_restarts = self.n_restarts
        if n_restarts == "auto":
            # a likelihood with parameters of its own (the robust mixture's outlier rate) is explored by random starts
            n_restarts = AUTO_RESTARTS_WITH_LIKELIHOOD_PARAMETERS if likelihood.n_params else 0
        grammar = self._grammar(X.shape[1], X=X)
        seed = self._base_seed()
        positives = [1] if self.classes_.size == 2 else list(range(self.classes_.size))
        # discretised columns are recognised in the user's units (a warped integer column has uneven gaps)
        discrete_mask = discrete_feature_mask(self.discrete_features, X)
        labels = [np.where(y_index == k, 1.0, -1.0) for k in positives]
        X_model = self._fit_input_warping(X, evidence_gain=lambda X_warped: classification_warping_evidence_gain(
            X, X_warped, labels, likelihood, discrete_mask, seed, n_jobs=self.n_jobs))
        summary = classification_summary(X_model, discrete_mask=discrete_mask)
        models, outcomes, interrupted_in = [], [], None
        # (a multiclass fit says once which of its one-vs-rest searches the time budget cut short, and each
        # other warning of its searches once)
        budget_reached, other_warnings = [], {}
        for i, (k, y_binary) in enumerate(zip(positives, labels)):
            progress = self._progress()
            fitter = BinaryClassificationModelFitter(
                X_model, y_binary, criterion, likelihood, summary, n_restarts=n_restarts,
                max_optimize_samples=self.max_optimize_samples, baseline_models=self.baseline_models,
                searching=not grammar.single_structure, objective=self.objective,
            )
            outcome = None
            if interrupted_in is None:
                with warnings.catch_warnings(record=len(positives) > 1) as caught:
                    if caught is not None:
                        warnings.simplefilter("always")
                    try:
                        if progress is not None and len(positives) > 1:
                            progress(f"class '{self.classes_[k]}' vs rest")
                        outcome = self._run_pipeline(fitter, grammar, criterion, seed + k,
                                                     searches_left=len(positives) - i)
                    except KeyboardInterrupt:
                        # before this class had a fitted structure: the classes searched before it are kept,
                        # and it gets its first base kernel as the classes after it (the first class re-raises)
                        if i == 0:
                            raise
                        interrupted_in = self.classes_[k]
                for warning in caught or ():
                    if issubclass(warning.category, ConvergenceWarning) and "time budget" in str(warning.message):
                        budget_reached.append(self.classes_[k])
                    else:
                        other_warnings.setdefault((warning.category, str(warning.message)), warning)
                if outcome is not None and "interrupted" in outcome.search.stop_reason:
                    interrupted_in = self.classes_[k]
            if outcome is None:
                # one Ctrl-C ends the whole fit: the classes after it get their first base kernel, fitted
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    outcome = self._run_pipeline(fitter, grammar, criterion, seed + k, budget=MIN_SEARCH_BUDGET)
                outcome.search.stop_reason = (
                    "interrupted before a structure was fitted; the first base kernel only"
                    if self.classes_[k] == interrupted_in else
                    f"not searched: the fit was interrupted in class '{interrupted_in}' vs rest; the first base "
                    "kernel only")
            models.append(fitter.final_model(outcome))
            outcomes.append(outcome)
        for warning in other_warnings.values():
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        if budget_reached:
            names = ", ".join(f"'{c}'" for c in dict.fromkeys(budget_reached))
            warnings.warn(f"The time budget cut short the one-vs-rest searches of {names} (of {len(positives)} "
                          "classes): each model is the best found by then (see search_stop_reason_); raise "
                          "time_budget to search further.", ConvergenceWarning, stacklevel=user_stacklevel())
        unsearched = [self.classes_[k] for k, o in zip(positives, outcomes) if o.search.stop_reason.startswith("not")]
        bare = any(o.search.stop_reason.startswith("interrupted before") for o in outcomes)
        if unsearched or bare:
            own = " (before its search had fitted a structure: it uses its first base kernel too)" if bare else ""
            after = (f": the classes after it ({', '.join(map(str, unsearched))}) were not searched and use their "
                     "first base kernel" if unsearched else "")
            warnings.warn(f"The fit was interrupted in class '{interrupted_in}' vs rest{own}{after} (see "
                          "search_stop_reason_).", RuntimeWarning, stacklevel=user_stacklevel())
        self._binary_models = models
        self.X_train_, self.y_train_ = X, y
        self._gp_X_train = X_model
        self._set_fitted_attributes(models, outcomes, positives, criterion, likelihood)
        warn_about_degenerate_optimum(self.diagnostics_)
        return self

    def _fits_per_depth(self, n_features: int) -> int | None:
        return fits_per_depth(self.max_fits_per_depth, n_features)

    def _set_fitted_attributes(self, models: list[BinaryLaplaceModel], outcomes: list[PipelineResult],
                               positives: list[int], criterion, likelihood) -> None:
        """The fitted attributes of the binary problems' models: one value each, or an array / list of them."""
        binary = len(models) == 1

        def per_problem(values, as_array=False):
            return values[0] if binary else (np.array(values) if as_array else list(values))

        self.structure_ = per_problem([m.structure_ for m in models])
        self.kernel_ = per_problem([m.kernel_ for m in models])
        self.latent_mean_ = per_problem([m.latent_mean_ for m in models], as_array=True)
        if likelihood.n_params:
            self.outlier_rate_ = per_problem([m.likelihood_params_["outlier_rate"] for m in models], as_array=True)
        self.best_score_ = criterion.combine([m.criterion_value for m in models])
        self.log_marginal_likelihood_value_ = float(sum(m.log_marginal_likelihood_value_ for m in models))
        self.n_hyperparameters_ = int(sum(m.n_hyperparameters_ for m in models))
        table, finalists, paths = {"class": []}, {"class": []}, []
        for k, outcome in zip(positives, outcomes):
            for target, part in ((table, outcome.search.table()), (finalists, finalists_table(outcome))):
                target["class"] += [self.classes_[k]] * len(part["structure"])
                for key, values in part.items():
                    target.setdefault(key, []).extend(values)
            paths += [{"class": self.classes_[k], **level} for level in outcome.search.levels]
        self.search_results_ = table
        self.finalists_ = finalists
        self.selection_ = outcomes[0].selection
        self.search_path_ = paths
        self.search_stop_reason_ = per_problem([o.search.stop_reason for o in outcomes])
        self.model_weights_ = per_problem([m.weights for m in models])
        self.probability_calibration_ = per_problem([
            [{"variance_scale": p.variance_scale, "base_rate": p.base_rate, "probability_floor": p.probability_floor}
             for p in m.mixture]
            for m in models])
        self.diagnostics_ = list(models[0].diagnostics) if binary else [
            f"class '{self.classes_[k]}' vs rest: {finding}" for k, m in zip(positives, models)
            for finding in m.diagnostics]

    def _explanation_view(self) -> ClassificationView:
        """What :mod:`skgpsearch.inspection` reads from this model (see :class:`~skgpsearch.inspection.ClassificationView`)."""
        check_is_fitted(self)
        return ClassificationView(classes=self.classes_.tolist(), latent_models=list(self._binary_models))

    # -- prediction ---------------------------------------------------------------
    def _binary_probabilities(self, X):
        check_is_fitted(self)
        X = self._model_inputs(validate_numeric_data(self, X, reset=False))
        return np.column_stack([averaged_probability(m, X) for m in self._binary_models])

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities (columns in the order of ``classes_``).

        Binary: p(y = classes_[1]) from the Laplace posterior with the
        latent variance integrated out (exact for probit and robust,
        Gauss–Hermite quadrature for logistic), that variance calibrated by
        leave-one-out (see ``LaplacePosterior.calibrate_variance`` and the
        classification guide: the raw Laplace predictive is underconfident
        on well-separated classes), and turned towards the class's
        frequency far from every training row: with s the largest prior
        correlation of the point with a training row, p = (1 − w) p + w π,
        w = (1 − s)⁴, π = (n_class + 1) / (n + 2). Multi-class: the one-vs-rest
        probabilities normalised to sum to one (far from the data, the class
        frequencies).
        """
        p = self._binary_probabilities(X)
        if p.shape[1] == 1:
            return np.column_stack([1.0 - p[:, 0], p[:, 0]])
        total = p.sum(axis=1, keepdims=True)
        return p / np.where(total > 0, total, 1.0)

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The most probable class."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Predictive log-odds log p(classes_[1]) − log p(classes_[0]) (> 0 means ``classes_[1]``).

        This is the latent posterior mean *moderated* by its uncertainty (for
        the probit likelihood, the log-odds of Φ(mean / sqrt(1 + var))): it
        ranks test points like :meth:`predict_proba`, which the latent mean
        itself does not when the posterior variances differ. The latent mean
        and standard deviation are :meth:`predict_latent`. Multi-class: the
        log-odds of each one-vs-rest probability, shape (n_samples, n_classes).
        """
        check_is_fitted(self)
        X = self._model_inputs(validate_numeric_data(self, X, reset=False))
        scores = np.column_stack([averaged_log_odds(m, X) for m in self._binary_models])
        return scores[:, 0] if scores.shape[1] == 1 else scores

    # -- explanation ----------------------------------------------------------------
    def decompose(self, X: ArrayLike | None = None, target_class: Any = None) -> Decomposition:
        """Posterior mean and std of each additive component of the latent function.

        The components' means plus ``offset`` equal :meth:`predict_latent`;
        a multi-class model needs ``target_class`` (see
        :func:`skgpsearch.inspection.decompose`).

        Returns
        -------
        skgpsearch.inspection.Decomposition
        """
        return decompose(self, X, target_class=target_class)

    def describe(self, feature_names: Sequence[str] | None = None) -> str:
        """Plain-language description of the fitted structure(s) (see :func:`skgpsearch.inspection.describe`).

        Returns
        -------
        str
        """
        return describe(self, feature_names=feature_names)

    def predict_latent(self, X: ArrayLike,
                       return_std: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Posterior mean (and standard deviation) of the latent function(s) at ``X``.

        Those of the selected model of each binary problem; where the select
        stage weights several models (``model_weights_``), ``predict_proba``
        averages their probabilities.

        Returns arrays of shape (n_samples,) for binary problems and
        (n_samples, n_classes) for one-vs-rest multi-class problems.
        """
        check_is_fitted(self)
        X = self._model_inputs(validate_numeric_data(self, X, reset=False))
        means, sds = [], []
        for m in self._binary_models:
            mean, var = m.predict_latent(X, return_var=True)
            means.append(mean)
            sds.append(np.sqrt(var))
        mean, sd = np.column_stack(means), np.column_stack(sds)
        if mean.shape[1] == 1:
            mean, sd = mean[:, 0], sd[:, 0]
        return (mean, sd) if return_std else mean

    def log_marginal_likelihood_on(self, X: ArrayLike, y: ArrayLike) -> float:
        """Laplace-approximate log p(y | X) of other data under the fitted hyperparameters (summed over classes)."""
        return float(sum(view.log_marginal_likelihood_on(Xv, yv) for view, Xv, yv in self._criterion_parts(X, y)))

    def _criterion_parts(self, X, y):
        """(binary model, X, labels in {−1, +1}) per binary problem: what criteria score."""
        check_is_fitted(self)
        X = self._model_inputs(validate_numeric_data(self, X, reset=False))
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels.")
        unknown = set(np.unique(y)) - set(self.classes_)
        if unknown:
            raise ValueError(f"y has labels {sorted(unknown)!r} that the classifier was not fitted on.")
        positives = [self.classes_[1]] if len(self._binary_models) == 1 else list(self.classes_)
        return [(m, X, np.where(y == c, 1.0, -1.0)) for m, c in zip(self._binary_models, positives)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


def _validate_training_data(estimator, X, y):
    X, y = validate_numeric_data(estimator, X, y, ensure_min_samples=2)
    return X.copy(), y
