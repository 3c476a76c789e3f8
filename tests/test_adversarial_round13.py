"""Thirteenth adversarial round: what Google Tangent's test catalogue (test_tangent_corpus.py)
and PyTorch's autograd idioms found wrong or crashing before their fix. Each answer is checked
against central differences in float64."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad


def _grad_of_grad_matches(f, x, seed):
    first = sg.grad(f).as_function()
    got = sg.grad(first)(x.copy(), grad_outputs=seed)
    want = numerical_grad(lambda v: np.sum(first(v) * seed), (x.copy(),))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=_atol(want))


def _atol(want):
    """Central differences' own error grows with the values differenced."""
    return 1e-7 * max(1.0, float(np.max(np.abs(want))))


# ----- An adjoint that unbroadcast left smaller, indexed by a write's reverse -----
# ``h * w`` with ``h`` of shape (n, 3) and ``w`` of (3,) gives ``h`` the adjoint
# ``unbroadcast(g * w, h)``: of ``h``'s shape when ``g`` is, but (3,) when ``g`` is a scalar
# (the zero seed a gradient's own reverse sweep starts from). The reverse of a row write
# ``h[t] = v`` then read ``dh[t]``: one entry of ``w`` for the whole row, or past the end
# (IndexError) once n > 3. Now the adjoint is broadcast to ``h``'s shape first (rt.full_grad).

def rows_weighted(x):
    h = np.zeros((len(x), 3))
    for t in range(len(h)):
        h[t] = x[t] * x[t]
    return np.sum(h * np.arange(3.0))


def rows_weighted_slices(x):
    h = np.zeros((len(x), 2, 3))
    for t in range(len(x)):
        h[t, 1] = np.sin(x[t]) * x[:3]
    return np.sum(h * np.array([1.0, -2.0, 0.5]))


@pytest.mark.parametrize("f", [rows_weighted, rows_weighted_slices])
@pytest.mark.parametrize("n", [3, 5])
def test_grad_of_grad_through_row_writes_into_a_broadcast_product(f, n):
    rng = np.random.default_rng(n)
    _grad_of_grad_matches(f, rng.standard_normal(n), rng.standard_normal(n))


def test_hessian_through_row_writes_into_a_broadcast_product():
    x = np.array([0.3, -1.2, 0.8, 1.1, 0.4])
    want = np.stack([numerical_grad(lambda v: sg.grad(rows_weighted_slices)(v)[i], (x,))
                     for i in range(len(x))])
    np.testing.assert_allclose(sg.hessian(rows_weighted_slices)(x), want, rtol=1e-6, atol=1e-7)


# ----- A custom Function's apply called by another name -----
# PyTorch's tutorial idiom ``relu = MyReLU.apply`` (a module-level alias, or an attribute
# of a namespace) was refused: the sweeps read the class from the call's spelling
# ``Class.apply``. The call is now spelled so wherever its apply is found.

class _ClampedRelu(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.maximum(x, 0.0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        gi = g.copy()
        gi[x < 0] = 0
        return gi


class _Cube(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * g * x ** 2


relu = _ClampedRelu.apply
cube = _Cube.apply


class _Ops:
    cube = _Cube.apply


_W = np.array([1.1, 0.4, -0.7, 0.3])


def relu_by_alias(x, w):
    return np.sum(relu(x * w) * _W)


def cube_by_alias(x):
    return np.sum(cube(np.sin(x)) * _W) + np.sum(_Ops.cube(x) * _W)


def test_function_apply_called_by_an_alias():
    x, w = np.array([0.3, -1.2, 0.8, 1.5]), np.array([1.0, 0.5, -2.0, 0.7])
    got = sg.grad(relu_by_alias, wrt=(0, 1))(x, w)
    want = [numerical_grad(relu_by_alias, (x, w), wrt=k) for k in (0, 1)]
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.grad(cube_by_alias)(x), numerical_grad(cube_by_alias, (x,)),
                               rtol=1e-6, atol=1e-8)
    _grad_of_grad_matches(cube_by_alias, x, _W)


# ----- The same family past row writes: every adjoint that reads dh as h's shape -----
# A gradient's own reverse sweep seeds the function's output with a scalar zero, so
# ``unbroadcast(0.0 * w, h)`` for ``h * w`` left ``dh`` of w's shape (3,) where h is (5, 3);
# the adjoints of reshape, tile, repeat, cumsum, sort, pad and of rows gathered from a list
# then reshaped, sliced or indexed it as (5, 3): a ValueError or IndexError from inside
# the generated code. Now unbroadcast broadcasts an array smaller than its target up.

_W3 = np.array([1.0, -2.0, 0.5])


def ravel_back(x): return np.sum(np.sin(x).reshape(5, 3) * _W3)
def tiled(x): return np.sum(np.tile(x[:3] ** 2, (5, 1)) * _W3)
def repeated(x): return np.sum(np.repeat(x[:5, None] ** 2, 3, axis=1) * _W3)
def cumulative(x): return np.sum(np.cumsum(x.reshape(5, 3) ** 2, axis=0) * _W3)
def sorted_columns(x): return np.sum(np.sort(x.reshape(5, 3) ** 2, axis=0) * _W3)
def padded(x): return np.sum(np.pad(x.reshape(5, 3) ** 2, ((1, 0), (0, 0))) * _W3)


def rows_from_a_list(x):
    rows = [x[3 * i:3 * i + 3] ** 2 for i in range(5)]
    return np.sum(np.array(rows) * _W3)


@pytest.mark.parametrize("f", [ravel_back, tiled, repeated, cumulative, sorted_columns, padded,
                               rows_from_a_list])
def test_grad_of_grad_of_a_broadcast_product_after_a_shape_change(f):
    rng = np.random.default_rng(2)
    _grad_of_grad_matches(f, rng.standard_normal(15), rng.standard_normal(15))


# ----- The second derivative of det at a singular matrix -----
# det's gradient, the cofactor matrix, is exact at a singular matrix (rt.cofactor), but its
# own derivative (a grad of grad, a Hessian) went through inv(a): LinAlgError from inside
# the generated code. It is a polynomial, exact everywhere now (rt.cofactor_derivative).

def det_weighted(a):
    return np.linalg.det(a) * 2.0 + np.sum(a * 0.1)


def det_of_product(a):
    return np.linalg.det(a @ a.T) + np.linalg.det(a[:2, :2])


@pytest.mark.parametrize("a", [np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]]),
                               np.zeros((3, 3)), np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]),
                               np.array([[0.3, -1.2, 0.5], [0.8, 1.1, -0.4], [0.2, 0.6, 1.5]])],
                         ids=["rank2", "zero", "rank1", "invertible"])
@pytest.mark.parametrize("f", [det_weighted, det_of_product])
def test_second_derivative_of_det_at_singular_matrices(f, a):
    seed = np.cos(np.arange(9.0)).reshape(3, 3)
    _grad_of_grad_matches(f, a, seed)
    first = sg.grad(f).as_function()
    want = numerical_grad(lambda v: np.sum(first(v) * seed), (a.copy(),))
    np.testing.assert_allclose(sg.jvp(first, (a.copy(),), (seed,))[1], want,
                               rtol=1e-6, atol=_atol(want))   # the Hessian is symmetric
    np.testing.assert_allclose(np.tensordot(sg.hessian(f)(a.copy()), seed, 2), want,
                               rtol=1e-6, atol=_atol(want))


# ----- A tangent in its output's shape -----
# The tangent program of a gradient read from ``tuple(x)`` computes its zero tangent as a
# scalar: sg.jvp returned array(0.) as the tangent of a gradient of shape (4,). The jvp
# boundary now spreads a scalar (or broadcastable) tangent over its value's shape.

def second_item_tripled(x):
    items = tuple(x)
    return items[1] * 3.0


def test_jvp_tangent_has_its_value_shape_when_it_is_zero():
    x = np.array([0.5, 1.2, -0.3, 2.0])
    first = sg.grad(second_item_tripled).as_function()
    value, tangent = sg.jvp(first, (x,), (np.ones(4),))
    np.testing.assert_array_equal(value, [0.0, 3.0, 0.0, 0.0])
    assert tangent.shape == (4,) and tangent.dtype == np.float64
    np.testing.assert_array_equal(tangent, np.zeros(4))
    value, tangent = sg.jvp(first, (x.astype(np.float32),), (np.ones(4, np.float32),))
    assert tangent.shape == (4,) and tangent.dtype == np.float32


# ----- Forward mode on Dask through an indexed write -----
# The tangent program asks whether a value shares memory with an operand (rt.tangent_memory);
# for a Dask array that asked dask.array for may_share_memory, which it has not: every jvp
# of a function writing x[i] = v was refused on Dask. A Dask array shares with itself only.

def product_into_first(x):
    a = x[0]
    b = x[1]
    x[0] = a * b
    return np.sum(x * x)


def rows_into_zeros(inputs, w):
    h = np.zeros((4, 3))
    for t in range(3):
        h[t + 1] = np.tanh(np.dot(inputs[t], w) + h[t])
    return np.sum(h[1:] ** 2)


def test_jvp_of_indexed_writes_on_dask():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(4)
    x, t = rng.standard_normal(5), rng.standard_normal(5)
    want = sg.jvp(product_into_first, (x.copy(),), (t,))
    got = sg.jvp(product_into_first, (da.from_array(x, chunks=2),), (da.from_array(t, chunks=2),))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)
    args = (rng.standard_normal((3, 2)), rng.standard_normal((2, 3)))
    tangents = tuple(rng.standard_normal(a.shape) for a in args)
    want = sg.jvp(rows_into_zeros, args, tangents)
    got = sg.jvp(rows_into_zeros, tuple(da.from_array(a, chunks=2) for a in args),
                 tuple(da.from_array(a, chunks=2) for a in tangents))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)


def test_third_derivative_of_det_at_an_invertible_matrix():
    # rt.cofactor_derivative has its own rules (with inv), so det still goes to third order
    a = np.array([[0.3, -1.2, 0.5], [0.8, 1.1, -0.4], [0.2, 0.6, 1.5]])
    s1, s2 = np.cos(np.arange(9.0)).reshape(3, 3), np.sin(np.arange(9.0)).reshape(3, 3)
    first = sg.grad(det_weighted).as_function()

    def along(v):
        return np.sum(first(v) * s1)
    second = sg.grad(along).as_function()

    def along2(v):
        return np.sum(second(v) * s2)
    want = numerical_grad(along2, (a.copy(),))
    np.testing.assert_allclose(sg.grad(along2)(a.copy()), want, rtol=1e-6, atol=_atol(want))
    h = 1e-5
    along_s2 = (second(a + h * s2) - second(a - h * s2)) / (2 * h)
    np.testing.assert_allclose(sg.jvp(second, (a.copy(),), (s2,))[1], along_s2, rtol=1e-6,
                               atol=_atol(along_s2))


# ----- Grad of grad of augmented item updates -----
# The gradient of ``h[t] += v`` reads ``h[t]`` as the view ``h_item`` and pushes
# ``rt.shape_of(h_item)`` after the write ``h[t] = h_item + v``; read again for a second
# derivative, that shape read counted as a read of the changed view: grad of grad of
# ``h[t] += v`` and of ``h[t] = h[t] + v`` was refused. A read of a value's shape or dtype only is not a read of its
# values (aliasing._value_reads). (``v[1:] += v[:-1]``, whose gradient keeps the view
# ``v[:-1]`` for its reverse sweep, is still refused there.)

def rows_accumulated(x):
    h = np.zeros((5, 3))
    for t in range(5):
        h[t] += x[t] * x[:3]
    return np.sum(h * np.array([1.0, -2.0, 0.5]))


def entries_scaled(x):
    m = np.outer(x[:3], x[3:]) + 1.0
    for i in range(3):
        m[i, i] *= x[i]
        m[i] -= np.sin(x[3:]) * m[i, 0]
    return np.sum(m ** 2)


def rows_updated_by_assignment(x):
    h = np.zeros((6, 3))
    for t in range(5):
        h[t + 1] = np.tanh(x[t] * x[:3] + h[t])
        h[t] = h[t] + x[t] * 0.5    # as Tangent's RNN writes a row update
    return np.sum(h ** 2)


@pytest.mark.parametrize("f", [rows_accumulated, entries_scaled, rows_updated_by_assignment])
def test_grad_of_grad_of_augmented_item_updates(f):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(6)
    _grad_of_grad_matches(f, x, rng.standard_normal(6))
