"""A gradient bound to a local name and called (JAX's ``du = jax.grad(u)``; ``du(x)``).

``du = sg.grad(u, 1)`` (or ``sg.value_and_grad``, or a gradient of a gradient,
``d2u = sg.grad(sg.grad(u))``, or ``H = sg.hessian(u)``, ``sg.jacobian``) bound once at the top level of ``f``'s body, from names
of functions, constants and such aliases bound before it only, and read only as ``du(...)``
or as the function a gradient maker takes (``sg.grad(du, 1)``) after it: each such read
is ``sg.grad(u, 1)`` written where it stands, which local_functions.py and
anf_expressions.py compile (a local ``u`` takes its free locals as trailing parameters,
so the outer gradient reaches them). The binding itself goes. Any other read of ``du``
leaves it alone (anf refuses calling a local variable, naming it).
"""

import gast

from srcgrad import ast_util, templates
from srcgrad.transform.base import lookup_dotted


def makes_gradient(call, info, shadowed, rows=False):
    """Whether ``call`` is ``sg.grad(...)`` or ``sg.value_and_grad(...)`` (with ``rows``,
    ``sg.hessian``/``sg.jacobian(...)`` too: transform/nested_derivatives.py)."""
    obj = lookup_dotted(call.func, info, shadowed)
    return getattr(obj, "srcgrad_grad_of", None) is not None \
        or getattr(obj, "srcgrad_value_and_grad", None) is not None \
        or rows and getattr(obj, "srcgrad_rows", None) is not None


def _fixed(node, info, counts, functions):
    """Whether ``node`` means the same object wherever ``f`` reads it after its binding:
    a constant, a function defined once in ``f``, a global not bound in ``f``, a local
    bound once, an attribute or conditional expression of those, or a gradient maker."""
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, (gast.Tuple, gast.List)):
        return all(isinstance(e, gast.Constant) for e in node.elts)
    if isinstance(node, gast.Name):   # (a local bound once: the same object after it)
        return node.id in functions or counts.get(node.id, 0) <= 1
    if isinstance(node, gast.Attribute):
        return _fixed(node.value, info, counts, functions) and not isinstance(node.value, gast.Constant)
    if isinstance(node, gast.IfExp):
        return _fixed_test(node.test, info, counts, functions) and \
            _fixed(node.body, info, counts, functions) and _fixed(node.orelse, info, counts, functions)
    if isinstance(node, gast.Call):
        return makes_gradient(node, info, counts, rows=True) and all(
            _fixed(a, info, counts, functions) for a in node.args) and all(
            k.arg is not None and _fixed(k.value, info, counts, functions) for k in node.keywords)
    return False


def _callee(node):
    """A callee an alias may stand for: a name, a dotted name (``Exp.apply``, ``np.tanh``,
    ``self.layer``), or a conditional expression of those (``np.tanh if USE_TANH else relu``)."""
    if isinstance(node, gast.IfExp):
        return _callee(node.body) and _callee(node.orelse) and not any(
            isinstance(n, (gast.Call, gast.NamedExpr, gast.Lambda)) for n in ast_util.walk(node.test))
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name)


def _fixed_test(node, info, counts, functions):
    """Whether every name the test of a conditional callee reads is fixed (``_fixed``)."""
    return all(_fixed(n, info, counts, functions) for n in ast_util.walk(node)
               if isinstance(n, gast.Name))


def conditional_calls(node, info, census=None, expanded=False):
    """``(A if c else B)(args)``: ``A(args) if c else B(args)``, the same calls in the same
    order, each branch a call srcgrad compiles. Returns whether any was rewritten."""
    text = "\n".join(info.source_lines)   # (``expanded``: an alias, `act(x)` in the source)
    if not expanded and (" else " not in text or ")(" not in text.replace(") (", ")(")):
        return False
    found = census.of(gast.IfExp) if census is not None else [
        n for n in ast_util.walk(node) if isinstance(n, gast.IfExp)]
    if not found:
        return False
    changed = False
    for n in list(ast_util.walk(node)):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.IfExp):
            _split(n)
            changed = True
    return changed


def _split(call):
    """``call``, of a conditional expression, made that expression of calls, in place."""
    func = call.func
    branches = []
    for callee in (func.body, func.orelse):
        branch = gast.Call(func=callee, args=[templates.clone(a) for a in call.args],
                           keywords=[templates.clone(k) for k in call.keywords])
        gast.copy_location(branch, call)
        if isinstance(callee, gast.IfExp):
            _split(branch)
        branches.append(branch)
    new = gast.IfExp(test=func.test, body=branches[0], orelse=branches[1])
    call.__class__ = gast.IfExp   # (in place: the parent keeps its child)
    for field in ("func", "args", "keywords"):
        delattr(call, field)
    call.test, call.body, call.orelse = new.test, new.body, new.orelse


def expand(node, info, stores):
    """Write each call of a gradient alias of FunctionDef ``node`` as the gradient's call
    (see the module docstring). ``stores(node)``: name -> its bindings in ``node``'s own
    scope (made only when a top-level statement binds a gradient: most functions have none).
    Returns whether it may have changed ``node``."""
    text = None
    candidates = []
    for s in node.body:
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)):
            continue
        if isinstance(s.value, gast.Call) and makes_gradient(s.value, info, (), rows=True):
            candidates.append(s)
        elif _callee(s.value):   # (y = x.T is no alias: only a name the source calls may be)
            text = "\n".join(info.source_lines) if text is None else text
            if f"{s.targets[0].id}(" in text:
                candidates.append(s)
    if not candidates:
        return False
    counts = stores(node)
    functions = {s.name for s in node.body if isinstance(s, gast.FunctionDef)} | {
        s.targets[0].id for s in node.body if isinstance(s, gast.Assign) and len(s.targets) == 1
        and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Lambda)}
    aliases = {}
    for index, stmt in enumerate(node.body):
        if any(stmt is c for c in candidates) and counts.get(stmt.targets[0].id) == 1 \
                and stmt.targets[0].id not in functions \
                and _fixed(stmt.value, info, counts, functions | set(aliases)):
            aliases[stmt.targets[0].id] = (index, stmt)
    if not aliases:
        return False
    calls = {alias: [] for alias in aliases}
    for index, stmt in enumerate(node.body):
        parents = {}
        for n in ast_util.walk(stmt):   # (nested defs and lambdas too: parents first)
            for child in gast.iter_child_nodes(n):
                parents[child] = n
            if not (isinstance(n, gast.Name) and n.id in calls and calls[n.id] is not None):
                continue
            if not isinstance(n.ctx, gast.Load):   # a nested scope's own name, or the binding
                if n is not aliases[n.id][1].targets[0]:
                    calls[n.id] = None
            else:
                parent = parents.get(n)
                if index > aliases[n.id][0] and isinstance(parent, gast.Call) and (
                        parent.func is n or parent.args and parent.args[0] is n
                        and makes_gradient(parent, info, counts, rows=True)):
                    calls[n.id].append(parent)   # du(x), or sg.grad(du, 1): a derivative of it
                else:
                    calls[n.id] = None   # read otherwise, or before its binding: left alone
    dropped = set()
    for alias, found in calls.items():
        if found is None:
            continue
        maker = aliases[alias][1].value
        for call in found:   # (in binding order: a later alias's maker has this one's)
            if isinstance(call.func, gast.Name) and call.func.id == alias:
                call.func = templates.clone(maker)
            else:
                call.args[0] = templates.clone(maker)
        dropped.add(id(aliases[alias][1]))
    node.body = [s for s in node.body if id(s) not in dropped]
    return True
