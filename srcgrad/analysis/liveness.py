"""Liveness: which names may still be read after each statement.

A backward walk over the statements: an assignment ``x = ...`` kills ``x`` and
every statement makes the names it reads live. A loop is iterated to a fixed
point over its back edge (its header's names are live around it); an ``if``
joins what its two branches need.

``skip(statement, live_after)`` names statements to treat as absent (they read
nothing, kill nothing): dead-code elimination passes the test for a dead
assignment, so that one walk finds a whole chain of dead statements (``a = x``
then ``b = a`` with ``b`` unread: both go).
"""

import bisect
import collections.abc

import gast

from srcgrad.ast_util import NameSets


def _never(s, live):
    return False


class Liveness:
    """The result: ``after[id(statement)]`` and ``before[id(statement)]``, the names
    live after and before each statement (nested ones included), and ``skipped``, the
    statements ``skip`` took out."""

    def __init__(self, after, before, skipped):
        self.after, self.before, self.skipped = after, before, skipped

    def live_after(self, s):
        return self.after[id(s)]

    def live_before(self, s):
        """The names live when ``s`` starts (a loop: those its first iteration, or the
        code after it when it runs no iteration, may read)."""
        return self.before[id(s)]


def analyze(body, live_out, skip=None, names=None, record=True, only=None):
    """Liveness of ``body`` given the names ``live_out`` read after it.

    Returns a ``Liveness``. ``names``: a ``NameSets`` to ask (shared with the caller's
    pass), by default a fresh one. ``record=False``: only ``skipped`` is wanted (dead.py),
    so the sets live after and before each statement are not copied (copying them is
    what makes the walk quadratic in a long body). ``only``: a set of names, the only
    ones whose liveness is wanted; the sets recorded are the live names among them, exact
    for them (a name's liveness does not depend on another's without ``skip``), and
    small where few of them are live at once, so recording them stays linear.
    """
    names = names or NameSets()
    skip = skip or _never
    after, before, skipped = {}, {}, {}
    if only is None:
        reads = names.loads
    else:
        if skip is not _never:
            raise ValueError("liveness: only= and skip= together")
        live_out = set(live_out) & only

        def reads(node):
            return names.loads(node) & only

    Assign, Name = gast.Assign, gast.Name

    def block(stmts, live):
        live = set(live)
        run = None   # the changes of ``live`` logged since its last copy (``_Run``)
        for s in reversed(stmts):
            if record:
                if run is None:
                    run = _Run(live)
                after[id(s)] = _Live(run, run.step)
            if skip(s, live):
                skipped[id(s)] = s
                if record:
                    run.step += 1
                    before[id(s)] = _Live(run, run.step)
                continue
            skipped.pop(id(s), None)
            if s.__class__ is Assign:   # (most statements)
                targets = s.targets
                if len(targets) == 1:
                    if targets[0].__class__ is Name:
                        target = targets[0].id
                        if target in live:
                            live.discard(target)
                            if record:
                                run.log(target)
                else:
                    for t in targets:
                        if isinstance(t, gast.Name) and t.id in live:
                            live.discard(t.id)
                            if record:
                                run.log(t.id)
                _add(live, reads(s), run if record else None)
            elif isinstance(s, gast.If):
                body_live = block(s.body, live)
                else_live = block(s.orelse, live) if s.orelse else set(live)
                live = body_live | else_live | reads(s.test)
                run = None
            elif isinstance(s, (gast.For, gast.While)):
                head = reads(s.iter) if isinstance(s, gast.For) else reads(s.test)
                loop_live = set(live) | head
                while True:
                    grown = loop_live | block(s.body, loop_live)
                    if grown == loop_live:
                        break
                    loop_live = grown
                if isinstance(s, gast.For):   # its target: killed, but where the code after
                    # the loop reads it (a loop of no iteration leaves the value before it)
                    loop_live = loop_live - (names.stores(s.target) - live) | head
                live = loop_live
                run = None
            else:
                _add(live, reads(s), run if record else None)
            if record:
                if run is None:
                    run = _Run(live)
                else:
                    run.step += 1
                before[id(s)] = _Live(run, run.step)
        return live

    block(body, live_out)
    del block   # (it calls itself through a cell: a cycle the collector would have to free)
    return Liveness(after, before, skipped)


def _add(live, names, run):
    """``live |= names``, each name added logged in ``run`` (when recording)."""
    if run is None:
        live |= names
        return
    for n in names:
        if n not in live:
            live.add(n)
            run.log(n)


class _Run:
    """A walk's live set through a run of statements of one block, without a copy per
    statement (copying it at each was quadratic in a long body whose values stay live,
    as a forward sweep's saved values): the set when the run started and each later
    change, by name, numbered by the statement that made it."""

    __slots__ = ("base", "changes", "step")

    def __init__(self, live):
        self.base = frozenset(live)
        self.changes = {}   # name -> the steps that added or removed it, in order
        self.step = 0       # the statements walked

    def log(self, name):
        found = self.changes.get(name)
        if found is None:
            self.changes[name] = [self.step]
        else:
            found.append(self.step)


class _Live(collections.abc.Set):
    """The live set of one point of a ``_Run`` (a read-only set: ``in``, ``len``,
    iteration, comparisons and set operations, which give plain sets)."""

    __slots__ = ("run", "step")

    def __init__(self, run, step):
        self.run, self.step = run, step

    def __contains__(self, name):
        run = self.run
        steps = run.changes.get(name)
        if steps is None:
            return name in run.base
        # Each change flips the name; those of the statements walked before this point count.
        flips = bisect.bisect_left(steps, self.step)
        return (name in run.base) ^ bool(flips & 1)

    def _names(self):
        run = self.run
        return {n for n in run.base.union(run.changes) if n in self}

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._names())

    def __repr__(self):
        return repr(self._names())

    @classmethod
    def _from_iterable(cls, iterable):
        return set(iterable)

    __hash__ = None
