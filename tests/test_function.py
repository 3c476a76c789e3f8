"""Custom Functions through their runtime interface, and Func.apply outside differentiation.

``function_forward`` / ``function_backward`` are what the compiler's generated
code calls; these tests drive them by hand, as a reverse sweep would.
"""

import numpy as np
import pytest

from srcgrad.errors import SrcgradError
from srcgrad.custom_function import (BackwardError, Function, FunctionCtx, function_backward,
                              function_forward, is_apply, is_once_differentiable,
                              once_differentiable)
from srcgrad.testing import compare_grads, numerical_grad


# ----- The seed's examples -----

class Func(Function):
    @staticmethod
    def forward(ctx, x, y, z):
        w = x * z
        out = x * y + y * z + w * y
        ctx.save_for_backward(x, y, w, out)
        ctx.z = z  # z is not an array
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, y, w, out = ctx.saved_tensors
        z = ctx.z
        gx = grad_out * (y + y * z)
        gy = grad_out * (x + z + w)
        gz = None
        return gx, gy, gz


class Sort(Function):
    @staticmethod
    def forward(ctx, x):
        idx = np.argsort(x, kind="stable")
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, idx)
        return x[idx], idx

    @staticmethod
    @once_differentiable
    def backward(ctx, g1, g2):  # still needs to accept g2
        x, idx = ctx.saved_tensors
        ctx.seen_g2 = g2
        grad_input = np.zeros_like(x)
        np.add.at(grad_input, idx, g1)  # torch's index_add_(0, idx, g1)
        return grad_input


def _func_value(x, y, z):
    return x * y + y * z + x * z * y


def test_seed_func_apply_outside():
    assert Func.apply(1.0, 2.0, 4) == 18.0
    a, b = np.float64(1.0), np.float64(2.0)
    assert Func.apply(a, b, 4) == 18.0


def test_seed_func_backward_numbers():
    out, ctx = function_forward(Func, (1.0, 2.0, 4), (True, True, False))
    assert out == 18.0
    assert ctx.z == 4 and len(ctx.saved_tensors) == 4
    assert function_backward(Func, ctx, 1.0) == (10.0, 9.0, None)


def test_seed_func_against_finite_differences():
    x = np.array([0.5, -1.0, 2.0])
    y = np.array([1.5, 0.25, -0.75])
    seed = np.array([1.0, -2.0, 0.5])
    out, ctx = function_forward(Func, (x, y, 4), (True, True, False))
    np.testing.assert_allclose(out, _func_value(x, y, 4))
    gx, gy, gz = function_backward(Func, ctx, seed)
    assert gz is None
    nx, ny = numerical_grad(_func_value, (x, y, 4), wrt=(0, 1), grad_outputs=seed)
    assert compare_grads(gx, nx, "x") and compare_grads(gy, ny, "y")


def test_seed_sort_marks_indices_non_differentiable():
    x = np.array([3.0, -1.0, 2.0, 0.5])
    (s, idx), ctx = function_forward(Sort, (x,), (True,))
    np.testing.assert_array_equal(s, np.sort(x))
    np.testing.assert_array_equal(idx, np.argsort(x))
    g1 = np.array([1.0, 2.0, 3.0, 4.0])
    # The reverse sweep gives 0.0 ("no gradient") for idx: backward gets zeros like idx.
    (gx,) = function_backward(Sort, ctx, (g1, 0.0))
    assert isinstance(ctx.seen_g2, np.ndarray)
    assert ctx.seen_g2.shape == idx.shape and ctx.seen_g2.dtype == idx.dtype
    assert not ctx.seen_g2.any()
    assert gx.shape == x.shape and gx.dtype == np.float64
    nx = numerical_grad(lambda v: np.sort(v), (x,), wrt=0, grad_outputs=g1)
    compare_grads(gx, nx, "x")


def test_non_differentiable_output_gets_zeros_even_with_a_cotangent():
    x = np.array([2.0, 1.0])
    _, ctx = function_forward(Sort, (x,), (True,))
    function_backward(Sort, ctx, [np.ones(2), np.ones(2)])
    assert not ctx.seen_g2.any()


def test_sort_apply_outside():
    s, idx = Sort.apply(np.array([2.0, 1.0, 3.0]))
    np.testing.assert_array_equal(s, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(idx, [1, 0, 2])


# ----- Materializing gradients -----

class Pair(Function):
    """Two float outputs; backward records what it was given."""

    materialize = True

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(Pair.materialize)
        return x * 2.0, x * 3.0

    @staticmethod
    def backward(ctx, ga, gb):
        ctx.given = (ga, gb)
        ga = 0.0 if ga is None else ga
        gb = 0.0 if gb is None else gb
        return ga * 2.0 + gb * 3.0


def test_materialize_grads_default_zeros():
    x = np.array([1.0, 2.0], dtype=np.float32)
    _, ctx = function_forward(Pair, (x,), (True,))
    (gx,) = function_backward(Pair, ctx, (None, np.ones(2, dtype=np.float32)))
    ga, gb = ctx.given
    assert isinstance(ga, np.ndarray) and ga.shape == (2,) and ga.dtype == np.float32
    assert not ga.any()
    np.testing.assert_array_equal(gx, [3.0, 3.0])
    assert gx.dtype == np.float32


def test_materialize_whole_tuple_zero():
    _, ctx = function_forward(Pair, (1.5,), (True,))
    assert function_backward(Pair, ctx, 0.0) == (0.0,)
    assert ctx.given == (0.0, 0.0)


def test_set_materialize_grads_false_passes_none(monkeypatch):
    monkeypatch.setattr(Pair, "materialize", False)
    x = np.array([1.0, 2.0])
    _, ctx = function_forward(Pair, (x,), (True,))
    (gx,) = function_backward(Pair, ctx, (0.0, np.ones(2)))
    assert ctx.given[0] is None
    np.testing.assert_array_equal(gx, [3.0, 3.0])
    _, ctx = function_forward(Pair, (x,), (True,))
    function_backward(Pair, ctx, (np.ones(2), None))
    assert ctx.given[1] is None


def test_scalar_cotangent_is_broadcast_to_the_output():
    x = np.array([1.0, 2.0, 3.0])
    _, ctx = function_forward(Pair, (x,), (True,))
    (gx,) = function_backward(Pair, ctx, (1.0, np.float64(0.5)))
    assert ctx.given[0].shape == (3,) and ctx.given[1].shape == (3,)
    np.testing.assert_allclose(gx, np.full(3, 3.5))


# ----- needs_input_grad -----

class Record(Function):
    @staticmethod
    def forward(ctx, *args):
        Record.last = ctx.needs_input_grad
        return args[0]

    @staticmethod
    def backward(ctx, g):
        return (g,) + (None,) * (len(ctx.needs_input_grad) - 1)


def test_needs_input_grad_given_by_the_compiler():
    _, ctx = function_forward(Record, (np.ones(2), 1.0, 3), (False, True, False))
    assert ctx.needs_input_grad == (False, True, False)
    assert Record.last == (False, True, False)


def test_needs_input_grad_outside():
    Record.apply(np.ones(2), np.ones(2, dtype=np.float32), 1.5, 3, True,
                 np.arange(3), "s", None, np.float64(2.0))
    assert Record.last == (True, True, True, False, False, False, False, False, True)


def test_apply_takes_no_keywords():
    with pytest.raises(TypeError, match="positional"):
        Record.apply(np.ones(2), y=1.0)


# ----- Validating backward's result -----

class TwoInputs(Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, g):
        return TwoInputs.result


def _run_two(monkeypatch, result, x=None, y=None):
    monkeypatch.setattr(TwoInputs, "result", result, raising=False)
    x = np.array([1.0, 2.0, 3.0]) if x is None else x
    y = np.array([4.0, 5.0, 6.0]) if y is None else y
    _, ctx = function_forward(TwoInputs, (x, y), (True, True))
    return function_backward(TwoInputs, ctx, np.ones(3))


def test_wrong_count(monkeypatch):
    with pytest.raises(BackwardError) as info:
        _run_two(monkeypatch, (np.ones(3),))
    text = str(info.value)
    assert "TwoInputs" in text and "1 gradient" in text and "2 inputs" in text
    with pytest.raises(BackwardError, match="TwoInputs.backward returned 3 gradients"):
        _run_two(monkeypatch, (np.ones(3), np.ones(3), np.ones(3)))
    with pytest.raises(BackwardError, match="TwoInputs"):
        _run_two(monkeypatch, np.ones(3))
    assert issubclass(BackwardError, SrcgradError)


def test_trailing_nones_allowed(monkeypatch):
    gx, gy = _run_two(monkeypatch, (np.ones(3), None, None))
    assert gy is None


def test_wrong_shape(monkeypatch):
    with pytest.raises(BackwardError) as info:
        _run_two(monkeypatch, (np.ones(3), np.ones(4)))
    text = str(info.value)
    assert "TwoInputs" in text and "input 1 ('y')" in text
    assert "(4,)" in text and "(3,)" in text


def test_integer_gradient(monkeypatch):
    with pytest.raises(BackwardError) as info:
        _run_two(monkeypatch, (np.ones(3, dtype=np.int64), None))
    text = str(info.value)
    assert "TwoInputs" in text and "int64" in text and "input 0 ('x')" in text
    with pytest.raises(BackwardError, match="TwoInputs"):
        _run_two(monkeypatch, (np.ones(3, dtype=bool), None))


def test_gradient_for_non_array_input(monkeypatch):
    class WithInt(Function):
        @staticmethod
        def forward(ctx, x, n):
            return x * n

        @staticmethod
        def backward(ctx, g):
            return g * 3, 1.0

    _, ctx = function_forward(WithInt, (np.ones(2), 3), (True, False))
    with pytest.raises(BackwardError, match=r"WithInt.*input 1 \('n'\).*None"):
        function_backward(WithInt, ctx, np.ones(2))


def test_broadcast_gradient_is_summed_and_cast(monkeypatch):
    x = np.array([[1.0], [2.0]], dtype=np.float32)
    y = np.ones((2, 3), dtype=np.float32)
    monkeypatch.setattr(TwoInputs, "result", (np.ones((2, 3)), np.ones((2, 3))), raising=False)
    _, ctx = function_forward(TwoInputs, (x, y), (True, True))
    gx, gy = function_backward(TwoInputs, ctx, np.ones((2, 3)))
    assert gx.shape == (2, 1) and gx.dtype == np.float32
    np.testing.assert_array_equal(gx, [[3.0], [3.0]])
    assert gy.dtype == np.float32


def test_scalar_input_gradients(monkeypatch):
    gx, gy = _run_two(monkeypatch, (2, np.float64(1.5)), x=1.0, y=2.0)
    assert gx == 2.0 and type(gx) is float and gy == 1.5
    with pytest.raises(BackwardError, match="scalar"):
        _run_two(monkeypatch, (np.ones(2), None), x=1.0, y=2.0)


def test_bare_value_for_one_input():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2.0 * x * g

    x = np.array([0.5, -1.5])
    y, ctx = function_forward(Square, (x,), (True,))
    (gx,) = function_backward(Square, ctx, np.array([1.0, 2.0]))
    compare_grads(gx, numerical_grad(lambda v: v * v, (x,), grad_outputs=np.array([1.0, 2.0])))
    np.testing.assert_array_equal(Square.apply(x), x * x)


# ----- Other styles, marks and recognition -----

def test_setup_context_style():
    class Exp(Function):
        @staticmethod
        def forward(x):
            return np.exp(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = np.array([0.1, 1.0])
    y, ctx = function_forward(Exp, (x,), (True,))
    (gx,) = function_backward(Exp, ctx, np.ones(2))
    compare_grads(gx, numerical_grad(lambda v: np.sum(np.exp(v)), (x,)))
    np.testing.assert_allclose(Exp.apply(x), np.exp(x))


def test_vjp_instead_of_backward():
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return 2.0 * x

        @staticmethod
        def vjp(ctx, g):
            return 2.0 * g

    _, ctx = function_forward(Double, (1.0,), (True,))
    assert function_backward(Double, ctx, 1.0) == (2.0,)


def test_once_differentiable_marks():
    assert is_once_differentiable(Func) and is_once_differentiable(Sort)
    assert not is_once_differentiable(Pair)
    assert Func.backward.__srcgrad_once_differentiable__ is True

    def backward(ctx, g):
        return g
    assert once_differentiable(backward) is backward   # unchanged, source still readable
    marked = once_differentiable(staticmethod(lambda ctx, g: g))
    assert isinstance(marked, staticmethod) and marked.__func__.__srcgrad_once_differentiable__


def test_is_apply():
    assert is_apply(Func.apply) is Func
    assert is_apply(Sort.apply) is Sort
    assert is_apply(Function.apply) is None
    assert is_apply(Func) is None
    assert is_apply(Func.forward) is None
    assert is_apply(np.sum) is None
    assert is_apply(None) is None

    class Sub(Func):
        pass
    assert is_apply(Sub.apply) is Sub


def test_ctx_basics():
    ctx = FunctionCtx()
    assert ctx.saved_tensors == ()
    ctx.save_for_backward(1, None, np.ones(1))
    assert len(ctx.saved_tensors) == 3 and ctx.saved_tensors[1] is None
    ctx.anything = "ok"
    assert ctx.materialize_grads
    ctx.set_materialize_grads(False)
    assert not ctx.materialize_grads


def test_base_function_errors():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x

    _, ctx = function_forward(NoBackward, (1.0,), (True,))
    with pytest.raises(NotImplementedError):
        function_backward(NoBackward, ctx, 1.0)
    with pytest.raises(RuntimeError, match="apply"):
        NoBackward()(1.0)


# ----- Through the compiler (skipped until it understands Func.apply) -----

def seed_fn(a, b):
    return Func.apply(a, b, 4)


def sort_fn(x, w):
    s, idx = Sort.apply(x)
    return np.sum(s * w)


def _compiled_or_skip(fn, wrt, *args):
    """The gradient through Func.apply: the compiler differentiates it, so any error fails."""
    import srcgrad as sg
    return sg.grad(fn, wrt=wrt)(*args)


def test_seed_func_through_the_compiler():
    assert _compiled_or_skip(seed_fn, (0, 1), 1.0, 2.0) == (10.0, 9.0)


def test_sort_through_the_compiler():
    from srcgrad.testing import gradcheck
    x = np.array([3.0, -1.0, 2.0, 0.5])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    _compiled_or_skip(sort_fn, 0, x, w)
    assert gradcheck(sort_fn, (x, w), wrt=0) is True


def test_once_differentiable_refuses_second_order():
    import srcgrad as sg
    _compiled_or_skip(seed_fn, 0, 1.0, 2.0)
    with pytest.raises(SrcgradError, match="once_differentiable"):
        sg.grad(sg.grad(seed_fn, 0), 0)(1.0, 2.0)
