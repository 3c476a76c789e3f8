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


ODD_LISTS = textwrap.dedent('''
    def g(x, *, c, d=1.0, **kw):
        global h
        def inner():
            nonlocal x
        match x:
            case {"a": 1, **rest}:
                pass
            case Point(1, y=2):
                pass
        return {**kw, "c": c}
''')


def _sources():
    import glob
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    yield SOURCE + inspect.getsource(statements) + ODD_LISTS
    for path in sorted(glob.glob(os.path.join(root, "srcgrad", "**", "*.py"), recursive=True)):
        with open(path) as f:
            yield f.read()


def test_the_quick_walk_yields_what_ast_walk_yields_in_the_same_order():
    for source in _sources():   # lists holding strings and None included (ODD_LISTS)
        tree = gast.parse(source)
        assert [id(n) for n in ast_util.walk(tree)] == [id(n) for n in ast.walk(tree)]
        for cls in (gast.Name, gast.Call, gast.For, gast.Attribute):
            assert sorted(map(id, ast_util.nodes_of(tree, cls))) == \
                sorted(id(n) for n in ast.walk(tree) if isinstance(n, cls))
        for s in ast.walk(tree):
            if isinstance(s, gast.stmt):
                names = [n for n in ast.walk(s) if isinstance(n, gast.Name)]
                assert ast_util.loads(s) == {n.id for n in names if not isinstance(n.ctx, gast.Store)}
                assert ast_util.stores(s) == {n.id for n in names if isinstance(n.ctx, gast.Store)}


def test_the_quick_conversion_to_ast_makes_what_gast_makes():
    from srcgrad.codegen import emit
    for source in _sources():
        tree = gast.parse(source)
        assert ast.dump(emit._ToAst().visit(tree), include_attributes=True) == \
            ast.dump(gast.gast_to_ast(tree), include_attributes=True)


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
