"""Forward mode: ``sg.jvp`` and the tangent program ``sg.source(f, mode="jvp")`` shows.

``jvp(f, primals, tangents)`` runs the tangent program of ``f`` (transform/forward.py),
compiled once per function, per set of arguments that carry a tangent, and per
compile options, and kept like the gradient (its guard says when it may be reused).
The Jacobians built on it and on the reverse mode are in jacobians.py.

``sg.hvp``/``sg.hessian`` (hessians.py) run it on a generated gradient; the tangents
of the ``rt.*`` helpers such code calls are in rules/jvp_runtime.py.

Not yet: pytree (list, tuple, dict) primals with tangents, tangents of complex values.
"""

import functools
import inspect
import threading
from dataclasses import dataclass, field

import gast
import numpy

from srcgrad import pipeline, rules, runtime
from srcgrad.analysis import activity, aliasing, kinds
from srcgrad.codegen import emit, loader
from srcgrad.errors import UnsupportedError
from srcgrad.guard import Guard
from srcgrad.templates import name
from srcgrad.transform import as_array, forward


@dataclass
class CompiledJVP:
    """A compiled tangent program: ``function(*params, *tangents of active params)``
    returns ``(out, tangent_out)``."""

    function: object
    source: str
    params: tuple
    active: tuple              # the parameters that carry a tangent
    guard: object = field(default=None, repr=False)


_cache = {}
_lock = threading.Lock()


def compile_jvp(fn, active, options=None):
    """The tangent program of ``fn`` for tangents of the parameters named in ``active``."""
    options = options or pipeline.DEFAULT_OPTIONS
    node, ctx = pipeline.front_end(fn, options)
    info, namer = ctx.info, ctx.namer
    if node.args.vararg or node.args.kwarg:
        raise UnsupportedError(f"forward mode: {fn.__qualname__} takes *args or **kwargs",
                               info.filename, info.first_lineno)
    params = tuple(a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs)
    names = tuple(n for n in params if n in active)
    aliasing.check(node, info, namer.display, live_at_exit=())
    kind_map = kinds.infer(node, {n: kinds.FLOAT for n in names}, info.peek)
    act = activity.resolve(node, names, kind_map)
    if as_array.as_array_arguments(node, act.sequences, ctx):
        kind_map = kinds.infer(node, {n: kinds.FLOAT for n in names}, info.peek)
        act = activity.resolve(node, names, kind_map)
    written = forward.written_names(node)
    transformer = forward.ForwardAD(info, act.active, namer, written, act.sequences, kind_map)
    tangent_params = [transformer.d(n) for n in names]
    body = []
    for n in params:   # a parameter rebound to a value with a tangent, passed without one
        if n in act.active and n not in names:
            body += gast.parse(f"{transformer.d(n)} = rt.tangent_zero({n})").body
        elif n in names and n in written:   # written in place: the caller's tangent stays
            body += gast.parse(f"{transformer.d(n)} = rt.own({transformer.d(n)})").body
    body += transformer.visit_block(node.body)
    if any(isinstance(n, gast.Name) and n.id == "xp" for s in body for n in gast.walk(s)):
        body = gast.parse(f"xp = rt.namespace({', '.join(tangent_params + list(names))})").body + body
    args = gast.arguments(args=[name(n) for n in params] + [name(t) for t in tangent_params],
                          posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=[])
    for a in args.args:
        a.ctx = gast.Param()
    tree = gast.FunctionDef(name=f"{node.name}_jvp", args=args,
                            body=emit.comment_blocks(body, "tangent of: ", 1),
                            decorator_list=[], returns=None, type_comment=None, type_params=[])
    source = emit.to_source([tree])
    bindings = dict(ctx.bindings)
    bindings["rt"] = runtime
    (function,), _, _ = loader.load(source, [tree.name], info.globals, info.closure, bindings,
                                    hint=fn.__qualname__,
                                    origins=functools.partial(emit.line_origins, [tree], source))
    return CompiledJVP(function, source, params, names, Guard(fn, ctx.infos))


def _compiled(fn, active):
    options = pipeline.DEFAULT_OPTIONS
    key = (fn.__code__, tuple(id(c) for c in fn.__closure__ or ()), id(fn.__globals__),
           id(fn.__defaults__), id(fn.__kwdefaults__), frozenset(active), options, rules.VERSION[0])
    found = _cache.get(key)
    if found is None or not found.guard.holds(fn):
        with _lock:
            found = _cache.get(key)
            if found is None or not found.guard.holds(fn):
                found = _cache[key] = compile_jvp(fn, active, options)
    return found


def _carries_tangent(primal, tangent):
    if isinstance(primal, complex) or getattr(getattr(primal, "dtype", None), "kind", "") == "c":
        raise TypeError("srcgrad.jvp: complex primals are not supported by forward mode yet")
    if tangent is None:
        return False
    if isinstance(primal, (list, tuple, dict)) or isinstance(tangent, (list, tuple, dict)):
        raise TypeError("srcgrad.jvp: list, tuple and dict primals with tangents (pytrees) are "
                        "not supported by forward mode yet; pass their arrays as separate arguments")
    if isinstance(primal, (bool, int, numpy.integer, numpy.bool_)):
        return False
    dtype = getattr(primal, "dtype", None)
    if dtype is not None and dtype.kind in "biu":
        return False
    if numpy.shape(primal) != numpy.shape(tangent):
        raise ValueError(f"srcgrad.jvp: a tangent of shape {numpy.shape(tangent)} for a primal of "
                         f"shape {numpy.shape(primal)}")
    return True


def _bound(fn, primals):
    signature = inspect.signature(fn)
    bound = signature.bind(*primals)
    bound.apply_defaults()
    return bound


def jvp(fn, primals, tangents, *, jit=False):
    """``(fn(*primals), J @ tangents)``: the value and the directional derivative along
    ``tangents`` (one per primal; None for a primal that carries none), by forward mode.

    ``jit``: run the tangent program compiled with Numba (srcgrad/jit/, as ``grad``'s).

    Example:
        >>> out, t = sg.jvp(np.sin, ...)   # doctest: +SKIP
        >>> out, t = sg.jvp(f, (x, W), (dx, np.zeros_like(W)))
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"srcgrad.jvp: {len(primals)} primals but {len(tangents)} tangents")
    bound = _bound(fn, primals)
    params = list(bound.arguments)
    active = [p for p, primal, tangent in zip(params, primals, tangents)
              if _carries_tangent(primal, tangent)]
    compiled = _compiled(fn, active)
    given = dict(zip(params, tangents))
    args = [bound.arguments[p] for p in compiled.params]
    args += [_as_tangent(given[p], bound.arguments[p]) for p in compiled.active]
    if jit:
        from srcgrad import jit as _jit
        return _jit.jvp(fn, compiled, args)
    return compiled.function(*args)


def _as_tangent(tangent, primal):
    if isinstance(primal, float) or numpy.ndim(primal) == 0 and not hasattr(primal, "dtype"):
        return float(tangent)
    return numpy.asarray(tangent, dtype=getattr(primal, "dtype", numpy.float64))


def compiled_for_source(fn, wrt=0):
    """The CompiledJVP ``sg.source(fn, wrt, mode="jvp")`` shows: tangents of the parameters
    ``wrt`` names (positions or names, as in ``sg.grad``)."""
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
