"""Adjoint rules of ``numpy.linalg`` (real matrices, batched over leading axes).

* ``norm``: vectors with ord None/2/1/inf/-inf/0/p, matrices with 'fro',
  'nuc', 2, -2, 1, -1, inf, -inf; ``axis`` and ``keepdims``. Kinks: a zero
  vector's 2-norm (and p-norm) gradient is 0; ties of the inf-norms and of the
  matrix 1/inf norms share the gradient evenly; ``ord=1`` uses ``sign`` (0 at 0).
* ``slogdet`` returns ``(sign, logabsdet)``: its ``dy`` is the pair of
  cotangents; only ``logabsdet`` carries a gradient (``sign`` is piecewise
  constant). ``inv`` and ``slogdet`` need a non-singular matrix; ``det``'s gradient (the
  cofactor matrix) is exact at a singular one too.
* ``cholesky``, ``eigh`` and ``eigvalsh`` read one triangle of a matrix assumed
  symmetric: their gradients are symmetric (the PyTorch/JAX convention).
* ``solve`` follows NumPy 2: ``b`` is a vector exactly when it is 1-D.
* ``lstsq``: a matrix of full column rank (the solution unique); rank-deficient refused.
* ``qr``: modes "reduced" and "r" of a matrix with at least as many rows as columns and
  an invertible ``R`` (JAX's cases); wide matrices are refused.
"""

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, nondifferentiable, returns_sequence, tangent
from srcgrad.runtime.arrays import namespace, shape_tuple
from srcgrad.runtime.broadcast import unbroadcast, unreduce, unreduce_like
from srcgrad.runtime.containers import is_zero_grad, seq_item

xp = None  # placeholder: the array namespace, bound in generated code

# (np.linalg.cond is a smooth function of the matrix, a ratio of singular values:
# it has no rule and is refused where it needs a gradient, never a silent zero.)
nondifferentiable(np.linalg.matrix_rank)
# NumPy 2's named results (``np.linalg.svd(a).S``, ``.eigenvalues``, ``.logabsdet``, ``.R``):
# a name bound to one is a tuple, its fields read as a namedtuple's.
returns_sequence(np.linalg.svd, np.linalg.eigh, np.linalg.slogdet, np.linalg.qr, np.linalg.lstsq)

# ----- Norms -----


@adjoint(np.linalg.norm)
def norm(dy, y, x, ord=None, axis=None, keepdims=False):
    return rt.norm_vjp(dy, x, y, ord, axis, keepdims)


@tangent(np.linalg.norm)
def norm_tangent(y, x, ord=None, axis=None, keepdims=False, *, t_x):
    """Each output reduces a group of ``x`` of its own: the tangent is the gradient of
    each (``norm_vjp`` of ones, with its kinks and ties) against ``t_x``, summed per group."""
    return xp.sum(rt.norm_vjp(xp.ones_like(y), x, y, ord, axis, keepdims) * t_x, axis=axis,
                  keepdims=keepdims)


def _safe_div(xp, num, den):
    return xp.where(den == 0, 0, num / xp.where(den == 0, 1, den))


def _tie_weights(xp, mask, axis):
    mask = mask.astype(np.float64) if mask.dtype == bool else mask
    return mask / xp.sum(mask, axis=axis, keepdims=True)


@rt.helper
def norm_vjp(dy, x, y, ord=None, axis=None, keepdims=False, kind="norm"):
    """Gradient of ``np.linalg.norm`` (``kind='vector'``/``'matrix'``: the array-API norms).

    Kinks: at a zero vector the gradient of the 2-norm (and p-norms) is 0; ties
    of the inf-norms (and of the matrix 1/inf norms) share the gradient evenly;
    for ``ord=1`` the gradient at 0 is 0 (``sign``). Matrix 2-norms use the top
    singular pair (ties in singular values are not split).
    """
    xp = namespace(x, dy)
    x = xp.asarray(x)
    nd = x.ndim
    if kind == "vector":
        axes = tuple(range(nd)) if axis is None else (
            tuple(a % nd for a in axis) if isinstance(axis, (tuple, list)) else (axis % nd,))
        if ord is None:
            ord = 2
        matrix = False
        if axis is None and nd != 1:
            # the array-API vector norm of all entries: flatten
            g = norm_vjp(xp.reshape(xp.asarray(dy), ()), x.reshape(-1),
                         xp.reshape(xp.asarray(y), ()), ord, 0, False, "vector")
            return g.reshape(x.shape)
    elif kind == "matrix":
        axes = (nd - 2, nd - 1)
        matrix = True
        if ord is None:
            ord = "fro"
    else:
        if axis is None:
            if ord is None:
                dyf = unreduce(dy, x, None, keepdims)
                return dyf * _safe_div(xp, x, unreduce_like(y, x, None, keepdims))
            axes = tuple(range(nd))
        elif isinstance(axis, (tuple, list)):
            axes = tuple(a % nd for a in axis)
        else:
            axes = (axis % nd,)
        matrix = len(axes) == 2
    dyf = unreduce(dy, x, axes, keepdims)
    yf = unreduce_like(y, x, axes, keepdims)
    if not matrix:
        ax = axes[0] if len(axes) == 1 else axes
        if ord is None or ord == 2:
            g = _safe_div(xp, x, yf)
        elif ord == np.inf or ord == -np.inf:
            ab = xp.abs(x)
            g = xp.sign(x) * _tie_weights(xp, ab == yf, ax)
        elif ord == 0:
            g = xp.zeros_like(x)
        elif ord == 1:
            g = xp.sign(x)
        else:
            g = xp.sign(x) * _safe_div(xp, xp.abs(x) ** (ord - 1), yf ** (ord - 1))
        return dyf * g
    r, c = axes
    if ord is None or ord == "fro":
        return dyf * _safe_div(xp, x, yf)
    if ord in ("nuc", 2, -2):
        xm = xp.moveaxis(x, (r, c), (-2, -1))
        u, s, vh = xp.linalg.svd(xm, full_matrices=False)
        if ord == "nuc":
            gm = xp.matmul(u, vh)
        else:
            k = 0 if ord == 2 else -1
            gm = u[..., :, k:k + 1 or None] * vh[..., k:k + 1 or None, :]
        return dyf * xp.moveaxis(gm, (-2, -1), (r, c))
    if ord in (1, -1):
        sums = xp.sum(xp.abs(x), axis=r, keepdims=True)
        best = (xp.max if ord == 1 else xp.min)(sums, axis=c, keepdims=True)
        return dyf * xp.sign(x) * _tie_weights(xp, sums == best, c)
    if ord in (np.inf, -np.inf):
        sums = xp.sum(xp.abs(x), axis=c, keepdims=True)
        best = (xp.max if ord > 0 else xp.min)(sums, axis=r, keepdims=True)
        return dyf * xp.sign(x) * _tie_weights(xp, sums == best, r)
    from srcgrad.errors import UnsupportedError
    raise UnsupportedError(f"srcgrad: the gradient of a matrix norm with ord={ord!r} is not "
                           "supported")


if hasattr(np.linalg, "vector_norm"):
    @adjoint(np.linalg.vector_norm)
    def vector_norm(dy, y, x, *, axis=None, keepdims=False, ord=2):
        return rt.norm_vjp(dy, x, y, ord, axis, keepdims, "vector")

    @adjoint(np.linalg.matrix_norm)
    def matrix_norm(dy, y, x, *, keepdims=False, ord="fro"):
        return rt.norm_vjp(dy, x, y, ord, None, keepdims, "matrix")

    @tangent(np.linalg.vector_norm, no_tangent=("axis", "keepdims", "ord"))
    def vector_norm_tangent(y, x, *, axis=None, keepdims=False, ord=2, t_x):
        """As ``norm``'s: the gradient of each output against ``t_x``, summed per group."""
        return xp.sum(rt.norm_vjp(xp.ones_like(y), x, y, ord, axis, keepdims, "vector") * t_x, axis=axis,
                      keepdims=keepdims)

    @tangent(np.linalg.matrix_norm, no_tangent=("keepdims", "ord"))
    def matrix_norm_tangent(y, x, *, keepdims=False, ord="fro", t_x):
        return xp.sum(rt.norm_vjp(xp.ones_like(y), x, y, ord, None, keepdims, "matrix") * t_x, axis=(-2, -1),
                      keepdims=keepdims)


# ----- Inverses and solves -----


@adjoint(np.linalg.inv)
def inv(dy, y, a):
    yt = xp.swapaxes(y, -1, -2)
    return -xp.matmul(yt, xp.matmul(dy, yt))


@tangent(np.linalg.inv)
def inv_tangent(y, a, *, t_a):
    return -xp.matmul(y, xp.matmul(t_a, y))


@tangent(np.linalg.solve)
def solve_tangent(y, a, b, *, t_a, t_b):
    return rt.solve_jvp(a, y, t_a, t_b)


@rt.helper
def solve_jvp(a, y, t_a, t_b):
    """The tangent of ``y = solve(a, b)``: ``solve(a, t_b - t_a y)`` (``b`` a vector when
    ``y`` is 1-D in its last place, NumPy 2's rule); None is a zero tangent."""
    xp = namespace(a, y)
    vector = y.ndim == a.ndim - 1
    rhs = 0.0
    if t_b is not None:
        rhs = xp.asarray(t_b)
    if t_a is not None:
        prod = xp.matmul(t_a, y[..., None])[..., 0] if vector else xp.matmul(t_a, y)
        rhs = rhs - prod
    rhs = xp.broadcast_to(xp.asarray(rhs, dtype=np.result_type(y.dtype, np.float64)), y.shape)
    if vector:
        return xp.linalg.solve(a, rhs[..., None])[..., 0]
    return xp.linalg.solve(a, rhs)


@adjoint(np.linalg.solve)
def solve(dy, y, a, b):
    g = rt.solve_vjp(dy, a, b, y)
    return g[0], g[1]


@rt.helper
def solve_vjp(dy, a, b, y):
    """Gradients of ``x = linalg.solve(a, b)``: the pair ``(da, db)`` (NumPy 2 semantics:
    ``b`` is a vector when it is 1-D)."""
    xp = namespace(dy, a, b)
    dy = xp.asarray(dy)
    at = xp.swapaxes(a, -1, -2)
    if len(shape_tuple(b)) == 1:
        gb = xp.linalg.solve(at, dy[..., None])[..., 0]
        ga = -gb[..., :, None] * y[..., None, :]
    else:
        gb = xp.linalg.solve(at, dy)
        ga = -xp.matmul(gb, xp.swapaxes(y, -1, -2))
    return unbroadcast(ga, a), unbroadcast(gb, b)


@adjoint(np.linalg.matrix_power)
def matrix_power(dy, y, a, n):
    return rt.matrix_power_vjp(dy, a, n), None


def power_terms(base, x, k, xp):
    """``sum_{i<k} base^i x base^(k-1-i)``: the derivative of ``base^k`` along ``x`` (its
    adjoint with ``base`` transposed), stacks of matrices broadcast."""
    powers = [xp.broadcast_to(xp.eye(base.shape[-1], dtype=x.dtype), base.shape)]
    for _ in range(k - 1):
        powers.append(xp.matmul(powers[-1], base))
    total = 0
    for i in range(k):
        total = total + xp.matmul(xp.matmul(powers[i], x), powers[k - 1 - i])
    return total


@rt.helper
def matrix_power_vjp(dy, a, n):
    """Gradient of ``linalg.matrix_power(a, n)`` (negative ``n`` through the inverse)."""
    xp = namespace(dy, a)
    dy = xp.asarray(dy)
    if n == 0:
        return xp.zeros_like(dy)
    base = a if n > 0 else xp.linalg.inv(a)
    bt = xp.swapaxes(base, -1, -2)
    g = power_terms(bt, dy, abs(n), xp)
    if n < 0:
        g = -xp.matmul(bt, xp.matmul(g, bt))
    return g


# ----- Determinants -----


@adjoint(np.linalg.det)
def det(dy, y, a):
    """The cofactor matrix, finite at a singular ``a`` too (``rt.cofactor``)."""
    return xp.asarray(dy)[..., None, None] * rt.cofactor(a)


@tangent(np.linalg.det)
def det_tangent(y, a, *, t_a):
    return xp.sum(rt.cofactor(a) * t_a, axis=(-2, -1))


@rt.helper
def cofactor(a):
    """The cofactor matrix of ``a`` (batched over leading axes): the gradient of
    ``det(a)``. ``det(a) * inv(a).T`` where ``a`` is invertible; from the SVD
    ``a = u s vh`` where it is singular (``det(u) det(vh) u diag(prod of the other
    singular values) vh``), which stays finite and exact there (issue 11: the
    gradient of det at a singular matrix raised LinAlgError)."""
    xp = namespace(a)
    det = xp.linalg.det(a)
    if bool(xp.all(det != 0)):
        try:
            inv = xp.linalg.inv(a)
            if bool(xp.all(xp.isfinite(inv))):
                return xp.asarray(det)[..., None, None] * xp.swapaxes(inv, -1, -2)
        except np.linalg.LinAlgError:
            pass
    u, s, vh = xp.linalg.svd(a)
    n = s.shape[-1]
    others = xp.where(xp.eye(n, dtype=bool), 1.0, s[..., None, :])
    adj_s = xp.prod(others, axis=-1)
    sign = xp.linalg.det(u) * xp.linalg.det(vh)
    return xp.asarray(sign)[..., None, None] * xp.matmul(u * adj_s[..., None, :], vh)


@adjoint(np.linalg.slogdet)
def slogdet(dy, y, a):
    """``dy`` is ``(d_sign, d_logabsdet)``; the sign is piecewise constant."""
    g = xp.asarray(rt.seq_item(dy, 1))
    return g[..., None, None] * xp.swapaxes(xp.linalg.inv(a), -1, -2)


# ----- Factorizations of symmetric matrices -----


@adjoint(np.linalg.cholesky)
def cholesky(dy, y, a):
    """Lower factor; the gradient is symmetric (``a`` assumed symmetric)."""
    return rt.cholesky_vjp(dy, y)


@rt.helper
def cholesky_vjp(dy, L):
    """Gradient of ``L = linalg.cholesky(a)`` (lower), symmetrized like PyTorch's:
    it assumes ``a`` symmetric and is itself symmetric."""
    xp = namespace(dy, L)
    lt = xp.swapaxes(L, -1, -2)
    phi = xp.tril(xp.matmul(lt, dy))
    n = L.shape[-1]
    phi = phi - 0.5 * phi * xp.eye(n, dtype=phi.dtype)
    linv = xp.linalg.inv(L)
    g = xp.matmul(xp.swapaxes(linv, -1, -2), xp.matmul(phi, linv))
    return 0.5 * (g + xp.swapaxes(g, -1, -2))


@adjoint(np.linalg.eigvalsh)
def eigvalsh(dy, y, a, UPLO="L"):
    """Distinct eigenvalues assumed; the gradient ``V diag(dy) V^T`` is symmetric."""
    v = xp.linalg.eigh(a, UPLO)[1]
    return xp.matmul(v * xp.asarray(dy)[..., None, :], xp.swapaxes(v, -1, -2)), None


@adjoint(np.linalg.eigh)
def eigh(dy, y, a, UPLO="L"):
    """``dy`` is ``(dw, dv)``: distinct eigenvalues assumed (the eigenvectors' gradient
    divides by their gaps); symmetric, like ``eigvalsh``'s."""
    return rt.eigh_vjp(dy, y), None


@rt.helper
def eigh_vjp(dy, y):
    """Gradient of ``(w, v) = linalg.eigh(a)`` (``dy`` the pair of cotangents, either
    may be missing): ``V (diag(dw) + F * (V^T dv)) V^T`` with ``F_ij = 1 / (w_j - w_i)``
    off the diagonal, symmetrized like ``eigvalsh``'s and ``cholesky``'s (``a``
    assumed symmetric, eigenvalues distinct)."""
    w, v = y[0], y[1]
    dw, dv = seq_item(dy, 0), seq_item(dy, 1)
    xp = namespace(v)
    n = v.shape[-1]
    vt = xp.swapaxes(v, -1, -2)
    middle = xp.zeros(v.shape, dtype=v.dtype)
    if dw is not None and not (isinstance(dw, (int, float)) and dw == 0):
        middle = middle + xp.eye(n, dtype=v.dtype) * xp.asarray(dw)[..., None, :]
    if dv is not None and not (isinstance(dv, (int, float)) and dv == 0):
        eye = xp.eye(n, dtype=bool)
        gaps = w[..., None, :] - w[..., :, None]
        f = xp.where(eye, 0.0, 1.0 / xp.where(eye, 1.0, gaps))
        middle = middle + f * xp.matmul(vt, xp.asarray(dv))
    g = xp.matmul(v, xp.matmul(middle, vt))
    return 0.5 * (g + xp.swapaxes(g, -1, -2))


@adjoint(np.linalg.qr)
def qr(dy, y, a, mode="reduced"):
    """``mode`` "reduced" or "r" (or "complete" of a square matrix), of a matrix with at
    least as many rows as columns and ``R`` invertible, as JAX supports; ``dy`` is
    ``(dQ, dR)`` (``dR`` alone for "r")."""
    return rt.qr_vjp(dy, y, a, mode), None


def _qr_parts(xp, a, mode):
    """``(Q, R)`` of ``a`` (real, batched), refusing the cases without a unique derivative."""
    m, n = a.shape[-2:]
    if m < n or mode not in ("reduced", "r", "complete") or mode == "complete" and m != n:
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            f"srcgrad: the derivative of np.linalg.qr is supported for mode 'reduced' or 'r' "
            f"of a matrix with at least as many rows as columns, not mode={mode!r} of a "
            f"{m}x{n} matrix", hint="Differentiate the QR of the transpose, or of a square block.")
    return xp.linalg.qr(a, mode="reduced")


@rt.helper
def qr_vjp(dy, y, a, mode="reduced"):
    """Gradient of ``Q, R = qr(a)``: ``(dQ + Q copyltu(M)) R^-T`` with
    ``M = R dR^T - dQ^T Q`` and ``copyltu(M) = tril(M) + tril(M, -1)^T``."""
    xp = namespace(a, dy)
    a = xp.asarray(a)
    q, r = _qr_parts(xp, a, mode)
    if mode == "r":
        dq, dr = None, dy
    else:
        dq, dr = seq_item(dy, 0), seq_item(dy, 1)
    dq = xp.zeros(q.shape, dtype=q.dtype) if dq is None or np.ndim(dq) == 0 and dq == 0 else xp.asarray(dq)
    dr = xp.zeros(r.shape, dtype=r.dtype) if dr is None or np.ndim(dr) == 0 and dr == 0 else xp.asarray(dr)
    m = xp.matmul(r, xp.swapaxes(dr, -1, -2)) - xp.matmul(xp.swapaxes(dq, -1, -2), q)
    lower = xp.tril(m, -1)
    b = dq + xp.matmul(q, xp.tril(m) + xp.swapaxes(lower, -1, -2))
    return xp.swapaxes(xp.linalg.solve(r, xp.swapaxes(b, -1, -2)), -1, -2)


@adjoint(np.linalg.lstsq)
def lstsq(dy, y, a, b, rcond=None):
    """``(x, residuals, rank, s)`` of a matrix of full column rank (the unique solution);
    ``dy`` their cotangents (the rank's is none)."""
    g = rt.lstsq_vjp(dy, y, a, b)
    return g[0], g[1], None


def _lstsq_parts(xp, a, b, y):
    """``(x, r, solve)``: the solution, the residual ``b - a x`` and a solver of
    ``a^T a``; a matrix without full column rank is refused (its solution is not unique)."""
    a, b = xp.asarray(a), xp.asarray(b)
    if a.shape[0] < a.shape[1] or int(y[2]) < a.shape[1]:
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            f"srcgrad: the derivative of np.linalg.lstsq needs a matrix of full column rank "
            f"(rank {int(y[2])} of a {a.shape[0]}x{a.shape[1]} matrix here): the least-norm "
            f"solution of a rank-deficient system is not differentiable",
            hint="Add a ridge term (solve (A^T A + lambda I) x = A^T b) or use np.linalg.pinv.")
    x = xp.asarray(y[0])
    gram = xp.matmul(a.T, a)
    return x, b - xp.matmul(a, x), lambda v: xp.linalg.solve(gram, v)


@rt.helper
def lstsq_vjp(dy, y, a, b):
    """``z = (a^T a)^-1 dx``: ``a`` gets ``r z^T - (a z) x^T`` and ``b`` gets ``a z``; the
    residuals ``|r|^2`` (per column of ``b``) give ``-2 r x^T`` and ``2 r``; the singular
    values' gradient is ``svd``'s."""
    xp = namespace(a, b)
    x, r, solve = _lstsq_parts(xp, a, b, y)
    a = xp.asarray(a)
    ga, gb = xp.zeros(a.shape, dtype=x.dtype), xp.zeros(np.shape(b), dtype=x.dtype)
    dx, dres, ds = seq_item(dy, 0), seq_item(dy, 1), seq_item(dy, 3)
    if not is_zero_grad(dx):
        z = solve(xp.asarray(dx))
        az = xp.matmul(a, z)
        ga = ga + _outer_sum(xp, r, z) - _outer_sum(xp, az, x)
        gb = gb + az
    if not is_zero_grad(dres) and np.size(y[1]):
        w = 2 * xp.asarray(dres) * r
        ga = ga - _outer_sum(xp, w, x)
        gb = gb + w
    if not is_zero_grad(ds):
        ga = ga + rt.svd_vjp(ds, None, a, False, False)
    return ga, gb


def _outer_sum(xp, u, v):
    """``sum_k u[:, k] v[:, k]^T`` (``u v^T`` for vectors)."""
    return xp.outer(u, v) if u.ndim == 1 else xp.matmul(u, v.T)


returns_sequence(rt.lstsq_vjp)


@adjoint(np.linalg.svd)
def svd(dy, y, a, full_matrices=True, compute_uv=True, hermitian=False):
    """Distinct non-zero singular values assumed. ``U`` and ``Vh`` are differentiated for
    ``full_matrices=False`` (or a square matrix): the extra columns of full ones are not
    unique, and a gradient through them is refused."""
    return rt.svd_vjp(dy, y, a, full_matrices, compute_uv), None, None, None


@rt.helper
def svd_vjp(dy, y, a, full_matrices=True, compute_uv=True):
    """Gradient of ``svd(a)`` (real ``a``, batched over leading axes): ``U (sym parts) V^T``
    plus the parts of ``dU``, ``dV`` outside the spans of ``U``, ``V``."""
    xp = namespace(a, dy)
    a = xp.asarray(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    if not compute_uv:
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        return xp.matmul(u * xp.asarray(dy)[..., None, :], vh)
    if full_matrices and m != n:
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            "srcgrad: the gradient of np.linalg.svd with full_matrices=True of a non-square "
            "matrix is not supported (the extra singular vectors are not unique)",
            hint="Pass full_matrices=False, or compute_uv=False for the singular values alone.")
    u, s, vh = y[0], y[1], y[2]
    gu, gs, gvh = seq_item(dy, 0), seq_item(dy, 1), seq_item(dy, 2)
    v = xp.swapaxes(vh, -1, -2)
    ut = xp.swapaxes(u, -1, -2)
    eye = xp.eye(k, dtype=bool)
    with np.errstate(divide="ignore"):
        f = xp.where(eye, 0.0, 1.0 / xp.where(eye, 1.0, s[..., None, :] ** 2 - s[..., :, None] ** 2))
    middle = xp.zeros(s.shape + (k,), dtype=a.dtype)
    if gs is not None and not (isinstance(gs, (int, float)) and gs == 0):
        middle = middle + xp.eye(k, dtype=a.dtype) * xp.asarray(gs)[..., None, :]
    grad = 0.0
    if gu is not None and not (isinstance(gu, (int, float)) and gu == 0):
        gu = xp.asarray(gu)
        j = xp.matmul(ut, gu)
        middle = middle + (f * (j - xp.swapaxes(j, -1, -2))) * s[..., None, :]
        outside = gu - xp.matmul(u, j)
        grad = grad + xp.matmul(outside / s[..., None, :], vh)
    if gvh is not None and not (isinstance(gvh, (int, float)) and gvh == 0):
        gv = xp.swapaxes(xp.asarray(gvh), -1, -2)
        j = xp.matmul(vh, gv)
        middle = middle + s[..., :, None] * (f * (j - xp.swapaxes(j, -1, -2)))
        outside = gv - xp.matmul(v, j)
        grad = grad + xp.matmul(u / s[..., None, :], xp.swapaxes(outside, -1, -2))
    return grad + xp.matmul(u, xp.matmul(middle, vh))


@adjoint(np.linalg.pinv)
def pinv(dy, y, a, rcond=None, hermitian=False):
    """Constant rank assumed (the derivative of the pseudo-inverse where its rank does not
    change): ``-P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)``, transposes over
    the last two axes; written with primitives, so it is differentiated again."""
    pt = xp.swapaxes(y, -1, -2)
    gt = xp.swapaxes(dy, -1, -2)
    left = xp.eye(a.shape[-2], dtype=y.dtype) - xp.matmul(a, y)
    right = xp.eye(a.shape[-1], dtype=y.dtype) - xp.matmul(y, a)
    return (xp.matmul(left, xp.matmul(gt, xp.matmul(y, pt))) + xp.matmul(xp.matmul(pt, y), xp.matmul(gt, right))
            - xp.matmul(pt, xp.matmul(dy, pt))), None, None


# ----- The array-API spellings in numpy.linalg (NumPy 2) -----


if hasattr(np.linalg, "trace"):
    @adjoint(np.linalg.trace)
    def linalg_trace(dy, y, x, *, offset=0):
        """The trace over the LAST two axes."""
        e = xp.eye(x.shape[-2], x.shape[-1], k=offset, dtype=x.dtype)
        return xp.asarray(dy)[..., None, None] * e

    @adjoint(np.linalg.diagonal)
    def linalg_diagonal(dy, y, x, *, offset=0):
        return rt.diagonal_vjp(dy, x, offset, -2, -1)

    @adjoint(np.linalg.matmul)
    def linalg_matmul(dy, y, x1, x2):
        return rt.matmul_grad_a(dy, x1, x2), rt.matmul_grad_b(dy, x1, x2)

    @adjoint(np.linalg.outer)
    def linalg_outer(dy, y, x1, x2):
        return xp.dot(dy, x2), xp.dot(x1, dy)

    @adjoint(np.linalg.tensordot)
    def linalg_tensordot(dy, y, x1, x2, *, axes=2):
        return rt.tensordot_grad_a(dy, x1, x2, axes), rt.tensordot_grad_b(dy, x1, x2, axes), None

    @adjoint(np.linalg.vecdot)
    def linalg_vecdot(dy, y, x1, x2, *, axis=-1):
        g = xp.expand_dims(xp.asarray(dy), axis)
        return rt.unbroadcast(g * x2, x1), rt.unbroadcast(g * x1, x2), None

    @adjoint(np.linalg.cross)
    def linalg_cross(dy, y, x1, x2, *, axis=-1):
        return (rt.unbroadcast(xp.cross(x2, dy, axis=axis), x1),
                rt.unbroadcast(xp.cross(dy, x1, axis=axis), x2), None)


if hasattr(np, "vecdot"):
    @adjoint(np.vecdot)
    def vecdot(dy, y, x1, x2, *, axis=-1):
        g = xp.expand_dims(xp.asarray(dy), axis)
        return rt.unbroadcast(g * x2, x1), rt.unbroadcast(g * x1, x2), None
