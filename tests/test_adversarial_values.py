"""Adversarial programs on the value model, in reverse mode (sg.grad) and forward mode (sg.jvp).

Each program either gets the gradient (the tangent) that central differences in float64
give, or is refused with an error naming this file and the line; a number that is
wrong, or any other exception, fails. Programs are called on deep copies of their
arguments, since some write into them. Families: an item of a list or dict updated in
place (``lst[0] *= 2`` changes the array ``lst[0]`` holds, and every name holding it),
in-place updates through names that alias others (forward mode ran them as new arrays),
and arguments that share memory with an argument written into.
"""

import copy
import re

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree

CASES = []


def case(*args, grad="ok", jvp="ok"):
    """Register a program: ``grad``/``jvp`` say what each mode must do ("ok": the right
    numbers, "refuse": a located SrcgradError)."""
    def register(f):
        CASES.append((f, args, grad, jvp))
        return f
    return register


X = np.array([1.0, 2.0, 3.0, 4.0])


# ---- an item of a list or dict updated in place: the array it holds changes
@case(X, grad="refuse", jvp="refuse")
def list_item_imul_reaches_its_array(x):
    y = x * 1.0
    lst = [y]
    lst[0] *= 2.0
    return np.sum(y * x)


@case(X, grad="refuse", jvp="refuse")
def dict_item_iadd_reaches_its_array(x):
    y = x * 1.0
    d = {"a": y}
    d["a"] += x
    return np.sum(y * x)


@case(X, grad="refuse", jvp="refuse")
def list_item_view_imul_reaches_its_base(x):
    y = x * 1.0
    lst = [y[1:], y]
    lst[0] *= 2.0
    return np.sum(y ** 2)


@case(X, grad="refuse", jvp="refuse")
def list_holding_one_array_twice(x):
    y = x * 1.0
    lst = [y, y]
    lst[0] += x
    return np.sum(lst[1] * x)


@case(X, grad="refuse", jvp="refuse")
def dict_holding_an_array_and_its_view(x):
    y = x * 1.0
    d = {"a": y, "b": y[1:]}
    d["a"] *= 2.0
    return np.sum(d["b"] * x[1:])


@case(X, grad="refuse", jvp="refuse")
def list_named_twice_number_item_updated(x):
    a = [x * 1.0, x[0]]
    b = a
    a[1] += x[1]
    return np.sum(b[0]) * b[1]


@case(X)
def list_items_of_their_own(x):
    lst = [x * 1.0, x * 2.0]
    lst[0] += x
    lst[-1] *= lst[0]
    return np.sum(lst[1] * x)


@case(X)
def list_number_items_rebound(x):
    lst = [x[0], x[1]]
    lst[0] += lst[1] * 3.0
    a = lst[0]
    lst[0] *= 2.0
    return a + lst[0]


@case([np.array([1.0, 2.0]), np.array([3.0, 4.0])], jvp=None)
def argument_list_item_updated(ps):
    ps[0] += ps[1]
    return np.sum(ps[0] * ps[1])


@case([np.array([1.0, 2.0]), np.array([3.0, 4.0])], grad="refuse", jvp=None)
def argument_list_item_updated_while_held(ps):
    a = ps[0]
    ps[0] += ps[1]
    return np.sum(ps[0] * a)


# ---- v op= e through a name that aliases another (forward mode ran v = v op e)
@case(X, grad="refuse", jvp="refuse")
def view_of_argument_updated(x):
    v = x[::2]
    v *= 2.0
    return np.sum(x ** 2)


@case(X, grad="refuse", jvp="refuse")
def asarray_updated(x):
    y = x * 2.0
    z = np.asarray(y)
    z += 1.0
    return np.sum(y * y)


@case(X, grad="refuse", jvp="refuse")
def unpacked_item_updated(x):
    y = x * 1.0
    a, b = [y, x]
    a *= b
    return np.sum(y * x)


@case(X, grad="refuse", jvp="refuse")
def loop_item_updated(x):
    y = x * 1.0
    z = x * 2.0
    for v in [y, z]:
        v += x
    return np.sum(y * z)


@case(X, grad="refuse", jvp="refuse")
def dict_get_updated(x):
    y = x * 1.0
    w = {"k": y}.get("k")
    w *= 3.0
    return np.sum(y * x)


@case(X, grad="refuse", jvp="refuse")
def helper_updates_its_argument(x):
    def bump(a):
        a += 1.0
    y = x * 2.0
    bump(y)
    return np.sum(y * x)


@case(X)
def slices_of_one_array_updated(x):
    y = x * 1.0
    y[::2] += y[1::2]
    y[-1] *= y[0]
    y[[0, 0, 2]] *= 3.0
    return np.sum(y ** 2)


@case(X, grad="refuse")
def view_written_after_it_was_taken(x):
    y = x * 1.0
    v = y[1:]
    v[0] = x[0] * 5.0
    return np.sum(y * y)


@case(X, grad="refuse", jvp="refuse")
def constant_written_through_a_view(x):
    y = np.zeros(4)
    v = y[:2]
    v[0] = x[2] ** 2
    np.copyto(v[1:], x[3:] * 3.0)
    return np.sum(y * x)


G = np.ones(4)


@case(X)
def global_array_written_into(x):
    G[0] = x[0] * 2.0
    return np.sum(G * x)


def _fd(f, args, wrt=0, eps=1e-6):
    """Central differences of f's scalar output in each leaf of args[wrt], f run on copies."""
    base = args[wrt]
    leaves = pytree.tree_leaves(base)
    grads = []
    for k, leaf in enumerate(leaves):
        grad = np.zeros(np.shape(leaf))
        for j in range(grad.size):
            values = []
            for step in (eps, -eps):
                moved = np.array(leaf, dtype=np.float64)
                moved.flat[j] += step
                new = list(copy.deepcopy(leaves))
                new[k] = moved
                call = list(copy.deepcopy(args))
                call[wrt] = pytree.rebuild(base, iter(new))
                values.append(float(f(*call)))
            grad.flat[j] = (values[0] - values[1]) / (2 * eps)
        grads.append(grad)
    return pytree.rebuild(base, iter(grads))


def _refused_here(run):
    with pytest.raises(sg.SrcgradError) as info:
        run()
    message = str(info.value)
    assert __file__ in message and re.search(r"line \d+", message), message


@pytest.mark.parametrize("f, args, expect", [(f, a, g) for f, a, g, _ in CASES],
                         ids=[c[0].__name__ for c in CASES])
def test_reverse_mode(f, args, expect):
    run = lambda: sg.grad(f)(*copy.deepcopy(args))
    if expect == "refuse":
        return _refused_here(run)
    for got, want in zip(pytree.tree_leaves(run()), pytree.tree_leaves(_fd(f, args))):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f, args, expect", [(f, a, j) for f, a, _, j in CASES if j],
                         ids=[c[0].__name__ for c in CASES if c[3]])
def test_forward_mode(f, args, expect):
    tangent = np.linspace(-1.0, 1.5, args[0].size).reshape(args[0].shape)
    run = lambda: sg.jvp(f, copy.deepcopy(args), (tangent,))
    if expect == "refuse":
        return _refused_here(run)
    value, out = run()
    assert np.isclose(value, f(*copy.deepcopy(args)))
    np.testing.assert_allclose(out, np.sum(_fd(f, args) * tangent), rtol=1e-5, atol=1e-6)


def test_jacfwd_of_a_global_array_written_into():
    np.testing.assert_allclose(sg.jacfwd(global_array_written_into)(X.copy()), [4.0, 1.0, 1.0, 1.0])


def _writes_x(x, y):
    x[0] = y[1] * 3.0
    return np.sum(x * y)


def test_forward_mode_refuses_arguments_sharing_memory_with_one_written_into():
    a = np.array([1.0, 2.0, 3.0])
    value, tangent = sg.jvp(_writes_x, (a.copy(), a.copy()), (np.ones(3), np.ones(3)))
    assert (value, tangent) == (19.0, 19.0)
    _refused_here(lambda: sg.jvp(_writes_x, (a, a), (np.ones(3), np.ones(3))))


# ----- The cache: a changed default reaches every derivative, not only sg.grad -----


def _cubic(x, k=2.0):
    return k * np.sum(x ** 3)


@pytest.mark.parametrize("derivative, want", [
    (sg.jacfwd, lambda k, x: 3 * k * x ** 2),
    (sg.jacrev, lambda k, x: 3 * k * x ** 2),
    (sg.hessian, lambda k, x: np.diag(6 * k * x)),
], ids=["jacfwd", "jacrev", "hessian"])
def test_a_changed_default_reaches_jacobians_and_hessians(derivative, want):
    x = np.array([0.3, 0.7])
    try:
        for k in (2.0, 5.0):
            _cubic.__defaults__ = (k,)
            np.testing.assert_allclose(derivative(_cubic)(x), want(k, x))
    finally:
        _cubic.__defaults__ = (2.0,)
