"""Jacobians: ``sg.jacfwd`` (forward mode over the columns) and ``sg.jacobian``, alias
``sg.jacrev`` (reverse mode over the rows). Shapes follow JAX: ``out.shape + in.shape``.

``jacfwd`` runs the batched tangent program (transform/batching.py) once for all the
basis vectors of the input (in blocks of at most ``chunk_size`` seeds), the tangents
carrying a leading batch axis; where the program has a statement without a batched
rule it runs the tangent program (forward_api.py) once per basis vector instead.
``jacobian`` runs one backward sweep per basis vector of the output, of one forward
sweep (``sg.vjp`` with ``retain_graph``): the reverse sweep is not batched.
"""

import functools
import inspect

import numpy

from srcgrad import call_values, entry, pytree
from srcgrad.api import vjp
from srcgrad.forward_api import jvp


def _wrt_positions(fn, wrt):
    from srcgrad.transform.batching import _signature
    params = [p.name for p in _signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    many = isinstance(wrt, (tuple, list))
    positions = []
    for item in (wrt if many else [wrt]):
        if isinstance(item, str):
            if item not in params:
                raise ValueError(f"srcgrad: wrt={item!r} is not a positional parameter of "
                                 f"{fn.__qualname__}")
            item = params.index(item)
        if not -len(params) <= item < len(params):
            raise ValueError(f"srcgrad: wrt={item} but the function has {len(params)} positional parameters")
        positions.append(item % len(params))
    return positions, many


CHUNK = 256   # seeds per run of the batched tangent program: its tangents are that many times the values


def _seeds(x, start, stop):
    """Rows ``start:stop`` of the identity, shaped ``(stop - start,) + x.shape``."""
    size = int(numpy.prod(numpy.shape(x), dtype=int))
    dtype = getattr(x, "dtype", None)
    seeds = numpy.zeros((stop - start, size), dtype if dtype is not None and dtype.kind == "f"
                        else numpy.float64)
    seeds[numpy.arange(stop - start), numpy.arange(start, stop)] = 1.0
    return seeds.reshape((stop - start,) + numpy.shape(x))


def batched_columns(fn, args, k, chunk_size=None, leaves=None, n=None):
    """``(out, columns)``: ``fn(*args)`` and the tangents of its output along every basis
    vector of ``args[k]`` (shape ``(args[k].size,) + out.shape``), by the batched tangent
    program in blocks of ``chunk_size`` seeds; a tuple output gives a tuple of them.
    For a structure ``args[k]`` with ``leaves``, the basis of its leaf ``n``, the other
    leaves' batched tangents zero. Raises NotBatchable where the program or a value in
    it cannot be batched."""
    from srcgrad.transform import batching
    x = args[k] if leaves is None else leaves[n]
    size = int(numpy.prod(numpy.shape(x), dtype=int))
    chunk = max(1, int(chunk_size or CHUNK))
    out, blocks = None, []
    for start in range(0, max(size, 1), chunk):
        stop = min(size, start + chunk)
        seeds = _seeds(x, start, stop)
        if leaves is not None:
            seeds = _with_leaf(args[k], leaves, n, seeds, lambda leaf: _batch_zero(leaf, stop - start))
        out, t = batching.run(fn, args, k, seeds)
        blocks.append(t)
    if isinstance(out, (tuple, list)):
        raise batching.NotBatchable("a function of several outputs")
    t = numpy.concatenate([fit_batch(b, numpy.shape(out)) for b in blocks]) \
        if size else numpy.zeros((0,) + numpy.shape(out))
    return out, t


def _batch_zero(leaf, size):
    """The zero batched tangent of a leaf (a float or float array: call_values checked)."""
    return numpy.zeros((size,) + numpy.shape(leaf), getattr(leaf, "dtype", numpy.float64))


def fit_batch(t, shape):
    """A batched tangent ``(B,) + s`` of a value of ``shape`` (``s`` broadcasts to it, as a
    scalar's tangent may) as ``(B,) + shape``: aligned to the rank first, then spread."""
    t = numpy.asarray(t, dtype=float)
    k = len(shape) - (t.ndim - 1)
    if k > 0:
        t = t.reshape(t.shape[:1] + (1,) * k + t.shape[1:])
    return numpy.broadcast_to(t, t.shape[:1] + tuple(shape))


def _columns_to_jacobian(t, out_shape, in_shape):
    """``(n_in,) + out_shape`` columns as the Jacobian ``out_shape + in_shape``."""
    n = int(numpy.prod(in_shape, dtype=int))
    return numpy.moveaxis(numpy.asarray(t, dtype=float).reshape((n,) + tuple(out_shape)), 0, -1) \
        .reshape(tuple(out_shape) + tuple(in_shape))


def jacfwd(fn, wrt=0, *, chunk_size=None):
    """``jacfwd(fn, wrt)(*args)``: the Jacobian of ``fn`` by forward mode, every input
    entry (column) at once: the tangents carry a leading batch axis of basis vectors,
    ``chunk_size`` of them per run (default 256, to cap memory). Where a statement of
    the program has no batched tangent rule, one tangent program run per column.
    Shape ``out.shape + in.shape``, a tuple of them for a tuple ``wrt``. A pytree
    argument (dict, list, tuple, dataclass) gives a Jacobian of its structure, one block
    ``out.shape + leaf.shape`` per leaf, as JAX's: the seeds of one leaf at a time,
    the other leaves' tangents zero."""
    if inspect.ismethod(fn) or isinstance(fn, functools.partial):   # as sg.grad does
        fn = entry.entry_function(fn)

    @functools.wraps(fn)
    def jacobian_fn(*args):
        positions, many = _wrt_positions(fn, wrt)
        results = []
        for k in positions:
            if pytree.is_node(args[k]):   # float leaves only, as in sg.grad
                call_values._check_differentiable(f"argument {k}", args[k])
                leaves = pytree.tree_leaves(args[k])
                blocks = [_leaf_jacobian(fn, args, k, leaves, n, chunk_size)
                          for n in range(len(leaves))]
                results.append(pytree.rebuild(args[k], iter(blocks)))
            else:
                results.append(_leaf_jacobian(fn, args, k, None, None, chunk_size))
        return tuple(results) if many else results[0]

    return jacobian_fn


def _with_leaf(x, leaves, n, value, zero):
    """``value`` for an argument ``x`` that is no structure (``leaves`` None), else ``x``'s
    structure holding ``value`` at its leaf ``n`` and ``zero(leaf)`` at the others."""
    if leaves is None:
        return value
    return pytree.rebuild(x, iter([value if m == n else zero(leaf) for m, leaf in enumerate(leaves)]))


def _leaf_jacobian(fn, args, k, leaves, n, chunk_size):
    """The Jacobian block of ``fn`` for ``args[k]`` (its leaf ``n`` for a structure):
    the batched tangent program, else one tangent program run per column."""
    from srcgrad.errors import SrcgradError
    from srcgrad.transform.batching import NotBatchable
    x = args[k] if leaves is None else leaves[n]
    if _differentiable(x):
        try:
            out, t = batched_columns(fn, args, k, chunk_size, leaves, n)
            return _columns_to_jacobian(t, numpy.shape(out), numpy.shape(x))
        except (NotBatchable, SrcgradError):
            pass   # one run per column: it refuses what forward mode cannot do
    xa = numpy.asarray(x, dtype=float)
    columns = []
    out = None
    for j in range(xa.size):
        e = numpy.zeros(xa.size)
        e[j] = 1.0
        tangents = [None] * len(args)
        tangents[k] = _with_leaf(args[k], leaves, n, e.reshape(xa.shape) if numpy.ndim(x) else 1.0,
                                 lambda leaf: None)
        out, t = jvp(fn, args, tangents)
        columns.append(numpy.asarray(t, dtype=float))
    out_shape = numpy.shape(out) if out is not None else numpy.shape(fn(*args))
    if columns:
        return numpy.stack(columns, axis=-1).reshape(out_shape + xa.shape)
    return numpy.zeros(out_shape + xa.shape)


def _differentiable(value):
    if isinstance(value, (bool, int, numpy.integer, numpy.bool_, list, tuple, dict)):
        return False
    dtype = getattr(value, "dtype", None)
    return dtype is None and isinstance(value, float) or dtype is not None and dtype.kind == "f"


def jacobian(fn, wrt=0):
    """``jacobian(fn, wrt)(*args)``: the Jacobian of ``fn`` by reverse mode, one backward
    sweep per output entry (row) of one forward sweep (``sg.vjp``, ``retain_graph``);
    shape ``out.shape + in.shape``, a tuple of them for a tuple ``wrt``. A pytree
    argument (dict, list, tuple, dataclass) gives a Jacobian of its structure, one block
    ``out.shape + leaf.shape`` per leaf, as JAX's."""
    @functools.wraps(fn)
    def jacobian_fn(*args):
        positions, many = _wrt_positions(fn, wrt)
        out, backward = vjp(fn, wrt=tuple(positions), materialize_grads=True,
                            allow_unused=True)(*args)
        if isinstance(out, (tuple, list, dict)):
            raise TypeError(f"srcgrad.jacobian: {fn.__qualname__} returns a "
                            f"{type(out).__name__}; the Jacobian takes one array output")
        out_arr = numpy.asarray(out, dtype=float)
        trees = [pytree.is_node(args[k]) for k in positions]
        rows = [[] for _ in positions]
        for i in range(out_arr.size):
            seed = numpy.zeros(out_arr.size)
            seed[i] = 1.0
            seed = seed.reshape(out_arr.shape) if numpy.ndim(out) else 1.0
            grads = backward(seed, retain_graph=True)
            for r, g, tree in zip(rows, grads, trees):
                r.append([numpy.asarray(v, dtype=float) for v in pytree.tree_leaves(g)] if tree
                         else numpy.asarray(g, dtype=float))
        results = []
        for k, r, tree in zip(positions, rows, trees):
            if tree:
                leaves = pytree.tree_leaves(args[k])
                blocks = [_stacked([row[n] for row in r], out_arr.shape, numpy.shape(leaf))
                          for n, leaf in enumerate(leaves)]
                results.append(pytree.rebuild(args[k], iter(blocks)))
            else:
                results.append(_stacked(r, out_arr.shape, numpy.shape(args[k])))
        return tuple(results) if many else results[0]

    return jacobian_fn


def _stacked(rows, out_shape, in_shape):
    return numpy.stack(rows).reshape(tuple(out_shape) + tuple(in_shape)) if rows else \
        numpy.zeros(tuple(out_shape) + tuple(in_shape))


jacrev = jacobian
