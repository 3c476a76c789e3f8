"""List displays used as records, written as tuples for Numba.

``vs = [x, y, x * y]`` whose name is bound once and only read at constant positions
(``vs[2]``), by ``len(vs)``, or by ``rt.add_at(dvs, vs, 2, g)`` (the adjoint of ``vs[2]``)
holds the same values as the tuple ``(x, y, x * y)``. Numba types a list's items one
type and a tuple's each its own, and indexing.py's add_at gives a tuple's gradient item
by item, so the display becomes a tuple display. Any other use (an append, a runtime
index, a call, a tape push, a second binding) keeps the list.

``k = [1, 1, 2]`` of integer constants, bound once and read only as an index (``x[k]``, the
index of ``rt.add_at``) indexes as the array ``np.array([1, 1, 2])`` does (NumPy takes such
a list as that array; Numba takes no list index), so it becomes that array.
"""

import gast


def as_tuples(function):
    """Rewrite the records of ``function`` (a gast FunctionDef) in place."""
    parents, displays, stores = {}, {}, {}
    for node in gast.walk(function):
        for child in gast.iter_child_nodes(node):
            parents[id(child)] = node
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name) and isinstance(node.value, gast.List):
            displays[node.targets[0].id] = node
    for n, assign in displays.items():
        if stores.get(n) != 1 or n in _params(function):
            continue
        reads = [node for node in gast.walk(function) if isinstance(node, gast.Name) and
                 node.id == n and isinstance(node.ctx, gast.Load)]
        if all(_record_read(node, parents) for node in reads):
            assign.value = gast.Tuple(elts=assign.value.elts, ctx=gast.Load())
        elif assign.value.elts and all(_constant_int(e) for e in assign.value.elts) and \
                all(_index_read(node, parents) for node in reads):
            assign.value = gast.Call(
                func=gast.Attribute(value=gast.Name(id="np", ctx=gast.Load(), annotation=None,
                                                    type_comment=None),
                                    attr="array", ctx=gast.Load()),
                args=[assign.value], keywords=[])


def _params(function):
    a = function.args
    return {p.id for p in a.posonlyargs + a.args + a.kwonlyargs}


def _record_read(node, parents):
    parent = parents.get(id(node))
    if isinstance(parent, gast.Subscript) and parent.value is node:
        return isinstance(parent.ctx, gast.Load) and _constant_int(parent.slice)
    if isinstance(parent, gast.Call):
        f = parent.func
        if isinstance(f, gast.Name) and f.id == "len" and parent.args == [node]:
            return True
        return isinstance(f, gast.Attribute) and f.attr == "add_at" and \
            isinstance(f.value, gast.Name) and f.value.id == "_jrt" and \
            len(parent.args) == 4 and parent.args[1] is node and _constant_int(parent.args[2])
    return False


def _index_read(node, parents):
    """``x[k]`` (read or written) or ``_jrt.add_at(dx, x, k, g)``: ``k`` only an index."""
    parent = parents.get(id(node))
    if isinstance(parent, gast.Subscript):
        return parent.slice is node
    return isinstance(parent, gast.Call) and isinstance(parent.func, gast.Attribute) and \
        parent.func.attr == "add_at" and isinstance(parent.func.value, gast.Name) and \
        parent.func.value.id == "_jrt" and len(parent.args) == 4 and parent.args[2] is node \
        and node not in parent.args[:2] + parent.args[3:]


def _constant_int(index):
    """``3`` or ``-3``."""
    if isinstance(index, gast.UnaryOp) and isinstance(index.op, gast.USub):
        index = index.operand
    return isinstance(index, gast.Constant) and type(index.value) is int
