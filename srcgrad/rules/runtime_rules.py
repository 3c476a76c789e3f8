"""Adjoint rules of the ``srcgrad.runtime`` helpers (``rt.*``) that generated code
applies to differentiable values, so that a gradient, being Python source, can
be differentiated again (``sg.grad(sg.grad(f))``, ``sg.hessian``).

Here the cotangent and output are named ``dw`` and ``w``, because the helpers'
own parameters already use ``dy``/``dz``/``g``. Most helpers are linear in
their gradient argument; their adjoints are the "transposed" helpers
(``unbroadcast`` <-> ``broadcast_like``, ``unreduce`` <-> ``reduce_to``,
``concatenate_vjp`` <-> ``split_vjp``, ``take_vjp`` <-> ``take`` ...).

Helpers without a rule (``append_vjp``, ``hypot_vjp``,
``meshgrid_vjp``, and the helpers of second derivatives: ``prod_others_jvp``,
``cumprod_vjp_a``, ``einsum_vjp_adjoint``, ``sinc_grad3``, ``solve_vjp_tangent``...) make a
derivative one order higher through those primitives a compile-time error, never a wrong
number. The linear-algebra helpers (``solve_vjp``, ``norm_vjp``, ``cholesky_vjp``,
``eigh_vjp``, ``matrix_power_vjp``, ``cofactor``) have their rules in
linalg_second_order.py; ``kron_vjp``, ``convolve_vjp``, ``polyval_vjp``, ``select_vjp``,
``sinc_grad2`` and ``cumprod_jvp`` in helper_second_order.py. The joins' and lists' gradients
(``hstack_vjp``..., ``index_concat_vjp``, ``array_vjp``, ``seq_concat_vjp``,
``builtin_sum_vjp``, ``minmax_vjp``, ``add_grad``) have rules at the end of this module.

``rt.log_or_zero`` IS differentiable (d/da log(a) = 1/a for a > 0): a second
derivative of ``a ** b`` needs it.
"""

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, linear, nondifferentiable, returns_sequence
# The modules whose run-time helpers (rt.<name>, registered by @rt.helper) get rules here:
from srcgrad.rules import (builtins_math, numpy_elementwise, numpy_joins, numpy_linalg,  # noqa: F401
                           numpy_products, numpy_reductions, numpy_shape, numpy_statistics,
                           numpy_differences, numpy_ufunc_methods)

xp = None  # placeholder: the array namespace, bound in generated code

nondifferentiable(
    rt.take_indices, rt.where_size, rt.initial_weight,
    rt.namespace, rt.is_array, rt.shape_of, rt.normalize_axis, rt.reduction_size,
    rt.zeros_like, rt.owned_zeros, rt.sign, rt.clip_below, rt.clip_above, rt.inverse_axes,
    rt.method_axes, rt.method_shape, rt.inner_axes, rt.linspace_weights,
    rt.arange_index, rt.is_given, rt.negate_shift, rt.rollaxis_destination, rt.cross_axes, rt.select_default_mask, rt.pad_adjoint_mode, rt.dtype_of,
    rt.array_dtype, rt.slice_values,
    # only ever feeds rt.clip_below/clip_above (masks) in the clip rule
    rt.either,
    # control of the generated code: the default seed is a constant, has_grad a test
    rt.default_seed, rt.has_grad, rt.touched, rt.check_unshared, rt.hook_handle, rt.tie_share,
    # tests on containers (pytree.py)
    rt.container_op, rt.is_node, rt.check_sequence, rt.check_resize, rt.save_item, rt.restore_item,
    rt.check_leaves, rt.check_array_operand,
    # a global read when the function starts, written back after each binding
    rt.read_global, rt.write_global,
    # a list or dict argument changed in place: the caller's object, written back on return
    rt.caller_of, rt.write_back,
)

# Gradient lists: a name bound to one has a list as its adjoint.
returns_sequence(rt.concatenate_vjp, rt.stack_vjp, rt.meshgrid_vjp, rt.meshgrid_fill, rt.einsum_vjp, rt.array_vjp,
                 rt.einsum_vjp_tangent, rt.einsum_vjp_adjoint,
                 rt.index_concat_vjp,
                 rt.hstack_vjp, rt.vstack_vjp, rt.dstack_vjp, rt.column_stack_vjp)

# ----- Broadcasting and reductions -----


@adjoint(rt.unbroadcast)
def unbroadcast(dw, w, g, x):
    return rt.broadcast_like(dw, g), None


@adjoint(rt.share)
def share(dw, w, g, weights):
    """Linear in ``g`` and diagonal: the same weights, summed back to ``g``'s shape."""
    return rt.unbroadcast(rt.share(dw, weights), g), None


linear(rt.share, "g", no_tangent=("weights",))


@adjoint(rt.broadcast_like)
def broadcast_like(dw, w, dz, g):
    return rt.broadcast_like(dw, dz), None


@adjoint(rt.unreduce)
def unreduce(dw, w, g, x, axis=None, keepdims=False):
    return rt.reduce_to(dw, g, axis, keepdims), None, None, None


@adjoint(rt.reduce_to)
def reduce_to(dw, w, dz, g, axis=None, keepdims=False):
    return rt.expand_to(dw, dz, axis, keepdims), None, None, None


@adjoint(rt.expand_to)
def expand_to(dw, w, dw_, dz, axis=None, keepdims=False):
    return rt.reduce_to(dw, dw_, axis, keepdims), None, None, None


@adjoint(rt.unreduce_like)
def unreduce_like(dw, w, value, x, axis=None, keepdims=False):
    return xp.reshape(dw, rt.shape_of(value)), None, None, None


@adjoint(rt.cast_like)
def cast_like(dw, w, g, x):
    return rt.cast_like(dw, g), None


@adjoint(rt.dtype_grad)
def dtype_grad(dw, w, g, dtype, x):
    return rt.dtype_grad(dw, dtype, x), None, None


@adjoint(rt.real_like)
def real_like(dw, w, g, x):
    return dw, None


@adjoint(rt.materialize)
def materialize(dw, w, g, x):
    return rt.unbroadcast(dw, g), None


@adjoint(rt.save, sequences=("value",))
def save(dw, w, value):
    return dw


@adjoint(rt.run_hooks)
def run_hooks(dw, w, hooks, g, value):   # hooks that only read: the identity (hooks.py)
    return None, rt.hooks_tangent(w, g, dw), None


@adjoint(rt.container_copy, sequences=("value",))
def container_copy(dw, w, value):
    return dw


@adjoint(rt.own, sequences=("value",))
def own(dw, w, value):
    return dw


@adjoint(rt.copy_restored, sequences=("value",))
def copy_restored(dw, w, value, written):
    return dw, None


# ----- Products -----


@adjoint(rt.matmul_grad_a)
def matmul_grad_a(dw, w, dy, a, b):
    return rt.broadcast_like(xp.matmul(dw, b), dy), None, rt.matmul_grad_b(dy, dw, b)


@adjoint(rt.matmul_grad_b)
def matmul_grad_b(dw, w, dy, a, b):
    return rt.broadcast_like(xp.matmul(a, dw), dy), rt.matmul_grad_a(dy, a, dw), None


@adjoint(rt.dot_grad_a)
def dot_grad_a(dw, w, dy, a, b):
    return xp.dot(dw, b), None, rt.dot_grad_b(dy, dw, b)


@adjoint(rt.dot_grad_b)
def dot_grad_b(dw, w, dy, a, b):
    return xp.dot(a, dw), rt.dot_grad_a(dy, a, dw), None


@adjoint(rt.tensordot_grad_a)
def tensordot_grad_a(dw, w, dy, a, b, axes=2):
    return xp.tensordot(dw, b, axes), None, rt.tensordot_grad_b(dy, dw, b, axes), None


@adjoint(rt.tensordot_grad_b)
def tensordot_grad_b(dw, w, dy, a, b, axes=2):
    return xp.tensordot(a, dw, axes), rt.tensordot_grad_a(dy, a, dw, axes), None, None


# ----- Subscripts and gathers -----


@adjoint(rt.take_grad, sequences=("dx",))   # dx may be a dict's or list's adjoint: added
def take_grad(dw, w, dx, index):
    return rt.add_at(0.0, dx, index, dw), None


@adjoint(rt.written_grad, sequences=("dx",))   # with rt.seq_add, as add_at builds one
def written_grad(dw, w, dx, x, index):
    into = rt.add_at(0.0, rt.full_grad(dx, x), index, rt.keep_written(dw, x, index))
    return rt.add_at_dx(into, dx), None, None


@adjoint(rt.full_grad)
def full_grad(dw, w, dx, x):
    return rt.add_at_dx(dw, dx), None


@adjoint(rt.keep_written)
def keep_written(dw, w, g, x, index):
    return rt.keep_written(dw, x, index), None, None


@adjoint(rt.add_at)
def add_at(dw, w, dx, x, index, g):
    return (rt.add_at_dx(dw, dx), None, None,
            rt.unbroadcast(rt.take_grad(rt.full_grad(dw, x), index), g))


@rt.helper
def add_at_dx(dw, dx):
    """The adjoint of ``add_at(dx, x, index, g)`` for ``dx``: ``dw`` in ``dx``'s shape. A
    scalar zero ``dx`` stands for zeros of ``x``'s shape (``add_at`` leaves it a scalar
    while every ``g`` added is zero), so it gets all of ``dw``: summed into a scalar, the
    adjoints of the entries added later were mixed up (a second derivative at ``x[i] = 0``
    of ``x[i] ** 2`` was off)."""
    if rt.is_zero_grad(dx):
        return dw
    return rt.unbroadcast(dw, dx)


@adjoint(rt.add_at_dx)
def add_at_dx_adjoint(dz, w, dw, dx):
    return rt.broadcast_like(dz, dw), None


@adjoint(rt.zero_grad_at)
def zero_grad_at(dw, w, dx, x, index):
    return rt.zero_grad_at(rt.own(dw), x, index), None, None


@adjoint(rt.take_vjp)
def take_vjp(dw, w, dy, a, indices, axis=None):
    return xp.take(dw, indices, axis=axis), None, None, None


@adjoint(rt.take_along_axis_vjp)
def take_along_axis_vjp(dw, w, dy, arr, indices, axis):
    return xp.take_along_axis(dw, indices, axis=axis), None, None, None


@adjoint(rt.diag_vjp)
def diag_vjp(dw, w, dy, v, k=0):
    return xp.diag(dw, k), None, None


@adjoint(rt.diagonal_vjp)
def diagonal_vjp(dw, w, dy, a, offset=0, axis1=0, axis2=1):
    return xp.diagonal(dw, offset, axis1, axis2), None, None, None, None


@adjoint(rt.diff_vjp)
def diff_vjp(dw, w, dy, a, n=1, axis=-1, prepend=None, append=None):
    """``diff`` of ``dw`` between zeros where ``prepend``/``append`` were."""
    return rt.diff_zero_ends(dw, n, axis, prepend, append), None, None, None, None, None


@rt.helper
def diff_zero_ends(g, n, axis, prepend, append):
    """``diff(g, n, axis)`` with zeros of ``prepend``'s and ``append``'s shapes (None:
    none) joined to ``g`` first."""
    xp = rt.namespace(g)
    ax = axis % g.ndim

    def zeros(end):   # joined by hand: Dask's diff computes a prepend= or append= array
        shape = list(g.shape)
        shape[ax] = np.shape(end)[ax] if np.ndim(end) else 1
        return xp.zeros(tuple(shape), dtype=g.dtype)

    parts = [zeros(prepend)] if prepend is not None else []
    parts += [g] + ([zeros(append)] if append is not None else [])
    return xp.diff(xp.concatenate(parts, axis=ax) if len(parts) > 1 else g, n=n, axis=axis)


@adjoint(rt.where_mask)
def where_mask(dw, w, g, where):
    return rt.where_mask(dw, where), None


@adjoint(rt.reduction_cast)
def reduction_cast(dw, w, g, dtype, a):
    return rt.cast_like(rt.dtype_grad(dw, dtype, a), g), None, None


@adjoint(rt.pad_vjp)
def pad_vjp(dw, w, dy, array, pad_width, mode="constant"):
    """Linear in ``dy``: its transpose is the pad's tangent (constant in ``array``
    between the ties of a maximum/minimum/median mode)."""
    return rt.pad_jvp(dw, array, pad_width, mode), None, None, None


@adjoint(rt.pad_jvp)
def pad_jvp(dw, w, t, array, pad_width, mode="constant"):
    return rt.pad_vjp(dw, array, pad_width, mode), None, None, None


@adjoint(rt.pad_constant_vjp)
def pad_constant_vjp(dw, w, dy, array, pad_width, constant_values=0):
    """The padding's entries summed: its transpose puts ``dw`` in each of them."""
    return xp.pad(rt.zeros_like(array), pad_width, constant_values=dw), None, None, None


@adjoint(rt.tile_vjp)
def tile_vjp(dw, w, dy, A, reps):
    return xp.tile(dw, reps), None, None


@adjoint(rt.repeat_vjp)
def repeat_vjp(dw, w, dy, a, repeats, axis=None):
    return xp.repeat(dw, repeats, axis), None, None, None


# ----- Joins and splits -----


@adjoint(rt.concatenate_vjp)
def concatenate_vjp(dw, w, dy, arrays, axis=0):
    return rt.split_vjp(dw, arrays, axis), None, None


@adjoint(rt.split_vjp, sequences=("dys",))
def split_vjp(dw, w, dys, ys, axis=0):
    return rt.concatenate_vjp(dw, ys, axis), None, None


@adjoint(rt.meshgrid_vjp, sequences=("dys",))
def meshgrid_vjp(dw, w, dys, xi, indexing="xy"):
    return rt.meshgrid_fill(dw, xi, indexing), None, None


@adjoint(rt.meshgrid_fill, sequences=("dws",))
def meshgrid_fill(dw, w, dws, xi, indexing="xy"):
    return rt.meshgrid_vjp(dw, xi, indexing), None, None


linear(rt.meshgrid_vjp, "dys", no_tangent=("xi", "indexing"))
linear(rt.meshgrid_fill, "dws", no_tangent=("xi", "indexing"))


@adjoint(rt.stack_vjp)
def stack_vjp(dw, w, dy, arrays, axis=0):
    return rt.stack_fill(dw, arrays, axis), None, None


@adjoint(rt.stack_fill, sequences=("dzs",))
def stack_fill(dw, w, dzs, arrays, axis=0):
    return rt.stack_vjp(dw, arrays, axis), None, None


@adjoint(rt.as_array, sequences=("seq",))
def as_array(dw, w, seq):
    return rt.stack_vjp(dw, seq, 0)


@adjoint(rt.index_concat, sequences=("items",))
def index_concat(dw, w, concatenator, items):
    """``np.r_[x, y]`` / ``np.c_[x, y]`` (see anf.py): a join of its items."""
    return None, rt.index_concat_vjp(dw, concatenator, items)


@adjoint(rt.average_weights)
def average_weights(dw, w, a, weights, axis=None):
    return None, rt.weights_vjp(dw, weights, a, axis), None


@adjoint(rt.weights_vjp)
def weights_vjp(dw, w, g, weights, a, axis=None):
    return rt.broadcast_like(rt.average_weights(a, dw, axis), g), None, None, None


# ----- Sequences -----


@adjoint(rt.seq_item, sequences=("dseq",))
def seq_item(dw, w, dseq, index):
    return rt.seq_onehot(dw, dseq, index), None


@adjoint(rt.seq_onehot, sequences=("dz",))
def seq_onehot(dw, w, dz, dseq, index):
    return rt.seq_item(dw, index), None, None


@adjoint(rt.seq_add, sequences=("dseq", "g"))
def seq_add(dw, w, dseq, g):
    return dw, dw


@adjoint(rt.seq_pop, sequences=("dseq",))
def seq_pop(dw, w, dseq):
    return rt.seq_unpop(dw, popped=w)


@adjoint(rt.seq_unpop, sequences=("dz",))
def seq_unpop(dw, w, dz, popped=None):
    return list(rt.seq_pop(dw))


# ----- Scalar functions -----


@adjoint(rt.log_or_zero)
def log_or_zero(dw, w, a):
    return dw * rt.log_or_zero_grad(a)


@adjoint(rt.log_or_zero_grad)
def log_or_zero_grad(dw, w, a):
    return -dw * w * w


@adjoint(rt.divide)
def divide(dw, w, a, b):
    """``a / b`` with NumPy's inf or nan at ``b == 0`` (the gradients of math's functions)."""
    return rt.unbroadcast(rt.divide(dw, b), a), rt.unbroadcast(-rt.divide(dw * w, b), b)


@adjoint(rt.sin)
def sin(dw, w, x):
    return dw * rt.cos(x)


@adjoint(rt.cos)
def cos(dw, w, x):
    return -dw * rt.sin(x)


@adjoint(rt.exp)
def exp(dw, w, x):
    return dw * w


@adjoint(rt.sinh)
def sinh(dw, w, x):
    return dw * rt.cosh(x)


@adjoint(rt.cosh)
def cosh(dw, w, x):
    return dw * rt.sinh(x)


@adjoint(rt.log)
def log(dw, w, x):
    return dw / x


@adjoint(rt.log_base)
def log_base(dw, w, base):
    return dw / base


# ----- Gradients of joins and lists: the adjoint of a split is the join -----


@adjoint(rt.hstack_vjp)
def hstack_vjp(dw, w, dy, tup):
    return rt.join_fill(dw, tup, "hstack"), None


@adjoint(rt.vstack_vjp)
def vstack_vjp(dw, w, dy, tup):
    return rt.join_fill(dw, tup, "vstack"), None


@adjoint(rt.dstack_vjp)
def dstack_vjp(dw, w, dy, tup):
    return rt.join_fill(dw, tup, "dstack"), None


@adjoint(rt.column_stack_vjp)
def column_stack_vjp(dw, w, dy, tup):
    return rt.join_fill(dw, tup, "column_stack"), None


@adjoint(rt.index_concat_vjp)
def index_concat_vjp(dw, w, dy, concatenator, items):
    return rt.index_concat(concatenator, rt.fill_like(dw, items)), None, None


@adjoint(rt.array_vjp)
def array_vjp(dw, w, dy, obj):
    """``array_vjp`` takes ``dy`` apart in ``obj``'s nesting: its adjoint puts it back."""
    return rt.unbroadcast(rt.as_nested_array(rt.fill_like(dw, obj), dy), dy), None


@adjoint(rt.seq_concat_vjp)
def seq_concat_vjp(dw, w, dy, a, b):
    return rt.seq_concat_adjoint(dw, a, b), None, None


@adjoint(rt.seq_repeat_vjp)
def seq_repeat_vjp(dw, w, dy, a, b):
    return rt.seq_repeat_adjoint(dw, dy), None, None


@adjoint(rt.builtin_sum_vjp)
def builtin_sum_vjp(dw, w, dy, iterable):
    return rt.unbroadcast(rt.tangent_sum(rt.fill_like(dw, iterable)), dy), None


@adjoint(rt.minmax_vjp)
def minmax_vjp(dw, w, dy, y, args):
    """Linear in ``dy``; the arguments only choose (piecewise constant): ``dy``'s
    adjoint is ``minmax_vjp``'s tangent read back, the shares of ``dw`` summed."""
    return rt.unbroadcast(rt.minmax_jvp(y, args, rt.minmax_cotangent(dw, args)), dy), None, None


@adjoint(rt.add_grad)
def add_grad(dw, w, a, b):
    return rt.add_grad_vjp(dw, a), rt.add_grad_vjp(dw, b)


@rt.helper
def fill_like(dw, like):
    """The cotangent ``dw`` of a list of gradients, zeros (of ``like``'s items' shapes)
    where an entry has none; nested as ``like`` is."""
    if isinstance(like, (list, tuple)):
        items = list(dw) if isinstance(dw, (list, tuple)) else [None] * len(like)
        items += [None] * (len(like) - len(items))
        return [fill_like(d, item) for d, item in zip(items, like)]
    if rt.is_zero_grad(dw):
        return rt.tangent_zero(like) if rt.is_array(like) else 0.0
    return dw


@rt.helper
def join_fill(dw, tup, join):
    """The adjoint of ``<join>_vjp(dy, tup)`` (the gradient split into ``tup``'s pieces):
    the pieces of ``dw`` joined back (``np.hstack``...), zeros for missing ones."""
    pieces = fill_like(dw, list(tup))
    xp = rt.namespace(*[p for p in pieces if rt.is_array(p)])
    return getattr(xp, join)([xp.asarray(p) for p in pieces])


@rt.helper
def as_nested_array(items, like=None):
    """``np.array`` of a nested list of gradients (the join ``array_vjp`` undoes), in the
    array module of ``like`` (the adjoint it becomes: on the device for a CuPy ``like``)."""
    if not isinstance(items, list):
        return items
    parts = [as_nested_array(i, like) for i in items]
    arrays = [p for p in parts if rt.is_array(p)]
    xp = rt.namespace(like, *arrays)
    return xp.stack([xp.asarray(p) for p in parts])


@rt.helper
def seq_concat_adjoint(dw, a, b):
    """The adjoint of ``seq_concat_vjp(dy, a, b)`` (``dy`` split at ``len(a)``): the two
    cotangents joined, zeros where one has none."""
    first, second = (list(dw) + [None, None])[:2] if isinstance(dw, (list, tuple)) else (None, None)
    first = list(first) if isinstance(first, (list, tuple)) else [0.0] * len(a)
    second = list(second) if isinstance(second, (list, tuple)) else [0.0] * len(b)
    return first + second


@rt.helper
def seq_repeat_adjoint(dw, dy):
    """The adjoint of ``seq_repeat_vjp(dy, a, b)`` (the copies of ``dy`` summed): ``dw``
    for each copy."""
    if rt.is_zero_grad(dw) or rt.is_zero_grad(dy):
        return 0.0
    n = len(dw)
    return [dw[k % n] for k in range(len(dy))]


@rt.helper
def minmax_cotangent(dw, args):
    """``minmax_vjp``'s cotangent in the nesting ``minmax_jvp`` reads its tangents in."""
    if len(args) == 1:
        d = dw[0] if isinstance(dw, (list, tuple)) else dw
        if rt.is_array(args[0]):
            return [0.0 * args[0] if rt.is_zero_grad(d) else d]
        return [fill_like(d, list(args[0]))]
    return fill_like(dw, list(args))


@rt.helper
def add_grad_vjp(dw, x):
    """The adjoint of ``rt.add_grad(a, b)`` for one operand ``x``: ``dw`` in ``x``'s
    structure and shape (nothing for a zero ``x``, which carried no gradient)."""
    if rt.is_zero_grad(x) or rt.is_zero_grad(dw):
        return 0.0
    if isinstance(x, (list, tuple)):
        items = list(dw) if isinstance(dw, (list, tuple)) else [None] * len(x)
        return [add_grad_vjp(d, v) for d, v in zip(items, x)]
    if isinstance(x, dict):
        return {k: add_grad_vjp(dw.get(k) if isinstance(dw, dict) else None, v) for k, v in x.items()}
    return rt.unbroadcast(dw, x)
