"""Structured values (pytrees): what a container is, and how a gradient mirrors one.

A pytree is a nested structure of ``dict``, ``list``, ``tuple``, namedtuple, ``None``,
dataclass instances (their fields) and classes registered with
``register_pytree_node``; everything else is a leaf (an array, a float). The gradient
with respect to a pytree has the same structure (JAX's convention).

Inside a reverse sweep the adjoint of a container is a partial mirror of it: a list
for a list, tuple or namedtuple, a dict for a dict, and a ``Fields`` dict (attribute
name -> adjoint) for a dataclass or registered object; a part no gradient reached is
the scalar zero 0.0. ``runtime.materialize`` turns such a mirror into a value of the
argument's own structure at the API boundary. Hand-written (no dependency): the API
walks a structure only on calls with one (measured in docs/language.md, "Containers").
"""

import dataclasses

_REGISTRY = {}   # class -> (flatten, unflatten)


def register_pytree_node(cls, flatten, unflatten):
    """Make instances of ``cls`` structures, as in JAX.

    ``flatten(obj)`` returns ``(children, aux)``: an iterable of children (pytrees) and
    hashable data that is not differentiated; ``unflatten(aux, children)`` rebuilds an
    object. The gradient with respect to such an object is ``unflatten(aux, gradients)``.
    Inside a differentiated function, read the children as attributes (``obj.w``): each
    attribute read must give one of the children that ``flatten`` returns.
    """
    if not isinstance(cls, type):
        raise TypeError(f"srcgrad: register_pytree_node takes a class, got {cls!r}")
    _REGISTRY[cls] = (flatten, unflatten)
    _NODE_TYPES[cls] = True
    return cls


class Fields(dict):
    """The adjoint of a dataclass or registered object: attribute name -> adjoint."""

    __slots__ = ()


def is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_dataclass_instance(value):
    return dataclasses.is_dataclass(type(value)) and not isinstance(value, type)


_NODE_TYPES = {list: True, tuple: True, dict: True, type(None): True, float: False, int: False,
               bool: False, str: False, complex: False}   # type -> is a node (a cache)


def is_node(value):
    """Whether ``value`` is a container (not a leaf) of a pytree; None counts as a node
    with no children."""
    kind = type(value)
    found = _NODE_TYPES.get(kind)
    if found is None:
        found = _NODE_TYPES[kind] = issubclass(kind, (list, tuple, dict)) or kind in _REGISTRY \
            or dataclasses.is_dataclass(kind)
    return found


def children(value):
    """``[(path_suffix, child)]`` of a node: the structure's own order."""
    if value is None:
        return []
    kind = type(value)
    if kind in _REGISTRY:
        kids, _ = _REGISTRY[kind][0](value)
        return [(f".<{k}>", c) for k, c in enumerate(kids)]
    if isinstance(value, dict):
        return [(f"[{k!r}]", v) for k, v in value.items()]
    if is_namedtuple(value):
        return [(f".{n}", v) for n, v in zip(type(value)._fields, value)]
    if isinstance(value, (list, tuple)):
        return [(f"[{k}]", v) for k, v in enumerate(value)]
    if is_dataclass_instance(value):
        return [(f".{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value)]
    raise TypeError(f"srcgrad: {type(value).__name__} is not a structure")


def leaves_with_paths(value, path):
    """``[(path, leaf)]`` of ``value``, depth first (None is an empty node)."""
    if not is_node(value):
        return [(path, value)]
    out = []
    for suffix, child in children(value):
        out += leaves_with_paths(child, path + suffix)
    return out


def tree_key(value, leaf_key):
    """A hashable description of ``value``'s structure, with ``leaf_key(leaf)`` for
    each leaf: what a compiled gradient is specialised on (analysis/ranks.py)."""
    if value is None:
        return TreeKey(("None",))
    kind = type(value)
    if kind in _REGISTRY:
        kids, aux = _REGISTRY[kind][0](value)
        try:
            hash(aux)
        except TypeError:
            aux = id(aux)
        return TreeKey((kind, aux) + tuple(_key_of(c, leaf_key) for c in kids))
    if isinstance(value, dict):
        return TreeKey((kind, tuple(value)) + tuple(_key_of(v, leaf_key) for v in value.values()))
    if isinstance(value, (list, tuple)):
        return TreeKey((kind,) + tuple(_key_of(v, leaf_key) for v in value))
    return TreeKey((kind,) + tuple(_key_of(getattr(value, f.name), leaf_key)
                                   for f in dataclasses.fields(value)))


def _key_of(value, leaf_key):
    return tree_key(value, leaf_key) if is_node(value) else leaf_key(value)


class TreeKey(tuple):
    """The specialisation key of a structured argument (a tuple: hashable, comparable)."""

    __slots__ = ()


def registered(value):
    """``(flatten, unflatten)`` for an instance of a registered class, else None."""
    return _REGISTRY.get(type(value))


def tree_leaves(value, out=None):
    """The leaves of ``value`` in order (None is an empty node, not a leaf)."""
    if out is None:
        out = []
    kind = type(value)
    if kind is list or kind is tuple:
        for child in value:
            if _NODE_TYPES.get(type(child)) is False:
                out.append(child)
            else:
                tree_leaves(child, out)
    elif kind is dict:
        for child in value.values():
            if _NODE_TYPES.get(type(child)) is False:
                out.append(child)
            else:
                tree_leaves(child, out)
    elif is_node(value):
        for _, child in children(value):
            tree_leaves(child, out)
    else:
        out.append(value)
    return out


def tree_map(fn, value):
    """``value`` with every leaf replaced by ``fn(leaf)`` (same structure, same classes)."""
    return rebuild(value, iter([fn(leaf) for leaf in tree_leaves(value)]))


def rebuild(value, leaves):
    """A structure like ``value`` whose leaves are taken from the iterator ``leaves``."""
    if value is None:
        return None
    if not is_node(value):
        return next(leaves)
    pair = registered(value)
    if pair is not None:
        kids, aux = pair[0](value)
        return pair[1](aux, [rebuild(k, leaves) for k in kids])
    if isinstance(value, dict):
        items = [(k, rebuild(v, leaves)) for k, v in value.items()]
        if type(value) is dict:
            return dict(items)
        import copy
        out = copy.copy(value)
        out.clear()
        out.update(items)
        return out
    if is_namedtuple(value):
        return type(value)(*[rebuild(v, leaves) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)([rebuild(v, leaves) for v in value])
    import copy
    out = copy.copy(value)
    for f in dataclasses.fields(value):
        object.__setattr__(out, f.name, rebuild(getattr(value, f.name), leaves))
    return out
