"""Every catalogue function (tests/functions.py) against central finite differences.

Parametrised in conftest.py: ``catalogue_wrt_case`` is one function, one input
set and one differentiable argument; ``catalogue_case`` is one function and
one input set. Tolerances are explicit: ATOL/RTOL of conftest.py unless the
function's ``@inputs`` says otherwise.
"""

import numbers

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import check_grads

# float32 gradients against float64 gradients: float32 has ~7 digits, and the
# function is evaluated in float32 throughout.
F32_ATOL = 1e-3
F32_RTOL = 2e-3


def test_gradient_matches_finite_differences(catalogue_wrt_case):
    case, wrt, _ = catalogue_wrt_case
    args, kwargs = case.fresh()
    check_grads(case.function, args, wrt=wrt, atol=case.atol, rtol=case.rtol,
                grad_outputs=case.seed(), kwargs=kwargs)


def test_random_dot_product(catalogue_case):
    # All differentiable inputs at once (wrt as a tuple), through sg.vjp.
    from srcgrad.testing import check_vjp

    case = catalogue_case
    if not case.targets:
        return
    args, kwargs = case.fresh()
    check_vjp(case.function, args, wrt=tuple(w for w, _ in case.targets),
              atol=case.atol, rtol=case.rtol, grad_outputs=case.seed(), kwargs=kwargs)


def test_gradient_shape_and_type(catalogue_wrt_case):
    case, wrt, name = catalogue_wrt_case
    args, kwargs = case.fresh()
    value = args[wrt] if isinstance(wrt, int) else kwargs[wrt]
    g = sg.grad(case.function, wrt=wrt)(*args, grad_outputs=case.seed(), **kwargs)
    if isinstance(value, np.ndarray):
        assert isinstance(g, np.ndarray), f"d/d{name} is {type(g).__name__}, expected ndarray"
        assert g.shape == value.shape
        assert g.dtype == np.float64
    else:
        # A Python float in gives a Python float out (not np.float64, not a 0-d array).
        assert type(g) is float, f"d/d{name} is {type(g).__name__}: {g!r}, expected float"


def test_float32_gives_float32(catalogue_wrt_case):
    case, wrt, name = catalogue_wrt_case
    args, kwargs = case.fresh()
    value = args[wrt] if isinstance(wrt, int) else kwargs[wrt]
    if not isinstance(value, np.ndarray):
        pytest.skip("a Python float input has no float32 form (test_gradient_shape_and_type)")
    to32 = lambda v: v.astype(np.float32) if isinstance(v, np.ndarray) else v  # noqa: E731
    args32 = tuple(to32(v) for v in args)
    kwargs32 = {k: to32(v) for k, v in kwargs.items()}
    seed = case.seed()
    expected = sg.grad(case.function, wrt=wrt)(*args, grad_outputs=seed, **kwargs)
    g = sg.grad(case.function, wrt=wrt)(*args32, grad_outputs=seed, **kwargs32)
    assert isinstance(g, np.ndarray)
    assert g.dtype == np.float32, f"d/d{name} has dtype {g.dtype} for float32 inputs"
    assert g.shape == value.shape
    np.testing.assert_allclose(g, expected, atol=F32_ATOL, rtol=F32_RTOL)


def test_inputs_not_mutated(catalogue_case):
    case = catalogue_case
    if not case.targets:
        return
    args, kwargs = case.fresh()
    before_args, before_kwargs = case.fresh()
    sg.grad(case.function, wrt=tuple(w for w, _ in case.targets))(
        *args, grad_outputs=case.seed(), **kwargs)
    for got, want in list(zip(args, before_args)) + [
            (kwargs[k], before_kwargs[k]) for k in kwargs]:
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        else:
            assert got == want


def test_primal_value_unchanged(catalogue_case):
    # value_and_grad returns exactly what f returns.
    case = catalogue_case
    if not case.targets:
        return
    args, kwargs = case.fresh()
    expected = case.function(*case.fresh()[0], **case.fresh()[1])
    value, _ = sg.value_and_grad(case.function, wrt=case.targets[0][0])(
        *args, grad_outputs=case.seed(), **kwargs)
    if isinstance(expected, tuple):
        assert isinstance(value, tuple) and len(value) == len(expected)
        pairs = zip(value, expected)
    else:
        pairs = [(value, expected)]
    for got, want in pairs:
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                                   np.asarray(want, dtype=np.float64), rtol=1e-12, atol=0)
        if isinstance(want, numbers.Number) and not isinstance(want, np.generic):
            assert not isinstance(got, np.ndarray)


def test_catalogue_size():
    from conftest import catalogue

    assert len(catalogue()) >= 80


# Catalogue functions that compute with NumPy arrays of their own beside CuPy values, which
# NumPy's scalars carry between the two in the forward: srcgrad's adjoint takes one array
# module, and refuses them with a TypeError (a known limitation, checked below).
HOST_AND_DEVICE = {
    "linspace_between_parameters": "np.linspace(a, b, 5) of two Python floats is a NumPy "
                                   "array beside the CuPy ones",
}


def skip_if_numpy_only(function, args, kwargs, expected):
    """Skip unless ``function`` itself runs on these (CuPy) arguments and gives ``expected``.

    Many catalogue functions build NumPy arrays inside (np.zeros, np.array,
    module-level constants), which CuPy refuses to mix with its own arrays; a
    few mean something else on CuPy (``t[-1]`` of a 1-D array is a view there,
    a copy in NumPy). That says nothing about srcgrad: such a function is
    skipped, not failed. ``expected`` is the function's value on NumPy.
    """
    own = lambda v: v.copy() if hasattr(v, "shape") and hasattr(v, "copy") else v  # noqa: E731
    if function.__name__ in HOST_AND_DEVICE:
        pytest.skip(f"{function.__name__}: {HOST_AND_DEVICE[function.__name__]} (tested by "
                    f"test_host_and_device_values_mixed_are_refused_or_right)")
    own_args, own_kwargs = [own(v) for v in args], {k: own(v) for k, v in kwargs.items()}
    try:
        out = function(*own_args, **own_kwargs)
    except (TypeError, ValueError, AttributeError, NotImplementedError) as exc:
        pytest.skip(f"{function.__name__} itself is NumPy-only: {type(exc).__name__}: {exc}")
    for before, after in zip(list(args) + list(kwargs.values()),
                             own_args + list(own_kwargs.values())):
        if hasattr(before, "shape") and type(before).__module__.startswith("cupy") \
                and not bool((before == after).all()):
            pytest.skip(f"{function.__name__} writes into its argument on CuPy, where an "
                        f"integer index of a 1-D array is a 0-d view (a copy in NumPy): "
                        f"srcgrad refuses that write (tests/test_errors.py)")
    outs, wants = (out, expected) if isinstance(expected, tuple) else ((out,), (expected,))
    for got, want in zip(outs, wants):
        if type(got).__module__.startswith("cupy"):
            got = got.get()
        got = np.asarray(got, dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        scale = float(np.max(np.abs(want), initial=1.0))
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-6 * scale,
                                                      equal_nan=True):
            pytest.skip(f"{function.__name__} itself computes something else on CuPy")


def test_backend_gradient_matches_numpy(catalogue_wrt_case, backend):
    # The same gradient on NumPy and on CuPy (the cupy parameter is marked gpu
    # and skipped without CuPy or a CUDA device). Gradients keep the array type.
    if backend is np:
        pytest.skip("NumPy against itself; the finite-difference tests check NumPy")
    case, wrt, name = catalogue_wrt_case
    args, kwargs = case.fresh()
    seed = case.seed()
    expected = sg.grad(case.function, wrt=wrt)(*args, grad_outputs=seed, **kwargs)
    move = lambda v: backend.asarray(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    dev_args = tuple(move(v) for v in args)
    dev_kwargs = {k: move(v) for k, v in kwargs.items()}
    dev_seed = tuple(move(s) for s in seed) if isinstance(seed, tuple) else move(seed)
    if backend is not np:
        skip_if_numpy_only(case.function, dev_args, dev_kwargs,
                           case.function(*case.fresh()[0], **case.fresh()[1]))
    g = sg.grad(case.function, wrt=wrt)(*dev_args, grad_outputs=dev_seed, **dev_kwargs)
    value = args[wrt] if isinstance(wrt, int) else kwargs[wrt]
    if isinstance(value, np.ndarray):
        assert type(g) is type(backend.asarray(value)), type(g)
        g = g.get() if hasattr(g, "get") else g
    else:
        assert type(g) is float
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)
