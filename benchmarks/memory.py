"""RSS growth of a process that compiles many distinct gradients (issue 15).

``python benchmarks/memory.py [N]`` compiles and runs the gradients of ``N`` small functions,
each a fresh code object (``exec`` of its own source), and prints the resident set size
before and after, per gradient, and what srcgrad's caches hold at the end. The gradients are
dropped by the caller: what remains is what the caches keep.
"""

import gc
import linecache
import os
import sys
import time

import numpy as np

import srcgrad as sg


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def make(i):
    name = f"f_{i}" if i >= 0 else f"warm_{-i}"
    source = (f"def {name}(x, a):\n"
              f"    y = np.sin(x * a) + {i % 97 + 1}.0 * x\n"
              f"    return np.sum(y * y) / {abs(i) + 1}.0\n")
    filename = f"<memory bench {i}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def main(n=5000):
    x = np.linspace(0.1, 1.0, 5)
    for i in range(20):   # warm up: imports, rule templates, the first compiles
        sg.grad(make(-1 - i), wrt=(0, 1))(x, 0.5)
        sg.jvp(make(-1 - i), (x, 0.5), (x, 0.0))
    gc.collect()
    before = rss_mb()
    start = time.perf_counter()
    for i in range(n):
        f = make(i)
        sg.grad(f, wrt=(0, 1))(x, 0.5)
        sg.grad(f, wrt=(0, 1))(x, 0.5)   # the second call runs the hot call
        sg.jvp(f, (x, 0.5), (x, 0.0))
    gc.collect()
    after = rss_mb()
    elapsed = time.perf_counter() - start
    from srcgrad import api, forward_api
    from srcgrad.codegen import loader
    print(f"{n} gradients in {elapsed:.1f} s: RSS {before:.0f} MB -> {after:.0f} MB, "
          f"{(after - before) * 1024 / n:.1f} KB per gradient")
    print(f"api cache {len(api._cache)}, forward cache {len(forward_api._cache)}, "
          f"linecache {len(linecache.cache)}, loader origins {len(loader._origins)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
