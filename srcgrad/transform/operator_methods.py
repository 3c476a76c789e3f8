"""Operator methods called by name (``x.__pow__(2)``, ``x.__rsub__(3.0)``) as their
operators, which the rules differentiate (transform/methods.py's Displays pass)."""

import gast


def simple(node):
    """A value that reading twice gives twice the same (no call, no side effect)."""
    return isinstance(node, (gast.Name, gast.Constant)) or (
        isinstance(node, gast.UnaryOp) and isinstance(node.operand, gast.Constant))


BINARY_DUNDERS = {"__add__": gast.Add, "__sub__": gast.Sub, "__mul__": gast.Mult,
                   "__truediv__": gast.Div, "__floordiv__": gast.FloorDiv, "__mod__": gast.Mod,
                   "__pow__": gast.Pow, "__matmul__": gast.MatMult}
_COMPARE_DUNDERS = {"__lt__": gast.Lt, "__le__": gast.LtE, "__gt__": gast.Gt, "__ge__": gast.GtE,
                    "__eq__": gast.Eq, "__ne__": gast.NotEq}
UNARY_DUNDERS = {"__neg__": gast.USub, "__pos__": gast.UAdd}


def operator_of_dunder(node):
    """``x.__pow__(2)`` as ``x ** 2``, ``x.__radd__(y)`` as ``y + x`` (where one of them is a
    name or a constant: Python reads ``x`` first), ``x.__neg__()`` as
    ``-x``, ``x.__getitem__(i)`` as ``x[i]``: the operator's rules differentiate it. (Where
    the method would return NotImplemented, Python's operator tries the other operand;
    the rewrite gives that value.) None for any other call."""
    func = node.func
    if not isinstance(func, gast.Attribute) or node.keywords or \
            any(isinstance(a, gast.Starred) for a in node.args):
        return None
    attr, args, receiver = func.attr, node.args, func.value
    if len(args) == 0 and attr in UNARY_DUNDERS:
        return gast.UnaryOp(op=UNARY_DUNDERS[attr](), operand=receiver)
    if len(args) != 1:
        return None
    if attr in BINARY_DUNDERS:
        return gast.BinOp(left=receiver, op=BINARY_DUNDERS[attr](), right=args[0])
    if attr in _COMPARE_DUNDERS:
        return gast.Compare(left=receiver, ops=[_COMPARE_DUNDERS[attr]()], comparators=[args[0]])
    if attr == "__getitem__":
        return gast.Subscript(value=receiver, slice=args[0], ctx=gast.Load())
    reflected = "__" + attr[3:] if attr.startswith("__r") else None
    if reflected in BINARY_DUNDERS and (simple(receiver) or simple(args[0])):
        return gast.BinOp(left=args[0], op=BINARY_DUNDERS[reflected](), right=receiver)
    return None
