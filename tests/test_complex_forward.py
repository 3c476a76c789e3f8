"""Forward mode through complex intermediates of a real function (JAX's convention): a
holomorphic or C-linear primitive keeps its tangent (``f'(z) t``), ``abs``, ``angle``
and ``imag`` have their own (rules/complex_rules.py), and a real-linear helper's tangent
is itself. ``sg.jvp``, ``sg.jacfwd``, ``sg.hessian`` and ``sg.hvp`` (forward over the
complex gradient) against central differences."""

import numpy as np
import pytest

import srcgrad as sg


def rotated(x):
    z = np.exp(1j * x) * (1.0 + 0.5j + x)
    return np.sum(np.abs(z) ** 2) + np.sum(np.real(z * z))


def spectrum(x):
    return np.sum(np.abs(np.fft.fft(x ** 2)) ** 2)


def round_trip(x):
    return np.sum(np.real(np.fft.ifft(np.fft.fft(x) * (1.0 + 1j * x))) ** 2)


def phase(x):
    z = x + 1j * x ** 2
    return np.sum(np.angle(z) * np.imag(z) + np.conj(z).real + z.imag)


def through_a_loop(x):
    z = x + 0.0j
    for k in range(3):
        z = z * np.exp(1j * x * (k + 1)) + x
    return np.sum(np.abs(z))


def real_spectrum(x):
    return np.sum(np.abs(np.fft.rfft(x * x[::-1])) ** 2 * np.arange(3.0)) + np.sum(np.fft.rfft(x).imag)


def powers(x):   # (refused before 2026-12-07: "no gradient for the operator ** on complex values")
    z = x + 1j * x[::-1]
    return np.sum((z ** 3).real) + np.sum(np.abs(z ** 2)) + np.sum(((z + 2.0) ** 0.5).imag)


def a_real_exponent_given_a_gradient(x):
    z = np.exp(1j * x)
    return np.sum(np.abs(z ** x[0] + 1.0) ** 2)


def holomorphic(x):   # (refused before 2026-12-07: "no gradient for numpy.sin on complex values")
    z = x + 0.5j * x[::-1]
    w = np.sin(z) * np.cosh(z) + np.log(z + 3.0) + np.sqrt(z + 2.0) + np.tanh(z) ** 2
    return np.sum(np.abs(w) ** 2) + np.sum((np.square(z) + np.reciprocal(z + 4.0) + np.expm1(z)).real)


FUNCTIONS = [rotated, spectrum, round_trip, phase, through_a_loop, real_spectrum, powers,
             a_real_exponent_given_a_gradient, holomorphic]
X = np.array([0.3, -0.7, 1.2, 0.9])
V = np.array([1.0, 0.5, -2.0, 0.25])


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_jvp_and_jacfwd_match_finite_differences(f):
    out, t = sg.jvp(f, (X,), (V,))
    assert np.isrealobj(t)
    np.testing.assert_allclose(out, f(X), rtol=1e-12)
    np.testing.assert_allclose(t, (f(X + 1e-6 * V) - f(X - 1e-6 * V)) / 2e-6, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sg.jacfwd(f)(X), sg.grad(f)(X), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_hessian_and_hvp_match_finite_differences_of_the_gradient(f):
    g = sg.grad(f)
    want = np.stack([(g(X + e) - g(X - e)) / 2e-6 for e in np.eye(4) * 1e-6], axis=1)
    H = sg.hessian(f)(X)
    assert np.isrealobj(H)
    np.testing.assert_allclose(H, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sg.hvp(f, (X,), (V,))[0], want @ V, rtol=1e-5, atol=1e-5)


def test_the_hessian_of_the_squared_modulus_is_hand_derived():
    """|x + i x**2|**2 summed = sum(x**2 + x**4): H = diag(2 + 12 x**2)."""
    def modulus(x):
        return np.sum(np.abs(x + 1j * x ** 2) ** 2)
    np.testing.assert_allclose(sg.hessian(modulus)(X), np.diag(2.0 + 12.0 * X ** 2), rtol=1e-10)
