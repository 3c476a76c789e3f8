"""The batched tangent program: forward mode with B seeds at once (``sg.jacfwd``,
``sg.hessian``), as ``jax.vmap`` of a ``jvp``.

Each tangent carries one leading batch axis: the tangent of ``x`` is ``(B,) +
shape(x)``, one row per seed (a column of the Jacobian). The program is the tangent
program of transform/forward.py with each primitive's *batched* tangent rule
(rules/jvp_batched.py, ``@batched_tangent`` in srcgrad/rules/__init__.py) inlined
instead of its tangent rule, and three rewrites of what forward.py writes itself:

* ``rt.tangent_zero(v)`` is ``rt.batch_zero(v, B)``; ``rt.has_grad_jvp(g, dg)`` is
  ``rt.batch_has_grad(g, dg)`` (a scalar's tangent counts while any seed's is nonzero);
  ``rt.tangent_like(t, y)`` (a tangent widened to its sum's shape) is ``rt.batch_fit(t, y)``;
* a tangent's item ``dx[i]`` (read or written) is ``rt.batched(dx)[i]``: ``dx[:, i]``
  for an array (the index is the primal's, the batch axis stays in front), the item
  itself for a list of tangents; a write aligns the value to the slot's rank;
* ``B`` is read off the tangents passed in (``rt.batch_size``).

A built-in tangent rule without a batched form runs seed by seed inside its statement
(the "per_sample" form); a user's tangent rule without one makes the whole program
unbatchable: ``compiled`` raises
``NotBatchable`` and the callers run one tangent program per seed, as a helper does
at run time when it meets a value it cannot batch. Never a wrong answer, only a
slower one.
"""

import dataclasses
import threading

import gast

from srcgrad import caches, pipeline, rules
from srcgrad.codegen import emit
from srcgrad.guard import Guard
from srcgrad.rules.jvp_batched_runtime import NotBatchable
from srcgrad.templates import clone, name
from srcgrad.transform import forward, forward_program, tangent_rules
from srcgrad import ast_util

__all__ = ["NotBatchable", "compiled", "run"]


def _call(function, *args):
    return gast.Call(func=gast.Attribute(value=name("rt"), attr=function, ctx=gast.Load()),
                     args=list(args), keywords=[])


def _tangents(template):
    return {"t_" + p.name for p in template.params}


def _uses(nodes, names_):
    return any(isinstance(n, gast.Name) and n.id in names_ for s in nodes for n in ast_util.walk(s))


class _Wrap(ast_util.NodeTransformer):
    """Each tangent name read replaced by ``rt.<helper>(t, <extra>)``."""

    def __init__(self, tangents, helper, extra):
        self.tangents, self.helper, self.extra = tangents, helper, extra

    def visit_Name(self, node):
        if node.id in self.tangents and isinstance(node.ctx, gast.Load):
            return _call(self.helper, node, name(self.extra))
        return node


def _replace(template, body, result, local=()):
    """``template`` with a new body and result: every other field (its ``linear``
    parameters among them: a None ``append=`` stays None) kept."""
    return dataclasses.replace(template, body=body, result=result,
                               locals=template.locals | frozenset(local))


def _elementwise(template):
    """The tangent rule with its tangents aligned to the output's rank, the result spread
    to the output's batched shape."""
    wrap = _Wrap(_tangents(template), "batch_align", template.output)
    body = [wrap.visit(clone(s)) for s in template.body]
    result = _call("batch_fit", wrap.visit(clone(template.result)), name(template.output))
    return _replace(template, body, result)


_SEED = "seed"


def _per_sample(template):
    """``rt.batch_stack([<rule on seed b's tangents> for b in range(B)], y)``."""
    tangents = _tangents(template)
    if _uses(template.body, tangents):
        return None
    used = sorted(n.id for n in ast_util.walk(template.result)
                  if isinstance(n, gast.Name) and n.id in tangents)
    element = _Wrap(tangents, "batch_slice", _SEED).visit(clone(template.result))
    count = gast.Call(func=name("range"), args=[_call("batch_size", *[name(t) for t in used])],
                      keywords=[])
    loop = gast.ListComp(elt=element, generators=[gast.comprehension(
        target=name(_SEED, True), iter=count, ifs=[], is_async=0)])
    result = _call("batch_stack", loop, name(template.output))
    return _replace(template, [clone(s) for s in template.body], result, {_SEED})


def _reduces(template):
    return any(isinstance(n, gast.Attribute) and n.attr in ("sum", "mean", "cumsum")
               for s in template.body + [template.result] for n in ast_util.walk(s))


_CACHE = {}


def lookup(primitive):
    """The batched TangentTemplate of ``primitive``; None where it has no tangent rule
    at all (forward mode refuses it); raises NotBatchable where it has no batched form."""
    base = tangent_rules.lookup(primitive)
    if base is None:
        return None
    key = (rules._key(primitive), rules.VERSION[0])
    if key not in _CACHE:
        _CACHE[key] = _batched(primitive, base)
    found = _CACHE[key]
    if found is None:
        raise NotBatchable(f"the tangent rule of {primitive!r} has no batched form")
    return found


def _built_in(primitive):
    """A tangent srcgrad declares (by linearity or by hand): right seed by seed, so its
    default batched form is per sample; a user's tangent rule may not be."""
    declared = rules.lookup_tangent(primitive)
    return isinstance(declared, rules.Linear) or \
        getattr(declared, "__module__", "").startswith("srcgrad.")


def _batched(primitive, base):
    form = rules.lookup_batched(primitive)
    if callable(form):   # the tangent rule's arguments without a tangent are its own
        return dataclasses.replace(tangent_rules._hand_written(form), no_tangent=base.no_tangent)
    if form == "same":
        return base
    if form == "elementwise" or form is None and base.derived and \
            tangent_rules.is_elementwise(primitive) and not _reduces(base):
        return _elementwise(base)
    if form == "per_sample" or form is None and (base.derived or _built_in(primitive)):
        return _per_sample(base)
    return None


class BatchedForwardAD(forward.ForwardAD):
    """forward.ForwardAD reading the batched tangent rules."""

    def lookup(self, primitive):
        if self.complex_rule(primitive):   # a rule on complex values: one program per seed
            raise NotBatchable(f"{primitive!r} on a value that may be complex")
        return lookup(primitive)

    def check_real(self, value):
        super().check_real(value)
        if self.complex_value is not None:
            raise NotBatchable("complex values")   # one tangent program per seed

    def zero_of(self, value, target):
        """A number's zero tangent too has the batch axis (``rt.tangent_zero``, rewritten
        to ``rt.batch_zero``): per-seed rules slice it."""
        zero = super().zero_of(value, target)
        if isinstance(zero, gast.Constant) and zero.value == 0.0:
            return gast.Call(func=gast.Attribute(value=name("rt"), attr="tangent_zero",
                                                 ctx=gast.Load()),
                             args=[name(target.id)], keywords=[])
        return zero

    def function_apply(self, s, target, cls):
        """A custom Function's jvp is the user's, written for one tangent: one program
        per seed (refused as in sg.jvp where it has none)."""
        super().function_apply(s, target, cls)
        raise NotBatchable(f"{cls.__name__}.jvp takes one tangent per input")

    def apply(self, primitive, args, kwargs, y, value):
        stmts, result = super().apply(primitive, args, kwargs, y, value)
        if result is not None and any(tangent_rules.known_zero(n) for n in ast_util.walk(result)
                                      if isinstance(n, gast.Name)):
            return [], None   # a per-seed rule whose every tangent is zero
        template = self.lookup(primitive)
        if result is not None and template.linear:
            _trim_per_seed(result, template.params)
        return stmts, result


def _trim_per_seed(result, params):
    """A linear tangent run seed by seed (``rt.batch_stack([f(...) for seed ...])``) spells
    its call as sg.jvp does: an argument left at None (``np.diff``'s ``append``) is not
    passed, where ``append=None`` would join a None to the tangent."""
    if not (isinstance(result, gast.Call) and result.args and
            isinstance(result.args[0], gast.ListComp) and isinstance(result.args[0].elt, gast.Call)):
        return
    call = result.args[0].elt

    def constant(node):   # rt.batch_slice(None, seed) is None
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                node.func.attr == "batch_slice" and isinstance(node.args[0], gast.Constant) \
                and node.args[0].value is None:
            return node.args[0]
        return node

    call.args = [constant(a) for a in call.args]
    for k in call.keywords:
        k.value = constant(k.value)
    result.args[0].elt = tangent_rules.trim_defaults(call, params)


class _Rewrite(ast_util.NodeTransformer):
    """``rt.tangent_zero(v)`` -> ``rt.batch_zero(v, B)``, ``rt.has_grad_jvp`` ->
    ``rt.batch_has_grad``, ``rt.tangent_like(t, y)`` -> ``rt.batch_fit(t, y)``;
    ``dx[i]`` -> ``rt.batched(dx)[i]``."""

    def __init__(self, tangents, size):
        self.tangents, self.size = tangents, size

    per_seed = 0   # inside rt.batch_stack's per-seed list the tangents have no batch axis

    def visit_Call(self, node):
        f = node.func
        rt_call = isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
            f.value.id == "rt"
        seeds = rt_call and f.attr == "batch_stack"
        self.per_seed += seeds
        self.generic_visit(node)
        self.per_seed -= seeds
        if rt_call and f.attr == "tangent_like" and self.per_seed:
            return node
        if rt_call:
            if f.attr == "tangent_zero":
                return _call("batch_zero", *node.args, name(self.size))
            if f.attr == "restore_item_tangent":   # an array's item: of every seed
                return _call("batch_restore_item_tangent", *node.args)
            if f.attr == "has_grad_jvp":
                return _call("batch_has_grad", *node.args)
            if f.attr == "tangent_like":
                call = _call("batch_fit", *node.args)
                call.keywords = node.keywords
                return call
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        base = node.value
        if isinstance(base, gast.Name) and base.id in self.tangents or \
                getattr(base, "_srcgrad_batched", False):
            node.value = _call("batched", base)
            node._srcgrad_batched = True
        return node


def compile_batched(fn, active, options=None, has_aux=False, classes=None):
    """The batched tangent program of ``fn`` for tangents of the parameters in ``active``:
    ``function(*params, *batched tangents)`` returns ``(out, batched tangent of out)``
    (``has_aux``: ``fn`` returns ``(out, aux)``, the program ``(out, tangent, aux)``).
    Raises NotBatchable where a statement has no batched form. (compile_jvp's steps,
    forward_api.py, with BatchedForwardAD and the rewrites above.)"""
    from srcgrad.transform import structure_parts
    f = forward_program.front(fn, active, options, has_aux, static=structure_parts.value_statics(classes or {}))
    transformer = BatchedForwardAD(f.ctx.info, f.act.active, f.ctx.namer, f.written,
                                   f.act.sequences, f.kind_map, aux=f.ctx.aux, bindings=f.ctx.bindings)
    tangent_params = [transformer.d(n) for n in f.names]
    size = f.ctx.namer.new("batch")
    body = gast.parse(f"{size} = rt.batch_size({', '.join(tangent_params)})").body
    body += forward_program.prologue(f, transformer) + transformer.visit_block(f.node.body)
    rewrite = _Rewrite(frozenset(transformer.tangents.values()), size)
    body = [rewrite.visit(s) for s in body]
    function, source, guard = forward_program.load(
        fn, f, body, tangent_params, f"{f.node.name}_jvp_batched",
        lambda body: emit.comment_blocks(body, "tangent of: ", 1))
    from srcgrad.forward_api import CompiledJVP
    return CompiledJVP(function, source, f.params, f.names, guard)


_programs = caches.LRU()   # cache_key -> (program or NotBatchable, guard)
_lock = threading.Lock()


def compiled(fn, active, has_aux=False, classes=None):
    """The batched tangent program of ``fn`` (kept like forward_api's), or raises
    NotBatchable (remembered too: the program is not compiled again to learn it)."""
    from srcgrad.forward_api import cache_key
    options = pipeline.DEFAULT_OPTIONS
    classes = classes or {}
    key = cache_key(fn, active, tuple(sorted(classes.items())), has_aux)
    found = _programs.get(key)
    if found is None or not found[1].holds(fn):
        with _lock:
            found = _programs.get(key)
            if found is None or not found[1].holds(fn):
                try:
                    program = compile_batched(fn, active, options, has_aux, classes)
                    found = (program, program.guard)
                except NotBatchable as exc:
                    found = (exc, Guard(fn, ()))
                _programs[key] = found
    if isinstance(found[0], NotBatchable):
        raise found[0]
    return found[0]


_signatures = caches.LRU()   # fn -> (its defaults when read, inspect.signature(fn))


def _signature(fn):
    """``inspect.signature(fn)``, kept while ``fn``'s default values are the same objects: a
    signature holds the defaults it was read with, and ``fn.__defaults__ = (5.0,)`` after a
    first jacobian or hessian made later calls bind the old ones."""
    import inspect
    kwdefaults = getattr(fn, "__kwdefaults__", None) or {}
    stamp = (tuple(map(id, getattr(fn, "__defaults__", None) or ())),
             tuple((k, id(v)) for k, v in kwdefaults.items()))
    found = _signatures.get(fn)
    if found is None or found[0] != stamp:
        found = _signatures[fn] = (stamp, inspect.signature(fn))
    return found[1]


def run(fn, args, position, seeds, has_aux=False):
    """``(fn(*args), T)``: ``T[b]`` is the tangent of the output along ``seeds[b]``, the
    tangent of ``args[position]`` (``seeds`` has the shape ``(B,) + shape(arg)``); the
    other arguments carry none. ``has_aux``: ``(out, T, aux)`` of ``fn`` returning
    ``(out, aux)``. Raises NotBatchable (run one jvp per seed instead)."""
    bound = _signature(fn).bind(*args)
    bound.apply_defaults()
    params = list(bound.arguments)
    from srcgrad.transform import structure_parts
    program = compiled(fn, [params[position]], has_aux, structure_parts.classes_of(bound.arguments))
    if not program.active:
        raise NotBatchable("the argument carries no tangent")
    call = [bound.arguments[p] for p in program.params] + [seeds]
    return program.function(*call)
