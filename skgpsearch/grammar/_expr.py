"""Kernel-structure expressions: plain data in canonical form.

An expression is a tree of base kernels (:class:`Base`: a kind and the input
columns it acts on) combined by n-ary sums (:class:`Sum`) and products
(:class:`Product`).  Every expression that exists is canonical: the only ways
to build compound expressions (``+``, ``*``, :func:`add`, :func:`multiply`,
``Sum(...)``, ``Product(...)``, :func:`~skgpsearch.grammar.parse`) apply the
rules below, so two expressions that denote the same kernel family by these
rules compare and hash equal.

Canonical-form rules (each is an *exact* identity between kernel families;
none changes the set of covariance functions an expression can represent):

1. **Associativity** -- nested sums and nested products are flattened:
   ``(A + B) + C`` is ``A + B + C``.
2. **Commutativity** -- operands are sorted by a fixed total order (base
   kernels before products before sums; base kernels by catalogue order of
   their kind, then by columns).
3. **Closed products** -- a product of SE kernels on the same columns is one
   SE kernel (exp(-d²/2a²) exp(-d²/2b²) = exp(-d²/2c²), 1/c² = 1/a² + 1/b²;
   the amplitudes multiply); likewise for M12 (1/c = 1/a + 1/b).
4. **Constant factors** -- a constant kernel ``C`` in a product with any factor
   that has a free scale is absorbed by that factor's amplitude; a product
   of constants is a constant.
5. **Constant and white-noise terms** -- ``C + C`` is ``C`` and ``WN + WN`` is
   ``WN`` (variances add).
6. **White-noise products** -- in a product with white noise, every factor
   with constant diagonal (stationary kernels, constants, sums and products
   of them) is absorbed into the white noise's variance: WN is non-zero only
   on the diagonal, where such a factor is a constant.
7. **Singletons** -- a sum or product of one operand is that operand.

Changepoints ``CP(c, A, B)`` and change windows ``CW(c, A, B)`` (:class:`Change`)
switch between two structures along column ``c``; their operands are
ordered (before/after, outside/inside) and no rule rewrites them.

Distributivity is deliberately *not* a rule: ``A * (B + C)`` and
``A * B + A * C`` are different families (the second has more hyperparameters).

Fitted hyperparameter values may ride along on base kernels (``Base.params``)
so that children built from a fitted parent inherit them; they never take
part in equality, hashing or ordering.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ._kinds import get_kind, kind_rank

__all__ = ["Expr", "Base", "Sum", "Product", "Change", "add", "multiply", "CHANGE_OPERATORS"]

#: Change operators: their own hyperparameters (in theta order) and a plain-language name.
CHANGE_OPERATORS = {
    "CP": (("location", "width"), "changepoint"),
    "CW": (("location", "duration", "width"), "change window"),
}


def _is_identifier(name):
    return bool(name) and (name[0].isalpha() or name[0] == "_") and all(
        ch.isalnum() or ch in "_." for ch in name
    )


def _quote(name):
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def format_column(column, feature_names=None):
    """Text for one column reference: the index, or the (quoted) feature name."""
    if feature_names is None:
        return str(column)
    if column >= len(feature_names):
        raise ValueError(
            f"Column {column} is out of range for {len(feature_names)} feature names."
        )
    name = str(feature_names[column])
    return name if _is_identifier(name) else _quote(name)


class Expr:
    """Base class of kernel-structure expressions (immutable, hashable).

    Do not subclass or instantiate directly: use :class:`Base`, ``+``, ``*``
    or :func:`~skgpsearch.grammar.parse`.
    """

    __slots__ = ("_key", "_hash")

    # -- identity -----------------------------------------------------------
    @property
    def key(self) -> tuple[Any, ...]:
        """Sort key defining the canonical total order of expressions."""
        return self._key

    def __eq__(self, other):
        return isinstance(other, Expr) and self._key == other._key

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return self._hash

    def __lt__(self, other):
        if not isinstance(other, Expr):
            return NotImplemented
        return self._key < other._key

    def _set_key(self, key):
        self._key = key
        self._hash = hash(key)

    # -- algebra ------------------------------------------------------------
    def __add__(self, other):
        if not isinstance(other, Expr):
            return NotImplemented
        return add(self, other)

    def __mul__(self, other):
        if not isinstance(other, Expr):
            return NotImplemented
        return multiply(self, other)

    # -- text ---------------------------------------------------------------
    def __str__(self):
        return self.to_string()

    def __repr__(self):
        return f"parse({self.to_string()!r})"

    def to_string(self, feature_names: Sequence[str] | None = None) -> str:
        """Canonical text notation, e.g. ``"SE(0) + PER(0) * LIN(1)"``.

        Parameters
        ----------
        feature_names : sequence of str, optional
            When given, columns are written by name (quoted when the name is
            not a plain identifier) instead of by index.
        """
        raise NotImplementedError

    # -- structure ----------------------------------------------------------
    @property
    def operands(self) -> tuple[Expr, ...]:
        """Direct sub-expressions (empty for a base kernel)."""
        return ()

    def subexpressions(self) -> Iterator[tuple[tuple[int, ...], Expr]]:
        """All nodes of the tree as ``(path, node)`` pairs, root first.

        A path is the tuple of operand indices leading from the root to the
        node; ``expr.replace(path, new)`` substitutes a node.
        """
        stack = [((), self)]
        while stack:
            path, node = stack.pop()
            yield path, node
            for i in reversed(range(len(node.operands))):
                stack.append((path + (i,), node.operands[i]))

    def replace(self, path: Sequence[int], new: Expr) -> Expr:
        """Return the canonical expression with the node at ``path`` replaced."""
        if not path:
            return new
        head, rest = path[0], path[1:]
        ops = list(self.operands)
        ops[head] = ops[head].replace(rest, new)
        return self._rebuild(ops)

    def _rebuild(self, operands):
        raise NotImplementedError

    @property
    def leaves(self) -> tuple[Base, ...]:
        """Base kernels of the expression in canonical (depth-first) order."""
        return tuple(node for _, node in self.subexpressions() if isinstance(node, Base))

    @property
    def columns(self) -> tuple[int, ...]:
        """Sorted tuple of the input columns the expression depends on."""
        columns = {c for leaf in self.leaves for c in leaf.columns}
        columns.update(node.column for node in self.changes)
        return tuple(sorted(columns))

    @property
    def changes(self) -> tuple[Change, ...]:
        """Changepoint and change-window nodes of the expression (depth-first order)."""
        return tuple(node for _, node in self.subexpressions() if isinstance(node, Change))

    def terms(self) -> tuple[Expr, ...]:
        """Top-level additive operands (the expression itself if not a sum)."""
        return (self,)

    def sum_of_products(self) -> tuple[Expr, ...]:
        """The distributed form: a tuple of terms, each a base or a product of bases.

        ``(SE(0) + PER(0)) * LIN(0)`` gives ``(SE(0) * LIN(0), PER(0) * LIN(0))``.
        Distribution is not an identity of kernel families (see the module
        docstring); it is what additive decompositions and term counts use.
        """
        raise NotImplementedError

    @property
    def adds_white_noise(self) -> bool:
        """Whether the structure is a signal plus plain white noise: a term of its distributed form is ``WN``
        alone, times nothing whose diagonal varies (the canonical form folds ``RQ * WN``, ``PER * WN`` and
        ``C * WN`` into ``WN``; ``LIN * WN``, noise that grows along an input, is no such term).

        ``WN`` itself is not: it is the model of noise alone. Under a Gaussian likelihood such a term adds
        nothing the noise variance does not already give, so ``S + WN`` is ``S`` with one more hyperparameter.

        >>> from skgpsearch.grammar import parse
        >>> [parse(s).adds_white_noise for s in ("RQ(0) * (PER(0) + WN)", "SE(0) + LIN(0) * WN", "WN")]
        [True, False, False]
        """
        if isinstance(self, Base):
            return False
        return any(isinstance(term, Base) and term.kind.white_noise for term in self.sum_of_products())

    @property
    def n_base_kernels(self) -> int:
        """Number of base-kernel occurrences."""
        return len(self.leaves)

    @property
    def n_terms(self) -> int:
        """Number of additive terms of the distributed form."""
        raise NotImplementedError

    @property
    def max_factors(self) -> int:
        """Largest number of base kernels in one term of the distributed form."""
        raise NotImplementedError

    def free_amplitudes(self) -> tuple[bool, ...]:
        """Which leaves keep a free amplitude, aligned with :attr:`leaves`.

        In a product only one factor's scale is identifiable; the others are
        fixed to one. The scale is kept by the first sum factor if there is
        one (its terms' amplitudes carry it), else by the first base factor.
        Removing a sum's scale fixes the scale of its first operand only.
        """
        flags = []
        _amplitude_flags(self, True, flags)
        return tuple(flags)

    @property
    def n_hyperparameters(self) -> int:
        """Number of free scalar kernel hyperparameters (amplitudes counted once per product).

        The likelihood's noise variance is not part of the expression and is
        not counted here.
        """
        total = sum(len(node.parameter_names) for node in self.changes)
        for leaf, free in zip(self.leaves, self.free_amplitudes()):
            total += leaf.kind.n_parameters(len(leaf.columns))
            if leaf.kind.has_amplitude and not free:
                total -= 1
        return total

    @property
    def has_values(self) -> bool:
        """Whether any base kernel (or change operator) carries hyperparameter values."""
        return any(leaf.params for leaf in self.leaves) or any(node.params for node in self.changes)

    def without_values(self) -> Expr:
        """The same structure with all hyperparameter values dropped."""
        return _without_values(self)

    def map_leaves(self, function: Callable[[Base], Expr]) -> Expr:
        """Rebuild the expression with every base kernel replaced by ``function(leaf)``."""
        raise NotImplementedError


class Base(Expr):
    """A base kernel: a kind from the catalogue acting on some input columns.

    Parameters
    ----------
    kind : str
        Kind name, e.g. ``"SE"`` (see :data:`skgpsearch.grammar.KINDS`).
    columns : int or sequence of int, default=()
        Input columns (0-based). ``C`` and ``WN`` take none, ``PER`` exactly
        one, the others one or more (stationary kinds then use the Euclidean
        distance over the columns, with one shared lengthscale).
    params : mapping, optional
        Hyperparameter values (e.g. from a fitted kernel). Ignored by equality.

    Examples
    --------
    >>> from skgpsearch.grammar import Base
    >>> print(Base("SE", 0) + Base("PER", 0) * Base("LIN", 1))
    SE(0) + PER(0) * LIN(1)
    """

    __slots__ = ("kind", "_columns", "_params")

    def __init__(
        self,
        kind: str,
        columns: int | Iterable[int] = (),
        params: Mapping[str, float | Iterable[float] | None] | None = None,
    ) -> None:
        self.kind = get_kind(kind)
        self._columns = _validate_columns(self.kind, columns)
        self._params = _validate_params(self.kind, self._columns, params)
        self._set_key((0, kind_rank(self.kind.name), self._columns))

    def __reduce__(self):
        return (Base, (self.kind.name, self._columns, dict(self._params)))

    @property
    def name(self) -> str:
        """Kind name, e.g. ``"SE"``."""
        return self.kind.name

    @property
    def columns(self) -> tuple[int, ...]:
        return self._columns

    @property
    def params(self) -> dict[str, float | tuple[float, ...]]:
        """Hyperparameter values carried by this node (a new dict)."""
        return dict(self._params)

    def with_params(self, params: Mapping[str, float | Iterable[float] | None] | None) -> Base:
        """The same base kernel carrying ``params`` (replacing any values)."""
        return Base(self.kind.name, self._columns, params)

    def to_string(self, feature_names: Sequence[str] | None = None) -> str:
        if self.kind.columns == "none":
            return self.kind.name
        cols = ", ".join(format_column(c, feature_names) for c in self._columns)
        return f"{self.kind.name}({cols})"

    def _rebuild(self, operands):
        return self

    def sum_of_products(self) -> tuple[Expr, ...]:
        return (self,)

    @property
    def n_terms(self) -> int:
        return 1

    @property
    def max_factors(self) -> int:
        return 1

    def map_leaves(self, function: Callable[[Base], Expr]) -> Expr:
        return function(self)


class _Compound(Expr):
    __slots__ = ("_operands",)
    _tag = None

    def __init__(self, *operands):
        # Construction happens in __new__ (which canonicalises); nothing to do.
        pass

    @classmethod
    def _make(cls, operands):
        self = object.__new__(cls)
        self._operands = tuple(operands)
        self._set_key((cls._tag, len(operands), tuple(op._key for op in operands)))
        return self

    @property
    def operands(self) -> tuple[Expr, ...]:
        return self._operands

    def __reduce__(self):
        return (_make_compound, (type(self).__name__, self._operands))

    def map_leaves(self, function: Callable[[Base], Expr]) -> Expr:
        return self._rebuild([op.map_leaves(function) for op in self._operands])


class Sum(_Compound):
    """Sum of two or more expressions. ``Sum(a, b, ...)`` returns ``add(a, b, ...)``."""

    __slots__ = ()
    _tag = 2

    def __new__(cls, *operands):
        return add(*operands)

    def to_string(self, feature_names: Sequence[str] | None = None) -> str:
        return " + ".join(op.to_string(feature_names) for op in self._operands)

    def _rebuild(self, operands):
        return add(*operands)

    def terms(self) -> tuple[Expr, ...]:
        return self._operands

    def sum_of_products(self) -> tuple[Expr, ...]:
        return tuple(t for op in self._operands for t in op.sum_of_products())

    @property
    def n_terms(self) -> int:
        return sum(op.n_terms for op in self._operands)

    @property
    def max_factors(self) -> int:
        return max(op.max_factors for op in self._operands)


class Product(_Compound):
    """Product of two or more expressions. ``Product(a, b, ...)`` returns ``multiply(a, b, ...)``."""

    __slots__ = ()
    _tag = 1

    def __new__(cls, *operands):
        return multiply(*operands)

    def to_string(self, feature_names: Sequence[str] | None = None) -> str:
        parts = []
        for op in self._operands:
            text = op.to_string(feature_names)
            parts.append(f"({text})" if isinstance(op, Sum) else text)
        return " * ".join(parts)

    def _rebuild(self, operands):
        return multiply(*operands)

    def sum_of_products(self) -> tuple[Expr, ...]:
        terms = [()]
        for op in self._operands:
            terms = [t + (s,) for t in terms for s in op.sum_of_products()]
        return tuple(multiply(*t) for t in terms)

    @property
    def n_terms(self) -> int:
        return math.prod(op.n_terms for op in self._operands)

    @property
    def max_factors(self) -> int:
        if not any(isinstance(op, Sum) for op in self._operands):
            return sum(op.max_factors for op in self._operands)
        # distributed, the canonical form merges factors (SE × SE = SE, C × K = K): count the terms' own
        return max(term.max_factors for term in self.sum_of_products())

    @property
    def scale_keeper(self) -> int:
        """Index of the operand whose scale stays free (see ``free_amplitudes``)."""
        return _scale_keeper(self._operands)


class Change(Expr):
    """A changepoint (``CP``) or change window (``CW``) between two structures on one column.

    ``CP(c, A, B)``: A before a location on column c, B after it, with a
    smooth switch; ``CW(c, A, B)``: A outside an interval of column c, B
    inside it (Lloyd et al. 2014). ``CP(c, A, C)`` switches A off (to a
    constant level). The kernels are
    :class:`~skgpsearch.kernels.ChangePoint` and
    :class:`~skgpsearch.kernels.ChangeWindow`.

    Parameters
    ----------
    operator : {"CP", "CW"}
    column : int
        The column the change happens on (time, for a series).
    first, second : Expr
        Before / after the change (CP), outside / inside the window (CW).
    params : mapping, optional
        Values of the operator's own hyperparameters (``location``,
        ``width``, and ``duration`` for CW). Ignored by equality.

    Examples
    --------
    >>> from skgpsearch.grammar import Base, Change
    >>> print(Change("CP", 0, Base("SE", 0), Base("SE", 0) * Base("PER", 0)))
    CP(0, SE(0), SE(0) * PER(0))
    """

    __slots__ = ("operator", "column", "_operands", "_params")
    _tag = 3

    def __init__(
        self,
        operator: str,
        column: int,
        first: Expr,
        second: Expr,
        params: Mapping[str, float | None] | None = None,
    ) -> None:
        name = operator.upper() if isinstance(operator, str) else operator
        if name not in CHANGE_OPERATORS:
            raise ValueError(f"Unknown change operator {operator!r}; known are: {', '.join(CHANGE_OPERATORS)}.")
        if isinstance(column, bool) or not isinstance(column, numbers.Integral) or column < 0:
            raise ValueError(f"The column of {name} must be a non-negative integer, got {column!r}.")
        for operand in (first, second):
            if not isinstance(operand, Expr):
                raise ValueError(f"{name} operands must be kernel-structure expressions, got {type(operand).__name__}.")
        self.operator = name
        self.column = int(column)
        self._operands = (first, second)
        self._params = _validate_change_params(name, params)
        self._set_key((self._tag, name, self.column, first._key, second._key))

    def __reduce__(self):
        return (Change, (self.operator, self.column, *self._operands, dict(self._params)))

    @property
    def name(self) -> str:
        """Operator name, ``"CP"`` or ``"CW"``."""
        return self.operator

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The operator's own hyperparameters, in theta order."""
        return CHANGE_OPERATORS[self.operator][0]

    @property
    def operands(self) -> tuple[Expr, ...]:
        return self._operands

    @property
    def params(self) -> dict[str, float]:
        """Values of the operator's own hyperparameters carried by this node (a new dict)."""
        return dict(self._params)

    def with_params(self, params: Mapping[str, float | None] | None) -> Change:
        """The same node carrying ``params`` for its own hyperparameters (replacing any)."""
        return Change(self.operator, self.column, *self._operands, params)

    def to_string(self, feature_names: Sequence[str] | None = None) -> str:
        first, second = (op.to_string(feature_names) for op in self._operands)
        return f"{self.operator}({format_column(self.column, feature_names)}, {first}, {second})"

    def _rebuild(self, operands):
        return Change(self.operator, self.column, *operands, dict(self._params))

    def sum_of_products(self) -> tuple[Expr, ...]:
        # the switch multiplies every term of each side by a different function: one term
        return (self,)

    @property
    def n_terms(self) -> int:
        return 1

    @property
    def max_factors(self) -> int:
        return max(op.max_factors for op in self._operands)

    def map_leaves(self, function: Callable[[Base], Expr]) -> Expr:
        return self._rebuild([op.map_leaves(function) for op in self._operands])


def _make_compound(type_name, operands):
    return {"Sum": Sum, "Product": Product}[type_name]._make(operands)


# -- validation -----------------------------------------------------------------


def _validate_columns(kind, columns):
    if isinstance(columns, numbers.Integral) and not isinstance(columns, bool):
        columns = (columns,)
    try:
        columns = tuple(columns)
    except TypeError:
        raise ValueError(
            f"Columns of {kind.name} must be an int or a sequence of ints, got {columns!r}."
        ) from None
    for c in columns:
        if isinstance(c, bool) or not isinstance(c, numbers.Integral):
            raise ValueError(f"Column indices must be integers, got {c!r} in {kind.name}.")
        if int(c) < 0:
            raise ValueError(f"Column indices must be >= 0, got {c} in {kind.name}.")
    columns = tuple(sorted({int(c) for c in columns}))
    if kind.columns == "none" and columns:
        raise ValueError(
            f"{kind.name} ({kind.long_name}) does not depend on input columns; "
            f"write {kind.name} without columns."
        )
    if kind.columns == "one" and len(columns) != 1:
        raise ValueError(
            f"{kind.name} ({kind.long_name}) acts on exactly one column, got "
            f"{len(columns)}; use a sum or product of {kind.name} kernels for several "
            "columns (a periodic kernel on a Euclidean distance over several "
            "columns is not positive semi-definite)."
        )
    if kind.columns == "any" and not columns:
        raise ValueError(f"{kind.name} ({kind.long_name}) needs at least one column.")
    return columns


def _validate_params(kind, columns, params):
    if not params:
        return ()
    if not isinstance(params, Mapping):
        raise ValueError(f"params of {kind.name} must be a mapping, got {type(params).__name__}.")
    out = []
    for name, value in params.items():
        if name not in kind.parameters:
            raise ValueError(
                f"{kind.name} has no hyperparameter {name!r}; it has "
                f"{', '.join(kind.parameters)}."
            )
        if value is None:
            continue
        if name in kind.per_column_parameters:
            values = tuple(float(v) for v in _as_tuple(value))
            if len(values) == 1:
                values = values * len(columns)
            if len(values) != len(columns):
                raise ValueError(
                    f"{kind.name}.{name} needs one value per column ({len(columns)}), "
                    f"got {len(values)}."
                )
            out.append((name, values))
        else:
            out.append((name, float(value)))
    order = {p: i for i, p in enumerate(kind.parameters)}
    return tuple(sorted(out, key=lambda item: order[item[0]]))


def _validate_change_params(operator, params):
    if not params:
        return ()
    if not isinstance(params, Mapping):
        raise ValueError(f"params of {operator} must be a mapping, got {type(params).__name__}.")
    names = CHANGE_OPERATORS[operator][0]
    out = []
    for name, value in params.items():
        if name not in names:
            raise ValueError(f"{operator} has no hyperparameter {name!r}; it has {', '.join(names)}.")
        if value is not None:
            out.append((name, float(value)))
    return tuple(sorted(out, key=lambda item: names.index(item[0])))


def _without_values(node):
    if isinstance(node, Base):
        return Base(node.kind.name, node.columns)
    operands = [_without_values(op) for op in node.operands]
    if isinstance(node, Change):
        return Change(node.operator, node.column, *operands)
    return node._rebuild(operands)


def _as_tuple(value):
    try:
        return tuple(value)
    except TypeError:
        return (value,)


# -- canonicalisation -----------------------------------------------------------


def _check_operands(exprs, op):
    if not exprs:
        raise ValueError(f"{op} needs at least one operand.")
    for e in exprs:
        if not isinstance(e, Expr):
            raise ValueError(
                f"{op} operands must be kernel-structure expressions, got {type(e).__name__}."
            )


def add(*exprs: Expr) -> Expr:
    """Canonical sum of expressions (see the canonical-form rules)."""
    _check_operands(exprs, "add")
    operands = []
    for e in exprs:
        operands.extend(e.operands if isinstance(e, Sum) else (e,))
    for kind in _repeated_sum_kinds(operands):
        operands = _merge_kind_terms(operands, kind)
    operands.sort(key=lambda op: op._key)
    if len(operands) == 1:
        return operands[0]
    return Sum._make(operands)


def multiply(*exprs: Expr) -> Expr:
    """Canonical product of expressions (see the canonical-form rules)."""
    _check_operands(exprs, "multiply")
    operands = []
    for e in exprs:
        operands.extend(e.operands if isinstance(e, Product) else (e,))
    operands = _merge_closed_factors(operands)
    noise = [op.kind for op in operands if isinstance(op, Base) and op.kind.white_noise]
    if noise:
        operands = _absorb_into_white_noise(operands, noise[0])
    operands = _absorb_constants(operands)
    operands.sort(key=lambda op: op._key)
    if len(operands) == 1:
        return operands[0]
    return Product._make(operands)


def _is_constant(expr):
    return isinstance(expr, Base) and expr.kind.constant


def _repeated_sum_kinds(operands):
    """Kinds closed under sums (C, WN) that occur more than once among ``operands``."""
    kinds = [op.kind for op in operands if isinstance(op, Base) and op.kind.closed_under_sum]
    return [kind for kind in dict.fromkeys(kinds) if kinds.count(kind) > 1]


def _merge_kind_terms(operands, kind):
    """C + C = C and WN + WN = WN (every kind closed under sums): the variances add."""
    same = [op for op in operands if isinstance(op, Base) and op.kind == kind]
    rest = [op for op in operands if not (isinstance(op, Base) and op.kind == kind)]
    variances = [dict(op._params).get("variance") for op in same]
    params = None if None in variances else {"variance": sum(variances)}
    return rest + [Base(kind.name, (), params)]


def _merge_closed_factors(operands):
    """SE * SE = SE and M12 * M12 = M12 on the same columns."""
    groups = {}
    rest = []
    for op in operands:
        if isinstance(op, Base) and op.kind.closed_under_product:
            groups.setdefault((op.kind.name, op.columns), []).append(op)
        else:
            rest.append(op)
    merged = []
    for (name, columns), group in groups.items():
        if len(group) == 1:
            merged.append(group[0])
            continue
        values = [dict(op._params) for op in group]
        params = None
        if all("lengthscale" in v and "variance" in v for v in values):
            # SE: inverse squared lengthscales add; M12: inverse lengthscales add.
            power = group[0].kind.product_power
            inv = sum(v["lengthscale"] ** -power for v in values)
            params = {
                "variance": math.prod(v["variance"] for v in values),
                "lengthscale": inv ** (-1.0 / power),
            }
        merged.append(Base(name, columns, params))
    return rest + merged


def _constant_diagonal(expr):
    if isinstance(expr, Base):
        return expr.kind.constant_diagonal
    if isinstance(expr, Change):
        return False  # s(x)² k1(x, x) + (1 − s(x))² k2(x, x) varies with x
    return all(_constant_diagonal(op) for op in expr.operands)


def _diagonal_value(expr):
    """k(x, x) of a constant-diagonal expression, or None when values are missing."""
    if isinstance(expr, Base):
        return dict(expr._params).get("variance")
    values = [_diagonal_value(op) for op in expr.operands]
    if any(v is None for v in values):
        return None
    return sum(values) if isinstance(expr, Sum) else math.prod(values)


def _absorb_into_white_noise(operands, noise):
    """WN * K = WN * diag(K): every constant-diagonal factor joins the white noise (of kind ``noise``)."""
    absorbed = [op for op in operands if _constant_diagonal(op)]
    rest = [op for op in operands if not _constant_diagonal(op)]
    values = [_diagonal_value(op) for op in absorbed]
    params = None if any(v is None for v in values) else {"variance": math.prod(values)}
    return rest + [Base(noise.name, (), params)]


def _scale_keeper(operands):
    # a sum or change node carries several amplitudes: it keeps the product's scale
    for i, op in enumerate(operands):
        if isinstance(op, (Sum, Change)):
            return i
    for i, op in enumerate(operands):
        if isinstance(op, Base) and op.kind.has_amplitude:
            return i
    return 0


def _scale(expr, factor):
    """The same structure with its overall scale multiplied by ``factor`` (values only)."""
    if isinstance(expr, Base):
        params = dict(expr._params)
        if "variance" not in params:
            return expr
        params["variance"] *= factor
        return expr.with_params(params)
    if isinstance(expr, Sum):
        return Sum._make([_scale(op, factor) for op in expr.operands])
    if isinstance(expr, Change):
        return expr._rebuild([_scale(op, factor) for op in expr.operands])
    ops = list(expr.operands)
    k = _scale_keeper(ops)
    ops[k] = _scale(ops[k], factor)
    return Product._make(ops)


def _absorb_constants(operands):
    """C * K = K with K's amplitude multiplied by the constant; C * C = C."""
    constants = [op for op in operands if _is_constant(op)]
    if not constants:
        return operands
    rest = [op for op in operands if not _is_constant(op)]
    values = [dict(op._params).get("variance") for op in constants]
    known = all(v is not None for v in values)
    factor = math.prod(values) if known else None
    if not rest:
        return [Base(constants[0].kind.name, (), {"variance": factor} if known else None)]
    if known:
        rest.sort(key=lambda op: op._key)
        k = _scale_keeper(rest)
        rest[k] = _scale(rest[k], factor)
    return rest


def _amplitude_flags(node, free, out):
    if isinstance(node, Base):
        out.append(free and node.kind.has_amplitude)
    elif isinstance(node, (Sum, Change)):
        # without a free scale, the first operand's is fixed and the others' stay free
        for i, op in enumerate(node.operands):
            _amplitude_flags(op, free or i > 0, out)
    else:
        keeper = _scale_keeper(node.operands)
        for i, op in enumerate(node.operands):
            _amplitude_flags(op, free and i == keeper, out)
