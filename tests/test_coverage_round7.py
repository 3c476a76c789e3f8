"""Constructs and NumPy functions a new user's first scripts reach for (round 7): the walrus
operator ``:=`` (in ``if``/``while`` conditions, comprehensions, plain expressions and
short-circuit operands, lowered to assignments in Python's order by
transform/assignment_expressions.py), and NumPy functions that were refused. Each is
checked against central finite differences in float64 in reverse mode, forward mode
(``sg.jvp``) and second order (``sg.hessian``), and computed in float32 in float32;
what stays refused is a SrcgradError naming this file and line."""

import numpy as np
import pytest

from numpy.lib.stride_tricks import sliding_window_view

import srcgrad as sg
from srcgrad.errors import UnsupportedError
from srcgrad.testing import check_grads

RNG = np.random.default_rng(7)
X = np.array([0.9, -0.4, 1.3, 0.6, -1.1])


def fd_grad(f, x, h=1e-6):
    """Central differences of the scalar function ``f`` at ``x``."""
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def check_all(f, x=X, hessian=True):
    """Reverse mode, forward mode and the Hessian of the scalar ``f`` at ``x`` against
    central differences in float64, and its gradient in float32."""
    check_grads(f, (x,), atol=1e-6, rtol=1e-5)
    t = RNG.standard_normal(x.shape)
    out, dout = sg.jvp(f, (x,), (t,))
    np.testing.assert_allclose(out, f(x), rtol=1e-10)   # the value is NumPy's
    h = 1e-6
    np.testing.assert_allclose(dout, (f(x + h * t) - f(x - h * t)) / (2 * h), rtol=1e-6, atol=1e-7)
    if hessian:
        hess = sg.hessian(f)(x)
        grad = sg.grad(f)
        fd = np.stack([(grad(x + e) - grad(x - e)) / 2e-5 for e in np.eye(x.size) * 1e-5], axis=1)
        np.testing.assert_allclose(hess, fd, rtol=1e-5, atol=1e-6)
    g32 = sg.grad(f)(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, sg.grad(f)(x), rtol=2e-3, atol=2e-4)


def assert_refused(f, fragment, words, x=X):
    """``sg.grad(f)(x)`` raises UnsupportedError at the line of this file holding ``fragment``."""
    with pytest.raises(UnsupportedError) as info:
        sg.grad(f)(x)
    assert info.value.filename == __file__
    assert fragment in (info.value.source_line or ""), info.value
    assert words in str(info.value), str(info.value)


# ----- 1. the walrus operator -----

def walrus_in_if(x):
    if (n := np.sum(x * x)) > 1.0:
        return n * np.sin(x[0])
    return n


def walrus_in_while(x):
    y = x
    while (s := np.sum(y * y)) < 50.0:
        y = y * 1.5
    return s + np.sum(y ** 3)


def walrus_in_while_with_else_and_continue(x):
    y = x
    k = 0
    while (s := np.sum(y * y)) < 30.0:
        k += 1
        y = y * 1.3
        if k % 2 == 0:
            continue
        y = y + 0.1 * np.sin(y)
    else:
        y = y * s
    return np.sum(y)


def walrus_in_comprehension_filter(x):
    ys = [y * v for v in x if (y := np.sin(v) * 2) > 0.5]
    return sum(ys) + y


def walrus_in_generator_passed_to_sum(x):
    return sum(q for v in x if (q := v * v) > 0.3) * q


def walrus_in_plain_expressions(x):
    z = np.cos(x[0]) + (n := np.sin(x[1])) * n
    (k := np.exp(x))
    return z * (m := x[2]) + m + np.sum(k)


def walrus_rebinding_a_name_read_before_it(x):
    a = x[0]
    b = a * (a := x[1] * 3.0) + a
    return b * a


def walrus_right_of_or(x):
    v = (a := x[0]) > 2.0 or (b := x[1] * 3.0)
    w = (c := x[2]) < 0.0 and (d := x[3] ** 2)
    return v * a + w * c + b * x[4]


def walrus_in_a_branch_of_a_conditional_expression(x):
    t = (n := x[0] * 2) if x[1] > 0 else (n := x[2] ** 2)
    u = (p := x[3]) if x[1] < 0 else (p := np.exp(x[4]))
    return t * n + u * p


def walrus_in_call_arguments_and_return(x):
    y = np.where(x > 0, (s := np.sin(x)), np.cos(x))
    return np.sum(y * s) + np.dot((w := x * 2), w)


WALRUS = [walrus_in_if, walrus_in_while, walrus_in_while_with_else_and_continue,
          walrus_in_comprehension_filter, walrus_in_generator_passed_to_sum,
          walrus_in_plain_expressions, walrus_rebinding_a_name_read_before_it,
          walrus_right_of_or, walrus_in_a_branch_of_a_conditional_expression,
          walrus_in_call_arguments_and_return]


@pytest.mark.parametrize("f", WALRUS, ids=lambda f: f.__name__)
def test_walrus(f):
    check_all(f)


def walrus_in_a_chained_comparison(x):
    return np.sum(x) * (0.0 < x[0] < (n := x[1]))


def walrus_in_an_assignment_target(x):
    y = x.copy()
    y[(i := 2)] = 3.0
    return np.sum(y) * i


def walrus_rebinding_an_augmented_target(x):
    n = x[0]
    n += (n := x[1])
    return n


def walrus_loop_with_break_in_else(x):
    y = x
    for _ in range(3):
        while (s := np.sum(y)) < 40.0:
            y = y * 2
        else:
            break
    return s


@pytest.mark.parametrize("f, fragment, words", [
    (walrus_in_a_chained_comparison, "< (n := x[1])", "right of the first comparison"),
    (walrus_in_an_assignment_target, "y[(i := 2)] = 3.0", "assignment's target"),
    (walrus_rebinding_an_augmented_target, "n += (n := x[1])", "augmented assignment"),
    (walrus_loop_with_break_in_else, "break", "else clause of a while loop"),
], ids=lambda v: getattr(v, "__name__", "_"))
def test_walrus_whose_order_cannot_be_kept_is_refused_at_its_line(f, fragment, words):
    assert_refused(f, fragment, words)


def test_walrus_source_shows_the_assignment_before_the_condition():
    text = sg.source(walrus_in_if).split("def walrus_in_if_forward(x):")[1]
    assert text.index("n = np.sum(x_times_x)") < text.index("cond = n > 1.0")


# ----- 2. NumPy functions written with primitives (srcgrad/inlined.py's NUMPY_INLINED) -----

T6 = np.arange(5.0)


def ediff1d_plain(x):
    return np.sum(np.ediff1d(x) ** 3)


def ediff1d_with_ends(x):
    d = np.ediff1d(x, to_begin=x[0] * 2, to_end=[1.0, np.sin(x[1])])
    return np.sum(d ** 2 * np.arange(1.0, 8.0))


def insert_a_scalar(x):
    return np.sum(np.insert(x, 2, x[0] * 3) ** 3)


def insert_columns_along_an_axis(x):
    m = np.outer(x[:2], x)
    out = np.insert(m, [1, 3], x[:2, None] * x[4], axis=1)
    return np.sum(out ** 2 * np.arange(14.0).reshape(2, 7))


def insert_at_a_slice(x):
    return np.sum(np.insert(x, slice(1, 4), np.sin(x[0])) ** 3)


def polyfit_of_data(x):
    c = np.polyfit(T6, x, 2)
    return np.sum(c ** 2) + np.polyval(c, 0.5)


def polyfit_weighted_in_the_abscissae(x):
    c = np.polyfit(x, np.cos(T6), 2, w=T6 + 1.0)
    return np.sum(c * np.array([1.0, -2.0, 0.5]))


def polyfit_of_two_columns(x):
    ys = np.stack([x, x ** 2], axis=1)
    return np.sum(np.polyfit(T6, ys, 1) ** 2)


def broadcast_arrays_pair(x):
    a, b = np.broadcast_arrays(x[:, None], x[None, :3])
    return np.sum(a * b * np.sin(a))


def sliding_windows_1d(x):
    w = sliding_window_view(x, 3)
    return np.sum(np.mean(w, axis=-1) ** 2 * np.arange(1.0, 4.0))


def sliding_windows_2d_along_an_axis(x):
    m = np.outer(x, x[:3])
    w = np.lib.stride_tricks.sliding_window_view(m, 2, axis=0)
    return np.sum(w.max(axis=-1) ** 2) + np.sum(w[..., 0] * w[..., 1])


def vander_columns(x):   # (refused before 2026-12-07: no rule for numpy.vander)
    return np.sum(np.vander(x, 3) * np.arange(15.0).reshape(5, 3)) + np.sum(
        np.vander(x[:3], increasing=True) ** 2)


def fromiter_of_a_generator(x):   # (refused before 2026-12-07: no rule for numpy.fromiter)
    return np.sum(np.fromiter((v ** 2 * k for k, v in enumerate(x)), dtype=float) * x)


NUMPY_VERSIONS = [ediff1d_plain, ediff1d_with_ends, insert_a_scalar, insert_columns_along_an_axis,
                  insert_at_a_slice, polyfit_of_data, polyfit_weighted_in_the_abscissae,
                  polyfit_of_two_columns, broadcast_arrays_pair, sliding_windows_1d,
                  sliding_windows_2d_along_an_axis, vander_columns, fromiter_of_a_generator]


@pytest.mark.parametrize("f", NUMPY_VERSIONS, ids=lambda f: f.__name__)
def test_numpy_function_written_with_primitives(f):
    check_all(f)


def polyfit_full(x, flag):
    return np.sum(np.polyfit(T6, x, 2, full=flag)[0])


def test_polyfit_with_full_held_in_a_variable_stays_refused_at_its_line():
    # (full=True and cov=True written in the call differentiate: tests/test_coverage_round9.py)
    with pytest.raises(sg.NonDifferentiableError) as info:
        sg.grad(polyfit_full)(X, True)
    assert info.value.filename == __file__
    assert "full=flag" in info.value.source_line


# ----- 3. rules added to the tables -----

M = np.array([[0.9, -0.4, 1.3], [0.6, -1.1, 0.2]])


def maximum_reduce(x):
    return np.maximum.reduce(x) * np.sum(np.maximum.reduce(np.outer(x, x[:3]), axis=1) ** 2)


def minimum_reduce_keepdims(x):
    m = np.outer(x, x[:3])
    return np.minimum.reduce(x) + np.sum(np.sin(np.minimum.reduce(m, axis=0, keepdims=True) * m))


def multiply_accumulate(x):
    return np.sum(np.multiply.accumulate(x) * np.arange(1.0, 6.0)) + np.sum(
        np.multiply.accumulate(np.outer(x, x[:3]), axis=1) ** 2)




def sum_with_initial(x):
    m = np.outer(x, x[:3])
    return np.sum(x ** 2, initial=x[0]) * m.sum(axis=0, initial=1.5)[1] + np.sum(
        np.sum(m, axis=1, initial=2.0) ** 2)




def var_and_std_about_a_given_mean(x):
    m = np.outer(x, x[:3])
    mu = np.mean(m, axis=0, keepdims=True)
    return (np.var(x, mean=np.mean(x)) + np.sum(np.std(m, axis=0, mean=mu * 0.9, ddof=1) ** 3)
            + np.var(m, axis=1, mean=np.full((5, 1), 0.2) + x[:, None] * 0.1, keepdims=True)[2, 0])


def prod_where(x):
    m = np.outer(x, x[:3])
    return np.prod(x, where=x > 0) + np.sum(np.prod(m, axis=1, where=m < 0.5) ** 2)


RULES = [maximum_reduce, minimum_reduce_keepdims, multiply_accumulate, sum_with_initial,
         var_and_std_about_a_given_mean, prod_where]


@pytest.mark.parametrize("f", RULES, ids=lambda f: f.__name__)
def test_rule(f):
    check_all(f)


# ----- 4. x.flat read at once -----

def flat_reads(x):
    m = np.outer(x, x[:3]).T
    total = 0.0
    for v in m.flat:
        total = total + v * v
    return total * m.flat[4] + np.sum(m.flat[2:7] ** 3) + sum(np.sin(v) for v in x.flat) \
        + max(m.flat) + np.sum(np.asarray(m.flat) * np.arange(15.0))


def test_flat_reads():
    check_all(flat_reads)


def flat_kept_as_a_value(x):
    it = x.flat
    return it[0] * 2.0


def test_flat_kept_as_a_value_stays_refused_at_its_line():
    with pytest.raises(sg.NonDifferentiableError) as info:
        sg.grad(flat_kept_as_a_value)(X)
    assert info.value.filename == __file__
    assert "it = x.flat" in info.value.source_line


# ----- 5. np.pad with a statistic of the edge or a linear ramp -----

W10 = np.arange(1.0, 10.0)
W45 = np.arange(1.0, 21.0).reshape(4, 5)


def pad_by_maximum_and_mean(x):
    m = np.outer(x[:2], x[1:4])
    return (np.sum(np.pad(x * x, (1, 3), "maximum", stat_length=2) ** 3 * W10)
            + np.sum(np.cos(np.pad(m, ((1, 1), (0, 2)), mode="mean")) * W45))


def pad_by_minimum_and_median(x):
    m = np.outer(x[:2], x[1:4])
    return (np.sum(np.sin(np.pad(m, ((1, 1), (0, 2)), "minimum", stat_length=((1, 1), (2, 1)))) * W45)
            + np.sum(np.pad(x[:4] * x[1:], (2, 1), mode="median") * W10[:7]))


def pad_linear_ramp(x):
    m = np.outer(x[:2], x[1:4])
    return (np.sum(np.pad(x, (1, 3), mode="linear_ramp", end_values=(1.0, -2.0)) ** 3 * W10)
            + np.sum(np.sin(np.pad(m, ((1, 1), (0, 2)), "linear_ramp", end_values=((1.0, 2.0), (3.0, x[0])))) * W45))


@pytest.mark.parametrize("f", [pad_by_maximum_and_mean, pad_by_minimum_and_median, pad_linear_ramp],
                         ids=lambda f: f.__name__)
def test_pad_modes(f):
    check_all(f)


def _pad_with_ones(vector, iaxis_pad_width, iaxis, kwargs):
    vector[:iaxis_pad_width[0]] = 1.0
    vector[len(vector) - iaxis_pad_width[1]:] = 1.0


PAD_MODE = _pad_with_ones   # (a statistic held in a variable differentiates: round nine)


def pad_with_a_mode_held_in_a_variable(x):
    return np.sum(np.pad(x, 2, mode=PAD_MODE) ** 2)


def test_pad_with_a_function_for_its_mode_stays_refused():
    with pytest.raises(UnsupportedError, match="np.pad with mode=<function"):
        sg.grad(pad_with_a_mode_held_in_a_variable)(X)


def walrus_in_a_comprehension_rebinding_a_name_read_before_it(x):
    n = 1.0
    return n + sum(q for v in x if (q := v) > 0 and (n := v) > 0)


def test_walrus_in_a_comprehension_rebinding_a_name_read_before_it_is_refused():
    assert_refused(walrus_in_a_comprehension_rebinding_a_name_read_before_it,
                   "return n + sum(", "before a comprehension")


def vector_results(x):
    return np.concatenate([np.multiply.accumulate(x), np.mean(sliding_window_view(x, 3), axis=1),
                           np.pad(x, 2, mode="linear_ramp"), np.ediff1d(x, to_end=x[0]),
                           np.sum(np.outer(x, x), axis=0, initial=1.0)])


def test_jacfwd_of_vector_results():
    h = 1e-6
    fd = np.stack([(vector_results(X + e) - vector_results(X - e)) / (2 * h)
                   for e in np.eye(X.size) * h], axis=1)
    np.testing.assert_allclose(sg.jacfwd(vector_results)(X), fd, rtol=1e-6, atol=1e-8)
