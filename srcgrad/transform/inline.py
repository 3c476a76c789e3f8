"""Calls to the user's own functions are inlined, so their statements are differentiated too.

Requires A-normal form. A call ``t = helper(a, b)`` to a Python function that is
not a library primitive becomes the helper's own (canonicalized, normalized)
statements with its locals renamed apart, its parameters bound to the
arguments, and its return value assigned to ``t``. Helpers from other modules
keep their meaning: a free name that denotes something else in the caller's
scope is bound under a new name (returned in ``bindings``). Recursion is
refused: it cannot be inlined.
"""

import builtins
import dis
import functools
import inspect
import types

import gast

from srcgrad import anno, ast_util, pytree, rules, templates
from srcgrad.entry import LIBRARY_ROOTS, bound_of, call_method, entry_function, is_library_module, peel
from srcgrad.errors import SourceNotFoundError, SrcgradError, UnsupportedError
from srcgrad.analysis.argument_keys import plain_instance
from srcgrad.transform.base import Base, local_names
from srcgrad.transform.local_functions import LocalFunction
from srcgrad.transform import call_forms, constant_arguments, generators, global_statements, structure_parts
from srcgrad.transform import class_methods, plain_classes

Static = anno.Static

__all__ = ["LIBRARY_ROOTS", "bind_static", "is_inlinable", "transform"]


def is_inlinable(obj):
    """Whether a call to ``obj`` is transformed (a user function, a bound method or
    ``functools.partial`` of one) rather than a primitive."""
    if isinstance(obj, LocalFunction):
        return True
    if call_method(obj) is not None:
        return rules.lookup(obj) is None
    if inspect.ismethod(obj) or isinstance(obj, functools.partial):
        target = peel(obj)[0]
        return is_inlinable(target) and rules.lookup(obj) is None
    if hasattr(obj, "cache_info") and inspect.isfunction(getattr(obj, "__wrapped__", None)):
        return rules.lookup(obj) is None and is_inlinable(obj.__wrapped__)   # functools.cache
    if not inspect.isfunction(obj):
        return False
    if rules.lookup(obj) is not None or rules.is_nondifferentiable(obj):
        return False
    if getattr(obj, "_srcgrad_inline", False):   # srcgrad/inlined.py: functools.reduce's
        return True
    module = (getattr(obj, "__module__", None) or "").split(".")[0]
    return not is_library_module(module)


_LOOP_EXAMPLE = """\
Rewrite the recursion as a loop, for instance
    def f(x, n):                           def f(x, n):
        if n == 0:                             for _ in range(n):
            return x              ->               x = np.sin(x)
        return f(np.sin(x), n - 1)             return x
(a result built on the way back, `f(...) * x`, becomes a list of the values
pushed on the way down, combined in a second loop), or wrap the function in a
custom srcgrad.Function."""


class Frame:
    """A function being inlined, for the recursion check: its code and the objects its
    closure holds, by identity. Code objects compare by value, and two equal ones are not
    one function: the one-line wrappers of two objects' ``forward`` methods
    (``self.inner.forward(x)`` in ``forward``), one decorator's wrapper around two functions."""

    __slots__ = ("name", "key", "declared_globals", "module_globals", "built_plain")

    def __init__(self, fn):
        self.name = fn.__name__
        self.built_plain = False   # the root built a plain class's dataclass (plain_classes.py)
        self.declared_globals = frozenset()   # the root's ``global`` names (global_statements.py)
        self.module_globals = None   # and the module's dict they are in
        cells = getattr(fn, "__closure__", None) or ()
        self.key = (id(fn.__code__),) + tuple(id(_contents(c)) for c in cells)

    def __eq__(self, other):
        return isinstance(other, Frame) and self.key == other.key

    def __hash__(self):
        return hash(self.key)


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:   # an empty cell
        return None


def _recursion_error(fn, chain, origin):
    """The refusal of a call back into a function being inlined (``chain``: the code
    objects from its first call to this one): srcgrad inlines the calls it
    differentiates, and how deep a recursion goes is known only when it runs."""
    through = "" if len(chain) <= 2 else \
        " through " + " -> ".join(frame.name for frame in chain)
    return origin.error(
        UnsupportedError,
        f"{fn.__qualname__} calls itself (recursion{through}): "
        f"srcgrad differentiates a call by inlining the callee, and the depth of a "
        f"recursion is known only when it runs", _LOOP_EXAMPLE)


def bind_static(node, info, namer, static, bindings):
    """Parameters known to hold a callable (``static``: name -> object) denote it: their
    reads become a free name bound to the object, so ``deriv(y)`` is a call srcgrad
    resolves (a rule, or a helper it inlines). A parameter the function rebinds keeps
    its run-time value, assigned first (and calling it is refused, as a call of any local)."""
    for param, obj in static.items():
        if any(isinstance(n, gast.Name) and n.id == param and not isinstance(n.ctx, gast.Load)
               for stmt in node.body for n in ast_util.walk(stmt)):
            # a run-time value from here on, given the object (the call does not assign it)
            new = namer.new(f"{param}_value")
            info.extra[new] = bindings[new] = obj
            first = gast.Assign(targets=[ast_util.name(param, True)], value=ast_util.name(new),
                                type_comment=None)
            anno.copyanno(node.body[0], first, Static.ORIGIN)
            node.body.insert(0, first)
            continue
        captured = set(getattr(obj, "captured", ())) & {
            n.id for n in ast_util.walk(node) if isinstance(n, gast.Name)}
        if captured:   # a lambda reading the caller's variables through names of its own
            origin = info.origin(node)
            raise origin.error(UnsupportedError, f"{info.name} uses the name {captured.pop()!r} "
                               f"that a function passed to it reads", "Rename the variable.")
        new = namer.rename(param)
        info.extra[new] = bindings[new] = obj
        for stmt in node.body:
            for n in ast_util.walk(stmt):
                if isinstance(n, gast.Name) and n.id == param:
                    n.id = new


STAR_ARITY = "*"   # key of ``static``: (count of *args, keys of **kwargs) at this call
# (keys of ``static`` that are no Python name: the others are parameters)
PARAM_CLASSES = structure_parts.PARAM_CLASSES   # key of ``static``: parameter -> its structure's class
GENERATOR = "<yield>"   # key of ``static``: the helper is a generator, inlined as its list of items
CONSTANTS = "<constants>"   # key of ``static``: parameter -> the int a recursive helper is given


def expand_star_calls(node, arity):
    """In a helper taking ``*args``/``**kwargs`` inlined at a call of known arity
    (``arity``: how many ``*args`` and which ``**kwargs`` keys), the calls that pass them
    on, ``g(*args, **kwargs)`` (a decorator's wrapper), spelled out:
    ``g(args[0], args[1], key=kwargs['key'])``. A helper that rebinds ``args`` or
    ``kwargs`` keeps its calls (fence.py refuses the unpacking)."""
    count, keys = arity
    vararg = node.args.vararg.id if node.args.vararg is not None else None
    kwarg = node.args.kwarg.id if node.args.kwarg is not None else None
    rebound = {n.id for stmt in node.body for n in ast_util.walk(stmt)
               if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}

    def load(name):
        return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)

    def item(name, key):
        return gast.Subscript(value=load(name), slice=gast.Constant(value=key, kind=None),
                              ctx=gast.Load())

    for stmt in node.body:
        for call in ast_util.walk(stmt):
            if not isinstance(call, gast.Call):
                continue
            args = []
            for a in call.args:
                if isinstance(a, gast.Starred) and isinstance(a.value, gast.Name) \
                        and a.value.id == vararg and vararg not in rebound:
                    args.extend(item(vararg, i) for i in range(count))
                else:
                    args.append(a)
            keywords = []
            for k in call.keywords:
                if k.arg is None and isinstance(k.value, gast.Name) and k.value.id == kwarg \
                        and kwarg not in rebound:
                    keywords.extend(gast.keyword(arg=key, value=item(kwarg, key)) for key in keys)
                else:
                    keywords.append(k)
            call.args, call.keywords = args, keywords


def _signature(fn):
    """The signature of the code srcgrad reads for ``fn``: a decorator's wrapper's own
    (not the wrapped function's, which ``inspect.signature`` follows ``__wrapped__`` to),
    the body's for the wrappers parse.py reads through (``@sg.no_grad()``)."""
    from srcgrad.parse import _read_through
    read = _read_through(fn)[0] if inspect.isfunction(fn) else fn
    return inspect.signature(read, follow_wrapped=False)


def _star_arity(fn, call):
    """``(count of *args, keys of **kwargs)`` a call passes to ``fn``'s ``*args`` and
    ``**kwargs`` parameters, or None where ``fn`` has neither or the call does not bind."""
    sig = _signature(fn)
    kinds = {p.kind for p in sig.parameters.values()}
    if not kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
        return None
    if any(isinstance(a, gast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    try:
        bound = sig.bind(*call.args, **{k.arg: k.value for k in call.keywords})
    except TypeError:
        return None
    count, keys = 0, ()
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            count = len(bound.arguments.get(p.name, ()))
        elif p.kind is p.VAR_KEYWORD:
            keys = tuple(bound.arguments.get(p.name, {}))
    return count, keys


def _calls_itself(fn):
    """Whether ``fn`` reads its own name as a global or closure variable (a recursion)."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType) or fn.__name__ not in code.co_names + code.co_freevars:
        return False
    return any(i.argval == fn.__name__ and i.opname in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME")
               for i in dis.get_instructions(code))


def _is_static_callable(obj):
    """A callable an argument may be specialised on: not data (an array, a number, a
    structure), which the generated code keeps reading at run time."""
    return callable(obj) and not pytree.is_node(obj) and not hasattr(obj, "shape")


def _is_static_container(obj):
    """A list, tuple or dict of such callables (``self.layers``, nested): a helper given
    it loops over known functions (transform/unroll.py unrolls the loop)."""
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    else:
        return False
    return bool(items) and all(_is_static_callable(v) or _is_static_container(v) for v in items)


def _is_static(obj):
    return _is_static_callable(obj) or _is_static_container(obj)


class Inliner(Base):
    """``visit_Assign``/``visit_Expr`` of a call to a user function: its statements."""

    def __init__(self, ctx, main_locals, attributes=None):
        super().__init__(ctx.info)
        self.ctx = ctx
        self.main_locals = main_locals
        self.attributes = attributes or {}   # local -> the global dotted name it was read from
        self.namer = ctx.namer
        self.bindings = {}   # the names this pass binds (merged into ctx.bindings at the end)
        self.stack = ctx.stack
        self.infos = []  # the EntityInfo of each helper inlined, at any depth (guard.py reads them)
        self.lists = frozenset()   # locals that always hold a list: a helper's xs.sort() is a list's
        self.dicts = frozenset()   # locals that always hold a dict: a helper's `for k in d` iterates keys

    def visit_Assign(self, stmt):
        if isinstance(stmt.value, gast.Call):
            return self.visit_call(stmt.value, stmt.targets[0], stmt)
        return stmt

    def visit_Expr(self, stmt):
        if isinstance(stmt.value, gast.Call):
            return self.visit_call(stmt.value, None, stmt)
        return stmt

    def visit_call(self, call, target, stmt):
        primitive = anno.getanno(call, Static.PRIMITIVE)
        if primitive is not None and is_inlinable(primitive):
            return self.inline(primitive, call, target, stmt)
        return stmt

    def inline(self, fn, call, target, stmt):
        origin = anno.getanno(stmt, Static.ORIGIN)
        if not inspect.isfunction(fn) and not isinstance(fn, LocalFunction):
            # a method of an object, a partial: self is a constant
            try:
                fn = entry_function(fn)
            except SrcgradError as exc:
                raise origin.error(type(exc), exc.message, exc.hint) from None
        frame = Frame(fn)
        static = self._static_arguments(fn, call, origin)
        if frame in self.stack and (CONSTANTS not in static or self.stack.count(frame)
                                    >= constant_arguments.MAX_DEPTH):
            where = anno.getanno(call, Static.ORIGIN) or origin
            if CONSTANTS in static:   # unrolled this deep, its integers deciding nothing
                raise where.error(UnsupportedError, f"{fn.__qualname__} calls itself more than "
                                  f"{constant_arguments.MAX_DEPTH} levels deep with the integer "
                                  f"constants it is given (recursion)", _LOOP_EXAMPLE)
            chain = self.stack[self.stack.index(frame):] + (frame,)
            raise _recursion_error(fn, chain, where)
        bound = bound_of(fn)   # (a method's: the function its wrapper calls)
        if self.stack[0].built_plain:   # an instance built as a subclass: no class asked
            plain_classes.refuse_asking(fn, anno.getanno(call, Static.ORIGIN) or origin)
        if inspect.isgeneratorfunction(bound.target if bound is not None else fn):
            # inlined as the list of its items
            why = generators.consumed_whole(self.root, target, self.ctx.loop_sequences)
            if why is not None:
                raise generators.refusal(anno.getanno(call, Static.ORIGIN) or origin, fn, why)
            static[GENERATOR] = True
        arity = _star_arity(fn, call)
        if arity is not None:
            static[STAR_ARITY] = arity
        # The same stages the caller went through (pipeline.py gives them as ctx.normalize).
        try:
            node, helper = self.ctx.normalize(fn, self.stack + (frame,), static)
        except SourceNotFoundError as exc:   # named at the call, in the user's code
            if exc.filename not in (None, getattr(getattr(fn, "__code__", None), "co_filename", None)):
                raise   # located already, at a call inside a helper
            raise origin.error(SourceNotFoundError, exc.message, exc.hint or (
                "Define it in a .py file, register a rule with @srcgrad.adjoint, or call it "
                "under srcgrad.no_grad() if no gradient flows through it.")) from None
        info, bindings = helper.info, helper.bindings
        self.infos.extend(helper.infos)
        helper_locals = local_names(node)
        rename = {name: self.namer.rename(name) for name in sorted(helper_locals)}
        # Free names: keep those meaning the same object here, bind the others anew.
        declared = self.stack[0].declared_globals
        changes = []   # (the statements that may change a parameter in place)
        for child in ast_util.walk(node):
            if isinstance(child, gast.Name) and child.id not in helper_locals and child.id not in rename:
                if child.id in declared and info.globals is self.stack[0].module_globals:
                    raise global_statements.refuse_read(origin, fn, child.id, self.stack[0])
                rename[child.id] = self._free_name(child.id, info, bindings, fn)
            elif isinstance(child, (gast.Assign, gast.Expr)):
                changes.append(child)
        # A parameter the helper changes in place (self.h = v, xs.append(v)) names the
        # caller's variable itself: the caller sees the change, as in Python
        written_back = {p: a for p, a in _written_back(fn, node, changes, call, static)
                        if a in self.main_locals}   # (not a global or closure name)
        rename.update(written_back)
        for child in ast_util.walk(node):
            if isinstance(child, gast.Name) and child.id in rename:
                child.id = rename[child.id]
        out = self._bind_params(fn, node, call, rename, origin, static, skip=written_back)
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

    def _bound_builtin(self, ident):
        """A name bound to the builtin ``ident`` in the generated code."""
        obj = getattr(builtins, ident)
        for bound_name, bound in list(self.bindings.items()) + list(self.ctx.bindings.items()):
            if bound is obj:
                return bound_name
        bound_name = self.namer.new(ident)
        self.bindings[bound_name] = obj
        return bound_name

    def _free_name(self, name, info, bindings, fn):
        own = name in bindings   # bound by the helper's passes: a lifted local function
        if own:                  # shares its caller's info.extra, so resolving it here says
            obj = bindings[name]  # nothing about the caller's bindings
        else:
            try:
                obj = info.resolve(name)
            except NameError:
                return name
        try:
            if not own and name not in self.main_locals and self.info.resolve(name) is obj:
                return name
        except NameError:
            pass
        for bindings in (self.bindings, self.ctx.bindings):   # the caller's name for it
            for bound_name, bound in bindings.items():
                if bound is obj and not isinstance(obj, (int, float, complex, str, bool)):
                    return bound_name
        new = self.namer.new(f"{fn.__name__}_{name}")
        self.bindings[new] = obj
        return new

    def _results(self):
        """Names bound once to a method call an operator became (``t = Vec.__mul__(a, b)``,
        class_methods.bind_operators) -> the class it returns where every return of the
        method builds one (``type(self)(...)``): what ``Vec.__add__(t, c)`` inlines with."""
        found = self.__dict__.get("_results_found")
        if found is None:
            found = self._results_found = class_methods.bound_results(self.root, self.ctx)
        return found

    def _static_arguments(self, fn, call, origin):
        """Parameters of ``fn`` this call passes a known callable (a global function, a
        method of a global object, ``np.tanh``) or a container of them (``self.layers``),
        or that keep such a default: the helper is inlined with them bound to it, as if
        it were written for that callable (the rk4 idiom). The names read to find it are
        recorded (guard.py), so rebinding them compiles anew."""
        try:
            bound = _signature(fn).bind(*call.args, **{k.arg: k.value for k in call.keywords})
        except TypeError:
            return {}   # _bind_params says what is wrong
        static = {}
        known = {**self._results(), **self.ctx.classes}   # (a + b * c: the temporaries' too)
        classes = {param: known[value.id] if value.id in known
                   else list if value.id in self.lists else dict
                   for param, value in bound.arguments.items() if isinstance(value, gast.Name) and (
                       value.id in known or value.id in self.lists or value.id in self.dicts)}
        classes.update((param, list) for param, value in bound.arguments.items()
                       if isinstance(value, (gast.List, gast.ListComp)))   # g([a, b]): a list there
        for param, value in bound.arguments.items():   # g(x, model), model a global object:
            if isinstance(value, gast.Name) and param not in classes:   # its methods, not a
                cls = self._plain_class(value.id)                       # dict's m.get(x, k)
                if cls is not None:
                    classes[param] = cls
        if classes:   # Cls.energy(p, x): its self holds an instance of Cls too
            static[PARAM_CLASSES] = classes
        trees = {param: self.ctx.trees[value.id] for param, value in bound.arguments.items()
                 if isinstance(value, gast.Name) and value.id in self.ctx.trees}
        if trees:   # its self.enc.forward(x) too (structure_parts.py)
            static[structure_parts.TREES] = trees
        for param, value in bound.arguments.items():
            if not isinstance(value, gast.Name):
                continue
            obj = self._known_object(value.id)
            if obj is not None:
                static[param] = obj
        constants = {param: value.value for param, value in bound.arguments.items()
                     if constant_arguments.is_constant_argument(value)}
        constants.update((p.name, p.default) for p in _signature(fn).parameters.values()
                         if p.name not in bound.arguments and type(p.default) in (int, bool))
        if constants and _calls_itself(fn):   # unrolled while they decide (constant_arguments.py)
            static[CONSTANTS] = constants
        for param in _signature(fn).parameters.values():   # a default: fixed by __defaults__
            if param.name not in bound.arguments and param.kind in (
                    param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY) \
                    and param.default is not param.empty and _is_static(param.default):
                static[param.name] = param.default
        return static

    def _known_object(self, name):
        """The callable the caller's name denotes at compile time, or None (a run-time
        value: an array or number is read when the code runs, and its identity is not
        recorded, so rebinding it needs no new compile)."""
        if name in self.bindings:
            obj = self.bindings[name]
            return obj if _is_static(obj) else None
        path = self.attributes.get(name) if name in self.main_locals else (name,)
        if path is None:
            return None
        try:
            obj = self.info.lookup(path[0])
            for attr in path[1:]:
                obj = getattr(obj, attr)
        except (NameError, AttributeError):
            return None
        if not _is_static(obj):
            return None
        return self.info.resolve_path(path)   # recorded: guard.py checks it still holds

    def _plain_class(self, name):
        """The class of the plain object (argument_keys.plain_instance) that the caller's
        global or closure name denotes at compile time (recorded: guard.py checks it), or None."""
        if name in self.main_locals or name in self.bindings:
            return None
        try:
            obj = self.info.lookup(name)
        except NameError:
            return None
        if not plain_instance(obj):
            return None
        return type(self.info.resolve_path((name,)))

    def _bind_params(self, fn, node, call, rename, origin, static=(), skip=()):
        sig = _signature(fn)
        star = call.args[-1] if call.args and isinstance(call.args[-1], gast.Starred) else None
        if any(k.arg is None for k in call.keywords):
            raise origin.error(UnsupportedError, f"**-unpacking in a call of {fn.__qualname__} "
                               f"is not supported", "Pass each keyword argument by name.")
        try:
            bound = sig.bind(*call.args[:-1] if star is not None else call.args,
                             **{k.arg: k.value for k in call.keywords})
        except TypeError as exc:
            raise origin.error(UnsupportedError, f"cannot call {fn.__qualname__} this way: {exc}")
        out = []
        renamed = anno.getanno(node, Static.RENAMED_PARAMS, {})   # (xp, rt: base.rename_reserved)
        for param in sig.parameters.values():
            if param.name in static or param.name in skip:
                continue   # the helper's body names the object (or the caller's name) itself
            if param.kind is param.VAR_POSITIONAL and star is not None:
                # g(a, *xs), its plain arguments filling g's others (call_forms._star_into_varargs)
                value = gast.Call(func=gast.Name(id=self._bound_builtin("tuple"), ctx=gast.Load(),
                                                 annotation=None, type_comment=None),
                                  args=[star.value], keywords=[])
                anno.setanno(value, Static.PRIMITIVE, builtins.tuple)
            elif param.kind is param.VAR_POSITIONAL:   # *vs: the tuple of the rest
                value = gast.Tuple(elts=list(bound.arguments.get(param.name, ())), ctx=gast.Load())
            elif param.kind is param.VAR_KEYWORD:    # **kw: the dict of the other keywords
                extra = bound.arguments.get(param.name, {})
                value = gast.Dict(keys=[gast.Constant(value=k, kind=None) for k in extra],
                                  values=list(extra.values()))
            elif param.name in bound.arguments:
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
            target = gast.Name(id=rename[renamed.get(param.name, param.name)], ctx=gast.Store(),
                               annotation=None, type_comment=None)
            assign = gast.Assign(targets=[target], value=value, type_comment=None)
            anno.setanno(assign, Static.ORIGIN, origin)
            out.append(assign)
        return out


def _written_back(fn, node, changes, call, static):
    """``[(parameter, caller's name)]``: the parameters of ``fn`` (tree ``node``) that its
    body changes in place (Static.MUTATES: ``self.h = v`` from attribute_state.py, ``xs.pop()``;
    ``xs.append(v)``) and ``call`` gives a name, which the helper's body then reads and
    rebinds in the parameter's place. One also rebound otherwise (``xs = list(xs)``) stays
    the helper's own, except where an attribute is stored (refused: which object changes is
    known only when it runs)."""
    stores, appended = {}, set()
    for s in changes:   # (``node``'s Assign and Expr statements)
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            stores.setdefault(s.targets[0].id, []).append(s)
        elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) \
                and isinstance(s.value.func, gast.Attribute) and s.value.func.attr == "append" \
                and isinstance(s.value.func.value, gast.Name):   # xs.append(v): in place already
            appended.add(s.value.func.value.id)
    mutated = [p for p in _signature(fn).parameters if p not in static and (any(
        anno.getanno(s, Static.MUTATES) for s in stores.get(p, ())) or p in appended)]
    if not mutated:
        return []
    try:
        bound = _signature(fn).bind(*call.args, **{k.arg: k.value for k in call.keywords}).arguments
    except TypeError:
        return []   # _bind_params says what is wrong
    out = []
    for p in mutated:
        mine = stores.get(p, [])
        plain = [s for s in mine if not anno.getanno(s, Static.MUTATES)]
        plain += [n for n in ast_util.walk(node) if isinstance(n, gast.Name) and n.id == p
                  and isinstance(n.ctx, gast.Store) and not any(n is s.targets[0] for s in mine)]
        if plain and not any(anno.getanno(s, Static.FIELD) for s in mine):
            continue   # xs = list(xs); xs.append(v): the helper's own list, as before
        if plain:
            where = anno.getanno(plain[0], Static.ORIGIN) or anno.getanno(call, Static.ORIGIN)
            message = (f"{fn.__qualname__} rebinds its parameter {p!r} and also changes its "
                       f"attributes or items in place, which is not supported in a function "
                       f"srcgrad differentiates")
            hint = "Keep the other value in a variable of its own."
            if where is None:
                raise UnsupportedError(message, hint=hint)
            raise where.error(UnsupportedError, message, hint)
        if isinstance(bound.get(p), gast.Name):
            out.append((p, bound[p].id))
    return out


def _denotes(ctx, locals_, func, obj):
    """Whether the callee ``func`` (a name not local to the caller) denotes ``obj``."""
    if not isinstance(func, gast.Name) or func.id in locals_:
        return False
    if func.id in ctx.bindings:
        return ctx.bindings[func.id] is obj
    try:
        return ctx.info.lookup(func.id) is obj
    except NameError:
        return False


def _global_attributes(scan, locals_):
    """Locals assigned once, from a dotted name rooted at a global (``tanh = np.tanh``,
    what A-normal form makes of an argument ``np.tanh``): local -> the dotted path.
    ``scan``: a ``call_forms.Scan`` of the function."""
    counts, paths = {}, {}
    for child in scan.names:
        if not isinstance(child.ctx, gast.Load):
            counts[child.id] = counts.get(child.id, 0) + 1
    for child in scan.binders:   # (gast.walk's order: the last binding of a name wins)
        if isinstance(child, gast.Assign) and len(child.targets) == 1 \
                and isinstance(child.targets[0], gast.Name) and isinstance(child.value, gast.Attribute):
            parts, value = [], child.value
            while isinstance(value, gast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, gast.Name) and value.id not in locals_:
                paths[child.targets[0].id] = (value.id,) + tuple(reversed(parts))
    return {name: path for name, path in paths.items() if counts.get(name) == 1}


def transform(node, ctx):
    """Inline user-function calls in ``node``, in place. The names bound for them go into
    ``ctx.bindings``; ``ctx.infos`` becomes the EntityInfo of the function and of every
    helper inlined (guard.py)."""
    scan = call_forms.Scan(node)   # (one walk for the three questions below)
    locals_ = scan.local_names()
    ctx.classes = {**ctx.classes, **_built_instances(node, ctx)}
    inliner = Inliner(ctx, locals_, _global_attributes(scan, locals_))
    if any(plain_classes.made(v) for v in ctx.bindings.values()):
        ctx.stack[0].built_plain = True
    inliner.root = node
    denotes = lambda func, obj: _denotes(ctx, locals_, func, obj)   # noqa: E731
    inliner.lists = frozenset(call_forms.list_names(node, denotes, scan=scan))
    inliner.dicts = frozenset(call_forms.list_names(node, denotes, dict, scan, frozenset(
        p for p, cls in ctx.classes.items() if issubclass(cls, dict))))
    node.body = inliner.visit_block(node.body)
    ctx.infos = [ctx.info] + inliner.infos
    ctx.bindings.update(inliner.bindings)
    return node


def _built_instances(node, ctx):
    """Names bound once, at the top of ``node``, to a dataclass it builds (methods.py's
    ``rt.dataclass_new(P, ...)``): name -> ``P``, so that ``P.energy(p, x)`` inlines with
    its ``self`` of class ``P`` (``self(x)``, ``self.other(x)`` inside work)."""
    from srcgrad.runtime import dataclass_new
    if not any(v is dataclass_new for v in ctx.bindings.values()):
        return {}   # (no dataclass built here: no walk)
    counts, built = {}, {}
    changes = set()   # (cell = rt.dataclass_replace(cell, ...): an in-place change, no binding)
    for n in ast_util.walk(node):
        if isinstance(n, gast.Assign) and anno.getanno(n, Static.MUTATES):
            changes.add(id(n.targets[0]))
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load) and id(n) not in changes:
            counts[n.id] = counts.get(n.id, 0) + 1
    for s in node.body:
        value = getattr(s, "value", None)
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.args \
                and isinstance(value.args[0], gast.Name) \
                and ctx.bindings.get(value.func.id) is dataclass_new:
            cls = ctx.bindings.get(value.args[0].id)
            if cls is None:
                try:
                    cls = ctx.info.resolve(value.args[0].id)
                except NameError:
                    continue
            if structure_parts.plain_dataclass(cls):
                built[s.targets[0].id] = cls
    return {k: cls for k, cls in built.items() if counts.get(k) == 1}
