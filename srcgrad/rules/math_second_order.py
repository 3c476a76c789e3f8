"""Rules one order up for the helpers of ``math.dist``'s, ``math.prod``'s and
``math.lgamma``'s gradients (builtins_math.py, numpy_statistics.py), so that their second
derivatives work: a tangent rule for ``sg.hessian``/``sg.hvp``, an adjoint rule for
``sg.grad`` of a gradient. Lists of numbers or arrays, product rule by hand."""

import math

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, returns_sequence, tangent
from srcgrad.rules.helper_second_order import _pair


# ----- math.dist: dy (p_i - q_i) / y -----

@rt.helper
def math_dist_vjp_tangent(dy, y, p, q, t_dy, t_y, t_p, t_q):
    """The tangent of ``math_dist_vjp(dy, y, p, q)`` (0 where the points coincide)."""
    if y == 0:
        return [0.0 for _ in p]
    t_p = t_p if isinstance(t_p, (list, tuple)) else [None] * len(p)
    t_q = t_q if isinstance(t_q, (list, tuple)) else [None] * len(q)
    out = []
    for a, b, ta, tb in zip(p, q, t_p, t_q):
        moved = (0.0 if ta is None else ta) - (0.0 if tb is None else tb)
        value = dy * moved / y
        if t_dy is not None:
            value = value + t_dy * (a - b) / y
        if t_y is not None:
            value = value - dy * (a - b) * t_y / (y * y)
        out.append(value)
    return out


@tangent(rt.math_dist_vjp)
def math_dist_vjp_tan(w, dy, y, p, q, *, t_dy, t_y, t_p, t_q):
    return rt.math_dist_vjp_tangent(dy, y, p, q, t_dy, t_y, t_p, t_q)


@rt.helper
def math_dist_vjp_adjoint(dw, dy, y, p, q):
    """The adjoint of ``math_dist_vjp(dy, y, p, q)`` for its list cotangent ``dw``:
    ``[d dy, d y, d p (a list), d q (a list)]``."""
    weights = [0.0 if g is None or rt.is_zero_grad(g) else g for g in _pair(dw, len(p))]
    if y == 0:
        return [0.0, 0.0, [0.0] * len(p), [0.0] * len(q)]
    paired = sum(wi * (a - b) for wi, a, b in zip(weights, p, q))
    return [paired / y, -dy * paired / (y * y), [wi * dy / y for wi in weights],
            [-wi * dy / y for wi in weights]]


@adjoint(rt.math_dist_vjp, sequences=("p", "q"))
def math_dist_vjp_adj(dw, w, dy, y, p, q):
    g = rt.math_dist_vjp_adjoint(dw, dy, y, p, q)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2), rt.seq_item(g, 3)


# ----- math.prod's items, lgamma's digamma -----

def _others(items, start, skip):
    """``start`` times every item but those at the indices in ``skip``."""
    out = start
    for k, item in enumerate(items):
        if k not in skip:
            out = out * item
    return out


@rt.helper
def prod_vjp_tangent(dy, items, start, t_dy, t_items, t_start):
    """The tangent of ``prod_vjp(dy, items, start)``: item ``k``'s entry
    ``dy * start * prod_{j != k} items_j`` by the product rule."""
    items = list(items)
    t_items = list(t_items) if isinstance(t_items, (list, tuple)) else [None] * len(items)
    out = []
    for k, item in enumerate(items):
        value = 0.0
        if t_dy is not None:
            value = value + t_dy * _others(items, start, {k})
        if t_start is not None:
            value = value + dy * t_start * _others(items, 1.0, {k})
        for j, t in enumerate(t_items):
            if j != k and t is not None and not rt.is_zero_grad(t):
                value = value + dy * t * _others(items, start, {k, j})
        out.append(rt.unbroadcast(value, item))
    return out


@tangent(rt.prod_vjp)
def prod_vjp_tan(w, dy, items, start, *, t_dy, t_items, t_start):
    return rt.prod_vjp_tangent(dy, items, start, t_dy, t_items, t_start)


@rt.helper
def prod_vjp_adjoint(dw, dy, items, start):
    """The adjoint of ``prod_vjp(dy, items, start)`` for its list cotangent ``dw``:
    ``[d dy, d items (a list), d start]``."""
    items = list(items)
    weights = [None if g is None or rt.is_zero_grad(g) else g for g in _pair(dw, len(items))]
    d_dy, d_start = 0.0, 0.0
    d_items = [0.0] * len(items)
    for k, w in enumerate(weights):
        if w is None:
            continue
        d_dy = d_dy + w * _others(items, start, {k})
        d_start = d_start + w * dy * _others(items, 1.0, {k})
        for j in range(len(items)):
            if j != k:
                d_items[j] = d_items[j] + w * dy * _others(items, start, {k, j})
    return [rt.unbroadcast(d_dy, dy), [rt.unbroadcast(d, item) for d, item in zip(d_items, items)],
            rt.unbroadcast(d_start, start)]


@adjoint(rt.prod_vjp, sequences=("items",))
def prod_vjp_adj(dw, w, dy, items, start):
    g = rt.prod_vjp_adjoint(dw, dy, items, start)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2)


@rt.helper
def trigamma(x):
    """The trigamma function (digamma's derivative) of a float: the recurrence up to 6,
    then the asymptotic series; reflection for negative ``x`` (its own derivative is not
    provided: a third derivative of lgamma is refused)."""
    x = float(x)
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0:
        return (math.pi / math.sin(math.pi * x)) ** 2 - trigamma(1 - x)
    total = 0.0
    while x < 6:
        total += 1 / (x * x)
        x += 1
    inv = 1 / x
    inv2 = inv * inv
    return total + inv + inv2 / 2 + inv * inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 / 30)))


@adjoint(rt.digamma)
def digamma_adj(dy, y, x):
    return dy * rt.trigamma(x)


@tangent(rt.digamma)
def digamma_tan(y, x, *, t_x):
    return t_x * rt.trigamma(x)


returns_sequence(rt.math_dist_vjp_tangent, rt.math_dist_vjp_adjoint, rt.prod_vjp_tangent, rt.prod_vjp_adjoint)
