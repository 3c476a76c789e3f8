#!/usr/bin/env python3
"""srcgrad benchmark suite: srcgrad against a hand-written gradient and against peers.

    python benchmarks/run.py                 # the full suite (a few minutes)
    python benchmarks/run.py --quick         # small sizes, few repeats (CI smoke, < 60 s)
    python benchmarks/run.py --only W5,W7    # some workloads (a group W5 or a row W5-f32)
    python benchmarks/run.py --json out.json # also write every measurement as JSON
    python benchmarks/run.py --device cuda   # W5, W6 (1e7, 1e8 float32), W7 on CuPy

For every workload (benchmarks/workloads.py) it first checks that srcgrad's gradient and
every installed peer's agree with the hand-written gradient, then times, in one process
with the contenders interleaved round-robin in each repeat: the forward function, the
srcgrad gradient, the hand-written gradient and the peers (PyTorch eager, JAX without
jit, jax.jit for reference, HIPS autograd; see benchmarks/peers.py).  It reports medians
with min and max, the ratios srcgrad/hand and gradient/forward, the first-compile and
cached-lookup times of ``srcgrad.grad``, and the peak memory (tracemalloc) of the
srcgrad gradient against the hand-written one.  docs/performance.md explains the method.

``--device cuda`` runs W5, W6 at 1e7 and 1e8 float32 elements and W7 on CuPy arrays
(inputs moved with cupy.asarray, not timed): the workload's own function differentiated
by srcgrad (default, and ``fuse=True`` where srcgrad has it), the hand-written gradient
run with ``np`` bound to ``cupy`` (a hand-written CuPy adjoint, the reference) and
PyTorch CUDA eager, every timed call ending in a device synchronisation.  W6 rows also
give each time over the memory-bandwidth floor: (bytes of x read + bytes of dx written)
/ the device-to-device copy bandwidth measured with cupy.copyto.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
# Several thread pools share the cores in one process (NumPy's OpenBLAS, PyTorch's
# OpenMP, XLA's Eigen pool).  An OpenMP team that spins while idle starves the next
# contender of a core (PyTorch's tiny MLP went from 0.1 ms to 100 ms); PASSIVE makes
# idle OpenMP threads sleep.  Set before any library starts its threads.
WAIT_POLICY = "PASSIVE"

# Targets of the issue: srcgrad gradient / hand-written gradient.
TARGET_RATIO = 1.25
TARGET_RATIO_OVERHEAD = 2.0           # W1-W4 and W8, where per-call overhead dominates
TARGET_COMPILE_S = 0.050              # first compile of a ~30-line function
TARGET_LOOKUP_S = 5e-6                # a cached sg.grad(f) lookup
TARGET_MEMORY = 1.5                   # peak memory of the gradient / hand-written
TARGET_PEERS = ("torch", "jax", "autograd")   # srcgrad must be faster than these
TARGET_W9_OVER_W5 = 1.1                # the dict-of-parameters MLP vs the positional one
JIT = "sg.jit"                          # the column of sg.grad(f, wrt=..., jit=True) (Numba)
# Targets of sg.grad(f, jit=True) / hand (issue 15); other rows: not slower than srcgrad
# without jit (JIT_NOT_SLOWER: the jit time / the srcgrad time, with room for noise).
TARGET_JIT = {"W8": 0.05, "W2": 0.1, "W3": 0.1, "W6-1e6": 0.5}
JIT_NOT_SLOWER = 1.05


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small sizes and few repeats (smoke test, under a minute)")
    p.add_argument("--only", default=None,
                   help="comma list of workloads: groups (W5) or rows (W5-f32)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                   help="where the arrays live: cpu (NumPy, all workloads) or cuda (CuPy: "
                        "W5, W6 1e7/1e8 float32, W7; PyTorch CUDA eager as the peer)")
    p.add_argument("--json", default=None, metavar="PATH", help="write all results as JSON")
    p.add_argument("--markdown", default=None, metavar="PATH",
                   help="write the summary as Markdown tables (for docs/performance.md)")
    p.add_argument("--threads", type=int, default=2,
                   help="threads for every contender (BLAS, OpenMP, torch, XLA); default 2")
    p.add_argument("--peers", default="all",
                   help="comma list of peers to run (torch,jax,jax.jit,autograd), 'none' or 'all'")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds of timing per workload (default 15, cuda 6, quick 0.5)")
    # Tests only: run the --device cuda code path with NumPy standing in for CuPy (no GPU).
    p.add_argument("--cupy-standin", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def pin_threads(n):
    """Pin every thread pool to n threads; must run before numpy/torch/jax are imported."""
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_cpu_multi_thread_eigen={'true' if n > 1 else 'false'}"
                               f" intra_op_parallelism_threads={n}").strip()
    cpus = None
    if hasattr(os, "sched_setaffinity"):
        try:
            have = sorted(os.sched_getaffinity(0))
            if len(have) > n:
                os.sched_setaffinity(0, have[:n])
            cpus = sorted(os.sched_getaffinity(0))
        except OSError:
            pass
    return cpus


ARGS = parse_args() if __name__ == "__main__" else None
CPUS = pin_threads(ARGS.threads) if ARGS is not None else None

import gc  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import linecache  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import types  # noqa: E402

sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import srcgrad as sg  # noqa: E402
import peers  # noqa: E402
import workloads  # noqa: E402

# ------------------------------------------------------------------ devices

class CpuDevice:
    """NumPy arrays in host memory (the default)."""

    name = "cpu"

    def prepare(self, inputs):
        return inputs

    def sync(self):
        pass


class CudaUnavailable(Exception):
    """--device cuda cannot run here: no CuPy, or no CUDA device."""


def load_cupy(standin=False):
    """The cupy module, checked to see a CUDA device; raises CudaUnavailable."""
    if standin:
        return standin_cupy()
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken install
        raise CudaUnavailable(
            f"--device cuda needs CuPy, which does not import here ({type(exc).__name__}: "
            f"{exc}); install cupy-cuda12x or cupy-cuda13x, or use --device cpu") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, or a driver too old for this CuPy
        raise CudaUnavailable(f"--device cuda: CuPy {cupy.__version__} finds no usable CUDA "
                              f"device ({type(exc).__name__}: {exc})") from None
    if count < 1:
        raise CudaUnavailable(f"--device cuda: CuPy {cupy.__version__} finds no CUDA device")
    return cupy


def standin_cupy():
    """NumPy behind the part of CuPy's API that --device cuda uses.

    For tests only (the hidden flag --cupy-standin): it runs the CUDA code path, with
    its agreement checks, timing, floor and summary, on a machine without a GPU.  Its
    times are CPU times and its peak memory is 0."""

    class Device:
        id = 0

        def synchronize(self):
            pass

    class Pool:
        def free_all_blocks(self):
            pass

    class MemoryHook:
        name = "MemoryHook"

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class StandIn(types.ModuleType):
        def __getattr__(self, name):
            return getattr(np, name)

    cp = StandIn("cupy_standin")
    cp.__version__ = f"stand-in (NumPy {np.__version__}, no GPU)"
    cp.asarray = lambda a: np.array(a)          # a copy, like a transfer
    cp.asnumpy = np.asarray
    pool = Pool()
    cp.get_default_memory_pool = lambda: pool
    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: 1, runtimeGetVersion=lambda: 0, driverGetVersion=lambda: 0,
        getDeviceProperties=lambda i: {"name": b"NumPy stand-in for CuPy (no GPU)",
                                       "major": 0, "minor": 0, "totalGlobalMem": 0})
    cp.cuda = types.SimpleNamespace(Device=Device, MemoryHook=MemoryHook, runtime=runtime)
    return cp


class CudaDevice:
    """CuPy arrays on the current CUDA device; ``sync`` waits for all its work."""

    name = "cuda"

    def __init__(self, cupy):
        self.cp = cupy
        self.device = cupy.cuda.Device()
        self.sync = self.device.synchronize
        self.pool = cupy.get_default_memory_pool()

    def prepare(self, inputs):
        """The inputs copied to the device (cupy.asarray; not timed)."""
        cp = self.cp
        args = tuple(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in inputs.args)
        go = inputs.grad_outputs
        out = workloads.Inputs(args, None if go is None else cp.asarray(go))
        self.sync()
        return out

    def to_host(self, values):
        return tuple(self.cp.asnumpy(v) for v in values)

    def release(self):
        """Give the memory pool's free blocks back (between workloads)."""
        gc.collect()
        self.sync()
        self.pool.free_all_blocks()

    def info(self):
        rt = self.cp.cuda.runtime
        out = {"name": "?", "compute_capability": "?", "memory": None,
               "cuda_runtime": None, "cuda_driver": None}
        try:
            props = rt.getDeviceProperties(self.device.id)
            name = props.get("name", b"?")
            out["name"] = name.decode() if isinstance(name, bytes) else str(name)
            out["compute_capability"] = f"{props.get('major')}.{props.get('minor')}"
            out["memory"] = props.get("totalGlobalMem")
            out["cuda_runtime"] = rt.runtimeGetVersion()
            out["cuda_driver"] = rt.driverGetVersion()
        except Exception as exc:  # the header must not stop the run
            out["error"] = short_error(exc)
        return out

# ------------------------------------------------------------------ helpers

def print_compile(row):
    """The first-compile and cached-lookup line of a workload's report."""
    if "compile" in row:
        c = row["compile"]
        print(f"   srcgrad first call on a fresh function {fmt_time(c['first_call'])} "
              f"(compile alone {fmt_time(c['compile'])}), second call "
              f"{fmt_time(c['second_call'])}; cached sg.grad(f).compiled {fmt_time(c['lookup'])}")


def fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_bytes(n):
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def as_tuple(res):
    """The gradients as a flat tuple of arrays (a structure's leaves in order: W9's dict)."""
    return tuple(sg.pytree.tree_leaves(res)) if isinstance(res, (tuple, list, dict)) else (res,)


def agree(got, ref, dtype):
    """(ok, worst relative error): max |got - ref| over max |ref|, per gradient."""
    rtol = 2e-4 if dtype == "float32" else 1e-8
    worst = 0.0
    if len(got) != len(ref):
        return False, float("inf")
    for g, r in zip(got, ref):
        g = np.asarray(g, dtype=np.float64)
        r = np.asarray(r, dtype=np.float64)
        if g.shape != r.shape:
            return False, float("inf")
        scale = max(float(np.max(np.abs(r))) if r.size else 0.0, 1e-30)
        err = float(np.max(np.abs(g - r))) / scale if r.size else 0.0
        if not np.isfinite(err):
            return False, float("inf")
        worst = max(worst, err)
    return worst <= rtol, worst


def short_error(exc):
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 600 else text[:600] + " ..."


_fresh_counter = [0]


def fresh_function(fn):
    """A new function object with ``fn``'s source, so srcgrad's cache is cold for it."""
    _fresh_counter[0] += 1
    src = textwrap.dedent(inspect.getsource(fn))
    filename = f"<srcgrad-bench-fresh-{_fresh_counter[0]}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    namespace = dict(fn.__globals__)
    exec(compile(src, filename, "exec"), namespace)
    return namespace[fn.__name__]


def srcgrad_wrt(w):
    return w.wrt[0] if len(w.wrt) == 1 else tuple(w.wrt)


# ------------------------------------------------------------------ timing

def time_calls(call, n, sync):
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    sync()
    return (time.perf_counter() - t0) / n


def interleaved(contenders, budget, sample_s, min_rep, max_rep, sync, warmed=()):
    """Round-robin timing.  contenders: {name: call}.  Returns {name: stats}.

    Each contender is called once to warm up and once to calibrate; a sample is a batch
    of calls lasting about ``sample_s`` (one call for slow contenders), and every
    repeat runs one sample of each contender, in an order rotated from repeat to
    repeat.  A contender too slow for the budget (JAX eager on W8) takes part in only
    some of the repeats, spread over the run, and at least 3.
    """
    names = list(contenders)
    per_call = {}
    for name in names:                 # warm-up (the agreement check was one) and calibration
        if name not in warmed:
            contenders[name]()
        per_call[name] = time_calls(contenders[name], 1, sync)
    batch = {n: max(1, int(round(sample_s / max(per_call[n], 1e-9)))) for n in names}
    cost = {n: batch[n] * per_call[n] for n in names}
    repeats = int(max(min_rep, min(max_rep, budget // max(sum(cost.values()), 1e-9))))
    share = budget / len(names)
    rounds = {}
    for n in names:
        k = int(max(min(3, repeats), min(repeats, share // max(cost[n], 1e-9))))
        rounds[n] = (set(range(repeats)) if k >= repeats else
                     {round(i * (repeats - 1) / max(k - 1, 1)) for i in range(k)})
    samples = {n: [] for n in names}
    gc_was = gc.isenabled()
    try:
        for r in range(repeats):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                if r not in rounds[name]:
                    continue
                gc.collect()
                gc.disable()
                samples[name].append(time_calls(contenders[name], batch[name], sync))
                if gc_was:
                    gc.enable()
    finally:
        if gc_was:
            gc.enable()
    return {n: {"median": statistics.median(samples[n]), "min": min(samples[n]),
                "max": max(samples[n]), "calls_per_sample": batch[n],
                "repeats": len(samples[n])}
            for n in names}


def peak_memory(call):
    """tracemalloc peak (bytes) of one call: NumPy buffers and Python objects it allocates."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        res = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del res
    return peak


def compile_times(fn, wrt, inputs, reps, first_call_reps=None, sync=None):
    """First call of sg.grad on a fresh function (compile + run), its second call (which
    composes the function later calls run), compile alone, cached lookup.

    A fresh function is the same source exec'd again into a new function object (new
    code object, new globals dict), so srcgrad's cache misses and compiles it anew.
    """
    first, second, compile_only = [], [], []
    for i in range(reps):
        if i < (first_call_reps or reps):
            f = fresh_function(fn)
            gc.collect()
            g = sg.grad(f, wrt=wrt)
            for times in (first, second):   # the second call composes the repeated call
                t0 = time.perf_counter()
                g(*inputs.args, grad_outputs=inputs.grad_outputs)
                if sync is not None:
                    sync()
                times.append(time.perf_counter() - t0)
        f = fresh_function(fn)
        gc.collect()
        t0 = time.perf_counter()
        sg.grad(f, wrt=wrt).compiled
        compile_only.append(time.perf_counter() - t0)
    sg.grad(fn, wrt=wrt).compiled       # warm
    n = 2000
    lookups = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n):
            sg.grad(fn, wrt=wrt).compiled
        lookups.append((time.perf_counter() - t0) / n)
    return {"first_call": statistics.median(first), "second_call": statistics.median(second),
            "compile": statistics.median(compile_only), "lookup": statistics.median(lookups)}


# ------------------------------------------------------------------ one workload

def run_workload(w, cfg, device, peer_names):
    size = "quick" if cfg["quick"] else "full"
    inputs = device.prepare(w.make(size))
    args, go = inputs.args, inputs.grad_outputs
    wrt = srcgrad_wrt(w)
    row = {"key": w.key, "title": w.describe(size), "dtype": w.dtype,
           "overhead_bound": w.overhead_bound, "status": {}, "error": {}, "agreement": {},
           "first_call": {}}
    print(f"\n== {w.key}: {w.describe(size)}", flush=True)

    ref = as_tuple(w.hand(*args, grad_outputs=go))
    contenders = {"forward": lambda: w.fn(*args)}

    # srcgrad
    try:
        g = sg.grad(w.fn, wrt=wrt)
        got = as_tuple(g(*args, grad_outputs=go))
        ok, err = agree(got, ref, w.dtype)
        row["agreement"]["srcgrad"] = err
        if ok:
            row["status"]["srcgrad"] = "ok"
            contenders["srcgrad"] = lambda: g(*args, grad_outputs=go)
        else:
            row["status"]["srcgrad"] = "FAIL"
            row["error"]["srcgrad"] = f"gradient disagrees with hand-written (rel. err {err:.3g})"
    except Exception as exc:  # a failing row is reported, not hidden
        row["status"]["srcgrad"] = "FAIL"
        row["error"]["srcgrad"] = short_error(exc)
    contenders["hand"] = lambda: w.hand(*args, grad_outputs=go)
    if jit_available():
        add_jit(row, contenders, w, wrt, args, go, ref)

    # peers
    for name in peer_names:
        if not peers.applicable(name, w):
            row["status"][name] = "n/a"
            continue
        try:
            t0 = time.perf_counter()
            call, to_numpy = peers.build(name, w, inputs)
            res = call()
            row["first_call"][name] = time.perf_counter() - t0
            got = to_numpy(res)
            ok, err = agree(got, ref, w.dtype)
            row["agreement"][name] = err
            if ok:
                row["status"][name] = "ok"
                contenders[name] = call
            else:
                row["status"][name] = "FAIL"
                row["error"][name] = f"gradient disagrees with hand-written (rel. err {err:.3g})"
        except Exception as exc:
            row["status"][name] = "FAIL"
            row["error"][name] = short_error(exc)

    for name, msg in row["error"].items():
        print(f"   !! {name}: {msg}", flush=True)

    # Move everything alive now (modules, peers' caches) out of the collector's way, so
    # the gc.collect() before each sample takes microseconds, not a tenth of a second.
    gc.collect()
    gc.freeze()

    # The agreement check warmed each contender up, except srcgrad: its second call
    # composes the repeated-call function (timed apart, in compile_times).
    warmed = {n for n, st in row["status"].items() if st == "ok" and n != "srcgrad"} | {"hand"}
    stats = interleaved(contenders, cfg["budget"], cfg["sample_s"], cfg["min_rep"],
                        cfg["max_rep"], device.sync, warmed)
    row["time"] = stats
    hand = stats["hand"]["median"]
    fwd = stats["forward"]["median"]
    row["ratio_to_hand"] = {n: s["median"] / hand for n, s in stats.items()}
    row["ratio_to_forward"] = {n: s["median"] / fwd for n, s in stats.items()}

    # compile and lookup times, memory
    if row["status"]["srcgrad"] == "ok":
        slow = stats["srcgrad"]["median"] > 0.1
        row["compile"] = compile_times(w.fn, wrt, inputs, cfg["compile_reps"],
                                       first_call_reps=1 if slow else None)
        row["memory"] = {"forward": peak_memory(contenders["forward"]),
                         "srcgrad": peak_memory(contenders["srcgrad"]),
                         "hand": peak_memory(contenders["hand"])}
        row["memory"]["ratio"] = row["memory"]["srcgrad"] / max(row["memory"]["hand"], 1)

    print_row(row)
    return row


def jit_available():
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def add_jit(row, contenders, w, wrt, args, go, ref):
    """The sg.jit contender: sg.grad(f, jit=True), its first call (translation, Numba
    compile, one gradient) timed apart, and the fallback warning where Numba does not
    compile it (then the column times the NumPy gradient it falls back to)."""
    import warnings
    from srcgrad.jit import JitFallbackWarning
    try:
        gj = sg.grad(w.fn, wrt=wrt, jit=True)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always", JitFallbackWarning)
            t0 = time.perf_counter()
            got = as_tuple(gj(*args, grad_outputs=go))
            row["first_call"][JIT] = time.perf_counter() - t0
        fell_back = [str(r.message) for r in record if issubclass(r.category, JitFallbackWarning)]
        row["jit"] = {"compiled": not fell_back, "fallback": fell_back[0] if fell_back else None,
                      "compile_s": [t for _, t in getattr(gj, "compile_times", [])],
                      # the first call's race found NumPy no slower: it runs from then on
                      "numpy_kept": any(getattr(e, "slower", False)
                                        for e in getattr(gj, "_entries", {}).values())}
        ok, err = agree(got, ref, w.dtype)
        row["agreement"][JIT] = err
        if ok:
            row["status"][JIT] = "ok"
            contenders[JIT] = lambda: gj(*args, grad_outputs=go)
        else:
            row["status"][JIT] = "FAIL"
            row["error"][JIT] = f"gradient disagrees with hand-written (rel. err {err:.3g})"
    except Exception as exc:
        row["status"][JIT] = "FAIL"
        row["error"][JIT] = short_error(exc)


def print_times(row):
    """The per-contender lines of a workload's report (with /floor where the row has one)."""
    floor = row.get("floor")
    print(f"   {'contender':<10} {'median':>10} {'min':>10} {'max':>10} {'/hand':>7} "
          f"{'/forward':>9}" + (f" {'/floor':>7}" if floor else "")
          + f"  {'calls x reps':>12}  agreement")
    for name, s in row["time"].items():
        agreement = row["agreement"].get(name)
        agreement = "-" if agreement is None else f"{agreement:.1e}"
        print(f"   {name:<10} {fmt_time(s['median']):>10} {fmt_time(s['min']):>10} "
              f"{fmt_time(s['max']):>10} {row['ratio_to_hand'][name]:>7.2f} "
              f"{row['ratio_to_forward'][name]:>9.2f}"
              + (f" {floor['ratio'][name]:>7.2f}" if floor else "")
              + f"  {str(s['calls_per_sample']) + ' x ' + str(s['repeats']):>12}  {agreement}")


def print_row(row):
    print_times(row)
    for name, status in row["status"].items():
        if status != "ok":
            print(f"   {name:<10} {status}")
    print_compile(row)
    if row["first_call"]:
        print("   first call of each peer (tracing/compiling + one gradient): " + ", ".join(
            f"{n} {fmt_time(t)}" for n, t in row["first_call"].items()))
    if "jit" in row:
        j = row["jit"]
        print("   sg.jit: " + ("compiled by Numba, compile " + ", ".join(fmt_time(t) for t in
                                                                    j["compile_s"])
                              + ("; the NumPy gradient ran as fast on the first call and runs"
                                 if j.get("numpy_kept") else "")
                              if j["compiled"] else "NumPy fallback: " + j["fallback"]))
    if "memory" in row:
        m = row["memory"]
        print(f"   peak memory (tracemalloc): srcgrad {fmt_bytes(m['srcgrad'])}, hand "
              f"{fmt_bytes(m['hand'])} (ratio {m['ratio']:.2f}), forward "
              f"{fmt_bytes(m['forward'])}", flush=True)


# ------------------------------------------------------------------ summary

def verdicts(row):
    """{target: (met, text)} for one row."""
    out = {}
    limit = TARGET_RATIO_OVERHEAD if row["overhead_bound"] else TARGET_RATIO
    if row["status"].get("srcgrad") != "ok":
        out["vs hand"] = (False, "srcgrad FAIL")
        return out
    r = row["ratio_to_hand"]["srcgrad"]
    out["vs hand"] = (r <= limit, f"{r:.2f} <= {limit}")
    mine = row["time"]["srcgrad"]["median"]
    for name in TARGET_PEERS:
        if name in row["time"]:
            theirs = row["time"][name]["median"]
            out[f"faster than {name}"] = (mine < theirs, f"{theirs / mine:.1f}x")
    if row["status"].get(JIT) == "ok" and JIT in row["ratio_to_hand"]:
        rj = row["ratio_to_hand"][JIT]
        if row["key"] in TARGET_JIT:
            out["jit vs hand"] = (rj <= TARGET_JIT[row["key"]], f"{rj:.3f} <= {TARGET_JIT[row['key']]}")
        else:
            rs = rj / r
            out["jit not slower"] = (rs <= JIT_NOT_SLOWER, f"{rs:.2f} <= {JIT_NOT_SLOWER}")
    if "memory" in row:
        m = row["memory"]["ratio"]
        out["memory"] = (m <= TARGET_MEMORY, f"{m:.2f} <= {TARGET_MEMORY}")
    if "compile" in row:
        lk = row["compile"]["lookup"]
        out["lookup"] = (lk < TARGET_LOOKUP_S, fmt_time(lk))
    return out


def with_jit(rows):
    """[JIT] where some row has the jit column, else []."""
    return [JIT] if any(JIT in row["status"] for row in rows) else []


def print_summary(rows, peer_names, thirty):
    cols = ["srcgrad"] + with_jit(rows) + [n for n in peer_names]
    print("\n== Summary: median gradient time / median hand-written gradient time "
          "(lower is better; hand = 1.00).\n   sg(min): the same ratio of the fastest samples; "
          "sg/fwd, hand/fwd: gradient / forward; mem: peak memory srcgrad / hand")
    head = f"{'workload':<8} {'hand':>10} " + " ".join(f"{c:>9}" for c in cols)
    head += f" {'sg(min)':>7} {'sg/fwd':>7} {'hand/fwd':>8} {'mem':>5} {'target':>7}  met"
    print(head)
    all_met = True
    for row in rows:
        hand = row["time"]["hand"]["median"]
        cells = []
        for c in cols:
            st = row["status"].get(c)
            if st == "ok" and c in row["ratio_to_hand"]:
                cells.append(f"{row['ratio_to_hand'][c]:>9.2f}")
            elif st is None:
                cells.append(f"{'-':>9}")
            else:
                cells.append(f"{st:>9}")
        sgf = (f"{row['ratio_to_forward']['srcgrad']:>7.2f}" if "srcgrad" in row["ratio_to_forward"]
               else f"{'-':>7}")
        mem = f"{row['memory']['ratio']:>5.2f}" if "memory" in row else f"{'-':>5}"
        if "srcgrad" in row["time"]:
            row["min_ratio_to_hand"] = {n: s["min"] / row["time"]["hand"]["min"]
                                        for n, s in row["time"].items()}
            sgmin = f"{row['min_ratio_to_hand']['srcgrad']:>7.2f}"
        else:
            sgmin = f"{'-':>7}"
        limit = TARGET_RATIO_OVERHEAD if row["overhead_bound"] else TARGET_RATIO
        v = verdicts(row)
        row["verdicts"] = {k: {"met": m, "value": t} for k, (m, t) in v.items()}
        missed = [k for k, (m, _) in v.items() if not m]
        all_met &= not missed
        print(f"{row['key']:<8} {fmt_time(hand):>10} " + " ".join(cells) +
              f" {sgmin} {sgf} {row['ratio_to_forward']['hand']:>8.2f} {mem} {limit:>7}  "
              + ("yes" if not missed else "MISSED: " + ", ".join(missed)))
    if thirty:
        ok = thirty["first_call"] < TARGET_COMPILE_S
        all_met &= ok
        print(f"\nfirst compile of a 30-line function (thirty_lines, fresh function object): "
              f"first call {fmt_time(thirty['first_call'])}, compile alone "
              f"{fmt_time(thirty['compile'])} (target < {fmt_time(TARGET_COMPILE_S)}: "
              f"{'met' if ok else 'MISSED'}); second call {fmt_time(thirty['second_call'])}; "
              f"cached lookup {fmt_time(thirty['lookup'])}")
    by_key = {row["key"]: row for row in rows}
    for dtype in ("f32", "f64"):   # a dict of parameters costs what positional ones do
        w9, w5 = by_key.get(f"W9-{dtype}"), by_key.get(f"W5-{dtype}")
        if w9 and w5 and "srcgrad" in w9["time"] and "srcgrad" in w5["time"]:
            r = w9["time"]["srcgrad"]["median"] / w5["time"]["srcgrad"]["median"]
            ok = r <= TARGET_W9_OVER_W5
            all_met &= ok
            w9["w9_over_w5"] = r
            print(f"W9-{dtype} / W5-{dtype} (srcgrad, parameters in a dict / positional): "
                  f"{r:.2f} (target <= {TARGET_W9_OVER_W5}: {'met' if ok else 'MISSED'})")
    print(f"\nall targets met: {'yes' if all_met else 'no'}")
    return all_met


def markdown(rows, peer_names, thirty, info):
    """The summary as Markdown: ratios to the hand-written gradient, times, targets."""
    cols = ["srcgrad"] + with_jit(rows) + list(peer_names)
    out = [f"Measured {time.strftime('%Y-%m-%d')}: srcgrad git {info.get('git')}, python "
           f"{info['python']}, numpy {info['numpy']}, "
           + ", ".join(f"{n} {v}" for n, v in info["peers"].items() if v and n in peer_names)
           + f"; {info['cpu_count']} CPUs, {info['threads']} threads for every contender; "
           f"load average {' '.join('%.2f' % v for v in info.get('loadavg_start') or ())} at "
           f"start, {' '.join('%.2f' % v for v in info.get('loadavg_end') or ())} at end.", "",
           "Median gradient time divided by the median hand-written gradient time (lower is "
           "better; below 1 is faster than the hand-written NumPy gradient).", "",
           "| workload | hand | " + " | ".join(cols) + " | srcgrad (min/min) | target | met |",
           "|---|---:|" + "---:|" * len(cols) + "---:|---:|---|"]
    for row in rows:
        cells = []
        for c in cols:
            st = row["status"].get(c)
            ok = st == "ok" and c in row["ratio_to_hand"]
            cells.append(f"{row['ratio_to_hand'][c]:.2f}" if ok else (st or "-"))
        limit = TARGET_RATIO_OVERHEAD if row["overhead_bound"] else TARGET_RATIO
        v = row.get("verdicts", {})
        missed = [k for k, d in v.items() if not d["met"]]
        sgmin = row.get("min_ratio_to_hand", {}).get("srcgrad")
        out.append(f"| {row['key']} | {fmt_time(row['time']['hand']['median'])} | "
                   + " | ".join(cells) + f" | {'-' if sgmin is None else f'{sgmin:.2f}'} | "
                   f"<= {limit} | {'yes' if not missed else 'no: ' + ', '.join(missed)} |")
    jit_rows = [row for row in rows if "jit" in row]
    if jit_rows:
        out += ["", f"{JIT}: sg.grad(f, jit=True) (Numba): its time / hand, / srcgrad without "
                f"jit, and its first call (translation, Numba compile, one gradient):", "",
                "| workload | sg.jit / hand | sg.jit / srcgrad | first call | compiled |",
                "|---|---:|---:|---:|---|"]
        for row in jit_rows:
            r = row["ratio_to_hand"]
            over_hand = f"{r[JIT]:.3f}" if JIT in r else "-"
            over_sg = f"{r[JIT] / r['srcgrad']:.2f}" if JIT in r and "srcgrad" in r else "-"
            compiled = ("yes, NumPy kept (as fast)" if row["jit"].get("numpy_kept") else "yes") \
                if row["jit"]["compiled"] else "no (NumPy fallback)"
            out.append(f"| {row['key']} | {over_hand} | {over_sg} | "
                       f"{fmt_time(row['first_call'].get(JIT))} | {compiled} |")
    out += ["", "Times (median, with min and max), gradient/forward, first compile, cached "
            "lookup and peak memory:", "",
            "| workload | forward | srcgrad | hand | srcgrad / forward | hand / forward | "
            "first call (fresh f) | compile alone | cached lookup | peak mem srcgrad | "
            "peak mem hand | mem ratio |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def t3(s):
        return f"{fmt_time(s['median'])} ({fmt_time(s['min'])}-{fmt_time(s['max'])})"
    for row in rows:
        t = row["time"]
        c = row.get("compile", {})
        m = row.get("memory", {})
        sg_t = t3(t["srcgrad"]) if "srcgrad" in t else "FAIL"
        sg_f = f"{row['ratio_to_forward']['srcgrad']:.2f}" if "srcgrad" in t else "-"
        out.append(f"| {row['key']} | {t3(t['forward'])} | {sg_t} | {t3(t['hand'])} | {sg_f} | "
                   f"{row['ratio_to_forward']['hand']:.2f} | {fmt_time(c.get('first_call'))} | "
                   f"{fmt_time(c.get('compile'))} | {fmt_time(c.get('lookup'))} | "
                   f"{fmt_bytes(m.get('srcgrad'))} | {fmt_bytes(m.get('hand'))} | "
                   f"{'%.2f' % m['ratio'] if m else '-'} |")
    if thirty:
        out += ["", f"First compile of a 30-line function (`thirty_lines`): first call "
                f"{fmt_time(thirty['first_call'])}, compile alone {fmt_time(thirty['compile'])}; "
                f"second call (composes what later calls run) {fmt_time(thirty['second_call'])}; "
                f"cached lookup {fmt_time(thirty['lookup'])}."]
    return "\n".join(out) + "\n"


def git_state():
    """The commit of the srcgrad checkout, and whether srcgrad/ has uncommitted changes."""
    import subprocess
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "srcgrad"], cwd=ROOT, text=True,
                               capture_output=True, timeout=10).stdout.strip()
        return f"{head}{' + uncommitted changes in srcgrad/' if dirty else ''}" if head else None
    except Exception:
        return None


def header(args, peer_found, peer_names):
    info = {"git": git_state(), "python": platform.python_version(),
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "cpus_pinned": CPUS, "threads": args.threads,
            "numpy": np.__version__, "srcgrad": getattr(sg, "__version__", "?"),
            "peers": peer_found, "device": args.device, "quick": args.quick,
            "env": {v: os.environ.get(v) for v in THREAD_VARS + ("OMP_WAIT_POLICY", "XLA_FLAGS")},
            "loadavg_start": os.getloadavg() if hasattr(os, "getloadavg") else None}
    try:
        import threadpoolctl
        info["threadpools"] = [{"api": p["internal_api"], "threads": p["num_threads"]}
                               for p in threadpoolctl.threadpool_info()]
    except Exception:
        pass
    print("srcgrad benchmark suite"
          + (" (--quick: small sizes, few repeats)" if args.quick else ""))
    if info["loadavg_start"] is not None:
        print("load average at start: %.2f %.2f %.2f (other processes share the cores; "
              "compare only numbers from one run)" % info["loadavg_start"])
    print(f"python {info['python']}, numpy {info['numpy']}, srcgrad {info['srcgrad']} "
          f"(git {info['git']}), "
          f"{info['platform']}, {info['cpu_count']} CPUs")
    print(f"threads pinned to {args.threads} for every contender: "
          + ", ".join(f"{v}={os.environ.get(v)}" for v in THREAD_VARS[:3])
          + f", OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}"
          + f", torch.set_num_threads({args.threads}), XLA_FLAGS='{os.environ.get('XLA_FLAGS')}'"
          + (f", CPU affinity {CPUS}" if CPUS is not None else ""))
    for name, ver in peer_found.items():
        if ver is None:
            print(f"peer {name}: not installed, skipped (pip install -e '.[bench]')")
        elif name not in peer_names:
            print(f"peer {name}: {ver}, not selected")
        else:
            print(f"peer {name}: {ver}")
    return info


# ------------------------------------------------------------------ --device cuda

TARGET_FLOOR = {"W6-1e8-f32": 1.5}    # gradient time / memory-bandwidth floor
FUSED = "sg.fused"                    # the column of sg.grad(f, wrt=..., fuse=True)
SRCGRAD_VARIANTS = ("srcgrad", FUSED)


def synced(call, sync):
    """``call`` followed by a device synchronisation, so that its time is the GPU's time."""
    def run():
        res = call()
        sync()
        return res
    return run


def fused_grad(fn, wrt):
    """sg.grad(fn, wrt, fuse=True), or None where this srcgrad has no ``fuse`` option."""
    try:
        return sg.grad(fn, wrt=wrt, fuse=True)
    except TypeError:
        return None


def copy_bandwidth(cp, sync, n, reps):
    """Device-to-device copy bandwidth (bytes/s): bytes read + written by cupy.copyto of
    ``n`` float32 elements, over the median time of one copy."""
    a = cp.ones(n, dtype=np.float32)
    b = cp.empty_like(a)
    cp.copyto(b, a)
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        cp.copyto(b, a)
        sync()
        times.append(time.perf_counter() - t0)
    nbytes = a.nbytes + b.nbytes
    del a, b
    return nbytes / statistics.median(times)


def cuda_peak(cp, call):
    """Peak bytes taken from CuPy's memory pool during one call, above what was taken
    before it (a cupy.cuda.MemoryHook counting malloc and free)."""

    class PeakHook(cp.cuda.MemoryHook):
        name = "srcgrad_bench_peak"

        def __init__(self):
            self.now = 0
            self.peak = 0

        def malloc_postprocess(self, **kw):
            self.now += kw["mem_size"]
            self.peak = max(self.peak, self.now)

        def free_postprocess(self, **kw):
            self.now -= kw["mem_size"]

    gc.collect()
    hook = PeakHook()
    with hook:
        res = call()
    del res
    return hook.peak


def torch_peak(torch, call):
    """Peak bytes of PyTorch's CUDA allocator during one call, above what it held before."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    res = call()
    peak = torch.cuda.max_memory_allocated() - before
    del res
    return peak


def _array_family(value):
    """'cupy', 'numpy', ...: the package of a value's type."""
    return type(value).__module__.split(".")[0]


def _check_gradient(row, name, call, to_host, ref, dtype, like=None):
    """Call once (the warm-up), compare with the hand-written gradient; True if it agrees.

    ``like``: the inputs differentiated; a srcgrad gradient must be an array of the same
    type (on the device, not on the host)."""
    try:
        t0 = time.perf_counter()
        res = call()
        row["first_call"][name] = time.perf_counter() - t0
        if like is not None:
            for g, a in zip(as_tuple(res), like):
                if _array_family(g) != _array_family(a):
                    row["status"][name] = "FAIL"
                    row["error"][name] = (f"gradient is a {type(g).__module__}."
                                          f"{type(g).__name__}, the input a "
                                          f"{type(a).__module__}.{type(a).__name__}")
                    return False
                if getattr(g, "dtype", None) != a.dtype:
                    row["warnings"].append(f"{name}: gradient dtype {getattr(g, 'dtype', '?')}"
                                           f", input {a.dtype}")
        ok, err = agree(to_host(as_tuple(res)), ref, dtype)
        row["agreement"][name] = err
        if ok:
            row["status"][name] = "ok"
            return True
        row["status"][name] = "FAIL"
        row["error"][name] = f"gradient disagrees with hand-written (rel. err {err:.3g})"
    except Exception as exc:  # a failing contender is reported, not hidden
        row["status"][name] = "FAIL"
        row["error"][name] = short_error(exc)
    return False


def run_workload_cuda(w, cfg, device, tch, bandwidth):
    """One workload on the GPU.  tch: None, or {"torch", "device", "sync"} for the peer."""
    size = "quick" if cfg["quick"] else "full"
    host = w.make(size)
    inputs = device.prepare(host)
    args, go = inputs.args, inputs.grad_outputs
    wrt = srcgrad_wrt(w)
    sync = device.sync
    like = [args[i] for i in w.wrt]
    row = {"key": w.key, "title": w.describe(size), "dtype": w.dtype, "device": "cuda",
           "overhead_bound": w.overhead_bound, "status": {}, "error": {}, "agreement": {},
           "first_call": {}, "warnings": []}
    print(f"\n== {w.key}: {w.describe(size)}", flush=True)

    hand_fn = workloads.rebind(w.hand, np=device.cp)      # a hand-written CuPy adjoint
    hand = synced(lambda: hand_fn(*args, grad_outputs=go), sync)
    t0 = time.perf_counter()
    ref = device.to_host(as_tuple(hand()))
    row["first_call"]["hand"] = time.perf_counter() - t0
    row["status"]["hand"] = "ok"

    contenders = {"forward": synced(lambda: w.fn(*args), sync)}
    g = sg.grad(w.fn, wrt=wrt)
    call = synced(lambda: g(*args, grad_outputs=go), sync)
    if _check_gradient(row, "srcgrad", call, device.to_host, ref, w.dtype, like):
        contenders["srcgrad"] = call
    gf = fused_grad(w.fn, wrt)
    if gf is None:
        row["status"][FUSED] = "n/a"
    else:
        call = synced(lambda: gf(*args, grad_outputs=go), sync)
        if _check_gradient(row, FUSED, call, device.to_host, ref, w.dtype, like):
            contenders[FUSED] = call
    contenders["hand"] = hand
    if tch is not None:
        try:
            tcall, to_numpy = peers.build("torch", w, host, device=tch["device"])
            tcall = synced(tcall, tch["sync"])
            if _check_gradient(row, "torch", tcall, to_numpy, ref, w.dtype):
                contenders["torch"] = tcall
        except Exception as exc:
            row["status"]["torch"] = "FAIL"
            row["error"]["torch"] = short_error(exc)
    for name, msg in row["error"].items():
        print(f"   !! {name}: {msg}", flush=True)
    for msg in row["warnings"]:
        print(f"   warning: {msg}", flush=True)

    gc.collect()
    gc.freeze()
    stats = interleaved(contenders, cfg["budget"], cfg["sample_s"], cfg["min_rep"],
                        cfg["max_rep"], sync, warmed=set(contenders) - {"forward"})
    row["time"] = stats
    hand_t = stats["hand"]["median"]
    fwd_t = stats["forward"]["median"]
    row["ratio_to_hand"] = {n: s["median"] / hand_t for n, s in stats.items()}
    row["ratio_to_forward"] = {n: s["median"] / fwd_t for n, s in stats.items()}
    row["min_ratio_to_hand"] = {n: s["min"] / stats["hand"]["min"] for n, s in stats.items()}
    if bandwidth and w.group == "W6":
        x = args[0]
        grad_floor = (x.nbytes + x.nbytes) / bandwidth     # read x, write dx (same dtype)
        fwd_floor = x.nbytes / bandwidth                   # read x
        row["floor"] = {"bandwidth": bandwidth, "gradient_s": grad_floor, "forward_s": fwd_floor,
                        "ratio": {n: s["median"] / (fwd_floor if n == "forward" else grad_floor)
                                  for n, s in stats.items()}}

    if "srcgrad" in stats:
        try:
            row["compile"] = compile_times(w.fn, wrt, inputs, cfg["compile_reps"],
                                           first_call_reps=1, sync=sync)
        except Exception as exc:
            row["warnings"].append(f"compile times: {short_error(exc)}")
    try:
        mem = {n: cuda_peak(device.cp, contenders[n])
               for n in ("forward",) + SRCGRAD_VARIANTS + ("hand",) if n in contenders}
        if "torch" in contenders and tch["device"] == "cuda":
            mem["torch"] = torch_peak(tch["torch"], contenders["torch"])
        if "srcgrad" in mem:
            mem["ratio"] = mem["srcgrad"] / max(mem["hand"], 1)
        row["memory"] = mem
    except Exception as exc:
        row["warnings"].append(f"peak memory: {short_error(exc)}")
    print_row_cuda(row)
    return row


def print_row_cuda(row):
    floor = row.get("floor")
    print_times(row)
    for name, status in row["status"].items():
        if status == "n/a" and name == FUSED:
            print(f"   {name:<10} n/a (fuse: not available)")
        elif status != "ok":
            print(f"   {name:<10} {status}")
    if floor:
        print(f"   bandwidth floor: gradient {fmt_time(floor['gradient_s'])} (read x + write dx "
              f"at {floor['bandwidth'] / 1e9:.0f} GB/s), forward {fmt_time(floor['forward_s'])} "
              f"(read x); /floor = median / floor")
    print_compile(row)
    if row["first_call"]:
        print("   first call (CuPy kernel compiles included): " + ", ".join(
            f"{n} {fmt_time(t)}" for n, t in row["first_call"].items()))
    if "memory" in row:
        m = row["memory"]
        print("   peak memory in one call (CuPy pool; torch: its CUDA allocator): " + ", ".join(
            f"{n} {fmt_bytes(v)}" for n, v in m.items() if n != "ratio")
            + (f" (srcgrad/hand {m['ratio']:.2f})" if "ratio" in m else ""), flush=True)
    else:
        print("   peak memory: -")
    for msg in row["warnings"]:
        if msg.startswith(("compile times:", "peak memory:")):
            print(f"   warning: {msg}")


def verdicts_cuda(row):
    """{variant: {target: (met, text)}} for srcgrad and sg.fused, where they were timed."""
    out = {}
    t = row["time"]
    for v in SRCGRAD_VARIANTS:
        if v not in t:
            continue
        mine = t[v]["median"]
        d = {}
        r = row["ratio_to_hand"][v]
        d["vs hand"] = (r <= TARGET_RATIO, f"{r:.2f} <= {TARGET_RATIO}")
        if "torch" in t:
            d["faster than torch"] = (mine < t["torch"]["median"],
                                      f"{t['torch']['median'] / mine:.2f}x")
        limit = TARGET_FLOOR.get(row["key"])
        if limit and "floor" in row:
            f = row["floor"]["ratio"][v]
            d["floor"] = (f <= limit, f"{f:.2f} <= {limit}")
        out[v] = d
    return out


def _met_text(row):
    """(met, text): met when srcgrad or sg.fused meets every target of the row."""
    v = verdicts_cuda(row)
    row["verdicts"] = {var: {k: {"met": m, "value": t} for k, (m, t) in d.items()}
                       for var, d in v.items()}
    if not v:
        return False, "MISSED: srcgrad FAIL"
    good = [var for var, d in v.items() if all(m for m, _ in d.values())]
    if good:
        return True, "yes (" + ", ".join(good) + ")"
    return False, "MISSED: " + "; ".join(
        f"{var}: " + ", ".join(k for k, (m, _) in d.items() if not m) for var, d in v.items())


CUDA_COLS = ("srcgrad", FUSED, "hand", "torch")


def _ratio(row, a, b):
    t = row["time"]
    return t[a]["median"] / t[b]["median"] if a in t and b in t else None


def _cell(value, width, fmt="{:.2f}"):
    return f"{'-' if value is None else fmt.format(value):>{width}}"


def print_summary_cuda(rows, bandwidth):
    print("\n== Summary (--device cuda): median time of one call, device synchronised; "
          "ratios of medians (lower is better)\n   fu = sg.fused (sg.grad(f, fuse=True)); "
          "/floor: gradient time / bandwidth floor (W6); mem: peak memory srcgrad / hand")
    head = (f"{'workload':<11} {'dtype':<7} " + " ".join(f"{c:>9}" for c in CUDA_COLS)
            + f" {'sg/hand':>7} {'fu/hand':>7} {'sg/torch':>8} {'fu/torch':>8} {'fu/sg':>6}"
            + f" {'sg/floor':>8} {'fu/floor':>8} {'mem':>5}  met")
    print(head)
    all_met = True
    for row in rows:
        t = row["time"]
        times = []
        for c in CUDA_COLS:
            st = row["status"].get(c)
            times.append(f"{fmt_time(t[c]['median']) if c in t else (st or '-'):>9}")
        fl = row.get("floor", {}).get("ratio", {})
        mem = row.get("memory", {}).get("ratio")
        met, text = _met_text(row)
        all_met &= met
        print(f"{row['key']:<11} {row['dtype']:<7} " + " ".join(times)
              + " " + _cell(_ratio(row, "srcgrad", "hand"), 7)
              + " " + _cell(_ratio(row, FUSED, "hand"), 7)
              + " " + _cell(_ratio(row, "srcgrad", "torch"), 8)
              + " " + _cell(_ratio(row, FUSED, "torch"), 8)
              + " " + _cell(_ratio(row, FUSED, "srcgrad"), 6)
              + " " + _cell(fl.get("srcgrad"), 8) + " " + _cell(fl.get(FUSED), 8)
              + " " + _cell(mem, 5) + f"  {text}")
    if bandwidth:
        print(f"\ndevice-to-device copy bandwidth (cupy.copyto, read + write): "
              f"{bandwidth / 1e9:.0f} GB/s")
    print(f"targets: srcgrad (or sg.fused) / hand <= {TARGET_RATIO}, faster than PyTorch CUDA "
          f"eager, " + ", ".join(f"{k} gradient <= {v}x the bandwidth floor"
                                 for k, v in TARGET_FLOOR.items()))
    print(f"\nall targets met: {'yes' if all_met else 'no'}")
    return all_met


def markdown_cuda(rows, info, bandwidth):
    d = info["cuda"]
    out = [f"Measured {time.strftime('%Y-%m-%d')} on {d['name']} (`--device cuda`): srcgrad git "
           f"{info.get('git')}, python {info['python']}, cupy {info['cupy']}, numpy "
           f"{info['numpy']}, torch {info.get('torch') or '-'}; every timed call ends with a "
           f"device synchronisation; sg.fused is `sg.grad(f, wrt, fuse=True)` "
           f"({'available' if info['fuse'] else 'not available'})"
           + (f"; copy bandwidth {bandwidth / 1e9:.0f} GB/s" if bandwidth else "") + ".", "",
           "| workload | dtype | " + " | ".join(CUDA_COLS) + " | srcgrad / hand | "
           "sg.fused / hand | srcgrad / torch | sg.fused / torch | sg.fused / srcgrad | "
           "srcgrad / floor | sg.fused / floor | mem srcgrad / hand | met |",
           "|---|---|" + "---:|" * (len(CUDA_COLS) + 8) + "---|"]

    def r(v):
        return "-" if v is None else f"{v:.2f}"
    for row in rows:
        t = row["time"]
        times = []
        for c in CUDA_COLS:
            if c in t:
                s = t[c]
                times.append(f"{fmt_time(s['median'])} ({fmt_time(s['min'])}-"
                             f"{fmt_time(s['max'])})")
            else:
                times.append(row["status"].get(c) or "-")
        fl = row.get("floor", {}).get("ratio", {})
        _, text = _met_text(row)
        out.append(f"| {row['key']} | {row['dtype']} | " + " | ".join(times) + " | "
                   + " | ".join(r(v) for v in (
                       _ratio(row, "srcgrad", "hand"), _ratio(row, FUSED, "hand"),
                       _ratio(row, "srcgrad", "torch"), _ratio(row, FUSED, "torch"),
                       _ratio(row, FUSED, "srcgrad"), fl.get("srcgrad"), fl.get(FUSED),
                       row.get("memory", {}).get("ratio")))
                   + f" | {text} |")
    return "\n".join(out) + "\n"


def header_cuda(args, device, torch_ver, torch_note, fuse):
    dev = device.info()
    info = {"git": git_state(), "python": platform.python_version(),
            "platform": platform.platform(), "numpy": np.__version__,
            "srcgrad": getattr(sg, "__version__", "?"), "cupy": device.cp.__version__,
            "torch": torch_ver, "device": "cuda", "cuda": dev, "quick": args.quick,
            "fuse": fuse, "cpus_pinned": CPUS, "threads": args.threads}
    print("srcgrad benchmark suite, --device cuda"
          + (" (--quick: small sizes, few repeats)" if args.quick else ""))
    print(f"device: {dev['name']} (compute capability {dev['compute_capability']}, "
          f"{fmt_bytes(dev['memory'])}), CUDA runtime {dev['cuda_runtime']}, "
          f"driver {dev['cuda_driver']}")
    print(f"cupy {info['cupy']}, numpy {info['numpy']}, torch {torch_ver or '-'}, "
          f"python {info['python']}, srcgrad {info['srcgrad']} (git {info['git']})")
    print(f"peer torch: {torch_note}; jax and autograd are not run on cuda")
    print("fuse: available (sg.grad(f, wrt, fuse=True) is the sg.fused column)" if fuse else
          "fuse: not available (sg.grad has no fuse option; no sg.fused column)")
    print("every timed call ends with a device synchronisation (cupy.cuda.Device()."
          "synchronize(); torch.cuda.synchronize() for torch); inputs are moved with "
          "cupy.asarray before timing")
    return info


def main_cuda(args):
    try:
        cp = load_cupy(args.cupy_standin)
    except CudaUnavailable as exc:
        print(f"run.py: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    device = CudaDevice(cp)
    cfg = {"quick": args.quick,
           "budget": args.budget if args.budget is not None else (0.5 if args.quick else 6.0),
           "sample_s": 0.002 if args.quick else 0.02,
           "min_rep": 3 if args.quick else 5,
           "max_rep": 3 if args.quick else 21,
           "compile_reps": 1 if args.quick else 3,
           "copy_elements": 1 << 22 if args.quick else 250_000_000}
    chosen = workloads.select(args.only, device="cuda")

    # The peer: PyTorch CUDA eager (JAX and autograd are CPU peers here).
    wanted = (["torch"] if args.peers == "all" else [] if args.peers == "none" else
              [p.strip() for p in args.peers.split(",") if p.strip()])
    unknown = [p for p in wanted if p not in peers.PEERS]
    if unknown:
        raise SystemExit(f"--peers: unknown {unknown}; have {', '.join(peers.PEERS)}")
    tch, torch_ver = None, peers.available(("torch",))["torch"]
    if "torch" not in wanted:
        torch_note = "not selected" if torch_ver else "not installed"
    elif not torch_ver:
        torch_note = "not installed, skipped"
    else:
        import torch
        torch.set_num_threads(args.threads)
        if args.cupy_standin:
            tch = {"torch": torch, "device": "cpu", "sync": lambda: None}
            torch_note = f"{torch_ver} on the CPU (--cupy-standin)"
        elif not torch.cuda.is_available():
            torch_note = f"{torch_ver} has no CUDA here, skipped"
        else:
            tch = {"torch": torch, "device": "cuda", "sync": torch.cuda.synchronize}
            torch_note = f"{torch_ver} (CUDA {torch.version.cuda}), CUDA eager"
    fuse = fused_grad(workloads.w6_elementwise, 0) is not None
    info = header_cuda(args, device, torch_ver, torch_note, fuse)
    gc.collect()
    gc.freeze()

    bandwidth = None
    if any(w.group == "W6" for w in chosen):
        try:
            bandwidth = copy_bandwidth(cp, device.sync, cfg["copy_elements"],
                                       5 if args.quick else 20)
            print(f"\ndevice-to-device copy bandwidth: {bandwidth / 1e9:.0f} GB/s (cupy.copyto "
                  f"of {cfg['copy_elements']:.3g} float32, bytes read + written / median time)")
        except Exception as exc:  # the W6 rows then go without a floor
            print(f"\n!! copy bandwidth not measured, no floor: {short_error(exc)}")
        device.release()

    rows, broken = [], {}
    for w in chosen:
        t0 = time.perf_counter()
        try:
            rows.append(run_workload_cuda(w, cfg, device, tch, bandwidth))
            rows[-1]["wall_s"] = time.perf_counter() - t0
        except Exception as exc:  # one broken row must not cost the others (GPU time is short)
            import traceback
            traceback.print_exc(file=sys.stdout)
            broken[w.key] = short_error(exc)
            print(f"   !! {w.key} could not run: {broken[w.key]}")
        device.release()
        if tch is not None and tch["device"] == "cuda":
            tch["torch"].cuda.empty_cache()
        print(f"   ({w.key} took {time.perf_counter() - t0:.1f} s)", flush=True)

    all_met = print_summary_cuda(rows, bandwidth) and not broken
    for key, msg in broken.items():
        print(f"{key}: could not run: {msg}")
    info["bandwidth"] = bandwidth
    info["broken_rows"] = broken
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(markdown_cuda(rows, info, bandwidth))
        print(f"wrote {args.markdown}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"meta": info, "config": cfg, "rows": rows, "all_targets_met": all_met},
                      fh, indent=1, default=str)
        print(f"wrote {args.json}")
    failing = [r["key"] for r in rows if r["status"].get("srcgrad") != "ok"] + list(broken)
    if failing:
        print(f"srcgrad FAILS on: {', '.join(failing)}")
    return 0


def main(args):
    if args.device == "cuda":
        return main_cuda(args)
    device = CpuDevice()
    cfg = {"quick": args.quick,
           "budget": args.budget if args.budget is not None else (0.5 if args.quick else 15.0),
           "sample_s": 0.002 if args.quick else 0.02,
           "min_rep": 3 if args.quick else 5,
           "max_rep": 3 if args.quick else 31,
           "compile_reps": 1 if args.quick else 5}
    found = peers.available()
    if args.peers == "none":
        wanted = []
    elif args.peers == "all":
        wanted = list(peers.PEERS)
    else:
        wanted = [p.strip() for p in args.peers.split(",") if p.strip()]
        unknown = [p for p in wanted if p not in peers.PEERS]
        if unknown:
            raise SystemExit(f"--peers: unknown {unknown}; have {', '.join(peers.PEERS)}")
    peer_names = [p for p in wanted if found.get(p)]
    peers.configure(args.threads)
    info = header(args, found, peer_names)
    gc.collect()
    gc.freeze()

    rows = []
    for w in workloads.select(args.only):
        t0 = time.perf_counter()
        rows.append(run_workload(w, cfg, device, peer_names))
        rows[-1]["wall_s"] = time.perf_counter() - t0
        print(f"   ({w.key} took {rows[-1]['wall_s']:.1f} s)", flush=True)

    thirty = None
    if not args.only:
        x = workloads.thirty_lines_make()
        thirty = compile_times(workloads.thirty_lines, (0, 1, 2), workloads.Inputs(x),
                               cfg["compile_reps"] if args.quick else 9)
    all_met = print_summary(rows, peer_names, thirty)
    if hasattr(os, "getloadavg"):
        info["loadavg_end"] = os.getloadavg()
        print("load average at end: %.2f %.2f %.2f" % info["loadavg_end"])

    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(markdown(rows, peer_names, thirty, info))
        print(f"wrote {args.markdown}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"meta": info, "config": cfg, "rows": rows, "thirty_lines": thirty,
                       "all_targets_met": all_met}, fh, indent=1, default=str)
        print(f"wrote {args.json}")
    failing = [r["key"] for r in rows if r["status"].get("srcgrad") != "ok"]
    if failing:
        print(f"srcgrad FAILS on: {', '.join(failing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGS))
