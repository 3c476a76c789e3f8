"""Numba forms of NumPy's reductions along axes: ``sum``, ``mean``, ``max``, ``min``,
``prod``, ``var`` and ``std`` of a float64 array with ``axis`` (an int or a tuple of ints) or
``keepdims`` (translate.py writes ``np.mean(x, axis=1)`` and ``x.mean(axis=1)`` as
``_jrt.reduce_mean(x, 1, False, 0)``; Numba has no ``keepdims``, and of these only
``sum`` takes an ``axis``: a sum over one int axis without keepdims stays Numba's own).
NumPy's formulas: the mean is the sum divided by the count, the variance the mean of
squared deviations from the mean (``max(count - ddof, 0)`` its
divisor), ``max``/``min`` propagate NaN and refuse an empty reduction (ValueError, as
NumPy: that call runs the NumPy gradient). Sums run in index order, where NumPy sums a
contiguous axis pairwise: the same values to rounding. Importing this module needs numba.
"""

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

from srcgrad.jit.numba_types import JIT_OPTIONS, is_number as _is_number, refuse as _refuse
from srcgrad.jit.shapes import (axis_count, axis_kind, kept_offset, kept_size, literal_flag,
                                reduced_axes)


@njit(**JIT_OPTIONS)
def _sums(x, reduced):
    """The sums over the reduced axes, flat in C order of the kept ones, and their count."""
    out = np.zeros(kept_size(x.shape, reduced))
    for idx in np.ndindex(x.shape):
        out[kept_offset(idx, x.shape, reduced)] += x[idx]
    return out, _count(x.shape, reduced)


@njit(**JIT_OPTIONS)
def _prod(x, reduced, ddof):
    """The products over the reduced axes (1 for none), flat in C order of the kept ones."""
    out = np.ones(kept_size(x.shape, reduced))
    for idx in np.ndindex(x.shape):
        out[kept_offset(idx, x.shape, reduced)] *= x[idx]
    return out


@njit(**JIT_OPTIONS)
def _count(shape, reduced):
    n = 1
    for i in range(len(shape)):
        if reduced[i]:
            n *= shape[i]
    return n


@njit(**JIT_OPTIONS)
def _extreme(x, reduced, largest):
    """max (``largest``) or min over the reduced axes, NaN wherever one is NaN."""
    size = kept_size(x.shape, reduced)
    if _count(x.shape, reduced) == 0 and size:
        raise ValueError("srcgrad jit: zero-size array to a reduction with no identity")
    out = np.full(size, -np.inf if largest else np.inf)
    for idx in np.ndindex(x.shape):
        k = kept_offset(idx, x.shape, reduced)
        v = x[idx]
        if v != v or (v > out[k] if largest else v < out[k]):
            if out[k] == out[k]:   # a NaN stays
                out[k] = v
    return out


@njit(**JIT_OPTIONS)
def _variances(x, reduced, ddof):
    sums, count = _sums(x, reduced)
    means = sums / count
    out = np.zeros(sums.size)
    for idx in np.ndindex(x.shape):
        k = kept_offset(idx, x.shape, reduced)
        d = x[idx] - means[k]
        out[k] += d * d
    return out / max(count - ddof, 0)


@njit(**JIT_OPTIONS)
def _sum(x, reduced, ddof):
    return _sums(x, reduced)[0]


@njit(**JIT_OPTIONS)
def _mean(x, reduced, ddof):
    sums, count = _sums(x, reduced)
    return sums / count


@njit(**JIT_OPTIONS)
def _max(x, reduced, ddof):
    return _extreme(x, reduced, True)


@njit(**JIT_OPTIONS)
def _min(x, reduced, ddof):
    return _extreme(x, reduced, False)


@njit(**JIT_OPTIONS)
def _std(x, reduced, ddof):
    return np.sqrt(_variances(x, reduced, ddof))


# each reduction's values, flat in C order of the kept axes
_FLAT = {"sum": _sum, "mean": _mean, "max": _max, "min": _min, "prod": _prod,
         "var": _variances, "std": _std}


def _form(op):
    def stub(x, axis=None, keepdims=False, ddof=0):
        pass
    stub.__name__ = f"reduce_{op}"

    def typing(x, axis=None, keepdims=False, ddof=0):
        kind, keep = axis_kind(axis), literal_flag(keepdims)
        if keep is None and isinstance(keepdims, types.Boolean):
            return None   # Numba types the call again with the constant
        if op == "sum" and axis_kind(axis) == "int" and keep is False and \
                isinstance(x, types.Array):   # what Numba's np.sum compiles itself, as before
            return lambda x, axis=None, keepdims=False, ddof=0: np.sum(x, axis=axis)
        if not (isinstance(x, types.Array) and x.dtype == types.float64 and x.ndim > 0 and
                kind is not None and keep is not None and isinstance(ddof, (types.Integer, int,
                                                                            types.Omitted))):
            _refuse(f"reduce_{op}", x, axis, keepdims)
        n, flat_of = x.ndim, _FLAT[op]
        out_ndim = n if keep else n - axis_count(axis, n)

        def impl(x, axis=None, keepdims=False, ddof=0):
            reduced = reduced_axes(axis, n)
            flat = flat_of(x, reduced, ddof)
            shape = np.empty(max(out_ndim, 1), np.intp)
            k = 0
            for i in range(n):
                if not reduced[i]:
                    shape[k] = x.shape[i]
                    k += 1
                elif keep:
                    shape[k] = 1
                    k += 1
            return flat.reshape(to_fixed_tuple(shape, out_ndim))

        def number(x, axis=None, keepdims=False, ddof=0):   # every axis: NumPy's scalar
            return flat_of(x, reduced_axes(axis, n), ddof)[0]
        return impl if out_ndim else number
    overload(stub, jit_options=JIT_OPTIONS)(typing)
    return stub


reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, reduce_var, reduce_std = (
    _form(op) for op in ("sum", "mean", "max", "min", "prod", "var", "std"))


def prod_others(a, axis=None):
    """See srcgrad.rules.numpy_reductions.prod_others: each entry's product of the other
    entries of its reduction group (1.0 for a number), no division. The NumPy helper's
    order: the product of the entries before it (in C order of the group) times that of
    the entries after it, multiplied from the last one back."""


@overload(prod_others, jit_options=JIT_OPTIONS)
def _prod_others(a, axis=None):
    kind = axis_kind(axis)
    if _is_number(a) and kind is not None:
        return lambda a, axis=None: 1.0
    if not (isinstance(a, types.Array) and a.dtype == types.float64 and a.ndim > 0 and
            kind is not None):
        _refuse("prod_others", a, axis)
    n = a.ndim

    def others(a, axis=None):
        reduced = reduced_axes(axis, n)
        size = kept_size(a.shape, reduced)
        flat = np.ascontiguousarray(a).reshape(a.size)
        groups = np.empty(a.size, np.intp)
        out = np.empty(a.size)
        before = np.ones(size)
        f = 0
        for idx in np.ndindex(a.shape):   # C order: each group's entries in order
            k = kept_offset(idx, a.shape, reduced)
            groups[f] = k
            out[f] = before[k]
            before[k] *= flat[f]
            f += 1
        after = np.ones(size)
        for f in range(a.size - 1, -1, -1):
            k = groups[f]
            out[f] = out[f] * after[k]
            after[k] *= flat[f]
        return out.reshape(a.shape)
    return others
