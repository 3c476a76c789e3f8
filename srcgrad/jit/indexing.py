"""The Numba form of ``rt.add_at``, the adjoint of reading ``x[index]``: into an array's
gradient (basic indices, with None and Ellipsis as the NumPy helper counts them; 1-D
integer arrays with repeats adding up in order; boolean masks), and into the gradient of
a tuple read at a constant position (a tuple, item by item, as the NumPy helper's list).
Importing this module needs numba.
"""

import numpy as np
from numba import types
from numba.extending import overload

from srcgrad.jit.containers import add_grad
from srcgrad.jit.errors import ZeroAdjoint
from srcgrad.jit.numba_types import (JIT_OPTIONS, basic_index as _basic_index,
                                    is_number as _is_number, mask_index as _mask_index,
                                    refuse as _refuse)
from srcgrad.jit.optional import is_zero_form as _is_zero_form, nz


def add_at(dx, x, index, g):
    """See srcgrad.runtime.add_at."""


def _made(source, **names):
    namespace = {"np": np, "add_grad": add_grad, "ZeroAdjoint": ZeroAdjoint, **names}
    exec(source, namespace)
    return namespace["impl"]


def _into_tuple(dx, x, index, g):
    """``add_at`` into the gradient of a tuple ``x`` at the constant position ``index``
    (Numba retypes the call with its literal value where the plain int is refused): a
    tuple of ``len(x)`` adjoints, item ``index`` ``add_grad``-ed with ``g``. The NumPy
    helper makes ``[dx] * len(x)`` of a number ``dx`` (``[0.0] * len(x)`` of a zero) and
    adds ``g`` into its item; it keeps a zero number ``dx`` where ``g`` is a zero number,
    which this form cannot give the same type: ZeroAdjoint, that call runs NumPy."""
    n, k = len(x), index.literal_value
    if not -n <= k < n:
        _refuse("add_at", dx, x, index, g)
    k %= n
    if _is_number(dx) and not isinstance(dx, types.Boolean):
        items = ", ".join("add_grad(dx, g)" if i == k else "dx" for i in range(n))
        check = "    if g == 0 and dx == 0:\n        raise ZeroAdjoint('srcgrad jit: " \
                "add_at of a zero number keeps a number')\n" if _is_number(g) else ""
        return _made(f"def impl(dx, x, index, g):\n{check}    return ({items},)\n")
    if isinstance(dx, types.BaseTuple) and len(dx) == n:
        items = ", ".join(f"add_grad(dx[{i}], g)" if i == k else f"dx[{i}]" for i in range(n))
        return _made(f"def impl(dx, x, index, g):\n    return ({items},)\n")
    _refuse("add_at", dx, x, index, g)


@overload(add_at, jit_options=JIT_OPTIONS)
def _add_at(dx, x, index, g):
    # ``dx`` an owned float array of ``x``'s shape (the sweep made it with owned_zeros;
    # another shape raises ValueError at run time: the NumPy gradient materialises it),
    # or a number, materialised as the NumPy helper does (zeros of x's shape plus it).
    # (Of a number ``g`` that is 0, the NumPy helper returns the number ``dx`` itself:
    # a ValueError at run time, so that the NumPy gradient runs that call.)
    if _is_zero_form(dx):   # None: the zero number (zeros.py), kept where g is a zero number
        zero_g = _is_number(g)
        if isinstance(dx, types.NoneType):
            return lambda dx, x, index, g: None if zero_g and g == 0 else add_at(0.0, x, index, g)

        def optional(dx, x, index, g):
            if dx is None:
                return None if zero_g and g == 0 else add_at(0.0, x, index, g)
            return add_at(nz(dx), x, index, g)
        return optional
    if isinstance(x, types.BaseTuple):
        if isinstance(index, types.IntegerLiteral):
            return _into_tuple(dx, x, index, g)
        if isinstance(index, types.Integer):
            return None   # Numba tries again with the literal position, where it is a constant
        _refuse("add_at", dx, x, index, g)
    if isinstance(x, types.Array) and _is_number(dx) and (_is_number(g) or isinstance(g, types.Array)):
        dtype = x.dtype if isinstance(x.dtype, types.Float) else types.float64
        zero_g = _is_number(g)

        def materialised(dx, x, index, g):
            if zero_g and g == 0:
                raise ValueError("srcgrad jit: add_at of a zero number keeps a number")
            base = np.zeros(x.shape, dtype)
            if dx != 0:
                base += dx
            return add_at(base, x, index, g)
        return materialised
    if not (isinstance(x, types.Array) and isinstance(dx, types.Array) and dx.ndim == x.ndim
            and dx.mutable and isinstance(dx.dtype, types.Float)
            and (_is_number(g) or isinstance(g, types.Array))):
        _refuse("add_at", dx, x, index, g)
    zero = _is_number(g)   # a number zero adds nothing (not even to the sign of a zero)
    if _basic_index(index) or _mask_index(index) and not (isinstance(index, types.Array)
                                                          and x.ndim == 1):
        # basic: no position repeats; a tuple with one boolean mask: no repeats either,
        # so ``+=`` adds what NumPy's add.at adds
        def basic(dx, x, index, g):
            if dx.shape != x.shape:
                raise ValueError("srcgrad jit: add_at into another shape")
            if zero and g == 0:
                return dx
            dx[index] += g
            return dx
        return basic
    if isinstance(index, types.Array) and index.ndim == 1 and x.ndim == 1 and \
            isinstance(index.dtype, types.Integer) and not isinstance(index.dtype, types.Boolean) \
            and (zero or g.ndim == 1):
        def fancy(dx, x, index, g):   # np.add.at: repeated indices add up, in index order
            if dx.shape != x.shape:
                raise ValueError("srcgrad jit: add_at into another shape")
            if zero:
                if g == 0:
                    return dx
                for k in range(index.size):
                    dx[index[k]] += g
            else:
                if g.size != index.size:
                    raise ValueError("srcgrad jit: add_at of another length")
                for k in range(index.size):
                    dx[index[k]] += g[k]
            return dx
        return fancy
    if isinstance(index, types.Array) and isinstance(index.dtype, types.Boolean) and \
            index.ndim == x.ndim == 1 and (zero or g.ndim == 1):
        def masked(dx, x, index, g):   # no repeats: dx[mask] += g, element by element
            if dx.shape != x.shape or index.shape != x.shape:
                raise ValueError("srcgrad jit: add_at into another shape")
            if zero:
                if g == 0:
                    return dx
                for k in range(index.size):
                    if index[k]:
                        dx[k] += g
                return dx
            j = 0
            for k in range(index.size):
                if index[k]:
                    j += 1
            if j != g.size:
                raise ValueError("srcgrad jit: add_at of another length")
            j = 0
            for k in range(index.size):
                if index[k]:
                    dx[k] += g[j]
                    j += 1
            return dx
        return masked
    _refuse("add_at", dx, x, index, g)
