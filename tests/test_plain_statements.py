"""``del`` statements (transform/plain_statements.py): ``del d[k]`` is ``d.pop(k)``, ``del x``
dropped where nothing reads ``x`` after it; ``y: T = v`` is ``y = v``; quiet
``np.errstate`` blocks are their statements (transform/warning_blocks.py). Gradients are
checked against central differences in float64; the rest is refused at its line."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.array([0.5, -1.0, 2.0])


def frees_a_temporary(x):
    tmp = x * 2.0
    y = np.sin(tmp)
    del tmp
    return np.sum(y)


def drops_a_key(p):
    q = dict(p)
    del q["b"]
    return sum(np.sum(v ** 2) for v in q.values())


def drops_items(x):
    xs = [x, x * 2, x * 3]
    del xs[1]
    del xs[-1]
    return np.sum(xs[0] * len(xs) + np.cos(xs[-1]))


def frees_in_a_loop(x):
    total = 0.0
    for i in range(3):
        t = x * i
        total = total + np.sum(t ** 2)
        del t
    return total


def test_deletions_are_differentiated():
    for f in (frees_a_temporary, drops_items, frees_in_a_loop):
        want = numerical_grad(f, (X,))
        np.testing.assert_allclose(sg.grad(f)(X), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(sg.jvp(f, (X,), (np.ones(3),))[1], want.sum(), rtol=1e-6)
    p = {"a": X, "b": 2 * X, "c": -X}
    g = sg.grad(drops_a_key)(p)
    np.testing.assert_allclose(g["a"], 2 * X, rtol=1e-12)
    np.testing.assert_allclose(g["b"], 0 * X)
    np.testing.assert_allclose(g["c"], -2 * X, rtol=1e-12)


def reads_after_del(x):
    tmp = x * 2.0
    del tmp
    return np.sum(tmp)  # noqa: F821  (deleted: refused)


def reads_in_the_next_round(x):
    t = x * 1.0
    total = 0.0
    for i in range(3):
        total = total + np.sum(t)
        del t
    return total


def deletes_a_slice(x):
    xs = [x, x]
    del xs[1:]
    return np.sum(xs[0])


@pytest.mark.parametrize("f,words", [(reads_after_del, "reads 'tmp'"),
                                     (reads_in_the_next_round, "reads 't'"),
                                     (deletes_a_slice, "del of a slice")],
                         ids=lambda v: getattr(v, "__name__", v))
def test_other_deletions_are_refused_at_their_line(f, words):
    with pytest.raises(sg.UnsupportedError, match=words) as info:
        sg.grad(f)(X)
    assert info.value.filename == __file__ and "del" in info.value.source_line


def quiet_block(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(x > 0, np.log(np.abs(x)), 0.0)
    return np.sum(r * x)


def raising_block(x):
    with np.errstate(over="raise"):
        y = np.exp(x)
    return np.sum(y)


def test_a_quiet_errstate_block_is_its_statements():
    # (transform/warning_blocks.py: "ignore"/"warn" change no value; "raise" would)
    want = numerical_grad(quiet_block, (X,))
    np.testing.assert_allclose(sg.grad(quiet_block)(X), want, rtol=1e-6, atol=1e-8)
    with pytest.raises(sg.UnsupportedError, match="with block") as info:
        sg.grad(raising_block)(X)
    assert info.value.filename == __file__


def annotated(x: np.ndarray, k: float = 2.0) -> float:
    y: np.ndarray = np.sin(x) * k
    z: float
    total: float = 0.0
    for v in y:
        total += v ** 2
    return total


declared = 5.0   # a global: a function declaring its own `declared` must not read it


def declared_never_assigned(x):
    declared: float
    return np.sum(x) * declared


def test_annotated_assignments_are_assignments():
    want = numerical_grad(annotated, (X,))
    np.testing.assert_allclose(sg.grad(annotated)(X), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.grad(annotated)(X), 4 * np.sin(2 * X), rtol=1e-12)
    with pytest.raises(sg.UnsupportedError, match="declared") as info:
        sg.grad(declared_never_assigned)(X)
    assert info.value.filename == __file__
