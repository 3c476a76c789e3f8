"""A gradient called inside a differentiated function, and a gradient reverse mode
cannot read again.

``sg.grad(sg.grad(f))`` differentiates the composed gradient as source (reverse over
reverse; for tape code ``GradFunction.as_function`` composes it with ``for_transform`` and
reverse.py reverses each ``rt.tape_pop``). Two cases get an adjoint rule instead: a
``GradFunction`` called inside a differentiated function (``force = -g(x)`` with
``g = sg.grad(energy)``, or ``sg.grad(energy)(x)`` written inline: anf_expressions.py
routes the call here), and a tape gradient whose composed code reverse mode refuses.
The gradient ``g(x) = grad(f)(x)`` becomes a custom Function (custom_function.py) whose
``backward`` is the vector-Jacobian product of ``g``, which for a twice differentiable
real ``f`` is a Hessian-vector product (the Hessian is symmetric)::

    d/dx_k <grad_{x_wrt} f(x), dy> = sum_j dy_j d2f/dx_wrt_j dx_k = (H @ t)_k,
    t = dy at the wrt positions, zero elsewhere,

computed forward-over-reverse by ``sg.hvp`` (hessians.py).

Structured arguments (dicts, lists, tuples, dataclasses: pytree.py) pass through: the
custom Function's cotangents and gradients take their structure, and the hvp takes and
gives tangents of it; where ``f`` is itself a gradient (``uxx = sg.grad(sg.grad(net, 1),
1)`` called inside a loss of a dict ``p``) and for phi below, whose composed code holds
for arrays, the hvp is taken over the structure's leaves (leaf_towers.py).
``sg.grad(f, has_aux=True)`` returns ``(gradients, aux)``: the aux is a value of the
arguments like any other, so its cotangent adds the aux's own vector-Jacobian product to
the hvp (and its tangent is the aux's jvp); an integer aux has none. Refused, naming the
user's function: a gradient with hooks or a preserved result, complex values, and a third
derivative of code with a tape.
"""

import inspect

import numpy

from srcgrad import api, caches, forward_api, hessians, jacobians, leaf_towers, nested_jvp, pytree, runtime
from srcgrad.codegen import loader
from srcgrad.codegen.refusals import in_user_code
from srcgrad.custom_function import Function, _Tree
from srcgrad.entry import _identifier
from srcgrad.errors import SrcgradError, UnsupportedError
from srcgrad.hessians import hvp, third_refusal
from srcgrad.jacobians import _wrt_positions

_classes = caches.LRU()   # id(GradFunction) -> (it, its custom Function)
_grads = caches.LRU()     # (fn, wrt, has_aux) -> the GradFunction grad_of made
_phis = caches.LRU()      # id(GradFunction) -> (it, _phi's function)


def grad_of(fn, wrt, has_aux=False):
    """The one ``sg.grad(fn, wrt, has_aux)`` a differentiated function's
    ``sg.grad(fn, wrt)(x)`` calls (its custom Function is made once)."""
    key = (fn, tuple(wrt) if isinstance(wrt, list) else wrt, bool(has_aux))
    found = _grads.get(key)
    if found is None:
        found = _grads[key] = api.grad(fn, wrt=wrt, has_aux=has_aux)
    return found


def _where(fn):
    """The file and first line of ``fn``, for a refusal."""
    code = getattr(fn, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else (None, None)


def _complex(value):
    return numpy.iscomplexobj(value) if hasattr(value, "dtype") or isinstance(value, complex) \
        else False


def _zeros_like(value):
    """The zero tangent of an argument (None for one that has no float leaves)."""
    if not _float_leaves(value):
        return None
    if pytree.is_node(value):
        return pytree.tree_map(lambda leaf: _zeros_like(leaf) if leaf is not None else None, value)
    return numpy.zeros(numpy.shape(value)) if numpy.ndim(value) else 0.0


def _float_leaves(value):
    """Whether ``value`` is a float, a float array, or a structure of only those."""
    if pytree.is_node(value):
        leaves = pytree.tree_leaves(value)
        return bool(leaves) and all(_float_leaves(leaf) for leaf in leaves)
    if isinstance(value, (bool, int, numpy.integer, numpy.bool_)):
        return False
    dtype = getattr(value, "dtype", None)
    return dtype.kind == "f" if dtype is not None else isinstance(value, float)


def gradient_class(gfn):
    """The custom Function computing ``gfn`` (a GradFunction) whose backward is its
    vector-Jacobian product (an hvp), made once per GradFunction."""
    found = _classes.get(id(gfn))
    if found is not None and found[0] is gfn:
        return found[1]
    fn = gfn.fn
    name = getattr(fn, "__name__", "f")
    if gfn.hook_names or gfn.preserve_result:
        raise UnsupportedError(
            f"the gradient of {name} has hooks or preserve_result: srcgrad "
            f"differentiates only a plain sg.grad(f) (or one with has_aux) again", *_where(fn))
    positions, many = _wrt_positions(fn, gfn.wrt)

    def forward(ctx, *args):   # (a list or dict argument kept as it was before gfn runs:
        ctx.save_for_backward(*runtime.Runs(args).before)   # gfn may change it, once)
        return gfn(*args)   # with has_aux, (gradients, aux): the aux is f's, a value of args

    def backward(ctx, *douts):
        args = runtime.Runs(ctx.saved_tensors).before   # (its own copies: changed by the hvp)
        d_aux = None
        if gfn.has_aux:   # the gradients' cotangent, and the aux's (a value of the args too)
            d_aux = douts[1] if _nonzero(douts[1]) else None
            d = douts[0]
            douts = (tuple(d) if isinstance(d, (tuple, list)) else (None,) * len(positions)) \
                if many else (d,)
        if any(_complex(leaf) for a in args for leaf in pytree.tree_leaves(a)) \
                or any(_complex(leaf) for d in douts for leaf in pytree.tree_leaves(d)):
            raise UnsupportedError(
                f"the gradient of the gradient of {name} with complex values is not "
                f"supported (srcgrad computes it as a Hessian-vector product)", *_where(fn))
        if not many and ctx._tuple_output and not gfn.has_aux:   # of one tuple argument: a tuple
            arg = args[positions[0]]
            douts = (type(arg)(*douts) if pytree.is_namedtuple(arg) else tuple(douts),)
        tangents = [None] * len(args)
        for k, d in zip(positions, douts if many else douts[:1]):
            tangents[k] = d if d is not None else _zeros_like(args[k])
        for k, a in enumerate(args):
            if tangents[k] is None:
                tangents[k] = _zeros_like(a)
        # the gradient of every argument a gradient can reach: a float, a float array, a
        # structure of them (pytree.py); the others get none
        reached = tuple(k for k, a in enumerate(args) if _float_leaves(a))
        if not reached:
            return (None,) * len(args)
        try:
            products = hvp(fn, args, tuple(tangents), wrt=reached, has_aux=gfn.has_aux)
            if not gfn.has_aux:
                return products
            products = list(products[0])
            if d_aux is not None:   # the aux's own vector-Jacobian product
                _, pullback = api.vjp(_aux_of(_aux_base(fn, args)), wrt=reached)(*args)
                for k, g in zip(reached, pullback(d_aux)):
                    products[k] = g if products[k] is None else pytree.tree_map(
                        _plus, products[k], g) if pytree.is_node(g) else products[k] + g
            return tuple(products)
        except SrcgradError as exc:   # said of this gradient, not of sg.hessian
            if exc.message.startswith("hessian: ") and getattr(exc, "refused_as", None) is None:
                exc.refused_as = "hessian: "   # raised at the user's line already
            raise in_user_code(exc, f"the gradient of grad_{name}: ", restate=True) from None

    def jvp(ctx, *tangents):   # d/de grad f(x + e t) = H t, at the wrt rows: an hvp too
        products = hvp(fn, runtime.Runs(ctx.saved_tensors).before, tangents, wrt=positions,
                       has_aux=gfn.has_aux)
        if gfn.has_aux:   # (gradients, aux): the aux carries no tangent
            products = products[0]
        grads = tuple(products[k] for k in positions) if many else products[positions[0]]
        if not gfn.has_aux:
            return grads
        aux_tangent = None   # the aux's tangent, where it has floats
        if ctx._outputs_differentiable[1]:
            args = ctx.saved_tensors
            aux_tangent = forward_api.jvp(_aux_of(_aux_base(fn, args)), args, tuple(
                _zeros_like(a) if t is None else t for a, t in zip(args, tangents)))[1]
        return grads, aux_tangent

    def phi_products(ctx, grads, first, second):
        """The hvp of phi(args, d) = sum_k <grad_k f(args), d_k> at (args, grads) along
        (first, second): backward is its gradient in args, so this differentiates it."""
        args = ctx.saved_tensors
        if tupled(ctx):   # the gradient of one tuple argument: its entries are the outputs
            if not pytree.holds_data(args):
                raise UnsupportedError(
                    f"a third derivative of {name} through its gradient with respect to a "
                    f"tuple, called inside a differentiated function, is not supported",
                    *_where(fn), hint="Pass the tuple's entries as separate arguments.")
            grads, second = [pack(ctx, grads)], [pack(ctx, second)]
        aux_floats = gfn.has_aux and ctx._outputs_differentiable[1]   # not an int, a str
        with_aux = aux_floats and not isinstance(ctx._outputs_meta[1][1], _Tree)
        if aux_floats and not with_aux and (_nonzero(grads[1]) or _nonzero(second[1])):
            raise UnsupportedError(
                f"a third derivative of {name} through its gradient called inside a "
                f"differentiated function, whose structured aux is differentiated: return "
                f"the aux as an array or float", *_where(fn))
        auxes = [(grads[1], second[1])] if with_aux else []
        grads, second = gradient_part(grads), gradient_part(second)
        grads = [_zeros_like(args[k]) if g is None else g for g, k in zip(grads, positions)]
        of, wrt, regroup = gfn, positions, tuple
        primals, tangents = tuple(args) + tuple(grads), list(first) + list(second)
        if pytree.holds_data(args):   # the composed code holds for arrays: over the leaves
            of, wrt, primals, tangents, regroup = leaf_towers.phi_inputs(
                gfn, positions, args, grads, first, second)
        primals += tuple(0.0 if d is None else d for d, _ in auxes)
        tangents = tuple(_zeros_like(p) if t is None else t for t, p in zip(
            list(tangents) + [t for _, t in auxes], primals))
        try:
            return regroup(hvp(_phi(of, wrt, isinstance(of.wrt, tuple) if of is not gfn else many,
                                    with_aux), primals, tangents))
        except SrcgradError as exc:
            raise UnsupportedError(f"a third derivative of {name} (the derivative of the "
                                   f"Hessian-vector product its gradient's backward is): "
                                   f"{exc.message}", *_where(fn)) from None

    def tupled(ctx):
        return ctx._tuple_output and not many and not gfn.has_aux

    def pack(ctx, entries):
        """The outputs' entries as the tuple argument's gradient (of its class)."""
        arg = ctx.saved_tensors[positions[0]]
        return type(arg)(*entries) if pytree.is_namedtuple(arg) else tuple(entries)

    def gradient_part(entries):
        """The gradients' entries of ``(gradients, aux)``'s (has_aux): one per position."""
        if not gfn.has_aux:
            return list(entries)
        d = entries[0]
        if not many:
            return [d]
        return list(d) if isinstance(d, (tuple, list)) else [None] * len(positions)

    def backward_vjp(ctx, grads, cotangents):
        products = phi_products(ctx, grads, cotangents, [None] * len(grads))
        n = len(ctx.saved_tensors)
        d_grads = products[n:n + len(positions)]
        if tupled(ctx):   # the outputs are the tuple's entries
            entry = d_grads[0]
            d_grads = list(entry) if entry is not None else [None] * len(grads)
        if gfn.has_aux:   # the outputs are (gradients, aux)
            d_aux = products[-1] if len(products) > n + len(positions) else None
            d_grads = [tuple(d_grads) if many else d_grads[0], d_aux]
        return products[:n], d_grads

    def backward_jvp(ctx, grads, input_tangents, grad_tangents):
        return phi_products(ctx, grads, input_tangents, grad_tangents)[:len(ctx.saved_tensors)]

    methods = {"forward": staticmethod(forward), "backward": staticmethod(backward),
               "_srcgrad_backward_vjp": staticmethod(backward_vjp),
               "_srcgrad_backward_jvp": staticmethod(backward_jvp),
               "__doc__": f"sg.grad({name}) with its Hessian-vector product as its backward "
                          f"(and, in forward mode, its jvp)."}
    methods["jvp"] = staticmethod(jvp)
    cls = type(f"Grad_{name}", (Function,), methods)
    _classes[id(gfn)] = (gfn, cls)
    return cls


def _plus(a, b):
    return b if a is None else a if b is None else a + b


def _nonzero(value):
    """Whether a cotangent (None, a number, an array, a structure of them) is not all zero."""
    return value is not None and any(
        bool(numpy.any(numpy.asarray(leaf) != 0)) for leaf in pytree.tree_leaves(value)
        if leaf is not None and not isinstance(leaf, str))


def gradient_jvp(gfn, primals, tangents, has_aux=False):
    """``sg.jvp(g, primals, tangents)`` of a gradient ``g = sg.grad(f, wrt)`` at structured
    primals: ``(g(*primals), the hvp of f along tangents at the wrt rows)``, which takes
    structures (a gradient of a gradient's through its leaves), where the composed code
    forward mode reads holds for arrays only."""
    if gfn.has_aux != bool(has_aux):
        raise TypeError("srcgrad.jvp: a gradient made with has_aux=True returns (gradients, aux): "
                        "take its jvp with has_aux=True too (and only such a gradient's)")
    if len(primals) != len(tangents):
        raise ValueError(f"srcgrad.jvp: {len(primals)} primals but {len(tangents)} tangents")
    positions, many = _wrt_positions(gfn.fn, gfn.wrt)
    value = gfn(*primals)
    products = hvp(gfn.fn, tuple(primals), tuple(tangents), wrt=positions, has_aux=has_aux)
    if has_aux:
        products = products[0]
    out = tuple(products[k] for k in positions) if many else products[positions[0]]
    return (value[0], out, value[1]) if has_aux else (value, out)


_auxes = caches.LRU()   # fn -> the function of its aux alone


def _aux_base(fn, args):
    """The function whose aux ``sg.grad(fn, has_aux=True)``'s is: at structured ``args``,
    below a tower of gradients, the user's own (composed code holds for arrays only)."""
    while pytree.holds_data(args) and leaf_towers.tower_of(fn) is not None:
        below = leaf_towers.tower_of(fn)._made_of[0]
        fn = below.fn if isinstance(below, api.GradFunction) else below
    return fn


def _aux_of(fn):
    """``aux(*args) = fn(*args)[1]``, source srcgrad reads: the aux of ``sg.grad(fn,
    has_aux=True)`` is a value of the arguments, whose derivative flows as any value's."""
    found = _auxes.get(fn)
    if found is not None:
        return found
    names = [p.name for p in inspect.signature(fn).parameters.values()]
    fname = _identifier(f"aux_{getattr(fn, '__name__', 'f')}")
    source = f"def {fname}({', '.join(names)}):\n    return _sg_f({', '.join(names)})[1]\n"
    (function,), _, _ = loader.load(source, [fname], {}, {}, {"_sg_f": fn}, hint=fname)
    function.__defaults__ = getattr(fn, "__defaults__", None)
    _auxes[fn] = function
    return function


def _phi(gfn, positions, many, with_aux=False):
    """``phi(*args, *d) = sum_k <grad_k f(args), d_k>``, source over the composed gradient
    (``as_function``), which srcgrad reads again: its hvp is the derivative of the hvp
    that the gradient's backward is (a third derivative of ``f``); ``with_aux``, plus
    ``<aux(args), d_aux>`` (``has_aux``'s array aux). Made once per gradient."""
    found = _phis.get((id(gfn), with_aux))
    if found is not None and found[0] is gfn:
        return found[1]
    fn = gfn.fn
    composed = gfn.as_function(gfn.has_aux)   # (gradients, aux): the aux is dropped
    if getattr(composed, "_srcgrad_gradient_of", None) is not None \
            and not getattr(composed, "_srcgrad_composed", False):
        raise third_refusal(composed)   # an hvp's wrapper: not read again
    names = [p.name for p in inspect.signature(fn).parameters.values()]
    ds = [f"_sg_d{k}" for k in range(len(positions))]
    terms = [f"_sg_np.sum(_sg_g[{i}] * {d})" if many else f"_sg_np.sum(_sg_g * {d})"
             for i, d in enumerate(ds)]
    if with_aux:
        ds.append("_sg_daux")
        terms.append("_sg_np.sum(_sg_a * _sg_daux)")
    fname = _identifier(f"phi_{getattr(fn, '__name__', 'f')}")
    got = "_sg_g, _sg_a = " if with_aux else "_sg_g = "
    source = (f"def {fname}({', '.join(names + ds)}):\n"
              f"    {got}_sg_gradient({', '.join(names)}){'[0]' if gfn.has_aux and not with_aux else ''}\n"
              f"    return {' + '.join(terms)}\n")
    (function,), _, _ = loader.load(source, [fname], {}, {},
                                    {"_sg_gradient": composed, "_sg_np": numpy}, hint=fname)
    _phis[(id(gfn), with_aux)] = (gfn, function)
    return function


def gradient_function(gfn):
    """``gfn`` as a plain function srcgrad compiles: it calls the custom Function of
    ``gradient_class``, whose adjoint is an hvp of ``gfn.fn``."""
    fn = gfn.fn
    inner = getattr(fn, "_srcgrad_gradient_of", None)
    if inner is not None and not getattr(fn, "_srcgrad_composed", False):
        raise third_refusal(fn)
    cls = gradient_class(gfn)
    params = [p for p in inspect.signature(fn).parameters.values()]
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise UnsupportedError(
            f"differentiating the gradient of {fn.__qualname__} again: its tape code is "
            f"differentiated through an hvp, which takes positional parameters only", *_where(fn))
    names = [p.name for p in params]   # sg.grad(g, wrt="p") names fn's parameters
    fname = _identifier(f"grad_{getattr(fn, '__name__', 'f')}")
    source = (f"def {fname}({', '.join(names)}):\n"
              f"    return _srcgrad_gradient.apply({', '.join(names)})\n")
    (function,), _, _ = loader.load(source, [fname], {}, {}, {"_srcgrad_gradient": cls},
                                    hint=fname)
    function.__defaults__ = getattr(fn, "__defaults__", None)
    function._srcgrad_gradient_of = fn
    function._srcgrad_is_gradient = True
    function._srcgrad_tower = gfn   # at structures, taken over their leaves (leaf_towers.py)
    function.__doc__ = f"The gradient of {fn.__qualname__}; its adjoint is an hvp."
    return function


def through_hvp(outer, args, kwargs, grad_outputs):
    """``outer`` (a GradFunction of ``g.as_function()``) called with a structured argument:
    the composed code holds for arrays and floats, so the gradient ``g`` is differentiated
    as ``gradient_function(g)``, whose adjoint is an hvp that takes structures (a dict
    parameter's second derivative is a dict, ``grad_outputs`` of its shape)."""
    found = outer.__dict__.get("_through_hvp")
    if found is None:
        inner = outer._inner
        function = gradient_function(inner)
        found = outer._through_hvp = api.GradFunction(
            function, outer.wrt, outer.allow_unused, outer.materialize_grads, outer.preserve_result,
            outer.hooks or None, outer.fuse, outer.has_aux)
    if kwargs:
        args = inspect.signature(outer._inner.fn).bind(*args, **kwargs).args
    return found(*args, grad_outputs=grad_outputs)


def differentiable_gradient(outer, inner, has_aux=False):
    """``inner.as_function()``, which ``outer`` differentiates; for a gradient compiled
    only for a structure's fields (``p.a``), ``inner``'s hvp gradient, the refusal kept for
    a call with arrays."""
    try:
        inner.compiled   # the code for arrays and floats, before any argument is seen
    except SrcgradError as exc:
        try:
            function = gradient_function(inner)
        except SrcgradError:
            raise exc from None
        outer._refused = exc
        function._srcgrad_composed_from = inner
        return function
    return inner.as_function(has_aux)


def structured_only(inner, exc):
    """``inner.as_function()`` of a gradient with no code for arrays and floats (``exc``
    says why: it reads a structure's fields, ``p.a``): the function calling it whose
    adjoint is its hvp, which takes structures; ``exc`` raised where there is none."""
    try:
        function = gradient_function(inner)
    except SrcgradError:
        raise exc from None
    function._srcgrad_composed_from = inner
    return function


api.GradFunction.structured_only = structured_only
api.GradFunction.through_hvp = through_hvp
api.GradFunction.differentiable_gradient = differentiable_gradient
api.GradFunction.tape_gradient = gradient_function
api.GradFunction.gradient_class = gradient_class
api.grad.srcgrad_grad_of = grad_of   # what anf_expressions calls for sg.grad(f)(x) inline
# sg.hessian(u)(x) inside: rows of sg.grad (transform/nested_derivatives.py)
hessians.hessian.srcgrad_rows = ("hessian", api.grad)
jacobians.jacobian.srcgrad_rows = jacobians.jacfwd.srcgrad_rows = ("jacobian", api.grad)
forward_api.jvp.srcgrad_jvp_class = nested_jvp.jvp_class   # sg.jvp(f, ...) inline: nested_jvp.py
forward_api.OF_GRADIENT = gradient_jvp   # sg.jvp(sg.grad(f), ...) at structures
