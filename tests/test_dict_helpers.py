"""A helper that loops over the dict it is given (``{k: p[k] - lr * g[k] for k in p}``, the
first update step a JAX user writes), and names that copy a dict or list (``q = params``):
the loop iterates the keys, as Python does (they were refused, or sorted as an array)."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from tests.adversarial_checks import assert_grad_and_jvp

RNG = np.random.default_rng(0)
X = RNG.normal(size=(6, 3))
Y = RNG.normal(size=6)


def params():
    return {"w": np.array([0.3, -0.5, 1.2]), "b": 0.4}


def loss(p):
    return np.mean((X @ p["w"] + p["b"] - Y) ** 2)


def step(p, g, lr=0.1):
    return {k: p[k] - lr * g[k] for k in p}


def step_loop(p):
    out = {}
    for k in p:
        out[k] = p[k] * 3
    return out


def inner_step_of_argument(p):
    """One inner step of a meta-learning loss: the helper iterates the argument dict."""
    g = {"w": 2 * p["w"], "b": p["b"]}
    return loss(step(p, g))


def step_twice_with_argument(p):
    return loss(step(p, p))


def helper_loop_over_argument(p):
    return loss(step_loop(p))


def helper_over_local_dict(p):
    g = {"w": 2 * p["w"], "b": p["b"] ** 2}
    return loss(step(g, g))


def loop_over_alias(p):
    q = p
    r = q
    return sum(np.sum(r[k] ** 2) for k in r)


def comprehension_over_dict_copy(p):
    g = {k: 2 * v for k, v in p.items()}
    h = g
    return sum(np.sum(h[k] * p[k]) for k in h)


@pytest.mark.parametrize("f", [inner_step_of_argument, step_twice_with_argument,
                               helper_loop_over_argument, helper_over_local_dict, loop_over_alias,
                               comprehension_over_dict_copy])
def test_loops_over_dicts_in_helpers_and_aliases(f):
    want = numerical_grad(f, (params(),))
    got = sg.grad(f)(params())
    assert set(got) == {"w", "b"}
    np.testing.assert_allclose(got["w"], want["w"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got["b"], want["b"], rtol=1e-6, atol=1e-9)
    tangent = {"w": np.array([0.7, -1.1, 0.4]), "b": 2.0}
    value, out = sg.jvp(f, (params(),), (tangent,))
    np.testing.assert_allclose(value, f(params()), rtol=1e-13)
    np.testing.assert_allclose(out, want["w"] @ tangent["w"] + want["b"] * 2.0, rtol=1e-6)


def test_hessian_of_a_loss_after_an_inner_step():
    def f(w):
        return inner_step_of_argument({"w": w, "b": 0.4})

    w = params()["w"]
    h = sg.hessian(f)(w.copy())
    eps = 1e-5
    columns = [(sg.grad(f)(w + eps * e) - sg.grad(f)(w - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(h, np.stack(columns, axis=1), rtol=1e-6, atol=1e-9)


def sorted_through_alias(x):
    xs = [x[0] * 2, x[1], x[2] ** 2]
    ys = xs
    ys.sort()
    return ys[0] * 3 + ys[2]


def sorter(v):
    v.sort()
    return v[-1]


def helper_sorts_an_alias(x):
    xs = [x[0] * 2, x[1], x[2] ** 2]
    ys = xs
    return sorter(ys) * 2


@pytest.mark.parametrize("f", [sorted_through_alias, helper_sorts_an_alias])
def test_a_list_copied_to_another_name_is_sorted_as_a_list(f):
    # (it was sorted as an array: TypeError, list indices must be integers)
    assert_grad_and_jvp(f, (np.array([0.5, -1.0, 2.0]),))
