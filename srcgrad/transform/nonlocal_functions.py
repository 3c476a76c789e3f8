"""``nonlocal`` in a nested def of the differentiated function, written as the value it
returns and its caller rebinds (pipeline.front_end, before the fence).

A nested def at the top level of ``f``'s body that declares ``nonlocal total`` for a
local of ``f`` rebinds ``f``'s ``total`` when it runs. It becomes a def that takes
``total`` as a keyword-only parameter and returns the new value beside its result, and
each call, a statement of its own, rebinds it::

    def step(v):                         def step(v, *, total):
        nonlocal total                       total = total + np.sin(v)
        total = total + np.sin(v)            return (None, total)
    for i in range(3):                   for i in range(3):
        step(x[i])                           _, total = step(x[i], total=total)

which is what Python computes: the call reads ``total`` where it is called and leaves
the new one in ``f``. A local of ``f`` the def changes in place (``items.append(v)``,
``d[k].append(v)``, ``buf[i] = v``) is passed and returned the same way, and its rebinding
in ``f`` is marked an in-place write of it (Static.AUGMENTED), so that analysis/aliasing.py
refuses it where another name read afterwards may hold the same list or array. The def is then a local function as any other (local_functions.py:
inlined at its calls). Refused at its line: the def called anywhere but as a statement
``step(...)`` or ``y = step(...)`` (inside an expression, passed as a value, called from
another nested function), a ``nonlocal`` deeper than one level or of a name ``f`` does
not bind.
"""

import gast

from srcgrad import anno
from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.transform.base import Base

Static = anno.Static
_SCOPES = (gast.FunctionDef, gast.Lambda)


def may_hold(info):
    """Whether the source may hold a nested def (most functions do not: no walk)."""
    return any(line.lstrip().startswith(("nonlocal ", "def ")) for line in info.source_lines[1:])


def _own_nodes(node):
    """The nodes of ``node`` outside any def or lambda nested in it."""
    todo = list(gast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, _SCOPES):
            todo.extend(gast.iter_child_nodes(n))


_CHANGING = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                       "setdefault", "sort", "reverse", "popitem", "fill"})


def _root(node):
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _changed_in_place(fn):
    """The names whose value ``fn``'s own statements change in place: ``xs.append(v)``,
    ``d[k].append(v)``, ``b[i] = v``, ``b[i] += v``, ``np.f(..., out=b)``."""
    out = set()
    for n in _own_nodes(fn):
        if isinstance(n, gast.Call):
            if isinstance(n.func, gast.Attribute) and n.func.attr in _CHANGING:
                out.add(_root(n.func.value))
            out.update(_root(k.value) for k in n.keywords if k.arg == "out")
        elif isinstance(n, (gast.Assign, gast.AugAssign)):
            for t in n.targets if isinstance(n, gast.Assign) else [n.target]:
                if isinstance(t, gast.Subscript):
                    out.add(_root(t))
    return out - {None}


def _binds(fn):
    """The parameters of ``fn`` and the names its own statements bind."""
    names = {a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    names.update(a.id for a in (fn.args.vararg, fn.args.kwarg) if a is not None)
    return names | {n.id for n in _own_nodes(fn) if isinstance(n, gast.Name)
                    and isinstance(n.ctx, (gast.Store, gast.Del))}


def transform(node, ctx):
    """``node`` with each nonlocal nested def written as above, or refused."""
    base = Base(ctx.info)
    binds = _binds(node)
    defs, changed = {}, set()
    for stmt in node.body:
        if isinstance(stmt, gast.FunctionDef):
            names = [n for s in _own_nodes(stmt) if isinstance(s, gast.Nonlocal) for n in s.names]
            mine = (_changed_in_place(stmt) & binds) - (_binds(stmt) - set(names))
            changed |= mine
            names += sorted(mine - set(names))
            if names:
                missing = [n for n in names if n not in binds]
                if missing:
                    raise base.error(stmt, UnsupportedError,
                                     f"nonlocal {missing[0]} in {stmt.name}() names a variable the "
                                     f"function differentiated does not bind",
                                     "Pass the value in as an argument and return the new value.")
                defs[stmt.name] = list(dict.fromkeys(names))
                _lower_def(stmt, defs[stmt.name])
    if defs:
        _Calls(ctx.info, defs, ctx.namer, changed).rewrite(node)
    return node


def _lower_def(fn, names):
    """Drop the declarations, take ``names`` as keyword-only parameters, return them."""
    def returned(value, like):
        elts = [value or gast.Constant(value=None, kind=None)] + [name(n) for n in names]
        out = gast.Return(value=gast.Tuple(elts=elts, ctx=gast.Load()))
        return gast.copy_location(out, like)

    def block(body):
        out = []
        for s in body:
            if isinstance(s, gast.Nonlocal):
                continue
            if isinstance(s, gast.Return):
                s = _located(returned(s.value, s), s)
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and not isinstance(s, _SCOPES):
                    setattr(s, field, block(inner) or [gast.copy_location(gast.Pass(), s)])
            out.append(s)
        return out

    fn.body = block(fn.body)
    if not fn.body or not isinstance(fn.body[-1], gast.Return):
        fn.body.append(_located(returned(None, fn.body[-1] if fn.body else fn), fn))
    for n in names:
        fn.args.kwonlyargs.append(gast.Name(id=n, ctx=gast.Param(), annotation=None, type_comment=None))
        fn.args.kw_defaults.append(None)


def _located(node, like):
    for child in gast.walk(node):
        if isinstance(child, (gast.expr, gast.stmt)) and not hasattr(child, "lineno"):
            gast.copy_location(child, like)
    return node


class _Calls(Base):
    """Each call of a lowered def, a statement of its own, rebinds what it returns."""

    def __init__(self, info, defs, namer, changed):
        super().__init__(info)
        self.defs = defs
        self.changed = changed
        self.namer = namer
        self.taken = set()   # the callee names of the calls rewritten

    def rewrite(self, node):
        node.body = self.visit_block(node.body)
        for n in _own_nodes(node):   # what is left: a use the rewrite did not take
            if isinstance(n, gast.Name) and n.id in self.defs and id(n) not in self.taken:
                raise self.refuse(n, n.id)
        for fn in (n for n in gast.walk(node) if isinstance(n, _SCOPES) and n is not node):
            for n in gast.walk(fn):
                if isinstance(n, gast.Name) and n.id in self.defs and isinstance(n.ctx, gast.Load):
                    raise self.refuse(n, n.id)

    def refuse(self, node, fn):
        names = ", ".join(self.defs[fn])
        return self.error(node, UnsupportedError,
                          f"{fn}() rebinds (nonlocal) or changes in place a variable of the "
                          f"function differentiated ({names}), and is used here other than as a "
                          f"call that is a statement of its own",
                          f"Call it as `{fn}(...)` or `y = {fn}(...)` on a line of its own, or pass "
                          f"the value in as an argument and return the new value.")

    def call_of(self, value):
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
                and value.func.id in self.defs:
            return value
        return None

    def visit_FunctionDef(self, s):
        return s

    def visit_Expr(self, s):
        call = self.call_of(s.value)
        return self.lowered(s, call, None) if call is not None else s

    def visit_Assign(self, s):
        call = self.call_of(s.value)
        if call is None or len(s.targets) != 1:
            return s
        return self.lowered(s, call, s.targets[0])

    def lowered(self, s, call, target):
        names = self.defs[call.func.id]
        if any(isinstance(a, gast.Starred) for a in call.args) \
                or any(k.arg is None or k.arg in names for k in call.keywords):
            raise self.refuse(call, call.func.id)
        inner = [n for part in call.args + [k.value for k in call.keywords] for n in gast.walk(part)]
        if any(isinstance(n, gast.Name) and n.id in self.defs for n in inner):
            raise self.refuse(call, call.func.id)
        self.taken.add(id(call.func))
        call.keywords = call.keywords + [gast.keyword(arg=n, value=name(n)) for n in names]
        result = self.namer.new(f"{call.func.id}_result")
        new = {n: self.namer.new(f"{n}_new") for n in names}
        out = [gast.Assign(targets=[gast.Tuple(elts=[name(result, True)] + [name(new[n], True) for n in names],
                                               ctx=gast.Store())], value=call, type_comment=None)]
        for n in names:   # a list changed in place: an in-place write of it (aliasing.py)
            out.append(gast.Assign(targets=[name(n, True)], value=name(new[n]), type_comment=None))
            if n in self.changed:
                anno.setanno(out[-1], Static.AUGMENTED, True)
        if target is not None:
            out.append(gast.Assign(targets=[target], value=name(result), type_comment=None))
        for stmt in out:
            anno.copyanno(s, stmt, Static.ORIGIN)
            _located(stmt, s)
        return out
