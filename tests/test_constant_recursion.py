"""Recursive helpers called with integer constants (transform/constant_arguments.py):
unrolled while compiling. Each derivative is checked against central differences in
float64; a recursion the constants do not end is refused at its line."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.array([0.3, -0.5, 1.2, 0.7])
classes = 100.0   # a global named like a parameter below (the generated code must not read it)


def geometric(a, n):
    if n == 0:
        return a
    return geometric(a * 1.1, n - 1) + a


def halves(x, depth):
    if depth <= 0 or x.size == 1:
        return np.sum(np.sin(x))
    half = x.size // 2
    return halves(x[:half], depth - 1) * halves(x[half:], depth - 1)


def factorial(n):
    return 1 if n == 0 else n * factorial(n - 1)


def stops_on_values(x, k):
    if k == 0 or np.sum(x ** 2) > 50.0:   # the integers decide part of it, the values the rest
        return x
    return stops_on_values(x * 1.5, k - 1) + x


def sum_geometric(x):
    return np.sum(geometric(x, 3))


def product_of_halves(x):
    return halves(x, 3)


def scaled_by_factorial(x):
    return np.sum(x ** 2) * factorial(4)


def partly_decided(x):
    return np.sum(stops_on_values(x, 5))


CASES = [(sum_geometric, X), (product_of_halves, X), (scaled_by_factorial, X),
         (partly_decided, X), (partly_decided, 3 * X)]


@pytest.mark.parametrize("f,x", CASES, ids=lambda v: getattr(v, "__name__", "x"))
def test_recursion_with_integer_constants_is_unrolled(f, x):
    want = numerical_grad(f, (x,))
    np.testing.assert_allclose(sg.grad(f)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jvp(f, (x,), (np.ones(4),))[1], want.sum(), rtol=1e-6, atol=1e-8)
    hess = sg.hessian(f)(x)
    rows = [(sg.grad(f)(x + 1e-6 * e) - sg.grad(f)(x - 1e-6 * e)) / 2e-6 for e in np.eye(4)]
    np.testing.assert_allclose(hess, np.stack(rows, axis=-1), rtol=1e-5, atol=1e-5)


def test_the_hand_answer_of_the_geometric_sum():
    # a + 1.1 a + 1.21 a + 1.331 a: the gradient of its sum is 4.641 per entry
    np.testing.assert_allclose(sg.grad(sum_geometric)(X), np.full(4, 4.641), rtol=1e-12)


def never_ends(x, k):
    return never_ends(x, k) if k > 0 else x


def calls_never_ends(x):
    return np.sum(never_ends(x, 2))


def depth_when_it_runs(x, n):
    return np.sum(geometric(x, n))


def test_recursion_the_constants_do_not_end_is_refused():
    with pytest.raises(sg.UnsupportedError, match="more than 64 levels") as info:
        sg.grad(calls_never_ends)(X)
    assert info.value.filename == __file__
    with pytest.raises(sg.UnsupportedError, match="calls itself") as info:
        sg.grad(depth_when_it_runs)(X, 3)
    assert info.value.filename == __file__


def weighted(xs, classes):
    return np.sum(xs[0] * classes)


def passes_a_list(x):
    return weighted([x, x], 3.0)


def test_a_parameter_named_like_an_inliner_key_is_bound():
    # the inliner's key for the classes of structured arguments was "classes": a helper's
    # parameter of that name went unbound, and the global classes was read instead
    np.testing.assert_allclose(sg.grad(passes_a_list)(X), np.full(4, 3.0), rtol=1e-12)


def countdown(x, n=3):
    if n == 0:
        return x
    return np.sin(countdown(x, n=n - 1)) * x


def uses_the_default_depth(x):
    return np.sum(countdown(x))


def test_a_default_and_a_keyword_integer_unroll_too():
    want = numerical_grad(uses_the_default_depth, (X,))
    np.testing.assert_allclose(sg.grad(uses_the_default_depth)(X), want, rtol=1e-6, atol=1e-8)
