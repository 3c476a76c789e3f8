"""jvp, hvp and grad of grad through the primitives whose rules issue 14 added (prod,
cumprod, einsum, math.log with a base, np.r_/np.c_, the joins, Python's max and sum,
np.array of a list, sinc at 0), each against central finite differences in float64 of
the lower-order derivative; a third derivative of loop-free code, and the hessian of a
gradient that records a tape (a third derivative through its tape code)."""

import math

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import UnsupportedError
from srcgrad.testing import numerical_grad

X = np.array([0.3, -0.7, 1.1, 0.0])
V = np.array([0.5, -1.0, 2.0, 0.7])


def products(x):
    return np.prod(x) + np.sum(np.cumprod(x) ** 2) + np.sum(x.cumprod() * x) + np.prod(x[1:] * 2.0)


def einsums(x):
    m = np.outer(x, x) + np.eye(4)
    a = np.einsum("ij,j->i", m, x)
    b = np.einsum(m, [0, 1], x, [1], [0])
    return np.einsum("i,i->", a, b * x)


def math_logs(x):
    s = 0.0
    for k in range(4):   # (x[k] + 0.5: a Python-float factor that is exactly 0 hits the bug below)
        s = s + math.log(x[k] ** 2 + 1.5, x[(k + 1) % 4] ** 2 + 2.0) * (x[k] + 0.5)
    return s


def index_joins(x):
    a = np.r_[x[:2] * 3.0, x, 0.5]
    b = np.c_[x, x ** 2]
    return np.sum(a ** 3) + np.sum(np.sin(b))


def stack_joins(x):
    h = np.hstack([x[:2], x ** 2])
    v = np.vstack([x, x * x])
    d = np.dstack([x.reshape(2, 2), x.reshape(2, 2) ** 2])
    c = np.column_stack([x, np.cos(x)])
    return np.sum(h ** 3) + np.sum(v ** 3) + np.sum(d ** 3) + np.sum(c ** 3)


def builtins_of_lists(x):
    items = [x[0] * x[1], x[2] ** 2, x[3] + 1.0]
    longer = items + [x[0] ** 3]
    return max(items) * sum(longer) + np.sum(np.array([x[0] ** 2, x[1] * x[2]]) ** 2)


def sinc_at_zero(x):
    return np.sum(np.sinc(x) * x + np.sinc(x * 0.5))


FUNCTIONS = [products, einsums, math_logs, index_joins, stack_joins, builtins_of_lists, sinc_at_zero]


def _fd_jvp(f, x, t, h=1e-6):
    return (f(x + h * t) - f(x - h * t)) / (2 * h)


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_jvp_matches_finite_differences(f):
    out, t = sg.jvp(f, (X.copy(),), (V,))
    assert out == pytest.approx(f(X))
    assert t == pytest.approx(_fd_jvp(f, X, V), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_hvp_matches_finite_differences_of_the_gradient(f):
    (got,) = sg.hvp(f, (X.copy(),), (V,))
    want = _fd_jvp(sg.grad(f), X, V)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_grad_of_grad_matches_finite_differences_of_the_gradient(f):
    first = sg.grad(f).as_function()
    got = sg.grad(first)(X.copy(), grad_outputs=V)
    want = numerical_grad(first, (X.copy(),), grad_outputs=V, eps=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_second_derivative_of_sinc_at_zero_is_minus_pi_squared_over_three():
    # sinc(x) = 1 - (pi x)^2 / 6 + ...: sinc''(0) = -pi^2 / 3 (a where(x == 0, 0, ...) in its
    # derivative made it 0)
    def f(x):
        return np.sinc(x)
    assert sg.grad(sg.grad(f))(0.0) == pytest.approx(-np.pi ** 2 / 3, rel=1e-12)
    assert sg.hessian(f)(0.0) == pytest.approx(-np.pi ** 2 / 3, rel=1e-12)


def test_second_derivative_of_a_product_with_a_zero_entry_is_exact():
    x = np.array([2.0, 0.0, 3.0])
    # d2/dx_i dx_j prod(x) = prod of the others but i, j: only (0, 2) and (2, 0) are 0 here
    want = np.array([[0.0, 3.0, 0.0], [3.0, 0.0, 2.0], [0.0, 2.0, 0.0]])
    np.testing.assert_array_equal(sg.hessian(_prod)(x), want)


def _prod(x):
    return np.prod(x)


def straight_line(x):
    return np.sum(np.sin(x) * x ** 3 + np.exp(x) ** 2 + np.cumsum(x) ** 3) + x[0] * x[1] ** 2


def test_a_third_derivative_of_loop_free_code_matches_finite_differences_of_the_second():
    g = sg.grad(straight_line).as_function()

    def g_v(x):
        return np.sum(g(x) * V)

    second = sg.grad(g_v).as_function()

    def second_v(x):
        return np.sum(second(x) * V)

    got = sg.grad(second_v)(X.copy())
    want = numerical_grad(second_v, (X.copy(),), eps=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def loop(x):
    s = x
    for _ in range(3):
        s = np.sin(s) * x + s
    return np.sum(s)


def test_a_hessian_of_a_gradient_that_records_a_tape_is_its_third_derivative():
    # forward over reverse over reverse: the second derivative's own tape code read again
    gradient = sg.grad(loop).as_function()
    second = sg.grad(gradient)
    got = sg.hessian(gradient)(0.4)
    want = (second(0.4 + 1e-5) - second(0.4 - 1e-5)) / 2e-5
    np.testing.assert_allclose(got, want, rtol=1e-6)


def squares_of_entries(x):
    return x[0] ** 2 + np.exp(x[1] ** 2) + np.log(x[2] ** 2 + 1.5)


def test_grad_of_grad_where_an_indexed_entry_is_zero_matches_finite_differences():
    # add_at leaves the adjoint a scalar zero while what it adds is zero (x[1] = 0 here):
    # its adjoint gave that scalar the sum of the later entries' adjoints
    x = np.array([0.3, 0.0, 0.0])
    v = np.array([0.5, -1.0, 2.0])
    first = sg.grad(squares_of_entries).as_function()
    got = sg.grad(first)(x.copy(), grad_outputs=v)
    np.testing.assert_allclose(got, [2 * 0.5, 2 * -1.0, 2 / 1.5 * 2.0], rtol=1e-12)


def sine_times_its_argument(x):
    return math.sin(x[0] + 1.5) * x[0] + math.sin(x[1] + 1.5) * x[1]


def test_grad_of_grad_of_a_math_function_times_an_argument_that_is_zero():
    x, v = np.array([0.3, 0.0]), np.array([0.5, -1.0])
    first = sg.grad(sine_times_its_argument).as_function()
    got = sg.grad(first)(x.copy(), grad_outputs=v)
    want = numerical_grad(first, (x.copy(),), grad_outputs=v, eps=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-6)
