"""The rank keys of arguments a gradient is compiled for as objects, not values: a
callable (``rk4(deriv, y0)``'s ``deriv``, like a JAX static argument) and an instance of
a plain class whose methods the function calls (ranks.rank_key gives them)."""

import abc
import inspect
import weakref

from srcgrad import pytree


def plain_instance(value):
    """An instance, not callable and no structure, of a class written in Python (no
    builtin, no extension type, no metaclass but ABCMeta) whose MRO defines a method in
    Python: its methods can be read and inlined."""
    cls = type(value)
    if type(cls) not in (type, abc.ABCMeta) or cls.__module__ == "builtins" or callable(value) \
            or pytree.is_node(value) or type(getattr(value, "ndim", None)) is int:   # (an array: Dask's)
        return False
    if not _has_methods(cls):
        return False
    if getattr(value, "__dict__", None):
        pytree.refuse_hidden_methods(value)
    return True


def _has_methods(cls):
    found = _HAS_METHODS.get(cls)
    if found is None:   # (made once per class: rank_key asks at every call)
        found = _HAS_METHODS[cls] = any(
            inspect.isfunction(v) or isinstance(v, (staticmethod, classmethod, property))
            for klass in cls.__mro__[:-1] for v in vars(klass).values())
    return found


_HAS_METHODS = weakref.WeakKeyDictionary()   # class -> _has_methods


class StaticKey:
    """The rank key of a callable argument (``rk4(deriv, y0)``'s ``deriv``): the code is
    compiled for that object, like a JAX static argument. Equal for the same object (a
    bound method: the same function of the same object, as each ``model.f`` makes anew)."""

    __slots__ = ("obj", "_id")

    def __init__(self, obj):
        self.obj = obj
        func, owner = getattr(obj, "__func__", None), getattr(obj, "__self__", None)
        self._id = (id(func), id(owner)) if inspect.ismethod(obj) else (id(obj),)

    def __eq__(self, other):
        return type(other) is StaticKey and other._id == self._id and _same_callable(self.obj, other.obj)

    def __hash__(self):
        return hash(self._id)

    def __repr__(self):
        return f"StaticKey({self.obj!r})"


class ClassKey:
    """The rank key of an instance of a plain Python class holding no gradient
    (``loss(w, model)`` with ``model.forward(w, x)`` inside): the code is compiled for
    its class, whose methods are inlined and whose attributes are read when it runs."""

    __slots__ = ("cls",)

    def __init__(self, cls):
        self.cls = cls

    def __eq__(self, other):
        return type(other) is ClassKey and other.cls is self.cls

    def __hash__(self):
        return hash(("class", id(self.cls)))

    def __repr__(self):
        return f"ClassKey({self.cls.__qualname__})"


def _same_callable(a, b):
    if inspect.ismethod(a) and inspect.ismethod(b):
        return a.__func__ is b.__func__ and a.__self__ is b.__self__
    return a is b
