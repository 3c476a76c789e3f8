"""Run every script in examples/ as a user would, and check the numbers it prints.

Each example also asserts its own results; here we check that it exits with 0
and that the numbers the seed notebooks print appear in its output.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")

# script -> [(label printed just before the numbers, expected numbers)]; a
# label with no numbers ([]) checks that the text itself is printed.
EXPECTED = {
    "quickstart.py": [
        ("grad at 1 =", [1.0]),
        ("grad at -1 =", [-1.0]),
        ("product loop: grad =", [0, 0, 0, 6, 3, 2]),
        ("dz/dx =", [1, 1, 1]),
        ("dz/dw =", [1, 1, 1]),
        ("dz/dy =", [1, 1, 1]),
        ("while loop:   grad =", [5.12, 51.2, 512.0]),
        ("indexed:      out =", [16, 132]),
        ("grad =", [10, 98]),
        ("no_grad block: grad =", [6, 6, 6]),
        ("hook on y:    dz/dy =", [1, 1, 1]),
    ],
    # Trained from a seeded RNG: the numbers are checked by
    # test_mlp_example_trains below, not pinned to the digit.
    "ode_rk4_initial_velocity.py": [
        ("initial velocity", [4.0, 8.0]),
        ("final miss", [0.0]),
        ("landing point", [12.0, 2.0]),
        ("replays rk4's loop backwards", []),
    ],
    "logistic_regression_scipy.py": [
        ("converged: True", []),
        ("fitted weights:", [-0.419, 1.972, -0.782]),
        ("Hessian matches X^T diag(p (1 - p)) X / n + 2 ridge I: True", []),
        ("Generated gradient of negative_log_likelihood:", []),
    ],
    "mlp_dict_params.py": [
        ("gradcheck on the parameter dict: passed", []),
        ("Generated gradient of MLP.loss:", []),
    ],
    "pinn_laplacian.py": [
        ("gradient check: max |srcgrad - finite differences| =", [0.0]),
        ("loss went down: True", []),
    ],
    "modules_dataclasses.py": [
        ("gradcheck on the model: passed", []),
        ("gradient of the model: Model ['Linear', 'ScaledTanh', 'Linear', 'ScaledTanh', 'Linear']", []),
    ],
    "seed0_variable_grad_fn.py": [
        ("In[4]  abs(x), x = 1:  x.grad =", [1.0]),
        ("In[5]  abs(x), x = -1: x.grad =", [-1.0]),
        ("In[6]  product loop over", [-2, -1, 0, 1, 2, 3]),
        (": x.grad =", [0, 0, 0, 6, 3, 2]),
        ("In[7]  x, w, y depend on w (requires_grad): (False, True, True)", []),
        ("In[8]  volatile (mul_volatile): x, w, y requires_grad: (False, True, False)", []),
        ("In[8]  volatile (mul_detached): x, w, y requires_grad: (False, True, False)", []),
        ("x.grad =", [1, 1, 1]),
        ("w.grad =", [1, 1, 1]),
        ("In[13] autograd.grad(z, y): dz/dy =", [1, 1, 1]),
        ("In[16] hook: y的梯度 (y.grad) =", [1, 1, 1]),
        ("In[16] hook: y的梯度 (y.grad) =", [1, 1, 1]),
        ("In[18] z = (x**2 + x*2).sum(): x.grad =", [2, 4, 6]),
        ("In[19] y.backward([1, 1, 1]): x.grad =", [2, 4, 6]),
    ],
    "seed1_leaves_accumulation.py": [
        ("In[6]  a.grad =", [1] * 9),
        ("In[6]  b.grad =", [1] * 9),
        ("In[56] one pass: a.grad =", [2] * 4),
        ("b.grad =", [1] * 4),
        ("w.grad =", [1] * 4),
        ("In[56] after 5 runs:\n a.grad =", [10] * 4),
        ("\n b.grad =", [5] * 4),
        ("\n w.grad =", [5] * 4),
        ("In[15] a.grad = None", []),
        ("In[15] a.grad =", [1] * 4),
        ("In[15] a.grad =", [2] * 4),
        ("In[25] a.grad = None", []),
        ("In[25] a.grad =", [1] * 4),
        ("In[25] a.grad =", [1] * 4),
        ("In[30] t from a no_grad block: t.backward() -> RuntimeError:", []),
        ("In[30] backward inside sg.no_grad() -> RuntimeError: "
         "element 0 of tensors does not require grad and does not have a grad_fn", []),
        ("In[30] a.grad =", [1] * 4),
        ("In[37] a.grad =", [1] * 4),
        ("In[33] a.grad =", [1] * 4),
        ("In[33] a.grad =", [2] * 4),
        ("In[33] backward with set_grad_enabled(False) -> RuntimeError: "
         "element 0 of tensors does not require grad", []),
        ("In[33] a.grad (unchanged) =", [2] * 4),
        ("In[33] set_grad_enabled(True) in f:  a.grad =", [1] * 4),
        ("In[33] set_grad_enabled(False) in f: a.grad =", [0] * 4),
    ],
    "seed2_requires_grad_while.py": [
        ("In[10] out =", [27.0]),
        ("In[13] x.grad =", [4.5] * 4),
        ("In[63] y =", [4.6030, 0.7516, 3.6041]),
        ("In[63] y.norm() =", [5.8942]),
        ("In[64] y[0] / x[0] =", [512.0]),
        ("In[64] x.grad =", [5.12, 51.2, 512.0]),
        ("In[46] output:", [16, 132]),
        ("In[46] input gradients:", [10, 98]),
        ("In[65] True\nIn[65] True\nIn[65] False", []),
    ],
    "seed3_hooks_retain_graph.py": [
        ("hook梯度输出 (hook gradient output):", [1, 1, 1]),
        ("hook梯度输出 (hook gradient output):", [1, 1, 1]),
        ("autograd.grad输出 (autograd.grad(z, y)): (array(", [1, 1, 1]),
        ("retain_graph: w.grad =", [1, 1, 1]),
        ("retain_graph: w.grad =", [2, 2, 2]),
        ("third backward -> RuntimeError: Trying to backward through the graph a second time", []),
        ("rebuilt graph: w.grad =", [1, 1, 1]),
        ("rebuilt graph: w.grad =", [2, 2, 2]),
    ],
    "seed4_grad_outputs_function.py": [
        ("autograd.backward: x.grad =", [6, 12, 18]),
        ("autograd.grad(y, x, grad_outputs=ones): (array(", [2, 4, 6]),
        ("Linear: y =", [-1.0743, -0.7277]),
        ("Linear: autograd.grad(y, x, grad_outputs=ones):", [0.6039, 0.2139, -0.9551]),
        ("Func as a plain function: d =", [18.0]),
        ("a.grad =", [10.0]),
        ("b.grad =", [9.0]),
        ("Func.apply(a, b, c): d =", [18.0]),
        ("Func.apply in sg.grad: d =", [18.0]),
        ("a.grad =", [10.0]),
        ("b.grad =", [9.0]),
        ("grad of grad through once_differentiable -> UnsupportedError", []),
        ("sort: sorted =", [1, 2, 3]),
        ("x.grad =", [3, 1, 2]),
        ("Sort.apply: sorted =", [1, 2, 3]),
        ("idx =", [1, 2, 0]),
        ("Sort Function: sorted =", [1, 2, 3]),
        ("x.grad =", [3, 1, 2]),
    ],
}


def _run(script, *args):
    env = dict(os.environ)
    # Import this checkout's srcgrad even when it is not installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _numbers_after(text, label, start, count):
    """The first ``count`` numbers after ``label`` (searched from ``start``)."""
    at = text.find(label, start)
    assert at >= 0, f"{label!r} not found in the output (after offset {start}):\n{text}"
    end = at + len(label)
    found = [float(m) for m in _NUMBER.findall(text[end:end + 2000])][:count]
    return found, end


def test_every_example_is_checked():
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
    assert scripts == sorted(EXPECTED)


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example(script, tmp_path):
    # The ODE example's plot (with matplotlib installed) goes to a temporary file.
    args = (str(tmp_path / "trajectory.png"),) if script == "ode_rk4_initial_velocity.py" else ()
    result = _run(script, *args)
    assert result.returncode == 0, (
        f"examples/{script} exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}")
    # Labels are searched in order, each after the previous one's numbers, so
    # a label that repeats finds its next occurrence.
    position = 0
    for label, expected in EXPECTED[script]:
        found, position = _numbers_after(result.stdout, label, position, len(expected))
        np.testing.assert_allclose(found, expected, rtol=1e-4, atol=1e-4,
                                   err_msg=f"examples/{script}: numbers after {label!r}")


def test_no_example_is_left_unfinished():
    """Every part once marked as waiting for the PyTorch-like layer is written."""
    for script in sorted(EXPECTED):
        text = (EXAMPLES / script).read_text(encoding="utf-8")
        assert "needs issue" not in text, f"examples/{script} still has a part to finish"


def test_quickstart_prints_generated_source():
    result = _run("quickstart.py")
    assert result.returncode == 0, result.stderr
    source = result.stdout.split("Generated gradient of product():", 1)[1]
    # A real function definition, compiled from the user's loop and branch.
    assert "def " in source
    assert "for " in source or "while " in source
    compile(source.strip() + "\n", "<generated>", "exec")


def test_mlp_example_trains_with_loss_going_down_and_accuracy_going_up():
    result = _run("mlp_dict_params.py")
    assert result.returncode == 0, result.stderr
    steps = re.findall(r"step +\d+: loss ([\d.]+) +accuracy ([\d.]+)", result.stdout)
    assert len(steps) == 7, result.stdout
    losses = [float(loss) for loss, _ in steps]
    accuracies = [float(acc) for _, acc in steps]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.2 * losses[0] and accuracies[-1] >= 0.9 > accuracies[0], steps
    source = result.stdout.split("Generated gradient of MLP.loss:", 1)[1]
    assert "for " in source and "def " in source
    compile(source.strip() + "\n", "<generated>", "exec")


def test_ode_example_plots_the_trajectories_when_matplotlib_is_installed(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "trajectory.png"
    result = _run("ode_rk4_initial_velocity.py", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_modules_example_trains_a_model_of_dataclasses():
    result = _run("modules_dataclasses.py")
    assert result.returncode == 0, result.stderr
    losses = [float(v) for v in re.findall(r"step +\d+: loss ([\d.]+)", result.stdout)]
    assert len(losses) == 5 and all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.05 * losses[0], losses
    source = result.stdout.split("Generated gradient of loss:", 1)[1]
    compile(source.strip() + "\n", "<generated>", "exec")
