"""Second derivatives through kron, convolve, polyval, select, sinc and cumprod, whose
gradients call run-time helpers (rules/helper_second_order.py): sg.hessian (forward over
reverse) and sg.grad(sg.grad(f)) (reverse over reverse) against central differences of
the gradient, and hand-derived Hessians where they are short."""

import numpy as np
import pytest

import srcgrad as sg

X = np.array([0.7, 1.3, -0.9])


def kron_fn(x):
    return np.sum(np.kron(x, x ** 2) ** 2)


def kron_matrix(x):
    return np.sum(np.sin(np.kron(np.outer(x, x[:2]), np.eye(2) + x[0])))


def convolve_full(x):
    return np.sum(np.convolve(x, x ** 2) ** 2)


def convolve_same(x):
    return np.sum(np.tanh(np.convolve(x, np.array([0.5, -1.0]) * x[0], "same")))


def convolve_valid(x):
    return np.sum(np.convolve(np.concatenate([x, x ** 2]), x, "valid") ** 3)


def polyval_coefficients(x):
    return np.sum(np.polyval(x, np.array([0.3, -1.1, 2.0])) ** 2)


def polyval_both(x):
    return np.sum(np.polyval(x, x) ** 2)


def polyder_fn(x):
    return np.sum(np.polyder(x ** 3) ** 2) + np.sum(np.polyder(x, 2) * x[0])


def select_fn(x):
    return np.sum(np.select([x > 0.5, x < -0.5], [x ** 3, np.sin(x)], x ** 2) ** 2)


def sinc_fn(x):
    return np.sum(np.sinc(x) ** 2 * x)


def cumprod_fn(x):
    return np.sum(np.cumprod(x) ** 2)


FUNCTIONS = [kron_fn, kron_matrix, convolve_full, convolve_same, convolve_valid,
             polyval_coefficients, polyval_both, polyder_fn, select_fn, sinc_fn, cumprod_fn]


def _fd_hessian(f, x, eps=1e-5):
    g = sg.grad(f)
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = eps
        cols.append((g(x + e) - g(x - e)) / (2 * eps))
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [X, np.array([0.2, -0.004, 1.7])], ids=["x", "near-zero"])
def test_hessian_and_grad_of_grad_match_finite_differences(f, x):
    want = _fd_hessian(f, x)
    np.testing.assert_allclose(sg.hessian(f)(x), want, rtol=1e-6, atol=1e-6)
    v = np.array([0.3, -1.2, 0.5])
    np.testing.assert_allclose(sg.grad(sg.grad(f))(x, grad_outputs=v), want @ v, rtol=1e-6, atol=1e-6)
    (hv,) = sg.hvp(f, (x,), (v,))
    np.testing.assert_allclose(hv, want @ v, rtol=1e-6, atol=1e-6)


def test_polyval_in_the_coefficients_has_the_hand_derived_hessian():
    """f(p) = sum_j polyval(p, t_j)**2: H = 2 V^T V, V the Vandermonde matrix of t."""
    t = np.array([0.3, -1.1, 2.0])
    vander = np.vander(t, 3)
    np.testing.assert_allclose(sg.hessian(polyval_coefficients)(X), 2 * vander.T @ vander, rtol=1e-12)


def test_kron_of_vectors_has_the_hand_derived_hessian():
    """f(x) = sum_ij x_i**2 x_j**4 = (sum x**2)(sum x**4)."""
    x = X
    a, b = np.sum(x ** 2), np.sum(x ** 4)
    want = 2 * b * np.eye(3) + 12 * a * np.diag(x ** 2) + np.outer(2 * x, 4 * x ** 3) + np.outer(4 * x ** 3, 2 * x)
    np.testing.assert_allclose(sg.hessian(kron_fn)(x), want, rtol=1e-12)


def sinc_scalar(x):
    return np.sinc(x) ** 2 * x + np.sinc(2.0 * x)


@pytest.mark.parametrize("x", [0.3, -0.005, 0.0, 1.4, -2.2])
def test_third_derivative_of_sinc_matches_finite_differences(x):
    """Through sinc_grad2's rules (sinc_grad3), near 0 too: the third derivative against
    differences of the second."""
    second = sg.grad(sg.grad(sinc_scalar))
    eps = 1e-5
    want = (second(x + eps) - second(x - eps)) / (2 * eps)
    np.testing.assert_allclose(sg.grad(sg.grad(sg.grad(sinc_scalar)))(x), want, rtol=1e-6, atol=1e-6)
