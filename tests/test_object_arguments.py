"""Objects given to a differentiated function: a plain object whose methods it calls
(``loss(w, model)`` with ``model.forward(w, x)``), and callables or objects given by keyword
or as a parameter's default (``def loss(w, x, act=np.tanh)``). They were refused ("no
gradient rule for the method .forward()", "calling the local variable act"). A plain
object is compiled for its class (analysis/argument_keys.ClassKey: its methods inlined, its
attributes read when the gradient runs); a callable for itself, as when passed by position."""

import dataclasses

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from tests.test_plain_classes import RBF   # (an abstract base: ABCMeta is its metaclass)

RNG = np.random.default_rng(5)
X = RNG.normal(size=3)
T = RNG.normal(size=3)


class Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, v):
        return np.sin(v) * self.k

    def twice(self, v):
        return self.scale(v) * 2 + self.k


class Cosine(Scaler):
    def scale(self, v):   # what the base's twice() calls
        return np.cos(v) * self.k


class Stateless:
    def forward(self, v):
        return np.tanh(v) ** 2


class Loss:
    def __call__(self, p, y):
        return np.mean((p - y) ** 2)


def act_fn(v):
    return np.sin(v) + v ** 2


def log_det(x, kernel):
    return np.linalg.slogdet(kernel.gram(x) + np.eye(len(x)))[1]


def uses_method(x, model):
    return np.sum(model.twice(x) ** 2)


def uses_stateless(x, model):
    return np.sum(model.forward(x * 3))


def default_ufunc(x, act=np.tanh):
    return np.sum(act(x) ** 2)


def default_function(x, act=act_fn):
    return np.sum(act(x) ** 2)


def default_callable_object(x, loss=Loss()):
    return loss(x, 1.0)


def default_plain_object(x, model=Scaler(1.5)):
    return np.sum(model.twice(x) ** 2)


def _check_all(f, args):
    want = numerical_grad(f, args)
    np.testing.assert_allclose(sg.grad(f)(*args), want, rtol=1e-6, atol=1e-8)
    _, tangent = sg.jvp(f, tuple(args), (T,) + (None,) * (len(args) - 1))
    assert tangent == pytest.approx(want @ T, rel=1e-6)
    H = sg.hessian(f)(*args)
    step = 1e-5 * T
    moved = (sg.grad(f)(X + step, *args[1:]) - sg.grad(f)(X - step, *args[1:])) / 2e-5
    np.testing.assert_allclose(H @ T, moved, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f, args", [
    (uses_method, (X, Scaler(0.7))), (uses_method, (X, Cosine(1.3))), (uses_stateless, (X, Stateless())),
    (default_ufunc, (X,)), (default_function, (X,)), (default_callable_object, (X,)),
    (default_plain_object, (X,)), (log_det, (X, RBF(0.7)))], ids=lambda v: getattr(v, "__name__", ""))
def test_every_derivative_matches_differences(f, args):
    _check_all(f, args)


def test_attributes_are_read_when_the_gradient_runs():
    model = Scaler(0.7)
    g = sg.grad(uses_method)
    first = g(X, model)
    model.k = 2.0
    np.testing.assert_allclose(g(X, model), numerical_grad(uses_method, (X, model)), rtol=1e-6)
    assert not np.allclose(first, g(X, model))
    model.k = np.array([1.0, 2.0, 3.0])   # a float became an array
    np.testing.assert_allclose(g(X, model), numerical_grad(uses_method, (X, model)), rtol=1e-6)


def test_a_subclass_overriding_a_method_gets_its_own_gradient():
    g = sg.grad(uses_method)
    for model in (Scaler(0.7), Cosine(0.7), Scaler(0.7)):
        np.testing.assert_allclose(g(X, model), numerical_grad(uses_method, (X, model)), rtol=1e-6)


def test_a_new_object_of_the_same_class_compiles_nothing_new():
    g = sg.grad(uses_method)
    for k in (0.5, 1.0, 2.0):
        g(X, Scaler(k))
    assert len(g._by_rank) == 1   # compiled for the class, not for each object


def test_objects_given_by_keyword():
    np.testing.assert_allclose(sg.grad(uses_method)(X, model=Scaler(0.9)),
                               numerical_grad(uses_method, (X, Scaler(0.9))), rtol=1e-6)
    np.testing.assert_allclose(sg.grad(default_ufunc)(X, act=np.sin),
                               numerical_grad(lambda x: np.sum(np.sin(x) ** 2), (X,)), rtol=1e-6)


def test_replacing_a_default_compiles_anew():
    def f(x, act=np.tanh):
        return np.sum(act(x) ** 2)
    g = sg.grad(f)
    np.testing.assert_allclose(g(X), numerical_grad(f, (X,)), rtol=1e-6)
    f.__defaults__ = (np.sin,)
    np.testing.assert_allclose(g(X), numerical_grad(f, (X,)), rtol=1e-6)


def test_a_method_given_a_keyword_only_default_stays_refused_at_the_line():
    def f(x, *, model=Scaler(1.0)):
        return np.sum(model.scale(x))
    with pytest.raises(sg.SrcgradError, match="test_object_arguments.py"):
        sg.grad(f)(X)


@dataclasses.dataclass
class Field:
    w: np.ndarray

    def scale(self, v):
        return np.sin(v) * self.w


@pytest.mark.parametrize("make", [lambda: Scaler(1.0), lambda: Field(np.ones(3))],
                         ids=["plain", "dataclass"])
def test_an_own_attribute_hiding_a_method_is_refused(make):
    """``model.scale = np.exp`` hides the method: Python calls the attribute, the compiled
    code the class's method (it gave the method's gradient, silently)."""
    def f(x, model):
        return np.sum(model.scale(x))
    model = make()
    g = sg.grad(f)
    np.testing.assert_allclose(g(X, model), numerical_grad(f, (X, model)), rtol=1e-6)
    model.scale = np.exp
    with pytest.raises(sg.SrcgradError, match="hides the method"):
        g(X, model)
    del model.scale
    model.other = 2.0   # an attribute hiding nothing
    np.testing.assert_allclose(g(X, model), numerical_grad(f, (X, model)), rtol=1e-6)
