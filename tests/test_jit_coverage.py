"""jit=True compiles what fell back before (issue 15, coverage): loops ended by ``break``
or ``continue`` (their flags and the names a loop pushes before binding them), the
checks of values that might be lists (rt.check_array_operand, rt.container_op,
rt.add_grad on numbers and arrays), functions called without their default arguments;
and a called jit gradient pickles as the NumPy one does.

Each compiles without a JitFallbackWarning, gives the NumPy gradient and agrees with
central differences or a hand-derived answer. .dev/jit_coverage.py counts the whole
catalogue. Skipped when Numba is not installed."""

import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad import runtime as rt  # noqa: E402
from srcgrad.jit import JitFallbackWarning, JitGradFunction  # noqa: E402
from srcgrad.testing import numerical_grad  # noqa: E402

import functions  # noqa: E402 (tests/functions.py: the catalogue)


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return call(*args, **kwargs)


def _compiles_and_matches(f, *args, wrt=0):
    """The jit gradient of ``f`` compiles (no warning), twice gives the NumPy gradient,
    and agrees with central differences."""
    want = sg.grad(f, wrt)(*args)
    jit = sg.grad(f, wrt, jit=True)
    for _ in range(2):   # the first call compiles, the second runs the common call
        got = _quiet(jit, *args)
        got_t, want_t = (got, want) if isinstance(wrt, tuple) else ((got,), (want,))
        for g, w in zip(got_t, want_t):
            assert type(g) is type(w)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    numeric = numerical_grad(f, args, wrt)
    for g, n in zip(got_t, numeric if isinstance(wrt, tuple) else (numeric,)):
        np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-8)
    assert len(jit.compile_times) == 1
    return jit


stops_at_a_negative = functions.for_break   # the catalogue's loops with break and continue
skips_negatives = functions.for_continue


def counts_from_one(x):   # k and u pushed in the loop before it binds them
    s = 0.0
    for k, u in enumerate(x, 1):
        s = s + k * u * u
    for k, u in enumerate(x, start=2):
        s = s + k * u
    return s


def returns_in_a_loop(x, a):
    for v in x:
        if v > 2.0:
            return v * a
    return a * a + x[0]


def stops_in_a_while(x):
    s = 0.0
    i = 0
    while i < x.shape[0]:
        if x[i] > 2.5:
            break
        s = s + np.sin(x[i]) * x[i]
        i = i + 1
    return s


@pytest.mark.parametrize("x", [np.array([0.5, 1.5, -2.0, 3.0, 0.25]),   # the loops stop early
                               np.array([0.5, 1.5, 1.9, 0.75, 0.25]),   # they run to the end
                               np.array([-1.0, 0.5, 2.2])])             # they stop at once
def test_loops_with_break_and_continue_compile(x):
    for f in (stops_at_a_negative, skips_negatives, counts_from_one, stops_in_a_while):
        _compiles_and_matches(f, x)
    for a in (0.7, -1.3):
        _compiles_and_matches(returns_in_a_loop, x, a, wrt=(0, 1))


def test_break_and_continue_against_hand_derived_gradients():
    x = np.array([0.5, 1.5, -2.0, 3.0])
    got = _quiet(sg.grad(stops_at_a_negative, jit=True), x)
    np.testing.assert_array_equal(got, [1.0, 3.0, 1.0, 0.0])   # 2 v before the break, x[2]
    got = _quiet(sg.grad(skips_negatives, jit=True), x)
    np.testing.assert_array_equal(got, [0.75, 6.75, 0.0, 27.0])   # 3 v**2 where v >= 0
    got = _quiet(sg.grad(counts_from_one, jit=True), x)
    np.testing.assert_allclose(got, 2 * np.arange(1, 5) * x + np.arange(2, 6), rtol=1e-15)


def test_a_loops_flag_starts_false_and_other_pushed_names_none():
    x = np.array([0.5, -1.0, 2.0])
    source = sg.grad(skips_negatives, jit=True).jit_source(x)
    assert "skip = False" in source.split("for i in")[0]   # not read before the loop binds it
    source = sg.grad(counts_from_one, jit=True).jit_source(x)
    head = source.split("for i in")[0]
    assert "k = None" in head and "u = None" in head
    # a release (after a name's last use) is still dropped
    numpy_source = sg.source(stops_at_a_negative, args=(x,), composed=True)
    assert "n_i = None" in numpy_source
    assert "n_i = None" not in sg.grad(stops_at_a_negative, jit=True).jit_source(x)


def test_range_head_is_pythons_slice():
    from numba import njit
    from srcgrad.jit import runtime as jrt

    @njit
    def head(start, stop, step, n):
        return list(jrt.range_head(range(start, stop, step), n))

    for start, stop, step in [(0, 7, 1), (2, 11, 3), (9, -3, -2), (4, 4, 1), (0, 5, 7)]:
        r = range(start, stop, step)
        for n in range(-len(r) - 2, len(r) + 3):
            assert head(start, stop, step, n) == list(r[:n]), (r, n)


def tuple_default(x, a=1.5):
    return np.sum(x * a) + a


def keyword_defaults(x, *, c=2.0, scale=0.5):
    return np.sum(np.sin(x) * c) * scale


def test_defaults_are_passed_to_the_compiled_gradient():
    x = np.array([0.3, -1.2, 2.0])
    jit = _compiles_and_matches(tuple_default, x)
    np.testing.assert_allclose(_quiet(jit, x), np.full(3, 1.5), rtol=1e-15)
    np.testing.assert_allclose(_quiet(jit, x, 2.5), np.full(3, 2.5), rtol=1e-15)   # given
    jit = _compiles_and_matches(keyword_defaults, x)
    np.testing.assert_allclose(_quiet(jit, x), np.cos(x), rtol=1e-15)
    tuple_default.__defaults__ = (4.0,)   # a changed default is read at the call
    try:
        np.testing.assert_allclose(_quiet(sg.grad(tuple_default, jit=True), x), np.full(3, 4.0))
    finally:
        tuple_default.__defaults__ = (1.5,)


@pytest.mark.slow
def test_container_checks_on_arrays_and_numbers_compile():
    x = np.array([0.3, -1.2, 2.0])
    for f in (functions.defaults, functions.keyword_only_defaults, functions.calls_closure,
              functions.helper_other_module_nested):
        _compiles_and_matches(f, x)
    source = sg.grad(functions.defaults, jit=True).jit_source(x)
    assert "_jrt.container_op(x, a, True)" in source and "_jrt.unreached()" in source
    assert "seq_repeat_vjp" not in source


def test_the_numba_forms_of_the_container_checks():
    from numba import njit
    from numba.core.errors import TypingError
    from srcgrad.jit import runtime as jrt

    @njit
    def add(a, b):
        return jrt.add_grad(a, b)

    a, b = np.array([1.0, -2.0]), np.array([0.5, 0.25])
    for p, q in [(a, b), (a, 0.0), (0.0, b), (2.5, -1.0), (0.0, 3.0), (3.0, 0.0), (a, 1.5),
                 (2, 3)]:
        want = rt.add_grad(p, q)
        got = add(p, q)
        np.testing.assert_array_equal(got, want)
        assert np.ndim(got) == np.ndim(want)
    assert add(a, 0.0) is not None and np.shares_memory(add(a, 0.0), a)   # returned as it is
    with pytest.raises(TypingError, match="rt.add_grad"):
        add(True, 1.0)   # a bool: the NumPy helper adds it as an int

    @njit
    def check(v):
        jrt.check_array_operand(v)
        return jrt.container_op(v, 2.0, True)

    assert check(a) is False and check(1.5) is False
    with pytest.raises(TypingError, match="rt.check_array_operand"):
        check((1.0, 2.0))   # a structure: the NumPy gradient raises its error


def test_lists_numpy_joins_or_makes_an_array_of_compile():
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.1, 0.4, -0.7])
    _compiles_and_matches(functions.list_np_array_scalars, 0.7, -1.3, wrt=(0, 1))
    _compiles_and_matches(functions.dead_store_concatenate, x, y, wrt=(0, 1))
    _compiles_and_matches(functions.numpy_scalar_conversions, x, 0.7, wrt=(0, 1))
    source = sg.grad(functions.dead_store_concatenate, (0, 1), jit=True).jit_source(x, y)
    assert "np.concatenate((x_item, y_item))" in source   # Numba joins a tuple


def test_the_numba_forms_of_list_gradients_equal_the_numpy_helpers():
    from numba import njit
    from numba.core.errors import TypingError
    from numba.typed import List  # noqa: F401 (numba's reflected lists are made in the jitted code)
    from srcgrad.jit import runtime as jrt

    @njit
    def of_numbers(dy, a, b, c):
        grads = jrt.array_vjp(dy, [a, b, c])
        return jrt.seq_item(grads, 0), jrt.seq_item(grads, 1), jrt.seq_item(grads, 2)

    dy = np.array([0.5, -1.5, 2.25])
    assert of_numbers(dy, 1.0, 2.0, 3.0) == tuple(rt.seq_item(rt.array_vjp(dy, [1.0, 2.0, 3.0]), k)
                                                  for k in range(3))
    assert of_numbers(0.75, 1.0, 2.0, 3.0) == (0.75, 0.75, 0.75)   # a scalar stands for all

    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.1, 0.4, -0.7, 5.0])
    g = np.arange(7.0) - 3.0

    @njit
    def joins(g, x, y, stacked):
        pieces = jrt.concatenate_vjp(g, [x, y], 0)
        rows = jrt.stack_vjp(stacked, [x, x], 0)
        return pieces[0], pieces[1], rows[0], rows[1], jrt.array_vjp(stacked, [x, x])[1]

    stacked = np.arange(6.0).reshape(2, 3)
    got = joins(g, x, y, stacked)
    want = (rt.concatenate_vjp(g, [x, y], 0) + rt.stack_vjp(stacked, [x, x], 0)
            + rt.array_vjp(stacked, [x, x])[1:])
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)

    @njit
    def full(dy, x, y):
        return jrt.concatenate_vjp(dy, [x, y], 0)[1]

    np.testing.assert_array_equal(full(1.5, x, y), rt.concatenate_vjp(1.5, [x, y], 0)[1])

    @njit
    def another_axis(g, x):
        return jrt.stack_vjp(g, [x, x], 1)[0]

    with pytest.raises(ValueError, match="another axis"):   # the NumPy gradient runs it
        another_axis(stacked.T.copy(), x)

    @njit
    def adds(d, g):
        return jrt.seq_add(d, jrt.array_vjp(g, d))

    for d, g in [(x, x * 2), (0.0, x), (1.5, 2.5), (x, 0.0)]:
        np.testing.assert_array_equal(adds(d, g), rt.seq_add(d, rt.array_vjp(g, d)))

    @njit
    def of_a_dict_like(v):
        return jrt.seq_item(v, 0)

    with pytest.raises(TypingError, match="rt.seq_item"):
        of_a_dict_like(True)


def _gradient_for_pickling(x):
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("jit", [False, True])
def test_a_called_gradient_pickles_and_loads(jit):
    x = np.array([0.5, 1.5, 2.5])
    g = sg.grad(_gradient_for_pickling, jit=jit)
    want = g(x)
    g(x)   # the common call replaces the instance's class (fast_call.py, jit/hot.py)
    loaded = pickle.loads(pickle.dumps(g))
    assert type(loaded).__name__ == type(g).__name__
    assert isinstance(loaded, JitGradFunction) == jit
    np.testing.assert_array_equal(_quiet(loaded, x), want)
    np.testing.assert_allclose(want, np.cos(x) * x + np.sin(x), rtol=1e-15)
    value_and_grad = sg.value_and_grad(_gradient_for_pickling, jit=jit)
    value_and_grad(x)
    value, grad = pickle.loads(pickle.dumps(value_and_grad))(x)
    assert value == _gradient_for_pickling(x)
    np.testing.assert_array_equal(grad, want)


@pytest.mark.parametrize("jit", [False, True])
def test_a_gradient_of_a_lambda_does_not_pickle_either_way(jit):
    g = sg.grad(lambda x: np.sum(x * x), jit=jit)
    g(np.ones(3))
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        pickle.dumps(g)
