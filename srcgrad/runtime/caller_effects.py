"""A list or dict argument the function changes in place (``log.pop()``, ``d[k] = v``,
``xs.extend(ys)``): the caller's object after one call of a derivative is what it is
after one call of the function (transform/argument_effects.py). Generated code keeps
the caller's object in a ``Caller`` (which holds no array of the function's, for the
alias analysis) and, as the function returns, writes the final value into it."""

import copy

import numpy

__all__ = ["Caller", "Runs", "caller_of", "container_copy", "write_back"]


class Caller:
    """The object the caller passed, kept apart from the parameter's later values."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


def caller_of(value):
    return Caller(value)


def container_copy(value):
    """A list or dict argument's copy of the function's own (shallow: the same items);
    anything else (an array: the rules of in-place writes hold) as it is."""
    if isinstance(value, list):
        return list(value) if type(value) is list else _refill(copy.copy(value), value)
    if isinstance(value, dict):
        return copy.copy(value)
    return value


def _own(value):
    """``value`` with each array, list and dict in it (at any depth) copied: the reverse
    sweep may restore what the function wrote into them, and the caller keeps the values
    the function left."""
    if isinstance(value, numpy.ndarray) or (hasattr(value, "__array_namespace__")
                                            and hasattr(value, "copy")):
        return value.copy()
    if isinstance(value, list):
        return type(value)(_own(v) for v in value) if type(value) is list else \
            _refill(copy.copy(value), [_own(v) for v in value])
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(_own(v) for v in value)
    if isinstance(value, dict):
        out = copy.copy(value)
        for k, v in value.items():
            out[k] = _own(v)
        return out
    return value


def _refill(out, items):
    out[:] = items
    return out


def write_back(caller, value):
    """The caller's list or dict (``caller.obj``) made to hold what ``value``, the
    parameter's final value, holds; items the function left as they were stay the
    caller's own objects. Anything else (an array, a number, a parameter rebound to
    another type) is left alone."""
    obj = caller.obj
    if obj is value:
        return
    if isinstance(obj, list) and isinstance(value, list):
        items = [v if k < len(obj) and obj[k] is v else _own(v) for k, v in enumerate(value)]
        obj[:] = items
    elif isinstance(obj, dict) and isinstance(value, dict):
        items = [(k, v if k in obj and obj[k] is v else _own(v)) for k, v in value.items()]
        obj.clear()
        obj.update(items)


class Runs:
    """The arguments of each of the runs a derivative makes of a function (a Hessian's
    columns): a list or dict argument is a fresh copy of its value before them each time,
    and ``finish`` leaves the caller's object as the last run left its copy, so the
    caller sees what one call of the function does, not one change per run."""

    def __init__(self, args):
        self.args = args
        self.kept = {k: copy.copy(a) for k, a in enumerate(args) if type(a) in (list, dict)
                     or isinstance(a, (list, dict)) and hasattr(a, "copy")}
        self.before = self.next() if self.kept else args
        self.last = None

    def next(self):
        if not self.kept:
            return self.args
        out = list(self.args)
        for k, a in self.kept.items():
            out[k] = copy.copy(a)
        self.last = out
        return tuple(out)

    def finish(self):
        for k in self.kept if self.last is not None else ():
            write_back(Caller(self.args[k]), self.last[k])
