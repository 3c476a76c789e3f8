"""Rules of the helpers that rules call: the gradient of order n calls them, so the
gradient of order n + 1 (reverse) and its hvp (forward) need theirs.

Each helper here is linear in the adjoint it moves; its adjoint is its transpose
(``add_grad_vjp`` and ``add_grad_vjp_adjoint`` are each other's, ``seq_repeat_vjp``
sums the copies ``seq_repeat_adjoint`` makes...), and its tangent is itself applied
to the tangent. tests/test_rule_closure.py lists the helpers still without rules.
"""

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, linear, returns_sequence


@rt.helper
def add_grad_vjp_adjoint(g, dw, x):
    """The adjoint of ``rt.add_grad_vjp(dw, x)`` (linear in ``dw``): ``g``, given in
    ``x``'s structure, back in ``dw``'s shape (nothing where ``x`` or ``dw`` was a zero)."""
    if rt.is_zero_grad(x) or rt.is_zero_grad(g) or rt.is_zero_grad(dw):
        return 0.0
    if isinstance(x, (list, tuple)):
        items = list(g) if isinstance(g, (list, tuple)) else [None] * len(x)
        dws = list(dw) if isinstance(dw, (list, tuple)) else [None] * len(x)
        return [add_grad_vjp_adjoint(a, d, v) for a, d, v in zip(items, dws, x)]
    if isinstance(x, dict):
        return {k: add_grad_vjp_adjoint(g.get(k) if isinstance(g, dict) else None,
                                        dw.get(k) if isinstance(dw, dict) else None, v)
                for k, v in x.items()}
    return rt.broadcast_like(g, dw)


@rt.helper
def tangent_sum_vjp(dw, t):
    """The adjoint of ``rt.tangent_sum(t)`` (the items of ``t`` summed, or its rows):
    ``dw`` for each item, in its shape."""
    if rt.is_array(t):
        return rt.broadcast_like(dw, t)
    return [rt.broadcast_like(dw, item) if rt.is_array(item) else rt.unbroadcast(dw, item)
            for item in t]


returns_sequence(rt.seq_repeat_adjoint, rt.seq_concat_adjoint, rt.fill_like)


@adjoint(rt.add_grad_vjp)
def add_grad_vjp(dw_, w, dw, x):
    return rt.add_grad_vjp_adjoint(dw_, dw, x), None


@adjoint(rt.add_grad_vjp_adjoint)
def add_grad_vjp_adjoint_rule(dw_, w, g, dw, x):
    return rt.add_grad_vjp(dw_, x), None, None


@adjoint(rt.seq_repeat_adjoint, sequences=("dw",))
def seq_repeat_adjoint(dw_, w, dw, dy):
    return rt.seq_repeat_vjp(dw_, dw, 0), None


@adjoint(rt.seq_concat_adjoint, sequences=("dw",))
def seq_concat_adjoint(dw_, w, dw, a, b):
    return list(rt.seq_concat_vjp(dw_, a, b)), None, None


@adjoint(rt.fill_like, sequences=("dw",))
def fill_like(dw_, w, dw, like):
    return rt.fill_like(dw_, like), None


@adjoint(rt.or_zero)
def or_zero(dw, w, g):
    return dw


@adjoint(rt.tangent_sum, sequences=("t",))
def tangent_sum(dw, w, t):
    return rt.tangent_sum_vjp(dw, t)


@adjoint(rt.tangent_sum_vjp)
def tangent_sum_vjp(dw_, w, dw, t):
    return rt.unbroadcast(rt.tangent_sum(dw_), dw), None


linear(rt.add_grad_vjp, "dw", no_tangent=("x",))
linear(rt.add_grad_vjp_adjoint, "g", no_tangent=("dw", "x"))
linear(rt.seq_repeat_adjoint, "dw", no_tangent=("dy",))
linear(rt.seq_concat_adjoint, "dw", no_tangent=("a", "b"))
linear(rt.fill_like, "dw", no_tangent=("like",))
linear(rt.tangent_sum, "t")
linear(rt.or_zero, "g")
linear(rt.tangent_sum_vjp, "dw", no_tangent=("t",))


# ----- dict views and get: their adjoints move adjoints between a dict and a list -----

@rt.helper
def dict_adjoint_values(dw, d):
    """The adjoint of ``rt.dict_values_vjp(dy, d)`` (a list made a dict): the dict
    cotangent ``dw`` as the list of its entries in ``d``'s order."""
    if rt.is_zero_grad(dw):
        return 0.0
    return [rt.seq_item(dw, k) for k in d]


@rt.helper
def dict_adjoint_items(dw, d):
    """The adjoint of ``rt.dict_items_vjp(dy, d)``: ``(None, entry)`` per key."""
    if rt.is_zero_grad(dw):
        return 0.0
    return [(None, rt.seq_item(dw, k)) for k in d]


@rt.helper
def dict_adjoint_get(dw, d, key):
    """The adjoint of ``rt.dict_get_vjp(dy, d, key)`` (``{key: dy}`` where ``key`` is in
    ``d``): the cotangent's entry for ``key``."""
    if rt.is_zero_grad(dw) or key not in d:
        return 0.0
    return rt.seq_item(dw, key)


returns_sequence(rt.dict_adjoint_values, rt.dict_adjoint_items)


@adjoint(rt.dict_values_vjp, sequences=("dy", "d"))
def dict_values_vjp(dw, w, dy, d):
    return rt.dict_adjoint_values(dw, d), None


@adjoint(rt.dict_items_vjp, sequences=("dy", "d"))
def dict_items_vjp(dw, w, dy, d):
    return rt.dict_adjoint_items(dw, d), None


@adjoint(rt.dict_get_vjp, sequences=("d",))
def dict_get_vjp(dw, w, dy, d, key):
    return rt.dict_adjoint_get(dw, d, key), None, None


@adjoint(rt.dict_default_vjp, sequences=("d",))
def dict_default_vjp(dw, w, dy, d, key):
    return rt.dict_default_vjp(dw, d, key), None, None


linear(rt.dict_values_vjp, "dy", no_tangent=("d",))
linear(rt.dict_items_vjp, "dy", no_tangent=("d",))
linear(rt.dict_get_vjp, "dy", no_tangent=("d", "key"))
linear(rt.dict_default_vjp, "dy", no_tangent=("d", "key"))
linear(rt.dict_adjoint_values, "dw", no_tangent=("d",))
linear(rt.dict_adjoint_items, "dw", no_tangent=("d",))
linear(rt.dict_adjoint_get, "dw", no_tangent=("d", "key"))


@adjoint(rt.dict_adjoint_values, sequences=("d",))
def dict_adjoint_values(dw_, w, dw, d):
    return rt.dict_values_vjp(dw_, d), None


@adjoint(rt.dict_adjoint_items, sequences=("d",))
def dict_adjoint_items(dw_, w, dw, d):
    return rt.dict_items_vjp(dw_, d), None


@adjoint(rt.dict_adjoint_get, sequences=("d",))
def dict_adjoint_get(dw_, w, dw, d, key):
    return rt.dict_get_vjp(dw_, d, key), None, None
