"""An instance of a plain class built inside a differentiated function (PyTorch users'
``model = MLP(params)`` whose ``__init__`` stores attributes: ``self.W1 = params["W1"]``).

When ``__init__`` (and each base's ``__init__`` it calls through ``super().__init__(...)``
or ``Base.__init__(self, ...)``) only stores expressions of its parameters as attributes,
``MLP(p)`` is built as a dataclass: a subclass of ``MLP`` made once per class, whose
fields are the attributes ``__init__`` stores, in its order, and whose ``__init__`` is the
one ``@dataclass`` writes; methods.py builds it as any dataclass (``rt.dataclass_new``),
with each field's expression, the arguments put for the parameters. The instance is an
``MLP`` (its methods, ``super()`` and ``isinstance`` as before) and a structure whose
fields carry gradients, as a dataclass built in the function does; a class with no
``__init__`` anywhere (``act = ReLU()``, no state) the same, with no fields. Anything else in
``__init__`` (a branch, a call kept for its effect, a read of ``self``), an argument with a
call that two fields read (Python computes it once), and a function or class whose code
asks an object its class (``type(m)``, ``m.__class__``: it would see the subclass; not
``type(self)(...)``, which builds one) leave the call alone: it stays refused where it
needs a gradient. A helper inlined into a function that built one, asking a class, is
refused at its line (inline.py).
"""

import abc
import dataclasses
import inspect
import re
import textwrap
import weakref

import gast

from srcgrad import ast_util, caches, templates
from srcgrad.errors import UnsupportedError
from srcgrad.transform import as_array

_subclasses = caches.LRU()   # class -> (its __init__s, field names, the dataclass made)
_made = weakref.WeakSet()   # those dataclasses


def made(obj):
    """Whether ``obj`` is a dataclass made here for a plain class."""
    return isinstance(obj, type) and obj in _made


def refuse_asking(fn, origin):
    """Refuse inlining ``fn`` where its code may ask an object its class (``asks_a_type``)
    into a function that built a plain class's instance as its dataclass subclass."""
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        return
    if asks_a_type(text):
        raise origin.error(UnsupportedError, f"{fn.__qualname__} may ask an object its class "
                           f"(type(...) or __class__), and the function differentiated builds "
                           f"an instance of a plain class, which srcgrad builds as a dataclass "
                           f"subclass of it: the class asked would be that subclass",
                           "Make the class a dataclass (@dataclass), or test it with isinstance(...).")


def plain(cls):
    """A class of Python code with an ``__init__`` written in Python (or none), single inheritance,
    no ``__new__``, ``__slots__``, ``__post_init__`` or metaclass: what a subclass dataclass
    can stand for."""
    if not isinstance(cls, type) or type(cls) not in (type, abc.ABCMeta) or dataclasses.is_dataclass(cls):
        return False
    for klass in cls.__mro__[:-1]:
        if klass is abc.ABC:   # (its empty __slots__ keeps no state)
            continue
        if len(klass.__bases__) != 1 or klass.__module__ == "builtins" or any(
                n in vars(klass) for n in ("__slots__", "__new__", "__post_init__")):
            return False
    init = cls.__init__
    if init is object.__init__:   # no state: not srcgrad's own (sg.no_grad()) nor a context manager
        return not cls.__module__.startswith("srcgrad") and not hasattr(cls, "__enter__")
    return inspect.isfunction(init)


def _owner(cls):
    """The class of ``cls``'s MRO whose own ``__init__`` it runs."""
    return next(k for k in cls.__mro__ if "__init__" in vars(k))


def _init_tree(init):
    try:
        source = textwrap.dedent(inspect.getsource(init))
    except (OSError, TypeError):
        return None
    tree = gast.parse(source).body[0]
    return tree if isinstance(tree, gast.FunctionDef) and not tree.decorator_list else None


def _fields(cls, bound, fields, uses, owners):
    """Add to ``fields`` (name -> expression) what the ``__init__`` of ``cls`` (the class
    defining it) stores on ``self`` with its parameters bound to the expressions ``bound``
    (name -> node; ``uses`` counts the copies of each; ``owners`` gets each class whose
    ``__init__`` it reads); False where it does anything else."""
    tree = _init_tree(cls.__init__)
    if tree is None:
        return False
    owners.append(cls)
    args = tree.args
    if args.vararg is not None or args.kwarg is not None or args.kwonlyargs or args.posonlyargs \
            or not args.args:
        return False
    me = args.args[0].id
    params = [a.id for a in args.args[1:]]
    defaults = dict(zip(params[len(params) - len(args.defaults):], args.defaults))
    env = {}
    for p in params:
        if p in bound:
            env[p] = bound[p]
        elif p in defaults and isinstance(defaults[p], gast.Constant):
            env[p] = defaults[p]
        else:
            return False
    body = tree.body
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant):
        body = body[1:]   # the docstring
    for stmt in body:
        stores = _attribute_stores(stmt, me)
        if stores is not None:
            for attr, expr in stores:
                value = _substituted(expr, env, me, uses)
                if value is None:
                    return False
                fields.pop(attr, None)
                fields[attr] = value
            continue
        base_call = _base_init(stmt, cls, me)
        if base_call is None:
            return False
        base, call_args = base_call
        if base.__init__ is object.__init__:
            if call_args:
                return False
            continue
        base = _owner(base)
        if not inspect.isfunction(base.__init__):
            return False
        names = [a for a in inspect.signature(base.__init__).parameters][1:]
        if len(call_args) > len(names):
            return False
        given = {}
        for n, a in zip(names, call_args):
            if isinstance(a, gast.Name) and a.id in env:
                given[n] = env[a.id]   # the same node: its copies are counted as one argument's
                continue
            value = _substituted(a, env, me)
            if value is None or not repeat_safe(value):
                return False
            given[n] = value
        if not _fields(base, given, fields, uses, owners):
            return False
    return True


def _attribute_stores(stmt, me):
    """``[(attribute, expression)]`` of ``self.a = v``, ``self.a: T = v`` or ``self.a, self.b
    = u, v`` (the values read no ``self``, so storing them in order is Python's order);
    None for any other statement."""
    def on_me(target):
        return isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name) \
            and target.value.id == me
    if isinstance(stmt, gast.AnnAssign) and stmt.value is not None and on_me(stmt.target):
        return [(stmt.target.attr, stmt.value)]
    if not isinstance(stmt, gast.Assign) or len(stmt.targets) != 1:
        return None
    target = stmt.targets[0]
    if on_me(target):
        return [(target.attr, stmt.value)]
    if isinstance(target, gast.Tuple) and isinstance(stmt.value, gast.Tuple) \
            and len(target.elts) == len(stmt.value.elts) and all(map(on_me, target.elts)) \
            and not any(isinstance(v, gast.Starred) for v in stmt.value.elts):
        return [(t.attr, v) for t, v in zip(target.elts, stmt.value.elts)]
    return None


def _base_init(stmt, cls, me):
    """``(base, argument nodes)`` of ``super().__init__(...)`` (the next class of ``cls``'s
    MRO with an ``__init__``) or ``Base.__init__(self, ...)``; else None."""
    if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)
            and isinstance(stmt.value.func, gast.Attribute) and stmt.value.func.attr == "__init__"
            and not stmt.value.keywords):
        return None
    call, receiver = stmt.value, stmt.value.func.value
    if isinstance(receiver, gast.Call) and isinstance(receiver.func, gast.Name) \
            and receiver.func.id == "super" and not receiver.args:
        mro = cls.__mro__
        return mro[1], list(call.args)
    if isinstance(receiver, gast.Name) and call.args and isinstance(call.args[0], gast.Name) \
            and call.args[0].id == me:
        base = next((b for b in cls.__mro__[1:] if b.__name__ == receiver.id), None)
        return (base, list(call.args[1:])) if base is not None else None
    return None


def _substituted(expr, env, me, uses=None):
    """``expr`` with the parameters of ``env`` replaced by their expressions (counted in
    ``uses``: id of the expression -> its copies); None where it reads ``self`` or holds
    a scope of its own (a lambda, a comprehension) or a walrus."""
    expr = templates.clone(expr)
    for n in gast.walk(expr):
        if isinstance(n, (gast.Lambda, gast.NamedExpr, gast.ListComp, gast.SetComp, gast.DictComp,
                          gast.GeneratorExp, gast.Await, gast.Yield, gast.YieldFrom)):
            return None
        if isinstance(n, gast.Name) and n.id == me:
            return None

    class Put(gast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in env and isinstance(node.ctx, gast.Load):
                if uses is not None:
                    uses[id(env[node.id])] = uses.get(id(env[node.id]), 0) + 1
                return templates.clone(env[node.id])
            return node
    return Put().visit(expr)


def repeat_safe(node):
    """An argument its parameter may be read for more than once: names, constants and
    operators on them, no call (computed again, it gives the same value)."""
    return all(isinstance(n, (gast.Name, gast.Constant, gast.Attribute, gast.Subscript, gast.BinOp,
                              gast.UnaryOp, gast.Load, gast.operator, gast.unaryop, gast.Slice,
                              gast.Tuple))
               for n in gast.walk(node))


# ``type(self)(...)``, ``self.__class__(...)``: a new instance, built by the class itself
# (class_methods.bind_operators), not a question about the class.
_BUILDS = re.compile(r"type\(\s*self\s*\)\s*\(|self\.__class__\s*\(")
_ASKS = re.compile(r"(?<![\w.])type\s*\(|__class__")   # (not x.astype(, not dtype()


def asks_a_type(text):
    """Whether source ``text`` may ask an object its class (``type(m) is MLP``,
    ``m.__class__``), which would see the subclass; building one (``_BUILDS``) does not."""
    text = _BUILDS.sub("", text)
    return _ASKS.search(text) is not None


def _asks_its_type(cls, info):
    """Whether the function (``info``'s) or the class and its bases (their bodies: its
    methods) may ask an object its class. Helpers the function or the methods call are
    checked as they are inlined (inline.py, ``asks_a_type``); the rest of their modules
    (a ``print(type(v))`` in ``main``) is not code srcgrad runs."""
    try:
        texts = [inspect.getsource(info.fn)]
    except (OSError, TypeError):
        texts = list(info.source_lines)
    for klass in cls.__mro__[:-1]:
        if klass is abc.ABC:
            continue
        try:
            texts.append(inspect.getsource(klass))
        except (OSError, TypeError):
            return True
    return any(asks_a_type(t) for t in texts)


def _record_inits(node, cls, owners, info):
    """Record the ``__init__`` of ``cls`` and of each base ``owners`` ran as reads the
    compile depends on (guard.py: replacing one compiles anew), each through a name the
    function's globals give it; False where a base has none."""
    path = ast_util.dotted(node.func)
    for owner in owners:
        if owner is _owner(cls):
            info.resolve_path(path + ("__init__",))
            continue
        try:
            if info.lookup(owner.__name__) is not owner:
                return False
        except NameError:
            return False
        info.resolve_path((owner.__name__, "__init__"))
    return True


def arguments(made, desugar):
    """The arguments of ``rt.dataclass_new`` that build ``made`` (construction's answer):
    the subclass bound in the generated code, its field names, their expressions."""
    subclass, fields, items = made
    bound = as_array.bind(desugar.namer, desugar.info, desugar.bindings, f"{subclass.__name__}_fields",
                          subclass)
    return (ast_util.name(bound), gast.Constant(value=fields, kind=None), gast.List(elts=items, ctx=gast.Load()))


def construction(node, cls, info):
    """``(subclass, field names, field expressions)`` that build ``cls(...)`` (the call
    ``node``, in the function of EntityInfo ``info``) as a dataclass, or None (see the
    module docstring)."""
    if not plain(cls) or any(isinstance(a, gast.Starred) for a in node.args) \
            or any(k.arg is None for k in node.keywords) or ast_util.dotted(node.func) is None \
            or _asks_its_type(cls, info):
        return None
    try:
        bound = inspect.signature(cls.__init__).bind(None, *node.args,
                                                      **{k.arg: k.value for k in node.keywords})
    except TypeError:
        return None   # Python's TypeError, when it runs
    arguments = dict(list(bound.arguments.items())[1:])
    fields, uses, owners = {}, {}, []
    if cls.__init__ is not object.__init__ \
            and not _fields(_owner(cls), arguments, fields, uses, owners):
        return None
    if any(uses.get(id(a), 0) != 1 and not repeat_safe(a) for a in arguments.values()):
        return None   # an argument evaluated other than once: Python evaluates it once
    if not _record_inits(node, cls, owners, info):
        return None
    inits = tuple(k.__init__ for k in cls.__mro__)
    found = _subclasses.get(cls)
    if found is None or found[0] != inits or found[1] != tuple(fields):
        try:   # (keyword-only: a class attribute of the same name is no default's order)
            made = dataclasses.make_dataclass(
                cls.__name__, list(fields), bases=(cls,), eq=False, repr=False, kw_only=True,
                namespace={"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                           "__doc__": cls.__doc__})
        except (TypeError, ValueError):
            return None
        found = _subclasses[cls] = (inits, tuple(fields), made)
        _made.add(made)
    return found[2], tuple(fields), list(fields.values())
