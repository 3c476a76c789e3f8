"""Seed notebook 3: gradients of intermediates, retain_graph, repeated backward.

``sg.vjp(f, wrt)(*args)`` runs the forward sweep once and returns the output
and a ``backward`` function: the analogue of PyTorch's graph.  The values the
forward sweep recorded are consumed by the first ``backward`` unless it is
called with ``retain_graph=True``, exactly as in PyTorch.

Run: python3 examples/seed3_hooks_retain_graph.py
"""

import numpy as np
from numpy.testing import assert_array_equal

import srcgrad as sg

np.set_printoptions(precision=4, suppress=True, floatmode="maxprec_equal")


# y = w.mul(x); z = y.sum()
def f(x, w):
    y = w * x
    z = y.sum()
    return z


def main():
    x = np.ones(3)
    w = np.random.default_rng(0).random(3)  # t.rand(3); the gradients do not depend on it

    # The hook that prints y's gradient during backward:
    # needs issue 3 (PyTorch-like layer): sg.register_hook / hooks={"y": fn}.

    # t.autograd.grad(z, y): the gradient with respect to an intermediate.
    gy = sg.grad(f, wrt="y")(x, w)
    print("autograd.grad(z, y):", gy)
    assert_array_equal(gy, np.ones(3))

    # z.backward(retain_graph=True) twice: w.grad accumulates 1, then 2.
    z, backward = sg.vjp(f, wrt="w")(x, w)
    w_grad = backward(retain_graph=True)
    print("retain_graph: w.grad =", w_grad)
    assert_array_equal(w_grad, np.ones(3))
    w_grad = w_grad + backward()
    print("retain_graph: w.grad =", w_grad)
    assert_array_equal(w_grad, np.full(3, 2.0))

    # The second backward() did not retain: a third one is an error.
    try:
        backward()
    except RuntimeError as error:
        print("third backward -> RuntimeError:", error)
    else:
        raise AssertionError("backward after a non-retaining backward must raise")

    # Without retain_graph: rebuild the graph (run the forward again) and
    # backward from the new z; the leaf's gradient still accumulates.
    z, backward = sg.vjp(f, wrt="w")(x, w)
    w_grad = backward()
    print("rebuilt graph: w.grad =", w_grad)
    assert_array_equal(w_grad, np.ones(3))
    z, backward = sg.vjp(f, wrt="w")(x, w)   # y = w.mul(x); z = y.sum()
    w_grad = w_grad + backward()
    print("rebuilt graph: w.grad =", w_grad)
    assert_array_equal(w_grad, np.full(3, 2.0))


if __name__ == "__main__":
    main()
