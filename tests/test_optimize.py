"""The optimizer inside the pipeline: the facts it is given (ranks, shape classes, the tape)
reach it, and optimized and unoptimized gradients agree. Each pass on its own, before and
after: tests/test_optimize_passes.py."""

import gast
import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pipeline
from srcgrad.testing import check_grads, numerical_grad


@pytest.fixture
def unoptimized(monkeypatch):
    monkeypatch.setattr(pipeline, "DEFAULT_OPTIONS", pipeline.CompileOptions(optimize=False))


def straight(x, w):
    y = np.sin(x) * w + 2.0
    return y.sum()


def looped(x, w):
    h = x
    for _ in range(3):
        h = np.tanh(h @ w + x)
    return h.sum()


X = np.array([[0.3, -0.2], [0.1, 0.4]])
W = np.array([[0.5, -0.3], [0.2, 0.7]])


def test_first_contribution_assigns():
    source = sg.source(straight, wrt=(0, 1))
    assert "dx = 0.0" not in source and "dw = 0.0" not in source
    assert "dx = rt.unbroadcast(dsin_x_times_w * w, sin_x) * xp.cos(x)" in source


def test_unoptimized_keeps_zero_initialisation(unoptimized):
    source = sg.source(straight, wrt=(0, 1))
    assert "dx = 0.0" in source and "dx = dx + dsin_x * xp.cos(x)" in source


def test_loop_carried_temporaries_are_assigned():
    source = sg.source(looped, wrt=(0, 1))
    loop = source[source.index("in reversed(range_"):]
    # The tanh argument's adjoint is assigned in each iteration, never added to a zero.
    assert "dh_matmul_w_plus_x = dh * (1 - h * h)" in loop


def test_shape_only_values_are_not_kept():
    source = sg.source(looped, wrt=(0, 1))
    assert "push(rt.shape_of(h_matmul_w))" in source


@pytest.mark.parametrize("fn", [straight, looped])
def test_optimized_and_unoptimized_agree(fn, monkeypatch):
    fast = sg.grad(fn, wrt=(0, 1))(X, W)
    monkeypatch.setattr(pipeline, "DEFAULT_OPTIONS", pipeline.CompileOptions(optimize=False))
    slow = sg.grad(fn, wrt=(0, 1))(X, W)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    check_grads(fn, (X, W), wrt=(0, 1), atol=1e-7, rtol=1e-6)


def test_dead_adjoints_are_not_computed():
    def f(x):
        y = x * 2.0
        y = y * 3.0
        return y.sum()
    source = sg.source(f)
    # The output's old value is only needed when a rule reads it: y * 3.0 does not.
    assert " y_new = y" not in source
    np.testing.assert_allclose(sg.grad(f)(np.ones(3)), 6.0 * np.ones(3))


# ----- Specialisation on the ranks of the arguments (analysis/ranks.py) -----

def thermal(u, T_out, price):
    T = 19.0
    cost = 0.0
    for t in range(len(u)):
        T = T + 0.025 * (0.5 * (T_out[t] - T) + 0.95 * u[t])
        cost = cost + price[t] * u[t] * 0.25
        if T < 20.0:
            cost = cost + 5.0 * (20.0 - T) ** 2
    return cost


def thermal_args(n=12, rows=None):
    rng = np.random.default_rng(3)
    shape = (n,) if rows is None else (n, rows)
    return (6.0 + rng.random(shape), 5.0 + rng.random(shape), 0.2 + 0.1 * rng.random(shape))


def test_scalar_loop_needs_no_unbroadcast_or_saved_shapes():
    special = sg.source(thermal, args=thermal_args())
    generic = sg.source(thermal)
    assert "rt.unbroadcast" not in special and "rt.shape_of" not in special
    assert "rt.unbroadcast" in generic and "rt.shape_of" in generic
    assert "dT = dT - d" in special   # plain scalar arithmetic


def relax(u, T_out):
    T = 19.0
    for t in range(len(u)):
        T = T + 0.025 * (0.5 * (T_out[t] - T) + 0.95 * u[t])
    return np.sum(T * T)


@pytest.mark.parametrize("rows", [None, 3])
def test_specialised_gradients_match_finite_differences(rows):
    # Vectors: T_out[t] and T are scalars. Matrices: rows, and the general code runs.
    args = thermal_args(rows=rows)[:2]
    check_grads(relax, args, wrt=(0, 1), atol=1e-6, rtol=1e-6)
    if rows is None:
        check_grads(thermal, thermal_args(), wrt=(0, 1, 2), atol=1e-6, rtol=1e-6)


def test_one_gradient_object_serves_several_ranks():
    g = sg.grad(relax, wrt=0)
    for rows in (None, 2, None):
        args = thermal_args(rows=rows)[:2]
        generic = sg.grad(relax, wrt=0).compiled
        expected = generic.backward(1.0, generic.forward(*args)[1])[0]
        np.testing.assert_allclose(g(*args), expected, rtol=1e-12)
    assert len(g._by_rank) == 2


def test_scalar_arguments_are_scalars():
    def f(a, x):
        s = a * 2.0
        for i in range(3):
            s = s * a + x[i]
        return np.sum(s)
    args = (0.7, np.array([0.1, 0.2, 0.3]))
    assert "rt.unbroadcast" not in sg.source(f, wrt=(0, 1), args=args)
    check_grads(f, args, wrt=(0, 1), atol=1e-7, rtol=1e-7)
    # A vector ``a`` makes ``s`` a vector: the general code runs and is right too.
    check_grads(f, (np.array([0.7, 0.4, 0.9]), args[1]), wrt=(0, 1), atol=1e-7, rtol=1e-7)


def test_rank_inference():
    from srcgrad.analysis import ranks

    def f(u, M, n, items):
        a = u[0]                 # vector[int] -> scalar
        b = M[0]                 # matrix[int] -> row
        c = M[0, 1]              # matrix[int, int] -> scalar
        d = np.sin(a) * 2        # ufunc of a scalar
        e = np.sum(M)            # full reduction
        k = len(u)               # an int
        m = u[k - 1]             # indexed by int arithmetic
        z = u[True]              # a boolean index adds an axis: unknown
        w = items[0]             # a list: unknown
        v = a
        v = b                    # bound to a scalar and a row: unknown
        g = GLOBAL_SCALE * a     # a global: unknown
        h = u @ u                # vector @ vector: a scalar
        q = M @ u                # matrix @ vector: a vector
        r = M.shape[1]           # an array's length: an int
        s = np.sum(M, axis=0)    # a reduction over one axis
        t = np.max(M, axis=-1, keepdims=True)  # ... that keeps it
        o = np.sum(M, axis=GLOBAL_SCALE)       # an axis not known here: unknown
        return a + b + c + d + e + m + z + w + v + g + h + n + q + r + s + t + o
    node, _, _ = pipeline.normalize(f)
    found = ranks.infer(node, {"u": 1, "M": 2, "n": ranks.INT, "items": None})
    expected = {"a": 0, "b": 1, "c": 0, "d": 0, "e": 0, "k": ranks.INT, "m": 0,
                "z": ranks.UNKNOWN, "w": ranks.UNKNOWN, "v": ranks.UNKNOWN, "g": ranks.UNKNOWN,
                "h": 0, "n": ranks.INT, "q": 1, "r": ranks.INT, "s": 1, "t": 2,
                "o": ranks.UNKNOWN}
    assert {n: found[n] for n in expected} == expected
    assert ranks.rank_key(np.zeros((2, 3))) == 2 and ranks.rank_key(1.5) == 0
    assert ranks.rank_key(3) == ranks.INT and ranks.rank_key(object()) is None
    assert ranks.rank_key([1.0]) == ranks.rank_key([2.0]) != ranks.rank_key([1.0, 2.0])  # a structure
    assert ranks.rank_key(np.float32(1)) == 0 and ranks.rank_key(True) is None


GLOBAL_SCALE = 2.0


def test_code_that_does_not_depend_on_ranks_is_compiled_once():
    def f(x, w):
        return np.sum(np.tanh(x @ w))
    g = sg.grad(f)
    w = np.array([[0.5], [-0.25]])
    g(np.array([1.5, 0.5]), w)
    assert g.__dict__.get("_any_rank") is not None
    x = np.array([[-1.0, 2.0]])
    np.testing.assert_allclose(g(x, w), (1 - np.tanh(x @ w) ** 2) @ w.T)
    assert len(g._by_rank) == 1


def test_zero_initialisation_moves_into_branches():
    def f(x):
        if x[0] > 0:
            return x
        else:
            return -x
    source = sg.source(f)
    assert "dx = 0.0" not in source
    assert "dx = dretval" in source and "dx = -dretval" in source
    x = np.array([1.5, 2.0])
    g = sg.grad(f)(x, grad_outputs=np.ones(2))
    np.testing.assert_allclose(g, np.ones(2))


def test_constant_exponents_are_folded():
    def f(x):
        return np.sum(x ** 2)
    source = sg.source(f)
    assert "(2 - 1)" not in source and "** 1" not in source
    np.testing.assert_allclose(sg.grad(f)(np.array([1.0, -3.0])), [2.0, -6.0])


def test_scalar_output_seed_of_shape_one_is_a_scalar():
    g = sg.grad(thermal, wrt=0)(*thermal_args(), grad_outputs=np.array([2.0]))
    expected = 2.0 * sg.grad(thermal, wrt=0)(*thermal_args())
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    assert g.shape == (12,)


def test_a_hook_may_not_change_a_gradient_s_shape():
    # The sweep relies on an adjoint having its value's shape (or broadcasting to it).
    g = sg.grad(thermal, wrt=0, hooks={"T": lambda d: np.ones(3)})
    with pytest.raises(ValueError, match=r"hook .* returned a gradient of shape \(3,\) for a value of shape \(\)"):
        g(*thermal_args())


def product_of_positives(x):
    result = 1.0
    for v in x:
        if v > 0:
            result = v * result
    return result


def test_index_adjoint_is_an_owned_buffer():
    x = np.arange(-2.0, 4.0)
    special = sg.source(product_of_positives, args=(x,))
    assert "dx = rt.owned_zeros(x)" in special and "dx[i] += dv" in special
    assert "rt.add_at" not in special
    assert "rt.add_at" in sg.source(product_of_positives)   # rank unknown: the general helper
    np.testing.assert_allclose(sg.grad(product_of_positives)(x), [0, 0, 0, 6, 3, 2])


def test_copies_are_propagated():
    special = sg.source(product_of_positives, args=(np.ones(3),))
    assert "dresult_new" not in special and "dresult = dresult * v" in special


def test_an_adjoint_read_elsewhere_keeps_add_at():
    def f(x):
        s = 0.0
        for i in range(len(x)):
            s = s + x[i] * x[i]
        return s + np.sum(x * 3.0)
    x = np.array([0.5, -1.0, 2.0])
    source = sg.source(f, args=(x,))
    assert "rt.add_at" in source and "owned_zeros" not in source
    np.testing.assert_allclose(sg.grad(f)(x), 2 * x + 3.0)
    check_grads(f, (x,), atol=1e-7, rtol=1e-7)


def test_same_shape_chains_need_no_unbroadcast():
    def f(x):
        return np.mean(3 * (x + 2) ** 2)
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    special = sg.source(f, args=(x,))
    assert "rt.unbroadcast" not in special
    # Only x's size is needed for the mean's gradient: no intermediate is kept for it,
    # and the gradient stays a scalar until it meets x + 2 (the hand-written 6/n*(x+2)).
    flat = " ".join(special.replace("(", "( ").split()).replace("( ", "(")
    assert "rt.unreduce" not in flat
    # x's size, at least 1: an empty x's mean is NaN and its gradient empty, never a
    # ZeroDivisionError of the scalar gradient.
    assert "dt3_times_x_plus_2_pow_2 = dmean_3_times_x_plus_2 / (x.size or 1)" in flat
    assert "dx_plus_2 = dt3_times_x_plus_2_pow_2 * 3 * 2 * x_plus_2" in flat
    assert "t3_times_x_plus_2_pow_2," not in special
    np.testing.assert_allclose(sg.grad(f)(x), 6 * (x + 2) / x.size)
    # Without the ranks (grad(f).as_function() differentiates this one) nothing is assumed.
    assert "rt.unreduce(" in sg.source(f)


def _scaled_sum(a, n):
    return np.sum(a * n)


def _scaled_mean_of_sine(a, n):
    return np.mean(np.sin(a) * n)


@pytest.mark.parametrize("f", [_scaled_sum, _scaled_mean_of_sine])
def test_a_scalar_times_an_array_summed_sums_the_array_alone(f):
    # d/da sum(a * n) is the scalar gradient times sum(n): no ones spread over n
    # (rt.unreduce) times n, a full float array, summed (30x the time for an int64 n).
    n = np.arange(1, 7).reshape(2, 3)
    composed = sg.source(f, args=(0.5, n), composed=True)
    assert "rt.unreduce" not in composed and "* rt.unbroadcast(n, " in composed
    for arg in (n, n.astype(np.int8) * 40, n > 2, n / 7.0):
        g = sg.grad(f)
        for _ in range(2):   # the composed gradient, then the hot call
            got = g(0.5, arg)
            assert isinstance(got, float)
            np.testing.assert_allclose(got, numerical_grad(f, (0.5, arg)), rtol=1e-7)
    got = sg.grad(f)(np.float32(0.5), n)
    assert got.dtype == np.float32


def _spread_means(x):
    return np.mean(x)


def _sum_then_matmul(x, W):
    y = x @ W
    return np.sum(y)


def _sum_of_broadcast(x, b):
    return np.sum(x + b)


def _sum_of_double(x):
    y = x * 2.0
    return np.sum(y)


def _sum_and_element(x):
    y = x * 2.0
    z = np.sum(y)
    return z + y[0, 1]


def _product_of_sums(x, w):
    return np.sum(x) * np.sum(w)


def _sums_in_a_loop(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(x * i)
    return s


def test_reduction_gradient_stays_scalar_until_returned():
    rng = np.random.default_rng(3)
    x = rng.random((3, 4))
    assert "rt.unreduce" not in sg.source(_spread_means, args=(x,))
    for dtype in (np.float64, np.float32):
        g = sg.grad(_spread_means)(x.astype(dtype))
        # The API spreads the scalar: an array of x's shape and dtype the caller owns.
        assert g.shape == x.shape and g.dtype == dtype and g.flags.writeable
        np.testing.assert_allclose(g, np.full(x.shape, 1 / x.size), rtol=1e-6)
    out, backward = sg.vjp(_spread_means)(x)
    np.testing.assert_allclose(backward(), np.full(x.shape, 1 / x.size))
    w = rng.random(5)
    gx, gw = sg.grad(_product_of_sums, (0, 1))(x[0], w)
    np.testing.assert_allclose(gx, np.full(4, w.sum()))
    np.testing.assert_allclose(gw, np.full(5, x[0].sum()))
    source = sg.source(_sums_in_a_loop, args=(x,))
    assert "rt.unreduce" not in source
    np.testing.assert_allclose(sg.grad(_sums_in_a_loop)(x), np.full(x.shape, 3.0))
    check_grads(_sums_in_a_loop, (x,), atol=1e-7, rtol=1e-7)


def test_reduction_gradient_spread_where_shape_matters():
    """A scalar that could reach a matmul, an index, a broadcasting operand, a hook or
    the gradient of an intermediate is spread over its array as before."""
    rng = np.random.default_rng(4)
    x, b, W = rng.random((3, 4)), rng.random(4), rng.random((4, 2))
    assert "rt.unreduce(" in sg.source(_sum_then_matmul, (0, 1), args=(x, W))
    check_grads(_sum_then_matmul, (x, W), wrt=(0, 1), atol=1e-7, rtol=1e-7)
    gx, gb = sg.grad(_sum_of_broadcast, (0, 1))(x, b)
    np.testing.assert_allclose(gx, np.ones_like(x))
    np.testing.assert_allclose(gb, np.full(4, 3.0))      # summed over the broadcast rows
    dy = sg.grad(_sum_of_double, "y")(x)                  # a local: no argument to shape it
    assert dy.shape == x.shape
    np.testing.assert_allclose(dy, np.ones_like(x))
    seen = []
    sg.grad(_sum_of_double, hooks={"y": seen.append})(x)
    assert seen[0].shape == x.shape
    assert "rt.unreduce(" in sg.source(_sum_and_element, args=(x,))
    check_grads(_sum_and_element, (x,), atol=1e-7, rtol=1e-7)


def test_broadcasting_keeps_unbroadcast():
    def f(x, b):
        y = np.tanh(x + b) * b
        return np.sum(y * x)
    x, b = np.random.default_rng(1).random((3, 4)), np.array([0.5, -1.0, 2.0, 0.25])
    special = sg.source(f, wrt=(0, 1), args=(x, b))
    assert "rt.unbroadcast(" in special and ", b)" in special
    check_grads(f, (x, b), wrt=(0, 1), atol=1e-7, rtol=1e-7)
    # b of x's shape: one class; the same gradient object handles both.
    check_grads(f, (x, b + np.zeros((3, 1))), wrt=(0, 1), atol=1e-7, rtol=1e-7)


def test_shape_classes():
    from srcgrad.analysis import ranks

    def f(x, b, s):
        y = x * 2.0 + s          # x's class: s is a scalar
        z = np.exp(y) - x        # still x's
        w = y + b                # broadcasting against b: no single class
        m = x @ x.T              # an array bound once: a root of its own
        n = m * 3.0
        for i in range(2):
            q = x[i]             # rebound in a loop: unknown
            y = y * 1.5          # rebound, same class
        return np.sum(z + w + n + q + y)
    node, _, _ = pipeline.normalize(f)
    rank_map = ranks.infer(node, {"x": 2, "b": 1, "s": 0})
    found = ranks.shape_classes(node, rank_map)
    assert found["y"] == found["z"] == "x" and found["s"] == ranks.SCALAR
    assert found["w"] == ranks.UNKNOWN and found["q"] == ranks.UNKNOWN
    assert found["n"] == found["m"] == "m"


# ----- The forward sweep of grad computes only what the adjoint reads -----

def elementwise_sum(x):
    return np.sum(np.sin(x) * np.exp(-x ** 2) + np.log1p(x * x))


def test_gradient_only_forward_skips_the_output():
    x = np.linspace(-2.0, 2.0, 7)
    source = sg.source(elementwise_sum, args=(x,))
    only = source[source.index("_forward_for_grad("):source.index("_backward(")]
    assert "= np.log1p(" not in only and "= np.sum(" not in only and "return None," in only
    expected = (np.cos(x) - 2 * x * np.sin(x)) * np.exp(-x * x) + 2 * x / (1 + x * x)
    np.testing.assert_allclose(sg.grad(elementwise_sum)(x), expected, rtol=1e-12)
    value, g = sg.value_and_grad(elementwise_sum)(x)
    assert value == elementwise_sum(x)
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    g32 = sg.grad(elementwise_sum)(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, expected, rtol=1e-5)


def test_gradient_only_forward_still_raises_what_the_function_raises():
    def mismatched(x, y):
        z = x + y                       # unused, but raises for these shapes
        return np.sum(np.sin(x))

    def divides(x, a):
        c = a / 0.0                     # unused, but raises ZeroDivisionError
        return np.sum(x * x)
    with pytest.raises(ValueError):
        sg.grad(mismatched)(np.ones(3), np.ones(4))
    with pytest.raises(ZeroDivisionError):
        sg.grad(divides)(np.ones(3), 2.0)


# ----- What the tape holds for loops -----

def _range_loop(x):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] * x[i] * (i + 1)
    return s


def _range_loop_with_break(x):
    s = 0.0
    for i in range(len(x)):
        if s > 3.0:
            break
        s = s + np.sin(x[i]) * 2.0 + x[i] ** 2
    return s


def _nested_range_loops(x):
    s = 0.0
    for i in range(2):
        for j in range(len(x)):
            s = s + x[j] * (i + j)
        s = s * 1.5
    return s


def _index_read_after_loop(x):
    s = 0.0
    i = 7
    s = s + x[0] * i   # its gradient, after the reversed loop, reads the 7 again
    for i in range(len(x)):
        s = s + x[i] * i
    return s * i


def _index_rebound_in_body(x):
    s = 0.0
    for i in range(len(x)):
        i = i * 2 % len(x)
        s = s + x[i] * x[i]
    return s


def _constant_in_loop(x):
    dt = 0.25
    C = 10.0
    s = 0.0
    for i in range(len(x)):
        s = s + dt / C * x[i] * s + x[i]
    return s


def _rebound_number_in_loop(x):
    k = 1.0
    s = 0.0
    for i in range(len(x)):
        k = k * 0.5
        s = s + k * x[i] * s + x[i]
    return s


def test_range_loops_replay_the_range_instead_of_taping_the_index():
    x = np.array([0.3, -1.2, 0.8, 2.0])
    source = sg.source(_range_loop, args=(x,))
    assert "for i in reversed(range_i)" in source and "push(i)" not in source
    # A loop the function runs once saves its range with the other values; an inner loop
    # runs once per outer iteration, so its ranges go on the tape.
    assert "push(range_i)" not in source and "range_i, " in source
    assert "push(range_j)" in sg.source(_nested_range_loops, args=(x,))
    np.testing.assert_allclose(sg.grad(_range_loop)(x), 2 * x * np.arange(1, 5))
    for f in (_range_loop, _range_loop_with_break, _nested_range_loops, _index_read_after_loop,
              _index_rebound_in_body):
        check_grads(f, (x,), atol=1e-7, rtol=1e-7)
    # A break: only the iterations that ran are replayed.
    assert "push(range_i[:n_i])" in sg.source(_range_loop_with_break, args=(x,))
    # The index's value before the loop is read after it (and the backward sweep reads the
    # value before the loop once it has replayed it): that value stays on the tape.
    assert "push(i)" in sg.source(_index_read_after_loop, args=(x,))
    # A body that rebinds the index: the index of every iteration is taped as before.
    rebound = sg.source(_index_rebound_in_body, args=(x,))
    assert "reversed(" not in rebound and "push(i)" in rebound


def test_numbers_fixed_for_the_whole_call_are_not_taped():
    x = np.array([0.3, -1.2, 0.8, 2.0])
    source = sg.source(_constant_in_loop, args=(x,))
    assert "push(dt_over_C)" not in source and "pop()" in source
    check_grads(_constant_in_loop, (x,), atol=1e-7, rtol=1e-7)
    # k changes every iteration: its values are taped.
    assert "push(k)" in sg.source(_rebound_number_in_loop, args=(x,))
    check_grads(_rebound_number_in_loop, (x,), atol=1e-7, rtol=1e-7)


# ----- Accumulating into arrays the sweep owns -----

def _four_contributions(x):
    # x * x and x ** 2: the chain rule gives dx four contributions
    return np.sum(np.sin(x) * np.exp(-x ** 2) + np.log1p(x * x))


def _scalar_first_contribution(x):
    return np.sum(np.exp(x) * x) + np.sum(x)


def _broadcast_contributions(x, b):
    return np.sum(np.exp(x) * b + x * x)


def _contribution_reads_its_own_input(x, w):
    y = x * w
    z = y * x
    return np.sum(z + y * w)


def test_contributions_accumulate_in_place_into_fresh_arrays():
    x = np.random.default_rng(5).uniform(-2, 2, 50)
    source = sg.source(_four_contributions, args=(x,))
    assert source.count("dx += ") + source.count("dx -= ") == 2 and "dx = dx " not in source
    # x * x contributes twice the same expression: one contribution, doubled.
    assert "dx = dsin_x_times_exp_neg_x_2 / (1 + x_times_x) * x * 2" in source
    want = ((np.cos(x) - 2 * x * np.sin(x)) * np.exp(-x * x) + 2 * x / (1 + x * x))
    for dtype in (np.float64, np.float32):
        g = sg.grad(_four_contributions)(x.astype(dtype))
        assert g.dtype == dtype
        np.testing.assert_allclose(g, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    check_grads(_four_contributions, (x,), atol=1e-7, rtol=1e-7)


def test_accumulation_stays_an_assignment_where_the_array_is_not_owned():
    rng = np.random.default_rng(6)
    x, b, w = rng.random((3, 4)), rng.random(4), rng.random((3, 4))
    # dx starts as the sum's scalar gradient: adding to it must make a new array,
    # which the sweep then owns.
    source = " ".join(sg.source(_scalar_first_contribution, args=(x,)).split())
    assert "dx = dx + dexp_x_times_x * exp_x dx += dexp_x_times_x * x * exp_x" in source
    np.testing.assert_allclose(sg.grad(_scalar_first_contribution)(x), 1 + np.exp(x) * (1 + x))
    check_grads(_broadcast_contributions, (x, b), wrt=(0, 1), atol=1e-7, rtol=1e-7)
    w_before = w.copy()
    check_grads(_contribution_reads_its_own_input, (x, w), wrt=(0, 1), atol=1e-7, rtol=1e-7)
    np.testing.assert_array_equal(w, w_before)


def test_repeated_gradient_frees_what_it_no_longer_reads():
    import tracemalloc
    x = np.random.default_rng(7).uniform(-3, 3, 200_000)
    gradient = sg.grad(_four_contributions)
    gradient(x)
    gradient(x)             # composed from here on
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = gradient(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Kept alive together, the forward's four arrays and the adjoint's temporaries made
    # about twelve; freed when dead, at most five are alive at once (the result included).
    assert peak < 5.5 * x.nbytes, peak / x.nbytes
    np.testing.assert_allclose(result, sg.grad(_four_contributions)(x), rtol=1e-12)


def test_first_binding_saves_no_previous_value():
    source = sg.source(product_of_positives)
    # result's first binding had no value before it: only the loop's rebinding pushes.
    assert source.count("push(result)") == 1 and source.count("result = pop()") == 1
    x = np.array([-2.0, -1.0, 0.5, 1.5, 2.0, 3.0])
    np.testing.assert_allclose(sg.grad(product_of_positives)(x), [0, 0, 9.0, 3.0, 2.25, 1.5])
    check_grads(product_of_positives, (x,), atol=1e-7, rtol=1e-7)


def _rebound_to_a_number(a):
    b = a * a
    c = b * a
    b = 3.0
    return c + b


def _doubled_until_large(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def test_values_pushed_once_are_saved_without_a_tape():
    # b's first binding saves nothing; its rebinding must still restore a * a for c's adjoint.
    assert sg.grad(_rebound_to_a_number)(0.5) == pytest.approx(3 * 0.25, rel=1e-12)
    check_grads(_rebound_to_a_number, (0.7,), atol=1e-7, rtol=1e-7)
    # A top-level loop's trip count goes in `saved`: W3's gradient keeps no tape.
    x = np.array([1178.3732, 192.4036, 922.6443]) / 512
    source = sg.source(_doubled_until_large, args=(x,))
    assert "tape" not in source and "n_loop, = saved" in source
    seed = np.array([0.01, 0.1, 1.0])
    np.testing.assert_allclose(sg.grad(_doubled_until_large)(x, grad_outputs=seed), seed * 512)
    check_grads(_doubled_until_large, (x,), grad_outputs=seed, atol=1e-7, rtol=1e-7)


def _reset_temporary_read_after(x):
    s = 0.0
    t = 0.0
    for i in range(len(x)):
        if x[i] > 0:
            s = s + 3.0 * x[i] ** 2
        t = t + s * x[i]
    return t + s


def test_temporaries_of_a_branch_in_a_loop_are_assigned_not_reset():
    special = sg.source(thermal, args=thermal_args())
    backward = special[special.index("def thermal_backward"):]
    branch = backward[backward.index("if cond:"):backward.index("# grad of: cost = cost + price")]
    # The branch's temporaries are zero whenever it starts: assigned, never added to 0,
    # and, each used once, folded into the one line that accumulates dT.
    assert "= 0.0" not in branch
    assert "dT = dT - dcost * 5.0 * 2 * t20_0_minus_T" in branch
    check_grads(thermal, thermal_args(), wrt=(0, 1, 2), atol=1e-6, rtol=1e-6)
    # Accumulators read across iterations are not folded.
    check_grads(_reset_temporary_read_after, (np.array([0.5, -1.0, 2.0, 0.3]),),
                atol=1e-7, rtol=1e-7)


def test_the_mean_of_an_empty_array_keeps_its_scalar_gradient_without_dividing_by_zero():
    def f(x):
        return np.mean(3 * (x + 2) ** 2)
    empty = np.zeros(0)
    assert "/ (x.size or 1)" in sg.source(f, args=(empty,))
    with np.errstate(invalid="ignore"):
        g = sg.grad(f)(empty)
        g = sg.grad(f)(empty)    # the composed repeated call too
    assert g.shape == (0,) and g.dtype == np.float64


def _mean_over_rows(x):
    return -np.sum(np.tanh(x) * 2.0) / x.shape[0]


def test_a_python_float_seed_keeps_float32_gradients_in_float32():
    # x.shape[0] is an int: the output is a scalar and its seed the number 1.0. An
    # adjoint spread from a number takes a float array's dtype (NumPy's promotion of a
    # Python float), so the sweep stays in float32.
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    source = sg.source(_mean_over_rows, args=(x,), composed=True)
    assert "default_seed" not in source
    g = sg.grad(_mean_over_rows)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, -2.0 * (1 - np.tanh(x.astype(np.float64)) ** 2) / 3, rtol=1e-6)
    from srcgrad import runtime as rt
    assert rt.unreduce(0.5, x).dtype == np.float32 and rt.unreduce(0.5, x.astype(int)).dtype == np.float64
    check_grads(_mean_over_rows, (x.astype(np.float64),))


def _mean_loss(x, y):
    return -np.sum(y * np.tanh(x)) / x.shape[0]


def _python_float_loss(x):
    q = float(np.sum(x * x))
    return q / 0.0 + np.sum(x)


def test_the_gradient_only_forward_drops_a_scalar_loss_but_not_what_raises():
    # grad does not return the value: -np.sum(...) / n (NumPy-scalar arithmetic, which
    # never raises) is not computed. A Python float's division by zero raises in the
    # function, so it is kept, and grad raises too.
    x, y = np.linspace(-1.0, 1.0, 6).reshape(3, 2), np.ones((3, 2))
    source = sg.source(_mean_loss, args=(x, y), composed=True)
    code = "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))
    assert "np.sum" not in code and "tanh_x" in code
    check_grads(_mean_loss, (x, y))
    with pytest.raises(ZeroDivisionError):
        sg.grad(_python_float_loss)(x)


def _loss_beside_a_max(x, y):
    return np.sum(x * x) + np.max(y)


def test_the_gradient_only_forward_keeps_a_maximum_that_can_raise():
    # np.max of an empty array raises in the function; the gradient, which needs no value
    # of it, raises the same (only reductions that never raise are dropped).
    np.testing.assert_allclose(sg.grad(_loss_beside_a_max)(np.ones(2), np.ones(3)), [2.0, 2.0])
    with pytest.raises(ValueError, match="zero-size array"):
        sg.grad(_loss_beside_a_max)(np.ones(2), np.zeros(0))
