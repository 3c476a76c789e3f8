"""The PyTorch-like layer, used as a user would use it.

Grad modes (no_grad, enable_grad, set_grad_enabled, is_grad_enabled) inside a
differentiated function and outside one; detach; hooks (in the code and
``hooks=``); gradients with respect to intermediates; custom ``sg.Function``;
``@sg.adjoint``; ``active_variables``. Every gradient is compared with
central finite differences (``srcgrad.testing``), or with a value worked out
by hand where finite differences cannot reach (the gradient of a local).

Where a ``no_grad`` block or a ``detach`` makes a value a constant, the
expected gradient is the finite-difference gradient of a twin function that
takes that value as an extra argument, evaluated at the value the original
computes.
"""

import functools
import threading

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import srcgrad as sg
from srcgrad import rules
from srcgrad.testing import check_grads, numerical_grad

X = np.array([0.7, -1.3, 2.1])
W = np.array([0.5, 1.5, -0.25])


@pytest.fixture(autouse=True)
def grad_mode_on():
    """Every test starts, and must end, with gradients enabled."""
    assert sg.is_grad_enabled()
    yield
    left_on = sg.is_grad_enabled()
    sg.set_grad_enabled(True)
    assert left_on, "the test left grad mode off"


def _expect_const(twin, args, const, wrt=0):
    """Finite differences of ``twin(*args, const)``, the constant held fixed."""
    return numerical_grad(twin, tuple(args) + (const,), wrt=wrt)


# ----- no_grad inside a differentiated function -----

def block_sum(x, w):
    y = x * w
    with sg.no_grad():
        s = np.sum(y * y)
    z = np.sum(np.sin(y) * s)
    return z


def block_sum_twin(x, w, s):
    y = x * w
    z = np.sum(np.sin(y) * s)
    return z


def test_no_grad_block_gives_the_gradient_with_its_values_constant():
    s = np.sum((X * W) ** 2)
    for wrt in (0, 1):
        expected = _expect_const(block_sum_twin, (X, W), s, wrt=wrt)
        assert_allclose(sg.grad(block_sum, wrt=wrt)(X, W), expected, rtol=1e-6, atol=1e-8)
    # ... and not the gradient of the whole function.
    full = numerical_grad(block_sum, (X, W), wrt=0)
    assert not np.allclose(sg.grad(block_sum)(X, W), full)


def test_no_grad_block_keeps_the_value():
    value, _ = sg.value_and_grad(block_sum)(X, W)
    assert_allclose(value, block_sum(X, W))


def nested_modes(x):
    with sg.no_grad():
        a = np.exp(x)
        with sg.enable_grad():
            b = x * x * a
        c = b * 2
    return np.sum(a * x + b + c)


def nested_modes_twin(x, consts):
    a, c = consts
    b = x * x * a
    return np.sum(a * x + b + c)


def test_enable_grad_nested_in_no_grad():
    a = np.exp(X)
    c = X * X * a * 2
    # b is differentiated again (through x only: a is a constant); c is not.
    expected = numerical_grad(lambda x: nested_modes_twin(x, (a, c)), (X,))
    assert_allclose(sg.grad(nested_modes)(X), expected, rtol=1e-6, atol=1e-8)


def mode_flag(x, train):
    with sg.set_grad_enabled(train):
        y = np.sin(x) * x
    return np.sum(y * x)


def mode_flag_twin(x, y):
    return np.sum(y * x)


def test_set_grad_enabled_with_a_run_time_flag():
    g = sg.grad(mode_flag)
    # True: the whole function is differentiated.
    assert check_grads(mode_flag, (X, True))
    # False: y is a constant; the same compiled gradient serves both.
    expected = _expect_const(mode_flag_twin, (X,), np.sin(X) * X)
    assert_allclose(g(X, False), expected, rtol=1e-6, atol=1e-8)
    assert_allclose(g(X, True), numerical_grad(mode_flag, (X, True)), rtol=1e-6, atol=1e-8)


def mode_from_data(x):
    with sg.set_grad_enabled(x[0] > 0):
        y = x * x
    return np.sum(y * x)


def test_set_grad_enabled_flag_computed_from_the_data():
    assert_allclose(sg.grad(mode_from_data)(X), 3 * X ** 2)      # X[0] > 0
    assert_allclose(sg.grad(mode_from_data)(-X), X ** 2)         # y constant


def test_set_grad_enabled_with_constant_flags():
    def on(x):
        with sg.set_grad_enabled(True):
            y = x * x
        return np.sum(y)

    def off(x):
        with sg.set_grad_enabled(False):
            y = x * x
        return np.sum(y * x)

    assert check_grads(on, (X,))
    assert_allclose(sg.grad(off)(X), X ** 2)


@sg.no_grad()
def scale_of(x):
    return np.sqrt(np.sum(x * x))


@sg.no_grad()
def two_constants(x):
    return np.sum(x), x * 3


def uses_no_grad_helper(x):
    return np.sum(np.tanh(x) * scale_of(x))


def uses_tuple_helper(x):
    s, t = two_constants(x)
    return np.sum(x * t) + s * np.sum(x * x)


def test_no_grad_decorated_helper_returns_constants():
    expected = _expect_const(lambda x, k: np.sum(np.tanh(x) * k), (X,), np.linalg.norm(X))
    assert_allclose(sg.grad(uses_no_grad_helper)(X), expected, rtol=1e-6, atol=1e-8)
    s, t = np.sum(X), X * 3
    assert_allclose(sg.grad(uses_tuple_helper)(X), t + s * 2 * X)


def test_no_grad_decorated_helper_outside_restores_the_mode():
    assert_allclose(scale_of(X), np.linalg.norm(X))
    assert sg.is_grad_enabled()


def test_set_grad_enabled_as_a_decorator_does_not_change_the_mode():
    # PyTorch: @torch.set_grad_enabled(False) switches the mode inside the
    # decorated function only; decorating leaves the mode as it was.
    try:
        @sg.set_grad_enabled(False)
        def inside(x):
            return sg.is_grad_enabled()

        mode_after_decorating = sg.is_grad_enabled()
    finally:
        sg.set_grad_enabled(True)
    assert mode_after_decorating, "decorating with set_grad_enabled(False) turned grad off"
    assert inside(X) is False
    assert sg.is_grad_enabled()


def helper_with_block(x):
    with sg.no_grad():
        k = np.sum(x)
    return x * k


def calls_helper_with_block(x):
    return np.sum(np.cos(helper_with_block(x)))


def test_no_grad_block_in_a_called_helper():
    k = np.sum(X)
    expected = _expect_const(lambda x, c: np.sum(np.cos(x * c)), (X,), k)
    assert_allclose(sg.grad(calls_helper_with_block)(X), expected, rtol=1e-6, atol=1e-8)


def block_in_loop(x):
    s = 0.0
    for i in range(3):
        with sg.no_grad():
            c = np.sum(x * x) * (i + 1)
        s = s + np.sum(np.sin(x) * c)
    return s


def test_no_grad_block_in_a_loop():
    total = np.sum(X * X) * (1 + 2 + 3)
    expected = _expect_const(lambda x, c: np.sum(np.sin(x) * c), (X,), total)
    assert_allclose(sg.grad(block_in_loop)(X), expected, rtol=1e-6, atol=1e-8)


def in_place_in_block(x):
    y = x * 2
    with sg.no_grad():
        y += 1
    return np.sum(y * x)


def test_in_place_update_in_a_no_grad_block_makes_a_constant():
    # docs/pytorch.md, "PyTorch behaviour deliberately not mirrored": after
    # the block y is a constant (2x + 1), whatever statement assigned it.
    assert_allclose(sg.grad(in_place_in_block)(X), 2 * X + 1)


def return_in_block(x):
    y = x * x
    with sg.no_grad():
        return np.sum(y * x)


def test_return_inside_a_no_grad_block():
    # As in PyTorch, a result computed under no_grad has no gradient: zeros
    # when asked for with materialize_grads, an error naming x otherwise.
    assert_array_equal(sg.grad(return_in_block, materialize_grads=True)(X), np.zeros(3))
    with pytest.raises(RuntimeError, match="'x'"):
        sg.grad(return_in_block)(X)


def branches_on_grad_mode(x):
    with sg.no_grad():
        if sg.is_grad_enabled():
            c = x * 2
        else:
            c = x * 3
    return np.sum(c) + np.sum(x * x)


def test_is_grad_enabled_inside_a_no_grad_block_of_f():
    # The forward sweep must compute what f computes: inside the block the
    # mode is off, so c = 3x.
    value, grad = sg.value_and_grad(branches_on_grad_mode)(X)
    assert_allclose(value, branches_on_grad_mode(X))
    assert_allclose(value, np.sum(3 * X) + np.sum(X * X))
    assert_allclose(grad, 2 * X)


def set_mode_as_statement(x):
    sg.set_grad_enabled(False)
    y = x * x
    sg.set_grad_enabled(True)
    return np.sum(y * x)


def test_set_grad_enabled_as_a_statement_inside_f_is_not_ignored():
    # In PyTorch y is computed with grad off (a constant, gradient x**2).
    # srcgrad may refuse the statement form, but must not differentiate y.
    try:
        g = sg.grad(set_mode_as_statement)(X)
    except sg.SrcgradError:
        return
    finally:
        sg.set_grad_enabled(True)
    assert_allclose(g, X ** 2)


# ----- grad mode outside -----

def plain(x, w):
    y = x * w
    return np.sum(y * y)


def test_gradient_asked_for_inside_no_grad_raises_pytorch_error():
    with sg.no_grad():
        assert not sg.is_grad_enabled()
        for ask in (lambda: sg.grad(plain)(X, W),
                    lambda: sg.value_and_grad(plain)(X, W),
                    lambda: sg.vjp(plain)(X, W)):
            with pytest.raises(RuntimeError, match="does not require grad"):
                ask()
    assert sg.is_grad_enabled()


def test_gradient_asked_for_with_set_grad_enabled_false_raises():
    with sg.set_grad_enabled(False):
        with pytest.raises(RuntimeError,
                           match="element 0 of tensors does not require grad and does not have a grad_fn"):
            sg.grad(plain)(X, W)
    assert sg.is_grad_enabled()


def test_set_grad_enabled_as_a_function_call():
    sg.set_grad_enabled(False)
    try:
        assert not sg.is_grad_enabled()
        with pytest.raises(RuntimeError, match="does not require grad"):
            sg.grad(plain)(X, W)
    finally:
        sg.set_grad_enabled(True)
    assert sg.is_grad_enabled()


def test_enable_grad_inside_no_grad_outside():
    with sg.no_grad():
        with sg.enable_grad():
            assert sg.is_grad_enabled()
            assert check_grads(plain, (X, W), wrt=(0, 1))
        assert not sg.is_grad_enabled()


def test_backward_obtained_before_no_grad_still_works():
    out, backward = sg.vjp(plain, wrt=(0, 1))(X, W)
    with sg.no_grad():
        gx, gw = backward()
    expected = numerical_grad(plain, (X, W), wrt=(0, 1))
    assert_allclose(gx, expected[0], rtol=1e-6)
    assert_allclose(gw, expected[1], rtol=1e-6)


def test_grad_mode_is_restored_after_an_exception():
    with pytest.raises(KeyError):
        with sg.no_grad():
            raise KeyError("boom")
    assert sg.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = []
    with sg.no_grad():
        thread = threading.Thread(target=lambda: seen.append(sg.is_grad_enabled()))
        thread.start()
        thread.join()
        assert not sg.is_grad_enabled()
    assert seen == [True]


# ----- detach -----

def detached(x):
    y = sg.detach(x) * x
    z = sg.stop_gradient(np.sin(x)) + x
    return np.sum(y * z)


def detached_twin(x, consts):
    dx, sx = consts
    return np.sum((dx * x) * (sx + x))


def test_detach_and_stop_gradient():
    expected = numerical_grad(lambda x: detached_twin(x, (X, np.sin(X))), (X,))
    assert_allclose(sg.grad(detached)(X), expected, rtol=1e-6, atol=1e-8)
    assert sg.stop_gradient is sg.detach
    assert sg.detach(X) is X


def detach_in_loop(x):
    y = x
    for i in range(3):
        y = sg.detach(y) * x
    return np.sum(y)


def test_detach_in_a_loop():
    # y ends as x**4 = c * x with c = x**3 the detached previous value: each
    # iteration cuts the path through the previous y, so the gradient is c.
    assert_allclose(detach_in_loop(X), np.sum(X ** 4))
    expected = _expect_const(lambda x, c: np.sum(c * x), (X,), X ** 3)
    assert_allclose(sg.grad(detach_in_loop)(X), expected, rtol=1e-6, atol=1e-8)


# ----- active_variables agrees with no_grad and detach -----

def volatile_block(x, w):
    with sg.no_grad():
        y = x * w
    z = y + w
    return z


def volatile_detach(x, w):
    y = sg.detach(x * w)
    z = y + w
    return z


def detach_input_only(x, w):
    y = sg.detach(x) * w
    z = y + w
    return z


def test_active_variables_agree_with_no_grad_and_detach():
    for fn in (volatile_block, volatile_detach):
        active = sg.active_variables(fn, wrt="w")
        assert ("x" in active, "w" in active, "y" in active, "z" in active) == (
            False, True, False, True), fn.__name__
        # And the gradient is what that says: only the "+ w" path counts.
        assert_array_equal(sg.grad(fn, wrt="w")(X, W, grad_outputs=np.ones(3)), np.ones(3))
    active = sg.active_variables(detach_input_only, wrt="w")
    assert "y" in active
    assert_allclose(sg.grad(detach_input_only, wrt="w")(X, W, grad_outputs=np.ones(3)), X + 1)
    # A run-time flag: y may carry a gradient, so it is active.
    assert "y" in sg.active_variables(mode_flag, wrt="x")


# ----- hooks -----

_seen = []


def record(grad):
    _seen.append(np.array(grad, copy=True))


def double(grad):
    return grad * 2


def used_twice(x):
    y = np.sin(x)
    sg.register_hook(y, record)
    z = np.sum(y * y) + np.sum(y * x)
    return z


def test_register_hook_sees_the_complete_gradient():
    _seen.clear()
    g = sg.grad(used_twice)(X)
    assert len(_seen) == 1
    y = np.sin(X)
    assert_allclose(_seen[0], 2 * y + X)                      # dz/dy, both uses
    assert_allclose(_seen[0], sg.grad(used_twice, wrt="y")(X))
    assert_allclose(g, numerical_grad(used_twice, (X,)), rtol=1e-6, atol=1e-8)


def replaced_in_code(x):
    y = x * x
    sg.register_hook(y, double)
    return np.sum(y * x)


def test_register_hook_returning_an_array_replaces_the_gradient():
    # dz/dy = x, doubled to 2x, then through y = x*x: 2x * 2x; plus y's own x**2.
    assert_allclose(sg.grad(replaced_in_code)(X), X ** 2 + 4 * X ** 2)


def three_steps(x, w):
    y = x * w
    u = np.tanh(y)
    z = np.sum(u * u)
    return z


def test_hooks_from_outside_see_and_replace():
    _seen.clear()
    g = sg.grad(three_steps, wrt="w", hooks={"u": record})(X, W)
    assert_allclose(g, numerical_grad(three_steps, (X, W), wrt=1), rtol=1e-6, atol=1e-8)
    assert len(_seen) == 1
    assert_allclose(_seen[0], 2 * np.tanh(X * W))
    # The gradient with respect to u is what the hook saw.
    assert_allclose(sg.grad(three_steps, wrt="u")(X, W), _seen[0])
    # A replacing hook scales everything upstream of u.
    doubled = sg.grad(three_steps, wrt="w", hooks={"u": double})(X, W)
    assert_allclose(doubled, 2 * g)
    # The hook belongs to that gradient function only.
    _seen.clear()
    sg.grad(three_steps, wrt="w")(X, W)
    assert _seen == []


def test_hooks_on_vjp_fire_at_each_backward():
    _seen.clear()
    out, backward = sg.vjp(three_steps, wrt="w", hooks={"y": record})(X, W)
    first = backward(retain_graph=True)
    second = backward()
    assert len(_seen) == 2
    assert_allclose(_seen[0], _seen[1])
    assert_allclose(first, second)
    with pytest.raises(RuntimeError, match="retain_graph"):
        backward()


def power_loop(x):
    y = x
    for i in range(3):
        y = y * x
    return np.sum(y)


def test_hook_on_a_name_bound_in_a_loop_fires_per_binding_last_first():
    _seen.clear()
    x = np.array([2.0, 0.5])
    g = sg.grad(power_loop, hooks={"y": record})(x)
    assert_allclose(g, 4 * x ** 3)
    # Bindings x**4, x**3, x**2, x: gradients 1, x, x**2, x**3.
    assert len(_seen) == 4
    for got, want in zip(_seen, [np.ones(2), x, x ** 2, x ** 3]):
        assert_allclose(got, want)
    # wrt a name bound several times: the last binding, the first hook call.
    assert_allclose(sg.grad(power_loop, wrt="y")(x), _seen[0])


def hook_in_loop(x):
    y = x
    for i in range(3):
        y = y * x
        sg.register_hook(y, record)
    return np.sum(y)


def test_register_hook_in_a_loop_fires_for_each_registered_binding():
    # PyTorch registers on the tensor of each iteration: x**2, x**3, x**4,
    # not on the first y (x itself), which no register_hook call saw.
    _seen.clear()
    x = np.array([2.0])
    sg.grad(hook_in_loop)(x)
    assert [float(g[0]) for g in _seen] == [1.0, 2.0, 4.0]


def hook_after_rebinding(x):
    y = x * 2
    y = y * 3
    sg.register_hook(y, double)
    return np.sum(y * 5)


def test_register_hook_applies_to_the_binding_it_was_called_on():
    # PyTorch: the hook is on the second y only: 5 * 2 (hook) * 3 * 2 = 60.
    assert_allclose(sg.grad(hook_after_rebinding)(np.array([1.0])), [60.0])


def hook_if(x, flag):
    y = x * 3
    if flag:
        sg.register_hook(y, double)
    return np.sum(y)


def test_register_hook_not_executed_does_not_fire():
    assert_allclose(sg.grad(hook_if)(X, True), np.full(3, 6.0))
    assert_allclose(sg.grad(hook_if)(X, False), np.full(3, 3.0))


def test_hook_on_a_parameter():
    _seen.clear()
    g = sg.grad(three_steps, wrt="w", hooks={"w": record})(X, W)
    assert len(_seen) == 1
    assert_allclose(_seen[0], g)
    replaced = sg.grad(three_steps, wrt="w", hooks={"w": double})(X, W)
    assert_allclose(replaced, 2 * g)
    # Replacing x's gradient does not change w's.
    assert_allclose(sg.grad(three_steps, wrt="w", hooks={"x": double})(X, W), g)


def test_hook_on_an_unknown_name_is_an_error():
    with pytest.raises(ValueError, match="'q'"):
        sg.grad(three_steps, hooks={"q": record})(X, W)


def test_wrt_intermediate_agrees_with_finite_differences_of_the_rest():
    # The gradient with respect to u is the gradient of the rest of the
    # function, taken with u as an input.
    gu = sg.grad(three_steps, wrt="u")(X, W)
    u = np.tanh(X * W)
    assert_allclose(gu, numerical_grad(lambda u: np.sum(u * u), (u,)), rtol=1e-6)


# ----- custom Functions -----

class SinCos(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x), np.cos(x)

    @staticmethod
    def backward(ctx, gs, gc):
        (x,) = ctx.saved_tensors
        return gs * np.cos(x) - gc * np.sin(x)


def both_outputs(x):
    s, c = SinCos.apply(x)
    return np.sum(s * c * x)


def first_output_only(x):
    s, c = SinCos.apply(x)
    return np.sum(s * s)


def tuple_output_indexed(x):
    sc = SinCos.apply(x)
    return np.sum(sc[1] * x)


def function_in_loop(x):
    acc = x
    for i in range(3):
        s, c = SinCos.apply(acc)
        acc = s + c * 0.5
    return np.sum(acc)


@pytest.mark.parametrize("fn", [both_outputs, first_output_only, tuple_output_indexed,
                                function_in_loop])
def test_function_with_several_outputs_against_finite_differences(fn):
    assert check_grads(fn, (X,))


def test_function_apply_outside_runs_forward():
    s, c = SinCos.apply(X)
    assert_allclose(s, np.sin(X))
    assert_allclose(c, np.cos(X))


class Func(sg.Function):
    @staticmethod
    def forward(ctx, x, y, z):
        w = x * z
        out = x * y + y * z + w * y
        ctx.save_for_backward(x, y, w, out)
        ctx.z = z
        return out

    @staticmethod
    @sg.once_differentiable
    def backward(ctx, grad_out):
        x, y, w, out = ctx.saved_tensors
        z = ctx.z
        return grad_out * (y + y * z), grad_out * (x + z + w), None


def seed_func(a, b, c):
    d = Func.apply(a, b, c)
    return d


def test_seed_func_values_and_finite_differences():
    assert Func.apply(1.0, 2.0, 4) == 18.0
    d, (ga, gb) = sg.value_and_grad(seed_func, wrt=(0, 1))(1.0, 2.0, 4)
    assert (d, ga, gb) == (18.0, 10.0, 9.0)
    assert isinstance(ga, float) and isinstance(gb, float)
    assert check_grads(seed_func, (0.3, -1.7, 4), wrt=(0, 1))
    a, b = np.array([0.3, 1.1]), np.array([-0.4, 2.0])
    assert check_grads(seed_func, (a, b, 4), wrt=(0, 1), grad_outputs=np.array([1.0, -2.0]))


def test_once_differentiable_refuses_second_order():
    with pytest.raises(sg.SrcgradError, match="once_differentiable"):
        sg.grad(sg.grad(seed_func, wrt=0), wrt=0)(1.0, 2.0, 4)


class Sort(sg.Function):
    @staticmethod
    def forward(ctx, x):
        idx = np.argsort(x)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, idx)
        return x[idx], idx

    @staticmethod
    @sg.once_differentiable
    def backward(ctx, g1, g2):
        x, idx = ctx.saved_tensors
        assert_array_equal(g2, np.zeros(idx.shape))   # zeros for the marked output
        grad_input = np.zeros_like(x)
        np.add.at(grad_input, idx, g1)
        return grad_input


def weighted_sort(x, w):
    s, idx = Sort.apply(x)
    return np.sum(s * w) + np.sum(idx * 0.0)


def sorted_values(x):
    s, idx = Sort.apply(x)
    return s


def test_mark_non_differentiable_sort():
    assert check_grads(weighted_sort, (X, W))
    s, g = sg.value_and_grad(sorted_values)(np.array([3.0, 1.0, 2.0]),
                                            grad_outputs=np.array([1.0, 2.0, 3.0]))
    assert_array_equal(s, [1.0, 2.0, 3.0])
    assert_array_equal(g, [3.0, 1.0, 2.0])
    s, idx = Sort.apply(np.array([3.0, 1.0, 2.0]))          # outside: forward only
    assert_array_equal(idx, [1, 2, 0])


class RecordNeeds(sg.Function):
    needs = []

    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, g):
        RecordNeeds.needs.append(ctx.needs_input_grad)
        return g, g


def record_needs(x, y):
    return np.sum(RecordNeeds.apply(x, y))


def test_needs_input_grad_follows_wrt():
    RecordNeeds.needs.clear()
    sg.grad(record_needs, wrt=0)(X, W)
    sg.grad(record_needs, wrt=(0, 1))(X, W)
    assert RecordNeeds.needs == [(True, False), (True, True)]


class Stretch(sg.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return np.ones(2)            # wrong shape


class TooMany(sg.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2, g


def uses_stretch(x):
    return np.sum(Stretch.apply(x))


def uses_too_many(x):
    return np.sum(TooMany.apply(x))


def test_wrong_backward_raises_backward_error_naming_the_class():
    with pytest.raises(sg.BackwardError, match="Stretch.*shape"):
        sg.grad(uses_stretch)(X)
    with pytest.raises(sg.BackwardError, match="TooMany"):
        sg.grad(uses_too_many)(X)
    assert issubclass(sg.BackwardError, sg.SrcgradError)


class WrongExp(sg.Function):
    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * 1.01          # a wrong derivative


def uses_wrong_exp(x):
    return np.sum(WrongExp.apply(x))


def test_gradcheck_catches_a_wrong_backward():
    with pytest.raises(sg.GradcheckError, match="finite differences"):
        sg.gradcheck(uses_wrong_exp, (X,))


def function_in_no_grad(x):
    with sg.no_grad():
        s, c = SinCos.apply(x)
    return np.sum(s * x)


def test_function_in_a_no_grad_block_is_constant():
    assert_allclose(sg.grad(function_in_no_grad)(X), np.sin(X))


def test_retain_graph_through_a_function_in_a_loop():
    out, backward = sg.vjp(function_in_loop)(X)
    first = backward(retain_graph=True)
    second = backward()
    assert_allclose(first, second)
    assert_allclose(first, numerical_grad(function_in_loop, (X,)), rtol=1e-6, atol=1e-8)
    with pytest.raises(RuntimeError, match="retain_graph"):
        backward()


# ----- @sg.adjoint -----

def _opaque_sin(self, x):
    return np.sin(x) * 2.0


class _Opaque:
    """A callable with no Python source srcgrad could read (like a C function): its
    __call__ is no Python function (an object whose __call__ is one is inlined)."""

    __call__ = functools.partialmethod(_opaque_sin)


opaque_sin = _Opaque()


def uses_opaque(x):
    return np.sum(opaque_sin(x) * x)


def test_adjoint_on_a_function_without_a_rule(isolated_rules):
    assert rules.lookup(opaque_sin) is None
    with pytest.raises(sg.NonDifferentiableError, match="no gradient rule"):
        sg.grad(uses_opaque)(X)

    @sg.adjoint(opaque_sin)
    def opaque_rule(grad_output, output, x):
        return grad_output * 2.0 * np.cos(x)

    assert check_grads(uses_opaque, (X,))


class _Opaque2:
    def __call__(self, x, y):
        return x * np.exp(y)


opaque_two = _Opaque2()


def uses_opaque_two(x, y):
    return np.sum(opaque_two(x, y) ** 2)


def test_adjoint_with_two_arguments(isolated_rules):
    @sg.adjoint(opaque_two)
    def rule(grad_output, output, x, y):
        return grad_output * np.exp(y), grad_output * output

    assert check_grads(uses_opaque_two, (X, W), wrt=(0, 1))


def test_adjoint_for_scipy_erf_replaces_the_builtin_rule(isolated_rules):
    special = pytest.importorskip("scipy.special")

    def uses_erf(x):
        return np.sum(special.erf(x) * x)

    assert check_grads(uses_erf, (X,))   # srcgrad's own rule (rules/scipy_special.py)

    @sg.adjoint(special.erf)
    def doubled(grad_output, output, x):   # the user's rule wins, even a wrong one
        return grad_output * 4.0 / np.sqrt(np.pi) * np.exp(-x * x)

    want = special.erf(X) + X * 4.0 / np.sqrt(np.pi) * np.exp(-X * X)
    assert_allclose(sg.grad(uses_erf)(X), want)


def uses_opaque_again(x):
    return np.sum(opaque_sin(x))


def test_registering_a_new_rule_replaces_the_old_one(isolated_rules):
    @sg.adjoint(opaque_sin)
    def wrong_rule(grad_output, output, x):
        return grad_output * 0.0

    assert_array_equal(sg.grad(uses_opaque_again)(X), np.zeros(3))

    @sg.adjoint(opaque_sin)
    def right_rule(grad_output, output, x):
        return grad_output * 2.0 * np.cos(x)

    # The gradient compiled with the first rule must not be reused.
    assert_allclose(sg.grad(uses_opaque_again)(X), 2.0 * np.cos(X))
