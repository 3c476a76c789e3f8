"""Template trees copied from a plan: ``templates._substituted``'s copy, its questions
answered once per tree.

A template used again (``f"{dt} = {dt} + G"`` for each gradient added, a rule's
prepared statements) was copied by ``_substituted``, which asks of every field of every
node what it holds. For a tree and the names it substitutes and renames the answers
are fixed, so ``plan`` records them once: for each node, its ``__dict__`` (copied whole
at each use: the leaf values, the attributes, a shared context or operator) and the
fields to fill in with copies (its child nodes, its lists, its annotations). ``copy``
follows the plan. The copy is ``_substituted``'s: the same classes, fields, attributes
and annotations in the same order; a substitution made by ``templates``' own
``visit_Name``; where a node holds what the plan does not describe (an annotated
context, a name's annotation) that node is copied by ``_substituted``. A tree where
``_substituted`` may put a list of statements for a statement (``BODY``) has no plan.
"""

import gast

_AST = gast.AST
_NAME = gast.Name
_ANNO = "_srcgrad_anno"
USES = 1   # uses of a tree copied by ``_substituted`` before its plan is made (then by it)

_PLAIN, _RENAMED, _SUBSTITUTED, _GENERIC, _OWN = range(5)


class _NoPlan(Exception):
    pass


def plan(tree, subs, renames, shared):
    """The plan of ``tree`` (a node or a list of statements) for substitutions with the
    keys of ``subs`` and renames with those of ``renames`` (or None), or None. ``shared``:
    the node classes a copy shares (no fields)."""
    try:
        if tree.__class__ is list:
            return [_plan(t, subs, renames or {}, shared) for t in tree]
        return _plan(tree, subs, renames or {}, shared)
    except _NoPlan:
        return None


def _plan(node, subs, renames, shared):
    cls = node.__class__
    state = node.__dict__
    if cls in shared and not state:
        return node   # (not a tuple: shared)
    if cls is _NAME:
        if node.id in renames:
            return (_RENAMED, state, node.id) if _plain(node, shared) else (_OWN, node)
        if node.id in subs:
            return (_SUBSTITUTED, node)
        return (_PLAIN, state) if _plain(node, shared) else (_OWN, node)
    if cls is gast.Expr and state["value"].__class__ is _NAME and state["value"].id in subs:
        raise _NoPlan   # (maybe a list of statements put in its place)
    if cls in (gast.If, gast.For, gast.While) and not state.get("body"):
        raise _NoPlan   # (``_substituted`` writes ``pass`` there)
    fields = cls._fields
    kids = []
    for key, value in state.items():
        if key in fields:
            if value.__class__ is list:
                kids.append((key, [_plan(item, subs, renames, shared) if isinstance(item, _AST)
                                   else _Leaf(item) for item in value], True))
            elif value.__class__ in shared and not value.__dict__:
                pass   # shared, as the dict's copy holds it
            elif isinstance(value, _AST):
                kids.append((key, _plan(value, subs, renames, shared), False))
    return (_GENERIC, state, cls, tuple(kids), _ANNO in state)


def _plain(name, shared):
    """Whether ``clone`` copies Name ``name`` as a copy of its ``__dict__``."""
    state = name.__dict__
    ctx = state.get("ctx")
    return (ctx is None or ctx.__class__ in shared and not ctx.__dict__) \
        and not isinstance(state.get("annotation"), _AST) and _ANNO not in state


class _Leaf:
    """A list's item that is not a node (kept as it is)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def copy(plan_, subs, renames, visit_name, substituted):
    """The copy ``plan_`` describes. ``visit_name(node, subs)``: a substituted name's copy;
    ``substituted``: ``templates._substituted``, for a node the plan leaves to it."""
    if plan_.__class__ is list:
        return [_copy(p, subs, renames, visit_name, substituted) for p in plan_]
    return _copy(plan_, subs, renames, visit_name, substituted)


def _copy(p, subs, renames, visit_name, substituted):
    if p.__class__ is not tuple:
        return p.value if p.__class__ is _Leaf else p
    kind = p[0]
    if kind == _GENERIC:
        _, state, cls, kids, annotated = p
        new = cls.__new__(cls)
        d = new.__dict__ = state.copy()
        for key, kid, many in kids:
            if many:
                d[key] = [_copy(k, subs, renames, visit_name, substituted) for k in kid]
            else:
                d[key] = _copy(kid, subs, renames, visit_name, substituted)
        if annotated:
            d[_ANNO] = dict(state[_ANNO])
        return new
    if kind == _PLAIN:
        new = _NAME.__new__(_NAME)
        new.__dict__ = p[1].copy()
        return new
    if kind == _RENAMED:
        new = _NAME.__new__(_NAME)
        d = new.__dict__ = p[1].copy()
        d["id"] = renames[p[2]]
        return new
    if kind == _SUBSTITUTED:
        return visit_name(p[1], subs)
    return substituted(p[1], subs, renames)
