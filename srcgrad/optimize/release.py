"""Release of dead values in a composed gradient (not a sweep pass: pipeline.py runs it
on the composed function's body).

    a = x * 2                         a = x * 2
    b = a + 1              ->         b = a + 1
    c = b * b                         a = None
    return c                          c = b * b
                                      return c
"""

import gast

from srcgrad.ast_util import NameSets
from srcgrad.templates import replace


# Names whose release frees nothing: the tape's list lives on in ``pop`` (tape.pop).
_NOTHING_TO_FREE = ("tape", "push")


def release_dead(body, keep, scalars=(), names=None):
    """``body`` with ``a = b = None`` after the top-level statement that last reads
    ``a`` and ``b``: a value (a saved array, a finished temporary) is freed when it
    is dead, not when the function returns. Names in ``keep`` (parameters) stay, and
    so do ``scalars``, names known to hold one number (analysis/ranks.py: rank 0 or an
    integer), and the tape: freeing them would free nothing. Nothing is released after
    the last statement before the return. ``names``: a ``NameSets`` of ``body`` to ask."""
    names = names or NameSets()
    last = {}
    bound = set()
    for k, s in enumerate(body):
        for n in names.refs(s):
            last[n] = k
        bound |= names.stores(s)
    dead_after = {}
    for n, k in last.items():
        if n in bound and n not in keep and n not in scalars and n not in _NOTHING_TO_FREE:
            dead_after.setdefault(k, []).append(n)
    out = []
    final = len(body) - 2 if body and isinstance(body[-1], gast.Return) else len(body) - 1
    for k, s in enumerate(body):
        out.append(s)
        if k < final and dead_after.get(k):
            names_here = sorted(dead_after[k])
            out += replace(" = ".join(names_here) + " = None")
    return out
