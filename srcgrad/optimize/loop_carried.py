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

from srcgrad.ast_util import blocks, is_accumulation, is_zero_assign, own_parts, walk_statements


def run(body, facts):
    changed = False
    only = facts.only   # the names to look at (driver.py), None: all
    for block in blocks(body):
        if block is body:
            continue
        firsts, lasts = {}, {}
        for s in block:
            for n in (facts.refs(s) if only is None else facts.names.refs_among(s, only)):
                firsts.setdefault(n, s)
                lasts[n] = s
        before_loop = None   # name -> the last statement before the loop that holds it
        not_only_zeroed = None   # names something outside the block does more than zero
        for d in sorted((facts.adjoints - facts.inplace) & set(firsts)):
            first, last = firsts[d], lasts[d]
            if first is last or not is_accumulation(first, d, facts.names) \
                    or not is_zero_assign(last, d):
                continue
            if before_loop is None:
                before_loop = _before_loop(body, block, facts)
            if not is_zero_assign(before_loop.get(d), d):
                if not_only_zeroed is None:   # (its rewrites are inside the block)
                    not_only_zeroed = _not_only_zeroed_outside(body, block, facts)
                if d in not_only_zeroed:
                    continue
            facts.touch(first)
            first.value = first.value.right
            facts.names.forget(first)   # its refs stay (it still binds d): firsts, lasts hold
            changed = True
    return changed


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
