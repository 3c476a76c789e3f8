"""Numba forms of the reads of a name whose zero number is written None (zeros.py).

``v`` is typed ``none``, ``Optional(T)`` or ``T``; None stands for the NumPy code's 0.0.
Each helper computes what the NumPy code computes with 0.0 in None's place, or raises
ZeroAdjoint (the call runs the NumPy gradient) where that value would have another type
than the compiled code's. Importing this module needs numba.
"""

from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

from srcgrad.jit.errors import ZeroAdjoint
from srcgrad.jit.numba_types import JIT_OPTIONS, is_number


def _optional(t):
    return isinstance(t, (types.Optional, types.NoneType))


is_zero_form = _optional   # a type whose value may be None: the zero number


def _inner(t):
    """The type of a value that is not None (None for ``none``)."""
    if isinstance(t, types.Optional):
        return t.type
    if isinstance(t, types.NoneType):
        return None
    return t


@intrinsic
def _unwrap(typingctx, opt):
    """An Optional(T) checked not None, as T."""
    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], signature.return_type)
        context.nrt.incref(builder, signature.return_type, value)   # a new reference
        return value
    return opt.type(opt), codegen


def nz(v):
    """``v``, or ZeroAdjoint where it is None (the NumPy code's number 0.0)."""


@overload(nz, jit_options=JIT_OPTIONS)
def _nz(v):
    if isinstance(v, types.Optional):
        def impl(v):
            if v is None:
                raise ZeroAdjoint("srcgrad jit: the NumPy gradient reads a zero number here")
            return _unwrap(v)
        return impl
    if isinstance(v, types.NoneType):
        def none(v):
            raise ZeroAdjoint("srcgrad jit: the NumPy gradient reads a zero number here")
        return none
    return lambda v: v


def _kind(t):
    """"array", "number", or None where neither (the helpers refuse it)."""
    if isinstance(t, types.Array) and isinstance(t.dtype, (types.Float, types.Integer)):
        return "array"
    if is_number(t):
        return "number"
    return None


def _binary(name, apply):
    """The Numba form of ``a op b`` where either may be None (0.0)."""
    def stub(a, b):
        pass
    stub.__name__ = name

    def typing(a, b):
        ka, kb = _inner(a), _inner(b)
        if isinstance(a, types.NoneType) and _optional(b):
            return lambda a, b: stub(0.0, b)
        if _optional(a) and _optional(b):   # one at a time
            return lambda a, b: stub(0.0, b) if a is None else stub(nz(a), b)
        if (ka is not None and _kind(ka) is None) or \
                (kb is not None and _kind(kb) is None):
            raise TypingError(f"srcgrad jit: {name} of {a}, {b}")
        if _optional(a):
            zero_is_array = _kind(b) == "array"
            same = ka is None or zero_is_array or _kind(ka) == "number"

            def left(a, b):
                if a is None:
                    if not same:
                        raise ZeroAdjoint("srcgrad jit: a zero number stays a number here")
                    return apply(0.0, b)
                return apply(_unwrap(a), b)
            return _no_none(a, left, lambda a, b: apply(0.0, b))
        if _optional(b):
            zero_is_array = _kind(a) == "array"
            same = kb is None or zero_is_array or _kind(kb) == "number"

            def right(a, b):
                if b is None:
                    if not same:
                        raise ZeroAdjoint("srcgrad jit: a zero number stays a number here")
                    return apply(a, 0.0)
                return apply(a, _unwrap(b))
            return _no_none(b, right, lambda a, b: apply(a, 0.0))
        return lambda a, b: apply(a, b)
    overload(stub, jit_options=JIT_OPTIONS)(typing)
    return stub


def _no_none(t, optional_form, none_form):
    return none_form if isinstance(t, types.NoneType) else optional_form


def _inplace(name, apply):
    """``v op= g`` where ``v`` is an array whenever it runs (inplace.py's ``fits`` held)."""
    def stub(v, g):
        pass
    stub.__name__ = name

    def typing(v, g):
        if isinstance(v, types.Optional) and isinstance(v.type, types.Array):
            def impl(v, g):
                a = nz(v)
                return apply(a, g)
            return impl
        if isinstance(v, types.Array):
            return lambda v, g: apply(v, g)
        raise TypingError(f"srcgrad jit: {name} of {v}, {g}")
    overload(stub, jit_options=JIT_OPTIONS)(typing)
    return stub


def _inplace_at(name, apply):
    """``t[i] op= v`` where ``v`` may be None: ``t[i] op= 0.0`` then (the NumPy code's)."""
    def stub(t, i, v):
        pass
    stub.__name__ = name

    def typing(t, i, v):
        if not isinstance(t, types.Array) or (_inner(v) is not None and _kind(_inner(v)) is None):
            raise TypingError(f"srcgrad jit: {name} of {t}, {i}, {v}")
        if isinstance(v, types.NoneType):
            return lambda t, i, v: apply(t, i, 0.0)
        if isinstance(v, types.Optional):
            return lambda t, i, v: apply(t, i, 0.0) if v is None else apply(t, i, _unwrap(v))
        return lambda t, i, v: apply(t, i, v)
    overload(stub, jit_options=JIT_OPTIONS)(typing)
    return stub


def _add_at(t, i, v):
    t[i] += v


def _sub_at(t, i, v):
    t[i] -= v


def _mul_at(t, i, v):
    t[i] *= v


def _add(a, b):
    return a + b


def _sub(a, b):
    return a - b


def _mul(a, b):
    return a * b


def _iadd(a, g):
    a += g
    return a


def _isub(a, g):
    a -= g
    return a


def _imul(a, g):
    a *= g
    return a


def _jitted(f):
    from numba import njit
    return njit(**JIT_OPTIONS)(f)


zadd = _binary("zadd", _jitted(_add))
zsub = _binary("zsub", _jitted(_sub))
zmul = _binary("zmul", _jitted(_mul))
iadd = _inplace("iadd", _jitted(_iadd))
isub = _inplace("isub", _jitted(_isub))
imul = _inplace("imul", _jitted(_imul))
iadd_at = _inplace_at("iadd_at", _jitted(_add_at))
isub_at = _inplace_at("isub_at", _jitted(_sub_at))
imul_at = _inplace_at("imul_at", _jitted(_mul_at))
