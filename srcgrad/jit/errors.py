"""The exception compiled jit code raises to hand one call to the NumPy gradient."""


class ZeroAdjoint(Exception):
    """Raised by compiled code where the NumPy gradient keeps a zero adjoint a number
    (runtime.need_grad): that call runs the NumPy gradient, without a warning."""
