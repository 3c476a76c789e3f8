"""A loop that only scales an adjoint by a power of two scales it six steps at a time
(the adjoint of ``while ...: y = y * 2``, W3):

    for _ in range(n_loop):            ->    for _ in range(n_loop // 6):
        dy = dy * 2                              dy = dy * 64
                                             dy = dy * (1, 2, 4, 8, 16, 32)[n_loop % 6]

Bit-identical: multiplying by a power of two is exact unless the result overflows, and
then the loop's result overflows too (its steps only grow), so both give the same
values, infinities and NaNs. The factors are Python numbers of the literal's type
(``2`` or ``2.0``), whose magnitudes (at most 64) every NumPy dtype holds: the result's
dtype is the loop's. The factor ``(…)[n % 6]`` is a literal whatever integer type the
count has. Factors 2, 4 and 8 (and their negatives) are taken: 6 // 3 steps of 8 at a time.
"""

import gast

from srcgrad.ast_util import blocks

_MAX = 64   # the largest factor written: an int8 array holds it


def run(body, facts):
    changed = False
    for block in blocks(body):
        k = 0
        while k < len(block):
            found = _scaling_loop(block[k])
            if found is None:
                k += 1
                continue
            block[k:k + 1] = _rewritten(block[k], *found)
            changed = True
            k += 2
    return changed


def _scaling_loop(s):
    """(name, factor, count, factor on the left) of ``for _ in range(count): d = d * c``
    with ``c`` a literal ±2, ±4 or ±8, ``count`` a name other than ``d``; else None."""
    if not (isinstance(s, gast.For) and not s.orelse and len(s.body) == 1
            and isinstance(s.target, gast.Name) and isinstance(s.iter, gast.Call)
            and isinstance(s.iter.func, gast.Name) and s.iter.func.id == "range"
            and len(s.iter.args) == 1 and not s.iter.keywords
            and isinstance(s.iter.args[0], gast.Name)):
        return None
    count = s.iter.args[0].id
    a = s.body[0]
    if not (isinstance(a, gast.Assign) and len(a.targets) == 1
            and isinstance(a.targets[0], gast.Name) and isinstance(a.value, gast.BinOp)
            and isinstance(a.value.op, gast.Mult)):
        return None
    name = a.targets[0].id
    if name in (count, s.target.id):
        return None
    left, right = a.value.left, a.value.right
    for operand, factor, on_left in ((left, right, False), (right, left, True)):
        if isinstance(operand, gast.Name) and operand.id == name:
            c = _literal(factor)
            if c is not None:
                return name, c, count, on_left
    return None


def _literal(e):
    """The value of a literal ±2, ±4 or ±8 (int or float, not bool), else None."""
    sign = 1
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        sign, e = -1, e.operand
    if not isinstance(e, gast.Constant) or type(e.value) not in (int, float):
        return None
    return sign * e.value if e.value in (2, 4, 8) else None


def _rewritten(loop, name, c, count, on_left):
    steps = 1
    while abs(c) ** (steps + 1) <= _MAX:
        steps += 1
    kind = type(c)
    chunk = kind(c ** steps)
    table = gast.Tuple(elts=[_number(kind(c ** j)) for j in range(steps)], ctx=gast.Load())

    def scaled(factor):
        d = gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)
        product = gast.BinOp(left=factor, op=gast.Mult(), right=d) if on_left \
            else gast.BinOp(left=d, op=gast.Mult(), right=factor)
        return gast.Assign(targets=[gast.Name(id=name, ctx=gast.Store(), annotation=None,
                                              type_comment=None)], value=product,
                           type_comment=None)

    def n_by(op):
        return gast.BinOp(left=gast.Name(id=count, ctx=gast.Load(), annotation=None,
                                         type_comment=None),
                          op=op, right=gast.Constant(value=steps, kind=None))

    loop.iter.args[0] = n_by(gast.FloorDiv())
    inner = loop.body[0]
    inner.value = scaled(_number(chunk)).value
    rest = scaled(gast.Subscript(value=table, slice=n_by(gast.Mod()), ctx=gast.Load()))
    rest.__dict__["_srcgrad_anno"] = dict(inner.__dict__.get("_srcgrad_anno", {}))  # its origin
    return [loop, rest]


def _number(value):
    if value < 0:
        return gast.UnaryOp(op=gast.USub(), operand=gast.Constant(value=-value, kind=None))
    return gast.Constant(value=value, kind=None)
