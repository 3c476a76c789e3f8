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

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Attribute, Method, adjoint, nondifferentiable

xp = None  # placeholder: the array namespace, bound in generated code

# Only results that are truly constant belong here (indices, counts, booleans).
# np.unique (its values are entries of x) and np.histogram (its bin edges move
# with x's range) carry gradients srcgrad has no rule for: they are refused where
# they need one, not silently given a zero (issue 11).
nondifferentiable(
    np.argmax, np.argmin, np.argsort, np.argwhere, np.nanargmax, np.nanargmin,
    np.count_nonzero, np.nonzero, np.flatnonzero, np.searchsorted, np.digitize,
    np.bincount, np.all, np.any, np.array_equal,
    np.array_equiv, np.allclose, np.isclose, np.shape, np.ndim, np.size,
    np.lexsort, np.result_type, np.iscomplexobj, np.isrealobj, np.isscalar,
    Method("argmax"), Method("argmin"), Method("argsort"), Method("nonzero"),
    Method("any"), Method("all"), Attribute("shape"), Attribute("ndim"),
    Attribute("dtype"), Attribute("size"), Attribute("itemsize"),
    Attribute("nbytes"), Attribute("strides"), Attribute("flags"),
)

# ----- Sums and means -----


@adjoint(np.sum)
def sum(dy, y, a, axis=None, *, keepdims=False):
    return rt.unreduce(dy, a, axis, keepdims)


@adjoint(Method("sum"))
def sum_method(dy, y, self, axis=None, *, keepdims=False):
    return rt.unreduce(dy, self, axis, keepdims)


@adjoint(np.nansum)
def nansum(dy, y, a, axis=None, *, keepdims=False):
    """NaN entries are treated as zeros: they get no gradient."""
    return rt.unreduce(dy, a, axis, keepdims) * xp.logical_not(xp.isnan(a))


@adjoint(np.mean)
def mean(dy, y, a, axis=None, *, keepdims=False):
    """An empty reduction (a NaN mean) gives its empty input an empty gradient."""
    return rt.unreduce(dy, a, axis, keepdims) / rt.reduction_size(a, axis, 1)


@adjoint(Method("mean"))
def mean_method(dy, y, self, axis=None, *, keepdims=False):
    """An empty reduction (a NaN mean) gives its empty input an empty gradient."""
    return rt.unreduce(dy, self, axis, keepdims) / rt.reduction_size(self, axis, 1)


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


# ----- Products -----


@adjoint(np.prod)
def prod(dy, y, a, axis=None, *, keepdims=False):
    """Exact with zeros: the product of the other entries, no division."""
    return rt.unreduce(dy, a, axis, keepdims) * rt.prod_others(a, axis)


@adjoint(Method("prod"))
def prod_method(dy, y, self, axis=None, *, keepdims=False):
    """Exact with zeros: the product of the other entries, no division."""
    return rt.unreduce(dy, self, axis, keepdims) * rt.prod_others(self, axis)


# ----- Extrema (ties split evenly) -----


@adjoint(np.max, np.amax, np.nanmax)
def max(dy, y, a, axis=None, *, keepdims=False):
    """Ties: the gradient is split evenly among the entries equal to the maximum."""
    m = a == rt.unreduce_like(y, a, axis, keepdims)
    return rt.unreduce(dy, a, axis, keepdims) * rt.tie_share(m, axis, a)


@adjoint(np.min, np.amin, np.nanmin)
def min(dy, y, a, axis=None, *, keepdims=False):
    """Ties: the gradient is split evenly among the entries equal to the minimum."""
    m = a == rt.unreduce_like(y, a, axis, keepdims)
    return rt.unreduce(dy, a, axis, keepdims) * rt.tie_share(m, axis, a)


@adjoint(Method("max"))
def max_method(dy, y, self, axis=None, *, keepdims=False):
    """Ties: the gradient is split evenly among the entries equal to the maximum."""
    m = self == rt.unreduce_like(y, self, axis, keepdims)
    return rt.unreduce(dy, self, axis, keepdims) * rt.tie_share(m, axis, self)


@adjoint(Method("min"))
def min_method(dy, y, self, axis=None, *, keepdims=False):
    """Ties: the gradient is split evenly among the entries equal to the minimum."""
    m = self == rt.unreduce_like(y, self, axis, keepdims)
    return rt.unreduce(dy, self, axis, keepdims) * rt.tie_share(m, axis, self)


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
def cumsum(dy, y, a, axis=None):
    """A reversed cumulative sum; ``axis=None`` scans the flattened array."""
    return xp.reshape(xp.flip(xp.cumsum(xp.flip(dy, axis), axis), axis), rt.shape_of(a))


@adjoint(Method("cumsum"))
def cumsum_method(dy, y, self, axis=None):
    return xp.reshape(xp.flip(xp.cumsum(xp.flip(dy, axis), axis), axis), rt.shape_of(self))


@adjoint(np.cumprod)
def cumprod(dy, y, a, axis=None):
    """Exact with zeros (no division by ``a``)."""
    return rt.cumprod_vjp(dy, a, axis)


@adjoint(Method("cumprod"))
def cumprod_method(dy, y, self, axis=None):
    return rt.cumprod_vjp(dy, self, axis)


@adjoint(np.diff)
def diff(dy, y, a, n=1, axis=-1):
    return rt.diff_vjp(dy, a, n, axis)


# ----- Sorting and gathering -----


@adjoint(np.sort)
def sort(dy, y, a, axis=-1, kind=None):
    """The gradient is un-permuted with the inverse of a stable argsort."""
    inv = xp.argsort(xp.argsort(a, axis=axis, kind="stable"), axis=axis, kind="stable")
    return xp.reshape(xp.take_along_axis(dy, inv, axis=axis), rt.shape_of(a))


@adjoint(np.take)
def take(dy, y, a, indices, axis=None):
    """Repeated indices accumulate their gradients."""
    return rt.take_vjp(dy, a, indices, axis)


@adjoint(Method("take"))
def take_method(dy, y, self, indices, axis=None):
    """Repeated indices accumulate their gradients."""
    return rt.take_vjp(dy, self, indices, axis)


@adjoint(np.take_along_axis)
def take_along_axis(dy, y, arr, indices, axis=-1):
    """Repeated indices accumulate their gradients."""
    return rt.take_along_axis_vjp(dy, arr, indices, axis)


@adjoint(np.trace)
def trace(dy, y, a, offset=0, axis1=0, axis2=1):
    e = xp.eye(a.shape[axis1], a.shape[axis2], k=offset, dtype=a.dtype)
    return xp.moveaxis(xp.asarray(dy)[..., None, None] * e, (-2, -1), (axis1, axis2))


@adjoint(Method("trace"))
def trace_method(dy, y, self, offset=0, axis1=0, axis2=1):
    e = xp.eye(self.shape[axis1], self.shape[axis2], k=offset, dtype=self.dtype)
    return xp.moveaxis(xp.asarray(dy)[..., None, None] * e, (-2, -1), (axis1, axis2))
