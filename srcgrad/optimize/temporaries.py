"""Single-use temporaries folded: a sweep temporary assigned once and read once, later
in the same block, is written into its one use, so the adjoint reads like the
expression a person would write.

    dT_low_minus_T_pow_2 = dcost * w_comfort
    dT_low_minus_T = dT_low_minus_T_pow_2 * 2 * T_low_minus_T
    dT = dT + -dT_low_minus_T
                                ->    dT = dT + -(dcost * w_comfort * 2 * T_low_minus_T)

Folded only when it cannot change a value or an effect: the definition is a pure
expression (the sweep's own arithmetic and helpers, no tape, no hook) that does not
read its own target; the use is a plain statement of the same block (not a nested
block: a loop would evaluate it more often; not a return: the result keeps its
name); nothing in between binds, mutates or
passes to a call any name the expression reads; the temporary is read nowhere else
and not live after its use. Runs when the sweep's statements are not fused
afterwards (``facts.in_place``): the fuser groups statements, not expressions.
"""

import gast

from srcgrad import anno
from srcgrad.analysis import liveness
from srcgrad.ast_util import assigned_name, blocks, loads
from srcgrad.optimize.exprs import pure
from srcgrad.optimize.facts import EFFECTFUL
from srcgrad import ast_util

Static = anno.Static

_PLAIN = (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)
_USES = (gast.Assign, gast.AugAssign, gast.Expr)   # a returned adjoint keeps its name


def run(body, facts):
    if not facts.in_place:
        return False
    changed = False
    while True:
        facts.invalidate()
        live = liveness.analyze(body, set(), names=facts.names, only=candidates(body, facts))
        touched = set()   # names whose liveness a fold of this round changed
        folded = False
        for block in blocks(body):
            folded |= _fold_block(block, live, touched, facts)
        if not folded:
            return changed
        changed = True


def candidates(body, facts):
    """The names a fold may ask the liveness of (the targets of removable, untaped
    assignments): liveness is recorded for them only (it is asked after each of them)."""
    return {t for block in blocks(body) for s in block
            if (t := assigned_name(s)) is not None and t in facts.removable
            and anno.getanno(s, Static.TAPE) is None}


def _fold_block(block, live, touched, facts):
    """Fold the temporaries of ``block`` that may be folded; returns whether any was."""
    folded = False
    k = 0
    while k < len(block):
        s = block[k]
        t = assigned_name(s)
        if t is None or t not in facts.removable or t in facts.inplace or t in touched \
                or anno.getanno(s, Static.TAPE) is not None or not pure(s.value):
            k += 1
            continue
        reads = loads(s.value)
        use = None if t in reads else _the_use(block, k, t, reads, facts)
        if use is None or t in live.live_after(use):
            k += 1
            continue
        _substitute(use, t, s.value)
        facts.names.forget(use)
        touched |= reads | {t}
        del block[k]
        folded = True
    return folded


def _the_use(block, k, t, reads, facts):
    """The one statement after ``block[k]`` that reads ``t``, when the expression may move
    there; else None."""
    for later in block[k + 1:]:
        if t in facts.refs(later):
            if not isinstance(later, _USES) or _count_loads(later, t) != 1 or t in facts.stores(later):
                return None
            if not pure(later) and reads & facts.loads(later):
                return None   # a call in the use could change what the expression reads
            return later
        if _disturbs(later, reads, facts):
            return None
    return None


def _disturbs(s, reads, facts):
    """``s`` may change what a name in ``reads`` holds: it binds it, writes into it, or
    hands it to something that may."""
    if reads & facts.stores(s):
        return True
    if not reads & facts.loads(s):
        return False
    if not isinstance(s, _PLAIN) or not pure(s):
        return True
    for n in ast_util.walk(s):
        if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name) and n.target.id in reads:
            return True
        if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store) \
                and isinstance(n.value, gast.Name) and n.value.id in reads:
            return True
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr in EFFECTFUL:
            return True
    return False


def _count_loads(node, t):
    Load = gast.Load
    return sum(1 for n in ast_util.nodes_of(node, gast.Name) if n.id == t and n.ctx.__class__ is Load)


def _substitute(node, t, value):
    class Substitute(ast_util.NodeTransformer):
        def visit_Name(self, n):
            if n.id == t and isinstance(n.ctx, gast.Load):
                return value
            return n

    Substitute().visit(node)
