"""Operand-choosing primitives (maximum, minimum, fmax, fmin, clip, Python's max/min)
select their gradient with ``where``: the operand not chosen gets exactly 0, even where
the gradient arriving is infinite (``sqrt`` of a clipped 0), as in PyTorch. Before, the
rules multiplied by a mask and gave ``0 * inf = nan``."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from adversarial_checks import _fd

X = np.array([-1.0, 0.5, 2.0, -3.0, 0.25])
INSIDE = X > 0
WANT = np.where(INSIDE, 0.5 / np.sqrt(np.abs(X)), 0.0)


def sqrt_clip(x):
    return np.sum(np.sqrt(np.clip(x, 0.0, None)))


def sqrt_clip_method(x):
    return np.sum(np.sqrt(x.clip(0.0)))


def sqrt_clip_keywords(x):
    return np.sum(np.sqrt(np.clip(x, a_min=0.0, a_max=10.0)))


def sqrt_maximum(x):
    return np.sum(np.sqrt(np.maximum(x, 0.0)))


def sqrt_maximum_swapped(x):
    return np.sum(np.sqrt(np.maximum(0.0, x)))


def sqrt_minimum(x):
    return np.sum(np.sqrt(-np.minimum(-x, 0.0)))


def sqrt_fmax(x):
    return np.sum(np.sqrt(np.fmax(x, 0.0)))


def sqrt_fmin(x):
    return np.sum(np.sqrt(-np.fmin(-x, 0.0)))


def sqrt_builtin_max(x):
    total = 0.0
    for v in x:
        total = total + np.sqrt(max(v, 0.0))
    return total


SELECTING = [sqrt_clip, sqrt_clip_method, sqrt_clip_keywords, sqrt_maximum, sqrt_maximum_swapped,
             sqrt_minimum, sqrt_fmax, sqrt_fmin, sqrt_builtin_max]


@pytest.mark.parametrize("f", SELECTING, ids=lambda f: f.__name__)
def test_an_operand_not_chosen_gets_zero_under_an_infinite_derivative(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # sqrt's derivative at 0 is inf
        got = sg.grad(f)(X.copy())
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, WANT)


@pytest.mark.parametrize("f", [sqrt_clip, sqrt_maximum, sqrt_minimum, sqrt_fmax, sqrt_builtin_max],
                         ids=lambda f: f.__name__)
def test_their_hessians_away_from_the_kink(f):
    x = np.array([0.7, 0.5, 2.0, 1.5])
    np.testing.assert_allclose(sg.hessian(f)(x), np.diag(-0.25 * x ** -1.5), rtol=1e-10)


def two_sided(x, y):
    return np.sum(np.maximum(x, y) ** 2 + 3.0 * np.minimum(x, y) + np.fmax(x, 2 * y) * np.fmin(y, x))


def test_ties_split_evenly_and_nan_operands_pass_to_the_other():
    x = np.array([1.0, 2.0, 3.0, np.nan, np.nan])
    y = np.array([1.0, 5.0, -1.0, 4.0, np.nan])
    dx, dy = sg.grad(lambda a, b: np.sum(np.fmax(a, b) * np.arange(1.0, 6.0)), wrt=(0, 1))(x, y)
    np.testing.assert_array_equal(dx, [0.5, 0.0, 3.0, 0.0, 5.0])   # both NaN: the first's
    np.testing.assert_array_equal(dy, [0.5, 2.0, 0.0, 4.0, 0.0])
    dx, dy = sg.grad(lambda a, b: np.sum(np.maximum(a, b) * np.arange(1.0, 6.0)), wrt=(0, 1))(x, y)
    np.testing.assert_array_equal(dx, [0.5, 0.0, 3.0, 0.0, 0.0])
    np.testing.assert_array_equal(dy, [0.5, 2.0, 0.0, 4.0, 5.0])


def test_broadcast_operands_match_differences_in_every_mode():
    x = np.array([[0.3, -1.2, 2.0], [1.1, 0.4, -0.6]])
    y = np.array([0.5, -2.0, 1.0])
    want = _fd(two_sided, (x.copy(), y.copy()), wrt=(0, 1))
    got = sg.grad(two_sided, wrt=(0, 1))(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)
    tx, ty = np.cos(np.arange(6.0)).reshape(2, 3), np.sin(np.arange(3.0))
    _, tangent = sg.jvp(two_sided, (x, y), (tx, ty))
    np.testing.assert_allclose(tangent, np.sum(want[0] * tx) + np.sum(want[1] * ty), rtol=1e-6)


def test_dask_arrays_select_too():
    da = pytest.importorskip("dask.array")
    x = da.from_array(X.copy(), chunks=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = sg.grad(sqrt_maximum)(x)
        got = got.compute() if hasattr(got, "compute") else got
    np.testing.assert_allclose(got, WANT)



def angle_from_cosines(c):
    return np.sum(np.arccos(np.clip(c, -1.0, 1.0)) * np.arange(1.0, 5.0))


def test_the_clipped_arccos_idiom_is_zero_outside_the_bounds_not_nan():
    # a cosine computed from parallel vectors rounds to 1 + 2e-16: clipped, and arccos'
    # is -inf at 1
    c = np.array([1.0 + 2.0 ** -52, -1.5, 0.3, -0.6])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = sg.grad(angle_from_cosines)(c)
    np.testing.assert_allclose(got, [0.0, 0.0, -3.0 / np.sqrt(1 - 0.09), -4.0 / np.sqrt(1 - 0.36)])
    assert got[0] == 0.0 and got[1] == 0.0
