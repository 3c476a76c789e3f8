"""Second derivatives through a custom Function not marked ``once_differentiable``.

The gradient of ``y = Func.apply(x)`` calls ``rt.function_forward`` and
``rt.function_backward`` (custom_function.py). Differentiated again (grad of grad, hvp,
hessian) they get the rules below, which are PyTorch's double backward: the derivative
of the user's ``backward`` itself (the operations it runs on the saved values and the
output's gradient), not of ``forward``. ``backward`` is read as user code with ``ctx``
made explicit (``explicit_backward``)::

    def backward(ctx, g):                     def backward(_sg_saved_0, _sg_ctx_k, _sg_needs, g):
        x, = ctx.saved_tensors          ->        x, = (_sg_saved_0,)
        return g * ctx.k * x ** 2                 return g * _sg_ctx_k * x ** 2

A saved value or ``ctx`` attribute is the forward input or output it is (the object
itself, recorded by ``function_forward`` in ``ctx._origins``): its derivative is that
input's or output's. One that holds no float, or is a literal of ``forward``'s code
(``ctx.eps = 1e-6``), is a constant. Any other float value computed in ``forward`` that
``backward`` reads is refused: its derivative is unknown (PyTorch silently treats it as
a constant).

The adjoint and the tangent of a ctx are a list ``[d_in_0, ..., d_out_0, ...]``, one
entry per forward input, then one per output:

* adjoint of ``grads = function_backward(cls, ctx, gouts)``: the vjp of the explicit
  backward, into ``gouts`` and into the ctx's list;
* adjoint of ``(outs, ctx) = function_forward(cls, args, flags)``: the ctx's input
  entries, plus ``backward`` applied to the outputs' adjoint and the ctx's output entries;
* tangent of ``function_forward``: the outputs' tangent (the Function's ``jvp`` where it
  defines one, else the transpose of ``backward``: reverse mode of the explicit backward
  with respect to its gradient arguments), and the ctx's list of inputs' and outputs'
  tangents;
* tangent of ``function_backward``: the jvp of the explicit backward.

A Function may differentiate its backward itself instead: ``cls._srcgrad_backward_vjp(ctx,
grads, cotangents)`` returns the gradients of its inputs and of ``grads``, and
``cls._srcgrad_backward_jvp(ctx, grads, input_tangents, grad_tangents)`` the tangent of each
input's gradient (nested.py: a gradient called inside a differentiated function, whose
backward is an hvp).

The rules call srcgrad on ``backward`` at run time, so a third derivative through them
is refused, naming the helper and the user's line (``rt.function_backward_vjp``...).
"""

import ast
import copy
import types
import weakref

import gast

from srcgrad import anno, api, forward_api, parse, runtime
from srcgrad import runtime as rt
from srcgrad.custom_function import (FunctionCtx, _backward_of, _is_differentiable_value,
                                     _overrides, _Tree, _zeros, function_backward, function_jvp,
                                     has_jvp, is_once_differentiable, prepare_grads)
from srcgrad.errors import UnsupportedError
from srcgrad.rules import adjoint, tangent
from srcgrad.templates import clone

SAVED, ATTR, NEEDS = "_sg_saved_", "_sg_ctx_", "_sg_needs"

_explicit = weakref.WeakKeyDictionary()   # cls -> {(n_saved, n_grads): function}


# ----- backward with an explicit ctx -----

class _ExplicitCtx(gast.NodeTransformer):
    """``ctx.saved_tensors``, ``ctx.needs_input_grad`` and ``ctx.<attr>`` as parameters;
    any other use of ``ctx`` refused at its line."""

    def __init__(self, ctx_name, n_saved, info, cls):
        self.ctx, self.n_saved, self.info, self.cls = ctx_name, n_saved, info, cls
        self.attrs = []

    def refuse(self, node, what):
        origin = self.info.origin(node)
        message = (f"differentiating {self.cls.__qualname__}.backward again: it {what}; srcgrad "
                   f"reads ctx.saved_tensors, ctx.needs_input_grad and attributes set in forward")
        hint = "Read what forward saved through ctx.saved_tensors or an attribute of ctx."
        error = UnsupportedError(message, self.info.filename, self.info.first_lineno, hint=hint) \
            if origin is None else origin.error(UnsupportedError, message, hint)
        error.refused_as = ""   # at the user's line already (codegen/refusals.py)
        return error

    def visit_Attribute(self, node):
        if not (isinstance(node.value, gast.Name) and node.value.id == self.ctx):
            return self.generic_visit(node)
        if not isinstance(node.ctx, gast.Load):
            raise self.refuse(node, f"assigns ctx.{node.attr}")
        if node.attr in ("saved_tensors", "saved_variables"):
            new = gast.Tuple(elts=[gast.Name(id=f"{SAVED}{i}", ctx=gast.Load(), annotation=None,
                                             type_comment=None) for i in range(self.n_saved)],
                             ctx=gast.Load())
        else:
            if node.attr != "needs_input_grad" and node.attr not in self.attrs:
                if callable(getattr(FunctionCtx, node.attr, None)):   # save_for_backward...
                    raise self.refuse(node, f"calls ctx.{node.attr}")
                self.attrs.append(node.attr)
            new = gast.Name(id=NEEDS if node.attr == "needs_input_grad" else ATTR + node.attr,
                            ctx=gast.Load(), annotation=None, type_comment=None)
        return gast.copy_location(new, node)

    def visit_Name(self, node):
        if node.id == self.ctx:
            raise self.refuse(node, "uses ctx itself (not one of its attributes)")
        return node


def explicit_backward(cls, n_saved, n_grads):
    """``cls``'s backward as a function of its saved values, the attributes of ctx it reads,
    ``needs_input_grad`` and its ``n_grads`` gradients (made once per layout); its
    ``_srcgrad_ctx_attrs`` names the attributes, ``_srcgrad_reads`` the parameters read."""
    layouts = _explicit.setdefault(cls, {})
    found = layouts.get((n_saved, n_grads))
    if found is None:
        found = layouts[(n_saved, n_grads)] = _make_explicit(cls, n_saved, n_grads)
    return found


def _make_explicit(cls, n_saved, n_grads):
    backward = _backward_of(cls)
    backward = getattr(backward, "__func__", backward)
    node, info = parse.parse_function(backward)
    args = node.args
    if args.posonlyargs or args.kwonlyargs or args.kwarg or not args.args:
        raise UnsupportedError(
            f"differentiating {cls.__qualname__}.backward again: srcgrad reads a backward "
            f"whose parameters are ctx and the outputs' gradients (positional, *grads allowed)",
            info.filename, info.first_lineno)
    rewrite = _ExplicitCtx(args.args[0].id, n_saved, info, cls)
    node.body = [rewrite.visit(s) for s in node.body]
    grads = list(args.args[1:])
    if args.vararg is not None and n_grads > len(grads):
        extra = [gast.Name(id=f"_sg_grad_{k}", ctx=gast.Param(), annotation=None, type_comment=None)
                 for k in range(n_grads - len(grads))]
        pack = gast.Assign(targets=[gast.Name(id=args.vararg.id, ctx=gast.Store(), annotation=None,
                                              type_comment=None)],
                           value=gast.Tuple(elts=[gast.Name(id=e.id, ctx=gast.Load(), annotation=None,
                                                            type_comment=None) for e in extra],
                                            ctx=gast.Load()), type_comment=None)
        gast.copy_location(pack, node.body[0])
        anno.copyanno(node.body[0], pack, anno.Static.ORIGIN)
        node.body.insert(0, pack)
        grads += extra
    names = ([f"{SAVED}{i}" for i in range(n_saved)] + [ATTR + a for a in rewrite.attrs] + [NEEDS])
    args.args = [gast.Name(id=n, ctx=gast.Param(), annotation=None, type_comment=None)
                 for n in names] + grads
    args.vararg = None
    defaults, args.defaults = args.defaults, []
    function = _compiled(node, backward, cls)
    function.__defaults__ = backward.__defaults__ if defaults else None
    function._srcgrad_ctx_attrs = tuple(rewrite.attrs)
    function._srcgrad_reads = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
                               and isinstance(n.ctx, gast.Load)}
    tree = node

    def parse_it():
        entity = parse.EntityInfo(function, info.name, info.filename, info.first_lineno, info.indent,
                                  info.source_lines, info.globals, info.closure, dict(info.extra))
        return clone(tree), entity

    function.__srcgrad_parse__ = parse_it
    return function


def _compiled(node, backward, cls):
    """The rewritten def as a Python function with ``backward``'s globals and closure cells
    (what the compile cache and guard read; srcgrad never runs it)."""
    free = backward.__code__.co_freevars
    outer = gast.FunctionDef(
        name="_sg_outer", args=gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[],
                                               kw_defaults=[], kwarg=None, defaults=[]),
        body=[gast.parse(f"{v} = None").body[0] for v in free] + [clone(node)]
        + [gast.parse(f"return {node.name}").body[0]],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = gast.gast_to_ast(gast.Module(body=[outer], type_ignores=[]))
    ast.fix_missing_locations(module)
    namespace = {}
    exec(compile(module, f"<explicit backward of {cls.__qualname__}>", "exec"), namespace)
    code = namespace["_sg_outer"]().__code__
    cells = dict(zip(free, backward.__closure__ or ()))
    function = types.FunctionType(code, backward.__globals__, code.co_name, None,
                                  tuple(cells[v] for v in code.co_freevars) or None)
    function.__qualname__ = f"{cls.__qualname__}.backward"
    function.__module__ = backward.__module__
    return function


# ----- one call of the explicit backward -----

def _literals(cls):
    """The constants of ``forward``'s (and ``setup_context``'s) code: values that depend on
    no input."""
    found = set()
    for method in ("forward", "setup_context"):
        if method == "setup_context" and not _overrides(cls, method):
            continue
        fn = getattr(cls, method)
        todo = [getattr(getattr(fn, "__func__", fn), "__code__", None)]
        while todo:
            code = todo.pop()
            if code is None:
                continue
            for c in code.co_consts:
                if isinstance(c, types.CodeType):
                    todo.append(c)
                else:
                    found.add(id(c))
    return found


def _refusal(cls, message):
    backward = _backward_of(cls)
    code = getattr(getattr(backward, "__func__", backward), "__code__", None)
    error = UnsupportedError(
        f"differentiating {cls.__qualname__}.backward again: {message}",
        getattr(code, "co_filename", None), getattr(code, "co_firstlineno", None),
        hint="Save forward's inputs or outputs (ctx.save_for_backward(x, out)) and compute "
             "the rest in backward, or return the value from forward as an output (PyTorch's "
             "recipe for double backward).")
    error.refused_as = ""   # at the user's line already (codegen/refusals.py)
    return error


class _Call:
    """The explicit backward's arguments for ``ctx`` and ``grads`` (one per output, as
    ``backward`` gets them), and ``slots``: position -> the ctx list's index it moves with,
    or ``("grad", k)`` for output k's gradient."""

    def __init__(self, cls, ctx, grads, needs=None):
        if any(isinstance(meta[1], _Tree) for meta, _ in ctx._inputs_meta) or \
                any(isinstance(meta[1], _Tree) for meta in ctx._outputs_meta):
            raise _refusal(cls, "its inputs or outputs are structures (dicts, lists, "
                                "dataclasses); srcgrad differentiates it again on arrays and floats")
        if is_once_differentiable(cls):
            raise _refusal(cls, "it is marked once_differentiable: its gradient cannot be "
                                "differentiated again (forward mode needs a jvp on the Function)")
        self.cls, self.ctx = cls, ctx
        self.n_in = len(ctx._inputs_meta)
        fb = self.fb = explicit_backward(cls, len(ctx._saved), len(grads))
        attrs = fb._srcgrad_ctx_attrs
        saved_origins, attr_origins = ctx._origins
        values = list(ctx._saved) + [getattr(ctx, a, None) for a in attrs]
        origins = list(saved_origins) + [attr_origins.get(a) for a in attrs]
        names = [f"{SAVED}{i}" for i in range(len(ctx._saved))] + [ATTR + a for a in attrs]
        self.values = values + [ctx.needs_input_grad if needs is None else needs] + list(grads)
        self.first_grad = len(values) + 1
        self.slots = {}
        literals = None
        for p, (value, origin, name) in enumerate(zip(values, origins, names)):
            if not _is_differentiable_value(value):
                continue
            if origin is None:
                literals = _literals(cls) if literals is None else literals
                if id(value) in literals or name not in fb._srcgrad_reads:
                    continue
                what = f"saved value {p}" if name.startswith(SAVED) else f"ctx.{name[len(ATTR):]}"
                raise _refusal(cls, f"{what} is a float value forward computed (neither one of "
                                    f"its inputs nor one of its outputs), whose derivative is "
                                    f"unknown")
            where, j = origin
            self.slots[p] = j if where == "in" else self.n_in + j
        for k, g in enumerate(grads):
            if ctx._outputs_differentiable[k] and g is not None and _is_differentiable_value(g):
                self.slots[self.first_grad + k] = ("grad", k)

    def vjp(self, wrt, cotangent_of):
        """``{position: gradient}`` for the positions ``wrt``, the cotangent of the raw
        result given by ``cotangent_of(result)`` (None: no gradient)."""
        wrt = tuple(p for p in wrt if p in self.slots)
        if not wrt:
            return {}
        out, back = api.vjp(self.fb, wrt=wrt, allow_unused=True)(*self.values)
        cotangent = cotangent_of(self.raw(out))
        if cotangent is None:
            return {}
        if isinstance(out, (tuple, list)):   # as many as backward returned (trailing Nones)
            cotangent = type(out)(cotangent + (None,) * (len(out) - len(cotangent)))
        grads = back(cotangent if isinstance(out, (tuple, list)) else cotangent[0])
        return {p: g for p, g in zip(wrt, grads) if not runtime.is_zero_grad(g)}

    def raw(self, out):
        """The raw result as one entry per forward input (backward may return a bare value
        for one input, and trailing Nones)."""
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        return out[:self.n_in] + (None,) * (self.n_in - len(out))


def _entries(seq, n):
    """The items of a list adjoint or tangent (a zero, or None, is n zeros)."""
    if isinstance(seq, (list, tuple)):
        return [None if runtime.is_zero_grad(s) else s for s in seq]
    return [None] * n


def _raw_cotangents(raw, gradients):
    """The cotangent of each raw entry from the cotangent of ``function_backward``'s
    checked result (a gradient summed down to its input's shape spreads back out)."""
    out, any_ = [], False
    for r, d in zip(raw, gradients):
        if r is None or d is None or getattr(getattr(r, "dtype", None), "kind", "f") not in "fc" \
                or isinstance(r, (bool, int)):
            out.append(None)
            continue
        if runtime.is_array(r):
            xp = runtime.namespace(r)
            d = xp.broadcast_to(xp.asarray(d, dtype=r.dtype), r.shape)
        out.append(d)
        any_ = True
    return tuple(out) if any_ else None


def _add(a, b):
    return b if a is None else a if b is None else runtime.add_grad(a, b)


def _full_needs(ctx):
    """needs_input_grad for every differentiable input (a second derivative may need the
    gradient of an input the first one did not)."""
    return tuple(bool(d) for _, d in ctx._inputs_meta)


# ----- the run-time helpers of the rules -----

@runtime.helper
def function_backward_vjp(cls, ctx, grad_outputs, dy):
    """The adjoint of ``grads = function_backward(cls, ctx, grad_outputs)`` for the
    cotangent ``dy`` of ``grads``: ``(d_ctx, d_grad_outputs)``."""
    n_out = len(ctx._outputs_meta)
    prepared = prepare_grads(cls, ctx, grad_outputs)
    own = getattr(cls, "_srcgrad_backward_vjp", None)
    if own is not None:   # a gradient's Function (nested.py) differentiates its backward itself
        n_in = len(ctx._inputs_meta)
        d_in, d_outs = own(ctx, prepared, _entries(dy, n_in))
        d_outs = [0.0 if d is None else d for d in d_outs]
        return ([0.0 if d is None else d for d in d_in] + [0.0] * n_out,
                d_outs if ctx._tuple_output else d_outs[0])
    call = _Call(cls, ctx, prepared)
    grads = call.vjp(sorted(call.slots), lambda raw: _raw_cotangents(raw, _entries(dy, call.n_in)))
    d_ctx, d_outs = [0.0] * (call.n_in + n_out), [0.0] * n_out
    given = _entries(grad_outputs, n_out) if ctx._tuple_output else [grad_outputs]
    for p, g in grads.items():
        slot = call.slots[p]
        if isinstance(slot, tuple):
            k = slot[1]
            if given[k] is not None and not (runtime.is_array(given[k])
                                             and given[k].shape == getattr(g, "shape", ())):
                g = runtime.unbroadcast(g, given[k])   # a scalar cotangent was broadcast
            d_outs[k] = runtime.add_grad(d_outs[k], g)
        else:
            d_ctx[slot] = runtime.add_grad(d_ctx[slot], g)
    return d_ctx, d_outs if ctx._tuple_output else d_outs[0]


@runtime.helper
def function_backward_jvp(cls, ctx, grad_outputs, t_ctx, t_grad_outputs):
    """The tangent of ``function_backward(cls, ctx, grad_outputs)`` for the tangents of
    ctx (a list: inputs', then outputs') and of ``grad_outputs``."""
    n_out = len(ctx._outputs_meta)
    prepared = prepare_grads(cls, ctx, grad_outputs)
    t_outs = _entries(t_grad_outputs, n_out) if ctx._tuple_output else \
        [None if runtime.is_zero_grad(t_grad_outputs) else t_grad_outputs]
    own = getattr(cls, "_srcgrad_backward_jvp", None)
    if own is not None:   # a gradient's Function (nested.py)
        n_in = len(ctx._inputs_meta)
        return tuple(0.0 if t is None else t for t in own(
            ctx, prepared, _entries(t_ctx, n_in + n_out)[:n_in], t_outs))
    call = _Call(cls, ctx, prepared)
    t_entries = _entries(t_ctx, call.n_in + n_out)
    tangents = [None] * len(call.values)
    for p, slot in call.slots.items():
        t = t_outs[slot[1]] if isinstance(slot, tuple) else t_entries[slot]
        if t is not None and isinstance(slot, tuple) and runtime.is_array(prepared[slot[1]]):
            xp = runtime.namespace(prepared[slot[1]])
            t = xp.broadcast_to(xp.asarray(t), prepared[slot[1]].shape)
        tangents[p] = t
    zero = tuple(None if m[0] is None and not d else 0.0 for m, d in ctx._inputs_meta)
    if all(t is None for t in tangents):
        return zero
    out, t_out = forward_api.jvp(call.fb, tuple(call.values), tuple(tangents))
    result = []
    for k, (r, t, ((xp, shape, dtype), _)) in enumerate(zip(call.raw(out), call.raw(t_out),
                                                             ctx._inputs_meta)):
        if r is None or t is None or runtime.is_zero_grad(t):
            result.append(0.0)
            continue
        if xp is not None and tuple(getattr(t, "shape", ())) != shape:
            t = runtime.unbroadcast(t, _zeros((xp, shape, dtype)))
            t = t.reshape(shape) if tuple(t.shape) != shape else t
        result.append(t)
    return tuple(result)


@runtime.helper
def function_forward_vjp(cls, y, dy):
    """The adjoint of ``(outputs, ctx) = function_forward(cls, args, flags)`` for the
    cotangent ``dy`` of that pair: one gradient per forward input."""
    outputs, ctx = y
    n_in, n_out = len(ctx._inputs_meta), len(ctx._outputs_meta)
    d_outputs, d_ctx = _entries(dy, 2)
    d_ctx = _entries(d_ctx, n_in + n_out)
    d_outs = _entries(d_outputs, n_out) if ctx._tuple_output else [d_outputs]
    d_outs = [_add(d, c) for d, c in zip(d_outs, d_ctx[n_in:])]
    grads = [None] * n_in
    if any(d is not None for d in d_outs):
        full = copy.copy(ctx)
        full.needs_input_grad = _full_needs(ctx)
        grads = list(function_backward(cls, full, tuple(d_outs) if ctx._tuple_output else d_outs[0]))
    return [_add(g, c) if (g is not None or c is not None) else 0.0
            for g, c in zip(grads, d_ctx[:n_in])]


@runtime.helper
def function_forward_jvp(cls, y, t_args):
    """The tangent of ``(outputs, ctx) = function_forward(cls, args, flags)`` for the
    inputs' tangents ``t_args``: ``(outputs' tangent, ctx's tangent)``."""
    outputs, ctx = y
    n_in, n_out = len(ctx._inputs_meta), len(ctx._outputs_meta)
    t_in = _entries(t_args, n_in)
    if has_jvp(cls):
        t_out = function_jvp(cls, ctx, t_in)
        t_outs = list(t_out) if ctx._tuple_output else [t_out]
    else:   # J t, the transpose of backward (linear in its gradients): reverse mode on them
        zeros = [_zeros(meta) for meta in ctx._outputs_meta]
        own = getattr(cls, "_srcgrad_backward_vjp", None)
        if own is not None:   # a gradient's Function (nested.py)
            full = copy.copy(ctx)
            full.needs_input_grad = _full_needs(ctx)
            t_outs = list(own(full, zeros, t_in)[1])
        else:
            call = _Call(cls, ctx, zeros, needs=_full_needs(ctx))
            grads = call.vjp([call.first_grad + k for k in range(n_out)],
                             lambda raw: _raw_cotangents(raw, t_in))
            t_outs = [grads.get(call.first_grad + k) for k in range(n_out)]
        t_outs = [t if t is not None and d else _zeros(meta) if meta[0] is not None else 0.0
                  for t, meta, d in zip(t_outs, ctx._outputs_meta, ctx._outputs_differentiable)]
    t_ctx = [0.0 if t is None else t for t in t_in] + list(t_outs)
    return (tuple(t_outs) if ctx._tuple_output else t_outs[0]), t_ctx


# ----- the rules -----

@adjoint(runtime.function_forward, sequences=("args",))
def function_forward_adjoint(dy, y, cls, args, needs_input_grad):
    return None, rt.function_forward_vjp(cls, y, dy), None


@adjoint(runtime.function_backward, sequences=("ctx", "grad_outputs"))
def function_backward_adjoint(dy, y, cls, ctx, grad_outputs):
    d = rt.function_backward_vjp(cls, ctx, grad_outputs, dy)
    return None, d[0], d[1]


@tangent(runtime.function_forward, no_tangent=("cls", "needs_input_grad"))
def function_forward_tangent(y, cls, args, needs_input_grad, *, t_args):
    return rt.function_forward_jvp(cls, y, t_args)


@tangent(runtime.function_backward, no_tangent=("cls",))
def function_backward_tangent(y, cls, ctx, grad_outputs, *, t_ctx, t_grad_outputs):
    return rt.function_backward_jvp(cls, ctx, grad_outputs, t_ctx, t_grad_outputs)

