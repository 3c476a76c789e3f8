"""Jacobians: ``sg.jacfwd`` (forward mode over the columns) and ``sg.jacobian``, alias
``sg.jacrev`` (reverse mode over the rows). Shapes follow JAX: ``out.shape + in.shape``.

``jacfwd`` runs the batched tangent program (transform/batching.py) once for all the
basis vectors of the input (in blocks of at most ``chunk_size`` seeds), the tangents
carrying a leading batch axis; where the program has a statement without a batched
rule it runs the tangent program (forward_api.py) once per basis vector instead.
``jacobian`` runs one backward sweep per basis vector of the output, of one forward
sweep (``sg.vjp`` with ``retain_graph``): the reverse sweep is not batched.

A Jacobian (or jvp) of a function these return is the second derivative of what it
differentiates, read off the ``Derivative`` it carries (nested_jacobians.py).

A structured argument is seeded as one vector (the basis over all its leaves at once,
``structure_seeds``) and its columns cut into JAX's blocks (``cut_columns``); a
structured output gives its structure of Jacobians (``_assemble``), an output leaf that
is not a float refused at the user's ``return``. ``has_aux=True``: the function returns
``(output, aux)``; the aux is split off before differentiating (transform/aux.py, as
for ``sg.grad``) and returned beside the Jacobian.
"""

import functools
import inspect

import numpy

from srcgrad import call_values, entry, pytree
from srcgrad.errors import SrcgradError, located_at
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
            _refuse_star_args(fn)
            raise ValueError(f"srcgrad: wrt={item} but the function has {len(params)} positional parameters")
        positions.append(item % len(params))
    return positions, many


def _refuse_star_args(fn):
    """A position past the named parameters of a function taking ``*args``: refused at its
    ``def``, as sg.grad refuses it (the differentiated function's parameters are named)."""
    from srcgrad.errors import UnsupportedError
    from srcgrad.transform.batching import _signature
    if any(p.kind is p.VAR_POSITIONAL for p in _signature(fn).parameters.values()):
        code = getattr(inspect.unwrap(fn), "__code__", None)
        raise UnsupportedError(
            f"{fn.__qualname__} takes *args: srcgrad differentiates with respect to named "
            f"parameters", getattr(code, "co_filename", None), getattr(code, "co_firstlineno", None),
            hint="Name the parameters (def f(x, y)), or take one tuple or list (def f(xs)).")


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def positional_arguments(fn, args, kwargs, api):
    """``args`` and ``kwargs`` of a call of ``fn`` as its positional parameters in order,
    defaults filled in: what ``wrt`` counts. A keyword-only argument is refused (its
    parameter has no position to differentiate or hold fixed); one left out keeps its default."""
    from srcgrad.transform.batching import _signature
    bound = _signature(fn).bind(*args, **kwargs)
    for name in kwargs:
        if bound.signature.parameters[name].kind not in _POSITIONAL:
            raise TypeError(f"{api}: keyword-only argument {name!r} of {fn.__qualname__}: "
                            f"bind it with functools.partial")
    bound.apply_defaults()
    return tuple(value for name, value in bound.arguments.items()
                 if bound.signature.parameters[name].kind in _POSITIONAL)


CHUNK = 256   # seeds per run of the batched tangent program: its tangents are that many times the values


def _size(x):
    return int(numpy.prod(numpy.shape(x), dtype=int))


def n_entries(x):
    """How many numbers ``x`` holds: all the leaves of a structure together."""
    return sum(_size(leaf) for leaf in pytree.tree_leaves(x)) if pytree.is_node(x) else _size(x)


def _seed_dtype(x):
    dtype = getattr(x, "dtype", None)
    return dtype if dtype is not None and dtype.kind == "f" else numpy.float64


def array_module(*values):
    """CuPy where a leaf of ``values`` is a CuPy array, else NumPy: where a Jacobian's
    seeds and blocks are made, so that CuPy inputs keep them on the device."""
    from srcgrad.runtime.arrays import _cupy_module, namespace
    leaves = [leaf for v in values for leaf in (pytree.tree_leaves(v) if pytree.is_node(v) else [v])]
    cupy = _cupy_module() if any(type(v).__module__.startswith("cupy") for v in leaves) else None
    return cupy if cupy is not None and namespace(*leaves) is cupy else numpy


def block_dtype(out, x):
    """The dtype of a Jacobian block of output ``out`` for input ``x``, as JAX's: float32
    where both are float32, float64 where either is float64 or a Python float."""
    return numpy.result_type(_seed_dtype(out), _seed_dtype(x))


def structure_seeds(x, start, stop):
    """Rows ``start:stop`` of the identity over every entry of ``x`` (all the leaves of a
    structure, in ``pytree.tree_leaves`` order, one after the other), in ``x``'s
    structure: each leaf's part shaped ``(stop - start,) + leaf.shape``."""
    leaves = pytree.tree_leaves(x) if pytree.is_node(x) else [x]
    xp = array_module(x)
    parts, offset = [], 0
    for leaf in leaves:
        size = _size(leaf)
        seeds = xp.zeros((stop - start, size), _seed_dtype(leaf))
        entries = xp.arange(max(start, offset), min(stop, offset + size))
        seeds[entries - start, entries - offset] = 1.0
        parts.append(seeds.reshape((stop - start,) + numpy.shape(leaf)))
        offset += size
    return pytree.rebuild(x, iter(parts)) if pytree.is_node(x) else parts[0]


def basis_vector(x, n):
    """Row ``n`` of ``structure_seeds`` as one tangent of ``x``: in its structure, each
    leaf's part of its shape (a float for a scalar)."""
    row = structure_seeds(x, n, n + 1)
    one = lambda s: s[0] if numpy.ndim(s) > 1 else float(s[0])  # noqa: E731
    return pytree.tree_map(one, row) if pytree.is_node(x) else one(row)


def batched_run(fn, args, k, chunk_size=None, has_aux=False):
    """``(out, columns, aux)``: ``fn(*args)`` and, for each leaf of its output (one for an
    array), the tangents of that leaf along every basis vector of ``args[k]`` (of all the
    leaves of a structure at once), ``(n,) + leaf.shape`` with ``n`` the number of
    entries of ``args[k]``: the batched tangent program in blocks of ``chunk_size``
    seeds. Raises NotBatchable where the program or a value in it cannot be batched."""
    from srcgrad.transform import batching
    size = n_entries(args[k])
    chunk = max(1, int(chunk_size or CHUNK))
    out, aux, blocks = None, None, []
    for start in range(0, max(size, 1), chunk):
        stop = min(size, start + chunk)
        result = batching.run(fn, args, k, structure_seeds(args[k], start, stop), has_aux)
        out, t = result[:2]
        aux = result[2] if has_aux else None
        blocks.append(t)
    out_leaves = output_leaves(fn, out)
    xp = array_module(args[k], out)
    columns = []
    for n, leaf in enumerate(out_leaves):
        parts = [fit_batch(_tangent_leaf(out, b, n), numpy.shape(leaf)) for b in blocks]
        columns.append(xp.concatenate(parts) if size else xp.zeros((0,) + numpy.shape(leaf)))
    return out, columns, aux


def _tangent_leaf(out, t, n):
    """The tangent of leaf ``n`` of the output ``out`` in its tangent ``t``."""
    return pytree.tree_leaves(t)[n] if pytree.is_node(out) else t


def batched_columns(fn, args, k, chunk_size=None):
    """``(out, columns)`` of ``batched_run`` for a function of one array output, the
    columns ``(args[k].size,) + out.shape``; NotBatchable for several outputs."""
    from srcgrad.transform import batching
    out, columns, _ = batched_run(fn, args, k, chunk_size)
    if pytree.is_node(out):
        raise batching.NotBatchable("a function of several outputs")
    return out, columns[0]


def fit_batch(t, shape):
    """A batched tangent ``(B,) + s`` of a value of ``shape`` (``s`` broadcasts to it, as a
    scalar's tangent may) as ``(B,) + shape``: aligned to the rank first, then spread."""
    t = array_module(t).asarray(t)
    if t.dtype.kind != "f":   # an integer or bool zero: no derivative of its own
        t = t.astype(numpy.float64)
    k = len(shape) - (t.ndim - 1)
    if k > 0:
        t = t.reshape(t.shape[:1] + (1,) * k + t.shape[1:])
    return array_module(t).broadcast_to(t, t.shape[:1] + tuple(shape))


def cut_columns(columns, x, rows_shape, like=None):
    """Columns ``(n,) + rows_shape`` over every entry of ``x`` (all its leaves for a
    structure) as the blocks ``rows_shape + leaf.shape``, one per leaf of ``x`` in its
    structure (the block itself for an array ``x``), each of ``block_dtype(like, leaf)``
    (``like`` the value the rows belong to: the output leaf, or for a Hessian the
    argument leaf the gradient has the shape of)."""
    leaves = pytree.tree_leaves(x) if pytree.is_node(x) else [x]
    xp = array_module(columns)
    blocks, offset = [], 0
    for leaf in leaves:
        size = _size(leaf)
        part = xp.asarray(columns[offset:offset + size]).astype(block_dtype(like, leaf), copy=False)
        part = xp.moveaxis(part.reshape((size,) + tuple(rows_shape)), 0, -1)
        blocks.append(part.reshape(tuple(rows_shape) + numpy.shape(leaf)))
        offset += size
    return pytree.rebuild(x, iter(blocks)) if pytree.is_node(x) else blocks[0]


def output_leaves(fn, out):
    """The leaves of ``fn``'s output ``out`` (itself for an array), each a float or a float
    array; anything else is refused at the line of ``fn`` that returns it."""
    leaves = pytree.tree_leaves(out) if pytree.is_node(out) else [out]
    for leaf in leaves:
        dtype = getattr(leaf, "dtype", None)
        if isinstance(leaf, float) or dtype is not None and dtype.kind == "f":
            continue
        what = f"a {type(leaf).__name__}" if dtype is None else f"an array of {dtype}"
        error = _at_return(fn, f"a Jacobian of {getattr(fn, '__qualname__', fn)}: it returns "
                             f"{'a structure holding ' if leaves != [out] else ''}{what}, not a "
                             f"float or a float array, which has no derivative",
                         "Return float values only (an integer or a label: pass it back with "
                         "has_aux=True, or compute it outside the function).")
        error.output_refused = True
        raise error
    return leaves


def _at_return(fn, message, hint):
    """A NonDifferentiableError at the last ``return`` of the user's ``fn``."""
    from srcgrad.errors import NonDifferentiableError
    from srcgrad.parse import parse_function
    from srcgrad.transform.aux import _returns
    try:
        node, info = parse_function(fn)
    except Exception:   # no source: its file and first line
        code = getattr(fn, "__code__", None)
        return NonDifferentiableError(message, getattr(code, "co_filename", None),
                                      getattr(code, "co_firstlineno", None), hint=hint)
    returns = sorted(_returns(node.body), key=lambda r: getattr(r, "lineno", 0))
    origin = info.origin(returns[-1]) if returns else None
    if origin is None:
        return NonDifferentiableError(message, info.filename, info.first_lineno, hint=hint)
    return origin.error(NonDifferentiableError, message, hint)


def _assemble(out, per_position, positions, many):
    """JAX's nesting: the output's structure outside, a tuple over ``positions`` (for a
    tuple ``wrt``) inside it, each argument's structure innermost. ``per_position[i][o]``
    is the block of output leaf ``o`` for ``args[positions[i]]`` (in its structure)."""
    per_leaf = []
    for o in range(len(per_position[0])):
        blocks = [per_position[i][o] for i in range(len(positions))]
        per_leaf.append(tuple(blocks) if many else blocks[0])
    return pytree.rebuild(out, iter(per_leaf)) if pytree.is_node(out) else per_leaf[0]


def _readable(fn, has_aux):
    """``fn`` as the Jacobians read it: a bound method or partial as sg.grad takes it, a
    gradient (``sg.grad(f)``) as its generated code, which is differentiated again."""
    if callable(getattr(fn, "as_function", None)):
        return fn.as_function(has_aux=has_aux and getattr(fn, "has_aux", False))
    return entry.readable(fn)


def _as_hessian(original, refusal, wrt, args, kwargs, has_aux, api):
    """A Jacobian of ``sg.grad(f)`` at structures: ``_gradient_of_structures``; None where
    that does not apply, or the refusal ``_readable_or_refusal`` kept, raised."""
    found = None if has_aux else _gradient_of_structures(original, wrt, args, kwargs, api)
    if found is None and refusal is not None:
        raise refusal
    return found


def _readable_or_refusal(fn, has_aux):
    """``(readable, refusal)``: ``_readable(fn)``, or for a gradient whose code cannot be
    read again for arrays (it reads a dataclass's fields) the gradient's function and
    the refusal, raised when the call is not one ``_gradient_of_structures`` answers."""
    from srcgrad.api import GradFunction
    from srcgrad.errors import SrcgradError
    try:
        return _readable(fn, has_aux), None
    except SrcgradError as exc:
        if not isinstance(fn, GradFunction):
            raise
        return fn.fn, exc


HESSIAN_BLOCKS = None   # (hessian_blocks, nest_blocks), set by srcgrad.hessians (which imports this module)
SECOND = None    # a Jacobian of a Jacobian, set by srcgrad.nested_jacobians
VECTOR_HESSIAN = None   # sg.hessian of a non-scalar output, set by srcgrad.nested_jacobians


class Derivative:
    """What a function ``sg.jacfwd``/``jacrev``/``hessian`` made differentiates, kept on it
    as ``__srcgrad_jacobian__``: a Jacobian of it is read off this (nested_jacobians.py),
    never off its name. ``made``: the function it describes (a wrapper that
    ``functools.wraps`` copied the attribute onto computes something else: not read so).
    ``order``: 1 for a Jacobian, 2 for a Hessian or a Jacobian of one."""

    __slots__ = ("made", "original", "wrt", "has_aux", "api", "order")

    def __init__(self, made, original, wrt, has_aux, api, order=1):
        self.made, self.original, self.wrt, self.has_aux, self.api, self.order = \
            made, original, wrt, has_aux, api, order


def _of_derivative(fn, wrt, has_aux, api):
    """``api(fn, wrt)`` for ``fn`` a function a Jacobian or Hessian made: the second
    derivative (or the refusal of a third), else None."""
    made = getattr(fn, "__srcgrad_jacobian__", None)
    if not isinstance(made, Derivative) or made.made is not fn:
        return None
    return SECOND(made, wrt, has_aux, api)


def _gradient_of_structures(gradient, wrt, args, kwargs, api):
    """The Jacobian of ``gradient`` (``sg.grad(f, wrt=a)``) along ``wrt`` (``b``) at arguments
    where one of ``a`` or ``b`` is a structure (a dict of parameters: JAX's
    ``jacfwd(grad(f))(params)``): the Hessian blocks ``H[a][b]`` of ``f`` by ``sg.hessian``,
    which reads structures where a gradient's own code (``as_function``) takes arrays
    and floats; the layout is the Jacobian's, the gradient's structure outside. None
    where that does not apply (``fn`` is no plain gradient, or no structure is involved)."""
    from srcgrad.api import GradFunction
    if not isinstance(gradient, GradFunction) or gradient.has_aux or gradient.preserve_result \
            or gradient.hooks or gradient._inner is not None \
            or getattr(gradient.fn, "_srcgrad_is_gradient", False):
        return None
    f = gradient.fn
    outer, outer_many = _wrt_positions(f, gradient.wrt)
    inner, inner_many = _wrt_positions(f, wrt)
    args = positional_arguments(f, args, kwargs, api)
    if not any(pytree.is_node(args[k]) for k in set(outer) | set(inner)):
        return None
    positions = tuple(sorted(set(outer) | set(inner)))
    hessian_blocks, nest_blocks = HESSIAN_BLOCKS
    blocks, _ = hessian_blocks(f, args, positions)
    return nest_blocks(blocks, args, outer, outer_many, inner, inner_many)


def jacfwd(fn, wrt=0, *, has_aux=False, chunk_size=None):
    """``jacfwd(fn, wrt)(*args)``: the Jacobian of ``fn`` by forward mode, every input
    entry (column) at once: the tangents carry a leading batch axis of basis vectors,
    ``chunk_size`` of them per run (default 256, to cap memory). Where a statement of
    the program has no batched tangent rule, one tangent program run per column.
    Shape ``out.shape + in.shape``, a tuple of them for a tuple ``wrt``. A pytree
    argument (dict, list, tuple, dataclass) gives a Jacobian of its structure, one block
    ``out.shape + leaf.shape`` per leaf, as JAX's: the seeds run over all its leaves at
    once. A structured output (tuple, list, dict of arrays) gives its structure of
    Jacobians, outermost. ``has_aux=True``: ``fn`` returns ``(output, aux)``; the result
    is ``(jacobian, aux)``, the aux ``fn``'s own value, carrying no derivative."""
    second = _of_derivative(fn, wrt, has_aux, "sg.jacfwd")
    if second is not None:
        return second
    target = entry.variadic(fn)
    if target is not None:   # one Jacobian per call's arity (entry.ByArity)
        return entry.ByArity(target, functools.partial(jacfwd, wrt=wrt, has_aux=has_aux,
                                                         chunk_size=chunk_size))
    original = fn
    fn, refusal = _readable_or_refusal(fn, has_aux)

    @functools.wraps(fn)
    def jacobian_fn(*args, **kwargs):
        found = _as_hessian(original, refusal, wrt, args, kwargs, has_aux, "srcgrad.jacfwd")
        if found is not None:
            return found
        positions, many = _wrt_positions(fn, wrt)
        args = positional_arguments(fn, args, kwargs, "srcgrad.jacfwd")
        per_position, out, aux = [], None, None
        try:
            call_values.refuse_matrices(args)
        except SrcgradError as exc:
            raise located_at(exc, fn) from None
        for k in positions:
            if pytree.is_node(args[k]):   # float leaves only, as in sg.grad
                call_values._check_differentiable(f"argument {k}", args[k])
            out, blocks, aux = _position_jacobian(fn, args, k, chunk_size, has_aux)
            per_position.append(blocks)
        jac = _assemble(out, per_position, positions, many)
        return (jac, aux) if has_aux else jac

    jacobian_fn.__srcgrad_derivative__ = "sg.jacfwd"   # not read again as source (parse.py)
    jacobian_fn.__srcgrad_jacobian__ = Derivative(jacobian_fn, original, wrt, has_aux, "sg.jacfwd")
    return jacobian_fn


def _position_jacobian(fn, args, k, chunk_size, has_aux):
    """``(out, blocks, aux)``: for each output leaf the Jacobian block of ``fn`` for
    ``args[k]`` (in its structure): the batched tangent program, else one tangent program
    run per column."""
    from srcgrad.errors import SrcgradError
    from srcgrad.transform.batching import NotBatchable
    x = args[k]
    if pytree.is_node(x) or _differentiable(x):
        try:
            out, columns, aux = batched_run(fn, args, k, chunk_size, has_aux)
            return out, [cut_columns(c, x, numpy.shape(leaf), leaf)
                         for c, leaf in zip(columns, output_leaves(fn, out))], aux
        except NotBatchable:
            pass   # one run per column
        except SrcgradError as exc:
            if getattr(exc, "output_refused", False):
                raise
            # one run per column: it refuses what forward mode cannot do
    size = n_entries(x)
    columns, out, aux = [], None, None
    for j in range(size):
        tangents = [None] * len(args)
        tangents[k] = basis_vector(x, j)
        result = jvp(fn, args, tangents, has_aux=has_aux)
        out, t = result[:2]
        aux = result[2] if has_aux else None
        columns.append(t)
    if out is None:   # no entries: the output's shape from a call
        out = fn(*args)
        out, aux = out if has_aux else (out, None)
    leaves = output_leaves(fn, out)
    xp = array_module(x, out)
    blocks = []
    for n, leaf in enumerate(leaves):
        c = [xp.broadcast_to(xp.asarray(_tangent_leaf(out, t, n)), numpy.shape(leaf)) for t in columns]
        stacked = xp.stack(c) if c else xp.zeros((0,) + numpy.shape(leaf))
        blocks.append(cut_columns(stacked, x, numpy.shape(leaf), leaf))
    return out, blocks, aux


def _differentiable(value):
    if isinstance(value, (bool, int, numpy.integer, numpy.bool_, list, tuple, dict)):
        return False
    dtype = getattr(value, "dtype", None)
    return dtype is None and isinstance(value, float) or dtype is not None and dtype.kind == "f"


def jacobian(fn, wrt=0, *, has_aux=False):
    """``jacobian(fn, wrt)(*args)``: the Jacobian of ``fn`` by reverse mode, one backward
    sweep per output entry (row) of one forward sweep (``sg.vjp``, ``retain_graph``);
    shape ``out.shape + in.shape``, a tuple of them for a tuple ``wrt``. A pytree
    argument (dict, list, tuple, dataclass) gives a Jacobian of its structure, one block
    ``out.shape + leaf.shape`` per leaf, as JAX's; a structured output (tuple, list,
    dict of arrays) its structure of Jacobians, outermost. ``has_aux=True``: ``fn``
    returns ``(output, aux)``; the result is ``(jacobian, aux)``, the aux ``fn``'s own
    value, carrying no derivative."""
    second = _of_derivative(fn, wrt, has_aux, "sg.jacrev")
    if second is not None:
        return second
    target = entry.variadic(fn)
    if target is not None:   # one Jacobian per call's arity (entry.ByArity)
        return entry.ByArity(target, functools.partial(jacobian, wrt=wrt, has_aux=has_aux))
    original = fn
    fn, refusal = _readable_or_refusal(fn, has_aux)

    @functools.wraps(fn)
    def jacobian_fn(*args, **kwargs):
        found = _as_hessian(original, refusal, wrt, args, kwargs, has_aux, "srcgrad.jacrev")
        if found is not None:
            return found
        if hasattr(original, "as_function") and pytree.holds_data((*args, *kwargs.values())):
            # a gradient of a gradient at a structure: its code holds for arrays, its jvp
            # (an hvp over the structure's leaves, nested.py) takes structures
            return jacfwd(original, wrt=wrt, has_aux=has_aux)(*args, **kwargs)
        positions, many = _wrt_positions(fn, wrt)
        args = positional_arguments(fn, args, kwargs, "srcgrad.jacrev")
        result = vjp(fn, wrt=tuple(positions), materialize_grads=True, allow_unused=True,
                     has_aux=has_aux)(*args)
        out, backward = result[:2]
        leaves = output_leaves(fn, out)
        xp = array_module(out, *(args[k] for k in positions))
        rows = [[] for _ in positions]   # per position: per output entry, its gradient
        for n, leaf in enumerate(leaves):
            for i in range(_size(leaf)):
                seeds = [xp.zeros(numpy.shape(other), _seed_dtype(other)) if numpy.ndim(other)
                         else 0.0 for other in leaves]
                if numpy.ndim(leaf):
                    seeds[n].reshape(-1)[i] = 1.0
                else:
                    seeds[n] = 1.0
                seed = pytree.rebuild(out, iter(seeds)) if pytree.is_node(out) else seeds[0]
                grads = backward(seed, retain_graph=True)
                for r, g, k in zip(rows, grads, positions):
                    r.append(xp.concatenate([xp.ravel(xp.asarray(v)) for v in pytree.tree_leaves(g)])
                             if pytree.is_node(args[k]) else xp.asarray(g))
        per_position = []
        for r, k in zip(rows, positions):
            blocks, start = [], 0
            for leaf in leaves:   # the rows of output leaf ``leaf``, one per entry
                size = _size(leaf)
                part = r[start:start + size]
                start += size
                if pytree.is_node(args[k]):   # the flat rows cut at each leaf of args[k]
                    flat = xp.stack(part).reshape((size, -1)) if part else \
                        xp.zeros((0, sum(_size(v) for v in pytree.tree_leaves(args[k]))))
                    blocks.append(cut_columns(flat.T, args[k], numpy.shape(leaf), leaf))
                else:
                    blocks.append(_stacked(xp, part, numpy.shape(leaf), numpy.shape(args[k]))
                                  .astype(block_dtype(leaf, args[k]), copy=False))
            per_position.append(blocks)
        jac = _assemble(out, per_position, positions, many)
        return (jac, result[2]) if has_aux else jac

    jacobian_fn.__srcgrad_derivative__ = "sg.jacrev"   # not read again as source (parse.py)
    jacobian_fn.__srcgrad_jacobian__ = Derivative(jacobian_fn, original, wrt, has_aux, "sg.jacrev")
    return jacobian_fn


def _stacked(xp, rows, out_shape, in_shape):
    return xp.stack(rows).reshape(tuple(out_shape) + tuple(in_shape)) if rows else \
        xp.zeros(tuple(out_shape) + tuple(in_shape))


jacrev = jacobian
