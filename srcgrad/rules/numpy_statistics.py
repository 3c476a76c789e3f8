"""Adjoint rules of NumPy's order statistics, NaN-ignoring reductions, integrals,
interpolation, covariances and ufunc methods: ``median``/``quantile``/``percentile``
(and their ``nan`` forms), ``partition``, ``nanvar``/``nanstd``/``nanprod``/``nancumsum``,
``trapezoid``, ``interp``, ``linalg.multi_dot``, ``math.dist``, ``cov``,
``corrcoef``, ``correlate`` and ``np.gradient`` (the ufunc methods are in
numpy_ufunc_methods.py).

Order statistics follow ``max``'s convention for ties: an order statistic's weight is
split evenly among the entries equal to it (the mean of the tied entries' subgradients).
Quantiles support NumPy's default ``method="linear"``; another method is refused.
"""

import builtins
import math

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, returns_sequence
from srcgrad.runtime.arrays import float_dtype, namespace, normalize_axis

xp = None  # placeholder: the array namespace, bound in generated code

_LINEAR = {"method": ("linear",)}

# ----- Quantiles -----


@adjoint(np.median)
def median(dy, y, a, axis=None, *, keepdims=False):
    """Even lengths average the two middle entries; ties split evenly (as ``max``)."""
    return rt.quantile_vjp(dy, a, 0.5, axis, keepdims, False)


@adjoint(np.nanmedian)
def nanmedian(dy, y, a, axis=None, *, keepdims=False):
    """The median of the non-NaN entries: NaN entries get no gradient."""
    return rt.quantile_vjp(dy, a, 0.5, axis, keepdims, True)


@adjoint(np.quantile, literals=_LINEAR)
def quantile(dy, y, a, q, axis=None, *, method="linear", keepdims=False):
    """Linear interpolation between two order statistics (NumPy's default method)."""
    return (rt.quantile_vjp(dy, a, q, axis, keepdims, False),
            rt.quantile_q_vjp(dy, a, q, axis, keepdims, False), None, None, None)


@adjoint(np.nanquantile, literals=_LINEAR)
def nanquantile(dy, y, a, q, axis=None, *, method="linear", keepdims=False):
    """The quantile of the non-NaN entries: NaN entries get no gradient."""
    return (rt.quantile_vjp(dy, a, q, axis, keepdims, True),
            rt.quantile_q_vjp(dy, a, q, axis, keepdims, True), None, None, None)


@adjoint(np.percentile, literals=_LINEAR)
def percentile(dy, y, a, q, axis=None, *, method="linear", keepdims=False):
    """``quantile(a, q / 100)``."""
    return (rt.quantile_vjp(dy, a, q, axis, keepdims, False, 100),
            rt.quantile_q_vjp(dy, a, q, axis, keepdims, False, 100), None, None, None)


@adjoint(np.nanpercentile, literals=_LINEAR)
def nanpercentile(dy, y, a, q, axis=None, *, method="linear", keepdims=False):
    """``nanquantile(a, q / 100)``."""
    return (rt.quantile_vjp(dy, a, q, axis, keepdims, True, 100),
            rt.quantile_q_vjp(dy, a, q, axis, keepdims, True, 100), None, None, None)


def _reduced_last(xp, a, axis):
    """``a`` with the reduced axes moved last and merged: (kept..., n), and the order."""
    axes = normalize_axis(axis, a.ndim)
    kept = [i for i in range(a.ndim) if i not in axes]
    order = kept + list(axes)
    moved = xp.transpose(a, order)
    return moved.reshape(moved.shape[:len(kept)] + (math.prod(a.shape[i] for i in axes),)), order


def _order_statistic_weights(xp, a, q, axis, skip_nan, scale):
    """For each quantile ``q / scale`` of ``a`` over ``axis`` (method "linear"): yield
    (its index in ``q``, the weights of ``a``'s entries and their derivative by ``q``, both
    shaped (kept..., n)), with ``a`` reshaped as ``_reduced_last`` does. Each of the two
    order statistics ``floor`` and ``floor + 1`` of ``q * (count - 1)`` weighs ``1 - frac``
    and ``frac``, split evenly among the entries equal to it (``count``: the group's
    non-NaN entries with ``skip_nan``)."""
    flat, _ = _reduced_last(xp, a, axis)
    q_array = xp.asarray(q, dtype=np.float64) / scale
    ordered = xp.sort(flat, axis=-1)
    if skip_nan:
        count = xp.sum(xp.logical_not(xp.isnan(flat)), axis=-1)
    else:
        count = xp.full(flat.shape[:-1], flat.shape[-1])
    last = xp.maximum(count - 1, 0)
    for j, qj in enumerate(q_array.reshape(-1)):
        position = qj * last
        lo = xp.floor(position).astype(np.intp)
        hi = xp.minimum(lo + 1, last)
        frac = position - lo
        v_lo = xp.take_along_axis(ordered, lo[..., None], axis=-1)
        v_hi = xp.take_along_axis(ordered, hi[..., None], axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            share_lo, share_hi = ((flat == v) / xp.sum(flat == v, axis=-1, keepdims=True) for v in (v_lo, v_hi))
        weights = (1 - frac)[..., None] * share_lo + frac[..., None] * share_hi
        yield j, weights, (share_hi - share_lo) * (last / scale)[..., None]


@rt.helper
def quantile_vjp(dy, a, q, axis=None, keepdims=False, skip_nan=False, scale=1):
    """Gradient of ``quantile(a, q / scale, axis)`` for ``a``, method "linear" (``scale``
    100: ``percentile``); ties split evenly (as ``max``). Linear in ``dy``, and constant
    in ``a`` between ties (rules one order up: statistics_second_order.py)."""
    xp = namespace(a, dy)
    a = xp.asarray(a)
    flat, order = _reduced_last(xp, a, axis)
    dy = xp.reshape(xp.asarray(dy), (int(np.size(q)),) + flat.shape[:-1])
    grad = xp.zeros(flat.shape, dtype=float_dtype(a, xp))
    for j, weights, _ in _order_statistic_weights(xp, a, q, axis, skip_nan, scale):
        grad += dy[j][..., None] * weights
    moved_shape = tuple(a.shape[i] for i in order)
    return xp.transpose(grad.reshape(moved_shape), np.argsort(order))


@rt.helper
def quantile_q_vjp(dy, a, q, axis=None, keepdims=False, skip_nan=False, scale=1):
    """Gradient of ``quantile(a, q / scale, axis)`` for ``q``: each quantile's slope
    between its two order statistics, times its cotangent (a list for a list ``q``); the
    pairing ``quantile_q_pair`` takes with ``a`` itself (a weight's derivative by ``q``
    times ``a`` is that slope)."""
    dq = quantile_q_pair(dy, a, a, q, axis, skip_nan, scale)
    values = [float(v) for v in (dq if isinstance(dq, list) else namespace(dq).reshape(dq, (-1,)))]
    if isinstance(q, (list, tuple)):
        return values
    return values[0] if not np.shape(q) else np.array(values).reshape(np.shape(q))


@rt.helper
def quantile_q_pair(c, v, a, q, axis=None, skip_nan=False, scale=1):
    """``d/dq <c, W(q) v>`` for the weights ``W`` of ``quantile(a, q / scale, axis)``,
    ``c`` shaped as the quantiles, ``v`` as ``a``: the derivative by ``q`` of
    ``quantile_vjp``'s and ``quantile_jvp``'s pairings (their adjoints in ``q``)."""
    xp = namespace(a, c, v)
    a = xp.asarray(a)
    flat, _ = _reduced_last(xp, a, axis)
    v_flat, _ = _reduced_last(xp, xp.broadcast_to(xp.asarray(v), a.shape), axis)
    c = xp.reshape(xp.asarray(c), (int(np.size(q)),) + flat.shape[:-1])
    dq = [xp.sum(xp.where(by_q != 0, c[j][..., None] * by_q * v_flat, 0.0))
          for j, _, by_q in _order_statistic_weights(xp, a, q, axis, skip_nan, scale)]
    if isinstance(q, (list, tuple)):
        return dq
    return dq[0] if not np.shape(q) else xp.reshape(xp.stack(dq), np.shape(q))


@rt.helper
def quantile_jvp(t, a, q, axis=None, keepdims=False, skip_nan=False, scale=1):
    """The tangent of ``quantile(a, q / scale, axis)`` along ``t`` (``a``'s tangent): the
    same weights as ``quantile_vjp``, applied to ``t``."""
    xp = namespace(a, t)
    a = xp.asarray(a)
    t_flat, _ = _reduced_last(xp, xp.broadcast_to(xp.asarray(t), a.shape), axis)
    out = [xp.sum(xp.where(weights != 0, weights * t_flat, 0.0), axis=-1)   # NaN entries: weight 0
           for _, weights, _ in _order_statistic_weights(xp, a, q, axis, skip_nan, scale)]
    out = xp.stack(out).reshape(np.shape(q) + t_flat.shape[:-1])
    if keepdims:
        shape = list(a.shape)
        for ax in normalize_axis(axis, a.ndim):
            shape[ax] = 1
        out = out.reshape(np.shape(q) + tuple(shape))
    return out


# ----- Partition -----


@adjoint(np.partition)
def partition(dy, y, a, kth, axis=-1, kind="introselect"):
    """A permutation of ``a``: the gradient is un-permuted (``argpartition`` puts each
    entry where ``partition`` did, both being the same selection)."""
    return rt.partition_vjp(dy, a, kth, axis)


@rt.helper
def partition_vjp(dy, a, kth, axis=-1):
    """``dy`` scattered back through ``argpartition(a, kth, axis)``; entries equal to
    one another are interchangeable, so any of them may take a tied entry's gradient."""
    xp = namespace(a, dy)
    a = xp.asarray(a)
    if axis is None:
        index = xp.argpartition(a.reshape(-1), kth)
        grad = xp.zeros(a.size, dtype=float_dtype(a, xp))
        grad[index] = xp.asarray(dy).reshape(-1)
        return grad.reshape(a.shape)
    index = xp.argpartition(a, kth, axis=axis)
    grad = xp.zeros(a.shape, dtype=float_dtype(a, xp))
    xp.put_along_axis(grad, index, xp.asarray(dy), axis=axis)
    return grad


@rt.helper
def partition_jvp(t, a, kth, axis=-1):
    """The tangent of ``partition(a, kth, axis)``: ``t`` gathered as ``a`` was."""
    xp = namespace(a, t)
    a = xp.asarray(a)
    t = xp.broadcast_to(xp.asarray(t), a.shape)
    if axis is None:
        return t.reshape(-1)[xp.argpartition(a.reshape(-1), kth)]
    return xp.take_along_axis(t, xp.argpartition(a, kth, axis=axis), axis=axis)


# ----- NaN-ignoring reductions -----


@adjoint(np.nanvar)
def nanvar(dy, y, a, axis=None, *, ddof=0, keepdims=False):
    """The variance of the non-NaN entries: NaN entries get no gradient."""
    valid = xp.logical_not(xp.isnan(a))
    d = xp.where(valid, a - xp.nanmean(a, axis=axis, keepdims=True), 0)
    n = xp.sum(valid, axis=axis, keepdims=True)
    return rt.unreduce(dy, a, axis, keepdims) * 2 * d / xp.maximum(n - ddof, 0)


@adjoint(np.nanstd)
def nanstd(dy, y, a, axis=None, *, ddof=0, keepdims=False):
    """0 where the std is 0 (as ``std``); NaN entries get no gradient."""
    valid = xp.logical_not(xp.isnan(a))
    d = xp.where(valid, a - xp.nanmean(a, axis=axis, keepdims=True), 0)
    s = rt.unreduce_like(y, a, axis, keepdims) * xp.maximum(xp.sum(valid, axis=axis, keepdims=True) - ddof, 0)
    return rt.unreduce(dy, a, axis, keepdims) * d / xp.where(s == 0, xp.inf, s)


@adjoint(np.nanprod)
def nanprod(dy, y, a, axis=None, *, keepdims=False):
    """NaN entries count as ones: they get no gradient (exact with zeros, as ``prod``)."""
    valid = xp.logical_not(xp.isnan(a))
    return rt.unreduce(dy, a, axis, keepdims) * rt.prod_others(xp.where(valid, a, 1), axis) * valid


@adjoint(np.nancumsum)
def nancumsum(dy, y, a, axis=None):
    """NaN entries count as zeros: they get no gradient."""
    g = xp.reshape(xp.flip(xp.cumsum(xp.flip(dy, axis), axis), axis), rt.shape_of(a))
    return g * xp.logical_not(xp.isnan(a))


@adjoint(np.nancumprod)
def nancumprod(dy, y, a, axis=None):
    """NaN entries count as ones: ``cumprod`` of the cleaned array; they get no gradient."""
    return xp.where(xp.isnan(a), 0.0, rt.cumprod_vjp(dy, xp.where(xp.isnan(a), 1.0, a), axis))


# ----- Integrals and interpolation -----


@adjoint(np.trapezoid)
def trapezoid(dy, y, a, x=None, dx=1.0, axis=-1):
    """Linear in ``a``; ``x`` (sample points) and ``dx`` get their gradients too."""
    parts = rt.trapezoid_vjp(dy, a, x, dx, axis)
    return parts[0], parts[1], parts[2], None


@rt.helper
def trapezoid_vjp(dy, y, x=None, dx=1.0, axis=-1):
    """Gradients of ``trapezoid(y, x, dx, axis)`` for ``y``, ``x`` and ``dx``."""
    xp = namespace(y, dy, x)
    y = xp.asarray(y)
    ax = axis % y.ndim
    n = y.shape[ax]
    g = xp.expand_dims(xp.asarray(dy), ax)

    def part(start, stop):
        index = [slice(None)] * y.ndim
        index[ax] = slice(start, stop)
        return tuple(index)

    if x is None:
        widths = xp.asarray(dx)
        if widths.ndim:
            widths = xp.expand_dims(widths, ax) if widths.ndim < y.ndim else widths
    else:
        x = xp.asarray(x)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[ax] = n
            xs = x.reshape(shape)
        else:
            xs = x
        widths = xs[part(1, None)] - xs[part(None, -1)]
    half = g * widths / 2
    full_shape = list(half.shape)
    full_shape[ax] = n
    dy_full = xp.zeros(np.broadcast_shapes(y.shape, tuple(full_shape)), dtype=float_dtype(y, xp))
    dy_full[part(1, None)] += half
    dy_full[part(None, -1)] += half
    dy_out = rt.unbroadcast(dy_full, y)
    average = (y[part(1, None)] + y[part(None, -1)]) / 2 * g
    if x is None:
        return dy_out, None, rt.unbroadcast(average, dx)
    dxs = xp.zeros(average.shape[:ax] + (n,) + average.shape[ax + 1:], dtype=average.dtype)
    dxs[part(1, None)] += average
    dxs[part(None, -1)] -= average
    if x.ndim == 1 and y.ndim > 1:
        other = tuple(i for i in range(dxs.ndim) if i != ax)
        dxs = dxs.sum(axis=other)
    return dy_out, rt.unbroadcast(dxs, x), None


@adjoint(np.interp)
def interp(dy, y, x, xp_points, fp, left=None, right=None, period=None):
    """Piecewise linear: ``x`` gets the slope of its segment (0 outside the sample
    range), ``fp`` the two interpolation weights, ``left``/``right`` the outside part."""
    parts = rt.interp_vjp(dy, x, xp_points, fp, left, right, period)
    return parts[0], parts[1], parts[2], parts[3], parts[4], None


def _refuse_period(period):
    if period is not None:
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError("srcgrad: the derivative of np.interp with period= is not supported",
                               hint="Reduce x to one period (np.mod) and pass points that cover it, without period=.")


@rt.helper
def interp_vjp(dy, x, xp_points, fp, left=None, right=None, period=None):
    """Gradients of ``interp(x, xp, fp, left, right)`` for x, xp, fp, left and right."""
    _refuse_period(period)
    x_array = np.asarray(x, dtype=np.float64)
    points = np.asarray(xp_points, dtype=np.float64)
    values = np.asarray(fp, dtype=np.float64)
    g = np.broadcast_to(np.asarray(dy, dtype=np.float64), x_array.shape)
    n = points.size
    below = x_array < points[0]
    above = x_array > points[-1]
    inside = ~(below | above)
    k = np.clip(np.searchsorted(points, x_array, side="right") - 1, 0, max(n - 2, 0))
    if n == 1:
        k = np.zeros_like(k)
    k1 = np.minimum(k + 1, n - 1)
    width = points[k1] - points[k]
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(width > 0, (x_array - points[k]) / np.where(width > 0, width, 1), 0.0)
        slope = np.where(width > 0, (values[k1] - values[k]) / np.where(width > 0, width, 1), 0.0)
    at_right_end = inside & (x_array == points[-1])
    t = np.where(at_right_end & (width == 0), 1.0, t)
    gx = np.where(inside & ~at_right_end, g * slope, 0.0)
    gfp = np.zeros(n)
    np.add.at(gfp, k[inside], (g * (1 - t))[inside])
    np.add.at(gfp, k1[inside], (g * t)[inside])
    if left is None:
        gfp[0] += g[below].sum()
    if right is None:
        gfp[-1] += g[above].sum()
    gxp = None
    if np.asarray(xp_points).dtype.kind == "f":
        gxp = np.zeros(n)
        with np.errstate(invalid="ignore", divide="ignore"):
            d_lo = np.where(inside & (width > 0), g * slope * (t - 1), 0.0)
            d_hi = np.where(inside & (width > 0), -g * slope * t, 0.0)
        np.add.at(gxp, k, d_lo)
        np.add.at(gxp, k1, d_hi)
    gleft = None if left is None else float(g[below].sum())
    gright = None if right is None else float(g[above].sum())
    gx_out = gx if np.ndim(x) else float(gx)
    gfp = gfp.reshape(np.shape(fp))
    if isinstance(fp, (list, tuple)):
        gfp = gfp.tolist()
    if gxp is not None and isinstance(xp_points, (list, tuple)):
        gxp = gxp.tolist()
    return gx_out, gxp, gfp, gleft, gright


@rt.helper
def interp_jvp(x, xp_points, fp, left, right, t_x, t_fp, t_left, t_right, period=None):
    """The tangent of ``interp(x, xp, fp, left, right)`` along the tangents of ``x``,
    ``fp``, ``left`` and ``right`` (None: zero); ``xp``'s tangent is refused by the rule."""
    _refuse_period(period)
    x_array = np.asarray(x, dtype=np.float64)
    points = np.asarray(xp_points, dtype=np.float64)
    out = np.zeros(x_array.shape)
    if t_x is not None:
        values = np.asarray(fp, dtype=np.float64)
        n = points.size
        k = np.clip(np.searchsorted(points, x_array, side="right") - 1, 0, max(n - 2, 0))
        k1 = np.minimum(k + 1, n - 1)
        width = points[k1] - points[k]
        with np.errstate(invalid="ignore", divide="ignore"):
            slope = np.where(width > 0, (values[k1] - values[k]) / np.where(width > 0, width, 1), 0.0)
        inside = (x_array >= points[0]) & (x_array < points[-1])
        out = out + np.where(inside, slope, 0.0) * t_x
    if t_fp is not None:
        outside_left = 0.0 if left is not None else None
        outside_right = 0.0 if right is not None else None
        out = out + np.interp(x_array, points, np.asarray(t_fp, dtype=np.float64), outside_left,
                              outside_right)
    if t_left is not None:
        out = out + np.where(x_array < points[0], t_left, 0.0)
    if t_right is not None:
        out = out + np.where(x_array > points[-1], t_right, 0.0)
    return out if np.ndim(x) else float(out)


# ----- Products of matrices and numbers -----


@adjoint(np.linalg.multi_dot, sequences=("arrays",))
def multi_dot(dy, y, arrays, *, out=None):
    """The chain of ``matmul``s: each factor gets the product of the others around ``dy``."""
    return rt.multi_dot_vjp(dy, arrays)


@rt.helper
def multi_dot_vjp(dy, arrays):
    """One gradient per factor of ``multi_dot(arrays)`` (1-D ends as NumPy reads them)."""
    xp = namespace(dy, *arrays)
    mats = [xp.asarray(m) for m in arrays]
    first_vector = mats[0].ndim == 1
    last_vector = mats[-1].ndim == 1
    if first_vector:
        mats[0] = mats[0][None, :]
    if last_vector:
        mats[-1] = mats[-1][:, None]
    g = xp.asarray(dy)
    if first_vector and last_vector:
        g = g.reshape(1, 1)
    elif first_vector:
        g = g[None, :]
    elif last_vector:
        g = g[:, None]
    grads = []
    for i in range(len(mats)):
        left = mats[0]
        for m in mats[1:i]:
            left = left @ m
        right = mats[-1]
        for m in mats[i + 1:-1][::-1]:
            right = m @ right
        gi = g
        if i > 0:
            gi = left.T @ gi
        if i < len(mats) - 1:
            gi = gi @ right.T
        grads.append(gi)
    if first_vector:
        grads[0] = grads[0][0]
    if last_vector:
        grads[-1] = grads[-1][:, 0]
    return grads


@adjoint(math.dist, sequences=("p", "q"))
def math_dist(dy, y, p, q):
    """The Euclidean distance: ``(p - q) / dist``, 0 where the points coincide."""
    return rt.math_dist_vjp(dy, y, p, q), rt.math_dist_vjp(-dy, y, p, q)


@rt.helper
def math_dist_vjp(dy, y, p, q):
    """A list: the gradient of ``dist(p, q)`` for each coordinate of ``p``."""
    if y == 0:
        return [0.0 * dy for _ in p]
    return [dy * (a - b) / y for a, b in zip(p, q)]


# ----- Covariance, correlation -----


@adjoint(np.cov)
def cov(dy, y, m, y_observations=None, rowvar=True, bias=False, ddof=None):
    """``(dC + dC^T) Xc / (N - ddof)``, ``Xc`` the centred observations of ``m``'s variables
    and ``y``'s after them, as NumPy stacks them (weights refused)."""
    return (rt.cov_vjp(dy, m, y_observations, rowvar, bias, ddof),
            rt.cov_vjp(dy, m, y_observations, rowvar, bias, ddof, True), None, None, None)


def cov_rows(xp, v, rowvar, is_y=False):
    """``v`` as ``np.cov`` lays it out, variables in rows, and whether it was transposed
    (NumPy's rule: ``m`` unless 1-D, ``y`` unless a single row)."""
    x = xp.asarray(v)
    one = x.ndim < 2
    x = xp.reshape(x, (1, -1)) if one else x   # array(v, ndmin=2)
    flip = not rowvar and (x.shape[0] != 1 if is_y else not one)
    return (x.T if flip else x), flip


def cov_stacked(xp, m, y, rowvar, t_m=None, t_y=None):
    """``np.cov``'s observations: ``m``'s variables (rows), then ``y``'s; with the rows of
    the tangents ``t_m``, ``t_y`` stacked alike (None: zero). Returns the stack, the tangents'
    stack (None where both are None) and the count of ``m``'s rows."""
    x, _ = cov_rows(xp, m, rowvar)
    k = x.shape[0]
    parts, tangents = [x], [None if t_m is None else cov_rows(xp, xp.broadcast_to(
        xp.asarray(t_m), np.shape(m)), rowvar)[0]]
    if y is not None:
        parts.append(cov_rows(xp, y, rowvar, True)[0])
        tangents.append(None if t_y is None else cov_rows(xp, xp.broadcast_to(
            xp.asarray(t_y), np.shape(y)), rowvar, True)[0])
    stacked = xp.concatenate(parts, axis=0) if len(parts) > 1 else x
    if all(t is None for t in tangents):
        return stacked, None, k
    tangents = [xp.zeros(p.shape, dtype=np.result_type(p.dtype, np.float64)) if t is None else t
                for p, t in zip(parts, tangents)]
    return stacked, xp.concatenate(tangents, axis=0) if len(tangents) > 1 else tangents[0], k


@rt.helper
def cov_vjp(dy, m, y=None, rowvar=True, bias=False, ddof=None, of_y=False):
    """Gradient of ``cov(m, y, rowvar=, bias=, ddof=)`` for ``m`` (for ``y`` where ``of_y``)."""
    if of_y and y is None:
        return None
    xp = namespace(dy, m)
    x, _, k = cov_stacked(xp, m, y, rowvar)
    n = x.shape[1]
    ddof = (0 if bias else 1) if ddof is None else ddof
    centred = x - xp.mean(x, axis=1, keepdims=True)
    g = xp.reshape(xp.asarray(dy), (x.shape[0], x.shape[0]))
    grad = ((g + g.T) @ centred) / (n - ddof)
    v, part = (y, grad[k:]) if of_y else (m, grad[:k])
    return xp.reshape(part.T if cov_rows(xp, v, rowvar, of_y)[1] else part, np.shape(v))


@adjoint(np.corrcoef)
def corrcoef(dy, y, x, y_observations=None, rowvar=True):
    """``R = D^-1/2 C D^-1/2`` with ``D = diag(C)``: through ``cov``'s gradient; written
    with primitives, so it is differentiated again."""
    c = xp.atleast_2d(xp.cov(x, y_observations, rowvar=rowvar))
    d = xp.sqrt(xp.diagonal(c))
    scale = d[:, None] * d[None, :]
    g = xp.reshape(dy, c.shape)
    r = c / scale
    gc = g / scale - xp.diag(0.5 * (xp.sum(g * r, axis=1) + xp.sum(g * r, axis=0)) / xp.diagonal(c))
    return (rt.cov_vjp(gc, x, y_observations, rowvar),
            rt.cov_vjp(gc, x, y_observations, rowvar, False, None, True), None)


@adjoint(np.correlate)
def correlate(dy, y, a, v, mode="valid"):
    """``convolve(a, v[::-1])`` (real values): through ``convolve``'s gradient."""
    g = rt.convolve_vjp(dy, a, xp.flip(xp.asarray(v), 0), mode)
    return g[0], xp.flip(g[1], 0), None


# ----- Finite differences: np.gradient -----


@adjoint(np.gradient)
def gradient(dy, y, f, *varargs, axis=None, edge_order=1):
    """The transpose of ``gradient``'s stencils (central inside, one-sided at the edges),
    for uniform spacings (a number per axis); coordinate arrays are refused."""
    return (rt.gradient_vjp(dy, f, varargs, axis, edge_order),
            rt.gradient_step_vjp(dy, y, varargs, axis), None, None)


def _gradient_axes(ndim, axis):
    if axis is None:
        return tuple(range(ndim))
    return tuple(a % ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))


def _gradient_steps(ndim, spacings, axis):
    """The axes ``np.gradient`` differentiates along and each one's spacing (a number)."""
    from srcgrad.errors import UnsupportedError
    axes = _gradient_axes(ndim, axis)
    if len(spacings) == 0:
        steps = [1.0] * len(axes)
    elif len(spacings) == 1 and np.ndim(spacings[0]) == 0:
        steps = [spacings[0]] * len(axes)
    else:
        steps = list(spacings)
    if len(steps) != len(axes) or any(np.ndim(h) != 0 for h in steps):
        raise UnsupportedError("srcgrad: the gradient of np.gradient with coordinate arrays is not "
                               "supported (uniform spacings only: a number per axis)")
    return axes, steps


def _per_axis(values):
    """``np.gradient``'s result or cotangent as a list (one array per axis)."""
    return list(values) if isinstance(values, (list, tuple)) else [values]


@rt.helper
def gradient_vjp(dy, f, spacings, axis=None, edge_order=1):
    """Gradient of ``np.gradient(f, *spacings, axis=, edge_order=)`` for ``f``: each axis's
    cotangent (one array, or a list of them) sent back through its stencil. Linear in
    ``dy``; ``f`` gives only its shape."""
    xp = namespace(f)
    f = xp.asarray(f)
    axes, steps = _gradient_steps(f.ndim, spacings, axis)
    grad = xp.zeros(f.shape, dtype=float_dtype(f, xp))
    for d, ax, h in zip(_per_axis(dy), axes, steps):
        if d is not None:
            d = xp.moveaxis(xp.broadcast_to(xp.asarray(d), f.shape), ax, 0) / h
            grad = grad + xp.moveaxis(_stencil_transposed(xp, d, edge_order), 0, ax)
    return grad


def _stencil_transposed(xp, d, edge_order):
    """``np.gradient``'s stencil along axis 0, transposed, applied to ``d``: built from
    shifted copies (no writes through a view: Dask's would not reach the result)."""
    n = d.shape[0]

    def placed(values, start):
        """``values`` (along axis 0) at rows ``start...``, zeros elsewhere."""
        widths = [(start, n - start - values.shape[0])] + [(0, 0)] * (d.ndim - 1)
        return xp.pad(values, widths)

    inner = d[1:-1] / 2
    out = placed(inner, 2) - placed(inner, 0)
    first, last = d[:1], d[-1:]
    if edge_order == 1:
        return out + placed(first, 1) - placed(first, 0) + placed(last, n - 1) - placed(last, n - 2)
    return (out - 1.5 * placed(first, 0) + 2.0 * placed(first, 1) - 0.5 * placed(first, 2)
            + 1.5 * placed(last, n - 1) - 2.0 * placed(last, n - 2) + 0.5 * placed(last, n - 3))


@rt.helper
def gradient_step_vjp(dy, y, spacings, axis=None):
    """Gradients of ``y = np.gradient(f, *spacings, axis=)`` for the spacings (a list):
    ``-<dy, y> / h`` of the axes each one spaces."""
    xp = namespace(*_per_axis(y))
    results = _per_axis(y)
    axes, steps = _gradient_steps(xp.ndim(results[0]), spacings, axis)
    by_step = [0.0] * len(axes)
    for k, (d, h) in enumerate(zip(_per_axis(dy), steps)):
        if d is not None:
            by_step[k] = -xp.sum(xp.asarray(d) * results[k]) / h
    if len(spacings) == 1 and len(axes) > 1:
        by_step = [builtins.sum(by_step)]
    return by_step[:len(spacings)]


returns_sequence(rt.gradient_step_vjp, rt.trapezoid_vjp, rt.interp_vjp, rt.multi_dot_vjp,
                 rt.math_dist_vjp)
