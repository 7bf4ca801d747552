"""Expansion operators: grammars that turn a structure into its children.

A grammar knows nothing about data or fitting. Given the number of input
columns it lists the starting structures (:meth:`initial`) and, for any
structure, its canonical, deduplicated children (:meth:`expand`). The search
decides which children to fit.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from ._expr import CHANGE_OPERATORS, Base, Change, Expr, add, multiply
from ._kinds import KINDS, get_kind
from ._parse import parse

__all__ = ["Grammar", "CompositionalGrammar", "FixedStructureGrammar", "SumOfProductsGrammar", "get_grammar"]

#: Kind of the baseline structures: the product of one per column is the ARD
#: squared-exponential kernel, their sum the additive model (see ``baselines``).
BASELINE_KIND = "SE"
#: The kind of the linear trend a series finalist may gain (see :meth:`Grammar.trend_variants`).
TREND_KIND = "LIN"
#: The kind whose long-lengthscale limit is a random walk (see :meth:`Grammar.random_walk_structure`).
RANDOM_WALK_KIND = "M12"


def random_walk_with_drift(column: int) -> Expr:
    """``LIN(column) + M12(column)``: a linear trend plus an Ornstein-Uhlenbeck (Matérn 1/2) process.

    With a lengthscale long against the series the M12 term is a random walk: the
    forecast starts at the last level and keeps the trend's slope, the Gaussian-process
    form of the naive forecast with drift; with a short one it is rough noise about the trend.
    """
    return add(Base(TREND_KIND, column), Base(RANDOM_WALK_KIND, column))


class Grammar:
    """Common machinery of the grammars (restrictions, base set, deduplication).

    Parameters
    ----------
    base_kernels : sequence of str
        Kinds that may be used on every column (``C`` and ``WN`` are added
        once, without columns, if listed).
    kernels_per_column : dict, optional
        ``{column: kinds}`` overriding ``base_kernels`` for those columns,
        e.g. ``{0: ("SE", "PER", "LIN")}``; an empty sequence excludes the column.
    max_terms : int, optional
        Largest number of additive terms (of the distributed form) a child may have.
    max_factors : int, optional
        Largest number of base kernels in one additive term of a child.
    baselines : bool, default=False
        With two or more columns, the starting structures also include the
        two standard models of multi-column data: the product of one SE per
        column (a squared-exponential kernel with one lengthscale per column,
        "ARD") and their sum (the additive model), over the columns whose
        kinds include SE. A search then never ends below them under its own
        criterion, and its expansions can start from them -- but the children
        of such a wide structure number in the hundreds per depth, so each
        depth costs several times more (measured on 10-column data: 3.4x the
        time for a worse criterion under the same budget); off by default.
    prune : bool, default=True
        Children also include the structure with one operand of a sum or
        product removed, so that a search can drop a term or a column that
        stopped paying for its hyperparameters (an irrelevant column of the
        additive baseline, a term a later one made redundant).
    """

    default_base_kernels = ("SE",)
    #: True for a grammar whose only candidate is one given structure (a refit, not a search): the
    #: estimators then fit it as it is, without their extra candidates or rejection of degenerate optima.
    single_structure = False

    #: True for a grammar that takes ``change_operators`` (the changepoint and change-window operators).
    takes_change_operators = False

    def __init__(
        self,
        base_kernels: Sequence[str] | None = None,
        *,
        kernels_per_column: Mapping[int, Sequence[str]] | None = None,
        max_terms: int | None = None,
        max_factors: int | None = None,
        baselines: bool = False,
        prune: bool = True,
    ) -> None:
        self.base_kernels = base_kernels
        self.kernels_per_column = kernels_per_column
        self.max_terms = max_terms
        self.max_factors = max_factors
        self.baselines = baselines
        self.prune = prune

    # -- parameters ---------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters (for repr, equality and cloning with ``sklearn.base.clone``)."""
        return {
            "base_kernels": self.base_kernels,
            "kernels_per_column": self.kernels_per_column,
            "max_terms": self.max_terms,
            "max_factors": self.max_factors,
            "baselines": self.baselines,
            "prune": self.prune,
        }

    def set_params(self, **params: Any) -> Grammar:
        """Set constructor parameters (the keys of :meth:`get_params`, scikit-learn's convention): an
        estimator's ``grammar__max_terms`` in ``GridSearchCV`` or ``set_params`` reaches them."""
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for {type(self).__name__}; its parameters are "
                                 f"{', '.join(valid)}.")
            setattr(self, key, value)
        return self

    def __repr__(self):
        defaults = {"baselines": False, "prune": True, "change_operators": ()}
        args = ", ".join(
            f"{k}={v!r}" for k, v in self.get_params().items() if v is not None and defaults.get(k, None) != v
        )
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and self.get_params() == other.get_params()

    def __hash__(self):
        return hash((type(self).__name__, repr(self)))

    def _kinds(self, kinds, where):
        if isinstance(kinds, str):
            kinds = (kinds,)
        try:
            return tuple(dict.fromkeys(get_kind(k).name for k in kinds))
        except TypeError:
            raise ValueError(f"{where} must be a sequence of kernel names, got {kinds!r}.") from None

    def _check_limits(self):
        for name in ("max_terms", "max_factors"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1
            ):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}.")

    def base_set(self, n_features: int) -> list[Base]:
        """All base kernels the grammar may insert, in canonical order.

        Parameters
        ----------
        n_features : int
            Number of input columns.
        """
        if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral) or n_features < 1:
            raise ValueError(f"n_features must be a positive integer, got {n_features!r}.")
        self._check_limits()
        default = self._kinds(
            self.default_base_kernels if self.base_kernels is None else self.base_kernels,
            "base_kernels",
        )
        per_column = {}
        for column, kinds in (self.kernels_per_column or {}).items():
            if isinstance(column, bool) or not isinstance(column, numbers.Integral) or not 0 <= column < n_features:
                raise ValueError(
                    f"kernels_per_column has column {column!r}, but there are {n_features} columns."
                )
            per_column[int(column)] = self._kinds(kinds, f"kernels_per_column[{column}]")
        bases = []
        global_kinds = [k for k in default if KINDS[k].columns == "none"]
        for kinds in per_column.values():
            global_kinds += [k for k in kinds if KINDS[k].columns == "none"]
        bases += [Base(k) for k in dict.fromkeys(global_kinds)]
        for column in range(n_features):
            for k in per_column.get(column, default):
                if KINDS[k].columns != "none":
                    bases.append(Base(k, column))
        if not bases:
            raise ValueError("The grammar has no base kernels: check base_kernels and kernels_per_column.")
        return sorted(bases)

    def initial(self, n_features: int) -> list[Expr]:
        """Starting structures of a search: every base kernel of the base set, then the baselines."""
        bases = [b for b in self.base_set(n_features) if self.admits(b)]
        return bases + [e for e in self.baseline_structures(n_features) if e not in bases]

    def baseline_structures(self, n_features: int) -> list[Expr]:
        """The ARD product and the additive sum of per-column SE kernels (see ``baselines``).

        Empty without ``baselines``, or when fewer than two columns admit SE.
        """
        if not self.baselines:
            return []
        return self.standard_structures(n_features)

    def standard_structures(self, n_features: int) -> list[Expr]:
        """The ARD product and the additive sum of per-column SE kernels, whatever ``baselines`` says.

        On one column the two coincide: the one SE kernel. Empty when no
        column admits SE or the size restrictions exclude them.
        """
        columns = self._se_columns(n_features)
        if not columns:
            return []
        ses = [Base(BASELINE_KIND, c) for c in columns]
        return [e for e in dict.fromkeys((multiply(*ses), add(*ses))) if self.admits(e)]

    def isotropic_structure(self, n_features: int) -> Expr | None:
        """One SE kernel over every column that admits SE with one lengthscale for all, ``SE(0, 1, ...)``: the
        isotropic RBF kernel. None on fewer than two such columns, or when the size restrictions exclude it.

        A model fitter may let it compete with the standard structures: where many columns matter alike
        (the pixels of an image) two hyperparameters generalise better than a lengthscale per column.
        """
        return self._one_kernel_over_se_columns(BASELINE_KIND, n_features)

    def linear_structure(self, n_features: int) -> Expr | None:
        """One linear kernel over every column that admits SE, ``LIN(0, 1, ...)``: Bayesian linear regression
        (one prior variance for all slopes, in standardised columns). None on fewer than two such columns, or
        when the size restrictions exclude it.

        A model fitter may let it compete with the standard structures: on a table of a few dozen rows a
        straight plane often predicts better than any smooth kernel.
        """
        return self._one_kernel_over_se_columns(TREND_KIND, n_features)

    def random_walk_structure(self, n_features: int) -> Expr | None:
        """On one column whose base kernels include ``LIN``, :func:`random_walk_with_drift` of it; otherwise None.

        A model fitter may let it compete with the standard structures on a series: a short
        series that trends (sales, users, temperatures) is often forecast best from its last
        level and mean slope, where every stationary kernel reverts to the mean.
        """
        if n_features != 1 or Base(TREND_KIND, 0) not in self.base_set(1):
            return None
        walk = random_walk_with_drift(0)
        return walk if self.admits(walk) else None

    def _se_columns(self, n_features: int) -> list[int]:
        """The columns whose base kernels include SE (the columns of the baselines)."""
        return [b.columns[0] for b in self.base_set(n_features) if b.name == BASELINE_KIND]

    def _one_kernel_over_se_columns(self, kind: str, n_features: int) -> Expr | None:
        """One ``kind`` kernel over every column that admits SE; None on fewer than two, or when not admitted."""
        columns = self._se_columns(n_features)
        if len(columns) < 2:
            return None
        kernel = Base(kind, tuple(columns))
        return kernel if self.admits(kernel) else None

    def trend_variants(self, expr: Expr, n_features: int) -> list[Expr]:
        """``expr`` plus a linear trend, one child per column the grammar gives a linear kernel.

        A sum with a ``LIN`` term of its own keeps its direction beyond the
        data; a greedy search seldom reaches it from a structure whose smooth
        term already explains the trend in the training range, because there
        the two fit alike. A column whose ``LIN`` is already a term of ``expr``
        gets none; children outside the size restrictions are left out.
        """
        terms = {term.without_values() for term in expr.terms()}
        variants = []
        for base in self.base_set(n_features):
            if base.name == TREND_KIND and base not in terms:
                child = add(expr, base)
                if self.admits(child):
                    variants.append(child)
        return variants

    def period_columns(self, n_features: int) -> list[int]:
        """Columns with a periodic base kernel (their candidates' fits start from the data's periods)."""
        return sorted({b.columns[0] for b in self.base_set(n_features) if b.kind.periodic})

    def change_columns(self, n_features: int) -> list[int]:
        """Columns a change operator may switch on (none: this grammar has no change operators)."""
        return []

    def admits(self, expr: Expr) -> bool:
        """Whether ``expr`` satisfies the size restrictions."""
        if self.max_terms is not None and expr.n_terms > self.max_terms:
            return False
        if self.max_factors is not None and expr.max_factors > self.max_factors:
            return False
        return True

    def expand(self, expr: Expr, n_features: int) -> list[Expr]:
        """Canonical, unique children of ``expr`` that satisfy the restrictions.

        The parent itself (a child that simplifies back to it) is never listed.
        Hyperparameter values carried by the parent's base kernels ride along
        to the children; inserted base kernels carry none.
        """
        if not isinstance(expr, Expr):
            raise ValueError(f"expand needs a kernel-structure expression, got {type(expr).__name__}.")
        bases = self.base_set(n_features)
        children = {}
        for child in self._all_candidates(expr, bases):
            if child != expr and child not in children and self.admits(child):
                children[child] = child
        return list(children)

    def n_candidates(self, expr: Expr, n_features: int) -> int:
        """Number of children before deduplication and restrictions."""
        return sum(1 for _ in self._all_candidates(expr, self.base_set(n_features)))

    def _all_candidates(self, expr, bases):
        yield from self._candidates(expr, bases)
        if self.prune:
            yield from _pruned(expr)

    def _candidates(self, expr, bases):
        raise NotImplementedError


class CompositionalGrammar(Grammar):
    """The compositional kernel grammar of Duvenaud et al. (2013).

    For every subexpression S of the structure and every base kernel B of the
    base set, the children are the structure with S replaced by ``S + B`` and
    by ``S * B``; every base kernel in the structure may also be replaced by
    any other base kernel B'. Subexpressions are the nodes of the canonical
    tree: the whole structure and, recursively, every operand of a sum or
    product (for an n-ary sum, ``S + B`` at a sub-sum equals ``S + B`` at the
    whole sum by associativity, so only nodes are enumerated). This is the
    grammar of [1]_.

    With ``change_operators`` (Lloyd et al. 2014 [2]_), every subexpression S
    also becomes ``CP(c, S, S)`` and ``CW(c, S, S)`` (the structure changes
    its hyperparameters at a point, or inside a window) and the "switch-off"
    forms ``CP(c, S, C)``, ``CP(c, C, S)``, ``CW(c, S, C)`` and
    ``CW(c, C, S)`` (S stops, starts, pauses, or exists only inside a
    window), for every column c that has base kernels.

    With a white-noise kernel WN among the base kernels, the structure S also
    has the children ``S + WN * B`` for every base kernel B whose variance
    is not constant along the inputs (LIN): noise whose level changes along
    an input in one step, which ``S + WN`` alone (a duplicate of the
    likelihood's noise) would not reward.

    Parameters
    ----------
    base_kernels : sequence of str, default=("SE", "RQ", "PER", "LIN")
    change_operators : sequence of {"CP", "CW"}, default=()
        Change operators to insert (none: the grammar of Duvenaud et al.).
    kernels_per_column, max_terms, max_factors, baselines, prune
        See :class:`Grammar`.

    References
    ----------
    .. [1] D. Duvenaud, J. R. Lloyd, R. Grosse, J. B. Tenenbaum and
       Z. Ghahramani, "Structure Discovery in Nonparametric Regression through
       Compositional Kernel Search", ICML 2013, PMLR 28, 1166–1174.
    .. [2] J. R. Lloyd, D. Duvenaud, R. Grosse, J. B. Tenenbaum and
       Z. Ghahramani, "Automatic Construction and Natural-Language Description
       of Nonparametric Regression Models", AAAI 2014, 1242–1250.

    Examples
    --------
    >>> from skgpsearch.grammar import CompositionalGrammar, parse
    >>> g = CompositionalGrammar(["SE", "LIN"])
    >>> sorted(str(c) for c in g.expand(parse("SE(0)"), n_features=1))
    ['LIN(0)', 'SE(0) * LIN(0)', 'SE(0) + LIN(0)', 'SE(0) + SE(0)']
    """

    takes_change_operators = True
    default_base_kernels = ("SE", "RQ", "PER", "LIN")

    def __init__(
        self,
        base_kernels: Sequence[str] | None = None,
        *,
        change_operators: Sequence[str] | str = (),
        kernels_per_column: Mapping[int, Sequence[str]] | None = None,
        max_terms: int | None = None,
        max_factors: int | None = None,
        baselines: bool = False,
        prune: bool = True,
    ) -> None:
        super().__init__(base_kernels, kernels_per_column=kernels_per_column, max_terms=max_terms,
                         max_factors=max_factors, baselines=baselines, prune=prune)
        self.change_operators = change_operators

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {**super().get_params(deep), "change_operators": self.change_operators}

    def _operators(self):
        operators = (self.change_operators,) if isinstance(self.change_operators, str) else self.change_operators
        try:
            names = tuple(dict.fromkeys(str(op).upper() for op in operators))
        except TypeError:
            raise ValueError(f"change_operators must be a sequence of 'CP'/'CW', got {self.change_operators!r}.") from None
        unknown = [op for op in names if op not in CHANGE_OPERATORS]
        if unknown:
            raise ValueError(f"Unknown change operator {unknown[0]!r}; known are: {', '.join(CHANGE_OPERATORS)}.")
        return names

    def change_columns(self, n_features: int) -> list[int]:
        """Columns a change operator may switch on: those with base kernels (none without operators)."""
        if not self._operators():
            return []
        return sorted({c for b in self.base_set(n_features) for c in b.columns})

    def _candidates(self, expr, bases):
        operators = self._operators()
        columns = sorted({c for b in bases for c in b.columns}) if operators else []
        constant = Base("C")
        for path, node in expr.subexpressions():
            for base in bases:
                yield expr.replace(path, node + base)
                yield expr.replace(path, node * base)
            if isinstance(node, Base):
                for base in bases:
                    if base != node:
                        yield expr.replace(path, base)
            for operator in operators:
                for c in columns:
                    for first, second in ((node, node), (node, constant), (constant, node)):
                        yield expr.replace(path, Change(operator, c, first, second))
        # Noise whose level changes along an input, in one step: S + WN alone duplicates the likelihood's own
        # noise, so a greedy search would stop before S + WN * LIN (noise growing along the input) paid off.
        noise = [base for base in bases if base.kind.white_noise]
        if noise:
            for base in bases:
                if not base.kind.constant_diagonal:
                    yield expr + noise[0] * base


class SumOfProductsGrammar(Grammar):
    """The sum-of-products grammar of the GP-classification search (Mrkšić 2014, §4.1.2).

    With the structure written as a sum of terms ``K_1 + ... + K_m``, the
    children are ``K + B`` and ``K_1 + ... + K_j * B + ... + K_m`` for every
    base kernel B of the base set and every term j: ``|B| * (m + 1)``
    candidates before deduplication (``D * (m + 1)`` with one kind per column),
    plus the pruned structures (see ``prune``). Starting from base kernels,
    every structure it reaches is a sum of products of base kernels. It is
    the grammar of the GP-classification structure search of [1]_.

    Parameters
    ----------
    base_kernels : sequence of str, default=("SE",)
    kernels_per_column, max_terms, max_factors
        See :class:`Grammar`.

    References
    ----------
    .. [1] N. Mrkšić, "Kernel Structure Discovery for Gaussian Process
       Classification", dissertation (Part III of the Computer Science Tripos),
       University of Cambridge, 2014, §4.1.2.

    Examples
    --------
    >>> from skgpsearch.grammar import SumOfProductsGrammar, parse
    >>> g = SumOfProductsGrammar()
    >>> [str(c) for c in g.expand(parse("SE(0) + SE(1)"), n_features=2)]  # the last two: pruned
    ['SE(0) + SE(0) + SE(1)', 'SE(0) + SE(1) + SE(1)', 'SE(1) + SE(0) * SE(1)', 'SE(0) + SE(0) * SE(1)', 'SE(1)', 'SE(0)']
    """

    default_base_kernels = ("SE",)

    def _candidates(self, expr, bases):
        terms = expr.terms()
        for base in bases:
            yield expr + base
        for j, term in enumerate(terms):
            for base in bases:
                yield add(*terms[:j], term * base, *terms[j + 1:])


class FixedStructureGrammar(Grammar):
    """A grammar whose only candidate is one structure: fitting an estimator with it refits that structure.

    Parameters
    ----------
    structure : Expr or str
        The structure (its base kernels' values, if any, start the fit), or
        its text (read with :func:`~skgpsearch.grammar.parse`).

    Examples
    --------
    >>> from skgpsearch.grammar import FixedStructureGrammar, parse
    >>> grammar = FixedStructureGrammar(parse("SE(0) + PER(0)"))
    >>> [str(e) for e in grammar.initial(1)], grammar.expand(parse("SE(0)"), 1)
    (['SE(0) + PER(0)'], [])
    >>> FixedStructureGrammar("SE(0) + PER(0)").initial(1) == grammar.initial(1)
    True
    """

    single_structure = True

    def __init__(self, structure: Expr | str) -> None:
        super().__init__()
        self.structure = structure

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"structure": self.structure}

    @property
    def _expr(self) -> Expr:
        if isinstance(self.structure, Expr):
            return self.structure
        if isinstance(self.structure, str):
            return parse(self.structure)
        raise ValueError(f"FixedStructureGrammar's structure must be a structure (an Expr) or its text, got "
                         f"{type(self.structure).__name__}: {self.structure!r}.")

    def initial(self, n_features: int) -> list[Expr]:
        return [self._expr]

    def expand(self, expr: Expr, n_features: int) -> list[Expr]:
        return []

    def period_columns(self, n_features: int) -> list[int]:
        return sorted({leaf.columns[0] for leaf in self._expr.leaves if leaf.kind.periodic})

    def change_columns(self, n_features: int) -> list[int]:
        return sorted({node.column for node in self._expr.changes})

    def baseline_structures(self, n_features: int) -> list[Expr]:
        return []

    def standard_structures(self, n_features: int) -> list[Expr]:
        return []

    def isotropic_structure(self, n_features: int) -> Expr | None:
        return None

    def linear_structure(self, n_features: int) -> Expr | None:
        return None

    def random_walk_structure(self, n_features: int) -> Expr | None:
        return None

    def trend_variants(self, expr: Expr, n_features: int) -> list[Expr]:
        return []


def _pruned(expr):
    """``expr`` with one operand of one of its sums or products removed, for every such operand."""
    for path, node in expr.subexpressions():
        operands = node.operands
        if len(operands) < 2:
            continue
        for i in range(len(operands)):
            rest = operands[:i] + operands[i + 1 :]
            yield expr.replace(path, node._rebuild(list(rest)) if len(rest) > 1 else rest[0])


_GRAMMARS = {
    "compositional": CompositionalGrammar,
    "cks": CompositionalGrammar,
    "sum_of_products": SumOfProductsGrammar,
    "sop": SumOfProductsGrammar,
}


#: The change operators a regressor's compositional search uses on a series by default (its
#: ``change_operators="auto"``): on the 11 shared extrapolation series they improved call-centre (a level
#: drop; RMSE 160 to 44), wages and solar, made sulphuric worse and left seven unchanged, for 1.6x the time.
SERIES_CHANGE_OPERATORS = ("CP", "CW")

#: The default grammar and base kernels of each task (the estimators' defaults). Regression tells
#: a series or a 1-D function (one input column), where periodic, rational-quadratic and linear
#: kernels describe real structure and WN, in products such as LIN * WN, noise whose level changes
#: along the input (statsmodels' engel data, food expenditure against income, 5 folds: SMSE 1.12 ->
#: 0.24, where a rough LIN * PER had stood in for the growing noise; mcycle's MSLL -0.720 -> -0.834;
#: on the 11 extrapolation series 10 results identical and call-centre's RMSE 190 -> 160), from a
#: table (two or more columns), where sums and products of SE kernels on column subsets (additive
#: models with interactions) are the family: on the tabular benchmarks (benchmarks/tabular.py) a
#: PER or RQ on every column multiplied the candidates and predicted worse, and LIN products,
#: polynomials, extrapolated without bound to a test row beyond the training range (cpus, one fold:
#: SMSE 2.0 against 0.22 with SE alone).
TASK_DEFAULTS = {
    "regression": {"grammar": "compositional", "base_kernels": ("SE", "RQ", "PER", "LIN", "WN"),
                   "tabular_base_kernels": ("SE",)},
    "classification": {"grammar": "sum_of_products", "base_kernels": ("SE",), "tabular_base_kernels": ("SE",)},
}


def grammar_names() -> tuple[str, ...]:
    """Names accepted by :func:`get_grammar` (aliases included)."""
    return tuple(sorted(_GRAMMARS))


def default_grammar(task: str) -> str:
    """Name of the default grammar of a task ("regression" or "classification")."""
    return TASK_DEFAULTS[task]["grammar"]


def default_base_kernels(task: str, n_features: int = 1) -> tuple[str, ...]:
    """Names of the default base kernels of a task ("regression" or "classification").

    Parameters
    ----------
    task : {"regression", "classification"}
    n_features : int, default=1
        Number of input columns. Regression on one column (a series, a 1-D
        function) gets ``("SE", "RQ", "PER", "LIN", "WN")``; on two or more columns
        (a table) ``("SE",)``. Classification gets ``("SE",)``.
    """
    return TASK_DEFAULTS[task]["base_kernels" if n_features <= 1 else "tabular_base_kernels"]


def get_grammar(grammar: str | Grammar, **params: Any) -> Grammar:
    """A grammar from its name (``"compositional"``/``"cks"``, ``"sum_of_products"``/``"sop"``) or instance.

    Extra keyword arguments are passed to the constructor when a name is given.
    """
    if isinstance(grammar, Grammar):
        if params:
            raise ValueError("Keyword arguments are only accepted with a grammar name.")
        return grammar
    if isinstance(grammar, str) and grammar.lower() in _GRAMMARS:
        return _GRAMMARS[grammar.lower()](**params)
    raise ValueError(
        f"Unknown grammar {grammar!r}; use one of {', '.join(sorted(_GRAMMARS))} or a Grammar instance."
    )
