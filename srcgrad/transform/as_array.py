"""Where a built-in rule expects an array, a list or tuple becomes the array NumPy makes of it.

Two places do it. A-normal form (anf.py), for a display written in a call:
``np.mean([x, y])`` is computed as ``np.mean(rt.as_array([x, y]))``, so the rule sees
one array (``array_arguments``). The pipeline, once the activity analysis knows which
names hold lists, for a name: ``np.mean(values)`` after ``values.append(...)`` in a
loop becomes ``values_array = rt.as_array(values); np.mean(values_array)``
(``as_array_arguments``). Parameters that take sequences (``np.stack(arrays)``,
``sum(iterable)``) keep theirs, and so do srcgrad's own helpers.
"""

import gast

from srcgrad import anno, rules, runtime, templates
from srcgrad.ast_util import name
from srcgrad.rules import Method
from srcgrad.transform.base import Base
from srcgrad import ast_util

Static = anno.Static



def is_runtime_helper(primitive):
    """Whether ``primitive`` is one of srcgrad's own run-time helpers (``rt.<name>``)."""
    module = getattr(primitive, "__module__", None) or ""
    return module == "srcgrad.runtime" or module.startswith("srcgrad.runtime.")


def bind(namer, info, bindings, hint, obj):
    """The name the generated code reads ``obj`` by (one per object, added to ``bindings``)."""
    for bound_name, bound in bindings.items():
        if bound is obj:
            return bound_name
    bound_name = namer.new(hint)
    bindings[bound_name] = info.extra[bound_name] = obj
    return bound_name


def _is_literal(node):
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return _is_literal(node.operand)
    return isinstance(node, (gast.List, gast.Tuple)) and all(_is_literal(e) for e in node.elts)


def is_display(node):
    """A list or tuple display of values (not only literals; no starred elements)."""
    return isinstance(node, (gast.List, gast.Tuple)) and bool(node.elts) and not _is_literal(node) \
        and not any(isinstance(e, gast.Starred) for e in node.elts)


def _bind_arguments(rule, primitive, args, keywords):
    """The rule's signature bound to a call's argument nodes, or None when they do not fit."""
    receiver = [None] if isinstance(primitive, Method) else []
    try:
        return rule.signature.bind(None, None, *receiver, *args, **{k.arg: k.value for k in keywords})
    except TypeError:
        return None   # refused, naming the call, when it is differentiated


def array_arguments(primitive, args, keywords, bind_name):
    """``args`` and ``keywords`` of a call of ``primitive`` with each display passed where
    its rule expects an array made ``rt.as_array(display)`` (nested displays too).
    ``bind_name(hint, obj)`` is the name the generated code reads ``obj`` by."""
    if not any(is_display(a) for a in args + [k.value for k in keywords]):
        return args, keywords
    rule = rules.lookup(primitive)
    if rule is None or is_runtime_helper(primitive):
        return args, keywords
    arrays = templates.array_parameters(rule)
    bound = _bind_arguments(rule, primitive, args, keywords)
    if bound is None:
        return args, keywords
    made = {id(v): as_array(v, bind_name) for p, v in bound.arguments.items()
            if p in arrays and is_display(v)}
    if (getattr(primitive, "__module__", None) or "").startswith("numpy"):
        # np.concatenate([x, [y, 1.0]]): NumPy makes each element of a sequence of
        # arrays an array (builtins' sum([...], []) joins lists: not those).
        made.update({id(v): type(v)(elts=[as_array(e, bind_name) if is_display(e) else e
                                          for e in v.elts], ctx=gast.Load())
                     for p, v in bound.arguments.items()
                     if p in rule.sequences and isinstance(v, (gast.List, gast.Tuple))
                     and any(is_display(e) for e in v.elts)})
    if not made:
        return args, keywords
    return ([made.get(id(a), a) for a in args],
            [gast.keyword(arg=k.arg, value=made.get(id(k.value), k.value)) for k in keywords])


def as_array(display, bind_name):
    """``rt.as_array(display)``, its element displays made arrays first."""
    elts = [as_array(e, bind_name) if is_display(e) else e for e in display.elts]
    call = gast.Call(func=name(bind_name("as_array", runtime.as_array)),
                     args=[gast.List(elts=elts, ctx=gast.Load())], keywords=[])
    for n in ast_util.walk(call):
        anno.copyanno(display, n, Static.ORIGIN)
    return call


class _SequenceArguments(Base):
    """A name in ``sequences`` passed where a rule expects an array: ``rt.as_array(name)``
    assigned to a new name just before the statement."""

    def __init__(self, info, namer, bindings, sequences):
        super().__init__(info)
        self.namer = namer
        self.bindings = bindings
        self.sequences = sequences
        self.changed = False

    def generic_visit(self, s):
        self.visit_children(s)
        call = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
        primitive = anno.getanno(call, Static.PRIMITIVE) if isinstance(call, gast.Call) else None
        rule = rules.lookup(primitive) if primitive is not None else None
        if rule is None or is_runtime_helper(primitive) or anno.getanno(s, Static.NO_ADJOINT):
            return s
        arrays = templates.array_parameters(rule)
        bound = _bind_arguments(rule, primitive, call.args, call.keywords)
        made = {} if bound is None else {
            id(v): v for p, v in bound.arguments.items()
            if p in arrays and isinstance(v, gast.Name) and v.id in self.sequences}
        out = []
        for key, value in list(made.items()):
            made[key] = self.convert(value, out, s)
        call.args = [made.get(id(a), a) for a in call.args]
        for k in call.keywords:
            k.value = made.get(id(k.value), k.value)
        return out + [s]

    def convert(self, value, out, stmt):
        helper = bind(self.namer, self.info, self.bindings, "as_array", runtime.as_array)
        call = gast.Call(func=name(helper), args=[name(value.id)], keywords=[])
        anno.setanno(call, Static.PRIMITIVE, runtime.as_array)
        temp = self.namer.new(f"{value.id}_array")
        assign = gast.Assign(targets=[name(temp, True)], value=call, type_comment=None)
        anno.setanno(assign, Static.ORIGIN, anno.getanno(stmt, Static.ORIGIN))
        out.append(assign)
        self.changed = True
        return name(temp)


def as_array_arguments(node, sequences, ctx):
    """A name holding a list or tuple (``sequences``, from the activity analysis) passed
    where a built-in rule expects an array becomes ``rt.as_array(name)``, the array NumPy
    makes of it. Returns whether ``node`` changed (the activity analysis must then run
    again). ``ctx``: the CompileContext (its namer, and bindings for ``rt.as_array``)."""
    visitor = _SequenceArguments(ctx.info, ctx.namer, ctx.bindings, sequences)
    node.body = visitor.visit_block(node.body)
    return visitor.changed
