"""Index buffers: an adjoint only ever added into at integer positions becomes an
array the sweep owns from the start.

    dx = 0.0                                  dx = rt.owned_zeros(x)
    for i in ...:                     ->      for i in ...:
        dx = rt.add_at(dx, x, i, g)               dx[i] += g

``facts.buffers``: adjoint name -> (parameter, its rank) for parameters never
rebound, whose arguments are arrays of that rank (the gradient's specialisation);
``facts.indices``: names that always hold Python or NumPy integers
(analysis/ranks.py). The adjoint may be read nowhere but in those additions and
the final return, so no other name can see it change. Adds the names the rewrite
relied on to ``facts.used``.
"""

import gast

from srcgrad import anno
from srcgrad.analysis.activity import names_in
from srcgrad.ast_util import blocks, is_rt_call, is_zero_assign, name
from srcgrad.templates import replace_as_expression

Static = anno.Static


def run(body, facts):
    if not facts.buffers:
        return False
    changed = False
    for d, (x, rank) in facts.buffers.items():
        found = _updates(body, d, x, rank, facts)
        if found is None:
            continue
        zero, updates = found
        zero.value = replace_as_expression("rt.owned_zeros(X)", X=x)
        facts.names.forget_edited(zero)   # the updates are new statements in their blocks
        for block, st, (_, index, g) in updates:
            update = gast.AugAssign(target=gast.Subscript(value=name(d), slice=index, ctx=gast.Store()),
                                    op=gast.Add(), value=g)
            block[block.index(st)] = anno.copyanno(st, update, *Static)
            facts.used |= names_in(index)
        facts.used.add(x)
        changed = True
    return changed


def _updates(body, d, x, rank, facts):
    """(the top-level ``d = 0.0``, [(block, statement, add_at parts)]) when every use of
    ``d`` is one of those, else None."""
    zero, updates = None, []
    for block in blocks(body):
        for st in block:
            if isinstance(st, gast.Return) or d not in facts.refs(st):
                continue
            parts = _add_at(st, d)
            n_index = parts and _static_int_index(parts[1], facts.indices)
            if parts is not None and parts[0].id == x and d not in facts.loads(parts[2]) \
                    and n_index and n_index <= rank:
                updates.append((block, st, parts))
            elif block is body and zero is None and is_zero_assign(st, d):
                zero = st
            elif isinstance(st, (gast.If, gast.For, gast.While)) and d not in _loads_here(st, facts):
                continue   # the uses are inside; the inner blocks are visited too
            else:
                return None
    if zero is None or not updates:
        return None
    return zero, updates


def _add_at(s, d):
    """``d = rt.add_at(d, x, index, g)``: returns (x, index, g), or None."""
    v = getattr(s, "value", None)
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
            and s.targets[0].id == d and is_rt_call(v, "add_at") and len(v.args) == 4 \
            and isinstance(v.args[0], gast.Name) and v.args[0].id == d \
            and isinstance(v.args[1], gast.Name):
        return v.args[1:]
    return None


def _static_int_index(index, indices):
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    for item in items:
        if isinstance(item, gast.Constant) and type(item.value) is int:
            continue
        if isinstance(item, gast.Name) and item.id in indices:
            continue
        return None
    return len(items)


def _loads_here(compound, facts):
    """Names a compound statement reads in its own header (test, iterable)."""
    header = getattr(compound, "test", None) or getattr(compound, "iter", None)
    return facts.loads(header) if header is not None else set()
