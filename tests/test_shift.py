"""The maximum a stable softmax subtracts gets no adjoint where every use of it cancels
(srcgrad/analysis/shift.py), and keeps it everywhere else."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pipeline
from srcgrad.analysis import shift
from srcgrad.testing import check_grads

RNG = np.random.default_rng(11)
X = RNG.standard_normal((4, 5))
Y = np.eye(5)[[0, 3, 1, 4]]


def log_softmax_loss(x, y):
    m = np.max(x, axis=1, keepdims=True)
    z = x - m
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(y * (z - lse))


def softmax_loss(x, y):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    p = e / np.sum(e, axis=-1, keepdims=True)
    return np.sum((p - y) ** 2)


def logsumexp(x, y):
    m = np.max(x, axis=0, keepdims=True)
    return np.sum(y[0] * (m + np.log(np.sum(np.exp(x - m), axis=0, keepdims=True))))


@pytest.mark.parametrize("fn", [log_softmax_loss, softmax_loss, logsumexp])
def test_the_offset_is_dropped_and_the_gradient_is_right(fn):
    node, _, _ = pipeline.normalize(fn)
    assert shift.cancelling_offsets(node) == {"m"}
    source = sg.source(fn, args=(X, Y))
    assert "tie_share" not in source and "dm" not in source
    # The reader is told why m has no adjoint, where the adjoint would have been.
    assert "# m: no gradient, the output does not depend on it" in source
    check_grads(fn, (X, Y), atol=1e-8, rtol=1e-7)
    # Ties in the maximum change nothing: the output does not depend on it.
    tied = np.repeat(X[:, :1], 5, axis=1)
    check_grads(fn, (tied, Y), atol=1e-8, rtol=1e-7)


def uses_the_offset_itself(x, y):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(y * (x - m))             # depends on m: 1 - n * onehot(argmax)


def scales_before_the_softmax(x, y):
    m = np.max(x, axis=1, keepdims=True)
    z = (x - m) * 2.0                       # shift invariant too, but not followed: kept
    return -np.sum(y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))))


def sums_along_another_axis(x, y):
    m = np.max(x, axis=1, keepdims=True)
    z = x - m
    return -np.sum(y * (z - np.log(np.sum(np.exp(z), axis=0, keepdims=True))))


def returns_the_offset_too(x, y):
    m = np.max(x, axis=1, keepdims=True)
    z = x - m
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(y * (z - lse)) + 0.5 * np.sum(m)


def subtracts_from_another_array(x, y):
    m = np.max(x, axis=1, keepdims=True)
    z = y - m                               # not the maximum's operand
    return np.sum(np.exp(z) / np.sum(np.exp(z), axis=1, keepdims=True) * x)


def rebinds_the_operand(x, y):
    m = np.max(x, axis=1, keepdims=True)
    x = x * 3.0
    z = x - m
    return -np.sum(y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))))


@pytest.mark.parametrize("fn", [uses_the_offset_itself, scales_before_the_softmax,
                                sums_along_another_axis, returns_the_offset_too,
                                subtracts_from_another_array, rebinds_the_operand])
def test_an_offset_that_does_not_cancel_keeps_its_adjoint(fn):
    node, _, _ = pipeline.normalize(fn)
    assert shift.cancelling_offsets(node) == set()
    check_grads(fn, (X, Y), atol=1e-7, rtol=1e-6)


def test_an_offset_asked_for_keeps_its_adjoint():
    # wrt a local, or a hook on it, names it: its gradient is computed (about zero).
    g = sg.grad(log_softmax_loss, wrt=("x", "m"))(X, Y)
    np.testing.assert_allclose(g[1], 0.0, atol=1e-12)
    check_grads(log_softmax_loss, (X, Y), atol=1e-8, rtol=1e-7)
    assert "tie_share" in sg.source(log_softmax_loss, wrt=("x", "m"), args=(X, Y))


def test_float32_softmax_matches_float64():
    got = sg.grad(log_softmax_loss)(X.astype(np.float32), Y.astype(np.float32))
    want = sg.grad(log_softmax_loss)(X, Y)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ----- Random programs over the operations the proof follows, against finite differences -----

_STEPS = [
    "{t} = np.exp({a})", "{t} = np.log(np.abs({a}) + 0.5)", "{t} = np.log(np.sum(np.exp({a}), axis=1, keepdims=True))",
    "{t} = np.sum({a}, axis=1, keepdims=True)", "{t} = np.sum({a}, axis=0, keepdims=True)",
    "{t} = {a} - {b}", "{t} = {a} + {b}", "{t} = {a} * {b}", "{t} = {a} / (np.abs({b}) + 1.0)",
    "{t} = {a} - 2.0", "{t} = 3.0 * {a}", "{t} = -{a}", "{t} = {a} - m", "{t} = m + {a}",
    "{t} = np.max({a}, axis=1, keepdims=True)",
]


def _random_program(rng, k):
    names = ["x", "z"]
    lines = [f"def prog_{k}(x, y):", "    m = np.max(x, axis=1, keepdims=True)", "    z = x - m"]
    for i in range(int(rng.integers(2, 6))):
        step = _STEPS[int(rng.integers(len(_STEPS)))]
        t = f"v{i}"
        lines.append("    " + step.format(t=t, a=names[int(rng.integers(len(names)))],
                                         b=names[int(rng.integers(len(names)))]))
        names.append(t)
    lines.append(f"    return np.sum(y * {names[-1]}) + 0.25 * np.sum(y * {names[-2]})")
    return "\n".join(lines) + "\n"


def test_random_programs_around_an_offset(tmp_path):
    import importlib.util
    rng = np.random.default_rng(2026)
    source = "import numpy as np\n\n" + "\n\n".join(_random_program(rng, k) for k in range(60))
    path = tmp_path / "shift_programs.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("shift_programs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = RNG.standard_normal((3, 4))
    weights = RNG.standard_normal((3, 4))
    dropped = 0
    for k in range(60):
        fn = getattr(module, f"prog_{k}")
        node, _, _ = pipeline.normalize(fn)
        dropped += bool(shift.cancelling_offsets(node))
        check_grads(fn, (x, weights), atol=1e-6, rtol=1e-5)
    assert 3 <= dropped < 60   # both kinds are exercised
