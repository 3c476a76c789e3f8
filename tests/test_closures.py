"""Functions as values inside a differentiated function: callables passed as arguments
(the rk4 idiom), lambdas and nested defs, hooks given as lambdas, ``*args`` helpers.

Every gradient is checked against central finite differences in float64, and
against the hand-derived answer where there is one.
"""

import functools
import inspect

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import api
from srcgrad.testing import check_grads

Y0 = np.array([0.5, 1.0, -0.3])
DT = 0.1
STEPS = 4


def _line_of(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, line in enumerate(lines) if text in line)


def rk4(deriv, y, k, dt, n):
    for _ in range(n):
        k1 = deriv(y, k)
        k2 = deriv(y + 0.5 * dt * k1, k)
        k3 = deriv(y + 0.5 * dt * k2, k)
        k4 = deriv(y + dt * k3, k)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y


def linear_decay(y, k):
    return -k * y


def logistic(y, k):
    return k * y * (1.0 - y) + np.sin(y)


class Oscillator:
    def __init__(self, damping):
        self.damping = damping

    def deriv(self, y, k):
        return -self.damping * k * np.tanh(y)


def scaled(scale, y, k):
    return -scale * k * y * y


OSCILLATOR = Oscillator(0.4)
SCALED = functools.partial(scaled, 2.0)


def _rk4_factor(z):
    """One rk4 step of y' = -k y multiplies y by this (z = k dt)."""
    return 1 - z + z ** 2 / 2 - z ** 3 / 6 + z ** 4 / 24


def integrate_linear(y0, k):
    return np.sum(rk4(linear_decay, y0, k, DT, STEPS))


def integrate_logistic(y0, k):
    return np.sum(rk4(logistic, y0, k, DT, STEPS))


def integrate_method(y0, k):
    return np.sum(rk4(OSCILLATOR.deriv, y0, k, DT, STEPS))


def integrate_partial(y0, k):
    return np.sum(rk4(SCALED, y0, k, DT, STEPS))


def integrate_primitive(y0, k):
    return np.sum(rk4(np.arctan2, y0, k, DT, STEPS))


def test_a_helper_given_a_module_function_is_inlined_with_it_and_matches_the_hand_answer():
    k = 1.3
    dy0, dk = sg.grad(integrate_linear, wrt=(0, 1))(Y0, k)
    z = k * DT
    r = _rk4_factor(z)
    dr = -1 + z - z ** 2 / 2 + z ** 3 / 6
    np.testing.assert_allclose(dy0, np.full(3, r ** STEPS), rtol=1e-12)
    np.testing.assert_allclose(dk, STEPS * r ** (STEPS - 1) * dr * DT * np.sum(Y0), rtol=1e-12)


@pytest.mark.parametrize("f", [integrate_linear, integrate_logistic, integrate_method,
                               integrate_partial, integrate_primitive])
def test_rk4_over_a_passed_function_matches_finite_differences_for_state_and_parameter(f):
    check_grads(f, (Y0, 1.3), wrt=(0, 1))


def simulate(deriv, y0, k):
    return np.sum(rk4(deriv, y0, k, DT, STEPS))


@pytest.mark.parametrize("deriv", [linear_decay, logistic, OSCILLATOR.deriv, SCALED, np.arctan2],
                         ids=["function", "other-function", "method", "partial", "primitive"])
def test_a_callable_argument_of_the_differentiated_function_is_compiled_for_it(deriv):
    check_grads(lambda y0, k: simulate(deriv, y0, k), (Y0, 1.3), wrt=(0, 1))
    fd = sg.grad(lambda y0, k: simulate(deriv, y0, k), wrt=(0, 1))(Y0, 1.3)
    got = sg.grad(simulate, wrt=(1, 2))(deriv, Y0, 1.3)
    for a, b in zip(got, fd):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_two_callables_give_two_right_gradients_and_each_is_compiled_once(monkeypatch):
    compiled = []
    real = api.compile_gradient

    def counting(*args, **kwargs):
        compiled.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "compile_gradient", counting)
    g = sg.grad(simulate, wrt=1)
    first = g(linear_decay, Y0, 1.3)
    second = g(logistic, Y0, 1.3)
    assert not np.allclose(first, second)
    np.testing.assert_allclose(first, sg.grad(integrate_linear)(Y0, 1.3), rtol=1e-12)
    np.testing.assert_allclose(second, sg.grad(integrate_logistic)(Y0, 1.3), rtol=1e-12)
    n = len(compiled)
    for _ in range(3):   # the fast path: the same objects reuse their compiles
        np.testing.assert_allclose(g(linear_decay, Y0, 1.3), first, rtol=1e-12)
        np.testing.assert_allclose(g(logistic, Y0, 1.3), second, rtol=1e-12)
        # a bound method made anew by each attribute read is the same callable
        g(OSCILLATOR.deriv, Y0, 1.3)
    assert len(compiled) == n + 1


def rebound_deriv(y, k):
    return -k * y


def integrate_rebound(y0, k):
    return np.sum(rk4(rebound_deriv, y0, k, DT, 2))


def test_rebinding_the_global_a_helper_was_given_compiles_anew(monkeypatch):
    g = sg.grad(integrate_rebound)
    before = g(Y0, 1.3)
    monkeypatch.setitem(globals(), "rebound_deriv", logistic)
    after = g(Y0, 1.3)
    assert not np.allclose(before, after)
    check_grads(integrate_rebound, (Y0, 1.3))


def test_a_callable_passed_through_two_helpers_is_still_known():
    def step_twice(deriv, y, k):
        return rk4(deriv, rk4(deriv, y, k, DT, 1), k, DT, 1)

    def through(y0, k):
        return np.sum(step_twice(logistic, y0, k))

    check_grads(through, (Y0, 0.7), wrt=(0, 1))
