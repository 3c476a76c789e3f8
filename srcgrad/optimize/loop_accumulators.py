"""A loop's accumulators added into in place, in a composed gradient (pipeline.py runs it
on the composed function's body, like ``scalar_items``).

W7's parameter adjoints take one contribution per step of the reversed loop, and each
``dW = dW + g`` made a new 128x128 array; the hand-written adjoint writes ``dW += g``.

    dW = 0.0                                   dW = 0.0
    for i in reversed(range_i):                for i in reversed(range_i):
        ...                            ->          ...
        dW = dW + xp.transpose(dW_T)               dW = rt.add_into(dW, xp.transpose(dW_T))

Where a loop of the function's own body (not nested in another statement) is entered
with ``d`` bound to ``0.0`` by the last statement before it that mentions ``d``, and
every mention of ``d`` inside the loop is one of its ``d = d + g`` (``g`` not reading
``d``), ``d`` holds either that ``0.0`` or an array one of these additions made: nothing
else can hold it (no other statement reads ``d`` until the loop ends, no nested function
mentions it), so writing into it changes nothing anyone sees. ``rt.add_into`` adds in
place only NumPy float arrays of one shape and dtype (the same numbers as ``d + g``);
anything else (a Python float, a CuPy or Dask array, another dtype or a broadcast) is
``d + g`` as before. Names known to be Python floats (``floats``) are left as written,
and so is a loop with a ``try`` or ``with`` inside (an error raised by an addition made in
place, under ``np.errstate(all="raise")``, and caught there would leave ``d`` changed).
"""

import gast

from srcgrad import anno

Static = anno.Static


def run(body, seeded, floats, names):
    """Rewrite the accumulations of the loops of ``body`` after its statement ``seeded`` (the
    backward sweep's); returns whether any changed. Each statement rewritten is replaced in
    its block (the blocks are the composing copy's own, the simple statements the sweep's:
    templates.composing_copy). ``names``: the statements' ``NameSets``."""
    changed = False
    start = next(k for k, s in enumerate(body) if s is seeded)
    for k in range(start, len(body)):
        loop = body[k]
        if loop.__class__ not in (gast.For, gast.While) or any(
                n.__class__ in (gast.Try, gast.With) for n in gast.walk(loop)):
            continue   # (an error caught in the loop would leave d half added into)
        found = _accumulations(loop)
        for d, statements in found.items():
            if d in floats or _mentions(loop, d) != 2 * len(statements) \
                    or not _zero_on_entry(body[:k], d) or _in_nested_scope(body, d):
                continue
            for block, i, s in statements:   # a new statement: the sweep's own is shared
                block[i] = anno.copyanno(s, gast.Assign(targets=s.targets, value=gast.Call(
                    func=gast.Attribute(value=gast.Name(id="rt", ctx=gast.Load(), annotation=None,
                                                        type_comment=None),
                                        attr="add_into", ctx=gast.Load()),
                    args=[s.value.left, s.value.right], keywords=[]), type_comment=None), *Static)
            changed = True
    return changed


def _accumulations(loop):
    """name -> (block, index, statement) of each ``name = name + g`` anywhere inside ``loop``."""
    found = {}
    for node in gast.walk(loop):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, s in enumerate(block):
                if s.__class__ is gast.Assign and len(s.targets) == 1 \
                        and s.targets[0].__class__ is gast.Name \
                        and s.value.__class__ is gast.BinOp and s.value.op.__class__ is gast.Add \
                        and s.value.left.__class__ is gast.Name \
                        and s.value.left.id == s.targets[0].id:
                    found.setdefault(s.targets[0].id, []).append((block, i, s))
    return found


def _mentions(node, name):
    return sum(1 for n in gast.walk(node) if n.__class__ is gast.Name and n.id == name)


def _zero_on_entry(before, name):
    """Whether the last of the statements ``before`` that mentions ``name`` is ``name = 0.0``."""
    for s in reversed(before):
        if _mentions(s, name):
            return (s.__class__ is gast.Assign and len(s.targets) == 1
                    and s.targets[0].__class__ is gast.Name and s.targets[0].id == name
                    and s.value.__class__ is gast.Constant and type(s.value.value) is float
                    and s.value.value == 0.0)
    return False


def _in_nested_scope(body, name):
    """Whether a function, lambda or class inside ``body`` mentions ``name`` (or says
    ``global``/``nonlocal``): it could hold the value beyond what the statements show."""
    for s in body:
        for node in gast.walk(s):
            if node.__class__ in (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                                  gast.ClassDef, gast.ListComp, gast.SetComp, gast.DictComp,
                                  gast.GeneratorExp) and _mentions(node, name):
                return True
            if node.__class__ in (gast.Global, gast.Nonlocal) and name in node.names:
                return True
    return False
