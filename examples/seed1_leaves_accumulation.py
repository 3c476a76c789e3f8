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

    # In[30], In[37], In[33]: torch.no_grad() and torch.set_grad_enabled().
    # needs issue 3 (PyTorch-like layer): sg.no_grad / sg.set_grad_enabled.


if __name__ == "__main__":
    main()
