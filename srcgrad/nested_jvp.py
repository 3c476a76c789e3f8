"""``sg.jvp(f, primals, tangents)`` called inside a differentiated function (reverse over
forward: a Jacobian-vector regularizer, a directional derivative in a PINN's loss).

The call becomes a custom Function of the primals and tangents (made once per ``f`` and
count) whose forward is ``sg.jvp`` and whose backward, for the cotangents ``(w0, w1)`` of
``(f(p), J(p) t)``, is

* for the primals: ``J(p)^T w0`` plus the Hessian-vector product of ``<w1, f(p)>`` along
  ``t`` (the derivative of ``<w1, J(p) t>`` in ``p``);
* for the tangents: ``J(p)^T w1``.

Differentiated again (its forward mode, the Hessian of a loss using it), everything is
read off ``L(p, t, w0, w1) = <w0, f(p)> + <w1, J(p) t>`` written over ``f``'s tangent
program, which srcgrad reads as source: the jvp is the tangent program's own jvp
(forward over forward: ``J dp`` and ``J dt + D2f[dp, t]``), and the backward's
derivatives are hvps of ``L`` (its gradient in ``(p, t)`` is the backward).

Primals and tangents are floats or float arrays, the output one array or float; anything
else is refused when it runs, saying so.
"""

import inspect

import numpy

from srcgrad import api, forward_api, hessians
from srcgrad.codegen import loader
from srcgrad.custom_function import Function
from srcgrad.entry import _identifier
from srcgrad.errors import SrcgradError, UnsupportedError
from srcgrad.nested_jacobians import _where
from srcgrad.runtime.containers import Zero

_classes = {}
_phis = {}
_ells = {}


def _float_value(value):
    if isinstance(value, float):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and dtype.kind == "f"


def _zero(like):
    return numpy.zeros_like(like) if numpy.ndim(like) else 0.0


def _phi(fn, n):
    """``phi(p_1, ..., p_n, w) = sum(w * fn(p_1, ..., p_n))``, source srcgrad reads (its hvp
    along the tangents is the backward's second term). Made once per ``fn`` and ``n``."""
    key = (fn, n)
    found = _phis.get(key)
    if found is not None:
        return found
    names = [f"_sg_p{k}" for k in range(n)]
    fname = _identifier(f"phi_{getattr(fn, '__name__', 'f')}")
    source = (f"def {fname}({', '.join(names)}, _sg_w):\n"
              f"    return _sg_np.sum(_sg_w * _sg_f({', '.join(names)}))\n")
    (function,), _, _ = loader.load(source, [fname], {}, {}, {"_sg_f": fn, "_sg_np": numpy},
                                    hint=fname)
    _phis[key] = function
    return function


def _tangent_program(fn, n, name):
    """``f``'s tangent program with tangents of its first ``n`` parameters (the
    CompiledJVP: ``function(*params, *tangents)`` returns ``(f(p), J(p) t)``), and the
    default values of its other parameters, which it takes after the primals."""
    signature = inspect.signature(fn).parameters
    params = list(signature)[:n]
    compiled = forward_api._compiled(fn, params)
    rest = list(compiled.params)[n:]
    if list(compiled.params)[:n] != params or list(compiled.active) != params or any(
            signature[p].default is inspect.Parameter.empty for p in rest if p in signature):
        raise UnsupportedError(f"sg.jvp({name}, ...) inside a differentiated function, "
                               f"differentiated again, takes a function of its primals only",
                               *_where(fn))
    return compiled, tuple(signature[p].default for p in rest)


def _ell(fn, n, name):
    """``L(p_1..p_n, t_1..t_n, w0, w1) = sum(w0 * f(p)) + sum(w1 * J(p) t)``, source over
    ``f``'s tangent program (module docstring)."""
    compiled, defaults = _tangent_program(fn, n, name)
    key = (fn, n)
    found = _ells.get(key)
    if found is not None and found[0] is compiled.function:
        return found[1]
    primals, tangents = [f"_sg_p{k}" for k in range(n)], [f"_sg_t{k}" for k in range(n)]
    fixed = [f"_sg_default{k}" for k in range(len(defaults))]
    fname = _identifier(f"ell_{name}")
    source = (f"def {fname}({', '.join(primals + tangents)}, _sg_w0, _sg_w1):\n"
              f"    _sg_y, _sg_u = _sg_tp({', '.join(primals + fixed + tangents)})\n"
              f"    return _sg_np.sum(_sg_w0 * _sg_y) + _sg_np.sum(_sg_w1 * _sg_u)\n")
    (function,), _, _ = loader.load(source, [fname], {}, {}, {
        "_sg_tp": compiled.function, "_sg_np": numpy, **dict(zip(fixed, defaults))}, hint=fname)
    _ells[key] = (compiled.function, function)
    return function


def jvp_class(fn, n):
    """The custom Function computing ``sg.jvp(fn, primals, tangents)`` of ``n`` primals
    (``apply(*primals, *tangents)``) whose backward is the module docstring's."""
    key = (fn, n)
    found = _classes.get(key)
    if found is not None:
        return found
    name = getattr(fn, "__name__", "f")

    def refuse(what):
        return UnsupportedError(f"sg.jvp({name}, ...) inside a differentiated function takes "
                                f"{what}", *_where(fn))

    def forward(ctx, *args):
        primals, tangents = args[:n], args[n:]
        if not all(_float_value(p) for p in primals):
            raise refuse("float or float-array primals")
        ctx.save_for_backward(*args)
        out, tangent = forward_api.jvp(fn, primals, tuple(
            numpy.zeros_like(p) if t is None else t for p, t in zip(primals, tangents)))
        if not _float_value(out):
            raise refuse("a function returning one float or float array")
        ctx.outputs_like = (out, out)   # the zero cotangents of (f(p), J t) are of its shape
        return out, tangent

    def backward(ctx, d_out, d_tangent):
        args = ctx.saved_tensors
        primals = args[:n]
        tangents = tuple(numpy.zeros_like(p) if t is None else t for p, t in zip(primals, args[n:]))
        wrt = tuple(range(n))
        _, pullback = api.vjp(fn, wrt=wrt)(*primals)
        out_grads = [None] * n
        if d_out is not None:
            out_grads = list(pullback(d_out, retain_graph=True))
        tangent_grads = (None,) * n
        if d_tangent is not None:   # a tangent given as None (zero) gets no gradient
            tangent_grads = tuple(None if t is None else g
                                  for t, g in zip(args[n:], pullback(d_tangent)))
            weights = numpy.asarray(d_tangent, dtype=float)
            second = hessians.hvp(_phi(fn, n), primals + (weights,), tangents + (None,), wrt=wrt)
            out_grads = [s if g is None else g if s is None else g + s
                         for g, s in zip(out_grads, second[:n])]
        return tuple(out_grads) + tuple(tangent_grads)

    def filled(values, like):   # (rt.ZERO, an adjoint nothing reached in code differentiated
        # again, is a zero too: given on, a float subclass would compile as an object)
        return tuple(_zero(p) if v is None or v.__class__ is Zero else v for v, p in zip(values, like))

    def full(ctx):   # the primals, and the tangents with zeros for None
        args = ctx.saved_tensors
        return args[:n] + filled(args[n:], args[:n])

    def given(ctx, products):   # None for a tangent input given as None
        return tuple(None if a is None else g for a, g in zip(ctx.saved_tensors, products))

    def jvp(ctx, *tangents):   # forward over forward: the tangent program's own jvp
        args = full(ctx)
        compiled, defaults = _tangent_program(fn, n, name)
        program_args = args[:n] + defaults + args[n:]   # the program's parameters' order
        program_tangents = filled(tangents[:n], args[:n]) + (None,) * len(defaults) \
            + filled(tangents[n:], args[n:])
        try:
            _, (d_out, d_tangent) = forward_api.jvp(compiled.function, program_args,
                                                    program_tangents)
        except SrcgradError as exc:
            raise refuse_again(exc) from None
        return d_out, d_tangent

    def ell_products(ctx, grads, first, second):
        """The hvp of L at (args, w0, w1) along (first, second)."""
        args = full(ctx)
        out = ctx.outputs_like
        primals = tuple(args) + filled(grads, out)
        try:
            return hessians.hvp(_ell(fn, n, name), primals,
                                filled(first, args) + filled(second, out))
        except SrcgradError as exc:
            raise refuse_again(exc) from None

    def refuse_again(exc):
        return UnsupportedError(f"differentiating sg.jvp({name}, ...) inside a differentiated "
                                f"function again: {exc.message}", *_where(fn))

    def backward_vjp(ctx, grads, cotangents):
        products = ell_products(ctx, grads, cotangents, (None, None))
        return given(ctx, products[:2 * n]), products[2 * n:]

    def backward_jvp(ctx, grads, input_tangents, grad_tangents):
        return given(ctx, ell_products(ctx, grads, input_tangents, grad_tangents)[:2 * n])

    cls = type(f"Jvp_{_identifier(name)}", (Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward),
        "jvp": staticmethod(jvp), "_srcgrad_backward_vjp": staticmethod(backward_vjp),
        "_srcgrad_backward_jvp": staticmethod(backward_jvp),
        "__doc__": f"sg.jvp({name}, ...) with its reverse-mode derivative (nested_jvp.py)."})
    _classes[key] = cls
    return cls

