"""``global G`` in the function differentiated (an evaluation counter, ``global calls;
calls += 1``; a value kept for later, ``global last; last = loss``).

Inside the function ``G`` is one of its locals: read from the module when the function
starts and written back to it right after each statement that binds it and as the function
returns, so the module sees each change when Python would, and the value model follows
``G`` as any local read at the end (a gradient through it, its values saved for the
reverse sweep, an in-place write into an array it shares refused). The function runs once per call of a
gradient (``sg.grad``, ``sg.jvp``), so the module sees one run's changes per call.

Refused at the line: ``global`` in a helper srcgrad inlines (its caller would keep a copy
of its own), ``del G``, a change of G's object in place (``G[k] = v``, ``G.append(v)``:
srcgrad's item updates are undone by the reverse sweep, so the module would not keep it), and a helper that reads a name the function declares global (a
helper's globals are bound when compiling: it would read the value the name held then).
"""

import sys

import gast

from srcgrad import anno, ast_util
from srcgrad.errors import UnsupportedError
from srcgrad.templates import replace
from srcgrad.transform import unroll
from srcgrad.transform.base import Base

Static = anno.Static


def may_hold(info):
    """Whether the source may hold a ``global`` statement (most functions do not: no walk)."""
    return any(line.lstrip().startswith("global ") for line in info.source_lines[1:])


def _own_statements(node):
    """The statements of ``node``'s own scope (not those of defs or lambdas in it)."""
    todo = list(node.body)
    while todo:
        stmt = todo.pop()
        yield stmt
        if isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            todo.extend(getattr(stmt, field, None) or ())
        for handler in getattr(stmt, "handlers", None) or ():
            todo.extend(handler.body)
        for case in getattr(stmt, "cases", None) or ():
            todo.extend(case.body)


def _binds(stmt, names):
    """The names of ``names`` that statement ``stmt`` binds itself (its header, not its body)."""
    if isinstance(stmt, gast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (gast.AugAssign, gast.AnnAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, (gast.For, gast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, gast.With):
        targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    else:
        targets = [getattr(stmt, f) for f in ("test", "value") if getattr(stmt, f, None) is not None]
        return sorted({n.target.id for t in targets for n in ast_util.walk(t)
                       if isinstance(n, gast.NamedExpr) and n.target.id in names})
    return sorted({n.id for t in targets for n in ast_util.walk(t)
                   if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and n.id in names})


def _changed_in_place(stmt, names):
    """The name of ``names`` whose object ``stmt`` changes in place (``G[k] = v``,
    ``G.w += v``, ``G.append(v)``), or None."""
    targets = stmt.targets if isinstance(stmt, gast.Assign) else \
        [stmt.target] if isinstance(stmt, (gast.AugAssign, gast.AnnAssign)) else []
    roots = []
    for target in targets:
        for t in ast_util.walk(target):
            if isinstance(t, (gast.Subscript, gast.Attribute)) and isinstance(t.ctx, gast.Store):
                roots.append(t.value)
    for header in [getattr(stmt, f, None) for f in ("value", "test", "iter")]:
        for n in ast_util.walk(header) if header is not None else ():
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                    and n.func.attr in unroll.MUTATORS:
                roots.append(n.func.value)
    for root in roots:
        while isinstance(root, (gast.Subscript, gast.Attribute)):
            root = root.value
        if isinstance(root, gast.Name) and root.id in names:
            return root.id
    return None


def transform(node, ctx):
    """Make the names ``node`` declares ``global`` its locals, read from the module first and
    written back after each binding (module docstring); records them on the root frame
    (``ctx.stack[0].declared_globals``) for inline.py's check of helpers."""
    declared = [s for s in _own_statements(node) if isinstance(s, gast.Global)]
    if not declared:
        return node
    base = Base(ctx.info)
    if len(ctx.stack) > 1:
        raise base.error(declared[0], UnsupportedError,
                         "global in a helper srcgrad inlines is not supported",
                         "Declare it in the function you differentiate, or return the new "
                         "value from the helper.")
    names = frozenset(n for s in declared for n in s.names)
    for stmt in _own_statements(node):
        if isinstance(stmt, gast.Delete) and any(
                isinstance(t, gast.Name) and t.id in names for t in stmt.targets):
            raise base.error(stmt, UnsupportedError, "del of a name declared global is not "
                             "supported in a function srcgrad differentiates",
                             "Assign it None instead.")
    from srcgrad import runtime
    for stmt in _own_statements(node):
        changed = _changed_in_place(stmt, names)
        if changed is not None:
            raise base.error(stmt, UnsupportedError,
                             f"changing the global {changed!r} in place (an item, an attribute "
                             f"or a method such as append) in a function declaring it global is "
                             f"not supported: srcgrad would not leave the change in the module",
                             f"Build the new value and assign it ({changed} = {{**{changed}, "
                             f"'k': v}} for a dict, {changed} = {changed} + [v] for a list).")
    module = ctx.namer.new("module_globals")
    read, write = ctx.namer.new("read_global"), ctx.namer.new("write_global")
    found = sys.modules.get(getattr(ctx.info.fn, "__module__", None) or "")
    namespace = found if found is not None and vars(found) is ctx.info.globals else \
        runtime.GlobalsOf(ctx.info.globals)
    for bound, value in ((module, namespace), (read, runtime.read_global),
                         (write, runtime.write_global)):   # (bound: `rt` is renamed here)
        ctx.info.extra[bound] = ctx.bindings[bound] = value

    def write_back(stmt, bound):
        out = []
        for g in bound:
            for s in replace(f"{write}({module}, {g!r}, {g})"):
                gast.copy_location(s, stmt)
                anno.copyanno(stmt, s, Static.ORIGIN)
                out.append(s)
        return out

    def block(body):
        out = []
        for stmt in body:
            if isinstance(stmt, gast.Global):
                continue
            for field in ("body", "orelse", "finalbody"):
                if getattr(stmt, field, None) and not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                    setattr(stmt, field, block(getattr(stmt, field)))
            for handler in getattr(stmt, "handlers", None) or ():
                handler.body = block(handler.body)
            bound = _binds(stmt, names)
            if isinstance(stmt, (gast.For, gast.AsyncFor, gast.With)) and bound:
                stmt.body = write_back(stmt, bound) + stmt.body   # (the target, each pass)
                bound = ()
            if isinstance(stmt, gast.Return):   # (the module reads them afterwards: the
                out.extend(write_back(stmt, sorted(names)))   # value model keeps that)
            out.append(stmt)
            out.extend(write_back(stmt, bound))
        if not out:
            out = [gast.Pass()]
            gast.copy_location(out[0], body[0])
            anno.copyanno(body[0], out[0], Static.ORIGIN)
        return out

    node.body = block(node.body)
    if not isinstance(node.body[-1], gast.Return):
        node.body.extend(write_back(node.body[-1], sorted(names)))
    prologue = []
    for g in sorted(names):
        for s in replace(f"{g} = {read}({module}, {g!r})"):
            gast.copy_location(s, declared[0])
            anno.copyanno(declared[0], s, Static.ORIGIN)
            prologue.append(s)
    node.body = prologue + node.body
    ctx.stack[0].declared_globals = names
    ctx.stack[0].module_globals = ctx.info.globals
    return node


def refuse_read(origin, helper, name, root):
    """The refusal of a helper that reads ``name``, which the function differentiated
    (``root``'s frame) declares global."""
    return origin.error(UnsupportedError,
                        f"{helper.__qualname__} reads the global {name!r}, which {root.name} "
                        f"changes (global {name}): a helper's globals are bound when srcgrad "
                        f"compiles, so it would read the value {name!r} held then",
                        f"Pass {name} to {helper.__name__} as an argument.")

