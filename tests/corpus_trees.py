"""The pytree walks the corpus tests share (test_autograd_corpus.py, test_jax_corpus.py):
a tree's leaves in order, and the tree rebuilt with other leaves."""


def leaves(tree):
    """The leaves of nested dicts (by sorted key), lists and tuples, in order."""
    if isinstance(tree, dict):
        return [leaf for key in sorted(tree) for leaf in leaves(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def rebuild(tree, values):
    """``tree`` with its leaves replaced, in order, by ``values`` (an iterator)."""
    if isinstance(tree, dict):
        return {key: rebuild(tree[key], values) for key in sorted(tree)}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*[rebuild(item, values) for item in tree])
    if isinstance(tree, (list, tuple)):
        return type(tree)(rebuild(item, values) for item in tree)
    return next(values)
