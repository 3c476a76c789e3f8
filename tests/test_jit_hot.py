"""The jit gradient's common calls (srcgrad/jit/hot.py), glibc's vector maths in its
elementwise loops (srcgrad/jit/vmath.py) and its ``np.linalg.norm`` (NumPy's formula).

Each result is compared with the NumPy gradient; the vector functions with NumPy's
ufuncs within libmvec's documented 4 ulp, special values included. Skipped when Numba
is not installed.
"""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad.jit import JitFallbackWarning, hot, vmath  # noqa: E402
from srcgrad.jit import runtime as jrt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import workloads  # noqa: E402

_prod_positive, _double_until = workloads.w2_prod_positive, workloads.w3_double_until   # W2, W3


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return call(*args, **kwargs)


def _wave(x):
    return np.sum(np.sin(x) * np.exp(-x ** 2) + np.log1p(x * x) + np.tanh(x) * np.cos(x))


def test_small_gradients_are_written_into_a_new_array_each_call():
    x = np.arange(-2, 4, dtype=np.float64)
    jit, numpy_grad = sg.grad(_prod_positive, jit=True), sg.grad(_prod_positive)
    first = _quiet(jit, x)
    assert "buf = empty(len(a0))" in jit._last_grad.__source__   # the small-gradient call
    again = _quiet(jit, x)
    assert again is not first and np.array_equal(again, first)
    again[:] = -1.0   # the caller owns it: the next call is not affected
    third = _quiet(jit, x)
    assert np.array_equal(third, numpy_grad(x)) and third.flags.writeable
    big = np.linspace(0.5, 1.5, hot.SMALL + 1)   # above SMALL: the gradient Numba returns
    assert np.allclose(_quiet(jit, big), numpy_grad(big), rtol=1e-12)
    assert np.allclose(_quiet(jit, big), numpy_grad(big), rtol=1e-12)


def _cubes(x):
    return np.sum(x * x * np.sin(x))


def test_the_common_call_follows_the_ranks_and_layouts_of_its_arguments():
    jit, numpy_grad = sg.grad(_cubes, jit=True), sg.grad(_cubes)
    x, X = np.linspace(-1.0, 2.0, 5), np.linspace(-1.0, 2.0, 6).reshape(2, 3)
    for v in (x, X, x, X.T, X[:, ::2], 2.5, X, np.linspace(0.0, 1.0, 2000).reshape(40, 50)):
        for _ in range(2):
            got = _quiet(jit, v)
            want = numpy_grad(v)
            assert type(got) is type(want) and np.shape(got) == np.shape(want)
            assert np.allclose(got, want, rtol=1e-12, atol=1e-14)
    assert len(jit._hot) >= 2


def test_the_small_seeded_call_checks_the_seed_and_the_guard():
    x, s = np.array([1178.3732, 192.4036, 922.6443]) / 512, np.array([0.01, 0.1, 1.0])
    jit = sg.grad(_double_until, jit=True)
    for _ in range(3):
        got = _quiet(jit, x, grad_outputs=s)
        assert np.array_equal(got, s * 512.0)
    assert "buf = empty(len(a0))" in jit._last_seeded.__source__
    with pytest.raises(ValueError):   # a seed of another shape: the NumPy gradient's error
        jit(x, grad_outputs=np.ones(4))
    with pytest.raises(ValueError):   # a number as the seed of an array: the same error
        jit(x, grad_outputs=2.0)
    assert np.array_equal(_quiet(jit, x, grad_outputs=s), s * 512.0)
    assert np.array_equal(_quiet(jit, x * 4, grad_outputs=s), s * 128.0)


def test_norm_is_numpys_formula():
    rng = np.random.default_rng(5)
    norm = numba.njit(lambda v: jrt.norm(v))
    for v in (rng.standard_normal(3), rng.standard_normal(1000), rng.standard_normal(40)[::3],
              rng.standard_normal((7, 5)), np.zeros(0)):
        assert np.isclose(norm(v), np.linalg.norm(v), rtol=1e-15, atol=0)


def _values(name):
    """Arguments across each function's domain, the special values among them."""
    rng = np.random.default_rng(11)
    wide = np.concatenate([rng.uniform(-3, 3, 3000), rng.uniform(-700, 700, 1000),
                           10.0 ** rng.uniform(-300, 300, 1000) * rng.choice([-1, 1], 1000)])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310, 1.0, -1.0,
                        709.8, 710.0, -745.2, 1e300, -1e300, np.pi, 0.5, -0.5, 2.0])
    if name in ("arcsin", "arccos", "arctanh"):
        wide = np.concatenate([rng.uniform(-1, 1, 4000), wide[:1000]])
    elif name == "arccosh" or name.startswith("log"):
        wide = np.concatenate([rng.uniform(0, 10, 3000), np.abs(wide)])
    return np.concatenate([wide, special])


@pytest.mark.parametrize("name", sorted(vmath.FUNCTIONS))
def test_vector_maths_is_numpys_function_within_4_ulp(name):
    fn = vmath.FUNCTIONS[name]

    @numba.njit(boundscheck=False)
    def loop(v, out):
        for i in range(v.size):
            out[i] = fn(v[i])

    v = _values(name)
    got = np.empty_like(v)
    loop(v, got)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(v)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), name
    with np.errstate(invalid="ignore"):   # inf - inf where both are inf
        ok = (got == want) | (np.abs(got - want) <= 4 * np.spacing(np.abs(want)))
    assert ok[~nan].all(), (name, v[~nan][~ok[~nan]][:5], got[~nan][~ok[~nan]][:5])


def test_the_elementwise_loop_calls_the_vector_forms_and_matches_numpy():
    x = np.random.default_rng(6).uniform(-3, 3, 10_001)
    jit = sg.grad(_wave, jit=True)
    got = _quiet(jit, x)
    want = sg.grad(_wave)(x)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-14)
    assert "_jrt.vm_sin(" in jit.jit_source(x) and "_jrt.vm_tanh(" in jit.jit_source(x)
    if not {"sin", "exp", "cos", "tanh"} <= vmath.AVAILABLE:
        pytest.skip("no libmvec with AVX2 here: the loop calls libm")
    entry = next(iter(jit._entries.values()))
    asm = "\n".join(entry.dispatcher.inspect_asm(sig) for sig in entry.dispatcher.signatures)
    assert "_ZGVdN4v_sin" in asm and "_ZGVdN4v_tanh" in asm


def test_vector_maths_can_be_turned_off(tmp_path):
    script = tmp_path / "off.py"
    script.write_text(
        "import numpy as np, srcgrad as sg\n"
        "from srcgrad.jit import vmath\n"
        "def f(x):\n"
        "    return np.sum(np.sin(x) * np.exp(x))\n"
        "assert vmath.AVAILABLE == frozenset()\n"
        "x = np.linspace(-3, 3, 1001)\n"
        "g = sg.grad(f, jit=True)\n"
        "assert np.allclose(g(x), sg.grad(f)(x), rtol=1e-12, atol=1e-14)\n"
        "assert g.compile_times and '_jrt.vm_sin(' in g.jit_source(x)\n")
    env = dict(os.environ, SRCGRAD_JIT_VECTOR_MATH="0", PYTHONPATH=ROOT,
               SRCGRAD_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("first", [np.float64, np.int64])
def test_an_integer_array_differentiated_is_refused_as_sg_grad_refuses_it(first):
    # The hot call and the general path took an int64 array of the recorded rank and
    # Numba compiled its gradient, where sg.grad raises TypeError (only float inputs
    # have gradients).
    x = np.arange(-2, 4)
    jit = sg.grad(_prod_positive, jit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        for _ in range(3):
            if first is np.float64:
                np.testing.assert_array_equal(jit(x.astype(np.float64)),
                                              sg.grad(_prod_positive)(x.astype(np.float64)))
            for call in (jit, sg.grad(_prod_positive)):
                with pytest.raises(TypeError, match="dtype is int64"):
                    call(x)
