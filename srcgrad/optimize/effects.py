"""What evaluating a forward-sweep expression may do: nothing, raise, or more.

The forward sweep runs the user's own operations, so moving one of its expressions
(folding a temporary into its use, hoisting an invariant out of a loop) must keep
every effect and every error where it was. ``kind(e, classes)`` sorts an expression:

* ``SAFE``: no effect, and it cannot raise: names, numeric constants, arithmetic whose
  operands' shape classes provably broadcast (analysis/ranks.py) and is not a Python
  scalar's division or power (``safe_class``).
* ``RAISES``: no effect beyond its value, but it may raise: an index ``a[i]``, an
  attribute, a comparison, arithmetic on operands of unknown shape, a call of a NumPy
  function or ufunc (no ``out=``), of ``len``/``range``/``abs``/``min``/``max``, of a
  pure method of an array of known class, or of a runtime helper that only computes a
  value (``PURE_HELPERS``: ``rt.unbroadcast``, ``rt.tangent_zero``...). Calls a tangent
  rule wrote (no primitive recorded) are read by name: ``rt.<helper>`` and ``xp.<f>``,
  ``xp`` being the array namespace (``rt.namespace``) of NumPy's functions.
* ``None``: anything else (a user's call, a runtime helper, a lambda...): it stays put.
"""

import builtins

import gast
import numpy

from srcgrad import anno, rules
from srcgrad.analysis.ranks import SCALAR, UNKNOWN
from srcgrad.optimize.exprs import combine

Static = anno.Static

SAFE, RAISES = "safe", "raises"

_BUILTINS = (builtins.len, builtins.range, builtins.abs, builtins.min, builtins.max)
_METHODS = ("reshape", "sum", "mean", "max", "min", "prod", "transpose", "astype", "copy", "conj",
            "ravel", "squeeze")
# Runtime helpers that compute their value from their arguments and change nothing
# (they may raise); a tangent program (forward mode) calls them on every line.
PURE_HELPERS = frozenset({"namespace", "tangent_zero", "unbroadcast", "unreduce", "unreduce_like",
                          "tie_share", "matmul_grad_a", "matmul_grad_b", "has_grad", "has_grad_jvp",
                          "default_seed", "owned_zeros", "own"})
_RAISING = (gast.Subscript, gast.Attribute, gast.Compare, gast.BinOp, gast.UnaryOp, gast.BoolOp,
            gast.IfExp)


def kind(e, classes):
    """``SAFE``, ``RAISES`` or None for expression ``e`` (see the module docstring);
    ``classes``: shape classes (None: nothing known)."""
    classes = classes or {}
    if isinstance(e, gast.Name):
        return SAFE if isinstance(e.ctx, gast.Load) else None
    if isinstance(e, gast.Constant):
        return SAFE
    if isinstance(e, (gast.BinOp, gast.UnaryOp, gast.Call)) and safe_class(e, classes) is not None:
        return SAFE
    if isinstance(e, gast.Call):
        if not pure_call(e, classes):
            return None
        parts, own = list(e.args) + [k.value for k in e.keywords], RAISES
    elif isinstance(e, (gast.Tuple, gast.List)) and isinstance(e.ctx, gast.Load):
        parts, own = e.elts, SAFE
    elif isinstance(e, gast.Slice):
        parts, own = [p for p in (e.lower, e.upper, e.step) if p is not None], SAFE
    elif isinstance(e, _RAISING) and not isinstance(getattr(e, "ctx", gast.Load()), gast.Store):
        parts, own = [c for c in gast.iter_child_nodes(e) if isinstance(c, gast.expr)], RAISES
    else:
        return None
    found = own
    for p in parts:
        k = kind(p, classes)
        if k is None:
            return None
        if k == RAISES:
            found = RAISES
    return found


def pure_call(call, classes):
    """``call`` has no effect beyond its value (see the module docstring)."""
    classes = classes or {}
    if any(k.arg == "out" or k.arg is None for k in call.keywords) \
            or any(isinstance(a, gast.Starred) for a in call.args):
        return False
    primitive = anno.getanno(call, Static.PRIMITIVE)
    if primitive is None:
        primitive = _by_name(call.func)
    if isinstance(primitive, numpy.ufunc):
        return True
    if (getattr(primitive, "__module__", None) or "").startswith("srcgrad."):
        return getattr(primitive, "__name__", None) in PURE_HELPERS
    if isinstance(primitive, rules.Method):
        receiver = call.func.value if isinstance(call.func, gast.Attribute) else None
        return str(primitive) in _METHODS and isinstance(receiver, gast.Name) \
            and classes.get(receiver.id) not in (None, UNKNOWN, SCALAR)
    if any(primitive is b for b in _BUILTINS):
        return True
    module = getattr(primitive, "__module__", None) or ""
    if not module.startswith("numpy") or module.startswith("numpy.random"):
        return False
    try:
        key = rules._key(primitive)
        return key in rules.RULES or key in rules.NONDIFFERENTIABLE
    except TypeError:
        return False


def _by_name(func):
    """What ``rt.<helper>`` or ``xp.<f>`` (a call no pass recorded a primitive for) calls."""
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
        if func.value.id == "rt":
            from srcgrad import runtime
            return getattr(runtime, func.attr, None)
        if func.value.id == "xp":
            return getattr(numpy, func.attr, None)
    return None


def safe_class(e, classes):
    """The shape class of ``e`` when evaluating it cannot raise, else None."""
    if isinstance(e, gast.Constant):
        return SCALAR if type(e.value) in (int, float, bool) else None
    if isinstance(e, gast.Name):
        c = classes.get(e.id)
        return None if c in (None, UNKNOWN) else c
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return safe_class(e.operand, classes)
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult, gast.Div,
                                                         gast.Pow)):
        c = combine(safe_class(e.left, classes), safe_class(e.right, classes))
        # Python floats raise on x / 0 and on overflow; arrays (a class of their own) do not.
        return c if isinstance(e.op, (gast.Add, gast.Sub, gast.Mult)) or c != SCALAR else None
    if isinstance(e, gast.Call) and not e.keywords:
        primitive = anno.getanno(e, Static.PRIMITIVE)
        args = [safe_class(a, classes) for a in e.args]
        if isinstance(primitive, numpy.ufunc) and primitive.nout == 1 and len(args) == primitive.nin:
            return combine(*args)
        if primitive in (numpy.sum, numpy.mean) and len(args) == 1 and args[0] is not None:
            return SCALAR
    return None
