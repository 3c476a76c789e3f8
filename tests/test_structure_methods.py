"""Methods of the parts of a structured argument (transform/structure_parts.py): models written
as dataclasses of dataclasses, Equinox-style: ``m.layers[0].forward(x)``, ``self.enc(x)``
(``__call__``), ``for layer in self.layers: x = layer(x)``. Every gradient is checked against
central differences in float64 over the model's leaves."""

import dataclasses
import typing

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree
from srcgrad.errors import SrcgradError
from srcgrad.testing import numerical_grad

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3))


@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return x @ self.w + self.b

    def forward(self, x):
        return x @ self.w + self.b


@dataclasses.dataclass
class Scale:
    s: np.ndarray

    def __call__(self, x):
        return np.tanh(x * self.s)


@dataclasses.dataclass
class MLP:
    layers: list

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = np.tanh(layer(x))
        return self.layers[-1](x)

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer.forward(x)
            if i < len(self.layers) - 1:
                x = np.sin(x)
        return x


@dataclasses.dataclass
class AutoEncoder:
    enc: Linear
    dec: Linear
    extra: dict

    def __call__(self, x):
        return self.dec(np.tanh(self.enc(x))) * self.extra["gain"].s

    def code(self, x):
        return self.enc.forward(x)


class Pair(typing.NamedTuple):
    first: Linear
    second: Linear


def linear(n_in, n_out):
    return Linear(RNG.standard_normal((n_in, n_out)), RNG.standard_normal(n_out))


def mlp(*sizes):
    return MLP([linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])


def assert_tree_close(got, want):
    assert type(got) is type(want)
    for a, b in zip(pytree.tree_leaves(got), pytree.tree_leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def check(f, model, *rest):
    assert_tree_close(sg.grad(f)(model, *rest), numerical_grad(f, (model,) + rest))


def loss_call(m, x):
    return np.sum(m(x) ** 2)


def loss_forward(m, x):
    return np.sum(np.cos(m.forward(x)))


def test_a_model_called_through_dunder_call():
    check(loss_call, linear(3, 2), X)


def test_layers_indexed_by_constants():
    def loss(m, x):
        h = np.tanh(m.layers[0].forward(x))
        return np.sum(m.layers[-1](h) ** 2)
    check(loss, mlp(3, 5, 2), X)


def test_a_loop_over_layers_calls_each():
    check(loss_call, mlp(3, 4, 4, 2), X)
    check(loss_forward, mlp(3, 4, 2), X)


def test_parts_calling_parts():
    model = AutoEncoder(linear(3, 2), linear(2, 3), {"gain": Scale(RNG.standard_normal(3))})
    check(loss_call, model, X)

    def coded(m, x):
        return np.sum(m.code(x) ** 3) + np.sum(m.extra["gain"](x))
    check(coded, model, X)


def test_a_namedtuple_of_modules():
    def loss(p, x):
        return np.sum(p.second(np.sin(p.first(x))))
    check(loss, Pair(linear(3, 4), linear(4, 1)), X)


def test_the_input_gradient_with_the_model_constant():
    model = mlp(3, 4, 2)
    got = sg.grad(loss_call, wrt=1)(model, X)
    want = numerical_grad(lambda x: loss_call(model, x), (X,))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_jit_matches():
    model = mlp(3, 4, 2)
    assert_tree_close(sg.grad(loss_call, jit=True)(model, X), sg.grad(loss_call)(model, X))


def test_forward_mode_and_second_order():
    model = mlp(3, 3, 1)
    tangent = pytree.tree_map(lambda v: np.ones_like(v), model)
    _, t_out = sg.jvp(loss_call, (model, X), (tangent, np.zeros_like(X)))
    flat = sum(np.sum(g) for g in pytree.tree_leaves(sg.grad(loss_call)(model, X)))
    np.testing.assert_allclose(t_out, flat, rtol=1e-8)
    # the Hessian in the input, the model constant, against differences of the gradient
    h = sg.hessian(loss_call, wrt=1)(model, X[:1])
    g = sg.grad(loss_call, wrt=1)
    eps = 1e-6
    cols = []
    for idx in np.ndindex(X[:1].shape):
        d = np.zeros_like(X[:1])
        d[idx] = eps
        cols.append((g(model, X[:1] + d) - g(model, X[:1] - d)) / (2 * eps))
    np.testing.assert_allclose(h.reshape(3, 3), np.array(cols).reshape(3, 3).T, rtol=1e-5, atol=1e-7)


def test_a_new_class_of_layer_compiles_anew():
    model = MLP([linear(3, 3), linear(3, 2)])
    check(loss_call, model, X)
    other = MLP([Scale(RNG.standard_normal(3)), linear(3, 2)])
    check(loss_call, other, X)   # the first layer's __call__ is Scale's now


def test_layers_of_different_classes_make_one_body_per_layer():
    model = MLP([linear(3, 3), Scale(RNG.standard_normal(3)), linear(3, 2)])
    check(loss_call, model, X)

    def numbered(m, x):
        for i, layer in enumerate(m.layers):
            x = layer(x) * (i + 1)
        return np.sum(x ** 2) + i
    check(numbered, model, X)
    source = sg.source(numbered, args=(model, X))
    # each layer's own method, inlined under its source line
    assert source.count("# return x @ self.w + self.b") >= 2 and "# return np.tanh(x * self.s)" in source


def test_a_loop_variable_read_after_the_loop_is_not_unrolled():
    def after(m, x):
        for layer in m.layers:
            x = layer(x)
        return np.sum(x) + np.sum(layer.b)
    with pytest.raises(SrcgradError, match="layer"):
        sg.grad(after)(MLP([linear(3, 3), Scale(RNG.standard_normal(3)), linear(3, 2)]), X)


def test_a_function_storing_into_the_model_is_not_bound():
    def loss(m, x):
        m.layers[0] = m.layers[1]
        return np.sum(m.layers[0](x))
    with pytest.raises(SrcgradError):
        sg.grad(loss)(MLP([linear(3, 3), linear(3, 3)]), X)


@dataclasses.dataclass
class Blocks:
    blocks: dict


def test_comprehensions_over_layers():
    model = mlp(3, 3, 3)

    def summed(m, x):
        return sum(np.sum(layer(x)) for layer in m.layers)

    def stacked(m, x):
        return np.sum(np.stack([layer.forward(x) for layer in m.layers]) ** 2)
    check(summed, model, X)
    check(stacked, model, X)


def test_loops_over_a_dict_of_modules():
    def items(m, x):
        total = 0.0
        for key, block in m.blocks.items():
            total = total + np.sum(block(x)) * len(key)
        return total

    def values(m, x):
        total = 0.0
        for block in m.blocks.values():
            total = total + np.sum(block(x) ** 2)
        return total
    same = Blocks({"a": linear(3, 3), "bb": linear(3, 3)})
    mixed = Blocks({"a": linear(3, 3), "bb": Scale(RNG.standard_normal(3))})
    for model in (same, mixed):
        check(items, model, X)
        check(values, model, X)


def apply_layer(layer, x):
    return layer(x)


def test_a_layer_passed_to_a_helper():
    def loss(m, x):
        for layer in m.layers:
            x = np.tanh(apply_layer(layer, x))
        return np.sum(x)
    check(loss, mlp(3, 3, 2), X)
    check(loss, MLP([linear(3, 3), Scale(RNG.standard_normal(3)), linear(3, 2)]), X)


def test_a_list_or_dict_argument_of_modules():
    def chain(layers, x):
        for layer in layers:
            x = np.tanh(layer(x))
        return np.sum(x)

    def keyed(params, x):
        return np.sum(params["model"](x)) + np.sum(params["scale"] * x)
    layers = mlp(3, 3, 2).layers
    check(chain, layers, X)
    check(chain, tuple(layers), X)
    check(keyed, {"model": linear(3, 2), "scale": RNG.standard_normal(3)}, X)


def test_grad_of_grad_and_a_hessian_through_the_model():
    model = mlp(3, 2, 1)
    x = X[:2]

    def inner(m, x):
        g = sg.grad(loss_call)(m, x)
        return np.sum(g.layers[0].w) + np.sum(g.layers[1].b)
    got = sg.grad(inner, wrt=1)(model, x)
    want = numerical_grad(lambda v: inner(model, v), (x,))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    h = sg.hessian(loss_call)(model, x)
    assert type(h) is MLP and type(h.layers[0].w) is MLP


def test_a_method_replaced_on_the_class_compiles_anew():
    model = mlp(3, 3, 1)
    check(loss_call, model, X)
    original = Linear.__call__
    try:
        Linear.__call__ = lambda self, x: np.sin(x @ self.w) + self.b
        check(loss_call, model, X)
    finally:
        Linear.__call__ = original
    check(loss_call, model, X)


def test_a_layer_replaced_through_an_alias_is_refused():
    def loss(m, x):
        layers = m.layers
        layers[0] = Scale(np.ones(3))
        return np.sum(m.layers[0](x))
    with pytest.raises(SrcgradError, match="shares its memory"):
        sg.grad(loss)(mlp(3, 3, 3), X)


@dataclasses.dataclass
class Softplus:
    raw: np.ndarray
    eps = 0.5   # a class attribute: a constant

    @property
    def scale(self):
        return np.log1p(np.exp(self.raw))

    def __post_init__(self):
        object.__setattr__(self, "twice", self.raw * 2)   # computed, not a field

    def __call__(self, x):
        return x * self.scale + self.eps


def softplus_grad(raw, x):
    return x * np.exp(raw) / (1 + np.exp(raw))


def test_a_property_is_read_through_its_getter():
    """A property read as an attribute carried no gradient (the gradient was zeros)."""
    m = Softplus(np.array([0.3, -0.2]))
    x = np.array([1.0, 2.0])

    def direct(m, x):
        return np.sum(x * m.scale) + np.sum(x * m.eps * m.raw)

    def called(m, x):
        return np.sum(m(x))
    np.testing.assert_allclose(sg.grad(direct)(m, x).raw, softplus_grad(m.raw, x) + 0.5 * x)
    np.testing.assert_allclose(sg.grad(called)(m, x).raw, softplus_grad(m.raw, x))
    _, t = sg.jvp(direct, (m, x), (Softplus(np.ones(2)), np.zeros(2)))
    np.testing.assert_allclose(t, np.sum(softplus_grad(m.raw, x) + 0.5 * x))
    h = sg.hessian(lambda m, x: np.sum(x * m.scale ** 2))(m, x)
    s, sig = np.log1p(np.exp(m.raw)), 1 / (1 + np.exp(-m.raw))
    np.testing.assert_allclose(np.diag(h.raw.raw), 2 * x * (sig ** 2 + s * sig * (1 - sig)))
    part = AutoEncoder(linear(2, 2), linear(2, 2), {"gain": Scale(np.ones(2))})

    def through_a_part(p, x):
        return np.sum(p.extra["gain"].s * x) + np.sum(x * m.scale)
    check(through_a_part, part, x)


def test_a_computed_attribute_is_refused_not_zero():
    m = Softplus(np.array([0.3, -0.2]))
    x = np.array([1.0, 2.0])

    def post_init(m, x):
        return np.sum(x * m.twice)

    def aliased(m, x):
        n = m   # the class of n is not known when compiling: the read is checked when it runs
        return np.sum(x * n.scale)
    for f in (post_init, aliased):
        with pytest.raises(SrcgradError, match="not one of its fields"):
            sg.grad(f)(m, x)
        with pytest.raises(SrcgradError, match="not one of its fields"):
            sg.jvp(f, (m, x), (Softplus(np.ones(2)), np.zeros(2)))


@dataclasses.dataclass
class Shifted(Linear):
    shift: np.ndarray

    def __call__(self, x):
        return super().__call__(x) + self.shift

    def forward(self, x):
        return super(Shifted, self).forward(x) * 2.0


def test_super_in_a_method_of_a_subclass():
    """super() ran in the generated code, which has no __class__ cell: a RuntimeError."""
    model = Shifted(RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal(2))
    check(loss_call, model, X)
    check(loss_forward, model, X)
    check(loss_call, MLP([model, linear(2, 2)]), X)


@dataclasses.dataclass
class Vec:
    a: np.ndarray
    b: np.ndarray

    def __add__(self, other):
        return Vec(self.a + other.a, self.b * other.b)

    def __mul__(self, k):
        return Vec(self.a * k, self.b * k)

    def __rmul__(self, k):
        return Vec(self.a * k ** 2, self.b)

    def __neg__(self):
        return Vec(-self.a, self.b)

    def __getitem__(self, i):
        return self.a[i] * self.b[i]

    def __len__(self):
        return len(self.a)


def test_operators_a_class_defines():
    p = Vec(RNG.standard_normal(3), RNG.standard_normal(3))
    q = Vec(RNG.standard_normal(3), RNG.standard_normal(3))

    def added(p, q):
        r = p + q
        return np.sum(r.a ** 2) + np.sum(r.b)

    def scaled(p):
        r = p * 3.0
        s = 2.0 * p
        t = -p
        return np.sum(r.a * s.a) + np.sum(r.b ** 2) + np.sum(t.a * s.b)

    def indexed(p):
        return sum(p[i] ** 2 for i in range(len(p)))
    check(added, p, q)
    check(lambda q, p: added(p, q), q, p)
    check(scaled, p)
    check(indexed, p)


@dataclasses.dataclass
class Pt:
    a: np.ndarray
    b: np.ndarray

    def __add__(self, other):
        return type(self)(self.a + other.a, self.b * other.b)

    def scaled(self, k):
        return Pt(self.a * k, self.b)

    def norm(self):
        return np.sum(self.a ** 2) + np.sum(self.b ** 2)


def test_methods_of_what_a_method_returns():
    p = Pt(RNG.standard_normal(3), RNG.standard_normal(3))
    q = Pt(RNG.standard_normal(3), RNG.standard_normal(3))

    def chained(p, q):
        return (p + q).norm() + p.scaled(2.0).scaled(0.5).norm()

    def named(p, q):
        r = p + q
        s = Pt(p.a * 3.0, q.b)
        return r.norm() * s.norm()
    check(chained, p, q)
    check(named, p, q)


def test_operators_on_what_an_operator_returns():
    """``p * 3.0 + p``: the ``+`` of ``Vec.__mul__``'s result was left to Python (its class
    unknown), so it was refused. (A method returning ``type(self)(...)`` of such a result
    stays refused: its ``self`` is no name whose class the inliner knows.)"""
    p = Vec(RNG.standard_normal(3), RNG.standard_normal(3))

    def chained(p):
        r = -(p * 3.0 + p) + 2.0 * p
        return np.sum(r.a ** 2) + np.sum(r.b) + (p + p * 0.5)[1]

    def built(x):
        q = Vec(x, x ** 2)
        r = q * 2.0 + q + Vec(x, x)
        return np.sum(r.a * r.b)
    check(chained, p)
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(sg.grad(built)(x), numerical_grad(built, (x,)), rtol=1e-6, atol=1e-8)


@dataclasses.dataclass
class Other:
    a: np.ndarray

    def total(self):
        return np.sum(self.a ** 3)


def test_an_instance_rebound_in_a_loop_keeps_its_class():
    """``v = Vec(x)``, then ``v = v * 0.5 + v`` in a loop and ``w = v``: every binding
    makes a Vec, so ``v.a``'s operators and methods are Vec's (it was refused: the name
    was bound more than once)."""
    def looped(x):
        v = Vec(x, x ** 2)
        for _ in range(3):
            v = v * 0.5 + v
            w = -v
        return np.sum(v.a * w.b) + np.sum(w.a) + w[0]
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(sg.grad(looped)(x), numerical_grad(looped, (x,)), rtol=1e-6, atol=1e-8)

    def two_classes(x):   # bound to a Vec or an Other: no one class, left to Python: refused
        v = Vec(x, x)
        if x[0] > 0:
            v = Other(x)
        return v.total()
    with pytest.raises(sg.SrcgradError, match="test_structure_methods.py"):
        sg.grad(two_classes)(np.abs(x))


@dataclasses.dataclass
class _Tanh:
    A: np.ndarray
    c: object

    def __call__(self, x):
        return np.tanh(self.A @ x + self.c)


@dataclasses.dataclass
class _Gate:
    w: object

    def __call__(self, x):
        return x * self.w


@dataclasses.dataclass
class _Chain:
    layers: list

    def __iter__(self):
        return iter(self.layers)

    def __call__(self, x):
        for layer in self:
            x = layer(x)
        return x


def _through_blocks(blocks, x):
    for name, block in blocks.items():
        x = block(x)
    return np.sum(x ** 2)


def _blocks_side_by_side(blocks, x):
    outs = [block(x) for block in blocks.values()]
    return np.sum(outs[0] * outs[1])


@pytest.mark.parametrize("f", [_through_blocks, _blocks_side_by_side], ids=lambda f: f.__name__)
def test_parts_of_one_class_and_several_trees_are_written_out(f):
    """Two _Chain blocks of different trees (other layers inside): a loop or comprehension
    over them is written out per block, so each block's own loop knows its layers (it was
    refused: only the common class was known)."""
    rng = np.random.default_rng(8)
    blocks = {"enc": _Chain([_Tanh(rng.normal(size=(2, 2)), 0.3), _Gate(rng.normal(size=2))]),
              "dec": _Chain([_Tanh(rng.normal(size=(2, 2)), rng.normal(size=2))])}
    x = rng.normal(size=2)
    value, grads = sg.value_and_grad(f, wrt=(0, 1))(blocks, x)
    np.testing.assert_allclose(value, f(blocks, x), rtol=1e-13)
    want = numerical_grad(f, (blocks, x), wrt=(0, 1))
    for g, w in zip(sg.tree_leaves(grads), sg.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)
