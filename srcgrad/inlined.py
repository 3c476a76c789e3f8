"""Python versions of library functions that call a function they are given, which srcgrad
inlines in place of the library's (transform/methods.py rewrites the calls): the function
given is then a known callable inside them (a lambda, ``operator.mul``, a global def), each
call of it inlined, and their loops differentiated as any user loop. The itertools ones
return lists, not iterators (``INLINED`` maps each library function to its version).
"""

import functools
import itertools
import operator


def inline(fn):
    """Mark ``fn`` as a function srcgrad inlines, though it is srcgrad's own."""
    fn._srcgrad_inline = True
    return fn


@inline
def reduce(function, iterable):
    """``functools.reduce(function, iterable)``."""
    items = list(iterable)
    if not items:
        raise TypeError("reduce() of empty iterable with no initial value")
    acc = items[0]
    for item in items[1:]:
        acc = function(acc, item)
    return acc


@inline
def reduce_from(function, iterable, initial):
    """``functools.reduce(function, iterable, initial)``."""
    acc = initial
    for item in iterable:
        acc = function(acc, item)
    return acc


@inline
def chain_from_iterable(iterables):
    """``list(itertools.chain.from_iterable(iterables))``."""
    out = []
    for it in iterables:
        out = out + list(it)
    return out


@inline
def chain(*iterables):
    """``list(itertools.chain(*iterables))``."""
    return chain_from_iterable(iterables)


@inline
def pairwise(iterable):
    """``list(itertools.pairwise(iterable))``."""
    items = list(iterable)
    return [(items[k], items[k + 1]) for k in range(len(items) - 1)]


@inline
def accumulate(iterable, func=operator.add):
    """``list(itertools.accumulate(iterable, func))``."""
    items = list(iterable)
    out = items[:1]
    for item in items[1:]:
        out.append(func(out[-1], item))
    return out


# library function -> its version here, by how many positional arguments a call passes
# (no keywords: a call with any is left to the library function and refused if it needs
# a gradient)
INLINED = {functools.reduce: {2: reduce, 3: reduce_from},
           itertools.chain: {n: chain for n in range(1, 9)},
           itertools.chain.from_iterable: {1: chain_from_iterable},
           itertools.accumulate: {1: accumulate, 2: accumulate}}
if hasattr(itertools, "pairwise"):
    INLINED[itertools.pairwise] = {1: pairwise}
