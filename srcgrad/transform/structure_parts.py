"""Methods of the parts of a structured argument: ``m.layers[0].forward(x)``, ``self.enc(x)``,
``for layer in self.layers: x = layer(x)`` (Equinox's and Flax's way of writing a model).

A compile is specialised on each structured argument's tree (pytree.tree_key), which names
the class of every dataclass or registered node inside it. A part reached from such an
argument by attribute reads and constant indices has a class known when compiling, as long
as nothing in the function stores into the argument. Where a method of a part is called,
the part is read into a name just before the statement (where Python reads it, so the
value model still sees every read); the name knows the part's class and tree, and the call
becomes the class's function, as for an argument (methods.bind_methods). A loop over a list
or tuple of parts of one class binds its variable the same way; over parts of several
classes it is written out, one body per part. Calling a part (or an argument) whose class
defines ``__call__`` calls that method. (class_methods.py: properties, super(), operators.)
"""

import builtins
import copy
import dataclasses
import functools
import inspect

import gast

from srcgrad import ast_util, pytree
from srcgrad.analysis.argument_keys import ClassKey, StaticKey, plain_instance
from srcgrad.ast_util import name
from srcgrad.transform import unroll

# keys of ``static`` (no Python names: the others are parameters)
PARAM_CLASSES = "<classes>"   # parameter -> the class of the structure it holds
TREES = "<trees>"   # parameter -> the tree key of the structure it holds
_MUTATORS = unroll.MUTATORS | {"__setattr__"}   # methods that change a structure in place


def argument_statics(positional, arg_ranks):
    """``static`` entries for the structured arguments of a compile: parameter -> class
    (``classes``, for ``p.energy(x)``), parameter -> tree (for the parts' methods) and
    parameter -> the callable object it holds."""
    classes, trees, out = {}, {}, {}
    for p, key in zip(positional, arg_ranks or ()):
        if isinstance(key, StaticKey):   # a callable: the parameter denotes it (inline.bind_static)
            out[p] = key.obj
        if isinstance(key, ClassKey):   # a plain object's methods (ranks.rank_key)
            classes[p] = key.cls
        if isinstance(key, pytree.TreeKey) and class_known(key[0]):
            classes[p] = key[0]
        if isinstance(key, pytree.TreeKey):
            trees[p] = key
    if classes:
        out[PARAM_CLASSES] = classes
    if trees:
        out[TREES] = trees
    return out


def classes_of(arguments):
    """Parameter -> what a forward-mode compile is specialised on for each structured
    argument value: its tree without leaves (the classes of its parts, its dicts' keys),
    and for a callable or plain object its rank key (as reverse mode's)."""
    out = {}
    for p, v in arguments.items():
        if v is not None and pytree.is_node(v):
            out[p] = pytree.tree_key(v, _no_leaf)
        elif callable(v):   # compiled for it, as in reverse mode (ranks.rank_key)
            out[p] = StaticKey(v)
        elif plain_instance(v):
            out[p] = ClassKey(type(v))
    return out


def _holds_methods(tree):
    """Whether the structure of ``tree`` holds a class with methods (itself or a part)."""
    return isinstance(tree, pytree.TreeKey) and (has_methods(class_of(tree)) or any(
        _holds_methods(t) for t in tree[1:]))


def _no_leaf(_):
    return None


def value_statics(classes):
    """``classes`` (``classes_of``'s) as ``front_end``'s ``static``."""
    return argument_statics(list(classes), list(classes.values()))


def class_known(cls):
    """A class worth knowing while compiling: one with methods srcgrad binds, a list
    (whose ``xs.sort()`` is a list's, not an array's) or a dict (``for k in d``: its keys)."""
    return has_methods(cls) or isinstance(cls, type) and issubclass(cls, (list, dict))


def has_methods(cls):
    """Whether a structure of class ``cls`` may have methods srcgrad binds (a dataclass or
    a registered class; lists, tuples, namedtuples and dicts are not)."""
    return isinstance(cls, type) and not issubclass(cls, (list, tuple, dict, str))


def plain_dataclass(obj):
    """A dataclass class whose ``__init__`` is the one ``@dataclass`` generated (it only
    stores its arguments) and that has no ``__post_init__``."""
    init = getattr(obj, "__init__", None)
    return isinstance(obj, type) and dataclasses.is_dataclass(obj) \
        and not hasattr(obj, "__post_init__") \
        and getattr(getattr(init, "__code__", None), "co_filename", None) == "<string>"


def calls_itself(cls):
    """Whether instances of ``cls`` are called through a ``__call__`` written in Python."""
    try:
        raw = inspect.getattr_static(cls, "__call__")
    except AttributeError:
        return False
    return inspect.isfunction(raw)


def property_getter(cls, attr):
    """``"fget"`` (``"func"`` for a functools.cached_property) where ``attr`` is a property
    of ``cls`` computed by a Python function, else None."""
    if not has_methods(cls):
        return None
    try:
        raw = inspect.getattr_static(cls, attr)
    except AttributeError:
        return None
    if isinstance(raw, property) and inspect.isfunction(raw.fget):
        return "fget"
    if isinstance(raw, functools.cached_property) and inspect.isfunction(raw.func):
        return "func"
    return None


def part_tree(expr, trees):
    """The tree key of the part ``expr`` denotes (``m.layers[1]``, ``self.enc``), from the
    trees of the names it starts from, or None."""
    if isinstance(expr, gast.Name):
        return trees.get(expr.id)
    if isinstance(expr, gast.Attribute):
        tree = part_tree(expr.value, trees)
        fields = _fields(class_of(tree))
        return _child(tree, 1 + fields.index(expr.attr)) if expr.attr in fields else None
    if isinstance(expr, gast.Subscript):
        tree = part_tree(expr.value, trees)
        cls = class_of(tree)
        if cls is None:
            return None
        index = expr.slice
        if issubclass(cls, (list, tuple)):
            items = tree[1:]
            if isinstance(index, gast.Slice):
                bounds = [_int(b) if b is not None else None for b in (index.lower, index.upper, index.step)]
                if any(b is _NOT_INT for b in bounds):
                    return None
                return pytree.TreeKey((list,) + tuple(items[slice(*bounds)]))
            k = _int(index)
            return _child(tree, 1 + k % len(items)) if k is not _NOT_INT and -len(items) <= k < len(items) \
                else None
        if issubclass(cls, dict) and isinstance(index, gast.Constant) and len(tree) > 1 \
                and isinstance(tree[1], tuple):
            keys = tree[1]
            return _child(tree, 2 + keys.index(index.value)) if index.value in keys else None
    return None


_NOT_INT = object()


def _int(node):
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and isinstance(
            node.operand, gast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
    return _NOT_INT


def _fields(cls):
    """The field names of a dataclass or namedtuple ``cls``, in its tree's order ([] for
    other classes: a registered class's children are its own flatten's)."""
    if cls is None or cls in pytree._REGISTRY:
        return []
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return list(getattr(cls, "_fields", ())) if issubclass(cls, tuple) else []


def class_of(tree):
    """The class at the root of ``tree`` (a TreeKey), else None."""
    return tree[0] if isinstance(tree, pytree.TreeKey) and tree and isinstance(tree[0], type) else None


def _child(tree, i):
    return tree[i] if i < len(tree) and isinstance(tree[i], pytree.TreeKey) else None


def _item_tree(tree):
    """The tree shared by every item of a list or tuple ``tree`` whose items are of one
    class with methods (their trees equal, or only their class known), else None."""
    cls = class_of(tree)
    if cls is None or not issubclass(cls, (list, tuple)) or len(tree) < 2:
        return None
    items = tree[1:]
    classes = {class_of(t) for t in items}
    if len(classes) != 1 or not has_methods(next(iter(classes))):
        return None
    return items[0] if all(t == items[0] for t in items) else pytree.TreeKey((next(iter(classes)),))


def _root(expr):
    while isinstance(expr, (gast.Attribute, gast.Subscript)):
        expr = expr.value
    return expr.id if isinstance(expr, gast.Name) else None


def _changed_names(node):
    """``(rebound, stored_into, stores)``: the names the function binds, those it stores into
    (``m.w = ...``, ``m.layers[0] = ...``, ``m.layers.append(...)``: their trees may not
    hold where they are read), and how many times each name is assigned."""
    rebound, stored_into, stores = set(), set(), {}
    for n in (n for s in node.body for n in ast_util.walk(s)):   # (a lambda's parameters too)
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            rebound.add(n.id)
            if isinstance(n.ctx, gast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, (gast.Attribute, gast.Subscript)) and not isinstance(n.ctx, gast.Load):
            stored_into.add(_root(n))
        elif isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                and n.func.attr in _MUTATORS:
            stored_into.add(_root(n.func.value))
        elif isinstance(n, gast.Call) and isinstance(n.func, gast.Name) \
                and n.func.id in ("setattr", "delattr") and n.args:
            stored_into.add(_root(n.args[0]))
    return rebound, stored_into, stores


def bind(node, ctx):
    """Rewrite the calls of parts' methods in FunctionDef ``node`` as described above;
    ``ctx.classes`` and ``ctx.trees`` learn the names that hold parts."""
    trees = dict(ctx.trees)
    if not any(map(_holds_methods, trees.values())):
        return node   # (dicts and lists of arrays: nothing to bind)
    binder = _Binder(node, ctx, trees)
    params = [a.id for a in node.args.args + node.args.kwonlyargs if isinstance(a, gast.Name)]
    binder.visit_block(node.body, {p for p in params if p in binder.trees} | binder.built)
    for k in binder.built:
        ctx.classes[k] = binder.trees[k][0]
    for block, before, reads in binder.hoists.values():
        at = next(k for k, s in enumerate(block) if s is before)
        block[at:at] = list(reads.values())
    if binder.unrolled:
        _replace_loops(node.body, binder.unrolled)
    ctx.trees = binder.trees
    return node


class _Binder:
    """The state of ``bind``: the trees known, the reads hoisted, the loops unrolled."""

    def __init__(self, node, ctx, trees):
        self.node, self.ctx = node, ctx
        self.rebound, self.stored_into, self.stores = _changed_names(node)
        self.trees = {k: t for k, t in trees.items() if k not in self.rebound | self.stored_into}
        # m2 = sg.tree_map(f, m) (tree_calls.py), bound once: read after that binding
        self.built = {k for k in ctx.built_trees if self.stores.get(k) == 1 and k not in self.stored_into}
        self.trees.update((k, trees[k]) for k in self.built)
        self.hoists = {}    # id(statement) -> (block, statement, {path: the read put before it})
        self.unrolled = {}  # id(loop) -> the statements standing for it
        self.at = None      # (block, statement) being visited

    def hoist(self, expr, tree):
        """A name holding the part ``expr`` (of class ``tree[0]``), read just before the
        statement being visited (where Python reads it: after any store before it)."""
        block, statement = self.at
        reads = self.hoists.setdefault(id(statement), (block, statement, {}))[2]
        text = ast_util.dotted(expr) or gast.dump(expr)
        if text not in reads:
            new = self.ctx.namer.new(_spelling(expr))
            reads[text] = gast.copy_location(gast.Assign(targets=[name(new, gast.Store())], value=expr,
                                                         type_comment=None), expr)
            self.know(new, tree)
        return name(reads[text].targets[0].id)

    def visit_block(self, block, scope):
        """``scope``: the names holding parts that are bound at these statements (the
        parts read from them can be read before a statement)."""
        for s in list(block):
            self.at = (block, s)
            if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                continue
            if isinstance(s, gast.For):
                self.write_out_comprehensions(s, scope)   # for h in [layer(x) for layer in ...]
                loop = self.loop_parts(s)
                if loop is not None and (loop[3] is None or self.trees_differ(loop)):
                    copies = self.unroll(s, *loop)   # parts of several classes or trees
                    if copies is not None:
                        self.unrolled[id(s)] = copies
                        items = {c.targets[0].id for c in copies if isinstance(c, gast.Assign)
                                 and c.targets[0].id in self.trees}
                        self.visit_block(copies, scope | items)
                        continue
                if loop is not None and loop[3] is not None:
                    self.know(loop[1].id, loop[3])
                self.visit_expr(s.iter, scope)
                self.visit_block(s.body, scope | set(_targets(s.target)))
                self.visit_block(s.orelse, scope)
                continue
            self.write_out_comprehensions(s, scope)
            for child in gast.iter_fields(s):
                child = child[1]
                if isinstance(child, list) and child and isinstance(child[0], gast.stmt):
                    self.visit_block(child, scope)
                    self.at = (block, s)
                elif isinstance(child, gast.AST):
                    self.visit_expr(child, scope)
                elif isinstance(child, list):
                    for c in child:
                        if isinstance(c, gast.AST):
                            self.visit_expr(c, scope)

    def visit_expr(self, expr, scope):
        for n in ast_util.walk(expr):
            if isinstance(n, gast.comprehension):   # [layer(x) for layer in m.layers]
                loop = self.loop_parts(n)
                if loop is not None and loop[3] is not None:
                    self.know(loop[1].id, loop[3])
            if isinstance(n, gast.Attribute) and isinstance(n.value, (gast.Attribute, gast.Subscript)) \
                    and _root(n.value) in scope:   # m.enc.scale, a property: read on a name
                tree = part_tree(n.value, self.trees)
                if tree is not None and property_getter(tree[0], n.attr) is not None:
                    n.value = self.hoist(n.value, tree)
            if not isinstance(n, gast.Call):
                continue
            func = n.func
            if isinstance(func, (gast.Name, gast.Attribute, gast.Subscript)):
                tree = part_tree(func, self.trees)
                if tree is not None and calls_itself(tree[0]):   # m(x), self.enc(x): __call__
                    n.func = func = gast.Attribute(value=func, attr="__call__", ctx=gast.Load())
            if isinstance(func, gast.Attribute) and isinstance(func.value, (gast.Attribute, gast.Subscript)):
                root = _root(func.value)
                tree = part_tree(func.value, self.trees)
                if tree is not None and has_methods(tree[0]) and root in scope:
                    func.value = self.hoist(func.value, tree)

    def know(self, variable, tree):
        self.trees[variable] = tree
        self.ctx.classes[variable] = tree[0]

    def loop_parts(self, loop, local=False):
        """``(key target, target, (container, keys), tree)`` of a loop (or a
        comprehension's ``for``) over the parts of an argument: ``for layer in m.layers``,
        ``enumerate(...)``, ``.items()``, ``.values()`` of a dict part; ``tree`` the items'
        common tree, None where they are of several classes. None for any other loop.
        ``local``: the loop's variables are read only where ``loop`` binds them (a
        comprehension written out), so other bindings of their names do not matter."""
        loop.iter = self.through_iter(loop.iter)
        target, iterable, key_target, how = loop.target, loop.iter, None, None
        if isinstance(iterable, gast.Call) and not iterable.keywords:
            func = iterable.func
            if isinstance(func, gast.Name) and func.id == "enumerate" and len(iterable.args) == 1 \
                    and is_builtin(self.ctx, "enumerate"):
                iterable.args[0] = self.through_iter(iterable.args[0])
                iterable, how = iterable.args[0], "enumerate"
            elif isinstance(func, gast.Attribute) and func.attr in ("items", "values") \
                    and not iterable.args:
                iterable, how = func.value, func.attr
            else:
                return None
        if how in ("enumerate", "items"):
            if not (isinstance(target, gast.Tuple) and len(target.elts) == 2):
                return None
            key_target, target = target.elts
            if not isinstance(key_target, gast.Name) or self.stores.get(key_target.id) != 1 and not local:
                return None
        if not isinstance(target, gast.Name) or self.stores.get(target.id) != 1 and not local \
                or target.id in self.stored_into:
            return None
        tree = part_tree(iterable, self.trees)
        cls = class_of(tree)
        if cls is None:
            return None
        if issubclass(cls, dict) and how in ("items", "values"):
            keys, items = tree[1], tree[2:]
        elif issubclass(cls, (list, tuple)) and how in (None, "enumerate"):
            keys, items = range(len(tree) - 1), tree[1:]
        else:
            return None
        if not items or not all(has_methods(class_of(t)) for t in items):
            return None
        return key_target, target, (iterable, keys), _item_tree(pytree.TreeKey((list,) + tuple(items)))

    def through_iter(self, iterable):
        """``self.layers`` for ``self`` where the part's class defines ``__iter__`` as
        ``return iter(self.layers)`` or ``yield from self.layers`` (what ``for layer in self``
        iterates in Python); ``iterable`` itself otherwise."""
        tree = part_tree(iterable, self.trees)
        field = iterated_field(class_of(tree))
        if field is None or field not in _fields(class_of(tree)):
            return iterable
        return gast.copy_location(gast.Attribute(value=iterable, attr=field, ctx=gast.Load()), iterable)

    def write_out_comprehensions(self, statement, scope):
        """Write out, in the expressions of ``statement``, each comprehension over parts of
        several classes as the display of its items (``[layer(x) for layer in self.layers]``
        -> ``[layers_0(x), layers_1(x)]``), as ``unroll`` writes out a loop; a generator
        expression only as the argument of a builtin that consumes it at once (``sum(...)``)."""
        binder = self

        class WriteOut(gast.NodeTransformer):
            def visit_ListComp(self, comp):
                self.generic_visit(comp)
                return binder.write_out(comp, scope) or comp

            def visit_Call(self, call):
                self.generic_visit(call)
                func = call.func
                if isinstance(func, gast.Name) and func.id in _CONSUMERS and len(call.args) == 1 \
                        and isinstance(call.args[0], gast.GeneratorExp) and is_builtin(binder.ctx, func.id):
                    call.args[0] = binder.write_out(call.args[0], scope) or call.args[0]
                return call

            def visit_Lambda(self, node):   # (its parameters may shadow the parts' names)
                return node

        for field, child in gast.iter_fields(statement):
            if isinstance(child, gast.expr):
                setattr(statement, field, WriteOut().visit(child))
            elif isinstance(child, list) and child and isinstance(child[0], gast.expr):
                child[:] = [WriteOut().visit(c) for c in child]

    def write_out(self, comp, scope):
        """The list display standing for ``comp``, a comprehension with one ``for`` over the
        parts of several classes, else None; its ``if``s test each item where Python does
        (``[*([e0] if c0 else []), ...]``)."""
        if len(comp.generators) != 1 or comp.generators[0].is_async:
            return None
        ifs = comp.generators[0].ifs
        loop = self.loop_parts(comp.generators[0], local=True)
        if loop is None or loop[3] is not None and not self.trees_differ(loop):
            return None
        key_target, target, (container, keys), _ = loop
        bound = {target.id} | ({key_target.id} if key_target is not None else set())
        if _root(container) not in scope or any(   # (a lambda or generator in the element reads
                isinstance(n, gast.Name) and n.id in bound and not isinstance(n.ctx, gast.Load)
                or isinstance(n, (gast.Lambda, gast.GeneratorExp))   # the variable's last value)
                for part in [comp.elt] + ifs for n in ast_util.walk(part)):
            return None
        elts = []
        for key in keys:
            read = gast.copy_location(gast.Subscript(value=copy.deepcopy(container), slice=gast.Constant(
                value=key, kind=None), ctx=gast.Load()), container)
            item = self.hoist(read, part_tree(read, self.trees))
            elt, test = (copy.deepcopy(comp.elt), copy.deepcopy(
                ifs[0] if len(ifs) == 1 else gast.BoolOp(op=gast.And(), values=ifs) if ifs else None))
            for variable, value in [(target.id, item)] + (
                    [(key_target.id, gast.Constant(value=key, kind=None))] if key_target is not None else []):
                elt = _Substitute(variable, value).visit(elt)
                test = test and _Substitute(variable, value).visit(test)
            if test is not None:   # if c: *([e] if c else []), tested in Python's order
                elt = gast.Starred(value=gast.IfExp(test=test, body=gast.List(elts=[elt], ctx=gast.Load()),
                                                    orelse=gast.List(elts=[], ctx=gast.Load())),
                                   ctx=gast.Load())
            elts.append(elt)
        return gast.copy_location(gast.List(elts=elts, ctx=gast.Load()), comp)

    def trees_differ(self, loop):
        """Whether the parts ``loop`` (loop_parts') iterates are of one class but not one
        tree: their common tree holds only the class, so a copy per part knows more (the
        fields of each: ``for l in self`` in its ``__call__``, its leaves)."""
        container, keys = loop[2]
        return len({part_tree(gast.Subscript(value=container, slice=gast.Constant(value=k, kind=None),
                                             ctx=gast.Load()), self.trees) for k in keys}) > 1

    def unroll(self, loop, key_target, target, items, _):
        """The copies of ``loop``'s body, one per item (``items``: the container read and its
        keys), each binding a variable of its own to its item, where nothing the body does
        depends on the loop staying a loop (a break, the variable read after it); else None."""
        if any(isinstance(n, (gast.Break, gast.Continue)) for s in loop.body for n in ast_util.walk(s)) \
                or _read_outside(self.node, loop, target.id):
            return None
        container, keys = items
        out = []
        for key in keys:
            read = gast.copy_location(gast.Subscript(value=copy.deepcopy(container), slice=gast.Constant(
                value=key, kind=None), ctx=gast.Load()), container)
            if key_target is not None:
                out.append(gast.copy_location(gast.Assign(
                    targets=[name(key_target.id, gast.Store())], value=gast.Constant(value=key, kind=None),
                    type_comment=None), loop))
            item = self.ctx.namer.new(target.id)   # this copy's variable: knows its item's class
            assign = gast.copy_location(gast.Assign(targets=[name(item, gast.Store())], value=read,
                                                    type_comment=None), loop)
            self.know(item, part_tree(read, self.trees))
            out.append(assign)
            out += [_Substitute(target.id, name(item)).visit(copy.deepcopy(s)) for s in loop.body]
        return out + loop.orelse


_CONSUMERS = {"sum", "list", "tuple", "min", "max", "any", "all", "sorted"}   # builtins taking an iterable


def iterated_by(iterable, classes, ctx):
    """``m.layers`` for ``m`` (a name of a class known when compiling: a model built in the
    function, a method's ``self``) whose ``__iter__`` yields that field, also inside
    ``enumerate(m)``; ``iterable`` itself otherwise."""
    if isinstance(iterable, gast.Call) and isinstance(iterable.func, gast.Name) \
            and iterable.func.id == "enumerate" and len(iterable.args) == 1 \
            and not iterable.keywords and is_builtin(ctx, "enumerate"):
        iterable.args[0] = iterated_by(iterable.args[0], classes, ctx)
    cls = classes.get(iterable.id) if isinstance(iterable, gast.Name) else None
    field = iterated_field(cls) if cls is not None else None
    if field is None or field not in _fields(cls):
        return iterable
    return gast.copy_location(gast.Attribute(value=iterable, attr=field, ctx=gast.Load()), iterable)


@functools.lru_cache(maxsize=None)
def iterated_field(cls):
    """The field ``F`` whose items a Python ``__iter__`` of ``cls`` yields, written
    ``return iter(self.F)`` or ``yield from self.F``; else None."""
    if not has_methods(cls):
        return None
    raw = inspect.getattr_static(cls, "__iter__", None)
    if not inspect.isfunction(raw):
        return None
    from srcgrad import parse
    try:
        node = parse.parse_source(raw)[0]
    except Exception:   # (no source to read: the loop stays refused as before)
        return None
    self_name = node.args.args[0].id if len(node.args.args) == 1 else None
    body = [s for s in node.body if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant))]
    if self_name is None or len(body) != 1:
        return None
    value = body[0].value if isinstance(body[0], (gast.Return, gast.Expr)) else None
    if isinstance(body[0], gast.Return) and isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
            and value.func.id == "iter" and len(value.args) == 1 and not value.keywords \
            and raw.__globals__.get("iter", builtins.iter) is builtins.iter:
        value = value.args[0]
    elif isinstance(body[0], gast.Expr) and isinstance(value, gast.YieldFrom):
        value = value.value
    else:
        return None
    if isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name) and value.value.id == self_name:
        return value.attr
    return None


def _replace_loops(block, unrolled):
    """Put each unrolled loop's copies in its place (in ``block`` and the blocks inside)."""
    k = 0
    while k < len(block):
        s = block[k]
        if id(s) in unrolled:
            block[k:k + 1] = unrolled.pop(id(s))
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                _replace_loops(inner, unrolled)
        k += 1


def _read_outside(function, loop, variable):
    """Whether ``variable`` is read outside ``loop``'s body (after it, Python leaves it the
    last item)."""
    inside = {id(n) for s in loop.body for n in ast_util.walk(s)}
    return any(isinstance(n, gast.Name) and n.id == variable and id(n) not in inside
               and isinstance(n.ctx, gast.Load) for s in function.body for n in ast_util.walk(s))


class _Substitute(gast.NodeTransformer):
    """Every read of ``variable`` becomes a copy of ``value``."""

    def __init__(self, variable, value):
        self.variable, self.value = variable, value

    def visit_Name(self, node):
        if node.id == self.variable and isinstance(node.ctx, gast.Load):
            return copy.deepcopy(self.value)
        return node


def _targets(target):
    return [n.id for n in ast_util.walk(target) if isinstance(n, gast.Name)]


def is_builtin(ctx, spelled):
    import builtins
    try:
        return ctx.info.resolve(spelled) is getattr(builtins, spelled)
    except NameError:
        return False


def _spelling(expr):
    parts = []
    while isinstance(expr, (gast.Attribute, gast.Subscript)):
        if isinstance(expr, gast.Attribute):
            parts.append(expr.attr)
        else:
            k = _int(expr.slice)
            parts.append("item" if k is _NOT_INT else str(k) if k >= 0 else "last" if k == -1
                         else f"last{-k}")
        expr = expr.value
    parts.append(expr.id if isinstance(expr, gast.Name) else "part")
    return "_".join(reversed(parts))
