"""CompositionalGPRegressor: GP regression whose kernel structure is searched."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._search import (
    RegressionModel,
    RegressionModelFitter,
    RegressionOptions,
    RepeatedRowsWarning,
    finalists_table,
    regression_mixture_moments,
    regression_warping_evidence_gain,
    warn_about_degenerate_optimum,
    warn_about_outliers,
    user_stacklevel,
)
from ..criteria import get_criterion
from ..grammar import SERIES_CHANGE_OPERATORS, Grammar, get_grammar
from ..inspection import Decomposition, RegressionView, decompose, describe
from ..kernels import looks_like_time_index
from ._base import (BaseKernels, CandidateEstimator, CriterionLike, RandomStateLike, StructureSearchMixin,
                    distinct_rows, validate_numeric_data)

__all__ = ["CompositionalGPRegressor"]

#: On one covariate (one input column that does not look like a time index) searched with the default base
#: kernels, a periodic kernel must show at least this many cycles: its period is at most half the column's
#: range. A longer period does not repeat within the data, and on mcycle (benchmarks/tabular.py, 10 folds) a
#: PER of 1.3 observed cycles won depth 1 by half a nat over SE and every later level descended from it:
#: SMSE 0.289 against one ARD kernel's 0.277. With the bound every fold chose an SE signal whose noise changes
#: along the times (CP / CW of SE + LIN * WN, "still, then the impact"): SMSE 0.277, MSLL -0.838 (-1.099
#: before, one ARD kernel -0.720: one fold's window edge is too sure of a test row). R's mammals (62 rows)
#: 0.115 / -1.030 -> 0.112 / -1.089; benchmarks/one_covariate.py's five covariates within 0.003 SMSE. Dropping
#: PER from a covariate's base kernels instead lost auto_mpg's weight (SMSE 0.255 -> 0.293), where shorter
#: periods stand in for the changing noise. Series keep periods up to their range (radio's long cycle is
#: 0.56 of it), and so does a PER named in ``base_kernels`` (an angle or an hour of the day has one cycle).
COVARIATE_MIN_CYCLES = 2.0


class CompositionalGPRegressor(StructureSearchMixin, RegressorMixin, BaseEstimator):
    """Gaussian-process regression with a searched kernel structure.

    ``fit`` searches sums and products of base kernels over a grammar, fits
    the hyperparameters of every candidate structure by maximising the log
    marginal likelihood (L-BFGS-B from a warm start, data-driven and random
    starts), scores each with a model-selection criterion, and keeps the best.
    The Gaussian noise variance is fitted with every candidate.

    Parameters
    ----------
    base_kernels : "auto", sequence of str or sklearn kernels, default="auto"
        Base kernels of the grammar, by catalogue name (``SE``, ``RQ``,
        ``PER``, ``LIN``, ``M12``, ``M32``, ``M52``, ``C``, ``WN``) or as
        scikit-learn kernels with a catalogue counterpart (``RBF``,
        ``Matern`` with nu in {0.5, 1.5, 2.5}, ``RationalQuadratic``,
        ``ExpSineSquared``, ``ConstantKernel``, ``WhiteKernel``). Each is
        tried on every input column but those constant in the training data
        (a kernel on one would make predictions depend on values it never
        saw). ``"auto"``: ``("SE", "RQ", "PER",
        "LIN", "WN")`` for one input column (a time series or a 1-D function;
        WN in products such as ``LIN * WN`` is noise whose level changes along
        the input; on a column that is no time index, a covariate, the
        periodic kernel's period is at most half the column's range),
        ``("SE",)`` for two or more (a table): sums and products of SE
        kernels on column subsets, an additive model with interactions. On
        the tabular benchmarks periodic and rational-quadratic kernels on
        every column made the search several times slower and predicted
        worse, and products of LIN kernels (polynomials) extrapolated without
        bound to test rows beyond the training range. For a time column
        among others, list the kernels or give a grammar with
        ``kernels_per_column``. Ignored when ``grammar`` is a
        :class:`~skgpsearch.grammar.Grammar` instance.
    grammar : {"compositional", "sum_of_products"} or Grammar, default="compositional"
        Expansion operators: the compositional grammar of Duvenaud et al.
        (2013) or the sum-of-products grammar.
    change_operators : "auto", sequence of {"CP", "CW"} or None, default="auto"
        Change operators of the compositional grammar (Lloyd et al. 2014):
        ``CP(column, A, B)`` changes from structure A to B around a fitted
        location and width, ``CW(column, A, B)`` is B inside a window and A
        outside. ``"auto"`` (the one-column default): ``("CP", "CW")`` on one
        input column fitted by the exact Gaussian engine (up to 3000 rows,
        Gaussian noise; for a series, the select stage then forecasts its
        latest rows), none otherwise. On
        the 11 series of ``benchmarks/extrapolation.py`` they improved the
        forecasts of call-centre (RMSE 160 -> 44: a level drop), wages (16.6
        -> 13.3) and solar (0.53 -> 0.47), made sulphuric's worse (62 -> 73),
        left seven unchanged, and took a series 1.6x the time. A change's
        width is at most an eighth of the column's range. ``None`` or
        ``()`` turns them off; a list turns them on for every column. Only
        the compositional grammar given by name takes them; a Grammar
        instance brings its own.
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
    n_restarts : int, default=0
        Random restarts of the hyperparameter optimisation per candidate, on
        top of the structured starts (the parent's optimum with the new term
        taking over shares of the residual variance, lengthscales at several
        scales, periods from the periodogram; see the user guide). None by
        default, as in scikit-learn's ``GaussianProcessRegressor``: on the
        benchmark series two random restarts changed no search's result and
        cost 10-28 % of its likelihood evaluations (regression guide).
    normalize_y : bool, default=True
        Centre and scale the targets before fitting (predictions are mapped back).
    max_optimize_samples : int, default=None
        When set and the data has more rows, hyperparameters are optimised on
        a random subset of this size; the criterion uses all the data. When
        None, the explore stage of a search on two or more columns still
        optimises its cheap fits on 400 random rows from 600 rows on; the
        best candidates of each depth and the finalists use all rows.
    max_candidates : int, default=None
        Budget of candidate fits; the search stops with the best found so far
        (no finalists refitted, no baselines compared), and a warning says so.
    time_budget : float, default=None
        Budget in seconds of the whole fit, the warp decision included (see
        ``warp_inputs``): on two or more columns one ARD kernel is fitted
        first (the baseline that predicts well on most tables; a cheaper one,
        the isotropic kernel, beside it on a second worker), then the
        search sends a batch of fits only when its
        predicted time (from its own fits of structures that size) ends
        before the budget, less what the finalists will need; the finalists'
        full-effort refits are made only when the time left allows them; a
        fit still running when the budget ends stops its optimisation at the
        best point it reached (it is kept, fitted there, and its record says
        so); a warning says where the search stopped. What comes after the
        fits (the posteriors on all rows, the selection) is not bounded: a
        fit ends a second or two past the budget on a few hundred rows.
    n_jobs : int, default=None
        Candidates fitted in parallel (joblib; any joblib backend, including
        dask, through ``joblib.parallel_config``). ``None`` means 1.
    random_state : int, RandomState instance or None, default=None
        Seeds the random restarts and subsampling. With an int, results are
        reproducible and the same for any ``n_jobs``.
    model_averaging : int or None, default=None
        ``None``: predict with what ``selection`` chooses (one model, or the
        stacking mixture). An int ``k >= 2``: predict with the Gaussian mixture
        of the ``k`` best fitted structures, weighted by exp(score − best
        score), the score being the select stage's: with
        ``selection="criterion"`` the criterion -- for ``"bic"`` and ``"lml"``
        (log-evidence scale) the approximate posterior probabilities of the
        structures --, with ``"loo"`` and ``"forecast"`` the finalists'
        held-out log densities; models with less than 1e-6 of the best's
        weight are dropped. ``"stacking"`` (the default on tables) has its own
        weights and ignores ``k`` (with a warning). The mean and variance of the mixture are exact:
        Σ w_i μ_i and Σ w_i (σ_i² + μ_i²) − μ². ``structure_``, ``decompose``
        and ``describe`` keep describing the chosen model (``describe`` says
        what is averaged).
    verbose : int, default=0
        ``1`` prints one line per depth (best structure, criterion,
        candidates, elapsed time).
    likelihood : {"gaussian", "student_t"}, default="gaussian"
        Noise model. ``"gaussian"``: exact GP regression. ``"student_t"``:
        robust regression, y = f + σ t_ν, fitted by the Laplace approximation
        with a constant latent mean, so that a few gross outliers do not
        distort the structure or the noise level (targets normalised by their
        median and MAD; criteria computed from the evidence and callables;
        ``objective="lml"``). A Gaussian model warns (:class:`OutlierWarning`)
        when a training point's leave-one-out residual exceeds 5 robust
        standard deviations. On a series (one time-index column) Student-t
        noise forgoes the series defaults, which refit the exact Gaussian
        engine on the series' start: the final model is stacked from
        leave-one-out densities, with no change operators, random walk
        baseline or widening beyond the series (``fit`` warns). Student-t
        noise always standardises the targets (``normalize_y=False`` warns).
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
        evaluation); the bound stands in for the evidence, so ``"bic"``,
        ``"aic"``, ``"bic_light"``, ``"lml"`` and callables work, with
        ``objective="lml"`` and Gaussian noise. ``"auto"``: exact up to 3000
        rows, sparse above. With more than 2000 rows and an evidence
        criterion, a sparse model's structures are explored on 2000 rows,
        and the 4 best are refitted on ever more rows up to all of them
        (successive halving; the ``"finalist"`` rows of ``search_results_``;
        see the user guide).
    n_inducing : int, default=256
        Inducing inputs of the sparse approximation (at most the number of
        distinct rows).
    baseline_models : bool, default=True
        The standard models -- one ARD kernel (an SE over all columns, one
        lengthscale each), the additive kernel (one SE per column), one
        isotropic kernel (an SE over all columns, one lengthscale for all) and
        the linear model (one linear kernel over all columns: Bayesian linear
        regression), on one column the one SE kernel, and on a series with
        Gaussian noise the random walk with drift ``LIN(0) + M12(0)`` (the Gaussian-process form
        of the naive forecast with drift) -- are fitted after the search and
        compete with its structures as finalists (they add no children to the
        search).
    selection : {"auto", "criterion", "loo", "stacking", "forecast"}, default="auto"
        How the final model is chosen among the finalists (the search's best
        structures, the best of each depth and the baselines): by the search
        ``criterion``; by the leave-one-out log predictive density at the
        fitted hyperparameters (``"loo"``, closed form, R&W §5.4.2); as the
        mixture of finalists whose weights maximise that held-out log score,
        each finalist's densities discounted by one nat per hyperparameter
        fitted on the same rows (``"stacking"``, Yao et al. 2018; see the
        user guide); or, for one input column, by forecasting: each finalist
        is refitted on the first 85 % of the rows in the column's order and
        the one whose forecast of the rest has the highest log predictive
        density is chosen
        (``"forecast"``; the two best finalists' trend variants, each plus a
        ``LIN`` term, compete too; when the finalist with the best criterion
        changes -- a changepoint, a change window's start or end -- within
        those last 15 %, the criterion chooses, since no refit on the rows
        before can place that change). ``"auto"``: ``"forecast"`` for a
        series -- one input column that looks like a time index: at most 5 %
        of its values repeated, and a regular step, possibly with times
        missing (:func:`skgpsearch.kernels.looks_like_time_index`) -- since
        leaving one point out of a series rewards interpolating between
        neighbours, and the evidence a flexible trend that reverts to the
        mean beyond the data (with Gaussian noise and the exact engine: the
        refits of Student-t noise's Laplace engine are not made, so a series
        with ``likelihood="student_t"`` is stacked, without the change
        operators, the random walk or the widening beyond the series);
        ``"stacking"`` otherwise (two or more columns,
        or one covariate with irregular or repeated values, such as an income
        or a dose, whose model predicts between its values), and
        ``"criterion"`` with the sparse approximation. Set
        ``selection="forecast"`` to forecast an irregularly sampled series.
        On at most 200 rows (exact Gaussian regression) ``"loo"`` and
        ``"stacking"`` judge 5-fold cross-validated densities instead: each
        finalist refitted afresh on four fifths of the rows (not from its
        values, which saw every row) predicts the fifth left out, stacking
        takes them undiscounted, and a structure
        of the search competes only if it beats the best baseline by a
        standard error; with a few rows per hyperparameter, leave-one-out
        densities at hyperparameters fitted on every row flatter a model
        that fits them too closely.
        ``finalists_`` lists the finalists with their scores.
    min_improvement : float or "auto", default="auto"
        Stop the search when a depth improves the best criterion by no more
        than this (its improvement is kept); 0 stops only when a depth does
        not improve at all. ``"auto"``: 1 nat under a criterion on the log
        evidence's scale (the evidence, AIC, BIC, BIC light; a Bayes factor
        of e), 0 under any other, whose units it cannot know. On a table (two
        or more columns) "auto" also asks each depth for log K nats, K being
        its number of candidates: the depth keeps the best of K children, so
        its Bayes factor over the parent must beat the K-fold split of the
        prior mass (see the regression guide, "When the search stops"). On ten
        tables that ended searches one to three depths earlier, for 10-50 %
        less time, with the same or better held-out error. It also stops
        when the next depth's improvement, predicted from the last two as a
        geometric decay (g² / g_before), would be at most log K: on 32 folds
        of 16 tables that ended 17 searches one to four depths earlier (48 %
        fewer likelihood evaluations there, Boston housing 3x fewer), with the
        same held-out error or better on 15 of them and slightly worse on two
        (``benchmarks/results/predicted_gain_stop.txt``).
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
        or Matérn base kernels, never a series, and warps one only where the
        evidence asks for it: one ARD kernel's log evidence (Gaussian noise)
        on the warped columns must beat that on yours by more than
        ``WARP_MIN_EVIDENCE_GAIN`` (1 nat; both fitted on the same sample of
        at most 1000 rows). On ``benchmarks/tabular.py``'s folds the warp
        gained 2.4 to 13.1 nats on every fold of auto_mpg and cpus, and
        between -1.6 and +0.3 on diabetes, which it leaves unwarped. True
        always warps, False never.
        ``X_train_`` keeps your units; lengthscales are in the warped units
        (see ``input_transformer_`` and :meth:`describe`).

    Attributes
    ----------
    structure_ : skgpsearch.grammar.Expr
        The chosen canonical structure; its base kernels carry their fitted
        hyperparameters, and ``str(structure_)`` gives the text notation.
    kernel_ : sklearn Kernel
        The fitted kernel, including the noise term (a ``WhiteKernel``), on
        the normalised target scale when ``normalize_y=True``.
    noise_variance_ : float
        Fitted noise variance of the likelihood on the original target scale
        (Student-t noise: σ² ν / (ν − 2), infinite for ν ≤ 2). A structure's
        own white-noise terms (``WN``, ``LIN * WN``: noise whose level may vary)
        are noise too: ``predict(include_noise=False)`` leaves them out of f's
        spread, and ``describe()`` counts them in the noise.
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
        out), ``diagnostics`` (degenerate features of its optimum, as in
        ``diagnostics_``, joined by "; ") and ``baseline`` (True for the
        baseline models fitted beside the search, which compete at the end
        but have no children, and for a structure of the search that is also a
        baseline; see ``baseline_models``).
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
    finalists_ : dict of lists
        The structures the final model was chosen from: ``structure``,
        ``criterion``, ``loo_log_density`` (Σ_i log p(y_i | y_−i) at the fitted
        hyperparameters, original units; None unless selected by ``"loo"`` or
        ``"stacking"`` on more than 200 rows), ``cv_log_density`` (the same
        sum with each row predicted by the finalist refitted on the other
        folds' rows; None unless ``"loo"`` or ``"stacking"`` cross-validated a
        small table), ``forecast_log_density`` (the log density of the
        series' last 15 % forecast from the rest, original units; None unless
        selected by ``"forecast"``), ``weight`` (in the prediction; 0 if not
        selected), ``baseline``, ``trend_variant`` (a finalist plus a
        ``LIN`` term, fitted after the search when selecting by forecasts) and
        ``held_back`` (a structure of the search left out of a cross-validated
        selection: its advantage over the best baseline was within one
        standard error, which the best of many structures chosen on the same
        rows gains by chance).
    selection_ : str
        The rule that chose the final model: ``"criterion"``, ``"loo"``,
        ``"stacking"`` or ``"forecast"`` (what ``selection="auto"`` became).
    forecast_variance_scale_ : float
        What :meth:`predict` multiplies the predictive variance (and
        covariance) of inputs beyond the series' last time by: with
        ``"forecast"`` selection, the mean squared error, in predictive
        standard deviations, of the chosen structure's forecast of the
        series' last 15 % from the rest, when above 1 (its forecast was
        overconfident there); the same, at most 4, where the criterion
        selected on a series because its best finalist changes within
        those rows (a refit on the rest cannot place the change); else 1.
    search_stop_reason_ : str
        Why the search stopped (``"no improvement"``, ``"max_depth reached"``,
        ``"depth limit reached"``, a budget, ``"interrupted"``).
    averaged_structures_ : list of Expr
        The structures whose mixture predicts (the stacking mixture's, the
        ``model_averaging`` best, or only the chosen one), carrying their
        fitted values: the stacking mixture's largest weight first, else the
        chosen structure first (``structure_``; a forecast within a nat of
        the best leaves the choice to the criterion, so a runner-up can
        weigh more) and the others by their scores.
    model_weights_ : ndarray of shape (n_models,)
        Their weights (summing to one).
    log_marginal_likelihood_value_ : float
        log p(y | X, θ̂) of the chosen model, in the units of the original targets.
    n_hyperparameters_ : int
        Free hyperparameters of the chosen model (kernel and noise).
    input_transformer_ : object or None
        The input warping (``spread_``, ``lambdas_``, ``mean_``, ``scale_`` per column,
        ``transform(X)`` and, under "auto", ``evidence_gain_``: the gain in log evidence
        that decided it), or None when the inputs were used as given.
    date_columns_ : dict
        The columns that held dates (``datetime64``), by index, each with the rule that measures
        them in decimal years: ``"months"`` (year + (month − 1) / 12, when every training date
        is the start of a month; a later date adds the elapsed share of its month, over 12) or
        ``"years"`` (1970 plus years of 365.25 days since then). Empty when there were none. Later calls
        measure dates by the same rules and take numbers in those columns as decimal years.
    X_train_, y_train_ : ndarray
        Training data: its distinct rows. A row that repeats an earlier one
        exactly (inputs and target) would say the noise is zero; it is fitted
        once, with a :class:`RepeatedRowsWarning`. Replicates whose targets
        differ are all kept.
    alpha_ : ndarray
        Weights of the posterior mean on the normalised scale: K_y^{-1} (y - mean)
        (Student-t noise: ∇ log p(y | f̂) at the Laplace mode).
    L_ : ndarray or None
        Lower Cholesky factor of K(X_train, X_train) + noise I (``None`` with
        Student-t noise and with the sparse approximation).
    approximation_ : {"exact", "sparse"}
        The approximation used.
    inducing_inputs_ : ndarray of shape (n_inducing, n_features) or None
        The inducing inputs of the sparse approximation, in the units the
        kernel sees: the warped columns (``input_transformer_.transform``)
        when the inputs are warped. ``alpha_`` then weights them: the mean on
        the normalised scale is ``kernel_(x, inducing_inputs_) @ alpha_``
        without its noise term, for ``x`` in those units too.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has feature names (pandas DataFrame).
    target_name_ : str or None
        The name of ``y`` when it was a named pandas Series: ``describe()``, the
        figures and the report call the target by it.

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
        "change_operators": [StrOptions({"auto"}), "array-like", None],
    }

    def __init__(
        self,
        base_kernels: BaseKernels = "auto",
        *,
        grammar: str | Grammar = "compositional",
        change_operators: str | Sequence[str] | None = "auto",
        criterion: CriterionLike = "bic",
        max_depth: int | None = None,
        max_fits_per_depth: int | None = 32,
        search: str = "greedy",
        beam_width: int = 2,
        objective: str = "lml",
        n_restarts: int = 0,
        normalize_y: bool = True,
        max_optimize_samples: int | None = None,
        max_candidates: int | None = None,
        time_budget: float | None = None,
        n_jobs: int | None = None,
        random_state: RandomStateLike = None,
        verbose: int = 0,
        model_averaging: int | None = None,
        likelihood: str = "gaussian",
        degrees_of_freedom: float | None = 4.0,
        approximation: str = "auto",
        n_inducing: int = 256,
        baseline_models: bool = True,
        selection: str = "auto",
        min_improvement: float | str = "auto",
        warp_inputs: str | bool = "auto",
    ) -> None:
        self.warp_inputs = warp_inputs
        self.base_kernels = base_kernels
        self.grammar = grammar
        self.change_operators = change_operators
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
        self.baseline_models = baseline_models
        self.selection = selection
        self.min_improvement = min_improvement

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
        return self._fit_or_forget(self._search_and_fit, X, y)

    def _search_and_fit(self, X: ArrayLike, y: ArrayLike) -> CompositionalGPRegressor:
        """The work of :meth:`fit`."""
        self._validate_params()
        self._start_fit_clock()
        target_name = self._target_name(y)
        X, y = validate_numeric_data(self, X, y, y_numeric=True, ensure_min_samples=2)
        self.target_name_ = target_name
        # the model keeps the training data: never share the caller's arrays
        X, y = X.copy(), y.copy()
        X, y, n_repeated = distinct_rows(X, y)
        if n_repeated:
            warnings.warn(
                f"{n_repeated} of the {y.shape[0] + n_repeated} training rows repeat an earlier row exactly (the same "
                "inputs and target). Read as measurements, exact repeats say the noise is zero and the model would "
                "interpolate, so each distinct row is fitted once (X_train_ holds them). Remove the repeats before "
                "fit to silence this warning.", RepeatedRowsWarning, stacklevel=user_stacklevel())
        self._check_n_jobs()
        constant_target = _warn_about_the_targets(y)
        criterion = self._criterion()
        seed = self._base_seed()
        X_model = self._fit_input_warping(X, evidence_gain=lambda X_warped: regression_warping_evidence_gain(
            X, X_warped, y, seed, n_jobs=self.n_jobs))
        fitter = self._model_fitter(X_model, y, criterion,
                                    make_estimator=CandidateEstimator(self._unfitted_copy(), X_model, y))
        if self.likelihood == "student_t" and X.shape[1] == 1 and looks_like_time_index(X[:, 0]):
            warnings.warn("X is a series (one time-index column), but likelihood='student_t' is fitted by the "
                          "Laplace engine, which the series defaults do not use: the model is chosen by stacking "
                          "leave-one-out densities, not by forecasting the series' end, without the default change "
                          "operators (change_operators given by name still apply), the random walk baseline or a "
                          "widening of the forecast's spread. Use the Gaussian likelihood for those (OutlierWarning "
                          "points at gross outliers).", UserWarning, stacklevel=user_stacklevel())
        if self.likelihood == "student_t" and not self.normalize_y:
            warnings.warn("normalize_y=False is not used with likelihood='student_t': the Student-t scale and the "
                          "latent mean have bounds in standard units, so the targets are standardised by their "
                          "median and MAD (predictions are mapped back).", UserWarning, stacklevel=user_stacklevel())
        grammar = self._grammar(X.shape[1], change_operators=self._change_operators(fitter), X=X_model,
                                white_noise=fitter.approximation != "sparse")
        outcome = self._run_pipeline(fitter, grammar, criterion, seed)
        self._adopt(fitter.models(outcome), X, y, outcome.weights, X_model, outcome.forecast_variance_scale)
        self.diagnostics_ = list(outcome.best.diagnostics)
        if not constant_target:
            # (a constant target's model is degenerate by nature: its warning said so already)
            warn_about_degenerate_optimum(self.diagnostics_)
        if self._model.engine == "exact" and not constant_target:
            # (leave-one-out residuals need the exact posterior)
            warn_about_outliers(self._model.loo_residuals(), target_spread=float(np.std(self._model.y_fit)))
        self.best_score_ = outcome.best.criterion
        self.search_results_ = outcome.search.table()
        self.search_path_ = outcome.search.levels
        self.search_stop_reason_ = outcome.search.stop_reason
        self.finalists_ = finalists_table(outcome)
        self.selection_ = outcome.selection
        return self

    def _change_operators(self, fitter: RegressionModelFitter) -> tuple[str, ...] | None:
        """The change operators of the named grammar: ``change_operators``, or for "auto" those of one column.

        "auto" turns them on for one input column fitted by the exact engine (a series, or one covariate,
        whose noise or behaviour can change along it), searched over a grammar that takes change operators.
        """
        if isinstance(self.change_operators, str) and self.change_operators == "auto":
            one_column = fitter.forecasts and not isinstance(self.grammar, Grammar) and \
                get_grammar(self.grammar).takes_change_operators
            return SERIES_CHANGE_OPERATORS if one_column else None
        return None if self.change_operators is None else tuple(self.change_operators)

    def _model_fitter(self, X, y, criterion, make_estimator=None) -> RegressionModelFitter:
        options = RegressionOptions(
            likelihood=self.likelihood, degrees_of_freedom=self.degrees_of_freedom, approximation=self.approximation,
            n_inducing=self.n_inducing, objective=self.objective, n_restarts=self.n_restarts,
            max_optimize_samples=self.max_optimize_samples, normalize_y=self.normalize_y,
            baseline_models=self.baseline_models,
            min_periodic_cycles=COVARIATE_MIN_CYCLES if self._searches_one_covariate(X) else 1.0,
        )
        return RegressionModelFitter(options, X, y, criterion, random_state=self.random_state,
                                     make_estimator=make_estimator)

    def _searches_one_covariate(self, X) -> bool:
        """Whether the default base kernels search one input column that is no time index (a covariate)."""
        auto = isinstance(self.base_kernels, str) and self.base_kernels == "auto"
        return auto and not isinstance(self.grammar, Grammar) and X.shape[1] == 1 and \
            not looks_like_time_index(X[:, 0])

    def _adopt(self, models: list[RegressionModel], X: np.ndarray, y: np.ndarray,
               weights: np.ndarray | None = None, X_model: np.ndarray | None = None,
               forecast_variance_scale: float = 1.0) -> None:
        """Become the model ``models[0]`` (predicting with the mixture of ``models``) fitted on (X, y).

        ``X_model``: the inputs as the GP saw them, when the estimator warps its inputs (default ``X``);
        ``forecast_variance_scale``: what the predictive variance beyond the last value of the first column is
        multiplied by.
        """
        model = self._model = models[0]
        self._models = models
        self.forecast_variance_scale_ = float(forecast_variance_scale)
        self.model_weights_ = np.ones(1) if weights is None else weights
        self.averaged_structures_ = [m.structure for m in models]
        self.structure_ = model.structure
        self.X_train_, self.y_train_ = X, y
        self._gp_X_train = X if X_model is None else X_model
        self.approximation_ = "sparse" if model.engine == "sparse" else "exact"
        self.inducing_inputs_ = model.inducing_inputs
        for name, value in model.fitted_attributes().items():
            setattr(self, name, value)
        self.log_marginal_likelihood_value_ = model.log_marginal_likelihood
        self.n_hyperparameters_ = model.n_hyperparameters

    def _refit_structure(self, X: ArrayLike, y: ArrayLike, seed: int = 0) -> CompositionalGPRegressor:
        """A model with this model's structure whose hyperparameters are refitted on (X, y).

        The fit starts from this model's hyperparameters (warm start) plus
        ``n_restarts`` random starts; no structure search. Raises
        ``NumericalError`` when the structure cannot be fitted on (X, y).
        """
        check_is_fitted(self)
        X, y = validate_numeric_data(self, X, y, reset=False, y_numeric=True, ensure_min_samples=2)
        # each distinct row once, as in fit (which warned about the repeats)
        X, y, _ = distinct_rows(X.copy(), y.copy())
        X_model = self._model_inputs(X)
        model = self._unfitted_copy()
        model.input_transformer_ = getattr(self, "input_transformer_", None)
        fitted = model._model_fitter(X_model, y, get_criterion("lml")).refit(self.structure_, seed)
        model._adopt([fitted], X, y, X_model=X_model)
        return model

    def _explanation_view(self) -> RegressionView:
        """What :mod:`skgpsearch.inspection` reads from this model (see :class:`~skgpsearch.inspection.RegressionView`)."""
        check_is_fitted(self)
        return RegressionView(**self._model.explanation_fields(self._gp_X_train, self.y_train_))

    # -- prediction ---------------------------------------------------------------
    def predict(self, X: ArrayLike, return_std: bool = False, return_cov: bool = False,
                include_noise: bool = True) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Predictive mean, with the std or covariance of a new observation (or of the latent function).

        By default the std and covariance are those of a new observation
        y = f(x) + noise, as scikit-learn's ``GaussianProcessRegressor`` gives
        them for a kernel with a fitted ``WhiteKernel`` (``kernel_`` has one):
        ``mean ± 1.96 std`` is a 95 % predictive interval of new targets. With
        ``include_noise=False`` they are those of the noise-free function f, the
        uncertainty about the mean itself. A model average mixes its models'
        predictive distributions, each with its own noise. Beyond the last
        time of a series selected by forecasts, the variance is multiplied by
        ``forecast_variance_scale_`` (see there).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
        return_cov : bool, default=False
        include_noise : bool, default=True
            Whether the std or covariance include the noise variance (Gaussian
            noise: ``noise_variance_``; Student-t noise: σ² ν / (ν − 2), infinite
            for ν ≤ 2, where the noise has no variance) and the structure's
            white-noise terms (``WN``, ``LIN * WN``).

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,), if ``return_std``
        y_cov : ndarray of shape (n_samples, n_samples), if ``return_cov``
        """
        if return_std and return_cov:
            raise ValueError("At most one of return_std or return_cov can be requested.")
        check_is_fitted(self)
        X = validate_numeric_data(self, X, reset=False)
        mean, spread = regression_mixture_moments(self._models, self.model_weights_, self._model_inputs(X),
                                                  return_std, return_cov, include_noise=include_noise)
        if spread is not None and self.forecast_variance_scale_ != 1.0:
            # the forecast's spread as the select stage calibrated it; inside the series' range, the model's own
            beyond = X[:, 0] > np.max(self.X_train_[:, 0])
            factor = np.where(beyond, math.sqrt(self.forecast_variance_scale_), 1.0)
            spread = spread * factor if return_std else spread * np.outer(factor, factor)
        return (mean, spread) if return_std or return_cov else mean

    # -- explanation ----------------------------------------------------------------
    def decompose(self, X: ArrayLike | None = None) -> Decomposition:
        """Posterior mean and std of each additive component at ``X`` (training inputs by default).

        The components' means plus ``offset`` equal :meth:`predict` for a
        model of one structure, and the posterior mean of ``structure_`` for a
        mixture (``model_weights_``); see :func:`skgpsearch.inspection.decompose`.
        """
        return decompose(self, X)

    def describe(self, feature_names: Sequence[str] | None = None, target_name: str | None = None) -> str:
        """Plain-language description of the fitted structure (see :func:`skgpsearch.inspection.describe`)."""
        return describe(self, feature_names=feature_names, target_name=target_name)

    def sample_y(self, X: ArrayLike, n_samples: int = 1, random_state: Any = 0) -> np.ndarray:
        """Draw functions from the posterior at ``X``; an array of shape (n_samples_X, n_samples).

        For a mixture of structures (``model_weights_``) the draws come from one Gaussian with the mixture's
        mean and covariance, not from the mixture itself.
        """
        rng = check_random_state(random_state)
        mean, cov = self.predict(X, return_cov=True, include_noise=False)
        return rng.multivariate_normal(mean, cov, n_samples).T

    def log_marginal_likelihood(self, theta: ArrayLike | None = None,
                                eval_gradient: bool = False) -> float | tuple[float, np.ndarray]:
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
        return self._model.log_marginal_likelihood_at(theta, eval_gradient=eval_gradient)

    def log_marginal_likelihood_on(self, X: ArrayLike, y: ArrayLike) -> float:
        """log p(y | X) of other data under the fitted hyperparameters (no refit)."""
        check_is_fitted(self)
        X = validate_numeric_data(self, X, reset=False)
        y = np.asarray(y, dtype=float).ravel()
        same_inputs = X is self.X_train_ or (X.shape == self.X_train_.shape and np.array_equal(X, self.X_train_))
        if same_inputs and y.shape == self.y_train_.shape and np.array_equal(y, self.y_train_):
            return self.log_marginal_likelihood_value_
        return self._model.log_marginal_likelihood_on(self._model_inputs(X), y)

    # -- what the criteria read (skgpsearch.criteria._protocol.ObjectiveModel) ----------------------
    @property
    def _y_train_std(self) -> float:
        return self._model.y_std

    @property
    def _y_train_mean(self) -> float:
        return self._model.y_mean

    @property
    def _kernel_no_noise(self):
        return self._model.kernel

    def _fitted_objective(self, X: ArrayLike, y: ArrayLike):
        """(exact objective on X, y at the fitted kernel, fitted theta, shift to original units)."""
        check_is_fitted(self)
        X = validate_numeric_data(self, X, reset=False)
        y = np.asarray(y, dtype=float).ravel()
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} values.")
        return self._model.fitted_objective(self._model_inputs(X), y, self.kernel_.theta.copy())

    def _prior_moments(self, prior):
        """Means and standard deviations of the hyperprior on ``kernel_.theta``."""
        return self._model.prior_moments(prior)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = False
        return tags


def _warn_about_the_targets(y: np.ndarray) -> bool:
    """Warn about targets a Gaussian regression cannot model as users expect; whether ``y`` is constant.

    A constant target leaves nothing to find, and its fits are degenerate by nature (noise at its lower
    bound): one warning says so instead of the diagnostics'. Two values are most often class labels, which a
    Gaussian regression can interpolate: on 40 random 0/1 labels the default search chose PER * PER with the
    noise at its lower bound, held-out R² -0.26."""
    if np.ptp(y) == 0:
        warnings.warn(f"y is constant (every target is {y[0]:.6g}): the model predicts that value, and there is "
                      "no structure to find.", UserWarning, stacklevel=user_stacklevel())
        return True
    if np.unique(y).size == 2:
        warnings.warn("y takes only two values: if they are class labels, use CompositionalGPClassifier; a "
                      "Gaussian regression of two levels can fit the labels of nearby rows exactly and predict "
                      "new ones overconfidently.", UserWarning, stacklevel=user_stacklevel())
    return False
