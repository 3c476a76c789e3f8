"""sg.jacfwd (forward mode, columns) == sg.jacobian/sg.jacrev (reverse mode, rows) ==
the central finite-difference Jacobian, with JAX's shapes: out.shape + in.shape."""

import numpy as np
import pytest

import srcgrad as sg


def fd_jacobian(f, args, k, h=1e-6):
    x = np.asarray(args[k], dtype=float)
    out = np.asarray(f(*args), dtype=float)
    jac = np.zeros(out.shape + x.shape)
    for j in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[j] = h
        plus = list(args)
        minus = list(args)
        plus[k] = x + e if x.shape else float(x + e)
        minus[k] = x - e if x.shape else float(x - e)
        jac[(...,) + j] = (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * h)
    return jac


def elementwise(x):
    return np.sin(x) * x


def matrix_map(W, x):
    y = np.tanh(W @ x)
    return np.outer(y, x)


def looped(x, n):
    out = np.zeros(n)
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[i]
        out[i] = np.exp(-s)
    return out


def scalar_out(a, x):
    return a * np.sum(x ** 3)


CASES = [
    (elementwise, (np.array([0.3, -1.2, 2.0]),), 0),
    (matrix_map, (np.arange(6.0).reshape(2, 3) / 5, np.array([0.5, -0.4, 1.1])), 0),
    (matrix_map, (np.arange(6.0).reshape(2, 3) / 5, np.array([0.5, -0.4, 1.1])), 1),
    (looped, (np.array([0.3, -0.6, 0.9, 0.2]), 4), 0),
    (scalar_out, (0.7, np.array([0.3, -0.6, 0.9])), 1),
    (scalar_out, (0.7, np.array([0.3, -0.6, 0.9])), 0),
]


@pytest.mark.parametrize("f, args, k", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_jacfwd_equals_jacrev_equals_finite_differences(f, args, k):
    expected = fd_jacobian(f, args, k)
    forward = sg.jacfwd(f, wrt=k)(*args)
    reverse = sg.jacrev(f, wrt=k)(*args)
    assert forward.shape == reverse.shape == np.shape(f(*args)) + np.shape(args[k])
    np.testing.assert_allclose(forward, expected, atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(reverse, expected, atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(forward, reverse, atol=1e-12, rtol=1e-10)


def test_wrt_by_name_and_as_a_tuple():
    W, x = np.arange(6.0).reshape(2, 3) / 5, np.array([0.5, -0.4, 1.1])
    jW, jx = sg.jacobian(matrix_map, wrt=("W", "x"))(W, x)
    fW, fx = sg.jacfwd(matrix_map, wrt=(0, 1))(W, x)
    assert jW.shape == (2, 3, 2, 3) and jx.shape == (2, 3, 3)
    np.testing.assert_allclose(jW, fW, atol=1e-12)
    np.testing.assert_allclose(jx, fx, atol=1e-12)
    assert sg.jacobian is sg.jacrev


# ----- the batched tangent program (all columns at once) -----

from srcgrad import jacobians, rules  # noqa: E402
from srcgrad.errors import SrcgradError  # noqa: E402
from srcgrad.rules import jvp_batched_runtime as jb  # noqa: E402
from srcgrad.transform import batching  # noqa: E402


def per_column(f, args, k):
    """The Jacobian's columns ``(in.size,) + out.shape`` from one sg.jvp per column."""
    x = np.asarray(args[k], dtype=float)
    columns = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = 1.0
        tangents = [None] * len(args)
        tangents[k] = e.reshape(x.shape) if np.ndim(args[k]) else 1.0
        out, t = sg.jvp(f, args, tangents)
        columns.append(np.broadcast_to(np.asarray(t, dtype=float), np.shape(out)))
    return np.stack(columns) if columns else np.zeros((0,) + np.shape(f(*args)))


def test_jacfwd_runs_every_column_in_one_batched_program_on_the_cases():
    for f, args, k in CASES:
        out, columns = jacobians.batched_columns(f, args, k)
        assert columns.shape == (np.size(args[k]),) + np.shape(out)
        np.testing.assert_allclose(columns, per_column(f, args, k), atol=1e-12, rtol=1e-12)


def test_batched_columns_in_blocks_equal_one_block():
    W, x = np.arange(6.0).reshape(2, 3) / 5, np.array([0.5, -0.4, 1.1])
    whole = sg.jacfwd(matrix_map, wrt=0)(W, x)
    for chunk in (1, 2, 4):
        np.testing.assert_allclose(sg.jacfwd(matrix_map, wrt=0, chunk_size=chunk)(W, x), whole,
                                   atol=1e-14)


def test_the_batched_jacobian_of_every_catalogue_function_matches_finite_differences(
        catalogue_wrt_case):
    """Never a wrong number: each column batch equals the central differences (and the
    per-column jvp where that one is right); only a function of several outputs is not
    batched; forward mode refuses the rest as sg.jvp does."""
    case, k, _ = catalogue_wrt_case
    if case.kwargs or not isinstance(k, int):
        pytest.skip("keyword arguments")
    f, args = case.function, case.args
    try:
        out, columns = jacobians.batched_columns(f, args, k)
    except batching.NotBatchable:
        assert isinstance(f(*args), (tuple, list)), "a single-output function was not batched"
        return
    except SrcgradError:
        with pytest.raises(SrcgradError):
            sg.jvp(f, args, [None if j != k else np.ones(np.shape(a)) if np.ndim(a) else 1.0
                             for j, a in enumerate(args)])
        return
    want = np.moveaxis(fd_jacobian(f, args, k).reshape(np.shape(out) + (-1,)), -1, 0)
    np.testing.assert_allclose(columns, want, atol=case.atol * 10, rtol=case.rtol * 10)
    try:
        loop = per_column(f, args, k)
    except SrcgradError:
        return
    if np.allclose(loop, want, atol=case.atol * 10, rtol=case.rtol * 10):
        np.testing.assert_allclose(columns, loop, atol=1e-9, rtol=1e-9)


def my_cube(x):
    return x ** 3


def uses_my_cube(x):
    return np.sin(my_cube(x)) * x


def test_a_statement_without_a_batched_rule_falls_back_to_one_run_per_column(isolated_rules):
    @sg.adjoint(my_cube)
    def _cube_adjoint(dy, y, x):
        return dy * 3 * x ** 2

    @rules.tangent(my_cube)
    def _cube_tangent(y, x, *, t_x):
        return t_x * 3 * x ** 2   # written by hand: no batched form

    x = np.array([0.4, -0.9, 1.3])
    with pytest.raises(batching.NotBatchable):
        jacobians.batched_columns(uses_my_cube, (x,), 0)
    jac = sg.jacfwd(uses_my_cube)(x)
    want = np.diag(np.cos(x ** 3) * 3 * x ** 2 * x + np.sin(x ** 3))
    np.testing.assert_allclose(jac, want, atol=1e-12)
    np.testing.assert_allclose(jac, fd_jacobian(uses_my_cube, (x,), 0), atol=1e-6)


def test_a_helper_that_cannot_batch_a_value_at_run_time_falls_back_too(monkeypatch):
    def f(x):
        return np.sum(np.stack([x[0] * x[1], x[1]]) ** 2, axis=0)
    x = np.array([0.3, -1.1])
    want = fd_jacobian(f, (x,), 0)
    calls = []

    def refuse(*args):
        calls.append(args)
        raise batching.NotBatchable("a value the helper does not batch")
    monkeypatch.setattr(sg_rt, "batch_sum", refuse)
    np.testing.assert_allclose(sg.jacfwd(f)(x), want, atol=1e-6)
    assert calls, "the batched program did not run"
    with pytest.raises(batching.NotBatchable):
        jb.batch_align([np.zeros(3), 1.0], np.zeros(2))   # an item without its batch axis


# Each batched helper against the same operation on each seed: B equals the operand's
# sizes (3), so an axis shifted wrongly gives the right shape and wrong numbers.

B = 3
_rng = np.random.default_rng(7)
T = _rng.normal(size=(B, 3, 3))
P = _rng.normal(size=(3, 3))
V = _rng.normal(size=(B, 3))
HELPERS = [
    ("sum axis 0", lambda t: jb.batch_sum(t, 0), lambda s: s.sum(0)),
    ("sum axis -1", lambda t: jb.batch_sum(t, -1), lambda s: s.sum(-1)),
    ("sum axis None", lambda t: jb.batch_sum(t), lambda s: s.sum()),
    ("sum keepdims", lambda t: jb.batch_sum(t, (1,), True), lambda s: s.sum(1, keepdims=True)),
    ("mean axis 1", lambda t: jb.batch_mean(t, 1), lambda s: s.mean(1)),
    ("cumsum axis 0", lambda t: jb.batch_cumsum(t, 0), lambda s: s.cumsum(0)),
    ("cumsum flat", lambda t: jb.batch_cumsum(t), lambda s: s.cumsum()),
    ("transpose", lambda t: jb.batch_transpose(t), lambda s: s.T),
    ("transpose axes", lambda t: jb.batch_transpose(t, (1, 0)), lambda s: s.transpose(1, 0)),
    ("swapaxes", lambda t: jb.batch_swapaxes(t, 0, -1), lambda s: np.swapaxes(s, 0, -1)),
    ("flip axis 0", lambda t: jb.batch_flip(t, 0), lambda s: np.flip(s, 0)),
    ("flip all", lambda t: jb.batch_flip(t), lambda s: np.flip(s)),
    ("roll flat", lambda t: jb.batch_roll(t, 2), lambda s: np.roll(s, 2)),
    ("roll axis 1", lambda t: jb.batch_roll(t, 1, 1), lambda s: np.roll(s, 1, 1)),
    ("reshape", lambda t: jb.batch_reshape(t, np.zeros(9)), lambda s: s.reshape(9)),
    ("t @ P", lambda t: jb.batch_matmul(t, P, P, False), lambda s: s @ P),
    ("P @ t", lambda t: jb.batch_matmul(t, P, P, True), lambda s: P @ s),
    ("P @ v", lambda t: jb.batch_matmul(t[:, 0], P, P[0], True), lambda s: P @ s[0]),
    ("v @ P", lambda t: jb.batch_matmul(t[:, 0], P, P[0], False), lambda s: s[0] @ P),
    ("dot(P, v)", lambda t: jb.batch_dot(t[:, 0], P, P[0], True), lambda s: np.dot(P, s[0])),
    ("dot(scalar, P)", lambda t: jb.batch_dot(t[:, 0, 0], P, 1.0, False), lambda s: s[0, 0] * P),
    ("unbroadcast to a row", lambda t: jb.batch_unbroadcast(t, np.zeros((1, 3))),
     lambda s: s.sum(0, keepdims=True)),
    ("unbroadcast to a vector", lambda t: jb.batch_unbroadcast(t, np.zeros(3)), lambda s: s.sum(0)),
    ("unreduce axis 0", lambda t: jb.batch_unreduce(t[:, 0], np.zeros((3, 3)), 0),
     lambda s: np.broadcast_to(s[0][None, :], (3, 3))),
    ("unreduce axis 1", lambda t: jb.batch_unreduce(t[:, 0], np.zeros((3, 3)), 1),
     lambda s: np.broadcast_to(s[0][:, None], (3, 3))),
    ("matmul_grad_b of a vector", lambda t: jb.batch_matmul_grad(t[:, 0], P, np.zeros(3), 2, None),
     lambda s: sg_rt.matmul_grad_b(s[0], P, np.zeros(3))),
    ("matmul_grad_a of matrices", lambda t: jb.batch_matmul_grad(t, P, P, 0, None),
     lambda s: sg_rt.matmul_grad_a(s, P, P)),
    ("align a vector to a matrix", lambda t: jb.batch_align(t[:, 0], P) * P, lambda s: s[0] * P),
    ("item of each seed", lambda t: jb.batched(t)[1, ::2], lambda s: s[1, ::2]),
]

from srcgrad import runtime as sg_rt  # noqa: E402


@pytest.mark.parametrize("helper, each", [(h, e) for _, h, e in HELPERS],
                         ids=[n for n, _, _ in HELPERS])
def test_a_batched_helper_does_to_each_seed_what_the_operation_does(helper, each):
    got = helper(T)
    want = np.stack([each(T[b]) for b in range(B)])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_a_batched_write_aligns_a_scalar_seed_tangent_to_the_slot():
    t = np.zeros((B, 3, 3))
    jb.batched(t)[1] = V          # each seed's value is a vector: a row
    jb.batched(t)[2, 0] = V[:, 0]  # a scalar per seed
    for b in range(B):
        np.testing.assert_array_equal(t[b, 1], V[b])
        assert t[b, 2, 0] == V[b, 0]


# ----- pytree arguments -----


def dict_layer(p, x):
    return np.tanh(p["W"] @ x + p["b"][0])


def test_jacrev_of_a_dict_argument_is_a_dict_of_blocks_out_shape_plus_leaf_shape():
    rng = np.random.default_rng(5)
    p = {"W": rng.normal(size=(2, 3)), "b": [rng.normal(size=2)]}
    x = rng.normal(size=3)
    jac = sg.jacrev(dict_layer)(p, x)
    assert set(jac) == {"W", "b"} and isinstance(jac["b"], list)
    assert jac["W"].shape == (2, 2, 3) and jac["b"][0].shape == (2, 2)
    g = 1 - np.tanh(p["W"] @ x + p["b"][0]) ** 2
    np.testing.assert_allclose(jac["b"][0], np.diag(g), atol=1e-12)
    np.testing.assert_allclose(jac["W"], np.einsum("i,ij,k->ijk", g, np.eye(2), x), atol=1e-12)
    jp, jx = sg.jacrev(dict_layer, wrt=(0, 1))(p, x)
    np.testing.assert_allclose(jp["W"], jac["W"], atol=1e-14)
    np.testing.assert_allclose(jx, g[:, None] * p["W"], atol=1e-12)


def test_jacfwd_of_a_dict_argument_is_jacrevs_dict_of_blocks():
    rng = np.random.default_rng(6)
    p = {"W": rng.normal(size=(2, 3)), "b": [rng.normal(size=2)]}
    x = rng.normal(size=3)
    got, want = sg.jacfwd(dict_layer)(p, x), sg.jacrev(dict_layer)(p, x)
    assert set(got) == {"W", "b"} and isinstance(got["b"], list)
    np.testing.assert_allclose(got["W"], want["W"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got["b"][0], want["b"][0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got["W"], fd_jacobian(lambda W: dict_layer({"W": W, "b": p["b"]}, x),
                                                     (p["W"],), 0), rtol=1e-6, atol=1e-8)
