"""Eighth adversarial round: programs that srcgrad got silently wrong (or failed on with an
error that was not a refusal) before their fix. Each gradient, tangent or Hessian is checked
against central differences in float64 and values worked out by hand; each refusal must name
what it refuses."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from adversarial_checks import assert_grad_and_jvp, assert_refused_in


# ----- jit: narrow integer arithmetic inside a fused elementwise run -----
# Round seven sent arithmetic on int8/int16/int32 scalars to the NumPy gradient, reading
# the typed IR of the compiled function only; loops.py moves a run of elementwise
# statements into a kernel of its own (``_run_k_0``), whose IR was not read, so
# ``k = np.int8(100) + np.int8(100)`` then ``x * k`` gave 200 per entry with jit=True where
# NumPy (and sg.grad) give -56.

def _int8_sum_then_product(x):
    k = np.int8(100) + np.int8(100)
    return np.sum(x * k)


def _int8_sum_inline(x):
    return np.sum(x * (np.int8(100) + np.int8(100)))


@pytest.mark.parametrize("f", [_int8_sum_then_product, _int8_sum_inline])
def test_narrow_integer_arithmetic_in_a_fused_run_runs_the_numpy_gradient(f):
    pytest.importorskip("numba")
    x = np.array([1.0, 2.0, 3.0])
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = numerical_grad(f, (x,))
        got = sg.grad(f, jit=True)(x)
        np.testing.assert_allclose(want, -56.0, rtol=1e-6)
        np.testing.assert_array_equal(got, -56.0)
        value, grad = sg.value_and_grad(f, jit=True)(x)
        np.testing.assert_array_equal(grad, -56.0)
        assert value == f(x)

