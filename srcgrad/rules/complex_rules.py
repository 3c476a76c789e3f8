"""Rules on complex values, under JAX's convention (rules/__init__.py, "Complex values").

For a real loss of a real input through complex intermediates the gradient is real
and equals the finite-difference derivative: where a real value enters complex
arithmetic (``z = 1j * x``), the reverse sweep keeps the real part of its cotangent
(``rt.real_like``). With ``z = a + ib`` and ``dy`` the output's cotangent:

* holomorphic and C-linear primitives (``+ - * /``, ``exp``, ``sin``, ``cos``, ``tan``
  and their hyperbolic versions, ``log``, ``sqrt``, ``square``, ``sum``, ``reshape``,
  ``@``): their ordinary rule, ``dy * f'(z)``.
* ``abs(z)``: ``dy * conj(z) / |z|`` (0 at 0).
* ``angle(z)``: ``-1j * dy * conj(z) / |z|**2`` (0 at 0).
* ``real(z)``: ``dy``; ``imag(z)``: ``-1j * dy``; ``conj(z)``: ``conj(dy)``.
* ``imag`` and ``angle`` of a real operand: the real part of the above, 0.
* ``z ** c``: ``dy * c * z ** (c - 1)`` and, for the exponent, ``dy * y * log(z)``.
* ``np.fft.fft``/``ifft`` (no ``n``, no ``norm``): the DFT matrix is symmetric, so
  the cotangent is the same transform of ``dy``; ``rfft``'s is ``fft`` of ``dy`` padded
  with zeros to the input's length.

Tangents (forward mode, ``@complex_tangent``; a complex-safe primitive keeps its own):
``abs``: ``Re(conj(z) t) / |z|``; ``angle``: ``Im(conj(z) t) / |z|**2``; ``imag``:
``Im(t)``; the FFTs are linear: the same transform of ``t``.

Every rule here also holds for a real operand (a real ``x`` in ``np.abs(x)`` gets
``dy * x / |x| = dy * sign(x)``). Any other primitive on a complex value is
refused at compile time (reverse.py), never differentiated with a real rule.
"""

import builtins
import operator

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Attribute, Method, complex_adjoint, complex_safe, complex_tangent, linear
from srcgrad.runtime.arrays import is_array, namespace, shape_tuple

xp = None  # placeholder: the array namespace, bound in generated code

complex_safe(
    operator.add, operator.sub, operator.mul, operator.truediv, operator.neg, operator.pos,
    np.add, np.subtract, np.multiply, np.divide, np.true_divide, np.negative, np.positive,
    np.exp, np.sum, Method("sum"), np.mean, Method("mean"), np.reshape, Method("reshape"),
    np.ravel, Method("ravel"), Method("flatten"),
    np.matmul, operator.matmul, np.real, Attribute("real"),
    np.conj, np.conjugate, Method("conj"), Method("conjugate"),
    np.copy, Method("copy"), np.array, np.asarray,
    # holomorphic, their rules written with holomorphic operations only (dy * cos(x), dy / x)
    np.sin, np.cos, np.tan, np.sinh, np.cosh, np.tanh, np.log, np.log2, np.log10, np.log1p,
    np.expm1, np.exp2, np.sqrt, np.square, np.reciprocal,
)


@complex_adjoint(np.absolute, np.abs, builtins.abs)
def absolute(dy, y, x):
    return dy * rt.conj_over(x, y)


@rt.helper
def conj_over(z, r):
    """``conj(z) / r``, 0 where ``r`` is 0 (the subgradient complex ``abs`` and ``angle`` use)."""
    if is_array(z) or is_array(r):
        xp = namespace(z, r)
        zero = r == 0
        return xp.where(zero, 0, xp.conj(z) / xp.where(zero, 1, r))
    return 0.0 if r == 0 else z.conjugate() / r


@complex_adjoint(np.angle)
def angle(dy, y, z):
    """On a real ``z`` the cotangent is the real part: 0 (issue 11: it was refused)."""
    return rt.real_like(-1j * dy * rt.conj_over(z, rt.abs2(z)), z)


@rt.helper
def abs2(z):
    """``|z|**2`` as a real number or array."""
    return z.real * z.real + z.imag * z.imag


@complex_adjoint(np.imag)
def imag(dy, y, val):
    """On a real ``val`` the cotangent is the real part: 0 (issue 11: it was refused)."""
    return rt.real_like(-1j * dy, val)


@complex_adjoint(Attribute("imag"))
def imag_attribute(dy, y, self):
    return rt.real_like(-1j * dy, self)


@complex_adjoint(Method("astype"))
def astype_method(dy, y, self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """A cast from real to complex keeps the real part; complex to real: ``dy``."""
    return rt.cast_like(rt.real_like(rt.dtype_grad(dy, dtype, self), self), self)


@complex_adjoint(np.power, operator.pow, rt.power)
def power(dy, y, x1, x2):
    """``z ** c`` is holomorphic: ``dy * c * z ** (c - 1)``; the exponent's cotangent is
    ``dy * y * log(z)`` (0 at ``z == 0``). A real operand keeps the real part."""
    return (rt.unbroadcast(rt.real_like(dy * x2 * x1 ** (x2 - 1), x1), x1),
            rt.unbroadcast(rt.real_like(dy * y * rt.log_nonzero(x1), x2), x2))


@rt.helper
def log_nonzero(z):
    """``log(z)`` of a real or complex ``z``, 0 where ``z == 0``."""
    if is_array(z):
        xp = namespace(z)
        return xp.where(z == 0, 0, xp.log(xp.where(z == 0, 1, z)))
    import cmath
    return 0.0 if z == 0 else cmath.log(z)


@complex_adjoint(np.fft.fft)
def fft(dy, y, a, n=None, axis=-1):
    return rt.fft_vjp(dy, a, n, axis, False)


@rt.helper
def fft_vjp(dy, a, n, axis, inverse):
    """Cotangent of ``a`` through ``np.fft.fft(a)`` (``ifft`` if ``inverse``): the DFT
    matrix is symmetric, so it is the same transform of ``dy``."""
    from srcgrad.errors import UnsupportedError
    if n is not None and n != shape_tuple(a)[axis]:
        raise UnsupportedError(
            f"srcgrad: the gradient of np.fft.{'ifft' if inverse else 'fft'} with n={n} "
            f"(padding or cropping the input) is not supported",
            hint="Pad or crop the input with np.pad or slicing before the transform.")
    xp = namespace(dy, a)
    return (xp.fft.ifft if inverse else xp.fft.fft)(dy, axis=axis)


@complex_adjoint(np.fft.ifft)
def ifft(dy, y, a, n=None, axis=-1):
    return rt.fft_vjp(dy, a, n, axis, True)


@complex_adjoint(np.fft.rfft)
def rfft(dy, y, a, n=None, axis=-1):
    """``fft(a)``'s first ``len // 2 + 1`` entries: ``fft`` of ``dy`` padded with zeros to
    ``a``'s length (JAX's transpose); a real ``a`` keeps the real part."""
    return rt.real_like(rt.rfft_vjp(dy, a, n, axis), a)


@rt.helper
def rfft_vjp(dy, a, n, axis):
    """``fft`` of ``dy`` padded with zeros along ``axis`` to ``a``'s length."""
    length = shape_tuple(a)[axis]
    if n is not None and n != length:
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            f"srcgrad: the gradient of np.fft.rfft with n={n} (padding or cropping the input) "
            f"is not supported", hint="Pad or crop the input with np.pad or slicing first.")
    xp = namespace(dy, a)
    dy = xp.asarray(dy)
    widths = [(0, 0)] * dy.ndim
    widths[axis] = (0, length - dy.shape[axis])
    return xp.fft.fft(xp.pad(dy, widths), axis=axis)


# ----- tangents (forward mode) on complex values -----

@complex_tangent(np.absolute, np.abs, builtins.abs)
def absolute_tangent(y, x, *, t_x):
    return xp.real(rt.conj_over(x, y) * t_x)


@complex_tangent(np.angle)
def angle_tangent(y, z, *, t_z):
    return xp.imag(rt.conj_over(z, rt.abs2(z)) * t_z)


@complex_tangent(np.imag)
def imag_tangent(y, val, *, t_val):
    return xp.imag(t_val)


@complex_tangent(Attribute("imag"))
def imag_attribute_tangent(y, self, *, t_self):
    return xp.imag(t_self)


@complex_tangent(Method("astype"))
def astype_tangent(y, self, dtype, order="K", casting="unsafe", subok=True, copy=True, *, t_self):
    """A cast is linear: the tangent cast to ``y``'s dtype (real to complex keeps it,
    complex to real keeps its real part, as the value does)."""
    return rt.tangent_array(t_self, y, self)


@complex_adjoint(np.complex128, np.complex64, builtins.complex)
def complex_cast(dy, y, x):
    """``complex(x)`` of one real or complex value is the identity: a real ``x`` keeps
    the real part of ``dy`` (two arguments, ``complex(a, b)``, have no rule)."""
    return rt.cast_like(rt.real_like(dy, x), x)


@complex_tangent(np.complex128, np.complex64, builtins.complex)
def complex_cast_tangent(y, x, *, t_x):
    return rt.tangent_array(t_x, y, x)


@complex_tangent(np.power, operator.pow, rt.power)
def power_tangent(y, x1, x2, *, t_x1, t_x2):
    return t_x1 * x2 * x1 ** (x2 - 1) + t_x2 * y * rt.log_nonzero(x1)


@complex_tangent(rt.log_nonzero)
def log_nonzero_tangent(w, z, *, t_z):
    return t_z / rt.nonzero_or_one(z)


@complex_adjoint(rt.log_nonzero)
def log_nonzero_adjoint(dy, w, z):
    return dy / rt.nonzero_or_one(z)


@rt.helper
def nonzero_or_one(z):
    """``z`` with 1 where it is 0 (``log_nonzero``'s derivative, 1/z, taken as 1 there)."""
    if is_array(z):
        return namespace(z).where(z == 0, 1, z)
    return 1.0 if z == 0 else z


@complex_tangent(rt.nonzero_or_one)
def nonzero_or_one_tangent(w, z, *, t_z):
    return t_z * (z != 0)


@complex_tangent(np.fft.fft)
def fft_tangent(y, a, n=None, axis=-1, *, t_a):
    return xp.fft.fft(t_a, n, axis)


@complex_tangent(np.fft.rfft)
def rfft_tangent(y, a, n=None, axis=-1, *, t_a):
    return xp.fft.rfft(t_a, n, axis)


@complex_tangent(np.fft.ifft)
def ifft_tangent(y, a, n=None, axis=-1, *, t_a):
    return xp.fft.ifft(t_a, n, axis)


# ----- the helpers of complex gradients, for forward over reverse (sg.hessian) -----

@rt.helper
def conj_over_tangent(z, r, t_z, t_r):
    """The tangent of ``conj_over(z, r)`` (``conj(z) / r``, 0 where ``r`` is 0); None is
    a zero tangent."""
    xp = namespace(z, r)
    zero = r == 0
    safe = xp.where(zero, 1, r) if is_array(r) or is_array(z) else (1 if zero else r)
    t = 0.0
    if t_z is not None:
        t = t + xp.conj(t_z) / safe
    if t_r is not None:
        t = t - xp.conj(z) * t_r / (safe * safe)
    return xp.where(zero, 0, t) if is_array(t) else (0.0 if zero else t)


@complex_tangent(rt.conj_over)
def conj_over_tan(w, z, r, *, t_z, t_r):
    return rt.conj_over_tangent(z, r, t_z, t_r)


@complex_tangent(rt.abs2)
def abs2_tangent(w, z, *, t_z):
    return 2.0 * (z.real * xp.real(t_z) + z.imag * xp.imag(t_z))


complex_safe(rt.add_grad)   # a sum: its adjoint and tangent hold on complex values
linear(rt.fft_vjp, "dy", no_tangent=("a", "n", "axis", "inverse"))
linear(rt.rfft_vjp, "dy", no_tangent=("a", "n", "axis"))
