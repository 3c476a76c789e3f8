"""Bound methods, static and class methods and functools.partial as entry points
(DESIGN.md section 2, "What can be differentiated"): the bound objects are constants."""

import functools

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import check_grads

RNG = np.random.default_rng(12)
X = RNG.normal(size=3)
Y = RNG.normal(size=2)


class Model:
    K = 2.0

    def __init__(self, W, scale):
        self.W = W
        self.scale = scale
        self.act = np.tanh

    def predict(self, x):
        return self.act(self.W @ x)

    def loss(self, x, y):
        return np.sum((self.predict(x) - y) ** 2) * self.scale

    def scaled(self, x):
        return np.sum(self.scale * x * x)

    def weighted(self, x, w=1.5, *, p=2.0):
        return np.sum(np.abs(x) ** p) * w

    def rebinds_self(self, x):
        self = self.scale
        return x * self

    @staticmethod
    def static_fn(x, c=2.0):
        return np.sum(np.sin(x) * c)

    @classmethod
    def cls_fn(cls, x):
        return np.sum(x ** 3) * cls.K


def model(scale=0.5):
    return Model(RNG.normal(size=(2, 3)), scale)


def loss_of(x, a, b=1.0, *, c=2.0):
    return np.sum(np.sin(x * a) * b) * c


def by_hand_loss(m, x, y):
    """d/dx of sum((tanh(W x) - y)^2) * scale."""
    t = np.tanh(m.W @ x)
    return m.W.T @ (2.0 * (t - y) * (1.0 - t * t)) * m.scale


# ----- Bound methods -----

def test_a_bound_method_is_differentiated_with_self_a_constant():
    m = model()
    np.testing.assert_allclose(sg.grad(m.loss)(X, Y), by_hand_loss(m, X, Y), rtol=1e-12, atol=1e-14)
    check_grads(m.loss, (X, Y), wrt=(0, 1))
    first_def = next(line for line in sg.source(m.loss).splitlines() if line.startswith("def "))
    assert first_def == "def loss_forward(x, y):", first_def
    assert sg.active_variables(m.loss) >= {"x"} and "self" not in sg.active_variables(m.loss)


def test_wrt_counts_the_parameters_after_self():
    m = model()
    gx = sg.grad(m.loss, wrt=0)(X, Y)
    gy = sg.grad(m.loss, wrt=1)(X, Y)
    np.testing.assert_allclose(gx, by_hand_loss(m, X, Y), rtol=1e-12)
    np.testing.assert_allclose(gy, -2.0 * (np.tanh(m.W @ X) - Y) * m.scale, rtol=1e-12)
    assert sg.grad(m.loss, wrt="y")(X, Y) == pytest.approx(gy, rel=1e-12)
    with pytest.raises(ValueError, match="'self' is neither a parameter"):
        sg.grad(m.loss, wrt="self")(X, Y)
    with pytest.raises(ValueError, match="2 positional parameters"):
        sg.grad(m.loss, wrt=2)(X, Y)


@pytest.mark.parametrize("scale", [0.5, np.array([1.0, 2.0, 3.0])])
def test_an_attribute_of_self_is_read_as_a_float_or_an_array(scale):
    m = model(scale)
    np.testing.assert_allclose(sg.grad(m.scaled)(X), 2.0 * scale * X, rtol=1e-12)
    check_grads(m.scaled, (X,))


def test_a_method_with_defaults_and_keywords():
    m = model()
    check_grads(m.weighted, (X,))
    check_grads(m.weighted, (X, 3.0), wrt=(0, 1))
    check_grads(m.weighted, (X,), kwargs={"p": 3.0})
    assert sg.grad(m.weighted, wrt="p")(X, p=3.0) == pytest.approx(
        np.sum(np.abs(X) ** 3.0 * np.log(np.abs(X))) * 1.5, rel=1e-12)


def test_static_and_class_methods():
    check_grads(Model.static_fn, (X,))
    check_grads(model().static_fn, (X, 0.7), wrt=(0, 1))
    np.testing.assert_allclose(sg.grad(Model.cls_fn)(X), 3 * X ** 2 * Model.K, rtol=1e-12)
    check_grads(Model.cls_fn, (X,))
    check_grads(model().cls_fn, (X,))


def test_api_functions_accept_bound_methods():
    m = model()
    value, g = sg.value_and_grad(m.loss)(X, Y)
    assert value == pytest.approx(m.loss(X, Y), rel=1e-12)
    out, backward = sg.vjp(m.loss, wrt=(0, 1))(X, Y)
    gx, gy = backward()
    np.testing.assert_allclose(gx, g, rtol=1e-12)
    np.testing.assert_allclose(gx, by_hand_loss(m, X, Y), rtol=1e-12)
    assert sg.gradcheck(m.loss, (X, Y), wrt=1)
    assert "def loss_forward(x, y):" in sg.source(m.loss)


def test_a_method_calling_another_method_of_self_is_inlined():
    m = model()
    code = [line for line in sg.source(m.loss).splitlines() if not line.strip().startswith("#")]
    assert not any("self.predict" in line for line in code)   # inlined: no call left
    m.act = np.sin   # the callee's rule is chosen again: a new gradient
    t = m.W @ X
    np.testing.assert_allclose(sg.grad(m.loss)(X, Y),
                               m.W.T @ (2.0 * (np.sin(t) - Y) * np.cos(t)) * m.scale, rtol=1e-12)


def test_a_function_calling_a_method_of_a_global_object():
    m = model()

    def outer(x, y):
        return m.loss(x, y) + np.sum(x)

    np.testing.assert_allclose(sg.grad(outer)(X, Y), by_hand_loss(m, X, Y) + 1.0, rtol=1e-12)


def test_a_method_assigning_to_self_is_refused():
    with pytest.raises(sg.SrcgradError, match="assigns to 'self'"):
        sg.grad(model().rebinds_self)(X)


# ----- The cache: a different object never reuses another's gradient -----

def test_another_instance_gets_its_own_gradient():
    a, b = model(0.5), model(3.0)
    ga, gb = sg.grad(a.loss), sg.grad(b.loss)
    for _ in range(3):   # the fast path, after the first call
        np.testing.assert_allclose(ga(X, Y), by_hand_loss(a, X, Y), rtol=1e-12)
        np.testing.assert_allclose(gb(X, Y), by_hand_loss(b, X, Y), rtol=1e-12)
    assert sg.grad(a.loss).compiled is ga.compiled   # the same instance: reused


def test_an_attribute_rebound_in_a_training_loop_is_read_at_run_time():
    m = model()
    g = sg.grad(m.loss, wrt=0)
    compiled = g.compiled
    for _ in range(3):
        np.testing.assert_allclose(g(X, Y), by_hand_loss(m, X, Y), rtol=1e-12)
        m.W = m.W - 0.1 * np.ones_like(m.W)   # a new array: no recompile needed
        m.scale = m.scale * 2.0
    assert g.compiled is compiled


def test_another_partial_gets_its_own_gradient():
    f1 = functools.partial(loss_of, a=2.0)
    f2 = functools.partial(loss_of, a=3.0)
    for _ in range(3):
        for f, a in ((f1, 2.0), (f2, 3.0)):
            np.testing.assert_allclose(sg.grad(f)(X), np.cos(X * a) * a * 2.0, rtol=1e-12)
    for _ in range(2):
        for x in (X, 2.0 * X):   # a bound array: the gradient w.r.t. a reads this one
            assert sg.grad(functools.partial(loss_of, x))(0.5) == pytest.approx(
                np.sum(np.cos(0.5 * x) * x) * 2.0, rel=1e-12)


# ----- functools.partial -----

def test_a_partial_binds_positional_and_keyword_arguments():
    p = functools.partial(loss_of, X)   # binds x: wrt=0 is a
    check_grads(p, (0.7,))
    check_grads(p, (0.7, 1.3), wrt=(0, 1))
    q = functools.partial(loss_of, a=2.0)   # (x, *, a=2.0, b=1.0, c=2.0)
    np.testing.assert_allclose(sg.grad(q)(X), np.cos(2.0 * X) * 2.0 * 2.0, rtol=1e-12)
    np.testing.assert_allclose(sg.grad(q)(X, a=3.0), np.cos(3.0 * X) * 3.0 * 2.0, rtol=1e-12)
    check_grads(q, (X,), kwargs={"b": 0.4})
    assert sg.grad(q, wrt="a")(X) == pytest.approx(np.sum(np.cos(2.0 * X) * X) * 2.0, rel=1e-12)
    with pytest.raises(ValueError, match="1 positional parameters"):
        sg.grad(q, wrt=1)(X)


def test_nested_partials_and_a_partial_of_a_bound_method():
    m = model()
    inner = functools.partial(Model.loss, m)
    nested = functools.partial(inner, X)   # flattened by Python: (Model.loss, m, X)
    np.testing.assert_allclose(sg.grad(nested)(Y), sg.grad(m.loss, wrt=1)(X, Y), rtol=1e-12)
    of_method = functools.partial(m.loss, y=Y)
    np.testing.assert_allclose(sg.grad(of_method)(X), by_hand_loss(m, X, Y), rtol=1e-12)
    check_grads(of_method, (X,))

    class Partial(functools.partial):   # not flattened by Python
        pass

    deep = Partial(Partial(loss_of, c=3.0), X)
    check_grads(deep, (0.7, 1.1), wrt=(0, 1))
    assert sg.grad(deep)(0.7) == pytest.approx(np.sum(np.cos(0.7 * X) * X) * 3.0, rel=1e-12)


def test_a_partial_of_a_primitive():
    twice = functools.partial(np.multiply, 2.0)
    np.testing.assert_array_equal(sg.grad(twice)(X, grad_outputs=np.ones(3)), 2.0 * np.ones(3))
    check_grads(functools.partial(np.power, np.abs(X) + 0.5), (2.5,), grad_outputs="random")


@pytest.mark.parametrize("what, words", [
    (functools.partial(loss_of, 1.0, 2.0, 3.0, 4.0), "binds 4 positional arguments"),
    (functools.partial(loss_of, d=1.0), "the keyword 'd', which is not a keyword parameter"),
    (functools.partial(len), "len is not differentiable"),
])
def test_a_partial_that_cannot_be_bound_is_refused_by_name(what, words):
    with pytest.raises(sg.SrcgradError, match=words):
        sg.grad(what)(X)


def test_api_functions_accept_partials_and_a_method_is_differentiated_twice():
    p = functools.partial(loss_of, a=2.0)
    assert sg.gradcheck(p, (X,), kwargs={"c": 0.5})
    assert sg.active_variables(p) == {"x"}
    assert "def loss_of_forward(x, *, a, b, c):" in sg.source(p)
    value, g = sg.value_and_grad(p)(X)
    out, backward = sg.vjp(p)(X)
    assert value == out == pytest.approx(p(X), rel=1e-15)
    np.testing.assert_allclose(backward(), g, rtol=1e-15)
    m = model(0.5)
    assert sg.gradgradcheck(m.scaled, (X,), atol=1e-7, rtol=1e-5)
    np.testing.assert_allclose(sg.grad(sg.grad(m.scaled))(X, grad_outputs=np.ones(3)),
                               np.full(3, 2.0 * 0.5), rtol=1e-12)


def apply_act(act, x):
    return np.sum(act(x))


def test_a_partial_binding_a_function_gets_the_rule_of_that_function():
    for _ in range(2):
        for act, derivative in ((np.sin, np.cos), (np.tanh, lambda v: 1.0 - np.tanh(v) ** 2)):
            np.testing.assert_allclose(sg.grad(functools.partial(apply_act, act))(X), derivative(X),
                                       rtol=1e-12)
