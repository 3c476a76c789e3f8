"""Where gradients meet the caller (api.py): the default seed of a scalar output
and gradients given the shape, dtype and structure of what they belong to.
"""

import numpy

from srcgrad import pytree as _pytree
from srcgrad.runtime import dask_forms as _dask_forms
from srcgrad.runtime.dask_forms import is_dask
from srcgrad.runtime.arrays import _is_complex, _writeable, float_dtype, is_array, is_scalar, namespace
from srcgrad.runtime.containers import _array_into_container, add_grad, is_zero_grad


def zeros_like(x):
    """A zero gradient shaped like ``x`` (a Python 0.0 for a Python number)."""
    if is_array(x):
        xp = namespace(x)
        if is_dask(x):
            return xp.zeros(x.shape, dtype=float_dtype(x, xp), chunks=x.chunks)
        return xp.zeros(x.shape, dtype=float_dtype(x, xp))
    if _pytree.is_node(x):
        return materialize(0.0, x)
    return 0.0


def materialize(g, x):
    """Gradient ``g`` given the shape, dtype and type of ``x`` (the API boundary).

    For a structure ``x``, ``g`` is the adjoint mirror of pytree.py; the result has
    ``x``'s structure, zeros where no gradient arrived, None for None.
    """
    if _is_complex(g) and not _is_complex(x):
        _complex_gradient_error()
    if type(x) is numpy.ndarray and type(g) is numpy.ndarray and g.shape == x.shape \
            and g.dtype is x.dtype and x.dtype.kind in "fc":
        return g if g.flags.writeable else g.copy()
    if is_dask(g) or is_dask(x):
        return _dask_gradient(g, x)
    if is_array(x):
        xp = namespace(x)
        dtype = float_dtype(x, xp)
        if not is_array(g) or g.shape != x.shape or (type(x) is numpy.ndarray and type(g) is not numpy.ndarray):
            # (a 0-d array's gradient is a 0-d array, not the NumPy scalar arithmetic gives)
            g = xp.broadcast_to(xp.asarray(g, dtype=dtype), x.shape).copy()
        elif g.dtype != dtype:
            g = g.astype(dtype)
        elif not _writeable(g):
            g = g.copy()   # the seed, or a broadcast view: the caller gets an array of its own
        return g
    if x is None:
        return None
    if _pytree.is_node(x):
        return _materialize_node(g, x)
    if isinstance(x, complex):
        return complex(g)
    return float(g)


def _dask_gradient(g, x):
    """Gradient ``g`` of ``x`` where either is a Dask array: lazy, as Dask keeps any mix of
    NumPy and Dask operands. A Dask input gets a Dask array with its shape, dtype and chunks;
    a NumPy array or Python number that met Dask data gets a Dask array (0-d for a number)
    with one chunk, computed with the rest when the caller computes (dask.compute(*grads))."""
    da = _dask_forms.dask_array()
    if is_array(x):
        dtype = float_dtype(x, numpy)
        shape = x.shape
    elif x is None:
        return None
    elif _pytree.is_node(x):
        return _materialize_node(g, x)
    else:
        dtype = numpy.dtype(complex) if isinstance(x, complex) else numpy.dtype(numpy.float64)
        shape = ()
    if not is_dask(g):
        g = da.asarray(numpy.asarray(g) if not is_array(g) else g)
    if g.shape != tuple(shape):
        g = _dask_forms.broadcast_to(g, shape, x)
    if g.dtype != dtype:
        g = g.astype(dtype)
    if is_dask(x) and g.chunks != x.chunks:
        g = g.rechunk(x.chunks)
    return g


def _complex_gradient_error():
    from srcgrad.errors import UnsupportedError
    raise UnsupportedError(
        "srcgrad: the gradient of a real input came out complex: a complex value reached "
        "the computation where srcgrad could not see it when compiling (a complex argument, "
        "attribute or result of an unknown call), so real-valued rules were applied to it "
        "and the gradient is not to be trusted.",
        hint="Make the value visibly complex inside the function, e.g. "
             "cc = np.asarray(c, dtype=complex) (a new name), or split it into real and imaginary parts.")


def _materialize_node(g, x):
    pair = _pytree.registered(x)
    if pair is not None:
        flatten, unflatten = pair
        kids, aux = flatten(x)
        kids = list(kids)
        grads = [0.0] * len(kids)
        if isinstance(g, dict):
            for attr, ga in g.items():
                value = getattr(x, attr)
                hits = [k for k, c in enumerate(kids) if c is value]
                if not hits:
                    raise TypeError(
                        f"srcgrad: a gradient reached {type(x).__name__}.{attr}, which is not one "
                        f"of the children its registered flatten function returns")
                grads[hits[0]] = add_grad(grads[hits[0]], ga)
        elif not is_zero_grad(g):
            raise TypeError(f"srcgrad: internal error: gradient {type(g).__name__} for a "
                            f"{type(x).__name__}")
        return unflatten(aux, [materialize(gk, c) for gk, c in zip(grads, kids)])
    if isinstance(x, dict):
        if not isinstance(g, dict):
            _array_into_container(g)
        part = g.get if isinstance(g, dict) else (lambda k, d: g)
        out = {k: materialize(part(k, 0.0), v) for k, v in x.items()}
        return out if type(x) is dict else type(x)(out) if not hasattr(x, "default_factory") \
            else _same_dict(x, out)
    if isinstance(x, (list, tuple)):
        if not isinstance(g, (list, tuple)):
            _array_into_container(g)
            g = [g] * len(x)
        items = [materialize(gi, xi) for gi, xi in zip(g, x)]
        if _pytree.is_namedtuple(x):
            return type(x)(*items)
        return type(x)(items)
    import copy as _copy
    import dataclasses
    out = _copy.copy(x)
    for f in dataclasses.fields(x):
        gf = g.get(f.name, 0.0) if isinstance(g, dict) else g
        object.__setattr__(out, f.name, materialize(gf, getattr(x, f.name)))
    return out


def _same_dict(x, items):
    out = _copy_module().copy(x)
    out.clear()
    out.update(items)
    return out


def _copy_module():
    import copy
    return copy


_ONE_SEEDS = {}  # (shape, dtype) -> read-only ones: the seed of size-1 NumPy outputs


def default_seed(out):
    """The cotangent 1 for a scalar output (ones for a size-1 array); others need grad_outputs."""
    kind = type(out)
    if kind is float:
        return 1.0
    if kind is numpy.ndarray and out.size == 1 and out.dtype.kind == "f":
        key = (out.shape, out.dtype)
        seed = _ONE_SEEDS.get(key)
        if seed is None:
            seed = numpy.ones(out.shape, out.dtype)
            seed.flags.writeable = False  # _finish copies a gradient that is this seed
            seed = _ONE_SEEDS.setdefault(key, seed)
        return seed
    if kind is numpy.float64 or kind is numpy.float32:
        return kind(1.0)
    if out is None:
        raise returned_none()
    if getattr(out, "dtype", None) is not None and out.dtype.kind == "c" or isinstance(out, complex):
        raise ValueError(
            "grad can be implicitly created only for real scalar outputs: the output is complex; "
            "pass grad_outputs= (PyTorch's convention: the cotangent dL/dRe(out) + 1j*dL/dIm(out)"
            " of a real loss L), or return a real value such as abs(out) or out.real.")
    if not is_scalar(out):
        what = f"has shape {out.shape}" if hasattr(out, "shape") else \
            f"is a {type(out).__name__}"   # a structure (a gradient differentiated again)
        raise ValueError(
            f"grad can be implicitly created only for scalar outputs: the output {what}; pass "
            "grad_outputs= (the cotangent, PyTorch's `gradient` argument) with the output's "
            "shape.")
    if hasattr(out, "shape"):
        xp = namespace(out)
        dtype = out.dtype if out.dtype.kind in "fc" else xp.float64
        return xp.ones(out.shape, dtype=dtype)
    return 1.0


def returned_none():
    """The error for a function that returned nothing where its output is differentiated."""
    return ValueError(
        "srcgrad: the function returned None (nothing) on this call; a gradient needs it to "
        "return the value to differentiate. Check that every path ends with `return <value>`.")
