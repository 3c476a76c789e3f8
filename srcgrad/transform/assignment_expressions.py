"""The walrus operator ``(n := e)``, written as the assignment ``n = e`` that it is, ahead of
the statement that holds it, so that every later pass sees only plain assignments.

Runs twice (pipeline.front_end): first on the function's own statements, leaving the
walruses inside comprehensions (they bind in the function's scope, but are evaluated once
per item), then after comprehensions.py has written those as loops, whose statements now
hold them. Python's evaluation order is kept:

* ``if (n := len(x)) > 2:`` becomes ``n = len(x)`` then ``if n > 2:``;
* a part of the statement that Python evaluates before the walrus (and that is not a
  constant, a lambda or a name no walrus of the statement rebinds) is computed first into
  a name of its own: ``y = f(x) + (n := g(x))`` becomes ``t = f(x)``, ``n = g(x)``,
  ``y = t + n``;
* a walrus evaluated only sometimes (a branch of ``a if c else b``, right of
  ``and``/``or``) becomes the ``if`` statement that evaluates it only then:
  ``v = a or (n := b)`` becomes ``t = a``, ``if not t: n = b; t = n``, ``v = t``;
* ``while (n := step(n)) > tol: body`` becomes ``while True:`` with ``n = step(n)``,
  then ``if not n > tol: break`` (the ``else`` clause, when there is one, run before that
  ``break``), then the body: a ``continue`` evaluates the condition again, as in Python.

A walrus whose order cannot be kept that way (in an assignment's target, right of the
first comparison of a chain ``a < b < (n := c)``, in a call's function, in an assertion's
message, in a ``with`` item, or where the statement reads its target in a part Python
evaluates first that cannot be computed ahead) is refused at its line.
"""

import gast

from srcgrad import anno, ast_util
from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.transform.base import Base

Static = anno.Static

_OPAQUE = (gast.Lambda, gast.ListComp, gast.DictComp, gast.SetComp, gast.GeneratorExp)
_TRANSPARENT = (gast.Starred, gast.keyword, gast.Slice)   # not values: their parts are
_HINT = "Assign the value in a statement of its own before this one."


def _walruses(node):
    """The walruses ``node`` evaluates itself (not inside a lambda or a comprehension)."""
    found, todo = [], [node]
    while todo:
        n = todo.pop()
        if isinstance(n, gast.NamedExpr):
            found.append(n)
        if not isinstance(n, _OPAQUE):
            todo.extend(gast.iter_child_nodes(n))
    return found


def _is_lookup(node):
    """A name or a chain of attributes of one (``np.linalg.norm``): looking it up has no effect."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name)


class Lowering(Base):
    """Writes the walruses of one function body as assignments (see the module docstring)."""

    def __init__(self, info, namer):
        super().__init__(info)
        self.namer = namer
        self.targets = frozenset()   # the names the walruses of the statement visited bind

    # ----- statements -----

    def generic_visit(self, stmt):
        self.visit_children(stmt)
        if _walruses_in_statement(stmt):
            raise self.error(_walruses_in_statement(stmt)[0], UnsupportedError,
                             f"the walrus operator := in a {type(stmt).__name__.lower()} "
                             f"statement is not supported", _HINT)
        return stmt

    def start(self, stmt, *parts):
        self.targets = frozenset(w.target.id for p in parts if p is not None for w in _walruses(p))

    def visit_Expr(self, s):
        if not _walruses(s.value):
            return s
        self.start(s, s.value)
        out = []
        value = self.lower(s.value, out)
        if not isinstance(value, gast.Name):   # a bare `(n := e)` is its assignment alone
            s.value = value
            out.append(s)
        return self.located(out, s)

    def visit_Assign(self, s):
        for target in s.targets:
            if _walruses(target):
                raise self.error(_walruses(target)[0], UnsupportedError,
                                 "the walrus operator := in an assignment's target is not "
                                 "supported", _HINT)
        return self.value_of(s, "value")

    def visit_AugAssign(self, s):
        if _walruses(s.value):
            read = {n.id for n in ast_util.walk(s.target) if isinstance(n, gast.Name)}
            self.start(s, s.value)
            simple = all(isinstance(n, (gast.Name, gast.Constant, gast.Subscript, gast.Slice,
                                        gast.Tuple, gast.expr_context))
                         for n in ast_util.walk(s.target))
            if read & self.targets or not simple:
                raise self.error(_walruses(s.value)[0], UnsupportedError,
                                 "the walrus operator := in the value of an augmented assignment "
                                 "whose target reads its name, or computes its index, is not "
                                 "supported (Python reads the target first)", _HINT)
        return self.value_of(s, "value")

    def visit_Return(self, s):
        return self.value_of(s, "value")

    def visit_For(self, s):
        self.visit_children(s)
        return self.value_of(s, "iter")

    def visit_If(self, s):
        self.visit_children(s)
        return self.value_of(s, "test")

    def visit_Assert(self, s):
        if s.msg is not None and _walruses(s.msg):
            raise self.error(_walruses(s.msg)[0], UnsupportedError,
                             "the walrus operator := in an assertion's message is not supported",
                             _HINT)
        return self.value_of(s, "test")

    def visit_While(self, s):
        self.visit_children(s)
        if not _walruses(s.test):
            return s
        for n in _loop_exits(s.orelse):
            raise self.error(n, UnsupportedError,
                             f"a `{type(n).__name__.lower()}` in the else clause of a while loop "
                             f"whose condition holds the walrus operator := is not supported",
                             "Assign the value before the loop and again at the end of its body.")
        self.start(s, s.test)
        check = []
        test = self.lower(s.test, check)
        stop = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=test),
                       body=list(s.orelse) + [gast.Break()], orelse=[])
        loop = gast.While(test=gast.Constant(value=True, kind=None),
                          body=check + [stop] + list(s.body), orelse=[])
        return self.located([loop], s)

    def value_of(self, s, field):
        """``s`` with the walruses of its expression ``field`` written as statements before it."""
        value = getattr(s, field)
        if value is None or not _walruses(value):
            return s
        self.start(s, value)
        out = []
        setattr(s, field, self.lower(value, out))
        return self.located(out, s) + [s]

    def located(self, stmts, s):
        """``stmts``, each new statement in them annotated with the origin of ``s``."""
        origin = self.origin_of(s)
        for stmt in stmts:
            for n in ast_util.walk(stmt):
                if isinstance(n, gast.stmt) and origin is not None \
                        and anno.getanno(n, Static.ORIGIN) is None:
                    anno.setanno(n, Static.ORIGIN, origin)
        return stmts

    # ----- expressions -----

    def assign(self, target, value):
        return gast.Assign(targets=[name(target, True)], value=value, type_comment=None)

    def lower(self, node, out):
        """``node`` with its walruses replaced by their names, the statements that compute
        them (and the parts evaluated before them) appended to ``out`` in Python's order."""
        if not _walruses(node):
            return node
        if isinstance(node, gast.NamedExpr):
            value = self.lower(node.value, out)
            out.append(self.assign(node.target.id, value))
            return name(node.target.id)
        if isinstance(node, gast.IfExp) and (_walruses(node.body) or _walruses(node.orelse)):
            result = self.namer.new("picked")
            test = self.lower(node.test, out)
            branches = []
            for branch in (node.body, node.orelse):
                block = []
                block.append(self.assign(result, self.lower(branch, block)))
                branches.append(block)
            out.append(gast.If(test=test, body=branches[0], orelse=branches[1]))
            return name(result)
        if isinstance(node, gast.BoolOp) and any(_walruses(v) for v in node.values[1:]):
            result = self.namer.new("picked")
            out.append(self.assign(result, self.lower(node.values[0], out)))
            block = out
            for value in node.values[1:]:
                test = name(result) if isinstance(node.op, gast.And) \
                    else gast.UnaryOp(op=gast.Not(), operand=name(result))
                inner = []
                block.append(gast.If(test=test, body=inner, orelse=[]))
                inner.append(self.assign(result, self.lower(value, inner)))
                block = inner
            return name(result)
        slots = self.slots(node)
        last = max(i for i, (parent, field, k) in enumerate(slots)
                   if _walruses(_get(parent, field, k)))
        for i, (parent, field, k) in enumerate(slots[:last + 1]):
            child = self.lower(_get(parent, field, k), out)
            if i < last and not self.stable(child):
                if isinstance(child, (gast.GeneratorExp, gast.SetComp)):
                    raise self.error(node, UnsupportedError,
                                     "a generator expression before the walrus operator := in the "
                                     "same call is not supported", _HINT)
                tmp = self.namer.new("before")
                out.append(self.assign(tmp, child))
                child = name(tmp)
            _set(parent, field, k, child)
        return node

    def stable(self, node):
        """Whether evaluating ``node`` later than Python does gives the same value."""
        return isinstance(node, (gast.Constant, gast.Lambda)) or (
            isinstance(node, gast.Name) and node.id not in self.targets)

    def slots(self, node):
        """``[(parent, field, index)]``: where the parts of ``node`` that Python evaluates
        unconditionally are, in its order (the parts of a ``*x``, ``k=v`` or slice in place
        of it). Refuses a walrus that a part evaluated only sometimes or out of order holds."""
        out = []

        def add(parent, field, k=None):
            child = _get(parent, field, k)
            if child is None:
                return
            if isinstance(child, _TRANSPARENT):
                for f in child._fields:
                    if isinstance(getattr(child, f), gast.expr):
                        add(child, f)
                return
            out.append((parent, field, k))

        def refuse(where, part):
            if _walruses(part):
                raise self.error(_walruses(part)[0], UnsupportedError,
                                 f"the walrus operator := {where} is not supported", _HINT)

        if isinstance(node, gast.Call):
            func = node.func
            refuse("in the function a call calls", func)
            if not _is_lookup(func) and isinstance(func, gast.Attribute):
                add(func, "value")
            elif {n.id for n in ast_util.walk(func) if isinstance(n, gast.Name)} & self.targets:
                raise self.error(node, UnsupportedError,
                                 "a call of a name that the walrus operator := in its arguments "
                                 "rebinds is not supported", _HINT)
            for k in range(len(node.args)):
                add(node, "args", k)
            for kw in node.keywords:
                add(kw, "value")
            return out
        if isinstance(node, gast.Compare):
            for part in node.comparators[1:]:
                refuse("right of the first comparison of a chain (`a < b < c`)", part)
            add(node, "left")
            add(node, "comparators", 0)
            return out
        if isinstance(node, gast.Dict):
            for k in range(len(node.keys)):
                add(node, "keys", k)
                add(node, "values", k)
            return out
        if isinstance(node, (gast.IfExp, gast.BoolOp)):   # the walrus is in the first part
            add(node, "test") if isinstance(node, gast.IfExp) else add(node, "values", 0)
            return out
        for field in node._fields:
            value = getattr(node, field)
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if isinstance(item, (gast.expr, gast.keyword)):
                        add(node, field, k)
            elif isinstance(value, gast.expr) and not isinstance(value, gast.expr_context):
                add(node, field)
        return out


def _get(parent, field, k):
    value = getattr(parent, field)
    return value[k] if k is not None else value


def _set(parent, field, k, child):
    if k is None:
        setattr(parent, field, child)
    else:
        getattr(parent, field)[k] = child


def _walruses_in_statement(stmt):
    """The walruses of ``stmt``'s own expressions (not of the statements nested in it)."""
    found = []
    for field, value in gast.iter_fields(stmt):
        if field in ("body", "orelse", "finalbody", "handlers"):
            continue
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, gast.AST):
                found.extend(_walruses(part))
    return found


def _check_read_before_comprehension(stmt, lowering):
    """Refuse a statement that reads, before one of its comprehensions, a name a walrus in
    that comprehension binds (``y = n + sum(q for v in x if (n := v) > 0)``):
    comprehensions.py computes the comprehension before the statement, which would then
    read the new value."""
    for field, value in gast.iter_fields(stmt):
        if field in ("body", "orelse", "finalbody", "handlers"):
            continue
        for part in value if isinstance(value, list) else [value]:
            if not isinstance(part, gast.AST):
                continue
            comps = [c for c in ast_util.walk(part) if isinstance(c, _OPAQUE[1:])]
            for comp in comps:
                bound = {n.target.id for n in ast_util.walk(comp) if isinstance(n, gast.NamedExpr)}
                inside = {id(n) for n in ast_util.walk(comp)}
                for n in ast_util.walk(part):
                    if isinstance(n, gast.Name) and n.id in bound and id(n) not in inside \
                            and isinstance(n.ctx, gast.Load) \
                            and _position(n) < _position(comp):
                        raise lowering.error(n, UnsupportedError,
                                             f"reading {n.id!r} before a comprehension in the same "
                                             f"statement whose walrus operator := rebinds it is "
                                             f"not supported", _HINT)


def _position(node):
    return getattr(node, "lineno", None) or 0, getattr(node, "col_offset", None) or 0


def _loop_exits(block):
    """The ``break``/``continue`` statements of ``block`` that leave the loop around it."""
    found, todo = [], list(block)
    while todo:
        n = todo.pop()
        if isinstance(n, (gast.Break, gast.Continue)):
            found.append(n)
        elif not isinstance(n, (gast.For, gast.While, gast.FunctionDef, gast.Lambda)):
            todo.extend(c for c in gast.iter_child_nodes(n) if isinstance(c, gast.stmt))
    return found


def transform(node, ctx, final=False, census=None):
    """Write the walruses of FunctionDef ``node`` as assignments, in place. ``final``: the
    second run, after comprehensions.py; a walrus still left (in a lambda kept as a value)
    is refused at its line. ``census``: an ``ast_walks.Census`` of ``node``, told of a change."""
    if not (census.of(gast.NamedExpr) if census is not None
            else ast_util.nodes_of(node, gast.NamedExpr)):   # (most functions: one quick walk)
        return node
    if census is not None:
        census.changed()
    lowering = Lowering(ctx.info, ctx.namer)
    if not final:
        for stmt in ast_util.walk(node):
            if isinstance(stmt, gast.stmt):
                _check_read_before_comprehension(stmt, lowering)
    node.body = lowering.visit_block(node.body)
    if final:
        for n in ast_util.walk(node):
            if isinstance(n, gast.NamedExpr):
                raise lowering.error(n, UnsupportedError,
                                     "the walrus operator := here (inside a lambda or a "
                                     "comprehension kept as a value) is not supported", _HINT)
    return node
