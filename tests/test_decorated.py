"""A decorated function is differentiated as it runs: a decorator's wrapper is read
itself, not the function it wraps (functools.wraps sets __wrapped__, and inspect would
read the wrapped source: sg.grad of `2 * f(x)` gave f's gradient). Functions that
sg.jacfwd/jacrev/hessian return are refused, naming the user's function."""

import functools

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad


def doubled(f):
    @functools.wraps(f)
    def wrapper(x):
        return 2.0 * f(x)
    return wrapper


def forwarding(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs) * 3.0
    return wrapper


def cube_sum(x):
    return np.sum(x ** 3)


def loop_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sum(x ** 2) * x[i]
    return s


X = np.array([0.5, -1.25, 2.0])


def test_the_gradient_of_a_wrapper_is_the_wrappers_not_the_wrapped_functions():
    f = doubled(cube_sum)
    np.testing.assert_allclose(sg.grad(f)(X), 6.0 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(sg.grad(f)(X), numerical_grad(f, (X,)), rtol=1e-7)


def test_forward_mode_and_the_hessian_read_the_wrapper_too():
    f = doubled(cube_sum)
    v = np.array([1.0, 0.5, -2.0])
    out, t = sg.jvp(f, (X,), (v,))
    np.testing.assert_allclose(out, 2.0 * np.sum(X ** 3))
    np.testing.assert_allclose(t, np.sum(6.0 * X ** 2 * v), rtol=1e-12)
    np.testing.assert_allclose(sg.jacfwd(f)(X), 6.0 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(sg.hessian(f)(X), np.diag(12.0 * X), rtol=1e-12)


def scaled_sum(x, y, scale=2.0):
    return np.sum(np.sin(x) * y) * scale


def keyword_scaled(x, *, scale):
    return np.sum(x ** 2) * scale


def timed(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        out = f(*args, **kwargs)
        wrapper.calls = getattr(wrapper, "calls", 0) + 1
        return out
    return wrapper


def shifting(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(args[0] + 1.0, *args[1:], **kwargs)
    return wrapper


Y = np.array([1.5, -0.5, 0.25])


def test_a_wrapper_taking_star_args_is_read_with_the_arguments_of_the_call():
    """``wrapper(*args, **kwargs)``: its code is differentiated (3 f), its *args bound to
    the call's arguments, in every API, and a default of the wrapped function kept."""
    f = forwarding(cube_sum)
    np.testing.assert_allclose(sg.grad(f)(X), 9.0 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(sg.hessian(f)(X), np.diag(18.0 * X), rtol=1e-12)
    np.testing.assert_allclose(sg.jacfwd(f)(X), 9.0 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(sg.jacrev(f)(X), 9.0 * X ** 2, rtol=1e-12)
    v = np.array([1.0, 0.5, -2.0])
    np.testing.assert_allclose(sg.jvp(f, (X,), (v,))[1], np.sum(9.0 * X ** 2 * v), rtol=1e-12)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(X, grad_outputs=v), 18.0 * X * v, rtol=1e-12)
    g = forwarding(scaled_sum)
    dx, dy = sg.grad(g, wrt=(0, 1))(X, Y)
    np.testing.assert_allclose(dx, 6.0 * np.cos(X) * Y, rtol=1e-12)
    np.testing.assert_allclose(dy, 6.0 * np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(sg.grad(g)(X, Y, 0.5), 1.5 * np.cos(X) * Y, rtol=1e-12)
    np.testing.assert_allclose(sg.grad(g)(X, Y, scale=0.5), 1.5 * np.cos(X) * Y, rtol=1e-12)
    k = forwarding(keyword_scaled)
    np.testing.assert_allclose(sg.grad(k)(X, scale=2.0), 12.0 * X, rtol=1e-12)


def calls_a_decorated_helper(x, y):
    return forwarded_helper(x, y) + np.sum(x * y)


@forwarding
def forwarded_helper(x, y, scale=2.0):
    return np.sum(np.sin(x) * y) * scale


def test_a_decorated_helper_is_inlined_with_its_wrapper():
    want = 6.0 * np.cos(X) * Y + Y
    np.testing.assert_allclose(sg.grad(calls_a_decorated_helper)(X, Y), want, rtol=1e-12)
    np.testing.assert_allclose(sg.grad(calls_a_decorated_helper)(X, Y),
                               numerical_grad(calls_a_decorated_helper, (X, Y)), rtol=1e-7)


def test_what_a_wrapper_does_beyond_passing_its_arguments_on_is_refused_at_its_line():
    with pytest.raises(sg.SrcgradError, match="assignment to an attribute") as info:
        sg.grad(timed(cube_sum))(X)
    assert "test_decorated.py" in str(info.value)
    with pytest.raises(sg.SrcgradError, match="unpacking") as info:
        sg.grad(shifting(cube_sum))(X)
    assert "test_decorated.py" in str(info.value)


def test_a_function_decorated_with_no_grad_gets_no_gradient_as_its_body_under_no_grad():
    f = sg.no_grad()(cube_sum)
    with pytest.raises(RuntimeError, match="not to have been used"):
        sg.grad(f)(X)
    np.testing.assert_allclose(sg.grad(f, materialize_grads=True)(X), np.zeros(3))
    np.testing.assert_allclose(sg.grad(sg.enable_grad()(cube_sum))(X), 3.0 * X ** 2, rtol=1e-12)


def test_jacobians_of_a_gradient_are_the_hessian():
    want = sg.hessian(loop_sum)(X)
    np.testing.assert_allclose(sg.jacfwd(sg.grad(loop_sum))(X), want, rtol=1e-12)
    np.testing.assert_allclose(sg.jacrev(sg.grad(loop_sum))(X), want, rtol=1e-12)
    eps = 1e-6
    fd = np.stack([(sg.grad(loop_sum)(X + eps * e) - sg.grad(loop_sum)(X - eps * e)) / (2 * eps)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(want, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("make", [lambda: sg.jacfwd(sg.hessian(loop_sum)),
                                  lambda: sg.grad(sg.jacrev(cube_sum)),
                                  lambda: sg.jacfwd(sg.jacfwd(sg.jacrev(cube_sum)))])
def test_the_functions_jacobians_and_hessians_return_are_refused_not_read_through(make):
    """Read as source, or a third derivative of them (a Jacobian of a Jacobian is the
    second derivative: tests/test_jacobian_of_jacobian.py)."""
    with pytest.raises(sg.UnsupportedError) as info:
        make()(X)
    message = str(info.value)
    assert "test_decorated.py" in message and "not source srcgrad can differentiate again" in message


@forwarding
def dict_loss(p, x):
    return np.sum(np.sin(p["w"] * x))


def test_the_composed_gradient_of_a_decorated_function_takes_a_dict():
    """The gradient's code (as_function) holds for arrays; called with a structure it hands
    the call to the gradient (was refused: "'p' is a dict"). (sg.jacfwd(sg.grad(f)) at a
    dict is the Hessian.)"""
    p = {"w": np.array([0.5, -1.0])}
    x = np.array([1.0, 2.0])
    got = sg.grad(dict_loss).as_function()(p, x)
    np.testing.assert_allclose(got["w"], 3 * np.cos(p["w"] * x) * x, rtol=1e-12)   # the wrapper: 3 f


def test_jacfwd_of_the_gradient_of_a_decorated_function_at_a_dict_is_its_hessian():
    p = {"w": np.array([0.5, -1.0])}
    x = np.array([1.0, 2.0])
    got = sg.jacfwd(sg.grad(dict_loss))(p, x)
    np.testing.assert_allclose(got["w"]["w"], np.diag(-3.0 * np.sin(p["w"] * x) * x * x), rtol=1e-12)   # the wrapper: 3 f
