"""The environment of a fixed point over a function's bindings (analysis/ranks.py's
``infer`` and ``shape_classes``, analysis/kinds.py's ``infer``), noting the names read."""


class ReadNames(dict):
    """A fixed point's environment (name -> fact) that notes the names read through it in
    ``seen``. A pass over the bindings changes nothing when run again if none of its
    changes was to a name read before it in the pass (or by the binding that changed it):
    every binding would read what it read. So that pass ends the iteration, without the
    confirming pass (half the time of ``infer``, ``shape_classes`` and ``kinds.infer``)."""

    __slots__ = ("seen",)

    def get(self, key, default=None):
        self.seen.add(key)
        return _get(self, key, default)

    def __getitem__(self, key):
        self.seen.add(key)
        return dict.__getitem__(self, key)


# The fixed point's own reads of what it changes (not the bindings' reads).
_get = dict.get
