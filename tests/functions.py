"""The catalogue: every function here is a gradient test.

Adding a function adds its tests (tests/conftest.py parametrises
tests/test_catalogue.py over this module, like tangent's ``functions.py``).

Argument names are a contract; they decide the inputs:

* ``a, b, c``  Python float scalars (0.7, -1.3, 1.9)
* ``x, y, z``  float64 arrays, shape (3,) by default:
               x = [0.9, -1.3, 2.1], y = [1.4, 0.6, -0.8], z = [-0.5, 1.7, 0.3]
* ``m``        a square 3x3 float64 matrix (well conditioned)
* ``i, n``     ints, not differentiable (i = 1, n = 3)

A parameter with a default is left to its default unless ``@inputs`` names it;
a keyword-only parameter without a default is passed by keyword (and its
gradient asked for by name). ``@inputs(...)`` overrides values (an array, a
float, an int, or a shape tuple for an array name), ``cases=[{...}, {...}]``
runs one function on several input sets (e.g. one per branch), ``wrt=(...)``
restricts the differentiated arguments (for an argument used only in a
condition, whose gradient PyTorch would call unused), ``atol=``/``rtol=``
loosen the tolerances where a function's values are large.

Every function must be smooth at its test point: no ties in max/min, no
branch condition within 1e-3 of its threshold.

Functions whose names start with an underscore are helpers, not tests.
"""

import math

import numpy as np

import helpers_module as hm
from helpers_module import poly, softplus

SCALARS = {"a": 0.7, "b": -1.3, "c": 1.9}
VECTORS = {
    "x": [0.9, -1.3, 2.1],
    "y": [1.4, 0.6, -0.8],
    "z": [-0.5, 1.7, 0.3],
}
MATRIX = [[2.0, 0.3, -0.5], [0.1, 1.5, 0.4], [-0.2, 0.6, 1.8]]
INTS = {"i": 1, "n": 3}


def inputs(*, cases=None, wrt=None, atol=None, rtol=None, **values):
    """Attach non-default inputs (and options) to a catalogue function."""

    def attach(f):
        f.catalogue = {
            "cases": [dict(values, **case) for case in cases] if cases else [values],
            "wrt": wrt,
            "atol": atol,
            "rtol": rtol,
        }
        return f

    return attach


inputs.not_a_test = True


def _array(shape, seed):
    """A deterministic array of ``shape``: entries of magnitude in [0.3, 1.5], no ties."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    mags = 0.3 + 1.2 * (rng.permutation(size) + rng.uniform(0.1, 0.9, size)) / size
    return (mags * rng.choice([-1.0, 1.0], size)).reshape(shape)


_array.not_a_test = True


# ----- Arithmetic and operators -----

def add_mul(a, b):
    return a * b + a - b


def div_pow(a, b):
    return a / (1.0 + b ** 2) + a ** 3


def unary_minus(x):
    return np.sum(-x * x) + (-x[0])


def power_forms(a, c):
    return 2.0 ** a + c ** 2.5 + a ** c


def array_power(x, y):
    return np.sum((x * x + 1.0) ** y)


def true_division_chain(a, b, c):
    return a / b / c - (a - b) / (c * c)


def mod_floor(a, c):
    # a % 2.0 has slope 1; a // 1.0 is a constant.
    return (a % 2.0) * c + (c // 1.0) * a


def matmul_vec(m, x):
    return x @ m @ x


def matmul_mat(m):
    return np.sum((m @ m.T) * m)


def broadcast_scalar(x, a):
    return np.sum((x + a) * (x - a) / 2.0)


@inputs(x=(2, 3))
def broadcast_rows(x, y):
    return np.sum(x * y + y ** 2 / (1.0 + x * x))


def scalar_array_mix(a, x):
    s = a * x[0] + x[1] / a
    return s * s + np.sum(a - x)


# ----- Conditions: comparisons, and/or/not, conditional expressions -----

def cond_expression(a, b):
    return a * b if a > b else a - b


def cond_and_or_not(x, a):
    if x[0] > 0 and not a < 0:
        s = np.sum(x * a)
    elif x[1] > 0 or a > 1.0:
        s = np.sum(x) - a
    else:
        s = a * a
    return s


@inputs(cases=[{"a": 0.4}, {"a": 1.6}, {"a": -0.6}])
def chained_comparison(a, b):
    if 0.0 < a < 1.0:
        return a * b
    elif a >= 1.0:
        return a * a * b
    return b - a


def comparison_of_arrays(x, y):
    if np.all(x < 3.0) and np.any(y > 1.0):
        return np.sum(x * y)
    return np.sum(x - y)


def ifexp_arrays(x, y):
    v = x * 2.0 + y if np.sum(x) > np.sum(y) else y * 3.0
    return np.sum(v * v)


# ----- Assignment forms -----

def aug_assign_names(x, a):
    s = 0.0
    s += a * x[0]
    s *= a
    s -= x[1]
    s /= 2.0
    s **= 2
    return s


def aug_assign_arrays(x, y):
    v = x * 1.0
    v += y
    v *= x
    v -= 0.5 * y
    v /= 1.0 + y * y
    return np.sum(v)


def aug_assign_subscript(x):
    v = x.copy()
    v[0] += x[1] * x[2]
    v[1] *= x[0]
    v[2] -= v[0]
    v[2] /= 2.0
    return np.sum(v * v)


def tuple_unpacking(a, b):
    p, q = a * b, a + b
    (r, s), t = (p - q, p * q), a
    return p * q + r * s * t


def swap(a, b):
    a, b = b, a * b
    a, b = b, a
    return a - 2.0 * b


def reassign_parameter(x, a):
    x = x * a
    a = np.sum(x)
    x = x + a
    return np.sum(x * x)


def defaults(x, a=1.5):
    return np.sum(x * a) + a


@inputs(a=0.3)
def defaults_overridden(x, a=1.5):
    return np.sum(np.sin(x * a))


def keyword_only(x, *, c):
    return np.sum(np.sin(x) * c)


def keyword_only_defaults(x, *, c=2.0, scale=0.5):
    return np.sum(np.cos(x) * c * scale)


def _pair(x, a):
    return np.sum(x) * a, x * a


def tuple_return(x, a):
    return np.sum(x) * a, x * a


def tuple_return_unpacked(x, a):
    p, q = _pair(x, a)
    return p + np.sum(q * q)


def multiple_targets(a):
    p = q = a * a
    return p + q * a


# ----- Array methods and attributes -----

@inputs(x=(2, 3))
def method_sum_axis(x):
    return np.sum(x.sum(axis=0) ** 2) + np.sum(x.sum(axis=1, keepdims=True) * x)


@inputs(x=(2, 3))
def method_mean(x):
    return x.mean() * np.sum(x.mean(axis=1) ** 2) + np.sum(x.mean(axis=0, keepdims=True) * x)


@inputs(x=(2, 3))
def method_max_min(x):
    return np.sum(x.max(axis=1) ** 2) + x.min() * x.max() + np.sum(x.max(axis=0, keepdims=True) * x)


def method_prod(x):
    return x.prod() + np.prod(x * x)


@inputs(x=(2, 3))
def method_prod_axis(x):
    return np.sum(x.prod(axis=1))


@inputs(x=(2, 3))
def method_std_var(x):
    return x.std() + np.sum(x.var(axis=0)) + np.sum(x.std(axis=1, keepdims=True) * x)


@inputs(x=(2, 3))
def method_reshape(x):
    return np.sum(x.reshape(3, 2)[0] * x.reshape((6,))[1:3]) + np.sum(x.reshape(-1) ** 3)


@inputs(x=(2, 3))
def method_transpose(x):
    return np.sum(x.T @ x) + np.sum(x.transpose() * x.T) + np.sum(x.transpose(1, 0)[0] * x[:, 1])


def method_dot(x, y):
    return x.dot(y) * np.dot(x, x)


def method_dot_matrix(m, x):
    return np.sum(m.dot(x) ** 2)


def method_astype_copy(x):
    v = x.astype(np.float64).copy()
    return np.sum(v * x)


@inputs(x=(2, 3))
def method_ravel_flatten(x):
    return np.sum(x.ravel() * x.flatten()[::-1])


@inputs(x=(1, 3))
def method_squeeze(x):
    return np.sum(x.squeeze() ** 3) + np.sum(x.squeeze(axis=0) * x[0])


@inputs(x=(2, 3))
def shape_and_ndim(x):
    rows = x.shape[0]
    cols = x.shape[1]
    return np.sum(x) / (rows * cols) + x.ndim * x[rows - 1, cols - 1] + x.size * x[0, 0]


def dtype_constant(x):
    acc = np.zeros(x.shape, dtype=x.dtype)
    acc = acc + x * x
    return np.sum(acc)


# ----- Builtins -----

def builtin_len(x):
    return np.sum(x) / len(x)


def builtin_range(x, n):
    s = 0.0
    for k in range(1, n, 1):
        s = s + x[k] * k
    return s


def builtin_float(x, a):
    return float(a) * float(x[2]) + float(np.sum(x * x))


def builtin_abs(a, x):
    return abs(a) * abs(x[1]) + np.sum(np.abs(x))


def builtin_sum(x, a):
    return sum([a * a, a * x[0], x[2]]) + sum(x)


def builtin_min_max(a, b, c):
    return max(a, b) * min(b, c) + max(a, b, c)


def builtin_min_max_arrays(x):
    return max(x[0], x[1]) * min(x[1], x[2]) + max(x)


def math_functions(a, c):
    return (math.sin(a) * math.cos(c) + math.exp(a) - math.log(c) + math.sqrt(c)
            + math.tanh(a) + math.pi * a + math.pow(c, 1.5))


# ----- NumPy functions -----

def numpy_elementwise(x):
    return np.sum(np.sin(x) * np.cos(x) + np.exp(x / 3.0) + np.tanh(x) + np.log(1.0 + x * x)
                  + np.sqrt(2.0 + x))


def numpy_where(x, y):
    return np.sum(np.where(x > 0, x * y, y * y))


def numpy_maximum_clip(x, y):
    return np.sum(np.maximum(x, y) ** 2 + np.clip(x, -2.0, 2.0) * y)


def numpy_outer_stack(x, y):
    return np.sum(np.outer(x, y) * np.stack([x, y]).T[:, :1])


# ----- if / elif / else on array values -----

@inputs(cases=[{"a": 1.0}, {"a": -1.0}])
def seed_abs(a):
    if a > 0:
        return a
    else:
        return -a


@inputs(cases=[{"x": [0.9, 1.3, 2.1]}, {"x": [-0.9, 1.3, -2.1]}, {"x": [0.2, -1.3, 0.5]}])
def if_elif_else(x):
    s = np.sum(x)
    if s > 2.0:
        r = s * x[0]
    elif s < -1.0:
        r = np.sum(x * x)
    else:
        r = np.sin(s) * x[2]
    return r


def if_without_else(x, a):
    v = x * a
    if x[2] > 1.0:
        v = v * v
    return np.sum(v)


def nested_if(x, y):
    if x[0] > 0:
        if y[2] > 0:
            r = x * y
        else:
            r = x - y
    else:
        r = x + y
    return np.sum(r ** 2)


# ----- for loops -----

def for_range(x, a):
    s = a
    for k in range(3):
        s = s * x[k] + a
    return s


def for_range_n(x, n):
    v = x
    for _ in range(n):
        v = np.sin(v) + x
    return np.sum(v)


@inputs(x=[-2.0, -1.0, 0.5, 1.0, 2.0, 3.0])
def seed_loop_product(x):
    result = 1
    for ii in x:
        if ii > 0:
            result = ii * result
    return result


@inputs(x=(3, 2))
def for_over_rows(x):
    s = 0.0
    for row in x:
        s = s + np.sum(row ** 2) * row[0]
    return s


def for_enumerate(x):
    s = 0.0
    for k, v in enumerate(x):
        s = s + k * v * v + v
    return s


def for_zip(x, y):
    s = 0.0
    for u, v in zip(x, y):
        s = s + u * v * u
    return s


def for_zip_enumerate(x, y):
    s = 0.0
    for k, (u, v) in enumerate(zip(x, y)):
        s = s + (k + 1) * np.sin(u * v)
    return s


def for_overwrites(x, a):
    s = a
    for k in range(3):
        s = np.sin(s) * x[k] + s
    return s


def for_break(x):
    s = 0.0
    for v in x:
        if v < 0:
            break
        s = s + v * v
    return s + x[2]


def for_continue(x):
    s = 0.0
    for v in x:
        if v < 0:
            continue
        s = s + v ** 3
    return s


@inputs(x=(2, 3))
def nested_loops(x, y):
    s = 0.0
    for r in range(2):
        for col in range(3):
            s = s + x[r, col] * y[col] * (r + 1)
    return s


@inputs(x=(2, 3))
def nested_loops_break(x):
    s = 0.0
    for row in x:
        for v in row:
            if v * v > 2.0:
                break
            s = s + np.sin(v)
        s = s * 1.5
    return s


def loop_over_range_len(x, y):
    s = 0.0
    for k in range(len(x)):
        s = s + x[k] * y[len(y) - 1 - k]
    return s


# ----- while loops -----

def seed_while_doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def while_doubling_explicit(x):
    y = x * 2
    while np.sqrt(np.sum(y * y)) < 1000.0:
        y = y * 2
    return np.sum(y * np.array([0.01, 0.1, 1.0]))


def while_counter_and_data(a):
    s = a
    k = 0
    while k < 10 and s < 5.0:
        s = s * 1.3 + a
        k += 1
    return s


def while_break(x):
    s = 0.0
    k = 0
    while True:
        s = s + x[k] ** 2
        k += 1
        if k >= len(x) or s > 4.0:
            break
    return s


def while_arrays(x):
    v = x
    while np.max(np.abs(v)) > 0.5:
        v = np.tanh(v) * 0.8
    return np.sum(v * x)


# ----- returns -----

@inputs(cases=[{"a": 0.7}, {"a": -0.7}])
def early_return(a, b):
    if a > 0:
        return a * b
    s = a * a
    return s + b


@inputs(cases=[{"x": [0.9, -1.3, 2.1]}, {"x": [0.9, -1.3, 1.1]}])
def return_in_loop(x, a):
    for v in x:
        if v > 2.0:
            return v * a
    return a * a + x[0]


def return_in_while(a):
    s = a
    while True:
        s = s * 1.5
        if s > 3.0:
            return s * a


# ----- Subscript reads -----

def index_int(x):
    return x[0] * x[2] + x[1] ** 2


def index_negative(x):
    return x[-1] * x[-3] - x[-2]


def index_variable(x, i):
    return x[i] * x[i - 1] + x[-i]


@inputs(x=(6,))
def slice_steps(x):
    return np.sum(x[::2] * x[1::2]) + np.sum(x[::-1] * x) + np.sum(x[1:4] ** 2) + np.sum(x[-2:])


@inputs(x=(3, 4))
def index_tuple(x):
    return x[0, 1] * x[2, 3] + np.sum(x[1, :] * x[:, 2].sum()) + np.sum(x[1:, ::2] ** 2)


def index_none(x, y):
    return np.sum(x[None, :] * y[:, None] + x[:, None] ** 2)


@inputs(x=(2, 3))
def index_ellipsis(x):
    return np.sum(x[..., 0] * x[..., -1]) + np.sum(x[0, ...] ** 2)


def index_integer_array(x):
    idx = np.array([0, 2, 0, 0])
    return np.sum(x[idx] ** 2) + np.sum(x[[1, 1, 2]] * x[[0, 1, 2]])


def index_boolean_mask(x, y):
    mask = x > 0
    return np.sum(x[mask] ** 2) + np.sum(y[y < 0] * 3.0) + np.sum(x[np.array([True, False, True])])


# ----- Subscript writes -----

@inputs(x=[[2.0, 4.0]])
def seed_indexed_assignment(x):
    b = np.zeros((1, 2))
    b[0, 0] = x[0, 0] ** 2 + x[0, 1]
    b[0, 1] = x[0, 1] ** 3 + x[0, 0]
    out = b * 2
    return out


def write_int(x, a):
    b = np.zeros(3)
    b[0] = x[1] * a
    b[2] = x[0] ** 2
    b[-2] = a * a
    return np.sum(b * x)


def write_aug_subscript(x, y):
    b = np.zeros(3)
    b[1] += x[0] * y[0]
    b[1] += x[2]
    b[0] -= y[1] ** 2
    b[2] *= x[1]
    return np.sum(b ** 2) + b[1]


def write_slice(x, y):
    b = np.zeros(6)
    b[0:3] = x * 2.0
    b[3:] = y ** 2
    b[::2] = b[::2] * x
    return np.sum(b * b)


@inputs(x=(2, 3))
def write_2d(x, y):
    b = np.zeros((2, 3))
    b[0, :] = y
    b[1] = x[1] * y
    b[:, 0] = x[:, 2]
    return np.sum(b * x)


def write_overwrites_needed(x):
    v = x * 1.0
    v[0] = v[0] * v[1]
    v[0] = v[0] ** 2
    v[1] = np.sin(v[0])
    return np.sum(v)


def write_in_loop(x, a):
    b = np.zeros(3)
    s = a
    for k in range(3):
        b[k] = x[k] * s
        s = s + b[k]
    return np.sum(b) * s


def write_repeated_in_loop(x):
    b = np.zeros(2)
    for k in range(3):
        b[k % 2] += x[k] * x[k]
        b[0] = b[0] * 0.5
    return np.sum(b * b)


def write_mask(x, y):
    v = y.copy()
    v[x > 0] = x[x > 0] * 2.0
    return np.sum(v ** 2)


def write_integer_array(x, y):
    v = np.zeros(4)
    v[np.array([0, 3])] = x[:2] * y[1:]
    return np.sum(v * np.array([1.0, 2.0, 3.0, 4.0])) + np.sum(v ** 2)


# ----- Lists -----

def list_append_stack(x, y):
    rows = []
    for k in range(3):
        rows.append(x * k + y)
    return np.sum(np.stack(rows) ** 2)


def list_append_concatenate(x, y):
    parts = []
    for v in (x, y):
        parts.append(np.sin(v))
    parts.append(x * y)
    return np.sum(np.concatenate(parts) * np.arange(9.0))


def list_np_array_scalars(a, b):
    v = np.array([a, b, a * b])
    return np.sum(v ** 2) + v[2]


def list_np_array_of_arrays(x, y):
    v = np.array([x, y * 2.0])
    return np.sum(v * v[::-1])


def list_literal_index(x, y):
    vs = [x, y, x * y]
    return np.sum(vs[2] + vs[0] ** 2)


def list_append_scalars_in_loop(x):
    acc = []
    for v in x:
        acc.append(v * v)
    return sum(acc) + acc[0] * acc[-1]


# ----- Calls to user functions -----

def _square(v):
    return v * v


def _scaled_sum(v, s=2.0, *, power=1):
    return np.sum(v ** power) * s


def _calls_square(v):
    return _square(v) + _square(np.sin(v))


def helper_same_module(x):
    return np.sum(_square(x) + _square(np.sin(x)))


def helper_keywords(x, a):
    return _scaled_sum(x, a, power=2) + _scaled_sum(x) + _scaled_sum(x, s=a)


def helper_nested(x):
    return np.sum(_calls_square(x * 2.0))


def helper_in_loop(x):
    s = 0.0
    for k in range(3):
        s = s + _square(x[k]) * k
    return s


def helper_other_module(x):
    return np.sum(hm.softplus(x) + softplus(-x) + poly(x, c1=0.25))


def helper_other_module_nested(x):
    return np.sum(hm.outer(x) * x)


def helper_other_module_tuple(x, a):
    p, q = hm.pair(x, a)
    return p * np.sum(q)


def helper_other_module_scalar(a):
    return hm.scalar_helper(a) * hm.scalar_helper(a * a)


def helper_other_module_loop(x, n):
    return hm.loop_helper(x, n)


def _make_closure(k):
    def closure(x):
        return np.sum(np.sin(x) * k)
    return closure


closure_fn = _make_closure(2.5)


def _make_array_closure():
    weights = np.array([0.5, -1.5, 2.0])

    def closure_array(x):
        return np.sum(np.tanh(x * weights))
    return closure_array


closure_array_fn = _make_array_closure()

_triple = hm.make_scaled(3.0)


def calls_closure(x):
    return np.sum(_triple(x) ** 2)


def _outer_with_inner():
    def inner(v):
        return v ** 3

    def calls_inner(x):
        return np.sum(inner(x) + x)
    return calls_inner


calls_inner_fn = _outer_with_inner()


# ----- Intermediate constants and non-differentiable paths -----

@inputs(wrt=("x",))
def condition_only_scalar(x, a):
    # a decides the branch only; its gradient is unused (not asked for here).
    if a > 0:
        return np.sum(x ** 2)
    return np.sum(x)


def argmax_index(x, y):
    k = np.argmax(x)
    return x[k] * np.sum(y)


def integer_arithmetic(x, n):
    k = (n * 2 + 1) // 3
    return x[k - 1] * (n - 1) + np.sum(x[:k])


# ----- Harder cases: dead stores, rebinding, unpacking, chained writes -----

def dead_store_axis_reduction(x, y):
    # The first value of v is overwritten before it is read.
    v = np.stack([x, y]).sum(axis=0)
    v = x * y
    return np.sum(v)


def dead_store_concatenate(x, y):
    v = np.concatenate([x[:1], y[1:]])
    v = x * 2.0
    return np.sum(v * y)


def dead_store_np_array(x, a):
    v = np.array([x[0], a, x[2]])
    v = x * a
    return np.sum(v)


@inputs(x=(1, 3))
def dead_store_reshape(x):
    v = x.reshape(3)
    v = x[0] * 2.0
    return np.sum(v * v)


def for_rebinds_iterable(x):
    # Python iterates over the array v had when the loop started.
    v = x * 1.0
    s = 0.0
    for e in v:
        v = x * 10.0
        s = s + e * e
    return s + np.sum(v)


def zip_rebinds_iterable(x, y):
    v = x * 2.0
    s = 0.0
    for e, f in zip(v, y):
        s = s + e * f
        v = v + y
    return s + np.sum(np.sin(v))


def unpack_array(x):
    p, q, r = x
    return p * q - r * r


@inputs(x=(2, 3))
def unpack_shape(x):
    rows, cols = x.shape
    s = 0.0
    for r in range(rows):
        s = s + x[r, cols - 1] * r + x[r, 0]
    return s


@inputs(x=(6,))
def slice_variable_bounds(x, i):
    return np.sum(x[i:i + 3] ** 2) + np.sum(x[:i] * 2.0)


def reversed_range(x):
    s = 0.0
    for k in range(len(x) - 1, -1, -1):
        s = s * 0.5 + x[k] ** 2
    return s


def write_reads_previous(x):
    v = x.copy()
    for k in range(1, 3):
        v[k] = v[k - 1] * v[k]
    return np.sum(v)


def write_mask_zero(x):
    v = x.copy()
    v[v < 0] = 0.0
    return np.sum(v * v)


@inputs(x=(3, 3))
def write_2d_slice_augmented(x):
    b = x * 1.0
    b[1:, :] += x[:-1, :] * 2.0
    b[:, 0] *= 3.0
    return np.sum(b * b)


def zeros_like_writes(x, y):
    b = np.zeros_like(x)
    c = np.ones_like(y)
    b[0] = x[1] * y[2]
    c[1] = x[2]
    return np.sum(b * c) + np.sum(c * y)


def chained_subscript_targets(x, a):
    b = np.zeros(3)
    b[0] = b[2] = a * x[1]
    return np.sum(b * x)


def index_new_axis_ellipsis(x):
    return np.sum(x[..., None] * x[None, ...])


WEIGHTS = np.array([0.5, -1.5, 2.0])


def module_global_array(x):
    return np.sum(np.tanh(x * WEIGHTS))


def while_counter_index(x):
    s = 0.0
    k = 0
    while k < len(x):
        s = s + np.sin(x[k]) * (k + 1)
        k += 1
    return s


@inputs(x=(3, 3))
def early_return_nested_loops(x):
    for r in range(3):
        for col in range(3):
            if x[r, col] * x[r, col] > 1.9:
                return x[r, col] * np.sum(x[r])
    return np.sum(x)


def numpy_scalar_conversions(x, a):
    s = np.float64(a) * np.asarray(x)
    return np.sum(s) + float(np.sum(x)) * a


def matmul_chain(m, x):
    return x.T @ m @ m.T @ x + np.sum(m.T @ np.outer(x, x))


@inputs(x=(2, 3))
def method_keepdims_broadcast(x):
    centered = x - x.mean(axis=1, keepdims=True)
    scaled = centered / (x.std(axis=1, keepdims=True) + 1.0)
    return np.sum(scaled ** 2 * x)


def ifexp_nested_in_expression(a, b):
    return (a if a > 0 else -a) * (b if b > 0 else b * b) + (a * b if a * b > 0 else a - b)


def subscript_swap(x):
    v = x * 1.0
    v[0], v[2] = v[2], v[0] * v[1]
    return np.sum(v * np.array([1.0, 2.0, 3.0]))


def enumerate_start(x):
    s = 0.0
    for k, u in enumerate(x, 1):
        s = s + k * u * u
    for k, u in enumerate(x, start=2):
        s = s + k * u
    return s


def zip_three(x, y, z):
    s = 0.0
    for k, (u, v, w) in enumerate(zip(x, y, z)):
        s = s + (k + 1) * u * v + w * w
    return s


def loop_variable_after_loop(x):
    s = 0.0
    for k in range(3):
        s = s + x[k]
        if x[k] > 2.0:
            break
    return s * x[k]


def zero_trip_loops(x, a):
    s = a
    for k in range(0):
        s = s * x[k]
    while s > 100.0:
        s = s * 0.5
    return s * np.sum(x)


def loop_element_after_loop(x):
    s = 0.0
    for v in x:
        s = s + v
    return s * v


def branch_defines_name(x, a):
    if a > 0:
        r = x * a
    else:
        r = x - a
    return np.sum(r * r)


def augassign_scalar_copy(x, a):
    # s starts as the Python float a: s += ... rebinds s, it changes nothing in place.
    s = a
    for k in range(3):
        s += x[k] * a
    return s * a


def augassign_numpy_scalar_copy(x):
    s = x[0]
    s *= x[1]
    s += x[2]
    return s * x[0]


def write_then_reshape(x):
    # The views (reshape) are taken after the writes: nothing aliases a write.
    b = np.zeros(6)
    b[:3] = x * 2.0
    b[3:] = x ** 2
    return np.sum(b.reshape(2, 3)[0] * b.reshape(2, 3)[1])


@inputs(x=(2, 3))
def write_then_transpose(x):
    b = np.zeros((2, 3))
    b[0] = x[1] * x[0]
    b[1, :] = np.sin(x[0])
    rows = b.T
    return np.sum(rows * x.T)


def loop_zero_adjoint_np_array(x):
    # np.where discards the old v0, so its adjoint is zero on every reverse
    # iteration but the last; that zero times a NumPy scalar reaches np.array's rule.
    v0 = -x
    for _ in range(3):
        v0 = np.where(x > -5.0, x, v0)
        v0 = np.array([v0[0], v0[1], v0[2]]) * np.cos(x[0])
    return np.sum(v0)


def loop_zero_adjoint_concatenate(x):
    v0 = -x
    for _ in range(3):
        v0 = np.where(x > -5.0, x, v0)
        v0 = np.concatenate([v0[:1], v0[1:]]) * np.cos(x[0])
    return np.sum(v0)


@inputs(x=(2, 3))
def loop_zero_adjoint_axis_reduction(x):
    v0 = x[0] * 1.0
    for _ in range(3):
        v0 = np.where(x[0] > -5.0, x[1], v0)
        v0 = np.stack([v0, x[0]]).sum(axis=0) * np.cos(x[0, 0])
    return np.sum(v0)


def dead_store_before_loop_concatenate(x):
    # The first v is overwritten in the loop: its adjoint is a zero that has
    # been multiplied by a NumPy scalar (np.cos(x[1])).
    v = np.concatenate([x[:1], x[1:]]) * np.cos(x[1])
    for _ in range(2):
        v = x * 2.0
    return np.sum(v)


def dead_store_before_loop_np_array(x):
    v = np.array([x[0], x[1], x[2]]) * np.cos(x[1])
    for _ in range(2):
        v = x * 2.0
    return np.sum(v)


def dead_store_before_loop_cumsum(x):
    v = x.cumsum() * np.cos(x[1])
    for _ in range(2):
        v = x * 2.0
    return np.sum(v)


# Nothing below shares memory at run time: srcgrad must not refuse them.

def scalar_augassign_then_rebind_in_loop(x, a):
    # From the second iteration on, s is the Python float a: s += ... rebinds.
    s = x[0]
    r = 0.0
    for k in range(2):
        s += x[k + 1]
        r = r + s * s
        s = a
    return r * s


def write_then_view_in_later_loop(x):
    t = np.zeros(3)
    for k in range(2):
        t[1:] = x[:2] * (k + 1)
    for _ in range(2):
        t *= np.cos(t.reshape(1, 3)[0])
    return np.sum(t)


def element_read_then_write(x):
    # t[-1] of a 1-D array is a NumPy scalar: a copy, not a view.
    t = x * 2.0
    s = t[-1]
    t[1:] = x[:2] ** 2
    return np.sum(t) * s


# ----- Indexing and reductions, more forms -----

@inputs(x=(2, 3, 4))
def reduction_axes(x):
    return (np.sum(x.sum(axis=(0, 2)) ** 2) + np.sum(x.mean(axis=-1) ** 2)
            + np.sum(np.max(x, axis=(1, 2))) + np.sum(x.var(axis=(0,))))


@inputs(x=(4, 5))
def slices_2d(x):
    return (np.sum(x[::-1, 1:] * x[:, :-1]) + np.sum(x[1:-1] ** 2) + np.sum(x[-2:, ::2])
            + np.sum(x[2:0:-1, 3]))


@inputs(x=(3, 4))
def index_row_column_variables(x, i):
    return np.sum(x[i, :] * x[i + 1]) + np.sum(x[:, i] ** 2) + x[-i, -i]


@inputs(x=(4, 3))
def mask_rows(x):
    return np.sum(x[x[:, 0] > 0] ** 2) + np.sum(x[:, x[0] < 0])


def abs_builtin_on_array(x, y):
    return np.sum(abs(x) * y) + np.sum(abs(x - y))


@inputs(x=(2, 3), y=(3, 4), z=(4,))
def matmul_shapes(x, y, z):
    return np.sum(x @ y) + np.sum(z @ y.T @ x.T) + np.sum(((x @ y) @ z) ** 2)


@inputs(x=(2, 2, 3), y=(2, 3, 2))
def matmul_batched(x, y):
    return np.sum(np.matmul(x, y) ** 2) + np.sum(x @ y)


def method_chains(x, y):
    return x.T.dot(y) * x.sum().sum() + np.sum(x.reshape(3, 1).T.ravel() * y)


@inputs(x=[0.6])
def float_of_size_one_array(x, a):
    return float(x.sum()) * a + float(x[0]) ** 2 + float(np.sum(x * a))


# ----- Real NumPy code -----

def softmax_cross_entropy(x, y):
    e = np.exp(x - x.max())
    p = e / e.sum()
    return -np.sum(np.tanh(y) * np.log(p))


@inputs(x=(2, 4))
def logsumexp_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(m[:, 0] + np.log(np.sum(np.exp(x - m), axis=1)))


@inputs(x=(4, 3), y=(3, 5), z=(5,))
def mlp_layer(x, y, z):
    h = np.tanh(x @ y + z)
    out = h @ np.linspace(-1.0, 1.0, 5)
    return np.mean((out - 0.5) ** 2)


@inputs(x=(5, 3))
def rnn_loop(x, m):
    h = np.zeros(3)
    total = 0.0
    for t in range(x.shape[0]):
        h = np.tanh(m @ h + x[t])
        total = total + np.sum(h * h) * (t + 1)
    return total


@inputs(x=(2, 4))
def layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + 1e-5)
    return np.sum(y * np.arange(8.0).reshape(2, 4))


def horner(x, a):
    coeffs = [0.5, -1.0, 2.0, 0.25]
    acc = 0.0
    for cf in coeffs:
        acc = acc * a + cf * np.sum(x)
    return acc


@inputs(a=2.0)
def newton_sqrt(a):
    # Differentiating through the iterations of a converged Newton method.
    r = a
    it = 0
    while abs(r * r - a) > 1e-12 and it < 50:
        r = 0.5 * (r + a / r)
        it += 1
    return r


def euler_integration(x, a):
    state = x * 1.0
    dt = 0.1
    for _ in range(10):
        state = state + dt * (-a * state + np.sin(state))
    return np.sum(state ** 2)


@inputs(x=(4, 2))
def pairwise_distances(x):
    diff = x[:, None, :] - x[None, :, :]
    d2 = np.sum(diff ** 2, axis=-1)
    return np.sum(np.sqrt(d2 + 1.0))


def cumulative_product_loop(x):
    out = np.ones(3)
    running = 1.0
    for k in range(3):
        running = running * x[k]
        out[k] = running
    return np.sum(out * np.array([0.5, 1.0, 1.5]))


def fancy_index_copy_then_write(x):
    # Indexing with an integer array or a mask always copies.
    t = x * 2.0
    p = t[np.array([2, 0, 1])]
    q = t[t > 0]
    t[0] = x[1] ** 2
    return np.sum(t * p) + np.sum(q)


# ----- Issue 11: rules that were silently wrong (tests/test_rule_edges.py has the edges) -----


def linspace_between_parameters(x, a, b):
    # Sample grids are differentiable in their endpoints.
    t = np.linspace(a, b, 5)
    return np.sum(np.sin(t) * a) + np.sum(np.linspace(x, 2 * x + 1, 4, axis=-1) ** 2)


def reductions_of_lists(x, a, b):
    # NumPy makes an array of a list argument.
    return np.mean([a, a + 2 * b]) + np.std((a, b * b)) + np.max([x, 2 * x]) + np.sum(np.sin([a, b]))


def mean_of_appended_values(x):
    values = []
    for k in range(3):
        values.append(np.sum(x ** (k + 1)))
    return np.mean(values) + np.var(values)


def r_and_c_joins(x, y):
    return np.sum(np.r_[x, 2 * y] ** 2) + np.sum(np.c_[x, y] @ np.array([1.5, -0.5]))


def einsum_sublists_and_products_with_scalars(x, y, a):
    return (np.einsum(x, [0], y, [0], []) + np.inner(x, a) @ y
            + np.sum(np.tensordot(x, a, axes=0)) + np.sum(x ** 0.0 * y))
