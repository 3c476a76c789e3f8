"""Tenth adversarial round: programs that srcgrad got silently wrong (or failed on with an
error that was not a refusal) before their fix. Each gradient, tangent, Jacobian or Hessian
is checked against central differences in float64 and values worked out by hand."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from adversarial_checks import fd_hessian, X, assert_grad_and_jvp, assert_refused_in


def _fd_jacobian(f, x):
    return np.stack([numerical_grad(lambda v: f(v)[i], (x,)) for i in range(np.size(f(x)))])


# ----- Forward mode of the NaN-ignoring reductions -----
# An entry a NaN-ignoring reduction leaves out (a NaN made by ``np.where(c, np.nan, x)``)
# carries the tangent ``nan * 0 = nan`` through any later product (``y ** 2``). The adjoints
# of nanmean/nanvar/nanstd/nanprod/nanmax/nanmin give such an entry no gradient, but their
# tangents were derived from the adjoint (``t * 0``) or summed ``t * share``: NaN. sg.jvp of
# ``np.nanmean(np.where(x > 1, np.nan, x) ** 2)`` was NaN where the tangent is finite.

def _holed(x):
    return np.where(x > 1.0, np.nan, x) ** 2


def nanmean_of_a_holed_square(x):
    return np.nanmean(_holed(x))


def nanvar_of_a_holed_square(x):
    return np.nanvar(_holed(x))


def nanstd_of_a_holed_square(x):
    return np.nanstd(_holed(x), ddof=1)


def nanprod_of_a_holed_square(x):
    return np.nanprod(_holed(x) + 1.0)


def nanmax_of_a_holed_square(x):
    return np.nanmax(_holed(x))


def nanmin_of_a_holed_square(x):
    return np.nanmin(_holed(x) - x)


def nanmean_by_rows(x):
    return np.sum(np.nanmean(_holed(x).reshape(2, 2), axis=1, keepdims=True) ** 2)


@pytest.mark.parametrize("f", [nanmean_of_a_holed_square, nanvar_of_a_holed_square,
                               nanstd_of_a_holed_square, nanprod_of_a_holed_square,
                               nanmax_of_a_holed_square, nanmin_of_a_holed_square,
                               nanmean_by_rows])
def test_nan_reductions_leave_a_nan_entrys_tangent_out(f):
    assert np.isnan(_holed(X)).any()
    assert_grad_and_jvp(f, (X.copy(),))


def nanvar_by_rows(x):
    return np.nanvar(_holed(x).reshape(2, 2), axis=1, ddof=0)


def nanmax_by_rows(x):
    return np.nanmax(_holed(x).reshape(2, 2), axis=1)


@pytest.mark.parametrize("f", [nanvar_by_rows, nanmax_by_rows])
def test_nan_reductions_jacobians_and_hessians(f):
    want = _fd_jacobian(f, X)
    np.testing.assert_allclose(sg.jacfwd(f)(X.copy()), want, atol=1e-7)
    np.testing.assert_allclose(sg.jacrev(f)(X.copy()), want, atol=1e-7)
    loss = lambda v: np.sum(f(v) ** 2)  # noqa: E731
    np.testing.assert_allclose(sg.hessian(loss)(X.copy()), fd_hessian(loss, X), rtol=1e-5, atol=1e-4)


# ----- np.bincount's weights -----
# ``np.bincount(idx, weights=w)`` sums ``w`` by bin, but np.bincount was declared constant
# (its counts are): sg.grad said the weights were unused, and sg.jvp gave 0 silently.

IDX = np.array([0, 2, 2, 3])


def bincount_weights(x):
    return np.sum(np.bincount(IDX, weights=x ** 2) ** 2 * np.array([1.0, 2.0, 3.0, 4.0]))


def bincount_positional_weights_minlength(x):
    return np.sum(np.bincount(IDX, np.sin(x), 6) * np.arange(6.0))


def bincount_by_nearest_centre(x):
    """k-means style: the bins come from an argmin over the data (no gradient), the sums
    from the data."""
    k = np.argmin(np.abs(x[:, None] - np.array([0.0, 1.0])[None, :]), axis=1)
    return np.sum(np.bincount(k, weights=x, minlength=2) ** 2)


def bincount_counts(x):
    return np.sum(np.bincount(IDX)[IDX] * x ** 2)


@pytest.mark.parametrize("f", [bincount_weights, bincount_positional_weights_minlength,
                               bincount_by_nearest_centre, bincount_counts])
def test_bincount_weights_carry_a_gradient(f):
    assert_grad_and_jvp(f, (X.copy(),))


def test_bincount_gradient_by_hand_and_jacobians():
    # sum over bins b of c_b * (sum_{i in b} w_i)**2 / 2: w_i gets c_{bin i} * (its bin's sum)
    w = np.array([0.5, -1.0, 2.0, 3.0])
    c = np.array([1.0, 2.0, 3.0, 4.0])
    f = lambda v: 0.5 * np.sum(c * np.bincount(IDX, weights=v) ** 2)  # noqa: E731
    np.testing.assert_allclose(sg.grad(f)(w), [0.5, 3.0, 3.0, 12.0])
    jac = np.array([[1.0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]])
    g = lambda v: np.bincount(IDX, weights=v)  # noqa: E731
    np.testing.assert_allclose(sg.jacfwd(g)(w), jac)
    np.testing.assert_allclose(sg.jacrev(g)(w), jac)
    assert sg.grad(f)(w.astype(np.float32)).dtype == np.float32


# ----- Forward mode: a copy's tangent that was a view of a tangent written later -----
# ``v = c.flatten()`` (and ``+c``) has memory of its own, but its tangent rule gives
# ``reshape(dc)`` (``dc`` itself), a view of ``c``'s tangent. A later ``c[1] = 3.0`` writes
# ``dc[1] = 0`` in place, which reached ``v``'s tangent although ``v`` kept its value: sg.jvp
# and sg.jacfwd were silently wrong, and so was sg.hessian (forward over the gradient, whose
# forward sweep is the user's). Only a value *written later* got a tangent of its own; now
# so does a value whose operand is written later (rt.tangent_memory, forward_memory.py).

def flatten_then_write_the_original(x):
    c = np.sin(x)
    v = c.flatten()
    c[1] = 3.0
    return v * 2.0 + c ** 2


def unary_plus_then_scale_in_place(x):
    c = np.sin(x)
    v = +c
    c[1] *= 1.5
    return v * 2.0 + c ** 2


def flatten_of_a_2d_copy_then_ellipsis_write(x):
    c = np.array(np.sin(x).reshape(2, 2))
    v = c.flatten()
    c[..., 1] *= 1.5
    return v * 2.0 + c.ravel() ** 2


def unpacked_copies_then_writes_in_a_loop(x):
    c = np.sin(x)
    v, w = c.flatten(), +c
    for i in range(3):
        c[i] = x[i] ** 3
    return v * 2.0 + c ** 2 + w


def copies_in_a_list_then_write(x):
    c = np.sin(x)
    parts = [c.flatten(), +c]
    c[1] = 3.0
    return parts[0] * 2.0 + c ** 2 + parts[1]


def copy_then_write_through_a_view(x):
    c = np.sin(x)
    v = c.flatten()
    w = c[:]
    w[1] = 3.0
    return v * 2.0 + c ** 2


def _flat_copy(c):
    return c.flatten()


def flatten_in_a_helper_then_write(x):
    c = np.sin(x)
    v = _flat_copy(c)
    c[1] = 3.0
    return v * 2.0 + c ** 2


@pytest.mark.parametrize("f", [flatten_then_write_the_original, unary_plus_then_scale_in_place,
                               flatten_of_a_2d_copy_then_ellipsis_write,
                               unpacked_copies_then_writes_in_a_loop,
                               copies_in_a_list_then_write,
                               flatten_in_a_helper_then_write])
def test_a_copys_tangent_does_not_see_a_later_write(f):
    want = _fd_jacobian(f, X)
    t = np.array([0.7, -1.1, 0.4, 2.0])
    value, tangent = sg.jvp(f, (X.copy(),), (t,))
    np.testing.assert_allclose(value, f(X.copy()))
    np.testing.assert_allclose(tangent, want @ t, atol=1e-7)
    np.testing.assert_allclose(sg.jacfwd(f)(X.copy()), want, atol=1e-7)
    np.testing.assert_allclose(sg.jacrev(f)(X.copy()), want, atol=1e-7)
    loss = lambda v: np.sum(f(v) ** 2)  # noqa: E731
    np.testing.assert_allclose(sg.hessian(loss)(X.copy()), fd_hessian(loss, X), rtol=1e-5, atol=1e-4)


def test_a_copys_tangent_by_hand():
    # v = sin(x) kept, c[1] = 3: d/dx_1 of v_1 * 2 + c_1 ** 2 is 2 cos(x_1), not 0
    x = np.array([0.1, 0.2, 0.3, 0.4])
    t = np.array([0.0, 1.0, 0.0, 0.0])
    _, tangent = sg.jvp(flatten_then_write_the_original, (x,), (t,))
    np.testing.assert_allclose(tangent, [0.0, 2 * np.cos(0.2), 0.0, 0.0])


def test_a_copys_tangent_does_not_see_a_write_through_a_view():
    """Reverse mode refuses this write (``c`` is read after it); forward mode follows it."""
    f = copy_then_write_through_a_view
    want = _fd_jacobian(f, X)
    np.testing.assert_allclose(sg.jacfwd(f)(X.copy()), want, atol=1e-7)
    t = np.array([0.7, -1.1, 0.4, 2.0])
    np.testing.assert_allclose(sg.jvp(f, (X.copy(),), (t,))[1], want @ t, atol=1e-7)


# ----- Reverse mode: a write into an array without a gradient, read through a view -----
# The reverse sweep undoes each indexed write (it restores the entries written over), so
# that the values the adjoints read are those of the forward sweep. The undo was dropped
# where the written array itself is not read by the reverse sweep (no gradient flows
# through it: ``c = x.copy()`` with ``x`` not differentiated, a mask), although a *view*
# of it was: in ``r = c.reshape(6); a = y * r; c[0] = 0.75`` the adjoint of ``y`` reads
# ``r``, which the write had changed. sg.grad with respect to ``y`` was silently wrong
# for every view (reshape, ``[::-1]``, ``.T``, a slice held in a dict, a helper's view) and
# every in-place call rewritten as a write (``out=``, ``fill``, ``sort``). The tape now keeps
# a write's save where the reverse sweep reads a name that may share the written memory.

Y = np.array([0.5, -0.8, 0.9, 0.3, -0.4, 1.1])
Z = np.array([0.2, 0.7, -1.3, 0.6, -0.1, 0.4])


def reshape_view_then_write(x, y):
    c = x.copy()
    r = c.reshape(6)
    a = y * r
    c[0] = 0.75
    return np.sum(np.sin(a)) + np.sum(c)


def reversed_view_in_an_expression(x, y):
    c = x.copy()
    a = y * c[::-1]
    c[-1] -= 0.5
    return np.sum(np.sin(a)) + np.sum(c)


def view_of_a_copy_written_by_out(x, y):
    c = x.copy()
    a = y * c.reshape(6)
    np.multiply(c, 0.75, out=c)
    return np.sum(np.sin(a)) + np.sum(c)


def transposed_view_then_row_write(x, y):
    c = np.zeros((2, 3))
    c[0] = x[:3]
    a = np.sum(np.sin(y.reshape(3, 2) * c.T))
    c[1, :] = 5.0
    return a


def view_held_in_a_dict_then_fill(x, y):
    c = x.copy()
    d = {"v": c[:3]}
    a = np.sum(np.sin(y[:3] * d["v"]))
    c.fill(1.0)
    return a


def matrix_product_with_a_view_then_sort(x, y):
    c = x.copy()
    v = c.reshape(2, 3)
    a = np.sum(np.sin(y.reshape(2, 3) @ v.T))
    c.sort()
    return a


def _every_other(c):
    return c[::2]


def helper_view_then_negative_out(x, y):
    c = x.copy()
    v = _every_other(c)
    a = np.sum(np.exp(y[:3] * v))
    np.negative(c, out=c)
    return a + np.sum(c)


def mask_view_then_overwrite(x, y):
    c = (x > 0).astype(float)
    v = c[:4]
    a = np.sum(np.exp(y[:4] * v))
    c[:] = 0.5
    return a


def writes_in_a_loop_between_reads_of_a_view(x, y):
    c = x.copy()
    total = 0.0
    for i in range(3):
        total = total + np.sum(np.sin(y * c[::-1]))
        c[i] = 2.0 * i
    return total


@pytest.mark.parametrize("f", [reshape_view_then_write, reversed_view_in_an_expression,
                               view_of_a_copy_written_by_out, transposed_view_then_row_write,
                               view_held_in_a_dict_then_fill, matrix_product_with_a_view_then_sort,
                               helper_view_then_negative_out, mask_view_then_overwrite,
                               writes_in_a_loop_between_reads_of_a_view])
def test_a_write_into_a_constant_array_is_undone_for_its_views(f):
    assert_grad_and_jvp(f, (Y.copy(), Z.copy()), wrt=1)
    if f is not mask_view_then_overwrite:   # x reaches it only through a mask
        assert_grad_and_jvp(f, (Y.copy(), Z.copy()), wrt=0)


def test_a_view_of_a_written_constant_by_hand():
    # d/dy of sum(sin(y * r)) with r = x (the values before the write): cos(y * x) * x
    got = sg.grad(reshape_view_then_write, wrt=1)(Y.copy(), Z.copy())
    np.testing.assert_allclose(got, np.cos(Z * Y) * Y)
    hess = sg.hessian(lambda y: reshape_view_then_write(Y.copy(), y))(Z.copy())
    np.testing.assert_allclose(hess, np.diag(-np.sin(Z * Y) * Y * Y), atol=1e-12)


# ----- Hooks on an item or on a second name of a value -----
# ``sg.register_hook(d["y"], fn)`` hooked an ANF temporary holding ``d["y"]``, whose
# gradient is that of nothing read later: the hook never changed the gradient (PyTorch's
# hook on the tensor does). ``z = y; sg.register_hook(z, fn)`` with ``y`` read afterwards
# hooked only the gradient flowing through ``z``. Both were silently ignored; both are
# refused now. A hook on a name whose value also sits in a container, on a parameter,
# or on a loop's new binding (``y = y * 2``) is applied as before.

def _times_ten(g):
    return g * 10.0


def hook_on_a_dict_item(x):
    y = x * 1.0
    d = {"y": y}
    sg.register_hook(d["y"], _times_ten)
    return np.sum(d["y"] ** 2)


def hook_on_a_second_name(x):
    y = x * 1.0
    z = y
    sg.register_hook(z, _times_ten)
    return np.sum(y ** 2)


@pytest.mark.parametrize("f, words", [(hook_on_a_dict_item, "register_hook of an expression"),
                                      (hook_on_a_second_name, "register_hook of 'z'")])
def test_hooks_that_would_miss_the_gradient_are_refused(f, words):
    assert_refused_in(__file__, lambda: sg.grad(f)(X.copy()), words)


def hook_on_a_variable_held_in_a_dict(x):
    y = x * 1.0
    d = {"y": y}
    sg.register_hook(y, _times_ten)
    return np.sum(d["y"] ** 2)


def hook_on_each_new_binding_in_a_loop(x):
    y = x
    for _ in range(2):
        y = y * 2.0
        sg.register_hook(y, _times_ten)
    return np.sum(y)


def test_hooks_on_variables_still_apply():
    np.testing.assert_allclose(sg.grad(hook_on_a_variable_held_in_a_dict)(X.copy()), 20 * X)
    np.testing.assert_allclose(sg.grad(hook_on_each_new_binding_in_a_loop)(X.copy()),
                               np.full(4, 400.0))
