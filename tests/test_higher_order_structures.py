"""Forward mode and higher orders at the structures users write (dict / list / tuple /
dataclass parameters): the JAX idioms for PINNs and Hessians, through every order.

A gradient of a gradient at a structure is taken over the structure's leaves
(srcgrad/leaf_towers.py); each result is checked against central differences in float64
of a lower derivative srcgrad computes (itself checked against differences of the
function), and against the same derivative with the leaves passed as separate arrays.
"""

import dataclasses

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree
from srcgrad.testing import numerical_grad

from adversarial_checks import assert_refused_in

RNG = np.random.default_rng(14)
A, B, C = (RNG.standard_normal(4) for _ in range(3))
X = 0.3


def net(p, x):
    h = np.tanh(p['w1'] * x + p['b1'])
    return np.sum(p['w2'] * h)


def net_leaves(w1, b1, w2, x):
    return np.sum(w2 * np.tanh(w1 * x + b1))


@dataclasses.dataclass
class Params:
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray


def net_dataclass(p, x):
    return np.sum(p.w2 * np.tanh(p.w1 * x + p.b1))


def net_list(p, x):
    return np.sum(p[2] * np.tanh(p[0] * x + p[1]))


def net_aux(p, x):
    h = np.tanh(p['w1'] * x + p['b1'])
    return np.sum(p['w2'] * h), np.sum(h ** 2)


def params():
    return {'w1': A.copy(), 'b1': B.copy(), 'w2': C.copy()}


STRUCTURES = [(net, params), (net_dataclass, lambda: Params(A.copy(), B.copy(), C.copy())),
              (net_list, lambda: [A.copy(), B.copy(), C.copy()]),
              (net_list, lambda: (A.copy(), B.copy(), C.copy()))]


def leaves(tree):
    return np.concatenate([np.ravel(leaf) for leaf in pytree.tree_leaves(tree)])


def along(p, t, s):
    return pytree.rebuild(p, iter([a + s * b for a, b in zip(pytree.tree_leaves(p),
                                                            pytree.tree_leaves(t))]))


def fd_along(f, p, x, tp, tx, h=1e-6):
    """Central difference of ``f(p, x)`` (a value or a structure) along ``(tp, tx)``."""
    plus, minus = f(along(p, tp, h), x + h * tx), f(along(p, tp, -h), x - h * tx)
    if pytree.is_node(plus):
        return pytree.rebuild(plus, iter([(a - b) / (2 * h) for a, b in zip(
            pytree.tree_leaves(plus), pytree.tree_leaves(minus))]))
    return (plus - minus) / (2 * h)


def close(got, want, rtol=1e-6, atol=1e-8):
    if pytree.is_node(want):
        assert type(got) is type(want)
        got, want = leaves(got), leaves(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# The repro of the PINN: du, uxx made at module level, a loss calling uxx(p, x)
du = sg.grad(net, wrt=1)
uxx = sg.grad(du, wrt=1)


def pinn_loss(p, x):
    return (uxx(p, x) + np.sin(x)) ** 2


def pinn_loss_alias(p, x):   # JAX's spelling inside the loss: a local alias, then grad of it
    d = sg.grad(net, wrt=1)
    return (sg.grad(d, wrt=1)(p, x) + np.sin(x)) ** 2


def pinn_loss_inline(p, x):
    return (sg.grad(sg.grad(net, wrt=1), wrt=1)(p, x) + np.sin(x)) ** 2


def pinn_loss_chain(p, x):   # two local aliases, the second of the first
    d = sg.grad(net, wrt=1)
    dd = sg.grad(d, wrt=1)
    return (dd(p, x) + np.sin(x)) ** 2


def pinn_loss_hessian(p, x):   # sg.hessian called inside: its rows of gradients
    return (sg.hessian(net, wrt=1)(p, x) + np.sin(x)) ** 2


def pinn_loss_leaves(w1, b1, w2, x):
    return (sg.grad(sg.grad(net_leaves, wrt=3), wrt=3)(w1, b1, w2, x) + np.sin(x)) ** 2


@pytest.mark.parametrize("loss", [pinn_loss, pinn_loss_alias, pinn_loss_inline, pinn_loss_chain,
                                  pinn_loss_hessian])
def test_a_pinn_loss_of_a_dict_through_the_second_derivative_in_x(loss):
    p = params()
    got_p, got_x = sg.grad(loss, wrt=(0, 1))(p, X)
    want = sg.grad(pinn_loss_leaves, wrt=(0, 1, 2, 3))(A, B, C, X)   # the same, on arrays
    close(got_p, {'w1': want[0], 'b1': want[1], 'w2': want[2]}, rtol=1e-12, atol=1e-14)
    close(got_x, want[3], rtol=1e-12)
    close(got_p, numerical_grad(loss, (params(), X), wrt=0))
    close(got_x, numerical_grad(loss, (params(), X), wrt=1))


@pytest.mark.parametrize("f, make", STRUCTURES)
def test_a_third_derivative_through_a_dataclass_list_or_tuple(f, make):
    second = sg.grad(sg.grad(f, wrt=1), wrt=1)

    def loss(p, x):
        return (second(p, x) + np.sin(x)) ** 2
    got = sg.grad(loss)(make(), X)
    assert type(got) is type(make())
    close(got, numerical_grad(loss, (make(), X), wrt=0))
    third = sg.grad(second, wrt=1)(make(), X)   # at the top level too
    close(third, numerical_grad(second, (make(), X), wrt=1))


def test_hvp_and_jvp_of_a_gradient_at_a_dict():
    p, tp = params(), {k: RNG.standard_normal(4) for k in 'w1 b1 w2'.split()}
    dp, dx = sg.hvp(du, (p, X), (tp, 0.7))   # a third derivative of net
    close(dx, fd_along(uxx, p, X, tp, 0.7))
    close(dp, fd_along(sg.grad(du, wrt=0), p, X, tp, 0.7))
    value, tangent = sg.jvp(uxx, (p, X), (tp, 0.7))
    close(value, uxx(p, X), rtol=1e-14)
    close(tangent, fd_along(uxx, p, X, tp, 0.7))
    value, tangent = sg.jvp(sg.grad(net), (p, X), (tp, 0.7))   # jvp of grad: an hvp, a dict
    close(value, sg.grad(net)(p, X), rtol=1e-14)
    close(tangent, fd_along(sg.grad(net), p, X, tp, 0.7))


def d_loss(p, x):   # a first derivative called inside: the loss's Hessian is a third of net
    return (du(p, x) + np.sin(x)) ** 2


def test_second_derivatives_of_a_loss_calling_a_gradient_of_a_dict():
    p, tp = params(), {k: RNG.standard_normal(4) for k in 'w1 b1 w2'.split()}
    g = sg.grad(d_loss, wrt=(0, 1))
    close(sg.grad(sg.grad(d_loss, wrt=1), wrt=1)(p, X), numerical_grad(
        lambda p, x: g(p, x)[1], (p, X), wrt=1))
    hp = sg.hvp(d_loss, (p, X), (tp, 0.7))
    close(hp[0], fd_along(lambda p, x: g(p, x)[0], p, X, tp, 0.7))
    close(hp[1], fd_along(lambda p, x: g(p, x)[1], p, X, tp, 0.7))
    hess = sg.hessian(d_loss)(p, X)   # JAX's layout: H[a][b], leaf a's shape + leaf b's
    assert set(hess) == set(p) and all(set(row) == set(p) for row in hess.values())
    for b in p:   # column b: differences of the gradient along leaf b's basis
        for j in range(4):
            e = {k: np.eye(4)[j] * (k == b) for k in p}
            column = fd_along(lambda p, x: g(p, x)[0], p, X, e, 0.0)
            for a in p:
                close(hess[a][b][:, j], column[a], rtol=1e-5, atol=1e-7)


def test_has_aux_through_the_third_order_at_a_dict():
    p = params()
    d_aux = sg.grad(net_aux, wrt=1, has_aux=True)
    second = sg.grad(d_aux, wrt=1, has_aux=True)

    def first(p, x):
        d, aux = d_aux(p, x)
        return d ** 2 + aux

    def third(p, x):
        d, aux = second(p, x)
        return d * aux
    close(sg.grad(first)(p, X), numerical_grad(first, (params(), X)))
    close(sg.grad(sg.grad(first, wrt=1), wrt=1)(p, X),
          numerical_grad(sg.grad(first, wrt=1), (params(), X), wrt=1))
    close(sg.grad(third)(p, X), numerical_grad(third, (params(), X)))
    close(sg.grad(third, wrt=1)(p, X), numerical_grad(third, (params(), X), wrt=1))
    tp = {k: np.ones(4) for k in p}
    value, tangent, aux = sg.jvp(d_aux, (p, X), (tp, 0.5), has_aux=True)
    close((value, aux), d_aux(p, X), rtol=1e-14)
    close(tangent, fd_along(lambda p, x: d_aux(p, x)[0], p, X, tp, 0.5))
    products, aux = sg.hvp(d_aux, (p, X), (tp, 0.5), has_aux=True)   # a third of net_aux
    close(aux, d_aux(p, X)[1], rtol=1e-14)
    close(products[1], fd_along(lambda p, x: second(p, x)[0], p, X, tp, 0.5))
    jac, aux = sg.jacrev(second, has_aux=True)(p, X)
    close(jac, numerical_grad(lambda p, x: second(p, x)[0], (params(), X)))


def test_jacfwd_and_jacrev_of_a_gradient_at_a_dict_are_the_hessian_blocks():
    p = params()
    hess = sg.hessian(net)(p, X)
    for jac in (sg.jacfwd, sg.jacrev):
        blocks = jac(sg.grad(net))(p, X)
        for a in p:
            for b in p:
                close(blocks[a][b], hess[a][b], rtol=1e-10, atol=1e-12)
    g = sg.grad(net)
    for b in p:
        e = {k: np.eye(4)[1] * (k == b) for k in p}
        column = fd_along(g, p, X, e, 0.0)
        for a in p:
            close(hess[a][b][:, 1], column[a])


@pytest.mark.slow
def test_the_hessian_of_a_gradient_at_a_dict_is_a_third_derivative():
    p = params()
    h = sg.hessian(du)(p, X)
    g = sg.grad(du)
    for b in p:
        e = {k: np.eye(4)[2] * (k == b) for k in p}
        column = fd_along(g, p, X, e, 0.0)
        for a in p:
            close(h[a][b][:, 2], column[a])


class Registered:
    def __init__(self, w):
        self.w = w


sg.register_pytree_node(Registered, lambda r: ((r.w,), None), lambda aux, kids: Registered(*kids))


def net_registered(p, x):
    return np.sum(np.tanh(p.w * x))


def test_a_registered_class_through_a_third_derivative_is_refused_at_the_function():
    second = sg.grad(sg.grad(net_registered, wrt=1), wrt=1)

    def loss(p, x):
        return second(p, x) ** 2
    assert_refused_in(__file__, lambda: sg.grad(loss)(Registered(A.copy()), X),
                      "Registered", "leaves")


def test_arrays_take_no_leaf_tower():
    from srcgrad import leaf_towers
    leaf_towers._towers.clear()
    got = sg.grad(pinn_loss_leaves, wrt=3)(A, B, C, X)
    assert not leaf_towers._towers   # the composed code, as before
    close(got, numerical_grad(pinn_loss_leaves, (A, B, C, X), wrt=3))
    sg.grad(pinn_loss)(params(), X)
    assert leaf_towers._towers


@pytest.mark.parametrize("f, make", STRUCTURES)
def test_grad_hessian_jvp_hvp_and_grad_of_grad_of_a_structure(f, make):
    """The family at second order, for each structure: the Hessian is JAX's nested blocks
    (the structure of structures, leaf a's shape + leaf b's)."""
    p, tp = make(), pytree.rebuild(make(), iter(RNG.standard_normal(4) for _ in range(3)))
    g = sg.grad(f)
    close(g(p, X), numerical_grad(f, (make(), X)))
    value, tangent = sg.jvp(f, (p, X), (tp, 0.4))
    close(tangent, fd_along(f, p, X, tp, 0.4))
    close(sg.hvp(f, (p, X), (tp, 0.4))[0], fd_along(g, p, X, tp, 0.4))
    hess = sg.hessian(f)(p, X)
    assert type(hess) is type(p) and all(type(row) is type(p) for _, row in pytree.children(hess))
    blocks = pytree.tree_leaves(hess)
    dense = np.block([[blocks[3 * a + b] for b in range(3)] for a in range(3)])
    columns = [leaves(fd_along(g, p, X, pytree.rebuild(p, iter(
        [np.eye(4)[j] * (k == b) for k in range(3)])), 0.0)) for b in range(3) for j in range(4)]
    np.testing.assert_allclose(dense, np.stack(columns, axis=1), rtol=1e-5, atol=1e-7)
    cross = sg.grad(sg.grad(f, wrt=1), wrt=0)(p, X)   # d/dp of du/dx: a structure
    close(cross, numerical_grad(sg.grad(f, wrt=1), (make(), X), wrt=0))


def third_loss(p, x):   # sg.hessian of a local gradient alias inside: u_xxx, through a dict
    d = sg.grad(net, wrt=1)
    return sg.hessian(d, wrt=1)(p, x) ** 2


def third_loss_leaves(w1, b1, w2, x):
    d = sg.grad(net_leaves, wrt=3)
    return sg.hessian(d, wrt=3)(w1, b1, w2, x) ** 2


@pytest.mark.slow
def test_the_hessian_of_a_gradient_alias_inside_a_loss_of_a_dict():
    got = sg.grad(third_loss)(params(), X)
    want = sg.grad(third_loss_leaves, wrt=(0, 1, 2))(A, B, C, X)
    close(got, {'w1': want[0], 'b1': want[1], 'w2': want[2]}, rtol=1e-12, atol=1e-12)
    close(got, numerical_grad(third_loss, (params(), X)), rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_jacobians_of_a_second_derivative_at_a_dict_and_a_fourth_order():
    p = params()
    want = numerical_grad(uxx, (params(), X))
    for jac in (sg.jacfwd, sg.jacrev):
        close(jac(uxx)(p, X), want)
    close(sg.jacrev(uxx, wrt=1)(p, X), numerical_grad(uxx, (params(), X), wrt=1))
    outer = sg.grad(pinn_loss, wrt=1)   # the loss's derivative in x: a fourth of net
    close(sg.grad(outer, wrt=1)(p, X), numerical_grad(outer, (params(), X), wrt=1))


def mlp(p, x):
    return np.sum(p['w2'] * np.tanh(p['W1'] @ x + p['b1']))


def laplace_residual(p, x):   # JAX's PINN: the Laplacian by sg.hessian inside the loss
    return (np.trace(sg.hessian(mlp, wrt=1)(p, x)) - np.sum(x)) ** 2


def laplace_residual_jacfwd(p, x):   # jacfwd of a local gradient alias
    d = sg.grad(mlp, wrt=1)
    return (np.trace(sg.jacfwd(d, wrt=1)(p, x)) - np.sum(x)) ** 2


@pytest.mark.parametrize("loss", [laplace_residual, laplace_residual_jacfwd])
def test_a_laplacian_residual_of_a_dict_of_layers(loss):
    rng = np.random.default_rng(2)
    p = {'W1': rng.standard_normal((3, 2)), 'b1': rng.standard_normal(3), 'w2': rng.standard_normal(3)}
    x = np.array([0.3, -0.2])
    got = sg.grad(loss)(p, x)
    close(got, numerical_grad(loss, (p, x)), rtol=1e-6, atol=1e-7)


def pair_energy(t, x):
    return np.sum(t[0] * np.tanh(t[1] * x)) + np.sum(t[0] ** 2 * t[1]) * x


pair_force = sg.grad(pair_energy)   # of one tuple argument: a tuple of two gradients


def pair_loss(t, x):
    g = pair_force(t, x)
    return np.sum(g[0] ** 2) + np.sum(g[1] * g[0]) * x


def test_a_third_derivative_through_the_gradient_of_a_tuple_argument():
    t = (RNG.standard_normal(3), RNG.standard_normal(3))
    first = sg.grad(pair_loss, wrt=1)
    close(sg.grad(first, wrt=1)(t, X), numerical_grad(first, (t, X), wrt=1))
    g_t = sg.grad(pair_loss)

    def weighted(t, x):
        g = g_t(t, x)
        return np.sum(g[0] * C[:3]) + np.sum(g[1] * A[:3])
    got = sg.grad(weighted)(t, X)
    assert type(got) is tuple
    close(got, numerical_grad(weighted, (t, X)))
