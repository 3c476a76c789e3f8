"""Lists of instances built inside the differentiated function, then iterated or indexed:
``layers = [Dense(W, b) for W, b in params]; for layer in layers: x = layer(x)``
(transform/instance_lists.py). Each through grad, value_and_grad, jvp, hessian, grad of
grad and jit against central differences; what stays out of reach is refused at its line."""

import dataclasses

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from tests.adversarial_checks import check_all_modes

RNG = np.random.default_rng(5)


class Dense:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        return np.tanh(self.W @ x + self.b)

    def forward(self, x):
        return self(x) * 0.5


class Scale:
    def __init__(self, s):
        self.s = s

    def __call__(self, x):
        return self.s * x


@dataclasses.dataclass
class Affine:
    A: np.ndarray
    c: float

    def __call__(self, x):
        return self.A @ x + self.c


def loop_over_comprehension(v):
    W = np.reshape(v[:4], (2, 2))
    layers = [Dense(W * (k + 1), v[4]) for k in range(3)]
    x = v[2:4]
    for layer in layers:
        x = layer(x)
    return np.sum(x ** 2) + np.sum(layers[1].W) * v[5]


def methods_in_a_loop(v):
    W = np.reshape(v[:4], (2, 2))
    layers = [Dense(W, v[4]), Dense(W.T, v[5])]
    x = v[2:4]
    for layer in layers:
        x = layer.forward(x)
    return np.sum(x ** 3)


def classes_mixed(v):
    W = np.reshape(v[:4], (2, 2))
    layers = [Dense(W, 0.1), Scale(v[4]), Affine(W.T, v[5])]
    x = v[2:4]
    for layer in layers:
        x = layer(x)
    return np.sum(x ** 2) + len(layers)


def a_generator_over_them(v):
    scales = [Scale(v[k]) for k in range(3)]
    return sum(np.sum(s(v[3:]) ** 2) for s in scales)


@pytest.mark.parametrize("f", [loop_over_comprehension, methods_in_a_loop, classes_mixed,
                               a_generator_over_them], ids=lambda f: f.__name__)
def test_every_mode_matches_differences(f):
    v = RNG.normal(size=6)
    check_all_modes(f, v, RNG.normal(size=6), RNG.normal(size=6), fallback=True)


def network(params, x):
    layers = [Dense(W, b) for W, b in params]
    for layer in layers:
        x = layer(x)
    return np.sum(x ** 2)


def test_a_comprehension_over_an_argument_list():
    params = [(RNG.normal(size=(3, 3)), RNG.normal(size=3)) for _ in range(3)]
    x = RNG.normal(size=3)
    got = sg.grad(network)(params, x)
    want = numerical_grad(network, (params, x))
    for (gW, gb), (wW, wb) in zip(got, want):
        np.testing.assert_allclose(gW, wW, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(gb, wb, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sg.grad(network, wrt=1)(params, x),
                               numerical_grad(network, (params, x), wrt=1), rtol=1e-6, atol=1e-9)


def appended(v):
    layers = [Scale(v[0])]
    layers.append(Scale(v[1]))
    x = v[2:]
    for layer in layers:
        x = layer(x)
    return np.sum(x)


def aliased(v):
    layers = [Scale(v[0]), Scale(v[1])]
    other = layers
    other.append(Dense(np.eye(2), v[2]))
    x = v[2:4]
    for layer in layers:
        x = layer(x)
    return np.sum(x)


def indexed_at_run_time(v):
    layers = [Scale(v[0]), Scale(v[1])]
    x = v[2:]
    for i in range(len(layers)):
        x = layers[i](x)
    return np.sum(x)


@pytest.mark.parametrize("f", [appended, aliased, indexed_at_run_time], ids=lambda f: f.__name__)
def test_lists_changed_or_read_out_of_sight_stay_refused(f):
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(f)(RNG.normal(size=4))
    assert "test_instance_lists.py" in str(info.value)
