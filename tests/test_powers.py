"""optimize/powers.py: the adjoint of ``while ...: y = y * 2`` multiplies by 64 six steps
at a time. Its results must be those of the loop it replaces bit for bit (every dtype,
overflow to inf, zeros, NaN, negative factors), and it must stay differentiable again
and compilable by the jit."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import disk_cache
from srcgrad.optimize import powers
from srcgrad.testing import numerical_grad

from functions import seed_while_doubling as doubling   # W3, the seed notebook's


def by_minus_four(x):
    y = x * 2.0
    while np.linalg.norm(y) < 1e6:
        y = -4 * y
    return np.sum(np.sin(y * 1e-6) * x)


def by_float_eight(x, n):
    y = x * 1.0
    k = 0
    while k < n:
        y = y * 8.0
        k = k + 1
    return y


def _both(fn, args, grad_outputs, monkeypatch):
    """(gradient with the pass, gradient without it), each compiled afresh."""
    monkeypatch.setattr(disk_cache.settings, "enabled", False)
    g = sg.grad(fn)
    with_pass = g(*args, grad_outputs=grad_outputs)
    assert "range(n_loop // 6)" in sg.source(fn, args=args)
    with monkeypatch.context() as m:
        m.setattr(powers, "run", lambda body, facts: False)
        m.setattr(sg.api, "_cache", {})
        without = sg.grad(fn)(*args, grad_outputs=grad_outputs)
    return with_pass, without


SEEDS = {
    "float64": np.array([0.01, -0.1, 1.0]),
    "zeros and a NaN": np.array([0.0, -0.0, np.nan]),
    "huge: overflows to inf": np.array([1e300, -1e300, 0.0]),
    "subnormal": np.array([5e-324, -1e-310, 2.0 ** -1070]),
    "float32": np.array([0.01, -3e37, 0.0], dtype=np.float32),
    "float16": np.array([0.01, -300.0, 1.0], dtype=np.float16),
    "int8 wraps": np.array([1, -3, 5], dtype=np.int8),
}


@pytest.mark.parametrize("seed", list(SEEDS), ids=list(SEEDS))
@pytest.mark.parametrize("scale", [1.0, 1e-300, 1e-6])   # 8 to ~1000 doublings
def test_the_doubling_adjoint_is_bit_identical_to_the_loop(seed, scale, monkeypatch):
    x = np.array([1178.3732, 192.4036, 922.6443]) / 512 * scale
    with np.errstate(all="ignore"):
        got, expected = _both(doubling, (x,), SEEDS[seed], monkeypatch)
    assert got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("n", [0, 1, 5, 6, 7, 13, 400])
def test_a_float_factor_and_any_count_are_bit_identical(n, monkeypatch):
    monkeypatch.setattr(disk_cache.settings, "enabled", False)
    x = np.array([1.5, -2.25e-300, 3.0])
    seed = np.array([1.0, 3.0, 0.0])
    g = sg.grad(by_float_eight)
    assert "(1.0, 8.0)[n_loop % 2]" in sg.source(by_float_eight, args=(x, n))
    with np.errstate(all="ignore"):
        got = g(x, n, grad_outputs=seed)
    expected = seed.copy()
    with np.errstate(all="ignore"):
        for _ in range(n):
            expected = expected * 8.0
    assert got.tobytes() == (expected * 1.0).tobytes()


def test_the_rewritten_loop_is_differentiated_again_and_compiled_by_the_jit():
    x = np.array([0.3, 0.2, -0.1])
    assert "dy * (1, -4, 16)[n_loop % 3]" in sg.source(by_minus_four, args=(x,))
    g = sg.grad(by_minus_four)
    np.testing.assert_allclose(g(x), numerical_grad(by_minus_four, (x,)), rtol=1e-7)
    numeric = np.array([numerical_grad(lambda v: g(v)[j], (x,)) for j in range(3)])
    for hessian in (sg.hessian(by_minus_four)(x), sg.jacrev(g)(x), sg.jacfwd(g)(x)):
        np.testing.assert_allclose(hessian, numeric, rtol=1e-6, atol=1e-6)
    pytest.importorskip("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no fallback to NumPy
        gj = sg.grad(by_minus_four, jit=True)
        assert gj(x).tobytes() == g(x).tobytes()
