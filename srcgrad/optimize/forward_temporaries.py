"""The forward sweep's single-use temporaries folded back into their use, so that a line
the backward sweep saves nothing from reads as the user wrote it.

    T_out_item = T_out[t]
    T_out_item_minus_T = T_out_item - T
    UA_times_T_out_item = UA * T_out_item_minus_T
    u_item = u[t]                                    ->    T = T + dt_over_C * (UA * (T_out[t]
    eta_times_u_item = eta * u_item                             - T) + eta * u[t])
    UA_times_T_out_item_2 = UA_times_T_out_item + eta_times_u_item
    dt_over_C_times_UA = dt_over_C * UA_times_T_out_item_2
    T = T + dt_over_C_times_UA

Only names the compiler made fold (``facts.removable``: never a user's variable), and
only where the program does exactly what it did:

* the definition ``t = E`` is an expression without effects (effects.py) that does
  not read ``t``, and not a tape statement;
* its one use is a later plain statement of the same block (not a loop or branch: it
  would evaluate ``E`` another number of times; not the return: the output keeps its
  name) from the same user line, reading ``t`` once; ``t`` is dead after it (a value
  the backward sweep reads is saved or pushed, so it is live);
* the statements in between only bind other names to effect-free values (or push a
  name on the tape): nothing rebinds or writes into what ``E`` reads;
* when ``E`` may raise (an index, a division of Python floats...), nothing evaluated
  between its old and its new place may raise, and ``E`` is not moved into a part of
  its use that is evaluated conditionally (``x if c else E``): errors come in the
  order they came.

Each block is walked from its end, so a chain of temporaries folds in one walk.
Not run when the sweeps are fused afterwards (the fuser groups statements).
"""

import gast

from srcgrad import anno
from srcgrad.analysis import liveness
from srcgrad.optimize.temporaries import candidates
from srcgrad.ast_util import assigned_name, blocks, loads
from srcgrad.optimize.effects import RAISES, SAFE, kind
from srcgrad import ast_util
from srcgrad.templates import clone

Static = anno.Static

_USES = (gast.Assign, gast.AugAssign, gast.Expr)
# Expressions whose parts are evaluated later, repeatedly or in an order this pass does
# not follow: nothing is moved into them.
_OPAQUE = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp, gast.Dict,
           gast.NamedExpr, gast.Await, gast.Yield, gast.YieldFrom, gast.JoinedStr)


def run(body, facts):
    # One walk: a block's later statements are final when an earlier one is looked at,
    # and each fold updates the liveness it changed (its expression's names are now read
    # up to the use), so nothing is left for a second walk to find.
    facts.invalidate()
    live = liveness.analyze(body, set(), names=facts.names, only=candidates(body, facts))
    folded = False
    added = {}   # id(statement) -> names a fold made live after it (read later now)
    replaced = []   # the statements folded into, replaced (kept: their ids stay theirs)
    for block in blocks(body):
        folded |= _fold_block(block, live, added, facts, replaced)
    return folded


def _fold_block(block, live, added, facts, replaced):
    folded = False
    for k in range(len(block) - 1, -1, -1):
        s = block[k]
        t = assigned_name(s)
        if t is None or t not in facts.removable or anno.getanno(s, Static.TAPE) is not None:
            continue
        what = kind(s.value, facts.classes)
        reads = loads(s.value)
        if what is None or t in reads:
            continue
        found = _the_use(block, k, t, reads, what, facts, live.after, added)
        if found is None:
            continue
        j, target = found
        use = block[j]
        after = live.after.get(id(use))
        if after is None or t in after or t in added.get(id(use), ()):
            continue   # (no liveness: a block it does not enter, ``with``)
        if getattr(facts, "copy_uses", False):
            # The use is replaced by a copy that reads E: the reverse transform's forward
            # sweep and its gradient-only copy share statements (optimize/forward.py).
            block[j] = new = _replaced(use, target, s.value)
            replaced.append(use)
            live.after[id(new)] = after
            if id(use) in added:
                added[id(new)] = added.pop(id(use))
        else:   # (forward mode knows its statements by identity: transform/forward.py)
            _Replace(target, s.value).visit(use)
        facts.names.forget(use)
        for between in block[k + 1:j]:   # E's names are now read up to the use
            found = added.get(id(between))
            if found is None:
                added[id(between)] = set(reads)
            else:
                found |= reads
        del block[k]
        folded = True
    return folded


def _the_use(block, k, t, reads, what, facts, after=None, added=None):
    """``(j, name)``: the statement ``block[j]`` that ``t = E`` (``block[k]``) may be
    folded into and its ``Name`` node that reads ``t``; else None. ``after`` and ``added``
    (``_fold_block``'s): a use after which ``t`` is live is None before its expression
    is looked at (most candidates: a value the backward sweep reads)."""
    origin = anno.getanno(block[k], Static.ORIGIN)
    for j in range(k + 1, len(block)):
        later = block[j]
        if t not in facts.refs(later):
            if not _harmless(later, t, reads, what, facts):
                return None
            continue
        if not isinstance(later, _USES) or anno.getanno(later, Static.TAPE) is not None \
                or anno.getanno(later, Static.ORIGIN) != origin or t in facts.stores(later):
            return None
        if after is not None:
            live = after.get(id(later))
            if live is None or t in live or t in added.get(id(later), ()):
                return None
        nodes, parents = ast_util.nodes_and_parents(later)
        targets = [n for n in nodes if n.__class__ is gast.Name and n.id == t]
        if len(targets) != 1:
            return None
        found = _evaluated_before(later, targets[0], parents)
        if found is None:
            return None
        before, conditional = found
        if what == RAISES and conditional:
            return None
        for part in before:
            k_part = kind(part, facts.classes)
            if k_part is None or what == RAISES and k_part != SAFE:
                return None
        return j, targets[0]
    return None


def _harmless(s, t, reads, what, facts):
    """``s``, between ``t = E`` and its use, may run before ``E``: it binds only names
    ``E`` does not read, to values without effects that (when ``E`` may raise) cannot
    raise; or it pushes a name on the tape."""
    if anno.getanno(s, Static.TAPE) is not None:
        return isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) \
            and all(isinstance(a, gast.Name) for a in s.value.args) and not s.value.keywords
    if not isinstance(s, gast.Assign) or not all(isinstance(x, gast.Name) for x in s.targets):
        return False
    if reads & facts.stores(s):
        return False
    k = kind(s.value, facts.classes)
    return k == SAFE or k == RAISES and what == SAFE


def _evaluated_before(statement, target, parents=None):
    """``(parts, conditional)``: the expressions ``statement`` evaluates before the node
    ``target`` and whether ``target`` is evaluated only under a condition; None when
    ``target`` sits where this pass does not follow the order. ``parents``: id(node) ->
    the node holding it, for the nodes of ``statement`` (``ast_util.nodes_and_parents``;
    ``target`` is there once); None: the path down to ``target`` is searched."""
    if isinstance(statement, gast.Assign):
        order = [statement.value] + statement.targets
    elif isinstance(statement, gast.AugAssign):
        order = [statement.target, statement.value]
    else:
        order = [statement.value]
    if parents is None:
        on_path = {id(n) for n in _path(statement, target)}
    else:
        on_path = {id(target)}   # the nodes from ``statement`` down to ``target``
        node = target
        while node is not statement:
            node = parents[id(node)]
            on_path.add(id(node))
    return _search(order, target, on_path)


def _path(node, target):
    """The nodes from ``node`` down to ``target`` (empty when it is not inside)."""
    if node is target:
        return [node]
    for child in gast.iter_child_nodes(node):
        found = _path(child, target)
        if found:
            return [node] + found
    return []


def _search(order, target, on_path):
    for i, child in enumerate(order):
        if child is target:
            return order[:i], False
        if id(child) not in on_path:
            continue
        if isinstance(child, _OPAQUE):
            return None
        found = _search(_children(child), target, on_path)
        if found is None:
            return None
        parts, conditional = found
        if isinstance(child, gast.IfExp) and id(child.test) not in on_path \
                or isinstance(child, gast.BoolOp) and id(child.values[0]) not in on_path:
            conditional = True
        return order[:i] + parts, conditional
    return None


def _children(node):
    if isinstance(node, gast.Call):
        # A function resolved when compiling (``np.tanh``) is looked up without effect.
        func = [] if anno.getanno(node, Static.PRIMITIVE) is not None else [node.func]
        return func + list(node.args) + [k.value for k in node.keywords]
    return [c for c in gast.iter_child_nodes(node) if isinstance(c, gast.expr)]


def _replaced(statement, target, value):
    """A copy of ``statement`` with ``value`` where its node ``target`` was."""
    new = clone(statement)
    for was, now in zip(ast_util.walk(statement), ast_util.walk(new)):   # (the same order)
        if was is target:
            return _Replace(now, value).visit(new)
    raise AssertionError("the use does not hold its name")


class _Replace(ast_util.NodeTransformer):
    """The Name node ``target`` replaced by ``value`` (one class for every fold)."""

    def __init__(self, target, value):
        self.target, self.value = target, value

    def visit_Name(self, n):
        return self.value if n is self.target else n
