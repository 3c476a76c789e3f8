"""Dead-code elimination: a pure assignment to a removable name (an adjoint, a
sweep temporary) that nothing reads afterwards is not computed.

    dx_times_w = dz * w                   dx_times_w = dz * w
    dunused = dz * 2.0            ->      dx = dx_times_w * v
    dx = dx_times_w * v

Liveness comes from analysis/liveness.py; one walk removes a whole dead chain.
Pops, hooks, custom Function backwards and in-place helpers are never removed:
they have effects beyond their target.
"""

import gast

from srcgrad import anno
from srcgrad.analysis import liveness
from srcgrad.ast_util import assigned_name, child_blocks
from srcgrad.optimize.exprs import pure as sweep_pure

Static = anno.Static


def run(body, facts):
    return eliminate(body, facts.removable, set(), names=facts.names, touched=facts)


def eliminate(body, removable, live_out, pure=None, names=None, touched=None):
    """Drop pure assignments to ``removable`` names that nothing reads afterwards.

    ``pure`` (value -> bool) says which values may go; by default the sweep's own.
    ``touched``: a ``Facts`` told the statements removed (``touch``).
    Returns whether anything was removed.
    """
    pure = pure or sweep_pure

    def dead(s, live):
        target = assigned_name(s)
        return (target is not None and target in removable and target not in live
                and pure(s.value) and anno.getanno(s, Static.TAPE) is None)

    found = liveness.analyze(body, live_out, dead, names, record=False)
    if not found.skipped:
        return False
    if touched is not None:
        touched.touch(*found.skipped.values())
    _remove(body, found.skipped)
    return True


def _remove(stmts, gone):
    stmts[:] = [s for s in stmts if id(s) not in gone]
    for s in stmts:
        if isinstance(s, (gast.If, gast.For, gast.While)):
            for inner in child_blocks(s):
                _remove(inner, gone)
            if not s.body:
                s.body.append(gast.Pass())
