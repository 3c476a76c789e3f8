"""NumPy 2's named linalg results (``np.linalg.svd(a).S``, ``.eigenvalues``, ``.logabsdet``,
``np.linalg.qr(a).R``) and the QR decomposition: gradients and tangents against central
differences; the cases without a unique derivative are refused at the user's line."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

RNG = np.random.default_rng(7)
A = RNG.standard_normal((5, 3))
W = RNG.standard_normal((5, 3))
T = RNG.standard_normal((5, 3))


def singular_values_by_name(a):
    return np.sum(np.linalg.svd(a, full_matrices=False).S ** 2)


def singular_vectors_by_name(a):
    result = np.linalg.svd(a, full_matrices=False)
    return np.sum(result.U[:, 0] ** 3) + result.S[0] * np.sum(result.Vh[0])


def eigenvalues_by_name(a):
    return np.sum(np.linalg.eigh(a.T @ a + np.diag(np.arange(3.0))).eigenvalues ** 2)


def logabsdet_by_name(a):
    return np.linalg.slogdet(a.T @ a).logabsdet


def qr_unpacked(a):
    q, r = np.linalg.qr(a)
    return np.sum(q * W) + np.sum(np.triu(r) ** 2)


def qr_by_name(a):
    result = np.linalg.qr(np.stack([a, 2.0 * a]))
    return np.sum(result.Q * W) + np.sum(np.sin(result.R[1]))


def qr_r_mode(a):
    return np.sum(np.linalg.qr(a, mode="r") ** 3)


def qr_of_a_square_block(a):
    q, r = np.linalg.qr(a[:3] @ a[1:4].T)
    return np.sum(q @ np.diag(np.diag(r)))


def orthonormalised_projection(a):
    q, _ = np.linalg.qr(a)          # the Gram-Schmidt idiom
    return np.sum((q @ (q.T @ W)) ** 2)


CASES = [singular_values_by_name, singular_vectors_by_name, eigenvalues_by_name, logabsdet_by_name,
         qr_unpacked, qr_by_name, qr_r_mode, qr_of_a_square_block, orthonormalised_projection]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_and_tangent_match_differences(f):
    want = numerical_grad(f, (A.copy(),))
    np.testing.assert_allclose(sg.grad(f)(A.copy()), want, rtol=1e-6, atol=1e-8)
    value, tangent = sg.jvp(f, (A.copy(),), (T,))
    np.testing.assert_allclose(value, f(A.copy()), rtol=1e-12)
    np.testing.assert_allclose(tangent, np.sum(want * T), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jacfwd(f)(A.copy()), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [eigenvalues_by_name, logabsdet_by_name], ids=lambda f: f.__name__)
def test_hessians_through_named_results(f):
    g = sg.grad(f)
    flat = A.reshape(-1)
    columns = [numerical_grad(lambda v, k=k: g(v.reshape(A.shape)).reshape(-1)[k], (flat.copy(),))
               for k in range(flat.size)]
    np.testing.assert_allclose(sg.hessian(f)(A.copy()).reshape(flat.size, flat.size), np.stack(columns),
                               rtol=1e-5, atol=1e-6)


def wide_qr(a):
    q, r = np.linalg.qr(a.T)
    return np.sum(r)


def test_a_wide_matrix_qr_is_refused_at_its_line():
    with pytest.raises(sg.errors.UnsupportedError) as info:
        sg.grad(wide_qr)(A.copy())
    assert info.value.filename == __file__ and "np.linalg.qr" in str(info.value)
    assert "q, r = np.linalg.qr(a.T)" in str(info.value)


def test_qr_one_order_up_matches_differences():
    # (was refused: "no tangent for rt.qr_vjp")
    g = sg.grad(qr_unpacked)
    flat = A.reshape(-1)
    columns = [numerical_grad(lambda v, k=k: g(v.reshape(A.shape)).reshape(-1)[k], (flat.copy(),))
               for k in range(flat.size)]
    np.testing.assert_allclose(sg.hessian(qr_unpacked)(A.copy()).reshape(flat.size, flat.size),
                               np.stack(columns), rtol=1e-5, atol=1e-6)


B = RNG.standard_normal(5)
B2 = RNG.standard_normal((5, 2))


def least_squares_solution(a):
    return np.sum(np.linalg.lstsq(a, B, rcond=None)[0] ** 2)


def least_squares_everything(a):
    x, residuals, rank, s = np.linalg.lstsq(a, B2 + a[:, :2], rcond=None)
    return np.sum(x * W[:3, :2]) + np.sum(residuals) + np.sum(s ** 2)


def least_squares_of_the_data(b):
    return np.sum(np.linalg.lstsq(A, b, rcond=None)[0] ** 3)


@pytest.mark.parametrize("f, arg", [(least_squares_solution, A), (least_squares_everything, A),
                                    (least_squares_of_the_data, B)], ids=lambda v: getattr(v, "__name__", ""))
def test_least_squares_gradient_and_tangent(f, arg):
    want = numerical_grad(f, (arg.copy(),))
    np.testing.assert_allclose(sg.grad(f)(arg.copy()), want, rtol=1e-6, atol=1e-8)
    t = np.cos(np.arange(arg.size, dtype=float)).reshape(arg.shape)
    np.testing.assert_allclose(sg.jvp(f, (arg.copy(),), (t,))[1], np.sum(want * t), rtol=1e-6, atol=1e-8)


def test_the_least_squares_gradient_is_the_normal_equations_one():
    # x = (A^T A)^-1 A^T b, so d sum(x) / db = A (A^T A)^-1 1
    def total(b):
        return np.sum(np.linalg.lstsq(A, b, rcond=None)[0])
    np.testing.assert_allclose(sg.grad(total)(B.copy()), A @ np.linalg.solve(A.T @ A, np.ones(3)), rtol=1e-10)


def rank_deficient(a):
    return np.sum(np.linalg.lstsq(np.stack([a[:, 0], a[:, 0]], axis=1), B, rcond=None)[0])


def test_a_rank_deficient_least_squares_is_refused_at_its_line():
    with pytest.raises(sg.errors.UnsupportedError) as info:
        sg.grad(rank_deficient)(A.copy())
    assert info.value.filename == __file__ and "full column rank" in str(info.value)
