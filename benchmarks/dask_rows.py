"""srcgrad's gradients on Dask arrays (issue 16): three rows.

    python benchmarks/dask_rows.py                  # the three rows at full size
    python benchmarks/dask_rows.py --quick          # small sizes: a smoke test (seconds)
    python benchmarks/dask_rows.py --only w6,ooc    # some rows: w6, ooc, logreg
    python benchmarks/dask_rows.py --ooc-elements 2e8   # the out-of-core row at another size

* ``w6``: W6 (``sum(sin(x) exp(-x^2) + log1p(x^2))``, benchmarks/workloads.py) at 1e7
  float64 elements, ``sg.grad(w6)(x)`` on a Dask array of 4 chunks computed on the local
  threaded scheduler, against the same gradient on the NumPy array: the median times and
  their ratio (Dask's overhead: graph building and scheduling; on 2 cores the chunks also
  run in parallel). The gradient is checked against the hand-written one first.
* ``ooc``: W6 out of core, 2e9 float32 elements (8 GB of input) by default. The input is
  never in memory: it is ``dask.array.random`` data, generated chunk by chunk (chunks of
  1e7 elements, 40 MB: ``--ooc-chunk``); the gradient is consumed chunk by chunk by reductions (its sum
  and largest magnitude) computed in the same pass as the loss, so neither the input nor
  the gradient is ever whole. Reported: wall time, throughput, and the peak resident
  memory of the process during the compute (psutil, sampled every 20 ms) next to the
  input's size. The sums are checked against the hand-written gradient's on a slice.
* ``logreg``: the gradient of a logistic-regression loss with respect to NumPy weights
  (10 features) over 1e8 rows of Dask data generated on the workers, computed through a
  ``distributed.Client`` on a ``LocalCluster`` of 2 worker processes: wall time and rows
  per second, checked against the hand-written gradient (``X.T @ (sigmoid(Xw) - t) / n``)
  computed in the same pass.
"""

import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import srcgrad as sg  # noqa: E402
from workloads import w6_elementwise, w6_hand  # noqa: E402


def _need_dask():
    try:
        import dask  # noqa: F401
        import dask.array  # noqa: F401
    except ImportError:
        print("dask_rows: Dask is not installed (pip install -e '.[dask]')")
        sys.exit(2)


class PeakRSS:
    """The peak resident memory of this process while the block runs (sampled)."""

    def __init__(self, every=0.02):
        import psutil
        self.process = psutil.Process()
        self.every = every
        self.peak = 0
        self.start = 0

    def __enter__(self):
        self.start = self.process.memory_info().rss
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(self.every)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _gib(n):
    return n / 2 ** 30


def row_w6(n, repeats):
    import dask
    import dask.array as da
    x = np.random.default_rng(6).uniform(-3, 3, n)
    xd = da.from_array(x, chunks=-(-n // 4))
    grad = sg.grad(w6_elementwise)
    want = w6_hand(x)[0]
    with dask.config.set(scheduler="threads"):
        g = grad(xd)
        assert isinstance(g, da.Array) and g.chunks == xd.chunks
        got = g.compute()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        t_dask = _median_time(lambda: grad(xd).compute(), repeats)
        t_graph = _median_time(lambda: grad(xd), repeats)
    np.testing.assert_allclose(grad(x), want, rtol=1e-10, atol=1e-12)
    t_numpy = _median_time(lambda: grad(x), repeats)
    print(f"w6      W6 {n:.0e} float64, {xd.npartitions} chunks, threaded scheduler: "
          f"Dask {t_dask * 1e3:.1f} ms (graph {t_graph * 1e3:.1f} ms), NumPy {t_numpy * 1e3:.1f} ms, "
          f"Dask/NumPy {t_dask / t_numpy:.2f}x")
    return {"row": "w6", "n": n, "dask_s": t_dask, "graph_s": t_graph, "numpy_s": t_numpy,
            "ratio": t_dask / t_numpy}


def row_ooc(n, chunk):
    import dask
    import dask.array as da
    rng = da.random.default_rng(6)
    x = rng.uniform(-3, 3, size=n, chunks=chunk).astype(np.float32)
    value, g = sg.value_and_grad(w6_elementwise)(x)
    assert isinstance(g, da.Array) and g.chunks == x.chunks and g.dtype == np.float32
    # The same sums from the hand-written gradient on one chunk's slice, for a check.
    part = slice(0, min(chunk, n))
    with dask.config.set(scheduler="threads"), PeakRSS() as mem:
        start = time.perf_counter()
        loss, gsum, gmax, gpart = dask.compute(value, g.sum(dtype=np.float64), abs(g).max(), g[part])
        wall = time.perf_counter() - start
    xpart = x[part].compute()
    np.testing.assert_allclose(gpart, w6_hand(xpart)[0], rtol=2e-4, atol=2e-4)
    in_bytes = n * 4
    print(f"ooc     W6 {n:.0e} float32 ({_gib(in_bytes):.1f} GiB input, {x.npartitions} chunks of "
          f"{chunk:.0e}), threaded: {wall:.1f} s, {n / wall / 1e6:.0f} M elements/s; peak RSS "
          f"{_gib(mem.peak):.2f} GiB (start {_gib(mem.start):.2f} GiB) = "
          f"{mem.peak / in_bytes:.3f} of the input; loss {float(loss):.6g}, sum(g) {float(gsum):.6g}, "
          f"max|g| {float(gmax):.4g}")
    return {"row": "ooc", "n": n, "chunk": chunk, "wall_s": wall, "peak_rss": mem.peak,
            "start_rss": mem.start, "input_bytes": in_bytes}


def logistic_loss(w, x, t):
    z = x @ w
    return np.mean(np.logaddexp(0.0, z) - t * z)


def row_logreg(rows, features, chunk):
    import dask
    import dask.array as da
    import distributed
    w = np.random.default_rng(0).standard_normal(features) * 0.1
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        rng = da.random.default_rng(7)
        x = rng.standard_normal((rows, features), chunks=(chunk, features))
        w_true = np.linspace(-1.0, 1.0, features)
        t = (rng.random(rows, chunks=chunk) < 1 / (1 + da.exp(-(x @ w_true)))).astype(np.float64)
        g = sg.grad(logistic_loss)(w, x, t)     # lazy: a reduction over the chunks
        assert isinstance(g, da.Array) and g.shape == (features,)
        hand = x.T @ (1 / (1 + da.exp(-(x @ w))) - t) / rows
        start = time.perf_counter()
        got, want = client.compute([g, hand], sync=True)
        wall = time.perf_counter() - start
        workers = len(client.scheduler_info()["workers"])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    print(f"logreg  logistic regression, {rows:.0e} rows x {features} features (generated on the "
          f"workers, {x.npartitions} chunks), LocalCluster {workers} worker processes: "
          f"{wall:.1f} s for the gradient and the hand-written one in one pass, "
          f"{rows / wall / 1e6:.1f} M rows/s")
    return {"row": "logreg", "rows": rows, "features": features, "wall_s": wall}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--only", default="w6,ooc,logreg")
    parser.add_argument("--ooc-elements", type=float, default=None)
    parser.add_argument("--ooc-chunk", type=float, default=1e7)
    parser.add_argument("--logreg-rows", type=float, default=None)
    args = parser.parse_args(argv)
    _need_dask()
    only = set(args.only.split(","))
    results = []
    if "w6" in only:
        results.append(row_w6(10_000 if args.quick else 10_000_000, 3 if args.quick else 5))
    if "ooc" in only:
        n = int(args.ooc_elements or (200_000 if args.quick else 2e9))
        results.append(row_ooc(n, min(n, 50_000 if args.quick else int(args.ooc_chunk))))
    if "logreg" in only:
        rows = int(args.logreg_rows or (20_000 if args.quick else 1e8))
        results.append(row_logreg(rows, 10, min(rows, 5_000 if args.quick else 2_500_000)))
    return results


if __name__ == "__main__":
    main()
