"""jit=True compiles the loops people write first: ``s += ...`` on numbers, indexed writes
into arrays (``a[i] = ...``, ``y[i] += ...``), matrix products, ``abs``, powers with an
active exponent, casts and full maxima (srcgrad/jit/runtime.py's forms of rt.check_unshared,
save, written_grad, zero_grad_at, matmul_grad_a/b, sign, log_or_zero, cast_like, tie_share).

Each compiles without a JitFallbackWarning, gives the NumPy gradient (to the last bits
BLAS may round differently) and agrees with central differences; writes that NumPy's
gradient refuses are refused the same way. Skipped when Numba is not installed."""

import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad.errors import SrcgradError  # noqa: E402
from srcgrad.jit import JitFallbackWarning  # noqa: E402
from srcgrad.testing import numerical_grad  # noqa: E402

import functions  # noqa: E402 (tests/functions.py: the catalogue)


def accumulates(x):   # s += ...: rt.check_unshared of a number
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] - 0.5 * x[i]
    return s


def accumulates_from_int(x):
    s = 0
    for i in range(x.shape[0]):
        for j in range(i):
            s += x[i] * x[j]
    return s * 2


def recurrence(x):   # a[i] = f(a[i-1], a[i]): the overwritten entry saved and restored
    a = x.copy()
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * 0.5 + np.sin(a[i])
    return np.sum(a ** 2)


def scatter_into_zeros(x, w):   # y[i] += ...
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] += x[i] * w
        y[i - 1] += 0.25 * x[i]
    return np.sum(y * np.arange(x.shape[0]))


def time_steps(u):   # an explicit scheme writing each step into an array
    n = u.shape[0]
    T = np.zeros(n + 1)
    T[0] = 1.0
    for t in range(n):
        T[t + 1] = T[t] + 0.1 * (u[t] - T[t] ** 2)
    return np.sum(T[1:] ** 2)


def writes_a_row(x):   # a basic index of a 2-D array: a row written, then an entry
    m = np.zeros((3, 4))
    for k in range(3):
        m[k] = x[k] * np.arange(1.0, 5.0)
        m[k, 0] = m[k, 0] * x[k + 1]
    return np.sum(m ** 3)


def updates_its_copy(x):   # y += ...: rt.check_unshared of two arrays that do not overlap
    y = x * 1.0
    y += x ** 2
    y *= 3.0
    return np.sum(y * x)


def products(x, w):
    W = np.outer(w, w) + np.eye(w.shape[0])
    h = np.tanh(W @ x)        # 2-D @ 1-D
    v = x @ W                 # 1-D @ 2-D
    return h @ v + np.dot(h, h) + np.sum(np.dot(W, W) @ W)


def abs_and_powers(x, p):
    s = 0.0
    for i in range(x.shape[0]):
        s += abs(x[i]) * x[i] ** p + np.abs(x[i] - 0.1)
    return s


def maximum_and_cast(x):
    return np.max(x) * np.sum(x.astype(np.float64) ** 2)


# dh: the number 0.0 again each step, an array where a gradient arrives
resets_in_loop = functions.rnn_loop


def returns_in_branches(x, y):   # dx: 0.0, or an array in the branch that runs
    if np.all(x < 3.0) and np.any(y > 1.0):
        return np.sum(x * y)
    return np.sum(x - y)


def over_rows(x):   # drow_pow_2: 0.0 again after each row
    s = 0.0
    for row in x:
        s = s + np.sum(row ** 2) * row[0]
    return s


def gated_by_weights(x, w):   # a zero w[i]: NumPy skips the branch that reads 0.5 / sqrt(x)
    s = 0.0
    for i in range(w.shape[0]):
        s = s + w[i] * np.sum(np.sqrt(x))
    return s


rng = np.random.default_rng(3)
X = rng.uniform(0.3, 1.2, 6)
CASES = [
    (accumulates, (X,), 0),
    (accumulates_from_int, (X,), 0),
    (recurrence, (X,), 0),
    (scatter_into_zeros, (X, 1.7), 0),
    (scatter_into_zeros, (X, 1.7), 1),
    (time_steps, (X,), 0),
    (writes_a_row, (X,), 0),
    (updates_its_copy, (X,), 0),
    (products, (X[:4], X[2:]), 0),
    (products, (X[:4], X[2:]), 1),
    (abs_and_powers, (X - 0.6, 2.0), 0),
    (abs_and_powers, (X, 1.5), 1),
    (maximum_and_cast, (X,), 0),
    (resets_in_loop, (X.reshape(2, 3), np.outer(X[:3], X[3:]) * 0.3), 0),
    (resets_in_loop, (X.reshape(2, 3), np.outer(X[:3], X[3:]) * 0.3), 1),
    (returns_in_branches, (X, X + 0.5), 0),
    (returns_in_branches, (X + 3.0, X), 1),
    (over_rows, (X.reshape(3, 2),), 0),
    (gated_by_weights, (X, X[:3]), 0),
]


@pytest.mark.parametrize("fn, args, wrt", CASES,
                         ids=[f"{f.__name__}-{w}" for f, _, w in CASES])
def test_compiles_without_a_fallback_and_gives_the_numpy_gradient(fn, args, wrt):
    want = sg.grad(fn, wrt)(*args)
    before = [np.copy(a) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        gradient = sg.grad(fn, wrt, jit=True)
        got = gradient(*args)
        again = gradient(*args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)   # no argument written
    for g in (got, again):
        assert type(g) is type(want) and np.shape(g) == np.shape(want)
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got, numerical_grad(fn, args, wrt), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn, args, wrt", [
    (gated_by_weights, (np.array([0.0, 1.0, 4.0]), np.array([0.0, 2.0, 0.0])), 0),
    (gated_by_weights, (np.array([0.0, 1.0, 4.0]), np.array([0.0, 0.0])), 0),
    (gated_by_weights, (np.array([0.0, np.inf, 4.0]), np.array([1.0, 0.0])), 1),
    (over_rows, (np.array([[0.0, np.inf], [1.0, 2.0], [0.0, -0.0]]),), 0),
    (returns_in_branches, (np.array([0.0, np.inf]), np.array([2.0, np.nan])), 0),
    (resets_in_loop, (np.array([[0.0, 0.0, np.inf], [1.0, 0.0, 0.0]]), np.zeros((3, 3))), 1),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_zero_number_adjoint_gives_numpy_s_result_with_inf_and_nan(fn, args, wrt):
    """Where the NumPy gradient keeps an adjoint the number 0.0 (a zero weight: has_grad
    skips a branch that would make nan of 0 * inf), the jit gradient gives its result
    bit for bit, whether that call compiles or runs the NumPy gradient."""
    with np.errstate(all="ignore"):
        want = sg.grad(fn, wrt)(*args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            gradient = sg.grad(fn, wrt, jit=True)
            got, again = gradient(*args), gradient(*args)
    for g in (got, again):
        assert type(g) is type(want) and np.shape(g) == np.shape(want)
        np.testing.assert_array_equal(g, want)


def writes_through_a_view(x):   # v is a view of y: NumPy's gradient refuses, so must jit
    y = x * 1.0
    v = y[1:]
    v += x[:-1]
    return np.sum(y * x)


def test_a_write_numpy_refuses_is_refused_with_jit_too():
    with pytest.raises(SrcgradError) as numpy_error:
        sg.grad(writes_through_a_view)(X)
    with pytest.raises(SrcgradError) as jit_error:
        sg.grad(writes_through_a_view, jit=True)(X)
    assert str(jit_error.value) == str(numpy_error.value)
    assert "test_jit_idioms.py" in str(jit_error.value)


def _fresh(args):
    return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.slow
def test_random_programs_give_the_numpy_gradient_or_its_error():
    # Views, in-place calls, indexed writes and loops (test_random_programs' generator):
    # compiled or not, jit=True returns what the NumPy gradient returns, or raises its error.
    from hypothesis import HealthCheck, given, settings
    from test_random_programs import inputs, load, programs

    @settings(max_examples=12, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(aliasing=True), inputs)
    def check(program, args):
        f, _ = load(*program)
        outcomes = []
        for jit in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", JitFallbackWarning)
                try:
                    outcomes.append(sg.grad(f, wrt=(0, 1, 2), jit=jit)(*_fresh(args)))
                except Exception as error:   # noqa: BLE001 (compared below)
                    outcomes.append(error)
        want, got = outcomes
        if isinstance(want, Exception) or isinstance(got, Exception):
            assert type(got) is type(want) and str(got) == str(want), (program[0], want, got)
            return
        for a, b in zip(got, want):
            assert np.shape(a) == np.shape(b), program[0]
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=program[0])

    check()
