"""Questions passes ask about expressions of the sweep: purity, shape class, arithmetic reads."""

import gast
import numpy

from srcgrad.analysis.ranks import SCALAR, UNKNOWN, combine_classes
from srcgrad.ast_util import is_rt_call
from srcgrad.optimize.facts import EFFECTFUL
from srcgrad import ast_util

# Array methods that neither change their array nor call user code.
_PURE_METHODS = ("reshape", "sum", "T", "astype", "transpose", "copy", "conj")
_SHAPE_HELPERS = ("unbroadcast", "unreduce")


def pure(value):
    """Evaluating ``value`` has no effect beyond its result (the sweep's own calls)."""
    return pure_calls(ast_util.nodes_of(value, gast.Call))


def pure_calls(calls):
    """Each of ``calls`` (``gast.Call`` nodes, as ``NameSets.calls`` memoizes them) has no
    effect beyond its result: ``pure`` of the node that holds them."""
    for n in calls:
        func = n.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                and func.value.id in ("rt", "xp"):
            if func.attr in EFFECTFUL:
                return False
            continue
        if isinstance(func, gast.Attribute) and func.attr in _PURE_METHODS:
            continue
        return False
    return True


def scalar_ufunc(func):
    """``xp.<ufunc>`` with one output, or the rules' ``rt.divide`` and ``rt.power``
    (NumPy's meaning on numbers): a scalar for scalar arguments."""
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
        if func.value.id == "xp":
            f = getattr(numpy, func.attr, None)
            return isinstance(f, numpy.ufunc) and f.nout == 1
        return func.value.id == "rt" and func.attr in ("divide", "power")
    return False


def shape_helper(node):
    """``rt.unbroadcast(g, x)`` or ``rt.unreduce(g, x, ...)`` with ``x`` a name."""
    return (any(is_rt_call(node, attr) for attr in _SHAPE_HELPERS) and len(node.args) >= 2
            and isinstance(node.args[1], gast.Name))


def combine(*classes):
    """The class of an elementwise result (analysis/ranks.py), None when unknown."""
    found = combine_classes(*classes)
    return None if found == UNKNOWN else found


def class_of(e, classes):
    """The shape class ``e``'s value broadcasts into (analysis/ranks.py), or None."""
    if isinstance(e, gast.Constant):
        return SCALAR if type(e.value) in (int, float, bool) else None
    if isinstance(e, gast.Name):
        return classes.get(e.id)
    if isinstance(e, gast.BinOp):
        if isinstance(e.op, gast.MatMult):
            return None
        return combine(class_of(e.left, classes), class_of(e.right, classes))
    if isinstance(e, gast.UnaryOp):
        return class_of(e.operand, classes) if isinstance(e.op, (gast.USub, gast.UAdd)) else None
    if isinstance(e, gast.Call) and not e.keywords:
        if shape_helper(e):
            return classes.get(e.args[1].id)
        if scalar_ufunc(e.func):
            return combine(*(class_of(a, classes) for a in e.args))
    return None


def arithmetic_loads(e):
    """Names ``e`` reads only as operands of arithmetic (which cannot return them)."""
    found = set()
    if isinstance(e, gast.BinOp):
        parts = [e.left, e.right]
    elif isinstance(e, gast.UnaryOp):
        parts = [e.operand]
    elif isinstance(e, gast.Call) and scalar_ufunc(e.func) and not e.keywords:
        parts = e.args
    else:
        return found
    for p in parts:
        if isinstance(p, gast.Name):
            found.add(p.id)
        else:
            found |= arithmetic_loads(p)
    return found
