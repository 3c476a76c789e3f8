#!/usr/bin/env python3
"""srcgrad benchmark suite: srcgrad against a hand-written gradient and against peers.

    python benchmarks/run.py                 # the full suite (a few minutes)
    python benchmarks/run.py --quick         # small sizes, few repeats (CI smoke, < 60 s)
    python benchmarks/run.py --only W5,W7    # some workloads (a group W5 or a row W5-f32)
    python benchmarks/run.py --json out.json # also write every measurement as JSON

For every workload (benchmarks/workloads.py) it first checks that srcgrad's gradient and
every installed peer's agree with the hand-written gradient, then times, in one process
with the contenders interleaved round-robin in each repeat: the forward function, the
srcgrad gradient, the hand-written gradient and the peers (PyTorch eager, JAX without
jit, jax.jit for reference, HIPS autograd; see benchmarks/peers.py).  It reports medians
with min and max, the ratios srcgrad/hand and gradient/forward, the first-compile and
cached-lookup times of ``srcgrad.grad``, and the peak memory (tracemalloc) of the
srcgrad gradient against the hand-written one.  docs/performance.md explains the method.
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


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small sizes and few repeats (smoke test, under a minute)")
    p.add_argument("--only", default=None,
                   help="comma list of workloads: groups (W5) or rows (W5-f32)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                   help="where the arrays live (cuda: hook for CuPy versions, not written yet)")
    p.add_argument("--json", default=None, metavar="PATH", help="write all results as JSON")
    p.add_argument("--markdown", default=None, metavar="PATH",
                   help="write the summary as Markdown tables (for docs/performance.md)")
    p.add_argument("--threads", type=int, default=2,
                   help="threads for every contender (BLAS, OpenMP, torch, XLA); default 2")
    p.add_argument("--peers", default="all",
                   help="comma list of peers to run (torch,jax,jax.jit,autograd), 'none' or 'all'")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds of timing per workload (default 15, quick 0.5)")
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


class CudaDevice:
    """Hook for CuPy versions of the workloads: convert inputs with cupy.asarray in
    ``prepare``, synchronize the stream in ``sync`` (called after every timed batch),
    and give the workloads an array-module-generic hand-written gradient."""

    name = "cuda"

    def __init__(self):
        raise SystemExit("--device cuda: the CuPy versions of the workloads are not written "
                         "yet (benchmarks/run.py CudaDevice is the hook); use --device cpu")


DEVICES = {"cpu": CpuDevice, "cuda": CudaDevice}

# ------------------------------------------------------------------ helpers

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
    return tuple(res) if isinstance(res, (tuple, list)) else (res,)


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


def compile_times(fn, wrt, inputs, reps, first_call_reps=None):
    """First call of sg.grad on a fresh function (compile + run), compile alone, cached lookup.

    A fresh function is the same source exec'd again into a new function object (new
    code object, new globals dict), so srcgrad's cache misses and compiles it anew.
    """
    first, compile_only = [], []
    for i in range(reps):
        if i < (first_call_reps or reps):
            f = fresh_function(fn)
            gc.collect()
            t0 = time.perf_counter()
            sg.grad(f, wrt=wrt)(*inputs.args, grad_outputs=inputs.grad_outputs)
            first.append(time.perf_counter() - t0)
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
    return {"first_call": statistics.median(first), "compile": statistics.median(compile_only),
            "lookup": statistics.median(lookups)}


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

    warmed = {n for n, st in row["status"].items() if st == "ok"} | {"hand"}
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


def print_row(row):
    stats = row["time"]
    print(f"   {'contender':<10} {'median':>10} {'min':>10} {'max':>10} {'/hand':>7} "
          f"{'/forward':>9}  {'calls x reps':>12}  agreement")
    for name, s in stats.items():
        agreement = row["agreement"].get(name)
        agreement = "-" if agreement is None else f"{agreement:.1e}"
        print(f"   {name:<10} {fmt_time(s['median']):>10} {fmt_time(s['min']):>10} "
              f"{fmt_time(s['max']):>10} {row['ratio_to_hand'][name]:>7.2f} "
              f"{row['ratio_to_forward'][name]:>9.2f}  "
              f"{str(s['calls_per_sample']) + ' x ' + str(s['repeats']):>12}  {agreement}")
    for name, status in row["status"].items():
        if status != "ok":
            print(f"   {name:<10} {status}")
    if "compile" in row:
        c = row["compile"]
        print(f"   srcgrad first call on a fresh function {fmt_time(c['first_call'])} "
              f"(compile alone {fmt_time(c['compile'])}); cached sg.grad(f).compiled "
              f"{fmt_time(c['lookup'])}")
    if row["first_call"]:
        print("   first call of each peer (tracing/compiling + one gradient): " + ", ".join(
            f"{n} {fmt_time(t)}" for n, t in row["first_call"].items()))
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
    if "memory" in row:
        m = row["memory"]["ratio"]
        out["memory"] = (m <= TARGET_MEMORY, f"{m:.2f} <= {TARGET_MEMORY}")
    if "compile" in row:
        lk = row["compile"]["lookup"]
        out["lookup"] = (lk < TARGET_LOOKUP_S, fmt_time(lk))
    return out


def print_summary(rows, peer_names, thirty):
    cols = ["srcgrad"] + [n for n in peer_names]
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
              f"{'met' if ok else 'MISSED'}); cached lookup {fmt_time(thirty['lookup'])}")
    print(f"\nall targets met: {'yes' if all_met else 'no'}")
    return all_met


def markdown(rows, peer_names, thirty, info):
    """The summary as Markdown: ratios to the hand-written gradient, times, targets."""
    cols = ["srcgrad"] + list(peer_names)
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


def main(args):
    device = DEVICES[args.device]()
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
