"""Calls to the user's own functions are inlined, so their statements are differentiated too.

Requires A-normal form. A call ``t = helper(a, b)`` to a Python function that is
not a library primitive becomes the helper's own (canonicalized, normalized)
statements with its locals renamed apart, its parameters bound to the
arguments, and its return value assigned to ``t``. Helpers from other modules
keep their meaning: a free name that denotes something else in the caller's
scope is bound under a new name (returned in ``bindings``). Recursion is
refused: it cannot be inlined.
"""

import functools
import inspect

import gast

from srcgrad import anno, rules, templates
from srcgrad.errors import SrcgradError, UnsupportedError

Static = anno.Static

LIBRARY_ROOTS = {"numpy", "cupy", "cupyx", "scipy", "srcgrad", "math", "builtins", "operator",
                 "functools", "torch", "jax", "autograd"}


def is_inlinable(obj):
    """Whether a call to ``obj`` is transformed (a user function, a bound method or
    ``functools.partial`` of one) rather than a primitive."""
    if inspect.ismethod(obj) or isinstance(obj, functools.partial):
        from srcgrad.entry import _peel
        target = _peel(obj)[0]
        return is_inlinable(target) and rules.lookup(obj) is None
    if not inspect.isfunction(obj):
        return False
    if rules.lookup(obj) is not None or rules.is_nondifferentiable(obj):
        return False
    module = (getattr(obj, "__module__", None) or "").split(".")[0]
    return module not in LIBRARY_ROOTS


_LOOP_EXAMPLE = """\
Rewrite the recursion as a loop, for instance
    def f(x, n):                           def f(x, n):
        if n == 0:                             for _ in range(n):
            return x              ->               x = np.sin(x)
        return f(np.sin(x), n - 1)             return x
(a result built on the way back, `f(...) * x`, becomes a list of the values
pushed on the way down, combined in a second loop), or wrap the function in a
custom srcgrad.Function."""


def _recursion_error(fn, chain, origin):
    """The refusal of a call back into a function being inlined (``chain``: the code
    objects from its first call to this one): srcgrad inlines the calls it
    differentiates, and how deep a recursion goes is known only when it runs."""
    through = "" if len(chain) <= 2 else \
        " through " + " -> ".join(code.co_name for code in chain)
    return origin.error(
        UnsupportedError,
        f"{fn.__qualname__} calls itself (recursion{through}): "
        f"srcgrad differentiates a call by inlining the callee, and the depth of a "
        f"recursion is known only when it runs", _LOOP_EXAMPLE)


class Inliner:
    def __init__(self, info, namer, bindings, stack, main_locals):
        self.info = info
        self.main_locals = main_locals
        self.namer = namer
        self.bindings = bindings
        self.stack = stack
        self.infos = []  # the EntityInfo of each helper inlined, at any depth (guard.py reads them)

    def block(self, body):
        out = []
        for stmt in body:
            for field in ("body", "orelse"):
                if isinstance(getattr(stmt, field, None), list):
                    setattr(stmt, field, self.block(getattr(stmt, field)))
            call, target = None, None
            if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call):
                call, target = stmt.value, stmt.targets[0]
            elif isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call):
                call = stmt.value
            primitive = anno.getanno(call, Static.PRIMITIVE) if call is not None else None
            if primitive is not None and is_inlinable(primitive):
                out.extend(self.inline(primitive, call, target, stmt))
            else:
                out.append(stmt)
        return out

    def inline(self, fn, call, target, stmt):
        from srcgrad.pipeline import normalize  # the same stages the caller went through

        origin = anno.getanno(stmt, Static.ORIGIN)
        if not inspect.isfunction(fn):   # a method of an object, a partial: self is a constant
            from srcgrad.entry import entry_function
            try:
                fn = entry_function(fn)
            except SrcgradError as exc:
                raise origin.error(type(exc), exc.message, exc.hint) from None
        if fn.__code__ in self.stack:
            chain = self.stack[self.stack.index(fn.__code__):] + (fn.__code__,)
            raise _recursion_error(fn, chain, anno.getanno(call, Static.ORIGIN) or origin)
        node, info, bindings = normalize(fn, self.stack + (fn.__code__,))
        self.infos.extend(node._srcgrad_infos)
        helper_locals = _locals(node)
        rename = {name: self.namer.rename(name) for name in sorted(helper_locals)}
        # Free names: keep those meaning the same object here, bind the others anew.
        for child in gast.walk(node):
            if isinstance(child, gast.Name) and child.id not in helper_locals and child.id not in rename:
                rename[child.id] = self._free_name(child.id, info, bindings, fn)
        for child in gast.walk(node):
            if isinstance(child, gast.Name) and child.id in rename:
                child.id = rename[child.id]
        out = self._bind_params(fn, node, call, rename, origin)
        body = node.body
        ret = body[-1]
        for s in body[:-1]:
            out.append(s)
        if target is not None:
            value = ret.value if ret.value is not None else gast.Constant(value=None, kind=None)
            assign = gast.Assign(targets=[target], value=value, type_comment=None)
            anno.setanno(assign, Static.ORIGIN, origin)
            out.append(assign)
        return out

    def _free_name(self, name, info, bindings, fn):
        if name in bindings:
            obj = bindings[name]
        else:
            try:
                obj = info.resolve(name)
            except NameError:
                return name
        try:
            if name not in self.main_locals and self.info.resolve(name) is obj:
                return name
        except NameError:
            pass
        new = self.namer.new(f"{fn.__name__}_{name}")
        self.bindings[new] = obj
        return new

    def _bind_params(self, fn, node, call, rename, origin):
        sig = inspect.signature(fn)
        try:
            bound = sig.bind(*call.args, **{k.arg: k.value for k in call.keywords})
        except TypeError as exc:
            raise origin.error(UnsupportedError, f"cannot call {fn.__qualname__} this way: {exc}")
        out = []
        for param in sig.parameters.values():
            if param.name in bound.arguments:
                value = bound.arguments[param.name]
            elif param.default is not inspect.Parameter.empty:
                default = param.default
                if templates.is_literal(default):
                    value = gast.Constant(value=default, kind=None)
                else:
                    name = self.namer.new(f"{fn.__name__}_{param.name}_default")
                    self.bindings[name] = default
                    value = gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)
            else:
                raise origin.error(UnsupportedError, f"missing argument {param.name!r} of {fn.__qualname__}")
            target = gast.Name(id=rename[param.name], ctx=gast.Store(), annotation=None, type_comment=None)
            assign = gast.Assign(targets=[target], value=value, type_comment=None)
            anno.setanno(assign, Static.ORIGIN, origin)
            out.append(assign)
        return out


def _locals(node):
    from srcgrad.transform.anf import local_names
    return local_names(node)


def transform(node, info, namer, stack):
    """Inline user-function calls in ``node``; returns the extra name bindings needed."""
    bindings = {}
    inliner = Inliner(info, namer, bindings, stack, _locals(node))
    node.body = inliner.block(node.body)
    node._srcgrad_infos = [info] + inliner.infos
    return node, bindings
