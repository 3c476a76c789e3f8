"""Numba forms of the helpers that move a gradient between shapes: ``unbroadcast`` (sum
over broadcast axes), ``unreduce`` and ``unreduce_like`` (spread a reduction's gradient
back over ``axis``), ``reduction_size``, and ``reshape`` (NumPy's, which copies an array
it cannot view: Numba's reshapes only contiguous arrays, and takes no ``order``).

Every form works on float arrays of any rank through a flat index over the kept axes
(``_kept_offset``): the values are NumPy's, sums to rounding (NumPy sums along the last
axis pairwise, these in index order). A shape NumPy would refuse raises ValueError at
run time, so that call runs the NumPy gradient. Importing this module needs numba.
"""

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

from srcgrad.jit.numba_types import (JIT_OPTIONS, is_number as _is_number,
                                    is_shape as _is_shape, ndim_of as _ndim_of, none as _none,
                                    refuse as _refuse)


def unbroadcast(g, x):
    """See srcgrad.runtime.unbroadcast."""


def unreduce(g, x, axis=None, keepdims=False):
    """See srcgrad.runtime.unreduce."""


def reduction_size(x, axis=None, at_least=0):
    """See srcgrad.runtime.reduction_size."""


def unreduce_like(value, x, axis=None, keepdims=False):
    """See srcgrad.runtime.unreduce_like."""


def reshape(a, shape):
    """``np.reshape(a, shape)`` (order C) of an array: a view of a C-contiguous one, else
    of a contiguous copy (NumPy copies where it cannot view)."""


def shape_tuple(x):
    """The shape of an array, or ``x`` itself where it is a shape."""


@overload(shape_tuple, jit_options=JIT_OPTIONS)
def _shape_tuple(x):
    if isinstance(x, types.Array):
        return lambda x: x.shape
    return lambda x: x


def axis_kind(axis):
    """"none", "int", "ints" (a tuple of ints), or None where it is none of those."""
    if _none(axis):
        return "none"
    if isinstance(axis, types.Integer) and not isinstance(axis, types.Boolean):
        return "int"
    if isinstance(axis, types.BaseTuple) and all(
            isinstance(t, types.Integer) and not isinstance(t, types.Boolean) for t in axis):
        return "ints"   # a tuple of ints (literal ones are a Tuple of several types)
    return None


def axis_count(axis, ndim):
    """How many axes ``axis`` (a Numba type) names: known when it is typed."""
    kind = axis_kind(axis)
    return ndim if kind == "none" else 1 if kind == "int" else len(axis)


def reduced_axes(axis, ndim):
    """A boolean array: which of ``ndim`` axes ``axis`` (None, an int or a tuple of ints,
    negative counting from the end) names; ValueError where NumPy's normalize_axis_tuple
    refuses (out of range, repeated)."""


@overload(reduced_axes, jit_options=JIT_OPTIONS)
def _reduced_axes(axis, ndim):
    kind = axis_kind(axis)
    if kind == "none":
        return lambda axis, ndim: np.ones(ndim, np.bool_)

    def mark(out, a, ndim):
        if a < -ndim or a >= ndim:
            raise ValueError("srcgrad jit: axis out of range")
        if a < 0:
            a += ndim
        if out[a]:
            raise ValueError("srcgrad jit: repeated axis")
        out[a] = True
    marked = njit(**JIT_OPTIONS)(mark)
    if kind == "int":
        def one(axis, ndim):
            out = np.zeros(ndim, np.bool_)
            marked(out, axis, ndim)
            return out
        return one
    if kind == "ints":   # unrolled: a tuple of literals is not iterable
        marks = "".join(f"    marked(out, axis[{k}], ndim)\n" for k in range(len(axis)))
        namespace = {"np": np, "marked": marked}
        exec(f"def many(axis, ndim):\n    out = np.zeros(ndim, np.bool_)\n{marks}"
             "    return out\n", namespace)
        return namespace["many"]
    _refuse("reduced_axes", axis)


@njit(**JIT_OPTIONS)
def kept_offset(idx, shape, reduced, start=0):
    """The flat C-order position of ``idx[start:]`` among the axes of ``shape`` not reduced."""
    off = 0
    for i in range(len(shape)):
        if not reduced[i]:
            off = off * shape[i] + idx[start + i]
    return off


def literal_flag(t):
    """True or False where ``t`` is a literal bool (or an omitted one), else None."""
    if isinstance(t, types.BooleanLiteral):
        return t.literal_value
    if isinstance(t, types.Omitted) and type(t.value) is bool:
        return t.value
    if t is False or t is True:
        return t
    return None


@njit(**JIT_OPTIONS)
def kept_size(shape, reduced):
    n = 1
    for i in range(len(shape)):
        if not reduced[i]:
            n *= shape[i]
    return n


def _float_array(t):
    return isinstance(t, types.Array) and isinstance(t.dtype, types.Float)


@overload(unbroadcast, jit_options=JIT_OPTIONS)
def _unbroadcast(g, x):
    if _is_number(g):
        return lambda g, x: g
    target = _ndim_of(x)
    if not isinstance(g, types.Array) or target is None:
        _refuse("unbroadcast", g, x)
    if target == 0:
        return lambda g, x: np.sum(g)   # summed down to a scalar's shape ()
    if target > g.ndim:
        return lambda g, x: g   # as the NumPy helper: broadcast later
    extra = g.ndim - target
    if not _float_array(g):
        if extra:
            _refuse("unbroadcast", g, x)

        def same(g, x):
            if g.shape != shape_tuple(x):
                raise ValueError("srcgrad jit: unbroadcast of another shape")
            return g
        return same

    if extra:
        return lambda g, x: _summed(g, shape_tuple(x), extra)

    def same_rank(g, x):
        shape = shape_tuple(x)
        if g.shape == shape:
            return g
        return _summed(g, shape, 0)
    return same_rank


@njit(**JIT_OPTIONS)
def _summed(g, shape, extra):
    """``g`` summed over its first ``extra`` axes and the axes where ``shape`` has 1."""
    gs = g.shape
    reduced = np.zeros(len(shape), np.bool_)
    for i in range(len(shape)):
        if shape[i] != gs[extra + i]:
            if shape[i] != 1:
                raise ValueError("srcgrad jit: unbroadcast of another shape")
            reduced[i] = True
    out = np.zeros(shape, g.dtype)
    flat = out.reshape(out.size)
    for idx in np.ndindex(gs):
        flat[kept_offset(idx, shape, reduced, extra)] += g[idx]
    return out


@overload(unreduce, jit_options=JIT_OPTIONS)
def _unreduce(g, x, axis=None, keepdims=False):
    # A full reduction's scalar gradient spread over x's shape (np.full: a writable copy
    # of what the NumPy helper returns as a read-only view).
    n = _ndim_of(x)
    kind = axis_kind(axis)
    keep = literal_flag(keepdims)
    if keep is None and isinstance(keepdims, types.Boolean):
        return None   # Numba types the call again with the constant
    if n is None or kind is None or keep is None:
        _refuse("unreduce", g, x, axis, keepdims)
    if n == 0:
        return lambda g, x, axis=None, keepdims=False: g
    if _is_number(g):
        if kind == "none" or keep:
            return lambda g, x, axis=None, keepdims=False: np.full(shape_tuple(x), g)

        def reshaped(g, x, axis=None, keepdims=False):   # np.reshape(g, (1, ...)): one entry
            shape = shape_tuple(x)
            if kept_size(shape, reduced_axes(axis, n)) != 1:
                raise ValueError("srcgrad jit: unreduce of a number along an axis")
            return np.full(shape, g)
        return reshaped
    if not _float_array(g) or g.ndim != (n if keep or kind == "none" else n - axis_count(axis, n)):
        _refuse("unreduce", g, x, axis, keepdims)

    def spread(g, x, axis=None, keepdims=False):
        shape = shape_tuple(x)
        reduced = reduced_axes(axis, n)
        flat = np.ascontiguousarray(g).reshape(g.size)
        if g.size != kept_size(shape, reduced):
            raise ValueError("srcgrad jit: unreduce of another shape")
        out = np.empty(shape, g.dtype)
        for idx in np.ndindex(shape):
            out[idx] = flat[kept_offset(idx, shape, reduced)]
        return out
    return spread


@overload(reduction_size, jit_options=JIT_OPTIONS)
def _reduction_size(x, axis=None, at_least=0):
    kind = axis_kind(axis)
    if not isinstance(x, types.Array) or kind is None:
        _refuse("reduction_size", x, axis)
    n = x.ndim

    def size(x, axis=None, at_least=0):
        reduced = reduced_axes(axis, n)
        count = 1
        for i in range(n):
            if reduced[i]:
                count *= x.shape[i]
        return count if count >= at_least else at_least
    return size


@overload(unreduce_like, jit_options=JIT_OPTIONS)
def _unreduce_like(value, x, axis=None, keepdims=False):
    kind, keep = axis_kind(axis), literal_flag(keepdims)
    if keep is None and isinstance(keepdims, types.Boolean):
        return None   # Numba types the call again with the constant
    if _is_number(value) or _is_number(x) or kind == "none" or keep:
        return lambda value, x, axis=None, keepdims=False: value   # it broadcasts as it is
    if not (isinstance(value, types.Array) and isinstance(x, types.Array) and kind in ("int", "ints")
            and keep is False and value.ndim == x.ndim - axis_count(axis, x.ndim)):
        _refuse("unreduce_like", value, x, axis, keepdims)
    n = x.ndim

    def expanded(value, x, axis=None, keepdims=False):   # np.expand_dims(value, axis)
        reduced = reduced_axes(axis, n)
        shape = np.empty(n, np.intp)
        k = 0
        for i in range(n):
            if reduced[i]:
                shape[i] = 1
            else:
                shape[i] = value.shape[k]
                k += 1
        return np.ascontiguousarray(value).reshape(to_fixed_tuple(shape, n))
    return expanded


@overload(reshape, jit_options=JIT_OPTIONS)
def _reshape(a, shape):
    if isinstance(a, types.Array) and (_is_shape(shape) or isinstance(shape, types.Integer)):
        return lambda a, shape: np.ascontiguousarray(a).reshape(shape)
    if _is_number(a) and _is_shape(shape):   # one number: only to a shape of one entry
        def one(a, shape):
            size = 1
            for n in shape:
                size *= n
            if size != 1:
                raise ValueError("srcgrad jit: reshape of a number to another size")
            return np.full(shape, a)
        return one
    _refuse("reshape", a, shape)
