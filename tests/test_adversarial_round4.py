"""Fourth adversarial round: programs that srcgrad got silently wrong (or failed on with
an error that was not a located refusal) before their fix. Each gradient or tangent is
checked against central differences in float64 or a hand-derived answer; each refusal
must name this file and the user's line."""

import copy

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree
from srcgrad.testing import numerical_grad
from adversarial_checks import V, X, _fd, _flat, assert_grad_and_jvp, assert_refused_in


def assert_refused_here(run, *words):
    assert_refused_in(__file__, run, *words)


# ----- Free names (globals, closure cells, a helper's default) sharing memory -----
# The alias analysis took each free name for an object of its own, and a write straight
# into a global (G[0] = v) for one reaching nothing: a write through one name changed an
# array another name read afterwards, and both modes dropped that gradient.

GA = np.zeros(4)
GB = GA                 # one array, two global names
GC = np.zeros(4)
GC_TAIL = GC[1:]        # a global view of another global
GD = np.zeros(4)
SCRATCH = np.zeros(4)


def two_globals_one_array(x):
    GA[0] = x[0] ** 2
    return np.sum(GB * x)


def global_view_written(x):
    GC_TAIL[0] = x[0] ** 2
    return np.sum(GC * x)


def global_written_under_a_local_view(x):
    tail = GD[1:]
    GD[1] = x[0] ** 2
    return np.sum(tail * x[1:])


def _fill(a, buf=np.zeros(4)):
    buf[:] = a
    return buf


def default_buffer_filled_twice(x):
    first = _fill(x * 2.0)
    second = _fill(x ** 2)
    return np.sum(first * second)


def _fill_scratch(a):
    SCRATCH[:] = a
    return SCRATCH


def global_buffer_filled_twice(x):
    first = _fill_scratch(x * 2.0)
    second = _fill_scratch(x ** 2)
    return np.sum(first * second)


@pytest.mark.parametrize("f", [two_globals_one_array, global_view_written,
                               global_written_under_a_local_view, default_buffer_filled_twice,
                               global_buffer_filled_twice], ids=lambda f: f.__name__)
def test_a_write_into_memory_another_free_name_reads_is_refused(f):
    assert_refused_here(lambda: sg.grad(f)(X.copy()), "shares its memory")


def test_the_same_writes_in_forward_mode():
    for f in (two_globals_one_array, global_view_written, default_buffer_filled_twice):
        assert_refused_here(lambda: sg.jvp(f, (X.copy(),), (V.copy(),)), "share")
    # a local view of a written global: forward mode's tangent is a view of the global's
    assert_grad_and_jvp_forward_only(global_written_under_a_local_view)


def assert_grad_and_jvp_forward_only(f):
    want = _flat(_fd(f, (X,)))
    value, out = sg.jvp(f, (X.copy(),), (V.copy(),))
    np.testing.assert_allclose(out, want @ V, rtol=1e-6, atol=1e-8)
    # the hand-derived gradient: tail[0] is x[0] ** 2, so d/dx0 = 2 x0 x1
    np.testing.assert_allclose(want, [2 * X[0] * X[1], X[0] ** 2, 0.0, 0.0], atol=1e-7)


GE = np.zeros(4)
GF = GE


def two_globals_both_written(x):
    GE[0] = x[0] ** 2
    GF[1] = x[1] * 3.0
    return np.sum(GE * x)


def test_forward_mode_refuses_two_written_globals_sharing_memory():
    # each written global gets a zero tangent of its own, which would not share memory
    assert_refused_here(lambda: sg.jvp(two_globals_both_written, (X.copy(),), (V.copy(),)),
                        "'GE' and 'GF' share memory")
    assert_refused_here(lambda: sg.grad(two_globals_both_written)(X.copy()), "shares its memory")


GH = np.zeros(4)


def writes_a_global_it_was_passed(x):
    GH[0] = x[1] ** 2
    return np.sum(GH * x) + np.sum(x * x)


def test_a_global_written_into_must_not_be_an_argument():
    assert_refused_here(lambda: sg.grad(writes_a_global_it_was_passed)(GH), "'GH' and the argument")
    # a distinct argument differentiates: d/dx sum(GH * x) + |x|^2 with GH = [x1^2, 0, 0, 0]
    GH[:] = 0.0
    got = sg.grad(writes_a_global_it_was_passed)(X.copy())
    np.testing.assert_allclose(got, [X[1] ** 2 + 2 * X[0], 2 * X[0] * X[1] + 2 * X[1],
                                     2 * X[2], 2 * X[3]])


GK = np.zeros(4)
GK_VIEW = GK[:2]


def distinct_globals_written(x):
    GK_VIEW[0] = x[0] ** 2       # the memory of GK, which is not read again
    return np.sum(GA * x) + GK_VIEW[0]


def test_writes_into_globals_that_share_nothing_read_later_still_differentiate():
    want = _fd(distinct_globals_written, (X,))
    np.testing.assert_allclose(sg.grad(distinct_globals_written)(X.copy()), want, rtol=1e-6, atol=1e-8)


# ----- Gradients handed back in memory the caller's seed or another gradient holds -----
# The adjoint of x + y is the seed itself for both x and y (rt.unbroadcast returns it when
# the shapes match): sg.grad(f, wrt=(0, 1)) returned one array twice, and with grad_outputs
# (or a vjp's cotangent) the caller's own seed. Clipping or scaling the gradients in place
# (g *= c for each g) then scaled one of them twice, or changed the seed.

Y = np.array([1.1, 0.2, -0.7, 0.9])
SEED = np.array([1.0, 2.0, 3.0, 4.0])


def squared_sum_of_a_sum(x, y):
    return np.sum((x + y) ** 2)


def sum_of_two(x, y):
    return x + y


def difference(x, y):
    return x - y


def reshaped(x):
    return x.reshape(2, 2)


def returned_as_is(x):
    return x


def pair_of_inputs(x, y):
    return x, y


def list_of_two(params):
    return np.sum((params[0] + params[1]) ** 2)


def _scale_in_place(grads, c):
    for g in pytree.tree_leaves(grads):
        g *= c
    return grads


def test_gradients_of_two_inputs_are_arrays_of_their_own():
    twice = 2 * (X + Y)
    for call in range(2):   # the first call, and the fast call after it
        gx, gy = _scale_in_place(sg.grad(squared_sum_of_a_sum, wrt=(0, 1))(X, Y), 0.5)
        np.testing.assert_allclose(gx, twice * 0.5)
        np.testing.assert_allclose(gy, twice * 0.5)
    value, (gx, gy) = sg.value_and_grad(squared_sum_of_a_sum, wrt=(0, 1))(X, Y)
    assert not np.shares_memory(gx, gy)
    _, backward = sg.vjp(squared_sum_of_a_sum, wrt=(0, 1))(X, Y)
    gx, gy = _scale_in_place(backward(1.0), 0.5)
    np.testing.assert_allclose(gy, twice * 0.5)
    grads = _scale_in_place(sg.grad(list_of_two)([X.copy(), Y.copy()]), 0.5)
    np.testing.assert_allclose(grads[1], twice * 0.5)


@pytest.mark.parametrize("f, args, wrt, seed", [
    (sum_of_two, (X, Y), (0, 1), SEED), (difference, (X, Y), (0, 1), SEED),
    (reshaped, (X,), 0, SEED.reshape(2, 2)), (returned_as_is, (X,), 0, SEED),
    (pair_of_inputs, (X, Y), (0, 1), (SEED, 2 * SEED))], ids=lambda v: getattr(v, "__name__", ""))
def test_no_gradient_is_the_callers_seed(f, args, wrt, seed):
    want = [np.reshape(np.asarray(g, dtype=float), np.shape(a)) for g, a in zip(
        [_fd_seeded(f, args, k, seed) for k in (wrt if isinstance(wrt, tuple) else (wrt,))], args)]
    for run in ("grad", "grad again", "vjp"):
        seeds = copy.deepcopy(seed)
        if run == "vjp":
            grads = sg.vjp(f, wrt=wrt)(*args)[1](seeds)
        else:
            g = sg.grad(f, wrt=wrt)
            if run == "grad again":
                g(*args, grad_outputs=seeds)
            grads = g(*args, grad_outputs=seeds)
        grads = grads if isinstance(grads, tuple) else (grads,)
        _scale_in_place(grads, 0.5)
        for leaf, original in zip(pytree.tree_leaves(seeds), pytree.tree_leaves(seed)):
            np.testing.assert_array_equal(leaf, original)   # the seed stays as it was
        for got, expected in zip(grads, want):
            np.testing.assert_allclose(got, expected * 0.5, rtol=1e-6, atol=1e-8)


def _fd_seeded(f, args, wrt, seed):
    return numerical_grad(lambda *a: f(*copy.deepcopy(a)), args, wrt=wrt, grad_outputs=seed)


# ----- A dict's keys computed with in forward mode -----
# The tangent of d.items(), list(d) and max(d, key=...) gave each key the tangent None,
# so v * k crashed in sg.jvp, sg.jacfwd and sg.hessian with a TypeError (reverse mode was
# right). ``for k in d`` read d[0], d[1], ... in forward mode (the values, not the keys);
# reverse mode refused it at run time, and forward mode now does too.

def weights_times_keys(x):
    d = {i: x[i] ** 2 for i in range(4)}
    return sum(v * k for k, v in d.items())


def float_keys(x):
    d = {0.5: x[0], 1.5: x[1] ** 2}
    return sum(k * v for k, v in d.items())


def tuple_keys(x):
    d = {(0, 1): x[0] * x[1], (2, 3): x[2] * x[3]}
    return sum((k[0] + k[1]) * v for k, v in d.items())


def sorted_items_by_key(x):
    d = {3 - i: x[i] ** 2 for i in range(4)}
    return sum(k * v for k, v in sorted(d.items()))


def key_of_the_largest(x):
    d = {i: x[i] for i in range(4)}
    k = max(d, key=lambda j: d[j])
    return d[k] * k


def items_listed(x):
    d = {i: x[i] ** 2 for i in range(4)}
    items = list(d.items())
    return items[1][1] * items[2][0]


@pytest.mark.parametrize("f", [weights_times_keys, float_keys, tuple_keys, sorted_items_by_key,
                               key_of_the_largest, items_listed], ids=lambda f: f.__name__)
def test_dict_keys_carry_a_zero_tangent(f):
    assert_grad_and_jvp(f, (X,))
    want = _fd(f, (X,))
    np.testing.assert_allclose(sg.jacfwd(f)(X.copy()), want, rtol=1e-6, atol=1e-8)
    grad = sg.grad(f)
    hess_fd = np.array([(grad(X + e) - grad(X - e)) / 2e-6 for e in np.eye(4) * 1e-6])
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), hess_fd, rtol=1e-5, atol=1e-6)


def loops_over_a_dict(x):
    d = {i: x[i] ** 2 for i in range(4)}
    total = 0.0
    for k in d:
        total = total + d[k] * k
    return total


def test_a_loop_over_a_local_dict_iterates_its_keys_in_both_modes():
    """``for k in d`` over a name that always holds a dict reads the keys, as Python does
    (round four of the idioms), in reverse and in forward mode."""
    assert_grad_and_jvp(loops_over_a_dict, (X,))


# ----- An array stored into a list or dict by a statement, then written through an item -----
# The alias analysis followed a container's display ([y]) but not what later statements
# stored in it (L.append(y), L[i] = y, d[k] = y, nor the appends a comprehension, sorted()
# or max(key=) lower to): a write through an item changed y, read afterwards, and reverse
# mode dropped that gradient. It is now refused at the write, as a write through any view.

def appended_then_written(x):
    y = x * 1.0
    items = []
    items.append(y)
    v = items[0]
    v[0] = x[1] ** 2
    return np.sum(y * x)


def stored_then_written(x):
    y = x * 1.0
    items = [None, None]
    items[1] = y
    v = items[1]
    v[0] = x[1] ** 2
    return np.sum(y * x)


def stored_in_a_dict_then_written(x):
    y = x * 1.0
    d = {}
    d["a"] = y
    v = d["a"]
    v[2] = x[1] ** 2
    return np.sum(y * x)


def rows_appended_then_written(x):
    m = np.reshape(x * 1.0, (2, 2))
    rows = []
    for i in range(2):
        rows.append(m[i])
    r = rows[0]
    r[1] = x[3] ** 2
    return np.sum(m * m)


def sorted_then_written(x):
    y = x * 1.0
    v = sorted([y])[0]
    v[0] = x[1] ** 2
    return np.sum(y * x) + np.sum(v)


def comprehension_item_written(x):
    y = x * 1.0
    v = [r for r in y.reshape(2, 2)][0]
    v[0] = x[1] ** 2
    return np.sum(y * x) + np.sum(v)


@pytest.mark.parametrize("f", [appended_then_written, stored_then_written,
                               stored_in_a_dict_then_written, rows_appended_then_written,
                               sorted_then_written, comprehension_item_written],
                         ids=lambda f: f.__name__)
def test_a_write_through_an_item_stored_in_a_container_is_refused(f):
    assert_refused_here(lambda: sg.grad(f)(X.copy()), "would also change", "shares its memory")
    # forward mode's tangents are stored alongside and follow the write
    want = _fd(f, (X,))
    _, out = sg.jvp(f, (X.copy(),), (V.copy(),))
    np.testing.assert_allclose(out, want @ V, rtol=1e-6, atol=1e-8)


def stores_fresh_arrays(x):
    out = np.zeros(4)
    for i in range(4):
        out[i] = x[i] * 2.0
    out[0] = x[1] ** 2
    items = []
    items.append(out * 1.0)
    first = items[0]
    first[1] = x[2]
    return np.sum(out * x) + np.sum(first)


def test_stores_of_fresh_values_still_differentiate():
    assert_grad_and_jvp(stores_fresh_arrays, (X,))


# ----- Forward mode: a value that is its argument, written through a view later -----
# np.linalg.matrix_power(a, 1) returns a itself; its tangent was a new array, and the
# check that a tangent mirrors its value's memory looked only at the value written into
# (v = mp.ravel()), not at the values it is a view of. Every value that may share a
# written array's memory is checked now, and matrix_power's tangent for n == 1 is t.

def matrix_power_one_written(x):
    y = np.reshape(x * 1.0, (2, 2))
    v = np.linalg.matrix_power(y, 1)
    v[0, 0] = x[1] ** 2
    return np.sum(y * y)


def matrix_power_one_written_through_a_view(x):
    y = x * 1.0
    v = np.linalg.matrix_power(y.reshape(2, 2), 1).ravel()
    v[0] = x[1] ** 2
    return np.sum(y * x) + np.sum(v)


@pytest.mark.parametrize("f", [matrix_power_one_written, matrix_power_one_written_through_a_view],
                         ids=lambda f: f.__name__)
def test_forward_mode_follows_a_write_into_a_value_that_is_its_argument(f):
    want = _fd(f, (X,))
    _, out = sg.jvp(f, (X.copy(),), (V.copy(),))
    np.testing.assert_allclose(out, want @ V, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jacfwd(f)(X.copy()), want, rtol=1e-6, atol=1e-8)
    assert_refused_here(lambda: sg.grad(f)(X.copy()), "shares its memory")


# ----- vjp: what the function reads by a global or closure name, changed before backward -----
# The forward sweep's watch covered the arguments and outputs only. A global weight, a
# closure's array or self.W changed in place between vjp and backward (or a global the
# backward sweep reads by name rebound) gave the gradient of the changed function,
# silently; PyTorch raises here, and srcgrad does now too (with jit=True as well).

WEIGHT = np.ones(4)


def weighted_square(x):
    return np.sum(WEIGHT * x ** 2)


def _closure_weighted(w):
    def weighted(x):
        return np.sum(w * x ** 2)
    return weighted


class Weighted:
    def __init__(self):
        self.W = np.ones(4)

    def loss(self, x):
        return np.sum(np.sin(self.W * x))


GLOBAL_ROWS = [np.ones(4)]


def first_row_weighted(x):
    return np.sum(GLOBAL_ROWS[0] * x ** 2)


def _changed_in_place(jit):
    w = np.ones(4)
    model = Weighted()
    cases = [(weighted_square, WEIGHT), (_closure_weighted(w), w), (model.loss, model.W),
             (first_row_weighted, GLOBAL_ROWS[0])]
    for f, array in cases:
        out, backward = sg.vjp(f, jit=jit)(X.copy())
        array[:] = 5.0
        try:
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                backward(1.0)
        finally:
            array[:] = 1.0
        out, backward = sg.vjp(f, jit=jit)(X.copy())   # unchanged: the gradient, no error
        np.testing.assert_allclose(backward(1.0), _fd(f, (X,)), rtol=1e-6, atol=1e-8)


def test_vjp_refuses_a_backward_after_an_array_read_by_name_changed():
    _changed_in_place(jit=False)


def test_vjp_with_jit_refuses_a_backward_after_an_array_read_by_name_changed():
    pytest.importorskip("numba")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _changed_in_place(jit=True)


def test_vjp_refuses_a_backward_after_a_global_it_reads_was_rebound():
    global WEIGHT
    out, backward = sg.vjp(weighted_square)(X.copy())
    before = WEIGHT
    WEIGHT = np.full(4, 5.0)
    try:
        with pytest.raises(RuntimeError, match="'WEIGHT'.*bound to another object"):
            backward(1.0)
    finally:
        WEIGHT = before


def test_updating_the_weights_after_backward_is_fine():
    w = np.ones(4)
    f = _closure_weighted(w)
    for _ in range(3):
        out, backward = sg.vjp(f)(X.copy())
        g = backward(1.0)
        np.testing.assert_allclose(g, 2 * w * X)
        w -= 0.1 * g   # after backward: nothing is watched any more


# ----- Forward mode: a write through a name that carries no tangent (sg.detach) -----
# d = sg.detach(y) is y's memory without y's tangent; d[0] = c made y[0] a constant, but
# forward mode skipped the alias check for a write whose other name has a tangent,
# assuming the write went through a view of that tangent: y[0] kept its old tangent.

def detached_then_written(x):
    y = x * 2.0
    d = sg.detach(y)
    d[0] = 100.0
    return np.sum(y * x)


def sliced_without_gradient_then_written(x):
    y = x * 2.0
    with sg.no_grad():
        head = y[:2]
    head[1] = 3.0
    return np.sum(y * x)


@pytest.mark.parametrize("f", [detached_then_written, sliced_without_gradient_then_written],
                         ids=lambda f: f.__name__)
def test_a_write_through_a_name_without_a_tangent_is_refused_in_both_modes(f):
    assert_refused_here(lambda: sg.jvp(f, (X.copy(),), (V.copy(),)), "shares its memory")
    assert_refused_here(lambda: sg.grad(f)(X.copy()), "shares its memory")


# ----- A hook that changes its gradient in place -----
# The adjoint of x + w is one array for x and w: a hook on x that scaled its gradient in
# place (g *= 2) scaled w's too; on a broadcast adjoint (np.sum(a) gives a read-only
# view) it raised "output array is read-only". Each hook now gets an array of its own.

def _double_in_place(g):
    g *= 2.0


def squared_sum_of_a_sum_of_two(x, w):
    y = x + w
    return np.sum(y * y)


def sum_of_a_shifted_copy(x):
    y = x * 2.0
    a = y + 0.0
    b = y - 0.0
    return np.sum(a) + np.sum(b * b)


def test_a_hook_changing_its_gradient_in_place_changes_only_that_one():
    W = X + 1.0
    gx, gw = sg.grad(squared_sum_of_a_sum_of_two, wrt=(0, 1), hooks={"x": _double_in_place})(X, W)
    np.testing.assert_allclose(gx, 2 * 2 * (X + W))
    np.testing.assert_allclose(gw, 2 * (X + W))
    got = sg.grad(sum_of_a_shifted_copy, hooks={"a": _double_in_place})(X.copy())
    np.testing.assert_allclose(got, 2 * (2 * 1.0 + 2 * 2 * X))   # da = 1 doubled, db = 2b
