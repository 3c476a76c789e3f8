"""A copy of the values a forward sweep saved that keeps views views (``retain_graph``).

The reverse sweep restores what an indexed write overwrote (``y[1:] = pop()``) and then
reads arrays saved as views of the written one (``y[:-1]``), which the restore updates
too. ``copy.deepcopy`` copies each array alone, so such a view kept the value after the
write and the gradient came out wrong: here each group of NumPy arrays sharing one base
is copied once, and its members rebuilt as views of that copy.
"""

import copy
import gc
import types

import numpy

# dict.keys(), .values() and .items() views: deepcopy cannot pickle them
_DICT_VIEWS = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


def _viewed(view):
    """The dict a ``dict.keys()``/``.values()``/``.items()`` view reads."""
    return next(r for r in gc.get_referents(view) if isinstance(r, dict))


def _arrays(value, found, seen, views):
    """Every NumPy array in ``value``'s containers and objects' attributes, by id; the dict
    views among them into ``views`` (a view after the views its dict holds)."""
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, numpy.ndarray):
        found[id(value)] = value
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            _arrays(item, found, seen, views)
    elif isinstance(value, dict):
        for item in value.values():
            _arrays(item, found, seen, views)
    elif type(value) in _DICT_VIEWS:
        _arrays(_viewed(value), found, seen, views)
        views.append(value)
    elif hasattr(value, "__dict__") and not isinstance(value, (type, types.ModuleType)):
        # (a module, such as the array module a custom Function's ctx names, holds none)
        _arrays(vars(value), found, seen, views)


def _root(array):
    while isinstance(array.base, numpy.ndarray):
        array = array.base
    return array


def _address(array):
    return array.__array_interface__["data"][0]


def copy_saved(saved):
    """``copy.deepcopy(saved)``, an array that is a view of another's memory (both
    reached from ``saved``) a view of the same memory in the copy."""
    found, views = {}, []
    _arrays(saved, found, set(), views)
    groups = {}
    for array in found.values():
        groups.setdefault(id(_root(array)), []).append(array)
    memo = {}
    for members in groups.values():
        root = _root(members[0])
        if len(members) < 2 or root.dtype.hasobject or not (
                root.flags.c_contiguous or root.flags.f_contiguous):
            continue   # copied alone by deepcopy, as nothing else shares its memory
        fresh = root.copy(order="K")
        raw = fresh.reshape(-1, order="A").view(numpy.uint8)
        for array in members:
            view = numpy.ndarray(array.shape, array.dtype, buffer=raw, strides=array.strides,
                                 offset=_address(array) - _address(root))
            view.flags.writeable = array.flags.writeable
            memo[id(array)] = view
    memo[id(memo)] = list(found.values())   # deepcopy's keep-alive list: the originals
    for view in views:   # a view of the copy of the dict it reads
        memo[id(view)] = getattr(copy.deepcopy(_viewed(view), memo), _DICT_VIEWS[type(view)])()
        memo[id(memo)].append(view)
    return copy.deepcopy(saved, memo)

