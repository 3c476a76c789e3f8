"""``sg.hessian(u)(x, w)`` and ``sg.jacobian(f)(x)`` (``jacrev``, ``jacfwd``) called inside
a differentiated function (a PINN's Laplacian, a Jacobian penalty), written as the rows of
gradients they are:

    np.reshape(np.stack([sg.grad(lambda v: np.ravel(g(v, w))[i])(x)
                         for i in range(np.size(out))]), np.shape(out) + np.shape(x))

with ``g`` the function (``sg.grad(u, wrt)`` for a Hessian, whose ``out`` is ``x``; for a
Jacobian ``out = f(x, w)``, computed once), which local_functions.py and anf_expressions.py
compile as any gradient called inside, so the outer derivative is one of gradients, as
``sg.grad(sg.grad(u))`` is. Taken where ``wrt`` is a constant int, there is no other
keyword, and the arguments are passed positionally as names or constants (they are read
more than once); anything else is left as written, and refused where it stands.
"""

import gast
import numpy

from srcgrad import ast_util, templates
from srcgrad.ast_util import name
from srcgrad.transform import as_array
from srcgrad.transform.base import lookup_dotted


def _maker(call, info, shadowed):
    """(``"hessian"`` or ``"jacobian"``, ``sg.grad``) where ``call`` is ``sg.hessian(...)``,
    ``sg.jacobian``/``jacrev``/``jacfwd(...)`` (nested.py marks them), else None."""
    return getattr(lookup_dotted(call.func, info, shadowed), "srcgrad_rows", None)


def _wrt(maker):
    """The constant int ``wrt`` of ``sg.hessian(u[, wrt])``, or None."""
    if len(maker.args) > 2 or any(k.arg != "wrt" for k in maker.keywords):
        return None
    given = maker.args[1:] + [k.value for k in maker.keywords]
    if not given:
        return 0
    if len(given) == 1 and isinstance(given[0], gast.Constant) and type(given[0].value) is int:
        return given[0].value
    return None


def _plain(arg):
    return isinstance(arg, gast.Constant) or isinstance(arg, gast.Name) and isinstance(arg.ctx, gast.Load)


class _Rows:
    """Writes one call as its rows of gradients (see the module docstring)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def bound(self, obj, hint):
        return name(as_array.bind(self.ctx.namer, self.ctx.info, self.ctx.bindings, hint, obj))

    def call(self, func, *args):
        return gast.Call(func=func if isinstance(func, gast.AST) else self.bound(*func),
                         args=list(args), keywords=[])

    def rows(self, kind, maker, call, wrt):
        fn, args = maker.args[0], call.args
        v, i, out = (self.ctx.namer.new(h) for h in ("v", "row", "out"))
        kind, grad = kind[0], (kind[1], "grad")

        def function_call(at):   # g(a0, .., at, ..), or as called where ``at`` is None
            moved = [name(at) if k == wrt and at else templates.clone(a) for k, a in enumerate(args)]
            func = templates.clone(fn) if kind == "jacobian" else self.call(
                grad, templates.clone(fn), gast.Constant(value=wrt, kind=None))
            return gast.Call(func=func, args=moved, keywords=[])

        entry = gast.Subscript(value=self.call((numpy.ravel, "ravel"), function_call(v)),
                               slice=name(i), ctx=gast.Load())
        row = self.call(self.call(grad, gast.Lambda(args=_params(v), body=entry)),
                        templates.clone(args[wrt]))
        shaped = name(out) if kind == "jacobian" else templates.clone(args[wrt])
        stacked = self.call((numpy.stack, "stack"), gast.ListComp(elt=row, generators=[gast.comprehension(
            target=name(i, True), iter=self.call(name("range"), self.call((numpy.size, "size"), shaped)),
            ifs=[], is_async=0)]))
        shape = gast.BinOp(left=self.call((numpy.shape, "shape"), shaped), op=gast.Add(),
                           right=self.call((numpy.shape, "shape"), templates.clone(args[wrt])))
        whole = self.call((numpy.reshape, "reshape"), stacked, shape)
        if kind == "hessian":
            return whole
        # [whole for out in [f(x, w)]][0]: the Jacobian's output computed once, for its shape
        return gast.Subscript(value=gast.ListComp(elt=whole, generators=[gast.comprehension(
            target=name(out, True), iter=gast.List(elts=[function_call(None)], ctx=gast.Load()),
            ifs=[], is_async=0)]), slice=gast.Constant(value=0, kind=None), ctx=gast.Load())


def _params(v):
    return gast.arguments(args=[name(v, True)], posonlyargs=[], vararg=None, kwonlyargs=[],
                          kw_defaults=[], kwarg=None, defaults=[])


def expand(node, ctx, shadowed, census=None):
    """Write each ``sg.hessian(u)(...)`` / ``sg.jacobian(f)(...)`` of FunctionDef ``node``
    as its rows of gradients (see the module docstring). ``shadowed``: ``node``'s locals.
    Returns whether it wrote one. (``census``: an ``ast_walks.Census`` of ``node``.)"""
    calls = census.of(gast.Call) if census is not None else ast_util.nodes_of(node, gast.Call)
    if not any(isinstance(n.func, gast.Call) for n in calls):
        return False
    rows, written = _Rows(ctx), []

    class Rewrite(gast.NodeTransformer):
        def visit_Call(self, call):
            self.generic_visit(call)
            maker = call.func
            if not (isinstance(maker, gast.Call) and maker.args):
                return call
            kind = _maker(maker, ctx.info, shadowed)   # (its kind, sg.grad)
            wrt = _wrt(maker) if kind else None
            if wrt is None or call.keywords or not 0 <= wrt < len(call.args) \
                    or not all(_plain(a) for a in call.args) \
                    or any(isinstance(a, gast.Starred) for a in maker.args):
                return call
            ctx.info.resolve_path(ast_util.dotted(maker.func))   # (a read the compile depends on)
            written.append(call)
            return gast.copy_location(rows.rows(kind, maker, call, wrt), call)

    node.body = [Rewrite().visit(s) for s in node.body]
    return bool(written)
