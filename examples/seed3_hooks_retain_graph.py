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


# hook: called with the gradient, returns nothing (so it changes nothing).
hook_grads = []


def variable_hook(grad):
    print("hook梯度输出 (hook gradient output):", grad)
    hook_grads.append(grad)


# The same function with the hook registered in the code, as y.register_hook
# does in the notebook.
def f_hooked(x, w):
    y = w * x
    sg.register_hook(y, variable_hook)
    z = y.sum()
    return z


def main():
    x = np.ones(3)
    w = np.random.default_rng(0).random(3)  # t.rand(3); the gradients do not depend on it

    # The two ways to see dz/dy, side by side.
    # 1. A hook: y.register_hook(variable_hook); z.backward(retain_graph=True).
    #    The hook fires during the reverse sweep with y's complete gradient.
    z, backward = sg.vjp(f_hooked, wrt="w")(x, w)
    w_grad = backward(retain_graph=True)
    assert len(hook_grads) == 1
    assert_array_equal(hook_grads[0], np.ones(3))
    assert_array_equal(w_grad, x)
    #    The same hook passed from outside (it belongs to this gradient only,
    #    so there is nothing to hook_handle.remove() afterwards):
    sg.grad(f, wrt="w", hooks={"y": variable_hook})(x, w)
    assert len(hook_grads) == 2
    assert_array_equal(hook_grads[1], np.ones(3))

    # 2. t.autograd.grad(z, y): the gradient with respect to an intermediate.
    gy = sg.grad(f, wrt="y")(x, w)
    print("autograd.grad输出 (autograd.grad(z, y)):", (gy,))
    assert_array_equal(gy, np.ones(3))
    assert_array_equal(gy, hook_grads[0])

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
