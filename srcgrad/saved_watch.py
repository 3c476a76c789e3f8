"""What ``sg.vjp`` keeps to detect a change, between the forward sweep and ``backward``, to
an array the forward sweep saved that the caller holds (PyTorch's version counters)."""

from srcgrad import pytree, runtime


def _memory_root(a):
    """The array whose memory ``a`` views (``a`` itself when it owns its memory)."""
    while runtime.is_array(getattr(a, "base", None)):
        a = a.base
    return a


def watch(saved, visible):
    """``(array, snapshot)`` for each array the forward sweep saved that shares memory with
    an array the caller holds (``visible``: the arguments, the outputs): the caller may
    change it in place before calling ``backward``, as PyTorch's version counters detect."""
    roots = {id(_memory_root(a)) for a in pytree.tree_leaves(visible) if runtime.is_array(a)
             and hasattr(a, "base")}
    if not roots:
        return ()
    watched, seen, todo = [], set(), [saved]
    while todo:
        value = todo.pop()
        if isinstance(value, (tuple, list)):
            todo.extend(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif runtime.is_array(value) and hasattr(value, "base") and id(value) not in seen \
                and id(_memory_root(value)) in roots:
            seen.add(id(value))
            watched.append((value, value.copy()))
    return tuple(watched)


def unchanged(value, snapshot):
    xp = runtime.namespace(value)
    try:
        return bool(xp.array_equal(value, snapshot, equal_nan=True))
    except TypeError:   # equal_nan: not for integer arrays, nor older CuPy
        return bool(xp.array_equal(value, snapshot))
