"""Call forms transform/methods.py settles, kept apart from its rewrites: the order in
which a statement evaluates its parts (what ``Desugar.hoist`` may move first),
``functools.partial`` bound once, ``g(*args)`` spelled out or bound into ``g``'s ``*vs``,
which local names always hold a list or a dict, and ``for k in d`` over a dict.
Each function takes the ``methods.Desugar`` of the function rewritten (``desugar``) where
it needs names, bindings or lookups."""

import builtins
import functools
import inspect
import sys

import gast

from srcgrad import ast_util, templates
from srcgrad.ast_util import name
from srcgrad.transform.base import lookup_dotted


def _const(value):
    return gast.Constant(value=value, kind=None)


_RETURNING = {"pop", "setdefault"}   # the _METHODS that change their receiver and return a value
_DEFERRED = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _returning_method(node, locals_):
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
        and isinstance(node.func.value, gast.Name) and node.func.value.id in locals_ \
        and node.func.attr in _RETURNING


def _evaluation_order(node, order, deferred):
    """Append the nodes of the expression ``node`` that Python evaluates every time, in the
    order it finishes them (operands before the operation, left to right), to ``order``; the
    parts evaluated only sometimes, or later, to ``deferred``."""
    if isinstance(node, _DEFERRED):
        deferred.append(node)
        return
    if isinstance(node, gast.IfExp):
        _evaluation_order(node.test, order, deferred)
        deferred.extend([node.body, node.orelse])
        order.append(node)
        return
    if isinstance(node, gast.BoolOp):
        _evaluation_order(node.values[0], order, deferred)
        deferred.extend(node.values[1:])
        order.append(node)
        return
    if isinstance(node, gast.Dict):
        for k, v in zip(node.keys, node.values):
            if k is not None:
                _evaluation_order(k, order, deferred)
            _evaluation_order(v, order, deferred)
        order.append(node)
        return
    for child in gast.iter_child_nodes(node):
        if isinstance(child, (gast.expr_context, gast.operator, gast.unaryop, gast.cmpop, gast.boolop)):
            continue
        _evaluation_order(child, order, deferred)
    order.append(node)


def _clone_replacing(call, replaced):
    """A copy of ``call`` in which the calls already hoisted (``replaced``: id -> name) are
    read from their names."""
    copy = templates.clone(call)
    originals = [n for n in gast.walk(call)]
    copies = [n for n in gast.walk(copy)]
    mapping = {id(c): replaced[id(o)] for o, c in zip(originals, copies) if id(o) in replaced}
    _replace_in(copy, mapping)
    return copy


def _replace_in(node, replaced):
    """Replace, in place, each child of ``node`` whose id is in ``replaced`` by a read of
    the name it maps to."""
    for parent in gast.walk(node):
        for field, value in gast.iter_fields(parent):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if id(item) in replaced:
                        value[i] = name(replaced[id(item)])
            elif id(value) in replaced:
                setattr(parent, field, name(replaced[id(value)]))


def _partials(node, desugar, scan=None):
    """``h = functools.partial(g, a, k=v)`` bound once at the top level of ``f``, ``h`` read
    only as ``h(...)`` calls, ``g`` a function known when compiling (not a local variable):
    the partial's arguments are bound to names of their own where it was made (their values
    then, as the partial keeps them), and each ``h(x, k=w)`` is the call ``g(a_, x, k=w)``
    (the call's keywords replacing the partial's, as ``functools.partial`` does).
    ``scan``: a ``Scan`` of ``node`` as it is."""
    counts = (scan or Scan(node)).stored
    local_functions = {s.name for s in node.body if isinstance(s, gast.FunctionDef)} | {
        s.targets[0].id for s in node.body if isinstance(s, gast.Assign) and len(s.targets) == 1
        and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Lambda)}
    parents = None   # made at the first partial (most functions have none)
    body = []
    for stmt in node.body:
        call = stmt.value if isinstance(stmt, gast.Assign) else None
        if not (isinstance(call, gast.Call) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
                and counts.get(stmt.targets[0].id) == 1 and call.args
                and _resolves_path(desugar, call.func, lambda obj: obj is functools.partial) is not None
                and not any(isinstance(a, gast.Starred) for a in call.args)
                and all(k.arg is not None for k in call.keywords)):
            body.append(stmt)
            continue
        target, g = stmt.targets[0].id, call.args[0]
        lifted = None
        if isinstance(g, gast.Lambda):   # partial(lambda v, s: v * s, s=3.0): the lambda named first
            lifted = desugar.stmt(stmt, desugar.namer.new(f"{target}_fn"), g)
            g = name(lifted.targets[0].id)
        root = g
        while isinstance(root, gast.Attribute):
            root = root.value
        known = lifted is not None or isinstance(root, gast.Name) and (root.id not in desugar.locals or (
            root.id in local_functions and root is g))
        if parents is None:
            parents = {c: n for n in gast.walk(node) for c in gast.iter_child_nodes(n)}
        uses = [n for n in gast.walk(node) if isinstance(n, gast.Name) and n.id == target
                and isinstance(n.ctx, gast.Load)]
        if not known or not all(isinstance(parents.get(n), gast.Call) and parents[n].func is n
                                and not any(isinstance(a, gast.Starred) for a in parents[n].args)
                                and all(k.arg is not None for k in parents[n].keywords) for n in uses):
            body.append(stmt)
            continue
        if lifted is not None:
            body.append(lifted)
        bound = []
        for k, value in [(None, a) for a in call.args[1:]] + [(kw.arg, kw.value) for kw in call.keywords]:
            if isinstance(value, gast.Constant):
                bound.append((k, value))
                continue
            temp = desugar.namer.new(f"{target}_{k or 'arg'}")
            body.append(desugar.stmt(stmt, temp, value))
            bound.append((k, name(temp)))
        for n in uses:
            use = parents[n]
            given = {kw.arg for kw in use.keywords}
            use.func = templates.clone(g)
            use.args = [templates.clone(v) for k, v in bound if k is None] + use.args
            use.keywords = [gast.keyword(arg=k, value=templates.clone(v)) for k, v in bound
                            if k is not None and k not in given] + use.keywords
    node.body = body


def _star_calls(node):
    """``g(*args)`` and ``g(**kw)`` where ``args`` is bound once in ``f``, to a tuple display,
    or to a list display that ``f`` only indexes, ``len``s or unpacks (so its length is that
    of the display), and ``kw`` once to a dict display with string keys that ``f`` only reads
    by key or unpacks: ``g(args[0], args[1])`` and ``g(a=kw["a"])``, calls srcgrad binds
    to ``g``'s parameters as any other."""
    counts, displays = {}, {}
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            counts[n.id] = counts.get(n.id, 0) + 1
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name):
            displays[n.targets[0].id] = n.value
    parents = {c: n for n in gast.walk(node) for c in gast.iter_child_nodes(n)}

    def length(ident):
        value = displays.get(ident)
        if counts.get(ident) != 1 or not isinstance(value, (gast.Tuple, gast.List)) \
                or any(isinstance(e, gast.Starred) for e in value.elts):
            return None
        if isinstance(value, gast.List):
            for n in gast.walk(node):
                if isinstance(n, gast.Name) and n.id == ident and isinstance(n.ctx, gast.Load):
                    parent = parents.get(n)
                    if isinstance(parent, gast.Starred) or (
                            isinstance(parent, gast.Subscript) and parent.value is n
                            and isinstance(parent.ctx, gast.Load)) or (
                            isinstance(parent, gast.Call) and isinstance(parent.func, gast.Name)
                            and parent.func.id == "len") or isinstance(parent, gast.For):
                        continue
                    return None
        return len(value.elts)

    def keys(ident):
        value = displays.get(ident)
        if counts.get(ident) != 1 or not isinstance(value, gast.Dict) or not all(
                isinstance(k, gast.Constant) and isinstance(k.value, str) for k in value.keys):
            return None
        for n in gast.walk(node):
            if isinstance(n, gast.Name) and n.id == ident and isinstance(n.ctx, gast.Load):
                parent = parents.get(n)
                if isinstance(parent, gast.keyword) and parent.arg is None or (
                        isinstance(parent, gast.Subscript) and parent.value is n
                        and isinstance(parent.ctx, gast.Load)):
                    continue
                return None
        return [k.value for k in value.keys]

    calls = [n for n in gast.walk(node) if isinstance(n, gast.Call)]
    # decided before any call is rewritten (the reads it adds are not in ``parents``)
    lengths = {a.value.id: length(a.value.id) for c in calls for a in c.args
               if isinstance(a, gast.Starred) and isinstance(a.value, gast.Name)}
    known_keys = {k.value.id: keys(k.value.id) for c in calls for k in c.keywords
                  if k.arg is None and isinstance(k.value, gast.Name)}
    length, keys = lengths.get, known_keys.get
    for call in calls:
        args = []
        for a in call.args:
            if isinstance(a, gast.Starred) and isinstance(a.value, (gast.List, gast.Tuple)) \
                    and not any(isinstance(e, gast.Starred) for e in a.value.elts):
                args += a.value.elts   # zip(*[a, b]): the display's items, one by one
                continue
            n = length(a.value.id) if isinstance(a, gast.Starred) and isinstance(a.value, gast.Name) else None
            if n is None:
                args.append(a)
                continue
            args += [gast.Subscript(value=name(a.value.id), slice=_const(k), ctx=gast.Load())
                     for k in range(n)]
        keywords = []
        for k in call.keywords:
            ks = keys(k.value.id) if k.arg is None and isinstance(k.value, gast.Name) else None
            if ks is None:
                keywords.append(k)
                continue
            keywords += [gast.keyword(arg=key, value=gast.Subscript(value=name(k.value.id), slice=_const(key),
                                                                   ctx=gast.Load())) for key in ks]
        call.args, call.keywords = args, keywords


def _star_into_varargs(call, node, desugar):
    """Whether ``g(a, *xs)`` unpacks ``xs`` exactly into ``g``'s ``*vs`` (``g`` a nested def
    of ``f`` or a function known when compiling whose positional parameters the plain
    arguments before it fill, none of them with a keyword): transform/inline.py binds
    ``vs = tuple(xs)``, whatever the length of ``xs`` when ``f`` runs."""
    args = call.args
    if not isinstance(args[-1], gast.Starred) or any(isinstance(a, gast.Starred) for a in args[:-1]) \
            or any(k.arg is None for k in call.keywords):
        return False
    func = call.func
    defs = [s for s in node.body if isinstance(s, gast.FunctionDef)]
    if isinstance(func, gast.Name) and (func.id in desugar.locals or func.id in {d.name for d in defs}):
        found = [d for d in defs if d.name == func.id]
        if len(found) != 1 or func.id in desugar.locals:
            return False
        a = found[0].args
        if a.vararg is None or a.posonlyargs:
            return False
        positional = [p.id for p in a.args]
    else:
        fn = _resolves_path(desugar, func, inspect.isfunction)
        if fn is None:
            return False
        params = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
        if not any(p.kind is p.VAR_POSITIONAL for p in params):
            return False
        positional = [p.name for p in params
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(args) - 1 == len(positional) and not {k.arg for k in call.keywords} & set(positional)


def _dict_loops(node, dicts, desugar):
    """``for k in d`` and ``[... for k in d]`` over a name that always holds a dict (a
    display, ``dict(...)``, or a dict argument the compile is specialised on) iterate
    ``list(d)``, its keys, as Python does (a loop over a name reads its items by position)."""
    if not dicts:
        return
    for n in gast.walk(node):
        if isinstance(n, (gast.For, gast.comprehension)) and isinstance(n.iter, gast.Name) \
                and n.iter.id in dicts:
            n.iter = desugar.call(builtins.list, n.iter)


def _resolves_path(desugar, func, wanted=lambda obj: True):
    """The object the dotted name ``func`` (rooted outside ``f``'s locals) denotes, when
    ``wanted(obj)``: then resolved again as a read the compile depends on (guard.py);
    else None, and nothing recorded."""
    obj = lookup_dotted(func, desugar.info, desugar.locals)
    if obj is None or not wanted(obj):
        return None
    return desugar.info.resolve_path(ast_util.dotted(func))


_BINDING = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For, gast.comprehension, gast.With)


class Scan:
    """What methods.transform's steps ask of FunctionDef ``node``, from one walk (they
    walked it eight times): its ``names``, ``calls``, ``scopes`` (FunctionDefs, itself
    included, and Lambdas), ``starred``, ``displays`` (Lists, Tuples, Dicts), ``assigns``
    and ``binders`` (the binding statements, in ``gast.walk``'s order), ``stored`` (name ->
    how many ``Store`` names bind it). A step that changes the tree makes a new one."""

    def __init__(self, node):
        self.node = node
        names, calls, scopes, starred, displays, binders = [], [], [], [], [], []
        Name, Call = gast.Name, gast.Call
        where = {gast.FunctionDef: scopes, gast.Lambda: scopes, gast.Starred: starred,
                 gast.List: displays, gast.Tuple: displays, gast.Dict: displays}
        where.update((cls, binders) for cls in _BINDING)
        for n in ast_util.walk(node):   # (gast.walk's nodes, in its order)
            c = n.__class__
            if c is Name:
                names.append(n)
            elif c is Call:
                calls.append(n)
            else:
                found = where.get(c)
                if found is not None:
                    found.append(n)
        self.names, self.calls, self.scopes, self.starred = names, calls, scopes, starred
        self.displays, self.binders = displays, binders
        stored = self.stored = {}
        Store = gast.Store
        for n in names:
            if n.ctx.__class__ is Store:
                stored[n.id] = stored.get(n.id, 0) + 1
        self._bindings = None

    def local_names(self):
        """``base.local_names`` of the node."""
        args = self.node.args
        found = {a.id for a in args.args + args.kwonlyargs + args.posonlyargs}
        found.update(a.id for a in (args.vararg, args.kwarg) if a is not None)
        bound = (gast.Store, gast.Del)   # (not a nested def's parameters: gast.Param)
        found.update(n.id for n in self.names if n.ctx.__class__ in bound)
        return found

    def bindings(self):
        """Name -> the value of each binding of it (None: a binding other than a plain
        ``name = value``), in ``gast.walk``'s order (``list_names``)."""
        if self._bindings is None:
            self._bindings = _bindings(self.binders)
        return self._bindings


def _bindings(binders):
    bindings = {}
    for n in binders:
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name):
            bindings.setdefault(n.targets[0].id, []).append(n.value)
        else:
            targets = [i.optional_vars for i in n.items if i.optional_vars is not None] \
                if isinstance(n, gast.With) else n.targets if isinstance(n, gast.Assign) else [n.target]
            for t in (t for target in targets for t in ast_util.walk(target)):
                if isinstance(t, gast.Name) and isinstance(t.ctx, gast.Store):
                    bindings.setdefault(t.id, []).append(None)
    return bindings


def list_names(node, resolves_to, kind=list, scan=None, known=frozenset()):
    """Local names every binding of which makes a list (a display, a comprehension,
    ``list(...)``, ``sorted(...)`` or a concatenation of such): ``xs.sort()`` sorts a list.
    ``resolves_to(func, obj)`` telling whether a callee is ``obj``
    (inline.py asks it of a caller: a list it passes to a helper is known as a list there).
    ``kind=dict``: the names every binding of which makes a dict instead. ``scan``: a
    ``Scan`` of ``node`` as it is. ``known``: names that hold such a value already (an
    argument the compile is specialised on); a name every binding of which copies one of
    them or of the names found (``q = params``, an inlined helper's parameter) is one too."""
    if scan is not None:
        bindings = scan.bindings()
    else:
        bindings = _bindings(n for n in ast_util.walk(node) if isinstance(n, _BINDING))
    params = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}

    def makes_list(e):
        if kind is dict:
            return isinstance(e, (gast.Dict, gast.DictComp)) or (
                isinstance(e, gast.Call) and resolves_to(e.func, builtins.dict))
        if isinstance(e, (gast.List, gast.ListComp)):
            return True
        if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Add):
            return makes_list(e.left) and makes_list(e.right)
        return isinstance(e, gast.Call) and (resolves_to(e.func, builtins.list)
                                             or resolves_to(e.func, builtins.sorted))

    found = {n for n, values in bindings.items() if n not in params and all(v is not None and makes_list(v) for v in values)}
    held = found | set(known)
    aliases = {n: values for n, values in bindings.items() if n not in params and n not in held
               and all(isinstance(v, gast.Name) for v in values)}
    while aliases:   # (q = params; p2 = q: until no alias is added)
        added = {n for n, values in aliases.items() if all(v.id in held for v in values)}
        if not added:
            break
        held |= added
        for n in added:
            del aliases[n]
    return found | (held - set(known))




# Optional library -> the function of srcgrad/scipy_versions.py giving its entries, added to
# inlined.NUMPY_INLINED the first time a compile finds the library imported
_LIBRARY_VERSIONS = {"scipy.linalg": "linalg_versions", "scipy.stats": "stats_versions"}


def _library_versions():
    """``inlined.NUMPY_INLINED``, with the versions of each optional library the program
    has imported since the last call (cheap until one is)."""
    from srcgrad import inlined
    if _LIBRARY_VERSIONS:
        for library in [name for name in _LIBRARY_VERSIONS if name in sys.modules]:
            from srcgrad import scipy_versions
            inlined.NUMPY_INLINED.update(getattr(scipy_versions, _LIBRARY_VERSIONS.pop(library))())
    return inlined.NUMPY_INLINED


def _numpy_version(desugar, call):
    """The Python version (srcgrad/inlined.py's ``NUMPY_INLINED``) that ``call`` of a NumPy
    function is made a call of, or None: a call that passes ``**``, or a value other than
    the only one its version takes for a parameter (``full=True`` to ``np.polyfit``), or
    an argument found only when the function runs in such a parameter's place, keeps
    NumPy's function."""
    if any(k.arg is None for k in call.keywords):
        return None
    table = _library_versions()
    library = _resolves_path(desugar, call.func, lambda obj: _hashable_in(obj, table))
    if library is None:
        return None
    version, pinned, trigger = table[library]
    from srcgrad import rules
    registered = rules.RULES.get(rules._key(library))
    if registered is not None and not registered.builtin:
        return None   # (a rule the user registered for the function replaces its version)
    sample = next(iter(version.values())) if isinstance(version, dict) else version
    params = [p for p in inspect.signature(sample).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    starred = next((k for k, a in enumerate(call.args) if isinstance(a, gast.Starred)), None)
    given = {k.arg: k.value for k in call.keywords}
    for p, a in zip(params, call.args[:starred]):
        given[p.name] = a
    if starred is not None and any(p.name in pinned for p in params[starred:]):
        return None
    if callable(trigger):   # np.polyfit(..., full=True): the version for its flags
        version = trigger(given)
        if version is None:
            return None
    elif isinstance(trigger, tuple):   # np.pad(..., mode="mean"): that mode's version
        value = given.get(trigger[0])
        if isinstance(value, (gast.Name, gast.Attribute)):   # a global constant: a read the
            value = _resolves_path(desugar, value, lambda obj: isinstance(obj, str)   # compile
                                   and obj in trigger[1])                            # depends on
            value = None if value is None else gast.Constant(value=value, kind=None)
        if not (isinstance(value, gast.Constant) and isinstance(value.value, str)
                and value.value in trigger[1]):
            return None   # (a mode known when it runs: the rule's, rt.pad_vjp)
        version = version[value.value]
    elif trigger is not None and trigger not in given:
        return None
    for p, value in pinned.items():
        if p in given and not (isinstance(given[p], gast.Constant) and given[p].value is value):
            return None
    return version


_FROZEN_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")


def frozen_call(desugar, call):
    """``scipy.stats.norm(loc, scale).logpdf(x)``, a frozen distribution's method, as
    ``scipy.stats.norm.logpdf(x, loc, scale)`` (whose version srcgrad/scipy_versions.py has):
    the frozen object keeps its arguments and the method passes them on after ``x``. Only
    for ``x`` by position and freezing arguments read without a call (evaluated after ``x``
    then, as nothing they read can change); else None."""
    func = call.func
    if not (isinstance(func, gast.Attribute) and func.attr in _FROZEN_METHODS) \
            or "scipy.stats" not in sys.modules:
        return None
    freeze = func.value
    bound = freeze.id if isinstance(freeze, gast.Name) and freeze.id in desugar.frozen else None
    if bound is not None:
        freeze = templates.clone(desugar.frozen[bound])   # dist = norm(mu, s); dist.cdf(x)
    if not isinstance(freeze, gast.Call):
        return None
    arguments = freeze.args + [k.value for k in freeze.keywords]
    if len(call.args) != 1 or call.keywords or isinstance(call.args[0], gast.Starred) \
            or len(freeze.args) > 2 or any(k.arg not in ("loc", "scale") for k in freeze.keywords) \
            or any(isinstance(n, (gast.Call, gast.NamedExpr, gast.Starred, gast.Lambda))
                   for a in arguments for n in ast_util.walk(a)):
        return None
    norm = sys.modules["scipy.stats"].norm
    if _resolves_path(desugar, freeze.func, lambda obj: obj is norm) is None:
        return None
    if bound is not None:
        desugar.frozen_read.add(bound)
    method = gast.Attribute(value=freeze.func, attr=func.attr, ctx=gast.Load())
    return gast.copy_location(gast.Call(func=method, args=call.args + freeze.args,
                                        keywords=freeze.keywords), call)


def frozen_names(node, scan):
    """Local name -> the call it is bound to (``frozen_call``: ``dist = norm(mu, s)``), for a
    name bound once, by ``name = f(...)``, whose arguments read only names never bound in
    the function (parameters, globals) or bound once by an assignment earlier in the same
    block (``mu, s = p["mu"], p["s"]``) with no read of the name in between: each read of
    the name then sees the values the call would read there."""
    if "scipy.stats" not in sys.modules:
        return {}
    bound = scan.bindings()
    found = {}
    for block in ast_util.blocks(node.body):
        for j, s in enumerate(block):
            if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                    and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call)):
                continue
            n = s.targets[0].id
            if scan.stored.get(n) != 1 or len(bound.get(n, ())) != 1:
                continue
            call = s.value
            read = {v.id for a in call.args + [k.value for k in call.keywords]
                    for v in ast_util.walk(a) if isinstance(v, gast.Name)}
            if all(v not in bound or _bound_before(v, n, block, j, scan) for v in read):
                found[n] = call
    return found


def _bound_before(v, n, block, j, scan):
    """Whether ``v``'s one binding is an assignment in ``block`` before index ``j``, and
    nothing from it to ``j`` reads ``n``."""
    if scan.stored.get(v) != 1:
        return False
    for i in range(j - 1, -1, -1):
        s = block[i]
        names = [t for t in ast_util.walk(s) if isinstance(t, gast.Name)]
        if any(t.id == n for t in names):
            return False
        if isinstance(s, gast.Assign) and any(t.id == v and isinstance(t.ctx, gast.Store)
                                              for target in s.targets
                                              for t in ast_util.walk(target)
                                              if isinstance(t, gast.Name)):
            return True
    return False


def drop_frozen(node, names):
    """The bindings ``dist = norm(mu, s)`` of ``names`` (frozen_call read their calls) where
    nothing reads the name any more: building the frozen object would only cost time."""
    if not names:
        return   # (most functions: nothing frozen, no walk)
    read = {n.id for n in ast_util.walk(node) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load)}
    unread = set(names) - read
    for block in ast_util.blocks(node.body) if unread else ():
        block[:] = [s for s in block if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                                              and isinstance(s.targets[0], gast.Name)
                                              and s.targets[0].id in unread)]


def piecewise_call(desugar, call, helper):
    """``np.piecewise(x, condlist, [f0, 1.0, ...])`` as a call of srcgrad/inlined.py's
    ``piecewise_<n>(x, condlist, f0, lambda _sg_v: 1.0, ...)``: each piece a lambda, a
    global function or a number (a constant piece), up to five; else None (NumPy's
    function, refused where it needs a gradient)."""
    import numpy
    from srcgrad import inlined
    if call.keywords or len(call.args) != 3 or any(isinstance(a, gast.Starred) for a in call.args) \
            or _resolves_path(desugar, call.func, lambda obj: obj is numpy.piecewise) is None:
        return None
    funcs = call.args[2]
    if not isinstance(funcs, (gast.List, gast.Tuple)) or len(funcs.elts) not in inlined.PIECEWISE:
        return None
    pieces = []
    for e in funcs.elts:
        number = e.operand if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)) else e
        if isinstance(number, gast.Constant) and type(number.value) in (int, float, bool):
            e = gast.Lambda(args=gast.arguments(
                args=[gast.Name(id="_sg_v", ctx=gast.Param(), annotation=None, type_comment=None)],
                posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
                body=e)
            gast.copy_location(e, number)
        elif not isinstance(e, gast.Lambda) and (not isinstance(e, (gast.Name, gast.Attribute))
                                                 or _resolves_path(desugar, e, callable) is None):
            return None
        pieces.append(e)
    return gast.Call(func=helper(inlined.PIECEWISE[len(pieces)]), args=call.args[:2] + pieces, keywords=[])


def vectorize_call(desugar, call, helper):
    """``np.vectorize(f)(x, ...)`` (``otypes=[float]`` too) or the call of a global that
    ``np.vectorize`` made (``@np.vectorize``), of one to three arrays, as a call of
    srcgrad/inlined.py's ``vectorized<n>(f, otype, x, ...)``: the loop over the elements,
    ``f`` (a lambda, a def) inlined in it. Else None (``excluded=``, ``signature=``, ``cache``,
    keywords: NumPy's, refused where it needs a gradient)."""
    import numpy
    from srcgrad import inlined
    if call.keywords or len(call.args) not in inlined.VECTORIZED \
            or any(isinstance(a, gast.Starred) for a in call.args):
        return None
    made, none = call.func, gast.Constant(value=None, kind=None)
    if isinstance(made, gast.Call):   # np.vectorize(f, otypes=...)(x)
        options = {k.arg: k.value for k in made.keywords}
        otypes = options.get("otypes", none)
        if isinstance(otypes, (gast.List, gast.Tuple)) and len(otypes.elts) == 1:
            otypes = otypes.elts[0]
        if len(made.args) != 1 or isinstance(made.args[0], gast.Starred) or set(options) - {"otypes"} \
                or isinstance(otypes, (gast.List, gast.Tuple)) \
                or _resolves_path(desugar, made.func, lambda obj: obj is numpy.vectorize) is None:
            return None
        pyfunc = made.args[0]
    else:
        obj = _resolves_path(desugar, made, lambda obj: isinstance(obj, numpy.vectorize))
        if obj is None or obj.excluded or obj.signature is not None or obj.cache \
                or obj.otypes and len(obj.otypes) != 1:
            return None
        pyfunc, otypes = helper(obj.pyfunc), gast.Constant(value=obj.otypes or None, kind=None)
    return gast.Call(func=helper(inlined.VECTORIZED[len(call.args)]), args=[pyfunc, otypes] + call.args,
                     keywords=[])


def vectorized_names(node, desugar, scan):
    """``g = np.vectorize(f[, otypes=...])`` bound once at the top level of ``f``'s body, ``g``
    read only as ``g(...)`` calls, ``f`` a lambda or a name known when compiling, ``otypes``
    a constant: each call is ``np.vectorize(f, ...)(...)`` (vectorize_call's loop; a lambda's
    body reads the variables when called, as Python's closure does) and the binding goes."""
    import numpy
    found = {}
    for stmt in node.body:
        call = stmt.value if isinstance(stmt, gast.Assign) else None
        if isinstance(call, gast.Call) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
                and scan.stored.get(stmt.targets[0].id) == 1 and len(call.args) == 1 \
                and isinstance(call.args[0], (gast.Lambda, gast.Name, gast.Attribute)) \
                and all(k.arg == "otypes" and all(isinstance(n, (gast.Constant, gast.List, gast.Tuple, gast.Name,
                                                                 gast.Attribute, gast.Load))
                                                  for n in gast.walk(k.value)) for k in call.keywords) \
                and _resolves_path(desugar, call.func, lambda obj: obj is numpy.vectorize) is not None:
            found[stmt.targets[0].id] = stmt
    if not found:
        return
    uses = {}
    for n in gast.walk(node):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id in found:
            uses.setdefault(n.func.id, []).append(n)
    reads = [n.id for n in scan.names if n.id in found and isinstance(n.ctx, gast.Load)]
    for target, stmt in found.items():
        if reads.count(target) != len(uses.get(target, ())) or any(
                isinstance(n, gast.Name) and n.id == target for n in gast.walk(stmt.value)):
            continue   # read other than called: NumPy's object
        for use in uses.get(target, ()):
            use.func = templates.clone(stmt.value)
        node.body.remove(stmt)


def _hashable_in(obj, table):
    try:
        return obj in table
    except TypeError:   # an unhashable object
        return False
