"""``x.flat`` read at once, written as ``np.ravel(x)``: ``x.flat[i]``, ``x.flat[2:5]``,
``for v in x.flat``, ``[f(v) for v in x.flat]``, ``sum(x.flat)``, ``list(x.flat)``.

NumPy's ``flat`` is an iterator over ``x``'s entries in C order; read where it is made, it
gives what ``np.ravel(x)`` does, whose rule srcgrad has. Kept as a value (``it = x.flat``)
it is left alone: its reads would follow later writes into ``x`` that a copy made by
``ravel`` does not, and it is refused as before.

A write through it, ``x.flat[k] = v`` (``+=`` too) of a local ``x``, is NumPy's ``np.put``
at the positions ``k`` picks (an index, slice, list or mask), repeating ``v`` as both do:
``np.put(x, np.arange(np.size(x))[k], v)``, which srcgrad differentiates as a write into
``x`` (transform/mutation.py).
"""

import builtins

import numpy as np
import gast

from srcgrad import anno, ast_util
from srcgrad.ast_util import name
from srcgrad.transform import as_array

# builtins that read their argument's items at once
_READERS = (builtins.sum, builtins.list, builtins.tuple, builtins.max, builtins.min,
            builtins.sorted, builtins.enumerate, builtins.zip, builtins.len, np.array, np.asarray)


def _is_flat(node):
    return isinstance(node, gast.Attribute) and node.attr == "flat" \
        and isinstance(node.ctx, gast.Load)


def transform(node, ctx, census=None):
    """Rewrite, in place, the ``.flat`` reads of FunctionDef ``node`` read at once, and the
    writes through ``.flat``. ``census``: an ``ast_walks.Census`` of ``node``, told of a change."""
    if not any(_is_flat(n) for n in (census.of(gast.Attribute) if census is not None
                                     else ast_util.nodes_of(node, gast.Attribute))):
        return node
    if census is not None:
        census.changed()
    _writes(node, ctx)
    ravel = None
    for parent in ast_util.walk(node):
        for field, value in gast.iter_fields(parent):
            items = value if isinstance(value, list) else [value]
            for k, child in enumerate(items):
                if not _is_flat(child) or not _read_at_once(parent, field, ctx):
                    continue
                if ravel is None:
                    ravel = as_array.bind(ctx.namer, ctx.info, ctx.bindings, "ravel", np.ravel)
                call = gast.Call(func=name(ravel), args=[child.value], keywords=[])
                if isinstance(value, list):
                    value[k] = call
                else:
                    setattr(parent, field, call)
    return node


def _read_at_once(parent, field, ctx):
    """Whether the ``.flat`` in ``parent``'s ``field`` is read where it is made."""
    if isinstance(parent, gast.Subscript):
        return field == "value" and isinstance(parent.ctx, gast.Load)
    if isinstance(parent, (gast.For, gast.comprehension)):
        return field == "iter"
    if isinstance(parent, gast.Call) and field == "args" and isinstance(parent.func, (gast.Name, gast.Attribute)):
        path, func = [], parent.func
        while isinstance(func, gast.Attribute):
            path.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in ctx.user_locals:
            return False
        try:
            obj = ctx.info.resolve(func.id)
            for part in reversed(path):
                obj = getattr(obj, part)
        except (NameError, AttributeError):
            return False
        return any(obj is r for r in _READERS)
    return False


def _flat_target(s):
    """``(x, k)`` of a statement ``x.flat[k] = v`` or ``x.flat[k] op= v`` of a name ``x``."""
    target = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else \
        s.target if isinstance(s, gast.AugAssign) else None
    if isinstance(target, gast.Subscript) and _is_flat(target.value) \
            and isinstance(target.value.value, gast.Name):
        return target.value.value.id, target.slice
    return None


def _writes(node, ctx):
    """Each ``x.flat[k] = v`` (``op=``) in ``node``'s blocks as ``np.put`` (module docstring)."""
    bound = {}

    def fn(obj, hint):
        if hint not in bound:
            bound[hint] = as_array.bind(ctx.namer, ctx.info, ctx.bindings, hint, obj)
        return name(bound[hint])

    def call(func, *args):
        return gast.Call(func=func, args=list(args), keywords=[])

    for parent in ast_util.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if not isinstance(block, list) or not any(
                    isinstance(b, gast.stmt) and _flat_target(b) for b in block):
                continue
            out = []
            for s in block:
                found = _flat_target(s) if isinstance(s, gast.stmt) else None
                if found is None:
                    out.append(s)
                    continue
                base, key = found
                index = ctx.namer.new("flat_index")
                positions = gast.Subscript(value=call(fn(np.arange, "arange"), call(
                    fn(np.size, "size"), name(base))), slice=key, ctx=gast.Load())
                made = [gast.Assign(targets=[name(index, True)], value=positions, type_comment=None)]
                value = s.value
                if isinstance(s, gast.AugAssign):
                    value = gast.BinOp(left=gast.Subscript(value=call(fn(np.ravel, "ravel"), name(base)),
                                                         slice=name(index), ctx=gast.Load()),
                                       op=s.op, right=value)
                made.append(gast.Expr(value=call(fn(np.put, "put"), name(base), name(index), value)))
                for m in made:
                    anno.copyanno(s, m, anno.Static.ORIGIN)
                    gast.copy_location(m, s)
                    for child in gast.walk(m):
                        if not hasattr(child, "lineno"):
                            gast.copy_location(child, s)
                out += made
            setattr(parent, field, out)
