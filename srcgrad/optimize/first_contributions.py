"""First contribution assigns: ``d = 0.0 ... d = d + g`` becomes ``d = g`` when
nothing reads ``d`` in between (no zero array is ever added).

    dx = 0.0                                  dx = rt.unbroadcast(dz * w, x)
    dx = dx + rt.unbroadcast(dz * w, x)   ->

A following ``if`` moves the zero into its branches, folded into each branch whose
first use of ``d`` is an accumulation; inside ``if rt.has_grad(g):`` (a guard) the
accumulation is assigned and the zero stays for when the guard is false.
"""

import gast

from srcgrad import anno
from srcgrad.ast_util import blocks, is_accumulation, is_zero
from srcgrad.templates import clone

Static = anno.Static


def run(body, facts):
    changed = False
    refs_among = facts.names.refs_among
    for block in blocks(body):
        # name -> the statements of the block that hold it, in order: the next use of a
        # zero's name is looked up, not searched for (linear in the block). Folding never
        # changes which names a statement holds (``d = d + g`` -> ``d = g`` still binds d).
        # Only the names of the block's zeros that may fold are looked up (``_fold_at``):
        # a statement's other names are not gone through.
        zeros = _foldable_zeros(block, facts)
        if not zeros:
            continue
        uses = {}
        for t in block:
            for n in refs_among(t, zeros):
                found = uses.get(n)
                if found is None:
                    uses[n] = [t]
                else:
                    found.append(t)
        k = 0
        while k < len(block):
            folded, removed = _fold_at(block, k, facts, uses)
            changed |= folded
            if not removed:
                k += 1
    return changed


def _foldable_zeros(block, facts):
    """The names ``d`` of the zeros ``d = 0.0`` of ``block`` that ``_fold_at`` may fold."""
    found = set()
    for s in block:
        if s.__class__ is gast.Assign and is_zero(s.value):
            target = s.targets[0]
            if target.__class__ is gast.Name:
                d = target.id
                if d in facts.adjoints and d not in facts.inplace and facts.looks_at(d):
                    found.add(d)
    return found


def _fold_at(block, k, facts, uses):
    """Fold the zero ``block[k]`` (when it is one) into the next use of its name.

    Returns (whether anything changed, whether ``block[k]`` was removed).
    """
    s = block[k]
    if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and is_zero(s.value)):
        return False, False
    d = s.targets[0].id
    if d not in facts.adjoints or d in facts.inplace or not facts.looks_at(d):
        return False, False
    nxt = _after(uses.get(d, ()), s)
    if nxt is None:
        return False, False
    if isinstance(nxt, gast.If) and d not in facts.loads(nxt.test):
        if anno.getanno(nxt, Static.GUARD):
            # `if rt.has_grad(g): d = d + e` right after `d = 0.0`: assign.
            inner = next((t for t in nxt.body if d in facts.refs(t)), None)
            if inner is not None and is_accumulation(inner, d, facts.names):
                facts.touch(inner)
                inner.value = inner.value.right
                facts.names.forget(inner, nxt)
                return True, False
            return False, False
        if _fold_into_branches(nxt, d, s, facts):
            facts.touch(s)
            facts.names.forget(nxt)
            del block[k]
            return True, True
        return False, False
    if is_accumulation(nxt, d, facts.names):
        facts.touch(nxt, s)
        nxt.value = nxt.value.right
        facts.names.forget(nxt)
        del block[k]
        return True, True
    return False, False


def _after(statements, s):
    """The statement after ``s`` in ``statements``, or None."""
    for i, t in enumerate(statements):
        if t is s:
            return statements[i + 1] if i + 1 < len(statements) else None
    return None


def _fold_into_branches(branch, d, zero, facts):
    """``d = 0.0; if c: ... d = d + g ... else: ...`` moves the zero into the branches,
    folding it into each branch whose first use of ``d`` is an accumulation.

    Returns whether any branch folded (otherwise nothing is changed).
    """
    firsts = []
    for block in (branch.body, branch.orelse):
        first = next((t for t in block if d in facts.refs(t)), None)
        firsts.append(first if first is not None and is_accumulation(first, d, facts.names) else None)
    if not any(firsts):
        return False
    for block, first in zip((branch.body, branch.orelse), firsts):
        if first is not None:
            facts.touch(first)
            first.value = first.value.right
            facts.names.forget(first)
        else:
            block.insert(0, clone(zero))
    return True
