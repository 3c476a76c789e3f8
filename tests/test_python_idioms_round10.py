"""Python as people write it, round ten: lists held by a dict or a list updated in place
(transform/item_updates.py), ``nonlocal`` accumulators in nested functions, ``np.unique``,
and the refusal of ``try``. Each gradient is checked against central differences in
float64 in reverse mode, forward mode, the Hessian, ``jit=True`` and a gradient of a
gradient; what cannot be differentiated soundly is refused at its line."""

import warnings
from collections import defaultdict

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.jit import JitFallbackWarning
from srcgrad.testing import numerical_grad

X = np.array([0.3, 0.7, -1.1, 2.0])
V = np.array([0.5, -1.0, 0.25, 2.0])
W = np.array([1.0, -0.5, 2.0, 0.75])


def _hessian_fd(f, x, eps=1e-5):
    g = sg.grad(f)
    return np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def check_all_modes(f, x=X):
    """grad, jvp, hessian, jit=True and grad of grad of ``f`` against central differences."""
    want = numerical_grad(f, (x,))
    g = sg.grad(f)(x)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sg.jvp(f, (x,), (V,))[1], want @ V, rtol=1e-6, atol=1e-7)
    hess = _hessian_fd(f, x)
    np.testing.assert_allclose(sg.hessian(f)(x), hess, rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        np.testing.assert_allclose(sg.grad(f, jit=True)(x), g, rtol=1e-12, atol=1e-12)
    inner = sg.grad(f)

    def along(x):
        return np.sum(inner(x) * W)

    np.testing.assert_allclose(sg.grad(along)(x), hess @ W, rtol=1e-5, atol=1e-6)


# ----- 1. lists held by a dict or a list, updated in place -----

def setdefault_append(x):
    d = {}
    for i in range(4):
        d.setdefault(i % 2, []).append(x[i] * x[i])
    return np.sum(np.stack(d[0]) * np.stack(d[1])) + sum(d[1])


def keyed_append(x):
    d = {"a": [], "b": []}
    for i in range(4):
        d["a" if i % 2 else "b"].append(np.sin(x[i]))
    return sum(d["a"]) * sum(d["b"])


def add_extend(x):
    d = {"a": [x[0]]}
    d["a"] += [x[1] ** 2]
    d["a"].extend([x[2], x[3] * x[0]])
    d["a"].extend(np.cos(v) for v in x[:2])
    return np.sum(np.stack(d["a"]) ** 2)


def grouped(x):
    groups = defaultdict(list)
    for i in range(4):
        groups[i % 2].append(x[i] ** 3)
    return sum(groups[0]) * np.prod(np.stack(groups[1]))


def rows_of_lists(x):
    rows = [[] for _ in range(2)]
    for i in range(4):
        rows[i % 2].append(x[i] * x[3 - i])
    return np.sum(np.stack(rows[0]) * np.stack(rows[1]))


def keyed_by_label(x):
    labels = np.array([2, 0, 2, 1])
    buckets = {}
    for i in range(len(labels)):
        buckets.setdefault(int(labels[i]), []).append(np.exp(x[i] / 2))
    return sum(np.mean(np.stack(v)) ** 2 for k, v in sorted(buckets.items()))


@pytest.mark.parametrize("f", [setdefault_append, keyed_append, add_extend, grouped,
                               rows_of_lists, keyed_by_label], ids=lambda f: f.__name__)
def test_item_updates_are_differentiated(f):
    check_all_modes(f)


def test_item_updates_keep_python_values():
    for f in (setdefault_append, keyed_append, add_extend, grouped, rows_of_lists, keyed_by_label):
        value, _ = sg.value_and_grad(f)(X)
        np.testing.assert_allclose(value, f(X), rtol=1e-14)


def held_elsewhere(x):
    a = [x[0]]
    d = {"k": a}
    d["k"].append(x[1])
    return sum(a) * x[2]   # Python: a is d["k"], and has two items


def read_before(x):
    d = {"k": [x[0]]}
    lst = d["k"]
    d["k"].append(x[1] * 3.0)
    return sum(lst) * x[2]


def repeated_rows(x):
    rows = [[]] * 2
    rows[0].append(x[1])
    return sum(rows[1]) * x[0]


def array_item(x):
    d = {"k": x * 1.0}
    d["k"].append(x[0])   # an array has no append: Python raises
    return np.sum(d["k"])


def grows_while_looping(x):
    d = {"k": [x[0]]}
    for v in d["k"]:
        if len(d["k"]) < 3:
            d["k"].append(v * 2.0)
    return sum(d["k"])


@pytest.mark.parametrize("f", [held_elsewhere, read_before, repeated_rows],
                         ids=lambda f: f.__name__)
def test_item_update_of_a_shared_list_is_refused(f):
    with pytest.raises(sg.UnsupportedError, match="shares its memory|sharing its memory"):
        sg.grad(f)(X)


def copied(x):
    d = {"k": [x[0]]}
    e = dict(d)
    d["k"].append(x[1] * 3.0)
    return sum(e["k"]) * x[2]   # Python: e["k"] is d["k"]


def held_by_another_container(x):
    d = {"k": [x[0]]}
    outer = [d]
    d["k"].append(x[1] * 3.0)
    return sum(outer[0]["k"]) * x[2]


def same_dict(x):
    d = {"k": [x[0]]}
    e = d
    d["k"].append(x[1] * 3.0)
    return sum(e["k"]) * x[2]


def one_list_in_two_rows(x):
    a = [x[0]]
    rows = [a for _ in range(2)]   # Python: both rows are a
    rows[0].append(x[1])
    return sum(rows[1]) * x[2]


def test_item_update_of_a_list_another_container_holds_is_refused():
    for f in (copied, held_by_another_container, same_dict, one_list_in_two_rows):
        with pytest.raises(sg.UnsupportedError, match="shares its memory|sharing its memory") as e:
            sg.grad(f)(X)
        assert "test_python_idioms_round10.py" in str(e.value)


def test_item_update_of_an_array_raises_as_python_does():
    with pytest.raises(AttributeError):
        array_item(X)
    with pytest.raises(AttributeError, match="needs a list there"):
        sg.grad(array_item)(X)


def test_item_update_while_looping_over_it_is_refused():
    with pytest.raises(sg.UnsupportedError, match="Python's loop would see the new items") as e:
        sg.grad(grows_while_looping)(X)
    assert "test_python_idioms_round10.py" in str(e.value)


# ----- 2. nonlocal accumulators in nested functions -----

def accumulates(x):
    total = 0.0

    def step(v):
        nonlocal total
        total = total + np.sin(v) * v

    for i in range(4):
        step(x[i])
    return total * x[0]


def branches_and_returns(x):
    total = 1.0
    count = 0

    def add(v, w=2.0):
        nonlocal total, count
        if v > 0:
            total = total + w * v ** 2
            count += 1
            return v * total
        total = total * np.cos(v)
        return -v

    ys = []
    for i in range(4):
        y = add(x[i])
        ys.append(y * total)
    return total / count + sum(ys)


def updates_an_array(x):
    acc = np.zeros(2)

    def push(a, b):
        nonlocal acc
        acc = acc + np.array([a * b, a - b])

    push(x[0], x[1])
    push(x[2], np.exp(x[3]))
    return np.sum(acc ** 2)


@pytest.mark.slow   # jit=True compiles with Numba (seconds each)
@pytest.mark.parametrize("f", [accumulates, branches_and_returns, updates_an_array],
                         ids=lambda f: f.__name__)
def test_nonlocal_functions_are_differentiated(f):
    check_all_modes(f)
    np.testing.assert_allclose(sg.value_and_grad(f)(X)[0], f(X), rtol=1e-14)


def called_in_an_expression(x):
    total = 0.0

    def step(v):
        nonlocal total
        total = total + v
        return v

    return total + step(x[0]) * 2.0


def passed_as_a_value(x):
    total = 0.0

    def step(v):
        nonlocal total
        total = total + v

    list(map(step, x))
    return total


def called_by_another_nested_def(x):
    total = 0.0

    def step(v):
        nonlocal total
        total = total + v

    def twice(v):
        step(v)
        step(v)

    twice(x[0])
    return total


def two_levels(x):
    total = 0.0

    def outer(v):
        def inner():
            nonlocal total
            total = total + v
        inner()

    outer(x[0])
    return total


@pytest.mark.parametrize("f,words", [
    (called_in_an_expression, "used here other than as a call that is a statement of its own"),
    (passed_as_a_value, "used here other than as a call"),
    (called_by_another_nested_def, "used here other than as a call"),
    (two_levels, "nonlocal")], ids=lambda v: getattr(v, "__name__", "words"))
def test_nonlocal_uses_that_cannot_be_rebound_are_refused(f, words):
    with pytest.raises(sg.UnsupportedError, match=words) as e:
        sg.grad(f)(X)
    assert "test_python_idioms_round10.py" in str(e.value)


# ----- 3. np.unique -----

def unique_values(x):
    u = np.unique(x)
    return np.sum(u ** 2 * np.arange(len(u))) + np.prod(np.unique(x[:3]))


def unique_with_flags(x):
    u, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    return np.sum(np.sin(u)[inv] * counts[inv] * x)


def unique_labels(x):
    labels = np.array([1, 2, 1, 3])
    u, first, inv, counts = np.unique(labels, return_index=True, return_inverse=True,
                                      return_counts=True)
    sums = np.zeros(len(u))
    np.add.at(sums, inv, x ** 2)
    return np.sum(x[first] ** 3) + np.sum(sums / counts) + np.sum(u * x[:3])


def unique_rows(x):
    m = np.stack([x, x[::-1] * 2.0, x])
    rows, index = np.unique(m, axis=0, return_index=True)
    return np.sum(rows ** 2 * np.arange(rows.size).reshape(rows.shape)) + len(index)


@pytest.mark.parametrize("f", [unique_values, unique_with_flags, unique_labels, unique_rows],
                         ids=lambda f: f.__name__)
def test_unique_is_differentiated_away_from_ties(f):
    check_all_modes(f)
    np.testing.assert_allclose(sg.value_and_grad(f)(X)[0], f(X), rtol=1e-14)


def test_unique_gives_a_tied_value_s_gradient_to_its_first_occurrence():
    # jax.numpy.unique's convention: the values are gathered at NumPy's return_index
    def weighted(x):
        return np.sum(np.unique(x) * np.array([1.0, 10.0]))

    t = np.array([2.0, 1.0, 2.0, 1.0])
    np.testing.assert_array_equal(sg.grad(weighted)(t), [10.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(sg.jvp(weighted, (t,), (np.array([1.0, 2.0, 4.0, 8.0]),))[1],
                                  10.0 * 1.0 + 1.0 * 2.0)


# ----- 4. try -----

LOG = []


def cleans_up(x):
    y = np.sin(x) * x[0]
    try:
        z = y ** 2
        for i in range(3):
            if i == 1:
                continue
            z = z + np.cos(x) * i
    finally:
        LOG.append("done")
        z = z * 2.0
    return np.sum(z)


def test_try_finally_is_its_blocks():
    check_all_modes(cleans_up)
    assert LOG and set(LOG) == {"done"}


def catches(x):
    try:   # (one NumPy call alone would be supported: tests/test_try_calls.py)
        y = np.sqrt(x)
        y = y * 2.0
    except FloatingPointError:
        y = x
    return np.sum(y)


def returns_in_finally(x):
    try:
        return np.sum(x)
    finally:
        x = x * 2.0


def test_try_except_and_early_exits_are_refused_with_what_to_write():
    with pytest.raises(sg.UnsupportedError, match="try/except") as e:
        sg.grad(catches)(X)
    text = str(e.value)
    assert "test_python_idioms_round10.py" in text and "try:" in text
    assert "d.get(k, default)" in text and "sg.grad(f)(x)" in text
    with pytest.raises(sg.UnsupportedError, match="try/finally with a return") as e:
        sg.grad(returns_in_finally)(X)
    assert "return it after the finally block" in str(e.value)


# ----- 2b. nested functions that change a list, dict or array of f in place -----

def appends_in_a_closure(x):
    items = []

    def add(v):
        items.append(np.sin(v) * v)

    for i in range(3):
        add(x[i])
    return sum(items) * items[0]


def fills_a_dict_in_a_closure(x):
    d = {"a": []}

    def add(v):
        d["a"].append(np.sin(v))
        d["b"] = v * 2.0

    for i in range(3):
        add(x[i])
    return sum(d["a"]) * d["b"]


def writes_an_array_in_a_closure(x):
    buf = np.zeros(3)

    def put(i, v):
        buf[i] = v ** 2

    for i in range(3):
        put(i, x[i] * x[3])
    return np.sum(buf * np.arange(1.0, 4.0))


@pytest.mark.slow   # jit=True compiles with Numba (seconds each)
@pytest.mark.parametrize("f", [appends_in_a_closure, fills_a_dict_in_a_closure,
                               writes_an_array_in_a_closure], ids=lambda f: f.__name__)
def test_nested_functions_changing_a_local_in_place_are_differentiated(f):
    check_all_modes(f)
    np.testing.assert_allclose(sg.value_and_grad(f)(X)[0], f(X), rtol=1e-14)


def appends_to_an_aliased_list(x):
    items = []
    alias = items

    def add(v):
        items.append(np.sin(v))

    add(x[0])
    return sum(alias) * 1.0   # Python: alias is items, and holds sin(x[0])


def test_a_closure_changing_a_list_another_name_holds_is_refused():
    with pytest.raises(sg.UnsupportedError, match="alias") as e:
        sg.grad(appends_to_an_aliased_list)(X)
    assert "test_python_idioms_round10.py" in str(e.value)


def _put(buf, i, v):
    buf[i] = v ** 2
    return buf


def helper_writes_its_argument(x):
    buf = np.zeros(3)
    for i in range(3):
        buf = _put(buf, i, x[i] * x[3])
    return np.sum(buf * np.arange(1.0, 4.0))


@pytest.mark.slow   # jit=True compiles with Numba (seconds each)
def test_hessian_of_a_helper_writing_into_its_argument():
    # the batched tangent of the write's undo (rt.restore_item_tangent) sets the item of
    # every seed (it set a row of the seeds before: a shape error)
    check_all_modes(helper_writes_its_argument)


# ----- 4b. try: v = d[k] / except KeyError: the test Python makes -----

def cached(x):
    cache = {0: x[0] * 2.0}
    total = 0.0
    for i in range(3):
        try:
            v = cache[i]
        except KeyError:
            v = np.sin(x[i])
            cache[i] = v
        total = total + v * x[3]
    return total


def indexed(x):
    xs = [x[0], x[1]]
    out = 0.0
    for i in range(4):
        try:
            v = xs[i]
        except (IndexError, KeyError):
            v = x[2] ** 2
        else:
            v = v * 3.0
        out = out + v * x[3]
    return out


@pytest.mark.parametrize("f", [cached, indexed], ids=lambda f: f.__name__)
def test_a_lookup_caught_as_it_fails_is_differentiated(f):
    check_all_modes(f)
    np.testing.assert_allclose(sg.value_and_grad(f)(X)[0], f(X), rtol=1e-14)


def names_the_error(x):
    d = {"a": x[0]}
    try:
        v = d["b"]
    except KeyError as e:
        v = x[1] * len(str(e))
    return v


def two_handlers(x):
    d = {"a": x[0]}
    try:
        v = d["b"]
    except KeyError:
        v = x[1]
    except IndexError:
        v = x[2]
    return v


def test_other_lookups_caught_are_refused():
    for f in (names_the_error, two_handlers):
        with pytest.raises(sg.UnsupportedError, match="try/except") as e:
            sg.grad(f)(X)
        assert "test_python_idioms_round10.py" in str(e.value)


def appends_while_looping_over_keys(x):
    d = {"a": [x[0]], "b": [x[1]]}
    for k in sorted(d):
        d[k].append(d[k][0] * x[2])
    for i in range(len(d["a"])):
        d["b"].append(d["a"][i] * x[3])
    return sum(d["a"]) * np.prod(np.stack(d["b"]))


def appends_while_looping_over_items(x):
    d = {"a": [x[0]], "b": [x[1]]}
    for k, vs in d.items():   # the loop's list of the items holds the lists appended to
        d[k].append(vs[0] * x[3])
    return sum(d["a"]) * sum(d["b"])


def reads_a_row_after_appending(x):
    d = {"a": [x[0]], "b": [x[1]]}
    for k, vs in d.items():
        d[k].append(x[2])
        x = x * len(vs)   # Python: vs is d[k], two items now
    return np.sum(x) + sum(d["a"])


def test_appending_while_looping_over_the_keys_is_differentiated():
    check_all_modes(appends_while_looping_over_keys)
    for f in (reads_a_row_after_appending, appends_while_looping_over_items):
        with pytest.raises(sg.UnsupportedError, match="shares its memory") as e:
            sg.grad(f)(X)
        assert "test_python_idioms_round10.py" in str(e.value)
