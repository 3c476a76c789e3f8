"""Adjoint rules of ufunc methods: ``add.reduce``/``multiply.reduce`` (``sum``/``prod``
over axis 0 by default), ``add.accumulate`` (``cumsum``), ``maximum.accumulate``/
``minimum.accumulate`` (running extrema; ties split evenly, as ``max``) and
``add.outer``/``subtract.outer``/``multiply.outer``; ``maximum.reduce``/``minimum.reduce``
(``max``/``min`` over axis 0), ``logaddexp.reduce``/``logaddexp2.reduce`` (a log-sum-exp) and
``multiply.accumulate`` (``cumprod``), with their tangents.
"""

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, returns_sequence, tangent
from srcgrad.runtime.arrays import float_dtype, namespace

xp = None  # placeholder: the array namespace, bound in generated code


@adjoint(np.add.reduce)
def add_reduce(dy, y, array, axis=0, dtype=None, *, keepdims=False, where=True):
    """``sum`` over ``axis`` (0 by default, as ufunc reductions)."""
    return rt.reduction_cast(rt.where_mask(rt.unreduce(dy, array, axis, keepdims), where), dtype, array)


@adjoint(np.multiply.reduce)
def multiply_reduce(dy, y, array, axis=0, dtype=None, *, keepdims=False):
    """``prod`` over ``axis``: exact with zeros."""
    return rt.reduction_cast(rt.unreduce(dy, array, axis, keepdims) * rt.prod_others(array, axis), dtype, array)


@adjoint(np.maximum.reduce, np.minimum.reduce)
def extremum_reduce(dy, y, array, axis=0, *, keepdims=False):
    """``max``/``min`` over ``axis`` (0 by default): ties split evenly, as ``max``."""
    m = array == rt.unreduce_like(y, array, axis, keepdims)
    return rt.unreduce(dy, array, axis, keepdims) * rt.tie_share(m, axis, array)


@tangent(np.maximum.reduce, np.minimum.reduce)
def extremum_reduce_tangent(y, array, axis=0, *, keepdims=False, t_array):
    share = rt.tie_share(array == rt.unreduce_like(y, array, axis, keepdims), axis, array)
    return xp.sum(t_array * share, axis=axis, keepdims=keepdims)


@adjoint(np.logaddexp.reduce)
def logaddexp_reduce(dy, y, array, axis=0, *, keepdims=False):
    """``log(sum(exp(array)))`` over ``axis`` (0 by default): each entry's share is
    ``exp(array - y)``."""
    return rt.unreduce(dy, array, axis, keepdims) * xp.exp(array - rt.unreduce_like(y, array, axis, keepdims))


@tangent(np.logaddexp.reduce)
def logaddexp_reduce_tangent(y, array, axis=0, *, keepdims=False, t_array):
    share = xp.exp(array - rt.unreduce_like(y, array, axis, keepdims))
    return xp.sum(t_array * share, axis=axis, keepdims=keepdims)


@adjoint(np.logaddexp2.reduce)
def logaddexp2_reduce(dy, y, array, axis=0, *, keepdims=False):
    """``log2(sum(2 ** array))`` over ``axis``: each entry's share is ``2 ** (array - y)``."""
    return rt.unreduce(dy, array, axis, keepdims) * xp.exp2(array - rt.unreduce_like(y, array, axis, keepdims))


@tangent(np.logaddexp2.reduce)
def logaddexp2_reduce_tangent(y, array, axis=0, *, keepdims=False, t_array):
    share = xp.exp2(array - rt.unreduce_like(y, array, axis, keepdims))
    return xp.sum(t_array * share, axis=axis, keepdims=keepdims)


@adjoint(np.multiply.accumulate)
def multiply_accumulate(dy, y, array, axis=0):
    """``cumprod`` along ``axis`` (0 by default): exact with zeros."""
    return rt.cumprod_vjp(dy, array, axis)


@tangent(np.multiply.accumulate)
def multiply_accumulate_tangent(y, array, axis=0, *, t_array):
    return rt.cumprod_jvp(array, t_array, axis)


@adjoint(np.add.accumulate)
def add_accumulate(dy, y, array, axis=0, dtype=None):
    """``cumsum`` along ``axis`` (0 by default)."""
    g = xp.flip(xp.cumsum(xp.flip(dy, axis), axis), axis)
    return rt.reduction_cast(g, dtype, array)


@adjoint(np.maximum.accumulate, np.minimum.accumulate)
def extremum_accumulate(dy, y, array, axis=0, dtype=None):
    """The running maximum (minimum): each result's gradient goes to the entries it equals
    so far, split evenly among tied ones (as ``max``)."""
    return rt.running_extremum_vjp(dy, array, y, axis)


def _running_groups(xp, a, y, axis):
    """``a`` and ``y`` with ``axis`` first, the entries equal to the running extremum so far
    (``tied``), where a new extremum starts a group (``new``), and how many tied entries
    each result has so far in its group (``count``)."""
    a = xp.moveaxis(xp.asarray(a), axis, 0)
    y = xp.moveaxis(xp.asarray(y), axis, 0)
    tied = a == y
    new = xp.ones(a.shape, dtype=bool)
    new[1:] = y[1:] != y[:-1]
    count = xp.zeros(a.shape, dtype=float_dtype(a, xp))
    running = xp.zeros(a.shape[1:], dtype=count.dtype)
    for k in range(a.shape[0]):
        running = xp.where(new[k], 0.0, running) + tied[k]
        count[k] = running
    return a, tied, new, count


@rt.helper
def running_extremum_vjp(dy, a, y, axis=0):
    """Gradient of ``maximum.accumulate(a, axis)`` (or ``minimum``) for ``a``: result ``k``'s
    cotangent shared by the entries ``j <= k`` of its group equal to it."""
    xp = namespace(a, dy)
    a, tied, new, count = _running_groups(xp, a, y, axis)
    share = xp.moveaxis(xp.asarray(dy), axis, 0) / count
    grad = xp.zeros(a.shape, dtype=count.dtype)
    total = xp.zeros(a.shape[1:], dtype=count.dtype)
    for k in reversed(range(a.shape[0])):
        total = total + share[k]
        grad[k] = xp.where(tied[k], total, 0.0)
        total = xp.where(new[k], 0.0, total)
    return xp.moveaxis(grad, 0, axis)


@rt.helper
def running_extremum_jvp(t, a, y, axis=0):
    """The tangent of ``maximum.accumulate(a, axis)``: the mean of the tied entries'
    tangents so far in each result's group."""
    xp = namespace(a, t)
    a, tied, new, count = _running_groups(xp, a, y, axis)
    t = xp.moveaxis(xp.broadcast_to(xp.asarray(t), xp.moveaxis(a, 0, axis).shape), axis, 0)
    out = xp.zeros(a.shape, dtype=count.dtype)
    total = xp.zeros(a.shape[1:], dtype=count.dtype)
    for k in range(a.shape[0]):
        total = xp.where(new[k], 0.0, total) + xp.where(tied[k], t[k], 0.0)
        out[k] = total / count[k]
    return xp.moveaxis(out, 0, axis)


@adjoint(np.add.outer)
def add_outer(dy, y, A, B):
    """Each operand gets ``dy`` summed over the other's axes."""
    g = rt.outer_vjp(dy, A, B, False)
    return g[0], g[1]


@adjoint(np.subtract.outer)
def subtract_outer(dy, y, A, B):
    """``add.outer(A, -B)``: ``B``'s gradient is negated."""
    g = rt.outer_vjp(dy, A, B, False)
    return g[0], -g[1]


@adjoint(np.multiply.outer)
def multiply_outer(dy, y, A, B):
    """Each operand gets ``dy`` times the other, summed over the other's axes."""
    g = rt.outer_vjp(dy, A, B, True)
    return g[0], g[1]


@rt.helper
def outer_vjp(dy, A, B, product):
    """Gradients of ``add.outer(A, B)`` / ``multiply.outer(A, B)`` (``product``)."""
    xp = namespace(dy, A, B)
    a_shape, b_shape = np.shape(A), np.shape(B)
    g = xp.asarray(dy)
    a_axes = tuple(range(len(a_shape)))
    b_axes = tuple(range(len(a_shape), g.ndim))
    if product:
        b = xp.asarray(B)
        a = xp.asarray(A)
        ga = xp.sum(g * b, axis=b_axes) if b_axes else g * b
        gb = xp.sum(g * a.reshape(a_shape + (1,) * len(b_shape)), axis=a_axes) if a_axes else g * a
    else:
        ga = xp.sum(g, axis=b_axes) if b_axes else g
        gb = xp.sum(g, axis=a_axes) if a_axes else g
    return ga, gb


returns_sequence(rt.outer_vjp)
