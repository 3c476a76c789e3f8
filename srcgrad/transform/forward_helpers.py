"""Helpers of forward.py (the tangent program): grad-mode blocks, custom Functions and
the names an indexed write changes."""

import gast

from srcgrad import anno, ast_util, rules
from srcgrad.analysis.activity import primitive_of
from srcgrad.rules import Method
from srcgrad.templates import name

Static = anno.Static


def constant(s):
    """True where ``s`` binds constants (under ``sg.no_grad``, ``sg.detach``); the flag's
    name under ``sg.set_grad_enabled(flag)``; else None. Reverse mode gives such a
    statement no adjoint, so its targets' tangents are zero (when the flag is false)."""
    return True if anno.getanno(s, Static.NO_ADJOINT) else anno.getanno(s, Static.GRAD_FLAG)


def gated(flag, tangent, zero):
    """``tangent if flag else zero``: a tangent under ``set_grad_enabled(flag)``."""
    return gast.IfExp(test=name(flag), body=tangent, orelse=zero)

def _applied_class(value):
    """The custom Function whose ``apply`` the call ``value`` is, else None."""
    if not isinstance(value, gast.Call):
        return None
    from srcgrad.custom_function import is_apply
    return is_apply(primitive_of(value))


def _is_custom_function(primitive):
    try:
        from srcgrad.custom_function import Function
        return isinstance(primitive, type) and issubclass(primitive, Function) or \
            isinstance(getattr(primitive, "__self__", None), type) and \
            issubclass(primitive.__self__, Function)
    except Exception:
        return False


def written_names(node):
    """Names whose arrays an indexed write changes in place."""
    out = set()
    for s in ast_util.walk(node):
        if isinstance(s, gast.Assign):
            for t in s.targets:
                while isinstance(t, gast.Subscript):
                    t = t.value
                    if isinstance(t, gast.Name):
                        out.add(t.id)
    return out


def _pure_library_call(primitive):
    """Whether ``primitive`` is a library function or an array method with a rule that
    returns its value and changes no argument (in-place forms and changing methods are
    rewritten or refused before, as in reverse mode). srcgrad's own (``sg.register_hook``)
    stay refused."""
    from srcgrad.transform.outside_effects import MUTATORS
    if isinstance(primitive, Method):
        return rules.lookup(primitive) is not None and str(primitive) not in MUTATORS \
            and not str(primitive).startswith("__")
    return primitive is not None and (
        rules.lookup(primitive) is not None or rules.is_nondifferentiable(primitive)) \
        and not (getattr(primitive, "__module__", None) or "").startswith("srcgrad")
