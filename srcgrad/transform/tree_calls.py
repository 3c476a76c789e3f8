"""``sg.tree_leaves(params)`` and ``sg.tree_map(fn, params, grads)`` inside a function srcgrad
differentiates, on structures known when compiling (the arguments' trees, and their parts:
structure_parts.py): the list of the leaves' reads, and the display of ``fn``'s calls on
the leaves (``{"W": fn(params["W"], grads["W"]), "b": ...}``, a dataclass or namedtuple
built by its class). So the L2 penalty JAX users write,
``sum(np.sum(w ** 2) for w in sg.tree_leaves(params))``, is differentiated as the sum it
stands for. A call on anything else is left as it is (and refused where a gradient must
flow through it)."""

import copy
import dataclasses

import gast

from srcgrad import ast_util, pytree
from srcgrad.transform import as_array, structure_parts
from srcgrad.transform.base import local_names
from srcgrad.transform.structure_parts import class_of, part_tree

_NAMES = {"tree_leaves": pytree.tree_leaves, "tree_map": pytree.tree_map}
_NONE = pytree.TreeKey(("None",))


class _Unknown(Exception):
    """A structure this cannot write out (a registered class, keys that are no literals,
    trees that differ)."""


def transform(node, ctx):
    """Write out the tree utilities' calls of FunctionDef ``node`` (before its methods are
    bound: a tree_map over a model builds the model's class)."""
    trees = ctx.trees
    if not trees or not any(isinstance(n, gast.Call) and _spelled(n.func) in _NAMES
                            for n in ast_util.walk(node)):
        return node
    rebound, stored_into, _ = structure_parts._changed_names(node)
    known = {k: t for k, t in trees.items() if k not in rebound | stored_into}
    node.body = [_TreeCalls(ctx, known, local_names(node)).visit(s) for s in node.body]
    return node


def _spelled(func):
    return func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", None)


class _TreeCalls(gast.NodeTransformer):

    def __init__(self, ctx, trees, locals_):
        self.ctx, self.trees, self.locals = ctx, trees, locals_
        self.mapped = None   # (display, tree) of the last tree_map written out (visit_Assign)

    def visit_Assign(self, assign):
        """``m2 = sg.tree_map(f, m)``: ``m2`` holds a structure like ``m``'s (its tree, for
        ``m2(x)``; structure_parts.py binds it where the function binds it once)."""
        self.mapped = None
        self.generic_visit(assign)
        target = assign.targets[0] if len(assign.targets) == 1 else None
        if isinstance(target, gast.Name) and self.mapped is not None and assign.value is self.mapped[0]:
            self.ctx.trees[target.id] = self.mapped[1]   # (the whole value: not a part of it)
            self.ctx.built_trees.add(target.id)
        return assign

    def visit_Call(self, call):
        self.generic_visit(call)
        utility = self.utility(call.func)
        if utility is None or call.keywords:
            return call
        try:
            if utility is pytree.tree_leaves and len(call.args) == 1:
                tree = part_tree(call.args[0], self.trees)
                if tree is None:
                    return call   # (refused where a gradient must flow through it)
                out = gast.List(elts=list(self.leaves(call.args[0], tree)), ctx=gast.Load())
            elif utility is pytree.tree_map and len(call.args) >= 2 and isinstance(
                    call.args[0], (gast.Name, gast.Attribute, gast.Lambda)):
                trees = [part_tree(a, self.trees) for a in call.args[1:]]
                if any(t is None for t in trees):
                    return call   # (refused where a gradient must flow through it)
                out = self.display(call.args[0], call.args[1:], trees)
                self.mapped = (out, trees[0])
            else:
                return call
        except _Unknown:
            return call
        return gast.copy_location(out, call)

    def utility(self, func):
        """``pytree.tree_leaves``/``tree_map`` where ``func`` denotes one (``sg.tree_map``,
        a name imported from srcgrad), else None."""
        path = ast_util.dotted(func)
        if path is None or path[-1] not in _NAMES or path[0] in self.locals:
            return None
        try:
            obj = self.ctx.info.resolve_path(path)
        except (NameError, AttributeError):
            return None
        return obj if obj is _NAMES[path[-1]] else None

    def leaves(self, expr, tree):
        """The reads of the leaves of the structure ``expr`` (of tree ``tree``), in order."""
        if not isinstance(tree, pytree.TreeKey):
            yield copy.deepcopy(expr)
            return
        if tree == _NONE:
            return
        for read, child in self.children(expr, tree):
            yield from self.leaves(read, child)

    def children(self, expr, tree):
        """``[(read, tree)]`` of the children of the node ``expr``, in the tree's order."""
        cls = class_of(tree)
        if cls is None or cls in pytree._REGISTRY:
            raise _Unknown
        if issubclass(cls, dict):
            keys = tree[1]
            if not all(type(k) in (str, int, bool) for k in keys):
                raise _Unknown
            return [(_item(expr, k), t) for k, t in zip(keys, tree[2:])]
        if issubclass(cls, tuple) and hasattr(cls, "_fields") or dataclasses.is_dataclass(cls):
            fields = structure_parts._fields(cls)
            if len(tree) != 1 + len(fields):   # only the class known (items of several trees)
                raise _Unknown
            return [(gast.Attribute(value=copy.deepcopy(expr), attr=f, ctx=gast.Load()), t)
                    for f, t in zip(fields, tree[1:])]
        if issubclass(cls, (list, tuple)):
            return [(_item(expr, k), t) for k, t in enumerate(tree[1:])]
        raise _Unknown

    def display(self, fn, exprs, trees):
        """The display of ``fn`` called on the leaves of ``exprs`` (trees ``trees``) at each
        place, in the first tree's structure."""
        first = trees[0]
        if not isinstance(first, pytree.TreeKey):
            if any(isinstance(t, pytree.TreeKey) for t in trees[1:]):
                raise _Unknown
            return gast.Call(func=copy.deepcopy(fn), args=[copy.deepcopy(e) for e in exprs], keywords=[])
        if first == _NONE:
            if any(t != _NONE for t in trees):
                raise _Unknown
            return gast.Constant(value=None, kind=None)
        cls = class_of(first)
        if any(class_of(t) is not cls for t in trees):
            raise _Unknown
        columns = [self.children(e, t) for e, t in zip(exprs, trees)]
        if cls is dict:
            keys = list(first[1])
            if any(set(t[1]) != set(keys) for t in trees):
                raise _Unknown
            columns = [[dict(zip(t[1], column))[k] for k in keys] for t, column in zip(trees, columns)]
            values = [self.display(fn, [c[k][0] for c in columns], [c[k][1] for c in columns])
                      for k in range(len(keys))]
            return gast.Dict(keys=[gast.Constant(value=k, kind=None) for k in keys], values=values)
        if any(len(c) != len(columns[0]) for c in columns):
            raise _Unknown
        values = [self.display(fn, [c[k][0] for c in columns], [c[k][1] for c in columns])
                  for k in range(len(columns[0]))]
        if cls is list:
            return gast.List(elts=values, ctx=gast.Load())
        if cls is tuple:
            return gast.Tuple(elts=values, ctx=gast.Load())
        if not (structure_parts.plain_dataclass(cls) and all(f.init for f in dataclasses.fields(cls))
                or issubclass(cls, tuple) and hasattr(cls, "_fields")):
            raise _Unknown   # built by a constructor of its own: not written out
        built = ast_util.name(as_array.bind(self.ctx.namer, self.ctx.info, self.ctx.bindings,
                                            cls.__name__, cls))
        return gast.Call(func=built, args=[], keywords=[
            gast.keyword(arg=f, value=v) for f, v in zip(structure_parts._fields(cls), values)])


def _item(expr, key):
    return gast.Subscript(value=copy.deepcopy(expr), slice=gast.Constant(value=key, kind=None),
                          ctx=gast.Load())
