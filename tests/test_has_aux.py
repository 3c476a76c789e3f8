"""has_aux=True (JAX's convention, DESIGN.md section 2): f returns (output, aux); only the
output is differentiated, aux comes back as computed and carries no gradient."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import SrcgradError
from srcgrad.testing import numerical_grad

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape)


def loss_only(W, x):
    y = np.tanh(x @ W)
    return np.sum(y ** 2)


def hand_grad(W, x):
    y = np.tanh(x @ W)
    return x.T @ (2 * y * (1 - y * y))


def with_metrics(W, x):
    y = np.tanh(x @ W)
    loss = np.sum(y ** 2)
    accuracy = np.mean(np.argmax(y, axis=1) == 0)   # not differentiable: aux needs no gradient
    return loss, {"accuracy": accuracy, "loss": loss, "y": y}


def with_float(W, x):
    y = np.tanh(x @ W)
    return np.sum(y ** 2), 3.5


def with_array(W, x):
    y = np.tanh(x @ W)
    return np.sum(y ** 2), y * 10.0   # would add 10 * dy to the gradient if it were seeded


def with_tuple(W, x):
    y = np.tanh(x @ W)
    loss = np.sum(y ** 2)
    return loss, (np.max(y), np.sign(W) * np.floor(W))


def metrics_of(W, x):
    y = np.tanh(x @ W)
    return {"accuracy": np.mean(np.argmax(y, axis=1) == 0), "loss": np.sum(y ** 2), "y": y}


def test_grad_with_aux_returns_the_gradient_of_the_output_alone_and_the_aux():
    W, x = randn(3, 2), randn(5, 3)
    grads, aux = sg.grad(with_metrics, has_aux=True)(W, x)
    np.testing.assert_allclose(grads, hand_grad(W, x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads, numerical_grad(loss_only, (W, x)), rtol=1e-5, atol=1e-7)
    expected = metrics_of(W, x)
    assert set(aux) == set(expected)
    for k in expected:
        np.testing.assert_allclose(aux[k], expected[k])


@pytest.mark.parametrize("fn", [with_float, with_array, with_tuple, with_metrics])
def test_each_kind_of_aux_leaves_the_gradient_that_of_the_loss(fn):
    W, x = randn(3, 2), randn(4, 3)
    grads, aux = sg.grad(fn, has_aux=True)(W, x)
    np.testing.assert_allclose(grads, hand_grad(W, x), rtol=1e-10, atol=1e-12)
    expected = fn(W, x)[1]
    if isinstance(expected, tuple):
        assert isinstance(aux, tuple) and len(aux) == len(expected)
        for a, e in zip(aux, expected):
            np.testing.assert_allclose(a, e)
    elif isinstance(expected, dict):
        assert set(aux) == set(expected)
    else:
        np.testing.assert_allclose(aux, expected)
        assert type(aux) is type(expected)


def test_without_has_aux_the_pair_is_two_seeded_outputs_so_the_gradients_differ():
    W, x = randn(3, 2), randn(4, 3)
    g_aux, _ = sg.grad(with_array, has_aux=True)(W, x)
    both = sg.grad(with_array)(W, x, grad_outputs=(1.0, np.ones((4, 2))))
    assert not np.allclose(g_aux, both)   # aux's contribution is in one and not the other
    np.testing.assert_allclose(g_aux, hand_grad(W, x), rtol=1e-10)


def test_value_and_grad_with_aux_returns_value_and_aux_then_gradients():
    W, x = randn(3, 2), randn(4, 3)
    (value, aux), grads = sg.value_and_grad(with_metrics, has_aux=True)(W, x)
    assert value == pytest.approx(loss_only(W, x))
    assert aux["accuracy"] == pytest.approx(metrics_of(W, x)["accuracy"])
    np.testing.assert_allclose(grads, hand_grad(W, x), rtol=1e-10)
    # again: the same
    (value2, aux2), grads2 = sg.value_and_grad(with_metrics, has_aux=True)(W, x)
    assert value2 == value and aux2["accuracy"] == aux["accuracy"]
    np.testing.assert_allclose(grads2, grads)


def test_vjp_with_aux_returns_output_backward_and_aux():
    W, x = randn(3, 2), randn(4, 3)
    out, backward, aux = sg.vjp(with_array, has_aux=True)(W, x)
    assert out == pytest.approx(loss_only(W, x))
    np.testing.assert_allclose(aux, 10 * np.tanh(x @ W))
    np.testing.assert_allclose(backward(grad_outputs=2.0), 2 * hand_grad(W, x), rtol=1e-10)


def test_grad_outputs_with_aux_seeds_only_the_output():
    def f(x):
        return x ** 2, np.sum(x)
    x = randn(3)
    seed = randn(3)
    grads, aux = sg.grad(f, has_aux=True)(x, grad_outputs=seed)
    np.testing.assert_allclose(grads, 2 * x * seed)
    assert aux == pytest.approx(np.sum(x))
    with pytest.raises(ValueError, match="scalar outputs"):
        sg.grad(f, has_aux=True)(x)   # the output is not a scalar; aux is no second output


def test_aux_that_depends_on_the_input_through_non_differentiable_operations():
    def f(x):
        loss = np.sum(np.sin(x))
        return loss, (np.argmax(x), np.round(x * 2), x > 0)
    x = randn(5)
    grads, (index, rounded, positive) = sg.grad(f, has_aux=True)(x)
    np.testing.assert_allclose(grads, np.cos(x))
    assert index == np.argmax(x)
    np.testing.assert_array_equal(rounded, np.round(x * 2))
    np.testing.assert_array_equal(positive, x > 0)


def test_structured_parameters_with_aux():
    def loss(params, x):
        y = np.tanh(x @ params["W"] + params["b"])
        return np.sum(y ** 2), {"mean": np.mean(y)}
    params = {"W": randn(3, 2), "b": randn(2)}
    x = randn(4, 3)
    g = sg.grad(loss, has_aux=True)
    for _ in range(3):
        grads, aux = g(params, x)
        assert set(grads) == {"W", "b"}
        y = np.tanh(x @ params["W"] + params["b"])
        dpre = 2 * y * (1 - y * y)
        np.testing.assert_allclose(grads["W"], x.T @ dpre, rtol=1e-10)
        np.testing.assert_allclose(grads["b"], dpre.sum(axis=0), rtol=1e-10)
        assert aux == {"mean": pytest.approx(np.mean(y))}


def test_repeated_calls_on_the_fast_path_give_the_same_pair():
    g = sg.grad(with_metrics, wrt=(0, 1), has_aux=True)
    W, x = randn(3, 2), randn(4, 3)
    first = g(W, x)
    for _ in range(3):
        (dW, dx), aux = g(W, x)
        np.testing.assert_allclose(dW, first[0][0])
        np.testing.assert_allclose(dx, first[0][1])
        assert aux["accuracy"] == first[1]["accuracy"]
    assert g._fast_any is not None or g._fast   # the fast path took these calls
    np.testing.assert_allclose(dx, numerical_grad(loss_only, (W, x), wrt=1), rtol=1e-5, atol=1e-7)
    W2 = randn(3, 2)
    (dW2, _), aux2 = g(W2, x)   # new values through the fast path
    np.testing.assert_allclose(dW2, hand_grad(W2, x), rtol=1e-10)
    assert aux2["accuracy"] == pytest.approx(metrics_of(W2, x)["accuracy"])


def test_a_float_argument_on_the_fast_path():
    def f(a, x):
        return a * np.sum(x), a > 0
    for a in (2.0, -1.0, 3.0):
        da, positive = sg.grad(f, has_aux=True)(a, np.arange(3.0))
        assert type(da) is float and da == 3.0 and positive == (a > 0)


def test_early_returns_each_give_their_pair():
    def f(x):
        if np.sum(x) > 0:
            return np.sum(x ** 2), "positive"
        return np.sum(x ** 3), "negative"
    g = sg.grad(f, has_aux=True)
    x = np.abs(randn(3))
    for value in (x, -x, x):
        grads, aux = g(value)
        if np.sum(value) > 0:
            np.testing.assert_allclose(grads, 2 * value)
            assert aux == "positive"
        else:
            np.testing.assert_allclose(grads, 3 * value ** 2)
            assert aux == "negative"


def test_a_pair_returned_by_a_helper_is_checked_at_run_time():
    def helper(x):
        return np.sum(x ** 2), x * 3

    def f(x):
        return helper(x)

    x = randn(3)
    grads, aux = sg.grad(f, has_aux=True)(x)
    np.testing.assert_allclose(grads, 2 * x)
    np.testing.assert_allclose(aux, 3 * x)

    def single(x):
        return np.sum(x ** 2)

    def g(x):
        return single(x)

    with pytest.raises(TypeError, match="has_aux=True expects the function to return a pair"):
        sg.grad(g, has_aux=True)(x)


def test_aux_statements_get_no_adjoint_in_the_generated_source():
    text = sg.source(with_metrics, has_aux=True)
    backward = text[text.index("def with_metrics_backward"):]
    assert "accuracy" not in backward and "argmax" not in backward
    assert "(loss, aux)" in text   # the forward sweep returns the pair
    assert sg.grad(with_metrics, has_aux=True).source == text


def test_a_return_that_is_visibly_not_a_pair_is_refused_at_compile_time():
    def three(x):
        return np.sum(x), x, x

    def number(x):
        return np.sum(x) * 2

    for fn, what in ((three, "a tuple of 3"), (number, "not a tuple")):
        with pytest.raises(SrcgradError, match=what) as info:
            sg.grad(fn, has_aux=True)(randn(3))
        assert "has_aux=True expects" in str(info.value)
        assert "test_has_aux.py" in str(info.value)


def test_has_aux_is_part_of_the_cache_key():
    x = randn(3)

    def f(x):
        return np.sum(x ** 2), np.sum(x)

    plain = sg.grad(f)(x)                          # two outputs, each seeded with one
    np.testing.assert_allclose(plain, 2 * x + 1)
    grads, aux = sg.grad(f, has_aux=True)(x)       # the output alone
    np.testing.assert_allclose(grads, 2 * x)
    np.testing.assert_allclose(sg.grad(f)(x), 2 * x + 1)


def test_a_has_aux_gradient_cannot_be_differentiated_again():
    def f(x):
        return np.sum(x ** 2), 1.0
    with pytest.raises(TypeError, match="has_aux"):
        sg.grad(sg.grad(f, has_aux=True))(randn(3))


def test_aux_may_call_what_srcgrad_cannot_differentiate():
    import statistics

    def f(x):
        y = np.tanh(x)
        loss = np.sum(y ** 2)
        return loss, {"median": statistics.median(list(y)), "item": loss.item()}

    x = randn(5)
    with pytest.raises(sg.NonDifferentiableError, match="statistics.median"):
        sg.grad(f)(x)   # as a second output it needs a gradient
    grads, aux = sg.grad(f, has_aux=True)(x)
    y = np.tanh(x)
    np.testing.assert_allclose(grads, 2 * y * (1 - y * y), rtol=1e-10)
    assert aux["median"] == pytest.approx(np.median(y))
    assert aux["item"] == pytest.approx(np.sum(y ** 2))


def test_keyword_arguments_take_the_general_path_with_aux():
    def f(x, *, scale):
        return np.sum(x * scale), x.shape
    x = randn(4)
    grads, shape = sg.grad(f, has_aux=True)(x, scale=2.0)
    np.testing.assert_allclose(grads, np.full(4, 2.0))
    assert shape == (4,)
    (value, shape), grads = sg.value_and_grad(f, has_aux=True)(x, scale=2.0)
    assert value == pytest.approx(2 * np.sum(x)) and shape == (4,)
