"""A recursive helper called with integer constants, unrolled: each call is inlined with
those parameters replaced by their values, and what they decide worked out now.

    def power_tower(a, n):                 rec(x, 2) is inlined as
        if n == 0:                             (n == 0: False, pruned)
            return a                           rec(x * 1.1, 1) + x
        return power_tower(a * 1.1, n - 1) + a      ... down to rec(..., 0): a

A parameter is replaced only where the helper never binds that name (not even in a
comprehension, lambda or nested def). Constant expressions of ints, bools and None
are evaluated as Python evaluates them (``and``/``or`` keep their operand values), and an
``if`` whose test is constant keeps the branch it takes: the recursive call in the branch
not taken is never inlined (inline.py allows a call back into a function being inlined
only with such constants, down to 64 levels).
"""

import operator

import gast

from srcgrad import ast_util

MAX_DEPTH = 64   # levels of one recursive helper inlined before the recursion is refused

_BINARY = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
           gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod, gast.Div: operator.truediv,
           gast.BitAnd: operator.and_, gast.BitOr: operator.or_, gast.BitXor: operator.xor}
_UNARY = {gast.USub: operator.neg, gast.UAdd: operator.pos, gast.Not: operator.not_,
          gast.Invert: operator.invert}
_COMPARE = {gast.Eq: operator.eq, gast.NotEq: operator.ne, gast.Lt: operator.lt,
            gast.LtE: operator.le, gast.Gt: operator.gt, gast.GtE: operator.ge,
            gast.Is: operator.is_, gast.IsNot: operator.is_not}


def is_constant_argument(value):
    """Whether a call's argument (after A-normal form) is one this module substitutes."""
    return isinstance(value, gast.Constant) and type(value.value) in (int, bool)


def bind(node, constants):
    """``node`` (a helper's def) with the parameters in ``constants`` (name -> int or bool)
    read as their values where it never rebinds them, constant expressions folded and
    constant branches pruned."""
    bound = {n.id for n in ast_util.walk(node) if isinstance(n, gast.Name)
             and not isinstance(n.ctx, gast.Load)} - {a.id for a in _params(node)}
    constants = {k: v for k, v in constants.items() if k not in bound}
    if constants:
        node.body = _Folder(constants).block(node.body)
    return node


def _params(node):
    args = node.args
    return args.posonlyargs + args.args + args.kwonlyargs


class _Folder(gast.NodeTransformer):
    def __init__(self, constants):
        self.constants = constants

    def block(self, body):
        out = []
        for stmt in body:
            if isinstance(stmt, (gast.FunctionDef, gast.Lambda)):
                out.append(stmt)   # its own scope (its parameters may shadow ours)
                continue
            stmt = self.visit(stmt)
            if isinstance(stmt, gast.If) and _is_constant(stmt.test):
                out.extend(stmt.body if stmt.test.value else stmt.orelse)
                continue
            if isinstance(stmt, gast.While) and _is_constant(stmt.test) and not stmt.test.value:
                out.extend(stmt.orelse)
                continue
            out.append(stmt)
        return out or [gast.Pass()]

    def generic_visit(self, node):
        for field in ("body", "orelse"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                setattr(node, field, self.block(inner))
        for field, value in gast.iter_fields(node):
            if field in ("body", "orelse") and isinstance(value, list):
                continue
            if isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, gast.AST) else v for v in value])
            elif isinstance(value, gast.AST):
                setattr(node, field, self.visit(value))
        return node

    def visit_Lambda(self, node):
        return node

    def visit_FunctionDef(self, node):
        return node

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.constants:
            return gast.copy_location(gast.Constant(value=self.constants[node.id], kind=None), node)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        fold = _BINARY.get(type(node.op))
        if fold is not None and _is_constant(node.left) and _is_constant(node.right):
            return _evaluated(node, fold, node.left.value, node.right.value)
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        fold = _UNARY.get(type(node.op))
        if fold is not None and _is_constant(node.operand):
            return _evaluated(node, fold, node.operand.value)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        parts = [node.left] + node.comparators
        if not all(_is_constant(p) for p in parts) or \
                not all(type(op) in _COMPARE for op in node.ops):
            return node
        result = True
        for op, left, right in zip(node.ops, parts, parts[1:]):
            try:
                result = _COMPARE[type(op)](left.value, right.value)
            except TypeError:
                return node
            if not result:
                break
        return gast.copy_location(gast.Constant(value=bool(result), kind=None), node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        values = list(node.values)
        deciding = bool if isinstance(node.op, gast.Or) else operator.not_
        while values and _is_constant(values[0]):
            if deciding(values[0].value) or len(values) == 1:
                return values[0]   # Python's value: the operand that decides, or the last
            values.pop(0)
        if len(values) == 1:
            return values[0]
        node.values = values
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if _is_constant(node.test):
            return node.body if node.test.value else node.orelse
        return node


def _is_constant(node):
    return isinstance(node, gast.Constant) and (node.value is None or type(node.value) in (int, bool))


def _evaluated(node, fold, *values):
    try:
        value = fold(*values)
    except (ArithmeticError, TypeError, ValueError):
        return node   # raised when it runs, as in Python
    if type(value) not in (int, bool) or (type(value) is int and abs(value) > 2 ** 62):
        return node
    return gast.copy_location(gast.Constant(value=value, kind=None), node)
