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
