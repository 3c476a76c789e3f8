"""Adjoint rules of NumPy's joins and splits, ``pad``, ``tile``, ``repeat`` and ``select``.

Sequence parameters (``np.concatenate(arrays)``, ``np.stack(arrays)``,
``np.hstack(tup)`` ...) get a LIST of gradients, one per element. ``np.split``
and ``np.array_split`` return a list: their ``dy`` is a list of per-piece
cotangents (None or a scalar 0 for pieces that got none), ``y`` the list of
pieces. ``np.meshgrid(*xi)`` gets one gradient per input, in a list.
"""

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Method, adjoint, returns_sequence
from srcgrad.runtime.arrays import (grad_zeros, is_array, namespace, scatter_add, shape_of, shape_tuple,
                                    split_pieces)
from srcgrad.runtime.broadcast import unbroadcast

xp = None  # placeholder: the array namespace, bound in generated code

returns_sequence(np.split, np.array_split, np.vsplit, np.hsplit, np.dsplit, np.meshgrid)

PAD_GATHER_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "empty")  # np.pad modes with a rule


# ----- Joining and splitting -----


@adjoint(np.concatenate, sequences=("arrays",))
def concatenate(dy, y, arrays, axis=0):
    return rt.concatenate_vjp(dy, arrays, axis)


@rt.helper
def concatenate_vjp(dy, arrays, axis=0):
    """Gradient of ``concatenate(arrays, axis)``: a list, one gradient per array."""
    xp = namespace(dy)
    dy = xp.asarray(dy)
    shapes = [shape_tuple(v) for v in arrays]
    if dy.ndim == 0:   # a scalar adjoint stands for itself everywhere (a lazy zero on Dask)
        return [xp.broadcast_to(dy, s) for s in shapes]
    if axis is None:
        sizes = [int(np.prod(s)) for s in shapes]
        return [p.reshape(s) for p, s in zip(split_pieces(xp, dy.reshape(-1), sizes, 0), shapes)]
    ax = axis % dy.ndim
    return split_pieces(xp, dy, [s[ax] for s in shapes], ax)


@adjoint(np.select, sequences=("choicelist",))
def select(dy, y, condlist, choicelist, default=0):
    """Each choice gets ``dy`` where its condition is the first that holds; the
    default where none does."""
    return (None, rt.select_vjp(dy, condlist, choicelist),
            rt.unbroadcast(dy * rt.select_default_mask(condlist), default))


@rt.helper
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


@rt.helper
def select_default_mask(condlist):
    """Where ``np.select`` takes its default: no condition holds."""
    xp = namespace(*condlist)
    hit = condlist[0]
    for cond in condlist[1:]:
        hit = xp.logical_or(hit, cond)
    return xp.logical_not(hit)


@adjoint(np.stack, sequences=("arrays",))
def stack(dy, y, arrays, axis=0):
    return rt.stack_vjp(dy, arrays, axis)


@rt.helper
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


@adjoint(np.hstack, sequences=("tup",))
def hstack(dy, y, tup):
    return rt.hstack_vjp(dy, tup)


def _stack_vjp_generic(dy, tup, promote, axis_of):
    xp = namespace(dy)
    dy = xp.asarray(dy)
    promoted = [promote(shape_tuple(v)) for v in tup]
    ax = axis_of(promoted)
    pieces = split_pieces(xp, dy, [s[ax] for s in promoted], ax)
    return [p.reshape(shape_tuple(v)) for p, v in zip(pieces, tup)]


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


@rt.helper
def hstack_vjp(dy, tup):
    """Gradient of ``hstack(tup)``: a list."""
    return _stack_vjp_generic(dy, tup, lambda s: _atleast(s, 1),
                              lambda shapes: 0 if len(shapes[0]) == 1 else 1)


@adjoint(np.vstack, sequences=("tup",))
def vstack(dy, y, tup):
    return rt.vstack_vjp(dy, tup)


@rt.helper
def vstack_vjp(dy, tup):
    """Gradient of ``vstack(tup)``: a list."""
    return _stack_vjp_generic(dy, tup, lambda s: _atleast(s, 2), lambda shapes: 0)


@adjoint(np.dstack, sequences=("tup",))
def dstack(dy, y, tup):
    return rt.dstack_vjp(dy, tup)


@rt.helper
def dstack_vjp(dy, tup):
    """Gradient of ``dstack(tup)``: a list."""
    return _stack_vjp_generic(dy, tup, lambda s: _atleast(s, 3), lambda shapes: 2)


@adjoint(np.column_stack, sequences=("tup",))
def column_stack(dy, y, tup):
    return rt.column_stack_vjp(dy, tup)


@rt.helper
def column_stack_vjp(dy, tup):
    """Gradient of ``column_stack(tup)``: a list."""
    def promote(s):
        if len(s) < 2:
            return (int(np.prod(s)), 1)
        return s
    return _stack_vjp_generic(dy, tup, promote, lambda shapes: 1)


@adjoint(np.append)
def append(dy, y, arr, values, axis=None):
    g = rt.append_vjp(dy, arr, values, axis)
    return g[0], g[1], None


@rt.helper
def append_vjp(dy, arr, values, axis=None):
    """Gradients of ``append(arr, values, axis)``: the pair ``(darr, dvalues)``."""
    xp = namespace(dy)
    dy = xp.asarray(dy)
    if axis is None:
        n = int(np.prod(shape_tuple(arr)))
        flat = dy.reshape(-1)
        return flat[:n].reshape(shape_tuple(arr)), flat[n:].reshape(shape_tuple(values))
    ax = axis % dy.ndim
    n = shape_tuple(arr)[ax]
    first, second = split_pieces(xp, dy, [n, dy.shape[ax] - n], ax)
    return first, unbroadcast(second, values)


@adjoint(np.meshgrid)
def meshgrid(dy, y, *xi, copy=True, sparse=False, indexing="xy"):
    """``dy`` is a sequence (one cotangent per grid); ``xi`` gets a list of gradients."""
    return rt.meshgrid_vjp(dy, xi, indexing)


@rt.helper
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
        axis = _grid_axis(k, n, indexing)
        g = xp.sum(g, axis=tuple(i for i in range(g.ndim) if i != axis))
        grads.append(xp.reshape(g, shape_of(x)))
    return grads


def _grid_axis(k, n, indexing):
    """The axis of ``meshgrid``'s grids along which input ``k`` varies."""
    return (1 - k if k < 2 else k) if indexing == "xy" and n >= 2 else k


@rt.helper
def meshgrid_fill(dws, xi, indexing="xy"):
    """The adjoint of ``meshgrid_vjp``: each input's cotangent broadcast along its grid
    axis into a grid (zeros for a missing one), one grid per input."""
    n = len(xi)
    shape = [int(np.prod(shape_tuple(x), dtype=np.int64)) for x in xi]   # (not np.size: Dask)
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    xp = namespace(*[d for d in dws if d is not None], *xi) if isinstance(dws, (list, tuple)) \
        else namespace(*xi)
    dtype = np.result_type(*(getattr(x, "dtype", np.float64) for x in xi), np.float16)
    grids = []
    for k, x in enumerate(xi):
        d = dws[k] if isinstance(dws, (list, tuple)) else dws
        grid = xp.zeros(shape, dtype=dtype)
        if d is not None and not (not is_array(d) and isinstance(d, (int, float)) and d == 0):
            d = xp.asarray(d)
            if d.ndim:   # (a number: the same cotangent for every entry)
                line = [1] * n
                line[_grid_axis(k, n, indexing)] = shape[_grid_axis(k, n, indexing)]
                d = xp.reshape(d, line)
            grid = grid + d
        grids.append(grid)
    return grids


@adjoint(np.split, np.array_split)
def split(dy, y, ary, indices_or_sections, axis=0):
    """``dy`` and ``y`` are lists (one entry per piece)."""
    return rt.split_vjp(dy, y, axis), None, None


def _fill_missing(xp, dys, ys):
    out = []
    for d, v in zip(dys, ys):
        shape = shape_tuple(v)
        if d is None or (not is_array(d) and isinstance(d, (int, float)) and d == 0):
            d = xp.zeros(shape, dtype=getattr(v, "dtype", np.float64)) + (0 if d is None else d)
        elif shape_tuple(d) != shape:
            d = xp.broadcast_to(xp.asarray(d), shape)
        out.append(d)
    return out


@rt.helper
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


@adjoint(np.pad, literals={"mode": PAD_GATHER_MODES})
def pad(dy, y, array, pad_width, mode="constant", *, constant_values=0):
    """Modes that copy entries (constant, edge, reflect, symmetric, wrap, empty);
    a scalar ``constant_values`` gets the sum of the padding's gradient."""
    return (rt.pad_vjp(dy, array, pad_width, mode), None, None,
            rt.pad_constant_vjp(dy, array, pad_width, constant_values))


def _pad_statistic(mode):
    """srcgrad/inlined.py's version of ``np.pad`` in ``mode`` (a mode known only when the
    call runs: "maximum", "mean" ...), or None for the modes that copy entries."""
    if mode in PAD_GATHER_MODES:
        return None
    from srcgrad import inlined
    if not isinstance(mode, str) or mode not in inlined.PAD_MODES:
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            f"srcgrad: the gradient of np.pad with mode={mode!r} is not supported "
            f"(supported: {', '.join(PAD_GATHER_MODES)}, {', '.join(inlined.PAD_MODES)})",
            hint="Write a custom sg.Function.")
    return inlined.PAD_MODES[mode]


def _numpy_pad(array, mode):
    """Refuse another library's array for a statistic mode known only when the call runs
    (the inlined version is differentiated on NumPy arrays at run time)."""
    from srcgrad.runtime.dask_forms import numpy_only
    numpy_only(f"the derivative of np.pad with mode={mode!r} held in a variable", [array],
               "Write the mode in the call, or compute the array first (x.compute()).")


def _pad_source_index(array, pad_width, mode):
    shape = shape_tuple(array)
    size = int(np.prod(shape))
    index = np.arange(size).reshape(shape)
    if mode in ("constant", "empty"):
        return np.pad(index, pad_width, mode="constant", constant_values=-1)
    return np.pad(index, pad_width, mode=mode)


@rt.helper
def pad_vjp(dy, array, pad_width, mode="constant"):
    """Gradient of ``pad(array, pad_width, mode)``: for the modes that copy entries, each
    entry gets the padding's gradient where it was copied; for a statistic mode held in a
    variable (``np.pad(x, 2, mode=m)``, ``m = "mean"`` when it runs), the reverse mode of
    srcgrad/inlined.py's version (a mode written in the call is that version already)."""
    version = _pad_statistic(mode)
    if version is not None:
        _numpy_pad(array, mode)
        from srcgrad.api import vjp
        from srcgrad.grad_mode import enable_grad
        with enable_grad():
            return vjp(version, wrt=0)(np.asarray(array), pad_width, mode)[1](np.asarray(dy))
    xp = namespace(array, dy)
    dy = xp.asarray(dy)
    source = _pad_source_index(array, pad_width, mode).reshape(-1)
    keep = source >= 0
    dx = grad_zeros(xp, array, dy)
    scatter_add(xp, dx.reshape(-1), xp.asarray(source[keep]), dy.reshape(-1)[xp.asarray(keep)])
    return dx


@rt.helper
def pad_constant_vjp(dy, array, pad_width, constant_values=0):
    """Gradient of ``pad(..., mode='constant', constant_values=c)`` with respect to a scalar ``c``."""
    if np.ndim(constant_values) != 0:
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            "srcgrad: the gradient with respect to per-axis constant_values of np.pad is not "
            "supported", hint="Pass a scalar.")
    xp = namespace(array, dy)
    source = xp.asarray(_pad_source_index(array, pad_width, "constant"))
    return xp.sum(xp.where(source < 0, dy, 0))


@adjoint(np.tile)
def tile(dy, y, A, reps):
    return rt.tile_vjp(dy, A, reps)


@rt.helper
def tile_vjp(dy, A, reps):
    """Gradient of ``tile(A, reps)``: the tiles summed."""
    xp = namespace(A, dy)
    dy = xp.asarray(dy)
    shape = shape_tuple(A)
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    n = max(len(shape), len(reps))
    s = (1,) * (n - len(shape)) + shape
    r = (1,) * (n - len(reps)) + reps
    inter = []
    for ri, si in zip(r, s):
        inter += [ri, si]
    g = dy.reshape(inter).sum(axis=tuple(range(0, 2 * n, 2)))
    return g.reshape(shape)


@adjoint(np.repeat)
def repeat(dy, y, a, repeats, axis=None):
    return rt.repeat_vjp(dy, a, repeats, axis)


def _host(value):
    """A host (NumPy) copy of a small index-like value."""
    if hasattr(value, "get"):
        return value.get()
    return np.asarray(value)


@rt.helper
def repeat_vjp(dy, a, repeats, axis=None):
    """Gradient of ``repeat(a, repeats, axis)``: the copies summed."""
    xp = namespace(a, dy)
    dy = xp.asarray(dy)
    dx = grad_zeros(xp, a, dy)
    if axis is None:
        n = dx.size
        index = xp.asarray(np.repeat(np.arange(n), _host(repeats)))
        scatter_add(xp, dx.reshape(-1), index, dy.reshape(-1))
        return dx
    ax = axis % dx.ndim
    index = xp.asarray(np.repeat(np.arange(dx.shape[ax]), _host(repeats)))
    scatter_add(xp, xp.moveaxis(dx, ax, 0), index, xp.moveaxis(dy, ax, 0))
    return dx


@adjoint(Method("repeat"))
def repeat_method(dy, y, self, repeats, axis=None):
    return rt.repeat_vjp(dy, self, repeats, axis)


# ----- Helpers only the adjoints of runtime_rules.py or the compiler call (rt.<name>) -----


@rt.helper
def index_concat(concatenator, items):
    """``np.r_[items]`` or ``np.c_[items]`` (``concatenator``), as a call. On Dask items
    NumPy's index tricks would compute them: refused (``np.concatenate`` stays lazy)."""
    for item in items:
        rt.refuse_dask(item, "np.r_ / np.c_ (rt.index_concat: NumPy's index tricks compute a "
                             "Dask array; use np.concatenate)")
    xp = namespace(*items)
    if xp is not np and (concatenator is np.r_ or concatenator is np.c_):
        concatenator = xp.r_ if concatenator is np.r_ else xp.c_   # NumPy's would not take them
    return concatenator[tuple(items)]


@rt.helper
def slice_values(item):
    """The values ``np.r_[a:b:step]`` makes of a slice item of ``np.r_``/``np.c_``
    (``arange``, or ``linspace`` for a complex step): constants, no gradient."""
    return np.r_[item]


@rt.helper
def index_concat_directives(concatenator, items):
    """``np.r_[...]`` with slices or string directives: differentiable in nothing
    (it has no rule, so an item that needs a gradient is refused at compile time)."""
    return concatenator[tuple(items)]


@rt.helper
def index_concat_vjp(dy, concatenator, items):
    """Gradients of ``np.r_[items]`` (items at least 1-D, joined along axis 0) or
    ``np.c_[items]`` (1-D items as columns, joined along the last axis): a list."""
    xp = namespace(dy)
    dy = xp.asarray(dy)
    shapes = [shape_tuple(item) for item in items]
    if concatenator is np.c_:
        sizes = [s[-1] if len(s) >= 2 else 1 for s in shapes]
        axis = dy.ndim - 1
    else:
        sizes = [s[0] if s else 1 for s in shapes]
        axis = 0
    return [xp.reshape(p, s) for p, s in zip(split_pieces(xp, dy, sizes, axis), shapes)]


@rt.helper
def stack_fill(dzs, arrays, axis=0):
    """``stack`` of per-array gradients, zeros for missing ones (adjoint of stack_vjp)."""
    if not isinstance(arrays, (list, tuple)):
        return dzs
    xp = namespace(*[d for d in dzs if d is not None], *arrays)
    return xp.stack(_fill_missing(xp, dzs, arrays), axis=axis)


@rt.helper
def pad_jvp(t, array, pad_width, mode="constant"):
    """The tangent of ``pad(array, pad_width, mode)`` along ``t`` (the transpose of
    ``pad_vjp``): ``t`` padded the same way for the modes that copy entries (zeros for
    'empty' and 'constant'), the forward mode of the inlined version for a statistic mode
    held in a variable (``np.pad(t, mode="maximum")`` would take ``t``'s own maximum)."""
    version = _pad_statistic(mode)
    if version is None:
        return namespace(t, array).pad(t, pad_width, mode=pad_adjoint_mode(mode))
    _numpy_pad(array, mode)
    from srcgrad.forward_api import jvp
    from srcgrad.grad_mode import enable_grad
    with enable_grad():
        return jvp(version, (np.asarray(array), pad_width, mode), (np.asarray(t), None, None))[1]


@rt.helper
def pad_adjoint_mode(mode):
    """The ``np.pad`` mode whose result is the adjoint of ``pad_vjp`` (zeros for 'empty')."""
    return "constant" if mode == "empty" else mode
