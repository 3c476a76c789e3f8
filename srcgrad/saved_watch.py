"""What ``sg.vjp`` keeps to detect a change, between the forward sweep and ``backward``, to
an array the forward sweep saved that the caller holds (PyTorch's version counters): an
argument, an output, or an array the function reads through a global or closure name
(a global weight, ``self.W``), which ``backward`` also reads by its name."""

import dis
import types

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


_NO_ARRAYS = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
              type, numpy.ufunc, BaseException, bool, int, float, complex, str, bytes, type(None))


def _may_hold_arrays(obj):
    if type(obj) is numpy.ndarray:
        return True
    return not isinstance(obj, _NO_ARRAYS) and type(obj).__module__.split(".")[0] != "srcgrad"


def _loaded(fn):
    """The global names ``fn`` loads, and its closure cells that held a value that may hold
    an array when first asked (srcgrad's own bindings: errors, helpers, never do)."""
    found = getattr(fn, "_srcgrad_loaded", None)
    if found is None:
        code = fn.__code__
        names = tuple(sorted({i.argval for i in dis.get_instructions(code)
                              if i.opname == "LOAD_GLOBAL"}))
        cells = []
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                if _may_hold_arrays(cell.cell_contents):
                    cells.append((name, cell))
            except ValueError:   # empty: assigned later, by the function that made it
                cells.append((name, cell))
        found = fn._srcgrad_loaded = (names, tuple(cells))
    return found


def free_objects(functions):
    """``[(scope, name, obj)]``: what the generated ``functions`` read through a global name
    (``scope`` its dict) or a closure cell (``scope`` the cell) now, where it may hold an
    array (an array, a container, an object such as a bound method's ``self``)."""
    out = []
    for fn in functions:
        names, cells = _loaded(fn)
        scope = fn.__globals__
        for name in names:
            obj = scope.get(name)
            if obj is not None and _may_hold_arrays(obj):
                out.append((scope, name, obj))
        for name, cell in cells:
            try:
                obj = cell.cell_contents
            except ValueError:
                continue
            if _may_hold_arrays(obj):
                out.append((cell, name, obj))
    return out


def reachable(objects):
    """The values ``objects`` hold one level down: a container's leaves, an object's
    attributes (``self.W``), for ``watch``'s ``visible``."""
    out = []
    for obj in objects:
        if _array(obj) or pytree.is_node(obj):
            out.append(obj)
        else:
            out.extend(v for v in getattr(obj, "__dict__", {}).values()
                       if _array(v) or pytree.is_node(v))
    return out


def rebound(free):
    """The first ``(scope, name, obj)`` of ``free_objects`` whose name denotes another
    object now, else None."""
    for scope, name, obj in free:
        now = scope.get(name) if type(scope) is dict else getattr(scope, "cell_contents", None)
        if now is not obj:
            return name
    return None


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
