"""Before/after checks of the backward-sweep optimizations on the generated source."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pipeline
from srcgrad.testing import check_grads


@pytest.fixture
def unoptimized(monkeypatch):
    monkeypatch.setattr(pipeline, "OPTIMIZE", False)


def straight(x, w):
    y = np.sin(x) * w + 2.0
    return y.sum()


def looped(x, w):
    h = x
    for _ in range(3):
        h = np.tanh(h @ w + x)
    return h.sum()


X = np.array([[0.3, -0.2], [0.1, 0.4]])
W = np.array([[0.5, -0.3], [0.2, 0.7]])


def test_first_contribution_assigns():
    source = sg.source(straight, wrt=(0, 1))
    assert "dx = 0.0" not in source and "dw = 0.0" not in source
    assert "dx = dsin_x * xp.cos(x)" in source


def test_unoptimized_keeps_zero_initialisation(unoptimized):
    source = sg.source(straight, wrt=(0, 1))
    assert "dx = 0.0" in source and "dx = dx + dsin_x * xp.cos(x)" in source


def test_loop_carried_temporaries_are_assigned():
    source = sg.source(looped, wrt=(0, 1))
    loop = source[source.index("for _ in range"):]
    # The tanh argument's adjoint is assigned in each iteration, never added to a zero.
    assert "dh_matmul_w_plus_x = dh * (1 - h * h)" in loop


def test_shape_only_values_are_not_kept():
    source = sg.source(looped, wrt=(0, 1))
    assert "push(rt.shape_of(h_matmul_w))" in source


@pytest.mark.parametrize("fn", [straight, looped])
def test_optimized_and_unoptimized_agree(fn, monkeypatch):
    fast = sg.grad(fn, wrt=(0, 1))(X, W)
    monkeypatch.setattr(pipeline, "OPTIMIZE", False)
    slow = sg.grad(fn, wrt=(0, 1))(X, W)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    check_grads(fn, (X, W), wrt=(0, 1), atol=1e-7, rtol=1e-6)


def test_dead_adjoints_are_not_computed():
    def f(x):
        y = x * 2.0
        y = y * 3.0
        return y.sum()
    source = sg.source(f)
    # The output's old value is only needed when a rule reads it: y * 3.0 does not.
    assert " y_new = y" not in source
    np.testing.assert_allclose(sg.grad(f)(np.ones(3)), 6.0 * np.ones(3))
