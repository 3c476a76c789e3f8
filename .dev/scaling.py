"""cProfile a first call at two sizes and list functions by how their cumulative time grows
(superlinear passes show a ratio above the size ratio).
    PYTHONPATH=$PWD python3 .dev/scaling.py straight 300 1000"""
import cProfile, gc, os, pstats, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import compile_time as ct
import srcgrad as sg
from srcgrad import disk_cache
disk_cache.settings.enabled = False

def prof(shape, n):
    f = ct.make_function(ct.make_source(n, shape))
    args = ct._args()
    g = sg.grad(f, wrt=(0, 1))
    gc.collect()
    p = cProfile.Profile()
    p.enable(); g(*args); p.disable()
    st = pstats.Stats(p)
    return {k: (v[2], v[3], v[1]) for k, v in st.stats.items()}, st.total_tt

shape, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
prof(shape, 10)
sa, ta = prof(shape, a)
sb, tb = prof(shape, b)
print(f"total {ta:.2f}s -> {tb:.2f}s ratio {tb/ta:.2f} (size ratio {b/a:.2f})")
rows = []
for k, (tt, ct_, nc) in sb.items():
    ta_, cta, nca = sa.get(k, (0, 0, 0))
    rows.append((ct_, cta, tt, ta_, nc, nca, k))
key = sys.argv[4] if len(sys.argv) > 4 else "cum"
rows.sort(key=lambda r: -(r[0] if key == "cum" else r[2]))
print(f"{'cum_b':>7} {'cum_a':>7} {'r':>5} {'tot_b':>7} {'tot_a':>7} {'r':>5} {'calls_b':>8} {'calls_a':>8}")
for ct_, cta, tt, ta_, nc, nca, k in rows[:70]:
    print(f"{ct_:7.3f} {cta:7.3f} {ct_/max(cta,1e-9):5.1f} {tt:7.3f} {ta_:7.3f} {tt/max(ta_,1e-9):5.1f} {nc:8d} {nca:8d} {os.path.basename(k[0])}:{k[1]}({k[2]})")
print("\n--- excess over linear (cum_b - ratio*cum_a), own time excess")
ratio = b / a
ex = sorted(rows, key=lambda r: -(r[2] - ratio * r[3]))
for ct_, cta, tt, ta_, nc, nca, k in ex[:30]:
    print(f"own excess {tt - ratio*ta_:7.3f}  tot_b {tt:7.3f} tot_a {ta_:7.3f} calls {nc}/{nca} {os.path.basename(k[0])}:{k[1]}({k[2]})")
