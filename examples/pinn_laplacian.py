"""A physics-informed loss as a JAX user writes one: the network's second derivative
taken with ``sg.hessian`` inside the loss, the loss differentiated with respect to the
weights (one array: a third derivative through a dict of parameters is refused), and a
few steps of gradient descent. The network should learn u'' = -u with
u(0) = 0 and u'(0) = 1, whose solution is sin(x).

Run: python3 examples/pinn_laplacian.py
"""

import numpy as np

import srcgrad as sg
from srcgrad.testing import numerical_grad


def u(x, weights):
    """A one-hidden-layer network of a scalar x; ``weights`` holds its rows a, w, b."""
    return np.sum(weights[0] * np.tanh(weights[1] * x + weights[2]))


def loss(weights, xs):
    """The ODE's residual at the collocation points, plus the two initial conditions."""
    residual = 0.0
    for x in xs:
        residual = residual + (sg.hessian(u)(x, weights) + u(x, weights)) ** 2
    start = 0.0
    slope = sg.grad(u)(start, weights)
    return residual / len(xs) + u(start, weights) ** 2 + (slope - 1.0) ** 2


def main():
    rng = np.random.default_rng(0)
    weights = rng.normal(0.0, 1.0, (3, 8)) * np.array([[0.5], [1.0], [1.0]])
    xs = np.linspace(0.0, 2.0, 6)

    error = np.max(np.abs(sg.grad(loss)(weights, xs) - numerical_grad(loss, (weights, xs))))
    print("gradient check: max |srcgrad - finite differences| =", f"{error:.1e}")
    assert error < 1e-6

    step = sg.value_and_grad(loss)
    first, _ = step(weights, xs)
    for _ in range(150):
        value, g = step(weights, xs)
        weights = weights - 0.05 * g
    last, _ = step(weights, xs)
    print(f"loss: {first:.4f} -> {last:.4f}")
    print("loss went down:", last < first)
    assert last < first
    grid = np.array([0.5, 1.0, 1.5])
    print("u(x) at", grid, "=", np.round([u(x, weights) for x in grid], 3), "(sin:", np.round(np.sin(grid), 3), ")")


if __name__ == "__main__":
    main()
