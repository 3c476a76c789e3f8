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
import types
import weakref

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
    fields = dataclasses.fields(value)
    own = getattr(value, "__dict__", None)
    if own is not None and len(own) > len(fields):   # (attributes beside its fields)
        refuse_hidden_methods(value, {f.name for f in fields})
    return TreeKey((kind,) + tuple(_key_of(getattr(value, f.name), leaf_key) for f in fields))


def method_names(cls):
    """The names of the methods (functions, static and class methods) ``cls`` and its
    bases define in Python, dunders aside; made once per class (a call-time check)."""
    found = _METHOD_NAMES.get(cls)
    if found is None:
        found = _METHOD_NAMES[cls] = frozenset(
            k for klass in cls.__mro__[:-1] for k, v in vars(klass).items() if not k.startswith("__")
            and isinstance(v, (types.FunctionType, staticmethod, classmethod)))
    return found


_METHOD_NAMES = weakref.WeakKeyDictionary()   # class -> method_names (a local class may go)


def refuse_hidden_methods(value, fields=()):
    """Refuse an object whose own attribute hides a method of its class (``model.f =
    np.exp``, ``f`` a method): the compiled code calls methods through the class."""
    from srcgrad.errors import UnsupportedError
    for attr in method_names(type(value)) & vars(value).keys():
        if attr not in fields:
            raise UnsupportedError(
                f"the {type(value).__name__} object's own attribute {attr!r} hides the method "
                f"{type(value).__name__}.{attr}, and srcgrad calls methods through the class: "
                f"give the attribute another name, or delete it (del obj.{attr})")


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


def holds_data(values):
    """Whether one of ``values`` is a structure holding data (a leaf that is no int, bool
    or str): what a gradient's composed code refuses (leaf_towers.py takes those)."""
    return any(is_node(v) and v is not None and any(
        type(leaf) not in (int, bool, str) for leaf in tree_leaves(v)) for v in values)


def tree_map(fn, value, *rest):
    """``value`` with every leaf replaced by ``fn(leaf, *the leaves at the same place in
    rest)``: same structure, same classes (JAX's ``tree_map``; each tree of ``rest`` has
    ``value``'s structure, a dict's keys in any order)."""
    if not rest:
        return rebuild(value, iter([fn(leaf) for leaf in tree_leaves(value)]))
    return rebuild(value, iter([fn(*leaves) for leaves in zip(
        tree_leaves(value), *[tree_leaves(_aligned(value, other, "")) for other in rest])]))


def _aligned(value, other, path):
    """``other``, with its dicts' keys in ``value``'s order; ValueError where the two
    structures differ (naming the place)."""
    if not is_node(value):
        if is_node(other):
            raise ValueError(f"srcgrad.tree_map: a leaf at {path or 'the top'} of the first "
                             f"tree is a {type(other).__name__} in another")
        return other
    if type(other) is not type(value):
        raise ValueError(f"srcgrad.tree_map: at {path or 'the top'} the first tree has a "
                         f"{type(value).__name__}, another a {type(other).__name__}")
    if isinstance(value, dict):
        if set(value) != set(other):
            raise ValueError(f"srcgrad.tree_map: the dicts at {path or 'the top'} have the keys "
                             f"{sorted(map(repr, value))} and {sorted(map(repr, other))}")
        return {k: _aligned(v, other[k], f"{path}[{k!r}]") for k, v in value.items()}
    mine, theirs = children(value), children(other)
    if [p for p, _ in mine] != [p for p, _ in theirs]:
        raise ValueError(f"srcgrad.tree_map: the structures at {path or 'the top'} differ "
                         f"({len(mine)} and {len(theirs)} children)")
    return [_aligned(v, o, path + p) for (p, v), (_, o) in zip(mine, theirs)]


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


def paired_leaves(value, other, path="", what="tangent"):
    """``[(path, leaf, other_leaf)]``: the leaves of ``value`` beside those of ``other``,
    a structure like it (the tangents or cotangents of ``value``: jvp, hvp, Jacobians).

    ``other`` must mirror ``value``: a dict with the same keys, a list or tuple of the
    same length (either for either), an object of the same class for a dataclass,
    namedtuple or registered class; None stands for a whole part that is zero (its
    leaves pair with None). A leaf of ``value`` pairs with anything that is not a
    structure (its shape is the caller's to check). Raises ValueError naming the path
    where they differ."""
    out = []
    _pair(value, other, path, what, out)
    return out


def _pair(value, other, path, what, out):
    if other is None:
        out.extend((p, leaf, None) for p, leaf in leaves_with_paths(value, path))
        return
    if not is_node(value):
        if is_node(other):
            raise ValueError(f"srcgrad: the {what} of {path or 'the value'} is a "
                             f"{type(other).__name__} but the value is not a structure "
                             f"({type(value).__name__}): they must have the same structure")
        out.append((path, value, other))
        return
    mismatch = ValueError(f"srcgrad: the {what} of {path or 'the value'} is a "
                          f"{type(other).__name__} but the value is a {type(value).__name__}: "
                          f"they must have the same structure")
    if isinstance(value, dict):
        if not isinstance(other, dict):
            raise mismatch
        if set(value) != set(other):
            raise ValueError(f"srcgrad: the {what} of {path or 'the value'} has the keys "
                             f"{sorted(map(repr, other))} but the value has "
                             f"{sorted(map(repr, value))}: they must have the same structure")
        for k, v in value.items():
            _pair(v, other[k], f"{path}[{k!r}]", what, out)
        return
    plain = isinstance(value, (list, tuple)) and not is_namedtuple(value) and type(value) not in _REGISTRY
    if plain:
        if not (isinstance(other, (list, tuple)) and not is_namedtuple(other)):
            raise mismatch
        if len(other) != len(value):
            raise ValueError(f"srcgrad: the {what} of {path or 'the value'} has {len(other)} "
                             f"entries but the value has {len(value)}: they must have the "
                             f"same structure")
        for k, (v, o) in enumerate(zip(value, other)):
            _pair(v, o, f"{path}[{k}]", what, out)
        return
    if type(other) is not type(value):
        raise mismatch
    mine, theirs = children(value), children(other)
    if [s for s, _ in mine] != [s for s, _ in theirs]:
        raise mismatch
    for (suffix, v), (_, o) in zip(mine, theirs):
        _pair(v, o, path + suffix, what, out)


def as_adjoint(value):
    """The adjoint mirror (see the module docstring) of ``value``, a gradient given with
    its structure (a custom Function's ``backward`` returns one): the inverse of
    ``runtime.materialize``. A registered object's children are read back as the
    attributes that hold them."""
    if value is None:
        return 0.0
    if not is_node(value):
        return value
    if isinstance(value, dict):
        return {k: as_adjoint(v) for k, v in value.items()}
    pair = registered(value)
    if pair is None and isinstance(value, (list, tuple)):
        return [as_adjoint(v) for v in value]
    if pair is None:
        return Fields((f.name, as_adjoint(getattr(value, f.name))) for f in dataclasses.fields(value))
    kids, _ = pair[0](value)
    attrs = {id(v): k for k, v in vars(value).items()} if hasattr(value, "__dict__") else {}
    out = Fields()
    for kid in kids:
        if id(kid) not in attrs:
            raise TypeError(f"srcgrad: a gradient of a {type(value).__name__} holds a child that "
                            f"is none of its attributes; it cannot be added into an adjoint")
        out[attrs[id(kid)]] = as_adjoint(kid)
    return out
