"""Walks of a tree for several classes at once, or until the first node of one: the compile's
hot questions (tape.FunctionNodes, fence.check's first look, the front end's ``Census``), in
ast_util's walk order."""

import gast

from srcgrad.ast_util import _INNER, _NOT_A_NODE, _inner


def nodes_of_classes(node, classes):
    """``nodes_of(node, cls)`` for each class of ``classes`` (a tuple) in one walk: a list
    per class, in that order (each in ``nodes_of``'s order)."""
    found = {cls: [] for cls in classes}
    stack = [node]
    pop, extend, push, get = stack.pop, stack.extend, stack.append, found.get
    AST = gast.AST
    fields_of = _INNER
    while stack:
        n = pop()
        c = n.__class__
        wanted = get(c)
        if wanted is not None:
            wanted.append(n)
        fields = fields_of.get(c)
        if fields is None:
            fields = _inner(c)
        if fields is _NOT_A_NODE:
            continue
        state = n.__dict__
        for field in fields:
            value = state.get(field)
            if value.__class__ is list:
                extend(value)
            elif isinstance(value, AST):
                push(value)
    return tuple(found[cls] for cls in classes)


def holds_any(node, classes):
    """Whether ``node`` (itself included) holds a node of one of ``classes`` (a set of
    exact classes, as ``nodes_of`` takes one): a check that stops at the first."""
    stack = [node]
    pop, extend, push = stack.pop, stack.extend, stack.append
    AST = gast.AST
    fields_of = _INNER
    while stack:
        n = pop()
        c = n.__class__
        if c in classes:
            return True
        fields = fields_of.get(c)
        if fields is None:
            fields = _inner(c)
        if fields is _NOT_A_NODE:
            continue
        state = n.__dict__
        for field in fields:
            value = state.get(field)
            if value.__class__ is list:
                extend(value)
            elif isinstance(value, AST):
                push(value)
    return False


class Census:
    """The nodes of a tree by class (each class's in ``ast_util.walk``'s order; no contexts
    nor operators), from one walk made when first asked: the front end's first looks (does
    the function hold a walrus, a lambda, a loop, a ``.flat``?) each walked the whole tree.
    Valid while the tree is unchanged: ``changed()`` after a pass that may have edited it."""

    __slots__ = ("node", "_found")

    def __init__(self, node):
        self.node = node
        self._found = None

    def of(self, cls):
        """The nodes of exactly class ``cls`` (a list the caller does not change)."""
        found = self._found
        if found is None:
            found = self._found = _census(self.node)
        return found.get(cls, ())

    def holds(self, classes):
        """Whether the tree holds a node of one of ``classes`` (exact classes)."""
        return any(self.of(cls) for cls in classes)

    def changed(self, node=None):
        """The tree (or ``node``, a new one) may have changed: walked again when next asked."""
        if node is not None:
            self.node = node
        self._found = None


def _census(node):
    found = {}
    todo = [node]
    push, extend, get = todo.append, todo.extend, found.get
    AST = gast.AST
    fields_of = _INNER
    for n in todo:   # breadth first, as ``walk`` (a list iterator sees what is appended)
        c = n.__class__
        fields = fields_of.get(c)
        if fields is None:
            fields = _inner(c)
        if fields is _NOT_A_NODE:
            continue
        same = get(c)
        if same is None:
            found[c] = [n]
        else:
            same.append(n)
        state = n.__dict__
        for field in fields:
            if field in state:
                value = state[field]
                if value.__class__ is list:
                    extend(value)
                elif isinstance(value, AST):
                    push(value)
    return found
