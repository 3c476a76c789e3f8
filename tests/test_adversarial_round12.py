"""Twelfth adversarial round: programs whose jit=True gradient differed from the NumPy
gradient (Numba's arithmetic is not Python's or NumPy's) before their fix. Each answer is
checked against the NumPy gradient and central differences in float64; where the compiled
code cannot give Python's answer it must fall back (with its JitFallbackWarning)."""

import math
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from adversarial_checks import V, X

pytest.importorskip("numba")
from srcgrad.jit import JitFallbackWarning  # noqa: E402


def _jit_grad(f, x):
    """sg.grad(f, jit=True)(x) and whether it fell back to the NumPy gradient."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = sg.grad(f, jit=True)(x.copy())
    return got, any(issubclass(w.category, JitFallbackWarning) for w in caught)


def assert_jit_like_numpy(f, x, falls_back=True):
    want = numerical_grad(f, (x.copy(),))
    np.testing.assert_allclose(sg.grad(f)(x.copy()), want, rtol=1e-6, atol=1e-8)
    got, fell_back = _jit_grad(f, x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    if falls_back is not None:
        assert fell_back == falls_back


# ----- Arithmetic on bools: np.bool_ is not Python's bool -----
# ``x[0] > 0`` is an np.bool_ in the NumPy code, whose ``+`` is 'or' and ``*`` 'and'
# (np.True_ + np.True_ is True); Numba types every comparison as one bool and adds it as
# Python's int (2). So ``(x[0] > 0) + (x[1] > 0) + True`` scaled the gradient by 2 with
# jit=True and by 1 in NumPy, silently. Also where Numba unifies a name bound to a bool
# with a number (``n = x[0] > 0`` then ``n = n + (x[i] > 0)`` in a loop: int64 in Numba).
# numba_types.check_integer_widths now reads these in the typed IR and falls back.

def bools_added(x):
    t = (x[0] > 0) + (x[1] > 0) + True
    return x[2] * t


def bool_counted_from_a_bool(x):
    n = x[0] > 0
    for i in range(1, 4):
        n = n + (x[i] > 0)
    return x[0] * n


def bool_augmented(x):
    n = x[0] > 0
    n += x[2] > 0
    return x[1] * n


@pytest.mark.parametrize("f", [bools_added, bool_counted_from_a_bool, bool_augmented])
def test_arithmetic_on_numpy_bools_runs_the_numpy_gradient(f):
    assert_jit_like_numpy(f, X)


def bools_counted_from_an_int(x):
    n = 0
    for i in range(4):
        n = n + (x[i] > 0)   # int + bool: an int in both
    return x[0] * n


def test_counting_bools_from_an_int_stays_compiled():
    assert_jit_like_numpy(bools_counted_from_an_int, X, falls_back=False)


# ----- A float32 number with a Python number: NumPy keeps float32 -----
# ``np.float32(c) * 1e20 * 1e20`` is inf in NumPy (a Python float is weak: the product
# stays float32) and finite in Numba, which widens to float64; ``np.float32(16777216.0) +
# 1.0`` is 16777216 in NumPy, 16777217 in Numba. A gradient reading such a value differed.

def float32_overflow(x):
    c = np.float32(x[0])
    return x[1] * np.isinf(c * np.float32(1e20) * 1e20)


def float32_rounding(x):
    c = np.float32(16777216.0)
    return x[0] * ((c + 1.0) - c)


@pytest.mark.parametrize("f", [float32_overflow, float32_rounding])
def test_float32_numbers_with_python_numbers_run_the_numpy_gradient(f):
    with np.errstate(over="ignore"):
        assert_jit_like_numpy(f, X)


# ----- Python's int does not overflow; Numba's int64 wraps -----
# ``fact *= k`` past 20!, or a hash ``k = k * 1000003 + i``, wraps around in Numba's int64
# and grows in Python: ``x[0] * (fact % 997)`` had another gradient with jit=True, and
# sg.jvp(jit=True) another value too. + - * << of two numbers outside the fused kernels
# are now integers.py's exact_* (python_numbers.py), which raise where int64 wraps; the
# NumPy gradient (or tangent program) then runs the call.

def factorial_modulo(x):
    fact = 1
    for k in range(1, 26):
        fact *= k
    return x[0] * (fact % 997) + np.sum(x ** 2)


def rolling_hash(x):
    k = 1
    for i in range(30):
        k = k * 1000003 + i
    return np.sum(x) * (k % 1000)


def shifted_flags(x):
    bits = 1
    for i in range(70):
        bits = bits << 1
    return x[1] * (bits % 7)


@pytest.mark.parametrize("f", [factorial_modulo, rolling_hash, shifted_flags])
def test_integers_past_int64_run_the_numpy_gradient(f):
    assert_jit_like_numpy(f, X)


@pytest.mark.parametrize("f", [factorial_modulo, rolling_hash])
def test_integers_past_int64_in_a_jit_tangent_program(f):
    want = f(X.copy()), numerical_grad(f, (X.copy(),)) @ V
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        value, tangent = sg.jvp(f, (X.copy(),), (V.copy(),), jit=True)
    assert value == want[0]
    np.testing.assert_allclose(tangent, want[1], rtol=1e-6)


def doubled_list_items(x):
    powers = [1]
    for i in range(70):
        powers.append(powers[-1] * 2)   # an item of a list of ints
    return x[0] * (powers[-1] % 7) + np.sum(x ** 2)


def test_list_items_past_int64_run_the_numpy_gradient():
    assert_jit_like_numpy(doubled_list_items, X)


# ``int(v)``, ``round(v)``, ``math.floor(v)`` of a float: Python raises for inf and NaN and
# grows its int past 2**63, Numba's conversion gives -2**63. ``int(x[0] * 1e30) > 0`` was
# False with jit=True (the gradient lost a term), and ``int(np.exp(3000 * x[0]))`` gave a
# gradient where the NumPy one raises OverflowError.

def int_of_a_huge_float(x):
    return x[1] * (int(x[0] * 1e30) > 0) + np.sum(x ** 2)


def floor_of_a_huge_float(x):
    return x[1] * (math.floor(x[0] * 1e30) % 7) + x[2] * (round(x[3] * 1e25) % 5)


@pytest.mark.parametrize("f", [int_of_a_huge_float, floor_of_a_huge_float])
def test_integers_of_huge_floats_run_the_numpy_gradient(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        np.testing.assert_array_equal(sg.grad(f, jit=True)(X.copy()), sg.grad(f)(X.copy()))


def int_of_infinity(x):
    return x[1] * (int(np.exp(x[0] * 3000.0)) % 7)


def test_int_of_infinity_raises_as_python_does():
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        with pytest.raises(OverflowError):
            sg.grad(int_of_infinity)(X.copy())
        with pytest.raises(OverflowError):
            sg.grad(int_of_infinity, jit=True)(X.copy())


def small_integer_arithmetic(x):
    s = 0.0
    k = 1
    for i in range(4):
        k = k * 3 - i
        s = s + x[i] * (k % 5) + x[i - 1] * ((i - 3) * 2)
    return s


def test_integers_within_int64_stay_compiled():
    assert_jit_like_numpy(small_integer_arithmetic, X, falls_back=False)


def test_exact_integer_operations_match_python():
    """integers.py's checks against Python's ints at the edges of int64."""
    import itertools
    import numba
    from srcgrad.jit import runtime as jrt
    low, high = -2 ** 63, 2 ** 63 - 1
    cases = {jrt.exact_add: lambda a, b: a + b, jrt.exact_sub: lambda a, b: a - b,
             jrt.exact_mul: lambda a, b: a * b}
    values = [0, 1, -1, 2, -2, 3, high, low, high // 2, low // 2, high // 2 + 1, low // 2 - 1,
              2 ** 32, -2 ** 32, 3037000499, 3037000500, -3037000500, high // 3, low // 3 - 1]
    for helper, python in cases.items():
        run = numba.njit(lambda a, b, helper=helper: helper(a, b))
        for a, b in itertools.product(values, values):
            exact = python(a, b)
            if low <= exact <= high:
                assert run(a, b) == exact, (helper, a, b)
            else:
                with pytest.raises(OverflowError):
                    run(a, b)
    shift = numba.njit(lambda a, b: jrt.exact_lshift(a, b))
    for a, b in itertools.product(values, [0, 1, 31, 62, 63, 64, 70]):
        if low <= a << b <= high:
            assert shift(a, b) == a << b
        else:
            with pytest.raises(OverflowError):
                shift(a, b)


# ----- Random programs of such numbers (random_jit_numbers.py) -----

@pytest.mark.slow
@pytest.mark.parametrize("seed", range(24))
def test_random_number_programs_jit_like_numpy(seed, tmp_path):
    import importlib.util
    import random_jit_numbers
    source, name = random_jit_numbers.program(seed)
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    f = getattr(module, name)
    with np.errstate(over="ignore", invalid="ignore"):
        want = sg.grad(f)(X.copy())
        np.testing.assert_allclose(want, numerical_grad(f, (X.copy(),)), rtol=1e-5, atol=1e-6,
                                   err_msg=source)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = sg.grad(f, jit=True)(X.copy())
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, err_msg=source)
