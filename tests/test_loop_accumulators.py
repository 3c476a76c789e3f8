"""A composed gradient's loop accumulators added into in place (optimize/loop_accumulators.py,
rt.add_into): the same numbers as ``d = d + g``, and only where nothing else holds ``d``."""

import math

import gast
import numpy as np
import pytest

import srcgrad as sg
from srcgrad import runtime
from srcgrad.ast_util import NameSets
from srcgrad.codegen import emit
from srcgrad.optimize import loop_accumulators


def rnn(W, U, h0, xs):
    h = h0
    for x_t in xs:
        h = np.tanh(h @ W.T + x_t @ U.T)
    return np.sum(h)


def rnn_inputs(dtype=np.float64, steps=6):
    rng = np.random.default_rng(3)
    W = rng.standard_normal((5, 5)) / math.sqrt(5)
    U = rng.standard_normal((5, 3)) / math.sqrt(3)
    return (W.astype(dtype), U.astype(dtype), np.zeros((4, 5), dtype),
            rng.standard_normal((steps, 4, 3)).astype(dtype))


def central(f, args, k, eps=1e-6):
    x = args[k]
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        for sign in (1, -1):
            moved = list(args)
            moved[k] = x.copy()
            moved[k][i] += sign * eps
            g[i] += sign * f(*moved) / (2 * eps)
    return g


def test_rnn_gradient_in_place_matches_differences_and_the_two_sweeps():
    args = rnn_inputs()
    assert "rt.add_into(dW," in sg.source(rnn, wrt=(0, 1), args=args, composed=True)
    g = sg.grad(rnn, wrt=(0, 1))
    dW, dU = g(*args)
    for got, k in ((dW, 0), (dU, 1)):
        np.testing.assert_allclose(got, central(rnn, args, k), rtol=1e-6, atol=1e-8)
    # the two sweeps (grad_outputs: no composed function) add as written, bit for bit
    for got, two in zip((dW, dU), g(*args, grad_outputs=1.0)):
        np.testing.assert_array_equal(got, two)
        assert got.dtype == two.dtype


def test_returned_accumulators_are_the_callers_own():
    args = rnn_inputs()
    g = sg.grad(rnn, wrt=(0, 1))
    first = g(*args)
    want = [a.copy() for a in first]
    first[0][...] = 7.0   # the caller writes into what it got
    first[1][...] *= 2.0
    for got, w in zip(g(*args), want):
        np.testing.assert_array_equal(got, w)
    assert not np.shares_memory(first[0], g(*args)[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_other_float_dtypes_bit_for_bit(dtype):
    args = rnn_inputs(dtype)
    g = sg.grad(rnn, wrt=(0, 1))
    for got, two in zip(g(*args), g(*args, grad_outputs=dtype(1.0))):
        assert got.dtype == two.dtype
        np.testing.assert_array_equal(got, two)


def mixed(W, xs):
    s = 0.0
    for x_t in xs:
        s = s + np.sum(np.sin(x_t * W))
    return s


def test_steps_of_other_dtypes_as_written():
    """Steps of float32 and float64 items: bit for bit the two sweeps' result (a contribution
    of another dtype than the accumulator's is ``d + g``: test_add_into)."""
    rng = np.random.default_rng(5)
    W = rng.standard_normal((2, 3)).astype(np.float32)
    xs = [rng.standard_normal((2, 3)).astype(t) for t in (np.float64, np.float32, np.float32)]
    assert "rt.add_into(dW," in sg.source(mixed, args=(W, xs), composed=True)
    g = sg.grad(mixed)
    got = g(W, xs)
    two = g(W, xs, grad_outputs=1.0)
    assert got.dtype == two.dtype == np.float32   # (a gradient has its input's dtype)
    np.testing.assert_array_equal(got, two)
    W64 = W.astype(np.float64)
    want = sum(np.cos(x.astype(np.float64) * W64) * x.astype(np.float64) for x in xs)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_add_into():
    d = np.arange(6.0).reshape(2, 3)
    g = np.full((3, 2), 0.5).T
    want = d + g
    out = runtime.add_into(d, g)
    assert out is d
    np.testing.assert_array_equal(out, want)
    # another dtype, a broadcast, integers, a Python float: d + g, d untouched
    for d, g in ((np.ones(3, np.float32), np.ones(3)), (np.ones((2, 3)), np.ones(3)),
                 (np.ones(3, int), np.ones(3, int)), (0.0, np.ones(3)),
                 (np.ones(3), 2.0)):
        before = np.copy(d)
        out = runtime.add_into(d, g)
        assert out is not d
        np.testing.assert_array_equal(out, np.add(before, g))
        np.testing.assert_array_equal(d, before)


class Keeps:
    """A value whose ``0.0 + v`` hands back the array it keeps."""

    def __init__(self, kept):
        self.kept = kept

    def __radd__(self, other):
        return self.kept


def test_add_into_owns_only_what_numpy_made():
    kept = np.ones(3)
    d = runtime.add_into(0.0, Keeps(kept))   # a first contribution of another type
    np.testing.assert_array_equal(d, kept)
    assert d is not kept and not np.shares_memory(d, kept)
    runtime.add_into(d, np.ones(3))   # in place: the kept array stays as it was
    np.testing.assert_array_equal(kept, np.ones(3))
    fresh = np.ones(3)
    d = runtime.add_into(0.0, fresh)
    assert d is not fresh and runtime.add_into(d, fresh) is d


SEEDED = "    dsum = 1.0\n"


def rewritten(body, floats=()):
    """The text of ``def f(W, xs)`` after loop_accumulators.run (``body`` after its seed)."""
    source = "def f(W, xs):\n" + SEEDED + body + "    return dW\n"
    node = gast.parse(source).body[0]
    seeded = next(s for s in node.body if isinstance(s, gast.Assign) and s.targets[0].id == "dsum")
    loop_accumulators.run(node.body, seeded, set(floats), NameSets())
    return emit.to_source([node])


LOOP = "    for x in xs:\n        g = x * W\n{inside}        dW = dW + g\n"


@pytest.mark.parametrize("before, inside, floats, done", [
    ("    dW = 0.0\n", "", (), True),
    # read by another statement in the loop: that statement could keep it
    ("    dW = 0.0\n", "        keep = dW\n", (), False),
    # pushed on a tape in the loop
    ("    dW = 0.0\n", "        push(dW)\n", (), False),
    # not zero on entry: dW is g, which another name holds
    ("    dW = 0.0\n    dW = W * 2.0\n", "", (), False),
    # a lambda mentions it
    ("    dW = 0.0\n    get = lambda: dW\n", "", (), False),
    # a Python float
    ("    dW = 0.0\n", "", ("dW",), False),
    # the right side reads it
    ("    dW = 0.0\n", "        g = g + dW\n", (), False),
    # an error caught inside the loop could leave it half added into
    ("    dW = 0.0\n", "        try:\n            g = g / x\n        except ZeroDivisionError:\n"
                    "            pass\n", (), False),
    ("    dW = 0.0\n", "        with ctx:\n            g = g * 2.0\n", (), False),
])
def test_only_what_nothing_else_holds(before, inside, floats, done):
    text = rewritten(before + LOOP.format(inside=inside), floats)
    assert ("rt.add_into(dW, g)" in text) == done, text


def test_only_loops_after_the_seed_and_of_the_body_itself():
    forward = ("def f(W, xs):\n    dW = 0.0\n    for x in xs:\n        dW = dW + x\n" + SEEDED
               + "    return dW\n")
    node = gast.parse(forward).body[0]
    loop_accumulators.run(node.body, node.body[2], set(), NameSets())
    assert "add_into" not in emit.to_source([node])
    nested = rewritten("    dW = 0.0\n    if xs:\n" + LOOP.format(inside="").replace("\n    ", "\n        ")
                       .replace("    for", "        for", 1))
    assert "add_into" not in nested, nested


def test_the_sweeps_stay_as_written():
    """The composed gradient's statements are new: the sweeps (printed, the two-sweep call,
    what the jit translates) keep ``d = d + g``."""
    args = rnn_inputs()
    g = sg.grad(rnn, wrt=(0, 1))
    g(*args)
    g(*args)
    assert "rt.add_into" in sg.source(rnn, wrt=(0, 1), args=args, composed=True)
    sweeps = sg.source(rnn, wrt=(0, 1), args=args)
    assert "rt.add_into" not in sweeps and "dW = dW + xp.transpose(dW_T)" in sweeps
