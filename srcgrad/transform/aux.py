"""``has_aux=True``: the function returns ``(output, aux)``; only the output is differentiated.

Each ``return`` of the differentiated function (not of functions nested in it) becomes

    output = <first>; aux = <second>; return output

so the rest of the pipeline sees a function whose output is the first element: the
activity analysis finds nothing useful in what only ``aux`` depends on, and the reverse
sweep spends no adjoint work on it. The forward sweep returns ``(output, aux)``
(reverse.build's ``aux``). A returned tuple written out (``return loss, metrics``) is split
where it is written; any other value (``return helper(x)``) is checked at run time to be a
pair and then indexed. A return that visibly is not a pair (a tuple of another length, a
number, an arithmetic expression) is refused at compile time.
"""

import gast

from srcgrad import anno
from srcgrad.ast_util import name
from srcgrad.errors import SrcgradError
from srcgrad.transform.base import Base
from srcgrad.anno import Static
from srcgrad import ast_util

# Values that are never a tuple of two (a Call, Name, Subscript... may be).
_NOT_A_PAIR = (gast.BinOp, gast.UnaryOp, gast.Constant, gast.Dict, gast.List, gast.Set,
               gast.Compare, gast.BoolOp, gast.ListComp, gast.SetComp, gast.DictComp,
               gast.GeneratorExp, gast.Lambda, gast.JoinedStr)

EXPECTS = "has_aux=True expects the function to return a pair (output, aux): a tuple of two"



def _assign(target, value, like):
    s = gast.Assign(targets=[name(target, True)], value=value, type_comment=None)
    gast.copy_location(s, like)
    return anno.copyanno(like, s, Static.ORIGIN)


def _returns(body):
    """The Return statements of ``body``, not of functions or classes defined in it."""
    todo, found = list(body), []
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Return):
            found.append(n)
        elif not isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)):
            todo.extend(gast.iter_child_nodes(n))
    return found


def split(node, ctx):
    """Rewrite FunctionDef ``node``'s returns as above; the name that holds ``aux``."""
    info, namer = ctx.info, ctx.namer
    returns = _returns(node.body)
    for r in returns:
        value = r.value
        if value is None or isinstance(value, _NOT_A_PAIR) or (
                isinstance(value, gast.Tuple) and (len(value.elts) != 2 or any(
                    isinstance(e, gast.Starred) for e in value.elts))):
            origin = anno.getanno(r, Static.ORIGIN) or info.origin(r)
            what = "nothing" if value is None else (
                f"a tuple of {len(value.elts)}" if isinstance(value, gast.Tuple) else
                "a value that is not a tuple")
            message = f"{EXPECTS}; this return gives {what}"
            hint = "Return `output, aux` (e.g. `return loss, {\"accuracy\": acc}`), or drop has_aux=True."
            if origin is not None:
                raise origin.error(SrcgradError, message, hint)
            raise SrcgradError(message, info.filename, info.first_lineno, hint=hint)
    aux = namer.new("aux")
    output = namer.new("output")

    def rewrite(r):
        value = r.value
        if isinstance(value, gast.Tuple):
            first, second = value.elts
            if isinstance(first, gast.Name):   # reading a name has no effect: order kept
                out = [_assign(aux, second, r)]
                ret = gast.Return(value=first)
            else:
                out = [_assign(output, first, r), _assign(aux, second, r)]
                ret = gast.Return(value=name(output))
        else:
            pair = namer.new("pair")
            origin = anno.getanno(r, Static.ORIGIN)
            line = f" (line {origin.lineno})" if origin is not None else ""
            check = gast.If(
                test=gast.UnaryOp(op=gast.Not(), operand=gast.BoolOp(op=gast.And(), values=[
                    gast.Call(func=name("isinstance"), args=[name(pair), name("tuple")], keywords=[]),
                    gast.Compare(left=gast.Call(func=name("len"), args=[name(pair)], keywords=[]),
                                 ops=[gast.Eq()], comparators=[gast.Constant(value=2, kind=None)])])),
                body=[gast.Raise(exc=gast.Call(func=name("TypeError"), args=[gast.Constant(
                    value=f"srcgrad: {EXPECTS}; the value returned{line} is not one", kind=None)],
                    keywords=[]), cause=None)],
                orelse=[])
            for s in ast_util.walk(check):
                if isinstance(s, gast.stmt):
                    gast.copy_location(s, r)
                    anno.copyanno(r, s, Static.ORIGIN)
            index = [gast.Subscript(value=name(pair), slice=gast.Constant(value=k, kind=None),
                                    ctx=gast.Load()) for k in (0, 1)]
            out = [_assign(pair, value, r), check, _assign(output, index[0], r),
                   _assign(aux, index[1], r)]
            ret = gast.Return(value=name(output))
        gast.copy_location(ret, r)
        anno.copyanno(r, ret, Static.ORIGIN)
        return out + [ret]

    class Returns(Base):   # each return rewritten; nested scopes are not this function's
        visit_Return = staticmethod(rewrite)

        def visit_FunctionDef(self, s):
            return s

        visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    node.body = Returns(info).visit_block(node.body)
    if not (len(returns) == 1 and isinstance(node.body[-1], gast.Return)
            and not _returns(node.body[:-1])):
        # Several returns (or one inside a block): aux is bound wherever the function returns.
        init = gast.Assign(targets=[name(aux, True)], value=gast.Constant(value=None, kind=None),
                           type_comment=None)
        node.body.insert(0, gast.copy_location(init, node.body[0]))
    return aux
