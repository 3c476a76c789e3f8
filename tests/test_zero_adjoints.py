"""Second derivatives at points where an adjoint is exactly zero (issue 14).

The reverse sweep skips a rule while its adjoint is a scalar zero (``rt.has_grad``),
which keeps the first derivative but, in code that is differentiated again, loses the
skipped rule's derivative with respect to the adjoint (``sin(x + 1.5) * x`` at
``x = 0`` gave half the second derivative). Grad of grad, ``sg.hvp`` and ``jacfwd`` of a
gradient are checked against central differences of the first derivative at points
with exact zeros: zero entries, a zero factor of a product, indexed writes of zero,
relu/abs/max at their ties where the function is smooth there; and every catalogue
function of one array (tests/functions.py) with each entry zeroed in turn. Also: the
gradient that reaches nothing (a body under ``sg.no_grad``) and one that does not read
an argument differentiate to zeros, as with ``jax.grad``.
"""

import inspect
import math

import numpy as np
import pytest

import functions
import srcgrad as sg
from srcgrad.errors import SrcgradError
from srcgrad.testing import numerical_grad


def sine_times_argument(x):
    return math.sin(x[0] + 1.5) * x[0] + np.sum(np.sin(x + 1.5) * x)


def zero_factor(x):
    return x[0] * x[1] * x[2] + np.prod(x) * np.exp(x[1])


def indexed_writes(x):
    y = np.zeros(3)
    for k in range(3):
        y[k] = x[k] * x[(k + 1) % 3]
    return np.sum(np.cos(y) * x)


def smooth_ties(x):
    # relu^3, |x|^3 and max(x, 0)^2 * x are twice differentiable at 0 (their ties)
    return np.sum(np.maximum(x, 0.0) ** 3 + np.abs(x) ** 3) + np.sum(np.maximum(x, 0.0) ** 2 * x)


def matrix_of_zero_adjoint(x):
    m = np.outer(x, x) + np.eye(3)
    return np.sum(m @ np.sin(x)) * x[0]


def loop_product(x):
    s = 1.0
    for k in range(3):
        s = s * x[k] + math.sin(x[k] + 0.5) * x[k]
    return s


def where_scaled(x):
    return np.sum(np.where(x > -5.0, np.tanh(x) * x, 0.0)) + np.dot(x, x) * x[1]


TABLE = [sine_times_argument, zero_factor, indexed_writes, smooth_ties,
         matrix_of_zero_adjoint, loop_product, where_scaled]
POINTS = [np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.7, -1.2]), np.array([0.4, 0.0, 1.1]),
          np.array([-0.6, 0.9, 0.0])]
V = np.array([0.5, -1.0, 2.0])
# the third derivative of |x|^3 jumps at 0: central differences of the gradient are off by O(eps)
ATOL = {smooth_ties: 1e-3}


def _fd_jvp(g, x, v, h=1e-6):
    return (np.asarray(g(x + h * v)) - np.asarray(g(x - h * v))) / (2 * h)


@pytest.mark.parametrize("f", TABLE, ids=[f.__name__ for f in TABLE])
def test_grad_of_grad_hvp_and_jacfwd_of_a_gradient_at_exact_zeros(f):
    first = sg.grad(f).as_function()
    outer = sg.grad(first)
    atol = ATOL.get(f, 1e-7)
    for x in POINTS:
        want = numerical_grad(first, (x.copy(),), grad_outputs=V, eps=1e-5)
        np.testing.assert_allclose(outer(x.copy(), grad_outputs=V), want, rtol=1e-6, atol=atol)
        (hv,) = sg.hvp(f, (x.copy(),), (V,))
        np.testing.assert_allclose(hv, _fd_jvp(sg.grad(f), x, V), rtol=1e-6, atol=atol)
        np.testing.assert_allclose(sg.jacfwd(first)(x.copy()), sg.hessian(f)(x.copy()),
                                   rtol=1e-10, atol=1e-12)


def test_the_first_derivative_of_such_code_still_skips_rules_on_a_zero():
    # the guards are for speed: first-order code keeps rt.has_grad, only code composed
    # to be differentiated again tests for the rt.ZERO mark
    assert "rt.has_grad(" in sg.source(sine_times_argument)
    source = sg.grad(sg.grad(sine_times_argument)).source
    assert "rt_2.touched(" in source and "rt_2.has_grad(" not in source


def _one_array_functions():
    found = []
    for name, f in vars(functions).items():
        if inspect.isfunction(f) and not name.startswith("_") and f.__module__ == functions.__name__ \
                and list(inspect.signature(f).parameters) == ["x"] \
                and getattr(f, "catalogue", None) is None and not getattr(f, "not_a_test", False):
            found.append(f)
    return found


CATALOGUE = _one_array_functions()


def _smooth(first, x, h=1e-4):
    """Whether ``<first, V>`` is differentiable at ``x``: finite, and its one-sided
    differences along each axis agree (a kink of the gradient makes them differ by O(1))."""
    at = np.dot(np.asarray(first(x.copy()), float), V)
    for e in np.eye(x.size):
        up = (np.dot(np.asarray(first(x + h * e), float), V) - at) / h
        down = (at - np.dot(np.asarray(first(x - h * e), float), V)) / h
        if not (np.isfinite(up) and np.isfinite(down) and abs(up - down) < 1e-2 * (1 + abs(up))):
            return False
    return True


@pytest.mark.parametrize("f", CATALOGUE, ids=[f.__name__ for f in CATALOGUE])
def test_catalogue_grad_of_grad_with_each_entry_zeroed(f):
    """Where the point is smooth (two step sizes agree) the second derivative matches;
    code whose gradient srcgrad cannot differentiate again is refused (SrcgradError)."""
    base = np.array(functions.VECTORS["x"])
    if np.ndim(f(base.copy())) != 0:
        pytest.skip("not a scalar function")
    try:
        first = sg.grad(f).as_function()
        outer = sg.grad(first)
    except SrcgradError:
        pytest.skip("refused")
    checked = 0
    for k in range(3):
        x = base.copy()
        x[k] = 0.0
        with np.errstate(all="ignore"):
            if not _smooth(first, x):
                continue   # not smooth at this point (a tie, a branch at 0)
            fine = numerical_grad(first, (x.copy(),), grad_outputs=V, eps=1e-5)
        try:
            got = outer(x.copy(), grad_outputs=V)
        except SrcgradError:
            pytest.skip("refused")
        # (atol: a third derivative that jumps at the zero puts O(eps) into the differences)
        np.testing.assert_allclose(got, fine, rtol=1e-5, atol=1e-4, err_msg=f"x[{k}] = 0")
        checked += 1
    if not checked:
        pytest.skip("no smooth point")


def under_no_grad(x, y):
    with sg.no_grad():
        s = np.sum(x * y)
    return s


def second_unused(x, y):
    return np.sum(np.sin(x))


def test_a_gradient_that_reaches_nothing_differentiates_to_zeros():
    x, y = np.array([0.3, -0.2]), np.array([1.0, 2.0])
    np.testing.assert_array_equal(sg.grad(sg.grad(under_no_grad))(x, y, grad_outputs=V[:2]),
                                  np.zeros(2))
    np.testing.assert_array_equal(sg.grad(under_no_grad).as_function()(x, y), np.zeros(2))
    # grad_x of second_unused does not read y: its derivative along y is zero
    np.testing.assert_array_equal(
        sg.grad(sg.grad(second_unused), wrt=1)(x, y, grad_outputs=V[:2]), np.zeros(2))
    with pytest.raises(RuntimeError, match="allow_unused"):   # first order: as PyTorch
        sg.grad(second_unused, wrt=1)(x, y)
