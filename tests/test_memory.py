"""The in-memory caches of compiled gradients are bounded (srcgrad/caches.py): an evicted
entry nobody holds is freed with its generated lines (codegen/loader.py), and a gradient the
user holds keeps running, its tracebacks naming generated and user lines."""

import gc
import linecache
import math
import traceback
import weakref

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import api, caches, forward_api
from srcgrad.codegen import loader


@pytest.fixture
def small_cache():
    previous = sg.set_cache_size(2)
    yield
    sg.set_cache_size(previous)


def scaled_sine(k):
    def f(x):
        return np.sum(np.sin(x) * x) * k
    return f   # one code object, a cell of its own per k: another entry of each cache


def scaled_root(k):
    def f(x):
        y = math.sqrt(x) * k   # a math domain error for x < 0
        return y * y
    return f


def files_of(compiled):
    return {f.__code__.co_filename for f in (compiled.forward, compiled.backward)}


def test_the_least_recently_used_entry_is_evicted(small_cache):
    cache = caches.LRU()
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1   # "a" is now the most recent
    cache["c"] = 3
    assert "b" not in cache and cache.items() == [("a", 1), ("c", 3)]
    sg.set_cache_size(1)
    assert list(cache) == ["c"]
    with pytest.raises(ValueError):
        sg.set_cache_size(0)


def test_the_bound_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("SRCGRAD_MEMORY_CACHE_SIZE", "17")
    assert caches._from_environment() == 17
    monkeypatch.setenv("SRCGRAD_MEMORY_CACHE_SIZE", "many")
    assert caches._from_environment() == caches.DEFAULT_SIZE


def test_an_evicted_gradient_nobody_holds_is_freed_with_its_lines(small_cache):
    x = np.linspace(0.1, 1.0, 4)
    before = set(map(id, api._cache.values())) | set(map(id, forward_api._cache.values()))
    g = sg.grad(scaled_sine(2.0))
    np.testing.assert_allclose(g(x), 2.0 * (np.cos(x) * x + np.sin(x)))
    sg.jvp(scaled_sine(2.0), (x,), (x,))
    made = [c for c in api._cache.values() + forward_api._cache.values()
            if id(c) not in before]
    assert made
    files = set().union(*(files_of(c) for c in made if hasattr(c, "backward")))
    assert files and all(f in linecache.cache and loader.has_origins(f) for f in files)
    dead = [weakref.ref(c) for c in made]
    del g, made
    for k in (3.0, 4.0, 5.0):   # three other functions: the first is evicted
        sg.grad(scaled_sine(k))(x)
        sg.jvp(scaled_sine(k), (x,), (x,))
    gc.collect()
    assert len(api._cache) <= 2 and len(forward_api._cache) <= 2
    assert not any(r() for r in dead)
    assert not any(f in linecache.cache or loader.has_origins(f) for f in files)


def test_a_held_gradient_runs_after_eviction_and_its_traceback_names_lines(small_cache):
    g = sg.grad(scaled_root(2.0))
    assert g(4.0) == pytest.approx(4.0)   # d/dx (2 sqrt(x))^2 = 4
    held = weakref.ref(g.compiled_for((4.0,)))
    for k in (3.0, 4.0, 5.0):
        sg.grad(scaled_root(k))(4.0)
    gc.collect()
    assert held() is not None and all(c is not held() for c in api._cache.values())
    assert g(9.0) == pytest.approx(4.0)
    with pytest.raises(ValueError) as info:
        g(-1.0)
    text = "".join(traceback.format_exception(info.value))
    assert "y = math.sqrt(x) * k   # a math domain error" in text   # the user's line
    generated = []
    tb = info.value.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if loader.has_origins(filename):
            generated.append(linecache.getline(filename, tb.tb_lineno).strip())
        tb = tb.tb_next
    assert generated and all(line and line in text for line in generated)
    assert any("math.sqrt(x)" in line for line in generated)
