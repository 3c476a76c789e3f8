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

# script -> [(label printed just before the numbers, expected numbers)]
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
    ],
    "seed0_variable_grad_fn.py": [
        ("In[4]  abs(x), x = 1:  x.grad =", [1.0]),
        ("In[5]  abs(x), x = -1: x.grad =", [-1.0]),
        ("In[6]  product loop over", [-2, -1, 0, 1, 2, 3]),
        (": x.grad =", [0, 0, 0, 6, 3, 2]),
        ("x.grad =", [1, 1, 1]),
        ("w.grad =", [1, 1, 1]),
        ("In[13] autograd.grad(z, y): dz/dy =", [1, 1, 1]),
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
    ],
    "seed3_hooks_retain_graph.py": [
        ("autograd.grad(z, y):", [1, 1, 1]),
        ("retain_graph: w.grad =", [1, 1, 1]),
        ("retain_graph: w.grad =", [2, 2, 2]),
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
        ("sort: sorted =", [1, 2, 3]),
        ("x.grad =", [3, 1, 2]),
    ],
}


def _run(script):
    env = dict(os.environ)
    # Import this checkout's srcgrad even when it is not installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=ROOT, env=env,
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
def test_example(script):
    result = _run(script)
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


def test_quickstart_prints_generated_source():
    result = _run("quickstart.py")
    assert result.returncode == 0, result.stderr
    source = result.stdout.split("Generated gradient of product():", 1)[1]
    # A real function definition, compiled from the user's loop and branch.
    assert "def " in source
    assert "for " in source or "while " in source
    compile(source.strip() + "\n", "<generated>", "exec")
