"""The hot call (srcgrad/fast_call.py): from the second call on, a gradient runs one
generated function that makes every check the general path makes. These tests call a
gradient until its hot call runs, then change what the compile depended on, or pass
what only the general path handles, and compare with a fresh gradient's first call."""

import sys
import types

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import fast_call
from srcgrad.testing import numerical_grad

sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..",
                                              "benchmarks"))
import workloads  # noqa: E402


def _hot(g, *args, **kwargs):
    """Call ``g`` until its hot call is prepared; return that result."""
    for _ in range(3):
        result = g(*args, **kwargs)
    assert g._hot is not None
    return result


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()   # bit for bit
    else:
        assert a == b


@pytest.mark.parametrize("key", ["W1", "W2", "W3", "W4", "W8"])
def test_the_hot_call_gives_the_first_calls_result_bit_for_bit(key):
    w = next(w for w in workloads.WORKLOADS if w.key == key)
    inputs = w.make("full")
    g = sg.grad(w.fn, wrt=w.wrt if len(w.wrt) > 1 else w.wrt[0])
    first = g(*inputs.args, grad_outputs=inputs.grad_outputs)
    again = _hot(g, *inputs.args, grad_outputs=inputs.grad_outputs)
    _same(first, again)
    fresh = sg.grad(workloads.rebind(w.fn))   # another function object: compiled anew
    _same(first, fresh(*inputs.args, grad_outputs=inputs.grad_outputs))
    hand = w.hand(*inputs.args, grad_outputs=inputs.grad_outputs)
    np.testing.assert_allclose(again, hand[0], rtol=1e-12, atol=1e-12)


ACT = np.sin


def uses_global(x):
    return np.sum(ACT(x) * 3.0)


def test_a_rebound_global_is_seen_by_the_hot_call(monkeypatch):
    x = np.array([0.3, -1.2, 2.0])
    g = sg.grad(uses_global)
    np.testing.assert_allclose(_hot(g, x), 3 * np.cos(x), rtol=1e-14)
    monkeypatch.setitem(globals(), "ACT", np.tanh)
    np.testing.assert_allclose(g(x), 3 / np.cosh(x) ** 2, rtol=1e-14)
    np.testing.assert_allclose(g(x), 3 / np.cosh(x) ** 2, rtol=1e-14)
    monkeypatch.delitem(globals(), "ACT")
    with pytest.raises(Exception, match="ACT"):   # refused at the user's line, as on a first call
        g(x)


helpers = types.ModuleType("helpers_for_test_fast_call")
helpers.act = np.exp


def uses_module_attribute(x):
    return np.sum(helpers.act(x))


def test_a_rebound_module_attribute_is_seen_by_the_hot_call(monkeypatch):
    x = np.array([0.3, -1.2])
    g = sg.grad(uses_module_attribute)
    np.testing.assert_allclose(_hot(g, x), np.exp(x), rtol=1e-14)
    monkeypatch.setattr(helpers, "act", np.sin)
    np.testing.assert_allclose(g(x), np.cos(x), rtol=1e-14)


def test_a_closure_cell_and_a_new_code_are_seen_by_the_hot_call(monkeypatch):
    act = np.sin

    def f(x):
        return np.sum(act(x) * 2.0)

    x = np.array([0.5, 1.5])
    g = sg.grad(f)
    np.testing.assert_allclose(_hot(g, x), 2 * np.cos(x), rtol=1e-14)
    act = np.cos   # noqa: F841  (the cell f reads)
    np.testing.assert_allclose(g(x), -2 * np.sin(x), rtol=1e-14)
    np.testing.assert_allclose(_hot(g, x), -2 * np.sin(x), rtol=1e-14)

    def other(x):
        return np.sum(act(x) * x * 5.0)

    monkeypatch.setattr(f, "__code__", other.__code__)
    np.testing.assert_allclose(g(x), 5 * (np.cos(x) - x * np.sin(x)), rtol=1e-14)


def keyword_scaled(x, *, k=2.0):
    return np.sum(x * k)


def test_keyword_defaults_changed_in_place_are_seen(monkeypatch):
    x = np.array([1.0, 2.0])
    g = sg.grad(keyword_scaled)
    for _ in range(3):   # (a function with defaults takes the general path)
        np.testing.assert_array_equal(g(x), [2.0, 2.0])
    monkeypatch.setitem(keyword_scaled.__kwdefaults__, "k", 7.0)
    np.testing.assert_array_equal(g(x), [7.0, 7.0])


def weighted(x, w):
    return np.sum(np.tanh(x) * w)


def test_what_the_hot_call_declines_takes_the_general_path():
    x, w = np.array([0.1, -0.4, 0.8]), np.array([1.0, 2.0, 3.0])
    g = sg.grad(weighted)
    expected = (1 - np.tanh(x) ** 2) * w
    np.testing.assert_allclose(_hot(g, x, w), expected, rtol=1e-14)
    # another rank, then back: each gets its own code, and the right answer
    X = np.stack([x, 2 * x])
    np.testing.assert_allclose(g(X, w), (1 - np.tanh(X) ** 2) * w, rtol=1e-14)
    np.testing.assert_allclose(g(x, w), expected, rtol=1e-14)
    np.testing.assert_allclose(g(X, w), (1 - np.tanh(X) ** 2) * w, rtol=1e-14)
    # float32, a float, a list as the weights, a keyword, an integer input
    g32 = g(x.astype(np.float32), w.astype(np.float32))
    assert g32.dtype == np.float32
    assert isinstance(g(0.5, 2.0), float)
    np.testing.assert_allclose(g(x, list(w)), expected, rtol=1e-14)
    np.testing.assert_allclose(g(x, w=w), expected, rtol=1e-14)
    with pytest.raises(TypeError, match="dtype is int"):
        g(np.array([1, 2, 3]), w)
    with pytest.raises(TypeError):
        g(x)
    with sg.no_grad(), pytest.raises(RuntimeError):
        g(x, w)
    np.testing.assert_allclose(g(x, w), expected, rtol=1e-14)


def doubled(x):
    return 2.0 * np.sin(x)


def test_grad_outputs_through_the_hot_call_are_checked_as_before():
    x = np.array([0.1, 0.2, 0.3])
    g = sg.grad(doubled)
    seed = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(_hot(g, x, grad_outputs=seed), 2 * np.cos(x) * seed, rtol=1e-14)
    np.testing.assert_allclose(g(x, grad_outputs=[1.0, -2.0, 0.5]), 2 * np.cos(x) * seed,
                               rtol=1e-14)
    with pytest.raises(ValueError, match="grad_outputs has shape"):
        g(x, grad_outputs=np.ones(2))
    num = numerical_grad(doubled, (x,), grad_outputs=seed)
    np.testing.assert_allclose(g(x, grad_outputs=seed), num, rtol=1e-6, atol=1e-8)


def passed_through(x):
    return x + 0.0   # the adjoint is the seed itself


def reshaped_seed(x):
    return np.reshape(x * 1.0, (2, 2))   # the adjoint is a view of the seed


def test_grad_outputs_the_hot_call_hands_back_in_memory_of_its_own():
    """The hot call's inline form of call_values.distinct's first test: a gradient that is
    the caller's seed, a view of it, or one of its base's views is copied, as before."""
    x = np.array([0.5, -1.0, 2.0, 3.0])
    base = np.array([9.0, 1.0, -2.0, 0.5, 4.0])
    for f, seeds in ((passed_through, (base[1:].copy(), base[1:])),
                     (reshaped_seed, (base[1:].reshape(2, 2).copy(), base[1:].reshape(2, 2)))):
        g = sg.grad(f)
        for seed in seeds:
            want = seed.reshape(4).copy()
            got = _hot(g, x, grad_outputs=seed)
            assert not np.shares_memory(got, seed) and not np.shares_memory(got, base)
            np.testing.assert_array_equal(got, want)
            got[...] = 0.0   # writing into the gradient leaves the seed as it was
            np.testing.assert_array_equal(seed.reshape(4), want)
    g = sg.grad(doubled)   # a new array: handed back as it is
    seed = np.array([1.0, -2.0, 0.5])
    got = _hot(g, np.array([0.1, 0.2, 0.3]), grad_outputs=seed)
    assert got.base is None and not np.shares_memory(got, seed)


def test_the_hot_call_checks_the_guards_whole_condition():
    g = sg.grad(uses_global)
    _hot(g, np.array([1.0, 2.0]))
    compiled = g.compiled_for((np.array([1.0, 2.0]),))
    assert compiled.guard.condition in compiled.guard.source
    assert compiled.guard.condition.replace("\n", "\n    ") in g._hot.__source__
    assert fast_call.DECLINED is g._hot((), None)   # the argument count


def test_no_grad_in_one_thread_is_that_threads_alone():
    import threading
    x, w = np.array([0.1, -0.4]), np.array([1.0, 2.0])
    g = sg.grad(weighted)
    expected = _hot(g, x, w)
    inside, release, seen = threading.Event(), threading.Event(), []

    def other():
        with sg.no_grad():
            inside.set()
            try:
                g(x, w)
            except RuntimeError:
                seen.append("refused")
            release.wait(10)
        seen.append(g(x, w))   # on again

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(10)
    np.testing.assert_array_equal(g(x, w), expected)   # this thread: gradients still on
    release.set()
    thread.join(10)
    assert seen[0] == "refused"
    np.testing.assert_array_equal(seen[1], expected)
    with sg.no_grad(), pytest.raises(RuntimeError):
        g(x, w)
    with sg.no_grad(), sg.enable_grad():
        np.testing.assert_array_equal(g(x, w), expected)


# analysis/fresh.py: where the composed gradient is arithmetic of its arguments and Python
# numbers, the hot call returns it without the final check (a new array like the input).

def mean_square(x):
    return np.mean(3 * (x + 2) ** 2)


def test_the_final_check_is_left_out_only_where_it_is_known_to_pass():
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    g = sg.grad(mean_square)
    _hot(g, x)
    assert "new arrays like the inputs" in g._hot.__source__
    want = sg.grad(workloads.rebind(mean_square))(x)   # a first call: the general path
    for like in (x, x.astype(np.float32), x.astype(np.float16), x.astype(">f8"), x.T, x[:, ::2]):
        fresh = sg.grad(workloads.rebind(mean_square))(like)
        got = _hot(g, like)
        _same(got, fresh)
        assert got.flags.writeable and got.dtype == like.dtype and got.shape == like.shape
    frozen = x.copy()
    frozen.setflags(write=False)
    got = _hot(g, frozen)
    assert got.flags.writeable and got is not frozen
    np.testing.assert_array_equal(got, want)
    # the gradient with respect to y is an array like x, not like y: checked as before
    h = sg.grad(lambda x, y: np.sum(x * y), wrt=1)
    _hot(h, x, x)
    assert "new arrays like" not in h._hot.__source__
    got = _hot(h, x.astype(np.float32), x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, x.astype(np.float32).astype(np.float64))


@pytest.mark.parametrize("body, found", [
    ("y = x + 2\n    d = 1.0 / (x.size or 1)\n    return d * 6 * y,", {0: 0}),
    ("return -x * x - x / 2,", {0: 0}),
    ("return x,", {}),                              # the input itself (maybe read-only)
    ("return x * s,", {}),                          # s: not known to be a Python number
    ("return x + x.sum(),", {}),                    # a call: a NumPy scalar, maybe float64
    ("y = x * 2\n    y = None\n    return y,", {}),
    ("return x * z,", {}),                          # z: another argument (broadcasts)
    ("y = x * 2\n    if y:\n        pass\n    return y,", {}),
    ("return x ** 2,", {}),                         # only + - * /
    ("return x + True,", {}),
    ("return z * 2.0, x * 2.0,", {1: 0}),          # each result names its input (z unknown)
])
def test_fresh_results_knows_only_arithmetic_of_one_array_and_python_numbers(body, found):
    from srcgrad.analysis import fresh
    source = f"def g(x, z):\n    {body}\n"
    assert fresh.fresh_results(source, 2, {0}).results == found
    assert fresh.fresh_results(source, 2, set()).results == {}


def test_the_hot_call_runs_arithmetic_gradients_itself_with_float_literals_bit_for_bit():
    from srcgrad.analysis import fresh
    source = "def g(x, z):\n    y = x + 2\n    k = 3 * (x.size or 1)\n    return y * k - 4097,\n"
    found = fresh.fresh_results(source, 2, {0})
    assert found.results == {0: 0}
    assert found.inlined == ["i_y = a0 + 2.0", "i_k = 3 * (a0.size or 1)"]
    assert found.returned == ["i_y * i_k - 4097"]   # 4097: not exact in float16
    assert fresh.fresh_results(source.replace("x + 2", "x + K"), 2, {0}).inlined is None  # a global
    rebinds = fresh.fresh_results(source.replace("y = x + 2", "x = x + 2\n    y = x"), 2, {0})
    assert rebinds.inlined[:2] == ["i_x = a0", "i_x = i_x + 2.0"]   # a0 stays the argument
    g = sg.grad(mean_square)
    _hot(g, np.ones((2, 2)))
    assert "a0 + 2.0" in g._hot.__source__
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32, np.float16, np.longdouble):
        x = (rng.standard_normal((2, 2)) * 100).astype(dtype)
        got, want = _hot(g, x), sg.grad(workloads.rebind(mean_square))(x)
        assert got.dtype == want.dtype == dtype   # (long double's padding bytes may differ)
        np.testing.assert_array_equal(got, want)
    x = np.full((2, 2), 1.5e308)
    with np.errstate(over="raise"):   # raised again by the gradient itself: the user's line
        with pytest.raises(FloatingPointError) as info:
            g(x)
    assert any("raised by the generated code" in note for note in info.value.__notes__)


# api.GradFunction._set_hot: a gradient with a hot call gets a class of its own whose
# __call__ is the hot call's method (one Python call fewer); everything else is GradFunction's.

W3 = np.array([1.0, -2.0, 0.5])


def sums_a_product(x):
    return np.sum(x[:3] * W3)


def test_the_hot_calls_class_is_a_gradfunction_that_calls_its_method():
    g = sg.grad(mean_square)
    x = np.ones((2, 2))
    _hot(g, x)
    assert type(g) is not sg.api.GradFunction and isinstance(g, sg.api.GradFunction)
    assert type(g).__call__ is g._hot.method and type(g).__name__ == "GradFunction"
    assert g.__doc__.startswith("Gradient of") and g.__name__ == "grad_mean_square"
    h = sg.grad(mean_square)   # another GradFunction of it: the same hot call and class
    _hot(h, x)
    assert type(h) is type(g) and h._hot is g._hot
    v = np.ones(3)
    for _ in range(3):   # another rank, back and forth: each call gives the first call's result
        _same(g(v), sg.grad(workloads.rebind(mean_square))(v))
        _same(g(x), sg.grad(workloads.rebind(mean_square))(x))
    assert type(g).__call__ is g._hot.method
    _same(g(x, grad_outputs=2.0), sg.grad(workloads.rebind(mean_square))(x, grad_outputs=2.0))
    with pytest.raises(TypeError):
        g(x, bad_keyword=1)


def test_an_error_in_the_gradient_reads_the_same_through_the_hot_calls_method():
    g = sg.grad(sums_a_product)
    _hot(g, np.ones(4))
    assert type(g).__call__ is g._hot.method
    errors = []
    for gradient in (g, sg.grad(workloads.rebind(sums_a_product))):
        with pytest.raises(ValueError) as info:
            gradient(np.ones(2))   # x[:3] has 2 items: broadcasting fails in the user's line
        errors.append(info.value)
    assert str(errors[0]) == str(errors[1])
    line = f"{__file__}:{sums_a_product.__code__.co_firstlineno + 1}"   # (the composed
    for error in errors:   # gradient's name or the forward sweep's: the same user line)
        assert len(error.__notes__) == 1 and error.__notes__[0].endswith(f"at your line {line} "
                                                                         "(the frame after it)")
    assert errors[0].__cause__ is None and errors[0].__context__ is None


def _append_scaled(a, b):
    return np.sum(np.sin(np.append(a, b) * np.arange(4.0)))


def test_a_float_whose_gradient_comes_back_as_an_array_is_finished_on_every_call():
    # rt.append_vjp gives b's gradient as an array: the check that a gradient is final
    # read the float's dtype (an AttributeError from the second call on, now the first).
    g = sg.grad(_append_scaled, wrt=(0, 1))
    a = np.array([1.0, 2.0, 3.0])
    expected = numerical_grad(_append_scaled, (a, 4.0), wrt=(0, 1))
    for _ in range(3):
        da, db = g(a, 4.0)
        assert type(db) is float and isinstance(da, np.ndarray)
        np.testing.assert_allclose(da, expected[0], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(db, expected[1], rtol=1e-6, atol=1e-8)
