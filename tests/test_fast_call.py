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
