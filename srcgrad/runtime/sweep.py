"""What the forward and reverse sweeps do to adjoints: index into them, write into
them in place, save and restore values on the tape.

An adjoint the sweep owns is updated in place (``add_at``, ``zero_grad_at``); one
handed in from outside is copied first (``own``).
"""

import numpy

from srcgrad import pytree as _pytree
from srcgrad.runtime import dask_forms as _dask_forms
from srcgrad.runtime.arrays import (_is_basic_index, _writeable, float_dtype, is_array,
                                    may_share_memory, namespace, shape_of)
from srcgrad.runtime.broadcast import broadcast_up
from srcgrad.runtime.containers import (CONSTANT, FIELD, ZERO, _array_into_container, add_grad,
                                        attribute_kind, is_node, is_zero_grad, not_a_field,
                                        seq_item)


_HOST = (numpy.ndarray, numpy.generic, float, int)   # values that are certainly not Dask's
_ndarray = numpy.ndarray


def _writable_zeros(dx, x):
    """``dx`` as an owned array of ``x``'s shape (a scalar adjoint is broadcast)."""
    xp = namespace(x)
    if _dask_forms.is_dask(x):   # chunked like x, not by Dask's default
        base = xp.zeros(x.shape, dtype=float_dtype(x, xp), chunks=x.chunks)
    else:
        base = xp.zeros(shape_of(x), dtype=float_dtype(x, xp))
    if isinstance(dx, (int, float)) and dx == 0:
        return base
    total = base + dx
    return numpy.array(total) if isinstance(total, numpy.generic) else total   # 0-d stays an array


def owned_zeros(x):
    """Zeros of ``x``'s shape and float dtype: an adjoint the sweep adds into in place."""
    return _writable_zeros(0.0, x)


def add_at(dx, x, index, g):
    """Add ``g`` into ``dx[index]`` (the adjoint of reading ``x[index]``).

    Repeated integer indices accumulate, as the chain rule requires. ``dx`` is
    updated in place when the adjoint owns it; a scalar zero is materialised.
    Containers (lists, tuples, dicts) get a mirror of per-element adjoints
    (see pytree.py), updated in place like an array's (an adjoint is dead once the
    binding it belongs to is undone, so sharing one is harmless).
    """
    # A zero ``g`` leaves ``dx`` as it is, but for a computed zero added to ``rt.ZERO``
    # (code differentiated again): its shape must not depend on the number 0, or the
    # adjoint of ``dx`` would be summed into a scalar (zero_marks.py).
    if isinstance(x, (list, tuple, dict)):
        if is_zero_grad(g) and (dx is not ZERO or g is ZERO):
            return dx
        if isinstance(x, dict):
            if not isinstance(dx, dict):
                _array_into_container(dx)
                dx = {} if is_zero_grad(dx) and dx is not ZERO else dict.fromkeys(x, dx)
            dx[index] = add_grad(dx.get(index, 0.0), g)
            return dx
        if type(dx) is not list:
            if isinstance(dx, tuple):
                dx = list(dx)
            else:
                _array_into_container(dx)
                # (rt.ZERO, in code differentiated again: the entries nothing reaches stay
                # ZERO, so the rules reading them are skipped, not given a scalar 0.0)
                dx = [0.0] * len(x) if is_zero_grad(dx) and dx is not ZERO else [dx] * len(x)
        if isinstance(index, slice):
            for i, gi in zip(range(*index.indices(len(x))), g):
                dx[i] = add_grad(dx[i], gi)
        else:
            dx[index] = add_grad(dx[index], g)
        return dx
    if isinstance(g, (int, float)) and g == 0 and (dx is not ZERO or g is ZERO):
        return dx
    if not is_array(x):
        if _pytree.is_node(x):
            raise TypeError(f"srcgrad: cannot differentiate indexing into a "
                            f"{type(x).__name__}: read its fields as attributes")
        return dx + g
    if not (is_array(dx) and dx.shape == x.shape and _writeable(dx)):
        dx = _writable_zeros(dx, x)
    if (type(dx) is not numpy.ndarray or not isinstance(g, _HOST)) and (
            _dask_forms.is_dask(g) or _dask_forms.is_dask(dx)):
        return _dask_forms.add_at(dx, index, g)
    if _is_basic_index(index):
        dx[index] += g
    else:
        xp = namespace(x)
        if xp is numpy:
            numpy.add.at(dx, index, g)
        else:
            xp.add.at(dx, index, g)
    return dx


def take_grad(dx, index):
    """A copy of ``dx[index]`` (0.0 while ``dx`` is still a scalar zero)."""
    if isinstance(dx, dict):
        return dx.get(index, 0.0)
    if isinstance(dx, list):
        if isinstance(index, slice):
            return dx[index]
        return dx[index]
    if not is_array(dx) or dx.ndim == 0:
        return dx
    part = dx[index]
    return part.copy() if is_array(part) else part


def full_grad(dx, x):
    """``dx``, an adjoint of ``x``, in ``x``'s full shape before it is indexed: an array that
    ``unbroadcast`` left smaller (broadcastable to ``x``) is broadcast up, read-only; a
    scalar, a list's or a dict's adjoint is returned as it is (``dx[i]`` of a smaller one
    read the wrong entry, or past its end)."""
    if is_array(dx) and dx.ndim and is_array(x) and dx.shape != x.shape:
        return broadcast_up(dx, x.shape)
    return dx


def written_grad(dx, x, index):
    """The gradient of the value ``v`` written by ``x[index] = v``: a copy of ``dx[index]``,
    zero where a repeated position was overwritten (``keep_written``)."""
    return keep_written(take_grad(full_grad(dx, x), index), x, index)


def keep_written(g, x, index):
    """``g`` (shaped like ``x[index]``) with zeros where ``x[index] = v`` wrote an entry of
    ``v`` that a later entry for the same position overwrote: NumPy keeps the last
    write to a repeated integer-array index, so the earlier ones reach nothing."""
    if not is_array(g) or g.ndim == 0 or isinstance(x, list) or _is_basic_index(index):
        return g
    items = index if isinstance(index, tuple) else (index,)
    if not any(is_array(i) and i.dtype.kind in "iu" or isinstance(i, (list, tuple)) for i in items):
        return g   # boolean masks and slices never repeat a position
    xp = namespace(g)
    marker = xp.full(x.shape, -1, dtype=xp.intp)
    ids = xp.arange(g.size, dtype=xp.intp).reshape(g.shape)
    marker[index] = ids
    return xp.where(marker[index] == ids, g, 0)


def zero_grad_at(dx, x, index):
    """``dx`` with ``dx[index]`` set to zero (the adjoint of writing ``x[index]``)."""
    if isinstance(x, dict):
        if isinstance(dx, dict):
            dx.pop(index, None)
        return dx
    if isinstance(x, list):
        if isinstance(dx, list):
            if isinstance(index, slice):
                for i in range(*index.indices(len(dx))):
                    dx[i] = 0.0
            else:
                dx[index] = 0.0
        return dx
    if isinstance(dx, (int, float)) and dx == 0:
        return dx
    if not (is_array(dx) and dx.shape == x.shape and _writeable(dx)):
        dx = _writable_zeros(dx, x)
    if _dask_forms.is_dask(dx) or _dask_forms.is_dask(index):
        return _dask_forms.zero_at(dx, x, index)
    dx[index] = 0
    return dx


def save(value):
    """A copy of ``value`` to put on the tape before it is overwritten in place."""
    if is_array(value):
        return value.copy()
    if isinstance(value, list):
        return list(value)
    if type(value) is dict:
        return dict(value)
    return value


def copy_restored(value, written):
    """``value``, returned to the caller, with each array or list in it (at any depth of
    tuples, lists and dicts) that the reverse sweep will write into (``written``: the
    arrays and lists it restores, and their views) copied: the sweep restores what indexed
    writes overwrote, and the caller's output and aux must keep the values returned."""
    arrays = [w for w in written if is_array(w)]
    lists = {id(w) for w in written if isinstance(w, (list, dict))}

    def fresh(v):
        if id(v) in lists:
            v = save(v)
        if is_array(v):
            if _dask_forms.is_dask(v):   # a Dask array is never written in place
                return v
            return v.copy() if any(may_share_memory(v, w) for w in arrays) else v
        if isinstance(v, tuple):
            items = [fresh(e) for e in v]
            if all(a is b for a, b in zip(items, v)):
                return v
            return type(v)(*items) if hasattr(v, "_fields") else tuple(items)
        if isinstance(v, list):
            items = [fresh(e) for e in v]
            return v if all(a is b for a, b in zip(items, v)) else type(v)(items)
        if type(v) is dict:
            items = {k: fresh(e) for k, e in v.items()}
            return v if all(items[k] is e for k, e in v.items()) else items
        return v
    return fresh(value)


def own(value):
    """A copy of a gradient handed in from outside, so the adjoint may update it in place."""
    if is_array(value):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return [own(v) for v in value]
    if isinstance(value, dict):
        return {k: own(v) for k, v in value.items()}
    return value


def attr_add(dx, x, attr, g, error):
    """Add ``g`` into the adjoint of field ``attr`` of structure ``x`` (reading ``x.attr``);
    raise ``error`` when ``x`` is no structure (a dataclass, namedtuple, registered class)."""
    if is_zero_grad(g):
        return dx
    if _pytree.is_namedtuple(x):
        return add_at(dx, x, type(x)._fields.index(attr), g)
    if not is_node(x) or isinstance(x, (list, tuple, dict)):
        raise error
    kind = attribute_kind(x, attr)
    if kind != FIELD:   # a class attribute is a constant; a property's fields are unknown here
        if kind == CONSTANT:
            return dx
        raise not_a_field(x, attr, error)
    dx = _pytree.Fields(dx) if isinstance(dx, dict) else _pytree.Fields()
    dx[attr] = add_grad(dx.get(attr, 0.0), g)
    return dx


def attr_item(dx, x, attr):
    """The adjoint of field ``attr`` held in ``x``'s adjoint ``dx`` (0.0 for none)."""
    if _pytree.is_namedtuple(x):
        return seq_item(dx, type(x)._fields.index(attr))
    return dx.get(attr, 0.0) if isinstance(dx, dict) else 0.0


_MISSING = object()   # the tape's record of a dict key that a write added


def save_item(base, index):
    """What ``base[index] = ...`` overwrites, for the tape (a dict's new key: _MISSING)."""
    if isinstance(base, dict) and index not in base:
        return _MISSING
    return save(base[index])


def restore_item(base, index, value):
    """Undo ``base[index] = ...`` with what ``save_item`` recorded. Idempotent, as an
    array's restore is: a gradient read again restores twice (its own sweep and the
    sweep it differentiates), and a key already gone stays gone."""
    if value is _MISSING:
        base.pop(index, None)
    else:
        base[index] = value


def restore_item_tangent(t_base, index, value, t_value):
    """``restore_item``'s tangent: the same undo on the tangent ``t_base`` of a dict (whose
    keys are the dict's), with ``t_value`` the restored value's tangent (None: zero)."""
    if value is _MISSING:
        t_base.pop(index, None)
    else:
        zero = [0.0] * len(value) if isinstance(index, slice) else 0.0   # (a list's slice)
        t_base[index] = zero if t_value is None else t_value


def has_grad(g):
    """False while an adjoint is still a scalar zero (as it starts, or a zero scaled by a number)."""
    if type(g) is float:
        return g != 0.0
    if g is ZERO:
        return False
    if getattr(g, "ndim", 1) == 0 and not isinstance(g, (list, tuple)):
        if isinstance(g, _HOST):
            return bool(g != 0)
        # A lazy Dask zero is not computed. A CuPy one is read (the device is waited for):
        # the rules of an adjoint that is still a zero scaled by a number do not take one.
        return _dask_forms.is_dask(g) or bool(g != 0)
    return True


def touched(g):
    """``has_grad`` in code that is differentiated again: False only on ``rt.ZERO``, the
    adjoint nothing reached. A computed zero runs its rules: skipped, their derivative
    (a second derivative at a point where the adjoint is 0) would be lost."""
    return g is not ZERO


def or_zero(g):
    """A gradient a custom backward returned, with None read as "no gradient" (0.0)."""
    return 0.0 if g is None else g


def add_into(d, g):
    """``d + g``, written into ``d`` where both are NumPy float arrays of one shape and
    dtype: the same numbers (one IEEE addition per element either way), no new array. The
    caller's proof (optimize/loop_accumulators.py) is that nothing else holds ``d``."""
    if type(d) is _ndarray and type(g) is _ndarray and d.dtype is g.dtype \
            and d.shape == g.shape and d.dtype.kind in "fc":
        d += g
        return d
    total = d + g
    if type(total) is _ndarray and not (type(g) is _ndarray and (
            type(d) is _ndarray or type(d) is float or isinstance(d, numpy.generic))):
        # NumPy made ``total`` only from its own arrays and scalars; another type's
        # ``__radd__`` or ``__array_ufunc__`` may hand back an array it keeps
        total = total.copy()
    return total

