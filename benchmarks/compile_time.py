"""Compile time of srcgrad's gradients against the length of the function (issue 15).

Generates functions of 10, 30, 100, 300 and 1,000 user statements, in two shapes:

* ``straight``: straight-line array code, each statement reading earlier ones;
* ``loop``: the same statements in the body of a ``for`` loop (the tape records them).

For each it times, on a fresh function object (new code, new globals: srcgrad's
in-memory cache is cold, and the on-disk cache is switched off unless ``--disk``):

* first call: ``sg.grad(f, wrt)(*args)``, compile plus one gradient;
* second call: the next call of the same gradient (it should compile nothing);
* per statement: first call / statements.

It also times ``thirty_lines`` (benchmarks/workloads.py, the function the issue's
"first compile of the 30-line function" names) and, with ``--disk``, the first call in a
second process that finds the function in the on-disk cache.

Each repetition compiles the same text again, so caches keyed by a variable's name (the
namer's, the template shapes') are warm from the second function on, as they are not for
a user's first compile of a new function. ``thirty_lines`` is therefore timed twice: with
its names as written, and with fresh names (every local, parameter and the function's own
name given a new suffix per repetition, ``fresh_names``); ``--fresh`` does the same for
the generated functions' rows.

    python benchmarks/compile_time.py            # 10 .. 1000 statements, 3 repetitions
    python benchmarks/compile_time.py --quick    # 10 and 30 statements, 1 repetition
    python benchmarks/compile_time.py --profile straight 300   # cProfile of one compile
    python benchmarks/compile_time.py --cpu      # CPU time, not wall time (a shared machine)
    python benchmarks/compile_time.py --fresh    # also the rows with fresh names
"""

import argparse
import ast
import gc
import json
import linecache
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import srcgrad as sg  # noqa: E402
from srcgrad import disk_cache  # noqa: E402

SIZES = (10, 30, 100, 300, 1000)
QUICK_SIZES = (10, 30)
TARGET_PER_STATEMENT_S = 0.001   # at 1,000 statements
TARGET_THIRTY_S = 0.025          # thirty_lines' first call

# One statement per template, cycling; {a} and {b} are earlier variables, {k} a constant.
_TEMPLATES = (
    "{v} = {a} * w + {k}",
    "{v} = np.sin({a}) * {b}",
    "{v} = {a} + {k} * {b}",
    "{v} = np.tanh({a}) - {b}",
    "{v} = np.exp(-{a} * {a}) + {b}",
    "{v} = {a} * {b} - {k}",
    "{v} = np.log1p({a} * {a}) + {b}",
    "{v} = np.maximum({a}, 0.0) * {b}",
)


def make_source(n, shape="straight"):
    """The source of a function of ``n`` user statements (the return counted)."""
    lines = ["def f(x, w, n):", "    h0 = x * w"]
    body = []
    names = ["h0"]
    for i in range(1, n - 1):
        template = _TEMPLATES[i % len(_TEMPLATES)]
        a = names[-1]
        b = names[max(0, len(names) - 1 - (i * 7) % 5)]
        v = f"h{i}"
        body.append(template.format(v=v, a=a, b=b, k=f"{0.1 + (i % 9) * 0.05:.2f}"))
        names.append(v)
    if shape == "straight":
        lines += ["    " + s for s in body]
        lines.append(f"    return np.sum({names[-1]})")
    elif shape == "loop":   # the loop statement and the carried value count too
        lines[1:1] = []
        body = body[:-1] if len(body) > 1 else body
        lines.append("    for i in range(n):")
        lines += ["        " + s for s in body]
        lines.append(f"        h0 = 0.5 * {names[len(body)]}")
        lines.append("    return np.sum(h0)")
    else:
        raise ValueError(shape)
    return "\n".join(lines) + "\n"


_counter = [0]


def make_function(source, name="f"):
    """A fresh function object of ``source`` (its own file name, so its own source)."""
    _counter[0] += 1
    filename = f"<srcgrad-compile-bench-{os.getpid()}-{_counter[0]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def fresh_names(source, tag):
    """``source`` (one function) with its name, parameters and locals renamed ``<name>_<tag>``:
    the same code under names no earlier compile saw. Returns (source, function name)."""
    tree = ast.parse(source)
    fn = tree.body[0]
    local = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
    local |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in local:
            node.id = f"{node.id}_{tag}"
        elif isinstance(node, ast.arg):
            node.arg = f"{node.arg}_{tag}"
    fn.name = f"{fn.name}_{tag}"
    return ast.unparse(tree) + "\n", fn.name


def _args():
    rng = np.random.default_rng(0)
    return (rng.standard_normal(8), rng.standard_normal(8), 2)


# The clock: wall time, or with ``--cpu`` this process's CPU time (a machine shared with
# other processes stretches the wall time of a compile by their load, not its CPU time).
clock = [time.perf_counter]


def time_first_second(fn, args, wrt=(0, 1)):
    """(first call, second call, third call) of ``sg.grad(fn, wrt)`` in seconds."""
    gc.collect()
    g = sg.grad(fn, wrt=wrt)
    times = []
    now = clock[0]
    for _ in range(3):
        t0 = now()
        g(*args)
        times.append(now() - t0)
    return times


def measure(sizes, reps, shapes=("straight", "loop"), fresh=False):
    """Rows of first, second and third call per shape and size (``fresh``: each
    repetition's function under fresh names, ``fresh_names``)."""
    rows = []
    args = _args()
    for shape in shapes:
        for n in sizes:
            src = make_source(n, shape)
            runs = [time_first_second(make_function(*fresh_names(src, _counter[0] + 1))
                                      if fresh else make_function(src), args)
                    for _ in range(reps)]
            first = statistics.median(r[0] for r in runs)
            second = statistics.median(r[1] for r in runs)
            third = statistics.median(r[2] for r in runs)
            rows.append({"shape": shape + (" (fresh names)" if fresh else ""), "statements": n, "first_call": first,
                         "second_call": second, "third_call": third,
                         "per_statement": first / n})
    return rows


def thirty_lines(reps, fresh=False):
    """First and second call of thirty_lines on a fresh function object (``fresh``:
    under fresh names each repetition, ``fresh_names``)."""
    import workloads
    import inspect
    import textwrap
    src = textwrap.dedent(inspect.getsource(workloads.thirty_lines))
    rng = np.random.default_rng(30)
    args = (rng.standard_normal(16), rng.standard_normal(16), rng.standard_normal(16), 3)
    runs = [time_first_second(make_function(*fresh_names(src, _counter[0] + 1)) if fresh
                              else make_function(src, "thirty_lines"), args, (0, 1, 2))
            for _ in range(reps)]
    return {"first_call": statistics.median(r[0] for r in runs),
            "second_call": statistics.median(r[1] for r in runs),
            "min_first_call": min(r[0] for r in runs)}


_CHILD = r"""
import json, sys, time, linecache
t_import = time.perf_counter()
import numpy as np
import srcgrad as sg
t_imported = time.perf_counter()
src = sys.argv[1]
filename = "<srcgrad-compile-bench-disk>"
linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
ns = {"np": np}
exec(compile(src, filename, "exec"), ns)
rng = np.random.default_rng(0)
args = (rng.standard_normal(8), rng.standard_normal(8), 2)
t0 = time.perf_counter()
g = sg.grad(ns["f"], wrt=(0, 1))
g(*args)
t1 = time.perf_counter()
g(*args)
t2 = time.perf_counter()
from srcgrad import disk_cache
print(json.dumps({"first_call": t1 - t0, "second_call": t2 - t1, "import": t_imported - t_import,
                  "hits": disk_cache.stats["hits"]}))
"""


def disk_rows(sizes, reps):
    """First call in a new process: with a cold on-disk cache, then with a warm one."""
    rows = []
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, SRCGRAD_CACHE="1", SRCGRAD_CACHE_DIR=cache_dir,
                   PYTHONPATH=os.pathsep.join([os.path.dirname(HERE)]
                                              + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
        for n in sizes:
            src = make_source(n, "straight")

            def child():
                out = subprocess.run([sys.executable, "-c", _CHILD, src], env=env, check=True,
                                     capture_output=True, text=True).stdout
                return json.loads(out.strip().splitlines()[-1])
            cold = child()
            warm = [child() for _ in range(reps)]
            rows.append({"statements": n, "cold_first_call": cold["first_call"],
                         "warm_hits": min(w["hits"] for w in warm),
                         "warm_first_call": statistics.median(w["first_call"] for w in warm),
                         "warm_second_call": statistics.median(w["second_call"] for w in warm)})
    return rows


def fmt(seconds):
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} us"


def report(rows, thirty, disk, thirty_fresh=None):
    print("| shape | statements | first call | second call | third call | first call per statement |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['shape']} | {r['statements']} | {fmt(r['first_call'])} | "
              f"{fmt(r['second_call'])} | {fmt(r['third_call'])} | {fmt(r['per_statement'])} |")
    print(f"\nthirty_lines (benchmarks/workloads.py): first call {fmt(thirty['first_call'])} "
          f"(best {fmt(thirty['min_first_call'])}; target {fmt(TARGET_THIRTY_S)}), "
          f"second call {fmt(thirty['second_call'])}")
    if thirty_fresh:
        print(f"thirty_lines under fresh names: first call {fmt(thirty_fresh['first_call'])} "
              f"(best {fmt(thirty_fresh['min_first_call'])}), "
              f"second call {fmt(thirty_fresh['second_call'])}")
    largest = [r for r in rows if r["statements"] == max(x["statements"] for x in rows)]
    for r in largest:
        ok = r["per_statement"] <= TARGET_PER_STATEMENT_S
        print(f"{r['shape']} at {r['statements']} statements: {fmt(r['per_statement'])} per "
              f"statement ({'met' if ok else 'not met'}: target {fmt(TARGET_PER_STATEMENT_S)})")
    if disk:
        print("\nOn-disk cache, first call in a new process (straight-line functions):")
        print("| statements | cold cache | warm cache | second call |")
        print("|---|---|---|---|")
        for r in disk:
            print(f"| {r['statements']} | {fmt(r['cold_first_call'])} | "
                  f"{fmt(r['warm_first_call'])} | {fmt(r['warm_second_call'])} |")


def profile(shape, n, sort="cumulative", limit=40):
    import cProfile
    import pstats
    fn = make_function(make_source(n, shape))
    args = _args()
    g = sg.grad(fn, wrt=(0, 1))
    prof = cProfile.Profile()
    prof.enable()
    g(*args)
    g(*args)
    prof.disable()
    pstats.Stats(prof).sort_stats(sort).print_stats(limit)


def main(argv=None):
    numpy_errors = np.seterr(all="ignore")   # the generated values overflow: not the point
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 and 30 statements, once")
    parser.add_argument("--sizes", type=int, nargs="*", help="statement counts")
    parser.add_argument("--reps", type=int, help="repetitions per size (median reported)")
    parser.add_argument("--disk", action="store_true",
                        help="also time a second process that finds the gradient on disk")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--cpu", action="store_true",
                        help="time CPU time of this process instead of wall time (a shared machine)")
    parser.add_argument("--fresh", action="store_true",
                        help="also time the generated functions under fresh names")
    parser.add_argument("--profile", nargs=2, metavar=("SHAPE", "N"),
                        help="cProfile one first and second call instead")
    args = parser.parse_args(argv)
    disk_cache.settings.enabled = False   # the compile itself is measured, not the disk
    if args.cpu:
        clock[0] = time.process_time
    if args.profile:
        profile(args.profile[0], int(args.profile[1]))
        return 0
    sizes = tuple(args.sizes) if args.sizes else (QUICK_SIZES if args.quick else SIZES)
    reps = args.reps or (1 if args.quick else 3)
    make_function(make_source(10))   # imports and first-use costs out of the first row
    time_first_second(make_function(make_source(10)), _args())
    rows = measure(sizes, reps)
    if args.fresh:
        rows += measure(sizes, reps, fresh=True)
    thirty = thirty_lines(max(reps, 3) if not args.quick else 1)
    thirty_fresh = thirty_lines(max(reps, 3) if not args.quick else 1, fresh=True)
    disk = disk_rows(sizes if not args.quick else (30,), 1 if args.quick else 3) \
        if args.disk or args.quick else []
    if args.cpu:
        print("(compile times: CPU time of this process, --cpu)\n")
    report(rows, thirty, disk, thirty_fresh)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "thirty_lines": thirty, "thirty_lines_fresh": thirty_fresh,
                       "disk": disk}, f, indent=1)
    np.seterr(**numpy_errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
