"""srcgrad in one page: differentiate the seed notebooks' examples and read a
generated gradient.

Run: python3 examples/quickstart.py
"""

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal

import srcgrad as sg

np.set_printoptions(precision=4, suppress=True, floatmode="maxprec_equal")


def abs(x):  # noqa: A001 -- the seed notebook's own name
    if x[0] > 0:
        return x
    else:
        return -x


def product(x):
    result = 1
    for ii in x:
        if ii > 0:
            result = ii * result
    return result


def mul_sum(x, w):
    y = x * w
    z = y.sum()
    return z


def double_until(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def fill(a):
    b = np.zeros((1, 2))
    b[0, 0] = a[0, 0] ** 2 + a[0, 1]
    b[0, 1] = a[0, 1] ** 3 + a[0, 0]
    out = b * 2
    return out


# PyTorch's no_grad, written in the function: `scale` is a constant.
def scaled(x):
    with sg.no_grad():
        scale = np.sum(x)
    return np.sum(x * scale)


hook_seen = []


def print_hook(grad):
    print("hook on y:    dz/dy =", grad)
    hook_seen.append(grad)


def main():
    # A branch on the value: the gradient follows the branch taken.
    g_pos = sg.grad(abs)(np.ones(1))
    g_neg = sg.grad(abs)(-np.ones(1))
    print("abs:          grad at 1 =", g_pos, " grad at -1 =", g_neg)
    assert_array_equal(g_pos, [1.0])
    assert_array_equal(g_neg, [-1.0])

    # A loop over an array's elements: y = x[3] * x[4] * x[5].
    x = np.arange(-2, 4, dtype=np.float64)
    g = sg.grad(product)(x)
    print("product loop: grad =", g)
    assert_array_equal(g, [0, 0, 0, 6, 3, 2])

    # Several gradients at once, and the gradient of an intermediate (wrt a local name).
    gx, gw = sg.grad(mul_sum, wrt=("x", "w"))(np.ones(3), np.ones(3))
    gy = sg.grad(mul_sum, wrt="y")(np.ones(3), np.ones(3))
    print("z = (x*w).sum(): dz/dx =", gx, " dz/dw =", gw, " dz/dy =", gy)
    assert_array_equal(gx, np.ones(3))
    assert_array_equal(gw, np.ones(3))
    assert_array_equal(gy, np.ones(3))

    # A while loop with a data-dependent condition, seeded by grad_outputs.
    x = np.array([1178.3732, 192.4036, 922.6443]) / 512
    g = sg.grad(double_until)(x, grad_outputs=np.array([0.01, 0.1, 1.0]))
    print("while loop:   grad =", g)
    assert_allclose(g, [5.12, 51.2, 512.0])

    # Indexed assignment into a zeros matrix.
    out, g = sg.value_and_grad(fill)(np.array([[2.0, 4.0]]),
                                     grad_outputs=np.array([[1.0, 1.0]]))
    print("indexed:      out =", out, " grad =", g)
    assert_array_equal(out, [[16.0, 132.0]])
    assert_array_equal(g, [[10.0, 98.0]])

    # The PyTorch-like layer (docs/pytorch.md): a no_grad block makes constants,
    # a hook sees an intermediate's gradient during the reverse sweep.
    x = np.array([1.0, 2.0, 3.0])
    g = sg.grad(scaled)(x)
    print("no_grad block: grad =", g)
    assert_array_equal(g, np.full(3, 6.0))
    sg.grad(mul_sum, wrt="w", hooks={"y": print_hook})(np.ones(3), np.ones(3))
    assert len(hook_seen) == 1
    assert_array_equal(hook_seen[0], np.ones(3))

    # The gradient is a program: here it is.
    print()
    print("Generated gradient of product():")
    print(sg.source(product, wrt=0))


if __name__ == "__main__":
    main()
