"""Unbroadcasts dropped: ``rt.unbroadcast(g, x)`` is ``g`` when ``g`` broadcasts into
``x``'s shape, and ``rt.unreduce(g, x, ...)`` of a scalar ``x`` is ``g``.

    dx = rt.unbroadcast(dy * w, x)    ->    dx = dy * w      (dy, w, x of one class)

``facts.classes`` gives the shape class of primal names (analysis/ranks.py: names
of one class have one shape; SCALAR broadcasts into any) and of their adjoints (an
adjoint broadcasts into its primal's shape). Other names of the sweep get the class
every assignment to them has; ``facts.fixed`` names (primals, adjoints) are never
inferred that way. The shape a remaining helper reads is taken from the class's
root parameter (in ``facts.roots``) where there is one, so the value itself need
not be kept; ``rt.reduction_size`` of a whole array of a known class is its size.

Sets ``facts.sweep_classes`` (the classes once the unbroadcasts are gone; later
rewrites keep every name within its class) and adds the names the rewrite relied on
to ``facts.used``.
"""

import gast

from srcgrad.analysis.activity import names_in
from srcgrad.analysis.ranks import SCALAR, UNKNOWN
from srcgrad.ast_util import is_rt_call, name, own_parts, walk_statements
from srcgrad.optimize.exprs import class_of, shape_helper
from srcgrad import ast_util


def run(body, facts):
    if not facts.classes:
        return False
    bindings = _bindings(body)
    classes, inferred = infer_sweep_classes(body, facts.classes, facts.fixed, bindings)
    dropper = _Dropper(classes, inferred, facts.roots)
    for s in walk_statements(body):
        if any(n.func.__class__ is gast.Attribute and n.func.attr in _HELPERS
               for part in own_parts(s) for n in facts.names.calls(part)):
            dropper.rewrite(s)   # (most statements hold no shape helper)
    facts.names.forget_edited(*dropper.edited)
    facts.used |= dropper.relied_on()
    if dropper.edited:   # (the same statements and targets: only values changed)
        classes = infer_sweep_classes(body, facts.classes, facts.fixed, bindings)[0]
    facts.sweep_classes = classes
    return dropper.changed


_HELPERS = {"unbroadcast", "unreduce", "reduction_size"}   # the calls _Dropper rewrites


def _bindings(body):
    """Name -> its bindings in ``body``, in order: the statement ``name = value`` for a
    name bound alone by an assignment (its value read when asked: a rewrite of the
    values keeps these), None for any other binding."""
    assigned = {}
    Name, Store = gast.Name, gast.Store
    for s in walk_statements(body):
        if isinstance(s, gast.Assign):
            targets = s.targets
            if len(targets) == 1 and targets[0].__class__ is Name:   # (most assignments)
                if targets[0].ctx.__class__ is Store:
                    assigned.setdefault(targets[0].id, []).append(s)
                continue
            for t in targets:
                for n in ast_util.walk(t):
                    if isinstance(n, Name) and isinstance(n.ctx, Store):
                        assigned.setdefault(n.id, []).append(s if t is n and len(targets) == 1
                                                             else None)
        elif isinstance(s, (gast.For, gast.AugAssign)):
            for n in ast_util.walk(s.target):
                if isinstance(n, Name):
                    assigned.setdefault(n.id, []).append(None)
    return assigned


def infer_sweep_classes(body, classes, fixed, bindings=None):
    """``classes`` plus the class of each generated name of the sweep whose every
    assignment has one class (``fixed`` names are never inferred that way).
    ``bindings``: ``_bindings(body)``, when the caller has it.

    Returns (classes, generated name -> the names its assignments read).
    """
    classes = dict(classes)
    assigned = {n: [None if s is None else s.value for s in found]
                for n, found in (_bindings(body) if bindings is None else bindings).items()}
    inferred = {}   # generated name -> the names its assignments read
    changed = True
    while changed:
        changed = False
        for n in set(assigned) - set(fixed) - set(inferred):
            values = assigned[n]
            if any(v is None for v in values):
                continue
            found = {class_of(v, classes) for v in values}
            if len(found) == 1 and None not in found:
                classes[n] = found.pop()
                inferred[n] = set().union(*(names_in(v) for v in values))
                changed = True
    return classes, inferred


class _Dropper(ast_util.StatementTransformer):
    """Rewrites the shape helpers whose answer the classes already give."""

    def __init__(self, classes, inferred, roots):
        super().__init__()
        self.classes, self.inferred, self.roots = classes, inferred, roots
        self.used = set()
        self.changed = False

    def relied_on(self):
        """The names whose classes the rewrite relied on (through inferred names too)."""
        used = set(self.used)
        pending = list(used)
        while pending:
            for n in self.inferred.get(pending.pop(), ()):
                if n not in used:
                    used.add(n)
                    pending.append(n)
        return used - set(self.inferred)

    def _root(self, node, position, target, shape):
        """Read the shape from the class's root parameter instead of ``target``."""
        if shape in self.roots and shape != target:
            self.used.update((target, shape))
            node.args[position] = name(shape)
            self.changed = True
            self.edit()

    def rewrite(self, s):
        """``visit_own_parts(s)``, visiting only the calls (``rewrite_own_parts``: a
        rewrite reads only its call, its arguments rewritten, and the classes)."""
        self.rewrite_own_parts(s, gast.Call, self._rewritten)

    def visit_Call(self, node):
        self.generic_visit(node)
        return self._rewritten(node)

    def _rewritten(self, node):
        """What the call ``node`` (its arguments rewritten) becomes: itself or its value."""
        if is_rt_call(node, "reduction_size") and node.args and isinstance(node.args[0], gast.Name):
            return self._reduction_size(node)
        if not shape_helper(node):
            return node
        target = node.args[1].id
        shape = self.classes.get(target)
        if shape is None:
            return node
        unbroadcast = node.func.attr == "unbroadcast" and len(node.args) == 2
        if (unbroadcast and class_of(node.args[0], self.classes) in (SCALAR, shape)) \
                or (node.func.attr == "unreduce" and shape == SCALAR):
            self.used.update(names_in(node))
            self.changed = True
            self.edit()
            return node.args[0]
        self._root(node, 1, target, shape)
        return node

    def _reduction_size(self, node):
        target = node.args[0].id
        shape = self.classes.get(target)
        extra = node.args[1:]
        at_least = extra[1].value if len(extra) == 2 and isinstance(extra[1], gast.Constant) else 0
        whole = not extra or (len(extra) <= 2 and isinstance(extra[0], gast.Constant)
                              and extra[0].value is None and at_least in (0, 1))
        self._root(node, 0, target, shape)
        if whole and shape not in (None, SCALAR, UNKNOWN):
            self.used.add(target)   # an array: its size, without the helper's axis handling
            self.changed = True
            self.edit()
            size = gast.Attribute(value=node.args[0], attr="size", ctx=gast.Load())
            if at_least:   # a mean's divisor: 1 for an empty array, whose gradient is empty
                return gast.BoolOp(op=gast.Or(), values=[size, gast.Constant(value=1, kind=None)])
            return size
        return node
