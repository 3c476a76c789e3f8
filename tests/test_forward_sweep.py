"""The forward sweep reads like the user's code (optimize/forward_temporaries.py,
optimize/loop_invariants.py), the composed gradient releases only what frees memory,
and the gradients and errors stay those of the function."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import check_grads


def thermal(u, T_out, price):
    dt = 0.25
    C = 10.0
    UA = 0.5
    eta = 0.95
    T_low = 20.0
    w_comfort = 5.0
    T = 19.0
    cost = 0.0
    for t in range(len(u)):
        T = T + dt / C * (UA * (T_out[t] - T) + eta * u[t])
        cost = cost + price[t] * u[t] * dt
        if T < T_low:
            cost = cost + w_comfort * (T_low - T) ** 2
    return cost


def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    logp = z - lse
    return -np.sum(Y * logp) / X.shape[0]


def _thermal_args(n=12):
    rng = np.random.default_rng(3)
    return 6.0 + rng.random(n), 5.0 + rng.random(n), 0.2 + 0.1 * rng.random(n)


def _mlp_args():
    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((4, 3)), np.eye(2)[rng.integers(0, 2, 4)]
    return rng.standard_normal((3, 5)), rng.standard_normal(5), rng.standard_normal((5, 2)), \
        rng.standard_normal(2), X, Y


def _function(source, name):
    """The text of the generated function ``name`` in ``source``."""
    start = source.index(f"def {name}(")
    end = source.find("\n\n\n", start)
    return source[start:] if end < 0 else source[start:end + 1]


def test_the_thermal_forward_sweep_is_the_users_loop():
    source = sg.source(thermal, args=_thermal_args())
    assert _function(source, "thermal_forward") == '''\
def thermal_forward(u, T_out, price):
    tape = []
    push = tape.append
    dt = 0.25
    C = 10.0
    UA = 0.5
    eta = 0.95
    T_low = 20.0
    w_comfort = 5.0
    T = 19.0
    cost = 0.0
    range_t = range(len(u))
    dt_over_C = dt / C
    for t in range_t:
        T = T + dt_over_C * (UA * (T_out[t] - T) + eta * u[t])
        cost = cost + price[t] * u[t] * dt
        cond = T < T_low
        if cond:
            # cost = cost + w_comfort * (T_low - T) ** 2
            T_low_minus_T = T_low - T
            cost = cost + w_comfort * T_low_minus_T ** 2
            push(T_low_minus_T)
        push(cond)
    return cost, (tape, UA, dt, dt_over_C, eta, price, range_t, u, w_comfort)
'''
    check_grads(thermal, _thermal_args(), wrt=(0, 1, 2), atol=1e-6, rtol=1e-6)


def test_the_composed_thermal_gradient_releases_nothing_that_holds_one_number():
    args = _thermal_args()
    composed = sg.source(thermal, args=args, composed=True)
    assert "= None\n    dcost = 1.0" not in composed   # no release after the loop
    assert "tape = None" not in composed and "push = None" not in composed
    assert "(C) =" not in composed
    grad = sg.grad(thermal, wrt=(0, 1, 2))
    first, second = grad(*args), grad(*args)   # the second call runs the composed function
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    check_grads(thermal, args, wrt=(0, 1, 2), atol=1e-6, rtol=1e-6)


def test_the_mlp_forward_sweep_keeps_only_what_the_backward_sweep_reads():
    # The softmax's maximum m has no adjoint (analysis/shift.py): neither it nor the
    # logits' values are saved, only the logits' shape.
    source = sg.source(mlp, args=_mlp_args(), wrt=(0, 1, 2, 3))
    assert _function(source, "mlp_forward") == '''\
def mlp_forward(W1, b1, W2, b2, X, Y):
    # h = np.tanh(X @ W1 + b1)
    X_matmul_W1 = X @ W1
    h = np.tanh(X_matmul_W1 + b1)
    # logits = h @ W2 + b2
    h_matmul_W2 = h @ W2
    logits = h_matmul_W2 + b2
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    # lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    exp_z = np.exp(z)
    sum_exp_z = np.sum(exp_z, axis=1, keepdims=True)
    lse = np.log(sum_exp_z)
    logp = z - lse
    # return -np.sum(Y * logp) / X.shape[0]
    Y_times_logp = Y * logp
    sum_Y_times_logp = np.sum(Y_times_logp)
    X_shape_item = X.shape[0]
    neg_sum_Y_times_logp_2 = -sum_Y_times_logp / X_shape_item
    return neg_sum_Y_times_logp_2, (W1, W2, X, rt.shape_of(X_matmul_W1),
        X_shape_item, Y, rt.shape_of(Y_times_logp), rt.shape_of(b1), rt.
        shape_of(b2), exp_z, h, rt.shape_of(h_matmul_W2), rt.shape_of(
        logits), rt.shape_of(logp), rt.shape_of(lse), sum_exp_z, rt.shape_of(z)
        )
'''
    check_grads(mlp, _mlp_args(), wrt=(0, 1, 2, 3), atol=1e-6, rtol=1e-5)
    check_grads(mlp, _mlp_args(), wrt=(0, 1, 2, 3), atol=1e-6, rtol=1e-5, fuse=True)


def users_variables(x):
    a = x * 2.0
    b = np.sin(a)
    return np.sum(b * x)


def test_a_users_variable_is_never_folded():
    forward = _function(sg.source(users_variables, args=(np.ones(3),)), "users_variables_forward")
    assert "    a = x * 2.0\n    b = np.sin(a)\n" in forward
    check_grads(users_variables, (np.linspace(0.1, 1.0, 3),))


def index_then_divide(x, i):
    a = 1.0
    b = 0.0
    return x[i] + a / b


def divide_then_index(x, i):
    a = 1.0
    b = 0.0
    return a / b + x[i]


@pytest.mark.parametrize("fn", [index_then_divide, divide_then_index])
def test_errors_are_raised_in_the_order_the_function_raises_them(fn):
    x = np.arange(3.0)
    with pytest.raises(Exception) as plain:
        fn(x, 5)
    grad = sg.grad(fn)
    for call in range(3):   # the sweeps, then the composed function
        with pytest.raises(type(plain.value)):
            grad(x, 5)
    with pytest.raises(Exception) as plain:
        sg.value_and_grad(fn)(x, 5)
    assert type(plain.value) is type(pytest.raises(Exception, fn, x, 5).value)


def hoisted_division(x):
    zero = 0.0
    two = 2.0
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] * (1.0 / zero) + x[i] * (1.0 / two)
    return s


def test_a_division_by_zero_is_not_hoisted_out_of_a_loop_that_may_not_run():
    forward = _function(sg.source(hoisted_division, args=(np.ones(2),)), "hoisted_division_forward")
    # 1.0 / two is computed once; 1.0 / zero stays in the loop, where it raises.
    assert forward.index("= 1.0 / two") < forward.index("for i in")
    assert forward.index("= 1.0 / zero") > forward.index("for i in")
    grad = sg.grad(hoisted_division)
    for call in range(3):
        np.testing.assert_array_equal(grad(np.zeros(0)), np.zeros(0))
        with pytest.raises(ZeroDivisionError):
            grad(np.ones(2))


def _sum_of_terms(x):
    return np.sum(np.sin(x) * np.exp(-x ** 2) + np.log1p(x * x))


def test_a_composed_gradient_keeps_no_zero_that_only_the_skipped_seed_check_read():
    # The backward starts ``d = 0.0`` then ``if rt.has_grad(seed): d = seed``; composed with
    # a seed of 1.0 the check goes, and the zero is dead.
    x = np.linspace(-1.0, 1.0, 7)
    backward = sg.source(_sum_of_terms, args=(x,))
    assert "= 0.0" in backward[backward.index("def _sum_of_terms_backward"):]
    composed = sg.source(_sum_of_terms, args=(x,), composed=True)
    assert "= 0.0" not in composed and "rt.has_grad" not in composed
    gradient = sg.grad(_sum_of_terms)
    first, second = gradient(x), gradient(x)     # the second call runs the composed code
    np.testing.assert_allclose(second, first, rtol=0, atol=0)
    check_grads(_sum_of_terms, (x,))
