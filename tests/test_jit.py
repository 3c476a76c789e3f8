"""``sg.grad(f, jit=True)``: the gradient compiled with Numba (srcgrad/jit/).

Every result is compared with the NumPy gradient of the same function (and, for the
benchmark-style loops, with a hand-written adjoint); what Numba does not compile must
run the NumPy gradient with exactly one JitFallbackWarning naming the user's file and
line. Skipped when Numba is not installed (``pip install "srcgrad[jit]"``).
"""

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad.jit import JitFallbackWarning, JitGradFunction  # noqa: E402

from conftest import ALL_CASES  # noqa: E402

RTOL = 1e-12   # the same operations in the same order; libm and NumPy's SIMD may differ in the last bit


def _same(got, want):
    if isinstance(want, tuple):
        return isinstance(got, tuple) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, np.ndarray):
        return type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape \
            and np.allclose(got, want, rtol=RTOL, atol=1e-14)
    return type(got) is type(want) and math.isclose(got, want, rel_tol=RTOL, abs_tol=1e-14)


def _jit_warnings(record):
    return [w for w in record if issubclass(w.category, JitFallbackWarning)]


# The catalogue in four shards (every fourth case), so that pytest-xdist spreads its Numba
# compiles over the workers; each shard's minimum count of compiled cases is its count today
# (44, 44, 46, 45: 179 of 198; a case whose calls ran the NumPy gradient without a warning,
# a compiled call raising ZeroAdjoint, is not counted) less two.
SHARDS = 4
COMPILED_AT_LEAST = {0: 42, 1: 42, 2: 44, 3: 43}


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS))
def test_jit_gradient_equals_the_numpy_gradient_on_the_whole_catalogue(shard, monkeypatch):
    compiled, fell_back, wrong = [], [], []
    numpy_runs = []   # a compiled call that raised ZeroAdjoint runs NumPy without a warning
    numpy_call = JitGradFunction._numpy

    def counted(self, args, grad_outputs):
        numpy_runs.append(1)
        return numpy_call(self, args, grad_outputs)
    monkeypatch.setattr(JitGradFunction, "_numpy", counted)
    for case in ALL_CASES[shard::SHARDS]:
        if not case.targets:
            continue
        wrt = tuple(w for w, _ in case.targets)
        seed = case.seed()
        args, kwargs = case.fresh()
        want = sg.grad(case.function, wrt)(*args, grad_outputs=seed, **kwargs)
        args, kwargs = case.fresh()
        gradient = sg.grad(case.function, wrt, jit=True)
        numpy_runs.clear()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            got = gradient(*args, grad_outputs=seed, **kwargs)
            again = gradient(*case.fresh()[0], grad_outputs=seed, **case.fresh()[1])
        found = _jit_warnings(record)
        assert len(found) <= 1, (case.id, [str(w.message) for w in found])
        (fell_back if found or numpy_runs else compiled).append(case.id)
        if found:
            assert "line" in str(found[0].message), (case.id, str(found[0].message))
        if not (_same(got, want) and _same(again, want)):
            wrong.append((case.id, got, want))
    assert not wrong, wrong
    # Scalar loops, branches, indexing (rt.add_at), indexed writes, products and
    # elementwise code compile (179 of 198 today, test_jit_families.py; 155 before round 9's
    # helpers, typing gaps, global arrays and dead stores, of the 167 then without a warning,
    # 12 running NumPy silently; 134 before tuple
    # gradients, reductions along axes, broadcasts and reshapes; 115 before break/continue, the container
    # checks and list gradients of test_jit_coverage.py, 103 before a zero number and an
    # array in one name (jit/zeros.py), 70 before indexed writes and the helpers of
    # test_jit_idioms.py, 47 before add_at, slice and need_grad). .dev/jit_coverage.py
    # groups the others by reason.
    assert len(compiled) >= COMPILED_AT_LEAST[shard], compiled


def _thermal(u, T_out, price):   # W8's shape: a scalar loop with a branch
    T = 19.0
    cost = 0.0
    for t in range(len(u)):
        T = T + 0.025 * (0.5 * (T_out[t] - T) + 0.95 * u[t])
        cost = cost + price[t] * u[t] * 0.25
        if T < 20.0:
            cost = cost + 5.0 * (20.0 - T) ** 2
    return cost


def _thermal_hand(u, T_out, price):
    n = len(u)
    Ts = [0.0] * n
    T = 19.0
    for t in range(n):
        T = T + 0.025 * (0.5 * (T_out[t] - T) + 0.95 * u[t])
        Ts[t] = T
    g = np.empty_like(u)
    dT = 0.0
    for t in range(n - 1, -1, -1):
        if Ts[t] < 20.0:
            dT = dT - 10.0 * (20.0 - Ts[t])
        g[t] = price[t] * 0.25 + dT * 0.025 * 0.95
        dT = dT * (1 - 0.025 * 0.5)
    return g


def _prod_positive(x):   # W2
    result = 1
    for ii in x:
        if ii > 0:
            result = ii * result
    return result


def _double_until(x):   # W3
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return call(*args, **kwargs)


def test_scalar_loops_compile_and_match_numpy_and_hand_written_adjoints():
    rng = np.random.default_rng(8)
    u, T_out, price = 6 + 6 * rng.random(40), 5 + rng.random(40), 0.2 + 0.1 * rng.random(40)
    jit = sg.grad(_thermal, jit=True)
    assert isinstance(jit, JitGradFunction)
    got = _quiet(jit, u, T_out, price)
    assert _same(got, sg.grad(_thermal)(u, T_out, price))
    np.testing.assert_allclose(got, _thermal_hand(u, T_out, price), rtol=1e-10)
    assert len(jit.compile_times) == 1

    x = np.arange(-2, 4, dtype=np.float64)
    got = _quiet(sg.grad(_prod_positive, jit=True), x)
    want = np.zeros(6)
    want[3:] = np.prod(x[3:]) / x[3:]
    assert _same(got, sg.grad(_prod_positive)(x))
    np.testing.assert_allclose(got, want, rtol=1e-12)

    x = np.array([1178.3732, 192.4036, 922.6443]) / 512
    seed = np.array([0.01, 0.1, 1.0])
    got = _quiet(sg.grad(_double_until, jit=True), x, grad_outputs=seed)
    assert _same(got, sg.grad(_double_until)(x, grad_outputs=seed))
    y, scale = x * 2, 2.0
    while np.linalg.norm(y) < 1000:
        y, scale = y * 2, scale * 2
    assert scale == 512.0
    np.testing.assert_allclose(got, seed * scale, rtol=1e-15)


def test_value_and_grad_with_jit_returns_the_value_and_the_numpy_gradient():
    rng = np.random.default_rng(3)
    args = 6 + 6 * rng.random(30), 5 + rng.random(30), 0.2 + 0.1 * rng.random(30)
    value, grad = _quiet(sg.value_and_grad(_thermal, jit=True), *args)
    want_value, want_grad = sg.value_and_grad(_thermal)(*args)
    assert math.isclose(value, want_value, rel_tol=RTOL)
    assert _same(grad, want_grad)


def test_new_argument_types_compile_again_and_the_same_types_do_not():
    jit = sg.grad(_thermal, jit=True)
    args = [np.linspace(1.0, 2.0, 12) for _ in range(3)]
    _quiet(jit, *args)
    _quiet(jit, *[a * 2 for a in args])
    assert len(jit.compile_times) == 1
    assert all(s > 0 for _, s in jit.compile_times)
    strided = [np.linspace(1.0, 2.0, 24)[::2] for _ in range(3)]   # another layout
    assert _same(_quiet(jit, *strided), sg.grad(_thermal)(*strided))
    assert len(jit.compile_times) == 2
    _quiet(jit, *args)
    _quiet(jit, *strided)
    assert len(jit.compile_times) == 2


def test_float32_arguments_run_the_numpy_gradient_with_one_warning():
    # Numba computes float32 elements with Python floats in float64; NumPy keeps float32.
    jit = sg.grad(_thermal, jit=True)
    args = [np.linspace(1.0, 2.0, 12) for _ in range(3)]
    _quiet(jit, *args)
    single = [a.astype(np.float32) for a in args]
    with pytest.warns(JitFallbackWarning, match="float32"):
        got = jit(*single)
    assert got.dtype == np.float32
    assert np.array_equal(got, sg.grad(_thermal)(*single))
    assert np.array_equal(_quiet(jit, *single), got)
    assert len(jit.compile_times) == 1


WEIGHTS = np.array([0.5, -1.0, 2.0])


def _reads_a_global_array(x):
    return np.sum(x * WEIGHTS)   # line named by the warning (jvp; grad passes it: round 9)


OFFSETS = [0.5, -1.0, 2.0]


def _reads_a_global_list(x):
    return np.sum(x * np.array(OFFSETS))   # line named by the warning


def _numba_rejects_squeeze(x):
    m = x[None, :].squeeze()   # Numba's arrays have no squeeze (np.array of arrays compiles now)
    return np.sum((x - m * m) ** 2)


def _line_of(function, text):
    import inspect
    lines, first = inspect.getsourcelines(function)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _seed_becomes_an_array_in_a_loop(x):   # (a zero number that does compiles: zeros.py)
    v = x
    for _ in range(2):   # the number 1.0, adjoint of v, becomes an array in the loop
        v = np.sin(v) + x
    return np.sum(v)


@pytest.mark.parametrize("function, text, construct", [
    (_reads_a_global_list, "line named", "the global OFFSETS"),
    (_numba_rejects_squeeze, "Numba's arrays have no squeeze", "Numba cannot compile"),
    (_seed_becomes_an_array_in_a_loop, "becomes an array", "Cannot unify float64 and array"),
])
def test_what_numba_cannot_compile_falls_back_with_one_warning_naming_file_and_line(
        function, text, construct):
    x = np.array([0.9, -1.3, 2.1])
    jit = sg.grad(function, jit=True)
    with pytest.warns(JitFallbackWarning) as record:
        got = jit(x)
    messages = [str(w.message) for w in _jit_warnings(record)]
    assert len(messages) == 1, messages
    assert construct in messages[0]
    assert f"{__file__}, line {_line_of(function, text)}" in messages[0]
    assert _same(got, sg.grad(function)(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        assert _same(jit(x), sg.grad(function)(x))   # warned once


def _reads_past_the_end(x, y):
    s = 0.0
    for t in range(len(x)):
        s = s + x[t] * y[t]
    return s


def test_an_error_in_compiled_code_is_the_numpy_gradients_error():
    jit = sg.grad(_reads_past_the_end, jit=True)
    x, y = np.ones(4), np.ones(4)
    assert _same(_quiet(jit, x, y), sg.grad(_reads_past_the_end)(x, y))
    with pytest.raises(IndexError):
        sg.grad(_reads_past_the_end)(x, np.ones(3))
    with pytest.raises(IndexError), warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        jit(x, np.ones(3))   # bounds are checked: never a read past the end


def test_without_numba_jit_runs_the_numpy_gradient_with_a_warning(monkeypatch):
    import srcgrad.jit
    monkeypatch.setattr(srcgrad.jit, "available", lambda: False)
    with pytest.warns(JitFallbackWarning, match="srcgrad\\[jit\\]"):
        gradient = sg.grad(_prod_positive, jit=True)
    assert isinstance(gradient, sg.api.GradFunction)


def _elementwise(x, y):   # W6's shape: one run of elementwise statements each way
    return np.sum(np.sin(x) * np.exp(-y ** 2) + np.log1p(x * y))


@pytest.mark.parametrize("shapes", [((50,), (50,)), ((4, 5), (4, 5)), ((4, 5), (1, 5)),
                                    ((4, 5), (5,))], ids=["same", "same-2d", "broadcast",
                                                          "ranks"])
def test_elementwise_runs_become_one_loop_and_broadcasting_runs_the_statements(shapes):
    rng = np.random.default_rng(6)
    x, y = (rng.uniform(0.1, 2.0, s) for s in shapes)
    jit = sg.grad(_elementwise, (0, 1), jit=True)
    assert "for _i in range(_n):" in jit.jit_source(x, y)   # the loop, beside the statements
    want = sg.grad(_elementwise, (0, 1))(x, y)
    # where the shapes differ the loop declines and the statements run, unbroadcast
    # summing over the broadcast axes (jit/shapes.py; before round 8: NumPy, warned)
    assert _same(_quiet(jit, x, y), want)
    assert _same(_quiet(jit, x, y), want)


def test_vjp_with_jit_runs_backward_compiled_and_keeps_the_retain_graph_contract():
    rng = np.random.default_rng(4)
    args = 6 + 6 * rng.random(20), 5 + rng.random(20), 0.2 + 0.1 * rng.random(20)
    out, backward = _quiet(sg.vjp(_thermal, (0, 2), jit=True), *args)
    want_out, want_backward = sg.vjp(_thermal, (0, 2))(*args)
    assert math.isclose(out, want_out, rel_tol=RTOL)
    assert _same(_quiet(backward, 2.0, retain_graph=True), want_backward(2.0, retain_graph=True))
    assert _same(_quiet(backward, 0.5), want_backward(0.5))
    with pytest.raises(RuntimeError, match="retain_graph"):
        backward(1.0)


def _integer_power(n, x):
    return np.sum(x * n ** 40)   # 3 ** 40 overflows int64; Python's int does not


def test_a_power_of_python_ints_is_not_compiled_where_int64_would_overflow():
    x = np.ones(2)
    with pytest.warns(JitFallbackWarning, match="power of integers") as record:
        got = sg.grad(_integer_power, 1, jit=True)(3, x)
    assert f"line {_line_of(_integer_power, 'overflows')}" in str(_jit_warnings(record)[0].message)
    assert _same(got, sg.grad(_integer_power, 1)(3, x))
    assert got[0] == float(3 ** 40)


def test_jvp_with_jit_compiles_the_tangent_program_and_matches_it():
    rng = np.random.default_rng(5)
    args = 6 + 6 * rng.random(25), 5 + rng.random(25), 0.2 + 0.1 * rng.random(25)
    tangents = (rng.standard_normal(25), None, rng.standard_normal(25))
    out, tangent = _quiet(sg.jvp, _thermal, args, tangents, jit=True)
    want_out, want_tangent = sg.jvp(_thermal, args, tangents)
    assert math.isclose(out, want_out, rel_tol=RTOL)
    assert math.isclose(tangent, want_tangent, rel_tol=RTOL)
    # along the gradient's own direction: <grad, v>
    assert math.isclose(tangent, np.dot(sg.grad(_thermal, (0, 2))(*args)[0], tangents[0])
                        + np.dot(sg.grad(_thermal, (0, 2))(*args)[1], tangents[2]), rel_tol=1e-10)
    x, y = rng.uniform(0.1, 2.0, 40), rng.uniform(0.1, 2.0, 40)
    got = _quiet(sg.jvp, _elementwise, (x, y), (np.ones(40), None), jit=True)
    want = sg.jvp(_elementwise, (x, y), (np.ones(40), None))
    assert math.isclose(got[0], want[0], rel_tol=RTOL) and math.isclose(got[1], want[1], rel_tol=RTOL)


def test_jvp_with_jit_falls_back_with_one_warning():
    x = np.array([0.9, -1.3, 2.1])
    with pytest.warns(JitFallbackWarning, match="WEIGHTS"):
        got = sg.jvp(_reads_a_global_array, (x,), (np.ones(3),), jit=True)
    want = sg.jvp(_reads_a_global_array, (x,), (np.ones(3),))
    assert got == want


def _exec(source, filename):
    import linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["f"]


@pytest.mark.parametrize("seeded", [False, True])
def test_a_gradient_loaded_from_the_disk_cache_compiles_with_jit(tmp_path, monkeypatch, seeded):
    """A loaded gradient has no trees: the translation compiles them again."""
    from srcgrad import disk_cache
    monkeypatch.setattr(disk_cache.settings, "directory", str(tmp_path / "c"))
    monkeypatch.setattr(disk_cache.settings, "enabled", True)
    source = ("def f(x):\n    acc = 0.0\n    for i in range(len(x)):\n"
              "        acc = acc + np.sin(x[i]) * x[i]\n    return acc\n")
    x = np.linspace(-1.0, 1.0, 5)
    seed = 2.0 if seeded else None
    want = sg.grad(_exec(source, "<jit-disk-test>"))(x, grad_outputs=seed)
    fn = _exec(source, "<jit-disk-test>")
    before = dict(disk_cache.stats)
    got = _quiet(sg.grad(fn, jit=True), x, grad_outputs=seed)
    assert disk_cache.stats["hits"] == before["hits"] + 1
    assert _same(got, want)
    assert np.allclose(got, (seed or 1.0) * (np.sin(x) + x * np.cos(x)), rtol=1e-13)


def _index_reads(x, y):   # straight-line reads: the first add_at materialises the 0.0 adjoint
    return x[1] * x[2] + x[0] ** 2 + np.sum(x[1:3] * y[0:2]) + x[-1] * 2.0


def test_indexed_reads_compile_with_the_numba_form_of_add_at():
    x, y = np.array([0.9, -1.3, 2.1, 0.4]), np.array([0.5, 1.5, -2.0])
    jit = sg.grad(_index_reads, (0, 1), jit=True)
    got = _quiet(jit, x, y)
    assert jit.compile_times and "_jrt.add_at" in jit.jit_source(x, y)
    assert _same(got, sg.grad(_index_reads, (0, 1))(x, y))
    dx = np.array([2 * x[0], x[2] + y[0], x[1] + y[1], 2.0])
    assert np.allclose(got[0], dx, rtol=1e-14) and np.allclose(got[1], [x[1], x[2], 0.0])


@pytest.mark.parametrize("dx, index, g", [
    ("owned", 2, 1.5), ("owned", -1, np.float64(0.0)), ("owned", 1, 0.0),
    ("owned", (1, 2), -2.0), ("owned", (1, slice(0, 2)), "row"),
    ("owned", slice(1, 4), "vector"), ("owned", slice(None, None, -2), "vector"),
    ("owned", np.array([0, 2, 2, -1]), "vector"), ("owned", np.array([1, 1, 3]), 0.5),
    ("owned", "mask", "vector"), ("owned", "mask", 2.5),
    (0.0, slice(1, 4), "vector"), (1.5, np.array([0, 0, 3]), "vector"), (0.0, 3, 2.0),
    (0.5, (1, 2), -1.0),
])
def test_add_at_compiled_by_numba_equals_the_runtime_helper(dx, index, g):
    from numba import njit
    from srcgrad import runtime as rt
    from srcgrad.jit import runtime as jrt
    rng = np.random.default_rng(3)
    two_d = isinstance(index, tuple)
    x = rng.standard_normal((3, 4) if two_d else 6)
    if isinstance(index, str):
        index = x > 0
    picked = x[index]
    if g == "vector":
        g = rng.standard_normal(np.shape(picked))
    elif g == "row":
        g = rng.standard_normal(np.shape(picked))
    start = np.zeros_like(x) + rng.standard_normal(x.shape) if dx == "owned" else dx
    call = njit(**jrt.JIT_OPTIONS)(lambda dx, x, index, g: jrt.add_at(dx, x, index, g))
    want = rt.add_at(start.copy() if dx == "owned" else start, x, index, g)
    got = call(start.copy() if dx == "owned" else start, x, index, g)
    assert type(got) is type(want) and np.array_equal(got, want)


def test_add_at_of_another_shape_raises_so_the_numpy_gradient_runs():
    from numba import njit
    from srcgrad.jit import runtime as jrt
    call = njit(**jrt.JIT_OPTIONS)(lambda dx, x, index, g: jrt.add_at(dx, x, index, g))
    with pytest.raises(ValueError):
        call(np.zeros(3), np.zeros(4), 1, 1.0)
    with pytest.raises(ValueError):   # the NumPy helper keeps the number 0.0
        call(0.0, np.zeros(4), 1, 0.0)
    with pytest.raises(IndexError):   # bounds are checked
        call(np.zeros(4), np.zeros(4), np.array([1, 7]), np.ones(2))
    with pytest.raises(IndexError):
        call(np.zeros(4), np.zeros(4), 9, 1.0)


ACT = np.sin


def _uses_a_global(x):
    return np.sum(ACT(x) * x)


def test_the_common_call_takes_the_short_path_and_still_checks_guard_and_types(monkeypatch):
    x = np.linspace(-1.0, 1.0, 5)
    jit = sg.grad(_uses_a_global, jit=True)
    assert _same(_quiet(jit, x), sg.grad(_uses_a_global)(x))
    assert jit._hot   # grad's common call: one dict lookup, the guard, Numba's dispatch
    assert _same(_quiet(jit, x * 2), np.sin(x * 2) + x * 2 * np.cos(x * 2))
    monkeypatch.setitem(globals(), "ACT", np.cos)   # the guard no longer holds
    assert np.allclose(_quiet(jit, x), np.cos(x) - x * np.sin(x), rtol=1e-14)
    with pytest.warns(JitFallbackWarning, match="float32"):   # same rank, a type not compiled
        got = jit(x.astype(np.float32))
    assert _same(got, sg.grad(_uses_a_global)(x.astype(np.float32)))
    X = np.linspace(-1.0, 1.0, 6).reshape(2, 3)   # another rank: compiled for it
    assert _same(_quiet(jit, X), sg.grad(_uses_a_global)(X))


def _square(x):
    return x * x


def test_seeded_calls_take_the_short_path_and_value_and_grad_keeps_its_value():
    """grad(f, jit=True)(x, grad_outputs=s) takes the seeded short path from its second
    call; value_and_grad's seeded call never does (it returns the value too: it did not
    from the second call on)."""
    x, s = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.1, -3.0])
    jit = sg.grad(_square, jit=True)
    for _ in range(3):
        assert _same(_quiet(jit, x, grad_outputs=s), 2 * x * s)
    assert jit._hot_seeded and not jit._hot
    with pytest.raises(ValueError):   # a seed of another shape: the NumPy gradient's error
        jit(x, grad_outputs=np.ones(4))
    both = sg.value_and_grad(_square, jit=True)
    for _ in range(3):
        value, grad = _quiet(both, x, grad_outputs=s)
        assert _same(value, x * x) and _same(grad, 2 * x * s)
    assert not both._hot_seeded and not both._hot
