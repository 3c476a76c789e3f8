"""Seed notebook 0: Variable, grad_fn, gradients through Python control flow.

The notebook (PyTorch 0.3, ``torch.autograd.Variable``) records a graph while the
code runs and walks it backwards.  srcgrad instead reads the function once and
writes its gradient as a second Python function; ``sg.grad`` compiles it and
calls it.  Every number printed here is the one the notebook prints.

Run: python3 examples/seed0_variable_grad_fn.py
"""

import numpy as np
from numpy.testing import assert_array_equal

import srcgrad as sg

np.set_printoptions(precision=4, suppress=True, floatmode="maxprec_equal")


# In[2]: z = w * x + b.  PyTorch shows z.grad_fn (an AddBackward node); the
# srcgrad analogue of grad_fn is the generated gradient source itself.
def linear1(x, w, b):
    y = w * x
    z = y + b
    return z


# In[4]: abs with an `if` on the value.  `x.data[0]` is just `x[0]`: a
# comparison never carries a gradient, so no detach is needed.
def abs(x):  # noqa: A001 -- the notebook's own name
    if x[0] > 0:
        return x
    else:
        return -x


# In[6]: a product over the positive elements, y = x[3] * x[4] * x[5].
def f(x):
    result = 1
    for ii in x:
        if ii > 0:
            result = ii * result
    return result


# In[7], In[11]: y = x * w, z = y.sum().
def mul(x, w):
    y = x * w
    return y


def mul_sum(x, w):
    y = x * w
    z = y.sum()
    return z


# In[8]: x = V(t.ones(1), volatile=True) switched gradients off for everything
# computed from x, even y = x * w with w.requires_grad.  srcgrad has no flags on
# arrays: the same is said in the code, with a no_grad block (or a detach of
# the result).  What it computes is a constant.
def mul_volatile(x, w):
    with sg.no_grad():
        y = x * w
    return y


def mul_detached(x, w):
    y = sg.detach(x * w)
    return y


# In[16]: a hook that prints y's gradient during the backward pass.  The
# notebook registers it with y.register_hook(variable_hook); in srcgrad the
# call is written in the function, or passed from outside as hooks={"y": ...}.
hook_grads = []


def variable_hook(grad):
    print("In[16] hook: y的梯度 (y.grad) =", grad)
    hook_grads.append(grad)


def mul_sum_hooked(x, w):
    y = x * w
    sg.register_hook(y, variable_hook)
    z = y.sum()
    return z


# In[18], In[19]: y = x**2 + x*2.
def poly(x):
    y = x ** 2 + x * 2
    return y


def poly_sum(x):
    y = x ** 2 + x * 2
    z = y.sum()
    return z


def main():
    # In[2]: the notebook draws b and w at random and prints no numbers; we
    # fix them.  dz/dw = x = 1 and dz/db = 1 whatever their values.
    x = np.ones(1)
    b = np.array([0.3])
    w = np.array([0.7])
    dw, db = sg.grad(linear1, wrt=("w", "b"))(x, w, b)
    print("In[2]  z = w*x + b: dz/dw =", dw, " dz/db =", db)
    assert_array_equal(dw, [1.0])
    assert_array_equal(db, [1.0])

    # In[4], In[5]: the branch taken is recorded; the gradient follows it.
    g = sg.grad(abs)(np.ones(1))
    print("In[4]  abs(x), x = 1:  x.grad =", g)
    assert_array_equal(g, [1.0])
    g = sg.grad(abs)(-1 * np.ones(1))
    print("In[5]  abs(x), x = -1: x.grad =", g)
    assert_array_equal(g, [-1.0])

    # In[6]: torch.arange(-2, 4) was a FloatTensor in PyTorch 0.3; in NumPy we
    # ask for floats (an integer array cannot be differentiated).
    x = np.arange(-2, 4, dtype=np.float64)
    g = sg.grad(f)(x)
    print("In[6]  product loop over", x, ": x.grad =", g)
    assert_array_equal(g, [0, 0, 0, 6, 3, 2])

    # In[7]: requires_grad, known statically: which variables depend on w.
    active = sg.active_variables(mul, wrt="w")
    flags = ("x" in active, "w" in active, "y" in active)
    print("In[7]  x, w, y depend on w (requires_grad):", flags)
    assert flags == (False, True, True)

    # In[8]: volatile=True: y no longer requires grad, although w does.
    for fn in (mul_volatile, mul_detached):
        active = sg.active_variables(fn, wrt="w")
        flags = ("x" in active, "w" in active, "y" in active)
        print("In[8]  volatile (%s): x, w, y requires_grad:" % fn.__name__, flags)
        assert flags == (False, True, False)
    # sg.detach(x) * w alone would not do: y still depends on w.  volatile
    # "wins" over requires_grad, so it is the result that must be constant.

    # In[11], In[12]: gradients of the leaves x and w.
    x = np.ones(3)
    w = np.ones(3)
    gx, gw = sg.grad(mul_sum, wrt=(0, 1))(x, w)
    print("In[12] z = (x*w).sum(): x.grad =", gx, " w.grad =", gw)
    assert_array_equal(gx, np.ones(3))
    assert_array_equal(gw, np.ones(3))
    # y.grad is None in PyTorch: intermediate gradients are not kept.  In
    # srcgrad, ask for one by name.

    # In[13]: t.autograd.grad(z, y), which the notebook's old PyTorch lacked.
    w = np.random.default_rng(0).random(3)
    gy = sg.grad(mul_sum, wrt="y")(x, w)
    print("In[13] autograd.grad(z, y): dz/dy =", gy)
    assert_array_equal(gy, np.ones(3))

    # In[16]: the hook prints y's gradient, [1, 1, 1], during the backward pass.
    x = np.ones(3)
    gx, gw = sg.grad(mul_sum_hooked, wrt=("x", "w"))(x, w)
    assert len(hook_grads) == 1
    assert_array_equal(hook_grads[0], np.ones(3))
    assert_array_equal(gx, w)
    # The same hook given from outside the function: no hook_handle.remove()
    # is needed afterwards, it belongs to this gradient function only.
    sg.grad(mul_sum, wrt=("x", "w"), hooks={"y": variable_hook})(x, w)
    assert len(hook_grads) == 2
    assert_array_equal(hook_grads[1], np.ones(3))

    # In[18]: backward from the scalar z.
    x = np.arange(0, 3, dtype=np.float64)
    g = sg.grad(poly_sum)(x)
    print("In[18] z = (x**2 + x*2).sum(): x.grad =", g)
    assert_array_equal(g, [2, 4, 6])

    # In[19]: backward from the vector y with dz/dy = [1, 1, 1] as the seed.
    # The notebook's PyTorch 0.3 failed here (it wanted a Tensor, not a
    # Variable); srcgrad takes the seed as grad_outputs.
    g = sg.grad(poly)(x, grad_outputs=np.array([1.0, 1.0, 1.0]))
    print("In[19] y.backward([1, 1, 1]): x.grad =", g)
    assert_array_equal(g, [2, 4, 6])

    # Without a seed, a vector output is an error, as in PyTorch.
    try:
        sg.grad(poly)(x)
    except ValueError as error:
        print("In[19] y.backward() without a seed -> ValueError:", error)
    else:
        raise AssertionError("a non-scalar output without grad_outputs must raise")

    # torch.arange(0, 3) today is an integer tensor, which cannot require grad.
    try:
        sg.grad(poly_sum)(np.arange(0, 3))
    except TypeError as error:
        print("integer input -> TypeError:", error)
    else:
        raise AssertionError("an integer input must raise TypeError")

    # grad_fn, srcgrad style: the gradient of In[2] is a program you can read.
    print()
    print("Generated gradient of linear1 with respect to w:")
    print(sg.source(linear1, wrt="w"))


if __name__ == "__main__":
    main()
