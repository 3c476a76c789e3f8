"""Structured arguments (dicts, lists, tuples, dataclasses, namedtuples, registered
classes: srcgrad/pytree.py) in forward mode and nested gradients (issue 14).

``sg.jvp`` and ``sg.hvp`` take a tangent of the primal's structure and give the
output's (the gradient's) structure; a gradient called inside a differentiated function
takes a dict and gets a dict gradient back. Each is checked against central finite
differences in float64 (of the function along the tangent; of ``sg.grad`` for hvp; of
the outer loss for nested gradients); mismatched structures are refused.
"""

import collections
import dataclasses

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree
from srcgrad.testing import check_grads

H = 1e-6


def randn(rng, *shape):
    return rng.normal(size=shape) if shape else float(rng.normal())


def along(primal, tangent, s):
    """``primal + s * tangent`` leaf by leaf, in the primal's structure."""
    leaves = [p + s * t for _, p, t in pytree.paired_leaves(primal, tangent)]
    return pytree.rebuild(primal, iter(leaves))


def fd_along(f, primals, tangents, h=H):
    """Central difference of ``f`` along ``tangents``, leaf by leaf in ``f``'s output."""
    plus = f(*[p if t is None else along(p, t, h) for p, t in zip(primals, tangents)])
    minus = f(*[p if t is None else along(p, t, -h) for p, t in zip(primals, tangents)])
    return pytree.rebuild(plus, iter([(np.asarray(a, float) - np.asarray(b, float)) / (2 * h)
                                      for a, b in zip(pytree.tree_leaves(plus),
                                                      pytree.tree_leaves(minus))]))


def assert_same_tree(got, want, rtol=1e-6, atol=1e-7):
    if pytree.is_node(want):
        assert pytree.tree_key(got, lambda leaf: None) == pytree.tree_key(want, lambda leaf: None)
    for (path, g, w) in pytree.paired_leaves(got, want, "out"):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=path)


def assert_jvp_matches(f, primals, tangents):
    out, t = sg.jvp(f, primals, tangents)
    assert_same_tree(out, f(*primals), rtol=1e-12, atol=0)
    assert_same_tree(t, fd_along(f, primals, tangents))
    return t


def mlp_dict(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    return np.sum((h @ params["W2"]) ** 2)


def mlp_params(rng):
    return {"W1": randn(rng, 3, 4), "b1": randn(rng, 4), "W2": randn(rng, 4, 2)}


def test_jvp_of_a_loss_of_a_dict_of_parameters_jax_style():
    rng = np.random.default_rng(0)
    params, x = mlp_params(rng), randn(rng, 5, 3)
    dparams = pytree.tree_map(lambda leaf: randn(rng, *leaf.shape), params)
    t = assert_jvp_matches(mlp_dict, (params, x), (dparams, np.zeros_like(x)))
    assert t != 0
    # the same as the tangent of x alone plus that of the parameters alone
    dx = randn(rng, 5, 3)
    _, both = sg.jvp(mlp_dict, (params, x), (dparams, dx))
    _, only_x = sg.jvp(mlp_dict, (params, x), (None, dx))
    np.testing.assert_allclose(both, t + only_x, rtol=1e-10)


def layers_of_tuples(layers, x):
    for i in range(len(layers)):
        w, b = layers[i]
        x = np.sin(x @ w + b)
    return [np.sum(x), x]


def test_jvp_of_a_list_of_tuples_through_a_loop_gives_the_output_structure():
    rng = np.random.default_rng(1)
    layers = [(randn(rng, 3, 3), randn(rng, 3)), (randn(rng, 3, 2), randn(rng, 2))]
    dlayers = [(randn(rng, 3, 3), randn(rng, 3)), (randn(rng, 3, 2), randn(rng, 2))]
    x = randn(rng, 4, 3)
    t = assert_jvp_matches(layers_of_tuples, (layers, x), (dlayers, None))
    assert isinstance(t, list) and t[1].shape == (4, 2)


def dict_output(p, x):
    return {"y": np.sin(p["a"]) * x, "z": x, "s": np.sum(p["a"] * p["b"])}


def test_jvp_of_a_dict_output_is_a_dict():
    rng = np.random.default_rng(2)
    p, x = {"a": randn(rng, 3), "b": randn(rng, 3)}, randn(rng, 3)
    t = assert_jvp_matches(dict_output, (p, x), ({"a": randn(rng, 3), "b": randn(rng, 3)}, None))
    assert set(t) == {"y", "z", "s"} and not np.any(t["z"])


@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: float


def dataclass_loss(layer, x):
    return np.sum(np.tanh(layer.w * x + layer.b) ** 2)


Pair = collections.namedtuple("Pair", ["left", "right"])


def namedtuple_loss(pair, x):
    return np.sum(pair.left * x) * pair[1]


class Registered:
    def __init__(self, w, scale):
        self.w, self.scale = w, scale


sg.register_pytree_node(Registered, lambda r: ((r.w, r.scale), None),
                        lambda aux, kids: Registered(*kids))


def registered_loss(r, x):
    return np.sum(np.exp(r.w * x)) * r.scale


def test_jvp_of_dataclass_namedtuple_and_registered_primals():
    rng = np.random.default_rng(3)
    x = randn(rng, 3)
    assert_jvp_matches(dataclass_loss, (Linear(randn(rng, 3), 0.3), x),
                       (Linear(randn(rng, 3), 0.7), None))
    assert_jvp_matches(namedtuple_loss, (Pair(randn(rng, 3), 1.5), x),
                       (Pair(randn(rng, 3), -0.5), None))
    assert_jvp_matches(registered_loss, (Registered(randn(rng, 3), 2.0), x),
                       (Registered(randn(rng, 3), 0.25), None))


def test_a_tangent_of_another_class_or_shape_is_refused_naming_the_path():
    x = np.ones(3)
    with pytest.raises(ValueError, match="same structure"):
        sg.jvp(dataclass_loss, (Linear(x, 0.3), x), (Pair(x, 0.7), None))
    with pytest.raises(ValueError, match=r"layer.w"):
        sg.jvp(dataclass_loss, (Linear(x, 0.3), x), (Linear(np.ones(2), 0.7), None))
    with pytest.raises(ValueError, match=r"layers\[0\] has 1 entries but the value has 2"):
        sg.jvp(layers_of_tuples, ([(np.ones((3, 3)), x)], x), ([(np.ones((3, 3)),)], None))


def scaled_by_count(p, x):
    return np.sum(p["w"] * x) * p["n"]


def test_an_integer_leaf_of_a_structure_takes_a_zero_tangent_only():
    p, x, t = {"w": np.arange(3.0), "n": 3}, np.ones(3), np.array([1.0, -1.0, 0.5])
    for zero in (None, 0, 0.0):
        _, got = sg.jvp(scaled_by_count, (p, x), ({"w": t, "n": zero}, None))
        np.testing.assert_allclose(got, np.sum(t * x) * 3)
    with pytest.raises(TypeError, match=r"nonzero tangent for \"p\['n'\]\".*integer"):
        sg.jvp(scaled_by_count, (p, x), ({"w": t, "n": 1.0}, None))


def fd_hvp(f, primals, tangents, wrt, h=1e-5):
    g = sg.grad(f, wrt=wrt)

    def at(s):
        return g(*[p if t is None else along(p, t, s) for p, t in zip(primals, tangents)])
    plus, minus = at(h), at(-h)
    if isinstance(wrt, int):
        plus, minus = (plus,), (minus,)
    return [pytree.rebuild(a, iter([(np.asarray(u, float) - np.asarray(v, float)) / (2 * h)
                                    for u, v in zip(pytree.tree_leaves(a), pytree.tree_leaves(b))]))
            for a, b in zip(plus, minus)]


def test_hvp_of_a_dict_of_parameters_matches_finite_differences_of_grad():
    rng = np.random.default_rng(4)
    params, x = mlp_params(rng), randn(rng, 5, 3)
    dparams = pytree.tree_map(lambda leaf: randn(rng, *leaf.shape), params)
    dx = randn(rng, 5, 3)
    hp, hx = sg.hvp(mlp_dict, (params, x), (dparams, dx))
    want = fd_hvp(mlp_dict, (params, x), (dparams, dx), (0, 1))
    assert type(hp) is dict and set(hp) == set(params)
    assert_same_tree(hp, want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hx, want[1], rtol=1e-5, atol=1e-6)
    # wrt the parameters only: the data's entry is None, its tangent still counts
    hp_only, none = sg.hvp(mlp_dict, (params, x), (dparams, dx), wrt=0)
    assert none is None
    assert_same_tree(hp_only, hp, rtol=1e-12, atol=0)


def test_hvp_of_a_list_of_tuples_through_a_loop_and_a_dataclass():
    rng = np.random.default_rng(5)

    def loss(layers, x):
        return layers_of_tuples(layers, x)[0]

    layers = [(randn(rng, 3, 3), randn(rng, 3)), (randn(rng, 3, 2), randn(rng, 2))]
    dlayers = [(randn(rng, 3, 3), randn(rng, 3)), (randn(rng, 3, 2), randn(rng, 2))]
    x = randn(rng, 4, 3)
    got, _ = sg.hvp(loss, (layers, x), (dlayers, None), wrt=0)
    assert isinstance(got, list) and isinstance(got[0], tuple)
    assert_same_tree(got, fd_hvp(loss, (layers, x), (dlayers, None), 0)[0], rtol=1e-5, atol=1e-6)
    layer, dlayer = Linear(randn(rng, 3), 0.3), Linear(randn(rng, 3), -0.4)
    got, _ = sg.hvp(dataclass_loss, (layer, x[0]), (dlayer, None), wrt=0)
    assert isinstance(got, Linear)
    assert_same_tree(got, fd_hvp(dataclass_loss, (layer, x[0]), (dlayer, None), 0)[0],
                     rtol=1e-5, atol=1e-6)


def test_hvp_refuses_an_integer_leaf_and_a_mismatched_tangent():
    p, x = {"w": np.arange(3.0), "n": 3}, np.ones(3)
    with pytest.raises(TypeError, match=r"\['n'\].*integer"):
        sg.hvp(scaled_by_count, (p, x), ({"w": x, "n": 0}, None))
    with pytest.raises(ValueError, match="keys"):
        sg.hvp(mlp_dict, (mlp_params(np.random.default_rng(0)), np.ones((2, 3))),
               ({"W1": np.ones((3, 4))}, None))


def energy(params, x):
    return np.sum(params["k"] * x ** 2) / 2 + np.sum(np.cos(params["w"] * x)) * params["c"]


def force_matching(params, x, target):
    force = -sg.grad(energy, wrt=1)(params, x)
    return np.sum((force - target) ** 2)


def gradient_of_the_parameters(params, x):
    g = sg.grad(energy)(params, x)
    return np.sum(g["w"] ** 2) + g["c"] * np.sum(g["k"] * x)


def test_a_gradient_inside_a_loss_differentiated_with_respect_to_a_dict():
    rng = np.random.default_rng(6)
    params = {"k": randn(rng, 4), "w": randn(rng, 4), "c": 0.7}
    x, target = randn(rng, 4), randn(rng, 4)
    check_grads(force_matching, (params, x, target), wrt=(0, 1), atol=1e-6, rtol=1e-5)
    g = sg.grad(force_matching)(params, x, target)
    assert type(g) is dict and isinstance(g["c"], float) and g["w"].shape == (4,)
    # the inner gradient is itself a dict (a structured output of the nested gradient)
    check_grads(gradient_of_the_parameters, (params, x), wrt=(0, 1), atol=1e-6, rtol=1e-5)


def tuple_energy(pair, x):
    a, b = pair
    return np.sum(a * np.sin(b * x))


def tuple_gradient_loss(pair, x):
    ga, gb = sg.grad(tuple_energy)(pair, x)
    return np.sum(ga * gb)


def test_a_gradient_inside_a_loss_with_respect_to_a_tuple_and_a_dataclass():
    rng = np.random.default_rng(7)
    pair, x = (randn(rng, 3), randn(rng, 3)), randn(rng, 3)
    check_grads(tuple_gradient_loss, (pair, x), wrt=(0, 1), atol=1e-6, rtol=1e-5)

    def layer_force(layer, x):
        return np.sum(sg.grad(dataclass_loss, wrt=1)(layer, x) ** 2)

    layer = Linear(randn(rng, 3), 0.2)
    check_grads(layer_force, (layer, x), wrt=(0, 1), atol=1e-6, rtol=1e-5)
    assert isinstance(sg.grad(layer_force)(layer, x), Linear)


class Opaque:
    def __init__(self, w):
        self.w = w


def opaque_loss(o, x):
    return np.sum(o.w * x)


def test_an_object_that_is_no_structure_cannot_carry_a_tangent():
    o, x = Opaque(np.ones(3)), np.arange(3.0)
    with pytest.raises(TypeError, match="tangent of 'o' is a Opaque, not a real number"):
        sg.jvp(opaque_loss, (o, x), (Opaque(np.ones(3)), None))
    _, t = sg.jvp(opaque_loss, (o, x), (None, np.ones(3)))   # held fixed, it may be anything
    assert t == 3.0


def registered_force(r, x):
    return np.sum(sg.grad(registered_loss, wrt=1)(r, x) ** 2)


def registered_gradient(r, x):
    g = sg.grad(registered_loss)(r, x)
    return np.sum(g.w ** 2) + g.scale * 2.0


def namedtuple_gradient(p, x):
    g = sg.grad(namedtuple_loss)(p, x)
    return np.sum(g.left * np.sin(x)) + g.right ** 2


def test_a_gradient_inside_a_loss_with_a_registered_class_or_a_namedtuple():
    rng = np.random.default_rng(8)
    r, x = Registered(randn(rng, 3), 0.7), randn(rng, 3)
    check_grads(registered_force, (r, x), wrt=(0, 1), atol=1e-6, rtol=1e-5)
    check_grads(registered_gradient, (r, x), wrt=(0, 1), atol=1e-6, rtol=1e-5)
    p = Pair(randn(rng, 3), 1.3)
    check_grads(namedtuple_gradient, (p, x), wrt=(0, 1), atol=1e-6, rtol=1e-5)
    assert isinstance(sg.grad(namedtuple_gradient)(p, x), Pair)


def test_hvp_of_a_registered_class_and_a_namedtuple():
    rng = np.random.default_rng(9)
    x = randn(rng, 3)
    for f, primal, t in ((registered_loss, Registered(randn(rng, 3), 0.7),
                          Registered(randn(rng, 3), 0.5)),
                         (namedtuple_loss, Pair(randn(rng, 3), 1.3), Pair(randn(rng, 3), -0.4))):
        got, none = sg.hvp(f, (primal, x), (t, None), wrt=0)
        assert type(got) is type(primal) and none is None
        want = fd_hvp(f, (primal, x), (t, None), 0)[0]
        for _, g, w in pytree.paired_leaves(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# ----- jacfwd and hessian of structured arguments (JAX's shapes) -----


def perturbed(args, k, m, idx, s):
    """``args`` with leaf ``m`` of ``args[k]`` (``args[k]`` itself: m None) moved by ``s``
    at ``idx``."""
    def move(leaf):
        if np.ndim(leaf) == 0:
            return float(leaf) + s
        leaf = np.array(leaf, dtype=float)
        leaf[idx] += s
        return leaf
    out = list(args)
    if m is None:
        out[k] = move(args[k])
    else:
        leaves = pytree.tree_leaves(args[k])
        out[k] = pytree.rebuild(args[k], iter([move(v) if q == m else v for q, v in enumerate(leaves)]))
    return out


def fd_jacobian_blocks(f, args, k, h=1e-6):
    """Central differences of ``f`` w.r.t. each leaf of ``args[k]``: its structure of
    blocks ``out.shape + leaf.shape``."""
    out_shape = np.shape(f(*args))
    leaves = pytree.tree_leaves(args[k])
    blocks = []
    for m, leaf in enumerate(leaves):
        block = np.zeros(out_shape + np.shape(leaf))
        for idx in np.ndindex(*np.shape(leaf)):
            d = np.asarray(f(*perturbed(args, k, m, idx, h))) - np.asarray(f(*perturbed(args, k, m, idx, -h)))
            block[(...,) + idx] = d / (2 * h)
        blocks.append(block)
    return pytree.rebuild(args[k], iter(blocks))


def fd_hessian_blocks(f, args, i, j, h=1e-5):
    """Central differences of ``sg.grad(f, wrt=i)`` w.r.t. each leaf of ``args[j]``:
    JAX's ``H[i][j]``, the structure of ``args[i]`` outside, that of ``args[j]`` inside."""
    g = sg.grad(f, wrt=i)
    tree_i, tree_j = pytree.is_node(args[i]), pytree.is_node(args[j])
    rows = pytree.tree_leaves(args[i]) if tree_i else [args[i]]
    cols = pytree.tree_leaves(args[j]) if tree_j else [args[j]]
    blocks = [[np.zeros(np.shape(r) + np.shape(c)) for c in cols] for r in rows]
    for m, c in enumerate(cols):
        for idx in np.ndindex(*np.shape(c)):
            plus = g(*perturbed(args, j, m if tree_j else None, idx, h))
            minus = g(*perturbed(args, j, m if tree_j else None, idx, -h))
            plus = pytree.tree_leaves(plus) if tree_i else [plus]
            minus = pytree.tree_leaves(minus) if tree_i else [minus]
            for l, (a, b) in enumerate(zip(plus, minus)):
                blocks[l][m][(...,) + idx] = (np.asarray(a, float) - np.asarray(b, float)) / (2 * h)

    def inner(l):
        return pytree.rebuild(args[j], iter(blocks[l])) if tree_j else blocks[l][0]
    return pytree.rebuild(args[i], iter([inner(l) for l in range(len(rows))])) if tree_i \
        else inner(0)


def nested_list_layer(p, x):
    return np.tanh(p["W"] @ x + p["b"][0]) * p["s"]


def test_jacfwd_of_a_dict_argument_is_jacrevs_dict_of_blocks_by_the_batched_program(monkeypatch):
    rng = np.random.default_rng(10)
    p, x = {"W": randn(rng, 2, 3), "b": [randn(rng, 2)], "s": 0.6}, randn(rng, 3)
    want = sg.jacrev(nested_list_layer)(p, x)
    from srcgrad import jacobians

    def no_per_column_run(*args):   # every leaf's seeds go through the batched program
        raise AssertionError("jacfwd ran one tangent program per column")
    monkeypatch.setattr(jacobians, "jvp", no_per_column_run)
    got = sg.jacfwd(nested_list_layer)(p, x)
    assert set(got) == {"W", "b", "s"} and isinstance(got["b"], list)
    assert got["W"].shape == (2, 2, 3) and got["b"][0].shape == (2, 2) and got["s"].shape == (2,)
    assert_same_tree(got, want, rtol=1e-12, atol=1e-14)
    assert_same_tree(got, fd_jacobian_blocks(nested_list_layer, (p, x), 0), rtol=1e-6, atol=1e-8)
    # a few seeds per run, and a tuple wrt: a tuple of (a dict, an array)
    gp, gx = sg.jacfwd(nested_list_layer, wrt=(0, 1), chunk_size=2)(p, x)
    assert_same_tree(gp, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gx, sg.jacrev(nested_list_layer, wrt=1)(p, x), rtol=1e-12)


def tuple_map(pair, x):
    a, b = pair
    return a * np.sin(b * x) + np.sum(b)


def dataclass_map(layer, x):
    return np.tanh(layer.w * x + layer.b)


def namedtuple_map(pair, x):
    return pair.left * x * pair[1]


def registered_map(r, x):
    return np.exp(r.w * x) * r.scale


def test_jacfwd_of_a_tuple_a_dataclass_a_namedtuple_and_a_registered_class():
    # the tuple's seeds are batched; an attribute read is not (one run per column)
    rng = np.random.default_rng(11)
    x = randn(rng, 3)
    for f, primal in ((tuple_map, (randn(rng, 3), randn(rng, 3))),
                      (dataclass_map, Linear(randn(rng, 3), 0.3)),
                      (namedtuple_map, Pair(randn(rng, 3), 1.5)),
                      (registered_map, Registered(randn(rng, 3), 2.0))):
        got = sg.jacfwd(f)(primal, x)
        assert type(got) is type(primal)
        assert_same_tree(got, sg.jacrev(f)(primal, x), rtol=1e-12, atol=1e-14)
        assert_same_tree(got, fd_jacobian_blocks(f, (primal, x), 0), rtol=1e-6, atol=1e-8)


def writes_into_its_dict(p, x):
    p["h"] = np.tanh(p["W"] @ x)
    return p["h"] * p["b"]


def test_jacfwd_of_a_function_writing_into_its_dict_or_looping_over_a_list():
    # the batched program writes the item's batched tangent into the dict of tangents
    rng = np.random.default_rng(14)
    x = randn(rng, 3)

    def fresh():
        return {"W": randn(rng, 2, 3), "b": randn(rng, 2), "h": np.zeros(2)}
    p = fresh()
    got = sg.jacfwd(writes_into_its_dict)(dict(p), x)
    assert_same_tree(got, sg.jacrev(writes_into_its_dict)(dict(p), x), rtol=1e-12, atol=1e-14)
    assert_same_tree(got, fd_jacobian_blocks(writes_into_its_dict, (dict(p), x), 0),
                     rtol=1e-6, atol=1e-8)
    ps = [randn(rng, 2), randn(rng, 2)]
    got = sg.jacfwd(layers_sum)(ps, x[:2])
    assert isinstance(got, list)
    assert_same_tree(got, sg.jacrev(layers_sum)(ps, x[:2]), rtol=1e-12, atol=1e-14)
    assert_same_tree(got, fd_jacobian_blocks(layers_sum, (ps, x[:2]), 0), rtol=1e-6, atol=1e-8)


def layers_sum(ps, x):
    acc = 0.0
    for i in range(len(ps)):
        acc = acc + ps[i] * x[i]
    return np.sin(acc)


def test_jacfwd_refuses_an_integer_leaf_as_grad_does():
    p, x = {"w": np.arange(3.0), "n": 3}, np.ones(3)
    with pytest.raises(TypeError, match=r"\['n'\].*integer"):
        sg.jacfwd(lambda p, x: p["w"] * x * p["n"])(p, x)


def mixed_loss(p, x):
    h = np.tanh(p["W"] @ x + p["b"])
    return np.sum(h ** 2) * p["s"] + p["s"] ** 3 * np.sum(p["b"] * x[:2])


def test_the_hessian_of_a_dict_argument_is_a_dict_of_dicts_matching_fd_of_grad():
    rng = np.random.default_rng(12)
    p, x = {"W": randn(rng, 2, 3), "b": randn(rng, 2), "s": 0.8}, randn(rng, 3)
    H = sg.hessian(mixed_loss)(p, x)
    assert type(H) is dict and all(type(H[k]) is dict and set(H[k]) == set(p) for k in p)
    for k1 in p:
        for k2 in p:
            assert np.shape(H[k1][k2]) == np.shape(p[k1]) + np.shape(p[k2])
            # symmetric: H[k2][k1] is H[k1][k2] with the two leaves' axes swapped
            n1 = np.ndim(p[k1])
            swapped = np.moveaxis(np.asarray(H[k1][k2]), list(range(n1)),
                                  list(range(np.ndim(H[k1][k2]) - n1, np.ndim(H[k1][k2]))))
            np.testing.assert_allclose(swapped, H[k2][k1], rtol=1e-10, atol=1e-12)
    assert_same_tree(H, fd_hessian_blocks(mixed_loss, (p, x), 0, 0), rtol=1e-5, atol=1e-7)
    # a tuple wrt: JAX's nesting H[i][k1][j][k2], p's keys outside the inner tuple
    Hp, (hxp, hxx) = sg.hessian(mixed_loss, wrt=(0, 1))(p, x)
    assert set(Hp) == set(p) and all(len(v) == 2 for v in Hp.values())
    hpp, hpx = ({k: v[j] for k, v in Hp.items()} for j in (0, 1))
    assert_same_tree(hpp, H, rtol=1e-12, atol=1e-14)
    assert hpx["W"].shape == (2, 3, 3) and hxp["W"].shape == (3, 2, 3)
    assert_same_tree(hpx, fd_hessian_blocks(mixed_loss, (p, x), 0, 1), rtol=1e-5, atol=1e-7)
    assert_same_tree(hxp, fd_hessian_blocks(mixed_loss, (p, x), 1, 0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(hxx, sg.hessian(mixed_loss, wrt=1)(p, x), rtol=1e-12)


def test_the_hessian_of_a_list_of_tuples_through_a_loop_and_of_a_dataclass():
    rng = np.random.default_rng(13)

    def loss(layers, x):
        return layers_of_tuples(layers, x)[0]

    layers = [(randn(rng, 2, 2), randn(rng, 2)), (randn(rng, 2, 2), randn(rng, 2))]
    x = randn(rng, 3, 2)
    H = sg.hessian(loss)(layers, x)
    assert isinstance(H, list) and isinstance(H[0], tuple) and isinstance(H[0][0], list)
    assert H[0][0][1][0].shape == (2, 2, 2, 2)
    assert_same_tree(H, fd_hessian_blocks(loss, (layers, x), 0, 0), rtol=1e-5, atol=1e-7)
    layer = Linear(randn(rng, 3), 0.3)
    H = sg.hessian(dataclass_loss)(layer, x[0, :1].repeat(3))
    assert isinstance(H, Linear) and isinstance(H.w, Linear) and H.w.w.shape == (3, 3)
    assert_same_tree(H, fd_hessian_blocks(dataclass_loss, (layer, x[0, :1].repeat(3)), 0, 0),
                     rtol=1e-5, atol=1e-7)


# ----- grad of grad with structured arguments: the gradient called inside -----


def cubic_in_x(p, x):
    return np.sum(p["w"] * x ** 3) + p["c"] * x ** 2 + np.sin(p["c"] * x)


def d_dx(p, x):
    return sg.grad(cubic_in_x, wrt=1)(p, x)


def sum_of_the_dict_gradient(p, x):
    g = sg.grad(cubic_in_x)(p, x)
    return np.sum(g["w"]) + g["c"]


def test_grad_of_grad_with_a_dict_argument_matches_fd_of_the_first_derivative():
    p, x = {"w": np.array([1.0, -2.0, 0.5]), "c": 0.7}, 1.3
    # d2f/dx2 by hand, and by central differences of sg.grad (the first derivative)
    w, c = p["w"], p["c"]
    want = 6 * np.sum(w) * x + 2 * c - c ** 2 * np.sin(c * x)
    got = sg.grad(d_dx, wrt=1)(p, x)
    first = sg.grad(cubic_in_x, wrt=1)
    fd = (first(p, x + 1e-5) - first(p, x - 1e-5)) / 2e-5
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, fd, rtol=1e-7)
    # with respect to the dict as well: a dict like p
    gp, gx = sg.grad(d_dx, wrt=(0, 1))(p, x)
    assert type(gp) is dict and set(gp) == {"w", "c"}
    np.testing.assert_allclose(gp["w"], np.full(3, 3 * x ** 2), rtol=1e-12)
    np.testing.assert_allclose(gp["c"], 2 * x + np.cos(c * x) - c * x * np.sin(c * x), rtol=1e-12)
    # a scalar function of the dict gradient: against FD of the first derivative, leaf by leaf
    got = sg.grad(sum_of_the_dict_gradient)(p, x)
    fd = fd_jacobian_blocks(sum_of_the_dict_gradient, (p, x), 0, h=1e-5)
    assert type(got) is dict
    assert_same_tree(got, fd, rtol=1e-6, atol=1e-8)
    # the direct form: a structure goes through the first gradient's hvp (nested.py)
    np.testing.assert_allclose(sg.grad(sg.grad(cubic_in_x, wrt=1), wrt=1)(p, x), want, rtol=1e-12)
    direct = sg.grad(sg.grad(cubic_in_x, wrt=1), wrt=0)(p, x)
    assert type(direct) is dict
    assert_same_tree(direct, gp, rtol=1e-12, atol=1e-14)
