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

from srcgrad import anno, ast_util, ast_walks

Static = anno.Static
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef, gast.ListComp,
           gast.SetComp, gast.DictComp, gast.GeneratorExp)


def run(body, seeded, floats, names):
    """Rewrite the accumulations of the loops of ``body`` after its statement ``seeded`` (the
    backward sweep's); returns whether any changed. Each statement rewritten is replaced in
    its block (the blocks are the composing copy's own, the simple statements the sweep's:
    templates.composing_copy). ``names``: the statements' ``NameSets`` (each mention is
    asked of them, not walked)."""
    changed = False
    start = next(k for k, s in enumerate(body) if s is seeded)
    for k in range(start, len(body)):
        loop = body[k]
        if loop.__class__ not in (gast.For, gast.While):
            continue
        statements = [(block, i, s) for block in _blocks(loop) for i, s in enumerate(block)]
        if any(s.__class__ in _CATCHING for _, _, s in statements):
            continue   # (an error caught in the loop would leave d half added into)
        found = {}
        for entry in statements:
            d = _accumulated(entry[2])
            if d is not None:
                found.setdefault(d, []).append(entry)
        candidates = {d for d in found if d not in floats}
        for part in ast_util.own_parts(loop):   # every other mention in the loop disqualifies
            candidates -= names.refs_among(part, candidates)
        for _, _, s in statements:
            if not candidates:
                break
            d = _accumulated(s)
            parts = [s.value.right] if d is not None else \
                ast_util.own_parts(s) if s.__class__ in (gast.If, gast.For, gast.While) else [s]
            for part in parts:
                candidates -= names.refs_among(part, candidates)
        if not candidates:
            continue
        candidates -= _in_nested_scopes(body[:k] + body[k + 1:], candidates, names)   # (the loop's
        # mentions are its additions' own: checked above)
        for d in _zero_on_entry(body[:k], candidates, names):
            for block, i, s in found[d]:   # a new statement: the sweep's own is shared
                block[i] = anno.copyanno(s, gast.Assign(targets=s.targets, value=gast.Call(
                    func=gast.Attribute(value=gast.Name(id="rt", ctx=gast.Load(), annotation=None,
                                                        type_comment=None),
                                        attr="add_into", ctx=gast.Load()),
                    args=[s.value.left, s.value.right], keywords=[]), type_comment=None), *Static)
            changed = True
    return changed


_CATCHING = (gast.Try, gast.With) + ((gast.TryStar,) if hasattr(gast, "TryStar") else ())


def _blocks(loop):
    """The statement lists inside ``loop`` (its own and those of the statements in them)."""
    out = [b for b in (loop.body, loop.orelse) if b]
    for block in out:   # (a list iterator sees what is appended while it runs)
        for s in block:   # (a try's handlers need no look: run skips a loop holding a try)
            out.extend(b for b in ast_util.child_blocks(s) if b)
    return out


def _accumulated(s):
    """``d`` where ``s`` is ``d = d + g``, else None."""
    if s.__class__ is gast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is gast.Name \
            and s.value.__class__ is gast.BinOp and s.value.op.__class__ is gast.Add \
            and s.value.left.__class__ is gast.Name and s.value.left.id == s.targets[0].id:
        return s.targets[0].id
    return None


def _zero_on_entry(before, wanted, names):
    """Those of ``wanted`` whose last mention in the statements ``before`` is ``name = 0.0``."""
    out, todo = [], set(wanted)
    for s in reversed(before):
        if not todo:
            break
        for n in names.refs_among(s, todo):
            todo.discard(n)
            if s.__class__ is gast.Assign and len(s.targets) == 1 \
                    and s.targets[0].__class__ is gast.Name and s.targets[0].id == n \
                    and s.value.__class__ is gast.Constant and type(s.value.value) is float \
                    and s.value.value == 0.0:
                out.append(n)
    return out


def _in_nested_scopes(body, wanted, names):
    """Those of ``wanted`` that a function, lambda, class or comprehension inside ``body``
    mentions (or a ``global``/``nonlocal`` names): it could hold the value beyond what the
    statements show. Only the statements that mention one are walked."""
    out = set()
    for s in body:
        if s.__class__ in (gast.Global, gast.Nonlocal):
            out.update(wanted.intersection(s.names))
        mentioned = names.refs_among(s, wanted)
        if not mentioned:
            continue
        for kind, found in zip(_SCOPES + (gast.Global, gast.Nonlocal),
                               ast_walks.nodes_of_classes(s, _SCOPES + (gast.Global, gast.Nonlocal))):
            for node in found:
                inner = set(node.names) if kind in (gast.Global, gast.Nonlocal) else {
                    n.id for n in ast_util.nodes_of(node, gast.Name)}
                out |= inner & mentioned
    return out
