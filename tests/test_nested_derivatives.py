"""``sg.hessian(u)(x)`` and ``sg.jacobian(f)(x)`` (``jacrev``, ``jacfwd``) called inside a
differentiated function: a PINN's Laplacian ``np.trace(sg.hessian(u)(x, w))``, a Jacobian
penalty. They were refused ("calling the result of a call"); they are written as rows of
gradients (transform/nested_derivatives.py), so the outer derivative is one of gradients.
Checked against central differences, through grad, jvp and jit=True; a derivative of one
more order (a Hessian of it) is refused at the line."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

W = np.array([0.5, 1.5])
X = np.array([0.3, 0.7])


def u(x, w):
    return np.sum(np.sin(x * w) ** 2) + x[0] * x[1] ** 2


def layer(x, w):
    return np.tanh(np.outer(w, x))


def cube(x):
    return x ** 3 * 2


def laplacian_loss(w, x):
    return np.trace(sg.hessian(u)(x, w)) ** 2


def hessian_wrt_parameters(w, x):
    return np.sum(sg.hessian(u, wrt=1)(x, w) ** 2)


def jacobian_penalty(w, x):
    return np.sum(sg.jacobian(layer)(x, w) ** 2) + np.sum(sg.jacfwd(layer, 1)(x, w))


def hessian_alias(w, x):
    H = sg.hessian(u)
    return np.sum(H(x, w) * np.eye(2)) + H(x, w)[0, 1]


def hessian_of_lambda(w, x):
    return np.sum(sg.hessian(lambda v: np.sum(v ** 3 * w))(x))


def scalar_hessian(w, x):
    a = w[0]
    return sg.hessian(cube)(a) * x[1]


CASES = [laplacian_loss, hessian_wrt_parameters, jacobian_penalty, hessian_alias, hessian_of_lambda,
         scalar_hessian]


def _hessian(w, x):
    """The Hessian of u in x, by central differences of its gradient."""
    return np.array([numerical_grad(lambda v: sg.grad(u)(v, w)[i], (x,)) for i in range(2)])


def test_the_rewritten_values_are_the_hessian_and_jacobian():
    value = sg.value_and_grad(laplacian_loss)(W, X)[0]   # the value the rewritten code computes
    assert value == pytest.approx(np.trace(_hessian(W, X)) ** 2, rel=1e-6)
    weights = np.arange(8.0).reshape(2, 2, 2)

    def weighted_jacobian(w, x):
        return np.sum(sg.jacobian(layer)(x, w) * weights)
    J = np.array([numerical_grad(lambda v: layer(v, W)[i, j], (X,))
                  for i in range(2) for j in range(2)]).reshape(2, 2, 2)
    assert sg.value_and_grad(weighted_jacobian)(W, X)[0] == pytest.approx(np.sum(J * weights), rel=1e-6)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_jvp_and_jit_match_differences(f):
    want = numerical_grad(f, (W, X))
    np.testing.assert_allclose(sg.grad(f)(W, X), want, rtol=1e-6, atol=1e-8)
    _, tangent = sg.jvp(f, (W, X), (np.ones(2), np.zeros(2)))
    assert tangent == pytest.approx(want @ np.ones(2), rel=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the jit may fall back, with its warning)
        np.testing.assert_allclose(sg.grad(f, jit=True)(W, X), want, rtol=1e-6, atol=1e-8)


def test_one_order_more_is_refused_at_the_line():
    with pytest.raises(sg.SrcgradError):
        sg.hessian(laplacian_loss)(W, X)


def test_other_calls_stay_refused_at_the_line():
    def computed_argument(w, x):   # an argument read more than once must be a name
        return np.sum(sg.hessian(u)(x * 2, w))
    with pytest.raises(sg.SrcgradError, match="test_nested_derivatives.py"):
        sg.grad(computed_argument)(W, X)


def test_a_lambda_differentiated_inside_reads_the_helpers_bound_around_it():
    """``sorted(..., key=abs)`` in ``sg.grad(lambda v: ...)(x)`` inside f: the lambda's own
    compile read a helper the enclosing compile had bound (NameError: sort_order)."""
    def f(x):
        return sg.grad(lambda v: sorted([v[0] * 2, v[1]], key=abs)[0] ** 2)(x)[0] * x[1]
    np.testing.assert_allclose(sg.grad(f)(X), numerical_grad(f, (X,)), rtol=1e-6)
