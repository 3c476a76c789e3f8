"""``sg.grad(f, jit=True)``: the generated gradient compiled with Numba (``srcgrad[jit]``).

translate.py turns the composed gradient into source Numba compiles, runtime.py holds
Numba-compatible forms of the runtime helpers it calls, dispatch.py compiles lazily per
argument types and falls back to the NumPy gradient (with one JitFallbackWarning)
where Numba cannot compile it. Numba is imported on the first jit call only.
"""

import warnings

from srcgrad.jit.dispatch import JitFallbackWarning, JitGradFunction
from srcgrad.jit.translate import Refused

__all__ = ["JitFallbackWarning", "JitGradFunction", "Refused", "available", "wrap"]


def available():
    """Whether Numba can be imported (``pip install "srcgrad[jit]"``)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def wrap(gfn):
    """``gfn`` (an api.GradFunction) compiled with Numba where it can be; ``gfn`` itself,
    with one warning, where Numba is not installed."""
    if not available():
        warnings.warn("srcgrad jit: numba is not installed (pip install \"srcgrad[jit]\"); "
                      "running the NumPy gradient", JitFallbackWarning, stacklevel=3)
        return gfn
    return JitGradFunction(gfn)
