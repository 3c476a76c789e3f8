"""Namer: readable, collision-free names for generated variables."""

import keyword
import re


class Namer:
    """Hands out names that clash with nothing the user's function uses.

    Names are derived from what they hold (``sin_x``, ``w_times_x``, ``dx``) so
    the generated code reads like hand-written code.
    """

    MAX_LENGTH = 24

    def __init__(self, taken=()):
        self.taken = set(taken)
        self.original = {}

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
        if len(base) > self.MAX_LENGTH:
            base = base[: self.MAX_LENGTH].rstrip("_")
        name = base
        n = 2
        while name in self.taken or keyword.iskeyword(name):
            name = f"{base}_{n}"
            n += 1
        self.taken.add(name)
        return name

