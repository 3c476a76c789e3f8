"""Python versions of library functions that call a function they are given, which srcgrad
inlines in place of the library's (transform/methods.py rewrites the calls): the function
given is then a known callable inside them (a lambda, ``operator.mul``, a global def), each
call of it inlined, and their loops differentiated as any user loop. The itertools ones
return lists, not iterators (``INLINED`` maps each library function to its version).

NumPy functions that are compositions of primitives with rules (``np.polyfit`` is a
least-squares solve of a Vandermonde matrix, ``np.ediff1d`` a difference joined to its
ends, ``sliding_window_view`` a gather) are written here too (``NUMPY_INLINED``): a call
is their version's, so its derivatives in every mode, to every order, are those of the
primitives it calls, with no rule of its own to get wrong.
"""

import functools
import itertools
import operator

import numpy as np

from srcgrad.grad_mode import detach


def inline(fn):
    """Mark ``fn`` as a function srcgrad inlines, though it is srcgrad's own."""
    fn._srcgrad_inline = True
    return fn


@inline
def reduce(function, iterable):
    """``functools.reduce(function, iterable)``."""
    items = list(iterable)
    if not items:
        raise TypeError("reduce() of empty iterable with no initial value")
    acc = items[0]
    for item in items[1:]:
        acc = function(acc, item)
    return acc


@inline
def reduce_from(function, iterable, initial):
    """``functools.reduce(function, iterable, initial)``."""
    acc = initial
    for item in iterable:
        acc = function(acc, item)
    return acc


@inline
def chain_from_iterable(iterables):
    """``list(itertools.chain.from_iterable(iterables))``."""
    out = []
    for it in iterables:
        out = out + list(it)
    return out


@inline
def chain(*iterables):
    """``list(itertools.chain(*iterables))``."""
    return chain_from_iterable(iterables)


@inline
def pairwise(iterable):
    """``list(itertools.pairwise(iterable))``."""
    items = list(iterable)
    return [(items[k], items[k + 1]) for k in range(len(items) - 1)]


@inline
def accumulate(iterable, func=operator.add):
    """``list(itertools.accumulate(iterable, func))``."""
    items = list(iterable)
    out = items[:1]
    for item in items[1:]:
        out.append(func(out[-1], item))
    return out


# library function -> its version here, by how many positional arguments a call passes
# (no keywords: a call with any is left to the library function and refused if it needs
# a gradient)
@inline
def apply_along_axis(func1d, axis, arr):
    """``np.apply_along_axis(func1d, axis, arr)``: ``func1d`` called on each 1-D slice
    along ``axis`` (a loop srcgrad differentiates), its results stacked where the axis was."""
    moved = np.moveaxis(arr, axis, -1)
    results = [np.asarray(func1d(row)) for row in np.reshape(moved, (-1, np.shape(moved)[-1]))]
    shaped = np.reshape(np.stack(results), np.shape(moved)[:-1] + np.shape(results[0]))
    kept = np.ndim(moved) - 1
    first = axis % np.ndim(moved)
    return np.moveaxis(shaped, tuple(range(kept, np.ndim(shaped))),
                       tuple(range(first, first + np.ndim(shaped) - kept)))


# np.vectorize(pyfunc, otypes=[otype])(x, ...) (otype None: the first result's dtype, as
# NumPy takes it): pyfunc called on each element of the broadcast arguments (a loop srcgrad
# differentiates), its results an array of their shape
@inline
def vectorized1(pyfunc, otype, x):
    shape = np.shape(x)
    flat = np.ravel(x)
    return vectorized_result([pyfunc(flat[k]) for k in range(np.size(flat))], otype, shape)


@inline
def vectorized2(pyfunc, otype, x, y):
    shape = np.broadcast_shapes(np.shape(x), np.shape(y))
    fx, fy = np.ravel(np.broadcast_to(x, shape)), np.ravel(np.broadcast_to(y, shape))
    return vectorized_result([pyfunc(fx[k], fy[k]) for k in range(np.size(fx))], otype, shape)


@inline
def vectorized3(pyfunc, otype, x, y, z):
    shape = np.broadcast_shapes(np.shape(x), np.shape(y), np.shape(z))
    fx, fy = np.ravel(np.broadcast_to(x, shape)), np.ravel(np.broadcast_to(y, shape))
    fz = np.ravel(np.broadcast_to(z, shape))
    return vectorized_result([pyfunc(fx[k], fy[k], fz[k]) for k in range(np.size(fx))], otype, shape)


@inline
def vectorized_result(values, otype, shape):
    """The array of ``values``, of ``otype`` (else the first one's dtype), shaped ``shape``."""
    if otype is None:
        if len(values) == 0:
            raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
        return np.reshape(np.array(values, dtype=np.asarray(values[0]).dtype), shape)
    return np.reshape(np.array(values, dtype=otype), shape)


VECTORIZED = {1: vectorized1, 2: vectorized2, 3: vectorized3}


INLINED = {functools.reduce: {2: reduce, 3: reduce_from},
           itertools.chain: {n: chain for n in range(1, 9)},
           itertools.chain.from_iterable: {1: chain_from_iterable},
           itertools.accumulate: {1: accumulate, 2: accumulate},
           np.apply_along_axis: {3: apply_along_axis}}
if hasattr(itertools, "pairwise"):
    INLINED[itertools.pairwise] = {1: pairwise}


# ----- NumPy functions written with primitives srcgrad has rules for -----


@inline
def ediff1d(ary, to_end=None, to_begin=None):
    """``np.ediff1d``: the differences of the flattened ``ary``, ``to_begin``/``to_end``
    joined to them (cast to ``ary``'s dtype, as NumPy does)."""
    flat = np.ravel(ary)
    parts = [flat[1:] - flat[:-1]]
    if to_begin is not None:
        parts = [np.ravel(np.asarray(to_begin, dtype=flat.dtype))] + parts
    if to_end is not None:
        parts = parts + [np.ravel(np.asarray(to_end, dtype=flat.dtype))]
    return np.concatenate(parts)


@inline
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``np.polyfit`` (``full=False``, ``cov=False``, a matrix of full column rank): the
    least-squares solution of the Vandermonde system with its columns scaled to unit norm,
    as NumPy's, the powers built by products (exact derivatives in ``x`` at 0)."""
    lhs, rhs, scale, c = polyfit_system(x, y, deg, rcond, w)
    return (c.T / scale).T


@inline
def polyfit_full(x, y, deg, rcond=None, full=True, w=None, cov=False):
    """``np.polyfit(..., full=True)``: ``(p, residuals, rank, singular_values, rcond)``, the
    residuals the squared norm of the scaled system's (none for an exact fit, as NumPy's
    ``lstsq`` gives), the singular values the scaled matrix's (``np.linalg.svd``'s rule)."""
    lhs, rhs, scale, c = polyfit_system(x, y, deg, rcond, w)
    r = rhs - lhs @ c
    resids = polyfit_residuals(r, np.shape(x)[0], deg)
    rank = np.linalg.matrix_rank(detach(lhs))
    s = np.linalg.svd(lhs, compute_uv=False)
    return (c.T / scale).T, resids, rank, s, polyfit_rcond(detach(x), rcond)


@inline
def polyfit_cov(x, y, deg, rcond=None, full=False, w=None, cov=True):
    """``np.polyfit(..., cov=True)``: ``(p, V)``, ``V = (A^T A)^-1 / (scale scale^T)``
    times the residuals over ``len(x) - deg - 1`` (``cov="unscaled"``: not), per column
    of ``y`` on a third axis (one for all, "unscaled"), as NumPy's."""
    lhs, rhs, scale, c = polyfit_system(x, y, deg, rcond, w)
    base = np.linalg.inv(lhs.T @ lhs) / np.outer(scale, scale)
    if cov == "unscaled":
        v = base if np.ndim(y) == 1 else base[:, :, None]   # (NumPy's: one for every column)
    else:
        polyfit_check_points(np.shape(x)[0], deg)
        r = rhs - lhs @ c
        fac = np.sum(r * r, axis=0) / (np.shape(x)[0] - deg - 1)
        v = base * fac if np.ndim(y) == 1 else base[:, :, None] * fac
    return (c.T / scale).T, v


@inline
def polyfit_system(x, y, deg, rcond, w):
    """``(lhs, rhs, scale, c)``: NumPy's scaled Vandermonde system and its solution."""
    column = np.ones_like(x)
    columns = [column]
    for _ in range(deg):
        column = column * x
        columns.append(column)
    lhs = np.stack(columns[::-1], axis=1)
    rhs = y
    if w is not None:
        lhs = lhs * w[:, None]
        rhs = rhs * (w if np.ndim(y) == 1 else w[:, None])
    scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    # NumPy's solution as a constant, then one step of the normal equations from it:
    # c0 + (A^T A)^-1 A^T (b - A c0) is (A^T A)^-1 A^T b for every c0, so its derivatives
    # of every order are the solution's, and its value NumPy's (the step is at rounding)
    c0 = np.linalg.lstsq(detach(lhs), detach(rhs), rcond=rcond)[0]
    c = c0 + np.linalg.solve(lhs.T @ lhs, lhs.T @ (rhs - lhs @ c0))
    return lhs, rhs, scale, c


@inline
def polyfit_residuals(r, n, deg):
    """NumPy's ``lstsq`` residuals of the scaled system: the column sums of ``r * r``
    (one entry for a vector ``y``), none for an exact fit (``n <= deg + 1``)."""
    if n <= deg + 1:
        return np.zeros((0,), dtype=r.dtype)
    return np.reshape(np.sum(r * r, axis=0), (-1,))


def polyfit_rcond(x, rcond):
    """The ``rcond`` NumPy's ``polyfit`` used (no gradient: a constant)."""
    return len(x) * np.finfo(np.asarray(x, dtype=float).dtype).eps if rcond is None else rcond


def polyfit_check_points(n, deg):
    if n <= deg + 1:
        raise ValueError("the number of data points must exceed order to scale the covariance matrix")


@inline
def broadcast_arrays(*args, subok=False):
    """``np.broadcast_arrays``: each argument broadcast to the shape of them all."""
    shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    return tuple(np.broadcast_to(a, shape) for a in args)


@inline
def sliding_window_view(x, window_shape, axis=None, subok=False, writeable=False):
    """``sliding_window_view`` read as a gather (its windows as a new array, not a view)."""
    return np.asarray(x)[window_index(np.shape(x), window_shape, axis)]


def window_index(shape, window_shape, axis=None):
    """The integer index that gathers ``sliding_window_view(x, window_shape, axis)`` from
    an ``x`` of ``shape``: the windows of each axis's coordinates (no gradient: indices)."""
    grid = np.indices(shape, sparse=False)
    return tuple(np.lib.stride_tricks.sliding_window_view(g, window_shape, axis) for g in grid)


@inline
def insert(arr, obj, values, axis=None):
    """``np.insert``: ``arr``'s entries and ``values``'s (cast to ``arr``'s dtype) gathered
    in the order NumPy's insertion puts them."""
    a = np.asarray(arr)
    v = np.asarray(values, dtype=a.dtype)
    return np.concatenate([np.ravel(a), np.ravel(v)])[insert_index(np.shape(a), obj, np.shape(v), axis)]


def insert_index(shape, obj, values_shape, axis=None):
    """Where each entry of ``np.insert(arr, obj, values, axis)`` comes from in
    ``arr.ravel()`` followed by ``values.ravel()``: NumPy's insertion of the positions
    (no gradient: indices)."""
    n = int(np.prod(shape))
    positions = np.arange(n).reshape(shape)
    return np.insert(positions, obj, n + np.arange(int(np.prod(values_shape))).reshape(values_shape),
                     axis=axis)


@inline
def var_about(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
              mean=None, correction=None):
    """``np.var(a, ..., mean=mean)`` (NumPy 2): the mean square deviation from the ``mean``
    given (of ``keepdims`` shape), divided by ``n - ddof``."""
    d = a - mean
    n = reduction_count(np.shape(a), axis)
    return np.sum(d * d, axis=axis, keepdims=keepdims) / max(n - ddof, 0)


@inline
def std_about(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
              mean=None, correction=None):
    """``np.std(a, ..., mean=mean)``: the square root of ``var_about``'s (its derivative
    infinite where the entries all equal ``mean``, as ``np.sqrt``'s at 0)."""
    return np.sqrt(var_about(a, axis, ddof=ddof, keepdims=keepdims, mean=mean))


@inline
def average_returned(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """``np.average(..., returned=True)``: the average and the sum of the weights along
    ``axis`` (the count where there are none), of the average's shape."""
    avg = np.average(a, axis=axis, weights=weights, keepdims=keepdims)
    if not returned:
        return avg
    zeros = np.zeros(np.shape(avg), dtype=np.result_type(avg))
    if weights is None:
        return avg, zeros + np.size(a) / np.size(avg)
    if np.shape(weights) == np.shape(a):
        return avg, np.sum(weights, axis=axis, keepdims=keepdims) + zeros
    return avg, np.sum(weights) + zeros   # 1-D weights along the one axis


@inline
def prod_where(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``np.prod(a, ..., where=where)``: the product with the entries left out made 1."""
    return np.prod(np.where(where, a, 1), axis=axis, keepdims=keepdims)


@inline
def pad_statistic(array, pad_width, stat_length, statistic):
    """``np.pad`` with ``statistic`` (``np.max``, ``np.min``, ``np.mean``, ``np.median``) of
    ``stat_length`` entries at each edge, as NumPy pads: axis by axis, each axis's statistic
    taken over the array padded along the axes before it."""
    a = np.asarray(array)
    widths = pad_pairs(pad_width, np.ndim(a))
    lengths = pad_pairs(stat_length, np.ndim(a))
    for axis in range(np.ndim(a)):
        n = np.shape(a)[axis]
        before, after = widths[axis]
        head = n if lengths[axis][0] is None else min(lengths[axis][0], n)
        tail = n if lengths[axis][1] is None else min(lengths[axis][1], n)
        first = statistic(np.take(a, np.arange(head), axis=axis), axis=axis, keepdims=True)
        last = statistic(np.take(a, np.arange(n - tail, n), axis=axis), axis=axis, keepdims=True)
        a = np.concatenate([np.repeat(first, before, axis=axis), a, np.repeat(last, after, axis=axis)],
                           axis=axis)
    return a


@inline
def pad_maximum(array, pad_width, mode="maximum", stat_length=None):
    """``np.pad(array, pad_width, "maximum", stat_length=)``."""
    return pad_statistic(array, pad_width, stat_length, np.max)


@inline
def pad_minimum(array, pad_width, mode="minimum", stat_length=None):
    """``np.pad(array, pad_width, "minimum", stat_length=)``."""
    return pad_statistic(array, pad_width, stat_length, np.min)


@inline
def pad_mean(array, pad_width, mode="mean", stat_length=None):
    """``np.pad(array, pad_width, "mean", stat_length=)``."""
    return pad_statistic(array, pad_width, stat_length, np.mean)


@inline
def pad_median(array, pad_width, mode="median", stat_length=None):
    """``np.pad(array, pad_width, "median", stat_length=)``."""
    return pad_statistic(array, pad_width, stat_length, np.median)


@inline
def pad_linear_ramp(array, pad_width, mode="linear_ramp", end_values=0):
    """``np.pad(array, pad_width, "linear_ramp", end_values=)``: from each end value to
    the edge, axis by axis, as NumPy pads."""
    a = np.asarray(array)
    widths = pad_pairs(pad_width, np.ndim(a))
    ends = np.asarray(end_values, dtype=a.dtype)
    ends = np.broadcast_to(np.reshape(ends, (-1, 2)) if np.size(ends) > 1 else np.reshape(ends, (1, 1)),
                           (np.ndim(a), 2))
    for axis in range(np.ndim(a)):
        n = np.shape(a)[axis]
        before, after = widths[axis]
        up, down = ramp_fractions(before, after, axis, np.ndim(a), a.dtype)
        left = ends[axis, 0] + (np.take(a, [0], axis=axis) - ends[axis, 0]) * up
        right = ends[axis, 1] + (np.take(a, [n - 1], axis=axis) - ends[axis, 1]) * down
        a = np.concatenate([left, a, right], axis=axis)
    return a


PAD_MODES = {"maximum": pad_maximum, "minimum": pad_minimum, "mean": pad_mean,
             "median": pad_median, "linear_ramp": pad_linear_ramp}


def ramp_fractions(before, after, axis, ndim, dtype):
    """``k / before`` for ``k`` up from 0 and ``k / after`` for ``k`` down to 0, along
    ``axis`` of ``ndim`` axes: where ``np.pad``'s linear ramps stand between the end value
    (0) and the edge (1) (no gradient: constants)."""
    shape = [1] * ndim
    shape[axis] = before
    up = (np.arange(before) / max(before, 1)).astype(dtype).reshape(shape)
    shape[axis] = after
    down = (np.arange(after)[::-1] / max(after, 1)).astype(dtype).reshape(shape)
    return up, down


def pad_pairs(width, ndim):
    """``np.pad``'s ``pad_width`` or ``stat_length`` as one ``(before, after)`` pair of ints
    (or Nones) per axis (no gradient: sizes)."""
    if width is None:
        return [(None, None)] * ndim
    pairs = np.asarray(width)
    pairs = pairs.reshape(-1, 2) if pairs.size > 1 else np.full((1, 2), pairs.reshape(-1)[0])
    return [(int(b), int(e)) for b, e in np.broadcast_to(pairs, (ndim, 2))]


def polyfit_form(given):
    """The version of ``np.polyfit`` for a call's ``full=`` and ``cov=`` (constants in
    the call; None: another value, left to NumPy's function, refused where it needs a
    gradient)."""
    import gast
    flags = []
    for name in ("full", "cov"):
        node = given.get(name)
        if node is not None and not isinstance(node, gast.Constant):
            return None
        flags.append(False if node is None else node.value)
    full, cov = flags
    if full:
        return polyfit_full
    if cov:
        return polyfit_cov
    return polyfit


@inline
def piecewise_piece(y, x, cond, func):
    """NumPy's ``y[cond] = func(x[cond])`` (skipped where nothing is selected) as a value:
    the k-th result gathered to the k-th selected entry (no write in place, which a
    gradient read again would have to follow through the copies)."""
    vals = x[cond]
    if np.size(vals) > 0:
        out = np.broadcast_to(func(vals), np.shape(vals))
        y = np.where(cond, out[piecewise_positions(cond)], y)
    return y


def piecewise_positions(cond):
    """For each entry, how many selected entries come before it (the k of ``x[cond]`` at
    a selected one; 0 elsewhere, masked out): no gradient, an index."""
    return np.maximum(np.cumsum(np.ravel(cond)) - 1, 0).reshape(np.shape(cond))


def piecewise_conditions(x, condlist, n):
    """``np.piecewise``'s conditions for ``n`` pieces as one boolean array, the "otherwise"
    one added for ``n - 1`` conditions, as NumPy makes them (no gradient: booleans)."""
    x = np.asanyarray(x)
    if np.isscalar(condlist) or (not isinstance(condlist[0], (list, np.ndarray)) and x.ndim != 0):
        condlist = [condlist]
    condlist = np.asarray(condlist, dtype=bool)
    if len(condlist) == n - 1:
        condlist = np.concatenate([condlist, ~np.any(condlist, axis=0, keepdims=True)], axis=0)
    elif len(condlist) != n:
        raise ValueError(f"with {n} functions, either {n} or {n - 1} conditions must be given")
    return condlist


@inline
def piecewise_1(x, condlist, f0):
    """``np.piecewise(x, condlist, [f0])``: each piece a function (a constant is one
    returning it), called on the entries its condition selects, later pieces winning."""
    conds = piecewise_conditions(detach(x), condlist, 1)
    y = np.zeros_like(x)
    y = piecewise_piece(y, x, conds[0], f0)
    return y


@inline
def piecewise_2(x, condlist, f0, f1):
    """``np.piecewise(x, condlist, [f0, f1])``."""
    conds = piecewise_conditions(detach(x), condlist, 2)
    y = np.zeros_like(x)
    y = piecewise_piece(y, x, conds[0], f0)
    y = piecewise_piece(y, x, conds[1], f1)
    return y


@inline
def piecewise_3(x, condlist, f0, f1, f2):
    """``np.piecewise(x, condlist, [f0, f1, f2])``."""
    conds = piecewise_conditions(detach(x), condlist, 3)
    y = np.zeros_like(x)
    y = piecewise_piece(y, x, conds[0], f0)
    y = piecewise_piece(y, x, conds[1], f1)
    y = piecewise_piece(y, x, conds[2], f2)
    return y


@inline
def piecewise_4(x, condlist, f0, f1, f2, f3):
    """``np.piecewise(x, condlist, [f0, f1, f2, f3])``."""
    conds = piecewise_conditions(detach(x), condlist, 4)
    y = np.zeros_like(x)
    y = piecewise_piece(y, x, conds[0], f0)
    y = piecewise_piece(y, x, conds[1], f1)
    y = piecewise_piece(y, x, conds[2], f2)
    y = piecewise_piece(y, x, conds[3], f3)
    return y


@inline
def piecewise_5(x, condlist, f0, f1, f2, f3, f4):
    """``np.piecewise(x, condlist, [f0, f1, f2, f3, f4])``."""
    conds = piecewise_conditions(detach(x), condlist, 5)
    y = np.zeros_like(x)
    y = piecewise_piece(y, x, conds[0], f0)
    y = piecewise_piece(y, x, conds[1], f1)
    y = piecewise_piece(y, x, conds[2], f2)
    y = piecewise_piece(y, x, conds[3], f3)
    y = piecewise_piece(y, x, conds[4], f4)
    return y


PIECEWISE = {1: piecewise_1, 2: piecewise_2, 3: piecewise_3, 4: piecewise_4, 5: piecewise_5}


def reduction_count(shape, axis=None):
    """How many entries of an array of ``shape`` each result of a reduction over ``axis``
    combines (no gradient: a count)."""
    if axis is None:
        return int(np.prod(shape))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return int(np.prod([shape[k] for k in axes]))


@inline
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):
    """``np.unique``: ``ar``'s entries (or slices along ``axis``) gathered at the first
    occurrence of each distinct value, as ``jax.numpy.unique`` is; a value's gradient goes
    to its first occurrence (NumPy's ``return_index``), none to its repeats."""
    first = unique_parts(detach(ar), False, False, False, axis, equal_nan, sorted)[0]
    return np.take(ar, first, axis=axis)


@inline
def unique_2(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
             equal_nan=True, sorted=True):
    """``np.unique`` with one of ``return_index``/``return_inverse``/``return_counts``: the
    values as ``unique``'s, then NumPy's indices or counts (no gradient: integers)."""
    parts = unique_parts(detach(ar), return_index, return_inverse, return_counts, axis, equal_nan,
                         sorted)
    return np.take(ar, parts[0], axis=axis), parts[1]


@inline
def unique_3(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
             equal_nan=True, sorted=True):
    """``np.unique`` with two of the flags (see ``unique_2``)."""
    parts = unique_parts(detach(ar), return_index, return_inverse, return_counts, axis, equal_nan,
                         sorted)
    return np.take(ar, parts[0], axis=axis), parts[1], parts[2]


@inline
def unique_4(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
             equal_nan=True, sorted=True):
    """``np.unique`` with the three flags (see ``unique_2``)."""
    parts = unique_parts(detach(ar), return_index, return_inverse, return_counts, axis, equal_nan,
                         sorted)
    return np.take(ar, parts[0], axis=axis), parts[1], parts[2], parts[3]


def unique_parts(ar, return_index, return_inverse, return_counts, axis, equal_nan, sorted):
    """``(first, *what np.unique returns besides the values)``: the index of each distinct
    value's first occurrence, then the index, inverse and counts asked for (no gradient)."""
    found = np.unique(ar, return_index=True, return_inverse=return_inverse,
                      return_counts=return_counts, axis=axis, equal_nan=equal_nan, sorted=sorted)
    first = found[1]
    return (first,) + ((first,) if return_index else ()) + tuple(found[2:])


def unique_form(given):
    """The version of ``np.unique`` for a call's flags (constants in the call; None:
    another value, left to NumPy's function, refused where it needs a gradient)."""
    import gast
    flags = []
    for name in ("return_index", "return_inverse", "return_counts"):
        node = given.get(name)
        if node is not None and not isinstance(node, gast.Constant):
            return None
        flags.append(node is not None and bool(node.value))
    return (unique, unique_2, unique_3, unique_4)[sum(flags)]


@inline
def vander(x, N=None, increasing=False):
    """``np.vander``: the powers of the one-dimensional ``x``, highest first (lowest first
    with ``increasing``), ``N`` columns (``len(x)`` by default)."""
    columns = len(x) if N is None else N
    powers = np.arange(columns) if increasing else np.arange(columns - 1, -1, -1)
    return np.asarray(x)[:, None] ** powers


@inline
def fromiter(iterable, dtype, count=-1):
    """``np.fromiter``: the items of ``iterable`` as a one-dimensional array of ``dtype``."""
    return np.array(list(iterable), dtype=dtype)


# NumPy function -> (its version, {parameter: the only value a call may pass}, the keyword
# a call must pass to be the version's, or (parameter, the constants it must be one of, a
# version for each: ``mode=`` of np.pad; or a function of the call's arguments choosing one:
# np.polyfit's ``full=``/``cov=``), None: any call): a call passing another value there
# (``np.polyfit(..., full=flag)``) is left to NumPy's function, refused where it needs a
# gradient; ``np.var`` without ``mean=`` keeps its rule
NUMPY_INLINED = {np.ediff1d: (ediff1d, {}, None),
                 np.insert: (insert, {}, None),
                 np.polyfit: (polyfit, {}, lambda given: polyfit_form(given)),
                 np.broadcast_arrays: (broadcast_arrays, {"subok": False}, None),
                 np.lib.stride_tricks.sliding_window_view: (
                     sliding_window_view, {"subok": False, "writeable": False}, None),
                 np.var: (var_about, {"dtype": None, "out": None, "where": True, "correction": None},
                          "mean"),
                 np.std: (std_about, {"dtype": None, "out": None, "where": True, "correction": None},
                          "mean"),
                 np.prod: (prod_where, {"dtype": None, "out": None, "initial": None}, "where"),
                 np.average: (average_returned, {}, "returned"),
                 np.pad: (PAD_MODES, {}, ("mode", PAD_MODES)),
                 np.unique: (unique, {}, lambda given: unique_form(given)),
                 np.vander: (vander, {}, None),
                 np.fromiter: (fromiter, {"count": -1, "like": None}, None)}
