"""Dump the generated source of many functions, to check that a compile-time change leaves
the generated code byte-identical (issue 15's rounds).

    PYTHONPATH=$PWD python3 .dev/dump_sources.py OUT.txt [--quick]
    SRCGRAD_CHECK_NAME_SETS=1 PYTHONPATH=$PWD python3 .dev/dump_sources.py OUT.txt

Dumps, each under a ``=== key`` line: for every catalogue case (tests/conftest.py) and each
differentiable argument the generic code, the sweeps and the composed gradient for the
case's arguments and the tangent program; the composed gradient for the case's full wrt;
the workloads (benchmarks/workloads.py); the generated functions of
benchmarks/compile_time.py at 10-100 statements; and random programs of
tests/test_random_programs.py's generator (derandomized). A refusal is dumped as its type
and message.
"""

import linecache
import os
import sys
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
os.environ["SRCGRAD_CACHE"] = "0"

import numpy as np  # noqa: E402

import srcgrad as sg  # noqa: E402
from srcgrad import disk_cache  # noqa: E402

disk_cache.settings.enabled = False
if os.environ.get("SRCGRAD_CHECK_NAME_SETS") == "1":
    import srcgrad.ast_util
    srcgrad.ast_util.CHECK_NAME_SETS = True

out = {}


def record(key, thunk):
    try:
        text = thunk()
    except sg.SrcgradError as exc:
        text = f"REFUSED {type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001  (a crash is dumped too: it must not change)
        text = f"ERROR {type(exc).__name__}: {exc}\n" + "".join(
            traceback.format_exception_only(type(exc), exc))
    out[key] = text


def make_function(source, name, filename):
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def catalogue(quick):
    import conftest
    cases = conftest.ALL_CASES[::7] if quick else conftest.ALL_CASES
    for case in cases:
        args, kwargs = case.fresh()
        f = case.function
        for wrt, pname in case.targets:
            key = f"cat/{case.id}/{pname}"
            record(key + "/generic", lambda: sg.source(f, wrt))
            if not kwargs:
                record(key + "/sweeps", lambda: sg.source(f, wrt, args=args))
                record(key + "/composed", lambda: sg.source(f, wrt, args=args, composed=True))
            if not quick:
                record(key + "/jvp", lambda: sg.source(f, wrt, mode="jvp"))
        if len(case.targets) > 1 and not kwargs:
            wrts = tuple(w for w, _ in case.targets)
            record(f"cat/{case.id}/all/composed",
                   lambda: sg.source(f, wrts, args=args, composed=True))


def workloads():
    import workloads as w
    for load in w.WORKLOADS:
        inputs = load.make("quick")
        record(f"work/{load.key}/generic", lambda: sg.source(load.fn, load.wrt))
        record(f"work/{load.key}/composed",
               lambda: sg.source(load.fn, load.wrt, args=inputs.args, composed=True))
        record(f"work/{load.key}/sweeps", lambda: sg.source(load.fn, load.wrt, args=inputs.args))
    args = w.thirty_lines_make()
    record("work/thirty_lines/generic", lambda: sg.source(w.thirty_lines, (0, 1, 2)))
    record("work/thirty_lines/composed",
           lambda: sg.source(w.thirty_lines, (0, 1, 2), args=args, composed=True))
    record("work/thirty_lines/sweeps", lambda: sg.source(w.thirty_lines, (0, 1, 2), args=args))


def generated(quick):
    import compile_time as ct
    args = ct._args()
    for shape in ("straight", "loop"):
        for n in ((10, 30) if quick else (10, 20, 30, 50, 100)):
            src = ct.make_source(n, shape)
            f = make_function(src, "f", f"<dump-{shape}-{n}>")
            key = f"gen/{shape}/{n}"
            record(key + "/generic", lambda: sg.source(f, (0, 1)))
            record(key + "/composed", lambda: sg.source(f, (0, 1), args=args, composed=True))
            record(key + "/sweeps", lambda: sg.source(f, (0, 1), args=args))


def random_programs(quick):
    from hypothesis import HealthCheck, given, settings
    import test_random_programs as trp
    sources = []
    for kind, count in (({}, 20 if quick else 120), ({"aliasing": True}, 0 if quick else 60),
                        ({"containers": True}, 0 if quick else 30)):
        if not count:
            continue

        @settings(max_examples=count, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(trp.programs(**kind), trp.inputs)
        def run(program, args):
            sources.append((program, args))
        run()
    for i, ((source, name), args) in enumerate(sources):
        try:
            f = make_function(source, name, f"<dump-random-{i}>")
        except Exception:  # noqa: BLE001
            continue
        key = f"rand/{i}"
        record(key + "/generic", lambda: sg.source(f, (0, 1, 2)))
        record(key + "/composed", lambda: sg.source(f, (0, 1, 2), args=args, composed=True))


def refusals():
    """Every module-level function of the refusal tests, asked for its generic code."""
    import inspect
    for module_name in ("test_errors", "test_fence", "test_adversarial_idioms"):
        try:
            module = __import__(module_name)
        except Exception:  # noqa: BLE001
            continue
        for name, f in vars(module).items():
            if (inspect.isfunction(f) and not name.startswith(("test_", "_"))
                    and f.__module__ == module.__name__):
                params = list(inspect.signature(f).parameters)
                if params and params[0] in ("x", "a", "y"):
                    record(f"refuse/{module_name}/{name}", lambda: sg.source(f, 0))


def main():
    path = sys.argv[1]
    quick = "--quick" in sys.argv
    catalogue(quick)
    refusals()
    workloads()
    generated(quick)
    random_programs(quick)
    with open(path, "w") as handle:
        for key, text in out.items():
            handle.write(f"=== {key}\n{text.replace(ROOT, '<ROOT>')}\n")
    refused = sum(t.startswith("REFUSED") for t in out.values())
    errors = sum(t.startswith("ERROR") for t in out.values())
    print(f"{len(out)} sources ({refused} refusals, {errors} errors) -> {path}")


if __name__ == "__main__":
    main()
