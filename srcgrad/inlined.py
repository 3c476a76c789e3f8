"""Python versions of library functions that call a function they are given, which srcgrad
inlines in place of the library's (transform/methods.py rewrites the calls): the function
given is then a known callable inside them (a lambda, ``operator.mul``, a global def), each
call of it inlined, and their loops differentiated as any user loop.
"""


def inline(fn):
    """Mark ``fn`` as a function srcgrad inlines, though it is srcgrad's own."""
    fn._srcgrad_inline = True
    return fn


@inline
def reduce(function, iterable):
    """``functools.reduce(function, iterable)``."""
    items = list(iterable)
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
