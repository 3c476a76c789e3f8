"""Programs written to break a value model of "an array or a float" (issue 11).

Each program is checked the way a user would want: either its gradient matches
central finite differences in float64, or srcgrad refuses it with an error that
names this file and the line. A wrong number, or any other exception, fails.
Families: containers (dict/list/tuple/namedtuple/dataclass arguments, containers
built inside f, lists NumPy reads as arrays), aliasing (views through helpers,
chained and multi-step aliases, view functions, lists holding arrays, loop-carried
names, calls that write in place, repeated indices), dtypes (integer casts, int
stores, complex intermediates), rules (linspace, r_, inner, einsum sublists,
power at 0, std of one element, meshgrid), and the compile cache.
"""

import collections
import dataclasses
import re

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import check_grads

CASES = []
EPS = {}


def case(*args, wrt=0, eps=1e-6):
    def register(f):
        CASES.append((f, args, wrt))
        EPS[f] = eps
        return f
    return register


X = np.array([1.0, 2.0, 3.0]); M = np.arange(1.0, 7.0).reshape(2, 3) / 3

# ---- containers
@case({'a': 1.0, 'b': 1.0})
def dict_param(p): return p['a'] * 2.0 + p['b'] * 3.0
@case({'W': M.copy(), 'b': X.copy()}, X[:2].copy())
def dict_affine(p, x): return np.sum(np.tanh(x @ p['W'] + p['b']))
@case([(M.T.copy(), np.ones(2)), (np.ones((2, 2)), np.zeros(2))], X.copy())
def list_of_layers(layers, x):
    for W, b in layers:
        x = np.tanh(x @ W + b)
    return np.sum(x)
@case(1.5)
def dict_inside(x):
    d = {"a": x, "b": 2.0}
    return d["a"] * d["b"]
@case(X.copy())
def list_concat(x):
    parts = [x] + [x * 2.0]
    return np.sum(np.concatenate(parts) ** 2)
@case(X.copy())
def list_repeat(x):
    lst = [x, x * 2]
    return np.sum(np.stack(lst * 2))
@case(X.copy())
def list_append(x):
    acc = []
    for i in range(3):
        acc.append(x[i] * (i + 1.0))
    return acc[0] + acc[1] * acc[2]
@case(X.copy())
def nested_list(x):
    a = [[x[0], x[1]], [x[2]]]
    return a[0][1] * a[1][0] + a[0][0]
@case(X.copy())
def tuple_unpack(x):
    t = (x[0], x[1] * 2)
    a, b = t
    return a * b
@case(X.copy())
def tuple_plus(x):
    t = (x[0],) + (x[1], x[2])
    return t[0] * t[2] + t[1]
@case(X.copy())
def dict_update_key(x):
    d = {}
    d["u"] = x * 2
    d["v"] = d["u"] + 1.0
    return np.sum(d["v"] * x)
@case(X.copy())
def list_setitem(x):
    lst = [x[0], x[1]]
    lst[0] = lst[0] * x[2]
    return lst[0] + lst[1]
Pt = collections.namedtuple("Pt", "a b")
@case(Pt(1.0, X.copy()))
def namedtuple_param(p): return np.sum(p.a * p.b ** 2)
@dataclasses.dataclass
class Lin:
    W: np.ndarray
    b: np.ndarray
@case(Lin(M.copy(), np.ones(3)), X[:2].copy())
def dataclass_param(p, x): return np.sum(np.tanh(x @ p.W + p.b))
@case(1.0)
def mean_list(x): return np.mean([x, x + 2])
@case(1.0)
def max_list(x): return np.max([x, x * 3])
@case(2.0)
def std_tuple(x): return np.std((x, x * 3))
@case(X.copy())
def sum_list_arrays(x): return np.sum([x, x * x])
@case(X.copy())
def builtin_sum_list(x): return sum([x[0], x[1] * 2, x[2]])
@case(X.copy())
def len_of_list(x):
    lst = [x, x]
    return np.sum(x) * len(lst)

# ---- aliasing
def first(v): return v[:2]
@case(X.copy())
def helper_view(x):
    y = np.zeros(3); h = first(y); h[0] = 5 * x[2]
    return np.sum(y * x)
@case(X.copy())
def chained(x):
    a = b = np.zeros(3); a[0] = 2 * x[0]
    return np.sum(b * x)
@case(X.copy())
def two_step(x):
    y = np.zeros(3); a = y[1:]; b = a[1:]; b[0] = x[0] * 3
    return np.sum(y * x)
@case(X.copy())
def ascontig(x):
    y = np.zeros(3); a = np.ascontiguousarray(y); a[0] = x[0]
    return np.sum(y * x)
@case(X.copy())
def split_piece(x):
    y = np.zeros(4); a, b = np.split(y, 2); b[0] = x[1]
    return np.sum(y[:3] * x)
@case(X.copy())
def asarray_alias(x):
    y = np.zeros(3); a = np.asarray(y); a[1] = x[1] ** 2
    return np.sum(y * x)
@case(X.copy())
def reshape_view(x):
    y = np.zeros(4); a = y.reshape(2, 2); a[0, 1] = x[0]
    return np.sum(y[:3] * x)
@case(X.copy())
def list_elem_alias(x):
    y = np.zeros(3); lst = [y]; lst[0][0] = x[0]
    return np.sum(y * x)
@case(X.copy())
def loop_carried(x):
    cur = np.zeros(3); out = 0.0
    for i in range(2):
        prev = cur
        cur = prev
        cur[i] = x[i] * 2
        out = out + np.sum(prev * x)
    return out
@case(X.copy())
def negative_out(x):
    y = x * 1.0; np.negative(y, out=y)
    return np.sum(y * x)
@case(X.copy())
def multiply_out(x):
    y = np.zeros(3); np.multiply(x, x, out=y)
    return np.sum(y)
@case(X.copy())
def copyto(x):
    y = np.zeros(3); np.copyto(y, x)
    return np.sum(y * y)
@case(X.copy())
def putmask(x):
    y = x * 1.0; np.putmask(y, y > 1.5, 0.0)
    return np.sum(y * x)
@case(np.array([1.0, 2.5, 3.0]))
def clip_out(x):
    y = x * 1.0; y.clip(0, 2, out=y)
    return np.sum(y * x)
@case(X.copy())
def add_at(x):
    y = np.zeros(3); np.add.at(y, [0, 0, 1], x)
    return np.sum(y * y)
@case(X.copy())
def fill_diag(x):
    y = np.outer(x, x); np.fill_diagonal(y, 0.0)
    return np.sum(y)
@case(X.copy())
def ndarray_fill(x):
    y = x * 2.0; y.fill(1.0)
    return np.sum(y * x)
@case(X.copy())
def ndarray_sort(x):
    y = x * np.array([3.0, 1.0, 2.0]); y.sort()
    return y[0] * 1.0 + y[2] * 10.0
@case(X.copy())
def repeated_idx(x):
    y = np.zeros(3); y[[0, 0, 1]] = x
    return np.sum(y * y)
@case(X.copy())
def repeated_idx_iadd(x):
    y = np.zeros(3); y[[0, 0, 1]] += x
    return np.sum(y * y)
@case(X.copy())
def mask_write(x):
    y = x * 1.0; y[x > 1.5] = 0.0
    return np.sum(y * x)
@case(X.copy())
def aug_view(x):
    y = x * 1.0; v = y[1:]; v += 1.0
    return np.sum(y * x)
@case(X.copy())
def transpose_alias(x):
    y = np.zeros((3, 1)); t = y.T; t[0, 1] = x[1]
    return np.sum(y[:, 0] * x)

# ---- dtypes
@case(np.array([1.5, 2.5]))
def astype_int(x): return np.sum(x.astype(int) * x)
@case(np.array([1.5, 2.5]))
def asarray_int(x): return np.sum(np.asarray(x, dtype=int) * x)
@case(np.array([1.5, 2.5]))
def int_store(x):
    y = np.zeros(2, dtype=int); y[0] = x[0]
    return np.sum(y * x)
@case(np.array([1.5, 2.5]))
def full_like_int(x):
    y = np.full_like(np.arange(2), x[0])
    return np.sum(y * x)
@case(np.array([1.5, 2.5]))
def int_builtin(x): return int(x[0]) * x[1]
@case(np.array([1.5, 2.5]), eps=1e-2)
def astype_f32(x): return np.sum(x.astype(np.float32).astype(np.float64) * 2.0)
@case(X.copy())
def complex_abs(x): return np.sum(np.abs(np.exp(1j * x)) * x)
@case(X.copy())
def complex_real(x): return np.sum(np.real(np.exp(1j * x)))
@case(X.copy())
def complex_mul(x):
    z = x * (1 + 2j)
    return np.sum(np.abs(z) ** 2)

# ---- rules
@case(1.0)
def linspace(x): return np.sum(np.linspace(0, x, 5))
@case(1.0)
def logspace(x): return np.sum(np.logspace(0, x, 4))
@case(X.copy())
def r_(x): return np.sum(np.r_[x, x * 2] ** 2)
@case(X.copy())
def c_(x): return np.sum(np.c_[x, x * 2] ** 2)
@case(X.copy())
def inner(x): return np.inner(x, x)
@case(X.copy())
def einsum_sublist(x): return np.einsum(x, [0], x, [0], [])
@case(X.copy())
def tensordot_scalar(x): return np.sum(np.tensordot(x, 0.5, axes=0))
@case(np.array([0.0, 1.0]))
def power_zero(x): return np.sum(np.power(x, 0.0) * x)
@case(np.array([2.0]))
def std_one(x): return np.std(x) + np.sum(x)
@case(X.copy())
def mean_empty(x): return np.sum(x) + np.sum(np.mean(x[:0].reshape(0, 3), axis=1))
@case(X.copy())
def meshgrid(x):
    a, b = np.meshgrid(x, x[:2])
    return np.sum(a * b)



# What srcgrad differentiates today; a refusal of any of these is a regression.
MUST_DIFFERENTIATE = {
    "dict_param", "dict_affine", "list_of_layers", "dict_inside", "list_concat", "list_repeat",
    "list_append", "nested_list", "tuple_unpack", "tuple_plus", "dict_update_key", "list_setitem",
    "namedtuple_param", "dataclass_param", "mean_list", "max_list", "std_tuple", "sum_list_arrays",
    "builtin_sum_list", "len_of_list", "negative_out", "multiply_out", "copyto", "clip_out",
    "ndarray_fill", "ndarray_sort", "repeated_idx", "repeated_idx_iadd", "mask_write",
    "astype_int", "asarray_int", "int_store", "full_like_int", "int_builtin", "astype_f32",
    "complex_abs", "complex_real", "complex_mul", "linspace", "logspace", "r_", "c_", "inner",
    "einsum_sublist", "tensordot_scalar", "power_zero", "std_one", "mean_empty", "meshgrid",
}


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_each_program_gets_the_right_gradient_or_a_located_refusal(f, args, wrt):
    try:
        sg.grad(f, wrt)(*args)
    except sg.SrcgradError as error:
        assert f.__name__ not in MUST_DIFFERENTIATE, f"{f.__name__} is refused: {error}"
        message = str(error)
        assert __file__ in message and re.search(r"line \d+", message), message
        return
    check_grads(f, args, wrt=wrt, eps=EPS[f], atol=1e-5, rtol=1e-4)


# ----- The cache: a gradient is reused only while what it was compiled from holds -----


def test_functions_from_one_def_with_different_defaults_get_their_own_gradients():
    functions = []
    for k in (2.0, 5.0):
        def times_k(x, k=k):
            return x * k
        functions.append(times_k)
    assert [sg.grad(f)(1.0) for f in functions] == [2.0, 5.0]


ACTIVATION = np.sin


def activate(x):
    return np.sum(ACTIVATION(x))


def test_a_notebook_that_rebinds_a_global_gets_the_new_gradient():
    global ACTIVATION
    x = np.array([0.3, -1.2])
    try:
        ACTIVATION = np.sin
        np.testing.assert_allclose(sg.grad(activate)(x), np.cos(x))
        ACTIVATION = np.exp
        np.testing.assert_allclose(sg.grad(activate)(x), np.exp(x))
    finally:
        ACTIVATION = np.sin
