"""A NumPy call a tangent program repeats is computed once (forward mode, transform/forward.py).

A gradient read again repeats what its tangent rules compute: the tangent of
``np.sin(x)`` reads ``cos(x)``, which the gradient computes again, and the tangent of
``cos(x)`` reads ``sin(x)``, which the function computed first:

    sin_x = np.sin(x)                           sin_x = np.sin(x)
    dsin_x = dx * xp.cos(x)                     cos_x = xp.cos(x)
    ...                                  ->     dsin_x = dx * cos_x
    cos_x = xp.cos(x)                           ...
    dcos_x = -dx * xp.sin(x)                    dcos_x = -dx * sin_x

A call repeats an earlier one when both call the same NumPy function (``xp`` and a
name bound to ``rt.namespace(...)`` are NumPy's functions), without keywords, on the
same names or constants, in the same block, and nothing in between rebinds those
names or may change an array in place (every statement in between binds names to
values without effects, or pushes a name on a tape). Then:

* a later call is read from the name an earlier statement bound it to;
* a later statement ``t = f(a)`` (``t`` bound nowhere else) whose call an earlier
  statement evaluated inside an expression moves before that statement, which reads
  ``t``; only where everything that statement evaluated before the call cannot raise,
  so errors come in the order they came.
"""

import gast
import numpy

from srcgrad import anno
from srcgrad.ast_util import assigned_name, blocks, walk_statements
from srcgrad.optimize.effects import SAFE, kind, pure_call
from srcgrad import ast_util

Static = anno.Static

# Expressions whose parts are evaluated conditionally, later or repeatedly.
_OPAQUE = (gast.IfExp, gast.BoolOp, gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
           gast.GeneratorExp)


def run(body):
    """Compute each repeated call of ``body`` once (see the module docstring), in place.
    Returns whether anything changed."""
    namespaces = _namespaces(body)
    counts = {}
    for s in walk_statements(body):
        for n in ast_util.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                counts[n.id] = counts.get(n.id, 0) + 1
    changed = False
    for block in blocks(body):
        changed |= _block(block, namespaces, counts)
    return changed


def _namespaces(body):
    """Names bound once, at the top, to ``rt.namespace(...)``."""
    found = set()
    for s in body:
        target = assigned_name(s)
        if target is not None and isinstance(s.value, gast.Call) \
                and isinstance(s.value.func, gast.Attribute) and s.value.func.attr == "namespace" \
                and isinstance(s.value.func.value, gast.Name) and s.value.func.value.id.startswith("rt"):
            found.add(target)
    return found


def _key(call, namespaces):
    """What identifies ``call``'s value: (NumPy function, argument dumps), else None."""
    if not isinstance(call, gast.Call) or call.keywords \
            or not all(isinstance(a, (gast.Name, gast.Constant)) for a in call.args):
        return None
    func = call.func
    primitive = None
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
            and (func.value.id == "xp" or func.value.id in namespaces):
        primitive = getattr(numpy, func.attr, None)
    elif anno.getanno(call, Static.PRIMITIVE) is not None:
        primitive = anno.getanno(call, Static.PRIMITIVE)
    if not isinstance(primitive, numpy.ufunc) or primitive.nout != 1 or not pure_call(call, {}):
        return None
    return primitive, tuple(gast.dump(a) for a in call.args), \
        frozenset(a.id for a in call.args if isinstance(a, gast.Name))


def _calls(node, namespaces):
    """``(key, call)`` of the calls ``node`` evaluates unconditionally, once, in order."""
    found = []

    def visit(n):
        if isinstance(n, _OPAQUE):
            return
        for child in gast.iter_child_nodes(n):
            visit(child)
        key = _key(n, namespaces)
        if key is not None:
            found.append((key, n))

    visit(node)
    return found


def _quiet(s, namespaces):
    """``s`` changes no array in place and calls nothing with effects: it binds names to
    values without effects, pushes a name, or is a loop or branch of such statements."""
    if isinstance(s, gast.Assign):
        return all(isinstance(t, gast.Name) for t in s.targets) and kind(s.value, None) is not None
    if isinstance(s, gast.Expr):
        call = s.value
        return isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
            and call.func.attr == "append" and all(isinstance(a, gast.Name) for a in call.args)
    if isinstance(s, (gast.If, gast.While)):
        return kind(s.test, None) is not None and all(_quiet(t, namespaces) for t in s.body + s.orelse)
    if isinstance(s, gast.For):
        return isinstance(s.target, gast.Name) and kind(s.iter, None) is not None \
            and all(_quiet(t, namespaces) for t in s.body + s.orelse)
    return False


def _stored(s):
    return {n.id for n in ast_util.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _block(block, namespaces, counts):
    changed = False
    available = {}   # key -> (the statement, the call node, the name bound to its value or None)
    k = 0
    while k < len(block):
        s = block[k]
        value_key = _key(s.value, namespaces) if assigned_name(s) is not None else None
        if value_key is not None and value_key in available:
            first, call, bound = available[value_key]
            target = assigned_name(s)
            i = next(j for j, t in enumerate(block) if t is first)
            if bound is not None:
                s.value = gast.Name(id=bound, ctx=gast.Load(), annotation=None, type_comment=None)
                changed = True
            elif counts.get(target) == 1 and _hoistable(first, call) \
                    and not any(target in _loaded(t) for t in block[i:k]):
                _hoist(block, i, k, call, target)
                available[value_key] = (s, call, target)
                changed = True
                k += 1
                continue
        elif isinstance(s, (gast.Assign, gast.Expr)):
            for key, call in _calls(s.value, namespaces):
                if key in available and available[key][2] is not None:
                    _replace(s, call, available[key][2])
                    changed = True
        if not _quiet(s, namespaces):
            available.clear()
        else:
            bound = _stored(s)
            for key in [key for key, (_, _, name) in available.items()
                        if name in bound or key[2] & bound]:
                del available[key]
            if isinstance(s, (gast.Assign, gast.Expr)):
                target = assigned_name(s)
                for key, call in _calls(s.value, namespaces):
                    if key not in available and not key[2] & bound:
                        name = target if call is s.value and counts.get(target) == 1 else None
                        available[key] = (s, call, name)
        k += 1
    return changed


def _loaded(s):
    return {n.id for n in ast_util.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _hoistable(s, call):
    """Everything ``s`` evaluates before ``call`` cannot raise."""
    from srcgrad.optimize.forward_temporaries import _evaluated_before
    found = _evaluated_before(s, call)
    return found is not None and not found[1] and all(kind(p, None) == SAFE for p in found[0])


def _hoist(block, i, k, call, target):
    """``block[k]`` (``target = f(a)``) moved before ``block[i]``, binding ``target`` to
    ``call`` (``block[i]`` reads ``target`` there instead)."""
    s = block.pop(k)
    _replace(block[i], call, target)
    s.value = call   # the earlier call: its namespace is bound there
    origin = anno.getanno(block[i], Static.ORIGIN)
    if origin is not None:
        anno.setanno(s, Static.ORIGIN, origin)
    block.insert(i, s)


def _replace(statement, node, name):
    class Replace(ast_util.NodeTransformer):
        def visit_Call(self, n):
            if n is node:
                return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)
            return self.generic_visit(n)

    Replace().visit(statement)

