"""CompositionalGPRegressor: GP regression whose kernel structure is searched."""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.gaussian_process.kernels import WhiteKernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._candidates import CandidateRecord, candidate_seed, single_threaded_blas
from ._engine._classification import LaplaceObjective, LaplacePosterior
from ._engine._likelihoods import OUTLIER_CLIP, StudentT
from ._engine._linalg import NumericalError
from ._engine._regression import GPPosterior, RegressionObjective
from ._engine._sparse import SparseObjective, SparsePosterior, choose_inducing_inputs
from ._estimator_base import StructureSearchMixin
from ._laplace_fitter import LaplaceCandidateFitter
from ._regression_fitter import RegressionCandidateFitter
from ._diagnostics import warn_about_degenerate_optimum
from ._search import SearchResult, as_finalist, averaged_records, halving_sizes, refit_search_finalists
from ._sparse_fitter import SparseCandidateFitter
from .criteria import get_criterion
from .inspection import Decomposition, RegressionView, decompose, describe
from .kernels import DataSummary, to_kernel

__all__ = ["CompositionalGPRegressor", "OutlierWarning"]

#: Bounds of the noise variance relative to the variance of the (normalised) targets.
NOISE_BOUNDS = (1e-6, 10.0)
#: A Gaussian model warns when a training point's leave-one-out residual, in robust standard
#: units of all of them, exceeds this (|z| > 5 has probability 6e-7 per normal point).
OUTLIER_THRESHOLD = 5.0
#: Above this many rows, approximation="auto" uses the sparse variational GP.
SPARSE_THRESHOLD = 3000
#: A sparse model's structure search runs on this many random rows (exact GP); its best
#: FIRST_FINALISTS structures are then refitted on more rows, halving their number (see fit).
SEARCH_ROWS = 2000
FIRST_FINALISTS = 4
#: Scale of the median absolute deviation that makes it a standard deviation under normality.
MAD_TO_SD = 1.4826


class OutlierWarning(UserWarning):
    """The chosen Gaussian model has training points far outside its noise (see ``likelihood``)."""


class CompositionalGPRegressor(StructureSearchMixin, RegressorMixin, BaseEstimator):
    """Gaussian-process regression with a searched kernel structure.

    ``fit`` searches sums and products of base kernels over a grammar, fits
    the hyperparameters of every candidate structure by maximising the log
    marginal likelihood (L-BFGS-B from a warm start, data-driven and random
    starts), scores each with a model-selection criterion, and keeps the best.
    The Gaussian noise variance is fitted with every candidate.

    Parameters
    ----------
    base_kernels : sequence of str or sklearn kernels, default=("SE", "RQ", "PER", "LIN")
        Base kernels of the grammar, by catalogue name (``SE``, ``RQ``,
        ``PER``, ``LIN``, ``M12``, ``M32``, ``M52``, ``C``, ``WN``) or as
        scikit-learn kernels with a catalogue counterpart (``RBF``,
        ``Matern`` with nu in {0.5, 1.5, 2.5}, ``RationalQuadratic``,
        ``ExpSineSquared``, ``ConstantKernel``, ``WhiteKernel``). Each is
        tried on every input column. Ignored when ``grammar`` is a
        :class:`~skgpsearch.grammar.Grammar` instance.
    grammar : {"compositional", "sum_of_products"} or Grammar, default="compositional"
        Expansion operators: the compositional grammar of Duvenaud et al.
        (2013) or the sum-of-products grammar.
    criterion : str or callable, default="bic"
        Model-selection criterion, greater is better: a name from
        :func:`skgpsearch.criteria.criterion_names` (``"bic"``, ``"aic"``,
        ``"lml"``) or a callable ``(estimator, X, y) -> float`` called with
        each fitted candidate and the training data.
    max_depth : int or None, default=None
        Largest number of expansion steps (depth 1 = single base kernels).
        ``None``: a limit that grows with the data's columns -- 3 for one
        column, one more per further column, at most 10 -- so that data with
        many relevant columns are not cut short (each depth adds one base
        kernel, so a depth-3 search uses at most three columns). The search
        also stops as soon as a depth does not improve the criterion.
    max_fits_per_depth : int or None, default=32
        Levels with more candidates than this (many columns, deep
        structures) are screened: every candidate gets a cheap score (a short
        fit on a subset of the rows) and only the most promising are fitted
        fully; the others appear in ``search_results_`` with status
        ``"screened out"``. ``None`` fits every candidate.
    search : {"greedy", "beam"}, default="greedy"
        Greedy keeps the best structure of each depth; beam keeps ``beam_width``.
    beam_width : int, default=2
        Structures kept per depth by the beam search.
    objective : {"lml", "map", "loo"}, default="lml"
        What the hyperparameters of each candidate maximise: the log marginal
        likelihood, the log marginal likelihood plus the log hyperprior
        (:class:`~skgpsearch.criteria.HyperPrior` defaults), or the closed-form
        leave-one-out log predictive density (Rasmussen & Williams §5.4.2).
    n_restarts : int, default=2
        Random restarts of the hyperparameter optimisation per candidate, on
        top of the structured starts (the parent's optimum with the new term
        taking over shares of the residual variance, lengthscales at several
        scales, periods from the periodogram; see the user guide).
    normalize_y : bool, default=True
        Centre and scale the targets before fitting (predictions are mapped back).
    max_optimize_samples : int, default=None
        When set and the data has more rows, hyperparameters are optimised on
        a random subset of this size; the criterion uses all the data.
    max_candidates : int, default=None
        Budget of candidate fits; the search stops with the best found so far.
    time_budget : float, default=None
        Budget in seconds, checked after every candidate.
    n_jobs : int, default=None
        Candidates fitted in parallel (joblib; any joblib backend, including
        dask, through ``joblib.parallel_config``). ``None`` means 1.
    random_state : int, RandomState instance or None, default=None
        Seeds the random restarts and subsampling. With an int, results are
        reproducible and the same for any ``n_jobs``.
    model_averaging : int or None, default=None
        ``None``: predict with the chosen model. An int ``k >= 2``: predict with
        the Gaussian mixture of the ``k`` best fitted structures of the search,
        weighted by exp(criterion − best criterion) -- for ``"bic"`` and
        ``"lml"`` (log-evidence scale) the approximate posterior probabilities
        of the structures; models with less than 1e-6 of the best's weight
        are dropped. The mean and variance of the mixture are exact:
        Σ w_i μ_i and Σ w_i (σ_i² + μ_i²) − μ². ``structure_``, ``decompose``
        and ``describe`` keep describing the chosen model (``describe`` says
        what is averaged).
    verbose : int, default=0
        ``1`` prints one line per depth (best structure, criterion,
        candidates, elapsed time).
    likelihood : {"gaussian", "student_t"}, default="gaussian"
        Noise model. ``"gaussian"``: exact GP regression. ``"student_t"``:
        robust regression, y = f + σ t_ν, fitted by the Laplace approximation
        (the engine of the classifier), with a constant latent mean; a few
        gross outliers then cost little and do not distort the structure or
        the noise level. The targets are normalised by their median and
        median absolute deviation. Criteria: those computed from the
        evidence (``"bic"``, ``"aic"``, ``"bic_light"``, ``"lml"``, with the
        Laplace-approximate evidence) and callables; ``objective="lml"``.
        A Gaussian model warns (:class:`OutlierWarning`) when a training
        point's leave-one-out residual exceeds 5 robust standard deviations.
    degrees_of_freedom : float or None, default=4.0
        ν of the Student-t noise: a number fixes it (1 is Cauchy noise; 4 is a
        common robust choice), ``None`` learns it in [1, 200] with the other
        hyperparameters. Learned ν tends to collapse to 1 with a very small
        scale on small data, where the Laplace evidence then rewards
        flexible structures (see the user guide); only used with
        ``likelihood="student_t"``.

    approximation : {"auto", "exact", "sparse"}, default="auto"
        ``"exact"``: exact GP regression (O(n³) per likelihood evaluation).
        ``"sparse"``: a sparse variational GP (SGPR/VFE, Titsias 2009) with
        ``n_inducing`` inducing inputs from a k-means clustering of ``X``,
        fitted by maximising its collapsed evidence bound (O(n m²) per
        evaluation, O(n m) memory); starts are screened on an exact GP of a
        400-row subset. The bound, a lower bound of the log evidence, then
        stands in for the evidence: ``"bic"``, ``"aic"``, ``"bic_light"``,
        ``"lml"`` and callables work, the other criteria need
        ``approximation="exact"``; ``objective="lml"`` only; Gaussian noise
        only. ``"auto"``: exact up to ``SPARSE_THRESHOLD`` (3000) rows,
        sparse above. With more than 2000 rows and an evidence criterion,
        a sparse model's structures are searched on 2000 random rows with
        the exact GP, and the 4 best are refitted on 5 times as many rows,
        the better half of them on 5 times more, and so on up to all the
        rows (successive halving; listed in ``search_results_`` as
        finalists), so that the search costs one search on a subset plus a
        few fits on all the data.
    n_inducing : int, default=256
        Inducing inputs of the sparse approximation (at most the number of
        distinct rows).

    Attributes
    ----------
    structure_ : skgpsearch.grammar.Expr
        The chosen canonical structure; its base kernels carry their fitted
        hyperparameters, and ``str(structure_)`` gives the text notation.
    kernel_ : sklearn Kernel
        The fitted kernel, including the noise term (a ``WhiteKernel``), on
        the normalised target scale when ``normalize_y=True``.
    noise_variance_ : float
        Fitted noise variance on the original target scale (Student-t noise:
        σ² ν / (ν − 2), infinite for ν ≤ 2).
    noise_scale_ : float
        Student-t noise only: the fitted scale σ on the original target scale.
    degrees_of_freedom_ : float
        Student-t noise only: the fitted (or fixed) ν.
    latent_mean_ : float
        The constant mean of the latent function on the original target scale
        (Student-t noise; the Gaussian model centres the targets instead, 0).
    best_score_ : float
        Criterion value of the chosen structure.
    search_results_ : dict of lists
        One entry per evaluated candidate, in evaluation order: ``structure``
        (text), ``depth``, ``parent``, ``criterion``,
        ``log_marginal_likelihood``, ``n_hyperparameters``, ``fit_time``,
        ``status`` (``"ok"``, ``"failed"`` or ``"screened out"``, see
        ``max_fits_per_depth``), ``message`` (why it failed or was screened
        out) and ``diagnostics`` (degenerate features of its optimum, as in
        ``diagnostics_``, joined by "; ").
    diagnostics_ : list of str
        Degenerate features of the chosen model's optimum, in plain language
        (empty when none): the noise variance or a hyperparameter at a bound
        (the noise at its lower bound: the model may be interpolating noise;
        a lengthscale at its upper bound: a constant term), an additive term
        that acts as white noise on the training inputs, a stationary base
        kernel that is constant on them. Fitting warns
        (:class:`~skgpsearch.DegenerateOptimumWarning`) when there are any;
        :func:`~skgpsearch.inspection.describe` and the report list them.
    search_path_ : list of dict
        Per depth: number of candidates, best structure, best criterion, elapsed seconds.
    search_stop_reason_ : str
        Why the search stopped (``"no improvement"``, ``"max_depth reached"``,
        ``"depth limit reached"``, a budget, ``"interrupted"``).
    averaged_structures_ : list of Expr
        The structures whose mixture predicts (only the chosen one without
        ``model_averaging``), best first, carrying their fitted values.
    model_weights_ : ndarray of shape (n_models,)
        Their weights (summing to one).
    log_marginal_likelihood_value_ : float
        log p(y | X, θ̂) of the chosen model, in the units of the original targets.
    n_hyperparameters_ : int
        Free hyperparameters of the chosen model (kernel and noise).
    X_train_, y_train_ : ndarray
        Training data.
    alpha_ : ndarray
        Weights of the posterior mean on the normalised scale: K_y^{-1} (y - mean)
        (Student-t noise: ∇ log p(y | f̂) at the Laplace mode).
    L_ : ndarray or None
        Lower Cholesky factor of K(X_train, X_train) + noise I (``None`` with
        Student-t noise and with the sparse approximation).
    approximation_ : {"exact", "sparse"}
        The approximation used.
    inducing_inputs_ : ndarray of shape (n_inducing, n_features) or None
        The inducing inputs of the sparse approximation (``alpha_`` then
        weights them: the mean is ``k(x, inducing_inputs_) @ alpha_``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has feature names (pandas DataFrame).

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessRegressor : GP regression with a fixed kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsearch import CompositionalGPRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = np.linspace(0, 10, 80)[:, None]
    >>> y = np.sin(2 * np.pi * X[:, 0] / 2.5) + 0.5 * X[:, 0] + 0.1 * rng.normal(size=80)
    >>> model = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), max_depth=2,
    ...                                  random_state=0).fit(X, y)
    >>> "PER(0)" in str(model.structure_)
    True
    >>> [round(leaf.params["period"], 1) for leaf in model.structure_.leaves if leaf.name == "PER"]
    [2.5]
    >>> model.predict(X[:2]).shape
    (2,)
    """

    _task = "regression"

    _parameter_constraints = {
        **StructureSearchMixin._shared_parameter_constraints,
        "max_depth": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "objective": [StrOptions({"lml", "map", "loo"})],
        "normalize_y": ["boolean"],
        "likelihood": [StrOptions({"gaussian", "student_t"})],
        "degrees_of_freedom": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "approximation": [StrOptions({"auto", "exact", "sparse"})],
        "n_inducing": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        base_kernels=("SE", "RQ", "PER", "LIN"),
        *,
        grammar="compositional",
        criterion="bic",
        max_depth=None,
        max_fits_per_depth=32,
        search="greedy",
        beam_width=2,
        objective="lml",
        n_restarts=2,
        normalize_y=True,
        max_optimize_samples=None,
        max_candidates=None,
        time_budget=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
        model_averaging=None,
        likelihood="gaussian",
        degrees_of_freedom=4.0,
        approximation="auto",
        n_inducing=256,
    ):
        self.base_kernels = base_kernels
        self.grammar = grammar
        self.criterion = criterion
        self.max_depth = max_depth
        self.max_fits_per_depth = max_fits_per_depth
        self.search = search
        self.beam_width = beam_width
        self.objective = objective
        self.n_restarts = n_restarts
        self.normalize_y = normalize_y
        self.max_optimize_samples = max_optimize_samples
        self.max_candidates = max_candidates
        self.time_budget = time_budget
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.model_averaging = model_averaging
        self.likelihood = likelihood
        self.degrees_of_freedom = degrees_of_freedom
        self.approximation = approximation
        self.n_inducing = n_inducing

    # -- fitting ------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike) -> CompositionalGPRegressor:
        """Search the kernel structure and fit the GP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y, y_numeric=True, ensure_min_samples=2, dtype=np.float64)
        # the model keeps the training data: never share the caller's arrays
        X, y = X.copy(), y.copy()
        self._check_n_jobs()
        grammar = self._grammar()
        criterion = self._criterion()
        self.approximation_ = self._approximation_for(X.shape[0])
        if self._robust or self._sparse:
            setting = "likelihood='student_t'" if self._robust else "the sparse approximation"
            if not (callable(self.criterion) or getattr(criterion, "evidence_only", False)):
                raise ValueError(
                    f"The criterion {self.criterion!r} needs the exact Gaussian evidence; with "
                    f"{setting} use 'bic', 'aic', 'bic_light', 'lml' or a callable."
                )
            if self.objective != "lml":
                raise ValueError(f"objective={self.objective!r} needs the exact Gaussian likelihood; "
                                 f"with {setting} use objective='lml'.")
        if self._robust and self._sparse:
            raise ValueError("likelihood='student_t' has no sparse approximation; use approximation='exact' "
                             "(with max_optimize_samples to optimise on a subset).")
        y_fit, y_mean, y_std, summary, fitter = self._fitting_setup(X, y, criterion)
        base_seed = self._base_seed()
        self._fit_setup = (X, y, y_mean, y_std)
        try:
            if self._searches_a_subset(X.shape[0], criterion):
                result, final = self._search_subset_then_refit(fitter, X, y_fit, grammar, criterion, base_seed)
            else:
                result = final = self._search(fitter, X, y_fit, grammar, criterion, base_seed)
        finally:
            del self._fit_setup
        best = final.best
        self._adopt(best, summary, X, y, y_fit, y_mean, y_std)
        self.diagnostics_ = list(best.diagnostics)
        warn_about_degenerate_optimum(self.diagnostics_)
        self._average(final, summary, X, y_fit)
        if not (self._robust or self._sparse):
            # (leave-one-out residuals need the exact posterior)
            self._warn_about_outliers()
        self.best_score_ = best.criterion
        self.search_results_ = result.table()
        self.search_path_ = result.levels
        self.search_stop_reason_ = result.stop_reason
        return self

    @property
    def _robust(self):
        return self.likelihood == "student_t"

    @property
    def _sparse(self):
        return getattr(self, "approximation_", "exact") == "sparse"

    def _searches_a_subset(self, n_samples, criterion):
        # (a callable criterion scores the model it is given on the estimator's data: all rows)
        return self._sparse and n_samples > SEARCH_ROWS and getattr(criterion, "evidence_only", False)

    def _search_subset_then_refit(self, fitter, X, y_fit, grammar, criterion, base_seed):
        """The structure search on ``SEARCH_ROWS`` random rows (exact GP), then successive halving of its best.

        The ``FIRST_FINALISTS`` best distinct structures are refitted on 5
        times as many rows, the better half of them on 5 times more, and so
        on up to all the rows, each from its fitted values (sparse above
        ``SPARSE_THRESHOLD`` rows). Returns the search's result (with the
        refits' records appended) and a result holding the last rung's records.
        """
        n = X.shape[0]
        permutation = np.random.default_rng(base_seed).permutation(n)
        subset = np.sort(permutation[:SEARCH_ROWS])
        exact = RegressionCandidateFitter(**{f.name: getattr(fitter, f.name)
                                             for f in dataclasses.fields(RegressionCandidateFitter)})
        # the search's starts and period hints need the spacing of the rows it sees: with the summary of
        # all rows, a 100 000-row series offered the 2000-row search periods below its own spacing, and
        # SE + PER lost to SE + SE. (Bounds of all rows contain the subset's: the refits start inside them.)
        searcher = dataclasses.replace(exact, summary=DataSummary.from_data(X[subset], y_fit[subset]))
        result = self._search(searcher, X[subset], y_fit[subset], grammar, criterion, base_seed)

        def refit(record, rows):
            engine = fitter if rows.size > SPARSE_THRESHOLD else exact
            refitted = engine(record.structure, X[rows], y_fit[rows], candidate_seed(base_seed, record.structure),
                              record.warm_state)
            return as_finalist(refitted, record, rows.size)

        rungs = [(np.sort(permutation[:size]), refit) for size in halving_sizes(SEARCH_ROWS, n)]
        last = refit_search_finalists(result, rungs, FIRST_FINALISTS, n_jobs=self.n_jobs, progress=self._progress())
        if not last:
            raise NumericalError("every finalist structure failed to fit on more rows: "
                                 + "; ".join(dict.fromkeys(r.message for r in result.records
                                                           if not r.ok and r.message.startswith("finalist"))))
        return result, SearchResult(records=last, best_index=0)

    def _approximation_for(self, n_samples):
        if self.approximation == "auto":
            return "sparse" if n_samples > SPARSE_THRESHOLD else "exact"
        return self.approximation

    def _fitting_setup(self, X, y, criterion):
        """Normalised targets, data summary and candidate fitter for training data (X, y)."""
        y_mean, y_std = 0.0, 1.0
        if self.normalize_y:
            y_mean, y_std = _location_and_scale(y, robust=self._robust)
        y_fit = (y - y_mean) / y_std
        # Student-t noise: the scale of the data without its gross outliers sets the kernels' defaults
        summary = DataSummary.from_data(X, np.clip(y_fit, -OUTLIER_CLIP, OUTLIER_CLIP) if self._robust else y_fit)
        self._summary = summary
        self._noise_bounds = tuple(b * summary.target_variance for b in NOISE_BOUNDS)
        # only criteria that read a fitted model get one; the bound method would carry the
        # training data to every worker with every candidate
        view_builder = None if getattr(criterion, "evidence_only", False) else self._candidate_view
        if self._robust:
            fitter = LaplaceCandidateFitter(
                summary=summary,
                criterion=criterion,
                likelihood=StudentT(self.degrees_of_freedom),
                n_restarts=self.n_restarts,
                max_optimize_samples=self.max_optimize_samples,
                make_estimator=view_builder,
                # white-noise latent terms are a legitimate regression model (as with Gaussian noise)
                reject_degenerate=False,
                y_std=y_std,
            )
            return y_fit, y_mean, y_std, summary, fitter
        options = dict(
            summary=summary,
            criterion=criterion,
            noise_bounds=self._noise_bounds,
            n_restarts=self.n_restarts,
            max_optimize_samples=self.max_optimize_samples,
            y_std=y_std,
            make_estimator=view_builder,
            objective=self.objective,
        )
        self.inducing_inputs_ = None
        if self._sparse:
            seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
            self.inducing_inputs_ = choose_inducing_inputs(X, self.n_inducing, np.random.default_rng(seed))
            return y_fit, y_mean, y_std, summary, SparseCandidateFitter(**options,
                                                                        inducing_inputs=self.inducing_inputs_)
        return y_fit, y_mean, y_std, summary, RegressionCandidateFitter(**options)

    def _refit_structure(self, X, y, seed=0):
        """A model with this model's structure whose hyperparameters are refitted on (X, y).

        The fit starts from this model's hyperparameters (warm start) plus
        ``n_restarts`` random starts; no structure search.
        """
        check_is_fitted(self)
        X, y = validate_data(self, X, y, reset=False, y_numeric=True, ensure_min_samples=2, dtype=np.float64)
        model = self._unfitted_copy()
        model.approximation_ = model._approximation_for(X.shape[0])
        y_fit, y_mean, y_std, summary, fitter = model._fitting_setup(X, y, get_criterion("lml"))
        record = fitter(self.structure_, X, y_fit, seed)
        if not record.ok:
            raise NumericalError(f"Refitting {self.structure_} failed: {record.message}")
        model._adopt(record, summary, X.copy(), y.copy(), y_fit, y_mean, y_std)
        return model

    def _unfitted_copy(self):
        """A clone that knows the input features (for views and refits)."""
        model = clone(self)
        model.n_features_in_ = self.n_features_in_
        if hasattr(self, "feature_names_in_"):
            model.feature_names_in_ = self.feature_names_in_
        return model

    def _adopt(self, record: CandidateRecord, summary, X, y, y_fit, y_mean, y_std):
        """Become the model of a candidate record: posterior on all the training data."""
        kernel, posterior = self._record_posterior(record, summary, X, y_fit)
        self._set_fitted(record.structure, kernel, posterior, X, y, y_mean, y_std)
        self.log_marginal_likelihood_value_ = record.log_marginal_likelihood
        self.n_hyperparameters_ = record.n_hyperparameters

    def _record_posterior(self, record, summary, X, y_fit):
        """(kernel, posterior on (X, y_fit)) of a fitted candidate record."""
        kernel = to_kernel(record.structure, summary=summary)
        with single_threaded_blas():
            if self._sparse:
                return kernel, SparsePosterior(kernel, record.noise_variance, X, y_fit, self.inducing_inputs_)
            if not self._robust:
                return kernel, GPPosterior(kernel, record.noise_variance, X, y_fit)
            p = kernel.n_dims
            theta = record.theta
            # the Newton start of the mode the criterion scored (Student-t posteriors can have several)
            posterior = LaplacePosterior(kernel, float(theta[p]), StudentT(self.degrees_of_freedom), theta[p + 1 :],
                                         X, y_fit, a0=record.latent_start)
        return kernel, posterior

    def _average(self, result, summary, X, y_fit):
        """The mixture of the ``model_averaging`` best structures (see the class docstring)."""
        chosen, self.model_weights_ = averaged_records(result, self.model_averaging)
        self.averaged_structures_ = [r.structure for r in chosen]
        self._mixture = [self._posterior]
        for record in chosen[1:]:
            self._mixture.append(self._record_posterior(record, summary, X, y_fit)[1])

    def _warn_about_outliers(self):
        """Warn (:class:`OutlierWarning`) when training points lie far outside the Gaussian model's fit.

        The leave-one-out residuals y_i − E[y_i | y_−i] in robust standard
        units (median absolute deviation). Not each divided by its own
        predictive standard deviation: a fitted Gaussian model accommodates a
        gross outlier by inflating the noise or the prior variance where the
        outlier lies, which masks it in those units.
        """
        with single_threaded_blas():
            residuals = self._posterior.loo_residuals()
        centre = np.median(residuals)
        spread = MAD_TO_SD * np.median(np.abs(residuals - centre))
        if not spread > 0:
            return
        z = np.abs(residuals - centre) / spread
        outliers = np.flatnonzero(z > OUTLIER_THRESHOLD)
        if outliers.size:
            worst = int(outliers[np.argmax(z[outliers])])
            warnings.warn(
                f"{outliers.size} training point(s) lie more than {OUTLIER_THRESHOLD:g} robust standard deviations "
                f"from the model's leave-one-out predictions (the worst, row {worst}, at {z[worst]:.3g}). Outliers "
                "can distort the chosen structure and the noise level of a Gaussian model; consider "
                "likelihood='student_t' (robust regression), or check these rows.",
                OutlierWarning,
                stacklevel=3,
            )

    def _set_fitted(self, structure, kernel, posterior, X, y, y_mean, y_std):
        """Fitted attributes from a posterior on the training data (Gaussian or Student-t noise)."""
        self.structure_ = structure
        self._kernel_no_noise = kernel
        self._posterior = posterior
        self._y_train_mean, self._y_train_std = y_mean, y_std
        self.X_train_, self.y_train_ = X, y
        if isinstance(posterior, (GPPosterior, SparsePosterior)):
            noise = posterior.noise_variance
            # kernel_.theta is then the full vector [kernel.theta, log noise] of log_marginal_likelihood
            self.kernel_ = kernel + WhiteKernel(noise, noise_level_bounds=self._noise_bounds)
            self.noise_variance_ = noise * y_std**2
            self.alpha_, self.L_ = posterior.alpha, posterior.L
            self.latent_mean_ = 0.0
            return
        sigma, nu = posterior.likelihood.scale_and_dof(posterior.lik_theta)
        self.kernel_ = kernel
        self.noise_variance_ = posterior.likelihood.noise_variance(posterior.lik_theta) * y_std**2
        self.noise_scale_ = sigma * y_std
        self.degrees_of_freedom_ = nu
        self.latent_mean_ = posterior.mean * y_std + y_mean
        self.alpha_, self.L_ = posterior.alpha, None

    def _candidate_view(self, structure, kernel, posterior, fields, lml, k):
        """A fitted estimator for one candidate (what callable criteria receive).

        A copy fitted on the training data of the running fit.
        """
        X, y, y_mean, y_std = self._fit_setup
        view = self._unfitted_copy()
        view._noise_bounds = self._noise_bounds
        view._summary = self._summary
        view.approximation_, view.inducing_inputs_ = self.approximation_, self.inducing_inputs_
        view._set_fitted(structure, kernel, posterior, X, y, y_mean, y_std)
        view.log_marginal_likelihood_value_ = lml
        view.n_hyperparameters_ = k
        return view

    def _explanation_view(self) -> RegressionView:
        """What :mod:`skgpsearch.inspection` reads from this model (see :class:`~skgpsearch.inspection.RegressionView`)."""
        check_is_fitted(self)
        robust = self._robust
        y_var = float(np.var(self.y_train_))
        if robust:
            # Student-t noise: shares of the variance of the targets without their gross outliers
            z = self._normalised(self.y_train_)
            y_var = float(np.var(z[np.abs(z) <= OUTLIER_CLIP])) * self._y_train_std**2
        return RegressionView(
            kernel=self._kernel_no_noise,
            posterior=self._posterior,
            # a sparse posterior's weights are on the inducing inputs
            X_train=self.inducing_inputs_ if self._sparse else self.X_train_,
            y_train=self.y_train_,
            y_mean=float(self._y_train_mean),
            y_std=float(self._y_train_std),
            noise_variance=float(self.noise_variance_),
            target_variance=y_var,
        )

    # -- prediction ---------------------------------------------------------------
    def predict(self, X: ArrayLike, return_std: bool = False, return_cov: bool = False):
        """Posterior mean of the latent function, with its std or covariance.

        The std and covariance are those of the noise-free function f; add
        ``noise_variance_`` to get the predictive variance of a new observation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
        return_cov : bool, default=False

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,), if ``return_std``
        y_cov : ndarray of shape (n_samples, n_samples), if ``return_cov``
        """
        if return_std and return_cov:
            raise ValueError("At most one of return_std or return_cov can be requested.")
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        mixture = getattr(self, "_mixture", None)
        if mixture is not None and len(mixture) > 1:
            mean, spread = _mixture_moments(mixture, self.model_weights_, X, return_std, return_cov)
        else:
            mean, spread = self._posterior.predict(X, return_std=return_std, return_cov=return_cov)
        mean = mean * self._y_train_std + self._y_train_mean
        if return_std:
            return mean, spread * self._y_train_std
        if return_cov:
            return mean, spread * self._y_train_std**2
        return mean

    # -- explanation ----------------------------------------------------------------
    def decompose(self, X: ArrayLike | None = None) -> Decomposition:
        """Posterior mean and std of each additive component at ``X`` (training inputs by default).

        The components' means plus ``offset`` equal :meth:`predict`; see
        :func:`skgpsearch.inspection.decompose`.

        Returns
        -------
        skgpsearch.inspection.Decomposition
        """
        return decompose(self, X)

    def describe(self, feature_names: Sequence[str] | None = None, target_name: str | None = None) -> str:
        """Plain-language description of the fitted structure (see :func:`skgpsearch.inspection.describe`).

        Returns
        -------
        str
        """
        return describe(self, feature_names=feature_names, target_name=target_name)

    def sample_y(self, X: ArrayLike, n_samples: int = 1, random_state=0) -> np.ndarray:
        """Draw functions from the posterior at ``X``.

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples)
        """
        rng = check_random_state(random_state)
        mean, cov = self.predict(X, return_cov=True)
        return rng.multivariate_normal(mean, cov, n_samples).T

    def log_marginal_likelihood(self, theta: ArrayLike | None = None, eval_gradient: bool = False):
        """Log marginal likelihood of the training targets (original units).

        Parameters
        ----------
        theta : array-like, default=None
            Log-hyperparameters ``[kernel.theta, log(noise variance)]`` on the
            fitting scale, i.e. the layout of ``kernel_.theta``; ``None``
            returns the value at the fitted ones. Student-t noise (Laplace
            approximation): ``[kernel_.theta, latent mean, log σ, log ν]``
            (without log ν when it is fixed).
        eval_gradient : bool, default=False
            Also return the gradient with respect to ``theta``.
        """
        check_is_fitted(self)
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None.")
            return self.log_marginal_likelihood_value_
        if self._robust:
            objective = LaplaceObjective(clone(self._kernel_no_noise), self.X_train_,
                                         self._normalised(self.y_train_), self._posterior.likelihood)
            # Newton from the fitted mode: the Student-t posterior of the latent values can have several
            objective._last_a = self._posterior.mode.a
        elif self._sparse:
            objective = SparseObjective(clone(self._kernel_no_noise), self.X_train_, self._normalised(self.y_train_),
                                        self.inducing_inputs_, (1e-300, 1e300))
        else:
            objective = RegressionObjective(
                clone(self._kernel_no_noise), self.X_train_, self._normalised(self.y_train_), (1e-300, 1e300)
            )
        shift = -len(self.y_train_) * math.log(self._y_train_std)
        try:
            out = objective(np.asarray(theta, dtype=float), eval_gradient=eval_gradient)
        except NumericalError:
            return (-np.inf, np.zeros(len(theta))) if eval_gradient else -np.inf
        if eval_gradient:
            return out[0] + shift, out[1]
        return out + shift

    def log_marginal_likelihood_on(self, X: ArrayLike, y: ArrayLike) -> float:
        """log p(y | X) of other data under the fitted hyperparameters (no refit)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        y = np.asarray(y, dtype=float).ravel()
        same_inputs = X is self.X_train_ or (X.shape == self.X_train_.shape and np.array_equal(X, self.X_train_))
        if same_inputs and y.shape == self.y_train_.shape and np.array_equal(y, self.y_train_):
            return self.log_marginal_likelihood_value_
        if self._robust:
            posterior = self._posterior
            laplace = LaplacePosterior(self._kernel_no_noise, posterior.mean, posterior.likelihood,
                                       posterior.lik_theta, X, self._normalised(y))
            return laplace.log_marginal_likelihood - len(y) * math.log(self._y_train_std)
        noise = self.noise_variance_ / self._y_train_std**2
        if self._sparse:
            posterior = SparsePosterior(self._kernel_no_noise, noise, X, self._normalised(y), self.inducing_inputs_)
        else:
            posterior = GPPosterior(self._kernel_no_noise, noise, X, self._normalised(y))
        return posterior.log_marginal_likelihood - len(y) * math.log(self._y_train_std)

    def _fitted_objective(self, X, y):
        """(objective on X, y at the fitted kernel, fitted theta, shift to original units).

        The objective works on the normalised targets; adding ``shift``
        (−n log y_std) to its log likelihood gives the original units.
        """
        check_is_fitted(self)
        if self._robust or self._sparse:
            setting = "likelihood='student_t'" if self._robust else "approximation='sparse'"
            raise ValueError(f"This criterion needs the exact Gaussian objective; a model with {setting} "
                             "supports 'bic', 'aic', 'bic_light', 'lml' and callables.")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        y = np.asarray(y, dtype=float).ravel()
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} values.")
        objective = RegressionObjective(clone(self._kernel_no_noise), X, self._normalised(y), (1e-300, 1e300))
        return objective, self.kernel_.theta.copy(), -len(y) * math.log(self._y_train_std)

    def _prior_moments(self, prior):
        """Means and standard deviations of the hyperprior on ``kernel_.theta``."""
        return prior.moments(self.structure_, self._summary)

    def _normalised(self, y):
        return (y - self._y_train_mean) / self._y_train_std

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = False
        return tags


def _location_and_scale(y, robust=False):
    """(centre, scale) that normalise the targets: mean and std, or median and scaled MAD when ``robust``.

    A zero scale (constant targets) becomes 1; a robust scale of zero (more
    than half the targets equal) falls back to the standard deviation.
    """
    if robust:
        centre = float(np.median(y))
        scale = MAD_TO_SD * float(np.median(np.abs(y - centre)))
        if not scale > 0:
            scale = float(np.std(y))
    else:
        centre, scale = float(np.mean(y)), float(np.std(y))
    return centre, scale if scale > 0 else 1.0


def _mixture_moments(posteriors, weights, X, return_std, return_cov):
    """Mean and std (or covariance) of a weighted mixture of Gaussian posteriors at ``X``."""
    means, spreads = [], []
    for posterior in posteriors:
        mean, spread = posterior.predict(X, return_std=return_std, return_cov=return_cov)
        means.append(mean)
        spreads.append(spread)
    means = np.asarray(means)
    mean = weights @ means
    if not (return_std or return_cov):
        return mean, None
    if return_cov:
        # Σ w_i (C_i + μ_i μ_iᵀ) − μ μᵀ, written with the deviations μ_i − μ (no cancellation)
        deviations = means - mean
        cov = sum(w * c for w, c in zip(weights, spreads)) + (deviations.T * weights) @ deviations
        return mean, cov
    variance = weights @ (np.asarray(spreads) ** 2 + (means - mean) ** 2)
    return mean, np.sqrt(variance)
