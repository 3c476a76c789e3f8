"""Each optimization pass on a small body: the printed result is exactly the expected source.

A pass is given statements parsed from source text and the facts it reads
(srcgrad/optimize/facts.py); ``rewrites`` runs it and prints the body again.
"""

import textwrap

import astor
import gast
import numpy as np
import pytest

from srcgrad import anno
from srcgrad.analysis import liveness
from srcgrad.analysis.ranks import SCALAR
from srcgrad.ast_util import (NameSets, StatementTransformer, accumulation, blocks, is_rt_call,
                              loads, stores, walk, walk_statements)
from srcgrad.codegen import emit
from srcgrad.optimize import (copies, dead, first_contributions, forward, forward_temporaries,
                              in_place, index_buffers, loop_carried, loop_invariants, merge,
                              reductions, release, sink, subtract, temporaries, unbroadcast, zeros)
from srcgrad.optimize.facts import Facts, inplace_targets
from srcgrad.templates import clone

Static = anno.Static


def parse(source):
    body = gast.parse(textwrap.dedent(source).strip()).body
    for block in blocks(body):
        for s in block:
            if isinstance(s, gast.If) and is_rt_call(s.test, "has_grad"):
                anno.setanno(s, Static.GUARD, True)   # as reverse.py marks its guards
            if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) \
                    and isinstance(s.value.func, gast.Name) and s.value.func.id == "push":
                anno.setanno(s, Static.TAPE, s.value.args[0].id)   # as reverse.py marks pushes
    return body


def printed(body):
    return astor.to_source(gast.gast_to_ast(gast.Module(body=body, type_ignores=[]))).strip()


def rewrites(module, before, **facts):
    """``before`` after one run of ``module``'s pass, printed; asserts the pass reports
    a change exactly when the text changed."""
    body = parse(before)
    found = Facts(**facts)
    found.inplace = inplace_targets(body)
    if found.classes:
        found.sweep_classes = unbroadcast.infer_sweep_classes(body, found.classes, found.fixed)[0]
    changed = module.run(body, found)
    after = printed(body)
    assert bool(changed) == (after != printed(parse(before))), (changed, after)
    rewrites.facts = found
    return after


def text(source):
    return textwrap.dedent(source).strip()


# ----- first_contributions -----

@pytest.mark.parametrize("before, after", [
    ("dx = 0.0\ndx = dx + g * w", "dx = g * w"),
    # The zero moves into the branches: assigned where the first use accumulates.
    ("""
     dx = 0.0
     if c:
         dx = dx + g
     else:
         y = 1.0
     """, """
     if c:
         dx = g
     else:
         dx = 0.0
         y = 1.0
     """),
    # Under a guard the zero stays for when the guard is false.
    ("""
     dx = 0.0
     if rt.has_grad(g):
         dx = dx + g
     """, """
     dx = 0.0
     if rt.has_grad(g):
         dx = g
     """),
])
def test_first_contribution_is_assigned(before, after):
    assert rewrites(first_contributions, before, adjoints={"dx"}) == text(after)


@pytest.mark.parametrize("before, facts", [
    ("dx = 0.0\ny = dx * 2\ndx = dx + g", {"adjoints": {"dx"}}),      # the zero is read first
    ("dx = 0.0\ndx = dx + dx * g", {"adjoints": {"dx"}}),             # the contribution reads it
    ("dx = 0.0\ndx = dx + g", {"adjoints": set()}),                   # not an adjoint
    ("dx = 0.0\ndx = dx + g\nrt.run_hook(dx, h)", {"adjoints": {"dx"}}),   # updated in place
    ("dx = 0.0\nif dx > 0:\n    dx = dx + g", {"adjoints": {"dx"}}),  # the branch tests it
])
def test_first_contribution_stays_an_addition_when_the_zero_is_seen(before, facts):
    assert rewrites(first_contributions, before, **facts) == text(before)


# ----- loop_carried -----

def test_loop_carried_temporary_is_assigned_when_zero_on_entry_and_reset():
    before = """
        dh = 0.0
        for i in r:
            dh = dh + g
            dx = dh * i
            dh = 0.0
        """
    after = """
        dh = 0.0
        for i in r:
            dh = g
            dx = dh * i
            dh = 0.0
        """
    assert rewrites(loop_carried, before, adjoints={"dh"}) == text(after)


def test_branch_temporary_in_a_loop_is_assigned_when_only_zeroed_outside():
    before = """
        dT = 0.0
        for t in r:
            if c:
                dT = dT + g
                dx = dT * 2
                dT = 0.0
        """
    after = before.replace("dT = dT + g", "dT = g")
    assert rewrites(loop_carried, before, adjoints={"dT"}) == text(after)


@pytest.mark.parametrize("before", [
    # Not reset at the end: the next iteration adds to it.
    "dh = 0.0\nfor i in r:\n    dh = dh + g\n    dx = dh * i",
    # Read outside the branch: its value crosses iterations.
    "dT = 0.0\nfor t in r:\n    if c:\n        dT = dT + g\n        dT = 0.0\n    dx = dT",
    # Nonzero on entry.
    "dh = g\nfor i in r:\n    dh = dh + g\n    dx = dh * i\n    dh = 0.0",
])
def test_loop_carried_accumulation_stays_when_the_value_crosses_the_block(before):
    assert rewrites(loop_carried, before, adjoints={"dh", "dT"}) == text(before)


# ----- copies -----

@pytest.mark.parametrize("before, after", [
    ("a = b\nc = a * 2\nd = a + c", "a = b\nc = b * 2\nd = b + c"),
    ("b = b\nc = b", "c = b"),
    # Until either name is rebound.
    ("a = b\nc = a\nb = 1.0\nd = a", "a = b\nc = b\nb = 1.0\nd = a"),
    ("a = b\nif c:\n    a = 2.0\nd = a", "a = b\nif c:\n    a = 2.0\nd = a"),
])
def test_copies_are_propagated(before, after):
    assert rewrites(copies, before, generated={"a"}) == text(after)


def test_copies_of_names_the_pass_may_not_touch_stay():
    assert rewrites(copies, "a = b\nc = a", generated=set()) == "a = b\nc = a"
    # An adjoint a runtime helper updates in place keeps its own name.
    source = "a = b\nc = a\nrt.run_hook(a, h)"
    assert rewrites(copies, source, generated={"a"}) == text(source)


# ----- dead -----

@pytest.mark.parametrize("before, after", [
    # A dead chain goes in one run.
    ("a = x * 2\nb = a + 1\nc = x\nreturn c", "c = x\nreturn c"),
    # Values carried round a loop that nothing reads after it.
    ("a = 0.0\nfor i in r:\n    b = a * i\n    a = b + 1\nreturn x", "for i in r:\n    pass\nreturn x"),
    ("if k:\n    a = 1.0\nreturn x", "if k:\n    pass\nreturn x"),
])
def test_dead_assignments_are_removed(before, after):
    assert rewrites(dead, before, generated={"a", "b", "c"}) == text(after)


@pytest.mark.parametrize("before", [
    "a = 0.0\nfor i in r:\n    a = a + i\nreturn a",                   # read after the loop
    "a = 0.0\nfor i in r:\n    c = a * i\n    a = i\nreturn c",        # read by the next iteration
    "if k:\n    a = 1.0\nelse:\n    a = 2.0\nreturn a",
    "a = rt.add_at(d, x, i, g)\nreturn x",                             # an effect
    "a = f(x)\nreturn x",                                              # a call: may have effects
    "y = x * 2\nreturn x",                                             # not the sweep's name
])
def test_live_or_effectful_assignments_stay(before):
    assert rewrites(dead, before, generated={"a", "b", "c"}) == text(before)


def test_a_taped_statement_is_never_removed():
    body = parse("a = pop()\nb = x * 2\nreturn x")
    anno.setanno(body[1], Static.TAPE, "b")
    assert not dead.run(body, Facts(generated={"b"}))
    assert printed(body) == "a = pop()\nb = x * 2\nreturn x"


def test_liveness_iterates_loops_to_a_fixed_point():
    body = parse("a = 0.0\nfor i in r:\n    c = a * i\n    a = i\nreturn c")
    found = liveness.analyze(body, set())
    loop = body[1]
    # a's value of one iteration is read by the next: live after its assignment (and
    # the loop's target, conservatively: the back edge does not rebind it).
    assert found.live_after(loop.body[1]) == {"a", "c", "i", "r"}
    assert found.live_after(body[0]) == {"a", "c", "r"}
    assert found.live_after(loop) == {"c"}


# ----- unbroadcast -----

CLASSES = {"x": "x", "dx": "x", "w": "x", "dy": "x", "b": "b", "s": SCALAR}


@pytest.mark.parametrize("before, after", [
    ("dx = rt.unbroadcast(dy * w, x)", "dx = dy * w"),
    ("dx = rt.unbroadcast(dy * s, x)", "dx = dy * s"),
    ("ds = rt.unreduce(g, s, 0, False)", "ds = g"),
    ("n = rt.reduction_size(x)", "n = x.size"),
    ("n = rt.reduction_size(x, None, 1)", "n = x.size or 1"),
    # Broadcasting against another class: the helper stays.
    ("dx = rt.unbroadcast(dy * b, x)", "dx = rt.unbroadcast(dy * b, x)"),
])
def test_unbroadcast_is_dropped_where_classes_say_it_does_nothing(before, after):
    assert rewrites(unbroadcast, before, classes=CLASSES, fixed=set(CLASSES)) == text(after)


def test_a_remaining_helper_reads_the_shape_of_the_class_root():
    classes = {"x": "x", "y": "x", "g": "b"}
    before = "dy = rt.unbroadcast(g, y)"
    assert rewrites(unbroadcast, before, classes=classes, fixed={"x", "y"}, roots=("x",)) \
        == "dy = rt.unbroadcast(g, x)"
    assert rewrites.facts.used >= {"x", "y"}


# ----- reductions -----

def test_a_reduction_gradient_stays_scalar_until_returned():
    classes = {"x": "x", "dx": "x", "dmean": SCALAR}
    before = "dx = rt.unreduce(dmean, x, None, False)\ndx = dx * x\nreturn dx,"
    assert rewrites(reductions, before, classes=classes, fixed=set(classes), adjoints={"dx"},
                    returned={0}) == "dx = dmean\ndx = dx * x\nreturn dx,"


@pytest.mark.parametrize("use", ["dw = dx @ w\nreturn dw,", "return dx,", "dz = dx[0]\nreturn dz,"])
def test_a_reduction_gradient_is_spread_where_its_shape_matters(use):
    classes = {"x": "x", "dx": "x", "dmean": SCALAR}
    before = "dx = rt.unreduce(dmean, x, None, False)\n" + use
    # returned=set(): the caller does not broadcast any result.
    assert rewrites(reductions, before, classes=classes, fixed=set(classes), returned=set()) \
        == text(before)


@pytest.mark.parametrize("factor, after", [
    # A scalar times the array, summed to a scalar: the sum of the array, times it.
    ("s", "dz = g * s\nda = dz * rt.unbroadcast(x, a)\nreturn da,"),
    # dz may be an array (dy: an adjoint of x's class), the sum of dz * x stays.
    ("dy", "dz = g * dy\nda = rt.unbroadcast(dz * x, a)\nreturn da,"),
])
def test_a_reduction_gradient_summed_to_a_scalar_is_factored_out_where_scalar(factor, after):
    classes = {"x": "x", "dy": "x", "dz": "x", "a": SCALAR, "da": SCALAR, "s": SCALAR,
               "g": SCALAR}
    before = (f"dz = rt.unreduce(g, x, None, False) * {factor}\n"
              "da = rt.unbroadcast(dz * x, a)\nreturn da,")
    assert rewrites(reductions, before, classes=classes, fixed=set(classes) - {"dz"},
                    adjoints={"dy", "da", "g"}, returned={0}) == text(after)


# ----- index_buffers -----

def test_an_adjoint_only_added_into_at_indices_is_an_owned_buffer():
    before = """
        dx = 0.0
        for i in r:
            dx = rt.add_at(dx, x, i, g)
        return dx,
        """
    after = """
        dx = rt.owned_zeros(x)
        for i in r:
            dx[i] += g
        return dx,
        """
    assert rewrites(index_buffers, before, buffers={"dx": ("x", 1)}, indices={"i"}) == text(after)


@pytest.mark.parametrize("before", [
    "dx = 0.0\nfor i in r:\n    dx = rt.add_at(dx, x, i, g)\n    y = dx * 2\nreturn dx,",   # read
    "dx = 0.0\nfor i in r:\n    dx = rt.add_at(dx, x, k, g)\nreturn dx,",   # k may be a slice
    "dx = 0.0\nfor i in r:\n    dx = rt.add_at(dx, x, (i, i), g)\nreturn dx,",   # rank 1
])
def test_add_at_stays_where_the_buffer_could_be_seen_or_indexed_otherwise(before):
    assert rewrites(index_buffers, before, buffers={"dx": ("x", 1)}, indices={"i"}) == text(before)


# ----- merge -----

@pytest.mark.parametrize("before, after", [
    ("dx = g * x\ndx += g * x", "dx = g * x * 2"),
    ("dx = dx + g * x\ndx = dx + g * x", "dx = dx + g * x * 2"),
    ("dx = g * x\ndx += g * w", "dx = g * x\ndx += g * w"),
    ("dx += g * x\ndx += g * x", "dx += g * x * 2"),
    # A second statement adding to another name, or assigning its target: nothing to merge.
    ("dx = g * x\ndw = dw + g * x", "dx = g * x\ndw = dw + g * x"),
    ("dx = dx + g * x\ndx = g * x", "dx = dx + g * x\ndx = g * x"),
    # A call may have effects or depend on state: evaluated twice, as written.
    ("dx = f(g)\ndx += f(g)", "dx = f(g)\ndx += f(g)"),
    # The expression reads the target: the second contribution sees the first.
    ("dx = dx + dx * g\ndx = dx + dx * g", "dx = dx + dx * g\ndx = dx + dx * g"),
])
def test_repeated_contributions_merge_only_when_identical_and_pure(before, after):
    assert rewrites(merge, before) == after


# ----- in_place -----

SAME = {n: "x" for n in ("x", "d", "e", "g", "h")}


def test_accumulation_into_an_owned_array_is_in_place():
    assert rewrites(in_place, "d = x * 2.0\nd = d + g", classes=SAME, fixed={"x"}) \
        == "d = x * 2.0\nd += g"
    assert rewrites(in_place, "d = x * 2.0\nd = d - g\nd = d + h", classes=SAME, fixed={"x"}) \
        == "d = x * 2.0\nd -= g\nd += h"


@pytest.mark.parametrize("between", [
    # Seen through another name (a copy, a call's argument, a read in a nested block):
    # d += g would change that name too.
    "e = d", "e = f(d)", "if c:\n    e = d", "hooks(d)",
    # Rebound to something it does not own.
    "d = e", "d = f(x)",
])
def test_accumulation_stays_a_new_array_when_another_name_can_see_it(between):
    before = f"d = x * 2.0\n{between}\nd = d + g"
    assert rewrites(in_place, before, classes=SAME, fixed={"x"}) == before


def test_accumulation_needs_the_array_to_be_new():
    # d = g: g's own array (a name), not a fresh one.
    assert rewrites(in_place, "d = g\nd = d + h", classes=SAME, fixed={"x"}) == "d = g\nd = d + h"
    # Without in_place the pass does nothing.
    assert rewrites(in_place, "d = x * 2.0\nd = d + g", classes=SAME, fixed={"x"},
                    in_place=False) == "d = x * 2.0\nd = d + g"


# ----- forward (the gradient-only forward sweep) -----

def test_gradient_only_forward_drops_what_only_led_to_the_output():
    fn = parse("""
        def f_forward(x):
            a = x * 2.0
            y = a * a
            s = y + 1.0
            return s, (a,)
        """)[0]
    classes = {"x": "x", "a": "x", "y": "x", "s": SCALAR}
    out = forward.forward_for_gradient(fn, {"s": 0}, classes)
    assert printed([out]) == text("""
        def f_forward_for_grad(x):
            a = x * 2.0
            return None, (a,)
        """)


def test_gradient_only_forward_keeps_what_may_raise():
    fn = parse("""
        def f_forward(x, k):
            c = k / 2.0
            d = k ** 2
            s = k * 3.0
            return s, (x,)
        """)[0]
    classes = {"x": "x", "k": SCALAR, "c": SCALAR, "d": SCALAR, "s": SCALAR}
    out = forward.forward_for_gradient(fn, {"s": 0}, classes)
    assert printed([out]) == text("""
        def f_forward_for_grad(x, k):
            c = k / 2.0
            d = k ** 2
            return None, (x,)
        """)
    # An array output: the seed is needed, no gradient-only forward.
    assert forward.forward_for_gradient(fn, {"s": 1}, classes) is None


# ----- release -----

def test_dead_values_are_released_after_their_last_read():
    body = parse("a = x * 2\nb = a + 1\nfor i in range(3):\n    c = b * i\nd = c + x\nreturn d")
    assert printed(release.release_dead(body, {"x"})) == text("""
        a = x * 2
        b = a + 1
        a = None
        for i in range(3):
            c = b * i
        b = i = None
        d = c + x
        return d
        """)


# ----- ast_util -----

def test_name_sets_and_accumulations():
    s = parse("d = d + g * w")[0]
    assert loads(s) == {"d", "g", "w"} and stores(s) == {"d"}
    found = accumulation(s)
    assert found[0] == "d" and printed([gast.Expr(value=found[1])]) == "g * w"
    assert accumulation(parse("d = d + d * g")[0]) is None
    assert accumulation(parse("d = e + g")[0]) is None


class _DropUnbroadcast(StatementTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        if is_rt_call(node, "unbroadcast"):
            self.edit()
            return node.args[0]
        return node


def test_forget_edited_keeps_name_sets_exact():
    # A pass that rewrites expressions in place forgets what it edited (a statement and its
    # own parts: a compound statement's header, not its body); the sets asked before, of
    # the statements and of their parts, are the new ones when asked again.
    body = parse("""
        if rt.unbroadcast(c, x):
            d = d + rt.unbroadcast(g, x)
            e = g
        """)
    branch = body[0]
    inner, untouched = branch.body
    names = NameSets()
    assert names.loads(branch) == {"rt", "c", "x", "d", "g"}
    assert names.loads(inner.value) == {"d", "rt", "g", "x"}
    assert names.loads(branch.test) == {"rt", "c", "x"}
    kept = names._sets(untouched)
    dropper = _DropUnbroadcast()
    for s in walk_statements(body):
        dropper.visit_own_parts(s)
    assert dropper.edited == [branch, inner]
    names.forget_edited(*dropper.edited)
    assert names.loads(inner.value) == {"d", "g"}
    assert names.loads(branch.test) == {"c"}
    assert names.loads(branch) == {"c", "d", "g"}
    assert names._sets(untouched) is kept   # a statement not edited keeps its sets


def test_memoized_calls_are_the_nodes_calls_and_checked():
    # NameSets.calls: the Call nodes of a statement (a loop's through its parts), kept
    # from round to round like the names; inplace_targets reads them. A call removed in
    # place without forgetting the statement is a stale list, which the check reports
    # (as a stale name set) instead of the fixed point missing an in-place helper.
    import srcgrad.ast_util as ast_util_module
    body = parse("""
        for i in range(n):
            rt.add_at(dx, i, rt.unbroadcast(g, x))
        y = a(b)
        """)
    names = NameSets()
    loop, plain = body
    assert {id(n) for n in names.calls(loop)} == {id(n) for n in walk(loop)
                                                   if isinstance(n, gast.Call)}
    assert len(names.calls(loop)) == 3 and len(names.calls(plain)) == 1
    assert inplace_targets(body, names) == inplace_targets(body) == {"dx"}
    plain.value = parse("a + b")[0].value   # the same names, no call
    old, ast_util_module.CHECK_NAME_SETS = ast_util_module.CHECK_NAME_SETS, True
    try:
        with pytest.raises(ast_util_module.StaleNameSets, match="calls"):
            names.calls(plain)   # the name sets are the same ({a, b}, {y}): only the calls differ
        names.forget_edited(plain)
        assert names.calls(plain) == []
    finally:
        ast_util_module.CHECK_NAME_SETS = old


def test_clone_shares_only_nodes_without_fields():
    s = parse("d = d + g * -w")[0]
    copied = clone(s)
    assert gast.dump(copied) == gast.dump(s)
    for old, new in zip(walk(s), walk(copied)):
        assert (old is new) == (not old._fields), type(old).__name__   # contexts, operators
    anno.setanno(s.targets[0].ctx, "mark", 1)   # a context with an annotation is copied
    assert clone(s).targets[0].ctx is not s.targets[0].ctx


# ----- zeros -----

def test_known_zero_turns_additions_into_assignments_around_a_loop():
    # dii is zero on entry to every iteration: zero before the loop, reset at its end.
    before = """
        dii = 0.0
        for i in r:
            if cond:
                dii = dii + g
            dx[i] += dii
            dii = 0.0
        """
    after = before.replace("dii = dii + g", "dii = g")
    assert rewrites(zeros, before, adjoints={"dii"}) == text(after)


@pytest.mark.parametrize("before, after", [
    # Adding a known zero, and resetting one, change nothing.
    ("d = 0.0\nx[i] += d\nd = 0.0\ne = d * 2", "d = 0.0\ne = d * 2"),
    ("d = 0.0\nif c:\n    d = 0.0\nx += d", "d = 0.0\nif c:\n    pass"),
    # A branch that binds d ends what is known after it.
    ("d = 0.0\nif c:\n    d = g\nd = d + h", "d = 0.0\nif c:\n    d = g\nd = d + h"),
])
def test_known_zeros_follow_branches(before, after):
    assert rewrites(zeros, before, adjoints={"d"}) == text(after)


@pytest.mark.parametrize("before", [
    # Not reset at the end of the body: the next iteration adds to g.
    "d = 0.0\nfor i in r:\n    d = d + g",
    # A continue may skip the reset.
    "d = 0.0\nfor i in r:\n    d = d + g\n    if c:\n        continue\n    d = 0.0",
    # Updated in place by a runtime helper: never assumed.
    "d = 0.0\nd = d + g\nrt.run_hook(d, h)",
])
def test_what_a_loop_or_helper_may_change_is_not_known_zero(before):
    assert rewrites(zeros, before, adjoints={"d"}) == text(before)


# ----- subtract -----

@pytest.mark.parametrize("before, after", [
    ("dT = dT + -g", "dT = dT - g"),
    ("dT = dT + -(g * w)", "dT = dT - g * w"),
    ("y = a + -b + -c", "y = a - b - c"),
    ("y = -a + b", "y = -a + b"),
    # The negation as the first factor of a product or quotient.
    ("dx = dx + -(g * s) * 2 * x", "dx = dx - g * s * 2 * x"),
    ("dc = dc + -d * a / c", "dc = dc - d * a / c"),
    ("y = a + b ** -c", "y = a + b ** -c"),
    ("y = a + b * -c", "y = a + b * -c"),
])
def test_adding_a_negation_is_a_subtraction(before, after):
    assert rewrites(subtract, before) == after


# ----- temporaries -----

def test_single_use_temporaries_fold_into_their_use():
    before = """
        da = dcost * w
        db = da * 2 * a
        dT = dT + -db
        """
    assert rewrites(temporaries, before, generated={"da", "db"}) == "dT = dT + -(dcost * w * 2 * a)"


@pytest.mark.parametrize("before", [
    "da = g * w\ndx = da * x\ndy = da * y",                    # read twice
    "da = g * w\nw = pop()\ndx = da * x",                      # its input is rebound
    "da = g * w\nw[0] += 1.0\ndx = da * x",                    # its input is written into
    "da = g * w\nw = rt.add_at(w, x, i, g)\ndx = da * x",      # ... or by a helper
    "da = f(g)\ndx = da * x",                                  # a call: may have effects
    "da = g * w\nfor i in r:\n    dx = da * x",                # a loop would repeat it
    "da = g * w\nif rt.has_grad(da):\n    dx = da * x",        # a test reads it
    "da = g * w\nreturn da,",                                  # a returned adjoint keeps its name
    "da = g * da\ndx = da * x",                                # reads its own target
])
def test_temporaries_stay_where_folding_could_change_a_value_or_a_cost(before):
    assert rewrites(temporaries, before, generated={"da"}) == text(before)


def test_temporary_read_by_the_next_iteration_stays():
    before = """
        for i in r:
            dx = da * x
            da = g * w
            dy = da * y
        """
    assert rewrites(temporaries, before, generated={"da"}) == text(before)


# ----- sink -----

def test_a_use_that_vanishes_for_a_zero_moves_into_the_branch_that_sets_it():
    # W2's index buffer: dii is zero on entry to every iteration.
    before = """
        dii = 0.0
        for i in r:
            if cond:
                dii = dresult * result
            cond = pop()
            dx[i] += dii
            dii = 0.0
            ii = pop()
        """
    after = """
        dii = 0.0
        for i in r:
            if cond:
                dii = dresult * result
                dx[i] += dii
                dii = 0.0
            cond = pop()
            ii = pop()
        """
    assert rewrites(sink, before, adjoints={"dii"}) == text(after)
    # Nothing reads the resets now: dead code elimination removes them.
    body = parse(after)
    dead.run(body, Facts(adjoints={"dii"}))
    assert "dii = 0.0" not in printed(body)


@pytest.mark.parametrize("before", [
    # Both branches may set it: the use would be written twice.
    "d = 0.0\nfor i in r:\n    if c:\n        d = g\n    else:\n        d = h\n    x[i] += d\n    d = 0.0",
    # Not known zero before the branch.
    "for i in r:\n    if c:\n        d = g\n    x[i] += d",
    # Something other than a pop in between.
    "d = 0.0\nfor i in r:\n    if c:\n        d = g\n    y = x[i]\n    x[i] += d\n    d = 0.0",
    # The pop binds a name the use reads.
    "d = 0.0\nfor i in r:\n    if c:\n        d = g\n    i = pop()\n    x[i] += d\n    d = 0.0",
])
def test_uses_stay_after_the_branch_when_moving_them_could_change_or_grow_the_code(before):
    assert rewrites(sink, before, adjoints={"d"}) == text(before)


def test_gradient_only_forward_drops_a_repeated_read_of_the_same_element():
    fn = parse("""
        def f_forward(u, v):
            a = u[t]
            b = a * 2.0
            c = u[t]
            d = v[t]
            t = t + 1
            e = u[t]
            f = v[t]
            s = b * 3.0
            return s, (b,)
        """)[0]
    classes = {"u": "u", "v": "v", **{n: SCALAR for n in "abcdefs"}}
    out = forward.forward_for_gradient(fn, {"s": 0}, classes)
    # u[t] again: cannot raise where the first did not. v[t], and u[t] after t changed,
    # are first reads: they stay, so an IndexError is still raised.
    assert printed([out]) == text("""
        def f_forward_for_grad(u, v):
            a = u[t]
            b = a * 2.0
            d = v[t]
            t = t + 1
            e = u[t]
            f = v[t]
            return None, (b,)
        """)


# ----- forward_temporaries (the forward sweep's single-use temporaries) -----

W8_LOOP = """
    for t in range_t:
        dt_over_C = dt / C
        T_out_item = T_out[t]
        T_out_item_minus_T = T_out_item - T
        UA_times_T_out_item = UA * T_out_item_minus_T
        u_item = u[t]
        eta_times_u_item = eta * u_item
        UA_times_T_out_item_2 = UA_times_T_out_item + eta_times_u_item
        dt_over_C_times_UA = dt_over_C * UA_times_T_out_item_2
        T = T + dt_over_C_times_UA
        push(price_item)
        price_item = price[t]
        u_item_2 = u[t]
        price_item_times_u_item = price_item * u_item_2
        price_item_times_u_item_2 = price_item_times_u_item * dt
        cost = cost + price_item_times_u_item_2
    return cost, (tape, dt_over_C, price_item)
    """
W8_MADE = {"dt_over_C", "T_out_item", "T_out_item_minus_T", "UA_times_T_out_item", "u_item",
           "eta_times_u_item", "UA_times_T_out_item_2", "dt_over_C_times_UA", "price_item",
           "u_item_2", "price_item_times_u_item", "price_item_times_u_item_2", "range_t"}


def test_forward_temporaries_fold_a_line_back_into_the_users_expression():
    # Whether or not the shape classes are known (every operation may raise, or none).
    for classes in ({}, {n: SCALAR for n in W8_MADE | {"T", "UA", "eta", "dt", "cost"}}):
        assert rewrites(forward_temporaries, W8_LOOP, generated=W8_MADE, classes=classes) == text("""
            for t in range_t:
                dt_over_C = dt / C
                T = T + dt_over_C * (UA * (T_out[t] - T) + eta * u[t])
                push(price_item)
                price_item = price[t]
                cost = cost + price_item * u[t] * dt
            return cost, (tape, dt_over_C, price_item)
            """)


def test_forward_temporaries_keep_what_is_saved_pushed_or_the_users():
    before = """
        a = x * 2.0
        b = a + 1.0
        push(c)
        c = b * x
        d = c * 3.0
        e = d + 1.0
        y = e * e
        return y, (a, c)
        """
    # a is saved, c pushed, e read twice, y the output; d is the user's own variable.
    assert rewrites(forward_temporaries, before, generated={"a", "b", "c", "e", "y"}) == text("""
        a = x * 2.0
        push(c)
        c = (a + 1.0) * x
        d = c * 3.0
        e = d + 1.0
        y = e * e
        return y, (a, c)
        """)


@pytest.mark.parametrize("before, after", [
    # k / z may raise ZeroDivisionError, x[i] IndexError: k / z stays first.
    ("q = k / z\nr = x[i]\ns = r + q", "q = k / z\ns = x[i] + q"),
    ("q = k / z\nr = x[i]\ns = q + r", "s = k / z + x[i]"),
    # A value that may raise is not moved past a statement that may raise too.
    ("q = k / z\ny = x[i]\ns = q + y", "q = k / z\ny = x[i]\ns = q + y"),
    ("q = k / z\nr = x[i]\nw = r * 2.0\ns = q + w", "s = k / z + x[i] * 2.0"),
    # Nor into a part of its use evaluated only under a condition.
    ("q = x[i]\ns = c if f else q", "q = x[i]\ns = c if f else q"),
    ("q = x[i]\ns = f and q", "q = x[i]\ns = f and q"),
    # The condition itself is always evaluated.
    ("q = x[i]\ns = c if q else f", "s = c if x[i] else f"),
    # A value that cannot raise (numbers of known shape) may go anywhere.
    ("q = k * 2.0\nr = x[i]\ns = c if f else r + q", "r = x[i]\ns = c if f else r + k * 2.0"),
])
def test_forward_temporaries_keep_the_order_of_what_may_raise(before, after):
    made = {"q", "r", "w", "s"}
    classes = {"k": SCALAR, "q": SCALAR, "c": SCALAR, "f": SCALAR}
    assert rewrites(forward_temporaries, before, generated=made, classes=classes) == text(after)


@pytest.mark.parametrize("before", [
    # Something in between writes into, or rebinds, what the expression reads.
    "q = y * 2.0\ny[0] = 1.0\ns = q + 1.0",
    "q = y * 2.0\ny = x * 3.0\ns = q + 1.0",
    "q = y * 2.0\ny += 1.0\ns = q + 1.0",
    "q = y * 2.0\ng(y)\ns = q + 1.0",
    # The expression has an effect (a user's call), or reads its own target.
    "q = g(y)\ns = q + 1.0",
    "q = q + 1.0\ns = q * 2.0",
    # The use is in a nested block (run another number of times), or is the return.
    "q = y * 2.0\nfor i in r:\n    s = q + i",
    "q = y * 2.0\nif c:\n    s = q + 1.0",
    "q = y * 2.0\nreturn q",
    # The use is a push: the tape saves the value.
    "q = y * 2.0\npush(q)",
    # The value is read by the next iteration of a loop.
    "for i in r:\n    s = q + 1.0\n    q = y * 2.0",
])
def test_forward_temporaries_stay_where_moving_them_could_change_the_program(before):
    # Known scalars: every operation here is one that cannot raise.
    classes = {"x": SCALAR, "y": SCALAR, "q": SCALAR, "i": SCALAR}
    assert rewrites(forward_temporaries, before, generated={"q", "s"}, classes=classes) == text(before)


def test_forward_temporaries_fold_only_within_one_users_line():
    body = parse("q = y * 2.0\ns = q + 1.0")
    anno.setanno(body[0], Static.ORIGIN, ("f.py", 1))
    anno.setanno(body[1], Static.ORIGIN, ("f.py", 2))
    assert not forward_temporaries.run(body, Facts(generated={"q", "s"}))
    anno.setanno(body[1], Static.ORIGIN, ("f.py", 1))
    assert forward_temporaries.run(body, Facts(generated={"q", "s"}))
    assert printed(body) == "s = y * 2.0 + 1.0"


def test_forward_temporaries_fold_numpy_calls_but_not_one_that_writes_out():
    body = parse("q = x + b\nh = np.tanh(q)\nr = np.negative(x, out=y)\ns = r + 1.0")
    for call, primitive in ((body[1].value, np.tanh), (body[2].value, np.negative)):
        anno.setanno(call, Static.PRIMITIVE, primitive)
    forward_temporaries.run(body, Facts(generated={"q", "r", "s"}))
    assert printed(body) == text("""
        h = np.tanh(x + b)
        r = np.negative(x, out=y)
        s = r + 1.0
        """)


# ----- loop_invariants -----

W8_TOP = """
    dt_over_C = None
    dt = 0.25
    C = 10.0
    T = 19.0
    for t in range_t:
        dt_over_C = dt / C
        T = T + dt_over_C * (u[t] - T)
    return T, (dt_over_C,)
    """


def test_loop_invariants_compute_arithmetic_of_constants_once_before_the_loop():
    assert rewrites(loop_invariants, W8_TOP, generated={"dt_over_C"}, params={"u"}) == text("""
        dt = 0.25
        C = 10.0
        T = 19.0
        dt_over_C = dt / C
        for t in range_t:
            T = T + dt_over_C * (u[t] - T)
        return T, (dt_over_C,)
        """)


def test_loop_invariants_leave_nested_loops_one_after_the_other():
    before = """
        k = 2.0
        c = -0.5
        for i in r:
            for j in r:
                q = k * c + 1
                s = s + q
        """
    assert rewrites(loop_invariants, before, generated={"q"}) == text("""
        k = 2.0
        c = -0.5
        q = k * c + 1
        for i in r:
            for j in r:
                s = s + q
        """)


@pytest.mark.parametrize("before", [
    # Computing it raises (a division by zero): a loop that never runs must not.
    W8_TOP.replace("C = 10.0", "C = 0.0"),
    # C is bound twice, or is a parameter: its value is not known.
    W8_TOP.replace("    T = 19.0", "    T = 19.0\n    C = 5.0"),
    W8_TOP.replace("C = 10.0", "C = u"),
    # dt_over_C is the user's variable.
    W8_TOP.replace("dt_over_C", "rate"),
    # Read before it is computed: pushed (the tape saves the value of the previous
    # iteration), or read after a loop that may not run, or bound twice in the loop.
    W8_TOP.replace("        dt_over_C = dt / C", "        push(dt_over_C)\n        dt_over_C = dt / C"),
    W8_TOP.replace("    return T,", "    T = T + dt_over_C\n    return T,"),
    W8_TOP.replace("(u[t] - T)", "(u[t] - T)\n        dt_over_C = T"),
    # The constants are bound in a branch, or after the loop starts.
    W8_TOP.replace("    C = 10.0", "    if u:\n        C = 10.0"),
    W8_TOP.replace("    C = 10.0\n", "").replace("    for t", "    for t").replace(
        "        dt_over_C = dt / C", "        C = 10.0\n        dt_over_C = dt / C"),
])
def test_loop_invariants_stay_where_hoisting_could_change_the_program(before):
    made = {"dt_over_C"}
    assert rewrites(loop_invariants, before, generated=made, params={"u"}) == text(before)


# ----- release of scalars and the tape, chained releases printed -----

def test_scalars_and_the_tape_are_not_released():
    body = parse("push = tape.append\na = x * 2\nk = 3.0\nb = a + k\npop = tape.pop\n"
                 "c = b * pop()\nreturn c")
    assert printed(release.release_dead(body, {"x"}, scalars={"k"})) == text("""
        push = tape.append
        a = x * 2
        k = 3.0
        b = a + k
        a = None
        pop = tape.pop
        c = b * pop()
        return c
        """)


def test_a_chained_release_longer_than_a_line_is_printed_as_several():
    names = [f"value_number_{k}" for k in range(8)]
    fn = parse(f"def f(x):\n    {' = '.join(names)} = None\n    return x")[0]
    assert emit.to_source([fn]) == text("""
        def f(x):
            value_number_0 = value_number_1 = value_number_2 = value_number_3 = None
            value_number_4 = value_number_5 = value_number_6 = value_number_7 = None
            return x
        """) + "\n"


def _reference_known_zeros(body, tracked, names):
    """known_zeros as it was (a frozenset per statement): the reference of the test below."""
    from srcgrad.optimize.zeros import _LOOPS, _every_binding, _jumps
    from srcgrad.ast_util import assigned_name, child_blocks, is_zero
    before = {}

    def bound_by(node):
        return names.refs(node) if isinstance(node, gast.Delete) else names.stores(node)

    def block(stmts, zero):
        for s in stmts:
            before[id(s)] = zero
            zero = statement(s, zero)
        return zero

    def statement(s, zero):
        if isinstance(s, gast.If):
            zero = zero - bound_by(s.test)
            return block(s.body, zero) & block(s.orelse, zero)
        if isinstance(s, _LOOPS):
            return loop(s, zero)
        if child_blocks(s) or hasattr(s, "handlers"):
            return zero - _every_binding(s)
        zero = zero - bound_by(s)
        target = assigned_name(s)
        if target in tracked and target not in zero and is_zero(s.value):
            zero = zero | {target}
        return zero

    def loop(s, zero):
        target = bound_by(s.target if isinstance(s, gast.For) else s.test)
        if s.orelse or _jumps(s.body):
            entry = zero - _every_binding(s) - target
            block(s.body, entry)
            return entry
        entry = zero - target
        while True:
            out = block(s.body, entry) - target
            if entry <= out:
                return entry
            entry = entry & out

    block(body, frozenset())
    return before


def test_known_zeros_without_a_set_per_statement_answers_as_sets_do(monkeypatch):
    # zeros.known_zeros steps runs of plain statements with one set changed in place
    # (_Run); what it records before each statement answers `in` and truth as the frozenset
    # per statement did, for every name, in every sweep of the catalogue and of long loops.
    import sys
    import os
    import srcgrad as sg
    from srcgrad.errors import SrcgradError
    from srcgrad.optimize import sink, zeros
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    import compile_time
    real = zeros.known_zeros
    checked = []

    def compared(body, tracked, names):
        found = real(body, tracked, names)
        expected = _reference_known_zeros(body, tracked, names)
        assert found.keys() == expected.keys()
        every = set(tracked) | {n.id for s in body for n in walk(s) if isinstance(n, gast.Name)}
        for key, zero in expected.items():
            assert bool(found[key]) == bool(zero)
            assert {n for n in every if n in found[key]} == zero & every
        checked.append(len(expected))
        return found

    monkeypatch.setattr(zeros, "known_zeros", compared)
    monkeypatch.setattr(sink, "known_zeros", compared)
    from tests import functions as catalogue
    import inspect as inspect_module
    for name, fn in inspect_module.getmembers(catalogue, inspect_module.isfunction):
        if fn.__module__ != catalogue.__name__ or name.startswith("_") or name == "inputs":
            continue
        try:
            sg.source(fn, 0)
        except (SrcgradError, ValueError, TypeError):
            pass   # (refusals, functions without a parameter 0: not the point here)
    for shape in ("loop", "straight"):
        sg.source(compile_time.make_function(compile_time.make_source(60, shape)), (0, 1))
    assert len(checked) > 200 and max(checked) > 300
