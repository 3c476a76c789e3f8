"""The steps a tangent program's compile shares, for ``sg.jvp`` (forward_api.py) and the
batched program of ``sg.jacfwd``/``sg.hessian`` (transform/batching.py): reading the
function, the tangents' prologue, and loading the generated function."""

from dataclasses import dataclass

import gast

from srcgrad import anno, ast_util, pipeline, runtime
from srcgrad.analysis import activity, aliasing, kinds
from srcgrad.codegen import emit, loader
from srcgrad.errors import UnsupportedError
from srcgrad.guard import Guard
from srcgrad.templates import name
from srcgrad.transform import argument_effects, as_array, forward


@dataclass
class Front:
    """What a tangent program is built from: the function's tree and compile context, its
    parameters, those with tangents (``names``), activity, kinds and the arrays it writes."""
    node: gast.FunctionDef
    ctx: object
    params: tuple
    names: tuple
    act: object
    kind_map: dict
    written: set


def front(fn, active, options=None, has_aux=False, static=None):
    """Read ``fn`` for a tangent program with tangents of the parameters in ``active``.
    ``has_aux``: ``fn`` returns ``(output, aux)``; ``ctx.aux`` names the aux, which
    carries no tangent (transform/aux.py, as for ``sg.grad``). ``static``: as
    ``pipeline.front_end``'s (the classes of dataclass arguments: p.loss(x))."""
    options = options or pipeline.DEFAULT_OPTIONS
    node, ctx = pipeline.front_end(fn, options, has_aux=has_aux, static=static)
    info, namer = ctx.info, ctx.namer
    if node.args.vararg or node.args.kwarg:
        raise UnsupportedError(f"forward mode: {fn.__qualname__} takes *args or **kwargs",
                               info.filename, info.first_lineno)
    params = tuple(a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs)
    names = tuple(n for n in params if n in active)
    node = argument_effects.keep_differentiated(node, names)
    param_checks = aliasing.check(node, info, namer.display, live_at_exit=(),
                                  bindings=ctx.bindings)
    kind_map = kinds.infer(node, {n: kinds.FLOAT for n in names}, info.peek)
    act = activity.resolve(node, names, kind_map)
    if as_array.as_array_arguments(node, act.sequences, ctx):
        kind_map = kinds.infer(node, {n: kinds.FLOAT for n in names}, info.peek)
        act = activity.resolve(node, names, kind_map)
    if not loader.is_generated(info.filename):   # a gradient read again has its own checks
        alias_checks(node, ctx, param_checks, act.active, act.sequences)
    # a tangent mirrors its value's memory wherever the value shares a written array's
    # (in a gradient read again too: its forward sweep is the user's, views included)
    written = aliasing.sharing(node, forward.written_names(node), info, ctx.bindings)
    return Front(node, ctx, params, names, act, kind_map, written)


def alias_checks(node, ctx, param_checks, active, sequences=frozenset()):
    """Reverse mode's run-time checks (analysis/aliasing.py) where forward mode needs them:
    before each ``v += y`` or ``b[i] += y`` that may reach another live name (the tangent
    program runs ``v = v + y``, a new array), before an indexed write or an append that may
    reach a live name without a tangent (``y = np.zeros(3); v = y[:2]; v[0] = x``: nothing would
    carry the write's tangent to ``y``'s) or is made through a name without one (``d =
    sg.detach(y); d[0] = c``), and on entry where a write may reach an argument
    (each argument's tangent is its own). An indexed write into a view of a name with a
    tangent writes into the view of that tangent, and needs none."""
    from srcgrad.transform.reverse import alias_checks as checks_of
    bindings = ctx.bindings

    def block(body):
        out = []
        for s in body:
            for field in ("body", "orelse"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, block(getattr(s, field)))
            checks = anno.getanno(s, anno.Static.ALIAS_CHECK) \
                if isinstance(s, (gast.Assign, gast.Expr)) else None
            if checks:
                if isinstance(s, gast.Expr):   # L.append(v): L and the lists sharing it grow
                    written = s.value.func.value.id
                    checks = [c for c in checks if c[0] not in active]
                else:
                    target = s.targets[0]
                    written = target.value.id if isinstance(target, gast.Subscript) else target.id
                    if not (anno.getanno(s, anno.Static.AUGMENTED) or anno.getanno(s, anno.Static.FIELD)) \
                            and written in active:
                        # (a name without a tangent, sg.detach(y), carries no write to y's)
                        checks = [c for c in checks if c[0] not in active]
                out += mark(checks_of(s, written, ctx.namer, bindings, checks))
            out.append(s)
        return out

    def mark(stmts):
        for stmt in stmts:
            anno.setanno(stmt.value, anno.Static.PRIMITIVE, runtime.check_unshared)
        return stmts

    entry = []
    for written, other, error in param_checks:
        error_name = ctx.namer.new("aliasing_error")
        bindings[error_name] = error
        entry += gast.parse(f"rt.check_unshared({written}, {other}, {error_name})").body
    node.body = mark(entry) + block(node.body)


def prologue(front_, transformer):
    """A parameter rebound to a value with a tangent but passed without one, or a global
    written into, gets a zero tangent; where the function writes into any array, each
    tangent argument gets a copy of its own (the caller's tangent stays)."""
    body = []
    stored = {n.id for n in ast_util.walk(front_.node) if isinstance(n, gast.Name)
              and not isinstance(n.ctx, gast.Load)}
    free = sorted({n.id for n in ast_util.walk(front_.node) if isinstance(n, gast.Name)
                   and n.id in front_.act.active and n.id not in stored and n.id not in front_.params})
    for n in free:   # a global or closure array written into (G[0] = x): zero before
        body += gast.parse(f"{transformer.d(n)} = rt.tangent_zero({n})").body
    for k, n in enumerate(free):   # each zero is its own: the arrays must be too (B = A)
        for other in free[k + 1:]:
            body += _unshared(front_, n, other)
    for n in front_.params:
        if n in front_.act.active and n not in front_.names:
            body += gast.parse(f"{transformer.d(n)} = rt.tangent_zero({n})").body
        elif n in front_.names and front_.written:
            # written in place, or through a view (v = x[:2]; v[0] = ...): the caller's
            # tangent stays as it was
            body += gast.parse(f"{transformer.d(n)} = rt.own({transformer.d(n)})").body
    return body


def _unshared(front_, written, other):
    """``rt.check_unshared(written, other, error)``: two global (or closure) arrays
    written into, each given a tangent of its own, must not share memory."""
    error = front_.ctx.namer.new("aliasing_error")
    info = front_.ctx.info
    origin = info.origin(front_.node)
    message = (f"forward mode: the global (or closure) arrays {written!r} and {other!r} share "
               f"memory, and {info.fn.__qualname__} writes into them in place; each gets a "
               f"tangent of its own, which would not share it")
    hint = "Give each array memory of its own (a copy), or write through one name."
    front_.ctx.bindings[error] = origin.error(UnsupportedError, message, hint) \
        if origin is not None else UnsupportedError(message, info.filename, hint=hint)
    stmts = gast.parse(f"rt.check_unshared({written}, {other}, {error})").body
    anno.setanno(stmts[0].value, anno.Static.PRIMITIVE, runtime.check_unshared)
    return stmts


def load(fn, front_, body, tangent_params, function_name, finish):
    """``(function, source, guard)`` of the tangent program ``body``: ``xp`` bound from
    the arguments where the body reads it, parameters then tangents, ``finish(body)``
    (comments, tidying) applied last."""
    if any(isinstance(n, gast.Name) and n.id == "xp" for s in body for n in ast_util.walk(s)):
        body = gast.parse(f"xp = rt.namespace({', '.join(list(tangent_params) + list(front_.names))})").body + body
    args = gast.arguments(args=[name(n) for n in front_.params] + [name(t) for t in tangent_params],
                          posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=[])
    for a in args.args:
        a.ctx = gast.Param()
    tree = gast.FunctionDef(name=function_name, args=args, body=finish(body),
                            decorator_list=[], returns=None, type_comment=None, type_params=[])
    source = emit.to_source([tree])
    info = front_.ctx.info
    bindings = dict(front_.ctx.bindings)
    bindings["rt"] = runtime
    (function,), _, _ = loader.load(source, [tree.name], info.globals, info.closure, bindings,
                                    hint=fn.__qualname__,
                                    origins=emit.origins_later([tree], source))
    return function, source, Guard(fn, front_.ctx.infos)
