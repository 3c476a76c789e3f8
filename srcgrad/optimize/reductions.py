"""Reduction gradients kept scalar: the gradient of a full reduction stays a scalar
until it meets an array.

``rt.unreduce(g, x, None, False)`` spreads a scalar ``g`` over ``x``'s shape, so
every later step of the chain rule is an array operation; in ``mean(3*(x+2)**2)``
the hand-written ``6/n*(x+2)`` does one. The call becomes ``g`` wherever every value
the scalar reaches is used only elementwise with operands of ``x``'s shape class
(the result then has that shape, or stands for it broadcast), tested by
``rt.has_grad``, or returned at a position of ``facts.returned`` (gradients the API
broadcasts to their argument's shape). A call whose scalar could reach any other
use (a matmul, an index, a hook, a tape) stays.

    dy = rt.unreduce(dmean / n, y, None, False)    ->    dy = dmean / n
    dx = dy * 2 * x                                      dx = dy * 2 * x

Runs only when ``facts.returned`` is given; adds the names relied on to ``facts.used``.
"""

import gast

from srcgrad.analysis.activity import names_in
from srcgrad.analysis.ranks import SCALAR, UNKNOWN
from srcgrad.ast_util import is_rt_call, name, own_parts, walk_statements
from srcgrad.optimize.exprs import class_of, combine, scalar_ufunc
from srcgrad import ast_util


def run(body, facts):
    if not facts.classes or facts.returned is None:
        return False
    used = keep_reductions_scalar(body, facts.sweep_classes, facts.primals, facts.returned, facts)
    facts.used |= used
    return bool(used)


def _full_unreduce(node, classes):
    """``rt.unreduce(g, x, None, False)`` of a scalar ``g`` and an ``x`` of a known
    array class: returns that class, else None."""
    if not (is_rt_call(node, "unreduce") and len(node.args) in (2, 4)
            and isinstance(node.args[1], gast.Name)):
        return None
    if len(node.args) == 4 and not all(isinstance(a, gast.Constant) and a.value is v
                                       for a, v in zip(node.args[2:], (None, False))):
        return None
    shape = classes.get(node.args[1].id)
    if shape in (None, SCALAR, UNKNOWN) or class_of(node.args[0], classes) != SCALAR:
        return None
    return shape


class Lazy:
    """What an expression of the sweep is when full-reduction gradients stay scalar.

    ``shape``: its shape class; ``origins``: the unreduce calls whose scalar may flow
    into it (empty: it is what it was); ``real``: it reads a primal of its class, so
    its value has that shape whatever the origins hold.
    """

    def __init__(self, shape, origins=frozenset(), real=False):
        self.shape, self.origins, self.real = shape, origins, real

    @property
    def lazy(self):
        return bool(self.origins) and not self.real


def _plain_scalar(found):
    return found is not None and found.shape == SCALAR and not found.origins


def lazy_class(e, classes, lazy, enabled, primals):
    """The ``Lazy`` of an elementwise expression ``e``, or None when ``e`` is not one."""
    if isinstance(e, gast.Constant):
        return Lazy(SCALAR) if type(e.value) in (int, float, bool) else None
    if isinstance(e, gast.Name):
        if e.id in lazy:
            return Lazy(*lazy[e.id])
        shape = classes.get(e.id)
        if shape in (None, UNKNOWN):
            return None
        return Lazy(shape, real=e.id in primals and shape != SCALAR)
    if isinstance(e, gast.Attribute) and e.attr == "size" and isinstance(e.value, gast.Name) \
            and e.value.id not in lazy:
        return Lazy(SCALAR)
    if isinstance(e, gast.BoolOp) and isinstance(e.op, gast.Or) \
            and all(_plain_scalar(lazy_class(v, classes, lazy, enabled, primals)) for v in e.values):
        return Lazy(SCALAR)   # a mean's divisor, (x.size or 1)
    parts = None
    if isinstance(e, gast.BinOp) and not isinstance(e.op, gast.MatMult):
        parts = [e.left, e.right]
    elif isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        parts = [e.operand]
    elif isinstance(e, gast.Call) and not e.keywords:
        if id(e) in enabled:
            return Lazy(enabled[id(e)], frozenset([id(e)]))
        if is_rt_call(e, "reduction_size") and all(isinstance(a, (gast.Name, gast.Constant))
                                                     and getattr(a, "id", None) not in lazy
                                                     for a in e.args):
            return Lazy(SCALAR)
        if scalar_ufunc(e.func):
            parts = e.args
    if not parts:
        return None
    found = [lazy_class(p, classes, lazy, enabled, primals) for p in parts]
    if None in found:
        return None
    shape = combine(*(f.shape for f in found))
    if shape is None:
        return None
    origins = frozenset().union(*(f.origins for f in found))
    return Lazy(shape, origins, any(f.real and f.shape == shape for f in found))


def _summed_class(e, classes, lazy, enabled, primals):
    """``Lazy(SCALAR)`` for ``rt.unbroadcast(E, a)``, or an elementwise expression of it and
    plain scalars (``rt.unbroadcast(dy * n, sin_a) * xp.cos(a)``), where ``a`` is of the
    SCALAR class and the scalars reaching ``E`` are operands of an array of its shape
    (``E`` is real): the sum is the same either way. Else None."""
    if is_rt_call(e, "unbroadcast") and len(e.args) == 2 and not e.keywords \
            and isinstance(e.args[1], gast.Name) and classes.get(e.args[1].id) == SCALAR:
        found = lazy_class(e.args[0], classes, lazy, enabled, primals)
        return Lazy(SCALAR) if found is not None and not found.lazy else None
    if isinstance(e, gast.BinOp) and not isinstance(e.op, gast.MatMult):
        parts = [_summed_class(p, classes, lazy, enabled, primals)
                 or lazy_class(p, classes, lazy, enabled, primals) for p in (e.left, e.right)]
        if any(is_rt_call(p, "unbroadcast") for p in (e.left, e.right)) \
                and all(_plain_scalar(p) for p in parts):
            return Lazy(SCALAR)
    return None


def _origins_in(node, lazy, enabled):
    """The enabled unreduce calls whose scalar may reach ``node``'s value."""
    found = set()
    for n in ast_util.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in lazy:
            found |= lazy[n.id][1]
        elif id(n) in enabled:
            found.add(id(n))
    return found


def keep_reductions_scalar(body, classes, primals, returned, facts):
    """Rewrite the unreduce calls that may stay scalar; returns the names relied on."""
    calls = {}
    in_statement = {}   # id(statement) -> the candidate calls in it, nested blocks included
    for s in walk_statements(body):
        for part in own_parts(s):
            if not any(is_rt_call(n, "unreduce") for n in facts.names.calls(part)):
                continue   # most statements: no candidate, no search for parents
            for parent in ast_util.walk(part):
                for field, value in gast.iter_fields(parent):
                    for k, n in enumerate(value if isinstance(value, list) else [value]):
                        shape = _full_unreduce(n, classes) if isinstance(n, gast.Call) else None
                        if shape is not None:
                            calls[id(n)] = (n, shape, parent, field,
                                            k if isinstance(value, list) else None, s)
                            in_statement.setdefault(id(s), set()).add(id(n))
    enabled = {k: found[1] for k, found in calls.items()}
    if enabled:
        statements = _statements(body, in_statement, facts)
    while enabled:
        lazy, bad = _spread_scalars(statements, classes, primals, returned, enabled)
        if not bad:
            break
        for k in bad:
            enabled.pop(k, None)
    if not enabled:
        return set()
    scalars = _scalar_names(body, lazy, classes, enabled)
    used = set()
    for k in enabled:
        call, _, parent, field, index, s = calls[k]
        used.update(names_in(call))
        if index is None:
            setattr(parent, field, call.args[0])
        else:
            getattr(parent, field)[index] = call.args[0]
        facts.names.forget_edited(s)
    for s in walk_statements(body):
        target = s.targets[0] if isinstance(s, gast.Assign) else getattr(s, "target", None)
        if isinstance(target, gast.Name) and target.id in lazy:
            used |= names_in(s)
    if scalars:
        _factor_out_of_sums(body, scalars, classes)
    return used


def _scalar_names(body, lazy, classes, enabled):
    """The names of ``lazy`` that hold a scalar once the calls are rewritten (a lazy
    value may also be an array that broadcasts into the class: an adjoint): every
    binding of each is an expression of numbers, scalar-class names, these names and
    the calls rewritten (``_scalar_valued``)."""
    values = {}   # name -> the values bound to it (None: bound otherwise)
    for s in walk_statements(body):
        single = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 \
            and isinstance(s.targets[0], gast.Name) else None
        if single is not None:
            values.setdefault(single.id, []).append(s.value)
        for part in own_parts(s):
            for n in ast_util.walk(part):
                if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load) \
                        and n is not single:
                    values.setdefault(n.id, []).append(None)
    scalars = {n for n in lazy if n in values}
    changed = True
    while changed:
        changed = False
        for n in list(scalars):
            if not all(v is not None and _scalar_valued(v, scalars, classes, enabled)
                       for v in values[n]):
                scalars.discard(n)
                changed = True
    return scalars


def _scalar_valued(e, scalars, classes, enabled):
    """Whether ``e`` is a scalar once the enabled calls are their scalars."""
    if isinstance(e, gast.Constant):
        return type(e.value) in (int, float)
    if isinstance(e, gast.Name):
        return e.id in scalars or classes.get(e.id) == SCALAR
    if id(e) in enabled:
        return True
    if isinstance(e, gast.Attribute):
        return e.attr == "size" and isinstance(e.value, gast.Name)
    if isinstance(e, gast.BinOp):
        return not isinstance(e.op, gast.MatMult) and all(
            _scalar_valued(p, scalars, classes, enabled) for p in (e.left, e.right))
    if isinstance(e, gast.UnaryOp):
        return isinstance(e.op, (gast.USub, gast.UAdd)) and _scalar_valued(
            e.operand, scalars, classes, enabled)
    if isinstance(e, gast.BoolOp):
        return all(_scalar_valued(v, scalars, classes, enabled) for v in e.values)
    if isinstance(e, gast.Call) and not e.keywords and scalar_ufunc(e.func):
        return all(_scalar_valued(a, scalars, classes, enabled) for a in e.args)
    return False


def _factor_out_of_sums(body, scalars, classes):
    """``rt.unbroadcast(s * e, a)`` -> ``s * rt.unbroadcast(e, a)`` where ``s`` is now a
    scalar (``_scalar_names``) and ``a`` of the SCALAR class: the sum of ``e`` times
    ``s`` instead of a full array ``s * e`` summed (a float argument times an integer
    array: ``da = dsum * rt.unbroadcast(n, a)``, its dtype the product's). ``e`` is
    computed as before; only the product's order changes."""
    for s in walk_statements(body):
        for part in own_parts(s):
            for parent in ast_util.walk(part):
                for field, value in gast.iter_fields(parent):
                    items = value if isinstance(value, list) else [value]
                    for k, n in enumerate(items):
                        factored = _factored(n, scalars, classes)
                        if factored is None:
                            continue
                        if isinstance(value, list):
                            value[k] = factored
                        else:
                            setattr(parent, field, factored)


def _factored(node, scalars, classes):
    if not (is_rt_call(node, "unbroadcast") and len(node.args) == 2 and not node.keywords
            and isinstance(node.args[1], gast.Name) and classes.get(node.args[1].id) == SCALAR):
        return None
    product = node.args[0]
    if not (isinstance(product, gast.BinOp) and isinstance(product.op, gast.Mult)):
        return None
    for factor, rest in ((product.left, product.right), (product.right, product.left)):
        if isinstance(factor, gast.Name) and factor.id in scalars:
            node.args[0] = rest
            return gast.BinOp(left=factor, op=gast.Mult(), right=node)
    return None


def _assignment(s):
    """(target, value) of ``t = value`` or ``t op= value`` (as ``t op value``), else (None, None)."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
        return s.targets[0].id, s.value
    if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name) \
            and not isinstance(s.op, gast.MatMult):
        target = s.target.id
        return target, gast.BinOp(left=name(target), op=s.op, right=s.value)
    return None, None


def _statements(body, in_statement, facts):
    """(statement, the candidate calls in it, the names its own parts read) for every
    statement of ``body`` in order (``walk_statements``): what ``_spread_scalars`` asks of
    each statement in each of its walks, asked once (the sweep does not change until the
    calls are rewritten)."""
    found = []
    none = frozenset()
    for s in walk_statements(body):
        parts = own_parts(s)
        reads = facts.loads(parts[0]) if len(parts) == 1 else \
            frozenset().union(*(facts.loads(p) for p in parts))
        found.append((s, in_statement.get(id(s), none), reads))
    return found


def _spread_scalars(statements, classes, primals, returned, enabled):
    """Follow the scalars of the ``enabled`` unreduce calls through the ``statements``
    (``_statements``) to a fixed point. Returns (name -> (class, origins), the calls that
    reach an unsafe use)."""
    lazy = {}
    bad = set()
    changed = True
    enabled_keys, lazy_keys = enabled.keys(), lazy.keys()
    while changed and not bad:
        changed = False
        for s, candidates, reads in statements:
            if enabled_keys.isdisjoint(candidates) and lazy_keys.isdisjoint(reads):
                continue   # no scalar reaches this statement (yet)
            target, value = _assignment(s)
            if value is not None:
                reached = _origins_in(value, lazy, enabled)
                if not reached:
                    continue
                found = _summed_class(value, classes, lazy, enabled, primals) \
                    or lazy_class(value, classes, lazy, enabled, primals)
                known = lazy.get(target, (classes.get(target),))[0]
                if found is None or (known is not None and known != found.shape):
                    bad |= reached
                elif found.lazy:
                    old = lazy.get(target)
                    new = (found.shape, found.origins | (old[1] if old else frozenset()))
                    if new != old:
                        lazy[target] = new
                        changed = True
                continue
            bad |= _unsafe_reads(s, lazy, enabled, returned)
    return lazy, bad


def _unsafe_reads(s, lazy, enabled, returned):
    """The calls whose scalar reaches a use in ``s`` (not an assignment) that needs the array."""
    if isinstance(s, gast.Return) and isinstance(s.value, gast.Tuple):
        bad = set()
        for k, e in enumerate(s.value.elts):
            if not (isinstance(e, gast.Name) and k in returned):
                bad |= _origins_in(e, lazy, enabled)
        return bad
    header = getattr(s, "test", None)
    if header is not None and is_rt_call(header, "has_grad"):
        return set()
    bad = set()
    own = [getattr(s, f) for f in ("test", "iter", "target", "targets", "value")
           if getattr(s, f, None) is not None]
    for part in own:
        for node in part if isinstance(part, list) else [part]:
            bad |= _origins_in(node, lazy, enabled)
    return bad
