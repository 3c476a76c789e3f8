"""The order statistics, NaN-ignoring reductions, integrals, interpolation and the
reduction keywords (``where=``, ``initial=``, ``dtype=``, ``prepend=``, ``mode=``) through
the whole compiler: reverse mode, forward mode and the second derivative, each against
central finite differences in float64 (tests/test_rules.py checks the rules alone)."""

import math

import numpy as np
import pytest

import srcgrad as sg

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5))
V = RNG.standard_normal(7)
MASK = X > -0.4
MASK[0] = True
MASK[:, 0] = True
POINTS = np.array([-1.0, -0.2, 0.3, 1.1, 2.0])
VALUES = RNG.standard_normal(5)


def sum_where(x):
    return np.sum(np.sum(x * x, axis=1, where=MASK))


def mean_where_dtype(x):
    return np.mean(np.sin(x), axis=0, where=MASK, dtype=np.float64).sum()


def max_initial(x):
    return np.sum(np.max(x * 2.0, axis=1, initial=0.9) ** 2)


def min_method_where(x):
    return np.sum(x.min(axis=0, where=MASK, initial=5.0) * np.arange(5.0))


def median_quantile(x):
    return np.median(x, axis=1) @ np.arange(4.0) + np.sum(np.quantile(x * x, [0.2, 0.7], axis=0))


def percentile_nan(x):
    y = np.where(MASK, x, np.nan)
    return np.sum(np.nanpercentile(y, 40.0, axis=1)) + np.nanmedian(y) + np.sum(np.nanvar(y, axis=0))


def nan_reductions(x):
    y = np.where(MASK, x, np.nan)
    return np.nanstd(y) + np.sum(np.nanprod(1.0 + 0.1 * y, axis=1)) + np.sum(np.nancumsum(y, axis=0) ** 2)


def diff_ends(x):
    return np.sum(np.diff(x, prepend=x[:, :1] * 3.0, append=0.5) ** 2)


def take_modes(x):
    flat = x.reshape(-1)
    return np.sum(np.take(flat, [0, 23, -25, 41], mode="wrap")[:, None] * np.take(x, [1, 9], axis=1, mode="clip"))


def integral(x):
    return np.sum(np.trapezoid(np.exp(x), np.linspace(0.0, 1.0, 5), axis=1) ** 2)


def interpolated(v):
    return np.sum(np.interp(v, POINTS, VALUES * v[:5]) ** 2)


def chained(x):
    return np.sum(np.linalg.multi_dot([x, x.T, x]))


def partitioned(v):
    return np.sum(np.partition(v, 3)[:3] ** 2)


def scalars(v):
    return math.prod([v[0], v[1], 2.0]) + math.dist([v[0], v[1]], [v[2], 0.5])


def singular_values(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return np.sum(s ** 2) + np.sum(u[:, 0] * np.arange(4.0)) ** 2 + np.sum(vh[0] ** 3) * 0.0 \
        + np.sum(np.linalg.svd(x, compute_uv=False))


def pseudo_inverse(x):
    return np.sum(np.linalg.pinv(x) ** 2)


def covariances(x):
    return np.sum(np.cov(x) * np.arange(16.0).reshape(4, 4)) + np.sum(np.corrcoef(x, rowvar=False) ** 2)


def correlations(v):
    return np.sum(np.correlate(v, v[:3] * 2.0, "same") ** 2)


def ufunc_methods(x):
    return (np.sum(np.add.reduce(x * x, axis=1)) + np.sum(np.multiply.reduce(1.0 + 0.1 * x))
            + np.sum(np.add.accumulate(x) ** 2) + np.sum(np.multiply.outer(x[0], x[1]) ** 2)
            + np.sum(np.add.outer(x[2], x[3]) ** 2))


def finite_differences(x):
    gy, gx = np.gradient(np.sin(x), 0.5, x[0, 0] ** 2 + 1.0)
    return np.sum(gy ** 2) + np.sum(gx * np.gradient(x[1], edge_order=2))


def gamma_functions(v):
    return math.gamma(v[0] ** 2 + 0.5) + math.lgamma(abs(v[1]) + 0.2) + sum(v.tolist()[2:5]) ** 2


def drawdown(v):
    wealth = np.cumsum(v)
    peak = np.maximum.accumulate(wealth)
    return np.sum((peak - wealth) ** 2) + np.sum(np.minimum.accumulate(v * v))


CASES = [
    (sum_where, X), (mean_where_dtype, X), (max_initial, X), (min_method_where, X),
    (median_quantile, X), (percentile_nan, X), (nan_reductions, X), (diff_ends, X),
    (take_modes, X), (integral, X), (interpolated, V), (chained, X), (partitioned, V),
    (scalars, V), (singular_values, X), (pseudo_inverse, X), (covariances, X),
    (correlations, V), (ufunc_methods, X), (finite_differences, X), (gamma_functions, V), (drawdown, V),
]


def numeric_gradient(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient(f, x):
    np.testing.assert_allclose(sg.grad(f)(x), numeric_gradient(f, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_forward_mode(f, x):
    t = RNG.standard_normal(x.shape)
    try:
        _, tangent = sg.jvp(f, (x,), (t,))
    except sg.SrcgradError as error:   # a refusal names the line; never a wrong number
        assert "line" in str(error)
        return
    expected = (f(x + 1e-6 * t) - f(x - 1e-6 * t)) / 2e-6
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-7)


# every case has its rules one order up (rules/statistics_second_order.py,
# math_second_order.py, decomposition_second_order.py)
STILL_REFUSED_ONE_ORDER_UP = set()


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_second_derivative_is_right_or_refused(f, x):
    """Grad of grad: the Hessian-vector product of central differences of the gradient,
    or a clear refusal."""
    v = RNG.standard_normal(x.shape)
    gf = sg.grad(f).as_function()

    def directional(y):
        return np.sum(gf(y) * v)

    try:
        hv = sg.grad(directional)(x)
    except sg.SrcgradError as error:
        assert f.__name__ in STILL_REFUSED_ONE_ORDER_UP, error
        assert "line" in str(error)
        return
    assert f.__name__ not in STILL_REFUSED_ONE_ORDER_UP, "works now: take it off the list"
    gradient = sg.grad(f)
    expected = (gradient(x + 1e-5 * v) - gradient(x - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(hv, expected, rtol=1e-4, atol=1e-5)


def test_quantile_method_other_than_linear_is_refused():
    def f(x):
        return np.sum(np.quantile(x, 0.3, method="nearest"))

    with pytest.raises(sg.SrcgradError, match="method"):
        sg.grad(f)(V)


def test_max_initial_alone_gives_no_gradient():
    """A group where ``initial`` beats every entry: no entry gets a gradient (not NaN)."""
    def f(x):
        return np.sum(np.max(x, axis=1, initial=100.0))

    np.testing.assert_array_equal(sg.grad(f)(X), np.zeros_like(X))


def test_median_ties_split_evenly():
    def f(x):
        return np.median(x)

    np.testing.assert_allclose(sg.grad(f)(np.array([1.0, 2.0, 2.0])), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(sg.grad(f)(np.array([4.0, 1.0, 3.0, 2.0])), [0.0, 0.0, 0.5, 0.5])


def test_svd_full_matrices_of_a_non_square_matrix_is_refused():
    def f(x):
        u, s, vh = np.linalg.svd(x)
        return np.sum(u) + np.sum(s)

    with pytest.raises(sg.SrcgradError, match="full_matrices"):
        sg.grad(f)(X)
