"""``try: L = np.linalg.cholesky(K)`` / ``except np.linalg.LinAlgError: ...`` (a Gaussian
process's jitter, a solve falling back to least squares): one call of a NumPy or SciPy
function in the try block, one ``except``, maybe an ``else:``. It was refused; it is the
``if rt.call_fails(np.linalg.cholesky, (K,), (LinAlgError,)):`` Python's try decides
(transform/plain_statements.py), the call made once more for the assignment. Each path
checked against central differences, through grad, jvp and hessian."""

import warnings

import numpy as np
import pytest
import scipy.linalg as sla

import srcgrad as sg
from srcgrad.testing import numerical_grad

RNG = np.random.default_rng(4)
B = RNG.normal(size=(3, 3))
SPD = B @ B.T + 0.5 * np.eye(3)
INDEFINITE = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def log_det_with_jitter(M):
    K = (M + M.T) / 2   # (symmetric: np.linalg.cholesky's gradient is PyTorch's and JAX's, symmetric)
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        L = np.linalg.cholesky(K + 3.0 * np.eye(3))
    else:
        L = L * 2.0
    return np.sum(np.log(np.diag(L))) + np.sum(L ** 2)


def solve_or_least_squares(A, b):
    try:
        x = np.linalg.solve(A, b)
    except (np.linalg.LinAlgError, ValueError):
        x = np.linalg.lstsq(A, b, rcond=None)[0]
    return np.sum(x ** 2)


def factor_or_sum(K):
    try:
        c, low = sla.cho_factor(K)
    except sla.LinAlgError:
        return np.sum(K ** 2)
    return np.sum(sla.cho_solve((c, low), np.ones(3)))


def factor_by_keyword(A):   # the call's keyword argument passed on to the test too
    K = A @ A.T
    try:
        c, low = sla.cho_factor(K, lower=True)
    except sla.LinAlgError:
        return np.sum(K)
    return np.sum(sla.cho_solve((c, low), np.ones(3)))


def _check(f, args):
    want = numerical_grad(f, args)
    np.testing.assert_allclose(sg.grad(f)(*args), want, rtol=1e-5, atol=1e-7)
    t = np.ones_like(args[0])
    _, tangent = sg.jvp(f, args, (t,) + tuple(np.zeros_like(a) for a in args[1:]))
    assert tangent == pytest.approx(np.sum(want * t), rel=1e-5)


@pytest.mark.parametrize("f, args", [
    (log_det_with_jitter, (SPD,)), (log_det_with_jitter, (INDEFINITE,)),
    (solve_or_least_squares, (SPD, np.ones(3))), (solve_or_least_squares, (B[:, :2], np.ones(3))),
    (factor_or_sum, (SPD,)), (factor_or_sum, (INDEFINITE,)), (factor_by_keyword, (B,))],
    ids=["spd", "indefinite", "solve", "not-square", "factor", "no-factor", "keyword"])
def test_each_path_matches_differences(f, args):
    _check(f, args)


def test_second_derivative_and_jit():
    def f(A):
        return log_det_with_jitter(A @ A.T)
    H = sg.hessian(f)(B)
    moved = np.array([numerical_grad(lambda a: sg.grad(f)(a).ravel()[i], (B,)).ravel() for i in range(9)])
    np.testing.assert_allclose(H.reshape(9, 9), moved, rtol=1e-4, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the jit falls back, with its warning)
        np.testing.assert_allclose(sg.grad(log_det_with_jitter, jit=True)(INDEFINITE),
                                   numerical_grad(log_det_with_jitter, (INDEFINITE,)), rtol=1e-5)


def _helper(K):
    return np.linalg.cholesky(K)


def more_after_the_call(K):
    try:
        L = np.linalg.cholesky(K)
        s = np.sum(L)
    except np.linalg.LinAlgError:
        s = 0.0
    return s


def a_helper_of_the_user(K):   # (not NumPy's or SciPy's: it might do more than compute)
    try:
        L = _helper(K)
    except np.linalg.LinAlgError:
        L = K
    return np.sum(L)


def an_argument_with_a_call(K):   # (evaluated twice)
    try:
        L = np.linalg.cholesky(K + np.eye(3))
    except np.linalg.LinAlgError:
        L = K
    return np.sum(L)


def the_error_named(K):
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError as error:
        L = K * len(str(error))
    return np.sum(L)


@pytest.mark.parametrize("f", [more_after_the_call, a_helper_of_the_user, an_argument_with_a_call,
                               the_error_named], ids=lambda f: f.__name__)
def test_other_try_blocks_stay_refused_at_the_line(f):
    with pytest.raises(sg.UnsupportedError, match="test_try_calls.py") as info:
        sg.grad(f)(SPD)
    assert "try/except" in str(info.value)
