"""optimize/unit_seed.py: a composed gradient's seed of 1 is not multiplied into real floats,
and the gradient stays bit for bit what the sweeps with the seed 1.0 give."""

import textwrap

import astor
import gast
import numpy as np
import pytest

import srcgrad as sg
from srcgrad.optimize.unit_seed import drop_unit_factors


def dropped(before, floats=("a", "b", "s", "x")):
    body = gast.parse(textwrap.dedent(before).strip()).body
    changed = drop_unit_factors(body, "dy", frozenset(floats))
    after = astor.to_source(gast.gast_to_ast(gast.Module(body=body, type_ignores=[]))).strip()
    assert changed == (after != textwrap.dedent(before).strip())
    return after


@pytest.mark.parametrize("before, after", [
    ("dx = dy * s * b * 2", "dx = s * b * 2"),
    ("dx = b * dy * s", "dx = b * s"),                                  # either side
    ("d = dy\ndx = d * s * x", "d = dy\ndx = s * x"),                    # the seed's copy
    ("dx = dy * a\ndx -= dy * s * x\ndx += x * dy * 2",
     "dx = dy * a\ndx -= s * x\ndx += x * 2"),                           # alone: dx would alias a
    ("dx = dy * n * x", "dx = dy * n * x"),                              # n not a real float
    ("dx = dy * (s * x) * 2", "dx = dy * (s * x) * 2"),                  # not a name: kind unknown
    ("dx = dy / s * x", "dx = dy / s * x"),                              # 1 / s is no identity
    ("d = dy\nd = d * 2\ndx = d * s * x", "d = dy\nd = d * 2\ndx = d * s * x"),   # rebound
    ("dy = dy * 2\ndx = dy * s * x", "dy = dy * 2\ndx = dy * s * x"),   # the seed rebound
    ("for i in r:\n    d = dy\ndx = d * s * x",) * 2,   # the copy nested
])
def test_unit_factors(before, after):
    assert dropped(before) == textwrap.dedent(after).strip()


def w6(x):
    return np.sum(np.sin(x) * np.exp(-x ** 2) + np.log1p(x * x))


def scaled(x, n):
    return np.sum(np.cos(x) * n * x)


def complex_inside(x):
    z = x * (1.0 - 2.0j)
    return np.sum(np.real(z * np.conj(z)) * x)


def of_float32(x, w):
    return np.sum(np.tanh(x) * w * x)


@pytest.mark.parametrize("fn, args", [
    (w6, (np.array([-0.0, 0.3, -2.5, 1e-160, 3.0]),)),
    (w6, (np.linspace(-3, 3, 7).astype(np.float32),)),
    (scaled, (np.linspace(-1, 1, 5), np.arange(5, dtype=np.int16))),
    (complex_inside, (np.linspace(-1, 1, 5),)),
    (of_float32, (np.linspace(-1, 1, 5).astype(np.float32), np.float32(0.5))),
    (of_float32, (-0.0, 2.0)),
])
def test_grad_is_the_sweeps_gradient_bit_for_bit(fn, args):
    # value_and_grad runs the sweeps with the seed 1.0 (no factor dropped); grad the
    # composed function, first and hot call.
    _, expected = sg.value_and_grad(fn)(*args)
    g = sg.grad(fn)
    for got in (g(*args), g(*args)):
        assert type(got) is type(expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        assert np.array_equal(got, expected, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_w6_multiplies_no_array_by_the_seed():
    text = sg.source(w6, args=(np.ones(3),), composed=True)
    products = [line for line in text.splitlines() if "dx " in line and "=" in line]
    assert products and not any("dsin" in line for line in products[1:]), text
