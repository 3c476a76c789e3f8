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
INLINED = {functools.reduce: {2: reduce, 3: reduce_from},
           itertools.chain: {n: chain for n in range(1, 9)},
           itertools.chain.from_iterable: {1: chain_from_iterable},
           itertools.accumulate: {1: accumulate, 2: accumulate}}
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
    return (c.T / scale).T


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
def prod_where(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``np.prod(a, ..., where=where)``: the product with the entries left out made 1."""
    return np.prod(np.where(where, a, 1), axis=axis, keepdims=keepdims)


def reduction_count(shape, axis=None):
    """How many entries of an array of ``shape`` each result of a reduction over ``axis``
    combines (no gradient: a count)."""
    if axis is None:
        return int(np.prod(shape))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return int(np.prod([shape[k] for k in axes]))


# NumPy function -> (its version, {parameter: the only value a call may pass}, the keyword
# a call must pass to be the version's, None: any call): a call passing another value there
# (``np.polyfit(..., full=True)``) is left to NumPy's function, refused where it needs a
# gradient; ``np.var`` without ``mean=`` keeps its rule
NUMPY_INLINED = {np.ediff1d: (ediff1d, {}, None),
                 np.insert: (insert, {}, None),
                 np.polyfit: (polyfit, {"full": False, "cov": False}, None),
                 np.broadcast_arrays: (broadcast_arrays, {"subok": False}, None),
                 np.lib.stride_tricks.sliding_window_view: (
                     sliding_window_view, {"subok": False, "writeable": False}, None),
                 np.var: (var_about, {"dtype": None, "out": None, "where": True, "correction": None},
                          "mean"),
                 np.std: (std_about, {"dtype": None, "out": None, "where": True, "correction": None},
                          "mean"),
                 np.prod: (prod_where, {"dtype": None, "out": None, "initial": None}, "where")}
