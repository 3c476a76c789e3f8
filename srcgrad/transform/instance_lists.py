"""Lists of instances built in the function: ``layers = [Dense(W, b) for W, b in params]`` or
``[Dense(W1, b1), Dense(W2, b2)]``, then ``for layer in layers: x = layer(x)``.

Where a name is bound once, and nothing stores into it, to a list display or comprehension
whose every item is a call of a class with methods, known when compiling, its items are
of those classes: the name gets the tree of a list of such items (ctx.trees, ctx.built_trees,
as ``m2 = sg.tree_map(f, m)`` does in tree_calls.py), so structure_parts.bind knows the
class of a loop's variable over it (``layer(x)`` is ``Dense.__call__(layer, x)``; over
items of several classes the loop is written out, one body per item) and of an item read
with a constant index. The list's length must be known (a display, or a
comprehension over ``range(k)`` or an argument's list or tuple), as its tree says it, and
the name only iterated, indexed or measured (``_escaping``); the class's constructor is
compiled as anywhere else (and refused there where it cannot be).
"""

import gast

from srcgrad import ast_util, pytree
from srcgrad.transform import structure_parts
from srcgrad.transform.base import local_names


def transform(node, ctx):
    """Give ``ctx.trees`` the lists of instances of FunctionDef ``node`` (see above)."""
    candidates = [s for s in ast_util.nodes_of(node, gast.Assign)
                  if len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
                  and isinstance(s.value, (gast.List, gast.ListComp))]
    if not candidates:
        return node
    rebound, stored_into, stores = structure_parts._changed_names(node)
    locals_ = local_names(node)
    escaping = _escaping(node)
    for assign in candidates:
        target = assign.targets[0].id
        if stores.get(target) != 1 or target in stored_into or target in ctx.trees \
                or target in escaping:
            continue
        tree = _list_tree(assign.value, ctx, locals_)
        if tree is not None:
            ctx.trees[target] = tree
            ctx.built_trees.add(target)
    return node


def _list_tree(value, ctx, locals_):
    """The tree of the list ``value`` builds where its items are instances of one class with
    methods and its length is known; else None."""
    if isinstance(value, gast.List):
        calls, length = value.elts, len(value.elts)
    else:
        if len(value.generators) != 1:
            return None
        loop = value.generators[0]
        if loop.ifs or loop.is_async:
            return None
        calls, length = [value.elt], _length(loop.iter, ctx)
    if not length or not all(isinstance(c, gast.Call) for c in calls):
        return None
    classes = [_class_of(c.func, ctx, locals_) for c in calls]
    if not all(map(structure_parts.has_methods, classes)):
        return None
    if len(classes) == 1:   # a comprehension's items
        classes = classes * length
    return pytree.TreeKey((list,) + tuple(pytree.TreeKey((cls,)) for cls in classes))


def _length(iterable, ctx):
    """The number of items ``iterable`` yields where known when compiling, else None."""
    if isinstance(iterable, gast.Call) and isinstance(iterable.func, gast.Name) \
            and iterable.func.id == "range" and len(iterable.args) == 1 \
            and not iterable.keywords and structure_parts.is_builtin(ctx, "range"):
        bound = iterable.args[0]
        if isinstance(bound, gast.Constant) and type(bound.value) is int:
            return max(bound.value, 0)
        return None
    tree = structure_parts.part_tree(iterable, ctx.trees)
    cls = structure_parts.class_of(tree)
    if cls is not None and issubclass(cls, (list, tuple)):
        return len(tree) - 1
    return None


def _class_of(func, ctx, locals_):
    """The class a call of ``func`` builds, where ``func`` is a global (or a dotted path
    from one) naming a class; else None."""
    path = ast_util.dotted(func)
    if path is None or path[0] in locals_:
        return None
    try:
        found = ctx.info.resolve_path(path)
    except (NameError, AttributeError):
        return None
    return found if isinstance(found, type) else None


def _escaping(node):
    """The names read anywhere but as what a loop iterates, the container of an item or
    attribute read, or ``len``'s argument: passed on, aliased, returned, their list may
    change out of sight (``other = layers; other.append(l)``), so its tree is not known."""
    allowed = set()
    for n in ast_util.walk(node):
        if isinstance(n, (gast.For, gast.comprehension)):
            allowed.add(id(n.iter))
        elif isinstance(n, (gast.Subscript, gast.Attribute)):
            allowed.add(id(n.value))
        elif isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id == "len" \
                and len(n.args) == 1:
            allowed.add(id(n.args[0]))
    return {n.id for n in ast_util.walk(node) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load) and id(n) not in allowed}
