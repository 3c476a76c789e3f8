"""In-place accumulation: ``d = d + g`` becomes ``d += g`` where ``d`` holds an array
the sweep made and no other name can see, of the shape ``g`` broadcasts into: no
new array per contribution (W6's ``dx`` gets four).

    dx = dsin_x * xp.cos(x)           dx = dsin_x * xp.cos(x)
    dx = dx + dexp * exp_x    ->      dx += dexp * exp_x

``d`` owns its array from an assignment of an arithmetic result that reads a primal
of its shape class (a new array of that shape) or ``rt.owned_zeros``, in the same
block, until anything but arithmetic reads it (a copy, a call, a hook, a nested
block) or it is rebound otherwise. Runs when the classes are known and
``facts.in_place`` is set.
"""

import gast

from srcgrad import anno
from srcgrad.analysis.ranks import SCALAR, UNKNOWN
from srcgrad.ast_util import assigned_name, blocks, is_rt_call
from srcgrad.optimize.exprs import arithmetic_loads
from srcgrad.optimize.reductions import lazy_class

Static = anno.Static


def run(body, facts):
    if not (facts.classes and facts.in_place):
        return False
    changed = accumulate_in_place(body, facts.sweep_classes, facts.primals, facts)
    if changed:
        facts.used |= set(facts.sweep_classes)   # conservatively: any class may have decided it
    return changed


def accumulate_in_place(body, classes, primals, facts):
    changed = False
    for block in blocks(body):
        # Only a name some statement of the block accumulates into (``_accumulates``'s
        # form, its reads aside) is ever rewritten: what another name owns, and which
        # names stop owning, decide nothing, and are not worked out.
        accumulated = _accumulated(block)
        if not accumulated:
            continue
        owned = {}   # name -> the shape class of the array it owns
        for k, s in enumerate(block):
            target = assigned_name(s)
            if target is None:
                if owned:
                    for n in facts.refs(s):
                        owned.pop(n, None)
                continue
            value = s.value
            if target in owned and _accumulates(value, target, facts):
                found = lazy_class(value.right, classes, {}, {}, primals)
                if found is not None and found.shape in (SCALAR, owned[target]):
                    if not facts.loads(value.right).isdisjoint(owned):
                        for n in facts.loads(value.right) - arithmetic_loads(value.right):
                            owned.pop(n, None)
                    block[k] = anno.copyanno(s, gast.AugAssign(target=s.targets[0], op=value.op,
                                                               value=value.right), *Static)
                    changed = True
                    continue
            if owned and not facts.loads(value).isdisjoint(owned):
                for n in facts.loads(value) - arithmetic_loads(value):
                    owned.pop(n, None)
            owned.pop(target, None)
            if target not in accumulated:
                continue
            shape = _owned_class(value, classes, primals, facts)
            if shape not in (None, SCALAR, UNKNOWN) and classes.get(target, shape) == shape:
                owned[target] = shape
    return changed


def _accumulated(block):
    """The targets of the statements of ``block`` of the form ``d = d + g`` or ``d = d - g``."""
    found = set()
    for s in block:
        if s.__class__ is gast.Assign and len(s.targets) == 1:
            target, value = s.targets[0], s.value
            if target.__class__ is gast.Name and value.__class__ is gast.BinOp \
                    and value.op.__class__ in (gast.Add, gast.Sub) \
                    and value.left.__class__ is gast.Name and value.left.id == target.id:
                found.add(target.id)
    return found


def _accumulates(value, target, facts):
    """``value`` is ``target + g`` or ``target - g`` with ``g`` not reading ``target``."""
    return (isinstance(value, gast.BinOp) and isinstance(value.op, (gast.Add, gast.Sub))
            and isinstance(value.left, gast.Name) and value.left.id == target
            and target not in facts.loads(value.right))


def _owned_class(value, classes, primals, facts):
    """The shape class of the new array ``value`` makes (read only by arithmetic), or None."""
    if is_rt_call(value, "owned_zeros") and len(value.args) == 1 \
            and isinstance(value.args[0], gast.Name):
        shape = classes.get(value.args[0].id)
    else:
        found = lazy_class(value, classes, {}, {}, primals)
        shape = found.shape if found is not None and found.real else None
    if arithmetic_loads(value) >= facts.loads(value) - {"xp"}:
        return shape
    return None
