"""The forward sweep when only gradients are asked for (``grad``, not ``value_and_grad``).

``grad`` does not return the function's value, and a scalar output's seed is 1
whatever the value is, so the work that only led to the output can go: the sum in
``np.sum(f(x))``, and every value its adjoint does not read. Only operations that
cannot raise are dropped (elementwise operations on operands whose shapes provably
broadcast, full reductions, and ``+ - * /`` of a reduction's NumPy scalar, which gives
inf or nan with a warning where a Python float raises), so an error the function would
raise is still raised.
A read ``a[i]`` of an array that the same block has just read at the same index,
with neither name rebound in between, cannot raise either: the first read stays.

    u_item = u[t]                         u_item = u[t]
    ...                        ->         ...
    u_item_2 = u[t]     (dead)
"""

import gast
import numpy

from srcgrad import anno
from srcgrad.analysis.ranks import SCALAR, UNKNOWN
from srcgrad.ast_util import NameSets, assigned_name, blocks, loads, stores
from srcgrad.optimize import dead
from srcgrad.optimize.effects import safe_class
from srcgrad.templates import composing_copy

Static = anno.Static


def scalar_output(forward, rank_map):
    """The forward sweep returns a scalar: its seed is 1 when none is given."""
    out = forward.body[-1].value.elts[0]
    return isinstance(out, gast.Name) and rank_map.get(out.id) in (0, "i")


def forward_for_gradient(forward, rank_map, classes):
    """A copy of the forward sweep that returns None for the output and computes
    only what the backward sweep reads, or None when that saves nothing."""
    if not scalar_output(forward, rank_map):
        return None
    # The statement lists and compound statements copied, the simple statements the
    # forward sweep's own: what follows drops statements, and forward_temporaries (the
    # copy's last pass, and the sweep's) replaces a statement it folds into by a copy.
    fg = composing_copy(forward)
    fg.name = forward.name + "_for_grad"
    ret = fg.body[-1] = _own(fg.body[-1])
    ret.value = _own(ret.value)
    ret.value.elts = [gast.Constant(value=None, kind=None)] + ret.value.elts[1:]

    names = NameSets()   # shared: dead code elimination asks the same statements
    repeats = _repeated_reads(fg.body, classes, names)
    reduced = _reduction_results(fg.body, rank_map, names)

    def pure(value):
        return id(value) in repeats or safe_class(value, classes) is not None \
            or _reduction_arithmetic(value, reduced, rank_map)

    removed = dead.eliminate(fg.body, set(classes), set(), pure, names)
    return fg if removed else None


def _own(node):
    """A copy of ``node`` alone: its fields hold ``node``'s children."""
    new = node.__class__.__new__(node.__class__)
    new.__dict__.update(node.__dict__)
    if "_srcgrad_anno" in new.__dict__:
        new._srcgrad_anno = dict(new._srcgrad_anno)
    return new


# Full reductions that never raise (np.max of an empty array does: it is not among them)
_FULL_REDUCTIONS = (numpy.sum, numpy.mean, numpy.prod)


def _reduction_arithmetic(e, reduced, rank_map):
    """``np.sum(a)`` of an array ``a`` (a name of known rank), and ``+ - * /`` with
    such a value or a name bound to one (``reduced``) on one side: a NumPy (or CuPy) scalar,
    whose arithmetic gives inf or nan with a warning where a Python float raises."""
    if isinstance(e, gast.Call):
        return not e.keywords and len(e.args) == 1 and isinstance(e.args[0], gast.Name) \
            and type(rank_map.get(e.args[0].id)) is int \
            and any(anno.getanno(e, Static.PRIMITIVE) is f for f in _FULL_REDUCTIONS)
    if isinstance(e, gast.Name):
        return e.id in reduced
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _reduction_arithmetic(e.operand, reduced, rank_map)
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult, gast.Div)):
        sides = (e.left, e.right)
        plain = all(isinstance(v, gast.Constant) and type(v.value) in (int, float)
                    or isinstance(v, gast.Name) and rank_map.get(v.id) in (0, "i")
                    or _reduction_arithmetic(v, reduced, rank_map) for v in sides)
        return plain and any(_reduction_arithmetic(v, reduced, rank_map) for v in sides)
    return False


def _reduction_results(body, rank_map, name_sets=None):
    """Names bound once, at the top level, to ``_reduction_arithmetic`` values.
    ``name_sets``: a ``NameSets`` to ask (the one dead code elimination asks next)."""
    counts = {}
    for s in body:
        for n in stores(s) if name_sets is None else name_sets.stores(s):
            counts[n] = counts.get(n, 0) + 1
    reduced = set()
    for s in body:
        name = assigned_name(s)
        if name is not None and counts.get(name) == 1 \
                and _reduction_arithmetic(s.value, reduced, rank_map):
            reduced.add(name)
    return reduced


def _index_read(value, classes):
    """``a[i]`` (``i`` names and int constants) of an array ``a`` of a known class:
    returns the names it reads, else None."""
    if not (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name)
            and classes.get(value.value.id) not in (None, UNKNOWN, SCALAR)):
        return None
    index = value.slice
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    if not all(isinstance(e, gast.Name) or (isinstance(e, gast.Constant) and type(e.value) is int)
               for e in items):
        return None
    return loads(value)


def _repeated_reads(body, classes, name_sets):
    """ids of the values ``a[i]`` that repeat an earlier read of their block, with no
    statement in between binding a name they read or reading ``a`` otherwise.
    ``name_sets``: the ``NameSets`` to ask."""
    found = set()
    for block in blocks(body):
        seen = {}   # gast.dump of the read -> (array name, the names it reads)
        for s in block:
            value = s.value if assigned_name(s) is not None else None
            names = _index_read(value, classes) if value is not None else None
            key = gast.dump(value) if names is not None else None
            if key in seen:
                found.add(id(value))
            bound, read = name_sets.stores(s), name_sets.loads(s)
            for k, (array, its_names) in list(seen.items()):
                if its_names & bound or (array in read and names is None):
                    del seen[k]
            if names is not None and not names & bound:
                seen[key] = (value.value.id, names)
    return found
