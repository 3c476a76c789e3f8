"""Tangent and adjoint rules of the decomposition gradients ``rt.svd_vjp``, ``rt.qr_vjp``,
``rt.lstsq_vjp`` and of the SVD norms' weights (``np.linalg.norm`` with 'nuc', 2, -2):
second derivatives through them (``sg.hessian``, ``sg.jvp`` of a gradient, grad of grad).

Each first-order helper is restated below as NumPy code made of primitives srcgrad
differentiates (``_svd_vjp_math`` ...), checked against the helper in the tests, and its
rules differentiate that code with srcgrad itself, forward (``sg.jvp``) for the tangent
and reverse (``sg.vjp``) for the adjoint. The restatements call ``np.linalg.svd`` and
``np.linalg.qr``, so the assumptions are the first derivative's: distinct non-zero
singular values (the 2 and -2 norms: a simple largest / smallest one), an invertible
``R``, a matrix of full column rank for ``lstsq``. A third derivative through these
helpers is refused (the restatements' own gradients call the first-order helpers).
NumPy arrays only: the restatements call NumPy.
"""

import numpy as np

from srcgrad import runtime as rt
from srcgrad.grad_mode import enable_grad
from srcgrad.rules import adjoint, tangent
from srcgrad.runtime.broadcast import unbroadcast
from srcgrad.runtime.containers import is_zero_grad, seq_item


def _given(t):
    return None if is_zero_grad(t) else np.asarray(t)


def _parts(t, k):
    """``k`` entries of a sequence of tangents or cotangents (None where zero)."""
    if is_zero_grad(t):
        return [None] * k
    return [_given(seq_item(t, i)) for i in range(k)]


def _filled(parts, likes):
    """Each part as an array, zeros of ``like``'s shape where it is None."""
    return [np.zeros(np.shape(like)) if p is None else np.broadcast_to(p, np.shape(like))
            for p, like in zip(parts, likes)]


def _numpy_only(what, *values):
    """Refuse arrays of another library (CuPy, Dask): the restatements call NumPy."""
    from srcgrad.runtime.dask_forms import numpy_only
    numpy_only(f"the second derivative through {what}", values,
               "Compute the array first (x.compute(), cupy.asnumpy(x)) and take the second "
               "derivative on the host.")


def _jvp(fn, primals, tangents):
    """``fn``'s tangent by srcgrad's forward mode (also inside ``sg.no_grad()``: a
    backward obtained before runs there)."""
    from srcgrad.forward_api import jvp
    with enable_grad():
        return jvp(fn, tuple(primals), tuple(tangents))[1]


def _vjp(fn, primals, cotangent, constants=()):
    """The cotangents of ``primals`` (``constants`` follow them, taking none)."""
    from srcgrad.api import vjp
    with enable_grad():
        _, backward = vjp(fn, wrt=tuple(range(len(primals))))(*primals, *constants)
        return backward(cotangent)


# ----- rt.svd_vjp(dy, y, a, full_matrices, compute_uv) -----


def _svd_vjp_math(gu, gs, gvh, u, s, vh):
    """``svd_vjp`` of the thin SVD ``(u, s, vh)`` (``compute_uv=True``), no branches."""
    k = s.shape[-1]
    eye = np.eye(k)
    f = (1.0 - eye) / (s[..., None, :] ** 2 - s[..., :, None] ** 2 + eye)
    v = np.swapaxes(vh, -1, -2)
    gv = np.swapaxes(gvh, -1, -2)
    ju = np.matmul(np.swapaxes(u, -1, -2), gu)
    jv = np.matmul(vh, gv)
    middle = (eye * gs[..., None, :] + f * (ju - np.swapaxes(ju, -1, -2)) * s[..., None, :]
              + s[..., :, None] * (f * (jv - np.swapaxes(jv, -1, -2))))
    outside_u = np.matmul((gu - np.matmul(u, ju)) / s[..., None, :], vh)
    outside_v = np.matmul(u / s[..., None, :], np.swapaxes(gv - np.matmul(v, jv), -1, -2))
    return outside_u + outside_v + np.matmul(u, np.matmul(middle, vh))


def _svd_values_vjp_math(gs, a):
    """``svd_vjp`` of the singular values alone: ``U diag(gs) V^T``."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.matmul(u * gs[..., None, :], vh)


def _svd_inputs(dy, y, a, full_matrices, compute_uv):
    """``(fn, primals)`` restating ``svd_vjp(dy, y, a, ...)`` (its refusals first)."""
    rt.svd_vjp(dy, y, a, full_matrices, compute_uv)   # raises where the first order does
    _numpy_only("np.linalg.svd", a)
    a = np.asarray(a)
    if not compute_uv:
        return _svd_values_vjp_math, [np.broadcast_to(np.asarray(dy), a.shape[:-2] + (min(a.shape[-2:]),)), a]
    y = [np.asarray(v) for v in y]
    return _svd_vjp_math, _filled(_parts(dy, 3), y) + y


@rt.helper
def svd_vjp_tangent(t_dy, t_y, t_a, dy, y, a, full_matrices=True, compute_uv=True):
    """The tangent of ``svd_vjp(dy, y, a, ...)`` (None: a zero tangent)."""
    fn, primals = _svd_inputs(dy, y, a, full_matrices, compute_uv)
    if not compute_uv:
        return _jvp(fn, primals, [_given(t_dy), _given(t_a)])
    return _jvp(fn, primals, _parts(t_dy, 3) + _parts(t_y, 3))


@rt.helper
def svd_vjp_adjoint(dw, dy, y, a, full_matrices=True, compute_uv=True):
    """Cotangents ``(d_dy, d_y, d_a)`` of ``svd_vjp(dy, y, a, ...)`` given ``dw``."""
    fn, primals = _svd_inputs(dy, y, a, full_matrices, compute_uv)
    g = _vjp(fn, primals, np.asarray(dw))
    if not compute_uv:
        return g[0], np.zeros(np.shape(y)), g[1]
    return list(g[:3]), list(g[3:]), np.zeros(np.shape(a))


@tangent(rt.svd_vjp, no_tangent=("full_matrices", "compute_uv"))
def svd_vjp(g, dy, y, a, full_matrices=True, compute_uv=True, *, t_dy, t_y, t_a):
    return rt.svd_vjp_tangent(t_dy, t_y, t_a, dy, y, a, full_matrices, compute_uv)


@adjoint(rt.svd_vjp, sequences=("dy", "y"))
def svd_vjp_rule(dw, w, dy, y, a, full_matrices=True, compute_uv=True):
    h = rt.svd_vjp_adjoint(dw, dy, y, a, full_matrices, compute_uv)
    return h[0], h[1], h[2], None, None


# ----- rt.qr_vjp(dy, y, a, mode): reads a alone (Q and R computed again) -----


def _qr_vjp_math(dq, dr, a):
    """``qr_vjp``: ``(dQ + Q copyltu(M)) R^-T`` with ``M = R dR^T - dQ^T Q``."""
    q, r = np.linalg.qr(a)
    m = np.matmul(r, np.swapaxes(dr, -1, -2)) - np.matmul(np.swapaxes(dq, -1, -2), q)
    b = dq + np.matmul(q, np.tril(m) + np.swapaxes(np.tril(m, -1), -1, -2))
    return np.swapaxes(np.linalg.solve(r, np.swapaxes(b, -1, -2)), -1, -2)


def _qr_inputs(dy, a, mode):
    rt.qr_vjp(dy, None, a, mode)   # raises where the first order does
    _numpy_only("np.linalg.qr", a)
    a = np.asarray(a)
    m, n = a.shape[-2:]
    likes = [np.empty(a.shape), np.empty(a.shape[:-2] + (n, n))]
    parts = [None, _given(dy)] if mode == "r" else _parts(dy, 2)
    return _filled(parts, likes) + [a]


@rt.helper
def qr_vjp_tangent(t_dy, t_a, dy, a, mode="reduced"):
    """The tangent of ``qr_vjp(dy, y, a, mode)``."""
    primals = _qr_inputs(dy, a, mode)
    t = [None, _given(t_dy)] if mode == "r" else _parts(t_dy, 2)
    return _jvp(_qr_vjp_math, primals, t + [_given(t_a)])


@rt.helper
def qr_vjp_adjoint(dw, dy, a, mode="reduced"):
    """Cotangents ``(d_dy, d_a)`` of ``qr_vjp(dy, y, a, mode)``."""
    g = _vjp(_qr_vjp_math, _qr_inputs(dy, a, mode), np.asarray(dw))
    return (g[1] if mode == "r" else [g[0], g[1]]), g[2]


@tangent(rt.qr_vjp, no_tangent=("y", "mode"))
def qr_vjp(g, dy, y, a, mode="reduced", *, t_dy, t_a):
    return rt.qr_vjp_tangent(t_dy, t_a, dy, a, mode)


@adjoint(rt.qr_vjp, sequences=("dy",))
def qr_vjp_rule(dw, w, dy, y, a, mode="reduced"):
    h = rt.qr_vjp_adjoint(dw, dy, a, mode)
    return h[0], None, h[1], None


# ----- rt.lstsq_vjp(dy, y, a, b) = (ga, gb): reads x = y[0], a and b -----


def _lstsq_vjp_math(dx, dres, ds, x, a, b):
    """``lstsq_vjp`` with ``b``, ``x`` and ``dx`` as columns (``dres`` per column, zeros
    where NumPy gives no residuals): ``z = (a^T a)^-1 dx``, ``r = b - a x``."""
    r = b - np.matmul(a, x)
    z = np.linalg.solve(np.matmul(np.swapaxes(a, -1, -2), a), dx)
    az = np.matmul(a, z)
    w = 2.0 * dres * r
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    ga = (np.matmul(r, np.swapaxes(z, -1, -2)) - np.matmul(az + w, np.swapaxes(x, -1, -2))
          + np.matmul(u * ds[..., None, :], vh))
    return ga, az + w


def _lstsq_inputs(dy, y, a, b):
    rt.lstsq_vjp(dy, y, a, b)   # raises where the first order does
    _numpy_only("np.linalg.lstsq", a, b)
    a, b, x = np.asarray(a), np.asarray(b), np.asarray(y[0])
    col = b.ndim == 1
    cols = (lambda v: v[:, None]) if col else (lambda v: v)
    dx, dres, ds = _parts(dy, 4)[0], _parts(dy, 4)[1], _parts(dy, 4)[3]
    ncol = 1 if col else b.shape[1]
    dres = None if dres is None or not np.size(y[1]) else np.reshape(dres, (ncol,))
    primals = [cols(v) for v in _filled([dx], [x])] + _filled([dres, ds], [np.empty(ncol), y[3]]) \
        + [cols(x), a, cols(b)]
    return primals, cols, (lambda v: v[:, 0]) if col else (lambda v: v)


@rt.helper
def lstsq_vjp_tangent(t_dy, t_y, t_a, t_b, dy, y, a, b):
    """The tangent of ``lstsq_vjp(dy, y, a, b)``: a pair, like it."""
    primals, cols, uncol = _lstsq_inputs(dy, y, a, b)
    t_dx, t_dres, _, t_ds = _parts(t_dy, 4)
    if t_dres is not None:
        t_dres = np.reshape(t_dres, np.shape(primals[1])) if np.size(y[1]) else None
    t_x = _parts(t_y, 4)[0]
    t_b = _given(t_b)
    tangents = [None if t_dx is None else cols(t_dx), t_dres, t_ds, None if t_x is None else cols(t_x),
                _given(t_a), None if t_b is None else cols(t_b)]
    ga, gb = _jvp(_lstsq_vjp_math, primals, tangents)
    return ga, uncol(gb)


@rt.helper
def lstsq_vjp_adjoint(dw, dy, y, a, b):
    """Cotangents ``(d_dy, d_y, d_a, d_b)`` of ``lstsq_vjp(dy, y, a, b)`` given the pair
    ``dw``."""
    primals, cols, uncol = _lstsq_inputs(dy, y, a, b)
    wa, wb = _filled(_parts(dw, 2), [a, b])
    g = _vjp(_lstsq_vjp_math, primals, (wa, cols(wb)))
    d_res = np.reshape(g[1], np.shape(y[1])) if np.size(y[1]) else np.zeros(np.shape(y[1]))
    d_dy = [uncol(g[0]), d_res, 0.0, g[2]]
    d_y = [uncol(g[3]), np.zeros(np.shape(y[1])), 0.0, np.zeros(np.shape(y[3]))]
    return d_dy, d_y, g[4], uncol(g[5])


@tangent(rt.lstsq_vjp)
def lstsq_vjp(g, dy, y, a, b, *, t_dy, t_y, t_a, t_b):
    return rt.lstsq_vjp_tangent(t_dy, t_y, t_a, t_b, dy, y, a, b)


@adjoint(rt.lstsq_vjp, sequences=("dy", "y"))
def lstsq_vjp_rule(dw, w, dy, y, a, b):
    h = rt.lstsq_vjp_adjoint(dw, dy, y, a, b)
    return h[0], h[1], h[2], h[3]


# ----- the SVD norms' weights in rt.norm_vjp (linalg_second_order.py calls these) -----


def _nuclear_vjp_math(dyf, x):
    """``dy * U V^T`` of matrices in the last two axes."""
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return dyf * np.matmul(u, vh)


def _spectral_vjp_math(dyf, x, k):
    """``dy * u_k v_k^T``: the 2-norm (k = 0) or -2-norm (the last k)."""
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return dyf * (u[..., :, k:k + 1] * vh[..., k:k + 1, :])


def _svd_norm_inputs(dy, x, y, ord, axes, keepdims):
    """``(fn, constants, to_matrix, from_matrix, spread, back)``: the restated weights on
    matrices in the last two axes (``constants``: its arguments after ``dy, x``) and the maps between ``x``'s and ``y``'s layouts and theirs."""
    _numpy_only("np.linalg.norm", x)
    x = np.asarray(x)
    r, c = axes
    kshape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    yshape = np.shape(y)

    def to_matrix(v):
        return np.moveaxis(np.broadcast_to(v, x.shape), (r, c), (-2, -1))

    def from_matrix(v):
        return np.moveaxis(v, (-2, -1), (r, c))

    def spread(v):
        return np.moveaxis(np.reshape(np.broadcast_to(v, yshape), kshape), (r, c), (-2, -1))

    def back(v):
        return np.reshape(np.sum(from_matrix(v), axis=axes, keepdims=True), yshape)

    if ord == "nuc":
        return _nuclear_vjp_math, (), to_matrix, from_matrix, spread, back
    k = 0 if ord == 2 else min(x.shape[r], x.shape[c]) - 1
    return _spectral_vjp_math, (k,), to_matrix, from_matrix, spread, back


def svd_norm_vjp_tangent(t_dy, t_x, dy, x, y, ord, axes, keepdims):
    """The tangent of ``norm_vjp`` for the 'nuc', 2 and -2 matrix norms (``y`` is not read:
    the weights are functions of ``x``)."""
    fn, constants, to_matrix, from_matrix, spread, back = _svd_norm_inputs(dy, x, y, ord, axes, keepdims)
    t_dy, t_x = _given(t_dy), _given(t_x)
    return from_matrix(_jvp(fn, [spread(dy), to_matrix(x), *constants],
                            [None if t_dy is None else spread(t_dy), None if t_x is None else to_matrix(t_x)]
                            + [None] * len(constants)))


def svd_norm_vjp_adjoint(dw, dy, x, y, ord, axes, keepdims):
    """Cotangents ``(d_dy, d_x, d_y)`` of ``norm_vjp`` for the SVD norms."""
    fn, constants, to_matrix, from_matrix, spread, back = _svd_norm_inputs(dy, x, y, ord, axes, keepdims)
    g = _vjp(fn, [np.array(spread(dy)), np.array(to_matrix(x))], np.array(to_matrix(dw)), constants)
    return unbroadcast(back(g[0]), dy), from_matrix(g[1]), np.zeros(np.shape(y))
