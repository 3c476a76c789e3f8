"""Tangent (JVP) rules written by hand: the primitives whose tangent is not read off
their adjoint by linearity (reductions, shapes, products, joins, Python's builtins).

The contract is in srcgrad/rules/__init__.py ("Tangent (JVP) rules"): ``(y, *params,
*, t_<param>...)`` returning the output's tangent; a zero tangent drops every term it
is a factor or argument of, so each argument's contribution is a term of its own.
A primitive linear in an argument (a reshape, a reduction by sum, a join) is declared
``linear(np.transpose, "a")``: its tangent is the primitive applied to the tangent.
Elementwise ufuncs (``sin``, ``exp``, ``maximum``, ``where``, ``clip``...) need none
here: forward mode derives theirs from the adjoint (transform/tangent_rules.py). Rules of
other primitives sit beside their adjoints (``prod_others``, ``cumprod``, ``einsum_vjp``,
``math.log``, ``sinc``, the linalg ones).
Ties of ``max``/``min`` share the tangent evenly, as their adjoints share the gradient.
"""

import builtins
import operator

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Attribute, Method, linear, tangent
from srcgrad.runtime.arrays import is_array, may_share_memory, namespace
from srcgrad.runtime.containers import concat_tangent

xp = None  # placeholder: the array namespace, bound in generated code

# ----- Arithmetic the derivation would make worse -----


@tangent(np.multiply, operator.mul)
def multiply(y, x1, x2, *, t_x1, t_x2):
    return t_x1 * x2 + x1 * t_x2


@tangent(np.add, operator.add)
def add(y, x1, x2, *, t_x1, t_x2):
    return t_x1 + t_x2


@tangent(np.subtract, operator.sub)
def subtract(y, x1, x2, *, t_x1, t_x2):
    return t_x1 - t_x2


# ----- Reductions -----


linear(np.sum, "a", "initial")
linear(Method("sum"), "self", "initial", call="xp.sum")
linear(np.mean, "a")
linear(Method("mean"), "self", call="xp.mean")


@tangent(np.nansum)
def nansum(y, a, axis=None, *, keepdims=False, t_a):
    return xp.sum(xp.where(xp.isnan(a), 0.0, t_a), axis=axis, keepdims=keepdims)


@tangent(np.prod)
def prod(y, a, axis=None, *, keepdims=False, t_a):
    return xp.sum(t_a * rt.prod_others(a, axis), axis=axis, keepdims=keepdims)


@tangent(Method("prod"))
def prod_method(y, self, axis=None, *, keepdims=False, t_self):
    return xp.sum(t_self * rt.prod_others(self, axis), axis=axis, keepdims=keepdims)


@tangent(np.max, np.amax, np.min, np.amin, np.nanmax, np.nanmin)
def max(y, a, axis=None, *, keepdims=False, initial=None, where=True, t_a):
    """An ``initial`` that carries a tangent is refused (no ``t_initial``); the NaN entries
    of ``nanmax``/``nanmin`` equal no extremum, so their tangents (NaN where a NaN entry's
    tangent is ``nan * 0``) are left out."""
    share = rt.tie_share(rt.where_mask(a == rt.unreduce_like(y, a, axis, keepdims), where),
                         axis, a, initial, y, keepdims)
    return xp.sum(xp.where(xp.isnan(a), 0.0, t_a) * share, axis=axis, keepdims=keepdims)


@tangent(Method("max"), Method("min"))
def max_method(y, self, axis=None, *, keepdims=False, initial=None, where=True, t_self):
    """An ``initial`` that carries a tangent is refused (no ``t_initial``); the NaN entries
    of ``nanmax``/``nanmin`` equal no extremum, so their tangents are left out."""
    share = rt.tie_share(rt.where_mask(self == rt.unreduce_like(y, self, axis, keepdims), where),
                         axis, self, initial, y, keepdims)
    return xp.sum(xp.where(xp.isnan(self), 0.0, t_self) * share, axis=axis, keepdims=keepdims)


linear(np.cumsum, "a")
linear(Method("cumsum"), "self", call="xp.cumsum")
linear(np.trace, "a")
linear(np.bincount, "weights")   # a sum of the weights by bin
linear(np.linspace, "start", "stop")


# ----- Shapes (linear: the primitive applied to the tangent) -----


# A reshape reads its tangent in the order it read its operand (rt.index_order: "A" and
# "K" follow the operand's memory, which the tangent's need not share).


@tangent(np.reshape)
def reshape(y, a, shape=None, order="C", *, t_a):
    return xp.reshape(t_a, rt.shape_of(y), order=rt.index_order(a, order))


@tangent(Method("reshape"))
def reshape_method(y, self, *shape, order="C", t_self):
    return xp.reshape(t_self, rt.shape_of(y), order=rt.index_order(self, order))


@tangent(np.ravel)
def ravel(y, a, order="C", *, t_a):
    return xp.reshape(t_a, rt.shape_of(y), order=rt.index_order(a, order))


@tangent(Method("ravel"), Method("flatten"))
def ravel_method(y, self, order="C", *, t_self):
    return xp.reshape(t_self, rt.shape_of(y), order=rt.index_order(self, order))
linear(np.squeeze, "a")
linear(Method("squeeze"), "self", call="xp.squeeze")
linear(np.expand_dims, "a")
linear((np.atleast_1d, np.atleast_2d, np.atleast_3d), "ary")
linear(np.broadcast_to, "array")
linear(np.transpose, "a")


@tangent(Method("transpose"))
def transpose_method(y, self, *axes, t_self):
    return xp.transpose(t_self, rt.method_axes(axes))


@tangent(Attribute("T"))
def T_attribute(y, self, *, t_self):
    return xp.transpose(t_self)


linear(np.swapaxes, "a")
linear(Method("swapaxes"), "self", call="xp.swapaxes")
linear(np.moveaxis, "a")
linear(np.rollaxis, "a")
linear(np.flip, "m")
linear(np.fliplr, "m")
linear(np.flipud, "m")
linear(np.rot90, "m")
linear(np.roll, "a")


@tangent(np.array)
def array(y, object, dtype=None, *, copy=True, t_object):
    return rt.tangent_array(t_object, y, object)


@tangent(np.asarray, np.asanyarray, np.ascontiguousarray, np.asarray_chkfinite)
def asarray(y, a, dtype=None, *, t_a):
    return rt.tangent_array(t_a, y, a)


@tangent(Method("astype"))
def astype_method(y, self, dtype, order="K", casting="unsafe", subok=True, copy=True, *, t_self):
    return rt.tangent_array(t_self, y, self)


@tangent(np.float64, np.float32, builtins.float)
def float_cast(y, x=0.0, *, t_x):
    return rt.tangent_array(t_x, y, x)


@tangent(Method("copy"))
def copy_method(y, self, order="C", *, t_self):
    return rt.tangent_array(t_self, y)


@tangent(np.copy)
def copy(y, a, order="K", *, t_a):
    return rt.tangent_array(t_a, y)


linear(np.diag, "v")
linear(np.diagonal, "a")
linear(Method("diagonal"), "self", call="xp.diagonal")
linear(np.triu, "m")
linear(np.tril, "m")
linear(np.take, "a", no_tangent=("indices",))
linear(Method("take"), "self", call="xp.take", no_tangent=("indices",))
linear(np.take_along_axis, "arr", no_tangent=("indices",))
linear(rt.ufunc_add_at, "a", "values", no_tangent=("index",))
linear(np.diff, "a", "prepend", "append")


@tangent(np.pad)
def pad(y, array, pad_width, mode="constant", constant_values=0, *, t_array, t_constant_values):
    """Jointly linear in the array and the constant padding values (``rt.pad_jvp``: a
    statistic mode held in a variable is the inlined version's tangent, not ``t``'s own
    statistic)."""
    return rt.pad_jvp(t_array, array, pad_width, mode) + rt.pad_values_jvp(t_constant_values, array, pad_width)


# ----- Joins and splits (a sequence argument's tangent is a list, zeros where constant;
# a jointly linear primitive's constant argument gets rt.tangent_zero of its shape) -----


linear(np.concatenate, "arrays")
linear(np.stack, "arrays")
linear(np.hstack, "tup")
linear(np.vstack, "tup")
linear(np.dstack, "tup")
linear(np.column_stack, "tup")
linear(np.append, "arr", "values")
linear(np.tile, "A")
linear(np.repeat, "a")
linear((np.split, np.array_split), "ary")
linear(np.hsplit, "ary")
linear(np.vsplit, "ary")
linear(np.dsplit, "ary")


# ----- Products -----


@tangent(np.matmul, operator.matmul)
def matmul(y, x1, x2, *, t_x1, t_x2):
    return t_x1 @ x2 + x1 @ t_x2


@tangent(np.dot)
def dot(y, a, b, *, t_a, t_b):
    return xp.dot(t_a, b) + xp.dot(a, t_b)


@tangent(Method("dot"))
def dot_method(y, self, b, *, t_self, t_b):
    return xp.dot(t_self, b) + xp.dot(self, t_b)


@tangent(np.vdot)
def vdot(y, a, b, *, t_a, t_b):
    return xp.vdot(t_a, b) + xp.vdot(a, t_b)


@tangent(np.inner)
def inner(y, a, b, *, t_a, t_b):
    return xp.inner(t_a, b) + xp.inner(a, t_b)


@tangent(np.outer)
def outer(y, a, b, *, t_a, t_b):
    return xp.outer(t_a, b) + xp.outer(a, t_b)


@tangent(np.tensordot)
def tensordot(y, a, b, axes=2, *, t_a, t_b):
    return xp.tensordot(t_a, b, axes) + xp.tensordot(a, t_b, axes)


@tangent(np.kron)
def kron(y, a, b, *, t_a, t_b):
    return xp.kron(t_a, b) + xp.kron(a, t_b)


@tangent(np.einsum)
def einsum(y, subscripts, *operands, optimize=False, t_subscripts, t_operands):
    return rt.einsum_jvp(subscripts, operands, [t_subscripts], t_operands)


# ----- Python's builtins -----


@tangent(builtins.sum)
def builtin_sum(y, iterable, start=0, *, t_iterable, t_start):
    return rt.tangent_sum(t_iterable) + t_start


@tangent(builtins.max, builtins.min)
def builtin_max(y, *args, t_args):
    return rt.minmax_jvp(y, args, t_args)


# ----- Run-time helpers of the tangent program -----


@rt.helper
def tangent_zero(value):
    """The zero tangent of ``value``: 0.0 for a number, float zeros of an array's shape
    (its own dtype when it is a float array), a list of zeros for a list (or a range:
    a loop's iterable, which a gradient read again may keep on its tape), a dict of
    zeros for a dict."""
    if is_array(value):
        xp = namespace(value)
        dtype = value.dtype if value.dtype.kind in "fc" else xp.float64
        return xp.zeros(value.shape, dtype)
    if isinstance(value, (list, tuple)):
        return [tangent_zero(v) for v in value]
    if isinstance(value, dict):
        zeros = {k: tangent_zero(v) for k, v in value.items()}
        return zero_default(value, zeros, tangent_zero)
    if isinstance(value, range):
        return [0.0] * len(value)
    return 0.0


def zero_default(value, zeros, zero):
    """The tangent dict ``zeros`` of a dict that answers a missing key is one too: a
    ``collections.defaultdict``'s gets ``zero(factory())`` (the factory is no lambda of
    the function's, which is refused, so what it makes is a constant), a ``Counter``'s
    (another ``__missing__``) ``zero(0)``."""
    import collections
    if isinstance(value, collections.defaultdict):
        if value.default_factory is None:
            return zeros
        factory = value.default_factory
        return collections.defaultdict(lambda: zero(factory()), zeros)
    if hasattr(type(value), "__missing__"):
        return _ZeroMissing(zeros, lambda: zero(0))
    return zeros


class _ZeroMissing(dict):
    """A tangent dict whose missing key reads as a zero (as ``Counter``'s reads as 0)."""

    def __init__(self, items, zero):
        super().__init__(items)
        self.zero = zero

    def __missing__(self, key):
        return self.zero()


@rt.helper
def tangent_like(t, y, right=False):
    """A tangent given its value's shape: ``t`` of ``y = x + c`` where only ``x`` moves has
    ``x``'s shape, and ``c`` may have broadcast ``y`` wider (a copy of its own then).
    Where ``+`` concatenated lists or tuples, ``c``'s items get zeros: after ``t``'s, or
    before them with ``right`` (``y = c + x``)."""
    if isinstance(y, (list, tuple)):
        return concat_tangent(t, y, right, tangent_zero)
    if not is_array(y) or rt.shape_of(t) == y.shape:
        return t
    xp = namespace(y)
    dtype = y.dtype if y.dtype.kind in "fc" else xp.float64
    return xp.broadcast_to(xp.asarray(t, dtype=dtype), y.shape).copy()


linear(rt.tangent_like, "t", no_tangent=("y",))


@rt.helper
def tangent_array(t, y, obj=None):
    """The tangent of ``y = np.array(obj)`` (or a cast, a copy) given ``obj``'s tangent
    ``t``: an array of ``y``'s shape and float dtype that shares ``t``'s memory exactly
    when ``y`` shares ``obj``'s (``np.asarray``, ``np.array(copy=False)``,
    ``np.float64(a)``, ``.astype(copy=False)`` may return ``obj`` itself), so a later
    write into ``y`` reaches ``obj``'s tangent as it reaches ``obj``."""
    if not is_array(y):
        if isinstance(y, (list, dict)) and isinstance(t, (list, dict)) and y is not obj:
            return type(t)(t)   # q = p.copy() of a list or dict: a new one, items shared
        return float(t) if isinstance(y, float) else t
    xp = namespace(y)
    if y.dtype.kind in "biu":   # np.array(values, dtype=d) with d an int dtype known when it runs
        return xp.zeros(y.shape)
    dtype = y.dtype if y.dtype.kind in "fc" else xp.float64
    out = xp.asarray(t, dtype=dtype).reshape(y.shape)
    if is_array(obj) and (y is obj or getattr(y, "base", None) is not None and may_share_memory(y, obj)):
        return out
    return out.copy() if out is t or getattr(out, "base", None) is not None else out


@rt.helper
def tangent_memory(t, y, primals, tangents, error):
    """The tangent ``t`` of ``y``, an array written in place later, sharing memory with the
    tangents of ``primals`` exactly as ``y`` shares theirs: a copy where ``y`` has memory of
    its own (``y.flatten()`` whose rule gives ``ravel(dx)``); ``error`` raised where ``y`` is
    a view of an operand with a tangent and ``t`` is not (``np.einsum('i->i', x)``; None:
    ``t`` is kept, in a gradient read again)."""
    if not is_array(y) or not is_array(t):
        return t
    shared = False
    for p, d in zip(primals, tangents):
        if d is not None and is_array(p) and may_share_memory(y, p):
            shared = True
            if error is not None and not (is_array(d) and may_share_memory(t, d)):
                raise error
    if shared:
        return t
    if any(is_array(d) and may_share_memory(t, d) for d in tangents):
        return t.copy()
    return t




@rt.helper
def einsum_jvp(subscripts, operands, t_first, t_operands):
    """The tangent of ``einsum(subscripts, *operands)``: one einsum per operand with a
    tangent, that operand replaced by it (einsum is linear in each). ``t_first`` is
    ``[tangent of subscripts]`` (an operand in the sublist form; None: none)."""
    args = (subscripts,) + tuple(operands)
    tangents = (list(t_first) if t_first is not None else [None]) + (
        list(t_operands) if t_operands is not None else [None] * len(operands))
    if isinstance(subscripts, str):
        positions = range(1, len(args))
    else:   # op0, sublist0, op1, sublist1, ..., [output sublist]
        positions = range(0, len(args) - (len(args) % 2 == 1 and len(args) > 1), 2)
    xp = namespace(*[a for a in args if is_array(a)])
    total = 0.0
    for k in positions:
        t = tangents[k]
        if t is None or isinstance(t, float) and t == 0.0:
            continue
        replaced = list(args)
        replaced[k] = t
        total = total + xp.einsum(*replaced)
    return total


@rt.helper
def tangent_sum(t):
    """The tangent of Python's ``sum(iterable)``."""
    if is_array(t):
        return t.sum(axis=0)
    from srcgrad.rules.builtins_math import refuse_concatenation
    refuse_concatenation(t)
    total = 0.0
    for item in t:
        total = total + item
    return total


@rt.helper
def minmax_jvp(y, args, t_args):
    """The tangent of Python's ``max``/``min``: ties share it evenly, as in the adjoint."""
    items = args[0] if len(args) == 1 else args
    tangents = t_args[0] if len(args) == 1 else t_args
    if is_array(items):
        mask = items == y
        return (tangents * mask).sum() / mask.sum()
    from srcgrad.rules.builtins_math import refuse_lexicographic
    refuse_lexicographic(items)
    hits = [1.0 if item == y else 0.0 for item in items]
    count = builtins.sum(hits)
    total = 0.0
    for h, t in zip(hits, tangents):
        if h:
            total = total + t * h
    return total / count


@tangent(rt.as_array)
def as_array(y, seq, *, t_seq):
    return rt.as_array(t_seq)


@tangent(Method("cumsum"))
def cumsum_method(y, self, axis=None, *, t_self):
    return xp.cumsum(t_self, axis=axis)


# ----- Containers: a container's tangent is the container of its items' tangents (a
# dict's keys and other non-float items: None). Displays, indexing and slicing are
# forward.py's own; these are the builtins and methods that restructure a container. -----


@tangent(builtins.list, builtins.tuple)
def builtin_list(y, iterable, *, t_iterable):
    return rt.list_jvp(t_iterable, iterable, y)


@tangent(Method("values"))
def dict_values(y, self, *, t_self):
    return rt.dict_values_jvp(t_self, self)


@tangent(Method("items"))
def dict_items(y, self, *, t_self):
    return rt.dict_items_jvp(t_self, self)


@tangent(Method("get"), no_tangent=("key",))
def dict_get(y, self, key, default=None, *, t_self, t_default):
    return rt.dict_get_jvp(t_self, self, key, t_default, y)


@tangent(rt.seq_without, no_tangent=("key",))
def seq_without(y, c, key, *, t_c):
    return rt.seq_without_jvp(t_c, c, key)


@rt.helper
def seq_without_jvp(t, c, key):
    """The tangent of ``seq_without(c, key)``: ``t`` without the item (a zero stays one)."""
    if not isinstance(t, (list, dict)):
        return t
    return rt.seq_without(t, key)


@tangent(rt.namedtuple_new, no_tangent=("cls",))
def namedtuple_new(y, cls, items, *, t_items):
    return rt.namedtuple_new_jvp(t_items, y)


@rt.helper
def namedtuple_new_jvp(t_items, y):
    """The tangent of ``cls(*items)``: the namedtuple of the items' tangents."""
    if not isinstance(t_items, (list, tuple)):
        t_items = [t_items] * len(y)
    return type(y)(*t_items)


@tangent(rt.namedtuple_replace, no_tangent=("fields",))
def namedtuple_replace(y, value, fields, items, *, t_value, t_items):
    return rt.namedtuple_replace_jvp(t_value, t_items, y, fields)


@rt.helper
def namedtuple_replace_jvp(t_value, t_items, y, fields):
    """The tangent of ``value._replace(...)``: ``value``'s tangent with the new items'."""
    if not isinstance(t_value, tuple):
        t_value = [t_value] * len(y)
    if not isinstance(t_items, (list, tuple)):
        t_items = [t_items] * len(fields)
    out = list(t_value)
    for f, t in zip(fields, t_items):
        out[type(y)._fields.index(f)] = t
    return type(y)(*out)


@tangent(rt.dataclass_new, no_tangent=("cls", "fields"))
def dataclass_new(y, cls, fields, items, *, t_items):
    return rt.dataclass_new_jvp(t_items, y, fields)


@rt.helper
def dataclass_new_jvp(t_items, y, fields):
    """The tangent of ``cls(**fields)``: the dataclass of the items' tangents."""
    if not isinstance(t_items, (list, tuple)):
        t_items = [t_items] * len(fields)
    return type(y)(**{f: rt.tangent_zero(getattr(y, f)) if t is None else t
                      for f, t in zip(fields, t_items)})


@tangent(rt.dataclass_replace, no_tangent=("fields",))
def dataclass_replace(y, value, fields, items, *, t_value, t_items):
    return rt.dataclass_replace_jvp(t_value, t_items, y, fields)


@rt.helper
def dataclass_replace_jvp(t_value, t_items, y, fields):
    """The tangent of ``dataclasses.replace(value, ...)``: ``value``'s tangent with the
    new items' in the replaced fields."""
    import dataclasses
    if not isinstance(t_items, (list, tuple)):
        t_items = [t_items] * len(fields)
    new = dict(zip(fields, t_items))
    out = {f.name: new[f.name] if f.name in new else
           getattr(t_value, f.name) if dataclasses.is_dataclass(t_value) else t_value
           for f in dataclasses.fields(y) if f.init}
    return type(y)(**{f: rt.tangent_zero(getattr(y, f)) if t is None else t for f, t in out.items()})


@tangent(operator.or_)
def or_(y, a, b, *, t_a, t_b):
    return rt.or_jvp(y, t_a, t_b, a, b)


@rt.helper
def or_jvp(y, t_a, t_b, a, b):
    """The tangent of ``a | b``: ``dict_merge``'s on two dicts, else zero (bits and sets)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return dict_merge_jvp(t_a, t_b, a, b)
    return rt.tangent_zero(y)


@tangent(rt.dict_merge)
def dict_merge(y, a, b, *, t_a, t_b):
    return rt.dict_merge_jvp(t_a, t_b, a, b)


@rt.helper
def dict_merge_jvp(t_a, t_b, a, b):
    """The tangent of ``dict_merge(a, b)``: each key's tangent from the dict its value came
    from (a zero tangent of a whole dict, or none, is zero for each of its keys: a list's
    or dict's of its structure, ``d.setdefault(k, [])`` then ``d[k] += [x]``)."""
    out = {}
    for t, d in ((t_a, a), (t_b, b)):
        for k in d:
            if isinstance(t, dict):
                out[k] = t[k]
            elif isinstance(d[k], (list, tuple, dict)):
                out[k] = tangent_zero(d[k])
            else:
                out[k] = 0.0 if t is None else t
    return out


@rt.helper
def list_jvp(t, iterable, y):
    """The tangent of ``y = list(iterable)`` (or ``tuple``) from ``iterable``'s tangent
    ``t``: its items' tangents (an array's rows), a dict's keys' (key_tangent)."""
    if isinstance(iterable, dict):
        return [key_tangent(k) for k in y]
    if not isinstance(t, (list, tuple)) and not is_array(t):   # a scalar zero: each item's
        return [t] * len(y)
    return list(t)


@rt.helper
def key_tangent(key):
    """The tangent of a dict's key: none (None), but a zero for a number or a tuple of
    numbers, which the program may compute with (``v * k`` for ``k, v in d.items()``)."""
    if isinstance(key, (int, float)) or isinstance(key, tuple) and all(
            isinstance(k, (int, float)) for k in key):
        return tangent_zero(key)
    return None


@rt.helper
def dict_values_jvp(t, d):
    """The tangent of ``d.values()``: the list of the values' tangents (``t`` is a dict
    of the same keys: the tangents passed in are checked against their primals, and
    forward mode makes a dict's tangent of each display it reads)."""
    return [t[k] for k in d]


@rt.helper
def dict_items_jvp(t, d):
    """The tangent of ``d.items()``: ``(key_tangent(key), tangent of the value)`` per key."""
    return [(key_tangent(k), t[k]) for k in d]


@rt.helper
def dict_get_jvp(t, d, key, t_default, y):
    """The tangent of ``d.get(key, default)`` (the default's is None where it has none)."""
    if key in d:
        return t[key]
    return t_default if t_default is not None else tangent_zero(y)
