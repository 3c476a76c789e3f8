"""Second derivatives through numpy.linalg (issue 14): ``sg.hessian`` (forward over
reverse) and ``sg.grad(sg.grad(f))`` (reverse over reverse) against central finite
differences of ``sg.grad(f)`` in float64, and hand-derived Hessians where they exist;
kinks are refused (norm at 0) or give inf/nan (eigh at repeated eigenvalues), never a
finite wrong number."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import NonDifferentiableError

A = np.array([[3.0, 1.0, 0.2], [0.5, 2.0, 0.1], [0.3, 0.4, 4.0]])
X = np.array([0.7, 1.3, 0.9])
B2 = np.array([[0.4, -1.0], [1.2, 0.3], [-0.6, 0.8]])
BATCH = np.stack([A, A.T + np.eye(3), 2 * np.eye(3) + 0.1 * A])


def solve_vector(x):
    return np.sum(np.linalg.solve(A, x) ** 3)


def solve_matrix_a(x):
    return np.sum(np.linalg.solve(A + np.outer(x, x), x) ** 3)


def solve_matrix_b(x):
    return np.sum(np.linalg.solve(A + np.outer(x, x), B2 * x[:, None]) ** 2)


def solve_batch(x):
    return np.sum(np.linalg.solve(BATCH + np.outer(x, x), x) ** 3)


def solve_batch_matrix_b(x):
    return np.sum(np.linalg.solve(BATCH * x[0], B2 * x[:, None]) ** 3)


def norm_cubed(x):
    return np.linalg.norm(x) ** 3


def norm_axis(x):
    return np.sum(np.linalg.norm(np.outer(x, x) + A, axis=1) ** 3)


def norm_axis0_keepdims(x):
    return np.sum(np.linalg.norm(np.outer(x, x) + A, axis=0, keepdims=True) ** 2 * x)


def norm_one(x):
    return np.linalg.norm(x, ord=1) ** 3


def norm_inf(x):
    return np.linalg.norm(x * np.array([1.0, 2.0, 0.5]), ord=np.inf) ** 2 * np.sum(x)


def norm_p3(x):
    return np.linalg.norm(x, ord=3) ** 2


def norm_fro(x):
    return np.linalg.norm(np.outer(x, x) + A, "fro") ** 3


def norm_matrix_one(x):
    return np.linalg.norm(np.outer(x, x) + A, 1) * np.sum(x ** 2)


def norm_of_3d(x):
    return np.linalg.norm(np.outer(x, x)[None] * np.array([1.0, 2.0])[:, None, None] + A) ** 3


def cholesky(x):
    return np.sum(np.linalg.cholesky(np.outer(x, x) + 3 * np.eye(3)) ** 2)


def cholesky_batch(x):
    m = np.outer(x, x) + 3 * np.eye(3)
    return np.sum(np.linalg.cholesky(np.stack([m, m @ m])) ** 3)


def eigh_values(x):
    return np.sum(np.linalg.eigh(np.outer(x, x) + np.diag(x))[0] ** 3)


def eigh_vectors(x):
    w, v = np.linalg.eigh(np.outer(x, x) + np.diag(x))
    return np.sum(v ** 3 * w)


def eigh_batch(x):
    m = np.outer(x, x) + np.diag(x)
    return np.sum(np.linalg.eigh(np.stack([m, m + np.diag(x ** 2)]))[1] ** 4)


def eigvalsh(x):
    return np.sum(np.linalg.eigvalsh(np.outer(x, x) + np.diag(x)) ** 3)


def matrix_power(x):
    return np.sum(np.linalg.matrix_power(np.outer(x, x) + A, 3))


def matrix_power_negative(x):
    return np.sum(np.linalg.matrix_power(np.outer(x, x) + A, -2))


def matrix_power_batch(x):
    return np.sum(np.linalg.matrix_power(BATCH + np.outer(x, x), 4) ** 2)


def det(x):
    return np.linalg.det(np.outer(x, x) + A) ** 2


def slogdet(x):
    return np.linalg.slogdet(np.outer(x, x) + A)[1] ** 2


def inv(x):
    return np.sum(np.linalg.inv(np.outer(x, x) + A) ** 2)


FUNCTIONS = [solve_vector, solve_matrix_a, solve_matrix_b, solve_batch, solve_batch_matrix_b,
             norm_cubed, norm_axis, norm_axis0_keepdims, norm_one, norm_inf, norm_p3, norm_fro,
             norm_matrix_one, norm_of_3d, cholesky, cholesky_batch, eigh_values, eigh_vectors,
             eigh_batch, eigvalsh, matrix_power, matrix_power_negative, matrix_power_batch, det,
             slogdet, inv]


def fd_hessian(f, x, eps=1e-5):
    g = sg.grad(f)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        cols.append((g(x + e) - g(x - e)) / (2 * eps))
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_hessian_and_grad_of_grad_match_finite_differences(f):
    want = fd_hessian(f, X)
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(sg.hessian(f)(X), want, rtol=1e-5, atol=1e-6 * scale)
    v = np.array([0.3, -1.1, 0.8])
    np.testing.assert_allclose(sg.grad(sg.grad(f))(X, grad_outputs=v), want @ v, rtol=1e-5,
                               atol=1e-6 * scale)
    (hv,) = sg.hvp(f, (X,), (v,))
    np.testing.assert_allclose(hv, want @ v, rtol=1e-5, atol=1e-6 * scale)


def test_the_norm_cubed_hessian_is_the_hand_derived_one():
    # f = ||x||^3: H = 3 (||x|| I + x x^T / ||x||)
    n = np.linalg.norm(X)
    want = 3 * (n * np.eye(3) + np.outer(X, X) / n)
    np.testing.assert_allclose(sg.hessian(norm_cubed)(X), want, rtol=1e-12)
    np.testing.assert_allclose(np.stack([sg.grad(sg.grad(norm_cubed))(X, grad_outputs=e)
                                         for e in np.eye(3)]), want, rtol=1e-12)


def solve_linear(x):
    return np.sum(np.linalg.solve(A, x) ** 2)


def test_the_solve_hessian_is_the_hand_derived_one():
    # f = ||A^-1 x||^2: H = 2 A^-T A^-1
    ainv = np.linalg.inv(A)
    np.testing.assert_allclose(sg.hessian(solve_linear)(X), 2 * ainv.T @ ainv, rtol=1e-12)


def log_det(x):
    return np.linalg.slogdet(A + np.diag(x))[1] + np.linalg.det(A + np.diag(x))


def test_the_det_and_slogdet_hessians_are_the_hand_derived_ones():
    # d2 log det(A + diag x) / dx_i dx_j = -(M^-1)_ij (M^-1)_ji; det: det(M)((M^-1)_ii (M^-1)_jj - ...)
    m = A + np.diag(X)
    mi = np.linalg.inv(m)
    want = -mi * mi.T + np.linalg.det(m) * (np.outer(np.diag(mi), np.diag(mi)) - mi * mi.T)
    np.testing.assert_allclose(sg.hessian(log_det)(X), want, rtol=1e-10)
    np.testing.assert_allclose(sg.grad(sg.grad(log_det))(X, grad_outputs=np.ones(3)),
                               want.sum(axis=0), rtol=1e-10)


def sum_of_eigenvalues_cubed(x):
    return np.sum(np.linalg.eigh(np.diag(x) + 0.3 * np.ones((3, 3)))[0] ** 3)


def test_the_eigh_hessian_is_that_of_the_trace_of_the_cube():
    # sum(w^3) = trace(M^3), M = diag(x) + 0.3 J: df/dx_i = 3 (M^2)_ii, so H = 6 diag(M_ii)
    m = np.diag(X) + 0.3 * np.ones((3, 3))
    want = 6 * np.diag(np.diag(m))
    np.testing.assert_allclose(sg.hessian(sum_of_eigenvalues_cubed)(X), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sg.grad(sg.grad(sum_of_eigenvalues_cubed))(X, grad_outputs=np.ones(3)),
                               want.sum(axis=0), rtol=1e-9)


def norm_squared(x):
    return np.linalg.norm(x) ** 2


def norm_three_halves_squared(x):
    return np.linalg.norm(x, ord=1.5) ** 2


def nuclear_norm_squared(x):
    return np.linalg.norm(np.outer(x, x) + A, "nuc") ** 2


def test_a_norm_at_zero_is_refused_not_a_guess():
    # ||x||^2 and ||x||^3 both have a zero gradient at 0, with Hessians 2I and 0: the
    # norm's rule refuses there, in each mode (the forward-over-reverse one runs the rule
    # at the computed zero adjoint rather than skip it, which gave 0 for ||x||^2)
    zero = np.zeros(3)
    for f in (norm_squared, norm_cubed):
        for attempt in (lambda: sg.hessian(f)(zero), lambda: sg.hvp(f, (zero,), (np.ones(3),)),
                        lambda: sg.grad(sg.grad(f))(zero, grad_outputs=np.ones(3))):
            with pytest.raises(NonDifferentiableError, match="norm at a zero vector") as info:
                attempt()
            assert info.value.filename == __file__
            assert info.value.lineno == f.__code__.co_firstlineno + 1
    np.testing.assert_allclose(sg.hessian(norm_squared)(np.full(3, 1e-9)), 2 * np.eye(3), atol=1e-12)


def test_a_p_norm_with_p_below_two_at_a_zero_entry_is_refused():
    with pytest.raises(NonDifferentiableError, match="zero entry"):
        sg.hessian(norm_three_halves_squared)(np.array([0.5, 0.0, 1.0]))


def test_the_svd_norms_second_derivative_matches_differences():
    # (was refused: "ord='nuc' (from the SVD) is not supported"; tests/test_coverage_round9.py
    # has the rest)
    g = sg.grad(nuclear_norm_squared)
    want = np.array([(g(X + 1e-6 * e) - g(X - 1e-6 * e)) / 2e-6 for e in np.eye(3)])
    np.testing.assert_allclose(sg.hessian(nuclear_norm_squared)(X), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sg.grad(sg.grad(nuclear_norm_squared))(X, grad_outputs=np.ones(3)),
                               want.T @ np.ones(3), rtol=1e-5, atol=1e-6)


def eigh_repeated(x):
    return np.sum(np.linalg.eigh(np.diag(x))[0] ** 3)


def test_repeated_eigenvalues_give_no_finite_wrong_number():
    # the eigenvectors' derivative divides by the eigenvalues' gaps (as in PyTorch and JAX)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        h = sg.hessian(eigh_repeated)(np.array([1.0, 1.0, 2.0]))
        g = sg.grad(sg.grad(eigh_repeated))(np.array([1.0, 1.0, 2.0]), grad_outputs=np.ones(3))
    assert not np.all(np.isfinite(h))
    assert not np.all(np.isfinite(g))


def power_squared(x):
    return np.sum(np.linalg.matrix_power(A * x + np.eye(3), 2))


def test_a_third_derivative_is_refused_at_the_users_line():
    # the helpers of the second derivatives (rt.matrix_power_vjp_da, rt.solve_vjp_adjoint...)
    # have no rules of their own
    line = power_squared.__code__.co_firstlineno + 1
    for attempt in (lambda: sg.hessian(sg.grad(power_squared))(0.7),
                    lambda: sg.grad(sg.grad(sg.grad(power_squared)))(0.7)):
        with pytest.raises(sg.SrcgradError, match="rt.matrix_power_vjp_da") as info:
            attempt()
        assert (info.value.filename, info.value.lineno) == (__file__, line)


def norm_neg_inf_and_zero(x):
    return np.linalg.norm(x, ord=-np.inf) * np.sum(x ** 3) + np.linalg.norm(x, ord=0) * np.sum(x)


def norm_matrix_inf(x):
    return np.linalg.norm(np.outer(x, x) + A, np.inf) ** 2 * np.sum(x)


def eigh_upper(x):
    w, v = np.linalg.eigh(np.outer(x, x) + np.diag(x), UPLO="U")
    return np.sum(w ** 2 * v[0] ** 2)


def det_batch(x):
    return np.sum(np.linalg.det(BATCH + np.outer(x, x)) ** 2)


def inv_batch(x):
    return np.sum(np.linalg.inv(BATCH * x[1] + np.outer(x, x)) ** 3)


MORE = [norm_neg_inf_and_zero, norm_matrix_inf, eigh_upper, det_batch, inv_batch]

if hasattr(np.linalg, "vector_norm"):
    def vector_norm_axis(x):
        return np.sum(np.linalg.vector_norm(np.outer(x, x) + A, axis=0, ord=3) ** 2)

    def vector_norm_all(x):
        return np.linalg.vector_norm(np.outer(x, x) + A) ** 3

    def matrix_norm_fro(x):
        return np.sum(np.linalg.matrix_norm(np.stack([np.outer(x, x), A * x[0]])) ** 3)

    MORE += [vector_norm_axis, vector_norm_all, matrix_norm_fro]


@pytest.mark.parametrize("f", MORE, ids=[f.__name__ for f in MORE])
def test_more_variants_match_finite_differences(f):
    test_hessian_and_grad_of_grad_match_finite_differences(f)
