"""Structural zeros in a gradient that is differentiated again.

The reverse sweep skips a rule while its adjoint is a scalar zero (``if rt.has_grad(d):``),
which holds the value; differentiated again, a skipped rule's derivative with respect to
the adjoint is lost where the adjoint is a computed 0 (``sin(x) * x`` at ``x = 0``: half
the second derivative). In code composed to be read again (pipeline.compose_gradient)
the adjoints start as ``rt.ZERO``, a constant that products keep, and rules are skipped
only on it (``rt.touched``)::

    dx = 0.0                      dx = rt.ZERO
    if rt.has_grad(dy):           if rt.touched(dy):
        dx = dy * rt.cos(x)           dx = dy * rt.cos(x)

A gradient that nothing reaches (the backward's ``return None``: a function computed
under ``sg.no_grad``) is zeros of its variable's shape, as ``jax.grad`` gives, so the
gradient is a function the next derivative can read (a constant one).
"""

import gast

from srcgrad import anno, ast_util, templates
from srcgrad.custom_function import is_apply


class _Marks(ast_util.NodeTransformer):
    def visit_Assign(self, s):
        self.generic_visit(s)
        if len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and isinstance(s.value, gast.Constant) and type(s.value.value) is float \
                and s.value.value == 0.0:
            s.value = gast.Attribute(value=gast.Name(id="rt", ctx=gast.Load(), annotation=None,
                                                     type_comment=None),
                                     attr="ZERO", ctx=gast.Load())
        return s

    def visit_Call(self, call):
        self.generic_visit(call)
        if ast_util.is_rt_call(call, "has_grad"):
            call.func.attr = "touched"
        return call


def mark(statements, wrt):
    """``statements`` (an adjoint sweep ending in ``return (d_1, ...)``, the gradients of
    the variables named ``wrt``) with its zeros marked ``rt.ZERO``, its ``rt.has_grad``
    guards testing for that mark, and a ``None`` or ``0.0`` gradient zeros of its variable. Each
    other gradient is cast to its variable's float dtype, as sg.grad returns it: a rule's
    float64 weights (``0.5 * (x1 == x2)``) would make a float32 input's gradient, and so
    its derivatives (jvp, hessian), float64."""
    marks = _Marks()
    statements = [marks.visit(s) for s in statements]
    results = statements[-1].value.elts
    for k, (result, var) in enumerate(zip(results, wrt)):
        if isinstance(result, gast.Constant) and (result.value is None or result.value == 0.0):
            # (0.0: reached only through np.floor & co., seeds.results)
            results[k] = templates.replace_as_expression(f"rt.zeros_like({var})")
        else:
            results[k] = templates.replace_as_expression(f"rt.cast_like(__g, {var})", __g=result)
    return statements


def applied(statements):
    """``statements`` (a forward sweep) with each ``Func.apply(...)`` call left as it is
    written spelled ``rt.function_forward(Func, (...), (False, ...))[0]``."""
    for node in ast_util.walk_statements(statements):
        if isinstance(node, gast.Assign) and isinstance(node.value, gast.Call) \
                and is_apply(anno.getanno(node.value, anno.Static.PRIMITIVE)) is not None:
            call = node.value
            if call.keywords or any(isinstance(a, gast.Starred) for a in call.args):
                continue
            flags = gast.Tuple(elts=[gast.Constant(value=False, kind=None) for _ in call.args],
                               ctx=gast.Load())
            node.value = templates.replace_as_expression(
                "rt.function_forward(CLS, ARGS, FLAGS)[0]", CLS=call.func.value,
                ARGS=gast.Tuple(elts=list(call.args), ctx=gast.Load()), FLAGS=flags)
    return statements
