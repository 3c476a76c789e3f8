"""A name that is the number 0.0 at one point and an array at another, in Numba source.

The NumPy gradient starts an adjoint as the number 0.0 (and resets it to 0.0 inside
loops) and binds it to an array where a gradient arrives; Numba gives one name one type
("Cannot unify float64 and array(...)"). For the names Numba reports so (dispatch.py
retranslates with them), the zero number is written ``None`` (Numba types the name
``Optional(array)``), and every read of such a name ``v`` computes what the NumPy code
computes with 0.0 in its place, or hands the call to the NumPy gradient:

* ``v = 0.0`` becomes ``v = None`` (only +0.0: another constant keeps its type);
* ``_jrt.has_grad(v)``, ``_jrt.need_grad(v)``, ``_jrt.fits(v, g)``, ``_jrt.add_at(v, ...)``
  take None as the zero number (False, ZeroAdjoint, False, add_at of 0.0), and
  ``_jrt.add_grad(a, b)`` in either place (the other, as the NumPy helper returns it);
* ``a + b``, ``a - b``, ``a * b`` with ``v`` an operand become ``_jrt.zadd(a, b)`` etc.:
  ``0.0 op other`` where ``v`` is None, exactly NumPy's (0.0 * inf is nan there too);
  where the zero's result would be a number and the other branch's an array, None
  raises ZeroAdjoint (that call runs the NumPy gradient);
* ``v += g`` (``-=``, ``*=``: inplace.py writes them only where ``fits`` held, so ``v``
  is an array then) becomes ``v = _jrt.iadd(v, g)``;
* ``t[i] += v`` (``-=``, ``*=``) becomes ``_jrt.iadd_at(t, i, v)``: ``t[i] += 0.0`` where
  ``v`` is None, as the NumPy code computes (no ZeroAdjoint). Numba's typing of an
  in-place array operator crashes (an AttributeError, not a TypingError it would retry)
  on the ``none`` type ``nz(v)`` has before ``v``'s type is complete;
* any other read is ``_jrt.nz(v)``: ``v``, or ZeroAdjoint where it is None.

So a value computed from ``v`` is the NumPy code's value, or the call runs the NumPy
gradient: no branch the NumPy code skips runs, and no shape changes.
"""

import math

import gast

from srcgrad import anno

_OPS = {gast.Add: "zadd", gast.Sub: "zsub", gast.Mult: "zmul"}
_INPLACE = {gast.Add: "iadd", gast.Sub: "isub", gast.Mult: "imul"}
_INPLACE_AT = {gast.Add: "iadd_at", gast.Sub: "isub_at", gast.Mult: "imul_at"}
_ZERO_AWARE = ("has_grad", "need_grad", "fits", "add_at")


def predicted(function):
    """The names Numba would report one at a time (each report a failed typing and a
    translation again: W7's first call took five): those bound to the zero ``0.0`` and,
    elsewhere, to a value that is an array whichever values run (``_SURELY``), one of the
    two bindings inside a loop or a branch (where the two reach one read, Numba cannot
    unify them; in straight code it types each binding apart). Writing a name's zero None
    never changes a result (the module docstring), so a prediction costs at most a call
    that reads a zero the rewrite does not take, which runs the NumPy gradient."""
    zero, array, nested = set(), set(), set()
    arrays = _array_names(function)

    def visit(body, depth):
        for s in body:
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], gast.Name):
                n = s.targets[0].id
                kind = zero if is_zero(s.value) else array if _surely_array(s.value, arrays) \
                    else None
                if kind is not None:
                    kind.add(n)
                    if depth:
                        nested.add(n)
            if isinstance(s, (gast.For, gast.While, gast.If)):
                visit(s.body, depth + 1)
                visit(s.orelse, depth + 1)
    visit(function.body, 0)
    return frozenset(zero & array & nested)


# calls whose value is an array for every value they are compiled for (the Numba forms
# refuse anything else, and NumPy's transpose of a number is a 0-d array too)
_SURELY = {("_jrt", "matmul_grad_a"), ("_jrt", "matmul_grad_b"), ("_jrt", "dot_grad_a"),
           ("_jrt", "dot_grad_b"), ("_jrt", "owned_zeros"), ("np", "transpose"),
           ("np", "ascontiguousarray"), ("np", "zeros"), ("np", "ones"), ("np", "empty")}


def _surely_array(value, arrays):
    if isinstance(value, gast.Name):
        return value.id in arrays
    if isinstance(value, gast.BinOp) and type(value.op) in _OPS:
        return _surely_array(value.left, arrays) or _surely_array(value.right, arrays)
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.USub):
        return _surely_array(value.operand, arrays)
    f = getattr(value, "func", None)
    return isinstance(value, gast.Call) and isinstance(f, gast.Attribute) and \
        isinstance(f.value, gast.Name) and (f.value.id, f.attr) in _SURELY


def _array_names(function):
    """The names every binding of which is a surely-array call (``_sg_t0 = np.transpose(g)``)."""
    stores, surely = {}, {}
    for node in gast.walk(function):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name) and _surely_array(node.value, ()):
            surely[node.targets[0].id] = surely.get(node.targets[0].id, 0) + 1
    return {n for n, k in surely.items() if stores.get(n) == k}


class Unsupported(Exception):
    """A read of such a name this module does not rewrite."""


def optional_zeros(function, names):
    """Rewrite ``function`` (the translated gast FunctionDef) in place for ``names``."""
    names = frozenset(names)
    function.body = _block(function.body, names)


def is_zero(value):
    return isinstance(value, gast.Constant) and type(value.value) is float and \
        value.value == 0.0 and math.copysign(1.0, value.value) > 0


def _block(body, names):
    out = []
    for s in body:
        out.append(_statement(s, names))
    return out


def _statement(s, names):
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
            and s.targets[0].id in names and is_zero(s.value):
        s.value = gast.Constant(value=None, kind=None)
        return s
    if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name) and s.target.id in names:
        helper = _INPLACE.get(type(s.op))
        if helper is None:
            raise Unsupported(f"{type(s.op).__name__}= of {s.target.id}")
        new = gast.Assign(targets=[s.target], value=_call(helper, [
            _name(s.target.id), _Reads(names).visit(s.value)]), type_comment=None)
        anno.setanno(new, anno.Static.ORIGIN, anno.getanno(s, anno.Static.ORIGIN))
        return new
    if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Subscript) and \
            isinstance(s.value, gast.Name) and s.value.id in names and type(s.op) in _INPLACE_AT:
        target = _subscript_target(s.target, names)
        new = gast.Expr(value=_call(_INPLACE_AT[type(s.op)], [
            target.value, _as_value(target.slice), _name(s.value.id)]))
        anno.setanno(new, anno.Static.ORIGIN, anno.getanno(s, anno.Static.ORIGIN))
        return new
    if isinstance(s, (gast.For, gast.While, gast.If)):
        if isinstance(s, gast.For):
            s.iter = _Reads(names).visit(s.iter)
        else:
            s.test = _Reads(names).visit(s.test)
        s.body = _block(s.body, names)
        s.orelse = _block(s.orelse, names)
        return s
    reads = _Reads(names)
    for field in s._fields:
        value = getattr(s, field)
        if isinstance(value, gast.expr):
            setattr(s, field, _target(value, names) if field in ("target", "targets")
                    else reads.visit(value))
        elif isinstance(value, list) and field == "targets":
            setattr(s, field, [_target(t, names) for t in value])
    return s


def _target(t, names):
    """A store target: names stay; a subscript's value and index are reads."""
    if isinstance(t, gast.Name):
        return t
    if isinstance(t, (gast.Tuple, gast.List)):
        t.elts = [_target(e, names) for e in t.elts]
        return t
    return _Reads(names).visit(t) if not isinstance(t, gast.Subscript) else \
        _subscript_target(t, names)


def _subscript_target(t, names):
    t.value = _Reads(names).visit(t.value)
    t.slice = _Reads(names).visit(t.slice)
    return t


def _as_value(index):
    """An index as a call argument: a slice ``a:b:c`` as ``slice(a, b, c)``."""
    if isinstance(index, gast.Slice):
        parts = [p or gast.Constant(value=None, kind=None)
                 for p in (index.lower, index.upper, index.step)]
        return gast.Call(func=gast.Name(id="slice", ctx=gast.Load(), annotation=None,
                                        type_comment=None), args=parts, keywords=[])
    if isinstance(index, gast.Tuple):
        index.elts = [_as_value(e) for e in index.elts]
    return index


class _Reads(gast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def _mine(self, node):
        return isinstance(node, gast.Name) and node.id in self.names and \
            isinstance(node.ctx, gast.Load)

    def visit_BinOp(self, node):
        helper = _OPS.get(type(node.op))
        if helper and (self._mine(node.left) or self._mine(node.right)):
            left = node.left if self._mine(node.left) else self.visit(node.left)
            right = node.right if self._mine(node.right) else self.visit(node.right)
            return _call(helper, [left, right])
        self.generic_visit(node)
        return node

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                f.value.id == "_jrt" and f.attr == "add_grad" and len(node.args) == 2 and \
                not node.keywords:   # None in either place: the other as it is (containers.py)
            node.args = [a if self._mine(a) else self.visit(a) for a in node.args]
            return node
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                f.value.id == "_jrt" and f.attr in _ZERO_AWARE and node.args and \
                self._mine(node.args[0]):
            node.args = node.args[:1] + [self.visit(a) for a in node.args[1:]]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        if self._mine(node):
            return _call("nz", [node])
        return node


def _name(n):
    return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)


def _call(helper, args):
    return gast.Call(func=gast.Attribute(value=_name("_jrt"), attr=helper, ctx=gast.Load()),
                     args=list(args), keywords=[])
