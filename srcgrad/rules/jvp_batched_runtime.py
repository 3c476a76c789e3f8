"""Run-time helpers of the batched tangent program (rules/jvp_batched.py has the rules
that call them, transform/batching.py the program): ``rt.batch_*``, each doing to a
tangent with a leading batch axis of B seeds what the tangent rule does to one seed's.
A value a helper cannot batch raises ``NotBatchable``: the caller (``sg.jacfwd``,
``sg.hessian``) then runs one tangent program per seed.
"""

import builtins

import numpy as np

from srcgrad import pytree as _pytree
from srcgrad import runtime as rt
from srcgrad.runtime.arrays import is_array, namespace
from srcgrad.runtime.containers import concat_tangent


class NotBatchable(Exception):
    """A batched tangent program met a value it cannot batch: run one per seed."""



def _size(t):
    if is_array(t):
        if t.ndim == 0:
            raise NotBatchable("a tangent without its batch axis")
        return t.shape[0]
    if isinstance(t, (list, tuple, dict)) or _pytree.is_node(t):   # a structure's tangent: a leaf's
        for item in (t.values() if isinstance(t, dict) else t if isinstance(t, (list, tuple))
                     else _pytree.tree_leaves(t)):
            try:
                return _size(item)
            except NotBatchable:
                continue
    raise NotBatchable(f"no batch axis in a tangent of type {type(t).__name__}")


class BatchSize(int):
    """B, with the array module of the tangents it was read off (``xp``): the zero
    tangent of a Python number is made there (on the device for CuPy seeds)."""
    xp = np


@rt.helper
def batch_size(*tangents):
    """B, the number of seeds, read off the first tangent that has one (None: zero)."""
    for t in tangents:
        if t is not None:
            try:
                size = BatchSize(_size(t))
            except NotBatchable:
                continue
            size.xp = namespace(*_pytree.tree_leaves(t)) if _pytree.is_node(t) else namespace(t)
            return size
    raise NotBatchable("no tangent has a batch axis")


@rt.helper
def batch_zero(value, size):
    """The zero batched tangent of ``value``: float zeros of shape ``(B,) + shape``."""
    if is_array(value):
        xp_ = namespace(value)
        dtype = value.dtype if value.dtype.kind in "fc" else xp_.float64
        return xp_.zeros((size,) + value.shape, dtype)
    if isinstance(value, (list, tuple)):
        return [batch_zero(v, size) for v in value]
    if isinstance(value, dict):
        from srcgrad.rules.jvp import zero_default
        zeros = {k: batch_zero(v, size) for k, v in value.items()}
        return zero_default(value, zeros, lambda v: batch_zero(v, size))
    xp_ = getattr(size, "xp", np)
    if isinstance(value, range):
        return [xp_.zeros(size) for _ in value]
    from srcgrad import pytree
    if pytree.is_node(value) and value is not None:   # a dataclass, registered: its fields' zeros
        return pytree.tree_map(lambda leaf: batch_zero(leaf, size), value)
    return xp_.zeros(size)


@rt.helper
def batch_has_grad(g, t, at_zero=False):
    """``rt.has_grad_jvp`` with a batched tangent: a block skipped while the adjoint ``g``
    is a scalar zero runs while any seed's tangent is nonzero. (A scalar's zero tangent
    spread over an array is zeros here, where the tangent program keeps a scalar 0.0;
    the block only adds ``g`` and its tangent into others, so skipping it is exact.)"""
    if rt.has_grad(g) or at_zero and not rt.is_zero_grad(g):   # (rt.has_grad_jvp)
        return True
    if t is None:
        return False
    if is_array(t):
        return bool((t != 0).any())
    return rt.has_grad(t)


@rt.helper
def batch_array(t):
    """A batched tangent as one array: a list of batched items stacked after the batch
    axis, as NumPy reads a list of arrays as one array."""
    if isinstance(t, (list, tuple)):
        items = [batch_array(v) for v in t]
        if not items or not builtins.all(is_array(v) and v.ndim for v in items):
            raise NotBatchable("a list tangent with an item that has no batch axis")
        return namespace(*items).stack(items, axis=1)
    if not is_array(t) or t.ndim == 0:
        raise NotBatchable("a tangent without its batch axis")
    return t


def _ndim(value):
    return len(np.shape(value)) if not is_array(value) else value.ndim


@rt.helper
def batch_align(t, y):
    """``t`` (``(B,) + s``) reshaped to ``(B,) + (1,) * k + s`` of the rank of ``y`` plus
    one, so that NumPy broadcasts it against ``y``-ranked primals elementwise."""
    if type(t) is not np.ndarray:
        if isinstance(t, float) and t == 0.0 or isinstance(y, (list, tuple)):
            return t   # a list's tangent is a list of batched tangents
        t = batch_array(t)
    k = (y.ndim if type(y) is np.ndarray else 0 if type(y) is float else _ndim(y)) - t.ndim + 1
    if k == 0:
        return t
    if k < 0 or t.ndim == 0:
        raise NotBatchable("a tangent of higher rank than the value it combines into")
    return t.reshape((t.shape[0],) + (1,) * k + t.shape[1:])


@rt.helper
def batch_fit(t, y, right=False):
    """``t`` spread to the full batched shape ``(B,) + shape(y)`` (its own memory); for
    a list ``y`` (``+`` concatenated), ``rt.tangent_like``'s zeros for the constant items."""
    if isinstance(y, (list, tuple)):
        return concat_tangent(t, y, right, lambda v: batch_zero(v, batch_size(t)))
    t = batch_align(t, y)
    if not is_array(t):   # a zero (a dict key's, rules/jvp.py key_tangent): B is unknown here
        raise NotBatchable("a zero tangent without its batch axis")
    shape = y.shape if type(y) is np.ndarray else () if type(y) is float else tuple(np.shape(y))
    if t.shape[1:] == shape:
        return t
    return namespace(t).broadcast_to(t, (t.shape[0],) + shape).copy()


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) % ndim + 1 for a in axis) if ndim else ()
    return (int(axis) % ndim + 1,) if ndim else ()


@rt.helper
def batch_sum(t, axis=None, keepdims=False):
    t = batch_array(t)
    return t.sum(axis=_axes(axis, t.ndim - 1), keepdims=keepdims)


@rt.helper
def batch_mean(t, axis=None, keepdims=False):
    t = batch_array(t)
    return t.mean(axis=_axes(axis, t.ndim - 1), keepdims=keepdims)


@rt.helper
def batch_cumsum(t, axis=None):
    t = batch_array(t)
    if axis is None:
        return t.reshape(t.shape[0], -1).cumsum(axis=1)
    return t.cumsum(axis=_axes(axis, t.ndim - 1)[0])


@rt.helper
def batch_reshape(t, y, order="C"):
    """Each seed's tangent reshaped to ``y``'s shape in ``order`` ("C" or "F"; in "F"
    with the batch axis last, where it varies slowest)."""
    t = batch_array(t)
    if order == "F":
        xp_ = namespace(t)
        moved = xp_.moveaxis(t, 0, -1).reshape(tuple(np.shape(y)) + (t.shape[0],), order="F")
        return xp_.moveaxis(moved, -1, 0)
    return t.reshape((t.shape[0],) + tuple(np.shape(y)))


@rt.helper
def batch_transpose(t, axes=None):
    t = batch_array(t)
    n = t.ndim - 1
    order = range(n - 1, -1, -1) if axes is None else [int(a) % n for a in axes]
    return namespace(t).transpose(t, (0,) + tuple(a + 1 for a in order))


@rt.helper
def batch_swapaxes(t, axis1, axis2):
    t = batch_array(t)
    n = t.ndim - 1
    return namespace(t).swapaxes(t, int(axis1) % n + 1, int(axis2) % n + 1)


@rt.helper
def batch_flip(t, axis=None):
    t = batch_array(t)
    return namespace(t).flip(t, _axes(axis, t.ndim - 1))


@rt.helper
def batch_roll(t, shift, axis=None):
    t = batch_array(t)
    xp_ = namespace(t)
    if axis is None:   # NumPy rolls the flattened array, then restores the shape
        return xp_.roll(t.reshape(t.shape[0], -1), shift, 1).reshape(t.shape)
    return xp_.roll(t, shift, _axes(axis, t.ndim - 1))


@rt.helper
def batch_cast(t, y, copy=True):
    """The batched tangent of ``y = np.array(obj)``, a cast or a copy: ``(B,) + shape(y)``
    in ``y``'s float dtype, of its own memory where ``copy``."""
    t = batch_array(t)
    dtype = getattr(y, "dtype", None)
    if dtype is not None and dtype.kind in "biu":   # an int dtype known when it runs: no tangent
        return namespace(t).zeros((t.shape[0],) + tuple(np.shape(y)))
    dtype = dtype if dtype is not None and dtype.kind in "fc" else np.float64
    out = namespace(t).asarray(t, dtype=dtype).reshape((t.shape[0],) + tuple(np.shape(y)))
    return out.copy() if copy and (out is t or getattr(out, "base", None) is not None) else out


@rt.helper
def batch_slice(t, b):
    """Seed ``b``'s tangent out of a batched one (None stays None)."""
    if t is None or isinstance(t, float):
        return t
    if isinstance(t, (list, tuple)):
        return [batch_slice(v, b) for v in t]
    if isinstance(t, dict):   # a structure's adjoint (pytree.py's mirror) read again: hessian
        return {k: batch_slice(v, b) for k, v in t.items()}
    if is_array(t) and t.ndim == 1:
        return float(t[b])   # a scalar's tangent, as the tangent program has it
    if is_array(t) and t.ndim:
        return t[b]
    raise NotBatchable(f"a tangent of type {type(t).__name__} without its batch axis")


@rt.helper
def batch_stack(items, y):
    """The per-seed tangents ``items`` of ``y`` stacked on a leading batch axis (None,
    a dict key's, stays None)."""
    if builtins.all(i is None for i in items):
        return None
    # A structure's adjoint (a dataclass's Fields, a list) where a seed reaches none of it
    # is that seed's zero (rt.attr_add of a zero returns the adjoint unchanged): its
    # entries are zeros, not a value to write into an array.
    nodes = [i for i in items if isinstance(i, (list, tuple, dict))]
    if nodes and builtins.all(isinstance(i, (list, tuple, dict)) or rt.is_zero_grad(i)
                              for i in items):
        like = y if isinstance(y, type(nodes[0])) or isinstance(nodes[0], type(y)) else nodes[0]
        if isinstance(like, dict):
            keys = list(dict.fromkeys(k for i in [like] + nodes for k in i))
            return type(nodes[0])({k: batch_stack([i.get(k, 0.0) if isinstance(i, dict) else 0.0
                                                   for i in items], like.get(k, 0.0))
                                   for k in keys})
        return [batch_stack([i[k] if isinstance(i, (list, tuple)) else 0.0 for i in items], v)
                for k, v in enumerate(like)]
    if builtins.any(_pytree.is_dataclass_instance(i) for i in items):
        # a dataclass built in f (rt.dataclass_new's tangent): its fields stacked
        kind = type(y)
        if not builtins.all(type(i) is kind for i in items):
            raise NotBatchable(f"per-seed tangents of a {kind.__name__} of different kinds")
        import dataclasses
        return kind(**{f.name: batch_stack([getattr(i, f.name) for i in items], getattr(y, f.name))
                       for f in dataclasses.fields(y) if f.init})
    arrays = [i for i in items if is_array(i)]
    # a scalar zero ``y`` (an adjoint nothing reached, or rt.add_at of a computed 0) may have
    # a tangent of an array's shape: the stack takes the items' shape
    shape = np.broadcast_shapes(tuple(np.shape(y)), *(i.shape for i in arrays))
    xp_ = namespace(*arrays) if arrays else np
    dtype = getattr(y, "dtype", None)
    dtype = dtype if dtype is not None and dtype.kind in "fc" else np.float64
    out = xp_.empty((len(items),) + shape, dtype)
    for b, item in enumerate(items):
        out[b] = item
    return out


@rt.helper
def batch_call(function, args, k, y):
    """``function(*args)`` where ``args[k]`` is batched: one call per seed, stacked."""
    t = args[k]
    if t is None:
        return 0.0
    rest = list(args)
    items = []
    for b in range(_size(t)):
        rest[k] = batch_slice(t, b)
        items.append(function(*rest))
    return batch_stack(items, y)


class _Batched:
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t

    @staticmethod
    def _index(index):
        return (slice(None),) + (index if isinstance(index, tuple) else (index,))

    def __getitem__(self, index):
        t = self.t
        if isinstance(t, (list, tuple, dict)):
            return t[index]
        out = batch_array(t)[self._index(index)]
        if out.ndim == 1 and out.base is not None:
            out = out.copy()   # each seed's item is a scalar: a copy, as NumPy's x[i] is
        return out

    def __setitem__(self, index, value):
        t = self.t
        if isinstance(t, (list, dict)):
            t[index] = value
            return
        if not is_array(t) or not t.ndim:
            raise NotBatchable("an indexed write into a tangent without its batch axis")
        index = self._index(index)
        if is_array(value) and value.ndim:
            value = batch_align(value, t[index][0])   # a row-shaped value spreads as its primal
        t[index] = value


@rt.helper
def batch_restore_item_tangent(t_base, index, value, t_value):
    """``rt.restore_item_tangent`` of a batched tangent: an array's item of every seed
    (``t_base[:, index]``) set back; a list's or dict's as it is."""
    if isinstance(t_base, (list, dict)) or not is_array(t_base):
        return rt.restore_item_tangent(t_base, index, value, t_value)
    _Batched(t_base)[index] = 0.0 if t_value is None else t_value


@rt.helper
def batched(t):
    """``rt.batched(dx)[i]``: the batched tangent's item ``i`` of every seed (``dx[:, i]``,
    a list's item as it is); ``rt.batched(dx)[i] = dv`` writes it, ``dv`` aligned."""
    return _Batched(t)


@rt.helper
def batch_add_grad(a, b, y):
    """``rt.add_grad`` of two batched tangents of ``y`` (None: zero): a list entry by
    entry, a dict key by key, arrays aligned to ``y``'s rank (a scalar's ``(B,)`` spreads as the scalar)."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(y, (list, tuple)):
        if not isinstance(a, (list, tuple)) or not isinstance(b, (list, tuple)):
            raise NotBatchable("a list adjoint's tangent added to an array's")
        return [batch_add_grad(p, q, v) for p, q, v in zip(a, b, y)]
    if isinstance(y, dict):   # a dict's adjoint (its mirror): key by key, a zero being none
        a, b = ({} if is_array(t) and not t.any() else t for t in (a, b))
        if not isinstance(a, dict) or not isinstance(b, dict):
            raise NotBatchable("a dict adjoint's tangent added to an array's")
        return {k: batch_add_grad(a.get(k), b.get(k), v) for k, v in y.items() if k in a or k in b}
    return batch_fit(batch_align(a, y) + batch_align(b, y), y)


@rt.helper
def batch_add_at(t_dx, x, index, t_g, y):
    """The batched tangent of ``y = rt.add_at(dx, x, index, g)``: into the adjoint of a
    dict or list (its mirror, pytree.py: a structured argument's gradient, read again
    by ``sg.hessian``) the entry's batched tangent is added at its key or position;
    anything else seed by seed, as the tangent rule does it."""
    zero = t_dx is None or rt.is_zero_grad(t_dx) or is_array(t_dx) and not t_dx.any()
    if t_g is None and (zero or isinstance(t_dx, (list, tuple, dict))):
        if zero and is_array(t_dx) and t_dx.ndim and is_array(y) and t_dx.shape[1:] != y.shape:
            # a scalar zero adjoint's tangent, into an array's: zeros of its shape per seed
            return namespace(t_dx).zeros((t_dx.shape[0],) + y.shape, dtype=t_dx.dtype)
        return t_dx   # nothing added carries a tangent: the adjoint's own, as it is
    if isinstance(x, dict) and isinstance(y, dict) and t_g is not None and (
            zero or isinstance(t_dx, dict)):
        out = dict(t_dx) if isinstance(t_dx, dict) else {}
        out[index] = batch_add_grad(out.get(index), t_g, y[index])
        return out
    if isinstance(x, (list, tuple)) and isinstance(y, list) and t_g is not None \
            and isinstance(index, int) and (zero or isinstance(t_dx, (list, tuple))
                                            and len(t_dx) == len(y)):
        size = batch_size(t_g)
        out = list(t_dx) if not zero else [batch_zero(v, size) for v in y]
        out[index] = batch_add_grad(out[index], t_g, y[index])
        return out
    return batch_stack([rt.add_at_tangent(batch_slice(t_dx, b), x, index, batch_slice(t_g, b))
                        for b in range(batch_size(t_dx, t_g))], y)


# ----- Products -----


def _mm(t, other, primal, right):
    """``t @ other`` (``right``: ``other @ t``) for ``t`` batched ``(B,) + shape(primal)``."""
    xp_ = namespace(t, other)
    p, o = _ndim(primal), _ndim(other)
    if p == 0 or o == 0:   # np.dot with a scalar: a product, t aligned to the other's rank
        return batch_align(t, other) * other if p == 0 else t * other
    if not right:   # t: the left operand
        if p == 1:
            if o <= 2:
                return xp_.matmul(t, other)
            return None
        if o > p:
            t = t.reshape((t.shape[0],) + (1,) * (o - p) + t.shape[1:])
        return xp_.matmul(t, other)
    if p == 1:      # other @ t, t a vector per seed
        if o <= 2:
            return xp_.matmul(t, other if o == 1 else other.T)
        return xp_.moveaxis(xp_.matmul(other, t.T), -1, 0)
    if o > p:
        t = t.reshape((t.shape[0],) + (1,) * (o - p) + t.shape[1:])
    return xp_.matmul(other, t)


@rt.helper
def batch_matmul(t, other, primal, right):
    """The batched ``t @ other`` (``right``: ``other @ t``): NumPy's matmul with the batch
    axis kept in front (a vector operand would otherwise be read as a matrix)."""
    if t is None:
        return 0.0
    t = batch_array(t)
    out = _mm(t, other, primal, right)
    if out is None:
        f = (lambda tb: np.matmul(other, tb)) if right else (lambda tb: np.matmul(tb, other))
        return batch_stack([f(t[b]) for b in range(t.shape[0])],
                           np.matmul(other, primal) if right else np.matmul(primal, other))
    return out


@rt.helper
def batch_dot(t, other, primal, right):
    """The batched ``np.dot``: matmul's for operands of rank 2 or less, else per seed."""
    if t is None:
        return 0.0
    t = batch_array(t)
    if _ndim(primal) <= 2 and _ndim(other) <= 2:
        return _mm(t, other, primal, right)
    f = (lambda tb: np.dot(other, tb)) if right else (lambda tb: np.dot(tb, other))
    return batch_stack([f(t[b]) for b in range(t.shape[0])],
                       np.dot(other, primal) if right else np.dot(primal, other))


@rt.helper
def batch_matmul_grad(t, p, q, which, y):
    """The batched tangents of ``rt.matmul_grad_a(dy, a, b)`` (``which`` 0: ``dy``
    batched, 1: ``b``; ``p, q`` are ``a, b`` and ``a, dy``) and ``rt.matmul_grad_b``
    (2: ``dy`` batched with ``p, q = a, b``; 3: ``a``, with ``p, q = dy, b``). Fast
    paths for operands of rank 1 and 2, else one call per seed. None or a scalar zero
    (an adjoint nothing with a tangent was added into) is a zero tangent."""
    if t is None or rt.is_zero_grad(t):
        return 0.0
    t = batch_array(t)
    a, b = p, q
    if which == 0:       # grad_a(t, a, b) = t @ b^T (outer product for a vector b)
        if _ndim(a) == 2 and _ndim(b) == 2:
            return t @ b.T
        if _ndim(a) == 2 and _ndim(b) == 1:
            return t[..., None] * b
        if _ndim(a) == 1 and _ndim(b) == 2:
            return t @ b.T
        args, k, function = (t, a, b), 0, rt.matmul_grad_a
    elif which == 2:     # grad_b(t, a, b) = a^T @ t
        if _ndim(a) == 2 and _ndim(b) == 1:
            return t @ a
        if _ndim(a) == 2 and _ndim(b) == 2:
            return a.T @ t
        if _ndim(a) == 1 and _ndim(b) == 2:
            return t[:, None, :] * a[:, None]
        args, k, function = (t, a, b), 0, rt.matmul_grad_b
    elif which == 1:     # grad_a(dy, a, t)
        args, k, function = (q, p, t), 2, rt.matmul_grad_a
    else:                # grad_b(dy, t, b)
        args, k, function = (p, t, q), 1, rt.matmul_grad_b
    return batch_call(function, args, k, y)


# ----- The gradient's broadcasting helpers -----


@rt.helper
def batch_unbroadcast(t, x):
    """``rt.unbroadcast`` of each seed: ``t`` (``(B,) + g.shape``) summed down to
    ``(B,) + shape(x)``."""
    if type(x) is list or (type(x) is tuple and x and type(x[0]) is not int):
        raise NotBatchable("rt.unbroadcast into a list")
    t = batch_array(t)
    shape = x if type(x) is tuple else tuple(getattr(x, "shape", ()))
    gshape = t.shape[1:]
    if gshape == shape:
        return t
    extra = len(gshape) - len(shape)
    if extra < 0:
        return batch_fit(t, np.empty(shape))
    if extra:
        t = t.sum(axis=tuple(range(1, extra + 1)))
    axes = tuple(i + 1 for i, n in enumerate(shape) if n == 1 and t.shape[i + 1] != 1)
    if axes:
        t = t.sum(axis=axes, keepdims=True)
    return t


@rt.helper
def batch_unreduce(t, x, axis=None, keepdims=False):
    """``rt.unreduce`` of each seed: the reduction's tangent spread back over ``x``."""
    if type(x) is list or (type(x) is tuple and x and type(x[0]) is not int):
        raise NotBatchable("rt.unreduce into a list")
    shape = x if type(x) is tuple else tuple(getattr(x, "shape", ()))
    t = batch_array(t)
    if not keepdims and axis is not None and shape:
        t = namespace(t).expand_dims(t, _axes(axis, len(shape)))
    else:
        t = t.reshape((t.shape[0],) + (1,) * (len(shape) - (t.ndim - 1)) + t.shape[1:])
    return namespace(t).broadcast_to(t, (t.shape[0],) + shape)


# ----- Containers (rules/jvp.py): a list's batched tangent is a list of batched tangents -----


@rt.helper
def batch_list_jvp(t, iterable, y):
    """``rt.list_jvp`` with a batched tangent: an array's rows are ``t[:, k]``."""
    if isinstance(iterable, dict) or not is_array(t) or not is_array(iterable):
        return rt.list_jvp(t, iterable, y)
    return [t[:, k] for k in range(len(iterable))]
