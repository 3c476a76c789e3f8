"""Adjoint rules of ufunc methods: ``add.reduce``/``multiply.reduce`` (``sum``/``prod``
over axis 0 by default), ``add.accumulate`` (``cumsum``), ``maximum.accumulate``/
``minimum.accumulate`` (running extrema; ties split evenly, as ``max``) and
``add.outer``/``subtract.outer``/``multiply.outer``; ``maximum.reduce``/``minimum.reduce``
(``max``/``min`` over axis 0), ``logaddexp.reduce``/``logaddexp2.reduce`` (a log-sum-exp) and
``multiply.accumulate`` (``cumprod``), with their tangents; ``maximum.at``/``minimum.at``
(rewritten as values by transform/mutation.py), to any order.
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


# ----- np.maximum.at / np.minimum.at: a[index] = maximum(a[index], values), in order -----
# transform/mutation.py writes the call as ``a[...] = rt.ufunc_extremum_at(a, index, values,
# "maximum")``. The result is the loop ``a[i] = np.maximum(a[i], v)`` over the index in
# order, and so is its gradient: np.maximum's rule splits a tie evenly at each step, so
# of r tied candidates at one position (``a``'s entry first, then the values in order) the
# last gets 1/2, the one before 1/4, ..., the first two 1/2**(r-1) each (one alone: all).
# The weights are piecewise constant: linear in the cotangent, zero second derivative.


@rt.helper
def ufunc_extremum_at(a, index, values, kind):
    """``np.maximum.at(a, index, values)`` (``kind`` "maximum" or "minimum") as a value."""
    if not hasattr(a, "copy") or not hasattr(a, "shape"):
        raise TypeError(f"np.{kind}.at writes into an array, not a {type(a).__name__}")
    out = a.copy()
    getattr(namespace(a), kind).at(out, index, values)
    return out


def _extremum_at_weights(a, index, values, kind):
    """``(wa, positions, wv)``: the weight of each entry of ``a``, the flat position each
    entry of the broadcast values lands on, and each one's weight."""
    xp_ = namespace(a, values)
    a = xp_.asarray(a)
    positions = xp_.arange(a.size).reshape(a.shape)[index]
    vals = xp_.broadcast_to(xp_.asarray(values), positions.shape).ravel()
    positions = positions.ravel()
    y = ufunc_extremum_at(a, index, values, kind).ravel()
    a_tied = a.ravel() == y
    tied = vals == y[positions]
    r = xp_.bincount(positions[tied], minlength=a.size) + a_tied
    order = xp_.argsort(positions, kind="stable")
    ranked = xp_.cumsum(tied[order]) - tied[order]        # tied values before, all positions
    first = xp_.searchsorted(positions[order], positions[order], side="left")
    q = xp_.empty(positions.shape, dtype=r.dtype)
    q[order] = ranked - ranked[first]
    q = q + a_tied[positions]                              # a's entry counts first
    rv = r[positions]
    wv = xp_.where(tied, 0.5 ** xp_.where(q == 0, rv - 1, rv - q), 0.0)
    wa = xp_.where(a_tied, 0.5 ** (r - 1.0), 0.0).reshape(a.shape)
    return wa, positions, wv


@rt.helper
def extremum_at_vjp(dy, a, index, values, kind):
    """``(ga, gvalues)`` of ``ufunc_extremum_at``: ``dy`` times each one's weight (the
    values' summed back to their shape); an entry that lost gets exactly 0."""
    xp_ = namespace(dy, a, values)
    wa, positions, wv = _extremum_at_weights(a, index, values, kind)
    dy = xp_.broadcast_to(xp_.asarray(dy), wa.shape)
    flat = dy.ravel()[positions]
    gv = xp_.where(wv == 0, 0.0, flat * wv)
    shape = xp_.broadcast_to(xp_.asarray(values), xp_.arange(wa.size).reshape(wa.shape)[index].shape).shape
    return xp_.where(wa == 0, 0.0, dy * wa), rt.unbroadcast(gv.reshape(shape), values)


@rt.helper
def extremum_at_jvp(t_a, t_values, a, index, values, kind):
    """The tangent of ``ufunc_extremum_at`` (None: a zero tangent): each position's
    weighted tangents summed (the transpose of ``extremum_at_vjp``)."""
    xp_ = namespace(a, values)
    wa, positions, wv = _extremum_at_weights(a, index, values, kind)
    out = xp_.zeros(wa.shape, dtype=wa.dtype)
    if t_a is not None and not (type(t_a) in (int, float) and t_a == 0):
        out = out + wa * t_a
    if t_values is not None and not (type(t_values) in (int, float) and t_values == 0):
        tv = xp_.broadcast_to(xp_.asarray(t_values), (positions.size,) if xp_.ndim(t_values) == 0 else
                              xp_.arange(wa.size).reshape(wa.shape)[index].shape).ravel()
        flat = out.ravel()
        xp_.add.at(flat, positions, wv * tv)
        out = flat.reshape(wa.shape)
    return out


@adjoint(rt.ufunc_extremum_at)
def ufunc_extremum_at_rule(dy, y, a, index, values, kind):
    g = rt.extremum_at_vjp(dy, a, index, values, kind)
    return g[0], None, g[1], None


@tangent(rt.ufunc_extremum_at, no_tangent=("index", "kind"))
def ufunc_extremum_at_tangent(y, a, index, values, kind, *, t_a, t_values):
    return rt.extremum_at_jvp(t_a, t_values, a, index, values, kind)


@tangent(rt.extremum_at_vjp, no_tangent=("a", "index", "values", "kind"))
def extremum_at_vjp_tangent(g, dy, a, index, values, kind, *, t_dy):
    """The weights are constant between ties: only ``dy`` moves the gradient."""
    return rt.extremum_at_vjp(t_dy, a, index, values, kind)


@adjoint(rt.extremum_at_vjp, sequences=())
def extremum_at_vjp_rule(dw, w, dy, a, index, values, kind):
    return rt.extremum_at_jvp(rt.seq_item(dw, 0), rt.seq_item(dw, 1), a, index, values, kind), None, None, None, None


@tangent(rt.extremum_at_jvp, no_tangent=("a", "index", "values", "kind"))
def extremum_at_jvp_tangent(y, t_a, t_values, a, index, values, kind, *, t_t_a, t_t_values):
    return rt.extremum_at_jvp(t_t_a, t_t_values, a, index, values, kind)


@adjoint(rt.extremum_at_jvp)
def extremum_at_jvp_rule(dw, w, t_a, t_values, a, index, values, kind):
    g = rt.extremum_at_vjp(dw, a, index, values, kind)
    return g[0], g[1], None, None, None, None


returns_sequence(rt.extremum_at_vjp)
