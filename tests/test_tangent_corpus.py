"""Another AD library's gradient tests, run against srcgrad: Google Tangent's.

Tangent (a source-to-source AD compiler for Python, like srcgrad) tests its reverse
mode, forward mode, reverse-over-reverse and Hessian-vector products on one catalogue
of small functions (its tests/functions.py): straight-line scalar code, ``if``/``elif``
chains that overwrite their argument, ``for`` loops over ``range(n)`` with ``n`` an
argument, ``while`` loops, calls to helpers and to nested ``def``s, tuples and dicts
packed and unpacked, subscript reads and writes on an argument, augmented assignment,
NumPy elementwise functions and reductions, a logistic regression, an RNN written with
row writes into ``np.zeros``, and its TensorFlow-eager cases (reductions with
``keepdims``, ``matmul`` with transposes, broadcasting, convolutions and pooling).
The programs below re-express those cases as ordinary NumPy functions (the TF ones by
their NumPy spelling, Tangent's explicit stack by a Python list), and add the idioms
that sit beside them in Python code of that kind: ``break``/``continue``, ternaries,
keyword arguments, lambdas and closures.

The contract each case is held to (as in test_autograd_corpus.py): **either srcgrad's
derivative matches central finite differences of the float64 function, or srcgrad
refuses with a ``sg.SrcgradError`` whose message names the file and line.** Each
program runs the checks Tangent's suites run on it: ``rev`` (``sg.value_and_grad``,
Tangent's ``preserve_result``, with a random cotangent for a non-scalar output),
``fwd`` (``sg.jvp``), ``rev-rev`` (the gradient of ``sg.grad(f).as_function()``,
Tangent's reverse-over-reverse) and ``fwd-rev`` (``sg.jvp`` of that gradient, the
Hessian-vector product), each at every input point listed (Tangent sweeps its scalars over -2 ... 2; the points here avoid
the branch thresholds by more than the difference step).

Run this file as a script for the table of outcomes and the counts
(OK / REFUSED / WRONG / CRASH); words given select the cases whose names hold one.
"""

import collections
import math
import warnings

import numpy as np
import pytest

import srcgrad as sg
from corpus_trees import leaves as _leaves, rebuild as _rebuild
from corpus_table import Outcomes, print_table

# ----- The checker -----


def _random_like(tree, rng):
    vals = iter(rng.standard_normal(np.shape(leaf)) if isinstance(leaf, np.ndarray)
                else float(rng.standard_normal()) for leaf in _leaves(tree))
    return _rebuild(tree, vals)


def _copy(tree):
    """A fresh copy of the arguments (some programs write into an argument array)."""
    return _rebuild(tree, iter([np.array(v) if isinstance(v, np.ndarray) else v
                                for v in _leaves(tree)]))


def _contract(out, seed):
    if seed is None:
        return float(np.sum(out))
    return float(sum(np.sum(np.asarray(o, dtype=float) * np.asarray(s, dtype=float))
                     for o, s in zip(_leaves(out), _leaves(seed))))


def _shift(args, positions, direction, h):
    new = list(_copy(args))
    for pos, d in zip(positions, direction):
        moved = iter([np.asarray(a, dtype=float) + h * np.asarray(t, dtype=float)
                      if isinstance(a, np.ndarray) else float(a) + h * float(t)
                      for a, t in zip(_leaves(args[pos]), _leaves(d))])
        new[pos] = _rebuild(args[pos], moved)
    return new


def _fd_directional(fun, args, positions, direction, eps=1e-6):
    plus = fun(*_shift(args, positions, direction, eps))
    minus = fun(*_shift(args, positions, direction, -eps))
    return _rebuild(plus, iter([(np.asarray(p, dtype=float) - np.asarray(m, dtype=float)) / (2 * eps)
                                for p, m in zip(_leaves(plus), _leaves(minus))]))


def _fd_gradient(fun, args, positions, seed, eps=1e-6):
    """Central differences of ``<fun(*args), seed>``: one tree per position in ``positions``."""
    result = []
    for pos in positions:
        grads = []
        for k, leaf in enumerate(_leaves(args[pos])):
            g = np.zeros(np.shape(leaf))
            for j in range(g.size):
                basis = [np.zeros(np.shape(v)) if isinstance(v, np.ndarray) else 0.0
                         for v in _leaves(args[pos])]
                if isinstance(leaf, np.ndarray):
                    basis[k].flat[j] = 1.0
                else:
                    basis[k] = 1.0
                d = [_rebuild(args[pos], iter(basis))]
                g.flat[j] = (_contract(fun(*_shift(args, (pos,), d, eps)), seed)
                             - _contract(fun(*_shift(args, (pos,), d, -eps)), seed)) / (2 * eps)
            grads.append(g)
        result.append(_rebuild(args[pos], iter(grads)))
    return result


class Mismatch(Exception):
    """A derivative that differs from the finite differences."""


def _close(label, got, want, rtol=1e-4, atol=1e-5):
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    if len(got_leaves) != len(want_leaves):
        raise Mismatch(f"{label}: {len(got_leaves)} leaves, want {len(want_leaves)}")
    for g, w in zip(got_leaves, want_leaves):
        w = np.asarray(w, dtype=float)
        g = np.zeros_like(w) if g is None else np.asarray(g)
        if np.iscomplexobj(g) or g.shape != w.shape:
            raise Mismatch(f"{label}: shape {g.shape} {g.dtype}, want {w.shape}")
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        if not np.allclose(g, w, rtol=rtol, atol=atol * scale):
            raise Mismatch(f"{label}: got {g!r} want {w!r}"[:500])


def _as_tuple(g, wrt):
    return g if isinstance(wrt, tuple) else (g,)


def check(kind, fun, args, wrt, rtol=1e-4):
    """One of Tangent's checks of ``fun`` at ``args`` against central differences."""
    positions = _as_tuple(wrt, wrt)
    rng = np.random.default_rng(5)
    out = fun(*_copy(args))
    scalar = not isinstance(out, (tuple, list, dict)) and np.ndim(out) == 0
    direction = [_random_like(args[p], rng) for p in positions]
    tangents = [None] * len(args)
    for p, d in zip(positions, direction):
        tangents[p] = d
    if kind == "rev":
        seed = None if scalar else _random_like(out, rng)
        value, got = sg.value_and_grad(fun, wrt)(*_copy(args), grad_outputs=seed)
        _close("rev value", value, out)   # Tangent's preserve_result
        _close(kind, _as_tuple(got, wrt), _fd_gradient(fun, args, positions, seed), rtol)
    elif kind == "fwd":
        value, tangent = sg.jvp(fun, tuple(_copy(args)), tuple(tangents))
        _close("fwd value", value, out)
        _close(kind, tangent, _fd_directional(fun, args, positions, direction), rtol)
    else:
        if not scalar:
            raise ValueError("second order needs a scalar output")
        first = sg.grad(fun, wrt).as_function()

        def first_tuple(*a):
            return _as_tuple(first(*a), wrt)
        if kind == "rev-rev":
            seed = _random_like(first_tuple(*_copy(args)), rng)
            got = sg.grad(first, wrt)(*_copy(args),
                                      grad_outputs=seed if isinstance(wrt, tuple) else seed[0])
            _close(kind, _as_tuple(got, wrt), _fd_gradient(first_tuple, args, positions, seed),
                   rtol)
        else:
            _, tangent = sg.jvp(first, tuple(_copy(args)), tuple(tangents))
            _close(kind, _as_tuple(tangent, wrt),
                   _fd_directional(first_tuple, args, positions, direction), rtol)


def run_case(c):
    """(status, message) for one case: OK, REFUSED, WRONG or CRASH."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for args in c.points:
            try:
                check(c.kind, c.fun, args, c.wrt, c.rtol)
            except Mismatch as e:
                return "WRONG", f"at {args!r}: {e}"[:600]
            except sg.SrcgradError as e:
                text = str(e)
                if 'File "' not in text or "line" not in text:
                    return "CRASH", f"refusal without a location: {text.splitlines()[0][:150]}"
                return "REFUSED", text.splitlines()[0][:200]
            except Exception as e:  # noqa: BLE001 - any other exception breaks the contract
                return "CRASH", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return "OK", ""


# ----- The registry -----

Case = collections.namedtuple("Case", "name kind fun points wrt rtol")
CASES = []
ALL = ("rev", "fwd", "rev-rev", "fwd-rev")

RNG = np.random.default_rng(11)
SCALARS = (-2.0, -0.5, 0.1, 1.5, 2.0)   # Tangent's sweep, thinned
INTS = (1, 2, 3)


def add(fun, *points, wrt=0, kinds=ALL, rtol=1e-4, name=None):
    """Register ``fun`` at each argument tuple in ``points`` for each check in ``kinds``."""
    for kind in kinds:
        CASES.append(Case(f"{name or fun.__name__}/{kind}", kind, fun, points, wrt, rtol))


def scalars(n, wrt=None, kinds=ALL, points=SCALARS):
    """Decorator: a program of ``n`` float arguments, swept over ``points`` (each
    argument its own point, rotated so that they differ)."""
    def deco(fun):
        pts = [tuple(points[(i + 2 * k) % len(points)] for k in range(n))
               for i in range(len(points))]
        add(fun, *pts, wrt=tuple(range(n)) if wrt is None else wrt, kinds=kinds)
        return fun
    return deco


def with_int(fun, kinds=ALL, points=SCALARS):
    """A program ``f(a, n)``: differentiated in ``a``, ``n`` an int loop count."""
    add(fun, *[(a, n) for a in points for n in INTS], kinds=kinds)
    return fun


def vector(fun, *shapes, wrt=0, kinds=ALL, rtol=1e-4, positive=False):
    """A program of arrays of these shapes (default one vector of 3, 5 and 10)."""
    shapes = shapes or ((3,), (5,), (10,))
    points = []
    for shape in shapes:
        shape = shape if isinstance(shape[0], tuple) else (shape,)
        args = tuple(RNG.standard_normal(s) for s in shape)
        if positive:
            args = tuple(np.abs(a) + 0.5 for a in args)
        points.append(args)
    add(fun, *points, wrt=wrt, kinds=kinds, rtol=rtol)
    return fun


# ===== Scalar programs (Tangent's test_grad_unary/binary/ternary/binary_int) =====

@scalars(1)
def identity(a):
    return a


@scalars(1)
def negate(a):
    return -a


@scalars(1)
def tanh_of(a):
    return np.tanh(a)


@scalars(1)
def copy_to_new_name(a):
    b = a
    return b


@scalars(1)
def plus_int_one(a):
    return a + 1


@scalars(3)
def axpy(a, b, c):
    return a * b + c


@scalars(2)
def times(a, b):
    return a * b


@scalars(2)
def plus(a, b):
    return a + b


@scalars(3)
def axpy_by_calls(a, b, c):
    return plus(times(a, b), c)


@scalars(3)
def axpy_in_steps(a, b, c):
    prod = a * b
    total = prod + c
    return total


@scalars(3)
def axpy_rebinding(a, b, c):
    s = a * b
    s = s + c
    return s


@scalars(1)
def name_like_an_adjoint(a):
    da = a * a
    return da


@scalars(1)
def if_else_rebinds_argument(a):
    if a > 0:
        a = a * 3.0
    else:
        a = a * 2.0
    return a


@scalars(1)
def binop_arg_add_const(a):
    return a + 3.0


@scalars(1)
def binop_const_add_arg(a):
    return 3.0 + a


@scalars(1)
def binop_arg_add_arg(a):
    return a + a


@scalars(1)
def binop_arg_sub_const(a):
    return a - 3.0


@scalars(1)
def binop_const_sub_arg(a):
    return 3.0 - a


@scalars(1)
def binop_arg_sub_arg(a):
    return a - a


@scalars(1)
def binop_arg_mul_const(a):
    return a * 3.0


@scalars(1)
def binop_const_mul_arg(a):
    return 3.0 * a


@scalars(1)
def binop_arg_mul_arg(a):
    return a * a


@scalars(1)
def binop_arg_div_const(a):
    return a / 3.0


@scalars(1)
def binop_const_div_arg(a):
    return 3.0 / a


@scalars(1)
def binop_arg_div_arg(a):
    return a / a


@scalars(1)
def if_inside_if(a):
    if a > 0:
        if a < 10:
            a = a * a
    else:
        a = 3.0 * a
    return a


@scalars(1, points=(-2.0, -0.5, 0.1, 1.5, 0.7))
def branchy_conditions_on_argument(a):
    if a * a / 3.0 > 0:
        b = 3.0
    else:
        b = 4.0
    a = a * b
    if a < b - a * b:
        a = a * a
    elif a > b + 3.0 * a:
        if a / 2.0 < 0:
            a = a / b
        else:
            a = a * b
    else:
        a = -a
    return a


@scalars(1)
def np_multiply_const(a):
    return np.multiply(a, 3.0)


@scalars(1, kinds=("rev", "fwd"))
def two_outputs(a):
    return 2 * a, a


@scalars(1)
def list_of_consts_and_square(a):
    parts = [1, a * a, 2]
    return np.sum(parts)


@scalars(1)
def list_then_index(a):
    row = [1.0, a, 3.0]
    return row[0] * row[1]


@scalars(1)
def two_ifs_in_a_row(a):
    if a > 0:
        a = a * a
    a = a + a
    if a < 0:
        a = 3.0 * a
    return a


@scalars(2, wrt=(0, 1))
def branch_on_two_arguments(a, b):
    if a > b:
        a = a * a
    else:
        a = a * b
    return a


@with_int
def two_loops_then_scale(a, n):
    for i in range(n):
        a = a * a
    a = 2.0 * a
    for i in range(n + 1):
        a = a * 3.0
    return a


@with_int
def if_then_loop(a, n):
    if a > 0:
        a = a * a
    a = 2.0 * a
    for i in range(n):
        a = a * a
    return a


@with_int
def loop_then_if(a, n):
    for i in range(n):
        a = a * a
    a = 2.0 * a
    if a > 0:
        a = a * a
    return a


@scalars(1, points=(-2.0, -0.5, 0.1, 1.5, 4.0))
def ifs_nested_rebinding(a):
    if a > 0:
        a = a * 3.0
        if a < 10:
            a = a * a
        else:
            a = a * 2.0
    return a


@scalars(1)
def if_elif_else_rebinding(a):
    if a > 0:
        a = a * 3.0
    elif 0 > a:
        a = a * 2.0
    else:
        a = 1.0 * a
    return a


@scalars(1)
def rebinding_argument(a):
    a = a * 3.0
    return a


@scalars(1)
def rebinding_local(a):
    b = a
    b = b * 3.0
    return b


@scalars(1)
def cube_by_products(a):
    return a * a * a


@scalars(1)
def cube_by_power(a):
    return a ** 3


@scalars(1)
def cube_by_loop_from_int(a):
    acc = 1
    for _ in range(3):
        acc = acc * a
    return acc


@scalars(1)
def cube_by_loop_from_arg(a):
    acc = a
    for _ in range(3 - 1):
        acc = acc * a
    return acc


@scalars(1, points=(-1.1, -0.5, 0.1, 0.9, 1.2))
def square_three_times(a):
    for _ in range(3):
        a = a * a
    return a


@with_int
def square_n_times(a, n):
    for _ in range(n):
        a = a * a
    return a


@scalars(1, points=(-1.1, -0.5, 0.1, 0.9, 25.0))
def loop_with_if_inside(a):
    for _ in range(3):
        if a < 20:
            a = a * a
    return a


@scalars(1, points=(-1.1, -0.5, 0.1, 0.9, 25.0))
def if_with_loop_inside(a):
    if a < 20:
        for _ in range(3):
            a = a * a
    return a


@scalars(1, points=(-1.05, -0.5, 0.1, 0.9, 1.02))
def nested_loops_squaring(a):
    for _ in range(2):
        for _ in range(3):
            a = a * a
    return a


@scalars(1, points=(-1.05, -0.5, 0.1, 0.9, 1.02))
def loop_of_triple_products(a):
    for _ in range(3):
        a = a * a * a
    return a


@scalars(1)
def np_exp(a):
    return np.exp(a)


@scalars(1, points=(-1.0, -0.5, 0.1, 0.5, 1.0))
def np_exp_exp(a):
    return np.exp(np.exp(a))


@scalars(1)
def sqrt_of_abs_by_branch(a):
    if a >= 0:
        r = np.sqrt(a)
    else:
        r = np.sqrt(-a)
    return r


@scalars(1)
def np_cos(a):
    return np.cos(a)


@scalars(1)
def np_sin(a):
    return np.sin(a)


@scalars(1)
def np_tan(a):
    return np.tan(a)


@scalars(1)
def np_cosh(a):
    return np.cosh(a)


@scalars(1)
def np_sinh(a):
    return np.sinh(a)


@scalars(1)
def np_tanh(a):
    return np.tanh(a)


@scalars(1)
def np_arctan(a):
    return np.arctan(a)


@scalars(1, points=(-0.7, -0.2, 0.1, 0.4, 0.8))
def np_arccos(a):
    return np.arccos(a)


@scalars(1, points=(-0.7, -0.2, 0.1, 0.4, 0.8))
def np_arcsin(a):
    return np.arcsin(a)


def _helper_product(a, b):
    return a * b


@scalars(2)
def calls_helper(a, b):
    return _helper_product(a, b)


@scalars(2)
def helper_chosen_by_branch(a, b):
    if a > b:
        o = _helper_product(a, b)
    else:
        o = _helper_product(b, a)
    return o


@with_int
def helper_in_loop(a, n):
    for _ in range(n):
        a = _helper_product(a, a)
    return a


@scalars(2)
def calls_a_caller(a, b):
    return calls_helper(a, b)


@with_int
def nested_def_in_loop(a, n):
    def scale(v, w):
        return v * w

    for _ in range(n):
        a = scale(a, a)
    return a


@scalars(3, wrt=(0, 1, 2))
def pack_then_pick(a, b, c, i=1):
    packed = a, b, c
    return packed[i]


@scalars(1)
def augmented_multiply(a):
    s = a * a
    s *= s
    return s


@scalars(1)
def list_push_pop(a):
    stack = []
    y = a * a
    stack.append(a)
    back = stack.pop()
    z = y * back
    z = z * back
    return z


@scalars(2, points=(0.5, 1.5, 2.0, 0.7, 1.1))
def power_of_abs_by_branch(a, b):
    if a >= 0:
        a = a ** b
    else:
        a = (-a) ** b
    return a


@scalars(2, points=(-0.5, -1.5, 2.0, 0.7, 1.1))
def negative_base_power_branch(a, b):
    if a >= 0:
        a = a ** b
    else:
        a = (-a) ** b
    return a


@scalars(1)
def square_then_square(a):
    a = a * a
    y = a * a
    return y


@scalars(1, points=(-1.1, -0.5, 0.1, 0.9, 1.2))
def chain_overwrite_protected(a):
    b = a
    b = a * a
    c = b * b
    d = c * c
    return d


@scalars(1, points=(-1.1, -0.5, 0.1, 0.9, 1.2))
def chain_of_helper_calls(a):
    b = times(a, a)
    c = times(b, b)
    d = times(c, c)
    return d


@scalars(1, kinds=("rev", "fwd", "rev-rev"))
def dead_push_pop(a):
    stack = []
    b = a * a
    stack.append(b)
    b = stack.pop()
    return a


@scalars(1, kinds=("rev", "fwd", "rev-rev"))
def name_rebound_to_a_list(a):
    stack = []
    x = a
    stack.append(x)
    x = [a]
    x = stack.pop()
    return a


@scalars(1, points=(-2.0, -0.5, 0.13, 1.5, 2.0))
def while_halving(a):
    while np.abs(a) > 0.1:
        a = a * 0.5
    return a


# ----- The idioms around them in such code -----

@scalars(1, points=(-2.0, -0.5, 0.13, 1.5, 2.0))
def while_true_break(a):
    while True:
        a = a * 0.5
        if abs(a) < 0.1:
            break
    return a


@with_int
def for_continue_skips_odd(a, n):
    acc = a
    for i in range(n + 2):
        if i % 2 == 1:
            continue
        acc = acc * a + i
    return acc


@with_int
def for_break_early(a, n):
    acc = 1.0
    for i in range(5):
        if i >= n:
            break
        acc = acc * (a + i)
    return acc


@scalars(2)
def ternary_rebinding(a, b):
    a = a * b if a > b else a + b * b
    return a * a


@scalars(2)
def keyword_call(a, b):
    return _scaled(b=a, scale=b) + _scaled(a)


def _scaled(b, scale=2.0):
    return b * scale


@scalars(2)
def lambda_closure(a, b):
    f = lambda t: t * a + b  # noqa: E731 - the idiom under test
    return f(a) * f(b)


@scalars(2)
def closure_over_argument(a, b):
    def inner(t):
        return t * t * a

    return inner(b) + inner(a)


@scalars(1)
def augmented_chain(a):
    s = a
    s += a * a
    s -= 0.5 * a
    s *= a
    s /= 2.0
    s **= 2
    return s


@scalars(2)
def tuple_swap(a, b):
    a, b = b, a * b
    a, b = a + b, a
    return a * b


@scalars(1)
def min_max_builtins(a):
    return max(a, 0.3) * min(a, 1.0) + abs(a)


@with_int
def while_counter_loop(a, n):
    i = 0
    while i < n:
        a = a * 1.5 + math.sin(a)
        i += 1
    return a


# ===== Vector programs (test_grad_vector, test_grad_square_matrix) =====

@vector
def sum_all(x):
    return np.sum(x)


@vector
def sum_of_array_call(x):
    return np.sum(np.array(x))


@vector
def sum_then_square_same_name(x):
    x = np.sum(x)
    x = x * x
    return x


@vector
def list_with_product_of_elements(x):
    parts = [1, x[0] * x[1] * x[2], 3]
    return np.sum(parts)


@vector
def two_element_reads(x):
    a = x[0]
    b = x[1]
    return a * b


@vector
def write_into_argument(x):
    a = x[0]
    b = x[1]
    x[0] = a * b
    return np.sum(x)


@vector
def write_into_argument_from_square(x):
    y = x ** 2.0
    x[0] = y[1] * y[2]
    return np.sum(x * y)


@vector
def iterate_over_array(x):
    res = 0.0
    for v in x:
        res += v
    return res


@vector
def iterate_over_array_products(x):
    res = 1.0
    for v in x:
        res = res * v + v
    return res


@vector
def mean_of(x):
    return np.mean(x)


@vector
def at_least_1d(x):
    return np.sum(np.atleast_1d(x))


@vector
def at_least_2d(x):
    return np.sum(np.atleast_2d(x))


@vector
def at_least_3d(x):
    return np.sum(np.atleast_3d(x))


@vector
def list_comprehension_sum(x):
    return np.sum([v * 3 for v in x])


@vector
def copy_rows_into_zeros_like(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[i] = x[i]
    return np.sum(y)


@vector
def copy_into_broadcast_rows(x):
    h = np.zeros((len(x), 3))
    for t in range(len(h)):
        h[t] = x[t]
    return np.sum(h)


@vector
def copy_rows_weighted(x):
    h = np.zeros((len(x), 3))
    for t in range(len(h)):
        h[t] = x[t] * x[t]
    return np.sum(h * np.arange(3.0))


@vector
def tail_slice(x):
    return np.sum(x[1:])


@vector
def every_other_with_newaxis(x):
    return np.sum(x[::2, np.newaxis])


@vector
def every_other_with_newaxis_weighted(x):
    return np.sum(x[::2, np.newaxis] * np.arange(1.0, 3.0)) ** 2


def det_of(m):
    return np.linalg.det(m)


vector(det_of, (3, 3), (4, 4))


@vector
def dict_then_unpack(x):
    d = {"a": x[0], "b": x[1]}
    return d["a"] * d["b"] + np.sum(x)


# ===== Structured arguments (test_dict_saxpy, test_unpacking_args_saxpy, test_nested_dict) =====

def unpacked_axpy(abc):
    a, b, c = abc
    return a * b + c


def dict_axpy(val):
    return val["a"] * val["b"] + val["c"]


def dict_built_by_keywords(abc):
    a, b, c = abc
    return dict_axpy(dict(a=a, b=b, c=c))


def unpack_first(abc):
    a, b, c = abc
    return a


def nested_dict_product(p):
    return p["i"]["j"] * p["i"]["k"]


add(unpacked_axpy, ((0.5, -1.5, 2.0),), ((-2.0, 0.1, 1.5),))
add(dict_axpy, ({"a": 0.5, "b": -1.5, "c": 2.0},))
add(dict_built_by_keywords, ((0.5, -1.5, 2.0),))
add(unpack_first, ((0.5, -1.5, 2.0),), kinds=("rev", "fwd"))
add(nested_dict_product, ({"i": {"j": 3.0, "k": 4.0}},))


# ===== Larger programs (test_logistic_regression, test_rnn, test_bilinear, HVP) =====

def logistic_loss(inputs, label, W, b):
    h1 = np.dot(inputs, W) + b
    prediction = 0.5 * (np.tanh(h1) + 1)
    label_probabilities = prediction * label + (1 - prediction) * (1 - label)
    return -np.sum(np.log(label_probabilities))


_label = np.zeros(5)
_label[1] = 1
add(logistic_loss, (RNG.random(3), _label, RNG.standard_normal((3, 5)), RNG.standard_normal(5)),
    wrt=(2, 3))


def recurrent_rows(inputs, W):
    h = np.zeros((4, 3))
    for t in range(3):
        h[t + 1] = np.dot(inputs[t], W) + h[t]
    return np.sum(h[1:])


def recurrent_rows_tanh(inputs, W):
    h = np.zeros((4, 3))
    for t in range(3):
        h[t + 1] = np.tanh(np.dot(inputs[t], W) + h[t])
    return np.sum(h[1:] ** 2)


add(recurrent_rows, (RNG.standard_normal((3, 2)), RNG.standard_normal((2, 3))), wrt=(0, 1))
add(recurrent_rows_tanh, (RNG.standard_normal((3, 2)), RNG.standard_normal((2, 3))), wrt=(0, 1))


def bilinear_layer(x, h, U, W, b):
    y = np.dot(x, W)
    y = y + np.dot(h, U)
    y = y + b
    y = np.tanh(y)
    return np.sum(y)


add(bilinear_layer, tuple(RNG.standard_normal(s) for s in ((1, 3), (1, 3), (3, 3), (3, 3), (1, 3))),
    wrt=(0, 2, 4))


def cubes_times_square(x):
    a = x * x * x
    b = a * x ** 2.0
    return np.sum(b)


def _cube(a):
    b = a * a * a
    return b


def cube_call_times_square(x):
    a = _cube(x)
    b = a * x ** 2.0
    return np.sum(b)


add(cubes_times_square, (RNG.standard_normal(30),))
add(cube_call_times_square, (RNG.standard_normal(30),))


def polar_radius_angle(a, b):
    r = np.sqrt(a ** 2.0 + b ** 2.0)
    theta = np.arctan2(b, a)
    return r, theta


add(polar_radius_angle, (0.5, -1.5), (-2.0, 0.1), wrt=(0, 1), kinds=("rev", "fwd"))


def arctan_with_out_argument(a, b):
    r = np.sqrt(a ** 2.0 + b ** 2.0)
    theta = np.arctan(b, a)   # Tangent's spelling: the second argument is ``out``
    return np.sum(r * theta) + np.sum(a)


add(arctan_with_out_argument, (RNG.standard_normal(3), RNG.standard_normal(3)), wrt=(0, 1))


# ===== Tangent's TensorFlow-eager cases, by their NumPy spelling =====

T = (RNG.standard_normal((2, 3)),)
IMAGE = RNG.standard_normal((2, 3, 4, 2))


def tf_negative(t): return np.negative(t)
def tf_exp(t): return np.exp(t)
def tf_log(t): return np.log(t)
def tf_tanh(t): return np.tanh(t)
def tf_cosh(t): return np.cosh(t)
def tf_sinh(t): return np.sinh(t)
def tf_rsqrt(t): return 1.0 / np.sqrt(t)
def tf_expand_dims_front(t): return np.expand_dims(t, 0)
def tf_expand_dims_middle(t): return np.expand_dims(t, 1)
def tf_squeeze_front(t): return np.squeeze(np.expand_dims(t, 0), 0)
def tf_squeeze_middle(t): return np.squeeze(np.expand_dims(t, 1), 1)
def tf_reshape_flat(t): return np.reshape(t, (-1,))
def tf_reshape_back(t): return np.reshape(np.reshape(t, (-1,)), np.shape(t))


for _f in (tf_negative, tf_exp, tf_tanh, tf_cosh, tf_sinh, tf_expand_dims_front,
           tf_expand_dims_middle, tf_squeeze_front, tf_squeeze_middle, tf_reshape_flat,
           tf_reshape_back):
    add(_f, T, kinds=("rev", "fwd"))
for _f in (tf_log, tf_rsqrt):
    add(_f, (np.abs(T[0]) + 0.5,), kinds=("rev", "fwd"))


def tf_reduce_sum(timage, keep): return np.sum(timage, None, keepdims=keep)
def tf_reduce_sum_axes(timage, keep): return np.sum(timage, axis=(0, 1, 2), keepdims=keep)
def tf_reduce_mean(timage, keep): return np.mean(timage, None, keepdims=keep)
def tf_reduce_mean_axes(timage, keep): return np.mean(timage, axis=(0, 1, 2), keepdims=keep)
def tf_reduce_max(timage, keep): return np.max(timage, None, keepdims=keep)
def tf_reduce_max_axes(timage, keep): return np.max(timage, axis=(0, 1, 2), keepdims=keep)
def tf_reduce_sum_positional(timage, keep): return np.sum(timage, None, None, None, keep)


for _f in (tf_reduce_sum, tf_reduce_sum_axes, tf_reduce_mean, tf_reduce_mean_axes, tf_reduce_max,
           tf_reduce_max_axes, tf_reduce_sum_positional):
    add(_f, (IMAGE, True), (IMAGE, False), kinds=("rev", "fwd"))


def tf_add(t1, t2): return np.add(t1, t2)
def tf_subtract(t1, t2): return np.subtract(t1, t2)
def tf_multiply(t1, t2): return np.multiply(t1, t2)
def tf_divide(t1, t2): return np.divide(t1, t2)
def tf_maximum(t1, t2): return np.maximum(t1, t2)
def tf_squared_difference(t1, t2): return np.square(t1 - t2)


_T1, _T2 = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
for _f in (tf_add, tf_subtract, tf_multiply, tf_divide, tf_maximum, tf_squared_difference):
    add(_f, (_T1, _T2), (RNG.standard_normal(()) * np.ones(1), _T2), wrt=(0, 1),
        kinds=("rev", "fwd"))


def tf_matmul(mat1, mat2, ta, tb):
    return np.matmul(mat1.T if ta else mat1, mat2.T if tb else mat2)


def tf_matmul_highdim(a, b, ta, tb):
    return np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)


for _ta in (True, False):
    for _tb in (True, False):
        add(tf_matmul, (RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3)), _ta, _tb),
            wrt=(0, 1), kinds=("rev", "fwd"), name=f"tf_matmul_{_ta:d}{_tb:d}")
        add(tf_matmul_highdim, (RNG.standard_normal((2, 3, 3)), RNG.standard_normal((2, 3, 3)),
                                _ta, _tb),
            wrt=(0, 1), kinds=("rev", "fwd"), name=f"tf_matmul_highdim_{_ta:d}{_tb:d}")


def conv2d_same(image, kernel, stride):
    """NHWC image, HWIO kernel, 'SAME' padding, by loops over the output pixels."""
    n, h, w, _ = image.shape
    kh, kw, _, co = kernel.shape
    oh, ow = -(-h // stride), -(-w // stride)
    ph = max((oh - 1) * stride + kh - h, 0)
    pw = max((ow - 1) * stride + kw - w, 0)
    padded = np.pad(image, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    out = np.zeros((n, oh, ow, co))
    for i in range(oh):
        for j in range(ow):
            patch = padded[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, kernel, axes=([1, 2, 3], [0, 1, 2]))
    return out


def pool2d_same(image, size, stride, reduce_max):
    n, h, w, c = image.shape
    oh, ow = -(-h // stride), -(-w // stride)
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            patch = image[:, i * stride:i * stride + size, j * stride:j * stride + size, :]
            out[:, i, j, :] = patch.max(axis=(1, 2)) if reduce_max else patch.mean(axis=(1, 2))
    return out


_IMG = RNG.standard_normal((1, 4, 4, 2))
_KER = RNG.standard_normal((2, 2, 2, 3))
for _s in (1, 2):
    add(conv2d_same, (_IMG, _KER, _s), wrt=(0, 1), kinds=("rev", "fwd"), name=f"conv2d_s{_s}")
    add(pool2d_same, (_IMG, 2, _s, True), kinds=("rev", "fwd"), name=f"max_pool_s{_s}")
    add(pool2d_same, (_IMG, 2, _s, False), kinds=("rev", "fwd"), name=f"avg_pool_s{_s}")


# ----- The test -----

# The cases refused today, each with a located SrcgradError (run this file as a script for
# the reasons). Any other case must differentiate: a refusal there is a regression.
# (The forward-over-reverse Hessian-vector product of a function of a tuple or dict, the
# four structured cases' fwd-rev, was refused: ``sg.jvp`` of ``grad(f).as_function()`` at a
# structure is now the hvp of f, which takes structures: srcgrad/nested.gradient_jvp.)
REFUSED_TODAY = frozenset()

outcome = Outcomes(run_case)


def test_case_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_derivative_matches_finite_differences_or_is_refused_with_a_location(c):
    status, message = outcome(c)
    allowed = ("OK", "REFUSED") if c.name in REFUSED_TODAY else ("OK",)
    assert status in allowed, f"{status}: {message}"


def test_most_of_the_corpus_is_differentiated_not_refused():
    names = {c.name for c in CASES}
    assert REFUSED_TODAY <= names, sorted(REFUSED_TODAY - names)
    assert len(REFUSED_TODAY) <= 0.05 * len(CASES), len(REFUSED_TODAY)


def main():
    print_table(CASES, run_case)


if __name__ == "__main__":
    main()
