"""Seed notebook 4: autograd.backward, autograd.grad with grad_outputs,
nn.Linear, and custom Functions (ctx.save_for_backward, ctx.saved_tensors,
ctx.mark_non_differentiable, once_differentiable).

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


# The notebook's second Func, as a custom sg.Function: srcgrad does not read
# forward or backward; the generated gradient calls backward in its reverse
# sweep.  z is not an array: it is kept on ctx, and its gradient is None.
class Func(sg.Function):
    @staticmethod
    def forward(ctx, x, y, z):
        w = x * z
        out = x * y + y * z + w * y
        ctx.save_for_backward(x, y, w, out)
        ctx.z = z  # z is not a tensor
        return out

    @staticmethod
    @sg.once_differentiable
    def backward(ctx, grad_out):
        x, y, w, out = ctx.saved_tensors
        z = ctx.z
        gx = grad_out * (y + y * z)
        gy = grad_out * (x + z + w)
        gz = None
        return gx, gy, gz


def use_func(a, b, c):
    d = Func.apply(a, b, c)
    return d


# The notebook's first Func: sort, with the indices marked non-differentiable.
# backward still receives a gradient for idx (zeros) and must accept it.
# torch's grad_input.index_add_(0, idx, g1) is np.add.at(grad_input, idx, g1).
class Sort(sg.Function):
    @staticmethod
    def forward(ctx, x):
        idx = np.argsort(x)
        sorted_x = x[idx]
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, idx)
        return sorted_x, idx

    @staticmethod
    @sg.once_differentiable
    def backward(ctx, g1, g2):  # still need to accept g2
        x, idx = ctx.saved_tensors
        grad_input = np.zeros_like(x)
        np.add.at(grad_input, idx, g1)
        return grad_input


def use_sort(x):
    sorted_x, idx = Sort.apply(x)
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

    # The same with the notebook's hand-written backward: Func.apply(a, b, c).
    # Outside a differentiated function, apply just runs forward:
    d = Func.apply(1.0, 2.0, 4)
    print("Func.apply(a, b, c): d =", d)
    assert d == 18.0
    # Inside one, the gradient calls Func.backward:
    value, (ga, gb) = sg.value_and_grad(use_func, wrt=(0, 1))(1.0, 2.0, 4)
    print("Func.apply in sg.grad: d =", value, " a.grad =", ga, " b.grad =", gb)
    assert value == 18.0 and ga == 10.0 and gb == 9.0
    # once_differentiable: the backward cannot be differentiated again.
    try:
        sg.grad(sg.grad(use_func, wrt=0), wrt=0)(1.0, 2.0, 4)
    except sg.SrcgradError as error:
        print("grad of grad through once_differentiable ->", type(error).__name__)
        assert "once_differentiable" in str(error)
    else:
        raise AssertionError("differentiating a once_differentiable backward must raise")

    # The sort Func: the gradient of the sorted values is scattered back to
    # where each value came from.
    x = np.array([3.0, 1.0, 2.0])
    s, g = sg.value_and_grad(sort_values)(x, grad_outputs=np.array([1.0, 2.0, 3.0]))
    print("sort: sorted =", s, " x.grad =", g)
    assert_array_equal(s, [1, 2, 3])
    assert_array_equal(g, [3, 1, 2])
    # The same with the notebook's Sort Function (mark_non_differentiable(idx),
    # index_add_ in backward):
    s, idx = Sort.apply(x)
    print("Sort.apply: sorted =", s, " idx =", idx)
    assert_array_equal(s, [1, 2, 3])
    assert_array_equal(idx, [1, 2, 0])
    s, g = sg.value_and_grad(use_sort)(x, grad_outputs=np.array([1.0, 2.0, 3.0]))
    print("Sort Function: sorted =", s, " x.grad =", g)
    assert_array_equal(s, [1, 2, 3])
    assert_array_equal(g, [3, 1, 2])


if __name__ == "__main__":
    main()
