"""Optimizations of the backward sweep; each reports whether it changed anything.

Requires the backward FunctionDef built by reverse.py. Run to a fixed point by
``transform``:

* first contribution assigns: ``dx = 0.0 ... dx = dx + g`` becomes ``dx = g``
  when nothing reads ``dx`` in between (no zero array is ever added);
* dead adjoint elimination: an adjoint (or reverse-sweep temporary) that is
  assigned and never read again is not computed.

Pops, hooks, custom Function backwards and in-place helpers are never removed:
they have effects beyond their target.

    dx = 0.0                           dx = rt.unbroadcast(dz * w, x)
    dx = dx + rt.unbroadcast(dz * w, x)   becomes    (and the zero is gone)
"""

import gast
import numpy

from srcgrad import anno
from srcgrad.analysis.activity import names_in
from srcgrad.analysis.ranks import SCALAR, UNKNOWN, combine_classes
from srcgrad.templates import clone, replace, replace_as_expression as replace_expr

Static = anno.Static

# Runtime helpers that change one of their arguments or call user code.
_EFFECTFUL = {"add_at", "zero_grad_at", "run_hook", "function_backward", "seq_pop"}


_memo = {}  # id(node) -> (loads, stores), valid for one round of the passes


def _names(node):
    key = id(node)
    found = _memo.get(key)
    if found is None or found[0] is not node:
        loads, stores = set(), set()
        if isinstance(node, (gast.If, gast.For, gast.While)):
            # A block's names are its statements' (memoized): nested loops are walked once.
            for part in _own_parts(node) + node.body + node.orelse:
                _, inner_loads, inner_stores = _names(part)
                loads |= inner_loads
                stores |= inner_stores
        else:
            stack = [node]
            while stack:
                n = stack.pop()
                if type(n) is gast.Name:
                    (stores if type(n.ctx) is gast.Store else loads).add(n.id)
                    continue
                for field in n._fields:
                    value = getattr(n, field, None)
                    if type(value) is list:
                        stack.extend(v for v in value if isinstance(v, gast.AST))
                    elif isinstance(value, gast.AST):
                        stack.append(value)
        found = _memo[key] = (node, loads, stores)
    return found


def _loads(node):
    return _names(node)[1]


def _stores(node):
    return _names(node)[2]


def _refs(node):
    _, loads, stores = _names(node)
    return loads | stores


def _is_zero(value):
    return isinstance(value, gast.Constant) and value.value == 0.0 and type(value.value) is float


def _pure(value):
    for n in gast.walk(value):
        if isinstance(n, gast.Call):
            func = n.func
            if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                    and func.value.id in ("rt", "xp"):
                if func.attr in _EFFECTFUL:
                    return False
                continue
            if isinstance(func, gast.Attribute) and func.attr in ("reshape", "sum", "T", "astype",
                                                                   "transpose", "copy", "conj"):
                continue
            return False
    return True


def _inplace_targets(body):
    """Adjoints updated in place by runtime helpers: they must own their memory."""
    found = set()
    for n in gast.walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr in _EFFECTFUL \
                and n.args and isinstance(n.args[0], gast.Name):
            found.add(n.args[0].id)
    return found


def _is_accumulation(s, d):
    value = getattr(s, "value", None)
    return (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and s.targets[0].id == d
            and isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add)
            and isinstance(value.left, gast.Name) and value.left.id == d and d not in _loads(value.right))


def fold_first_contributions(body, candidates, inplace):
    """``d = 0.0`` followed (as the next use of ``d``) by ``d = d + g`` becomes ``d = g``."""
    changed = False
    for field_owner in _blocks(body):
        block = field_owner
        k = 0
        while k < len(block):
            s = block[k]
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and _is_zero(s.value):
                d = s.targets[0].id
                if d in candidates and d not in inplace:
                    for j in range(k + 1, len(block)):
                        nxt = block[j]
                        if d not in _refs(nxt):
                            continue
                        if isinstance(nxt, gast.If) and anno.getanno(nxt, Static.GUARD) \
                                and d not in _loads(nxt.test):
                            # `if rt.has_grad(g): d = d + e` right after `d = 0.0`: assign.
                            inner = next((t for t in nxt.body if d in _refs(t)), None)
                            if inner is not None and _is_accumulation(inner, d):
                                inner.value = inner.value.right
                                changed = True
                            break
                        if isinstance(nxt, gast.If) and d not in _loads(nxt.test):
                            if _fold_into_branches(nxt, d, s):
                                del block[k]
                                changed = True
                                k -= 1
                            break
                        value = getattr(nxt, "value", None)
                        if isinstance(nxt, gast.Assign) and isinstance(nxt.targets[0], gast.Name) \
                                and nxt.targets[0].id == d and isinstance(value, gast.BinOp) \
                                and isinstance(value.op, gast.Add) and isinstance(value.left, gast.Name) \
                                and value.left.id == d and d not in _loads(value.right):
                            nxt.value = value.right
                            del block[k]
                            changed = True
                            k -= 1
                        break
            k += 1
    return changed


def _fold_into_branches(branch, d, zero):
    """``d = 0.0; if c: ... d = d + g ... else: ...`` moves the zero into the branches,
    folding it into each branch whose first use of ``d`` is an accumulation.

    Returns whether any branch folded (otherwise nothing is changed).
    """
    firsts = []
    for block in (branch.body, branch.orelse):
        first = next((t for t in block if d in _refs(t)), None)
        firsts.append(first if first is not None and _is_accumulation(first, d) else None)
    if not any(firsts):
        return False
    for block, first in zip((branch.body, branch.orelse), firsts):
        if first is not None:
            first.value = first.value.right
        else:
            block.insert(0, clone(zero))
    return True


def _blocks(body):
    yield body
    for s in body:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                yield from _blocks(inner)


def eliminate_dead(body, removable, live_out, pure=None):
    """Drop pure assignments to ``removable`` names that nothing reads afterwards.

    Liveness runs backwards over the statements; a loop is iterated to a fixed
    point over its back edge before anything inside it is removed. ``pure``
    (value -> bool) says which values may go; by default the sweep's own.
    """
    changed = [False]
    pure = pure or _pure

    def dead(s, live):
        return (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name)
                and s.targets[0].id in removable and s.targets[0].id not in live
                and pure(s.value) and anno.getanno(s, Static.TAPE) is None)

    def block(stmts, live, remove):
        live = set(live)
        kept = []
        for s in reversed(stmts):
            if dead(s, live):
                if remove:
                    changed[0] = True
                    continue
                kept.append(s)
                continue
            if isinstance(s, gast.If):
                body_live = block(s.body, live, remove)
                else_live = block(s.orelse, live, remove) if s.orelse else set(live)
                if remove and not s.body:
                    s.body.append(gast.Pass())
                live = body_live | else_live | _loads(s.test)
            elif isinstance(s, (gast.For, gast.While)):
                head = _loads(s.iter) if isinstance(s, gast.For) else _loads(s.test)
                loop_live = set(live) | head
                while True:
                    entry = block(s.body, loop_live, False)
                    grown = loop_live | entry
                    if grown == loop_live:
                        break
                    loop_live = grown
                block(s.body, loop_live, remove)
                if remove and not s.body:
                    s.body.append(gast.Pass())
                live = loop_live
                if isinstance(s, gast.For):
                    live = live - _stores(s.target) | head
            else:
                if isinstance(s, gast.Assign):
                    live -= {t.id for t in s.targets if isinstance(t, gast.Name)}
                live |= _loads(s)
            kept.append(s)
        if remove:
            stmts[:] = list(reversed(kept))
        return live

    block(body, live_out, True)
    return changed[0]


def fold_loop_carried(body, candidates, inplace):
    """Inside a loop or branch, ``d = d + g`` as the first use of ``d`` becomes ``d = g``
    when ``d`` is zero on entry and reset to zero at the end of the block: a loop body
    entered with ``d = 0.0`` just before the loop, or a block (W8's ``if cond:`` in a
    loop) outside which ``d`` is only ever set to zero."""
    changed = False
    zero_only = None   # d -> whether every statement outside a block that refers to d zeroes it
    for block in _blocks(body):
        if block is body:
            continue
        firsts, lasts = {}, {}
        for s in block:
            for n in _refs(s):
                firsts.setdefault(n, s)
                lasts[n] = s
        for d in (candidates - inplace) & set(firsts):
            first, last = firsts[d], lasts[d]
            if first is last:
                continue
            value = getattr(first, "value", None)
            if not (isinstance(first, gast.Assign) and isinstance(first.targets[0], gast.Name)
                    and first.targets[0].id == d and isinstance(value, gast.BinOp)
                    and isinstance(value.op, gast.Add) and isinstance(value.left, gast.Name)
                    and value.left.id == d and d not in _loads(value.right)):
                continue
            if not (isinstance(last, gast.Assign) and isinstance(last.targets[0], gast.Name)
                    and last.targets[0].id == d and _is_zero(last.value)):
                continue
            if not (_zero_before_loop(body, block, d) or _only_zeroed_outside(body, block, d)):
                continue
            first.value = value.right
            changed = True
    return changed


def _zero_before_loop(body, block, d):
    """``block`` is a loop's body and the statement before the loop that refers to ``d``
    sets it to zero."""
    for outer in _blocks(body):
        for k, loop in enumerate(outer):
            if isinstance(loop, (gast.For, gast.While)) and loop.body is block:
                before = next((s for s in reversed(outer[:k]) if d in _refs(s)), None)
                return (isinstance(before, gast.Assign) and isinstance(before.targets[0], gast.Name)
                        and before.targets[0].id == d and _is_zero(before.value))
    return False


def _only_zeroed_outside(body, block, d):
    """Every statement outside ``block`` that refers to ``d`` assigns it zero (compound
    statements around it only through their blocks)."""
    inside = {id(s) for s in walk_statements(block)}
    for s in walk_statements(body):
        if id(s) in inside:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            if any(d in _refs(part) for part in _own_parts(s)):
                return False
        elif d in _refs(s) and not (isinstance(s, gast.Assign) and len(s.targets) == 1
                                    and isinstance(s.targets[0], gast.Name)
                                    and s.targets[0].id == d and _is_zero(s.value)):
            return False
    return True


_SHAPE_HELPERS = ("unbroadcast", "unreduce")


def _scalar_ufunc(func):
    """``xp.<ufunc>`` with one output: a scalar for scalar arguments."""
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and func.value.id == "xp":
        f = getattr(numpy, func.attr, None)
        return isinstance(f, numpy.ufunc) and f.nout == 1
    return False


def is_rt_call(node, attr):
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name) and node.func.value.id == "rt"
            and node.func.attr == attr and not node.keywords)


def _shape_helper(node):
    """``rt.unbroadcast(g, x)`` or ``rt.unreduce(g, x, ...)`` with ``x`` a name."""
    return (any(is_rt_call(node, attr) for attr in _SHAPE_HELPERS) and len(node.args) >= 2
            and isinstance(node.args[1], gast.Name))


def _combine_classes(*classes):
    """The class of an elementwise result (analysis/ranks.py), None when unknown."""
    found = combine_classes(*classes)
    return None if found == UNKNOWN else found


def _class_of(e, classes):
    """The shape class ``e``'s value broadcasts into (analysis/ranks.py), or None."""
    if isinstance(e, gast.Constant):
        return SCALAR if type(e.value) in (int, float, bool) else None
    if isinstance(e, gast.Name):
        return classes.get(e.id)
    if isinstance(e, gast.BinOp):
        if isinstance(e.op, gast.MatMult):
            return None
        return _combine_classes(_class_of(e.left, classes), _class_of(e.right, classes))
    if isinstance(e, gast.UnaryOp):
        return _class_of(e.operand, classes) if isinstance(e.op, (gast.USub, gast.UAdd)) else None
    if isinstance(e, gast.Call) and not e.keywords:
        if _shape_helper(e):
            return classes.get(e.args[1].id)
        if _scalar_ufunc(e.func):
            return _combine_classes(*(_class_of(a, classes) for a in e.args))
    return None


def infer_sweep_classes(body, classes, fixed):
    """``classes`` plus the class of each generated name of the sweep whose every
    assignment has one class (``fixed`` names are never inferred that way).

    Returns (classes, generated name -> the names its assignments read).
    """
    classes = dict(classes)
    assigned = {}
    for s in walk_statements(body):
        if isinstance(s, gast.Assign):
            for t in s.targets:
                for n in gast.walk(t):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                        value = s.value if t is n and len(s.targets) == 1 else None
                        assigned.setdefault(n.id, []).append(value)
        elif isinstance(s, (gast.For, gast.AugAssign)):
            for n in gast.walk(s.target):
                if isinstance(n, gast.Name):
                    assigned.setdefault(n.id, []).append(None)
    inferred = {}   # generated name -> the names its assignments read
    changed = True
    while changed:
        changed = False
        for n in set(assigned) - set(fixed) - set(inferred):
            values = assigned[n]
            if any(v is None for v in values):
                continue
            found = {_class_of(v, classes) for v in values}
            if len(found) == 1 and None not in found:
                classes[n] = found.pop()
                inferred[n] = set().union(*(names_in(v) for v in values))
                changed = True
    return classes, inferred


def drop_unbroadcasts(body, classes, fixed, roots=()):
    """``rt.unbroadcast(g, x)`` is ``g`` when ``g`` broadcasts into ``x``'s shape.

    ``classes`` gives the shape class of primal names (analysis/ranks.py: names of
    one class have one shape; SCALAR broadcasts into any) and of their adjoints
    (an adjoint broadcasts into its primal's shape). Other names of the sweep get
    the class every assignment to them has; ``fixed`` names (primals, adjoints) are
    never inferred that way. ``rt.unreduce(g, x, ...)`` of a scalar ``x`` is ``g``.
    The shape a remaining helper reads is taken from the class's root parameter
    (in ``roots``) where there is one, so the value itself need not be kept.

    Returns the names whose classes the rewritten sweep relies on.
    """
    classes, inferred = infer_sweep_classes(body, classes, fixed)
    used = set()

    class Dropper(gast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if is_rt_call(node, "reduction_size") and node.args and isinstance(node.args[0], gast.Name):
                target = node.args[0].id
                shape = classes.get(target)
                extra = node.args[1:]
                at_least = extra[1].value if len(extra) == 2 and isinstance(extra[1], gast.Constant) else 0
                whole = not extra or (len(extra) <= 2 and isinstance(extra[0], gast.Constant)
                                      and extra[0].value is None and at_least in (0, 1))
                if shape in roots and shape != target:
                    used.update((target, shape))
                    node.args[0] = gast.Name(id=shape, ctx=gast.Load(), annotation=None,
                                             type_comment=None)
                if whole and shape not in (None, SCALAR, UNKNOWN):
                    used.add(target)   # an array: its size, without the helper's axis handling
                    size = gast.Attribute(value=node.args[0], attr="size", ctx=gast.Load())
                    if at_least:   # a mean's divisor: 1 for an empty array, whose gradient is empty
                        return gast.BoolOp(op=gast.Or(), values=[size, gast.Constant(value=1, kind=None)])
                    return size
                return node
            if not _shape_helper(node):
                return node
            target = node.args[1].id
            shape = classes.get(target)
            if shape is None:
                return node
            unbroadcast = node.func.attr == "unbroadcast" and len(node.args) == 2
            if (unbroadcast and _class_of(node.args[0], classes) in (SCALAR, shape)) \
                    or (node.func.attr == "unreduce" and shape == SCALAR):
                used.update(names_in(node))
                return node.args[0]
            if shape in roots and shape != target:
                used.update((target, shape))
                node.args[1] = gast.Name(id=shape, ctx=gast.Load(), annotation=None,
                                         type_comment=None)
            return node

    for s in body:
        Dropper().visit(s)
    pending = list(used)
    while pending:
        for n in inferred.get(pending.pop(), ()):
            if n not in used:
                used.add(n)
                pending.append(n)
    return used - set(inferred)


def _full_unreduce(node, classes):
    """``rt.unreduce(g, x, None, False)`` of a scalar ``g`` and an ``x`` of a known
    array class: returns that class, else None."""
    if not (is_rt_call(node, "unreduce") and len(node.args) in (2, 4)
            and isinstance(node.args[1], gast.Name)):
        return None
    if len(node.args) == 4 and not all(isinstance(a, gast.Constant) and a.value is v
                                       for a, v in zip(node.args[2:], (None, False))):
        return None
    shape = classes.get(node.args[1].id)
    if shape in (None, SCALAR, UNKNOWN) or _class_of(node.args[0], classes) != SCALAR:
        return None
    return shape


class _Lazy:
    """What an expression of the sweep is when full-reduction gradients stay scalar.

    ``shape``: its shape class; ``origins``: the unreduce calls whose scalar may flow
    into it (empty: it is what it was); ``real``: it reads a primal of its class, so
    its value has that shape whatever the origins hold.
    """

    def __init__(self, shape, origins=frozenset(), real=False):
        self.shape, self.origins, self.real = shape, origins, real

    @property
    def lazy(self):
        return bool(self.origins) and not self.real


def _plain_scalar(found):
    return found is not None and found.shape == SCALAR and not found.origins


def _lazy_class(e, classes, lazy, enabled, primals):
    """The ``_Lazy`` of an elementwise expression ``e``, or None when ``e`` is not one."""
    if isinstance(e, gast.Constant):
        return _Lazy(SCALAR) if type(e.value) in (int, float, bool) else None
    if isinstance(e, gast.Name):
        if e.id in lazy:
            return _Lazy(*lazy[e.id])
        shape = classes.get(e.id)
        if shape in (None, UNKNOWN):
            return None
        return _Lazy(shape, real=e.id in primals and shape != SCALAR)
    if isinstance(e, gast.Attribute) and e.attr == "size" and isinstance(e.value, gast.Name) \
            and e.value.id not in lazy:
        return _Lazy(SCALAR)
    if isinstance(e, gast.BoolOp) and isinstance(e.op, gast.Or) \
            and all(_plain_scalar(_lazy_class(v, classes, lazy, enabled, primals)) for v in e.values):
        return _Lazy(SCALAR)   # a mean's divisor, (x.size or 1)
    parts = None
    if isinstance(e, gast.BinOp) and not isinstance(e.op, gast.MatMult):
        parts = [e.left, e.right]
    elif isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        parts = [e.operand]
    elif isinstance(e, gast.Call) and not e.keywords:
        if id(e) in enabled:
            return _Lazy(enabled[id(e)], frozenset([id(e)]))
        if is_rt_call(e, "reduction_size") and all(isinstance(a, (gast.Name, gast.Constant))
                                                     and getattr(a, "id", None) not in lazy
                                                     for a in e.args):
            return _Lazy(SCALAR)
        if _scalar_ufunc(e.func):
            parts = e.args
    if not parts:
        return None
    found = [_lazy_class(p, classes, lazy, enabled, primals) for p in parts]
    if None in found:
        return None
    shape = _combine_classes(*(f.shape for f in found))
    if shape is None:
        return None
    origins = frozenset().union(*(f.origins for f in found))
    return _Lazy(shape, origins, any(f.real and f.shape == shape for f in found))


def _own_parts(s):
    """What statement ``s`` evaluates itself: a compound statement's header, not its blocks."""
    if isinstance(s, (gast.If, gast.While)):
        return [s.test]
    if isinstance(s, gast.For):
        return [s.target, s.iter]
    return [s]


def _origins_in(node, lazy, enabled):
    """The enabled unreduce calls whose scalar may reach ``node``'s value."""
    found = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in lazy:
            found |= lazy[n.id][1]
        elif id(n) in enabled:
            found.add(id(n))
    return found


def keep_reductions_scalar(body, classes, primals, returned):
    """The gradient of a full reduction stays a scalar until it meets an array.

    ``rt.unreduce(g, x, None, False)`` spreads a scalar ``g`` over ``x``'s shape, so
    every later step of the chain rule is an array operation; in ``mean(3*(x+2)**2)``
    the hand-written ``6/n*(x+2)`` does one. The call becomes ``g`` wherever every value
    the scalar reaches is used only elementwise with operands of ``x``'s shape class
    (the result then has that shape, or stands for it broadcast), tested by
    ``rt.has_grad``, or returned at a position of ``returned`` (gradients the API
    broadcasts to their argument's shape). A call whose scalar could reach any other
    use (a matmul, an index, a hook, a tape) stays. Returns the names relied on.
    """
    _memo.clear()
    calls = {}
    in_statement = {}   # id(statement) -> the candidate calls in it, nested blocks included
    for s in walk_statements(body):
        for part in _own_parts(s):
            for parent in gast.walk(part):
                for field, value in gast.iter_fields(parent):
                    for k, n in enumerate(value if isinstance(value, list) else [value]):
                        shape = _full_unreduce(n, classes) if isinstance(n, gast.Call) else None
                        if shape is not None:
                            calls[id(n)] = (n, shape, parent, field, k if isinstance(value, list) else None)
                            in_statement.setdefault(id(s), set()).add(id(n))
    enabled = {k: found[1] for k, found in calls.items()}
    while enabled:
        lazy, bad = _spread_scalars(body, classes, primals, returned, enabled, in_statement)
        if not bad:
            break
        for k in bad:
            enabled.pop(k, None)
    if not enabled:
        return set()
    used = set()
    for k in enabled:
        call, _, parent, field, index = calls[k]
        used.update(names_in(call))
        if index is None:
            setattr(parent, field, call.args[0])
        else:
            getattr(parent, field)[index] = call.args[0]
    _memo.clear()
    for s in walk_statements(body):
        target = s.targets[0] if isinstance(s, gast.Assign) else getattr(s, "target", None)
        if isinstance(target, gast.Name) and target.id in lazy:
            used |= names_in(s)
    return used


def _spread_scalars(body, classes, primals, returned, enabled, in_statement):
    """Follow the scalars of the ``enabled`` unreduce calls through ``body`` to a fixed
    point. Returns (name -> (class, origins), the calls that reach an unsafe use)."""
    lazy = {}
    bad = set()
    changed = True
    while changed and not bad:
        changed = False
        for s in walk_statements(body):
            if enabled.keys().isdisjoint(in_statement.get(id(s), ())) \
                    and all(lazy.keys().isdisjoint(_loads(p)) for p in _own_parts(s)):
                continue   # no scalar reaches this statement (yet)
            target, value = None, None
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
                target, value = s.targets[0].id, s.value
            elif isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name) \
                    and not isinstance(s.op, gast.MatMult):
                target = s.target.id
                value = gast.BinOp(left=gast.Name(id=target, ctx=gast.Load(), annotation=None,
                                                  type_comment=None), op=s.op, right=s.value)
            if value is not None:
                reached = _origins_in(value, lazy, enabled)
                if not reached:
                    continue
                found = _lazy_class(value, classes, lazy, enabled, primals)
                known = lazy.get(target, (classes.get(target),))[0]
                if found is None or (known is not None and known != found.shape):
                    bad |= reached
                elif found.lazy:
                    old = lazy.get(target)
                    new = (found.shape, found.origins | (old[1] if old else frozenset()))
                    if new != old:
                        lazy[target] = new
                        changed = True
                continue
            if isinstance(s, gast.Return) and isinstance(s.value, gast.Tuple):
                for k, e in enumerate(s.value.elts):
                    if not (isinstance(e, gast.Name) and k in returned):
                        bad |= _origins_in(e, lazy, enabled)
                continue
            header = getattr(s, "test", None)
            if header is not None and is_rt_call(header, "has_grad"):
                continue
            own = [getattr(s, f) for f in ("test", "iter", "target", "targets", "value")
                   if getattr(s, f, None) is not None]
            for part in own:
                for node in part if isinstance(part, list) else [part]:
                    bad |= _origins_in(node, lazy, enabled)
    return lazy, bad


def _arithmetic_loads(e):
    """Names ``e`` reads only as operands of arithmetic (which cannot return them)."""
    found = set()
    if isinstance(e, gast.BinOp):
        parts = [e.left, e.right]
    elif isinstance(e, gast.UnaryOp):
        parts = [e.operand]
    elif isinstance(e, gast.Call) and _scalar_ufunc(e.func) and not e.keywords:
        parts = e.args
    else:
        return found
    for p in parts:
        if isinstance(p, gast.Name):
            found.add(p.id)
        else:
            found |= _arithmetic_loads(p)
    return found


def _contribution(s, d=None):
    """(target, added expression, kind) of ``d = E``, ``d = d + E`` or ``d += E``, else None."""
    if isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add) and isinstance(s.target, gast.Name):
        target, value, kind = s.target.id, s.value, "aug"
    elif isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
        target, value, kind = s.targets[0].id, s.value, "assign"
        if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add) \
                and isinstance(value.left, gast.Name) and value.left.id == target:
            value, kind = value.right, "add"
    else:
        return None
    if (d is not None and target != d) or target in _loads(value) or _arithmetic_loads(value) != _loads(value):
        return None
    return target, value, kind


def merge_repeated_contributions(body):
    """Two contributions of one expression in a row become one, doubled:
    ``dx = dx_times_x * x`` then ``dx += dx_times_x * x`` (the rule for ``a * b``
    applied to ``x * x``) is ``dx = dx_times_x * x * 2``."""
    changed = False
    for block in _blocks(body):
        k = 0
        while k + 1 < len(block):
            first = _contribution(block[k])
            second = first and _contribution(block[k + 1], first[0])
            if second and second[2] != "assign" and gast.dump(first[1]) == gast.dump(second[1]):
                doubled = gast.BinOp(left=first[1], op=gast.Mult(), right=gast.Constant(value=2, kind=None))
                s = block[k]
                if first[2] == "add":
                    s.value.right = doubled
                else:
                    s.value = doubled
                del block[k + 1]
                changed = True
                continue
            k += 1
    return changed


def accumulate_in_place(body, classes, primals):
    """``d = d + g`` becomes ``d += g`` where ``d`` holds an array the sweep made and
    no other name can see, of the shape ``g`` broadcasts into: no new array per
    contribution (W6's ``dx`` gets four).

    ``d`` owns its array from an assignment of an arithmetic result that reads a
    primal of its shape class (a new array of that shape) or ``rt.owned_zeros``, in
    the same block, until anything but arithmetic reads it (a copy, a call, a
    hook, a nested block) or it is rebound otherwise.
    """
    changed = False
    for block in _blocks(body):
        owned = {}   # name -> the shape class of the array it owns
        for k, s in enumerate(block):
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
                target, value = s.targets[0].id, s.value
                if target in owned and isinstance(value, gast.BinOp) \
                        and isinstance(value.op, (gast.Add, gast.Sub)) \
                        and isinstance(value.left, gast.Name) and value.left.id == target \
                        and target not in _loads(value.right):
                    found = _lazy_class(value.right, classes, {}, {}, primals)
                    if found is not None and found.shape in (SCALAR, owned[target]):
                        for n in _loads(value.right):
                            if n not in _arithmetic_loads(value.right):
                                owned.pop(n, None)
                        block[k] = anno.copyanno(s, gast.AugAssign(target=s.targets[0], op=value.op,
                                                                   value=value.right), *Static)
                        changed = True
                        continue
                for n in _loads(value) - _arithmetic_loads(value):
                    owned.pop(n, None)
                owned.pop(target, None)
                if is_rt_call(value, "owned_zeros") and len(value.args) == 1 \
                        and isinstance(value.args[0], gast.Name):
                    shape = classes.get(value.args[0].id)
                else:
                    found = _lazy_class(value, classes, {}, {}, primals)
                    shape = found.shape if found is not None and found.real else None
                if shape not in (None, SCALAR, UNKNOWN) and classes.get(target, shape) == shape \
                        and _arithmetic_loads(value) >= _loads(value) - {"xp"}:
                    owned[target] = shape
            else:
                for n in _refs(s):
                    owned.pop(n, None)
    return changed


def release_dead(body, keep):
    """``body`` with ``a = b = None`` after the top-level statement that last reads
    ``a`` and ``b``: a value (a saved array, a finished temporary) is freed when it
    is dead, not when the function returns. Names in ``keep`` (parameters) stay.
    Nothing is released after the last statement before the return."""
    _memo.clear()
    last = {}
    bound = set()
    for k, s in enumerate(body):
        for n in _refs(s):
            last[n] = k
        bound |= _stores(s)
    dead_after = {}
    for n, k in last.items():
        if n in bound and n not in keep:
            dead_after.setdefault(k, []).append(n)
    out = []
    final = len(body) - 2 if body and isinstance(body[-1], gast.Return) else len(body) - 1
    for k, s in enumerate(body):
        out.append(s)
        if k < final and dead_after.get(k):
            names = sorted(dead_after[k])
            out += replace(" = ".join(names) + " = None")
    _memo.clear()
    return out


def walk_statements(body):
    """Every statement of ``body``, nested blocks included, in source order."""
    for s in body:
        yield s
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                yield from walk_statements(inner)


def _add_at(s, d):
    """``d = rt.add_at(d, x, index, g)``: returns (x, index, g), or None."""
    v = getattr(s, "value", None)
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
            and s.targets[0].id == d and isinstance(v, gast.Call) and not v.keywords \
            and isinstance(v.func, gast.Attribute) and isinstance(v.func.value, gast.Name) \
            and v.func.value.id == "rt" and v.func.attr == "add_at" and len(v.args) == 4 \
            and isinstance(v.args[0], gast.Name) and v.args[0].id == d \
            and isinstance(v.args[1], gast.Name):
        return v.args[1:]
    return None


def _static_int_index(index, indices):
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    for item in items:
        if isinstance(item, gast.Constant) and type(item.value) is int:
            continue
        if isinstance(item, gast.Name) and item.id in indices:
            continue
        return None
    return len(items)


def own_index_buffers(body, buffers, indices):
    """An adjoint only ever added into at integer positions becomes an array the sweep
    owns from the start: ``dx = rt.add_at(dx, x, i, g)`` is written ``dx[i] += g``.

    Args:
        buffers: adjoint name -> (parameter, its rank) for parameters never rebound,
            whose arguments are arrays of that rank (the gradient's specialisation).
        indices: names that always hold Python or NumPy integers (analysis/ranks.py).

    The adjoint may be read nowhere but in those additions and the final return,
    so no other name can see it change. Returns the names the rewrite relied on.
    """
    used = set()
    for d, (x, rank) in buffers.items():
        zero, updates, ok = None, [], True
        for block in _blocks(body):
            for k, st in enumerate(block):
                if isinstance(st, gast.Return):
                    continue
                if d not in _refs(st):
                    continue
                parts = _add_at(st, d)
                n_index = parts and _static_int_index(parts[1], indices)
                if parts is not None and parts[0].id == x and d not in _loads(parts[2]) \
                        and n_index and n_index <= rank:
                    updates.append((block, st, parts))
                elif block is body and zero is None and isinstance(st, gast.Assign) \
                        and _is_zero(st.value) and st.targets[0].id == d:
                    zero = st
                elif isinstance(st, (gast.If, gast.For, gast.While)) and d not in _loads_here(st):
                    continue   # the uses are inside; the inner blocks are visited too
                else:
                    ok = False
        if not (ok and zero is not None and updates):
            continue
        zero.value = replace_expr("rt.owned_zeros(X)", X=x)
        for block, st, (_, index, g) in updates:
            update = gast.AugAssign(
                target=gast.Subscript(value=gast.Name(id=d, ctx=gast.Load(), annotation=None,
                                                      type_comment=None),
                                      slice=index, ctx=gast.Store()),
                op=gast.Add(), value=g)
            block[block.index(st)] = anno.copyanno(st, update, *Static)
            used |= names_in(index)
        used.add(x)
    return used


def _loads_here(compound):
    """Names a compound statement reads in its own header (test, iterable)."""
    header = getattr(compound, "test", None) or getattr(compound, "iter", None)
    return _loads(header) if header is not None else set()


def propagate_copies(body, removable):
    """After ``a = b`` (names), later reads of ``a`` read ``b`` until either is rebound;
    ``b = b`` is dropped. Dead-code elimination then removes the copy."""
    changed = False
    for block in list(_blocks(body)):
        k = 0
        while k < len(block):
            s = block[k]
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                    and isinstance(s.value, gast.Name):
                a, b = s.targets[0].id, s.value.id
                if a == b:
                    del block[k]
                    changed = True
                    continue
                if a in removable and anno.getanno(s, Static.TAPE) is None:
                    for later in block[k + 1:]:
                        stores = _stores(later)
                        if not isinstance(later, (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)):
                            if a in stores or b in stores:
                                break
                        if a in _loads(later):
                            _rename_loads(later, a, b)
                            changed = True
                        if a in stores or b in stores:
                            break
            k += 1
    return changed


def _rename_loads(node, old, new):
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and n.id == old and isinstance(n.ctx, gast.Load):
            n.id = new
    _memo.pop(id(node), None)


def transform(body, adjoint_names, generated, classes=None, fixed=(), roots=(), buffers=None,
              indices=(), returned=None, in_place=True):
    """Optimize the backward sweep's statements ``body`` in place, to a fixed point.

    ``classes``, ``fixed``, ``roots``: shape facts (see ``drop_unbroadcasts``);
    ``buffers`` and ``indices``: see ``own_index_buffers``; ``returned``: see
    ``keep_reductions_scalar`` (None: reduction gradients are spread as they are);
    ``in_place``: run ``accumulate_in_place``.
    Returns the names whose ranks or shape classes the optimized sweep relies on.
    """
    removable = set(adjoint_names) | set(generated)
    used = drop_unbroadcasts(body, classes, fixed, roots) if classes else set()
    # The classes of the sweep's own names, inferred once the unbroadcasts are gone; the
    # later rewrites keep every name within its class (a scalar stands for its broadcast).
    sweep_classes = infer_sweep_classes(body, classes, fixed)[0] if classes else None
    if classes and returned is not None:
        used |= keep_reductions_scalar(body, sweep_classes, set(fixed) - set(adjoint_names),
                                       returned)
    changed = True
    while changed:
        _memo.clear()
        inplace = _inplace_targets(body)
        changed = fold_first_contributions(body, set(adjoint_names), inplace)
        changed |= fold_loop_carried(body, set(adjoint_names), inplace)
        changed |= propagate_copies(body, removable - inplace)
        _memo.clear()
        changed |= eliminate_dead(body, removable, set())
    _memo.clear()
    if buffers:
        used |= own_index_buffers(body, buffers, indices)
    _memo.clear()
    if merge_repeated_contributions(body):
        _memo.clear()
    if classes and in_place:
        if accumulate_in_place(body, sweep_classes, set(fixed) - set(adjoint_names)):
            used |= set(sweep_classes)   # conservatively: any class may have decided it
    _memo.clear()
    return used


# ----- The forward sweep when only gradients are asked for -----

def scalar_output(forward, rank_map):
    """The forward sweep returns a scalar: its seed is 1 when none is given."""
    out = forward.body[-1].value.elts[0]
    return isinstance(out, gast.Name) and rank_map.get(out.id) in (0, "i")


def forward_for_gradient(forward, rank_map, classes):
    """A copy of the forward sweep that returns None for the output and computes
    only what the backward sweep reads, or None when that saves nothing.

    ``grad`` does not return the function's value, and a scalar output's seed is 1
    whatever the value is, so the work that only led to the output can go: the sum
    in ``np.sum(f(x))``, and every value its adjoint does not read. Only operations
    that cannot raise are dropped (elementwise operations on operands whose shapes
    provably broadcast, full reductions), so an error the function would raise is
    still raised.
    """
    if not scalar_output(forward, rank_map):
        return None
    fg = clone(forward)
    fg.name = forward.name + "_for_grad"
    fg.body[-1].value.elts[0] = gast.Constant(value=None, kind=None)
    removable = set(classes)

    def pure(value):
        return _safe_class(value, classes) is not None

    _memo.clear()
    removed = eliminate_dead(fg.body, removable, set(), pure)
    _memo.clear()
    return fg if removed else None


def _safe_class(e, classes):
    """The shape class of ``e`` when evaluating it cannot raise, else None."""
    if isinstance(e, gast.Constant):
        return SCALAR if type(e.value) in (int, float, bool) else None
    if isinstance(e, gast.Name):
        c = classes.get(e.id)
        return None if c in (None, UNKNOWN) else c
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _safe_class(e.operand, classes)
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult, gast.Div,
                                                         gast.Pow)):
        c = _combine_classes(_safe_class(e.left, classes), _safe_class(e.right, classes))
        # Python floats raise on x / 0 and on overflow; arrays (a class of their own) do not.
        return c if isinstance(e.op, (gast.Add, gast.Sub, gast.Mult)) or c != SCALAR else None
    if isinstance(e, gast.Call) and not e.keywords:
        primitive = anno.getanno(e, Static.PRIMITIVE)
        args = [_safe_class(a, classes) for a in e.args]
        if isinstance(primitive, numpy.ufunc) and primitive.nout == 1 and len(args) == primitive.nin:
            return _combine_classes(*args)
        if primitive in (numpy.sum, numpy.mean) and len(args) == 1 and args[0] is not None:
            return SCALAR
    return None
