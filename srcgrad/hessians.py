"""Second derivatives, forward-over-reverse: ``sg.hvp`` and ``sg.hessian``.

The gradient srcgrad generates is a plain Python function (pipeline.compose_gradient:
the forward sweep, the seed, the backward sweep); forward mode (forward_api.py) reads
it again like any user function and builds its tangent program. The tangents of the
``rt.*`` helpers the gradient calls are in rules/jvp_runtime.py; the tape (loops,
rebinding, indexed writes) gets a tangent tape beside it: ``tape.append(v)`` is
followed by ``dtape.append(dv)``, ``v = rt.tape_pop(tape)`` by ``dv = rt.tape_pop(dtape)``.

* ``hvp(f, primals, tangents)`` is ``jvp(grad(f, wrt=all), primals, tangents)[1]``:
  one tuple entry per primal (None for an integer or boolean primal, which has no
  gradient). One forward and one backward sweep, each with its tangent: no Hessian
  is built.
* ``hessian(f, wrt)(*args)`` runs the tangent program of the gradient once with every
  basis vector of the input as a seed (transform/batching.py: a leading batch axis;
  for a structure the basis over all its leaves at once), or one hvp per basis vector
  where that program cannot be batched; shape ``in.shape + in.shape``, for a tuple
  ``wrt`` JAX's nested tuple ``H[i][j]`` (d/d wrt[j] of the gradient for wrt[i]). Of an
  output that is not one number, the Jacobian of its Jacobian (nested_jacobians.py).
* ``has_aux=True`` (both): ``f`` returns ``(output, aux)``; the gradient is composed
  returning ``(gradients, aux)`` (pipeline.compose_gradient's ``aux``) and its tangent
  program reads it with ``has_aux``, so the aux is ``f``'s own value and carries no
  derivative.

A gradient that forward mode cannot read again is refused, naming the user's function
and the line whose gradient calls what has no tangent rule; a custom Function whose
backward is ``once_differentiable`` is refused as such.
"""

import functools
import inspect
import threading

import numpy

from srcgrad import caches, call_values, entry, jacobians, pytree, runtime
from srcgrad.codegen.refusals import in_user_code
from srcgrad.errors import SrcgradError, UnsupportedError

_grads = caches.LRU()   # (fn, positions, has_aux) -> its GradFunction
_lock = threading.Lock()


def _differentiable(value):
    if isinstance(value, (bool, int, numpy.integer, numpy.bool_)):
        return False
    dtype = getattr(value, "dtype", None)
    return dtype is None or dtype.kind == "f"


def _gradient_of(fn, positions, args, has_aux=False):
    """The composed gradient of ``fn`` w.r.t. ``positions`` for ``args``, as forward mode
    reads it (pipeline.compose_gradient with ``for_transform``), kept with the compile.
    ``has_aux``: ``fn`` returns ``(output, aux)`` and the gradient ``(gradients, aux)``."""
    from srcgrad.api import grad
    from srcgrad import pipeline
    key = (fn, positions, has_aux)
    g = _grads.get(key)
    if g is None:
        with _lock:
            g = _grads.setdefault(key, grad(fn, wrt=positions, has_aux=has_aux))
    compiled = g.compiled_for(args, {})
    info = compiled.load[0]
    pipeline.refuse_once_differentiable(compiled, "hessian: ")
    function = getattr(compiled, "for_transform", None)
    if function is None:
        pipeline.with_trees(compiled)
        if compiled.gradient_forward is None and (compiled.tuple_output or not has_aux):
            raise UnsupportedError(
                f"hessian: the gradient of {fn.__qualname__} is not one function srcgrad can "
                f"differentiate again (several outputs: return (output, aux) with "
                f"has_aux=True, or a complex output)", info.filename, info.first_lineno)
        function = compiled.for_transform = pipeline.compose_gradient(
            compiled, True, only_gradients=True, for_transform=True, aux=has_aux)
    return function, info


def _tangent_of(function, primals, tangents, has_aux=False):
    """``jvp(function, primals, tangents)[1]`` by a tangent program that returns the
    tangent only: the gradient's own value (``dW1 = X.T @ g``) is not computed where no
    tangent reads it. ``has_aux``: ``(tangent, aux)``."""
    from srcgrad import forward_api
    result = forward_api.run(function, primals, tangents, values=False, has_aux=has_aux)
    return (result[1], result[2]) if has_aux else result[1]


def _refused(exc, fn, info):
    """``exc`` (forward mode refusing the gradient's code) said of the user's function:
    the line of ``fn`` whose gradient holds what it refused."""
    return in_user_code(exc, "hessian: ", fn, info, restate=True)


def hvp(fn, primals, tangents, wrt=None, *, has_aux=False):
    """The Hessian-vector product ``H @ tangents`` of the scalar function ``fn`` at
    ``primals``: ``jvp(grad(fn, wrt=all), primals, tangents)[1]``, a tuple with one
    entry per primal (None for an integer or boolean primal). A tangent None is zero.
    ``has_aux=True``: ``fn`` returns ``(output, aux)`` (as for ``sg.grad``): the result
    is ``(products, aux)``, the aux ``fn``'s own value, carrying no derivative.
    ``wrt`` (positions or names, as in ``sg.grad``) restricts the gradient to those
    primals (the others' entries are None; their tangents still count): data such as
    a batch need not get a gradient of its own; such a primal's tangent that is all
    zeros counts as None (its terms are left out of the tangent program). A structured
    primal (dict, list, dataclass...) takes a tangent of its structure and gets its
    product in it.

    Example:
        >>> (Hv,) = sg.hvp(f, (x,), (v,))   # doctest: +SKIP
    """
    from srcgrad.jacobians import _wrt_positions
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"srcgrad.hvp: {len(primals)} primals but {len(tangents)} tangents")
    target = entry.variadic(fn)
    if target is not None:   # f(w, *xs): the function of len(primals) parameters
        fn = entry.fixed_arity(target, len(primals))
    if wrt is None:
        positions = tuple(k for k, p in enumerate(primals) if _differentiable(p))
    else:
        positions = tuple(_wrt_positions(fn, wrt)[0])
    if not positions:
        raise TypeError("srcgrad.hvp: no primal is a float scalar or array")
    for k in positions:   # a structure (pytree.py): float leaves only, as in sg.grad
        if pytree.is_node(primals[k]):
            call_values._check_differentiable(f"primals[{k}]", primals[k])
    if pytree.holds_data(primals):   # a gradient's code holds for arrays: its tower over the leaves
        from srcgrad import leaf_towers
        if leaf_towers.tower_of(fn) is not None:
            return leaf_towers.hvp(hvp, fn, primals, tangents, positions, has_aux)
    function, info = _gradient_of(fn, positions, primals, has_aux)
    # A primal outside ``wrt`` (data, a batch) usually comes with a zero tangent: none
    # at all lets forward mode leave out its terms (``dX @ W1``) instead of computing zeros.
    tangents = tuple(None if k not in positions and getattr(t, "ndim", 0)
                     and not numpy.any(t) else t for k, t in enumerate(tangents))
    try:
        products = _tangent_of(function, primals, tangents, has_aux)
    except SrcgradError as exc:
        if getattr(fn, "_srcgrad_gradient_of", None) is not None \
                and not getattr(fn, "_srcgrad_composed", False):   # an hvp's wrapper (nested.py)
            raise third_refusal(fn, "hessian: ") from None
        raise _refused(exc, fn, info) from None
    if has_aux:
        products, aux = products
    out = [None] * len(primals)
    for k, t in zip(positions, products):
        primal = primals[k]
        if pytree.is_node(primal):   # the adjoint's mirror, in the primal's structure
            out[k] = runtime.materialize(t, primal)
            continue
        out[k] = t if numpy.shape(t) == numpy.shape(primal) else numpy.broadcast_to(
            t, numpy.shape(primal)).copy()
        if numpy.ndim(primal) == 0 and not hasattr(primal, "dtype"):
            out[k] = float(out[k])
    return (tuple(out), aux) if has_aux else tuple(out)


def third_refusal(wrapper, prefix=""):
    """The refusal of differentiating ``wrapper`` (nested.gradient_function: a gradient
    whose adjoint is an hvp, as reverse mode could not read its code again) once more,
    said at the user's line and construct reverse mode refused (``_srcgrad_refusal``)."""
    inner = wrapper._srcgrad_gradient_of
    why = getattr(wrapper, "_srcgrad_refusal", None)
    where = (why.filename, why.lineno, why.col_offset, why.source_line) if why is not None \
        else (inner.__code__.co_filename, inner.__code__.co_firstlineno)
    because = f": {why.message}" if why is not None else ""
    return UnsupportedError(
        f"{prefix}a third derivative of {inner.__qualname__}: its second derivative is a "
        f"Hessian-vector product, not differentiated again, as reverse mode could not read its "
        f"gradient's code again{because}", *where,
        hint="Use finite differences of the second derivative.")


def hessian(fn, wrt=0, *, has_aux=False, chunk_size=None):
    """``hessian(fn, wrt)(*args)``: the Hessian of the scalar function ``fn`` by
    forward-over-reverse: the tangent program of its gradient run once with every basis
    vector of the input as a seed (a leading batch axis; ``chunk_size`` seeds per run,
    default 256), or one hvp per entry where that program has a statement without a
    batched tangent rule. Shape ``in.shape + in.shape``, for a tuple ``wrt`` the nested
    tuple ``H[i][j]`` of JAX. A pytree argument (dict, list, tuple, dataclass) gives
    JAX's nested structure: ``H[k1][k2]`` of shape ``leaf1.shape + leaf2.shape`` for a
    dict, ``H[i][k1][j][k2]`` with a tuple ``wrt`` (``nest_blocks``); its seeds are the basis over all its leaves at once, batched as an array's.
    ``has_aux=True``: ``fn`` returns ``(output, aux)``; the result is ``(hessian, aux)``,
    the aux ``fn``'s own value, carrying no derivative. An output that is not one number
    gives JAX's ``jacfwd(jacrev(fn))``, ``out.shape + in.shape + in.shape``
    (nested_jacobians.py); a Hessian of a Jacobian or Hessian (a third derivative) is
    refused."""
    from srcgrad.jacobians import _of_derivative, _wrt_positions, cut_columns, positional_arguments
    _of_derivative(fn, wrt, has_aux, "sg.hessian")   # of a Jacobian or Hessian: a third, refused
    target = entry.variadic(fn)
    if target is not None:   # one Hessian per call's arity (entry.ByArity)
        return entry.ByArity(target, functools.partial(hessian, wrt=wrt, has_aux=has_aux,
                                                       chunk_size=chunk_size))
    user = fn
    if callable(getattr(fn, "as_function", None)):   # a gradient (sg.grad): its code read again
        fn = fn.as_function(has_aux=has_aux and getattr(fn, "has_aux", False))
    elif not (inspect.isroutine(fn) and not inspect.isbuiltin(fn) or isinstance(fn, functools.partial)
              or entry.call_method(fn) is not None):
        fn = entry.entry_function(fn)   # a primitive (np.sin) as its one-line function, or refused

    @functools.wraps(fn)
    def hessian_fn(*args, **kwargs):
        try:
            return scalar_hessian(*args, **kwargs)
        except ValueError:   # the gradient's seed: no scalar output. JAX's jacfwd(jacrev(fn))
            out = fn(*args, **kwargs)
            if _scalar(out[0] if has_aux else out):
                raise
            return jacobians.VECTOR_HESSIAN(user, wrt, args, kwargs, has_aux)

    def scalar_hessian(*args, **kwargs):
        positions, many = _wrt_positions(fn, wrt)
        args = positional_arguments(fn, args, kwargs, "srcgrad.hessian")
        blocks, aux = hessian_blocks(fn, args, positions, chunk_size, has_aux)
        result = nest_blocks(blocks, args, positions, many, positions, many)
        return (result, aux) if has_aux else result

    hessian_fn.__srcgrad_derivative__ = "sg.hessian"   # not read again as source (parse.py)
    hessian_fn.__srcgrad_jacobian__ = jacobians.Derivative(hessian_fn, user, wrt, has_aux,
                                                           "sg.hessian", order=2)
    return hessian_fn


def _scalar(out):
    """Whether ``out`` is one number, which the gradient seeds with 1 (runtime.default_seed)."""
    return not pytree.is_node(out) and numpy.size(out) == 1


def hessian_blocks(fn, args, positions, chunk_size=None, has_aux=False):
    """``({((i, l), j): block}, aux)``: d/d ``args[j]`` of the gradient of each leaf ``l``
    of ``args[i]`` (``l`` None for an argument that is no structure), for every ``i`` and
    ``j`` in ``positions``; a block has ``args[j]``'s structure, of leaf shape
    ``leaf_i.shape + leaf_j.shape``."""
    from srcgrad.jacobians import cut_columns
    for k in positions:   # a structure (pytree.py): float leaves only, as in sg.grad
        if pytree.is_node(args[k]):
            call_values._check_differentiable(f"argument {k}", args[k])
    blocks, aux = {}, None
    runs = runtime.Runs(args)   # (the caller's lists and dicts: changed as by one call)
    args = runs.before
    for j in positions:   # column blocks: d/d args[j] of the gradient of every args[i]
        found = _batched_hessian_columns(fn, args, positions, j, chunk_size, has_aux, runs)
        if found is None:
            found = _hessian_columns(fn, args, positions, j, has_aux, runs)
        columns, aux = found
        for (i, l, y), c in zip(_entries(args, positions), columns):
            blocks[(i, l), j] = cut_columns(c, args[j], numpy.shape(y), y)
    runs.finish()
    return blocks, aux


def nest_blocks(blocks, args, outer, outer_many, inner, inner_many):
    """JAX's ``jacfwd(jacrev(f, outer), inner)`` layout of ``hessian_blocks``: the tuple
    over ``outer`` (for a tuple), each ``args[i]``'s structure, then in each of its leaves
    the tuple over ``inner`` (for a tuple) of ``args[j]``-structured blocks."""
    def cell(i, l):
        return tuple(blocks[(i, l), j] for j in inner) if inner_many else blocks[(i, l), inner[0]]

    def row(i):
        if not pytree.is_node(args[i]):
            return cell(i, None)
        return pytree.rebuild(args[i], iter([cell(i, l) for _, l, _ in _entries(args, (i,))]))

    return tuple(row(i) for i in outer) if outer_many else row(outer[0])


def _entries(args, positions):
    """``[(i, l, leaf)]``: each differentiated argument ``args[i]``, or each leaf ``l`` of
    a structured one, in order (``l`` None for an argument that is no structure)."""
    return [(i, l, y) for i in positions for l, y in
            (enumerate(pytree.tree_leaves(args[i])) if pytree.is_node(args[i])
             else [(None, args[i])])]


def _hessian_columns(fn, args, positions, j, has_aux=False, runs=None):
    """One hvp per basis vector of ``args[j]`` (over all the leaves of a structure): for
    each entry ``(i, l)`` of ``_entries`` in order, the columns ``(n,) + shape of args[i]
    (its leaf l)``, ``n`` the entries of ``args[j]``; and the aux of ``fn`` returning
    ``(output, aux)`` with ``has_aux`` (else None): ``(columns, aux)``."""
    from srcgrad.jacobians import array_module, basis_vector, n_entries
    entries = _entries(args, positions)
    xp = array_module(*(args[i] for i in positions))
    columns, aux = [[] for _ in entries], None
    for n in range(n_entries(args[j])):
        tangents = [None] * len(args)
        tangents[j] = basis_vector(args[j], n)
        products = hvp(fn, runs.next() if runs else args, tangents, wrt=tuple(positions),
                       has_aux=has_aux)
        if has_aux:
            products, aux = products
        for c, (i, l, _) in zip(columns, entries):
            p = products[i] if l is None else pytree.tree_leaves(products[i])[l]
            c.append(xp.asarray(p))
    columns = [xp.stack(c) if c else xp.zeros((0,) + numpy.shape(y))
               for c, (_, _, y) in zip(columns, entries)]
    if has_aux and aux is None:   # no entries: the aux from a call
        aux = fn(*args)[1]
    return columns, aux


def _batched_hessian_columns(fn, args, positions, j, chunk_size, has_aux=False, runs=None):
    """The columns of ``_hessian_columns`` from the batched tangent program of the
    gradient (transform/batching.py), the seeds the basis over every entry of ``args[j]``
    (all the leaves of a structure at once), ``chunk_size`` per run; None where it cannot
    be batched (the caller runs one hvp per seed, which refuses what forward mode cannot
    do)."""
    from srcgrad.jacobians import CHUNK, array_module, fit_batch, n_entries, structure_seeds
    from srcgrad.transform import batching
    if not (pytree.is_node(args[j]) or _differentiable(args[j])):
        return None
    size = n_entries(args[j])
    chunk = max(1, int(chunk_size or CHUNK))
    entries = _entries(args, positions)
    parts, aux = [[] for _ in entries], None
    try:
        function, _ = _gradient_of(fn, tuple(positions), args, has_aux)
        for start in range(0, size, chunk):
            stop = min(size, start + chunk)
            result = batching.run(function, runs.next() if runs else args, j,
                                  structure_seeds(args[j], start, stop), has_aux)
            if has_aux:
                aux = result[2]
            products = result[1]
            for r, i in enumerate(positions):
                leaves = _batched_leaves(products[r], args[i], stop - start) \
                    if pytree.is_node(args[i]) else [products[r]]
                for part, (_, _, y), t in zip([p for p, e in zip(parts, entries) if e[0] == i],
                                              [e for e in entries if e[0] == i], leaves):
                    part.append(fit_batch(t, numpy.shape(y)))
    except (batching.NotBatchable, SrcgradError):
        return None
    xp = array_module(*(args[i] for i in positions))
    columns = [xp.concatenate(p) if p else xp.zeros((0,) + numpy.shape(y))
               for p, (_, _, y) in zip(parts, entries)]
    if has_aux and aux is None:   # no entries: the aux from a call
        aux = fn(*args)[1]
    return columns, aux


def _batched_leaves(t, x, size):
    """The leaves ``(size,) + leaf.shape`` of the batched tangent ``t`` of the gradient of
    the structure ``x`` (its adjoint mirror, pytree.py): ``runtime.materialize`` with the
    batch axis moved last, where NumPy's broadcasting keeps it (a leaf's tangent that
    broadcasts to the leaf, as an unbatched one may). NotBatchable where an array in
    ``t`` has no batch axis."""
    from srcgrad.transform import batching
    for a in pytree.tree_leaves(t):
        if hasattr(a, "shape") and (numpy.ndim(a) == 0 or numpy.shape(a)[0] != size):
            raise batching.NotBatchable("a structured gradient's tangent without its batch axis")
    from srcgrad.jacobians import _seed_dtype, array_module
    xp = array_module(x)
    last = pytree.tree_map(lambda a: xp.moveaxis(a, 0, -1) if hasattr(a, "shape") else a, t)
    like = pytree.rebuild(x, iter([xp.zeros(numpy.shape(leaf) + (size,), _seed_dtype(leaf))
                                   for leaf in pytree.tree_leaves(x)]))
    return [xp.moveaxis(xp.asarray(leaf), -1, 0)
            for leaf in pytree.tree_leaves(runtime.materialize(last, like))]


jacobians.HESSIAN_BLOCKS = hessian_blocks, nest_blocks   # jacfwd(grad(f)) at structures
