"""Lists held by a dict or a list, updated in place, written as the item updates srcgrad
already differentiates (pipeline.front_end, before methods.py); so is an assignment two
subscripts deep, ``c[k][i] = v`` (``_ItemUpdates.nested``), and a NumPy call writing into
an array's view, ``np.f(a, out=b[k])`` (``_ItemUpdates.out_item``).

(``v = d[k].pop(i)`` and ``d[k].insert(i, v)`` likewise: ``popped = d[k][i]`` and
``d[k] = rt.seq_without(d[k], i)``, ``d[k] = d[k][:i] + [v] + d[k][i:]``, each store
marked an in-place update of ``d[k]``'s list, as the ``+=`` below is.)

A statement ``d[k].append(v)`` (or ``.extend(e)``) on a local ``d`` changes the list that
``d[k]`` holds; ``d.setdefault(k, []).append(v)`` first stores the default where ``k`` is
missing. Each becomes an augmented item assignment, which Python's own ``d[k] += [v]`` is
(``list.__iadd__`` extends the list in place and stores it back)::

    key = k                                  # (when k is not a name or a constant)
    d.setdefault(key, [])                    # (setdefault only; methods.py rewrites it)
    if not isinstance(d[key], list):         # an array's += would add, not append
        raise AttributeError("...")
    d[key] += [v]                            # .extend(e): d[key] += list(e)

``d[key] += [v]`` is the write analysis/aliasing.py already checks: where another name
read afterwards may hold the list (``lst = d[k]``, ``d = {"k": a}``, ``rows = [[]] * 2``,
a shallow copy ``e = dict(d)``), it is refused when compiled or checked when it runs, as
``d[k] += [v]`` written by hand is. A ``for`` loop over an item of ``d`` whose body
updates ``d`` this way is refused: Python's loop would see the new items. (A loop over
``d``'s keys or items sees no new ones; a name bound to one of its lists and read after the
update is refused by the alias analysis.)
"""

import ast
import builtins
import copy

import gast
import numpy

from srcgrad import anno, runtime
from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.rules.structure_rules import item_key, view_key
from srcgrad.transform import as_array
from srcgrad.transform.base import Base, local_names
from srcgrad.transform.operator_methods import simple

Static = anno.Static

_GROWING = ("append", "extend")
_METHODS = _GROWING + ("pop", "insert")


def may_hold(info):
    """Whether the source may hold ``<expr>].append(``/``.extend(``/``.pop(``/``.insert(`` or
    ``.setdefault(``, or a nested item assignment ``c[k][i] = v``, or ``out=b[k]`` (most
    functions do not: no walk)."""
    return any(("]." in line or ")." in line) and any(f".{m}(" in line for m in _METHODS)
               or "][" in line and "=" in line or "out=" in line and "[" in line
               for line in info.source_lines[1:])


def transform(node, ctx):
    """``node`` with each item update of a local list written as above."""
    rewrite = _ItemUpdates(ctx, local_names(node))
    node.body = rewrite.visit_block(node.body)
    return node


def _receiver(call, locals_):
    """``(container name, key, default or None)`` of ``d[k].append(v)``,
    ``d.setdefault(k, D).append(v)``, ``d[k].pop(...)`` or ``d[k].insert(i, v)`` on a local
    ``d``, else None."""
    if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
            and call.func.attr in _METHODS and not call.keywords
            and len(call.args) == {"pop": len(call.args[:2]), "insert": 2}.get(call.func.attr, 1)
            and not any(isinstance(a, gast.Starred) for a in call.args)):
        return None
    value = call.func.value
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) \
            and value.value.id in locals_ and not isinstance(value.slice, gast.Slice):
        return value.value.id, value.slice, None
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) \
            and value.func.attr == "setdefault" and isinstance(value.func.value, gast.Name) \
            and value.func.value.id in locals_ and len(value.args) == 2 and not value.keywords \
            and not any(isinstance(a, gast.Starred) for a in value.args):
        return value.func.value.id, value.args[0], value.args[1]
    return None


def _nested(target, locals_):
    """Whether ``target`` is ``c[k][i]`` (any depth) of a local ``c``."""
    if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Subscript)):
        return False
    root = target.value
    while isinstance(root, gast.Subscript):
        root = root.value
    return isinstance(root, gast.Name) and root.id in locals_


def _text(node):
    return ast.unparse(gast.gast_to_ast(node))


def _iterates_an_item(node, container):
    """Whether the loop header ``node`` iterates a list ``container`` holds (``d[k]``,
    ``enumerate(rows[i])``; not ``len(d[k])``): Python's loop would see what is appended."""
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id == "len":
            continue
        if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and n.value.id == container:
            return True
        todo.extend(gast.iter_child_nodes(n))
    return False


class _ItemUpdates(Base):
    def __init__(self, ctx, locals_):
        super().__init__(ctx.info)
        self.ctx = ctx
        self.locals = locals_
        self.loops = []   # the enclosing for loops

    def bound(self, obj, hint):
        return name(as_array.bind(self.ctx.namer, self.info, self.ctx.bindings, hint, obj))

    def stmt(self, origin, node):
        anno.copyanno(origin, node, Static.ORIGIN)
        for child in gast.walk(node):
            if isinstance(child, (gast.expr, gast.stmt)) and not hasattr(child, "lineno"):
                gast.copy_location(child, origin)
        return node

    def visit_For(self, s):
        self.loops.append(s)
        try:
            return self.visit_children(s)
        finally:
            self.loops.pop()

    def visit_Assign(self, s):
        """``v = d[k].pop(...)``: the item read into a name first, as ``v = xs.pop()`` is
        (methods.py), then the list or dict without it stored back in place; ``c[k][i] = v``:
        ``nested``."""
        call = s.value
        if len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) and isinstance(call, gast.Call) \
                and isinstance(call.func, gast.Attribute) and call.func.attr == "pop":
            return self.visit_Expr(s)
        if len(s.targets) != 1 or not _nested(s.targets[0], self.locals):
            return s
        out = []
        value = s.value
        if not simple(value):   # Python evaluates the value before the target
            temp = self.ctx.namer.new("value")
            out.append(self.stmt(s, gast.Assign(targets=[name(temp, True)], value=value,
                                                type_comment=None)))
            value = name(temp)
        return out + self.nested(s, s.targets[0], lambda target: gast.Assign(
            targets=[target], value=value, type_comment=None))

    def visit_AugAssign(self, s):
        if not _nested(s.target, self.locals):
            return s
        return self.nested(s, s.target, lambda target: gast.AugAssign(
            target=target, op=s.op, value=s.value))

    def numpy_out_item(self, call):
        """Whether ``call`` is a NumPy (or CuPy) function's ``np.f(..., out=b[k])`` of a
        local ``b``, without ``where=``."""
        if not isinstance(call, gast.Call) or any(k.arg == "where" for k in call.keywords):
            return False
        out = [k.value for k in call.keywords if k.arg == "out"]
        if not (out and isinstance(out[0], gast.Subscript) and isinstance(out[0].value, gast.Name)
                and out[0].value.id in self.locals):
            return False
        path, func = [], call.func
        while isinstance(func, gast.Attribute):
            path.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in self.locals:
            return False
        try:
            obj = self.info.resolve_path((func.id,) + tuple(reversed(path)))
        except (NameError, AttributeError):
            return False
        module = getattr(obj, "__module__", None) or ("numpy" if isinstance(obj, numpy.ufunc) else "")
        return module.split(".")[0] in ("numpy", "cupy")

    def out_item(self, s):
        """``np.f(a, out=b[k])`` as a statement: where ``b`` is an array and ``k`` a basic
        index (``b[k]`` a view of it), NumPy's write into ``b``, ``b[k] = np.f(a)``, which
        srcgrad differentiates and checks as any indexed write (``mutation.py`` would write
        into a name bound to the view, refused as an alias of ``b``)::

            if rt.view_key(b, k):
                b[k] = np.f(a)
            else:                       # a list's item, or a copy (fancy index) NumPy fills
                np.f(a, out=b[k])
        """
        call = s.value
        out = next(k.value for k in call.keywords if k.arg == "out")
        stmts = []
        key = out.slice
        if not simple(key):
            temp = self.ctx.namer.new("key")
            stmts.append(self.stmt(s, gast.Assign(targets=[name(temp, True)], value=self.value_of(key),
                                                  type_comment=None)))
            key = name(temp)
            out.slice = copy.deepcopy(key)
        plain = gast.Call(func=copy.deepcopy(call.func), args=copy.deepcopy(call.args),
                          keywords=[copy.deepcopy(k) for k in call.keywords if k.arg != "out"])
        write = gast.Assign(targets=[gast.Subscript(value=name(out.value.id), slice=copy.deepcopy(key),
                                                    ctx=gast.Store())], value=plain, type_comment=None)
        test = gast.Call(func=self.bound(view_key, "view_key"),
                         args=[name(out.value.id), copy.deepcopy(key)], keywords=[])
        stmts.append(self.stmt(s, gast.If(test=test, body=[self.stmt(s, write)], orelse=[s])))
        return stmts

    def value_of(self, key):
        """The index ``key`` as a value (``1:3`` -> ``slice(1, 3, None)``)."""
        none = gast.Constant(value=None, kind=None)
        if isinstance(key, gast.Slice):
            return gast.Call(func=self.bound(builtins.slice, "slice"), args=[
                p if p is not None else copy.deepcopy(none) for p in (key.lower, key.upper, key.step)],
                keywords=[])
        if isinstance(key, gast.Tuple):
            return gast.Tuple(elts=[self.value_of(e) for e in key.elts], ctx=gast.Load())
        return key

    def nested(self, s, target, write):
        """``c[k][i] = v`` (``write(c[k][i])``) as an update of ``c[k]`` in place,
        which Python's write into the item ``c[k]`` holds is::

            key = rt.item_key(c, k, ...)    # raises where c[k] is a copy (a list's slice...)
            item = copy.copy(c[key])        # an array's copy, a list's or dict's
            item[i] = v
            c[key] = item                   # marked augmented: analysis/aliasing.py checks
                                            # the names and items that share c[key]
        """
        inner, key = target.value, target.slice
        if isinstance(inner.value, gast.Subscript):
            raise self.error(s, UnsupportedError, "assignment three subscripts deep "
                             f"({_text(target)} = ...) is not supported",
                             "Write at most two subscripts deep (c[k][i] = v): build the inner "
                             "container anew and store it (c[a][b] = new).")
        line = getattr(self.origin_of(s), "lineno", None)
        errors = [gast.Call(func=self.bound(UnsupportedError, "UnsupportedError"), args=[
            gast.Constant(value=v, kind=None) for v in (message, self.info.filename, line)],
            keywords=[]) for message in (
            f"{_text(inner)} in {_text(target)} = ... must be one item of "
            f"{_text(inner.value)} (an index or a key), not the new value a slice, list or "
            f"array index makes, which Python's write would leave: srcgrad refuses rather "
            f"than guess",
            f"{_text(target)} = ... writes into an item of the tuple {_text(inner.value)}, "
            f"which srcgrad cannot store back: bind the item to a name and write into it "
            f"(a list's or array's other holders are then checked as usual)")]
        out = []
        temp = self.ctx.namer.new("key")
        out.append(self.stmt(s, gast.Assign(targets=[name(temp, True)], value=gast.Call(
            func=self.bound(item_key, "item_key"),
            args=[copy.deepcopy(inner.value), self.value_of(inner.slice)] + errors,
            keywords=[]), type_comment=None)))
        item = self.ctx.namer.new("item")
        out.append(self.stmt(s, gast.Assign(targets=[name(item, True)], value=gast.Call(
            func=self.bound(copy.copy, "copy"), args=[gast.Subscript(
                value=copy.deepcopy(inner.value), slice=name(temp), ctx=gast.Load())],
            keywords=[]), type_comment=None)))
        out.append(self.stmt(s, write(gast.Subscript(value=name(item), slice=key,
                                                     ctx=gast.Store()))))
        store = self.stmt(s, gast.Assign(targets=[gast.Subscript(
            value=copy.deepcopy(inner.value), slice=name(temp), ctx=gast.Store())],
            value=name(item), type_comment=None))
        anno.setanno(store, Static.AUGMENTED, True)
        return out + [store]

    def visit_Expr(self, s):
        if self.numpy_out_item(s.value):
            return self.out_item(s)
        call = s.value
        if isinstance(s, gast.Expr) and isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                and call.func.attr in _GROWING and len(call.args) == 1 and not call.keywords \
                and not isinstance(call.args[0], gast.Starred) and _nested(call.func.value, self.locals) \
                and not isinstance(call.func.value.value.value, gast.Subscript):
            return self.two_deep(s)
        found = _receiver(s.value, self.locals)
        if found is None or (isinstance(s, gast.Assign) and s.value.func.attr != "pop"):
            return s
        container, key, default = found
        call = s.value
        if default is not None and call.func.attr in ("pop", "insert"):
            return s   # (d.setdefault(k, []).pop(): left to mutation.py's refusal)
        for loop in self.loops:
            if _iterates_an_item(loop.iter, container):
                raise self.error(s, UnsupportedError,
                                 f"a for loop over a list {container!r} holds whose body "
                                 f"changes its lists ({_text(call.func)}(...)) "
                                 f"is not supported: Python's loop would see the new items",
                                 "Loop with an index: `i = 0`, `while i < len(...)`, ..., `i += 1`, "
                                 "or collect the new items in a list of their own first.")
        out = []
        if not simple(key):
            temp = self.ctx.namer.new("key")
            out.append(self.stmt(s, gast.Assign(targets=[name(temp, True)], value=key,
                                                type_comment=None)))
            key = name(temp)

        def item():
            return gast.Subscript(value=name(container), slice=copy.deepcopy(key), ctx=gast.Load())

        if default is not None:   # methods.py writes it as the merge it amounts to
            out.append(self.stmt(s, gast.Expr(value=gast.Call(
                func=gast.Attribute(value=name(container), attr="setdefault", ctx=gast.Load()),
                args=[copy.deepcopy(key), default], keywords=[]))))
        if call.func.attr == "pop":
            return out + self.pop(s, container, key, item)
        shown = f"{_text(call.func.value)}.{call.func.attr}(...)"
        line = getattr(self.origin_of(s), "lineno", None)
        joined = "+= [...]" if call.func.attr in _GROWING else "= ...[:i] + [v] + ...[i:]"
        message = (f"{self.info.filename}, line {line}: {shown} needs a list there (srcgrad "
                   f"differentiates it as `{container}[key] {joined}`, which adds to an array)")
        out.append(self.stmt(s, gast.If(
            test=gast.UnaryOp(op=gast.Not(), operand=gast.Call(
                func=self.bound(builtins.isinstance, "isinstance"),
                args=[item(), self.bound(builtins.list, "list")], keywords=[])),
            body=[gast.Raise(exc=gast.Call(func=self.bound(AttributeError, "AttributeError"),
                                           args=[gast.Constant(value=message, kind=None)],
                                           keywords=[]), cause=None)],
            orelse=[])))
        if call.func.attr == "insert":   # d[k][:i] + [v] + d[k][i:], stored in place
            at = self.temp(s, call.args[0], out, "at")
            new = gast.BinOp(left=gast.BinOp(
                left=gast.Subscript(value=item(), slice=gast.Slice(lower=None, upper=at, step=None),
                                    ctx=gast.Load()),
                op=gast.Add(), right=gast.List(elts=[call.args[1]], ctx=gast.Load())), op=gast.Add(),
                right=gast.Subscript(value=item(), slice=gast.Slice(lower=copy.deepcopy(at), upper=None,
                                                                    step=None), ctx=gast.Load()))
            return out + [self.store_back(s, container, key, new)]
        more = call.args[0]
        if call.func.attr == "append":
            more = gast.List(elts=[more], ctx=gast.Load())
        elif not isinstance(more, gast.List):
            more = gast.Call(func=self.bound(builtins.list, "list"), args=[more], keywords=[])
        target = gast.Subscript(value=name(container), slice=copy.deepcopy(key), ctx=gast.Store())
        out.append(self.stmt(s, gast.AugAssign(target=target, op=gast.Add(), value=more)))
        return out

    def two_deep(self, s):
        """``d[a][b].append(v)`` (``.extend(e)``; round thirteen) changes the list ``d[a][b]``
        holds. Written as the two-deep assignment ``nested`` already makes an update of
        ``d[a]`` in place, with the old list then marked changed in place, so that
        analysis/aliasing.py checks, once ``d`` holds the new list, that no other name read
        afterwards holds the old one (``lst = d[a][b]``, ``rows = [[]] * 2``)::

            held = d[a][b]
            if not isinstance(held, list): raise AttributeError(...)
            d[a][b] = held + [v]             # .extend(e): held + list(e)
            held = held                      # marked augmented: an in-place change of held
        """
        call, out = s.value, []
        target = copy.deepcopy(call.func.value)
        inner, root = target.value, target.value.value
        for part in (inner, target):
            if not isinstance(part.slice, gast.Slice):
                part.slice = self.temp(s, part.slice, out, "key")
        for loop in self.loops:
            if _iterates_an_item(loop.iter, root.id):
                raise self.error(s, UnsupportedError,
                                 f"a for loop over a list {root.id!r} holds whose body changes its "
                                 f"lists ({_text(call.func)}(...)) is not supported: Python's loop "
                                 f"would see the new items",
                                 "Loop with an index, or collect the new items in a list of their own first.")
        held = self.ctx.namer.new("held")
        out.append(self.stmt(s, gast.Assign(targets=[name(held, True)], value=copy.deepcopy(target),
                                            type_comment=None)))
        line = getattr(self.origin_of(s), "lineno", None)
        message = (f"{self.info.filename}, line {line}: {_text(call.func)}(...) needs a list there "
                   f"(srcgrad differentiates it as `{_text(target)} += [...]`, which adds to an array)")
        out.append(self.stmt(s, gast.If(
            test=gast.UnaryOp(op=gast.Not(), operand=gast.Call(
                func=self.bound(builtins.isinstance, "isinstance"),
                args=[name(held), self.bound(builtins.list, "list")], keywords=[])),
            body=[gast.Raise(exc=gast.Call(func=self.bound(AttributeError, "AttributeError"),
                                           args=[gast.Constant(value=message, kind=None)],
                                           keywords=[]), cause=None)],
            orelse=[])))
        more = call.args[0]
        if call.func.attr == "append":
            more = gast.List(elts=[more], ctx=gast.Load())
        elif not isinstance(more, gast.List):
            more = gast.Call(func=self.bound(builtins.list, "list"), args=[more], keywords=[])
        target.ctx = gast.Store()
        out += self.visit_Assign(self.stmt(s, gast.Assign(
            targets=[target], value=gast.BinOp(left=name(held), op=gast.Add(), right=more),
            type_comment=None)))
        touched = self.stmt(s, gast.Assign(targets=[name(held, True)], value=name(held), type_comment=None))
        anno.setanno(touched, Static.AUGMENTED, True)
        return out + [touched]

    def temp(self, origin, value, out, hint):
        """``value`` read into a new name (appended to ``out``) unless it is simple."""
        if simple(value):
            return value
        new = self.ctx.namer.new(hint)
        out.append(self.stmt(origin, gast.Assign(targets=[name(new, True)], value=value, type_comment=None)))
        return name(new)

    def store_back(self, origin, container, key, value):
        """``d[key] = value`` marked an in-place update of the list ``d[key]`` holds, as
        ``d[key] += [v]`` is (analysis/aliasing.py checks the other names holding it)."""
        node = self.stmt(origin, gast.Assign(targets=[gast.Subscript(
            value=name(container), slice=copy.deepcopy(key), ctx=gast.Store())], value=value, type_comment=None))
        anno.setanno(node, Static.AUGMENTED, True)
        return node

    def pop(self, s, container, key, item):
        """``[v =] d[k].pop([i[, default]])``: the item read (``rt.seq_without`` refuses what
        is no list or dict, as Python's missing ``.pop`` does), then the rest stored back."""
        call, out = s.value, []
        at = self.temp(s, call.args[0], out, "at") if call.args else gast.Constant(value=-1, kind=None)
        if len(call.args) == 2:   # a dict's d[k].pop(key, default)
            result = gast.Call(func=gast.Attribute(value=item(), attr="get", ctx=gast.Load()),
                               args=[copy.deepcopy(at), self.temp(s, call.args[1], out, "default")],
                               keywords=[])
        else:
            result = gast.Subscript(value=item(), slice=copy.deepcopy(at), ctx=gast.Load())
        popped = self.ctx.namer.new("popped")
        out.append(self.stmt(s, gast.Assign(targets=[name(popped, True)], value=result, type_comment=None)))
        out.append(self.store_back(s, container, key, gast.Call(
            func=self.bound(runtime.seq_without, "seq_without"), args=[item(), copy.deepcopy(at)],
            keywords=[])))
        if isinstance(s, gast.Assign):
            out.append(self.stmt(s, gast.Assign(targets=s.targets, value=name(popped), type_comment=None)))
        return out
