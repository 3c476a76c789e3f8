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


# ----- lambdas and nested defs inside the function -----

X = np.array([0.3, -0.4, 1.1])
W = 1.7


def lambda_bound_to_a_name(x, w):
    act = lambda v: np.tanh(v)  # noqa: E731
    return np.sum(act(x * w))


def nested_def_reads_the_value_at_the_call(x, w):
    def inner(v):
        return v * w
    w = w * 2.0          # a closure sees w at the call: 2w
    return np.sum(inner(x) ** 2)


def nested_defs_calling_each_other(x, w):
    def scale(v):
        return v * w

    def outer(v):
        return np.sin(scale(v))
    return np.sum(outer(x)) + np.sum((lambda u: u * u)(x))


def lambda_passed_to_a_helper(y0, k):
    return np.sum(rk4(lambda v, kk: -kk * v * v + k, y0, k, DT, 3))


def nested_def_passed_to_a_helper(y0, k):
    def deriv(v, kk):
        return -kk * np.sin(v) * k
    return np.sum(rk4(deriv, y0, k, DT, 3))


def lambda_mapped(x, w):
    return sum(map(lambda v: v * w, x))


def lambda_in_a_generator(x, w):
    act = lambda v: np.sin(v) * w  # noqa: E731
    return sum(act(v) for v in x)


def lambda_with_a_constant_default(x, w):
    power = lambda v, p=3: v ** p  # noqa: E731
    return np.sum(power(x) * w) + np.sum(power(x, p=2))


@pytest.mark.parametrize("f", [lambda_bound_to_a_name, nested_def_reads_the_value_at_the_call,
                               nested_defs_calling_each_other, lambda_passed_to_a_helper,
                               nested_def_passed_to_a_helper, lambda_mapped,
                               lambda_in_a_generator, lambda_with_a_constant_default])
def test_local_functions_match_finite_differences(f):
    check_grads(f, (X, W), wrt=(0, 1))


def test_a_nested_def_sees_the_variable_as_it_is_at_the_call():
    dx, dw = sg.grad(nested_def_reads_the_value_at_the_call, wrt=(0, 1))(X, W)
    np.testing.assert_allclose(dx, 2 * X * (2 * W) ** 2, rtol=1e-12)
    np.testing.assert_allclose(dw, 8 * W * np.sum(X ** 2), rtol=1e-12)


def test_a_lambda_given_to_rk4_matches_the_same_function_at_module_level():
    def with_module_function(y0, k):
        return np.sum(rk4(linear_decay, y0, k, DT, STEPS))

    def with_lambda(y0, k):
        return np.sum(rk4(lambda v, kk: -kk * v, y0, k, DT, STEPS))

    for a, b in zip(sg.grad(with_lambda, wrt=(0, 1))(Y0, 1.3),
                    sg.grad(with_module_function, wrt=(0, 1))(Y0, 1.3)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def hooked_by_a_lambda(x, w):
    y = x * w
    sg.register_hook(y, lambda g: g * 10)
    return np.sum(y * y)


def test_a_lambda_hook_replaces_the_gradient_like_a_module_function():
    dx, dw = sg.grad(hooked_by_a_lambda, wrt=(0, 1))(X, W)
    np.testing.assert_allclose(dx, 10 * 2 * X * W * W, rtol=1e-12)
    np.testing.assert_allclose(dw, 10 * 2 * W * np.sum(X * X), rtol=1e-12)


def returns_a_lambda(x):
    return lambda v: v * x


def stores_a_lambda(x):
    fs = [lambda v: v * 2]
    # fs[0](x) alone is a call of the item (function_tables._function_tables); len(fs), a
    # loop over fs or a read of an item are of a constant table (round 4); another name
    # bound to the list reads it as a value
    other = fs
    return np.sum(other[0](x))


def a_table_of_lambdas_read_by_len(x):
    fs = [lambda v: v * 2, lambda v: np.sin(v)]
    return np.sum(fs[0](x) * fs[-1](x)) * len(fs)


def test_a_table_of_lambdas_read_by_len_is_a_constant():
    assert check_grads(a_table_of_lambdas_read_by_len, (np.array([0.3, -0.7, 1.1]),))


def rebinds_a_lambda(x):
    act = lambda v: v * 2  # noqa: E731
    act = lambda v: v * 3  # noqa: E731
    return np.sum(act(x))


def recursive_nested_def(x):
    def again(v):
        return again(v)
    return np.sum(again(x))


def nested_def_in_a_branch(x):
    if x[0] > 0:
        def g(v):
            return v
    return np.sum(x)


def assigns_a_local_function(x):
    act = lambda v: v * v  # noqa: E731
    other = act   # (round fourteen: an alias bound once and only called is the lambda's call)
    return np.sum(other(x))


def stores_a_local_function(x):
    act = lambda v: v  # noqa: E731
    other = [act]
    return np.sum(other[0](x))


def test_an_alias_of_a_local_function_is_its_call():
    np.testing.assert_allclose(sg.grad(assigns_a_local_function)(X), 2 * X, rtol=1e-12)


def hook_reads_a_local(x):
    y = x * 2
    sg.register_hook(y, lambda g: g * x)
    return np.sum(y)


@pytest.mark.parametrize("f, words, line", [
    (returns_a_lambda, "a lambda that escapes", "return lambda v"),
    (stores_a_lambda, "a lambda that escapes", "fs = [lambda"),
    (rebinds_a_lambda, "is rebound", "act = lambda v: v * 2"),
    (recursive_nested_def, "calls itself", "return again(v)"),
    (nested_def_in_a_branch, "nested def inside a branch", "def g(v)"),
    (hook_reads_a_local, "hook lambda that reads 'x'", "lambda g: g * x"),
    (stores_a_local_function, "'act' escapes", "other = [act]"),
])
def test_local_functions_that_escape_are_refused_at_their_line(f, words, line):
    with pytest.raises(sg.UnsupportedError) as info:
        sg.grad(f)(X)
    assert words in info.value.message
    assert info.value.filename == __file__
    assert info.value.lineno == _line_of(f, line)


# ----- *args and **kwargs in helpers -----

def total(*vs):
    return sum(vs)


def weighted(w, *vs, scale=1.0, **extra):
    out = 0.0
    for v in vs:
        out = out + w * v * scale
    return out + extra["bias"] * len(vs)


def calls_star_args_helpers(a, b, c):
    return (np.sum(total(a, b, c) ** 2) + np.sum(weighted(2.0, a, b * c, scale=0.5, bias=c))
            + total())


def star_args_local_functions(a, b):
    add = lambda *vs: sum(vs)  # noqa: E731

    def prod(*vs, **kw):
        return vs[0] * vs[1] * kw["s"]
    return np.sum(add(a, b, a * b)) + np.sum(prod(a, b, s=b))


def test_a_star_args_helper_gets_the_tuple_of_its_arguments():
    a, b, c = X[:2], np.array([1.0, 2.0]), np.array([0.5, 0.7])
    check_grads(calls_star_args_helpers, (a, b, c), wrt=(0, 1, 2))
    da, db, dc = sg.grad(calls_star_args_helpers, wrt=(0, 1, 2))(a, b, c)
    s = a + b + c
    np.testing.assert_allclose(da, 2 * s + 1.0, rtol=1e-12)
    np.testing.assert_allclose(db, 2 * s + c, rtol=1e-12)
    np.testing.assert_allclose(dc, 2 * s + b + 2.0, rtol=1e-12)


def test_star_args_local_functions_match_the_hand_answer():
    a, b = X[:2], np.array([1.0, 2.0])
    check_grads(star_args_local_functions, (a, b), wrt=(0, 1))
    da, db = sg.grad(star_args_local_functions, wrt=(0, 1))(a, b)
    np.testing.assert_allclose(da, 1 + b + b * b, rtol=1e-12)
    np.testing.assert_allclose(db, 1 + a + 2 * a * b, rtol=1e-12)


def star_args_entry(*xs):
    return np.sum(xs[0])


def test_star_args_of_the_function_differentiated_are_its_arguments_of_each_call():
    np.testing.assert_allclose(sg.grad(star_args_entry)(X), np.ones_like(X))
    with pytest.raises(sg.UnsupportedError) as info:   # without the call: no parameters
        sg.source(star_args_entry)
    assert "*args/**kwargs parameters of the function differentiated" in info.value.message
    assert info.value.lineno == _line_of(star_args_entry, "def star_args_entry")


def sine_through_a_lambda(a):
    act = lambda v: np.sin(v) * a  # noqa: E731
    return act(a) * a


def test_a_lambda_is_differentiated_twice_like_the_code_it_stands_for():
    a = 0.7   # a^2 sin a: second derivative 2 sin a + 4 a cos a - a^2 sin a
    expected = 2 * np.sin(a) + 4 * a * np.cos(a) - a * a * np.sin(a)
    np.testing.assert_allclose(sg.grad(sg.grad(sine_through_a_lambda))(a), expected, rtol=1e-12)
