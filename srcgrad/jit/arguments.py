"""What the jit gradient checks of a call's arguments (srcgrad/jit/dispatch.py): which
types compile, whether an array differentiated has a float dtype, and the key of the
types a compile was for."""

import numpy

_SCALARS = (float, int, bool)


_DTYPES = (numpy.dtype(numpy.float64), numpy.dtype(numpy.int64), numpy.dtype(numpy.bool_))


def _integer_wrt(wrt, args):
    """Whether an array differentiated (``wrt``) is not of a float dtype: Numba would
    compile its gradient where sg.grad refuses it."""
    for k in (wrt if isinstance(wrt, (tuple, list)) else (wrt,)):
        if type(k) is int and -len(args) <= k < len(args):
            value = args[k]
            if type(value) is numpy.ndarray and value.dtype.kind != "f":
                return True
    return False


def _unsupported(args):
    """Why arguments of these types run the NumPy gradient, or None. Numba computes
    with a float32 array's elements in float64 where NumPy keeps float32 (a Python
    float is weak in NumPy, a float64 in Numba): only float64, int64 and bool arrays
    and Python floats, ints and bools are compiled, so that a result never differs."""
    for a in args:
        if type(a) is numpy.ndarray:
            if a.dtype not in _DTYPES:
                return f"{a.dtype} arrays are not compiled (NumPy's {a.dtype} scalar " \
                       f"arithmetic rounds differently from Numba's)"
        elif type(a) not in _SCALARS:
            return f"a {type(a).__name__} argument is not compiled"
    return None


def _final(g, like):
    """``g`` is already what ``_finish_values`` makes of it for input ``like``."""
    if type(g) is numpy.ndarray:
        return type(like) is numpy.ndarray and g.dtype is like.dtype and g.shape == like.shape \
            and g.flags.writeable
    return type(g) is type(like) is float


def _signature(args):
    out = []
    for a in args:
        if type(a) is numpy.ndarray:
            out.append((a.dtype.str, a.ndim, a.flags.c_contiguous, a.flags.f_contiguous,
                        a.flags.writeable))
        else:
            out.append(type(a))
    return tuple(out)
