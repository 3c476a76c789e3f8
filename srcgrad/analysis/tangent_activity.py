"""Which names of a tangent program carry a tangent: activity (analysis/activity.py)
refined for the tapes of a gradient read again by forward mode (transform/forward.py)."""

import gast

from srcgrad import anno, runtime
from srcgrad.analysis import activity
from srcgrad.anno import Static
from srcgrad import ast_util


def _names(node):
    return {n.id for n in ast_util.walk(node) if isinstance(n, gast.Name)} if node is not None else set()


def _tape_pop_of(s):
    """``(x, L)`` for the statement ``x = rt.tape_pop(L)``, else None."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
            and isinstance(s.value, gast.Call) and len(s.value.args) == 1 \
            and isinstance(s.value.args[0], gast.Name) \
            and anno.getanno(s.value, Static.PRIMITIVE) is runtime.tape_pop:
        return s.targets[0].id, s.value.args[0].id
    return None


def _paired_tapes(body):
    """Lists used only as a tape whose pushes and pops pair by name: every push is
    ``L.append(x)`` of a name, every pop ``x = rt.tape_pop(L)``, and the names pushed
    are the names popped. A gradient's tape pushes the value a statement overwrites
    and pops it back into the same name (transform/tape.py); a pushed slice, an
    ``rt.save`` of an item or a pop into a temporary breaks the pairing."""
    pushes, pops, lists, other = {}, {}, set(), set()
    for s in ast_util.walk(gast.Module(body=list(body), type_ignores=[])):
        if not isinstance(s, gast.stmt):
            continue
        pop = _tape_pop_of(s)
        if pop is not None:
            pops.setdefault(pop[1], set()).add(pop[0])
            continue
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) \
                and isinstance(s.value.func, gast.Attribute) and s.value.func.attr == "append" \
                and isinstance(s.value.func.value, gast.Name):
            tape, args = s.value.func.value.id, s.value.args
            if len(args) == 1 and not s.value.keywords and isinstance(args[0], gast.Name):
                pushes.setdefault(tape, set()).add(args[0].id)
            else:
                other.add(tape)
            other |= set().union(*[_names(a) for a in args]) if args else set()
            continue
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and isinstance(s.value, gast.List) and not s.value.elts:
            lists.add(s.targets[0].id)
            continue
        for field in ("test", "iter", "value", "targets", "target", "msg", "exc"):
            part = getattr(s, field, None)
            for p in part if isinstance(part, list) else [part]:
                if isinstance(p, gast.AST):
                    other |= _names(p)
    return {L for L in lists & set(pushes) if L not in other and pushes[L] == pops.get(L)}


def carriers(body, active, wrt, kinds=None):
    """``(names, tapes)``: the ``active`` names that may carry a nonzero tangent, and the
    tapes whose pushes and pops of the others go without one.

    Activity (analysis/activity.py) is flow-insensitive: a value popped from a tape
    that also holds values with tangents is active, so a branch condition the
    gradient pops back (``cond = rt.tape_pop(tape)``) would get ``rt.tangent_zero``.
    On a tape whose pushes and pops pair by name (``_paired_tapes``) the pop restores
    what the same name held when pushed, so it carries a tangent only when another
    binding of the name does: these pops are left out of the flow, and the names
    reached from ``wrt`` without them carry tangents. Their pushes and pops go
    without a tangent, on both sides, so the tangent tape stays in step.
    """
    paired = _paired_tapes(body)
    skip = set()
    for s in ast_util.walk(gast.Module(body=list(body), type_ignores=[])):
        pop = _tape_pop_of(s) if isinstance(s, gast.stmt) else None
        if pop is not None and pop[1] in paired:
            skip.add(pop)
    facts = activity._Facts(kinds)
    facts.walk(body)
    edges = {}
    for target, deps in facts.flows:
        for dep in deps:
            if (target, dep) not in skip or deps != {dep}:
                edges.setdefault(dep, set()).add(target)
    found = activity._fixpoint(set(wrt), edges) & set(active)
    return frozenset(found), frozenset(paired)
