"""Numba forms of the helpers of ``np.clip`` and of transposes (srcgrad/rules/
numpy_elementwise.py, numpy_shape.py): ``clip_below`` and ``clip_above`` (the masks of the
entries a bound replaced), ``either`` (NumPy 2's ``min=``/``max=`` spellings), and
``inverse_axes`` and ``method_axes`` (the permutation that undoes ``transpose(x, axes)``,
``x.transpose(*axes)``'s axes). Importing this module needs numba.
"""

import numpy as np
from numba import types
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

from srcgrad.jit.numba_types import JIT_OPTIONS, is_number as _is_number, ndim_of as _ndim_of, \
    none as _none, refuse as _refuse


def _operand(t):
    return _is_number(t) or isinstance(t, types.Array) and \
        isinstance(t.dtype, (types.Float, types.Integer, types.Boolean))


def either(first, second):
    """See srcgrad.rules.numpy_elementwise.either: ``first`` unless it is None."""


@overload(either, jit_options=JIT_OPTIONS)
def _either(first, second):
    if _none(first):
        return lambda first, second: second
    return lambda first, second: first


def clip_below(a, a_min, a_max=None):
    """See srcgrad.rules.numpy_elementwise.clip_below: False without a lower bound, else
    where ``a < a_min`` and the upper bound does not win (``a_min > a_max``)."""


@overload(clip_below, jit_options=JIT_OPTIONS)
def _clip_below(a, a_min, a_max=None):
    if not (_operand(a) and (_none(a_min) or _operand(a_min)) and
            (_none(a_max) or _operand(a_max))):
        _refuse("clip_below", a, a_min, a_max)
    if _none(a_min):
        return lambda a, a_min, a_max=None: False
    if _none(a_max):
        return lambda a, a_min, a_max=None: a < a_min
    return lambda a, a_min, a_max=None: np.logical_and(a < a_min, np.logical_not(a_min > a_max))


def clip_above(a, a_max, a_min=None):
    """See srcgrad.rules.numpy_elementwise.clip_above: False without an upper bound, else
    where ``maximum(a, a_min)`` (``a`` without a lower bound) exceeds ``a_max``."""


@overload(clip_above, jit_options=JIT_OPTIONS)
def _clip_above(a, a_max, a_min=None):
    if not (_operand(a) and (_none(a_min) or _operand(a_min)) and
            (_none(a_max) or _operand(a_max))):
        _refuse("clip_above", a, a_max, a_min)
    if _none(a_max):
        return lambda a, a_max, a_min=None: False
    if _none(a_min):
        return lambda a, a_max, a_min=None: a > a_max
    return lambda a, a_max, a_min=None: np.maximum(a, a_min) > a_max


def method_axes(axes):
    """See srcgrad.rules.numpy_shape.method_axes: ``x.transpose(*axes)``'s ``axes`` as
    ``np.transpose`` takes them (None for none, the one tuple or None given, else ``axes``)."""


def _ints(t):
    return isinstance(t, types.BaseTuple) and all(
        isinstance(u, types.Integer) and not isinstance(u, types.Boolean) for u in t)


@overload(method_axes, jit_options=JIT_OPTIONS)
def _method_axes(axes):
    if isinstance(axes, types.BaseTuple) and len(axes) == 0:
        return lambda axes: None
    if isinstance(axes, types.BaseTuple) and len(axes) == 1 and (
            _none(axes[0]) or _ints(axes[0])):
        return lambda axes: axes[0]
    if _ints(axes):
        return lambda axes: axes
    _refuse("method_axes", axes)


def inverse_axes(axes, x):
    """See srcgrad.rules.numpy_shape.inverse_axes: None for None, else the permutation
    that undoes ``transpose(x, axes)``; ValueError where ``axes`` (negative ones counted
    from the end) is not a permutation of ``x``'s axes (NumPy's transpose refuses it)."""


@overload(inverse_axes, jit_options=JIT_OPTIONS)
def _inverse_axes(axes, x):
    ndim = _ndim_of(x)
    if _none(axes) and ndim is not None:
        return lambda axes, x: None
    if not (_ints(axes) and ndim is not None and len(axes) == ndim and ndim > 0):
        _refuse("inverse_axes", axes, x)
    n = ndim
    reads = "".join(f"    order[{k}] = _axis(axes[{k}], {n})\n" for k in range(n))
    namespace = {"np": np, "_axis": _axis, "to_fixed_tuple": to_fixed_tuple}
    exec(f"def inverse(axes, x):\n    order = np.empty({n}, np.intp)\n{reads}"
         f"    inverse = np.full({n}, -1, np.intp)\n    for k in range({n}):\n"
         f"        if inverse[order[k]] >= 0:\n"
         f"            raise ValueError('srcgrad jit: repeated axis in transpose')\n"
         f"        inverse[order[k]] = k\n    return to_fixed_tuple(inverse, {n})\n", namespace)
    return namespace["inverse"]


def _axis(a, n):
    """Axis ``a`` of ``n`` counted from 0 (negative from the end); ValueError out of range."""


@overload(_axis, jit_options=JIT_OPTIONS)
def _axis_form(a, n):
    def axis(a, n):
        if a < -n or a >= n:
            raise ValueError("srcgrad jit: axis out of range in transpose")
        return a + n if a < 0 else a
    return axis
