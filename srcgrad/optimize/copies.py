"""Copy propagation: after ``a = b`` (names), later reads of ``a`` in the same block
read ``b`` until either is rebound; ``b = b`` is dropped. Dead-code elimination
then removes the copy.

    dresult_new = dresult * v             dresult_new = dresult * v
    dresult = dresult_new         ->      dresult = dresult_new
    dv = dresult * w                      dv = dresult_new * w   (then `dresult =` may go)

Adjoints that runtime helpers update in place are never renamed.
"""

import gast

from srcgrad import anno
from srcgrad.ast_util import assigned_name, blocks
from srcgrad import ast_util

Static = anno.Static

_SIMPLE = (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)


def run(body, facts):
    removable = facts.removable - facts.inplace
    only = facts.only   # the names to look at (driver.py), None: all
    changed = False
    for block in list(blocks(body)):
        k = 0
        while k < len(block):
            s = block[k]
            a = assigned_name(s)
            if a is not None and isinstance(s.value, gast.Name) \
                    and (only is None or a in only or s.value.id in only):
                b = s.value.id
                if a == b:
                    facts.touch(s)
                    del block[k]
                    changed = True
                    continue
                if a in removable and anno.getanno(s, Static.TAPE) is None:
                    changed |= _propagate(block[k + 1:], a, b, facts)
            k += 1
    return changed


def _propagate(later_statements, a, b, facts):
    """Read ``b`` for ``a`` in ``later_statements`` until either is rebound."""
    changed = False
    for later in later_statements:
        stores = facts.stores(later)
        if not isinstance(later, _SIMPLE) and (a in stores or b in stores):
            break
        if a in facts.loads(later):
            facts.touch(later)
            facts.touched.add(b)
            _rename_loads(later, a, b)
            facts.names.forget(*ast_util.walk(later))   # its nested statements and parts too
            changed = True
        if a in stores or b in stores:
            break
    return changed


def _rename_loads(node, old, new):
    for n in ast_util.walk(node):
        if isinstance(n, gast.Name) and n.id == old and isinstance(n.ctx, gast.Load):
            n.id = new
