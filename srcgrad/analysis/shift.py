"""Offsets that cancel: the maximum a stable softmax subtracts gets no adjoint.

``m = np.max(a, axis=k, keepdims=True)`` followed by ``z = a - m`` and then only
functions of ``z`` that do not change when a constant along axis ``k`` is added to it
(log-softmax ``z - log(sum(exp(z)))``, softmax ``exp(z) / sum(exp(z))``, logsumexp
``m + log(sum(exp(z)))``): the output does not depend on ``m`` at all, so its adjoint
(terms that cancel, then the maximum's tie sharing) is zero in exact arithmetic. JAX's
``logsumexp`` stops the gradient of its maximum for the same reason, and hand-written
softmax adjoints never compute it; srcgrad proves the cancellation before it drops it.

The proof follows each value that depends on ``m`` through the statements after it, as
``v0 + c*m`` ("add", c) or ``v0 * exp(c*m)`` ("mul", c) with ``v0`` free of ``m``:
subtracting two "add" values of one ``c`` (or dividing two "mul" values) leaves a value
free of ``m``. Anything else that reads such a value (another function, a store, a
loop, a second binding, the return) ends the proof: then nothing is dropped.
"""

import gast
import numpy

from srcgrad import anno, ast_util
from srcgrad.ast_util import reads
from srcgrad.rules import Method

Static = anno.Static

_MAXIMA = {numpy.max, numpy.amax, numpy.min, numpy.amin}
_FREE = None   # the abstract value of a name that does not depend on the offset


def cancelling_offsets(node, keep=()):
    """Names of top-level offsets ``m`` of ``node`` (a FunctionDef in A-normal form)
    that its output does not depend on; ``keep``: names that must keep their adjoint
    (``wrt`` locals, hooked names)."""
    offsets = [(i, offset) for i, offset in enumerate(map(_offset, node.body))
               if offset is not None and offset[0] not in keep]
    if not offsets:
        return set()   # (most functions: no maximum subtracted, no walk of the whole)
    stores = {}
    for n in ast_util.nodes_of(node, gast.Name):
        if isinstance(n.ctx, (gast.Store, gast.Del, gast.Param)):
            stores[n.id] = stores.get(n.id, 0) + 1
    found = set()
    for i, offset in offsets:
        if _cancels(node.body[i + 1:], *offset, stores):
            found.add(offset[0])
    return found


def _offset(s):
    """``(m, a, k)`` for ``m = np.max(a, axis=k, keepdims=True)`` (or amax, min, amin,
    the methods ``a.max(...)``), else None."""
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call)):
        return None
    call = s.value
    primitive = anno.getanno(call, Static.PRIMITIVE)
    if isinstance(primitive, Method) and str(primitive) in ("max", "min") \
            and isinstance(call.func, gast.Attribute):
        operand, args = call.func.value, call.args
    elif _is_one_of(primitive, _MAXIMA) and call.args:
        operand, args = call.args[0], call.args[1:]
    else:
        return None
    axis = _kept_axis(args, call.keywords)
    if not isinstance(operand, gast.Name) or axis is None:
        return None
    return s.targets[0].id, operand.id, axis


def _kept_axis(args, keywords):
    """The constant int axis of a reduction called with ``keepdims=True``, else None."""
    named = {k.arg: k.value for k in keywords}
    if set(named) - {"axis", "keepdims"} or len(args) > 1 or (args and "axis" in named):
        return None
    keep, axis = named.get("keepdims"), args[0] if args else named.get("axis")
    sign = 1
    if isinstance(axis, gast.UnaryOp) and isinstance(axis.op, gast.USub):
        sign, axis = -1, axis.operand   # axis=-1
    if not (isinstance(keep, gast.Constant) and keep.value is True
            and isinstance(axis, gast.Constant) and type(axis.value) is int):
        return None
    return sign * axis.value


def _cancels(after, m, a, axis, stores):
    """Whether every use of ``m`` in the statements ``after`` its binding cancels."""
    if stores.get(m) != 1 or stores.get(a) != 1:
        return False
    state = {m: ("add", 1)}
    for s in after:
        if not reads(s) & state.keys():
            continue
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name)):
            return False   # returned, stored, looped over, passed on: not followed here
        value = _transfer(s.value, state, a, axis)
        if value is False or (value is not _FREE and stores.get(s.targets[0].id) != 1):
            return False
        if value is not _FREE:
            state[s.targets[0].id] = value
    return True


def _transfer(e, state, a, axis):
    """The abstract value of ``e``: _FREE, ("add", c), ("mul", c), or False (not followed)."""
    if isinstance(e, gast.BinOp):
        return _binary(e.op, _operand(e.left, state, a), _operand(e.right, state, a))
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        v = _operand(e.operand, state, a)
        if isinstance(e.op, gast.UAdd) or v in (_FREE, False):
            return v
        return ("add", -v[1]) if v[0] == "add" else False
    if not isinstance(e, gast.Call):
        return False
    primitive = anno.getanno(e, Static.PRIMITIVE)
    if isinstance(primitive, Method) and isinstance(e.func, gast.Attribute):
        operand, args, name = e.func.value, e.args, str(primitive)
    elif e.args:
        operand, args = e.args[0], e.args[1:]
        name = "exp" if primitive is numpy.exp else "log" if primitive is numpy.log else \
            "sum" if primitive is numpy.sum else "max" if _is_one_of(primitive, _MAXIMA) else None
        if name in ("exp", "log") and (args or e.keywords):
            return False
    else:
        return False
    v = _operand(operand, state, a)
    if v in (_FREE, False) or name is None:
        return False
    if name in ("sum", "max") and _kept_axis(args, e.keywords) != axis:
        return False
    kind = {"exp": "add", "log": "mul", "sum": "mul", "max": "add"}.get(name)
    if kind != v[0]:
        return False
    return ("mul", v[1]) if name == "exp" else ("add", v[1]) if name == "log" else v


def _operand(e, state, a):
    """An operand's abstract value; ("free", ...) marks what may join a tracked value: a
    Python number, or ``a`` itself (which has the tracked values' shape)."""
    if isinstance(e, gast.Name) and e.id in state:
        return state[e.id]
    if isinstance(e, gast.Constant) and type(e.value) in (int, float):
        return ("free", "number")
    if isinstance(e, gast.Name) and e.id == a:
        return ("free", "operand")
    return False if reads(e) & state.keys() else ("free", None)


def _binary(op, left, right):
    if False in (left, right):
        return False
    (lk, lc), (rk, rc) = left, right
    if isinstance(op, (gast.Add, gast.Sub)):
        sign = 1 if isinstance(op, gast.Add) else -1
        if lk == rk == "add":
            return _scaled("add", lc + sign * rc)
        if lk == "add" and rk == "free" and rc is not None:
            return left
        if lk == "free" and lc is not None and rk == "add":
            return ("add", sign * rc)
        return False
    if isinstance(op, (gast.Mult, gast.Div)):
        sign = 1 if isinstance(op, gast.Mult) else -1
        if lk == rk == "mul":
            return _scaled("mul", lc + sign * rc)
        if lk == "mul" and rk == "free" and rc == "number":
            return left
        if lk == "free" and lc == "number" and rk == "mul":
            return ("mul", sign * rc)
    return False


def _scaled(kind, c):
    return _FREE if c == 0 else (kind, c)


def _is_one_of(primitive, group):
    try:
        return primitive in group
    except TypeError:   # an unhashable callable
        return False
