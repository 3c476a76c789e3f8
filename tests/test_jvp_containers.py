"""Forward mode on Python as people write it (issue 14): containers and custom Functions.

A container's tangent is the container of its items' tangents. Each function here is
checked through ``sg.jvp`` along a random tangent and through ``sg.jacfwd`` (the batched
tangent program) against central finite differences in float64.
"""

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree

H = 1e-6


def mlp(params, x):
    *hidden, last = params["layers"]
    for layer in hidden:
        x = np.tanh(x @ layer["W"] + layer["b"])
    return x @ last["W"] + last["b"]


def displays(x, y):
    a = [x, y * 2.0, 3]
    t = (x * y, 1.0)
    d = {"p": x, "q": y}
    return a[0] * t[0] + d["q"] * a[1] + a[2] * t[1]


def list_call_and_slice(xs):
    ys = list(xs)
    zs = tuple(ys[1:])
    return zs[0] * ys[0] + zs[-1]


def rows_of_an_array(m):
    total = 0.0
    for row in list(m):
        total = total + np.sin(row) * row[0]
    return total


def loop_over_a_list(xs):
    s = 0.0
    for v in xs:
        s = s + np.sin(v)
    return s


def zip_enumerate(xs, ys):
    s = 0.0
    for i, (a, b) in enumerate(zip(xs, ys)):
        s = s + (i + 1) * a * b
    return s


def comprehension_sum(xs):
    squares = [v ** 2 for v in xs]
    return sum(np.sum(v) for v in squares) * xs[0]


def append_and_concatenate(x, y):
    out = []
    out.append(x * 2)
    out += [y, x * y]
    return out[0] + out[1] * out[2]


def concatenated_with_a_constant(x):
    c = [1.0, 2.0]
    items = c + [x * 3.0]
    more = [x * x] + c
    return items[2] * items[0] + more[0] * more[2]


def dict_methods(d):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(v * v)
    for v in d.values():
        s = s + v * 0.5
    return s + d.get("a") * d.get("z", 2.0)


Params = namedtuple("Params", "w b")


@dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


def fields(p, layer, x):
    return p.w * x + p.b + layer.w * layer.b


class Model:
    def __init__(self, scale):
        self.scale = scale

    def layer(self, x, w):
        return np.tanh(x * w) * self.scale

    def run(self, x, ws):
        for w in ws:
            x = self.layer(x, w)
        return x


MODEL = Model(2.0)


def method_calls(x, ws):
    return MODEL.run(x, ws)


def returns_a_structure(x, y):
    return [x * y, {"a": np.sin(x), "n": 3}]


def _r(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def _layer(m, n, seed):
    return {"W": _r(m, n, seed=seed), "b": _r(n, seed=seed + 1)}


x3, y3 = _r(3, seed=1), _r(3, seed=2)
CASES = [
    (mlp, ({"layers": [_layer(3, 4, 10), _layer(4, 4, 12), _layer(4, 2, 14)]}, _r(5, 3)), [0, 1]),
    (displays, (x3, y3), [0, 1]),
    (list_call_and_slice, ([x3, y3, x3 + 1.0],), [0]),
    (rows_of_an_array, (_r(3, 2, seed=3),), [0]),
    (loop_over_a_list, ([x3, y3],), [0]),
    (zip_enumerate, ([x3, y3], [y3, x3 * 2]), [0, 1]),
    (comprehension_sum, ([x3, y3],), [0]),
    (append_and_concatenate, (x3, y3), [0, 1]),
    (concatenated_with_a_constant, (x3,), [0]),
    (dict_methods, ({"a": x3, "b": y3},), [0]),
    (fields, (Params(x3, y3), Layer(y3, x3 * 2), x3 + 0.5), [0, 1, 2]),
    (method_calls, (x3, [y3, x3]), [0, 1]),
    (returns_a_structure, (x3, y3), [0, 1]),
]
IDS = [c[0].__name__ for c in CASES]


def _random_like(tree, rng):
    return pytree.rebuild(tree, iter([rng.normal(size=np.shape(leaf)) for leaf in pytree.tree_leaves(tree)]))


def _moved(tree, direction, s):
    return pytree.rebuild(tree, iter([a + s * d for a, d in zip(pytree.tree_leaves(tree),
                                                                pytree.tree_leaves(direction))]))


def _float_leaves(tree):
    return [np.asarray(leaf, float) for leaf in pytree.tree_leaves(tree)
            if np.asarray(leaf).dtype.kind == "f"]


def _fd(f, args, tangents, h=H):
    def at(s):
        return f(*[a if t is None else _moved(a, t, s) for a, t in zip(args, tangents)])
    return [(p - m) / (2 * h) for p, m in zip(_float_leaves(at(h)), _float_leaves(at(-h)))]


@pytest.mark.parametrize("f, args, positions", CASES, ids=IDS)
def test_jvp_through_containers_matches_finite_differences(f, args, positions):
    rng = np.random.default_rng(0)
    tangents = tuple(_random_like(a, rng) if k in positions else None for k, a in enumerate(args))
    out, t = sg.jvp(f, args, tangents)
    want = _fd(f, args, tangents)
    got = [np.asarray(leaf if leaf is not None else 0.0, float) for leaf in pytree.tree_leaves(t)]
    values = pytree.tree_leaves(out)
    got = [g for g, v in zip(got, values) if np.asarray(v).dtype.kind == "f"]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, args, positions", [c for c in CASES if c[0] is not returns_a_structure],
                         ids=[i for i in IDS if i != "returns_a_structure"])
def test_jacfwd_through_containers_matches_finite_differences(f, args, positions):
    for k in positions:
        jac = sg.jacfwd(f, wrt=k)(*args)
        leaves = pytree.tree_leaves(args[k])
        blocks = pytree.tree_leaves(jac)
        assert len(blocks) == len(leaves)
        for j, (leaf, block) in enumerate(zip(leaves, blocks)):
            for e in np.eye(np.size(leaf)):
                direction = pytree.rebuild(args[k], iter(
                    [e.reshape(np.shape(leaf)) if i == j else np.zeros(np.shape(other))
                     for i, other in enumerate(leaves)]))
                tangents = tuple(direction if i == k else None for i in range(len(args)))
                want = _fd(f, args, tangents)[0]
                got = np.asarray(block).reshape(np.shape(want) + (np.size(leaf),)) @ e
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_the_tangent_program_of_a_loop_over_layers_reads_like_the_loop():
    text = sg.source(mlp, wrt=0, mode="jvp")
    assert "hidden = list(params_item_item)" in text
    assert "dhidden = rt.list_jvp(dparams_item_item, params_item_item, hidden)" in text
    assert "for i in range(n):" in text and "dlayer = dhidden[i]" in text
    assert "dx_matmul_layer_item = dx @ layer_item + x @ dlayer_item" in text


def test_a_bound_method_shows_its_tangent_program():
    text = sg.source(MODEL.run, wrt=(0, 1), mode="jvp")
    assert "def run_jvp(x, ws, dx, dws):" in text


# ----- custom Functions -----


class CubeSin(sg.Function):
    """Two outputs, a non-array argument; reverse and forward mode defined."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.k = k
        return k * x ** 3, np.sin(x)

    @staticmethod
    def backward(ctx, g1, g2):
        (x,) = ctx.saved_tensors
        return g1 * 3 * ctx.k * x ** 2 + g2 * np.cos(x), None

    @staticmethod
    def jvp(ctx, dx, dk):
        (x,) = ctx.saved_tensors
        return 3 * ctx.k * x ** 2 * dx, np.cos(x) * dx


def uses_cube_sin(x, y):
    a, b = CubeSin.apply(x * y, 2.0)
    return np.sum(a * b) + a * y


class Scale(sg.Function):
    """A jvp that reads what forward saved for forward mode, not for backward."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(None)
        ctx.save_for_forward(x, w)
        return w * x

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("forward mode does not run backward")

    @staticmethod
    def jvp(ctx, dx, dw):
        x, w = ctx.saved_tensors
        return w * dx + dw * x


def uses_scale(x, w):
    return np.sin(Scale.apply(x, w))


def _check_jvp(f, args):
    rng = np.random.default_rng(5)
    tangents = tuple(rng.normal(size=np.shape(a)) for a in args)
    out, t = sg.jvp(f, args, tangents)
    np.testing.assert_allclose(out, f(*args), rtol=1e-12)
    np.testing.assert_allclose(t, _fd(f, args, tangents)[0], rtol=1e-6, atol=1e-8)
    for k in range(len(args)):   # one tangent program per seed (a user's jvp takes one)
        jac = sg.jacfwd(f, wrt=k)(*args)
        want = np.stack([_fd(f, args, tuple(e if i == k else None for i in range(len(args))))[0]
                         for e in np.eye(args[k].size)], axis=-1)
        np.testing.assert_allclose(jac, want, rtol=1e-6, atol=1e-8)


def test_a_custom_function_with_a_jvp_runs_it_in_forward_mode():
    _check_jvp(uses_cube_sin, (x3, y3))
    _check_jvp(uses_scale, (x3, y3))
    text = sg.source(uses_cube_sin, wrt=(0, 1), mode="jvp")
    assert "rt.function_jvp(CubeSin,CubeSin_ctx,(dx_times_y,None))" in "".join(text.split())


class NoJvp(sg.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class BadJvp(NoJvp):
    @staticmethod
    def jvp(ctx, dx):
        return np.sum(dx)


def uses_bad_jvp(x):
    return BadJvp.apply(x)


def test_a_jvp_of_the_wrong_shape_is_an_error_naming_the_class():
    with pytest.raises(sg.SrcgradError, match=r"BadJvp.jvp: the tangent of an output of shape \(3,\)"):
        sg.jvp(uses_bad_jvp, (x3,), (y3,))


def uses_no_jvp(x):
    return NoJvp.apply(x) + 1.0


def test_a_custom_function_without_a_jvp_is_refused_saying_how_to_define_one():
    for api in (lambda: sg.jvp(uses_no_jvp, (x3,), (y3,)), lambda: sg.jacfwd(uses_no_jvp)(x3)):
        with pytest.raises(sg.NonDifferentiableError) as info:
            api()
        text = str(info.value)
        assert "NoJvp.apply" in text and "NoJvp defines no jvp" in text, text
        assert "Define a jvp(ctx, *tangents) staticmethod" in text, text
        assert info.value.filename.endswith("test_jvp_containers.py"), text


def sorted_items(x):
    values = sorted([x[0] * 2.0, x[1] ** 2, np.sin(x[2])])
    return values[0] * 3.0 + values[1] * values[2]


def item_of(x):
    a = (x * x).item(1)
    return a * np.sum(x)


@pytest.mark.parametrize("f", [sorted_items, item_of])
def test_tangents_of_sorted_and_item_match_finite_differences(f):
    # rules/jvp_numpy.py: builtins.sorted and x.item() have no row in the rule table
    _check_jvp(f, (np.array([0.45, -0.9, 0.2]),))   # sorted reverses their order
