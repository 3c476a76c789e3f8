"""Calling the items of a list, tuple or dict of callables known when compiling.

``for layer in self.layers: x = layer(x)`` (unrolled, transform/unroll.py) and
``OPS["sin"](x)`` (an item read with a constant key, anf_expressions.py), each checked
against central differences, also after the container is changed between calls: the
guard (guard.py) must compile anew when an item is replaced, appended or reordered.
"""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import check_grads, numerical_grad

RNG = np.random.default_rng(7)
X = RNG.normal(size=3)


def check(f, *args, wrt=0):
    got = sg.grad(f, wrt=wrt)(*args)
    want = numerical_grad(f, args, wrt=wrt)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    return got


class Lin:
    def __init__(self, scale=1.0):
        self.W = RNG.normal(size=(3, 3)) * scale

    def __call__(self, x):
        return np.tanh(x @ self.W)


class Square:
    def forward(self, x):
        return x * x

    def __call__(self, x):
        return self.forward(x) + x


class Net:
    def __init__(self, layers):
        self.layers = layers

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return np.sum(x)

    def forward_enumerated(self, x):
        for i, layer in enumerate(self.layers, 1):
            x = layer(x) * i
        return np.sum(x)

    def forward_reversed(self, x):
        for layer in reversed(self.layers):
            x = layer(x)
        return np.sum(x)

    def last_only(self, x):
        return np.sum(self.layers[-1](x))

    def __call__(self, x):
        return np.sum([np.sum(layer(x)) for layer in self.layers])


def mlp(params, x):   # for contrast: a list of arrays passed as an argument
    for W, b in params:
        x = np.tanh(x @ W + b)
    return np.sum(x)


def test_a_list_of_arrays_argument_still_loops():
    params = [(RNG.normal(size=(3, 3)), RNG.normal(size=3)) for _ in range(2)]
    g = sg.grad(mlp, wrt=1)(params, X)
    np.testing.assert_allclose(g, numerical_grad(mlp, (params, X), wrt=1), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("method", ["forward", "forward_enumerated", "forward_reversed",
                                    "last_only", "__call__"])
def test_a_loop_over_self_layers(method):
    net = Net([Lin(), Square(), Lin()])
    check(getattr(net, method), X)


class Affine:
    def __init__(self):
        self.W = RNG.normal(size=(3, 3))
        self.b = RNG.normal(size=3)

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


def test_the_unrolled_gradient_keeps_no_dead_tape_and_names_each_layer():
    """Each layer rebinds ``x``, which the backward sweep never reads once restored:
    no push and pop of it; ``x @ self.W + self.b`` is arithmetic (a matmul is never a
    list), so no run-time concatenation test; the inlined ``self`` is read by the
    loop variable's name."""
    net = Net([Affine(), Affine(), Affine()])
    check(net.forward, X)
    text = sg.source(net.forward, args=(X,))
    for absent in ("push(", "pop()", "container_op", "check_array_operand", "call__"):
        assert absent not in text, absent
    assert "layer_2.W" in text and "layer_4.b" in text


def test_a_tuple_attribute_of_a_global_object_concatenated_and_read_twice():
    """``a + c.extra`` concatenates two tuples: its adjoint, accumulated from two
    reads, must add item by item, not concatenate (an object's attribute may hold a
    tuple whatever the object is)."""
    t = tuple_object(X)
    assert t == pytest.approx(float(np.sum(4 * X * X) + np.sum(X * np.array([1.0, 2.0, 3.0]))))
    check(tuple_object, X)


class Holder:
    extra = (np.array([1.0, 2.0, 3.0]),)


HOLDER = Holder()


def twice_first(t):
    return t[0] * 2.0


def tuple_object(x):
    a = (x,)
    t = a + HOLDER.extra
    u = twice_first(t)
    v = twice_first(t)
    w = t
    return np.sum(u * v) + np.sum(w[0] * w[1])


def test_a_tuple_of_layers():
    net = Net((Lin(), Lin(0.5)))
    check(net.forward, X)


def test_replacing_appending_and_rebinding_layers_compiles_anew():
    net = Net([Lin(), Lin()])
    before = check(net.forward, X)
    compiled = sg.grad(net.forward).compiled
    check(net.forward, X)
    assert sg.grad(net.forward).compiled is compiled   # nothing changed: reused
    net.layers[1] = Lin(2.0)
    after = check(net.forward, X)
    assert not np.allclose(before, after)
    net.layers.append(Square())
    check(net.forward, X)
    net.layers.pop(0)
    check(net.forward, X)
    net.layers = [Square()]
    np.testing.assert_allclose(sg.grad(net.forward)(X), 2 * X + 1, rtol=1e-12)
    Square.forward = lambda self, x: x * x * x   # a class's method redefined: new gradient
    try:
        np.testing.assert_allclose(sg.grad(net.forward)(X), 3 * X ** 2 + 1, rtol=1e-12)
    finally:
        Square.forward = lambda self, x: x * x


def test_the_same_gradient_object_sees_the_change():
    net = Net([Lin(), Lin()])
    g = sg.grad(net.forward)
    g(X)
    net.layers[0] = Square()
    np.testing.assert_allclose(g(X), numerical_grad(net.forward, (X,)), rtol=1e-6, atol=1e-8)


OPS = {"sin": np.sin, "sq": lambda v: v * v}


def call_ops(x):
    return np.sum(OPS["sin"](x) + OPS["sq"](x))


def test_an_item_of_a_global_dict_with_a_constant_key():
    np.testing.assert_allclose(check(call_ops, X), np.cos(X) + 2 * X, rtol=1e-7)
    OPS["sin"] = np.cos
    try:
        np.testing.assert_allclose(check(call_ops, X), -np.sin(X) + 2 * X, rtol=1e-7)
    finally:
        OPS["sin"] = np.sin
    np.testing.assert_allclose(check(call_ops, X), np.cos(X) + 2 * X, rtol=1e-7)


def sum_of_ops(x):
    total = 0.0
    for name, op in OPS.items():
        total = total + np.sum(op(x)) * len(name)
    for op in OPS.values():
        total = total + np.sum(op(x))
    return total


def test_a_loop_over_a_global_dicts_items_and_values():
    check(sum_of_ops, X)
    OPS["cube"] = lambda v: v ** 3
    try:
        check(sum_of_ops, X)
        del OPS["sin"]
        OPS["sin"] = np.sin   # the same items in another order: another unrolling
        check(sum_of_ops, X)
    finally:
        del OPS["cube"]


FUNCS = [np.sin, np.tanh]


def composed(x):
    for f in FUNCS:
        x = f(x)
    return np.sum(x) + sum(np.sum(f(x)) for f in FUNCS)


def test_a_global_list_of_functions_and_a_generator_over_it():
    check(composed, X)
    FUNCS[1] = np.exp
    try:
        check(composed, X)
    finally:
        FUNCS[1] = np.tanh


BLOCKS = [(RNG.normal(size=(3, 3)), np.tanh), (RNG.normal(size=(3, 3)), np.sin)]


def blocks(x):
    for W, act in BLOCKS:
        x = act(x @ W)
    return np.sum(x)


def test_unpacked_items_of_a_global_list():
    check(blocks, X)
    BLOCKS.append([RNG.normal(size=(3, 3)), np.cos])   # a list item: its items are guarded
    try:
        check(blocks, X)
        BLOCKS[-1][1] = np.sin
        check(blocks, X)
    finally:
        BLOCKS.pop()


def make_closure(layers):
    def run(x):
        for layer in layers:
            x = layer(x)
        return np.sum(x)
    return run


def test_a_closure_list():
    layers = [Lin(), Square()]
    run = make_closure(layers)
    check(run, X)
    layers[0] = Lin(0.3)
    check(run, X)


class Stack:
    def __init__(self, blocks):
        self.blocks = blocks

    def forward(self, x):
        for block in self.blocks:
            for layer in block.layers:
                x = layer(x)
        return np.sum(x)


NET = Net([Lin(), Lin()])


def through_a_global_model(x):
    return NET.forward(x) * 2.0


def test_nested_and_inlined_models():
    stack = Stack([Net([Lin(), Square()]), Net([Lin()])])
    check(stack.forward, X)
    stack.blocks[1].layers.append(Lin())
    check(stack.forward, X)
    check(through_a_global_model, X)
    NET.layers[0] = Square()
    check(through_a_global_model, X)


def test_second_order():
    net = Net([Lin(), Square(), Lin()])
    h = sg.hessian(net.forward)(X)
    want = np.stack([numerical_grad(lambda v: sg.grad(net.forward)(v)[i], (X,))
                     for i in range(3)])
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-7)
    net.layers[2] = Lin(0.5)
    h = sg.hessian(net.forward)(X)
    want = np.stack([numerical_grad(lambda v: sg.grad(net.forward)(v)[i], (X,))
                     for i in range(3)])
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-7)


def apply_all(x, fns=FUNCS):
    for f in fns:
        x = f(x)
    return x


def copies_its_default(x, fns=FUNCS):
    fns = list(fns)   # the parameter rebound: a run-time value, given the default
    return x * len(fns)


class Model:
    def __init__(self):
        self.layers = [Lin(), Square()]

    def loss(self, x):
        return np.sum(apply_all(x, self.layers)) + np.sum(apply_all(x))

    def counted(self, x):
        return np.sum(copies_its_default(x))


def test_a_helper_given_a_container_or_keeping_it_as_default():
    model = Model()
    check(model.loss, X)
    model.layers[0] = Lin(0.2)
    check(model.loss, X)
    FUNCS[0] = np.cos
    try:
        check(model.loss, X)
    finally:
        FUNCS[0] = np.sin
    np.testing.assert_allclose(check(model.counted, X), np.full(3, 2.0))


# ----- refused, at the user's line -----

def layers_argument(x, layers):
    for layer in layers:
        x = layer(x)
    return np.sum(x)


def computed_key(x, key):
    return np.sum(OPS[key](x))


def computed_key_expression(x, key):
    return np.sum(OPS[key + "n"](x))


@pytest.mark.parametrize("key", ["sin", "sq"])
def test_a_key_known_only_when_f_runs_calls_the_item_it_picks(key):
    assert check_grads(computed_key, (X, key))
    with pytest.raises(KeyError, match="cos"):
        sg.grad(computed_key)(X, "cos")


def read_after(x):
    for f in FUNCS:
        x = f(x)
    return np.sum(f(x))


def rebinds(x):
    for f in FUNCS:
        x = f(x)
        f = np.cos
    return np.sum(x)


def changes_while_looping(x):   # Python's loop would stop after the first item
    total = 0.0
    for f in FUNCS:
        total = total + np.sum(f(x))
        FUNCS.pop()
    return total


def replaces_an_item(x):
    for f in FUNCS:
        x = f(x)
    FUNCS[0] = np.cos
    return np.sum(x)


@pytest.mark.parametrize("fn, args, line, words", [
    (layers_argument, (X, [np.sin]), "x = layer(x)", "local variable `layer`"),
    (changes_while_looping, (X,), "FUNCS.pop()", "changes `FUNCS`"),
    (replaces_an_item, (X,), "FUNCS[0] = np.cos", "changes `FUNCS`"),
    (computed_key_expression, (X, "si"), 'OPS[key + "n"](x)', "key computed"),
    (read_after, (X,), "return np.sum(f(x))", "used outside the loop"),
    (rebinds, (X,), "f = np.cos", "is assigned in the loop"),
])
def test_refusals_name_the_line(fn, args, line, words):
    with pytest.raises(sg.UnsupportedError) as err:
        sg.grad(fn)(*args)
    assert err.value.filename == __file__
    assert line in err.value.source_line
    assert words in str(err.value)


def breaks(x):
    for f in FUNCS:
        x = f(x)
        if np.sum(x) > 0:
            break
    return np.sum(x * x)


def test_break_in_an_unrolled_loop_is_differentiated():
    # Was refused; each copy of the body now sits in a one-trip loop (unroll.py's jumping).
    x = np.array([0.5, 0.25, 1.0])
    assert sg.testing.check_grads(breaks, (x,))     # breaks after sin
    np.testing.assert_allclose(sg.grad(breaks)(x), 2 * np.sin(x) * np.cos(x), rtol=1e-12)
    assert sg.testing.check_grads(breaks, (-x,))    # runs both
