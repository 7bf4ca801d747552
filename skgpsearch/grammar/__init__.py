"""Kernel-structure grammar: expressions as plain data, parsing, expansion operators.

This subpackage is independent of fitting and of scikit-learn objects; the
numerical kernels and the conversion to and from scikit-learn kernels are in
:mod:`skgpsearch.kernels`.
"""

from __future__ import annotations

from ._expr import CHANGE_OPERATORS, Base, Change, Expr, Product, Sum, add, multiply
from ._grammars import (
    SERIES_CHANGE_OPERATORS,
    CompositionalGrammar,
    FixedStructureGrammar,
    Grammar,
    SumOfProductsGrammar,
    default_base_kernels,
    default_grammar,
    get_grammar,
    grammar_names,
    random_walk_with_drift,
)
from ._kinds import KINDS, KernelKind, get_kind, kind_names
from ._parse import parse

__all__ = [
    "Base",
    "CHANGE_OPERATORS",
    "Change",
    "CompositionalGrammar",
    "Expr",
    "FixedStructureGrammar",
    "Grammar",
    "KINDS",
    "KernelKind",
    "Product",
    "SERIES_CHANGE_OPERATORS",
    "Sum",
    "SumOfProductsGrammar",
    "add",
    "default_base_kernels",
    "default_grammar",
    "get_grammar",
    "grammar_names",
    "get_kind",
    "kind_names",
    "multiply",
    "parse",
    "random_walk_with_drift",
]
