"""``sg.jacfwd(sg.grad(f))`` and ``sg.jacobian(sg.grad(f))`` (JAX's way to write a Hessian)
where the parameters are a structure: a dict, a list, a dataclass. The gradient's own code
takes arrays and floats, so these are the Hessian blocks of ``f`` (sg.hessian), checked
against central differences of the gradient and against sg.hessian."""

import dataclasses

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree

RNG = np.random.default_rng(3)


def loss(p, x):
    return np.sum(np.sin(p["w"] * x) * p["b"] ** 2) + np.sum(x ** 3) * p["b"][0]


def listed(ps, x):
    return np.sum(np.tanh(ps[0] @ x) * ps[1]) + np.sum(ps[1] ** 3)


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


def layered(layer, x):
    return np.sum(np.tanh(layer.w @ x + layer.b) ** 2)


P = {"w": RNG.standard_normal(3), "b": RNG.standard_normal(3)}
X = RNG.standard_normal(3)
PS = [RNG.standard_normal((2, 3)), RNG.standard_normal(2)]
LAYER = Layer(RNG.standard_normal((2, 3)), RNG.standard_normal(2))


def _leaves(value):
    return pytree.tree_leaves(value) if pytree.is_node(value) else [value]


def _with_leaves(value, leaves):
    return pytree.rebuild(value, iter(leaves)) if pytree.is_node(value) else leaves[0]


def central_jacobian_of_gradient(f, args, outer, inner, h=1e-6):
    """d grad_outer f / d args[inner], as one matrix (flattened leaves on both sides)."""
    gradient = sg.grad(f, wrt=outer)
    leaves = _leaves(args[inner])
    flat = np.concatenate([np.ravel(v) for v in leaves])
    columns = []
    for n in range(flat.size):
        rows = []
        for step in (h, -h):
            moved = flat.copy()
            moved[n] += step
            parts, start = [], 0
            for v in leaves:
                parts.append(moved[start:start + v.size].reshape(np.shape(v)))
                start += v.size
            shifted = list(args)
            shifted[inner] = _with_leaves(args[inner], parts)
            rows.append(np.concatenate([np.ravel(g) for g in _leaves(gradient(*shifted))]))
        columns.append((rows[0] - rows[1]) / (2 * h))
    return np.stack(columns, axis=1)


def flatten_blocks(jac, outer_value, inner_value):
    """A Jacobian of structures (the outer structure outside, the inner inside) as one
    matrix: its leaves come outer-major."""
    out_leaves = _leaves(outer_value)
    in_leaves = _leaves(inner_value)
    blocks = _leaves(jac)
    assert len(blocks) == len(out_leaves) * len(in_leaves)
    rows = []
    for n, o in enumerate(out_leaves):
        rows.append(np.concatenate([np.reshape(blocks[n * len(in_leaves) + m], (np.size(o), np.size(i)))
                                    for m, i in enumerate(in_leaves)], axis=1))
    return np.concatenate(rows, axis=0)


CASES = [(loss, (P, X)), (listed, (PS, X)), (layered, (LAYER, X))]


@pytest.mark.parametrize("jacobian", [sg.jacfwd, sg.jacobian], ids=["jacfwd", "jacrev"])
@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("outer, inner", [(0, 0), (0, 1), (1, 0)])
def test_jacobian_of_the_gradient_of_a_structure(jacobian, f, args, outer, inner):
    jac = jacobian(sg.grad(f, wrt=outer), wrt=inner)(*args)
    got = flatten_blocks(jac, args[outer], args[inner])
    np.testing.assert_allclose(got, central_jacobian_of_gradient(f, args, outer, inner),
                               rtol=1e-5, atol=1e-6)


def test_jacfwd_of_grad_is_the_hessian():
    expected = sg.hessian(loss)(P, X)
    got = sg.jacfwd(sg.grad(loss))(P, X)
    for k1 in P:
        for k2 in P:
            np.testing.assert_allclose(got[k1][k2], expected[k1][k2], rtol=1e-12)


def test_tuple_wrt_gives_the_nested_tuple():
    jac = sg.jacfwd(sg.grad(loss, wrt=(0, 1)), wrt=(0, 1))(P, X)
    blocks = sg.hessian(loss, wrt=(0, 1))(P, X)
    np.testing.assert_allclose(jac[1][1], blocks[1][1], rtol=1e-12)
    np.testing.assert_allclose(jac[0]["w"][1], blocks[0]["w"][1], rtol=1e-12)   # JAX's H[i][k1][j]
    assert isinstance(jac[0]["w"], tuple) and len(jac[0]["w"]) == 2
