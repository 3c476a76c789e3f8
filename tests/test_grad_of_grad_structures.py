"""``sg.grad(sg.grad(f))`` and ``sg.gradgradcheck`` with structured arguments (issue 14).

The inner gradient of a dict (list, tuple, namedtuple, dataclass) parameter is a value
of its structure; differentiating it again takes ``grad_outputs`` of that structure and
gives a gradient of it, as ``jax.grad(lambda p: ...)`` users expect. Each is checked
against central differences of the first gradient on the flattened leaves, including an
MLP over a list of dict layers (examples/mlp_dict_params.py without has_aux).
"""

import collections
import dataclasses

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree
from srcgrad.testing import numerical_grad

Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Params:
    a: np.ndarray
    b: float


def of_dict(p):
    return np.sum(np.sin(p["w"]) * p["b"] ** 2) + p["c"] ** 3


def of_fields(p):
    return np.sum(np.sin(p.a) * p.b ** 2) + p.b * np.sum(p.a ** 3)


def of_items(p):
    return np.sum(np.sin(p[0]) * p[1] ** 2) + p[1] * np.sum(p[0] ** 3)


def mlp_loss(params, x):
    *hidden, last = params["layers"]
    for layer in hidden:
        x = np.tanh(x @ layer["W"] + layer["b"])
    out = x @ last["W"] + last["b"]
    return np.sum(out ** 2) + 1e-2 * sum(np.sum(layer["W"] ** 2) for layer in params["layers"])


A = np.array([0.3, 0.0, -1.1])
CASES = [
    (of_dict, {"w": np.array([0.3, -0.2]), "b": np.array([1.0, 0.0]), "c": 0.7}),
    (of_fields, Pair(A, 0.5)),
    (of_fields, Params(A, 0.5)),
    (of_items, [A, 0.5]),
    (of_items, (A, 0.5)),
]
IDS = ["dict", "namedtuple", "dataclass", "list", "tuple"]


def _cotangent(value, seed=3):
    rng = np.random.default_rng(seed)
    return pytree.tree_map(lambda leaf: rng.normal(size=np.shape(leaf)) if np.ndim(leaf)
                           else float(rng.normal()), value)


def _assert_same_tree(got, want):
    assert type(got) is type(want)
    got_leaves, want_leaves = pytree.tree_leaves(got), pytree.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f, p", CASES, ids=IDS)
def test_grad_of_grad_of_a_structure_matches_finite_differences(f, p):
    v = _cotangent(p)
    first = sg.grad(f)
    inner = first(p)
    assert type(inner) is type(p)   # the inner gradient has the parameter's structure
    got = sg.grad(first)(p, grad_outputs=v)
    _assert_same_tree(got, numerical_grad(first, (p,), grad_outputs=v, eps=1e-5))


@pytest.mark.parametrize("f, p", CASES, ids=IDS)
def test_gradgradcheck_takes_structures(f, p):
    assert sg.gradgradcheck(f, (p,))


def test_a_scalar_function_of_the_inner_gradient_of_a_dict():
    def gradient_norm(p):
        g = sg.grad(of_dict)(p)
        return np.sum(g["w"] ** 2) + np.sum(g["b"] ** 2) + g["c"] ** 2
    p = CASES[0][1]
    _assert_same_tree(sg.grad(gradient_norm)(p), numerical_grad(gradient_norm, (p,), eps=1e-6))


def test_an_mlp_over_a_list_of_dict_layers_differentiated_twice():
    rng = np.random.default_rng(0)
    params = {"layers": [{"W": rng.normal(size=(2, 3)), "b": rng.normal(size=3)},
                         {"W": rng.normal(size=(3, 2)), "b": np.zeros(2)}]}
    x = rng.normal(size=(4, 2))
    v = _cotangent(params)
    first = sg.grad(mlp_loss)
    got = sg.grad(first)(params, x, grad_outputs=v)
    _assert_same_tree(got, numerical_grad(first, (params, x), grad_outputs=v, eps=1e-5))
    # the same by keyword, and the gradient with respect to x of <grad_params, v>
    _assert_same_tree(sg.grad(first)(params, x=x, grad_outputs=v), got)
    along_x = sg.grad(first, wrt=1)(params, x, grad_outputs=v)
    np.testing.assert_allclose(along_x, numerical_grad(first, (params, x), wrt=1, grad_outputs=v,
                                                       eps=1e-5), rtol=1e-6, atol=1e-7)


def test_the_array_case_is_unchanged_and_a_structure_needs_its_cotangent():
    x = np.array([0.3, 0.0, -1.1])
    # arrays still run the composed gradient (reverse over reverse)
    got = sg.grad(sg.grad(lambda y: np.sum(np.sin(y) * y)))(x, grad_outputs=np.ones(3))
    np.testing.assert_allclose(got, 2 * np.cos(x) - x * np.sin(x), rtol=1e-12)
    with pytest.raises(ValueError, match="grad_outputs"):   # as for a non-scalar array output
        sg.grad(sg.grad(of_dict))(CASES[0][1])
