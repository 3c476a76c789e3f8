"""Dtypes: casts to integers stop the gradient; complex intermediates are exact or refused.

Every gradient is checked against central finite differences of the real input
and, where there is one, against the hand-derived answer.
"""

import inspect
import os
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pipeline
from srcgrad.analysis import kinds

THIS_FILE = os.path.basename(__file__)
X = np.array([1.3, 2.6])
XS = np.array([1.0, 2.0, 3.0])
C = np.array([0.3 + 0.7j, -1.2 + 0.1j, 0.5 - 0.4j])


def checked(f, *args, wrt=0):
    """srcgrad's gradient, after gradcheck passed, with no ComplexWarning on the way."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sg.gradcheck(f, args, wrt=wrt)
        return sg.grad(f, wrt=wrt)(*args)


def located(error, f, marker):
    lines, start = inspect.getsourcelines(f)
    lineno = start + next(k for k, line in enumerate(lines) if marker in line)
    message = str(error)
    assert THIS_FILE in message and error.lineno == lineno, message
    assert marker in message, message
    assert error.hint, message


# ----- Casts to integers and booleans stop the gradient -----
# Each is sum(cast(x) * x): the cast is a constant, so the gradient is cast(x).

def astype_int(x):
    return np.sum(x.astype(int) * x)


def astype_np_int32(x):
    return np.sum(x.astype(np.int32) * x)


def astype_string(x):
    return np.sum(x.astype("i8") * x)


def astype_keyword(x):
    return np.sum(x.astype(dtype=np.int64) * x)


def asarray_int(x):
    return np.sum(np.asarray(x, dtype=int) * x)


def array_int64(x):
    return np.sum(np.array(x, dtype=np.int64) * x)


def numpy_int_type(x):
    return np.sum(np.int64(x) * x)


def floor_astype(x):
    return np.sum(np.floor(x).astype(int) * x)


def round_astype(x):
    return np.sum(np.round(x).astype(int) * x)


def rint_cast(x):
    return np.sum(np.rint(x).astype(np.int32) * x)


def cast_through_a_dtype_name(x):
    dt = np.int16
    return np.sum(x.astype(dt) * x)


def cast_to_another_values_dtype(x):
    idx = np.array([3, 4])
    return np.sum(x.astype(idx.dtype) * x)


@pytest.mark.parametrize("f, cast", [
    (astype_int, lambda x: x.astype(int)),
    (astype_np_int32, lambda x: x.astype(int)),
    (astype_string, lambda x: x.astype(int)),
    (astype_keyword, lambda x: x.astype(int)),
    (asarray_int, lambda x: x.astype(int)),
    (array_int64, lambda x: x.astype(int)),
    (numpy_int_type, lambda x: x.astype(int)),
    (floor_astype, np.floor),
    (round_astype, np.round),
    (rint_cast, np.rint),
    (cast_through_a_dtype_name, lambda x: x.astype(int)),
    (cast_to_another_values_dtype, lambda x: x.astype(int)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_cast_to_an_integer_dtype_passes_no_gradient(f, cast):
    g = checked(f, X.copy())
    np.testing.assert_allclose(g, cast(X), rtol=1e-12)


def named_cast(x):
    i = x.astype(int)
    f = x.astype(np.float32)
    return np.sum(i * f)


def test_a_cast_result_is_not_active_a_float_cast_is():
    assert sg.active_variables(named_cast) == {"x", "f"}


def astype_bool(x):
    return np.sum(x.astype(bool) * x)


def test_a_cast_to_bool_passes_no_gradient():
    x = np.array([-1.0, 2.5])
    np.testing.assert_allclose(checked(astype_bool, x), [1.0, 1.0])


def python_int(x):
    return int(x[0]) * x[1] + x[0]


def test_python_int_of_an_entry_passes_no_gradient():
    np.testing.assert_allclose(checked(python_int, X.copy()), [1.0, 1.0])


def store_into_int_array(x):
    y = np.zeros(3, dtype=int)
    y[0] = x[0]
    return np.sum(y * x[1]) + x[0]


def store_into_zeros_like_of_int(x):
    idx = np.array([1, 2])
    y = np.zeros_like(idx)
    y[0] = x[0]
    return np.sum(y * x)


def full_like_of_int(x):
    return np.sum(np.full_like(np.array([1, 2]), x[0]) * x)


def test_a_store_into_an_integer_array_truncates_and_passes_no_gradient():
    np.testing.assert_allclose(checked(store_into_int_array, X.copy()), [1.0, 1.0])
    np.testing.assert_allclose(checked(store_into_zeros_like_of_int, X.copy()), [1.0, 0.0])
    np.testing.assert_allclose(checked(full_like_of_int, X.copy()), [1.0, 1.0])
    assert "y" not in sg.active_variables(store_into_int_array)


def float_buffer_from_round(x):
    buf = np.full(2, round(x[0], 1))   # round with ndigits gives a float: buf is a float array
    buf[0] = x[1]
    return np.sum(buf * x)


def test_a_store_into_an_array_of_unknown_dtype_keeps_its_gradient():
    x = X.copy()
    want = np.array([x[1], x[0] + round(x[0], 1)])
    np.testing.assert_allclose(checked(float_buffer_from_round, x), want)


def int_zeros_plus_x(x):
    return np.sum((np.zeros(2, dtype=int) + x) * x)


def test_integer_array_plus_a_float_is_float_again_and_active():
    np.testing.assert_allclose(checked(int_zeros_plus_x, X.copy()), 2 * X)


# ----- Dtypes known only at run time -----

def astype_given(x, dt):
    return np.sum(x.astype(dt) * x)


def astype_keyword_given(x, dt):
    return np.sum(x.astype(dtype=dt) * x)


def astype_like(x, other):
    return np.sum(x.astype(other.dtype) * x)


def store_given(x, dt):
    y = np.zeros(2, dtype=dt)
    y[0] = x[0]
    return np.sum(y * x)


def full_given(x, dt):
    return np.sum(np.full(2, x[0], dtype=dt) * x)


@pytest.mark.parametrize("f", [astype_given, astype_keyword_given, store_given, full_given])
@pytest.mark.parametrize("dt", [int, np.int32, "i8", bool, float, np.float64])
def test_a_dtype_given_at_run_time_is_decided_at_run_time(f, dt):
    g = checked(f, X.copy(), dt)
    if f is astype_given or f is astype_keyword_given:
        cast = X.astype(dt)
        want = cast + (X if np.dtype(dt).kind == "f" else 0.0)
    elif f is store_given:
        y = np.zeros(2, dtype=dt)
        y[0] = X[0]
        want = y.astype(float) + ([X[0], 0.0] if np.dtype(dt).kind == "f" else 0.0)
    else:
        fill = np.full(2, X[0], dtype=dt).astype(float)
        want = fill + ([X.sum(), 0.0] if np.dtype(dt).kind == "f" else 0.0)
    np.testing.assert_allclose(g, want, rtol=1e-12)


def full_like_given(x, proto):
    return np.sum(np.full_like(proto, x[0]) * x)


@pytest.mark.parametrize("proto", [[1, 2], [1.0, 2.0], np.array([True, False]), np.zeros(2)])
def test_full_like_of_a_prototype_given_at_run_time_takes_its_dtype(proto):
    g = checked(full_like_given, X.copy(), proto)
    fill = np.full_like(proto, X[0]).astype(float)
    integer = np.asarray(proto).dtype.kind in "biu"
    np.testing.assert_allclose(g, fill + ([0.0, 0.0] if integer else [X.sum(), 0.0]))


def test_a_cast_to_another_values_dtype_is_decided_at_run_time():
    np.testing.assert_allclose(checked(astype_like, X.copy(), np.array([1, 2])), [1.0, 2.0])
    np.testing.assert_allclose(checked(astype_like, X.copy(), np.array([1.0])), 2 * X)


# ----- Casts between float types keep the gradient -----

def via_float32(x):
    return np.sum(x.astype(np.float32) * x)


def back_to_float64(x):
    return np.sum(x.astype(np.float64) ** 2)


def test_a_cast_between_float_types_keeps_the_gradient_in_the_inputs_dtype():
    g = sg.grad(via_float32)(X.copy())
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * X, rtol=1e-6)
    x32 = X.astype(np.float32)
    g32 = sg.grad(back_to_float64)(x32)
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, 2 * x32, rtol=1e-6)


# ----- The kinds analysis -----

def kinds_example(x, n, dt):
    i = x.astype(int)
    b = x > 0
    z = 1j * x
    r = np.abs(z)
    y = np.zeros(3, dtype=int)
    w = y + x
    u = x.astype(dt)
    return r + i * n + w + u + b


def test_kinds_says_what_each_name_holds():
    node, info, _ = pipeline.normalize(kinds_example)
    found = kinds.infer(node, {"x": kinds.FLOAT}, info.resolve)
    want = {"x": "f", "n": "?", "dt": "?", "i": "i", "b": "i", "z": "c", "r": "f", "y": "i",
            "w": "f", "u": "?"}
    assert {k: found[k] for k in want} == want


# ----- Complex intermediates: the JAX/PyTorch answer for a real loss of a real input -----

def abs_of_exp(x):
    return np.sum(np.abs(np.exp(1j * x)) * x)


def test_the_issue_reproducer_gives_ones():
    np.testing.assert_allclose(checked(abs_of_exp, XS.copy()), [1.0, 1.0, 1.0], atol=1e-12)


def abs_of_scaled(x):
    return np.sum(np.abs(x * (2 + 3j)) ** 2)


def parts_and_angle(x):
    z = np.exp((0.3 + 1j) * x)
    return np.sum(z.real * z.imag + np.angle(z))


def arithmetic(x):
    z = x + 1j * x ** 2
    w = z * np.conj(z) / (z + 2.0) - z
    return np.sum(np.real(w) + np.imag(w))


def fourier(x):
    z = np.fft.fft(x)
    return np.sum(np.abs(z) ** 2) + np.sum(np.fft.ifft(z * z).real)


def cast_to_complex(x):
    z = x.astype(complex) * C
    return np.abs(np.mean(z)) + np.sum(z.imag) + np.sum(z.conj().real)


def store_into_complex(x):
    z = np.zeros(3, dtype=complex)
    z[0] = x[1]
    z[1] = x[0] * 1j
    return np.sum(np.abs(z + C))


def complex_matmul(x):
    m = np.outer(x, x) * (1 + 2j)
    return np.sum(np.abs(m @ C).reshape(3, 1))


def complex_given(x, c):
    cc = np.asarray(c, dtype=complex)
    return np.sum(np.abs(x * cc))


@pytest.mark.parametrize("f", [abs_of_scaled, parts_and_angle, arithmetic, fourier, cast_to_complex,
                               store_into_complex, complex_matmul])
def test_complex_primitives_agree_with_finite_differences(f):
    g = checked(f, XS.copy())
    assert g.dtype == np.float64


def test_hand_derived_complex_gradients():
    # |x (2+3i)|^2 = 13 x^2
    np.testing.assert_allclose(sg.grad(abs_of_scaled)(XS.copy()), 26 * XS)
    # |x c| = |x| |c|
    np.testing.assert_allclose(checked(complex_given, XS.copy(), C), np.abs(C))


def arcsinh_of_complex(x):   # (z ** 2, np.sin(z) have rules since 2026-12-07: test_complex_forward.py)
    z = 1j * x
    return np.sum(np.abs(np.arcsinh(z)))


def maximum_of_complex(x):
    z = 1j * x
    return np.sum(np.abs(np.maximum(z, 0.5)))


@pytest.mark.parametrize("f, marker", [(arcsinh_of_complex, "np.arcsinh(z)"),
                                       (maximum_of_complex, "np.maximum(z, 0.5)")])
def test_other_primitives_on_complex_values_are_refused_at_their_line(f, marker):
    with pytest.raises(sg.UnsupportedError) as info:
        sg.grad(f)(XS.copy())
    located(info.value, f, marker)
    assert "complex" in str(info.value)


def complex_output(x):
    return np.sum(np.exp(1j * x))


def test_a_complex_output_needs_grad_outputs():
    with pytest.raises(ValueError, match="real scalar outputs"):
        sg.grad(complex_output)(XS.copy())


def test_grad_outputs_of_a_complex_output_follow_pytorch():
    v = 1.0 + 0.5j   # L = Re(conj(v) * out): the seed is dL/dRe(out) + 1j dL/dIm(out)
    g = sg.grad(complex_output)(XS.copy(), grad_outputs=v)
    loss = lambda x: np.real(np.conj(v) * complex_output(x))  # noqa: E731
    fd = [(loss(XS + 1e-6 * e) - loss(XS - 1e-6 * e)) / 2e-6 for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    np.testing.assert_allclose(g, np.real(np.conj(v) * 1j * np.exp(1j * XS)), rtol=1e-12)


def elementwise_complex(x):
    return np.exp(1j * x)


def test_vjp_of_a_complex_output_follows_pytorch():
    v = np.array([1.0 + 2j, -0.5j, 0.3])
    _, backward = sg.vjp(elementwise_complex)(XS.copy())
    np.testing.assert_allclose(backward(v), np.real(np.conj(v) * 1j * np.exp(1j * XS)), rtol=1e-12)


def plain_abs(x):
    return np.sum(np.abs(x))


@pytest.mark.parametrize("value", [XS + 1j, 1.0 + 2j, np.complex128(1 + 1j)])
def test_complex_inputs_are_refused(value):
    with pytest.raises(TypeError, match="complex"):
        sg.grad(plain_abs)(value)
    with pytest.raises(TypeError, match="complex"):
        sg.vjp(plain_abs)(value)


def unseen_complex(x, c):
    return np.sum(np.abs(x * c))


def test_a_complex_value_unseen_when_compiling_is_refused_not_trusted():
    with pytest.raises(sg.UnsupportedError, match="came out complex"):
        sg.grad(unseen_complex)(XS.copy(), C)


# ----- Second order -----

def cubed_times_cast(x, dt):
    return np.sum(x.astype(dt) * x ** 3)


@pytest.mark.parametrize("dt, want", [(int, lambda x: 6 * x.astype(int) * x),
                                      (float, lambda x: 12 * x ** 2)])
def test_a_second_derivative_through_a_cast_stops_at_the_integer_cast(dt, want):
    x = np.array([2.6])
    np.testing.assert_allclose(sg.grad(sg.grad(cubed_times_cast))(x, dt), want(x), rtol=1e-12)
    first = sg.grad(cubed_times_cast)
    fd = (first(x + 1e-5, dt) - first(x - 1e-5, dt)) / 2e-5
    np.testing.assert_allclose(sg.grad(sg.grad(cubed_times_cast))(x, dt), fd, rtol=1e-6)


def abs_of_rotated(x):
    return np.sum(np.abs(np.exp(1j * x) * (x + 2.0)))


def test_a_second_derivative_through_complex_values_is_refused_not_wrong():
    with pytest.raises(sg.UnsupportedError, match="complex values"):
        sg.grad(sg.grad(abs_of_rotated))(np.array([2.6]))


STORE_TARGET = np.array([1, 2])


def store_into_global_copy(x):
    y = STORE_TARGET * 1
    y[0] = x[0]
    return np.sum(y * x)


def test_a_global_array_rebound_to_another_dtype_recompiles_and_one_of_the_same_kind_does_not():
    global STORE_TARGET
    x = np.array([1.5, 2.5])
    try:
        STORE_TARGET = np.array([1, 2])          # int: the store truncates, no gradient through it
        g = sg.grad(store_into_global_copy)
        np.testing.assert_allclose(g(x), [1.0, 2.0])
        compiled = g.compiled
        STORE_TARGET = np.array([3, 4])          # same kind: the same gradient is reused
        np.testing.assert_allclose(g(x), [1.0, 4.0])
        assert sg.grad(store_into_global_copy).compiled is compiled
        STORE_TARGET = np.array([1.0, 2.0])      # float now: the store carries x[0]'s gradient
        np.testing.assert_allclose(g(x), [3.0, 2.0])
        assert sg.gradcheck(store_into_global_copy, (x,))
    finally:
        STORE_TARGET = np.array([1, 2])


def _cubic(x):
    return x * x * 3.0


def _weighted(v, w):
    return np.sum(v * w) * 6.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_0d_array_gets_a_0d_array_of_its_dtype(dtype):
    """NumPy's arithmetic on 0-d arrays gives scalars; the gradient is still shaped, typed
    and owned like the argument (an ndarray of shape ()), on every call and API."""
    x = np.array(2.0, dtype=dtype)
    g = sg.grad(_cubic)
    for got in (g(x), g(x), sg.value_and_grad(_cubic)(x)[1], sg.vjp(_cubic)(x)[1](dtype(1.0)),
                sg.grad(_weighted, wrt=(0, 1))(x, np.ones(2, dtype))[0]):
        assert type(got) is np.ndarray and got.shape == () and got.dtype == dtype, repr(got)
    assert g(x) == 12.0
    assert type(sg.grad(_cubic)(dtype(2.0))) is (dtype if dtype is np.float32 else float)
