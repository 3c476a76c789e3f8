"""A composed gradient's seed of 1: factors of it dropped where multiplying by it changes
nothing, so no full-array pass multiplies an array by 1.0 (W6 made two per call).

    dsum = 1.0                                 dsum = 1.0
    ds = dsum                                  ds = dsum
    dx = ds * sin_x * e * 2 * x        ->      dx = sin_x * e * 2 * x
    dx += ds * e * xp.cos(x)                   dx += e * xp.cos(x)

``1.0 * v`` is ``v``, value and type, bit for bit, where ``v`` is a real float (an array,
a NumPy scalar or a Python float: under NumPy 2's promotion the Python float 1.0 never
widens it; -0.0, inf and NaN stay): the kinds analysis (analysis/kinds.py) knows
``v`` FLOAT. Not for complex values ((1+0j) times ``-0.0-1j`` is ``0-1j``) nor integers
(``1.0 * n`` is a float). Only where the product is an operand of more arithmetic, whose
result is a new value either way (or the gradient argument of ``rt.share``, a product
too): ``dx = ds * y`` stays, so ``dx`` never aliases ``y``.
The seed's copies (``ds = dsum``) count as the seed where each is the one binding of its
name, at the top of the body.
"""

import gast

from srcgrad import ast_util
from srcgrad.analysis import fresh
from srcgrad.templates import clone
from srcgrad.transform.base import BLOCK_FIELDS

_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div)


def drop_unit_factors(body, seed, floats, names=None):
    """Rewrite ``body`` (statements, after ``seed = 1.0``) in place; whether it changed.
    A statement it changes is replaced by a changed copy: the statements may be the
    sweeps' own (compose_gradient copies only the compound ones).
    ``names``: a ``NameSets`` to keep valid (each statement rewritten is forgotten)."""
    if not floats or not fresh._weak_scalars():
        return False
    # The bindings (any context but Load) of the seed and of the names a copy may bind:
    # with ``names``, only the statements that name one of them are walked.
    copies = {t for s in body if isinstance(s, gast.Assign) and isinstance(s.value, gast.Name)
              and (t := ast_util.assigned_name(s)) is not None} | {seed}
    stores = {}
    for s in body:
        if names is not None and copies.isdisjoint(names.refs(s)):
            continue
        for n in ast_util.walk(s):
            if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
                stores[n.id] = stores.get(n.id, 0) + 1
    if stores.get(seed):
        return False
    units = {seed}
    for s in body:
        target = ast_util.assigned_name(s)
        if target is not None and isinstance(s, gast.Assign) and isinstance(s.value, gast.Name) \
                and s.value.id in units and stores.get(target) == 1:
            units.add(target)
    changed = False
    for k, s in enumerate(body):
        if names is not None and units.isdisjoint(names.loads(s)):
            continue   # no unit read: no factor to drop
        if not _drop_units(s, units, floats, edit=False):
            continue
        s = body[k] = clone(s)
        _drop_units(s, units, floats, edit=True)
        if names is not None:
            names.forget(*ast_util.walk(s))   # its nested statements and parts too
        changed = True
    return changed


def _drop_units(s, units, floats, edit):
    """Whether statement ``s`` has factors of ``units`` to drop; ``edit``: drop them."""
    here = False
    for node in ast_util.walk(s):
        if isinstance(node, gast.BinOp) and isinstance(node.op, _ARITHMETIC):
            for side in ("left", "right"):
                kept = _without_unit(getattr(node, side), units, floats)
                if kept is not None:
                    if not edit:
                        return True
                    setattr(node, side, kept)
                    here = True
        elif ast_util.is_rt_call(node, "share") and len(node.args) == 2:   # a product too
            kept = _without_unit(node.args[0], units, floats)
            if kept is not None:
                if not edit:
                    return True
                node.args[0] = kept
                here = True
    return here


def _without_unit(e, units, floats):
    """``v`` where ``e`` is ``unit * v`` or ``v * unit`` with ``v`` a FLOAT name, else None."""
    if not (isinstance(e, gast.BinOp) and isinstance(e.op, gast.Mult)):
        return None
    for unit, other in ((e.left, e.right), (e.right, e.left)):
        if isinstance(unit, gast.Name) and unit.id in units \
                and isinstance(other, gast.Name) and other.id in floats:
            return other
    return None


def known_seed(body, seed, names=None):
    """``body`` with ``if rt.has_grad(seed): ...`` unwrapped: the seed is a nonzero
    constant that ``body`` never rebinds. ``names``: the statements' ``NameSets``, if
    any (then only a statement that names the seed is walked)."""
    if any((names is None or seed in names.refs(s)) and any(
            isinstance(n, gast.Name) and n.id == seed and not isinstance(n.ctx, gast.Load)
            for n in ast_util.walk(s)) for s in body):
        return body
    return _unwrapped(body, seed)


def _unwrapped(body, seed):
    """A new list of ``body``'s statements, each ``if rt.has_grad(seed):`` without an
    ``else`` replaced by its own (nested blocks too, rebuilt in place): what a
    ``transform.base.Base`` visiting every statement did, without its dispatch."""
    out = []
    for s in body:
        if s.__class__ is gast.If and not s.orelse and ast_util.is_rt_call(s.test, "has_grad") \
                and isinstance(s.test.args[0], gast.Name) and s.test.args[0].id == seed:
            out.extend(_unwrapped(s.body, seed))
            continue
        for field in BLOCK_FIELDS:
            block = getattr(s, field, None)
            if isinstance(block, list):
                setattr(s, field, _unwrapped(block, seed))
        out.append(s)
    return out
