"""Python's arithmetic on numbers in a jit translation (translate.py), outside the fused
kernels (whose operands are arrays in the NumPy code, so they keep NumPy's arithmetic):

* ``a / b``, ``a // b``, ``a % b`` are ``_jrt.true_div(a, b)`` and its kin: a number
  divided by zero raises as in Python (Numba's NumPy error model gives inf);
* ``a + b``, ``a - b``, ``a * b``, ``a << b`` of two numbers are ``_jrt.exact_add(a, b)``
  and its kin (integers.py): an integer result past int64 raises, where Python's int grows;
* ``int(v)``, ``round(v)``, ``math.floor(v)`` (``ceil``, ``trunc``) of a float raise where
  Python's raise (NaN, inf) or its int grows past int64 (``_jrt.int_range(v)``).

A call that raises is run again by the NumPy gradient (dispatch.py)."""

import gast



def rewrite(function, scalars=frozenset()):
    """Rewrite ``function`` (a gast FunctionDef) in place. ``scalars``: names known to hold
    one number (pipeline.Compiled.scalars); names bound only to integers are found here."""
    _PythonNumbers(frozenset(scalars) | integer_names(function)).visit(function)


def integer_names(function):
    """The names ``function`` binds only to integers: an int constant, a ``range`` loop's
    target, ``+ - * // % <<`` of such, ``len``/``int``/``round``/``abs`` calls, and the
    tape slots of those (a fixpoint over every binding)."""
    bindings, seen = {}, set()
    for node in gast.walk(function):   # a statement before the names in it
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name):
            seen.add(id(node.targets[0]))
            bindings.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            seen.add(id(node.target))
            bindings.setdefault(node.target.id, []).append(
                gast.BinOp(left=node.target, op=node.op, right=node.value))
        elif isinstance(node, (gast.For, gast.AsyncFor)) and isinstance(node.target, gast.Name):
            seen.add(id(node.target))
            bindings.setdefault(node.target.id, []).append(("iter", node.iter))
        elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) and \
                id(node) not in seen:
            bindings.setdefault(node.id, []).append(None)   # unpacked, or else: unknown
    for arg in function.args.args:
        bindings.setdefault(arg.id, []).append(None)   # a parameter: any value
    ints = set(bindings)

    def integer(value):
        if isinstance(value, tuple):   # a loop's iterable
            it = value[1]
            if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
                    it.func.id == "range":
                return True
            if isinstance(it, gast.Call) and _is_jrt(it.func, "rev_range"):
                return True
            return isinstance(it, gast.Name) and it.id in ranges
        if isinstance(value, gast.Constant):
            return type(value.value) is int
        if isinstance(value, gast.Name):
            return value.id in ints
        if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd)):
            return integer(value.operand)
        if isinstance(value, gast.BinOp) and isinstance(value.op, _INTEGER_OPS):
            return integer(value.left) and integer(value.right)
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name):
            return value.func.id in ("len", "int")
        return False

    ranges = {n for n, values in bindings.items() if all(
        isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and v.func.id == "range"
        for v in values)}
    changed = True
    while changed:
        changed = False
        for n in list(ints):
            if not all(v is not None and integer(v) for v in bindings[n]):
                ints.discard(n)
                changed = True
    return frozenset(ints)


_INTEGER_OPS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod, gast.LShift)


_DIVISIONS = {gast.Div: "true_div", gast.FloorDiv: "floor_div", gast.Mod: "mod"}


_EXACT = {gast.Add: "exact_add", gast.Sub: "exact_sub", gast.Mult: "exact_mul",
          gast.LShift: "exact_lshift"}
_NUMBER_CALLS = frozenset({"int", "len", "round", "abs", "min", "max", "sum"})


class _PythonNumbers(gast.NodeTransformer):
    """Divisions and powers outside the fused kernels as runtime.true_div and its kin: a
    number divided by zero raises as in Python (Numba's NumPy error model gives inf).
    ``v /= e`` on a name is ``v = _jrt.true_div_into(v, e)`` (an array stays in place).
    ``+ - * <<`` of two numbers (``scalars``: the names known to hold one, integer
    constants, such calls) are integers.py's ``_jrt.exact_add`` and its kin: an integer
    result past int64 raises, where Python's int grows. A kernel's operands are arrays in
    the NumPy code, so it keeps NumPy's arithmetic."""

    def __init__(self, scalars=frozenset()):
        self.scalars = scalars

    def _number(self, node):
        if isinstance(node, gast.Name):
            return node.id in self.scalars
        if isinstance(node, gast.Constant):
            return type(node.value) is int
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
            return self._number(node.operand)
        if isinstance(node, gast.Call):
            f = node.func
            return isinstance(f, gast.Name) and f.id in _NUMBER_CALLS or any(
                _is_jrt(f, h) for h in _EXACT.values())
        if isinstance(node, gast.Subscript):   # an item (of a list of ints: L[-1] * 2)
            return not isinstance(node.slice, (gast.Slice, gast.Tuple))
        return False

    def visit_Call(self, node):
        self.generic_visit(node)
        if _is_jrt(node.func, "power"):
            node.func.attr = "checked_power"
        f = node.func
        if len(node.args) == 1 and not node.keywords and (
                isinstance(f, gast.Name) and f.id in ("int", "round") or
                isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and
                f.value.id == "math" and f.attr in ("floor", "ceil", "trunc")):
            node.args = [_call("_jrt", "int_range", node.args)]   # NaN, inf, past int64
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        exact = _EXACT.get(type(node.op))
        if exact is not None and self._number(node.left) and self._number(node.right):
            return _call("_jrt", exact, [node.left, node.right])
        helper = _DIVISIONS.get(type(node.op))
        return node if helper is None else _call("_jrt", helper, [node.left, node.right])

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        exact = _EXACT.get(type(node.op))
        if exact is not None and isinstance(node.target, gast.Name) and \
                self._number(node.target) and self._number(node.value):
            return _assign(node.target.id, _call("_jrt", exact, [_name(node.target.id),
                                                                 node.value]))
        helper = _DIVISIONS.get(type(node.op))
        if helper is None or not isinstance(node.target, gast.Name):
            return node   # an item of an array: NumPy's division, as in the NumPy code
        return _assign(node.target.id, _call("_jrt", helper + "_into",
                                             [_name(node.target.id), node.value]))


def _is_jrt(func, helper):
    return isinstance(func, gast.Attribute) and func.attr == helper and \
        isinstance(func.value, gast.Name) and func.value.id == "_jrt"


def _name(n, ctx=None):
    return gast.Name(id=n, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def _call(owner, attr, args):
    return gast.Call(func=gast.Attribute(value=_name(owner), attr=attr, ctx=gast.Load()),
                     args=list(args), keywords=[])


def _assign(n, value):
    return gast.Assign(targets=[_name(n, gast.Store())], value=value, type_comment=None)
