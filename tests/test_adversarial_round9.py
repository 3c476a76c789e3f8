"""Ninth adversarial round: programs that srcgrad got silently wrong (or failed on with an
error that was not a refusal) before their fix. Each gradient, tangent or Hessian is checked
against central differences in float64 and values worked out by hand; each refusal must name
this file, the user's line and the construct."""

import collections
import operator

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from adversarial_checks import fd_hessian, X, assert_grad_and_jvp, assert_refused_in


def assert_refused_here(run, *words):
    assert_refused_in(__file__, run, *words)


# ----- sum() of lists: a concatenation, not a sum -----
# ``sum([[a], [b]], [])`` joins the lists. The rule of Python's sum gave each item the whole
# cotangent list, so sg.grad of ``sum([[x0], [x1]], [])[1] ** 2`` was 0 where it is
# 2 * x1 (silently), and forward mode failed adding a list to 0.0. It is refused now.

def sum_of_lists(x):
    return sum([[x[0]], [x[1]]], [])[1] ** 2


def sum_of_tuples(x):
    return sum([(x[0], x[2]), (x[1],)], ())[2] ** 2


def sum_of_lists_with_a_start(x):
    return sum([[x[0]]], [x[1]])[0] ** 2


# max() and min() of lists or tuples compare them item by item and return one of them:
# the rules of numbers failed (a TypeError multiplying a list by the share); refused too.

def max_of_lists(x):
    return max([x[0], x[1]], [x[2], x[3]])[1] ** 2


def min_of_tuples(x):
    return min((x[0], x[1]), (x[2], x[3]))[1] ** 2


def max_of_a_list_of_lists(x):
    return max([[x[0], x[1]], [x[2], x[3]]])[1] ** 2


@pytest.mark.parametrize("f, words", [
    (sum_of_lists, "sum() of lists or tuples"), (sum_of_tuples, "sum() of lists or tuples"),
    (sum_of_lists_with_a_start, "sum() of lists or tuples"),
    (max_of_lists, "max() or min() of lists"), (min_of_tuples, "max() or min() of lists"),
    (max_of_a_list_of_lists, "max() or min() of lists")])
@pytest.mark.parametrize("mode", ["grad", "jvp", "hessian", "value_and_grad"])
def test_sum_max_min_of_lists_are_refused(f, words, mode):
    run = {"grad": lambda: sg.grad(f)(X.copy()),
           "jvp": lambda: sg.jvp(f, (X.copy(),), (X.copy(),)),
           "hessian": lambda: sg.hessian(f)(X.copy()),
           "value_and_grad": lambda: sg.value_and_grad(f)(X.copy())}[mode]
    assert_refused_here(run, words)


def sum_of_arrays_in_a_list(x):
    return np.sum(sum([x[:2], x[2:], x[1:3] ** 2]) ** 2)


def test_sum_of_numbers_and_arrays_still_differentiates():
    assert_grad_and_jvp(sum_of_arrays_in_a_list, (X.copy(),))
    assert_grad_and_jvp(lambda x: sum([x[0], x[1] ** 2], x[2]) ** 2, (X.copy(),))
    assert_grad_and_jvp(lambda x: max(x[0], x[1] ** 2, 0.1) + min([x[2], x[3]]), (X.copy(),))


# ----- A for loop over a set -----
# The loop reads ``seq[i]``: a set has no items by index, so ``for i in {0, 2}`` failed
# with Python's TypeError in every mode, and a loop over a global dict with a KeyError in
# reverse mode (the run-time check that refuses a dict looked at local names only). A set
# display (or generator, dict display) is listed first now; a name holding a set, or a
# global set or dict, is refused where the loop starts.

SET_OF_INDICES = {1, 3}
DICT_OF_INDICES = {1: "b", 3: "d"}


def loop_over_a_set_display(x):
    s = 0.0
    for i in {0, 2}:
        s = s + x[i] ** 2
    return s


def sum_over_a_set_display(x):
    return sum(x[i] ** 3 for i in {0, 2, 2})


def loop_over_a_dict_display(x):
    s = 0.0
    for k in {1: 0.0, 3: 0.0}:
        s = s + x[k] ** 2
    return s


@pytest.mark.parametrize("f", [loop_over_a_set_display, sum_over_a_set_display,
                               loop_over_a_dict_display])
def test_a_loop_over_a_set_display(f):
    assert_grad_and_jvp(f, (X.copy(),))
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), fd_hessian(f, X.copy()), atol=1e-5)


def loop_over_a_local_set(x):
    indices = {0, 2}
    s = 0.0
    for i in indices:
        s = s + x[i] ** 2
    return s


def loop_over_a_global_set(x):
    s = 0.0
    for i in SET_OF_INDICES:
        s = s + x[i] ** 2
    return s


def loop_over_a_global_dict(x):
    s = 0.0
    for i in DICT_OF_INDICES:
        s = s + x[i] ** 2
    return s


def loop_over_a_set_argument(x, indices):
    s = 0.0
    for i in indices:
        s = s + x[i] ** 2
    return s


@pytest.mark.parametrize("f, args", [(loop_over_a_local_set, ()), (loop_over_a_global_set, ()),
                                     (loop_over_a_global_dict, ()),
                                     (loop_over_a_set_argument, ({0, 3},))])
@pytest.mark.parametrize("mode", ["grad", "jvp", "hessian"])
def test_a_loop_over_a_name_holding_a_set_or_dict_is_refused(f, args, mode):
    run = {"grad": lambda: sg.grad(f)(X.copy(), *args),
           "jvp": lambda: sg.jvp(f, (X.copy(),) + args, (X.copy(),) + (None,) * len(args)),
           "hessian": lambda: sg.hessian(f)(X.copy(), *args)}[mode]
    assert_refused_here(run, "a for loop over")


# ----- A slice of a list written with a value of another length -----
# ``l[1:2] = [a, b]`` makes the list longer: the adjoint read the list's gradient by the
# positions after the write, and failed with an IndexError (or, for a Hessian, a TypeError
# restoring the slice's tangent). It is refused; a write of the same length is right in
# every mode, its Hessian included.

def list_slice_grown(x):
    items = [x[0], x[1], x[2]]
    items[1:2] = [x[3] ** 2, x[0]]
    return items[1] * items[2] + items[3]


def list_slice_shrunk(x):
    items = [x[0], x[1], x[2]]
    items[0:2] = [x[3] ** 2]
    return items[0] * items[1]


def list_slice_same_length(x):
    items = [x[0], x[1], x[2]]
    items[1:3] = [x[3] ** 2, x[0]]
    return items[1] * items[2] + items[0] * x[1]


@pytest.mark.parametrize("f", [list_slice_grown, list_slice_shrunk])
@pytest.mark.parametrize("mode", ["grad", "value_and_grad", "hessian"])
def test_a_list_slice_write_that_resizes_is_refused(f, mode):
    run = {"grad": lambda: sg.grad(f)(X.copy()),
           "value_and_grad": lambda: sg.value_and_grad(f)(X.copy()),
           "hessian": lambda: sg.hessian(f)(X.copy())}[mode]
    assert_refused_here(run, "a write into a slice of the list 'items'")


def test_a_list_slice_write_of_the_same_length():
    f = list_slice_same_length
    assert_grad_and_jvp(f, (X.copy(),))
    # f = x3^2 * x0 + x0 * x1: its Hessian by hand
    x0, x1, x3 = X[0], X[1], X[3]
    want = np.array([[0, 1, 0, 2 * x3], [1, 0, 0, 0], [0, 0, 0, 0], [2 * x3, 0, 0, 2 * x0]])
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), want, atol=1e-12)
    np.testing.assert_allclose(want, fd_hessian(f, X.copy()), atol=1e-5)


# ----- collections.defaultdict in forward mode -----
# The tangent of a defaultdict was a plain dict: a key read before it was written (``d[k]
# += v`` the first time, or a missing key read) failed with a KeyError in sg.jvp,
# sg.jacfwd and sg.hessian. The tangent is a defaultdict too, its default the zero.

def defaultdict_accumulated(x):
    d = collections.defaultdict(float)
    for i in range(4):
        d[i % 2] += x[i] ** 2
    return d[0] * d[1]


def defaultdict_missing_key_read(x):
    d = collections.defaultdict(float)
    d[0] = x[0] * x[1]
    return d[0] * 2 + d[5]


@pytest.mark.parametrize("f", [defaultdict_accumulated, defaultdict_missing_key_read])
def test_a_defaultdict_in_forward_mode(f):
    assert_grad_and_jvp(f, (X.copy(),))
    np.testing.assert_allclose(sg.jacfwd(f)(X.copy()), numerical_grad(f, (X.copy(),)), rtol=1e-6)
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), fd_hessian(f, X.copy()), atol=1e-5)


def test_the_hessian_of_a_defaultdict_sum_by_hand():
    # (x0^2 + x2^2) (x1^2 + x3^2): d2/dx0dx1 = 4 x0 x1, d2/dx0^2 = 2 (x1^2 + x3^2)
    h = sg.hessian(defaultdict_accumulated)(X.copy())
    x0, x1, x2, x3 = X
    np.testing.assert_allclose(h[0, 1], 4 * x0 * x1)
    np.testing.assert_allclose(h[0, 0], 2 * (x1 ** 2 + x3 ** 2))


# ----- Hessians of a product with a constant vector (np.dot) -----
# The gradient of ``np.dot(x, c)`` is ``c``: its batched tangent (sg.hessian, sg.jacfwd of
# sg.grad) was a per-seed call whose every tangent was None, inside a tuple argument, which
# the rule's zero-dropping did not see: it returned 0.0 with no batch axis, and sg.hessian
# failed reshaping it. Such a call is a zero tangent now.

def dot_with_a_constant(x):
    return np.dot(x, np.arange(4.0))


def dot_with_an_integer_constant_plus_square(x):
    return np.dot(x, np.arange(4)) + np.sum(x ** 3)


def dot_of_a_constant_matrix(x):
    return np.sum(np.dot(np.arange(8.0).reshape(2, 4), x))


@pytest.mark.parametrize("f", [dot_with_a_constant, dot_with_an_integer_constant_plus_square,
                               dot_of_a_constant_matrix])
def test_the_hessian_of_a_dot_with_a_constant(f):
    h = sg.hessian(f)(X.copy())
    np.testing.assert_allclose(h, fd_hessian(f, X.copy()), atol=1e-5)
    np.testing.assert_allclose(sg.jacfwd(sg.grad(f))(X.copy()), h, atol=1e-12)
    if f is dot_with_an_integer_constant_plus_square:
        np.testing.assert_allclose(h, np.diag(6 * X))   # by hand
    else:
        assert not h.any()


# ----- operator.add / operator.mul on lists: Python's + and * -----
# A list display passed to operator.add went through NumPy's rule, which made each
# display an array: operator.add([x0, x2], [x1, x3]) was computed as [x0 + x1, x2 + x3]
# where Python joins the lists, so sg.grad of its item 0 squared was [-0.4, -0.4, 0, 0]
# (and value_and_grad's value 0.04), not [0.6, 0, 0, 0]; operator.mul([x0, x1], 2)
# doubled the entries instead of repeating the list. A call of operator.add, sub, mul,
# truediv, floordiv, mod, pow or matmul with two arguments is the operator itself now.

def operator_add_joins_lists(x):
    return operator.add([x[0], x[2]], [x[1], x[3]])[0] ** 2


def operator_add_joins_tuples(x):
    return operator.add((x[0],), (x[1],))[1] ** 2


def operator_mul_repeats_a_list(x):
    return operator.mul([x[0], x[1]], 2)[0] * x[1] + operator.mul([x[2]], 2)[1] ** 2


def operator_functions_on_arrays(x):
    return np.sum(operator.mul(x, x) + operator.truediv(x, 2.0) - operator.pow(x, 3)) + \
        operator.matmul(x, x) + operator.mod(x[2], 0.7) + operator.floordiv(x[3], 0.3)


@pytest.mark.parametrize("f", [operator_add_joins_lists, operator_add_joins_tuples,
                               operator_mul_repeats_a_list, operator_functions_on_arrays])
def test_operator_functions_are_python_operators(f):
    assert_grad_and_jvp(f, (X.copy(),))
    value, g = sg.value_and_grad(f)(X.copy())
    assert value == f(X.copy())
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), fd_hessian(f, X.copy()), atol=1e-5)


def test_operator_add_of_lists_by_hand():
    np.testing.assert_allclose(sg.grad(operator_add_joins_lists)(X.copy()), [2 * X[0], 0, 0, 0])
    # x0 * x1 + x2^2: [x1, x0, 2 x2, 0]
    np.testing.assert_allclose(sg.grad(operator_mul_repeats_a_list)(X.copy()),
                               [X[1], X[0], 2 * X[2], 0])


# ----- collections.Counter in forward mode; loops over dict views held by a name -----
# A Counter reads a missing key as 0 (``__missing__``): its tangent, a plain dict, failed
# with a KeyError in sg.jvp and sg.hessian. ``it = d.items(); for k, v in it:`` read
# ``it[i]`` and failed with Python's TypeError in every mode: it is refused at the loop.

def counter_accumulated(x):
    c = collections.Counter()
    for i in range(4):
        c[i % 2] += x[i] ** 2
    return c[0] * c[1] + c[7]


def test_a_counter_in_forward_mode():
    f = counter_accumulated
    assert_grad_and_jvp(f, (X.copy(),))
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), fd_hessian(f, X.copy()), atol=1e-5)
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), sg.hessian(defaultdict_accumulated)(X.copy()))


def loop_over_dict_items_by_name(x):
    d = {0: 1.0, 2: 3.0}
    pairs = d.items()
    s = 0.0
    for i, w in pairs:
        s = s + x[i] ** 2 * w
    return s


@pytest.mark.parametrize("mode", ["grad", "jvp", "hessian"])
def test_a_loop_over_a_dict_view_held_by_a_name_is_refused(mode):
    f = loop_over_dict_items_by_name
    run = {"grad": lambda: sg.grad(f)(X.copy()),
           "jvp": lambda: sg.jvp(f, (X.copy(),), (X.copy(),)),
           "hessian": lambda: sg.hessian(f)(X.copy())}[mode]
    assert_refused_here(run, "a for loop over 'pairs'")


# ----- The Hessian of a 2-D array's .tolist() -----
# The tangent of the nested list's gradient was a number where a row had no tangent (or
# the whole list none), and tolist's adjoint reshaped that one number to the array's
# shape: sg.hessian and sg.jacfwd(sg.grad(f)) failed. A number fills its block now.

def nested_tolist(x):
    rows = x.reshape(2, 2).tolist()
    return rows[1][0] * rows[0][1]


def nested_tolist_one_row(x):
    rows = (x.reshape(2, 2) ** 2).tolist()
    return rows[1][0] * rows[1][1] + x[0]


@pytest.mark.parametrize("f", [nested_tolist, nested_tolist_one_row])
def test_the_hessian_of_a_nested_tolist(f):
    assert_grad_and_jvp(f, (X.copy(),))
    h = sg.hessian(f)(X.copy())
    np.testing.assert_allclose(h, fd_hessian(f, X.copy()), atol=1e-5)
    np.testing.assert_allclose(sg.jacfwd(sg.grad(f))(X.copy()), h, atol=1e-12)
    if f is nested_tolist:   # x1 * x2
        np.testing.assert_array_equal(h, [[0, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
