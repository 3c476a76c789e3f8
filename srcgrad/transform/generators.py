"""A generator helper, consumed whole, inlined as the list of what it yields.

    def batches(X, n):                     def batches(X, n):
        for i in range(0, len(X), n):          items = []
            yield X[i:i + n]                   for i in range(0, len(X), n):
                                                   items.append(X[i:i + n])
    for b in batches(X, 2): ...                return items

Python runs the generator lazily, between the items of the loop that reads it; the list
holds the same items whenever nothing the loop does can change what the generator
computes next and the loop reads every item. So a call of a generator function is
inlined this way only where (``consumed_whole``) its value is read once, as what one
``for`` loop runs over (a comprehension, ``sum(... for b in gen(x))``, is such a loop),
with no ``break`` or ``return`` in that loop, and neither the loop writes into an object
the call passes nor the generator into one of its parameters. Anywhere else the call is
refused at its line, naming the generator.
"""

import ast
import builtins
import inspect

import gast

from srcgrad import anno, ast_util
from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.transform.base import Base

Static = anno.Static

# Methods that change the object they are called on (a generator's parameter must not).
_MUTATING = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                       "setdefault", "popitem", "sort", "reverse", "fill", "add", "discard",
                       "resize", "put", "itemset", "__setitem__", "__delitem__"})
_READ_WHOLE = (builtins.list, builtins.tuple, builtins.sum)   # calls that read every item
_HINT = ("Loop over the whole generator in one for loop (no break), or make the helper "
         "build and return a list.")


def collect(node, ctx):
    """``node`` (a generator function's def) rewritten to return the list of its items:
    ``yield e`` appends ``e``, ``yield from it`` each item of ``it``, ``return`` returns the
    list (a generator's return value is not an item)."""
    base = Base(ctx.info)
    params = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    params |= _aliases(node, params)
    for child in ast_util.walk(node):
        written = _written_root(child)
        why = f"changes its argument {written!r} in place" if written in params else \
            _passed_to_be_written(child, params, ctx.info) \
            if isinstance(child, gast.Call) else None
        if why is not None:
            raise base.error(child, UnsupportedError,
                             f"a generator that {why.replace('the loop reading it ', '')} is "
                             f"not supported in a function srcgrad differentiates (the loop "
                             f"reading it would see the change between items)", _HINT)
    _refuse_mutable_free_names(node, base, ctx.info)
    items = ctx.namer.new("items")
    node.body = [_at(gast.Assign(targets=[name(items, store=True)], value=gast.List(
        elts=[], ctx=gast.Load()), type_comment=None), node)] + _block(node.body, items, base, ctx) \
        + [_at(gast.Return(value=name(items)), node)]
    return node


def _refuse_mutable_free_names(node, base, info):
    """A generator must compute its items from its arguments: a global or closure list,
    dict, set or array it reads could be changed by the loop between two items, which
    the list of items read first would not see."""
    own = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs} | {
        n.id for n in ast_util.walk(node) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
    for n in ast_util.walk(node):
        if not isinstance(n, gast.Name) or n.id in own:
            continue
        try:
            obj = info.resolve(n.id)
        except NameError:
            continue
        if isinstance(obj, (list, dict, set, bytearray)) or (
                hasattr(obj, "shape") and hasattr(obj, "__setitem__") and not isinstance(obj, type)):
            raise base.error(n, UnsupportedError,
                             f"a generator that reads the {type(obj).__name__} {n.id!r} of its "
                             f"module or closure is not supported in a function srcgrad "
                             f"differentiates (the loop reading it could change it between items)",
                             f"Pass {n.id!r} to the generator as an argument.")


def _block(body, items, base, ctx):
    out = []
    for stmt in body:
        if isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
            out.append(stmt)
            continue
        if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Yield):
            value = stmt.value.value or gast.Constant(value=None, kind=None)
            out.append(_at(gast.Expr(value=_append(items, value)), stmt))
            continue
        if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.YieldFrom):
            item = ctx.namer.new("item")
            out.append(_at(gast.For(target=name(item, store=True), iter=stmt.value.value,
                                    body=[_at(gast.Expr(value=_append(items, name(item))), stmt)],
                                    orelse=[], type_comment=None), stmt))
            continue
        if isinstance(stmt, gast.Return):
            out.append(_at(gast.Return(value=name(items)), stmt))
            continue
        blocks = [f for f in ("body", "orelse") if isinstance(getattr(stmt, f, None), list)]
        for field, value in gast.iter_fields(stmt):
            if field in blocks:
                continue
            for child in ast_util.walk(value) if isinstance(value, gast.AST) else ():
                if isinstance(child, (gast.Yield, gast.YieldFrom)):
                    raise base.error(child, UnsupportedError,
                                     "a yield used as a value (x = yield v, f((yield v))) is "
                                     "not supported in a generator srcgrad differentiates",
                                     "Write `yield v` as a statement of its own.")
        for field in blocks:
            setattr(stmt, field, _block(getattr(stmt, field), items, base, ctx))
        out.append(stmt)
    return out


def _append(items, value):
    return gast.Call(func=gast.Attribute(value=name(items), attr="append", ctx=gast.Load()),
                     args=[value], keywords=[])


def _at(node, where):
    for child in gast.walk(node):
        if isinstance(child, (gast.expr, gast.stmt)) and not hasattr(child, "lineno"):
            gast.copy_location(child, where)
    return node


def _written_root(node):
    """The name whose object ``node`` changes in place (``x[i] = v``, ``x.append(v)``,
    ``x += v``), else None."""
    target = None
    if isinstance(node, (gast.Assign, gast.AugAssign)):
        for t in node.targets if isinstance(node, gast.Assign) else [node.target]:
            if isinstance(t, (gast.Subscript, gast.Attribute)) or isinstance(node, gast.AugAssign):
                target = t
    elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
            and node.func.attr in _MUTATING:
        target = node.func.value
    while isinstance(target, (gast.Subscript, gast.Attribute)):
        target = target.value
    return target.id if isinstance(target, gast.Name) else None


def loop_verdict(loop, call, root, info):
    """``loop_leaves_items`` where ``call`` is a generator's (most are not: no walk);
    for another call a reason that holds should inline.py find a generator there after all."""
    obj = _resolved(call.func, info)
    if obj is None or not inspect.isgeneratorfunction(obj):
        return "its call was not known to be a generator's when the loop was read"
    return loop_leaves_items(loop, call, root, info)


def loop_leaves_items(loop, call, root, info):
    """Why the for loop ``loop`` over ``call``'s value may not read it as a list of all its
    items read first would give (None: it reads them all): canonicalize.py asks it of
    every loop over a call, which it reads as ``list(call)``. The loop must not stop early,
    nor write into an object the call passes (``root``: the function; ``info``: its
    EntityInfo, to resolve names): by name, through another
    name bound to it or a view of it, with ``out=``, or by passing it to a user function."""
    if _leaves_early(loop.body):
        return "the loop reading it may stop early (break or return)"
    passed = {a.id for a in list(call.args) + [k.value for k in call.keywords]
              if isinstance(a, gast.Name)}
    # an item may be a view of what the generator reads (yield X[i:i + n])
    passed |= {n.id for n in ast_util.walk(loop.target) if isinstance(n, gast.Name)}
    passed |= _aliases(root, passed)
    for child in (n for s in loop.body + loop.orelse for n in ast_util.walk(s)):
        written = _written_root(child)
        if written in passed:
            return f"the loop reading it changes {written!r}, which the generator reads"
        if isinstance(child, gast.Call):
            why = _passed_to_be_written(child, passed, info)
            if why is not None:
                return why
    return None


def _aliases(root, names):
    """Names that may hold an object ``names`` hold, or a view of one: bound from an
    expression reading one of them other than through a call (``z = y``, ``v = y[1:]``,
    ``t = y.T``), or holding one in a display (``pair = (y, 1)``); closed under that."""
    found = set(names)
    changed = True
    while changed:
        changed = False
        for node in ast_util.walk(root):
            if not isinstance(node, gast.Assign) or not _reads_uncalled(node.value, found):
                continue
            for target in node.targets:
                for n in ast_util.walk(target):
                    if isinstance(n, gast.Name) and n.id not in found:
                        found.add(n.id)
                        changed = True
    return found


def _reads_uncalled(value, names):
    if isinstance(value, gast.Name):
        return value.id in names
    if isinstance(value, (gast.Subscript, gast.Attribute, gast.Starred)):
        return _reads_uncalled(value.value, names)
    if isinstance(value, (gast.Tuple, gast.List)):
        return any(_reads_uncalled(e, names) for e in value.elts)
    if isinstance(value, gast.Dict):
        return any(_reads_uncalled(e, names) for e in value.values)
    if isinstance(value, gast.IfExp):
        return _reads_uncalled(value.body, names) or _reads_uncalled(value.orelse, names)
    return False


def _passed_to_be_written(call, passed, info):
    """A name of ``passed`` that ``call`` may write into: given as ``out=``, or to a user
    function (which srcgrad inlines: it may write into its arguments) or a NumPy function
    that writes into its first argument (np.copyto, np.put, np.add.at...)."""
    for k in call.keywords:
        if k.arg == "out" and _reads_uncalled(k.value, passed):
            return f"the loop reading it writes into {_root_name(k.value)!r} (out=), which " \
                   f"the generator reads"
    args = [a for a in call.args if _reads_uncalled(a, passed)]
    if not args:
        return None
    func = call.func
    text = ast.unparse(gast.gast_to_ast(func))
    if isinstance(func, gast.Attribute) and func.attr in _WRITING_FUNCTIONS:
        if call.args and call.args[0] in args:
            return f"the loop reading it writes into {_root_name(call.args[0])!r}, which the " \
                   f"generator reads"
        return None
    obj = _resolved(func, info)
    if obj is None and isinstance(func, gast.Attribute) and _local_root(func, info):
        return None   # a list's, an array's method (methods.py made a user class's calls)
    module = (getattr(obj, "__module__", None) or "").split(".")[0]
    if inspect.isgeneratorfunction(obj):
        return None   # collect refuses one that writes into its arguments
    if obj is None or module not in ("numpy", "builtins", "math", "cupy", "scipy"):
        return f"the loop reading it passes {_root_name(args[0])!r}, which the generator " \
               f"reads, to {text}, which may change it"
    return None


_WRITING_FUNCTIONS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "at",
                                "put_along_axis"})


def _root_name(value):
    while isinstance(value, (gast.Subscript, gast.Attribute, gast.Starred)):
        value = value.value
    return value.id if isinstance(value, gast.Name) else None


def _local_root(func, info):
    root = _root_name(func)
    if root is None:
        return False
    try:
        info.lookup(root)
    except NameError:
        return True
    return False


def _resolved(func, info):
    """What ``func`` denotes now, or None. Not recorded for the guard: a call that
    matters here is resolved again, recorded, where it is compiled (anf_expressions.py),
    and a local's name recorded as missing would add a check to every call."""
    path = ast_util.dotted(func)
    if path is None:
        return None
    try:
        obj = info.lookup(path[0])
        for part in path[1:]:
            obj = getattr(obj, part)
    except (NameError, AttributeError):
        return None
    return obj


def consumed_whole(root, target, loop_sequences):
    """Why the value ``target`` (the name a generator's call is bound to) is not read as
    ``collect`` needs, or None: read once, by ``list``, ``tuple`` or ``sum``: the user's, or
    the ``list`` canonicalize.py writes for a for loop that reads every item."""
    if not isinstance(target, gast.Name):
        return "its value is not bound to a name"
    reads = [n for n in ast_util.walk(root) if isinstance(n, gast.Name) and n.id == target.id
             and isinstance(n.ctx, gast.Load)]
    if len(reads) != 1:
        return "its items are not read by one for loop"
    read = reads[0]
    for stmt in ast_util.walk(root):
        if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call) \
                and len(stmt.value.args) == 1 and stmt.value.args[0] is read \
                and not stmt.value.keywords \
                and anno.getanno(stmt.value, Static.PRIMITIVE) in _READ_WHOLE:
            made = stmt.targets[0]
            if isinstance(made, gast.Name) and made.id in loop_sequences:
                return loop_sequences[made.id]
            return None
    return "its items are not read by one for loop"


def _leaves_early(body):
    for stmt in body:
        if isinstance(stmt, (gast.Break, gast.Return)):
            return True
        if isinstance(stmt, (gast.For, gast.While)):   # its own break leaves it, not ours
            if any(isinstance(n, gast.Return) for s in stmt.body + stmt.orelse
                   for n in ast_util.walk(s)) or _leaves_early(stmt.orelse):
                return True
            continue
        if isinstance(stmt, (gast.FunctionDef, gast.Lambda)):
            continue
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and _leaves_early(inner):
                return True
    return False


def refusal(origin, fn, why):
    """The refusal of a call of the generator ``fn`` whose items are not all read."""
    return origin.error(UnsupportedError,
                        f"a call of the generator {fn.__qualname__} whose value is not read whole "
                        f"by one for loop ({why}) is not supported in a function srcgrad "
                        f"differentiates", _HINT)
