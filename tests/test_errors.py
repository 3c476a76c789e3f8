"""Error paths: what srcgrad refuses, and how the refusal reads.

Every refusal is a ``sg.SrcgradError`` (or subclass) whose text names this
file, the line of the offending construct and shows its source text; fence
refusals also carry a column and a hint (DESIGN.md section 5). Whether the
refusal comes from ``sg.grad(f)`` or from the first call does not matter here;
it must come before any gradient is returned.
"""

import contextlib
import inspect
import math
import os

import numpy as np
import pytest

import srcgrad as sg

THIS_FILE = os.path.basename(__file__)
X = np.array([0.5, -1.2, 2.0])
COUNTER = 0
SCALE = 2.5


def line_of(f, marker):
    """(line number, stripped text) of the first line of ``f`` containing ``marker``."""
    lines, start = inspect.getsourcelines(f)
    for offset, line in enumerate(lines):
        if marker in line:
            return start + offset, line.strip()
    raise AssertionError(f"{marker!r} not in the source of {f.__name__}")


def refused(f, *args, wrt=0, **kwargs):
    """The SrcgradError srcgrad raises for ``f`` (asking for the gradient and calling it)."""
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(f, wrt=wrt)(*args, **kwargs)
    return info.value


def assert_located(error, f, marker, fence=True):
    lineno, text = line_of(f, marker)
    message = str(error)
    assert THIS_FILE in message, message
    assert str(lineno) in message, f"line {lineno} not in:\n{message}"
    assert text in message, f"{text!r} not in:\n{message}"
    assert error.filename is not None and error.filename.endswith(THIS_FILE)
    assert error.lineno == lineno, (error.lineno, lineno)
    if fence:
        assert error.col_offset is not None
        assert error.hint, f"no workaround in:\n{message}"


# ----- The fence: constructs outside the subset -----

def uses_try(x):
    y = x * 2.0
    try:
        y = np.sqrt(y)
    except ValueError:
        y = x
    return np.sum(y)


def uses_yield(x):
    for v in x:
        yield v * v


async def uses_async(x):
    return np.sum(x * x)


def uses_await_free_async_for(x):
    async def inner():
        return x
    return np.sum(x)


def uses_global_write(x):
    global COUNTER
    COUNTER = COUNTER + 1
    return np.sum(x * x)


def _make_nonlocal_writer():
    calls = 0

    def uses_nonlocal_write(x):
        nonlocal calls
        calls = calls + 1
        return np.sum(x * x)
    return uses_nonlocal_write


uses_nonlocal_write = _make_nonlocal_writer()


def uses_del(x):
    y = x * x
    z = np.sum(y)
    del y
    return z


def uses_class(x):
    class Box:
        value = 2.0
    return np.sum(x * Box.value)


def uses_with_open(x):
    with open(os.devnull) as handle:
        handle.read()
    return np.sum(x * x)


def uses_other_with(x):
    with contextlib.suppress(ValueError):
        x = x * 2.0
    return np.sum(x)


def uses_raise_in_try_finally(x):
    y = x
    try:
        y = x * 3.0
    finally:
        y = y + 1.0
    return np.sum(y)


FENCE_CASES = [
    (uses_try, "try:"),
    (uses_yield, "yield v * v"),
    (uses_async, "async def uses_async"),
    (uses_await_free_async_for, "async def inner"),
    (uses_global_write, "global COUNTER"),
    (uses_nonlocal_write, "nonlocal calls"),
    (uses_del, "del y"),
    (uses_class, "class Box"),
    (uses_with_open, "with open(os.devnull)"),
    (uses_other_with, "with contextlib.suppress"),
    (uses_raise_in_try_finally, "try:"),
]


@pytest.mark.parametrize("f, marker", FENCE_CASES, ids=[f.__name__ for f, _ in FENCE_CASES])
def test_fence_refuses(f, marker):
    error = refused(f, X)
    assert_located(error, f, marker)


def test_fence_error_is_unsupported_error():
    from srcgrad.errors import UnsupportedError

    assert isinstance(refused(uses_try, X), UnsupportedError)


def test_refused_function_never_runs():
    before = COUNTER
    refused(uses_global_write, X)
    assert COUNTER == before


def test_global_reads_are_fine():
    g = sg.grad(reads_global)(X)
    np.testing.assert_allclose(g, SCALE * 2 * X, rtol=1e-12, atol=0)


def reads_global(x):
    return np.sum(x * x) * SCALE


# ----- Lambdas -----

def test_lambda_without_source():
    f = eval("lambda x: np.sum(x * x)")
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(f)(X)
    message = str(info.value)
    assert "lambda" in message or "source" in message, message


def test_lambda_with_source_correct_or_refused():
    f = lambda x: np.sum(np.sin(x) * x)  # noqa: E731
    try:
        g = sg.grad(f)(X)
    except sg.SrcgradError as error:
        assert THIS_FILE in str(error) and "lambda" in str(error), str(error)
    else:
        np.testing.assert_allclose(g, np.cos(X) * X + np.sin(X), rtol=1e-12, atol=1e-15)


# ----- Calls with no rule and no source -----

def calls_frexp(x):
    y = x * 2.0
    mantissa, exponent = np.frexp(y)
    return np.sum(mantissa)


_opaque = np.frompyfunc(lambda v: v * 2.0, 1, 1)


def calls_user_c_callable(x):
    y = x + 1.0
    z = _opaque(y)
    return np.sum(z)


def calls_builtin_c_function(x):
    s = math.fsum(x * x)
    return s


@pytest.mark.parametrize("f, marker, callee", [
    (calls_frexp, "np.frexp(y)", "frexp"),
    (calls_user_c_callable, "_opaque(y)", "_opaque"),
])
def test_unknown_call_on_active_value(f, marker, callee):
    error = refused(f, X)
    assert_located(error, f, marker, fence=False)
    assert callee in str(error)


def test_unknown_call_error_class():
    from srcgrad.errors import NonDifferentiableError

    assert isinstance(refused(calls_frexp, X), NonDifferentiableError)


def test_builtin_c_function_correct_or_refused():
    try:
        g = sg.grad(calls_builtin_c_function)(X)
    except sg.SrcgradError as error:
        assert_located(error, calls_builtin_c_function, "math.fsum", fence=False)
        assert "fsum" in str(error)
    else:
        np.testing.assert_allclose(g, 2 * X, rtol=1e-12, atol=0)


def frexp_on_constant(x):
    mantissa, exponent = np.frexp(np.array([3.0, 5.0, 6.0]))
    return np.sum(x * mantissa) + exponent[0]


def test_unknown_call_on_constant_is_fine():
    g = sg.grad(frexp_on_constant)(X)
    np.testing.assert_allclose(g, np.frexp(np.array([3.0, 5.0, 6.0]))[0], rtol=0, atol=0)


# ----- Recursion -----

def power_recursive(a, k):
    if k == 0:
        return 1.0
    return a * power_recursive(a, k - 1)


def power_recursive_array(x, k):
    if k == 0:
        return np.ones_like(x)
    return np.sin(x) * power_recursive_array(x, k - 1)


def test_recursion_correct_or_refused():
    try:
        g = sg.grad(power_recursive, wrt=0)(1.3, 4)
    except sg.SrcgradError as error:
        message = str(error)
        assert "power_recursive" in message and "recurs" in message.lower(), message
        assert THIS_FILE in message
    else:
        assert g == pytest.approx(4 * 1.3 ** 3, rel=1e-12)


def test_recursion_on_arrays_correct_or_refused():
    try:
        g = sg.grad(power_recursive_array, wrt=0)(X, 3)
    except sg.SrcgradError as error:
        assert "power_recursive_array" in str(error)
    else:
        np.testing.assert_allclose(g, 3 * np.sin(X) ** 2 * np.cos(X), rtol=1e-12, atol=1e-15)


# ----- Error text -----

def test_error_text_shows_the_source_line_and_column():
    error = refused(uses_del, X)
    message = str(error)
    lineno, text = line_of(uses_del, "del y")
    assert f"line {lineno}" in message
    assert error.source_line is not None and "del y" in error.source_line
    assert error.col_offset == 4  # 'del' is indented by four spaces


# ----- Outside the subset, refused clearly (or, later, supported correctly) -----

def write_chained_subscript(x):
    b = np.zeros((2, 3))
    b[0][1] = x[0, 0] * x[1, 2]
    return np.sum(b * x)


def inner_function(x, a):
    def h(v):
        return v * v * a
    return np.sum(h(x) + h(np.sin(x)))


def for_else(x):
    s = 0.0
    for v in x:
        if v > 5.0:
            break
        s = s + v * v
    else:
        s = s * 2.0
    return s


def while_else(x):
    s = 0.0
    k = 0
    while k < 3:
        s = s + x[k] ** 3
        k += 1
    else:
        s = s + 1.0
    return s


def lambda_inside(x):
    sq = lambda v: v * v  # noqa: E731
    return np.sum(sq(x))


# Aliasing: Python names sharing one array, then an in-place write through one
# of them. srcgrad must follow the sharing or refuse; never be silently wrong.

def alias_name_then_write(x):
    b = x * 1.0
    w = b
    b[0] = x[1] * x[2]
    return np.sum(w * x)


def alias_view_then_write(x):
    b = x.copy()
    c = b[1:]
    b[1] = 10.0 * x[0]
    return np.sum(c * x[1:])


def alias_name_then_augassign(x, y):
    v = x * 1.0
    w = v
    v += y
    return np.sum(w * y)


def element_view_then_augassign(x):
    s = x[0, ...]          # a 0-d view of x (on CuPy, x[0] is one too)
    s += x[1] * 2.0
    return np.sum(x * x) + s * 3.0


def slice_then_augassign(x):
    s = x[1:]
    s += 1.0
    return np.sum(x * s)


def alias_list_then_write(x):
    t = x * 1.0
    parts = [t]
    t[0] = x[1] * 3.0
    return np.sum(np.stack(parts) * x)


def _fill(b, v):
    b[0] = v * v
    b[2] += v


def helper_writes_into_argument(x):
    b = np.zeros(3)
    _fill(b, x[1])
    return np.sum(b * x)


X23 = np.array([[0.5, -1.2, 2.0], [1.1, 0.4, -0.7]])
Y = np.array([1.5, 0.3, -0.7])

CORRECT_OR_REFUSED = [
    (write_chained_subscript, (X23,), "b[0][1] ="),
    (inner_function, (X, 0.7), "def h(v):"),
    # The loop's line: an else clause has no line of its own in the AST.
    (for_else, (X,), "for v in x:"),
    (while_else, (X,), "while k < 3:"),
    (lambda_inside, (X,), "lambda v"),
    (alias_name_then_write, (X,), "b[0] ="),
    (alias_view_then_write, (X,), "b[1] ="),
    (alias_name_then_augassign, (X, Y), "v += y"),
    (alias_list_then_write, (X,), "t[0] ="),
    (element_view_then_augassign, (X,), "s += x[1] * 2.0"),
    (slice_then_augassign, (X,), "s += 1.0"),
    (helper_writes_into_argument, (X,), "b[0] = v * v", _fill),
]
CORRECT_OR_REFUSED = [case if len(case) == 4 else case + (case[0],) for case in CORRECT_OR_REFUSED]


@pytest.mark.parametrize("f, args, marker, where", CORRECT_OR_REFUSED,
                         ids=[c[0].__name__ for c in CORRECT_OR_REFUSED])
def test_correct_or_refused(f, args, marker, where):
    # (element_view_then_augassign was silently wrong before its view was checked.)
    # Either a located SrcgradError, or the right value and gradients
    # (w.r.t. every array argument, against central finite differences).
    from srcgrad.testing import numerical_grad

    wrt = tuple(k for k, v in enumerate(args) if isinstance(v, np.ndarray))
    try:
        value, grads = sg.value_and_grad(f, wrt=wrt)(*args)
    except sg.SrcgradError as error:
        assert_located(error, where, marker)
        return
    copies = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
    np.testing.assert_allclose(value, f(*copies), rtol=1e-12, atol=1e-14,
                               err_msg="the forward value differs from f's")
    expected = numerical_grad(f, args, wrt=wrt)
    for k, g, e in zip(wrt, grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7, err_msg=f"gradient {k}")


def test_refusal_names_the_users_variable():
    # The message talks about the user's names, not srcgrad's renamings (b_2).
    try:
        sg.grad(helper_writes_into_argument)(X)
    except sg.SrcgradError as error:
        assert "'b'" in str(error) and "b_2" not in str(error), str(error)


def element_copy_then_augassign(x):
    s = x[0]                # NumPy: a scalar, a copy; += rebinds it
    s += x[1] * 2.0
    return np.sum(x * x) + s * 3.0


def test_element_copy_updated_in_place_is_differentiated():
    from srcgrad.testing import check_grads
    check_grads(element_copy_then_augassign, (X,), atol=1e-7, rtol=1e-7)
    with pytest.raises(sg.SrcgradError, match="shares its memory"):
        sg.grad(element_view_then_augassign)(X.copy())
