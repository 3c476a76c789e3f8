"""grad's common jit call in C (srcgrad/jit/_centry.c, "jit, round 10" of docs/performance.md).

The C entry takes a call where hot.py's Python form would call Numba's entry point (the
compiled types, the guard and frozen numbers holding, no keyword but ``grad_outputs=None``)
and hands every other call to the Python form unchanged. Each test counts the calls the C
entry ran (``Entry.taken``) to show which path ran, and compares every result with the NumPy
gradient, and with the same function's jit gradient without the C entry (hot.C None).
The tests that need the built module skip where it is not built (setup.py: optional).
"""

import gc
import math
import re
import sys
import warnings
import weakref

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad.jit import JitFallbackWarning, hot  # noqa: E402
from srcgrad.testing import numerical_grad  # noqa: E402

built = pytest.mark.skipif(hot.C is None, reason="srcgrad/jit/_centry.c is not built "
                           "(no C compiler, or SRCGRAD_JIT_C=0)")


def prod_positive(x):
    result = 1
    for ii in x:
        if ii > 0:
            result = ii * result
    return result


def _entry(jit):
    """The C entry that is ``jit``'s class call."""
    call = type(jit).__dict__.get("__call__")
    assert type(call) is hot.C.Entry, call
    return call


def _pair(f, *args, monkeypatch):
    """``f``'s jit gradient with the C entry and one without (its class call hot.py's
    Python function), both past their first calls with ``args``."""
    with_c = sg.grad(f, jit=True)
    for _ in range(2):
        with_c(*args)
    monkeypatch.setattr(hot, "C", None)
    without = sg.grad(f, jit=True)
    for _ in range(2):
        without(*args)
    monkeypatch.undo()
    assert type(type(without).__dict__["__call__"]) is type(prod_positive)
    return with_c, without


def _outcome(call, *args, **kwargs):
    """What a call gives: its value, or its error's type and message; and its warnings."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            value = call(*args, **kwargs)
        except Exception as exc:
            value = (type(exc), str(exc))
    return value, [re.sub(r"0x[0-9a-f]+|\b[0-9a-f]{12}\b", "@", str(w.message)) for w in record]


def _agree(a, b):
    (va, wa), (vb, wb) = a, b
    assert wa == wb
    if type(va) is tuple:
        assert va == vb
    else:
        assert type(va) is type(vb) and np.shape(va) == np.shape(vb)
        assert np.array_equal(va, vb, equal_nan=True), (va, vb)


def _taken(jit, call, *args, **kwargs):
    """``call`` run; whether the C entry that was ``jit``'s class call before it ran it (0
    where the class call was a Python function: a call recorded for types it does not take)."""
    entry = type(jit).__dict__.get("__call__")
    if type(entry) is not hot.C.Entry:
        return call(*args, **kwargs), 0
    before = entry.taken
    value = call(*args, **kwargs)
    return value, entry.taken - before


@built
def test_w2_is_taken_by_the_c_entry_and_matches_numpy_and_the_hand_gradient():
    x = np.arange(-2, 4, dtype=np.float64)
    jit = sg.grad(prod_positive, jit=True)
    want = sg.grad(prod_positive)(x)
    hand = np.where(x > 0, np.prod(x[x > 0]) / np.where(x > 0, x, 1.0), 0.0)
    assert np.allclose(want, hand)
    assert np.array_equal(jit(x), want)   # compiles; the next call records the entry
    entry = _entry(jit)
    assert entry.python.__source__ == entry.__source__ and "entry_point(a0, buf)" in entry.__source__
    for call in (lambda: jit(x), lambda: jit(x, grad_outputs=None), lambda: jit.__call__(x),
                 lambda: type(jit).__call__(jit, x)):
        got, taken = _taken(jit, call)
        assert taken == 1 and type(got) is np.ndarray and got.flags.writeable
        assert np.array_equal(got, want)
    assert _taken(jit, jit, x)[0] is not _taken(jit, jit, x)[0]   # a new array each call
    assert entry.entry is next(iter(jit._entries.values()))
    y = np.array([0.5, -1.2, 2.0, 0.3, 1.1])
    got, taken = _taken(jit, jit, y)
    assert taken == 1 and np.allclose(got, numerical_grad(prod_positive, (y,)), rtol=1e-6)


@built
def test_each_call_the_c_entry_does_not_take_is_the_python_forms(monkeypatch):
    x = np.array([0.5, -1.2, 2.0, 0.3, 1.1, 0.7])
    jit, without = _pair(prod_positive, x, monkeypatch=monkeypatch)
    numpy_grad = sg.grad(prod_positive)
    readonly = x.copy()
    readonly.flags.writeable = False
    matrix = np.asfortranarray(np.arange(1.0, 7.0).reshape(2, 3))
    cases = [((x.astype(np.float32),), {}), ((x[::2],), {}), ((x[::-1],), {}), ((readonly,), {}),
             ((x,), {"grad_outputs": 2.0}), ((x,), {"grad_outputs": np.float64(3.0)}),
             ((x,), {"bogus": 1}), ((x,), {"grad_outputs": None, "bogus": 1}), ((x, x), {}),
             ((), {}), ((list(x),), {}), ((2.5,), {}),
             # the last: these unhook or replace the class call (as the Python form's do)
             ((x.astype(np.int64),), {}), ((matrix,), {}), ((matrix.T,), {})]
    for k, (args, kwargs) in enumerate(cases):
        if k < 12:
            _entry(jit)   # the C entry declines it
        got, taken = _taken(jit, _outcome, jit, *args, **kwargs)
        assert taken == 0, (args, kwargs)
        _agree(got, _outcome(without, *args, **kwargs))
        want = _outcome(numpy_grad, *args, **kwargs)[0]
        if type(got[0]) is tuple or type(want) is tuple:   # an error: the same one
            assert type(got[0]) is tuple and got[0][0] is want[0], (args, kwargs, got, want)
        else:   # NumPy's gradient
            assert np.allclose(got[0], want, rtol=1e-12, atol=1e-14), (args, kwargs)
    assert np.array_equal(jit(x), numpy_grad(x))   # (the class call: the last ranks recorded)


@built
def test_an_unaligned_array_is_taken_as_the_python_form_takes_it(monkeypatch):
    x = np.array([0.5, -1.2, 2.0, 0.3])
    jit, without = _pair(prod_positive, x, monkeypatch=monkeypatch)
    raw = np.zeros(4 * 8 + 1, dtype=np.uint8)[1:].view(np.float64)
    raw[:] = x
    assert not raw.flags.aligned   # numba.typeof does not look at alignment (hot.exact_checks)
    got, taken = _taken(jit, jit, raw)
    assert taken == 1 and np.array_equal(got, without(raw))
    assert np.array_equal(got, sg.grad(prod_positive)(x))


K = 2.0


def scaled(x):
    result = 1.0
    for v in x:
        result = result * v * K
    return result


def act_sum(x):
    s = 0.0
    for v in x:
        s = s + np.sin(v) * len(x)
    return s


def _changes_decline(jit, without, x, change):
    """After ``change()`` the C entry does not take the call; both give NumPy's gradient."""
    entry = _entry(jit)
    change()
    before = entry.taken
    got = _outcome(jit, x)
    assert entry.taken == before
    _agree(got, _outcome(without, x))
    assert np.allclose(got[0], sg.grad(jit.gradient.fn)(x), rtol=1e-12, atol=1e-14)
    return got[0]


@built
def test_a_changed_global_number_builtin_or_module_attribute_is_not_taken(monkeypatch):
    here = sys.modules[__name__]
    x = np.array([0.5, -1.2, 2.0])
    jit, without = _pair(scaled, x, monkeypatch=monkeypatch)
    assert _taken(jit, jit, x)[1] == 1
    got = _changes_decline(jit, without, x, lambda: monkeypatch.setattr(here, "K", 3.0))
    assert np.allclose(got, numerical_grad(scaled, (x,)), rtol=1e-6)
    assert _taken(jit, jit, x)[1] == 1   # compiled again for K = 3.0: a new entry takes it
    _changes_decline(jit, without, x, lambda: monkeypatch.setattr(here, "K", 3))   # an int
    monkeypatch.undo()

    jit, without = _pair(act_sum, x, monkeypatch=monkeypatch)
    assert _taken(jit, jit, x)[1] == 1
    # np.sin is read from numpy's module dict, len from the builtins: each change declines
    got = _changes_decline(jit, without, x, lambda: monkeypatch.setattr(np, "sin", np.cos))
    assert np.allclose(got, -np.sin(x) * 3, rtol=1e-12)
    monkeypatch.undo()
    jit(x)   # the entry compiled for np.cos declines: compiled (or found) again for np.sin
    assert _taken(jit, jit, x)[1] == 1
    _changes_decline(jit, without, x,
                     lambda: monkeypatch.setattr(here, "len", lambda v: 2, raising=False))
    monkeypatch.undo()
    _changes_decline(jit, without, x, lambda: monkeypatch.setattr(here, "np", np))  # same np
    monkeypatch.undo()


def test_rebinding_np_to_another_object_is_not_taken(monkeypatch):
    """``np`` rebound to another module object: the guard's globals line (a C operation)."""
    if hot.C is None:
        pytest.skip("srcgrad/jit/_centry.c is not built")
    import types
    here = sys.modules[__name__]
    x = np.array([0.5, -1.2, 2.0])
    jit, without = _pair(act_sum, x, monkeypatch=monkeypatch)
    other = types.ModuleType("numpy_copy")
    other.__dict__.update({k: v for k, v in vars(np).items() if not k.startswith("__")})
    other.sin = np.cos
    entry = _entry(jit)
    before = entry.taken
    monkeypatch.setattr(here, "np", other)
    got, want = _outcome(jit, x), _outcome(without, x)
    monkeypatch.undo()
    assert entry.taken == before
    _agree(got, want)
    assert np.allclose(got[0], -np.sin(x) * 3, rtol=1e-12)


def _closure(c):
    def f(x):
        s = 0.0
        for v in x:
            s = s + v * v * c
        return s
    return f, f.__closure__[0]


@built
def test_a_changed_closure_number_is_not_taken(monkeypatch):
    f, cell = _closure(1.5)
    x = np.array([0.5, -1.2, 2.0])
    jit = sg.grad(f, jit=True)
    jit(x)
    jit(x)
    assert _taken(jit, jit, x)[1] == 1
    cell.cell_contents = 3.0 / 2.0   # the same value, another float: taken
    assert _taken(jit, jit, x)[1] == 1
    for value in (2.5, 2, np.float64(2.5)):
        entry = _entry(jit)
        cell.cell_contents = value
        before = entry.taken
        got = jit(x)
        assert entry.taken == before
        assert np.allclose(got, 2 * x * value, rtol=1e-12)
    f, cell = _closure(0.0)   # a float zero: by identity (its sign)
    jit = sg.grad(f, jit=True)
    jit(x)
    jit(x)
    assert _taken(jit, jit, x)[1] == 1
    entry = _entry(jit)
    cell.cell_contents = -0.0
    before = entry.taken
    assert np.array_equal(jit(x), 2 * x * -0.0)
    assert entry.taken == before


OPS = {"f": np.sin}


def table(x):
    s = 0.0
    for v in x:
        s = s + OPS["f"](v)
    return s


@built
def test_a_guard_line_of_another_form_is_checked_as_python(monkeypatch):
    """``OPS["f"] is v`` (a container item) has no C operation: the C entry calls it."""
    x = np.array([0.5, -1.2, 2.0])
    jit, without = _pair(table, x, monkeypatch=monkeypatch)
    entry = _entry(jit)
    assert hot.C.OP_PY in [op[0] for op in entry.spec[11]]
    assert _taken(jit, jit, x)[1] == 1
    assert np.allclose(jit(x), np.cos(x), rtol=1e-12)
    _changes_decline(jit, without, x, lambda: monkeypatch.setitem(OPS, "f", np.cos))
    monkeypatch.undo()


def root_sum(x):
    s = 0.0
    for v in x:
        s = s + math.sqrt(v)
    return s


@built
def test_compiled_code_that_raises_runs_the_general_path(monkeypatch):
    x = np.array([0.5, 1.2, 2.0])
    jit, without = _pair(root_sum, x, monkeypatch=monkeypatch)
    bad = np.array([0.5, -1.0, 2.0])
    got, taken = _taken(jit, _outcome, jit, bad)
    assert taken == 1   # the C entry ran it, then the general path ran the NumPy gradient
    assert got[0] == (ValueError, "math domain error")
    _agree(got, _outcome(without, bad))
    got, taken = _taken(jit, jit, x)
    assert taken == 1 and np.allclose(got, 0.5 / np.sqrt(x), rtol=1e-12)


def mean_square(x):
    return np.mean(3 * (x + 2) ** 2)


def two_inputs(x, w, k):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] * w[i] * k
    return s


def flagged(x, w, on):
    s = 0.0
    for i in range(len(x)):
        if on:
            s = s + x[i] * w[i]
    return s


@built
def test_matrices_large_gradients_and_number_arguments(monkeypatch):
    m = np.arange(1.0, 7.0).reshape(2, 3)
    jit, without = _pair(mean_square, m, monkeypatch=monkeypatch)
    got, taken = _taken(jit, jit, m)   # a (2, 3) buffer: its shape as a tuple
    assert taken == 1 and got.shape == (2, 3) and np.allclose(got, 6 * (m + 2) / 6)
    big = np.linspace(0.1, 1.0, hot.SMALL + 7)   # no buffer: the compiled code's own array
    got, taken = _taken(jit, jit, big.reshape(-1, 1))
    assert taken == 1 and np.allclose(got[:, 0], 6 * (big + 2) / big.size)
    _agree(_outcome(jit, big.reshape(-1, 1)), _outcome(without, big.reshape(-1, 1)))
    got, taken = _taken(jit, _outcome, jit, m.T)   # F order: another Numba type
    assert taken == 0
    _agree(got, _outcome(without, m.T))

    x, w = np.array([0.5, -1.2, 2.0]), np.array([1.0, 2.0, 3.0])
    jit, without = _pair(two_inputs, x, w, 2.0, monkeypatch=monkeypatch)
    got, taken = _taken(jit, jit, x, w, 2.5)
    assert taken == 1 and np.allclose(got, w * 2.5)
    for args in ((x, w, 3), (x, w, True), (x, w[::-1], 2.0), (x, w.astype(np.int64), 2.0)):
        got, taken = _taken(jit, _outcome, jit, *args)
        assert taken == 0
        _agree(got, _outcome(without, *args))
    jit, without = _pair(flagged, x, w, True, monkeypatch=monkeypatch)
    for on in (True, False, True):
        got, taken = _taken(jit, jit, x, w, on)
        assert taken == 1 and np.array_equal(got, w if on else 0 * w)
    got, taken = _taken(jit, _outcome, jit, x, w, 1.0)
    assert taken == 0
    _agree(got, _outcome(without, x, w, 1.0))


@built
def test_the_c_entry_is_collected_with_its_gradient():
    x = np.array([0.5, -1.2, 2.0])
    jit = sg.grad(prod_positive, jit=True)
    jit(x)
    jit(x)
    ref = weakref.ref(_entry(jit))
    del jit
    gc.collect()
    assert ref() is None


@built
def test_the_mirror_of_numpys_array_struct_reads_what_ndarray_says():
    base = np.arange(30.0).reshape(5, 6)
    for a in (base, base.T, base[1:, ::2], np.zeros(()), np.ones(4, bool), base.astype(np.int8)):
        nd, shape, dtype, flags = hot.C.probe(a)
        assert (nd, shape, flags) == (a.ndim, a.shape, a.flags.num) and dtype is a.dtype


def test_without_the_c_entry_the_class_call_is_pythons(monkeypatch):
    """What runs where the module is not built (hot.C None): hot.py's Python form."""
    monkeypatch.setattr(hot, "C", None)
    x = np.arange(-2, 4, dtype=np.float64)
    jit = sg.grad(prod_positive, jit=True)
    want = sg.grad(prod_positive)(x)
    for _ in range(3):
        assert np.array_equal(jit(x), want)
    call = type(jit).__dict__["__call__"]
    assert type(call) is type(prod_positive) and "entry_point(a0, buf)" in call.__source__
    assert np.array_equal(jit(x, grad_outputs=None), want)
