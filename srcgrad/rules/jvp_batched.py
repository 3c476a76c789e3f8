"""Batched tangent rules: tangents with a leading batch axis of B seeds (a matrix of
seeds, like ``jax.vmap`` over ``jvp``), for ``sg.jacfwd`` and ``sg.hessian``
(transform/batching.py builds the batched tangent program).

A batched tangent of a value ``v`` has the shape ``(B,) + shape(v)`` (a list's is a
list of them); every rule keeps it so. The forms (``@batched_tangent`` in
srcgrad/rules/__init__.py):

* a template, like a tangent rule, written with the ``rt.batch_*`` helpers below:
  reductions shift their axes past the batch axis (``axis=None`` is every axis but
  it), shapes keep it in front, products put it where NumPy's broadcasting is right;
* ``"elementwise"``: the tangent rule with each tangent aligned to the output's rank
  (``(B,) + (1,) * k + shape(x)``, ``rt.batch_align``) and the result spread to the
  output's shape (``rt.batch_fit``). An elementwise primitive whose tangent is derived
  from its adjoint gets this form without a registration;
* ``"same"``: the tangent rule is right on batched tangents as it is (a tape's pop);
* ``"per_sample"``: the tangent rule applied to each seed in turn, in one statement
  (``rt.batch_stack``): right for any rule, a Python loop over B for that statement.
  A built-in rule derived from an adjoint that is not elementwise gets it by default.

A tangent rule written by hand without a batched form (a user's) makes the program
unbatchable: ``sg.jacfwd``/``sg.hessian`` run one tangent program per seed instead.
A helper meeting a case its fast path does not cover maps the rule per seed, or raises
``NotBatchable`` (the caller then runs one program per seed): never a wrong answer.
The ``rt.batch_*`` helpers are in rules/jvp_batched_runtime.py.
"""

import builtins
import math
import operator

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Attribute, Method, batched_tangent
from srcgrad.rules.jvp_batched_runtime import NotBatchable  # noqa: F401  (the helpers' registrations)

xp = None  # placeholder: the array namespace, bound in generated code


# ----- Forms -----

batched_tangent(np.multiply, operator.mul, np.add, operator.add, np.subtract, operator.sub,
                rt.log_or_zero, rt.log_or_zero_grad, rt.divide, rt.sin, rt.cos, rt.exp, rt.sinh, rt.cosh,
                rt.log, rt.log_base, math.log, rt.log_base_grad, form="elementwise")

batched_tangent(rt.tape_pop, rt.own, rt.save, rt.container_copy, rt.copy_restored, rt.seq_pop, Method("values"), Method("items"),
                form="same")


@batched_tangent(rt.add_grad)
def add_grad(y, a, b, *, t_a, t_b):
    return rt.batch_add_grad(t_a, t_b, y)

batched_tangent(np.trace, np.linspace, np.diag, np.diagonal, np.triu, np.tril, np.concatenate,
                np.stack, np.hstack, np.vstack, np.tile, np.repeat, np.vdot, np.inner, np.outer,
                np.tensordot, np.kron, np.einsum, builtins.sum, builtins.max, builtins.min,
                rt.broadcast_like, rt.reduce_to, rt.unreduce_like, rt.cast_like,
                rt.zero_grad_at, rt.take_grad, rt.full_grad, rt.written_grad, rt.keep_written,
                rt.tensordot_grad_a, rt.tensordot_grad_b, rt.seq_item, rt.seq_add,
                rt.seq_concat_vjp, rt.seq_repeat_vjp, rt.concatenate_vjp, rt.stack_vjp,
                rt.hstack_vjp, rt.vstack_vjp, rt.dstack_vjp, rt.column_stack_vjp,
                rt.index_concat_vjp, rt.array_vjp, rt.builtin_sum_vjp, rt.minmax_vjp,
                rt.dtype_grad, form="per_sample")


@batched_tangent(rt.add_at)
def add_at(y, dx, x, index, g, *, t_dx, t_g):
    return rt.batch_add_at(t_dx, x, index, t_g, y)


# ----- Reductions -----


@batched_tangent(np.sum)
def sum(y, a, axis=None, *, keepdims=False, t_a):
    return rt.batch_sum(t_a, axis, keepdims)


@batched_tangent(np.nansum)
def nansum(y, a, axis=None, *, keepdims=False, t_a):
    """NaN entries add nothing, nor their tangents (finite where ``log`` made the NaN)."""
    return rt.batch_sum(xp.where(xp.isnan(a), 0.0, rt.batch_fit(t_a, xp.asarray(a))), axis,
                        keepdims)


@batched_tangent(Method("sum"))
def sum_method(y, self, axis=None, *, keepdims=False, t_self):
    return rt.batch_sum(t_self, axis, keepdims)


@batched_tangent(np.mean)
def mean(y, a, axis=None, *, keepdims=False, t_a):
    return rt.batch_mean(t_a, axis, keepdims)


@batched_tangent(Method("mean"))
def mean_method(y, self, axis=None, *, keepdims=False, t_self):
    return rt.batch_mean(t_self, axis, keepdims)


@batched_tangent(np.prod)
def prod(y, a, axis=None, *, keepdims=False, t_a):
    return rt.batch_sum(rt.batch_array(t_a) * rt.prod_others(a, axis), axis, keepdims)


@batched_tangent(Method("prod"))
def prod_method(y, self, axis=None, *, keepdims=False, t_self):
    return rt.batch_sum(rt.batch_array(t_self) * rt.prod_others(self, axis), axis, keepdims)


@batched_tangent(np.max, np.amax, np.min, np.amin, np.nanmax, np.nanmin)
def max(y, a, axis=None, *, keepdims=False, initial=None, where=True, t_a):
    share = rt.tie_share(rt.where_mask(a == rt.unreduce_like(y, a, axis, keepdims), where),
                         axis, a, initial, y, keepdims)
    kept = xp.where(xp.isnan(a), 0.0, rt.batch_fit(t_a, xp.asarray(a)))   # nanmax's NaN entries
    return rt.batch_sum(kept * share, axis, keepdims)


@batched_tangent(Method("max"), Method("min"))
def max_method(y, self, axis=None, *, keepdims=False, initial=None, where=True, t_self):
    share = rt.tie_share(rt.where_mask(self == rt.unreduce_like(y, self, axis, keepdims), where),
                         axis, self, initial, y, keepdims)
    return rt.batch_sum(rt.batch_array(t_self) * share, axis, keepdims)


@batched_tangent(np.cumsum)
def cumsum(y, a, axis=None, *, t_a):
    return rt.batch_cumsum(t_a, axis)


@batched_tangent(Method("cumsum"))
def cumsum_method(y, self, axis=None, *, t_self):
    return rt.batch_cumsum(t_self, axis)


# ----- Shapes -----


@batched_tangent(np.reshape)
def reshape(y, a, shape=None, order="C", *, t_a):
    return rt.batch_reshape(t_a, y, rt.index_order(a, order))


@batched_tangent(Method("reshape"))
def reshape_method(y, self, *shape, order="C", t_self):
    return rt.batch_reshape(t_self, y, rt.index_order(self, order))


@batched_tangent(np.ravel, Method("ravel"), Method("flatten"))
def ravel(y, a, order="C", *, t_a):
    return rt.batch_reshape(t_a, y, rt.index_order(a, order))


@batched_tangent(np.squeeze, Method("squeeze"))
def squeeze(y, a, axis=None, *, t_a):
    return rt.batch_reshape(t_a, y)


@batched_tangent(np.expand_dims)
def expand_dims(y, a, axis, *, t_a):
    return rt.batch_reshape(t_a, y)


@batched_tangent(np.atleast_1d, np.atleast_2d)
def atleast_nd(y, ary, *, t_ary):
    return rt.batch_reshape(t_ary, y)


@batched_tangent(np.broadcast_to)
def broadcast_to(y, array, shape, *, t_array):
    return rt.batch_fit(t_array, y)


@batched_tangent(np.transpose)
def transpose(y, a, axes=None, *, t_a):
    return rt.batch_transpose(t_a, axes)


@batched_tangent(Method("transpose"))
def transpose_method(y, self, *axes, t_self):
    return rt.batch_transpose(t_self, rt.method_axes(axes))


@batched_tangent(Attribute("T"))
def T_attribute(y, self, *, t_self):
    return rt.batch_transpose(t_self, None)


@batched_tangent(np.swapaxes, Method("swapaxes"))
def swapaxes(y, a, axis1, axis2, *, t_a):
    return rt.batch_swapaxes(t_a, axis1, axis2)


@batched_tangent(np.flip)
def flip(y, m, axis=None, *, t_m):
    return rt.batch_flip(t_m, axis)


@batched_tangent(np.roll)
def roll(y, a, shift, axis=None, *, t_a):
    return rt.batch_roll(t_a, shift, axis)


@batched_tangent(np.array)
def array(y, object, dtype=None, *, copy=True, t_object):
    return rt.batch_cast(t_object, y)


@batched_tangent(np.asarray, np.asanyarray, np.ascontiguousarray, np.asarray_chkfinite)
def asarray(y, a, dtype=None, *, t_a):
    return rt.batch_cast(t_a, y, False)


@batched_tangent(Method("astype"))
def astype_method(y, self, dtype, order="K", casting="unsafe", subok=True, copy=True, *, t_self):
    return rt.batch_cast(t_self, y)


@batched_tangent(np.float64, np.float32, builtins.float)
def float_cast(y, x=0.0, *, t_x):
    return rt.batch_cast(t_x, y)


@batched_tangent(rt.as_array)
def as_array(y, seq, *, t_seq):
    return rt.batch_cast(t_seq, y, False)


@batched_tangent(Method("copy"))
def copy_method(y, self, order="C", *, t_self):
    return rt.batch_cast(t_self, y)


@batched_tangent(np.copy)
def copy(y, a, order="K", *, t_a):
    return rt.batch_cast(t_a, y)


# ----- Products -----


@batched_tangent(np.matmul, operator.matmul)
def matmul(y, x1, x2, *, t_x1, t_x2):
    return rt.batch_matmul(t_x1, x2, x1, False) + rt.batch_matmul(t_x2, x1, x2, True)


@batched_tangent(np.dot)
def dot(y, a, b, *, t_a, t_b):
    return rt.batch_dot(t_a, b, a, False) + rt.batch_dot(t_b, a, b, True)


@batched_tangent(Method("dot"))
def dot_method(y, self, b, *, t_self, t_b):
    return rt.batch_dot(t_self, b, self, False) + rt.batch_dot(t_b, self, b, True)


# ----- The rt.* helpers of a gradient read again (sg.hessian) -----


@batched_tangent(rt.unbroadcast)
def unbroadcast(y, g, x, *, t_g):
    return rt.batch_unbroadcast(t_g, x)


@batched_tangent(rt.unreduce)
def unreduce(y, g, x, axis=None, keepdims=False, *, t_g):
    return rt.batch_unreduce(t_g, x, axis, keepdims)


@batched_tangent(rt.matmul_grad_a)
def matmul_grad_a(y, dy, a, b, *, t_dy, t_b):
    return rt.batch_matmul_grad(t_dy, a, b, 0, y) + rt.batch_matmul_grad(t_b, a, dy, 1, y)


@batched_tangent(rt.matmul_grad_b)
def matmul_grad_b(y, dy, a, b, *, t_dy, t_a):
    return rt.batch_matmul_grad(t_dy, a, b, 2, y) + rt.batch_matmul_grad(t_a, dy, b, 3, y)


@batched_tangent(rt.dot_grad_a)
def dot_grad_a(y, dy, a, b, *, t_dy, t_b):
    return rt.batch_call(rt.dot_grad_a, (t_dy, a, b), 0, y) + \
        rt.batch_call(rt.dot_grad_a, (dy, a, t_b), 2, y)


@batched_tangent(rt.dot_grad_b)
def dot_grad_b(y, dy, a, b, *, t_dy, t_a):
    return rt.batch_call(rt.dot_grad_b, (t_dy, a, b), 0, y) + \
        rt.batch_call(rt.dot_grad_b, (dy, t_a, b), 1, y)


# ----- Containers -----


@batched_tangent(builtins.list, builtins.tuple)
def builtin_list(y, iterable, *, t_iterable):
    return rt.batch_list_jvp(t_iterable, iterable, y)
