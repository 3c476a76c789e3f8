"""Numba forms of the helpers of products (``a @ b``, ``np.dot``), signs, powers with an
active exponent, casts and full maxima, for the float cases of 1 and 2 dimensions; any
other type is refused (runtime.py's rule). Importing this module needs numba."""

import numpy as np
from numba import njit, types
from numba.extending import overload

from srcgrad.jit.numba_types import (JIT_OPTIONS, is_number as _is_number, none as _none,
                                    refuse as _refuse)
from srcgrad.jit.shapes import axis_kind, kept_offset, kept_size, reduced_axes


def _float_array(t, ndims=(1, 2)):
    return isinstance(t, types.Array) and isinstance(t.dtype, types.Float) and t.ndim in ndims


def matmul_grad_a(dy, a, b):
    """See srcgrad.rules.numpy_products.matmul_grad_a (np.dot's for 1-D and 2-D too)."""


def matmul_grad_b(dy, a, b):
    """See srcgrad.rules.numpy_products.matmul_grad_b."""


def matmul(a, b):
    """``a @ b`` and ``np.matmul(a, b)`` (translate.py): Numba's ``@`` of arrays of 1 or 2
    dimensions, and of float arrays of one rank of 3 or more with the same leading (batch)
    dimensions, one matrix product per batch entry (ValueError for others: NumPy decides)."""


def _batched(a, b):
    return _float_array(a, range(3, 33)) and _float_array(b, range(3, 33)) and \
        a.ndim == b.ndim and a.dtype == b.dtype


@overload(matmul, jit_options=JIT_OPTIONS)
def _matmul(a, b):
    if _batched(a, b):
        def batched(a, b):
            if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
                raise ValueError("srcgrad jit: matmul of other shapes")
            return _NN(a, b, a.shape[:-2] + (a.shape[-2], b.shape[-1]))
        return batched
    return lambda a, b: a @ b   # Numba's own (its typing decides)


def _per_matrix(ta, tb):
    """``(a, b, shape) -> a[k] @ b[k]`` (each transposed where ``ta``, ``tb``) for each
    batch entry ``k`` (the leading dimensions flattened), of shape ``shape``."""
    @njit(**JIT_OPTIONS)
    def products(a, b, shape):
        a3 = np.ascontiguousarray(a).reshape((-1, a.shape[-2], a.shape[-1]))
        b3 = np.ascontiguousarray(b).reshape((-1, b.shape[-2], b.shape[-1]))
        out = np.empty((a3.shape[0], shape[-2], shape[-1]), a.dtype)
        for k in range(a3.shape[0]):
            out[k] = np.dot(a3[k].T if ta else a3[k], b3[k].T if tb else b3[k])
        return out.reshape(shape)
    return products


_NN, _NT, _TN = _per_matrix(False, False), _per_matrix(False, True), _per_matrix(True, False)


def _product_grad(which, batched=False):
    """The Numba form of ``a @ b``'s gradient with respect to ``a`` (``which`` 0) or ``b``
    (1), for float operands of 1 or 2 dimensions (np.dot's too: the same product there),
    and ``batched`` of one rank of 3 or more (matmul's only): each case the NumPy helper's
    matmul written as the product it is."""
    def typing(dy, a, b):
        if batched and _batched(a, b) and _float_array(dy, (a.ndim,)):
            def per_batch(dy, a, b):
                if a.shape[:-2] != b.shape[:-2] or dy.shape[:-2] != a.shape[:-2]:
                    raise ValueError("srcgrad jit: matmul_grad of other shapes")
                if which == 0:
                    return _NT(dy, b, a.shape)
                return _TN(a, dy, b.shape)
            return per_batch
        if not (_float_array(a) and _float_array(b)):
            _refuse("matmul_grad", dy, a, b)
        if a.ndim == 1 and b.ndim == 1:
            if not _is_number(dy):
                _refuse("matmul_grad", dy, a, b)
            return (lambda dy, a, b: dy * b) if which == 0 else (lambda dy, a, b: dy * a)
        if not _float_array(dy, (a.ndim + b.ndim - 2,)):
            _refuse("matmul_grad", dy, a, b)
        if a.ndim == 2 and b.ndim == 2:
            if which == 0:
                return lambda dy, a, b: np.dot(dy, b.T)
            return lambda dy, a, b: np.dot(a.T, dy)
        if a.ndim == 1:   # v @ M: dy has M's columns
            if which == 0:
                return lambda dy, a, b: np.dot(b, dy)
            return lambda dy, a, b: np.outer(a, dy)
        if which == 0:    # M @ v: dy has M's rows
            return lambda dy, a, b: np.outer(dy, b)
        return lambda dy, a, b: np.dot(dy, a)
    return typing


def dot_grad_a(dy, a, b):
    """See srcgrad.rules.numpy_products.dot_grad_a (matmul_grad_a's form up to 2-D)."""


def dot_grad_b(dy, a, b):
    """See srcgrad.rules.numpy_products.dot_grad_b."""


overload(matmul_grad_a, jit_options=JIT_OPTIONS)(_product_grad(0, True))
overload(matmul_grad_b, jit_options=JIT_OPTIONS)(_product_grad(1, True))
overload(dot_grad_a, jit_options=JIT_OPTIONS)(_product_grad(0))
overload(dot_grad_b, jit_options=JIT_OPTIONS)(_product_grad(1))


def sign(x):
    """See srcgrad.runtime.sign."""


@overload(sign)
def _sign(x):
    if _is_number(x):
        return lambda x: (1.0 if x > 0 else 0.0) - (1.0 if x < 0 else 0.0)
    if _float_array(x, range(1, 33)):
        return lambda x: np.sign(x)
    _refuse("sign", x)


def share(g, weights):
    """See srcgrad.rules.numpy_elementwise.share (here always the select: compiled, it
    costs no more than the product)."""


@overload(share)
def _share(g, weights):
    if _is_number(g) and _is_number(weights):
        return lambda g, weights: g * weights if weights != 0 else 0.0 * weights
    if (isinstance(g, types.Array) or _is_number(g)) and isinstance(weights, types.Array) \
            or isinstance(g, types.Array) and _is_number(weights):
        return lambda g, weights: np.where(weights == 0, 0.0, g * weights)
    _refuse("share", g, weights)


def log_or_zero(a):
    """See srcgrad.runtime.log_or_zero."""


@overload(log_or_zero)
def _log_or_zero(a):
    if _is_number(a):
        return lambda a: np.log(a) if a > 0 else 0.0
    if isinstance(a, types.Array) and isinstance(a.dtype, (types.Float, types.Integer)) and \
            not isinstance(a.dtype, types.Boolean):   # the NumPy helper's formula
        return lambda a: np.where(a > 0, np.log(np.where(a > 0, a, 1)), 0)
    _refuse("log_or_zero", a)


def cast_like(g, x):
    """See srcgrad.runtime.cast_like."""


@overload(cast_like)
def _cast_like(g, x):
    if _is_number(g) or not (isinstance(x, types.Array) and isinstance(x.dtype, types.Float)):
        return lambda g, x: g
    if isinstance(g, types.Array) and g.dtype == x.dtype:
        return lambda g, x: g
    if isinstance(g, types.Array):
        dtype = x.dtype
        return lambda g, x: g.astype(dtype)
    _refuse("cast_like", g, x)


def dtype_grad(g, dtype, x):
    """See srcgrad.runtime.dtype_grad."""


@overload(dtype_grad)
def _dtype_grad(g, dtype, x):
    named = dtype.instance_type if isinstance(dtype, types.NumberClass) else \
        dtype.dtype if isinstance(dtype, types.DType) else None
    if isinstance(named, (types.Float, types.Complex)):
        return lambda g, dtype, x: g   # a cast to a float keeps the gradient
    _refuse("dtype_grad", g, dtype, x)


def tie_share(mask, axis, x):
    """See srcgrad.rules.numpy_reductions.tie_share."""


@overload(tie_share)
def _tie_share(mask, axis, x):
    if isinstance(mask, types.Boolean) and isinstance(x, types.Float) and _none(axis):
        def one(mask, axis, x):   # a NumPy scalar's max: 1.0 (NaN where x is NaN: 0 / 0)
            weight = 1.0 if mask else 0.0
            return weight / weight
        return one
    if not (isinstance(mask, types.Array) and isinstance(mask.dtype, types.Boolean)
            and isinstance(x, types.Array) and isinstance(x.dtype, types.Float)):
        _refuse("tie_share", mask, axis, x)
    dtype = x.dtype
    if _none(axis):
        def share(mask, axis, x):
            weights = mask.astype(dtype)
            return weights / weights.sum()
        return share
    if axis_kind(axis) is None or mask.ndim != x.ndim:
        _refuse("tie_share", mask, axis, x)
    n = x.ndim

    def shares(mask, axis, x):   # each group's weights over its count (keepdims=True)
        reduced = reduced_axes(axis, n)
        weights = mask.astype(dtype)
        counts = np.zeros(kept_size(mask.shape, reduced))
        for idx in np.ndindex(mask.shape):
            counts[kept_offset(idx, mask.shape, reduced)] += weights[idx]
        for idx in np.ndindex(mask.shape):
            weights[idx] /= counts[kept_offset(idx, mask.shape, reduced)]
        return weights
    return shares
