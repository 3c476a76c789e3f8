"""CPU time of each optimizer pass, how often it runs and how often it changes the sweep,
over N fresh first calls of thirty_lines (or a generated function).
    PYTHONPATH=$PWD python3 .dev/passes.py [N] [straight|loop SIZE]"""
import gc, inspect, os, sys, textwrap, time, collections
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import compile_time as ct, workloads
import srcgrad as sg
from srcgrad import disk_cache
from srcgrad.optimize import driver
disk_cache.settings.enabled = False
acc = collections.Counter(); calls = collections.Counter(); changes = collections.Counter()
mods = set(driver.PREPARE + driver.FIXED_POINT + driver.FINISH + driver.FORWARD + driver.FORWARD_LAST)
for m in mods:
    f = m.run
    def w(body, facts, f=f, m=m):
        t = time.process_time()
        try:
            r = f(body, facts)
            changes[m.__name__.split('.')[-1]] += bool(r)
            return r
        finally:
            acc[m.__name__.split('.')[-1]] += time.process_time() - t; calls[m.__name__.split('.')[-1]] += 1
    m.run = w
n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
if len(sys.argv) > 3:
    src, fname, args, wrt = ct.make_source(int(sys.argv[3]), sys.argv[2]), "f", ct._args(), (0, 1)
else:
    src, fname, args, wrt = textwrap.dedent(inspect.getsource(workloads.thirty_lines)), "thirty_lines", workloads.thirty_lines_make(), (0, 1, 2)
for _ in range(2):
    sg.grad(ct.make_function(src, fname), wrt=wrt)(*args)
acc.clear(); calls.clear(); changes.clear()
total = 0.0
for _ in range(n):
    g = sg.grad(ct.make_function(src, fname), wrt=wrt)
    gc.collect()
    t = time.process_time(); g(*args); total += time.process_time() - t
print(f"first call: {1000*total/n:.1f} ms")
for k, v in sorted(acc.items(), key=lambda kv: -kv[1]):
    print(f"  {k:25s} {1000*v/n:7.2f} ms  {100*v/total:5.1f}%  runs {calls[k]/n:.1f} changed {changes[k]/n:.1f}")
