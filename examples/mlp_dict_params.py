"""A small MLP written as a JAX user writes one: parameters in a dict of lists
of dicts, a forward pass that loops over the layers, a loss that returns the
accuracy as auxiliary data, and the loss as a method of a model class.

Run: python3 examples/mlp_dict_params.py
"""

import numpy as np

import srcgrad as sg


def init_params(rng, sizes):
    """{"layers": [{"W": ..., "b": ...}, ...]}, one dict per layer."""
    return {"layers": [{"W": rng.normal(0.0, 1.0 / np.sqrt(m), (m, n)), "b": np.zeros(n)}
                       for m, n in zip(sizes[:-1], sizes[1:])]}


class MLP:
    def __init__(self, weight_decay):
        self.weight_decay = weight_decay

    def forward(self, params, x):
        *hidden, last = params["layers"]
        for layer in hidden:
            x = np.tanh(x @ layer["W"] + layer["b"])
        return x @ last["W"] + last["b"]

    def loss(self, params, x, labels):
        """Mean softmax cross-entropy plus weight decay; the accuracy rides along."""
        logits = self.forward(params, x)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        nll = -np.mean(np.sum(log_probs * np.eye(logits.shape[1])[labels], axis=1))
        decay = sum(np.sum(layer["W"] ** 2) for layer in params["layers"])
        accuracy = np.mean(np.argmax(logits, axis=1) == labels)
        return nll + self.weight_decay * decay, accuracy


def make_data(rng, n):
    """Three interleaved spirals in the plane, one class each."""
    labels = np.repeat(np.arange(3), n // 3)
    radius = np.tile(np.linspace(0.1, 1.0, n // 3), 3)
    angle = labels * 2 * np.pi / 3 + radius * 3.0 + rng.normal(0.0, 0.15, n)
    x = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return x, labels


def main():
    rng = np.random.default_rng(0)
    x, labels = make_data(rng, 300)
    params = init_params(rng, [2, 32, 32, 3])
    model = MLP(weight_decay=1e-4)

    # With respect to params (the first argument after self), as in JAX:
    # value_and_grad with has_aux gives ((loss, accuracy), grads).
    loss_and_grad = sg.value_and_grad(model.loss, has_aux=True)

    # The gradient of the whole structure against central finite differences.
    small = init_params(np.random.default_rng(1), [2, 4, 3])
    assert sg.gradcheck(model.loss, (small, x[:12], labels[:12]), has_aux=True)
    print("gradcheck on the parameter dict: passed")

    learning_rate = 0.5
    first = None
    for step in range(301):
        (loss, accuracy), grads = loss_and_grad(params, x, labels)
        if step % 50 == 0:
            first = (loss, accuracy) if first is None else first
            print(f"step {step:3d}: loss {loss:.4f}  accuracy {accuracy:.3f}")
        params = {"layers": [{k: layer[k] - learning_rate * g[k] for k in layer}
                             for layer, g in zip(params["layers"], grads["layers"])]}
    loss, accuracy = model.loss(params, x, labels)
    print(f"final:    loss {loss:.4f}  accuracy {accuracy:.3f}")
    assert loss < 0.5 * first[0] and accuracy > first[1] + 0.2, (first, loss, accuracy)

    print("\nGenerated gradient of MLP.loss:")
    print(sg.grad(model.loss, has_aux=True).source)


if __name__ == "__main__":
    main()
