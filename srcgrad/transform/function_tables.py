"""Tables of lambdas and local functions (``acts = {"relu": lambda v: ..., "tanh": np.tanh}``,
``fs = [lambda v, i=i: v * i for i in range(3)]``) bound once in a differentiated function.

Runs just before local_functions.py, which lifts what this leaves. Lambdas made in a list
comprehension over a static range become the list display they stand for; a table read
only as ``acts[key](...)`` becomes one local function per item, each call the call of the
item its key picks; a table that ``f`` loops over, indexes or passes to ``len`` becomes a
constant of the compile (as a global table would be), which unroll.py unrolls.
"""

import gast

from srcgrad import anno, templates
from srcgrad.ast_util import name, reads
from srcgrad.errors import UnsupportedError
from srcgrad.transform.local_functions import (_SCOPES, LocalFunction, Lifting, _own_locals,
                                               _scope_walk, _stores)
from srcgrad import ast_util

Static = anno.Static


def _function_tables(node, info, namer, bindings):
    """``acts = {"relu": lambda v: ..., "tanh": tanh}`` (or a list or tuple of them) bound
    once at the top level of ``f``, and read only as ``acts[key](...)``: each item becomes a
    local function of its own, ``acts["relu"](x)`` a call of it, and ``acts[name](x)`` with a
    key known only when ``f`` runs the call of the item it picks (``a(x) if name == "relu"
    else b(x) if ...``, a key found nowhere raising KeyError or IndexError as Python does).
    Any other read of ``acts`` leaves it alone (its lambdas are then refused as escaping)."""
    from srcgrad import runtime
    counts = _stores(node)
    named = {n.name for n in node.body if isinstance(n, gast.FunctionDef)} | {
        s.targets[0].id for s in node.body if isinstance(s, gast.Assign) and len(s.targets) == 1
        and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Lambda)}
    parents = {c: n for n in _scope_walk(node) for c in gast.iter_child_nodes(n)}
    new_body = []
    for stmt in node.body:
        table = _table_of(stmt, counts, named)
        if table is None:
            new_body.append(stmt)
            continue
        target, keys, items = table
        uses = [n for n in _scope_walk(node) if isinstance(n, gast.Name) and n.id == target
                and isinstance(n.ctx, gast.Load)]
        calls = []
        for n in uses:
            sub = parents.get(n)
            call = parents.get(sub)
            if not (isinstance(sub, gast.Subscript) and sub.value is n and isinstance(call, gast.Call)
                    and call.func is sub):
                calls = None
                break
            calls.append((sub, call))
        if calls is None:
            constant = _constant_table(node, stmt, target, keys, items, uses, parents, info, namer,
                                       bindings)
            new_body.append(stmt if constant is None else constant)
            continue
        names = []
        for k, item in zip(keys, items):
            if not isinstance(item, gast.Lambda):   # a local function, or a global one
                names.append(item)
                continue
            fn_name = namer.new(f"{target}_{k if isinstance(k, str) and k.isidentifier() else 'item'}")
            assign = gast.Assign(targets=[name(fn_name, True)], value=item, type_comment=None)
            gast.copy_location(assign, stmt)
            anno.copyanno(stmt, assign, Static.ORIGIN)
            new_body.append(assign)
            names.append(name(fn_name))
        sequence = not isinstance(stmt.value, gast.Dict)
        for sub, call in calls:
            key = sub.slice
            if isinstance(key, gast.Constant) or (isinstance(key, gast.UnaryOp) and isinstance(
                    key.operand, gast.Constant) and isinstance(key.op, gast.USub)):
                value = key.value if isinstance(key, gast.Constant) else -key.operand.value
                if sequence and isinstance(value, int) and -len(names) <= value < len(names):
                    call.func = templates.clone(names[value])
                    continue
                if not sequence and value in keys:
                    call.func = templates.clone(names[keys.index(value)])
                    continue
            if not isinstance(key, (gast.Name, gast.Constant)):
                continue   # left as it is: the lambdas are refused as escaping
            missing = gast.Call(func=name(_bound(info, bindings, namer, runtime.missing_item)),
                                args=[gast.Constant(value=len(keys) if sequence else tuple(keys), kind=None),
                                      name(key.id) if isinstance(key, gast.Name) else key],
                                keywords=[])
            choice = missing
            for k, fn_name in reversed(list(zip(keys, names))):
                picks = [gast.Constant(value=k, kind=None)]
                if sequence:
                    picks.append(gast.Constant(value=k - len(keys), kind=None))
                test = gast.Compare(left=name(key.id) if isinstance(key, gast.Name) else key,
                                    ops=[gast.In()], comparators=[gast.Tuple(elts=picks, ctx=gast.Load())])
                branch = gast.Call(func=templates.clone(fn_name), args=[templates.clone(a) for a in call.args],
                                   keywords=[templates.clone(k_) for k_ in call.keywords])
                choice = gast.IfExp(test=test, body=branch, orelse=choice)
            call.func, call.args, call.keywords = choice, [], []
    node.body = new_body
    _inline_calls_of_choices(node)


_ITERATING = ("enumerate", "zip", "reversed", "len")


def _constant_table(node, stmt, target, keys, items, uses, parents, info, namer, bindings):
    """``fs = [lambda v: v * 2, np.sin]`` (a list, tuple or dict of lambdas and global
    functions) that ``f`` iterates (``for fn in fs``, ``enumerate(fs)``, ``zip``,
    ``fs.items()``, a comprehension) or indexes, its lambdas reading no variable of ``f``:
    a constant of the compile, as a global table would be (its lambdas LocalFunctions),
    so that unroll.py writes one copy of a loop over it per item, and calls of
    ``fs[i](x)`` pick the item ``i`` names. Returns the statement that replaces ``stmt``
    (None: left alone, its lambdas then refused as escaping)."""
    outer = set(_stores(node)) | {a.id for a in node.args.posonlyargs + node.args.args
                                  + node.args.kwonlyargs}
    for n in uses:
        parent = parents.get(n)
        if isinstance(parent, gast.Subscript) and parent.value is n and isinstance(parent.ctx, gast.Load):
            continue
        if isinstance(parent, (gast.For, gast.comprehension)) and parent.iter is n:
            continue
        if isinstance(parent, gast.Call) and n in parent.args and isinstance(parent.func, gast.Name) \
                and parent.func.id in _ITERATING and parent.func.id not in outer \
                and _builtin(info, parent.func.id):
            continue
        if isinstance(parent, gast.Attribute) and parent.attr in ("items", "values", "keys") \
                and isinstance(parents.get(parent), gast.Call) and parents[parent].func is parent \
                and not parents[parent].args:
            continue
        return None
    lifting = Lifting(node, info, namer, bindings)
    values = []
    for item in items:
        if isinstance(item, gast.Lambda):
            fn = lifting.lambda_def(templates.clone(item), "<lambda>", stmt)
            free = sorted((reads(fn) & outer) - _own_locals(fn))
            if free:   # only a call written fs[k](...) passes a variable of f to it
                raise lifting.error(item, f"a lambda of the table `{target}`, which the function "
                                          f"loops over or reads as a value, reads the function's "
                                          f"variable {free[0]!r}",
                                    f"Pass it as an argument (`lambda v, {free[0]}: ...`, called "
                                    f"as `fn(x, {free[0]})`), or call the items as "
                                    f"`{target}[k](...)` only.")
            lifting.check_defaults(fn, stmt)
            values.append(LocalFunction(fn, info, "<lambda>", f"{info.name}.<locals>.<lambda>"))
            continue
        path, part = [], item
        while isinstance(part, gast.Attribute):
            path.append(part.attr)
            part = part.value
        if not isinstance(part, gast.Name) or part.id in outer:
            return None   # a nested def (its free locals are passed at each call)
        try:
            values.append(info.resolve_path((part.id,) + tuple(reversed(path))))
        except (NameError, AttributeError):
            return None
    table = dict(zip(keys, values)) if isinstance(stmt.value, gast.Dict) else tuple(values)
    table_name = namer.new(f"{target}_table")
    info.extra[table_name] = bindings[table_name] = table
    assign = gast.Assign(targets=[name(target, True)], value=name(table_name), type_comment=None)
    gast.copy_location(assign, stmt)
    anno.copyanno(stmt, assign, Static.ORIGIN)
    for n in uses:
        n.id = table_name
    return assign


def _builtin(info, ident):
    import builtins
    try:
        return info.lookup(ident) is getattr(builtins, ident)
    except NameError:
        return False


def _unrolled_lambda_comprehensions(node, info):
    """``fs = [lambda v, i=i: v * i for i in range(3)]`` at the top level of ``f``, over a
    ``range`` of constants or a display of literals: the list display of one lambda per
    item, each default that reads the comprehension's variable that item
    (``[lambda v, i=0: v * i, lambda v, i=1: v * i, ...]``), which _function_tables then
    reads as any table of lambdas. A lambda whose body reads the variable itself (not
    through a default) is refused: Python's lambdas all see its last value there."""
    for stmt in node.body:
        comp = stmt.value if isinstance(stmt, gast.Assign) else None
        if not (isinstance(comp, gast.ListComp) and isinstance(comp.elt, gast.Lambda)
                and len(comp.generators) == 1 and not comp.generators[0].ifs
                and isinstance(comp.generators[0].target, gast.Name)):
            continue
        gen, lam = comp.generators[0], comp.elt
        values = _literal_items(gen.iter, info)
        if values is None or len(values) > 256:
            continue
        var = gen.target.id
        own = {a.id for a in lam.args.posonlyargs + lam.args.args + lam.args.kwonlyargs}
        if var not in own and any(isinstance(n, gast.Name) and n.id == var for n in gast.walk(lam.body)):
            origin = anno.getanno(stmt, Static.ORIGIN) or info.origin(lam)
            message = (f"a lambda made in a comprehension that reads its variable `{var}` "
                       f"in its body (Python's lambdas all see the last value of `{var}`)")
            hint = f"Bind the value as a default: `lambda v, {var}={var}: ...`."
            if origin is None:
                raise UnsupportedError(message, info.filename, hint=hint)
            raise origin.error(UnsupportedError, message, hint)
        copies = []
        for value in values:
            copy = templates.clone(lam)
            for d in list(copy.args.defaults) + [d for d in copy.args.kw_defaults if d is not None]:
                for n in list(gast.walk(d)):
                    for field, child in gast.iter_fields(n):
                        if isinstance(child, gast.Name) and child.id == var:
                            setattr(n, field, gast.Constant(value=value, kind=None))
            copy.args.defaults = [gast.Constant(value=value, kind=None)
                                  if isinstance(d, gast.Name) and d.id == var else d
                                  for d in copy.args.defaults]
            copy.args.kw_defaults = [gast.Constant(value=value, kind=None)
                                     if isinstance(d, gast.Name) and d.id == var else d
                                     for d in copy.args.kw_defaults]
            copies.append(copy)
        stmt.value = gast.copy_location(gast.List(elts=copies, ctx=gast.Load()), comp)


def _literal_items(it, info):
    """The values ``range(<int literals>)`` or a list/tuple display of literals gives, or None."""
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range" \
            and not it.keywords and 1 <= len(it.args) <= 3 and _builtin(info, "range"):
        try:
            bounds = [gast.literal_eval(a) for a in it.args]
        except (ValueError, TypeError, SyntaxError):
            return None
        if not all(type(b) is int for b in bounds):
            return None
        return list(range(*bounds))
    if isinstance(it, (gast.List, gast.Tuple)):
        try:
            values = [gast.literal_eval(e) for e in it.elts]
        except (ValueError, TypeError, SyntaxError):
            return None
        if all(templates.is_literal(v) for v in values):
            return values
    return None


def _inline_calls_of_choices(node):
    """``(a(x) if c else b(x))()`` made above: the choice itself stands for the call."""
    class Unwrap(gast.NodeTransformer):
        def visit_Call(self, call):
            self.generic_visit(call)
            if isinstance(call.func, gast.IfExp) and not call.args and not call.keywords:
                return call.func
            return call
    Unwrap().visit(node)


def _bound(info, bindings, namer, obj):
    for bound_name, bound in bindings.items():
        if bound is obj:
            return bound_name
    bound_name = namer.new(obj.__name__)
    info.extra[bound_name] = bindings[bound_name] = obj
    return bound_name


def _table_of(stmt, counts, named):
    """``(target, keys, items)`` when ``stmt`` binds a name once to a dict with constant
    keys, or a list or tuple, of lambdas and local functions; else None."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name) and counts.get(stmt.targets[0].id) == 1):
        return None
    value = stmt.value
    if isinstance(value, gast.Dict):
        if not value.keys or any(not isinstance(k, gast.Constant) for k in value.keys):
            return None
        keys, items = [k.value for k in value.keys], list(value.values)
        if len(set(keys)) != len(keys):
            return None
    elif isinstance(value, (gast.List, gast.Tuple)) and value.elts:
        keys, items = list(range(len(value.elts))), list(value.elts)
    else:
        return None
    def known(item):   # a lambda, a local function, or a function of the globals
        root = item
        while isinstance(root, gast.Attribute):
            root = root.value
        return isinstance(item, gast.Lambda) or (isinstance(item, gast.Name) and item.id in named) or (
            isinstance(root, gast.Name) and root.id not in counts)
    if not all(known(i) for i in items):
        return None
    if not any(isinstance(i, gast.Lambda) for i in items):
        return None
    return stmt.targets[0].id, keys, items


def transform(node, ctx, census=None):
    """Rewrite the tables of lambdas of FunctionDef ``node`` (see the module docstring).
    ``census``: an ``ast_walks.Census`` of ``node``, told of a change."""
    if not (any(n is not node for cls in _SCOPES for n in census.of(cls)) if census is not None
            else any(isinstance(n, _SCOPES) for n in ast_util.walk(node) if n is not node)):
        return node
    if census is not None:
        census.changed()
    _unrolled_lambda_comprehensions(node, ctx.info)
    _function_tables(node, ctx.info, ctx.namer, ctx.bindings)
    return node
