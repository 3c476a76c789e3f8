"""Loop-carried temporaries assigned: inside a loop or branch, ``d = d + g`` as the
first use of ``d`` becomes ``d = g`` when ``d`` is zero on entry and reset to zero
at the end of the block: a loop body entered with ``d = 0.0`` just before the
loop, or a block (W8's ``if cond:`` in a loop) outside which ``d`` is only ever set
to zero.

    dh = 0.0                          dh = 0.0
    for i in ...:                     for i in ...:
        dh = dh + g(i)        ->          dh = g(i)
        ...                               ...
        dh = 0.0                          dh = 0.0
"""

import gast

from srcgrad import ast_util
from srcgrad.ast_util import (blocks, is_accumulation, is_zero, is_zero_assign, own_parts,
                              walk_statements)


def run(body, facts):
    changed = False
    only = facts.only   # the names to look at (driver.py), None: all
    outside = None   # what the sweep's statements hold (``_Holders``), made once per run
    for block in blocks(body):
        if block is body:
            continue
        firsts, lasts = {}, {}
        for s in block:
            for n in (facts.refs(s) if only is None else facts.names.refs_among(s, only)):
                firsts.setdefault(n, s)
                lasts[n] = s
        before_loop = None   # name -> the last statement before the loop that holds it
        inside = None   # the statements of the block, nested ones included
        for d in sorted((facts.adjoints - facts.inplace) & set(firsts)):
            first, last = firsts[d], lasts[d]
            if first is last or not is_accumulation(first, d, facts.names) \
                    or not is_zero_assign(last, d):
                continue
            if before_loop is None:
                before_loop = _before_loop(body, block, facts)
            if not is_zero_assign(before_loop.get(d), d):
                if outside is None:
                    outside = _Holders(body, facts)
                if inside is None:
                    inside = list(walk_statements(block))
                if outside.outside(inside, d):
                    if ast_util.CHECK_NAME_SETS:
                        _check(d in _not_only_zeroed_outside(body, block, facts), d)
                    continue
                if ast_util.CHECK_NAME_SETS:
                    _check(d not in _not_only_zeroed_outside(body, block, facts), d)
            facts.touch(first)
            first.value = first.value.right
            facts.names.forget(first)   # its refs stay (it still binds d): firsts, lasts hold
            if is_zero(first.value):   # (``d = 0.0`` now: it holds ``d`` for ``_Holders`` no more)
                outside = None
            changed = True
    return changed


class _Holders:
    """For each name, how many statements of the sweep (nested ones included) refer to it
    other than by assigning it zero, as ``_not_only_zeroed_outside`` counts them: counted
    once per run, so that the names something outside a block does more than zero are
    told for each block by counting the block's own statements (a walk of the whole
    sweep per block was most of the pass)."""

    def __init__(self, body, facts):
        self.facts = facts
        counts = self.counts = {}
        get = counts.get
        for s in walk_statements(body):
            for n in self._held(s):
                counts[n] = get(n, 0) + 1

    def _held(self, s):
        facts = self.facts
        if isinstance(s, (gast.If, gast.For, gast.While)):
            parts = own_parts(s)
            return facts.refs(parts[0]) if len(parts) == 1 else facts.refs(parts[0]) | facts.refs(parts[1])
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and is_zero_assign(s, s.targets[0].__dict__.get("id")):
            return ()
        return facts.refs(s)

    def outside(self, inside, d):
        """Whether a statement not among ``inside`` refers to ``d`` other than by zeroing."""
        return self.counts.get(d, 0) > sum(1 for s in inside if d in self._held(s))


def _check(same, d):
    if not same:
        raise ast_util.StaleNameSets(f"loop_carried: what holds {d} outside the block, counted, "
                                     "differs from the walk")


def _before_loop(body, block, facts):
    """Where ``block`` is a loop's body: name -> the last statement before the loop (in
    the loop's own block) that refers to it; else empty. ``d`` is zero on entry to the
    loop when that statement for ``d`` sets it to zero. (One walk for all names, not one
    per name: that was quadratic in a long body.)"""
    for outer in blocks(body):
        for k, loop in enumerate(outer):
            if isinstance(loop, (gast.For, gast.While)) and loop.body is block:
                last = {}
                for s in outer[:k]:
                    for n in facts.refs(s):
                        last[n] = s
                return last
    return {}


def _not_only_zeroed_outside(body, block, facts):
    """The names some statement outside ``block`` refers to other than by assigning them
    zero (compound statements around it only through their blocks): ``d`` is only ever
    zeroed outside when it is not among them. (One walk for all names: a walk per name
    was quadratic in a long loop body.)"""
    inside = {id(s) for s in walk_statements(block)}
    found = set()
    for s in walk_statements(body):
        if id(s) in inside:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            for part in own_parts(s):
                found |= facts.refs(part)
        elif not (isinstance(s, gast.Assign) and len(s.targets) == 1
                  and is_zero_assign(s, s.targets[0].__dict__.get("id"))):
            found |= facts.refs(s)   # (``d = 0.0`` holds ``d`` alone: it adds nothing)
    return found
