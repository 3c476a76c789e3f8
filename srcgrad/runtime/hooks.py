"""Gradient hooks (``sg.register_hook``) and the guard of in-place writes.

``check_unshared`` refuses ``x[i] = v`` (or ``lst.append(v)``) where the write
would also change a value the gradient still needs.
"""

import collections
import types
import weakref

import numpy

from srcgrad.runtime import dask_forms as _dask_forms
from srcgrad.runtime.arrays import _is_basic_index, is_array, namespace
from srcgrad.runtime.sweep import has_grad
from srcgrad.runtime.boundary import zeros_like


def run_hook(hook, g, value):
    """Call ``hook`` with the complete gradient of ``value``; a returned array replaces it.
    The hook gets an array of its own (the sweep may hold it as another adjoint too, or
    as a read-only broadcast), so one that changes it in place changes only this one."""
    if not has_grad(g) and is_array(value):
        g = zeros_like(value)
    elif is_array(g) and not _dask_forms.is_dask(g):
        g = g.copy()
    result = hook(g)
    if result is None:
        return g
    try:   # (a gradient a hook made: hooks_tangent refuses its tangent)
        _replaced_arrays[id(result)] = result
    except TypeError:
        _replaced.append(result)
    rshape, vshape = tuple(getattr(result, "shape", ())), tuple(getattr(value, "shape", ()))
    if rshape != vshape and (len(rshape) > len(vshape) or any(
            r not in (1, v) for r, v in zip(rshape[::-1], vshape[::-1]))):
        raise ValueError(f"srcgrad: hook {getattr(hook, '__name__', hook)!r} returned a gradient of "
                         f"shape {rshape} for a value of shape {vshape}")
    return result


def check_unshared(value, other, error, index=None, update=None):
    """Raise ``error`` if updating ``value`` (its part ``value[index]``) in place would
    also change ``other``.

    ``other`` shares with ``value`` when it is the same list, or an array (or a
    list, tuple or dict holding one, at any depth) whose memory overlaps the part
    of ``value`` written. ``update``: the write is ``value[index] op= v``, which on a
    list or dict also updates the item itself in place (_check_item_update): True, or
    the error to raise when another item of ``value`` holds that item.
    """
    if update is not None and isinstance(value, (list, dict)):
        _check_item_update(value, other, error, index, update)
        return
    if other is None:
        return
    if _has_fields(value) and not isinstance(value, (list, dict, tuple)):
        _check_instance(value, other, error, index)
        return
    if isinstance(value, (list, dict)):
        if any(o is value for o in _leaves(other, containers=True)):
            raise error
        return
    if isinstance(value, numpy.flatiter):   # y.flat[k] = v writes into y
        value, index = value.base, None
    if not is_array(value):
        return
    # A Dask array has no memory to share: x[i] = v rebinds that one Python object.
    region = value if _dask_forms.is_dask(value) else _written_region(value, index)
    xp = namespace(value)
    for o in _leaves(other):
        if is_array(o) and type(o).__module__ == type(value).__module__ and _overlap(xp, region, o):
            raise error


def _check_instance(value, other, error, field):
    """``self.h = v`` changes the instance ``value``: ``other`` must not hold it; with
    ``field`` (``self.items.append(v)``, ``self.h += v``) the attribute's own object changes
    too, so ``other`` must not hold that list or share that array's memory either."""
    held = list(_leaves(other, containers=True))
    if any(o is value for o in held):
        raise error
    if field is None:
        return
    item = getattr(value, field, None)
    if isinstance(item, (list, dict)) and any(o is item for o in held):
        raise error
    if is_array(item) and not _dask_forms.is_dask(item):
        xp = namespace(item)
        if any(is_array(o) and type(o).__module__ == type(item).__module__ and _overlap(xp, item, o)
               for o in held):
            raise error


def _check_item_update(value, other, error, index, item_error):
    """``lst[i] op= v`` runs ``lst[i].__iop__(v)``: an array or list item is changed in place,
    so every name holding it (or a view of it) would change too (``error``), and every
    other item of ``lst`` sharing its memory (``item_error``, unless True)."""
    if isinstance(value, list) and isinstance(index, slice):
        return check_unshared(value, other, error)   # a list slice is a new list, items kept
    try:
        item = value[index]
    except (IndexError, KeyError, TypeError):
        return   # the write itself raises Python's error
    if not (is_array(item) or isinstance(item, (list, dict))):
        return check_unshared(value, other, error)   # numbers and tuples are rebound
    keys = range(len(value)) if isinstance(value, list) else list(value)
    own = index % len(value) if isinstance(value, list) else index
    for key in keys if item_error is not True else ():   # True: no other item is read later
        if key != own:
            check_unshared(item, value[key], item_error)
    if other is not None:   # None: only the other items are checked
        check_unshared(value, other, error)
        check_unshared(item, other, error)


def _leaves(value, containers=False, depth=0):
    """The arrays (and, with ``containers``, the lists) inside ``value``."""
    if isinstance(value, (list, tuple)):
        if containers:
            yield value
        if depth < 8:
            for item in value:
                yield from _leaves(item, containers, depth + 1)
    elif isinstance(value, dict):
        if containers:
            yield value
        if depth < 8:
            for item in value.values():
                yield from _leaves(item, containers, depth + 1)
    elif isinstance(value, numpy.flatiter):
        yield value.base
    elif _has_fields(value):   # a dataclass or plain object holding arrays (self.W)
        if containers:
            yield value
        if depth < 8:
            for item in vars(value).values():
                yield from _leaves(item, containers, depth + 1)
    else:
        yield value


def _has_fields(value):
    return hasattr(value, "__dict__") and not is_array(value) and not isinstance(
        value, (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType))


def _written_region(value, index):
    """The view of ``value`` a write ``value[index] = ...`` changes (all of it for a fancy index)."""
    if index is None or not _is_basic_index(index):
        return value
    items = index if isinstance(index, tuple) else (index,)
    if any(item is Ellipsis for item in items):
        region = value[index]
    else:
        region = value[items + (Ellipsis,)]
    return region if is_array(region) else value


def _overlap(xp, a, b):
    if _dask_forms.is_dask(a):
        return a is b
    if not xp.may_share_memory(a, b):
        return False
    if xp is numpy:
        try:
            return bool(numpy.shares_memory(a, b, max_work=10000))
        except numpy.exceptions.TooHardError if hasattr(numpy, "exceptions") else Exception:
            return True
    return True


def run_hooks(hooks, g, value):
    """Run the hooks registered on one binding, in registration order (see run_hook)."""
    for hook in hooks or ():
        g = run_hook(hook, g, value)
    return g


# The gradients hooks returned: arrays held weakly (by id), numbers (no weak reference)
# the latest few (a tangent follows its run_hooks at once).
_replaced_arrays = weakref.WeakValueDictionary()
_replaced = collections.deque(maxlen=16)


def hooks_tangent(y, g, t_g):
    """The tangent of ``y = run_hooks(hooks, g, value)`` in a gradient differentiated again
    (a Hessian, a gradient of a gradient): the hooks saw the first-order gradient and left
    it (they returned None and wrote nothing into it), so ``y`` is ``g`` and its tangent
    ``t_g``. A hook that returned a gradient of its own, or changed its copy in place, is
    a function srcgrad cannot differentiate: refused."""
    changed = y is not g and not bool(   # (no hook, or Dask's: g itself, nothing computed)
        numpy.all(numpy.asarray(y) == (numpy.asarray(g) if has_grad(g) else 0.0)))
    if changed or _replaced_arrays.get(id(y)) is y or any(r is y for r in _replaced):
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            "a gradient hook (sg.register_hook) that returns a new gradient or changes it in "
            "place, in a function "
            "whose second derivative is asked (sg.hessian, a gradient of a gradient): srcgrad "
            "cannot differentiate what the hook computes", hint="Let the hook only read the "
            "gradient (return None), or change the gradient in the function itself.")
    return t_g


class _HookHandle:
    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


def hook_handle(hooks, hook):
    """Register ``hook`` in a binding's list; the handle's ``remove()`` takes it out again."""
    hooks.append(hook)
    return _HookHandle(hooks, hook)
