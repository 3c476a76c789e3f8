"""Idioms JAX/PyTorch users write first (round 4): lambdas made in a comprehension, methods
that return a value inside an expression, ``g(*xs)`` into ``*args``, sorting a list argument,
forward mode through a dataclass method, tables of functions called by a run-time key, and
some forty small programs written the way a new user writes them. Each supported idiom is
checked against central finite differences in float64 (forward mode too where it applies);
each refusal is a SrcgradError naming this file, the line and the construct."""

import collections
import dataclasses
import functools
import itertools
import math
import operator
from functools import reduce

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import SrcgradError, UnsupportedError
from srcgrad.testing import check_grads, numerical_grad

RNG = np.random.default_rng(4)
X = np.array([0.3, -0.7, 1.1])
A = RNG.standard_normal((3, 3))


def jvp_matches_finite_differences(f, args, k=0):
    """``sg.jvp`` of ``f`` along a random tangent of ``args[k]`` against central differences."""
    t = RNG.standard_normal(np.shape(args[k]))
    tangents = tuple(t if i == k else None for i in range(len(args)))
    _, dout = sg.jvp(f, args, tangents)
    h = 1e-6
    up = list(args)
    down = list(args)
    up[k], down[k] = args[k] + h * t, args[k] - h * t
    np.testing.assert_allclose(dout, (f(*up) - f(*down)) / (2 * h), rtol=1e-6, atol=1e-8)


def fd_jacobian(g, x, h=1e-6):
    """Central differences of the vector function ``g`` at ``x``, one column per entry."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        cols.append((g(x + e) - g(x - e)) / (2 * h))
    return np.stack(cols, axis=-1)


def assert_refused(f, args, fragment, words, error=UnsupportedError):
    """``sg.grad(f)(*args)`` raises ``error`` at the line of this file holding ``fragment``,
    its message holding ``words``."""
    with pytest.raises(error) as info:
        sg.grad(f)(*args)
    assert info.value.filename == __file__
    assert fragment in (info.value.source_line or ""), info.value
    assert words in str(info.value), str(info.value)


# ----- 1. lambdas made in a comprehension over a static range, and tables of lambdas -----

def lambdas_with_a_default_from_a_range(x):
    fs = [lambda v, i=i: v * i for i in range(3)]
    return sum(np.sum(fn(x)) for fn in fs)


def lambdas_over_a_tuple_with_enumerate(x):
    fs = [lambda v, k=k: np.sin(v) ** k for k in (1, 2, 3)]
    total = 0.0
    for j, fn in enumerate(fs):
        total = total + np.sum(fn(x)) * (j + 1)
    return total


def lambda_picked_by_a_runtime_index(x, j):
    fs = [lambda v, i=i: v * (i + 1.5) for i in range(3)]
    return np.sum(fs[j](x) * fs[0](x))


def dict_of_lambdas_looped_over(x):
    acts = {"sin": lambda v: np.sin(v), "sq": lambda v: v * v, "tanh": np.tanh}
    out = x
    for name, fn in acts.items():
        out = fn(out)
    return np.sum(out)


def table_with_weights_by_position(x):
    fs = [lambda v: np.sin(v), lambda v: v ** 3]
    ws = [0.5, -2.0]
    return sum(ws[k] * np.sum(fn(x)) for k, fn in enumerate(fs))


@pytest.mark.parametrize("f", [lambdas_with_a_default_from_a_range, lambdas_over_a_tuple_with_enumerate,
                               dict_of_lambdas_looped_over, table_with_weights_by_position],
                         ids=lambda f: f.__name__)
def test_lambdas_made_in_a_comprehension_or_table_match_finite_differences(f):
    assert check_grads(f, (X,))
    jvp_matches_finite_differences(f, (X,))


@pytest.mark.parametrize("j", [0, 2, -1])
def test_a_lambda_of_a_comprehension_picked_by_an_index_known_when_f_runs(j):
    assert check_grads(lambda_picked_by_a_runtime_index, (X, j))
    with pytest.raises(IndexError):
        sg.grad(lambda_picked_by_a_runtime_index)(X, 3)


def late_binding_lambdas(x):
    fs = [lambda v: v * i for i in range(3)]
    return sum(np.sum(fn(x)) for fn in fs)


def table_lambdas_reading_a_variable(x):
    s = 2.0
    fs = [lambda v, i=i: v * i * s for i in range(3)]
    return sum(np.sum(fn(x)) for fn in fs)


def test_a_lambda_reading_the_comprehension_variable_itself_is_refused():
    # Python's lambdas would all see i == 2 there: a classic bug, refused with the fix
    assert_refused(late_binding_lambdas, (X,), "fs = [lambda v: v * i", "reads its variable `i`")


def test_a_looped_over_lambda_reading_a_variable_of_f_is_refused():
    assert_refused(table_lambdas_reading_a_variable, (X,), "fs = [lambda v, i=i: v * i * s",
                   "reads the function's variable 's'")


# ----- 2. methods that return a value, inside a larger expression -----

def pop_inside_an_expression(x):
    xs = [x, 2 * x]
    return np.sum(xs.pop() * 2)


def two_pops_and_a_later_read(x):
    xs = [x, 2 * x, np.sin(x)]
    return np.sum(xs.pop() * xs.pop(0)) + np.sum(xs[0])


def setdefault_inside_an_expression(x):
    d = {"a": x}
    return np.sum(d.setdefault("b", x * 3) * d["a"]) + np.sum(d["b"])


def pop_in_an_if_test(x):
    xs = [x, 2 * x]
    if np.sum(xs.pop()) > 0:
        return np.sum(xs[0] * 3)
    return np.sum(xs[-1])


def pop_in_a_while_body_expression(x):
    xs = [x, np.sin(x), x * x]
    total = 0.0
    while xs:
        total = total + np.sum(xs.pop() * x)
    return total


def nested_pops(x):
    keys = [0, 1]
    xs = [x, np.cos(x), x * x]
    return np.sum(xs.pop(keys.pop()) * xs[0])


@pytest.mark.parametrize("f", [pop_inside_an_expression, two_pops_and_a_later_read,
                               setdefault_inside_an_expression, pop_in_an_if_test,
                               pop_in_a_while_body_expression, nested_pops],
                         ids=lambda f: f.__name__)
def test_a_method_returning_a_value_inside_an_expression_matches_finite_differences(f):
    assert check_grads(f, (X,))
    jvp_matches_finite_differences(f, (X,))


def pop_after_a_read_of_the_list(x):
    xs = [x, 2 * x]
    return np.sum(xs[0] + xs.pop())


def pop_in_a_conditional_branch(x):
    xs = [x, 2 * x]
    return np.sum(xs.pop() if np.sum(x) > 0 else xs[0])


@pytest.mark.parametrize("f, fragment", [
    (pop_after_a_read_of_the_list, "return np.sum(xs[0] + xs.pop())"),
    (pop_in_a_conditional_branch, "return np.sum(xs.pop() if"),
])
def test_a_pop_that_moving_would_change_is_refused_at_its_line(f, fragment):
    assert_refused(f, (X,), fragment, "reads the list before it")


# ----- 3. g(*xs) where xs fills g's *args -----

def star_into_a_nested_varargs_def(x):
    def g(*vs):
        return sum(np.sum(v) for v in vs)
    xs = [x * i for i in range(int(x.shape[0]))]
    return g(*xs)


def total_of(scale, *vs):
    t = 0.0
    for v in vs:
        t = t + np.sum(np.sin(v)) * scale
    return t


def star_into_a_global_varargs_helper(x):
    xs = [x * i for i in range(int(x.shape[0]))]
    return total_of(2.0, *xs) + total_of(0.5)


def star_of_a_generator_tuple(x):
    xs = tuple(np.sin(x[i]) * x for i in range(x.shape[0]))
    return total_of(1.5, *xs)


@pytest.mark.parametrize("f", [star_into_a_nested_varargs_def, star_into_a_global_varargs_helper,
                               star_of_a_generator_tuple], ids=lambda f: f.__name__)
def test_star_unpacking_into_varargs_matches_finite_differences(f):
    assert check_grads(f, (X,))
    assert check_grads(f, (np.array([0.2, 0.4, -0.1, 0.9]),))   # another length: same code
    jvp_matches_finite_differences(f, (X,))


def star_into_fixed_parameters(x):
    def g(a, b):
        return np.sum(a * b)
    xs = [x * i for i in range(int(x.shape[0]))]
    return g(*xs)


def test_star_unpacking_of_a_runtime_length_into_fixed_parameters_is_refused():
    assert_refused(star_into_fixed_parameters, (X,), "return g(*xs)", "*-unpacking")


# ----- 4. sorting a list argument in place -----

def sorts_its_argument(lst):
    lst.sort()
    return lst[0] * 2.0 + lst[2] ** 2


def sorts_arrays_by_key(lst, x):
    lst.sort(key=lambda v: float(np.sum(v)), reverse=True)
    return np.sum(lst[0] * x + lst[1] ** 2)


def sorts_in_a_helper(x):
    return sorts_its_argument([x[0], x[2], x[1]])


def on_a_copy(f):
    """``f`` called on a copy of its list argument: the finite differences of the Python
    function, which sorts the caller's list, must not move the entries they perturb."""
    def copied(lst, *rest):
        return f(list(lst), *rest)
    return copied


def test_sorting_a_list_argument_sends_each_gradient_to_its_original_position():
    values = [1.5, 0.2, 0.7]
    g = sg.grad(sorts_its_argument)(values)
    # By hand: sorted [0.2, 0.7, 1.5]; 2 * lst[0] + lst[2]**2 -> d/d0.2 = 2, d/d1.5 = 3
    np.testing.assert_allclose(g, [3.0, 2.0, 0.0])
    np.testing.assert_allclose(g, numerical_grad(on_a_copy(sorts_its_argument), (values,)))
    assert values == [1.5, 0.2, 0.7]   # a gradient call leaves the caller's list as it was
    out, dout = sg.jvp(sorts_its_argument, (values,), ([0.1, 1.0, -0.5],))
    assert out == sorts_its_argument(list(values))
    np.testing.assert_allclose(dout, 3.0 * 0.1 + 2.0 * 1.0)


def test_sorting_a_list_of_arrays_by_key_matches_finite_differences():
    lst = [np.ones(3), -0.5 * np.ones(3), np.arange(3.0) + 0.5]   # keys 3, -1.5, 4.5: no tie
    x = np.array([0.3, 0.1, 2.0])
    dl, dx = sg.grad(sorts_arrays_by_key, wrt=(0, 1))(lst, x)
    nl, nx = numerical_grad(on_a_copy(sorts_arrays_by_key), (lst, x), wrt=(0, 1))
    for a, b in zip(dl, nl):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, nx, rtol=1e-6, atol=1e-8)


def test_sorting_a_list_passed_to_a_helper_matches_finite_differences():
    assert check_grads(sorts_in_a_helper, (X,))


# ----- 5. forward mode through a dataclass method -----

@dataclasses.dataclass
class Model:
    w: np.ndarray
    b: float = 0.5

    def loss(self, x):
        return np.sum(np.tanh(self.w * x + self.b)) + self.penalty()

    def penalty(self):
        return 0.1 * np.sum(self.w ** 2)


def calls_a_dataclass_method(p, x):
    return p.loss(x)


def test_jvp_through_a_dataclass_method_matches_finite_differences():
    p = Model(np.array([0.5, -1.0, 2.0]))
    t, tw = RNG.standard_normal(3), RNG.standard_normal(3)
    _, dout = sg.jvp(calls_a_dataclass_method, (p, X), (Model(tw, 0.7), t))
    h = 1e-6
    fd = (calls_a_dataclass_method(Model(p.w + h * tw, p.b + h * 0.7), X + h * t)
          - calls_a_dataclass_method(Model(p.w - h * tw, p.b - h * 0.7), X - h * t)) / (2 * h)
    np.testing.assert_allclose(dout, fd, rtol=1e-6)
    jvp_matches_finite_differences(lambda_free_method_call, (X, p))
    np.testing.assert_allclose(sg.jacfwd(calls_a_dataclass_method, wrt=1)(p, X),
                               sg.grad(calls_a_dataclass_method, wrt=1)(p, X), rtol=1e-10)
    np.testing.assert_allclose(sg.hessian(calls_a_dataclass_method, wrt=1)(p, X),
                               fd_jacobian(lambda x: sg.grad(calls_a_dataclass_method, wrt=1)(p, x), X),
                               rtol=1e-5, atol=1e-7)


def lambda_free_method_call(x, p):
    return p.loss(x) * 2.0


# ----- dataclasses built inside f, dataclasses.replace -----

def builds_a_dataclass(x):
    p = Model(w=x, b=1.0)
    q = dataclasses.replace(p, b=np.sum(x) * 2.0)
    return np.sum(q.w * q.b + p.w * p.b)


def builds_one_and_calls_its_method(x):
    m = Model(np.cos(x), b=0.2)    # b's default and a positional w
    return m.loss(x) + np.sum(Model(np.sin(x)).w * Model(x).b)


def replaces_a_field_of_an_argument(p, x):
    q = dataclasses.replace(p, w=p.w * x)
    return np.sum(q.w ** 2 * q.b)


@pytest.mark.parametrize("f", [builds_a_dataclass, builds_one_and_calls_its_method],
                         ids=lambda f: f.__name__)
def test_a_dataclass_built_inside_f_matches_finite_differences(f):
    assert check_grads(f, (X,))
    jvp_matches_finite_differences(f, (X,))
    np.testing.assert_allclose(sg.hessian(f)(X), fd_jacobian(sg.grad(f), X), rtol=1e-5, atol=1e-7)


def test_replace_of_a_dataclass_argument_matches_finite_differences():
    p = Model(X + 1.0, 0.5)
    assert check_grads(replaces_a_field_of_an_argument, (p, X), wrt=(0, 1))
    jvp_matches_finite_differences(replaces_a_field_of_an_argument, (p, X), k=1)
    dp, _ = sg.grad(replaces_a_field_of_an_argument, wrt=(0, 1))(p, X)
    assert isinstance(dp, Model)


@dataclasses.dataclass
class WithPostInit:
    w: np.ndarray

    def __post_init__(self):
        self.w = self.w * 2.0


def builds_one_with_post_init(x):
    return np.sum(WithPostInit(x).w)


def test_a_dataclass_with_its_own_init_steps_is_refused_at_its_line():
    assert_refused(builds_one_with_post_init, (X,), "return np.sum(WithPostInit(x).w)",
                   "WithPostInit", error=SrcgradError)


# ----- 6. a dict of global functions called with a run-time key -----

def relu(v):
    return np.maximum(v, 0)


ACTS = {"tanh": np.tanh, "relu": relu, "sin": np.sin}
LAYERS = [np.sin, np.cos, relu]


def act_by_name(x, name):
    return np.sum(ACTS[name](x))


def layer_by_index(x, i):
    return np.sum(LAYERS[i](x) * x)


@pytest.mark.parametrize("name", ["tanh", "relu", "sin"])
def test_a_global_table_called_by_a_runtime_key_matches_finite_differences(name):
    assert check_grads(act_by_name, (X, name))
    t = RNG.standard_normal(3)
    _, dout = sg.jvp(act_by_name, (X, name), (t, None))
    h = 1e-6
    np.testing.assert_allclose(dout, (act_by_name(X + h * t, name) - act_by_name(X - h * t, name)) / (2 * h),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("i", [0, 1, 2, -1, -3])
def test_a_global_list_called_by_a_runtime_index_matches_finite_differences(i):
    assert check_grads(layer_by_index, (X, i))


def test_a_key_not_in_the_global_table_raises_as_python_does_and_a_new_key_compiles_anew():
    with pytest.raises(KeyError, match="gelu"):
        sg.grad(act_by_name)(X, "gelu")
    with pytest.raises(IndexError):
        sg.grad(layer_by_index)(X, 3)
    ACTS["gelu"] = np.cos
    try:
        assert check_grads(act_by_name, (X, "gelu"))
    finally:
        del ACTS["gelu"]
    with pytest.raises(KeyError, match="gelu"):
        sg.grad(act_by_name)(X, "gelu")


# ----- a constant table zipped with a variable of f -----

ACT_LIST = [np.tanh, relu]


def mlp_zipping_activations_with_params(params, x):
    for act, (W, b) in zip(ACT_LIST, params):
        x = act(W @ x + b)
    return np.sum(x ** 2)


def lambdas_zipped_with_weights(x):
    fs = [lambda v: np.sin(v), lambda v: v ** 3]
    ws = [0.5, -2.0, 7.0]   # longer: zip stops at the table's end, as Python's does
    return sum(w * np.sum(fn(x)) for fn, w in zip(fs, ws))


def zips_a_dict(d, x):
    total = 0.0
    for act, k in zip(ACT_LIST, d):
        total = total + np.sum(act(x)) * k
    return total


def test_a_constant_table_zipped_with_a_variable_matches_finite_differences():
    params = [(A, X), (A.T.copy(), -X)]
    assert check_grads(mlp_zipping_activations_with_params, (params, X), wrt=(0, 1))
    assert check_grads(lambdas_zipped_with_weights, (X,))
    jvp_matches_finite_differences(lambdas_zipped_with_weights, (X,))


def test_a_variable_too_short_or_not_a_sequence_for_the_zip_is_refused_at_the_loop():
    with pytest.raises(UnsupportedError) as info:
        sg.grad(mlp_zipping_activations_with_params, wrt=1)([(A, X)], X)
    assert info.value.filename == __file__ and "zip(ACT_LIST, params)" in info.value.source_line
    assert "at least the 2 items" in str(info.value)
    with pytest.raises(UnsupportedError, match="not a list, tuple or array"):   # Python: its keys
        sg.grad(zips_a_dict, wrt=1)({0: 1.0, 1: 2.0}, X)


# ----- programs the way a new user writes them -----

def mlp_dict(params, x):
    h = np.tanh(params["w1"] @ x + params["b1"])
    return np.sum((params["w2"] @ h + params["b2"]) ** 2)


def layers_list(params, x):
    for W, b in params:
        x = np.tanh(W @ x + b)
    return np.sum(x ** 2)


def reduce_of_a_lambda(x):
    return np.sum(functools.reduce(lambda a, b: a * b, [x, np.sin(x), x + 1.0]))


def reduce_of_operator_add(x):
    return np.sum(functools.reduce(operator.add, [x, np.cos(x), x * x]))


def reduce_with_an_initial_value(x):
    w = 2.0
    return reduce(lambda acc, v: acc + w * np.sum(v ** 2), [x, np.sin(x)], 0.0)


def reduce_over_rows(m):
    return np.sum(reduce(np.maximum, m))


def itertools_combinations(x):
    total = 0.0
    for a, b in itertools.combinations(range(3), 2):
        total = total + x[a] * x[b]
    return total


def itertools_product(x):
    total = 0.0
    for i, j in itertools.product(range(2), range(3)):
        total = total + x[j] ** (i + 1)
    return total


def enumerate_zip(x, y):
    total = 0.0
    for i, (a, b) in enumerate(zip(x, y)):
        total = total + (i + 1) * a * b
    return total


def math_on_scalars(a):
    return math.exp(a) * math.sin(a) + math.sqrt(a * a + 1.0) + math.log1p(a * a) + math.tanh(a)


def math_prod_and_fsum(x):
    return math.prod([x[0], x[1], 2.0]) + math.fsum([x[0], x[2]]) + math.prod([x[2], x[1]], start=x[0])


def kw_helper(x, **kw):
    s = kw.get("scale", 1.0)
    t = kw.get("shift", 0.0)
    return np.sum(np.sin(x) * s + t)


def kwargs_helper(x):
    return kw_helper(x, scale=2.0, shift=0.5) + kw_helper(x)


def nested_closures(x):
    w = 1.5

    def inner(v):
        def innermost(u):
            return u * w
        return np.tanh(innermost(v))
    return np.sum(inner(x) ** 2)


def einsum_bilinear(M, x, y):
    return np.einsum("ij,i,j->", M, x, y) + np.sum(np.einsum("ij,j->i", M, y) ** 2)


def transpose_matmul(M, B):
    return np.sum((M.T @ B) ** 2)


def where_leaky_relu(x):
    return np.sum(np.where(x > 0, x, 0.1 * x) ** 2)


def generator_sum(x):
    return sum(np.sum(x ** k) / (k + 1) for k in range(4))


def dict_comprehension(x):
    d = {f"p{k}": x * k for k in range(3)}
    return sum(np.sum(v ** 2) for v in d.values())


def loop_over_dict_keys(params, other):
    return sum(np.sum(params[k] * other[k]) for k in params)


def sgd_step_comprehension(params, x):
    new = {k: params[k] - 0.1 * x for k in params}
    return sum(np.sum(v ** 2) for v in new.values())


def softmax_cross_entropy(logits, label):
    z = logits - np.max(logits)
    logp = z - np.log(np.sum(np.exp(z)))
    return -logp[label]


def tuple_returning_helper(x):
    def split(v):
        return v[:1], v[1:]
    a, b = split(x)
    return np.sum(a ** 2) + np.sum(np.sin(b))


def newton_sqrt(a):
    y = 1.0
    for _ in range(20):
        y = 0.5 * (y + a / y)
    return y


def mse(w, xs, ys):
    preds = xs @ w
    return np.mean((preds - ys) ** 2)


def clip_times_norm(x):
    return np.sum(np.clip(x, -0.5, 0.5)) * np.linalg.norm(x)


def stack_and_concatenate(x):
    m = np.stack([x, np.sin(x)], axis=0)
    c = np.concatenate([x, x ** 2])
    return np.sum(m ** 2) + np.sum(c)


def sorted_dict_items(x):
    d = {"b": x * 2, "a": np.sin(x)}
    total = 0.0
    for k, v in sorted(d.items()):
        total = total * 0.5 + np.sum(v)
    return total


def max_of_scalars(x):
    return max(np.sum(x), np.sum(x ** 2), 0.0)


def abs_and_sign(x):
    return np.sum(np.abs(x) * np.sign(x) + abs(x[0]))


def reshape_and_ravel(m):
    return np.sum(m.reshape(-1) * np.arange(m.size)) + np.sum(m.ravel() ** 2)


def moments(x):
    return np.var(x) + np.mean(x) ** 2 + np.std(x)


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def partial_of_a_lambda(x):
    w = 2.0
    scale = functools.partial(lambda v, s: v * s * w, s=3.0)
    w = 0.5   # the lambda reads w when called, as a closure does
    return np.sum(scale(x) * scale(x, s=-1.0))


def partial_of_numpy(x):
    f = functools.partial(np.power, x)
    return np.sum(f(2) + f(3))


def map_of_a_lambda(x):
    return sum(map(lambda v: v * v, [x[0], x[1], x[2]]))


def all_of_a_generator(x):
    if all(v > -5 for v in x):
        return np.sum(x ** 2)
    return np.sum(x)


def dict_get_with_default(params, x):
    b = params.get("b", 0.0)
    return np.sum(params["w"] * x + b)


def reversed_horner(x):
    total = 0.0
    for i in reversed(range(3)):
        total = total * x[i] + 1.0
    return total


def quadratic_form_chain(M, x):
    return float(x @ M @ M.T @ x)


def itertools_chain_and_accumulate(x):
    total = 0.0
    for v in itertools.chain([x[0], x[1]], [x[2]]):
        total = total + v ** 2
    acc = list(itertools.accumulate([x[0], x[1], x[2]]))
    prods = list(itertools.accumulate([x[0], x[1], x[2]], operator.mul))
    return total + acc[-1] * acc[1] + prods[-1]


def itertools_pairwise(x):
    total = 0.0
    for a, b in itertools.pairwise([x[0], x[1], x[2]]):
        total = total + a * b
    return total


def ordered_dict_built_up(x):
    d = collections.OrderedDict()
    d["a"] = x
    d["b"] = x * 2
    return np.sum(d["a"] * d["b"])


def default_dict_accumulating(x):
    d = collections.defaultdict(float)
    d["a"] += np.sum(x)
    d["a"] += np.sum(x ** 2)
    return d["a"]


def zip_star_of_a_display(x):
    total = 0.0
    for a, b in zip(*[[x[0], x[1]], [x[2], x[0] * 2]]):
        total = total + a * b
    return total


def star_of_a_display_into_a_helper(x):
    return pair_product(*[x, np.sin(x)], scale=2.0)


def pair_product(a, b, scale=1.0):
    return np.sum(a * b) * scale


def items_loop_with_key_length(params):
    total = 0.0
    for k, v in params.items():
        total = total + np.sum(v ** 2) * len(k)
    return total


def flatten_params(params):
    flat = np.concatenate([a.ravel() for a in params.values()])
    return np.sum(flat ** 2)


def method_chain(x):
    return np.tanh(x).sum() + x.mean() * x.max() + (x ** 2).std()


def append_then_array(x):
    ys = []
    for i in range(3):
        ys.append(x[i] ** 2)
    return np.sum(np.array(ys) * np.arange(3))


def kwargs_passed_through(x):
    return outer_opts(x, alpha=0.5)


def outer_opts(x, **opts):
    return inner_opts(x, **opts)


def inner_opts(x, alpha=1.0, beta=0.0):
    return np.sum(np.sin(x) * alpha + beta)


def while_to_tolerance(a):
    y = 1.0
    while abs(y * y - a) > 1e-12:
        y = 0.5 * (y + a / y)
    return y


def print_assert_and_raise(x):
    assert x.shape == (3,), "bad shape"
    if x.ndim != 1:
        raise ValueError(f"expected a vector, got {x.ndim} dims")
    print("debug", x.shape)
    return np.sum(x ** 3)


def stacks_a_comprehension(xs):
    return np.sum(np.stack([np.sin(xi) * xi for xi in xs]) ** 2)


def scan_with_a_carry(x):
    carry = 0.0
    outs = []
    for v in x:
        carry = carry * 0.9 + v
        outs.append(carry)
    return np.sum(np.array(outs) ** 2)


def nested_dict_params(params, x):
    h = np.tanh(params["enc"]["w"] @ x)
    return np.sum((params["dec"]["w"] @ h) ** 2)


def ternary_in_a_generator(x):
    return sum(v if v > 0 else -v * 0.5 for v in x)


def logistic_regression(w, xs, ys):
    p = 1.0 / (1.0 + np.exp(-(xs @ w)))
    return -np.mean(ys * np.log(p) + (1 - ys) * np.log(1 - p))


P = {"w1": RNG.standard_normal((4, 3)), "b1": RNG.standard_normal(4),
     "w2": RNG.standard_normal((2, 4)), "b2": RNG.standard_normal(2)}

PROGRAMS = [
    (mlp_dict, (P, X), 0), (layers_list, ([(A, X), (A.T, -X)], X), (0, 1)),
    (reduce_of_a_lambda, (X,), 0), (reduce_of_operator_add, (X,), 0),
    (reduce_with_an_initial_value, (X,), 0), (reduce_over_rows, (np.outer(X, X + 1),), 0),
    (itertools_combinations, (X,), 0), (itertools_product, (X,), 0),
    (enumerate_zip, (X, X[::-1].copy()), (0, 1)), (math_on_scalars, (0.7,), 0),
    (math_prod_and_fsum, (X,), 0), (kwargs_helper, (X,), 0), (nested_closures, (X,), 0),
    (einsum_bilinear, (A, X, X * 2), (0, 1, 2)), (transpose_matmul, (A, A[:, :2].copy()), (0, 1)),
    (where_leaky_relu, (X,), 0), (generator_sum, (X,), 0), (dict_comprehension, (X,), 0),
    (loop_over_dict_keys, ({"a": X, "b": X * 2}, {"a": X + 1, "b": X - 1}), (0, 1)),
    (sgd_step_comprehension, ({"w": X, "b": X[::-1].copy()}, X), (0, 1)),
    (softmax_cross_entropy, (X, 1), 0), (tuple_returning_helper, (X,), 0), (newton_sqrt, (2.0,), 0),
    (mse, (X, A, X * 3), 0), (clip_times_norm, (X,), 0), (stack_and_concatenate, (X,), 0),
    (sorted_dict_items, (X,), 0), (max_of_scalars, (X,), 0), (abs_and_sign, (X,), 0),
    (reshape_and_ravel, (A,), 0), (moments, (X,), 0), (logsumexp, (X,), 0),
    (partial_of_numpy, (np.abs(X) + 0.5,), 0), (partial_of_a_lambda, (X,), 0), (map_of_a_lambda, (X,), 0),
    (all_of_a_generator, (X,), 0), (dict_get_with_default, ({"w": X, "b": 0.5}, X), (0, 1)),
    (reversed_horner, (X,), 0), (quadratic_form_chain, (A, X), (0, 1)),
    (itertools_chain_and_accumulate, (X,), 0), (ordered_dict_built_up, (X,), 0),
    (default_dict_accumulating, (X,), 0), (zip_star_of_a_display, (X,), 0),
    (star_of_a_display_into_a_helper, (X,), 0), (items_loop_with_key_length, ({"ab": X, "c": X * 2},), 0),
    (flatten_params, ({"a": A, "b": X},), 0), (method_chain, (X,), 0), (append_then_array, (X,), 0),
    (kwargs_passed_through, (X,), 0), (while_to_tolerance, (2.0,), 0),
    (logistic_regression, (X, A, np.array([1.0, 0.0, 1.0])), 0),
    (print_assert_and_raise, (X,), 0), (stacks_a_comprehension, (A,), 0), (scan_with_a_carry, (X,), 0),
    (nested_dict_params, ({"enc": {"w": A}, "dec": {"w": A.T.copy()}}, X), 0),
    (ternary_in_a_generator, (X,), 0),
] + ([(itertools_pairwise, (X,), 0)] if hasattr(itertools, "pairwise") else [])


@pytest.mark.parametrize("f, args, wrt", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_programs_as_users_write_them_match_finite_differences(f, args, wrt):
    assert check_grads(f, args, wrt=wrt)


FORWARD = [reduce_of_a_lambda, reduce_with_an_initial_value, math_prod_and_fsum, nested_closures,
           where_leaky_relu, dict_comprehension, itertools_combinations, logsumexp, map_of_a_lambda,
           itertools_chain_and_accumulate, ordered_dict_built_up, zip_star_of_a_display,
           star_of_a_display_into_a_helper]


@pytest.mark.parametrize("f", FORWARD, ids=lambda f: f.__name__)
def test_programs_as_users_write_them_in_forward_mode(f):
    jvp_matches_finite_differences(f, (X,))


@pytest.mark.parametrize("f", [reduce_with_an_initial_value, reduce_of_a_lambda, itertools_product,
                               lambdas_with_a_default_from_a_range, pop_inside_an_expression,
                               star_into_a_global_varargs_helper],
                         ids=lambda f: f.__name__)
def test_programs_have_hessians_matching_finite_differences_of_the_gradient(f):
    np.testing.assert_allclose(sg.hessian(f)(X), fd_jacobian(sg.grad(f), X), rtol=1e-5, atol=1e-7)


def loss_with_aux(x):
    loss = np.sum(x ** 2)
    return loss, {"norm": np.sqrt(loss)}


def test_a_tuple_return_with_has_aux():
    assert check_grads(loss_with_aux, (X,), has_aux=True)
    g, aux = sg.grad(loss_with_aux, has_aux=True)(X)
    np.testing.assert_allclose(g, 2 * X)
    np.testing.assert_allclose(aux["norm"], np.linalg.norm(X))


def namedtuple_class_made_inside(x):
    S = collections.namedtuple("S", "a b")
    s = S(x, x * 2)
    return np.sum(s.a * s.b)


def test_a_class_made_inside_the_function_is_refused_at_its_line():
    assert_refused(namedtuple_class_made_inside, (X,), "s = S(x, x * 2)", "local variable `S`")


def zip_of_array_rows(m):
    return sum(a * b for a, b in list(zip(*[m[0], m[1]])))


def make_act(alpha):
    return lambda v: np.maximum(v, alpha * v)


def calls_what_a_factory_returns(x):
    act = make_act(0.1)   # evaluated when f runs: srcgrad does not run user code to compile
    return np.sum(act(x) ** 2)


def calls_getattr_of_a_module(x, name):
    return np.sum(getattr(np, name)(x))


def test_a_function_made_when_f_runs_is_refused_at_the_call():
    assert_refused(calls_what_a_factory_returns, (X,), "return np.sum(act(x) ** 2)",
                   "calling the local variable `act`")
    assert_refused(calls_getattr_of_a_module, (X, "tanh"), "return np.sum(getattr(np, name)(x))",
                   "calling the result of a call, `getattr(np, name)(...)`")


def test_zip_of_arrays_made_a_list_is_refused_at_its_line():
    # zip in a for loop's header is a loop over positions; a list of an array's zip is not
    assert_refused(zip_of_array_rows, (A,), "list(zip(*[m[0], m[1]]))", "zip", error=SrcgradError)


def test_an_empty_reduce_without_an_initial_value_raises_as_python_would():
    def empty(x):
        return functools.reduce(operator.add, [x[k] for k in range(0)])
    with pytest.raises(TypeError, match="reduce\\(\\) of empty iterable"):
        sg.grad(empty)(X)
