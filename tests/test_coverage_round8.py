"""Coverage round eight: operator methods called by name (``x.__pow__(2)``, as JAX's tests
write them), ``np.logaddexp.reduce`` / ``np.logaddexp2.reduce``, and the second derivatives
of ``np.average`` with weights. Each is checked in
reverse and forward mode and to second order against central differences in float64."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from adversarial_checks import assert_grad_and_jvp, assert_refused_in

X = np.array([1.0, 2.0, -0.5])
M = np.random.default_rng(8).normal(size=(2, 2))   # (adversarial_checks tangents: 4 entries)


def _second_order_matches(f, x):
    """sg.hessian of ``f`` at ``x`` against central differences of sg.grad."""
    n = x.size
    want = np.array([numerical_grad(lambda y: sg.grad(f)(y).ravel()[k], (x,)).ravel()
                     for k in range(n)])
    np.testing.assert_allclose(np.reshape(sg.hessian(f)(x), (n, n)), want, atol=1e-5)


def power_method(x):
    return np.sum(x.__pow__(2) * x)


def chained_methods(x):
    return np.sum(x.__mul__(x).__add__(1.0).__sub__(x.__truediv__(2.0)))


def reflected_methods(x):
    return np.sum(x.__rsub__(3.0) * x.__rpow__(2.0)) + x[0].__mul__(x[1]).__rtruediv__(1.0)


def unary_item_and_product(x):
    return np.sum(x.__neg__() * x.__getitem__(slice(0, 2)).sum()) + x.__matmul__(x)


def compared_by_method(x):
    return np.sum(np.where(x.__gt__(0.0), x, 0.0) ** 2)


@pytest.mark.parametrize("f", [power_method, chained_methods, reflected_methods,
                               unary_item_and_product, compared_by_method])
def test_operator_methods_called_by_name_differentiate(f):
    # (was: "srcgrad has no gradient rule for the method .__pow__()")
    assert_grad_and_jvp(f, (X.copy(),))
    _second_order_matches(f, X.copy())
    assert sg.value_and_grad(f)(X.copy())[0] == f(X.copy())


def _side_effect(log, v):
    log.append(len(log))
    return v


def reflected_with_two_calls(x, log):
    return np.sum(_side_effect(log, x).__radd__(_side_effect(log, x * 2.0)))


def test_a_reflected_method_of_two_calls_keeps_pythons_order():
    # y.__radd__(z) reads y first; swapping to z + y would call in the other order, so
    # such a call is left to its method (refused: no rule), never reordered
    assert_refused_in(__file__, lambda: sg.grad(reflected_with_two_calls)(X.copy(), []),
                      "__radd__")


def logaddexp_rows(x):
    return np.sum(np.sin(np.logaddexp.reduce(x, axis=0)))


def logaddexp_kept(x):
    return np.sum(np.logaddexp.reduce(x, axis=1, keepdims=True) ** 2)


def logaddexp_all(x):
    return np.logaddexp.reduce(x, axis=None) * 2.0


def logaddexp2_rows(x):
    return np.sum(np.logaddexp2.reduce(x) ** 2)


@pytest.mark.parametrize("f", [logaddexp_rows, logaddexp_kept, logaddexp_all, logaddexp2_rows])
def test_logaddexp_reductions_differentiate(f):
    assert_grad_and_jvp(f, (M.copy(),))
    _second_order_matches(f, M.copy())
    assert sg.value_and_grad(f)(M.copy())[0] == f(M.copy())


def test_logaddexp_reduce_is_a_log_sum_exp():
    # the hand-derived gradient: softmax along the axis
    g = sg.grad(lambda x: np.sum(np.logaddexp.reduce(x, axis=0)))(M.copy())
    np.testing.assert_allclose(g, np.exp(M) / np.sum(np.exp(M), axis=0), rtol=1e-12)


W = np.array([0.7, 1.6])


def average_with_weights(x, w):
    return np.sum(np.average(x, axis=1, weights=w) ** 2)


def average_of_squares(x, w):
    return np.average(x ** 2, weights=w) * np.sum(w)


@pytest.mark.parametrize("f, w", [(average_with_weights, W), (average_of_squares, M + 2.0)])
@pytest.mark.parametrize("wrt", [0, 1])
def test_hessians_of_a_weighted_average(f, w, wrt):
    # (was: "jvp of a gradient: no tangent for rt.average_weights")
    args = (M.copy(), w.copy())
    k = args[wrt].size
    want = np.array([numerical_grad(lambda *a: sg.grad(f, wrt=wrt)(*a).ravel()[i], args, wrt).ravel()
                     for i in range(k)])
    np.testing.assert_allclose(np.reshape(sg.hessian(f, wrt=wrt)(*args), (k, k)), want, atol=1e-5)
    seed = np.ones_like(args[wrt])
    hvp = sg.grad(sg.grad(f, wrt=wrt), wrt=wrt)(*args, grad_outputs=seed)
    np.testing.assert_allclose(np.ravel(hvp), want.T @ seed.ravel(), atol=1e-5)


MX, MY = np.array([0.3, -0.7, 1.1]), np.array([0.5, 1.5])


def meshgrid_xy(x, y):
    a, b = np.meshgrid(x, y)
    return np.sum(np.sin(a) * b ** 2)


def meshgrid_ij(x, y):
    a, b = np.meshgrid(x, y, indexing="ij")
    return np.sum(np.exp(a * b))


@pytest.mark.parametrize("f", [meshgrid_xy, meshgrid_ij])
@pytest.mark.parametrize("wrt", [0, 1])
def test_second_derivatives_through_meshgrid(f, wrt):
    # (was: "grad of grad: no gradient rule for rt.meshgrid_vjp"; the Hessian had no tangent)
    args = (MX.copy(), MY.copy())
    k = args[wrt].size
    want = np.array([numerical_grad(lambda *a: sg.grad(f, wrt=wrt)(*a)[i], args, wrt)
                     for i in range(k)])
    np.testing.assert_allclose(sg.hessian(f, wrt=wrt)(*args), want, atol=1e-5)
    seed = np.linspace(0.5, 1.5, k)
    np.testing.assert_allclose(sg.grad(sg.grad(f, wrt=wrt), wrt=wrt)(*args, grad_outputs=seed),
                               want.T @ seed, atol=1e-5)


def average_and_weight_sum(x, w):
    a, s = np.average(x * x, axis=1, weights=w, returned=True)
    return np.sum(a * s ** 2)


def average_and_count(x):
    a, n = np.average(np.sin(x), axis=0, returned=True)
    return np.sum(a * n)


def test_average_returned_gives_numpys_pair_and_differentiates():
    # (was refused: np.average has no rule for returned=True)
    for weights in (None, M[0] + 2.0, M + 2.0):
        want = np.average(M, axis=0, weights=weights, returned=True)
        from srcgrad.inlined import average_returned
        got = average_returned(M, axis=0, weights=weights, returned=True)
        for g, w in zip(got, want):
            assert np.shape(g) == np.shape(w)
            np.testing.assert_allclose(g, w, rtol=1e-15)
    assert_grad_and_jvp(average_and_weight_sum, (M.copy(), M + 2.0), wrt=0)
    assert_grad_and_jvp(average_and_weight_sum, (M.copy(), M + 2.0), wrt=1)
    assert_grad_and_jvp(average_and_count, (M.copy(),))
    _second_order_matches(average_and_count, M.copy())


C32 = np.arange(6.0).reshape(3, 2)


def r_with_a_slice(x):
    return np.sum(np.r_[x, C32[:, 0], 1:4] ** 2)


def r_with_a_linspace(x):
    return np.sum(np.sin(np.r_[0:1:4j, x]) * np.arange(7.0))


def c_with_a_slice(x):
    return np.sum(np.c_[x, 1:4] ** 3)


@pytest.mark.parametrize("f", [r_with_a_slice, r_with_a_linspace, c_with_a_slice])
def test_index_tricks_with_slice_items_differentiate(f):
    # (was: "no gradient rule for srcgrad.runtime.index_concat_directives")
    x = np.array([0.5, -1.0, 2.0])
    assert_grad_and_jvp(f, (x,))
    assert sg.value_and_grad(f)(x.copy())[0] == f(x.copy())
    _second_order_matches(f, x)


def r_with_a_directive(x):
    return np.sum(np.r_["0", x, 1:3])


def test_index_tricks_with_a_string_directive_are_refused():
    assert_refused_in(__file__, lambda: sg.grad(r_with_a_directive)(np.ones(3)),
                      "index_concat_directives")
