"""``sg.tree_map`` and ``sg.tree_leaves`` (JAX's tree utilities): as functions, and inside a
function srcgrad differentiates, where they are written out over the argument's structure
(transform/tree_calls.py). Gradients against central differences in float64."""

import collections
import dataclasses

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree
from srcgrad.errors import SrcgradError
from srcgrad.testing import numerical_grad

RNG = np.random.default_rng(3)
X = RNG.standard_normal((4, 3))
Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: np.ndarray


def params():
    return {"W": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2),
            "extra": [RNG.standard_normal(2), None, Point(RNG.standard_normal(2), 0.5)]}


def check(f, tree, *rest):
    got, want = sg.grad(f)(tree, *rest), numerical_grad(f, (tree,) + rest)
    assert pytree.tree_key(got, type) == pytree.tree_key(want, type)
    for a, b in zip(pytree.tree_leaves(got), pytree.tree_leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_tree_map_over_several_trees_like_jax():
    p = {"W": np.ones(2), "b": (1.0, None, [2.0])}
    g = {"b": (0.5, None, [1.0]), "W": np.arange(2.0)}   # keys in another order
    new = sg.tree_map(lambda a, d: a - 0.1 * d, p, g)
    np.testing.assert_allclose(new["W"], [1.0, 0.9])
    assert new["b"][0] == 0.95 and new["b"][1] is None and new["b"][2] == [1.9]
    assert [float(np.sum(v)) for v in sg.tree_leaves(p)] == [2.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="keys"):
        sg.tree_map(lambda a, d: a, p, {"W": 1.0})
    with pytest.raises(ValueError, match="list"):
        sg.tree_map(lambda a, d: a, [1.0], (1.0,))


def l2(p, x):
    pred = np.tanh(x @ p["W"] + p["b"])
    return np.sum(pred ** 2) + 0.1 * sum(np.sum(w ** 2) for w in sg.tree_leaves(p))


def halved(p, x):
    half = sg.tree_map(lambda w: 0.5 * w, p)
    return np.sum(np.tanh(x @ half["W"] + half["b"])) + np.sum(half["extra"][2].x ** 3) \
        + half["extra"][2].y * np.sum(half["extra"][0])


def test_the_l2_penalty_over_the_leaves():
    check(l2, params(), X)
    code = [line for line in sg.source(l2, args=(params(), X)).splitlines()
            if not line.lstrip().startswith("#")]
    assert not any("tree_leaves" in line for line in code)   # written out: the leaves' reads
    assert any("p['extra']" in line for line in code)


def test_tree_map_inside_a_differentiated_function():
    check(halved, params(), X)

    def products(p, q, x):
        s = sg.tree_map(lambda a, b: a * b, p, q)
        return np.sum(s["W"]) + np.sum(s["b"] ** 2) + np.sum(s["extra"][0])
    q = params()
    check(products, params(), q, X)
    got = sg.grad(products, wrt=1)(params(), q, X)
    assert got["extra"][1] is None


def test_a_dataclass_rebuilt_by_tree_map():
    def loss(p, x):
        q = sg.tree_map(np.tanh, p)
        return np.sum((x @ q.w + q.b) ** 2)
    check(loss, Params(RNG.standard_normal((3, 2)), RNG.standard_normal(2)), X)


def test_forward_mode_and_the_hessian():
    p = {"W": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2)}
    t = sg.tree_map(np.ones_like, p)
    _, t_out = sg.jvp(l2, (p, X), (t, np.zeros_like(X)))
    np.testing.assert_allclose(t_out, sum(np.sum(v) for v in sg.tree_leaves(sg.grad(l2)(p, X))),
                               rtol=1e-8)
    h = sg.hessian(l2)(p, X)
    assert h["W"]["W"].shape == (3, 2, 3, 2) and h["b"]["W"].shape == (2, 3, 2)


def test_a_structure_built_in_the_function_is_refused_not_guessed():
    def loss(w):
        local = {"a": w * 2, "b": w}
        return sum(np.sum(v) for v in sg.tree_leaves(local))
    with pytest.raises(SrcgradError):
        sg.grad(loss)(np.ones(2))


@dataclasses.dataclass
class Affine:
    w: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return x @ self.w + self.b


def test_a_model_made_by_tree_map_is_called():
    def loss(m, x):
        squashed = sg.tree_map(np.tanh, m)
        return np.sum(squashed(x) ** 2)
    check(loss, Affine(RNG.standard_normal((3, 2)), RNG.standard_normal(2)), X)


@dataclasses.dataclass
class _Affine:
    A: np.ndarray
    c: object

    def __call__(self, x):
        return self.A @ x + self.c


def _penalty(layer):
    return sum(np.sum(leaf ** 2) for leaf in sg.tree_leaves(layer))


def _penalised(layers, x):
    total = 0.0
    for layer in layers:
        x = layer(x)
        total = total + _penalty(layer)
    return np.sum(x) + total


def _penalised_stopping(layers, x):   # a break: the loop stays a loop
    total = 0.0
    for layer in layers:
        x = layer(x)
        total = total + _penalty(layer)
        if total > 1e9:
            break
    return np.sum(x) + total


def _assert_tree_close(got, want):
    for g, w in zip(pytree.tree_leaves(got), pytree.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)


def test_the_leaves_of_a_loop_variable_over_items_of_several_trees():
    """The items' trees differ (a float and an array in ``c``): the loop is written out, one
    body per item, each knowing its item's leaves. Where it stays a loop, only the class
    is known, so tree_leaves is not written out from it (it was an empty list: the penalty
    vanished from the value and both gradients) and is refused where a gradient flows."""
    rng = np.random.default_rng(3)
    layers = [_Affine(rng.normal(size=(2, 2)), 0.5), _Affine(rng.normal(size=(2, 2)), rng.normal(size=2))]
    x = rng.normal(size=2)
    for f in (_penalised, _penalised_stopping):
        value, grad_x = sg.value_and_grad(f, wrt=1)(layers, x)
        np.testing.assert_allclose(value, f(layers, x), rtol=1e-13)
        np.testing.assert_allclose(grad_x, numerical_grad(f, (layers, x), wrt=1), rtol=1e-6)
    _assert_tree_close(sg.grad(_penalised)(layers, x), numerical_grad(_penalised, (layers, x)))
    with pytest.raises(SrcgradError) as info:
        sg.grad(_penalised_stopping)(layers, x)
    assert "test_tree_utilities.py" in str(info.value) and "tree_leaves" in str(info.value)
