"""Python's exact integers in the jit sweeps: ``a + b``, ``a - b``, ``a * b`` and ``a << b``
of two numbers outside the fused kernels are ``_jrt.exact_add(a, b)`` and its kin
(translate.py). On two integers the call raises OverflowError where Numba's int64 wraps
around (Python's int never does: ``fact *= k`` past 20!): the NumPy gradient runs that call
instead (dispatch.py). Any other operands get the operator itself. The typed-IR check of
numba_types.check_integer_widths reads these calls as the operator they stand for.

Importing this module needs numba.
"""

from numba import types
from numba.extending import overload

from srcgrad.jit.numba_types import JIT_OPTIONS

_MIN = -2 ** 63
_MAX = 2 ** 63 - 1


def exact_add(a, b):
    """``a + b``, raising OverflowError where two integers' sum leaves int64."""


def exact_sub(a, b):
    """``a - b``, the same."""


def exact_mul(a, b):
    """``a * b``, the same."""


def exact_lshift(a, b):
    """``a << b``, the same (ValueError for a negative count, as Python's)."""


def _integers(a, b):
    return all(isinstance(t, types.Integer) and not isinstance(t, types.Boolean) and t.signed
               for t in (a, b))


# Each test runs before the operation, on values that cannot wrap (LLVM may take a wrapped
# result for exact and fold a test made after it).

def _add(a, b):
    if b > 0 and a > _MAX - b or b < 0 and a < _MIN - b:
        raise OverflowError("integer addition leaves int64 (Python's int would not)")
    return a + b


def _sub(a, b):
    if b < 0 and a > _MAX + b or b > 0 and a < _MIN + b:
        raise OverflowError("integer subtraction leaves int64 (Python's int would not)")
    return a - b


def _mul(a, b):
    # the bounds of b (of a) are ceilings of MIN / a, MAX / a; // floors, as Python's
    if a > 0:
        wrapped = b > _MAX // a if b > 0 else b < (_MIN + a - 1) // a
    elif a < 0:
        if b > 0:
            wrapped = a < (_MIN + b - 1) // b
        else:
            wrapped = b < 0 and (a == _MIN or b < -(_MAX // -a))
    else:
        wrapped = False
    if wrapped:
        raise OverflowError("integer product leaves int64 (Python's int would not)")
    return a * b


def _lshift(a, b):
    if b < 0:
        raise ValueError("negative shift count")
    if a != 0 and (b >= 64 or a > (_MAX >> b) or a < (_MIN >> b)):
        raise OverflowError("integer shift leaves int64 (Python's int would not)")
    return a << b


def _overload(helper, checked, plain):
    def typer(a, b):
        if _integers(a, b):
            return checked
        return plain
    overload(helper, jit_options=JIT_OPTIONS)(typer)


_overload(exact_add, _add, lambda a, b: a + b)
_overload(exact_sub, _sub, lambda a, b: a - b)
_overload(exact_mul, _mul, lambda a, b: a * b)
_overload(exact_lshift, _lshift, lambda a, b: a << b)


def int_range(v):
    """``v``, raising where ``int(v)`` (``round``, ``math.floor``...) would not be an int64:
    Python raises for NaN and infinity and grows its int past 2**63; Numba's conversion
    gives -2**63 there (python_numbers.py wraps the argument of those calls)."""


@overload(int_range, jit_options=JIT_OPTIONS)
def _int_range(v):
    if isinstance(v, types.Float):
        def check(v):
            if v != v:
                raise ValueError("cannot convert float NaN to integer")
            if not -9.223372036854775808e18 <= v < 9.223372036854775808e18:
                raise OverflowError("the float's integer leaves int64 (Python's int would not)")
            return v
        return check
    return lambda v: v
