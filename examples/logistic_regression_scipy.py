"""Logistic regression as a SciPy user writes it: the loss with scipy.special's
``expit`` and ``xlogy``, fitted by ``scipy.optimize.minimize`` with srcgrad's gradient
and Hessian-vector product, then the Newton step's Hessian checked against the textbook
one, ``X^T diag(p (1 - p)) X``.

Run: python3 examples/logistic_regression_scipy.py
"""

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, xlogy

import srcgrad as sg


def negative_log_likelihood(w, x, y, ridge):
    """The mean cross-entropy of labels ``y`` under ``expit(x @ w)``, plus a ridge."""
    p = expit(x @ w)
    return -np.mean(xlogy(y, p) + xlogy(1.0 - y, 1.0 - p)) + ridge * np.sum(w * w)


def make_data(rng, n, true_w):
    x = np.column_stack([np.ones(n), rng.standard_normal((n, len(true_w) - 1))])
    y = (rng.uniform(size=n) < expit(x @ true_w)).astype(float)
    return x, y


def main():
    rng = np.random.default_rng(0)
    x, y = make_data(rng, 400, np.array([-0.5, 2.0, -1.0]))
    loss_and_grad = sg.value_and_grad(negative_log_likelihood)

    def loss_of_w(w):
        return negative_log_likelihood(w, x, y, 1e-3)

    def hessp(w, v, *data):
        return sg.hvp(loss_of_w, (w,), (v,))[0]

    fit = minimize(loss_and_grad, np.zeros(3), args=(x, y, 1e-3), jac=True, hessp=hessp,
                   method="trust-ncg")
    print("converged:", fit.success)
    print("fitted weights:", np.round(fit.x, 3))

    hessian = sg.hessian(negative_log_likelihood)(fit.x, x, y, 1e-3)
    p = expit(x @ fit.x)
    textbook = (x.T * (p * (1 - p))) @ x / len(y) + 2e-3 * np.eye(3)
    assert np.allclose(hessian, textbook, rtol=1e-9, atol=1e-12)
    print("Hessian matches X^T diag(p (1 - p)) X / n + 2 ridge I:", True)
    print("Generated gradient of negative_log_likelihood:")
    print(sg.source(negative_log_likelihood))


if __name__ == "__main__":
    main()
