"""``sg.grad(f, jit=True)``: the generated gradient compiled with Numba (``srcgrad[jit]``).

translate.py turns the composed gradient into source Numba compiles, runtime.py holds
Numba-compatible forms of the runtime helpers it calls, dispatch.py compiles lazily per
argument types and falls back to the NumPy gradient (with one JitFallbackWarning)
where Numba cannot compile it. Numba is imported on the first jit call only.
"""

import warnings

from srcgrad.jit.dispatch import JitFallbackWarning, JitGradFunction, run_jvp
from srcgrad.jit.translate import Refused

__all__ = ["JitFallbackWarning", "JitGradFunction", "Refused", "available", "wrap", "wrap_vjp",
           "jvp"]


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


def wrap_vjp(run, gfn):
    """``sg.vjp(f, jit=True)``: ``run`` (api.vjp's) whose ``backward`` runs the compiled
    gradient (both sweeps, seeded with its ``grad_outputs``) on a copy of the arguments
    the forward sweep was given; the forward sweep (which gives ``out``) is NumPy's."""
    jitted = wrap(gfn)
    if not isinstance(jitted, JitGradFunction):
        return run

    def run_jit(*args, **kwargs):
        found = run(*args, **kwargs)
        if kwargs or gfn.has_aux or gfn.hook_names:
            return found
        out, backward = found
        return out, _JitBackward(backward, jitted, tuple(_copy(a) for a in args))

    run_jit.__name__ = run.__name__
    return run_jit


def _copy(value):
    copy = getattr(value, "copy", None)
    return copy() if copy is not None and hasattr(value, "shape") else value


class _JitBackward:
    """backward_call.Backward's contract (once, or again with retain_graph), computed by the jit gradient."""

    def __init__(self, backward, jitted, args):
        self.backward, self.jitted, self.args = backward, jitted, args

    def __call__(self, grad_outputs=None, retain_graph=False):
        backward = self.backward
        if backward.consumed:
            return backward(grad_outputs, retain_graph)   # raises: consumed already
        backward.check_unchanged()   # the globals it reads again: as the forward sweep saw them
        grads = self.jitted(*self.args, grad_outputs=grad_outputs)
        if not retain_graph:
            backward.consumed, backward.saved = True, None
        return grads


def jvp(fn, compiled, args, user=None):
    """``sg.jvp(fn, ..., jit=True)``: the tangent program ``compiled`` (forward_api.CompiledJVP)
    run on ``args``, compiled with Numba where it can be (one warning where not, at a line
    of ``user``, the user's function, where ``fn`` is a gradient srcgrad composed)."""
    if not available():
        warnings.warn("srcgrad jit: numba is not installed (pip install \"srcgrad[jit]\"); "
                      "running the NumPy tangent program", JitFallbackWarning, stacklevel=3)
        return compiled.function(*args)
    return run_jvp(fn, compiled, args, user)
