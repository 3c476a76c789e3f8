"""The in-memory caches of compiled gradients, each bounded to its most recently used entries.

What srcgrad keeps per compile (api's gradients, forward_api's tangent programs, the
batched ones, the gradients hessians and nested derivatives make, entry's functions) lives
in an ``LRU``. Each keeps at most ``cache_size()`` entries: ``SRCGRAD_MEMORY_CACHE_SIZE``
in the environment (read at import), else 2048; ``srcgrad.set_cache_size(n)`` changes it
in the process (a smaller bound evicts at once). A compiled gradient is about 100 KB, so
a process that compiles many distinct functions stays near ``n`` of them per cache instead
of growing without end. Evicting drops only the cache's reference: a gradient the user
still holds keeps working, and what hangs off an entry nothing else holds (its generated
code and so its lines in ``linecache`` and their origins: codegen/loader.py) is freed.
An evicted entry asked for again is compiled again (from the on-disk cache, where it is).
"""

import collections
import os
import threading
import weakref

DEFAULT_SIZE = 2048
_MISSING = object()
_caches = weakref.WeakSet()


def _from_environment():
    text = os.environ.get("SRCGRAD_MEMORY_CACHE_SIZE", "").strip()
    try:
        return max(1, int(text)) if text else DEFAULT_SIZE
    except ValueError:
        return DEFAULT_SIZE


_size = _from_environment()


def cache_size():
    """The most entries each in-memory cache of compiled gradients keeps."""
    return _size


def set_cache_size(n):
    """Keep at most ``n`` (>= 1) entries in each in-memory cache of compiled gradients,
    evicting the least recently used beyond it now; returns the previous bound."""
    global _size
    n = int(n)
    if n < 1:
        raise ValueError(f"srcgrad: the cache size must be at least 1, not {n}")
    previous, _size = _size, n
    for cache in list(_caches):
        cache.trim()
    return previous


class LRU:
    """A dict of at most ``cache_size()`` entries: a read (``get``, ``[]``) makes an entry
    the most recently used, a write beyond the bound evicts the least recently used.
    Reads take no lock (a key evicted meanwhile is simply missing); writes take one."""

    __slots__ = ("_data", "_lock", "__weakref__")

    def __init__(self):
        self._data = collections.OrderedDict()
        self._lock = threading.Lock()
        _caches.add(self)

    def get(self, key, default=None):
        found = self._data.get(key, _MISSING)
        if found is _MISSING:
            return default
        try:
            self._data.move_to_end(key)
        except KeyError:   # evicted by another thread since
            pass
        return found

    def __getitem__(self, key):
        found = self.get(key, _MISSING)
        if found is _MISSING:
            raise KeyError(key)
        return found

    def __setitem__(self, key, value):
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._trim()

    def setdefault(self, key, value):
        with self._lock:
            found = self._data.setdefault(key, value)
            self._data.move_to_end(key)
            self._trim()
            return found

    def trim(self):
        with self._lock:
            self._trim()

    def _trim(self):
        while len(self._data) > _size:
            self._data.popitem(last=False)

    def pop(self, key, default=None):
        with self._lock:
            return self._data.pop(key, default)

    def clear(self):
        with self._lock:
            self._data.clear()

    def __contains__(self, key):
        return key in self._data

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return iter(list(self._data))

    def items(self):
        return list(self._data.items())

    def values(self):
        return list(self._data.values())
