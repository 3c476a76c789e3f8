"""Idioms JAX/PyTorch users write first (round 3): container methods inside the function
differentiated, ``*``/``**`` in displays, and their refusals. Each supported idiom is checked
against central finite differences in float64 (reverse mode, and forward mode / Hessians
where they apply); each refusal names the user's line and construct."""

import collections
import dataclasses
import functools

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import UnsupportedError
from srcgrad.testing import check_grads

RNG = np.random.default_rng(3)
X = np.array([0.3, -0.7, 1.1])


# ----- list and dict methods on a list or dict f builds -----

def list_pop(x):
    lst = [x, 2 * x, np.sin(x)]
    last = lst.pop()
    return np.sum(last * lst[0] + lst[-1]) + len(lst)


def list_pop_index(x, i=0):
    lst = [x, 2 * x, np.sin(x)]
    first = lst.pop(i)
    return np.sum(first * lst[0] + lst[1] ** 2)


def list_pop_negative(x):
    lst = [x, np.cos(x), np.sin(x)]
    middle = lst.pop(-2)
    return np.sum(middle * lst[0] + lst[1] ** 3)


def list_extend(x):
    lst = [x]
    lst.extend([np.sin(x), x * x])
    lst.extend((np.exp(x),))
    return np.sum(lst[0] * lst[1] + lst[2] * lst[3])


def list_insert(x):
    lst = [x, x * x]
    lst.insert(1, np.sin(x))
    lst.insert(-1, np.cos(x))
    lst.insert(10, 3.0 * x)    # past the end: appended, as Python does
    return np.sum(lst[0] * lst[1] + lst[2] * lst[3] + lst[4] ** 2)


def list_iadd(x):
    lst = [x]
    lst += [np.sin(x)]
    return np.sum(lst[0] * lst[1])


def list_reverse(x):
    lst = [x, np.sin(x), x * 3]
    lst.reverse()
    return np.sum(lst[0] * lst[1] + lst[2] ** 2)


def list_methods_in_a_loop(x):
    stack = [x]
    for k in range(3):
        stack.append(np.sin(stack[-1]) * (k + 1))
    total = 0.0
    while len(stack) > 1:
        top = stack.pop()
        total = total + np.sum(top * stack[0])
    return total


def dict_update(x):
    d = {"a": x}
    d.update({"b": np.sin(x)})
    d.update(a=x * 2, c=np.cos(x))
    return np.sum(d["a"] * d["b"] + d["c"])


def dict_setdefault(x):
    d = {"a": x}
    v = d.setdefault("b", np.sin(x))
    w = d.setdefault("a", np.cos(x))     # present: the default is not used
    return np.sum(v * w + d["b"]) + len(d)


def dict_pop(x):
    d = {"a": x, "b": np.sin(x)}
    v = d.pop("a")
    missing = d.pop("z", np.cos(x))
    return np.sum(v * d["b"] + missing) + len(d)


def dict_get(x):
    d = {"a": x}
    return np.sum(d.get("a", 0.0) * d.get("b", np.cos(x)))


def dict_double_star(x):
    d = {"a": x, "b": x}
    e = {"z": 2 * x, **d, "b": np.sin(x)}
    return np.sum(e["a"] * e["b"] + e["z"]) + len(e)


def list_star_display(x):
    a = [x, 2 * x]
    b = (np.sin(x),)
    c = [*a, *b, x ** 2]
    t = (*c, np.cos(x))
    return np.sum(c[0] * c[2] + c[1] + t[-1] * t[3])


def starred_assignment(x):
    xs = [x, np.sin(x), x * x]
    a, *rest = xs
    *init, last = rest
    return np.sum(a * rest[0] + last + init[0])


SUPPORTED = [list_pop, list_pop_index, list_pop_negative, list_extend, list_insert, list_iadd,
             list_reverse, list_methods_in_a_loop, dict_update, dict_setdefault, dict_pop,
             dict_get, dict_double_star, list_star_display, starred_assignment]


@pytest.mark.parametrize("f", SUPPORTED, ids=lambda f: f.__name__)
def test_container_methods_match_finite_differences(f):
    assert check_grads(f, (X,))


@pytest.mark.parametrize("f", SUPPORTED, ids=lambda f: f.__name__)
def test_container_methods_in_forward_mode_match_finite_differences(f):
    t = RNG.standard_normal(3)
    out, dout = sg.jvp(f, (X,), (t,))
    h = 1e-6
    want = (f(X + h * t) - f(X - h * t)) / (2 * h)
    np.testing.assert_allclose(out, f(X), rtol=1e-12)
    np.testing.assert_allclose(dout, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [list_pop_negative, list_insert, dict_update, dict_double_star,
                               list_star_display], ids=lambda f: f.__name__)
def test_container_methods_have_hessians_matching_finite_differences_of_the_gradient(f):
    hess = sg.hessian(f)(X)
    grad, h = sg.grad(f), 1e-6
    want = np.stack([(grad(X + h * e) - grad(X - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(hess, want, rtol=1e-5, atol=1e-7)


def test_pop_with_a_key_computed_when_f_runs_pops_that_item():
    for i in (0, 1, -1, -3):
        assert check_grads(list_pop_index, (X,), kwargs={"i": i})


# ----- an argument's list or dict: the caller's object is not changed by the gradient -----

def pops_an_argument(xs):
    last = xs.pop()
    return np.sum(last * xs[0])


def updates_an_argument(d, x):
    d.update(b=x * 2)
    return np.sum(d["a"] * d["b"])


def test_a_method_on_an_argument_list_differentiates_the_list_the_caller_passed():
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    xs = [a, b]
    da, db = sg.grad(pops_an_argument)(xs)
    # By hand: last = b, xs[0] = a after the pop.
    np.testing.assert_allclose(da, b, rtol=1e-12)
    np.testing.assert_allclose(db, a, rtol=1e-12)
    assert len(xs) == 2   # the gradient leaves the caller's list as it was (docs/language.md)


def test_update_of_an_argument_dict():
    a, x = RNG.standard_normal(3), RNG.standard_normal(3)
    dd, dx = sg.grad(updates_an_argument, wrt=(0, 1))({"a": a}, x)
    np.testing.assert_allclose(dd["a"], 2 * x, rtol=1e-12)
    np.testing.assert_allclose(dx, 2 * a, rtol=1e-12)


# ----- aliasing: a list another live name holds is never changed behind its back -----

def pop_of_a_shared_list(x):
    lst = [x, np.sin(x)]
    other = lst
    lst.pop()
    return np.sum(other[-1])


def update_of_a_shared_dict(x):
    d = {"a": x}
    e = d
    d.update(a=np.sin(x))
    return np.sum(e["a"])


def reverse_of_a_list_maybe_shared(xs, share):
    other = xs if share else [xs[0]]
    xs.reverse()
    return np.sum(other[0] * 2.0)


@pytest.mark.parametrize("f, line, what", [
    (pop_of_a_shared_list, "lst.pop()", "'other'"),
    (update_of_a_shared_dict, "d.update(a=np.sin(x))", "'e'"),
], ids=["pop", "update"])
def test_a_method_on_a_list_another_name_holds_is_refused_at_its_line(f, line, what):
    with pytest.raises(UnsupportedError) as info:
        sg.grad(f)(X)
    message = str(info.value)
    assert "test_idioms_round3.py" in message and line in message and what in message


def test_a_list_shared_only_on_one_path_is_checked_when_f_runs():
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    da, db = sg.grad(reverse_of_a_list_maybe_shared)([a, b], False)
    np.testing.assert_allclose(da, 2.0, rtol=1e-12)
    np.testing.assert_allclose(db, 0.0, atol=0)
    with pytest.raises(UnsupportedError, match=r"xs\.reverse\(\)"):
        sg.grad(reverse_of_a_list_maybe_shared)([a, b], True)


# ----- what stays refused -----

class Holder:
    def __init__(self):
        self.items = []

    def grows(self, x):
        self.items.extend([np.sin(x)])
        return np.sum(self.items[-1] * x)

    def appends(self, x):
        self.items.append(np.sin(x))
        return np.sum(self.items[-1] * x)

    def grows_a_copy(self, x):
        items = list(self.items)
        items.extend([np.sin(x)])
        return np.sum(items[-1] * x)


def pop_inside_an_expression(x):
    lst = [x, np.sin(x)]
    return np.sum(lst[0] + lst.pop() * 2.0)   # lst read before the pop: not moved


@pytest.mark.parametrize("method", ["grows", "appends"])
def test_a_method_on_an_attribute_list_is_refused_at_its_line(method):
    # Found here: self.items.extend([np.sin(x)]) ran unseen, so the later read of
    # self.items[-1] was a constant and the gradient lost the np.sin(x) path.
    # (transform/outside_effects.py: refused where the function reads the object again;
    # logging into a list it never reads stays allowed)
    with pytest.raises(UnsupportedError, match=r"(?s)test_idioms_round3.py.*changes in place"
                                               r".*reads again.*self\.items\.(extend|append)"):
        sg.grad(getattr(Holder(), method))(X)


def test_a_method_on_a_local_copy_of_an_attribute_list_is_differentiated():
    assert check_grads(Holder().grows_a_copy, (X,))


def test_a_method_whose_result_is_used_inside_a_larger_expression_is_refused_at_its_line():
    with pytest.raises(UnsupportedError, match=r"(?s)test_idioms_round3.py.*\.pop\(\).*lst\.pop\(\) \* 2\.0.*statement of its own.*reads the list before it"):
        sg.grad(pop_inside_an_expression)(X)


# ----- sorted / max / min with key=: the order is a decision, the items carry the gradient -----

def first(t):
    return t[0]


def sorted_by_a_lambda(x, w):
    items = [(2, x), (1, np.sin(x)), (3, x * x)]
    s = sorted(items, key=lambda t: t[0] * w, reverse=True)   # reads w, a variable of f
    return np.sum(s[0][1] * 2.0 + s[1][1] * s[2][1])


def sorted_by_a_module_function(x):
    items = [(2, x), (1, np.sin(x)), (3, x * x)]
    return np.sum(sorted(items, key=first)[0][1] * x)


def sorted_values(x):
    vals = [np.sum(x), np.sum(np.sin(x)), np.sum(x * x)]
    s = sorted(vals)
    return s[0] * 2.0 + s[2]


def max_and_min_by_key(x):
    lst = [x, np.sin(x), x * 3]
    a = max(lst, key=lambda v: float(np.sum(v)))
    b = min(lst, key=lambda v: float(np.sum(v)))
    return np.sum(a * b)


def max_of_pairs_by_constant_key(x):
    items = [(2, x), (1, np.sin(x)), (3, x * x)]
    return np.sum(max(items, key=first)[1] + min(items, key=lambda t: t[0])[1])


def list_sort_with_key(x):
    lst = [x, np.sin(x), x * 3]
    lst.sort(key=lambda v: float(v[0]), reverse=False)
    return np.sum(lst[0] * lst[1] ** 2 + lst[2])


def list_sort_without_key(x):
    lst = [x[2], x[0], x[1]]   # a list every binding makes: .sort() is a list's
    lst.sort()
    lst.sort(reverse=True)
    return lst[0] * 2.0 + lst[2] ** 2


def sorted_of_an_expression(x):
    return np.sum(sorted([x * 2, np.sin(x)], key=lambda v: float(v[1]))[0] * x)


ORDERED = [sorted_by_a_module_function, sorted_values, max_and_min_by_key,
           max_of_pairs_by_constant_key, list_sort_with_key, list_sort_without_key,
           sorted_of_an_expression]


@pytest.mark.parametrize("f", ORDERED, ids=lambda f: f.__name__)
def test_sorted_max_min_with_key_match_finite_differences(f):
    assert check_grads(f, (X,))
    t = RNG.standard_normal(3)
    _, dout = sg.jvp(f, (X,), (t,))
    h = 1e-6
    np.testing.assert_allclose(dout, (f(X + h * t) - f(X - h * t)) / (2 * h), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("w", [1.0, -1.0])
def test_a_key_lambda_reading_a_variable_of_f_uses_its_value(w):
    assert check_grads(sorted_by_a_lambda, (X, w))


def sorted_of_a_dict(x):
    d = {"b": x, "a": np.sin(x), "c": 2 * x}
    ks = sorted(d, key=lambda k: k, reverse=True)   # its keys, as Python sorts them
    return np.sum(d[ks[0]] * d[ks[1]] + d[max(d)])


def test_sorted_of_a_dict_sorts_its_keys():
    assert check_grads(sorted_of_a_dict, (X,))


# ----- lambdas in a local dict or list, functools.partial made inside f -----

def act_table(x, name="relu"):
    acts = {"relu": lambda v: np.maximum(v, 0), "tanh": lambda v: np.tanh(v), "sq": square}
    return np.sum(acts[name](x) + acts["tanh"](x) * 2.0)


def square(v):
    return v * v


def lambda_list(x, i=0):
    scale = 3.0
    fs = [lambda v: np.sin(v) * scale, lambda v: v * v]
    return np.sum(fs[0](x) * fs[-1](x) + fs[i](x))


def helper(v, a=1.0, b=0.0):
    return np.sin(v) * a + b


def partial_of_a_helper(x, y):
    h = functools.partial(helper, a=2.0, b=y)
    g = functools.partial(helper, x * 3)
    return np.sum(h(x) + h(x, a=-1.0) * g(b=y))


@pytest.mark.parametrize("name", ["relu", "tanh", "sq"])
def test_a_dict_of_lambdas_called_by_a_key_matches_finite_differences(name):
    assert check_grads(act_table, (X,), kwargs={"name": name})
    t = RNG.standard_normal(3)
    _, dout = sg.jvp(act_table, (X, name), (t, None))
    h = 1e-6
    want = (act_table(X + h * t, name) - act_table(X - h * t, name)) / (2 * h)
    np.testing.assert_allclose(dout, want, rtol=1e-6, atol=1e-8)


def test_a_key_not_in_the_table_raises_as_python_does():
    with pytest.raises(KeyError, match="gelu"):
        sg.grad(act_table)(X, "gelu")
    with pytest.raises(IndexError):
        sg.grad(lambda_list)(X, 5)


@pytest.mark.parametrize("i", [0, 1, -1, -2])
def test_a_list_of_lambdas_called_by_index_matches_finite_differences(i):
    assert check_grads(lambda_list, (X,), kwargs={"i": i})


def test_a_partial_made_inside_f_matches_finite_differences():
    y = RNG.standard_normal(3)
    assert check_grads(partial_of_a_helper, (X, y), wrt=(0, 1))


def loop_of_lambdas_with_defaults(x):
    fs = []
    for i in range(3):
        fs.append(lambda v, i=i: v * (i + 1))
    return np.sum(fs[0](x))


def test_lambdas_with_a_loop_variable_default_stay_refused_at_their_line():
    with pytest.raises(UnsupportedError, match=r"(?s)test_idioms_round3.py.*default value of a local "
                                               r"function that is not a constant.*lambda v, i=i"):
        sg.grad(loop_of_lambdas_with_defaults)(X)


# ----- methods of a dataclass argument -----

@dataclasses.dataclass
class Params:
    w: np.ndarray
    c: float = 1.5

    def energy(self, x):
        return np.sum(self.w * np.sin(x)) * self.c + self.penalty()

    def penalty(self):
        return 0.1 * np.sum(self.w ** 2)

    @classmethod
    def scale(cls, x):
        return 3.0 * x

    @staticmethod
    def sq(x):
        return x * x

    def through_type(self, x):
        return type(self).scale(x) * self.c


def calls_a_method(x, p):
    return p.energy(x)


def calls_a_method_wrt_the_instance(p, x):
    return p.energy(x) + np.sum(p.w * x)


def class_and_static_methods(x, p):
    return np.sum(p.scale(x) + p.sq(x) + type(p).scale(x) + p.through_type(x))


def test_a_method_of_a_dataclass_argument_matches_finite_differences():
    p = Params(RNG.standard_normal(3), 0.7)
    assert check_grads(calls_a_method, (X, p))
    assert check_grads(class_and_static_methods, (X, p))


def test_the_gradient_with_respect_to_the_instance_is_a_dataclass():
    p = Params(RNG.standard_normal(3), 0.7)
    dp = sg.grad(calls_a_method_wrt_the_instance)(p, X)
    assert isinstance(dp, Params)
    # By hand: d/dw = c sin(x) + 0.2 w + x; d/dc = sum(w sin(x)).
    np.testing.assert_allclose(dp.w, 0.7 * np.sin(X) + 0.2 * p.w + X, rtol=1e-12)
    np.testing.assert_allclose(dp.c, np.sum(p.w * np.sin(X)), rtol=1e-12)
    assert check_grads(calls_a_method_wrt_the_instance, (p, X))


@dataclasses.dataclass
class Other:
    w: np.ndarray
    c: float = 1.5

    def energy(self, x):
        return np.sum(self.w * x * x)

    def penalty(self):
        return 0.0


def test_another_class_or_a_redefined_method_compiles_anew():
    g = sg.grad(calls_a_method)
    w = RNG.standard_normal(3)
    np.testing.assert_allclose(g(X, Other(w)), 2 * w * X, rtol=1e-12)
    p = Params(w, 0.7)
    np.testing.assert_allclose(g(X, p), 0.7 * w * np.cos(X), rtol=1e-12)
    original = Params.energy
    try:
        Params.energy = Other.energy
        np.testing.assert_allclose(g(X, p), 2 * w * X, rtol=1e-12)
    finally:
        Params.energy = original
    np.testing.assert_allclose(g(X, p), 0.7 * w * np.cos(X), rtol=1e-12)


# ----- unrolled loops over containers of callables -----

class Net:
    def __init__(self):
        self.layers = [np.sin, np.tanh, lambda v: v * 2.0, np.cos]
        self.acts = (np.cos, np.exp, np.tanh)
        self.scales = [1.0, -2.0, 0.5, 3.0]

    def by_index(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x) * self.scales[i]
        return np.sum(x)

    def by_zip(self, x):
        for layer, act in zip(self.layers, self.acts):   # the shorter one: three pairs
            x = act(layer(x))
        return np.sum(x)

    def by_enumerated_zip(self, x):
        for k, (layer, act) in enumerate(zip(self.layers, self.acts), 1):
            x = act(layer(x)) * k
        return np.sum(x)

    def by_slice(self, x):
        x = self.layers[0](x) * 2
        for layer in self.layers[1:3]:
            x = layer(x)
        for layer in self.layers[::-2]:
            x = x + layer(x)
        return np.sum(x)

    def with_break(self, x, limit):
        for layer in self.layers:
            x = layer(x)
            if np.sum(x) > limit:
                break
        else:
            x = x * 10.0
        return np.sum(x * x)

    def with_continue(self, x):
        for i, layer in enumerate(self.layers):
            if i % 2 == 1:
                continue
            x = layer(x) + x
        return np.sum(x)

    def with_a_data_dependent_continue(self, x):
        for layer in self.layers:
            y = layer(x)
            if np.sum(y) < 0.0:
                continue
            x = y
        return np.sum(x)

    def changes_the_layers(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x)
            self.layers[i] = np.sin
        return np.sum(x)


NET = Net()


@pytest.mark.parametrize("method", ["by_index", "by_zip", "by_enumerated_zip", "by_slice", "with_continue",
                                    "with_a_data_dependent_continue"])
def test_unrolled_loops_match_finite_differences(method):
    f = getattr(NET, method)
    assert check_grads(f, (X,))
    t = RNG.standard_normal(3)
    _, dout = sg.jvp(f, (X,), (t,))
    h = 1e-6
    np.testing.assert_allclose(dout, (f(X + h * t) - f(X - h * t)) / (2 * h), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("limit", [-100.0, 0.5, 100.0])   # breaks after the first item, later, never
def test_break_in_an_unrolled_loop_matches_finite_differences(limit):
    assert check_grads(NET.with_break, (X, limit))


def test_a_break_stops_at_the_item_python_stops_at():
    g = sg.grad(NET.with_break)
    # limit -100: the loop breaks right after sin: f = sum(sin(x)^2), no else clause
    np.testing.assert_allclose(g(X, -100.0), 2 * np.sin(X) * np.cos(X), rtol=1e-12)


def test_a_loop_by_index_that_changes_the_container_is_refused_at_its_line():
    with pytest.raises(UnsupportedError, match=r"(?s)test_idioms_round3.py.*changes `self.layers`"):
        sg.grad(Net().changes_the_layers)(X)


def test_a_container_replaced_compiles_anew():
    net = Net()
    g = sg.grad(net.by_index)
    first = g(X)
    net.layers[3] = np.sin
    want = numerical_grad_of(net.by_index, X)
    np.testing.assert_allclose(g(X), want, rtol=1e-6, atol=1e-8)
    assert not np.allclose(first, want)


def numerical_grad_of(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


# ----- namedtuples built inside f -----

Point = collections.namedtuple("Point", ["x", "y", "w"], defaults=[2.0])


def builds_a_namedtuple(x, y):
    p = Point(x, y=np.sin(y))
    q = p._replace(x=np.cos(p.x), w=p.w * x)
    return np.sum(q.x * q.y + p.x * q.w + q[1])


def returns_a_namedtuple(x, y):
    return Point(x * y, np.sin(y), w=x)


def test_a_namedtuple_built_inside_f_matches_finite_differences():
    y = RNG.standard_normal(3)
    assert check_grads(builds_a_namedtuple, (X, y), wrt=(0, 1))
    t, s = RNG.standard_normal(3), RNG.standard_normal(3)
    _, dout = sg.jvp(builds_a_namedtuple, (X, y), (t, s))
    h = 1e-6
    want = (builds_a_namedtuple(X + h * t, y + h * s) - builds_a_namedtuple(X - h * t, y - h * s)) / (2 * h)
    np.testing.assert_allclose(dout, want, rtol=1e-6, atol=1e-8)


def test_a_returned_namedtuple_takes_a_namedtuple_seed():
    y = RNG.standard_normal(3)
    seed = Point(RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal(3))
    dx, dy = sg.grad(returns_a_namedtuple, wrt=(0, 1))(X, y, grad_outputs=seed)
    # By hand: x*y -> (y, x); sin(y) -> cos(y); w = x -> 1.
    np.testing.assert_allclose(dx, seed.x * y + seed.w, rtol=1e-12)
    np.testing.assert_allclose(dy, seed.x * X + seed.y * np.cos(y), rtol=1e-12)
    out, tangent = sg.jvp(returns_a_namedtuple, (X, y), (np.ones(3), np.zeros(3)))
    assert isinstance(out, Point) and isinstance(tangent, Point)
    np.testing.assert_allclose(tangent.x, y, rtol=1e-12)
    np.testing.assert_allclose(tangent.w, 1.0, rtol=1e-12)


# ----- g(*args) and g(**kw) of a display bound once -----

def three(u, v, w=1.0):
    return u * v + w


def star_of_a_tuple(x):
    args = (x, np.sin(x))
    kw = {"w": x * x}
    return np.sum(three(*args) + three(x, **kw, v=2.0) + three(*args, **kw))


def star_of_a_list_read_by_index(x):
    parts = [np.cos(x), x]
    return np.sum(three(*parts, w=parts[0]) * len(parts))


def star_of_a_runtime_list(x, xs):
    return np.sum(three(*xs))


def test_star_calls_of_displays_match_finite_differences():
    assert check_grads(star_of_a_tuple, (X,))
    assert check_grads(star_of_a_list_read_by_index, (X,))


def test_a_star_call_of_a_value_of_unknown_length_is_refused_at_its_line():
    with pytest.raises(UnsupportedError, match=r"(?s)\*-unpacking in a call.*three\(\*xs\)"):
        sg.grad(star_of_a_runtime_list)(X, [X, X])


def test_a_method_of_a_dataclass_argument_has_a_hessian_and_a_jvp():
    p = Params(RNG.standard_normal(3), 0.7)
    # By hand: d2/dx2 of c * sum(w sin(x)) = diag(-c w sin(x)).
    np.testing.assert_allclose(sg.hessian(calls_a_method)(X, p), np.diag(-0.7 * p.w * np.sin(X)),
                               rtol=1e-10, atol=1e-12)
    t = RNG.standard_normal(3)
    _, dout = sg.jvp(calls_a_method, (X, p), (t, None))   # round 4: forward mode binds it too
    h = 1e-6
    np.testing.assert_allclose(dout, (calls_a_method(X + h * t, p) - calls_a_method(X - h * t, p)) / (2 * h),
                               rtol=1e-6, atol=1e-8)
