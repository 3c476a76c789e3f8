"""Helpers that the catalogue (tests/functions.py) calls from another module.

srcgrad must find and transform these through the calling module's globals
(``import helpers_module as hm``, ``from helpers_module import poly``), with
this module's own globals (``np``, ``math``, ``SCALE``, ``_inner``).
"""

import math

import numpy as np

SCALE = 0.5


def softplus(v):
    return np.log(1.0 + np.exp(v))


def poly(v, c0=1.0, c1=-0.5):
    return c0 * v * v + c1 * v


def _inner(v):
    return np.tanh(v) * SCALE


def outer(v):
    # A helper that calls a private helper of its own module.
    return _inner(v) + _inner(v * v)


def pair(v, s):
    # Returns a tuple: the caller unpacks it.
    return np.sum(v) * s, v * s


def scalar_helper(a):
    return math.sin(a) * a + 1.0


def loop_helper(v, n):
    total = 0.0
    for k in range(n):
        total = total + np.sum(v ** 2) * (k + 1)
    return total


def make_scaled(k):
    def scaled(v):
        return v * k
    return scaled


def invert(m):
    # Raises numpy.linalg.LinAlgError for a singular m (tests/test_tracebacks.py).
    return np.linalg.inv(m)


def checked_log(v):
    assert np.all(v > 0), "checked_log needs positive values"
    return np.log(v)
