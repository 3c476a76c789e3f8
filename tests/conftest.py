"""Shared fixtures: the catalogue's parametrisation and the array backends.

``catalogue_case`` is parametrised over every (function, input set) of
tests/functions.py; ``catalogue_wrt_case`` over every (function, input set,
differentiable argument). Inputs follow the argument-name contract written
in functions.py's docstring.
"""

import atexit
import inspect
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The jit tests check what the compiled gradients compute, not how fast they run: LLVM at
# optimisation level 0 compiles them in about half the time (the jit test files took
# 93 s against 163 s), and gives the same numbers (no fast-math, so no reordering or
# contraction at any level). NUMBA_OPT=3 in the environment tests what users run.
os.environ.setdefault("NUMBA_OPT", "0")
# jit=True keeps the NumPy gradient where it ran faster on the first call (dispatch.py's
# _numpy_faster): timings on a shared machine, at -O0, would make the tests of what the
# compiled code computes depend on load. test_jit_entry.py tests the choice itself.
os.environ.setdefault("SRCGRAD_JIT_RACE", "0")

# The on-disk cache of gradients (srcgrad/disk_cache.py) stays on, as for users, but in a
# directory of this run's own: the suite neither reads nor fills the user's cache.
# SRCGRAD_TEST_CACHE_DIR names a directory to keep instead (a second run then loads what
# the first stored: the suite run twice checks loaded gradients).
_CACHE_DIR = os.environ.get("SRCGRAD_TEST_CACHE_DIR")
if not _CACHE_DIR:
    _CACHE_DIR = tempfile.mkdtemp(prefix="srcgrad-test-cache-")
    atexit.register(shutil.rmtree, _CACHE_DIR, True)
os.environ["SRCGRAD_CACHE_DIR"] = _CACHE_DIR
import srcgrad.disk_cache  # noqa: E402
srcgrad.disk_cache.settings.directory = _CACHE_DIR

import functions  # noqa: E402  (the catalogue; needs tests/ on sys.path)

SCALAR_NAMES = ("a", "b", "c")
ARRAY_NAMES = ("x", "y", "z")
MATRIX_NAMES = ("m",)
INT_NAMES = ("i", "n")
DIFFERENTIABLE_NAMES = SCALAR_NAMES + ARRAY_NAMES + MATRIX_NAMES

# Default tolerances of the finite-difference comparison (float64, eps=1e-6).
ATOL = 1e-6
RTOL = 1e-5


@dataclass
class Case:
    """One catalogue function on one set of inputs."""

    name: str
    function: object
    args: tuple
    kwargs: dict
    # Differentiable inputs: (wrt as given to srcgrad.grad, parameter name).
    targets: list = field(default_factory=list)
    atol: float = ATOL
    rtol: float = RTOL
    index: int = 0

    @property
    def id(self):
        return self.name if self.index == 0 else f"{self.name}[{self.index}]"

    def fresh(self):
        """Deep copies of the inputs (tests must never share arrays)."""
        return (tuple(_copy(v) for v in self.args),
                {k: _copy(v) for k, v in self.kwargs.items()})

    def seed(self):
        """None for a scalar output, else a fixed random cotangent."""
        from srcgrad.testing import random_cotangent

        args, kwargs = self.fresh()
        out = self.function(*args, **kwargs)
        if not isinstance(out, (tuple, list)) and np.size(out) == 1:
            return None
        return random_cotangent(out, np.random.default_rng(1234))


def _copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value


def _value(name, given):
    """The input for parameter ``name``: ``given`` (value or shape) or the default."""
    if given is not None:
        if name in ARRAY_NAMES + MATRIX_NAMES and isinstance(given, tuple) and all(
                isinstance(d, int) for d in given):
            return functions._array(given, seed=sum(map(ord, name)) * 7 + len(given))
        if isinstance(given, list):
            return np.array(given, dtype=np.float64)
        return given
    if name in SCALAR_NAMES:
        return functions.SCALARS[name]
    if name in ARRAY_NAMES:
        return np.array(functions.VECTORS[name], dtype=np.float64)
    if name in MATRIX_NAMES:
        return np.array(functions.MATRIX, dtype=np.float64)
    if name in INT_NAMES:
        return functions.INTS[name]
    raise ValueError(f"catalogue argument {name!r} is not in the naming contract")


_MISSING = object()


def build_cases(function, name):
    """Every Case of one catalogue function."""
    spec = getattr(function, "catalogue", None) or {"cases": [{}], "wrt": None,
                                                   "atol": None, "rtol": None}
    params = list(inspect.signature(function).parameters.values())
    cases = []
    for index, given in enumerate(spec["cases"]):
        args, kwargs, targets = [], {}, []
        for param in params:
            supplied = given.get(param.name, _MISSING)
            if supplied is _MISSING and param.default is not param.empty:
                continue  # left to its default
            value = _value(param.name, None if supplied is _MISSING else supplied)
            differentiable = param.name in DIFFERENTIABLE_NAMES and (
                spec["wrt"] is None or param.name in spec["wrt"])
            if param.kind is param.KEYWORD_ONLY:
                kwargs[param.name] = value
                if differentiable:
                    targets.append((param.name, param.name))
            else:
                if differentiable:
                    targets.append((len(args), param.name))
                args.append(value)
        cases.append(Case(name, function, tuple(args), kwargs, targets,
                          spec["atol"] or ATOL, spec["rtol"] or RTOL, index))
    return cases


def catalogue():
    """(name, function) for every test function of tests/functions.py, in order."""
    found = []
    for name, value in vars(functions).items():
        if (inspect.isfunction(value) and not name.startswith("_")
                and value.__module__ == functions.__name__
                and not getattr(value, "not_a_test", False)):
            found.append((name, value))
    return found


ALL_CASES = [case for name, f in catalogue() for case in build_cases(f, name)]
ALL_WRT_CASES = [(case, wrt, pname) for case in ALL_CASES for wrt, pname in case.targets]


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` (tens of seconds each: the jit catalogue shards, the random
    programs) run first: pytest-xdist hands out the first tests round robin, so they are
    spread over the workers, and the short ones then fill in. Run last, they left one
    worker busy for minutes while the other had nothing to do."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)   # stable


def pytest_generate_tests(metafunc):
    if "catalogue_case" in metafunc.fixturenames:
        metafunc.parametrize("catalogue_case", ALL_CASES, ids=[c.id for c in ALL_CASES])
    if "catalogue_wrt_case" in metafunc.fixturenames:
        metafunc.parametrize("catalogue_wrt_case", ALL_WRT_CASES,
                             ids=[f"{c.id}-{p}" for c, _, p in ALL_WRT_CASES])


# ----- Backends -----

def _cupy_or_skip():
    cupy = pytest.importorskip("cupy")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver or runtime missing
        pytest.skip(f"no CUDA device: {exc}")
    if count < 1:
        pytest.skip("no CUDA device")
    return cupy


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def backend(request):
    """The array module to run on: NumPy always, CuPy when a CUDA device exists."""
    if request.param == "numpy":
        return np
    return _cupy_or_skip()


@pytest.fixture
def isolated_rules():
    """Rules registered with @sg.adjoint in a test are undone after it."""
    from srcgrad import rules
    saved = dict(rules.RULES)
    saved_tangents = dict(rules.TANGENTS)
    saved_nondiff = set(rules.NONDIFFERENTIABLE)
    saved_libraries = set(rules._LIBRARIES_LOADED)
    yield
    rules._LIBRARIES_LOADED.clear()
    rules._LIBRARIES_LOADED.update(saved_libraries)
    rules.RULES.clear()
    rules.RULES.update(saved)
    rules.TANGENTS.clear()
    rules.TANGENTS.update(saved_tangents)
    rules.VERSION[0] += 1
    rules.NONDIFFERENTIABLE.clear()
    rules.NONDIFFERENTIABLE.update(saved_nondiff)


# The modules whose compiles check every memoized name set of the optimizer against its
# node when handed out (srcgrad/ast_util.py): a pass that edits a statement in place
# without forgetting it fails them instead of producing a wrong derivative. The random
# programs and the optimizer's own tests compile fresh functions of every shape; the
# check costs a third more compile time, so the rest of the suite runs without it
# (SRCGRAD_CHECK_NAME_SETS=1 in the environment checks every compile of the suite).
_NAME_SETS_CHECKED = ("test_random_programs", "test_optimize", "test_optimize_passes",
                      "test_scalar_items")


@pytest.fixture(autouse=True)
def _check_name_sets(request, monkeypatch):
    if request.module.__name__.rpartition(".")[2] in _NAME_SETS_CHECKED:
        import srcgrad.ast_util
        monkeypatch.setattr(srcgrad.ast_util, "CHECK_NAME_SETS", True)
    yield


def pytest_sessionfinish(session, exitstatus):
    """Leave the objects alive at the end out of the interpreter's last collections: the
    suite keeps tens of thousands of compiled gradients (api.py's cache), and the
    collections at exit walked all of them for minutes on a 2-core machine."""
    import gc
    gc.freeze()
