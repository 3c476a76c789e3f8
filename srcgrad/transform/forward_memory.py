"""Forward mode: the tangent of a value written into later shares memory with its
operand's tangent exactly when the value shares the operand's (forward.py's assign_name);
the tangent stored by an indexed write; and a structure's field read (``p.w``), whose
tangent is the tangent's field."""

import gast

from srcgrad.analysis import kinds
from srcgrad.analysis.activity import primitive_of
from srcgrad.codegen import emit, loader
from srcgrad.errors import NonDifferentiableError, UnsupportedError
from srcgrad.rules import Method
from srcgrad.templates import clone, name, replace_as_expression as expr


def stored_tangent(ad, base, tangent):
    """The tangent ``base[i] = v`` stores: ``v``'s, or none where ``base`` may hold integers
    (the store truncates), decided as reverse.py's item write does, by ``rt.dtype_grad``
    where ``base``'s dtype is known only at run time."""
    if ad.kinds is not None and ad.kinds.of(base) in (kinds.FLOAT, kinds.COMPLEX):
        return tangent
    return expr("rt.dtype_grad(G, rt.array_dtype(BASE), 0.0)", G=tangent, BASE=name(base.id))


def stored_zero(ad, base, value):
    """The tangent ``base[i] = v`` stores for a ``v`` without one: 0.0 into a float array,
    else ``rt.tangent_zero(v)``, so that a list or dict stored into a container (``d[k] =
    []``, then ``d[k] += [x]``) gets a tangent of its structure."""
    if ad.kinds is not None and ad.kinds.of(base) in (kinds.FLOAT, kinds.COMPLEX) \
            or isinstance(value, gast.Constant):
        return gast.Constant(value=0.0, kind=None)
    return expr("rt.tangent_zero(Y)", Y=clone(value))


def operands(value, output):
    """The names ``value`` (a call, an operation) takes as operands, once each."""
    parts = list(getattr(value, "args", ())) + [k.value for k in getattr(value, "keywords", ())]
    if isinstance(value, gast.Call) and isinstance(primitive_of(value), Method):
        parts.append(value.func.value)
    parts += [getattr(value, f) for f in ("left", "right", "operand", "value")
              if isinstance(getattr(value, f, None), gast.AST) and not isinstance(value, gast.Call)]
    found = [p for p in parts if isinstance(p, gast.Name) and p.id != output]
    return list({p.id: p for p in found}.values())


def needs_memory(ad, target, value, output):
    """Whether the tangent of ``target = value`` must mirror the memory ``target`` shares:
    ``target`` is written in place later, or an operand is (``v = c.flatten()`` and later
    ``c[1] = 0``: ``v``'s tangent, ``ravel(dc)``, a view of ``dc``, would see the write
    into ``dc`` that ``v`` does not see)."""
    if isinstance(value, (gast.Name, gast.Subscript)):
        return False
    return target in ad.written or any(p.id in ad.written for p in operands(value, output))


def memory_of(ad, s, tangent, output):
    """The tangent of ``y = value`` where ``y`` or an operand is written in place later: it
    must share an operand's tangent's memory exactly when ``y`` shares that operand's (a
    write into ``y`` reaches the operand, and its tangent must too; a write into the operand
    reaches ``y`` only if ``y`` shares it), checked at run time (``rt.tangent_memory``:
    copied where ``y`` owns its memory, refused where ``y`` is a view the tangent rule does
    not mirror)."""
    operands_ = operands(s.value, output)
    if not operands_:
        return expr("rt.tangent_memory(T, Y, (), (), None)", T=tangent, Y=name(output))
    if loader.is_generated(ad.info.filename):
        # a gradient read again (a Hessian's): its adjoints' updates (``dc =
        # rt.zero_grad_at(dc, c, i)``) return their operand, with a new tangent; no refusal
        return expr("rt.tangent_memory(T, Y, P, D, None)", T=tangent, Y=name(output),
                    P=_names(operands_), D=_tangents(ad, operands_))
    return _checked(ad, s, tangent, output, operands_)


def _names(operands):
    return gast.Tuple(elts=[name(p.id) for p in operands], ctx=gast.Load())


def _tangents(ad, operands):
    return gast.Tuple(elts=[name(ad.d(p.id)) if p.id in ad.active
                            else gast.Constant(value=None, kind=None) for p in operands],
                      ctx=gast.Load())


def _checked(ad, s, tangent, output, operands):
    error = ad.namer.new("aliasing_error")
    shown = emit._origin_text(s) or "this statement"
    ad.bindings[error] = ad.error(
        s, UnsupportedError,
        f"forward mode: the value of `{shown.strip()}` shares memory with an argument of the "
        f"call while its tangent would not, so a later write into it would be lost from the "
        f"tangent", "Take a copy (.copy()) before writing into it, or write into the "
        f"original array.")
    return expr(f"rt.tangent_memory(T, Y, P, D, {error})", T=tangent, Y=name(output),
                P=_names(operands), D=_tangents(ad, operands))


def field_tangent(ad, value):
    """``rt.field_tangent(x, dx, attr, error)``: the tangent of ``x.attr`` for a structure
    ``x`` (dataclass, namedtuple, registered class), else ``error``, raised at the user's
    line (an array's ``x.flat``, an object of another class)."""
    error = ad.namer.new("attribute_error")
    ad.bindings[error] = ad.error(
        value, NonDifferentiableError,
        f"forward mode needs a jvp for the attribute .{value.attr} of {value.value.id!r}, "
        f"which carries a tangent and is not a structure srcgrad knows (a dataclass, "
        f"namedtuple or registered class)",
        "Make its class a dataclass, or register it with srcgrad.register_pytree_node; for "
        "an array, use a function srcgrad differentiates (x.ravel() for x.flat).")
    return expr(f"rt.field_tangent(X, DX, {value.attr!r}, {error})", X=clone(value.value),
                DX=name(ad.d(value.value.id)))
