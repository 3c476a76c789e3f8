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
"""

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, nondifferentiable

xp = None  # placeholder: the array namespace, bound in generated code

# (np.linalg.cond is a smooth function of the matrix, a ratio of singular values:
# it has no rule and is refused where it needs a gradient, never a silent zero.)
nondifferentiable(np.linalg.matrix_rank)

# ----- Norms -----


@adjoint(np.linalg.norm)
def norm(dy, y, x, ord=None, axis=None, keepdims=False):
    return rt.norm_vjp(dy, x, y, ord, axis, keepdims)


if hasattr(np.linalg, "vector_norm"):
    @adjoint(np.linalg.vector_norm)
    def vector_norm(dy, y, x, *, axis=None, keepdims=False, ord=2):
        return rt.norm_vjp(dy, x, y, ord, axis, keepdims, "vector")

    @adjoint(np.linalg.matrix_norm)
    def matrix_norm(dy, y, x, *, keepdims=False, ord="fro"):
        return rt.norm_vjp(dy, x, y, ord, None, keepdims, "matrix")


# ----- Inverses and solves -----


@adjoint(np.linalg.inv)
def inv(dy, y, a):
    yt = xp.swapaxes(y, -1, -2)
    return -xp.matmul(yt, xp.matmul(dy, yt))


@adjoint(np.linalg.solve)
def solve(dy, y, a, b):
    g = rt.solve_vjp(dy, a, b, y)
    return g[0], g[1]


@adjoint(np.linalg.matrix_power)
def matrix_power(dy, y, a, n):
    return rt.matrix_power_vjp(dy, a, n), None


# ----- Determinants -----


@adjoint(np.linalg.det)
def det(dy, y, a):
    """The cofactor matrix, finite at a singular ``a`` too (``rt.cofactor``)."""
    return xp.asarray(dy)[..., None, None] * rt.cofactor(a)


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
