"""Shapes of adjoints: undoing broadcasting and reductions, casts back to a dtype.

``unbroadcast`` and ``unreduce`` are the sweep's two workhorses; the helpers
after them are their transposes (``broadcast_like``, ``reduce_to``,
``expand_to``), which the rules of rules/runtime_rules.py use when a gradient is
differentiated again.
"""

import numpy

from srcgrad.runtime import dask_forms as _dask_forms
from srcgrad.runtime.arrays import (_is_complex, _is_integer_dtype, is_array, namespace,
                                    normalize_axis, shape_tuple)
from srcgrad.runtime.boundary import zeros_like


def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x`` (undoing NumPy broadcasting).

    Free when the shapes already match; a scalar ``g`` is returned as it is and
    broadcast later, when it is added to an array. An array ``g`` smaller than ``x`` (a
    scalar seed times a smaller operand: ``0.0 * w`` for ``h * w``, in a gradient's own
    reverse sweep) is broadcast up to ``x``'s shape, read-only: the adjoints that reshape,
    index or tile ``dh`` read it as ``h``'s shape.
    """
    shape = x if type(x) is tuple else getattr(x, "shape", ())
    gshape = getattr(g, "shape", ())
    if gshape == shape or not gshape:
        return g
    if type(x) is list or (type(x) is tuple and x and type(x[0]) is not int):
        return g   # a list or tuple operand (not a saved shape): see _array_into_container
    extra = len(gshape) - len(shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    elif extra < 0:
        return broadcast_up(g, shape)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return broadcast_up(g, shape) if g.shape != shape else g


def broadcast_up(g, shape):
    """``g`` broadcast to ``shape`` (read-only) where NumPy would broadcast it so, else as
    it is (a shape unknown until computed, as Dask's after a boolean mask, included)."""
    try:
        if numpy.broadcast_shapes(tuple(g.shape), shape) != shape:
            return g
    except (ValueError, TypeError):
        return g
    return namespace(g).broadcast_to(g, shape)


def unreduce(g, x, axis=None, keepdims=False):
    """Broadcast the gradient of a reduction over ``axis`` back to ``x``'s shape (or a shape).

    A list or tuple ``x`` gets ``g`` itself: each item's gradient (seq_add broadcasts it).
    """
    if type(x) is list or (type(x) is tuple and x and type(x[0]) is not int):
        return g
    shape = x if type(x) is tuple else getattr(x, "shape", ())
    if not shape:
        return g
    xp = namespace(g) if type(x) is tuple else namespace(x, g)
    if not keepdims and axis is not None and getattr(g, "ndim", 0):
        g = xp.expand_dims(g, normalize_axis(axis, len(shape)))
    elif not keepdims and axis is not None:
        g = xp.reshape(xp.asarray(g), tuple(1 if i in normalize_axis(axis, len(shape)) else n
                                            for i, n in enumerate(shape)))
    elif xp is numpy:
        # A scalar spread over the shape: a read-only view of one element, as
        # broadcast_to makes, built directly (broadcast_to costs microseconds).
        one = numpy.asarray(g, dtype=_weak_dtype(g, x))
        if one.ndim == 0 and one.dtype.kind in "fc":
            return numpy.ndarray(shape, one.dtype, one.tobytes(), 0, (0,) * len(shape))
    if xp is not numpy and getattr(x, "chunks", None) is not None:
        # A Dask array or its saved shape: chunked like it, never one chunk of the whole
        # shape (a broadcast view that a worker would send whole to another).
        return _dask_forms.broadcast_to(g, shape, x)
    if not is_array(g):   # made on the device (asarray of a number copies from the host)
        g = xp.full((), g, dtype=_weak_dtype(g, x))
    return xp.broadcast_to(g, shape)


def _weak_dtype(g, x):
    """A Python float ``g``'s dtype beside a float array ``x`` (NumPy's promotion of a
    Python number: the array's float32 stays float32), else None (``g``'s own)."""
    if type(g) is float and getattr(getattr(x, "dtype", None), "kind", None) == "f":
        return x.dtype
    return None


def unreduce_like(value, x, axis=None, keepdims=False):
    """``value`` (a reduction result) reshaped so it broadcasts against ``x``."""
    shape = getattr(x, "shape", ())
    if not shape or keepdims or axis is None or not getattr(value, "ndim", 0):
        return value  # a scalar broadcasts as it is
    xp = namespace(x, value)
    return xp.expand_dims(value, normalize_axis(axis, len(shape)))


def reduction_size(x, axis=None, at_least=0):
    """How many elements of ``x`` a reduction over ``axis`` combines (``at_least`` 1:
    a mean's divisor, which must not be 0 for an empty ``x``, whose gradient is empty;
    a list or tuple is reduced as NumPy reads it: as an array)."""
    shape = numpy.shape(x) if isinstance(x, (list, tuple)) else getattr(x, "shape", ())
    n = 1
    for a in normalize_axis(axis, len(shape)):
        n *= shape[a]
    return n if n >= at_least else at_least


def _xp_of(*values):
    return namespace(*values)


def _asarray(xp, value):
    return xp.asarray(value)


def broadcast_like(dz, g):
    """``dz`` given the shape of ``g``: broadcast up, or summed down (adjoint of unbroadcast)."""
    target = shape_tuple(g)
    dshape = shape_tuple(dz)
    if dshape == target:
        return dz
    if not target:
        if isinstance(g, (int, float)) and not is_array(dz):
            return dz
        return _xp_of(dz).sum(_asarray(_xp_of(dz), dz))
    xp = _xp_of(dz, g)
    try:
        numpy.broadcast_shapes(dshape, target)
        if numpy.broadcast_shapes(dshape, target) == target:
            return xp.broadcast_to(xp.asarray(dz), target)
    except ValueError:
        pass
    return unbroadcast(dz, g)


def reduce_to(dz, g, axis=None, keepdims=False):
    """Adjoint of ``unreduce(g, x, axis, keepdims)`` with respect to ``g``."""
    gshape = shape_tuple(g)
    dshape = shape_tuple(dz)
    if dshape == gshape:
        return dz
    xp = _xp_of(dz)
    dz = xp.asarray(dz)
    if not gshape:
        return dz.sum()
    if axis is None:
        s = dz.sum(keepdims=True)
    else:
        s = dz.sum(axis=normalize_axis(axis, dz.ndim), keepdims=True)
    if s.shape != gshape:
        s = s.reshape(gshape)
    return s


def cast_like(g, x):
    """Gradient ``g`` cast back to ``x``'s floating dtype (adjoint of a dtype cast); a NumPy
    float64 scalar too (a 0-d float32 ``x``'s), not a Python float."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "fc" or not (is_array(g) or isinstance(g, numpy.floating)):
        return g
    if g.dtype != dtype:
        return g.astype(dtype)
    return g


def dtype_grad(g, dtype, x):
    """Gradient ``g`` of ``x`` through a cast to ``dtype``: a zero when ``dtype`` is an integer
    or boolean dtype (the cast's derivative is zero almost everywhere, as in PyTorch and JAX).

    Compiled code knows most dtypes (analysis/kinds.py); this decides the others at run time.
    """
    if dtype is None or not _is_integer_dtype(dtype):
        return g
    return zeros_like(x)


def real_like(g, x):
    """The real part of a complex gradient ``g`` of a real ``x`` (where a real value
    entered complex arithmetic: its cotangent is the real part, the JAX convention)."""
    if getattr(g, "dtype", None) is not None:
        if g.dtype.kind != "c" or _is_complex(x):
            return g
        return g.real
    if isinstance(g, complex) and not _is_complex(x):
        return g.real
    return g


def expand_to(dw, dz, axis=None, keepdims=False):
    """Adjoint of ``reduce_to(dz, g, axis, keepdims)``: ``dw`` broadcast back to ``dz``'s shape."""
    if not shape_tuple(dw):
        xp = namespace(dw, dz)
        return xp.broadcast_to(xp.asarray(dw), shape_tuple(dz))
    return unreduce(dw, dz, axis, keepdims)
