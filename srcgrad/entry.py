"""What ``grad``, ``vjp``, ``source`` differentiate when given something other than a def.

A Python function is differentiated from its source. A primitive (a function with a
rule: ``np.sin``, ``np.multiply``, ``math.exp``, a user's ``@srcgrad.adjoint``) is
differentiated by its rule: srcgrad writes the one-line function that calls it,

    def sin(x):
        return np.sin(x)

and differentiates that, so an entry point and a call inside a function take one
path. Anything else is refused by name, saying what to write instead.
"""

import functools
import inspect
import itertools
import linecache
import sys

from srcgrad import rules
from srcgrad.errors import NonDifferentiableError, UnsupportedError
from srcgrad.transform.inline import LIBRARY_ROOTS

_wrappers = {}                 # id(primitive) -> (primitive, its one-line function)
_entries = {}                  # what was asked -> (rules.VERSION, what is differentiated)
_counter = itertools.count()
_ALIASES = {"numpy": "np", "cupy": "cp"}
_RULE_HINT = ("Register its gradient with @srcgrad.adjoint, or wrap it in a srcgrad.Function "
              "with a backward.")


def entry_function(fn):
    """The Python function srcgrad differentiates for ``fn``.

    Raises:
        NonDifferentiableError: ``fn`` has no source and no rule, or is not differentiable.
        UnsupportedError: a bound method, ``functools.partial`` or other callable object.
        TypeError: ``fn`` is not callable.
    """
    try:
        found = _entries.get(fn)
    except TypeError:   # unhashable
        found = None
    if found is not None and found[0] == rules.VERSION[0]:
        return found[1]
    rule = rules.lookup(fn)
    if rule is None and inspect.isfunction(fn) and not _library_function(fn):
        entry = fn
    elif rule is not None:
        held = _wrappers.get(id(fn))
        if held is None or held[0] is not fn:
            held = _wrappers[id(fn)] = (fn, _primitive_function(fn, rule))
        entry = held[1]
    else:
        raise _refusal(fn)
    try:
        _entries[fn] = (rules.VERSION[0], entry)
    except TypeError:
        pass
    return entry


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
    filename = f"<srcgrad primitive {spelled} #{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace["__name__"] = "srcgrad.entry"
    exec(compile(source, filename, "exec"), namespace)
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
    return module in LIBRARY_ROOTS and module != "srcgrad"


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
    if inspect.ismethod(fn):
        return UnsupportedError(
            f"cannot differentiate the bound method {name} directly (not supported yet)",
            hint=f"Differentiate a function that calls it: def f(x): return obj.{fn.__name__}(x)")
    if isinstance(fn, functools.partial):
        return UnsupportedError(
            f"cannot differentiate functools.partial({_describe(fn.func)}, ...) directly "
            f"(not supported yet)",
            hint="Differentiate a def that calls the function with the fixed arguments.")
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
