"""``match`` statements (transform/match_statements.py): written as the if/elif chain they
stand for. Each gradient is checked against central differences in float64, in reverse
mode, forward mode, Hessians and the jit; other patterns are refused at their line."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.array([0.5, -1.2, 2.0])


def activation(x, mode):
    match mode:
        case "relu":
            y = np.maximum(x, 0.0)
        case "tanh" | "soft":
            y = np.tanh(x)
        case None:
            y = x * 3.0
        case _:
            y = x * 2.0
    return np.sum(y ** 2)


def powers(x, n):
    match n:
        case 0:
            return np.sum(x)
        case k if k > 2:
            return np.sum(x ** k)
        case (1 | 2) as m:
            return np.sum(x * m) + m
    return 0.0


def captured(x, n):
    match n:
        case 1:
            s = 1.0
        case other:
            s = other * 1.5
    return np.sum(np.sin(x) * s)


def on_a_value(x):
    match float(np.sum(x)) > 0:
        case True:
            return np.sum(x ** 3)
        case False:
            return np.sum(-x)


def nested(x, a, b):
    y = x * 1.0
    for k in range(2):
        match a:
            case "sq":
                match b:
                    case 1:
                        y = y ** 2
                    case _:
                        y = np.sin(y)
            case _:
                y = y + k
    return np.sum(y)


def guard_binds_before_failing(x, n):
    match n:
        case m if m > 10:
            s = 0.0
        case _:
            s = 1.0
    return np.sum(x * m * s)   # Python bound m although its guard failed


def subject_once(x, items):
    match items.pop():
        case 1.0:
            out = np.sum(x)
        case _:
            out = np.sum(x ** 2)
    return out + len(items)


CASES = [(activation, ("relu",)), (activation, ("tanh",)), (activation, ("soft",)),
         (activation, (None,)), (activation, ("elu",)), (powers, (0,)), (powers, (3,)),
         (powers, (1,)), (powers, (2,)), (powers, (-1,)), (captured, (1,)), (captured, (4,)),
         (on_a_value, ()), (nested, ("sq", 1)), (nested, ("sq", 2)), (nested, ("id", 1)),
         (guard_binds_before_failing, (3,))]


@pytest.mark.parametrize("f,extra", CASES, ids=lambda v: getattr(v, "__name__", repr(v)))
def test_match_is_differentiated_as_its_if_chain(f, extra):
    for x in (X, -X):
        args = (x,) + extra
        want = numerical_grad(f, args)
        np.testing.assert_allclose(sg.grad(f)(*args), want, rtol=1e-6, atol=1e-8)
        tangent = np.array([0.3, -0.7, 1.1])
        _, out = sg.jvp(f, args, (tangent,) + (None,) * len(extra))
        np.testing.assert_allclose(out, want @ tangent, rtol=1e-6, atol=1e-8)
        hess = sg.hessian(f)(*args)
        np.testing.assert_allclose(hess, numerical_grad_rows(lambda v: sg.grad(f)(v, *extra), x),
                                   rtol=1e-5, atol=1e-7)


def numerical_grad_rows(g, x, eps=1e-6):
    rows = [(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(x.size)]
    return np.stack(rows, axis=-1)


def test_the_subject_is_evaluated_once():
    for items in ([2.0, 1.0], [1.0, 3.0]):
        args = (X, list(items))
        want = numerical_grad(lambda x: subject_once(x, list(items)), (X,))
        np.testing.assert_allclose(sg.grad(subject_once)(*args), want, rtol=1e-6, atol=1e-8)


def test_the_jit_compiles_the_chain():
    pytest.importorskip("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (a str argument may run the NumPy gradient)
        for f, extra in [(powers, (3,)), (captured, (4,)), (on_a_value, ())]:
            got = sg.grad(f, jit=True)(X, *extra)
            np.testing.assert_allclose(got, numerical_grad(f, (X,) + extra), rtol=1e-6, atol=1e-8)


def sequence_pattern(x, t):
    match t:
        case [a, b]:
            return np.sum(x * a * b)
    return np.sum(x)


def class_pattern(x, t):
    match t:
        case complex(real=r):
            return np.sum(x * r)
    return np.sum(x)


def test_other_patterns_are_refused_at_their_line():
    with pytest.raises(sg.UnsupportedError, match="sequence pattern") as info:
        sg.grad(sequence_pattern)(X, (1.0, 2.0))
    assert info.value.filename == __file__
    assert info.value.lineno == sequence_pattern.__code__.co_firstlineno + 2
    with pytest.raises(sg.UnsupportedError, match="class pattern"):
        sg.grad(class_pattern)(X, 1j)


def test_generated_code_reads_as_the_chain():
    text = sg.source(activation, args=(X, "tanh"))
    assert "subject = mode" in text
    assert "subject == 'tanh' or subject == 'soft'" in text
