"""Adjoint rules of NumPy's reductions, scans, sorting and gathering.

Reductions take ``axis`` (None, an int, a negative int or a tuple) and
``keepdims``; the gradient is broadcast back with ``rt.unreduce``. Parameters
that NumPy accepts positionally but srcgrad does not support (``dtype``,
``out``) are left out, so ``keepdims`` and ``ddof`` are keyword-only here: a
call that passes them positionally is refused instead of bound wrongly.

Ties: the gradient of ``max``/``min``/``amax``/``amin``/``nanmax``/``nanmin``
(and of ``ptp``) is split EVENLY among all entries equal to the extremum of
their reduction group, deterministically (the mean of the subgradients of the
tied entries, which is also what PyTorch's ``amax`` does). ``prod`` and
``cumprod`` are exact with zeros (no division by the input). ``std`` is 0
where the std is 0 (the convention of ``norm`` at 0); an empty ``mean`` gives
an empty gradient.
"""

import builtins

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Attribute, Method, adjoint, nondifferentiable, tangent
from srcgrad.runtime.arrays import (float_dtype, grad_zeros, is_array, namespace, normalize_axis,
                                    scatter_add, shape_tuple)

xp = None  # placeholder: the array namespace, bound in generated code

# Only results that are truly constant belong here (indices, counts, booleans).
# np.unique's values are entries of x (srcgrad/inlined.py gathers them), and
# np.histogram's bin edges move with x's range (no rule: refused where they need a
# gradient, not silently given a zero, issue 11).
nondifferentiable(
    np.argmax, np.argmin, np.argsort, np.argwhere, np.nanargmax, np.nanargmin,
    np.count_nonzero, np.nonzero, np.flatnonzero, np.searchsorted, np.digitize,
    np.all, np.any, np.array_equal,
    np.array_equiv, np.allclose, np.isclose, np.shape, np.ndim, np.size,
    np.lexsort, np.result_type, np.iscomplexobj, np.isrealobj, np.isscalar,
    Method("argmax"), Method("argmin"), Method("argsort"), Method("nonzero"),
    Method("any"), Method("all"), Attribute("shape"), Attribute("ndim"),
    Attribute("dtype"), Attribute("size"), Attribute("itemsize"),
    Attribute("nbytes"), Attribute("strides"), Attribute("flags"),
)

# ----- Sums and means -----


@adjoint(np.bincount)
def bincount(dy, y, x, weights=None, minlength=0):
    """A sum of ``weights`` by bin: each weight gets its bin's gradient (counts, without
    ``weights``, carry none: their arguments are integers)."""
    return None, rt.cast_like(dy[x], weights), None



@adjoint(np.sum)
def sum(dy, y, a, axis=None, dtype=None, *, keepdims=False, initial=None, where=True):
    """``where=`` leaves entries out (no gradient); ``initial`` is added to each result."""
    return (rt.reduction_cast(rt.where_mask(rt.unreduce(dy, a, axis, keepdims), where), dtype, a),
            None, None, None, rt.unbroadcast(dy, initial), None)


@adjoint(Method("sum"))
def sum_method(dy, y, self, axis=None, dtype=None, *, keepdims=False, initial=None, where=True):
    """``where=`` leaves entries out (no gradient); ``initial`` is added to each result."""
    return (rt.reduction_cast(rt.where_mask(rt.unreduce(dy, self, axis, keepdims), where), dtype, self),
            None, None, None, rt.unbroadcast(dy, initial), None)


@rt.helper
def where_mask(g, where):
    """A reduction's gradient ``g`` kept where its ``where=`` mask is True, else 0."""
    if where is True:
        return g
    return g * namespace(g, where).asarray(where)


@rt.helper
def reduction_cast(g, dtype, a):
    """A reduction's gradient back in ``a``'s dtype when ``dtype=`` computed it in another
    (0 through an integer dtype: the cast's derivative, as ``astype``)."""
    if dtype is None:
        return g
    return rt.cast_like(rt.dtype_grad(g, dtype, a), a)


@rt.helper
def where_size(a, axis, where):
    """How many entries a ``mean(a, axis, where=where)`` averages, broadcast against ``a``."""
    if where is True:
        return rt.reduction_size(a, axis, 1)
    xp = namespace(a, where)
    count = xp.sum(xp.broadcast_to(xp.asarray(where), shape_tuple(a)), axis=axis, keepdims=True)
    return xp.maximum(count, 1)


@adjoint(np.nansum)
def nansum(dy, y, a, axis=None, *, keepdims=False):
    """NaN entries are treated as zeros: they get no gradient."""
    return rt.unreduce(dy, a, axis, keepdims) * xp.logical_not(xp.isnan(a))


@adjoint(np.mean)
def mean(dy, y, a, axis=None, dtype=None, *, keepdims=False, where=True):
    """An empty reduction (a NaN mean) gives its empty input an empty gradient."""
    g = rt.where_mask(rt.unreduce(dy, a, axis, keepdims), where) / rt.where_size(a, axis, where)
    return rt.reduction_cast(g, dtype, a)


@adjoint(Method("mean"))
def mean_method(dy, y, self, axis=None, dtype=None, *, keepdims=False, where=True):
    """An empty reduction (a NaN mean) gives its empty input an empty gradient."""
    g = rt.where_mask(rt.unreduce(dy, self, axis, keepdims), where) / rt.where_size(self, axis, where)
    return rt.reduction_cast(g, dtype, self)


@adjoint(np.nanmean)
def nanmean(dy, y, a, axis=None, *, keepdims=False):
    """The mean of the non-NaN entries: NaN entries get no gradient."""
    valid = xp.logical_not(xp.isnan(a))
    return rt.unreduce(dy, a, axis, keepdims) * valid / xp.sum(valid, axis=axis, keepdims=True)


@adjoint(np.average)
def average(dy, y, a, axis=None, weights=None, *, keepdims=False):
    w = rt.average_weights(a, weights, axis)
    g = rt.unreduce(dy, a, axis, keepdims) / xp.sum(w, axis=axis, keepdims=True)
    return (g * w, None,
            rt.weights_vjp(g * (a - rt.unreduce_like(y, a, axis, keepdims)), weights, a, axis),
            None)


@rt.helper
def average_weights(a, weights, axis=None):
    """The weights of ``average`` shaped to broadcast against ``a`` (ones when None)."""
    xp = namespace(a, weights)
    if weights is None:
        return xp.ones(shape_tuple(a), dtype=np.result_type(getattr(a, "dtype", float), np.float16))
    if shape_tuple(weights) == shape_tuple(a):
        return weights
    ndim = len(shape_tuple(a))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = [ax % ndim for ax in axes]
    shape = [1] * ndim
    for ax in axes:
        shape[ax] = shape_tuple(a)[ax]
    return xp.reshape(xp.asarray(weights), shape)


@rt.helper
def weights_vjp(g, weights, a, axis=None):
    """A gradient of ``a``'s shape summed down to the shape of ``average``'s weights."""
    if weights is None:
        return None
    if shape_tuple(g) == shape_tuple(weights):
        return g
    xp = namespace(g, weights)
    ndim = len(shape_tuple(a))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = [ax % ndim for ax in axes]
    other = tuple(i for i in range(ndim) if i not in axes)
    g = xp.asarray(g)
    if other:
        g = g.sum(axis=other)
    if sorted(axes) != list(axes):
        order = [sorted(axes).index(ax) for ax in axes]
        g = xp.transpose(g, order)
    return g.reshape(shape_tuple(weights))


# ----- Products -----


@adjoint(np.prod)
def prod(dy, y, a, axis=None, *, keepdims=False):
    """Exact with zeros: the product of the other entries, no division."""
    return rt.unreduce(dy, a, axis, keepdims) * rt.prod_others(a, axis)


def _move_reduced_last(xp, a, axis):
    axes = normalize_axis(axis, a.ndim)
    rest = [i for i in range(a.ndim) if i not in axes]
    perm = rest + list(axes)
    t = xp.transpose(a, perm)
    lead = t.shape[:len(rest)]
    n = 1
    for ax in axes:
        n *= a.shape[ax]
    return t, perm, lead, n


def _exclusive_cumprod(xp, t):
    ones = xp.ones(t.shape[:-1] + (1,), dtype=t.dtype)
    return xp.concatenate([ones, xp.cumprod(t[..., :-1], axis=-1)], axis=-1)


@rt.helper
def prod_others(a, axis=None):
    """For each entry, the product of the other entries of its reduction group.

    The exact derivative of ``prod`` (no division, so zeros are fine).
    """
    if not is_array(a):
        return 1.0
    xp = namespace(a)
    if a.ndim == 0 or a.size == 0:   # empty: no entries, a gradient of a's (empty) shape
        return xp.ones_like(a)
    t, perm, lead, n = _move_reduced_last(xp, a, axis)
    tshape = t.shape
    t = t.reshape(lead + (n,))
    left = _exclusive_cumprod(xp, t)
    right = xp.flip(_exclusive_cumprod(xp, xp.flip(t, -1)), -1)
    out = (left * right).reshape(tshape)
    return xp.transpose(out, tuple(int(i) for i in np.argsort(perm)))


@rt.helper
def prod_others_jvp(a, t, axis=None):
    """``sum_{k != i} t_k prod_{j != i, k} a_j`` in each reduction group: the tangent of
    ``prod_others(a, axis)`` along ``t``, and its adjoint too (the matrix of second
    derivatives of ``prod`` is symmetric). Exact with zeros: ``prod_others`` of ``a``
    with entry ``k`` replaced by ``t_k``, for every ``k`` at once, its entry ``k`` dropped."""
    if not is_array(a):
        return 0.0 * t
    xp = namespace(a, t)
    t = xp.broadcast_to(xp.asarray(t), a.shape)
    if a.ndim == 0 or a.size == 0:
        return xp.zeros(a.shape, np.result_type(a.dtype, t.dtype, np.float16))
    ta, perm, lead, n = _move_reduced_last(xp, a, axis)
    tshape = ta.shape
    ta = ta.reshape(lead + (n,))
    tt = xp.transpose(t, perm).reshape(lead + (n,))
    eye = xp.eye(n, dtype=bool).reshape((n,) + (1,) * len(lead) + (n,))   # [k, ..., i]
    replaced = xp.where(eye, tt[None], ta[None])
    out = xp.where(eye, 0.0, prod_others(replaced, -1)).sum(axis=0).reshape(tshape)
    return xp.transpose(out, tuple(int(i) for i in np.argsort(perm)))


@tangent(rt.prod_others)
def prod_others_tangent(y, a, axis=None, *, t_a):
    return rt.prod_others_jvp(a, t_a, axis)


@adjoint(rt.prod_others)
def prod_others_adjoint(dw, w, a, axis=None):
    return rt.prod_others_jvp(a, dw, axis)


@adjoint(Method("prod"))
def prod_method(dy, y, self, axis=None, *, keepdims=False):
    """Exact with zeros: the product of the other entries, no division."""
    return rt.unreduce(dy, self, axis, keepdims) * rt.prod_others(self, axis)


# ----- Extrema (ties split evenly) -----


@adjoint(np.max, np.amax, np.nanmax)
def max(dy, y, a, axis=None, *, keepdims=False, initial=None, where=True):
    """Ties: the gradient is split evenly among the entries equal to the maximum
    (``initial`` counting as one of them)."""
    m = rt.where_mask(a == rt.unreduce_like(y, a, axis, keepdims), where)
    return (rt.unreduce(dy, a, axis, keepdims) * rt.tie_share(m, axis, a, initial, y, keepdims),
            None, None, rt.unbroadcast(dy * rt.initial_weight(y, m, axis, keepdims, initial), initial), None)


@rt.helper
def tie_share(mask, axis, x, initial=None, y=None, keepdims=False):
    """Each maximum's share of a max/min gradient (ties split evenly), in ``x``'s float dtype.

    A boolean count would promote a float32 gradient to float64. An ``initial`` equal to
    the extremum ``y`` takes a share too; a group where it alone is the extremum gives
    its entries none.
    """
    xp = namespace(x)
    weights = mask.astype(float_dtype(x, xp))
    count = weights.sum(axis=axis, keepdims=True)
    if initial is not None:
        count = xp.maximum(count + (rt.unreduce_like(y, x, axis, keepdims) == initial), 1)
    weights /= count
    return weights


@rt.helper
def initial_weight(y, mask, axis, keepdims, initial):
    """A max/min's ``initial``'s share of each result: 0 where it is not the extremum,
    1 / the number of tied entries (itself counted) where it is."""
    xp = namespace(y, mask)
    hit = xp.asarray(y) == initial
    count = xp.sum(mask, axis=axis, keepdims=keepdims) + hit
    return hit / xp.maximum(count, 1)


@adjoint(np.min, np.amin, np.nanmin)
def min(dy, y, a, axis=None, *, keepdims=False, initial=None, where=True):
    """Ties: the gradient is split evenly among the entries equal to the minimum
    (``initial`` counting as one of them)."""
    m = rt.where_mask(a == rt.unreduce_like(y, a, axis, keepdims), where)
    return (rt.unreduce(dy, a, axis, keepdims) * rt.tie_share(m, axis, a, initial, y, keepdims),
            None, None, rt.unbroadcast(dy * rt.initial_weight(y, m, axis, keepdims, initial), initial), None)


@adjoint(Method("max"))
def max_method(dy, y, self, axis=None, *, keepdims=False, initial=None, where=True):
    """Ties: the gradient is split evenly among the entries equal to the maximum
    (``initial`` counting as one of them)."""
    m = rt.where_mask(self == rt.unreduce_like(y, self, axis, keepdims), where)
    return (rt.unreduce(dy, self, axis, keepdims) * rt.tie_share(m, axis, self, initial, y, keepdims),
            None, None, rt.unbroadcast(dy * rt.initial_weight(y, m, axis, keepdims, initial), initial), None)


@adjoint(Method("min"))
def min_method(dy, y, self, axis=None, *, keepdims=False, initial=None, where=True):
    """Ties: the gradient is split evenly among the entries equal to the minimum
    (``initial`` counting as one of them)."""
    m = rt.where_mask(self == rt.unreduce_like(y, self, axis, keepdims), where)
    return (rt.unreduce(dy, self, axis, keepdims) * rt.tie_share(m, axis, self, initial, y, keepdims),
            None, None, rt.unbroadcast(dy * rt.initial_weight(y, m, axis, keepdims, initial), initial), None)


@adjoint(np.ptp)
def ptp(dy, y, a, axis=None, *, keepdims=False):
    """``max - min``; ties of either extremum split their share evenly."""
    hi = a == rt.unreduce_like(xp.max(a, axis=axis, keepdims=keepdims), a, axis, keepdims)
    lo = a == rt.unreduce_like(xp.min(a, axis=axis, keepdims=keepdims), a, axis, keepdims)
    g = rt.unreduce(dy, a, axis, keepdims)
    return (g * hi / xp.sum(hi, axis=axis, keepdims=True)
            - g * lo / xp.sum(lo, axis=axis, keepdims=True))


# ----- Spread -----


@adjoint(np.var)
def var(dy, y, a, axis=None, *, ddof=0, keepdims=False):
    """``ddof >= n`` divides by 0 as NumPy's forward does (a non-finite variance)."""
    d = a - xp.mean(a, axis=axis, keepdims=True)
    return rt.unreduce(dy, a, axis, keepdims) * 2 * d / xp.maximum(rt.reduction_size(a, axis) - ddof, 0)


@adjoint(Method("var"))
def var_method(dy, y, self, axis=None, *, ddof=0, keepdims=False):
    """``ddof >= n`` divides by 0 as NumPy's forward does (a non-finite variance)."""
    d = self - xp.mean(self, axis=axis, keepdims=True)
    return rt.unreduce(dy, self, axis, keepdims) * 2 * d / xp.maximum(rt.reduction_size(self, axis) - ddof, 0)


@adjoint(np.std)
def std(dy, y, a, axis=None, *, ddof=0, keepdims=False):
    """0 where the std is 0 (all entries equal: the kink convention of ``norm`` at 0,
    here ``0 / inf``)."""
    d = a - xp.mean(a, axis=axis, keepdims=True)
    s = rt.unreduce_like(y, a, axis, keepdims) * xp.maximum(rt.reduction_size(a, axis) - ddof, 0)
    return rt.unreduce(dy, a, axis, keepdims) * d / xp.where(s == 0, xp.inf, s)


@adjoint(Method("std"))
def std_method(dy, y, self, axis=None, *, ddof=0, keepdims=False):
    """0 where the std is 0 (all entries equal: the kink convention of ``norm`` at 0,
    here ``0 / inf``)."""
    d = self - xp.mean(self, axis=axis, keepdims=True)
    s = rt.unreduce_like(y, self, axis, keepdims) * xp.maximum(rt.reduction_size(self, axis) - ddof, 0)
    return rt.unreduce(dy, self, axis, keepdims) * d / xp.where(s == 0, xp.inf, s)


# ----- Scans and differences -----


@adjoint(np.cumsum)
def cumsum(dy, y, a, axis=None, dtype=None):
    """A reversed cumulative sum; ``axis=None`` scans the flattened array."""
    g = xp.reshape(xp.flip(xp.cumsum(xp.flip(dy, axis), axis), axis), rt.shape_of(a))
    return rt.reduction_cast(g, dtype, a)


@adjoint(Method("cumsum"))
def cumsum_method(dy, y, self, axis=None):
    return xp.reshape(xp.flip(xp.cumsum(xp.flip(dy, axis), axis), axis), rt.shape_of(self))


@adjoint(np.cumprod)
def cumprod(dy, y, a, axis=None):
    """Exact with zeros (no division by ``a``)."""
    return rt.cumprod_vjp(dy, a, axis)


@rt.helper
def cumprod_vjp(dy, a, axis=None):
    """Gradient of ``cumprod(a, axis)``: exact with zeros (Horner sums, no division)."""
    xp = namespace(a, dy)
    a = xp.asarray(a)
    g = xp.broadcast_to(xp.asarray(dy), (a.size,) if axis is None else a.shape)
    if axis is None:
        t, g, ax = a.reshape(-1), g.reshape(-1), 0
    else:
        t, ax = a, axis % builtins.max(a.ndim, 1)   # (``max`` here is np.max's rule)
    t = xp.moveaxis(t, ax, -1)
    g = xp.moveaxis(g, ax, -1)
    n = t.shape[-1]
    dtype = np.result_type(t.dtype, g.dtype, np.float16)
    s = xp.zeros(g.shape, dtype=dtype)
    if n:
        s[..., n - 1] = g[..., n - 1]
        for i in range(n - 2, -1, -1):
            s[..., i] = g[..., i] + t[..., i + 1] * s[..., i + 1]
        s = _exclusive_cumprod(xp, t) * s
    s = xp.moveaxis(s, -1, ax)
    return s.reshape(a.shape)


@adjoint(Method("cumprod"))
def cumprod_method(dy, y, self, axis=None):
    return rt.cumprod_vjp(dy, self, axis)


@tangent(np.cumprod)
def cumprod_tangent(y, a, axis=None, *, t_a):
    return rt.cumprod_jvp(a, t_a, axis)


@tangent(Method("cumprod"))
def cumprod_method_tangent(y, self, axis=None, *, t_self):
    return rt.cumprod_jvp(self, t_self, axis)


@tangent(rt.cumprod_vjp)
def cumprod_vjp_tangent(y, dy, a, axis=None, *, t_dy, t_a):
    return rt.cumprod_vjp(t_dy, a, axis) + rt.cumprod_vjp_a(dy, a, t_a, axis)


@adjoint(rt.cumprod_vjp)
def cumprod_vjp_adjoint(dw, w, dy, a, axis=None):
    """Linear in ``dy`` (the Jacobian transposed: its adjoint is the Jacobian, the
    tangent); the second derivatives in ``a`` form a symmetric matrix."""
    return rt.cumprod_jvp(a, dw, axis), rt.cumprod_vjp_a(dy, a, dw, axis), None


def _along_last(xp, a, axis):
    if axis is None:
        return xp.reshape(a, (-1,)), 0
    ax = axis % builtins.max(a.ndim, 1)
    return xp.moveaxis(a, ax, -1), ax


@rt.helper
def cumprod_jvp(a, t, axis=None):
    """The tangent of ``cumprod(a, axis)`` along ``t``, by the product rule on the running
    product (``c_i = c_{i-1} a_i``): exact with zeros, no division."""
    xp = namespace(a, t)
    a = xp.asarray(a)
    t = xp.broadcast_to(xp.asarray(t), a.shape)
    a2, ax = _along_last(xp, a, axis)
    t2, _ = _along_last(xp, t, axis)
    n = a2.shape[-1]
    c = xp.cumprod(a2, axis=-1)
    d = xp.zeros(a2.shape, dtype=np.result_type(a2.dtype, t2.dtype, np.float16))
    if n:
        d[..., 0] = t2[..., 0]
        for i in range(1, n):
            d[..., i] = d[..., i - 1] * a2[..., i] + c[..., i - 1] * t2[..., i]
    return d if axis is None else xp.moveaxis(d, -1, ax)


@rt.helper
def cumprod_vjp_a(dy, a, t, axis=None):
    """The derivative of ``cumprod_vjp(dy, a, axis)`` in ``a`` along ``t``:
    ``sum_{m != k} t_m sum_{i >= k, m} dy_i prod_{j <= i, j != k, m} a_j``, which is
    ``cumprod_vjp`` of ``dy`` (kept where ``i >= m``) and ``a`` with ``a_m`` replaced by
    ``t_m``, entry ``m`` dropped; all ``m`` at once. Symmetric in ``k, m``: also the
    adjoint of that derivative."""
    xp = namespace(a, t, dy)
    a = xp.asarray(a)
    t = xp.broadcast_to(xp.asarray(t), a.shape)
    a2, ax = _along_last(xp, a, axis)
    t2, _ = _along_last(xp, t, axis)
    g2, _ = _along_last(xp, xp.broadcast_to(xp.asarray(dy), xp.cumprod(a, axis=axis).shape), axis)
    n = a2.shape[-1]
    if n == 0:
        return xp.zeros(a.shape, dtype=np.result_type(a.dtype, t.dtype, np.float16))
    shape = (n,) + (1,) * (a2.ndim - 1) + (n,)
    eye = xp.eye(n, dtype=bool).reshape(shape)                     # [m, ..., i]
    later = (xp.arange(n)[None, :] >= xp.arange(n)[:, None]).reshape(shape)   # i >= m
    replaced = xp.where(eye, t2[None], a2[None])
    kept = xp.where(later, g2[None], 0.0)
    out = xp.where(eye, 0.0, cumprod_vjp(kept, replaced, -1)).sum(axis=0)
    if axis is None:
        return out.reshape(a.shape)
    return xp.moveaxis(out, -1, ax)


# ----- Sorting and gathering -----


@adjoint(np.sort)
def sort(dy, y, a, axis=-1, kind=None):
    """The gradient is un-permuted with the inverse of a stable argsort."""
    inv = xp.argsort(xp.argsort(a, axis=axis, kind="stable"), axis=axis, kind="stable")
    return xp.reshape(xp.take_along_axis(dy, inv, axis=axis), rt.shape_of(a))


@adjoint(np.take, literals={"mode": ("raise", "wrap", "clip")})
def take(dy, y, a, indices, axis=None, *, mode="raise"):
    """Repeated indices accumulate their gradients."""
    return rt.take_vjp(dy, a, rt.take_indices(indices, a, axis, mode), axis)


@rt.helper
def take_indices(indices, a, axis, mode):
    """``take``'s indices as ``mode`` "wrap" or "clip" reads them (in range)."""
    if mode == "raise":
        return indices
    xp = namespace(a)
    n = xp.asarray(a).size if axis is None else shape_tuple(a)[axis]
    indices = xp.asarray(indices)
    return indices % n if mode == "wrap" else xp.clip(indices, 0, n - 1)


@rt.helper
def take_vjp(dy, a, indices, axis=None):
    """Gradient of ``take(a, indices, axis)``: repeated indices accumulate."""
    xp = namespace(a, dy)
    dy = xp.asarray(dy)
    indices = xp.asarray(indices)
    dx = grad_zeros(xp, a, dy)
    if axis is None:
        scatter_add(xp, dx.reshape(-1), indices, dy)
        return dx
    ax = axis % dx.ndim
    k = indices.ndim
    moved = xp.moveaxis(dx, ax, 0)
    g = xp.moveaxis(dy, tuple(range(ax, ax + k)), tuple(range(k)))
    scatter_add(xp, moved, indices, g)
    return dx


@rt.helper
def ufunc_add_at(a, index, values):
    """``np.add.at(a, index, values)`` as a value: a copy of ``a`` with ``values`` added at
    ``index``, once per repetition of an index (transform/mutation.py writes the call as
    ``a[...] = rt.ufunc_add_at(a, index, values)``)."""
    if not is_array(a):
        raise TypeError(f"np.add.at writes into an array, not a {type(a).__name__}")
    out = a.copy()
    scatter_add(namespace(a), out, index, values)
    return out


@adjoint(rt.ufunc_add_at)
def ufunc_add_at(dy, y, a, index, values):
    """Each repetition of an index added its values: each gets the gradient there."""
    return dy, None, rt.unbroadcast(rt.take_grad(rt.full_grad(dy, a), index), values)


@adjoint(Method("take"), literals={"mode": ("raise", "wrap", "clip")})
def take_method(dy, y, self, indices, axis=None, *, mode="raise"):
    """Repeated indices accumulate their gradients."""
    return rt.take_vjp(dy, self, rt.take_indices(indices, self, axis, mode), axis)


@adjoint(np.take_along_axis)
def take_along_axis(dy, y, arr, indices, axis=-1):
    """Repeated indices accumulate their gradients."""
    return rt.take_along_axis_vjp(dy, arr, indices, axis)


@rt.helper
def take_along_axis_vjp(dy, arr, indices, axis):
    """Gradient of ``take_along_axis(arr, indices, axis)``: repeated indices accumulate."""
    xp = namespace(arr, dy)
    dy = xp.asarray(dy)
    indices = xp.asarray(indices)
    dx = grad_zeros(xp, arr, dy)
    if axis is None:
        scatter_add(xp, dx.reshape(-1), indices, dy)
        return dx
    ax = axis % dx.ndim
    index = []
    for d in range(dx.ndim):
        if d == ax:
            index.append(indices)
            continue
        shape = [1] * dx.ndim
        if dx.shape[d] == 1:
            index.append(xp.zeros(shape, dtype=xp.intp))
        else:
            shape[d] = dx.shape[d]
            index.append(xp.arange(dx.shape[d]).reshape(shape))
    scatter_add(xp, dx, tuple(index), dy)
    return dx


@adjoint(np.trace)
def trace(dy, y, a, offset=0, axis1=0, axis2=1):
    e = xp.eye(a.shape[axis1], a.shape[axis2], k=offset, dtype=a.dtype)
    return xp.moveaxis(xp.asarray(dy)[..., None, None] * e, (-2, -1), (axis1, axis2))


@adjoint(Method("trace"))
def trace_method(dy, y, self, offset=0, axis1=0, axis2=1):
    e = xp.eye(self.shape[axis1], self.shape[axis2], k=offset, dtype=self.dtype)
    return xp.moveaxis(xp.asarray(dy)[..., None, None] * e, (-2, -1), (axis1, axis2))
