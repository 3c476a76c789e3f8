"""Refuse in-place updates whose effect through another name srcgrad would not see.

Requires A-normal form. srcgrad reasons about values: ``b[i] = v`` changes ``b``
and nothing else. NumPy arrays are references, so the write also changes every
name that shares ``b``'s memory (``w = b``, a slice ``c = b[1:]``, ``b.T``, a
list holding ``b``) and, for arrays, ``v += y`` writes in place too. Where such
sharing could change a value the function later reads, the compiler stops with
an error at the write, rather than differentiate a different program.

The check is conservative (document order, no alias tracking through calls):
it may refuse code that happens to be safe, never the reverse.
"""

import gast

from srcgrad import anno
from srcgrad.errors import UnsupportedError
from srcgrad.rules import Attribute, Method

Static = anno.Static

VIEW_METHODS = {"reshape", "ravel", "transpose", "squeeze", "swapaxes", "view", "diagonal",
                "real", "imag", "flat", "T", "mT"}
VIEW_FUNCTIONS = {"reshape", "ravel", "transpose", "squeeze", "swapaxes", "moveaxis", "expand_dims",
                  "broadcast_to", "asarray", "asanyarray", "atleast_1d", "atleast_2d", "atleast_3d",
                  "diagonal", "real", "imag", "rollaxis", "flip", "fliplr", "flipud", "rot90"}


def _flatten(body, out, loops=frozenset(), looped=None, nested=None, in_block=False):
    """Statements in document order; ``looped`` maps the ids of those inside loops to the
    enclosing loops' ids, ``nested`` holds those inside any compound statement (they may not run)."""
    looped = {} if looped is None else looped
    nested = set() if nested is None else nested
    for s in body:
        out.append(s)
        if loops:
            looped[id(s)] = loops
        if in_block:
            nested.add(id(s))
        inner_loops = loops | {id(s)} if isinstance(s, (gast.For, gast.While)) else loops
        start = len(out)
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                _flatten(inner, out, inner_loops, looped, nested, True)
        if isinstance(s, (gast.For, gast.While)):
            _EXTENT[id(s)] = (start, len(out))
    return out


_EXTENT = {}  # id(loop) -> (first, end) positions of its body in the flattened order


def _loads(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _shares_memory_with(value):
    """Names whose memory ``value`` may share (a copy, view, or container of them)."""
    if isinstance(value, gast.Name):
        return {value.id}
    if isinstance(value, (gast.List, gast.Tuple)):
        return {e.id for e in value.elts if isinstance(e, gast.Name)}
    if isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name):
        return {value.value.id} if anno.getanno(value, Static.PRIMITIVE) in {Attribute(a) for a in VIEW_METHODS} else set()
    if isinstance(value, gast.Call):
        prim = anno.getanno(value, Static.PRIMITIVE)
        if isinstance(prim, Method):
            if prim in VIEW_METHODS and isinstance(value.func.value, gast.Name):
                return {value.func.value.id}
            return set()
        module = str(getattr(prim, "__module__", "") or "")
        if getattr(prim, "__name__", None) in VIEW_FUNCTIONS and module.split(".")[0] in ("numpy", "cupy"):
            return {a.id for a in value.args[:1] if isinstance(a, gast.Name)}
    return set()


def check(node, info, display=lambda name: name):
    """Raise UnsupportedError at the first in-place update that aliasing makes unsafe."""
    looped, nested = {}, set()
    _EXTENT.clear()
    stmts = _flatten(node.body, [], looped=looped, nested=nested)
    position = {id(s): k for k, s in enumerate(stmts)}
    writes = {}   # base name -> [statements writing it in place]
    for s in stmts:
        if isinstance(s, gast.Assign):
            target = s.targets[0]
            if isinstance(target, gast.Subscript):
                writes.setdefault(target.value.id, []).append(s)
            elif anno.getanno(s, Static.AUGMENTED):
                writes.setdefault(target.id, []).append(s)
        elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            func = s.value.func
            if isinstance(func, gast.Attribute) and func.attr == "append" and isinstance(func.value, gast.Name):
                writes.setdefault(func.value.id, []).append(s)
    if not writes:
        return
    for s in stmts:
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            continue
        alias = s.targets[0].id
        value = s.value
        shared = _shares_memory_with(value)
        for base in shared & set(writes):
            if base == alias:
                continue
            for w in writes[base]:
                if _read_after(alias, w, stmts, position, nested, s, looped):
                    _refuse(w, info, base, alias, s, display, position, looped)
        if alias in writes and not anno.getanno(s, Static.AUGMENTED):
            # An element or slice may be a view of its base (x[0, ...], x[1:], and on
            # CuPy x[0] itself): updating it in place may change the base.
            if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name):
                shared = shared | {value.value.id}
            for other in sorted(shared - {alias}):
                for w in writes[alias]:
                    if _read_after(other, w, stmts, position, nested, s, looped):
                        _refuse(w, info, alias, other, s, display, position, looped)
        if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) \
                and value.value.id in writes and value.value.id != alias:
            base = value.value.id
            p = position[id(s)]
            for w in writes[base]:
                q = position[id(w)]
                if q <= p:
                    continue
                if _read_after(alias, w, stmts, position, nested, s):
                    _refuse(w, info, base, alias, s, display, position, looped)


def _read_after(name, write, stmts, position, nested, alias_stmt, looped=None):
    """Whether the sharing made by ``alias_stmt`` exists when ``write`` runs and ``name`` is
    read afterwards, in document order. A write in a loop that also makes the sharing is
    assumed to be hazardous (the next iteration may read the name)."""
    q = position[id(write)]
    p = position[id(alias_stmt)]
    shared = looped.get(id(write), frozenset()) & looped.get(id(alias_stmt), frozenset()) \
        if looped is not None else frozenset()
    for loop in shared:
        # A name read in the loop before it is made here carries the last iteration's sharing.
        first, _ = _EXTENT[loop]
        if any(name in _loads(st) for st in stmts[first:p]):
            return True
    if p > q:
        return False
    # Rebound for sure before the write: the name no longer shares anything.
    for between in stmts[p + 1:q]:
        if id(between) not in nested and isinstance(between, gast.Assign) \
                and isinstance(between.targets[0], gast.Name) and between.targets[0].id == name:
            return False
    return any(name in _loads(later) for later in stmts[q + 1:])


def _refuse(write, info, base, alias, alias_stmt, display, position, looped):
    """Stop at ``write``; for ``v += y`` only when it runs on an array that really is shared.

    ``v += y`` updates an array in place but merely rebinds a number, and which
    one ``v`` holds is known only at run time: the forward sweep checks it then.
    """
    origin = anno.getanno(write, Static.ORIGIN)
    where = anno.getanno(alias_stmt, Static.ORIGIN)
    line = f" (line {where.lineno}: {where.source_line.strip()})" if where is not None else ""
    message = (f"this in-place update of {display(base)!r} would also change {display(alias)!r}, which "
               f"shares its memory{line}; srcgrad differentiates values, so it refuses rather than guess")
    hint = (f"Give {display(base)!r} memory of its own before writing into it, e.g. "
            f"{display(base)} = {display(base)}.copy(), or take {display(alias)!r} as a copy.")
    if origin is None:
        error = UnsupportedError(message, info.filename, hint=hint)
    else:
        error = origin.error(UnsupportedError, message, hint)
    shared_loop = looped.get(id(write), frozenset()) & looped.get(id(alias_stmt), frozenset())
    if anno.getanno(write, Static.AUGMENTED) and not shared_loop \
            and position[id(alias_stmt)] > position[id(write)]:
        return  # the sharing starts after this update: nothing to check
    # Whether memory is really shared (a view, not a copied scalar; an array, not a number)
    # is known only at run time: the forward sweep checks it just before the write.
    checks = anno.getanno(write, Static.ALIAS_CHECK) or []
    written = _written_name(write)
    checks.append((alias if alias != written else base, error))
    anno.setanno(write, Static.ALIAS_CHECK, checks)


def _written_name(write):
    if isinstance(write, gast.Assign):
        target = write.targets[0]
        return target.value.id if isinstance(target, gast.Subscript) else target.id
    return write.value.func.value.id  # lst.append(v)
