"""Rules at their edges, through the compiler (issue 11: no silently wrong gradient).

tests/test_rules.py checks each rule's template as a plain function; these run
the generated gradient, where a template is inlined and optimized, on the points
where a rule used to give NaN, raise, or drop the gradient: exponents of 0 at a
base of 0, empty and constant reductions, scalar operands of the products.
"""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import check_grads


def _quiet(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


# ----- power -----


def _power_zero(x):
    return np.sum(np.power(x, 0.0) + x ** 0 + x ** 1 + x ** 2)


def _power_both(x, b):
    return np.sum(np.power(x, b))


def test_a_zero_exponent_has_slope_zero_even_at_a_zero_base():
    x = np.array([0.0, 0.0, 1.5])
    np.testing.assert_array_equal(sg.grad(_power_zero)(x), 1 + 2 * x)
    assert sg.grad(_power_zero)(0.0) == 1.0


def test_the_exponent_gradient_at_a_zero_base_is_zero():
    x, b = np.array([0.0, 0.0, 2.0]), np.array([0.0, 3.0, 1.5])
    dx, db = sg.grad(_power_both, wrt=(0, 1))(x, b)
    np.testing.assert_allclose(dx, [0.0, 0.0, 1.5 * 2.0 ** 0.5])
    np.testing.assert_allclose(db, [0.0, 0.0, 2.0 ** 1.5 * np.log(2.0)])


# ----- reductions -----


def _mean_of_all(x):
    return np.mean(x)


def _mean_of_a_prefix(x, n):
    return np.sum(x) + np.mean(x[:n]) * 0.0


def _std_rows(x):
    return np.sum(np.std(x, axis=1))


def _std_of_first(x):
    return np.std(x[:1]) + np.sum(x)


def _var_of_all(x):
    return np.var(x)


def _std_of_all(x):
    return np.std(x)


@pytest.mark.parametrize("fn", [_mean_of_all, _var_of_all, _std_of_all])
def test_an_empty_reduction_gives_an_empty_gradient(fn):
    g = _quiet(sg.grad(fn), np.zeros(0))
    assert g.shape == (0,)


def test_an_empty_slice_of_a_mean_contributes_no_gradient():
    g = _quiet(sg.grad(_mean_of_a_prefix), np.array([0.5, 1.0, 2.0]), 0)
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.0])


def test_the_std_of_equal_entries_has_gradient_zero():
    np.testing.assert_array_equal(sg.grad(_std_of_first)(np.array([0.3, 1.0])), [1.0, 1.0])
    x = np.array([[0.5, 0.5, 0.5], [0.2, -0.3, 1.0]])
    g = sg.grad(_std_rows)(x)
    np.testing.assert_array_equal(g[0], 0.0)
    check_grads(_std_rows, (x[1:],))


# ----- products -----


def _inner_self(x):
    return np.inner(x, x)


def _inner_scalar(x):
    return np.sum(np.inner(x, 2.0) ** 2)


def _tensordot_scalar(x):
    return np.sum(np.tensordot(x, 0.5, axes=0) * x)


def _outer_scalar(x):
    return np.sum(np.outer(x, 3.0) ** 2)


@pytest.mark.parametrize("fn", [_inner_self, _inner_scalar, _tensordot_scalar, _outer_scalar])
def test_products_with_scalar_operands_match_finite_differences(fn):
    check_grads(fn, (np.array([0.9, -1.3, 2.1]),))
    check_grads(fn, (0.7,))


# ----- sample grids -----


def _linspace_sum(x):
    return np.sum(np.linspace(0, x, 5))


def _linspace_all(x, y):
    return np.sum(np.linspace(x, y, 4, endpoint=False, axis=-1) ** 2)


def _logspace(x, a):
    return np.sum(np.logspace(x, 0.5, 3, base=a))


def _geomspace(x):
    return np.sum(np.geomspace(x, 2.5 * x + 3.0, 4) ** 2)


def _meshgrid(x, y):
    gx, gy = np.meshgrid(x, y)
    return np.sum(gx * gy ** 2)


def _meshgrid_one_used(x, y):
    gx, gy = np.meshgrid(x, y, indexing="ij", sparse=True)
    return np.sum(np.sin(gx))


def _linspace_retstep(x):
    samples, step = np.linspace(0.0, x, 5, retstep=True)
    return np.sum(samples) + step


def _arange(x, a):
    return np.sum(np.arange(a, 4.0, 0.5 * a) ** 2) + np.sum(np.arange(x[0]))


def test_arange_is_differentiable_in_its_start_and_step():
    check_grads(_arange, (np.array([2.5, 1.0]), 0.7), wrt=(0, 1))


def test_linspace_is_differentiable_in_its_endpoints():
    assert sg.grad(_linspace_sum)(1.0) == 2.5   # 0 + 1/4 + 2/4 + 3/4 + 1
    x, y = np.array([0.9, -1.3, 2.1]), np.array([[1.4], [0.6]])
    check_grads(_linspace_all, (x, y), wrt=(0, 1))


def test_logspace_geomspace_and_meshgrid_match_finite_differences():
    check_grads(_logspace, (np.array([0.9, -1.3, 0.1]), 1.7), wrt=(0, 1))
    check_grads(_geomspace, (0.7,))
    check_grads(_geomspace, (np.array([0.9, 1.3]),))
    x, y = np.array([0.9, -1.3, 2.1]), np.array([1.4, 0.6])
    check_grads(_meshgrid, (x, y), wrt=(0, 1))
    check_grads(_meshgrid_one_used, (x, y), wrt=0)
    np.testing.assert_array_equal(sg.grad(_meshgrid_one_used, wrt=1)(x, y), 0.0)


def test_linspace_with_retstep_is_refused_not_dropped():
    with pytest.raises(sg.UnsupportedError, match="retstep"):
        sg.grad(_linspace_retstep)(1.0)


# ----- lists and tuples where a rule expects an array -----
# NumPy makes an array of them (np.asarray, here np.stack of the elements).


def _mean_of_list(x):
    return np.mean([x, x + 2])


def _reductions_of_lists(x, y):
    return (np.max([x, y + 0.5]) + np.std((x, 2 * y)) + np.var([x * y, y], ddof=1)
            + np.prod([x, y, 1.5]) + np.min((x, y)) + np.linalg.norm([x, y]))


def _arrays_in_lists(x, y):
    return (np.max([x, y + 0.5]) + np.std((x, 2 * y)) + np.linalg.norm([x, y])
            + np.sum(np.mean([x, y], axis=0) ** 2))


def _functions_of_lists(x, y):
    return np.sum(np.sin([x, y]) * np.array([1.0, 2.0])) + np.dot([x, y], [y, 3.0])


def _nested_and_mixed(x, y):
    return (np.sum([[x, y], [y, 1.0]]) * np.sum([x, 1.0])
            + np.sum(np.diag([x, y]) @ np.array([1.0, x])))


def _second_order(x, y):
    return (np.max([x, y + 0.5]) * np.std((x, 2 * y))
            + np.var([x * y, y], ddof=1) * np.sum([x, y, 1.5]))


def _appended(x):
    values = []
    for i in range(3):
        values.append(x * (i + 1))
    return np.sum(values) + np.mean(values) ** 2 + np.max(values) * np.std(values)


def _appended_then_array(x, w):
    values = []
    for i in range(3):
        values.append(x * i)
    values = np.array(values)
    return np.sum(values * w)


def _list_joined(x, y):
    acc = [x]
    acc = acc + [y * 2]
    return acc[0] * acc[1]


def _array_times_list(a, x, y):
    return np.sum(a * [x, y])


def _list_repeated(x):
    values = [x, 2 * x]
    return np.sum(values * 2)


def _sequences_stay_sequences(x, y):
    return (np.sum(sum([x, y]) * x) + np.sum(np.stack([x, y]) ** 2)
            + np.sum(np.concatenate([x, y])) + max(x[0], y[0]))


def _lists_in_joins(x, y):
    w = np.arange(1.0, 6.0)
    return (np.sum(np.concatenate([x, [1.0, y]]) * w) + np.sum(np.hstack([x, (y, 3.0)]) * w)
            + np.sum(np.stack([x, [y, 2 * y, 1.0]]) * w[:3]) + np.sum(np.array([[y, 1.0], x[:2]]) ** 2))


def _mean_in_helper(a, b):
    return np.mean([a, b * 2])


def _calls_a_helper(x, y):
    return _mean_in_helper(x, y) ** 2


def test_a_list_argument_is_the_array_numpy_makes_of_it():
    assert sg.grad(_mean_of_list)(1.0) == 1.0
    np.testing.assert_array_equal(sg.grad(_mean_of_list)(np.zeros(2)), [0.5, 0.5])
    a, b = 0.7, -1.3
    for fn in (_reductions_of_lists, _functions_of_lists, _nested_and_mixed, _calls_a_helper):
        check_grads(fn, (a, b), wrt=(0, 1))
    x, y = np.array([0.9, -1.3, 2.1]), np.array([1.4, 0.6, -0.8])
    for fn in (_arrays_in_lists, _sequences_stay_sequences, _calls_a_helper):
        check_grads(fn, (x, y), wrt=(0, 1))


def test_a_list_inside_a_join_is_the_array_numpy_makes_of_it():
    check_grads(_lists_in_joins, (np.array([0.9, -1.3, 2.1]), 0.7), wrt=(0, 1))


def _doubled(v):
    return np.asarray(v) * 2.0


@sg.adjoint(_doubled)
def _doubled_rule(g, y, v):
    return g * 2.0   # an array, also for a list argument


def _user_rule_of_a_list(x, y):
    return np.sum(_doubled([x, 3 * y]) * np.array([1.0, 5.0]))


def test_a_user_rule_given_a_list_returns_the_gradient_of_its_array():
    assert sg.grad(_user_rule_of_a_list, wrt=(0, 1))(0.7, -1.3) == (2.0, 30.0)


def test_a_list_built_with_append_is_the_array_numpy_makes_of_it():
    # 6x + (2x)**2 + 3x * x * std([1, 2, 3])
    assert sg.grad(_appended)(0.7) == pytest.approx(6 + 8 * 0.7 + 6 * 0.7 * np.std([1.0, 2.0, 3.0]))
    check_grads(_appended, (0.7,))
    check_grads(_appended, (np.array([0.9, -1.3]),))
    check_grads(_appended_then_array, (0.7, np.array([1.0, 2.0, 3.0])), wrt=(0, 1))


def test_a_list_joined_with_plus_is_a_list():
    assert sg.grad(_list_joined, wrt=(0, 1))(0.7, -1.3) == (pytest.approx(-2.6), pytest.approx(1.4))
    check_grads(_list_joined, (0.7, -1.3), wrt=(0, 1))


@pytest.mark.parametrize("fn, args", [(_array_times_list, (np.array([1.5, -0.5]), 0.7, -1.3)),
                                      (_list_repeated, (0.7,))])
def test_operators_on_lists_are_refused(fn, args):
    with pytest.raises(sg.UnsupportedError, match="list or tuple"):
        sg.grad(fn, wrt=tuple(range(len(args))))(*args)


def test_a_list_argument_has_a_second_derivative():
    from srcgrad.testing import gradgradcheck

    assert gradgradcheck(_second_order, (0.7, -1.3), wrt=0, atol=1e-7, rtol=1e-5)
    assert gradgradcheck(_nested_and_mixed, (0.7, -1.3), wrt=1, atol=1e-7, rtol=1e-5)



# ----- np.r_ and np.c_ -----


def _r_(x):
    return np.sum(np.r_[x, x * 2] * np.arange(2.0 * np.size(x)))


def _c_(x, y):
    return np.sum(np.c_[x, y * 3, np.outer(x, y)] ** 2)


def _r_with_a_slice(x):
    return np.sum(np.r_[0:3, x])


def _r_as_an_index(x):
    return np.sum(x[np.r_[0:2, 2]])


def test_r_and_c_are_joins_of_their_items():
    assert sg.grad(_r_)(1.0) == 2.0   # x * 0 + 2x * 1
    check_grads(_r_, (np.array([0.9, -1.3, 2.1]),))
    check_grads(_c_, (np.array([0.9, -1.3, 2.1]), np.array([1.4, 0.6, -0.8])), wrt=(0, 1))
    np.testing.assert_array_equal(sg.grad(_r_as_an_index)(np.array([0.9, -1.3, 2.1, 0.5])),
                                  [1.0, 1.0, 1.0, 0.0])


def _r_with_a_directive(x):
    return np.sum(np.r_["0", 0:3, x])


def test_r_with_slices_differentiates_and_with_directives_is_refused():
    np.testing.assert_array_equal(sg.grad(_r_with_a_slice)(np.array([0.9, -1.3])), [1.0, 1.0])
    with pytest.raises(sg.NonDifferentiableError, match="index_concat_directives"):
        sg.grad(_r_with_a_directive)(np.array([0.9, -1.3]))


# ----- einsum -----


def _einsum_sublists(x, y):
    return np.einsum(x, [0], x, [0], []) + np.sum(np.einsum(x, [0], y, [0, 1], [1]) ** 2)


def _einsum_options(x, y):
    return np.sum(np.einsum("...j,jk->...k", y.T, y, optimize=True)
                  * np.einsum(x, [Ellipsis], [Ellipsis]))


def test_einsum_takes_sublists_ellipsis_and_optimize():
    x, y = np.array([0.9, -1.3, 2.1]), np.array([[1.4, 0.6], [-0.8, 0.3], [0.5, -1.1]])
    np.testing.assert_allclose(sg.grad(_einsum_sublists)(x, np.zeros((3, 2))), 2 * x)
    check_grads(_einsum_sublists, (x, y), wrt=(0, 1))
    check_grads(_einsum_options, (np.array([0.9, -1.3]), y), wrt=(0, 1))


# ----- issue 11: found by the autograd corpus (tests/test_autograd_corpus.py) -----


def _copysign_sum(x, y):
    return np.sum(np.copysign(x, y) * np.arange(1.0, 4.0))


def test_an_input_whose_only_rule_entry_is_none_gets_a_zero_gradient_not_a_name_error():
    x, y = np.array([1.0, -2.0, 0.5]), np.array([-1.0, 3.0, 2.0])
    dx, dy = sg.grad(_copysign_sum, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(dx, np.sign(x) * np.sign(y) * np.arange(1.0, 4.0))
    np.testing.assert_array_equal(dy, np.zeros(3))


def _remainder_of_divmod(x):
    q, r = divmod(x, 1.0)
    return r * 3.0 + q


def test_the_remainder_of_divmod_has_slope_one():
    assert sg.grad(_remainder_of_divmod)(2.25) == 3.0
    assert check_grads(_remainder_of_divmod, (2.25,))


def _imag_and_angle_of_real(x):
    return np.sum(np.imag(x) + np.angle(x) + x)


def test_imag_and_angle_of_a_real_value_have_a_zero_gradient():
    g = sg.grad(_imag_and_angle_of_real)(np.array([0.5, -1.0]))
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [1.0, 1.0])


def _logdet(x):
    sign, logdet = np.linalg.slogdet(x)
    return logdet


def test_the_second_derivative_of_slogdet_runs():
    x = np.array([[2.0, 0.5], [0.3, 1.5]])
    assert sg.testing.gradgradcheck(_logdet, (x,), atol=1e-7, rtol=1e-5)


def test_a_scalar_adjoint_of_a_join_stands_for_itself_in_every_piece():
    # A 0-d adjoint (a zero scaled by a lazy Dask scalar, which rt.has_grad cannot test
    # without computing) reaches the join's rule: each piece gets it, of the piece's shape.
    from srcgrad import runtime as rt
    a, b = np.ones(2), np.ones((3,))
    pieces = rt.concatenate_vjp(np.float64(2.5), [a, b])
    assert [p.shape for p in pieces] == [(2,), (3,)]
    assert all(np.all(p == 2.5) for p in pieces)
    items = rt.array_vjp(np.float64(-1.0), [1.0, np.zeros(2)])
    assert items[0] == -1.0 and np.array_equal(np.broadcast_to(items[1], (2,)), [-1.0, -1.0])
