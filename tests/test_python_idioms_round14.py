"""Python as people write it, round fourteen.

* A list or dict argument the function changes in place (``stack.pop()``, ``d[k] = v``,
  ``del d[k]``, ``xs.extend(ys)``, ``xs.insert(i, v)``, ``xs += [v]``, also inside a helper
  it is passed to): after one call of grad, value_and_grad, vjp, jvp, hessian, a gradient
  of a gradient or jit=True the caller's object is what one call of the function leaves
  (transform/argument_effects.py; grad left it as it was, jvp changed it, a Hessian changed
  it once per column). A differentiated argument is left as it was in every mode.
* ``collections.defaultdict(lambda: [])`` (a literal lambda passed to a call),
  ``statistics.mean``/``fmean`` of a list of numbers.
* A local alias of a callable: ``f = Exp.apply; f(x)``, ``act = np.tanh if USE_TANH else
  relu``, ``step = layer.forward``; and ``(np.tanh if flag else relu)(x)``.
* A plain class built in the function whose module asks some value its type elsewhere
  (``describe`` below: it was refused for the text ``type(`` anywhere in the module), and
  its operators building instances by ``type(self)(...)``/``self.__class__(...)``.

* ``sg.register_hook`` inside a function whose second derivative is asked: a hook that
  only reads is kept; one that changes the gradient is refused, saying why.

Each program is checked against central differences in float64 through every mode
(tests/adversarial_checks.py); what stays out of reach is refused at the user's line."""

import collections
import statistics
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.jit import JitFallbackWarning
from srcgrad.testing import numerical_grad
from tests import adversarial_checks
from tests.adversarial_checks import assert_refused_in

X = np.array([0.3, -0.5, 0.7, 0.2])
V = np.array([0.7, -1.1, 0.4, 2.0])
W = np.array([1.3, 0.2, -0.6, 0.9])
HERE = "test_python_idioms_round14.py"


# ----- a list or dict argument changed in place -----

def stack_ops(x, stack):
    stack.append(np.sin(x))
    top = stack.pop(0)
    stack.insert(0, x * 2.0)
    return np.sum(top * x) + np.sum(stack[-1] ** 2)


def cache_writes(x, cache):
    cache["y"] = np.tanh(x)
    cache["n"] = cache.get("n", 0) + 1
    del cache["old"]
    return np.sum(cache["y"] * x) * cache["n"]


def _keep(history, v):
    history.extend([np.cos(v)])


def helper_extends(x, history):
    _keep(history, x)
    _keep(history, x * x)
    return np.sum(np.stack(history) ** 2)


def augmented_list(x, xs):
    xs += [x * 3.0]
    return np.sum(xs[-1] * x)


def item_list_append(x, groups):
    groups["a"].append(x * 2.0)
    return np.sum(groups["a"][-1] * x)


def pops_the_last(x, todo):
    scale = todo.pop()
    return np.sum(np.sin(x * scale))


def appends_a_gradient_value(x, acts):
    acts.append(np.sin(x))   # (the reverse sweep undid this append in the caller's list)
    _keep(acts, x)
    return np.sum(acts[-1] * acts[-2])


def rebinds_first(x, d):
    d = dict(d)   # the function's own dict from here: the caller's stays as it was
    d["k"] = x
    return np.sum(d["k"] ** 2)


STATE = [
    (stack_ops, lambda: [np.ones(4), np.arange(4.0)]),
    (cache_writes, lambda: {"old": 1, "n": 2}),
    (helper_extends, lambda: [np.ones(4)]),
    (augmented_list, lambda: [np.zeros(4)]),
    (item_list_append, lambda: {"a": [np.ones(4)]}),
    (pops_the_last, lambda: [0.5, 2.0, 3.0]),
    (appends_a_gradient_value, lambda: [np.ones(4)]),
    (rebinds_first, lambda: {"z": 1.0}),
]


def _same(a, b):
    """Equal lists/dicts of arrays and numbers, in the same order."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return np.array_equal(a, b)


def _modes(f, x):
    inner = sg.grad(f)
    return {
        "grad": lambda a: sg.grad(f)(x, a),
        "value_and_grad": lambda a: sg.value_and_grad(f)(x, a)[1],
        "vjp": lambda a: sg.vjp(f)(x, a)[1](),
        "jvp": lambda a: sg.jvp(f, (x, a), (V, None))[1],
        "hessian": lambda a: sg.hessian(f)(x, a),
        "grad of grad": lambda a: sg.grad(lambda x, a: np.sum(inner(x, a) * W))(x, a),
        "jit": lambda a: sg.grad(f, jit=True)(x, a),
    }


@pytest.mark.parametrize("f, make", STATE, ids=[f.__name__ for f, _ in STATE])
def test_the_caller_sees_one_calls_change_in_every_mode(f, make):
    want = make()
    f(X.copy(), want)   # what one call of f leaves
    want_grad = numerical_grad(lambda x: f(x, make()), (X,))
    hess = np.stack([(sg.grad(f)(X + e, make()) - sg.grad(f)(X - e, make())) / 2e-5
                     for e in np.eye(4) * 1e-5], axis=1)
    for mode, run in _modes(f, X).items():
        given = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            result = run(given)
        assert _same(given, want), (mode, given, want)
        if mode == "jvp":
            np.testing.assert_allclose(result, want_grad @ V, rtol=1e-6, atol=1e-8)
        elif mode == "hessian":
            np.testing.assert_allclose(result, hess, rtol=1e-6, atol=1e-6)
        elif mode == "grad of grad":
            np.testing.assert_allclose(result, hess @ W, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_allclose(result, want_grad, rtol=1e-6, atol=1e-8)


def test_the_value_is_read_after_the_change_and_the_caller_keeps_its_items():
    """value_and_grad's value is Python's; items the function left are the caller's own
    objects, new ones are arrays the reverse sweep no longer writes into."""
    stack = [np.ones(4), np.arange(4.0)]
    kept = stack[1]
    value, g = sg.value_and_grad(stack_ops)(X, stack)
    np.testing.assert_allclose(value, stack_ops(X, [np.ones(4), np.arange(4.0)]), rtol=1e-13)
    assert stack[1] is kept and len(stack) == 3
    np.testing.assert_allclose(stack[0], X * 2.0, rtol=1e-15)
    np.testing.assert_allclose(stack[2], np.sin(X), rtol=1e-15)


def test_a_differentiated_list_is_left_as_it_was_in_every_mode():
    """The gradient of a list argument has the structure the caller passed."""
    def pops(xs):
        last = xs.pop()
        return np.sum(xs[0] * last)

    a, b = X.copy(), V.copy()
    for run in (lambda xs: sg.grad(pops)(xs), lambda xs: sg.value_and_grad(pops)(xs)[1],
                lambda xs: sg.jvp(pops, (xs,), ([V, W],))[1], lambda xs: sg.hessian(pops)(xs)):
        xs = [a, b]
        run(xs)
        assert len(xs) == 2 and xs[0] is a and xs[1] is b
    da, db = sg.grad(pops)([a, b])
    np.testing.assert_allclose(da, b, rtol=1e-12)
    np.testing.assert_allclose(db, a, rtol=1e-12)


def test_the_generated_code_writes_back_into_the_callers_object():
    code = sg.source(cache_writes)
    assert "write_back(caller_cache, cache)" in code
    assert "write_back" not in sg.source(rebinds_first)


# ----- defaultdict(lambda: ...), statistics -----

def defaultdict_of_a_lambda(x):
    groups = collections.defaultdict(lambda: [])
    totals = collections.defaultdict(lambda: 0.0)
    for i in range(4):
        groups[i % 2].append(x[i] * 2.0)
        totals[i % 2] += x[i] ** 2
    return sum(groups[0]) * sum(groups[1]) + totals[0] * totals[1]


def statistics_means(x):
    values = [np.sum(x ** k) for k in range(1, 4)]
    return statistics.mean(values) * statistics.fmean(values) + statistics.mean([x[0], x[1] * x[2]])


def generators_of_scalars(x):
    return sum(x[i] ** 2 for i in range(4)) * max(np.sin(v) for v in x) + min(x[i] * x[3] for i in range(3))


# ----- a local alias of a callable -----

class Exp(sg.Function):
    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y

    @staticmethod
    def jvp(ctx, t):
        y, = ctx.saved_tensors
        return t * y


USE_TANH = True


def relu_like(v):
    return np.log1p(np.exp(v))


def local_apply_alias(x):
    exp = Exp.apply
    return np.sum(exp(x * 0.5) * x)


def local_conditional_alias(x):
    act = np.tanh if USE_TANH else relu_like
    other = relu_like if USE_TANH else np.tanh
    return np.sum(act(x) ** 2 + other(x))


def conditional_callee(x):
    return np.sum((np.sin if x.size > 3 else relu_like)(x) * x)


class Layer:
    def __init__(self, w):
        self.w = w

    def forward(self, v):
        return np.tanh(self.w * v)


def method_alias(x):
    layer = Layer(x * 0.5)
    step = layer.forward
    return np.sum(step(x) * step(x + 1.0))


# ----- plain classes in a module that asks types elsewhere; type(self)(...) -----

class Dual:
    """A plain class whose operators build new instances by ``type(self)(...)`` and
    ``self.__class__(...)``."""

    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return type(self)(self.v + other.v)

    def __mul__(self, other):
        return self.__class__(self.v * other.v)

    def total(self):
        return np.sum(self.v)


def dual_chain(x):   # (the result of a * b is the self of __add__)
    a = Dual(x)
    b = Dual(np.cos(x))
    return (a * b + a).total() * (a + b * a).total()


def dual_numbers(x):
    a = Dual(x)
    b = Dual(np.sin(x))
    c = a * b
    return c.total() + (a + b).total() * c.total()


class Scale:
    def __init__(self, w):
        self.w = w

    def __call__(self, v):
        return np.tanh(self.w * v)


def plain_model(x):
    model = Scale(x * 0.5)
    return np.sum(model(x) ** 2)


def describe(value):   # (asks a type: not code the plain_model gradient runs)
    return f"{type(value).__name__} of shape {np.shape(value)}"


def is_a_scale(m):
    return type(m) is Scale


def asks_the_class(x):
    model = Scale(x)
    if is_a_scale(model):
        return np.sum(model(x))
    return np.sum(x)


PROGRAMS = [dual_numbers, dual_chain, plain_model, defaultdict_of_a_lambda, statistics_means, generators_of_scalars, local_apply_alias,
            local_conditional_alias, conditional_callee, method_alias]


@pytest.mark.parametrize("f", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
def test_in_all_modes(f):
    adversarial_checks.check_all_modes(f, X, V, W, fallback=True)


# ----- what stays refused -----

def fmean_weights(x):
    return statistics.fmean([x[0], x[1]], weights=[1.0, 2.0])


def attribute_of_an_argument(x, log):
    log.calls = 1
    return np.sum(x * x)


def test_what_stays_refused_names_the_line():
    assert_refused_in(HERE, lambda: sg.grad(asks_the_class)(X), "is_a_scale", "type(...)")
    assert_refused_in(HERE, lambda: sg.grad(fmean_weights)(X), "statistics.fmean", "weights")
    assert_refused_in(HERE, lambda: sg.grad(attribute_of_an_argument)(X, Layer(X)),
                      "assignment to an attribute")
    assert_refused_in(HERE, lambda: sg.jvp(attribute_of_an_argument, (X, Layer(X)), (V, None)),
                      "assignment to an attribute")


# ----- gradient hooks inside a second derivative -----

SEEN = []


def _observe(g):
    SEEN.append(np.array(g))


def _triple(g):
    g *= 3.0


def observed(x):
    y = np.sin(x) * x
    sg.register_hook(y, _observe)
    return np.sum(y ** 2) + np.sum(np.cos(y))


def doubled(x):
    y = np.sin(x)
    sg.register_hook(y, lambda g: g * 2.0)
    return np.sum(y ** 2)


def tripled_in_place(x):
    y = np.sin(x)
    sg.register_hook(y, _triple)
    return np.sum(y ** 2)


def test_a_hook_that_only_reads_is_kept_in_second_derivatives():
    """The hook sees the first-order gradient of y (in a Hessian, once per run of the
    gradient's tangent program); the second derivative is the function's."""
    adversarial_checks.check_all_modes(observed, X, V, W, fallback=True)
    SEEN.clear()
    sg.hessian(observed)(X)
    assert SEEN
    y = np.sin(X) * X
    np.testing.assert_allclose(SEEN[-1], 2 * y - np.sin(y), rtol=1e-12)


@pytest.mark.parametrize("f", [doubled, tripled_in_place])
def test_a_hook_that_changes_the_gradient_is_refused_in_second_derivatives(f):
    np.testing.assert_allclose(sg.grad(f)(X), (3.0 if f is tripled_in_place else 2.0) * 2
                               * np.sin(X) * np.cos(X), rtol=1e-12)   # (first order: fine)
    for run in (lambda: sg.hessian(f)(X), lambda: sg.grad(lambda x: np.sum(sg.grad(f)(x)))(X)):
        with pytest.raises(sg.SrcgradError, match="register_hook") as info:
            run()
        assert HERE in str(info.value)
