"""``global G`` in the function differentiated (transform/global_statements.py): an
evaluation counter and a value kept for later work through every mode, the module sees
each change as Python's run would make it, and a gradient through ``G`` is followed (it
was refused: "global is not supported"). Loggers in forward mode (they were refused there,
though reverse mode kept them)."""

import logging
import warnings

import numpy as np
import pytest

import srcgrad as sg
from tests.adversarial_checks import assert_grad_and_jvp, assert_refused_in

X = np.array([0.3, -1.2, 2.0])
CALLS = 0
LAST = None
SCALE = 1.0
TOTAL = 0.0


def counted(x):
    global CALLS
    CALLS += 1
    return np.sum(x ** 2)


def keeps_last(x):
    global LAST
    y = np.tanh(x) * 2
    LAST = y
    return np.sum(LAST * x)


def scale_then_change(x):
    """The value read before the change is the one the gradient of ``y`` uses."""
    global SCALE
    y = x * SCALE
    SCALE = SCALE + 1.0
    return np.sum(y * x * SCALE)


def accumulated_in_a_loop(x):
    global TOTAL
    TOTAL = 0.0
    for v in x:
        TOTAL = TOTAL + v ** 3
    return TOTAL


def early_return(x):
    global TOTAL
    TOTAL = np.sum(x)
    if TOTAL > 0:
        return TOTAL * 2
    TOTAL = -TOTAL
    return TOTAL


def test_the_module_sees_each_run_once_per_call():
    global CALLS
    CALLS = 0
    g = sg.grad(counted)
    np.testing.assert_allclose(g(X.copy()), 2 * X)
    np.testing.assert_allclose(g(X.copy()), 2 * X)
    assert CALLS == 2
    sg.jvp(counted, (X.copy(),), (np.ones(3),))
    assert CALLS == 3
    sg.value_and_grad(counted)(X.copy())
    assert CALLS == 4


@pytest.mark.parametrize("f", [keeps_last, scale_then_change, accumulated_in_a_loop, early_return])
@pytest.mark.parametrize("x", [X, -X], ids=["x", "minus_x"])
def test_gradient_through_a_global_matches_differences(f, x):
    global SCALE
    eps, want = 1e-6, np.zeros(3)
    for i in range(3):
        step = np.zeros(3)
        step[i] = eps
        SCALE = 1.0
        up = f(x + step)
        SCALE = 1.0
        want[i] = (up - f(x - step)) / (2 * eps)
    SCALE = 1.0
    np.testing.assert_allclose(sg.grad(f)(x.copy()), want, rtol=1e-6, atol=1e-9)
    SCALE = 1.0
    tangent = np.array([0.7, -1.1, 0.4])
    value, out = sg.jvp(f, (x.copy(),), (tangent,))
    SCALE = 1.0
    assert value == pytest.approx(f(x.copy()), rel=1e-13)
    np.testing.assert_allclose(out, want @ tangent, rtol=1e-6, atol=1e-9)


def test_the_module_holds_what_python_leaves_there():
    global SCALE, TOTAL
    SCALE = 1.0
    sg.grad(scale_then_change)(X.copy())
    assert SCALE == 2.0
    sg.grad(accumulated_in_a_loop)(X.copy())
    assert TOTAL == pytest.approx(np.sum(X ** 3))
    sg.grad(keeps_last)(X.copy())
    np.testing.assert_allclose(LAST, np.tanh(X) * 2)
    sg.grad(early_return)(-X)
    assert TOTAL == pytest.approx(-np.sum(-X))


def test_hessian_through_a_global():
    h = sg.hessian(keeps_last)(X.copy())
    eps = 1e-5
    columns = [(sg.grad(keeps_last)(X + eps * e) - sg.grad(keeps_last)(X - eps * e)) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(h, np.stack(columns, axis=1), rtol=1e-6, atol=1e-8)


def writes_into_what_the_module_keeps(x):
    global LAST
    y = x * 2
    LAST = y
    y[0] = 5.0   # (Python's LAST changes too)
    return np.sum(y * x)


def reads_scale(x):
    return x * SCALE


def helper_reads_the_global(x):
    global SCALE
    SCALE = 3.0
    return np.sum(reads_scale(x))


def declares_global(x):
    global SCALE
    SCALE = 5.0
    return x


def helper_declares_global(x):
    return np.sum(declares_global(x))


def deletes_the_global(x):
    global TOTAL
    TOTAL = 1.0
    del TOTAL
    return np.sum(x)


@pytest.mark.parametrize("f, words", [
    (writes_into_what_the_module_keeps, "LAST"), (helper_reads_the_global, "reads the global"),
    (helper_declares_global, "global in a helper"), (deletes_the_global, "del")])
def test_refused_at_the_line(f, words):
    assert_refused_in(__file__, lambda: sg.grad(f)(X.copy()), words)


LOG = logging.getLogger("srcgrad.tests.global_statements")


def logs_and_warns(x):
    y = np.sin(x)
    LOG.debug("y is %s", y)
    LOG.info("sum %s", np.sum(y))
    logging.debug("module-level logger %s", y)
    warnings.warn("just saying")
    return np.sum(y * x)


def test_loggers_and_warnings_in_every_mode():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_grad_and_jvp(logs_and_warns, (X.copy(),))
        h = sg.hessian(logs_and_warns)(X.copy())
    np.testing.assert_allclose(h, np.diag(-X * np.sin(X) + 2 * np.cos(X)), atol=1e-12)


def binds_a_new_global(x):
    global NEW_NAME_OF_THIS_TEST
    NEW_NAME_OF_THIS_TEST = np.sum(x)
    return np.sum(x ** 2)


def declares_without_binding(x):
    global NEVER_DEFINED_IN_THIS_TEST
    return np.sum(x ** 2)


def test_a_global_the_module_lacks():
    np.testing.assert_allclose(sg.grad(binds_a_new_global)(X.copy()), 2 * X)
    assert NEW_NAME_OF_THIS_TEST == pytest.approx(np.sum(X))   # noqa: F821 (made by the call)
    np.testing.assert_allclose(sg.grad(declares_without_binding)(X.copy()), 2 * X)
    assert "NEVER_DEFINED_IN_THIS_TEST" not in globals()


STATE = {"k": 0.0}
HISTORY = [1.0]


def writes_an_item_of_the_global(x):
    global STATE
    STATE["k"] = np.sum(x) * 2
    return np.sum(x ** 2) + STATE["k"]


def appends_to_the_global(x):
    global HISTORY
    HISTORY.append(np.sum(x))
    return np.sum(x ** 2) * HISTORY[0]


def rebinds_the_global_dict(x):
    global STATE
    STATE = {**STATE, "k": np.sum(x) * 2}
    return np.sum(x ** 2) + STATE["k"]


@pytest.mark.parametrize("f", [writes_an_item_of_the_global, appends_to_the_global])
def test_an_in_place_change_of_a_declared_global_is_refused(f):
    # (the reverse sweep undid the item update, so the module kept the old value: Python's
    # change was silently lost, though the gradient was right)
    assert_refused_in(__file__, lambda: sg.grad(f)(X.copy()), "in place")
    assert STATE == {"k": 0.0} and HISTORY == [1.0]


def test_the_new_value_assigned_instead_reaches_the_module():
    global STATE
    np.testing.assert_allclose(sg.grad(rebinds_the_global_dict)(X.copy()), 2 * X + 2)
    assert STATE["k"] == pytest.approx(2 * np.sum(X))
    STATE = {"k": 0.0}
