"""gradcheck, gradgradcheck and compare_grads (srcgrad.testing)."""

import re

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import GradcheckError
from srcgrad.custom_function import Function
from srcgrad.testing import compare_grads, gradcheck, gradgradcheck, numerical_grad


def cubic_sin(x):
    return x ** 3 + np.sin(x)


def sum_cubic_sin(x):
    return np.sum(x ** 3 + np.sin(x))


def weighted(x, w):
    return np.sum(np.tanh(x) * w) + np.sum(x * x) * 0.5


def mixed(a, b):
    return a * a * b + np.exp(b)


def vector_out(x):
    return np.sin(x) * 2.0


X = np.array([0.3, -1.1, 2.0])
W = np.array([1.5, -0.4, 0.7])


def test_gradcheck_true_on_correct_functions():
    assert gradcheck(cubic_sin, (0.7,)) is True
    assert gradcheck(sum_cubic_sin, (X,)) is True
    assert gradcheck(weighted, (X, W), wrt=(0, 1)) is True
    assert gradcheck(weighted, (X, W), wrt="w") is True
    assert gradcheck(mixed, (0.5, 1.5), wrt=(0, 1)) is True


def test_gradcheck_non_scalar_output():
    seed = np.array([1.0, -0.5, 2.0])
    assert gradcheck(vector_out, (X,), grad_outputs=seed) is True
    assert gradcheck(vector_out, (X,), grad_outputs="random") is True


def test_gradcheck_float32_inputs():
    assert gradcheck(sum_cubic_sin, (X.astype(np.float32),), atol=1e-4, rtol=1e-3) is True


def test_compare_grads_wrong_gradient_names_entry_and_values():
    numeric = numerical_grad(weighted, (X, W), wrt=0)
    right = 1.0 - np.tanh(X) ** 2
    right = right * W + X
    assert compare_grads(right, numeric) is True
    wrong = right.copy()
    wrong[2] += 0.5
    with pytest.raises(GradcheckError) as info:
        compare_grads(wrong, numeric, "x")
    text = str(info.value)
    assert "entry (2,)" in text
    assert repr(float(wrong[2])) in text and repr(float(numeric[2])) in text


def test_compare_grads_worst_entry_of_a_matrix():
    numeric = np.arange(6.0).reshape(2, 3)
    wrong = numeric.copy()
    wrong[0, 1] += 1e-2
    wrong[1, 2] += 1.0
    with pytest.raises(GradcheckError, match=r"entry \(1, 2\)"):
        compare_grads(wrong, numeric)


def test_compare_grads_shape_and_dtype():
    with pytest.raises(GradcheckError, match="shape"):
        compare_grads(np.zeros(2), np.zeros(3))
    with pytest.raises(GradcheckError, match="dtype"):
        compare_grads(np.zeros(3, dtype=np.int64), np.zeros(3))
    with pytest.raises(GradcheckError, match="None"):
        compare_grads(None, np.zeros(3))


def test_gradcheck_catches_a_wrong_gradient(monkeypatch):
    right = sg.grad(sum_cubic_sin)

    def wrong_grad(f, wrt=0, **options):
        def g(*args, grad_outputs=None, **kwargs):
            out = right(*args).copy()
            out[1] *= 1.01
            return out
        return g

    monkeypatch.setattr(sg.api, "grad", wrong_grad)
    with pytest.raises(GradcheckError) as info:
        gradcheck(sum_cubic_sin, (X,))
    expected = 3 * X[1] ** 2 + np.cos(X[1])
    text = str(info.value)
    assert "entry (1,)" in text and "sum_cubic_sin" in text
    assert repr(float(expected * 1.01)) in text
    assert gradcheck(sum_cubic_sin, (X,), raise_exception=False) is False


def test_gradcheck_scalar_wrong_gradient(monkeypatch):
    monkeypatch.setattr(sg.api, "grad", lambda f, wrt=0, **o: lambda *a, **k: 1.0)
    with pytest.raises(GradcheckError, match="the value: srcgrad 1.0, finite differences"):
        gradcheck(cubic_sin, (0.7,))


def test_gradgradcheck_cubic_sin():
    assert gradgradcheck(cubic_sin, (0.7,), atol=1e-7, rtol=1e-5) is True
    assert gradgradcheck(cubic_sin, (-1.3,), atol=1e-7, rtol=1e-5) is True


def test_gradgradcheck_array_input():
    assert gradgradcheck(sum_cubic_sin, (X,), atol=1e-7, rtol=1e-5) is True


def test_gradgradcheck_several_inputs():
    assert gradgradcheck(mixed, (0.5, 1.5), wrt=(0, 1), atol=1e-7, rtol=1e-5) is True


def test_gradgradcheck_wrong_second_derivative(monkeypatch):
    real_grad = sg.grad
    calls = []

    def grad(f, wrt=0, **options):
        calls.append(f)
        g = real_grad(f, wrt, **options)
        if len(calls) == 1:
            return g                       # the first derivative, as a function

        def wrong(*args, **kwargs):
            return g(*args, **kwargs) + 0.1
        return wrong

    monkeypatch.setattr(sg.api, "grad", grad)
    with pytest.raises(GradcheckError) as info:
        gradgradcheck(cubic_sin, (0.7,))
    text = str(info.value)
    expected = 6 * 0.7 - float(np.sin(0.7))
    assert "grad_cubic_sin" in text and repr(expected + 0.1) in text


# ----- Through the compiler (run once it understands Func.apply) -----



class GoodCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x ** 2


class BadCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x ** 2          # wrong: should be 3 x^2


def good_cube_sum(x):
    return np.sum(GoodCube.apply(x) + np.sin(x))


def bad_cube_sum(x):
    return np.sum(BadCube.apply(x) + np.sin(x))


def _needs_apply_support():
    """The compiler differentiates Func.apply: an error here fails the test, never skips it."""
    sg.grad(good_cube_sum)(X)


def test_gradcheck_custom_function_through_the_compiler():
    _needs_apply_support()
    assert gradcheck(good_cube_sum, (X,)) is True
    with pytest.raises(GradcheckError) as info:
        gradcheck(bad_cube_sum, (X,))
    text = str(info.value)
    worst = int(np.argmax(np.abs(X ** 2) / (1e-5 + 1e-3 * np.abs(3 * X ** 2 + np.cos(X)))))
    assert f"entry ({worst},)" in text
    found = re.search(r"srcgrad (\S+), finite differences (\S+) ", text)
    assert found, text
    assert float(found.group(1)) == pytest.approx(2 * X[worst] ** 2 + np.cos(X[worst]))
    assert float(found.group(2)) == pytest.approx(3 * X[worst] ** 2 + np.cos(X[worst]))
