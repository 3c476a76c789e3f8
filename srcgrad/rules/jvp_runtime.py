"""Tangent (JVP) rules of the ``rt.*`` helpers a generated gradient calls: forward mode
over srcgrad's own gradient code (``sg.hvp``, ``sg.hessian``: hessians.py).

Each helper is linear in the adjoints it moves (``unbroadcast``, ``unreduce``,
``add_at``...), so its tangent is the helper applied to the tangents; a shape, an
index or an operand read only for its shape (``no_tangent``) takes no tangent. The
products' helpers (``matmul_grad_a``...) are bilinear: one term per operand.

The tape: a gradient that records one pushes with ``tape.append(v)`` and pops with
``rt.tape_pop(tape)`` in the code forward mode reads (pipeline.compose_gradient with
``for_transform``); forward mode keeps a tangent tape beside it (``dtape.append(dv)``,
``dv = rt.tape_pop(dtape)``).

A helper of the gradient without a rule here is refused by forward mode (and by
``sg.hvp``, naming the user's function).
"""

from srcgrad import runtime as rt
from srcgrad.rules import nondifferentiable, tangent
from srcgrad.runtime.arrays import is_array

xp = None  # placeholder: the array namespace, bound in generated code


@rt.helper
def tape_pop(tape):
    """The tape's last value, taken off it (``pop()`` of a gradient read again)."""
    return tape.pop()


@rt.helper
def tape_unpop(dtape, dv, tape):
    """Adjoint of ``v = tape_pop(tape)`` (``tape`` restored): the list's adjoint with
    ``dv`` for its last item, zeros for items that had none."""
    rest = list(dtape) if isinstance(dtape, list) else []
    return [0.0] * (len(tape) - 1 - len(rest)) + rest + [dv]


@tangent(rt.tape_pop)
def tape_pop_jvp(y, tape, *, t_tape):
    return rt.tape_pop(t_tape)


@rt.helper
def has_grad_jvp(g, t):
    """``rt.has_grad`` in a tangent program: a block skipped while the adjoint is a zero
    runs when its tangent is not (a zero adjoint may have a nonzero derivative)."""
    return rt.has_grad(g) or t is not None and rt.has_grad(t)


@rt.helper
def add_at_tangent(t_dx, x, index, t_g):
    """The tangent of ``rt.add_at(dx, x, index, g)``, in a copy (``t_dx`` may be shared
    with another tangent where the values are not); None is a zero tangent."""
    if t_g is None:
        return 0.0 if t_dx is None else t_dx
    if t_dx is None:
        t_dx = 0.0
    elif is_array(t_dx):
        t_dx = t_dx.copy()
    return rt.add_at(t_dx, x, index, t_g)


@rt.helper
def add_tangents(a, b):
    """``rt.add_grad`` of two tangents, None being zero."""
    if a is None:
        return b
    if b is None:
        return a
    return rt.add_grad(a, b)


@rt.helper
def seq_add_tangent(t_dseq, t_g):
    """The tangent of ``rt.seq_add(dseq, g)`` (linear in both), None being zero."""
    if t_g is None:
        return 0.0 if t_dseq is None else t_dseq
    return rt.seq_add(0.0 if t_dseq is None else t_dseq, t_g)


nondifferentiable(rt.has_grad_jvp)


@tangent(rt.unbroadcast, no_tangent=("x",))
def unbroadcast(y, g, x, *, t_g):
    return rt.unbroadcast(t_g, x)


@tangent(rt.broadcast_like, no_tangent=("g",))
def broadcast_like(y, dz, g, *, t_dz):
    return rt.broadcast_like(t_dz, g)


@tangent(rt.unreduce, no_tangent=("x",))
def unreduce(y, g, x, axis=None, keepdims=False, *, t_g):
    return rt.unreduce(t_g, x, axis, keepdims)


@tangent(rt.reduce_to, no_tangent=("g",))
def reduce_to(y, dz, g, axis=None, keepdims=False, *, t_dz):
    return rt.reduce_to(t_dz, g, axis, keepdims)


@tangent(rt.unreduce_like, no_tangent=("x",))
def unreduce_like(y, value, x, axis=None, keepdims=False, *, t_value):
    return rt.unreduce_like(t_value, x, axis, keepdims)


@tangent(rt.cast_like, no_tangent=("x",))
def cast_like(y, g, x, *, t_g):
    return rt.cast_like(t_g, x)


@tangent(rt.own)
def own(y, value, *, t_value):
    return rt.own(t_value)


@tangent(rt.save)
def save(y, value, *, t_value):
    return rt.save(t_value)


@tangent(rt.add_grad)
def add_grad(y, a, b, *, t_a, t_b):
    return rt.add_tangents(t_a, t_b)


@tangent(rt.add_at, no_tangent=("x", "index"))
def add_at(y, dx, x, index, g, *, t_dx, t_g):
    return rt.add_at_tangent(t_dx, x, index, t_g)


@tangent(rt.zero_grad_at, no_tangent=("x", "index"))
def zero_grad_at(y, dx, x, index, *, t_dx):
    return rt.zero_grad_at(rt.own(t_dx), x, index)


@tangent(rt.take_grad, no_tangent=("index",))
def take_grad(y, dx, index, *, t_dx):
    return rt.take_grad(t_dx, index)


@tangent(rt.written_grad, no_tangent=("x", "index"))
def written_grad(y, dx, x, index, *, t_dx):
    return rt.written_grad(t_dx, x, index)


@tangent(rt.keep_written, no_tangent=("x", "index"))
def keep_written(y, g, x, index, *, t_g):
    return rt.keep_written(t_g, x, index)


@tangent(rt.matmul_grad_a, no_tangent=("a",))
def matmul_grad_a(y, dy, a, b, *, t_dy, t_b):
    return rt.matmul_grad_a(t_dy, a, b) + rt.matmul_grad_a(dy, a, t_b)


@tangent(rt.matmul_grad_b, no_tangent=("b",))
def matmul_grad_b(y, dy, a, b, *, t_dy, t_a):
    return rt.matmul_grad_b(t_dy, a, b) + rt.matmul_grad_b(dy, t_a, b)


@tangent(rt.dot_grad_a, no_tangent=("a",))
def dot_grad_a(y, dy, a, b, *, t_dy, t_b):
    return rt.dot_grad_a(t_dy, a, b) + rt.dot_grad_a(dy, a, t_b)


@tangent(rt.dot_grad_b, no_tangent=("b",))
def dot_grad_b(y, dy, a, b, *, t_dy, t_a):
    return rt.dot_grad_b(t_dy, a, b) + rt.dot_grad_b(dy, t_a, b)


@tangent(rt.tensordot_grad_a, no_tangent=("a",))
def tensordot_grad_a(y, dy, a, b, axes=2, *, t_dy, t_b):
    return rt.tensordot_grad_a(t_dy, a, b, axes) + rt.tensordot_grad_a(dy, a, t_b, axes)


@tangent(rt.tensordot_grad_b, no_tangent=("b",))
def tensordot_grad_b(y, dy, a, b, axes=2, *, t_dy, t_a):
    return rt.tensordot_grad_b(t_dy, a, b, axes) + rt.tensordot_grad_b(dy, t_a, b, axes)


# ----- Scalar functions of the gradients of math and power rules -----


@tangent(rt.log_or_zero)
def log_or_zero(y, a, *, t_a):
    return t_a * rt.log_or_zero_grad(a)


@tangent(rt.log_or_zero_grad)
def log_or_zero_grad(y, a, *, t_a):
    return -t_a * y * y


@tangent(rt.sin)
def sin(y, x, *, t_x):
    return t_x * rt.cos(x)


@tangent(rt.cos)
def cos(y, x, *, t_x):
    return -t_x * rt.sin(x)


@tangent(rt.exp)
def exp(y, x, *, t_x):
    return t_x * y


@tangent(rt.sinh)
def sinh(y, x, *, t_x):
    return t_x * rt.cosh(x)


@tangent(rt.cosh)
def cosh(y, x, *, t_x):
    return t_x * rt.sinh(x)


@tangent(rt.log)
def log(y, x, *, t_x):
    return t_x / x


@tangent(rt.log_base)
def log_base(y, base, *, t_base):
    return t_base / base


# ----- Gradients of lists and joins: linear in the adjoint, the operands give shapes -----


@tangent(rt.seq_item, no_tangent=("index",))
def seq_item(y, dseq, index, *, t_dseq):
    return rt.seq_item(t_dseq, index)


@tangent(rt.seq_pop)
def seq_pop(y, dseq, *, t_dseq):
    return rt.seq_pop(t_dseq)


@tangent(rt.seq_add)
def seq_add(y, dseq, g, *, t_dseq, t_g):
    return rt.seq_add_tangent(t_dseq, t_g)


@tangent(rt.seq_concat_vjp, no_tangent=("a", "b"))
def seq_concat_vjp(y, dy, a, b, *, t_dy):
    return rt.seq_concat_vjp(t_dy, a, b)


@tangent(rt.seq_repeat_vjp, no_tangent=("a", "b"))
def seq_repeat_vjp(y, dy, a, b, *, t_dy):
    return rt.seq_repeat_vjp(t_dy, a, b)


@tangent(rt.concatenate_vjp, no_tangent=("arrays",))
def concatenate_vjp(y, dy, arrays, axis=0, *, t_dy):
    return rt.concatenate_vjp(t_dy, arrays, axis)


@tangent(rt.stack_vjp, no_tangent=("arrays",))
def stack_vjp(y, dy, arrays, axis=0, *, t_dy):
    return rt.stack_vjp(t_dy, arrays, axis)


@tangent(rt.hstack_vjp, no_tangent=("tup",))
def hstack_vjp(y, dy, tup, *, t_dy):
    return rt.hstack_vjp(t_dy, tup)


@tangent(rt.vstack_vjp, no_tangent=("tup",))
def vstack_vjp(y, dy, tup, *, t_dy):
    return rt.vstack_vjp(t_dy, tup)


@tangent(rt.dstack_vjp, no_tangent=("tup",))
def dstack_vjp(y, dy, tup, *, t_dy):
    return rt.dstack_vjp(t_dy, tup)


@tangent(rt.column_stack_vjp, no_tangent=("tup",))
def column_stack_vjp(y, dy, tup, *, t_dy):
    return rt.column_stack_vjp(t_dy, tup)


@tangent(rt.index_concat_vjp, no_tangent=("concatenator", "items"))
def index_concat_vjp(y, dy, concatenator, items, *, t_dy):
    return rt.index_concat_vjp(t_dy, concatenator, items)


@tangent(rt.array_vjp, no_tangent=("obj",))
def array_vjp(y, dy, obj, *, t_dy):
    return rt.array_vjp(t_dy, obj)


@tangent(rt.builtin_sum_vjp, no_tangent=("iterable",))
def builtin_sum_vjp(y, dy, iterable, *, t_dy):
    return rt.builtin_sum_vjp(t_dy, iterable)


@tangent(rt.minmax_vjp, no_tangent=("y_", "args"))
def minmax_vjp(y, dy, y_, args, *, t_dy):
    """The arguments choose which gets the gradient (piecewise constant, ties shared)."""
    return rt.minmax_vjp(t_dy, y_, args)


@tangent(rt.dtype_grad, no_tangent=("dtype", "x"))
def dtype_grad(y, g, dtype, x, *, t_g):
    return rt.dtype_grad(t_g, dtype, x)


@rt.helper
def attr_add_tangent(t_dx, x, attr, t_g, error):
    """The tangent of ``rt.attr_add(dx, x, attr, g, error)`` (a field of a structure's
    adjoint: linear in both; it builds a new adjoint), None being zero."""
    return rt.attr_add(0.0 if t_dx is None else t_dx, x, attr, 0.0 if t_g is None else t_g, error)


@tangent(rt.attr_add, no_tangent=("x", "attr", "error"))
def attr_add(y, dx, x, attr, g, error, *, t_dx, t_g):
    return rt.attr_add_tangent(t_dx, x, attr, t_g, error)


@tangent(rt.attr_item, no_tangent=("x", "attr"))
def attr_item(y, dx, x, attr, *, t_dx):
    return rt.attr_item(t_dx, x, attr)
