"""What the adversarial rounds (tests/test_adversarial_round*.py) check each program with:
central differences through sg.grad and sg.jvp, and a refusal located in the test file."""

import copy
import re
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree
from srcgrad.testing import numerical_grad

X = np.array([0.3, -0.5, 1.2, 0.4])
V = np.array([0.7, -1.1, 0.4, 2.0])


def _flat(tree):
    leaves = pytree.tree_leaves(tree) if pytree.is_node(tree) else [tree]
    return np.concatenate([np.ravel(np.asarray(leaf, dtype=float)) for leaf in leaves])


def _fd(f, args, wrt=0):
    return numerical_grad(lambda *a: f(*copy.deepcopy(a)), args, wrt=wrt)


def assert_grad_and_jvp(f, args, wrt=0):
    """sg.grad and sg.jvp of ``f`` at ``args`` (run on copies) agree with central differences."""
    want = _flat(_fd(f, args, wrt))
    got = sg.grad(f, wrt=wrt)(*copy.deepcopy(args))
    np.testing.assert_allclose(_flat(got), want, rtol=1e-6, atol=1e-8)
    tangents = tuple(np.resize(V, np.shape(a)) if k == wrt else np.zeros_like(a)   # V repeated
                     for k, a in enumerate(args))
    value, out = sg.jvp(f, copy.deepcopy(tuple(args)), tangents)
    np.testing.assert_allclose(value, f(*copy.deepcopy(args)), rtol=1e-12)
    np.testing.assert_allclose(out, want @ _flat(tangents[wrt]), rtol=1e-6, atol=1e-8)


def assert_refused_in(path, run, *words):
    """``run`` raises a SrcgradError naming the file ``path``, a line and each of ``words``."""
    with pytest.raises(sg.SrcgradError) as info:
        run()
    message = str(info.value)
    assert path in message and re.search(r"line \d+", message), message
    for word in words:
        assert word in message, message


def fd_hessian(f, x, eps=1e-4):
    """Central differences of the float64 central-difference gradient of ``f``."""
    columns = []
    for i in range(x.size):
        step = np.zeros_like(x)
        step[i] = eps
        columns.append((numerical_grad(f, (x + step,)) - numerical_grad(f, (x - step,))) / (2 * eps))
    return np.stack(columns, axis=1)


def check_all_modes(f, x, v, w, fallback=False):
    """grad, value_and_grad, jvp (along ``v``), hessian, grad of grad (weighted by ``w``)
    and jit=True (compiled, no fallback unless ``fallback``) of ``f`` at ``x`` against
    central differences; the value as Python's."""
    from srcgrad.jit import JitFallbackWarning
    want = numerical_grad(f, (x,))
    g_of = sg.grad(f)
    value, g = sg.value_and_grad(f)(x)
    np.testing.assert_allclose(value, f(x), rtol=1e-13)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jvp(f, (x,), (v,))[1], want @ v, rtol=1e-6, atol=1e-8)
    hess = fd_hessian(f, x)   # (differences of differences: good to about 1e-5 here)
    np.testing.assert_allclose(sg.hessian(f)(x), hess, rtol=1e-4, atol=5e-5)
    # and differences of the gradient (checked above), good to about 1e-9
    eye = np.eye(x.size) * 1e-5
    hess = np.stack([(g_of(x + e) - g_of(x - e)) / 2e-5 for e in eye], axis=1)
    atol = 1e-7 * max(1.0, np.abs(hess).max())
    np.testing.assert_allclose(sg.hessian(f)(x), hess, rtol=1e-6, atol=atol)
    inner = sg.grad(f)
    np.testing.assert_allclose(sg.grad(lambda x: np.sum(inner(x) * w))(x), hess @ w,
                               rtol=1e-5, atol=atol)
    jitted = sg.grad(f, jit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if fallback else "error", JitFallbackWarning)
        for _ in range(3):   # (the first calls may run the NumPy code while it compiles)
            np.testing.assert_allclose(jitted(x), g, rtol=1e-10, atol=1e-12)

