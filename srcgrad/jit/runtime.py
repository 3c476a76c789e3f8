"""Numba-compatible forms of the srcgrad runtime helpers (``rt.*``) the jit sweeps call.

Each helper has the NumPy helper's meaning for the types it accepts (srcgrad/runtime/);
for any other type its typing raises ``TypingError``, so that the whole gradient falls
back to the NumPy code (dispatch.py) rather than compute something else. A helper that
cannot tell at compile time whether it applies (shapes are run-time values) raises
``ValueError`` at run time: the call is run again by the NumPy gradient.

Importing this module needs numba.
"""

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.extending import overload

JIT_OPTIONS = dict(error_model="numpy", boundscheck=True, nogil=True)


def _refuse(helper, *values):
    raise TypingError(f"srcgrad jit: rt.{helper} of {', '.join(str(v) for v in values)}")


def _is_number(t):
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


def _is_shape(t):
    return isinstance(t, types.UniTuple) and isinstance(t.dtype, types.Integer) or \
        (isinstance(t, types.Tuple) and len(t.types) == 0)


def _ndim_of(t):
    if isinstance(t, types.Array):
        return t.ndim
    if _is_shape(t):
        return len(t)
    if _is_number(t):
        return 0
    return None


def default_seed(out):
    """See srcgrad.runtime.default_seed."""


def owned_zeros(x):
    """See srcgrad.runtime.owned_zeros."""


def unbroadcast(g, x):
    """See srcgrad.runtime.unbroadcast."""


def has_grad(g):
    """See srcgrad.runtime.has_grad."""


def shape_of(value):
    """See srcgrad.runtime.shape_of."""


def unreduce(g, x, axis=None, keepdims=False):
    """See srcgrad.runtime.unreduce."""


def reduction_size(x, axis=None, at_least=0):
    """See srcgrad.runtime.reduction_size."""


@overload(default_seed)
def _default_seed(out):
    if isinstance(out, types.Float):
        return lambda out: 1.0
    if isinstance(out, types.Array) and isinstance(out.dtype, types.Float):
        def seed(out):
            if out.size != 1:
                raise ValueError("srcgrad jit: the output is not a scalar")
            return np.ones_like(out)
        return seed
    _refuse("default_seed", out)


@overload(owned_zeros)
def _owned_zeros(x):
    if isinstance(x, types.Array):
        dtype = x.dtype if isinstance(x.dtype, (types.Float, types.Complex)) else types.float64
        return lambda x: np.zeros(x.shape, dtype)
    _refuse("owned_zeros", x)


@overload(unbroadcast)
def _unbroadcast(g, x):
    if _is_number(g):
        return lambda g, x: g
    if not isinstance(g, types.Array):
        _refuse("unbroadcast", g, x)
    target = _ndim_of(x)
    if target == 0:
        return lambda g, x: np.sum(g)   # summed down to a scalar's shape ()
    if target != g.ndim:
        _refuse("unbroadcast", g, x)   # other ranks: the NumPy gradient sums
    if isinstance(x, types.Array):
        def same(g, x):
            if g.shape != x.shape:
                raise ValueError("srcgrad jit: unbroadcast of another shape")
            return g
        return same

    def same_shape(g, x):
        if g.shape != x:
            raise ValueError("srcgrad jit: unbroadcast of another shape")
        return g
    return same_shape


@overload(has_grad)
def _has_grad(g):
    if _is_number(g):
        return lambda g: g != 0
    if isinstance(g, types.Array) and g.ndim > 0:
        return lambda g: True
    _refuse("has_grad", g)


@overload(shape_of)
def _shape_of(value):
    if isinstance(value, types.Array):
        return lambda value: value.shape
    if _is_number(value):
        return lambda value: ()
    _refuse("shape_of", value)


def _none(t):
    return t is None or isinstance(t, (types.NoneType, types.Omitted)) and \
        getattr(t, "value", None) is None


def _false(t):
    return t is False or isinstance(t, types.Omitted) and t.value is False or \
        isinstance(t, types.BooleanLiteral) and t.literal_value is False


@overload(unreduce)
def _unreduce(g, x, axis=None, keepdims=False):
    # A full reduction's scalar gradient spread over x's shape (np.full: a writable copy
    # of what the NumPy helper returns as a read-only view).
    if _is_number(g) and _none(axis) and _false(keepdims):
        if isinstance(x, types.Array):
            return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g)
        if _is_shape(x):
            return lambda g, x, axis=None, keepdims=False: np.full(x, g)
        if _is_number(x):
            return lambda g, x, axis=None, keepdims=False: g
    _refuse("unreduce", g, x, axis, keepdims)


@overload(reduction_size)
def _reduction_size(x, axis=None, at_least=0):
    if isinstance(x, types.Array) and _none(axis):
        def size(x, axis=None, at_least=0):
            n = x.size
            return n if n >= at_least else at_least
        return size
    _refuse("reduction_size", x, axis)


def own(value):
    """See srcgrad.runtime.own."""


@overload(own)
def _own(value):
    if isinstance(value, types.Array):
        return lambda value: value.copy()
    if _is_number(value):
        return lambda value: value
    _refuse("own", value)


@njit(**JIT_OPTIONS)
def rev_range(r):
    """``reversed(r)`` of a range: the same values, last first."""
    n = len(r)
    return range(r.start + (n - 1) * r.step, r.start - r.step, -r.step)


# The rt helpers the translation maps (translate.py): any other rt.* call is refused.
HELPERS = ("default_seed", "owned_zeros", "unbroadcast", "has_grad", "shape_of", "unreduce",
           "reduction_size", "own")
