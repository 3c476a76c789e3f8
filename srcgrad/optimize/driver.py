"""The optimizer of the backward sweep: its passes, in the order they run.

Every pass is a module with ``run(body, facts) -> changed``: it rewrites the
statements ``body`` in place and reports whether it changed anything; ``facts``
(facts.py) carries what passes share. Each module's docstring shows the pass's
before and after.

Once, on the sweep reverse.py built:

1. ``unbroadcast``: ``rt.unbroadcast(g, x)`` is ``g`` when the shape classes say
   ``g`` already broadcasts into ``x``; a remaining helper reads its shape from the
   class's root parameter; a whole array's reduction size is ``x.size``.
2. ``reductions``: the gradient of a full reduction stays a scalar until it meets an
   array (``rt.unreduce`` of a scalar dropped where only elementwise uses follow).

To a fixed point:

3. ``first_contributions``: ``d = 0.0 ... d = d + g`` becomes ``d = g``.
4. ``loop_carried``: inside a loop or branch entered and left with ``d`` zero,
   ``d = d + g`` as the first use of ``d`` becomes ``d = g``.
5. ``zeros``: where ``d`` is certainly the ``0.0`` of a reset (a forward analysis
   through branches and loops), ``d = d + g`` is ``d = g``, and adding or resetting
   a known zero is dropped.
6. ``copies``: after ``a = b``, later reads of ``a`` read ``b``.
7. ``dead``: assignments nothing reads are not computed (analysis/liveness.py).

Once, at the end:

8. ``index_buffers``: an adjoint only ever added into at integer positions is an
   owned array: ``dx[i] += g`` instead of ``rt.add_at``.
9. ``merge``: two identical contributions in a row become one, doubled.
10. ``sink``: a statement after an ``if`` that does nothing for a zero name
    (``dx[i] += d``, ``d = 0.0``) moves into the branches where it may not be zero.
11. ``dead`` again: the resets sinking made unread.
12. ``temporaries``: a temporary assigned once and read once later in its block is
    written into its use.
13. ``subtract``: ``a + -b`` is written ``a - b``.
14. ``in_place``: ``d = d + g`` becomes ``d += g`` where ``d`` owns its array.

After the tape is pruned (transform/reverse.py: a loop's pops of values the adjoint
does not read are gone by then): ``powers``, a loop that only multiplies an adjoint by
2 (4, 8) multiplies it by 64 six steps at a time, and once by the rest (bit-identical).

The forward sweep (``transform_forward``), where only names the compiler made may
change and every effect and error stays where the user's code had it:

* ``FORWARD``, on the forward sweep reverse.py built: ``loop_invariants``, arithmetic
  of literal constants computed once before its loop.
* then ``forward.forward_for_gradient`` copies it, less the statements only the
  output needed (``grad`` does not return it);
* ``FORWARD_LAST``, on each of the two: ``forward_temporaries``, a temporary used
  once, and neither saved nor pushed, is written into its use.

Outside the sweeps: ``release.release_dead`` frees values once dead in a composed
gradient; ``loop_accumulators`` adds a loop's accumulators in place there.
"""

import gast

from srcgrad.optimize import (copies, dead, first_contributions, forward_temporaries, in_place,
                              index_buffers, loop_carried, loop_invariants, merge, reductions,
                              sink, subtract, temporaries, unbroadcast, zeros)
from srcgrad.optimize.facts import Facts, inplace_targets
from srcgrad.templates import clone
from srcgrad import ast_util

PREPARE = [unbroadcast, reductions]
FIXED_POINT = [first_contributions, loop_carried, zeros, copies, dead]
FINISH = [index_buffers, merge, sink, dead, temporaries, subtract, in_place]
FORWARD = [loop_invariants]
FORWARD_LAST = [forward_temporaries]
# Passes that change nothing when run again right after a run that changed something:
# settled by their own change, they are not run again until another pass changes the
# sweep (the fixed point's confirming round ran them once more). ``dead``: the
# statements its one walk skips are walked as if absent, so on the sweep without them
# the walk makes the same decisions and skips nothing more. ``first_contributions``: a
# fold deletes a zero and turns the accumulation after it into an assignment, or puts
# zeros first in the branches of an ``if`` (whose blocks it goes through after their
# own block), so the statement after any zero it kept is still no accumulation of its
# name, and every zero it made was looked at.
IDEMPOTENT = frozenset((dead, first_contributions))


def transform(body, adjoint_names, generated, classes=None, fixed=(), roots=(), buffers=None,
              indices=(), returned=None, in_place=True, skip_settled=True, names=None):
    """Optimize the backward sweep's statements ``body`` in place, to a fixed point.

    ``classes``, ``fixed``, ``roots``: shape facts (see ``unbroadcast``); ``buffers``
    and ``indices``: see ``index_buffers``; ``returned``: see ``reductions`` (None:
    reduction gradients are spread as they are); ``in_place``: run ``in_place``;
    ``skip_settled``: see ``run``. ``names``: the ``NameSets`` the passes keep (the
    caller's, which it asks afterwards: every pass keeps it valid), by default a fresh
    one. Returns the names whose ranks or shape classes the optimized sweep relies on.
    """
    facts = Facts(adjoint_names, generated, classes, fixed, roots, buffers, indices, returned,
                  in_place)
    if names is not None:
        facts.use_names(names)
    run(body, facts, skip_settled)
    return facts.used


def transform_forward(function, generated, classes=None, passes=FORWARD):
    """Run ``passes`` on the forward sweep FunctionDef ``function``, in place.

    ``generated``: the names the compiler made, which passes may fold or move (never a
    user's variable); ``classes``: the shape classes of analysis/ranks.py. Returns
    whether any pass changed the sweep.
    """
    args = function.args
    params = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
    params += [a.id for a in (args.vararg, args.kwarg) if a is not None]
    facts = Facts(generated=generated, classes=dict(classes or {}), params=params)
    # The sweep and its gradient-only copy share their simple statements
    # (optimize/forward.py): forward_temporaries replaces a statement it changes.
    facts.copy_uses = True
    return _run_each(passes, function.body, facts)


def run(body, facts, skip_settled=True):
    """Run every pass on ``body``; returns whether any changed it.

    Every pass forgets each statement it edits in place (``NameSets.forget_edited``;
    ``NameSets`` notices statements added to or dropped from a block by itself), so the
    name sets are kept from pass to pass and round to round, each computed again only
    where a pass changed it. SRCGRAD_CHECK_NAME_SETS checks every kept set.

    A pass is a function of the sweep and the facts: one whose last run changed nothing,
    no pass having changed anything since, would change nothing again, and is skipped
    (``skip_settled``; False runs every pass as listed, for the tests that compare).
    The last round of the fixed point then runs only the passes up to the one that
    changed the round before, less an ``IDEMPOTENT`` pass where it changed last, and
    ``FINISH``'s ``dead`` is skipped when the passes before it changed nothing
    (SRCGRAD_CHECK_NAME_SETS runs each skipped pass and checks it changes nothing)."""
    settled = set() if skip_settled else None
    changed = _run_settled(PREPARE, body, facts, settled)
    # pass -> the names it is to look at in its next run (None: all of them; see
    # ``_only``), kept only when passes are skipped (``skip_settled``).
    pending = {module: None for module in FIXED_POINT} if skip_settled else None
    while True:
        inplace = facts.inplace
        facts.inplace = inplace_targets(body, facts.names)
        if pending is not None and inplace != facts.inplace:
            _touched(pending, None, inplace ^ facts.inplace)
        if not _run_settled(FIXED_POINT, body, facts, settled, pending):
            break
        changed = True
    return _run_settled(FINISH, body, facts, settled) or changed


# The fixed point's passes that run restricted to the names touched since their last run
# (``facts.only``). Each decides for each adjoint (first_contributions, loop_carried:
# a zero or an accumulation of it; zeros: whether it is certainly zero; copies: a copy
# ``a = b``, for ``a`` and ``b``) from the statements holding that name alone, so it
# decides nothing new for a name no statement holding it changed since (and none it
# could have decided then: the last run decided it, and a pass not ``IDEMPOTENT`` also
# looks again at the names of its own changes). ``dead`` is not among them: whether
# an assignment is dead depends on the other assignments dead with it (a chain).
RESTRICTED = frozenset((first_contributions, loop_carried, zeros, copies))


def _touched(pending, module, names):
    """Add ``names`` (touched by ``module``'s run, or otherwise changed: None) to what
    every pass of the fixed point is to look at next; ``module`` itself starts afresh
    (an ``IDEMPOTENT`` pass: its own changes settle it)."""
    for other, only in pending.items():
        if other is module:
            pending[other] = set() if module in IDEMPOTENT else set(names)
        elif only is not None:
            only |= names


def _run_settled(passes, body, facts, settled, pending=None):
    """Run ``passes`` in order, less those in ``settled`` (None: none skipped), which
    holds the passes that changed nothing since the last change; returns whether any
    changed ``body``. ``pending``: pass -> the names to restrict its run to (``facts.only``;
    None: all), updated with what each run touched (``facts.touched``)."""
    changed = False
    for module in passes:
        if settled is None:
            changed = bool(module.run(body, facts)) or changed
        elif module not in settled:
            if pending is not None and module in pending:
                found = _run_recorded(module, body, facts, pending)
            else:
                found = module.run(body, facts)
            if found:
                settled.clear()
                if module in IDEMPOTENT:
                    settled.add(module)
                changed = True
            else:
                settled.add(module)
        elif ast_util.CHECK_NAME_SETS and module.run(body, facts):
            raise ast_util.StaleNameSets(f"{module.__name__}: a settled pass changed the sweep")
    return changed


def _run_recorded(module, body, facts, pending):
    """Run a pass of the fixed point, restricted to the names ``pending`` holds for it
    where it is ``RESTRICTED``, and note the names its changes touched."""
    only = pending[module] if module in RESTRICTED else None
    if ast_util.CHECK_NAME_SETS and only is not None:
        expected = _unrestricted(module, body, facts)
    facts.only, facts.touched = only, set()
    try:
        found = module.run(body, facts)
    finally:
        facts.only = None
    if ast_util.CHECK_NAME_SETS:
        if bool(found) != bool(facts.touched):
            raise ast_util.StaleNameSets(f"{module.__name__}: changed {bool(found)}, touched "
                                         f"{sorted(facts.touched)}")
        if only is not None and [gast.dump(s) for s in body] != expected:
            raise ast_util.StaleNameSets(f"{module.__name__}: the run restricted to "
                                         f"{sorted(only)} differs from a full run")
    _touched(pending, module, facts.touched)
    return found


def _unrestricted(module, body, facts):
    """SRCGRAD_CHECK_NAME_SETS: the dumps of ``body``'s statements after a full run of
    ``module`` on a copy (the facts' name sets kept apart)."""
    copy = [clone(s) for s in body]
    names = facts.names
    facts.use_names(ast_util.NameSets())
    try:
        module.run(copy, facts)
    finally:
        facts.use_names(names)
    return [gast.dump(s) for s in copy]


def _run_each(passes, body, facts, keep=False):
    changed = False
    for module in passes:
        if module.run(body, facts):
            if not keep:
                facts.invalidate()   # statements were rewritten: their name sets are stale
            changed = True
    return changed
