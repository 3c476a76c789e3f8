"""Repeated contributions merged: two contributions of one expression in a row
become one, doubled. The rule for ``a * b`` applied to ``x * x`` gives

    dx = dx_times_x * x                ->    dx = dx_times_x * x * 2
    dx += dx_times_x * x

Only arithmetic on names that the expression does not assign is merged: a call may
have effects, and an expression reading its target sees the first contribution.
"""

import gast

from srcgrad.ast_util import accumulation, blocks
from srcgrad.optimize.exprs import arithmetic_loads


def run(body, facts):
    changed = False
    for block in blocks(body):
        k = 0
        while k + 1 < len(block):
            if not _adds_to(block[k + 1], _target(block[k])):
                k += 1   # (most pairs: not worked out unless the second may merge)
                continue
            first = contribution(block[k], facts=facts)
            second = first and contribution(block[k + 1], first[0], facts)
            if second and second[2] != "assign" and gast.dump(first[1]) == gast.dump(second[1]):
                doubled = gast.BinOp(left=first[1], op=gast.Mult(), right=gast.Constant(value=2, kind=None))
                s = block[k]
                if first[2] == "add":
                    s.value.right = doubled
                else:
                    s.value = doubled
                facts.names.forget_edited(s)
                del block[k + 1]
                changed = True
                continue
            k += 1
    return changed


def _target(s):
    """The name ``s`` binds when it is ``d = E`` or ``d += E``, else None."""
    if s.__class__ is gast.AugAssign:
        return s.target.id if s.target.__class__ is gast.Name else None
    if s.__class__ is gast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is gast.Name:
        return s.targets[0].id
    return None


def _adds_to(s, d):
    """``s`` is ``d += E`` or ``d = d + E`` (its reads aside): the only second statement of
    a pair ``run`` merges (``contribution`` of kind "aug" or "add")."""
    if d is None:
        return False
    if s.__class__ is gast.AugAssign:
        return s.op.__class__ is gast.Add and s.target.__class__ is gast.Name and s.target.id == d
    value = getattr(s, "value", None)
    return _target(s) == d and value.__class__ is gast.BinOp and value.op.__class__ is gast.Add \
        and value.left.__class__ is gast.Name and value.left.id == d


def contribution(s, d=None, facts=None):
    """(target, added expression, kind) of ``d = E``, ``d = d + E`` or ``d += E``, else None."""
    if isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add) and isinstance(s.target, gast.Name):
        target, value, kind = s.target.id, s.value, "aug"
    elif isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
        target, value, kind = s.targets[0].id, s.value, "assign"
        if accumulation(s, facts) is not None:
            value, kind = value.right, "add"
    else:
        return None
    loads = facts.loads(value)
    if (d is not None and target != d) or target in loads or arithmetic_loads(value) != loads:
        return None
    return target, value, kind
