"""Namer: readable, collision-free names for generated variables."""

import keyword
import re

# Operator words a name built from an expression joins its operands with: a name cut
# short does not end on one (``dt_over_C_times_UA``, not ``dt_over_C_times_UA_times``).
_JOINERS = {"times", "plus", "minus", "over", "pow", "matmul", "mod", "floordiv", "and", "or",
            "neg", "not", "of"}


def shorten(base, limit):
    """``base`` cut to at most ``limit`` characters at whole ``_``-separated words, never
    mid-word, and not ending on an operator word. The first word is kept whole even when
    it alone is longer (a user's own name)."""
    if len(base) <= limit:
        return base
    words = base.split("_")
    kept = [words[0]]
    length = len(words[0])
    for word in words[1:]:
        if length + 1 + len(word) > limit:
            break
        kept.append(word)
        length += 1 + len(word)
    while len(kept) > 1 and kept[-1] in _JOINERS | {""}:
        kept.pop()
    return "_".join(kept)


class Namer:
    """Hands out names that clash with nothing the user's function uses.

    Names are derived from what they hold (``sin_x``, ``w_times_x``, ``dx``) so
    the generated code reads like hand-written code.
    """

    MAX_LENGTH = 24

    def __init__(self, taken=()):
        self.taken = set(taken)
        self.original = {}
        self._next = {}   # base -> the first suffix not yet tried (every smaller one is taken)

    def rename(self, user_name):
        """A fresh name for a user's variable (an inlined helper's local); errors show the original."""
        new = self.new(user_name)
        self.original[new] = self.original.get(user_name, user_name)
        return new

    def display(self, name):
        """The user's own name for a (possibly renamed) variable."""
        return self.original.get(name, name)

    def new(self, base):
        base = re.sub(r"\W+", "_", str(base)).strip("_") or "t"
        if base[0].isdigit():
            base = "t" + base
        base = shorten(base, self.MAX_LENGTH)
        name = base
        n = 2
        if name in self.taken or keyword.iskeyword(name):
            # names are never given back: the smallest free suffix is past the last one given
            n = self._next.get(base, 2)
            name = f"{base}_{n}"
            n += 1
            while name in self.taken or keyword.iskeyword(name):
                name = f"{base}_{n}"
                n += 1
            self._next[base] = n
        self.taken.add(name)
        return name

