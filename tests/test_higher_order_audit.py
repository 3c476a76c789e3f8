"""An adversarial audit of the forward-mode and higher-order APIs: programs a new user
writes, each derivative checked against central finite differences in float64
(srcgrad.testing.numerical_grad), each test one bug that gave a silently wrong result."""

import numpy as np

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.array([0.3, -1.2, 0.7, 0.5])


def prefix_square(x):
    y = x * 1.0
    y[1:] += y[:-1] ** 2   # y[:-1] is saved as a view of y, which the sweep restores
    return np.sum(y ** 2)


def test_jacrev_of_indexed_write_reading_a_view():
    """retain_graph copied the saved values one array at a time: the saved view y[:-1]
    kept y's value after the write, and jacrev (one retained backward per row) was wrong."""
    want = numerical_grad(prefix_square, (X.copy(),))
    np.testing.assert_allclose(sg.jacrev(prefix_square)(X), want, rtol=1e-6, atol=1e-6)
    out, backward = sg.vjp(prefix_square)(X)
    first = backward(1.0, retain_graph=True)
    np.testing.assert_allclose(first, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(backward(1.0), want, rtol=1e-6, atol=1e-6)
