"""Jacobians and Hessians keep the inputs' float dtype (as JAX's do: float32 in, float32
out), equal the float64 result to float32 rounding, and take keyword arguments."""

import numpy as np
import pytest

import srcgrad as sg


def elementwise(x):
    return np.sin(x) * x ** 2


def scalar(x):
    return np.sum(np.sin(x) ** 2) * np.sum(x)


def two_args(x, y):
    return np.sum(np.tanh(x) * y ** 3)


def in_dict(p):
    return np.sum(np.sin(p["a"]) ** 2) * np.sum(p["b"] ** 3)


def with_loop(x):
    total = 0.0
    for k in range(3):
        total = total + np.sum(np.cos(x * (k + 1)))
    return total


X = np.array([0.3, -1.2, 0.7])


def _check(result32, result64):
    leaves32, leaves64 = _leaves(result32), _leaves(result64)
    assert len(leaves32) == len(leaves64)
    for a, b in zip(leaves32, leaves64):
        assert a.dtype == np.float32, a.dtype
        assert b.dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in _leaves(value[k])]
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@pytest.mark.parametrize("api", [sg.jacfwd, sg.jacrev])
@pytest.mark.parametrize("fn", [elementwise, scalar, with_loop])
def test_jacobian_keeps_float32(api, fn):
    _check(api(fn)(X.astype(np.float32)), api(fn)(X))


@pytest.mark.parametrize("fn", [scalar, with_loop])
def test_hessian_keeps_float32(fn):
    _check(sg.hessian(fn)(X.astype(np.float32)), sg.hessian(fn)(X))


def test_hessian_of_two_arguments_keeps_float32():
    y = np.array([1.5, -0.5, 2.0])
    h32 = sg.hessian(two_args, wrt=(0, 1))(X.astype(np.float32), y.astype(np.float32))
    _check(h32, sg.hessian(two_args, wrt=(0, 1))(X, y))


@pytest.mark.parametrize("api", [sg.hessian, sg.jacfwd, sg.jacrev])
def test_structure_keeps_float32(api):
    p64 = {"a": X, "b": np.array([2.0, -1.0])}
    p32 = {k: v.astype(np.float32) for k, v in p64.items()}
    _check(api(in_dict)(p32), api(in_dict)(p64))


def test_float32_and_float64_arguments_give_float64_where_either_is():
    x32, y64 = X.astype(np.float32), np.array([1.5, -0.5, 2.0])
    h = sg.hessian(two_args, wrt=(0, 1))(x32, y64)
    assert h[0][0].dtype == np.float32   # d/dx of the gradient for x, as sg.grad gives it: float32
    assert h[0][1].dtype == np.float64 and h[1][0].dtype == np.float64 and h[1][1].dtype == np.float64
    reference = sg.hessian(two_args, wrt=(0, 1))(X.astype(np.float32).astype(np.float64), y64)
    for a, b in zip(_leaves(h), _leaves(reference)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def scaled(x, y, scale=2.0):
    return np.sin(x) * y * scale


@pytest.mark.parametrize("api", [sg.jacfwd, sg.jacrev])
def test_jacobian_takes_keyword_arguments(api):
    x, y = np.array([0.1, 0.2]), np.array([1.0, 3.0])
    expected = np.diag(np.cos(x) * y * 3.0)
    np.testing.assert_allclose(api(scaled)(x, y=y, scale=3.0), expected, rtol=1e-12)
    np.testing.assert_allclose(api(scaled)(x, y, scale=3.0), expected, rtol=1e-12)
    np.testing.assert_allclose(api(scaled, wrt=1)(x, y=y, scale=3.0), np.diag(np.sin(x) * 3.0),
                               rtol=1e-12)
    np.testing.assert_allclose(api(scaled)(x, y), np.diag(np.cos(x) * y * 2.0), rtol=1e-12)


def keyword_only(x, *, s):
    return x * s


@pytest.mark.parametrize("api", [sg.jacfwd, sg.jacrev, sg.hessian])
def test_keyword_only_argument_is_refused_with_the_way_out(api):
    with pytest.raises(TypeError, match="keyword-only argument 's'.*functools.partial"):
        api(keyword_only)(X, s=2.0)
