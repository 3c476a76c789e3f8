"""``x.flat`` read at once, written as ``np.ravel(x)``: ``x.flat[i]``, ``x.flat[2:5]``,
``for v in x.flat``, ``[f(v) for v in x.flat]``, ``sum(x.flat)``, ``list(x.flat)``.

NumPy's ``flat`` is an iterator over ``x``'s entries in C order; read where it is made, it
gives what ``np.ravel(x)`` does, whose rule srcgrad has. Kept as a value (``it = x.flat``)
or written through (``x.flat[i] = v``) it is left alone: its reads would follow later writes
into ``x`` that a copy made by ``ravel`` does not, and it is refused as before.
"""

import builtins

import numpy as np
import gast

from srcgrad import ast_util
from srcgrad.ast_util import name
from srcgrad.transform import as_array

# builtins that read their argument's items at once
_READERS = (builtins.sum, builtins.list, builtins.tuple, builtins.max, builtins.min,
            builtins.sorted, builtins.enumerate, builtins.zip, builtins.len, np.array, np.asarray)


def _is_flat(node):
    return isinstance(node, gast.Attribute) and node.attr == "flat" \
        and isinstance(node.ctx, gast.Load)


def transform(node, ctx):
    """Rewrite, in place, the ``.flat`` reads of FunctionDef ``node`` read at once."""
    if not any(_is_flat(n) for n in ast_util.nodes_of(node, gast.Attribute)):
        return node
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
