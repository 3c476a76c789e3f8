"""Forward mode: the tangent of a value written into later shares memory with its
operand's tangent exactly when the value shares the operand's (forward.py's assign_name)."""

import gast

from srcgrad.analysis.activity import primitive_of
from srcgrad.codegen import emit
from srcgrad.errors import UnsupportedError
from srcgrad.rules import Method
from srcgrad.templates import name, replace_as_expression as expr


def memory_of(ad, s, tangent, output):
    """The tangent of ``y = value`` where ``y`` is written in place later: it must share
    an operand's tangent's memory exactly when ``y`` shares that operand's (a write into
    ``y`` reaches the operand, and its tangent must too), checked at run time
    (``rt.tangent_memory``: copied where ``y`` owns its memory, refused where ``y`` is a
    view the tangent rule does not mirror)."""
    value = s.value
    parts = list(getattr(value, "args", ())) + [k.value for k in getattr(value, "keywords", ())]
    if isinstance(value, gast.Call) and isinstance(primitive_of(value), Method):
        parts.append(value.func.value)
    parts += [getattr(value, f) for f in ("left", "right", "operand", "value")
              if isinstance(getattr(value, f, None), gast.AST) and not isinstance(value, gast.Call)]
    operands = [p for p in parts if isinstance(p, gast.Name) and p.id != output]
    operands = list({p.id: p for p in operands}.values())
    if not operands:
        return expr("rt.tangent_memory(T, Y, (), (), None)", T=tangent, Y=name(output))
    error = ad.namer.new("aliasing_error")
    shown = emit._origin_text(s) or "this statement"
    ad.bindings[error] = ad.error(
        s, UnsupportedError,
        f"forward mode: the value of `{shown.strip()}` shares memory with an argument of the "
        f"call while its tangent would not, so a later write into it would be lost from the "
        f"tangent", "Take a copy (.copy()) before writing into it, or write into the "
        f"original array.")
    primals = gast.Tuple(elts=[name(p.id) for p in operands], ctx=gast.Load())
    tangents = gast.Tuple(elts=[name(ad.d(p.id)) if p.id in ad.active
                                else gast.Constant(value=None, kind=None) for p in operands],
                          ctx=gast.Load())
    return expr(f"rt.tangent_memory(T, Y, P, D, {error})", T=tangent, Y=name(output), P=primals,
                D=tangents)
