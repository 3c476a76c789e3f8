"""Tapes of numbers sized by a loop's trip count: a float64 array and a count, not a list.

translate.py writes each tape key as a Numba list (``_tape_k = []``, ``.append(v)``,
``v = _tape_k.pop()``): an allocation, a growth check per push, about 0.1 us of W2's
0.3 us of compiled work. Where every push of a key lies in the body of one ``for`` loop
at the function's top level (not inside a loop nested in it, not in its ``else``), the
loop runs at most ``len(iterable)`` times and each of those push statements at most once
per turn: the key holds at most ``len(iterable) * pushes`` values, known before the loop.
That key becomes (issue 15 item 1, "typed preallocated arrays sized by the trip count")::

    _tape_k = _jrt.tape_new(range_i, 2)        # before the loop: np.empty(len * 2)
    _sg_tn_tape_k = 0
    _sg_tn_tape_k = _jrt.tape_push(_tape_k, _sg_tn_tape_k, v)   # a push
    _sg_tn_tape_k = _jrt.tape_down(_sg_tn_tape_k)   # a pop: the count less one,
    v = _tape_k[_sg_tn_tape_k]                       #   then the value there

Only keys whose pushed values are names holding one number (pipeline.Compiled.scalars)
are taken; the array is float64, and ``tape_push`` refuses any other value type (an
int64 or a bool would not come back the same): that typing error makes dispatch.py
translate the gradient again with that key a list (``lists``), so results never differ.
A push past the end or a pop of an empty tape raises IndexError (the NumPy gradient
then runs), as the list would.
"""

import gast

from srcgrad import anno

TAPE_REFUSAL = "srcgrad jit: rt.tape_"   # in the typing error of a value the array cannot hold


def fix(body, numbers, lists=frozenset()):
    """Rewrite the eligible tape keys of the function ``body`` (a list of statements, its
    top level) in place, but for the ``_tape_k`` names in ``lists``; the names rewritten."""
    truths = {t.id for s in _walk(body) if isinstance(s, gast.Assign) and isinstance(
        s.value, (gast.Compare, gast.BoolOp)) for t in s.targets if isinstance(t, gast.Name)}
    numbers = set(numbers) - truths   # a condition pushed is a bool: its key stays a list
    pushes = {}   # key name -> its push statements (Expr of _tape_k.append(v)), anywhere
    for s in _walk(body):
        key = _push_key(s)
        if key is not None:
            pushes.setdefault(key, []).append(s)
    fixed = {}   # key name -> (index in body of its loop, count of pushes)
    for index, s in enumerate(body):
        if not isinstance(s, gast.For) or not isinstance(s.iter, gast.Name):
            continue
        inside = {}
        for t in _walk(s.body, into_loops=False):
            key = _push_key(t)
            if key is not None:
                inside[key] = inside.get(key, 0) + 1
        for key, count in inside.items():
            if key not in lists and count == len(pushes[key]) and all(
                    isinstance(p.value.args[0], gast.Name) and p.value.args[0].id in numbers
                    for p in pushes[key]):
                fixed[key] = (index, count)
    if not fixed:
        return set()
    _rewrite(body, set(fixed))   # (a loop's own statement stays in place)
    for key, (index, count) in fixed.items():
        fixed[key] = (body[index], count)
    for key, (loop, count) in sorted(fixed.items()):   # the allocations before their loop
        at = next(i for i, s in enumerate(body) if s is loop)
        body[at:at] = [_assign(key, _jrt("tape_new", [_name(loop.iter.id), gast.Constant(
            value=count, kind=None)]), loop), _assign(_count(key), gast.Constant(value=0, kind=None), loop)]
    return set(fixed)


def _rewrite(body, keys):
    """The pushes and pops of ``keys`` in ``body`` (and the blocks in it), in place."""
    out = []
    for s in body:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                _rewrite(inner, keys)
        key = _push_key(s)
        if key in keys:
            out.append(_assign(_count(key), _jrt("tape_push", [
                _name(key), _name(_count(key)), s.value.args[0]]), s))
            continue
        key = _pop_key(s)
        if key in keys:
            out.append(_assign(_count(key), _jrt("tape_down", [_name(_count(key))]), s))
            s.value = gast.Subscript(value=_name(key), slice=_name(_count(key)),
                                     ctx=gast.Load())
        out.append(s)
    body[:] = out


def _walk(body, into_loops=True):
    for s in body:
        yield s
        if isinstance(s, (gast.For, gast.While)) and not into_loops:
            continue
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                yield from _walk(inner, into_loops)


def _push_key(s):
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
        f = s.value.func
        if isinstance(f, gast.Attribute) and f.attr == "append" and isinstance(f.value, gast.Name) \
                and f.value.id.startswith("_tape_") and len(s.value.args) == 1:
            return f.value.id
    return None


def _pop_key(s):
    if isinstance(s, gast.Assign) and isinstance(s.value, gast.Call) and not s.value.args:
        f = s.value.func
        if isinstance(f, gast.Attribute) and f.attr == "pop" and isinstance(f.value, gast.Name) \
                and f.value.id.startswith("_tape_"):
            return f.value.id
    return None


def _count(key):
    return "_sg_tn" + key   # not a _tape_ name: no key's list can take it


def _name(n, ctx=None):
    return gast.Name(id=n, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def _jrt(helper, args):
    return gast.Call(func=gast.Attribute(value=_name("_jrt"), attr=helper, ctx=gast.Load()),
                     args=list(args), keywords=[])


def _assign(n, value, like):
    """``n = value``, with the user's line of the statement ``like``."""
    s = gast.Assign(targets=[_name(n, gast.Store())], value=value, type_comment=None)
    anno.copyanno(like, s, anno.Static.ORIGIN)
    return s
