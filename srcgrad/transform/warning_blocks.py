"""``with np.errstate(divide="ignore"):`` blocks, before the checks (pipeline.front_end):
their statements, differentiated as if written without the block.

NumPy's floating-point error state decides only whether a division by zero or an
overflow warns; with ``"ignore"`` or ``"warn"`` for each kind the values are the same,
so the block is dropped and its body kept (the generated code may warn where the block
would have kept NumPy quiet). ``"raise"``, ``"call"``, ``"print"``, ``"log"`` or a value
known only when the function runs change what happens, and stay refused as any other
``with`` block.
"""

import gast

from srcgrad import ast_util

_QUIET = frozenset({"ignore", "warn"})


def may_hold(info):
    """Whether the source may hold such a block (most functions do not: no walk)."""
    return any("errstate" in line for line in info.source_lines)


def transform(node, ctx):
    """``node`` with each quiet ``np.errstate`` block replaced by its statements."""
    _block(node.body, ctx.info)
    return node


def _block(body, info):
    k = 0
    while k < len(body):
        stmt = body[k]
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                _block(inner, info)
        if isinstance(stmt, gast.With) and all(_quiet(item, info) for item in stmt.items):
            body[k:k + 1] = stmt.body
            k += len(stmt.body)
            continue
        k += 1


def _quiet(item, info):
    call = item.context_expr
    if item.optional_vars is not None or not isinstance(call, gast.Call) or call.args:
        return False
    path = ast_util.dotted(call.func)
    try:
        import numpy
        if path is None or info.resolve_path(path) is not numpy.errstate:
            return False
    except (NameError, AttributeError):
        return False
    return all(k.arg is not None and isinstance(k.value, gast.Constant) and k.value.value in _QUIET
               for k in call.keywords)
