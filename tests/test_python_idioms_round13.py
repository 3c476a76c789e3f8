"""Python as people write it, round thirteen: attribute state in methods. ``self.h = v``,
``self.count += 1``, ``self.items.append(v)`` inside methods of a dataclass or plain-class
instance built in the function (an RNN cell keeping its hidden state, a model recording
its activations, a running-mean buffer), and a helper appending to its caller's list
(transform/attribute_state.py, inline._written_back). The caller sees the change, as in
Python; the gradient flows through the stored values. Each program is checked against
central differences in float64 through grad, value_and_grad, jvp, the Hessian, a gradient
of a gradient and jit=True (which falls back, with its warning). What stays out of reach
is refused at the user's line: an instance the caller passed in, another name holding the
instance or the list changed, an attribute that is no field, a frozen dataclass."""

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad
from tests import adversarial_checks
from tests.adversarial_checks import assert_refused_in

X = np.array([0.3, -0.5, 0.7, 0.2])
V = np.array([0.7, -1.1, 0.4, 2.0])
W = np.array([1.3, 0.2, -0.6, 0.9])
HERE = "test_python_idioms_round13.py"


# ----- the programs -----

@dataclass
class Cell:
    """An RNN cell keeping its hidden state in self.h across calls."""
    w: np.ndarray
    h: np.ndarray
    steps: int = 0

    def step(self, x):
        self.h = np.tanh(self.w * self.h + x)
        self.steps += 1
        return self.h

    def run(self, xs):   # a method calling a method that changes self
        for x in xs:
            self.step(x)
        return self.h


def rnn(x):
    cell = Cell(x, np.zeros(4))
    out = 0.0
    for i in range(3):
        out = out + np.sum(cell.step(x * (i + 1)) ** 2)
    return out + np.sum(cell.h * x) * cell.steps


def rnn_nested(x):
    cell = Cell(0.5 * x, np.ones(4))
    y = cell.run([x, x * x, np.sin(x)])
    first = cell.h   # the state is rebound, never written into: first keeps its value
    cell.step(x)
    return np.sum(y * cell.h) + np.sum(first) * cell.steps


def make_cell(x, scale):
    """A factory helper: every return builds a Cell by name, so its result's class is known."""
    return Cell(x * scale, np.ones(4))


def cell_from_a_factory(x):
    cell = make_cell(x, 0.5)
    cell.run([x, np.cos(x)])
    cell.h = cell.h - x   # (and stored in f itself)
    return np.sum(cell.step(x) * cell.h) + cell.steps


class Recorder:
    """A plain class recording its activations in a list and counting its calls."""

    def __init__(self, w, scale=2.0):
        self.w = w
        self.scale = scale
        self.acts = []
        self.calls = 0

    def __call__(self, x):
        y = np.sin(self.w * x) * self.scale
        self.acts.append(y)
        self.calls += 1
        return y


def recorded(x):
    model = Recorder(x)
    y = model(x)
    model.acts.append(y * y)   # (the caller's own append to the same list)
    y = model(y + 1.0)
    return sum(np.sum(a * a) for a in model.acts) * model.calls


def state_set_by_the_caller(x):
    """The function itself stores the state (a reset, an adjustment) between the calls."""
    cell = Cell(x, np.zeros(4))
    cell.step(x)
    before = cell.h   # (rebound below, not written into: keeps its value)
    cell.h = cell.h * 2 + x
    cell.steps += 1
    cell.step(x)
    return np.sum(cell.h * before) * cell.steps


class RunningMean:
    """A running-mean buffer: momentum updates of an array attribute, a sum by +=."""

    def __init__(self, size):
        self.mean = np.zeros(size)
        self.total = np.zeros(size)
        self.n = 0

    def update(self, batch, momentum=0.9):
        self.mean = momentum * self.mean + (1 - momentum) * batch
        self.total += batch
        self.n += 1


def running_mean(x):
    buf = RunningMean(4)
    for k in range(4):
        buf.update(np.cos(x * k) + x)
    return np.sum(buf.mean ** 2) + np.sum(buf.total * x) / buf.n


class Stats:
    """Fields built of constants only (0, 0.0): the batched Hessian's zero tangent of the
    instance was an array, whose field it then read (AttributeError)."""

    def __init__(self):
        self.n = 0
        self.mean = 0.0

    def update(self, v):
        self.n += 1
        self.mean = self.mean + (v - self.mean) / self.n


def constant_fields(x):
    s = Stats()
    for v in x:
        s.update(v ** 3)
    return s.mean * s.n


class LSTMish:
    """Two state attributes stored by one tuple assignment from a method's result."""

    def __init__(self, w):
        self.w = w
        self.h = np.zeros(4)
        self.c = np.zeros(4)

    def cell(self, x, h, c):
        c2 = np.tanh(self.w * h + x) + 0.5 * c
        return np.sin(c2) * h + x, c2

    def __call__(self, x):
        self.h, self.c = self.cell(x, self.h, self.c)
        return self.h


def lstm(x):
    m = LSTMish(x)
    for k in range(3):
        m(x * (k + 1))
    return np.sum(m.h * m.c)


def record(acts, v):
    acts.append(np.sin(v))


def record_two(acts, v):
    acts.extend([np.cos(v), v * v])
    last = acts.pop()
    return last


def helper_lists(x):
    acts = []
    record(acts, x)
    record(acts, 2 * x)
    last = record_two(acts, x)
    return np.sum(acts[0] * acts[1]) + np.sum(last * acts[-1]) * len(acts)


# ----- lists two levels deep changed in place: d[a][b].append(v) -----

def nested_lists(x):
    d = {"a": {"u": [], "v": [x]}, "b": {"u": []}}
    rows = [[[], []], [[]]]
    for k in range(3):
        d["a"]["u"].append(np.sin(x * k))
        d["b"]["u"].extend([x * k, x ** 2])
        rows[k % 2][0].append(x * (k + 1))
    d["a"]["v"].append(x * 3)
    rows[0][1].append(np.cos(x))
    return sum(np.sum(v) for v in d["a"]["u"]) + np.sum(np.stack(d["b"]["u"]) ** 2) \
        + np.sum(d["a"]["v"][1] * d["a"]["v"][0]) + np.sum(rows[0][0][-1] * rows[1][0][0] + rows[0][1][0])


# ----- np.vectorize of a Python-scalar function: the loop over the elements -----

def softplus(v):
    """A Python-scalar function with a branch (each element takes its own)."""
    if v > 0:
        return math.log1p(math.exp(-v)) + v
    return math.log1p(math.exp(v))


@np.vectorize
def huber(r):
    return 0.5 * r * r if abs(r) < 1.0 else abs(r) - 0.5


def vectorized(x):
    smooth = np.vectorize(softplus)(x) * x   # called where it is made
    g = np.vectorize(lambda a, b: math.sin(a) * b + a, otypes=[float])   # bound, then called
    grid = g(x, x[::-1].reshape(1, -1) * np.ones((2, 1)))   # (broadcast to (2, 4))
    return np.sum(smooth) + np.sum(huber(3 * x) * x) + np.sum(grid ** 2)


PROGRAMS = [rnn, rnn_nested, cell_from_a_factory, recorded, state_set_by_the_caller, running_mean,
            constant_fields, lstm, helper_lists, nested_lists, vectorized]


def check_all_modes(f, x=X):
    """tests/adversarial_checks.check_all_modes with this file's points (a dataclass: the
    jit falls back to NumPy, with its warning)."""
    adversarial_checks.check_all_modes(f, x, V, W, fallback=True)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_attribute_state_in_all_modes(f):
    check_all_modes(f)


def test_the_caller_sees_the_state_a_method_changed():
    """The values the function reads after the calls are Python's (checked at other points
    too), and the gradient of the state read afterwards is the finite differences'."""
    def final_state(x):
        cell = Cell(x, np.zeros(4))
        cell.step(x)
        cell.step(x)
        return cell.h, cell.steps

    x = X * 1.7
    for f in (rnn, recorded, running_mean, helper_lists):
        value, g = sg.value_and_grad(f)(x)
        np.testing.assert_allclose(value, f(x), rtol=1e-13)
        np.testing.assert_allclose(g, numerical_grad(f, (x,)), rtol=1e-6, atol=1e-8)
    def loss(x):
        h, steps = final_state(x)
        return np.sum(h * V) * steps

    assert final_state(x)[1] == 2
    np.testing.assert_allclose(sg.grad(loss)(x), numerical_grad(loss, (x,)), rtol=1e-6, atol=1e-8)


def test_the_generated_code_rebinds_the_callers_name():
    """The method's self is the caller's variable: no copy, the state one value."""
    code = sg.source(rnn)
    assert "dataclass_replace(cell" in code


def test_the_callers_list_is_changed_as_by_one_call():
    """An argument list a helper appends to: after the gradient call the caller's list is
    what one call of f leaves (round fourteen: it was left as it was, while sg.jvp changed
    it; tests/test_python_idioms_round14.py checks every mode)."""
    def f(xs, x):
        record(xs, x)
        return np.sum(xs[-1] * xs[0])

    xs = [X * 1.0]
    g = sg.grad(f, wrt=1)(xs, X)
    assert len(xs) == 2
    np.testing.assert_allclose(xs[1], np.sin(X), rtol=1e-15)
    np.testing.assert_allclose(g, numerical_grad(lambda x: f([X * 1.0], x), (X,)), rtol=1e-6, atol=1e-8)


def test_vectorize_keeps_numpys_dtype_and_its_error_on_empty_input():
    def first_int(x):   # the first result an int: NumPy's array is of ints (no gradient)
        return np.vectorize(lambda v: 0 if v > 0 else v)(x)

    def empty(x):
        return np.sum(np.vectorize(math.sin)(x[:0]))

    def empty_typed(x):
        return np.sum(np.vectorize(math.sin, otypes=[float])(x[:0])) + np.sum(np.vectorize(math.exp)(x[0]))

    value, tangent = sg.jvp(first_int, (X,), (V,))
    assert value.dtype == np.vectorize(lambda v: 0 if v > 0 else v)(X).dtype == np.int64
    np.testing.assert_array_equal(value, [0, 0, 0, 0])
    assert not np.any(tangent)
    with pytest.raises(ValueError, match="size 0"):
        sg.grad(empty)(X)
    np.testing.assert_allclose(sg.grad(empty_typed)(X), numerical_grad(empty_typed, (X,)), rtol=1e-7)


# ----- refused at the user's line -----

def cell_passed_in(cell, x):
    cell.step(x)
    return np.sum(cell.h)


def argument_state_set(cell, x):
    cell.h = x
    return np.sum(cell.h)


def instance_aliased(x):
    cell = Cell(x, np.zeros(4))
    other = cell
    cell.step(x)
    return np.sum(other.h)


def instance_in_a_list(x):
    cell = Cell(x, np.zeros(4))
    cells = [cell]
    cell.step(x)
    return np.sum(cells[0].h)


@dataclass
class Outer:
    sub: Cell

    def __call__(self, x):
        return self.sub.step(x)   # an instance's attribute's state: Python changes o.sub


def state_of_an_attributes_instance(x):
    o = Outer(Cell(x, np.zeros(4)))
    o(x)   # (its result unread: it gave a zero gradient silently before round thirteen)
    return np.sum(o.sub.h)


def list_shared_with_the_caller(x):
    acts = []
    model = Holder(x, acts)
    model.record(x)
    return np.sum(acts[0])


def array_attribute_held_elsewhere(x):
    start = x * 0.5
    buf = Buffer(start)
    buf.add(x)   # self.total += v changes the array start holds too
    return np.sum(buf.total * start)


@dataclass
class Holder:
    w: np.ndarray
    acts: list

    def record(self, x):
        self.acts.append(self.w * x)


@dataclass
class Buffer:
    total: np.ndarray

    def add(self, v):
        self.total += v


@dataclass
class Loose:
    w: np.ndarray

    def remember(self, x):
        self.last = x * self.w   # no field
        return self.last


@dataclass(frozen=True)
class Frozen:
    w: np.ndarray

    def set(self, x):
        self.w = x


def inner_list_held_by_a_name(x):
    d = {"a": {"u": []}}
    lst = d["a"]["u"]
    d["a"]["u"].append(x)
    return np.sum(d["a"]["u"][0]) + len(lst)


def inner_list_held_twice(x):
    shared = []
    rows = [[shared, shared]]
    rows[0][0].append(x)
    return np.sum(rows[0][1][0])


def stores_a_new_attribute(x):
    return np.sum(Loose(x).remember(x))


def stores_into_a_frozen_dataclass(x):
    p = Frozen(x)
    p.set(x * 2)
    return np.sum(p.w)


def test_an_instance_the_caller_passed_in_is_refused():
    assert_refused_in(HERE, lambda: sg.grad(cell_passed_in, wrt=1)(Cell(X, X), X),
                      "'h'", "argument 'cell'")
    assert_refused_in(HERE, lambda: sg.grad(argument_state_set, wrt=1)(Cell(X, X), X),
                      "'h'", "argument 'cell'")
    assert_refused_in(HERE, lambda: sg.value_and_grad(cell_passed_in, wrt=1)(Cell(X, X), X),
                      "'h'", "argument 'cell'")


@pytest.mark.parametrize("f, words", [
    (instance_aliased, ("'other'",)),
    (instance_in_a_list, ("'cells'",)),
    (inner_list_held_by_a_name, ("'lst'",)),
    (inner_list_held_twice, ("'rows'",)),
    (list_shared_with_the_caller, ("'acts'",)),
    (array_attribute_held_elsewhere, ("'start'",)),
    (stores_a_new_attribute, ("'last'", "not a field")),
    (stores_into_a_frozen_dataclass, ("frozen",)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_what_python_would_change_elsewhere_is_refused(f, words):
    assert_refused_in(HERE, lambda: sg.grad(f)(X), *words)
    assert_refused_in(HERE, lambda: sg.jvp(f, (X,), (V,)), *words)


def test_the_state_of_an_instance_held_by_another_is_refused():
    assert_refused_in(HERE, lambda: sg.grad(state_of_an_attributes_instance)(X), ".step()", "'o'")
    with pytest.raises(sg.SrcgradError):
        sg.jvp(state_of_an_attributes_instance, (X,), (V,))


def test_python_raises_on_a_frozen_dataclass_too():
    with pytest.raises(dataclasses.FrozenInstanceError):
        stores_into_a_frozen_dataclass(X)
