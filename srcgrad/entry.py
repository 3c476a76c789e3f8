"""What ``grad``, ``vjp``, ``source`` differentiate when given something other than a def.

A Python function is differentiated from its source. A primitive (a function with a
rule: ``np.sin``, ``np.multiply``, ``math.exp``, a user's ``@srcgrad.adjoint``) is
differentiated by its rule: srcgrad writes the one-line function that calls it,

    def sin(x):
        return np.sin(x)

and differentiates that, so an entry point and a call inside a function take one
path. A bound method or ``functools.partial`` (nested, of a method, of a primitive)
binds some parameters of a function to objects: srcgrad writes the function of the
parameters left (``inspect.signature`` of the callable), which calls the target,

    def loss(x, y):                       # sg.grad(model.loss)
        return __srcgrad_target__(self, x, y)

and differentiates the target's own source with the bound parameters (``self``)
read from that function's closure cells: constants, like a closure's. Anything
else is refused by name, saying what to write instead.
"""

import dis
import functools
import inspect
import keyword
import sys

from srcgrad import caches, rules
from srcgrad.codegen import loader
from srcgrad.errors import NonDifferentiableError, SrcgradError, UnsupportedError

# The packages whose Python functions are primitives (a rule, or a library's own code),
# never user code that transform/inline.py inlines or entry_function differentiates.
LIBRARY_ROOTS = {"numpy", "cupy", "cupyx", "scipy", "srcgrad", "math", "builtins", "operator",
                 "functools", "torch", "jax", "autograd"}

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
_wrappers = caches.LRU()       # id(primitive) -> (primitive, its one-line function)
_entries = caches.LRU()        # what was asked -> (rules.VERSION, what is differentiated)
_bindings = caches.LRU()       # ids of (target, bound objects) -> (them, VERSION, function)
_arities = caches.LRU()        # (function, positional count, keywords) -> (VERSION, function)
_ALIASES = {"numpy": "np", "cupy": "cp"}
_RULE_HINT = ("Register its gradient with @srcgrad.adjoint, or wrap it in a srcgrad.Function "
              "with a backward.")


def entry_function(fn):
    """The Python function srcgrad differentiates for ``fn``.

    Raises:
        NonDifferentiableError: ``fn`` has no source and no rule, or is not differentiable.
        UnsupportedError: a callable object that is not a function, or arguments a
            ``functools.partial`` cannot bind to its function.
        TypeError: ``fn`` is not callable.
    """
    if inspect.ismethod(fn) or isinstance(fn, functools.partial):
        return _bound_function(fn)
    while hasattr(fn, "cache_info") and callable(getattr(fn, "__wrapped__", None)):
        fn = fn.__wrapped__   # functools.cache/lru_cache: the function, as a helper reads it
    call = call_method(fn)
    if call is not None:   # a layer object: its __call__, self a constant
        return _bound_function(call)
    try:
        found = _entries.get(fn)
    except TypeError:   # unhashable
        found = None
    if found is not None and found[0] == rules.VERSION[0]:
        return found[1]
    rule = rules.lookup(fn)
    if rule is None and inspect.isfunction(fn) and not _library_function(fn):
        entry = _decorated(fn) or fn
    elif rule is not None or rules.has_zero_gradient(fn):
        held = _wrappers.get(id(fn))
        if held is None or held[0] is not fn:   # (np.floor: a function of its own, whose
            # input reaches its output only through it: a zero gradient, seeds.py)
            held = _wrappers[id(fn)] = (fn, _primitive_function(fn, rule or _RuleParams(fn)))
        entry = held[1]
    else:
        raise _refusal(fn)
    try:
        _entries[fn] = (rules.VERSION[0], entry)
    except TypeError:
        pass
    return entry


def readable(fn):
    """What forward mode and the Jacobians read for ``fn``: a bound method, a partial or a
    decorator's ``*args`` wrapper as ``entry_function`` makes it (as ``sg.grad`` reads
    them), a primitive as its one-line function, any other function itself; another
    callable is refused as ``sg.grad`` refuses it (``entry_function``)."""
    if inspect.ismethod(fn) or isinstance(fn, functools.partial) or call_method(fn) is not None \
            or inspect.isfunction(fn) and getattr(fn, "__wrapped__", None) is not None:
        return entry_function(fn)
    if not inspect.isfunction(fn):
        return entry_function(fn)
    return fn


def call_method(obj):
    """``obj.__call__`` for an instance of a user class that defines ``__call__`` in
    Python (a layer, ``model(x)``), else None: it is differentiated, and inlined, as
    the bound method, ``obj`` a constant like ``self`` of ``sg.grad(model.loss)``."""
    if inspect.isclass(obj) or inspect.isroutine(obj) or isinstance(obj, functools.partial):
        return None
    method = getattr(type(obj), "__call__", None)
    module = (getattr(method, "__module__", None) or "").split(".")[0]
    if not inspect.isfunction(method) or is_library_module(module):
        return None
    return obj.__call__


class Bound:
    """What a function made by ``_bound_function`` or ``fixed_arity`` binds: its ``target``
    (the function whose source is differentiated), the ``names`` of the target's
    parameters bound positionally to constants (the wrapper's free variables of the same
    names), and ``packed``: the target's ``*args``/``**kwargs`` parameter -> the wrapper's
    parameters its items are (``(("batch", ("batch_0", "batch_1"), False),)``; True: keys)."""

    __slots__ = ("target", "names", "packed")

    def __init__(self, target, names, packed=()):
        self.target, self.names, self.packed = target, names, packed


def bound_of(fn):
    """The ``Bound`` of a function made for a bound method or partial, else None."""
    return getattr(fn, "__srcgrad_bound__", None)


def peel(fn):
    """(target, positional constants, keyword constants) of nested methods and partials."""
    args, keywords, target = (), {}, fn
    while True:
        if isinstance(target, functools.partial):
            args = tuple(target.args) + args
            keywords = {**target.keywords, **keywords}
            target = target.func
        elif inspect.ismethod(target):
            args = (target.__self__,) + args
            target = target.__func__
        else:
            return target, args, keywords


def _bound_function(fn):
    """The function of ``fn``'s unbound parameters (one per target and bound objects)."""
    target, args, keywords = peel(fn)
    objects = (target,) + args + tuple(keywords.values())
    key = (tuple(map(id, objects)), tuple(keywords))
    found = _bindings.get(key)
    if found is not None and found[1] == rules.VERSION[0] and all(map(_same, found[0], objects)):
        return found[2]
    try:
        function = entry_function(target)
    except (NonDifferentiableError, UnsupportedError, TypeError) as exc:
        raise type(exc)(f"cannot differentiate {_describe_bound(fn)}: {exc}") from None
    wrapper = _wrap(fn, function, args, keywords)
    _bindings[key] = (objects, rules.VERSION[0], wrapper)
    return wrapper


def _same(a, b):
    return a is b


def _describe_bound(fn):
    if inspect.ismethod(fn):
        return f"the bound method {_describe(fn)}"
    return f"functools.partial({_describe(fn.func)}, ...)"


def _wrap(fn, function, args, keywords):
    """``def name(<params left>): return __srcgrad_target__(<bound>, <params left>)``,
    the bound objects in its closure cells, named after the parameters they bind."""
    what = _describe_bound(fn)
    params = list(inspect.signature(function).parameters.values())
    P = inspect.Parameter
    positional = [p for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    if len(args) > len(positional):
        raise UnsupportedError(
            f"cannot differentiate {what}: it binds {len(args)} positional arguments and "
            f"{_describe(function)} has {len(positional)} positional parameters",
            hint="Bind arguments to named parameters (srcgrad does not differentiate *args).")
    bound = [p.name for p in positional[:len(args)]]
    for name in keywords:
        param = next((p for p in params if p.name == name), None)
        if param is None or param.kind in (P.POSITIONAL_ONLY, P.VAR_POSITIONAL, P.VAR_KEYWORD):
            raise UnsupportedError(
                f"cannot differentiate {what}: it binds the keyword {name!r}, which is not a "
                f"keyword parameter of {_describe(function)}",
                hint="Bind arguments to named parameters of the function.")
        if name in bound:
            raise TypeError(f"{what} binds {name!r} both by position and by keyword")
    # The parameters left, as inspect.signature(partial) shows them: a parameter bound
    # by keyword (and every positional one after it) becomes keyword-only, its
    # default the bound value (a call may pass another).
    left, keyword_only = [], False
    for p in params[len(bound):]:
        if p.name in keywords:
            keyword_only = True
            p = p.replace(kind=P.KEYWORD_ONLY, default=keywords[p.name])
        elif keyword_only and p.kind is P.POSITIONAL_OR_KEYWORD:
            p = p.replace(kind=P.KEYWORD_ONLY)
        left.append(p)
    left.sort(key=lambda p: p.kind)   # stable: keyword-only after *args
    inspect.Signature(left)           # raises ValueError for an order Python refuses
    name = _identifier(function.__name__)
    taken = set(bound) | {p.name for p in left} | {"__srcgrad_target__"}
    while name in taken:
        name += "_"
    spelled, call, star = [], list(bound), False
    for p in left:
        if p.kind is P.VAR_POSITIONAL:
            spelled.append("*" + p.name)
            call.append("*" + p.name)
            star = True
        elif p.kind is P.VAR_KEYWORD:
            spelled.append("**" + p.name)
            call.append("**" + p.name)
        elif p.kind is P.KEYWORD_ONLY:
            if not star:
                spelled.append("*")
                star = True
            spelled.append(p.name)
            call.append(f"{p.name}={p.name}")
        else:
            spelled.append(p.name)
            call.append(p.name)
        if p.kind is P.POSITIONAL_ONLY and (left.index(p) + 1 == len(left)
                                            or left[left.index(p) + 1].kind is not P.POSITIONAL_ONLY):
            spelled.append("/")
    wrapper = _forwarder(name, spelled, call, left, function, bound, args, f"bound {_describe(function)}")
    wrapper.__srcgrad_bound__ = Bound(function, tuple(bound))
    return wrapper


def _decorated(fn):
    """For a decorator's wrapper ``def wrapper(*args, **kwargs)`` made with
    ``functools.wraps``: the function of the wrapped function's parameters that calls it,

        def f(x, y, scale=2.0):               # sg.grad(f), f decorated
            return __srcgrad_target__(x, y, scale)

    so that the wrapper's own code is differentiated (inlined as a helper, its ``*args``
    bound to the call's arguments: transform/inline.py), not the function it wraps.
    None for any other function."""
    P = inspect.Parameter
    if getattr(fn, "__wrapped__", None) is None or hasattr(fn, "__srcgrad_grad_mode__"):
        return None   # (parse.py reads @sg.no_grad()'s wrapper through)
    own = inspect.signature(fn, follow_wrapped=False).parameters.values()
    if not any(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for p in own):
        return None
    try:
        params = list(inspect.signature(fn).parameters.values())   # the wrapped function's
    except (TypeError, ValueError):
        return None
    if any(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for p in params):
        return None   # the wrapper of a wrapper taking *args: fence.py refuses it, naming it
    name = _identifier(fn.__name__)
    while name in {p.name for p in params} | {"__srcgrad_target__"}:
        name += "_"
    spelled, call, star = [], [], False
    for p in params:
        if p.kind is P.KEYWORD_ONLY:
            if not star:
                spelled.append("*")
                star = True
            call.append(f"{p.name}={p.name}")
        else:
            call.append(p.name)
        spelled.append(p.name)
    made = _forwarder(name, spelled, call, params, fn, (), (), f"decorated {_describe(fn)}")
    made.__srcgrad_decorated__ = fn   # its refusals are said at the user's function (parse.py)
    return made


def _forwarder(name, spelled, call, params, target, bound, args, hint):
    """``def name(<spelled>): return __srcgrad_target__(<call>)`` with ``target`` and the
    objects ``args`` (the names ``bound``) in its closure cells, the defaults of
    ``params``, and ``target``'s name and docstring."""
    P = inspect.Parameter
    source = (f"def __srcgrad_bind__(__srcgrad_target__{''.join(', ' + b for b in bound)}):\n"
              f"    def {name}({', '.join(spelled)}):\n"
              f"        return __srcgrad_target__({', '.join(call)})\n"
              f"    return {name}\n")
    filename = loader.write(source, hint)
    namespace = {"__name__": "srcgrad.entry"}
    exec(compile(source, filename, "exec"), namespace)
    made = namespace["__srcgrad_bind__"](target, *args)
    loader.release_with(filename, [made])
    made.__defaults__ = tuple(p.default for p in params if p.default is not p.empty
                              and p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)) or None
    made.__kwdefaults__ = {p.name: p.default for p in params if p.default is not p.empty
                           and p.kind is P.KEYWORD_ONLY} or None
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
        setattr(made, attribute, getattr(target, attribute, None))
    return made


def variadic(fn):
    """The function srcgrad reads for ``fn`` (``readable``) when it takes ``*args`` or
    ``**kwargs`` of its own, else None: its derivatives are made per call (``ByArity``)."""
    if isinstance(fn, ByArity):   # a derivative of such a function: one per arity again
        return fn
    if not (inspect.isfunction(fn) or inspect.ismethod(fn) or isinstance(fn, functools.partial)
            or call_method(fn) is not None) or callable(getattr(fn, "as_function", None)):
        return None
    try:
        target = readable(fn)
    except (SrcgradError, TypeError, ValueError):
        return None   # refused where the derivative reads it, as before
    code = getattr(target, "__code__", None)
    if code is None or not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) \
            or hasattr(target, "__srcgrad_grad_mode__"):   # @sg.no_grad(): parse reads through
        return None
    return target


class ByArity:
    """A derivative (``sg.grad(f)``, ``sg.jacfwd(f)``...) of a function ``f`` taking
    ``*args``/``**kwargs``: made per call's number of positional arguments and keyword
    names, of the function with those parameters named (``fixed_arity``), so that ``wrt``
    counts the call's positional arguments, as JAX's ``argnums``. ``own`` are the
    derivative's own keywords (``grad_outputs``), not ``f``'s."""

    def __init__(self, target, make, own=()):
        functools.update_wrapper(self, target, updated=())   # (not the target's own made)
        self.target, self.make, self.own = target, make, frozenset(own)
        self.made = {}

    def __call__(self, *args, **kwargs):
        found = self.made.get(len(args)) if not kwargs else None
        if found is None:
            found = self.derivative(len(args), tuple(sorted(k for k in kwargs if k not in self.own)))
        return found(*args, **kwargs)

    def __reduce__(self):
        return ByArity, (self.target, self.make, tuple(self.own))

    def as_function(self, has_aux=False):
        raise TypeError(f"srcgrad: {self.__qualname__} takes *args or **kwargs, so its "
                        f"derivative is made for each call's arguments and is not one function; "
                        f"differentiate the derivative itself (sg.grad(sg.grad(f)), "
                        f"sg.jacfwd(sg.grad(f))), which is made per call too")

    def derivative(self, n_args, keywords=()):
        """The derivative for calls with ``n_args`` positional arguments and ``keywords``."""
        key = n_args if not keywords else (n_args, keywords)
        found = self.made.get(key)
        if found is None:
            found = self.made[key] = self.make(fixed_arity(self.target, n_args, keywords))
        return found


def fixed_arity(fn, n_args, keywords=()):
    """``def f(w, batch_0, batch_1, *, scale): return __srcgrad_target__(w, batch_0,
    batch_1, scale=scale)`` for ``def f(w, *batch, **options)`` called with three positional
    arguments and the keyword ``scale``: the function srcgrad differentiates for such a
    call. Its ``Bound`` says to read ``f``'s own source with those parameters, beginning
    ``batch = (batch_0, batch_1)`` and ``options = {'scale': scale}`` (parse.py)."""
    if isinstance(fn, ByArity):   # sg.grad(sg.grad(f)): the inner derivative of that arity
        return fn.derivative(n_args, keywords)
    key = (fn, n_args, tuple(keywords))
    found = _arities.get(key)
    if found is not None and found[0] == rules.VERSION[0]:
        return found[1]
    P = inspect.Parameter
    signature = inspect.signature(fn, follow_wrapped=False)   # a decorator's own (*args)
    bound = signature.bind(*range(n_args), **dict.fromkeys(keywords))   # TypeError as Python's
    outer = bound_of(fn)   # a bound method taking *args: its target and bound objects
    target, names, objects = fn, (), ()
    if outer is not None:
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        target, names = outer.target, outer.names
        objects = tuple(cells[n].cell_contents for n in names)
    code = target.__code__
    used = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars) | {
        i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    taken = set(signature.parameters) | set(keywords) | set(names) | {"__srcgrad_target__"} | used
    given_items = bool(bound.arguments.get(_vararg(signature)))
    params, call, packed = [], list(names), []
    for p in signature.parameters.values():
        if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD):
            if given_items:
                p = p.replace(default=P.empty)   # given: items of *args follow it
            params.append(p)
            call.append(p.name)
        elif p.kind is P.VAR_POSITIONAL:
            items = []
            for i in range(len(bound.arguments.get(p.name, ()))):
                name = f"{p.name}_{i}"
                while name in taken:
                    name += "_"
                taken.add(name)
                items.append(name)
                params.append(P(name, P.POSITIONAL_OR_KEYWORD))
            call.extend(items)
            packed.append((p.name, tuple(items), False))
        elif p.kind is P.KEYWORD_ONLY:
            params.append(p)
            call.append(f"{p.name}={p.name}")
        else:
            keys = tuple(bound.arguments.get(p.name, {}))
            for name in keys:
                if not name.isidentifier() or keyword.iskeyword(name):
                    raise UnsupportedError(
                        f"cannot differentiate {_describe(fn)} called with the keyword {name!r}: "
                        f"it is not a Python name", code.co_filename, code.co_firstlineno,
                        hint="Pass keywords that are Python names.")
                if name in used:   # its parameter would hide that variable or global
                    raise UnsupportedError(
                        f"cannot differentiate {_describe(fn)} called with the keyword {name!r} "
                        f"for **{p.name}: {_describe(fn)} also reads a variable {name!r}",
                        code.co_filename, code.co_firstlineno,
                        hint=f"Pass another keyword, or give {_describe(fn)} a parameter {name!r}.")
                params.append(P(name, P.KEYWORD_ONLY))
                call.append(f"{name}={name}")
            packed.append((p.name, keys, True))
    spelled, star = [], False
    for p in params:
        if p.kind is P.KEYWORD_ONLY and not star:
            spelled.append("*")
            star = True
        spelled.append(p.name)
    name = _identifier(fn.__name__)
    while name in taken:
        name += "_"
    made = _forwarder(name, spelled, call, params, target, names, objects, f"*args of {_describe(fn)}")
    made.__srcgrad_bound__ = Bound(target, names, tuple(packed))   # its own source, read so
    _arities[key] = (rules.VERSION[0], made)
    return made


def _vararg(signature):
    return next((p.name for p in signature.parameters.values() if p.kind is p.VAR_POSITIONAL), "")


class _RuleParams:
    """The parameters of a primitive with no rule (``np.floor``), as a rule would give them."""

    def __init__(self, primitive):
        P = inspect.Parameter
        nin = getattr(primitive, "nin", None)
        if isinstance(nin, int):   # a ufunc: its operands
            self.params = [P(f"x{k + 1}" if nin > 1 else "x", P.POSITIONAL_ONLY) for k in range(nin)]
        else:
            self.params = list(inspect.signature(primitive).parameters.values())


def _primitive_function(primitive, rule):
    """``def name(params): return module.name(params)`` for ``primitive``, whose
    parameters are the required ones of its rule (the primitive's own)."""
    name = _identifier(getattr(primitive, "__name__", "primitive"))
    params, call = [], []
    for p in rule.params:
        if p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD:
            raise UnsupportedError(
                f"cannot differentiate {name} itself: it takes a variable number of arguments",
                hint=f"Differentiate a function that calls it: def f(x, y): return {name}(x, y)")
        if p.default is not p.empty:
            continue   # an option: the primitive's default (a def passes others)
        if p.kind is p.KEYWORD_ONLY and "*" not in params:
            params.append("*")
        params.append(p.name)
        call.append(p.name if p.kind is not p.KEYWORD_ONLY else f"{p.name}={p.name}")
    spelled, namespace = _spelling(primitive, name)
    if name == spelled.split(".")[0]:
        name += "_"
    source = f"def {name}({', '.join(params)}):\n    return {spelled}({', '.join(call)})\n"
    filename = loader.write(source, f"primitive {spelled}")
    namespace["__name__"] = "srcgrad.entry"
    exec(compile(source, filename, "exec"), namespace)
    loader.release_with(filename, [namespace[name]])
    return namespace[name]


def _spelling(primitive, name):
    """How the one-line function names ``primitive`` (``np.sin``), and its globals."""
    module_name = getattr(primitive, "__module__", None) or ""
    module = sys.modules.get(module_name)
    qualname = getattr(primitive, "__qualname__", name)
    if module is not None:
        root = module_name.split(".")[0]
        alias = _ALIASES.get(root, root)
        path = module_name.split(".")[1:] + qualname.split(".")
        obj = sys.modules[root]
        for part in path:
            obj = getattr(obj, part, None)
        if obj is primitive:
            return ".".join([alias] + path), {alias: sys.modules[root]}
    return f"{name}_primitive", {f"{name}_primitive": primitive}


def _library_function(fn):
    """A NumPy/SciPy/... function written in Python: a primitive, like inside a function
    (transform/inline.py), never differentiated from its source."""
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    return is_library_module(module) and module != "srcgrad"


def is_library_module(module):
    """Whether functions of the top-level package ``module`` are primitives, never user
    code: the array libraries, srcgrad, and Python's standard library (the source of
    ``dataclasses.replace`` is not the user's, and a refusal inside it would name it)."""
    return module in LIBRARY_ROOTS or (module in _STDLIB and module != "__main__")


def _identifier(text):
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in str(text))
    return text if text and not text[0].isdigit() else "f_" + text


def _describe(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _refusal(fn):
    name = _describe(fn)
    if not callable(fn):
        return TypeError(f"srcgrad differentiates functions, got {fn!r}")
    if rules.is_nondifferentiable(fn):
        return NonDifferentiableError(
            f"{name} is not differentiable: srcgrad treats its result as a constant, so it "
            f"has no gradient to take",
            hint="Differentiate the function whose value you want the gradient of.")
    if inspect.isbuiltin(fn) or type(fn).__name__ == "ufunc":
        return NonDifferentiableError(
            f"cannot differentiate {name}: it is a built-in or C function "
            f"({type(fn).__name__}) with no gradient rule registered, and it has no Python "
            f"source to differentiate", hint=_RULE_HINT)
    if _library_function(fn) or inspect.isroutine(fn):
        module = (getattr(fn, "__module__", None) or "?").split(".")[0]
        return NonDifferentiableError(
            f"cannot differentiate {name}: it is a {module} function with no gradient rule "
            f"registered, and srcgrad does not differentiate library code from its source",
            hint=_RULE_HINT)
    if inspect.isclass(fn):
        return UnsupportedError(
            f"cannot differentiate the class {name}",
            hint="Differentiate a function; for a srcgrad.Function, a def that calls "
                 f"{name}.apply(...).")
    return UnsupportedError(
        f"cannot differentiate {name}: it is a callable {type(fn).__name__} object, not a function",
        hint="Differentiate a def that calls it.")
