"""Seed notebook 4: autograd.backward, autograd.grad with grad_outputs,
nn.Linear, and the maths of a custom Function written as a plain function.

Run: python3 examples/seed4_grad_outputs_function.py
"""

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal

import srcgrad as sg

np.set_printoptions(precision=4, suppress=True, floatmode="maxprec_equal")


# out = x.pow(2).mul(3); out = out.sum()
def pow_mul_sum(x):
    out = x ** 2 * 3
    out = out.sum()
    return out


# y = x.pow(2)
def square(x):
    y = x ** 2
    return y


# nn.Linear(3, 2): y = x @ W.T + b
def linear(x, W, b):
    y = x @ W.T + b
    return y


# The forward of the notebook's custom Func, as a plain function: srcgrad
# differentiates it directly, no hand-written backward needed.
def func(x, y, z):
    w = x * z
    out = x * y + y * z + w * y
    return out


# The forward of the notebook's first Func (sort, with the indices marked
# non-differentiable): argsort gives constants, indexing by them is a gather.
def sort_values(x):
    idx = np.argsort(x)
    sorted_x = x[idx]
    return sorted_x


def main():
    # torch.autograd.backward(out)
    x = np.array([1.0, 2.0, 3.0])
    g = sg.grad(pow_mul_sum)(x)
    print("autograd.backward: x.grad =", g)
    assert_array_equal(g, [6, 12, 18])

    # torch.autograd.grad((y,), (x,), grad_outputs=ones_like(y)): a tuple wrt
    # gives a tuple of gradients.
    y = square(x)
    z = sg.grad(square, wrt=(0,))(x, grad_outputs=np.ones_like(y))
    print("autograd.grad(y, x, grad_outputs=ones):", z)
    assert isinstance(z, tuple) and len(z) == 1
    assert_array_equal(z[0], [2, 4, 6])

    # nn.Linear(3, 2) draws W and b at random.  We fix them so that the
    # printed numbers are the notebook's: W's column sums are exactly
    # [0.6039, 0.2139, -0.9551] (the gradient with a seed of ones is
    # W.sum(axis=0)), and b makes y = [-1.0743, -0.7277].
    W = np.array([[0.5, -0.1, -0.3],
                  [0.1039, 0.3139, -0.6551]])
    b = np.array([-0.4743, 0.5059])
    y, gx = sg.value_and_grad(linear, wrt="x")(x, W, b, grad_outputs=np.ones(2))
    print("Linear: y =", y)
    print("Linear: autograd.grad(y, x, grad_outputs=ones):", gx)
    assert_allclose(y, [-1.0743, -0.7277], atol=1e-12)
    assert_allclose(gx, [0.6039, 0.2139, -0.9551], atol=1e-12)
    assert_allclose(gx, W.sum(axis=0))

    # Func.apply(a, b, c) with a = 1, b = 2, c = 4 (c is not differentiated):
    # out = 1*2 + 2*4 + (1*4)*2 = 18, d/da = b + b*c = 10, d/db = a + c + w = 9.
    value, (ga, gb) = sg.value_and_grad(func, wrt=(0, 1))(1.0, 2.0, 4)
    print("Func as a plain function: d =", value, " a.grad =", ga, " b.grad =", gb)
    assert value == 18.0 and ga == 10.0 and gb == 9.0
    assert isinstance(ga, float) and isinstance(gb, float)

    # The same with a hand-written backward (sg.Function, ctx.save_for_backward,
    # a non-array argument, once_differentiable):
    # needs issue 3 (PyTorch-like layer): sg.Function.

    # The sort Func: the gradient of the sorted values is scattered back to
    # where each value came from.
    x = np.array([3.0, 1.0, 2.0])
    s, g = sg.value_and_grad(sort_values)(x, grad_outputs=np.array([1.0, 2.0, 3.0]))
    print("sort: sorted =", s, " x.grad =", g)
    assert_array_equal(s, [1, 2, 3])
    assert_array_equal(g, [3, 1, 2])
    # With ctx.mark_non_differentiable(idx) in a custom Function:
    # needs issue 3 (PyTorch-like layer): sg.Function.


if __name__ == "__main__":
    main()
