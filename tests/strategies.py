"""Hypothesis strategies for kernel-structure expressions (shared by the grammar tests)."""

import random

from hypothesis import strategies as st

from skgpsearch.grammar import KINDS, Base, Sum, add, multiply

N_COLUMNS = 4


@st.composite
def bases(draw, kinds=tuple(KINDS)):
    kind = KINDS[draw(st.sampled_from(kinds))]
    if kind.columns == "none":
        return Base(kind.name)
    if kind.columns == "one":
        return Base(kind.name, draw(st.integers(0, N_COLUMNS - 1)))
    columns = draw(st.lists(st.integers(0, N_COLUMNS - 1), min_size=1, max_size=2, unique=True))
    return Base(kind.name, columns)


def expressions(kinds=tuple(KINDS), max_leaves=8):
    return st.recursive(
        bases(kinds),
        lambda children: st.one_of(
            st.lists(children, min_size=2, max_size=3).map(lambda ops: add(*ops)),
            st.lists(children, min_size=2, max_size=3).map(lambda ops: multiply(*ops)),
        ),
        max_leaves=max_leaves,
    )


def scrambled_text(expr, rnd):
    """A non-canonical text for ``expr``: operands shuffled, regrouped, names re-cased."""
    if isinstance(expr, Base):
        name = rnd.choice([expr.name, expr.name.lower()])
        if not expr.columns:
            return name + rnd.choice(["", "()"])
        cols = list(expr.columns)
        rnd.shuffle(cols)
        return f"{name}( {' ,'.join(map(str, cols))})"
    ops = [scrambled_text(op, rnd) for op in expr.operands]
    rnd.shuffle(ops)
    symbol = " + " if isinstance(expr, Sum) else rnd.choice([" * ", "*", " × "])
    wrap = [f"({o})" for o in ops]
    # regroup: nest a random prefix in parentheses (associativity)
    if len(wrap) > 2 and rnd.random() < 0.5:
        k = rnd.randint(2, len(wrap) - 1)
        wrap = [f"({symbol.join(wrap[:k])})"] + wrap[k:]
    return symbol.join(wrap)


def rng(seed):
    return random.Random(seed)


def fd_gradient(kernel, X, h=1e-5):
    """Central finite differences of K(X) with respect to kernel.theta, shape (n, n, n_dims)."""
    import numpy as np

    theta = kernel.theta.copy()
    grads = []
    for i in range(theta.size):
        step = np.zeros_like(theta)
        step[i] = h
        grads.append((kernel.clone_with_theta(theta + step)(X) - kernel.clone_with_theta(theta - step)(X)) / (2 * h))
    if not grads:
        n = np.asarray(X).shape[0]
        return np.empty((n, n, 0))
    return np.stack(grads, axis=2)
