"""The exceptions of the jit translation: compiled code's ZeroAdjoint (one call handed to the
NumPy gradient) and the translation's Refused (a construct it does not take)."""


class ZeroAdjoint(Exception):
    """Raised by compiled code where the NumPy gradient keeps a zero adjoint a number
    (runtime.need_grad): that call runs the NumPy gradient, without a warning."""


class Refused(Exception):
    """A construct the translation does not take: ``construct`` in words, ``origin``
    the user's statement (parse.Origin) or None."""

    def __init__(self, construct, origin=None):
        self.construct = construct
        self.origin = origin
        super().__init__(construct)

    def where(self):
        if self.origin is None:
            return None, None
        return self.origin.filename, self.origin.lineno
