"""What ``sg.vjp`` keeps to detect a change, between the forward sweep and ``backward``, to
an array the forward sweep saved that the caller holds (PyTorch's version counters)."""

import numpy

from srcgrad import pytree, runtime


def _memory_root(a):
    """The array whose memory ``a`` views (``a`` itself when it owns its memory)."""
    while True:
        base = getattr(a, "base", None)
        if base is None or not (type(base) is numpy.ndarray or runtime.is_array(base)):
            return a
        a = base


def _array(a):
    return type(a) is numpy.ndarray or (runtime.is_array(a) and hasattr(a, "base"))


def watch(saved, visible):
    """``(array, shape, snapshot)`` for each array the forward sweep saved that shares memory
    with an array the caller holds (``visible``: the arguments, the outputs): the caller may
    change it in place before calling ``backward``, as PyTorch's version counters detect."""
    roots = {id(_memory_root(a)) for a in pytree.tree_leaves(visible) if _array(a)}
    if not roots:
        return ()
    watched, seen, todo = [], set(), [saved]
    while todo:
        value = todo.pop()
        kind = type(value)
        if kind is tuple or kind is list or isinstance(value, (tuple, list)):
            todo.extend(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif _array(value) and id(value) not in seen and id(_memory_root(value)) in roots:
            seen.add(id(value))
            watched.append((value, value.shape, _snapshot(value)))
    return tuple(watched)


def _snapshot(a):
    """A NumPy array's bytes (one memcpy; compared with one memcmp, NaN or not), else a copy."""
    return a.tobytes() if type(a) is numpy.ndarray else a.copy()


def unchanged(value, shape, snapshot):
    """Whether ``value`` still has the shape and the contents ``watch`` recorded."""
    if value.shape != shape:
        return False
    if type(snapshot) is bytes:
        return value.tobytes() == snapshot
    xp = runtime.namespace(value)
    try:
        return bool(xp.array_equal(value, snapshot, equal_nan=True))
    except TypeError:   # equal_nan: not for integer arrays, nor older CuPy
        return bool(xp.array_equal(value, snapshot))
