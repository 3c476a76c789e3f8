"""``sg.jvp(f, primals, tangents)`` called inside a differentiated function (reverse over
forward: a Jacobian-vector regularizer, a directional derivative in a PINN's loss).

The call becomes a custom Function of the primals and tangents (made once per ``f`` and
count) whose forward is ``sg.jvp`` and whose backward, for the cotangents ``(w0, w1)`` of
``(f(p), J(p) t)``, is

* for the primals: ``J(p)^T w0`` plus the Hessian-vector product of ``<w1, f(p)>`` along
  ``t`` (the derivative of ``<w1, J(p) t>`` in ``p``);
* for the tangents: ``J(p)^T w1``.

Primals and tangents are floats or float arrays, the output one array or float; anything
else is refused when it runs, saying so.
"""

import numpy

from srcgrad import api, forward_api, hessians
from srcgrad.codegen import loader
from srcgrad.custom_function import Function
from srcgrad.entry import _identifier
from srcgrad.errors import UnsupportedError
from srcgrad.nested_jacobians import _where

_classes = {}
_phis = {}


def _float_value(value):
    if isinstance(value, float):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and dtype.kind == "f"


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
        if d_tangent is not None:
            tangent_grads = pullback(d_tangent)
            weights = numpy.asarray(d_tangent, dtype=float)
            second = hessians.hvp(_phi(fn, n), primals + (weights,), tangents + (None,), wrt=wrt)
            out_grads = [s if g is None else g if s is None else g + s
                         for g, s in zip(out_grads, second[:n])]
        return tuple(out_grads) + tuple(tangent_grads)

    cls = type(f"Jvp_{_identifier(name)}", (Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward),
        "__doc__": f"sg.jvp({name}, ...) with its reverse-mode derivative (nested_jvp.py)."})
    _classes[key] = cls
    return cls

