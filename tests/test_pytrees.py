"""Structured arguments and outputs (pytrees, DESIGN.md section 2), and containers
inside the differentiated function: every gradient against central finite differences."""

import collections
import dataclasses

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

RNG = np.random.default_rng(11)


def randn(*shape):
    return RNG.standard_normal(shape)


def close(analytic, numeric, atol=1e-6, rtol=1e-5):
    """Same structure, same classes, and each leaf within tolerance."""
    assert type(analytic) is type(numeric), (analytic, numeric)
    if isinstance(numeric, dict):
        assert set(analytic) == set(numeric)
        for k in numeric:
            close(analytic[k], numeric[k], atol, rtol)
    elif isinstance(numeric, (list, tuple)):
        assert len(analytic) == len(numeric)
        for a, n in zip(analytic, numeric):
            close(a, n, atol, rtol)
    elif dataclasses.is_dataclass(numeric):
        for f in dataclasses.fields(numeric):
            close(getattr(analytic, f.name), getattr(numeric, f.name), atol, rtol)
    elif numeric is None:
        assert analytic is None
    else:
        np.testing.assert_allclose(analytic, numeric, atol=atol, rtol=rtol)
        assert np.shape(analytic) == np.shape(numeric)


def check(f, args, wrt=0, grad_outputs=None, **options):
    """srcgrad's gradient against finite differences, on a first and a repeated call."""
    g = sg.grad(f, wrt=wrt, **options)
    first = g(*args, grad_outputs=grad_outputs)
    again = g(*args, grad_outputs=grad_outputs)
    numeric = numerical_grad(f, args, wrt=wrt, grad_outputs=grad_outputs)
    close(first, numeric)
    close(again, numeric)
    return first


# ----- the reproducers -----

def dict_of_scalars(p):
    return p['a'] * 2.0 + p['b'] * 3.0


def dict_built_inside(x):
    d = {"a": x}
    return d["a"] * 2.0


def lists_concatenated(x):
    parts = [x] + [x * 2.0]
    return np.sum(np.concatenate(parts) ** 2)


def list_repeated(x):
    lst = [x, x * 2]
    lst2 = lst * 2
    return np.sum(np.stack(lst2))


def mlp_dict(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    return np.sum(h @ params["W2"])


def mlp_layers(layers, x):
    for W, b in layers:
        x = np.tanh(x @ W + b)
    return np.sum(x)


@dataclasses.dataclass
class Params:
    W: np.ndarray
    b: np.ndarray


def dataclass_fields(p, x):
    return np.sum(np.tanh(x @ p.W + p.b))


def test_a_dict_argument_gets_a_dict_gradient():
    assert sg.grad(dict_of_scalars)({'a': 1.0, 'b': 1.0}) == {'a': 2.0, 'b': 3.0}
    check(dict_of_scalars, ({'a': 1.5, 'b': -0.5},))


def test_a_dict_built_inside_the_function_carries_the_gradient():
    assert sg.grad(dict_built_inside)(1.5) == 2.0
    check(dict_built_inside, (0.7,))


def test_adding_lists_concatenates_them():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(sg.grad(lists_concatenated)(x), [10.0, 20.0, 30.0])
    check(lists_concatenated, (randn(4),))


def test_multiplying_a_list_repeats_it():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(sg.grad(list_repeated)(x), [6.0, 6.0, 6.0])
    check(list_repeated, (randn(2),))


def test_an_mlp_with_a_dict_of_parameters():
    params = {"W1": randn(3, 4), "b1": randn(4), "W2": randn(4, 2)}
    grads = check(mlp_dict, (params, randn(5, 3)))
    assert list(grads) == ["W1", "b1", "W2"]
    check(mlp_dict, (params, randn(5, 3)), wrt=(0, 1))


def test_an_mlp_with_a_list_of_weight_and_bias_tuples():
    layers = [(randn(3, 3), randn(3)), (randn(3, 2), randn(2))]
    grads = check(mlp_layers, (layers, randn(4, 3)))
    assert type(grads) is list and all(type(t) is tuple for t in grads)


def test_a_dataclass_argument_gets_a_dataclass_gradient():
    p = Params(randn(3, 3), randn(3))
    grads = check(dataclass_fields, (p, randn(5, 3)))
    assert isinstance(grads, Params)


# ----- arguments of every kind -----

Point = collections.namedtuple("Point", ["x", "y"])


def namedtuple_fields(p):
    return np.sum(p.x * p.y) + np.sum(p[0] ** 2)


def test_a_namedtuple_argument_read_by_field_and_by_index():
    grads = check(namedtuple_fields, (Point(randn(3), randn(3)),))
    assert isinstance(grads, Point)


def nested(tree, s):
    a = tree["layer"][0]["w"]
    b = tree["layer"][1]
    c = tree["extra"][1]
    return np.sum(a * b) * s + c * s ** 2


def test_nested_structures_and_several_wrt():
    tree = {"layer": [{"w": randn(3)}, randn(3)], "extra": (None, 2.5)}
    check(nested, (tree, 1.5))
    check(nested, (tree, 1.5), wrt=(0, 1))
    grads = sg.grad(nested)(tree, 1.5)
    assert grads["extra"][0] is None   # None leaves get None


class Pair:
    def __init__(self, left, right):
        self.left = left
        self.right = right


sg.register_pytree_node(Pair, lambda p: ((p.left, p.right), None),
                        lambda aux, children: Pair(*children))


def registered_class(p, x):
    return np.sum(np.sin(p.left) * x) + np.sum(p.right ** 3)


def test_a_registered_class_argument():
    p, x = Pair(randn(3), randn(2)), randn(3)
    g = sg.grad(registered_class)(p, x)
    assert isinstance(g, Pair)
    numeric = numerical_grad(registered_class, (p, x))
    np.testing.assert_allclose(g.left, numeric.left, atol=1e-6)
    np.testing.assert_allclose(g.right, numeric.right, atol=1e-6)


def unused_leaf(p):
    return np.sum(p["used"] ** 2)


def test_a_leaf_no_gradient_reaches_gets_zeros():
    p = {"used": randn(3), "unused": randn(2)}
    g = check(unused_leaf, (p,))
    np.testing.assert_array_equal(g["unused"], np.zeros(2))


def int_leaf(p):
    return p["w"] * p["n"]


def test_an_integer_leaf_is_refused_naming_its_path():
    with pytest.raises(TypeError, match=r"p\['n'\]"):
        sg.grad(int_leaf)({"w": 2.0, "n": 3})


def keyword_structure(x, p):
    return np.sum(x * p["w"])


def test_a_structure_passed_by_keyword():
    x, w = randn(3), randn(3)
    g = sg.grad(keyword_structure, wrt=1)(x, p={"w": w})
    np.testing.assert_allclose(g["w"], x)
    np.testing.assert_allclose(sg.grad(keyword_structure)(x, p={"w": w}), w)


def scale_by(x, c):
    return np.sum(x * c)


def test_a_list_argument_meeting_an_array_is_arithmetic_after_plain_calls():
    x = randn(3)
    g = sg.grad(scale_by)
    np.testing.assert_allclose(g(x, 2.0), np.full(3, 2.0))
    np.testing.assert_allclose(g(x, 2.0), np.full(3, 2.0))     # the fast path is set up
    np.testing.assert_allclose(g(x, [3.0, 1.0, 2.0]), [3.0, 1.0, 2.0])   # NumPy broadcasting
    check(scale_by, (x, [3.0, 1.0, 2.0]))
    with pytest.raises(sg.UnsupportedError, match="reads as an array"):   # never a wrong number
        sg.grad(scale_by, wrt=1)(x, [3.0, 1.0, 2.0])


def first_times_second(c):
    return np.sum(c[0] * c[1])


def test_a_list_whose_items_multiply_is_arithmetic():
    check(first_times_second, ([randn(3), randn(3)],))
    check(first_times_second, ((1.5, 2.5),))


# ----- outputs -----

def dict_output(x):
    return {"a": x * 2.0, "b": [x ** 2, np.sin(x)]}


def test_a_dict_output_takes_grad_outputs_mirroring_it():
    x = randn(3)
    seed = {"a": randn(3), "b": [randn(3), None]}
    g = sg.grad(dict_output)(x, grad_outputs=seed)
    np.testing.assert_allclose(g, 2.0 * seed["a"] + 2 * x * seed["b"][0])
    check(dict_output, (x,), grad_outputs={"a": randn(3), "b": [randn(3), randn(3)]})
    with pytest.raises(ValueError, match="scalar"):
        sg.grad(dict_output)(x)
    with pytest.raises(ValueError, match="keys"):
        sg.grad(dict_output)(x, grad_outputs={"a": randn(3)})


def tuple_of_lists_output(x):
    return [x, x * x], x.sum()


def test_a_tuple_output_holding_a_list():
    x = randn(3)
    check(tuple_of_lists_output, (x,), grad_outputs=([randn(3), randn(3)], 1.5))


# ----- containers inside the function -----

def list_appended_then_added(x, y):
    acc = []
    for k in range(3):
        acc.append(x * k)
    more = acc + [y]
    total = 0.0
    for item in more:
        total = total + np.sum(item ** 2)
    return total


def test_an_appended_list_concatenated_with_a_display():
    check(list_appended_then_added, (randn(2), randn(2)), wrt=(0, 1))


def list_argument_concatenated(xs, y):
    both = xs + [y]
    return np.sum(np.stack(both) ** 2)


def test_a_list_argument_concatenated():
    check(list_argument_concatenated, ([randn(3), randn(3)], randn(3)), wrt=(0, 1))


def tuple_repeated_left(x):
    t = 3 * (x, x * 2.0)
    return np.sum(np.stack(t) * np.arange(6.0)[:, None])


def test_a_tuple_repeated_from_the_left():
    check(tuple_repeated_left, (randn(2),))


def nested_lists(x):
    grid = [[x, x * 2.0], [x * 3.0]]
    row = grid[0]
    return np.sum(row[1] * grid[1][0])


def test_nested_lists():
    check(nested_lists, (randn(3),))


def dict_updated_by_rebinding(x):
    d = {"w": x, "v": x * 2.0}
    d2 = {"w": d["w"] * d["v"], "v": d["v"]}
    return np.sum(d2["w"] + d2["v"])


def test_a_dict_rebuilt_from_another():
    check(dict_updated_by_rebinding, (randn(3),))


def helper_reads(p):
    return p["w"] * p["w"]


def calls_helper_with_dict(p, x):
    return np.sum(helper_reads(p) * x)


def test_a_structure_passed_on_to_a_helper():
    check(calls_helper_with_dict, ({"w": randn(3)}, randn(3)))


def arithmetic_still_arithmetic(x, y):
    return np.sum(x + y) * np.sum(x * y)


def test_arrays_that_are_not_containers_keep_arithmetic():
    check(arithmetic_still_arithmetic, (randn(3), randn(3)), wrt=(0, 1))


def test_gradcheck_takes_structures():
    params = {"W1": randn(3, 4), "b1": randn(4), "W2": randn(4, 2)}
    assert sg.gradcheck(mlp_dict, (params, randn(5, 3)))
    assert sg.gradcheck(mlp_layers, ([(randn(3, 3), randn(3))], randn(4, 3)))
    assert sg.gradcheck(dataclass_fields, (Params(randn(3, 3), randn(3)), randn(5, 3)))


class WrongCube(sg.Function):
    """x ** 3 with a deliberately wrong backward (2x instead of 3x**2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * 2.0 * x


def wrong_cube_of_dict(p):
    return np.sum(WrongCube.apply(p["w"])) + np.sum(p["v"])


def test_gradcheck_catches_a_wrong_structured_gradient_and_names_the_leaf():
    with pytest.raises(sg.GradcheckError, match=r"\['w'\]"):
        sg.gradcheck(wrong_cube_of_dict, ({"w": randn(3) + 3.0, "v": randn(2)},))


# ----- dicts inside the function -----

def loop_over_items(d, x):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(v * x)
    for v in d.values():
        s = s + np.sum(v ** 2)
    return s + np.sum(d.get("a") * x) + d.get("missing", 2.0)


def test_dict_items_values_and_get():
    check(loop_over_items, ({"a": randn(3), "b": randn(3)}, randn(3)), wrt=(0, 1))


def loop_over_dict(d):
    s = 0.0
    for k in d:
        s = s + d[k]
    return s


def loop_over_list_of_keys(d):
    s = 0.0
    for k in list(d):
        s = s + d[k] * d[k]
    return s


def test_a_loop_over_a_dict_argument_or_its_keys_iterates_the_keys():
    # (loop_over_dict was refused: methods.py looked at a function's loops over dicts only
    # where it made a call)
    g = sg.grad(loop_over_dict)({"a": 1.0, "b": 2.0})
    assert g == {"a": 1.0, "b": 1.0}
    check(loop_over_dict, ({"a": 1.0, "b": 2.0},))
    check(loop_over_list_of_keys, ({"a": 1.0, "b": 2.0},))


def dict_written_inside(x):
    d = {"w": 1.0}
    d["w"] = x * 2.0      # overwrites a key
    d["v"] = x ** 2       # adds a key
    return np.sum(d["w"] * d["v"])


def dict_argument_written(p, x):
    p["w"] = p["w"] * x
    return np.sum(p["w"])


def test_writing_keys_of_a_dict():
    check(dict_written_inside, (randn(3),))
    p, x = {"w": randn(3)}, randn(3)
    before = p["w"].copy()
    dp, dx = sg.grad(dict_argument_written, wrt=(0, 1))(p, x)   # sum(w * x), by hand
    np.testing.assert_allclose(dp["w"], x)
    np.testing.assert_allclose(dx, before)
    np.testing.assert_array_equal(p["w"], before)   # the argument is not changed


class SplitTwo(sg.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0, x * 3.0

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        return 2.0 * grad_a + 3.0 * grad_b


def function_returning_tuple(x, y):
    pair = SplitTwo.apply(x)
    both = pair + (y,)
    return np.sum(both[0] * both[2]) + np.sum(both[1])


def test_a_custom_function_returning_a_tuple_concatenated():
    check(function_returning_tuple, (randn(3), randn(3)), wrt=(0, 1))


# ----- the API boundary -----

def test_vjp_of_a_structure():
    params = {"W1": randn(3, 4), "b1": randn(4), "W2": randn(4, 2)}
    x = randn(5, 3)
    out, backward = sg.vjp(mlp_dict)(params, x)
    close(backward(), numerical_grad(mlp_dict, (params, x)))


def test_value_and_grad_of_a_structure():
    params = {"W1": randn(3, 4), "b1": randn(4), "W2": randn(4, 2)}
    x = randn(5, 3)
    value, grads = sg.value_and_grad(mlp_dict)(params, x)
    assert value == pytest.approx(mlp_dict(params, x))
    close(grads, numerical_grad(mlp_dict, (params, x)))


def with_default(x, p={"w": 2.0, "v": 3.0}):
    return np.sum(x * p["w"]) + np.sum(p["v"] * x * x)


def concat_default(x, extra=[1.0]):
    both = [x] + extra
    return np.sum(both[0] * 2.0) + np.sum(np.stack(both[:1]))


def test_structured_defaults_use_code_compiled_for_them():
    x = randn(3)
    g = sg.grad(concat_default)
    np.testing.assert_allclose(g(x, [x]), np.full(3, 3.0))
    np.testing.assert_allclose(g(x), np.full(3, 3.0))
    check(with_default, (x,))


def test_grad_of_grad_of_a_structure_takes_grad_outputs_of_its_structure():
    # the first gradient's code is compiled for arrays: a structure goes through its hvp
    # (tests/test_grad_of_grad_structures.py checks it against finite differences)
    p = {"a": 1.0, "b": 2.0}
    with pytest.raises(ValueError, match="the output is a dict; pass grad_outputs="):
        sg.grad(sg.grad(dict_of_scalars))(p)
    got = sg.grad(sg.grad(dict_of_scalars))(p, grad_outputs={"a": 1.0, "b": 0.0})
    assert type(got) is dict and set(got) == {"a", "b"}


class Opaque:
    def __init__(self, w):
        self.w = w


def opaque_attribute(o, x):
    return np.sum(o.w * x)


def test_an_attribute_of_an_unknown_object_is_refused_where_a_gradient_reaches_it():
    o, x = Opaque(randn(3)), randn(3)
    np.testing.assert_allclose(sg.grad(opaque_attribute, wrt=1)(o, x), o.w)
    # differentiating with respect to the object itself is refused at the call, naming its
    # class (calling it, `o(x)`, said it was unused)
    with pytest.raises(TypeError, match="Opaque object.*register_pytree_node"):
        sg.grad(opaque_attribute, wrt=0)(o, x)


def test_a_string_leaf_is_refused_naming_its_path():
    with pytest.raises(TypeError, match=r"p\['act'\]"):
        sg.grad(dict_of_scalars)({"a": 1.0, "b": 2.0, "act": "tanh"})


def list_product(lst):
    return np.prod(lst)


def list_mean(lst):
    return np.mean(lst) * 3.0


def display_product(a, b):
    return np.prod([a, b])


def test_a_list_read_as_an_array_by_numpy_is_the_array_numpy_makes_of_it():
    lst = [0.7, 1.2, 2.5]
    check(list_product, (lst,))           # a list argument NumPy reads as an array is made one
    check(display_product, (0.7, 1.2))   # a display passed to a call is made an array (anf.py)
    check(list_mean, (lst,))          # a full reduction: every item's gradient is the same
    check(list_mean, ((0.7, 1.2),))


def leaf_grows(p, x):
    p["w"] = np.ones((2, 3)) * p["w"]    # the leaf's rank changes: the argument's key no longer holds
    return np.sum(p["w"] * x)


def list_argument_appended(layers, x):
    layers.append(x * 2.0)
    s = 0.0
    for v in layers:
        s = s + np.sum(v * x)
    return s


def test_a_structure_changed_in_place_loses_its_keys_facts():
    x = np.array([0.5, 1.5, -1.0])
    dp, dx = sg.grad(leaf_grows, wrt=(0, 1))({"w": 2.0}, x)   # 2 * w * sum(x), by hand
    assert dp == {"w": pytest.approx(2.0 * np.sum(x))}
    np.testing.assert_allclose(dx, np.full(3, 4.0))
    a, b = randn(3), randn(3)
    dl, dx = sg.grad(list_argument_appended, wrt=(0, 1))([a, b], x)   # (a + b) . x + 2 x . x
    np.testing.assert_allclose(dl[0], x)
    np.testing.assert_allclose(dl[1], x)
    np.testing.assert_allclose(dx, a + b + 4 * x)


def test_vjp_of_a_dict_output_seeded_twice_with_retain_graph():
    x = randn(3)
    out, backward = sg.vjp(dict_output)(x)
    assert set(out) == {"a", "b"}
    seed = {"a": randn(3), "b": [None, randn(3)]}
    first = backward(grad_outputs=seed, retain_graph=True)
    np.testing.assert_allclose(first, 2.0 * seed["a"] + np.cos(x) * seed["b"][1])
    np.testing.assert_allclose(backward(grad_outputs=seed), first)


def weighted_pair(pair):
    return pair[0] * 2.0 + pair[1] * 3.0


@sg.adjoint(weighted_pair)
def _weighted_pair_rule(dy, y, pair):
    return [dy * 2.0, dy * 3.0]


def user_rule_on_a_list(a, b, p):
    return np.sum(weighted_pair([a, b]) ** 2) + np.sum(weighted_pair(p))


def test_a_users_adjoint_rule_gives_a_list_argument_its_gradient():
    a, b = randn(2), randn(2)
    p = [randn(2), randn(2)]
    check(user_rule_on_a_list, (a, b, p), wrt=(0, 1, 2))


def reshaped_cube(x, shape):
    return np.sum(np.reshape(x, shape) ** 3)


def test_higher_order_derivatives_still_take_a_shape_tuple():
    assert sg.gradgradcheck(reshaped_cube, (np.arange(6.0) * 0.3, (2, 3)))
