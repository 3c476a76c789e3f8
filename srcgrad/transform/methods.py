"""List and dict methods that change their receiver, written as the rebindings srcgrad
differentiates, and ``*``/``**`` unpacking in displays written as joins.

Runs before the comprehensions and canonicalize stages. A statement ``xs.pop()``,
``v = xs.pop(i)``, ``xs.extend(e)``, ``xs.insert(i, v)``, ``xs.reverse()``,
``d.update(e, k=v)``, ``v = d.setdefault(k, v)`` or ``v = d.pop(k[, default])`` on a
local name (or a parameter) becomes reads of the old value and one assignment of the new
one, ``xs = xs[:-1]``, marked ``Static.AUGMENTED`` like ``xs += [v]``: an in-place write
of ``xs``, so the alias analysis (analysis/aliasing.py) refuses it, or checks it when it
runs, where another live name may hold the same list (``other = xs``, or the caller's
argument). The values are then ordinary slices, concatenations and the two helpers
``rt.seq_without`` and ``rt.dict_merge`` (rules in rules/builtins_math.py and jvp.py),
so each method is differentiated by the shared rules of those. ``[*a, *b]`` becomes
``list(a) + list(b)`` and ``{**d, "k": v}`` ``rt.dict_merge(d, {"k": v})``.

A ``pop``/``setdefault`` inside a larger expression (``y = np.sum(xs.pop() * 2)``) is first
moved to a statement of its own (``Desugar.hoist``) where that keeps what the statement
reads; one it cannot move, or a method on something other than a name (``self.xs.pop()``),
is left alone: transform/mutation.py refuses it at its line.

Calls whose form this pass settles too: ``sorted``/``max``/``min`` with ``key=``,
namedtuples and dataclasses built or updated in ``f`` (two helpers with rules each),
``functools.reduce`` and some itertools (srcgrad/inlined.py's Python versions, inlined),
``functools.partial`` bound once, ``g(*args)`` of a display or into ``g``'s ``*vs``, and
``for k in d`` over a name that always holds a dict (``list(d)``).
"""

import builtins
import dataclasses

import gast

from srcgrad import anno, ast_util
from srcgrad import inlined, runtime, templates
from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.transform import operator_methods
from srcgrad.transform.operator_methods import simple as _simple
from srcgrad.transform import (as_array, class_methods, gradient_aliases, instance_lists,
                               local_functions, plain_classes, star_results, structure_parts, tree_calls)
from srcgrad.transform.base import Base, lookup_dotted
from srcgrad.transform.structure_parts import plain_dataclass as _is_plain_dataclass
from srcgrad.transform.call_forms import (_clone_replacing, _dict_loops, _evaluation_order, _hashable_in,
                                          _numpy_version, piecewise_call, vectorize_call, frozen_call,
                                          frozen_names, drop_frozen, vectorized_names,
                                          _partials, _replace_in, _resolves_path, _returning_method,
                                          Scan, _star_calls, _star_into_varargs, list_names)

Static = anno.Static

_METHODS = {"pop", "extend", "insert", "reverse", "update", "setdefault", "sort"}


def _const(value):
    return gast.Constant(value=value, kind=None)


def _slice(lower=None, upper=None, step=None):
    return gast.Slice(lower=lower, upper=upper, step=step)


def _sub(base, index):
    return gast.Subscript(value=name(base), slice=index, ctx=gast.Load())


def _is_namedtuple_class(obj):
    return isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")


def _with_first(call, first):
    """``call`` with ``first`` as its first argument (a fresh copy of the name)."""
    call.args[0] = name(first.id) if isinstance(first, gast.Name) else first
    return call


class Desugar(Base):
    """Rewrites container-method statements and starred displays of one function body."""

    def __init__(self, info, namer, bindings, locals_):
        super().__init__(info)
        self.namer = namer
        self.bindings = bindings
        self.locals = locals_
        self.lists = frozenset()   # local names that always hold a list (list_names)
        self.closed_over = frozenset()   # names a nested def or lambda reads (hoist)
        self.frozen = {}   # dist = norm(mu, s): the names read as that call (frozen_names)
        self.frozen_read = set()   # those frozen_call read so (drop_frozen)

    def helper(self, obj):
        return name(as_array.bind(self.namer, self.info, self.bindings, obj.__name__, obj))

    def call(self, obj, *args):
        node = gast.Call(func=self.helper(obj), args=list(args), keywords=[])
        return node

    def stmt(self, origin, target, value, augmented=False):
        node = gast.Assign(targets=[name(target, True) if isinstance(target, str) else target],
                           value=value, type_comment=None)
        anno.copyanno(origin, node, Static.ORIGIN)
        if augmented:
            anno.setanno(node, Static.AUGMENTED, True)
            anno.setanno(node, Static.MUTATES, True)   # a helper's xs.pop(): its caller's too
        return node

    def temp(self, origin, value, out, hint):
        """``value`` as something safe to read twice (a new name bound to it when needed)."""
        if _simple(value):
            return value
        tmp = self.namer.new(hint)
        out.append(self.stmt(origin, tmp, value))
        return name(tmp)

    def sorted_items(self, items, keywords):
        """``[items[i] for i in rt.sort_order(items, key, reverse)]`` (``items`` read once)."""
        options = {k.arg: k.value for k in keywords}
        order = self.call(runtime.sort_order, None, options.get("key", _const(None)),
                          options.get("reverse", _const(False)))
        return self.each_once(items, lambda seq: gast.ListComp(
            elt=gast.Subscript(value=seq, slice=name("sorted_index"), ctx=gast.Load()),
            generators=[gast.comprehension(target=name("sorted_index", True), iter=_with_first(order, seq),
                                           ifs=[], is_async=0)]))

    def best_item(self, items, key, largest):
        """``items[rt.argbest(items, key, largest)]`` (``items`` read once)."""
        return self.each_once(items, lambda seq: gast.Subscript(
            value=seq, slice=self.call(runtime.argbest, seq, key, _const(largest)), ctx=gast.Load()))

    def each_once(self, items, build):
        """``[build(t) for t in [list(items)]][0]``: ``items`` evaluated once, where the call
        stood, and as the list Python's sorted/max iterate (a dict's keys, an array's rows)."""
        items = self.call(builtins.list, items)
        return gast.Subscript(value=gast.ListComp(
            elt=build(name("sorted_items")),
            generators=[gast.comprehension(target=name("sorted_items", True),
                                           iter=gast.List(elts=[items], ctx=gast.Load()), ifs=[],
                                           is_async=0)]), slice=_const(0), ctx=gast.Load())

    def resolves_to(self, func, obj):
        if isinstance(func, gast.Name) and func.id not in self.locals:
            try:
                return self.info.resolve(func.id) is obj
            except NameError:
                return False
        return False

    # ----- statements -----

    def visit_Expr(self, s):
        before = self.hoist(s, [s.value], whole=s.value)
        return before + (self.method(s, s.value, None) or [s])

    def visit_Assign(self, s):
        before = self.hoist(s, [s.value] + s.targets, whole=s.value)
        if len(s.targets) == 1:
            return before + (self.method(s, s.value, s.targets[0]) or [s])
        return before + [s]

    def visit_AugAssign(self, s):
        return self.hoist(s, [s.target, s.value]) + [s]

    def visit_Return(self, s):
        return self.hoist(s, [s.value] if s.value is not None else []) + [s]

    def visit_If(self, s):
        before = self.hoist(s, [s.test])
        self.visit_children(s)
        return before + [s]

    def visit_For(self, s):
        before = self.hoist(s, [s.iter])
        self.visit_children(s)
        return before + [s]

    def hoist(self, s, parts, whole=None):
        """``y = np.sum(xs.pop() * 2)`` -> ``popped = xs.pop()``, ``y = np.sum(popped * 2)``:
        each ``pop``/``setdefault`` call (it returns a value and changes its receiver) that
        ``parts`` evaluate unconditionally, other than ``whole`` (a statement of its own
        already), bound first to a name of its own, then rewritten as that statement is.
        Left in place (mutation.py refuses it at its line) where moving it first would
        change what the statement reads: its receiver read before it in the statement,
        read where it is evaluated only sometimes or later (a lambda, a comprehension, a
        branch of ``a if c else b``, right of ``and``/``or``), or held by a nested function
        that a call before it may run."""
        if not any(_returning_method(n, self.locals) and n is not whole
                   for part in parts for n in ast_util.nodes_of(part, gast.Call)):
            return []   # (most statements: none, wherever evaluated; no evaluation order)
        order, deferred = [], []
        for part in parts:
            _evaluation_order(part, order, deferred)
        calls = [n for n in order if n is not whole and _returning_method(n, self.locals)]
        hoisted = {id(c) for c in calls}
        if not calls:
            return []
        receivers = {c.func.value.id for c in calls}
        inside = {id(n) for c in calls for n in gast.walk(c)}
        if receivers & {n.id for d in deferred for n in gast.walk(d) if isinstance(n, gast.Name)} \
                or receivers & self.closed_over:
            return []
        last = {r: max(i for i, n in enumerate(order) if id(n) in hoisted and n.func.value.id == r)
                for r in receivers}
        for i, n in enumerate(order):
            if isinstance(n, gast.Name) and n.id in receivers and id(n) not in inside \
                    and i < last[n.id]:
                return []   # read before its last pop: moving the pop first would change it
        out, replaced = [], {}
        for call in calls:   # innermost first: the evaluation order is post-order
            tmp = self.namer.new(f"{call.func.value.id}_{call.func.attr}")
            stmt = self.stmt(s, tmp, _clone_replacing(call, replaced))
            out.extend(self.method(stmt, stmt.value, stmt.targets[0]) or [stmt])
            replaced[id(call)] = tmp
        for part in parts:
            _replace_in(part, replaced)
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Call) and id(s.value) in replaced:
            s.value = name(replaced[id(s.value)])
        return out

    def method(self, s, call, target):
        """The statements that replace ``[target =] receiver.method(...)``, or None."""
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and isinstance(call.func.value, gast.Name) and call.func.attr in _METHODS
                and call.func.value.id in self.locals):
            return None
        if any(isinstance(a, gast.Starred) for a in call.args) \
                or any(k.arg is None for k in call.keywords):
            return None
        r = call.func.value.id
        args, keywords, what = call.args, call.keywords, call.func.attr
        out = []
        result = None   # the value the call returns (None for extend/insert/reverse/update)
        if what == "pop" and not keywords and len(args) <= 2:
            if not args:
                result = _sub(r, _const(-1))
                new = _sub(r, _slice(upper=_const(-1)))
            else:
                key = self.temp(s, args[0], out, "key")
                if len(args) == 2:   # d.pop(k, default): a dict's
                    default = self.temp(s, args[1], out, "default")
                    result = gast.Call(func=gast.Attribute(value=name(r), attr="get", ctx=gast.Load()),
                                       args=[key, default], keywords=[])
                else:
                    result = _sub(r, key)
                new = self.call(runtime.seq_without, name(r), key)
        elif what == "extend" and len(args) == 1 and not keywords:
            more = args[0] if isinstance(args[0], gast.List) else self.call(builtins.list, args[0])
            new = gast.BinOp(left=name(r), op=gast.Add(), right=more)
        elif what == "insert" and len(args) == 2 and not keywords:
            key = self.temp(s, args[0], out, "key")
            item = gast.List(elts=[args[1]], ctx=gast.Load())
            new = gast.BinOp(left=gast.BinOp(left=_sub(r, _slice(upper=key)), op=gast.Add(), right=item),
                             op=gast.Add(), right=_sub(r, _slice(lower=key)))
        elif what == "reverse" and not args and not keywords:
            new = _sub(r, _slice(step=_const(-1)))
        elif what == "update" and len(args) <= 1 and (args or keywords):
            new = name(r)
            if args:
                new = self.call(runtime.dict_merge, new, args[0])
            if keywords:
                new = self.call(runtime.dict_merge, new, gast.Dict(
                    keys=[_const(k.arg) for k in keywords], values=[k.value for k in keywords]))
        elif what == "setdefault" and len(args) == 2 and not keywords:
            key = self.temp(s, args[0], out, "key")
            default = self.temp(s, args[1], out, "default")
            # merge(d, merge({k: v}, d)): d's values where it has k, else v, placed last
            new = self.call(runtime.dict_merge, name(r), self.call(
                runtime.dict_merge, gast.Dict(keys=[key], values=[default]), name(r)))
            result = _sub(r, key)
        elif what == "sort" and not args and {k.arg for k in keywords} <= {"key", "reverse"} \
                and (any(k.arg == "key" for k in keywords) or r in self.lists):
            # a list's sort (an array's takes no key=: transform/mutation.py rewrites that one,
            # and a name every binding of which makes a list is no array)
            new = self.sorted_items(name(r), keywords)
        else:
            return None
        if result is not None and target is not None and what != "setdefault":
            out.append(self.stmt(s, target, result))
        out.append(self.stmt(s, r, new, augmented=True))
        if target is not None:
            if what == "setdefault":
                out.append(self.stmt(s, target, result))
            elif result is None:
                out.append(self.stmt(s, target, _const(None)))
        return out



class Displays(ast_util.NodeTransformer):
    """``*``/``**`` in list, tuple and dict displays, as joins (see the module docstring)."""

    def __init__(self, desugar):
        self.desugar = desugar
        self.call = desugar.call
        self.helper = desugar.helper

    def visit_Call(self, node):
        """``sorted(xs, key=k)`` and ``max(xs, key=k)`` / ``min``: an order, then item reads;
        ``Point(x, y)`` of a namedtuple class and ``p._replace(x=v)``: two helpers with rules."""
        self.generic_visit(node)
        operator = operator_methods.operator_of_dunder(node)
        if operator is not None:
            return operator
        d = self.desugar
        built = self.namedtuple(node)
        if built is not None:
            return built
        keys = {k.arg for k in node.keywords}
        if not keys and not any(isinstance(a, gast.Starred) for a in node.args):
            # functools.reduce(fn, xs[, init]), itertools.chain(a, b): Python loops srcgrad
            # inlines (srcgrad/inlined.py)
            library = _resolves_path(d, node.func, lambda obj: _hashable_in(obj, inlined.INLINED)
                                     and len(node.args) in inlined.INLINED[obj])
            if library is not None:
                node.func = self.helper(inlined.INLINED[library][len(node.args)])
                return node
        node = frozen_call(d, node) or node   # scipy.stats.norm(loc, scale).logpdf(x)
        version = _numpy_version(d, node)   # np.polyfit, np.ediff1d: srcgrad/inlined.py's
        if version is not None:
            node.func = self.helper(version)
            return node
        pieces = piecewise_call(d, node, self.helper) or vectorize_call(d, node, self.helper)
        if pieces is not None:   # np.piecewise with its functions, np.vectorize(f)(x): loops
            return pieces
        if None in keys or any(isinstance(a, gast.Starred) for a in node.args) or not node.args:
            return node
        if len(node.args) > 1:   # max(a, b, key=f): of the list [a, b], as Python compares them
            if keys == {"key"} and any(d.resolves_to(node.func, f) for f in (builtins.max, builtins.min)):
                node = gast.Call(func=node.func, args=[gast.List(elts=node.args, ctx=gast.Load())],
                                 keywords=node.keywords)
            else:
                return node
        if d.resolves_to(node.func, builtins.sorted) and keys <= {"key", "reverse"}:
            return d.sorted_items(node.args[0], node.keywords)
        if d.resolves_to(node.func, builtins.dict) and keys:
            # dict(d, k=v): a copy of d, then the keywords ({**d, "k": v})
            return self.call(runtime.dict_merge, gast.Call(func=node.func, args=node.args, keywords=[]),
                             gast.Dict(keys=[_const(k.arg) for k in node.keywords],
                                       values=[k.value for k in node.keywords]))
        for best, largest in ((builtins.max, True), (builtins.min, False)):
            if d.resolves_to(node.func, best) and keys == {"key"}:
                key = node.keywords[0].value
                if isinstance(key, gast.Constant) and key.value is None:
                    return node
                return d.best_item(node.args[0], key, largest)
        return node

    def namedtuple(self, node):
        d = self.desugar
        if any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        if isinstance(node.func, gast.Attribute) and node.func.attr == "_replace" and not node.args \
                and node.keywords:
            fields = gast.Constant(value=tuple(k.arg for k in node.keywords), kind=None)
            return self.call(runtime.namedtuple_replace, node.func.value, fields,
                             gast.List(elts=[k.value for k in node.keywords], ctx=gast.Load()))
        if _resolves_path(d, node.func, lambda obj: obj is dataclasses.replace) is not None \
                and len(node.args) == 1 and node.keywords:
            fields = gast.Constant(value=tuple(k.arg for k in node.keywords), kind=None)
            return self.call(runtime.dataclass_replace, node.args[0], fields,
                             gast.List(elts=[k.value for k in node.keywords], ctx=gast.Load()))
        cls = _resolves_path(d, node.func, _is_plain_dataclass)
        if cls is not None:
            return self.dataclass(node, cls)
        made = plain_classes.construction(node, _resolves_path(d, node.func, plain_classes.plain), d.info)
        if made is not None:   # MLP(params) of a class whose __init__ stores attributes
            return self.call(runtime.dataclass_new, *plain_classes.arguments(made, d))
        cls = _resolves_path(d, node.func, _is_namedtuple_class)
        if cls is None:
            return None
        given = {k.arg: k.value for k in node.keywords}
        fields = cls._fields
        if len(node.args) > len(fields) or set(given) - set(fields) \
                or set(given) & set(fields[:len(node.args)]):
            return None   # Python's TypeError, when it runs
        items = list(node.args)
        for f in fields[len(node.args):]:
            if f in given:
                items.append(given[f])
            elif f in cls._field_defaults:
                default = cls._field_defaults[f]
                items.append(gast.Constant(value=default, kind=None) if templates.is_literal(default)
                             else name(as_array.bind(d.namer, d.info, d.bindings, f, default)))
            else:
                return None
        return self.call(runtime.namedtuple_new, templates.clone(node.func),
                         gast.List(elts=items, ctx=gast.Load()))

    def dataclass(self, node, cls):
        """``P(x, b=v)`` of a dataclass whose ``__init__`` is the one ``@dataclass`` wrote:
        ``rt.dataclass_new(P, ("w", "b"), [x, v])`` (its defaults filled in), None where the
        arguments do not bind (Python's TypeError when it runs) or a default is a factory."""
        d = self.desugar
        fields = [f for f in dataclasses.fields(cls) if f.init]
        positional = [f for f in fields if not f.kw_only]
        given = {k.arg: k.value for k in node.keywords}
        if len(node.args) > len(positional) or set(given) - {f.name for f in fields} \
                or set(given) & {f.name for f in positional[:len(node.args)]}:
            return None
        names, items = [], []
        for k, f in enumerate(fields):
            if f in positional and k < len(node.args) and positional.index(f) < len(node.args):
                value = node.args[positional.index(f)]
            elif f.name in given:
                value = given[f.name]
            elif f.default is not dataclasses.MISSING:
                value = gast.Constant(value=f.default, kind=None) if templates.is_literal(f.default) \
                    else name(as_array.bind(d.namer, d.info, d.bindings, f.name, f.default))
            else:
                return None   # a default_factory, or a missing argument
            names.append(f.name)
            items.append(value)
        return self.call(runtime.dataclass_new, templates.clone(node.func),
                         gast.Constant(value=tuple(names), kind=None),
                         gast.List(elts=items, ctx=gast.Load()))

    def visit_List(self, node):
        self.generic_visit(node)
        return self.starred(node, list)

    def visit_Tuple(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load):
            return self.starred(node, tuple)
        return node

    def starred(self, node, kind):
        """``[a, *b, c]`` -> ``[a] + list(b) + [c]`` (a tuple display: ``tuple(...)`` of that)."""
        if not any(isinstance(e, gast.Starred) for e in node.elts) or not isinstance(node.ctx, gast.Load):
            return node
        parts, run = [], []
        for e in node.elts:
            if isinstance(e, gast.Starred):
                if run:
                    parts.append(gast.List(elts=run, ctx=gast.Load()))
                    run = []
                parts.append(self.call(builtins.list, e.value))
            else:
                run.append(e)
        if run:
            parts.append(gast.List(elts=run, ctx=gast.Load()))
        value = parts[0]
        for p in parts[1:]:
            value = gast.BinOp(left=value, op=gast.Add(), right=p)
        if kind is tuple:
            value = self.call(builtins.tuple, value)
        return value

    def visit_Dict(self, node):
        """``{**d, "k": v}`` -> ``rt.dict_merge(d, {"k": v})`` (later keys win, first places stay)."""
        self.generic_visit(node)
        if all(k is not None for k in node.keys):
            return node
        value, keys, values = None, [], []

        def flush(value):
            if keys:
                part = gast.Dict(keys=list(keys), values=list(values))
                keys.clear()
                values.clear()
                return part if value is None else self.call(runtime.dict_merge, value, part)
            return value

        for k, v in zip(node.keys, node.values):
            if k is None:
                value = flush(value)
                value = self.call(runtime.dict_merge, value if value is not None else gast.Dict(
                    keys=[], values=[]), v)
            else:
                keys.append(k)
                values.append(v)
        return flush(value)


def unbound_classes(node, classes, names=None):
    """``classes`` (parameter -> class) less the parameters ``node`` rebinds (``names``: its Names)."""
    stored = {n.id for n in (ast_util.nodes_of(node, gast.Name) if names is None else names)
              if isinstance(n.ctx, gast.Store)}
    return {p: c for p, c in classes.items() if p not in stored}


def _class_attribute(cls, attr):
    """``(function, bound)`` for the method ``attr`` of ``cls``: ``bound`` True for a plain
    function (called with the instance first), False for a class or static method (what
    ``getattr(cls, attr)`` gives is called as it is). None for anything else (a field)."""
    import inspect
    try:
        raw = inspect.getattr_static(cls, attr)
    except AttributeError:
        return None
    if isinstance(raw, (classmethod, staticmethod)):
        return getattr(cls, attr), False
    if inspect.isfunction(raw):
        return raw, True
    return None


def bind_methods(node, ctx, scan=None):
    """``p.energy(x)``, ``p.scale(x)`` (a classmethod or staticmethod through the instance)
    and ``type(p).scale(x)``, for a parameter ``p`` whose class is known when compiling
    (ctx.classes: the gradient is specialised on it), become calls of the class's function,
    ``Params.energy(p, x)``, which transform/inline.py inlines as any helper (its ``self``
    knows the class too, so ``self.other(x)`` inside works the same way). ``scan``: a
    ``call_forms.Scan`` of ``node``."""
    built = built_classes(node, ctx, scan or Scan(node))
    if built:   # known to helpers too: Model.loss(p, x) calling self.penalty()
        ctx.classes = {**ctx.classes, **built}
    classes, locals_ = ctx.classes, scan.local_names()
    if not classes and not any(_constructed(c.func, ctx, locals_) or _constructed(
            getattr(c.func, "value", None), ctx, locals_) for c in scan.calls):
        return node   # (nor P(w)(x), P(w).loss(x): a call of a dataclass built there)
    if any(map(structure_parts.has_methods, classes.values())):
        node = class_methods.read_properties(node, ctx)   # p.scale: Params.scale.fget(p)
        node = class_methods.bind_super(node, ctx)   # super().f(x): Base.f(self, x)
        node = class_methods.bind_operators(node, ctx)   # p + q: Vec.__add__(p, q)
        node = class_methods.bind_results(node, ctx)   # (p + q).norm(): Vec.norm(...)

    class Bind(gast.NodeTransformer):
        def visit_For(self, loop):   # for layer in self: self.layers, as for an argument
            loop.iter = structure_parts.iterated_by(loop.iter, classes, ctx)
            return self.generic_visit(loop)

        def visit_comprehension(self, comp):
            comp.iter = structure_parts.iterated_by(comp.iter, classes, ctx)
            return self.generic_visit(comp)

        def visit_Call(self, call):
            self.generic_visit(call)
            func = call.func
            cls = classes.get(func.id) if isinstance(func, gast.Name) else _constructed(func, ctx, locals_)
            if cls is not None and structure_parts.calls_itself(cls):   # p(x), P(w)(x): __call__
                func = call.func = gast.Attribute(value=func, attr="__call__", ctx=gast.Load())
            if not isinstance(func, gast.Attribute):
                return call
            owner, instance = func.value, True
            if isinstance(owner, gast.Call) and isinstance(owner.func, gast.Name) and owner.func.id == "type" \
                    and len(owner.args) == 1 and not owner.keywords and _builtin_type(ctx, owner.func):
                owner, instance = owner.args[0], False
            cls = classes.get(owner.id) if isinstance(owner, gast.Name) else \
                _constructed(owner, ctx, locals_) if instance else None   # P(w).loss(x): P.loss(P(w), x)
            found = cls and _class_attribute(cls, func.attr)
            if not found:
                return call
            _, bound = found
            if bound and not instance or not bound and not isinstance(owner, gast.Name):
                return call   # type(p).energy(p, x): the caller passes self (left as written);
                # P(w).static(x) builds P(w) first
            # Cls.energy, read through the class bound in the generated code: the compile
            # holds while getattr(Cls, "energy") is the same function (guard.py)
            call.func = gast.Attribute(value=name(as_array.bind(ctx.namer, ctx.info, ctx.bindings,
                                                                cls.__name__, cls)),
                                       attr=func.attr, ctx=gast.Load())
            if bound:
                call.args = [name(owner.id) if isinstance(owner, gast.Name) else owner] + list(call.args)
            return call

    node.body = [Bind().visit(s) for s in node.body]
    return node


def built_classes(node, ctx, scan):
    """Local names bound once, to a dataclass ``P(...)`` built in ``f`` (the class a global,
    closure or attribute name known when compiling): name -> that class, so that
    ``p.loss(x)`` is ``P.loss(p, x)`` as for an argument."""
    counts, built = {}, {}
    changes = {id(s.targets[0]) for s in scan.binders if anno.getanno(s, Static.MUTATES)}
    for n in scan.names:   # (not cell = rt.dataclass_replace(cell, ...): attribute_state.py)
        if not isinstance(n.ctx, gast.Load) and id(n) not in changes:
            counts[n.id] = counts.get(n.id, 0) + 1
    locals_, values = scan.local_names(), {}
    for n in scan.binders:   # (gast.walk's nodes, in its order)
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name) \
                and id(n.targets[0]) not in changes:
            cls = _constructed(n.value, ctx, locals_) or class_methods.made_by_helper(n.value, ctx, locals_)
            if cls is not None:
                built[n.targets[0].id] = cls
            values.setdefault(n.targets[0].id, []).append(cls or n.value)
    return class_methods.rebound_classes(built, counts, values)   # (v = v * 0.5 + v in a loop too)


def _constructed(call, ctx, locals_):
    """The plain dataclass ``call`` builds, ``P(...)`` (``P`` a global, closure or attribute
    name known when compiling; of a plain class, plain_classes.py's), else None."""
    obj = lookup_dotted(call.func, ctx.info, locals_) if isinstance(call, gast.Call) else None
    if obj is None:
        return None
    if not _is_plain_dataclass(obj):
        made = plain_classes.construction(call, obj, ctx.info)   # MLP(params): a dataclass
        if made is None:
            return None
        obj = made[0]
    ctx.info.resolve_path(ast_util.dotted(call.func))   # a read the compile depends on
    return obj


def _builtin_type(ctx, func):
    try:
        return ctx.info.resolve(func.id) is builtins.type
    except NameError:
        return False


def transform(node, ctx):
    """Rewrite the container-method statements and starred displays of FunctionDef ``node``
    (after bind_methods: ``p.energy(x)`` of a dataclass argument)."""
    # step = layer.forward; step(x): layer.forward(x), bound below (local_functions.py's stores)
    expanded = gradient_aliases.expand(node, ctx.info, local_functions._stores)
    gradient_aliases.conditional_calls(node, ctx.info, expanded=expanded)
    node = tree_calls.transform(node, ctx)   # sg.tree_leaves(params), sg.tree_map(f, params)
    node = instance_lists.transform(node, ctx)   # layers = [Dense(W) for W in Ws]: their class
    node = structure_parts.bind(node, ctx)   # m.layers[0].forward(x), self.enc(x), m(x)
    scan = Scan(node)   # (one walk for the questions below; made again after a change)
    node = bind_methods(node, ctx, scan)
    if ctx.classes or ctx.trees:   # (bind_methods rewrote calls)
        scan = Scan(node)
    wanted = bool(scan.calls) or any(
        isinstance(n, (gast.List, gast.Tuple)) and any(isinstance(e, gast.Starred) for e in n.elts)
        or (isinstance(n, gast.Dict) and any(k is None for k in n.keys)) for n in scan.displays) or any(
        isinstance(n, (gast.For, gast.comprehension)) and isinstance(n.iter, gast.Name)
        for n in scan.binders)   # (a loop over a name that may hold a dict: _dict_loops)
    if not wanted:
        return node
    desugar = Desugar(ctx.info, ctx.namer, ctx.bindings, scan.local_names())
    list_arguments = {p for p, cls in ctx.classes.items() if issubclass(cls, list)}
    desugar.lists = list_names(node, desugar.resolves_to, list, scan, list_arguments) | list_arguments
    dict_arguments = {p for p, cls in ctx.classes.items() if issubclass(cls, dict)}
    _dict_loops(node, list_names(node, desugar.resolves_to, dict, scan, dict_arguments)
                | dict_arguments, desugar)
    desugar.frozen = frozen_names(node, scan)
    desugar.closed_over = frozenset(
        n.id for scope in scan.scopes if scope is not node for n in ast_util.nodes_of(scope, gast.Name))
    # ``g(*args)``, ``g(**kw)``: rewritten or refused (nothing to do for a function without)
    if any(any(isinstance(a, gast.Starred) for a in n.args) or any(k.arg is None for k in n.keywords)
           for n in scan.calls):
        star_results.hoist(node, desugar)   # g(*h(x)), h returning (a, b): t = h(x); g(t[0], t[1])
        _star_calls(node)
        scan = Scan(node)
    for n in ast_util.walk(node) if scan.starred else ():   # (gast.walk's nodes, in its order)
        if isinstance(n, gast.Call) and any(isinstance(a, gast.Starred) for a in n.args) \
                and not _star_into_varargs(n, node, desugar) and not star_results.unpacks_shapes(n):
            star = next(a for a in n.args if isinstance(a, gast.Starred))
            raise desugar.error(star, UnsupportedError,
                                "*-unpacking in a call of a value whose length is known only when "
                                "the function runs is not supported in a function srcgrad differentiates",
                                "Pass the arguments one by one, bind the name once to a tuple "
                                "display (args = (a, b)) and call g(*args), or give the function "
                                "a *args parameter the unpacked values fill (def g(*vs)).")
    _partials(node, desugar, scan)
    vectorized_names(node, desugar, scan)   # g = np.vectorize(f); g(x): np.vectorize(f)(x)
    node.body = [Displays(desugar).visit(s) for s in node.body]
    node.body = desugar.visit_block(node.body)
    drop_frozen(node, desugar.frozen_read)
    return node
