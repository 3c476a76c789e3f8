"""sg.jacfwd (forward mode, columns) == sg.jacobian/sg.jacrev (reverse mode, rows) ==
the central finite-difference Jacobian, with JAX's shapes: out.shape + in.shape."""

import numpy as np
import pytest

import srcgrad as sg


def fd_jacobian(f, args, k, h=1e-6):
    x = np.asarray(args[k], dtype=float)
    out = np.asarray(f(*args), dtype=float)
    jac = np.zeros(out.shape + x.shape)
    for j in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[j] = h
        plus = list(args)
        minus = list(args)
        plus[k] = x + e if x.shape else float(x + e)
        minus[k] = x - e if x.shape else float(x - e)
        jac[(...,) + j] = (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * h)
    return jac


def elementwise(x):
    return np.sin(x) * x


def matrix_map(W, x):
    y = np.tanh(W @ x)
    return np.outer(y, x)


def looped(x, n):
    out = np.zeros(n)
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[i]
        out[i] = np.exp(-s)
    return out


def scalar_out(a, x):
    return a * np.sum(x ** 3)


CASES = [
    (elementwise, (np.array([0.3, -1.2, 2.0]),), 0),
    (matrix_map, (np.arange(6.0).reshape(2, 3) / 5, np.array([0.5, -0.4, 1.1])), 0),
    (matrix_map, (np.arange(6.0).reshape(2, 3) / 5, np.array([0.5, -0.4, 1.1])), 1),
    (looped, (np.array([0.3, -0.6, 0.9, 0.2]), 4), 0),
    (scalar_out, (0.7, np.array([0.3, -0.6, 0.9])), 1),
    (scalar_out, (0.7, np.array([0.3, -0.6, 0.9])), 0),
]


@pytest.mark.parametrize("f, args, k", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_jacfwd_equals_jacrev_equals_finite_differences(f, args, k):
    expected = fd_jacobian(f, args, k)
    forward = sg.jacfwd(f, wrt=k)(*args)
    reverse = sg.jacrev(f, wrt=k)(*args)
    assert forward.shape == reverse.shape == np.shape(f(*args)) + np.shape(args[k])
    np.testing.assert_allclose(forward, expected, atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(reverse, expected, atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(forward, reverse, atol=1e-12, rtol=1e-10)


def test_wrt_by_name_and_as_a_tuple():
    W, x = np.arange(6.0).reshape(2, 3) / 5, np.array([0.5, -0.4, 1.1])
    jW, jx = sg.jacobian(matrix_map, wrt=("W", "x"))(W, x)
    fW, fx = sg.jacfwd(matrix_map, wrt=(0, 1))(W, x)
    assert jW.shape == (2, 3, 2, 3) and jx.shape == (2, 3, 3)
    np.testing.assert_allclose(jW, fW, atol=1e-12)
    np.testing.assert_allclose(jx, fx, atol=1e-12)
    assert sg.jacobian is sg.jacrev
