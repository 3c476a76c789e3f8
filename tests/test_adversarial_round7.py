"""Seventh adversarial round: programs that srcgrad got silently wrong (or failed on with an
error that was not a refusal) before their fix. Each gradient, tangent or Hessian is checked
against central differences in float64; each refusal must name what it refuses."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from adversarial_checks import assert_grad_and_jvp, assert_refused_in

XM = np.array([[0.5, -1.0], [2.0, 0.3]])


# ----- numpy.matrix values: * and ** are matrix products -----
# An argument or global numpy.matrix went through the rules for arrays: the adjoint of
# x * m was dy * m, a matrix product again, so sg.grad gave column sums where the
# gradient is row sums (sum(x * GM) for a 2x2: [[4, 6], [4, 6]] for [[3, 7], [3, 7]]),
# and sg.grad(f, jit=True) a third answer. It is refused now, in every mode.

GM = np.matrix([[1.0, 2.0], [3.0, 4.0]])


def times_global_matrix(x):
    return np.sum(np.asarray(x * GM))


def times_argument(x, m):
    return np.sum(np.asarray(x * m))


def squared(x):
    return np.sum(np.asarray(x * x))


@pytest.mark.parametrize("run", [
    lambda: sg.grad(times_global_matrix)(XM.copy()),
    lambda: sg.jvp(times_global_matrix, (XM.copy(),), (np.ones((2, 2)),)),
    lambda: sg.grad(times_global_matrix, jit=True)(XM.copy()),
])
def test_a_global_numpy_matrix_is_refused_at_the_function(run):
    assert_refused_in(__file__, run, "GM", "numpy.matrix")


@pytest.mark.parametrize("run", [
    lambda: sg.grad(times_argument)(XM.copy(), GM),
    lambda: sg.value_and_grad(times_argument, jit=True)(XM.copy(), GM),
    lambda: sg.jvp(times_argument, (XM.copy(), GM), (np.ones((2, 2)), None)),
    lambda: sg.grad(squared)(GM.copy()),
    lambda: sg.hessian(squared)(GM.copy()),
    lambda: sg.jacfwd(squared)(GM.copy()),
    lambda: sg.jacrev(squared)(GM.copy()),
    lambda: sg.vjp(squared)(GM.copy()),
])
def test_a_numpy_matrix_argument_is_refused_in_every_mode(run):
    with pytest.raises(sg.SrcgradError, match="numpy.matrix"):
        run()


def test_the_same_values_as_arrays_differentiate():
    m = np.asarray(GM)
    want = numerical_grad(times_argument, (XM.copy(), m))
    np.testing.assert_allclose(want, [[1.0, 2.0], [3.0, 4.0]], rtol=1e-6)
    np.testing.assert_allclose(sg.grad(times_argument)(XM.copy(), m), want, rtol=1e-6)
    assert_grad_and_jvp(squared, (XM.copy(),))
