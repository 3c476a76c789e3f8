"""Numba forms of the checks a gradient makes where a value might be a list or tuple
(srcgrad/runtime/containers.py): on arrays and numbers, the only values the compiled
code's arguments can be, they decide "not a container", which is what the NumPy helpers
decide for them. A list or tuple reaching one is refused in typing, so the gradient runs
its NumPy code, which raises or takes the container path. Then the list gradients of
``np.stack``, ``np.concatenate`` and ``np.array`` (runtime.py has array_vjp's form, which
calls its unbroadcast). Importing this module needs numba.
"""

import numpy as np
from numba import njit, types
from numba.extending import overload

from srcgrad.jit.numba_types import JIT_OPTIONS, is_number as _is_number, refuse as _refuse


def _plain(t):
    """An array, a number or None: what NumPy's helpers treat as no structure."""
    return isinstance(t, (types.Array, types.NoneType)) or _is_number(t)


def check_array_operand(value):
    """See srcgrad.runtime.check_array_operand (translate.py keeps its first argument; the
    error it raises is for a structure, which this form refuses): nothing for an array,
    a number or None."""


@overload(check_array_operand, jit_options=JIT_OPTIONS)
def _check_array_operand(value):
    if _plain(value):
        return lambda value: None
    _refuse("check_array_operand", value)


def container_op(a, b, repeat=False):
    """See srcgrad.runtime.container_op: False for arrays and numbers (``a + b`` and
    ``a * b`` are arithmetic); translate.py replaces the branch it guards by
    ``unreached()``."""


@overload(container_op, jit_options=JIT_OPTIONS)
def _container_op(a, b, repeat=False):
    if _plain(a) and _plain(b):
        return lambda a, b, repeat=False: False
    _refuse("container_op", a, b)


@njit(**JIT_OPTIONS)
def unreached():
    """The body of a branch the compiled types never take (``if container_op(...)``):
    raises, so that a call reaching it would run the NumPy gradient."""
    raise AssertionError("srcgrad jit: a branch of containers ran on arrays")


def add_grad(a, b):
    """See srcgrad.runtime.add_grad, on numbers, arrays and None: a zero number (or None) is
    "nothing yet", so the other is returned as it is; else ``a + b``. (The NumPy helper
    takes only a Python zero for nothing; Numba types NumPy's float64 zero alike, for
    which the NumPy code computes ``a + b``: the two can differ only in a zero's sign.)"""


def _summand(t):
    return isinstance(t, types.NoneType) or isinstance(t, (types.Float, types.Integer)) and \
        not isinstance(t, types.Boolean) or isinstance(t, types.Array) and \
        isinstance(t.dtype, (types.Float, types.Integer)) and not isinstance(t.dtype, types.Boolean)


@overload(add_grad, jit_options=JIT_OPTIONS)
def _add_grad(a, b):
    if isinstance(a, types.NoneType) or isinstance(b, types.NoneType):   # the other, as it is
        return (lambda a, b: b) if isinstance(a, types.NoneType) else (lambda a, b: a)
    if isinstance(a, types.Optional) or isinstance(b, types.Optional):   # a None zero (zeros.py)
        from srcgrad.jit.optional import nz
        if isinstance(a, types.Optional) and isinstance(a.type, types.Array) and \
                isinstance(b, types.Array):
            return lambda a, b: b if a is None else add_grad(nz(a), b)
        if isinstance(b, types.Optional) and isinstance(b.type, types.Array) and \
                isinstance(a, types.Array):
            return lambda a, b: a if b is None else add_grad(a, nz(b))
        # the zero's result and the other's would differ in type: ZeroAdjoint at None
        return lambda a, b: add_grad(nz(a), nz(b))
    if not (_summand(a) and _summand(b)):
        _refuse("add_grad", a, b)
    if isinstance(a, types.Array) and isinstance(b, types.Array):
        return lambda a, b: a + b
    if isinstance(a, types.Array):
        return lambda a, b: a if b == 0 else a + b
    if isinstance(b, types.Array):
        return lambda a, b: b if a == 0 else a + b
    return lambda a, b: b if a == 0 else (a if b == 0 else a + b)


# ----- Lists of gradients: one per item of a list NumPy made an array of -----


def items(t):
    """Whether ``t`` is a list or tuple of one type (Numba's List or UniTuple)."""
    return isinstance(t, (types.List, types.UniTuple))


def seq_item(dseq, index):
    """See srcgrad.runtime.seq_item, of a list or tuple of one type (``dseq[index]``), an
    array (its entry) or a number (itself: the NumPy helper returns it too)."""


@overload(seq_item, jit_options=JIT_OPTIONS)
def _seq_item(dseq, index):
    if not isinstance(index, types.Integer):
        _refuse("seq_item", dseq, index)
    if isinstance(dseq, types.BaseTuple) and not items(dseq):   # of items of several types:
        if not isinstance(index, types.IntegerLiteral):   # typed again with the constant
            return None
        k = index.literal_value
        if not -len(dseq) <= k < len(dseq):
            _refuse("seq_item", dseq, index)
        return eval(f"lambda dseq, index: dseq[{k}]")
    if items(dseq) or isinstance(dseq, types.Array) and dseq.ndim > 0:
        return lambda dseq, index: dseq[index]
    if _is_number(dseq) and not isinstance(dseq, types.Boolean):
        return lambda dseq, index: dseq
    _refuse("seq_item", dseq, index)


def stack_vjp(dy, arrays, axis=0):
    """See srcgrad.rules.numpy_joins.stack_vjp, of a list or tuple of arrays or numbers
    stacked along their first axis (``axis % dy.ndim == 0``; another axis raises
    ValueError, and the NumPy gradient runs that call): ``dy[i]`` for item ``i``."""


@overload(stack_vjp, jit_options=JIT_OPTIONS)
def _stack_vjp(dy, arrays, axis=0):
    if not items(arrays) or not (_is_number(arrays.dtype) or isinstance(arrays.dtype, types.Array)) \
            or not isinstance(axis, (types.Integer, types.Omitted, int)):
        _refuse("stack_vjp", dy, arrays, axis)
    if _is_number(dy):   # a zero adjoint nothing reads (NumPy's helper fails on it)
        def number(dy, arrays, axis=0):
            raise ValueError("srcgrad jit: stack_vjp of a number")
            return [dy * 1.0 for _ in range(0)]
        return number
    if not (isinstance(dy, types.Array) and dy.ndim >= 1):
        _refuse("stack_vjp", dy, arrays, axis)

    def rows(dy, arrays, axis=0):
        if axis % dy.ndim != 0 or len(dy) != len(arrays):
            raise ValueError("srcgrad jit: stack_vjp along another axis")
        out = []
        for i in range(len(arrays)):
            out.append(dy[i])
        return out
    return rows


def concatenate_vjp(dy, arrays, axis=0):
    """See srcgrad.rules.numpy_joins.concatenate_vjp, of a list or tuple of arrays joined
    along their first axis (another raises ValueError: the NumPy gradient runs that call):
    item ``i`` gets its rows of ``dy``; a number ``dy`` is every item's everywhere (NumPy
    broadcasts it; here an array full of it)."""


@overload(concatenate_vjp, jit_options=JIT_OPTIONS)
def _concatenate_vjp(dy, arrays, axis=0):
    if not items(arrays) or not isinstance(arrays.dtype, types.Array) or \
            not isinstance(axis, (types.Integer, types.Omitted, int)):
        _refuse("concatenate_vjp", dy, arrays, axis)
    if _is_number(dy) and not isinstance(dy, types.Boolean):
        def full(dy, arrays, axis=0):
            out = []
            for a in arrays:
                out.append(np.full(a.shape, dy))
            return out
        return full
    if not (isinstance(dy, types.Array) and dy.ndim == arrays.dtype.ndim and dy.ndim >= 1):
        _refuse("concatenate_vjp", dy, arrays, axis)

    def pieces(dy, arrays, axis=0):
        if axis % dy.ndim != 0:
            raise ValueError("srcgrad jit: concatenate_vjp along another axis")
        out = []
        start = 0
        for a in arrays:
            stop = start + a.shape[0]
            out.append(dy[start:stop])
            start = stop
        if start != dy.shape[0]:
            raise ValueError("srcgrad jit: concatenate_vjp of another length")
        return out
    return pieces


def seq_add(dseq, g):
    """See srcgrad.runtime.seq_add, where neither is a list (the gradient of ``np.asarray``
    of an array, a number): ``dseq`` where ``g`` is a zero number, else ``dseq + g``
    (the NumPy helper takes only a Python zero for nothing, as in add_grad)."""


@overload(seq_add, jit_options=JIT_OPTIONS)
def _seq_add(dseq, g):
    if not (_summand(dseq) and _summand(g)) or isinstance(dseq, types.NoneType):
        _refuse("seq_add", dseq, g)
    if isinstance(g, types.NoneType):
        return lambda dseq, g: dseq
    if isinstance(g, types.Array):
        return lambda dseq, g: dseq + g
    if isinstance(dseq, types.Array):
        return lambda dseq, g: dseq if g == 0 else dseq + g
    return lambda dseq, g: dseq if g == 0 else dseq + g


def array_of(values):
    """``np.array([a, b, ...])`` of the tuple ``values`` (calls.py): arrays of one dtype and
    rank stacked (ValueError where their shapes differ: NumPy refuses them too), numbers as
    Numba's ``np.array`` makes them of a list display (what compiled before calls.py)."""


@overload(array_of, jit_options=JIT_OPTIONS)
def _array_of(values):
    if not isinstance(values, types.BaseTuple) or not len(values):
        _refuse("array_of", values)
    n = len(values)
    if all(isinstance(t, types.Array) for t in values) and \
            len({(t.dtype, t.ndim) for t in values}) == 1:
        checks = "".join(f"    if values[{k}].shape != values[0].shape:\n"
                         "        raise ValueError('srcgrad jit: np.array of arrays of several "
                         "shapes')\n" for k in range(1, n))
        code = f"def stacked(values):\n{checks}    return np.stack(values)\n"
    elif all(_is_number(t) for t in values):   # the list display Numba's np.array takes
        items = ", ".join(f"values[{k}]" for k in range(n))
        code = f"def stacked(values):\n    return np.array([{items}])\n"
    else:
        _refuse("array_of", values)
    namespace = {"np": np}
    exec(code, namespace)
    return namespace["stacked"]
