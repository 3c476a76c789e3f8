"""Jacobians of Jacobians: ``jacfwd(jacrev(f))``, ``jacrev(jacfwd(f))``, ``jacrev(jacrev(f))``,
``jacfwd(jacfwd(f))``, and ``sg.hessian`` of a function with a non-scalar output.

The function ``sg.jacfwd``/``sg.jacrev`` returns assembles columns from runs of generated
programs: it is no source to read again. It carries what it differentiates instead
(``jacobians.Derivative``: the function, ``wrt``, ``has_aux``), and a Jacobian of it is
the second derivative of that function, as JAX defines it::

    jacX(jacY(f, wrt=a), wrt=b)(*args)[o][a][b] = d2 out[o] / d args[b] d args[a]

(``out.shape + a.shape + b.shape``), for output entry ``o`` the Hessian ``H[a][b]`` of
``phi(*args, w) = sum(out_leaf(f(*args)) * w)`` at the seed ``w = e_o``: ``phi`` is source
over ``f`` (``_phi``), and ``sg.hessian`` differentiates it forward-over-reverse, every
input entry in one batched run (hessians.py). Which of jacfwd/jacrev is outer or inner
does not change the result (as in JAX), only how JAX would compute it; the derivative
here is always the generated code's, never a difference quotient.

Layout (JAX's): the inner Jacobian's result outside (the output's structure, then the
tuple over ``a`` for a tuple ``wrt``, then each argument's structure), and inside each of
its leaves the outer Jacobian's (the tuple over ``b``, then the argument's structure).
For a scalar ``f`` and one ``wrt`` that is ``sg.hessian(f, wrt)``'s layout.

``sg.jvp`` of a Jacobian is its derivative along the tangents: one hvp of ``phi`` per
output entry (``jvp_of``).

Refused, at the user's function: a third derivative (a Jacobian or Hessian of one of
these, or a Hessian of a Jacobian), ``has_aux`` on one of the two Jacobians only, and an
output of a registered pytree class (``phi`` reads an output leaf by its path).
"""

import functools

import numpy

from srcgrad import caches, call_values, forward_api, jacobians, pytree
from srcgrad.codegen import loader
from srcgrad.entry import _identifier
from srcgrad.errors import UnsupportedError
from srcgrad.hessians import hessian_blocks
from srcgrad.jacobians import Derivative, positional_arguments

_phis = caches.LRU()   # (id(fn), params, path, has_aux) -> (fn, phi)


def _where(fn):
    """The file and first line of the user's ``fn`` (through a bound method or partial)."""
    for attr in ("fn", "__func__", "func"):   # a gradient, a bound method, a partial
        fn = getattr(fn, attr, None) or fn
    code = getattr(fn, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else (None, None)


def third_refusal(inner, api):
    """The refusal of ``api`` (``sg.jacfwd``, ``sg.jacrev``, ``sg.hessian``) of ``inner``'s
    function when that makes a third derivative, saying what computes one."""
    name = getattr(inner.original, "__qualname__", "f")
    made = f"{inner.api}({name})" + ")" * inner.api.count("(")
    return UnsupportedError(
        f"{api} of {made}: a third derivative of {name}; the function {made} returns is not "
        f"source srcgrad can differentiate again (it assembles the derivative from runs of "
        f"generated programs)",
        *_where(inner.original),
        hint="Differentiate code instead: sg.jacfwd(sg.jacrev(sg.grad(f))) and "
             "sg.hessian(sg.grad(f)) are the third derivative of a scalar f; "
             "sg.grad(sg.grad(sg.grad(f))) and sg.hvp(sg.grad(f), ...) go to any order.")


def jacobian_of(inner, wrt, has_aux, api):
    """``api(f_inner, wrt, has_aux)`` for ``f_inner`` a function ``sg.jacfwd``/``sg.jacrev``
    made (``inner`` its Derivative): the second derivative of ``inner.original``, JAX's
    layout."""
    if inner.order > 1 or api == "sg.hessian":
        raise third_refusal(inner, api)
    _check_aux(inner, has_aux, api)

    @functools.wraps(inner.made)
    def second_fn(*args, **kwargs):
        return second_derivative(inner.original, inner.wrt, wrt, args, kwargs, has_aux, api)

    second_fn.__srcgrad_derivative__ = f"{api}({inner.api}"   # not read as source (parse.py)
    second_fn.__srcgrad_jacobian__ = Derivative(second_fn, inner.original, wrt, has_aux,
                                                f"{api}({inner.api}", order=2)
    return second_fn


def _check_aux(inner, has_aux, api):
    if bool(inner.has_aux) != bool(has_aux):
        raise TypeError(
            f"srcgrad: {api}(..., has_aux={has_aux}) of {inner.api}(f, has_aux={inner.has_aux}): "
            f"give both Jacobians has_aux=True (the result is (jacobian, aux)) or neither")


def second_derivative(original, inner_wrt, outer_wrt, args, kwargs, has_aux, api):
    """``jacX(jacY(original, wrt=inner_wrt), wrt=outer_wrt)(*args, **kwargs)`` (with
    ``has_aux``: ``(tensor, aux)``): for each output leaf and entry, the Hessian blocks
    of ``_phi`` at that entry's seed, stacked into JAX's layout."""
    fn = jacobians._readable(original, has_aux)   # its parameters, as the Jacobians read them
    callee = fn if callable(getattr(original, "as_function", None)) else original
    inner, many_a = jacobians._wrt_positions(fn, inner_wrt)
    outer, many_b = jacobians._wrt_positions(fn, outer_wrt)
    args = positional_arguments(fn, args, kwargs, f"srcgrad.{api[3:]}")
    positions = tuple(sorted(set(inner) | set(outer)))
    for k in positions:   # float leaves only, as in sg.grad
        if pytree.is_node(args[k]):
            call_values._check_differentiable(f"argument {k}", args[k])
    out = fn(*args)
    out, aux = out if has_aux else (out, None)
    leaves = jacobians.output_leaves(fn, out)
    paths = _paths(fn, out)
    xp = jacobians.array_module(out, *(args[k] for k in positions))
    per_leaf = []
    for path, leaf in zip(paths, leaves):
        phi = _phi(callee, _params(fn), path, has_aux)
        dtype = jacobians._seed_dtype(leaf)
        entries = []
        for e in range(jacobians._size(leaf)):
            w = xp.zeros(numpy.shape(leaf), dtype)
            w.reshape(-1)[e] = 1.0
            entries.append(hessian_blocks(phi, tuple(args) + (w if numpy.ndim(leaf) else float(w),),
                                          positions)[0])
        per_leaf.append(_leaf_tensor(xp, entries, leaf, args, positions, inner, many_a,
                                     outer, many_b))
    tensor = pytree.rebuild(out, iter(per_leaf)) if pytree.is_node(out) else per_leaf[0]
    return (tensor, aux) if has_aux else tensor


def _leaves(x):
    return pytree.tree_leaves(x) if pytree.is_node(x) else [x]


def _leaf_tensor(xp, entries, leaf, args, positions, inner, many_a, outer, many_b):
    """The part of the second derivative for one output ``leaf``: ``entries[e]`` the
    Hessian blocks of its entry ``e`` (``hessians.hessian_blocks``: keyed by the row
    argument's leaf and the column argument, each ``args[j]``-structured), as the
    tuple over ``inner`` of its argument's structure of the tuple over ``outer`` of its
    argument's structure of blocks ``leaf.shape + a_leaf.shape + b_leaf.shape``."""
    def block(i, l1, j, l2):
        a, b = args[i], args[j]
        n_b = len(_leaves(b))
        row_leaf = l1 if pytree.is_node(a) else None
        parts = [_leaves(h[(i, row_leaf), j])[l2] for h in entries]
        shape = numpy.shape(_leaves(a)[l1]) + numpy.shape(_leaves(b)[l2])
        dtype = numpy.result_type(jacobians._seed_dtype(leaf), jacobians.block_dtype(
            _leaves(a)[l1], _leaves(b)[l2]))
        stacked = xp.stack([xp.asarray(p) for p in parts]) if parts else xp.zeros((0,) + shape)
        return stacked.reshape(numpy.shape(leaf) + shape).astype(dtype, copy=False)

    def columns(i, l1):   # the outer Jacobian of entry l1 of args[i]: over ``outer``
        def one(j):
            b = args[j]
            blocks = [block(i, l1, j, l2) for l2 in range(len(_leaves(b)))]
            return pytree.rebuild(b, iter(blocks)) if pytree.is_node(b) else blocks[0]
        return tuple(one(j) for j in outer) if many_b else one(outer[0])

    def row(i):   # the inner Jacobian's block for args[i]: its structure
        a = args[i]
        parts = [columns(i, l1) for l1 in range(len(_leaves(a)))]
        return pytree.rebuild(a, iter(parts)) if pytree.is_node(a) else parts[0]

    return tuple(row(i) for i in inner) if many_a else row(inner[0])


def _params(fn):
    """The positional parameters of ``fn``: those ``wrt`` counts."""
    from srcgrad.transform.batching import _signature
    return [p.name for p in _signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _phi(fn, params, path, has_aux):
    """``phi(*params, w) = sum(fn(*params)<path> * w)``: the output leaf at ``path``
    contracted with the seed ``w``, source srcgrad differentiates twice (the call of
    ``fn``, the user's callable, read as any call in a differentiated function). Made
    once per leaf."""
    key = (id(fn), tuple(params), path, bool(has_aux))
    found = _phis.get(key)
    if found is not None and found[0] is fn:
        return found[1]
    names = {}
    for role in ("f", "np", "out", "w"):
        name = f"_sg_{role}"
        while name in params:
            name += "_"
        names[role] = name
    fname = _identifier(f"phi_{getattr(fn, '__name__', 'f')}")
    taken = "[0]" if has_aux else ""
    source = (f"def {fname}({', '.join(params + [names['w']])}):\n"
              f"    {names['out']} = {names['f']}({', '.join(params)}){taken}\n"
              f"    return {names['np']}.sum({names['out']}{path} * {names['w']})\n")
    (function,), _, _ = loader.load(source, [fname], {}, {},
                                    {names["f"]: fn, names["np"]: numpy}, hint=fname)
    _phis[key] = (fn, function)
    return function


def _paths(fn, out):
    """The path of each leaf of the output ``out`` as source (``['w'][0].b``), in
    ``pytree.tree_leaves`` order; an output whose leaf cannot be read so is refused."""
    if not pytree.is_node(out):
        return [""]
    paths = []
    for path, _ in pytree.leaves_with_paths(out, ""):
        paths.append(path)
    keys = [k for node in _nodes(out) if isinstance(node, dict) for k in node]
    if any(type(k) not in (str, int) for k in keys) or any(".<" in p for p in paths):
        raise UnsupportedError(
            f"a Jacobian of a Jacobian of {getattr(fn, '__qualname__', fn)}: an output leaf is "
            f"held by a registered class or under a dict key that is not a str or int",
            *_where(fn), hint="Return a dict with string keys, a tuple or a list of arrays.")
    return paths


def _nodes(value):
    """``value`` and every structure inside it."""
    if not pytree.is_node(value):
        return []
    return [value] + [n for _, child in pytree.children(value) for n in _nodes(child)]


def jvp_of(made, primals, tangents, has_aux):
    """``sg.jvp(J, primals, tangents)`` for ``J = sg.jacfwd/jacrev(f, wrt=a)`` (``made`` its
    Derivative): ``(J(*primals), dJ)`` with ``dJ`` the derivative of ``J`` along ``tangents``
    in ``J``'s layout, for each output entry the hvp of ``_phi`` (forward over reverse, no
    second-derivative tensor built); with ``has_aux`` ``(J, dJ, aux)``."""
    from srcgrad.hessians import hvp
    if made.order > 1:
        raise third_refusal(made, "sg.jvp")
    _check_aux(made, has_aux, "sg.jvp")
    fn = jacobians._readable(made.original, has_aux)
    callee = fn if callable(getattr(made.original, "as_function", None)) else made.original
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"srcgrad.jvp: {len(primals)} primals but {len(tangents)} tangents")
    args = positional_arguments(fn, primals, {}, "srcgrad.jvp")
    tangents += (None,) * (len(args) - len(tangents))   # a default's parameter: none
    inner, many_a = jacobians._wrt_positions(fn, made.wrt)
    value = made.made(*args)
    out = fn(*args)
    out = out[0] if has_aux else out
    leaves = jacobians.output_leaves(fn, out)
    xp = jacobians.array_module(out, *(args[k] for k in inner))
    per_leaf = []
    for path, leaf in zip(_paths(fn, out), leaves):
        phi = _phi(callee, _params(fn), path, has_aux)
        products = []
        for e in range(jacobians._size(leaf)):
            w = xp.zeros(numpy.shape(leaf), jacobians._seed_dtype(leaf))
            w.reshape(-1)[e] = 1.0
            products.append(hvp(phi, args + (w if numpy.ndim(leaf) else float(w),),
                                tangents + (None,), wrt=tuple(inner)))

        def row(i):   # d J[leaf][args[i]]: in the structure of args[i]
            a = args[i]
            blocks = []
            for l, x in enumerate(_leaves(a)):
                parts = [xp.asarray(_leaves(p[i])[l]) for p in products]
                stacked = xp.stack(parts) if parts else xp.zeros((0,) + numpy.shape(x))
                blocks.append(stacked.reshape(numpy.shape(leaf) + numpy.shape(x))
                              .astype(jacobians.block_dtype(leaf, x), copy=False))
            return pytree.rebuild(a, iter(blocks)) if pytree.is_node(a) else blocks[0]

        per_leaf.append(tuple(row(i) for i in inner) if many_a else row(inner[0]))
    tangent = pytree.rebuild(out, iter(per_leaf)) if pytree.is_node(out) else per_leaf[0]
    return (value[0], tangent, value[1]) if has_aux else (value, tangent)


def vector_hessian(fn, wrt, args, kwargs, has_aux):
    """``sg.hessian(fn, wrt)(*args)`` of a function whose output is not one number: JAX's
    ``jacfwd(jacrev(fn))``, ``out.shape + in.shape + in.shape``."""
    return second_derivative(fn, wrt, wrt, args, kwargs, has_aux, "sg.hessian")


jacobians.SECOND = jacobian_of   # a Jacobian of a Jacobian (jacobians.py)
jacobians.VECTOR_HESSIAN = vector_hessian   # sg.hessian of a non-scalar output (hessians.py)
forward_api.OF_JACOBIAN = jvp_of   # sg.jvp of a Jacobian (forward_api.py)
