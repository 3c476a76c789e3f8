"""Values the reverse sweep recomputes instead of taping them.

A loop body's ``price_item = price[t]`` (or W2's ``ii = x[i]``, and a branch
condition ``cond = ii > 0`` made of such values) needs no push and pop: the
reverse sweep runs the same iterations backwards with the index restored, so
each reversed iteration begins by computing the value again. This is exactly
sound only when everything the value is made of holds the same value there as it
did in the forward sweep, so a binding ``x = E`` at the top level of a ``for``
loop's body is recomputed only if

* the function writes nothing in place (no indexed write, ``+=`` on a name, or
  ``append``: analysis/aliasing.py's list of in-place writes), so no array or list
  it reads can change, through any alias;
* every name ``E`` reads is stable through the rest of the iteration: the target
  of an enclosing ``for`` loop whose body never rebinds it (the reversed loop
  restores it), a name bound once outside any loop (a parameter, ``n = len(x)``),
  or a value recomputed before it in the same body;
* ``E`` is a cheap read: a subscript ``B[I]`` of such names and constants (slices
  included), a transpose ``B.T``, or, for a value read only as an ``if`` test, a
  comparison or ``not``;
* ``x`` is bound only there, and read only by the statements after it in the same
  body: the reversed iteration reads it only after it was recomputed.
"""

import gast

from srcgrad import anno
from srcgrad.analysis.aliasing import _written as written_in_place
from srcgrad.ast_util import reads, rewrite_blocks
from srcgrad.templates import clone
from srcgrad import optimize
from srcgrad.transform import tape
from srcgrad import ast_util

Static = anno.Static


def find(node, excluded, store_counts, loads=None):
    """The recomputable bindings of FunctionDef ``node``: id(for loop) -> its body's
    recomputable assignments, in order. ``excluded``: names never recomputed (wrt
    locals, hooked names); ``loads``: ``tape.load_counts(node.body)``, when known."""
    statements = list(optimize.walk_statements(node.body))
    if any(written_in_place(s) for s in statements):
        return {}
    in_loops = set()
    for s in statements:
        if isinstance(s, (gast.For, gast.While)):
            in_loops |= _stored(s)
    stable = {n for n, count in store_counts.items() if count == 1 and n not in in_loops}
    loads, tests = tape.load_counts(node.body) if loads is None else loads, {}
    for s in statements:
        if isinstance(s, (gast.If, gast.While)) and isinstance(s.test, gast.Name):
            tests[s.test.id] = tests.get(s.test.id, 0) + 1
    found = {}

    def visit(body, targets):
        """``targets``: names stable in ``body``: enclosing loops' targets they never rebind,
        and the values enclosing loops recompute (bound once, before any of their reads)."""
        for s in body:
            if isinstance(s, gast.For):
                stored = _stored_in(s.body)
                inner = {t for t in targets if t not in stored}
                if isinstance(s.target, gast.Name) and s.target.id not in stored:
                    inner.add(s.target.id)
                here = _in_body(s.body, inner | stable, excluded, store_counts, loads, tests)
                if here:
                    found[id(s)] = here
                visit(s.body, inner | {b.targets[0].id for b in here})
            elif isinstance(s, (gast.If, gast.While)):
                visit(s.body, targets)
                visit(s.orelse, targets)

    visit(node.body, set())
    return found


def _in_body(body, stable, excluded, store_counts, loads, tests):
    here = []
    stable = set(stable)
    for k, s in enumerate(body):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)):
            continue
        x = s.targets[0].id
        if x in excluded or x in stable or store_counts.get(x) != 1:
            continue
        value = s.value
        if isinstance(value, gast.Subscript):
            cheap = _leaf(value.value, stable) and isinstance(value.value, gast.Name) \
                and _index(value.slice, stable)
        elif isinstance(value, gast.Attribute):   # W.T in an RNN's loop: a view, no copy
            cheap = value.attr in ("T", "mT") and _leaf(value.value, stable) \
                and isinstance(value.value, gast.Name)
        elif isinstance(value, gast.Compare):
            cheap = loads.get(x, 0) == tests.get(x, 0) and all(
                _leaf(e, stable) for e in [value.left] + value.comparators)
        elif isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.Not):
            cheap = loads.get(x, 0) == tests.get(x, 0) and _leaf(value.operand, stable)
        else:
            cheap = False
        if cheap and tape.load_counts(body[k + 1:]).get(x, 0) == loads.get(x, 0):
            here.append(s)
            stable.add(x)
    return here


def _leaf(e, stable):
    return (isinstance(e, gast.Name) and e.id in stable) or (
        isinstance(e, gast.Constant) and type(e.value) in (int, float, bool, str, type(None)))


def _index(e, stable):
    if isinstance(e, gast.Slice):
        return all(p is None or _leaf(p, stable) for p in (e.lower, e.upper, e.step))
    if isinstance(e, gast.Tuple):
        return all(_index(p, stable) for p in e.elts)
    return _leaf(e, stable)


def _stored(loop):
    """Names a loop binds: its target and what its body binds."""
    names = _stored_in(loop.body)
    if isinstance(loop, gast.For):
        names |= {n.id for n in ast_util.walk(loop.target) if isinstance(n, gast.Name)}
    return names


def _stored_in(body):
    return {n.id for s in body for n in ast_util.nodes_of(s, gast.Name)
            if not isinstance(n.ctx, gast.Load)}


def statements(bindings, origin):
    """The reverse sweep's recomputations of ``bindings`` (forward assignments), marked, and
    tagged with the Origin of their loop (``origin``): the reversed loop computes them."""
    out = []
    for s in bindings:
        new = gast.Assign(targets=[clone(s.targets[0])], value=clone(s.value), type_comment=None)
        anno.setanno(new, Static.RECOMPUTE, s.targets[0].id)
        anno.setanno(new, Static.ORIGIN, origin)
        out.append(new)
    return out


def prune(rev):
    """Drop the recomputations of values nothing else in ``rev`` reads; returns the names
    still recomputed (the reverse sweep binds them itself: they are not saved)."""
    while True:
        marked = [s for s in optimize.walk_statements(rev) if anno.hasanno(s, Static.RECOMPUTE)]
        if not marked:   # (nothing recomputed: no reads to collect)
            return set()
        read = reads(*rev)
        dead = {id(s) for s in marked if anno.getanno(s, Static.RECOMPUTE) not in read}
        if not dead:
            return {anno.getanno(s, Static.RECOMPUTE) for s in marked}
        _drop(rev, dead)


def _drop(body, dead):
    body[:] = [s for s in body if id(s) not in dead]
    for s in body:
        rewrite_blocks(s, lambda inner: _drop(inner, dead), keep_body=True)
    return body
