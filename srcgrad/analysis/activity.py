"""Activity, usefulness and overwrite analysis of a function in A-normal form.

Attaches nothing to the tree; ``resolve`` returns an Activity with frozensets of
names:

* active: values that depend on a ``wrt`` input (PyTorch's ``requires_grad``).
* useful: values the output depends on.
* adjoint: active and useful; only these get adjoint variables.
* saved: names bound more than once (or inside a loop): the forward sweep
  pushes the value each binding overwrites, the reverse sweep restores it.
* sequences: names holding lists, tuples or dicts, whose adjoint is a list (a dict).
* mixed: sequences also bound to something else (``vals = np.array(vals)``).

A value that is certainly an integer or boolean (kinds.py: ``x.astype(int)``,
a store into ``np.zeros(3, dtype=int)``) carries no gradient: no flow reaches it.

The analyses are flow-insensitive fixed points: they over-approximate, which
costs at most some unnecessary work, never a wrong gradient.
"""

from dataclasses import dataclass

import gast

from srcgrad import anno, rules
# names_in: the names a node reads (Load context); the passes import it from here too.
from srcgrad.ast_util import reads as names_in
from srcgrad.rules import Method

Static = anno.Static

_OPERATORS = None


def operator_of(op):
    """The ``operator`` module function for a gast operator node."""
    global _OPERATORS
    if _OPERATORS is None:
        import operator
        _OPERATORS = {
            gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
            gast.Div: operator.truediv, gast.Pow: operator.pow, gast.MatMult: operator.matmul,
            gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod, gast.USub: operator.neg,
            gast.UAdd: operator.pos, gast.Not: operator.not_, gast.Invert: operator.invert,
            gast.BitAnd: operator.and_, gast.BitOr: operator.or_, gast.BitXor: operator.xor,
            gast.LShift: operator.lshift, gast.RShift: operator.rshift,
        }
    return _OPERATORS[type(op)]


@dataclass(frozen=True)
class Activity:
    active: frozenset
    useful: frozenset
    adjoint: frozenset
    saved: frozenset
    sequences: frozenset
    params: tuple
    mixed: frozenset = frozenset()  # sequences also bound to other values (an array made of one)


def primitive_of(value):
    """The registry key of the operation ``value`` performs, or None for data movement."""
    if isinstance(value, gast.BinOp):
        return operator_of(value.op)
    if isinstance(value, gast.UnaryOp):
        return operator_of(value.op)
    if isinstance(value, gast.Call):
        return anno.getanno(value, Static.PRIMITIVE)
    if isinstance(value, gast.Attribute):
        return anno.getanno(value, Static.PRIMITIVE)
    return None


def value_deps(value, zero_gradients=False):
    """Names whose gradient can flow into ``value``'s result (empty: a constant); with
    ``zero_gradients``, also those reaching it through a piecewise-constant primitive
    (``np.floor``: rules.zero_gradient), whose gradient is zero."""
    if isinstance(value, gast.Name):
        return {value.id}
    if isinstance(value, (gast.Constant, gast.Compare, gast.BoolOp, gast.JoinedStr, gast.Set)):
        return set()
    if isinstance(value, gast.Dict):
        return set().union(*[value_deps(v, zero_gradients) for v in value.values]) if value.values else set()
    if isinstance(value, (gast.Tuple, gast.List)):
        return set().union(*[value_deps(e, zero_gradients) for e in value.elts]) if value.elts else set()
    if isinstance(value, gast.Subscript):
        return value_deps(value.value, zero_gradients)
    primitive = primitive_of(value)
    if primitive is not None and rules.is_nondifferentiable(primitive) and not (
            zero_gradients and rules.has_zero_gradient(primitive)):
        return set()
    if isinstance(value, gast.Attribute):
        return value_deps(value.value, zero_gradients)
    if isinstance(value, gast.Call):
        deps = set()
        if isinstance(primitive, Method):
            deps |= value_deps(value.func.value, zero_gradients)
        for a in value.args:
            deps |= value_deps(a, zero_gradients)
        for k in value.keywords:
            deps |= value_deps(k.value, zero_gradients)
        return deps
    return names_in(value)


class _Facts:
    """Flow facts: (target, deps) pairs, plus where each name is bound."""

    def __init__(self, kinds=None, zero_gradients=False):
        self.kinds = kinds       # kinds.infer's result, or None (no dtype facts)
        self.zero_gradients = zero_gradients   # value_deps' flag
        self.flows = []          # (target name, set of source names)
        self.defs = {}           # name -> number of binding sites
        self.in_loop = set()     # names bound inside a loop
        self.sequences = set()
        self.others = set()      # names bound to a value that is not a list or tuple display
        self.copies = []         # (target, source) for sequence propagation

    def walk(self, body, loop_depth=0):
        for s in body:
            if isinstance(s, gast.Assign):
                target = s.targets[0]
                if isinstance(target, gast.Name):
                    self.bind(target.id, loop_depth)
                    if not anno.getanno(s, Static.NO_ADJOINT) and not self.integer(s.value):
                        self.flows.append((target.id, value_deps(s.value, self.zero_gradients)))
                    if isinstance(s.value, (gast.List, gast.Tuple, gast.Dict)) or (
                            isinstance(s.value, gast.Call) and (
                                primitive_of(s.value) in (list, tuple, dict)
                                or rules.is_sequence_result(primitive_of(s.value)))):
                        self.sequences.add(target.id)
                    elif isinstance(s.value, gast.Name):
                        self.copies.append((target.id, s.value.id))
                    else:
                        self.others.add(target.id)
                elif isinstance(target, gast.Subscript) and not anno.getanno(s, Static.NO_ADJOINT) \
                        and not self.integer(target.value):
                    self.flows.append((target.value.id, value_deps(s.value, self.zero_gradients)))
            elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
                func = s.value.func
                if isinstance(func, gast.Attribute) and func.attr == "append" and isinstance(func.value, gast.Name):
                    if not anno.getanno(s, Static.NO_ADJOINT):
                        self.flows.append((func.value.id, value_deps(s.value.args[0], self.zero_gradients) if s.value.args else set()))
                    self.sequences.add(func.value.id)
            elif isinstance(s, gast.For):
                self.bind(s.target.id, loop_depth + 1)
                self.walk(s.body, loop_depth + 1)
            elif isinstance(s, gast.While):
                self.walk(s.body, loop_depth + 1)
            elif isinstance(s, gast.If):
                self.walk(s.body, loop_depth)
                self.walk(s.orelse, loop_depth)

    def integer(self, value):
        """``value`` certainly holds integers or booleans (a store into it truncates)."""
        return self.kinds is not None and self.kinds.is_integer(value)

    def bind(self, name, loop_depth):
        self.defs[name] = self.defs.get(name, 0) + 1
        if loop_depth:
            self.in_loop.add(name)


def _fixpoint(seeds, edges):
    """Names reachable from ``seeds`` along ``edges`` (a dict name -> set of names)."""
    found = set(seeds)
    work = list(seeds)
    while work:
        name = work.pop()
        for nxt in edges.get(name, ()):
            if nxt not in found:
                found.add(nxt)
                work.append(nxt)
    return found


def resolve(node, wrt_names, kinds=None):
    """Analyse FunctionDef ``node`` (in A-normal form) for gradients w.r.t. ``wrt_names``.

    ``kinds`` (kinds.infer's result) says which values are integers: they stay inactive.
    """
    facts = _Facts(kinds)
    facts.walk(node.body)
    params = tuple(a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs)

    forward = {}
    backward = {}
    for target, deps in facts.flows:
        for d in deps:
            forward.setdefault(d, set()).add(target)
            backward.setdefault(target, set()).add(d)
    active = _fixpoint(wrt_names, forward)

    ret = node.body[-1]
    outputs = names_in(ret.value) if isinstance(ret, gast.Return) and ret.value is not None else set()
    useful = _fixpoint(outputs, backward)

    saved = {n for n, count in facts.defs.items() if count > 1 or n in facts.in_loop}
    saved |= {p for p in params if p in facts.defs}

    sequences = set(facts.sequences)
    changed = True
    while changed:
        changed = False
        for target, source in facts.copies:
            if source in sequences and target not in sequences:
                sequences.add(target)
                changed = True

    return Activity(frozenset(active), frozenset(useful), frozenset(active & useful),
                    frozenset(saved), frozenset(sequences), params,
                    frozenset(sequences & facts.others))


def zero_gradient_inputs(node, wrt_names, kinds=None):
    """The names of ``wrt_names`` the output of FunctionDef ``node`` (in A-normal form)
    depends on only through piecewise-constant primitives (``np.sum(np.floor(x))``): their
    gradient is zero, as PyTorch and JAX give, not missing."""
    facts = _Facts(kinds, zero_gradients=True)
    facts.walk(node.body)
    backward = {}
    for target, deps in facts.flows:
        for d in deps:
            backward.setdefault(target, set()).add(d)
    ret = node.body[-1]
    outputs = names_in(ret.value) if isinstance(ret, gast.Return) and ret.value is not None else set()
    return _fixpoint(outputs, backward) & set(wrt_names)
