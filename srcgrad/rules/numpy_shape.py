"""Adjoint rules of NumPy's shape functions, joins/splits, products and einsum.

Sequence parameters (``np.concatenate(arrays)``, ``np.stack(arrays)``,
``np.hstack(tup)`` ...) get a LIST of gradients, one per element. ``np.split``
and ``np.array_split`` return a list: their ``dy`` is a list of per-piece
cotangents (None or a scalar 0 for pieces that got none), ``y`` the list of
pieces. Rules with a var-positional parameter (``x.reshape(*shape)``,
``x.transpose(*axes)``, ``np.einsum(subscripts, *operands)``) return, for that
parameter, a list with one gradient per positional argument it collected
(or return just the gradient of ``self`` when the varargs are not
differentiable).
"""

import operator

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Attribute, Method, adjoint, nondifferentiable, returns_sequence

xp = None  # placeholder: the array namespace, bound in generated code

nondifferentiable(
    np.triu_indices, np.tril_indices, np.diag_indices, np.unravel_index,
    np.ravel_multi_index, np.broadcast_shapes,
)
returns_sequence(np.split, np.array_split, np.vsplit, np.hsplit, np.dsplit, np.meshgrid)

# ----- Reshaping -----


@adjoint(np.reshape)
def reshape(dy, y, a, shape=None, order="C"):
    return xp.reshape(dy, rt.shape_of(a), order=order)


@adjoint(Method("reshape"))
def reshape_method(dy, y, self, *shape, order="C"):
    return xp.reshape(dy, self.shape, order=order)


@adjoint(np.ravel)
def ravel(dy, y, a, order="C"):
    return xp.reshape(dy, rt.shape_of(a), order=order)


@adjoint(Method("ravel"))
def ravel_method(dy, y, self, order="C"):
    return xp.reshape(dy, self.shape, order=order)


@adjoint(Method("flatten"))
def flatten_method(dy, y, self, order="C"):
    return xp.reshape(dy, self.shape, order=order)


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


@adjoint(Method("item"))
def item_method(dy, y, self):
    """``x.item()`` of a one-element array (with no index argument)."""
    return xp.reshape(xp.asarray(dy, dtype=self.dtype), self.shape)


# ----- Permuting axes -----


@adjoint(np.transpose)
def transpose(dy, y, a, axes=None):
    return xp.transpose(dy, rt.inverse_axes(axes, a))


@adjoint(Method("transpose"))
def transpose_method(dy, y, self, *axes):
    return xp.transpose(dy, rt.inverse_axes(rt.method_axes(axes), self))


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


@adjoint(np.rot90)
def rot90(dy, y, m, k=1, axes=(0, 1)):
    return xp.rot90(dy, -k, axes)


# ----- Copies and conversions -----


@adjoint(np.array, sequences=("object",))
def array(dy, y, object, dtype=None, *, copy=True):
    """A list of arrays or numbers gets a list of gradients (the same nesting); an
    integer ``dtype`` passes none."""
    return rt.array_vjp(rt.dtype_grad(dy, dtype, dy), object)


@adjoint(np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray, sequences=("a",))
def asarray(dy, y, a, dtype=None):
    return rt.array_vjp(rt.dtype_grad(dy, dtype, dy), a)


# ----- Joining and splitting -----


@adjoint(np.concatenate, sequences=("arrays",))
def concatenate(dy, y, arrays, axis=0):
    return rt.concatenate_vjp(dy, arrays, axis)


@adjoint(np.select, sequences=("choicelist",))
def select(dy, y, condlist, choicelist, default=0):
    """Each choice gets ``dy`` where its condition is the first that holds; the
    default where none does."""
    return (None, rt.select_vjp(dy, condlist, choicelist),
            rt.unbroadcast(dy * rt.select_default_mask(condlist), default))


@adjoint(np.stack, sequences=("arrays",))
def stack(dy, y, arrays, axis=0):
    return rt.stack_vjp(dy, arrays, axis)


@adjoint(np.hstack, sequences=("tup",))
def hstack(dy, y, tup):
    return rt.hstack_vjp(dy, tup)


@adjoint(np.vstack, sequences=("tup",))
def vstack(dy, y, tup):
    return rt.vstack_vjp(dy, tup)


@adjoint(np.dstack, sequences=("tup",))
def dstack(dy, y, tup):
    return rt.dstack_vjp(dy, tup)


@adjoint(np.column_stack, sequences=("tup",))
def column_stack(dy, y, tup):
    return rt.column_stack_vjp(dy, tup)


@adjoint(np.append)
def append(dy, y, arr, values, axis=None):
    g = rt.append_vjp(dy, arr, values, axis)
    return g[0], g[1], None


@adjoint(np.meshgrid)
def meshgrid(dy, y, *xi, copy=True, sparse=False, indexing="xy"):
    """``dy`` is a sequence (one cotangent per grid); ``xi`` gets a list of gradients."""
    return rt.meshgrid_vjp(dy, xi, indexing)


@adjoint(np.split, np.array_split)
def split(dy, y, ary, indices_or_sections, axis=0):
    """``dy`` and ``y`` are lists (one entry per piece)."""
    return rt.split_vjp(dy, y, axis), None, None


@adjoint(np.vsplit)
def vsplit(dy, y, ary, indices_or_sections):
    return rt.split_vjp(dy, y, 0), None


@adjoint(np.hsplit)
def hsplit(dy, y, ary, indices_or_sections):
    """Along axis 1, or axis 0 of a 1-D array (as NumPy does)."""
    return rt.split_vjp(dy, y, min(xp.ndim(ary) - 1, 1)), None


@adjoint(np.dsplit)
def dsplit(dy, y, ary, indices_or_sections):
    return rt.split_vjp(dy, y, 2), None


@adjoint(np.pad, literals={"mode": rt.PAD_GATHER_MODES})
def pad(dy, y, array, pad_width, mode="constant", *, constant_values=0):
    """Modes that copy entries (constant, edge, reflect, symmetric, wrap, empty);
    a scalar ``constant_values`` gets the sum of the padding's gradient."""
    return (rt.pad_vjp(dy, array, pad_width, mode), None, None,
            rt.pad_constant_vjp(dy, array, pad_width, constant_values))


@adjoint(np.tile)
def tile(dy, y, A, reps):
    return rt.tile_vjp(dy, A, reps)


@adjoint(np.repeat)
def repeat(dy, y, a, repeats, axis=None):
    return rt.repeat_vjp(dy, a, repeats, axis)


@adjoint(Method("repeat"))
def repeat_method(dy, y, self, repeats, axis=None):
    return rt.repeat_vjp(dy, self, repeats, axis)


# ----- Diagonals and triangles -----


@adjoint(np.diag)
def diag(dy, y, v, k=0):
    return rt.diag_vjp(dy, v, k)


@adjoint(np.diagonal)
def diagonal(dy, y, a, offset=0, axis1=0, axis2=1):
    return rt.diagonal_vjp(dy, a, offset, axis1, axis2)


@adjoint(Method("diagonal"))
def diagonal_method(dy, y, self, offset=0, axis1=0, axis2=1):
    return rt.diagonal_vjp(dy, self, offset, axis1, axis2)


@adjoint(np.triu)
def triu(dy, y, m, k=0):
    return xp.triu(dy, k)


@adjoint(np.tril)
def tril(dy, y, m, k=0):
    return xp.tril(dy, k)


# ----- Products -----


@adjoint(np.matmul, operator.matmul)
def matmul(dy, y, x1, x2):
    return rt.matmul_grad_a(dy, x1, x2), rt.matmul_grad_b(dy, x1, x2)


@adjoint(np.dot)
def dot(dy, y, a, b):
    return rt.dot_grad_a(dy, a, b), rt.dot_grad_b(dy, a, b)


@adjoint(Method("dot"))
def dot_method(dy, y, self, b):
    return rt.dot_grad_a(dy, self, b), rt.dot_grad_b(dy, self, b)


@adjoint(np.vdot)
def vdot(dy, y, a, b):
    """Real inputs: the flattened dot product."""
    return dy * xp.reshape(b, rt.shape_of(a)), dy * xp.reshape(a, rt.shape_of(b))


@adjoint(np.inner)
def inner(dy, y, a, b):
    """``tensordot`` over the last axes of both (a scalar operand: a product)."""
    axes = rt.inner_axes(a, b)
    return rt.tensordot_grad_a(dy, a, b, axes), rt.tensordot_grad_b(dy, a, b, axes)


@adjoint(np.outer)
def outer(dy, y, a, b):
    return (xp.reshape(xp.dot(dy, xp.ravel(b)), rt.shape_of(a)),
            xp.reshape(xp.dot(xp.ravel(a), dy), rt.shape_of(b)))


@adjoint(np.tensordot)
def tensordot(dy, y, a, b, axes=2):
    return rt.tensordot_grad_a(dy, a, b, axes), rt.tensordot_grad_b(dy, a, b, axes), None


@adjoint(np.einsum)
def einsum(dy, y, subscripts, *operands, optimize=False):
    """``operands`` is var-positional: its entry is a list, one gradient per operand.
    In the sublist form ``einsum(x, [0], y, [0], [])`` ``subscripts`` is ``x``."""
    g = rt.einsum_vjp(dy, subscripts, operands)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), None


@adjoint(np.kron)
def kron(dy, y, a, b):
    g = rt.kron_vjp(dy, a, b)
    return g[0], g[1]


@adjoint(np.cross)
def cross(dy, y, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """3-vectors along any axes (``axisa``/``axisb``/``axisc`` or ``axis``): the
    vector axes are moved last, crossed, and moved back."""
    ax = rt.cross_axes(axisa, axisb, axisc, axis)
    g = xp.moveaxis(dy, ax[2], -1)
    a3 = xp.moveaxis(a, ax[0], -1)
    b3 = xp.moveaxis(b, ax[1], -1)
    return (xp.moveaxis(rt.unbroadcast(xp.cross(b3, g), a3), -1, ax[0]),
            xp.moveaxis(rt.unbroadcast(xp.cross(g, a3), b3), -1, ax[1]), None, None, None, None)


@adjoint(np.convolve)
def convolve(dy, y, a, v, mode="full"):
    g = rt.convolve_vjp(dy, a, v, mode)
    return g[0], g[1], None
