"""Tangent and adjoint rules of the linear-algebra gradient helpers (``rt.solve_vjp``,
``rt.norm_vjp``, ``rt.cholesky_vjp``, ``rt.eigh_vjp``, ``rt.matrix_power_vjp``,
``rt.cofactor``): second derivatives through ``numpy.linalg`` (issue 14), in forward
over reverse (``sg.hessian``, ``sg.hvp``) and reverse over reverse (``grad(grad(f))``).

Each helper's tangent is a helper ``<name>_tangent`` taking the tangents (None: zero)
and each one's adjoint a helper ``<name>_adjoint`` returning one cotangent per parameter;
the helpers they call have no rules of their own, so a third derivative through them is
refused at compile time (``rt.matrix_power_vjp``'s rules call ``matrix_power_vjp`` and
``matrix_power_jvp`` again, and ``rt.matrix_power_vjp_da``, which has none).

Kinks, where the second derivative does not exist and a number would be a guess:

* ``norm``: the 2-norm, the p-norms and 'fro' at a zero vector (or p < 2 with a zero
  entry) raise NonDifferentiableError (inf or nan on Dask, whose values are not read) (the gradient there is 0 by convention, and
  ``||x||**2`` and ``||x||**3`` would get the same, wrong for one); the piecewise
  linear norms (ord 1, inf, -inf, 0, the matrix 1/inf norms) have a zero second
  derivative of their weights, the derivative of the gradient's ``sign``/ties
  convention (what PyTorch and JAX give); the matrix 'nuc', 2 and -2 norms (from
  the SVD) are decomposition_second_order.py's.
* ``eigh``: the eigenvectors' derivative divides by the eigenvalues' gaps: repeated
  eigenvalues give inf or nan (as in PyTorch and JAX), never a finite number.
* ``det`` (``rt.cofactor``): its second derivative exact at a singular matrix too
  (``rt.cofactor_derivative``), the third and higher at an invertible one (singular:
  LinAlgError); ``solve``: an invertible matrix (singular: LinAlgError).
"""

import numpy as np

from srcgrad import runtime as rt
from srcgrad.errors import NonDifferentiableError
from srcgrad.rules import adjoint, run_at_zero, tangent
from srcgrad.rules.decomposition_second_order import svd_norm_vjp_adjoint, svd_norm_vjp_tangent
from srcgrad.rules.numpy_linalg import norm_vjp as first_norm_vjp
from srcgrad.rules.numpy_linalg import power_terms
from srcgrad.runtime.arrays import namespace, shape_tuple
from srcgrad.runtime.broadcast import unbroadcast
from srcgrad.runtime.containers import is_zero_grad
from srcgrad.runtime.dask_forms import is_dask

xp = None  # placeholder: the array namespace, bound in generated code


def _given(t):
    """``t`` as an array, or None where it is a zero (None or a Python 0)."""
    return None if is_zero_grad(t) else t


def _part(t, k):
    """Entry ``k`` of a pair of tangents or cotangents (None where it is a zero)."""
    if is_zero_grad(t):
        return None
    return _given(t[k])


def _t(x):
    return x.swapaxes(-1, -2)


# ----- rt.cofactor (det's gradient): det(a) a^-T -----


@rt.helper
def cofactor_derivative(a, e):
    """The derivative of ``w = cofactor(a)`` (det's gradient, ``det(a) a^-T``) along ``e``,
    exact at a singular ``a`` too (a grad of grad or Hessian of det there raised
    LinAlgError from ``inv``). Invertible: ``<w, e> a^-T - a^-T e^T w``. Else from the SVD
    ``a = u diag(s) vh``: ``sign u G vh`` with ``f = u^T e vh^T``, ``G_ij = -f_ji P_ij``
    off the diagonal and ``G_ii = sum_{k != i} P_ik f_kk``, ``P_ij`` the product of the
    singular values other than the i-th and j-th (the polynomial the first form equals
    where ``a`` is invertible). The map is its own adjoint (``P`` is symmetric)."""
    xp = namespace(a, e)
    det = xp.linalg.det(a)
    if bool(xp.all(det != 0)):
        try:
            ait = _t(xp.linalg.inv(a))
            if bool(xp.all(xp.isfinite(ait))):
                w = xp.asarray(det)[..., None, None] * ait
                inner = xp.sum(w * e, axis=(-2, -1))
                return xp.asarray(inner)[..., None, None] * ait - xp.matmul(ait, xp.matmul(_t(e), w))
        except np.linalg.LinAlgError:
            pass
    u, s, vh = xp.linalg.svd(a)
    n = s.shape[-1]
    eye = xp.eye(n, dtype=bool)
    others = eye[:, None, :] | eye[None, :, :]             # [i, j, l]: l is i or j
    p = xp.prod(xp.where(others, 1.0, s[..., None, None, :]), axis=-1)
    f = xp.matmul(_t(u), xp.matmul(e, _t(vh)))
    f_diag = xp.diagonal(f, axis1=-2, axis2=-1)
    on = xp.sum(xp.where(eye, 0.0, p * f_diag[..., None, :]), axis=-1)
    g = xp.where(eye, on[..., :, None], -_t(f) * p)
    sign = xp.linalg.det(u) * xp.linalg.det(vh)
    return xp.asarray(sign)[..., None, None] * xp.matmul(u, xp.matmul(g, vh))


@tangent(rt.cofactor)
def cofactor(y, a, *, t_a):
    return rt.cofactor_derivative(a, t_a)


@adjoint(rt.cofactor)
def cofactor_adjoint(dw, w, a):
    """The derivative of ``cofactor`` is self-adjoint: its adjoint is the same map."""
    return rt.cofactor_derivative(a, dw)


@tangent(rt.cofactor_derivative)
def cofactor_derivative_tangent(y, a, e, *, t_a, t_e):
    return rt.cofactor_derivative_jvp(a, e, t_a, t_e)


@rt.helper
def cofactor_derivative_jvp(a, e, t_a, t_e):
    """The tangent of ``cofactor_derivative(a, e)``: the map along ``t_e``, and the third
    derivative of det along ``t_a`` (an invertible ``a``: ``a^-T`` moves with ``a``)."""
    xp = namespace(a)
    t_a, t_e = _given(t_a), _given(t_e)
    out = 0.0 if t_e is None else cofactor_derivative(a, t_e)
    if t_a is None:
        return out
    ait = _t(xp.linalg.inv(a))
    w = rt.cofactor(a)
    dait = -xp.matmul(ait, xp.matmul(_t(t_a), ait))
    dw = cofactor_derivative(a, t_a)
    return out + (xp.sum(dw * e, axis=(-2, -1), keepdims=True) * ait
                  + xp.sum(w * e, axis=(-2, -1), keepdims=True) * dait
                  - xp.matmul(dait, xp.matmul(_t(e), w)) - xp.matmul(ait, xp.matmul(_t(e), dw)))


@adjoint(rt.cofactor_derivative)
def cofactor_derivative_adjoint(dw, w, a, e):
    """The transpose of the tangent above in ``a``; in ``e`` the map itself."""
    inv = xp.linalg.inv(a)
    ait = xp.swapaxes(inv, -1, -2)
    cof = rt.cofactor(a)
    dwt = xp.swapaxes(dw, -1, -2)
    et = xp.swapaxes(e, -1, -2)
    da = (xp.sum(dw * ait, axis=(-2, -1), keepdims=True) * rt.cofactor_derivative(a, e)
          - xp.sum(cof * e, axis=(-2, -1), keepdims=True) * xp.matmul(ait, xp.matmul(dwt, ait))
          + xp.matmul(xp.matmul(ait, xp.matmul(et, cof)), xp.matmul(dwt, ait))
          - rt.cofactor_derivative(a, xp.matmul(e, xp.matmul(inv, dw))))
    return da, rt.cofactor_derivative(a, dw)


# ----- rt.solve_vjp(dy, a, b, y) = (ga, gb): gb = a^-T dy, ga = -gb y^T -----


@tangent(rt.solve_vjp, no_tangent=("b",))
def solve_vjp(g, dy, a, b, y, *, t_dy, t_a, t_y):
    return rt.solve_vjp_tangent(t_dy, t_a, t_y, dy, a, b, y)


@adjoint(rt.solve_vjp)
def solve_vjp_rule(dw, w, dy, a, b, y):
    h = rt.solve_vjp_adjoint(dw, dy, a, b, y)
    return h[0], h[1], None, h[2]


def _columns(b, xp_):
    """Functions taking a solve's vectors to columns and back (NumPy 2: ``b`` is a
    vector exactly when it is 1-D)."""
    if len(shape_tuple(b)) == 1:
        return (lambda v: xp_.asarray(v)[..., None]), (lambda v: v[..., 0])
    return xp_.asarray, (lambda v: v)


@rt.helper
def solve_vjp_tangent(t_dy, t_a, t_y, dy, a, b, y):
    """The tangent of ``solve_vjp(dy, a, b, y)`` (None: a zero tangent):
    ``dgb = a^-T (t_dy - t_a^T gb)``, ``dga = -(dgb y^T + gb t_y^T)``."""
    xp_ = namespace(dy, a, y)
    col, uncol = _columns(b, xp_)
    at = _t(xp_.asarray(a))
    gb = xp_.linalg.solve(at, col(dy))
    rhs = 0.0 if _given(t_dy) is None else col(t_dy)
    if _given(t_a) is not None:
        rhs = rhs - xp_.matmul(_t(xp_.asarray(t_a)), gb)
    dgb = xp_.linalg.solve(at, xp_.broadcast_to(xp_.asarray(rhs, dtype=gb.dtype), gb.shape))
    dga = -xp_.matmul(dgb, _t(col(y)))
    if _given(t_y) is not None:
        dga = dga - xp_.matmul(gb, _t(col(t_y)))
    return unbroadcast(dga, a), unbroadcast(uncol(dgb), b)


@rt.helper
def solve_vjp_adjoint(dw, dy, a, b, y):
    """Cotangents of ``(dy, a, y)`` for ``solve_vjp(dy, a, b, y)`` given ``dw = (wa, wb)``:
    with ``v = wb - wa y`` and ``z = a^-1 v``: ``z``, ``-gb z^T`` and ``-wa^T gb``."""
    xp_ = namespace(dy, a, y)
    col, uncol = _columns(b, xp_)
    wa, wb = _part(dw, 0), _part(dw, 1)
    gb = xp_.linalg.solve(_t(xp_.asarray(a)), col(dy))
    v = xp_.zeros(gb.shape, dtype=gb.dtype) if wb is None else xp_.broadcast_to(col(wb), gb.shape)
    if wa is not None:
        v = v - xp_.matmul(wa, col(y))
    z = xp_.linalg.solve(a, v)
    d_y = 0.0 if wa is None else unbroadcast(uncol(-xp_.matmul(_t(xp_.asarray(wa)), gb)), y)
    return unbroadcast(uncol(z), dy), unbroadcast(-xp_.matmul(gb, _t(z)), a), d_y


# ----- rt.norm_vjp(dy, x, y, ...) = dy * G(x, y), G the norm's weights -----


run_at_zero(rt.norm_vjp)   # ||x||**2 at 0: its adjoint and that one's tangent are 0 there


@tangent(rt.norm_vjp, no_tangent=("ord", "axis", "keepdims", "kind"))
def norm_vjp(g, dy, x, y, ord=None, axis=None, keepdims=False, kind="norm", *, t_dy, t_x, t_y):
    return rt.norm_vjp_tangent(t_dy, t_x, t_y, dy, x, y, ord, axis, keepdims, kind)


@adjoint(rt.norm_vjp)
def norm_vjp_rule(dw, w, dy, x, y, ord=None, axis=None, keepdims=False, kind="norm"):
    h = rt.norm_vjp_adjoint(dw, dy, x, y, ord, axis, keepdims, kind)
    return h[0], h[1], h[2], None, None, None, None


def _norm_form(nd, ord, axis, kind):
    """``(axes, p)`` of a norm: the axes it reduces and, for the smooth ones, the p of
    ``G = sign(x) |x|^(p-1) / y^(p-1)`` ('fro' and the 2-norm: 2); ``p`` None for the
    piecewise linear ones (G piecewise constant); "svd" for the SVD norms."""
    def norm_axes(a):
        return tuple(range(nd)) if a is None else tuple(
            v % nd for v in (a if isinstance(a, (tuple, list)) else (a,)))

    if kind == "vector":
        axes, matrix, ord = norm_axes(axis), False, 2 if ord is None else ord
    elif kind == "matrix":
        axes, matrix, ord = (nd - 2, nd - 1), True, "fro" if ord is None else ord
    else:
        axes = norm_axes(axis)
        matrix = len(axes) == 2 and not (axis is None and ord is None)
    if matrix:
        if ord in (None, "fro"):
            return axes, 2
        if ord in ("nuc", 2, -2):
            return axes, "svd"   # decomposition_second_order.py
        return axes, None
    if ord is None:
        return axes, 2
    if ord in (1, 0, np.inf, -np.inf):
        return axes, None
    return axes, float(ord)


def _norm_parts(dy, x, y, ord, axis, keepdims, kind):
    """The pieces both rules need: ``x``, ``G``, the reduced axes, ``p``, ``y`` and
    ``dy`` spread over ``x``'s shape, and the map back to ``y``'s shape."""
    xp_ = namespace(x, dy)
    x = xp_.asarray(x)
    axes, p = _norm_form(x.ndim, ord, axis, kind)
    ones = xp_.ones(shape_tuple(y), dtype=np.result_type(x.dtype, np.float64))
    weights = first_norm_vjp(ones, x, y, ord, axis, keepdims, kind)
    kshape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))

    def spread(v):
        return xp_.reshape(xp_.broadcast_to(xp_.asarray(v), shape_tuple(y)), kshape)

    def back(v):
        return xp_.reshape(xp_.sum(v, axis=axes, keepdims=True), shape_tuple(y))

    yf = spread(y)
    # (on Dask, whose values are not read here, the kink gives inf or nan: 0 / 0)
    if p is not None and not is_dask(yf) and (bool(xp_.any(yf == 0)) or p < 2 and bool(xp_.any(x == 0))):
        raise NonDifferentiableError(
            "the second derivative of np.linalg.norm at a zero vector (or, for a "
            "p-norm with p < 2, at a zero entry) is not defined; the first derivative there "
            "is 0 by convention")
    return xp_, x, weights, p, yf, spread(dy), spread, back


@rt.helper
def norm_vjp_tangent(t_dy, t_x, t_y, dy, x, y, ord=None, axis=None, keepdims=False, kind="norm"):
    """The tangent of ``norm_vjp = dy * G(x, y)``: ``t_dy G + dy (G_x t_x + G_y t_y)``
    with ``G_x t = (p-1) |x|^(p-2) t / y^(p-1)``, ``G_y t = -(p-1) G t / y`` (both 0 for
    the piecewise linear norms)."""
    axes, p = _norm_form(np.ndim(x), ord, axis, kind)
    if p == "svd":
        return svd_norm_vjp_tangent(t_dy, t_x, dy, x, y, ord, axes, keepdims)
    xp_, x, weights, p, yf, dyf, spread, back = _norm_parts(dy, x, y, ord, axis, keepdims, kind)
    out = xp_.zeros(x.shape, dtype=weights.dtype)
    if _given(t_dy) is not None:
        out = out + spread(t_dy) * weights
    if p is not None and _given(t_x) is not None:
        out = out + dyf * (p - 1) * xp_.abs(x) ** (p - 2) / yf ** (p - 1) * t_x
    if p is not None and _given(t_y) is not None:
        out = out - dyf * (p - 1) * weights * spread(t_y) / yf
    return out


@rt.helper
def norm_vjp_adjoint(dw, dy, x, y, ord=None, axis=None, keepdims=False, kind="norm"):
    """Cotangents of ``(dy, x, y)`` for ``norm_vjp(dy, x, y, ...)`` (the transpose of
    ``norm_vjp_tangent``'s three terms)."""
    axes, p = _norm_form(np.ndim(x), ord, axis, kind)
    if p == "svd":
        return svd_norm_vjp_adjoint(dw, dy, x, y, ord, axes, keepdims)
    xp_, x, weights, p, yf, dyf, spread, back = _norm_parts(dy, x, y, ord, axis, keepdims, kind)
    d_dy = unbroadcast(back(dw * weights), dy)
    if p is None:
        return d_dy, xp_.zeros(x.shape, dtype=weights.dtype), xp_.zeros(shape_tuple(y), dtype=weights.dtype)
    v = dw * dyf
    d_x = (p - 1) * xp_.abs(x) ** (p - 2) / yf ** (p - 1) * v
    return d_dy, d_x, back(-(p - 1) * weights * v / yf)


# ----- rt.cholesky_vjp(dy, L) = sym(M^T P M), M = L^-1, P = Phi(L^T dy) -----


@tangent(rt.cholesky_vjp)
def cholesky_vjp(g, dy, L, *, t_dy, t_L):
    return rt.cholesky_vjp_tangent(t_dy, t_L, dy, L)


@adjoint(rt.cholesky_vjp)
def cholesky_vjp_rule(dw, w, dy, L):
    h = rt.cholesky_vjp_adjoint(dw, dy, L)
    return h[0], h[1]


def _phi(xp_, x):
    """The lower triangle, its diagonal halved (an elementwise mask: its own adjoint)."""
    return xp_.tril(x) - 0.5 * x * xp_.eye(x.shape[-1], dtype=x.dtype)


def _sym(x):
    return 0.5 * (x + _t(x))


@rt.helper
def cholesky_vjp_tangent(t_dy, t_L, dy, L):
    """The tangent of ``cholesky_vjp(dy, L)``: ``sym(dM^T P M + M^T dP M + M^T P dM)``
    with ``dM = -M t_L M``, ``dP = Phi(t_L^T dy + L^T t_dy)``."""
    xp_ = namespace(dy, L)
    m = xp_.linalg.inv(L)
    p = _phi(xp_, xp_.matmul(_t(L), dy))
    dp = xp_.zeros(p.shape, dtype=p.dtype)
    if _given(t_dy) is not None:
        dp = dp + xp_.matmul(_t(L), t_dy)
    if _given(t_L) is not None:
        dp = dp + xp_.matmul(_t(xp_.asarray(t_L)), dy)
    out = xp_.matmul(_t(m), xp_.matmul(_phi(xp_, dp), m))
    if _given(t_L) is not None:
        dm = -xp_.matmul(m, xp_.matmul(t_L, m))
        out = out + xp_.matmul(_t(dm), xp_.matmul(p, m)) + xp_.matmul(_t(m), xp_.matmul(p, dm))
    return _sym(out)


@rt.helper
def cholesky_vjp_adjoint(dw, dy, L):
    """Cotangents of ``(dy, L)``: with ``Q = Phi(M sym(dw) M^T)``: ``L Q`` and
    ``dy Q^T - M^T (P + P^T) M sym(dw) M^T``."""
    xp_ = namespace(dw, dy, L)
    m = xp_.linalg.inv(L)
    ws = _sym(xp_.broadcast_to(xp_.asarray(dw), m.shape))
    p = _phi(xp_, xp_.matmul(_t(L), dy))
    q = _phi(xp_, xp_.matmul(m, xp_.matmul(ws, _t(m))))
    d_L = xp_.matmul(dy, _t(q)) - xp_.matmul(_t(m), xp_.matmul(xp_.matmul(p + _t(p), xp_.matmul(m, ws)), _t(m)))
    return unbroadcast(xp_.matmul(L, q), dy), unbroadcast(d_L, L)


# ----- rt.eigh_vjp(dy, y) = sym(V (diag(dw) + F * (V^T dv)) V^T), F_ij = 1/(w_j - w_i) -----


@tangent(rt.eigh_vjp)
def eigh_vjp(g, dy, y, *, t_dy, t_y):
    return rt.eigh_vjp_tangent(t_dy, t_y, dy, y)


@adjoint(rt.eigh_vjp, sequences=("dy", "y"))
def eigh_vjp_rule(dw, w, dy, y):
    h = rt.eigh_vjp_adjoint(dw, dy, y)
    return h[0], h[1]


def _eigh_parts(dy, y):
    """``xp, w, V, F, dw, dv`` of ``eigh_vjp(dy, y)`` (``dw``/``dv`` None where zero)."""
    w, v = y[0], y[1]
    xp_ = namespace(v)
    n = v.shape[-1]
    eye = xp_.eye(n, dtype=bool)
    with np.errstate(divide="ignore"):
        f = xp_.where(eye, 0.0, 1.0 / xp_.where(eye, 1.0, w[..., None, :] - w[..., :, None]))
    return xp_, w, v, f, _part(dy, 0), _part(dy, 1)


def _eigh_middle(xp_, v, f, dw, dv):
    middle = xp_.zeros(v.shape, dtype=v.dtype)
    if dw is not None:
        middle = middle + xp_.eye(v.shape[-1], dtype=v.dtype) * xp_.asarray(dw)[..., None, :]
    if dv is not None:
        middle = middle + f * xp_.matmul(_t(v), dv)
    return middle


@rt.helper
def eigh_vjp_tangent(t_dy, t_y, dy, y):
    """The tangent of ``eigh_vjp(dy, y)``: ``sym(tV M V^T + V tM V^T + V M tV^T)`` with
    ``tM = diag(t_dw) + tF * (V^T dv) + F * (tV^T dv + V^T t_dv)``,
    ``tF_ij = -F_ij^2 (t_w_j - t_w_i)``."""
    xp_, w, v, f, dw, dv = _eigh_parts(dy, y)
    t_dw, t_dv, t_w, t_v = _part(t_dy, 0), _part(t_dy, 1), _part(t_y, 0), _part(t_y, 1)
    middle = _eigh_middle(xp_, v, f, dw, dv)
    t_middle = _eigh_middle(xp_, v, f, t_dw, t_dv)
    if dv is not None and t_w is not None:
        t_f = -f * f * (t_w[..., None, :] - t_w[..., :, None])
        t_middle = t_middle + t_f * xp_.matmul(_t(v), dv)
    out = xp_.matmul(v, xp_.matmul(t_middle, _t(v)))
    if t_v is not None:
        if dv is not None:
            t_middle_v = f * xp_.matmul(_t(t_v), dv)
            out = out + xp_.matmul(v, xp_.matmul(t_middle_v, _t(v)))
        out = out + xp_.matmul(t_v, xp_.matmul(middle, _t(v))) + xp_.matmul(v, xp_.matmul(middle, _t(t_v)))
    return _sym(out)


@rt.helper
def eigh_vjp_adjoint(dw_, dy, y):
    """Cotangents ``([d_dw, d_dv], [d_w, d_V])`` of ``eigh_vjp(dy, y)`` given ``dw_``:
    with ``K = V^T sym(dw_) V``: ``d_dw = diag(K)``, ``d_dv = V (F * K)``,
    ``d_V = sym(dw_) V (M + M^T) + dv (F * K)^T``, ``d_w`` from ``F``'s gaps."""
    xp_, w, v, f, dw, dv = _eigh_parts(dy, y)
    ws = _sym(xp_.broadcast_to(xp_.asarray(dw_), v.shape))
    middle = _eigh_middle(xp_, v, f, dw, dv)
    k = xp_.matmul(_t(v), xp_.matmul(ws, v))
    fk = f * k
    d_v = xp_.matmul(ws, xp_.matmul(v, middle + _t(middle)))
    d_w = xp_.zeros(w.shape, dtype=w.dtype)
    if dv is not None:
        d_v = d_v + xp_.matmul(dv, _t(fk))
        r = k * xp_.matmul(_t(v), dv) * f * f
        d_w = xp_.sum(r, axis=-1) - xp_.sum(r, axis=-2)
    d_dw = xp_.diagonal(k, axis1=-2, axis2=-1)
    return [d_dw, xp_.matmul(v, fk)], [d_w, d_v]


# ----- rt.matrix_power_vjp(dy, a, n): linear in dy, its transpose is matrix_power_jvp -----


@tangent(rt.matrix_power_vjp, no_tangent=("n",))
def matrix_power_vjp(g, dy, a, n, *, t_dy, t_a):
    return rt.matrix_power_vjp(t_dy, a, n) + rt.matrix_power_vjp_da(dy, a, n, t_a)


@adjoint(rt.matrix_power_vjp)
def matrix_power_vjp_rule(dw, w, dy, a, n):
    return rt.matrix_power_jvp(dw, a, n), rt.matrix_power_vjp_da(dy, a, n, dw), None


@adjoint(rt.matrix_power_jvp)
def matrix_power_jvp_rule(dw, w, t, a, n):
    """``matrix_power_jvp(t, a, n) = D(a^n)[t]``: its transpose in ``t`` is the vjp; in
    ``a`` the second derivative, symmetric: the vjp's tangent along ``t``."""
    return rt.matrix_power_vjp(dw, a, n), rt.matrix_power_vjp_da(dw, a, n, t), None


@tangent(rt.matrix_power_jvp, no_tangent=("n",))
def matrix_power_jvp(y, t, a, n, *, t_t, t_a):
    return rt.matrix_power_jvp(t_t, a, n) + rt.matrix_power_jvp_da(t, a, n, t_a)


def _power_terms_da(c, dc, x, k, xp_):
    """The derivative along ``dc`` of ``sum_{i<k} c^i x c^(k-1-i)`` in ``c``."""
    powers = [xp_.broadcast_to(xp_.eye(c.shape[-1], dtype=c.dtype), c.shape)]
    dpowers = [xp_.zeros(c.shape, dtype=np.result_type(c.dtype, dc.dtype))]
    for _ in range(k - 1):
        dpowers.append(xp_.matmul(dpowers[-1], c) + xp_.matmul(powers[-1], dc))
        powers.append(xp_.matmul(powers[-1], c))
    total = 0
    for i in range(k):
        j = k - 1 - i
        total = total + xp_.matmul(xp_.matmul(dpowers[i], x), powers[j]) \
            + xp_.matmul(xp_.matmul(powers[i], x), dpowers[j])
    return total


def _power_parts(a, n, t, xp_):
    """``(base, dbase)``: ``a, t`` for ``n > 0``; ``inv(a), -inv(a) t inv(a)`` else."""
    t = xp_.broadcast_to(xp_.asarray(t), a.shape)
    if n > 0:
        return a, t
    base = xp_.linalg.inv(a)
    return base, -xp_.matmul(base, xp_.matmul(t, base))


@rt.helper
def matrix_power_vjp_da(dy, a, n, t):
    """The derivative of ``matrix_power_vjp(dy, a, n)`` in ``a`` along ``t`` (the second
    derivative of ``a^n`` against ``dy``: symmetric, so also the adjoint in ``a``)."""
    xp_ = namespace(dy, a, t)
    dy = xp_.asarray(dy)
    if n == 0:
        return xp_.zeros(a.shape, dtype=np.result_type(a.dtype, np.float64))
    base, dbase = _power_parts(a, n, t, xp_)
    bt, dbt = _t(base), _t(dbase)
    k = abs(n)
    if n > 0:
        return _power_terms_da(bt, dbt, dy, k, xp_)
    inner = power_terms(bt, dy, k, xp_)
    dinner = _power_terms_da(bt, dbt, dy, k, xp_)
    return -(xp_.matmul(dbt, xp_.matmul(inner, bt)) + xp_.matmul(bt, xp_.matmul(dinner, bt))
             + xp_.matmul(bt, xp_.matmul(inner, dbt)))


@rt.helper
def matrix_power_jvp_da(t, a, n, s):
    """The derivative of ``matrix_power_jvp(t, a, n)`` in ``a`` along ``s``."""
    xp_ = namespace(t, a, s)
    if n == 0:
        return xp_.zeros(a.shape, dtype=np.result_type(a.dtype, np.float64))
    base, dbase_t = _power_parts(a, n, t, xp_)
    _, dbase_s = _power_parts(a, n, s, xp_)
    out = _power_terms_da(base, dbase_s, dbase_t, abs(n), xp_)
    if n < 0:   # dbase_t = -B t B moves with a too: its derivative along s
        out = out + _power_terms_da_x(base, dbase_s, t, abs(n), xp_)
    return out


def _power_terms_da_x(base, dbase_s, t, k, xp_):
    """For ``n < 0``: the derivative along ``s`` of ``dB_t = -B t B`` fed to
    ``power_terms(B, ., k)``: ``power_terms(B, -(dB_s t B + B t dB_s), k)``."""
    t = xp_.broadcast_to(xp_.asarray(t), base.shape)
    d = -(xp_.matmul(dbase_s, xp_.matmul(t, base)) + xp_.matmul(base, xp_.matmul(t, dbase_s)))
    return power_terms(base, d, k, xp_)
