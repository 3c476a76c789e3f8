"""What a class known when compiling defines, applied to its instances in a function srcgrad
differentiates (methods.bind_methods calls these; structure_parts.py makes the classes known):
properties read through their getters, ``super()`` bound to the MRO's next method, operators
as the class's methods, and the methods of what those methods return."""

import builtins
import inspect

import gast

from srcgrad import ast_util
from srcgrad.ast_util import name
from srcgrad.transform import as_array, operator_methods, plain_classes
from srcgrad.transform.structure_parts import is_builtin, has_methods, plain_dataclass, property_getter


def read_properties(node, ctx):
    """``p.scale``, a property of the class of ``p`` (known when compiling: ``ctx.classes``),
    becomes a call of its getter, ``Params.scale.fget(p)``, inlined as any method. Read as
    an attribute, its value carried no gradient to the fields it is computed from."""
    classes = ctx.classes

    class Read(gast.NodeTransformer):
        def visit_Attribute(self, read):
            self.generic_visit(read)
            cls = classes.get(read.value.id) if isinstance(read.value, gast.Name) else None
            getter = property_getter(cls, read.attr) if isinstance(read.ctx, gast.Load) else None
            if getter is None:
                return read
            owner = name(as_array.bind(ctx.namer, ctx.info, ctx.bindings, cls.__name__, cls))
            func = gast.Attribute(value=gast.Attribute(value=owner, attr=read.attr, ctx=gast.Load()),
                                  attr=getter, ctx=gast.Load())
            return gast.copy_location(gast.Call(func=func, args=[read.value], keywords=[]), read)

    node.body = [Read().visit(s) for s in node.body]
    return node


def bind_super(node, ctx):
    """``super().energy(x)`` (or ``super(Cls, self)``) in a method whose ``self`` has a class
    known when compiling becomes ``Base.energy(self, x)``, the method the MRO gives after
    the class defining this one; so a subclass's ``__call__`` extending its base's works
    as any method. (Python's super() needs the method's ``__class__`` cell, which the
    generated code has not.)"""
    classes = ctx.classes
    first = node.args.args[0].id if node.args.args and isinstance(node.args.args[0], gast.Name) else None
    for call in ast_util.walk(node):
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and isinstance(call.func.value, gast.Call)):
            continue
        sup = call.func.value
        if not (isinstance(sup.func, gast.Name) and sup.func.id == "super" and not sup.keywords):
            continue
        if not sup.args:
            spelled = ("__class__", first)
        elif len(sup.args) == 2 and all(isinstance(a, gast.Name) for a in sup.args):
            spelled = tuple(a.id for a in sup.args)
        else:
            continue
        cls = classes.get(spelled[1])
        if not has_methods(cls):
            continue
        try:
            if ctx.info.resolve("super") is not builtins.super:
                continue
            defining = ctx.info.resolve(spelled[0])
        except NameError:
            continue
        mro = cls.__mro__
        after = mro[mro.index(defining) + 1:] if defining in mro else ()
        owner = next((k for k in after if call.func.attr in vars(k)), None)
        if owner is None or not inspect.isfunction(vars(owner)[call.func.attr]):
            continue
        bound = name(as_array.bind(ctx.namer, ctx.info, ctx.bindings, owner.__name__, owner))
        call.func = gast.Attribute(value=bound, attr=call.func.attr, ctx=gast.Load())
        call.args = [name(spelled[1])] + call.args
    return node


# operator -> its method's name (operator_methods.py's table, read the other way)
_BINARY = {op: dunder.strip("_") for dunder, op in operator_methods.BINARY_DUNDERS.items()}
_UNARY = {op: dunder for dunder, op in operator_methods.UNARY_DUNDERS.items()}


def bind_operators(node, ctx):
    """Operators on an instance of a class known when compiling that defines them in Python
    (``p + q``, ``2.0 * p``, ``-p``, ``p[i]``, ``len(p)``) become calls of its methods,
    ``Vec.__add__(p, q)``, inlined as any method. (The reflected method, ``__rmul__``, is
    the one for a known instance on the right of an operand without the class.) A new
    instance built as ``type(self)(...)`` or ``self.__class__(...)`` is built by the class."""
    classes = {k: c for k, c in ctx.classes.items() if has_methods(c)}
    if not classes:
        return node
    results = {}   # id of a method call made here -> the class it returns, where certain

    def known(operand):
        if isinstance(operand, gast.Call):   # v * 3.0 + v: Vec.__mul__(v, 3.0) returns a Vec
            return results.get(id(operand))
        return classes.get(operand.id) if isinstance(operand, gast.Name) else None

    def method_call(cls, method, args, where):
        function = inspect.getattr_static(cls, method, None)
        if not inspect.isfunction(function):
            return None
        owner = name(as_array.bind(ctx.namer, ctx.info, ctx.bindings, cls.__name__, cls))
        call = gast.Call(func=gast.Attribute(value=owner, attr=method, ctx=gast.Load()),
                         args=args, keywords=[])
        found = returned_class(function, cls)
        if has_methods(found):
            results[id(call)] = found
        return gast.copy_location(call, where)

    class Operators(gast.NodeTransformer):
        def visit_BinOp(self, op):
            self.generic_visit(op)
            word = _BINARY.get(type(op.op))
            left, right = known(op.left), known(op.right)
            if word is None or (left is None and right is None):
                return op
            if left is not None:
                return method_call(left, f"__{word}__", [op.left, op.right], op) or op
            return method_call(right, f"__r{word}__", [op.right, op.left], op) or op

        def visit_UnaryOp(self, op):
            self.generic_visit(op)
            cls = known(op.operand)
            method = _UNARY.get(type(op.op))
            return (method_call(cls, method, [op.operand], op) or op) if cls and method else op

        def visit_Subscript(self, read):
            self.generic_visit(read)
            cls = known(read.value)
            if cls is None or not isinstance(read.ctx, gast.Load) or isinstance(read.slice, gast.Slice):
                return read
            return method_call(cls, "__getitem__", [read.value, read.slice], read) or read

        def visit_Call(self, call):
            self.generic_visit(call)
            func = call.func
            instance = func.args[0] if isinstance(func, gast.Call) and isinstance(func.func, gast.Name) \
                and func.func.id == "type" and len(func.args) == 1 and is_builtin(ctx, "type") else \
                func.value if isinstance(func, gast.Attribute) and func.attr == "__class__" else None
            if instance is not None and known(instance) is not None:   # type(self)(a, b): Vec(a, b)
                cls = known(instance)
                if plain_classes.made(cls):   # (built as the plain class is: plain_classes.py)
                    cls = cls.__mro__[1]
                call.func = name(as_array.bind(ctx.namer, ctx.info, ctx.bindings, cls.__name__, cls))
                return call
            if isinstance(call.func, gast.Name) and call.func.id == "len" and len(call.args) == 1 \
                    and not call.keywords and known(call.args[0]) is not None and is_builtin(ctx, "len"):
                return method_call(known(call.args[0]), "__len__", list(call.args), call) or call
            return call

    node.body = [Operators().visit(s) for s in node.body]
    return node


def bind_results(node, ctx):
    """Methods of what a method returns: ``(p + q).norm()`` and ``r = p + q; r.norm()``,
    where every ``return`` of the method called builds one class by name (``Vec(...)``,
    ``type(self)(...)``, ``self.__class__(...)``) or the call builds a plain dataclass:
    ``Vec.norm(Vec.__add__(p, q))``, and ``r`` (bound once) knows its class."""
    stores = {}
    for n in ast_util.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    params = {a.id for a in node.args.args + node.args.kwonlyargs if isinstance(a, gast.Name)}

    def made(call):
        """The class the call ``call`` returns an instance of, where that is certain."""
        if not isinstance(call, gast.Call):
            return None
        func = call.func
        if isinstance(func, gast.Name):   # Vec(a, b): a plain dataclass built by its name
            if func.id in ctx.bindings:
                obj = ctx.bindings[func.id]
            elif func.id in params or stores.get(func.id):
                return None
            else:
                try:
                    obj = ctx.info.resolve(func.id)
                except NameError:
                    return None
            return obj if plain_dataclass(obj) else None
        if not isinstance(func, gast.Attribute):
            return None
        receiver = ctx.classes.get(func.value.id) if isinstance(func.value, gast.Name) else made(func.value)
        if has_methods(receiver):   # p.scaled(2.0), (p + q).scaled(2.0): the receiver's method
            owner, first = receiver, func.value
        elif isinstance(func.value, gast.Name) and func.value.id in ctx.bindings and call.args:
            owner, first = ctx.bindings[func.value.id], call.args[0]   # Vec.__add__(p, q)
        else:
            return None
        method = inspect.getattr_static(owner, func.attr, None) if isinstance(owner, type) else None
        if not inspect.isfunction(method):
            return None
        self_class = ctx.classes.get(first.id) if isinstance(first, gast.Name) else made(first)
        found = returned_class(method, self_class or owner)
        return found if has_methods(found) else None

    class Results(gast.NodeTransformer):
        def visit_Call(self, call):
            self.generic_visit(call)
            func = call.func
            cls = made(func.value) if isinstance(func, gast.Attribute) else None
            if cls is not None and inspect.isfunction(inspect.getattr_static(cls, func.attr, None)):
                owner = name(as_array.bind(ctx.namer, ctx.info, ctx.bindings, cls.__name__, cls))
                call.func = gast.Attribute(value=owner, attr=func.attr, ctx=gast.Load())
                call.args = [func.value] + call.args
            return call

        def visit_Assign(self, assign):
            self.generic_visit(assign)
            target = assign.targets[0]
            if len(assign.targets) == 1 and isinstance(target, gast.Name) and stores.get(target.id) == 1:
                cls = made(assign.value)
                if cls is not None and target.id not in ctx.classes:
                    ctx.classes[target.id] = cls
            return assign

    node.body = [Results().visit(s) for s in node.body]
    return node


def operation_class(expr, classes):
    """The class ``expr`` certainly makes from names of known ``classes`` through operator
    methods or methods of theirs each of which returns one class (``v * 0.5 + v``,
    ``v.scaled(2.0)``), else None."""
    if isinstance(expr, gast.Name):
        return classes.get(expr.id)
    if isinstance(expr, gast.BinOp) and type(expr.op) in _BINARY:
        word = _BINARY[type(expr.op)]
        left = operation_class(expr.left, classes)
        cls, method = (left, f"__{word}__") if left is not None else (
            operation_class(expr.right, classes), f"__r{word}__")
    elif isinstance(expr, gast.UnaryOp) and type(expr.op) in _UNARY:
        cls, method = operation_class(expr.operand, classes), _UNARY[type(expr.op)]
    elif isinstance(expr, gast.Call) and isinstance(expr.func, gast.Attribute):
        cls, method = operation_class(expr.func.value, classes), expr.func.attr
    else:
        return None
    function = inspect.getattr_static(cls, method, None) if has_methods(cls) else None
    found = returned_class(function, cls) if inspect.isfunction(function) else None
    return found if has_methods(found) else None


def rebound_classes(built, stores, values):
    """Of the names ``built`` holds a class for (name -> the class one binding constructs),
    those whose every binding (``stores``: name -> its store count; ``values``: name ->
    what each assignment to it gives, the class it constructs or the expression) gives
    that class, assuming the others do (``v = Vec(x)``, then ``v = v * 0.5 + v`` in a
    loop): name -> class."""
    def made(v, known):
        return v if isinstance(v, type) else operation_class(v, known)

    known = {k: c for k, c in built.items() if stores.get(k) == len(values.get(k, ()))}
    changed = True
    while changed:   # the constructed names: assumed theirs, dropped where a binding differs
        changed = False
        for k in list(known):
            if any(made(v, known) is not known[k] for v in values[k]):
                del known[k]
                changed = True
    changed = True
    while changed:   # then the names bound only to what those make (w = v, w = v * 2.0)
        changed = False
        for k, vs in values.items():
            found = {made(v, known) for v in vs}
            if k not in known and stores.get(k) == len(vs) and len(found) == 1 and None not in found:
                known[k] = found.pop()
                changed = True
    return known


def made_by_helper(call, ctx, locals_):
    """The plain dataclass every ``return`` of the user's function that ``call`` calls builds
    by name (``c = make_cell(x)``, round thirteen: methods.built_classes), else None."""
    from srcgrad.entry import is_library_module
    from srcgrad.transform.base import lookup_dotted
    fn = lookup_dotted(call.func, ctx.info, locals_) if isinstance(call, gast.Call) else None
    if not inspect.isfunction(fn) or is_library_module((fn.__module__ or "").split(".")[0]):
        return None
    cls = returned_class(fn, None)
    if not plain_dataclass(cls):
        return None
    ctx.info.resolve_path(ast_util.dotted(call.func))   # a read the compile depends on
    return cls


def returned_class(method, self_class):
    """The class every ``return`` of ``method`` builds (``Vec(...)`` by a global name,
    ``type(self)(...)`` or ``self.__class__(...)``: ``self_class``), else None."""
    from srcgrad.errors import SrcgradError
    from srcgrad.parse import parse_function
    try:
        node, info = parse_function(method)
    except (SrcgradError, OSError, TypeError):
        return None
    self_name = node.args.args[0].id if node.args.args else None
    bound = {n.id for n in ast_util.walk(node) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
    found = set()
    for n in ast_util.walk(node):
        if isinstance(n, (gast.FunctionDef, gast.Lambda)) and n is not node:
            return None   # (a return of a nested function is not this method's)
        if not isinstance(n, gast.Return):
            continue
        value = n.value
        if not isinstance(value, gast.Call):
            return None
        func = value.func
        if isinstance(func, gast.Name) and func.id not in bound:   # (self, a parameter or local: no)
            try:
                found.add(info.lookup(func.id))
            except NameError:
                return None
        elif isinstance(func, gast.Call) and isinstance(func.func, gast.Name) and func.func.id == "type" \
                and len(func.args) == 1 and isinstance(func.args[0], gast.Name) and func.args[0].id == self_name:
            found.add(self_class)
        elif isinstance(func, gast.Attribute) and func.attr == "__class__" and isinstance(
                func.value, gast.Name) and func.value.id == self_name:
            found.add(self_class)
        else:
            return None
    return found.pop() if len(found) == 1 else None


def bound_results(node, ctx):
    """``{name: class}`` for each name ``node`` binds once, at its top level, to
    ``Cls.method(first, ...)`` (``Cls`` a class bound in the generated code, ``first`` a name
    whose class is known: ``ctx.classes`` or an earlier such name) where every return of the
    method builds one class (``returned_class``): A-normal form's temporaries of an operator
    chain, ``(a * b + a).total()``."""
    counts, out = {}, {}
    for n in ast_util.walk(node):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            counts[n.id] = counts.get(n.id, 0) + 1
    for s in node.body:
        value = getattr(s, "value", None)
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
                and counts.get(s.targets[0].id) == 1 and isinstance(value, gast.Call) and value.args
                and isinstance(value.func, gast.Attribute) and isinstance(value.func.value, gast.Name)
                and isinstance(value.args[0], gast.Name)):
            continue
        owner = ctx.bindings.get(value.func.value.id)
        first = out.get(value.args[0].id) or ctx.classes.get(value.args[0].id)
        if not isinstance(owner, type) or first is None or not issubclass(first, owner):
            continue
        method = inspect.getattr_static(owner, value.func.attr, None)
        found = returned_class(method, first) if inspect.isfunction(method) else None
        if has_methods(found):
            out[s.targets[0].id] = found
    return out
