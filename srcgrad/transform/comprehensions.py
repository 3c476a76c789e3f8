"""Comprehensions and generator expressions become the loops srcgrad differentiates.

Runs before canonicalize.py, which then indexes the loops this pass writes:

* ``ys = [f(v) for v in xs if c(v)]`` becomes ``ys = []`` and
  ``for v in xs: if c(v): ys.append(f(v))``; several ``for`` clauses nest.
* ``{k: f(v) for k, v in d.items()}`` becomes ``out = {}`` and keyed writes
  ``out[k] = f(v)`` in the loop.
* ``dict(a=x)`` is the display ``{"a": x}``; ``dict(zip(ks, vs))``, ``dict(d.items())``
  and ``dict(d)`` are the dict comprehensions that build the same dict.
* A generator expression or ``map(f, xs)`` passed to a call (``sum(...)``,
  ``np.stack(...)``, ``tuple(...)``) or looped over is the list comprehension
  first: every element is computed (``any``/``all`` do not stop early).

A comprehension's variables are local to it: where its names are used anywhere
else in the function they are renamed apart (``Namer.rename``, so errors show
the user's name). The loop runs before the statement that held the
comprehension, which reads its result; that is exact only where the
comprehension is always evaluated, and before anything in the statement that
could change what it reads, so a comprehension in a branch of ``a if c else b``,
right of ``and``/``or``, in a ``while`` condition, or after a call in the same
statement that may change a value it reads (``lst.pop() + sum(v for v in lst)``;
a user function may write into its arguments) is refused.
Every statement written inherits the origin of the user's statement.
"""

import builtins
import inspect

import gast

from srcgrad import anno
from srcgrad.ast_util import name, refs
from srcgrad.errors import UnsupportedError
from srcgrad.parse import parse_function
from srcgrad.transform import inline, structure_parts
from srcgrad.transform.base import Base, local_names
from srcgrad import ast_util

Static = anno.Static

_COMPREHENSIONS = (gast.ListComp, gast.DictComp, gast.GeneratorExp, gast.SetComp)
# Methods that change the object they are called on.
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
             "popitem", "sort", "reverse", "fill", "put", "resize", "itemset"}
# NumPy functions that write into an argument.
_NUMPY_WRITERS = {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"}
_ALWAYS_MOVE = "Assign the comprehension to a name in a statement of its own before this one."



def _may_write(fn, depth=0, trees=None):
    """Whether the user function ``fn`` may write into a value it is given: its source
    (or a user function it calls) writes into a subscript or attribute, calls a
    mutating method or a NumPy function with ``out=``, or calls what the compiler
    cannot resolve. Anything it cannot read may write. ``trees``: parameter -> the tree
    of the structure it is given (a call of a part, ``for layer in self.layers:
    layer(x)``, runs the ``__call__`` of a class that tree names)."""
    if not inspect.isfunction(fn) or depth > 4:
        return True
    try:
        node, info = parse_function(fn)
    except Exception:   # no source: assume the worst
        return True
    locals_ = local_names(node)
    trees = {k: t for k, t in (trees or {}).items() if k not in _rebound(node)}
    for n in ast_util.walk(node):
        if isinstance(n, (gast.Subscript, gast.Attribute)) and isinstance(n.ctx, gast.Store):
            return True
        if isinstance(n, gast.AugAssign) and not isinstance(n.target, gast.Name):
            return True
        if not isinstance(n, gast.Call):
            continue
        if isinstance(n.func, gast.Attribute) and n.func.attr in _MUTATORS \
                or any(kw.arg == "out" for kw in n.keywords):
            return True
        if isinstance(n.func, gast.Attribute) and n.func.attr in _NUMPY_WRITERS:
            return True
        if isinstance(n.func, gast.Name):
            if n.func.id in locals_:   # a parameter or local holding a function
                if _parts_may_write(node, info, n.func.id, trees, depth):
                    return True
                continue
            try:
                callee = info.resolve(n.func.id)
            except NameError:
                return True
            if inline.is_inlinable(callee) and _may_write(callee, depth + 1):
                return True
    return False


def _resolves(info, spelled, obj):
    try:
        return info.resolve(spelled) is obj
    except NameError:
        return False


def _rebound(node):
    return {n.id for n in ast_util.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _parts_may_write(node, info, variable, trees, depth):
    """Whether a call of the local ``variable`` of FunctionDef ``node`` may write: not
    where ``variable`` is bound only by loops or comprehensions over a list or tuple of
    parts of a structure of known tree (``trees``; ``for layer in self.layers``, through
    the class's ``__iter__``, ``enumerate``) whose classes' ``__call__`` do not write."""
    loops = [n for n in ast_util.walk(node) if isinstance(n, (gast.For, gast.comprehension))]
    targets = {}
    for loop in loops:
        target, iterable = loop.target, loop.iter
        if isinstance(target, gast.Tuple) and len(target.elts) == 2 and isinstance(iterable, gast.Call) \
                and isinstance(iterable.func, gast.Name) and iterable.func.id == "enumerate" \
                and len(iterable.args) == 1 and _resolves(info, "enumerate", builtins.enumerate):
            target, iterable = target.elts[1], iterable.args[0]
        if isinstance(target, gast.Name) and target.id == variable:
            targets[id(target)] = iterable
    if not trees or not targets or any(
            isinstance(n, gast.Name) and n.id == variable and not isinstance(n.ctx, gast.Load)
            and id(n) not in targets for n in ast_util.walk(node)):
        return True   # a parameter, or bound otherwise too: any function
    for iterable in targets.values():
        tree = structure_parts.part_tree(iterable, trees)
        field = structure_parts.iterated_field(structure_parts.class_of(tree))
        if field is not None:   # for layer in self: __iter__ returns iter(self.layers)
            tree = structure_parts.part_tree(gast.Attribute(value=iterable, attr=field, ctx=gast.Load()), trees)
        cls = structure_parts.class_of(tree)
        if cls is None or not issubclass(cls, (list, tuple)):
            return True
        for item in tree[1:]:
            item_class = structure_parts.class_of(item)
            if item_class is None or not structure_parts.calls_itself(item_class):
                return True
            call = inspect.getattr_static(item_class, "__call__")
            if not call.__code__.co_argcount or _may_write(
                    call, depth + 1, {call.__code__.co_varnames[0]: item}):
                return True
    return False


class Lowering(Base):
    def __init__(self, info, namer, locals_):
        super().__init__(info)
        self.namer = namer
        self.locals = locals_   # names the function binds: they denote no global

    def _error(self, node, message, hint):
        if getattr(node, "lineno", None) is None and anno.getanno(node, Static.ORIGIN) is None:
            node = self._stmt
        origin = anno.getanno(node, Static.ORIGIN) or self.info.origin(node)
        return origin.error(UnsupportedError, message, hint)

    def _resolve(self, func):
        """The object a call's function denotes, or None where the compiler cannot tell."""
        if isinstance(func, gast.Name):
            if func.id in self.locals:
                return None
            try:
                return self.info.resolve(func.id)
            except NameError:
                return None
        if isinstance(func, gast.Attribute):
            base = self._resolve(func.value)
            return getattr(base, func.attr, None) if base is not None else None
        return None

    # ----- scoping: a comprehension's variables are its own -----

    def scope(self, node):
        """Rename each comprehension's variables apart where their names are used elsewhere."""
        outer, binders = set(), {}
        params = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        outer.update(a.id for a in params)

        def collect(expr, env):
            if isinstance(expr, gast.Name):
                if expr.id not in env:
                    outer.add(expr.id)
            for binder in self._walk_scopes(expr, env, collect):
                binders[binder] = binders.get(binder, 0) + 1

        for stmt in node.body:
            collect(stmt, frozenset())
        self._keep = {n for n, count in binders.items() if count == 1 and n not in outer}

        def rename(expr, env):
            if isinstance(expr, gast.Name) and expr.id in env:
                expr.id = env[expr.id]
            self._walk_scopes(expr, env, rename)

        for stmt in node.body:
            rename(stmt, {})

    def _walk_scopes(self, node, env, visit):
        """Call ``visit(child, env)`` on ``node``'s children, with each comprehension's
        names bound inside it (``env`` maps a bound name to its new name when
        renaming, else is the set of bound names); returns the names ``node`` binds."""
        if not isinstance(node, _COMPREHENSIONS):
            for child in gast.iter_child_nodes(node):
                visit(child, env)
            return []
        renaming = isinstance(env, dict)
        inner = dict(env) if renaming else set(env)
        bound = []
        for k, gen in enumerate(node.generators):
            visit(gen.iter, inner if k else env)   # the first iterable is evaluated outside
            if not all(isinstance(t, gast.Name) for t in ast_util.walk(gen.target)
                       if not isinstance(t, (gast.Tuple, gast.List, gast.expr_context))):
                raise self._error(node, "a comprehension's target must be names",
                                  "Write `for v in ...` or `for a, b in ...`.")
            for t in ast_util.walk(gen.target):
                if isinstance(t, gast.Name):
                    if renaming:
                        inner[t.id] = self._fresh(t.id)
                        t.id = inner[t.id]
                    else:
                        inner.add(t.id)
                        bound.append(t.id)
            for cond in gen.ifs:
                visit(cond, inner)
        for field in ("elt", "key", "value"):
            if hasattr(node, field):
                visit(getattr(node, field), inner)
        return bound

    def _fresh(self, name):
        return name if name in self._keep else self.namer.rename(name)

    # ----- lowering -----

    def generic_visit(self, stmt):
        self.visit_children(stmt)
        return self.statement(stmt)

    def statement(self, stmt):
        """The loops that build the comprehensions in ``stmt``, then ``stmt`` reading them."""
        self._stmt, self._mutated, self._hoisted, self._helpers = stmt, set(), [], []
        if isinstance(stmt, gast.While):
            if any(isinstance(n, _COMPREHENSIONS) for n in ast_util.walk(stmt.test)):
                raise self._error(stmt, "a comprehension in a while condition is not supported",
                                  "Compute it into a name before the loop and again at the end "
                                  "of the body.")
            return [stmt]
        if isinstance(stmt, gast.For):
            stmt.iter = self._as_list(stmt.iter)
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], gast.Name) and \
                isinstance(stmt.value, (gast.ListComp, gast.DictComp)) and \
                stmt.targets[0].id not in refs(stmt.value):
            self.hoist(stmt.value, stmt.targets[0].id)   # `ys = [...]`: build ys itself
            return self._hoisted
        if isinstance(stmt, gast.Assign):
            stmt.value = self.expr(stmt.value)
            stmt.targets = [self.expr(t) for t in stmt.targets]
        else:
            self._map_fields(stmt, skip=("body", "orelse", "target", "targets"))
            if isinstance(stmt, gast.AugAssign):
                stmt.target = self.expr(stmt.target)
        return self._hoisted + [stmt]

    def expr(self, node, base=None):
        """``node`` with each comprehension replaced by the name its loop builds, in the
        order Python evaluates them (a list built for ``sum`` is named ``terms``)."""
        if isinstance(node, (gast.ListComp, gast.DictComp)):
            return self.hoist(node, base=base)
        if isinstance(node, gast.SetComp):
            raise self._error(node, "a set comprehension is not supported: sets are not "
                              "values srcgrad models", "Build a list (a list comprehension), "
                              "or compute the set outside the differentiated function.")
        if isinstance(node, gast.GeneratorExp):
            raise self._error(node, "a generator expression is supported only as the "
                              "argument of a call (`sum(f(v) for v in xs)`) or the iterable of "
                              "a for loop", "Write a list comprehension `[... for ...]`.")
        if self._is_map(node):
            raise self._error(node, "map(...) is supported only as the argument of a call "
                              "(`sum(map(f, xs))`) or the iterable of a for loop",
                              "Write a list comprehension `[f(v) for v in xs]`.")
        if isinstance(node, gast.IfExp):
            self._refuse_inside(node.body, node.orelse, where="a branch of `a if c else b`")
            node.test = self.expr(node.test)
            return node
        if isinstance(node, gast.BoolOp):
            self._refuse_inside(*node.values[1:], where="the right of `and`/`or`")
            node.values[0] = self.expr(node.values[0])
            return node
        if self._is_dict_call(node):
            return self.expr(self._dict_call(node), base)
        if isinstance(node, gast.Call):
            node.func = self.expr(node.func)
            base = "terms" if self._resolve(node.func) is builtins.sum else None
            node.args = [self.expr(self._as_list(a), base) for a in node.args]
            for kw in node.keywords:
                kw.value = self.expr(self._as_list(kw.value))
            self._mutated |= self._may_mutate(node)
            return node
        if isinstance(node, gast.Lambda):
            return node   # its body is lowered where local_functions.py inlines it
        self._map_fields(node)
        return node

    def _map_fields(self, node, skip=()):
        """Replace each expression field of ``node`` (but those in ``skip``) by ``expr`` of it."""
        for field in node._fields:
            if field in skip:
                continue
            value = getattr(node, field)
            if isinstance(value, gast.AST):
                setattr(node, field, self.expr(value))
            elif isinstance(value, list):
                setattr(node, field, [self.expr(v) if isinstance(v, gast.AST) else v
                                      for v in value])

    def _dict_call(self, call):
        """``dict(a=x, b=y)`` as the display ``{"a": x, "b": y}``; ``dict(pairs)`` (``zip``,
        ``d.items()``, a list of pairs) and ``dict(d)`` (a copy of a dict) as the dict
        comprehension that builds the same dict."""
        if not call.args and all(kw.arg is not None for kw in call.keywords):
            return gast.Dict(keys=[gast.Constant(value=kw.arg, kind=None) for kw in call.keywords],
                             values=[kw.value for kw in call.keywords])
        if len(call.args) != 1 or call.keywords or isinstance(call.args[0], gast.Starred):
            raise self._error(call, "dict(...) is supported with keywords only (dict(a=x)) or "
                              "with one mapping or iterable of pairs (dict(zip(keys, values)))",
                              "Build the dict with a display {...} and keyed writes d[k] = v.")
        source = call.args[0]
        key, value = self.namer.new("key"), self.namer.new("value")
        pairs = isinstance(source, (gast.List, gast.Tuple, gast.ListComp, gast.GeneratorExp)) or (
            isinstance(source, gast.Call) and (
                self._resolve(source.func) in (builtins.zip, builtins.enumerate, builtins.list)
                or isinstance(source.func, gast.Attribute) and source.func.attr == "items"))
        if pairs:
            target = gast.Tuple(elts=[name(key, True), name(value, True)], ctx=gast.Store())
            comp = gast.DictComp(key=name(key), value=name(value), generators=[gast.comprehension(
                target=target, iter=self._as_list(source), ifs=[], is_async=0)])
        else:   # a mapping: its keys, then its items by key
            keys = gast.Call(func=name("list"), args=[source], keywords=[])
            comp = gast.DictComp(
                key=name(key), value=gast.Subscript(value=source, slice=name(key), ctx=gast.Load()),
                generators=[gast.comprehension(target=name(key, True), iter=keys, ifs=[], is_async=0)])
        gast.copy_location(comp, call)
        return comp

    def _as_list(self, arg):
        """A generator expression or map(...) passed to a call or looped over, as the
        list comprehension."""
        if isinstance(arg, gast.GeneratorExp):
            new = gast.ListComp(elt=arg.elt, generators=arg.generators)
            gast.copy_location(new, arg)
            return new
        if self._is_map(arg):
            return self._map(arg)
        return arg

    def _is_dict_call(self, node):
        return isinstance(node, gast.Call) and self._resolve(node.func) is builtins.dict

    def _is_map(self, node):
        return isinstance(node, gast.Call) and self._resolve(node.func) is builtins.map

    def _refuse_inside(self, *parts, where):
        if any(isinstance(n, _COMPREHENSIONS) or self._is_map(n) for p in parts
               for n in ast_util.walk(p)):
            raise self._error(self._stmt, f"a comprehension in {where} is not supported: it is "
                              f"evaluated only sometimes", _ALWAYS_MOVE.replace(
                                  "before this one", "under an if, before this one"))

    def _may_mutate(self, call):
        """The names whose values ``call`` may change: the receiver of a mutating
        method, the arguments of a function the compiler cannot resolve (and its own
        name) or of one that writes into them. A user function's arguments are noted
        in ``_helpers``; its source is read only when a comprehension follows."""
        arguments = call.args + [kw.value for kw in call.keywords]
        if isinstance(call.func, gast.Attribute) and call.func.attr in _MUTATORS:
            return refs(call.func.value)
        if any(kw.arg == "out" for kw in call.keywords):
            return refs(*arguments)
        fn = self._resolve(call.func)
        if fn is None:
            if isinstance(call.func, gast.Attribute):
                return set()   # a method of a value that does not mutate it (x.reshape)
            return refs(call.func, *arguments)
        if getattr(fn, "__name__", None) in _NUMPY_WRITERS:
            return refs(*arguments)
        if inline.is_inlinable(fn):
            trees = {}   # the parameters given a structure of known tree (structure_parts.py)
            params = fn.__code__.co_varnames[:fn.__code__.co_argcount] \
                if self.trees and inspect.isfunction(fn) else ()
            for p, a in zip(params, call.args):
                if isinstance(a, gast.Starred):
                    break
                if isinstance(a, gast.Name) and a.id in self.trees:
                    trees[p] = self.trees[a.id]
            self._helpers.append((fn, refs(*arguments), trees))   # read when a comprehension follows
        return set()

    def _map(self, call):
        """``map(f, xs, ys)`` as ``[f(a, b) for a, b in zip(xs, ys)]``."""
        if call.keywords or len(call.args) < 2:
            raise self._error(self._stmt, "map(...) needs a function and at least one iterable",
                              "Write `map(f, xs)`.")
        fn = call.args[0]
        if not isinstance(fn, (gast.Name, gast.Attribute)) or self._resolve(fn) is None:
            raise self._error(self._stmt, "map(...) of a lambda or of a function held in a local "
                              "variable is not supported",
                              "Define the function at module level, or write the list "
                              "comprehension `[f(v) for v in xs]`.")
        items = [self.namer.new("item") for _ in call.args[1:]]
        if len(items) == 1:
            target, iterable = name(items[0], True), call.args[1]
        else:
            target = gast.Tuple(elts=[name(i, True) for i in items], ctx=gast.Store())
            iterable = gast.Call(func=name("zip"), args=call.args[1:], keywords=[])
        elt = gast.Call(func=fn, args=[name(i) for i in items], keywords=[])
        return gast.ListComp(elt=elt, generators=[gast.comprehension(
            target=target, iter=iterable, ifs=[], is_async=0)])

    def hoist(self, comp, result=None, base=None):
        """Write the loop that builds ``comp`` into ``result`` (a fresh name if None)
        ahead of the statement; returns the name to read."""
        stmt = self._stmt
        read = refs(comp)
        if self._mutated & read or any(names & read and _may_write(fn, 0, trees)
                                       for fn, names, trees in self._helpers):
            raise self._error(stmt, "a comprehension after a call that may change what it reads, "
                              "in the same statement, is not supported", _ALWAYS_MOVE)
        is_dict = isinstance(comp, gast.DictComp)
        if result is None:
            result = self.namer.new(base or ("entries" if is_dict else "elems"))
        if is_dict:
            store = gast.Subscript(value=name(result), slice=comp.key, ctx=gast.Store())
            inner = [gast.Assign(targets=[store], value=comp.value, type_comment=None)]
            empty = gast.Dict(keys=[], values=[])
        else:
            append = gast.Attribute(value=name(result), attr="append", ctx=gast.Load())
            inner = [gast.Expr(value=gast.Call(func=append, args=[comp.elt], keywords=[]))]
            empty = gast.List(elts=[], ctx=gast.Load())
        for gen in reversed(comp.generators):
            for cond in reversed(gen.ifs):
                inner = [gast.If(test=cond, body=inner, orelse=[])]
            for t in ast_util.walk(gen.target):
                if isinstance(t, gast.Name):
                    t.ctx = gast.Store()
            inner = [gast.For(target=gen.target, iter=self._as_list(gen.iter), body=inner,
                              orelse=[], type_comment=None)]
        first = inner[0]
        first.iter = self.expr(first.iter)   # the first iterable: evaluated here, in order
        new = [gast.Assign(targets=[name(result, True)], value=empty, type_comment=None), first]
        for node in new:
            for child in ast_util.walk(node):
                if isinstance(child, gast.stmt):
                    anno.copyanno(stmt, child, Static.ORIGIN)
        saved = self._stmt, self._mutated, self._hoisted, self._helpers
        first.body = self.visit_block(first.body)   # comprehensions in the element, ifs, inner iterables
        self._stmt, self._mutated, self._hoisted, self._helpers = saved
        self._hoisted.extend(new)
        return name(result)


def transform(node, ctx, census=None):
    """Lower the comprehensions of FunctionDef ``node`` to loops, in place. ``census``: an
    ``ast_walks.Census`` of ``node``, told of a change."""
    lowering = Lowering(ctx.info, ctx.namer, local_names(
        node, census.of(gast.Name) if census is not None else None))
    lowering.trees = getattr(ctx, "trees", None) or {}
    if census is not None and not census.holds(_COMPREHENSIONS):
        # (the calls in the walk's order, as below: the same names resolved, in that order)
        wanted = any(lowering._is_map(n) or lowering._is_dict_call(n) for n in census.of(gast.Call))
    else:
        wanted = any(isinstance(n, _COMPREHENSIONS) or lowering._is_map(n) or lowering._is_dict_call(n)
                     for n in ast_util.walk(node))
    if not wanted:
        return node
    if census is not None:
        census.changed()
    lowering._stmt = node
    lowering.scope(node)
    node.body = lowering.visit_block(node.body)
    return node
