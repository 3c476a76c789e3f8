"""srcgrad.testing on its own: finite differences against hand-derived gradients.

These tests do not use the compiler (check_grads is given a fake ``srcgrad.grad``
where it needs one), so they also check the checker when the compiler is broken.
"""

import numpy as np
import pytest

from srcgrad.errors import GradcheckError
from srcgrad.testing import check_grads, numerical_grad, random_cotangent


def quadratic(x, w):
    return np.sum(x * x * w)


def scalar_fn(a, b):
    return a * a * b + np.sin(a)


def vector_out(x):
    return np.sin(x) * 2.0


def pair_out(x, a):
    return np.sum(x) * a, x * x


def keyword_fn(x, *, c, d=2.0):
    return np.sum(x ** 3) * c + d * x[0]


X = np.array([0.5, -1.2, 2.0])
W = np.array([1.5, 0.3, -0.7])


def test_array_argument():
    g = numerical_grad(quadratic, (X, W), wrt=0)
    assert isinstance(g, np.ndarray) and g.dtype == np.float64 and g.shape == X.shape
    np.testing.assert_allclose(g, 2 * X * W, rtol=1e-8, atol=1e-9)


def test_wrt_tuple_and_names():
    gx, gw = numerical_grad(quadratic, (X, W), wrt=("x", 1))
    np.testing.assert_allclose(gx, 2 * X * W, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(gw, X * X, rtol=1e-8, atol=1e-9)


def test_python_float_argument():
    ga, gb = numerical_grad(scalar_fn, (0.5, 2.0), wrt=(0, 1))
    assert type(ga) is float and type(gb) is float
    assert ga == pytest.approx(2 * 0.5 * 2.0 + np.cos(0.5), rel=1e-8)
    assert gb == pytest.approx(0.25, rel=1e-8)


def test_matrix_argument():
    m = np.array([[1.0, 2.0], [3.0, -1.0]])
    g = numerical_grad(lambda m: np.sum(m @ m), (m,), wrt=0)
    # d/dm sum(m @ m) = 1 m^T + m^T 1 (1 the all-ones matrix)
    ones = np.ones((2, 2))
    np.testing.assert_allclose(g, ones @ m.T + m.T @ ones, rtol=1e-8, atol=1e-8)


def test_float32_input_differenced_in_float64():
    g = numerical_grad(quadratic, (X.astype(np.float32), W), wrt=0)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * X.astype(np.float32).astype(np.float64) * W,
                               rtol=1e-8, atol=1e-9)


def test_non_scalar_output_needs_seed():
    with pytest.raises(ValueError, match="grad can be implicitly created only for scalar outputs"):
        numerical_grad(vector_out, (X,), wrt=0)


def test_non_scalar_output_with_seed():
    seed = np.array([1.0, 0.5, -2.0])
    g = numerical_grad(vector_out, (X,), wrt=0, grad_outputs=seed)
    np.testing.assert_allclose(g, seed * 2.0 * np.cos(X), rtol=1e-8, atol=1e-9)


def test_tuple_output_with_none_seed():
    seed = np.array([1.0, 0.5, -2.0])
    gx, ga = numerical_grad(pair_out, (X, 0.7), wrt=(0, 1), grad_outputs=(None, seed))
    np.testing.assert_allclose(gx, seed * 2 * X, rtol=1e-8, atol=1e-9)
    assert ga == pytest.approx(0.0, abs=1e-9)
    gx, ga = numerical_grad(pair_out, (X, 0.7), wrt=(0, 1), grad_outputs=(3.0, seed))
    np.testing.assert_allclose(gx, 3.0 * 0.7 + seed * 2 * X, rtol=1e-8, atol=1e-9)
    assert ga == pytest.approx(3.0 * np.sum(X), rel=1e-8)


def test_keyword_only_argument():
    g = numerical_grad(keyword_fn, (X,), wrt="c", kwargs={"c": 1.5})
    assert g == pytest.approx(np.sum(X ** 3), rel=1e-8)
    g = numerical_grad(keyword_fn, (X,), wrt="d", kwargs={"c": 1.5})
    assert g == pytest.approx(X[0], rel=1e-8)


def test_inputs_not_mutated():
    x, w = X.copy(), W.copy()
    numerical_grad(quadratic, (x, w), wrt=(0, 1))
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(w, W)


def test_local_variable_refused():
    with pytest.raises(ValueError, match="local"):
        numerical_grad(quadratic, (X, W), wrt="y")


def test_integer_input_refused():
    with pytest.raises(TypeError):
        numerical_grad(lambda n: n * 2.0, (3,), wrt=0)


def test_random_cotangent_shapes():
    seed = random_cotangent((1.0, np.zeros((2, 3))))
    assert type(seed[0]) is float and seed[1].shape == (2, 3)


class _FakeSrcgrad:
    """Stands in for ``srcgrad.grad``: returns a fixed (right or wrong) gradient."""

    def __init__(self, value):
        self.value = value

    def grad(self, f, wrt=0, **options):
        return lambda *args, grad_outputs=None, **kwargs: self.value


def test_check_grads_passes_and_fails(monkeypatch):
    import srcgrad

    monkeypatch.setattr(srcgrad.api, "grad", _FakeSrcgrad(2 * X * W).grad)
    assert check_grads(quadratic, (X, W), wrt=0) is True

    wrong = 2 * X * W
    wrong[1] += 1e-3
    monkeypatch.setattr(srcgrad.api, "grad", _FakeSrcgrad(wrong).grad)
    with pytest.raises(GradcheckError) as info:
        check_grads(quadratic, (X, W), wrt=0)
    text = str(info.value)
    assert "entry (1,)" in text and repr(float(wrong[1])) in text, text


def test_check_grads_shape_mismatch(monkeypatch):
    import srcgrad

    monkeypatch.setattr(srcgrad.api, "grad", _FakeSrcgrad(np.zeros(2)).grad)
    with pytest.raises(GradcheckError, match="shape"):
        check_grads(quadratic, (X, W), wrt=0)
