"""Adjoint rules of NumPy's shape functions: reshapes, axis permutations, copies,
diagonals and triangles (joins and splits: numpy_joins.py; products:
numpy_products.py).

Rules with a var-positional parameter (``x.reshape(*shape)``,
``x.transpose(*axes)``) return, for that parameter, a list with one gradient per
positional argument it collected (or return just the gradient of ``self`` when
the varargs are not differentiable).
"""

import numpy as np

from srcgrad import inlined, runtime as rt
from srcgrad.rules import Attribute, Method, adjoint, linear, nondifferentiable
from srcgrad.runtime.arrays import float_dtype, grad_zeros, is_array, namespace, scatter_add, shape_tuple
from srcgrad.runtime.broadcast import cast_like, unbroadcast

xp = None  # placeholder: the array namespace, bound in generated code

nondifferentiable(
    np.triu_indices, np.tril_indices, np.diag_indices, np.unravel_index,
    np.ravel_multi_index, np.broadcast_shapes,
)

# ----- Reshaping -----


@adjoint(np.reshape)
def reshape(dy, y, a, shape=None, order="C"):
    return xp.reshape(dy, rt.shape_of(a), order=rt.index_order(a, order))


@adjoint(Method("reshape"))
def reshape_method(dy, y, self, *shape, order="C"):
    return xp.reshape(dy, self.shape, order=rt.index_order(self, order))


@adjoint(np.ravel)
def ravel(dy, y, a, order="C"):
    return xp.reshape(dy, rt.shape_of(a), order=rt.index_order(a, order))


@adjoint(Method("ravel"))
def ravel_method(dy, y, self, order="C"):
    return xp.reshape(dy, self.shape, order=rt.index_order(self, order))


@adjoint(Method("flatten"))
def flatten_method(dy, y, self, order="C"):
    return xp.reshape(dy, self.shape, order=rt.index_order(self, order))


@rt.helper
def index_order(a, order="C"):
    """"C" or "F": the index order in which ``reshape``/``ravel``/``flatten`` with ``order``
    read ``a``, so that its gradient and tangent are read back in it (another array, as a
    tangent or a gradient, may lie in memory otherwise). "A" is "F" for an array that is
    Fortran-contiguous only; "K" is the order of ``a``'s strides."""
    order = "C" if order is None else str(order).upper()
    if order in ("C", "F"):
        return order
    flags = getattr(a, "flags", None)
    if flags is None or flags.c_contiguous:
        return "C"
    if flags.f_contiguous:
        return "F"
    if order == "A":
        return "C"
    strides = [s for s, n in zip(a.strides, a.shape) if n > 1]
    if all(s > 0 for s in strides) and strides in (sorted(strides, reverse=True), sorted(strides)):
        return "C" if strides == sorted(strides, reverse=True) else "F"
    from srcgrad.errors import UnsupportedError
    raise UnsupportedError(
        f"srcgrad: order='K' of an array with strides {a.strides} reads it in neither C "
        "nor Fortran order; its gradient is not supported",
        hint="Pass order='C' or order='F', or copy the array first (np.ascontiguousarray).")


nondifferentiable(rt.index_order)
# the integer indices srcgrad/inlined.py's versions of np.insert and sliding_window_view gather
# by, the count its np.var(mean=) divides by, and np.pad's widths
nondifferentiable(inlined.insert_index, inlined.window_index, inlined.reduction_count,
                  inlined.pad_pairs, inlined.ramp_fractions)


@adjoint(np.squeeze)
def squeeze(dy, y, a, axis=None):
    return xp.reshape(dy, rt.shape_of(a))


@adjoint(Method("squeeze"))
def squeeze_method(dy, y, self, axis=None):
    return xp.reshape(dy, self.shape)


@adjoint(np.expand_dims)
def expand_dims(dy, y, a, axis):
    return xp.reshape(dy, rt.shape_of(a))


@adjoint(np.atleast_1d, np.atleast_2d, np.atleast_3d)
def atleast_nd(dy, y, ary):
    """One argument only (several arguments return a list: refused at binding)."""
    return xp.reshape(dy, rt.shape_of(ary))


@adjoint(np.broadcast_to)
def broadcast_to(dy, y, array, shape):
    return rt.unbroadcast(dy, array)


@adjoint(Method("tolist"))
def tolist_method(dy, y, self):
    """``x.tolist()``: the (nested) list's gradient back as an array of ``x``'s shape."""
    return rt.tolist_vjp(dy, self)


@rt.helper
def tolist_vjp(dy, a):
    """A nested list of gradients (None: zero) as an array shaped like ``a``; a number
    where a list stands (a zero tangent of a row, or of the whole list, in a second
    derivative) fills its block."""
    def filled(g, shape):
        if isinstance(g, (list, tuple)) and shape:
            return [filled(v, shape[1:]) for v in g]
        return xp.broadcast_to(xp.asarray(0.0 if g is None else g), shape) if shape else (
            0.0 if g is None else g)
    xp = namespace(a)
    return xp.reshape(xp.asarray(filled(dy, shape_tuple(a)), dtype=float_dtype(a, xp)), shape_tuple(a))


@adjoint(Method("item"))
def item_method(dy, y, self):
    """``x.item()`` of a one-element array (with no index argument)."""
    return xp.reshape(xp.asarray(dy, dtype=self.dtype), self.shape)


# ----- Permuting axes -----


@adjoint(np.transpose)
def transpose(dy, y, a, axes=None):
    return xp.transpose(dy, rt.inverse_axes(axes, a))


@rt.helper
def inverse_axes(axes, x):
    """The permutation that undoes ``transpose(x, axes)`` (None stays None)."""
    if axes is None:
        return None
    ndim = len(shape_tuple(x))
    axes = [int(ax) % ndim for ax in axes]
    return tuple(int(i) for i in np.argsort(axes))


@adjoint(Method("transpose"))
def transpose_method(dy, y, self, *axes):
    return xp.transpose(dy, rt.inverse_axes(rt.method_axes(axes), self))


@rt.helper
def method_axes(axes):
    """The axes of ``x.transpose(*axes)`` as ``np.transpose`` takes them."""
    if len(axes) == 0:
        return None
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        return axes[0]
    return axes


@adjoint(Attribute("T"))
def T_attribute(dy, y, self):
    return xp.transpose(dy)


@adjoint(Attribute("mT"))
def mT_attribute(dy, y, self):
    return xp.swapaxes(dy, -1, -2)


@adjoint(np.moveaxis)
def moveaxis(dy, y, a, source, destination):
    return xp.moveaxis(dy, destination, source)


@adjoint(np.rollaxis)
def rollaxis(dy, y, a, axis, start=0):
    return xp.moveaxis(dy, rt.rollaxis_destination(a, axis, start), axis)


@rt.helper
def rollaxis_destination(a, axis, start=0):
    """Where ``rollaxis(a, axis, start)`` puts ``axis`` (the adjoint moves it back)."""
    n = len(shape_tuple(a))
    axis = axis % n
    start = start + n if start < 0 else start
    return start - 1 if start > axis else start


@adjoint(np.swapaxes)
def swapaxes(dy, y, a, axis1, axis2):
    return xp.swapaxes(dy, axis1, axis2)


@adjoint(Method("swapaxes"))
def swapaxes_method(dy, y, self, axis1, axis2):
    return xp.swapaxes(dy, axis1, axis2)


@adjoint(np.flip)
def flip(dy, y, m, axis=None):
    return xp.flip(dy, axis)


@adjoint(np.fliplr)
def fliplr(dy, y, m):
    return xp.fliplr(dy)


@adjoint(np.flipud)
def flipud(dy, y, m):
    return xp.flipud(dy)


@adjoint(np.roll)
def roll(dy, y, a, shift, axis=None):
    return xp.roll(dy, rt.negate_shift(shift), axis)


@rt.helper
def negate_shift(shift):
    """``-shift`` for an int or a tuple of ints (the adjoint of ``roll``)."""
    if isinstance(shift, (tuple, list)):
        return tuple(-s for s in shift)
    return -shift


@adjoint(np.rot90)
def rot90(dy, y, m, k=1, axes=(0, 1)):
    return xp.rot90(dy, -k, axes)


# ----- Copies and conversions -----


@adjoint(np.array, sequences=("object",))
def array(dy, y, object, dtype=None, *, copy=True):
    """A list of arrays or numbers gets a list of gradients (the same nesting); an
    integer ``dtype`` passes none."""
    return rt.array_vjp(rt.dtype_grad(dy, dtype, dy), object)


@rt.helper
def array_vjp(dy, obj):
    """Gradient of ``np.array(obj)``/``asarray``: the same nesting as ``obj``.

    A list of arrays or numbers gets a list of gradients, one per item.
    """
    if isinstance(obj, (list, tuple)):   # a 0-d adjoint stands for itself everywhere
        scalar = np.ndim(dy) == 0
        return [array_vjp(dy if scalar else dy[i], item) for i, item in enumerate(obj)]
    if is_array(obj):
        return cast_like(unbroadcast(dy, obj), obj)
    return dy


@adjoint(np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.asarray_chkfinite,
         sequences=("a",))
def asarray(dy, y, a, dtype=None):
    return rt.array_vjp(rt.dtype_grad(dy, dtype, dy), a)


# ----- Diagonals and triangles -----


@adjoint(np.diag)
def diag(dy, y, v, k=0):
    return rt.diag_vjp(dy, v, k)


@rt.helper
def diag_vjp(dy, v, k=0):
    """Gradient of ``diag(v, k)`` (1-D ``v`` builds a matrix, 2-D ``v`` extracts a diagonal)."""
    xp = namespace(v, dy)
    if len(shape_tuple(v)) == 1:
        return xp.diagonal(xp.asarray(dy), k).copy()
    return diagonal_vjp(dy, v, k, 0, 1)


@adjoint(np.diagonal)
def diagonal(dy, y, a, offset=0, axis1=0, axis2=1):
    return rt.diagonal_vjp(dy, a, offset, axis1, axis2)


@rt.helper
def diagonal_vjp(dy, a, offset=0, axis1=0, axis2=1):
    """Gradient of ``diagonal(a, offset, axis1, axis2)``: ``dy`` written onto that diagonal."""
    xp = namespace(a, dy)
    dy = xp.asarray(dy)
    dx = grad_zeros(xp, a, dy)
    rt.refuse_dask(dx, "rt.diagonal_vjp (the gradient of a diagonal: a write through a view)")
    n = dy.shape[-1]
    i = xp.arange(n)
    moved = xp.moveaxis(dx, (axis1, axis2), (-2, -1))
    moved[..., i + max(-offset, 0), i + max(offset, 0)] = dy
    return dx


@adjoint(Method("diagonal"))
def diagonal_method(dy, y, self, offset=0, axis1=0, axis2=1):
    return rt.diagonal_vjp(dy, self, offset, axis1, axis2)


@adjoint(np.triu)
def triu(dy, y, m, k=0):
    return xp.triu(dy, k)


@adjoint(np.tril)
def tril(dy, y, m, k=0):
    return xp.tril(dy, k)


# ----- Helpers only the adjoints of runtime_rules.py or the compiler call (rt.<name>) -----


@rt.helper
def method_shape(shape):
    """The shape of ``x.reshape(*shape)`` as one tuple."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)



# ----- Flat writes as values: np.fill_diagonal, np.put, np.putmask, np.place -----
# transform/mutation.py writes ``np.put(a, ind, v)`` as ``a[...] = rt.flat_write(a, "put",
# ind, v)``. Each writes ``values`` (repeated cyclically, as NumPy does) at flat positions
# of a copy of ``a``; ``_flat_targets`` says which positions take which entry.


def _flat_targets(xp, shape, how, key, size, mode="raise"):
    """``(positions, entries)``: the flat positions written and the index into the
    flattened values each takes (the last of a repeated ``put`` position only)."""
    total = int(np.prod(shape))
    if how == "diagonal":
        positions = _diagonal_positions(xp, shape, key)
        return positions, xp.arange(positions.shape[0]) % size
    if how == "put":
        index = xp.asarray(key).reshape(-1)
        if mode == "wrap":
            index = index % total
        elif mode == "clip":
            index = xp.clip(index, 0, total - 1)
        elif index.size and (int(index.max()) >= total or int(index.min()) < -total):
            raise IndexError(f"np.put: index out of bounds for an array of size {total}")
        index = index % total if total else index
        _, first = xp.unique(index[::-1], return_index=True)
        kept = index.shape[0] - 1 - first   # the last write to a repeated position wins
        return index[kept], kept % size
    mask = xp.asarray(key).reshape(-1)
    if mask.shape[0] != total:
        raise ValueError(f"np.{how}: the mask has {mask.shape[0]} entries, the array {total}")
    positions = xp.flatnonzero(mask)
    if how == "putmask":   # values[n % size] at each position n where the mask holds
        return positions, positions % size
    return positions, xp.arange(positions.shape[0]) % size   # place: in the masked order


def _diagonal_positions(xp, shape, wrap):
    """The flat positions ``np.fill_diagonal`` writes in an array of ``shape``."""
    if len(shape) < 2:
        raise ValueError("np.fill_diagonal: array must be at least 2-d")
    if len(shape) == 2:
        step, end = shape[1] + 1, None if wrap else shape[1] * shape[1]
    else:
        if any(d != shape[0] for d in shape):
            raise ValueError("np.fill_diagonal: all dimensions of input must be of equal length")
        step, end = 1 + int(np.sum(np.cumprod(shape[:-1]))), None
    return xp.arange(int(np.prod(shape)))[:end:step]


@rt.helper
def flat_write(a, how, key, values, mode="raise"):
    """A copy of ``a`` (its dtype) with ``values`` written as ``np.fill_diagonal(a, values,
    key)``, ``np.put(a, key, values, mode)``, ``np.putmask(a, key, values)`` or
    ``np.place(a, key, values)`` would write them (``how``: diagonal, put, putmask, place)."""
    xp = namespace(a, values)
    out = xp.array(a, copy=True)
    entries = xp.asarray(values).reshape(-1)
    positions, taken = _flat_targets(xp, out.shape, how, key, max(entries.shape[0], 1), mode)
    out.reshape(-1)[positions] = entries[taken]
    return out


@adjoint(rt.flat_write)
def flat_write_rule(dy, y, a, how, key, values, mode="raise"):
    """The entries written over get no gradient; ``values`` gets the written entries',
    each summed over its repetitions (none where ``a`` is an integer array: it truncated)."""
    return (rt.flat_write(dy, how, key, 0.0, mode), None, None,
            rt.flat_write_grad(dy, how, key, values, a, mode), None)


@rt.helper
def flat_write_grad(dy, how, key, values, a, mode="raise"):
    """The gradient of ``flat_write``'s ``values``: ``dy`` at the positions written, summed
    into ``values``' shape."""
    xp = namespace(dy, values)
    dy = xp.asarray(dy)
    size = max(int(np.size(values)), 1)
    if xp.asarray(a).dtype.kind not in "fc":
        return xp.zeros(np.shape(values), dtype=dy.dtype) if np.ndim(values) else 0.0
    positions, taken = _flat_targets(xp, dy.shape, how, key, size, mode)
    out = xp.zeros(size, dtype=dy.dtype)
    scatter_add(xp, out, taken, dy.reshape(-1)[positions])
    return out.reshape(np.shape(values)) if np.ndim(values) else out[0]   # a list: an array


@rt.helper
def flat_write_grad_adjoint(dw, dy, how, key, a, mode="raise"):
    """The adjoint of ``flat_write_grad`` in ``dy``: ``dw`` written as the values would be,
    into zeros shaped like ``dy``."""
    xp = namespace(dy, dw)
    zeros = grad_zeros(xp, dy, dw)
    if xp.asarray(a).dtype.kind not in "fc":
        return zeros
    return flat_write(zeros, how, key, dw, mode)


@adjoint(rt.flat_write_grad)
def flat_write_grad_rule(dw, w, dy, how, key, values, a, mode="raise"):
    return rt.flat_write_grad_adjoint(dw, dy, how, key, a, mode), None, None, None, None, None


@adjoint(rt.flat_write_grad_adjoint)
def flat_write_grad_adjoint_rule(dv, v, dw, dy, how, key, a, mode="raise"):
    return rt.flat_write_grad(dv, how, key, dw, a, mode), None, None, None, None, None


linear(rt.flat_write, "a", "values", no_tangent=("how", "key", "mode"))
linear(rt.flat_write_grad, "dy", no_tangent=("how", "key", "values", "a", "mode"))
linear(rt.flat_write_grad_adjoint, "dw", no_tangent=("dy", "how", "key", "a", "mode"))
