"""Instances of plain classes (an ``__init__`` storing attributes, not a dataclass) built
inside a differentiated function: ``model = MLP(params); model(x)``, as PyTorch users write
it. They were refused ("no gradient rule for the method .f()"); an ``__init__`` that only
stores expressions of its parameters (through ``super().__init__`` too) is built as a
dataclass subclass (transform/plain_classes.py), its methods inlined as a dataclass's."""

import abc
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from tests.plain_classes_typed import asks_the_type

RNG = np.random.default_rng(11)
P = {"W1": RNG.normal(size=(4, 3)), "W2": RNG.normal(size=(2, 4))}
X = RNG.normal(size=3)


class MLP:
    def __init__(self, params, scale=1.0):
        """Two layers."""
        self.W1 = params["W1"]
        self.W2 = params["W2"]
        self.scale = scale

    def hidden(self, x):
        return np.tanh(self.W1 @ x)

    def __call__(self, x):
        return self.scale * self.W2 @ self.hidden(x)


class Base:
    offset = 0.5   # a class attribute that __init__ shadows

    def __init__(self, s):
        self.offset = s * 1.0

    def f(self, x):
        return np.sin(x) * self.offset


class Child(Base):
    def __init__(self, s, t):
        super().__init__(s)
        self.t = t

    def f(self, x):
        return super().f(x) * self.t + x ** 2


class Explicit(Base):
    def __init__(self, s):
        Base.__init__(self, s)
        self.k = s ** 2


def mlp_loss(p, x):
    model = MLP(p)
    return np.sum(model(x) ** 2)


def mlp_scaled(p, x):
    return np.sum(MLP(p, scale=2.0)(x) ** 2) + np.sum(MLP(p).hidden(x))


def child_loss(x, s):
    c = Child(s, 2.0)
    return np.sum(c.f(x)) if isinstance(c, Base) else 0.0


def explicit_loss(x, s):
    e = Explicit(s * 3)   # (an argument read by two fields, computed for each)
    return np.sum(e.f(x)) * e.k


class Activation:   # no __init__ anywhere: an instance with no state
    def __call__(self, x):
        return np.tanh(x) + 0.1 * self.shape(x)

    def shape(self, x):
        return x ** 2


class Softened(Activation):
    def shape(self, x):   # overrides what the base's __call__ calls
        return np.sin(x)


class Kernel(abc.ABC):   # an abstract base (ABCMeta), a concrete subclass built inside
    @abc.abstractmethod
    def k(self, a, b):
        ...

    def gram(self, x):
        return np.array([[self.k(a, b) for b in x] for a in x])


class RBF(Kernel):
    def __init__(self, length):
        self.length = length

    def k(self, a, b):
        return np.exp(-(a - b) ** 2 / self.length)


def kernel_loss(x, s):
    return np.linalg.slogdet(RBF(s).gram(x) + np.eye(3))[1]


def stateless_loss(x, s):
    act = Activation()
    return np.sum(act(x * s) ** 2) + np.sum(Softened()(x)) + np.sum(Softened().shape(x * s))


CASES = [(mlp_loss, (P, X), 1), (mlp_scaled, (P, X), 1), (child_loss, (X, 1.3), 0),
         (child_loss, (X, 1.3), 1), (stateless_loss, (X, 0.8), 0), (stateless_loss, (X, 0.8), 1),
         (kernel_loss, (X, 0.7), 0), (kernel_loss, (X, 0.7), 1)]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_gradients_match_differences(f, args, wrt):
    got = sg.grad(f, wrt=wrt)(*args)
    np.testing.assert_allclose(got, numerical_grad(f, args, wrt=wrt), rtol=1e-6, atol=1e-8)
    hessian = np.reshape(sg.hessian(f, wrt=wrt)(*args), (np.size(args[wrt]),) * 2)
    columns = []
    for k in range(np.size(args[wrt])):   # central differences of the gradient
        step = np.zeros(np.size(args[wrt]))
        step[k] = 1e-5
        moved = [list(args), list(args)]
        moved[0][wrt] = args[wrt] + np.reshape(step, np.shape(args[wrt]))
        moved[1][wrt] = args[wrt] - np.reshape(step, np.shape(args[wrt]))
        columns.append(np.ravel(sg.grad(f, wrt=wrt)(*moved[0]) - sg.grad(f, wrt=wrt)(*moved[1])) / 2e-5)
    np.testing.assert_allclose(hessian, np.array(columns).T, rtol=1e-5, atol=1e-6)


def test_the_dict_of_parameters_gets_its_gradient():
    got = sg.grad(mlp_loss)(P, X)
    want = numerical_grad(mlp_loss, (P, X))
    for k in P:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-8)


def test_an_argument_read_by_two_fields():
    for wrt in (0, 1):
        got = sg.grad(explicit_loss, wrt=wrt)(X, 0.7)
        np.testing.assert_allclose(got, numerical_grad(explicit_loss, (X, 0.7), wrt=wrt),
                                   rtol=1e-6, atol=1e-8)


def test_jit_agrees():
    pytest.importorskip("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(child_loss, wrt=1, jit=True)(X, 1.3)
    assert got == pytest.approx(sg.grad(child_loss, wrt=1)(X, 1.3), rel=1e-12)


class Logged:
    def __init__(self, w):
        print("made")   # an effect: not a plain store
        self.w = w

    def f(self, x):
        return np.sum(self.w * x)


class Branching:
    def __init__(self, w, flip):
        if flip:
            w = -w
        self.w = w

    def f(self, x):
        return np.sum(self.w * x)


class ReadsSelf:
    def __init__(self, w):
        self.w = w
        self.v = self.w * 2

    def f(self, x):
        return np.sum(self.v * x)


class Drawn:
    def __init__(self, w):
        self.w = w
        self.v = w * 2

    def f(self, x):
        return np.sum((self.w + self.v) * x)


def logged(w, x):
    return Logged(w).f(x)


def branching(w, x):
    return Branching(w, True).f(x)


def reads_self(w, x):
    return ReadsSelf(w).f(x)


def drawn(w, x):   # an argument with a call, read by two fields, would be computed twice
    return Drawn(np.exp(w)).f(x)


@pytest.mark.parametrize("f", [logged, branching, reads_self, drawn], ids=lambda f: f.__name__)
def test_other_initialisers_stay_refused_at_the_line(f):
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(f)(X, X)
    assert "test_plain_classes.py" in str(info.value)


class Changing:
    def __init__(self, w):
        self.w = w

    def f(self, x):
        return np.sum(self.w * x)


class ChangingChild(Changing):
    def __init__(self, w):
        super().__init__(w)


def changing_loss(w, x):
    return Changing(w).f(x) + ChangingChild(w).f(x)


def test_replacing_an_init_compiles_anew():
    w, x = np.array([0.5, 0.5]), np.array([1.0, 2.0])
    saved = Changing.__init__
    try:
        np.testing.assert_allclose(sg.grad(changing_loss)(w, x), 2 * x)

        def tripled(self, w):
            self.w = w * 3
        Changing.__init__ = tripled   # the child's super().__init__ reads it too
        np.testing.assert_allclose(sg.grad(changing_loss)(w, x), 6 * x)
    finally:
        Changing.__init__ = saved
    np.testing.assert_allclose(sg.grad(changing_loss)(w, x), 2 * x)


def test_code_asking_the_class_is_not_built_as_a_subclass():
    # (tests/plain_classes_typed.py: the subclass would answer the class check with False,
    # a silently other branch)
    with pytest.raises(sg.SrcgradError):
        sg.grad(asks_the_type)(X, X)


class TupleStored:
    def __init__(self, W, b, scale=2.0):
        self.W, self.b = W, b
        self.scale: float = scale
        self.b, self.shift = self.b_default(), b   # reads self: refused (below)

    def b_default(self):
        return 0.0


class Dense:
    def __init__(self, W, b):
        self.W, self.b = W, b
        self.gain: float = 1.5

    def __call__(self, x):
        return self.gain * np.tanh(self.W @ x + self.b)


def two_dense(v):
    W = np.reshape(v[:4], (2, 2))
    first = Dense(W, v[4:6])
    second = Dense(W.T * v[0], 0.25)
    return np.sum(second(first(v[2:4])) ** 2)


def test_attributes_stored_as_a_tuple_or_annotated():
    """`self.W, self.b = W, b` and `self.gain: float = 1.5` in __init__ are stores of
    the parameters, as `self.W = W` is (grad, jvp, hessian, grad of grad, jit)."""
    from tests.adversarial_checks import check_all_modes
    v = RNG.normal(size=6)
    check_all_modes(two_dense, v, RNG.normal(size=6), RNG.normal(size=6), fallback=True)


def test_a_tuple_store_reading_self_stays_refused():
    def f(W, x):
        return np.sum(TupleStored(W, x).W @ x)
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(f)(np.eye(2), X[:2])
    assert "test_plain_classes.py" in str(info.value)
