"""Forward mode: ``sg.jvp`` and the tangent program ``sg.source(f, mode="jvp")`` shows.

``jvp(f, primals, tangents)`` runs the tangent program of ``f`` (transform/forward.py),
compiled once per function, per set of arguments that carry a tangent, and per
compile options, and kept like the gradient (its guard says when it may be reused).
The Jacobians built on it and on the reverse mode are in jacobians.py.

``sg.hvp``/``sg.hessian`` (hessians.py) run it on a generated gradient; the tangents
of the ``rt.*`` helpers such code calls are in rules/jvp_runtime.py.

A structured primal (dict, list, tuple, dataclass, namedtuple, registered class:
pytree.py) takes a tangent of its structure, and the output's tangent has the output's
structure (``sg.jvp(loss, (params, x), (dparams, zeros))``). An integer or boolean
primal carries no tangent: its tangent is None or zero, and a nonzero one is refused
as ``sg.grad`` refuses differentiating with respect to it (call_values.py).

``has_aux=True``: ``f`` returns ``(output, aux)``; the front end splits the aux off
(transform/aux.py, as for ``sg.grad``), it carries no tangent, and the program returns
``(output, tangent, aux)``.

Not yet: tangents of complex values.
"""

import functools
import inspect
import threading
import warnings
from dataclasses import dataclass, field

import gast
import numpy

from srcgrad import caches, call_values, entry, pipeline, pytree, rules
from srcgrad.codegen import tracebacks
from srcgrad.codegen.refusals import in_user_code
from srcgrad.errors import SrcgradError, located_at, matrix_refusal
from srcgrad.analysis.ranks import attribute_matrix
from srcgrad.runtime.arrays import namespace
from srcgrad.templates import name
from srcgrad.transform import forward, forward_program, structure_parts


@dataclass
class CompiledJVP:
    """A compiled tangent program: ``function(*params, *tangents of active params)``
    returns ``(out, tangent_out)``."""

    function: object
    source: str
    params: tuple
    active: tuple              # the parameters that carry a tangent
    guard: object = field(default=None, repr=False)


_cache = caches.LRU()   # cache_key -> CompiledJVP, the most recently used kept
_lock = threading.Lock()


def compile_jvp(fn, active, options=None, values=True, has_aux=False, classes=None):
    """The tangent program of ``fn`` for tangents of the parameters named in ``active``
    (``values=False``: it returns None for the value, and computes only what the
    tangent needs; hessians.py's hvp). ``has_aux``: ``fn`` returns ``(output, aux)``
    and the program ``(output, tangent, aux)``; the aux carries no tangent. ``classes``:
    parameter -> the class of the dataclass or list it holds (``p.loss(x)`` is that class's
    method, as in reverse mode: structure_parts.argument_statics)."""
    static = structure_parts.value_statics(classes or {})
    f = forward_program.front(fn, active, options, has_aux, static=static)
    transformer = forward.ForwardAD(f.ctx.info, f.act.active, f.ctx.namer, f.written,
                                    f.act.sequences, f.kind_map, wrt=f.names, values=values,
                                    aux=f.ctx.aux, bindings=f.ctx.bindings)
    tangent_params = [transformer.d(n) for n in f.names]
    body = forward_program.prologue(f, transformer) + transformer.visit_block(f.node.body)
    function, source, guard = forward_program.load(
        fn, f, body, tangent_params, f"{f.node.name}_jvp",
        lambda body: transformer.finish(body, f.ctx.user_locals))
    return CompiledJVP(function, source, f.params, f.names, guard)


def cache_key(fn, active, *extra):
    """What a compiled tangent program is kept under: ``fn``'s code and what it reads,
    the parameters with tangents, the options and rules, and ``extra``."""
    return (fn.__code__, tuple(id(c) for c in fn.__closure__ or ()), id(fn.__globals__),
            id(fn.__defaults__), id(fn.__kwdefaults__), frozenset(active),
            pipeline.DEFAULT_OPTIONS, rules.VERSION[0]) + extra


def _compiled(fn, active, values=True, has_aux=False, classes=None):
    options = pipeline.DEFAULT_OPTIONS
    classes = classes or {}
    key = cache_key(fn, active, tuple(sorted(classes.items())), values, has_aux)
    found = _cache.get(key)
    if found is None or not found.guard.holds(fn):
        with _lock:
            found = _cache.get(key)
            if found is None or not found.guard.holds(fn):
                try:
                    found = _cache[key] = compile_jvp(fn, active, options, values=values,
                                                      has_aux=has_aux, classes=classes)
                except SrcgradError as exc:   # in a gradient srcgrad generated: the user's line
                    raise in_user_code(exc, "jvp of a gradient: ") from None
    return found


def _tangent_for(name, primal, tangent):
    """The tangent the tangent program gets for ``primal`` (None: it carries none).

    A structure (dict, list, tuple, dataclass, namedtuple, registered class: pytree.py)
    takes a tangent of the same structure (pytree.paired_leaves; None for a part that
    is zero), rebuilt as the primal's own structure with each leaf's tangent checked by
    ``_carries_tangent``; an integer leaf's (zero) tangent becomes a float zero."""
    kind = type(primal)
    if kind is type(tangent) and (kind is float or kind is numpy.ndarray and primal.dtype.kind == "f"
                                  and tangent.dtype == primal.dtype and tangent.shape == primal.shape):
        return tangent   # the common case, checked
    if not pytree.is_node(primal) or primal is None:
        return _as_tangent(tangent, primal) if _carries_tangent(primal, tangent, name) else None
    if tangent is None:
        return None
    leaves, carried = [], False
    for path, leaf, t in pytree.paired_leaves(primal, tangent, name, "tangent"):
        if _carries_tangent(leaf, t, path):
            leaves.append(_as_tangent(t, leaf))
            carried = True
        else:
            leaves.append(_zero_tangent(leaf))
    return pytree.rebuild(primal, iter(leaves)) if carried else None


def _zero_tangent(leaf):
    if leaf is None or isinstance(leaf, (str, bytes)):
        return leaf
    if numpy.ndim(leaf) == 0 and not hasattr(leaf, "dtype"):
        return 0.0
    dtype = getattr(leaf, "dtype", None)
    return numpy.zeros(numpy.shape(leaf), dtype if dtype is not None and dtype.kind == "f"
                       else numpy.float64)


def _carries_tangent(primal, tangent, name="x"):
    """Whether the leaf ``primal`` carries ``tangent`` (None: no). An integer or boolean
    primal has no derivative: its tangent must be None or zero (JAX asks for a float0
    zero); a nonzero one is refused with ``sg.grad``'s message (call_values.py), as is a
    tangent for a value that is not a float or a float array, or of another shape."""
    if isinstance(primal, numpy.matrix):
        raise matrix_refusal(f"the primal {name!r}")
    if attribute_matrix(primal):
        raise matrix_refusal(f"an attribute of the primal {name!r}")
    if isinstance(primal, complex) or getattr(getattr(primal, "dtype", None), "kind", "") == "c":
        raise TypeError("srcgrad.jvp: complex primals are not supported by forward mode yet")
    if tangent is None:
        return False
    if pytree.is_node(tangent):
        raise ValueError(f"srcgrad.jvp: the tangent of {name!r} is a {type(tangent).__name__} "
                         f"but the primal is a {type(primal).__name__}: a tangent has its "
                         f"primal's structure")
    tdtype = getattr(tangent, "dtype", None)
    if tdtype is None and _numeric(tangent):
        tdtype = numpy.asarray(tangent).dtype
    if getattr(tdtype, "kind", None) not in ("b", "i", "u", "f"):
        raise TypeError(f"srcgrad.jvp: the tangent of {name!r} is a "
                        f"{getattr(tangent, 'dtype', type(tangent).__name__)}, not a real "
                        f"number or array")
    integral = isinstance(primal, (bool, int, numpy.integer, numpy.bool_)) or \
        getattr(getattr(primal, "dtype", None), "kind", "") in "biu" and hasattr(primal, "dtype")
    if numpy.shape(primal) != numpy.shape(tangent) and not (integral and numpy.ndim(tangent) == 0):
        raise ValueError(f"srcgrad.jvp: a tangent of shape {numpy.shape(tangent)} for "
                         f"{name!r} of shape {numpy.shape(primal)}")
    if integral:
        if not numpy.any(tangent):
            return False   # the zero tangent of an integer: it carries none
        try:
            call_values._check_differentiable(name, primal)
        except TypeError as exc:
            raise TypeError(f"srcgrad.jvp: a nonzero tangent for {name!r}: "
                            + str(exc).removeprefix("srcgrad: ")
                            + " Its tangent must be None or zero.") from None
    elif not (isinstance(primal, float) or getattr(primal, "dtype", None) is not None):
        call_values._check_differentiable(name, primal)
        raise TypeError(f"srcgrad.jvp: {name!r} is a {type(primal).__name__}, not a float or "
                        f"an array: it cannot carry a tangent (pass None)")
    return True


def _numeric(value):
    return isinstance(value, (bool, int, float, numpy.number, numpy.bool_)) or \
        getattr(value, "dtype", None) is not None


def _bound(fn, primals):
    signature = inspect.signature(fn)
    bound = signature.bind(*primals)
    bound.apply_defaults()
    return bound


def jvp(fn, primals, tangents, *, has_aux=False, jit=False):
    """``(fn(*primals), J @ tangents)``: the value and the directional derivative along
    ``tangents`` (one per primal; None for a primal that carries none), by forward mode.
    ``has_aux=True``: ``fn`` returns ``(output, aux)``; the result is ``(output,
    tangent of output, aux)`` as JAX's, the aux computed by ``fn`` and carrying no tangent.
    A structured primal (dict, list, tuple, dataclass...) takes a tangent of its
    structure; the output's tangent has the output's structure. An integer or boolean
    primal's tangent is None or zero (a nonzero one raises TypeError).

    ``jit``: run the tangent program compiled with Numba (srcgrad/jit/, as ``grad``'s).

    Example:
        >>> out, t = sg.jvp(np.sin, ...)   # doctest: +SKIP
        >>> out, t = sg.jvp(f, (x, W), (dx, np.zeros_like(W)))
        >>> out, t = sg.jvp(loss, (params, x), (dparams, None))   # params a dict of arrays
        >>> out, t, aux = sg.jvp(loss_and_accuracy, (params,), (dparams,), has_aux=True)
    """
    made = getattr(fn, "__srcgrad_jacobian__", None)
    if made is not None and getattr(made, "made", None) is fn:   # sg.jacrev(f): f's 2nd derivative
        return OF_JACOBIAN(made, primals, tangents, has_aux)
    if pytree.holds_data(primals):   # a gradient (or its composed code) at structures: an hvp
        gradient = fn if callable(getattr(fn, "as_function", None)) else getattr(
            fn, "_srcgrad_composed_from", None)
        if gradient is not None:
            return OF_GRADIENT(gradient, primals, tangents, has_aux)
    return run(fn, primals, tangents, jit=jit, has_aux=has_aux)


OF_JACOBIAN = None   # sg.jvp of a function sg.jacfwd/jacrev made, set by srcgrad.nested_jacobians
OF_GRADIENT = None   # sg.jvp of sg.grad(f) at structures (an hvp), set by srcgrad.nested


def run(fn, primals, tangents, values=True, jit=False, has_aux=False):
    """``jvp``; with ``values=False`` the program returns the tangent only (its value
    entry is not computed where no tangent reads it: hvp's ``dW1 = X.T @ g``)."""
    primals, tangents = tuple(primals), tuple(tangents)
    target = entry.variadic(fn)
    if target is not None:   # f(w, *xs): the function of len(primals) parameters
        fn = entry.fixed_arity(target, len(primals))
    user = None   # the user's function, where fn is a gradient read again
    if callable(getattr(fn, "as_function", None)):   # a gradient (sg.grad): its code read again
        user = getattr(fn, "fn", None)
        fn = fn.as_function(has_aux=has_aux and getattr(fn, "has_aux", False))
    else:   # a bound method, a partial, a decorated function: as sg.grad reads them
        fn = entry.readable(fn)
    if len(primals) != len(tangents):
        raise ValueError(f"srcgrad.jvp: {len(primals)} primals but {len(tangents)} tangents")
    bound = _bound(fn, primals)
    params = list(bound.arguments)
    given = dict.fromkeys(params)   # a default's parameter carries no tangent
    try:
        given.update((p, _tangent_for(p, primal, tangent))
                     for p, primal, tangent in zip(params, primals, tangents))
    except SrcgradError as exc:   # (a numpy.matrix primal)
        raise located_at(exc, fn) from None
    compiled = _compiled(fn, [p for p in params if given[p] is not None], values, has_aux,
                         structure_parts.classes_of(bound.arguments))
    args = [bound.arguments[p] for p in compiled.params]
    args += [given[p] for p in compiled.active]
    if jit:
        from srcgrad import jit as _jit
        if not has_aux:
            return _jit.jvp(fn, compiled, args, user)
        warnings.warn(f"srcgrad jit: jvp with has_aux=True of {fn.__qualname__} is not compiled; "
                      f"running the NumPy tangent program", _jit.JitFallbackWarning, stacklevel=3)
    try:   # free until something raises
        return _tangent_dtypes(compiled.function(*args), values)
    except Exception as exc:
        tracebacks.locate(exc)   # the user's line after each generated frame
        if isinstance(exc, SrcgradError):   # refused by a gradient srcgrad generated: its line
            mapped = in_user_code(exc, "jvp of a gradient: ")
            if mapped is not exc:
                raise mapped from None
        raise


def _tangent_dtypes(result, values):
    """``(value, tangent, ...)`` with each float array tangent in its value's float dtype, as
    a gradient is in its input's (call_values.py): a rule's weights in float64 (``0.5 *
    (x1 == x2)``) would otherwise make a float32 function's tangent float64."""
    if not values or type(result) is not tuple or len(result) < 2:
        return result
    value, tangent = result[0], result[1]
    if pytree.is_node(value) or pytree.is_node(tangent):
        values_, tangents = pytree.tree_leaves(value), pytree.tree_leaves(tangent)
        if len(values_) != len(tangents) or not pytree.is_node(tangent):
            return result
        cast = [_in_dtype_of(t, v) for t, v in zip(tangents, values_)]
        if all(c is t for c, t in zip(cast, tangents)):
            return result
        fixed = pytree.rebuild(tangent, iter(cast))
    else:
        fixed = _in_dtype_of(tangent, value)
    return result if fixed is tangent else (value, fixed) + result[2:]


def _in_dtype_of(tangent, value):
    vtype = getattr(value, "dtype", None)
    if vtype is None or vtype.kind != "f":
        return tangent
    tangent = _in_shape_of(tangent, value)
    if type(tangent) is float:   # a NumPy scalar's or 0-d array's tangent computed as a float
        return vtype.type(tangent) if isinstance(value, numpy.generic) else \
            namespace(value).asarray(tangent, dtype=vtype)
    ttype = getattr(tangent, "dtype", None)
    if ttype is None or ttype == vtype or ttype.kind != "f":
        return tangent
    return tangent.astype(vtype)


def _in_shape_of(tangent, value):
    """The tangent of an array ``value`` in its shape: a zero the program computed as a
    scalar (the tangent of a gradient read from ``tuple(x)``: ``array(0.)`` for a
    gradient of shape (4,)), or a smaller array NumPy broadcasts, spread over it."""
    shape = getattr(value, "shape", None)
    tshape = getattr(tangent, "shape", None) if not isinstance(tangent, (int, float)) else ()
    if not shape or tshape is None or tuple(tshape) == tuple(shape):
        return tangent
    try:
        if numpy.broadcast_shapes(tuple(tshape), tuple(shape)) != tuple(shape):
            return tangent
    except (ValueError, TypeError):
        return tangent
    xp = namespace(value)
    return xp.zeros(shape, dtype=value.dtype) + tangent


def _as_tangent(tangent, primal):
    if isinstance(primal, float) or numpy.ndim(primal) == 0 and not hasattr(primal, "dtype"):
        return float(tangent)
    xp = namespace(primal, tangent)   # a CuPy primal's tangent stays on the device
    return xp.asarray(tangent, dtype=getattr(primal, "dtype", numpy.float64))


def compiled_for_source(fn, wrt=0):
    """The CompiledJVP ``sg.source(fn, wrt, mode="jvp")`` shows: tangents of the parameters
    ``wrt`` names (positions or names, as in ``sg.grad``); a bound method's, or a
    gradient's (sg.grad(f): its code read again), as ``jvp``'s."""
    if callable(getattr(fn, "as_function", None)):
        fn = fn.as_function()
    else:
        fn = entry.readable(fn)
    params = [p.name for p in inspect.signature(fn).parameters.values()]
    names, _, _ = pipeline.wrt_names(_Params(params), wrt)
    for n in names:
        if n not in params:
            raise ValueError(f"srcgrad: wrt={n!r} is not a parameter of {fn.__qualname__}")
    return _compiled(fn, list(names))


class _Params:
    """What ``pipeline.wrt_names`` reads of a FunctionDef: its parameters."""

    def __init__(self, params):
        self.args = type("A", (), {"posonlyargs": [], "args": [name(p) for p in params],
                                   "kwonlyargs": []})()
