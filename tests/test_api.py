"""The functional API of DESIGN.md sections 2 and 3, and the seed notebooks' numbers."""

import functools
import math

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import api
from srcgrad.testing import check_grads


# ----- Functions under test (module level, so their source is available) -----

def mul_sum(x, w):
    y = x * w
    z = y.sum()
    return z


def square_intermediate(x, w):
    y = x * w
    z = np.sum(y ** 2)
    return z


def weighted(x, w, a):
    return np.sum(np.sin(x) * w) * a


def elementwise(x):
    return x ** 2 + x * 2


def two_outputs(x, w):
    return np.sum(x * w), x * x


def uses_only_x(x, w):
    return np.sum(x * x)


def scalar_fn(a, b):
    return a * a * b + np.sin(a)


def with_int(x, n):
    return np.sum(x ** n)


def keyword_fn(x, *, scale, shift=1.0):
    return np.sum((x + shift) ** 2) * scale


def const_locals(x, w):
    y = x * w
    k = 3 * 2
    c = np.ones(3)
    z = y.sum() + k
    q = c * 2.0
    return z + np.sum(q)


def size_one_output(x):
    return np.sum(x * x, keepdims=True)


# Seed notebooks (tests/../shared/seeds): the numbers they print.

def seed_abs(x):
    if x > 0:
        return x
    else:
        return -x


def seed_product(x):
    result = 1
    for ii in x:
        if ii > 0:
            result = ii * result
    return result


def seed_mean(x):
    y = x + 2
    z = y * y * 3
    out = z.mean()
    return out


def seed_doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def seed_indexed(a):
    b = np.zeros((1, 2))
    b[0, 0] = a[0, 0] ** 2 + a[0, 1]
    b[0, 1] = a[0, 1] ** 3 + a[0, 0]
    out = b * 2
    return out


def seed_pow_sum(x):
    out = x ** 2 * 3
    return out.sum()


def seed_linear(x, w, bias):
    return w @ x + bias


X = np.array([0.5, -1.2, 2.0])
W = np.array([1.5, 0.3, -0.7])


# ----- wrt -----

def test_wrt_position():
    g0 = sg.grad(mul_sum, wrt=0)(X, W)
    g1 = sg.grad(mul_sum, wrt=1)(X, W)
    np.testing.assert_allclose(g0, W, rtol=1e-12, atol=0)
    np.testing.assert_allclose(g1, X, rtol=1e-12, atol=0)


def test_wrt_default_is_first_argument():
    np.testing.assert_allclose(sg.grad(mul_sum)(X, W), W, rtol=1e-12, atol=0)


def test_wrt_parameter_name():
    np.testing.assert_allclose(sg.grad(mul_sum, wrt="w")(X, W), X, rtol=1e-12, atol=0)
    np.testing.assert_allclose(sg.grad(mul_sum, wrt="x")(X, W), W, rtol=1e-12, atol=0)


def test_wrt_tuple_and_list():
    gx, gw = sg.grad(mul_sum, wrt=(0, 1))(X, W)
    np.testing.assert_allclose(gx, W, rtol=1e-12, atol=0)
    np.testing.assert_allclose(gw, X, rtol=1e-12, atol=0)
    grads = sg.grad(weighted, wrt=["x", 2])(X, W, 0.5)
    assert isinstance(grads, tuple) and len(grads) == 2
    np.testing.assert_allclose(grads[0], np.cos(X) * W * 0.5, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grads[1], np.sum(np.sin(X) * W), rtol=1e-12, atol=0)


def test_wrt_single_in_tuple_gives_tuple():
    grads = sg.grad(mul_sum, wrt=(1,))(X, W)
    assert isinstance(grads, tuple) and len(grads) == 1
    np.testing.assert_allclose(grads[0], X, rtol=1e-12, atol=0)


def test_wrt_keyword_only_parameter():
    g = sg.grad(keyword_fn, wrt="scale")(X, scale=2.0)
    assert type(g) is float
    assert g == pytest.approx(np.sum((X + 1.0) ** 2), rel=1e-12)
    check_grads(keyword_fn, (X,), wrt="x", kwargs={"scale": 2.0, "shift": 0.5})


def test_wrt_local_variable():
    # torch.autograd.grad(z, y) for an intermediate y (seed 000 / 003).
    g = sg.grad(mul_sum, wrt="y")(np.ones(3), W)
    np.testing.assert_allclose(g, np.ones(3), rtol=0, atol=0)
    g = sg.grad(square_intermediate, wrt="y")(X, W)
    np.testing.assert_allclose(g, 2 * X * W, rtol=1e-12, atol=0)


def test_wrt_local_variable_with_parameter():
    gy, gx = sg.grad(square_intermediate, wrt=("y", "x"))(X, W)
    np.testing.assert_allclose(gy, 2 * X * W, rtol=1e-12, atol=0)
    np.testing.assert_allclose(gx, 2 * X * W * W, rtol=1e-12, atol=0)


def test_wrt_unknown_name_is_an_error():
    with pytest.raises((ValueError, sg.SrcgradError)) as info:
        sg.grad(mul_sum, wrt="nope")(X, W)
    assert "nope" in str(info.value)


def test_wrt_out_of_range_is_an_error():
    with pytest.raises((ValueError, IndexError, sg.SrcgradError)):
        sg.grad(mul_sum, wrt=5)(X, W)


# ----- grad_outputs -----

def test_scalar_output_default_seed():
    assert sg.grad(seed_pow_sum)(np.array([0.0, 1.0, 2.0])).tolist() == [0.0, 6.0, 12.0]


def test_size_one_output_default_seed():
    g = sg.grad(size_one_output)(X)
    np.testing.assert_allclose(g, 2 * X, rtol=1e-12, atol=0)


def test_non_scalar_output_needs_grad_outputs():
    with pytest.raises(ValueError, match="grad can be implicitly created only for scalar outputs"):
        sg.grad(elementwise)(np.array([0.0, 1.0, 2.0]))


def test_grad_outputs_seed():
    # Seed 004: autograd.grad(y, x, grad_outputs=ones_like(y)) for y = x ** 2.
    x = np.array([1.0, 2.0, 3.0])
    g = sg.grad(elementwise)(x, grad_outputs=np.ones(3))
    np.testing.assert_allclose(g, 2 * x + 2, rtol=0, atol=0)
    g = sg.grad(elementwise)(x, grad_outputs=np.array([0.5, 0.0, -1.0]))
    np.testing.assert_allclose(g, np.array([0.5, 0.0, -1.0]) * (2 * x + 2), rtol=1e-12, atol=0)


def test_grad_outputs_scalar_for_scalar_output():
    g = sg.grad(mul_sum)(X, W, grad_outputs=3.0)
    np.testing.assert_allclose(g, 3.0 * W, rtol=1e-12, atol=0)


def test_tuple_outputs_tuple_of_seeds():
    s = 2.0
    v = np.array([1.0, -1.0, 0.5])
    g = sg.grad(two_outputs, wrt=0)(X, W, grad_outputs=(s, v))
    np.testing.assert_allclose(g, s * W + v * 2 * X, rtol=1e-12, atol=0)
    # None: that output is not seeded.
    g = sg.grad(two_outputs, wrt=0)(X, W, grad_outputs=(None, v))
    np.testing.assert_allclose(g, v * 2 * X, rtol=1e-12, atol=0)
    g = sg.grad(two_outputs, wrt=1)(X, W, grad_outputs=(s, None))
    np.testing.assert_allclose(g, s * X, rtol=1e-12, atol=0)


def test_tuple_outputs_without_seeds_is_an_error():
    with pytest.raises(ValueError, match="grad can be implicitly created only for scalar outputs"):
        sg.grad(two_outputs, wrt=0)(X, W)


def test_grad_is_not_accumulated_between_calls():
    # Unlike PyTorch's .grad, every call returns a fresh gradient.
    g = sg.grad(mul_sum, wrt=0)
    first = g(X, W).copy()
    second = g(X, W)
    np.testing.assert_array_equal(first, second)
    assert first is not second


# ----- allow_unused / materialize_grads -----

def test_unused_input_is_an_error_naming_it():
    with pytest.raises((ValueError, RuntimeError, sg.SrcgradError)) as info:
        sg.grad(uses_only_x, wrt=(0, 1))(X, W)
    text = str(info.value)
    assert "'w'" in text or "`w`" in text or " w " in text or "w:" in text or '"w"' in text, text
    assert "allow_unused" in text, text


def test_allow_unused_gives_none():
    gx, gw = sg.grad(uses_only_x, wrt=(0, 1), allow_unused=True)(X, W)
    np.testing.assert_allclose(gx, 2 * X, rtol=1e-12, atol=0)
    assert gw is None


def test_materialize_grads_gives_zeros():
    gx, gw = sg.grad(uses_only_x, wrt=(0, 1), materialize_grads=True)(X, W)
    np.testing.assert_allclose(gx, 2 * X, rtol=1e-12, atol=0)
    assert isinstance(gw, np.ndarray) and gw.shape == W.shape and gw.dtype == W.dtype
    assert not gw.any()


def test_materialize_grads_python_float():
    grads = sg.grad(scalar_unused, wrt=(0, 1), materialize_grads=True)(0.5, 2.0)
    assert type(grads[1]) is float and grads[1] == 0.0


def scalar_unused(a, b):
    return a * 3.0


# ----- Types of inputs and outputs -----

@pytest.mark.parametrize("bad", [np.arange(3), np.array([True, False, True]), 3, True,
                                 np.int32(2)])
def test_integer_and_bool_inputs_refused(bad):
    with pytest.raises(TypeError):
        sg.grad(seed_pow_sum)(bad)


def test_integer_argument_not_differentiated_is_fine():
    g = sg.grad(with_int, wrt=0)(X, 3)
    np.testing.assert_allclose(g, 3 * X ** 2, rtol=1e-12, atol=0)


def test_python_float_in_python_float_out():
    ga, gb = sg.grad(scalar_fn, wrt=(0, 1))(0.5, 2.0)
    assert type(ga) is float and type(gb) is float
    assert ga == pytest.approx(2 * 0.5 * 2.0 + np.cos(0.5), rel=1e-12)
    assert gb == pytest.approx(0.25, rel=1e-12)


def test_float32_stays_float32():
    x32 = X.astype(np.float32)
    w32 = W.astype(np.float32)
    gx, gw = sg.grad(mul_sum, wrt=(0, 1))(x32, w32)
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    g = sg.grad(seed_mean)(np.ones((2, 2), dtype=np.float32))
    assert g.dtype == np.float32 and g.shape == (2, 2)


def test_shape_kept():
    x = np.arange(6.0).reshape(2, 3) + 0.5
    g = sg.grad(seed_mean)(x)
    assert g.shape == (2, 3)
    np.testing.assert_allclose(g, 6 * (x + 2) / 6, rtol=1e-12, atol=0)


def test_keyword_arguments_forwarded():
    g = sg.grad(keyword_fn, wrt=0)(X, scale=2.0, shift=0.5)
    np.testing.assert_allclose(g, 2.0 * 2 * (X + 0.5), rtol=1e-12, atol=0)


def test_inputs_not_mutated():
    x = np.array([[2.0, 4.0]])
    before = x.copy()
    sg.grad(seed_indexed)(x, grad_outputs=np.ones((1, 2)))
    np.testing.assert_array_equal(x, before)


# ----- preserve_result / value_and_grad -----

def test_preserve_result():
    value, g = sg.grad(mul_sum, wrt=1, preserve_result=True)(X, W)
    assert value == pytest.approx(np.sum(X * W), rel=1e-12)
    np.testing.assert_allclose(g, X, rtol=1e-12, atol=0)


def test_value_and_grad():
    value, (gx, gw) = sg.value_and_grad(mul_sum, wrt=(0, 1))(X, W)
    assert value == pytest.approx(np.sum(X * W), rel=1e-12)
    np.testing.assert_allclose(gx, W, rtol=1e-12, atol=0)
    np.testing.assert_allclose(gw, X, rtol=1e-12, atol=0)


def test_value_and_grad_non_scalar_output():
    x = np.array([1.0, 2.0, 3.0])
    value, g = sg.value_and_grad(elementwise)(x, grad_outputs=np.ones(3))
    np.testing.assert_allclose(value, x ** 2 + 2 * x, rtol=1e-12, atol=0)
    np.testing.assert_allclose(g, 2 * x + 2, rtol=1e-12, atol=0)


# ----- vjp and retain_graph -----

def test_vjp_returns_output_and_backward():
    x = np.array([1.0, 2.0, 3.0])
    out, backward = sg.vjp(elementwise, wrt=0)(x)
    np.testing.assert_allclose(out, x ** 2 + 2 * x, rtol=1e-12, atol=0)
    g = backward(grad_outputs=np.array([1.0, 0.5, 0.25]))
    np.testing.assert_allclose(g, np.array([1.0, 0.5, 0.25]) * (2 * x + 2), rtol=1e-12, atol=0)


def test_vjp_scalar_default_seed():
    out, backward = sg.vjp(mul_sum, wrt=(0, 1))(X, W)
    assert out == pytest.approx(np.sum(X * W), rel=1e-12)
    gx, gw = backward()
    np.testing.assert_allclose(gx, W, rtol=1e-12, atol=0)
    np.testing.assert_allclose(gw, X, rtol=1e-12, atol=0)


def test_vjp_non_scalar_needs_seed():
    _, backward = sg.vjp(elementwise)(X)
    with pytest.raises(ValueError, match="grad can be implicitly created only for scalar outputs"):
        backward()


def test_backward_twice_without_retain_graph():
    _, backward = sg.vjp(mul_sum, wrt=1)(X, W)
    backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        backward()


def test_backward_twice_with_retain_graph():
    # Seed 003: z.backward(retain_graph=True); z.backward().
    _, backward = sg.vjp(mul_sum, wrt=1)(np.ones(3), W)
    first = backward(retain_graph=True)
    second = backward()
    np.testing.assert_array_equal(first, np.ones(3))
    np.testing.assert_array_equal(second, np.ones(3))
    with pytest.raises(RuntimeError, match="retain_graph"):
        backward()


def test_backward_retain_graph_with_control_flow():
    # The recorded branch decisions and trip counts survive retain_graph=True.
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])
    _, backward = sg.vjp(seed_product)(x)
    for _ in range(3):
        g = backward(retain_graph=True)
        np.testing.assert_array_equal(g, [0, 0, 0, 6, 3, 2])


def test_vjp_different_seeds():
    x = np.array([1.0, 2.0, 3.0])
    _, backward = sg.vjp(elementwise)(x)
    g1 = backward(grad_outputs=np.ones(3), retain_graph=True)
    g2 = backward(grad_outputs=2 * np.ones(3))
    np.testing.assert_allclose(g2, 2 * g1, rtol=1e-12, atol=0)


# ----- source, active_variables, @sg.function, cache -----

def test_source_function():
    text = sg.source(mul_sum, wrt=0)
    assert isinstance(text, str)
    assert "def " in text
    assert "# grad of:" in text
    compile(text, "<srcgrad source>", "exec")


def test_source_attribute_matches():
    assert sg.grad(mul_sum, wrt=0).source == sg.source(mul_sum, wrt=0)


def test_source_shows_user_lines():
    # Each adjoint block is commented with the user line it differentiates.
    text = sg.grad(weighted, wrt=0).source
    assert "np.sum(np.sin(x) * w) * a" in text, text


def test_active_variables():
    active = sg.active_variables(const_locals, wrt=0)
    assert isinstance(active, (set, frozenset))
    assert all(isinstance(name, str) for name in active)
    assert {"y", "z"} <= set(active)
    assert not {"k", "c", "q"} & set(active)


def test_active_variables_by_name():
    assert {"y"} <= set(sg.active_variables(const_locals, wrt="w"))


@sg.function
def decorated(x, w):
    return np.sum(np.tanh(x) * w)


def test_decorated_function_stays_callable():
    assert decorated(X, W) == pytest.approx(np.sum(np.tanh(X) * W), rel=1e-12)
    check_grads(decorated, (X, W), wrt=(0, 1))


def test_cache_returns_same_gradient(monkeypatch):
    g1 = sg.grad(weighted, wrt=0)
    g2 = sg.grad(weighted, wrt=0)
    assert g1 is g2 or g1.source is g2.source
    compiled = g1.compiled

    def no_compiling(*args, **kwargs):
        raise AssertionError("a cached gradient was compiled again")
    # A second sg.grad(f) is a lookup, never a compile (its speed is a benchmark's business).
    monkeypatch.setattr(api, "compile_gradient", no_compiling)
    for _ in range(3):
        assert sg.grad(weighted, wrt=0).compiled is compiled


def test_cache_distinguishes_options():
    assert sg.grad(weighted, wrt=0).source != sg.grad(weighted, wrt=1).source
    value, _ = sg.grad(weighted, wrt=0, preserve_result=True)(X, W, 2.0)
    g = sg.grad(weighted, wrt=0)(X, W, 2.0)
    assert isinstance(g, np.ndarray)
    assert value == pytest.approx(weighted(X, W, 2.0), rel=1e-12)


# ----- The seed notebooks' numbers -----

def test_seed_abs():
    assert sg.grad(seed_abs)(1.0) == 1.0
    assert sg.grad(seed_abs)(-1.0) == -1.0


def test_seed_product_loop():
    x = np.arange(-2.0, 4.0)
    np.testing.assert_array_equal(sg.grad(seed_product)(x), [0, 0, 0, 6, 3, 2])


def test_seed_mean():
    g = sg.grad(seed_mean)(np.ones((2, 2)))
    np.testing.assert_allclose(g, np.full((2, 2), 4.5), rtol=1e-12, atol=0)


def test_seed_pow_elementwise():
    # y = x**2 + x*2; z = y.sum(); z.backward() for x = arange(0, 3).
    g = sg.grad(elementwise)(np.arange(0.0, 3.0), grad_outputs=np.ones(3))
    np.testing.assert_array_equal(g, [2.0, 4.0, 6.0])


def test_seed_while_doubling():
    # y = 512 x: y.backward([0.01, 0.1, 1]) gives [5.12, 51.2, 512].
    x = np.array([4.6030, 0.7516, 3.6041]) / 2
    out, backward = sg.vjp(seed_doubling)(x)
    np.testing.assert_allclose(out / x, 512.0, rtol=1e-12)
    g = backward(grad_outputs=np.array([0.01, 0.1, 1.0]))
    np.testing.assert_allclose(g, [5.12, 51.2, 512.0], rtol=1e-12)


def test_seed_indexed_assignment():
    a = np.array([[2.0, 4.0]])
    out, g = sg.value_and_grad(seed_indexed)(a, grad_outputs=np.array([[1.0, 1.0]]))
    np.testing.assert_array_equal(out, [[16.0, 132.0]])
    np.testing.assert_array_equal(g, [[10.0, 98.0]])


def test_seed_mul_add():
    # Seed 001: t = w * a + b; z = t.sum() for a = 1, b = 2, w = 2 (2x2).
    grads = sg.grad(seed_affine, wrt=(0, 1, 2))(np.ones((2, 2)), np.full((2, 2), 2.0),
                                               np.full((2, 2), 2.0))
    np.testing.assert_array_equal(grads[0], np.full((2, 2), 2.0))
    np.testing.assert_array_equal(grads[1], np.ones((2, 2)))
    np.testing.assert_array_equal(grads[2], np.ones((2, 2)))


def seed_affine(a, b, w):
    y = w * a
    t = y + b
    z = t.sum()
    return z


def test_seed_linear_grad_outputs():
    w = np.array([[0.5, -1.0, 0.25], [1.5, 0.5, -0.5]])
    bias = np.array([0.1, -0.2])
    x = np.array([1.0, 2.0, 3.0])
    g = sg.grad(seed_linear, wrt=0)(x, w, bias, grad_outputs=np.ones(2))
    np.testing.assert_allclose(g, w.sum(axis=0), rtol=1e-12, atol=0)


# ----- Second order (DESIGN section 2: the gradient is source, so it transforms again) -----

def cubic(a):
    return a * a * a + np.sin(a)


def test_grad_of_grad():
    second = sg.grad(sg.grad(cubic))
    assert second(0.5) == pytest.approx(6 * 0.5 - np.sin(0.5), rel=1e-9)


# ----- The cache must not serve a stale gradient -----

def _make_closure(k):
    def closure(x):
        return np.sum(np.sin(x) * k)
    return closure


def test_cache_distinguishes_closures():
    # Same code object, different closure cells.
    g2 = sg.grad(_make_closure(2.0))(X)
    g5 = sg.grad(_make_closure(5.0))(X)
    np.testing.assert_allclose(g2, 2.0 * np.cos(X), rtol=1e-12, atol=0)
    np.testing.assert_allclose(g5, 5.0 * np.cos(X), rtol=1e-12, atol=0)


def _swappable(v):
    return v * v


def calls_swappable(x):
    return np.sum(_swappable(x))


def test_cache_sees_rebound_helper(monkeypatch):
    # A notebook user redefines a helper: the next gradient must use it.
    np.testing.assert_allclose(sg.grad(calls_swappable)(X), 2 * X, rtol=1e-12, atol=0)

    def cubed(v):
        return v * v * v

    monkeypatch.setitem(globals(), "_swappable", cubed)
    value, g = sg.value_and_grad(calls_swappable)(X)
    assert value == pytest.approx(np.sum(X ** 3), rel=1e-12)
    np.testing.assert_allclose(g, 3 * X ** 2, rtol=1e-12, atol=0)


def test_same_gradient_object_sees_rebound_helper(monkeypatch):
    # The repeated call is prepared on the first; it must still notice the new helper.
    g = sg.grad(calls_swappable)
    for _ in range(2):
        np.testing.assert_allclose(g(X), 2 * X, rtol=1e-12, atol=0)

    def cubed(v):
        return v * v * v

    monkeypatch.setitem(globals(), "_swappable", cubed)
    np.testing.assert_allclose(g(X), 3 * X ** 2, rtol=1e-12, atol=0)


# ----- Repeated calls (prepared on the first) behave like the first -----

def identity_sum(x):
    return np.sum(x)


def itself(x):
    return x


def test_repeated_calls_keep_every_check():
    g = sg.grad(square_intermediate, wrt=(0, 1))
    x, w = np.array([1.0, -2.0, 0.5]), np.array([0.5, 1.5, -1.0])
    first = g(x, w)
    for _ in range(2):
        again = g(x, w)
        for a, b in zip(first, again):
            np.testing.assert_array_equal(a, b)
    # Another rank, another dtype, an integer array: each as on a first call.
    gx, gw = g(x[:, None] * w, w)
    assert gx.shape == (3, 3) and gw.shape == (3,)
    g32 = g(x.astype(np.float32), w.astype(np.float32))
    assert all(a.dtype == np.float32 for a in g32)
    with pytest.raises(TypeError, match="dtype is int"):
        g(np.array([1, 2, 3]), w)
    with pytest.raises(TypeError, match="missing"):
        g(x)
    assert g(x, w=w)[1].shape == (3,)
    assert isinstance(g(2.0, 3.0)[0], float)


def test_repeated_calls_hand_out_arrays_of_their_own():
    g = sg.grad(identity_sum)
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    results = [g(x) for _ in range(3)]
    for r in results:
        assert r.flags.writeable and r.shape == x.shape
    results[0][0, 0] = 42.0
    np.testing.assert_array_equal(results[1], np.ones_like(x))
    # A size-1 output whose gradient is the seed: the seed is never handed out.
    one = sg.grad(itself)
    a = one(np.array([3.0]))
    a[0] = -7.0
    np.testing.assert_array_equal(one(np.array([3.0])), [1.0])
    np.testing.assert_array_equal(one(np.array([3.0])), [1.0])


# ----- The cache: a compiled gradient is reused only while what it was compiled from holds -----

def test_functions_sharing_code_with_different_defaults_get_their_own_gradients():
    funs = []
    for k in (2.0, 5.0):
        def scaled(x, k=k):
            return x * k
        funs.append(scaled)
    for _ in range(3):   # the first calls compile, the next are cached and prepared
        assert [sg.grad(f)(1.0) for f in funs] == [2.0, 5.0]
        assert [sg.vjp(f)(1.0)[1]() for f in funs] == [2.0, 5.0]


def scaled_by_default(x, k=2.0):
    return np.sum(x * k)


def test_reassigned_defaults_are_seen(monkeypatch):
    g = sg.grad(scaled_by_default)
    for _ in range(2):
        np.testing.assert_array_equal(g(X), np.full(3, 2.0))
    monkeypatch.setattr(scaled_by_default, "__defaults__", (3.0,))
    np.testing.assert_array_equal(g(X), np.full(3, 3.0))
    np.testing.assert_array_equal(sg.grad(scaled_by_default)(X), np.full(3, 3.0))


def _scaled_helper(v, c=2.0, *, k=1.0):
    return v * c * k


def calls_scaled_helper(x):
    return np.sum(_scaled_helper(x))


def test_a_helpers_defaults_written_into_the_gradient_are_checked(monkeypatch):
    # The helper's literal defaults are constants of the generated code: a change recompiles.
    g = sg.grad(calls_scaled_helper)
    for _ in range(2):
        np.testing.assert_array_equal(g(X), np.full(3, 2.0))
    monkeypatch.setattr(_scaled_helper, "__defaults__", (5.0,))
    np.testing.assert_array_equal(g(X), np.full(3, 5.0))
    monkeypatch.setitem(_scaled_helper.__kwdefaults__, "k", 3.0)   # changed in place
    np.testing.assert_array_equal(g(X), np.full(3, 15.0))
    np.testing.assert_array_equal(sg.grad(calls_scaled_helper)(X), np.full(3, 15.0))


def test_a_helper_whose_code_is_replaced_is_differentiated_anew(monkeypatch):
    g = sg.grad(calls_swappable)
    for _ in range(2):
        np.testing.assert_allclose(g(X), 2 * X, rtol=1e-12, atol=0)

    def cubed(v):
        return v * v * v

    monkeypatch.setattr(_swappable, "__code__", cubed.__code__)   # same function object
    np.testing.assert_allclose(g(X), 3 * X ** 2, rtol=1e-12, atol=0)


_act = np.sin


def calls_global_act(x):
    return np.sum(_act(x))


def scalar_global_act(x):
    return _act(x)


def test_a_rebound_global_callable_selects_its_own_rule(monkeypatch):
    # A notebook: `act = np.sin`, then `act = np.exp` and the same gradient again.
    g, gs = sg.grad(calls_global_act), sg.grad(scalar_global_act)
    for _ in range(2):
        np.testing.assert_allclose(g(X), np.cos(X), rtol=1e-12, atol=0)
        assert gs(1.0) == pytest.approx(np.cos(1.0), rel=1e-12)
    assert "cos" in sg.source(calls_global_act)
    monkeypatch.setitem(globals(), "_act", np.exp)
    for _ in range(2):
        np.testing.assert_allclose(g(X), np.exp(X), rtol=1e-12, atol=0)
        assert gs(1.0) == pytest.approx(np.exp(1.0), rel=1e-12)
        assert sg.grad(scalar_global_act)(1.0) == pytest.approx(np.exp(1.0), rel=1e-12)
    assert "cos" not in g.source and "cos" not in sg.source(calls_global_act)
    out, backward = sg.vjp(calls_global_act)(X)
    np.testing.assert_allclose(backward(), np.exp(X), rtol=1e-12, atol=0)
    check_grads(calls_global_act, (X,))


def _switchable():
    a = np.sin

    def f(x):
        return np.sum(a(x))

    def switch(new):
        nonlocal a
        a = new
    return f, switch


def test_a_closure_cell_rebound_elsewhere_selects_its_own_rule():
    f, switch = _switchable()
    g = sg.grad(f)
    for _ in range(2):
        np.testing.assert_allclose(g(X), np.cos(X), rtol=1e-12, atol=0)
    switch(np.tanh)
    for _ in range(2):
        np.testing.assert_allclose(g(X), 1 - np.tanh(X) ** 2, rtol=1e-12, atol=0)
        np.testing.assert_allclose(sg.grad(f)(X), 1 - np.tanh(X) ** 2, rtol=1e-12, atol=0)
    check_grads(f, (X,))


_K = 2.0


def times_global_number(x):
    return np.sum(_K * x)


def test_a_global_number_is_read_when_the_gradient_runs(monkeypatch):
    # Not part of the key: the generated code reads the global itself, as the function does.
    g = sg.grad(times_global_number)
    compiled = g.compiled
    for _ in range(2):
        np.testing.assert_array_equal(g(X), np.full(3, 2.0))
    monkeypatch.setitem(globals(), "_K", 3.0)
    np.testing.assert_array_equal(g(X), np.full(3, 3.0))
    np.testing.assert_array_equal(sg.grad(times_global_number)(X), np.full(3, 3.0))
    assert sg.grad(times_global_number).compiled is compiled


def test_a_closure_number_is_read_when_the_gradient_runs():
    def times_cell(x):
        return np.sum(k * x)

    k = 2.0
    g = sg.grad(times_cell)
    compiled = g.compiled
    for _ in range(2):
        np.testing.assert_array_equal(g(X), np.full(3, 2.0))
    k = 3.0
    np.testing.assert_array_equal(g(X), np.full(3, 3.0))
    assert sg.grad(times_cell).compiled is compiled


def test_a_helper_modules_global_bound_into_the_gradient_is_checked(monkeypatch):
    # hm._inner reads hm.SCALE; this module has no SCALE, so srcgrad binds hm's object into
    # the generated code: rebinding it must recompile.
    import helpers_module as hm

    def calls_inner(x):
        return np.sum(hm._inner(x))

    g = sg.grad(calls_inner)
    for _ in range(2):
        np.testing.assert_allclose(g(X), hm.SCALE * (1 - np.tanh(X) ** 2), rtol=1e-12, atol=0)
    monkeypatch.setattr(hm, "SCALE", 4.0)
    np.testing.assert_allclose(g(X), 4.0 * (1 - np.tanh(X) ** 2), rtol=1e-12, atol=0)


@pytest.mark.parametrize("kind", ["module", "object"])
def test_a_rebound_attribute_selects_its_own_rule(kind):
    import types
    acts = types.ModuleType("acts") if kind == "module" else types.SimpleNamespace()
    acts.act = np.sin

    def f(x):
        return np.sum(acts.act(x))

    g = sg.grad(f)
    for _ in range(2):
        np.testing.assert_allclose(g(X), np.cos(X), rtol=1e-12, atol=0)
    acts.act = np.exp
    np.testing.assert_allclose(g(X), np.exp(X), rtol=1e-12, atol=0)


def uses_abs(x):
    return abs(x)


def test_a_global_that_shadows_a_builtin_later_is_seen(monkeypatch):
    g = sg.grad(uses_abs)
    for _ in range(2):
        assert g(-2.0) == -1.0
    monkeypatch.setitem(globals(), "abs", np.sin)
    assert g(-2.0) == pytest.approx(np.cos(-2.0), rel=1e-12)


# ----- Primitives as entry points: the rule -----

def test_a_primitive_is_differentiated_by_its_rule():
    assert sg.grad(np.sin)(1.0) == pytest.approx(np.cos(1.0), rel=1e-12)
    np.testing.assert_allclose(sg.grad(np.tanh)(X, grad_outputs=np.ones(3)),
                               1 - np.tanh(X) ** 2, rtol=1e-12, atol=0)
    gx, gy = sg.grad(np.multiply, wrt=(0, 1))(X, W, grad_outputs=np.ones(3))
    np.testing.assert_array_equal(gx, W)
    np.testing.assert_array_equal(gy, X)
    assert sg.grad(abs)(-2.0) == -1.0
    assert sg.grad(math.exp)(0.5) == pytest.approx(math.exp(0.5), rel=1e-12)
    np.testing.assert_allclose(sg.grad(np.sum)(X), np.ones(3), rtol=0, atol=0)
    check_grads(np.tanh, (X,), grad_outputs="random")
    check_grads(np.multiply, (X, W), wrt=(0, 1), grad_outputs="random")


def test_vjp_and_source_of_a_primitive():
    out, backward = sg.vjp(np.exp)(X)
    np.testing.assert_array_equal(out, np.exp(X))
    np.testing.assert_allclose(backward(grad_outputs=W), W * np.exp(X), rtol=1e-12, atol=0)
    text = sg.source(np.sin)
    assert "np.sin(x)" in text and "cos" in text
    assert sg.grad(np.sin).compiled is sg.grad(np.sin).compiled   # one wrapper, cached


def _bound_holder():
    class Scale:
        def __call__(self, x):
            return 2.0 * x

        def apply(self, x):
            return 2.0 * x
    return Scale()


def _opaque_callable():
    class Opaque:   # its __call__ has no Python source
        __call__ = math.ulp
    return Opaque()


@pytest.mark.parametrize("what, error, words", [
    (len, sg.NonDifferentiableError, "len is not differentiable"),
    (math.ulp, sg.NonDifferentiableError, "ulp: it is a built-in or C function"),
    (np.polyint, sg.NonDifferentiableError, "polyint: it is a numpy function with no gradient rule"),
    (functools.partial(math.ulp), sg.NonDifferentiableError, r"functools.partial\(ulp, \.\.\.\)"),
    (_opaque_callable(), sg.UnsupportedError, "callable Opaque object"),
    (3.0, TypeError, "differentiates functions"),
])
def test_what_is_neither_a_function_nor_a_primitive_is_refused_by_name(what, error, words):
    for ask in (lambda: sg.grad(what)(1.0), lambda: sg.vjp(what)(1.0), lambda: sg.source(what)):
        with pytest.raises(error, match=words):
            ask()


def test_a_callable_object_is_differentiated_as_its_call_method():
    # (A layer, a model: its __call__ is Python source, self a constant.)
    scale = _bound_holder()
    assert sg.grad(scale)(1.5) == 2.0
    assert "2.0 * x" in sg.source(scale)


# ----- A function that returns nothing -----

def returns_nothing(x):
    y = x * 2.0


def returns_on_one_path(x):
    if x > 0:
        return x * 2.0


def test_a_function_with_no_return_is_refused_when_compiled():
    with pytest.raises(sg.SrcgradError, match="returns_nothing returns nothing") as info:
        sg.grad(returns_nothing).compiled
    for ask in (lambda: sg.grad(returns_nothing)(1.0), lambda: sg.vjp(returns_nothing)(1.0),
                lambda: sg.source(returns_nothing)):
        with pytest.raises(sg.SrcgradError, match="it has no `return` with a value"):
            ask()
    assert info.value.lineno == returns_nothing.__code__.co_firstlineno


def test_a_path_that_returns_none_is_refused_when_it_runs():
    g = sg.grad(returns_on_one_path)
    for _ in range(2):
        assert g(1.5) == 2.0
    for call in (lambda: g(-1.0), lambda: g(-1.0, grad_outputs=1.0),
                 lambda: sg.vjp(returns_on_one_path)(-1.0)[1]()):
        with pytest.raises(ValueError, match="returned None"):
            call()
