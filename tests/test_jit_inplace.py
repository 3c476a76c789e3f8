"""jit=True's in-place updates (srcgrad/jit/inplace.py): ``v = v * e`` in a loop runs as
``v *= e`` only while no other name, tape entry or view holds ``v``'s array. Each case
compares with the NumPy gradient and checks that no argument or seed was written.
Skipped when Numba is not installed."""

import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad.jit import JitFallbackWarning  # noqa: E402
from srcgrad.testing import numerical_grad  # noqa: E402


def doubling(x):   # W3: both sweeps update in place
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def returns_its_argument_updated(x, w):   # v starts as the argument w itself
    v = w
    for _ in range(3):
        v = v * 2.0
    return x * v + w


def taped(x):   # the old y is read by the gradient (pushed on the tape)
    y = x + 1.0
    for _ in range(3):
        y = y * np.sin(y)
    return y


def copied(x, w):   # z holds v's array when v is updated
    v = w * 1.5
    z = v
    for _ in range(3):
        z = v
        v = v * 2.0
    return x * z * v


def viewed(x, w):   # a view of v taken before the update
    v = w * 1.5
    head = v[1:]
    for _ in range(3):
        head = v[1:]
        v = v + 1.0
    return x[1:] * head * v[:-1]


def commuted(x, w):   # e op v for + and *
    y = x * 1.0
    for _ in range(4):
        y = w * y
        y = 0.5 + y
        y = y - w
        y = y / 3.0
    return y


_X = np.array([0.3, -0.4, 1.1])
_W = np.array([1.5, -0.5, 2.0])
_S = np.array([0.5, -1.5, 2.0])
CASES = [(doubling, (np.array([2.3, 0.37, 1.8]),), np.array([0.01, 0.1, 1.0])),
         (returns_its_argument_updated, (_X, _W), _S), (taped, (_X,), _S),
         (copied, (_X, _W), _S), (viewed, (_X, _W), _S[1:]),
         (commuted, (_X, _W), _S)]


@pytest.mark.parametrize("fn, args, seed", CASES, ids=[c[0].__name__ for c in CASES])
def test_in_place_updates_give_the_numpy_gradient_and_write_no_argument(fn, args, seed):
    wrt = 0
    want = sg.grad(fn, wrt)(*[a.copy() for a in args], grad_outputs=seed)
    jit = sg.grad(fn, wrt, jit=True)
    kept = [a.copy() for a in args]
    seed_kept = None if seed is None else seed.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        for _ in range(2):   # the first call, then the short path
            got = jit(*args, grad_outputs=seed)
            assert got.dtype == want.dtype and np.allclose(got, want, rtol=1e-13, atol=1e-15)
    assert all(np.array_equal(a, k) for a, k in zip(args, kept))
    assert seed is None or np.array_equal(seed, seed_kept)
    fd = numerical_grad(fn, tuple(a.copy() for a in args), grad_outputs=seed)   # the derivative
    assert np.allclose(got, fd, rtol=1e-6, atol=1e-6)


def test_the_doubling_loops_update_in_place_and_an_aliased_name_keeps_its_copy():
    x = np.array([2.3, 0.37, 1.8])
    source = sg.grad(doubling, jit=True).jit_source(x, grad_outputs=np.ones(3))
    assert "y *= _sg_t" in source and "dy *= _sg_t" in source
    assert "_own_dy = False" in source.split("dy = _sg_seed")[1].splitlines()[1]   # the seed's array
    source = sg.grad(copied, jit=True).jit_source(x, x, grad_outputs=x)
    assert "_own_v = False" in source.split("z = v")[1].splitlines()[1]
