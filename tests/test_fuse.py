"""Fusion of elementwise runs (``grad(f, fuse=True)``, srcgrad/transform/fuse.py).

CuPy runs each fused kernel through ``cupy.fuse``; here, without a GPU, the same
kernels run on NumPy as plain Python (``rt.FUSE_ON_NUMPY``), which checks the
pass itself: which statements go into a kernel, its inputs and outputs, and the
run-time guard that falls back to the original statements. Every catalogue
gradient must be unchanged by fusion.
"""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import runtime as rt


@pytest.fixture
def fused_on_numpy(monkeypatch):
    """Run fused kernels on NumPy and count the calls that took the fused path."""
    monkeypatch.setattr(rt, "FUSE_ON_NUMPY", True)
    taken = []
    original = rt.fused_kernel

    def counting(kernel, inputs, deps, targets):
        found = original(kernel, inputs, deps, targets)
        if found is not None:
            taken.append(kernel.__name__)
        return found

    monkeypatch.setattr(rt, "fused_kernel", counting)
    return taken


def chain(x):
    return np.sum(np.sin(x) * np.exp(-x ** 2) + np.log1p(x * x))


def scaled(x, a):
    return np.sum(np.tanh(x * a) * x + a)


def broadcast(x, b):
    return np.sum(np.exp(x + b) * np.cos(x))


def test_kernels_are_plain_xp_functions():
    source = sg.source(chain, fuse=True)
    kernels = source.split("def chain_forward")[0]
    assert kernels.count("def fused_") == 2
    assert "xp.sin(x)" in kernels and "xp.cos(x)" in kernels
    assert "np." not in kernels and "rt." not in kernels
    assert "rt.fused_kernel(fused_" in source
    # The unfused statements stay as the fallback.
    assert "sin_x = np.sin(x)" in source


def test_unfused_source_has_no_kernels():
    assert "fused" not in sg.source(chain)


def test_fused_gradient_matches(fused_on_numpy):
    x = np.linspace(-2.0, 2.0, 11)
    np.testing.assert_allclose(sg.grad(chain, fuse=True)(x), sg.grad(chain)(x), rtol=1e-14)
    assert len(fused_on_numpy) == 2


def test_scalar_argument_mixes_in(fused_on_numpy):
    x = np.linspace(-1.0, 1.0, 5)
    got = sg.grad(scaled, wrt=(0, 1), fuse=True)(x, 0.7)
    want = sg.grad(scaled, wrt=(0, 1))(x, 0.7)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-14)
    assert type(got[1]) is float
    np.testing.assert_allclose(got[1], want[1], rtol=1e-14)


def test_broadcasting_falls_back(fused_on_numpy):
    # b broadcasts against x: the adjoint must sum over rows, which the kernel
    # cannot do, so the guard sends the call down the original statements.
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    b = np.linspace(0.0, 0.3, 4)
    got = sg.grad(broadcast, wrt=(0, 1), fuse=True)(x, b)
    want = sg.grad(broadcast, wrt=(0, 1))(x, b)
    assert got[1].shape == (4,)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)
    assert "fused_dx" not in " ".join(fused_on_numpy)
    # Same shapes: the kernel runs.
    got = sg.grad(broadcast, wrt=(0, 1), fuse=True)(x, x + 1)
    np.testing.assert_allclose(got[1], sg.grad(broadcast, wrt=1)(x, x + 1), rtol=1e-14)


def test_float32_stays_float32(fused_on_numpy):
    x = np.linspace(-2.0, 2.0, 9, dtype=np.float32)
    g = sg.grad(chain, fuse=True)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, sg.grad(chain)(x), rtol=1e-6)
    assert fused_on_numpy


def kernel_of():
    """A stand-in kernel for guard tests: returns its first input."""
    def k(*args):
        return args[0]
    return k


@pytest.mark.parametrize("inputs, deps, targets, ok", [
    ((np.ones(3), np.ones(3)), ((0, 1),), (), True),
    ((np.ones(3), 2.0), ((0, 1),), (), True),
    ((np.ones(3), np.ones(4)), ((0,),), (), False),                # two shapes
    ((np.ones(3), np.ones(3, np.float32)), ((0,),), (), False),    # two dtypes
    ((np.ones(3), np.float64(2.0)), ((0,),), (), True),            # a NumPy scalar of the dtype
    ((np.ones(3, np.float32), np.float64(2.0)), ((0,),), (), False),  # it would promote
    ((np.ones(3), 2.0), ((1,),), (), False),                       # an output of scalars only
    ((np.ones(3),), ((0,),), ((3,),), True),                       # a target shape
    ((np.ones(3),), ((0,),), (np.ones(1),), False),                # the target must be summed
    ((np.ones(3),), ((0,),), (1.5,), False),
    ((np.arange(3),), ((0,),), (), False),                         # integers
    ((np.ones(3), [1.0]), ((0,),), (), False),                     # a list
    ((np.float64(1.0), 2.0), ((0,),), (), False),                  # no array at all
])
def test_guard(monkeypatch, inputs, deps, targets, ok):
    monkeypatch.setattr(rt, "FUSE_ON_NUMPY", True)
    assert (rt.fused_kernel(kernel_of(), inputs, deps, targets) is not None) == ok


def test_guard_refuses_numpy_by_default():
    assert rt.fused_kernel(kernel_of(), (np.ones(3),), ((0,),), ()) is None


def test_catalogue_unchanged_by_fusion(catalogue_wrt_case, fused_on_numpy):
    case, wrt, _ = catalogue_wrt_case
    args, kwargs = case.fresh()
    seed = case.seed()
    want = sg.grad(case.function, wrt=wrt)(*args, grad_outputs=seed, **kwargs)
    args, kwargs = case.fresh()
    got = sg.grad(case.function, wrt=wrt, fuse=True)(*args, grad_outputs=seed, **kwargs)
    assert type(got) is type(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_catalogue_exercises_kernels():
    # Not vacuous: many catalogue gradients take the fused path.
    from conftest import ALL_CASES
    previous = rt.FUSE_ON_NUMPY
    rt.FUSE_ON_NUMPY = True
    taken = set()
    original = rt.fused_kernel
    try:
        def counting(kernel, inputs, deps, targets):
            found = original(kernel, inputs, deps, targets)
            if found is not None:
                taken.add(case.id)
            return found
        rt.fused_kernel = counting
        for case in ALL_CASES:
            args, kwargs = case.fresh()
            try:
                sg.grad(case.function, wrt=case.targets[0][0], fuse=True)(
                    *args, grad_outputs=case.seed(), **kwargs)
            except Exception:
                continue
    finally:
        rt.fused_kernel = original
        rt.FUSE_ON_NUMPY = previous
    assert len(taken) >= 80, sorted(taken)


@pytest.mark.gpu
def test_catalogue_fused_on_cupy(catalogue_wrt_case):
    # The real thing: cupy.fuse kernels against the unfused NumPy gradient.
    from conftest import _cupy_or_skip
    from test_catalogue import skip_if_numpy_only
    cupy = _cupy_or_skip()
    case, wrt, _ = catalogue_wrt_case
    args, kwargs = case.fresh()
    seed = case.seed()
    want = sg.grad(case.function, wrt=wrt)(*args, grad_outputs=seed, **kwargs)
    move = lambda v: cupy.asarray(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    dev_args = tuple(move(v) for v in args)
    dev_kwargs = {k: move(v) for k, v in kwargs.items()}
    skip_if_numpy_only(case.function, dev_args, dev_kwargs,
                       case.function(*case.fresh()[0], **case.fresh()[1]))
    dev_seed = tuple(move(s) for s in seed) if isinstance(seed, tuple) else move(seed)
    got = sg.grad(case.function, wrt=wrt, fuse=True)(*dev_args, grad_outputs=dev_seed, **dev_kwargs)
    got = got.get() if hasattr(got, "get") else got
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
