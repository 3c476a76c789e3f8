"""Seventh adversarial round: programs that srcgrad got silently wrong (or failed on with an
error that was not a refusal) before their fix. Each gradient, tangent or Hessian is checked
against central differences in float64; each refusal must name what it refuses."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from adversarial_checks import assert_grad_and_jvp, assert_refused_in

XM = np.array([[0.5, -1.0], [2.0, 0.3]])


# ----- numpy.matrix values: * and ** are matrix products -----
# An argument or global numpy.matrix went through the rules for arrays: the adjoint of
# x * m was dy * m, a matrix product again, so sg.grad gave column sums where the
# gradient is row sums (sum(x * GM) for a 2x2: [[4, 6], [4, 6]] for [[3, 7], [3, 7]]),
# and sg.grad(f, jit=True) a third answer. It is refused now, in every mode.

with warnings.catch_warnings():   # (NumPy's PendingDeprecationWarning of np.matrix)
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    GM = np.matrix([[1.0, 2.0], [3.0, 4.0]])


def times_global_matrix(x):
    return np.sum(np.asarray(x * GM))


def times_argument(x, m):
    return np.sum(np.asarray(x * m))


def squared(x):
    return np.sum(np.asarray(x * x))


@pytest.mark.parametrize("run", [
    lambda: sg.grad(times_global_matrix)(XM.copy()),
    lambda: sg.jvp(times_global_matrix, (XM.copy(),), (np.ones((2, 2)),)),
    lambda: sg.grad(times_global_matrix, jit=True)(XM.copy()),
])
def test_a_global_numpy_matrix_is_refused_at_the_function(run):
    assert_refused_in(__file__, run, "GM", "numpy.matrix")


@pytest.mark.parametrize("run", [
    lambda: sg.grad(times_argument)(XM.copy(), GM),
    lambda: sg.value_and_grad(times_argument, jit=True)(XM.copy(), GM),
    lambda: sg.jvp(times_argument, (XM.copy(), GM), (np.ones((2, 2)), None)),
    lambda: sg.grad(squared)(GM.copy()),
    lambda: sg.hessian(squared)(GM.copy()),
    lambda: sg.jacfwd(squared)(GM.copy()),
    lambda: sg.jacrev(squared)(GM.copy()),
    lambda: sg.vjp(squared)(GM.copy()),
])
def test_a_numpy_matrix_argument_is_refused_in_every_mode(run):
    assert_refused_in(__file__, run, "numpy.matrix")   # at the function's def


class _Holder:
    pass


def times_attribute(x, obj):
    return np.sum(np.asarray(obj.M * x))


def times_nested_attribute(x, obj):
    return np.sum(np.asarray(obj.inner.M * x))


def _holding(m, nested=False):
    obj = _Holder()
    if nested:
        obj.inner = _Holder()
        obj.inner.M = m
    else:
        obj.M = m
    return obj


@pytest.mark.parametrize("run", [
    lambda: sg.grad(times_attribute)(XM.copy(), _holding(GM)),
    lambda: sg.grad(times_nested_attribute)(XM.copy(), _holding(GM, nested=True)),
    lambda: sg.value_and_grad(times_attribute, jit=True)(XM.copy(), _holding(GM)),
    lambda: sg.jvp(times_attribute, (XM.copy(), _holding(GM)), (np.ones((2, 2)), None)),
    lambda: sg.hessian(times_attribute)(XM.copy(), _holding(GM)),
    lambda: sg.jacfwd(times_attribute)(XM.copy(), _holding(GM)),
    lambda: sg.jacrev(times_attribute)(XM.copy(), _holding(GM)),
])
def test_a_numpy_matrix_held_by_an_argument_is_refused(run):
    # an object's attribute read in the function (obj.M * x): sg.grad gave [[4, 6], [4, 6]]
    # where the gradient is [[4, 4], [6, 6]]
    assert_refused_in(__file__, run, "attribute of", "numpy.matrix")


@pytest.mark.parametrize("jit", [False, True])
def test_a_matrix_attribute_after_arrays_is_refused_at_the_function(jit):
    obj = _holding(np.asarray(GM))
    g = sg.grad(times_attribute, jit=jit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # jit: the object argument runs the NumPy gradient
        for _ in range(3):   # the hot call is made
            np.testing.assert_allclose(g(XM.copy(), obj), np.asarray(GM))   # elementwise
        obj.M = GM
        with pytest.raises(sg.SrcgradError, match="attribute of an argument is a numpy.matrix") \
                as refused:
            g(XM.copy(), obj)
    assert f'File "{__file__}", line {times_attribute.__code__.co_firstlineno}' in str(refused.value)


def test_the_same_values_as_arrays_differentiate():
    m = np.asarray(GM)
    want = numerical_grad(times_argument, (XM.copy(), m))
    np.testing.assert_allclose(want, [[1.0, 2.0], [3.0, 4.0]], rtol=1e-6)
    np.testing.assert_allclose(sg.grad(times_argument)(XM.copy(), m), want, rtol=1e-6)
    assert_grad_and_jvp(squared, (XM.copy(),))


# ----- A store into an integer array: forward mode kept the stored tangent -----
# a = np.zeros_like(np.arange(4)); a[0] = x[0] * 7 truncates the value stored: a carries
# no derivative. Reverse mode zeroed it (rt.dtype_grad where a's dtype is known only at
# run time); forward mode stored 7 * dx[0] into a's tangent, so sg.jvp, sg.jacfwd and
# sg.hessian were wrong where sg.grad was right (np.copyto with casting="unsafe" and
# a[2] += ... the same). The tangent store now goes through the same rt.dtype_grad.

P = np.array([0.33, -0.57, 1.21, 0.46])


def stored_into_int_zeros_like(x):
    a = np.zeros_like(np.arange(4))
    a[0] = x[0] * 7
    return np.sum(a * x) + a[0] * x[1]


def added_into_int_arange(x):
    a = np.arange(4)
    a[2] += x[2] * 3
    return np.sum(a * x ** 2)


def copied_unsafely_into_ints(x):
    a = np.arange(4)
    np.copyto(a, x * 3, casting="unsafe")
    return np.sum(a * x)


def stored_into_a_list_then_an_array(x):   # a list keeps what is stored: its tangent too
    L = [0, 0, 0, 0]
    L[0] = x[0] * 2
    return np.sum(np.array(L) * x)


@pytest.mark.parametrize("f", [stored_into_int_zeros_like, added_into_int_arange,
                               copied_unsafely_into_ints, stored_into_a_list_then_an_array])
def test_a_store_into_an_integer_array_carries_no_tangent(f):
    assert_grad_and_jvp(f, (P.copy(),))
    want = numerical_grad(f, (P.copy(),))
    np.testing.assert_allclose(sg.jacfwd(f)(P.copy()), want, rtol=1e-6, atol=1e-8)
    g = sg.grad(f)
    eps = 1e-5
    fd_h = np.stack([(g(P + eps * e) - g(P - eps * e)) / (2 * eps) for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(sg.hessian(f)(P.copy()), fd_h, rtol=1e-5, atol=1e-6)


# ----- A for loop of no iteration leaves its target's value before the loop -----
# i = 10; for i in range(0): ...; return x[0] * i. Liveness killed the loop's target
# before the loop, so the dead-code pass dropped i = 10 from the sweep sg.grad runs:
# UnboundLocalError from srcgrad's generated code.

def loop_of_no_iteration(x):
    i = 10
    for i in range(0):
        pass
    return x[0] * i


def loop_of_no_iteration_over_a_slice(x):
    v = 2.0
    for v in x[4:]:
        x = x * v
    return np.sum(x) * v


def test_a_loop_of_no_iteration_keeps_the_value_of_its_target():
    for f in (loop_of_no_iteration, loop_of_no_iteration_over_a_slice):
        assert_grad_and_jvp(f, (P.copy(),))
    np.testing.assert_allclose(sg.hessian(loop_of_no_iteration_over_a_slice)(P.copy()),
                               np.zeros((4, 4)), atol=1e-12)


# ----- A for loop over a list its body appends to -----
# for v in L: L.append(...) sees each new item in Python; srcgrad's indexed loop ran
# range(len(L)) for the length before the loop: value, gradient and tangent all wrong
# (sum(L) of 1 item instead of 4). Refused at the loop; the while loop it suggests is right.

def worklist_for(x):
    L = [x[0]]
    for v in L:
        if len(L) < 4:
            L.append(v * 2)
    return sum(L) * x[1]


def worklist_while(x):
    L = [x[0]]
    i = 0
    while i < len(L):
        v = L[i]
        if len(L) < 4:
            L.append(v * 2)
        i += 1
    return sum(L) * x[1]


def test_a_loop_over_a_list_it_appends_to_is_refused():
    assert_refused_in(__file__, lambda: sg.grad(worklist_for)(P.copy()), "changes its length", "append")
    assert_refused_in(__file__, lambda: sg.jvp(worklist_for, (P.copy(),), (P.copy(),)), "append")
    assert_grad_and_jvp(worklist_while, (P.copy(),))


# ----- hasattr, callable and str.startswith in a Hessian -----
# sg.grad and sg.jvp ran them; sg.hessian's forward sweep over the gradient refused them
# ("no tangent for hasattr"): they give a bool, declared nondifferentiable in the table.

def item_if_it_has_one(x):
    t = x[0]
    t = t.item() if hasattr(t, "item") else t
    return t ** 2 * x[1] + (np.sum(x ** 3) if callable(np.sum) else 0.0)


def weights_by_name(p):
    total = 0.0
    for key, value in p.items():
        if key.startswith("w") and not key.endswith("_frozen"):
            total = total + np.sum(np.sin(value) * value)
        else:
            total = total * np.sum(value)
    return total


def test_bool_builtins_in_a_hessian():
    g = sg.grad(item_if_it_has_one)
    eps = 1e-5
    fd_h = np.stack([(g(P + eps * e) - g(P - eps * e)) / (2 * eps) for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(sg.hessian(item_if_it_has_one)(P.copy()), fd_h, rtol=1e-5, atol=1e-6)
    p = {"w1": P.copy(), "b": P[:2] ** 2, "w2": P[1:] * 2}
    t = {"w1": P[::-1].copy(), "b": np.array([0.3, -0.2]), "w2": np.array([0.1, 0.5, -0.4])}
    gp = sg.grad(weights_by_name)
    moved = [{k: p[k] + s * t[k] for k in p} for s in (eps, -eps)]
    want = {k: (gp(moved[0])[k] - gp(moved[1])[k]) / (2 * eps) for k in p}
    (got,) = sg.hvp(weights_by_name, (p,), (t,))
    for k in p:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)


# ----- A helper called with **-unpacking -----
# h(**{"v": x, "w": y}) was refused with "keywords must be strings" (they are): the
# refusal now says what it refuses.

def _scaled(v, w):
    return v * w


def double_star_call(x):
    return np.sum(_scaled(**{"v": x, "w": x[::-1]}))


def test_a_helper_called_with_double_star_is_refused_as_such():
    assert_refused_in(__file__, lambda: sg.grad(double_star_call)(P.copy()), "**-unpacking", "_scaled")


# ----- An array written into itself: y[k] = y -----
# NumPy copies y before the write, so y[[1, 0, 3, 2]] = y permutes y. The adjoint added
# dy[k] to the value's adjoint, which is dy itself, then zeroed dy[k]: the contribution was
# zeroed with it, and sg.grad gave 0 (forward mode was right). It is now read first, zeroed,
# then added.

def permuted_into_itself(x):
    y = x * 1.0
    y[[1, 2, 3, 0]] = y
    return np.sum(y * np.sin(y) * np.arange(4.0))


def columns_swapped_into_itself(x):
    y = (x * 1.0).reshape(2, 2)
    y[:, [1, 0]] = y
    return np.sum(y ** 2 * np.arange(4.0).reshape(2, 2))


def reversed_into_itself_in_a_loop(x):
    y = x * 1.0
    for i in range(3):
        y[::-1] = y
        y = y * x
    return np.sum(y * np.arange(4.0))


@pytest.mark.parametrize("f", [permuted_into_itself, columns_swapped_into_itself,
                               reversed_into_itself_in_a_loop])
def test_an_array_written_into_itself(f):
    assert_grad_and_jvp(f, (P.copy(),))
    value, g = sg.value_and_grad(f)(P.copy())
    np.testing.assert_allclose(value, f(P.copy()))
    np.testing.assert_allclose(g, numerical_grad(f, (P.copy(),)), rtol=1e-6, atol=1e-8)
