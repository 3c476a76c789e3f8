"""Lambdas and nested defs inside a differentiated function become helpers srcgrad inlines.

Runs before comprehensions.py and canonicalize.py. A function defined in ``f``:

* ``def inner(v): return v * w`` at the top level of ``f``'s body, or
  ``act = lambda v: np.tanh(v)`` there, bound once and never rebound;
* a lambda written as a call's argument (``rk4(lambda v, k: -k * v, y0, k)``) or
  called where it stands (``(lambda v: v * v)(x)``);

is a ``LocalFunction``: its tree, lifted out of ``f``, with the locals of ``f`` it
reads (its free locals) as keyword-only parameters. A call ``inner(x)`` becomes a
call of it passing them, ``inner(x, w=w)``, so the helper sees each one's value at
the call, as a Python closure does, and transform/inline.py inlines it like any
helper. Passed to a helper (the rk4 idiom), it is known there as the callable the
parameter holds (inline.bind_static); the free locals it reads are copied to
names of their own just before the statement that passes it (the helper cannot
rebind ``f``'s locals, so those are their values at every call inside it).

A hook (``srcgrad.register_hook(y, lambda g: g * 10)``) is called by the reverse
sweep, after ``f`` has run: it becomes a real Python function of ``f``'s globals,
and may not read ``f``'s locals.

Refused at their line, saying what to write instead: a local function that
escapes (returned, stored in a container or a variable, rebound), one defined in
a branch or loop, one used before its definition, decorators and defaults that are
not constants, a nested def calling itself (transform/inline.py refuses recursion).
"""

import ast
import copy
import inspect
import types

import gast

from srcgrad import anno, grad_mode, templates
from srcgrad.ast_util import name, reads, rewrite_blocks
from srcgrad.errors import UnsupportedError
from srcgrad.parse import EntityInfo
from srcgrad.transform import gradient_aliases, nested_derivatives
from srcgrad import ast_util

Static = anno.Static

_SCOPES = (gast.FunctionDef, gast.Lambda)



class LocalFunction:
    """A lambda or nested def of a differentiated function, lifted out of it.

    ``node``: a FunctionDef whose keyword-only parameters after its own are the free
    locals it reads (or, for a copy passed to a helper, none: it reads the names the
    copies were made to). ``info``: the EntityInfo of the function it was defined in
    (globals, closure, where its lines are)."""

    def __init__(self, node, info, name, qualname):
        self.node = node
        self.info = info
        self.__name__ = name
        self.__qualname__ = qualname
        self.__code__ = self        # what inline.py's recursion check compares
        self.__module__ = getattr(info.fn, "__module__", None)
        self.__defaults__ = self.__kwdefaults__ = None
        self.__signature__ = _signature(node)

    def parse(self):
        """(a fresh copy of its tree, an EntityInfo for it): what parse_function gives."""
        outer = self.info
        info = EntityInfo(outer.fn, outer.name, outer.filename, outer.first_lineno, outer.indent,
                          outer.source_lines, outer.globals, outer.closure, outer.extra)
        return templates.clone(self.node), info

    def as_function(self):
        """A Python function of this local function's parameters (``sg.grad(energy)(x)``
        inside ``f``: its free locals are trailing parameters, ``free_positional``), which
        srcgrad compiles from the lifted tree (``__srcgrad_parse__``); never run itself."""
        found = self.__dict__.get("_function")
        if found is None:
            params = ", ".join(a.id for a in self.node.args.args)
            message = f"{self.__qualname__} is compiled by srcgrad, not called"
            namespace = {}
            exec(compile(f"def {self.node.name}({params}):\n    raise TypeError({message!r})\n",
                         f"<local function {self.__qualname__}>", "exec"), namespace)
            found = self._function = types.FunctionType(   # (the module's globals, live)
                namespace[self.node.name].__code__, self.info.globals, self.node.name)
            found.__qualname__ = self.__qualname__
            found.__module__ = self.__module__
            found.__srcgrad_parse__ = self.parse
        return found

    def __call__(self, *args, **kwargs):
        origin = anno.getanno(self.node.body[0], Static.ORIGIN)
        message = (f"{self.__qualname__}, defined inside a function srcgrad differentiates, can "
                   f"only be called there or passed to a helper srcgrad inlines")
        if origin is None:
            raise UnsupportedError(message, self.info.filename)
        raise origin.error(UnsupportedError, message,
                           "Call it directly, or define it at module level to pass it to a "
                           "library function.")

    def __repr__(self):
        return f"<local function {self.__qualname__}>"


def _signature(node):
    P = inspect.Parameter
    args = node.args
    params = [P(a.id, P.POSITIONAL_ONLY) for a in args.posonlyargs]
    positional = args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for a, d in zip(positional, defaults):
        params.append(P(a.id, P.POSITIONAL_OR_KEYWORD,
                        default=P.empty if d is None else d.value))
    if args.vararg is not None:
        params.append(P(args.vararg.id, P.VAR_POSITIONAL))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        params.append(P(a.id, P.KEYWORD_ONLY, default=P.empty if d is None else d.value))
    if args.kwarg is not None:
        params.append(P(args.kwarg.id, P.VAR_KEYWORD))
    return inspect.Signature(params)


def _scope_walk(node):
    """The nodes of ``node`` outside any lambda or def nested in it (those nodes included)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if n is not node and isinstance(n, _SCOPES):
            continue
        todo.extend(gast.iter_child_nodes(n))


def _stores(node):
    """Name -> how many times ``node``'s own scope binds it (defs count as bindings)."""
    counts = {}
    for n in _scope_walk(node):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            counts[n.id] = counts.get(n.id, 0) + 1
        elif isinstance(n, gast.FunctionDef) and n is not node:
            counts[n.name] = counts.get(n.name, 0) + 1
    return counts


def _own_locals(fn):
    """The names a lifted function (or lambda) binds: its parameters and assignments."""
    names = {a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    for extra in (fn.args.vararg, fn.args.kwarg):
        if extra is not None:
            names.add(extra.id)
    for n in ast_util.walk(fn):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, (gast.Load, gast.Param)):
            names.add(n.id)
    return names


class Lifting:
    def __init__(self, node, info, namer, bindings):
        self.node, self.info, self.namer, self.bindings = node, info, namer, bindings
        self.outer_locals = set(_stores(node)) | {
            a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        self.named = {}       # user name -> (defining statement, its index, FunctionDef)
        self.functions = {}   # user name -> LocalFunction
        self.free = {}        # user name -> its free locals, sorted
        self.stmt = node

    def error(self, node, message, hint):
        origin = anno.getanno(node, Static.ORIGIN) or self.info.origin(node) \
            or anno.getanno(self.stmt, Static.ORIGIN) or self.info.origin(self.stmt)
        if origin is None:
            return UnsupportedError(message, self.info.filename, hint=hint)
        return origin.error(UnsupportedError, message, hint)

    # ----- finding them -----

    def collect(self):
        counts = _stores(self.node)
        for index, stmt in enumerate(self.node.body):
            fn = name = None
            if isinstance(stmt, gast.FunctionDef):
                if stmt.decorator_list:
                    raise self.error(stmt, "a decorated nested def is not supported in a function "
                                           "srcgrad differentiates",
                                     "Define the decorated function at module level.")
                fn, name = stmt, stmt.name
            elif isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Lambda) \
                    and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name):
                fn, name = self.lambda_def(stmt.value, stmt.targets[0].id, stmt), stmt.targets[0].id
            if fn is None:
                continue
            if counts.get(name, 0) != 1:
                raise self.error(stmt, f"the local function {name!r} is rebound; srcgrad inlines "
                                       f"a local function at its calls, so it must be bound once",
                                 "Give each function a name of its own.")
            self.named[name] = (stmt, index, fn)
        for n in _scope_walk(self.node):
            if n is self.node:
                continue
            if isinstance(n, gast.FunctionDef) and not any(n is d[2] for d in self.named.values()):
                raise self.error(n, "a nested def inside a branch or loop is not supported in a "
                                    "function srcgrad differentiates",
                                 "Define it at the top level of the function's body.")

    def lambda_def(self, lam, name, stmt):
        """The FunctionDef of ``lam`` (its body returned), with the lambda's origin."""
        ret = gast.Return(value=lam.body)
        gast.copy_location(ret, lam.body)
        origin = anno.getanno(stmt, Static.ORIGIN) or self.info.origin(lam)
        if origin is not None:
            anno.setanno(ret, Static.ORIGIN, origin)
        node = gast.FunctionDef(name=name, args=lam.args, body=[ret], decorator_list=[],
                                returns=None, type_comment=None, type_params=[])
        gast.copy_location(node, lam)
        return node

    # ----- lifting -----

    def lift_all(self):
        """The free locals of each named local function (those of the local functions
        it calls too), then its LocalFunction."""
        direct = {}
        for fn_name, (stmt, _, fn) in self.named.items():
            self.check_defaults(fn, stmt)
            direct[fn_name] = (reads(fn) & self.outer_locals) - _own_locals(fn) - set(self.named)
        calls = {fn_name: reads(fn) & (set(self.named) - {fn_name}) for fn_name, (_, _, fn) in self.named.items()}
        free = {fn_name: set(v) for fn_name, v in direct.items()}
        changed = True
        while changed:
            changed = False
            for fn_name in free:
                for callee in calls[fn_name]:
                    if not free[callee] <= free[fn_name]:
                        free[fn_name] |= free[callee]
                        changed = True
        for fn_name, (stmt, _, fn) in self.named.items():
            self.free[fn_name] = sorted(free[fn_name] - _own_locals(fn))
            fn.args.kwonlyargs = list(fn.args.kwonlyargs) + [
                gast.Name(id=v, ctx=gast.Param(), annotation=None, type_comment=None)
                for v in self.free[fn_name]]
            fn.args.kw_defaults = list(fn.args.kw_defaults) + [None] * len(self.free[fn_name])
            fresh = self.namer.new(f"{fn_name}_fn")
            self.functions[fn_name] = LocalFunction(fn, self.info, fn_name, f"{self.info.name}.<locals>.{fn_name}")
            self.info.extra[fresh] = self.bindings[fresh] = self.functions[fn_name]
            self.functions[fn_name].global_name = fresh
        for fn_name, (stmt, _, fn) in self.named.items():
            self.stmt = stmt
            self.calls_inside(fn)

    def calls_inside(self, fn):
        """Calls of the other local functions in ``fn``'s body pass their free locals
        (``fn`` has them all); any other use of them there is refused."""
        own = _own_locals(fn)
        parents = {c: n for n in ast_util.walk(fn) for c in gast.iter_child_nodes(n)}
        for n in list(ast_util.walk(fn)):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in self.named \
                    and n.id not in own:
                parent = parents.get(n)
                if not (isinstance(parent, gast.Call) and parent.func is n):
                    raise self.error(n, f"the local function {n.id!r} is used as a value inside "
                                        f"another local function", "Call it there, or pass it "
                                        "from the function's own body.")
                user = n.id
                n.id = self.functions[user].global_name
                parent.keywords = list(parent.keywords) + [
                    gast.keyword(arg=v, value=name(v)) for v in self.free[user]]

    def check_defaults(self, fn, stmt):
        args = fn.args
        for d in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            if not (isinstance(d, gast.Constant) and templates.is_literal(d.value)):
                raise self.error(stmt, "a default value of a local function that is not a "
                                       "constant is not supported",
                                 "Pass the value as an argument at each call.")

    # ----- rewriting the uses -----

    def rewrite(self, body, top=False):
        out = []
        for stmt in body:
            if top and any(stmt is d[0] for d in self.named.values()):
                continue   # the definition itself: lifted
            self.stmt = stmt
            before = []
            rewrite_blocks(stmt, self.rewrite)
            headers = [getattr(stmt, f) for f in ("test", "iter", "value", "targets", "target")
                       if getattr(stmt, f, None) is not None]
            if not isinstance(stmt, (gast.If, gast.For, gast.While)):
                headers = [stmt]
            for header in headers:
                for part in header if isinstance(header, list) else [header]:
                    self.expression(part, before, isinstance(stmt, gast.While))
            out.extend(before)
            out.append(stmt)
        return out

    def expression(self, node, before, in_while):
        """Rewrite the uses of local functions in ``node`` (not inside the local
        functions' own bodies, lifted already)."""
        parents = self.parents = {}
        for n in _scope_walk(node):
            for child in gast.iter_child_nodes(n):
                parents[child] = n
        for n in list(_scope_walk(node)):
            if isinstance(n, gast.Lambda) and n is not node:
                self.anonymous(n, parents.get(n), before, in_while)
            elif isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in self.named:
                self.use(n, parents.get(n), before, in_while)

    def use(self, ref, parent, before, in_while):
        user = ref.id
        stmt = self.named[user][0]
        if self.defined_after(stmt):
            raise self.error(ref, f"the local function {user!r} is used before its definition",
                             "Define it before its first use.")
        function = self.functions[user]
        if isinstance(parent, gast.Call) and parent.func is ref:
            ref.id = function.global_name
            parent.keywords = list(parent.keywords) + [
                gast.keyword(arg=v, value=name(v)) for v in self.free[user]]
            return
        call = self.gradient_called(parent, ref)
        if call is not None:
            self.differentiated(function, self.free[user], parent, call, ref)
            return
        if isinstance(parent, gast.Call) and (ref in parent.args or any(
                k.value is ref for k in parent.keywords)):
            ref.id = self.passed(function, self.free[user], before, in_while, ref).global_name
            return
        raise self.error(ref, f"the local function {user!r} escapes (it is returned, stored or "
                               f"assigned); srcgrad inlines a local function at its calls",
                         "Call it, or pass it to a helper function; define a function that must "
                         "be kept as a value at module level.")

    def gradient_called(self, parent, ref):
        """The call ``sg.grad(ref, ...)(...)`` (or of ``sg.value_and_grad``, or of a gradient
        of that gradient, ``sg.grad(sg.grad(ref))(...)``) when ``ref`` is the function
        differentiated there, called where it stands (anf_expressions compiles it); else None."""
        maker, inner = parent, ref
        while isinstance(maker, gast.Call) and maker.args and maker.args[0] is inner \
                and gradient_aliases.makes_gradient(maker, self.info, self.outer_locals):
            outer = self.parents.get(maker)
            if isinstance(outer, gast.Call) and outer.func is maker:
                return outer
            maker, inner = outer, maker
        return None

    def differentiated(self, function, free, grad_call, call, ref):
        """``sg.grad(fn)(x)`` of the local function ``function`` (its free locals ``free``
        keyword-only parameters): a copy taking them as trailing positional parameters,
        and the call passing them there, so the gradient's own derivative reaches them
        (its backward is an hvp over every argument; nested.py)."""
        args = function.node.args
        if args.vararg is not None or args.kwarg is not None or args.defaults or args.posonlyargs \
                or len(args.kwonlyargs) > len(free) or call.keywords:
            raise self.error(ref, "sg.grad(fn)(...) of a local function with defaults, *args, "
                                  "**kwargs or keyword-only parameters, or called with keyword "
                                  "arguments, is not supported inside a differentiated function",
                             "Give the local function positional parameters only and pass "
                             "them positionally, or define it at module level.")
        node = templates.clone(function.node)
        node.args.args = list(node.args.args) + [
            gast.Name(id=v, ctx=gast.Param(), annotation=None, type_comment=None) for v in free]
        node.args.kwonlyargs, node.args.kw_defaults = [], []
        value = LocalFunction(node, self.info, function.__name__, function.__qualname__)
        value.free_positional = tuple(free)
        value.global_name = self.namer.new(f"{function.__name__.strip('<>')}_fn")
        self.info.extra[value.global_name] = self.bindings[value.global_name] = value
        grad_call.args[0] = name(value.global_name)
        call.args = list(call.args) + [name(v) for v in free]

    def defined_after(self, stmt):
        body = self.node.body
        here = self.top_level(self.stmt)
        return here is not None and body.index(here) < body.index(stmt)

    def top_level(self, stmt):
        for s in self.node.body:
            if s is stmt or any(n is stmt for n in ast_util.walk(s)):
                return s
        return None

    def anonymous(self, lam, parent, before, in_while):
        if _is_hook_argument(parent, lam, self.info):
            self.hook(lam, parent)
            return
        if _is_key_argument(parent, lam, self.info):
            self.key_function(lam, parent)
            return
        called = isinstance(parent, gast.Call) and parent.func is lam
        passed = isinstance(parent, gast.Call) and (lam in parent.args or any(
            k.value is lam for k in parent.keywords))
        if not (called or passed):
            raise self.error(lam, "a lambda that escapes (returned, stored in a container or "
                                  "passed on as a value) is not supported in a function srcgrad "
                                  "differentiates",
                             "Call it, bind it to a name and call that, or pass it to a helper "
                             "function.")
        fn = self.lambda_def(lam, self.namer.new("lambda"), self.stmt)
        self.check_defaults(fn, self.stmt)
        for n in _scope_walk(lam.body):
            if isinstance(n, gast.Name) and n.id in self.named:   # a local function it calls
                self.use(n, _parent_in(lam.body, n), before, in_while)
        free = sorted((reads(fn) & self.outer_locals) - _own_locals(fn) - set(self.named))
        fn.args.kwonlyargs = list(fn.args.kwonlyargs) + [
            gast.Name(id=v, ctx=gast.Param(), annotation=None, type_comment=None) for v in free]
        fn.args.kw_defaults = list(fn.args.kw_defaults) + [None] * len(free)
        function = LocalFunction(fn, self.info, "<lambda>", f"{self.info.name}.<locals>.<lambda>")
        call = self.gradient_called(parent, lam)
        if call is not None:
            self.differentiated(function, free, parent, call, lam)
            return
        if called:
            function.global_name = self.namer.new("lambda_fn")
            self.info.extra[function.global_name] = self.bindings[function.global_name] = function
            parent.func = name(function.global_name)
            parent.keywords = list(parent.keywords) + [gast.keyword(arg=v, value=name(v)) for v in free]
            return
        replacement = name(self.passed(function, free, before, in_while, lam).global_name)
        if lam in parent.args:
            parent.args[parent.args.index(lam)] = replacement
        for k in parent.keywords:
            if k.value is lam:
                k.value = replacement

    def passed(self, function, free, before, in_while, where):
        """The LocalFunction passed as a value: its free locals read from copies made
        just before the statement (bound as its keyword-only parameters' defaults)."""
        if free and in_while:
            raise self.error(where, "a local function that reads the function's variables "
                                    "cannot be passed in a while condition",
                             "Compute the call into a name before the loop and at the end of "
                             "its body.")
        node = templates.clone(function.node)
        copies = {}
        for v in free:
            copies[v] = self.namer.new(f"{v}_captured")
            assign = gast.Assign(targets=[name(copies[v], True)], value=name(v), type_comment=None)
            gast.copy_location(assign, self.stmt)
            anno.copyanno(self.stmt, assign, Static.ORIGIN)
            before.append(assign)
        # The free locals are no longer parameters: the body reads the copies.
        keep = len(node.args.kwonlyargs) - len(free)
        node.args.kwonlyargs = node.args.kwonlyargs[:keep]
        node.args.kw_defaults = node.args.kw_defaults[:keep]
        for n in ast_util.walk(node):
            if isinstance(n, gast.Name) and n.id in copies and not isinstance(n.ctx, gast.Param):
                n.id = copies[n.id]
        value = LocalFunction(node, self.info, function.__name__, function.__qualname__)
        value.captured = tuple(copies.values())
        value.global_name = self.namer.new(f"{function.__name__.strip('<>')}_fn")
        self.info.extra[value.global_name] = self.bindings[value.global_name] = value
        return value

    def key_function(self, lam, parent):
        """A key lambda: a real function, called by sorted/max/min when ``f`` runs; it picks
        an order (no gradient), so the variables of ``f`` it reads are bound as values."""
        self.check_defaults(self.lambda_def(lam, "key", self.stmt), self.stmt)
        read = reads(lam) - _own_locals(lam)
        if read & set(self.named):
            raise self.error(lam, "a key function that calls a local function is not supported",
                             "Define the key function at module level.")
        free = sorted(read & (self.outer_locals | set(self.info.closure)))
        lam = templates.clone(lam)
        lam.args.kwonlyargs = list(lam.args.kwonlyargs) + [
            gast.Name(id=v, ctx=gast.Param(), annotation=None, type_comment=None) for v in free]
        lam.args.kw_defaults = list(lam.args.kw_defaults) + [None] * len(free)
        fn = self._module_level(lam)
        key_name = self.namer.new("key_fn")
        self.info.extra[key_name] = self.bindings[key_name] = fn
        value = name(key_name)
        if free:
            from srcgrad import runtime
            bind = self.namer.new("bind_key")
            self.info.extra[bind] = self.bindings[bind] = runtime.bind_key
            value = gast.Call(func=name(bind), args=[value],
                              keywords=[gast.keyword(arg=v, value=name(v)) for v in free])
        parent.args[1] = value

    def _module_level(self, lam):
        """The lambda ``lam`` made a real function of the module's globals, its line numbers
        those of the statement it stands in (tracebacks name the user's line)."""
        expr = ast.Expression(body=gast.gast_to_ast(lam))
        origin = anno.getanno(self.stmt, Static.ORIGIN)
        ast.fix_missing_locations(expr)
        if origin is not None:
            ast.increment_lineno(expr, origin.lineno - expr.body.lineno)
        return eval(compile(expr, self.info.filename, "eval"), self.info.globals)

    def hook(self, lam, parent):
        """A hook lambda: a real function of the globals, called by the reverse sweep."""
        read = reads(lam) - _own_locals(lam)
        local = sorted(read & (self.outer_locals | set(self.info.closure)))
        if local:
            raise self.error(lam, f"a hook lambda that reads {local[0]!r}, a variable of the "
                                  f"function, is not supported (it runs in the reverse sweep)",
                             "Read only the gradient it is given and module-level names, or "
                             "use a module-level function.")
        fn = self._module_level(templates.clone(lam))
        hook_name = self.namer.new("hook_fn")
        self.info.extra[hook_name] = self.bindings[hook_name] = fn
        parent.args[parent.args.index(lam)] = name(hook_name)


def _is_key_argument(parent, lam, info):
    """Whether ``lam`` is the key of ``sorted``/``max``/``min`` (methods.py made the call
    ``rt.sort_order(xs, key, reverse)`` or ``rt.argbest(xs, key, largest)``)."""
    from srcgrad import runtime
    return isinstance(parent, gast.Call) and isinstance(parent.func, gast.Name) \
        and lam in parent.args[1:2] \
        and info.extra.get(parent.func.id) in (runtime.sort_order, runtime.argbest)


def _parent_in(root, target):
    for n in ast_util.walk(root):
        if any(c is target for c in gast.iter_child_nodes(n)):
            return n
    return None


def _is_hook_argument(parent, lam, info):
    if not isinstance(parent, gast.Call) or lam not in parent.args[1:2]:
        return False
    func, parts = parent.func, []
    while isinstance(func, gast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, gast.Name):
        return False
    try:
        return info.resolve_path((func.id,) + tuple(reversed(parts))) is grad_mode.register_hook
    except (NameError, AttributeError):
        return False


def transform(node, ctx, census=None):
    """Lift the lambdas and nested defs of FunctionDef ``node``; returns ``node``.
    (``ctx``: the CompileContext; the helpers are bound in ``ctx.bindings``; ``census``:
    an ``ast_walks.Census`` of ``node``, told of a change.)"""
    # du = sg.grad(u); du(x): sg.grad(u)(x)
    if gradient_aliases.expand(node, ctx.info, _stores) and census is not None:
        census.changed()
    # sg.hessian(u)(x): rows of sg.grad
    if nested_derivatives.expand(node, ctx, ctx.user_locals, census) and census is not None:
        census.changed()
    if not (any(n is not node for cls in _SCOPES for n in census.of(cls)) if census is not None
            else any(isinstance(n, _SCOPES) for n in ast_util.walk(node) if n is not node)):
        return node
    if census is not None:
        census.changed()
    if not _constant_factories(node, ctx):   # defaultdict(lambda: []): nothing left to lift
        return node
    lifting = Lifting(node, ctx.info, ctx.namer, ctx.bindings)
    lifting.collect()
    lifting.lift_all()
    node.body = lifting.rewrite(node.body, top=True)
    return node


def _constant_factories(node, ctx):
    """``defaultdict(lambda: [])``, ``defaultdict(lambda: 0.0)``: a lambda of no parameters
    returning a literal, passed to a call, is a Python function of its own (bound as a
    global: it reads nothing of ``f``, holds no array, and the call may run it), returning
    a new copy of the literal each time, as the lambda does. Whether any scope is left."""
    from srcgrad.transform import as_array
    left = False
    for n in ast_util.walk(node):
        if isinstance(n, gast.Call):
            for k, arg in enumerate(n.args):
                if isinstance(arg, gast.Lambda) and _no_parameters(arg.args):
                    try:
                        value = ast.literal_eval(gast.gast_to_ast(arg.body))
                    except (ValueError, TypeError, SyntaxError, RecursionError):
                        continue
                    bound = as_array.bind(ctx.namer, ctx.info, ctx.bindings, "default_factory",
                                          _factory(value))
                    n.args[k] = name(bound)
        elif n is not node and isinstance(n, _SCOPES):
            left = True
    return left


def _no_parameters(args):
    return not (args.posonlyargs or args.args or args.vararg or args.kwonlyargs or args.kwarg)


def _factory(value):
    def default_factory():
        return copy.deepcopy(value)
    return default_factory
