"""A list or dict argument the function changes in place: ``stack.pop()``, ``d[k] = v``,
``xs.extend(ys)``, ``xs.insert(i, v)``, ``xs += [v]``, also inside a helper it is passed to.

srcgrad differentiates these as rebindings (``xs = xs[:-1]``) or as writes into a copy of
the argument (the reverse sweep undoes its writes), so without more the caller's object
would be left as it was by a gradient and changed by the function (and by ``sg.jvp``,
which writes in place). Here the function keeps the caller's object apart as it starts
(``caller_xs = rt.caller_of(xs)``) and, as it returns, writes the parameter's final value
into it (``rt.write_back(caller_xs, xs)``, a no-op where they are the same object): after
one call of any derivative the caller sees what one call of the function leaves, as in
Python. A parameter the function also rebinds (``d = dict(d)``) is its own from there and
stays so; an array argument is left to the rules of in-place writes ("Semantics worth
knowing" in docs/language.md). A differentiated argument is never written back
(``keep_differentiated``): its gradient has the structure the caller passed."""

import gast

from srcgrad import anno, ast_util
from srcgrad.templates import replace
from srcgrad.transform import as_array

Static = anno.Static

# The list and dict methods left in place as statements (methods.py rewrites the others).
_IN_PLACE = frozenset({"append", "extend", "insert", "remove", "clear", "sort", "reverse",
                       "update", "setdefault", "pop", "popitem"})


def _root(target):
    while isinstance(target, (gast.Subscript, gast.Attribute)):
        target = target.value
    return target.id if isinstance(target, gast.Name) else None


def changed_arguments(node):
    """The parameters of ``node`` that its body changes in place (an item written or
    deleted, a rebinding standing for a method that changes the object, Static.MUTATES,
    or ``xs += ...``, Static.AUGMENTED) and never rebinds otherwise."""
    params = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    changed, rebound = set(), set()
    for s in ast_util.walk_statements(node.body):
        if isinstance(s, gast.Assign):
            targets = s.targets
        elif isinstance(s, (gast.AugAssign, gast.AnnAssign)):
            targets = [s.target]
        elif isinstance(s, gast.Delete):
            changed.update(_root(t) for t in s.targets if isinstance(t, gast.Subscript))
            continue
        elif isinstance(s, (gast.For, gast.AsyncFor)):
            targets = [s.target]
        elif isinstance(s, gast.With):
            targets = [i.optional_vars for i in s.items if i.optional_vars is not None]
        elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) \
                and isinstance(s.value.func, gast.Attribute) and s.value.func.attr in _IN_PLACE \
                and isinstance(s.value.func.value, gast.Name):
            # xs.append(v): in place, which the reverse sweep undoes (a copy's append is not)
            changed.add(s.value.func.value.id)
            continue
        else:
            continue
        for target in targets:
            if isinstance(target, gast.Name):
                if target.id not in params:
                    continue
                if isinstance(s, gast.Assign) and (anno.getanno(s, Static.MUTATES)
                                                   or anno.getanno(s, Static.AUGMENTED)):
                    changed.add(target.id)
                else:
                    rebound.add(target.id)
            elif isinstance(target, gast.Subscript):
                changed.add(_root(target))
            else:
                rebound.update(n.id for n in ast_util.walk(target)
                               if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store))
    return sorted((changed & params) - rebound)


def transform(node, ctx):
    """Keep each changed list or dict argument's caller object and write it back before
    each return (module docstring)."""
    changed = changed_arguments(node)
    if not changed:
        return node
    from srcgrad import runtime
    keep = as_array.bind(ctx.namer, ctx.info, ctx.bindings, "caller_of", runtime.caller_of)
    write = as_array.bind(ctx.namer, ctx.info, ctx.bindings, "write_back", runtime.write_back)
    callers = {p: ctx.namer.new(f"caller_{p}") for p in changed}

    def statements(text, where, primitive):
        out = replace(text)
        for s in out:
            gast.copy_location(s, where)
            anno.copyanno(where, s, Static.ORIGIN)
            anno.setanno(s.value, Static.PRIMITIVE, primitive)
        return out

    def write_back(where):
        return [s for p in changed
                for s in statements(f"{write}({callers[p]}, {p})", where, runtime.write_back)]

    def block(body):
        out = []
        for stmt in body:
            if not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    if getattr(stmt, field, None):
                        setattr(stmt, field, block(getattr(stmt, field)))
                for handler in getattr(stmt, "handlers", None) or ():
                    handler.body = block(handler.body)
            if isinstance(stmt, gast.Return):
                out.extend(write_back(stmt))
            out.append(stmt)
        return out

    node.body = block(node.body)
    if not isinstance(node.body[-1], gast.Return):
        node.body.extend(write_back(node.body[-1]))
    # Each is worked on as a copy of its own (a list's appends too, which the reverse
    # sweep undoes in place) that the function then writes back.
    save = as_array.bind(ctx.namer, ctx.info, ctx.bindings, "container_copy", runtime.container_copy)
    first = node.body[0]
    node.body = [s for p in changed for text, primitive in (
        (f"{callers[p]} = {keep}({p})", runtime.caller_of), (f"{p} = {save}({p})", runtime.container_copy))
        for s in statements(text, first, primitive)] + node.body
    return node


def callers_kept(body):
    """How many statements at the top of ``body`` keep a caller's object (``caller_of``):
    the reverse mode's copies of written arguments go after them."""
    from srcgrad import runtime
    kept = 0
    while kept < len(body) and isinstance(body[kept], gast.Assign) \
            and anno.getanno(body[kept].value, Static.PRIMITIVE) in (runtime.caller_of,
                                                                     runtime.container_copy):
        kept += 1
    return kept


def keep_differentiated(node, names, kinds=None):
    """Drop the write-back (and the copy) of the parameters in ``names``, those
    differentiated: a gradient has the structure of the value passed, and every mode
    leaves that value as it was (docs/language.md), working on its copy. ``kinds``: parameter -> its rank key where the code
    is compiled for known arguments: one known to be no list or dict (an array, a
    number) keeps none either, so the code is as before (and jit=True compiles it)."""
    if not callers_kept(node.body[:1]):
        return node   # (nothing written back: most functions)
    from srcgrad import pytree
    plain = {p for p, key in (kinds or {}).items()
             if key is not None and not isinstance(key, pytree.TreeKey)}
    names = set(names) | plain
    if not names:
        return node
    from srcgrad import runtime

    def kept(body):
        out = []
        for s in body:
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None) and not isinstance(s, (gast.FunctionDef, gast.ClassDef)):
                    setattr(s, field, kept(getattr(s, field)))
            value = getattr(s, "value", None)
            prim = anno.getanno(value, Static.PRIMITIVE) if isinstance(value, gast.Call) else None
            if prim is runtime.write_back and value.args[1].id in names or \
                    prim is runtime.caller_of and value.args[0].id in names or \
                    prim is runtime.container_copy and value.args[0].id in plain \
                    and isinstance(s, gast.Assign) and s.targets[0].id == value.args[0].id:
                continue
            out.append(s)
        return out or [gast.Pass()]

    node.body = kept(node.body)
    return node
