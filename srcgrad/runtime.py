"""The only module generated gradient code calls (bound there as ``rt``).

Helpers here work on NumPy and CuPy arrays alike: they take the namespace from
their arguments. An adjoint that is still a Python ``0.0`` means "no gradient
has arrived yet"; helpers keep it a scalar as long as they can, so nothing is
allocated for gradients that stay zero.
"""

import types

import numpy

from srcgrad import pytree as _pytree

_cupy = None
_cupy_checked = False


def _cupy_module():
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy  # noqa: F401
            _cupy = cupy
        except Exception:  # ImportError, or CUDA missing at import
            _cupy = None
    return _cupy


# ----- Array namespace -----

def namespace(*values):
    """NumPy or CuPy, from the arrays among ``values`` (scalars mix with either).

    Raises:
        TypeError: NumPy and CuPy arrays are mixed.
    """
    found = None
    for value in values:
        module = type(value).__module__
        if module.startswith("cupy") or type(value) is DeviceShape:
            kind = "cupy"
        elif isinstance(value, (list, tuple, dict)):
            if not value:
                continue
            sub = namespace(*(value.values() if isinstance(value, dict) else value))
            kind = "cupy" if sub is not numpy else None
            if kind is None:
                continue
        else:
            continue
        if found is None:
            found = kind
    if found == "cupy":
        cupy = _cupy_module()
        for value in values:
            if isinstance(value, numpy.ndarray):
                raise TypeError(
                    "srcgrad: NumPy and CuPy arrays are mixed in one call; move them to "
                    "one device first (cupy.asarray or .get()).")
        return cupy
    return numpy


def is_array(value):
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, (int, float))


class DeviceShape(tuple):
    """The shape of a CuPy array saved in place of the array: it keeps the namespace,
    so a scalar adjoint broadcast to it (``rt.unreduce``) lands on the device."""

    __slots__ = ()

    @property
    def shape(self):
        return tuple(self)


def shape_of(value):
    if isinstance(value, (list, tuple)):
        return value   # a container operand keeps itself (rt.unbroadcast tells it from a shape)
    shape = getattr(value, "shape", ())
    if type(value).__module__.startswith("cupy"):
        return DeviceShape(shape)
    return shape


# ----- Fused elementwise kernels (transform/fuse.py) -----

# Run fused kernels on NumPy too, as plain Python (tests check the fused code path
# on the CPU this way; on NumPy it saves nothing).
FUSE_ON_NUMPY = False
_WEAK_SCALARS = (int, float)


def fused_kernel(kernel, inputs, output_deps, targets):
    """``kernel`` ready to run on ``inputs``, or None where its assumptions fail.

    A fused kernel drops ``rt.unbroadcast``/``rt.unreduce``, so it needs every
    array among ``inputs`` and every shape in ``targets`` to have one shape, and
    one floating dtype (Python numbers mix in as NumPy 2 does); each output must
    depend (``output_deps``: input positions) on such an array, so it has that
    shape. On CuPy the kernel is ``cupy.fuse`` of it, compiled once per kernel.
    """
    shape = dtype = None
    module = None
    for value in inputs:
        kind = type(value)
        if kind in _WEAK_SCALARS:
            continue
        if kind.__module__.startswith("cupy"):
            this = "cupy"
        elif isinstance(value, (numpy.ndarray, numpy.generic)):
            this = "numpy"
        else:
            return None
        if module is None:
            module = this
        elif module != this:
            return None
        if dtype is None:
            dtype = value.dtype
        elif value.dtype != dtype:
            return None
        if value.ndim:
            if shape is None:
                shape = value.shape
            elif value.shape != shape:
                return None
    if shape is None or dtype.kind != "f" or module is None:
        return None
    if module == "numpy" and not FUSE_ON_NUMPY:
        return None
    for target in targets:
        if (target if type(target) is tuple else getattr(target, "shape", None)) != shape:
            return None
    for deps in output_deps:
        if not any(getattr(inputs[i], "ndim", 0) for i in deps):
            return None
    compiled = kernel.__dict__.get("_srcgrad_fused")
    if compiled is None:
        compiled = kernel._srcgrad_fused = {}
    found = compiled.get(module)
    if found is None:
        xp = numpy if module == "numpy" else _cupy_module()
        bound = types.FunctionType(kernel.__code__, {"xp": xp, "__builtins__": __builtins__},
                                   kernel.__name__)
        found = compiled[module] = bound if module == "numpy" else xp.fuse(bound)
    return found


def first_array(*values):
    """The first of ``values`` that is an array of at least one dimension."""
    for value in values:
        if getattr(value, "ndim", 0):
            return value
    raise ValueError("srcgrad: internal error: a fused kernel ran without an array input")


# ----- Broadcasting and reductions -----

def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x`` (undoing NumPy broadcasting).

    Free when the shapes already match; a scalar ``g`` is returned as it is and
    broadcast later, when it is added to an array.
    """
    shape = x if type(x) is tuple else getattr(x, "shape", ())
    gshape = getattr(g, "shape", ())
    if gshape == shape or not gshape:
        return g
    if type(x) is list or (type(x) is tuple and x and type(x[0]) is not int):
        return g   # a list or tuple operand (not a saved shape): see _array_into_container
    extra = len(gshape) - len(shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    elif extra < 0:
        return g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g


def normalize_axis(axis, ndim):
    """``axis`` as a sorted tuple of non-negative ints (None: all axes)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % ndim if ndim else 0 for a in axis))
    return (axis % ndim if ndim else 0,)


def unreduce(g, x, axis=None, keepdims=False):
    """Broadcast the gradient of a reduction over ``axis`` back to ``x``'s shape (or a shape).

    A list or tuple ``x`` gets ``g`` itself: each item's gradient (seq_add broadcasts it).
    """
    if type(x) is list or (type(x) is tuple and x and type(x[0]) is not int):
        return g
    shape = x if type(x) is tuple else getattr(x, "shape", ())
    if not shape:
        return g
    xp = namespace(g) if type(x) is tuple else namespace(x, g)
    if not keepdims and axis is not None and getattr(g, "ndim", 0):
        g = xp.expand_dims(g, normalize_axis(axis, len(shape)))
    elif not keepdims and axis is not None:
        g = xp.reshape(xp.asarray(g), tuple(1 if i in normalize_axis(axis, len(shape)) else n
                                            for i, n in enumerate(shape)))
    elif xp is numpy:
        # A scalar spread over the shape: a read-only view of one element, as
        # broadcast_to makes, built directly (broadcast_to costs microseconds).
        one = numpy.asarray(g)
        if one.ndim == 0 and one.dtype.kind in "fc":
            return numpy.ndarray(shape, one.dtype, one.tobytes(), 0, (0,) * len(shape))
    return xp.broadcast_to(g if is_array(g) else xp.asarray(g), shape)


def unreduce_like(value, x, axis=None, keepdims=False):
    """``value`` (a reduction result) reshaped so it broadcasts against ``x``."""
    shape = getattr(x, "shape", ())
    if not shape or keepdims or axis is None or not getattr(value, "ndim", 0):
        return value  # a scalar broadcasts as it is
    xp = namespace(x, value)
    return xp.expand_dims(value, normalize_axis(axis, len(shape)))


def reduction_size(x, axis=None, at_least=0):
    """How many elements of ``x`` a reduction over ``axis`` combines (``at_least`` 1:
    a mean's divisor, which must not be 0 for an empty ``x``, whose gradient is empty;
    a list or tuple is reduced as NumPy reads it: as an array)."""
    shape = numpy.shape(x) if isinstance(x, (list, tuple)) else getattr(x, "shape", ())
    n = 1
    for a in normalize_axis(axis, len(shape)):
        n *= shape[a]
    return n if n >= at_least else at_least


# ----- Subscripts -----

def _writable_zeros(dx, x):
    """``dx`` as an owned array of ``x``'s shape (a scalar adjoint is broadcast)."""
    xp = namespace(x)
    base = xp.zeros(shape_of(x), dtype=_float_dtype(x, xp))
    if isinstance(dx, (int, float)) and dx == 0:
        return base
    total = base + dx
    return numpy.array(total) if isinstance(total, numpy.generic) else total   # 0-d stays an array


def owned_zeros(x):
    """Zeros of ``x``'s shape and float dtype: an adjoint the sweep adds into in place."""
    return _writable_zeros(0.0, x)


def _float_dtype(x, xp):
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "fc":
        return xp.float64
    return dtype


def add_at(dx, x, index, g):
    """Add ``g`` into ``dx[index]`` (the adjoint of reading ``x[index]``).

    Repeated integer indices accumulate, as the chain rule requires. ``dx`` is
    updated in place when the adjoint owns it; a scalar zero is materialised.
    Containers (lists, tuples, dicts) get a mirror of per-element adjoints
    (see pytree.py), updated in place like an array's (an adjoint is dead once the
    binding it belongs to is undone, so sharing one is harmless).
    """
    if isinstance(x, (list, tuple, dict)):
        if _zero(g):
            return dx
        if isinstance(x, dict):
            if not isinstance(dx, dict):
                _array_into_container(dx)
                dx = {} if _zero(dx) else dict.fromkeys(x, dx)
            dx[index] = add_grad(dx.get(index, 0.0), g)
            return dx
        if type(dx) is not list:
            if isinstance(dx, tuple):
                dx = list(dx)
            else:
                _array_into_container(dx)
                dx = [0.0] * len(x) if _zero(dx) else [dx] * len(x)
        if isinstance(index, slice):
            for i, gi in zip(range(*index.indices(len(x))), g):
                dx[i] = add_grad(dx[i], gi)
        else:
            dx[index] = add_grad(dx[index], g)
        return dx
    if isinstance(g, (int, float)) and g == 0:
        return dx
    if not is_array(x):
        if _pytree.is_node(x):
            raise TypeError(f"srcgrad: cannot differentiate indexing into a "
                            f"{type(x).__name__}: read its fields as attributes")
        return dx + g
    if not (is_array(dx) and dx.shape == x.shape and _writeable(dx)):
        dx = _writable_zeros(dx, x)
    if _is_basic_index(index):
        dx[index] += g
    else:
        xp = namespace(x)
        if xp is numpy:
            numpy.add.at(dx, index, g)
        else:
            xp.add.at(dx, index, g)
    return dx


def _writeable(array):
    """Whether ``array`` accepts writes (CuPy arrays have no ``writeable`` flag; a NumPy
    scalar such as ``np.float64`` has a shape but takes no item assignment)."""
    return not isinstance(array, numpy.generic) and getattr(array.flags, "writeable", True)


def _is_basic_index(index):
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, (int, slice)):
            continue
        if isinstance(item, numpy.integer):
            continue
        return False
    return True


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


def written_grad(dx, x, index):
    """The gradient of the value ``v`` written by ``x[index] = v``: a copy of ``dx[index]``,
    zero where a repeated position was overwritten (``keep_written``)."""
    return keep_written(take_grad(dx, index), x, index)


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


def own(value):
    """A copy of a gradient handed in from outside, so the adjoint may update it in place."""
    if is_array(value):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return [own(v) for v in value]
    if isinstance(value, dict):
        return {k: own(v) for k, v in value.items()}
    return value


# ----- Sequences (lists and tuples of arrays) -----

def seq_item(dseq, index):
    """Adjoint of element ``index`` of a container (0.0 while none has arrived).

    An array adjoint is that of the array NumPy made of the sequence (a rule given
    a list, such as a user's rule for ``f([x, y])``): its entry ``index``.
    """
    if isinstance(dseq, dict):
        return dseq.get(index, 0.0)
    if isinstance(dseq, (list, tuple)) or getattr(dseq, "ndim", 0):
        return dseq[index]
    _array_into_container(dseq)
    return dseq


def seq_add(dseq, g):
    """Elementwise sum of two container adjoints (either may be a scalar zero)."""
    if not isinstance(g, (list, tuple, dict)):
        return dseq if (isinstance(g, (int, float)) and g == 0) else _seq_add_scalar(dseq, g)
    if isinstance(g, dict) or isinstance(dseq, dict):
        return add_grad(dseq, g)
    if not isinstance(dseq, (list, tuple)):
        return [gi if gi is not None else 0.0 for gi in g]
    return [add_grad(a, b) if b is not None else a for a, b in zip(dseq, g)]


def _seq_add_scalar(dseq, g):
    """``dseq + g`` for a gradient ``g`` that is not a container: a number adds into every
    item; an array is the gradient of the array NumPy made of the list (a rule given it, or
    the array a name that also held a list holds), split by ``seq_item``/``seq_pop``, and
    may not be spread over items that already have gradients of their own."""
    if isinstance(dseq, (list, tuple, dict)):
        _array_into_container(g)
        return [a + g for a in dseq]
    return dseq + g


def _array_into_container(g):
    """Refuse the gradient of an array (not a scalar) reaching a list, tuple or dict: it
    was used as an array (NumPy arithmetic), whose gradient srcgrad does not split."""
    if getattr(g, "ndim", 0):
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            "srcgrad: a list, tuple or dict was used as an array (in NumPy arithmetic or a "
            "NumPy function other than stack/concatenate); its gradient is not supported. "
            "Convert it first with np.asarray(...) or np.stack(...).")


def _zero(g):
    return g is None or (type(g) in (float, int) and g == 0)


def add_grad(a, b):
    """``a + b`` for adjoints of any structure: containers add entry by entry, a
    scalar zero (or None) is "nothing yet" (Tangent's ``add_grad``)."""
    if _zero(b):
        return a
    if _zero(a):
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        out = type(a)(a)
        for k, v in b.items():
            out[k] = add_grad(out[k], v) if k in out else v
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            raise ValueError(f"srcgrad: internal error: adjoints of lengths {len(a)} and "
                             f"{len(b)} added")
        return [add_grad(p, q) for p, q in zip(a, b)]
    if isinstance(a, (list, tuple, dict)) or isinstance(b, (list, tuple, dict)):
        raise TypeError(f"srcgrad: a gradient of a container ({type(a).__name__}) met a "
                        f"gradient of a value ({type(b).__name__}): a name holds a container "
                        f"in one place and an array in another")
    return a + b


def is_node(value):
    """Whether ``value`` is a container (list, tuple, dict, dataclass, registered class)."""
    return _pytree.is_node(value) and value is not None


def attr_add(dx, x, attr, g, error):
    """Add ``g`` into the adjoint of field ``attr`` of structure ``x`` (reading ``x.attr``);
    raise ``error`` when ``x`` is no structure (a dataclass, namedtuple, registered class)."""
    if _zero(g):
        return dx
    if _pytree.is_namedtuple(x):
        return add_at(dx, x, type(x)._fields.index(attr), g)
    if not is_node(x) or isinstance(x, (list, tuple, dict)):
        raise error
    dx = _pytree.Fields(dx) if isinstance(dx, dict) else _pytree.Fields()
    dx[attr] = add_grad(dx.get(attr, 0.0), g)
    return dx


def attr_item(dx, x, attr):
    """The adjoint of field ``attr`` held in ``x``'s adjoint ``dx`` (0.0 for none)."""
    if _pytree.is_namedtuple(x):
        return seq_item(dx, type(x)._fields.index(attr))
    return dx.get(attr, 0.0) if isinstance(dx, dict) else 0.0


def check_leaves(values, names, strict, error):
    """Refuse a structure passed to a gradient composed for arrays and floats
    (``grad(f).as_function()``, what higher-order derivatives differentiate): any, for a
    parameter the code adds or multiplies (``strict``), else one holding float data.
    ``error(message)`` makes the error, located at the user's function."""
    for value, name, exact in zip(values, names, strict):
        if value is not None and type(value) not in (float, numpy.ndarray) and _pytree.is_node(value) \
                and (exact or any(type(leaf) not in (int, bool, str) for leaf in _pytree.tree_leaves(value))):
            raise error(f"higher-order derivatives (grad of grad, as_function) take arrays and "
                        f"floats; {name!r} is a {type(value).__name__}")


def check_sequence(value, error):
    """Raise ``error`` for ``for v in value`` over a dict or another structure that is not
    a sequence (the loop reads ``value[i]``)."""
    if isinstance(value, (list, tuple)) or not _pytree.is_node(value) or value is None:
        return
    raise error


def check_array_operand(value, error):
    """Raise ``error`` when ``value``, passed where NumPy reads an array, is a list,
    tuple or other structure that needs a gradient (see reverse.py)."""
    if type(value) is not numpy.ndarray and value is not None and _pytree.is_node(value):
        raise error


_MISSING = object()   # the tape's record of a dict key that a write added


def save_item(base, index):
    """What ``base[index] = ...`` overwrites, for the tape (a dict's new key: _MISSING)."""
    if isinstance(base, dict) and index not in base:
        return _MISSING
    return save(base[index])


def restore_item(base, index, value):
    """Undo ``base[index] = ...`` with what ``save_item`` recorded."""
    if value is _MISSING:
        del base[index]
    else:
        base[index] = value


def list_vjp(dy, iterable):
    """Adjoint of ``list(iterable)`` (or ``tuple``) from the list's adjoint ``dy``."""
    if _zero(dy) or isinstance(iterable, dict):
        return 0.0   # a dict's list is its keys: no gradient
    if is_array(iterable):
        xp = namespace(iterable)
        rows = [xp.zeros(iterable.shape[1:], dtype=_float_dtype(iterable, xp)) if _zero(g) else g
                for g in dy]
        return xp.stack(rows) if rows else xp.zeros(iterable.shape, dtype=_float_dtype(iterable, xp))
    return list(dy)


def dict_values_vjp(dy, d):
    """Adjoint of ``d.values()`` (a list of the values' adjoints) as a dict adjoint."""
    if _zero(dy):
        return 0.0
    return dict(zip(d, dy))


def dict_items_vjp(dy, d):
    """Adjoint of ``d.items()`` (a list of (key, value) adjoints) as a dict adjoint."""
    if _zero(dy):
        return 0.0
    return {k: seq_item(g, 1) for k, g in zip(d, dy)}


def dict_get_vjp(dy, d, key):
    """Adjoint of ``d.get(key, default)`` with respect to ``d``."""
    return {key: dy} if not _zero(dy) and key in d else 0.0


def dict_default_vjp(dy, d, key):
    """Adjoint of ``d.get(key, default)`` with respect to ``default``."""
    return 0.0 if key in d else dy


def container_op(a, b, repeat=False):
    """Whether ``a + b`` (``a * b`` with ``repeat``) concatenates (repeats) a list or tuple,
    as Python decides it: two lists or two tuples concatenate; a list or tuple times
    anything but an array repeats; with an array, NumPy broadcasts (arithmetic)."""
    if not repeat:
        return (isinstance(a, list) and isinstance(b, list)) or (
            isinstance(a, tuple) and isinstance(b, tuple))
    if isinstance(a, (list, tuple)):
        return not _is_array_object(b)
    if isinstance(b, (list, tuple)):
        return not _is_array_object(a)
    return False


def _is_array_object(value):
    return isinstance(value, numpy.ndarray) or type(value).__module__.startswith("cupy")


def seq_concat_vjp(dy, a, b):
    """Adjoints of ``a`` and ``b`` from that of ``a + b`` (two lists or two tuples)."""
    if _zero(dy):
        return 0.0, 0.0
    n = len(a)
    return list(dy[:n]), list(dy[n:])


def seq_repeat_vjp(dy, a, b):
    """Adjoint of the container among ``a``, ``b`` from that of ``a * b`` (its copies summed)."""
    seq = a if isinstance(a, (list, tuple)) else b
    if _zero(dy) or not seq:
        return 0.0
    n = len(seq)
    total = list(dy[:n])
    for start in range(n, len(dy), n):
        total = [add_grad(p, q) for p, q in zip(total, dy[start:start + n])]
    return total


def seq_pop(dseq):
    """Split the adjoint of a list into (adjoint without its last item, last item's)."""
    if isinstance(dseq, list) and dseq:
        return dseq[:-1], dseq[-1]
    if getattr(dseq, "ndim", 0):   # the gradient of the array NumPy made of the list
        return dseq[:-1], dseq[-1]
    return dseq, 0.0


# ----- Numbers -----

def zeros_like(x):
    """A zero gradient shaped like ``x`` (a Python 0.0 for a Python number)."""
    if is_array(x):
        xp = namespace(x)
        return xp.zeros(x.shape, dtype=_float_dtype(x, xp))
    if _pytree.is_node(x):
        return materialize(0.0, x)
    return 0.0


def materialize(g, x):
    """Gradient ``g`` given the shape, dtype and type of ``x`` (the API boundary).

    For a structure ``x``, ``g`` is the adjoint mirror of pytree.py; the result has
    ``x``'s structure, zeros where no gradient arrived, None for None.
    """
    if _is_complex(g) and not _is_complex(x):
        _complex_gradient_error()
    if type(x) is numpy.ndarray and type(g) is numpy.ndarray and g.shape == x.shape \
            and g.dtype is x.dtype and x.dtype.kind in "fc":
        return g if g.flags.writeable else g.copy()
    if is_array(x):
        xp = namespace(x)
        dtype = _float_dtype(x, xp)
        if not is_array(g) or g.shape != x.shape:
            g = xp.broadcast_to(xp.asarray(g, dtype=dtype), x.shape).copy()
        elif g.dtype != dtype:
            g = g.astype(dtype)
        elif not _writeable(g):
            g = g.copy()   # the seed, or a broadcast view: the caller gets an array of its own
        return g
    if x is None:
        return None
    if _pytree.is_node(x):
        return _materialize_node(g, x)
    if isinstance(x, complex):
        return complex(g)
    return float(g)


def _complex_gradient_error():
    from srcgrad.errors import UnsupportedError
    raise UnsupportedError(
        "srcgrad: the gradient of a real input came out complex: a complex value reached "
        "the computation where srcgrad could not see it when compiling (a complex argument, "
        "attribute or result of an unknown call), so real-valued rules were applied to it "
        "and the gradient is not to be trusted.",
        hint="Make the value visibly complex inside the function, e.g. "
             "cc = np.asarray(c, dtype=complex) (a new name), or split it into real and imaginary parts.")


def _materialize_node(g, x):
    pair = _pytree.registered(x)
    if pair is not None:
        flatten, unflatten = pair
        kids, aux = flatten(x)
        kids = list(kids)
        grads = [0.0] * len(kids)
        if isinstance(g, dict):
            for attr, ga in g.items():
                value = getattr(x, attr)
                hits = [k for k, c in enumerate(kids) if c is value]
                if not hits:
                    raise TypeError(
                        f"srcgrad: a gradient reached {type(x).__name__}.{attr}, which is not one "
                        f"of the children its registered flatten function returns")
                grads[hits[0]] = add_grad(grads[hits[0]], ga)
        elif not _zero(g):
            raise TypeError(f"srcgrad: internal error: gradient {type(g).__name__} for a "
                            f"{type(x).__name__}")
        return unflatten(aux, [materialize(gk, c) for gk, c in zip(grads, kids)])
    if isinstance(x, dict):
        if not isinstance(g, dict):
            _array_into_container(g)
        part = g.get if isinstance(g, dict) else (lambda k, d: g)
        out = {k: materialize(part(k, 0.0), v) for k, v in x.items()}
        return out if type(x) is dict else type(x)(out) if not hasattr(x, "default_factory") \
            else _same_dict(x, out)
    if isinstance(x, (list, tuple)):
        if not isinstance(g, (list, tuple)):
            _array_into_container(g)
            g = [g] * len(x)
        items = [materialize(gi, xi) for gi, xi in zip(g, x)]
        if _pytree.is_namedtuple(x):
            return type(x)(*items)
        return type(x)(items)
    import copy as _copy
    import dataclasses
    out = _copy.copy(x)
    for f in dataclasses.fields(x):
        gf = g.get(f.name, 0.0) if isinstance(g, dict) else g
        object.__setattr__(out, f.name, materialize(gf, getattr(x, f.name)))
    return out


def _same_dict(x, items):
    out = _copy_module().copy(x)
    out.clear()
    out.update(items)
    return out


def _copy_module():
    import copy
    return copy


# ----- Helpers shared by rules -----

def log_or_zero(a):
    """log(a) where a > 0, else 0: the exponent's gradient of ``a ** b``."""
    if is_array(a):
        xp = namespace(a)
        return xp.where(a > 0, xp.log(xp.where(a > 0, a, 1)), 0)
    import math
    return math.log(a) if a > 0 else 0.0


def _matmul_operands(dy, a, b):
    xp = namespace(dy, a, b)
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    dy2 = xp.asarray(dy)
    if b.ndim == 1:
        dy2 = xp.expand_dims(dy2, -1)
    if a.ndim == 1:
        dy2 = xp.expand_dims(dy2, -2)
    return xp, a2, b2, dy2


def matmul_grad_a(dy, a, b):
    """Gradient of ``a @ b`` with respect to ``a`` (1-D and batched operands too)."""
    if not (is_array(dy) or is_array(a) or is_array(b)):
        return dy * b
    xp, a2, b2, dy2 = _matmul_operands(dy, a, b)
    g = xp.matmul(dy2, xp.swapaxes(b2, -1, -2))
    if a.ndim == 1:
        g = g[..., 0, :]
    return unbroadcast(g, a)


def matmul_grad_b(dy, a, b):
    """Gradient of ``a @ b`` with respect to ``b``."""
    if not (is_array(dy) or is_array(a) or is_array(b)):
        return dy * a
    xp, a2, b2, dy2 = _matmul_operands(dy, a, b)
    g = xp.matmul(xp.swapaxes(a2, -1, -2), dy2)
    if b.ndim == 1:
        g = g[..., :, 0]
    return unbroadcast(g, b)


# ----- Helpers for the NumPy rules -----
# Appended for srcgrad/rules/numpy_*.py, builtins_math.py and runtime_rules.py.
# Each helper works on NumPy and CuPy arrays (and on Python numbers where that
# makes sense). Helpers that are linear in a gradient have adjoint rules of
# their own in rules/runtime_rules.py, so generated code can be differentiated
# again; the others raise the compiler's "no rule" error if that is tried.

import math as _math


def _xp_of(*values):
    return namespace(*values)


def _shape(value):
    shape = getattr(value, "shape", None)
    if shape is not None:
        return tuple(shape)
    return numpy.shape(value)


def _asarray(xp, value):
    return xp.asarray(value)


def broadcast_like(dz, g):
    """``dz`` given the shape of ``g``: broadcast up, or summed down (adjoint of unbroadcast)."""
    target = _shape(g)
    dshape = _shape(dz)
    if dshape == target:
        return dz
    if not target:
        if isinstance(g, (int, float)) and not is_array(dz):
            return dz
        return _xp_of(dz).sum(_asarray(_xp_of(dz), dz))
    xp = _xp_of(dz, g)
    try:
        numpy.broadcast_shapes(dshape, target)
        if numpy.broadcast_shapes(dshape, target) == target:
            return xp.broadcast_to(xp.asarray(dz), target)
    except ValueError:
        pass
    return unbroadcast(dz, g)


def reduce_to(dz, g, axis=None, keepdims=False):
    """Adjoint of ``unreduce(g, x, axis, keepdims)`` with respect to ``g``."""
    gshape = _shape(g)
    dshape = _shape(dz)
    if dshape == gshape:
        return dz
    xp = _xp_of(dz)
    dz = xp.asarray(dz)
    if not gshape:
        return dz.sum()
    if axis is None:
        s = dz.sum(keepdims=True)
    else:
        s = dz.sum(axis=normalize_axis(axis, dz.ndim), keepdims=True)
    if s.shape != gshape:
        s = s.reshape(gshape)
    return s


def sign(x):
    """sign(x) as a float (0 at 0), for Python numbers and arrays."""
    if is_array(x):
        return namespace(x).sign(x)
    return float(bool(x > 0)) - float(bool(x < 0))


def _scalar_or_xp(name):
    def fn(x):
        if is_array(x):
            return getattr(namespace(x), name)(x)
        return getattr(_math, name)(x)
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"``{name}`` of a Python number (math.{name}) or of an array (xp.{name})."
    return fn


sin = _scalar_or_xp("sin")
cos = _scalar_or_xp("cos")
exp = _scalar_or_xp("exp")
sinh = _scalar_or_xp("sinh")
cosh = _scalar_or_xp("cosh")
log = _scalar_or_xp("log")


def cast_like(g, x):
    """Gradient ``g`` cast back to ``x``'s floating dtype (adjoint of a dtype cast)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "fc" or not is_array(g):
        return g
    if g.dtype != dtype:
        return g.astype(dtype)
    return g


def dtype_grad(g, dtype, x):
    """Gradient ``g`` of ``x`` through a cast to ``dtype``: a zero when ``dtype`` is an integer
    or boolean dtype (the cast's derivative is zero almost everywhere, as in PyTorch and JAX).

    Compiled code knows most dtypes (analysis/kinds.py); this decides the others at run time.
    """
    if dtype is None or not _is_integer_dtype(dtype):
        return g
    return zeros_like(x)


def dtype_of(a, dtype=None):
    """``dtype`` if given, else the dtype of ``a`` (what ``np.full_like(a, v)`` makes)."""
    if dtype is not None:
        return dtype
    found = getattr(a, "dtype", None)
    return found if found is not None else numpy.asarray(a).dtype


def array_dtype(a):
    """The dtype of array ``a``; None for a list or dict (whose items keep what is stored)."""
    return getattr(a, "dtype", None)


def _is_integer_dtype(dtype):
    try:
        return numpy.dtype(dtype).kind in "biu"
    except TypeError:
        return False   # a CuPy or other library's dtype object: never an integer one here


def real_like(g, x):
    """The real part of a complex gradient ``g`` of a real ``x`` (where a real value
    entered complex arithmetic: its cotangent is the real part, the JAX convention)."""
    if getattr(g, "dtype", None) is not None:
        if g.dtype.kind != "c" or _is_complex(x):
            return g
        return g.real
    if isinstance(g, complex) and not _is_complex(x):
        return g.real
    return g


def _is_complex(x):
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return dtype.kind == "c"
    if isinstance(x, (list, tuple)):
        return any(_is_complex(v) for v in x)
    return isinstance(x, complex)


def conj_over(z, r):
    """``conj(z) / r``, 0 where ``r`` is 0 (the subgradient complex ``abs`` and ``angle`` use)."""
    if is_array(z) or is_array(r):
        xp = namespace(z, r)
        zero = r == 0
        return xp.where(zero, 0, xp.conj(z) / xp.where(zero, 1, r))
    return 0.0 if r == 0 else z.conjugate() / r


def abs2(z):
    """``|z|**2`` as a real number or array."""
    return z.real * z.real + z.imag * z.imag


def fft_vjp(dy, a, n, axis, inverse):
    """Cotangent of ``a`` through ``np.fft.fft(a)`` (``ifft`` if ``inverse``): the DFT
    matrix is symmetric, so it is the same transform of ``dy``."""
    from srcgrad.errors import UnsupportedError
    if n is not None and n != _shape(a)[axis]:
        raise UnsupportedError(
            f"srcgrad: the gradient of np.fft.{'ifft' if inverse else 'fft'} with n={n} "
            f"(padding or cropping the input) is not supported",
            hint="Pad or crop the input with np.pad or slicing before the transform.")
    xp = namespace(dy, a)
    return (xp.fft.ifft if inverse else xp.fft.fft)(dy, axis=axis)


def clip_below(a, a_min, a_max=None):
    """Mask of the entries that ``clip`` raised to ``a_min`` (False when there is no bound).

    ``clip`` is ``minimum(maximum(a, a_min), a_max)``: where ``a_min > a_max`` the
    upper bound wins, so those entries are not ``a_min``'s.
    """
    if a_min is None:
        return False
    below = a < a_min
    if a_max is None:
        return below
    xp = namespace(a, a_min, a_max)
    return xp.logical_and(below, xp.logical_not(a_min > a_max))


def clip_above(a, a_max, a_min=None):
    """Mask of the entries that ``clip`` lowered to ``a_max`` (False when there is no bound):
    those where ``maximum(a, a_min)`` exceeds it."""
    if a_max is None:
        return False
    if a_min is not None:
        a = namespace(a, a_min).maximum(a, a_min)
    return a > a_max


def log_or_zero_grad(a):
    """1/a where a > 0, else 0: the derivative of ``log_or_zero``."""
    if is_array(a):
        xp = namespace(a)
        return xp.where(a > 0, 1 / xp.where(a > 0, a, 1), 0)
    return 1.0 / a if a > 0 else 0.0


def _move_reduced_last(xp, a, axis):
    axes = normalize_axis(axis, a.ndim)
    rest = [i for i in range(a.ndim) if i not in axes]
    perm = rest + list(axes)
    t = xp.transpose(a, perm)
    lead = t.shape[:len(rest)]
    n = 1
    for ax in axes:
        n *= a.shape[ax]
    return t, perm, lead, n


def _exclusive_cumprod(xp, t):
    ones = xp.ones(t.shape[:-1] + (1,), dtype=t.dtype)
    return xp.concatenate([ones, xp.cumprod(t[..., :-1], axis=-1)], axis=-1)


def prod_others(a, axis=None):
    """For each entry, the product of the other entries of its reduction group.

    The exact derivative of ``prod`` (no division, so zeros are fine).
    """
    if not is_array(a):
        return 1.0
    xp = namespace(a)
    if a.ndim == 0:
        return xp.ones_like(a)
    t, perm, lead, n = _move_reduced_last(xp, a, axis)
    tshape = t.shape
    t = t.reshape(lead + (n,))
    left = _exclusive_cumprod(xp, t)
    right = xp.flip(_exclusive_cumprod(xp, xp.flip(t, -1)), -1)
    out = (left * right).reshape(tshape)
    return xp.transpose(out, tuple(int(i) for i in numpy.argsort(perm)))


def cumprod_vjp(dy, a, axis=None):
    """Gradient of ``cumprod(a, axis)``: exact with zeros (Horner sums, no division)."""
    xp = namespace(a, dy)
    a = xp.asarray(a)
    g = xp.asarray(dy)
    if axis is None:
        t, g, ax = a.reshape(-1), g.reshape(-1), 0
    else:
        t, ax = a, axis % max(a.ndim, 1)
    t = xp.moveaxis(t, ax, -1)
    g = xp.moveaxis(g, ax, -1)
    n = t.shape[-1]
    dtype = numpy.result_type(t.dtype, g.dtype, numpy.float16)
    s = xp.zeros(g.shape, dtype=dtype)
    if n:
        s[..., n - 1] = g[..., n - 1]
        for i in range(n - 2, -1, -1):
            s[..., i] = g[..., i] + t[..., i + 1] * s[..., i + 1]
        s = _exclusive_cumprod(xp, t) * s
    s = xp.moveaxis(s, -1, ax)
    return s.reshape(a.shape)


def _grad_zeros(xp, x, *others):
    dtype = numpy.result_type(*[getattr(v, "dtype", numpy.float64) for v in (x,) + others],
                              numpy.float16)
    return xp.zeros(_shape(x), dtype=dtype)


def _scatter_add(xp, target, index, values):
    if xp is numpy:
        numpy.add.at(target, index, values)
    else:
        xp.add.at(target, index, values)


def take_vjp(dy, a, indices, axis=None):
    """Gradient of ``take(a, indices, axis)``: repeated indices accumulate."""
    xp = namespace(a, dy)
    dy = xp.asarray(dy)
    indices = xp.asarray(indices)
    dx = _grad_zeros(xp, a, dy)
    if axis is None:
        _scatter_add(xp, dx.reshape(-1), indices, dy)
        return dx
    ax = axis % dx.ndim
    k = indices.ndim
    moved = xp.moveaxis(dx, ax, 0)
    g = xp.moveaxis(dy, tuple(range(ax, ax + k)), tuple(range(k)))
    _scatter_add(xp, moved, indices, g)
    return dx


def take_along_axis_vjp(dy, arr, indices, axis):
    """Gradient of ``take_along_axis(arr, indices, axis)``: repeated indices accumulate."""
    xp = namespace(arr, dy)
    dy = xp.asarray(dy)
    indices = xp.asarray(indices)
    dx = _grad_zeros(xp, arr, dy)
    if axis is None:
        _scatter_add(xp, dx.reshape(-1), indices, dy)
        return dx
    ax = axis % dx.ndim
    index = []
    for d in range(dx.ndim):
        if d == ax:
            index.append(indices)
            continue
        shape = [1] * dx.ndim
        if dx.shape[d] == 1:
            index.append(xp.zeros(shape, dtype=xp.intp))
        else:
            shape[d] = dx.shape[d]
            index.append(xp.arange(dx.shape[d]).reshape(shape))
    _scatter_add(xp, dx, tuple(index), dy)
    return dx


def average_weights(a, weights, axis=None):
    """The weights of ``average`` shaped to broadcast against ``a`` (ones when None)."""
    xp = namespace(a, weights)
    if weights is None:
        return xp.ones(_shape(a), dtype=numpy.result_type(getattr(a, "dtype", float), numpy.float16))
    if _shape(weights) == _shape(a):
        return weights
    ndim = len(_shape(a))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = [ax % ndim for ax in axes]
    shape = [1] * ndim
    for ax in axes:
        shape[ax] = _shape(a)[ax]
    return xp.reshape(xp.asarray(weights), shape)


def weights_vjp(g, weights, a, axis=None):
    """A gradient of ``a``'s shape summed down to the shape of ``average``'s weights."""
    if weights is None:
        return None
    if _shape(g) == _shape(weights):
        return g
    xp = namespace(g, weights)
    ndim = len(_shape(a))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = [ax % ndim for ax in axes]
    other = tuple(i for i in range(ndim) if i not in axes)
    g = xp.asarray(g)
    if other:
        g = g.sum(axis=other)
    if sorted(axes) != list(axes):
        order = [sorted(axes).index(ax) for ax in axes]
        g = xp.transpose(g, order)
    return g.reshape(_shape(weights))


def diff_vjp(dy, a, n=1, axis=-1):
    """Gradient of ``diff(a, n, axis)``."""
    xp = namespace(a, dy)
    g = xp.asarray(dy)
    ax = axis % g.ndim
    for _ in range(n):
        pad = [(0, 0)] * g.ndim
        pad[ax] = (1, 0)
        before = xp.pad(g, pad)
        pad[ax] = (0, 1)
        after = xp.pad(g, pad)
        g = before - after
    return g.reshape(_shape(a))


def inverse_axes(axes, x):
    """The permutation that undoes ``transpose(x, axes)`` (None stays None)."""
    if axes is None:
        return None
    ndim = len(_shape(x))
    axes = [int(ax) % ndim for ax in axes]
    return tuple(int(i) for i in numpy.argsort(axes))


def method_axes(axes):
    """The axes of ``x.transpose(*axes)`` as ``np.transpose`` takes them."""
    if len(axes) == 0:
        return None
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        return axes[0]
    return axes


def method_shape(shape):
    """The shape of ``x.reshape(*shape)`` as one tuple."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def _split_pieces(xp, dy, sizes, axis):
    pieces = []
    start = 0
    for n in sizes:
        index = [slice(None)] * dy.ndim
        index[axis] = slice(start, start + n)
        pieces.append(dy[tuple(index)])
        start += n
    return pieces


def concatenate_vjp(dy, arrays, axis=0):
    """Gradient of ``concatenate(arrays, axis)``: a list, one gradient per array."""
    xp = namespace(dy)
    dy = xp.asarray(dy)
    shapes = [_shape(v) for v in arrays]
    if axis is None:
        sizes = [int(numpy.prod(s)) for s in shapes]
        return [p.reshape(s) for p, s in zip(_split_pieces(xp, dy.reshape(-1), sizes, 0), shapes)]
    ax = axis % dy.ndim
    return _split_pieces(xp, dy, [s[ax] for s in shapes], ax)


def _fill_missing(xp, dys, ys):
    out = []
    for d, v in zip(dys, ys):
        shape = _shape(v)
        if d is None or (not is_array(d) and isinstance(d, (int, float)) and d == 0):
            d = xp.zeros(shape, dtype=getattr(v, "dtype", numpy.float64)) + (0 if d is None else d)
        elif _shape(d) != shape:
            d = xp.broadcast_to(xp.asarray(d), shape)
        out.append(d)
    return out


def linspace_weights(y, num, endpoint=True, axis=0):
    """Where each sample of ``linspace(start, stop, num, endpoint, axis=axis)`` (``y``)
    lies between ``start`` (0) and ``stop`` (1), shaped to broadcast against ``y``."""
    xp = namespace(y)
    ndim = max(getattr(y, "ndim", 1), 1)
    shape = [1] * ndim
    shape[axis % ndim] = num
    return xp.reshape(xp.linspace(0.0, 1.0, num, endpoint=endpoint), shape)


def arange_index(y):
    """``0, 1, ..., len(y) - 1``: how many steps each value of ``arange`` is from its start."""
    return namespace(y).arange(len(y), dtype=y.dtype)


def is_given(value):
    """1.0 unless ``value`` is None (an argument left out), else 0.0."""
    return 0.0 if value is None else 1.0


def meshgrid_vjp(dys, xi, indexing="xy"):
    """Gradients of ``meshgrid(*xi, indexing=...)``: a list, one per input, each the
    sum of its grid's cotangent over the other axes (a missing one counts as 0)."""
    n = len(xi)
    grads = []
    for k, x in enumerate(xi):
        g = dys[k] if isinstance(dys, (list, tuple)) else dys
        if g is None or (not is_array(g) and isinstance(g, (int, float)) and g == 0):
            grads.append(0.0)
            continue
        xp = namespace(g, x)
        g = xp.asarray(g)
        axis = (1 - k if k < 2 else k) if indexing == "xy" and n >= 2 else k
        g = xp.sum(g, axis=tuple(i for i in range(g.ndim) if i != axis))
        grads.append(xp.reshape(g, shape_of(x)))
    return grads


def split_vjp(dys, ys, axis=0):
    """Gradient of ``split``/``array_split`` (``ys`` its outputs): the pieces concatenated.

    A missing piece (None or a scalar 0) counts as zeros. ``axis=None`` joins
    the pieces flattened (the adjoint of ``concatenate(..., axis=None)``).
    """
    xp = namespace(*[d for d in dys if d is not None], *ys)
    pieces = _fill_missing(xp, list(dys) if isinstance(dys, (list, tuple)) else [dys] * len(ys), ys)
    if axis is None:
        return xp.concatenate([xp.reshape(p, -1) for p in pieces])
    return xp.concatenate(pieces, axis=axis)


def stack_vjp(dy, arrays, axis=0):
    """Gradient of ``stack(arrays, axis)``: a list, one gradient per array."""
    if not isinstance(arrays, (list, tuple)):
        return dy   # rt.as_array of an array: the array itself
    xp = namespace(dy)
    dy = xp.asarray(dy)
    moved = xp.moveaxis(dy, axis % dy.ndim, 0)
    return [_nested(moved[i], a) for i, a in enumerate(arrays)]


def _nested(g, value):
    """``g`` split like ``value`` where that is a list or tuple (stacked by NumPy)."""
    if isinstance(value, (list, tuple)):
        return [_nested(g[j], v) for j, v in enumerate(value)]
    return g


def as_array(seq):
    """The array NumPy makes of a list or tuple of equally shaped values (``np.asarray``):
    what a rule expecting an array is given for ``np.mean([x, y])`` or ``np.sum(values)``."""
    if not isinstance(seq, (list, tuple)):
        return seq   # a name that held a list and now holds an array
    if not seq:
        return numpy.asarray(seq, dtype=numpy.float64)
    xp = namespace(*seq)
    return xp.stack([as_array(v) if isinstance(v, (list, tuple)) else v for v in seq])


def index_concat(concatenator, items):
    """``np.r_[items]`` or ``np.c_[items]`` (``concatenator``), as a call."""
    return concatenator[tuple(items)]


def index_concat_directives(concatenator, items):
    """``np.r_[...]`` with slices or string directives: differentiable in nothing
    (it has no rule, so an item that needs a gradient is refused at compile time)."""
    return concatenator[tuple(items)]


def index_concat_vjp(dy, concatenator, items):
    """Gradients of ``np.r_[items]`` (items at least 1-D, joined along axis 0) or
    ``np.c_[items]`` (1-D items as columns, joined along the last axis): a list."""
    xp = namespace(dy)
    dy = xp.asarray(dy)
    shapes = [_shape(item) for item in items]
    if concatenator is numpy.c_:
        sizes = [s[-1] if len(s) >= 2 else 1 for s in shapes]
        axis = dy.ndim - 1
    else:
        sizes = [s[0] if s else 1 for s in shapes]
        axis = 0
    return [xp.reshape(p, s) for p, s in zip(_split_pieces(xp, dy, sizes, axis), shapes)]


def stack_fill(dzs, arrays, axis=0):
    """``stack`` of per-array gradients, zeros for missing ones (adjoint of stack_vjp)."""
    if not isinstance(arrays, (list, tuple)):
        return dzs
    xp = namespace(*[d for d in dzs if d is not None], *arrays)
    return xp.stack(_fill_missing(xp, dzs, arrays), axis=axis)


def _stack_vjp_generic(dy, tup, promote, axis_of):
    xp = namespace(dy)
    dy = xp.asarray(dy)
    promoted = [promote(_shape(v)) for v in tup]
    ax = axis_of(promoted)
    pieces = _split_pieces(xp, dy, [s[ax] for s in promoted], ax)
    return [p.reshape(_shape(v)) for p, v in zip(pieces, tup)]


def _atleast(shape, n):
    if len(shape) >= n:
        return shape
    if n == 2:
        return (1,) * (2 - len(shape)) + shape if len(shape) < 2 else shape
    if n == 3:
        if len(shape) == 0:
            return (1, 1, 1)
        if len(shape) == 1:
            return (1,) + shape + (1,)
        return shape + (1,)
    return (1,) * (n - len(shape)) + shape


def hstack_vjp(dy, tup):
    """Gradient of ``hstack(tup)``: a list."""
    return _stack_vjp_generic(dy, tup, lambda s: _atleast(s, 1),
                              lambda shapes: 0 if len(shapes[0]) == 1 else 1)


def vstack_vjp(dy, tup):
    """Gradient of ``vstack(tup)``: a list."""
    return _stack_vjp_generic(dy, tup, lambda s: _atleast(s, 2), lambda shapes: 0)


def dstack_vjp(dy, tup):
    """Gradient of ``dstack(tup)``: a list."""
    return _stack_vjp_generic(dy, tup, lambda s: _atleast(s, 3), lambda shapes: 2)


def column_stack_vjp(dy, tup):
    """Gradient of ``column_stack(tup)``: a list."""
    def promote(s):
        if len(s) < 2:
            return (int(numpy.prod(s)), 1)
        return s
    return _stack_vjp_generic(dy, tup, promote, lambda shapes: 1)


PAD_GATHER_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "empty")


def _pad_source_index(array, pad_width, mode):
    shape = _shape(array)
    size = int(numpy.prod(shape))
    index = numpy.arange(size).reshape(shape)
    if mode not in PAD_GATHER_MODES:
        raise NotImplementedError(
            f"srcgrad: the gradient of np.pad with mode={mode!r} is not supported "
            f"(supported: {', '.join(PAD_GATHER_MODES)}); write a custom sg.Function.")
    if mode in ("constant", "empty"):
        return numpy.pad(index, pad_width, mode="constant", constant_values=-1)
    return numpy.pad(index, pad_width, mode=mode)


def pad_vjp(dy, array, pad_width, mode="constant"):
    """Gradient of ``pad(array, pad_width, mode)`` for the modes that copy entries."""
    xp = namespace(array, dy)
    dy = xp.asarray(dy)
    source = _pad_source_index(array, pad_width, mode).reshape(-1)
    keep = source >= 0
    dx = _grad_zeros(xp, array, dy)
    _scatter_add(xp, dx.reshape(-1), xp.asarray(source[keep]), dy.reshape(-1)[xp.asarray(keep)])
    return dx


def pad_constant_vjp(dy, array, pad_width, constant_values=0):
    """Gradient of ``pad(..., mode='constant', constant_values=c)`` with respect to a scalar ``c``."""
    if numpy.ndim(constant_values) != 0:
        raise NotImplementedError(
            "srcgrad: the gradient with respect to per-axis constant_values of np.pad is not "
            "supported; pass a scalar.")
    xp = namespace(array, dy)
    source = xp.asarray(_pad_source_index(array, pad_width, "constant"))
    return xp.sum(xp.where(source < 0, dy, 0))


def polyval_vjp(dy, p, x):
    """Gradient of ``polyval(p, x)`` with respect to the coefficients ``p`` (1-D):
    ``sum(dy * x ** (n - 1 - i))`` for coefficient ``i``."""
    xp = namespace(dy, x, p)
    p = xp.asarray(p)
    n = p.shape[0]
    powers = xp.asarray(x)[..., None] ** xp.arange(n - 1, -1, -1, dtype=p.dtype)
    g = xp.asarray(dy)[..., None] * powers
    return g.reshape(-1, n).sum(axis=0)


def select_vjp(dy, condlist, choicelist):
    """Gradients of ``np.select``'s choices (a list): each gets ``dy`` where its
    condition is the first true one."""
    xp = namespace(dy, *choicelist)
    dy = xp.asarray(dy)
    taken = xp.zeros(dy.shape, dtype=bool)
    grads = []
    for cond, choice in zip(condlist, choicelist):
        mask = xp.logical_and(cond, xp.logical_not(taken))
        grads.append(unbroadcast(xp.where(mask, dy, 0.0), choice))
        taken = xp.logical_or(taken, cond)
    return grads


def select_default_mask(condlist):
    """Where ``np.select`` takes its default: no condition holds."""
    xp = namespace(*condlist)
    hit = condlist[0]
    for cond in condlist[1:]:
        hit = xp.logical_or(hit, cond)
    return xp.logical_not(hit)


def cross_axes(axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The vector axes ``(of a, of b, of the result)`` of ``np.cross``: ``axis``, when
    given, overrides the three."""
    if axis is not None:
        return axis, axis, axis
    return axisa, axisb, axisc


def rollaxis_destination(a, axis, start=0):
    """Where ``rollaxis(a, axis, start)`` puts ``axis`` (the adjoint moves it back)."""
    n = len(_shape(a))
    axis = axis % n
    start = start + n if start < 0 else start
    return start - 1 if start > axis else start


def negate_shift(shift):
    """``-shift`` for an int or a tuple of ints (the adjoint of ``roll``)."""
    if isinstance(shift, (tuple, list)):
        return tuple(-s for s in shift)
    return -shift


def tile_vjp(dy, A, reps):
    """Gradient of ``tile(A, reps)``: the tiles summed."""
    xp = namespace(A, dy)
    dy = xp.asarray(dy)
    shape = _shape(A)
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    n = max(len(shape), len(reps))
    s = (1,) * (n - len(shape)) + shape
    r = (1,) * (n - len(reps)) + reps
    inter = []
    for ri, si in zip(r, s):
        inter += [ri, si]
    g = dy.reshape(inter).sum(axis=tuple(range(0, 2 * n, 2)))
    return g.reshape(shape)


def _host(value):
    """A host (NumPy) copy of a small index-like value."""
    if hasattr(value, "get"):
        return value.get()
    return numpy.asarray(value)


def repeat_vjp(dy, a, repeats, axis=None):
    """Gradient of ``repeat(a, repeats, axis)``: the copies summed."""
    xp = namespace(a, dy)
    dy = xp.asarray(dy)
    dx = _grad_zeros(xp, a, dy)
    if axis is None:
        n = dx.size
        index = xp.asarray(numpy.repeat(numpy.arange(n), _host(repeats)))
        _scatter_add(xp, dx.reshape(-1), index, dy.reshape(-1))
        return dx
    ax = axis % dx.ndim
    index = xp.asarray(numpy.repeat(numpy.arange(dx.shape[ax]), _host(repeats)))
    _scatter_add(xp, xp.moveaxis(dx, ax, 0), index, xp.moveaxis(dy, ax, 0))
    return dx


def array_vjp(dy, obj):
    """Gradient of ``np.array(obj)``/``asarray``: the same nesting as ``obj``.

    A list of arrays or numbers gets a list of gradients, one per item.
    """
    if isinstance(obj, (list, tuple)):
        return [array_vjp(dy[i], item) for i, item in enumerate(obj)]
    if is_array(obj):
        return cast_like(unbroadcast(dy, obj), obj)
    return dy


def diag_vjp(dy, v, k=0):
    """Gradient of ``diag(v, k)`` (1-D ``v`` builds a matrix, 2-D ``v`` extracts a diagonal)."""
    xp = namespace(v, dy)
    if len(_shape(v)) == 1:
        return xp.diagonal(xp.asarray(dy), k).copy()
    return diagonal_vjp(dy, v, k, 0, 1)


def diagonal_vjp(dy, a, offset=0, axis1=0, axis2=1):
    """Gradient of ``diagonal(a, offset, axis1, axis2)``: ``dy`` written onto that diagonal."""
    xp = namespace(a, dy)
    dy = xp.asarray(dy)
    dx = _grad_zeros(xp, a, dy)
    n = dy.shape[-1]
    i = xp.arange(n)
    moved = xp.moveaxis(dx, (axis1, axis2), (-2, -1))
    moved[..., i + max(-offset, 0), i + max(offset, 0)] = dy
    return dx


def dot_grad_a(dy, a, b):
    """Gradient of ``dot(a, b)`` with respect to ``a`` (every ``ndim`` case of np.dot)."""
    if not is_array(a) or not is_array(b) or a.ndim == 0 or b.ndim == 0:
        return unbroadcast(dy * b, a)
    xp = namespace(dy, a, b)
    dy = xp.asarray(dy)
    if b.ndim == 1:
        return dy[..., None] * b
    daxes = tuple(range(a.ndim - 1, dy.ndim))
    baxes = tuple(i for i in range(b.ndim) if i != b.ndim - 2)
    return xp.tensordot(dy, b, axes=(daxes, baxes))


def dot_grad_b(dy, a, b):
    """Gradient of ``dot(a, b)`` with respect to ``b``."""
    if not is_array(a) or not is_array(b) or a.ndim == 0 or b.ndim == 0:
        return unbroadcast(dy * a, b)
    xp = namespace(dy, a, b)
    dy = xp.asarray(dy)
    lead = tuple(range(a.ndim - 1))
    g = xp.tensordot(a, dy, axes=(lead, lead))
    if b.ndim == 1:
        return g
    return xp.moveaxis(g, 0, -2)


def inner_axes(a, b):
    """The ``tensordot`` axes of ``inner(a, b)``: the last of each, none for a scalar."""
    na, nb = numpy.ndim(a), numpy.ndim(b)
    return ((na - 1,), (nb - 1,)) if na and nb else 0


def _tensordot_axes(a, b, axes):
    if isinstance(axes, int):
        return list(range(a.ndim - axes, a.ndim)), list(range(axes))
    aa, bb = axes
    aa = [aa] if isinstance(aa, int) else list(aa)
    bb = [bb] if isinstance(bb, int) else list(bb)
    return [x % a.ndim for x in aa], [x % b.ndim for x in bb]


def tensordot_grad_a(dy, a, b, axes=2):
    """Gradient of ``tensordot(a, b, axes)`` with respect to ``a``."""
    xp = namespace(dy, a, b)
    a, b = xp.asarray(a), xp.asarray(b)  # a Python number is a 0-d operand
    a_axes, b_axes = _tensordot_axes(a, b, axes)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    g = xp.tensordot(xp.asarray(dy), b, axes=(list(range(len(a_free), len(a_free) + len(b_free))), b_free))
    dest = a_free + [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
    return xp.transpose(g, tuple(int(i) for i in numpy.argsort(dest)))


def tensordot_grad_b(dy, a, b, axes=2):
    """Gradient of ``tensordot(a, b, axes)`` with respect to ``b``."""
    xp = namespace(dy, a, b)
    a, b = xp.asarray(a), xp.asarray(b)  # a Python number is a 0-d operand
    a_axes, b_axes = _tensordot_axes(a, b, axes)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    g = xp.tensordot(a, xp.asarray(dy), axes=(a_free, list(range(len(a_free)))))
    dest = [b_axes[a_axes.index(i)] for i in sorted(a_axes)] + b_free
    return xp.transpose(g, tuple(int(i) for i in numpy.argsort(dest)))


def _einsum_specs(subscripts, shapes):
    import string
    s = subscripts.replace(" ", "")
    if "->" in s:
        lhs, out = s.split("->")
    else:
        lhs, out = s, None
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError("srcgrad: einsum subscripts do not match the number of operands")
    used = set(c for c in s if c.isalpha())
    free = [c for c in string.ascii_letters if c not in used]
    counts = []
    for spec, shape in zip(ins, shapes):
        counts.append(len(shape) - (len(spec) - 3) if "..." in spec else 0)
    n_ell = max(counts) if counts else 0
    ell = "".join(free[:n_ell])
    free = free[n_ell:]
    specs = [spec.replace("...", ell[n_ell - k:] if k else "") for spec, k in zip(ins, counts)]
    if out is None:
        letters = [c for spec in ins for c in spec if c.isalpha()]
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    else:
        out = out.replace("...", ell)
    return specs, out, free


def _einsum_sublists(args):
    """The subscripts string and operands of einsum's sublist form
    ``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])``."""
    import string

    def letters(sublist):
        return "".join("..." if k is Ellipsis else string.ascii_letters[k] for k in sublist)

    ops, subs = list(args[0::2]), list(args[1::2])
    out = ops.pop() if len(args) % 2 else None
    subscripts = ",".join(letters(s) for s in subs)
    return (subscripts if out is None else subscripts + "->" + letters(out)), ops


def einsum_vjp(dy, subscripts, operands):
    """Gradients of ``einsum(subscripts, *operands)``: the pair (gradient of
    ``subscripts``, list with one gradient per entry of ``operands``).

    The subscripts-string form has no gradient for ``subscripts``; in the sublist
    form ``einsum(op0, sublist0, op1, sublist1, ..., [out])`` the first is op0's
    and the sublists get None. Each gradient is itself an einsum; repeated
    indices in one operand (a diagonal) are handled with identity matrices,
    indices summed away inside one operand with vectors of ones, and broadcast
    ellipsis dimensions are summed back.
    """
    if isinstance(subscripts, str):
        return None, _einsum_grads(dy, subscripts, operands)
    spec, ops = _einsum_sublists((subscripts,) + tuple(operands))
    grads = _einsum_grads(dy, spec, ops)
    # operands[k] is argument k + 1: an operand where that is even (not the output sublist)
    return grads[0], [grads[(k + 1) // 2] if k % 2 and (k + 1) // 2 < len(grads) else None
                      for k in range(len(operands))]


def _einsum_grads(dy, subscripts, operands):
    xp = namespace(dy, *operands)
    ops = [xp.asarray(o) for o in operands]
    specs, out, free = _einsum_specs(subscripts, [o.shape for o in ops])
    sizes = {}
    for spec, o in zip(specs, ops):
        for c, n in zip(spec, o.shape):
            sizes[c] = max(sizes.get(c, 1), n)
    full = [xp.broadcast_to(o, tuple(sizes[c] for c in spec)) for spec, o in zip(specs, ops)]
    dy = xp.asarray(dy)
    grads = []
    for i, spec in enumerate(specs):
        others = [(specs[j], full[j]) for j in range(len(specs)) if j != i]
        new_spec = []
        extra = []
        seen = set()
        spare = iter(free)
        for c in spec:
            if c in seen:
                n = next(spare)
                new_spec.append(n)
                extra.append((c + n, xp.eye(sizes[c], dtype=dy.dtype)))
            else:
                seen.add(c)
                new_spec.append(c)
        available = set(out) | set("".join(s for s, _ in others)) | set("".join(s for s, _ in extra))
        for c in sorted(set(new_spec) - available):
            extra.append((c, xp.ones(sizes[c], dtype=dy.dtype)))
        expr = ",".join([out] + [s for s, _ in others] + [s for s, _ in extra]) + "->" + "".join(new_spec)
        g = xp.einsum(expr, dy, *[o for _, o in others], *[o for _, o in extra])
        grads.append(unbroadcast(g, ops[i]) if g.shape != ops[i].shape else g)
    return grads


def kron_vjp(dy, a, b):
    """Gradients of ``kron(a, b)``: the pair ``(da, db)``."""
    xp = namespace(dy, a, b)
    a = xp.asarray(a)
    b = xp.asarray(b)
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + a.shape
    sb = (1,) * (n - b.ndim) + b.shape
    inter = []
    for x, y in zip(sa, sb):
        inter += [x, y]
    g = xp.asarray(dy).reshape(inter)
    b_inter = []
    a_inter = []
    for x, y in zip(sa, sb):
        a_inter += [x, 1]
        b_inter += [1, y]
    da = (g * b.reshape(b_inter)).sum(axis=tuple(range(1, 2 * n, 2))).reshape(a.shape)
    db = (g * a.reshape(a_inter)).sum(axis=tuple(range(0, 2 * n, 2))).reshape(b.shape)
    return da, db


def append_vjp(dy, arr, values, axis=None):
    """Gradients of ``append(arr, values, axis)``: the pair ``(darr, dvalues)``."""
    xp = namespace(dy)
    dy = xp.asarray(dy)
    if axis is None:
        n = int(numpy.prod(_shape(arr)))
        flat = dy.reshape(-1)
        return flat[:n].reshape(_shape(arr)), flat[n:].reshape(_shape(values))
    ax = axis % dy.ndim
    n = _shape(arr)[ax]
    first, second = _split_pieces(xp, dy, [n, dy.shape[ax] - n], ax)
    return first, unbroadcast(second, values)


def convolve_vjp(dy, a, v, mode="full"):
    """Gradients of ``convolve(a, v, mode)``: the pair ``(da, dv)``."""
    xp = namespace(dy, a, v)
    a = xp.asarray(a)
    v = xp.asarray(v)
    dy = xp.asarray(dy)
    n, m = a.shape[0], v.shape[0]
    full = n + m - 1
    if mode == "full":
        start = 0
    elif mode == "same":
        start = (min(n, m) - 1) // 2
    elif mode == "valid":
        start = min(n, m) - 1
    else:
        raise ValueError(f"srcgrad: unknown convolve mode {mode!r}")
    g = xp.zeros(full, dtype=numpy.result_type(dy.dtype, a.dtype, v.dtype))
    g[start:start + dy.shape[0]] = dy
    return xp.correlate(g, v, "valid"), xp.correlate(g, a, "valid")


def _safe_div(xp, num, den):
    return xp.where(den == 0, 0, num / xp.where(den == 0, 1, den))


def _tie_weights(xp, mask, axis):
    mask = mask.astype(numpy.float64) if mask.dtype == bool else mask
    return mask / xp.sum(mask, axis=axis, keepdims=True)


def norm_vjp(dy, x, y, ord=None, axis=None, keepdims=False, kind="norm"):
    """Gradient of ``np.linalg.norm`` (``kind='vector'``/``'matrix'``: the array-API norms).

    Kinks: at a zero vector the gradient of the 2-norm (and p-norms) is 0; ties
    of the inf-norms (and of the matrix 1/inf norms) share the gradient evenly;
    for ``ord=1`` the gradient at 0 is 0 (``sign``). Matrix 2-norms use the top
    singular pair (ties in singular values are not split).
    """
    xp = namespace(x, dy)
    x = xp.asarray(x)
    nd = x.ndim
    if kind == "vector":
        axes = tuple(range(nd)) if axis is None else (
            tuple(a % nd for a in axis) if isinstance(axis, (tuple, list)) else (axis % nd,))
        if ord is None:
            ord = 2
        matrix = False
        if axis is None and nd != 1:
            # the array-API vector norm of all entries: flatten
            g = norm_vjp(xp.reshape(xp.asarray(dy), ()), x.reshape(-1),
                         xp.reshape(xp.asarray(y), ()), ord, 0, False, "vector")
            return g.reshape(x.shape)
    elif kind == "matrix":
        axes = (nd - 2, nd - 1)
        matrix = True
        if ord is None:
            ord = "fro"
    else:
        if axis is None:
            if ord is None:
                dyf = unreduce(dy, x, None, keepdims)
                return dyf * _safe_div(xp, x, unreduce_like(y, x, None, keepdims))
            axes = tuple(range(nd))
        elif isinstance(axis, (tuple, list)):
            axes = tuple(a % nd for a in axis)
        else:
            axes = (axis % nd,)
        matrix = len(axes) == 2
    dyf = unreduce(dy, x, axes, keepdims)
    yf = unreduce_like(y, x, axes, keepdims)
    if not matrix:
        ax = axes[0] if len(axes) == 1 else axes
        if ord is None or ord == 2:
            g = _safe_div(xp, x, yf)
        elif ord == numpy.inf or ord == -numpy.inf:
            ab = xp.abs(x)
            g = xp.sign(x) * _tie_weights(xp, ab == yf, ax)
        elif ord == 0:
            g = xp.zeros_like(x)
        elif ord == 1:
            g = xp.sign(x)
        else:
            g = xp.sign(x) * _safe_div(xp, xp.abs(x) ** (ord - 1), yf ** (ord - 1))
        return dyf * g
    r, c = axes
    if ord is None or ord == "fro":
        return dyf * _safe_div(xp, x, yf)
    if ord in ("nuc", 2, -2):
        xm = xp.moveaxis(x, (r, c), (-2, -1))
        u, s, vh = xp.linalg.svd(xm, full_matrices=False)
        if ord == "nuc":
            gm = xp.matmul(u, vh)
        else:
            k = 0 if ord == 2 else -1
            gm = u[..., :, k:k + 1 or None] * vh[..., k:k + 1 or None, :]
        return dyf * xp.moveaxis(gm, (-2, -1), (r, c))
    if ord in (1, -1):
        sums = xp.sum(xp.abs(x), axis=r, keepdims=True)
        best = (xp.max if ord == 1 else xp.min)(sums, axis=c, keepdims=True)
        return dyf * xp.sign(x) * _tie_weights(xp, sums == best, c)
    if ord in (numpy.inf, -numpy.inf):
        sums = xp.sum(xp.abs(x), axis=c, keepdims=True)
        best = (xp.max if ord > 0 else xp.min)(sums, axis=r, keepdims=True)
        return dyf * xp.sign(x) * _tie_weights(xp, sums == best, r)
    raise NotImplementedError(f"srcgrad: the gradient of a matrix norm with ord={ord!r}")


def solve_vjp(dy, a, b, y):
    """Gradients of ``x = linalg.solve(a, b)``: the pair ``(da, db)`` (NumPy 2 semantics:
    ``b`` is a vector when it is 1-D)."""
    xp = namespace(dy, a, b)
    dy = xp.asarray(dy)
    at = xp.swapaxes(a, -1, -2)
    if len(_shape(b)) == 1:
        gb = xp.linalg.solve(at, dy[..., None])[..., 0]
        ga = -gb[..., :, None] * y[..., None, :]
    else:
        gb = xp.linalg.solve(at, dy)
        ga = -xp.matmul(gb, xp.swapaxes(y, -1, -2))
    return unbroadcast(ga, a), unbroadcast(gb, b)


def cholesky_vjp(dy, L):
    """Gradient of ``L = linalg.cholesky(a)`` (lower), symmetrized like PyTorch's:
    it assumes ``a`` symmetric and is itself symmetric."""
    xp = namespace(dy, L)
    lt = xp.swapaxes(L, -1, -2)
    phi = xp.tril(xp.matmul(lt, dy))
    n = L.shape[-1]
    phi = phi - 0.5 * phi * xp.eye(n, dtype=phi.dtype)
    linv = xp.linalg.inv(L)
    g = xp.matmul(xp.swapaxes(linv, -1, -2), xp.matmul(phi, linv))
    return 0.5 * (g + xp.swapaxes(g, -1, -2))


def eigh_vjp(dy, y):
    """Gradient of ``(w, v) = linalg.eigh(a)`` (``dy`` the pair of cotangents, either
    may be missing): ``V (diag(dw) + F * (V^T dv)) V^T`` with ``F_ij = 1 / (w_j - w_i)``
    off the diagonal, symmetrized like ``eigvalsh``'s and ``cholesky``'s (``a``
    assumed symmetric, eigenvalues distinct)."""
    w, v = y[0], y[1]
    dw, dv = seq_item(dy, 0), seq_item(dy, 1)
    xp = namespace(v)
    n = v.shape[-1]
    vt = xp.swapaxes(v, -1, -2)
    middle = xp.zeros(v.shape, dtype=v.dtype)
    if dw is not None and not (isinstance(dw, (int, float)) and dw == 0):
        middle = middle + xp.eye(n, dtype=v.dtype) * xp.asarray(dw)[..., None, :]
    if dv is not None and not (isinstance(dv, (int, float)) and dv == 0):
        eye = xp.eye(n, dtype=bool)
        gaps = w[..., None, :] - w[..., :, None]
        f = xp.where(eye, 0.0, 1.0 / xp.where(eye, 1.0, gaps))
        middle = middle + f * xp.matmul(vt, xp.asarray(dv))
    g = xp.matmul(v, xp.matmul(middle, vt))
    return 0.5 * (g + xp.swapaxes(g, -1, -2))


def cofactor(a):
    """The cofactor matrix of ``a`` (batched over leading axes): the gradient of
    ``det(a)``. ``det(a) * inv(a).T`` where ``a`` is invertible; from the SVD
    ``a = u s vh`` where it is singular (``det(u) det(vh) u diag(prod of the other
    singular values) vh``), which stays finite and exact there (issue 11: the
    gradient of det at a singular matrix raised LinAlgError)."""
    xp = namespace(a)
    det = xp.linalg.det(a)
    if bool(xp.all(det != 0)):
        try:
            inv = xp.linalg.inv(a)
            if bool(xp.all(xp.isfinite(inv))):
                return xp.asarray(det)[..., None, None] * xp.swapaxes(inv, -1, -2)
        except numpy.linalg.LinAlgError:
            pass
    u, s, vh = xp.linalg.svd(a)
    n = s.shape[-1]
    others = xp.where(xp.eye(n, dtype=bool), 1.0, s[..., None, :])
    adj_s = xp.prod(others, axis=-1)
    sign = xp.linalg.det(u) * xp.linalg.det(vh)
    return xp.asarray(sign)[..., None, None] * xp.matmul(u * adj_s[..., None, :], vh)


def matrix_power_vjp(dy, a, n):
    """Gradient of ``linalg.matrix_power(a, n)`` (negative ``n`` through the inverse)."""
    xp = namespace(dy, a)
    dy = xp.asarray(dy)
    if n == 0:
        return xp.zeros_like(dy)
    base = a if n > 0 else xp.linalg.inv(a)
    k = abs(n)
    bt = xp.swapaxes(base, -1, -2)
    powers = [xp.broadcast_to(xp.eye(a.shape[-1], dtype=dy.dtype), a.shape)]
    for _ in range(k - 1):
        powers.append(xp.matmul(powers[-1], bt))
    g = 0
    for i in range(k):
        g = g + xp.matmul(xp.matmul(powers[i], dy), powers[k - 1 - i])
    if n < 0:
        g = -xp.matmul(bt, xp.matmul(g, bt))
    return g


def builtin_sum_vjp(dy, iterable):
    """Gradient of Python's ``sum(iterable)`` with respect to the iterable.

    An array (summed over its first axis) gets an array; a list gets a list.
    """
    if is_array(iterable):
        xp = namespace(iterable, dy)
        return xp.broadcast_to(xp.asarray(dy), iterable.shape)
    return [unbroadcast(dy, item) for item in iterable]


def minmax_vjp(dy, y, args):
    """Gradients of Python's ``max``/``min`` (``args`` its positional arguments).

    Ties share the gradient evenly, like ``np.max``. One iterable argument gets
    ``[gradient of the iterable]``, several arguments a list of one each.
    """
    items = args[0] if len(args) == 1 else args
    if is_array(items):
        xp = namespace(items, dy)
        mask = items == y
        return [dy * mask / mask.sum()]
    hits = [1.0 if item == y else 0.0 for item in items]
    count = sum(hits)
    grads = [dy * h / count for h in hits]
    return [grads] if len(args) == 1 else grads


def hypot_vjp(dy, y, coordinates):
    """Gradients of ``math.hypot(*coordinates)``: a list (0 at the origin)."""
    if y == 0:
        return [0.0 for _ in coordinates]
    return [dy * c / y for c in coordinates]


def seq_onehot(dz, dseq, index):
    """A list like ``dseq`` holding ``dz`` at ``index`` and zeros elsewhere (an array
    like it where ``dseq`` is an array: the adjoint of ``seq_item``)."""
    if getattr(dseq, "ndim", 0) and not isinstance(dseq, (list, tuple)):
        xp = namespace(dseq, dz)
        out = xp.zeros(dseq.shape, dtype=numpy.result_type(dseq.dtype, getattr(dz, "dtype", float)))
        out[index] = dz
        return out
    if not isinstance(dseq, (list, tuple)):
        return dz
    out = [0.0] * len(dseq)
    out[index] = dz
    return out


def seq_unpop(dz):
    """Adjoint of ``seq_pop``: ``(d_rest, d_last)`` joined back into one list."""
    rest, last = dz
    rest = list(rest) if isinstance(rest, (list, tuple)) else []
    return rest + [last]


def log_base(base):
    """``log(base)``, or 1.0 when there is no base (``math.log(x)``)."""
    if base is None:
        return 1.0
    return log(base)


def expand_to(dw, dz, axis=None, keepdims=False):
    """Adjoint of ``reduce_to(dz, g, axis, keepdims)``: ``dw`` broadcast back to ``dz``'s shape."""
    if not _shape(dw):
        xp = namespace(dw, dz)
        return xp.broadcast_to(xp.asarray(dw), _shape(dz))
    return unreduce(dw, dz, axis, keepdims)


def pad_adjoint_mode(mode):
    """The ``np.pad`` mode whose result is the adjoint of ``pad_vjp`` (zeros for 'empty')."""
    return "constant" if mode == "empty" else mode


def log_base_grad(dy, y, base):
    """Gradient of ``math.log(x, base)`` with respect to ``base`` (0.0 without a base)."""
    if base is None:
        return 0.0
    return -dy * y / (base * log(base))


def either(first, second):
    """``first`` unless it is None, else ``second`` (NumPy 2's ``clip(min=...)`` spelling)."""
    return second if first is None else first


# ----- Zero adjoints -----

def has_grad(g):
    """False while an adjoint is still a scalar zero (as it starts, or a zero scaled by a number)."""
    if type(g) is float:
        return g != 0.0
    if getattr(g, "ndim", 1) == 0 and not isinstance(g, (list, tuple)):
        return bool(g != 0)
    return True


def is_scalar(value):
    """A Python or NumPy number, or an array of one element."""
    size = getattr(value, "size", None)
    if size is not None:
        return size == 1
    return isinstance(value, (int, float, complex, numpy.number))


_ONE_SEEDS = {}  # (shape, dtype) -> read-only ones: the seed of size-1 NumPy outputs


def default_seed(out):
    """The cotangent 1 for a scalar output (ones for a size-1 array); others need grad_outputs."""
    kind = type(out)
    if kind is float:
        return 1.0
    if kind is numpy.ndarray and out.size == 1 and out.dtype.kind == "f":
        key = (out.shape, out.dtype)
        seed = _ONE_SEEDS.get(key)
        if seed is None:
            seed = numpy.ones(out.shape, out.dtype)
            seed.flags.writeable = False  # _finish copies a gradient that is this seed
            seed = _ONE_SEEDS.setdefault(key, seed)
        return seed
    if kind is numpy.float64 or kind is numpy.float32:
        return kind(1.0)
    if out is None:
        raise returned_none()
    if getattr(out, "dtype", None) is not None and out.dtype.kind == "c" or isinstance(out, complex):
        raise ValueError(
            "grad can be implicitly created only for real scalar outputs: the output is complex; "
            "pass grad_outputs= (PyTorch's convention: the cotangent dL/dRe(out) + 1j*dL/dIm(out)"
            " of a real loss L), or return a real value such as abs(out) or out.real.")
    if not is_scalar(out):
        raise ValueError(
            "grad can be implicitly created only for scalar outputs: the output has shape "
            f"{getattr(out, 'shape', None)}; pass grad_outputs= (the cotangent, PyTorch's "
            "`gradient` argument) with the output's shape.")
    if hasattr(out, "shape"):
        xp = namespace(out)
        dtype = out.dtype if out.dtype.kind in "fc" else xp.float64
        return xp.ones(out.shape, dtype=dtype)
    return 1.0


def returned_none():
    """The error for a function that returned nothing where its output is differentiated."""
    return ValueError(
        "srcgrad: the function returned None (nothing) on this call; a gradient needs it to "
        "return the value to differentiate. Check that every path ends with `return <value>`.")


# ----- Hooks and custom Functions -----

def run_hook(hook, g, value):
    """Call ``hook`` with the complete gradient of ``value``; a returned array replaces it."""
    if not has_grad(g) and is_array(value):
        g = zeros_like(value)
    result = hook(g)
    if result is None:
        return g
    rshape, vshape = tuple(getattr(result, "shape", ())), tuple(getattr(value, "shape", ()))
    if rshape != vshape and (len(rshape) > len(vshape) or any(
            r not in (1, v) for r, v in zip(rshape[::-1], vshape[::-1]))):
        raise ValueError(f"srcgrad: hook {getattr(hook, '__name__', hook)!r} returned a gradient of "
                         f"shape {rshape} for a value of shape {vshape}")
    return result


def function_forward(cls, args, needs_input_grad):
    """Run a custom srcgrad.Function's forward; returns (outputs, ctx)."""
    from srcgrad.custom_function import function_forward as run
    return run(cls, args, needs_input_grad)


def function_backward(cls, ctx, grad_outputs):
    """Run a custom srcgrad.Function's backward; one gradient per forward input."""
    from srcgrad.custom_function import function_backward as run
    return run(cls, ctx, grad_outputs)


def or_zero(g):
    """A gradient a custom backward returned, with None read as "no gradient" (0.0)."""
    return 0.0 if g is None else g


def check_unshared(value, other, error, index=None):
    """Raise ``error`` if updating ``value`` (its part ``value[index]``) in place would
    also change ``other``.

    ``other`` shares with ``value`` when it is the same list, or an array (or a
    list, tuple or dict holding one, at any depth) whose memory overlaps the part
    of ``value`` written.
    """
    if other is None:
        return
    if isinstance(value, (list, dict)):
        if any(o is value for o in _leaves(other, containers=True)):
            raise error
        return
    if isinstance(value, numpy.flatiter):   # y.flat[k] = v writes into y
        value, index = value.base, None
    if not is_array(value):
        return
    region = _written_region(value, index)
    xp = namespace(value)
    for o in _leaves(other):
        if is_array(o) and type(o).__module__ == type(value).__module__ and _overlap(xp, region, o):
            raise error


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


def tie_share(mask, axis, x):
    """Each maximum's share of a max/min gradient (ties split evenly), in ``x``'s float dtype.

    A boolean count would promote a float32 gradient to float64.
    """
    xp = namespace(x)
    weights = mask.astype(_float_dtype(x, xp))
    weights /= weights.sum(axis=axis, keepdims=True)
    return weights
