"""``del`` statements and annotated assignments, before the checks (pipeline.front_end):

* ``del d[k]`` / ``del xs[i]`` (an item, not a slice) is ``d.pop(k)`` / ``xs.pop(i)``,
  which methods.py follows as a dict's or list's pop;
* ``del x`` of a local is dropped where nothing after it reads ``x`` (Python would raise
  NameError there: that is refused at the ``del``); it frees memory in Python, which the
  generated code does itself (the releases of codegen/release.py).

``del`` of a slice, an attribute or a name read afterwards is refused at its line.

``try: body finally: cleanup`` (no ``except``) is ``body`` then ``cleanup`` where neither
leaves the block early (``return``, or ``break``/``continue`` of a loop around it): when
nothing raises, Python runs exactly those; when ``body`` raises, the call raises too (the
cleanup is then not run). ``try: v = d[k]`` whose handlers catch ``KeyError``,
``IndexError`` or ``LookupError`` (``d`` a name, ``k`` a name or a constant) is the test
Python makes: ``if rt.lookup_fails(d, k, (KeyError,)): <handler> else: v = d[k]; <else>``;
``try: L = np.linalg.cholesky(K)`` (one call of a NumPy or SciPy function, pure, its
arguments without calls) with one ``except`` likewise, ``if rt.call_fails(np.linalg.cholesky,
(K,), (LinAlgError,)):``, the call made again for the assignment. Any other ``try`` is refused by fence.py.

An annotated assignment ``y: np.ndarray = f(x)`` is the assignment ``y = f(x)`` (Python
evaluates the annotation of a local for nothing); a bare ``z: float`` is dropped, unless
the function reads ``z`` without ever binding it (then Python raises, and a global of
that name must not be read in its place: refused).
"""

import re

import gast
import numpy

from srcgrad import anno, ast_util, runtime
from srcgrad.errors import UnsupportedError
from srcgrad.transform import as_array
from srcgrad.transform.base import Base
from srcgrad.transform.plain_classes import repeat_safe


_ANNOTATED = re.compile(r"^\s*[A-Za-z_][\w.]*(\[[^\]:]*\])?\s*:(?!=)\s*[^\s#]")
_NOT_ANNOTATIONS = ("else", "try", "finally", "lambda", "case", "match")


def may_hold(info):
    """Whether the source may hold a ``del`` statement or an annotated assignment (most
    functions do not: no walk)."""
    return any(line.lstrip().startswith(("del ", "finally:", "except")) or (
        _ANNOTATED.match(line) and not line.lstrip().startswith(_NOT_ANNOTATIONS))
        for line in info.source_lines[1:])


def transform(node, ctx):
    """``node`` with each ``del`` statement and annotated assignment written as above,
    or refused."""
    base = Base(ctx.info)
    base.ctx = ctx
    _block(node.body, node, base)
    return node


def _block(body, root, base):
    k = 0
    while k < len(body):
        stmt = body[k]
        if isinstance(stmt, gast.Delete):
            body[k:k + 1] = [s for target in stmt.targets for s in _lowered(target, stmt, root, base)]
            continue
        if isinstance(stmt, gast.AnnAssign):
            body[k:k + 1] = _unannotated(stmt, root, base)
            continue
        if isinstance(stmt, gast.Try) and not stmt.handlers and not stmt.orelse \
                and not _leaves(stmt.body + stmt.finalbody):
            body[k:k + 1] = stmt.body + stmt.finalbody
            continue
        if isinstance(stmt, gast.Try) and stmt.handlers:
            lowered = _lookup(stmt, base)
            if lowered is not None:
                body[k] = lowered
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                _block(inner, root, base)
                if not inner:
                    inner.append(gast.copy_location(gast.Pass(), stmt))
        k += 1


def _lowered(target, stmt, root, base):
    if isinstance(target, gast.Subscript) and not isinstance(target.slice, gast.Slice):
        pop = gast.Call(func=gast.Attribute(value=_loaded(target.value), attr="pop", ctx=gast.Load()),
                        args=[target.slice], keywords=[])
        expr = gast.Expr(value=pop)
        for child in gast.walk(expr):
            if isinstance(child, (gast.expr, gast.stmt)) and not hasattr(child, "lineno"):
                gast.copy_location(child, target)
        return [expr]
    if isinstance(target, gast.Name):
        if _read_after(root, stmt, target.id):
            raise base.error(stmt, UnsupportedError,
                             f"del {target.id} where the function reads {target.id!r} after it (in "
                             f"the lines below, or in the loop around it) is not supported in a "
                             f"function srcgrad differentiates",
                             "Drop the del, or use another name for the new value.")
        return []
    what = "a slice" if isinstance(target, gast.Subscript) else "an attribute" \
        if isinstance(target, gast.Attribute) else "this target"
    raise base.error(stmt, UnsupportedError,
                     f"del of {what} is not supported in a function srcgrad differentiates",
                     "Build the value without those items (a comprehension, np.delete), or "
                     "rebind the name.")


def _unannotated(stmt, root, base):
    if stmt.value is not None:
        return [gast.copy_location(gast.Assign(targets=[stmt.target], value=stmt.value,
                                               type_comment=None), stmt)]
    target = stmt.target
    if isinstance(target, gast.Name) and not any(
            isinstance(n, gast.Name) and n.id == target.id and not isinstance(n.ctx, gast.Load)
            and n is not target for n in ast_util.walk(root)) and any(
            isinstance(n, gast.Name) and n.id == target.id for n in ast_util.walk(root)
            if n is not target):
        raise base.error(stmt, UnsupportedError,
                         f"{target.id!r}, declared ({target.id}: ...) and read but never "
                         f"assigned, is not supported in a function srcgrad differentiates",
                         f"Assign {target.id!r} before reading it.")
    return []


_LOOKUP_ERRORS = (KeyError, IndexError, LookupError)
_LIBRARIES = ("numpy", "scipy")   # the functions a try may call: pure, so callable twice


def _lookup(stmt, base):
    """``try: v = d[k]`` / ``except KeyError: ...`` as the ``if`` it stands for, and ``try:
    L = np.linalg.cholesky(K)`` / ``except np.linalg.LinAlgError: ...`` likewise (the call
    made once in the test, once in the assignment), or None."""
    read = stmt.body[0] if len(stmt.body) == 1 else None
    if not (isinstance(read, gast.Assign) and len(read.targets) == 1) or stmt.finalbody \
            or len(stmt.handlers) != 1 or stmt.handlers[0].name is not None:
        return None   # (`except KeyError as e`: e is bound by the handler)
    value, target = read.value, read.targets[0]
    if isinstance(target, gast.Name) and isinstance(value, gast.Subscript) \
            and isinstance(value.value, gast.Name) and isinstance(value.slice, (gast.Name, gast.Constant)):
        allowed, helper = _LOOKUP_ERRORS, runtime.lookup_fails
        arguments = [_copy(value.value), _copy(value.slice)]
    elif _library_call(value, base) and (isinstance(target, gast.Name) or isinstance(target, gast.Tuple)
                                         and all(isinstance(e, gast.Name) for e in target.elts)):
        allowed, helper = None, runtime.call_fails
        arguments = [_copy(value.func), gast.Tuple(elts=[_copy(a) for a in value.args], ctx=gast.Load())]
    else:
        return None
    handler = stmt.handlers[0]
    kinds = handler.type.elts if isinstance(handler.type, gast.Tuple) else [handler.type]
    for kind in kinds:
        found = _exception_class(kind, base)
        if found is None or allowed is not None and found not in allowed:
            return None
    helper = as_array.bind(base.ctx.namer, base.info, base.ctx.bindings, helper.__name__, helper)
    test = gast.Call(func=gast.Name(id=helper, ctx=gast.Load(), annotation=None, type_comment=None),
                     args=arguments + [gast.Tuple(elts=[_copy(e) for e in kinds], ctx=gast.Load())],
                     keywords=[_copy(k) for k in value.keywords] if allowed is None else [])
    anno.setanno(test, anno.Static.PRIMITIVE, base.info.extra[helper])
    out = gast.If(test=test, body=handler.body, orelse=[read] + stmt.orelse)
    for child in gast.walk(out):
        if isinstance(child, (gast.expr, gast.stmt)) and not hasattr(child, "lineno"):
            gast.copy_location(child, stmt)
    return out


def _exception_class(kind, base):
    """The exception class the dotted name ``kind`` denotes (recorded as a read), or None."""
    path = ast_util.dotted(kind)
    try:
        found = base.info.resolve_path(path) if path is not None else None
    except (NameError, AttributeError):
        return None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


def _library_call(value, base):
    """Whether ``value`` calls a NumPy or SciPy function (pure: calling it twice gives what
    once does) with arguments that compute the same when evaluated twice (no call)."""
    if not isinstance(value, gast.Call) or any(isinstance(a, gast.Starred) for a in value.args) \
            or any(k.arg is None for k in value.keywords):
        return False
    path = ast_util.dotted(value.func)
    try:
        func = base.info.resolve_path(path) if path is not None else None
    except (NameError, AttributeError):
        return False
    module = getattr(func, "__module__", None) or ("numpy" if isinstance(func, numpy.ufunc) else "")
    return callable(func) and not isinstance(func, type) and module.split(".")[0] in _LIBRARIES \
        and all(repeat_safe(a) for a in value.args + [k.value for k in value.keywords])


def _copy(node):
    import copy
    return copy.deepcopy(node)


def _leaves(body):
    """Whether a statement of ``body`` may leave it early: a ``return``, or a ``break`` or
    ``continue`` outside the loops it holds (nested functions aside)."""
    todo = [(s, False) for s in body]
    while todo:
        n, in_loop = todo.pop()
        if isinstance(n, gast.Return) or isinstance(n, (gast.Break, gast.Continue)) and not in_loop:
            return True
        if isinstance(n, (gast.FunctionDef, gast.Lambda)):
            continue
        inner = in_loop or isinstance(n, (gast.For, gast.While))
        todo.extend((c, inner) for c in gast.iter_child_nodes(n))
    return False


def _loaded(value):
    """``value`` (a ``del`` target's container) as an expression that reads it."""
    for child in gast.walk(value):
        if hasattr(child, "ctx"):
            child.ctx = gast.Load()
    return value


def _read_after(root, stmt, name):
    """Whether ``name`` may be read after ``stmt`` deletes it: below it in the source, or in
    a loop holding it, unless that loop's body binds ``name`` before anything reads it."""
    where = (stmt.lineno, stmt.col_offset)
    loads = [n for n in ast_util.walk(root) if isinstance(n, gast.Name) and n.id == name
             and isinstance(n.ctx, gast.Load)]
    if any((n.lineno, n.col_offset) > where for n in loads):
        return True
    for loop in ast_util.walk(root):
        if isinstance(loop, (gast.For, gast.While)) and any(s is stmt for s in ast_util.walk(loop)) \
                and not _bound_first(loop.body, name) \
                and any(any(m is n for m in ast_util.walk(loop)) for n in loads):
            return True
    return False


def _bound_first(body, name):
    """Whether the first statement of ``body`` that mentions ``name`` binds it (``t = ...``,
    not reading it)."""
    for s in body:
        mentions = [n for n in ast_util.walk(s) if isinstance(n, gast.Name) and n.id == name]
        if not mentions:
            continue
        return isinstance(s, gast.Assign) and all(not isinstance(n.ctx, gast.Load) for n in mentions) \
            and any(isinstance(t, gast.Name) and t.id == name for t in s.targets)
    return False
