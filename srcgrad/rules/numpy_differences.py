"""Adjoint rule of ``np.diff``, with its ``prepend=``/``append=`` ends (joined to the
array along ``axis`` first): each part of the joined array gets its share of the
transposed differences.
"""

import builtins

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import adjoint
from srcgrad.runtime.arrays import namespace, shape_tuple

xp = None  # placeholder: the array namespace, bound in generated code


@adjoint(np.diff)
def diff(dy, y, a, n=1, axis=-1, prepend=None, append=None):
    """``prepend``/``append`` (joined to ``a`` along ``axis`` first) get their part too."""
    return (rt.diff_vjp(dy, a, n, axis, prepend, append), None, None,
            rt.diff_end_vjp(dy, a, n, axis, prepend, append, 0),
            rt.diff_end_vjp(dy, a, n, axis, prepend, append, 1))


def _diff_parts(xp, a, axis, prepend, append):
    """``a``, ``prepend`` and ``append`` as ``diff`` joins them: (the sizes along ``axis``
    of the three parts, the joined shape, the axis)."""
    a = xp.asarray(a)
    ax = axis % a.ndim

    def along(end):
        if end is None:
            return 0
        end = xp.asarray(end)
        return end.shape[ax] if end.ndim else 1

    sizes = (along(prepend), a.shape[ax], along(append))
    shape = list(a.shape)
    shape[ax] = builtins.sum(sizes)
    return sizes, tuple(shape), ax


def _diff_full_vjp(xp, dy, ax, n):
    g = xp.asarray(dy)
    for _ in range(n):
        pad = [(0, 0)] * g.ndim
        pad[ax] = (1, 0)
        before = xp.pad(g, pad)
        pad[ax] = (0, 1)
        after = xp.pad(g, pad)
        g = before - after
    return g


@rt.helper
def diff_vjp(dy, a, n=1, axis=-1, prepend=None, append=None):
    """Gradient of ``diff(a, n, axis, prepend=, append=)`` for ``a``."""
    xp = namespace(a, dy)
    g = xp.asarray(dy)
    if g.size == 0:   # no differences (n at least the length): nothing depends on ``a``
        return xp.zeros(shape_tuple(a), dtype=g.dtype)
    if prepend is None and append is None:
        return _diff_full_vjp(xp, g, axis % g.ndim, n).reshape(shape_tuple(a))
    sizes, _, ax = _diff_parts(xp, a, axis, prepend, append)
    g = _diff_full_vjp(xp, g, ax, n)
    return g[_along(g.ndim, ax, sizes[0], sizes[0] + sizes[1])]


def _along(ndim, ax, start, stop):
    """The index of entries ``start:stop`` along axis ``ax`` (a slice: lazy on Dask)."""
    index = [slice(None)] * ndim
    index[ax] = slice(start, stop)
    return tuple(index)


@rt.helper
def diff_end_vjp(dy, a, n, axis, prepend, append, end):
    """Gradient of ``diff``'s ``prepend`` (``end`` 0) or ``append`` (1), summed to its shape."""
    target = (prepend, append)[end]
    if target is None:
        return None
    xp = namespace(a, dy)
    if xp.asarray(dy).size == 0:
        return xp.zeros_like(xp.asarray(target), dtype=xp.asarray(dy).dtype) \
            if xp.asarray(target).ndim else 0.0
    sizes, _, ax = _diff_parts(xp, a, axis, prepend, append)
    g = _diff_full_vjp(xp, xp.asarray(dy), ax, n)
    start = 0 if end == 0 else sizes[0] + sizes[1]
    part = g[_along(g.ndim, ax, start, start + sizes[2 * end])]
    if not xp.asarray(target).ndim:
        return part.sum()
    return rt.unbroadcast(part, target)
