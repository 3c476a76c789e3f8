"""``python -m srcgrad show``, run as a user runs it: a subprocess (srcgrad/cli.py)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import cli

ROOT = Path(__file__).resolve().parents[1]

MODULE = '''import numpy as np


def loss(w, x):
    y = np.tanh(x * w)
    return np.sum(y * y)


class Model:
    @staticmethod
    def energy(x):
        return np.sum(np.sin(x) * x)


NOT_A_FUNCTION = 3
'''


@pytest.fixture
def module_file(tmp_path):
    path = tmp_path / "cli_loss_module.py"
    path.write_text(MODULE, encoding="utf-8")
    return path


def _run(*argv, cwd=ROOT):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "srcgrad", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _same_module(path):
    spec = importlib.util.spec_from_file_location(path.stem + "_here", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_show_prints_the_generic_gradient_of_a_function_in_a_file(module_file):
    done = _run("show", f"{module_file}:loss")
    assert done.returncode == 0, done.stderr
    assert done.stdout == sg.source(_same_module(module_file).loss)
    assert done.stdout.startswith("# srcgrad: the generic code")


def test_show_takes_an_importable_module_and_a_dotted_name(module_file):
    done = _run("show", "cli_loss_module:Model.energy", cwd=module_file.parent)
    assert done.returncode == 0, done.stderr
    assert "def energy_backward(" in done.stdout
    assert done.stdout == sg.source(_same_module(module_file).Model.energy)


def test_shapes_give_the_code_that_runs_for_such_arguments(module_file):
    done = _run("show", f"{module_file}:loss", "--wrt", "w", "x", "--args-shapes", "scalar", "3,4")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# srcgrad: the code that runs for arguments of float, (3, 4) "
                                  "float64")
    fn = _same_module(module_file).loss
    assert done.stdout == sg.source(fn, wrt=("w", "x"), args=cli.example_args(["scalar", "3,4"]))
    # Specialised: w is a scalar, so its gradient is a sum, not an unbroadcast.
    assert done.stdout != sg.source(fn, wrt=("w", "x"))


def test_dtype_and_composed(module_file):
    done = _run("show", f"{module_file}:loss", "--args-shapes", "()", "5", "--dtype", "float32",
                "--composed")
    assert done.returncode == 0, done.stderr
    assert "shapes (), (5,) float32" in done.stdout and "def gradient_loss(w, x):" in done.stdout
    args = cli.example_args(["()", "5"], "float32")
    assert [a.dtype for a in args] == [np.float32, np.float32]
    assert done.stdout == sg.source(_same_module(module_file).loss, args=args, composed=True)


def test_mode_jvp_prints_the_tangent_program(module_file):
    done = _run("show", f"{module_file}:loss", "--mode", "jvp")
    assert done.returncode == 0, done.stderr
    assert done.stdout == sg.source(_same_module(module_file).loss, mode="jvp")
    assert "# tangent of:" in done.stdout and "_jvp(" in done.stdout


@pytest.mark.parametrize("target, message", [
    ("no_such_module_here:f", "cannot import it"),
    ("{file}:missing", "has no missing"),
    ("{file}:NOT_A_FUNCTION", "not a function"),
    ("{file}", "module:function"),
    ("nowhere/file.py:f", "no such file"),
])
def test_a_target_that_is_not_there_is_named(module_file, target, message):
    done = _run("show", target.format(file=module_file))
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_bad_shapes_and_dtypes_are_named(module_file):
    done = _run("show", f"{module_file}:loss", "--args-shapes", "3,x", "2")
    assert done.returncode == 2 and "--args-shapes 3,x" in done.stderr
    done = _run("show", f"{module_file}:loss", "--args-shapes", "3", "3", "--dtype", "floaty")
    assert done.returncode == 2 and "--dtype floaty" in done.stderr


def test_a_compile_error_is_reported_not_raised(module_file):
    done = _run("show", f"{module_file}:loss", "--wrt", "nothing")
    assert done.returncode == 1 and "ValueError" in done.stderr and "nothing" in done.stderr
    assert "Traceback" not in done.stderr
