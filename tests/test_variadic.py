"""``*args`` and ``**kwargs`` of the function differentiated (entry.fixed_arity): each call's
derivative is made for its number of positional arguments and keyword names, ``wrt``
counting the call's positional arguments (JAX's ``argnums``). Every derivative is checked
against central differences in float64 or a hand-derived answer."""

import functools
import pickle
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.array([[0.3, -1.2], [2.0, 0.5], [-0.7, 1.1]])
Y = np.array([1.0, -0.4, 0.25])
W = np.array([0.5, -1.0])


def least_squares(w, *batch):
    x, y = batch
    h = x @ w
    return np.sum((h - y) ** 2)


def sines(w, *xs):
    total = 0.0
    for x in xs:
        total = total + np.sum(np.sin(x * w))
    return total


def scaled(w, x, **options):
    return np.sum(np.tanh(x @ w) * options["scale"]) + options.get("shift", 0.0)


def everything(w, b=1.0, *xs, power=2, **extra):
    out = np.sum(w * b) ** power
    for x in xs:
        out = out + np.sum(np.cos(x @ w))
    return out + sum(extra.values()) * np.sum(w ** 3)


def with_aux(w, *xs):
    return np.sum(np.exp(xs[0] @ w)), {"count": len(xs)}


def _check(f, args, wrt=0, kwargs=None):
    kwargs = kwargs or {}
    want = numerical_grad(f, args, wrt=wrt, kwargs=kwargs)
    got = sg.grad(f, wrt=wrt)(*args, **kwargs)
    if isinstance(wrt, tuple):
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_star_args_gradient_matches_the_hand_answer():
    g = sg.grad(least_squares)(W, X, Y)
    np.testing.assert_allclose(g, 2 * X.T @ (X @ W - Y), rtol=1e-12)


@pytest.mark.parametrize("args", [(W,), (W, X), (W, X, 2 * X), (W, X, X[:1], -X)])
def test_each_number_of_items_gets_its_own_gradient(args):
    _check(sines, args)
    g = sg.grad(sines)
    for _ in range(2):   # again, and after other counts: each its own derivative
        _check(sines, args)
        np.testing.assert_allclose(g(*args), numerical_grad(sines, args), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("wrt", [1, 2, (0, 2), (2, 0, 1)])
def test_wrt_counts_the_positional_arguments_of_the_call(wrt):
    _check(least_squares, (W, X, Y), wrt=wrt)


def test_wrt_names_the_packed_tuple_as_a_local():
    dx, dy = sg.grad(least_squares, wrt="batch")(W, X, Y)
    np.testing.assert_allclose(dx, numerical_grad(least_squares, (W, X, Y), wrt=1), rtol=1e-6)
    np.testing.assert_allclose(dy, numerical_grad(least_squares, (W, X, Y), wrt=2), rtol=1e-6)


@pytest.mark.parametrize("kwargs", [{"scale": 2.0}, {"scale": 0.5, "shift": 3.0},
                                    {"shift": 3.0, "scale": -1.0}])
def test_keywords_of_kwargs(kwargs):
    _check(scaled, (W, X), kwargs=kwargs)
    dscale = sg.grad(scaled, wrt="scale")(W, X, **kwargs)
    np.testing.assert_allclose(dscale, np.sum(np.tanh(X @ W)), rtol=1e-12)


@pytest.mark.parametrize("args,kwargs", [((W,), {}), ((W, 2.0), {}), ((W, 2.0, X, -X), {}),
                                         ((W, 0.5, X), {"power": 3, "c": 1.5, "d": -2.0})])
def test_defaults_keyword_only_and_both_stars(args, kwargs):
    _check(everything, args, kwargs=kwargs)
    if len(args) > 1:
        _check(everything, args, wrt=1, kwargs=kwargs)


def test_value_and_grad_grad_outputs_has_aux_and_hooks():
    value, g = sg.value_and_grad(least_squares)(W, X, Y)
    np.testing.assert_allclose(value, least_squares(W, X, Y), rtol=1e-12)
    np.testing.assert_allclose(g, 2 * X.T @ (X @ W - Y), rtol=1e-12)
    seed = np.array([1.0, 2.0, -1.0])
    got = sg.grad(lambda_free_matmul)(W, X, grad_outputs=seed)
    np.testing.assert_allclose(got, X.T @ seed, rtol=1e-12)
    g, aux = sg.grad(with_aux, has_aux=True)(W, X, Y)
    assert aux == {"count": 2}
    np.testing.assert_allclose(g, X.T @ np.exp(X @ W), rtol=1e-12)
    seen = {}
    sg.grad(least_squares, hooks={"h": lambda d: seen.setdefault("h", d)})(W, X, Y)
    np.testing.assert_allclose(seen["h"], 2 * (X @ W - Y), rtol=1e-12)


def lambda_free_matmul(w, *xs):
    return xs[0] @ w


def test_forward_mode_and_jacobians():
    v = np.array([0.3, -0.8])
    value, tangent = sg.jvp(least_squares, (W, X, Y), (v, None, None))
    np.testing.assert_allclose(value, least_squares(W, X, Y), rtol=1e-12)
    np.testing.assert_allclose(tangent, (2 * X.T @ (X @ W - Y)) @ v, rtol=1e-12)
    for jac in (sg.jacfwd, sg.jacrev):
        np.testing.assert_allclose(jac(lambda_free_matmul)(W, X), X, rtol=1e-12)
        np.testing.assert_allclose(jac(lambda_free_matmul, wrt=1)(W, X),
                                   numerical_grad_matrix(lambda x: x @ W, X), rtol=1e-6, atol=1e-9)
    out, backward = sg.vjp(least_squares)(W, X, Y)
    np.testing.assert_allclose(backward(), 2 * X.T @ (X @ W - Y), rtol=1e-12)


def numerical_grad_matrix(f, x, eps=1e-6):
    cols = []
    for k in range(x.size):
        d = np.zeros(x.size)
        d[k] = eps
        cols.append((f(x + d.reshape(x.shape)) - f(x - d.reshape(x.shape))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(f(x).shape + x.shape)


def test_second_order():
    hand = 2 * X.T @ X
    np.testing.assert_allclose(sg.hessian(least_squares)(W, X, Y), hand, rtol=1e-12)
    np.testing.assert_allclose(sg.jacfwd(sg.grad(least_squares))(W, X, Y), hand, rtol=1e-12)
    (hv, _, _) = sg.hvp(least_squares, (W, X, Y), (np.array([1.0, 0.0]), None, None))
    np.testing.assert_allclose(hv, hand[:, 0], rtol=1e-12)
    inner = sg.grad(least_squares)
    np.testing.assert_allclose(sg.grad(lambda_sum_of(inner))(W, X, Y), hand.sum(axis=0),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="scalar outputs"):   # a vector: needs grad_outputs
        sg.grad(sg.grad(least_squares))(W, X, Y)
    h = sg.hessian(sines)(W, X)
    np.testing.assert_allclose(h, numerical_grad_matrix(lambda w: sg.grad(sines)(w, X), W),
                               rtol=1e-6, atol=1e-8)


def lambda_sum_of(g):
    def total(w, x, y):
        return np.sum(g(w, x, y))
    return total


def calls_a_variadic_gradient(w, x):
    return np.sum(sg.grad(sines)(w, x) ** 2)


def test_the_gradient_of_a_variadic_function_called_inside_a_differentiated_one():
    _check(calls_a_variadic_gradient, (W, X))


class Model:
    k = 3.0

    def loss(self, w, *batch):
        return np.sum(batch[0] @ w) * self.k


def test_a_bound_method_taking_star_args():
    np.testing.assert_allclose(sg.grad(Model().loss)(W, X), 3.0 * X.sum(axis=0), rtol=1e-12)


def collides(x, *x_0):
    x_0_0 = x_0[0] * 2.0
    return np.sum(x * x_0_0)


def test_item_names_do_not_collide_with_the_functions_names():
    _check(collides, (W, -W), wrt=(0, 1))


def test_jit_compiles_it():
    pytest.importorskip("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # compiled, no fallback
        g = sg.grad(sines, jit=True)
        for args in [(W, X), (W, X, -X)]:
            np.testing.assert_allclose(g(*args), numerical_grad(sines, args), rtol=1e-6, atol=1e-8)


def test_source_needs_the_arguments():
    text = sg.source(least_squares, args=(W, X, Y))
    assert "def least_squares_forward(w, batch_0, batch_1):" in text
    assert "batch = batch_0, batch_1" in text
    with pytest.raises(sg.UnsupportedError, match="args="):
        sg.source(least_squares)


def test_gradients_pickle_and_refusals_stay_located():
    g = pickle.loads(pickle.dumps(sg.grad(least_squares, wrt=2)))
    np.testing.assert_allclose(g(W, X, Y), -2 * (X @ W - Y), rtol=1e-12)
    with pytest.raises(TypeError, match="dtype is int64"):
        sg.grad(least_squares, wrt=2)(W, X, np.array([1, 0, 2]))
    with pytest.raises(sg.UnsupportedError, match="not a Python name"):
        sg.grad(scaled)(W, X, **{"scale": 1.0, "a-b": 2.0})
    with pytest.raises(sg.UnsupportedError) as info:
        sg.grad(refused_inside)(W, X)
    assert info.value.filename == __file__ and "try/except" in info.value.message


def refused_inside(w, *xs):
    try:
        return np.sum(xs[0] @ w)
    except ValueError:
        return 0.0


def passes_on(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper


@passes_on
def decorated_sines(w, *xs):
    return sines(w, *xs)


def test_a_decorator_taking_star_args_around_a_function_taking_them():
    for args in [(W, X), (W, X, -X)]:
        _check(decorated_sines, args)
        _check(decorated_sines, args, wrt=1)


def test_checks_forward_mode_of_the_gradient_and_as_function():
    assert sg.gradcheck(least_squares, (W, X, Y))
    assert sg.gradgradcheck(least_squares, (W, X, Y))
    assert sg.gradgradcheck(everything, (W, 0.5, X), kwargs={"power": 3, "c": 1.5})
    v = np.array([1.0, 0.0])
    _, tangent = sg.jvp(sg.grad(least_squares), (W, X, Y), (v, None, None))
    np.testing.assert_allclose(tangent, 2 * X.T @ X @ v, rtol=1e-12)
    with pytest.raises(TypeError, match="made for each call"):
        sg.grad(least_squares).as_function()


xs_0 = 100.0   # a global named like the parameter an item of *xs would get
scale = 7.0    # a global named like a keyword given to **options


def reads_a_global_named_like_an_item(w, *xs):
    return np.sum(w * xs[0]) * xs_0


def reads_a_global_named_like_a_keyword(w, **options):
    return np.sum(w * options["scale"]) * scale


def test_parameters_made_for_items_and_keywords_hide_no_global():
    np.testing.assert_allclose(sg.grad(reads_a_global_named_like_an_item, wrt=(0, 1))(W, -W)[1],
                               100.0 * W, rtol=1e-12)
    with pytest.raises(sg.UnsupportedError, match="also reads a variable 'scale'") as info:
        sg.grad(reads_a_global_named_like_a_keyword)(W, scale=2.0)
    assert info.value.filename == __file__
