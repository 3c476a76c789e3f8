"""A Jacobian of a Jacobian (``jacfwd(jacrev(f))`` and the three other spellings) is the
second derivative of ``f``, as JAX defines it: shape ``out + a + b``, the inner
Jacobian's structure outside. Checked against a hand-derived tensor and against central
differences of the inner Jacobian (float64), with dicts, two arguments, tuple ``wrt``,
float32, and a scalar ``f`` (where it is ``sg.hessian``); a third derivative is refused."""

import functools

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree

RNG = np.random.default_rng(7)
X = np.array([0.7, -1.2, 0.5])
JACS = {"jacfwd": sg.jacfwd, "jacrev": sg.jacrev}
PAIRS = [(outer, inner) for outer in JACS for inner in JACS]


def three(x):
    return np.concatenate([np.array([np.sum(x ** 3), np.prod(x)]), np.sin(x) * x[0]])


def three_by_hand(x):
    """d2 three / dx dx: 6 x on the diagonal; prod(x) / (x_i x_j) off it; for
    g_k = sin(x_k) x_0: -sin(x_k) x_0 at (k, k), cos(x_k) at (k, 0) and (0, k)."""
    n = x.size
    t = np.zeros((2 + n, n, n))
    t[0] = np.diag(6 * x)
    t[1] = np.prod(x) / np.outer(x, x)
    t[1][np.diag_indices(n)] = 0.0
    for k in range(n):
        t[2 + k, k, k] += -np.sin(x[k]) * x[0]
        t[2 + k, k, 0] += np.cos(x[k])
        t[2 + k, 0, k] += np.cos(x[k])
    return t


def params_and_data(p, y):
    """A dict argument and an array; a dict output holding a vector and a scalar."""
    return {"v": np.tanh(p["w"] * y) * p["b"][0], "s": np.sum(p["w"] ** 2 * p["b"][1]) * y[0]}


def scalar(p, y):
    return np.sum(np.sin(p["w"] * y) * p["b"][0] ** 2) + np.sum(y ** 3) * p["b"][1]


P = {"w": RNG.standard_normal(3), "b": RNG.standard_normal(2)}
Y = RNG.standard_normal(3)


def _leaves(value):
    return pytree.tree_leaves(value) if pytree.is_node(value) else [value]


def _rebuild(like, leaves):
    return pytree.rebuild(like, iter(leaves)) if pytree.is_node(like) else leaves[0]


def central_jacobian(g, args, wrt, h=1e-6):
    """JAX's Jacobian of ``g`` (any structure of outputs) along ``wrt`` by central
    differences: the output's structure outside, the tuple over ``wrt``, each argument's
    structure inside, blocks ``out_leaf.shape + arg_leaf.shape``."""
    many = isinstance(wrt, tuple)
    out = g(*args)
    outs = _leaves(out)
    per_position = []
    for k in (wrt if many else (wrt,)):
        leaves = [np.array(v, dtype=np.float64) for v in _leaves(args[k])]
        blocks = [[None] * len(leaves) for _ in outs]
        for l, leaf in enumerate(leaves):
            columns = []
            for n in range(leaf.size):
                sides = []
                for step in (h, -h):
                    moved = [v.copy() for v in leaves]
                    moved[l].reshape(-1)[n] += step
                    a = list(args)
                    a[k] = _rebuild(args[k], moved)
                    sides.append(_leaves(g(*a)))
                columns.append([(np.asarray(p) - np.asarray(m)) / (2 * h) for p, m in zip(*sides)])
            for o, leaf_out in enumerate(outs):
                stacked = np.array([c[o] for c in columns]).reshape((leaf.size,) + np.shape(leaf_out))
                blocks[o][l] = np.moveaxis(stacked, 0, -1).reshape(np.shape(leaf_out) + leaf.shape)
        per_position.append([_rebuild(args[k], blocks[o]) for o in range(len(outs))])
    per_leaf = [tuple(p[o] for p in per_position) if many else per_position[0][o]
                for o in range(len(outs))]
    return _rebuild(out, per_leaf)


def assert_same_tree(got, want, rtol, atol):
    """The same nesting (classes, dict keys, lengths) and close leaves of the same shape."""
    assert type(got) is type(want) or not (pytree.is_node(got) or pytree.is_node(want)), \
        (type(got), type(want))
    if isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            assert_same_tree(got[k], want[k], rtol, atol)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert_same_tree(a, b, rtol, atol)
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_each_jacobian_of_a_jacobian_is_the_hand_derived_second_derivative(outer, inner):
    got = JACS[outer](JACS[inner](three))(X)
    assert got.shape == (5, 3, 3) and got.dtype == np.float64
    np.testing.assert_allclose(got, three_by_hand(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, central_jacobian(JACS[inner](three), (X,), 0),
                               rtol=1e-6, atol=1e-8)


def test_the_hessian_of_a_vector_valued_function_is_out_plus_in_plus_in():
    np.testing.assert_allclose(sg.hessian(three)(X), three_by_hand(X), rtol=1e-12, atol=1e-12)
    got = sg.hessian(params_and_data, wrt=(0, 1))(P, Y)
    assert_same_tree(got, sg.jacfwd(sg.jacrev(params_and_data, wrt=(0, 1)), wrt=(0, 1))(P, Y),
                     rtol=0, atol=0)
    assert got["s"][1][0]["w"].shape == (3, 3)   # out () + y (3,) + w (3,)


@pytest.mark.parametrize("outer, inner", PAIRS)
@pytest.mark.parametrize("inner_wrt, outer_wrt", [(0, 1), ((0, 1), 1), (0, (0, 1)), ((1, 0), (0, 1))])
def test_dict_arguments_two_arguments_and_wrt_tuples_give_jax_nesting(outer, inner, inner_wrt,
                                                                       outer_wrt):
    jac = JACS[inner](params_and_data, wrt=inner_wrt)
    got = JACS[outer](jac, wrt=outer_wrt)(P, Y)
    assert_same_tree(got, central_jacobian(jac, (P, Y), outer_wrt), rtol=1e-6, atol=1e-8)


def test_the_nesting_is_the_inner_jacobians_result_outside_then_the_outer_one():
    got = sg.jacrev(sg.jacfwd(params_and_data, wrt=(0, 1)), wrt=(1, 0))(P, Y)
    # out "v" (3,), inner wrt tuple [0] -> p's dict ["w"] (3,), outer tuple [1] -> p's dict ["b"]
    assert got["v"][0]["w"][1]["b"].shape == (3, 3, 2)
    assert got["v"][1][0].shape == (3, 3, 3)   # d2 v / dy dy
    # v_i = tanh(w_i y_i) b_0: d2 v_i / dw_i db_0 = y_i (1 - tanh^2(w_i y_i))
    want = np.zeros((3, 3, 2))
    for i in range(3):
        want[i, i, 0] = Y[i] * (1 - np.tanh(P["w"][i] * Y[i]) ** 2)
    np.testing.assert_allclose(got["v"][0]["w"][1]["b"], want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_a_scalar_function_gives_its_hessian(outer, inner):
    assert_same_tree(JACS[outer](JACS[inner](scalar))(P, Y), sg.hessian(scalar)(P, Y),
                     rtol=1e-12, atol=1e-14)
    x, y = Y, RNG.standard_normal(3)
    two = lambda a, b: np.sum(np.sin(a * b) * a ** 2)  # noqa: E731
    assert_same_tree(JACS[outer](JACS[inner](two, wrt=(0, 1)), wrt=(0, 1))(x, y),
                     sg.hessian(two, wrt=(0, 1))(x, y), rtol=1e-12, atol=1e-14)
    # a tuple wrt over a dict: JAX's nesting H[i][k1][j][k2] in both
    assert_same_tree(JACS[outer](JACS[inner](scalar, wrt=(0, 1)), wrt=(0, 1))(P, Y),
                     sg.hessian(scalar, wrt=(0, 1))(P, Y), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_float32_stays_float32(outer, inner):
    got = JACS[outer](JACS[inner](three))(X.astype(np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, three_by_hand(X), rtol=1e-5, atol=1e-5)
    mixed = JACS[outer](JACS[inner](lambda x, y: x * y ** 2, wrt=(0, 1)), wrt=1)(
        X.astype(np.float32), Y)
    assert mixed[0].dtype == np.float64 and mixed[1].dtype == np.float64


def test_has_aux_on_both_gives_the_aux_and_on_one_only_is_a_type_error():
    def with_aux(x):
        return three(x), {"norm": np.sum(x ** 2)}
    got, aux = sg.jacfwd(sg.jacrev(with_aux, has_aux=True), has_aux=True)(X)
    np.testing.assert_allclose(got, three_by_hand(X), rtol=1e-12, atol=1e-12)
    assert aux == {"norm": np.sum(X ** 2)}
    with pytest.raises(TypeError, match="has_aux=True"):
        sg.jacfwd(sg.jacrev(with_aux, has_aux=True))
    with pytest.raises(TypeError, match="has_aux=True"):
        sg.jacrev(sg.jacfwd(three), has_aux=True)


def test_bound_arguments_keywords_and_a_primitive():
    scaled = functools.partial(params_and_data, y=Y)
    assert_same_tree(sg.jacfwd(sg.jacrev(scaled))(P), sg.jacfwd(sg.jacrev(params_and_data))(P, Y),
                     rtol=0, atol=0)
    assert_same_tree(sg.jacrev(sg.jacrev(params_and_data, wrt=1), wrt=1)(P, y=Y),
                     sg.jacrev(sg.jacrev(params_and_data, wrt=1), wrt=1)(P, Y), rtol=0, atol=0)
    np.testing.assert_allclose(sg.jacfwd(sg.jacrev(np.sin))(X),
                               np.einsum("ij,jk->ijk", np.diag(-np.sin(X)), np.eye(3)), atol=1e-15)


def sines(x):
    return np.sum(np.sin(x) * x ** 2)


def test_a_jacobian_of_a_jacobian_of_a_gradient_is_the_third_derivative_from_code():
    want = central_jacobian(sg.hessian(sines), (X,), 0)
    np.testing.assert_allclose(sg.jacfwd(sg.jacrev(sg.grad(sines)))(X), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.hessian(sg.grad(sines))(X), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("make", [lambda: sg.jacfwd(sg.jacfwd(sg.jacrev(three))),
                                  lambda: sg.jacrev(sg.jacfwd(sg.jacrev(three))),
                                  lambda: sg.hessian(sg.jacrev(three)),
                                  lambda: sg.jacfwd(sg.hessian(three))])
def test_a_third_derivative_of_assembled_jacobians_is_refused_at_the_users_function(make):
    with pytest.raises(sg.UnsupportedError, match="third derivative of three") as info:
        make()(X)
    assert info.value.filename == __file__
    assert info.value.lineno == three.__code__.co_firstlineno
    assert "sg.jacfwd(sg.jacrev(sg.grad(f)))" in str(info.value)


def test_a_wrapper_copying_the_jacobians_attributes_is_not_read_as_one():
    """``functools.wraps`` copies ``__dict__``: a wrapper that computes 2 J is refused as
    source, never taken for the Jacobian it wraps."""
    jac = sg.jacrev(three)

    @functools.wraps(jac)
    def doubled(x):
        return 2.0 * jac(x)

    with pytest.raises(sg.UnsupportedError, match="not source srcgrad can differentiate again"):
        sg.jacfwd(doubled)(X)


def test_the_gradient_of_a_sum_of_a_gradient():
    def f(x):
        return np.sum(np.sin(x) * x ** 2)

    np.testing.assert_allclose(sg.grad(lambda x: sg.grad(f)(x).sum())(X),
                               sg.hessian(f)(X).sum(axis=0), rtol=1e-12)


def test_jvp_of_a_jacobian_is_its_directional_derivative():
    v = RNG.standard_normal(3)
    jac, tangent = sg.jvp(sg.jacrev(three), (X,), (v,))
    np.testing.assert_allclose(jac, sg.jacrev(three)(X), rtol=0, atol=0)
    np.testing.assert_allclose(tangent, three_by_hand(X) @ v, rtol=1e-12, atol=1e-12)
    made = sg.jacfwd(params_and_data, wrt=(0, 1))
    dP = {"w": RNG.standard_normal(3), "b": RNG.standard_normal(2)}
    dY = RNG.standard_normal(3)
    _, tangent = sg.jvp(made, (P, Y), (dP, dY))
    line = lambda t: made({k: P[k] + t * dP[k] for k in P}, Y + t * dY)  # noqa: E731
    assert_same_tree(tangent, central_jacobian(line, (0.0,), 0), rtol=1e-6, atol=1e-8)


def test_jvp_of_a_second_derivative_or_a_backward_is_refused():
    with pytest.raises(sg.UnsupportedError, match="third derivative of three"):
        sg.jvp(sg.hessian(three), (X,), (X,))
    out, backward = sg.vjp(three)(X)
    with pytest.raises(sg.UnsupportedError, match="callable Backward object, not a function"):
        sg.jvp(backward, (X,), (np.ones(5),))
