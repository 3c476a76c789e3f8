"""Tangent (JVP) rules written by hand for sorting, linear algebra, polynomials, fills
and Python's math builtins: the primitives that sg.grad supports and forward mode
refused most often over the catalogue and the corpus (issue 14).

The contract is rules/jvp.py's: ``(y, *params, *, t_<param>...)`` returning the output's
tangent, each argument's contribution a term of its own. Each rule follows its adjoint's
conventions (a stable argsort for ``sort``, a symmetric tangent for ``cholesky``, ties
of ``ptp`` shared evenly), so that forward and reverse mode give one derivative;
tests/test_tangent_rules.py checks every one against central finite differences.
"""

import builtins
import math

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Attribute, Method, linear, tangent
from srcgrad.rules.numpy_linalg import power_terms
from srcgrad.runtime.arrays import float_dtype, is_array, namespace, shape_tuple

xp = None  # placeholder: the array namespace, bound in generated code


# ----- Sorting and extremes -----


@tangent(np.sort)
def sort(y, a, axis=-1, kind=None, *, t_a):
    return rt.sort_jvp(t_a, a, axis)


@rt.helper
def sort_jvp(t, a, axis):
    """The tangent of ``np.sort(a, axis)``: ``t`` permuted as ``a`` is (a stable argsort,
    as the adjoint's)."""
    xp_ = namespace(t, a)
    t = xp_.broadcast_to(xp_.asarray(t), rt.shape_of(a))
    if axis is None:
        return xp_.take(xp_.ravel(t), xp_.argsort(xp_.ravel(a), kind="stable"))
    return xp_.take_along_axis(t, xp_.argsort(a, axis=axis, kind="stable"), axis=axis)


@tangent(builtins.sorted)
def builtin_sorted(y, iterable, *, key=None, reverse=False, t_iterable):
    return rt.sorted_jvp(t_iterable, iterable, key, reverse)


@rt.helper
def sorted_jvp(t, iterable, key, reverse):
    """The tangent of ``sorted(iterable)``: the items' tangents in the sorted order
    (``sorted`` is stable, so ties keep their order in both; a dict's keys have none)."""
    items = list(iterable)
    order = builtins.sorted(range(len(items)), key=lambda i: (key or (lambda v: v))(items[i]),
                            reverse=reverse)
    tangents = rt.list_jvp(t, iterable, items)
    return [tangents[i] for i in order]


@tangent(np.ptp)
def ptp(y, a, axis=None, *, keepdims=False, t_a):
    hi = rt.tie_share(a == rt.unreduce_like(xp.max(a, axis=axis, keepdims=keepdims), a, axis, keepdims), axis, a)
    lo = rt.tie_share(a == rt.unreduce_like(xp.min(a, axis=axis, keepdims=keepdims), a, axis, keepdims), axis, a)
    return xp.sum(t_a * (hi - lo), axis=axis, keepdims=keepdims)


@tangent(np.average)
def average(y, a, axis=None, weights=None, *, keepdims=False, t_a, t_weights):
    w = rt.average_weights(a, weights, axis)
    total = xp.sum(w, axis=axis, keepdims=keepdims)
    return xp.sum(t_a * w, axis=axis, keepdims=keepdims) / total + xp.sum(
        rt.average_weights(a, t_weights, axis) * (a - rt.unreduce_like(y, a, axis, keepdims)),
        axis=axis, keepdims=keepdims) / total


# ----- Real parts, fills and cleaning (linear) -----


linear(np.real, "val")
linear(np.real_if_close, "a", no_tangent=("tol",))
linear((np.conjugate, np.conj), "x", call="xp.conj")
linear((Method("conj"), Method("conjugate")), "self", call="rt.conj_method")


@rt.helper
def conj_method(a):
    """``a.conj()``: a real array's is ``a`` itself (no copy), as the primal's is, so a
    write into ``y = x.conj()`` reaches ``x``'s tangent as it reaches ``x``."""
    return a.conj() if is_array(a) else np.conj(a)


@tangent(np.full)
def full(y, shape, fill_value, dtype=None, *, t_fill_value):
    return rt.fill_jvp(t_fill_value, y)


@tangent(np.full_like, no_tangent=("a",))
def full_like(y, a, fill_value, dtype=None, *, t_fill_value):
    return rt.fill_jvp(t_fill_value, y)


@rt.helper
def fill_jvp(t, y):
    """The tangent of ``y = np.full(shape, v)`` (or ``full_like``) from ``v``'s: spread to
    ``y``'s shape; zeros where ``y`` holds integers (piecewise constant)."""
    xp_ = namespace(t, y)
    if y.dtype.kind not in "fc":
        return xp_.zeros(y.shape)
    return xp_.broadcast_to(xp_.asarray(t, dtype=y.dtype), y.shape).copy()


@rt.helper
def pad_values_jvp(t, array, pad_width):
    """The tangent of ``np.pad(array, pad_width, constant_values=c)`` along ``c``'s."""
    xp_ = namespace(array)
    return xp_.pad(xp_.zeros(rt.shape_of(array)), pad_width, constant_values=t)


linear(np.select, "choicelist", "default", no_tangent=("condlist",))
linear(np.meshgrid, "xi")
linear(Attribute("real"), "self", call="xp.real")


@tangent(Method("item"), no_tangent=("args",))
def item_method(y, self, *args, t_self):
    return rt.item_jvp(t_self, args)


@rt.helper
def item_jvp(t, args):
    """The tangent of ``x.item(*args)``: the tangent's item, a Python float."""
    return float(t.item(*args)) if hasattr(t, "item") else float(t)   # CuPy too: no np.asarray


@tangent(np.nan_to_num)
def nan_to_num(y, x, copy=True, nan=0.0, posinf=None, neginf=None, *, t_x, t_nan, t_posinf, t_neginf):
    return xp.where(xp.isfinite(x), t_x, 0.0) + xp.where(xp.isnan(x), t_nan, 0.0) + xp.where(
        xp.isposinf(x), t_posinf, 0.0) + xp.where(xp.isneginf(x), t_neginf, 0.0)


# ----- Products and polynomials -----


@tangent(np.convolve)
def convolve(y, a, v, mode="full", *, t_a, t_v):
    return xp.convolve(t_a, v, mode) + xp.convolve(a, t_v, mode)


@tangent(np.polyval)
def polyval(y, p, x, *, t_p, t_x):
    return xp.polyval(t_p, x) + xp.polyval(rt.polyder(p), x) * t_x


@tangent(np.linalg.matrix_power, no_tangent=("n",))
def matrix_power(y, a, n, *, t_a):
    return rt.matrix_power_jvp(t_a, a, n)


@rt.helper
def matrix_power_jvp(t, a, n):
    """The tangent of ``matrix_power(a, n)``: ``sum_i B^i dB B^(k-1-i)`` for ``B = a``
    (``n > 0``) or ``B = inv(a)``, ``dB = -B t B`` (``n < 0``), ``k = |n|``."""
    xp_ = namespace(t, a)
    if n == 1 and is_array(t) and t.shape == a.shape:
        return t   # NumPy returns a itself: a write into the result reaches a, and t
    t = xp_.broadcast_to(xp_.asarray(t), a.shape)
    if n == 0:
        return xp_.zeros(a.shape, dtype=np.result_type(a.dtype, np.float64))
    base = a if n > 0 else xp_.linalg.inv(a)
    dbase = t if n > 0 else -xp_.matmul(xp_.matmul(base, t), base)
    return power_terms(base, dbase, abs(n), xp_)


# ----- Linear algebra -----


@tangent(np.linalg.slogdet)
def slogdet(y, a, *, t_a):
    return rt.slogdet_jvp(t_a, a, y)


@rt.helper
def slogdet_jvp(t, a, y):
    """``(0, trace(inv(a) t))``: the sign is piecewise constant."""
    xp_ = namespace(t, a)
    dlog = xp_.sum(xp_.swapaxes(xp_.linalg.inv(a), -1, -2) * t, axis=(-2, -1))
    return (xp_.zeros(rt.shape_of(y[0])), dlog)


@tangent(np.linalg.cholesky)
def cholesky(y, a, *, t_a):
    return rt.cholesky_jvp(t_a, y)


@rt.helper
def cholesky_jvp(t, L):
    """``dL = L Phi(L^-1 S L^-T)`` with ``S`` the symmetric part of ``t`` (the adjoint,
    like PyTorch's, takes ``a`` symmetric) and ``Phi`` the lower triangle, its diagonal
    halved."""
    xp_ = namespace(t, L)
    s = 0.5 * (t + xp_.swapaxes(t, -1, -2))
    linv = xp_.linalg.inv(L)
    inner = xp_.matmul(xp_.matmul(linv, s), xp_.swapaxes(linv, -1, -2))
    phi = xp_.tril(inner) - 0.5 * inner * xp_.eye(L.shape[-1], dtype=inner.dtype)
    return xp_.matmul(L, phi)


@tangent(np.linalg.eigvalsh, no_tangent=("UPLO",))
def eigvalsh(y, a, UPLO="L", *, t_a):
    return rt.eigh_jvp(t_a, a, UPLO)[0]


@tangent(np.linalg.eigh, no_tangent=("UPLO",))
def eigh(y, a, UPLO="L", *, t_a):
    return rt.eigh_jvp(t_a, a, UPLO)


@rt.helper
def eigh_jvp(t, a, UPLO="L"):
    """``(dw, dV)`` of ``w, V = eigh(a)`` along the symmetric part of ``t`` (distinct
    eigenvalues assumed, as the adjoint does): ``dw = diag(V^T S V)``,
    ``dV = V (F * (V^T S V))`` with ``F_ij = 1 / (w_j - w_i)`` off the diagonal."""
    xp_ = namespace(t, a)
    w, v = xp_.linalg.eigh(a, UPLO)
    s = 0.5 * (t + xp_.swapaxes(t, -1, -2))
    m = xp_.matmul(xp_.matmul(xp_.swapaxes(v, -1, -2), s), v)
    dw = xp_.diagonal(m, axis1=-2, axis2=-1)
    gaps = w[..., None, :] - w[..., :, None]
    n = w.shape[-1]
    eye = xp_.eye(n, dtype=bool)
    f = xp_.where(eye, 0.0, 1.0 / xp_.where(eye, 1.0, gaps))
    return (dw, xp_.matmul(v, f * m))


@tangent(np.linalg.qr, no_tangent=("mode",))
def qr(y, a, mode="reduced", *, t_a):
    return rt.qr_jvp(t_a, a, mode)


@rt.helper
def qr_jvp(t, a, mode="reduced"):
    """``(dQ, dR)`` of ``Q, R = qr(a)`` along ``t`` (``dR`` for mode "r"): with
    ``C = Q^T t R^-1`` and ``W = tril(C, -1) - tril(C, -1)^T``, ``dQ = Q (W - C) + t R^-1``
    and ``dR = (C - W) R``."""
    from srcgrad.rules.numpy_linalg import _qr_parts
    xp_ = namespace(t, a)
    a = xp_.asarray(a)
    q, r = _qr_parts(xp_, a, mode)
    t = xp_.broadcast_to(xp_.asarray(t), a.shape)
    t_rinv = xp_.swapaxes(xp_.linalg.solve(xp_.swapaxes(r, -1, -2), xp_.swapaxes(t, -1, -2)), -1, -2)
    c = xp_.matmul(xp_.swapaxes(q, -1, -2), t_rinv)
    lower = xp_.tril(c, -1)
    w = lower - xp_.swapaxes(lower, -1, -2)
    dr = xp_.matmul(c - w, r)
    if mode == "r":
        return dr
    return (xp_.matmul(q, w - c) + t_rinv, dr)


@tangent(np.linalg.lstsq, no_tangent=("rcond",))
def lstsq(y, a, b, rcond=None, *, t_a, t_b):
    return rt.lstsq_jvp(t_a, t_b, a, b, y)


@rt.helper
def lstsq_jvp(t_a, t_b, a, b, y):
    """``(dx, dresiduals, None, ds)``: ``dx = (a^T a)^-1 (t_a^T r + a^T (t_b - t_a x))``,
    ``dresiduals = 2 r . (t_b - t_a x)`` per column (``r = b - a x``)."""
    from srcgrad.rules.numpy_linalg import _lstsq_parts
    xp_ = namespace(a, b)
    x, r, solve = _lstsq_parts(xp_, a, b, y)
    a = xp_.asarray(a)
    t_a = xp_.zeros(a.shape) if t_a is None else xp_.asarray(t_a)
    t_b = xp_.zeros(np.shape(b)) if t_b is None else xp_.asarray(t_b)
    moved = t_b - xp_.matmul(t_a, x)
    dx = solve(xp_.matmul(t_a.T, r) + xp_.matmul(a.T, moved))
    dres = xp_.reshape(2 * xp_.sum(r * moved, axis=0), np.shape(y[1])) if np.size(y[1]) \
        else xp_.zeros(np.shape(y[1]))
    return (dx, dres, None, rt.svd_jvp(t_a, a, None, False, False))


# ----- Python's builtins -----


@tangent(builtins.pow)
def builtin_pow(y, base, exp, mod=None, *, t_base, t_exp):
    return (t_base * exp * rt.power(base + ((exp == 0) & (base == 0)), exp - 1)
            + t_exp * y * rt.log_or_zero(base))


@tangent(builtins.divmod, np.divmod)
def divmod(y, x1, x2, *, t_x1, t_x2):
    return rt.divmod_jvp(t_x1, t_x2, y)


@rt.helper
def divmod_jvp(t1, t2, y):
    """``(0, t1 - q t2)``: the quotient ``q`` is piecewise constant, the remainder
    ``x1 - q x2``."""
    q = y[0]
    r = (0.0 if t1 is None else t1) - (0.0 if t2 is None else q * t2)
    return (rt.tangent_zero(q), rt.tangent_like(r, y[1]))


@tangent(math.fsum)
def math_fsum(y, seq, *, t_seq):
    return rt.tangent_sum(t_seq)


@tangent(math.prod)
def math_prod(y, iterable, *, start=1, t_iterable, t_start):
    return rt.prod_jvp(iterable, start, t_iterable, t_start)


@rt.helper
def prod_jvp(items, start, tangents, t_start):
    """``sum_k t_k * prod(others) + t_start * prod(items)``, for ``math.prod``."""
    items = list(items)
    out = 0.0 if t_start is None else t_start * rt.prod_of_others(items, 1, None)
    for k, t in enumerate(tangents if tangents is not None else ()):
        if t is not None:
            out = out + t * rt.prod_of_others(items, start, k)
    return out


@tangent(math.hypot)
def math_hypot(y, *coordinates, t_coordinates):
    return rt.hypot_jvp(y, coordinates, t_coordinates)


@rt.helper
def hypot_jvp(y, coordinates, tangents):
    """``sum(c * dc) / y`` (0 at the origin, as the adjoint)."""
    if y == 0:
        return 0.0
    return builtins.sum(c * t for c, t in zip(coordinates, tangents) if t is not None) / y


# ----- Order statistics, NaN-ignoring scans, integrals, interpolation (numpy_statistics.py) -----


@tangent(np.median)
def median(y, a, axis=None, *, keepdims=False, t_a):
    return rt.quantile_jvp(t_a, a, 0.5, axis, keepdims, False)


@tangent(np.nanmedian)
def nanmedian(y, a, axis=None, *, keepdims=False, t_a):
    return rt.quantile_jvp(t_a, a, 0.5, axis, keepdims, True)


@tangent(np.quantile)
def quantile(y, a, q, axis=None, *, method="linear", keepdims=False, t_a):
    """A ``q`` that carries a tangent is refused (no ``t_q``)."""
    return rt.quantile_jvp(t_a, a, q, axis, keepdims, False)


@tangent(np.nanquantile)
def nanquantile(y, a, q, axis=None, *, method="linear", keepdims=False, t_a):
    return rt.quantile_jvp(t_a, a, q, axis, keepdims, True)


@tangent(np.percentile)
def percentile(y, a, q, axis=None, *, method="linear", keepdims=False, t_a):
    return rt.quantile_jvp(t_a, a, q, axis, keepdims, False, 100)


@tangent(np.nanpercentile)
def nanpercentile(y, a, q, axis=None, *, method="linear", keepdims=False, t_a):
    return rt.quantile_jvp(t_a, a, q, axis, keepdims, True, 100)


@tangent(np.partition)
def partition(y, a, kth, axis=-1, kind="introselect", *, t_a):
    return rt.partition_jvp(t_a, a, kth, axis)


@tangent(np.nanmean)
def nanmean(y, a, axis=None, *, keepdims=False, t_a):
    """The NaN entries are left out: their tangent (``nan * 0`` upstream) too."""
    valid = xp.logical_not(xp.isnan(a))
    return xp.sum(xp.where(valid, t_a, 0.0), axis=axis, keepdims=keepdims) / xp.sum(
        valid, axis=axis, keepdims=keepdims)


@tangent(np.nanvar)
def nanvar(y, a, axis=None, *, ddof=0, keepdims=False, t_a):
    valid = xp.logical_not(xp.isnan(a))
    d = xp.where(valid, a - xp.nanmean(a, axis=axis, keepdims=True), 0.0)
    n = xp.sum(valid, axis=axis, keepdims=keepdims)
    return 2 * xp.sum(d * xp.where(valid, t_a, 0.0), axis=axis, keepdims=keepdims) / xp.maximum(n - ddof, 0)


@tangent(np.nanstd)
def nanstd(y, a, axis=None, *, ddof=0, keepdims=False, t_a):
    """0 where the std is 0, as the adjoint."""
    valid = xp.logical_not(xp.isnan(a))
    d = xp.where(valid, a - xp.nanmean(a, axis=axis, keepdims=True), 0.0)
    s = y * xp.maximum(xp.sum(valid, axis=axis, keepdims=keepdims) - ddof, 0)
    return xp.sum(d * xp.where(valid, t_a, 0.0), axis=axis, keepdims=keepdims) / xp.where(s == 0, xp.inf, s)


@tangent(np.nanprod)
def nanprod(y, a, axis=None, *, keepdims=False, t_a):
    valid = xp.logical_not(xp.isnan(a))
    return xp.sum(xp.where(valid, t_a, 0.0) * rt.prod_others(xp.where(valid, a, 1.0), axis),
                  axis=axis, keepdims=keepdims)


@tangent(np.nancumsum)
def nancumsum(y, a, axis=None, *, t_a):
    return xp.cumsum(xp.where(xp.isnan(a), 0.0, t_a), axis)


@tangent(np.nancumprod)
def nancumprod(y, a, axis=None, *, t_a):
    return rt.cumprod_jvp(xp.where(xp.isnan(a), 1.0, a), xp.where(xp.isnan(a), 0.0, t_a), axis)


@tangent(np.trapezoid)
def trapezoid(y, a, x=None, dx=1.0, axis=-1, *, t_a, t_x, t_dx):
    """Bilinear in (``a``, ``x``) and in (``a``, ``dx``): one term per tangent."""
    return (xp.trapezoid(t_a, x, dx, axis) + xp.trapezoid(a, t_x, 1.0, axis)
            + xp.trapezoid(a, None, t_dx, axis))


@tangent(np.interp)
def interp(y, x, xp_points, fp, left=None, right=None, period=None, *, t_x, t_fp, t_left, t_right):
    """A tangent of the sample points ``xp`` is refused (no ``t_xp_points``)."""
    return rt.interp_jvp(x, xp_points, fp, left, right, t_x, t_fp, t_left, t_right, period)


@tangent(np.linalg.multi_dot)
def multi_dot(y, arrays, *, out=None, t_arrays):
    return rt.multi_dot_jvp(arrays, t_arrays)


@rt.helper
def multi_dot_jvp(arrays, tangents):
    """One ``multi_dot`` per factor carrying a tangent, the tangent in its place."""
    total = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        term = np.linalg.multi_dot(list(arrays[:i]) + [t] + list(arrays[i + 1:]))
        total = term if total is None else total + term
    return 0.0 if total is None else total


@tangent(math.dist)
def math_dist(y, p, q, *, t_p, t_q):
    return rt.math_dist_jvp(y, p, q, t_p, t_q)


@rt.helper
def math_dist_jvp(y, p, q, t_p, t_q):
    """``sum((p - q) * (dp - dq)) / y`` (0 where the points coincide, as the adjoint)."""
    if y == 0:
        return 0.0
    t_p = t_p if t_p is not None else [None] * len(p)
    t_q = t_q if t_q is not None else [None] * len(q)
    total = 0.0
    for a, b, ta, tb in zip(p, q, t_p, t_q):
        total = total + (a - b) * ((0.0 if ta is None else ta) - (0.0 if tb is None else tb))
    return total / y


@tangent(np.cov)
def cov(y, m, y_observations=None, rowvar=True, bias=False, ddof=None, *, t_m, t_y_observations):
    return rt.cov_jvp(t_m, m, rowvar, bias, ddof, y_observations, t_y_observations)


@rt.helper
def cov_jvp(t, m, rowvar=True, bias=False, ddof=None, y=None, t_y=None):
    """``(T Xc^T + Xc T^T) / (N - ddof)`` with ``T`` the centred tangent of the observations
    (``m``'s variables, then ``y``'s); None is a zero tangent."""
    from srcgrad.rules.numpy_statistics import cov_stacked
    xp_ = namespace(*[v for v in (t, m, t_y, y) if v is not None])
    x, t, _ = cov_stacked(xp_, m, y, rowvar, t, t_y)
    if t is None:
        t = xp_.zeros(x.shape)
    ddof = (0 if bias else 1) if ddof is None else ddof
    xc = x - xp_.mean(x, axis=1, keepdims=True)
    tc = t - xp_.mean(t, axis=1, keepdims=True)
    out = (tc @ xc.T + xc @ tc.T) / (x.shape[1] - ddof)
    return out[0, 0] if out.shape == (1, 1) else out


@tangent(np.corrcoef)
def corrcoef(y, x, y_observations=None, rowvar=True, *, t_x, t_y_observations):
    return rt.corrcoef_jvp(t_x, x, y, rowvar, y_observations, t_y_observations)


@rt.helper
def corrcoef_jvp(t, x, r, rowvar=True, obs=None, t_obs=None):
    """``dC / (d_i d_j) - R (dC_ii / C_ii + dC_jj / C_jj) / 2``."""
    xp_ = namespace(*[v for v in (t, x, t_obs, obs) if v is not None])
    c = xp_.atleast_2d(xp_.cov(x, obs, rowvar=rowvar))
    dc = xp_.atleast_2d(cov_jvp(t, x, rowvar, False, None, obs, t_obs))
    d = xp_.sqrt(xp_.diagonal(c))
    ratio = xp_.diagonal(dc) / xp_.diagonal(c)
    out = dc / d[:, None] / d[None, :] - 0.5 * xp_.atleast_2d(r) * (ratio[:, None] + ratio[None, :])
    return xp_.reshape(out, np.shape(r))


@tangent(np.correlate)
def correlate(y, a, v, mode="valid", *, t_a, t_v):
    return xp.correlate(t_a, v, mode) + xp.correlate(a, t_v, mode)


linear(np.add.reduce, "array", call="xp.add.reduce")
linear(np.add.accumulate, "array", call="xp.add.accumulate")


@tangent(np.maximum.accumulate, np.minimum.accumulate)
def extremum_accumulate(y, array, axis=0, dtype=None, *, t_array):
    return rt.running_extremum_jvp(t_array, array, y, axis)

linear(np.add.outer, "A", "B", call="xp.add.outer")
linear(np.subtract.outer, "A", "B", call="xp.subtract.outer")


@tangent(np.multiply.reduce)
def multiply_reduce(y, array, axis=0, dtype=None, *, keepdims=False, t_array):
    return xp.sum(t_array * rt.prod_others(array, axis), axis=axis, keepdims=keepdims)


@tangent(np.multiply.outer)
def multiply_outer(y, A, B, *, t_A, t_B):
    return xp.multiply.outer(t_A, B) + xp.multiply.outer(A, t_B)


@tangent(np.linalg.svd, no_tangent=("full_matrices", "compute_uv", "hermitian"))
def svd(y, a, full_matrices=True, compute_uv=True, hermitian=False, *, t_a):
    return rt.svd_jvp(t_a, a, y, full_matrices, compute_uv)


@rt.helper
def svd_jvp(t, a, y, full_matrices=True, compute_uv=True):
    """``dS = diag(J)``, ``dU = U (F * (J S + S J^T)) + (I - U U^T) dA V / S``,
    ``dV = V (F * (S J + J^T S)) + (I - V V^T) dA^T U / S`` (``J = U^T dA V``,
    ``F_ij = 1 / (s_j^2 - s_i^2)``); real ``a``."""
    xp_ = namespace(t, a)
    a = xp_.asarray(a)
    m, n = a.shape[-2:]
    if compute_uv and full_matrices and m != n:
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            "srcgrad: the tangent of np.linalg.svd with full_matrices=True of a non-square "
            "matrix is not supported (the extra singular vectors are not unique)",
            hint="Pass full_matrices=False, or compute_uv=False for the singular values alone.")
    if compute_uv and y is not None:   # the primal's own vectors (hermitian=True flips signs)
        u, s, vh = y[0], y[1], y[2]
    else:
        u, s, vh = xp_.linalg.svd(a, full_matrices=False)
    t = xp_.broadcast_to(xp_.asarray(t), a.shape)

    def tr(x):
        return xp_.swapaxes(x, -1, -2)

    v = tr(vh)
    j = xp_.matmul(tr(u), xp_.matmul(t, v))
    ds = xp_.diagonal(j, axis1=-2, axis2=-1)
    if not compute_uv:
        return ds
    k = s.shape[-1]
    eye = xp_.eye(k, dtype=bool)
    f = xp_.where(eye, 0.0, 1.0 / xp_.where(eye, 1.0, s[..., None, :] ** 2 - s[..., :, None] ** 2))
    sj = s[..., :, None] * j            # S J
    js = j * s[..., None, :]            # J S
    du = xp_.matmul(u, f * (js + tr(js))) + xp_.matmul(
        t - xp_.matmul(u, xp_.matmul(tr(u), t)), v) / s[..., None, :]
    dv = xp_.matmul(v, f * (sj + tr(sj))) + xp_.matmul(
        tr(t) - xp_.matmul(v, xp_.matmul(vh, tr(t))), u) / s[..., None, :]
    return (du, ds, tr(dv))


@tangent(np.linalg.pinv, no_tangent=("rcond", "hermitian"))
def pinv(y, a, rcond=None, hermitian=False, *, t_a):
    return rt.pinv_jvp(t_a, a, y)


@rt.helper
def pinv_jvp(t, a, p):
    """``-P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P`` (constant rank)."""
    xp_ = namespace(t, a)
    a = xp_.asarray(a)
    t = xp_.broadcast_to(xp_.asarray(t), a.shape)

    def tr(x):
        return xp_.swapaxes(x, -1, -2)

    m, n = a.shape[-2:]
    left = xp_.eye(m, dtype=a.dtype) - xp_.matmul(a, p)
    right = xp_.eye(n, dtype=a.dtype) - xp_.matmul(p, a)
    return (-xp_.matmul(p, xp_.matmul(t, p)) + xp_.matmul(xp_.matmul(p, tr(p)), xp_.matmul(tr(t), left))
            + xp_.matmul(right, xp_.matmul(tr(t), xp_.matmul(tr(p), p))))


@tangent(Method("tolist"))
def tolist_method(y, self, *, t_self):
    return rt.tolist_jvp(t_self, self)


@rt.helper
def tolist_jvp(t, a):
    """The tangent of ``x.tolist()``: the tangent as the same nested list."""
    xp_ = namespace(a)
    return xp_.broadcast_to(xp_.asarray(t, dtype=float_dtype(a, xp_)), shape_tuple(a)).tolist()


@tangent(np.gradient)
def gradient(y, f, *varargs, axis=None, edge_order=1, t_f, t_varargs):
    return rt.gradient_jvp(y, f, varargs, axis, edge_order, t_f, t_varargs)


@rt.helper
def gradient_jvp(y, f, spacings, axis, edge_order, t_f, t_spacings):
    """The tangent of ``y = np.gradient(f, *spacings, axis=, edge_order=)``: linear in
    ``f``, and each axis's result ``S f / h`` moves by ``-y * t_h / h`` with its (uniform)
    spacing ``h``; coordinate arrays carrying a tangent are refused."""
    from srcgrad.rules.numpy_statistics import _gradient_steps, _per_axis
    xp_ = namespace(f)
    results = _per_axis(y)
    if t_f is not None:
        out = _per_axis(xp_.gradient(xp_.asarray(t_f), *spacings, axis=axis, edge_order=edge_order))
    else:
        out = [xp_.zeros(xp_.shape(r)) for r in results]
    moving = list(t_spacings) if isinstance(t_spacings, (list, tuple)) else []
    if any(t is not None and not rt.is_zero_grad(t) for t in moving):
        _, steps = _gradient_steps(xp_.ndim(f), spacings, axis)
        per_axis = [moving[0 if len(spacings) == 1 else k] for k in range(len(steps))]
        out = [o if t is None else o - r * t / h for o, r, t, h in zip(out, results, per_axis, steps)]
    return out if isinstance(y, (list, tuple)) else out[0]
