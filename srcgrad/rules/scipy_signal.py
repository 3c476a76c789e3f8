"""Adjoint and tangent rules of ``scipy.signal``'s ``convolve`` (any number of dimensions,
any ``method``) and ``convolve2d`` (``boundary='fill'``, ``fillvalue=0``) of real arrays,
loaded the first time a rule lookup misses while the program has imported
``scipy.signal`` (rules/__init__.py): autograd's convnet.py convolves so.

A convolution is bilinear: with ``dy`` placed in the 'full' output (centred there, as
SciPy's 'same' and 'valid' outputs are), ``da = correlate(dy, v, 'valid')`` and
``dv = correlate(dy, a, 'valid')``. The vjp helper is bilinear too, so its own rules
(second derivatives) are those of helper_second_order.py's ``convolve_vjp``.
"""

import numpy as np
import scipy.signal as ss

from srcgrad import rules, runtime as rt
from srcgrad.rules import adjoint, returns_sequence, tangent
from srcgrad.rules.helper_second_order import _bilinear_tangent, _pair

xp = None  # placeholder: the array namespace, bound in generated code

rt.signal_convolve, rt.signal_convolve2d = ss.convolve, ss.convolve2d


def _convolve(a, v, mode, two_d):
    return ss.convolve2d(a, v, mode) if two_d else ss.convolve(a, v, mode)


@rt.helper
def signal_convolve_vjp(dy, a, v, mode="full", two_d=False):
    """Gradients of ``scipy.signal.convolve(a, v, mode)`` (``convolve2d``: ``two_d``):
    the pair ``(da, dv)``."""
    a, v, dy = np.asarray(a), np.asarray(v), np.asarray(dy)
    if np.iscomplexobj(a) or np.iscomplexobj(v):
        raise TypeError("srcgrad: the gradient of scipy.signal.convolve is of real arrays")
    full = tuple(n + m - 1 for n, m in zip(a.shape, v.shape))
    g = np.zeros(full, dtype=np.result_type(dy.dtype, a.dtype, v.dtype))
    g[tuple(slice((f - d) // 2, (f - d) // 2 + d) for f, d in zip(full, dy.shape))] = dy
    correlate = ss.correlate2d if two_d else ss.correlate
    return [correlate(g, v, "valid"), correlate(g, a, "valid")]


@adjoint(ss.convolve)
def convolve(dy, y, in1, in2, mode="full", method="auto"):
    g = rt.signal_convolve_vjp(dy, in1, in2, mode)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), None, None


@adjoint(ss.convolve2d, literals={"boundary": ("fill",), "fillvalue": (0,)})
def convolve2d(dy, y, in1, in2, mode="full", boundary="fill", fillvalue=0):
    g = rt.signal_convolve_vjp(dy, in1, in2, mode, True)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), None, None, None


@tangent(ss.convolve, no_tangent=("mode", "method"))
def convolve_tangent(y, in1, in2, mode="full", method="auto", *, t_in1, t_in2):
    return rt.signal_convolve(t_in1, in2, mode) + rt.signal_convolve(in1, t_in2, mode)


@tangent(ss.convolve2d, no_tangent=("mode", "boundary", "fillvalue"))
def convolve2d_tangent(y, in1, in2, mode="full", boundary="fill", fillvalue=0, *, t_in1, t_in2):
    return rt.signal_convolve2d(t_in1, in2, mode) + rt.signal_convolve2d(in1, t_in2, mode)


# ----- One order up: the vjp is bilinear in (dy, v) and (dy, a) -----

@rt.helper
def signal_convolve_vjp_adjoint(dw, dy, a, v, mode="full", two_d=False):
    """The adjoint of ``signal_convolve_vjp(dy, a, v, mode) -> (da, dv)`` for its pair's
    cotangent ``dw``: ``[d dy, d a, d v]``."""
    ga, gv = _pair(dw)
    d_dy, d_a, d_v = 0.0, 0.0, 0.0
    if ga is not None:
        d_dy = _convolve(ga, v, mode, two_d)
        d_v = signal_convolve_vjp(dy, ga, v, mode, two_d)[1]
    if gv is not None:
        d_dy = d_dy + _convolve(a, gv, mode, two_d)
        d_a = signal_convolve_vjp(dy, a, gv, mode, two_d)[0]
    return [d_dy, d_a, d_v]


@rt.helper
def signal_convolve_vjp_tangent(dy, a, v, mode, two_d, t_dy, t_a, t_v):
    """The tangent of ``signal_convolve_vjp(dy, a, v, mode)`` along ``t_dy, t_a, t_v``."""
    return _bilinear_tangent(signal_convolve_vjp, dy, a, v, t_dy, t_a, t_v, mode, two_d)


returns_sequence(rt.signal_convolve_vjp, rt.signal_convolve_vjp_adjoint,
                 rt.signal_convolve_vjp_tangent)


@adjoint(rt.signal_convolve_vjp)
def signal_convolve_vjp_adj(dw, w, dy, a, v, mode="full", two_d=False):
    g = rt.signal_convolve_vjp_adjoint(dw, dy, a, v, mode, two_d)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2), None, None


@tangent(rt.signal_convolve_vjp, no_tangent=("mode", "two_d"))
def signal_convolve_vjp_tan(w, dy, a, v, mode="full", two_d=False, *, t_dy, t_a, t_v):
    return rt.signal_convolve_vjp_tangent(dy, a, v, mode, two_d, t_dy, t_a, t_v)


rules._LIBRARIES_LOADED.add("scipy.signal")   # imported directly too: loaded, not again
