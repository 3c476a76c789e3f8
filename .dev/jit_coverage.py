"""How many catalogue cases ``sg.grad(f, jit=True)`` compiles, and why the others fall back.

Runs the loop of tests/test_jit.py's whole-catalogue comparison (same cases, same calls,
the test suite's NUMBA_OPT=0 and SRCGRAD_JIT_RACE=0 from tests/conftest.py) and groups
the fallbacks by the construct their JitFallbackWarning names (file and line removed).
A case whose result differs from the NumPy gradient is listed as WRONG (the test fails). A
case with no warning whose calls ran the NumPy gradient all the same (a compiled call that
raised ZeroAdjoint: dispatch.py runs NumPy for it without a warning) is listed as
"ran NumPy silently", not as compiled.

    PYTHONPATH=$PWD python3 .dev/jit_coverage.py [-v] [--json out.json] [--only NAME,...]
"""

import argparse
import collections
import json
import os
import re
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import conftest  # noqa: E402  (sets NUMBA_OPT=0, SRCGRAD_JIT_RACE=0, the cache directory)
import srcgrad as sg  # noqa: E402
from srcgrad.jit import JitFallbackWarning, JitGradFunction, dispatch  # noqa: E402
from test_jit import _same  # noqa: E402


def reason(message):
    """The construct a fallback warning names, without the file, line, addresses and names."""
    text = re.sub(r"^srcgrad jit: (.*?, line \d+: )?", "", message)
    text = text.replace("; running the NumPy gradient", "")
    helper = re.match(r"(?:Numba cannot compile )?(?:the srcgrad runtime helper )?"
                      r"rt\.(\w+)( is not compiled| of )", text)
    if helper:
        return f"rt.{helper.group(1)}" + (" (no Numba form)" if helper.group(2) == " is not compiled"
                                          else " (its Numba form refuses these types)")
    found = re.search(r"No implementation of function Function\(<(?:built-in )?function (\w+)", text)
    if found:
        return f"Numba: no {found.group(1)} for these types"
    found = re.search(r"Variable '\w+' is not defined", text)
    if found:
        return "Numba: a variable not defined on some path (bytecode analysis)"
    found = re.search(r"Cannot unify (\S+) and (\S+)", text)
    if found:
        return f"Numba: cannot unify {found.group(1)} and {found.group(2)}"
    text = re.sub(r"'[^']*'", "'_'", text)          # variable names, types in quotes
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    return text[:110]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-v", action="store_true", help="list the cases of each reason")
    parser.add_argument("--json", help="write {case: reason or 'compiled'} here")
    parser.add_argument("--only", help="comma-separated catalogue function names")
    opts = parser.parse_args()
    only = set(opts.only.split(",")) if opts.only else None
    outcome, raw = {}, {}
    numpy_runs = []
    numpy_call = JitGradFunction._numpy

    def counted(self, args, grad_outputs):
        numpy_runs.append(1)
        return numpy_call(self, args, grad_outputs)
    JitGradFunction._numpy = counted
    failed_typings = []   # Numba typings that raised (each a translation again or a fallback)
    compile_ = dispatch._compile

    def compile_counted(dispatcher, args):
        try:
            return compile_(dispatcher, args)
        except Exception:
            failed_typings.append(1)
            raise
    dispatch._compile = compile_counted
    for case in conftest.ALL_CASES:
        if not case.targets or (only and case.name not in only):
            continue
        wrt = tuple(w for w, _ in case.targets)
        seed = case.seed()
        args, kwargs = case.fresh()
        want = sg.grad(case.function, wrt)(*args, grad_outputs=seed, **kwargs)
        args, kwargs = case.fresh()
        gradient = sg.grad(case.function, wrt, jit=True)
        numpy_runs.clear()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            got = gradient(*args, grad_outputs=seed, **kwargs)
            again = gradient(*case.fresh()[0], grad_outputs=seed, **case.fresh()[1])
        found = [str(w.message) for w in record if issubclass(w.category, JitFallbackWarning)]
        if not (_same(got, want) and _same(again, want)):
            outcome[case.id] = "WRONG"
        elif found:
            outcome[case.id] = reason(found[0])
            raw[case.id] = found[0]
        elif numpy_runs:
            outcome[case.id] = "ran NumPy silently (a compiled call raised ZeroAdjoint)"
        else:
            outcome[case.id] = "compiled"
    counts = collections.Counter(outcome.values())
    total = len(outcome)
    print(f"{counts['compiled']} of {total} cases compile; {total - counts['compiled']} fall back"
          + (f"; {counts['WRONG']} WRONG" if counts["WRONG"] else "")
          + f"; {len(failed_typings)} Numba typings failed in all")
    print()
    print("| cases | reason |")
    print("|---:|---|")
    for what, n in counts.most_common():
        if what != "compiled":
            print(f"| {n} | {what.replace('|', '/')} |")
            if opts.v:
                for cid, r in outcome.items():
                    if r == what:
                        print(f"|   | {cid}: {raw.get(cid, '')[:300]} |")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"outcome": outcome, "raw": raw}, f, indent=1)


if __name__ == "__main__":
    main()
