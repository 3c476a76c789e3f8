"""Comprehensions, generator expressions and map(f, xs) inside a differentiated function.

srcgrad lowers each to the loop a person would write (transform/comprehensions.py);
every gradient here is checked against central finite differences in float64,
and against the hand-derived answer where there is one.
"""

import inspect

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import check_grads

X = np.array([1.0, 2.0, 3.0])
Y = np.array([0.5, -1.0, 2.0])
M = np.arange(1.0, 7.0).reshape(2, 3) / 3


def square(v):
    return v * v


def sum_of_squares_gen(x):
    return sum(x[i] ** 2 for i in range(3))


def filtered_list(x):
    ys = [x[i] * 2 for i in range(3) if i % 2 == 0]
    return ys[0] * ys[1]


def dot_by_zip(x, y):
    return sum(a * b for a, b in zip(x, y))


def weighted_by_enumerate(x):
    return sum(i * v ** 2 for i, v in enumerate(x, 1))


def nested_clauses(x):
    return sum(x[i] * x[j] for i in range(3) for j in range(i))


def nested_comprehensions(m):
    return sum([sum(u ** 3 for u in row) for row in m])


def inside_a_loop(x):
    total = 0.0
    for k in range(2):
        total = total + sum([v * x[k] for v in x])
    return total


def stacked_rows(m):
    return np.sum(np.stack([np.sin(r) * r for r in m]) ** 2)


def mapped(x):
    total = sum(map(square, x)) + np.sum(np.stack(list(map(np.tanh, x))))
    for y in map(np.sin, x):
        total = total + y
    return total


def mapped_pairs(x, y):
    return sum(map(np.multiply, x, y))


def maxed_and_tupled(x):
    t = tuple(v * 2.0 for v in x)
    return max(v * v for v in x) + t[0] * t[2]


def any_all(x):
    big = 1.0 if any(v > 2.5 for v in x) else 0.0
    pos = 1.0 if all(v > 0 for v in x) else 0.0
    return (big + pos) * np.sum(x)


def used_twice(x):
    sq = [v * v for v in x]
    return sum(sq) * sq[1] + sq[0]


def name_shadowed(x):
    v = x[0]
    ys = [v * v for v in x]       # this v is the comprehension's own
    return v * sum(ys)


def rebinds_its_iterable(x):
    xs = [x[0], x[1], x[2]]
    xs = [2.0 * v for v in xs]
    return xs[0] * xs[1] * xs[2]


def dict_comprehension(p):
    g = {k: v * v for k, v in p.items()}
    return g["a"] + 3.0 * g["b"]


def dict_of_gradient_like_values(p, x):
    scaled = {k: np.sum(w * x) * w for k, w in p.items() if k != "skip"}
    return sum(np.sum(s) for s in scaled.values())


def mlp_loss(Ws, bs, rows):
    return np.sum(np.stack([_net(Ws, bs, r) for r in rows]) ** 2)


def _net(Ws, bs, r):
    h = r
    for W, b in zip(Ws, bs):
        h = np.tanh(W @ h + b)
    return h


def _norms(rows):
    return [np.sum(r * r) for r in rows]


def helper_with_a_comprehension(m):
    return sum(_norms(m)) * np.sum(np.stack(_norms(m)))


def penalty_after_a_user_call(Ws, bs, x):
    return np.sum(_net(Ws, bs, x)) + 0.1 * sum(np.sum(W ** 2) for W in Ws)


def generator_looped_over(x):
    total = 0.0
    for y in (np.sin(v) for v in x):
        total = total + y * y
    return total


def lambda_of_a_generator():
    return lambda x: sum(v * v for v in x)


RNG = np.random.default_rng(0)
WS = [RNG.standard_normal((4, 3)), RNG.standard_normal((2, 4))]
BS = [RNG.standard_normal(4), RNG.standard_normal(2)]
ROWS = RNG.standard_normal((5, 3))

CASES = [
    (sum_of_squares_gen, (X,), 0),
    (filtered_list, (X,), 0),
    (dot_by_zip, (X, Y), (0, 1)),
    (weighted_by_enumerate, (X,), 0),
    (nested_clauses, (X,), 0),
    (nested_comprehensions, (M,), 0),
    (inside_a_loop, (X,), 0),
    (stacked_rows, (M,), 0),
    (mapped, (X,), 0),
    (mapped_pairs, (X, Y), (0, 1)),
    (maxed_and_tupled, (X,), 0),
    (any_all, (X,), 0),
    (used_twice, (X,), 0),
    (name_shadowed, (X,), 0),
    (rebinds_its_iterable, (X,), 0),
    (dict_comprehension, ({"a": 1.5, "b": -2.0},), 0),
    (dict_of_gradient_like_values, ({"a": X.copy(), "b": Y.copy(), "skip": X * 3}, M[0]), (0, 1)),
    (mlp_loss, (WS, BS, ROWS), (0, 1, 2)),
    (helper_with_a_comprehension, (M,), 0),
    (penalty_after_a_user_call, (WS, BS, ROWS[0]), (0, 1, 2)),
    (generator_looped_over, (X,), 0),
    (lambda_of_a_generator(), (X,), 0),
]


@pytest.mark.parametrize("f, args, wrt", CASES,
                         ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_each_comprehension_form_matches_finite_differences(f, args, wrt):
    check_grads(f, args, wrt=wrt)


def test_a_generator_of_squares_has_gradient_two_x():
    assert np.allclose(sg.grad(sum_of_squares_gen)(X), 2 * X)


def test_the_filter_keeps_only_the_even_indices():
    # (2 x0)(2 x2) = 4 x0 x2: x1 is filtered out
    assert np.allclose(sg.grad(filtered_list)(X), [4 * X[2], 0.0, 4 * X[0]])


def test_zip_and_enumerate_give_the_hand_derived_gradients():
    dx, dy = sg.grad(dot_by_zip, wrt=(0, 1))(X, Y)
    assert np.allclose(dx, Y) and np.allclose(dy, X)
    assert np.allclose(sg.grad(weighted_by_enumerate)(X), 2 * np.arange(1, 4) * X)


def test_nested_for_clauses_sum_the_strict_lower_triangle():
    # x1 x0 + x2 x0 + x2 x1
    assert np.allclose(sg.grad(nested_clauses)(X), [X[1] + X[2], X[0] + X[2], X[0] + X[1]])


def test_a_dict_comprehension_gives_a_dict_gradient():
    g = sg.grad(dict_comprehension)({"a": 1.5, "b": -2.0})
    assert g == pytest.approx({"a": 3.0, "b": -12.0})


def test_the_comprehension_variable_does_not_clobber_the_users_name():
    # v is x[0] outside the comprehension: d/dx (x0 * sum(x**2)) = sum(x**2) e0 + 2 x0 x
    expected = 2 * X[0] * X
    expected[0] += np.sum(X ** 2)
    assert np.allclose(sg.grad(name_shadowed)(X), expected)
    assert name_shadowed(X) == pytest.approx(sg.value_and_grad(name_shadowed)(X)[0])


def test_map_of_a_module_function_is_the_comprehension():
    assert np.allclose(sg.grad(mapped)(X), 2 * X + 1 / np.cosh(X) ** 2 + np.cos(X))


def test_the_mlp_written_with_zip_and_stack_matches_the_explicit_loop():
    def explicit(Ws, bs, rows):
        outs = []
        for r in rows:
            outs.append(_net(Ws, bs, r))
        return np.sum(np.stack(outs) ** 2)
    got = sg.grad(mlp_loss, wrt=(0, 1))(WS, BS, ROWS)
    want = sg.grad(explicit, wrt=(0, 1))(WS, BS, ROWS)
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        assert np.allclose(g, w)


def test_the_generated_source_is_the_loop_a_person_would_write():
    source = sg.source(name_shadowed)
    forward = source.split("def name_shadowed_backward")[0]
    assert "ys = []" in forward and "ys.append(" in forward
    # the comprehension's v is renamed apart from the user's v
    assert "v = x[0]" in forward and "v_2 = x[i]" in forward
    # one comment for the comprehension's line, not one per block it became
    assert forward.count("# ys = [v * v for v in x]") == 1
    assert "grad of: ys = [v * v for v in x]" in source
    # a generator summed builds the list of its terms
    summed = sg.source(sum_of_squares_gen)
    assert "terms = []" in summed and "terms.append(" in summed and "sum(terms)" in summed


def _line_of(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, line in enumerate(lines) if text in line)


def set_comprehension(x):
    s = {v for v in x}
    return np.sum(x) * len(s)


def generator_kept(x):
    g = (v * v for v in x)
    return sum(g)


def in_a_branch(x, c):
    ys = [v for v in x] if c else [0.0]
    return sum(ys)


def after_a_mutation(x):
    lst = [x[0], x[1]]
    total = lst.pop() + sum(v for v in lst)
    return total


def map_of_a_local(x):
    f = np.sin
    return sum(map(f, x))


def map_kept(x):
    m = map(np.sin, x)      # an iterator: a second sum(m) would be 0
    return sum(m)


def in_a_while_condition(x):
    y = x
    while sum(v for v in y) < 10.0:
        y = y * 2.0
    return np.sum(y)


REFUSED = [
    (set_comprehension, (X,), "set comprehension", "s = {v for v in x}"),
    (generator_kept, (X,), "generator expression", "g = (v * v for v in x)"),
    (in_a_branch, (X, True), "evaluated only sometimes", "ys = [v for v in x] if c"),
    (after_a_mutation, (X,), "may change what it reads", "total = lst.pop()"),
    (map_of_a_local, (X,), "map(...) of a lambda or of a function held in a local", "map(f, x)"),
    (map_kept, (X,), "map(...) is supported only as the argument", "m = map(np.sin, x)"),
    (in_a_while_condition, (X,), "while condition", "while sum(v for v in y)"),
]


@pytest.mark.parametrize("f, args, words, line", REFUSED, ids=[c[0].__name__ for c in REFUSED])
def test_what_cannot_be_lowered_exactly_is_refused_at_its_line(f, args, words, line):
    with pytest.raises(sg.UnsupportedError) as info:
        sg.grad(f)(*args)
    assert words in info.value.message
    assert info.value.filename == __file__
    assert info.value.lineno == _line_of(f, line)


def test_an_error_inside_a_comprehension_names_the_users_line():
    def calls_an_unknown(x):
        return sum(_opaque(v) for v in x)
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(calls_an_unknown)(X)
    assert info.value.lineno == _line_of(calls_an_unknown, "return sum(_opaque(v)")


_opaque = np.frompyfunc(lambda v: v, 1, 1)


def _append_one(lst):
    lst.append(1.0)
    return 0.0


def after_a_helper_that_appends(x):
    lst = [x[0]]
    return _append_one(lst) + sum(v * v for v in lst)


def test_a_comprehension_after_a_helper_that_writes_into_what_it_reads_is_refused():
    with pytest.raises(sg.UnsupportedError) as info:
        sg.grad(after_a_helper_that_appends)(X)
    assert "may change what it reads" in info.value.message
    assert info.value.lineno == _line_of(after_a_helper_that_appends, "return _append_one(lst)")


def test_iterating_a_dict_argument_iterates_its_keys():
    def over_keys(p):
        return sum(p[k] * p[k] for k in p)
    g = sg.grad(over_keys)({"a": 1.0, "b": 2.0})   # round 4: p's class is known, list(p) read
    assert g == {"a": 2.0, "b": 4.0}


def test_iterating_a_dict_srcgrad_cannot_tell_is_one_is_refused_at_the_comprehensions_line():
    def over_keys(ps):
        p = ps[0]
        return sum(p[k] * p[k] for k in p)
    with pytest.raises(sg.UnsupportedError) as info:
        sg.grad(over_keys)([{"a": 1.0, "b": 2.0}])
    assert info.value.lineno == _line_of(over_keys, "return sum(p[k] * p[k]")
    assert "list(d.items())" in str(info.value)


# ----- dict(...) -----


def dict_of_keywords(x):
    d = dict(a=x, b=x * 2.0)
    return np.sum(d["a"] * d["b"])


def dict_of_zip_and_copy(x):
    d = dict(zip(["a", "b"], [x, x * 3.0]))
    e = dict(d)                 # a copy: writing into it leaves d as it was
    e["a"] = e["a"] * 2.0
    return np.sum(d["a"] * e["a"] + e["b"])


def dict_of_items(p):
    q = dict(p.items())
    return np.sum(q["w"] ** 2)


def dict_with_keywords_and_a_mapping(p):
    return np.sum(dict(p, extra=1.0)["w"])


def test_dict_calls_build_the_dicts_python_builds():
    np.testing.assert_allclose(sg.grad(dict_of_keywords)(X), 4.0 * X)              # 2 x^2
    np.testing.assert_allclose(sg.grad(dict_of_zip_and_copy)(X), 4.0 * X + 3.0)    # 2 x^2 + 3x
    check_grads(dict_of_keywords, (X,))
    check_grads(dict_of_zip_and_copy, (X,))
    g = sg.grad(dict_of_items)({"w": X})
    assert set(g) == {"w"}
    np.testing.assert_allclose(g["w"], 2.0 * X)


def test_a_dict_call_mixing_a_mapping_and_keywords_merges_them():   # round 6: {**p, "extra": 1.0}
    g = sg.grad(dict_with_keywords_and_a_mapping)({"w": X})
    assert set(g) == {"w"}
    np.testing.assert_allclose(g["w"], np.ones_like(X))
