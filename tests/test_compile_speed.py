"""What keeps compile time linear (docs/performance.md, "Compile time"): the
pieces that were superlinear, checked against what they replace."""

import ast
import gc
import inspect
import textwrap

import gast
import numpy as np
import pytest

import srcgrad as sg
from srcgrad import ast_util, ast_walks
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


def _copying_liveness(body, live_out, skip=lambda s, live: False):
    """The walk liveness.analyze made before round eight: a copy of the live set after
    and before each statement (quadratic in a long body; the reference here)."""
    after, before = {}, {}

    def block(stmts, live):
        live = set(live)
        for s in reversed(stmts):
            after[id(s)] = set(live)
            if skip(s, live):
                before[id(s)] = set(live)
                continue
            if isinstance(s, gast.If):
                live = block(s.body, live) | (block(s.orelse, live) if s.orelse else set(live)) \
                    | ast_util.loads(s.test)
            elif isinstance(s, (gast.For, gast.While)):
                head = ast_util.loads(s.iter if isinstance(s, gast.For) else s.test)
                loop_live = set(live) | head
                while True:
                    grown = loop_live | block(s.body, loop_live)
                    if grown == loop_live:
                        break
                    loop_live = grown
                live = loop_live
                if isinstance(s, gast.For):
                    live = live - ast_util.stores(s.target) | head
            else:
                if isinstance(s, gast.Assign):
                    live -= {t.id for t in s.targets if isinstance(t, gast.Name)}
                live |= ast_util.loads(s)
            before[id(s)] = set(live)
        return live

    block(body, live_out)
    return after, before


def test_liveness_logged_per_run_is_the_copying_walks():
    # The sets are logged per run of statements (liveness._Run), not copied at each one.
    long_loop = "def g(x, n):\n    h0 = x\n    for i in range(n):\n" + "".join(
        f"        h{k} = h{k - 1} * h{k // 2} + x\n" + (f"        if h{k} > 0:\n            b = h{k}\n"
                                                     if k % 7 == 0 else "")
        for k in range(1, 40)) + "        h0 = h39\n    return h0 + b\n"
    for source in (SOURCE, long_loop, "def g(x):\n    a = b = x\n    a = a + b\n    return a\n"):
        body = gast.parse(textwrap.dedent(source)).body[0].body
        after, before = _copying_liveness(body, {"t"})
        skipper = {id(s) for s in statements(body)
                   if isinstance(s, gast.Assign) and len(s.targets) == 1 and s.targets[0].id in "bd"}
        for skip in (None, lambda s, live: id(s) in skipper):
            if skip is not None:
                after, before = _copying_liveness(body, {"t"}, skip)
            found = liveness.analyze(body, {"t"}, skip)
            for s in statements(body):
                assert found.live_after(s) == after[id(s)]
                assert set(found.live_before(s)) == before[id(s)]
                assert len(found.live_after(s)) == len(after[id(s)])
                assert all(n in found.live_after(s) for n in after[id(s)])


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


_PARSED = {}


def _parsed(source):
    """``gast.parse(source)``, once per source for the tests below (none changes the tree):
    they read every module of the package, a parse of all of them is seconds."""
    tree = _PARSED.get(source)
    if tree is None:
        tree = _PARSED[source] = gast.parse(source)
    return tree


def _sources():
    import glob
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    yield SOURCE + inspect.getsource(statements) + ODD_LISTS
    for path in sorted(glob.glob(os.path.join(root, "srcgrad", "**", "*.py"), recursive=True)):
        with open(path) as f:
            yield f.read()


@pytest.mark.slow
def test_the_quick_walk_yields_what_ast_walk_yields_in_the_same_order():
    for source in _sources():   # lists holding strings and None included (ODD_LISTS)
        tree = _parsed(source)
        assert [id(n) for n in ast_util.walk(tree)] == [id(n) for n in ast.walk(tree)]
        # (nodes_of skips contexts and operators: never asked for, never holding a node)
        for cls in (gast.Name, gast.Call, gast.For, gast.Attribute, gast.UnaryOp, gast.Subscript,
                    gast.Assign, gast.BinOp, gast.Compare, gast.BoolOp, gast.AugAssign):
            assert sorted(map(id, ast_util.nodes_of(tree, cls))) == \
                sorted(id(n) for n in ast.walk(tree) if isinstance(n, cls))
        loads, stores, calls = ast_util._names_and_calls(tree)
        assert sorted(map(id, calls)) == sorted(id(n) for n in ast.walk(tree) if isinstance(n, gast.Call))
        every = [n for n in ast.walk(tree) if isinstance(n, gast.Name)]
        assert loads == {n.id for n in every if not isinstance(n.ctx, gast.Store)}
        assert stores == {n.id for n in every if isinstance(n.ctx, gast.Store)}
        for s in ast.walk(tree):
            if isinstance(s, gast.stmt):
                names = [n for n in ast.walk(s) if isinstance(n, gast.Name)]
                assert ast_util.loads(s) == {n.id for n in names if not isinstance(n.ctx, gast.Store)}
                assert ast_util.stores(s) == {n.id for n in names if isinstance(n.ctx, gast.Store)}


@pytest.mark.slow
def test_the_quick_conversion_to_ast_makes_what_gast_makes():
    from srcgrad.codegen import emit
    for source in _sources():
        tree = _parsed(source)
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


PRINTED = textwrap.dedent('''
    def p(a, b, c, *args, k=1, m, **kw):
        x = a - (b - c) + (a + b) * c - -a ** 2 + (-a) ** 2 + a ** -b + a ** (b ** c)
        y = not a == b, (1).real, (1.5).hex(), f(*(a + b)), f(*args, **kw), x[1:2, ::3]
        z = x[a, b][:, None], x[::None], x[(a, b)], (a if b else c) + 1, a if b else c if a else b
        t = (), (a,), [a, (b, c)], {a + b: c, **kw}, f((a, b)), (a, b)[0], a < b < c, a is not b
        u = f(a)(b).c[d].e, -(-a), not not a, a and (b or c), (a or b) and c, ~a, +a, a @ b
        v = 1e1000, -1e1000, 1j, (1+2j), True, None, b'x', ..., 10**400, f(x=-1.0)
        s = 'x', "it's", 'a "b"', f('long string here, long enough to be triple quoted?'), s['k']
        'a docstring of some length, and with "quotes" in it'
        """a docstring
        with a line break"""
        'x'.join(a)
        ('x' + a).strip()
        aa, bb = cc, dd = a
        aa += b * c
        aa //= -b
        del aa[0], bb
        assert a, 'message'
        assert a > b, (a, b)
        very_long_name_number_one = very_long_function_name(argument_number_one, argument_number_two)
        q = rt.unbroadcast(rt.unbroadcast(dk * r, cos_z) * xp.sin(z) * ((h > 0.0) + 0.5 * (h == 0.0)), h)
        if a:
            pass
        elif b:
            for i, j in (a, b):
                continue
            else:
                break
        elif c:
            while a < b:
                a = a + 1
            else:
                b = lambda q: q + 1
        else:
            g = [i for i in a]
        if a:
            b = 1
        else:
            if b:
                c = 2
            d = 3
        for i in reversed(range_i) if a else x + y:
            return
        return a, b
    def q(x, /, y=2, *, z):
        return f"{x!r:>{y}}"
    def r(x: float) -> float:
        return x
''')


@pytest.mark.slow
def test_the_printer_prints_what_astor_prints():
    """codegen/printer.py against astor (emit.astor_source): every function of srcgrad's
    own sources and the cases above (precedence, strings, wrapped lines, fallbacks)."""
    from srcgrad.codegen import emit
    from srcgrad.templates import clone
    sources = [PRINTED] + list(_sources())
    for source in sources:
        for f in ast.walk(_parsed(source)):
            if isinstance(f, gast.FunctionDef):
                try:
                    reference = emit.astor_source([clone(f)])
                except AttributeError:   # astor prints no ``match``
                    continue
                assert emit.to_source([clone(f)]) == reference
        assert emit.to_source([clone(f) for f in gast.parse(PRINTED).body]) == \
            emit.astor_source([clone(f) for f in gast.parse(PRINTED).body])


@pytest.mark.slow
def test_a_long_lines_pieces_are_astors():
    """printer._pieces writes, for each statement of srcgrad's own sources at two depths,
    the pieces astor's SourceGenerator writes (split_lines wraps a long line at them), or
    leaves the statement to astor; most are written by it."""
    from astor.code_gen import SourceGenerator
    from astor.string_repr import pretty_string
    from srcgrad.codegen import emit, printer
    to_ast = emit._ToAst().visit
    written = total = 0
    for source in _sources():
        for f in ast_util.nodes_of(_parsed(source), gast.FunctionDef):
            for s in f.body:
                for depth in (1, 3):
                    generator = SourceGenerator(" " * 4, False, pretty_string)
                    generator.indentation = depth
                    try:
                        generator.visit(to_ast(s))
                    except AttributeError:   # astor prints no ``match``
                        continue
                    pieces = []
                    try:
                        printer._pieces(s, depth, pieces)
                    except printer._Astor:
                        continue
                    finally:
                        total += 1
                    assert pieces == generator.result, ast.unparse(to_ast(s))
                    written += 1
    assert written > 0.7 * total


def test_a_comment_markers_text_is_astors():
    """printer._own_line_string against astor's pretty_string on a line of its own: quotes,
    backslashes, tabs, non-ASCII, carriage returns and line breaks (astor's own path) too."""
    import random
    import string
    from astor.string_repr import pretty_string
    from srcgrad.codegen import printer
    rng = random.Random(5)
    texts = ["", " ", "x = 1", 'a"b', "a\\b", 'end"', '"""', "tab\there", "\u00e9", "a\rb", "a\nb",
             "__srcgrad_comment__:grad of: y = np.sin(x) * w['k']"]
    texts += ["".join(rng.choice(string.printable + '\u00e9"\\') for _ in range(rng.randint(0, 30)))
              for _ in range(3000)]
    for text in texts:
        for indent in ("", "    ", "        "):
            assert printer._own_line_string(text, indent) == pretty_string(text, 1, indent)


@pytest.mark.slow
def test_the_quick_conversion_to_gast_makes_gasts_tree():
    """parse._gast_parse against gast.parse on srcgrad's sources: the same classes, fields,
    locations and attribute order of every node."""
    from srcgrad import parse

    def dump(n):
        if isinstance(n, gast.AST):
            return (n.__class__, list(n.__dict__), [dump(v) for v in n.__dict__.values()])
        if isinstance(n, list):
            return [dump(x) for x in n]
        return (n.__class__, n)
    for source in _sources():
        assert dump(parse._gast_parse(source)) == dump(_parsed(source))


def test_generated_sources_print_as_astor_prints_them():
    """The sweeps and composed gradients of catalogue functions, printed both ways."""
    import conftest
    from srcgrad.codegen import emit
    from srcgrad.templates import clone
    printed = []
    to_source = emit.to_source

    def both(trees):
        copies = [clone(t) for t in trees]
        text = to_source(trees)
        printed.append(text == emit.astor_source(copies))
        return text

    emit.to_source = both
    try:
        for case in conftest.ALL_CASES[::4]:
            wrt = [w for w, _ in case.targets]
            if case.kwargs or not wrt:
                continue
            wrt = tuple(wrt) if len(wrt) > 1 else wrt[0]
            for show in (dict(), dict(args=case.args), dict(args=case.args, composed=True)):
                try:
                    sg.source(case.function, wrt, **show)
                except sg.SrcgradError:
                    pass
    finally:
        emit.to_source = to_source
    assert len(printed) > 50 and all(printed)


def test_source_lines_read_from_linecache_are_inspects():
    # parse._sourcelines reads a file linecache holds without a time (a notebook cell)
    # directly, skipping inspect.getmodule's scans of sys.modules: the same lines and start.
    import linecache
    from srcgrad import parse
    source = textwrap.dedent('''
        import numpy as np

        @staticmethod
        def decorated(x):
            return x * 2

        def plain(x,
                  y):
            z = x + y
            return z

        square = lambda x: x * x
        async def waits(x):
            return x
        class K:
            def method(self, x):
                return x
    ''')
    codes = []
    for k, filename in enumerate(("<srcgrad-test-cell-1>", "/nonexistent/cell_2.py")):
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace = {}
        exec(compile(source, filename, "exec"), namespace)
        codes += [namespace["decorated"].__func__.__code__, namespace["plain"].__code__,
                  namespace["square"].__code__, namespace["waits"].__code__,
                  namespace["K"].method.__code__]
    codes.append(test_source_lines_read_from_linecache_are_inspects.__code__)   # a real file
    for code in codes:
        assert parse._sourcelines(code) == inspect.getsourcelines(code)
    beyond = codes[1].replace(co_firstlineno=999)
    for read in (parse._sourcelines, inspect.getsourcelines):
        try:
            read(beyond)
        except OSError as exc:
            assert "out of bounds" in str(exc)
        else:
            raise AssertionError("a start beyond the file's lines is an OSError")


def test_rule_arguments_bound_as_inspect_binds_them():
    # adjoint_rules._bind matches positional arguments to a rule's parameters directly
    # where they are all positional; every rule of the table, every count of arguments:
    # the same arguments as Signature.bind, or its TypeError.
    from srcgrad import rules
    from srcgrad.transform import adjoint_rules
    rules.lookup(np.sin)   # (the table is filled on first use)
    table = list(rules.RULES.values()) + list(rules.COMPLEX_RULES.values())
    assert len(table) > 100
    fast = 0
    for rule in table:
        n = len(rule.signature.parameters)
        for count in range(n + 2):
            args = tuple(f"a{k}" for k in range(count))
            try:
                expected = rule.signature.bind(*args).arguments
            except TypeError:
                expected = TypeError
            try:
                found = adjoint_rules._bind(rule.signature, args, {}).arguments
            except TypeError:
                found = TypeError
            assert found == expected, (rule.name, count)
            fast += isinstance(adjoint_rules._bind(rule.signature, args, {}), adjoint_rules._Bound) \
                if expected is not TypeError else 0
        every = {p: 1 for p in rule.signature.parameters}   # keywords go to bind
        try:
            expected = rule.signature.bind(**every).arguments
        except TypeError:
            expected = TypeError
        try:
            found = adjoint_rules._bind(rule.signature, (), every)
            assert not isinstance(found, adjoint_rules._Bound)
            found = found.arguments
        except TypeError:
            found = TypeError
        assert found == expected, rule.name
    assert fast > 100   # the direct path is taken


def test_templates_of_many_names_parse_as_written():
    # A template's variables of one length take the next free placeholder each
    # (template_shapes._placeholders); past the placeholders of that length it is parsed as is.
    from srcgrad import templates
    for count, width in ((5, 2), (30, 2), (60, 2), (300, 4), (20, 1)):
        names = [f"{chr(97 + k % 26)}{k:0{width - 1}d}"[:width] if width > 1 else chr(97 + k)
                 for k in range(count)]
        text = f"rt.push(tape, {', '.join(names)})\nQ0 = ({', '.join(names)},)"
        got = templates.replace(text)
        assert gast.dump(gast.Module(body=got, type_ignores=[]), include_attributes=True) == \
            gast.dump(gast.parse(text), include_attributes=True)


@pytest.mark.slow
def test_settled_passes_skipped_give_the_code_of_every_pass_run():
    """optimize/driver.run skips a pass whose last run changed nothing when no pass changed
    anything since (the fixed point's last round, ``FINISH``'s ``dead``): the backward sweep
    of every catalogue function, optimized both ways, is the same tree, relying on the same
    facts; and skipping happens (``dead`` runs fewer times)."""
    import conftest
    from srcgrad import optimize
    from srcgrad.optimize import dead, driver
    from srcgrad.templates import clone
    transform, dead_run = driver.transform, dead.run
    compared, runs = [], {True: 0, False: 0}
    skipping = [True]

    def counted(body, facts):
        runs[skipping[0]] += 1
        return dead_run(body, facts)

    def both(body, *args, **kwargs):
        full = [clone(s) for s in body]
        skipping[0] = False
        used_full = transform(full, *args, skip_settled=False, **kwargs)
        skipping[0] = True
        used = transform(body, *args, **kwargs)
        compared.append(([gast.dump(s) for s in full] == [gast.dump(s) for s in body]
                         and used_full == used))
        return used

    optimize.transform, dead.run = both, counted
    try:
        for case in conftest.ALL_CASES:
            args, kwargs = case.fresh()
            for wrt, _ in case.targets:
                for show in (dict(), dict(args=args)) if not kwargs else (dict(),):
                    try:
                        sg.source(case.function, wrt, **show)
                    except sg.SrcgradError:
                        pass
    finally:
        optimize.transform, dead.run = transform, dead_run
    assert len(compared) > 100 and all(compared)
    assert runs[True] < runs[False]


LOOP_AND_BRANCH = textwrap.dedent('''
    def f(x, w, b, n):
        h = x * w + b
        acc = 0.0
        for i in range(n):
            a = np.tanh(h)
            c = a * a
            d = np.exp(-c)
            e = d * w + b
            if np.sum(e) > 0:
                h = h + 0.1 * e
            else:
                h = h - 0.1 * e
            s = np.sin(h)
            t = s * c
            acc = acc + np.sum(t)
        p = np.log1p(h * h)
        q = p / (1.0 + acc * acc)
        r = np.sqrt(q + 1.0)
        z = np.maximum(h, 0.0)
        k = np.cos(z) * r
        y = np.sum(k * k) + np.mean(r) * np.var(r)
        return y - 0.5 * np.sum(np.abs(x - w)) + acc
''')


def _loop_and_branch():
    """A fresh function of ``LOOP_AND_BRANCH`` (its own file name in linecache: its own
    compile) and arguments."""
    import linecache
    _fresh[0] += 1
    filename = f"<loop-and-branch-{_fresh[0]}>"
    linecache.cache[filename] = (len(LOOP_AND_BRANCH), None, LOOP_AND_BRANCH.splitlines(True),
                                 filename)
    namespace = {"np": np}
    exec(compile(LOOP_AND_BRANCH, filename, "exec"), namespace)
    rng = np.random.default_rng(3)
    return namespace["f"], (rng.normal(size=5), rng.normal(size=5), rng.normal(size=5), 3)


_fresh = [0]


def _restricted_runs(monkeypatch):
    """(pass, the names it was restricted to, the sweep's adjoints) of every run of the
    fixed point's passes (driver._run_recorded), restricted or not (None)."""
    from srcgrad.optimize import driver
    seen = []
    record = driver._run_recorded

    def recorded(module, body, facts, pending):
        only = pending[module] if module in driver.RESTRICTED else None
        seen.append((module, None if only is None else set(only), set(facts.adjoints)))
        return record(module, body, facts, pending)

    monkeypatch.setattr(driver, "_run_recorded", recorded)
    return seen


def test_later_rounds_of_the_fixed_point_look_only_at_the_names_touched(monkeypatch):
    """optimize/driver.run: a later run of first_contributions, loop_carried, zeros and
    copies looks only at the names some pass touched since that pass last ran
    (``facts.only``). On a loop with a branch (three rounds), the last round looks at a
    few of the adjoints; with the name-set check each restricted run is compared with a
    full run on a copy; the code is the code of every pass run on every name, and the
    gradient agrees with central differences."""
    from srcgrad.optimize import driver
    from srcgrad.testing import check_grads
    monkeypatch.setattr(ast_util, "CHECK_NAME_SETS", True)
    seen = _restricted_runs(monkeypatch)
    f, args = _loop_and_branch()
    source = sg.source(f, (0, 1, 2), args=args)
    restricted = [(only, adjoints) for _, only, adjoints in seen if only is not None]
    assert restricted and min(len(only) for only, _ in restricted) < len(restricted[0][1]) / 4
    assert {module for module, only, _ in seen if only is not None} == set(driver.RESTRICTED)
    monkeypatch.setattr(driver, "RESTRICTED", frozenset())
    f_full, _ = _loop_and_branch()
    assert sg.source(f_full, (0, 1, 2), args=args) == source
    check_grads(f, args, wrt=(0, 1, 2))


def test_a_restricted_run_that_misses_a_name_fails_the_name_set_check(monkeypatch):
    """The check catches a restriction that would change the code: with the names each
    pass touched dropped, a later run of ``copies`` looks at none and leaves a copy a
    full run propagates; a pass that changes the sweep without noting a name is caught."""
    from srcgrad.optimize import copies, driver
    monkeypatch.setattr(ast_util, "CHECK_NAME_SETS", True)
    touched = driver._touched
    monkeypatch.setattr(driver, "_touched", lambda pending, module, names:
                        touched(pending, module, set()))
    f, args = _loop_and_branch()
    with pytest.raises(ast_util.StaleNameSets, match="copies: the run restricted to .* differs"):
        sg.grad(f, (0, 1, 2))(*args)
    monkeypatch.setattr(driver, "_touched", touched)
    run = copies.run

    def forgetful(body, facts):
        found = run(body, facts)
        facts.touched.clear()
        return found

    monkeypatch.setattr(copies, "run", forgetful)
    f, args = _loop_and_branch()
    with pytest.raises(ast_util.StaleNameSets, match="touched"):
        sg.grad(f, (0, 1, 2))(*args)


def test_places_and_parents_are_what_the_walks_find():
    """ast_util.places_of (where each node of a class is: its parent, field and index) and
    nodes_and_parents (walk's nodes, each node's parent) against ast.walk and
    iter_fields, over the package's own sources."""
    for source in list(_sources())[:40]:
        tree = _parsed(source)
        nodes, parents = ast_util.nodes_and_parents(tree)
        assert [id(n) for n in nodes] == [id(n) for n in ast.walk(tree)]
        expected = {}
        for parent in ast.walk(tree):
            for field, value in ast.iter_fields(parent):
                for k, item in enumerate(value if isinstance(value, list) else [value]):
                    if isinstance(item, gast.AST):
                        expected[id(item)] = (parent, field, k if isinstance(value, list) else None)
        assert {k: id(v) for k, v in parents.items()} == {k: id(v[0]) for k, v in expected.items()}
        for cls in (gast.Call, gast.BinOp, gast.Name):
            found = ast_util.places_of(tree, cls)
            assert sorted(id(n) for n, *_ in found) == \
                sorted(id(n) for n in ast.walk(tree) if isinstance(n, cls))
            for n, parent, field, index in found:
                assert expected[id(n)] == (parent, field, index)
                assert (getattr(parent, field) if index is None else getattr(parent, field)[index]) is n
            order = {id(n): k for k, (n, *_) in enumerate(found)}
            for n, parent, _, _ in found:   # a node's place before those inside it
                while id(parent) in parents:
                    assert id(parent) not in order or order[id(parent)] < order[id(n)]
                    parent = parents[id(parent)]


@pytest.mark.slow
def test_temporaries_rounds_skipped_give_the_code_of_every_round_run(monkeypatch):
    """optimize/temporaries runs another round of folds only where a candidate the last
    round rejected could fold after that round's folds (``_Round``): the backward sweep of
    every catalogue function folded both ways (every round until one folds nothing, and
    skipping) is the same tree; and rounds are skipped (the liveness runs fewer times)."""
    import conftest
    from srcgrad.optimize import temporaries
    from srcgrad.templates import clone
    run, may_fold_again = temporaries.run, temporaries._Round.may_fold_again
    compared, rounds = [], {True: 0, False: 0}
    skipping = [True]
    analyze = temporaries.liveness.analyze

    class Counted:
        def analyze(self, *args, **kwargs):
            rounds[skipping[0]] += 1
            return analyze(*args, **kwargs)

    def both(body, facts):
        full = [clone(s) for s in body]
        names = facts.names
        facts.use_names(ast_util.NameSets())
        skipping[0] = False
        monkeypatch.setattr(temporaries._Round, "may_fold_again", lambda self: True)
        changed_full = run(full, facts)
        monkeypatch.setattr(temporaries._Round, "may_fold_again", may_fold_again)
        facts.use_names(names)
        skipping[0] = True
        changed = run(body, facts)
        compared.append([gast.dump(s) for s in full] == [gast.dump(s) for s in body]
                        and changed_full == changed)
        return changed

    monkeypatch.setattr(temporaries, "run", both)
    monkeypatch.setattr(temporaries, "liveness", Counted())
    from srcgrad import caches, disk_cache
    monkeypatch.setattr(disk_cache.settings, "enabled", False)
    for cache in list(caches._caches):   # (compiled by an earlier test: not optimized again)
        cache.clear()
    for case in conftest.ALL_CASES:
        args, kwargs = case.fresh()
        for wrt, _ in case.targets:
            try:
                sg.source(case.function, wrt)
            except sg.SrcgradError:
                pass
    assert len(compared) > 100 and all(compared)
    assert rounds[True] < rounds[False]


def test_the_full_forward_sweep_is_finished_by_its_first_reader_in_either_order(monkeypatch):
    """compile_gradient leaves the full forward sweep's last passes and comments to the first
    reader of the sweeps (compiled.Unfinished) where grad composes its gradient-only copy:
    composing runs them on the copy only, and the sweeps and trees read after composing are
    those read before it (a non-scalar output has no copy: finished at once)."""
    from srcgrad import compiled as compiled_module, pipeline
    from srcgrad.optimize import forward_temporaries

    runs = []
    tidy = forward_temporaries.run
    monkeypatch.setattr(forward_temporaries, "run", lambda body, facts: runs.append(1) or tidy(body, facts))

    def f(x, w):
        h = np.tanh(x * w + 1.0)
        a = h * h
        b = np.exp(-a) * w
        return np.sum(np.sin(b) * a)

    def dump(trees):
        return [gast.dump(t) for t in trees]

    composed_first = pipeline.compile_gradient(f, (0, 1), arg_ranks=(1, 1))
    assert composed_first.__dict__["trees"].__class__ is compiled_module.Unfinished
    assert len(runs) == 1   # the gradient-only copy's
    pipeline.compose_gradient(composed_first, True, only_gradients=True)
    assert len(runs) == 1 and composed_first.__dict__["trees"].__class__ is compiled_module.Unfinished
    source_after = composed_first.source
    assert len(runs) == 2   # finished once: reading the trees now runs nothing
    assert composed_first.trees[0] is composed_first.trees[0] and len(runs) == 2

    read_first = pipeline.compile_gradient(f, (0, 1), arg_ranks=(1, 1))
    trees_first = dump(read_first.trees)
    assert read_first.source == source_after
    assert trees_first == dump(read_first.trees) == dump(composed_first.trees) and len(runs) == 4
    x, w = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5)
    assert all(np.allclose(a, b) for a, b in zip(
        pipeline.compose_gradient(read_first, True, only_gradients=True)(x, w),
        pipeline.compose_gradient(composed_first, True, only_gradients=True)(x, w)))

    def g(x):   # an array output: no gradient-only copy, the trees finished by the compile
        return np.sin(x) * x

    assert pipeline.compile_gradient(g, 0, arg_ranks=(1,)).__dict__["trees"].__class__ is tuple


def test_composing_the_gradient_leaves_the_sweeps_as_they_were(monkeypatch):
    """grad's composed gradient takes the sweeps' simple statements without copying them
    (templates.composing_copy): the gradient-only forward sweep and the backward sweep,
    dumps and annotations of every node, are the same after composing as before, for
    the catalogue functions (seeds of 1 whose factors unit_seed drops, loops that
    scalar_items rewrites, dead code, releases among them)."""
    import conftest
    from srcgrad import pipeline
    compose = pipeline.compose_gradient
    checked = []

    def checking(compiled, *args, **kwargs):
        pipeline.with_trees(compiled)
        trees = None
        if isinstance(compiled.gradient_forward, tuple) and compiled.__dict__.get("trees") \
                and isinstance(compiled.gradient_forward[0], gast.FunctionDef):
            trees = [compiled.gradient_forward[0], compiled.backward_tree]
            before = _tree_facts(trees)
        function = compose(compiled, *args, **kwargs)
        if trees is not None:
            checked.append(_tree_facts(trees) == before)
        return function

    from srcgrad import api
    api._cache.clear()   # (compiled and composed by earlier tests: composed again here)
    monkeypatch.setattr(pipeline, "compose_gradient", checking)
    for case in conftest.ALL_CASES[::3]:
        wrt = [w for w, _ in case.targets]
        if case.kwargs or not wrt:
            continue
        try:
            sg.grad(case.function, tuple(wrt) if len(wrt) > 1 else wrt[0])(*case.args)
        except Exception:   # (a refusal, or a case's own expected error)
            pass
    assert len(checked) > 50 and all(checked)


def _tree_facts(nodes):
    """Everything of ``nodes`` a later pass can read: the dump, and each node's annotations
    and other attributes (``never_set``), in walk order."""
    from srcgrad import anno
    facts = []
    for node in nodes:
        if node is None:
            facts.append(None)
            continue
        facts.append(gast.dump(node))
        for child in ast_util.walk(node):
            extra = {k: v for k, v in child.__dict__.items()
                     if k not in child._fields and k not in child._attributes}
            extra.pop(anno.ANNO_KEY if hasattr(anno, "ANNO_KEY") else "_srcgrad_anno", None)
            facts.append((type(child).__name__, sorted(extra.items()),
                          dict(getattr(child, "_srcgrad_anno", {}))))
    return facts


def test_prepared_rule_templates_give_what_substituting_and_folding_gives():
    # templates.instantiate copies a rule's body prepared (substituted and folded) once per
    # argument shape: for every template rule of the table, arguments that are names or
    # literals (the literals folding reads: 0, 1, 2, the defaults), each set of wanted
    # gradients, a first and a later use: the trees, annotations and fresh names that
    # substituting and folding for that call alone gives (templates._instantiated).
    from srcgrad import anno, rules, templates
    from srcgrad.naming import Namer
    rules.lookup(np.sin)
    table = [r for r in list(rules.RULES.values()) + list(rules.COMPLEX_RULES.values())
             if r.builtin and templates.is_template(r)]
    assert len(table) > 100
    fixed = {"xp": "xp", "rt": "rt"}
    checked = prepared_used = 0
    for rule in table:
        params = list(rule.signature.parameters.values())
        body, local = templates._parse_rule(rule.function)
        for literal in (None, 0, 1, 2, 2.0, True):
            for use in range(2):
                args = {}
                for k, p in enumerate(params):
                    if p.kind is inspect.Parameter.VAR_POSITIONAL:
                        node = gast.Tuple(elts=[ast_util.name(f"v{use}_{k}")], ctx=gast.Load())
                    elif k >= 3 and (literal is not None or p.default is not inspect.Parameter.empty):
                        value = p.default if literal is None else literal
                        if not templates.is_literal(value):
                            value = literal if literal is not None else 1
                        node = gast.Constant(value=value, kind=None)
                    else:
                        node = ast_util.name(f"{p.name}_{use}")
                    anno.setanno(node, anno.Static.ORIGIN, (rule.name, use, k))
                    args[p.name] = node
                for wanted in [None] + [{k} for k in range(len(rule.params))]:
                    taken = {n.id for a in args.values() for n in ast_util.walk(a)
                             if isinstance(n, gast.Name)}
                    before = len(templates._PREPARED)
                    got = templates.instantiate(rule, args, Namer(taken), fixed, wanted)
                    prepared_used += len(templates._PREPARED) == before
                    expected = templates._instantiated(body, local, args, Namer(taken), fixed,
                                                       len(rule.params), wanted)
                    assert _tree_facts(got[0]) == _tree_facts(expected[0]), (rule.name, literal)
                    assert _tree_facts(got[1]) == _tree_facts(expected[1]), (rule.name, literal)
                    checked += 1
    assert checked > 1000 and prepared_used > checked // 2


def _power_2(x):
    return np.sum(x ** 2)


def _power_3(x):
    return np.sum(x ** 3)


def _power_1(x):
    return np.sum(x ** 1)


def _power_2_5(x):
    return np.sum(x ** 2.5)


def _power_0(x):
    return np.sum(x ** 0 * x)


def test_literal_arguments_of_one_rule_fold_by_their_own_value():
    # The power rule folds its exponent (``x ** (2 - 1)`` is ``x``): a prepared instance is
    # per literal, so x ** 2, x ** 3, x ** 1, x ** 2.5 and x ** 0 compiled one after another
    # in one process each get their own gradient (hand-derived, and central differences).
    from srcgrad.testing import numerical_grad
    x = np.array([0.5, 1.5, 2.25])
    for f, expected in ((_power_2, 2 * x), (_power_3, 3 * x ** 2), (_power_1, np.ones(3)),
                        (_power_2_5, 2.5 * x ** 1.5), (_power_0, np.ones(3)), (_power_2, 2 * x)):
        got = sg.grad(f)(x)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        np.testing.assert_allclose(got, numerical_grad(f, (x,)), rtol=1e-6)


def _same_copy(got, expected, template):
    """``got`` and ``expected`` are the same tree: classes, the order of each node's
    ``__dict__``, leaf values (the same objects), annotations (equal, not shared),
    contexts and operators shared where the template's are; no node or annotation of
    ``template`` (their ids)."""
    from srcgrad import templates
    if expected.__class__ is list:
        assert got.__class__ is list and len(got) == len(expected)
        for a, b in zip(got, expected):
            _same_copy(a, b, template)
        return
    if not isinstance(expected, gast.AST):
        assert got is expected or (got == expected and type(got) is type(expected))
        return
    assert got.__class__ is expected.__class__
    if expected.__class__ in templates._SHARED and not expected.__dict__:
        assert got is expected or id(expected) not in template   # (a new name's: its own)
        return
    assert id(got) not in template and list(got.__dict__) == list(expected.__dict__)
    for key, value in expected.__dict__.items():
        if key == "_srcgrad_anno":
            assert got.__dict__[key] == value and id(got.__dict__[key]) not in template
        else:
            _same_copy(got.__dict__[key], value, template)


def test_template_plans_copy_as_substituting_does(monkeypatch):
    """A template used again is copied from its plan (template_copies.py): for every string
    template and prepared rule tree that compiling catalogue functions used, the plan's
    copy is ``templates._substituted``'s, with names, nodes and renames put in."""
    import conftest
    from srcgrad import anno, template_copies, templates
    monkeypatch.setattr(template_copies, "USES", 0)   # a plan from the first use on
    for case in conftest.ALL_CASES[::7]:
        wrt = [w for w, _ in case.targets]
        if case.kwargs or not wrt:
            continue
        try:
            sg.grad(case.function, tuple(wrt) if len(wrt) > 1 else wrt[0])(*case.args)
        except Exception:   # (a refusal, or a case's own expected error)
            pass
    trees = [(parsed, keys, renames) for (_, keys), (parsed, renames, _)
             in templates._TEMPLATES.items()]
    trees += [(tree, prepared.params, dict(prepared.locals)) for prepared in templates._PREPARED.values()
              for tree in prepared.stmts + prepared.grads if tree is not None]
    annotated = gast.parse("a = b * c + f(d, k=[e, 1])\nif a:\n    g = -a").body
    for node in ast_util.walk(annotated[0]):   # (and one annotated context, copied whole)
        anno.setanno(node, anno.Static.ORIGIN, type(node).__name__)
    annotated[0].targets[0].ctx = gast.Store()
    anno.setanno(annotated[0].targets[0].ctx, anno.Static.ORIGIN, "ctx")
    trees += [(annotated, ("c",), {"b": "x"}), (annotated[1], (), {"a": "y"})]
    copied = 0
    for k, (tree, keys, renames) in enumerate(trees):
        plan = template_copies.plan(tree, keys, renames, templates._SHARED)
        if plan is None:
            continue
        for use in range(2):   # a name's spelling, then a node, for each substitution
            subs = {}
            for j, key in enumerate(keys):
                if use == 0:
                    subs[key] = f"v{k}_{j}"
                else:
                    subs[key] = ast_util.name(f"v{k}_{j}")
                    anno.setanno(subs[key], anno.Static.ORIGIN, (k, j))
            fresh = {p: f"fresh_{k}_{p}" for p in renames or {}} or None
            template = {id(x) for t in (tree if tree.__class__ is list else [tree])
                        for n in ast_util.walk(t) for x in (n, n.__dict__.get("_srcgrad_anno"))}
            expected = [templates._substituted(t, subs, fresh) for t in tree] \
                if tree.__class__ is list else templates._substituted(tree, subs, fresh)
            got = template_copies.copy(plan, subs, fresh, templates._SUBSTITUTE_NAMES.visit_Name,
                                       templates._substituted)
            _same_copy(got, expected, template)
            copied += 1
    assert copied > 200


def test_clone_copies_every_node_and_annotation():
    """templates.clone (each node's ``__dict__`` copied whole, its fields looked at): the
    copy of srcgrad's own sources, annotated, is a copy of every node, attribute order,
    leaf and annotation, contexts and operators shared (an annotated one copied)."""
    import pathlib
    from srcgrad import anno, templates
    for path in sorted(pathlib.Path(sg.__file__).parent.glob("*.py"))[:12]:
        tree = gast.parse(path.read_text())
        for k, node in enumerate(ast_util.walk(tree)):
            if k % 3 == 0:
                anno.setanno(node, anno.Static.ORIGIN, k)
            if k % 50 == 0 and isinstance(getattr(node, "ctx", None), gast.AST):
                node.ctx = type(node.ctx)()
                anno.setanno(node.ctx, anno.Static.ORIGIN, "ctx")
        template = {id(x) for n in ast_util.walk(tree) for x in (n, n.__dict__.get("_srcgrad_anno"))}
        _same_copy(templates.clone(tree), tree, template)


def _list_names_walking(node, resolves_to, kind):
    """call_forms.list_names as it was before ``Scan``: its own walk of ``node``."""
    from srcgrad.transform import call_forms
    bindings = {}
    for n in ast.walk(node):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name):
            bindings.setdefault(n.targets[0].id, []).append(n.value)
        elif isinstance(n, call_forms._BINDING):
            targets = [i.optional_vars for i in n.items if i.optional_vars is not None] \
                if isinstance(n, gast.With) else n.targets if isinstance(n, gast.Assign) else [n.target]
            for t in (t for target in targets for t in ast.walk(target)):
                if isinstance(t, gast.Name) and isinstance(t.ctx, gast.Store):
                    bindings.setdefault(t.id, []).append(None)
    return bindings


@pytest.mark.slow
def test_one_scan_answers_what_the_front_ends_walks_answered():
    """call_forms.Scan (methods.transform's and inline.transform's one walk) against the
    walks it replaced, for every function of the package's own sources: the nodes of each
    class (binding statements in ast.walk's order), local_names, and list_names' answer
    and its questions to ``resolves_to``, in the same order (each may record a read the
    compile depends on)."""
    from srcgrad.transform import call_forms, inline
    from srcgrad.transform.base import local_names
    checked = 0
    for source in _sources():
        for node in ast.walk(_parsed(source)):
            if not isinstance(node, gast.FunctionDef):
                continue
            scan = call_forms.Scan(node)
            every = list(ast.walk(node))
            for found, classes in ((scan.names, gast.Name), (scan.calls, gast.Call),
                                   (scan.scopes, (gast.FunctionDef, gast.Lambda)),
                                   (scan.starred, gast.Starred),
                                   (scan.displays, (gast.List, gast.Tuple, gast.Dict)),
                                   (scan.binders, call_forms._BINDING)):
                assert sorted(map(id, found)) == sorted(id(n) for n in every if isinstance(n, classes))
            assert [id(n) for n in scan.binders] == [id(n) for n in every
                                                     if isinstance(n, call_forms._BINDING)]
            assert scan.local_names() == local_names(node)
            assert scan.stored == {k: v for k, v in ((i, sum(
                1 for n in every if isinstance(n, gast.Name) and n.id == i
                and isinstance(n.ctx, gast.Store))) for i in {n.id for n in scan.names}) if v}
            assert list(scan.bindings()) == list(_list_names_walking(node, None, list))
            for kind in (list, dict):
                asked, asked_before = [], []

                def resolves(func, obj, log=asked):
                    log.append((gast.dump(func), obj))
                    return isinstance(func, gast.Name) and len(func.id) % 2 == 0

                got = call_forms.list_names(node, resolves, kind, scan=scan)
                expected = call_forms.list_names(node, lambda f, o: resolves(f, o, asked_before), kind)
                assert got == expected and asked == asked_before
            paths = inline._global_attributes(scan, scan.local_names())
            for name, path in paths.items():
                assert scan.stored.get(name) == 1 and path[0] not in scan.local_names()
            checked += 1
    assert checked > 1000


_ODD_BLOCKS = [
    'def f(x):\n    s = """\nx = 1\n"""\n    return x\ny = 2\n',            # a string's line at column 0
    'def f(x):\n    y = g(x,\n1)\n    return y\n',                          # a bracket's line at column 0
    'def f(x):\n    y = 1 + \\\n2\n    return y\n',                        # a continuation at column 0
    'def f(x): return x\n# c\ny = 1\n',                                      # one line
    'def f(x):\n    return x\n    # kept\n  # dropped\n\n# dropped\ny = 1\n',
    'def f(x):\n    return x\n  # dropped\n    # kept\n# dropped\n\n',
    'def f(x):\n    return x\n   # dropped: one column short\ny = 1\n',
    'def f(x):\n# a comment first\n    return x\n',
    'def f(x,\n      y):\n    return x\nz = 1\n',                             # a header over two lines
    'def f(x={1:\n  2}):\n    return x\n',
    'def f(x):  # c\n    return x\nz = 1\n',
    '    def f(self, x):\n        if x:\n            return 1\n\n        return 2\n\n    def g(self):\n        pass\n',
    'def f(x):\n\tif x:\n\t\treturn 1\n\treturn 2\n',                          # tabs
    'async def f(x):\n    return x\n',
    '@dec\ndef f(x):\n    return x\n',
    'def f(x):\n    return x',                                                 # no newline at the end
    'def f(x):\n    """\n  doc\n"""\n    return x\n',
]


@pytest.mark.slow
def test_a_defs_block_is_what_inspect_finds():
    """source_block.block (parse.py's reader of a def's lines, without the tokenizer)
    against inspect.getblock at every def (and its first decorator) of the package's and
    the tests' sources, some of the standard library's and odd layouts; the tree kept for
    the parse is the parse of that block."""
    import glob
    import os
    import sysconfig
    from srcgrad import source_block
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = sorted(glob.glob(os.path.join(root, "srcgrad", "**", "*.py"), recursive=True)
                   + glob.glob(os.path.join(root, "tests", "*.py")))
    paths += sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))[:120]
    sources = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            sources.append(f.read())
    quick = checked = 0
    for source in sources + _ODD_BLOCKS:
        try:
            tree = ast.parse(textwrap.dedent(source))
        except SyntaxError:
            tree = None
        lines = source.splitlines(True)
        starts = {k for k, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def ", "@"))} \
            if tree is None or source in _ODD_BLOCKS else set()
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                starts.add(node.lineno - 1)
                starts.add(min([d.lineno - 1 for d in node.decorator_list] + [node.lineno - 1]))
        for k in sorted(starts):
            try:
                expected = inspect.getblock(lines[k:])
            except Exception:   # (not a def of a source that compiles)
                continue
            source_block._last.block = None
            assert source_block.block(lines[k:]) == expected, (k, lines[k])
            checked += 1
            kept = getattr(source_block._last, "block", None)
            if kept is not None:
                quick += 1
                text = textwrap.dedent("".join(expected))
                assert kept[0] == text and ast.dump(source_block.parsed(text)) == ast.dump(ast.parse(text))
                assert getattr(source_block._last, "block", None) is None   # handed out once
    assert checked > 3000 and quick > checked // 2


@pytest.mark.slow
def test_holds_any_answers_what_a_walk_answers():
    """ast_util.holds_any (fence.check's first look) against ast.walk, for the classes
    fence looks at and others, at every statement of the package's sources."""
    from srcgrad.transform import fence
    sets = [fence._LOOKED_AT, {gast.Starred}, {gast.Attribute, gast.Lambda}, {gast.Call}, set()]
    for source in list(_sources())[:60]:
        tree = _parsed(source)
        for node in ast.walk(tree):
            if isinstance(node, (gast.stmt, gast.Module)):
                classes = {type(n) for n in ast.walk(node)}
                for wanted in sets:
                    assert ast_walks.holds_any(node, wanted) == bool(classes & set(wanted))


def test_composing_asks_the_name_sets_the_backward_sweep_was_built_with(monkeypatch):
    """grad's first composing asks the backward sweep's name sets as the optimizer and
    the tape's steps left them (``Compiled.sweep_names``, dropped once handed) instead of
    walking its statements again: with the name-set check, the composed source equals the
    one composed with fresh name sets and the gradient agrees with central differences;
    a backward statement edited in place after the build is caught by the check."""
    from srcgrad import pipeline
    from srcgrad.testing import check_grads
    monkeypatch.setattr(ast_util, "CHECK_NAME_SETS", True)
    compose, handed, sources = pipeline._compose, [], []

    def composing(*args, names=None, **kwargs):
        handed.append(names)
        function = compose(*args, names=None if fresh else names, **kwargs)
        sources.append(function._srcgrad_text[0])
        return function

    monkeypatch.setattr(pipeline, "_compose", composing)
    for fresh in (False, True):
        f, args = _loop_and_branch()
        sg.grad(f, (0, 1, 2))(*args)
        assert isinstance(handed[-1], ast_util.NameSets) and len(handed[-1]._memo) > 20
    assert len(sources) == 2 and sources[0] == sources[1] and "def " in sources[0]
    check_grads(f, args, wrt=(0, 1, 2))
    # A backward statement edited in place after its name sets were kept: the check says so.
    build = pipeline.reverse.build

    def editing(*args, **kwargs):
        built = build(*args, **kwargs)
        for s in built.backward.body:
            if isinstance(s, gast.Assign) and isinstance(s.value, gast.BinOp) \
                    and id(s) in built.names._memo:
                s.value = gast.Name(id="edited", ctx=gast.Load(), annotation=None,
                                    type_comment=None)
                break
        return built

    monkeypatch.setattr(pipeline.reverse, "build", editing)
    fresh = False
    f, args = _loop_and_branch()
    with pytest.raises(ast_util.StaleNameSets):
        sg.grad(f, (0, 1, 2))(*args)


def _shaped_tree(shaped, renames):
    """``shaped`` parsed, its placeholders renamed back (what ``templates.replace`` copies)."""
    tree = gast.parse(shaped)
    for n in ast_util.walk(tree):
        if isinstance(n, gast.Name) and n.id in (renames or {}):
            n.id = renames[n.id]
    return gast.dump(tree, include_attributes=True)


def test_a_templates_shape_from_an_earlier_one_of_its_form_is_its_own(monkeypatch):
    """template_shapes.shape answers a template from the answer for an earlier one of the same
    form (mask, kept names, names equal where they were equal): the tree parsed and renamed
    back is the template's own, positions included, for every pair of templates of one form
    that compiling catalogue functions shaped and for pairs made to differ (names equal to
    placeholders, to keywords, to each other; another attribute); and the earlier answer
    is used."""
    import conftest
    from srcgrad import api, disk_cache, template_shapes, templates
    seen = []
    real, cached = template_shapes._shape, template_shapes.shape

    def recording(template, subs):
        seen.append((template, tuple(subs)))
        return cached(template, subs)
    monkeypatch.setattr(templates, "_shape", recording)
    monkeypatch.setattr(disk_cache.settings, "enabled", False)   # (compiled, not loaded)
    templates._TEMPLATES.clear()
    template_shapes._FORMS.clear()
    api._cache.clear()
    for case in conftest.ALL_CASES[::7]:
        wrt = [w for w, _ in case.targets]
        if case.kwargs or not wrt:
            continue
        try:
            sg.grad(case.function, tuple(wrt) if len(wrt) > 1 else wrt[0])(*case.args)
        except Exception:   # (a refusal, or a case's own expected error)
            pass
    made = [("dx = dx + G", "dh = dh + G"), ("d1 = d1 + G", "Q0 = Q0 + G"),
            ("a1 = b2 + c3", "Q0 = Z0 + Q1"), ("x = 0.5 * y", "x = 0.7 * y"), ("x = 0x1f", "x = 0x1e"), ("dx = dx + G", "dw = dx + G"),
            ("ab = cd + G", "xy = xy + G"), ("x = rt.f(y, k=z)", "a = rt.f(b, k=c)"),
            ("x = rt.f(y, k=z)", "a = rt.g(b, k=c)"), ("x = y if c else z", "a = b if d else e"),
            ("ab = cd", "ab = or"), ("xyz = abc", "xyz = del"), ("a = b\nc = a", "d = e\nf = d"),
            ("x = y", "x = G")]
    forms = {}
    for template, subs in seen:
        forms.setdefault((template.translate(template_shapes._MASK), subs), []).append(template)
    pairs = [(a, b, subs) for (_, subs), group in forms.items() for a, b in zip(group, group[1:])]
    pairs += [(a, b, ("G",)) for a, b in made]
    assert len(pairs) > 200
    used = 0
    for earlier, template, subs in pairs:
        template_shapes._FORMS.clear()
        template_shapes.shape(earlier, dict.fromkeys(subs))
        known = template_shapes._FORMS.get((template.translate(template_shapes._MASK), subs))
        fits = known is not None and template_shapes._like(known, template, subs) is not None
        used += fits
        shaped, renames = template_shapes.shape(template, dict.fromkeys(subs))
        try:
            expected = gast.dump(gast.parse(template), include_attributes=True)
        except SyntaxError:
            assert not fits and (shaped, renames) == real(template, dict.fromkeys(subs))
            continue
        assert _shaped_tree(shaped, renames) == expected, (earlier, template)
    assert used > 150
    for earlier, template in made:   # which of the made pairs fit
        template_shapes._FORMS.clear()
        template_shapes.shape(earlier, {"G": None})
        known = template_shapes._FORMS.get((template.translate(template_shapes._MASK), ("G",)))
        fits = known is not None and template_shapes._like(known, template, ("G",)) is not None
        assert fits == (template in ("dh = dh + G", "Q0 = Q0 + G", "Q0 = Z0 + Q1",
                                     "a = rt.f(b, k=c)", "a = b if d else e", "d = e\nf = d")), \
            (earlier, template)


def test_a_census_holds_each_class_in_the_walks_order():
    """ast_walks.Census (the front end's first looks, one walk) against ast.walk: for each
    function of the package's sources, the nodes of every class but the contexts and
    operators, in the walk's order (comprehensions.py resolves the calls' names in it)."""
    checked = 0
    for source in list(_sources())[:60]:
        for node in ast.walk(_parsed(source)):
            if not isinstance(node, gast.FunctionDef):
                continue
            census = ast_walks.Census(node)
            by_class = {}
            for n in ast.walk(node):
                if n.__class__._fields or isinstance(n, (gast.stmt, gast.excepthandler)):
                    by_class.setdefault(n.__class__, []).append(n)
            for cls, nodes in by_class.items():
                assert [id(n) for n in census.of(cls)] == [id(n) for n in nodes]
            assert census.of(gast.Nonlocal) == () or gast.Nonlocal in by_class
            assert census.holds({gast.Name}) == (gast.Name in by_class)
            census.changed()   # walked again when next asked
            assert len(census.of(gast.Name)) == len(by_class.get(gast.Name, ()))
            checked += 1
    assert checked > 100


def _settled(bindings, env, evaluate, combine):
    """The fixed point the analyses computed before read_names.py: pass after pass until
    one changes nothing (the reference for their early end)."""
    env = dict(env)
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            found = evaluate(target, value, env)
            if found is None:
                continue
            new = combine(env.get(target), found)
            if new != env.get(target):
                env[target] = new
                changed = True
    return env


LOOPS = textwrap.dedent('''
    def f(x, w, n):
        a = 1
        k = 0
        z = x
        for i in range(n):
            b = a * 2
            c = np.sum(z) + k
            y = z
            z = y * w
            a = x * 1.0
            k = k + 1
            q = b
        while k < n:
            m = q + c
            q = m * 1j
            k = k + 2
        return a + b + q
''')


@pytest.mark.parametrize("source", [SOURCE, LOOPS])
def test_the_analyses_end_at_the_pass_no_later_one_would_change(source):
    """ranks.infer, ranks.shape_classes and kinds.infer end at the first pass whose changes
    no binding read before them (read_names.ReadNames): the same facts as passes until one
    changes nothing, on loops whose values are read before they are bound again."""
    import linecache
    from srcgrad import pipeline
    from srcgrad.analysis import kinds, ranks
    filename = f"<analyses {len(linecache.cache)} {id(source)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    node, ctx = pipeline.front_end(namespace["f"], pipeline.DEFAULT_OPTIONS)
    params = [a.id for a in node.args.args]
    bindings, in_loop = [], set()
    ranks._collect(node.body, bindings, in_loop)
    bound = {n for n, _ in bindings} | set(params)
    counts = {}
    for n, _ in bindings:
        counts[n] = counts.get(n, 0) + 1
    for given in ({}, {"x": 1, "w": 0, "n": ranks.INT}, {"x": 2, "w": 2}):
        rank_map = ranks.infer(node, given)
        env = _settled(bindings, {p: given.get(p, ranks.UNKNOWN) for p in params},
                       lambda t, v, env: ranks.UNKNOWN if v is None else ranks.INT
                       if v is ranks._RANGE else ranks._rank(v, env, bound),
                       lambda old, new: new if old is None else ranks._join(old, new))
        assert rank_map == {n: ranks.UNKNOWN if env.get(n) is ranks._SHAPE
                            else env.get(n, ranks.UNKNOWN) for n in bound}

        def shape_class(t, v, env, rank_map=rank_map):
            if v is None or v is ranks._RANGE:
                c = ranks.SCALAR if v is ranks._RANGE else ranks.UNKNOWN
            elif rank_map.get(t) in (0, ranks.INT):
                c = ranks.SCALAR
            else:
                c = ranks._class(v, env, rank_map, bound)
            if c == ranks.UNKNOWN and counts[t] == 1 and t not in in_loop \
                    and t not in params and ranks._makes_array(v):
                c = t
            return c
        start = {p: ranks.SCALAR if rank_map.get(p) in (0, ranks.INT) else p
                 if type(rank_map.get(p)) is int else ranks.UNKNOWN for p in params}
        env = _settled(bindings, start, shape_class,
                       lambda old, c: c if old is None or old == c else ranks.UNKNOWN)
        assert ranks.shape_classes(node, rank_map) == {n: env.get(n, ranks.UNKNOWN) for n in bound}
    for given in ({"x": kinds.FLOAT}, {"x": kinds.FLOAT, "w": kinds.COMPLEX}):
        analysis = kinds.infer(node, given, ctx.info.peek)
        reference = kinds._Kinds({}, bound, ctx.info.peek)

        def kind(t, v, env):
            reference.env = env
            return kinds.UNKNOWN if v is None else kinds.INT if v is ranks._RANGE else reference.kind(v)
        env = _settled(bindings, {p: given.get(p, kinds.UNKNOWN) for p in params}, kind,
                       lambda old, k: k if old is None else kinds.join(old, k))
        assert analysis.env == {n: env.get(n, kinds.UNKNOWN) for n in bound}
