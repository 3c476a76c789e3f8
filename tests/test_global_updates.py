"""A differentiated function that updates a module-level container as a side effect (a call
counter, a history list): Python runs it once per call, and srcgrad's gradient does too."""

import numpy as np

import srcgrad as sg
from srcgrad.testing import numerical_grad

COUNTS = {"calls": 0}
HISTORY = []
W = np.array([0.1, -0.2, 0.3])
X = np.arange(12.0).reshape(4, 3) / 10


def counted(w, x):
    COUNTS["calls"] += 1   # an augmented write into a global dict: made `COUNTS` a local
    return np.sum(np.tanh(x @ w))


def recorded(w, x):
    HISTORY.append(float(np.sum(w)))
    COUNTS["calls"] = COUNTS["calls"] + 1
    return np.sum(np.tanh(x @ w) ** 2)


def test_an_augmented_write_into_a_global_dict_runs_once_per_call():
    before = COUNTS["calls"]
    for f in (counted, recorded):
        np.testing.assert_allclose(sg.grad(f)(W, X), numerical_grad(f, (W, X)), rtol=1e-6)
    g = sg.grad(counted)
    start = COUNTS["calls"]
    g(W, X)
    g(W, X)
    assert COUNTS["calls"] == start + 2 and COUNTS["calls"] > before
    assert len(HISTORY) >= 1
