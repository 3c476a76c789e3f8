"""The jit gradient's entry (issue 15, "jit, round 6" of docs/performance.md): tapes of
numbers as arrays sized by the loop's trip count (srcgrad/jit/fixed_tapes.py), grad's
common call as the instance's own class call, and Numba's entry point called directly
where the arguments are of the types it was compiled for (srcgrad/jit/hot.py).

Every result is compared with the NumPy gradient (and the finite differences of
srcgrad.testing where the function is new here). Skipped when Numba is not installed.
"""

import sys
import time
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad.jit import JitFallbackWarning, JitGradFunction, hot  # noqa: E402
from srcgrad.testing import numerical_grad  # noqa: E402


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return call(*args, **kwargs)


def _same(jit, x, **kwargs):
    """jit's gradient at ``x`` (twice: the compiled and the hot call) is NumPy's."""
    want = sg.grad(jit.gradient.fn)(x, **kwargs)
    for _ in range(3):
        got = _quiet(jit, x, **kwargs)
        assert type(got) is type(want) and np.shape(got) == np.shape(want)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-14), (got, want)
    return got


def _source(jit, x):
    return jit.jit_source(x)


def prod_positive(x):
    result = 1
    for ii in x:
        if ii > 0:
            result = ii * result
    return result


def int_counter(x):
    k = 1
    s = 1.0
    for i in range(len(x)):
        k = k + 2
        s = s * x[i] * k
    return s


def two_pushes(x):
    s = 1.0
    for i in range(len(x)):
        s = s * x[i]
        if x[i] > 0:
            s = s * x[i] + 1.0
    return s


def nested(x):
    s = 1.0
    for j in range(2):
        for i in range(len(x)):
            s = s * x[i]
    return s


def branches(x):
    s = 1.0
    for i in range(len(x)):
        if x[i] > 1.0:
            s = s * x[i] + 0.5
        else:
            s = np.sin(s * x[i])
    return s


def test_a_tape_of_numbers_in_a_loop_is_an_array_of_its_trip_count():
    x = np.array([0.5, -1.2, 2.0, 0.3, 1.1])
    jit = sg.grad(prod_positive, jit=True)
    got = _same(jit, x)
    assert np.allclose(got, numerical_grad(prod_positive, (x,)), rtol=1e-6)
    source = _source(jit, x)
    assert "_jrt.tape_new(range_i, 1)" in source and "_jrt.tape_push(" in source
    assert "_tape_result = []" not in source
    for v in (np.array([-1.0, -2.0]), np.array([3.0]), np.zeros(0) + 1.0):   # none, all pushed
        _same(jit, v)


def test_two_pushes_a_turn_double_the_tape_and_conditions_stay_lists():
    x = np.array([0.5, -1.2, 2.0, 0.3])
    jit = sg.grad(two_pushes, jit=True)
    got = _same(jit, x)
    assert np.allclose(got, numerical_grad(two_pushes, (x,)), rtol=1e-6)
    source = _source(jit, x)
    assert "_jrt.tape_new(range_i, 2)" in source   # two push statements of s a turn
    assert "_tape_cond = []" in source             # a bool: a list, as before


def test_an_int_tape_is_translated_again_as_a_list():
    x = np.array([0.5, -1.2, 2.0, 0.3])
    jit = sg.grad(int_counter, jit=True)
    _same(jit, x)
    entry = next(iter(jit._entries.values()))
    assert entry.lists   # Numba refused the int in a float64 array: that key is a list
    source = entry.translation().source
    assert any(f"{key} = []" in source for key in entry.lists)


def test_a_loop_in_a_loop_and_branches_keep_exact_results():
    x = np.array([0.5, -1.2, 2.0, 0.3, 1.7, 0.9])
    for f in (nested, branches):
        jit = sg.grad(f, jit=True)
        got = _same(jit, x)
        assert np.allclose(got, numerical_grad(f, (x,)), rtol=1e-6, atol=1e-8)
    assert "tape_new" not in _source(sg.grad(nested, jit=True), x)   # trip count unknown


def test_a_tape_past_its_size_or_empty_raises():
    from srcgrad.jit import runtime as jrt
    push, down = numba.njit(lambda t, n, v: jrt.tape_push(t, n, v)), \
        numba.njit(lambda n: jrt.tape_down(n))
    tape = np.empty(1)
    assert push(tape, 0, 2.5) == 1 and tape[0] == 2.5
    with pytest.raises(IndexError):
        push(tape, 1, 3.0)
    with pytest.raises(IndexError):
        down(0)
    with pytest.raises(numba.core.errors.TypingError):
        push(tape, 0, 3)   # an int64 would come back as a float


def test_grads_common_call_is_the_class_call_and_declines_to_the_general_path():
    x = np.array([0.5, -1.2, 2.0, 0.3])
    jit = sg.grad(prod_positive, jit=True)
    _same(jit, x)
    assert isinstance(jit, JitGradFunction) and type(jit) is not JitGradFunction
    assert type(jit).__call__.entry is next(iter(jit._entries.values()))
    assert type(sg.grad(prod_positive, jit=True)) is not type(jit)   # one class each
    # what the class call does not take: the general path, the NumPy path's results
    _same(jit, x, grad_outputs=2.0)
    _same(jit, x.reshape(2, 2)[0])
    with warnings.catch_warnings():   # no arguments: the NumPy gradient's error (warned)
        warnings.simplefilter("ignore", JitFallbackWarning)
        with pytest.raises(TypeError):
            jit()
        with pytest.raises(TypeError):
            jit(x, x)
    assert np.array_equal(_quiet(jit, x), sg.grad(prod_positive)(x))


def test_the_entry_point_only_takes_the_types_it_was_compiled_for():
    x = np.array([0.5, -1.2, 2.0, 0.3, 1.1, 0.7])
    jit = sg.grad(prod_positive, jit=True)
    _same(jit, x)
    assert "entry_point(a0, buf)" in type(jit).__call__.__source__
    readonly = x.copy()
    readonly.flags.writeable = False
    raw = np.zeros(6 * 8 + 1, dtype=np.uint8)[1:].view(np.float64)   # not aligned
    raw[:] = x
    assert not raw.flags.aligned
    for v in (x[::2], x[::-1], readonly, raw, x.astype(np.int64) + 0.0, x.copy()):
        _same(jit, v)
    with pytest.warns(JitFallbackWarning):
        got = jit(x.astype(np.float32))   # not compiled: the NumPy gradient, warned
    assert np.array_equal(got, sg.grad(prod_positive)(x.astype(np.float32)))


def test_the_exact_checks_are_numbas_typeof():
    """``exact_checks`` holds of an array exactly where numba.typeof gives the type."""
    base = np.arange(12.0)
    readonly = base.copy()
    readonly.flags.writeable = False
    unaligned = np.zeros(12 * 8 + 1, dtype=np.uint8)[1:].view(np.float64)
    arrays = [base, base[::2], base.reshape(3, 4), base.reshape(3, 4).T, base.reshape(3, 4)[:, ::2],
              readonly, unaligned, base.astype(np.int64), base > 3, np.ones((1, 1)),
              np.ones((4, 1))[:, :1], np.asfortranarray(base.reshape(3, 4))]
    namespace = {"ndarray": np.ndarray, "F64": np.dtype(np.float64), "I64": np.dtype(np.int64),
                 "B1": np.dtype(np.bool_)}
    for a in arrays:
        checks = hot.exact_checks(["v"], (numba.typeof(a),), [None])
        for b in arrays + [1.5, True]:
            holds = eval(" and ".join(checks), dict(namespace, v=b))
            assert holds == (numba.typeof(b) == numba.typeof(a)), (a, b)


K = 2.0


def scaled(x):
    result = 1.0
    for v in x:
        result = result * v * K
    return result


def test_the_class_call_keeps_the_guard(monkeypatch):
    x = np.array([0.5, -1.2, 2.0])
    jit = sg.grad(scaled, jit=True)
    _same(jit, x)
    monkeypatch.setattr(sys.modules[__name__], "K", 3.0)   # a number read at run time
    _same(jit, x)
    monkeypatch.setattr(sys.modules[__name__], "len", lambda v: 1, raising=False)
    _same(jit, x)   # a global shadowing a builtin the gradient reads: compiled anew


def test_a_closure_number_is_read_anew_and_an_equal_one_compiles_nothing():
    def make(c):
        def f(x):
            s = 0.0
            for v in x:
                s = s + v * v * c
            return s
        return f, f.__closure__[0]
    f, cell = make(0.0)
    x = np.array([0.5, -1.2, 2.0])
    jit = sg.grad(f, jit=True)
    _same(jit, x)
    cell.cell_contents = -0.0   # equal, another sign: compiled anew
    _same(jit, x)
    cell.cell_contents = 1.5
    _same(jit, x)
    compiles = len(jit.compile_times)
    cell.cell_contents = float("1.5")   # the same value, another object: nothing compiled
    cell.cell_contents = 3.0 / 2.0
    _same(jit, x)
    assert len(jit.compile_times) == compiles
    cell.cell_contents = 2   # an int: another type
    _same(jit, x)


def two_inputs(x, w, k):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] * w[i] * k
    return s


def test_the_entry_point_checks_every_argument():
    x, w = np.array([0.5, -1.2, 2.0]), np.array([1.0, 2.0, 3.0])
    jit = sg.grad(two_inputs, jit=True)
    want = sg.grad(two_inputs)
    for args in ((x, w, 2.0), (x, w, 2.0), (x, w[::-1], 2.0), (x, w, True), (x, w, 3),
                 (x, w.astype(np.int64), 2.0), (x, w, 2.0)):
        with warnings.catch_warnings():   # an int64 w: the NumPy gradient (warned)
            warnings.simplefilter("ignore", JitFallbackWarning)
            got = jit(*args)
        assert np.allclose(got, want(*args), rtol=1e-12, atol=1e-14)
    assert "entry_point(a0, a1, a2, buf)" in type(jit).__call__.__source__


# ----- the faster of the two gradients is kept (dispatch._numpy_faster) -----

class _Sleeper:
    def __init__(self, seconds):
        self.seconds, self.calls = seconds, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        time.sleep(self.seconds)


class _Owner:
    def __init__(self, numpy_gradient):
        self._numpy = numpy_gradient


@pytest.mark.parametrize("compiled_s, numpy_s, faster",
                         [(0.03, 0.001, True), (0.001, 0.03, False), (0.03, 0.03, True)])
def test_the_compiled_gradient_is_kept_only_where_it_ran_clearly_faster(monkeypatch, compiled_s,
                                                                        numpy_s, faster):
    """A tie keeps NumPy: jit=True is never slower than no jit."""
    from srcgrad.jit import dispatch
    monkeypatch.setenv("SRCGRAD_JIT_RACE", "1")
    compiled, numpy_gradient = _Sleeper(compiled_s), _Sleeper(numpy_s)
    assert dispatch._numpy_faster(compiled, (), _Owner(lambda a, g: numpy_gradient()), (), None) \
        is faster
    assert 2 <= compiled.calls <= 4 and compiled.calls == numpy_gradient.calls   # a warm-up
    monkeypatch.setenv("SRCGRAD_JIT_RACE", "0")
    assert dispatch._numpy_faster(compiled, (), _Owner(lambda a, g: numpy_gradient()), (), None) \
        is False


def _rnn_like(W, h0, xs):
    h = h0
    for i in range(xs.shape[0]):
        h = np.tanh(h @ W.T + xs[i])
    return np.sum(h)


def test_a_gradient_slower_compiled_runs_the_numpy_gradient_from_its_first_call(monkeypatch):
    from srcgrad.jit import dispatch
    monkeypatch.setenv("SRCGRAD_JIT_RACE", "1")
    monkeypatch.setattr(dispatch, "_numpy_faster", lambda *a: True)
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4), rng.standard_normal((3, 4)))
    g = sg.grad(_rnn_like, jit=True)
    want = sg.grad(_rnn_like)(*args)
    for _ in range(3):
        np.testing.assert_allclose(g(*args), want, rtol=1e-12)
    entries = list(g._entries.values())
    assert entries and all(e.slower for e in entries) and g._last_grad is None
