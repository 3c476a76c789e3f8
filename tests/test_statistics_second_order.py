"""Second derivatives through the statistics rules' helpers (rules/statistics_second_order.py):
``sg.hessian`` and ``sg.hvp`` (forward over reverse) and ``sg.grad`` of a gradient
(reverse over reverse), each against central differences of ``sg.grad`` in float64; and
the arguments whose derivative is not written (a quantile's ``q``, np.gradient's
spacings, interp's sample points) refused, never dropped."""

import numpy as np
import pytest

import srcgrad as sg

RNG = np.random.default_rng(11)
Y0 = np.array([0.3, 0.1, 0.7, 0.5, 0.9, 0.2, 0.6])
GRID = np.linspace(0.0, 1.0, 7)
M0 = RNG.standard_normal((3, 4))


def trapezoid_y(y):
    return np.trapezoid(y ** 3, GRID)


def trapezoid_x(y):
    return np.trapezoid(np.sin(y), y ** 2)


def trapezoid_dx(y):
    return np.trapezoid(y ** 3, dx=y[0] ** 2)


def trapezoid_rows(m):
    return np.sum(np.trapezoid(np.exp(m), np.linspace(0.0, 2.0, 4) * m[0, 0], axis=1) ** 2)


def trapezoid_axis0(m):
    return np.sum(np.trapezoid(m ** 2, m[:, :1] ** 2 + np.arange(3.0)[:, None], axis=0) ** 2)


def quantile(y):
    return np.quantile(y ** 3, 0.3)


def median_rows(m):
    return np.sum(np.median(np.sin(m) * m, axis=1, keepdims=True) ** 2)


def percentiles(y):
    return np.sum(np.percentile(np.outer(y, y), [20, 70], axis=1) ** 2)


def nanquantile_axes(m):
    z = np.where(m > 1.2, np.nan, m)
    return np.sum(np.nanquantile(z ** 3, 0.4, axis=(0, 1)) ** 2) + np.sum(np.nanmedian(z, axis=-1) ** 3)


def interp_fp(y):
    return np.sum(np.interp(np.array([0.1, 0.45, 0.9]), GRID, y ** 2) ** 2)


def interp_x(y):
    return np.sum(np.interp(y ** 2, GRID, GRID ** 3) ** 2)


def interp_both(y):
    return np.sum(np.interp(y * 0.9, GRID, np.cos(GRID) + y) ** 2)


def gradient_1d(y):
    return np.sum(np.gradient(y ** 2) ** 2)


def gradient_2d(m):
    return sum(np.sum(g ** 3) for g in np.gradient(np.sin(m), 0.5, edge_order=2))


def gradient_axis(m):
    return np.sum(np.gradient(m * m, 2.0, axis=-1) ** 2)


def outer_product(y):
    return np.sum(np.multiply.outer(y, y ** 2) ** 2)


def outer_sum(y):
    return np.sum(np.add.outer(y, y ** 2) ** 2)


def outer_matrices(m):
    return np.sum(np.multiply.outer(m[0], m[1:] ** 2) ** 2)


def multi_dot_vectors(y):
    return np.linalg.multi_dot([y, np.outer(y, y ** 2), np.sin(y)]) ** 2


def multi_dot_matrices(y):
    return np.sum(np.linalg.multi_dot([np.outer(y, y[:3]), np.outer(y[:3], y), np.sin(y)]) ** 2)


def covariance(y):
    return np.sum(np.cov(np.stack([y, y ** 2])) ** 2)


def covariance_1d(y):
    return np.cov(y ** 2) ** 2


def covariance_columns(m):
    return np.sum(np.cov(m ** 2, rowvar=False, bias=True) * np.arange(16.0).reshape(4, 4) ** 0.5)


def pseudo_inverse(m):
    return np.sum(np.linalg.pinv(m * m + 0.5) ** 2) + np.sum(np.linalg.pinv(np.stack([m, 2 * m])) * 0.3)


def correlation(m):
    return np.sum(np.corrcoef(np.sin(m)) ** 3) + np.sum(np.corrcoef(m, rowvar=False)[0] ** 2)


def partition(y):
    return np.sum(np.partition(y ** 2, 3)[:3] ** 3)


def drawdown(y):
    wealth = np.cumsum(np.sin(y))
    return np.sum((np.maximum.accumulate(wealth) - wealth) ** 2) + np.sum(np.minimum.accumulate(y ** 2) ** 2)


CASES = [(f, Y0) for f in (trapezoid_y, trapezoid_x, trapezoid_dx, quantile, percentiles, interp_fp,
                           interp_x, interp_both, gradient_1d, outer_product, outer_sum,
                           multi_dot_vectors, multi_dot_matrices, covariance, covariance_1d,
                           partition, drawdown)]
CASES += [(f, M0) for f in (trapezoid_rows, trapezoid_axis0, median_rows, nanquantile_axes, gradient_2d,
                            gradient_axis, outer_matrices, covariance_columns, pseudo_inverse,
                            correlation)]
def hessian_by_differences(f, x, h=1e-6):
    gradient = sg.grad(f)
    rows = []
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        rows.append(((gradient(x + e) - gradient(x - e)) / (2 * h)).reshape(-1))
    return np.array(rows)


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_hessian(f, x):
    hessian = sg.hessian(f)(x).reshape(x.size, x.size)
    np.testing.assert_allclose(hessian, hessian_by_differences(f, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_hvp(f, x):
    v = RNG.standard_normal(x.shape)
    product = sg.hvp(f, (x,), (v,))[0]
    np.testing.assert_allclose(product.reshape(-1), hessian_by_differences(f, x) @ v.reshape(-1),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_grad_of_grad(f, x):
    """Reverse over reverse: the adjoint rules of the helpers."""
    v = RNG.standard_normal(x.shape)
    gradient = sg.grad(f)

    def along(s):
        return f(x + s * v)

    curvature = sg.grad(sg.grad(along))(0.0)
    expected = v.reshape(-1) @ hessian_by_differences(f, x) @ v.reshape(-1)
    np.testing.assert_allclose(curvature, expected, rtol=1e-5, atol=1e-6)
    directional = sg.grad(lambda y: np.sum(gradient(y) * v))(x)
    np.testing.assert_allclose(directional.reshape(-1), hessian_by_differences(f, x) @ v.reshape(-1),
                               rtol=1e-5, atol=1e-6)


def test_a_quantile_of_a_differentiated_q_is_refused_one_order_up():
    def f(v):
        return np.quantile(v ** 2, v[0] * 0.1 + 0.5)

    np.testing.assert_allclose(sg.grad(f)(Y0), _numeric_gradient(f, Y0), rtol=1e-6, atol=1e-8)
    with pytest.raises(sg.SrcgradError, match="line"):
        sg.hessian(f)(Y0)
    with pytest.raises(sg.SrcgradError, match="quantile_q_vjp"):
        sg.grad(sg.grad(lambda s: f(Y0 + s)))(0.0)


def spaced(v):
    return np.sum(np.gradient(v ** 2, v[0] + 1.0) ** 2)


def spaced_2d(m):
    gy, gx = np.gradient(np.sin(m), 0.5, m[0, 0] ** 2 + 1.0)
    return np.sum(gy ** 2) + np.sum(gx ** 3)


@pytest.mark.parametrize("f, x", [(spaced, Y0), (spaced_2d, M0)], ids=["spaced", "spaced_2d"])
def test_differentiated_spacings_of_np_gradient(f, x):
    """A spacing computed from the input: first order, sg.hessian and grad of grad."""
    flat = x.reshape(-1)
    np.testing.assert_allclose(sg.grad(f)(x).reshape(-1), _numeric_gradient(lambda v: f(v.reshape(x.shape)), flat),
                               rtol=1e-6, atol=1e-8)
    expected = hessian_by_differences(f, x)
    np.testing.assert_allclose(sg.hessian(f)(x).reshape(x.size, x.size), expected, rtol=1e-5, atol=1e-6)
    v = RNG.standard_normal(x.shape)
    np.testing.assert_allclose(sg.grad(sg.grad(lambda s: f(x + s * v)))(0.0),
                               v.reshape(-1) @ expected @ v.reshape(-1), rtol=1e-5, atol=1e-6)


def test_differentiated_sample_points_of_interp_one_order_up():
    """Their gradient (reverse mode) is differentiated again in reverse mode; their
    tangent (forward mode: sg.hessian) is refused at the line, never dropped."""
    def sampled(v):
        return np.sum(np.interp(np.array([0.2, 0.5]), np.cumsum(v ** 2), GRID) ** 2)

    v = RNG.standard_normal(Y0.shape)
    np.testing.assert_allclose(sg.grad(sampled)(Y0), _numeric_gradient(sampled, Y0), rtol=1e-6, atol=1e-8)
    with pytest.raises(sg.SrcgradError, match="line"):
        sg.hessian(sampled)(Y0)
    expected = v @ hessian_by_differences(sampled, Y0) @ v
    np.testing.assert_allclose(sg.grad(sg.grad(lambda s: sampled(Y0 + s * v)))(0.0), expected, rtol=1e-5)


def test_nan_entries_tangents_stay_out_of_a_nanquantile():
    """A NaN entry's tangent (``3 z**2 t`` is NaN there) has weight 0: it must not make
    the quantile's tangent NaN (forward mode, first order)."""
    def f(m):
        z = np.where(m > 1.2, np.nan, m)
        return np.sum(np.nanquantile(z ** 3, 0.4, axis=1))

    t = RNG.standard_normal(M0.shape)
    _, tangent = sg.jvp(f, (M0,), (t,))
    expected = (f(M0 + 1e-6 * t) - f(M0 - 1e-6 * t)) / 2e-6
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-8)


def _numeric_gradient(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])
