"""Eleventh adversarial round: programs that srcgrad got silently wrong (or refused where
an answer was in reach, or refused at a misleading place) before their fix. Each gradient,
tangent or Hessian is checked against central differences in float64."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from adversarial_checks import V, X, assert_grad_and_jvp, assert_refused_in, fd_hessian


# ----- An array appended to a container's list, then written in place -----
# ``d[k].append(v)`` is ``d[k] += [v]`` (transform/item_updates.py), an augmented item
# store; the alias analysis (analysis/aliasing.py ``_stored_into``) did not count what an
# augmented store puts into the container, so ``d`` was not known to hold ``v``: a later
# ``v[0] = 5.0`` changed ``d['a'][0]`` in Python but not in the gradient, silently.

def appended_then_written(x):
    d = {'a': []}
    v = np.sin(x)
    d['a'].append(v)
    v[0] = 5.0
    return np.sum(d['a'][0] * x)


def added_to_a_nested_list_then_written(x):
    d = [[x * 1.0]]
    v = np.sin(x)
    d[0] += [v]
    v[1] = 5.0 * x[0]
    return np.sum(d[0][1] * x)


def extended_then_scaled(x):
    groups = {'g': [x ** 2]}
    v = np.cos(x)
    groups['g'].extend([v, x])
    v *= 2.0
    return np.sum(groups['g'][1] * groups['g'][0])


@pytest.mark.parametrize("f", [appended_then_written, added_to_a_nested_list_then_written,
                               extended_then_scaled])
def test_a_write_into_an_appended_array_is_seen(f):
    assert_refused_in(__file__, lambda: sg.grad(f)(X.copy()), "in-place update")
    # forward mode writes the tangents in place as Python writes the values (or refuses)
    try:
        value, tangent = sg.jvp(f, (X.copy(),), (V.copy(),))
    except sg.SrcgradError:
        assert_refused_in(__file__, lambda: sg.jvp(f, (X.copy(),), (V.copy(),)), "in-place")
        return
    np.testing.assert_allclose(tangent, numerical_grad(f, (X.copy(),)) @ V, rtol=1e-6)


def appended_then_written_after_its_last_read(x):
    d = {'a': []}
    v = np.sin(x)
    d['a'].append(v)
    total = np.sum(d['a'][0] * x)
    v[0] = 5.0
    return total + np.sum(v)


def test_a_write_after_the_containers_last_read_is_differentiated():
    assert_grad_and_jvp(appended_then_written_after_its_last_read, (X.copy(),))


# ----- An assignment two subscripts deep: c[k][i] = v -----
# ``n['a'][0] = v``, ``rows[i][j] = v``, ``A[i][j] = v`` were refused ("assignment into a
# nested subscript"): 13 of the first 60 programs of tests/random_containers_views.py.
# Python's write changes the item ``c[k]`` holds, in place: srcgrad writes it as that
# update (transform/item_updates.py): ``item = copy.copy(c[k]); item[i] = v; c[k] = item``,
# the store marked augmented so that analysis/aliasing.py checks the names and the other
# items that share ``c[k]`` (``rows = [r, r]``); ``c[k]`` must be an item (rt.item_key),
# not the copy a list's slice or an array's fancy index makes, whose write Python loses.

def nested_dict_list_item(x):
    n = {'a': [x * 1.0, x ** 2]}
    n['a'][0] = np.sin(x)
    return np.sum(n['a'][0] * n['a'][1])


def list_of_lists_in_a_loop(x):
    grid = [[0.0] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(3):
            grid[i][j] = x[i] * x[j + 1]
    grid[1][2] += np.sin(x[0])
    return sum(grid[i][j] ** 2 for i in range(3) for j in range(3))


def array_rows_written_twice_indexed(x):
    A = np.zeros((2, 4))
    for i in range(2):
        A[i][1:3] = x[1:3] * x[i]
        A[i][0] += np.sin(x[3])
    A[1][3] = np.cos(x[0])
    return np.sum(A ** 3)


def rebinding_a_params_list_item(x):
    p = {'w': [x * 1.0, x * 2.0]}
    for k in range(3):
        p['w'][k % 2] = p['w'][k % 2] * np.tanh(p['w'][1 - k % 2])
    return np.sum(p['w'][0] + p['w'][1] ** 2)


def a_row_read_through_a_view_of_another_row(x):
    T = x.reshape(2, 2).copy()
    row = T[0]
    T[1][0] = row[1] * 2.0          # row shares T's memory, but not T[1]'s
    return np.sum(row ** 2) + np.sum(T)


def dict_of_an_array_and_a_list(x):
    d = {'w': x.copy(), 'b': [x[0], x[1]]}
    d['w'][1:3] = d['b'][0] * d['w'][:2]
    d['b'][1] = d['w'][3] ** 2
    return np.sum(d['w'] ** 2) + d['b'][0] * d['b'][1]


def through_an_arrays_slices(x):
    y = np.outer(x, x)
    y[:, 1][2] = np.sin(x[0])   # a column: a view of y, so the write reaches y
    y[1:][0] *= 2.0
    return np.sum(y ** 2)


NESTED = [through_an_arrays_slices, nested_dict_list_item, list_of_lists_in_a_loop, array_rows_written_twice_indexed,
          rebinding_a_params_list_item, a_row_read_through_a_view_of_another_row,
          dict_of_an_array_and_a_list]


@pytest.mark.parametrize("f", NESTED)
def test_an_assignment_two_subscripts_deep(f):
    assert_grad_and_jvp(f, (X.copy(),))


@pytest.mark.parametrize("f", NESTED[:2])
def test_an_assignment_two_subscripts_deep_hessian(f):
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), fd_hessian(f, X), rtol=1e-5, atol=1e-5)


def item_shared_by_two_rows(x):
    r = [x * 1.0, x * 2.0]
    rows = [r, r]
    rows[0][0] = np.sin(x)   # changes rows[1][0] too
    return np.sum(rows[1][0] * x)


def item_held_by_a_name(x):
    r = [x * 1.0, x * 2.0]
    rows = {'a': r}
    rows['a'][0] = np.sin(x)   # changes r too
    return np.sum(r[0] * x)


def a_list_slices_item(x):
    c = [x * 1.0, x * 2.0, x * 3.0]
    c[0:2][0] = np.sin(x)   # writes into a copy: c is unchanged
    return np.sum(c[0] * x)


def an_arrays_fancy_rows(x):
    A = np.outer(x, x)
    idx = [0, 1]
    A[idx][0] = np.sin(x)   # writes into a copy: A is unchanged
    return np.sum(A ** 2)


def three_deep(x):
    d = {'a': {'b': [x, x * 2.0]}}
    d['a']['b'][1] = np.cos(x) * d['a']['b'][0]
    return np.sum(d['a']['b'][1] ** 2)


def an_item_of_a_tuple(x):
    nested = ([x.copy()], 2)
    nested[0][0] = nested[0][0] * 3.0   # Python changes the list the tuple holds
    return np.sum(nested[0][0])


@pytest.mark.parametrize("f, words", [(item_shared_by_two_rows, ("another item of 'rows'",)),
                                      (an_item_of_a_tuple, ("the tuple nested",)),
                                      (item_held_by_a_name, ("'r'",)),
                                      (a_list_slices_item, ("c[0:2]", "one item of c")),
                                      (an_arrays_fancy_rows, ("A[idx]", "one item of A")),
                                      (three_deep, ("three subscripts deep",))])
def test_an_assignment_two_subscripts_deep_refused_where_python_differs(f, words):
    assert_refused_in(__file__, lambda: sg.grad(f)(X.copy()), *words)


# ----- A refusal met while a Hessian runs the gradient, located at the function's def -----
# The run-time alias check of the user's own gradient (rt.check_unshared) raises at the
# user's write; sg.hessian (and grad of grad, hvp) said every refusal it met in terms of
# the generated code's origin, so this one was put at the ``def`` line (or, for a lambda
# calling ``f``, at the lambda's file with ``f``'s line numbers quoted). An error already at
# a line of the user's (codegen/refusals.py) now keeps it.

def written_while_its_reversed_view_is_read(x):
    c = np.sin(x)
    v = c[::-1]
    c[1] = 3.0 * x[0] ** 2   # the refused line
    return np.sum(v ** 2 * c)


def _calls_it(v):
    return written_while_its_reversed_view_is_read(v)


def _squared_gradient(v):
    return np.sum(sg.grad(written_while_its_reversed_view_is_read)(v) ** 2)


@pytest.mark.parametrize("second", [sg.hessian(written_while_its_reversed_view_is_read),
                                    sg.hessian(_calls_it), sg.grad(_squared_gradient)])
def test_a_refusal_inside_a_hessian_names_the_users_write(second):
    f = written_while_its_reversed_view_is_read
    with pytest.raises(sg.SrcgradError) as info:
        second(X.copy())
    line = f.__code__.co_firstlineno + 3
    assert f'{__file__}", line {line}' in str(info.value), str(info.value)
    assert "c[1] = 3.0" in str(info.value)


def test_the_gradients_own_refusal_is_not_said_as_a_second_derivative():
    f = written_while_its_reversed_view_is_read
    assert_refused_in(__file__, lambda: sg.grad(f)(X.copy()), "c[1] = 3.0")
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(f)(X.copy())
    assert "grad of grad" not in str(info.value) and "hessian" not in str(info.value)


# ----- A write through x.flat -----
# ``c.flat[k] = v`` was refused with the message of ``x[i][j] = v`` ("Index with one
# subscript"), which does not apply. It is NumPy's put at the positions ``k`` picks
# (transform/flat_reads.py), which srcgrad differentiates as a write into ``c``.

def flat_diagonal_written(x):
    c = np.outer(x, x)
    c.flat[::5] = np.sin(x)
    return np.sum(c ** 2)


def flat_updates_with_a_repeated_index(x):
    c = np.outer(x, np.cos(x))
    c.flat[3] += x[0] ** 3
    c.flat[[1, 2, 1]] *= 2.0
    return np.sum(c ** 2)


def flat_written_by_a_mask_with_repetition(x):
    c = np.sin(x).reshape(2, 2)
    c.flat[c.ravel() > -0.45] = x[:2] ** 2
    return np.sum(c ** 2 * x.reshape(2, 2))


def flat_written_in_a_loop(x):
    c = np.zeros(8)
    for i in range(4):
        c.flat[2 * i] = x[i] ** 2
        c.flat[2 * i + 1] = np.sin(x[i])
    return np.sum(c * np.arange(8.0))


@pytest.mark.parametrize("f", [flat_diagonal_written, flat_updates_with_a_repeated_index,
                               flat_written_by_a_mask_with_repetition, flat_written_in_a_loop])
def test_a_write_through_flat(f):
    assert_grad_and_jvp(f, (X.copy(),))
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), fd_hessian(f, X), rtol=1e-5, atol=1e-5)


def flat_written_while_a_view_is_read(x):
    c = np.sin(x)
    v = c[1:]
    c.flat[2] = x[0] ** 2
    return np.sum(v ** 2)


def test_a_write_through_flat_is_checked_for_aliasing():
    assert_refused_in(__file__, lambda: sg.grad(flat_written_while_a_view_is_read)(X.copy()),
                      "c.flat[2] = x[0] ** 2", "'v'")


# ----- Hessians: a write into a container without a gradient beside one with -----
# A gradient undoes each item write on the way back (``rt.restore_item`` of the old item,
# popped from the tape). Read again by sg.hessian (forward over reverse), a tape shared with
# a write that carries a tangent (``c[0] *= 1.5``) made the restore of a constant dict's
# item look like "a statement called for its effect on values that carry a tangent", and
# the Hessian was refused (transform/forward.py: a container without a tangent had none).

Y = np.array([0.2, -0.4, 0.9, 0.1])


def constant_dict_item_written_beside_an_update(x):
    n = {'a': Y * 1.0, 'b': Y}
    c = x * 1.0
    n['a'] = np.tanh(n['b'])
    c[0] *= 1.5
    return np.sum(np.sin(c) * n['a'])


def constant_list_item_written_beside_an_update(x):
    n = [Y * 1.0, Y]
    c = x * 1.0
    n[0] = np.tanh(n[1])
    c[0] *= 1.5
    return np.sum(np.sin(c) * n[0])


def constant_nested_item_written_beside_an_update(x):
    n = {'a': [Y, Y * 2.0]}
    c = x * 1.0
    n['a'][1] = np.tanh(Y)
    c[0] *= 1.5
    return np.sum(np.sin(c) * n['a'][1])


@pytest.mark.parametrize("f", [constant_dict_item_written_beside_an_update,
                               constant_list_item_written_beside_an_update,
                               constant_nested_item_written_beside_an_update])
def test_hessian_of_a_constant_containers_write_beside_an_update(f):
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), fd_hessian(f, X), rtol=1e-5, atol=1e-5)


# ----- out= a view of an array: np.f(a, out=buf[i]) -----
# The argument ``buf[i]`` is bound to a name first (A-normal form), then mutation.py writes
# the result into that name, ``buf_item[...] = np.f(a)``: an in-place write into a view of
# ``buf``, which is read later, so it was refused. Where ``buf`` is an array and the index
# basic (``rt.view_key``), the call is NumPy's write into ``buf``: ``buf[i] = np.f(a)``
# (transform/item_updates.py); a fancy index's copy keeps the old path (``buf`` unchanged).

def out_rows_of_a_buffer_in_a_loop(x):
    buf = np.zeros((3, 4))
    for i in range(3):
        np.multiply(x, float(i + 1), out=buf[i])
        np.sin(buf[i], out=buf[i])
    return np.sum(buf ** 2 * x)


def out_overlapping_slices(x):
    y = x.copy()
    np.add(y[:3], y[1:], out=y[1:])
    np.exp(y[:2] * 0.1, out=y[2:])
    return np.sum(y ** 2)


def out_columns_and_reductions(x):
    y = np.zeros((3, 4))
    np.sum(np.outer(x, x), axis=0, out=y[0])
    np.cumsum(x, out=y[1])
    np.tanh(y[1, :], out=y[2, :])
    np.add(y[..., 0], 1.0, out=y[..., 3])
    return np.sum(y ** 2)


def out_a_fancy_indexs_copy(x):
    y = np.zeros(6)
    idx = [0, 2, 4, 1]
    np.exp(x, out=y[idx])          # fills a copy: y is unchanged
    return np.sum(y * 2.0) + np.sum(x ** 2)


@pytest.mark.parametrize("f", [out_rows_of_a_buffer_in_a_loop, out_overlapping_slices,
                               out_columns_and_reductions, out_a_fancy_indexs_copy])
def test_out_a_view_of_an_array(f):
    assert_grad_and_jvp(f, (X.copy(),))
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), fd_hessian(f, X), rtol=1e-5, atol=1e-5)


def out_a_row_a_view_reads(x):
    y = np.outer(x, x)
    v = y[1:3]
    np.exp(x, out=y[1])
    return np.sum(v ** 2)


def test_out_a_view_of_an_array_is_checked_for_aliasing():
    assert_refused_in(__file__, lambda: sg.grad(out_a_row_a_view_reads)(X.copy()), "'v'")


# The names of an inlined helper's variables in such a refusal: the alias analysis shows a
# name srcgrad made as the expression it stands for, and took the helper's own variables
# (renamed apart, not in the caller's source) for such names: ``'(c,)'`` for ``held``.

def _holds_its_array_in_a_tuple(x):
    c = np.sin(x)
    held = (c,)
    c[1] = 3.0 * x[0] ** 2
    return np.sum(held[0] ** 2 * c)


def _calls_the_holder(v):
    return _holds_its_array_in_a_tuple(v)


@pytest.mark.parametrize("run", [lambda: sg.grad(_calls_the_holder)(X.copy()),
                                 lambda: sg.hessian(_calls_the_holder)(X.copy())])
def test_an_inlined_helpers_names_in_a_refusal(run):
    assert_refused_in(__file__, run, "'held'", "held = (c,)")


# ----- An item of an attribute written: h.a[0] = v -----
# Refused (srcgrad does not follow writes into an object's attributes) with the message of
# ``x[i][j] = v`` and its hint "Index with one subscript", which does not apply.

class _Holder:
    def __init__(self, a):
        self.a = a


def writes_an_attributes_item(x):
    h = _Holder(np.sin(x))
    h.a[0] = x[3] ** 2
    return np.sum(h.a ** 2)


def test_a_write_into_an_attributes_item_is_refused_as_such():
    assert_refused_in(__file__, lambda: sg.grad(writes_an_attributes_item)(X.copy()),
                      "item of an attribute (h.a[...] = ...)", "local variable")
