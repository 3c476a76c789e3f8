"""The benchmark suite (benchmarks/): its gradients agree, and its driver runs.

On the small ("quick") sizes: every hand-written gradient matches finite differences,
srcgrad's gradient and every installed peer's (PyTorch, JAX, HIPS autograd) match the
hand-written one, and ``python benchmarks/run.py --quick`` runs to the end.  For
``--device cuda``: without CuPy it says so in one line; its code path runs to the end with
NumPy standing in for CuPy (the hidden flag --cupy-standin); and, on a machine with a CUDA
device (marker gpu), it runs to the end on the GPU.
"""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import srcgrad as sg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCH)

import peers  # noqa: E402
import workloads  # noqa: E402

WORKLOADS = workloads.WORKLOADS
IDS = [w.key for w in WORKLOADS]


def _as_tuple(res):
    """A flat tuple of gradients (a dict's leaves in order: W9)."""
    return tuple(sg.pytree.tree_leaves(res)) if isinstance(res, (tuple, list, dict)) else (res,)


def _close(got, ref, dtype):
    rtol = 2e-4 if dtype == "float32" else 1e-8
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        g = np.asarray(g, dtype=np.float64)
        r = np.asarray(r, dtype=np.float64)
        assert g.shape == r.shape
        scale = max(float(np.max(np.abs(r))), 1e-30)
        assert float(np.max(np.abs(g - r))) <= rtol * scale, (g, r)


@pytest.mark.parametrize("w", WORKLOADS, ids=IDS)
def test_hand_gradient_matches_finite_differences(w):
    inputs = w.make("quick")
    args = [a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in inputs.args]
    ref = _as_tuple(w.hand(*args, grad_outputs=inputs.grad_outputs))
    seed = 1.0 if inputs.grad_outputs is None else inputs.grad_outputs
    rng = np.random.default_rng(0)
    eps = 1e-6
    args = [sg.pytree.tree_map(lambda a: a.astype(np.float64), a) if isinstance(a, dict) else a
            for a in args]
    ref = _as_tuple(w.hand(*args, grad_outputs=inputs.grad_outputs))
    k = 0
    for i in w.wrt:
        leaves = sg.pytree.tree_leaves(args[i])   # one leaf, or a structure's (W9)
        for j, leaf in enumerate(leaves):
            if w.key == "W2":   # a kink at x == 0 (the seed's input holds a 0): check x != 0
                v = (leaf != 0) * rng.standard_normal(leaf.shape)
            else:
                v = rng.standard_normal(np.shape(leaf))

            def moved(step):
                new = leaves[:j] + [leaf + step * v] + leaves[j + 1:]
                out = list(args)
                out[i] = sg.pytree.rebuild(args[i], iter(new))
                return out
            fd = (np.sum(seed * w.fn(*moved(eps))) - np.sum(seed * w.fn(*moved(-eps)))) / (2 * eps)
            assert np.isclose(np.sum(ref[k] * v), fd, rtol=1e-5, atol=1e-7), (w.key, i, j)
            k += 1


@pytest.mark.parametrize("w", WORKLOADS, ids=IDS)
def test_srcgrad_matches_hand(w):
    inputs = w.make("quick")
    wrt = w.wrt[0] if len(w.wrt) == 1 else tuple(w.wrt)
    got = _as_tuple(sg.grad(w.fn, wrt=wrt)(*inputs.args, grad_outputs=inputs.grad_outputs))
    ref = _as_tuple(w.hand(*inputs.args, grad_outputs=inputs.grad_outputs))
    for g, a in zip(got, (a for i in w.wrt for a in sg.pytree.tree_leaves(inputs.args[i]))):
        assert g.dtype == a.dtype and g.shape == a.shape
    _close(got, ref, w.dtype)


_FOUND = peers.available()


@pytest.mark.parametrize("name", peers.PEERS)
@pytest.mark.parametrize("w", WORKLOADS, ids=IDS)
def test_peer_matches_hand(w, name):
    if not _FOUND.get(name):
        pytest.skip(f"{name} is not installed (pip install -e '.[bench]')")
    if not peers.applicable(name, w):
        pytest.skip(f"{name} cannot run {w.key} (Python control flow on array values)")
    peers.configure(2)
    inputs = w.make("quick")
    call, to_numpy = peers.build(name, w, inputs)
    got = to_numpy(call())
    _close(got, _as_tuple(w.hand(*inputs.args, grad_outputs=inputs.grad_outputs)), w.dtype)


@pytest.mark.slow
def test_run_quick(tmp_path):
    out = tmp_path / "quick.json"
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "run.py"), "--quick",
                           "--json", str(out)],
                          capture_output=True, text=True, timeout=170, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Summary" in proc.stdout
    for w in WORKLOADS:
        assert f"== {w.key}:" in proc.stdout
    data = json.loads(out.read_text())
    assert [r["key"] for r in data["rows"]] == IDS
    for row in data["rows"]:
        assert row["status"]["srcgrad"] == "ok", row.get("error")
        for name in ("forward", "srcgrad", "hand"):
            assert row["time"][name]["median"] > 0


def test_higher_order_quick_checks_every_hessian_and_prints_each_ratio():
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "higher_order.py"), "--quick"],
                          capture_output=True, text=True, timeout=170, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for key in ("W5-f64", "W6-1e6", "W8"):
        line = next(l for l in proc.stdout.splitlines() if l.startswith(key))
        assert "jvp / f" in line and "hvp / f" in line, line
    assert "hessian of a 20-parameter loss" in proc.stdout


def test_dask_rows_quick_checks_each_gradient_and_prints_its_row():
    pytest.importorskip("dask.array")
    pytest.importorskip("distributed")
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "dask_rows.py"), "--quick"],
                          capture_output=True, text=True, timeout=170, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert "Dask/NumPy" in rows["w6"]
    assert "peak RSS" in rows["ooc"] and "of the input" in rows["ooc"]
    assert "LocalCluster 2 worker processes" in rows["logreg"]


def test_missing_peers_are_reported():
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "run.py"), "--quick",
                           "--only", "W4", "--peers", "none"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "== W4:" in proc.stdout
    assert "not selected" in proc.stdout or "not installed" in proc.stdout


# ----------------------------------------------------------------- --device cuda

CUDA_IDS = [w.key for w in workloads.CUDA_WORKLOADS]


def _run(*flags, timeout=170):
    return subprocess.run([sys.executable, os.path.join(BENCH, "run.py"), *flags],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None,
                    reason="CuPy is installed: the missing-CuPy message cannot show")
def test_cuda_without_cupy_says_so_in_one_line():
    proc = _run("--device", "cuda", "--quick", timeout=60)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--device cuda needs CuPy" in lines[0], proc.stderr


def _check_cuda_json(data, standin):
    assert [r["key"] for r in data["rows"]] == CUDA_IDS
    assert data["meta"]["broken_rows"] == {}
    assert data["meta"]["bandwidth"] > 0
    for row in data["rows"]:
        assert row["status"]["srcgrad"] == "ok", row.get("error")
        assert row["status"]["sg.fused"] in ("ok", "n/a"), row.get("error")
        assert row["status"].get("torch", "ok") == "ok", row.get("error")
        for name in ("forward", "srcgrad", "hand"):
            assert row["time"][name]["median"] > 0
        assert ("floor" in row) == row["key"].startswith("W6")
        if "floor" in row:
            assert row["floor"]["ratio"]["srcgrad"] > 0
        assert "memory" in row, row["warnings"]
        if not standin:
            assert row["memory"]["srcgrad"] > 0 and row["memory"]["hand"] > 0


def test_cuda_code_path_with_numpy_standin(tmp_path):
    """The --device cuda logic (agreement, synchronised timing, floor, summary, Markdown,
    JSON) on a machine without a GPU: NumPy stands in for CuPy, PyTorch runs on the CPU."""
    out, md = tmp_path / "cuda.json", tmp_path / "cuda.md"
    proc = _run("--device", "cuda", "--quick", "--cupy-standin", "--json", str(out),
                "--markdown", str(md))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Summary (--device cuda)" in proc.stdout
    assert "fuse: " in proc.stdout and "device-to-device copy bandwidth" in proc.stdout
    for key in CUDA_IDS:
        assert f"== {key}:" in proc.stdout
    _check_cuda_json(json.loads(out.read_text()), standin=True)
    text = md.read_text()
    for key in CUDA_IDS:
        assert f"| {key} |" in text


def _cuda_device_or_skip():
    from conftest import _cupy_or_skip
    _cupy_or_skip()


@pytest.mark.gpu
def test_run_cuda_quick(tmp_path):
    _cuda_device_or_skip()
    out = tmp_path / "cuda.json"
    proc = _run("--device", "cuda", "--quick", "--json", str(out), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Summary (--device cuda)" in proc.stdout
    _check_cuda_json(json.loads(out.read_text()), standin=False)


def test_compile_time_quick_times_first_and_second_calls_and_a_second_process(tmp_path):
    """benchmarks/compile_time.py --quick: every row timed, the second call compiles
    nothing (far below the first), a second process finds the gradient on disk."""
    out = tmp_path / "compile.json"
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "compile_time.py"), "--quick",
                           "--json", str(out)],
                          capture_output=True, text=True, timeout=170, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "thirty_lines" in proc.stdout
    data = json.loads(out.read_text())
    assert {(r["shape"], r["statements"]) for r in data["rows"]} == {
        (shape, n) for shape in ("straight", "loop") for n in (10, 30)}
    for row in data["rows"]:
        assert 0 < row["second_call"] < row["first_call"] / 5, row
    assert data["disk"] and all(r["warm_hits"] == 1 for r in data["disk"])


def test_compile_time_fresh_names_give_the_same_function_under_new_names():
    """benchmarks/compile_time.py's ``fresh_names``: every local, parameter and the
    function's name renamed, globals kept; the value and srcgrad's gradient are those of
    the original, and the gradient matches central differences."""
    import inspect
    import textwrap
    import compile_time as ct
    src = textwrap.dedent(inspect.getsource(workloads.thirty_lines))
    renamed, fname = ct.fresh_names(src, 7)
    assert fname == "thirty_lines_7" and "acc_7" in renamed and "np.tanh" in renamed
    assert " acc " not in renamed and "(x," not in renamed
    f, g = ct.make_function(src, "thirty_lines"), ct.make_function(renamed, fname)
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(6) for _ in range(3))
    assert f(x, w, b, 3) == g(x, w, b, 3)
    got = sg.grad(g, wrt=(0, 1, 2))(x, w, b, 3)
    for a, want in zip(got, sg.grad(f, wrt=(0, 1, 2))(x, w, b, 3)):
        np.testing.assert_array_equal(a, want)
    eps, args = 1e-6, [x, w, b]
    for k in range(3):
        for i in range(6):
            up = [a.copy() for a in args]
            down = [a.copy() for a in args]
            up[k][i] += eps
            down[k][i] -= eps
            fd = (g(*up, 3) - g(*down, 3)) / (2 * eps)
            assert abs(got[k][i] - fd) <= 1e-6 * max(1.0, abs(fd))
