"""A call made for its effect on a value that carries a gradient, whose change no rule of
srcgrad's sees: a method of an object outside the function (reached through a global or
closure name, or an inlined method's ``self``), or one that may change an object it is
passed (a method of a local object, ``heapq.heappush(h, v)``, ``setattr(o, "w", v)``). The
change is invisible to the adjoint, so reverse mode refuses it where the function reads
that object again (``HISTORY.append(v); HISTORY[-1]``, ``acc.add(v); acc.total``)."""

import builtins
import inspect
import logging
import types
import warnings

import gast
import numpy

from srcgrad import rules, runtime
from srcgrad import anno, ast_util, grad_mode
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


def changes_no_argument(prim):
    """print, warnings.warn, a logger's methods, assertions, ``sg.register_hook`` (which
    forward mode, as PyTorch's, leaves to reverse mode), ``rt.write_back`` (into the
    caller's object, as the function returns): calls made for their effect that change
    none of the values the function reads."""
    if prim is builtins.print or prim is warnings.warn or prim is runtime.write_global \
            or prim is grad_mode.register_hook or prim is runtime.write_back:
        return True
    owner = getattr(prim, "__self__", None)
    module = getattr(prim, "__module__", None) or ""
    name = getattr(prim, "__name__", None) or ""
    return isinstance(owner, (logging.Logger, logging.LoggerAdapter)) or module == "logging" \
        or name.startswith("assert") or module.startswith(("numpy.testing", "unittest"))


def _opaque(prim):
    """Whether ``prim``, called for its effect, may change an object it is passed without a
    rule of srcgrad's seeing it: a method of a local object (``Method("add")``) or a library
    function (``heapq.heappush``, ``setattr``) with no rule."""
    if prim is None or rules.lookup(prim) is not None or rules.is_nondifferentiable(prim) \
            or changes_no_argument(prim):
        return False
    if isinstance(prim, Method):
        return True
    owner = getattr(prim, "__self__", None)
    module = getattr(prim, "__module__", None) or ""
    return (owner is None or isinstance(owner, types.ModuleType)) \
        and not module.startswith("srcgrad") and callable(prim)


def _root(node):
    while isinstance(node, (gast.Attribute, gast.Subscript, gast.Starred)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _containers(ad):
    """The function's names that may hold a list, dict, set or object (what a call may
    change), not only numbers and arrays: bound to a display, a comprehension or a class
    instance built in it, or holding a sequence (activity analysis)."""
    out = set(ad.act.sequences)
    displays = (gast.List, gast.Dict, gast.Set, gast.ListComp, gast.DictComp, gast.SetComp)
    for a in ast_util.walk(ad.node):
        if not isinstance(a, gast.Assign):
            continue
        value = a.value
        built = isinstance(value, displays) or isinstance(value, gast.Call) and isinstance(
            anno.getanno(value, anno.Static.PRIMITIVE), type) and not issubclass(
            anno.getanno(value, anno.Static.PRIMITIVE), (numpy.ndarray, numpy.generic, float, int))
        if built:
            out |= {n.id for t in a.targets for n in ast_util.walk(t) if isinstance(n, gast.Name)}
    return out


def _passed(ad, call, prim):
    """The names whose objects a call may change: its receiver's root (``a`` of
    ``a.items.add(v)``), ``setattr``'s object, and the arguments that may hold a container
    or object (``h`` of ``heappush(h, v)``; a number or array logged is read only)."""
    roots = set()
    if isinstance(call.func, gast.Attribute):
        roots.add(_root(call.func.value))
    if prim in (builtins.setattr, builtins.delattr) and call.args:
        roots.add(_root(call.args[0]))
    containers = _containers(ad)
    for part in list(call.args) + [k.value for k in call.keywords]:
        if _root(part) in containers:
            roots.add(_root(part))
    return roots - {None}


def check_opaque(ad, s, call, prim, bound=None):
    """Refuse ``acc.add(v)`` (a method of a local object), ``heapq.heappush(h, v)``,
    ``setattr(o, "w", v)``: a call srcgrad has no rule for, made for its effect with a value
    that carries a gradient, where the function reads again an object the call was passed
    (or a name bound from one): the callee may have changed it, and the adjoint would drop
    that gradient. (A call whose objects are never read again, ``LOG.append(loss)``, stays.)
    ``bound``: the assignment of the call's result (``t = o.m(x)``), which holds no object passed."""
    if not _opaque(prim):
        return
    parts = [call.func] + list(call.args) + [k.value for k in call.keywords]
    if not any(isinstance(n, gast.Name) and n.id in ad.act.active
               for p in parts for n in ast_util.walk(p)):
        return
    here = {id(n) for n in ast_util.walk(call)}
    reached = _passed(ad, call, prim)
    assigns = [n for n in ast_util.walk(ad.node) if isinstance(n, gast.Assign) and n is not bound]
    grown = True
    while grown:   # b = a, items = a.items: names bound from a passed object hold it too,
        grown = False   # and sub = o.sub: o holds the object passed
        for a in assigns:
            if any(isinstance(n, gast.Name) and n.id in reached for n in ast_util.walk(a.value)):
                for t in a.targets:
                    for n in ast_util.walk(t):
                        if isinstance(n, gast.Name) and n.id not in reached:
                            reached.add(n.id)
                            grown = True
            holder = a.value
            while isinstance(holder, (gast.Attribute, gast.Subscript)):
                holder = holder.value
            if isinstance(holder, gast.Name) and holder.id not in reached and any(
                    isinstance(t, gast.Name) and t.id in reached for t in a.targets):
                reached.add(holder.id)
                grown = True
    again = sorted({n.id for n in ast_util.walk(ad.node) if isinstance(n, gast.Name)
                    and isinstance(n.ctx, gast.Load) and id(n) not in here and n.id in reached})
    if not again:
        return
    what = f".{prim}()" if isinstance(prim, Method) else getattr(prim, "__qualname__", None) \
        or getattr(prim, "__name__", "this function")
    shown = ad.namer.display(again[0]) if hasattr(ad.namer, "display") else again[0]
    raise ad.error(s, UnsupportedError,
                   f"this call to {what} is made for its effect with a value that carries a "
                   f"gradient, and may change {shown!r}, which the function reads again: "
                   f"srcgrad has no rule for that change, so it cannot follow the gradient "
                   f"through it",
                   "Return the new value instead (acc = acc + v, h = sorted(h + [v])), or "
                   "build it in a list and read that.")


def check(ad, s, call, prim):
    """Refuse ``L.append(v)``, ``G.fill(v)``, ``D.update(...)``, ``H.sort()``: a method of
    an object the function reaches through a global or closure name (resolved when
    compiled, so no rule of srcgrad's sees it), called for its effect on a value that
    carries a gradient, on an object the function reads again: the change is invisible
    to the adjoint, which would drop its gradient. (On a local, mutation.py rewrites
    or refuses the call; ``LOG.append(loss)`` on a list never read again is fine.)"""
    check_opaque(ad, s, call, prim)
    owner = getattr(prim, "__self__", None)
    if isinstance(prim, Method) or owner is None or isinstance(owner, (type, types.ModuleType)) \
            or changes_no_argument(prim) \
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
