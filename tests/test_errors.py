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
        y = y + 1.0
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
    def bump():   # (global in the function differentiated works: global_statements.py)
        global COUNTER
        COUNTER = COUNTER + 1
    bump()
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
    return z + np.sum(y)   # read after its del (a NameError in Python)


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
        return np.sum(y)   # (a try/finally without an early exit is its blocks: round ten)
    finally:
        y = y + 1.0


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
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(helper_writes_into_argument)(X)
    assert "'b'" in str(info.value) and "b_2" not in str(info.value), str(info.value)


def element_copy_then_augassign(x):
    s = x[0]                # NumPy: a scalar, a copy; += rebinds it
    s += x[1] * 2.0
    return np.sum(x * x) + s * 3.0


def test_element_copy_updated_in_place_is_differentiated():
    from srcgrad.testing import check_grads
    check_grads(element_copy_then_augassign, (X,), atol=1e-7, rtol=1e-7)
    with pytest.raises(sg.SrcgradError, match="shares its memory"):
        sg.grad(element_view_then_augassign)(X.copy())


# ----- Aliasing, soundly: names for one memory through any number of steps -----
# Each function writes through one name and reads another that shares its memory
# afterwards. Value semantics would give a different (wrong) gradient, so srcgrad
# must refuse, at the write, naming this file, its line and both names.

def _first_two(v):
    return v[:2]


def view_returned_by_helper(x):
    y = np.zeros(3)
    h = _first_two(y)
    h[0] = 5 * x[2]
    return np.sum(y * x)


def chained_assignment(x):
    a = b = np.zeros(3)
    a[0] = 2 * x[0]
    return np.sum(b * x)


def slice_of_a_slice(x):
    y = np.zeros(3)
    a = y[1:]
    b = a[1:]
    b[0] = x[0] * 3
    return np.sum(y * x)


def list_element_written(x):
    y = np.zeros(3)
    held = [y]
    z = held[0]
    z[0] = x[0]
    return np.sum(y * x)


def dict_value_written(x):
    y = np.zeros(3)
    held = {"k": y}
    z = held["k"]
    z[0] = x[0]
    return np.sum(y * x)


def loop_carried_alias(x):
    cur = x * 1.0
    s = 0.0
    for _ in range(3):
        prev = cur
        cur[0] = cur[0] * 2.0
        s = s + np.sum(prev * x)
    return s


def loop_carried_alias_made_after_the_write(x):
    cur = x * 1.0
    prev = x * 0.5
    s = 0.0
    for _ in range(3):
        cur[0] = cur[0] * x[1]
        s = s + np.sum(prev * x)
        prev = cur
    return s


def rows_of_a_loop_written(x):
    m = np.ones((2, 3))
    for row in m:
        row[0] = x[0]
    return np.sum(m[:, 0]) * x[1]


def view_updated_with_augassign(x):
    y = np.ones(3)
    a = y[1:]
    a += x[1:]
    return np.sum(y * x)


def _as_strided(y):
    return np.lib.stride_tricks.as_strided(y, shape=(2,), strides=y.strides)


VIEW_MAKERS = {
    "np.ascontiguousarray": lambda y: np.ascontiguousarray(y),
    "np.asfortranarray": lambda y: np.asfortranarray(y),
    "np.asarray": lambda y: np.asarray(y),
    "y.view()": lambda y: y.view(),
    "np.ravel": lambda y: np.ravel(y),
    "y.reshape": lambda y: y.reshape(3),
    "y.real": lambda y: y.real,
    "np.real": lambda y: np.real(y),
    "y.flat": lambda y: y.flat,
    "np.split": lambda y: np.split(y, 3)[0],
    "np.array_split": lambda y: np.array_split(y, 2)[0],
    "np.hsplit": lambda y: np.hsplit(y, 3)[0],
    "as_strided": _as_strided,
    "np.einsum": lambda y: np.einsum("i->i", y),
    "y[::-1]": lambda y: y[::-1],
    "np.flip": lambda y: np.flip(y),
    "srcgrad.detach": lambda y: sg.detach(y),
}


def _view_program(expression):
    """A function whose ``a`` is ``expression`` of ``y``; written to a real file."""
    import importlib.util
    import tempfile
    source = ("import numpy as np\nimport srcgrad as sg\n\n\n"
              "def f(x):\n"
              "    y = np.zeros(3)\n"
              f"    a = {expression}\n"
              "    a[0] = x[0] * 2.0\n"
              "    return np.sum(y * x)\n")
    folder = tempfile.mkdtemp(prefix="srcgrad_views_")
    path = os.path.join(folder, "view_program.py")
    with open(path, "w") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location(f"view_program_{abs(hash(expression))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f, path


VIEW_EXPRESSIONS = {
    "np.ascontiguousarray": "np.ascontiguousarray(y)",
    "np.asfortranarray": "np.asfortranarray(y)",
    "np.asarray": "np.asarray(y)",
    "np.array(copy=False)": "np.array(y, copy=None)",
    "y.view()": "y.view()",
    "np.ravel": "np.ravel(y)",
    "y.real": "y.real",
    "np.real": "np.real(y)",
    "y.flat": "y.flat",
    "np.split piece": "np.split(y, 3)[0]",
    "np.array_split piece": "np.array_split(y, 2)[0]",
    "np.hsplit piece": "np.hsplit(y, 3)[0]",
    "as_strided": "np.lib.stride_tricks.as_strided(y, shape=(2,), strides=y.strides)",
    "np.einsum": "np.einsum('i->i', y)",
    "np.flip": "np.flip(y)",
    "y[::-1]": "y[::-1]",
    "srcgrad.detach": "sg.detach(y)",
    "np.broadcast_arrays piece": "np.broadcast_arrays(y)[0]",
}


@pytest.mark.parametrize("what", sorted(VIEW_EXPRESSIONS))
def test_a_write_through_any_numpy_view_is_refused_with_its_line(what):
    # Every NumPy function that can return a view: never assumed to copy.
    f, path = _view_program(VIEW_EXPRESSIONS[what])
    with pytest.raises(sg.SrcgradError, match="shares its memory") as info:
        sg.grad(f)(X.copy())
    error = info.value
    assert error.filename == path and error.lineno == 8, str(error)
    assert "a[0] = x[0] * 2.0" in str(error) and "'a'" in str(error) and "'y'" in str(error)


def test_a_copy_is_not_an_alias():
    # np.array(y) and y.copy() own their memory: the write is differentiated.
    from srcgrad.testing import check_grads
    for expression in ("np.array(y)", "y.copy()", "y * 1.0", "np.zeros(3) + y"):
        f, _ = _view_program(expression)
        check_grads(f, (X.copy(),), atol=1e-7, rtol=1e-7)
        assert "check_unshared" not in sg.source(f), expression


GLOBAL_ARRAY = np.zeros(3)


def global_array_written_through_a_local(x):
    a = GLOBAL_ARRAY[1:]
    a[0] = x[0] * 2.0
    return np.sum(GLOBAL_ARRAY * x)


class _Holder:
    def __init__(self):
        self.weights = np.ones(3)


HOLDER = _Holder()


def field_of_an_object_written(x):
    w = HOLDER.weights
    w[0] = x[0] * 2.0
    return np.sum(HOLDER.weights * x)


ALIAS_REFUSED = [
    (global_array_written_through_a_local, "a[0] = x[0] * 2.0"),
    (field_of_an_object_written, "w[0] = x[0] * 2.0"),
    (view_returned_by_helper, "h[0] = 5 * x[2]"),
    (chained_assignment, "a[0] = 2 * x[0]"),
    (slice_of_a_slice, "b[0] = x[0] * 3"),
    (list_element_written, "z[0] = x[0]"),
    (dict_value_written, "z[0] = x[0]"),
    (loop_carried_alias, "cur[0] = cur[0] * 2.0"),
    (loop_carried_alias_made_after_the_write, "cur[0] = cur[0] * x[1]"),
    (rows_of_a_loop_written, "row[0] = x[0]"),
    (view_updated_with_augassign, "a += x[1:]"),
]


@pytest.mark.parametrize("f, marker", ALIAS_REFUSED, ids=[c[0].__name__ for c in ALIAS_REFUSED])
def test_a_write_reaching_another_name_through_several_steps_is_refused(f, marker):
    # Each gave a silently wrong gradient before (srcgrad saw only one step of sharing).
    with pytest.raises(sg.SrcgradError, match="shares its memory") as info:
        sg.grad(f)(X.copy())
    assert_located(info.value, f, marker, fence=False)
    assert info.value.hint


def written_after_its_view_is_dead(x):
    y = np.zeros(3)
    a = y[1:]
    s = np.sum(a * x[1:])
    y[1] = x[0] * 4.0
    return s + np.sum(y * x)


def disjoint_part_of_a_view_written(x):
    y = np.zeros(4)
    a = y[2:]
    y[0] = x[0] * 3.0
    return np.sum(a[:1] * x[1]) + np.sum(y[:3] * x)


def test_sharing_that_cannot_change_a_later_read_is_differentiated():
    # The view is not read after the write, or the write misses the view's part.
    from srcgrad.testing import check_grads
    check_grads(written_after_its_view_is_dead, (X.copy(),), atol=1e-7, rtol=1e-7)
    check_grads(disjoint_part_of_a_view_written, (X.copy(),), atol=1e-7, rtol=1e-7)


def fresh_arrays_written(x):
    y = np.zeros(3)
    z = x * 2.0
    y[0] = z[1] * x[2]
    z[1] = y[0] + 1.0
    return np.sum(y * z)


def test_no_run_time_check_where_no_name_can_alias():
    # Static knowledge: y and z are fresh and distinct, so the forward sweep has
    # no check on the hot path.
    assert "check_unshared" not in sg.source(fresh_arrays_written)
    assert "check_unshared" in sg.source(chained_assignment)


# Arguments: two parameters may be one array, known only at the call.

def writes_into_second_argument(x, y):
    y[0] = x[1] * 3.0
    return np.sum(x * y)


def writes_into_a_view_of_an_argument(x, y):
    v = y[1:]
    v[0] = x[1] * 3.0
    return np.sum(x * y)


def test_arguments_sharing_memory_with_a_written_one_are_refused_at_the_call():
    from srcgrad.testing import check_grads
    with pytest.raises(sg.SrcgradError, match="share memory") as info:
        sg.grad(writes_into_second_argument, wrt=(0, 1))(X, X)
    error = info.value
    assert error.filename.endswith(THIS_FILE) and "'y'" in str(error) and "'x'" in str(error)
    assert error.lineno == writes_into_second_argument.__code__.co_firstlineno
    # Distinct arrays: differentiated as usual, and the caller's arrays are not changed.
    y = X * 1.5
    check_grads(writes_into_second_argument, (X.copy(), y), atol=1e-7, rtol=1e-7)
    with pytest.raises(sg.SrcgradError):
        sg.grad(writes_into_a_view_of_an_argument, wrt=(0, 1))(X, X)
    with pytest.raises(sg.SrcgradError, match="shares its memory"):
        sg.grad(writes_into_a_view_of_an_argument, wrt=(0, 1))(X.copy(), X.copy() * 2.0)


def writes_into_an_entry_of_a_dict_argument(x, p):
    w = p["w"]
    w[0] = x[0] * 2.0
    return np.sum(p["w"] * x)


def test_an_entry_of_a_container_argument_written_and_read_again_is_refused():
    with pytest.raises(sg.SrcgradError, match="shares its memory") as info:
        sg.grad(writes_into_an_entry_of_a_dict_argument)(X.copy(), {"w": np.ones(3)})
    assert_located(info.value, writes_into_an_entry_of_a_dict_argument, 'w[0] = x[0] * 2.0', fence=False)


def writes_into_argument_reads_global(x, y):
    y[0] = x[0] * 2.0
    return np.sum(GLOBAL_ARRAY * x) + np.sum(y * y)


def test_an_argument_sharing_memory_with_a_global_the_function_reads_is_refused():
    with pytest.raises(sg.SrcgradError, match="global") as info:
        sg.grad(writes_into_argument_reads_global)(X.copy(), GLOBAL_ARRAY)
    assert "'GLOBAL_ARRAY'" in str(info.value) and info.value.filename.endswith(THIS_FILE)
    from srcgrad.testing import check_grads
    check_grads(writes_into_argument_reads_global, (X.copy(), X * 0.5), atol=1e-7, rtol=1e-7)


# ----- Calls that write into an array: rewritten as indexed writes, or refused -----

def out_unary(x):
    y = x * 1.0
    np.negative(y, out=y)
    return np.sum(y)


def out_positional(x):
    y = x * 1.0
    np.sin(y, y)
    return np.sum(y * x)


def out_result_assigned(x):
    y = x * 1.0
    z = np.tanh(y, out=y)
    return np.sum(z * x) + np.sum(y)


def out_binary(x):
    y = np.zeros(3)
    np.multiply(x, x, out=y)
    return np.sum(y * x)


def out_clip_function(x):
    y = np.zeros(3)
    np.clip(x, -1.0, 1.0, out=y)
    return np.sum(y * x)


def out_clip_method(x):
    y = np.zeros(3)
    x.clip(-1.0, 1.0, out=y)
    return np.sum(y * x)


def out_reduction(x):
    y = np.zeros(())
    np.sum(x * x, out=y)
    return y * 2.0


def out_positional_library_function(x):
    y = np.zeros(())
    np.dot(x, x, y)
    return y * 2.0


def copyto_array(x):
    y = np.zeros(3)
    np.copyto(y, x * 2.0)
    return np.sum(y * x)


def copyto_broadcast(x):
    y = np.zeros(3)
    np.copyto(y, x[0])
    return np.sum(y * x)


def copyto_where(x):
    y = x * x[0]
    np.copyto(y, x[::-1] ** 2, where=x > 0.0)
    return np.sum(y * x)


def copyto_where_broadcast(x):
    y = np.outer(x, x)
    np.copyto(y, x ** 3, "same_kind", np.eye(3) > 0)
    return np.sum(np.sin(y))


def fill_diagonal_scalar(x):
    y = np.outer(x, x[::-1])
    np.fill_diagonal(y, x[0] * x[1])
    return np.sum(y * y)


def fill_diagonal_cyclic(x):
    y = np.zeros((5, 2)) + x[2]
    np.fill_diagonal(y, x[:2] ** 2, wrap=True)   # rows 0, 1, 3, 4 of the tall matrix
    return np.sum(np.cos(y) * np.arange(10.0).reshape(5, 2))


def put_repeated(x):
    y = x * 1.0
    np.put(y, [0, 2, 0], x[::-1] ** 2)   # position 0 keeps its last write
    return np.sum(np.sin(y) * x)


def put_method_wrap(x):
    y = np.outer(x, x)
    y.put([1, 13], x[0] * x[2], mode="wrap")
    return np.sum(y ** 2)


def putmask_cyclic(x):
    y = x * 2.0
    np.putmask(y, x < 1.0, x[:2] ** 3)   # values[n % 2] at each masked position n
    return np.sum(y * x)


def place_compressed(x):
    y = np.outer(x, x[::-1])
    np.place(y, y > 0.0, x ** 2)   # the values in the masked entries' order, cyclically
    return np.sum(np.cos(y))


def put_a_list(x):
    y = np.zeros(4)
    np.put(y, [0, 2], [x[0] * 2.0, x[1] ** 2])   # a list display of values
    return np.sum(y * np.arange(1.0, 5.0))


def fill_diagonal_a_list(x):
    y = np.ones((2, 2))
    np.fill_diagonal(y, [x[0], x[2]])
    return np.sum(y ** 2 * x[1])


def fill_method(x):
    y = x * 1.0
    y.fill(x[1])
    return np.sum(y * x)


def repeated_fancy_write(x):
    y = np.zeros(3)
    y[[0, 0, 1]] = x
    return y.sum()


def repeated_fancy_write_array(x):
    y = np.zeros(3)
    y[np.array([2, 0, 2])] = x * x
    return np.sum(y * x)


def repeated_fancy_write_2d(x):
    y = np.zeros((2, 2))
    y[[0, 0, 1], [1, 1, 0]] = x
    return np.sum(y * y)


def mask_write(x):
    y = np.zeros(3)
    y[x > 0.0] = x[x > 0.0] * 3.0
    return np.sum(y * y)


def repeated_fancy_augassign(x):
    y = x * 2.0
    y[[0, 0, 1]] += x
    return np.sum(y * y)


def sort_method(x):
    y = x * 1.0
    y.sort()
    return np.sum(y * np.arange(3.0))


def sort_method_axis(x):
    y = np.stack([x, x[::-1] * 2.0])
    y.sort(axis=1)
    return np.sum(y * y[::-1])


WRITING_CALLS = [out_unary, out_positional, out_result_assigned, out_binary, out_clip_function,
                 out_clip_method, out_reduction, out_positional_library_function, copyto_array, copyto_broadcast, copyto_where,
                 copyto_where_broadcast, fill_diagonal_scalar, fill_diagonal_cyclic, put_repeated,
                 put_method_wrap, putmask_cyclic, place_compressed, put_a_list, fill_diagonal_a_list, fill_method,
                 repeated_fancy_write, repeated_fancy_write_array, repeated_fancy_write_2d,
                 mask_write, repeated_fancy_augassign, sort_method, sort_method_axis]


@pytest.mark.parametrize("f", WRITING_CALLS, ids=[f.__name__ for f in WRITING_CALLS])
def test_calls_writing_into_an_array_are_differentiated(f):
    from srcgrad.testing import check_grads
    check_grads(f, (X.copy(),), atol=1e-7, rtol=1e-7)


@pytest.mark.parametrize("f", [copyto_where, copyto_where_broadcast, fill_diagonal_scalar,
                               fill_diagonal_cyclic, put_repeated, put_method_wrap, putmask_cyclic,
                               place_compressed, put_a_list, fill_diagonal_a_list],
                         ids=lambda f: f.__name__)
def test_second_derivatives_of_the_rewritten_writes(f):
    from srcgrad.testing import numerical_grad
    g = sg.grad(f)
    want = np.stack([numerical_grad(lambda v: g(v)[k], (X.copy(),)) for k in range(3)])
    np.testing.assert_allclose(sg.hessian(f)(X.copy()), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sg.jacfwd(f)(X.copy()), g(X.copy()), rtol=1e-10)


def test_fill_diagonal_keeps_an_integer_arrays_truncation():
    def into_integers(x):
        y = np.zeros((2, 2), dtype=np.int64)
        np.fill_diagonal(y, x[0] * 3.0)   # truncated to an integer: no gradient
        return np.sum(y * x[1])
    np.testing.assert_array_equal(sg.grad(into_integers)(X.copy()), [0.0, into_integers(X.copy()) / X[1], 0.0])


def test_put_keeps_the_last_write_to_a_repeated_position():
    # y = [x2**2, x1, x1**2] (position 0 written with x2**2, then x0**2: the last wins)
    def last_write(x):
        y = x * 1.0
        np.put(y, [0, 2, 0], x ** 2)
        return np.sum(y * np.array([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(sg.grad(last_write)(X.copy()), [0.0, 10.0 + 200.0 * X[1], 2.0 * X[2]])


def test_repeated_fancy_write_keeps_the_last_write_as_numpy_does():
    # y[[0, 0, 1]] = x: y is [x1, x2, 0], so the gradient of sum(y) is [0, 1, 1].
    np.testing.assert_allclose(sg.grad(repeated_fancy_write)(X.copy()), [0.0, 1.0, 1.0])
    np.testing.assert_allclose(sg.grad(out_unary)(X.copy()), [-1.0, -1.0, -1.0])


def _refuse_ufunc_at(x):   # (np.add.at, maximum.at, minimum.at are differentiated)
    y = np.zeros(3)
    np.fmax.at(y, [0, 0], x[:2])
    return np.sum(y * y)


def _refuse_shuffle(x):
    y = x * 1.0
    np.random.shuffle(y)
    return np.sum(y * x)


def _refuse_sort_method(x):
    y = x * 1.0
    y.sort(order="f")
    return np.sum(y * x)


def _refuse_resize(x):
    y = x * 1.0
    y.resize(2, refcheck=False)
    return np.sum(y)


def _refuse_out_where(x):
    y = x * 1.0
    np.negative(x, out=y, where=x > 0.0)
    return np.sum(y)


def _refuse_list_pop(x):
    xs = [x, x * 2.0]
    # a pop inside an expression is moved to a statement of its own (methods.hoist); here
    # xs is read before it in the same statement, so moving it would change that read
    v = xs[0] + xs.pop() * 2.0
    return np.sum(v)


IN_PLACE_REFUSED = [
    (_refuse_ufunc_at, "np.fmax.at(", "fmax.at"),
    (_refuse_shuffle, "np.random.shuffle(", "shuffle"),
    (_refuse_sort_method, "y.sort(", ".sort()"),
    (_refuse_resize, "y.resize(", ".resize()"),
    (_refuse_out_where, "np.negative(", "out="),
    (_refuse_list_pop, "xs.pop()", ".pop()"),
]


@pytest.mark.parametrize("f, marker, construct", IN_PLACE_REFUSED, ids=[c[0].__name__ for c in IN_PLACE_REFUSED])
def test_calls_writing_in_place_that_cannot_be_rewritten_are_refused_at_compile_time(f, marker, construct):
    # Never run by the forward sweep and ignored by the adjoint: sg.source compiles
    # without running anything.
    with pytest.raises(sg.SrcgradError) as info:
        sg.source(f)
    assert construct in str(info.value), str(info.value)
    assert_located(info.value, f, marker)


# ----- wrt a local written in place after its binding -----

def written_after_binding(x):
    y = 2 * x
    y[0] = 5.0
    return np.sum(y * y)


def test_wrt_a_local_is_the_value_it_holds_when_the_function_returns():
    # docs/language.md: the gradient with respect to the value y holds at the
    # return, [5, 2 x1, 2 x2], is 2 y: [10, 4 x1, 4 x2] (not that of 2 * x).
    x = np.array([1.0, 2.0, 3.0])
    g = sg.grad(written_after_binding, wrt="y")(x)
    np.testing.assert_allclose(g, [10.0, 8.0, 12.0])


def written_in_a_loop_after_binding(x):
    y = 2 * x
    for i in range(2):
        y[i] = y[i] * 3.0
    z = np.sum(y * y)
    return z * x[2]


def test_wrt_a_local_written_in_a_loop_is_its_value_after_the_loop():
    # The output is sum(y * y) * x2 in y's final value: its gradient is 2 y x2.
    x = np.array([1.0, 2.0, 3.0])
    y = 2 * x
    y[:2] *= 3.0
    g = sg.grad(written_in_a_loop_after_binding, wrt="y")(x)
    np.testing.assert_allclose(g, 2 * y * x[2])
    gx, gy = sg.grad(written_in_a_loop_after_binding, wrt=("x", "y"))(x)
    np.testing.assert_allclose(gy, 2 * y * x[2])
    from srcgrad.testing import numerical_grad
    np.testing.assert_allclose(gx, numerical_grad(written_in_a_loop_after_binding, (x,), wrt=(0,))[0],
                               rtol=1e-6, atol=1e-7)


# ----- issue 11: refusals found by the autograd corpus -----


def _pad_with_ones(vector, iaxis_pad_width, iaxis, kwargs):
    vector[:iaxis_pad_width[0]] = 1.0
    vector[len(vector) - iaxis_pad_width[1]:] = 1.0


PAD_MODE = _pad_with_ones   # (a statistic mode in a variable differentiates: round nine)


def _pad_mean(x):
    return np.sum(np.pad(x, 1, mode=PAD_MODE) ** 2)


def test_a_pad_mode_without_a_gradient_is_refused_naming_the_line():
    with pytest.raises(sg.UnsupportedError) as info:
        sg.grad(_pad_mean)(np.ones(3))
    text = str(info.value)
    assert "mode=<function" in text and "test_errors.py" in text and "line" in text


def _missing_attribute(x):
    return np.sum(x) if hasattr(np, "trapezoid") else np.no_such_function(x)


def test_a_missing_module_attribute_is_refused_naming_the_line_not_an_attribute_error():
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(_missing_attribute)(np.ones(3))
    assert "np.no_such_function" in str(info.value) and "test_errors.py" in str(info.value)
