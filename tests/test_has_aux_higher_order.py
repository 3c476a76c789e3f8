"""has_aux in every forward-mode and higher-order API, functions of several outputs, and
the batched Hessian of a structured argument (issue 14).

Each derivative is checked against central finite differences in float64 (and against
hand-derived values for quadratics); each aux must be the function's own value and
must carry no derivative (an aux that depends smoothly on the input changes nothing).
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import hessians, pytree
from srcgrad.errors import NonDifferentiableError

H = 1e-6


def _example(name):
    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_has_aux_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Net(_example("mlp_dict_params").MLP):
    """examples/mlp_dict_params.py's MLP (params a dict of a list of dicts, a loss with a
    generator sum and the accuracy as aux), its layers split by indexing instead of the
    ``*hidden, last = ...`` unpacking forward mode does not read yet."""

    def forward(self, params, x):
        layers = params["layers"]
        for i in range(len(layers) - 1):
            x = np.tanh(x @ layers[i]["W"] + layers[i]["b"])
        return x @ layers[-1]["W"] + layers[-1]["b"]


def net_case():
    rng = np.random.default_rng(3)
    sizes = [2, 3, 3]
    params = {"layers": [{"W": rng.normal(0.0, 0.8, (m, n)), "b": rng.normal(0.0, 0.1, n)}
                         for m, n in zip(sizes[:-1], sizes[1:])]}
    x, labels = rng.normal(size=(5, 2)), np.array([0, 1, 2, 1, 0])
    return Net(1e-2).loss, (params, x, labels)


def flat(tree):
    return np.concatenate([np.ravel(np.asarray(leaf, float)) for leaf in pytree.tree_leaves(tree)])


def unflat(like, v):
    leaves, start = [], 0
    for leaf in pytree.tree_leaves(like):
        leaves.append(v[start:start + np.size(leaf)].reshape(np.shape(leaf)))
        start += np.size(leaf)
    return pytree.rebuild(like, iter(leaves))


def fd(g, x):
    """Central differences of ``g`` (flat vector -> flat vector), columns last."""
    return np.stack([(g(x + H * e) - g(x - H * e)) / (2 * H) for e in np.eye(x.size)], axis=-1)


def blocks(tree, rows, cols):
    """A structure of blocks (row leaves outside, column leaves inside) as one matrix."""
    leaves = [np.asarray(b, float) for b in pytree.tree_leaves(tree)]
    return np.block([[leaves[i * len(cols) + j].reshape(r, c) for j, c in enumerate(cols)]
                     for i, r in enumerate(rows)])


# ----- has_aux: the MLP -----

def test_every_api_takes_has_aux_on_the_mlp_loss_and_returns_its_own_aux():
    loss, (params, x, labels) = net_case()
    accuracy = loss(params, x, labels)[1]
    p0 = flat(params)
    sizes = [np.size(leaf) for leaf in pytree.tree_leaves(params)]

    def value(v):
        return np.array([loss(unflat(params, v), x, labels)[0]])

    gradient = sg.grad(loss, has_aux=True)

    def grad_flat(v):
        g, aux = gradient(unflat(params, v), x, labels)
        assert aux == accuracy
        return flat(g)

    want_grad = fd(value, p0)[0]
    want_hessian = fd(grad_flat, p0)
    t = np.random.default_rng(0).normal(size=p0.size)

    out, tangent, aux = sg.jvp(loss, (params, x, labels), (unflat(params, t), None, None),
                               has_aux=True)
    assert aux == accuracy and out == loss(params, x, labels)[0]
    np.testing.assert_allclose(tangent, want_grad @ t, rtol=1e-6)
    for api in (sg.jacfwd, sg.jacrev):
        jac, aux = api(loss, has_aux=True)(params, x, labels)
        assert aux == accuracy
        np.testing.assert_allclose(flat(jac), want_grad, rtol=1e-6, atol=1e-9)
    (products, _, _), aux = sg.hvp(loss, (params, x, labels), (unflat(params, t), None, None),
                                   wrt=0, has_aux=True)
    assert aux == accuracy
    np.testing.assert_allclose(flat(products), want_hessian @ t, rtol=1e-5, atol=1e-8)
    hess, aux = sg.hessian(loss, has_aux=True)(params, x, labels)
    assert aux == accuracy
    np.testing.assert_allclose(blocks(hess, sizes, sizes), want_hessian, rtol=1e-5, atol=1e-8)
    # sg.grad(sg.grad(f, has_aux=True), has_aux=True) of a structure: the other helper's
    # reverse over reverse of structures (refused today, naming this file)


def looped(w, x):
    """A loop (the gradient records a tape) and an aux that depends smoothly on ``w``."""
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(w * x[i]))
    return s * s, {"cube": w ** 3, "n": 3}


def plain(w, x):
    return np.sum(np.sin(w) * x[0]) ** 2, w ** 3


@pytest.mark.parametrize("f", [looped, plain])
def test_grad_of_a_has_aux_gradient_with_has_aux_passes_the_aux_through(f):
    rng = np.random.default_rng(2)
    w, x, v = rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=3)
    second, aux = sg.grad(sg.grad(f, has_aux=True), has_aux=True)(w, x, grad_outputs=v)
    np.testing.assert_array_equal(flat(aux), flat(f(w, x)[1]))
    first = sg.grad(f, has_aux=True)
    want = fd(lambda u: np.array([first(u, x)[0] @ v]), w)[0]
    np.testing.assert_allclose(second, want, rtol=1e-6, atol=1e-9)
    hess, aux = sg.hessian(f, has_aux=True)(w, x)
    np.testing.assert_allclose(hess @ v, want, rtol=1e-6, atol=1e-9)
    with pytest.raises(TypeError, match="has_aux=True too"):
        sg.grad(sg.grad(f, has_aux=True))


NET = Net(1e-2)


def net_loss(params, x, labels):
    return NET.loss(params, x, labels)


TANGENT = unflat(net_case()[1][0], np.random.default_rng(1).normal(size=21))   # 2*3+3 + 3*3+3


def along(params, x, labels):
    """<sg.grad(net_loss, has_aux=True)(...)[0], TANGENT>: a gradient called inside."""
    g, accuracy = sg.grad(net_loss, has_aux=True)(params, x, labels)
    total = 0.0
    for i in range(len(g["layers"])):
        total = total + np.sum(g["layers"][i]["W"] * TANGENT["layers"][i]["W"]) \
            + np.sum(g["layers"][i]["b"] * TANGENT["layers"][i]["b"])
    return total


def test_a_gradient_with_has_aux_inside_a_differentiated_function():
    _, (params, x, labels) = net_case()
    got = sg.grad(along)(params, x, labels)
    want = fd(lambda v: np.array([along(unflat(params, v), x, labels)]), flat(params))[0]
    np.testing.assert_allclose(flat(got), want, rtol=1e-5, atol=1e-8)
    hess = sg.hessian(net_loss, has_aux=True)(params, x, labels)[0]
    sizes = [np.size(leaf) for leaf in pytree.tree_leaves(params)]
    np.testing.assert_allclose(flat(got), blocks(hess, sizes, sizes) @ flat(TANGENT), rtol=1e-6,
                               atol=1e-9)


def smooth_aux(x, y):
    """The output's derivative is 2 cos(x) y; the aux, x ** 3, must add nothing to it."""
    return 2.0 * np.sin(x) * y, x ** 3


def test_an_aux_that_depends_smoothly_on_the_input_carries_no_derivative():
    x, y = np.array([0.3, -0.7, 1.1]), np.array([1.5, 0.5, -2.0])
    want = np.diag(2.0 * np.cos(x) * y)
    for api in (sg.jacfwd, sg.jacrev):
        jac, aux = api(smooth_aux, has_aux=True)(x, y)
        np.testing.assert_allclose(jac, want, atol=1e-12)
        np.testing.assert_array_equal(aux, x ** 3)
    out, tangent, aux = sg.jvp(smooth_aux, (x, y), (np.ones(3), None), has_aux=True)
    np.testing.assert_allclose(tangent, want @ np.ones(3), atol=1e-12)
    np.testing.assert_array_equal(aux, x ** 3)
    with pytest.raises(sg.SrcgradError, match="pair"):
        sg.jvp(lambda_free_not_a_pair, (x,), (np.ones(3),), has_aux=True)


def lambda_free_not_a_pair(x):
    return np.sin(x) * 2.0


# ----- several outputs -----

def several(x, y):
    return np.sin(x) * y, {"s": np.sum(x * y), "l": [x[0] * 2.0, np.outer(x, y)]}


def test_the_jacobian_of_several_outputs_has_their_structure_as_jax_gives():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=3), rng.normal(size=3)
    want = {}
    for k, arg in ((0, x), (1, y)):
        def g(v, k=k):
            args = [x, y]
            args[k] = v
            return flat(several(*args))
        want[k] = fd(g, arg)
    for api in (sg.jacfwd, sg.jacrev):
        jac = api(several, wrt=(0, 1))(x, y)
        assert isinstance(jac, tuple) and isinstance(jac[1], dict) and isinstance(jac[1]["l"], list)
        assert jac[1]["l"][1][0].shape == (3, 3, 3) and jac[0][1].shape == (3, 3)
        for k in (0, 1):   # output leaves outside, the wrt tuple inside
            got = np.concatenate([np.reshape(part[k], (-1, 3)) for part in
                                  (jac[0], jac[1]["l"][0], jac[1]["l"][1], jac[1]["s"])])
            # flat() orders the output leaves sin, s, l0, l1 (the dict in insertion order)
            rows = np.concatenate([np.reshape(want[k][a:b], (-1, 3)) for a, b in
                                   ((0, 3), (4, 5), (5, 14), (3, 4))])
            np.testing.assert_allclose(got, rows, rtol=1e-6, atol=1e-9)


def returns_a_count(x):
    return np.sin(x), 3


def returns_a_label(x):
    return {"y": np.sin(x), "name": "label"}


@pytest.mark.parametrize("f", [returns_a_count, returns_a_label])
@pytest.mark.parametrize("api", [sg.jacfwd, sg.jacrev])
def test_an_output_that_is_not_a_float_is_refused_at_its_return_line(f, api):
    with pytest.raises(NonDifferentiableError) as info:
        api(f)(np.array([0.1, 0.2]))
    assert info.value.filename == __file__
    assert info.value.lineno == f.__code__.co_firstlineno + 1
    assert "not a float" in str(info.value)


# ----- the Hessian of a structure, batched -----

A = np.array([[2.0, 0.5, -1.0], [0.5, 3.0, 0.2], [-1.0, 0.2, 1.5]])
B = np.array([[1.0, -2.0], [0.3, 0.7], [0.0, 1.1]])


def quadratic(p, c):
    """0.5 a'Aa + a'B vec-ish(b) + sum(b ** 2) * c: H = [[A, B], [B', 2c I]] by hand."""
    return 0.5 * p["a"] @ A @ p["a"] + p["a"] @ B @ p["b"] + np.sum(p["b"] ** 2) * c, np.max(p["a"])


def test_the_hessian_of_a_dict_is_batched_over_all_its_leaves_and_hand_derived():
    p, c = {"a": np.array([0.2, -0.4, 1.0]), "b": np.array([0.7, -1.3])}, 1.7
    for chunk in (None, 1, 2, 4):
        hess, aux = sg.hessian(quadratic, has_aux=True, chunk_size=chunk)(p, c)
        assert aux == np.max(p["a"])
        np.testing.assert_allclose(hess["a"]["a"], A, atol=1e-12)
        np.testing.assert_allclose(hess["a"]["b"], B, atol=1e-12)
        np.testing.assert_allclose(hess["b"]["a"], B.T, atol=1e-12)
        np.testing.assert_allclose(hess["b"]["b"], 2 * c * np.eye(2), atol=1e-12)
    batched = hessians._batched_hessian_columns(quadratic, (p, c), (0,), 0, None, True)
    assert batched is not None, "the structure was not batched"
    loop = hessians._hessian_columns(quadratic, (p, c), (0,), 0, True)
    for got, want in zip(batched[0], loop[0]):
        np.testing.assert_allclose(got, want, atol=1e-12)
    assert batched[1] == loop[1] == np.max(p["a"])


def layered(params, w):
    """A list of dicts and an array: JAX's nested tuple of structures for wrt=(0, 1)."""
    h = np.tanh(params[0]["W"] @ w + params[0]["b"])
    return np.sum(params[1]["v"] * h ** 2) + np.sum(w ** 4)


def test_the_hessian_of_a_list_of_dicts_and_an_array_matches_finite_differences():
    rng = np.random.default_rng(5)
    params = [{"W": rng.normal(size=(2, 3)), "b": rng.normal(size=2)}, {"v": rng.normal(size=2)}]
    w = rng.normal(size=3)
    hess = sg.hessian(layered, wrt=(0, 1))(params, w)
    sizes = [6, 2, 2, 3]   # W, b, v; w
    # JAX's nesting: hess[0] has params' structure, each leaf the tuple (params-shaped, w's block)
    h0, h10 = pytree.tree_leaves(hess[0]), pytree.tree_leaves(hess[1][0])
    rows = [h0[4 * l:4 * l + 4] for l in range(3)] + [h10 + [hess[1][1]]]
    matrix = blocks(rows, sizes, sizes)
    grad = sg.grad(layered, wrt=(0, 1))

    def g(v):
        got = grad(unflat(params, v[:10]), v[10:])
        return flat(got)
    np.testing.assert_allclose(matrix, fd(g, np.concatenate([flat(params), w])), rtol=1e-6, atol=1e-8)
    assert hessians._batched_hessian_columns(layered, (params, w), (0, 1), 0, None) is not None


# ----- a generator's terms, popped by the gradient, read again -----

def generator_sum(w, x):
    """The gradient undoes the generator's ``terms.append`` with ``terms.pop()``: read
    again, that pop is a tape pop (pipeline._TapeMethods) forward and reverse mode follow."""
    total = sum(np.sum(np.sin(w * x[i]) ** 2) for i in range(3))
    return total * np.sum(w)


def test_the_gradient_of_a_generator_sum_is_differentiated_again():
    rng = np.random.default_rng(6)
    w, x, v = rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=3)
    first = sg.grad(generator_sum)
    want = fd(lambda u: np.array([first(u, x) @ v]), w)[0]
    np.testing.assert_allclose(sg.grad(first)(w, x, grad_outputs=v), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sg.hessian(generator_sum)(w, x) @ v, want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sg.hvp(generator_sum, (w, x), (v, None), wrt=0)[0], want,
                               rtol=1e-6, atol=1e-9)


def test_jvp_with_jit_and_has_aux_runs_numpy_with_a_warning_and_the_same_numbers():
    from srcgrad.jit import JitFallbackWarning

    def with_aux(x):
        return np.sum(np.sin(x) * x), np.max(x)

    x, v = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -0.25])
    want = sg.jvp(with_aux, (x,), (v,), has_aux=True)
    with pytest.warns(JitFallbackWarning, match="has_aux"):
        got = sg.jvp(with_aux, (x,), (v,), has_aux=True, jit=True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
