"""The tangent program forward mode writes, and hvp's cost (issue 14).

A tangent program reads like the user's code: a tangent line after each statement
that has one, ``# tangent of:`` only over those, no zero tangent for a value that
cannot carry one (a branch condition, a loop counter popped back from a gradient's
tape). The tidying that makes it so must keep every derivative: each change is
checked against central finite differences of the gradient.
"""

import re
import sys
from pathlib import Path

import gast
import numpy as np
import pytest

import srcgrad as sg
from srcgrad import forward_api
from srcgrad.optimize import effects, repeated_calls

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import workloads  # noqa: E402

H = 1e-5


def fd_hvp(f, primals, tangents, wrt):
    """Central difference of ``sg.grad(f, wrt)`` along ``tangents`` (None: zero)."""
    g = sg.grad(f, wrt=wrt)

    def at(s):
        return g(*[p if t is None else p + s * t for p, t in zip(primals, tangents)])
    plus, minus = at(H), at(-H)
    plus, minus = (plus, minus) if isinstance(wrt, tuple) else ((plus,), (minus,))
    return [(np.asarray(a) - np.asarray(b)) / (2 * H) for a, b in zip(plus, minus)]


def hvp(f, primals, tangents, wrt=None):
    """``sg.hvp`` compiled afresh, so that ``hvp_source`` finds its program alone."""
    forward_api._cache.clear()
    return sg.hvp(f, primals, tangents, wrt=wrt)


def hvp_source(f):
    """The source of the tangent program ``hvp`` compiled for ``f``'s gradient."""
    found = [c.source for key, c in forward_api._cache.items()
             if key[-1] is False and f"def gradient_{f.__name__}_jvp(" in c.source]
    assert len(found) == 1
    return found[0]


# ----- a loop with a branch -----


def heat_cost(u, T_out):
    T = 19.0
    cost = 0.0
    for t in range(len(u)):
        T = T + 0.1 * (T_out[t] - T) + u[t]
        if T < 20.0:
            cost = cost + (20.0 - T) ** 2
    return cost


def test_the_tangent_program_of_a_loop_with_a_branch_has_one_tangent_line_per_active_statement():
    # Before: "dT = rt.tangent_zero(T)" for the literal, and "# tangent of: cond = ..."
    # over the branch condition, which has no tangent.
    text = sg.source(heat_cost, wrt=0, mode="jvp")
    assert text[text.index("def "):] == '''\
def heat_cost_jvp(u, T_out, du):
    # tangent of: T = 19.0
    T = 19.0
    dT = 0.0
    # tangent of: cost = 0.0
    cost = 0.0
    dcost = 0.0
    # tangent of: for t in range(len(u)):
    n = len(u)
    for t in range(n):
        # tangent of: T = T + 0.1 * (T_out[t] - T) + u[t]
        T_out_item_minus_T = T_out[t] - T
        dT_out_item_minus_T = rt.tangent_like(-dT, T_out_item_minus_T)
        t0_1_times_T_out_item = 0.1 * T_out_item_minus_T
        dt0_1_times_T_out_item = 0.1 * dT_out_item_minus_T
        T_plus_0_1_times_T_out = T + t0_1_times_T_out_item
        dT_plus_0_1_times_T_out = dT + dt0_1_times_T_out_item
        u_item = u[t]
        du_item = du[t]
        T = T_plus_0_1_times_T_out + u_item
        dT = dT_plus_0_1_times_T_out + du_item
        # tangent of: if T < 20.0:
        cond = T < 20.0
        if cond:
            # tangent of: cost = cost + (20.0 - T) ** 2
            t20_0_minus_T = 20.0 - T
            dt20_0_minus_T = -dT
            t20_0_minus_T_pow_2 = t20_0_minus_T ** 2
            dt20_0_minus_T_pow_2 = dt20_0_minus_T * 2 * t20_0_minus_T
            cost = cost + t20_0_minus_T_pow_2
            dcost = dcost + dt20_0_minus_T_pow_2
    # tangent of: return cost
    return cost, dcost
'''


def test_the_hvp_of_a_loop_with_a_branch_gives_its_popped_condition_no_tangent():
    u, T_out = np.array([0.5, 1.5, -0.3, 2.0, 0.1]), np.array([15.0, 16.0, 30.0, 17.0, 12.0])
    v = np.array([1.0, -2.0, 0.5, 0.3, 1.5])
    (got, none) = hvp(heat_cost, (u, T_out), (v, np.zeros(5)), wrt=0)
    assert none is None
    np.testing.assert_allclose(got, fd_hvp(heat_cost, (u, T_out), (v, None), 0)[0],
                               rtol=1e-6, atol=1e-6)
    source = hvp_source(heat_cost)
    # The condition is pushed and popped without a tangent: nothing is pushed for it
    # on the tangent tape, and no zero tangent is made for it (before: dcond =
    # rt.tangent_zero(cond) each iteration, and dcond pushed and popped).
    assert "tangent_zero" not in source.replace("ddu = rt.tangent_zero(du)", "")
    assert "dcond" not in source
    assert len(re.findall(r"dtape_\d+\.append\(", source)) == 1
    assert len(re.findall(r"rt\.tape_pop\(dtape_\d+\)", source)) == 1
    # "# tangent of:" stands only over lines followed by a tangent line (in a loop or
    # branch it names, its body).
    lines = source.splitlines()
    for k, line in enumerate(lines):
        if "# tangent of:" in line:
            indent = len(line) - len(line.lstrip())
            group = []
            for later in lines[k + 1:]:
                if "# tangent of:" in later and len(later) - len(later.lstrip()) <= indent:
                    break
                group.append(later)
            assert any(re.search(r"\bd\w+ = |\bd\w+\[|dtape_\d+\.append|return ", g) for g in group), \
                (line, group)


def loop_counter(x):
    s = 0.0
    i = 0
    while i < 3:
        s = s + np.sin(x[i]) * x[i]
        i = i + 1
    return s


def test_a_loop_counter_popped_back_carries_no_tangent_and_the_hvp_matches_finite_differences():
    x, v = np.array([0.3, 0.5, 0.7]), np.array([1.0, 2.0, 3.0])
    (got,) = hvp(loop_counter, (x,), (v,))
    np.testing.assert_allclose(got, fd_hvp(loop_counter, (x,), (v,), 0)[0], rtol=1e-6, atol=1e-6)
    source = hvp_source(loop_counter)
    assert "di = " not in source and "tangent_zero(i)" not in source


# ----- hvp of the benchmark workloads along the parameters -----


ROWS = {w.key: w for w in workloads.WORKLOADS if w.key in ("W5-f64", "W6-1e6", "W8")}


@pytest.mark.parametrize("key", sorted(ROWS))
def test_hvp_along_the_parameters_with_zero_data_tangents_matches_finite_differences(key):
    # The benchmark's call: the data's tangents are zeros, which hvp leaves out of the
    # tangent program; the product must not change.
    w = ROWS[key]
    args = tuple(w.make("quick").args)
    rng = np.random.default_rng(3)
    tangents = tuple(rng.standard_normal(np.shape(a)) if i in w.wrt else np.zeros(np.shape(a))
                     for i, a in enumerate(args))
    wrt = tuple(w.wrt)
    got = sg.hvp(w.fn, args, tangents, wrt=wrt)
    want = fd_hvp(w.fn, args, [t if i in w.wrt else None for i, t in enumerate(tangents)], wrt)
    for i, g in zip(wrt, want):
        np.testing.assert_allclose(got[i], g, rtol=1e-5, atol=1e-5)
    assert all(got[i] is None for i in range(len(args)) if i not in w.wrt)


def test_a_nonzero_data_tangent_still_counts_in_the_hvp_of_an_mlp():
    w = ROWS["W5-f64"]
    args = tuple(w.make("quick").args)
    rng = np.random.default_rng(4)
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
    got = sg.hvp(w.fn, args, tangents, wrt=(0, 1, 2, 3))
    want = fd_hvp(w.fn, args, tangents, (0, 1, 2, 3))
    for i in range(4):
        np.testing.assert_allclose(got[i], want[i], rtol=1e-5, atol=1e-5)
    without = sg.hvp(w.fn, args, tangents[:4] + (np.zeros_like(args[4]), tangents[5]), wrt=(0, 1, 2, 3))
    assert not np.allclose(without[0], got[0])   # the X tangent's cross term is there


def test_the_hvp_of_an_elementwise_sum_computes_each_sine_and_cosine_once():
    (got,) = hvp(workloads.w6_elementwise, (np.linspace(-2, 2, 7),), (np.linspace(1, 2, 7),))
    x, v = np.linspace(-2, 2, 7), np.linspace(1, 2, 7)
    np.testing.assert_allclose(got, fd_hvp(workloads.w6_elementwise, (x,), (v,), 0)[0],
                               rtol=1e-6, atol=1e-6)
    source = "\n".join(line for line in hvp_source(workloads.w6_elementwise).splitlines()
                       if not line.strip().startswith("#"))
    assert len(re.findall(r"\.cos\(x\)", source)) == 1
    assert len(re.findall(r"\.sin\(x\)", source)) == 1
    assert " * dsum" not in source and "dsum_sin_x_times_exp * " not in source   # 1.0 * a


def written_after_seed(x):
    y = np.sin(x)
    z = y * 2.0
    return np.sum(z * z)


def test_a_seed_of_one_is_kept_where_the_gradient_writes_into_an_array():
    x, v = np.array([0.2, -0.4, 1.1]), np.array([0.5, 1.0, -1.0])

    def with_write(x):
        b = np.zeros(3)
        for i in range(3):
            b[i] = np.sin(x[i]) * x[i]
        return np.sum(b * b)
    for f in (written_after_seed, with_write):
        (got,) = sg.hvp(f, (x,), (v,))
        np.testing.assert_allclose(got, fd_hvp(f, (x,), (v,), 0)[0], rtol=1e-6, atol=1e-6)


# ----- the passes on their own -----


def _parse(text):
    return gast.parse(text).body


def test_pure_runtime_helpers_and_xp_calls_may_only_raise_and_a_pop_has_an_effect():
    def value(text):
        return gast.parse(text).body[0].value
    assert effects.kind(value("rt.unbroadcast(g, x)"), None) == effects.RAISES
    assert effects.kind(value("rt.tangent_zero(x)"), None) == effects.RAISES
    assert effects.kind(value("xp.cos(x)"), None) == effects.RAISES
    assert effects.kind(value("rt.tape_pop(tape)"), None) is None
    assert effects.kind(value("rt.add_at(g, i, x)"), None) is None
    assert effects.kind(value("user_function(x)"), None) is None


def test_a_repeated_numpy_call_is_computed_once_before_its_first_use():
    body = _parse("xp = rt.namespace(dx, x)\n"
                  "s = xp.sin(x)\n"
                  "ds = dx * xp.cos(x)\n"
                  "c = xp.cos(x)\n"
                  "dc = -dx * xp.sin(x)\n"
                  "out = ds + dc * c\n")
    assert repeated_calls.run(body)
    assert _source(body) == ("xp = rt.namespace(dx, x)\n"
                    "s = xp.sin(x)\n"
                    "c = xp.cos(x)\n"
                    "ds = dx * c\n"
                    "dc = -dx * s\n"
                    "out = ds + dc * c\n")


def test_a_call_is_not_reused_after_its_argument_is_rebound_or_written():
    body = _parse("c = xp.cos(x)\nd = xp.cos(x)\n")
    assert repeated_calls.run(body) and _source(body) == "c = xp.cos(x)\nd = c\n"
    for between in ("x = x + 1.0\n", "x[0] = 2.0\n", "f(x)\n"):
        body = _parse("c = xp.cos(x)\n" + between + "d = xp.cos(x)\n")
        before = _source(body)
        assert not repeated_calls.run(body)
        assert _source(body) == before


def _source(body):
    import astor
    return astor.to_source(gast.gast_to_ast(gast.Module(body=body, type_ignores=[])))
