"""``sg.grad(lambda z: ...)(x)`` and ``sg.grad(energy)(x)`` of a nested def inside a
differentiated function (JAX's ``jax.grad(lambda p: loss(p, batch))(params)`` inside a
meta-learning loss, forces from a local energy): the local function's free locals become
trailing parameters of the gradient, so the outer derivative reaches them too (they were
refused: "sg.grad of a lambda or nested def ... is not supported")."""

import functools

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from tests.adversarial_checks import assert_refused_in

X = np.array([1.0, -2.0, 0.5])
K = np.array([0.5, 1.5, -0.7])


def squared_gradient(x):
    g = sg.grad(lambda z: np.sum(z ** 3))(x)
    return np.sum(g ** 2)


def gradient_reading_a_local(x, k):
    g = sg.grad(lambda z: np.sum(k * z ** 3))(x)
    return np.sum(g * x)


def forces_of_a_local_energy(x, k):
    def energy(z):
        return np.sum(k * np.sin(z)) + np.sum(z ** 2) * k[0]

    force = -sg.grad(energy)(x)
    return np.sum(force ** 2)


def inner_step(p, k):
    """One inner gradient step on a loss that reads the outer function's locals."""
    target = p * k
    g = sg.grad(lambda q: np.sum((q - target) ** 2 * q))(p)
    return np.sum((p - 0.1 * g) ** 2)


def second_parameter(x, k):
    return np.sum(sg.grad(lambda z, s: np.sum(z ** 2 * s), 1)(x, k[0]) * x)


def local_read_after_rebinding(x, k):
    scale = k * 2
    g = sg.grad(lambda z: np.sum(scale * z ** 2))(x)
    scale = k * 100   # (the gradient saw the value at its call, as a closure would)
    return np.sum(g * x) + np.sum(scale) * 0.0


CASES = [squared_gradient, gradient_reading_a_local, forces_of_a_local_energy, inner_step,
         second_parameter, local_read_after_rebinding]


def _args(f):
    return (X.copy(),) if f is squared_gradient else (X.copy(), K.copy())


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("wrt", [0, 1])
def test_gradient_through_a_local_functions_gradient(f, wrt):
    args = _args(f)
    if wrt >= len(args):
        pytest.skip("one argument")
    want = numerical_grad(f, args, wrt=wrt)
    np.testing.assert_allclose(sg.grad(f, wrt=wrt)(*_args(f)), want, rtol=1e-6, atol=1e-8)
    tangent = np.array([0.3, -0.4, 1.1])
    tangents = tuple(tangent if k == wrt else np.zeros_like(a) for k, a in enumerate(args))
    value, out = sg.jvp(f, _args(f), tangents)
    np.testing.assert_allclose(value, f(*_args(f)), rtol=1e-13)
    np.testing.assert_allclose(out, want @ tangent, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [squared_gradient, forces_of_a_local_energy, inner_step])
def test_hessian(f):
    args = _args(f)
    h = sg.hessian(f)(*_args(f))
    eps = 1e-5
    columns = [(sg.grad(f)(X + eps * e, *args[1:]) - sg.grad(f)(X - eps * e, *args[1:])) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(h, np.stack(columns, axis=1), rtol=1e-6, atol=1e-8)


def test_other_forms_are_refused_at_the_line():
    def with_default(x):
        return np.sum(sg.grad(lambda z, s=2.0: np.sum(s * z ** 2))(x))

    def called_with_keywords(x):
        return np.sum(sg.grad(lambda z: np.sum(z ** 2))(z=x))

    for f in (with_default, called_with_keywords):
        assert_refused_in(__file__, lambda: sg.grad(f)(X.copy()), "local function")


@functools.lru_cache(maxsize=None)
def cubed(x):
    return x ** 3 + np.sin(x)


@functools.cache
def shifted(x):
    return np.exp(x) * x


def calls_cached_helpers(x):
    return cubed(x) * 2 + shifted(x)


def test_functions_under_functools_cache_are_differentiated_and_inlined():
    # (sg.grad(cubed) said "a __main__ function ... srcgrad does not differentiate library
    # code", and a helper under the cache was refused for want of a rule)
    x = 0.7
    np.testing.assert_allclose(sg.grad(cubed)(x), 3 * x ** 2 + np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(sg.jvp(cubed, (x,), (1.0,))[1], 3 * x ** 2 + np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(sg.hessian(cubed)(x), 6 * x - np.sin(x), rtol=1e-12)
    want = 2 * (3 * x ** 2 + np.cos(x)) + np.exp(x) * (x + 1)
    np.testing.assert_allclose(sg.grad(calls_cached_helpers)(x), want, rtol=1e-12)


def inner_loss(p, x):
    return np.sum((p * x - 1.0) ** 2)


def maml_with_value_and_grad(p):
    """MAML's inner step as JAX code writes it: the loss and its gradient at once."""
    loss, g = sg.value_and_grad(inner_loss)(p, np.array([0.5, 2.0, -1.0]))
    return inner_loss(p - 0.1 * g, np.array([1.0, -1.0, 0.3])) + loss


def value_and_grad_of_a_lambda(p, k):
    loss, g = sg.value_and_grad(lambda q: np.sum(k * q ** 3))(p)
    return loss * np.sum(g)


def loss_with_aux(p):
    return np.sum(p ** 2), p[0]


def value_and_grad_with_aux(p):
    (v, a), g = sg.value_and_grad(loss_with_aux, has_aux=True)(p)
    return v * a + np.sum(g * p)


@pytest.mark.parametrize("f, wrt", [(maml_with_value_and_grad, 0), (value_and_grad_of_a_lambda, 0),
                                    (value_and_grad_of_a_lambda, 1), (value_and_grad_with_aux, 0)])
def test_value_and_grad_inside(f, wrt):
    # (refused before: "calling the result of a call"; a first version put the two calls in a
    # tuple display, whose gradient was silently dropped)
    args = (X.copy(),) if f in (maml_with_value_and_grad, value_and_grad_with_aux) else _args(f)
    want = numerical_grad(f, args, wrt=wrt)
    np.testing.assert_allclose(sg.grad(f, wrt=wrt)(*args), want, rtol=1e-6, atol=1e-8)
    if f is not value_and_grad_with_aux:   # (a has_aux gradient has no tangent rule inside)
        tangent = np.array([0.3, -0.4, 1.1])
        tangents = tuple(tangent if k == wrt else np.zeros_like(a) for k, a in enumerate(args))
        np.testing.assert_allclose(sg.jvp(f, args, tangents)[1], want @ tangent, rtol=1e-6, atol=1e-8)
