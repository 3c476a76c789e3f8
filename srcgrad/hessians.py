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
  basis vector of the input as a seed (transform/batching.py: a leading batch axis),
  or one hvp per basis vector where that program cannot be batched; shape
  ``in.shape + in.shape``, for a tuple ``wrt`` JAX's nested tuple ``H[i][j]``
  (d/d wrt[j] of the gradient for wrt[i]).

A gradient that forward mode cannot read again is refused, naming the user's function
and the line whose gradient calls what has no tangent rule; a custom Function whose
backward is ``once_differentiable`` is refused as such.
"""

import functools
import threading

import numpy

from srcgrad import call_values, pytree, runtime
from srcgrad.codegen.refusals import in_user_code
from srcgrad.errors import SrcgradError, UnsupportedError

_grads = {}
_lock = threading.Lock()


def _differentiable(value):
    if isinstance(value, (bool, int, numpy.integer, numpy.bool_)):
        return False
    dtype = getattr(value, "dtype", None)
    return dtype is None or dtype.kind == "f"


def _gradient_of(fn, positions, args):
    """The composed gradient of ``fn`` w.r.t. ``positions`` for ``args``, as forward mode
    reads it (pipeline.compose_gradient with ``for_transform``), kept with the compile."""
    from srcgrad.api import grad
    from srcgrad import pipeline
    key = (fn, positions)
    g = _grads.get(key)
    if g is None:
        with _lock:
            g = _grads.setdefault(key, grad(fn, wrt=positions))
    compiled = g.compiled_for(args, {})
    info = compiled.load[0]
    pipeline.refuse_once_differentiable(compiled, "hessian: ")
    function = getattr(compiled, "for_transform", None)
    if function is None:
        if compiled.gradient_forward is None:
            raise UnsupportedError(
                f"hessian: the gradient of {fn.__qualname__} is not one function srcgrad can "
                f"differentiate again (several outputs, has_aux or fuse=True)",
                info.filename, info.first_lineno)
        function = compiled.for_transform = pipeline.compose_gradient(
            compiled, True, only_gradients=True, for_transform=True)
    return function, info


def _tangent_of(function, primals, tangents):
    """``jvp(function, primals, tangents)[1]`` by a tangent program that returns the
    tangent only: the gradient's own value (``dW1 = X.T @ g``) is not computed where no
    tangent reads it."""
    from srcgrad import forward_api
    return forward_api.run(function, primals, tangents, values=False)[1]


def _refused(exc, fn, info):
    """``exc`` (forward mode refusing the gradient's code) said of the user's function:
    the line of ``fn`` whose gradient holds what it refused."""
    return in_user_code(exc, "hessian: ", fn, info, restate=True)


def hvp(fn, primals, tangents, wrt=None):
    """The Hessian-vector product ``H @ tangents`` of the scalar function ``fn`` at
    ``primals``: ``jvp(grad(fn, wrt=all), primals, tangents)[1]``, a tuple with one
    entry per primal (None for an integer or boolean primal). A tangent None is zero.
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
    if wrt is None:
        positions = tuple(k for k, p in enumerate(primals) if _differentiable(p))
    else:
        positions = tuple(_wrt_positions(fn, wrt)[0])
    if not positions:
        raise TypeError("srcgrad.hvp: no primal is a float scalar or array")
    for k in positions:   # a structure (pytree.py): float leaves only, as in sg.grad
        if pytree.is_node(primals[k]):
            call_values._check_differentiable(f"primals[{k}]", primals[k])
    function, info = _gradient_of(fn, positions, primals)
    # A primal outside ``wrt`` (data, a batch) usually comes with a zero tangent: none
    # at all lets forward mode leave out its terms (``dX @ W1``) instead of computing zeros.
    tangents = tuple(None if k not in positions and getattr(t, "ndim", 0)
                     and not numpy.any(t) else t for k, t in enumerate(tangents))
    try:
        products = _tangent_of(function, primals, tangents)
    except SrcgradError as exc:
        if getattr(fn, "_srcgrad_gradient_of", None) is not None \
                and not getattr(fn, "_srcgrad_composed", False):   # an hvp's wrapper (nested.py)
            raise third_refusal(fn, "hessian: ") from None
        raise _refused(exc, fn, info) from None
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
    return tuple(out)


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


def hessian(fn, wrt=0, *, chunk_size=None):
    """``hessian(fn, wrt)(*args)``: the Hessian of the scalar function ``fn`` by
    forward-over-reverse: the tangent program of its gradient run once with every basis
    vector of the input as a seed (a leading batch axis; ``chunk_size`` seeds per run,
    default 256), or one hvp per entry where that program has a statement without a
    batched tangent rule. Shape ``in.shape + in.shape``, for a tuple ``wrt`` the nested
    tuple ``H[i][j]`` of JAX. A pytree argument (dict, list, tuple, dataclass) gives
    JAX's nested structure: ``H[k1][k2]`` of shape ``leaf1.shape + leaf2.shape`` for a
    dict, by one hvp per entry (its seeds are not batched)."""
    from srcgrad.jacobians import _wrt_positions
    from srcgrad.transform.batching import _signature
    if callable(getattr(fn, "as_function", None)):   # a gradient (sg.grad): its code read again
        fn = fn.as_function()

    @functools.wraps(fn)
    def hessian_fn(*args):
        positions, many = _wrt_positions(fn, wrt)
        signature = _signature(fn).bind(*args)
        signature.apply_defaults()
        args = tuple(signature.arguments.values())
        trees = {k: pytree.is_node(args[k]) for k in positions}
        for k in positions:   # a structure (pytree.py): float leaves only, as in sg.grad
            if trees[k]:
                call_values._check_differentiable(f"argument {k}", args[k])
        # The entries: (position, leaf) pairs, leaf None for an array or float argument.
        units = {k: [(k, n, leaf) for n, leaf in enumerate(pytree.tree_leaves(args[k]))]
                 if trees[k] else [(k, None, args[k])] for k in positions}
        everything = [u for k in positions for u in units[k]]
        blocks = {}
        for j in positions:
            for unit in units[j]:
                columns = None if any(trees.values()) else \
                    _batched_hessian_columns(fn, args, positions, j, chunk_size)
                if columns is None:
                    columns = _hessian_columns(fn, args, positions, j, unit[1])
                _, m, x = unit
                shape = numpy.shape(x)
                n = int(numpy.prod(shape, dtype=int))
                for (i, l, y), c in zip(everything, columns):
                    rows = numpy.shape(y)
                    block = numpy.moveaxis(numpy.asarray(c, dtype=float).reshape((n,) + rows), 0, -1)
                    blocks[(i, l), (j, m)] = block.reshape(rows + shape)

        def pair(i, j):   # JAX's jacfwd(jacrev(f)): the structure of args[i] outside, args[j] in
            def inner(l):
                if not trees[j]:
                    return blocks[(i, l), (j, None)]
                return pytree.rebuild(args[j], iter([blocks[(i, l), (j, m)] for _, m, _ in units[j]]))
            if not trees[i]:
                return inner(None)
            return pytree.rebuild(args[i], iter([inner(l) for _, l, _ in units[i]]))

        if many:
            return tuple(tuple(pair(i, j) for j in positions) for i in positions)
        return pair(positions[0], positions[0])

    return hessian_fn


def _hessian_columns(fn, args, positions, j, m=None):
    """One hvp per basis vector of ``args[j]`` (of its leaf ``m`` for a structure, the
    other leaves' tangents zero): for each ``i`` in ``positions`` (each leaf ``l`` of a
    structure ``args[i]``) in order, the columns ``(size,) + shape of args[i] (leaf l)``."""
    x = args[j] if m is None else pytree.tree_leaves(args[j])[m]
    shape = numpy.shape(x)
    entries = [(i, l, y) for i in positions for l, y in
               (enumerate(pytree.tree_leaves(args[i])) if pytree.is_node(args[i])
                else [(None, args[i])])]
    columns = [[] for _ in entries]
    for n in range(int(numpy.prod(shape, dtype=int))):
        e = numpy.zeros(shape, dtype=getattr(x, "dtype", numpy.float64))
        e.flat[n] = 1.0
        e = e if shape else 1.0
        tangents = [None] * len(args)
        if m is None:
            tangents[j] = e
        else:
            leaves = pytree.tree_leaves(args[j])
            tangents[j] = pytree.rebuild(args[j], iter([e if q == m else None
                                                        for q in range(len(leaves))]))
        products = hvp(fn, args, tangents, wrt=tuple(positions))
        for c, (i, l, _) in zip(columns, entries):
            p = products[i] if l is None else pytree.tree_leaves(products[i])[l]
            c.append(numpy.asarray(p, dtype=float))
    return [numpy.stack(c) if c else numpy.zeros((0,) + numpy.shape(y))
            for c, (_, _, y) in zip(columns, entries)]


def _batched_hessian_columns(fn, args, positions, j, chunk_size):
    """The columns of ``_hessian_columns`` from the batched tangent program of the
    gradient (transform/batching.py), all seeds at once; None where it cannot be batched
    (the caller runs one hvp per seed, which refuses what forward mode cannot do)."""
    from srcgrad.jacobians import CHUNK, _seeds, fit_batch
    from srcgrad.transform import batching
    if not _differentiable(args[j]):
        return None
    size = int(numpy.prod(numpy.shape(args[j]), dtype=int))
    chunk = max(1, int(chunk_size or CHUNK))
    try:
        function, _ = _gradient_of(fn, tuple(positions), args)
        parts = []
        for start in range(0, size, chunk):
            _, products = batching.run(function, args, j, _seeds(args[j], start, min(size, start + chunk)))
            parts.append(products)
    except (batching.NotBatchable, SrcgradError):
        return None
    columns = []
    for r, i in enumerate(positions):
        full = (0,) + numpy.shape(args[i])
        pieces = [fit_batch(p[r], full[1:]) for p in parts]
        columns.append(numpy.concatenate(pieces) if pieces else numpy.zeros(full))
    return columns
