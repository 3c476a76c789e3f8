"""Known zeros: where a name certainly holds the ``0.0`` a reset gave it, adding to it
is assigning, adding it is nothing, and resetting it again is nothing.

    dii = 0.0                             dii = 0.0
    for i in r:                           for i in r:
        if cond:                              if cond:
            dii = dii + g        ->               dii = g
        dx[i] += dii                          dx[i] += dii
        dii = 0.0                             dii = 0.0

``dii`` is zero on entry to each iteration (zero before the loop, reset at the end
of the body), so the branch's first contribution is an assignment. A forward
analysis finds the names certainly zero before each statement: a ``d = 0.0`` makes
``d`` zero, any other binding of ``d`` ends it, branches keep what both keep, and a
loop keeps what its body keeps around the back edge (a loop with ``break``,
``continue`` or an ``else`` keeps only the names its body never binds).

Rewrites, for an adjoint ``d`` no runtime helper updates in place:
``d = d + g`` -> ``d = g``; ``d = 0.0`` where ``d`` is already zero is dropped;
``x[i] += d`` and ``x += d`` with ``d`` zero are dropped (adding zero changes nothing
an owned array holds).
"""

import gast

from srcgrad.ast_util import accumulation, assigned_name, child_blocks, is_zero
from srcgrad import ast_util

_LOOPS = (gast.For, gast.While)
_JUMPS = (gast.Break, gast.Continue, gast.Return, gast.Raise)
# Statements without blocks or handlers that bind what they store (not a ``del``).
_PLAIN = frozenset((gast.Assign, gast.AugAssign, gast.Expr, gast.Return, gast.Pass))


def run(body, facts):
    tracked = facts.adjoints - facts.inplace
    if facts.only is not None:   # the names to look at (driver.py)
        tracked &= facts.only
    before = known_zeros(body, tracked, facts.names)
    return _rewrite(body, before, facts)


def known_zeros(body, tracked, names):
    """id(statement) -> the ``tracked`` names certainly ``0.0`` before it (statements
    of blocks the analysis cannot follow are left out). ``names``: a ``NameSets``."""
    before = {}

    def _bound(node):
        """Names ``node`` binds or deletes, nested blocks included."""
        if isinstance(node, gast.Delete):
            return names.refs(node)
        return names.stores(node)

    def block(stmts, zero):
        run = None   # the run of plain statements being walked (``_Run``)
        for s in stmts:
            if s.__class__ in _PLAIN:
                if run is None:
                    run = _Run(zero)
                before[id(s)] = run.step(s, names.stores(s), tracked)
                continue
            if run is not None:
                zero, run = run.after(), None
            before[id(s)] = zero
            zero = statement(s, zero)
        return zero if run is None else run.after()

    def statement(s, zero):
        """The known zeros after ``s`` (``block`` steps plain statements itself: ``_Run``)."""
        if isinstance(s, gast.If):
            bound = _bound(s.test)
            if not bound.isdisjoint(zero):
                zero = zero - bound
            return block(s.body, zero) & block(s.orelse, zero)
        if isinstance(s, _LOOPS):
            return loop(s, zero)
        if child_blocks(s) or hasattr(s, "handlers"):
            return zero - _every_binding(s)   # with, try: not followed inside
        bound = _bound(s)
        if not bound.isdisjoint(zero):   # a new set only where it changes (the sets are
            zero = zero - bound          # shared: copying each is quadratic in a long body)
        target = assigned_name(s)
        if target in tracked and target not in zero and is_zero(s.value):
            zero = zero | {target}
        return zero

    def loop(s, zero):
        target = _bound(s.target if isinstance(s, gast.For) else s.test)
        if s.orelse or _jumps(s.body):
            entry = zero - _every_binding(s) - target
            block(s.body, entry)
            return entry
        entry = zero - target
        while True:
            out = block(s.body, entry) - target
            if entry <= out:
                return entry
            entry = entry & out

    block(body, frozenset())
    del block, statement, loop   # (they call each other through cells: a cycle to free)
    return before


class _Run:
    """The known zeros through a run of plain statements, as ``statement`` computes them,
    without a new set per statement: a statement binding a known zero made one of the
    size of the set (quadratic in a long loop body whose adjoints all start at zero).
    The set is changed in place, each change logged by name; what ``step`` returns
    answers ``in`` and truth for the set before its statement (all ``_rewrite`` asks)."""

    __slots__ = ("base", "current", "changes", "sizes")

    def __init__(self, zero):
        self.base = zero      # the set before the run's first statement
        self.current = zero   # the set after the statements stepped through (a copy
        self.changes = {}     # once it changes); name -> [(statement number, in it after)]
        self.sizes = []       # statement number -> the set's size before it

    def step(self, s, bound, tracked):
        """The set before ``s`` (a ``_Before``); then ``s``'s effect, as ``statement``'s."""
        k = len(self.sizes)
        current = self.current
        self.sizes.append(len(current))
        found = _Before(self, k)
        if not bound.isdisjoint(current):
            if current is self.base:
                current = self.current = set(current)
            for n in bound:
                if n in current:
                    current.discard(n)
                    self.changes.setdefault(n, []).append((k, False))
        target = assigned_name(s)
        if target in tracked and target not in current and is_zero(s.value):
            if current is self.base:
                current = self.current = set(current)
            current.add(target)
            self.changes.setdefault(target, []).append((k, True))
        return found

    def after(self):
        """The set after the run (a frozenset, as ``statement`` makes them)."""
        return self.base if self.current is self.base else frozenset(self.current)


class _Before:
    """The known zeros before the ``k``-th statement of a ``_Run``: ``in`` and truth."""

    __slots__ = ("run", "k")

    def __init__(self, run, k):
        self.run, self.k = run, k

    def __contains__(self, name):
        changes = self.run.changes.get(name)
        if changes is not None:
            for at, present in reversed(changes):
                if at < self.k:
                    return present
        return name in self.run.base

    def __bool__(self):
        return self.run.sizes[self.k] > 0

    def __len__(self):
        return self.run.sizes[self.k]


def _jumps(stmts):
    """A jump out of the loop these statements are the body of (not of a nested loop)."""
    for s in stmts:
        if isinstance(s, _JUMPS):
            return True
        if not isinstance(s, _LOOPS) and any(_jumps(inner) for inner in child_blocks(s)):
            return True
        if isinstance(s, _LOOPS) and any(isinstance(n, (gast.Return, gast.Raise))
                                         for n in ast_util.walk(s)):
            return True
    return False


def _adds_zero(s, zero):
    """``x[i] += d`` or ``x += d`` with ``d`` known zero."""
    return (isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add)
            and isinstance(s.value, gast.Name) and s.value.id in zero)


def _rewrite(stmts, before, facts):
    changed = False
    kept = []
    for s in stmts:
        zero = before.get(id(s))
        if zero:
            target = assigned_name(s)
            if target in zero and is_zero(s.value):
                facts.touch(s)
                changed = True
                continue   # already zero
            if _adds_zero(s, zero):
                facts.touch(s)
                changed = True
                continue
            found = accumulation(s, facts.names)
            if found is not None and found[0] in zero:
                facts.touch(s)
                s.value = found[1]
                facts.names.forget(s)
                changed = True
        for inner in child_blocks(s):
            changed |= _rewrite(inner, before, facts)
        if isinstance(s, (gast.If,) + _LOOPS) and not s.body:
            s.body.append(gast.Pass())
        kept.append(s)
    stmts[:] = kept
    return changed


def _every_binding(node):
    """Names bound or deleted anywhere in ``node`` (blocks the name sets do not follow)."""
    return frozenset(n.id for n in ast_util.walk(node)
                     if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load))
