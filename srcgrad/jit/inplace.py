"""In-place updates in the jit function's loops: ``v = v * e`` becomes ``v *= e`` when
nothing else holds ``v``'s array (W3's doubling allocated two arrays per trip).

A name updated in a loop (``v = v op e`` or ``v = e op v`` for + and *, ``e`` not reading
``v``) gets a flag ``_own_v``, kept at run time: True after ``v`` is bound to an
arithmetic result (a new array the function alone holds), False after any other binding
(a parameter, a tape pop, a copy of another name) and after any statement that may store
``v``'s array elsewhere (``w = v``, ``w = v[1:]``, a tape push, a call that may return its
argument). Each such update becomes::

    _sg_tK = e
    if _own_v and _jrt.fits(v, _sg_tK):   # float64 array, a number or an array of its shape
        v op= _sg_tK
    else:
        v = v op _sg_tK
        _own_v = True

The same operation on the same elements in the same order: a result never changes. A
transposed ``e`` (``dW = dW + dW_T.T``) is copied C-contiguous first (``_is_transpose``).
"""

import gast
import numpy

from srcgrad import anno
from srcgrad.ast_util import reads

Static = anno.Static
_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div)
_COMMUTES = (gast.Add, gast.Mult)
# Calls whose result never is (a view of) an argument.
_FRESH = {"norm", "sum", "prod", "mean", "dot", "len", "float", "int", "abs", "power"}


def rewrite(function, numbers=()):
    """Rewrite ``function`` (a gast FunctionDef, translate.py's) in place; ``numbers``:
    names known to hold one number (pipeline.Compiled.scalars), left as they are."""
    tracked = set()
    for node in gast.walk(function):
        if isinstance(node, (gast.For, gast.While)):
            for inner in node.body:
                for s in gast.walk(inner):
                    if isinstance(s, gast.Assign) and _update(s) is not None:
                        tracked.add(s.targets[0].id)
    tracked -= set(numbers)
    if not tracked:
        return
    inplace = _InPlace(tracked)
    function.body = [_assign(_flag(n), False) for n in sorted(tracked)] + \
        inplace.block(function.body, False)


def _update(s):
    """``(name, op, other operand, name first)`` of ``name = name op e``, or None."""
    if len(s.targets) != 1 or not isinstance(s.targets[0], gast.Name) or \
            not isinstance(s.value, gast.BinOp) or not isinstance(s.value.op, _OPS):
        return None
    n, left, right = s.targets[0].id, s.value.left, s.value.right
    if isinstance(left, gast.Name) and left.id == n and n not in reads(right):
        return n, s.value.op, right, True
    if isinstance(right, gast.Name) and right.id == n and n not in reads(left) and \
            isinstance(s.value.op, _COMMUTES):
        return n, s.value.op, left, False
    return None


class _InPlace:
    def __init__(self, tracked):
        self.tracked = tracked
        self.temps = 0

    def block(self, body, in_loop):
        out = []
        for s in body:
            out.extend(self.statement(s, in_loop))
        return out

    def statement(self, s, in_loop):
        origin = anno.getanno(s, Static.ORIGIN)
        made = self._statement(s, in_loop)
        for new in made:
            if new is not s and origin is not None and anno.getanno(new, Static.ORIGIN) is None:
                anno.setanno(new, Static.ORIGIN, origin)
        return made

    def _statement(self, s, in_loop):
        tracked = self.tracked
        if isinstance(s, gast.Assign):
            found = _update(s)
            if in_loop and found is not None and found[0] in tracked:
                return self.update(s, *found)
            after = [_assign(_flag(n), False) for n in sorted(_passes(s.value) & tracked)]
            bound = {t.id for t in s.targets if isinstance(t, gast.Name)} | \
                {e.id for t in s.targets if isinstance(t, (gast.Tuple, gast.List))
                 for e in t.elts if isinstance(e, gast.Name)}
            fresh = isinstance(s.value, (gast.BinOp, gast.UnaryOp)) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name)
            after += [_assign(_flag(n), fresh) for n in sorted(bound & tracked)]
            return [s] + after
        if isinstance(s, gast.For):
            before = [_assign(_flag(n), False) for n in sorted(_passes(s.iter) & tracked)]
            bound = {n.id for n in gast.walk(s.target) if isinstance(n, gast.Name)} & tracked
            s.body = [_assign(_flag(n), False) for n in sorted(bound)] + self.block(s.body, True)
            s.orelse = self.block(s.orelse, in_loop)
            return before + [s]
        if isinstance(s, gast.While):
            s.body = self.block(s.body, True)
            s.orelse = self.block(s.orelse, in_loop)
            return [s]
        if isinstance(s, gast.If):
            s.body = self.block(s.body, in_loop) or [gast.Pass()]
            s.orelse = self.block(s.orelse, in_loop)
            return [s]
        if isinstance(s, gast.AugAssign):   # v op= e keeps v's array (or a new number)
            return [s] + [_assign(_flag(n), False) for n in sorted(_passes(s.value) & tracked)]
        if isinstance(s, (gast.Return, gast.Pass, gast.Break, gast.Continue)):
            return [s]
        # Anything else (a call's statement: a tape push): whatever it reads may be kept.
        return [s] + [_assign(_flag(n), False) for n in sorted(reads(s) & tracked)]

    def update(self, s, n, op, other, name_first):
        temp = f"_sg_t{self.temps}"
        self.temps += 1
        fits = gast.Call(func=gast.Attribute(value=_name("_jrt"), attr="fits", ctx=gast.Load()),
                         args=[_name(n), _name(temp)], keywords=[])
        test = gast.BoolOp(op=gast.And(), values=[_name(_flag(n)), fits])
        operands = [_name(n), _name(temp)] if name_first else [_name(temp), _name(n)]
        again = gast.Assign(targets=[_name(n, gast.Store())], value=gast.BinOp(
            left=operands[0], op=type(op)(), right=operands[1]), type_comment=None)
        in_place = gast.AugAssign(target=_name(n, gast.Store()), op=type(op)(), value=_name(temp))
        if _is_transpose(other):   # read once, in v's order: a strided read costs more
            other = gast.Call(func=gast.Attribute(value=_name("np"), attr="ascontiguousarray",
                                                  ctx=gast.Load()), args=[other], keywords=[])
        return [_assign(temp, other),
                gast.If(test=test, body=[in_place], orelse=[again, _assign(_flag(n), True)])]


def _is_transpose(e):
    """``np.transpose(a)`` or ``a.T``: W7's ``dW = dW + dW_T.T``, an F-ordered operand added
    into a C-ordered accumulator (Numba's loop over it was 3x NumPy's; a contiguous copy
    first, then a contiguous add: the same values)."""
    if isinstance(e, gast.Attribute) and e.attr == "T":
        return True
    return isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and \
        e.func.attr == "transpose" and isinstance(e.func.value, gast.Name) and \
        e.func.value.id == "np" and len(e.args) == 1 and not e.keywords


def _passes(e):
    """The names whose array the value of ``e`` may be, or share memory with."""
    if isinstance(e, gast.Name):
        return {e.id}
    if isinstance(e, (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Constant)):
        return set()   # a new array, or a number
    if isinstance(e, gast.Call) and not e.keywords and _fresh_call(e.func):
        return set()
    if isinstance(e, gast.IfExp):
        return _passes(e.body) | _passes(e.orelse)
    if isinstance(e, (gast.Tuple, gast.List)):
        return set().union(*map(_passes, e.elts))
    return reads(e)   # a view (v[1:], v.T), a call that may return its argument: any


def _fresh_call(f):
    if isinstance(f, gast.Name):
        return f.id in _FRESH
    if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name):
        if f.value.id == "np" and isinstance(getattr(numpy, f.attr, None), numpy.ufunc):
            return True
        return f.value.id in ("np", "_jrt") and f.attr in _FRESH
    if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Attribute) and \
            isinstance(f.value.value, gast.Name):
        return (f.value.value.id, f.value.attr, f.attr) == ("np", "linalg", "norm")
    return False


def _flag(n):
    return f"_own_{n}"


def _name(n, ctx=None):
    return gast.Name(id=n, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def _assign(n, value):
    value = value if isinstance(value, gast.AST) else gast.Constant(value=value, kind=None)
    return gast.Assign(targets=[_name(n, gast.Store())], value=value, type_comment=None)
