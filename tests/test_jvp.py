"""Forward mode (issue 14): ``sg.jvp``'s tangent program against central finite differences.

Every catalogue function (tests/functions.py) either matches the directional finite
difference along a random tangent, or is refused at compile time with a clear
SrcgradError naming the primitive: never a wrong number.
"""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import SrcgradError

H = 1e-6


def _fd(f, primals, tangents, h=H):
    """Central difference of ``f`` along ``tangents`` (None: held fixed)."""
    def at(s):
        return f(*[p if t is None else (p + s * t if isinstance(p, np.ndarray) else p + s * float(t))
                   for p, t in zip(primals, tangents)])
    plus, minus = at(h), at(-h)
    if isinstance(plus, (tuple, list)):
        return type(plus)((np.asarray(a, float) - np.asarray(b, float)) / (2 * h)
                          for a, b in zip(plus, minus))
    return (np.asarray(plus, float) - np.asarray(minus, float)) / (2 * h)


def _random_tangents(primals, positions, rng):
    tangents = [None] * len(primals)
    for k in positions:
        p = primals[k]
        tangents[k] = rng.normal(size=np.shape(p)) if isinstance(p, np.ndarray) else float(rng.normal())
    return tangents


def assert_jvp_matches(f, primals, positions, atol=1e-6, rtol=1e-5, seed=0):
    rng = np.random.default_rng(seed)
    primals = tuple(p.copy() if isinstance(p, np.ndarray) else p for p in primals)
    tangents = _random_tangents(primals, positions, rng)
    out, t = sg.jvp(f, primals, tangents)
    expected_out = f(*[p.copy() if isinstance(p, np.ndarray) else p for p in primals])
    fd = _fd(f, primals, tangents)
    if isinstance(fd, (tuple, list)):
        assert len(t) == len(fd)
        for a, b, o, e in zip(t, fd, out, expected_out):
            np.testing.assert_allclose(o, e, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)
    else:
        np.testing.assert_allclose(out, expected_out, rtol=1e-12, atol=1e-12)
        assert np.shape(t) == np.shape(fd)
        np.testing.assert_allclose(t, fd, atol=atol, rtol=rtol)
    return t


def test_every_catalogue_function_matches_finite_differences_or_is_refused(catalogue_case):
    case = catalogue_case
    if case.kwargs:
        pytest.skip("sg.jvp takes positional primals; keyword-only inputs are not passed")
    positions = [w for w, _ in case.targets if isinstance(w, int)]
    if not positions:
        pytest.skip("nothing differentiable")
    args, _ = case.fresh()
    try:
        assert_jvp_matches(case.function, args, positions, atol=case.atol, rtol=case.rtol)
    except SrcgradError as exc:   # refused: the message names a line and what is missing
        text = str(exc)
        assert exc.filename and "functions.py" in exc.filename, text
        assert "forward mode" in text, text
    except TypeError as exc:
        assert "forward mode" in str(exc), str(exc)
