"""What keeps compile time linear (docs/performance.md, "Compile time"): the
pieces that were superlinear, checked against what they replace."""

import ast
import gc
import inspect
import textwrap

import gast
import numpy as np

import srcgrad as sg
from srcgrad import ast_util
from srcgrad.analysis import liveness

SOURCE = textwrap.dedent('''
    def f(x, n):
        a = x * 2.0
        b = a + 1.0
        t = 0.0
        for i in range(n):
            c = b * t
            if c > a:
                d = c - a
                t = d + t
            else:
                e = a
                b = e * 2.0
            u = t
        while t < 9.0:
            t = t + b
            w = t
        return t + u
''')


def statements(body):
    for s in body:
        yield s
        for inner in ast_util.child_blocks(s):
            yield from statements(inner)


def test_liveness_restricted_to_some_names_is_exact_for_them():
    body = gast.parse(SOURCE).body[0].body
    full = liveness.analyze(body, {"t"})
    for only in ({"a", "c", "t"}, {"b", "u", "w"}, {"d", "e", "i", "x"}, set()):
        part = liveness.analyze(body, {"t"}, only=only)
        for s in statements(body):
            assert part.live_after(s) == full.live_after(s) & only
            assert part.live_before(s) == full.live_before(s) & only


def test_the_quick_walk_yields_what_ast_walk_yields_in_the_same_order():
    tree = gast.parse(SOURCE + inspect.getsource(statements))
    assert [id(n) for n in ast_util.walk(tree)] == [id(n) for n in ast.walk(tree)]


def test_a_compile_pauses_the_garbage_collector_and_turns_it_on_again():
    def f(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(-1.0, 1.0, 4)
    assert gc.isenabled()
    assert np.allclose(sg.grad(f)(x), np.sin(x) + x * np.cos(x))
    assert gc.isenabled()
    gc.disable()
    try:   # off before the compile: left off
        sg.grad(lambda v: np.sum(v * v))(x)
        assert not gc.isenabled()
    finally:
        gc.enable()
