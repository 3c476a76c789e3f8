"""An exception raised by the user's code while a gradient runs names the user's file,
line and source text, and the generated line too (srcgrad/codegen/tracebacks.py)."""

import inspect
import linecache
import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import srcgrad as sg

import helpers_module as hm

HELPERS = os.path.abspath(hm.__file__)


def line_of(function, text):
    """The line number in ``function``'s file of its line containing ``text``."""
    lines, first = inspect.getsourcelines(function)
    return first + next(k for k, line in enumerate(lines) if text in line)


def uses_invert(x):
    m = np.outer(x, x)   # singular: rank one
    y = hm.invert(m)
    return np.sum(y)


def uses_checked_log(x):
    y = hm.checked_log(x)
    return np.sum(y * y)


def indexes(x):
    z = x * 2.0
    return z[7]


def formatted(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value, "".join(traceback.format_exception(type(info.value), info.value,
                                                          info.value.__traceback__))


def generated_frames(exc):
    """(file, line, function) of each frame of srcgrad's generated code in the traceback."""
    frames, tb = [], exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name.endswith(("_forward", "_backward")) or code.co_name.startswith("gradient_"):
            frames.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return frames


def test_a_helper_in_another_module_that_raises_is_named_with_its_line_and_text():
    exc, text = formatted(lambda: sg.grad(uses_invert)(np.ones(3)))
    assert isinstance(exc, np.linalg.LinAlgError)
    line = line_of(hm.invert, "np.linalg.inv(m)")
    assert f'File "{HELPERS}", line {line}, in invert' in text
    assert "    return np.linalg.inv(m)\n" in text
    # The generated line that called it, from a real file with its text.
    (filename, lineno, name), = generated_frames(exc)
    # (the first call runs the composed gradient, as later calls do: its frame)
    assert os.path.isfile(filename) and name == "gradient_uses_invert"
    generated = linecache.getline(filename, lineno).strip()
    assert "np.linalg.inv(" in generated and f"line {lineno}, in {name}\n    {generated}\n" in text
    # The user's frame comes right after the generated one, before NumPy's.
    assert text.index(generated) < text.index(HELPERS) < text.index("_linalg.py")


def test_an_assert_in_a_helper_names_its_line_on_the_fast_path_too():
    g = sg.grad(uses_checked_log)
    for _ in range(3):   # the later calls run the one composed function
        np.testing.assert_allclose(g(np.array([1.0, 2.0])), 2.0 * np.log([1.0, 2.0]) / [1.0, 2.0])
    exc, text = formatted(lambda: g(np.array([1.0, -2.0])))
    assert isinstance(exc, AssertionError) and "checked_log needs positive values" in text
    line = line_of(hm.checked_log, "assert")
    assert f'File "{HELPERS}", line {line}, in checked_log' in text
    assert 'assert np.all(v > 0), "checked_log needs positive values"' in text
    (filename, lineno, name), = generated_frames(exc)
    assert name.startswith("gradient_") and linecache.getline(filename, lineno).strip() in text


def test_an_index_error_in_the_function_itself_and_in_vjp():
    line = line_of(indexes, "return z[7]")
    for call in (lambda: sg.grad(indexes)(np.ones(3)), lambda: sg.vjp(indexes)(np.ones(3))):
        exc, text = formatted(call)
        assert isinstance(exc, IndexError)
        assert f'File "{os.path.abspath(__file__)}", line {line}, in indexes\n    return z[7]\n' in text
    if sys.version_info >= (3, 11):
        assert any("srcgrad:" in note and f":{line}" in note for note in exc.__notes__)


def test_the_user_frame_is_inserted_once_when_the_exception_is_located_again():
    from srcgrad.codegen import tracebacks
    exc, text = formatted(lambda: sg.grad(uses_invert)(np.ones(3)))
    tracebacks.locate(exc)   # as an enclosing gradient's call would
    again = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    where = f"line {line_of(hm.invert, 'np.linalg.inv(m)')}, in invert\n"
    assert text.count(where) == again.count(where) == 1


def test_generated_code_has_a_file_that_inspect_reads_and_a_traceback_writes():
    g = sg.grad(indexes)
    forward = g.compiled.forward
    assert inspect.getsource(forward).startswith("    def indexes_forward(x):")
    with pytest.raises(IndexError) as info:
        g(np.ones(3))
    (filename, lineno, name), = generated_frames(info.value)
    with open(filename) as file:
        assert f"def {name}(x):" in file.read()


def test_the_default_excepthook_prints_both_lines(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import numpy as np, srcgrad as sg\n"
        "def helper(m):\n"
        "    return np.linalg.inv(m)\n"
        "def f(x):\n"
        "    return np.sum(helper(np.outer(x, x)))\n"
        "sg.grad(f)(np.ones(2))\n")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=_env(), timeout=120)
    assert "LinAlgError" in result.stderr
    assert f'File "{script}", line 3, in helper\n    return np.linalg.inv(m)\n' in result.stderr
    assert "inv_m = np.linalg.inv(" in result.stderr   # the generated line, read from its file


@pytest.mark.parametrize("how", ["-c", "stdin"])
def test_a_function_typed_at_python_c_or_stdin_is_refused_in_one_line(how):
    program = ("import numpy as np, srcgrad as sg\n"
               "def f(x):\n"
               "    return np.sin(x)\n"
               "sg.grad(f)(1.0)\n")
    command = [sys.executable, "-c", program] if how == "-c" else [sys.executable, "-"]
    result = subprocess.run(command, input=None if how == "-c" else program, capture_output=True,
                            text=True, env=_env(), timeout=120)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("srcgrad.errors.SourceNotFoundError: cannot read the source of f: it was typed at")
    assert "put the function in a .py file (or a notebook cell)" in last


def _env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def interp_with_a_computed_period(x):
    period = x.shape[0] * 0.5   # not a literal: the gradient refuses it when it runs
    a = np.interp(x, [0.0, 1.0, 2.0], [0.0, 2.0, 1.0], period=period)
    b = np.sin(a) * 2
    return np.sum(b ** 2)


@pytest.mark.parametrize("call", ["grad", "grad twice", "value_and_grad"])
def test_a_refusal_raised_while_the_gradient_runs_names_the_users_line(call):
    x = np.array([0.3, -0.5, 1.2, 0.4, 0.9, -1.1])
    f = interp_with_a_computed_period
    g = sg.value_and_grad(f) if call == "value_and_grad" else sg.grad(f)
    for _ in range(2 if call == "grad twice" else 1):   # the second call runs the hot path
        with pytest.raises(sg.errors.UnsupportedError) as info:
            g(x)
        assert info.value.filename == __file__
        assert info.value.lineno == line_of(f, "a = np.interp(")
        assert str(info.value).startswith(f'File "{__file__}", line {info.value.lineno}: ')



@pytest.mark.parametrize("mode", ["jvp", "jacfwd", "hessian"])
def test_a_refusal_raised_while_a_tangent_runs_names_the_users_line(mode):
    x = np.array([0.3, -0.5, 1.2, 0.4, 0.9, -1.1])
    f = interp_with_a_computed_period
    with pytest.raises(sg.errors.UnsupportedError) as info:
        if mode == "jvp":
            sg.jvp(f, (x,), (np.ones(6),))
        else:
            getattr(sg, mode)(f)(x)
    assert info.value.filename == __file__, str(info.value)
    assert info.value.lineno == line_of(f, "a = np.interp(")
