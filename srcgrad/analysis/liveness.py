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
        for s in reversed(stmts):
            if record:
                after[id(s)] = set(live)
            if skip(s, live):
                skipped[id(s)] = s
                if record:
                    before[id(s)] = set(live)
                continue
            skipped.pop(id(s), None)
            if s.__class__ is Assign:   # (most statements)
                targets = s.targets
                if len(targets) == 1:
                    if targets[0].__class__ is Name:
                        live.discard(targets[0].id)
                else:
                    live -= {t.id for t in targets if isinstance(t, gast.Name)}
                live |= reads(s)
            elif isinstance(s, gast.If):
                body_live = block(s.body, live)
                else_live = block(s.orelse, live) if s.orelse else set(live)
                live = body_live | else_live | reads(s.test)
            elif isinstance(s, (gast.For, gast.While)):
                head = reads(s.iter) if isinstance(s, gast.For) else reads(s.test)
                loop_live = set(live) | head
                while True:
                    grown = loop_live | block(s.body, loop_live)
                    if grown == loop_live:
                        break
                    loop_live = grown
                live = loop_live
                if isinstance(s, gast.For):
                    live = live - names.stores(s.target) | head
            else:
                if isinstance(s, gast.Assign):
                    live -= {t.id for t in s.targets if isinstance(t, gast.Name)}
                live |= reads(s)
            if record:
                before[id(s)] = set(live)
        return live

    block(body, live_out)
    del block   # (it calls itself through a cell: a cycle the collector would have to free)
    return Liveness(after, before, skipped)
