"""Tangent (JVP) rule templates: hand-written, or derived from the adjoint by linearity.

A ``TangentTemplate`` is what forward mode (transform/forward.py) inlines for one
primitive: the primitive's parameters (to bind a call's arguments), the rule's body
and its result expression, whose free names are ``y``, the parameters, their
tangents ``t_<param>``, ``xp`` and ``rt`` (the contract is in srcgrad/rules/__init__.py).

``instantiate`` substitutes a call's arguments and drops every term of a tangent that
is known to be zero (``None``): tangent rules are linear in their tangents, so a
product, quotient or call with a zero tangent operand is zero, and ``a + 0`` is ``a``.
"""

import inspect
import operator
from dataclasses import dataclass

import gast
import numpy

from srcgrad import rules, templates
from srcgrad import runtime as rt
from srcgrad.rules import Method
from srcgrad.templates import clone
from srcgrad import ast_util

# Elementwise primitives that are not ufuncs: their adjoints may be read by linearity.
_ELEMENTWISE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
                operator.neg, operator.pos, operator.mod, numpy.clip, numpy.where,
                Method("clip"), abs, float, rt.power}


def is_elementwise(primitive):
    try:
        if primitive in _ELEMENTWISE:
            return True
    except TypeError:
        return False
    return isinstance(primitive, numpy.ufunc) or getattr(primitive, "__module__", None) == "math" \
        or primitive in (numpy.float64, numpy.float32, numpy.float16)


@dataclass
class TangentTemplate:
    params: list          # inspect.Parameter of the primitive (binding a call's arguments)
    body: list            # simple assignments
    result: object        # the tangent's expression
    locals: frozenset
    output: str = "y"     # the name standing for the primitive's output
    derived: bool = False
    no_tangent: frozenset = frozenset()   # parameters whose adjoint entry is None
    linear: tuple = ()    # declared by linearity (rules.linear): the parameters it is linear in

    def ignores(self, param, method=False):
        """Whether the rule drops ``param``'s tangent although the adjoint does not:
        forward mode refuses such an argument rather than give it a silent zero. A method's
        (``method``) parameter that takes none (``key`` of ``obj.get(x, k)``) carrying one
        means the object is no dict or array (adjoint_rules.check_method_receiver)."""
        if param in self.no_tangent:
            return method
        used = {n.id for s in self.body + [self.result] for n in ast_util.walk(s)
                if isinstance(n, gast.Name)}
        return "t_" + param not in used

    @property
    def signature(self):
        return inspect.Signature(self.params)


_CACHE = {}


def lookup(primitive):
    """The TangentTemplate of ``primitive``, or None where it has none."""
    try:
        key = (rules._key(primitive), rules.VERSION[0])
    except TypeError:
        return None
    if key in _CACHE:
        return _CACHE[key]
    declared = rules.lookup_tangent(primitive)
    if isinstance(declared, rules.Linear):
        found = _linear_template(primitive, declared)
    else:
        found = _hand_written(declared)
    if found is None:
        rule = rules.lookup(primitive)
        if rule is not None and rule.builtin:
            found = _derived(rule, is_elementwise(primitive))
    if found is None and key[0] in rules.COMPLEX_TANGENTS:
        # A rule on complex values holds for real ones too: a helper of complex gradients
        # (rt.conj_over) has only that one, and its operand's kind is not always known
        # (a value popped off a tape).
        found = _hand_written(rules.COMPLEX_TANGENTS[key[0]])
    _CACHE[key] = found
    return found


def lookup_complex(primitive):
    """The TangentTemplate of ``primitive`` on complex values: its ``@complex_tangent``
    rule, its ordinary one where it is complex-safe (rules.COMPLEX_SAFE) or declared
    ``linear`` (the tangent of a real-linear map is the map), else None."""
    try:
        key = rules._key(primitive)
    except TypeError:
        return None
    if key in rules.COMPLEX_TANGENTS:
        cache_key = ("complex", key, rules.VERSION[0])
        if cache_key not in _CACHE:
            _CACHE[cache_key] = _hand_written(rules.COMPLEX_TANGENTS[key])
        return _CACHE[cache_key]
    if key in rules.COMPLEX_SAFE or isinstance(rules.lookup_tangent(primitive), rules.Linear):
        return lookup(primitive)   # a real-linear map's tangent is itself, on any values
    return None


def _hand_written(function):
    if function is None:
        return None
    parsed = templates._parse_rule(function)
    if parsed is None:
        return None
    body, local = parsed
    params = list(inspect.signature(function).parameters.values())
    output = params[0].name
    primitive_params = [p for p in params[1:] if not p.name.startswith("t_")]
    return TangentTemplate(primitive_params, body[:-1], body[-1].value, frozenset(local), output,
                           no_tangent=getattr(function, "__srcgrad_no_tangent__", frozenset()))


_KEYWORDS = ("axis", "keepdims")   # spelled as keywords in a linear tangent's call


def _spelling(primitive, declared):
    """The expression calling ``primitive`` in a template: ``declared.call``, or
    ``rt.<name>`` / ``xp.<name>`` where that is the primitive itself."""
    if declared.call is not None:
        return gast.parse(declared.call, mode="eval").body
    from srcgrad import runtime
    name_ = getattr(primitive, "__name__", None)
    for module, spelled in ((runtime, "rt"), (numpy, "xp")):
        if name_ and not isinstance(primitive, str) and getattr(module, name_, None) is primitive:
            return gast.Attribute(value=templates.name(spelled), attr=name_, ctx=gast.Load())
    raise TypeError(f"linear({primitive!r}, ...) needs call= to spell it in a template")


def _linear_template(primitive, declared):
    """The template of a ``rules.linear`` declaration: the primitive's parameters (its
    adjoint rule's, else its own signature's) and one call of it, ``t_<p>`` in place of
    each linear parameter ``p``."""
    rule = rules.lookup(primitive)
    if rule is not None:
        params = rule.params
    else:
        params = list(inspect.signature(primitive).parameters.values())
    names = [p.name for p in params]
    missing = [p for p in declared.params if p not in names]
    if missing:
        raise TypeError(f"linear({primitive!r}): no parameter {missing[0]!r} in {names}")
    args, keywords = [], []
    positional = _positional(params)
    for p in params:
        value = templates.name("t_" + p.name if p.name in declared.params else p.name)
        if p.kind == p.VAR_POSITIONAL:
            args.append(gast.Starred(value=value, ctx=gast.Load()))
        elif p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in positional:
            keywords.append(gast.keyword(arg=p.name, value=value))
        elif p.kind == p.VAR_KEYWORD:
            raise TypeError(f"linear({primitive!r}): **{p.name} is not supported")
        else:
            args.append(value)
    call = gast.Call(func=_spelling(primitive, declared), args=args, keywords=keywords)
    return TangentTemplate(params, [], call, frozenset(), "__output__",
                           no_tangent=declared.no_tangent, linear=tuple(declared.params))


def _positional(params):
    """The parameters a linear tangent's call passes by position: those before the first
    one spelled as a keyword (``axis`` and ``keepdims`` with a default, keyword-only ones),
    so that ``cumsum(a, axis=None, dtype=None)`` is called ``cumsum(t, axis=axis, dtype=dtype)``."""
    names = []
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) \
                or (p.name in _KEYWORDS and p.default is not p.empty):
            break
        names.append(p.name)
    return names


def trim_defaults(call, params):
    """``f(t, None, axis=None)`` written ``f(t)``: in a linear tangent's call, keywords and
    trailing positional arguments left at their parameter's default are not spelled out;
    ``*(a, b)`` is written ``a, b``."""
    if not isinstance(call, gast.Call):
        return call
    defaults = {p.name: p.default for p in params if p.default is not p.empty}

    def is_default(node, param):
        return param in defaults and isinstance(node, gast.Constant) and templates.is_literal(
            defaults[param]) and type(node.value) is type(defaults[param]) \
            and node.value == defaults[param]

    call.keywords = [k for k in call.keywords if not is_default(k.value, k.arg)]
    positional = _positional(params)
    args = list(call.args)
    while args and len(args) <= len(positional) and not isinstance(args[-1], gast.Starred) \
            and is_default(args[-1], positional[len(args) - 1]):
        args.pop()
    expanded = []
    for a in args:
        if isinstance(a, gast.Starred) and isinstance(a.value, (gast.Tuple, gast.List)):
            expanded.extend(a.value.elts)
        else:
            expanded.append(a)
    call.args = expanded
    return call


def _contains(node, name_):
    return any(isinstance(n, gast.Name) and n.id == name_ for n in ast_util.walk(node))


def _linear(node, dy):
    """Whether ``node`` is linear in ``dy`` elementwise (so dy -> t is its tangent)."""
    if isinstance(node, gast.Name):
        return node.id == dy
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return _linear(node.operand, dy)
    if isinstance(node, gast.BinOp):
        left, right = _contains(node.left, dy), _contains(node.right, dy)
        if isinstance(node.op, gast.Mult):
            return (left != right) and _linear(node.left if left else node.right, dy)
        if isinstance(node.op, gast.Div):
            return left and not right and _linear(node.left, dy)
        return False
    if isinstance(node, gast.Call) and (_is_call(node, "rt", "share") or _is_call(
            node, "rt", "divide")) and len(node.args) == 2 and not node.keywords:
        return _linear(node.args[0], dy) and not _contains(node.args[1], dy)
    if isinstance(node, gast.Call) and _is_call(node, "xp", "where") and len(node.args) == 3 \
            and not node.keywords and not _contains(node.args[0], dy):
        return all(_linear(a, dy) or (isinstance(a, gast.Constant) and a.value == 0)
                   for a in node.args[1:]) and any(_contains(a, dy) for a in node.args[1:])
    return False


def _is_call(node, module, attr):
    f = node.func
    return isinstance(f, gast.Attribute) and f.attr == attr and isinstance(f.value, gast.Name) \
        and f.value.id == module


def _strip_unbroadcast(node):
    if isinstance(node, gast.Call) and _is_call(node, "rt", "unbroadcast") and len(node.args) == 2:
        return node.args[0]
    return node


def _unreduced(entry, dy):
    """``(G, call)`` for an entry linear in one ``rt.unreduce(dy, a, axis, keepdims)``
    (``G``: the entry with that call replaced by the name ``__unreduced__``)."""
    calls = [n for n in ast_util.walk(entry) if isinstance(n, gast.Call) and _is_call(n, "rt", "unreduce")
             and len(n.args) == 4 and not n.keywords and isinstance(n.args[0], gast.Name)
             and n.args[0].id == dy]
    if len(calls) != 1 or any(_contains(a, dy) for a in calls[0].args[1:]):
        return None
    spread = calls[0]
    weight = _swap_first(clone(entry), dy)
    if _contains(weight, dy) or not _linear(weight, "__unreduced__"):
        return None
    return weight, spread


def _swap_first(node, dy):
    class Swap(ast_util.NodeTransformer):
        def visit_Call(self, call):
            if _is_call(call, "rt", "unreduce") and call.args and isinstance(call.args[0], gast.Name) \
                    and call.args[0].id == dy:
                return templates.name("__unreduced__")
            return self.generic_visit(call)
    return Swap().visit(node)


def _derived(rule, elementwise=True):
    """The tangent read off an adjoint ``(dy, y, *params) -> entries``: an elementwise
    entry linear in ``dy`` (dy -> the tangent), or a reduction's
    ``rt.unreduce(dy, a, axis, keepdims) * G``, whose transpose is
    ``xp.sum(t_a * G, axis=axis, keepdims=keepdims)``."""
    parsed = templates._parse_rule(rule.function)
    if parsed is None:
        return None
    body, local = parsed
    names = list(rule.signature.parameters)
    dy, y = names[0], names[1]
    if any(_contains(s, dy) for s in body[:-1]):
        return None
    result = body[-1].value
    entries = list(result.elts) if isinstance(result, gast.Tuple) else [result]
    terms = []
    entries += [None] * (len(rule.params) - len(entries))
    no_tangent = set()
    for param, entry in zip(rule.params, entries):
        if entry is None or isinstance(entry, gast.Constant) and entry.value is None:
            no_tangent.add(param.name)
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            return None
        reduction = _unreduced(entry, dy)
        if reduction is not None:
            weight, spread = reduction
            weight = templates._Substitute({"__unreduced__": "t_" + param.name}).visit(weight)
            terms.append(gast.Call(
                func=gast.Attribute(value=templates.name("xp"), attr="sum", ctx=gast.Load()),
                args=[weight],
                keywords=[gast.keyword(arg="axis", value=clone(spread.args[2])),
                          gast.keyword(arg="keepdims", value=clone(spread.args[3]))]))
            continue
        entry = _strip_unbroadcast(entry)
        if not elementwise or not _linear(entry, dy):
            return None
        terms.append(templates._Substitute({dy: "t_" + param.name}).visit(clone(entry)))
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        total = gast.BinOp(left=total, op=gast.Add(), right=term)
    return TangentTemplate(rule.params, body[:-1], total, frozenset(local), y, derived=True,
                           no_tangent=frozenset(no_tangent))


# ----- instantiation -----


_ZERO_MARK = "__srcgrad_zero_tangent__"
_SCALAR_ZERO_MARK = "__srcgrad_zero_tangent_of_a_literal__"   # cannot broadcast a sum up


def _is_zero(node):
    return node is None or (isinstance(node, gast.Name) and node.id in (_ZERO_MARK, _SCALAR_ZERO_MARK))


def _bare(node):
    """A term whose shape may be smaller than the output's: a tangent alone, negated, or
    a helper's result (``t_x1`` of ``x1 + x2`` where ``x1`` is broadcast)."""
    if isinstance(node, gast.UnaryOp):
        return _bare(node.operand)
    return isinstance(node, gast.Name) or isinstance(node, gast.Call) and _is_call(
        node, "rt", getattr(node.func, "attr", ""))


class _DropZeros(ast_util.NodeTransformer):
    """Tangent terms with a zero tangent removed; the zero marker when nothing is left.

    Runs on the template before its parameters are substituted, so that it can tell
    which names are tangents (``tangents``: the ``t_<param>`` names and the locals
    computed from them). A product, quotient, subscript or attribute of a zero is
    zero; ``a + 0`` is ``a``. A call whose every tangent argument is zero is zero;
    one that has other, nonzero tangent arguments gets ``None`` for the zero ones
    (a helper like ``rt.einsum_jvp`` reads None as "no tangent"); so does a display.
    """

    def __init__(self, tangents, output=None):
        self.tangents = tangents
        self.output = output

    def like_output(self, kept, dropped, right=False):
        """``a + 0``: ``a``, broadcast to the output's shape (``rt.tangent_like``) where the
        dropped zero stood for an operand that may have widened the sum. ``right``: the
        zero was the left operand of ``+``, which may be a list that ``+`` concatenates
        (its zeros then go first)."""
        if self.output is None or not _bare(kept) or (
                isinstance(dropped, gast.Name) and dropped.id == _SCALAR_ZERO_MARK):
            return kept
        keywords = [gast.keyword(arg="right", value=gast.Constant(value=True, kind=None))] \
            if right else []
        return gast.Call(func=gast.Attribute(value=templates.name("rt"), attr="tangent_like",
                                             ctx=gast.Load()),
                         args=[kept, templates.name(self.output)], keywords=keywords)

    def carries(self, node):
        return any(isinstance(n, gast.Name) and n.id in self.tangents for n in ast_util.walk(node))

    def visit_BinOp(self, node):
        left, right = self.visit(node.left), self.visit(node.right)
        lz, rz = _is_zero(left), _is_zero(right)
        if isinstance(node.op, gast.Add):
            if lz and rz:
                return _none()
            if lz or rz:
                return self.like_output(right, left, True) if lz else self.like_output(left, right)
        elif isinstance(node.op, gast.Sub):
            if lz and rz:
                return _none()
            if rz:
                return self.like_output(left, right)
            if lz:
                return self.like_output(gast.UnaryOp(op=gast.USub(), operand=right), left)
        elif lz or rz:
            return _none()
        node.left, node.right = left, right
        return node

    def visit_UnaryOp(self, node):
        operand = self.visit(node.operand)
        if _is_zero(operand):
            return _none()
        node.operand = operand
        return node

    def visit_Call(self, node):
        had = any(isinstance(n, gast.Name) and (n.id in self.tangents or _is_zero(n))
                  for n in ast_util.walk(node))
        args = [self.visit(a) for a in node.args]
        values = [self.visit(k.value) for k in node.keywords]
        if had and not any(self.carries(v) for v in args + values if not _is_zero(v)):
            return _none()   # every tangent it took is zero, some inside a tuple argument
        if any(_is_zero(v) for v in args + values):
            if not any(self.carries(v) for v in args + values if not _is_zero(v)):
                return _none()
            zero = _constant_none if _is_call(node, "rt", getattr(node.func, "attr", "")) \
                else _constant_zero
            args = [zero() if _is_zero(v) else v for v in args]
            values = [zero() if _is_zero(v) else v for v in values]
        node.args = args
        for k, v in zip(node.keywords, values):
            k.value = v
        return node

    def visit_List(self, node):
        elts = [self.visit(e) for e in node.elts]
        if elts and all(_is_zero(e) for e in elts):
            return _none()
        node.elts = [_constant_none() if _is_zero(e) else e for e in elts]
        return node

    visit_Tuple = visit_List

    def visit_Subscript(self, node):
        value = self.visit(node.value)
        if _is_zero(value):
            return _none()
        node.value = value
        return node

    def visit_Attribute(self, node):
        value = self.visit(node.value)
        if _is_zero(value):
            return _none()
        node.value = value
        return node


def _constant_none():
    return gast.Constant(value=None, kind=None)


def _constant_zero():
    return gast.Constant(value=0.0, kind=None)


class _Defaults(ast_util.NodeTransformer):
    """``xp.sum(t, axis=None, keepdims=False)`` written ``xp.sum(t)``: keywords of the
    array namespace's reductions left at NumPy's defaults are not spelled out."""

    DEFAULTS = {"axis": None, "keepdims": False}
    CALLS = {"sum", "mean", "cumsum"}

    def visit_Call(self, node):
        self.generic_visit(node)
        if _is_call(node, "xp", node.func.attr if isinstance(node.func, gast.Attribute) else "") \
                and node.func.attr in self.CALLS:
            node.keywords = [k for k in node.keywords if not (
                k.arg in self.DEFAULTS and isinstance(k.value, gast.Constant)
                and k.value.value is self.DEFAULTS[k.arg])]
        return node


def _none():
    return gast.Name(id=_ZERO_MARK, ctx=gast.Load(), annotation=None, type_comment=None)


def _zero_shaped(template, subs):
    """A jointly linear primitive (``np.append(arr, values)``) with a tangent in one
    argument gets ``rt.tangent_zero(<argument>)`` for another's zero tangent: a zero of
    that argument's shape, where ``0.0`` would change the result's shape."""
    given = [p for p in template.linear if subs.get("t_" + p) is not None]
    if not given or len(given) == len(template.linear):
        return subs
    subs = dict(subs)
    for p in template.linear:
        if subs.get("t_" + p) is None and not _is_none(subs.get(p)):
            subs["t_" + p] = gast.Call(
                func=gast.Attribute(value=templates.name("rt"), attr="tangent_zero", ctx=gast.Load()),
                args=[clone(subs[p])], keywords=[])
    return subs


def _is_none(node):
    """An argument left at None (``np.diff``'s ``prepend``): no tangent, and it stays None."""
    return isinstance(node, gast.Constant) and node.value is None


def instantiate(template, subs, namer):
    """``(statements, expression)``: ``template`` with ``subs`` (name -> gast expression,
    or None for a zero tangent) substituted; the expression is None when the tangent is
    zero. Template locals get fresh names; zero tangents drop out (``_DropZeros``, on
    the template before the substitution, where tangents are known by name)."""
    if template.linear:
        subs = _zero_shaped(template, subs)
    zeros = {k: _none() for k, v in subs.items() if v is None}
    for k in zeros:   # the zero tangent of a literal number: a sum with it keeps its shape
        if template.linear and k.startswith("t_") and _is_none(subs.get(k[2:])):
            zeros[k] = _constant_none()   # a linear argument left at None stays None
        elif k.startswith("t_") and isinstance(subs.get(k[2:]), gast.Constant):
            zeros[k] = gast.Name(id=_SCALAR_ZERO_MARK, ctx=gast.Load(), annotation=None, type_comment=None)
    tangents = {k for k in subs if k.startswith("t_") and subs[k] is not None}
    marked = templates._Substitute(zeros)
    body = []
    for s in template.body:
        s = marked.visit(clone(s))
        s.value = _DropZeros(tangents).visit(s.value)
        if _is_zero(s.value):
            marked = templates._Substitute(dict(zeros, **{s.targets[0].id: _none()}))
            zeros[s.targets[0].id] = _none()
            continue
        if any(isinstance(n, gast.Name) and n.id in tangents for n in ast_util.walk(s.value)):
            tangents.add(s.targets[0].id)
        body.append(s)
    result = _DropZeros(tangents, template.output).visit(marked.visit(clone(template.result)))
    if _is_zero(result):
        return [], None
    table = {"xp": "xp", "rt": "rt"}
    table.update({k: v for k, v in subs.items() if v is not None})
    for loc in sorted(template.locals):
        table[loc] = namer.new(loc)
    substitute = templates._Substitute(table)
    folder = templates._FoldConstants()
    stmts = [folder.visit(substitute.visit(s)) for s in body]
    result = _Defaults().visit(folder.visit(substitute.visit(result)))
    if template.linear:
        result = trim_defaults(result, template.params)
    used = {n.id for n in ast_util.walk(result) if isinstance(n, gast.Name)}
    for s in reversed(stmts):
        used |= {n.id for n in ast_util.walk(s.value) if isinstance(n, gast.Name)}
    stmts = [s for s in stmts if s.targets[0].id in used]
    return stmts, result


def default_value(value):
    """A parameter's default as an expression (None stays a None constant: not a tangent)."""
    if templates.is_literal(value):
        if isinstance(value, tuple):
            return gast.Tuple(elts=[default_value(v) for v in value], ctx=gast.Load())
        return gast.Constant(value=value, kind=None)
    raise TypeError(value)


def known_zero(node):
    return _is_zero(node)

