"""cProfile N first calls of fresh thirty_lines functions.
    PYTHONPATH=$PWD python3 .dev/prof30.py [N] [tottime|cumulative] [count]"""
import cProfile, gc, inspect, os, pstats, sys, textwrap
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import compile_time as ct, workloads
import srcgrad as sg
from srcgrad import disk_cache
disk_cache.settings.enabled = False
src = textwrap.dedent(inspect.getsource(workloads.thirty_lines))
args = workloads.thirty_lines_make()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
for _ in range(3):
    sg.grad(ct.make_function(src, "thirty_lines"), wrt=(0, 1, 2))(*args)
p = cProfile.Profile()
for _ in range(n):
    g = sg.grad(ct.make_function(src, "thirty_lines"), wrt=(0, 1, 2))
    gc.collect()
    p.enable(); g(*args); p.disable()
st = pstats.Stats(p)
st.sort_stats(sys.argv[2] if len(sys.argv) > 2 else "tottime").print_stats(int(sys.argv[3]) if len(sys.argv) > 3 else 50)
if len(sys.argv) > 4:
    for name in sys.argv[4:]:
        st.print_callers(name)
