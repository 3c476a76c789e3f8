"""Attribute state in methods (round thirteen): ``self.h = v``, ``self.count += 1``,
``self.items.append(v)``, ``self.items.extend(vs)`` and ``self.h, self.c = v`` inside a
method (or helper) whose parameter holds an instance of a class known when compiling
(ctx.classes: a plain dataclass, or plain_classes.py's dataclass standing for a plain
class), and in a function on a name bound once to an instance it builds.

Runs before fence.py, which refuses the attribute stores left. Each becomes the rebinding
``self = rt.dataclass_replace(self, ("h",), [v])`` (the field's new value: ``self.count + 1``,
``self.items + [v]``), differentiated by that helper's rules, and marked an in-place change of
``self`` (Static.MUTATES, Static.FIELD): inline.py then inlines the method with ``self``
named by the caller's variable itself (``c``), so the caller sees the change as in Python,
and analysis/aliasing.py checks, as for any in-place write, that no other name read
afterwards holds the instance (``c2 = c``), nor, for ``+=`` and the list methods, which
change the attribute's own object, that object (``Rec(acts)`` then ``acts`` read). An
instance the function did not build (an argument, an item of a list) is refused there: the
caller's object would have to change. Anything else (an attribute that is no field, a frozen
dataclass, a property) is refused here at its line.
"""

import builtins
import dataclasses
import inspect
import re

import gast

from srcgrad import anno, runtime
from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.transform import as_array, methods
from srcgrad.transform.call_forms import Scan
from srcgrad.transform.base import Base

Static = anno.Static

_LIST_METHODS = ("append", "extend")


_STORE = re.compile(r"^\s*[A-Za-z_]\w*\.\w+(\s*[-+*/@%|&^]?=[^=]|\s*,|\.(append|extend)\()")


def may_hold(info):
    """Whether the source may store into an attribute of a name (most functions do not)."""
    return any(_STORE.match(line) for line in info.source_lines[1:])


def transform(node, ctx):
    """Rewrite the attribute stores described above in FunctionDef ``node``: of its
    parameters of known classes, and of its names bound once to an instance it builds
    (``cell = Cell(w, h0)``; methods.built_classes, which then counts the rebindings
    made here as none)."""
    classes = {p: c for p, c in ctx.classes.items() if dataclasses.is_dataclass(c)}
    classes.update(methods.built_classes(node, ctx, Scan(node)))
    if not classes:
        return node
    rewrite = Rewrite(ctx, classes)
    node.body = rewrite.block(node.body)
    return node


class Rewrite(Base):
    def __init__(self, ctx, classes):
        super().__init__(ctx.info)
        self.ctx = ctx
        self.classes = classes

    def block(self, body):
        out = []
        for s in body:
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list) and not isinstance(
                        s, (gast.FunctionDef, gast.ClassDef, gast.Lambda)):
                    setattr(s, field, self.block(getattr(s, field)))
            out.extend(self.unpacked(s) if self.unpacks(s) else [self.stmt(s)])
        return out

    def unpacks(self, s):
        """``self.h, self.c = v`` (an LSTM's state): a tuple target holding such an attribute."""
        return isinstance(s, gast.Assign) and len(s.targets) == 1 \
            and isinstance(s.targets[0], (gast.Tuple, gast.List)) \
            and all(isinstance(e, (gast.Name, gast.Attribute)) for e in s.targets[0].elts) \
            and any(self.owner(e) for e in s.targets[0].elts)

    def unpacked(self, s):
        """``t = v`` then each target bound to its item, left to right, as Python does."""
        tmp = self.ctx.namer.new("unpacked")
        first = gast.Assign(targets=[name(tmp, True)], value=s.value, type_comment=None)
        out = [first]
        for k, e in enumerate(s.targets[0].elts):
            item = gast.Subscript(value=name(tmp), slice=gast.Constant(value=k, kind=None), ctx=gast.Load())
            out.append(gast.Assign(targets=[e], value=item, type_comment=None))
        for o in out:
            anno.copyanno(s, o, Static.ORIGIN)
        return [first] + [self.stmt(o) for o in out[1:]]

    def owner(self, target):
        """``(parameter, attribute)`` of ``p.a`` with ``p`` a parameter of a known class."""
        if isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name) \
                and target.value.id in self.classes:
            return target.value.id, target.attr
        return None

    def stmt(self, s):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and self.owner(s.targets[0]):
            p, attr = self.owner(s.targets[0])
            return self.replace(s, p, attr, s.value, False)
        if isinstance(s, gast.AugAssign) and self.owner(s.target):
            p, attr = self.owner(s.target)
            value = gast.BinOp(left=self.read(p, attr), op=s.op, right=s.value)
            return self.replace(s, p, attr, value, True)
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) \
                and isinstance(s.value.func, gast.Attribute) and s.value.func.attr in _LIST_METHODS \
                and self.owner(s.value.func.value) and len(s.value.args) == 1 and not s.value.keywords:
            p, attr = self.owner(s.value.func.value)
            item = s.value.args[0]
            if isinstance(item, gast.Starred):
                return s
            added = gast.List(elts=[item], ctx=gast.Load()) if s.value.func.attr == "append" else \
                gast.Call(func=name(as_array.bind(self.ctx.namer, self.ctx.info, self.ctx.bindings,
                                                  "list", builtins.list)), args=[item], keywords=[])
            value = gast.BinOp(left=self.read(p, attr), op=gast.Add(), right=added)
            return self.replace(s, p, attr, value, True)
        return s

    def read(self, p, attr):
        return gast.Attribute(value=name(p), attr=attr, ctx=gast.Load())

    def replace(self, s, p, attr, value, in_place):
        """``p = rt.dataclass_replace(p, (attr,), [value])``, marked as described above."""
        cls = self.classes[p]
        self.check(s, cls, attr)
        func = as_array.bind(self.ctx.namer, self.ctx.info, self.ctx.bindings, "dataclass_replace",
                             runtime.dataclass_replace)
        call = gast.Call(func=name(func), args=[
            name(p), gast.Constant(value=(attr,), kind=None), gast.List(elts=[value], ctx=gast.Load())],
            keywords=[])
        out = gast.Assign(targets=[name(p, True)], value=call, type_comment=None)
        anno.copyanno(s, out, Static.ORIGIN)
        anno.setanno(out, Static.MUTATES, True)
        anno.setanno(out, Static.FIELD, (attr, in_place))
        return out

    def check(self, s, cls, attr):
        """Refuse, at the line of ``s``, a store dataclass_replace would not make as Python does."""
        why = None
        params = dataclasses.fields(cls)
        if getattr(cls, "__dataclass_params__", None) is not None and cls.__dataclass_params__.frozen:
            why = f"{cls.__qualname__} is a frozen dataclass (Python raises FrozenInstanceError)"
        elif attr not in {f.name for f in params if f.init}:
            why = f"{attr!r} is not a field {cls.__qualname__}'s constructor sets"
        elif "__setattr__" in {k for klass in cls.__mro__[:-1] for k in vars(klass)}:
            why = f"{cls.__qualname__} defines __setattr__"
        else:
            try:
                raw = inspect.getattr_static(cls, attr)
            except AttributeError:
                raw = None
            if hasattr(type(raw), "__set__"):
                why = f"{attr!r} is a property or descriptor of {cls.__qualname__}"
        if why is not None:
            raise self.error(s, UnsupportedError,
                             f"storing the attribute {attr!r} here is not supported in a function "
                             f"srcgrad differentiates: {why}",
                             "Store only the fields the class's constructor sets, or return the "
                             "new value and keep it in a local variable.")
