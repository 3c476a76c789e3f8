"""Sinking into branches: a statement after an ``if`` that does nothing when a name is
zero moves into the branches where the name may be nonzero. W2's index buffer:

    for i in r:                           for i in r:
        if cond:                              if cond:
            dii = dresult * result                dii = dresult * result
        cond = pop()              ->              dx[i] += dii
        dx[i] += dii                              dii = 0.0
        dii = 0.0                             cond = pop()
                                                           (then the reset is dead)

The statements that vanish for a zero ``d``: ``x[i] += d``, ``x += d`` and ``d = 0.0``
(``d`` certainly ``0.0`` on entry to a branch that does not bind it; see zeros.py).
A statement moves only across tape pops of names it does not mention (a pop reads
and binds nothing else), and only when some branch drops it, so no code is added.
"""

import gast

from srcgrad.ast_util import assigned_name, blocks, is_zero
from srcgrad.optimize.zeros import known_zeros
from srcgrad.templates import clone


def run(body, facts):
    changed = False
    if not any(_may_sink(block) for block in blocks(body)):
        return False   # (most sweeps: the zeros' analysis is not made)
    while True:   # statements are moved, not edited: their name sets stay
        before = known_zeros(body, facts.adjoints - facts.inplace, facts.names)
        if not any(_sink_one(block, before, facts) for block in blocks(body)):
            return changed
        changed = True


def _vanishes_for(s):
    """The name whose zero makes ``s`` do nothing, or None."""
    if isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add) and isinstance(s.value, gast.Name) \
            and isinstance(s.target, (gast.Name, gast.Subscript)):
        return s.value.id
    target = assigned_name(s)
    if target is not None and is_zero(s.value):
        return target
    return None


def _is_pop(s):
    target = assigned_name(s)
    v = getattr(s, "value", None)
    return target is not None and isinstance(v, gast.Call) and isinstance(v.func, gast.Name) \
        and v.func.id == "pop" and not v.args and not v.keywords


def _may_sink(block):
    """Some ``if`` of ``block`` is followed, past tape pops, by a statement that vanishes
    for a zero name: the only places ``_sink_one`` moves a statement from."""
    for k, branch in enumerate(block):
        if branch.__class__ is gast.If:
            j = k + 1
            while j < len(block) and _is_pop(block[j]):
                j += 1
            if j < len(block) and _vanishes_for(block[j]) is not None:
                return True
    return False


def _sink_one(block, before, facts):
    for k, branch in enumerate(block):
        if not isinstance(branch, gast.If) or id(branch) not in before:
            continue
        j = k + 1
        while j < len(block) and _is_pop(block[j]):
            j += 1
        if j == len(block):
            continue
        s = block[j]
        d = _vanishes_for(s)
        if d is None or d not in before[id(branch)]:
            continue
        names = facts.refs(s)
        if any(names & facts.refs(t) for t in block[k + 1:j]):
            continue
        zero = [not any(d in facts.stores(t) for t in inner) for inner in (branch.body, branch.orelse)]
        if not any(zero):
            continue
        for inner, is_zero_there in zip((branch.body, branch.orelse), zero):
            if not is_zero_there:
                inner.append(clone(s))
        del block[j]
        return True
    return False
