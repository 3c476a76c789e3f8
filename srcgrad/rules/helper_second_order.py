"""Rules one order up for the helpers that the gradients of products, polynomials,
selections, ``sinc`` and ``cumprod`` call, so that their second derivatives (``sg.hessian``
and ``sg.hvp``: a tangent rule; ``sg.grad(sg.grad(f))``: an adjoint rule) and, where
said, third derivatives work.

``kron_vjp`` and ``convolve_vjp`` are bilinear: ``da`` is linear in ``dy`` and ``b``,
``db`` in ``dy`` and ``a``; with ``<Ga, da> + <Gb, db> = <dy, kron(Ga, b) + kron(a, Gb)>``
the adjoint of their pair is the product itself for ``dy`` and the vjp again for the
operands. ``polyval_vjp`` (the coefficients' gradient) is linear in ``dy`` and a
polynomial in ``x``; ``select_vjp`` is linear in ``dy``, its adjoint ``np.select`` of
the cotangents. Helpers written here for these rules have no rules of their own: an
order beyond is refused at the user's line, naming them.
"""

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, linear, returns_sequence, tangent
from srcgrad.rules.numpy_products import convolve_vjp, kron_vjp
from srcgrad.runtime.arrays import namespace

xp = None  # placeholder: the array namespace, bound in generated code


def _dtype(*values):
    """The result dtype of ``values`` (arrays of any library, Python numbers)."""
    return np.result_type(*(getattr(v, "dtype", np.float64) for v in values))


def _pair(dw, count=2):
    """The items of a helper's list cotangent, None for "no gradient" (a zero)."""
    items = list(dw) if isinstance(dw, (list, tuple)) else [None] * count
    return [None if rt.is_zero_grad(g) else g for g in items]


# ----- kron and convolve: bilinear -----

@rt.helper
def kron_vjp_adjoint(dw, dy, a, b):
    """The adjoint of ``kron_vjp(dy, a, b) -> (da, db)`` for its pair's cotangent ``dw``:
    ``[d dy, d a, d b]``."""
    ga, gb = _pair(dw)
    xp = namespace(dy, a, b)
    d_dy, d_a, d_b = 0.0, 0.0, 0.0
    if ga is not None:
        d_dy = xp.kron(ga, b)
        d_b = kron_vjp(dy, ga, b)[1]
    if gb is not None:
        d_dy = d_dy + xp.kron(a, gb)
        d_a = kron_vjp(dy, a, gb)[0]
    return [d_dy, d_a, d_b]


@rt.helper
def kron_vjp_tangent(dy, a, b, t_dy, t_a, t_b):
    """The tangent of ``kron_vjp(dy, a, b)`` along ``t_dy, t_a, t_b`` (None: zero)."""
    return _bilinear_tangent(kron_vjp, dy, a, b, t_dy, t_a, t_b)


def _bilinear_tangent(vjp, dy, a, b, t_dy, t_a, t_b, *extra):
    xp = namespace(dy, a, b)
    t_da = xp.zeros(xp.asarray(a).shape, dtype=_dtype(a, b, dy))
    t_db = xp.zeros(xp.asarray(b).shape, dtype=t_da.dtype)
    if t_dy is not None:
        da, db = vjp(t_dy, a, b, *extra)
        t_da, t_db = t_da + da, t_db + db
    if t_b is not None:
        t_da = t_da + vjp(dy, a, t_b, *extra)[0]
    if t_a is not None:
        t_db = t_db + vjp(dy, t_a, b, *extra)[1]
    return [t_da, t_db]


@rt.helper
def convolve_vjp_adjoint(dw, dy, a, v, mode="full"):
    """The adjoint of ``convolve_vjp(dy, a, v, mode) -> (da, dv)`` for its pair's
    cotangent ``dw``: ``[d dy, d a, d v]``."""
    ga, gv = _pair(dw)
    xp = namespace(dy, a, v)
    d_dy, d_a, d_v = 0.0, 0.0, 0.0
    if ga is not None:
        d_dy = xp.convolve(ga, v, mode)
        d_v = convolve_vjp(dy, ga, v, mode)[1]
    if gv is not None:
        d_dy = d_dy + xp.convolve(a, gv, mode)
        d_a = convolve_vjp(dy, a, gv, mode)[0]
    return [d_dy, d_a, d_v]


@rt.helper
def convolve_vjp_tangent(dy, a, v, mode, t_dy, t_a, t_v):
    """The tangent of ``convolve_vjp(dy, a, v, mode)`` along ``t_dy, t_a, t_v``."""
    return _bilinear_tangent(convolve_vjp, dy, a, v, t_dy, t_a, t_v, mode)


returns_sequence(rt.kron_vjp, rt.convolve_vjp, rt.kron_vjp_adjoint, rt.convolve_vjp_adjoint,
                 rt.kron_vjp_tangent, rt.convolve_vjp_tangent)


@adjoint(rt.kron_vjp)
def kron_vjp_adj(dw, w, dy, a, b):
    g = rt.kron_vjp_adjoint(dw, dy, a, b)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2)


@tangent(rt.kron_vjp)
def kron_vjp_tan(w, dy, a, b, *, t_dy, t_a, t_b):
    return rt.kron_vjp_tangent(dy, a, b, t_dy, t_a, t_b)


@adjoint(rt.convolve_vjp)
def convolve_vjp_adj(dw, w, dy, a, v, mode="full"):
    g = rt.convolve_vjp_adjoint(dw, dy, a, v, mode)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2), None


@tangent(rt.convolve_vjp, no_tangent=("mode",))
def convolve_vjp_tan(w, dy, a, v, mode="full", *, t_dy, t_a, t_v):
    return rt.convolve_vjp_tangent(dy, a, v, mode, t_dy, t_a, t_v)


# ----- polyval's coefficients -----

@rt.helper
def polyval_vjp_tangent(dy, p, x, t_dy, t_x):
    """The tangent of ``polyval_vjp(dy, p, x)`` (the coefficients' gradient) along
    ``t_dy`` (linear) and ``t_x``: ``sum(dy * t_x * k x ** (k - 1))`` for power ``k``."""
    xp = namespace(dy, x, p)
    n = xp.asarray(p).shape[0]
    out = xp.zeros(n, dtype=_dtype(p, x, dy))
    if t_dy is not None:
        out = out + rt.polyval_vjp(t_dy, p, x)
    if t_x is not None:
        k = xp.arange(n - 1, -1, -1, dtype=out.dtype)
        powers = k * xp.asarray(x)[..., None] ** xp.maximum(k - 1, 0)
        g = (xp.asarray(dy) * xp.asarray(t_x))[..., None] * powers
        out = out + g.reshape(-1, n).sum(axis=0)
    return out


@adjoint(rt.polyval_vjp)
def polyval_vjp_adj(dw, w, dy, p, x):
    return (rt.broadcast_like(xp.polyval(dw, x), dy), None,
            rt.unbroadcast(dy * xp.polyval(rt.polyder(dw), x), x))


@tangent(rt.polyval_vjp, no_tangent=("p",))
def polyval_vjp_tan(w, dy, p, x, *, t_dy, t_x):
    return rt.polyval_vjp_tangent(dy, p, x, t_dy, t_x)


# ----- select's choices -----

@rt.helper
def select_vjp_adjoint(dw, dy, condlist):
    """The adjoint of ``select_vjp(dy, condlist, choicelist)`` for its list cotangent
    ``dw`` (one per choice): the cotangents selected as ``np.select`` selects, in
    ``dy``'s shape (0 where no condition holds)."""
    grads = _pair(dw, len(condlist))
    if all(g is None for g in grads):
        return 0.0
    xp = namespace(dy, *[g for g in grads if g is not None])
    picked = xp.select(list(condlist), [0.0 if g is None else g for g in grads], 0.0)
    shape = np.broadcast_shapes(picked.shape, rt.shape_tuple(dy))
    return rt.unbroadcast(xp.broadcast_to(picked, shape), dy)


returns_sequence(rt.select_vjp)


@adjoint(rt.select_vjp, sequences=("condlist", "choicelist"))
def select_vjp_adj(dw, w, dy, condlist, choicelist):
    return rt.select_vjp_adjoint(dw, dy, condlist), None, None


# ----- sinc's second derivative, cumprod's tangent -----

@rt.helper
def sinc_grad3(x):
    """``sinc'''(x)``, from ``x s'' + 2 s' + pi**2 x s = 0`` differentiated:
    ``-(3 s'' + pi**2 (s + x s')) / x``, its Taylor series near 0 (its own derivative
    is not provided: a fifth derivative of sinc is refused)."""
    xp = namespace(x)
    p2 = xp.pi ** 2
    small = xp.abs(x) < 1e-2
    safe = xp.where(small, 1.0, x)
    series = x * (p2 * p2 / 5 - x * x * (p2 ** 3 / 42 - x * x * p2 ** 4 / 1080))
    exact = -(3.0 * rt.sinc_grad2(safe) + p2 * (xp.sinc(safe) + safe * rt.sinc_grad(safe))) / safe
    return xp.where(small, series, exact)


@adjoint(rt.sinc_grad2)
def sinc_grad2_adjoint(dw, w, x):
    return dw * rt.sinc_grad3(x)


@tangent(rt.sinc_grad2)
def sinc_grad2_tangent(w, x, *, t_x):
    return t_x * rt.sinc_grad3(x)


@adjoint(rt.cumprod_jvp)
def cumprod_jvp_adj(dw, w, a, t, axis=None):
    """``cumprod_jvp(a, t)`` is ``J(a) t``: its adjoint in ``t`` is ``cumprod``'s vjp, in
    ``a`` the Hessian of ``<dw, cumprod(a)>`` along ``t`` (``cumprod_vjp_a``)."""
    return rt.cumprod_vjp_a(dw, a, t, axis), rt.cumprod_vjp(dw, a, axis), None


# ----- polyder: linear in the coefficients (polyval's gradient in x calls it) -----

@rt.helper
def polyder_vjp(dy, p, m=1):
    """Gradient of ``polyder(p, m)`` (1-D ``p``): entry ``i`` of the result is ``p[i]``
    times ``prod_{s<m} (n - 1 - i - s)``, so ``dy`` times that, zeros for the last ``m``."""
    xp = namespace(dy, p)
    n = xp.asarray(p).shape[0]
    g = xp.zeros(n, dtype=_dtype(p, dy))
    if n > m:
        i = xp.arange(n - m, dtype=g.dtype)
        factor = xp.ones(n - m, dtype=g.dtype)
        for s in range(m):
            factor = factor * (n - 1 - s - i)
        g[:n - m] = xp.asarray(dy) * factor
    return g


@adjoint(np.polyder)
def polyder(dy, y, p, m=1):
    return rt.polyder_vjp(dy, p, m), None


@adjoint(rt.polyder)
def polyder_rt(dy, y, p, m=1):
    return rt.polyder_vjp(dy, p, m), None


linear((np.polyder, rt.polyder), "p")


@adjoint(rt.polyder_vjp)
def polyder_vjp_adj(dw, w, dy, p, m=1):
    return rt.polyder(dw, m), None, None


linear(rt.polyder_vjp, "dy", no_tangent=("p",))


# ----- np.average's weights -----

@rt.helper
def average_weights_tangent(a, t_weights, axis=None):
    """The tangent of ``average_weights(a, weights, axis)`` along ``t_weights`` (None:
    zero; the ones of ``weights=None`` are constant)."""
    if t_weights is None:
        return 0.0
    return rt.average_weights(a, t_weights, axis)


@tangent(rt.average_weights, no_tangent=("a", "axis"))
def average_weights_tan(w, a, weights, axis=None, *, t_weights):
    return rt.average_weights_tangent(a, t_weights, axis)


@rt.helper
def weights_vjp_tangent(t_g, weights, a, axis=None):
    """The tangent of ``weights_vjp(g, weights, a, axis)`` along ``t_g`` (linear in it;
    None: zero)."""
    if t_g is None:
        return None
    return rt.weights_vjp(t_g, weights, a, axis)


@tangent(rt.weights_vjp, no_tangent=("weights", "a", "axis"))
def weights_vjp_tan(w, g, weights, a, axis=None, *, t_g):
    return rt.weights_vjp_tangent(t_g, weights, a, axis)
