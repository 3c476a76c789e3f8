"""Python as people write it (issue 12): idioms a NumPy/JAX user writes without
thinking, each differentiated as Python evaluates it, or refused with a message
that says how to write it instead."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import GradcheckError, UnsupportedError
from srcgrad.testing import numerical_grad

RNG = np.random.default_rng(12)


# ----- A Python list where an array is expected: the pytree rule -----

def sum_of_sines(xs):
    return np.sum(np.sin(xs))


def weighted(xs):
    return np.sum(xs[0] * np.sin(xs[1]))


def test_a_list_of_floats_passed_where_an_array_is_expected_gets_a_list_gradient():
    xs = [1.0, 2.0]
    grads = sg.grad(sum_of_sines)(xs)
    # The pytree rule (as in JAX): a list in, a list of the leaves' gradients out.
    assert isinstance(grads, list) and len(grads) == 2
    np.testing.assert_allclose(grads, np.cos(xs), rtol=1e-12)
    np.testing.assert_allclose(grads, numerical_grad(sum_of_sines, (xs,)), rtol=1e-6)


def test_a_list_of_arrays_indexed_inside_gets_a_list_of_array_gradients():
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    da, db = sg.grad(weighted)([a, b])
    np.testing.assert_allclose(da, np.sin(b), rtol=1e-12)
    np.testing.assert_allclose(db, a * np.cos(b), rtol=1e-12)


# ----- gradcheck on structures, and with has_aux -----

def structured_loss(p, x):
    h = np.tanh(x @ p["layers"][0]["W"] + p["layers"][0]["b"])
    return np.sum((h @ p["out"]) ** 2) * p["scale"]


def structured_loss_with_aux(p, x):
    loss = structured_loss(p, x)
    return loss, {"loss": loss, "positive": np.mean(x > 0)}


def structured_params():
    return {"layers": [{"W": RNG.standard_normal((3, 4)), "b": RNG.standard_normal(4)}],
            "out": RNG.standard_normal(4), "scale": 0.7}


def test_gradcheck_accepts_a_nested_dict_of_lists_of_arrays_and_floats():
    assert sg.gradcheck(structured_loss, (structured_params(), RNG.standard_normal((5, 3))))


def test_gradcheck_accepts_has_aux_and_checks_only_the_output():
    args = (structured_params(), RNG.standard_normal((5, 3)))
    assert sg.gradcheck(structured_loss_with_aux, args, has_aux=True)


class WrongSquare(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * x          # should be 2 * x


def wrong_with_aux(p, x):
    loss = np.sum(WrongSquare.apply(x @ p["w"]))
    return loss, np.mean(x)


def test_gradcheck_with_has_aux_still_catches_a_wrong_gradient():
    args = ({"w": RNG.standard_normal(3)}, RNG.standard_normal((5, 3)))
    with pytest.raises(GradcheckError, match=r"\['w'\]"):
        sg.gradcheck(wrong_with_aux, args, has_aux=True)


# ----- `and` / `or` used to pick a value -----

def scale_or_default(x, s):
    scale = s or 1.0
    return np.sum(x * scale)


def first_falsy(a, b):
    y = a and b
    return y * 3.0 + y * y


def chained_or(a, b, c):
    return (a or b or c) ** 2


def condition_and_value(x, y, s):
    return (s > 0 and x) or y


def or_of_a_call(x, s):
    # The left operand is evaluated once, and the right one only when it is picked.
    return np.sin(s * 2.0) or np.sum(x)


@pytest.mark.parametrize("s", [2.5, 0.0])
def test_or_picks_the_first_truthy_operand_and_differentiates_the_one_it_returns(s):
    x = RNG.standard_normal(3)
    dx, ds = sg.grad(scale_or_default, wrt=(0, 1))(x, s)
    # By hand: s or 1.0 is s when s is truthy; the default 1.0 carries no gradient.
    np.testing.assert_allclose(dx, np.full(3, s if s else 1.0), rtol=1e-12)
    assert ds == pytest.approx(np.sum(x) if s else 0.0, rel=1e-12)
    assert sg.gradcheck(scale_or_default, (x, s), wrt=(0, 1)) if s else True


@pytest.mark.parametrize("a, b", [(2.0, -1.5), (0.0, -1.5), (-0.5, 0.0)])
def test_and_returns_the_first_falsy_operand_or_the_last(a, b):
    da, db = sg.grad(first_falsy, wrt=(0, 1))(a, b)
    picked = b if a else a
    slope = 3.0 + 2.0 * picked
    assert (da, db) == pytest.approx((0.0 if a else slope, slope if a else 0.0), rel=1e-12)
    if a:   # away from the jump (at a == 0 the picked operand switches)
        assert sg.gradcheck(first_falsy, (a, b), wrt=(0, 1))


@pytest.mark.parametrize("args", [(1.5, 2.0, 3.0), (0.0, -2.0, 3.0), (0.0, 0.0, 4.0)])
def test_a_chain_of_or_differentiates_the_operand_python_returns(args):
    grads = sg.grad(chained_or, wrt=(0, 1, 2))(*args)
    k = next((i for i, v in enumerate(args) if v), 2)
    expected = [0.0, 0.0, 0.0]
    expected[k] = 2.0 * args[k]
    assert grads == pytest.approx(tuple(expected), rel=1e-12)


@pytest.mark.parametrize("s", [1.0, -1.0])
def test_a_condition_and_a_value_picks_the_value_or_the_alternative(s):
    x, y = 1.5, -2.0
    dx, dy = sg.grad(condition_and_value, wrt=(0, 1))(x, y, s)
    assert (dx, dy) == ((1.0, 0.0) if s > 0 else (0.0, 1.0))
    assert sg.gradcheck(condition_and_value, (x, y, s), wrt=(0, 1))


@pytest.mark.parametrize("s", [0.3, 0.0])
def test_or_evaluates_its_left_operand_once_and_its_right_only_when_picked(s):
    x = RNG.standard_normal(3)
    dx, ds = sg.grad(or_of_a_call, wrt=(0, 1))(x, s)
    np.testing.assert_array_equal(dx, np.zeros(3) if s else np.ones(3))
    assert ds == pytest.approx(2.0 * np.cos(2.0 * s) if s else 0.0, rel=1e-12)
    if s:   # at s == 0 the picked operand switches: no finite difference there
        assert sg.gradcheck(or_of_a_call, (x, s), wrt=(0, 1))
    forward = sg.source(or_of_a_call, wrt=(0, 1)).split("def or_of_a_call_backward")[0]
    code = [line for line in forward.splitlines() if not line.strip().startswith("#")]
    assert sum(line.count("np.sin(") for line in code) == 1
    assert any(line.strip().startswith("if ") for line in code)


# ----- Recursion: refused at the recursive call, with the loop to write instead -----

def tree(x, depth):
    return x if depth == 0 else tree(np.sin(x), depth - 1) * x


def tree_as_a_loop(x, depth):
    xs = []
    for _ in range(depth):
        xs.append(x)
        x = np.sin(x)
    for v in reversed(xs):
        x = x * v
    return x


def even(x, n):
    if n == 0:
        return x
    return odd(x * 2.0, n - 1)


def odd(x, n):
    return even(np.sin(x), n - 1) if n > 0 else x


def test_recursion_is_refused_at_the_recursive_call_with_a_loop_to_write_instead():
    with pytest.raises(UnsupportedError) as info:
        sg.grad(tree)(0.5, 3)
    error = info.value
    line = "    return x if depth == 0 else tree(np.sin(x), depth - 1) * x"
    assert error.filename == __file__ and error.source_line == line
    assert error.col_offset == line.index("tree(")            # the call, not the statement
    message = str(error)
    assert "tree calls itself (recursion)" in message
    assert "for _ in range(n):" in message and "custom srcgrad.Function" in message


def test_mutual_recursion_names_the_chain_of_calls():
    with pytest.raises(UnsupportedError, match=r"even calls itself \(recursion through "
                                               r"even -> odd -> even\)"):
        sg.grad(even)(0.5, 3)


def test_the_loop_the_hint_suggests_differentiates_like_the_recursion():
    x = 0.7
    assert tree_as_a_loop(x, 3) == pytest.approx(tree(x, 3), rel=1e-15)
    assert sg.gradcheck(tree_as_a_loop, (x, 3))


# ----- Starred assignment: `*hidden, last = layers` -----

def mlp(layers, x):
    *hidden, last = layers
    for W in hidden:
        x = np.tanh(x @ W)
    return np.sum(x @ last)


def ends_and_middle(v):
    a, *mid, b = v
    return a * b + np.sum(np.array(mid) ** 2) + len(mid)


def head_and_tail(rows):
    first, *rest = rows
    return np.sum(first * sum(rest))


def test_starred_assignment_splits_a_list_of_layers_as_python_does():
    layers = [RNG.standard_normal((3, 3)) for _ in range(3)]
    x = RNG.standard_normal(3)
    grads = sg.grad(mlp)(layers, x)
    assert isinstance(grads, list) and len(grads) == 3
    assert sg.gradcheck(mlp, (layers, x))


def test_starred_assignment_splits_an_array_into_rows():
    assert sg.gradcheck(mlp, (RNG.standard_normal((3, 3, 3)), RNG.standard_normal(3)))
    assert sg.gradcheck(head_and_tail, (RNG.standard_normal((4, 2)),))


@pytest.mark.parametrize("v", [[1.5, -2.0, 0.5, 3.0], (1.5, -2.0), np.array([0.3, 1.2, -0.7])],
                         ids=["list", "tuple-with-empty-middle", "array"])
def test_starred_assignment_in_the_middle_gets_every_item_between(v):
    gv = sg.grad(ends_and_middle)(v)
    expected = [2.0 * item for item in v]     # by hand: the middle is squared
    expected[0], expected[-1] = v[-1], v[0]
    np.testing.assert_allclose(np.asarray(gv, dtype=float), expected, rtol=1e-12)
    assert sg.gradcheck(ends_and_middle, (v,))
