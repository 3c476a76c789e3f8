"""Derivatives of order three and more through code whose gradient records a tape (issue 14):
the second derivative's own tape code (``rt.tape_pop``, ``rt.tape_unpop``, the list tapes)
is differentiated again by the rules of rules/tape_rules.py and rules/closure_rules.py.

Each is checked against the hand-derived derivative where there is one and against central
finite differences (float64) of the derivative one order lower; what stays refused names
the user's file, line and construct.
"""

import inspect

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import SrcgradError

H = 1e-5


def fd(g, x):
    return (g(x + H) - g(x - H)) / (2 * H)


def fourth_powers(x):
    s = 0.0
    for _ in range(3):
        s = s + x ** 4 / 3.0
    return s


def horner(x):
    c = [1.0, -2.0, 0.5, 3.0, 0.25]
    y = 0.0
    for k in range(5):
        y = y * x + c[k]
    return y


def grows_while_small(x):
    y = x
    n = 0
    while y < 10.0 and n < 4:   # how often it runs depends on x
        y = y * x + 1.0
        n += 1
    return y


def branch_on_data(x):
    y = 0.0
    for _ in range(3):
        if x > 0.5:
            y = y + np.sin(x) * x
        else:
            y = y + x ** 3
    return y


def indexed_writes(x):
    z = np.zeros(3)
    for i in range(3):
        z[i] = x ** (i + 2)
    return np.sum(z)


def entries_to_the_fourth(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(a * x[i]) * x[i]
    return s


def mixed(a, b):
    s = 0.0
    for _ in range(2):
        s = s + a * a * b ** 3
    return s


def solves(x):
    s = 0.0
    for _ in range(2):
        s = s + np.sum(np.linalg.solve(np.eye(2) * (2.0 + x), np.ones(2) * s + 1.0))
    return s


def third(f):
    return sg.grad(sg.grad(sg.grad(f)))


@pytest.mark.parametrize("f, x, hand", [
    (fourth_powers, 0.7, lambda x: 24 * x),
    (horner, 0.9, lambda x: 24 * x - 12),   # x^4 - 2x^3 + x^2/2 + 3x + 1/4
    (grows_while_small, 1.3, None), (grows_while_small, 2.5, None),   # 3 and 2 iterations
    (branch_on_data, 0.8, lambda x: 3 * (-3 * np.sin(x) - x * np.cos(x))),
    (branch_on_data, 0.3, lambda x: 18.0),
    (indexed_writes, 0.6, lambda x: 6 + 24 * x),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) and not isinstance(v, float) else None)
def test_grad_of_grad_of_grad_through_a_tape(f, x, hand):
    got = third(f)(x)
    np.testing.assert_allclose(got, fd(sg.grad(sg.grad(f)), x), rtol=1e-6)
    if hand is not None:
        np.testing.assert_allclose(got, hand(x), rtol=1e-12)


def test_a_fourth_derivative_through_a_loop():
    np.testing.assert_allclose(sg.grad(third(fourth_powers))(0.7), 24.0, rtol=1e-12)


def test_mixed_third_partials_through_a_loop():
    g = sg.grad(sg.grad(sg.grad(mixed, wrt=0), wrt=1), wrt=0)
    np.testing.assert_allclose(g(0.7, 1.3), 2 * 2 * 3 * 1.3 ** 2, rtol=1e-12)


def test_a_third_derivative_with_array_data_through_a_loop():
    x = np.array([0.3, -0.5, 1.2])
    g = sg.grad(sg.grad(sg.grad(entries_to_the_fourth, wrt=1), wrt=1), wrt=1)
    np.testing.assert_allclose(g(x, 0.7), np.sum(-np.cos(0.7 * x) * x ** 4), rtol=1e-12)


@pytest.mark.parametrize("f, x", [(fourth_powers, 0.7), (horner, 0.9), (grows_while_small, 1.3),
                                  (indexed_writes, 0.6)])
def test_forward_over_reverse_over_reverse(f, x):
    want = fd(sg.grad(sg.grad(f)), x)
    (hvp,) = sg.hvp(sg.grad(f), (x,), (1.0,))
    np.testing.assert_allclose(hvp, want, rtol=1e-6)
    np.testing.assert_allclose(sg.hessian(sg.grad(f))(x), want, rtol=1e-6)
    np.testing.assert_allclose(sg.jvp(sg.grad(sg.grad(f)), (x,), (1.0,))[1], want, rtol=1e-6)


def test_what_stays_refused_names_the_users_line_and_construct():
    # the helpers of np.linalg.solve's second derivative (rt.solve_vjp_adjoint,
    # rt.solve_vjp_tangent: rules/linalg_second_order.py) have no rules of their own
    line = inspect.getsourcelines(solves)[1] + 3
    for attempt in (lambda: third(solves)(0.5), lambda: sg.hessian(sg.grad(solves))(0.5)):
        with pytest.raises(SrcgradError, match=r"no tangent for rt\.solve_vjp_adjoint, used by the gradient of solves") as info:
            attempt()
        assert info.value.filename == __file__
        assert info.value.lineno == line


def ten_lines(x, w):
    s = 0.0
    h = x
    for _ in range(3):
        a = np.tanh(h * w)
        b = a * a + 0.5 * h
        h = b - 0.1 * np.sin(a)
        c = np.exp(-h)
        s = s + np.sum(c * b)
        if s > 100.0:
            s = s * 0.5
    return s


def test_a_third_derivative_of_ten_lines_matches_and_its_tapes_need_no_alias_checks():
    # the gradients' own tapes are lists no other name holds (analysis/aliasing.py): their
    # appends are not checked, which kept a third of the third derivative's lines
    x = np.array([0.3, -0.5, 1.2])
    second = sg.grad(sg.grad(ten_lines, wrt=1), wrt=1)
    third_ = sg.grad(second, wrt=1)
    np.testing.assert_allclose(third_(x, 0.7), fd(lambda w: second(x, w), 0.7), rtol=1e-6)
    assert "check_unshared(tape" not in third_.source
