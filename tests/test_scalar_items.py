"""Scalar loops of a composed gradient read float64 items as Python floats
(optimize/scalar_items.py): the results must be the NumPy code's, bit for bit."""

import warnings

import numpy as np
import pytest

import srcgrad as sg


def thermal(u, T_out, price):
    T = 19.0
    cost = 0.0
    for t in range(len(u)):
        T = T + 0.025 * (0.5 * (T_out[t] - T) + 0.95 * u[t])
        cost = cost + price[t] * u[t] * 0.25
        if T < 20.0:
            cost = cost + 5.0 * (20.0 - T) ** 2
    return cost


def ratio_loop(x, y):
    s = 0.0
    for t in range(len(x)):
        s = s + x[t] / y[t]
    return s


def writes_its_input(x, y):
    s = 0.0
    for t in range(len(x)):
        y[t] = x[t] * 2.0
        s = s + y[t] * x[t]
    return s


def inputs(dtype=np.float64, n=40):
    rng = np.random.default_rng(3)
    return (6.0 + 6.0 * rng.random(n)).astype(dtype), \
        (5.0 + rng.normal(0, 3, n)).astype(dtype), (0.2 + 0.1 * rng.random(n)).astype(dtype)


def sweeps_gradient(f, args, wrt=0):
    """The gradient the two sweeps compute (NumPy scalars): value_and_grad runs them."""
    return sg.value_and_grad(f, wrt=wrt)(*args)[1]


def first_and_composed(f, args, wrt=0):
    """The two sweeps' gradient and the composed code's (what ``grad`` runs)."""
    first = sweeps_gradient(f, args, wrt)
    composed = sg.grad(f, wrt=wrt)(*args)
    assert "gradient_" in sg.source(f, wrt, args=args, composed=True)   # one was composed
    return first, composed


def test_a_float64_scalar_loop_runs_on_python_floats_with_the_same_gradient():
    args = inputs()
    text = sg.source(thermal, args=args, composed=True)
    assert "rt.items(" in text and "u_items[t]" in text
    first, composed = first_and_composed(thermal, args)
    assert composed.dtype == np.float64 and type(composed) is np.ndarray
    np.testing.assert_array_equal(composed, first)
    sg.gradcheck(thermal, args, wrt=0)


def test_float32_items_keep_float32_arithmetic_in_the_composed_gradient():
    args = inputs(np.float32)
    first, composed = first_and_composed(thermal, args)
    assert composed.dtype == first.dtype == np.float32
    np.testing.assert_array_equal(composed, first)


def test_one_float32_array_among_float64_ones_keeps_every_loop_on_numpy_scalars():
    u, T_out, price = inputs()
    args = (u, T_out.astype(np.float32), price)
    first, composed = first_and_composed(thermal, args)
    np.testing.assert_array_equal(composed, first)


def test_integer_items_give_the_same_gradient():
    u, T_out, price = inputs()
    args = (u, np.round(T_out).astype(np.int64), np.arange(len(u), dtype=np.int64))
    first, composed = first_and_composed(thermal, args)
    np.testing.assert_array_equal(composed, first)


def test_division_by_a_zero_item_gives_inf_with_numpys_warning_not_an_exception():
    x, y = np.linspace(1.0, 3.0, 20), np.linspace(-1.0, 4.0, 20)
    y[4] = 0.0
    assert "rt.items(" not in sg.source(ratio_loop, args=(x, y), composed=True)
    g = sg.grad(ratio_loop, wrt=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        first = sweeps_gradient(ratio_loop, (x, y), wrt=1)
    with pytest.warns(RuntimeWarning):
        composed = g(x, y)
    np.testing.assert_array_equal(composed, first)
    assert not np.isfinite(composed[4])


def test_an_array_written_in_the_loop_is_read_from_the_array():
    x = np.linspace(-2.0, 3.5, 20)
    text = sg.source(writes_its_input, args=(x, np.zeros(20)), composed=True)
    assert "y_items" not in text
    g = sg.grad(writes_its_input)
    first = sweeps_gradient(writes_its_input, (x, np.zeros(20)))
    composed = g(x, np.zeros(20))
    np.testing.assert_array_equal(composed, first)
    np.testing.assert_allclose(composed, 4.0 * x)   # s = sum 2 x_t^2


def test_a_short_vector_runs_on_numpy_scalars_with_the_same_gradient():
    args = inputs(n=5)
    assert "rt.items(" in sg.source(thermal, args=args, composed=True)
    first, composed = first_and_composed(thermal, args)
    np.testing.assert_array_equal(composed, first)


def test_a_float64_subclass_is_not_read_as_python_floats():
    class Tagged(np.ndarray):
        pass
    u, T_out, price = inputs()
    args = (u.view(Tagged), T_out, price)
    first, composed = first_and_composed(thermal, args)
    np.testing.assert_array_equal(np.asarray(composed), np.asarray(first))


def dot_loop(x, y):
    s = 0.0
    for t in range(len(x)):
        s = s + x[t] * y[t]
    return s


def test_a_forward_loop_left_with_nothing_to_compute_still_compiles_and_reads_its_items():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(30), rng.standard_normal(30)
    first, composed = first_and_composed(dot_loop, (x, y), wrt=(0, 1))
    for a, b in zip(first, composed):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(composed[0], y)
    with pytest.raises(IndexError):
        sg.grad(dot_loop, wrt=(0, 1))(x, y[:20])


# The adjoint's first contributions in a step, ``a[t] += e1 ... a[t] += en``, become one
# ``a[t] = 0.0 + e1 + ... + en`` in the loop on items (a[t] is 0.0 when each step begins).

def two_contributions(u, c):
    s = 0.0
    for t in range(len(u)):
        s = s + c[t] * u[t]
        s = s + (c[t] - 1.0) * u[t] * 0.5
    return s


def test_two_contributions_to_an_item_are_added_in_one_statement_bit_for_bit():
    u = np.linspace(-1.0, 2.0, 30)
    c = np.linspace(-3.0, 3.0, 30)
    c[3], c[4] = -0.0, 1.0   # contributions of -0.0: the item stays +0.0 as before
    text = sg.source(two_contributions, args=(u, c), composed=True)
    assert "du_items[t] = 0.0 + " in text and "du[t] += " in text   # NumPy's loop as written
    first, composed = first_and_composed(two_contributions, (u, c))
    np.testing.assert_array_equal(composed, first)
    np.testing.assert_array_equal(np.signbit(composed), np.signbit(first))
    np.testing.assert_allclose(composed, c + (c - 1.0) * 0.5)
    for dtype in (np.float32, np.float16):   # the loop on NumPy scalars, as written
        args = (u.astype(dtype), c.astype(dtype))
        first, composed = first_and_composed(two_contributions, args)
        assert composed.dtype == dtype
        np.testing.assert_array_equal(composed, first)


def _rewritten(source):
    """``source``'s function after scalar_items.run, and its text."""
    import gast
    from srcgrad import runtime
    from srcgrad.codegen import emit
    from srcgrad.optimize import scalar_items
    node = gast.parse(source).body[0]
    params = [a.id for a in node.args.args]
    made = scalar_items.run(node.body, set(params))
    assert made
    text = emit.to_source([node])
    namespace = {"rt": runtime}
    exec(compile(text, "<rewritten>", "exec"), namespace)
    return namespace[node.name], text


@pytest.mark.parametrize("body, merged", [
    # both contributions at the second
    ("d[t] += c[t] * 2.0\n    k = c[t] * 3.0\n    d[t] += k", "d_items[t] = 0.0 + c_items[t] * 2.0 + k"),
    # k is rebound between: only the first is a first contribution
    ("d[t] += k\n    k = c[t] * 3.0\n    d[t] += k", "d_items[t] = 0.0 + k\n"),
    # a continue between could skip the second
    ("d[t] -= c[t]\n    if c[t] > 0.0:\n        continue\n    d[t] += c[t]", "d_items[t] = 0.0 - c_items[t]\n"),
    # d[t] read between: only the first
    ("d[t] += c[t]\n    k = d[t] * 2.0\n    d[t] += k", "d_items[t] = 0.0 + c_items[t]\n"),
])
def test_first_contributions_merge_only_what_computes_the_same(body, merged):
    source = ("def f(x, c):\n    k = 1.5\n    d = rt.owned_zeros(x)\n"
              "    for t in reversed(range(len(x))):\n        " + body.replace("\n    ", "\n        ")
              + "\n    return d\n")
    f, text = _rewritten(source)
    assert merged in text and "else:" in text
    namespace = {"rt": __import__("srcgrad").runtime}
    exec(source, namespace)
    x = np.zeros(20)
    c = np.linspace(-2.0, 2.0, 20)
    c[7] = -0.0
    for dtype in (np.float64, np.float32):
        want = namespace["f"](x.astype(dtype), c.astype(dtype))
        got = f(x.astype(dtype), c.astype(dtype))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("loop", [
    "for t in range(1, len(x)):",   # a start that may be negative: -1 and n - 1 are one item
    # another loop's index: the same item each step
    "for s in range(3):\n        k = 1.0\n    for t in range(len(x)):\n        d[s] += 0.0",
])
def test_no_first_contributions_without_a_zero_item_each_step(loop):
    source = ("def f(x, c):\n    d = rt.owned_zeros(x)\n    " + loop
              + "\n        d[t] += c[t]\n        d[t] += c[t] * 2.0\n    return d\n")
    _, text = _rewritten(source)
    assert "0.0 +" not in text and "else:" not in text


def test_no_first_contributions_where_the_adjoint_is_written_before_the_loop():
    source = ("def f(x, c):\n    d = rt.owned_zeros(x)\n    d[0] = 1.0\n"
              "    for t in range(len(x)):\n        d[t] += c[t]\n    return d\n")
    _, text = _rewritten(source)
    assert "0.0 +" not in text
