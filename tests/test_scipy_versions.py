"""SciPy's dense solves and factorizations (scipy.linalg) and the normal distribution's
functions (scipy.stats.norm) through every mode: srcgrad/scipy_versions.py writes them with
primitives, reading only the triangle SciPy's LAPACK call reads."""

import numpy as np
import pytest

import srcgrad as sg
from tests.adversarial_checks import assert_grad_and_jvp, assert_refused_in

sla = pytest.importorskip("scipy.linalg")
st = pytest.importorskip("scipy.stats")

RNG = np.random.default_rng(3)
A = RNG.normal(size=(3, 3))
GENERAL = A + 3 * np.eye(3)
SPD = A @ A.T + 3 * np.eye(3)
UPPER_ONLY = SPD + np.tril(A, -1)   # the lower triangle is not SPD's: a solve reading it is wrong
LOWER_ONLY = SPD + np.triu(A, 1)
B = RNG.normal(size=3)
B2 = RNG.normal(size=(3, 2))
WEIGHTS = np.arange(9.0).reshape(3, 3)


def assert_hessian(f, x, eps=1e-5):
    """sg.hessian of ``f`` at ``x`` against central differences of sg.grad (checked against
    differences of ``f`` by the tests above; differences of differences are too noisy)."""
    got = np.reshape(sg.hessian(f)(x.copy()), (x.size, x.size))
    columns = []
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        step = step.reshape(x.shape)
        columns.append(np.ravel(sg.grad(f)(x + step) - sg.grad(f)(x - step)) / (2 * eps))
    np.testing.assert_allclose(got, np.stack(columns, axis=1), rtol=1e-6, atol=1e-8)


def solve_general(a):
    return np.sum(sla.solve(a, B2) ** 2)


def solve_transposed(a):
    return np.sum(sla.solve(a, B, transposed=True) ** 2)


def solve_positive(a):
    return np.sum(sla.solve(a, B, assume_a="pos") ** 2)


def solve_symmetric_lower(a):
    return np.sum(sla.solve(a, B, assume_a="sym", lower=True) ** 2)


def triangular_lower(a):
    return np.sum(sla.solve_triangular(a, B, lower=True) ** 2)


def triangular_transposed(a):
    return np.sum(sla.solve_triangular(a, B2, trans="T") ** 2)


def triangular_unit(a):
    return np.sum(sla.solve_triangular(a, B, lower=True, unit_diagonal=True) ** 2)


def cholesky_upper(a):
    return np.sum(sla.cholesky(a) * WEIGHTS)


def cholesky_lower(a):
    return np.sum(sla.cholesky(a, lower=True) * WEIGHTS)


def gp_evidence(s):
    """A Gaussian process's negative log evidence, as GP code writes it."""
    c, low = sla.cho_factor(s)
    alpha = sla.cho_solve((c, low), B)
    return 0.5 * B @ alpha + np.sum(np.log(np.diag(c)))


def gp_evidence_lower(s):
    factor = sla.cholesky(s, lower=True)
    a = sla.solve_triangular(factor, B, lower=True)
    return 0.5 * a @ a + np.sum(np.log(np.diag(factor)))


def cho_factor_whole(a):
    """All of cho_factor's matrix: the factor, and a's own entries in the other triangle."""
    return np.sum(sla.cho_factor(a)[0] * WEIGHTS)


def inverse_and_determinant(a):
    return np.sum(sla.inv(a)) + sla.det(a)


CASES = [(solve_general, GENERAL), (solve_transposed, GENERAL), (solve_positive, UPPER_ONLY),
         (solve_symmetric_lower, LOWER_ONLY), (triangular_lower, GENERAL),
         (triangular_transposed, GENERAL), (triangular_unit, GENERAL), (cholesky_upper, UPPER_ONLY),
         (cholesky_lower, LOWER_ONLY), (gp_evidence, UPPER_ONLY), (gp_evidence_lower, LOWER_ONLY),
         (cho_factor_whole, UPPER_ONLY), (inverse_and_determinant, GENERAL)]


@pytest.mark.parametrize("f, a", CASES, ids=[f.__name__ for f, _ in CASES])
def test_linalg_gradient_and_tangent_match_differences(f, a):
    # (a triangle SciPy does not read has a zero gradient, as differences of SciPy say)
    assert_grad_and_jvp(f, (a.copy(),))
    value, _ = sg.value_and_grad(f)(a.copy())
    np.testing.assert_allclose(value, f(a.copy()), rtol=1e-13)


@pytest.mark.parametrize("f, a", [(solve_positive, UPPER_ONLY), (triangular_lower, GENERAL),
                                  (cholesky_upper, UPPER_ONLY), (gp_evidence, UPPER_ONLY),
                                  (inverse_and_determinant, GENERAL)],
                         ids=["solve_positive", "triangular", "cholesky", "gp", "inv_det"])
def test_linalg_hessian_matches_differences(f, a):
    assert_hessian(f, a.copy())


def test_right_hand_side_gradient_and_second_order():
    def evidence(y):
        c, low = sla.cho_factor(SPD, lower=True)
        return 0.5 * y @ sla.cho_solve((c, low), y)

    np.testing.assert_allclose(sg.grad(evidence)(B.copy()), np.linalg.solve(SPD, B), rtol=1e-10)
    np.testing.assert_allclose(sg.hessian(evidence)(B.copy()), np.linalg.inv(SPD), rtol=1e-10)


X = np.array([0.3, -1.2, 2.0])


def norm_log_density(x):
    return np.sum(st.norm.logpdf(x, 0.5, 2.0))


def norm_located(x):
    return np.sum(st.norm.logpdf(x, loc=x[0], scale=np.exp(x[1])))


def norm_all(x):
    return np.sum(st.norm.pdf(x) + st.norm.cdf(x) + st.norm.logcdf(x) + st.norm.sf(x)
                  + st.norm.logsf(x))


def norm_quantile(q):
    return np.sum(st.norm.ppf(q, 1.0, 3.0))


@pytest.mark.parametrize("f, x", [(norm_log_density, X), (norm_located, X), (norm_all, X),
                                  (norm_quantile, np.array([0.2, 0.5, 0.9]))],
                         ids=["logpdf", "logpdf_loc_scale", "pdf_cdf_sf", "ppf"])
def test_normal_distribution_every_mode(f, x):
    assert_grad_and_jvp(f, (x.copy(),))
    assert_hessian(f, x.copy())
    np.testing.assert_allclose(sg.value_and_grad(f)(x.copy())[0], f(x.copy()), rtol=1e-12)


def test_forms_scipy_takes_otherwise_are_refused_at_the_line():
    def banded(a):
        return np.sum(sla.solve(a, B, assume_a="banded"))

    def overwriting(a):
        return np.sum(sla.solve(a, B, overwrite_a=True))

    def frozen(x):   # (x by position is norm.logpdf(x, 0.0, 1.0): test_python_idioms_round12)
        return np.sum(st.norm(0.0, 1.0).logpdf(x=x))

    for f, x in ((banded, GENERAL), (overwriting, GENERAL), (frozen, X)):
        assert_refused_in(__file__, lambda: sg.grad(f)(x.copy()), "gradient rule")


def test_jit_gives_the_numpy_gradient():
    g = sg.grad(gp_evidence_lower, jit=True)
    with pytest.warns(UserWarning):
        got = g(LOWER_ONLY.copy())
    np.testing.assert_allclose(got, sg.grad(gp_evidence_lower)(LOWER_ONLY.copy()), rtol=1e-12)


def test_a_rule_the_user_registers_replaces_the_version(isolated_rules):
    @sg.adjoint(sla.inv)
    def inv_adjoint(dz, z, a):
        return np.full_like(a, 7.0)   # (a deliberately wrong rule: it must be the one used)

    def f(a):
        return np.sum(sla.inv(a))

    np.testing.assert_allclose(sg.grad(f)(GENERAL.copy()), np.full((3, 3), 7.0))


def test_infs_and_nans_are_refused_as_scipy_refuses_them():
    bad = GENERAL.copy()
    bad[1, 2] = np.nan
    for f in (solve_general, triangular_lower, cholesky_upper, gp_evidence, inverse_and_determinant):
        with pytest.raises(ValueError, match="infs or NaNs"):
            f(bad.copy())
        with pytest.raises(ValueError, match="infs or NaNs"):
            sg.grad(f)(bad.copy())


def test_check_finite_false_computes_through():
    def unchecked(a):
        return np.sum(sla.solve(a, B, check_finite=False))

    assert_grad_and_jvp(unchecked, (GENERAL.copy(),))
