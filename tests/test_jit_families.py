"""jit=True, round 8: the families that fell back now compile (issue 15 item 1).

Tuple gradients (a tuple a function unpacks, of one type or several; a list display read
at constant positions), indices with None, Ellipsis and boolean masks, gradients summed
over broadcast axes, reductions along axes (sum, mean, max, min, var, std; an int, a
negative or a tuple axis, keepdims, ddof) and their gradients, reshapes of any array,
and an adjoint added into an indexed array where it may still be the zero number (the
nested loop with a break that crashed Numba's typing). Each function compiles without a
JitFallbackWarning, gives the NumPy gradient twice and agrees with central differences;
the Numba forms are also compared with NumPy directly. Skipped without Numba."""

import numpy as np
import pytest

pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad import runtime as rt  # noqa: E402
from test_jit_coverage import _compiles_and_matches  # noqa: E402


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
