"""Numba forms of the helpers of Python's builtins and ``math`` (srcgrad/rules/builtins_math.py,
srcgrad/runtime/arrays.py): ``builtin_sum_vjp`` (``sum(iterable)``), ``minmax_vjp``
(``max``/``min``: ties share the gradient evenly), ``log_base`` and ``log_base_grad``
(``math.log(x[, base])``), ``sin``, ``cos``, ``exp``, ``sinh``, ``cosh``, ``log`` of a number
or an array, and ``builtin_abs`` (translate.py writes ``abs(v)`` so: Numba's ``abs`` takes
no array). A list the NumPy helper returns is a tuple here (``seq_item`` reads both alike).

On a number these compute what ``math`` computes and raise ValueError where ``math`` raises
(a domain or range error: Numba's libm calls give NaN or inf instead), so that call runs
the NumPy gradient, which raises its own error. Importing this module needs numba.
"""

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from srcgrad.jit.numba_types import JIT_OPTIONS, is_number as _is_number, none as _none, \
    refuse as _refuse
from srcgrad.jit.shapes import unbroadcast


def builtin_sum_vjp(dy, iterable):
    """See srcgrad.rules.builtins_math.builtin_sum_vjp: an array's gradient is ``dy`` over
    its shape (a new array: the NumPy helper's read-only broadcast, written nowhere), a
    list's or tuple's a tuple of ``unbroadcast(dy, item)``."""


def _plain_float(t):
    return isinstance(t, types.Float) or isinstance(t, types.Array) and \
        t.dtype == types.float64


@overload(builtin_sum_vjp, jit_options=JIT_OPTIONS)
def _builtin_sum_vjp(dy, iterable):
    if isinstance(iterable, types.Array) and iterable.ndim > 0 and _plain_float(dy):
        return lambda dy, iterable: np.zeros(iterable.shape) + dy   # dy's float64, as NumPy
    if isinstance(iterable, types.List) and (_is_number(iterable.dtype) or isinstance(
            iterable.dtype, types.Array)) and _is_number(dy):
        return lambda dy, iterable: [unbroadcast(dy, item) for item in iterable]
    if isinstance(iterable, types.BaseTuple) and len(iterable) and all(
            _is_number(t) or isinstance(t, types.Array) for t in iterable) and _is_number(dy):
        items = ", ".join(f"unbroadcast(dy, iterable[{k}])" for k in range(len(iterable)))
        namespace = {"unbroadcast": unbroadcast}
        exec(f"def each(dy, iterable):\n    return ({items},)\n", namespace)
        return namespace["each"]
    _refuse("builtin_sum_vjp", dy, iterable)


def minmax_vjp(dy, y, args):
    """See srcgrad.rules.builtins_math.minmax_vjp (``args``: max's or min's positional
    arguments): one array argument gets ``(dy / count where mask, else 0,)``, several numbers
    a tuple of ``dy / count`` (0 for an item not chosen), one tuple or list of numbers
    ``(that tuple,)``."""


def _numbers(t):
    return isinstance(t, types.BaseTuple) and len(t) > 0 and all(_is_number(u) for u in t)


@overload(minmax_vjp, jit_options=JIT_OPTIONS)
def _minmax_vjp(dy, y, args):
    if not (isinstance(args, types.BaseTuple) and _is_number(dy) and _is_number(y)):
        _refuse("minmax_vjp", dy, y, args)
    if len(args) == 1 and isinstance(args[0], types.Array) and args[0].ndim == 1:
        def of_array(dy, y, args):
            mask = args[0] == y
            count = mask.sum()
            if count == 0:   # y NaN: Python's 0/0 raises, NumPy's warns (its code decides)
                raise ValueError("srcgrad jit: no argument equals the extremum")
            return (np.where(mask, dy / count, 0.0),)
        return of_array
    if len(args) == 1 and _numbers(args[0]):
        return lambda dy, y, args: (_shares(dy, y, args[0]),)
    if len(args) > 1 and _numbers(args):
        return lambda dy, y, args: _shares(dy, y, args)
    _refuse("minmax_vjp", dy, y, args)


def _shares(dy, y, items):
    """``dy * hit / count`` of each item (hit: 1.0 where it equals ``y``), a tuple."""


@overload(_shares, jit_options=JIT_OPTIONS)
def _shares_form(dy, y, items):
    n = len(items)
    hits = ", ".join(f"1.0 if items[{k}] == y else 0.0" for k in range(n))
    # (an item not chosen gets exactly 0, also where dy is infinite: rt.share's meaning)
    grads = ", ".join(f"dy / count if hits[{k}] else 0.0 * hits[{k}]" for k in range(n))
    namespace = {}
    exec(f"def shares(dy, y, items):\n    hits = ({hits},)\n    count = 0\n"
         f"    for h in hits:\n        count = count + h\n    if count == 0:\n"
         f"        raise ValueError('srcgrad jit: no argument equals the extremum')\n"
         f"    return ({grads},)\n", namespace)
    return namespace["shares"]


def log_base(base):
    """See srcgrad.rules.builtins_math.log_base: 1.0 without a base, else log(base)."""


def log_base_grad(dy, y, base):
    """See srcgrad.rules.builtins_math.log_base_grad: 0.0 without a base."""


@overload(log_base, jit_options=JIT_OPTIONS)
def _log_base(base):
    if _none(base):
        return lambda base: 1.0
    if _is_number(base):
        return lambda base: _log(base)
    _refuse("log_base", base)


@overload(log_base_grad, jit_options=JIT_OPTIONS)
def _log_base_grad(dy, y, base):
    if _none(base):
        return lambda dy, y, base: 0.0
    if _is_number(base) and _is_number(dy) and _is_number(y):
        return lambda dy, y, base: -dy * y / (base * _log(base))
    _refuse("log_base_grad", dy, y, base)


@njit(**JIT_OPTIONS)
def _log(x):
    """math.log of a number: ValueError at 0 and below (math's domain error)."""
    if x <= 0:
        raise ValueError("srcgrad jit: math domain error")
    return math.log(x)


@njit(**JIT_OPTIONS)
def _sin(x):
    if math.isinf(x):
        raise ValueError("srcgrad jit: math domain error")
    return math.sin(x)


@njit(**JIT_OPTIONS)
def _cos(x):
    if math.isinf(x):
        raise ValueError("srcgrad jit: math domain error")
    return math.cos(x)


def _overflowing(f):
    """``f`` of a number: OverflowError's ValueError where math raises one (a finite
    ``x`` whose value is not)."""
    @njit(**JIT_OPTIONS)
    def checked(x):
        y = f(x)
        if math.isinf(y) and not math.isinf(x):
            raise ValueError("srcgrad jit: math range error")
        return y
    return checked


# name -> (its number form, its array form): srcgrad.runtime.arrays' scalar-or-array functions
_MATH = {"sin": (_sin, np.sin), "cos": (_cos, np.cos), "exp": (_overflowing(math.exp), np.exp),
         "sinh": (_overflowing(math.sinh), np.sinh), "cosh": (_overflowing(math.cosh), np.cosh),
         "log": (_log, np.log)}


def _scalar_or_array(name):
    number, array = _MATH[name]

    def stub(x):
        pass
    stub.__name__ = name
    stub.__doc__ = f"See srcgrad.runtime.arrays.{name}: math.{name} of a number, np.{name} of an array."

    def typing(x):
        if _is_number(x):
            return lambda x: number(x)
        if isinstance(x, types.Array) and isinstance(x.dtype, (types.Float, types.Integer)):
            return lambda x: array(x)
        _refuse(name, x)
    overload(stub, jit_options=JIT_OPTIONS)(typing)
    return stub


sin, cos, exp, sinh, cosh, log = (_scalar_or_array(n) for n in ("sin", "cos", "exp", "sinh",
                                                                 "cosh", "log"))


def divide(a, b):
    """See srcgrad.runtime.divide: ``a / b``, inf or nan where ``b`` is 0 (JIT_OPTIONS' NumPy
    error model, without NumPy's warning)."""


@overload(divide, jit_options=JIT_OPTIONS)
def _divide(a, b):
    if all(_is_number(t) or isinstance(t, types.Array) and isinstance(t.dtype, types.Float)
           for t in (a, b)):
        return lambda a, b: a / b
    _refuse("divide", a, b)


def builtin_abs(x):
    """Python's ``abs(x)``: of a number as Numba's, of an array ``np.abs`` (what
    ``ndarray.__abs__`` computes)."""


@overload(builtin_abs, jit_options=JIT_OPTIONS)
def _builtin_abs(x):
    if isinstance(x, (types.Float, types.Integer)) and not isinstance(x, types.Boolean):
        return lambda x: abs(x)
    if isinstance(x, types.Array) and isinstance(x.dtype, (types.Float, types.Integer)) and \
            not isinstance(x.dtype, types.Boolean):
        return lambda x: np.abs(x)
    _refuse("builtin_abs", x)


_CHECKED = {}


def checked_math(f):
    """A Numba-compiled call of the ``math`` function ``f`` (translate.py binds it where
    the source calls ``math.f`` or a name bound to ``f``) that raises ValueError where
    Python's raises ValueError or OverflowError: a NaN from no NaN argument (a domain
    error: ``math.log(-1.0)``, ``math.sin(inf)``), an infinity from finite arguments (a
    pole or an overflow: ``math.log(0.0)``, ``math.exp(1e3)``). Numba's libm calls give
    those NaNs and infinities; the call then runs the NumPy gradient, which raises."""
    found = _CHECKED.get(f)
    if found is None:
        def stub(*args):
            pass
        stub.__name__ = f"checked_{f.__name__}"

        def typing(*args):
            if len(args) == 1 and isinstance(args[0], types.StarArgTuple):
                args = args[0].types
            if not all(_is_number(t) for t in args):
                _refuse(f"math.{f.__name__}", *args)
            names = [f"a{k}" for k in range(len(args))]
            nan = " or ".join(f"{n} != {n}" for n in names)
            finite = " and ".join(f"_finite({n})" for n in names)
            namespace = {"f": f, "_finite": _finite, "_wrong": _wrong}
            exec(f"def call(*args):\n    {', '.join(names)}, = args\n"
                 f"    y = f({', '.join(names)})\n"
                 f"    if _wrong(y, {nan}, {finite}):\n"
                 f"        raise ValueError('srcgrad jit: a math domain or range error')\n"
                 f"    return y\n", namespace)
            return namespace["call"]
        overload(stub, jit_options=JIT_OPTIONS)(typing)
        found = _CHECKED[f] = stub
    return found


@njit(**JIT_OPTIONS)
def _finite(a):
    return not (math.isinf(a) or a != a)


def _wrong(y, any_nan, all_finite):
    """A NaN ``y`` from no NaN argument, or an infinite one from finite arguments."""


@overload(_wrong, jit_options=JIT_OPTIONS)
def _wrong_form(y, any_nan, all_finite):
    if isinstance(y, types.Float):
        return lambda y, any_nan, all_finite: (y != y and not any_nan) or \
            (math.isinf(y) and all_finite)
    return lambda y, any_nan, all_finite: False   # an int or a bool: no NaN, no infinity
