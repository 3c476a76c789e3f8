"""Loop-invariant arithmetic of constants computed once, before the loop.

    dt = 0.25                                    dt = 0.25
    C = 10.0                                     C = 10.0
    for t in range_t:              ->            dt_over_C = dt / C
        dt_over_C = dt / C                       for t in range_t:
        T = T + dt_over_C * ...                      T = T + dt_over_C * ...

Hoisted only when evaluating the statement early can neither raise nor change a
value, so that a loop that never runs (or stops before it) is no problem:

* it is ``t = E``, directly in the loop's body, with ``t`` a name the compiler made
  (``facts.removable``) that nothing else in the loop binds, and whose value before
  the loop nothing reads (analysis/liveness.py: not the loop's header, not an earlier
  statement of the body, not the code after a loop that ran no iteration, nor an
  enclosing loop's next iteration), but the final return, which hands the values on
  to the backward sweep;
* ``E`` is arithmetic (``+ - * / // % **``, signs) of numeric constants and of names
  bound once in the whole function, to a numeric literal, by a statement already run
  when the loop starts (one of an enclosing block, before it): its value is known,
  and computing it now (no division by zero, no overflow) shows it cannot raise.

A loop nested in another is hoisted out of again, a round later, when the outer loop
qualifies too. The ``t = None`` the sweep began with (a value to save if the loop ran
no iteration) is dead once ``t`` is computed before the loop, and goes.
"""

import operator

import gast

from srcgrad import anno
from srcgrad.analysis import liveness
from srcgrad.ast_util import assigned_name, child_blocks, walk_statements
from srcgrad.optimize import dead
from srcgrad import ast_util

Static = anno.Static

_OPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
        gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
        gast.Pow: operator.pow}
_SIGNS = {gast.USub: operator.neg, gast.UAdd: operator.pos}


def run(body, facts):
    changed = False
    while True:
        bindings = _bindings(body, facts.params)
        literals = {}   # id(statement) -> (name, value): ``name = <literal>``, its only binding
        for s in walk_statements(body):
            t = assigned_name(s)
            if t is not None and len(bindings.get(t, ())) == 1:
                value = _literal(s.value)
                if value is not None:
                    literals[id(s)] = (t, value)
        if not _candidates(body, facts, {name for name, _ in literals.values()}):
            return changed
        # What the forward sweep returns after its output is what it hands on (to the
        # backward sweep, which reads a loop's values only where that loop ran).
        final = body[-1] if body and isinstance(body[-1], gast.Return) else None
        live = liveness.analyze(body, set(), lambda s, _: s is final)
        moved = set()
        into_a_loop = _hoist(body, {}, literals, live, facts, moved, False)
        if not moved:
            return changed
        # The ``t = None`` that gave a value to save when the loop ran no iteration is dead.
        dead.eliminate(body, moved, set(), lambda v: isinstance(v, gast.Constant) and v.value is None)
        changed = True
        if not into_a_loop:   # else the enclosing loop may give it up too
            return changed


def _candidates(body, facts, literal_names, in_loop=False):
    """Whether some loop of ``body`` holds ``t = E`` with ``t`` the compiler's and ``E``
    arithmetic of constants and ``literal_names`` (before any analysis runs)."""
    for s in body:
        if in_loop and assigned_name(s) in facts.removable and _arithmetic(s.value, literal_names):
            return True
        loop = in_loop or isinstance(s, (gast.For, gast.While))
        if any(_candidates(inner, facts, literal_names, loop) for inner in child_blocks(s)):
            return True
    return False


def _arithmetic(e, names):
    if isinstance(e, gast.Name):
        return e.id in names
    if isinstance(e, gast.Constant):
        return True
    if isinstance(e, gast.UnaryOp):
        return type(e.op) in _SIGNS and _arithmetic(e.operand, names)
    return isinstance(e, gast.BinOp) and type(e.op) in _OPS and _arithmetic(e.left, names) \
        and _arithmetic(e.right, names)


def _hoist(block, known, literals, live, facts, moved, in_loop):
    """Hoist out of the loops of ``block`` (and of blocks nested in it); ``known``: the
    literal names bound before ``block`` starts; ``moved`` collects the names hoisted;
    ``in_loop``: ``block`` is inside a loop. Returns whether a statement moved into a
    block inside a loop."""
    known = dict(known)
    into_a_loop = False
    k = 0
    while k < len(block):
        s = block[k]
        if id(s) in literals:
            name, value = literals[id(s)]
            known[name] = value
        if isinstance(s, (gast.For, gast.While)):
            for h in _invariants(s, known, live, facts):
                s.body.remove(h)
                block.insert(k, h)
                k += 1
                moved.add(h.targets[0].id)
                into_a_loop |= in_loop
            if not s.body:
                s.body.append(gast.Pass())
        loop = in_loop or isinstance(s, (gast.For, gast.While))
        for inner in child_blocks(s):
            into_a_loop |= _hoist(inner, known, literals, live, facts, moved, loop)
        k += 1
    return into_a_loop


def _invariants(loop, known, live, facts):
    """The statements of ``loop``'s body that may run once, before it: ``t = E`` where
    ``t`` is bound nowhere else in the loop and its value before the loop is never read
    (not live there), and ``E``'s value is known."""
    found = []
    for s in loop.body:
        t = assigned_name(s)
        if t is not None and t in facts.removable and anno.getanno(s, Static.TAPE) is None \
                and t not in live.live_before(loop) and _value(s.value, known) is not None \
                and sum(1 for n in ast_util.walk(loop) if isinstance(n, gast.Name) and n.id == t
                        and not isinstance(n.ctx, gast.Load)) == 1:
            found.append(s)
    return found


def _bindings(body, params):
    """name -> the statements that bind it (a parameter: ``None``)."""
    found = {p: [None] for p in params}
    for s in walk_statements(body):
        parts = [s.target] if isinstance(s, gast.For) else [] if isinstance(s, (gast.If, gast.While)) \
            else [s]
        for part in parts:
            for n in ast_util.nodes_of(part, gast.Name):
                if not isinstance(n.ctx, gast.Load):
                    found.setdefault(n.id, []).append(s)
    return found


def _literal(value):
    """The number ``value`` is written as (``0.25``, ``-3``), else None."""
    if isinstance(value, gast.UnaryOp) and type(value.op) in _SIGNS:
        inner = _literal(value.operand)
        return None if inner is None else _SIGNS[type(value.op)](inner)
    if isinstance(value, gast.Constant) and type(value.value) in (int, float):
        return value.value
    return None


def _value(e, known):
    """The value of ``e``, computed now, when it is arithmetic of numeric constants and
    ``known`` names and computing it raises nothing; else None."""
    if isinstance(e, gast.Name):
        return known.get(e.id)
    if isinstance(e, gast.Constant):
        return e.value if type(e.value) in (int, float) else None
    if isinstance(e, gast.UnaryOp) and type(e.op) in _SIGNS:
        inner = _value(e.operand, known)
        return None if inner is None else _SIGNS[type(e.op)](inner)
    if isinstance(e, gast.BinOp) and type(e.op) in _OPS:
        left, right = _value(e.left, known), _value(e.right, known)
        if left is None or right is None:
            return None
        if isinstance(e.op, gast.Pow) and not (abs(right) <= 64 and abs(left) <= 2 ** 16):
            return None   # not computed here: an integer power could take long
        try:
            result = _OPS[type(e.op)](left, right)
        except (ArithmeticError, ValueError):
            return None
        return result if type(result) in (int, float) else None   # (-1) ** 0.5 is complex
    return None
