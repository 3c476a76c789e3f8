"""Adjoint rules of Python's builtins and of the ``math`` module.

These work on Python floats (the gradient of a float is a float): templates use
plain arithmetic, or ``rt.sin``/``rt.cos``/``rt.exp``... which call ``math``
for numbers and the array namespace for arrays, never ``xp`` (that would turn
a host float into a device array under CuPy).

* ``abs``/``math.fabs``: ``sign(x)``, 0 at 0.
* ``max``/``min`` with ties: the gradient is split evenly among the tied
  arguments (like ``np.max``). Their parameter is var-positional: the rule
  returns a list, one gradient per positional argument; a single iterable
  argument gets ``[list of per-item gradients]`` (or ``[array]``).
* ``sum(iterable, start)``: the iterable gets one gradient per item (a list),
  or an array when it is an array.
* ``math.hypot(*coordinates)``: a list, 0 at the origin.
"""

import builtins
import math
import operator

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Method, adjoint, linear, nondifferentiable, returns_sequence, tangent, zero_gradient
from srcgrad.runtime.arrays import float_dtype, is_array, log, namespace
from srcgrad.runtime.broadcast import unbroadcast
from srcgrad.runtime.containers import is_zero_grad, seq_item

xp = None  # placeholder: the array namespace, bound in generated code

zero_gradient(builtins.round, math.floor, math.ceil, math.trunc)
nondifferentiable(
    builtins.int, builtins.bool, builtins.len, builtins.range,
    builtins.isinstance, builtins.hash, builtins.id, builtins.slice,
    builtins.hasattr, builtins.callable,
    math.isnan, math.isinf, math.isfinite,
    math.isclose, math.factorial, math.gcd, math.comb, math.perm,
)

# ----- Builtins -----


@adjoint(builtins.abs)
def builtin_abs(dy, y, x):
    return dy * rt.sign(x)


@adjoint(builtins.float)
def builtin_float(dy, y, x=0.0):
    return dy


@adjoint(builtins.pow)
def builtin_pow(dy, y, base, exp, mod=None):
    """Exactly 0 in ``base`` where ``exp == 0`` (even at base 0), as for ``np.power``."""
    return (rt.unbroadcast(dy * exp * rt.power(base + ((exp == 0) & (base == 0)), exp - 1), base),
            rt.unbroadcast(dy * y * rt.log_or_zero(base), exp), None)


@adjoint(builtins.sum, sequences=("iterable",))
def builtin_sum(dy, y, iterable, start=0):
    return rt.builtin_sum_vjp(dy, iterable), rt.unbroadcast(dy, start)


@rt.helper
def builtin_sum_vjp(dy, iterable):
    """Gradient of Python's ``sum(iterable)`` with respect to the iterable.

    An array (summed over its first axis) gets an array; a list gets a list.
    """
    if is_array(iterable):
        xp = namespace(iterable, dy)
        return xp.broadcast_to(xp.asarray(dy), iterable.shape)
    refuse_concatenation(iterable)
    return [unbroadcast(dy, item) for item in iterable]


def refuse_lexicographic(items):
    """``max``/``min`` of lists or tuples compares them item by item and returns one of
    them: refused (the rules of numbers failed multiplying a list by a share)."""
    if any(isinstance(item, (list, tuple)) for item in items):
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError("srcgrad: max() or min() of lists or tuples (compared item by "
                               "item) is not supported",
                               hint="Pick the index first (k = 0 if a > b else 1) and read the "
                                    "sequence at it.")


def refuse_concatenation(items):
    """``sum(lists, [])`` joins lists (or tuples): its derivative is not a sum's; refused
    (the sum's rules gave each item the whole cotangent list, and forward mode failed)."""
    if any(isinstance(item, (list, tuple)) for item in items):
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError("srcgrad: sum() of lists or tuples (a concatenation, with a list "
                               "or tuple start) is not supported",
                               hint="Join the lists with + or itertools.chain, or build one list "
                                    "with .extend.")


@adjoint(builtins.divmod, np.divmod)
def builtin_divmod(dy, y, x1, x2):
    """``(q, r) = (x1 // x2, x1 % x2)``: ``dy`` is the pair of cotangents. The
    quotient is piecewise constant; the remainder ``x1 - q * x2`` has slope 1 in
    ``x1`` and ``-q`` in ``x2`` (issue 11: it used to carry no gradient at all)."""
    dr = rt.seq_item(dy, 1)
    return rt.unbroadcast(dr, x1), rt.unbroadcast(-dr * rt.seq_item(y, 0), x2)


@adjoint(builtins.max, sequences=("args",))
def builtin_max(dy, y, *args):
    """Ties split the gradient evenly; a list, one gradient per argument."""
    return rt.minmax_vjp(dy, y, args)


@rt.helper
def minmax_vjp(dy, y, args):
    """Gradients of Python's ``max``/``min`` (``args`` its positional arguments).

    Ties share the gradient evenly, like ``np.max``. One iterable argument gets
    ``[gradient of the iterable]``, several arguments a list of one each.
    """
    items = args[0] if len(args) == 1 else args
    if is_array(items):
        xp = namespace(items, dy)
        mask = items == y
        return [rt.share(dy, mask / mask.sum())]
    refuse_lexicographic(items)
    hits = [1.0 if item == y else 0.0 for item in items]
    count = sum(hits)
    grads = [rt.share(dy, h / count) for h in hits]
    return [grads] if len(args) == 1 else grads


@adjoint(builtins.min, sequences=("args",))
def builtin_min(dy, y, *args):
    """Ties split the gradient evenly; a list, one gradient per argument."""
    return rt.minmax_vjp(dy, y, args)


# ----- math: exponentials, logarithms, powers -----


@adjoint(math.exp)
def math_exp(dy, y, x):
    return dy * y


@adjoint(math.expm1)
def math_expm1(dy, y, x):
    return dy * (y + 1)


@adjoint(math.log)
def math_log(dy, y, x, base=None):
    """``math.log(x)`` or ``math.log(x, base)``."""
    return dy / (x * rt.log_base(base)), rt.log_base_grad(dy, y, base)


@rt.helper
def log_base(base):
    """``log(base)``, or 1.0 when there is no base (``math.log(x)``)."""
    if base is None:
        return 1.0
    return log(base)


@rt.helper
def log_base_grad(dy, y, base):
    """Gradient of ``math.log(x, base)`` with respect to ``base`` (0.0 without a base)."""
    if base is None:
        return 0.0
    return -dy * y / (base * log(base))


@tangent(math.log)
def math_log_tangent(y, x, base=None, *, t_x, t_base):
    return t_x / (x * rt.log_base(base)) + rt.log_base_grad(t_base, y, base)


@adjoint(rt.log_base_grad)
def log_base_grad_adjoint(dw, w, dy, y, base):
    """``-dy * y / (base log(base))``: bilinear in ``dy`` and ``y``."""
    return (rt.log_base_grad(dw, y, base), rt.log_base_grad(dw, dy, base),
            dw * rt.log_base_grad_base(dy, y, base))


@tangent(rt.log_base_grad)
def log_base_grad_tangent(w, dy, y, base, *, t_dy, t_y, t_base):
    return (rt.log_base_grad(t_dy, y, base) + rt.log_base_grad(dy, t_y, base)
            + t_base * rt.log_base_grad_base(dy, y, base))


@rt.helper
def log_base_grad_base(dy, y, base):
    """The derivative of ``log_base_grad(dy, y, base)`` in ``base`` (0.0 without one)."""
    if base is None:
        return 0.0
    return dy * y * (log(base) + 1.0) / (base * log(base)) ** 2


@adjoint(math.log1p)
def math_log1p(dy, y, x):
    return dy / (1 + x)


@adjoint(math.log2)
def math_log2(dy, y, x):
    return dy / (x * 0.6931471805599453)


@adjoint(math.log10)
def math_log10(dy, y, x):
    return dy / (x * 2.302585092994046)


@adjoint(math.sqrt)
def math_sqrt(dy, y, x):
    """inf at 0 with NumPy's warning (``rt.divide``), as ``np.sqrt`` and PyTorch give."""
    return rt.divide(dy, 2 * y)


@adjoint(math.pow)
def math_pow(dy, y, x1, x2):
    """Exactly 0 in ``x1`` where ``x2 == 0`` (even at ``x1 == 0``), as for ``np.power``."""
    return dy * x2 * rt.power(x1 + ((x2 == 0) & (x1 == 0)), x2 - 1), dy * y * rt.log_or_zero(x1)


# ----- math: trigonometric and hyperbolic -----


@adjoint(math.sin)
def math_sin(dy, y, x):
    return dy * rt.cos(x)


@adjoint(math.cos)
def math_cos(dy, y, x):
    return -dy * rt.sin(x)


@adjoint(math.tan)
def math_tan(dy, y, x):
    return dy * (1 + y * y)


@adjoint(math.asin)
def math_asin(dy, y, x):
    """inf at -1 and 1 (``rt.divide``)."""
    return rt.divide(dy, ((1 - x) * (1 + x)) ** 0.5)


@adjoint(math.acos)
def math_acos(dy, y, x):
    """-inf at -1 and 1 (``rt.divide``)."""
    return -rt.divide(dy, ((1 - x) * (1 + x)) ** 0.5)


@adjoint(math.atan)
def math_atan(dy, y, x):
    return dy / (1 + x * x)


@adjoint(math.atan2)
def math_atan2(dy, y, x1, x2):
    """``math.atan2(y, x)``; its positional parameters are named x1, x2 here. nan at the
    origin (``rt.divide``: 0 * inf), as NumPy floats and PyTorch give."""
    inv_r2 = rt.divide(1.0, x1 * x1 + x2 * x2)
    return dy * x2 * inv_r2, -dy * x1 * inv_r2


@adjoint(math.sinh)
def math_sinh(dy, y, x):
    return dy * rt.cosh(x)


@adjoint(math.cosh)
def math_cosh(dy, y, x):
    return dy * rt.sinh(x)


@adjoint(math.tanh)
def math_tanh(dy, y, x):
    return dy * (1 - y * y)


@adjoint(math.asinh)
def math_asinh(dy, y, x):
    return dy * (x * x + 1) ** -0.5


@adjoint(math.acosh)
def math_acosh(dy, y, x):
    """inf at 1 (``rt.divide``)."""
    return rt.divide(dy, ((x - 1) * (x + 1)) ** 0.5)


@adjoint(math.atanh)
def math_atanh(dy, y, x):
    return dy / ((1 - x) * (1 + x))


@adjoint(math.hypot, sequences=("coordinates",))
def math_hypot(dy, y, *coordinates):
    """A list, one gradient per coordinate (0 at the origin)."""
    return rt.hypot_vjp(dy, y, coordinates)


@rt.helper
def hypot_vjp(dy, y, coordinates):
    """Gradients of ``math.hypot(*coordinates)``: a list (0 at the origin)."""
    if y == 0:
        return [0.0 for _ in coordinates]
    return [dy * c / y for c in coordinates]


@adjoint(math.degrees)
def math_degrees(dy, y, x):
    return dy * 57.29577951308232


@adjoint(math.radians)
def math_radians(dy, y, x):
    return dy * 0.017453292519943295


# ----- math: signs, special functions -----


@adjoint(math.fabs)
def math_fabs(dy, y, x):
    return dy * rt.sign(x)


@adjoint(math.copysign)
def math_copysign(dy, y, x1, x2):
    return dy * rt.sign(x1) * rt.sign(y), None


@adjoint(math.fmod)
def math_fmod(dy, y, x1, x2):
    """``x1 - trunc(x1 / x2) * x2`` (``int`` truncates toward 0, as ``fmod`` does)."""
    return dy, -dy * int(x1 / x2)


@adjoint(math.remainder)
def math_remainder(dy, y, x1, x2):
    """``x1 - n * x2`` with ``n`` the integer nearest ``x1 / x2``, ties to even
    (Python's ``round``, as IEEE ``remainder``)."""
    return dy, -dy * round(x1 / x2)


@adjoint(math.erf)
def math_erf(dy, y, x):
    return dy * 1.1283791670955126 * rt.exp(-x * x)


@adjoint(math.erfc)
def math_erfc(dy, y, x):
    return -dy * 1.1283791670955126 * rt.exp(-x * x)


@adjoint(math.gamma)
def math_gamma(dy, y, x):
    """``gamma(x) * digamma(x)``."""
    return dy * y * rt.digamma(x)


@adjoint(math.lgamma)
def math_lgamma(dy, y, x):
    """``digamma(x)`` (the sign of ``gamma`` is piecewise constant)."""
    return dy * rt.digamma(x)


@rt.helper
def digamma(x):
    """The digamma function of a float: the recurrence up to 6, then the asymptotic series
    (error below 1e-13); reflection for negative ``x``."""
    x = float(x)
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0:
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    total = 0.0
    while x < 6:
        total -= 1 / x
        x += 1
    inv2 = 1 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return total + math.log(x) - 0.5 / x - series


@adjoint(math.fsum, sequences=("seq",))
def math_fsum(dy, y, seq):
    return rt.builtin_sum_vjp(dy, seq)


@adjoint(math.prod, sequences=("iterable",))
def math_prod(dy, y, iterable, *, start=1):
    return rt.prod_vjp(dy, iterable, start), rt.unbroadcast(dy * rt.prod_of_others(iterable, 1, None), start)


@rt.helper
def prod_of_others(items, start, skip):
    """``start`` times every item of ``items`` but the one at ``skip`` (None: all of
    them), multiplied out without dividing (an item may be zero)."""
    out = start
    for k, item in enumerate(items):
        if k != skip:
            out = out * item
    return out


@rt.helper
def prod_vjp(dy, items, start):
    """Gradient of ``math.prod(items, start=start)``: for each item, ``dy`` times the
    product of the others (and ``start``), in the item's shape."""
    items = list(items)
    return [unbroadcast(dy * prod_of_others(items, start, k), item) for k, item in enumerate(items)]


if hasattr(math, "exp2"):
    @adjoint(math.exp2)
    def math_exp2(dy, y, x):
        return dy * y * 0.6931471805599453

if hasattr(math, "cbrt"):
    @adjoint(math.cbrt)
    def math_cbrt(dy, y, x):
        return dy / (3 * y * y)


# ----- Containers: list(), tuple() and dict views (pytree.py) -----

nondifferentiable(Method("keys"))
nondifferentiable(Method("startswith"), Method("endswith"))   # (a dict's str keys: a bool)


@adjoint(builtins.list, builtins.tuple, sequences=("iterable",))
def builtin_list(dy, y, iterable):
    """A list's adjoint is a list; an array's (its rows) is an array; a dict's (its keys) none."""
    return rt.list_vjp(dy, iterable)


@rt.helper
def list_vjp(dy, iterable):
    """Adjoint of ``list(iterable)`` (or ``tuple``) from the list's adjoint ``dy``."""
    if is_zero_grad(dy) or isinstance(iterable, dict):
        return 0.0   # a dict's list is its keys: no gradient
    if is_array(iterable):
        xp = namespace(iterable)
        rows = [xp.zeros(iterable.shape[1:], dtype=float_dtype(iterable, xp)) if is_zero_grad(g) else g
                for g in dy]
        return xp.stack(rows) if rows else xp.zeros(iterable.shape, dtype=float_dtype(iterable, xp))
    return list(dy)


linear(rt.list_vjp, "dy", no_tangent=("iterable",))   # forward over reverse (an hvp through `*rest, last = xs`)


@adjoint(Method("values"), sequences=("self",))
def dict_values(dy, y, self):
    return rt.dict_values_vjp(dy, self)


@rt.helper
def dict_values_vjp(dy, d):
    """Adjoint of ``d.values()`` (a list of the values' adjoints) as a dict adjoint."""
    if is_zero_grad(dy):
        return 0.0
    return dict(zip(d, dy))


@adjoint(Method("items"), sequences=("self",))
def dict_items(dy, y, self):
    return rt.dict_items_vjp(dy, self)


@rt.helper
def dict_items_vjp(dy, d):
    """Adjoint of ``d.items()`` (a list of (key, value) adjoints) as a dict adjoint."""
    if is_zero_grad(dy):
        return 0.0
    return {k: seq_item(g, 1) for k, g in zip(d, dy)}


@adjoint(Method("get"), sequences=("self",))
def dict_get(dy, y, self, key, default=None):
    return rt.dict_get_vjp(dy, self, key), None, rt.dict_default_vjp(dy, self, key)


@rt.helper
def dict_get_vjp(dy, d, key):
    """Adjoint of ``d.get(key, default)`` with respect to ``d``."""
    return {key: dy} if not is_zero_grad(dy) and key in d else 0.0


@rt.helper
def dict_default_vjp(dy, d, key):
    """Adjoint of ``d.get(key, default)`` with respect to ``default``."""
    return 0.0 if key in d else dy


# ----- The helpers container methods are written with (transform/methods.py) -----

@rt.helper
def seq_without(c, key):
    """A new list without item ``key`` (``xs.pop(i)``'s list after it), or a new dict
    without ``key`` (``d.pop(k)``'s; a missing key is no error: ``d.pop(k, default)``)."""
    if isinstance(c, list):
        k = range(len(c))[key]   # IndexError as list.pop gives it; a negative key counted back
        return c[:k] + c[k + 1:]
    if isinstance(c, dict):
        return {k: v for k, v in c.items() if k != key}
    raise TypeError(f"srcgrad: .pop() is differentiated on a list or a dict, not a {type(c).__name__}")


@adjoint(rt.seq_without, sequences=("c",))
def seq_without_rule(dy, y, c, key):
    return rt.seq_without_vjp(dy, c, key), None


@rt.helper
def seq_without_vjp(dy, c, key):
    """Adjoint of ``seq_without(c, key)`` with respect to ``c``: ``dy`` with a zero put
    back where the item was (a dict's adjoint: its other keys' entries)."""
    if is_zero_grad(dy):
        return 0.0
    if isinstance(c, list):
        k = range(len(c))[key]
        dy = list(dy)
        return dy[:k] + [0.0] + dy[k:]
    return {k: v for k, v in dy.items() if k != key}


@rt.helper
def dict_merge(a, b):
    """``{**a, **b}``: a new dict with ``a``'s keys in their places, ``b``'s values winning,
    ``b``'s new keys after (``d.update(b)`` on a copy). Both must be dicts."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        bad = a if not isinstance(a, dict) else b
        raise TypeError(f"srcgrad: ** unpacking and .update() are differentiated on dicts, "
                        f"not on a {type(bad).__name__}")
    out = dict(a)
    out.update(b)
    return out


@adjoint(rt.dict_merge, sequences=("a", "b"))
def dict_merge_rule(dy, y, a, b):
    return rt.dict_merge_vjp(dy, a, b, False), rt.dict_merge_vjp(dy, a, b, True)


@rt.helper
def dict_merge_vjp(dy, a, b, second):
    """Adjoint of ``dict_merge(a, b)`` with respect to ``b`` (``second``) or ``a``: the
    entries of ``dy`` whose value came from it (``b``'s where both have the key)."""
    if is_zero_grad(dy):
        return 0.0
    if second:
        return {k: dy[k] for k in b if k in dy}
    return {k: dy[k] for k in a if k in dy and k not in b}


# ----- a | b, a |= b: a dict merge ({**a, **b}) on two dicts, a bitwise or (no gradient)
# on anything else. The operator was declared nondifferentiable, so the merged dict's values
# lost their gradient (and tangent) silently. -----


@adjoint(operator.or_, sequences=("a", "b"))
def or_(dy, y, a, b):
    return rt.or_vjp(dy, a, b, False), rt.or_vjp(dy, a, b, True)


@rt.helper
def or_vjp(dy, a, b, second):
    """Adjoint of ``a | b``: ``dict_merge``'s where both are dicts, else none (bits and sets)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return dict_merge_vjp(dy, a, b, second)
    return 0.0


# forward over reverse (a Hessian through xs.pop(i), d.update(e), {**d}): the adjoints are linear in dy
linear(rt.seq_without_vjp, "dy", no_tangent=("c", "key"))
linear(rt.dict_merge_vjp, "dy", no_tangent=("a", "b", "second"))
linear(rt.or_vjp, "dy", no_tangent=("a", "b", "second"))


# ----- sorted(xs, key=...), max(xs, key=...), xs.sort(key=...): an order, then item reads -----
# transform/methods.py writes them, with xs = list(...) of what was sorted, as
# [xs[i] for i in rt.sort_order(xs, key, reverse)] and xs[rt.argbest(xs, key, largest)]: the order is a decision (no gradient, like np.argsort),
# and the items read are differentiated as any index read.

@rt.helper
def sort_order(items, key, reverse):
    """The positions of ``items`` in ``sorted(items, key=key, reverse=reverse)`` (stable)."""
    pick = key if key is not None else (lambda v: v)
    return builtins.sorted(range(len(items)), key=lambda i: pick(items[i]), reverse=reverse)


@rt.helper
def argbest(items, key, largest):
    """The position of ``max(items, key=key)`` (``min`` when not ``largest``): the first best."""
    if not len(items):
        raise ValueError(f"{'max' if largest else 'min'}() arg is an empty sequence")
    best = builtins.max if largest else builtins.min
    return best(range(len(items)), key=lambda i: key(items[i]))


@rt.helper
def bind_key(function, **captured):
    """A key function (a lambda of f given to sorted/max/min) with the values of f's
    variables it reads bound: it decides an order, so it carries no gradient."""
    return lambda *args: function(*args, **captured)


nondifferentiable(rt.sort_order, rt.argbest, rt.bind_key)


@rt.helper
def missing_item(keys, key):
    """Raise what ``table[key]`` raises for a key not in a table of local functions
    (transform/local_functions.py): IndexError (``keys`` a length) or KeyError."""
    if isinstance(keys, int):
        raise IndexError(f"list index {key!r} out of range")
    raise KeyError(key)


nondifferentiable(rt.missing_item)


@rt.helper
def zip_covers(seq, n, error):
    """Raise ``error`` unless ``seq``, zipped with a constant container of ``n`` callables in
    a loop srcgrad unrolled (transform/unroll.py), is a list, tuple or array of at least ``n``
    items (each copy of the body reads ``seq[k]``: a dict's would not be its keys)."""
    if not (isinstance(seq, (list, tuple)) or getattr(seq, "ndim", 0) >= 1) or len(seq) < n:
        raise error


nondifferentiable(rt.zip_covers)


# The containers the helpers above return (analysis/ranks.py, analysis/activity.py).
returns_sequence(rt.seq_without, rt.dict_merge)
