"""Conversion between kernel-structure expressions and scikit-learn kernels."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.gaussian_process import kernels as sk
from sklearn.gaussian_process.kernels import Kernel

from ..grammar import Base, Change, Expr, Product, Sum, add, multiply
from ..grammar._expr import _scale, _scale_keeper
from ._change import ChangePoint, ChangeWindow
from ._columns import ActiveColumns
from ._core import CatalogueKernel
from ._operators import KernelProduct, KernelSum
from ._defaults import DataSummary, change_defaults, default_hyperparameters, unit_amplitude
from ._specs import _value, get_spec, read_leaf, sklearn_readers

_CHANGE_CLASSES = {"CP": ChangePoint, "CW": ChangeWindow}

__all__ = ["to_kernel", "from_kernel", "inherit_values", "structure_theta"]


def to_kernel(
    expr: Expr,
    X: ArrayLike | None = None,
    y: ArrayLike | None = None,
    *,
    summary: DataSummary | None = None,
    parent: Expr | Kernel | None = None,
) -> Kernel:
    """Build the scikit-learn kernel of a structure.

    Base kernels become catalogue kernels wrapped in :class:`ActiveColumns`
    (``C`` and ``WN`` act on no column and are not wrapped); sums and products
    become scikit-learn ``Sum`` and ``Product`` kernels. In every product all
    amplitudes but one are fixed (see ``Expr.free_amplitudes``), so that
    ``kernel.n_dims == expr.n_hyperparameters``.

    Initial values: hyperparameter values carried by the expression's base
    kernels (e.g. inherited from a fitted parent) where present, else the
    data-aware defaults of :func:`default_hyperparameters`, clipped into the
    data-aware bounds. Scales carried by factors whose amplitude is fixed are
    moved to the factor that keeps it, so the covariance is unchanged.

    Parameters
    ----------
    expr : Expr
        The structure (possibly carrying hyperparameter values).
    X : array-like of shape (n_samples, n_features), optional
        Training inputs for the defaults; without it (and without ``summary``)
        unit-scale defaults for standardised data are used.
    y : array-like of shape (n_samples,), optional
        Training targets (their variance scales the amplitudes).
    summary : DataSummary, optional
        Precomputed statistics (instead of ``X``, ``y``).
    parent : Expr or sklearn Kernel, optional
        A fitted parent structure whose hyperparameter values the base
        kernels shared with ``expr`` inherit (see :func:`inherit_values`).

    Returns
    -------
    kernel : sklearn.gaussian_process.kernels.Kernel

    Examples
    --------
    >>> from skgpsearch.grammar import parse
    >>> from skgpsearch.kernels import to_kernel
    >>> k = to_kernel(parse("SE(0) * PER(0) + LIN(1)"))
    >>> k.n_dims == parse("SE(0) * PER(0) + LIN(1)").n_hyperparameters == 6
    True
    """
    if not isinstance(expr, Expr):
        raise ValueError(f"to_kernel needs a kernel-structure expression, got {type(expr).__name__}.")
    if summary is None:
        if X is not None:
            summary = DataSummary.from_data(X, y)
        else:
            summary = DataSummary.unit(max(expr.columns, default=-1) + 1)
    if parent is not None:
        expr = inherit_values(expr, parent)
    expr = _normalise_scales(expr, summary)
    flags = iter(expr.free_amplitudes())
    return _build(expr, summary, flags)


def _build(node, summary, flags):
    if isinstance(node, Base):
        return _base_kernel(node, summary, next(flags))
    kernels = [_build(op, summary, flags) for op in node.operands]
    if isinstance(node, Change):
        return _change_kernel(node, kernels, summary)
    combine = KernelSum if isinstance(node, Sum) else KernelProduct
    kernel = kernels[0]
    for other in kernels[1:]:
        kernel = combine(kernel, other)
    return kernel


def structure_theta(expr: Expr, summary: DataSummary) -> np.ndarray:
    """``to_kernel(expr, summary=summary).theta``, without building the kernel.

    The start pools turn dozens of start structures per candidate into
    parameter vectors; building a scikit-learn kernel for each (and reading
    its ``theta`` through ``Hyperparameter`` objects) cost as much as
    evaluating the starts. Same values, same order: a sum or product lists
    its operands' entries in turn, a change operator its two operands' and
    then its own (:class:`~skgpsearch.kernels.ChangePoint`), a base kernel
    its free hyperparameters in its class's order, logged unless unconstrained.
    """
    expr = _normalise_scales(expr, summary)
    parts = []
    _collect_theta(expr, summary, iter(expr.free_amplitudes()), parts)
    return np.concatenate(parts) if parts else np.empty(0)


def _collect_theta(node, summary, flags, parts):
    if isinstance(node, Base):
        parts.append(_base_theta(node, summary, next(flags)))
        return
    for op in node.operands:
        _collect_theta(op, summary, flags, parts)
    if isinstance(node, Change):
        kernel_class = _CHANGE_CLASSES[node.operator]
        values = {name: value for name, (value, _) in _change_arguments(node, summary).items()}
        parts.append(np.array([values[name] if name in kernel_class._unconstrained else np.log(values[name])
                               for name in kernel_class._own_names], dtype=float))


def _base_theta(leaf, summary, amplitude_free):
    kernel_class = get_spec(leaf.kind).kernel_class
    kwargs = _base_arguments(leaf, summary, amplitude_free)
    if any(name not in kwargs for name in kernel_class._hyperparameter_names):
        return kernel_class(**kwargs).theta  # a constructor default the rules do not set
    parts = []
    for name in kernel_class._hyperparameter_names:
        if isinstance(kwargs[name + "_bounds"], str):  # "fixed"
            continue
        value = np.atleast_1d(np.asarray(kwargs[name], dtype=float))
        parts.append(value if name in kernel_class._unconstrained else np.log(value))
    return np.concatenate(parts) if parts else np.empty(0)


def _base_kernel(leaf, summary, amplitude_free):
    kernel = get_spec(leaf.kind).kernel_class(**_base_arguments(leaf, summary, amplitude_free))
    if leaf.kind.columns == "none":
        return kernel
    return ActiveColumns(kernel, list(leaf.columns))


def _base_arguments(leaf, summary, amplitude_free):
    """The catalogue kernel's constructor arguments: carried values or defaults, clipped into the bounds."""
    name, columns = leaf.kind.name, leaf.columns
    carried = leaf.params
    kwargs = {}
    for param, init, low, high, bounds in _leaf_defaults(leaf.kind, columns, summary):
        value = carried.get(param, init)
        if isinstance(bounds, tuple):
            # a scalar hyperparameter: clipped as a float, as np.clip would (a NaN stays NaN)
            kwargs[param] = min(max(float(np.ravel(value)[0]), low), high)
        else:
            kwargs[param] = np.clip(np.asarray(value, dtype=float), low, high)
        kwargs[param + "_bounds"] = bounds
    if leaf.kind.has_amplitude and not amplitude_free:
        kwargs["variance"] = unit_amplitude(name, columns, summary)
        kwargs["variance_bounds"] = "fixed"
    return kwargs


#: (id of a summary, kind, columns) -> (the summary, its entries): a search turns each leaf of thousands of
#: start structures into constructor arguments, and the rules behind the defaults took about a twentieth of
#: a search's time (a one-vs-rest digits problem, 500 rows x 64 columns). The summary is kept with its entries
#: so that its id cannot be reused while they are cached.
_LEAF_DEFAULTS: dict = {}
LEAF_DEFAULTS_CACHE_SIZE = 4096


def _leaf_defaults(kind, columns, summary):
    """``(param, init, low, high, bounds)`` of each hyperparameter of a leaf: ``bounds`` as the constructor
    takes them, an (m, 2) array for a per-column hyperparameter on several columns, else a float pair (then
    ``low`` and ``high`` are those floats). Cached per summary; the entries are never modified."""
    key = (id(summary), kind.name, columns)
    entry = _LEAF_DEFAULTS.get(key)
    if entry is not None and entry[0] is summary:
        return entry[1]
    rows = []
    for param, (init, bounds) in default_hyperparameters(kind.name, columns, summary).items():
        low, high = (np.asarray(b, dtype=float) for b in bounds)
        if param in kind.per_column_parameters and len(columns) > 1:
            pair = np.column_stack([low, high])
            pair.setflags(write=False)
            rows.append((param, init, low, high, pair))
        else:
            low, high = float(np.ravel(low)[0]), float(np.ravel(high)[0])
            rows.append((param, init, low, high, (low, high)))
    if len(_LEAF_DEFAULTS) >= LEAF_DEFAULTS_CACHE_SIZE:
        _LEAF_DEFAULTS.clear()
    _LEAF_DEFAULTS[key] = (summary, rows)
    return rows


def _change_kernel(node, kernels, summary):
    kwargs = {}
    for name, (value, bounds) in _change_arguments(node, summary).items():
        kwargs[name], kwargs[name + "_bounds"] = value, bounds
    return _CHANGE_CLASSES[node.operator](kernels[0], kernels[1], column=node.column, **kwargs)


def _change_arguments(node, summary):
    """``{name: (value, bounds)}`` of a change operator's own hyperparameters (carried or default, clipped)."""
    carried = node.params
    return {name: (float(np.clip(carried.get(name, init), low, high)), (float(low), float(high)))
            for name, (init, (low, high)) in change_defaults(node.operator, node.column, summary).items()}


def _normalise_scales(expr, summary):
    """Move the scale of fixed-amplitude factors to the factor that keeps it.

    The covariance is unchanged: in a product with factors F_i and keeper F_k,
    each non-keeper F_i = s_i * F_i' with F_i' at unit amplitude, and the
    keeper is multiplied by the product of the s_i.
    """
    if isinstance(expr, Base):
        return expr
    ops = [_normalise_scales(op, summary) for op in expr.operands]
    if isinstance(expr, Sum):
        return Sum._make(ops)
    if isinstance(expr, Change):
        return expr._rebuild(ops)
    keeper = _scale_keeper(ops)
    total, found = 1.0, False
    for i, op in enumerate(ops):
        if i != keeper:
            s, ops[i] = _extract_scale(op, summary)
            if s is not None:
                total *= s
                found = True
    if found:
        ops[keeper] = _scale_or_set(ops[keeper], total, summary)
    return Product._make(ops)


def _extract_scale(node, summary):
    """Write node = s * node' with the removed-scale leaf of node' at unit amplitude."""
    if isinstance(node, Base):
        params = node.params
        if "variance" not in params:
            return None, node
        unit = unit_amplitude(node.kind.name, node.columns, summary)
        s = params["variance"] / unit
        params["variance"] = unit
        return s, node.with_params(params)
    ops = list(node.operands)
    if isinstance(node, (Sum, Change)):
        s, ops[0] = _extract_scale(ops[0], summary)
        if s is not None and s > 0:
            ops[1:] = [_scale(op, 1.0 / s) for op in ops[1:]]
        return s, (Sum._make(ops) if isinstance(node, Sum) else node._rebuild(ops))
    k = _scale_keeper(ops)
    s, ops[k] = _extract_scale(ops[k], summary)
    return s, Product._make(ops)


def _scale_or_set(node, factor, summary):
    """Scale a keeper; a keeper base kernel without a value starts at unit amplitude times factor."""
    if isinstance(node, Base) and "variance" not in node.params and node.kind.has_amplitude:
        params = node.params
        params["variance"] = factor * unit_amplitude(node.kind.name, node.columns, summary)
        return node.with_params(params)
    return _scale(node, factor)


def inherit_values(expr: Expr, parent: Expr | Kernel) -> Expr:
    """Copy hyperparameter values from a parent's base kernels to matching ones of ``expr``.

    Base kernels match when they have the same kind and columns; each of the
    parent's base kernels is used at most once, in canonical order. Base
    kernels of ``expr`` that already carry values keep them.

    Parameters
    ----------
    expr : Expr
    parent : Expr carrying values, or a fitted sklearn Kernel (read with :func:`from_kernel`).

    Returns
    -------
    Expr
        ``expr`` (equal structure) with values where a match was found.
    """
    if not isinstance(parent, Expr):
        parent = from_kernel(parent, n_features=max(expr.columns, default=-1) + 1)
    pool = {}
    for leaf in parent.leaves:
        if leaf.params:
            pool.setdefault((leaf.kind.name, leaf.columns), []).append(leaf.params)

    def take(leaf):
        if leaf.params:
            return leaf
        queue = pool.get((leaf.kind.name, leaf.columns))
        return leaf.with_params(queue.pop(0)) if queue else leaf

    changes = {}
    for node in parent.changes:
        if node.params:
            changes.setdefault((node.operator, node.column), []).append(node.params)
    return _inherit_change_values(expr.map_leaves(take), changes)


def _inherit_change_values(node, changes):
    """Change nodes without values take those of the parent's change nodes of the same operator and column."""
    if isinstance(node, Base):
        return node
    operands = [_inherit_change_values(op, changes) for op in node.operands]
    if not isinstance(node, Change):
        return node._rebuild(operands)
    params = node.params
    queue = changes.get((node.operator, node.column))
    if not params and queue:
        params = queue.pop(0)
    return Change(node.operator, node.column, *operands, params)


def from_kernel(kernel: Kernel, n_features: int | None = None) -> Expr:
    """Read a scikit-learn kernel back into a structure carrying its hyperparameter values.

    Understands the catalogue kernels, :class:`ActiveColumns`, scikit-learn's
    ``Sum`` and ``Product``, and the scikit-learn kernels with an exact
    counterpart (the readers of the kinds' specs): ``RBF`` (an anisotropic
    one becomes a product of per-column SE kernels), ``Matern`` with nu in
    {0.5, 1.5, 2.5}, ``RationalQuadratic``, ``ExpSineSquared``,
    ``ConstantKernel``, ``WhiteKernel`` and ``DotProduct`` (= C + LIN with
    zero offset).

    Parameters
    ----------
    kernel : sklearn Kernel
    n_features : int, optional
        Number of input columns; needed when a column-dependent kernel is not
        wrapped in :class:`ActiveColumns` (it then acts on all columns).

    Returns
    -------
    Expr
        The canonical structure; each base kernel's ``params`` holds its values.

    Raises
    ------
    ValueError
        For kernels without a counterpart in the grammar (the message names it).
    """
    columns = None if n_features is None else tuple(range(n_features))
    return _read(kernel, columns)


def _read(kernel, columns):
    if isinstance(kernel, ActiveColumns):
        cols = tuple(int(c) for c in kernel._column_indices())
        if columns is not None:
            cols = tuple(columns[c] for c in cols)
        return _read(kernel.kernel, cols)
    if isinstance(kernel, sk.Sum):
        return add(_read(kernel.k1, columns), _read(kernel.k2, columns))
    if isinstance(kernel, sk.Product):
        return multiply(_read(kernel.k1, columns), _read(kernel.k2, columns))
    if isinstance(kernel, (ChangePoint, ChangeWindow)):
        operator = "CP" if isinstance(kernel, ChangePoint) else "CW"
        column = int(kernel.column) if columns is None else columns[int(kernel.column)]
        params = {name: float(getattr(kernel, name)) for name in kernel._own_names}
        return Change(operator, column, _read(kernel.k1, columns), _read(kernel.k2, columns), params)
    if isinstance(kernel, CatalogueKernel):
        params = {name: _value(getattr(kernel, name)) for name in kernel._hyperparameter_names}
        return read_leaf(kernel.kind, columns, params, kernel)
    readers = sklearn_readers(type(kernel))
    for reader in readers:
        expr = reader.read(kernel, columns)
        if expr is not None:
            return expr
    if readers:
        accepted = [reader.accepts for reader in readers]
        alternatives = accepted[0] if len(accepted) == 1 else ", ".join(accepted[:-1]) + " or " + accepted[-1]
        raise ValueError(f"{kernel!r} has no counterpart in the grammar (only {alternatives}).")
    raise ValueError(
        f"The kernel {kernel!r} ({type(kernel).__name__}) has no counterpart in the kernel grammar."
    )
