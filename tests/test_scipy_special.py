"""Programs written with scipy.special (logistic regression, Poisson and mixture
likelihoods, softmax classifiers): gradients, tangents and Hessians against central
differences. SciPy's rules load the first time a rule lookup misses with SciPy imported,
so ``import srcgrad`` does not import SciPy."""

import os
import subprocess
import sys

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

sp = pytest.importorskip("scipy.special")
from scipy.special import expit, gammaln, log_softmax, logsumexp, xlogy  # noqa: E402

RNG = np.random.default_rng(11)
X = RNG.standard_normal((8, 3))
LABELS = (RNG.uniform(size=8) > 0.5).astype(float)
COUNTS = RNG.poisson(2.0, size=8).astype(float)
CLASSES = RNG.integers(0, 4, size=8)


def logistic_loss(w):
    p = expit(X @ w)
    return -np.sum(xlogy(LABELS, p) + xlogy(1 - LABELS, 1 - p))


def poisson_loss(w):
    rate = np.exp(X @ w)
    return -np.sum(COUNTS * np.log(rate) - rate - gammaln(COUNTS + 1.0))


def mixture_loss(means):
    # a three-component mixture of unit normals: the log-likelihood through logsumexp
    d = X[:, :1] - means[None, :]
    return -np.sum(logsumexp(-0.5 * d * d + np.log([0.2, 0.3, 0.5]), axis=1))


def softmax_loss(w):
    logits = X @ w.reshape(3, 4)
    return -np.sum(log_softmax(logits, axis=1)[np.arange(8), CLASSES])


def special_mix(w):
    t = X @ w
    return np.sum(sp.erf(t) * sp.ndtr(t) + sp.digamma(np.exp(t) + 1.0) + sp.log_ndtr(t - 1.0)) \
        + sp.betaln(np.exp(w[0]) + 1.0, 2.5) + np.sum(sp.softmax(t) * t)


CASES = [(logistic_loss, 3), (poisson_loss, 3), (mixture_loss, 3), (softmax_loss, 12), (special_mix, 3)]


@pytest.mark.parametrize("f, n", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_gradient_tangent_and_hessian_match_differences(f, n):
    w = 0.3 * np.cos(np.arange(n, dtype=float))
    want = numerical_grad(f, (w.copy(),))
    g = sg.grad(f)
    np.testing.assert_allclose(g(w.copy()), want, rtol=1e-6, atol=1e-8)
    t = np.sin(np.arange(n, dtype=float))
    np.testing.assert_allclose(sg.jvp(f, (w.copy(),), (t,))[1], want @ t, rtol=1e-6, atol=1e-8)
    columns = [numerical_grad(lambda v, k=k: g(v)[k], (w.copy(),)) for k in range(n)]
    np.testing.assert_allclose(sg.hessian(f)(w.copy()), np.stack(columns), rtol=1e-5, atol=1e-6)


def test_the_logistic_gradient_is_the_textbook_one():
    w = np.array([0.2, -0.4, 0.7])
    np.testing.assert_allclose(sg.grad(logistic_loss)(w), X.T @ (expit(X @ w) - LABELS), rtol=1e-12)


def test_logsumexp_with_return_sign_is_refused_at_its_line():
    def signed(a):
        value, sign = logsumexp(a, return_sign=True)
        return value * sign
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(signed)(np.ones(3))
    assert "return_sign" in str(info.value) and __file__ in str(info.value)


def test_importing_srcgrad_does_not_import_scipy():
    code = "import sys, srcgrad; print('scipy' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
