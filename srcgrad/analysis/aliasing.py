"""Which names may share memory, and the run-time checks that keep in-place writes sound.

Requires A-normal form, after inlining (a helper's statements are the caller's).
srcgrad reasons about values: ``b[i] = v`` changes ``b`` and nothing else. NumPy
arrays are references, so the write also changes every name that shares ``b``'s
memory (``w = b``, ``a = b = np.zeros(3)``, a slice ``c = b[1:]``, a slice of a
slice, ``np.ascontiguousarray(b)``, a list holding ``b``, a helper returning a
view of its argument) and, for arrays, ``v += y`` writes in place too.

The analysis is a may-alias (points-to) analysis over names, flow-insensitive and
transitive: every binding adds the abstract objects its value may share to the
name's set, through copies, views, containers, subscripts and any call srcgrad
does not know to return fresh memory. Nothing is assumed fresh that is not
known to be (arithmetic, ufuncs, reductions, constructors: FRESH_FUNCTIONS).
Two names may alias when their sets meet.

For each in-place write of ``b`` and each other name ``o`` that may alias ``b``
and is live after the write (read later, or in a later iteration of a loop around
it, or asked for by ``wrt``), the forward sweep checks just before the write
whether the written part of ``b`` really overlaps ``o``'s memory
(``rt.check_unshared``) and stops with an error naming the write's file and line
if it does. Where the sets do not meet, static knowledge proves there is no
alias and nothing is checked. Parameters are objects of their own; when a write
may reach a parameter's memory, the forward sweep first checks that the
arguments do not share memory with each other (``f(x, x)``).
"""

import ast
import re
import types

import gast
import numpy

from srcgrad import anno
from srcgrad.ast_util import reads, walk_statements
from srcgrad.errors import UnsupportedError
from srcgrad.rules import Method
from srcgrad import ast_util, runtime, templates

Static = anno.Static

# Functions known to return memory of their own (never a view of an argument), by
# name, for numpy/cupy/scipy/math callees. Every other call may return a view
# (np.ascontiguousarray, np.split's pieces, np.einsum("ii->i"), ...).
FRESH_FUNCTIONS = {
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "arange", "linspace", "logspace", "geomspace", "eye", "identity", "tri", "copy",
    "sum", "mean", "prod", "std", "var", "max", "min", "amax", "amin", "ptp", "average",
    "median", "percentile", "quantile", "nansum", "nanmean", "nanprod", "nanmax", "nanmin",
    "nanstd", "nanvar", "argmax", "argmin", "argsort", "argwhere", "nonzero", "flatnonzero",
    "count_nonzero", "all", "any", "allclose", "isclose", "array_equal",
    "dot", "vdot", "matmul", "inner", "outer", "tensordot", "kron", "cross", "trace",
    "cumsum", "cumprod", "nancumsum", "nancumprod", "ediff1d", "gradient",  # not diff: n=0 returns a
    "sort", "unique", "concatenate", "stack", "vstack", "hstack", "dstack", "column_stack",
    "row_stack", "block", "tile", "repeat", "pad", "roll", "where", "select", "clip", "take",
    "take_along_axis", "compress", "extract", "tril", "triu", "append", "insert", "delete",
    "convolve", "correlate", "interp", "polyval", "cov", "corrcoef", "histogram",
    "round", "around", "logsumexp", "norm", "solve", "inv", "det", "slogdet", "cholesky",
    "qr", "svd", "eig", "eigh", "eigvals", "eigvalsh", "pinv", "lstsq",  # not matrix_power: n=1
    "hypot",
}
# Builtins known to return a new object (not max/min: they return an argument).
FRESH_BUILTINS = {"len", "float", "int", "bool", "abs", "range", "isinstance", "print", "sum", "round"}
# Array methods known to return memory of their own.
FRESH_METHODS = {
    "copy", "sum", "mean", "prod", "std", "var", "max", "min", "ptp", "argmax", "argmin",
    "argsort", "all", "any", "nonzero", "dot", "cumsum", "cumprod", "trace", "item", "tolist",
    "round", "clip", "flatten", "repeat", "take", "compress", "__len__",  # not conj: a real array's is itself
}
# Attributes that are never arrays sharing the receiver's memory.
SCALAR_ATTRIBUTES = {"shape", "ndim", "size", "dtype", "nbytes", "itemsize", "strides", "flags"}
# The memory every free name that may hold an array or container may share (_Objects.name).
FREE_MEMORY = ("free", "*")
# What a free name denotes that holds no memory a write could reach.
_NO_MEMORY = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
              type, numpy.ufunc, bool, int, float, complex, str, bytes, type(None))
# Binary operators that concatenate or repeat sequences (their result holds the operands' items).
_SEQUENCE_OPS = (gast.Add, gast.Mult)


class _Objects:
    """Points-to sets: name -> the abstract objects its value may share memory with."""

    def __init__(self, node, stmts, lookup=None):
        self.lookup = lookup   # a free name -> its object now (NameError: unknown)
        params = [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        if node.args.vararg is not None:
            params.append(node.args.vararg.id)
        if node.args.kwarg is not None:
            params.append(node.args.kwarg.id)
        self.params = params
        self.pts = {p: {("param", p)} for p in params}
        self.sequences = {("param", p) for p in params}  # objects that may be lists or tuples
        self.bindings = {}  # name -> [statements binding it to a value that shares memory]
        self.locals = set(params) | {n.id for st in stmts for n in ast_util.walk(st)
                                     if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        assigns = [s for s in stmts if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)]
        stores = [s for s in stmts if _stored_into(s) is not None]
        changed = True
        while changed:
            changed = False
            for s in assigns:
                target = s.targets[0].id
                new = self.value(s.value, s)
                old = self.pts.setdefault(target, set())
                if not new <= old:
                    old |= new
                    changed = True
            for s in stores:   # L.append(v), L[i] = v: L's objects take v's
                target, values = _stored_into(s)
                if target not in self.pts or not isinstance(s, gast.Expr) and not \
                        self.pts[target] & self.sequences:   # b[i] = v copies into an array
                    continue
                new = set().union(*[self.value(v, s) for v in values]) - {("new", id(s))}
                old = self.pts[target]
                if not new <= old:
                    old |= new
                    changed = True
        for s in assigns:
            if self.value(s.value, s) - {("new", id(s))}:
                self.bindings.setdefault(s.targets[0].id, []).append(s)

    def name(self, name):
        """A local's objects; a free name (a global or closure array) is an object of its
        own, which may also be another free name's memory (FREE_MEMORY)."""
        if name in self.pts:
            return self.pts[name]
        if name in self.locals:
            return set()
        self.sequences.add(("free", name))
        return {("free", name), FREE_MEMORY} if self.may_hold_memory(name) else {("free", name)}

    def may_hold_memory(self, name):
        """Whether the free name ``name`` may denote an array, or a container or object
        holding one (not a module, function, class or number); unknown names may."""
        if self.lookup is None:
            return True
        try:
            obj = self.lookup(name)
        except (NameError, AttributeError):
            return True
        return not isinstance(obj, _NO_MEMORY)

    def of(self, node):
        if isinstance(node, gast.Name):
            return self.name(node.id)
        if isinstance(node, gast.Call):   # the arguments and a method's receiver, not the callee
            parts = list(node.args) + [k.value for k in node.keywords]
            if isinstance(anno.getanno(node, Static.PRIMITIVE), Method):
                parts.append(node.func.value)
            return set().union(*[self.of(p) for p in parts]) if parts else set()
        out = set()
        for n in ast_util.walk(node):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                out |= self.name(n.id)
        return out

    def maybe_sequence(self, node):
        return bool(self.of(node) & self.sequences)

    def shallow_copy(self, call):
        """Whether ``call`` is ``v.copy()`` of what may be a list or dict (one, or an argument
        or free name): a new container holding ``v``'s items, not memory of its own."""
        prim = anno.getanno(call, Static.PRIMITIVE)
        if not (isinstance(prim, Method) and str(prim) == "copy" and isinstance(call.func, gast.Attribute)):
            return False
        return any(o in self.sequences or o[0] != "new" for o in self.of(call.func.value))

    def value(self, value, s):
        """The objects the value bound by ``s`` may share: a fresh one of its own, plus
        those of every operand it may be a view, copy or container of."""
        fresh = ("new", id(s))
        if isinstance(value, gast.Name):
            return set(self.of(value))
        if isinstance(value, gast.Constant):
            return {fresh}
        if isinstance(value, gast.BinOp):
            operands = (value.left, value.right)
            if isinstance(value.op, _SEQUENCE_OPS) and any(self.maybe_sequence(o) for o in operands):
                self.sequences.add(fresh)
                return {fresh} | self.of(value.left) | self.of(value.right)
            return {fresh}
        if isinstance(value, (gast.UnaryOp, gast.Compare)):
            return {fresh}
        if isinstance(value, (gast.List, gast.Tuple, gast.Dict, gast.Set)):
            self.sequences.add(fresh)
            return {fresh} | self.of(value)
        if isinstance(value, gast.Subscript):
            if self.maybe_sequence(value.value):
                self.sequences.add(fresh)
            return {fresh} | self.of(value.value)
        if isinstance(value, gast.Attribute):
            if value.attr in SCALAR_ATTRIBUTES:
                return {fresh}
            return {fresh} | self.of(value.value)
        if isinstance(value, gast.Call):
            if _returns_fresh(value) and not self.shallow_copy(value):
                return {fresh}
            self.sequences.add(fresh)  # np.split gives a list of views
            return {fresh} | self.of(value)
        self.sequences.add(fresh)
        return {fresh} | self.of(value)


# Methods that store their arguments in the list, dict or set they are called on.
_STORING_METHODS = {"append", "extend", "insert", "add", "update", "setdefault", "appendleft",
                    "extendleft"}


def _stored_into(s):
    """``(name, [values])`` where statement ``s`` stores values in the container a local
    name holds (``L.append(v)``, ``L.insert(0, v)``, ``L[i] = v``), else None."""
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
        func = s.value.func
        if isinstance(func, gast.Attribute) and func.attr in _STORING_METHODS \
                and isinstance(func.value, gast.Name) and (s.value.args or s.value.keywords):
            return func.value.id, list(s.value.args) + [k.value for k in s.value.keywords]
    if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript) \
            and isinstance(s.targets[0].value, gast.Name):   # (also d[k] += [v]: d holds v)
        return s.targets[0].value.id, [s.value]
    return None


def _returns_fresh(call):
    """Whether ``call`` certainly returns memory of its own (never a view of an argument)."""
    prim = anno.getanno(call, Static.PRIMITIVE)
    keywords = {k.arg: k.value for k in call.keywords}
    if "out" in keywords:
        return False
    if isinstance(prim, Method):
        if prim == "astype":
            copy = keywords.get("copy")
            return copy is None or (isinstance(copy, gast.Constant) and copy.value is True)
        return str(prim) in FRESH_METHODS
    if isinstance(prim, numpy.ufunc):
        return len(call.args) <= prim.nin
    if prim is None:
        return False
    if prim is runtime.caller_of:   # (a box the function reads only to write back into)
        return True
    module = str(getattr(prim, "__module__", "") or "").split(".")[0]
    name = getattr(prim, "__name__", None)
    if module in ("numpy", "cupy", "cupyx", "scipy") and name in FRESH_FUNCTIONS:
        return True
    if module == "builtins" and name in FRESH_BUILTINS:
        return True
    if module == "math":   # numbers
        return True
    if module in ("numpy", "cupy") and name == "array":
        copy = keywords.get("copy")
        return len(call.args) <= 2 and (copy is None or (isinstance(copy, gast.Constant) and copy.value is True))
    return False


# ----- statements in order, and liveness -----


_METADATA = frozenset({"shape", "ndim", "dtype", "size"})


def _value_reads(node):
    """``reads(node)`` less the names read for their shape or dtype only (``rt.shape_of(v)``,
    ``v.shape``): an indexed write into an array changes values, never these (a gradient
    read again pushes ``rt.shape_of(h_item)`` after ``h[t] = ...``: grad of grad of
    ``h[t] += v`` was refused for it). Not for a list's: ``lst[1:2] = [a, b]`` resizes it."""
    from srcgrad import runtime
    meta = set()
    for n in ast_util.walk(node):
        if isinstance(n, gast.Call) and len(n.args) == 1 and isinstance(n.args[0], gast.Name) \
                and not n.keywords and anno.getanno(n, Static.PRIMITIVE) is runtime.shape_of:
            meta.add(id(n.args[0]))
        elif isinstance(n, gast.Attribute) and n.attr in _METADATA and isinstance(n.value, gast.Name):
            meta.add(id(n.value))
    if not meta:
        return reads(node)
    return {n.id for n in ast_util.nodes_of(node, gast.Name)
            if n.ctx.__class__ is gast.Load and id(n) not in meta}


class _Liveness:
    """For each simple statement, the names that may be read after it (before being rebound);
    ``reads``: what an expression reads (``_value_reads``: its values only)."""

    def __init__(self, node, at_exit, reads=reads):
        self.after = {}
        self.reads = reads
        self.block(node.body, set(at_exit), set(at_exit))

    def block(self, body, live, loop_exit):
        for s in reversed(body):
            live = self.stmt(s, live, loop_exit)
        return live

    def stmt(self, s, live, loop_exit):
        if isinstance(s, gast.If):
            return self.reads(s.test) | self.block(s.body, live, loop_exit) | self.block(s.orelse, live, loop_exit)
        if isinstance(s, (gast.For, gast.While)):
            header = self.reads(s.iter) if isinstance(s, gast.For) else self.reads(s.test)
            target = {n.id for n in ast_util.walk(s.target) if isinstance(n, gast.Name)} \
                if isinstance(s, gast.For) else set()
            head = set(live) | header
            while True:
                body_in = self.block(s.body, head, live)
                new = set(live) | header | (body_in - target)
                if new <= head:
                    return head
                head |= new
        self.after[id(s)] = set(live)
        if isinstance(s, gast.Break):
            return set(live) | loop_exit
        if isinstance(s, gast.Return):
            return self.reads(s) if s.value is not None else set()
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            return (set(live) - {s.targets[0].id}) | self.reads(s.value)
        used = self.reads(s)
        if isinstance(s, gast.Assign):   # b[i] = v reads b (its other entries stay)
            used |= {n.id for n in ast_util.walk(s.targets[0]) if isinstance(n, gast.Name)}
        return set(live) | used


# ----- in-place writes -----

def _written(s):
    """(name written in place, index written or None for the whole value) of ``s``, or None."""
    if isinstance(s, gast.Assign):
        target = s.targets[0]
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            return target.value.id, target.slice
        if isinstance(target, gast.Name) and anno.getanno(s, Static.AUGMENTED):
            return target.id, None
        field = anno.getanno(s, Static.FIELD)
        if isinstance(target, gast.Name) and field is not None:   # self.h = v (attribute_state.py)
            return target.id, gast.Constant(value=field[0], kind=None) if field[1] else None
        return None
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
        func = s.value.func
        if isinstance(func, gast.Attribute) and func.attr == "append" and isinstance(func.value, gast.Name):
            return func.value.id, None
    return None


def check(node, info, display=lambda name: name, live_at_exit=(), bindings=None):
    """Annotate each in-place write with the run-time alias checks it needs (Static.ALIAS_CHECK);
    returns the argument pairs to check on entry, ``[(written, other, error)]``
    (reverse.build's ``param_checks``).

    ``live_at_exit``: names read after the function body (wrt names of locals).
    ``bindings``: the names srcgrad bound to objects itself (an inlined helper's default).
    """
    param_checks = []
    stmts = list(walk_statements(node.body))
    writes = [(s, _written(s)) for s in stmts]
    writes = [(s, w) for s, w in writes if w is not None]
    if not writes:
        return param_checks
    bindings = bindings or {}

    def lookup(name):
        return bindings[name] if name in bindings else info.lookup(name)

    _refuse_outside_instances(node, stmts, writes, info)
    objects = _Objects(node, stmts, lookup)
    liveness = _Liveness(node, live_at_exit)
    value_liveness = []   # made when an array's item is written: its aliases' shapes stay
    reaches_params, reaches_free = set(), set()
    private = _private_tapes(node)
    for s, (base, index) in writes:
        if base in private:   # no other name can hold this list: an append reaches no one
            continue
        mine = objects.name(base)   # a local's objects, or a global's (G[0] = v)
        if (anno.getanno(s, Static.FIELD) or (None, True))[1]:   # (self.h = v writes no array)
            reaches_params |= {o[1] for o in mine if o[0] == "param"}
            reaches_free |= {o[1] for o in mine if o[0] == "free" and o != FREE_MEMORY
                             and objects.may_hold_memory(o[1])}
        if index is not None and mine and all(o[0] == "new" for o in mine) \
                and not mine & objects.sequences:   # b[i] = v into an array made here
            if not value_liveness:
                value_liveness.append(_Liveness(node, live_at_exit, _value_reads))
            live = value_liveness[0].after.get(id(s), set())
        else:
            live = liveness.after.get(id(s), set())
        checks = []
        for other in sorted(live - {base}):
            if objects.name(other) & mine:
                checks.append((other, index, _error(s, info, base, other, objects, display)))
        if index is not None and anno.getanno(s, Static.AUGMENTED):
            # b[i] op= v on a list updates the item b[i] in place: its other items read
            # later must not share it
            anno.setanno(s, Static.ITEM_ALIAS, True)
            if base in live and objects.maybe_sequence(gast.Name(id=base, ctx=gast.Load(),
                                                                 annotation=None, type_comment=None)):
                anno.setanno(s, Static.ITEM_ALIAS, _error(s, info, base, base, objects, display))
                checks = checks or [("None", index, None)]   # the other items only
        if checks:
            anno.setanno(s, Static.ALIAS_CHECK, checks)
    # Arguments are objects of their own only if the caller passed distinct memory
    # (from each other, and from the global or closure arrays the function reads).
    callees = {id(_root(n.func)) for n in ast_util.walk(node) if isinstance(n, gast.Call)}
    free = sorted({n.id for n in ast_util.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
                   and n.id not in objects.locals and id(n) not in callees
                   and objects.may_hold_memory(n.id)})   # (not a class: dataclass_new(Cell, ...))
    for p in sorted(reaches_params):
        for q in objects.params + free:
            if q != p:
                param_checks.append((p, q, _argument_error(node, info, p, q, display)))
    for g in sorted(reaches_free - reaches_params):   # G[0] = v must not reach an argument
        for q in objects.params:
            param_checks.append((g, q, _argument_error(node, info, g, q, display, free=True)))
    return param_checks


def _refuse_outside_instances(node, stmts, writes, info):
    """Refuse an attribute store (``self.h = v``: Static.FIELD) into an instance the function
    did not build: one it reaches through plain copies of names from something other than
    ``rt.dataclass_new`` (an argument, an item of a list, a global), whose caller's object
    Python would change."""
    from srcgrad import runtime
    fields = [s for s, _ in writes if anno.getanno(s, Static.FIELD) is not None]
    if not fields:
        return
    params = set(objects_params(node))
    binds = {}
    for s in stmts:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            binds.setdefault(s.targets[0].id, []).append(s)

    def outside(start):
        """The name or statement that gives ``start`` an instance from outside, or None."""
        seen, todo = set(), [start]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in params or n not in binds:
                return n
            for b in binds[n]:
                v = b.value
                if isinstance(v, gast.Name):
                    todo.append(v.id)
                elif anno.getanno(b, Static.FIELD) is not None:
                    todo.append(v.args[0].id)
                elif not (isinstance(v, gast.Call)
                          and anno.getanno(v, Static.PRIMITIVE) is runtime.dataclass_new):
                    return b
        return None

    for s in fields:
        found = outside(s.targets[0].id)
        if found is None:
            continue
        attr = anno.getanno(s, Static.FIELD)[0]
        what = f"the argument {found!r}" if found in params else "an object the function did not build " \
            "(an argument, an item of a container, a global)"
        message = (f"storing the attribute {attr!r} here would change {what}, which the caller "
                   f"holds; srcgrad leaves the caller's objects as they were, so it refuses this")
        hint = ("Build the object inside the function (model = Model(params)), or return the new "
                "value and keep it in a local variable.")
        origin = anno.getanno(s, Static.ORIGIN)
        if origin is None:
            raise UnsupportedError(message, info.filename, hint=hint)
        raise origin.error(UnsupportedError, message, hint)


def sharing(node, names, info=None, bindings=None):
    """The locals that may share memory with any of ``names`` (a view, a helper's result
    that is its argument: ``np.linalg.matrix_power(a, 1)`` is ``a``), ``names`` included."""
    names = set(names)
    if not names:
        return names
    return sharer(node, info, bindings)(names)


def sharer(node, info=None, bindings=None):
    """``sharing`` as a function of ``names``, the analysis of ``node`` made once, when first
    asked (the tape asks once per indexed write it may drop)."""
    bindings = bindings or {}
    objects = []

    def lookup(name):
        if name in bindings:
            return bindings[name]
        if info is None:
            raise NameError(name)
        return info.lookup(name)

    def of(names):
        names = set(names)
        if not objects:
            objects.append(_Objects(node, list(walk_statements(node.body)), lookup))
        pts = objects[0].pts
        theirs = set().union(*[pts.get(n, set()) for n in names]) - {FREE_MEMORY}
        return names | {n for n, mine in pts.items() if mine & theirs}
    return of


def _private_tapes(node):
    """Lists no other name can hold: bound once, to ``[]``, and read only to append to
    (``L.append(v)``) or pop from (``rt.tape_pop(L)``, which gives an item; ``rt.tape_unpop``
    reads its length): the tapes of
    a gradient read again (pipeline.compose_gradient), whose appends need no alias check."""
    from srcgrad import runtime
    bound, allowed = {}, set()
    for n in ast_util.walk(node):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name):
            empty = isinstance(n.value, gast.List) and not n.value.elts
            bound[n.targets[0].id] = bound.get(n.targets[0].id, 0) + (1 if empty else 2)
        elif isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                and n.func.attr == "append" and isinstance(n.func.value, gast.Name):
            allowed.add(id(n.func.value))
        elif isinstance(n, gast.Call) and n.args and isinstance(n.args[-1], gast.Name) \
                and anno.getanno(n, Static.PRIMITIVE) in (runtime.tape_pop, runtime.tape_unpop):
            allowed.add(id(n.args[-1]))   # tape_unpop(dtape, dv, L) reads L's length only
        elif isinstance(n, gast.Call) and len(n.args) == 2 and isinstance(n.args[1], gast.Tuple) \
                and anno.getanno(n, Static.PRIMITIVE) is runtime.copy_restored:
            # copy_restored(out, (L, ...)) compares L's identity with what is returned
            allowed.update(id(e) for e in n.args[1].elts if isinstance(e, gast.Name))
    private = {name for name, count in bound.items() if count == 1}
    for n in ast_util.walk(node):
        if isinstance(n, gast.Name) and n.id in private and id(n) not in allowed \
                and not isinstance(n.ctx, gast.Store):
            private.discard(n.id)
    return private


def _root(func):
    while isinstance(func, gast.Attribute):
        func = func.value
    return func


def _binding_line(name, other, objects):
    """A statement that made ``name`` share memory with ``other``, for the message."""
    theirs = objects.name(other)
    for s in objects.bindings.get(name, ()):
        if objects.value(s.value, s) & theirs:
            return s
    return None


def _shown(name, objects, info, display, depth=3):
    """``name`` as the user wrote it: their variable's name, or for a value srcgrad named
    itself (``y_item_2`` for ``y[::2]``, ``np.copyto(y[:3], v)``'s view) the expression it
    was bound to, its names shown the same way (only an error's message pays for this)."""
    shown = display(name)
    found = objects.bindings.get(name, ())
    renamed = getattr(getattr(display, "__self__", None), "original", {})   # (naming.Namer)
    if shown != name or name in renamed or depth == 0 or len(found) != 1 \
            or not isinstance(found[0], gast.Assign) \
            or re.search(rf"\b{re.escape(name)}\b", "\n".join(info.source_lines or ())):
        return shown
    value = templates.clone(found[0].value)
    for n in ast_util.walk(value):
        if isinstance(n, gast.Name):
            inner = _shown(n.id, objects, info, display, depth - 1)
            n.id = inner if inner.isidentifier() or inner[-1:] in ")]" else f"({inner})"
    try:
        return ast.unparse(gast.gast_to_ast(value))
    except Exception:   # (an expression ast cannot print: the name srcgrad gave it)
        return shown


def _error(write, info, base, alias, objects, display):
    where = _binding_line(alias, base, objects) or _binding_line(base, alias, objects)
    origin = anno.getanno(where, Static.ORIGIN) if where is not None else None
    line = f" (line {origin.lineno}: {origin.source_line.strip()})" if origin is not None else ""
    shown_base, shown_alias = (_shown(n, objects, info, display) for n in (base, alias))
    changed = f"{shown_alias!r}, which shares" if alias != base else \
        f"another item of {shown_alias!r}, sharing"   # b[i] op= v: an item held twice
    message = (f"this in-place update of {shown_base!r} would also change {changed} its "
               f"memory{line} and is read afterwards; srcgrad differentiates values, "
               f"so it refuses rather than guess")
    if anno.getanno(write, Static.FIELD) is not None:   # self.h = v (attribute_state.py)
        hint = (f"Read the object through one name only (not {shown_alias!r} beside {shown_base!r}), "
                f"or build the attribute's value anew (a list of its own) for each object.")
    elif shown_base.isidentifier():
        hint = (f"Give {shown_base!r} memory of its own before writing into it, e.g. "
                f"{shown_base} = {shown_base}.copy(), or take {shown_alias!r} as a copy.")
    else:   # a view srcgrad named (np.copyto(y[:3], v)): write through its array instead
        hint = (f"Write through the array with an indexed assignment ({shown_base} = ...), or "
                f"take {shown_alias!r} as a copy.")
    origin = anno.getanno(write, Static.ORIGIN)
    if origin is None:
        return UnsupportedError(message, info.filename, hint=hint)
    return origin.error(UnsupportedError, message, hint)


def _argument_error(node, info, written, other, display, free=False):
    """The error of an argument sharing memory with a value ``written`` in place; ``free``:
    ``written`` is a global (or closure) array and ``other`` the argument."""
    kind = "argument" if other in objects_params(node) else "global (or closure) array"
    first = f"the global (or closure) array {display(written)!r} and the argument" if free \
        else f"the argument {display(written)!r} and the {kind}"
    message = (f"{first} {display(other)!r} share memory, and "
               f"{info.fn.__qualname__} writes into {display(written)!r} in place (directly or "
               f"through a view); srcgrad differentiates values, so it refuses rather than guess")
    copied = other if free else written
    hint = f"Pass a copy, e.g. {info.fn.__qualname__}(..., {display(copied)}.copy(), ...)."
    origin = info.origin(node)
    if origin is None:
        return UnsupportedError(message, info.filename, info.first_lineno, hint=hint)
    return origin.error(UnsupportedError, message, hint)


def objects_params(node):
    return [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
