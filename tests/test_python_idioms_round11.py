"""Python as people write it, round eleven: models of modules of several classes read by a
comprehension (``[layer(x) for layer in self.layers]``, ``sum(... for layer in ... if ...)``) and
iterated through the class's ``__iter__`` (``for layer in self``), written out by
transform/structure_parts.py. Each gradient is checked against central differences in
float64 with respect to the input and to the model: grad, value_and_grad, jvp, the Hessian,
a gradient of a gradient and ``jit=True``; what stays unsupported is refused at its line."""

import dataclasses
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree
from srcgrad.jit import JitFallbackWarning
from srcgrad.testing import numerical_grad
from tests.adversarial_checks import assert_refused_in, fd_hessian

RNG = np.random.default_rng(11)
X = RNG.standard_normal(3)
V = RNG.standard_normal(3)
W = RNG.standard_normal(3)
HERE = __file__.rsplit("/", 1)[-1]


@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return x @ self.w + self.b


@dataclasses.dataclass
class Tanh:
    def __call__(self, x):
        return np.tanh(x)


@dataclasses.dataclass
class Scale:
    s: np.ndarray

    def __call__(self, x):
        return np.sin(x) * self.s


@dataclasses.dataclass
class Seq:
    """Iterated as its layers, as torch.nn.Sequential."""
    layers: list

    def __iter__(self):
        return iter(self.layers)

    def __call__(self, x):
        for layer in self:
            x = layer(x)
        return x


@dataclasses.dataclass
class Branches:
    """Each layer applied to the same input; iterated by ``yield from``."""
    layers: list

    def __iter__(self):
        yield from self.layers

    def outputs(self, x):
        return [layer(x) for layer in self.layers]


@dataclasses.dataclass
class Named:
    blocks: dict


def linear(n_in=3, n_out=3):
    return Linear(RNG.standard_normal((n_in, n_out)) * 0.6, RNG.standard_normal(n_out))


def seq():
    return Seq([linear(), Tanh(), Scale(RNG.standard_normal(3)), linear()])


def branches():
    return Branches([linear(), Tanh(), Scale(RNG.standard_normal(3))])


def deep():
    return Seq([linear(), linear(), linear()])


def named():
    return Named({"a": linear(), "bc": Scale(RNG.standard_normal(3)), "def": Tanh()})


# ----- the programs: a model ``m`` and an input ``x`` -----

def seq_call(m, x):
    return np.sum(m(x) ** 2)


def seq_iterated_outside(m, x):
    for layer in m:
        x = layer(x) * 0.9
    return np.sum(np.cos(x))


def seq_comprehension_over_self(m, x):
    return sum(np.sum(layer(x) ** 2) for layer in m)


def branch_outputs(m, x):
    outs = m.outputs(x)
    return np.sum(outs[0] * outs[1]) + np.sum(np.stack(outs) ** 2)


def branch_generator_sum(m, x):
    return sum(np.sum(np.exp(layer(x) / 2)) for layer in m.layers)


def branch_enumerate(m, x):
    return np.sum(np.stack([(i + 1.0) * layer(x) for i, layer in enumerate(m.layers)]) ** 2)


def branch_nested(m, x):
    hs = [layer(x) for layer in m.layers]
    h = hs[0] * hs[2]
    return np.sum(np.stack([[layer(h), layer(x)] for layer in m.layers]) ** 2) + np.sum(hs[2])


def branch_tuple_max(m, x):
    outs = tuple(np.sum(layer(x) ** 2) for layer in m)
    return outs[0] * outs[2] + max(np.sum(layer(x)) for layer in m.layers)


def branch_loop_over_outputs(m, x):
    total = 0.0
    for k, h in enumerate([layer(x) for layer in m.layers]):
        if k % 2 == 0:
            total = total + np.sum(h * x)
    return total


def named_items(m, x):
    return sum(len(k) * np.sum(block(x) ** 2) for k, block in m.blocks.items())


def named_values(m, x):
    return np.prod(np.stack([np.mean(block(x)) for block in m.blocks.values()]))


def filtered(m, x):
    return sum(np.sum(layer(x)) for layer in m.layers if not isinstance(layer, Tanh))


def filtered_by_a_call(m, x):
    return sum(np.sum(layer(x)) for layer in m.layers if np.sum(layer(x)) > 0)


def decay_of_linear_layers(m, x):
    return np.sum(m(x) ** 2) + 0.1 * sum(np.sum(l.w ** 2) for l in m.layers if isinstance(l, Linear))


def filtered_twice(m, x):
    outs = [layer(x) * (i + 1) for i, layer in enumerate(m.layers) if i != 1 if np.sum(x) > -100]
    return np.sum(np.stack(outs) ** 2)


def l2_same_statement(m, x):
    """Weight decay after the model's call, in one statement (comprehensions.py reads the
    classes' ``__call__`` to see that the call leaves the model's leaves as they were)."""
    return np.mean(m(x) ** 2) + 0.1 * sum(np.sum(p ** 2) for p in sg.tree_leaves(m))


def l2_after_outputs(m, x):
    return np.sum(m.outputs(x)[1]) * sum(np.sum(np.abs(p)) for p in sg.tree_leaves(m))


CASES = [(l2_same_statement, seq), (l2_same_statement, deep), (l2_after_outputs, branches),
         (seq_call, seq), (seq_call, deep), (seq_iterated_outside, seq), (seq_comprehension_over_self, seq),
         (branch_outputs, branches), (branch_generator_sum, branches), (branch_enumerate, branches),
         (branch_nested, branches), (branch_loop_over_outputs, branches), (branch_tuple_max, branches),
         (named_items, named), (named_values, named), (filtered, branches),
         (decay_of_linear_layers, seq), (filtered_twice, branches), (filtered_by_a_call, branches)]


def _flat(tree):
    return np.concatenate([np.ravel(leaf) for leaf in pytree.tree_leaves(tree)])


def _fd_hessian(f, m, x, eps=1e-4):
    g = sg.grad(f, wrt=1)
    return np.stack([(g(m, x + eps * e) - g(m, x - eps * e)) / (2 * eps) for e in np.eye(len(x))], axis=1)


@pytest.mark.parametrize("f, make", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_modules_of_several_classes_in_every_mode(f, make):
    m = make()
    want_x = numerical_grad(f, (m, X), wrt=1)
    value, got_x = sg.value_and_grad(f, wrt=1)(m, X)
    np.testing.assert_allclose(value, f(m, X), rtol=1e-13)
    np.testing.assert_allclose(got_x, want_x, rtol=1e-6, atol=1e-8)
    # the model's gradient, leaf by leaf, and the directional derivative along a model tangent
    want_m = numerical_grad(f, (m, X), wrt=0)
    got_m = sg.grad(f)(m, X)
    assert type(got_m) is type(m)
    np.testing.assert_allclose(_flat(got_m), _flat(want_m), rtol=1e-6, atol=1e-8)
    tm = pytree.tree_map(lambda leaf: RNG.standard_normal(np.shape(leaf)), m)
    out, tangent = sg.jvp(f, (m, X), (tm, V))
    np.testing.assert_allclose(out, f(m, X), rtol=1e-13)
    np.testing.assert_allclose(tangent, _flat(want_m) @ _flat(tm) + want_x @ V, rtol=1e-6, atol=1e-8)
    # second order: the Hessian in x, and a gradient of a gradient
    hess = _fd_hessian(f, m, X)
    np.testing.assert_allclose(sg.hessian(f, wrt=1)(m, X), hess, rtol=1e-5, atol=1e-6)
    inner = sg.grad(f, wrt=1)

    def along(m, x):
        return np.sum(inner(m, x) * W)

    np.testing.assert_allclose(sg.grad(along, wrt=1)(m, X), hess @ W, rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        np.testing.assert_allclose(sg.grad(f, wrt=1, jit=True)(m, X), got_x, rtol=1e-10, atol=1e-12)


def test_a_written_out_comprehension_keeps_python_values():
    m = branches()
    for f in (branch_outputs, branch_generator_sum, branch_enumerate, branch_nested, branch_tuple_max):
        np.testing.assert_allclose(sg.value_and_grad(f)(m, X)[0], f(m, X), rtol=1e-14)


# ----- still refused, at the user's line -----



def generator_kept(m, x):
    gen = (layer(x) for layer in m.layers)
    return np.sum(sum(gen))


@dataclasses.dataclass
class Reversed:
    layers: list

    def __iter__(self):
        return iter(self.layers[::-1])


def reversed_iter(m, x):
    for layer in m:
        x = layer(x)
    return np.sum(x)


def filtered_by_a_call_after_and(m, x):   # (right of `and`: evaluated only sometimes)
    return sum(np.sum(layer(x)) for i, layer in enumerate(m.layers) if i != 1 if np.sum(layer(x)) > 0)


def late_binding(m, x):
    fs = [lambda v: layer(v) for layer in m.layers]   # Python: each calls the last layer
    return np.sum(fs[0](x))


def stacked_generator(m, x):
    return np.sum(np.stack(layer(x) for layer in m.layers))   # NumPy wants a sequence


@pytest.mark.parametrize("f, make, words", [
    (filtered_by_a_call_after_and, branches, ("condition",)), (stacked_generator, branches, ("calling", "layer")),
    (late_binding, branches, ("lambda",)),
    (reversed_iter, lambda: Reversed([linear(), Tanh()]), ("calling", "layer"))],
    ids=lambda c: getattr(c, "__name__", ""))
def test_other_comprehensions_and_iterators_are_refused(f, make, words):
    assert_refused_in(HERE, lambda: sg.grad(f, wrt=1)(make(), X), *words)


def test_a_generator_kept_in_a_variable_is_refused():
    assert_refused_in(HERE, lambda: sg.grad(generator_kept, wrt=1)(branches(), X), "generator expression")


@dataclasses.dataclass
class Grows:
    """A layer that records its inputs in a list of the model: ``m``'s leaves change."""
    s: np.ndarray
    seen: list

    def __call__(self, x):
        self.seen.append(x)
        return x * self.s


def test_weight_decay_after_a_call_that_changes_the_model_is_refused():
    def make():
        return Seq([linear(), Grows(RNG.standard_normal(3), [])])
    m = make()
    l2_same_statement(m, X)
    assert len(sg.tree_leaves(m)) == 4   # Python: the leaves read after the call include x
    assert_refused_in(HERE, lambda: sg.grad(l2_same_statement, wrt=1)(make(), X), "may change what it reads")


# ----- a dataclass built in the function, then called: m = Affine(w, b); m(x) -----

def check_all_modes(f, x=X):
    """grad, value_and_grad, jvp, hessian, jit=True and grad of grad of ``f`` against
    central differences."""
    want = numerical_grad(f, (x,))
    value, g = sg.value_and_grad(f)(x)
    np.testing.assert_allclose(value, f(x), rtol=1e-13)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jvp(f, (x,), (V,))[1], want @ V, rtol=1e-6, atol=1e-8)
    hess = fd_hessian(f, x)   # (differences of differences: good to about 1e-6 of its scale)
    atol = 2e-6 * max(1.0, np.abs(hess).max())
    np.testing.assert_allclose(sg.hessian(f)(x), hess, rtol=1e-5, atol=atol)
    inner = sg.grad(f)

    def along(x):
        return np.sum(inner(x) * W)

    np.testing.assert_allclose(sg.grad(along)(x), hess @ W, rtol=1e-5, atol=atol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        np.testing.assert_allclose(sg.grad(f, jit=True)(x), g, rtol=1e-10, atol=1e-12)


@dataclasses.dataclass
class Affine:
    w: np.ndarray
    b: float

    def __call__(self, x):
        return np.tanh(self.w * x + self.b)

    def energy(self, x):
        return np.sum(self(x) ** 2) + self.b * np.sum(self.w)


WEIGHTS = RNG.standard_normal(3)


def built_then_called(x):
    layer = Affine(x, 0.5)
    return np.sum(layer(x[::-1]) * x)


def built_and_called_at_once(x):
    return np.sum(Affine(x ** 2, 0.1)(x) ** 2)


def built_and_its_method(x):
    return Affine(np.sin(x), 0.2).energy(x)


def built_from_a_global(x):
    m = Affine(WEIGHTS, 0.3)
    return m.energy(x) + np.sum(m(x * x))


def built_from_a_model(m, x):
    scaled = Scale(m.layers[2].s * 2.0)
    return np.sum(scaled(m(x)))


@pytest.mark.parametrize("f", [built_then_called, built_and_called_at_once, built_and_its_method,
                               built_from_a_global], ids=lambda f: f.__name__)
def test_a_dataclass_built_in_the_function_is_called(f):
    check_all_modes(f)


def test_a_dataclass_built_from_a_model_is_called():
    m = seq()
    np.testing.assert_allclose(sg.grad(built_from_a_model, wrt=1)(m, X),
                               numerical_grad(built_from_a_model, (m, X), wrt=1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_flat(sg.grad(built_from_a_model)(m, X)),
                               _flat(numerical_grad(built_from_a_model, (m, X))), rtol=1e-6, atol=1e-8)


class Plain:
    """Not a dataclass: its ``__init__`` is user code."""

    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return self.w * x


def plain_built(x):
    return np.sum(Plain(x)(x))


def test_a_plain_class_built_in_the_function_is_differentiated_where_its_module_asks_types():
    # Its __init__ only stores, which test_plain_classes.py builds as a dataclass subclass;
    # this module asks objects their class elsewhere, in code the gradient never runs:
    # refused in round eleven, differentiated since round fourteen (plain_classes reads
    # the function and the class, and refuses an inlined helper that asks a class).
    np.testing.assert_allclose(sg.grad(plain_built)(X), numerical_grad(plain_built, (X,)),
                               rtol=1e-6, atol=1e-8)


# ----- d[k].pop(...) and d[k].insert(i, v): lists and dicts held by a dict or list -----

def popped_and_inserted(x):
    d = {"k": [x[0], x[1] ** 2]}
    v = d["k"].pop()
    d["k"].insert(0, x[2] * 3)
    return v * sum(d["k"])


def popped_at_and_inserted_past_the_end(x):
    d = {"a": [x[0], x[1], x[2]], "b": [x[0] * x[2]]}
    first = d["a"].pop(0)
    d["a"].pop()
    d["b"].insert(5, np.sin(first))     # Python: past the end appends
    d["b"].insert(-1, x[1] * x[2])      # before the last
    return np.sum(np.stack(d["a"])) * sum(d["b"]) + first


def popped_from_a_dict_of_dicts(x):
    d = {"k": {"u": x[0], "v": x[1]}}
    u = d["k"].pop("u")
    w = d["k"].pop("w", x[2])
    return u * w * d["k"]["v"] + len(d["k"])


def rows_passed_around(x):
    rows = [[x[0], x[1]], [x[2]]]
    for i in range(2):
        v = rows[i].pop()
        rows[1 - i].insert(0, v * 2)
    return sum(rows[0]) * sum(rows[1])


@pytest.mark.parametrize("f", [popped_and_inserted, popped_at_and_inserted_past_the_end,
                               popped_from_a_dict_of_dicts, rows_passed_around],
                         ids=lambda f: f.__name__)
def test_pop_and_insert_on_an_item_in_every_mode(f):
    check_all_modes(f)


def popped_while_held(x):
    d = {"k": [x[0], x[1]]}
    lst = d["k"]
    d["k"].pop()
    return sum(lst) * x[2]   # Python: lst is d["k"], one item left


def popped_from_a_shared_list(x):
    a = [x[0], x[1]]
    d = {"k": a}
    d["k"].insert(0, x[2])
    return sum(a) * x[2]


def test_pop_and_insert_on_a_shared_list_are_refused():
    for f in (popped_while_held, popped_from_a_shared_list):
        assert_refused_in(HERE, lambda: sg.grad(f)(X), "shares its memory")


def array_popped(x):
    d = {"k": x * 1.0}
    d["k"].pop()   # an array has no pop: Python raises
    return np.sum(d["k"])


def array_inserted(x):
    d = {"k": x * 1.0}
    d["k"].insert(0, x[0])
    return np.sum(d["k"])


def test_pop_and_insert_on_an_array_raise_as_python_does():
    for f in (array_popped, array_inserted):
        with pytest.raises(AttributeError):
            f(X)
    with pytest.raises(TypeError, match="pop"):
        sg.grad(array_popped)(X)
    with pytest.raises(AttributeError, match="needs a list there"):
        sg.grad(array_inserted)(X)


# ----- a dataclass defined inside the function (transform/local_classes.py) -----

def local_dataclass(x):
    @dataclasses.dataclass
    class Quadratic:
        """Defined where it is used."""
        a: np.ndarray
        scale: float = 2.0

        def energy(self):
            return np.sum(self.a ** 2) * self.scale

        def __call__(self, v):
            return np.sin(v) * self.a + self.energy()

    q = Quadratic(x * 2)
    return np.sum(q(x)) + Quadratic(x, 0.5).energy()


def local_layers(x):
    @dataclasses.dataclass
    class Layer:
        w: np.ndarray

        def __call__(self, v):
            return np.tanh(v * self.w)

    h = x
    for k in range(3):
        h = Layer(x[k] * x + 0.1)(h)
    return np.sum(h ** 2)


@pytest.mark.parametrize("f", [local_dataclass, local_layers], ids=lambda f: f.__name__)
def test_a_dataclass_defined_in_the_function_in_every_mode(f):
    check_all_modes(f)


def reads_a_local(x):
    k = 3.0

    @dataclasses.dataclass
    class P:
        a: np.ndarray

        def f(self):
            return np.sum(self.a) * k   # a variable of reads_a_local

    return P(x).f()


def plain_local_class(x):
    class Q:
        def __init__(self, a):
            self.a = a

    return np.sum(Q(x).a)


def test_other_classes_defined_in_the_function_are_refused():
    for f in (reads_a_local, plain_local_class):
        assert_refused_in(HERE, lambda: sg.grad(f)(X), "class definition")
