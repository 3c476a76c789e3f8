"""Eighth adversarial round: programs that srcgrad got silently wrong (or failed on with an
error that was not a refusal) before their fix. Each gradient, tangent or Hessian is checked
against central differences in float64 and values worked out by hand; each refusal must name
what it refuses."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from adversarial_checks import assert_grad_and_jvp, assert_refused_in


# ----- jit: narrow integer arithmetic inside a fused elementwise run -----
# Round seven sent arithmetic on int8/int16/int32 scalars to the NumPy gradient, reading
# the typed IR of the compiled function only; loops.py moves a run of elementwise
# statements into a kernel of its own (``_run_k_0``), whose IR was not read, so
# ``k = np.int8(100) + np.int8(100)`` then ``x * k`` gave 200 per entry with jit=True where
# NumPy (and sg.grad) give -56.

def _int8_sum_then_product(x):
    k = np.int8(100) + np.int8(100)
    return np.sum(x * k)


def _int8_sum_inline(x):
    return np.sum(x * (np.int8(100) + np.int8(100)))


@pytest.mark.parametrize("f", [_int8_sum_then_product, _int8_sum_inline])
def test_narrow_integer_arithmetic_in_a_fused_run_runs_the_numpy_gradient(f):
    pytest.importorskip("numba")
    x = np.array([1.0, 2.0, 3.0])
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = numerical_grad(f, (x,))
        got = sg.grad(f, jit=True)(x)
        np.testing.assert_allclose(want, -56.0, rtol=1e-6)
        np.testing.assert_array_equal(got, -56.0)
        value, grad = sg.value_and_grad(f, jit=True)(x)
        np.testing.assert_array_equal(grad, -56.0)
        assert value == f(x)


# ----- Forward mode and second derivatives under sg.no_grad / sg.set_grad_enabled -----
# A statement in a ``with sg.no_grad():`` block binds a constant: reverse mode gives it no
# adjoint. Forward mode still carried the tangent of an operand into it where its target
# had a tangent from an earlier binding (``y += x ** 2`` in the block: sg.jvp and
# sg.jacfwd differentiated through it, sg.grad did not), and ignored
# ``sg.set_grad_enabled(flag)`` with a run-time flag altogether (sg.jvp of ``c * sum(x)``
# with ``c`` computed in the block gave 11.68 where sg.grad's Jacobian gives 7.76).
# Hessians under ``set_grad_enabled(False)`` differentiated through the block where the
# same block under ``sg.no_grad()`` is a constant.

XG = np.array([0.3, -0.5, 1.2, 0.4])


def _augmented_in_no_grad(x):
    y = x * 1.0
    with sg.no_grad():
        y += x ** 2
    return np.sum(y * x)


def _flagged_constant(x, flag):
    with sg.set_grad_enabled(flag):
        c = np.sum(x ** 2)
    return c * np.sum(x)


def _flagged_item_write(x, flag):
    y = x * 1.0
    with sg.set_grad_enabled(flag):
        y[0] = x[1] * 5
    return np.sum(y * x)


def _flagged_unpack_and_append(x, flag):
    with sg.set_grad_enabled(flag):
        a, b = x[0] * 2, x[1] * 3
        parts = [x * 2]
        parts.append(x ** 2)
    return a * b + np.sum(parts[0] * parts[1])


def _flag_in_a_loop(x, flag):
    s = 0.0
    for i in range(3):
        with sg.set_grad_enabled(flag):
            s = s + x[i] ** 2
    return s * x[3]


def _enable_inside_flag(x, flag):
    with sg.set_grad_enabled(flag):
        with sg.enable_grad():
            y = x ** 2
        z = x ** 3
    return np.sum(y + z)


def _constant_in(f, flag):
    """``f`` with its block's values held at XG's, the derivative its block's flag asks."""
    if flag is None:
        return sg.grad(f)(XG.copy())
    return sg.grad(f)(XG.copy(), flag)


@pytest.mark.parametrize("f, flag", [
    (_augmented_in_no_grad, None), (_flagged_constant, False), (_flagged_constant, True),
    (_flagged_item_write, False), (_flagged_item_write, True),
    (_flagged_unpack_and_append, False), (_flagged_unpack_and_append, True),
    (_flag_in_a_loop, False), (_flag_in_a_loop, True), (_enable_inside_flag, False),
])
def test_forward_mode_holds_what_a_grad_mode_block_makes_constant(f, flag):
    args = (XG.copy(),) if flag is None else (XG.copy(), flag)
    rest = (None,) * (len(args) - 1)
    want = _constant_in(f, flag)
    if flag is True:   # nothing held constant: central differences see the same function
        np.testing.assert_allclose(want, numerical_grad(f, args), rtol=1e-6, atol=1e-8)
    v = np.array([0.7, -1.1, 0.4, 2.0])
    _, tangent = sg.jvp(f, args, (v,) + rest)
    np.testing.assert_allclose(tangent, want @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sg.jacfwd(f)(*args), want, rtol=1e-12, atol=1e-12)


def test_hand_worked_values_of_grad_mode_blocks():
    x = XG.copy()
    c = np.sum(x ** 2)
    # y = x + x**2 held constant: d/dx sum(y * x) = y
    np.testing.assert_allclose(sg.grad(_augmented_in_no_grad)(x), x + x ** 2)
    np.testing.assert_allclose(sg.jacfwd(_augmented_in_no_grad)(x), x + x ** 2)
    np.testing.assert_allclose(sg.jvp(_flagged_constant, (x, False), (np.ones(4), None))[1],
                               4 * c)                                     # 7.76
    np.testing.assert_allclose(sg.jvp(_flagged_constant, (x, True), (np.ones(4), None))[1],
                               4 * c + 2 * np.sum(x) * np.sum(x))        # 11.68
    np.testing.assert_allclose(sg.jvp(_flagged_constant, (x, True), (np.ones(4), None))[1],
                               numerical_grad(_flagged_constant, (x, True)) @ np.ones(4),
                               rtol=1e-6)


@pytest.mark.parametrize("flagged", [_flagged_item_write, _flagged_constant, _flag_in_a_loop])
def test_hessian_under_set_grad_enabled_false_is_that_under_no_grad(flagged):
    x = XG.copy()
    off = sg.hessian(flagged)(x, False)
    on = sg.hessian(flagged)(x, True)
    # set_grad_enabled(True): the function's own Hessian (central differences of sg.grad)
    eps = 1e-6
    fd = np.array([(sg.grad(flagged)(x + eps * e, True) - sg.grad(flagged)(x - eps * e, True))
                   / (2 * eps) for e in np.eye(4)]).T
    np.testing.assert_allclose(on, fd, rtol=1e-6, atol=1e-6)
    # set_grad_enabled(False): the block's values are constants, as under sg.no_grad
    if flagged is _flagged_constant:     # c * sum(x), c constant: no second derivative
        np.testing.assert_allclose(off, 0.0, atol=1e-12)
    elif flagged is _flag_in_a_loop:     # s * x[3], s constant
        np.testing.assert_allclose(off, 0.0, atol=1e-12)
    else:                                # y0 * x0 + sum(x[1:] ** 2), y0 constant
        np.testing.assert_allclose(off, np.diag([0.0, 2.0, 2.0, 2.0]), atol=1e-12)


# ----- A dict view (d.values(), d.items(), d.keys()) among the saved values -----
# sg.jacrev and backward(retain_graph=True) copy what the forward sweep saved
# (runtime/saved_copy.py) with copy.deepcopy, which cannot copy a dict view: both raised
# "TypeError: cannot pickle 'dict_values' object" from srcgrad's internals.

def _sum_of_dict_values(x):
    d = {i: x[i] for i in range(4) if x[i] > 0}
    return sum(v ** 2 for v in d.values())


def _sum_of_dict_items(x):
    d = {"a": x * 2, "b": x ** 2}
    total = 0.0
    for k, v in d.items():
        total = total + np.sum(v * v) * len(k)
    return total


@pytest.mark.parametrize("f", [_sum_of_dict_values, _sum_of_dict_items])
def test_saved_dict_views_are_copied_as_views_of_the_copied_dict(f):
    x = XG.copy()
    want = numerical_grad(f, (x,))
    np.testing.assert_allclose(sg.jacrev(f)(x), want, rtol=1e-6, atol=1e-8)
    out, backward = sg.vjp(f)(x)
    first = backward(1.0, retain_graph=True)
    second = backward(2.0)
    np.testing.assert_allclose(first[0] if isinstance(first, tuple) else first, want, rtol=1e-6)
    np.testing.assert_allclose(second[0] if isinstance(second, tuple) else second, 2 * want,
                               rtol=1e-6)


# ----- jit: a first gradient no path from the input reaches -----
# The compiled gradient writes its first gradient into a buffer the caller allocated and
# returns None for "written"; a gradient that is None (np.floor(x), np.sign(x),
# float(np.argmax(x)): nothing differentiable reaches the output) came back as None too,
# so jit=True handed back the buffer's uninitialised memory (often the input's own
# values) where sg.grad raises PyTorch's "appears not to have been used", gives None with
# allow_unused=True, zeros with materialize_grads=True.

def _floor_only(x):
    return np.sum(np.floor(x) * 2)


def _sign_only(x):
    return np.sum(np.sign(x))


def _floor_division_only(x):
    return np.sum(np.abs(x) // 0.25)


def _second_argument_only(x, w):
    return np.sum(w ** 2)


@pytest.mark.parametrize("f", [_floor_only, _sign_only, _floor_division_only])
def test_jit_gradient_of_nothing_differentiable_is_that_of_numpy(f):
    x = np.array([0.3, -0.5, 1.2, 0.4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (a piecewise-constant path is a zero gradient, as PyTorch's floor and JAX's give,
        # not a missing one: test_zero_gradients.py)
        for options in ({}, {"allow_unused": True}, {"materialize_grads": True}):
            got = sg.grad(f, jit=True, **options)(x.copy())
            np.testing.assert_array_equal(got, np.zeros(4))   # central differences: 0 off the jumps
            np.testing.assert_array_equal(got, sg.grad(f, **options)(x.copy()))
        np.testing.assert_array_equal(numerical_grad(f, (x + 0.01,)), np.zeros(4))
        value, grad = sg.value_and_grad(f, jit=True, allow_unused=True)(x.copy())
        assert value == f(x)
        np.testing.assert_array_equal(grad, np.zeros(4))


def test_jit_unused_first_argument_is_none_and_the_other_gradient_kept():
    x, w = np.array([0.3, -0.5, 1.2, 0.4]), np.array([1.0, 2.0, -1.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gx, gw = sg.grad(_second_argument_only, wrt=(0, 1), allow_unused=True, jit=True)(x, w)
        assert gx is None
        np.testing.assert_allclose(gw, 2 * w)
        gx, gw = sg.grad(_second_argument_only, wrt=(0, 1), allow_unused=True,
                         materialize_grads=True, jit=True)(x, w)
        np.testing.assert_array_equal(gx, np.zeros(4))


# ----- jit: arithmetic on narrow integer and float32 arrays made in the function -----
# NumPy keeps an int32, int8 or float32 array's dtype when the other operand is a Python
# number (it is weak there): np.arange(4, dtype=np.int32) * 1000000000 wraps around in
# int32 (its last entry -1294967296), np.arange(4, dtype=np.int8) * 100 too (-56, 44),
# np.arange(4, dtype=np.float32) * 0.1 rounds in float32. Numba widens them to int64 or
# float64, so jit=True returned 3e9, 200, 300 and float64-rounded values. Numba writes
# such arithmetic as an ``arrayexpr``, which the round-seven check did not read.

def _int32_array_times_a_python_int(x):
    k = np.arange(4, dtype=np.int32)
    return np.sum(x * (k * 1000000000))


def _int8_array_times_a_python_int(x):
    k = np.arange(4, dtype=np.int8)
    return np.sum(x * (k * 100))


def _float32_array_times_a_python_float(x):
    k = np.arange(4, dtype=np.float32)
    return np.sum(x * (k * 0.1))


@pytest.mark.parametrize("f, want", [
    (_int32_array_times_a_python_int, [0.0, 1e9, 2e9, 3e9 - 2 ** 32]),
    (_int8_array_times_a_python_int, [0.0, 100.0, -56.0, 44.0]),
    (_float32_array_times_a_python_float, np.arange(4, dtype=np.float32) * np.float32(0.1)),
])
def test_narrow_array_arithmetic_with_a_python_number_runs_the_numpy_gradient(f, want):
    pytest.importorskip("numba")
    x = np.array([0.3, -0.5, 1.2, 0.4])
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(sg.grad(f)(x), want)
        np.testing.assert_array_equal(sg.grad(f, jit=True)(x), want)
        np.testing.assert_allclose(numerical_grad(f, (x,)), want, rtol=1e-6)
