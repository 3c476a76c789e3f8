"""``sg.jvp(f, primals, tangents)`` inside a differentiated function (reverse over
forward, srcgrad/nested_jvp.py): a Jacobian-vector regularizer, a directional derivative in
a loss. It was refused ("no gradient rule for srcgrad.forward_api.jvp")."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.array([0.5, 1.0, -0.7])
V = np.array([0.3, 2.0, -1.1])


def energy(x):
    return np.sum(np.sin(x) * x ** 2)


def directional_derivative(x):
    return sg.jvp(energy, (x,), (np.ones(3),))[1]


def net(w, x):
    return np.tanh(w * x) * w


def jacobian_regularized(w):
    out, t = sg.jvp(net, (w, X), (np.zeros(3), np.ones(3)))
    return np.sum(out ** 2) + np.sum(t ** 2)


def squared_directional(x, v):
    return np.sum(sg.jvp(energy, (x,), (v,))[1] ** 2)


@pytest.mark.parametrize("f, args, wrt", [
    (directional_derivative, (X,), 0), (jacobian_regularized, (V,), 0),
    (squared_directional, (X, V), 0), (squared_directional, (X, V), 1)])
def test_reverse_over_forward_matches_differences(f, args, wrt):
    got = sg.grad(f, wrt=wrt)(*[a.copy() for a in args])
    np.testing.assert_allclose(got, numerical_grad(f, args, wrt=wrt), rtol=1e-6, atol=1e-8)


def test_value_and_hand_derived_hessian_row_sums():
    # d/dx <grad energy(x), 1> = H 1, with H diagonal
    h = 2 * np.sin(X) + 4 * X * np.cos(X) - X ** 2 * np.sin(X)
    value, grad = sg.value_and_grad(directional_derivative)(X.copy())
    assert value == pytest.approx(np.sum(2 * X * np.sin(X) + X ** 2 * np.cos(X)))
    np.testing.assert_allclose(grad, h, rtol=1e-12)


def test_forward_mode_and_second_order_through_it_match_hand_derived():
    """Forward mode through it was refused ("defines no jvp"), and its Hessian named a line
    of srcgrad/nested_jvp.py: now forward over forward of the tangent program, and hvps
    of L = <w0, f> + <w1, J t> (nested_jvp.py). Of <grad energy, 1> = sum(h): the jvp is
    h @ V, the Hessian diag(h') with h' the third derivative of sin(x) x**2."""
    h = 2 * np.sin(X) + 4 * X * np.cos(X) - X ** 2 * np.sin(X)
    h3 = 6 * np.cos(X) - 6 * X * np.sin(X) - X ** 2 * np.cos(X)
    np.testing.assert_allclose(sg.jvp(directional_derivative, (X.copy(),), (V,))[1], h @ V,
                               rtol=1e-12)
    np.testing.assert_allclose(sg.hessian(directional_derivative)(X.copy()), np.diag(h3),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sg.hvp(directional_derivative, (X.copy(),), (V,))[0], h3 * V,
                               rtol=1e-10)
