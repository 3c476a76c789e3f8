"""The activity analysis (analysis/activity.py): exact results on small functions.

``active``: depends on a wrt input; ``useful``: the output depends on it; ``adjoint``:
both; ``saved``: bound more than once or in a loop; ``sequences``: holds a list;
``mixed``: a sequence also bound to something else.
"""

import numpy as np

from srcgrad import pipeline
from srcgrad.analysis import activity, kinds
from srcgrad.context import CompileOptions


def analyse(fn, wrt, with_kinds=True):
    node, ctx = pipeline.front_end(fn, CompileOptions())
    kind_map = kinds.infer(node, {n: kinds.FLOAT for n in wrt}, ctx.info.peek) if with_kinds else None
    return activity.resolve(node, wrt, kind_map)


def straight(x, w, n):
    k = n * 2
    y = x * w
    z = y + k
    u = np.sin(n)
    v = np.sin(y)
    return z


def test_active_useful_and_adjoint_of_straight_line_code():
    found = analyse(straight, ("x",))
    assert found == activity.Activity(
        active=frozenset({"x", "y", "z", "v"}),          # v depends on x but is not returned
        useful=frozenset({"z", "y", "k", "x", "w", "n"}),  # u is not
        adjoint=frozenset({"x", "y", "z"}),
        saved=frozenset(), sequences=frozenset(), params=("x", "w", "n"), mixed=frozenset())


def test_wrt_another_parameter_moves_activity_with_it():
    found = analyse(straight, ("w", "n"))
    assert found.active == {"w", "n", "k", "y", "z", "u", "v"}
    assert found.adjoint == {"w", "n", "k", "y", "z"}


def looped(x, n):
    s = 0.0
    vals = []
    for i in range(n):
        s = s + x
        vals.append(s)
    m = np.array(vals)
    idx = np.argmax(x)
    c = x.astype(int)
    return np.sum(m) + s + idx + c


def test_loops_lists_and_values_without_gradient():
    found = analyse(looped, ("x",))
    sums = {"sum_m", "sum_m_plus_s", "sum_m_plus_s_plus_idx", "sum_m_plus_s_plus_idx_2"}
    assert found.active == {"x", "s", "vals", "m"} | sums    # not idx (argmax), not c (an int)
    assert found.useful == {"x", "s", "vals", "m", "idx", "c"} | sums
    assert found.adjoint == {"x", "s", "vals", "m"} | sums
    assert found.saved == {"s", "i"}                         # rebound, bound in a loop
    assert found.sequences == {"vals"} and found.mixed == frozenset()


def test_without_kinds_an_integer_cast_is_assumed_active():
    found = analyse(looped, ("x",), with_kinds=False)
    assert "c" in found.active and "c" in found.adjoint


def copies_a_list(x):
    vals = [x, x]
    ys = vals
    vals = np.array(vals)
    return np.sum(vals) + ys[0]


def test_a_copy_of_a_list_is_a_list_and_a_list_rebound_to_an_array_is_mixed():
    found = analyse(copies_a_list, ("x",))
    assert found.sequences == {"vals", "ys"}
    assert found.mixed == {"vals"}
    assert found.saved == {"vals"}


def rebinds_a_parameter(x, a):
    a = a * x
    return a


def test_a_rebound_parameter_is_saved():
    found = analyse(rebinds_a_parameter, ("x",))
    assert found.saved == {"a"}
    assert found.adjoint == {"x", "a"}
