"""``np.apply_along_axis(func1d, axis, arr)``: srcgrad/inlined.py's loop over the slices
(it was refused: no rule), so ``func1d`` is differentiated as any helper, to any order."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from tests.adversarial_checks import assert_grad_and_jvp

RNG = np.random.default_rng(7)
M = RNG.normal(size=(3, 4))
T = RNG.normal(size=(2, 3, 4))


def squared_norm_of_rows(m):
    return np.sum(np.apply_along_axis(lambda r: np.sum(r ** 2), 1, m) * np.array([1.0, 2.0, 3.0]))


def running_sums_down_columns(m):
    return np.sum(np.apply_along_axis(lambda r: np.cumsum(r) * r, 0, m) * np.arange(12.0).reshape(3, 4))


def outer_with_head(r):
    return np.outer(r, r[:2])


def matrix_per_slice(t, axis):
    """Each slice's result is a matrix: its two axes stand where ``axis`` was."""
    y = np.apply_along_axis(outer_with_head, axis, t)
    return np.sum(y * np.arange(y.size).reshape(y.shape))


@pytest.mark.parametrize("f, x", [(squared_norm_of_rows, M), (running_sums_down_columns, M)],
                         ids=["scalar_per_row", "vector_per_column"])
def test_gradient_tangent_and_hessian(f, x):
    assert_grad_and_jvp(f, (x.copy(),))
    h = np.reshape(sg.hessian(f)(x.copy()), (x.size, x.size))
    eps = 1e-5
    columns = [np.ravel(sg.grad(f)(x + eps * e.reshape(x.shape)) - sg.grad(f)(x - eps * e.reshape(x.shape)))
               / (2 * eps) for e in np.eye(x.size)]
    np.testing.assert_allclose(h, np.stack(columns, axis=1), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_results_of_several_dimensions_go_where_the_axis_was(axis):
    value, grad = sg.value_and_grad(matrix_per_slice)(T.copy(), axis)
    assert value == matrix_per_slice(T.copy(), axis)   # (the same shape, order and sums as NumPy's)
    np.testing.assert_allclose(grad, numerical_grad(matrix_per_slice, (T.copy(), axis)), rtol=1e-6)
