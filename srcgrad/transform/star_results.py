"""``g(*h(x), y)`` and ``zip(*h(p))`` where ``h`` is a helper whose every ``return`` is a
tuple display of the same length ``n`` (autograd's examples: ``negbin_loglike(*unpack(params),
x)``, ``zip(*unpack_gmm_params(params))``): ``h(x)`` is bound to a name of its own just
before the statement, and the call reads its items ``t[0], ..., t[n-1]``, a call srcgrad
binds to ``g``'s parameters as any other (call_forms._star_calls does the same for a name
bound to a display).

Also ``rs.randn(*mean.shape)`` (variational_autoencoder.py's sampler): a shape unpacked into
a call is left to Python (``unpacks_shapes``): its items are integers, with no gradient; a
helper srcgrad inlines takes them in its ``*args`` (else its call is refused, naming it).

Only where the statement evaluates the call once, unconditionally: an assignment's value,
an expression statement, a ``return``, an ``if`` test or a ``for`` loop's iterable, outside
lambdas, comprehensions, ``a if c else b`` and ``and``/``or``. Elsewhere the call stays
as it is (and is refused, its length being known only when it runs)."""

import ast
import inspect
import textwrap

import gast

from srcgrad import anno
from srcgrad.ast_util import name
from srcgrad.entry import peel
from srcgrad.transform.base import BLOCK_FIELDS
from srcgrad.transform.call_forms import _resolves_path

_ONCE = {gast.Assign: "value", gast.AugAssign: "value", gast.Expr: "value", gast.Return: "value",
         gast.If: "test", gast.For: "iter"}
_CONDITIONAL = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp,
                gast.IfExp, gast.BoolOp, gast.FunctionDef)


def hoist(node, desugar):
    """Rewrite the calls above in FunctionDef ``node`` (``desugar``: methods.Desugar, for
    its namer and the names it resolves); whether any was."""
    defs = {s.name: s for s in node.body if isinstance(s, gast.FunctionDef)}
    changed = False
    for owner, field in _blocks(node):
        out = []
        for stmt in getattr(owner, field):
            where = _ONCE.get(type(stmt))
            for call, star in _starred_calls(getattr(stmt, where) if where else None):
                n = _tuple_length(star.value, defs, desugar)
                if n is None:
                    continue
                tmp = desugar.namer.new(f"{getattr(star.value.func, 'id', 'call')}_items")
                assign = gast.Assign(targets=[name(tmp, True)], value=star.value, type_comment=None)
                anno.copyanno(stmt, assign, anno.Static.ORIGIN)
                out.append(assign)
                k = call.args.index(star)
                call.args[k:k + 1] = [gast.Subscript(value=name(tmp), slice=gast.Constant(value=i, kind=None),
                                                     ctx=gast.Load()) for i in range(n)]
                changed = True
            out.append(stmt)
        setattr(owner, field, out)
    return changed


def unpacks_shapes(call):
    """Whether every ``*`` argument of ``call`` is an array's shape, ``g(*x.shape)``."""
    return all(not isinstance(a, gast.Starred) or (
        isinstance(a.value, gast.Attribute) and a.value.attr == "shape") for a in call.args)


def _blocks(node):
    """(statement, field) of every statement list in ``node``, not in nested defs."""
    stack = [node]
    while stack:
        owner = stack.pop()
        for field in BLOCK_FIELDS:
            block = getattr(owner, field, None)
            if isinstance(block, list) and (owner is node or not isinstance(owner, gast.FunctionDef)):
                yield owner, field
                stack.extend(s for s in block if not isinstance(s, gast.FunctionDef))
        for handler in getattr(owner, "handlers", ()):
            stack.append(handler)


def _starred_calls(expr):
    """(call, the Starred argument) for each ``g(..., *h(...), ...)`` evaluated once in ``expr``."""
    if expr is None:
        return []
    found, stack = [], [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, _CONDITIONAL):
            continue
        if isinstance(n, gast.Call):
            found += [(n, a) for a in n.args if isinstance(a, gast.Starred) and isinstance(a.value, gast.Call)]
        stack.extend(gast.iter_child_nodes(n))
    return found


def _tuple_length(call, defs, desugar):
    """The length of the tuple display every ``return`` of the function ``call`` calls
    gives (a nested def of ``f``, or a function known when compiling), else None."""
    func = call.func
    if isinstance(func, gast.Name) and func.id in defs:
        if func.id in desugar.locals:
            return None
        returns = _returns(defs[func.id], gast)
    else:
        fn = _resolves_path(desugar, func, inspect.isfunction) if isinstance(
            func, (gast.Name, gast.Attribute)) else None
        if fn is None or fn.__name__ == "<lambda>":
            return None
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(peel(fn)[0])))
        except (OSError, TypeError, SyntaxError):
            return None
        fdef = tree.body[0] if tree.body else None
        if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        returns = _returns(fdef, ast)
    if not returns:
        return None
    lengths = {len(r.elts) if isinstance(r, (gast.Tuple, ast.Tuple)) and not any(
        isinstance(e, (gast.Starred, ast.Starred)) for e in r.elts) else None for r in returns}
    return lengths.pop() if len(lengths) == 1 and None not in lengths else None


def _returns(fdef, mod):
    """The values of ``fdef``'s own ``return`` statements (None: it yields, or returns nothing)."""
    values, stack = [], list(fdef.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (mod.FunctionDef, mod.Lambda, mod.ClassDef)):
            continue
        if isinstance(n, (mod.Yield, mod.YieldFrom)):
            return None
        if isinstance(n, mod.Return):
            if n.value is None:
                return None
            values.append(n.value)
        stack.extend(mod.iter_child_nodes(n))
    return values
