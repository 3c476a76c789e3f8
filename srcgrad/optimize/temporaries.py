"""Single-use temporaries folded: a sweep temporary assigned once and read once, later
in the same block, is written into its one use, so the adjoint reads like the
expression a person would write.

    dT_low_minus_T_pow_2 = dcost * w_comfort
    dT_low_minus_T = dT_low_minus_T_pow_2 * 2 * T_low_minus_T
    dT = dT + -dT_low_minus_T
                                ->    dT = dT + -(dcost * w_comfort * 2 * T_low_minus_T)

Folded only when it cannot change a value or an effect: the definition is a pure
expression (the sweep's own arithmetic and helpers, no tape, no hook) that does not
read its own target; the use is a plain statement of the same block (not a nested
block: a loop would evaluate it more often; not a return: the result keeps its
name); nothing in between binds, mutates or
passes to a call any name the expression reads; the temporary is read nowhere else
and not live after its use. Runs when the sweep's statements are not fused
afterwards (``facts.in_place``): the fuser groups statements, not expressions.
"""

import gast

from srcgrad import anno
from srcgrad.analysis import liveness
from srcgrad.ast_util import assigned_name, blocks, loads
from srcgrad.optimize.exprs import pure, pure_calls
from srcgrad import ast_util

Static = anno.Static

_PLAIN = (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)
_USES = (gast.Assign, gast.AugAssign, gast.Expr)   # a returned adjoint keeps its name


def run(body, facts):
    if not facts.in_place:
        return False
    changed = False
    # The name sets stay memoized from round to round: a fold forgets what it edits (the
    # use, and the compound statements around its block), so only those are walked again.
    effects = _Effects(facts.names)
    while True:
        live = liveness.analyze(body, set(), names=facts.names, only=candidates(body, facts))
        touched = set()   # names whose liveness a fold of this round changed
        round_ = _Round()
        for block, around in _blocks_around(body):
            _fold_block(block, around, live, touched, facts, effects, round_)
        if not round_.folded:
            return changed
        changed = True
        if not round_.may_fold_again():
            if ast_util.CHECK_NAME_SETS:
                _check_settled(body, facts, effects)
            return changed


class _Round:
    """What one round of folds did, to tell whether another round could fold anything.

    A fold deletes the definition ``D`` (``t_D = e``, pure, in the block of its use ``U``)
    and writes ``e`` into ``U``: ``U``'s loads lose ``t_D`` and gain ``e``'s, its stores,
    purity and writes stay, and nothing between ``D`` and ``U`` binds a name ``e`` reads.
    A candidate rejected for what it is (not removable, taped, impure, reading its own
    target) is rejected again. One rejected by its use (none; not a plain statement;
    read twice there; a binding or a call between; still live after it), seen on the
    tree as it then was, is rejected again after later folds unless its target is a
    ``t_D`` (a binding that stopped it is gone) or it reads one (``D`` was what
    disturbed it): a fold moves the reads of ``e``'s names later, from ``D`` to ``U``,
    never past a binding of them, so a name read by ``e`` is still read at or after
    the same statements, and read twice at ``U`` where ``U`` read it already; a read
    added to ``U`` only adds disturbances. A candidate whose liveness the round's folds
    changed (its target in ``touched``) is not folded this round; where its use is
    none it is rejected as above, else the next round runs. The next round runs only
    where one of these may fold (most sweeps fold nothing in it: it was a quarter of
    the pass)."""

    __slots__ = ("folded", "again", "targets", "rejected")

    def __init__(self):
        self.folded = False
        self.again = False      # a candidate left for the next round may fold
        self.targets = set()    # the folded definitions' targets
        self.rejected = []      # (target, reads) of candidates rejected by their use

    def may_fold_again(self):
        targets = self.targets
        return self.again or any(t in targets or not reads.isdisjoint(targets)
                                 for t, reads in self.rejected)


def _check_settled(body, facts, effects):
    """SRCGRAD_CHECK_NAME_SETS: the round ``_Round`` skipped folds nothing."""
    live = liveness.analyze(body, set(), names=facts.names, only=candidates(body, facts))
    round_ = _Round()
    for block, around in _blocks_around(body):
        _fold_block(block, around, live, set(), facts, effects, round_)
    if round_.folded:
        raise ast_util.StaleNameSets(f"temporaries: the round skipped folds {sorted(round_.targets)}")


def _blocks_around(body, around=()):
    """(block, the compound statements that hold it, outermost first) for ``body`` and
    every non-empty statement list in it, in the order of ``ast_util.blocks``."""
    yield body, around
    for s in body:
        for inner in ast_util.child_blocks(s):
            if inner:
                yield from _blocks_around(inner, around + (s,))


def candidates(body, facts):
    """The names a fold may ask the liveness of (the targets of removable, untaped
    assignments): liveness is recorded for them only (it is asked after each of them)."""
    return {t for block in blocks(body) for s in block
            if (t := assigned_name(s)) is not None and t in facts.removable
            and anno.getanno(s, Static.TAPE) is None}


def _fold_block(block, around, live, touched, facts, effects, round_):
    """Fold the temporaries of ``block`` (inside the compound statements ``around``) that
    may be folded, noting in ``round_`` (``_Round``) what was folded and rejected."""
    k = 0
    while k < len(block):
        s = block[k]
        t = assigned_name(s)
        if t is None or t not in facts.removable or t in facts.inplace \
                or anno.getanno(s, Static.TAPE) is not None or not effects.pure_value(s):
            k += 1
            continue
        reads = facts.loads(s)   # (``t = value``: the value's loads, without a walk of it)
        if t in reads:
            k += 1
            continue
        use, place = _the_use(block, k, t, reads, facts, effects)
        if t in touched:   # its liveness is stale: left for the next round
            if use is None:
                round_.rejected.append((t, reads))
            else:
                round_.again = True
            k += 1
            continue
        if use is None or t in live.live_after(use):
            round_.rejected.append((t, reads))
            k += 1
            continue
        parent, field, index = place   # the one read of ``t`` in ``use`` reads the value
        if index is None:
            setattr(parent, field, s.value)
        else:
            getattr(parent, field)[index] = s.value
        facts.names.forget(*ast_util.walk(use), *around)
        effects.forget(use)
        touched |= reads | {t}
        round_.targets.add(t)
        del block[k]
        round_.folded = True


def _the_use(block, k, t, reads, facts, effects):
    """(the one statement after ``block[k]`` that reads ``t``, when the expression may move
    there, and the place of its read of ``t``: ``_read_places``); else (None, None)."""
    for j in range(k + 1, len(block)):   # (not a copy of the rest of the block per temporary)
        later = block[j]
        if t in facts.loads(later) or t in facts.stores(later):   # refs, without a union
            if not isinstance(later, _USES) or t in facts.stores(later):
                return None, None
            places = _read_places(later, t)
            if len(places) != 1:
                return None, None
            if not effects.pure(later) and not reads.isdisjoint(facts.loads(later)):
                return None, None   # a call in the use could change what the expression reads
            return later, places[0]
        if _disturbs(later, reads, facts, effects):
            return None, None
    return None, None


def _disturbs(s, reads, facts, effects):
    """``s`` may change what a name in ``reads`` holds: it binds it, writes into it, or
    hands it to something that may."""
    if not reads.isdisjoint(facts.stores(s)):
        return True
    if reads.isdisjoint(facts.loads(s)):
        return False
    written = effects.of(s)[1]
    return written is None or not reads.isdisjoint(written)


class _Effects:
    """A plain statement's facts, memoized across the pass's rounds (``forget`` after an
    edit; SRCGRAD_CHECK_NAME_SETS checks each against its statement, as for name sets):
    (its value is ``pure``, the names it writes into: ``None`` for any effect at all).

    Most statements call only pure helpers: that is read from the calls ``names`` (a
    ``NameSets``) memoizes for the statement, and the statement, its value and its
    targets are then pure without a walk of each; what it writes into is found (a walk
    for subscripts stored to) only when asked (``_disturbs``, where it reads a name)."""

    def __init__(self, names):
        self._memo = {}   # id(statement) -> [statement, pure, pure value, facts or None]
        self._names = names

    def forget(self, s):
        self._memo.pop(id(s), None)

    def _entry(self, s):
        found = self._memo.get(id(s))
        if found is None or found[0] is not s:
            found = self._memo[id(s)] = [s, pure_calls(self._names.calls(s)), None, None]
        return found

    def pure(self, s):
        """``exprs.pure(s)``: no call in the statement has an effect."""
        found = self._entry(s)
        if ast_util.CHECK_NAME_SETS and found[1] != pure(s):
            raise ast_util.StaleNameSets(f"stale purity of a {type(s).__name__}")
        return found[1]

    def pure_value(self, s):
        """``of(s)[0]``, without the walk for what ``s`` writes into."""
        found = self._entry(s)
        if found[1]:   # every call of ``s`` pure: its value too
            value = getattr(s, "value", None)
            pure_value = isinstance(value, gast.AST)
            if ast_util.CHECK_NAME_SETS and pure_value != _effects(s)[0]:
                raise ast_util.StaleNameSets(f"stale purity of a {type(s).__name__}'s value")
            return pure_value
        return self.of(s)[0]

    def of(self, s):
        found = self._entry(s)
        if found[3] is None:
            found[3] = _effects(s, found[1])
        elif ast_util.CHECK_NAME_SETS and found[3] != _effects(s):
            raise ast_util.StaleNameSets(f"stale effects of a {type(s).__name__}: "
                                         f"{found[3]} memoized, {_effects(s)} now")
        return found[3]


def _effects(s, pure_all=False):
    """(``s.value`` is pure, the names ``s`` writes into or None: see ``_Effects``).

    ``s`` is pure when its value and its targets are (``pure`` of the whole statement,
    in parts: the value's answer is needed anyway); a pure statement calls no helper
    that writes (``facts.EFFECTFUL``), so what it writes into is its augmented target and its
    subscripts stored to. ``pure_all``: ``pure(s)`` is known true (then its value and
    targets are pure)."""
    value = getattr(s, "value", None)
    pure_value = isinstance(value, gast.AST) and (pure_all or pure(value))
    if not isinstance(s, _PLAIN) or (value is not None and not pure_value):
        return pure_value, None
    targets = s.targets if isinstance(s, gast.Assign) else \
        [s.target] if isinstance(s, gast.AugAssign) else ()
    if not pure_all and not all(pure(t) for t in targets):
        return pure_value, None
    written = set()
    if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
        written.add(s.target.id)
    for n in ast_util.nodes_of(s, gast.Subscript):
        if isinstance(n.ctx, gast.Store) and isinstance(n.value, gast.Name):
            written.add(n.value.id)
    return pure_value, written


def _read_places(node, t):
    """(parent, field, index in that list or None) of each read of the name ``t`` in
    ``node``: one walk to count them and, for the one a fold replaces, where it is (a
    transformer visiting every node of the use was a visible cost of each fold)."""
    Load = gast.Load
    return [(parent, field, index) for n, parent, field, index in ast_util.places_of(node, gast.Name)
            if n.id == t and n.ctx.__class__ is Load]
