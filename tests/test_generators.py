"""Generator helpers read whole by one for loop (transform/generators.py): inlined as the
list of what they yield. Each gradient is checked against central differences in float64
(reverse mode, the jit, forward mode, Hessians); a generator read otherwise, or whose
items a loop could change before the generator computes the next, is refused at its line."""

import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.arange(12.0).reshape(6, 2) / 10 - 0.3
W = np.array([0.5, -1.0])


def batches(data, size):
    for start in range(0, len(data), size):
        yield data[start:start + size]


def weighted_rows(w, rows):
    for i, row in enumerate(rows):
        yield np.tanh(row @ w) * (i + 1)


def batches_then_head(data):
    yield from batches(data, 4)
    yield data[:1]


def until_large(rows):
    for row in rows:
        if np.sum(row) > 0.6:
            return
        yield row * 2.0


def sum_over_batches(w, data):
    total = 0.0
    for b in batches(data, 2):
        total = total + np.sum(np.sin(b @ w))
    return total


def numbered_batches(w, data):
    total = 0.0
    for k, b in enumerate(batches(data, 4)):
        total = total + (k + 1) * np.sum(b @ w) ** 2
    return total


def generator_expression_sum(w, data):
    return sum(np.sum(np.cos(b @ w)) for b in batches_then_head(data))


def comprehension_over_early_return(w, data):
    return np.sum(np.array([np.sum(r * w) ** 2 for r in until_large(data)]))


def list_of_a_generator(w, data):
    values = list(weighted_rows(w, data))
    return values[0] * values[-1] + sum(values)


def sum_of_a_generator(w, data):
    return sum(weighted_rows(w, data)) ** 2


def nested_generators(w, data):
    out = 0.0
    for b in batches(data, 3):
        for r in weighted_rows(w, b):
            out = out + r ** 2
    return out


class Loader:
    def __init__(self, size):
        self.size = size

    def batches(self, data):
        for start in range(0, len(data), self.size):
            yield data[start:start + self.size]


LOADER = Loader(3)


def through_a_method(w, data):
    return sum(np.sum(np.exp(b @ w)) for b in LOADER.batches(data))


CASES = [sum_over_batches, numbered_batches, generator_expression_sum,
         comprehension_over_early_return, list_of_a_generator, sum_of_a_generator,
         nested_generators, through_a_method]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_a_generator_read_whole_is_differentiated(f):
    want = numerical_grad(f, (W, X))
    np.testing.assert_allclose(sg.grad(f)(W, X), want, rtol=1e-6, atol=1e-8)
    v = np.array([0.4, -0.9])
    _, tangent = sg.jvp(f, (W, X), (v, None))
    np.testing.assert_allclose(tangent, want @ v, rtol=1e-6, atol=1e-8)
    hess = sg.hessian(f)(W, X)
    rows = [(sg.grad(f)(W + 1e-6 * e, X) - sg.grad(f)(W - 1e-6 * e, X)) / 2e-6 for e in np.eye(2)]
    np.testing.assert_allclose(hess, np.stack(rows, axis=-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sg.grad(f, wrt=1)(W, X), numerical_grad(f, (W, X), wrt=1),
                               rtol=1e-6, atol=1e-8)


def test_the_jit_compiles_or_falls_back_with_the_same_answer():
    pytest.importorskip("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in (sum_over_batches, nested_generators):
            np.testing.assert_allclose(sg.grad(f, jit=True)(W, X), numerical_grad(f, (W, X)),
                                       rtol=1e-6, atol=1e-8)


def stops_early(w, data):
    total = 0.0
    for b in batches(data, 2):
        total = total + np.sum(b @ w)
        if total > 0.1:
            break
    return total


def zipped(w, data):
    return sum(np.sum(b @ w) * c for b, c in zip(batches(data, 2), [1.0, 2.0]))


def next_item(w, data):
    items = batches(data, 2)
    return np.sum(next(items) @ w)


def changes_the_data(w, data):
    copy = data * 1.0
    total = 0.0
    for b in batches(copy, 2):
        total = total + np.sum(b @ w)
        copy[4:] = 0.0
    return total


def changes_a_view_of_the_data(w, data):
    copy = data * 1.0
    tail = copy[2:]
    total = 0.0
    for b in batches(copy, 2):
        total = total + np.sum(b @ w)
        tail[2:] = 0.0
    return total


def zero_tail(a):
    a[4:] = 0.0


def passes_the_data_to_a_helper(w, data):
    copy = data * 1.0
    total = 0.0
    for b in batches(copy, 2):
        total = total + np.sum(b @ w)
        zero_tail(copy)
    return total


def writes_with_out(w, data):
    copy = data * 1.0
    total = 0.0
    for b in batches(copy, 2):
        total = total + np.sum(b @ w)
        np.multiply(copy, 0.5, out=copy)
    return total


def views_and_sums(data):
    for i in range(3):
        yield data[i:i + 2]
        yield np.sum(data, axis=0)


def writes_into_an_item(w, data):
    copy = data * 1.0
    total = 0.0
    for b in views_and_sums(copy):
        total = total + np.sum(b * w[0])
        b[0] = 0.0
    return total


def clearing(values):
    for i in range(2):
        values[i] = 0.0
        yield values[i]


def generator_writes_its_argument(w, data):
    return sum(v * w[0] for v in clearing(list(data[:, 0])))


def sends(rows):
    total = yield rows[0]
    yield total


def uses_send(w, data):
    return sum(np.sum(r * w) for r in sends(data))


STATE = [1.0]


def scaled_by_state(n):
    for i in range(n):
        yield STATE[0] * i


def changes_the_global_state(w, data):
    total = 0.0
    for v in scaled_by_state(3):   # Python: items 0, 2, 6 (the state changes between them)
        total = total + v * np.sum(data @ w)
        STATE[0] = STATE[0] + 1.0
    return total


@pytest.mark.parametrize("f,words", [
    (changes_the_global_state, "reads the list 'STATE'"),
    (stops_early, "stop early"), (zipped, "zip"), (next_item, "not read by one for loop"),
    (changes_the_data, "changes 'copy'"), (changes_a_view_of_the_data, "changes 'tail'"),
    (passes_the_data_to_a_helper, "zero_tail"), (writes_with_out, "out="),
    (writes_into_an_item, "changes 'b'"), (generator_writes_its_argument, "changes its argument"),
    (uses_send, "yield used as a value")], ids=lambda v: getattr(v, "__name__", v))
def test_a_generator_read_otherwise_is_refused_at_its_line(f, words):
    with pytest.raises(sg.UnsupportedError, match=words) as info:
        sg.grad(f)(W, X)
    assert info.value.filename == __file__
