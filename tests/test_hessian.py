"""Second derivatives, forward over reverse (issue 14): ``sg.hvp`` and ``sg.hessian``.

Checked against hand-derived Hessians (quadratic forms, polynomials) and against central
finite differences of ``sg.grad`` along the tangent, in float64, on code whose gradient
records a tape (for and while loops, branches, indexed writes) and on the benchmark
workloads; what forward mode cannot read again in a gradient is refused, naming the
user's file and line.
"""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import NonDifferentiableError, SrcgradError, UnsupportedError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import workloads  # noqa: E402

H = 1e-5


def fd_hvp(f, primals, tangents, h=H, wrt=None):
    """Central difference of ``sg.grad(f, wrt=every float primal)`` along ``tangents``."""
    positions = wrt if wrt is not None else tuple(
        k for k, p in enumerate(primals) if isinstance(p, (float, np.ndarray)))
    g = sg.grad(f, wrt=positions)

    def at(s):
        return g(*[p if t is None else p + s * t for p, t in zip(primals, tangents)])
    plus, minus = at(h), at(-h)
    out = [None] * len(primals)
    for k, a, b in zip(positions, plus, minus):
        out[k] = (np.asarray(a, float) - np.asarray(b, float)) / (2 * h)
    return out


def assert_hvp_matches(f, primals, seed=0, rtol=1e-6, atol=1e-6, tangents=None, wrt=None):
    rng = np.random.default_rng(seed)
    if tangents is None:
        tangents = [rng.normal(size=p.shape) if isinstance(p, np.ndarray) and p.dtype.kind == "f"
                    else float(rng.normal()) if isinstance(p, float) else None for p in primals]
    got = sg.hvp(f, primals, tangents, wrt=wrt)
    want = fd_hvp(f, primals, tangents, wrt=wrt)
    assert len(got) == len(primals)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def fd_hessian(f, x, *rest, h=H):
    """Central differences of ``sg.grad(f)`` (w.r.t. ``x``, the first argument)."""
    g = sg.grad(f)
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = h
        e = e.reshape(x.shape)
        cols.append((np.asarray(g(x + e, *rest)) - np.asarray(g(x - e, *rest))) / (2 * h))
    return np.stack(cols, axis=-1).reshape(x.shape + x.shape)


# ----- hand-derived Hessians -----


def quadratic(x, A):
    return x @ A @ x


def test_the_hessian_of_a_quadratic_form_is_A_plus_A_transposed():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(4, 4))
    x = rng.normal(size=4)
    np.testing.assert_allclose(sg.hessian(quadratic)(x, A), A + A.T, rtol=1e-12, atol=1e-12)
    v = rng.normal(size=4)
    Hv, HA = sg.hvp(quadratic, (x, A), (v, None))
    np.testing.assert_allclose(Hv, (A + A.T) @ v, rtol=1e-12, atol=1e-12)
    # the cross term: d/dt of dL/dA = x x^T along x + t v is v x^T + x v^T
    np.testing.assert_allclose(HA, np.outer(v, x) + np.outer(x, v), rtol=1e-12, atol=1e-12)


def polynomial(x):
    return np.sum(x ** 3) + x[0] * x[1] * x[2] - 2.0 * x[1] ** 2


def test_the_hessian_of_a_polynomial_is_the_hand_derived_one():
    x = np.array([0.7, -1.2, 2.0])
    want = np.diag(6.0 * x) + np.array([[0.0, x[2], x[1]], [x[2], 0.0, x[0]], [x[1], x[0], 0.0]])
    want[1, 1] -= 4.0
    np.testing.assert_allclose(sg.hessian(polynomial)(x), want, rtol=1e-12, atol=1e-12)


def scalar_poly(a, b):
    return a ** 3 * b + 2.0 * a * b ** 2


def test_a_tuple_wrt_gives_the_nested_tuple_of_blocks_and_floats_give_floats():
    a, b = 0.8, -1.1
    H = sg.hessian(scalar_poly, wrt=(0, 1))(a, b)
    want = [[6 * a * b, 3 * a ** 2 + 4 * b], [3 * a ** 2 + 4 * b, 4 * a]]
    assert len(H) == 2 and all(len(row) == 2 for row in H)
    for i in range(2):
        for j in range(2):
            assert np.shape(H[i][j]) == ()
            np.testing.assert_allclose(H[i][j], want[i][j], rtol=1e-12)
    ha, hb = sg.hvp(scalar_poly, (a, b), (1.0, 0.0))
    assert isinstance(ha, float) and isinstance(hb, float)
    np.testing.assert_allclose([ha, hb], [want[0][0], want[1][0]], rtol=1e-12)


def test_the_hessian_of_a_matrix_argument_has_shape_in_shape_plus_in_shape():
    def f(W, x):
        return np.sum(np.tanh(W @ x) ** 2)
    rng = np.random.default_rng(2)
    W, x = rng.normal(size=(2, 3)), rng.normal(size=3)
    H = sg.hessian(f)(W, x)
    assert H.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(H, fd_hessian(f, W, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(H.reshape(6, 6), H.reshape(6, 6).T, atol=1e-10)


# ----- control flow, the tape, indexed writes -----


def for_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sum(np.sin(x * s + i) * x)
    return s


def while_loop(x):
    y = x
    k = 0
    while np.sum(y * y) < 50.0 and k < 10:
        y = y * 1.5 + np.sin(y)
        k = k + 1
    return np.sum(y ** 3)


def branches(x):
    total = 0.0
    for i in range(3):
        if x[i] > 0:
            total = total + x[i] ** 3
        else:
            total = total - np.exp(x[i]) * x[i]
    return total


def indexed_writes(x, m):
    y = np.zeros(3)
    for i in range(3):
        y[i] = np.sum(m[i] * x) ** 2
    y[1] = y[1] * x[0]
    return np.sum(np.tanh(y) * x)


def nested_loops_with_matmul(x, m):
    h = x
    for i in range(2):
        for j in range(2):
            h = np.tanh(m @ h) + h * x[j]
    return np.sum(h * h)


def zero_adjoint_with_nonzero_tangent(a, x):
    # at a = 0 the adjoint of sin(a) (= sin(a) * ...) is exactly 0.0: the blocks guarded by
    # rt.has_grad still carry the tangent
    s = np.sin(a)
    return s * s * np.sum(x) + s * np.sum(x * x)


CONTROL = [
    (for_loop, (np.array([0.3, -0.2, 0.5]), 3)),
    (while_loop, (np.array([0.9, -1.3, 2.1]),)),
    (branches, (np.array([0.9, -1.3, 2.1]),)),
    (indexed_writes, (np.array([0.9, -1.3, 2.1]), np.array([[2.0, 0.3, -0.5], [0.1, 1.5, 0.4],
                                                           [-0.2, 0.6, 1.8]]) * 0.3)),
    (nested_loops_with_matmul, (np.array([0.2, -0.3, 0.4]), np.eye(3) * 0.5 + 0.1)),
    (zero_adjoint_with_nonzero_tangent, (0.0, np.array([0.9, -1.3, 2.1]))),
]


@pytest.mark.parametrize("f, args", CONTROL, ids=[f.__name__ for f, _ in CONTROL])
def test_hvp_matches_finite_differences_of_the_gradient_through_control_flow(f, args):
    assert_hvp_matches(f, args)
    assert_hvp_matches(f, args, seed=1)


@pytest.mark.parametrize("f, args", CONTROL[:4], ids=[f.__name__ for f, _ in CONTROL[:4]])
def test_the_hessian_is_symmetric_and_matches_finite_differences(f, args):
    x = args[0]
    H = sg.hessian(f)(*args)
    np.testing.assert_allclose(H, H.T, atol=1e-8)
    np.testing.assert_allclose(H, fd_hessian(f, *args), rtol=1e-6, atol=1e-6)


def test_the_gradient_forward_mode_reads_keeps_a_tangent_tape_beside_the_tape():
    from srcgrad import hessians
    function, _ = hessians._gradient_of(branches, (0,), (np.ones(3),))
    text = sg.source(function, mode="jvp")
    assert "dtape" in text and "rt.tape_pop(dtape" in text
    assert "rt.has_grad_jvp(" in text or "rt.has_grad(" not in text


# ----- the benchmark workloads -----


def _shifted(w, args):
    if w.group == "W2":   # arange(-2, 4) has a 0 entry: the product is not smooth there
        return (args[0] + 0.25,)
    return args


SCALAR_WORKLOADS = [w for w in workloads.WORKLOADS if w.group not in ("W3", "W9")
                    and w.dtype == "float64" and w.key != "W6-1e7"]


@pytest.mark.parametrize("w", SCALAR_WORKLOADS, ids=[w.key for w in SCALAR_WORKLOADS])
def test_hvp_of_a_benchmark_workload_matches_finite_differences(w):
    args = _shifted(w, tuple(w.make("quick").args))
    assert_hvp_matches(w.fn, args, rtol=1e-5, atol=1e-5)


def test_hvp_of_an_output_that_is_not_a_scalar_is_refused():
    w3 = next(w for w in workloads.WORKLOADS if w.group == "W3")
    with pytest.raises((SrcgradError, TypeError, ValueError)):
        sg.hvp(w3.fn, w3.make("quick").args, (np.ones(3),))


# ----- refusals -----


def prod_helper(x):
    p = math.hypot(x[0], x[1], x[2] * 2.0)
    return p * x[0]


def test_a_gradient_helper_without_a_tangent_is_refused_naming_the_users_file_and_line():
    with pytest.raises(NonDifferentiableError) as info:
        sg.hvp(prod_helper, (np.array([0.5, 1.5, -0.3]),), (np.ones(3),))
    message = str(info.value)
    assert message.count("hessian: no tangent for rt.hypot_vjp, used by the gradient of "
                         f"prod_helper at {__file__}:{prod_helper.__code__.co_firstlineno + 1}") == 1
    assert info.value.filename == __file__
    assert info.value.lineno == prod_helper.__code__.co_firstlineno + 1


class Cube(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    @sg.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g


def uses_once(x):
    return np.sum(Cube.apply(x))


def test_a_once_differentiable_custom_function_is_refused_saying_so():
    with pytest.raises(UnsupportedError, match="once_differentiable"):
        sg.hvp(uses_once, (np.array([0.5, 1.5]),), (np.ones(2),))
    with pytest.raises(UnsupportedError, match="once_differentiable"):
        sg.hessian(uses_once)(np.array([0.5, 1.5]))


def test_hvp_takes_one_tangent_per_primal():
    with pytest.raises(ValueError, match="2 primals but 1 tangents"):
        sg.hvp(quadratic, (np.ones(2), np.eye(2)), (np.ones(2),))


# ----- the catalogue -----


def test_hvp_of_every_catalogue_function_matches_finite_differences_or_is_refused(catalogue_case):
    """Never a wrong number: the Hessian-vector product along a random tangent equals the
    central difference of the gradient, or srcgrad says what it cannot differentiate."""
    case = catalogue_case
    if case.kwargs or not case.targets:
        pytest.skip("keyword arguments: hvp takes positional primals")
    out = case.function(*case.args)
    if isinstance(out, (tuple, list)) or np.size(out) != 1:
        pytest.skip("not a scalar function")
    positions = tuple(k for k, _ in case.targets)
    try:
        assert_hvp_matches(case.function, case.args, rtol=1e-5, atol=1e-5, wrt=positions)
    except SrcgradError as exc:
        assert str(exc).count("hessian: ") == 1, str(exc)
        assert exc.filename == case.function.__code__.co_filename


# ----- the batched Hessian: every column in one run of the gradient's tangent program -----


def _batched_blocks(f, args, positions, j):
    from srcgrad import hessians
    found = hessians._batched_hessian_columns(f, args, tuple(positions), j, None)
    return None if found is None else found[0]


def _loop_blocks(f, args, positions, j):
    from srcgrad import hessians
    return hessians._hessian_columns(f, args, tuple(positions), j)[0]


def test_the_hessians_of_the_quadratic_and_the_polynomial_are_batched_and_hand_derived():
    rng = np.random.default_rng(1)
    A, x = rng.normal(size=(4, 4)), rng.normal(size=4)
    (cols,) = _batched_blocks(quadratic, (x, A), (0,), 0)
    np.testing.assert_allclose(cols, (A + A.T).T, rtol=1e-12, atol=1e-12)   # column j is H[:, j]
    y = np.array([0.7, -1.2, 2.0])
    want = np.diag(6.0 * y) + np.array([[0.0, y[2], y[1]], [y[2], 0.0, y[0]], [y[1], y[0], 0.0]])
    want[1, 1] -= 4.0
    (cols,) = _batched_blocks(polynomial, (y,), (0,), 0)
    np.testing.assert_allclose(cols, want.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cols, _loop_blocks(polynomial, (y,), (0,), 0)[0], atol=1e-12)


def test_the_batched_hessian_of_several_arguments_equals_one_hvp_per_column():
    def f(W, x, a):
        return np.sum(np.tanh(W @ x) ** 2) * a + a ** 3
    rng = np.random.default_rng(3)
    args = (rng.normal(size=(2, 3)), rng.normal(size=3), 0.6)
    for j in range(3):
        batched = _batched_blocks(f, args, (0, 1, 2), j)
        assert batched is not None
        for b, l in zip(batched, _loop_blocks(f, args, (0, 1, 2), j)):
            np.testing.assert_allclose(b, l, rtol=1e-12, atol=1e-12)
    H = sg.hessian(f, wrt=(0, 1, 2))(*args)
    assert H[0][1].shape == (2, 3, 3) and H[2][0].shape == (2, 3) and np.shape(H[2][2]) == ()


def test_the_hessian_in_blocks_of_seeds_equals_the_hessian_in_one_block():
    x = np.array([0.7, -1.2, 2.0, 0.1, -0.4])
    whole = sg.hessian(lambda v: np.sum(v ** 3) * np.sum(np.sin(v)))(x)
    for chunk in (1, 2, 3):
        got = sg.hessian(lambda v: np.sum(v ** 3) * np.sum(np.sin(v)), chunk_size=chunk)(x)
        np.testing.assert_allclose(got, whole, atol=1e-13)


def _tangent_only_square(x):
    return x * x


def _uses_square(x):
    return np.sum(np.exp(_tangent_only_square(x)))


def test_a_gradient_statement_without_a_batched_rule_falls_back_to_one_hvp_per_column(
        isolated_rules):
    from srcgrad import rules
    from srcgrad import runtime as rt

    @sg.adjoint(_tangent_only_square)
    def _square_adjoint(dy, y, x):
        return rt.scale_twice(dy, x)

    @rt.helper
    def scale_twice(g, x):
        return 2.0 * g * x

    @sg.adjoint(rt.scale_twice)
    def _scale_adjoint(dw, w, g, x):
        return 2.0 * dw * x, 2.0 * dw * g

    @rules.tangent(_tangent_only_square)
    def _square_tangent(y, x, *, t_x):
        return 2.0 * x * t_x

    @rules.tangent(rt.scale_twice)
    def _scale_tangent(y, g, x, *, t_g, t_x):
        return 2.0 * t_g * x + 2.0 * g * t_x   # written by hand: no batched form

    x = np.array([0.3, -0.5, 0.8])
    assert _batched_blocks(_uses_square, (x,), (0,), 0) is None
    want = np.diag(np.exp(x * x) * (2.0 + 4.0 * x * x))
    np.testing.assert_allclose(sg.hessian(_uses_square)(x), want, rtol=1e-12, atol=1e-12)


def test_the_batched_hessian_of_every_catalogue_function_matches_finite_differences(
        catalogue_case):
    """Never a wrong number: each batched block of columns equals the central differences
    of the gradient; a function whose gradient forward mode cannot read is not batched
    (sg.hessian then refuses it as sg.hvp does), and one whose tangent program cannot be
    batched (a list's tangent) gets its columns from one hvp per seed, checked the same."""
    case = catalogue_case
    if case.kwargs or not case.targets:
        pytest.skip("keyword arguments: hessian takes positional arguments")
    out = case.function(*case.args)
    if isinstance(out, (tuple, list)) or np.size(out) != 1:
        pytest.skip("not a scalar function")
    positions = tuple(k for k, _ in case.targets)
    g = sg.grad(case.function, wrt=positions)
    for j in positions:
        blocks = _batched_blocks(case.function, case.args, positions, j)
        if blocks is None:   # not batched: sg.hessian runs one hvp per column, or refuses
            try:
                blocks = _loop_blocks(case.function, case.args, positions, j)
            except SrcgradError:
                continue
        x = np.asarray(case.args[j], dtype=float)
        for n in range(x.size):
            e = np.zeros(x.size)
            e[n] = H
            e = e.reshape(x.shape)
            shifted = [list(case.args), list(case.args)]
            shifted[0][j] = x + e if x.shape else float(x + e)
            shifted[1][j] = x - e if x.shape else float(x - e)
            plus, minus = g(*shifted[0]), g(*shifted[1])
            for r, i in enumerate(positions):
                want = (np.asarray(plus[r], float) - np.asarray(minus[r], float)) / (2 * H)
                np.testing.assert_allclose(blocks[r][n], np.broadcast_to(want, np.shape(case.args[i])),
                                           rtol=1e-5, atol=1e-5)


def dict_quadratic(p, A, B):
    a, b = p["a"], p["b"]
    return 0.5 * a @ A @ a + a @ B @ b + p["c"] * np.sum(b ** 2) + 3.0 * p["c"] ** 2


def test_the_hessian_of_a_dict_parameter_quadratic_is_the_hand_derived_dict_of_dicts():
    rng = np.random.default_rng(21)
    A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 2))
    p = {"a": rng.normal(size=3), "b": rng.normal(size=2), "c": 0.4}
    H = sg.hessian(dict_quadratic)(p, A, B)
    b, c = p["b"], p["c"]
    want = {"a": {"a": (A + A.T) / 2, "b": B, "c": np.zeros(3)},
            "b": {"a": B.T, "b": 2 * c * np.eye(2), "c": 2 * b},
            "c": {"a": np.zeros(3), "b": 2 * b, "c": 6.0}}
    assert set(H) == set(want) and all(set(H[k]) == set(want[k]) for k in want)
    for k1 in want:
        for k2 in want:
            assert np.shape(H[k1][k2]) == np.shape(p[k1]) + np.shape(p[k2])
            np.testing.assert_allclose(H[k1][k2], want[k1][k2], rtol=1e-12, atol=1e-12)
    # the data too: JAX's nesting H[i][k1][j][k2] (jax.hessian's), the dict's keys outside
    Hp, (hAp, hAA) = sg.hessian(dict_quadratic, wrt=(0, 1))(p, A, B)
    assert set(Hp) == set(p) and all(isinstance(Hp[k], tuple) and len(Hp[k]) == 2 for k in p)
    np.testing.assert_allclose(Hp["b"][0]["c"], 2 * b, rtol=1e-12)
    # d/dA of dL/da = (A + A^T) a / 2: d(dL/da_i)/dA_jk = (delta_ij a_k + delta_ik a_j) / 2
    a = p["a"]
    want_aA = (np.einsum("ij,k->ijk", np.eye(3), a) + np.einsum("ik,j->ijk", np.eye(3), a)) / 2
    np.testing.assert_allclose(Hp["a"][1], want_aA, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hAp["a"], np.moveaxis(want_aA, 0, -1), rtol=1e-12, atol=1e-12)
    assert hAA.shape == (3, 3, 3, 3) and not np.any(hAA)
