"""``np.add.at(a, index, v)``: a scatter-add where repeated indices add each time.

transform/mutation.py writes it as ``a[...] = rt.ufunc_add_at(a, index, v)``; the
gradient of ``v`` gathers the output's gradient at each index (repeats included). Checked
against central differences in reverse mode, forward mode and second order.
"""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import UnsupportedError
from srcgrad.testing import numerical_grad

IDX = np.array([0, 2, 0, 1, 0])
X = np.array([0.1, 0.2, 0.3])
V = np.array([0.5, -0.3, 0.7, 1.1, 0.2])


def histogram_like(x, v):
    out = np.zeros(3) + x
    np.add.at(out, IDX, v * v)
    return np.sum(np.sin(out) * np.arange(1.0, 4.0))


def into_rows_and_columns(W, rows, cols, v):
    A = W.copy()
    np.add.at(A, (rows, cols), v)   # a scalar v, added three times at (0, 2)
    return np.sum(A ** 2)


def in_a_loop(x, v):
    acc = np.zeros(3)
    for k in range(3):
        np.add.at(acc, IDX[k:k + 3], v[k:k + 3] * x[k])
        acc = np.tanh(acc)
    return np.sum(acc ** 2)


def into_the_argument(x, v):
    np.add.at(x, [1, 1], v[:2])
    return np.sum(x ** 3)


@pytest.mark.parametrize("f", [histogram_like, in_a_loop])
@pytest.mark.parametrize("wrt", [0, 1])
def test_reverse_mode(f, wrt):
    np.testing.assert_allclose(sg.grad(f, wrt=wrt)(X, V), numerical_grad(f, (X, V), wrt=wrt),
                               rtol=1e-6, atol=1e-8)


def test_a_tuple_index_and_a_scalar_value_added_at_a_repeated_position():
    W = np.arange(6.0).reshape(2, 3)
    rows, cols = np.array([0, 1, 0]), np.array([2, 2, 2])
    dW, dv = sg.grad(into_rows_and_columns, wrt=(0, 3))(W, rows, cols, 1.5)
    A = W.copy()
    A[0, 2] += 3.0
    A[1, 2] += 1.5
    np.testing.assert_allclose(dW, 2 * A)
    assert dv == pytest.approx(2 * (2 * A[0, 2] + A[1, 2]))


def test_written_into_an_argument_leaves_the_callers_array_as_other_writes_do():
    x = X.copy()
    want = numerical_grad(into_the_argument, (X.copy(), V), wrt=0)
    got = sg.grad(into_the_argument)(x, V)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(x, X)   # the gradient differentiates a copy (x[i] += v too)


def test_forward_mode_and_second_order():
    tx, tv = np.array([0.3, -1.0, 2.0]), np.linspace(-1.0, 1.0, 5)
    _, t = sg.jvp(histogram_like, (X, V), (tx, tv))
    want = numerical_grad(histogram_like, (X, V), wrt=0) @ tx \
        + numerical_grad(histogram_like, (X, V), wrt=1) @ tv
    assert t == pytest.approx(want, rel=1e-6)
    h = sg.hessian(histogram_like, wrt=1)(X, V)
    want = np.stack([numerical_grad(lambda v: sg.grad(histogram_like, wrt=1)(X, v)[i], (V,))
                     for i in range(len(V))])
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-7)


def fmax_at(x):
    y = np.zeros(3)
    np.fmax.at(y, [0, 0], x[:2])
    return np.sum(y)


def test_other_ufuncs_at_are_refused_at_their_line():
    # (np.maximum.at and np.minimum.at differentiate: tests/test_coverage_round9.py)
    with pytest.raises(UnsupportedError) as info:
        sg.grad(fmax_at)(X)
    assert __file__ in str(info.value) and "np.fmax.at(" in str(info.value)
