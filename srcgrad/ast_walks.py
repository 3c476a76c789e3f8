"""Walks of a tree for several classes at once, or until the first node of one: the compile's
hot questions (tape.FunctionNodes, fence.check's first look), in ast_util's walk order."""

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
