"""Calls that write into an array are rewritten as indexed writes, or refused.

Requires A-normal form (runs right after it). srcgrad differentiates the values
names hold; a call that changes an array in place (``np.negative(y, out=y)``,
``np.copyto(y, x)``, ``y.fill(0.0)``, ``y.sort()``) changes a value without a
binding, and a forward sweep that ran it while the adjoint ignored it would give
a wrong gradient. One rule covers them all, from one table:

* any call with ``out=`` (or a ufunc given its outputs positionally) becomes the
  call without it, assigned into the output: ``t = np.f(a, b); y[...] = t``,
  which reverse mode differentiates like any indexed write (and ``z = np.f(a,
  out=y)`` binds ``z = y`` after it, the array NumPy returns);
* MUTATING_FUNCTIONS / MUTATING_METHODS map the others to a rewrite
  (``np.copyto(y, x)`` -> ``y[...] = x``, ``y.fill(v)`` -> ``y[...] = v``,
  ``y.sort(axis)`` -> ``y[...] = np.sort(y, axis)``) or
  to None: refused at compile time, naming the call, file and line.
"""

import inspect

import gast
import numpy

from srcgrad import anno
from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.rules import Method
from srcgrad.transform.base import Base

Static = anno.Static

# Name of a NumPy/CuPy function that writes into its first argument -> its rewrite, or None
# (refused). A rewrite takes the call and returns (the written name, the value written into
# all of it: an atom, or a call), or None to refuse this particular call.


def _copyto(call):
    """``np.copyto(y, x)`` -> ``y[...] = x``; with ``where=m``: ``y[...] = np.where(m, x, y)``."""
    keywords = {k.arg: k.value for k in call.keywords}
    args = list(call.args)
    if len(args) == 4 and "where" not in keywords:   # np.copyto(y, x, casting, where)
        keywords["where"] = args.pop()
    if len(args) == 3 and "casting" not in keywords:
        keywords["casting"] = args.pop()
    if len(args) != 2 or set(keywords) - {"casting", "where"}:
        return None
    where = keywords.get("where")
    if where is None or isinstance(where, gast.Constant) and where.value is True:
        return args[0], args[1]
    value = gast.Call(func=name("np_where"), args=[where, args[1], gast.Name(
        id=args[0].id, ctx=gast.Load(), annotation=None, type_comment=None)], keywords=[])
    anno.setanno(value, Static.PRIMITIVE, numpy.where)
    return args[0], value


def _ufunc_at(call):
    """``np.add.at(a, index, v)`` -> ``a[...] = rt.ufunc_add_at(a, index, v)`` (repeated
    indices add each time), ``np.maximum.at(a, index, v)`` -> ``a[...] =
    rt.ufunc_extremum_at(a, index, v, "maximum")`` (and ``minimum``); the other ufuncs'
    ``.at`` are refused."""
    from srcgrad import runtime
    owner = getattr(getattr(anno.getanno(call, Static.PRIMITIVE), "__self__", None), "__name__", None)
    if owner not in ("add", "maximum", "minimum") or len(call.args) != 3 or call.keywords:
        return None
    if owner == "add":
        value = gast.Call(func=name("ufunc_add_at"), args=list(call.args), keywords=[])
        anno.setanno(value, Static.PRIMITIVE, runtime.ufunc_add_at)
    else:
        value = gast.Call(func=name("ufunc_extremum_at"), args=list(call.args) + [
            gast.Constant(value=owner, kind=None)], keywords=[])
        anno.setanno(value, Static.PRIMITIVE, runtime.ufunc_extremum_at)
    return call.args[0], value


def _flat_write(how, names, key, values, mode=None, method=False):
    """A rewrite of ``np.fill_diagonal`` / ``np.put`` / ``np.putmask`` / ``np.place`` (or
    ``a.put``: ``method``) as ``a[...] = rt.flat_write(a, how, key, values, mode)``;
    ``names``: the call's parameters in order, ``key``/``values``/``mode`` among them."""
    from srcgrad import runtime

    def rewrite(call):
        given = dict(zip(names, ([call.func.value] if method else []) + list(call.args)))
        if len(given) < len(([call.func.value] if method else []) + list(call.args)):
            return None
        for k in call.keywords:
            if k.arg not in names or k.arg in given:
                return None
            given[k.arg] = k.value
        if not isinstance(given.get(names[0]), gast.Name) or key not in given and how != "diagonal" \
                or values not in given:
            return None
        args = [given[names[0]], gast.Constant(value=how, kind=None),
                given.get(key, gast.Constant(value=False, kind=None)), given[values]]
        if mode in given:
            args.append(given[mode])
        value = gast.Call(func=name("flat_write"), args=args, keywords=[])
        anno.setanno(value, Static.PRIMITIVE, runtime.flat_write)
        return given[names[0]], value
    return rewrite


MUTATING_FUNCTIONS = {
    "copyto": _copyto,
    "fill_diagonal": _flat_write("diagonal", ("a", "val", "wrap"), "wrap", "val"),
    "put": _flat_write("put", ("a", "ind", "v", "mode"), "ind", "v", "mode"),
    "putmask": _flat_write("putmask", ("a", "mask", "values"), "mask", "values"),
    "place": _flat_write("place", ("arr", "mask", "vals"), "mask", "vals"),
    "shuffle": None,
    "put_along_axis": None, "at": _ufunc_at,  # np.add.at, np.maximum.at, np.minimum.at; the others refused
}


def _fill(call):
    if len(call.args) != 1 or call.keywords:
        return None
    return call.func.value, call.args[0]


def _sort(call):
    """``y.sort(axis, kind)`` -> ``y[...] = np.sort(y, axis, kind)`` (differentiated by np.sort's rule)."""
    if call.keywords and {k.arg for k in call.keywords} - {"axis", "kind"} or len(call.args) > 2:
        return None
    value = gast.Call(func=name("np_sort"), args=[call.func.value] + list(call.args),
                      keywords=list(call.keywords))
    anno.setanno(value, Static.PRIMITIVE, numpy.sort)
    return call.func.value, value


# Array and list methods that change their receiver. ``append`` is differentiated
# by reverse mode itself (a list grows), so it is not listed.
MUTATING_METHODS = {
    "fill": _fill,
    "sort": _sort, "partition": None,
    "put": _flat_write("put", ("a", "ind", "v", "mode"), "ind", "v", "mode", method=True), "resize": None, "itemset": None,
    "setfield": None, "byteswap": None, "setflags": None,
    "extend": None, "insert": None, "remove": None, "pop": None, "clear": None, "reverse": None,
    "update": None, "setdefault": None, "popitem": None, "shuffle": None,
    "__setitem__": None, "__delitem__": None, "__iadd__": None, "__isub__": None, "__imul__": None,
    "__itruediv__": None,
}

_HINTS = {
    "sort": "Write y = np.sort(y, axis) (a new array) instead.",
}
# The methods transform/methods.py rewrites where they are a statement of their own on a
# local name: anywhere else (inside an expression, on self.xs) they land here.
_OWN_STATEMENT = ("Call it as a statement of its own on a local list or dict (`v = xs.pop()`, "
                  "`xs.extend(ys)`; `xs = self.xs.copy()` first for an attribute): srcgrad "
                  "rewrites that form. (A pop() or setdefault() inside an expression is moved "
                  "to one of its own, except where the statement reads the list before it, or "
                  "evaluates it only sometimes: a branch of `a if c else b`, right of "
                  "`and`/`or`, in a lambda or comprehension.)")
for _method in ("pop", "extend", "insert", "reverse", "update", "setdefault", "append"):
    _HINTS[_method] = _OWN_STATEMENT


def _ellipsis():
    return gast.Constant(value=Ellipsis, kind=None)



def _is_numpy(prim):
    """Whether ``prim`` is a NumPy/CuPy callable (a function, a ufunc or a method of one)."""
    owner = getattr(prim, "__self__", None)
    for obj in (prim, owner, type(owner) if owner is not None else None):
        module = str(getattr(obj, "__module__", "") or "").split(".")[0]
        if module in ("numpy", "cupy", "cupyx"):
            return True
    return isinstance(prim, numpy.ufunc) or isinstance(owner, numpy.ufunc) \
        or isinstance(owner, numpy.random.Generator) or isinstance(owner, numpy.random.RandomState)


class Lowering(Base):
    """``visit_Expr``/``visit_Assign`` of a call that writes in place: its indexed writes."""

    def __init__(self, info, namer):
        super().__init__(info)
        self.namer = namer
        self.bindings = {}   # names the rewrites call (np_sort -> numpy.sort)
        self.callees = {}

    def visit_Expr(self, s):
        return self.visit_call(s, s.value, None) if isinstance(s.value, gast.Call) else s

    def visit_Assign(self, s):
        return self.visit_call(s, s.value, s.targets[0]) if isinstance(s.value, gast.Call) else s

    def visit_call(self, s, call, target):
        prim = anno.getanno(call, Static.PRIMITIVE)
        out = self.outputs(call, prim)
        if out is not None:
            return self.out_call(s, call, target, out)
        what = None
        if isinstance(prim, Method):
            if str(prim) in MUTATING_METHODS:
                what, rewrite = f"the in-place method .{prim}()", MUTATING_METHODS[str(prim)]
        elif prim is not None and _is_numpy(prim) and getattr(prim, "__name__", None) in MUTATING_FUNCTIONS:
            what, rewrite = _describe(prim), MUTATING_FUNCTIONS[prim.__name__]
        if what is None:
            return [s]
        written = rewrite(call) if rewrite is not None else None
        if written is None or not isinstance(written[0], gast.Name):
            key = str(prim) if isinstance(prim, Method) else getattr(prim, "__name__", "")
            raise self.error(s, UnsupportedError, f"{what} changes an array or list in place, which "
                             f"srcgrad does not differentiate",
                             _HINTS.get(key, "Compute a new value and assign it (y = ..., or "
                                              "y[...] = new values), so srcgrad sees the change."))
        base, value = written
        stmts = []
        if isinstance(value, gast.Call):   # ANF: an indexed write stores an atom
            callee = anno.getanno(value, Static.PRIMITIVE)
            if callee not in self.callees:
                self.callees[callee] = self.namer.new(value.func.id)
                self.bindings[self.callees[callee]] = callee
            value.func = name(self.callees[callee])
            temp = self.namer.new(f"{base.id}_new")
            stmts.append(self.assign(name(temp, True), value, s))
            value = name(temp)
        stmts.append(self.setitem(base.id, value, s))
        if target is not None:  # y.fill(v) and np.copyto return None
            stmts.append(self.assign(target, gast.Constant(value=None, kind=None), s))
        return stmts

    def outputs(self, call, prim):
        """The ``out`` argument node of ``call`` (keyword, a ufunc's extra positional, or a
        library function's ``out`` parameter given by position), or None."""
        nin = getattr(prim, "nin", None)
        if isinstance(prim, numpy.ufunc) or (nin is not None and hasattr(prim, "nout")):
            if len(call.args) > nin:
                extra = call.args[nin:]
                return extra[0] if len(extra) == 1 else gast.Tuple(elts=extra, ctx=gast.Load())
        elif prim is not None and not isinstance(prim, Method) and _is_numpy(prim):
            names = _positional_names(prim)
            if "out" in names and len(call.args) > names.index("out"):
                # np.dot(a, b, y): the same call with its later arguments named.
                k = names.index("out")
                call.keywords = [gast.keyword(arg=n, value=v) for n, v in zip(names[k:], call.args[k:])] \
                    + call.keywords
                call.args = call.args[:k]
        for k in call.keywords:
            if k.arg == "out":
                return k.value
        return None

    def out_call(self, s, call, target, out):
        prim = anno.getanno(call, Static.PRIMITIVE)
        if isinstance(out, gast.Tuple) and len(out.elts) == 1:
            out = out.elts[0]
        if isinstance(out, gast.Constant) and out.value is None:
            call.keywords = [k for k in call.keywords if k.arg != "out"]
            return [s]
        keywords = {k.arg for k in call.keywords}
        if not isinstance(out, gast.Name) or "where" in keywords or getattr(prim, "nout", 1) != 1:
            raise self.error(s, UnsupportedError, f"this call to {_describe(prim)} writes its result "
                             f"into an existing array (out=) in a way srcgrad cannot rewrite",
                             "Assign the result instead: y[...] = f(...), or y = f(...).")
        call.keywords = [k for k in call.keywords if k.arg != "out"]
        nin = getattr(prim, "nin", None)
        if isinstance(prim, numpy.ufunc) and len(call.args) > nin:
            call.args = call.args[:nin]
        temp = self.namer.new(f"{out.id}_new")
        stmts = [self.assign(name(temp, True), call, s), self.setitem(out.id, name(temp), s)]
        if target is not None:
            stmts.append(self.assign(target, name(out.id), s))
        return stmts

    def setitem(self, base, value, origin_of):
        node = gast.Assign(targets=[gast.Subscript(value=name(base), slice=_ellipsis(), ctx=gast.Store())],
                           value=value, type_comment=None)
        anno.copyanno(origin_of, node, Static.ORIGIN, Static.NO_ADJOINT, Static.GRAD_FLAG)
        return node

    def assign(self, target, value, origin_of):
        node = gast.Assign(targets=[target], value=value, type_comment=None)
        anno.copyanno(origin_of, node, Static.ORIGIN, Static.NO_ADJOINT, Static.GRAD_FLAG)
        return node


# id(a NumPy function) -> (it, ``_positional_names``' answer): its signature read once per
# process (``inspect.signature`` was most of this pass's time; the function is held, so
# its id is not reused).
_POSITIONAL = {}


def _positional_names(prim):
    """Names of the parameters NumPy function ``prim`` takes by position (() when unknown)."""
    found = _POSITIONAL.get(id(prim))
    if found is not None and found[0] is prim:
        return found[1]
    try:
        parameters = inspect.signature(prim).parameters.values()
    except (TypeError, ValueError):
        names = ()
    else:
        names = tuple(p.name for p in parameters if p.kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD))
    _POSITIONAL[id(prim)] = (prim, names)
    return names


def _describe(prim):
    if isinstance(prim, Method):
        return f"the method .{prim}()"
    owner = getattr(prim, "__self__", None)
    name = getattr(prim, "__name__", None) or repr(prim)
    if isinstance(owner, numpy.ufunc):
        return f"numpy.{owner.__name__}.{name}"
    module = getattr(prim, "__module__", None) or "numpy"
    return f"{module.split('.')[0]}.{name}"


def transform(node, ctx):
    """Rewrite (or refuse) the calls in ``node`` that write into arrays or lists in place;
    the names the rewrites bind go into ``ctx.bindings``."""
    lowering = Lowering(ctx.info, ctx.namer)
    node.body = lowering.visit_block(node.body)
    ctx.bindings.update(lowering.bindings)
    return node
