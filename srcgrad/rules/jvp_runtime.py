"""Tangent (JVP) rules of the ``rt.*`` helpers a generated gradient calls: forward mode
over srcgrad's own gradient code (``sg.hvp``, ``sg.hessian``: hessians.py).

Each helper is linear in the adjoints it moves (``unbroadcast``, ``unreduce``,
``add_at``...), so its tangent is the helper applied to the tangents (a ``linear(...)``
declaration); a shape, an index or an operand read only for its shape (``no_tangent``)
takes no tangent. The
products' helpers (``matmul_grad_a``...) are bilinear: one term per operand.

The tape: a gradient that records one pushes with ``tape.append(v)`` and pops with
``rt.tape_pop(tape)`` in the code forward mode reads (pipeline.compose_gradient with
``for_transform``); forward mode keeps a tangent tape beside it (``dtape.append(dv)``,
``dv = rt.tape_pop(dtape)``): their rules are in tape_rules.py.

A helper of the gradient without a rule here is refused by forward mode (and by
``sg.hvp``, naming the user's function).
"""

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, linear, nondifferentiable, tangent
from srcgrad.runtime.arrays import is_array

xp = None  # placeholder: the array namespace, bound in generated code


@rt.helper
def has_grad_jvp(g, t, at_zero=False):
    """``rt.has_grad`` in a tangent program: a block skipped while the adjoint is a zero
    runs when its tangent is not (a zero adjoint may have a nonzero derivative).
    ``at_zero``: the block calls a helper whose derivative may not exist where its adjoint
    is 0 (``rules.run_at_zero``): it runs at a computed zero too (not the Python 0.0 an
    adjoint starts as), as ``rt.touched`` does where reverse mode reads a gradient again."""
    if at_zero and not rt.is_zero_grad(g):
        return True
    return rt.has_grad(g) or t is not None and rt.has_grad(t)


@rt.helper
def add_at_tangent(t_dx, x, index, t_g, y=None):
    """The tangent of ``y = rt.add_at(dx, x, index, g)``, in a copy (``t_dx`` may be shared
    with another tangent where the values are not); None is a zero tangent. Where nothing
    added carries a tangent and ``dx`` was a scalar zero, the tangent is zeros of ``y``'s
    shape (a scalar 0.0 met shape-checking rules after it: rt.matmul_grad_a)."""
    if t_g is None:
        if (t_dx is None or rt.is_zero_grad(t_dx)) and is_array(y) and is_array(x):
            return rt.tangent_zero(y)
        return 0.0 if t_dx is None else t_dx
    if t_dx is None:
        t_dx = 0.0
    elif is_array(t_dx):
        t_dx = t_dx.copy()
    out = rt.add_at(t_dx, x, index, t_g)
    if rt.is_zero_grad(out) and is_array(y) and is_array(x):   # a computed zero added: the same
        return rt.tangent_zero(y)
    return out


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
nondifferentiable(rt.tangent_zero)   # zeros of a value's shape: a tangent program read
# again (sg.jvp inside, differentiated twice: nested_jvp.py) has no derivative through it


# ----- Linear in the adjoints they move; the other operands give shapes or indices -----


linear(rt.unbroadcast, "g", no_tangent=("x",))
linear(rt.broadcast_like, "dz", no_tangent=("g",))
linear(rt.unreduce, "g", no_tangent=("x",))
linear(rt.reduce_to, "dz", no_tangent=("g",))
linear(rt.expand_to, "dw_", no_tangent=("dz",))
linear(rt.unreduce_like, "value", no_tangent=("x",))
linear(rt.cast_like, "g", no_tangent=("x",))
linear(rt.real_like, "g", no_tangent=("x",))
linear(rt.materialize, "g", no_tangent=("x",))
linear(rt.dtype_grad, "g", no_tangent=("dtype", "x"))
linear(rt.add_at_dx, "dw", no_tangent=("dx",))
linear(rt.own, "value")
linear(rt.save, "value")
linear(rt.container_copy, "value")
linear(rt.copy_restored, "value", no_tangent=("written",))
linear(rt.take_grad, "dx", no_tangent=("index",))
linear(rt.full_grad, "dx", no_tangent=("x",))
linear(rt.written_grad, "dx", no_tangent=("x", "index"))
linear(rt.keep_written, "g", no_tangent=("x", "index"))
linear(rt.take_vjp, "dy", no_tangent=("a", "indices"))
linear(rt.take_along_axis_vjp, "dy", no_tangent=("arr", "indices"))
linear(rt.diag_vjp, "dy", no_tangent=("v",))
linear(rt.diagonal_vjp, "dy", no_tangent=("a",))
linear(rt.diff_vjp, "dy", no_tangent=("a", "prepend", "append"))
linear(rt.diff_end_vjp, "dy", no_tangent=("a", "n", "axis", "prepend", "append", "end"))
linear(rt.tolist_vjp, "dy", no_tangent=("a",))
linear(rt.where_mask, "g", no_tangent=("where",))
linear(rt.reduction_cast, "g", no_tangent=("a",))
linear(rt.pad_vjp, "dy", no_tangent=("array",))
linear(rt.pad_jvp, "t", no_tangent=("array",))
linear(rt.tile_vjp, "dy", no_tangent=("A",))
linear(rt.repeat_vjp, "dy", no_tangent=("a",))
linear(rt.append_vjp, "dy", no_tangent=("arr", "values"))
linear(rt.select_vjp, "dy", no_tangent=("condlist", "choicelist"))
linear(rt.pad_constant_vjp, "dy", no_tangent=("array", "constant_values"))


@tangent(rt.run_hooks, no_tangent=("hooks", "value"))
def run_hooks(y, hooks, g, value, *, t_g):
    return rt.hooks_tangent(y, g, t_g)


@tangent(rt.add_grad)
def add_grad(y, a, b, *, t_a, t_b):
    return rt.add_tangents(t_a, t_b)


@tangent(rt.add_at, no_tangent=("x", "index"))
def add_at(y, dx, x, index, g, *, t_dx, t_g):
    return rt.add_at_tangent(t_dx, x, index, t_g, y)


@tangent(rt.zero_grad_at, no_tangent=("x", "index"))
def zero_grad_at(y, dx, x, index, *, t_dx):
    return rt.zero_grad_at(rt.own(t_dx), x, index)


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


@tangent(rt.divide)
def divide(y, a, b, *, t_a, t_b):
    return rt.divide(t_a, b) - rt.divide(t_b * y, b)


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


@tangent(rt.seq_add)
def seq_add(y, dseq, g, *, t_dseq, t_g):
    return rt.seq_add_tangent(t_dseq, t_g)


linear(rt.seq_item, "dseq", no_tangent=("index",))
linear(rt.seq_pop, "dseq")
linear(rt.seq_unpop, "dz", no_tangent=("popped",))
linear(rt.seq_onehot, "dz", no_tangent=("dseq", "index"))
linear(rt.seq_concat_vjp, "dy", no_tangent=("a", "b"))
linear(rt.seq_repeat_vjp, "dy", no_tangent=("a", "b"))
linear(rt.concatenate_vjp, "dy", no_tangent=("arrays",))
linear(rt.split_vjp, "dys", no_tangent=("ys",))
linear(rt.stack_vjp, "dy", no_tangent=("arrays",))
linear(rt.stack_fill, "dzs", no_tangent=("arrays",))
linear(rt.hstack_vjp, "dy", no_tangent=("tup",))
linear(rt.vstack_vjp, "dy", no_tangent=("tup",))
linear(rt.dstack_vjp, "dy", no_tangent=("tup",))
linear(rt.column_stack_vjp, "dy", no_tangent=("tup",))
linear(rt.index_concat, "items", no_tangent=("concatenator",))
linear(rt.index_concat_vjp, "dy", no_tangent=("concatenator", "items"))
linear(rt.array_vjp, "dy", no_tangent=("obj",))
linear(rt.builtin_sum_vjp, "dy", no_tangent=("iterable",))
# The arguments choose which gets the gradient (piecewise constant, ties shared):
linear(rt.minmax_vjp, "dy", no_tangent=("y", "args"))


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


@rt.helper
def tangent_memory_tangent(t_t, t, out):
    """The tangent of ``out = rt.tangent_memory(t, ...)`` for ``t``'s tangent ``t_t``: ``t_t``,
    copied where ``out`` is a copy of ``t`` (a write into ``out`` later reaches ``t`` exactly
    when the write into its tangent reaches ``t_t``): a tangent program read again."""
    if t_t is not None and out is not t and is_array(t_t):
        return t_t.copy()
    return t_t


@tangent(rt.tangent_memory, no_tangent=("y", "primals", "tangents", "error"))
def tangent_memory_tan(out, t, y, primals, tangents, error, *, t_t):
    return rt.tangent_memory_tangent(t_t, t, out)


@adjoint(rt.tangent_memory)
def tangent_memory_adjoint(dw, w, t, y, primals, tangents, error):
    """``t`` itself or a copy: the cotangent passes to ``t`` (the others give memory only)."""
    return dw, None, None, None, None
