"""``sg.grad(f, jit=True)`` on a gradient loaded from the on-disk cache (disk_cache.py).

A loaded gradient has no trees (its ``gradient_forward`` is a placeholder until
pipeline.with_trees compiles them again); the jit must translate and run it exactly as
it does a gradient just compiled: the same Numba source, the same numbers, the same
fallbacks. Skipped when Numba is not installed.
"""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import srcgrad as sg  # noqa: E402
from srcgrad import api, disk_cache  # noqa: E402
from srcgrad.jit import Refused  # noqa: E402

from conftest import ALL_CASES  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Catalogue cases Numba compiles (loops, branches, a helper, a seeded output) and the
# benchmark's W8 (the row the bug was seen on), seeded too.
CASES = ("while_break", "helper_in_loop", "seed_while_doubling", "euler_integration")

SCRIPT = r'''
import json, sys, warnings
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import numpy as np
import srcgrad as sg
from conftest import ALL_CASES   # (points the cache at the suite's directory: set it back)
from srcgrad import disk_cache
from srcgrad.jit import JitFallbackWarning
from workloads import w8_thermal, w8_make
disk_cache.settings.directory = sys.argv[4]
jit = sys.argv[5] == "jit"

def flat(r):
    return [flat(v) for v in r] if isinstance(r, tuple) else np.asarray(r).tolist()

runs = [(c.id, c.function, tuple(w for w, _ in c.targets), c.fresh, c.seed())
        for c in ALL_CASES if c.id in sys.argv[3].split(",")]
runs.append(("W8", w8_thermal, 0, lambda: (w8_make("quick").args, {}), None))
runs.append(("W8", w8_thermal, 0, lambda: (w8_make("quick").args, {}), 2.0))
out = {}
for name, fn, wrt, fresh, seed in runs:
    g = sg.grad(fn, wrt, jit=True)
    args, kwargs = fresh()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = (g if jit else g.gradient)(*args, grad_outputs=seed, **kwargs)
    fell = [str(w.message) for w in record if issubclass(w.category, JitFallbackWarning)]
    out[f"{name} {seed is None}"] = {"grad": flat(got), "fallbacks": fell,
                                     "source": g.jit_source(*args, grad_outputs=seed)}
print(json.dumps({"runs": out, "stats": disk_cache.stats}))
'''


def _run(folder, jit):
    env = dict(os.environ, PYTHONPATH=ROOT, SRCGRAD_CACHE="1", PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, str(folder / "script.py"), os.path.join(ROOT, "tests"),
                           os.path.join(ROOT, "benchmarks"), ",".join(CASES),
                           str(folder / "cache"), jit], env=env, capture_output=True, text=True,
                          cwd=str(folder))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_runs_the_jit_on_loaded_gradients_as_the_first_compiled_them(tmp_path):
    """The first process compiles (the NumPy gradient, the jit's translation), the second
    loads every gradient and runs it compiled by Numba: the same source, no fallback,
    the NumPy gradient's numbers."""
    (tmp_path / "script.py").write_text(SCRIPT)
    first = _run(tmp_path, "numpy")
    assert first["stats"]["hits"] == 0 and first["stats"]["stores"] >= len(CASES) + 1
    second = _run(tmp_path, "jit")
    assert second["stats"]["misses"] == 0 and second["stats"]["hits"] >= len(CASES) + 1
    assert len(first["runs"]) == len(CASES) + 2
    for name, run in first["runs"].items():
        got = second["runs"][name]
        assert not got["fallbacks"], (name, got["fallbacks"])
        assert got["source"] == run["source"], name
        pairs = zip(got["grad"], run["grad"]) if isinstance(run["grad"], list) and \
            isinstance(run["grad"][0], list) else \
            [(got["grad"], run["grad"])]   # several gradients, or one
        for a, b in pairs:
            assert np.allclose(a, b, rtol=1e-12, atol=1e-14), name


def _translation(case, seed):
    """The jit source of ``case`` (or its refusal), from a fresh gradient of api's cache."""
    api._cache.clear()
    args, kwargs = case.fresh()
    gradient = sg.grad(case.function, tuple(w for w, _ in case.targets), jit=True)
    try:
        return gradient.jit_source(*args, grad_outputs=seed, **kwargs)
    except Refused as exc:
        return ("refused", exc.construct, exc.where())
    except TypeError as exc:   # keyword arguments: jit_source takes none
        return ("error", str(exc))


@pytest.mark.slow
def test_every_catalogue_gradient_translates_the_same_loaded_from_disk(tmp_path, monkeypatch):
    """Grad's common call (the gradient-only forward sweep, the known seed): the
    translation of a loaded gradient is the compiled one's, refusals included."""
    monkeypatch.setattr(disk_cache.settings, "directory", str(tmp_path / "c"))
    monkeypatch.setattr(disk_cache.settings, "enabled", True)
    monkeypatch.setattr(api, "_cache", {})
    differ, loaded = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in ALL_CASES:
            if not case.targets:
                continue
            seed = case.seed()
            compiled = _translation(case, seed)   # compiled and stored
            hits = disk_cache.stats["hits"]
            again = _translation(case, seed)      # loaded
            loaded += disk_cache.stats["hits"] > hits
            if again != compiled:
                differ.append((case.id, compiled, again))
    assert not differ, differ[:3]
    assert loaded >= 150, loaded   # (a few gradients are not cacheable)
