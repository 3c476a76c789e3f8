"""A method of an object outside the function (reached through a global or closure name,
or an inlined method's ``self``), called for its effect on a value that carries a gradient:
its change is invisible to the adjoint, so reverse mode refuses it where the function reads
that object again (``HISTORY.append(v); HISTORY[-1]``)."""

import inspect
import types

import gast
import numpy

from srcgrad import rules, runtime
from srcgrad import ast_util
from srcgrad.errors import UnsupportedError
from srcgrad.rules import Method
from srcgrad.transform import mutation

# Methods that change their receiver (transform/mutation.py's table, and a list's append,
# a set's add): assigned from a bound method of an outside object (y = D.setdefault(k, v)),
# checked as a call made for its effect is.
MUTATORS = frozenset(mutation.MUTATING_METHODS) | {"append", "add", "discard"}


def _free_object(ad, name, stored):
    """The object the global or closure name ``name`` (or a name an inlined helper
    bound, ``add_self``) denotes, or None for a local or a plain value."""
    if name in stored:
        return None
    try:
        obj = ad.bound[name] if name in ad.bound else ad.info.resolve(name)
    except (NameError, AttributeError):
        return None
    return None if obj is None or isinstance(obj, (bool, int, float, str, types.ModuleType)) else obj


_HOLDS_NOTHING = (bool, int, float, complex, str, bytes, type(None), numpy.ndarray, numpy.generic)


def _may_reach(n, parents, target, owner):
    """Whether the read ``n`` of the outside object ``target`` may reach ``owner``, the
    object the method changes: ``self.W`` does not reach ``self.log`` (an array attribute
    holds no list), ``self.log[-1]``, ``self`` passed whole or a property may. Unknown
    objects (a local, a name bound when the function runs) may."""
    if target is None:
        return True
    obj, node = target, n
    while True:
        parent = parents.get(id(node))
        if not (isinstance(parent, gast.Attribute) and parent.value is node):
            break
        try:
            obj = inspect.getattr_static(obj, parent.attr)
        except AttributeError:
            return True
        if obj is owner or hasattr(type(obj), "__get__"):   # the list itself, or code runs
            return True
        node = parent
    return obj is target or not isinstance(obj, _HOLDS_NOTHING)


def check(ad, s, call, prim):
    """Refuse ``L.append(v)``, ``G.fill(v)``, ``D.update(...)``, ``H.sort()``: a method of
    an object the function reaches through a global or closure name (resolved when
    compiled, so no rule of srcgrad's sees it), called for its effect on a value that
    carries a gradient, on an object the function reads again: the change is invisible
    to the adjoint, which would drop its gradient. (On a local, mutation.py rewrites
    or refuses the call; ``LOG.append(loss)`` on a list never read again is fine.)"""
    owner = getattr(prim, "__self__", None)
    if isinstance(prim, Method) or owner is None or isinstance(owner, (type, types.ModuleType)) \
            or rules.lookup(prim) is not None or rules.is_nondifferentiable(prim) \
            or getattr(prim, "__module__", None) == runtime.__name__:
        return
    root = call.func.value if isinstance(call.func, gast.Attribute) else None
    while isinstance(root, (gast.Attribute, gast.Subscript)):
        root = root.value
    if not isinstance(root, gast.Name):
        return
    parts = [call.func.value] + list(call.args) + [k.value for k in call.keywords]
    if not any(isinstance(n, gast.Name) and n.id in ad.act.active
               for p in parts for n in ast_util.walk(p)):
        return
    here = {id(n) for n in ast_util.walk(call)}
    stored = {n.id for n in ast_util.walk(ad.node)
              if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
    target = _free_object(ad, root.id, stored)
    parents = {id(child): node for node in ast_util.walk(ad.node)
               for child in gast.iter_child_nodes(node)}
    if not any(isinstance(n, gast.Name) and id(n) not in here and (
            n.id == root.id or target is not None and _free_object(ad, n.id, stored) is target)
            and _may_reach(n, parents, target, owner)
            for n in ast_util.walk(ad.node)):
        return
    what = getattr(prim, "__name__", "a method")
    raise ad.error(s, UnsupportedError,
                   f"this call to .{what}() changes in place an object that the function "
                   f"reaches through a global or closure name (or self) and reads again, "
                   f"with a value that carries a gradient: srcgrad cannot follow the "
                   f"gradient through that change",
                   "Build the value in a local (items = []; items.append(v)) and read "
                   "that, or pass the object as an argument.")
