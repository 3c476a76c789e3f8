"""Forward mode (issue 14): ``sg.jvp``'s tangent program against central finite differences.

Every catalogue function (tests/functions.py) either matches the directional finite
difference along a random tangent, or is refused at compile time with a clear
SrcgradError naming the primitive: never a wrong number.
"""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import SrcgradError
from srcgrad.testing import numerical_grad

H = 1e-6


def _fd(f, primals, tangents, h=H):
    """Central difference of ``f`` along ``tangents`` (None: held fixed)."""
    def at(s):
        return f(*[p if t is None else (p + s * t if isinstance(p, np.ndarray) else p + s * float(t))
                   for p, t in zip(primals, tangents)])
    plus, minus = at(h), at(-h)
    if isinstance(plus, (tuple, list)):
        return type(plus)((np.asarray(a, float) - np.asarray(b, float)) / (2 * h)
                          for a, b in zip(plus, minus))
    return (np.asarray(plus, float) - np.asarray(minus, float)) / (2 * h)


def _random_tangents(primals, positions, rng):
    tangents = [None] * len(primals)
    for k in positions:
        p = primals[k]
        tangents[k] = rng.normal(size=np.shape(p)) if isinstance(p, np.ndarray) else float(rng.normal())
    return tangents


def assert_jvp_matches(f, primals, positions, atol=1e-6, rtol=1e-5, seed=0):
    rng = np.random.default_rng(seed)
    primals = tuple(p.copy() if isinstance(p, np.ndarray) else p for p in primals)
    tangents = _random_tangents(primals, positions, rng)
    out, t = sg.jvp(f, primals, tangents)
    expected_out = f(*[p.copy() if isinstance(p, np.ndarray) else p for p in primals])
    fd = _fd(f, primals, tangents)
    if isinstance(fd, (tuple, list)):
        assert len(t) == len(fd)
        for a, b, o, e in zip(t, fd, out, expected_out):
            np.testing.assert_allclose(o, e, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)
    else:
        np.testing.assert_allclose(out, expected_out, rtol=1e-12, atol=1e-12)
        assert np.shape(t) == np.shape(fd)
        np.testing.assert_allclose(t, fd, atol=atol, rtol=rtol)
    return t


def test_every_catalogue_function_matches_finite_differences_or_is_refused(catalogue_case):
    case = catalogue_case
    if case.kwargs:
        pytest.skip("sg.jvp takes positional primals; keyword-only inputs are not passed")
    positions = [w for w, _ in case.targets if isinstance(w, int)]
    if not positions:
        pytest.skip("nothing differentiable")
    args, _ = case.fresh()
    try:
        assert_jvp_matches(case.function, args, positions, atol=case.atol, rtol=case.rtol)
    except SrcgradError as exc:   # refused: the message names a line and what is missing
        text = str(exc)
        assert exc.filename and "functions.py" in exc.filename, text
        assert "forward mode" in text, text
    except TypeError as exc:
        assert "forward mode" in str(exc), str(exc)


# ----- control flow, indexed writes, the benchmark workloads -----


def loop_branch_write(x, n):
    y = np.zeros(n)
    s = 0.0
    for i in range(n):
        s = s * 0.5 + np.sin(x[i]) * x[i]
        if s > 0.3:
            y[i] = s ** 2
        else:
            y[i] = -s
            continue
        if s > 5.0:
            break
    while s < 10.0:
        s = s * 2.0 + 1.0
    return np.sum(y * y) + s * np.max(x)


def loop_over_an_array(x, W):
    total = 0.0
    for row in W:
        total = total + np.dot(row, x) ** 2
    return total


def test_loops_branches_while_and_indexed_writes_match_finite_differences():
    x = np.array([0.9, -1.3, 2.1, 0.4])
    assert_jvp_matches(loop_branch_write, (x, 4), [0])
    W = np.arange(12.0).reshape(3, 4) / 7.0
    assert_jvp_matches(loop_over_an_array, (x, W), [0, 1])


def swap_in_a_loop(x, n):
    a = x[0]
    b = x[1]
    for i in range(n):
        a, b = b, a * b + 0.1
    return a + 2 * b


def shifted_copy(x):
    y = x.copy()
    y[1:] = y[:-1] * 2
    y[0] = y[0] * y[2]
    return np.sum(y ** 2)


def nested_loops(x, m):
    s = 0.0
    for i in range(2):
        for j in range(3):
            s = s + m[i, j] * x[j] ** 2
    k = 0
    while s < 50 and k < 10:
        s = s * 1.5
        k += 1
    return s


def test_unpacking_writes_that_read_their_array_and_nested_loops_match():
    x = np.array([0.7, -0.4, 1.3])
    assert_jvp_matches(swap_in_a_loop, (x, 3), [0])
    assert_jvp_matches(shifted_copy, (x,), [0])
    assert_jvp_matches(nested_loops, (x, np.arange(6.0).reshape(2, 3) / 3), [0, 1])


def writes_into_its_argument(x):
    x[0] = x[1] * x[2]
    return np.sum(x * x)


def test_a_write_into_an_argument_leaves_the_callers_tangent_alone():
    x = np.array([0.7, -0.4, 1.3])
    dx = np.array([1.0, 0.5, -0.25])
    expected = _fd(writes_into_its_argument, (x.copy(),), (dx,))
    _, t = sg.jvp(writes_into_its_argument, (x.copy(),), (dx,))
    np.testing.assert_allclose(t, expected, rtol=1e-6)
    assert dx.tolist() == [1.0, 0.5, -0.25]


def test_a_tangent_of_none_holds_that_argument_fixed():
    x = np.array([0.9, -1.3, 2.1, 0.4])
    W = np.arange(12.0).reshape(3, 4) / 7.0
    assert_jvp_matches(loop_over_an_array, (x, W), [1])


def test_a_nonzero_tangent_for_an_integer_is_refused_as_grad_refuses_it():
    def f(x, n):
        k = int(np.argmax(x))
        return x[k] * n + float(n)

    x, dx = np.array([1.0, 3.0, 2.0]), np.array([0.5, 0.25, 1.0])
    with pytest.raises(TypeError, match="nonzero tangent for 'n'.*integer or boolean"):
        sg.jvp(f, (x, 2), (dx, 1.0))
    with pytest.raises(TypeError, match="nonzero tangent for 'm'"):
        sg.jvp(lambda x, m: x * m, (x, np.array([True, False, True])), (dx, np.ones(3)))


def masked_square(x, m):
    return np.sum(x ** 2 * m)


def test_a_hessian_hvp_or_jacfwd_with_respect_to_a_boolean_array_is_refused_not_zero():
    x, m = np.array([1.0, 2.0]), np.array([True, False])
    for call in (lambda: sg.hessian(masked_square, wrt=1)(x, m),
                 lambda: sg.hvp(masked_square, (x, m), (x, np.ones(2))),
                 lambda: sg.jacfwd(masked_square, wrt=1)(x, m)):
        with pytest.raises(TypeError, match="'m'.*dtype is bool"):
            call()
    hx, hm = sg.hvp(masked_square, (x, m), (x, None))   # the mask held fixed
    np.testing.assert_allclose(hx, 2 * x * m)
    assert hm is None


def test_an_integer_with_a_zero_or_no_tangent_carries_none():
    def f(x, n):
        k = int(np.argmax(x))
        return x[k] * n + float(n)

    x, dx = np.array([1.0, 3.0, 2.0]), np.array([0.5, 0.25, 1.0])
    for zero in (None, 0, 0.0, np.zeros(())):
        out, t = sg.jvp(f, (x, 2), (dx, zero))
        assert out == f(x, 2) and t == 0.25 * 2


def test_a_tangent_that_is_not_a_real_number_is_refused():
    x = np.array([1.0, 2.0])
    with pytest.raises(TypeError, match="not a real number"):
        sg.jvp(np.sin, (x,), (np.array([1j, 0j]),))
    with pytest.raises(TypeError, match="not a real number"):
        sg.jvp(np.sin, (x,), ("ab",))


@pytest.mark.parametrize("key", ["W1", "W2", "W3", "W4", "W5-f64", "W6-1e6", "W7", "W8"])
def test_benchmark_workloads_match_finite_differences(key):
    workloads = _workloads()

    w = next(w for w in workloads.WORKLOADS if w.key == key)
    args = w.make("quick").args
    if key == "W2":   # arange(-2, 4) has an entry on the branch's kink at 0: FD crosses it
        args = (args[0] + 0.25,)
    assert_jvp_matches(w.fn, args, list(w.wrt), atol=1e-5, rtol=1e-5)


def _workloads():
    import importlib
    import os
    import sys
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    return importlib.import_module("workloads")


def cached_once(x, W):
    return np.sum(W @ x)


def test_the_tangent_program_is_compiled_once_and_cached():
    from srcgrad import forward_api

    def entries():   # the cache's (bounded: caches.py), of this function
        return [k for k in forward_api._cache if k[0] is cached_once.__code__]

    x = np.array([0.3, 0.2])
    sg.jvp(cached_once, (x, np.eye(2)), (x, None))
    before = len(entries())
    sg.jvp(cached_once, (x * 2, np.eye(2) * 3), (x, None))
    assert len(entries()) == before
    sg.jvp(cached_once, (x, np.eye(2)), (x, np.eye(2)))   # another set of tangents
    assert len(entries()) == before + 1


# ----- the printed tangent program -----


def running_product(x, n):
    p = 1.0
    for i in range(n):
        p = p * np.sin(x[i])
    return p


def test_the_tangent_program_of_a_loop_reads_like_the_loop():
    text = sg.source(running_product, mode="jvp")
    code = text[text.index("def "):]
    assert code == '''\
def running_product_jvp(x, n, dx):
    # tangent of: p = 1.0
    p = 1.0
    dp = 0.0
    # tangent of: for i in range(n):
    for i in range(n):
        # tangent of: p = p * np.sin(x[i])
        x_item = x[i]
        dx_item = dx[i]
        sin_x_item = np.sin(x_item)
        dsin_x_item = dx_item * xp.cos(x_item)
        dp = dp * sin_x_item + p * dsin_x_item
        p = p * sin_x_item
    # tangent of: return p
    return p, dp
'''.replace("def running_product_jvp(x, n, dx):\n", "def running_product_jvp(x, n, dx):\n"
            "    xp = rt.namespace(dx, x)\n")
    x = np.array([0.5, 1.2, -0.7])
    assert_jvp_matches(running_product, (x, 3), [0])


# ----- refusals -----


def uses_geomspace(x):
    return np.sum(np.geomspace(x, 2.0 * x, 4) * x)


def test_a_primitive_without_a_tangent_is_refused_naming_file_line_and_primitive():
    with pytest.raises(sg.NonDifferentiableError) as info:
        sg.jvp(uses_geomspace, (np.ones(3),), (np.ones(3),))
    message = str(info.value)
    assert info.value.filename.endswith("test_jvp.py")
    assert f"line {uses_geomspace.__code__.co_firstlineno + 1}" in message
    assert "forward mode needs a jvp for numpy.geomspace" in message


def uses_linspace(a, b):
    return np.sum(np.linspace(a, b, 5) ** 2)


def test_a_zero_tangent_beside_another_in_one_call_is_a_zero_there():
    # xp.linspace(t_start, t_stop, ...) is linear in both: a constant start gives 0.0
    for positions in ([0], [1], [0, 1]):
        assert_jvp_matches(uses_linspace, (0.5, 2.0), positions)


def einsums(x, m, y):
    a = np.einsum("ij,j->i", m, x)
    b = np.einsum(m, [0, 1], y, [1], [0])
    return np.einsum("i,i->", a, b)


def test_einsum_is_linear_in_each_operand_in_both_forms():
    x, y = np.array([0.3, -1.1, 0.8]), np.array([1.2, 0.4, -0.6])
    m = np.arange(9.0).reshape(3, 3) / 4
    assert_jvp_matches(einsums, (x, m, y), [0, 1, 2])
    assert_jvp_matches(einsums, (x, m, y), [2])


class Cube(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g


def uses_cube(x):
    return np.sum(Cube.apply(x))


def test_a_custom_function_without_a_jvp_is_refused():
    with pytest.raises(SrcgradError) as info:
        sg.jvp(uses_cube, (np.ones(3),), (np.ones(3),))
    assert "forward mode needs a jvp for" in str(info.value)
    assert info.value.filename.endswith("test_jvp.py")


def my_softsign(x):
    return x / (1 + abs(x))


def test_a_user_adjoint_without_a_tangent_is_refused(isolated_rules):
    import numpy

    @sg.adjoint(numpy.cbrt)
    def cbrt_rule(g, y, x):
        return g / (3 * y * y)

    def f(x):
        return np.sum(np.cbrt(x))

    with pytest.raises(sg.NonDifferentiableError, match="reverse mode only"):
        sg.jvp(f, (np.ones(3),), (np.ones(3),))


def complex_abs(x):
    return np.sum(np.abs(x + 1j * x))


def complex_arcsinh(x):   # (np.sin has a tangent on complex values since 2026-12-07)
    return np.sum(np.abs(np.arcsinh(x + 1j * x)))


def test_complex_intermediates_have_tangents_and_a_primitive_without_one_is_refused():
    x, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.5, -2.0])
    _, t = sg.jvp(complex_abs, (x,), (v,))
    np.testing.assert_allclose(t, np.sum(np.sqrt(2.0) * np.sign(x) * v), rtol=1e-12)
    with pytest.raises(sg.UnsupportedError, match="numpy.arcsinh on complex values"):
        sg.jvp(complex_arcsinh, (x,), (v,))
    with pytest.raises(TypeError, match="complex primals"):
        sg.jvp(np.sum, (np.ones(3) * 1j,), (np.ones(3),))


def tiled(x, a):
    return np.sum(np.tile(x, 2) * a)


def test_a_rule_that_drops_an_arguments_tangent_is_refused(isolated_rules):
    from srcgrad import rules

    @rules.tangent(np.tile)
    def tile_without_x(y, A, reps, *, t_A):   # forgets t_A: must not give a silent zero
        return xp.zeros(y.shape)  # noqa: F821

    with pytest.raises(sg.NonDifferentiableError, match="no tangent for its argument 'A'"):
        sg.jvp(tiled, (np.ones(2), 2.0), (np.ones(2), None))


def test_the_rule_table_is_restored_after_a_test_that_replaced_a_tangent():
    out, t = sg.jvp(tiled, (np.ones(2), 2.0), (np.ones(2), None))
    assert t == 8.0


def test_a_tangent_zero_in_one_argument_of_a_helper_keeps_the_others():
    # einsum's sublist form: the tangent of its first argument (an operand) passes
    # through rt.einsum_jvp beside the other operands' (zero) tangents
    x, y = np.array([0.3, -1.1, 0.8]), np.array([1.2, 0.4, -0.6])
    m = np.arange(9.0).reshape(3, 3) / 4
    t = assert_jvp_matches(einsums, (x, m, y), [1])
    assert t != 0


def test_a_tangent_with_another_structure_than_its_primal_is_refused():
    def f(d):
        return d["a"] * 2.0

    with pytest.raises(ValueError, match="keys"):
        sg.jvp(f, ({"a": 1.0, "b": 2.0},), ({"a": 1.0},))
    with pytest.raises(ValueError, match="same structure"):
        sg.jvp(f, ({"a": 1.0},), ([1.0],))
    with pytest.raises(ValueError, match="same structure"):
        sg.jvp(lambda xs: xs[0] * 2.0, ([1.0, 2.0],), ([1.0],))
    with pytest.raises(ValueError, match=r"shape \(2,\) for \"d\['a'\]\""):
        sg.jvp(f, ({"a": np.ones(3)},), ({"a": np.ones(2)},))


def _writes_into_a_new_array(x):
    out = np.zeros(3) + x   # its tangent was x's own tangent array (rt.tangent_like)
    out[0] = 5.0
    return np.sum(out * x)


def _writes_through_a_view_of_the_argument(x):
    v = x[:2]
    v[0] = 5.0
    return np.sum(x * x)


@pytest.mark.parametrize("f, want", [(_writes_into_a_new_array, 15.0),
                                     (_writes_through_a_view_of_the_argument, 10.0)])
def test_a_write_changes_neither_another_tangent_nor_the_callers(f, want):
    """A tangent shared with another (or with the caller's tangent) must not see a write
    into a new array: the tangent was 10.0 for 15.0, and the caller's tangent changed."""
    tx = np.ones(3)
    for _ in range(2):   # the same tangent again gives the same answer
        _, t = sg.jvp(f, (np.array([1.0, 2.0, 3.0]),), (tx,))
        assert t == pytest.approx(want)
        np.testing.assert_array_equal(tx, np.ones(3))
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(sg.jacfwd(f)(x.copy()), numerical_grad(f, (x,)), rtol=1e-6)
