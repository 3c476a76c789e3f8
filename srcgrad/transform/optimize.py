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

from srcgrad import anno
from srcgrad.analysis.activity import names_in

Static = anno.Static

# Runtime helpers that change one of their arguments or call user code.
_EFFECTFUL = {"add_at", "zero_grad_at", "run_hook", "function_backward", "seq_pop"}


_memo = {}  # id(node) -> (loads, stores), valid for one round of the passes


def _names(node):
    key = id(node)
    found = _memo.get(key)
    if found is None or found[0] is not node:
        loads, stores = set(), set()
        for n in gast.walk(node):
            if isinstance(n, gast.Name):
                (stores if isinstance(n.ctx, gast.Store) else loads).add(n.id)
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


def _blocks(body):
    yield body
    for s in body:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                yield from _blocks(inner)


def eliminate_dead(body, removable, live_out):
    """Drop pure assignments to ``removable`` names that nothing reads afterwards.

    Liveness runs backwards over the statements; a loop is iterated to a fixed
    point over its back edge before anything inside it is removed.
    """
    changed = [False]

    def dead(s, live):
        return (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and s.targets[0].id in removable and s.targets[0].id not in live
                and _pure(s.value) and anno.getanno(s, Static.TAPE) is None)

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
    """Inside a loop, ``d = d + g`` as the first use of ``d`` becomes ``d = g`` when
    ``d`` is zero on entry and reset to zero at the end of every iteration."""
    changed = False
    for block in _blocks(body):
        for k, loop in enumerate(block):
            if not isinstance(loop, (gast.For, gast.While)):
                continue
            inner = loop.body
            firsts, lasts = {}, {}
            for s in inner:
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
                before = next((s for s in reversed(block[:k]) if d in _refs(s)), None)
                if not (isinstance(before, gast.Assign) and isinstance(before.targets[0], gast.Name)
                        and before.targets[0].id == d and _is_zero(before.value)):
                    continue
                first.value = value.right
                changed = True
    return changed


def transform(body, adjoint_names, generated):
    """Optimize the backward sweep's statements ``body`` in place, to a fixed point."""
    removable = set(adjoint_names) | set(generated)
    changed = True
    while changed:
        _memo.clear()
        inplace = _inplace_targets(body)
        changed = fold_first_contributions(body, set(adjoint_names), inplace)
        changed |= fold_loop_carried(body, set(adjoint_names), inplace)
        changed |= eliminate_dead(body, removable, set())
    _memo.clear()
    return body
