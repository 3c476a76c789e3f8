"""Seed notebook 1: leaves, gradient accumulation, resetting gradients.

PyTorch adds every backward pass into ``leaf.grad``.  srcgrad is functional:
each call returns a fresh gradient, and accumulating is an explicit ``+``.
Resetting (``a.grad = None``) is then simply not adding.

Run: python3 examples/seed1_leaves_accumulation.py
"""

import numpy as np
from numpy.testing import assert_array_equal

import srcgrad as sg

np.set_printoptions(precision=4, suppress=True, floatmode="maxprec_equal")


# In[4]: t = a + b; y = t.sum().
def add_sum(a, b):
    t = a + b
    y = t.sum()
    return y


# In[56]: y = w * a; t = y + b; z = t.sum().
def affine_sum(a, b, w):
    y = w * a
    t = y + b
    z = t.sum()
    return z


# In[30]: t computed inside torch.no_grad() has no grad_fn.  In srcgrad the
# block is written in the function: what it computes is a constant.
def add_sum_no_grad(a, b):
    with sg.no_grad():
        c = a + b
        t = c.sum()
    return t


# In[33]: torch.set_grad_enabled(flag), with the flag known only at run time.
def add_sum_mode(a, b, enabled):
    with sg.set_grad_enabled(enabled):
        c = a + b
        t = c.sum()
    return t


def main():
    # In[3] - In[6]
    a = np.full((3, 3), 1, dtype=np.float32)
    b = np.full((3, 3), 2, dtype=np.float32)
    ga, gb = sg.grad(add_sum, wrt=("a", "b"))(a, b)
    print("In[6]  a.grad =\n", ga, sep="")
    print("In[6]  b.grad =\n", gb, sep="")
    assert ga.dtype == np.float32 and gb.dtype == np.float32
    assert_array_equal(ga, np.ones((3, 3)))
    assert_array_equal(gb, np.ones((3, 3)))
    # t.grad is None in PyTorch (not a leaf); srcgrad gives it when asked.
    gt = sg.grad(add_sum, wrt="t")(a, b)
    print("In[6]  dy/dt (t.grad, asked for by name) =\n", gt, sep="")
    assert_array_equal(gt, np.ones((3, 3)))

    # In[50], In[56]: a = 1, b = 2, w = 2.
    a = np.full((2, 2), 1, dtype=np.float32)
    b = np.full((2, 2), 2, dtype=np.float32)
    w = np.full((2, 2), 2, dtype=np.float32)
    grad = sg.grad(affine_sum, wrt=("a", "b", "w"))

    # One backward pass: dz/da = w = 2, dz/db = 1, dz/dw = a = 1.
    ga, gb, gw = grad(a, b, w)
    print("In[56] one pass: a.grad =", ga.ravel(), " b.grad =", gb.ravel(),
          " w.grad =", gw.ravel())
    assert_array_equal(ga, np.full((2, 2), 2))
    assert_array_equal(gb, np.full((2, 2), 1))
    assert_array_equal(gw, np.full((2, 2), 1))

    # The notebook prints a.grad = 10, b.grad = 5, w.grad = 5: its cell In[56]
    # was run five times, and PyTorch added each pass into the leaves' .grad
    # (5 * 2 = 10, 5 * 1 = 5).  The same, with the accumulation written out:
    acc = (0, 0, 0)
    for run in range(5):
        acc = tuple(total + g for total, g in zip(acc, grad(a, b, w)))
    ga, gb, gw = acc
    print("In[56] after 5 runs:\n a.grad =\n", ga, "\n b.grad =\n", gb,
          "\n w.grad =\n", gw, sep="")
    assert_array_equal(ga, np.full((2, 2), 10))
    assert_array_equal(gb, np.full((2, 2), 5))
    assert_array_equal(gw, np.full((2, 2), 5))

    # In[15]: gradient accumulation: None, then 1, then 2.
    a = np.full((2, 2), 1, dtype=np.float32)
    b = np.full((2, 2), 2, dtype=np.float32)
    grad_a = sg.grad(add_sum, wrt="a")
    a_grad = None
    print("In[15] a.grad =", a_grad)
    a_grad = grad_a(a, b)                 # first backward
    print("In[15] a.grad =\n", a_grad, sep="")
    assert_array_equal(a_grad, np.ones((2, 2)))
    a_grad = a_grad + grad_a(a, b)        # second backward adds into .grad
    print("In[15] a.grad =\n", a_grad, sep="")
    assert_array_equal(a_grad, np.full((2, 2), 2))

    # In[25]: a.grad = None resets: the second pass starts from nothing.
    a_grad = None
    print("In[25] a.grad =", a_grad)
    a_grad = grad_a(a, b)
    print("In[25] a.grad =\n", a_grad, sep="")
    a_grad = None                         # a.grad = None
    a_grad = grad_a(a, b)
    print("In[25] a.grad =\n", a_grad, sep="")
    assert_array_equal(a_grad, np.ones((2, 2)))

    # In[30]: with torch.no_grad(): c = a + b; t = c.sum(); t.backward() fails
    # with "element 0 of tensors does not require grad and does not have a
    # grad_fn".  In srcgrad, t computed in a no_grad block is a constant, so
    # it has no gradient with respect to a:
    try:
        grad_a_no_grad = sg.grad(add_sum_no_grad, wrt="a")
        grad_a_no_grad(a, b)
    except RuntimeError as error:
        print("In[30] t from a no_grad block: t.backward() -> RuntimeError:", error)
    else:
        raise AssertionError("a gradient of a no_grad result must raise")
    # ... and asking for a gradient while grad mode is off fails with
    # PyTorch's own message:
    with sg.no_grad():
        try:
            grad_a(a, b)
        except RuntimeError as error:
            print("In[30] backward inside sg.no_grad() -> RuntimeError:", error)
            assert "element 0 of tensors does not require grad" in str(error)
        else:
            raise AssertionError("a gradient asked for inside no_grad must raise")
    # c1 = a + b; t1 = c1.sum(); t1.backward(): outside the block, as usual.
    a_grad = grad_a(a, b)
    print("In[30] a.grad =\n", a_grad, sep="")
    assert_array_equal(a_grad, np.ones((2, 2)))

    # In[37]: "grad mode is about computing, not about backward": the graph
    # built with grad on can be walked back inside no_grad.  A backward
    # obtained from sg.vjp before the block still works inside it.
    t, backward = sg.vjp(add_sum, wrt="a")(a, b)
    with sg.no_grad():
        a_grad = backward()
    print("In[37] a.grad =\n", a_grad, sep="")
    assert_array_equal(a_grad, np.ones((2, 2)))

    # In[33]: set_grad_enabled(True) then set_grad_enabled(False).
    a_grad = grad_a(a, b)                 # first backward
    print("In[33] a.grad =\n", a_grad, sep="")
    assert_array_equal(a_grad, np.ones((2, 2)))
    with sg.set_grad_enabled(True):
        a_grad = a_grad + grad_a(a, b)    # accumulates
        print("In[33] a.grad =\n", a_grad, sep="")
    assert_array_equal(a_grad, np.full((2, 2), 2))
    with sg.set_grad_enabled(False):
        try:
            a_grad = a_grad + grad_a(a, b)
        except RuntimeError as error:
            print("In[33] backward with set_grad_enabled(False) -> RuntimeError:", error)
        else:
            raise AssertionError("a gradient asked for with grad disabled must raise")
    print("In[33] a.grad (unchanged) =\n", a_grad, sep="")
    assert_array_equal(a_grad, np.full((2, 2), 2))
    assert sg.is_grad_enabled()

    # The same switch inside the function, with the flag a run-time value:
    # with it off, t is a constant and a's gradient is zero (asked for as
    # zeros, materialize_grads=True, instead of an error).
    grad_mode = sg.grad(add_sum_mode, wrt="a", materialize_grads=True)
    on = grad_mode(a, b, True)
    off = grad_mode(a, b, False)
    print("In[33] set_grad_enabled(True) in f:  a.grad =", on.ravel())
    print("In[33] set_grad_enabled(False) in f: a.grad =", off.ravel())
    assert_array_equal(on, np.ones((2, 2)))
    assert_array_equal(off, np.zeros((2, 2)))


if __name__ == "__main__":
    main()
