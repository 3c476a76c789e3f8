"""A class whose method asks its instance's class (test_plain_classes.py): built inside a
differentiated function as a dataclass subclass, it would see the subclass, so srcgrad
refuses to build it so. Its own module: srcgrad scans the class's module for such code."""

import numpy as np


class Typed:
    def __init__(self, w):
        self.w = w

    def f(self, x):
        return np.sum(self.w * x) * (2.0 if type(self) is Typed else 1.0)


def asks_the_type(w, x):
    return Typed(w).f(x)
