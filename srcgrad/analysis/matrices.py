"""``numpy.matrix`` values an argument holds where no argument check sees them: its
``*`` and ``**`` are matrix products, which the array rules would differentiate as
elementwise ones (ranks.rank_key and the forward-mode checks refuse them)."""

import numpy


def attribute_matrix(value, depth=2):
    """Whether a plain object holds a ``numpy.matrix`` as an attribute, an attribute's
    attribute, or in a list, tuple or dict held there (``obj.params = {"M": m}``): the
    function reads it (``obj.M * x``) where no argument check sees it. Its attributes are
    checked at every call (rank_key is part of the hot calls' checks): a container's
    entries are type checks, paid per call for an object argument only."""
    attributes = getattr(value, "__dict__", None)
    if type(attributes) is not dict:
        return False
    for v in attributes.values():
        if _holds_matrix(v, depth, 3):
            return True
    return False


def _holds_matrix(v, depth, nesting):
    """Whether ``v`` is a ``numpy.matrix`` or holds one: in its entries (a list, tuple or
    dict, ``nesting`` levels deep) or, ``depth`` > 1, its attributes (attribute_matrix)."""
    kind = type(v)
    if kind in _LEAF_TYPES:
        return False
    if isinstance(v, numpy.matrix):
        return True
    if kind in (list, tuple, dict):
        return nesting > 0 and any(_holds_matrix(item, depth, nesting - 1)
                                   for item in (v.values() if kind is dict else v))
    return depth > 1 and not callable(v) and attribute_matrix(v, depth - 1)


_LEAF_TYPES = frozenset({float, int, bool, str, numpy.ndarray, type(None)})
