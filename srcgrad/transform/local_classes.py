"""A dataclass defined inside the function differentiated (``@dataclass class P: ...`` in
its body), made once when compiling, as a class of the module is (pipeline.front_end,
before fence.py, which refuses the other class definitions).

A class statement at the top of the body, decorated only by ``dataclasses.dataclass``,
whose body holds only methods, a docstring and fields (``w: np.ndarray``, a constant
default), and which reads no name the function binds (nor the class's own name: its
methods would look for it in the module) is run once, in the module's namespace, with
the file's line numbers (so its methods' source is read as any method's). Each call of
Python's function makes a new class of the same definition, which nothing there can tell
from the one made here; the name then denotes that class (``P(w)``, ``P(w)(x)``, its
methods: transform/methods.py) as a global would. Any other class statement is left to
fence.py's refusal.
"""

import ast
import builtins
import dataclasses
import textwrap

import gast

from srcgrad import ast_util
from srcgrad.transform.base import local_names, lookup_dotted


def may_hold(info):
    """Whether the source may hold a class statement (most functions do not: no walk)."""
    return any(line.lstrip().startswith("class ") for line in info.source_lines[1:])


def transform(node, ctx):
    """Make the classes described above and read them through names bound to them."""
    info, locals_ = ctx.info, local_names(node)
    stores = {}
    for n in ast_util.walk(node):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    for k, s in enumerate(list(node.body)):
        if not isinstance(s, gast.ClassDef) or stores.get(s.name, 0) or not _plain(s, info, locals_) \
                or any(isinstance(n, gast.Name) and n.id == s.name   # (read before: Python's error)
                       for before in node.body[:k] for n in ast_util.walk(before)):
            continue
        cls = _make(s, info)
        if cls is None:
            continue
        fresh = ctx.namer.new(s.name)
        info.extra[fresh] = ctx.bindings[fresh] = cls
        node.body.remove(s)
        for n in ast_util.walk(node):
            if isinstance(n, gast.Name) and n.id == s.name:
                n.id = fresh
    return node


def _plain(s, info, locals_):
    """Whether class statement ``s`` has the form described above."""
    if s.bases or s.keywords or len(s.decorator_list) != 1 \
            or lookup_dotted(s.decorator_list[0], info, info.closure) is not dataclasses.dataclass:
        return False
    free = []   # the names read where nothing in the class binds them
    for item in s.body:
        if isinstance(item, gast.Expr) and isinstance(item.value, gast.Constant):
            continue
        if isinstance(item, gast.FunctionDef) and not item.decorator_list:
            bound = {n.id for n in ast_util.walk(item) if isinstance(n, gast.Name)
                     and not isinstance(n.ctx, gast.Load)}
            free += [n.id for n in ast_util.walk(item) if isinstance(n, gast.Name)
                     and isinstance(n.ctx, gast.Load) and n.id not in bound]
            continue
        if isinstance(item, gast.AnnAssign) and isinstance(item.target, gast.Name) and (
                item.value is None or isinstance(item.value, gast.Constant)):
            free += [n.id for n in ast_util.walk(item.annotation) if isinstance(n, gast.Name)]
            continue
        return False
    return not any(v == s.name or v in locals_ or v in info.closure
                   or v not in info.globals and not hasattr(builtins, v) for v in free)


def _make(s, info):
    """The class statement ``s`` run in the module's namespace, or None where it fails."""
    start = min(d.lineno for d in s.decorator_list)
    lines = info.source_lines[start - 1:s.end_lineno]
    try:
        tree = ast.parse(textwrap.dedent("\n".join(lines)))
    except SyntaxError:
        return None
    ast.increment_lineno(tree, info.first_lineno + start - 2)
    namespace = {}
    try:
        exec(compile(tree, info.filename, "exec"), info.globals, namespace)
    except Exception:   # left to fence.py's refusal
        return None
    cls = namespace.get(s.name)
    if not isinstance(cls, type):
        return None
    cls.__qualname__ = f"{getattr(info.fn, '__qualname__', info.name)}.<locals>.{s.name}"
    cls.__module__ = info.globals.get("__name__", cls.__module__)
    return cls

