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
    for block in blocks(body):
        if block is body:
            continue
        firsts, lasts = {}, {}
        for s in block:
            for n in facts.refs(s):
                firsts.setdefault(n, s)
                lasts[n] = s
        for d in sorted((facts.adjoints - facts.inplace) & set(firsts)):
            first, last = firsts[d], lasts[d]
            if first is last or not is_accumulation(first, d, facts.names) \
                    or not is_zero_assign(last, d):
                continue
            if not (_zero_before_loop(body, block, d, facts)
                    or _only_zeroed_outside(body, block, d, facts)):
                continue
            first.value = first.value.right
            changed = True
    return changed


def _zero_before_loop(body, block, d, facts):
    """``block`` is a loop's body and the statement before the loop that refers to ``d``
    sets it to zero."""
    for outer in blocks(body):
        for k, loop in enumerate(outer):
            if isinstance(loop, (gast.For, gast.While)) and loop.body is block:
                before = next((s for s in reversed(outer[:k]) if d in facts.refs(s)), None)
                return is_zero_assign(before, d)
    return False


def _only_zeroed_outside(body, block, d, facts):
    """Every statement outside ``block`` that refers to ``d`` assigns it zero (compound
    statements around it only through their blocks)."""
    inside = {id(s) for s in walk_statements(block)}
    for s in walk_statements(body):
        if id(s) in inside:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            if any(d in facts.refs(part) for part in own_parts(s)):
                return False
        elif d in facts.refs(s) and not (isinstance(s, gast.Assign) and len(s.targets) == 1
                                         and is_zero_assign(s, d)):
            return False
    return True
