"""Python as people write it, round twelve: Python floats at singular points. The gradients
of ``math.sqrt`` at 0, ``asin``/``acos`` at -1 and 1, ``acosh`` at 1, ``atan2`` at the origin
and of powers below 1 at 0 (``x ** 0.5``, ``math.pow``, ``pow``) divide Python floats by 0
or raise 0.0 to a negative power: they raised ZeroDivisionError where NumPy floats (and
PyTorch) give inf or nan with a RuntimeWarning. ``rt.divide`` and ``rt.power``
(srcgrad/runtime/arrays.py) have NumPy's meaning there, and Numba compiles them (jit=True
does not fall back). Away from those points each gradient is checked against central
differences in float64: grad, value_and_grad, jvp, the Hessian, a gradient of a gradient
and ``jit=True``."""

import math
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.jit import JitFallbackWarning
from srcgrad.testing import numerical_grad
from tests import adversarial_checks
from tests.adversarial_checks import assert_refused_in

X = np.array([0.3, -0.5, 0.7, 0.2])
V = np.array([0.7, -1.1, 0.4, 2.0])
W = np.array([1.3, 0.2, -0.6, 0.9])


def scalar_loop(x):
    """A loop over Python floats through every rule that now divides with rt.divide."""
    total = 0.0
    for i in range(len(x)):
        xi = float(x[i])
        total = total + math.sqrt(xi * xi + 0.5) + math.asin(xi / 2) * math.acos(xi / 3)
        total = total + math.acosh(1.5 + xi * xi) + math.atan2(xi, 1.0 + total * 0.1)
    return total


def python_powers(x):
    """Powers of Python floats (their gradients read rt.power): literal, fractional,
    negative and variable exponents, math.pow and pow."""
    total = 0.0
    for i in range(len(x)):
        xi = float(x[i])
        r = xi * xi + 0.25
        total = total + r ** 0.5 + r ** -1.5 + math.pow(r, 0.3) + pow(r, xi) + (r + 1.0) ** (xi * 0.5)
    return total


def check_all_modes(f, x=X, fallback=False):
    """tests/adversarial_checks.check_all_modes with this file's points."""
    adversarial_checks.check_all_modes(f, x, V, W, fallback)


def test_math_functions_of_floats_in_all_modes():
    pytest.importorskip("numba")
    check_all_modes(scalar_loop)


def test_powers_of_floats_in_all_modes():
    pytest.importorskip("numba")
    check_all_modes(python_powers)


def test_the_generated_code_reads_rt_divide():
    text = sg.source(scalar_loop, args=(X,))
    assert "rt.divide(" in text


def sqrt0(x):
    return math.sqrt(x)


def asin1(x):
    return math.asin(x)


def acos1(x):
    return math.acos(x)


def acosh1(x):
    return math.acosh(x)


def atan2_origin(x):
    return math.atan2(x, x)


def root_of_power(x):
    return x ** 0.5


def math_pow_root(x):
    return math.pow(x, 0.5)


def builtin_pow_root(x):
    return pow(x, 1.5) + pow(x, 0.5)


def distance(x):
    """The distance of two points of Python floats where they coincide."""
    dx, dy = x - 0.0, 2.0 * x
    return (dx * dx + dy * dy) ** 0.5


# f, the singular point, its gradient there, its second derivative there (hand-derived:
# 1/(2 sqrt x), 1/sqrt(1-x^2), -1/sqrt(1-x^2), 1/sqrt(x^2-1), (x - x)/(2 x^2) = 0/0;
# pow(x, 1.5) + pow(x, 0.5) curves as 0.75 x^-0.5 - 0.25 x^-1.5: inf - inf; the distance
# sqrt(5) |x| has 0 * inf on the way).
SINGULAR = [(sqrt0, 0.0, math.inf, -math.inf), (asin1, 1.0, math.inf, math.inf),
            (asin1, -1.0, math.inf, -math.inf), (acos1, 1.0, -math.inf, -math.inf),
            (acos1, -1.0, -math.inf, math.inf), (acosh1, 1.0, math.inf, -math.inf),
            (atan2_origin, 0.0, math.nan, math.nan), (root_of_power, 0.0, math.inf, -math.inf),
            (math_pow_root, 0.0, math.inf, -math.inf), (builtin_pow_root, 0.0, math.inf, math.nan),
            (distance, 0.0, math.nan, math.nan)]


def _same(got, want):
    assert isinstance(got, float) or np.ndim(got) == 0, got
    if math.isnan(want):
        assert math.isnan(got), got
    else:
        assert got == want, (got, want)


@pytest.mark.parametrize("f, x, slope, curvature", SINGULAR)
def test_singular_points_give_numpys_inf_or_nan_with_its_warning(f, x, slope, curvature):
    with pytest.warns(RuntimeWarning, match="encountered in (divide|power)"):
        _same(sg.grad(f)(x), slope)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value, g = sg.value_and_grad(f)(x)
        assert value == f(x)
        _same(g, slope)
        _same(sg.jvp(f, (x,), (1.0,))[1], slope)
        _same(float(sg.hessian(f)(x)), curvature)
        assert not math.isfinite(sg.grad(sg.grad(f))(x))   # inf * 0 on the way: nan or inf
        # NumPy floats take the same path (math's functions return Python floats)
        _same(sg.grad(f)(np.float64(x)), slope)


@pytest.mark.parametrize("f, x, slope, curvature", SINGULAR)
def test_singular_points_under_jit(f, x, slope, curvature):
    pytest.importorskip("numba")
    jitted = sg.grad(f, jit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", JitFallbackWarning)
        for _ in range(3):
            _same(jitted(x), slope)


def test_regular_points_keep_python_floats_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        g = sg.grad(sqrt0)(4.0)
        assert type(g) is float and g == 0.25
        assert sg.grad(atan2_origin)(2.0) == 0.0


def test_a_python_zero_division_in_the_users_code_still_raises():
    """Only the rules divide with NumPy's meaning: the user's own ``1 / x`` at 0 raises as
    Python does, before any gradient."""
    def f(x):
        return 1.0 / x

    with pytest.raises(ZeroDivisionError):
        sg.grad(f)(0.0)


# ----- scipy.stats frozen distributions: norm(loc, scale).logpdf(x) -----

stats = pytest.importorskip("scipy.stats")
norm = stats.norm
HERE = __file__.rsplit("/", 1)[-1]


def frozen_inline(p):
    x, loc, scale = p[:2], p[2], 1.0 + p[3] ** 2
    return np.sum(norm(loc, scale).logpdf(x)) + np.sum(stats.norm(loc=loc, scale=scale).cdf(x))


def frozen_bound(p):
    """A frozen distribution bound to a name and read by several methods."""
    dist = stats.norm(p[2], 1.5)
    unit = norm()
    return np.sum(dist.logpdf(p[:2])) + dist.logsf(p[3]) + unit.pdf(p[0] * p[1]) \
        + np.sum(dist.logcdf(p[:2] * 0.5)) + dist.sf(p[1]) + dist.ppf(0.2 + 0.1 * np.tanh(p[0]))


def frozen_of_a_dict(x, params):
    """The freezing arguments read from a dict first, in the same block."""
    mu, sigma = params["mu"], params["sigma"]
    dist = norm(mu, sigma)
    return np.sum(dist.logpdf(x))


def frozen_in_a_loop(x, locs):
    total = 0.0
    for k in range(len(locs)):
        loc = locs[k]
        dist = norm(loc, 2.0)
        total = total + np.sum(dist.logcdf(x))
    return total


def frozen_read_between(x, loc):
    """A read of dist between the binding of loc and dist's: not rewritten (in a loop it
    would read the dist of before), refused at the freezing call."""
    for k in range(2):
        m = loc * (k + 1.0)
        if k > 0:
            x = x + dist.mean()
        dist = norm(m, 1.0)
    return np.sum(dist.logpdf(x))


def frozen_of_arguments(x, loc, scale):
    dist = norm(loc, scale)
    return np.sum(dist.logpdf(x))


@pytest.mark.parametrize("f", [frozen_inline, frozen_bound])
def test_frozen_distributions_in_all_modes(f):
    pytest.importorskip("numba")
    check_all_modes(f, fallback=True)


def test_frozen_distributions_match_scipy_and_each_argument():
    x, loc, scale = np.array([0.3, -1.2, 2.0]), 0.4, 1.7
    value = sg.value_and_grad(frozen_of_arguments)(x, loc, scale)[0]
    assert value == pytest.approx(np.sum(norm(loc, scale).logpdf(x)), rel=1e-13)
    for wrt in range(3):
        got = sg.grad(frozen_of_arguments, wrt=wrt)(x, loc, scale)
        want = numerical_grad(frozen_of_arguments, (x, loc, scale), wrt=wrt)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_frozen_arguments_bound_first_in_the_same_block():
    x = np.array([0.3, -1.2, 2.0])
    params = {"mu": 0.4, "sigma": 1.3}
    got = sg.grad(frozen_of_a_dict, wrt=1)(x, params)
    for k in params:
        step = dict(params)
        step[k] += 1e-6
        back = dict(params)
        back[k] -= 1e-6
        want = (frozen_of_a_dict(x, step) - frozen_of_a_dict(x, back)) / 2e-6
        assert got[k] == pytest.approx(want, rel=1e-6)
    locs = np.array([0.1, -0.4, 0.8])
    for wrt in (0, 1):
        np.testing.assert_allclose(sg.grad(frozen_in_a_loop, wrt=wrt)(x, locs),
                                   numerical_grad(frozen_in_a_loop, (x, locs), wrt=wrt),
                                   rtol=1e-6, atol=1e-9)
    assert_refused_in(HERE, lambda: sg.grad(frozen_read_between, wrt=1)(x, 0.4),
                      "freezing the scipy.stats distribution norm", "st.norm.logpdf(x, loc, scale)")


def test_the_frozen_binding_is_not_built_when_only_its_methods_read_it():
    text = sg.source(frozen_of_arguments, args=(np.ones(3), 0.4, 1.7))
    code = [line for line in text.splitlines() if not line.strip().startswith("#")]
    assert not any("norm(loc, scale)" in line for line in code), text
    assert any("norm_logpdf" in line for line in code), text


def frozen_then_rebound(x, loc):
    dist = norm(loc, 1.0)
    loc = loc * 2.0   # the frozen object keeps the old loc: not read as norm.logpdf(x, loc)
    return np.sum(dist.logpdf(x)) + loc


def frozen_rvs(x, loc):
    return np.sum(norm(loc, 1.0).rvs(size=3, random_state=0) * x)


def test_other_frozen_forms_are_refused_at_their_line():
    x = np.array([0.3, -1.2])
    assert_refused_in(HERE, lambda: sg.grad(frozen_then_rebound, wrt=1)(x, 0.4), "freezing the scipy.stats distribution norm", "dist = norm(loc")
    assert_refused_in(HERE, lambda: sg.grad(frozen_rvs, wrt=1)(x, 0.4), "rvs")
