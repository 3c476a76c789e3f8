"""Derivatives of a gradient (``sg.grad(sg.grad(net, wrt=1), wrt=1)``) at structured
arguments (a dict of parameters, a dataclass, a list of arrays), taken over their leaves.

The code a gradient is composed into (``GradFunction.as_function``), which higher orders
read again, holds for arrays and floats. At structured arguments the tower of gradients
is built again over the leaf function

    def leaves_net(_sg_a0_0, _sg_a0_1, _sg_a0_2, _sg_a1):
        return _sg_f({'w1': _sg_a0_0, 'b1': _sg_a0_1, 'w2': _sg_a0_2}, _sg_a1)

(the structure written out as its display: a dict, list or tuple, a namedtuple or
dataclass built by its class, which srcgrad reads as any code), each level ``sg.grad``
with its ``wrt`` moved to the leaves' positions; its derivatives are the tower's, leaf by
leaf, and they are put back into the structures (``pytree.rebuild``). ``hessians.hvp``
takes this road for a gradient at structured primals, which the gradient's backward
(nested.py, a third derivative: a loss calling ``uxx(p, x)``) and its jvp are. Refused,
naming the function: a registered class (its ``unflatten`` is no source), a dataclass
field outside ``__init__``, and a level whose ``wrt`` is a structure (its gradient is no
scalar a further derivative takes). Made once per gradient and argument structure.
"""

import dataclasses

import numpy

from srcgrad import api, caches, pytree
from srcgrad.codegen import loader
from srcgrad.entry import _identifier
from srcgrad.errors import SrcgradError, UnsupportedError

_towers = caches.LRU()   # (id(gradient), structure key) -> (gradient, its tower on leaves)


def tower_of(fn):
    """The GradFunction ``fn`` is or was composed from (``as_function``, nested.py's hvp
    wrapper), or None for a function that is no gradient."""
    if isinstance(fn, api.GradFunction):
        return fn
    return getattr(fn, "_srcgrad_tower", None) or getattr(fn, "_srcgrad_composed_from", None)


def _where(fn):
    code = getattr(fn, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else (None, None)


def _key(primals):
    return tuple(pytree.tree_key(p, lambda leaf: None) if pytree.is_node(p) else None
                 for p in primals)


class _Display:
    """The source of a structure's display over its leaves' parameter names."""

    def __init__(self, fn):
        self.fn, self.bound, self.params = fn, {}, []

    def constant(self, value):
        name = f"_sg_c{len(self.bound)}"
        self.bound[name] = value
        return name

    def of(self, value, stem):
        if not pytree.is_node(value):
            self.params.append(stem)
            return stem
        if value is None:
            return "None"
        kids = [self.of(c, f"{stem}_{k}") for k, (_, c) in enumerate(pytree.children(value))]
        kind = type(value)
        if kind is dict:
            keys = [k if type(k) in (str, int, bool) else None for k in value]
            keys = [repr(k) if k is not None else self.constant(key)
                    for k, key in zip(keys, value)]
            return "{" + ", ".join(f"{k}: {c}" for k, c in zip(keys, kids)) + "}"
        if kind is list:
            return "[" + ", ".join(kids) + "]"
        if kind is tuple:
            return "(" + "".join(f"{c}, " for c in kids) + ")"
        if pytree.is_namedtuple(value):
            return f"{self.constant(kind)}({', '.join(kids)})"
        if pytree.is_dataclass_instance(value) and pytree.registered(value) is None:
            fields = dataclasses.fields(value)
            if all(f.init for f in fields):
                return f"{self.constant(kind)}(" + ", ".join(
                    f"{f.name}={c}" for f, c in zip(fields, kids)) + ")"
        raise UnsupportedError(
            f"a derivative of a gradient of {getattr(self.fn, '__qualname__', self.fn)} at a "
            f"{kind.__name__} argument: srcgrad takes it over the structure's leaves, and "
            f"cannot build a {kind.__name__} from them as source (a registered class, a "
            f"dataclass field outside __init__, a subclass of dict, list or tuple)",
            *_where(self.fn), hint="Pass a dict, list, tuple, namedtuple or plain dataclass, "
                                   "or the leaves as separate arguments.")


def leaf_function(fn, primals):
    """``fn`` as a function of the leaves of ``primals`` (module docstring), and for each
    primal the positions of its leaves among the new parameters."""
    display = _Display(fn)
    exprs, groups = [], []
    for k, primal in enumerate(primals):
        start = len(display.params)
        exprs.append(display.of(primal, f"_sg_a{k}"))
        groups.append(tuple(range(start, len(display.params))))
    fname = _identifier(f"leaves_{getattr(fn, '__name__', 'f')}")
    source = (f"def {fname}({', '.join(display.params)}):\n"
              f"    return _sg_f({', '.join(exprs)})\n")
    (function,), _, _ = loader.load(source, [fname], {}, {}, dict(display.bound, _sg_f=fn),
                                    hint=fname)
    return function, groups


def _on_leaves(gfn, primals, top):
    """``(tower, groups)``: the gradient ``gfn`` built again over the leaves of ``primals``
    (``top``: its own ``wrt`` may be a structure, whose leaves it is then taken for)."""
    from srcgrad.jacobians import _wrt_positions
    below = gfn._made_of[0]
    if isinstance(below, api.GradFunction):
        inner, groups = _on_leaves(below, primals, False)
        base = below.fn
    else:
        inner, groups = leaf_function(below, primals)
        base = gfn.fn
    if gfn.hook_names or gfn.preserve_result:
        raise UnsupportedError(f"the gradient of {getattr(base, '__qualname__', base)} has hooks "
                               f"or preserve_result: srcgrad differentiates only a plain "
                               f"sg.grad(f) (or one with has_aux) again", *_where(base))
    positions, many = _wrt_positions(base, gfn.wrt)
    moved = []
    for k in positions:
        if k >= len(primals):
            raise UnsupportedError(f"a derivative of sg.grad({getattr(base, '__qualname__', base)}) "
                                   f"with respect to a parameter left to its default",
                                   *_where(base), hint="Pass it.")
        if pytree.is_node(primals[k]) and not top:
            raise UnsupportedError(
                f"a derivative of sg.grad({getattr(base, '__qualname__', base)}) with respect to "
                f"a {type(primals[k]).__name__}: the gradient is a structure, not the scalar a "
                f"further derivative takes; differentiate it with respect to an array or float "
                f"argument (or use sg.hessian / sg.jacfwd of it)", *_where(base))
        moved += groups[k]
        many = many or pytree.is_node(primals[k])
    tower = api.grad(inner, wrt=tuple(moved) if many else moved[0],
                     allow_unused=gfn.allow_unused, materialize_grads=gfn.materialize_grads,
                     fuse=gfn.fuse, has_aux=gfn.has_aux)
    return tower, groups


def on_leaves(gfn, primals, top=False):
    """Cached ``_on_leaves``: one tower per gradient and structure of the arguments."""
    key = (id(gfn), _key(primals), top)
    found = _towers.get(key)
    if found is None or found[0] is not gfn:
        found = _towers[key] = (gfn, _on_leaves(gfn, primals, top))
    return found[1]


def _composed(tower):
    """``tower.as_function()``, made once per compile of it (hvp's compiles are keyed on
    the function: a new one each call would compile each call)."""
    try:
        compiled = tower.compiled
    except SrcgradError:   # (no code for arrays: as_function's hvp wrapper, made once too)
        compiled = None
    found = tower.__dict__.get("_leaf_composed")
    if found is None or found[0] is not compiled:
        found = tower._leaf_composed = (compiled, tower.as_function(tower.has_aux))
    return found[1]


def flat(values, groups, primals):
    """The leaves of ``values`` (one per primal, each like it or None: zero) in the
    order of ``groups``."""
    out = []
    for value, group, primal in zip(values, groups, primals):
        if not pytree.is_node(primal):
            out.append(value)
        elif value is None:
            out += [None] * len(group)
        else:
            out += [other for _, _, other in pytree.paired_leaves(primal, value)]
    return tuple(out)


def regroup(values, groups, primals):
    """One value per primal from the leaves' ``values`` (a structure like the primal where
    it is one; None where all its leaves' are None)."""
    out = []
    for group, primal in zip(groups, primals):
        if not pytree.is_node(primal):
            out.append(values[group[0]])
        elif all(values[i] is None for i in group):
            out.append(None)
        else:
            out.append(pytree.rebuild(primal, iter([values[i] for i in group])))
    return tuple(out)


def hvp(hvp_of, fn, primals, tangents, positions, has_aux):
    """``hessians.hvp(fn, ...)`` of a gradient ``fn`` at structured ``primals``: the hvp
    of its tower on their leaves (``hvp_of`` that hvp), put back into the structures."""
    tower, groups = on_leaves(tower_of(fn), primals)
    tower = _composed(tower)   # the composed code (what hvp reads of a gradient)
    leaves = flat(primals, groups, primals)
    wrt = tuple(i for k in positions for i in groups[k])   # (float leaves: hvp checked)
    products = hvp_of(tower, leaves, flat(tangents, groups, primals), wrt=wrt, has_aux=has_aux)
    if has_aux:
        products, aux = products
    out = regroup(products, groups, primals)
    out = tuple(v if k in positions else None for k, v in enumerate(out))
    return (out, aux) if has_aux else out



def phi_inputs(gfn, positions, args, grads, first, second):
    """For the third derivative through ``gfn`` called inside (nested.py's ``phi``) at
    structured ``args``: ``(tower, its wrt positions, primals, tangents, regroup)``: the
    tower on the leaves, the leaves of ``args`` and of the cotangents ``grads`` (one per
    wrt position) with their tangents ``first`` and ``second`` (the aux's primal and
    tangent appended by the caller), and the function putting hvp's leaf products back
    into one entry per argument and per wrt position (then the aux's)."""
    tower, groups = on_leaves(gfn, args, top=True)
    wrt = tuple(i for k in positions for i in groups[k])
    at = [args[k] for k in positions]
    local, n = [], 0   # the cotangents' leaves' positions, after the arguments'
    for k in positions:
        local.append(tuple(range(n, n + len(groups[k]))))
        n += len(groups[k])
    like = flat(at, local, at)   # the cotangents' leaves in their arguments' shapes (a
    # mirror's 0.0 for a part no gradient reached, a None: zeros)
    primals = flat(args, groups, args) + _shaped(flat(grads, local, at), like, True)
    tangents = flat(first, groups, args) + _shaped(flat(second, local, at), like, False)
    size = len(primals) - n

    def regroup_products(products):
        return (regroup(products[:size], groups, args) + regroup(products[size:size + n], local, at)
                + tuple(products[size + n:]))
    return tower, wrt, primals, tangents, regroup_products


def _shaped(values, like, fill):
    """``values`` broadcast to the shapes of the leaves ``like`` (None: zeros with ``fill``)."""
    out = []
    for value, leaf in zip(values, like):
        shape = numpy.shape(leaf)
        if value is None:
            out.append((numpy.zeros(shape) if shape else 0.0) if fill else None)
        else:
            out.append(value if numpy.shape(value) == shape
                       else numpy.broadcast_to(value, shape).astype(float))
    return tuple(out)
