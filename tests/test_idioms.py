"""Python as people write it (issue 12): idioms a NumPy/JAX user writes without
thinking, each differentiated as Python evaluates it, or refused with a message
that says how to write it instead."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import GradcheckError
from srcgrad.testing import numerical_grad

RNG = np.random.default_rng(12)


# ----- A Python list where an array is expected: the pytree rule -----

def sum_of_sines(xs):
    return np.sum(np.sin(xs))


def weighted(xs):
    return np.sum(xs[0] * np.sin(xs[1]))


def test_a_list_of_floats_passed_where_an_array_is_expected_gets_a_list_gradient():
    xs = [1.0, 2.0]
    grads = sg.grad(sum_of_sines)(xs)
    # The pytree rule (as in JAX): a list in, a list of the leaves' gradients out.
    assert isinstance(grads, list) and len(grads) == 2
    np.testing.assert_allclose(grads, np.cos(xs), rtol=1e-12)
    np.testing.assert_allclose(grads, numerical_grad(sum_of_sines, (xs,)), rtol=1e-6)


def test_a_list_of_arrays_indexed_inside_gets_a_list_of_array_gradients():
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    da, db = sg.grad(weighted)([a, b])
    np.testing.assert_allclose(da, np.sin(b), rtol=1e-12)
    np.testing.assert_allclose(db, a * np.cos(b), rtol=1e-12)


# ----- gradcheck on structures, and with has_aux -----

def structured_loss(p, x):
    h = np.tanh(x @ p["layers"][0]["W"] + p["layers"][0]["b"])
    return np.sum((h @ p["out"]) ** 2) * p["scale"]


def structured_loss_with_aux(p, x):
    loss = structured_loss(p, x)
    return loss, {"loss": loss, "positive": np.mean(x > 0)}


def structured_params():
    return {"layers": [{"W": RNG.standard_normal((3, 4)), "b": RNG.standard_normal(4)}],
            "out": RNG.standard_normal(4), "scale": 0.7}


def test_gradcheck_accepts_a_nested_dict_of_lists_of_arrays_and_floats():
    assert sg.gradcheck(structured_loss, (structured_params(), RNG.standard_normal((5, 3))))


def test_gradcheck_accepts_has_aux_and_checks_only_the_output():
    args = (structured_params(), RNG.standard_normal((5, 3)))
    assert sg.gradcheck(structured_loss_with_aux, args, has_aux=True)


class WrongSquare(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * x          # should be 2 * x


def wrong_with_aux(p, x):
    loss = np.sum(WrongSquare.apply(x @ p["w"]))
    return loss, np.mean(x)


def test_gradcheck_with_has_aux_still_catches_a_wrong_gradient():
    args = ({"w": RNG.standard_normal(3)}, RNG.standard_normal((5, 3)))
    with pytest.raises(GradcheckError, match=r"\['w'\]"):
        sg.gradcheck(wrong_with_aux, args, has_aux=True)
