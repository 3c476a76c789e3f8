"""jit=True, round 8: the families that fell back now compile (issue 15 item 1).

Tuple gradients (a tuple a function unpacks, of one type or several; a list display read
at constant positions), indices with None, Ellipsis and boolean masks, gradients summed
over broadcast axes, reductions along axes (sum, mean, max, min, var, std; an int, a
negative or a tuple axis, keepdims, ddof) and their gradients, reshapes of any array,
and an adjoint added into an indexed array where it may still be the zero number (the
nested loop with a break that crashed Numba's typing). Each function compiles without a
JitFallbackWarning, gives the NumPy gradient twice and agrees with central differences;
the Numba forms are also compared with NumPy directly. Skipped without Numba."""

import math
import warnings
from math import log as ln

import numpy as np
import pytest

pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad import runtime as rt  # noqa: E402
from srcgrad.jit import JitFallbackWarning  # noqa: E402
from test_jit_coverage import _compiles_and_matches, _quiet  # noqa: E402

import functions  # noqa: E402 (tests/functions.py: the catalogue)


rng = np.random.default_rng(8)
M = rng.normal(size=(3, 4))
T = rng.normal(size=(2, 3, 4))
V = rng.normal(size=4)


# ----- tuple gradients -----

def _moments(x, a):
    return np.sum(x) * a, x * a   # a number and an array: a tuple of two types


def unpacks_a_pair(x, a):
    p, q = _moments(x, a)
    return p + np.sum(np.sin(q) * q)


def unpacks_numbers(a, b):
    (p, q), r = (a * b, a - b), a
    return p * q * r + q


def record_of_arrays(x, y):
    parts = [x, y * 2.0, x * y]   # read only at constant positions: a tuple
    return np.sum(parts[2] * parts[0] + np.cos(parts[-2]))


@pytest.mark.parametrize("f, args, wrt", [
    (unpacks_a_pair, (V, 1.3), (0, 1)),
    (unpacks_numbers, (0.7, -1.2), (0, 1)),
    (record_of_arrays, (V, V[::-1].copy()), (0, 1)),
])
def test_tuple_gradients_compile(f, args, wrt):
    _compiles_and_matches(f, *args, wrt=wrt)


def test_a_record_is_a_tuple_and_other_lists_stay_lists():
    import gast
    from srcgrad.codegen import emit
    from srcgrad.jit import displays
    source = sg.grad(record_of_arrays, (0, 1), jit=True).jit_source(V, V)
    assert "parts = x, y * 2.0, x * y" in source or "parts = (x, y * 2.0, x * y)" in source
    tree = gast.parse("def f(x, i, dv):\n"
                      "    a = [x, x]\n    b = [x, x]\n    c = [x, x]\n    d = [x, x]\n"
                      "    e = [x]\n    e = [x, x]\n"
                      "    b.append(x)\n    u = c[i]\n    v = g(d)\n"
                      "    w = a[-1] + len(a) + a[0] + e[0]\n"
                      "    da = _jrt.add_at(0.0, a, 1, dv)\n    return b, u, v, w\n")
    displays.as_tuples(tree.body[0])
    text = emit.to_source([tree.body[0]])
    assert "a = x, x" in text or "a = (x, x)" in text   # constant reads, len, add_at
    for kept in ("b", "c", "d", "e"):   # appended, a runtime index, passed on, bound twice
        assert f"{kept} = [x, x]" in text


# ----- indices with None, Ellipsis and masks -----

def new_axis_outer(x):
    return np.sum(x[:, None] * x[None, :] * 0.7)


def ellipsis_rows(m):
    return np.sum(np.sin(m[1, ...]) * m[..., 2][1])


def masked_columns(m):
    keep = np.array([True, False, True, True])
    return np.sum(m[:, keep] ** 2) + np.sum(m[keep[:3]] * 3.0)


@pytest.mark.parametrize("f, x", [(new_axis_outer, V), (ellipsis_rows, M), (masked_columns, M)])
def test_indices_with_none_ellipsis_and_masks_compile(f, x):
    _compiles_and_matches(f, x)


# ----- broadcasts and reductions along axes -----

def rows_plus_bias(m, b):
    return np.sum(np.tanh(m + b) * m)   # b's gradient summed over the rows


def column_scale(m, c):
    return np.sum((m * c) ** 2)   # c of shape (3, 1): summed over a kept axis


def moments_along_axes(t):
    return np.sum(t.mean(axis=-1) ** 2) + np.sum(np.var(t, axis=(0, 2)) * 1.5) + \
        np.sum(t.std(axis=1, keepdims=True, ddof=1) * t) + np.sum(t.sum(axis=(0, 1)) ** 3)


def extremes_along_axes(m):
    return np.sum(np.max(m, axis=1) ** 2) + np.sum(m.min(axis=0, keepdims=True) * m)


def normalise_rows(m):
    mu = m.mean(axis=1, keepdims=True)
    s = np.sqrt(((m - mu) ** 2).mean(axis=1, keepdims=True) + 1e-3)
    return np.sum((m - mu) / s * np.arange(4.0))


@pytest.mark.parametrize("f, args, wrt", [
    (rows_plus_bias, (M, V), (0, 1)),
    (column_scale, (M, np.array([[0.5], [1.5], [-2.0]])), (0, 1)),
    (moments_along_axes, (T,), 0),
    (extremes_along_axes, (M,), 0),
    (normalise_rows, (M,), 0),
])
def test_broadcasts_and_reductions_along_axes_compile(f, args, wrt):
    _compiles_and_matches(f, *args, wrt=wrt)


def test_ties_share_a_maximum_along_an_axis():
    m = np.array([[1.0, 3.0, 3.0], [2.0, 0.5, -1.0]])
    g = _compiles_and_matches(lambda m: np.sum(np.max(m, axis=1) * np.array([2.0, 5.0])), m)
    np.testing.assert_array_equal(g(m), [[0.0, 1.0, 1.0], [5.0, 0.0, 0.0]])   # by hand


def test_reductions_equal_numpys():
    from numba import njit
    from srcgrad.jit import runtime as jrt

    @njit
    def run(x):
        return (jrt.reduce_sum(x, (0, 2), False, 0), jrt.reduce_mean(x, -1, True, 0),
                jrt.reduce_max(x, 1, False, 0), jrt.reduce_min(x, (2, 0), True, 0),
                jrt.reduce_var(x, 0, False, 1), jrt.reduce_std(x, (0, 1, 2), False, 0))
    x = rng.normal(size=(3, 4, 5))
    x[1, 2, 3] = np.nan   # max and min propagate it
    want = (x.sum(axis=(0, 2)), x.mean(axis=-1, keepdims=True), x.max(axis=1),
            x.min(axis=(2, 0), keepdims=True), x.var(axis=0, ddof=1), x.std())
    for got, w in zip(run(x), want):
        assert np.shape(got) == np.shape(w)
        np.testing.assert_allclose(got, w, rtol=1e-13, equal_nan=True)

    @njit
    def empty_max(x):
        return jrt.reduce_max(x, 0, False, 0)
    with pytest.raises(ValueError):   # NumPy: no identity; the NumPy gradient runs
        empty_max(np.ones((0, 3)))


def test_shape_helpers_equal_the_numpy_helpers():
    from numba import njit
    from srcgrad.jit import runtime as jrt

    @njit
    def run(g3, g2, v, m):
        return (jrt.unbroadcast(g3, m), jrt.unbroadcast(g2, v), jrt.unbroadcast(g2, (3, 1)),
                jrt.unreduce(v[:3], m, 1, False), jrt.unreduce(v[:4].reshape(1, 4), m, 0, True),
                jrt.reduction_size(m, (0, 1), 1), jrt.unreduce_like(v[:3], m, -1, False),
                jrt.reshape(m.T, (2, 6)))
    g3, g2 = rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4))
    v, m = rng.normal(size=4), rng.normal(size=(3, 4))
    want = (rt.unbroadcast(g3, m), rt.unbroadcast(g2, v), rt.unbroadcast(g2, (3, 1)),
            rt.unreduce(v[:3], m, 1, False), rt.unreduce(v[:4].reshape(1, 4), m, 0, True),
            rt.reduction_size(m, (0, 1), 1), rt.unreduce_like(v[:3], m, -1, False),
            np.reshape(m.T, (2, 6)))
    for got, w in zip(run(g3, g2, v, m), want):
        assert np.shape(got) == np.shape(w)
        np.testing.assert_allclose(got, w, rtol=1e-13)

    @njit
    def mismatch(g, m):
        return jrt.unbroadcast(g, m)
    with pytest.raises(ValueError):   # not a broadcast: the NumPy gradient runs
        mismatch(np.ones((3, 5)), np.ones((3, 4)))


# ----- reshapes -----

def reshapes(m):
    t = m.T.reshape(2, 6)          # a transposed array: Numba reshapes only contiguous ones
    return np.sum(t[1] * np.reshape(m, (-1,))[:6]) + np.sum(m.reshape(4, 3) ** 3)


def running_total(m):
    return np.sum(np.cumsum(m) * np.arange(12.0)) + np.sum(np.flip(m, None) * m)


def test_reshapes_and_whole_array_flips_compile():
    _compiles_and_matches(reshapes, M)
    jit = _compiles_and_matches(running_total, M)   # cumsum's gradient: np.flip(g, None)
    code = [line for line in jit.jit_source(M).splitlines() if not line.strip().startswith("#")]
    assert any("np.flip(" in line for line in code) and not any(", None)" in line for line in code)


# ----- an adjoint added into an indexed array while it may be the zero number -----

def rows_until_large(x):
    s = 0.0
    for row in x:
        for v in row:
            if v * v > 2.0:
                break
            s = s + np.sin(v) * v
        s = s * 1.5
    return s


@pytest.mark.parametrize("x", [np.array([[0.3, -0.2, 2.0, 0.1], [0.5, 0.4, 0.2, -0.9]]),
                               np.array([[2.5, 0.2], [0.1, -0.3]]),      # a row stops at once
                               np.array([[0.1, 0.2], [0.3, 0.4]])])      # no break
def test_nested_loops_with_a_break_compile(x):
    _compiles_and_matches(rows_until_large, x)


def test_a_zero_adjoint_added_into_an_indexed_array_adds_zero():
    from numba import njit
    from srcgrad.jit import runtime as jrt

    @njit
    def run(dx, flag):
        v = None
        if flag:
            v = np.ones(3)
        jrt.iadd_at(dx, 1, v)
        jrt.isub_at(dx, slice(0, 1, None), v)
        return dx
    np.testing.assert_array_equal(run(np.zeros((2, 3)), False), np.zeros((2, 3)))
    np.testing.assert_array_equal(run(np.zeros((2, 3)), True), [[-1.0] * 3, [1.0] * 3])


# ----- writes through a mask or an integer array -----

def write_through_mask(x):
    v = x * 1.5
    v[x < 0] = np.sin(x[x < 0])
    return np.sum(v * v)


def write_repeated_positions(x):
    v = np.zeros(5)
    v[np.array([1, 3, 1, -1])] = x * x   # position 1 twice: the later write wins
    return np.sum(v * np.arange(1.0, 6.0))


def test_writes_through_masks_and_integer_arrays_compile():
    x = np.array([0.4, -1.2, 0.9, -0.3])
    _compiles_and_matches(write_through_mask, x)
    g = _compiles_and_matches(write_repeated_positions, x)
    # by hand: x[0] goes to v[1] but is overwritten by x[2]; x[1] to v[3], x[3] to v[4]
    np.testing.assert_allclose(g(x), [0.0, 2 * x[1] * 4.0, 2 * x[2] * 2.0, 2 * x[3] * 5.0])


# ----- round 9: helpers of products, builtins, math, clip and transposes -----

def products_along_axes(m):
    return np.sum(m.prod(axis=1) * np.array([1.0, -2.0, 0.5])) + m.prod() + \
        np.sum(np.prod(m, axis=(0,), keepdims=True) * m)


def test_products_along_axes_compile():
    m = rng.normal(size=(3, 4))
    _compiles_and_matches(products_along_axes, m)
    with_zero = m.copy()
    with_zero[1, 2] = 0.0   # prod_others divides by nothing: the other entries' product
    g = _compiles_and_matches(lambda m: np.sum(m.prod(axis=1)), with_zero)
    want = np.array([[np.prod(np.delete(row, j)) for j in range(4)] for row in with_zero])
    np.testing.assert_allclose(g(with_zero), want, rtol=1e-14)   # by hand


def builtin_reductions(x, a):
    return sum([a * a, a * x[0], x[2]]) + sum(x) * a


def builtin_extrema(a, b, c):
    return max(a, b) * min(b, c) + max(a, b, c)


def array_extrema(x):
    return max(x[0], x[1]) * min(x[1], x[2]) + max(x)


def test_builtin_sum_min_max_compile():
    x = np.array([0.3, -1.1, 0.8, 0.2])
    _compiles_and_matches(builtin_reductions, x, 1.7, wrt=(0, 1))
    _compiles_and_matches(builtin_extrema, 0.4, -0.6, 1.3, wrt=(0, 1, 2))
    _compiles_and_matches(array_extrema, x)


def test_ties_of_builtin_max_and_min_share_the_gradient():
    # by hand, a = b = 0.5 > c = -1: max(a, b) ties (each gets half of min(b, c) = -1),
    # min(b, c) is c (it gets max(a, b) = 0.5), max(a, b, c) ties (each gets half of 1)
    got = _compiles_and_matches(builtin_extrema, 0.5, 0.5, -1.0, wrt=(0, 1, 2))(0.5, 0.5, -1.0)
    np.testing.assert_allclose(got, (-0.5 + 0.5, -0.5 + 0.5, 0.5), rtol=1e-15)
    tied = np.array([2.0, 0.5, 2.0])
    np.testing.assert_allclose(_compiles_and_matches(lambda x: max(x) * 3.0, tied)(tied),
                               [1.5, 0.0, 1.5], rtol=1e-15)


def math_of_numbers(c, a):
    return math.log(c) * a + math.sin(a) * math.cos(c) + math.exp(a) + ln(c + 1.0) + \
        math.sqrt(c) + math.tanh(a)


def test_math_functions_compile_and_raise_where_python_raises():
    _compiles_and_matches(math_of_numbers, 2.0, 0.5, wrt=(0, 1))
    _compiles_and_matches(functions.helper_other_module_scalar, 0.7)
    jit = sg.grad(math_of_numbers, (0, 1), jit=True)
    _quiet(jit, 2.0, 0.5)
    for bad in [(-1.0, 0.5), (0.0, 0.5), (2.0, math.inf), (2.0, 800.0)]:
        with pytest.raises((ValueError, OverflowError)) as numpy_error:
            sg.grad(math_of_numbers, (0, 1))(*bad)
        with pytest.raises(numpy_error.type):   # Numba's log gives nan or -inf here
            jit(*bad)
    np.testing.assert_allclose(_quiet(jit, 2.0, 0.5), sg.grad(math_of_numbers, (0, 1))(2.0, 0.5),
                               rtol=1e-13)


def _wraps_in_int8(x):
    k = np.int8(100)
    return float(k + k) * x[0] + np.sum(x * x)   # NumPy: -56; Numba's int64 would give 200


def _int_then_float(x, n):
    m = np.int16(300)
    return float(n * 3) * np.sum(x) + float(m) * x[1] + (x[0] if m > 2 else 0.0)


def test_narrow_integer_arithmetic_runs_the_numpy_gradient_and_says_where():
    x = np.array([1.0, 2.0])
    with np.errstate(over="ignore"):
        want = sg.grad(_wraps_in_int8)(x)
        with pytest.warns(JitFallbackWarning, match=r"line \d+: .*int8 scalars") as record:
            got = sg.grad(_wraps_in_int8, jit=True)(x)
    np.testing.assert_array_equal(got, want)
    assert want[0] == -56.0 + 2.0
    assert f"{__file__}, line {_wraps_in_int8.__code__.co_firstlineno + 2}:" in str(record[0].message)
    # a narrow integer only converted or compared, and a Python int's arithmetic, compile
    _compiles_and_matches(_int_then_float, x, 20000)


def test_checked_math_calls_raise_where_python_raises():
    from numba import njit
    from srcgrad.jit.builtins_math import checked_math
    log, exp, sin, floor = (checked_math(f) for f in (math.log, math.exp, math.sin, math.floor))

    @njit
    def run(a, b):
        return log(a) + exp(b) + sin(a) + floor(a)
    assert run(2.0, 1.0) == math.log(2.0) + math.exp(1.0) + math.sin(2.0) + 2
    assert math.isnan(run(math.nan, 1.0))   # a NaN argument: NaN, as math gives
    for a, b in [(-1.0, 1.0), (0.0, 1.0), (2.0, 1000.0), (math.inf, 1.0)]:
        with pytest.raises(ValueError):
            run(a, b)


def clip_power_transpose(x, y, t):
    return np.sum(np.clip(x, -1.0, 1.0) * y) + np.sum(np.abs(x) ** y) + \
        np.sum(t.transpose(2, 0, 1)[1] * np.transpose(t, (-1, 0, 1))[0]) + np.sum(t.transpose() ** 2)


def test_clip_powers_and_transposes_compile():
    x = np.array([0.3, -1.7, 1.4, 0.6])
    _compiles_and_matches(clip_power_transpose, x, V * 0.5, T, wrt=(0, 1, 2))


def typing_gaps(x, y):
    v = np.array([x, y * 2.0])
    return np.sum(abs(x - y) * v[1]) + np.sum(x[[1, 1, 3]] * y[[0, -1, 2]]) + \
        x.sum().sum() * np.max(y).max()


def test_abs_array_displays_list_indices_and_methods_of_scalars_compile():
    x, y = np.array([0.3, -1.7, 1.4, 0.6]), np.array([1.1, 0.2, -0.5, 0.9])
    jit = _compiles_and_matches(typing_gaps, x, y, wrt=(0, 1))
    source = jit.jit_source(x, y)
    assert "np.array([1, 1, 3])" in source and "_jrt.builtin_abs(" in source
    assert "_jrt.array_of((" in source and "np.sum(x_sum)" in source


def test_abs_of_a_user_binding_is_not_rewritten():
    from srcgrad.jit import translate
    body = [gast_parse("abs = np.abs")]
    assert not translate._is_builtin("abs", body, _NoScope(), {})
    assert translate._is_builtin("abs", [], _NoScope(), {})


class _NoScope:
    closure, globals = {}, {}


def gast_parse(line):
    import gast
    return gast.parse(line).body[0]


def test_numba_forms_of_round_9_equal_the_numpy_helpers():
    from numba import njit
    from srcgrad.jit import runtime as jrt

    @njit
    def run(t, x, a, b):
        return (jrt.prod_others(t, (0, 2)), jrt.prod_others(t, -1), jrt.prod_others(x, None),
                jrt.builtin_sum_vjp(a, x), jrt.builtin_sum_vjp(a, (a, x, b)),
                jrt.minmax_vjp(a, b, (b, a, b)), jrt.minmax_vjp(a, x.max(), (x,)),
                jrt.inverse_axes((2, -3, 1), t), jrt.clip_below(x, -0.5, 0.5),
                jrt.clip_above(x, 0.5, -0.5), jrt.clip_below(x, 0.5, -0.5),
                jrt.log_or_zero(x), jrt.log_base(b), jrt.log_base_grad(a, b, b))
    t, x = rng.normal(size=(2, 3, 4)), np.array([0.3, -0.7, 0.9, 0.9, 0.0])
    a, b = 1.3, 2.5
    want = (rt.prod_others(t, (0, 2)), rt.prod_others(t, -1), rt.prod_others(x, None),
            rt.builtin_sum_vjp(a, x), rt.builtin_sum_vjp(a, [a, x, b]),
            rt.minmax_vjp(a, b, (b, a, b)), rt.minmax_vjp(a, x.max(), (x,)),
            rt.inverse_axes((2, -3, 1), t), rt.clip_below(x, -0.5, 0.5),
            rt.clip_above(x, 0.5, -0.5), rt.clip_below(x, 0.5, -0.5),
            rt.log_or_zero(x), rt.log_base(b), rt.log_base_grad(a, b, b))
    for got, w in zip(run(t, x, a, b), want):
        if isinstance(w, (list, tuple)):
            assert len(got) == len(w)
            for g, v in zip(got, w):
                np.testing.assert_allclose(g, v, rtol=1e-14)
        else:
            assert np.shape(got) == np.shape(w)
            np.testing.assert_allclose(got, w, rtol=1e-14)

    @njit
    def repeated(t):
        return jrt.inverse_axes((0, 0, 1), t)
    with pytest.raises(ValueError):   # NumPy's transpose refuses it: the NumPy gradient runs
        repeated(t)


# ----- names both the zero 0.0 and an array, predicted before Numba types them -----

def rnn(W, U, h0, xs):   # W7's shape: five adjoints reset to 0.0 in the loop become arrays
    h = h0
    for x_t in xs:
        h = np.tanh(h @ W.T + x_t @ U.T)
    return np.sum(h)


def test_adjoints_reset_in_a_loop_are_typed_in_one_compile(monkeypatch):
    from srcgrad.jit import dispatch
    tries = []
    compile_ = dispatch._compile

    def counted(dispatcher, args):
        try:
            return compile_(dispatcher, args)
        except Exception:
            tries.append(1)
            raise
    monkeypatch.setattr(dispatch, "_compile", counted)
    W, U = rng.normal(size=(5, 5)) / 3, rng.normal(size=(5, 3)) / 2
    h0, xs = rng.normal(size=(2, 5)), rng.normal(size=(4, 2, 3))
    jit = _compiles_and_matches(rnn, W, U, h0, xs, wrt=(0, 1))
    assert not tries   # no typing failed (there were five, one per name, before)
    entry, = jit._entries.values()
    assert entry.predicted == {"dh", "dU", "dU_T", "dW", "dW_T"} == entry.optional
    empty = np.zeros((0, 2, 3))   # no step: the adjoints stay zero, as NumPy's do
    want = sg.grad(rnn, (0, 1))(W, U, h0, empty)
    got = jit(W, U, h0, empty)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_a_prediction_is_made_only_where_numba_would_fail():
    import gast
    from srcgrad.jit import zeros
    tree = gast.parse(
        "def f(x, g, n):\n"
        "    a = 0.0\n    b = 0.0\n    c = 0.0\n    d = 0.0\n"
        "    b = np.transpose(g)\n"                 # straight code: Numba types each binding
        "    for i in range(n):\n"
        "        a = a + np.transpose(g)\n"         # an array in the loop: predicted
        "        c = c + g\n"                       # g may be a number: not predicted
        "        t = np.ascontiguousarray(g)\n"
        "        if i:\n"
        "            d = t * 2.0\n"                 # t is always an array: predicted
        "    return a, b, c, d\n").body[0]
    assert zeros.predicted(tree) == {"a", "d"}


def test_a_prediction_numba_refuses_is_dropped(monkeypatch):
    from srcgrad.jit import dispatch
    unpredict = dispatch._Entry._unpredict
    dropped = []

    def recorded(self):
        dropped.append(set(self.predicted))
        return unpredict(self)
    monkeypatch.setattr(dispatch._Entry, "_unpredict", recorded)

    def reset_and_refused(x, n):   # dx_T reset to 0.0 in the loop: predicted; Numba has no squeeze
        s = 0.0
        for _ in range(n):
            s = s + np.sum(x.T @ x)
        return s + np.sum(x.squeeze() ** 2)
    x = rng.normal(size=(3, 3))
    jit = sg.grad(reset_and_refused, jit=True)
    with pytest.warns(JitFallbackWarning, match="squeeze"):
        got = jit(x, 2)
    np.testing.assert_allclose(got, sg.grad(reset_and_refused)(x, 2), rtol=1e-13)
    assert dropped[0] == {"dx", "dx_T"}   # typed again without them, as before: it fails alike
    entry, = jit._entries.values()
    assert not entry.predicted and not entry.optional


# ----- global and closure arrays: parameters, read at each call -----

SCALES = np.array([0.5, -1.5, 2.0, 1.0])


def reads_a_global_array(x):
    return np.sum(np.tanh(x * SCALES) * SCALES)


def _closure_over(w):
    def reads_a_closure_array(x):
        return np.sum(x * w * x)
    return reads_a_closure_array


def test_global_and_closure_arrays_are_read_at_each_call(monkeypatch):
    x = np.array([0.3, -0.2, 0.9, 1.1])
    jit = _compiles_and_matches(reads_a_global_array, x)
    assert "def jit_reads_a_global_array(x, SCALES, _sg_buf):" in jit.jit_source(x)
    SCALES[1] = 4.0   # changed in place: the compiled code reads the new values
    try:
        np.testing.assert_allclose(_quiet(jit, x), sg.grad(reads_a_global_array)(x), rtol=1e-13)
        np.testing.assert_allclose(_quiet(jit, x), (1 - np.tanh(x * SCALES) ** 2) * SCALES ** 2,
                                   rtol=1e-13)   # by hand
    finally:
        SCALES[1] = -1.5
    monkeypatch.setitem(globals(), "SCALES", np.arange(4.0))   # rebound
    np.testing.assert_allclose(_quiet(jit, x), sg.grad(reads_a_global_array)(x), rtol=1e-13)
    w = np.array([1.0, 2.0, 3.0, -1.0])
    f = _closure_over(w)
    jit = _compiles_and_matches(f, x)
    w *= 2.0
    np.testing.assert_allclose(_quiet(jit, x), 2 * w * x, rtol=1e-15)   # by hand


# ----- batched matrix products -----

def batched_products(x, y):
    return np.sum(np.matmul(x, y) ** 2) + np.sum(x @ y * 0.5) + np.sum((x[0] @ y[1]) ** 3)


def test_batched_matmul_compiles():
    x, y = rng.normal(size=(2, 2, 3)), rng.normal(size=(2, 3, 4))
    _compiles_and_matches(batched_products, x, y, wrt=(0, 1))
    # by hand: d/dx sum(x @ y) is ones @ y^T per batch entry
    g = _compiles_and_matches(lambda x, y: np.sum(x @ y), x, y)
    np.testing.assert_allclose(g(x, y), np.ones((2, 2, 4)) @ np.swapaxes(y, -1, -2), rtol=1e-14)
    jit = sg.grad(lambda x, y: np.sum(x @ y), jit=True)
    with pytest.warns(JitFallbackWarning):   # other batch shapes: NumPy broadcasts them
        got = jit(x, rng.normal(size=(1, 3, 4)))
    assert got.shape == x.shape


# ----- calls that ran the NumPy gradient silently (ZeroAdjoint) now run compiled -----

def test_a_dead_stores_branch_is_dropped_and_add_grad_takes_a_none_zero(monkeypatch):
    from srcgrad.jit import JitGradFunction
    numpy_runs = []
    numpy_call = JitGradFunction._numpy

    def counted(self, args, grad_outputs):
        numpy_runs.append(1)
        return numpy_call(self, args, grad_outputs)
    monkeypatch.setattr(JitGradFunction, "_numpy", counted)
    x = np.array([0.4, -1.2, 0.9])
    for f in (functions.dead_store_reshape, functions.keyword_only_defaults):
        jit = _compiles_and_matches(f, x)
        np.testing.assert_allclose(jit(x), sg.grad(f)(x), rtol=1e-14)
    assert not numpy_runs   # before: need_grad of a certain zero, nz() inside add_grad
    # by hand: the dead store's branch is gone from the source, the gradient is 8 x[0] e_0
    np.testing.assert_allclose(sg.grad(functions.dead_store_reshape, jit=True)(x),
                               [8 * x[0], 0.0, 0.0], rtol=1e-15)
    assert "dv)" not in sg.grad(functions.dead_store_reshape, jit=True).jit_source(x)


# ----- Python's arithmetic on numbers: division by zero and powers raise -----

def _divides_numbers(a, b):
    return a * a / (b - 1.0) + a // (b + 2.0) + a % (b + 3.0)


def _divides_in_a_loop(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        s += float(x[i]) / c
    s /= c
    return s


def _powers_of_numbers(a, b):
    return (a - 1.0) ** b + a ** 2.5


def _numpy_scalars_divide(x):
    s = np.float64(1.0)
    return np.sum(x) / (s - 1.0) + x[0] * 2.0


def _divides_arrays_in_place(x, c):
    v = x * 2.0
    v /= c
    w = np.sin(x) / (x * x + c)   # an elementwise kernel
    return np.sum(v * w)


def test_numbers_divided_by_zero_raise_as_python_does():
    """Numba's NumPy error model gave inf where Python's float division raises
    ZeroDivisionError: the compiled gradient returned a number where the NumPy one raised."""
    x = np.array([0.5, 1.5, -2.0])
    _compiles_and_matches(_divides_numbers, 2.0, 0.5, wrt=(0, 1))
    _compiles_and_matches(_divides_in_a_loop, x, 0.7, wrt=0)
    _compiles_and_matches(_powers_of_numbers, 2.0, 0.5, wrt=(0, 1))
    cases = [(_divides_numbers, (2.0, 1.0), (0, 1)), (_divides_numbers, (2.0, -2.0), (0, 1)),
             (_divides_numbers, (2.0, -3.0), (0, 1)), (_divides_in_a_loop, (x, 0.0), 0),
             (_powers_of_numbers, (1.0, -1.0), (0, 1)), (_powers_of_numbers, (1e3, 400.0), (0, 1))]
    for f, args, wrt in cases:
        with pytest.raises((ZeroDivisionError, OverflowError)) as numpy_error:
            sg.grad(f, wrt)(*args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            with pytest.raises(numpy_error.type):
                sg.grad(f, wrt, jit=True)(*args)


def test_a_negative_number_to_a_fractional_power_gives_the_numpy_gradients_answer():
    # Python's (-1.5) ** 0.5 is complex: whatever the NumPy gradient does, jit does
    try:
        want = sg.grad(_powers_of_numbers, (0, 1))(-0.5, 0.5)
    except Exception as exc:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            with pytest.raises(type(exc)):
                sg.grad(_powers_of_numbers, (0, 1), jit=True)(-0.5, 0.5)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            got = sg.grad(_powers_of_numbers, (0, 1), jit=True)(-0.5, 0.5)
        np.testing.assert_allclose(got, want)


def test_numpy_scalars_and_arrays_divide_as_numpy_does():
    x = np.array([0.5, 1.5, -2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        want = sg.grad(_numpy_scalars_divide)(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            got = sg.grad(_numpy_scalars_divide, jit=True)(x)
    np.testing.assert_array_equal(got, want)   # inf: NumPy's scalars do not raise
    assert np.isinf(want).all()
    _compiles_and_matches(_divides_arrays_in_place, x, 0.7, wrt=(0, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        want = sg.grad(_divides_arrays_in_place, (0, 1))(x, 0.0)
        got = _quiet(sg.grad(_divides_arrays_in_place, (0, 1), jit=True), x, 0.0)
    for g, w in zip(got, want):   # arrays divided by zero: inf and NaN, compiled as NumPy's
        np.testing.assert_array_equal(g, w)
