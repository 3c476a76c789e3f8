"""Loops over a constant container of callables, unrolled: ``for layer in self.layers``.

A loop whose body calls its variable (``x = layer(x)``) and iterates over a list, tuple
or dict that is a constant of the compile (an attribute of a bound ``self``, a global, a
closure value, a helper's static parameter; also through ``enumerate``, ``reversed``,
``.values()`` and ``.items()``) becomes one copy of its body per item, in which the loop
variable is the item itself (a name srcgrad binds to it, or a literal). Each call is then
of a known function, which the inliner handles as any other.

What the unrolling read is recorded as reads of the container (parse.Item, Length,
Keys), so guard.py compiles anew when an item is replaced, a layer appended, a dict's
keys reordered. A loop that calls its variable over anything else is left alone (its
calls are refused by anf_expressions.py, naming the line).
"""

import builtins
import copy

import gast

from srcgrad import anno, ast_util, ast_walks, runtime
from srcgrad.errors import UnsupportedError
from srcgrad.parse import Item, Keys, Length, dotted
from srcgrad.transform import as_array
from srcgrad.transform.base import Base, local_names

Static = anno.Static

_LITERALS = (bool, int, float, complex, str, bytes, type(None))
MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
             "update", "setdefault", "popitem", "__setitem__", "__delitem__"}


class _NotConstant(Exception):
    """The loop's iterable is not a container known when compiling."""


class _Pair:
    """The read path of an item of ``enumerate(C)`` or ``C.items()``: ``key`` (a literal,
    or an object srcgrad binds) with ``path``, the read path of the item paired with it."""

    def __init__(self, key, path):
        self.key, self.path = key, path


class Unroller(Base):
    """Unrolls the loops of one function (``transform``)."""


    def __init__(self, ctx, locals_):
        super().__init__(ctx.info)
        self.ctx, self.locals = ctx, locals_
        self.zipped = []   # (variable of f, count): zipped with a constant container (items)
        self.prelude = []  # statements first in a copy of the body: unpacking such an item
        self.unrolled = False   # whether a loop was unrolled (the tree changed)

    def visit_For(self, loop):
        names = _names(loop.target)
        indexed = self.indexed_container(loop)
        if not names or not (_calls_any(loop.body, names) or indexed is not None):
            self.visit_children(loop)
            return loop
        self.zipped = []
        try:
            items = self.items(loop.iter) if indexed is None else indexed
        except _NotConstant:
            self.visit_children(loop)
            return loop
        zipped = self.zipped
        if any(n.id == seq and not isinstance(n.ctx, gast.Load)
               for stmt in loop.body for n in ast_util.walk(stmt) if isinstance(n, gast.Name)
               for seq, _ in zipped):
            self.visit_children(loop)   # zip read it once, before the body rebinds it
            return loop
        self.check(loop, names)
        self.unrolled = True
        jumps = list(_jumps(loop.body))
        broke = self.ctx.namer.new("unrolled_break") if any(isinstance(j, gast.Break) for j in jumps) else None
        out = [self.inherit(_assign(broke, False), loop)] if broke else []
        for seq, n in zipped:   # a variable zipped with a constant container: at least n items
            error = self.error(loop, UnsupportedError, f"`{seq}` is not a list, tuple or array of "
                               f"at least the {n} items of the constant container it is zipped with "
                               f"(srcgrad writes one copy of the loop body per item of that "
                               f"container, reading `{seq}[k]`)",
                               f"Give `{seq}` at least {n} items, zip it with a slice of the "
                               f"container, or zip with list({seq}) for a dict's keys.")
            check = gast.Expr(value=gast.Call(
                func=ast_util.name(as_array.bind(self.ctx.namer, self.info, self.ctx.bindings,
                                                 "zip_covers", runtime.zip_covers)),
                args=[ast_util.name(seq), gast.Constant(value=n, kind=None), ast_util.name(
                    as_array.bind(self.ctx.namer, self.info, self.ctx.bindings, "zip_error", error))],
                keywords=[]))
            out.append(self.inherit(check, loop))
        for path, value in items:
            body = copy.deepcopy(loop.body)
            values = {}
            self.prelude = []
            self.bind(loop, loop.target, path, value, values)
            body = self.prelude + body
            for stmt in body:
                for n in ast_util.walk(stmt):
                    if isinstance(n, gast.Name) and n.id in values:
                        _substitute(n, values[n.id])
            body = self.visit_block(body)   # a nested loop over an item's container
            if jumps:
                body = self.jumping(loop, body, broke)
            out.extend(body)
        orelse = self.visit_block(loop.orelse)
        if broke and orelse:
            orelse = [self.inherit(gast.If(test=_not(broke), body=orelse, orelse=[]), loop)]
        return out + orelse

    def jumping(self, loop, body, broke):
        """One copy of a body with ``break``/``continue``: inside a loop of one trip
        (``continue`` ends the copy, as it ends an iteration; ``break`` ends it too and sets
        ``broke``, which skips the copies after it), which canonicalize.py lowers as any loop."""
        for jump in list(_jumps(body)):
            if isinstance(jump, gast.Break):
                _replace_statement(body, jump, [self.inherit(_assign(broke, True), jump), jump])
        once = gast.For(target=ast_util.name(self.ctx.namer.new("unrolled_once"), True),
                        iter=gast.Call(func=ast_util.name(as_array.bind(
                            self.ctx.namer, self.info, self.ctx.bindings, "range", builtins.range)),
                            args=[gast.Constant(value=1, kind=None)], keywords=[]),
                        body=body, orelse=[], type_comment=None)
        self.inherit(once, loop)
        if broke is None:
            return [once]
        return [self.inherit(gast.If(test=_not(broke), body=[once], orelse=[]), loop)]

    def indexed_container(self, loop):
        """``for i in range(len(C))`` whose body calls ``C[i](...)``, ``C`` a constant list
        or tuple of the compile: ``[(None, k)]`` for each index (the copies read ``C[k]``,
        a constant item), else None."""
        it = loop.iter
        if not (isinstance(loop.target, gast.Name) and isinstance(it, gast.Call) and not it.keywords
                and isinstance(it.func, gast.Name) and it.func.id == "range" and self._builtin("range")
                and len(it.args) == 1 and isinstance(it.args[0], gast.Call)
                and isinstance(it.args[0].func, gast.Name) and it.args[0].func.id == "len"
                and self._builtin("len") and len(it.args[0].args) == 1 and not it.args[0].keywords):
            return None
        i = loop.target.id
        try:
            path = self.path(it.args[0].args[0])
            container = self.resolve(path)
        except _NotConstant:
            return None
        if not isinstance(container, (list, tuple)):
            return None
        called = False
        for stmt in loop.body:
            for n in ast_util.walk(stmt):
                if isinstance(n, gast.Call) and isinstance(n.func, gast.Subscript) \
                        and isinstance(n.func.slice, gast.Name) and n.func.slice.id == i:
                    try:
                        called = called or self.path(n.func.value) == path
                    except _NotConstant:
                        pass
        if not called:
            return None
        self.info.record(path + (Length(),), len(container))
        if isinstance(container, list):
            self.unchanged(container, it)
        return [(None, k) for k in range(len(container))]

    def check(self, loop, names):
        """Refuse what unrolling would change: the loop variable rebound, read outside the
        loops that bind it (after the loop, where Python leaves it the last item), or a
        ``break``/``continue`` of this loop."""
        for stmt in loop.body:
            for n in ast_util.walk(stmt):
                if isinstance(n, gast.Name) and n.id in names and not isinstance(n.ctx, gast.Load):
                    raise self.at(n, stmt, f"the loop variable `{n.id}` of a loop over the "
                                  f"callables of a constant container is assigned in the loop",
                                  "Assign the value to another variable.")
        binding = [f for f in ast_util.walk(self._function) if isinstance(f, gast.For) and
                   names & _names(f.target)]
        elsewhere = [n for n in ast_util.walk(self._function) if isinstance(n, gast.Name)
                     and n.id in names and isinstance(n.ctx, gast.Load)
                     and not any(_inside(n, f) for f in binding)]
        if elsewhere:
            raise self.at(elsewhere[0], loop, f"`{elsewhere[0].id}`, the variable of a loop over "
                          f"the callables of a constant container, is used outside the loop",
                          "Give the loop its own variable name.")

    def at(self, node, statement, message, hint):
        """The UnsupportedError at ``node``'s own line (a name: its parsed line), else at
        ``statement``'s."""
        where = self.info.origin(node) if getattr(node, "lineno", None) else None
        if where is None:
            return self.error(statement, UnsupportedError, message, hint)
        return where.error(UnsupportedError, message, hint)

    def items(self, it):
        """``[(read path, value)]`` of each item ``it`` iterates over, or _NotConstant.
        ``enumerate`` and a dict's ``.items()`` give a _Pair path: the index or key with
        the item's path."""
        if isinstance(it, gast.Call) and not it.keywords:
            func = self.path(it.func) if isinstance(it.func, gast.Name) else None
            if func == ("enumerate",) and len(it.args) in (1, 2) and self._builtin("enumerate"):
                start = _literal(it.args[1]) if len(it.args) == 2 else 0
                if not isinstance(start, int):
                    raise _NotConstant
                return [(_Pair(k + start, p), v) for k, (p, v) in enumerate(self.items(it.args[0]))]
            if func == ("reversed",) and len(it.args) == 1 and self._builtin("reversed"):
                return self.items(it.args[0])[::-1]
            if func == ("zip",) and it.args and self._builtin("zip"):
                # zip(self.layers, self.acts): the items side by side, as many as the shortest;
                # zip(LAYERS, params) with params a variable of f: its items read by index
                columns = []
                for a in it.args:
                    try:
                        columns.append(self.items(a))
                    except _NotConstant:
                        if not (isinstance(a, gast.Name) and a.id in self.locals):
                            raise
                        columns.append(a.id)
                known = [c for c in columns if not isinstance(c, str)]
                if not known:
                    raise _NotConstant
                n = min(len(c) for c in known)
                self.zipped.extend((c, n) for c in columns if isinstance(c, str))
                return [(_Zip([_Runtime(c, k) if isinstance(c, str) else c[k][0] for c in columns]),
                         tuple(None if isinstance(c, str) else c[k][1] for c in columns))
                        for k in range(n)]
            if isinstance(it.func, gast.Attribute) and it.func.attr in ("items", "values") \
                    and not it.args:
                path = self.path(it.func.value)
                container = self.resolve(path)
                if not isinstance(container, dict):
                    raise _NotConstant
                self.info.record(path + (Keys(),), tuple(container))
                self.unchanged(container, it)
                pairs = [(self.read(path + (Item(k),), v), v) for k, v in container.items()]
                if it.func.attr == "values":
                    return pairs
                return [(_Pair(p[-1].key, p), v) for p, v in pairs]
            raise _NotConstant
        window = None
        if isinstance(it, gast.Subscript) and isinstance(it.slice, gast.Slice):
            # self.layers[1:]: the items of that slice (their own paths, the length recorded)
            window = tuple(None if b is None else _literal(b)
                           for b in (it.slice.lower, it.slice.upper, it.slice.step))
            if any(b is not None and not isinstance(b, int) for b in window):
                raise _NotConstant
            it = it.value
        path = self.path(it)
        container = self.resolve(path)
        if not isinstance(container, (list, tuple)):
            raise _NotConstant
        if window is not None:
            self.info.record(path + (Length(),), len(container))
            if isinstance(container, list):
                self.unchanged(container, it)
            return [(self.read(path + (Item(k),), container[k]), container[k])
                    for k in range(len(container))[slice(*window)]]
        if isinstance(container, list):   # a tuple's identity fixes its length
            self.info.record(path + (Length(),), len(container))
            self.unchanged(container, it)
        return [(self.read(path + (Item(k),), v), v) for k, v in enumerate(container)]

    def unchanged(self, container, it):
        """Refuse a function that changes ``container`` itself (``FUNCS.pop()``,
        ``self.layers[0] = f``, ``del D[k]``): the guard checked its items on entry, and the
        copies of the body are of those items. (A change made by a helper it calls is
        not seen here.)"""
        for n in ast_util.walk(self._function):
            target = None
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and \
                    n.func.attr in MUTATORS:
                target = n.func.value
            elif isinstance(n, gast.Subscript) and isinstance(n.ctx, (gast.Store, gast.Del)):
                target = n.value
            if target is None:
                continue
            try:
                changed = self.resolve(self.path(target)) is container
            except _NotConstant:
                continue
            if changed:
                raise self.at(n, it, f"the function changes `{dotted(self.path(target))}`, a "
                              f"container of callables it loops over (srcgrad writes one copy of "
                              f"the loop body per item it held when the function was called)",
                              "Change the container outside the differentiated function.")

    def read(self, path, value):
        """``path``, recorded as a read that gave ``value`` (guard.py checks it)."""
        self.info.record(path, value)
        return path

    def path(self, node):
        """The read path of a dotted name or constant subscript rooted at a name that is
        not a local of the function (nor a module's namespace), else _NotConstant."""
        parts = []
        while isinstance(node, (gast.Attribute, gast.Subscript)):
            if isinstance(node, gast.Attribute):
                parts.append(node.attr)
            else:
                key = _literal(node.slice)
                if key is _NotConstant:
                    raise _NotConstant
                parts.append(Item(key))
            node = node.value
        if not isinstance(node, gast.Name) or node.id in self.locals:
            raise _NotConstant
        return (node.id,) + tuple(reversed(parts))

    def resolve(self, path):
        try:
            return self.info.resolve_path(path)
        except (NameError, AttributeError, TypeError):
            raise _NotConstant from None

    def _builtin(self, name):
        try:
            return self.info.lookup(name) is getattr(builtins, name)
        except NameError:
            return False

    def bind(self, loop, target, path, value, values):
        """Fill ``values`` (loop variable -> the node that stands for it in this copy):
        ``target`` takes ``value``, read at ``path`` (a _Pair: an index or key with it)."""
        if isinstance(path, _Pair):
            if not isinstance(target, (gast.Tuple, gast.List)) or len(target.elts) != 2:
                raise self.error(loop, UnsupportedError, "unpack enumerate(...) or .items() into "
                                 "two targets", "Write `for i, layer in enumerate(self.layers):`.")
            self.bind(loop, target.elts[0], None, path.key, values)
            self.bind(loop, target.elts[1], path.path, value, values)
            return
        if isinstance(path, _Runtime):   # an item of a variable zipped with a constant container
            item = gast.Subscript(value=ast_util.name(path.name),
                                  slice=gast.Constant(value=path.k, kind=None), ctx=gast.Load())
            if isinstance(target, gast.Name):
                values[target.id] = item
            else:   # for act, (W, b) in zip(ACTS, params): `(W, b) = params[k]` first in the copy
                self.prelude.append(self.inherit(gast.Assign(targets=[copy.deepcopy(target)], value=item,
                                                             type_comment=None), loop))
            return
        if isinstance(path, _Zip):
            if not isinstance(target, (gast.Tuple, gast.List)) or len(target.elts) != len(path.paths):
                raise self.error(loop, UnsupportedError, f"unpack zip(...) into {len(path.paths)} "
                                 f"targets", "Write `for layer, act in zip(self.layers, self.acts):`.")
            for elt, p, v in zip(target.elts, path.paths, value):
                self.bind(loop, elt, p, v, values)
            return
        if isinstance(target, gast.Name):
            values[target.id] = self.stand_in(target.id, value)
            return
        if not isinstance(target, (gast.Tuple, gast.List)) or \
                any(isinstance(e, gast.Starred) for e in target.elts):
            raise self.error(loop, UnsupportedError, "this loop target over the callables of a "
                             "constant container", "Unpack into names: `for W, act in self.blocks:`.")
        if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
            raise self.error(loop, UnsupportedError,
                             f"{dotted(path) if path else 'an item'} does not unpack into "
                             f"{len(target.elts)} names", "Make every item a tuple of that length.")
        paths = [None] * len(value)
        if path is not None:
            paths = [path + (Item(k),) for k in range(len(value))]
            if isinstance(value, list):   # its length and items can change: reads of their own
                self.info.record(path + (Length(),), len(value))
                for p, v in zip(paths, value):
                    self.read(p, v)
        for elt, p, v in zip(target.elts, paths, value):
            self.bind(loop, elt, p, v, values)

    def stand_in(self, hint, value):
        if type(value) in _LITERALS:
            return gast.Constant(value=value, kind=None)
        return ast_util.name(as_array.bind(self.ctx.namer, self.info, self.ctx.bindings,
                                           hint, value))


class _Runtime:
    """The read ``name[k]`` of the k-th item of a variable of ``f`` zipped with a constant."""

    def __init__(self, name, k):
        self.name, self.k = name, k


class _Zip:
    """The read paths of the items of ``zip(A, B, ...)`` at one position, one per container."""

    def __init__(self, paths):
        self.paths = paths


def _assign(target, value):
    return gast.Assign(targets=[ast_util.name(target, True)], value=gast.Constant(value=value, kind=None),
                       type_comment=None)


def _not(flag):
    return gast.UnaryOp(op=gast.Not(), operand=ast_util.name(flag))


def _replace_statement(body, old, new):
    """Replace the statement ``old`` (anywhere in ``body``'s blocks) by the list ``new``."""
    for i, stmt in enumerate(body):
        if stmt is old:
            body[i:i + 1] = new
            return True
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and not isinstance(stmt, (gast.For, gast.While)) \
                    or field == "orelse" and isinstance(block, list):
                if _replace_statement(block, old, new):
                    return True
    return False


def _substitute(node, by):
    """Make the Name ``node`` the node ``by`` (a Name or Constant), in place."""
    node.__class__ = type(by)
    node.__dict__.clear()
    node.__dict__.update(copy.deepcopy(by).__dict__)


def _literal(node):
    try:
        value = gast.literal_eval(node)
        hash(value)
    except (ValueError, TypeError, SyntaxError):
        return _NotConstant
    return value


def _names(node):
    return {n.id for n in ast_util.walk(node) if isinstance(n, gast.Name)}


def _calls_any(body, names):
    """Whether ``body`` calls one of ``names`` (or a method or item of one), or loops over
    a container it holds calling the items (``for layer in block.layers: layer(x)``)."""
    for stmt in body:
        for n in ast_util.walk(stmt):
            if isinstance(n, gast.For) and names & _names(n.iter) and \
                    _calls_any(n.body, _names(n.target)):
                return True
            if isinstance(n, gast.Call):
                func = n.func
                while isinstance(func, (gast.Attribute, gast.Subscript)):
                    func = func.value
                if isinstance(func, gast.Name) and func.id in names:
                    return True
    return False


def _jumps(body):
    """The ``break``/``continue`` statements of a loop body (not of loops nested in it)."""
    for stmt in body:
        if isinstance(stmt, (gast.Break, gast.Continue)):
            yield stmt
        elif not isinstance(stmt, (gast.For, gast.While, gast.FunctionDef)):
            for field in ("body", "orelse", "finalbody"):
                yield from _jumps(getattr(stmt, field, None) or [])
        else:
            yield from _jumps(stmt.orelse)


def _inside(node, loop):
    return any(n is node for n in ast_util.walk(loop))


def _dispatch(unroller, node):
    """``ACTS[name](x)``: a call of an item of a constant list, tuple or dict of callables
    (a global, closure or bound ``self.`` container: what a loop above unrolls over) read
    with a key known only when ``f`` runs (a variable, after the loops are unrolled),
    becomes the call of the item the key picks, ``ACTS["tanh"](x) if name in ("tanh",)
    else ACTS["relu"](x) if ... else rt.missing_item(...)`` (KeyError or IndexError, as
    Python raises), each a call with a constant key that anf_expressions.py resolves as
    any other. The keys (a dict's) or the length (a list's) are recorded as reads, so a
    table that gains or loses an item compiles anew (guard.py)."""
    from srcgrad import runtime

    class Dispatch(gast.NodeTransformer):
        def visit_Call(self, call):
            self.generic_visit(call)
            func = call.func
            if not (isinstance(func, gast.Subscript) and isinstance(func.slice, gast.Name)
                    and func.slice.id in unroller.locals):
                return call
            try:
                path = unroller.path(func.value)
                container = unroller.resolve(path)
            except _NotConstant:
                return call
            if not isinstance(container, (list, tuple, dict)) or not container \
                    or not all(callable(v) for v in (container.values() if isinstance(container, dict)
                                                     else container)) \
                    or isinstance(container, dict) and not all(type(k) in _LITERALS for k in container):
                return call
            sequence = not isinstance(container, dict)
            keys = list(range(len(container))) if sequence else list(container)
            if sequence:
                if isinstance(container, list):
                    unroller.info.record(path + (Length(),), len(container))
            else:
                unroller.info.record(path + (Keys(),), tuple(container))
            unroller.unchanged(container, func)
            key = func.slice.id
            choice = gast.Call(func=ast_util.name(as_array.bind(
                unroller.ctx.namer, unroller.info, unroller.ctx.bindings, "missing_item",
                runtime.missing_item)), args=[
                    gast.Constant(value=len(keys) if sequence else tuple(keys), kind=None),
                    ast_util.name(key)], keywords=[])
            for k in reversed(keys):
                picks = [gast.Constant(value=k, kind=None)]
                if sequence:
                    picks.append(gast.Constant(value=k - len(keys), kind=None))
                item = gast.Subscript(value=copy.deepcopy(func.value),
                                      slice=gast.Constant(value=k, kind=None), ctx=gast.Load())
                gast.copy_location(item, func)
                branch = gast.Call(func=item, args=copy.deepcopy(call.args),
                                   keywords=copy.deepcopy(call.keywords))
                gast.copy_location(branch, call)
                choice = gast.IfExp(test=gast.Compare(left=ast_util.name(key), ops=[gast.In()],
                                                      comparators=[gast.Tuple(elts=picks, ctx=gast.Load())]),
                                    body=branch, orelse=choice)
            return gast.copy_location(choice, call)

    node.body = [Dispatch().visit(s) for s in node.body]


def transform(node, ctx, census=None):
    """Unroll the loops of FunctionDef ``node`` over constant containers of callables,
    then dispatch the calls of their items by a key known only when it runs (_dispatch).
    ``census``: an ``ast_walks.Census`` of ``node``, told of a change."""
    if census is None:
        census = ast_walks.Census(node)
    unroller = Unroller(ctx, local_names(node, census.of(gast.Name)))
    unroller._function = node
    if census.of(gast.For):
        node.body = unroller.visit_block(node.body)
        if unroller.unrolled:
            census.changed()
    if any(isinstance(n.func, gast.Subscript) for n in census.of(gast.Call)):
        _dispatch(unroller, node)
        census.changed()
    return node
