"""Adjoints of expressions: each primitive's rule applied to one assignment's value.

``RuleApplication`` is the half of reverse mode (transform/reverse.py) that, given
``y = value`` and the adjoint ``dy``, writes the statements adding ``value``'s
contributions into its arguments' adjoints: a rule template from the one rule table
(srcgrad/rules/) inlined (srcgrad/templates.py), or the rule called at run time;
containers (lists, tuples, dicts, structures) split or gather their adjoints.
"""

import copy
import inspect
import operator

import gast

from srcgrad import anno, rules, templates
from srcgrad.analysis import kinds as kinds_
from srcgrad.analysis.activity import primitive_of
from srcgrad.errors import NonDifferentiableError, UnsupportedError
from srcgrad.rules import Attribute, Method
from srcgrad.ast_util import name
from srcgrad.templates import replace, replace_as_expression as replace_expr
from srcgrad.transform.as_array import is_runtime_helper
from srcgrad.transform.tape import index_value

Static = anno.Static


def guard(test, body):
    """``if test: body``, marked as an ``if`` the sweep added (not the user's)."""
    node = gast.If(test=test, body=body, orelse=[])
    anno.setanno(node, Static.GUARD, True)
    return node


class RuleApplication:
    """Contributions of an assignment's value to its arguments' adjoints.

    A mixin of ReverseAD: it reads ``self.act`` (the Activity), ``self.namer``,
    ``self.containers``, ``self.kinds``, ``self.flag``, ``self.fixed`` and
    ``self.bindings``, and calls ``self.d``, ``self.needs`` and ``self.error`` (transform/base.py).
    """

    def guarded(self, value, dt, contribs):
        """Skip contributions while ``dt`` is still the scalar zero, for rules that reshape it.

        Elementwise rules broadcast a scalar zero harmlessly; reductions, reshapes
        and matrix products need ``dt`` to have the output's shape. Under
        ``set_grad_enabled(flag)`` the contributions also wait for the flag.
        """
        if contribs and not self.elementwise(value):
            contribs = [guard(replace_expr(f"rt.has_grad({dt})"), contribs)]
        return self.flagged(contribs)

    def flagged(self, contribs):
        if contribs and self.flag is not None:
            return [guard(name(self.flag), contribs)]
        return contribs

    @staticmethod
    def elementwise(value):
        import numpy
        if isinstance(value, (gast.Name, gast.Subscript, gast.UnaryOp, gast.Constant)):
            return True
        if isinstance(value, gast.BinOp):
            return not isinstance(value.op, gast.MatMult)
        if isinstance(value, gast.Call):
            return isinstance(anno.getanno(value, Static.PRIMITIVE), numpy.ufunc)
        return False

    def contributions(self, value, dy, y):
        """Statements adding ``value``'s contributions to its arguments' adjoints."""
        if isinstance(value, gast.Name):
            return self.accumulate(value, dy)
        if isinstance(value, gast.Constant) or isinstance(value, (gast.Compare, gast.BoolOp)):
            return []
        if isinstance(value, (gast.Tuple, gast.List)):
            out = []
            for k, elt in enumerate(value.elts):
                out += self.accumulate(elt, replace_expr(f"rt.seq_item(DY, {k})", DY=dy))
            return out
        if isinstance(value, gast.Dict):
            out = []
            for key, elt in zip(value.keys, value.values):
                out += self.accumulate(elt, replace_expr("rt.seq_item(DY, KEY)", DY=dy,
                                                         KEY=copy.deepcopy(key)))
            return out
        if isinstance(value, gast.Subscript):
            base = value.value
            if not self.needs(base):
                return []
            self.in_place = True
            db = self.d(base.id)
            return replace(f"{db} = rt.add_at({db}, {base.id}, INDEX, DY)", INDEX=index_value(value.slice), DY=dy)
        primitive = primitive_of(value)
        if isinstance(value, gast.Attribute):
            receiver = value.value
            if self.maybe_container(receiver):
                return self.attribute_of_container(primitive, receiver, value, dy, y)
            return self.apply_rule(primitive, [receiver], {}, dy, y, value)
        if isinstance(value, (gast.BinOp,)):
            # Python concatenates two lists or two tuples, and repeats one of them
            # times a number (rt.container_op): ``x @ W + self.b`` is arithmetic.
            left, right = self.maybe_container(value.left), self.maybe_container(value.right)
            if (left and right) if isinstance(value.op, gast.Add) else \
                    isinstance(value.op, gast.Mult) and (left or right):
                return self.container_binop(primitive, value, dy, y)
            return self.apply_rule(primitive, [value.left, value.right], {}, dy, y, value)
        if isinstance(value, gast.UnaryOp):
            return self.apply_rule(primitive, [value.operand], {}, dy, y, value)
        if isinstance(value, gast.Call):
            args = list(value.args)
            if isinstance(primitive, Method):
                args = [value.func.value] + args
            kwargs = {k.arg: k.value for k in value.keywords}
            return self.apply_rule(primitive, args, kwargs, dy, y, value)
        return []

    def maybe_container(self, node):
        return isinstance(node, (gast.List, gast.Tuple, gast.Dict)) or (
            isinstance(node, gast.Name) and node.id in self.containers)

    def container_binop(self, primitive, value, dy, y):
        """``a + b`` or ``a * b`` where an operand may be a list or tuple: concatenation or
        repetition (the adjoint splits, or sums the copies), decided at run time unless
        both operands are displays; otherwise the arithmetic rule."""
        a, b = value.left, value.right
        if not any(self._any_needed(x) for x in (a, b)):
            return []
        if isinstance(value.op, gast.Add):
            grads = self.namer.new("concat_grads")
            seq = [gast.Assign(targets=[name(grads, True)], value=replace_expr(
                "rt.seq_concat_vjp(DY, A, B)", DY=dy, A=copy.deepcopy(a), B=copy.deepcopy(b)),
                type_comment=None)]
            seq += self.accumulate(a, replace_expr(f"{grads}[0]"))
            seq += self.accumulate(b, replace_expr(f"{grads}[1]"))
        else:
            grads = self.namer.new("repeat_grads")
            seq = [gast.Assign(targets=[name(grads, True)], value=replace_expr(
                "rt.seq_repeat_vjp(DY, A, B)", DY=dy, A=copy.deepcopy(a), B=copy.deepcopy(b)),
                type_comment=None)]
            into_a = self.accumulate(a, name(grads))
            into_b = self.accumulate(b, name(grads))
            seq.append(gast.If(test=replace_expr("rt.is_node(A)", A=copy.deepcopy(a)),
                               body=into_a or [gast.Pass()], orelse=into_b))
        if isinstance(a, (gast.List, gast.Tuple)) or isinstance(b, (gast.List, gast.Tuple)):
            return seq
        arithmetic = self.apply_rule(primitive, [a, b], {}, dy, y, value)
        test = replace_expr("rt.container_op(A, B)" if isinstance(value.op, gast.Add)
                            else "rt.container_op(A, B, True)", A=copy.deepcopy(a), B=copy.deepcopy(b))
        return [gast.If(test=test, body=seq or [gast.Pass()], orelse=arithmetic)]

    def attribute_of_container(self, primitive, receiver, value, dy, y):
        """``y = p.w`` where ``p`` may be a structure (a dataclass, namedtuple or registered
        object): the adjoint adds ``dy`` into ``dp``'s field ``w``; an array attribute
        (``x.T``) keeps its rule, chosen at run time."""
        if not self.needs(receiver):
            return []
        dp = self.d(receiver.id)
        error_name = self.namer.new("attribute_error")
        self.bindings[error_name] = self.error(
            value, NonDifferentiableError, f"a gradient reaches the attribute .{value.attr} of "
            f"{receiver.id!r}, which is not a structure srcgrad knows",
            "Make its class a dataclass, or register it with srcgrad.register_pytree_node.")
        field = replace(f"{dp} = rt.attr_add({dp}, {receiver.id}, {value.attr!r}, DY, {error_name})",
                        DY=dy)
        if rules.lookup(primitive) is None:
            return field
        arithmetic = self.apply_rule(primitive, [receiver], {}, dy, y, value)
        return [gast.If(test=replace_expr(f"rt.is_node({receiver.id})"), body=field,
                        orelse=arithmetic or [gast.Pass()])]

    def accumulate(self, target, grad, sequence=False, fresh=False):
        """``d<target> += grad`` for each name in ``target`` that needs an adjoint.

        ``sequence``: ``grad`` may be a list (the gradient of a rule's parameter that
        takes a sequence, such as ``rt.seq_item``'s: a second-order sweep meets the
        list adjoint of a tuple result), so it is added with ``rt.seq_add``.
        ``fresh``: ``grad`` is a tree nothing else holds (a rule's instantiated
        gradient), placed in the statement as it is instead of copied."""
        if isinstance(target, (gast.List, gast.Tuple)):
            out = []
            if not isinstance(grad, gast.Name):
                # One gradient list for all elements: compute it once.
                temp = self.namer.new("grads")
                out += [gast.Assign(targets=[name(temp, True)], value=grad, type_comment=None)]
                grad = name(temp)
            for k, elt in enumerate(target.elts):
                out += self.accumulate(elt, replace_expr(f"rt.seq_item(G, {k})", G=grad))
            return out
        if not self.needs(target):
            return []
        dt = self.d(target.id)
        if sequence or target.id in self.act.sequences:
            return replace(f"{dt} = rt.seq_add({dt}, G)", G=grad)
        if target.id in self.containers:
            return replace(f"{dt} = rt.add_grad({dt}, G)", G=grad)
        if fresh:   # the template's copy with ``G`` where it stands (what G=grad would copy)
            added = replace(f"{dt} = {dt} + G")
            added[0].value.right = grad
            return added
        return replace(f"{dt} = {dt} + G", G=grad)

    def kind_of(self, node):
        return kinds_.UNKNOWN if self.kinds is None else self.kinds.of(node)

    def is_complex(self, value, args):
        """Whether the statement computing ``value`` from ``args`` is certainly on complex values."""
        return self.kinds is not None and any(
            self.kinds.of(v) == kinds_.COMPLEX for v in [value] + args if not isinstance(v, gast.List))

    def complex_rule(self, primitive, value):
        """The rule of ``primitive`` on complex values (rules/complex_rules.py), or refuse."""
        rule = rules.lookup_complex(primitive)
        if rule is None:
            raise self.error(
                value, UnsupportedError,
                f"srcgrad has no gradient for {_describe(primitive, value)} on complex values",
                "Complex intermediates support + - * / **, exp, sin, cos, tanh, log, sqrt, abs, "
                "angle, real, imag, conj, sum, mean, reshape, @ and np.fft.fft/ifft. Split the value into its real and imaginary "
                "parts (z.real, z.imag) before this operation, or write a custom srcgrad.Function.")
        return rule

    def apply_rule(self, primitive, args, kwargs, dy, y, value):
        active = [a for a in list(args) + list(kwargs.values()) if self._any_needed(a)]
        if not active or rules.is_nondifferentiable(primitive):
            return []
        checks = self.sequence_operand_checks(primitive, active, value)
        return checks + self._apply_rule(primitive, args, kwargs, dy, y, value, active)

    def sequence_operand_checks(self, primitive, active, value):
        """A list or tuple that NumPy reads as an array (``np.prod(lst)``, ``x * lst``) would
        need its gradient split into items, which the rules do not do: refused, at compile
        time for a display, at run time for a name that may hold one."""
        rule = rules.lookup(primitive)
        if rule is None or not rule.builtin or rules.takes_sequence_args(primitive) \
                or is_runtime_helper(primitive):
            # A user's rule gets the list as it is, and its gradient is that of the array
            # NumPy makes of it (rt.seq_item splits it); srcgrad's own adjoints take lists.
            return []
        checks = []
        for a in active:
            if isinstance(a, (gast.List, gast.Tuple)):
                raise self.error(value, UnsupportedError,
                                 f"a list or tuple passed to {_describe(primitive, value)} is read "
                                 f"as an array; srcgrad does not split its gradient into items",
                                 "Convert it first: np.stack([...]) or np.asarray([...]).")
            if isinstance(a, gast.Name) and (a.id in self.containers or a.id in self.act.sequences):
                error_name = self.namer.new("operand_error")
                self.bindings[error_name] = self.error(
                    value, UnsupportedError,
                    f"{a.id!r} holds a list or tuple, which {_describe(primitive, value)} reads as "
                    f"an array; srcgrad does not split its gradient into items",
                    "Convert it first: np.stack(...) or np.asarray(...).")
                checks += replace(f"rt.check_array_operand({a.id}, {error_name})")
        return checks

    def _apply_rule(self, primitive, args, kwargs, dy, y, value, active):
        on_complex = self.is_complex(value, list(args) + list(kwargs.values()))
        if on_complex:
            rule = self.complex_rule(primitive, value)
        else:   # (np.imag of a real value has only its complex rule)
            rule = rules.lookup(primitive) or rules.lookup_complex(primitive)
        if rule is None:
            what = _describe(primitive, value)
            raise self.error(
                value, NonDifferentiableError,
                f"srcgrad has no gradient rule for {what}, and its argument "
                f"{', '.join(repr(_show(a)) for a in active)} needs a gradient",
                "Pass the parameters to the method instead (st.norm.logpdf(x, loc, scale)); a "
                "frozen norm is read so only through its methods, its arguments not rebound "
                "after it is frozen." if what.startswith("freezing") else
                "An instance of a plain class built here is differentiated where its __init__ only "
                "stores expressions of its parameters as attributes (or it has none) and no code of "
                "its module or yours asks an object its class (type(...), __class__); else make the "
                "class a dataclass." if isinstance(primitive, type) else
                "Register one with @srcgrad.adjoint, wrap the computation in a custom "
                "srcgrad.Function, or use srcgrad.detach if no gradient should flow through it.")
        try:
            bound = _bind(rule.signature, (dy, y, *args), kwargs)
        except TypeError as exc:
            raise self.error(value, UnsupportedError,
                             f"this call to {_describe(primitive, value)} is not supported by "
                             f"srcgrad's rule ({exc})") from None
        self.check_literals(rule, bound, primitive, value)
        params = rule.params
        arg_nodes = {}
        for p in list(rule.signature.parameters.values()):
            if p.name in bound.arguments:
                v = bound.arguments[p.name]
                if p.kind is inspect.Parameter.VAR_POSITIONAL:
                    v = gast.Tuple(elts=list(v), ctx=gast.Load())
                arg_nodes[p.name] = v
            elif p.default is not inspect.Parameter.empty:
                arg_nodes[p.name] = gast.Constant(value=p.default, kind=None) \
                    if templates.is_literal(p.default) else None
            elif p.kind is inspect.Parameter.VAR_POSITIONAL:
                arg_nodes[p.name] = gast.Tuple(elts=[], ctx=gast.Load())
        out = []
        if rule.builtin and templates.is_template(rule) and None not in arg_nodes.values():
            wanted = {k for k, p in enumerate(params) if self._any_needed(arg_nodes.get(p.name))}
            stmts, grads = templates.instantiate(rule, arg_nodes, self.namer, self.fixed, wanted)
            needed = [(p, g) for k, (p, g) in enumerate(zip(params, grads))
                      if g is not None and k in wanted]
            if isinstance(primitive, Method):
                self.check_method_receiver(primitive, params, grads, wanted, arg_nodes, value)
            out += stmts   # (only those the wanted gradients read)
            for p, g in needed:
                out += self.accumulate(arg_nodes[p.name], self.real_part(arg_nodes[p.name], g, on_complex),
                                       sequence=p.name in rule.sequences, fresh=True)
            return out
        # A rule that is not a template: called at run time.
        rule_name = self.namer.new(f"{rule.name}_rule")
        self.bindings[rule_name] = rule.function
        call = gast.Call(func=name(rule_name), args=[dy, y] + list(args),
                         keywords=[gast.keyword(arg=k, value=v) for k, v in kwargs.items()])
        g = self.namer.new(f"{rule.name}_grads")
        out.append(gast.Assign(targets=[name(g, True)], value=call, type_comment=None))
        single = len([p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                     inspect.Parameter.POSITIONAL_OR_KEYWORD)]) <= 1
        for k, p in enumerate(params):
            node = arg_nodes.get(p.name)
            if not self._any_needed(node):
                continue
            grad = name(g) if single and k == 0 else replace_expr(f"{g}[{k}]")
            out += self.accumulate(node, self.real_part(node, grad, on_complex),
                                   sequence=p.name in rule.sequences)
        return out

    def check_method_receiver(self, primitive, params, grads, wanted, arg_nodes, value):
        """``obj.get(x, "W")`` whose ``obj`` is of a class not known when compiling gets the
        rule of the array's or container's method of that name (``dict.get``): a value that
        needs a gradient in a parameter the rule gives none (``key``, ``axis``) means the
        receiver is no such object. Refused: its gradient would be silently dropped."""
        lost = [p.name for k, (p, g) in enumerate(zip(params, grads)) if g is None and k in wanted]
        if lost:
            arg = arg_nodes[lost[0]]
            raise self.error(
                value, NonDifferentiableError,
                f"the method .{primitive}() is differentiated as the array's or container's "
                f"(whose argument {lost[0]!r} takes no gradient), but {_show(arg)!r} passed "
                f"there needs one: is the object an instance of your own class?",
                "srcgrad reads the methods of an object it knows when compiling: pass it as an "
                "argument of the function differentiated (or of a helper, from a global), or call "
                "the method by its class, Cls.get(obj, x, ...).")

    def real_part(self, node, grad, on_complex):
        """``grad`` of ``node``, a real value that entered complex arithmetic: its real part."""
        if on_complex and isinstance(node, gast.Name) and self.kind_of(node) != kinds_.COMPLEX:
            return replace_expr(f"rt.real_like(G, {node.id})", G=grad)
        return grad

    def check_literals(self, rule, bound, primitive, value):
        """A literal option the rule does not support (``np.pad(x, 1, mode="mean")``)
        is refused here, at its line, rather than when the reverse sweep runs."""
        unsupported = rules.unsupported_literal(rule, bound.arguments)
        if unsupported is not None:
            param, literal, allowed = unsupported
            raise self.error(
                value, UnsupportedError,
                f"srcgrad's gradient of {_describe(primitive, value)} does not support "
                f"{param}={literal!r} (supported: {', '.join(map(repr, allowed))})",
                "Write a custom srcgrad.Function, or register your own rule with @srcgrad.adjoint.")

    def _any_needed(self, node):
        if node is None:
            return False
        if isinstance(node, (gast.List, gast.Tuple)):
            return any(self._any_needed(e) for e in node.elts)
        return self.needs(node)



class _Bound:
    """What ``_bind`` returns: ``arguments``, as ``inspect.BoundArguments`` has them."""

    __slots__ = ("arguments",)

    def __init__(self, arguments):
        self.arguments = arguments


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_SIMPLE = {}   # id(signature) -> (it, (parameter names, how many have no default) or None)


def _bind(signature, args, kwargs):
    """``signature.bind(*args, **kwargs)``: positional arguments alone, for a rule whose
    parameters are all positional, are matched to the parameters' names directly (bind
    was a visible part of each rule's application); anything else goes to ``bind``, which
    also raises its TypeError."""
    found = _SIMPLE.get(id(signature))
    if found is not None and found[0] is signature:
        simple = found[1]
    else:
        parameters = list(signature.parameters.values())
        required = sum(1 for p in parameters if p.default is inspect.Parameter.empty)
        simple = (tuple(p.name for p in parameters), required) \
            if all(p.kind in _POSITIONAL for p in parameters) else None
        _SIMPLE[id(signature)] = (signature, simple)   # (held: its id is not reused)
    if simple is None or kwargs or not simple[1] <= len(args) <= len(simple[0]):
        return signature.bind(*args, **kwargs)
    return _Bound(dict(zip(simple[0], args)))


def _show(node):
    if isinstance(node, gast.Name):
        return node.id
    return type(node).__name__


_OPERATOR_SYMBOLS = {operator.add: "+", operator.sub: "-", operator.mul: "*",
                     operator.truediv: "/", operator.floordiv: "//", operator.matmul: "@",
                     operator.pow: "**", operator.mod: "%", operator.neg: "unary -",
                     operator.pos: "unary +"}


def _describe(primitive, value):
    try:
        symbol = _OPERATOR_SYMBOLS.get(primitive)
    except TypeError:   # an unhashable primitive
        symbol = None
    if symbol is not None:
        return f"the operator {symbol}"
    if isinstance(primitive, Method):
        return f"the method .{primitive}()"
    if isinstance(primitive, Attribute):
        return f"the attribute .{primitive}"
    mod = getattr(primitive, "__module__", None)
    qual = getattr(primitive, "__qualname__", None) or getattr(primitive, "__name__", None)
    if qual is None and callable(getattr(primitive, "freeze", None)):
        return f"freezing the scipy.stats distribution {getattr(primitive, 'name', '')}"
    if qual is None:
        return repr(primitive)
    return f"{mod}.{qual}" if mod and mod != "builtins" else qual


