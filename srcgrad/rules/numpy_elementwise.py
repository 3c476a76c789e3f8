"""Adjoint rules of NumPy's elementwise functions (ufuncs) and casts.

Binary rules sum their gradients back to each operand's shape with
``rt.unbroadcast``. At kinks the rules pick one subgradient and say which:

* ``abs``/``fabs``: ``sign(x)``, so 0 at 0.
* ``maximum``/``minimum``/``fmax``/``fmin``: where both operands are equal the
  gradient is split evenly (0.5 each), like the ties of ``np.max``.
* These and ``clip`` give the operand not chosen exactly 0 (``rt.share``), also where the
  gradient arriving is infinite.
* ``clip``: an entry exactly on a bound counts as inside (its gradient goes to
  ``a``, not to the bound); where ``a_min > a_max`` the result, and the
  gradient, is ``a_max``'s (NumPy's ``minimum(maximum(a, a_min), a_max)``).
* ``sinc``: the derivative at 0 is 0 (its true value).
* ``hypot``: 0 at the origin.
"""

import operator

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Attribute, Method, adjoint, nondifferentiable, tangent, zero_gradient
from srcgrad.runtime.arrays import is_array, namespace

xp = None  # placeholder: the array namespace, bound in generated code

# (np.nextafter is not listed: nextafter(x, y) follows x with slope 1, so it is
# refused where it needs a gradient rather than given a silent zero; issue 11.)
zero_gradient(   # piecewise constant: an input reaching the output only through them gets zeros
    np.floor, np.ceil, np.round, np.around, np.rint, np.trunc, np.fix, np.sign, np.floor_divide,
    Method("round"), Method("__round__"),
)
nondifferentiable(
    np.signbit, np.isnan, np.isfinite, np.isinf, np.isposinf, np.isneginf,
    np.isreal, np.iscomplex, np.spacing,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
    np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift,
    np.right_shift, np.gcd, np.lcm,
    np.zeros_like, np.ones_like, np.empty_like, np.zeros, np.ones, np.empty,
    np.eye, np.identity, np.tri, np.indices,
)

# ----- Exponentials and logarithms -----


@adjoint(np.exp)
def exp(dy, y, x):
    return dy * y


@adjoint(np.exp2)
def exp2(dy, y, x):
    return dy * y * 0.6931471805599453


@adjoint(np.expm1)
def expm1(dy, y, x):
    return dy * (y + 1)


@adjoint(np.log)
def log(dy, y, x):
    return dy / x


@adjoint(np.log2)
def log2(dy, y, x):
    return dy / (x * 0.6931471805599453)


@adjoint(np.log10)
def log10(dy, y, x):
    return dy / (x * 2.302585092994046)


@adjoint(np.log1p)
def log1p(dy, y, x):
    return dy / (1 + x)


@adjoint(np.logaddexp)
def logaddexp(dy, y, x1, x2):
    return (rt.unbroadcast(dy * xp.exp(x1 - y), x1),
            rt.unbroadcast(dy * xp.exp(x2 - y), x2))


@adjoint(np.logaddexp2)
def logaddexp2(dy, y, x1, x2):
    return (rt.unbroadcast(dy * xp.exp2(x1 - y), x1),
            rt.unbroadcast(dy * xp.exp2(x2 - y), x2))


# ----- Powers and roots -----


@adjoint(np.sqrt)
def sqrt(dy, y, x):
    return dy / (2 * y)


@adjoint(np.cbrt)
def cbrt(dy, y, x):
    return dy / (3 * y * y)


@adjoint(np.square)
def square(dy, y, x):
    return dy * 2 * x


@adjoint(np.reciprocal)
def reciprocal(dy, y, x):
    return -dy * y * y


@adjoint(np.power, np.float_power, operator.pow, rt.power)
def power(dy, y, x1, x2):
    """``x2 * x1 ** (x2 - 1)``, exactly 0 where ``x2 == 0`` (even at ``x1 == 0``, where
    ``x1 ** -1`` is infinite): the base is moved to 1 where both are 0, and only there, so
    that the derivative of this gradient in ``x2`` is ``x1 ** -1`` at ``x2 == 0`` (JAX
    issue 12033; raising the exponent to 0 wherever ``x2 == 0`` made it 1). A mask added
    to the base keeps a float32 base float32. ``rt.power`` is ``**`` with NumPy's inf
    where Python floats raise (``0.0 ** -0.5``); a literal exponent of at least 0 is
    written ``**`` (templates.py). The exponent's gradient ``y * log(x1)`` is 0 where ``x1 <= 0`` (JAX's
    convention at ``x1 == 0``)."""
    return (rt.unbroadcast(dy * x2 * rt.power(x1 + ((x2 == 0) & (x1 == 0)), x2 - 1), x1),
            rt.unbroadcast(dy * y * rt.log_or_zero(x1), x2))


@adjoint(np.ldexp)
def ldexp(dy, y, x1, x2):
    return rt.unbroadcast(dy * 2.0 ** x2, x1), None


# ----- Trigonometric and hyperbolic -----


@adjoint(np.sin)
def sin(dy, y, x):
    return dy * xp.cos(x)


@adjoint(np.cos)
def cos(dy, y, x):
    return -dy * xp.sin(x)


@adjoint(np.tan)
def tan(dy, y, x):
    return dy * (1 + y * y)


@adjoint(np.arcsin)
def arcsin(dy, y, x):
    """``(1 - x) * (1 + x)``, not ``1 - x * x``: exact near ``|x| = 1``, where ``x * x``
    rounds (float32 lost a few percent of the gradient at ``x = 0.999999``)."""
    return dy / xp.sqrt((1 - x) * (1 + x))


@adjoint(np.arccos)
def arccos(dy, y, x):
    """As ``arcsin``'s, negated."""
    return -dy / xp.sqrt((1 - x) * (1 + x))


@adjoint(np.arctan)
def arctan(dy, y, x):
    return dy / (1 + x * x)


@adjoint(np.arctan2)
def arctan2(dy, y, x1, x2):
    r2 = x1 * x1 + x2 * x2
    return rt.unbroadcast(dy * x2 / r2, x1), rt.unbroadcast(-dy * x1 / r2, x2)


@adjoint(np.hypot)
def hypot(dy, y, x1, x2):
    """0 at the origin (like ``abs`` at 0 and ``math.hypot``), not 0 / 0."""
    r = xp.where(y == 0, 1.0, y)
    return rt.unbroadcast(dy * x1 / r, x1), rt.unbroadcast(dy * x2 / r, x2)


@adjoint(np.sinh)
def sinh(dy, y, x):
    return dy * xp.cosh(x)


@adjoint(np.cosh)
def cosh(dy, y, x):
    return dy * xp.sinh(x)


@adjoint(np.tanh)
def tanh(dy, y, x):
    return dy * (1 - y * y)


@adjoint(np.arcsinh)
def arcsinh(dy, y, x):
    """``1 / hypot(x, 1)``: ``x * x`` overflows for ``|x| > 1e154`` (``1e19`` in float32),
    which made the gradient 0 instead of ``1 / |x|``."""
    return dy / xp.hypot(x, 1.0)


@adjoint(np.arccosh)
def arccosh(dy, y, x):
    """``sqrt(x - 1) * sqrt(x + 1)``: exact near 1, where ``x * x - 1`` cancels, and no
    overflow where ``x * x`` would."""
    return dy / (xp.sqrt(x - 1) * xp.sqrt(x + 1))


@adjoint(np.arctanh)
def arctanh(dy, y, x):
    """``(1 - x) * (1 + x)``: exact near ``|x| = 1`` (see ``arcsin``)."""
    return dy / ((1 - x) * (1 + x))


@adjoint(np.deg2rad, np.radians)
def deg2rad(dy, y, x):
    return dy * 0.017453292519943295


@adjoint(np.rad2deg, np.degrees)
def rad2deg(dy, y, x):
    return dy * 57.29577951308232


@adjoint(np.sinc)
def sinc(dy, y, x):
    return dy * rt.sinc_grad(x)


@tangent(np.sinc)
def sinc_tangent(y, x, *, t_x):
    return t_x * rt.sinc_grad(x)


@rt.helper
def sinc_grad(x):
    """``sinc'(x) = (cos(pi x) - sinc(x)) / x`` (its Taylor series near 0, where that
    cancels; 0 at 0): a helper of its own so that its derivative is ``sinc''`` at 0 too
    (``xp.where(x == 0, 0.0, ...)`` differentiated again would give 0 there)."""
    xp = namespace(x)
    p2 = xp.pi ** 2
    small = xp.abs(x) < 1e-2
    safe = xp.where(small, 1.0, x)
    series = x * (-p2 / 3 + x * x * (p2 * p2 / 30 - x * x * p2 ** 3 / 840))
    return xp.where(small, series, (xp.cos(xp.pi * x) - xp.sinc(x)) / safe)


@rt.helper
def sinc_grad2(x):
    """``sinc''(x) = -pi**2 sinc(x) - 2 sinc'(x) / x``, its Taylor series near 0 (its own
    derivative is not provided: a fourth derivative of sinc is refused)."""
    xp = namespace(x)
    p2 = xp.pi ** 2
    small = xp.abs(x) < 1e-2
    safe = xp.where(small, 1.0, x)
    series = -p2 / 3 + x * x * (p2 * p2 / 10 - x * x * p2 ** 3 / 168)
    return xp.where(small, series, -p2 * xp.sinc(x) - 2.0 * sinc_grad(x) / safe)


@adjoint(rt.sinc_grad)
def sinc_grad_adjoint(dw, w, x):
    return dw * rt.sinc_grad2(x)


@tangent(rt.sinc_grad)
def sinc_grad_tangent(w, x, *, t_x):
    return t_x * rt.sinc_grad2(x)


# ----- Signs and absolute values -----


@adjoint(np.absolute, np.abs, np.fabs)
def absolute(dy, y, x):
    return dy * xp.sign(x)


@adjoint(np.negative, operator.neg)
def negative(dy, y, x):
    return -dy


@adjoint(np.positive, operator.pos)
def positive(dy, y, x):
    return dy


@adjoint(np.copysign)
def copysign(dy, y, x1, x2):
    return rt.unbroadcast(dy * xp.sign(x1) * xp.sign(y), x1), None


@adjoint(np.heaviside)
def heaviside(dy, y, x1, x2):
    """Zero almost everywhere in ``x1``; ``x2`` (the value at 0) gets ``dy`` where ``x1 == 0``."""
    return rt.unbroadcast(dy * 0.0, x1), rt.unbroadcast(dy * (x1 == 0), x2)


# ----- Arithmetic -----


@adjoint(np.add, operator.add)
def add(dy, y, x1, x2):
    return rt.unbroadcast(dy, x1), rt.unbroadcast(dy, x2)


@adjoint(np.subtract, operator.sub)
def subtract(dy, y, x1, x2):
    return rt.unbroadcast(dy, x1), rt.unbroadcast(-dy, x2)


@adjoint(np.multiply, operator.mul)
def multiply(dy, y, x1, x2):
    return rt.unbroadcast(dy * x2, x1), rt.unbroadcast(dy * x1, x2)


@adjoint(np.true_divide, np.divide, operator.truediv)
def true_divide(dy, y, x1, x2):
    return rt.unbroadcast(dy / x2, x1), rt.unbroadcast(-dy * y / x2, x2)


@adjoint(np.mod, np.remainder, operator.mod)
def remainder(dy, y, x1, x2):
    """``x1 - floor(x1 / x2) * x2``: slope 1 in ``x1``, ``-floor(x1 / x2)`` in ``x2``."""
    return rt.unbroadcast(dy, x1), rt.unbroadcast(-dy * xp.floor(x1 / x2), x2)


@adjoint(np.fmod)
def fmod(dy, y, x1, x2):
    """``x1 - trunc(x1 / x2) * x2``."""
    return rt.unbroadcast(dy, x1), rt.unbroadcast(-dy * xp.trunc(x1 / x2), x2)


@adjoint(np.maximum)
def maximum(dy, y, x1, x2):
    """Ties (``x1 == x2``) split the gradient evenly."""
    w = (x1 > x2) + 0.5 * (x1 == x2)
    return rt.unbroadcast(rt.share(dy, w), x1), rt.unbroadcast(rt.share(dy, 1 - w), x2)


@adjoint(np.minimum)
def minimum(dy, y, x1, x2):
    """Ties (``x1 == x2``) split the gradient evenly."""
    w = (x1 < x2) + 0.5 * (x1 == x2)
    return rt.unbroadcast(rt.share(dy, w), x1), rt.unbroadcast(rt.share(dy, 1 - w), x2)


@adjoint(np.fmax)
def fmax(dy, y, x1, x2):
    """Like ``maximum``; a NaN operand passes the gradient to the other one."""
    w = (x1 > x2) + 0.5 * (x1 == x2) + xp.isnan(x2)
    return rt.unbroadcast(rt.share(dy, w), x1), rt.unbroadcast(rt.share(dy, 1 - w), x2)


@adjoint(np.fmin)
def fmin(dy, y, x1, x2):
    """Like ``minimum``; a NaN operand passes the gradient to the other one."""
    w = (x1 < x2) + 0.5 * (x1 == x2) + xp.isnan(x2)
    return rt.unbroadcast(rt.share(dy, w), x1), rt.unbroadcast(rt.share(dy, 1 - w), x2)


@adjoint(np.clip)
def clip(dy, y, a, a_min=None, a_max=None, *, min=None, max=None):
    """An entry on a bound counts as inside: its gradient goes to ``a``.

    NumPy 2's keyword spellings ``min=``/``max=`` are accepted too (one of
    ``a_min``/``min`` is None, so each bound's gradient goes to the one given).
    """
    lo = rt.clip_below(a, rt.either(a_min, min), rt.either(a_max, max))
    hi = rt.clip_above(a, rt.either(a_max, max), rt.either(a_min, min))
    return (rt.unbroadcast(rt.share(dy, 1 - lo - hi), a),
            rt.unbroadcast(rt.share(dy, lo), a_min),
            rt.unbroadcast(rt.share(dy, hi), a_max),
            rt.unbroadcast(rt.share(dy, lo), min),
            rt.unbroadcast(rt.share(dy, hi), max))


@rt.helper
def share(g, weights):
    """``g * weights``, but exactly 0 where a weight is 0 even where ``g`` is infinite or
    NaN: the operand a maximum, minimum or clip did not choose gets no gradient (as in
    PyTorch), not ``0 * inf = nan`` (``np.sqrt(np.clip(x, 0, None))`` at ``x < 0``).
    NumPy checks the product's sum first, as a masked select is several times slower
    than the product on unsorted masks."""
    product = g * weights
    if not is_array(product):
        return product if weights != 0 else type(product)(0)
    if type(product) is np.ndarray and product.dtype.kind in "fc" and np.isfinite(product.sum()):
        return product
    xp = namespace(product)
    return xp.where(weights == 0, xp.zeros((), dtype=product.dtype), product)


@rt.helper
def clip_below(a, a_min, a_max=None):
    """Mask of the entries that ``clip`` raised to ``a_min`` (False when there is no bound).

    ``clip`` is ``minimum(maximum(a, a_min), a_max)``: where ``a_min > a_max`` the
    upper bound wins, so those entries are not ``a_min``'s.
    """
    if a_min is None:
        return False
    below = a < a_min
    if a_max is None:
        return below
    xp = namespace(a, a_min, a_max)
    return xp.logical_and(below, xp.logical_not(a_min > a_max))


@rt.helper
def clip_above(a, a_max, a_min=None):
    """Mask of the entries that ``clip`` lowered to ``a_max`` (False when there is no bound):
    those where ``maximum(a, a_min)`` exceeds it."""
    if a_max is None:
        return False
    if a_min is not None:
        a = namespace(a, a_min).maximum(a, a_min)
    return a > a_max


@rt.helper
def either(first, second):
    """``first`` unless it is None, else ``second`` (NumPy 2's ``clip(min=...)`` spelling)."""
    return second if first is None else first


@adjoint(Method("clip"))
def clip_method(dy, y, self, min=None, max=None):
    """An entry on a bound counts as inside: its gradient goes to ``self``."""
    lo = rt.clip_below(self, min, max)
    hi = rt.clip_above(self, max, min)
    return (rt.unbroadcast(rt.share(dy, 1 - lo - hi), self),
            rt.unbroadcast(rt.share(dy, lo), min),
            rt.unbroadcast(rt.share(dy, hi), max))


@adjoint(np.where)
def where(dy, y, condition, x1, x2):
    """``np.where(condition, x, y)``; its positional parameters are named x1, x2 here
    because ``y`` is the output."""
    return (None,
            rt.unbroadcast(xp.where(condition, dy, 0.0), x1),
            rt.unbroadcast(xp.where(condition, 0.0, dy), x2))


@adjoint(np.nan_to_num)
def nan_to_num(dy, y, x, copy=True, nan=0.0, posinf=None, neginf=None):
    return (dy * xp.isfinite(x), None,
            rt.unbroadcast(dy * xp.isnan(x), nan),
            rt.unbroadcast(dy * xp.isposinf(x), posinf),
            rt.unbroadcast(dy * xp.isneginf(x), neginf))


# ----- Complex parts (real inputs) -----


@adjoint(np.real)
def real(dy, y, val):
    return xp.real(dy)


@adjoint(np.polyval)
def polyval(dy, y, p, x):
    """1-D coefficients ``p``: ``x ** (n - 1 - i)`` for coefficient ``i``; the
    derivative polynomial for ``x``."""
    return rt.polyval_vjp(dy, p, x), rt.unbroadcast(dy * xp.polyval(rt.polyder(p), x), x)


@rt.helper
def polyder(p, m=1):
    """``np.polyder`` of 1-D coefficients in NumPy's or another array module (CuPy has
    none): each step multiplies coefficient ``i`` of ``n`` by its power ``n - 1 - i``."""
    xp = namespace(p)
    if xp is np:
        return np.polyder(p, m)
    p = xp.asarray(p)
    for _ in range(m):
        if p.shape[0] == 0:
            break
        p = p[:-1] * xp.arange(p.shape[0] - 1, 0, -1)
    return p


@rt.helper
def polyval_vjp(dy, p, x):
    """Gradient of ``polyval(p, x)`` with respect to the coefficients ``p`` (1-D):
    ``sum(dy * x ** (n - 1 - i))`` for coefficient ``i``."""
    xp = namespace(dy, x, p)
    p = xp.asarray(p)
    n = p.shape[0]
    powers = xp.asarray(x)[..., None] ** xp.arange(n - 1, -1, -1, dtype=p.dtype)
    g = xp.asarray(dy)[..., None] * powers
    return g.reshape(-1, n).sum(axis=0)


@adjoint(np.real_if_close)
def real_if_close(dy, y, a, tol=100):
    """The identity on a real ``a``; on a complex one the real part's rule, as ``np.real``."""
    return dy, None


@adjoint(Attribute("real"))
def real_attribute(dy, y, self):
    return xp.real(dy)


@adjoint(np.conjugate, np.conj)
def conjugate(dy, y, x):
    return xp.conj(dy)


@adjoint(Method("conj"), Method("conjugate"))
def conjugate_method(dy, y, self):
    return xp.conj(dy)


# ----- Constructors with a differentiable fill value, casts and copies -----


# A cast to an integer or boolean dtype passes no gradient. Where the dtype is
# known when compiling, activity (analysis/kinds.py) already makes the result a
# constant; ``rt.dtype_grad`` decides the others at run time.


@adjoint(np.full)
def full(dy, y, shape, fill_value, dtype=None):
    return None, rt.unbroadcast(rt.dtype_grad(dy, dtype, fill_value), fill_value), None


@adjoint(np.full_like)
def full_like(dy, y, a, fill_value, dtype=None):
    """The result does not depend on ``a``'s values: only ``fill_value`` gets a gradient,
    unless the result (``a``'s dtype, or ``dtype``) is an integer array."""
    return None, rt.unbroadcast(rt.dtype_grad(dy, rt.dtype_of(a, dtype), fill_value), fill_value), None


@adjoint(np.arange)
def arange(dy, y, start, stop=None, step=None):
    """``start + k * step``. How many values there are is piecewise constant, so
    ``stop`` gets no gradient, nor does a lone argument (``np.arange(stop)``).
    ``dtype`` is not supported."""
    return (xp.sum(dy) * rt.is_given(stop), xp.sum(dy) * 0.0, xp.sum(dy * rt.arange_index(y)))


@rt.helper
def arange_index(y):
    """``0, 1, ..., len(y) - 1``: how many steps each value of ``arange`` is from its start."""
    return namespace(y).arange(len(y), dtype=y.dtype)


@rt.helper
def is_given(value):
    """1.0 unless ``value`` is None (an argument left out), else 0.0."""
    return 0.0 if value is None else 1.0


@adjoint(np.linspace)
def linspace(dy, y, start, stop, num=50, endpoint=True, *, axis=0):
    """``start + (stop - start) * t``. ``retstep`` and ``dtype`` are not supported."""
    t = rt.linspace_weights(y, num, endpoint, axis)
    return (rt.unbroadcast(xp.sum(dy * (1 - t), axis=axis), start),
            rt.unbroadcast(xp.sum(dy * t, axis=axis), stop), None, None, None)


@rt.helper
def linspace_weights(y, num, endpoint=True, axis=0):
    """Where each sample of ``linspace(start, stop, num, endpoint, axis=axis)`` (``y``)
    lies between ``start`` (0) and ``stop`` (1), shaped to broadcast against ``y``."""
    xp = namespace(y)
    ndim = max(getattr(y, "ndim", 1), 1)
    shape = [1] * ndim
    shape[axis % ndim] = num
    return xp.reshape(xp.linspace(0.0, 1.0, num, endpoint=endpoint), shape)


@adjoint(np.logspace)
def logspace(dy, y, start, stop, num=50, endpoint=True, base=10.0, *, axis=0):
    """``base ** linspace(start, stop)``. ``dtype`` is not supported."""
    t = rt.linspace_weights(y, num, endpoint, axis)
    g = dy * y * rt.unreduce_like(xp.log(base), y, axis)
    e = xp.linspace(start, stop, num, endpoint=endpoint, axis=axis)
    return (rt.unbroadcast(xp.sum(g * (1 - t), axis=axis), start),
            rt.unbroadcast(xp.sum(g * t, axis=axis), stop), None, None,
            rt.unbroadcast(xp.sum(dy * y * e, axis=axis) / base, base), None)


@adjoint(np.geomspace)
def geomspace(dy, y, start, stop, num=50, endpoint=True, *, axis=0):
    """``start * (stop / start) ** t``. ``dtype`` is not supported."""
    t = rt.linspace_weights(y, num, endpoint, axis)
    return (rt.unbroadcast(xp.sum(dy * y * (1 - t), axis=axis) / start, start),
            rt.unbroadcast(xp.sum(dy * y * t, axis=axis) / stop, stop), None, None, None)


@adjoint(Method("astype"))
def astype_method(dy, y, self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """Float to float casts back to ``self``'s dtype; a cast to an integer dtype: zero."""
    return rt.cast_like(rt.dtype_grad(dy, dtype, self), self)


@adjoint(np.float64, np.float32, np.float16)
def float_cast(dy, y, x=0.0):
    return rt.cast_like(dy, x)


@adjoint(np.copy)
def copy(dy, y, a, order="K"):
    return dy


@adjoint(Method("copy"), sequences=("self",))
def copy_method(dy, y, self, order="C"):
    """An array's copy, or a list's or dict's (a new one holding the same items): the
    adjoint of each is the copy's, of the same structure."""
    return dy
