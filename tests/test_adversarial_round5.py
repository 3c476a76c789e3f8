"""Fifth adversarial round: programs that srcgrad got silently wrong (or failed on with
an error that was not a located refusal) before their fix. Each gradient, Jacobian or
Hessian is checked against central differences in float64 or a hand-derived answer."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from adversarial_checks import _fd

A = np.array([[0.3, -0.5, 1.2, 0.4], [2.0, 0.1, -0.7, 0.9], [0.5, 0.6, -1.3, 1.7]])


def _fd_hessian(f, a, eps=1e-5):
    """Central differences of ``sg.grad(f)`` (itself checked against differences of ``f``)."""
    g = sg.grad(f)
    flat = a.reshape(-1)
    columns = []
    for i in range(flat.size):
        step = np.zeros_like(flat)
        step[i] = eps
        plus, minus = (flat + step).reshape(a.shape), (flat - step).reshape(a.shape)
        columns.append((np.ravel(g(plus)) - np.ravel(g(minus))) / (2 * eps))
    return np.stack(columns, axis=1).reshape(a.shape + a.shape)


def assert_jacfwd_and_hessian(f, a):
    """sg.grad, sg.jvp, sg.jacfwd (seeds batched) and sg.hessian against differences."""
    want = _fd(f, (a.copy(),))
    np.testing.assert_allclose(sg.grad(f)(a.copy()), want, rtol=1e-6, atol=1e-8)
    t = np.cos(np.arange(a.size)).reshape(a.shape)
    np.testing.assert_allclose(sg.jvp(f, (a.copy(),), (t,))[1], np.sum(want * t), rtol=1e-6)
    np.testing.assert_allclose(sg.jacfwd(f)(a.copy()), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.hessian(f)(a.copy()), _fd_hessian(f, a.copy()),
                               rtol=1e-5, atol=1e-6)


# ----- A linear tangent run seed by seed: arguments left at None -----
# sg.jacfwd and sg.hessian run a linear primitive's tangent once per seed
# (rt.batch_stack([np.diff(t, ...) for seed ...])). The batched template lost the record
# of which parameters it is linear in, so np.diff's unset append= got the tangent 0.0
# (appending a column: "shape mismatch"), and then, spelled rt.batch_slice(None, seed),
# was passed as append=None (np.diff joined a None: "NoneType - float"). sg.grad and
# sg.jvp were right.

def diff_prepend_scalar(a):
    return np.sum(np.diff(a, prepend=0.5, axis=1) ** 2)


def diff_append_slice(a):
    return np.sum(np.diff(a, append=a[:, :1]) ** 2)


def diff_twice_prepend_list(a):
    return np.sum(np.diff(a[0], n=2, prepend=[0.1, 0.2]) ** 3)


@pytest.mark.parametrize("f", [diff_prepend_scalar, diff_append_slice, diff_twice_prepend_list],
                         ids=lambda f: f.__name__)
def test_linear_tangents_seed_by_seed_keep_arguments_left_at_none(f):
    assert_jacfwd_and_hessian(f, A)


# ----- np.nansum's batched tangent: the tangents of NaN entries -----
# sg.jacfwd (and sg.hessian's forward sweep) summed every entry's tangent; a NaN made by
# np.log of a negative entry has the finite tangent t / x, which went into the Jacobian
# (sg.jvp's rule and the adjoint leave NaN entries out).

def nansum_of_logs(a):
    return np.sum(np.nansum(np.log(a), axis=1) ** 2)


def nansum_of_all_logs(a):
    return np.nansum(np.log(a)) ** 2


@pytest.mark.parametrize("f", [nansum_of_logs, nansum_of_all_logs], ids=lambda f: f.__name__)
def test_nansum_leaves_out_the_tangents_of_nan_entries(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = _fd(f, (A.copy(),))
        assert np.all(want[A < 0] == 0)
        np.testing.assert_allclose(sg.jacfwd(f)(A.copy()), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(sg.jacrev(f)(A.copy()), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(sg.grad(f)(A.copy()), want, rtol=1e-6, atol=1e-8)


# ----- Reshapes in another index order -----
# sg.jacfwd and sg.hessian reshaped each seed's tangent in C order whatever ``order=`` the
# reshape, ravel or flatten had: order="F" gave a wrong Jacobian and Hessian, silently.
# order="A" and "K" read the operand in its memory's order: the gradient was reshaped in
# C order ("A": wrong for a transposed array; "K": NumPy refuses it in a reshape, so
# sg.grad crashed), and the tangent in its own memory's order, which need not be the
# operand's. Both now read the order off the operand (rt.index_order).

W = np.arange(12.0) / 7 - 0.4


def reshape_f(a):
    return np.sum(np.reshape(a, (4, 3), order="F") ** 2 * W.reshape(4, 3))


def reshape_method_f(a):
    return np.sum(a.reshape((2, 6), order="F") ** 2 * W.reshape(2, 6))


def ravel_f(a):
    return np.sum(np.ravel(a, order="F") ** 3 * W)


def flatten_f(a):
    return np.sum(a.flatten("F") ** 2 * W) + np.sum(a.ravel(order="F") * W)


@pytest.mark.parametrize("f", [reshape_f, reshape_method_f, ravel_f, flatten_f],
                         ids=lambda f: f.__name__)
def test_jacobians_and_hessians_of_reshapes_in_fortran_order(f):
    assert_jacfwd_and_hessian(f, A)


def transposed_ravel_k(a):
    return np.sum(np.ravel(a.T, order="K") ** 2 * W)


def transposed_flatten_a(a):
    return np.sum(np.sin(a.T).flatten("A") ** 2 * W)


def transposed_reshape_a(a):
    return np.sum(a.T.reshape(-1, order="A") ** 3 * W)


def strided_ravel_k(a):
    return np.sum((a * 2.0)[:, ::2].ravel("K") ** 2 * W[:6])


def _fd_keeping_layout(f, a, eps=1e-6):
    """Central differences of ``f`` with ``a``'s memory layout kept (``ravel(order="K")``
    reads it): each step is added in place to a copy of the same layout."""
    g = np.zeros(a.shape)
    for index in np.ndindex(a.shape):
        plus, minus = a.copy(order="K"), a.copy(order="K")
        plus[index] += eps
        minus[index] -= eps
        g[index] = (f(plus) - f(minus)) / (2 * eps)
    return g


@pytest.mark.parametrize("f", [transposed_ravel_k, transposed_flatten_a, transposed_reshape_a,
                               strided_ravel_k], ids=lambda f: f.__name__)
@pytest.mark.parametrize("layout", ["C", "F"])
def test_orders_a_and_k_follow_the_operands_memory(f, layout):
    a = np.asarray(A, order=layout)
    want = _fd_keeping_layout(f, a)
    for got in (sg.grad(f)(a.copy(order="K")), sg.jacrev(f)(a.copy(order="K")),
                sg.jacfwd(f)(a.copy(order="K"))):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    t = np.cos(np.arange(12.0)).reshape(3, 4)
    for tangent in (t, np.asfortranarray(t)):   # a tangent laid out unlike the operand
        _, out = sg.jvp(f, (a.copy(order="K"),), (tangent,))
        np.testing.assert_allclose(out, np.sum(want * t), rtol=1e-6)


def reversed_ravel_k(a):
    return np.sum(a[::-1].ravel("K") ** 2)


def test_order_k_of_negative_strides_is_refused():
    for run in (lambda: sg.grad(reversed_ravel_k)(A.copy()),
                lambda: sg.jvp(reversed_ravel_k, (A.copy(),), (A.copy(),))):
        with pytest.raises(sg.SrcgradError, match="order='K'.*strides"):
            run()


def complex_ravel_f(a):
    return np.sum(np.abs((a * (1 + 2j)).ravel("F")) ** 2 * W)


def complex_flatten(a):
    return np.sum(np.abs(np.ravel(a * (1 - 1j)) + (a * 1j).flatten()) ** 2 * W)


@pytest.mark.parametrize("f", [complex_ravel_f, complex_flatten], ids=lambda f: f.__name__)
def test_ravel_and_flatten_of_complex_values(f):
    """A reshape's rules hold on complex values (they were refused in both modes)."""
    assert_jacfwd_and_hessian(f, A)


# ----- Empty arrays and differences of nothing -----
# A reduction over no entries has a gradient of the input's (empty) shape, all zeros.
# prod's rule built (n + 1) exclusive products for n = 0 entries, the order statistics
# reshaped a group of no entries with -1, einsum took an axis of length 0 for one of 1
# to broadcast, and np.diff with n at least the length (no differences) expanded its
# empty cotangent to n entries: each crashed in a reshape or a broadcast.

EMPTY = np.zeros((0, 3))


def prod_of_nothing(v):
    return np.prod(v) + np.sum(np.prod(v, axis=0, keepdims=True) * 2.0)


def median_of_empty_rows(v):
    return np.sum(np.median(v, axis=1))


def einsum_over_an_empty_axis(v):
    return np.sum(np.einsum("ij->j", v) ** 2)


def diff_of_an_empty_axis(v):
    return np.sum(np.diff(v, axis=0) ** 2)


@pytest.mark.parametrize("f", [prod_of_nothing, median_of_empty_rows, einsum_over_an_empty_axis,
                               diff_of_an_empty_axis], ids=lambda f: f.__name__)
def test_gradients_of_empty_arrays_are_empty(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for got in (sg.grad(f)(EMPTY.copy()), sg.jacfwd(f)(EMPTY.copy()),
                    sg.jacrev(f)(EMPTY.copy())):
            assert np.shape(got) == EMPTY.shape
        _, t = sg.jvp(f, (EMPTY.copy(),), (EMPTY.copy(),))
        assert np.all(np.asarray(t) == 0) or np.all(np.isnan(t))


def diff_longer_than_its_input(x):
    return np.sum(np.diff(x, n=3)) + np.sum(np.diff(x, n=4, append=x[:1])) + np.sum(x ** 2)


def test_differences_of_order_at_least_the_length_have_no_gradient():
    x = np.array([0.3, -0.5])
    np.testing.assert_allclose(sg.grad(diff_longer_than_its_input)(x), 2 * x)
    np.testing.assert_allclose(sg.jacfwd(diff_longer_than_its_input)(x), 2 * x)
    np.testing.assert_allclose(sg.hessian(diff_longer_than_its_input)(x), 2 * np.eye(2))


# ----- print() in the function: forward mode refused it -----
# Reverse mode keeps a statement called for its effect; forward mode (sg.jvp, sg.jacfwd,
# sg.hessian's forward sweep) refused every one whose arguments carry a tangent, so a
# first script printing its loss had no Hessian. print changes no value: it is kept.

def loss_printed(x):
    print("loss at", x[0])
    loss = np.sum(np.sin(x) * x)
    print(f"loss={loss:.3f}")
    return loss


def test_print_inside_the_function_in_every_mode(capsys):
    x = np.array([0.3, -0.5, 1.2, 0.4])
    want_g = np.cos(x) * x + np.sin(x)
    np.testing.assert_allclose(sg.grad(loss_printed)(x), want_g)
    np.testing.assert_allclose(sg.jvp(loss_printed, (x,), (np.ones(4),))[1], np.sum(want_g))
    np.testing.assert_allclose(sg.jacfwd(loss_printed)(x), want_g)
    np.testing.assert_allclose(sg.hessian(loss_printed)(x),
                               np.diag(2 * np.cos(x) - x * np.sin(x)), atol=1e-12)
    assert "loss=" in capsys.readouterr().out


# ----- np.nanmax / np.nanmin in forward mode -----
# They had an adjoint (max's: NaN entries equal no extremum) but no tangent: sg.jvp,
# sg.jacfwd and sg.hessian refused them. max's tangent holds: a NaN entry's tangent,
# finite where np.log made the NaN, is left out.

def nanmax_of_logs(a):
    return np.sum(np.nanmax(np.log(a), axis=1) ** 2)


def nanmin_of_masked(a):
    return np.nanmin(np.where(a > 0, a, np.nan)) ** 3 + np.sum(np.nanmax(a * a, axis=0) * a[0])


@pytest.mark.parametrize("f", [nanmax_of_logs, nanmin_of_masked], ids=lambda f: f.__name__)
def test_nanmax_and_nanmin_in_forward_mode(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_jacfwd_and_hessian(f, A)


# ----- Hessians of loops over slices and of .tolist() -----
# The gradient of ``x[2 * i:2 * i + 2]`` in a loop pops its bounds off the tape, a list
# that carries a tangent in the Hessian's forward sweep, so ``slice(k, k_2)`` was taken for
# a call that needed a tangent rule (refused); a slice is an index: it has none.
# ``a.tolist()``'s adjoint is linear in its gradient and had no tangent (refused).

def pairs_in_a_loop(x):
    s = np.zeros(2)
    for i in range(3):
        s = s + x[2 * i:2 * i + 2] * (i + 1)
        s = s * s[::-1]
    return np.sum(s)


def sum_of_tolist(x):
    items = x.tolist()
    return items[0] * items[1] + sum(items) ** 2


@pytest.mark.parametrize("f", [pairs_in_a_loop, sum_of_tolist], ids=lambda f: f.__name__)
def test_hessians_of_slices_in_loops_and_tolist(f):
    x = np.array([0.3, -0.5, 1.2, 0.4, 0.9, -1.1])
    np.testing.assert_allclose(sg.hessian(f)(x.copy()), _fd_hessian(f, x.copy()),
                               rtol=1e-5, atol=1e-6)


# ----- np.where with a NaN branch (docs/language.md) -----
# Reverse mode gives NaN where the branch not taken has an infinite or NaN derivative,
# as JAX and PyTorch do; the double where the docs advise gives the derivative.

def safe_sqrt(x):
    return np.sum(np.where(x > 0, np.sqrt(np.where(x > 0, x, 1.0)), 0.0) * np.arange(4.0))


def test_the_double_where_of_the_docs_differentiates_a_nan_branch():
    x = np.array([0.3, -0.5, 1.2, -0.4])
    want = np.where(x > 0, 0.5 / np.sqrt(np.abs(x)), 0.0) * np.arange(4.0)
    np.testing.assert_allclose(sg.grad(safe_sqrt)(x), want)
    np.testing.assert_allclose(sg.jacfwd(safe_sqrt)(x), want)
    np.testing.assert_allclose(sg.jvp(safe_sqrt, (x,), (np.ones(4),))[1], want.sum())
    np.testing.assert_allclose(sg.hessian(safe_sqrt)(x),
                               np.diag(np.where(x > 0, -0.25 * np.abs(x) ** -1.5, 0.0) * np.arange(4.0)))


# ----- Run-time refusals are SrcgradErrors -----
# A few rules refused an argument they cannot differentiate at run time with a
# NotImplementedError (np.interp's period=, np.pad's other modes, a matrix norm's ord),
# which the user could not tell from a bug; they raise UnsupportedError now.

def interp_periodic(a):
    return np.sum(np.interp(np.array([0.2, 1.5, 7.0]), np.array([0.0, 0.5, 1.7, 3.0]), a,
                            period=4.0) ** 2)


def _pad_with_ones(vector, iaxis_pad_width, iaxis, kwargs):
    vector[:iaxis_pad_width[0]] = 1.0
    vector[len(vector) - iaxis_pad_width[1]:] = 1.0


PAD_MODE = _pad_with_ones   # a function for the mode (a statistic in a variable works: round 9)


def pad_maximum(a):
    return np.sum(np.pad(a, 1, mode=PAD_MODE) ** 2)


def test_run_time_refusals_are_srcgrad_errors():
    x = np.array([0.3, -0.5, 1.2, 0.4])
    for f, words in ((interp_periodic, "period="), (pad_maximum, "mode=<function")):
        with pytest.raises(sg.UnsupportedError, match=words):
            sg.grad(f)(x.copy())
