"""A gradient bound to a local name and called inside a differentiated function
(JAX's ``du = jax.grad(u)``; ``du(x)``), a gradient of a gradient written inline
(``sg.grad(sg.grad(u))(x)``, a PINN's second derivative), and ``sg.grad(g)(...)``
inside a nested def (it named a class the generated code did not bind)."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

W = np.array([0.7, -0.3, 1.2])
XS = [0.1, 0.5, 0.9]


def u_global(w, x):
    return np.tanh(w[0] * x + w[1]) * w[2]


def alias_of_a_global(w, xs):
    du = sg.grad(u_global, wrt=1)
    return sum((du(w, x) - np.cos(x)) ** 2 for x in xs)


def alias_of_a_local(w, xs):
    def u(x):
        return np.tanh(w[0] * x + w[1]) * w[2]
    du = sg.grad(u)
    return sum((du(x) - np.cos(x)) ** 2 for x in xs)


def alias_of_a_lambda_in_a_loop(w, xs):
    u = lambda x: np.sin(w[0] * x) * w[1] + w[2] * x ** 2
    du = sg.grad(u)
    total = 0.0
    for x in xs:
        total = total + du(x) ** 2
    return total


def second_derivative_inline(w, xs):
    def u(x):
        return np.tanh(w[0] * x + w[1]) * w[2]
    total = 0.0
    for x in xs:
        total = total + (sg.grad(sg.grad(u))(x) + u(x)) ** 2
    return total


def second_derivative_alias(w, xs):
    def u(x):
        return np.tanh(w[0] * x + w[1]) * w[2]
    d2u = sg.grad(sg.grad(u))
    return sum((d2u(x) + u(x)) ** 2 for x in xs)


def second_derivative_of_a_global(w, xs):
    return sum(sg.grad(sg.grad(u_global, 1), 1)(w, x) ** 2 for x in xs)


def value_and_grad_alias(w, xs):
    def u(x):
        return np.tanh(w[0] * x + w[1]) * w[2]
    vg = sg.value_and_grad(u)
    total = 0.0
    for x in xs:
        value, slope = vg(x)
        total = total + value * slope
    return total


def gradient_in_a_nested_def(w, xs):
    def du(x):
        return sg.grad(u_global, wrt=1)(w, x)
    return sum((du(x) - np.cos(x)) ** 2 for x in xs)


CASES = [alias_of_a_global, alias_of_a_local, alias_of_a_lambda_in_a_loop,
         second_derivative_inline, second_derivative_alias, second_derivative_of_a_global,
         value_and_grad_alias, gradient_in_a_nested_def]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_matches_differences(f):
    got = sg.grad(f)(W, XS)
    np.testing.assert_allclose(got, numerical_grad(f, (W, XS)), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [alias_of_a_local, second_derivative_alias, gradient_in_a_nested_def],
                         ids=lambda f: f.__name__)
def test_jit_agrees(f):
    pytest.importorskip("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(f, jit=True)(W, XS)
    np.testing.assert_allclose(got, sg.grad(f)(W, XS), rtol=1e-10, atol=1e-12)


def test_the_generated_code_calls_the_gradient_where_the_alias_was():
    source = sg.source(alias_of_a_global)
    assert "du = " not in source
    assert "Grad_u_global" in source


def escaping_alias(w, xs):
    du = sg.grad(u_global, wrt=1)
    fs = [du]
    return fs[0](w, xs[0])


def rebound_alias(w, xs):
    du = sg.grad(u_global, wrt=1)
    du = sg.grad(u_global, wrt=0)
    return np.sum(du(w, xs[0]))


def alias_of_a_local_value(w, xs):
    k = 1
    du = sg.grad(u_global, wrt=k)
    return du(w, xs[0])


@pytest.mark.parametrize("f", [escaping_alias, rebound_alias, alias_of_a_local_value],
                         ids=lambda f: f.__name__)
def test_other_uses_stay_refused_at_the_line(f):
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(f)(W, XS)
    assert "test_gradient_aliases.py" in str(info.value)


def test_second_derivative_value_is_the_hand_derived_one():
    def d2(w, x):
        def u(z):
            return np.tanh(w[0] * z + w[1]) * w[2]
        return sg.grad(sg.grad(u))(x)
    x = 0.4
    t = np.tanh(W[0] * x + W[1])
    want = W[2] * W[0] ** 2 * (-2 * t * (1 - t ** 2))
    value, _ = sg.value_and_grad(d2)(W, x)
    assert value == pytest.approx(want, rel=1e-12)
