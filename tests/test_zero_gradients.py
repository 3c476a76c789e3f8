"""An input the output reaches only through piecewise-constant functions (``np.floor``,
``np.sign``, ``//``, ``math.floor``...) has a zero gradient, as PyTorch's ``floor`` and
JAX's give: srcgrad raised "appears not to have been used" (and refused
``sg.grad(np.floor)`` itself), which autograd's, JAX's and PyTorch's own tests of these
functions would meet first. An input with no path at all (through a comparison, an
``argmax``, a ``no_grad`` block or ``sg.detach``) keeps PyTorch's error."""

import math
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.array([0.37, -0.62, 1.13, 0.71])   # away from every jump below


def floor_sum(x):
    return np.sum(np.floor(x * 3) * 2)


def sign_sum(x):
    return np.sum(np.sign(x) + np.ceil(x) + np.rint(x) + np.trunc(x) + np.fix(x))


def round_method(x):
    return np.sum(x.round(1)) + np.sum(np.round(x, 2)) + np.sum(np.around(x))


def floor_division(x):
    return np.sum(np.abs(x) // 0.25) + np.sum(np.floor_divide(x, 0.3))


def math_floor_loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + math.floor(x[i] * 3) + math.ceil(x[i]) + math.trunc(x[i] * 2)
    return total


CASES = [floor_sum, sign_sum, round_method, floor_division, math_floor_loop]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_the_gradient_is_zero_as_differences_say(f):
    got = sg.grad(f)(X.copy())
    assert isinstance(got, np.ndarray) and got.shape == X.shape and got.dtype == X.dtype
    np.testing.assert_array_equal(got, np.zeros(4))
    np.testing.assert_array_equal(numerical_grad(f, (X,)), np.zeros(4))   # off the jumps


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_every_mode_agrees(f):
    _, tangent = sg.jvp(f, (X,), (np.ones(4),))
    assert tangent == 0.0
    np.testing.assert_array_equal(sg.hessian(f)(X), np.zeros((4, 4)))
    value, grad = sg.value_and_grad(f)(X)
    assert value == f(X)
    np.testing.assert_array_equal(grad, np.zeros(4))
    pytest.importorskip("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(sg.grad(f, jit=True)(X.copy()), np.zeros(4))


def test_a_float_input_gets_a_float_zero_and_other_inputs_their_gradients():
    def f(a, b):
        return math.floor(a * 4) * b + b ** 2
    ga, gb = sg.grad(f, wrt=(0, 1))(0.7, 1.5)
    assert type(ga) is float and ga == 0.0
    assert gb == pytest.approx(2 + 2 * 1.5)


def test_an_intermediate_reached_only_through_floor():
    def f(x):
        h = np.exp(x)
        return np.sum(np.floor(h))
    np.testing.assert_array_equal(sg.grad(f, wrt="h")(X), np.zeros(4))


@pytest.mark.parametrize("primitive", [np.floor, np.ceil, np.sign, np.rint, np.trunc, math.floor, round])
def test_the_primitive_itself(primitive):
    assert sg.grad(primitive)(0.3) == 0.0


def compared_only(x):
    return np.sum(np.where(x > 0, 1.0, 0.0))


def argmax_only(x):
    return float(np.argmax(x))


def under_no_grad(x):
    with sg.no_grad():
        y = np.sum(x ** 2)
    return y


def detached(x):
    return np.sum(sg.detach(x) ** 2)


@pytest.mark.parametrize("f", [compared_only, argmax_only, under_no_grad, detached],
                         ids=lambda f: f.__name__)
def test_no_path_at_all_keeps_the_error(f):
    with pytest.raises(RuntimeError, match="appears not to have been used"):
        sg.grad(f)(X.copy())
    assert sg.grad(f, allow_unused=True)(X.copy()) is None
    np.testing.assert_array_equal(sg.grad(f, materialize_grads=True)(X.copy()), np.zeros(4))


def test_structures_get_zeros_in_their_shape():
    def of_dict(p):
        return np.sum(np.floor(p["w"] * 3))

    def of_list(ws):
        return sum(np.sum(np.sign(w)) for w in ws)
    got = sg.grad(of_dict)({"w": X, "b": 2.0})
    assert set(got) == {"w", "b"} and got["b"] == 0.0
    np.testing.assert_array_equal(got["w"], np.zeros(4))
    got = sg.grad(of_list)([X, 2 * X])
    assert len(got) == 2 and all((g == 0).all() and g.shape == (4,) for g in got)
