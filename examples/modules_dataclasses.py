"""A model made of modules, as Equinox (or PyTorch's nn.Module) users write one: each layer a
dataclass with ``__call__``, a model holding a list of layers of two classes, a property
computing a positive scale from a raw parameter, and the training step written with
``sg.tree_map``. The gradient has the model's structure.

Run: python3 examples/modules_dataclasses.py
"""

import dataclasses

import numpy as np

import srcgrad as sg


@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return x @ self.w + self.b


@dataclasses.dataclass
class ScaledTanh:
    raw_scale: np.ndarray

    @property
    def scale(self):
        """Positive: a softplus of the raw parameter."""
        return np.log1p(np.exp(self.raw_scale))

    def __call__(self, x):
        return np.tanh(x * self.scale)


@dataclasses.dataclass
class Model:
    layers: list

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def init(rng, sizes):
    layers = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        layers.append(Linear(rng.normal(0.0, 1.0 / np.sqrt(m), (m, n)), np.zeros(n)))
        layers.append(ScaledTanh(np.zeros(n)))
    return Model(layers[:-1])   # no activation after the last layer


def loss(model, x, y):
    error = model(x)[:, 0] - y
    decay = sum(np.sum(w ** 2) for w in sg.tree_leaves(model))
    return np.mean(error ** 2) + 1e-4 * decay


def main():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2.0, 2.0, (200, 1))
    y = np.sin(2.0 * x[:, 0])
    model = init(rng, [1, 16, 16, 1])

    small = init(np.random.default_rng(1), [1, 3, 1])
    assert sg.gradcheck(loss, (small, x[:8], y[:8]))
    print("gradcheck on the model: passed")

    value_and_grad = sg.value_and_grad(loss)
    first = None
    for step in range(401):
        value, grads = value_and_grad(model, x, y)
        first = value if first is None else first
        if step % 100 == 0:
            print(f"step {step:3d}: loss {value:.4f}")
        model = sg.tree_map(lambda p, g: p - 0.05 * g, model, grads)
    print(f"final:    loss {loss(model, x, y):.4f}")
    assert loss(model, x, y) < 0.25 * first
    print("gradient of the model:", type(grads).__name__, [type(layer).__name__ for layer in grads.layers])

    print("\nGenerated gradient of loss:")
    print(sg.source(loss, args=(small, x[:8], y[:8])))


if __name__ == "__main__":
    main()
