"""Numba forms of the helpers of indexed writes (``a[i] = v``, ``y[i] += v``, ``s += v``):
the alias check before a write and the adjoint's part read and zeroed after it (the entry
saved before it is runtime.py's own). Each has the NumPy helper's meaning for the types it accepts
(runtime.py's rule); importing this module needs numba."""

import numpy as np
from numba import njit, types
from numba.extending import overload

from srcgrad.jit.numba_types import (JIT_OPTIONS, basic_index as _basic_index,
                                    mask_index as _mask_index,
                                    is_number as _is_number, none as _none, refuse as _refuse)


def check_unshared(value, other):
    """See srcgrad.runtime.check_unshared (translate.py keeps its first two arguments; its
    ``update`` matters to a list or dict ``value`` only, which this form refuses):
    where the memory of the arrays ``value`` and ``other`` may overlap, ValueError, and the
    NumPy gradient runs the call and decides (it raises the user's error where they do).
    The check comes before the write, and a gradient writes into no argument (reverse.py
    copies a parameter written into), so nothing has changed when it raises."""


@overload(check_unshared, jit_options=JIT_OPTIONS)
def _check_unshared(value, other):
    if _is_number(value) or isinstance(value, types.Array) and (_none(other) or _is_number(other)):
        return lambda value, other: None   # ``s += v`` of a number rebinds it
    if isinstance(value, types.Array) and isinstance(other, types.Array):
        def check(value, other):
            if value.size and other.size:
                lo, hi = _extent(value)
                other_lo, other_hi = _extent(other)
                if lo < other_hi and other_lo < hi:
                    raise ValueError("srcgrad jit: arrays that may share memory")
        return check
    _refuse("check_unshared", value, other)


def check_sequence(value):
    """See srcgrad.runtime.check_sequence (translate.py drops its error): a list, tuple or
    array passes; anything else (a dict) is refused, and the NumPy gradient raises."""


@overload(check_sequence, jit_options=JIT_OPTIONS)
def _check_sequence(value):
    if isinstance(value, (types.List, types.ListType, types.BaseTuple, types.Array)):
        return lambda value: None
    _refuse("check_sequence", value)


@njit(**JIT_OPTIONS)
def _extent(a):
    """The addresses ``[lo, hi)`` the elements of the non-empty array ``a`` lie in."""
    lo = hi = a.ctypes.data
    for k in range(a.ndim):
        step = (a.shape[k] - 1) * a.strides[k]
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi + a.itemsize


def _gradient_of(dx, x, index):
    """Whether ``dx`` is a float array adjoint of the float array ``x`` read at an index
    that repeats no position: basic (integers, slices, None, Ellipsis) or a boolean mask
    (the NumPy helper's keep_written changes nothing there)."""
    return isinstance(x, types.Array) and isinstance(dx, types.Array) and dx.ndim == x.ndim \
        and isinstance(dx.dtype, types.Float) and (_basic_index(index) or _mask_index(index)
                                                   or _positions(x, index))


def _positions(x, index):
    """A 1-D integer array indexing a 1-D array (positions may repeat)."""
    return isinstance(index, types.Array) and index.ndim == 1 and x.ndim == 1 and \
        isinstance(index.dtype, types.Integer) and not isinstance(index.dtype, types.Boolean)


def written_grad(dx, x, index):
    """See srcgrad.runtime.written_grad."""


@overload(written_grad, jit_options=JIT_OPTIONS)
def _written_grad(dx, x, index):
    if _is_number(dx) and isinstance(x, types.Array) and _basic_index(index):
        return lambda dx, x, index: dx   # a number adjoint: every position's
    if not _gradient_of(dx, x, index):
        _refuse("written_grad", dx, x, index)
    if _positions(x, index):
        def kept(dx, x, index):   # keep_written: a position written again later gets nothing
            if dx.shape != x.shape:
                raise ValueError("srcgrad jit: written_grad of another shape")
            last = np.full(x.shape, -1, np.intp)
            g = np.empty(index.size, dx.dtype)
            for k in range(index.size):
                last[index[k]] = k   # bounds checked: an IndexError runs NumPy, which raises
            for k in range(index.size):
                g[k] = dx[index[k]] if last[index[k]] == k else 0.0
            return g
        return kept

    def take(dx, x, index):
        if dx.shape != x.shape:
            raise ValueError("srcgrad jit: written_grad of another shape")
        return _copied(dx[index])
    return take


def _copied(value):
    """``value.copy()`` of an array, a number as it is."""


@overload(_copied)
def _copied_impl(value):
    if isinstance(value, types.Array):
        return lambda value: value.copy()
    return lambda value: value


def zero_grad_at(dx, x, index):
    """See srcgrad.runtime.zero_grad_at."""


@overload(zero_grad_at, jit_options=JIT_OPTIONS)
def _zero_grad_at(dx, x, index):
    # A number adjoint would become an array here, a type Numba cannot give one name.
    if not (_gradient_of(dx, x, index) and dx.mutable):
        _refuse("zero_grad_at", dx, x, index)

    def zeroed(dx, x, index):
        if dx.shape != x.shape:
            raise ValueError("srcgrad jit: zero_grad_at of another shape")
        dx[index] = 0
        return dx
    return zeroed
