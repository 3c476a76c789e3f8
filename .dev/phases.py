"""CPU time of some compile steps over N fresh thirty_lines (or generated) first calls.
    PYTHONPATH=$PWD python3 .dev/phases.py [N] [straight|loop SIZE]"""
import gc, importlib, inspect, os, sys, textwrap, time, collections
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import compile_time as ct, workloads
import srcgrad as sg
from srcgrad import disk_cache
disk_cache.settings.enabled = False
acc = collections.Counter()
SPOTS = ["srcgrad.pipeline:front_end", "srcgrad.transform.methods:transform", "srcgrad.transform.reverse:build",
         "srcgrad.transform.reverse:_optimize", "srcgrad.pipeline:compose_gradient", "srcgrad.parse:parse_function",
         "srcgrad.optimize.driver:transform_forward", "srcgrad.codegen.emit:to_source", "srcgrad.analysis.liveness:analyze",
         "srcgrad.transform.tape:pack", "srcgrad.transform.tape:prune", "srcgrad.optimize.dead:eliminate", "srcgrad.optimize.temporaries:run",
         "srcgrad.optimize.scalar_items:run", "srcgrad.pipeline:_activity", "srcgrad.transform.anf:transform"]
def wrap(mod, name):
    m = importlib.import_module(mod); f = getattr(m, name)
    def w(*a, **k):
        t = time.process_time()
        try: return f(*a, **k)
        finally: acc[f"{mod.split('.')[-1]}.{name}"] += time.process_time() - t
    w.__wrapped__ = f
    setattr(m, name, w)
    # also rebind in modules that imported it by name
    for other in list(sys.modules.values()):
        if other and getattr(other, "__name__", "").startswith("srcgrad") and getattr(other, name, None) is f:
            setattr(other, name, w)
for s in SPOTS:
    wrap(*s.split(":"))
n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
if len(sys.argv) > 3:
    src, fname, args, wrt = ct.make_source(int(sys.argv[3]), sys.argv[2]), "f", ct._args(), (0, 1)
else:
    src, fname, args, wrt = textwrap.dedent(inspect.getsource(workloads.thirty_lines)), "thirty_lines", workloads.thirty_lines_make(), (0, 1, 2)
for _ in range(2):
    sg.grad(ct.make_function(src, fname), wrt=wrt)(*args)
acc.clear()
total = 0.0
for _ in range(n):
    g = sg.grad(ct.make_function(src, fname), wrt=wrt)
    gc.collect()
    t = time.process_time(); g(*args); total += time.process_time() - t
print(f"first call: {1000*total/n:.1f} ms")
for k, v in sorted(acc.items(), key=lambda kv: -kv[1]):
    print(f"  {k:40s} {1000*v/n:7.2f} ms  {100*v/total:5.1f}%")
