"""Second derivatives, forward-over-reverse: ``sg.hvp`` and ``sg.hessian``.

The gradient srcgrad generates is a plain Python function (pipeline.compose_gradient:
the forward sweep, the seed, the backward sweep); forward mode (forward_api.py) reads
it again like any user function and builds its tangent program. The tangents of the
``rt.*`` helpers the gradient calls are in rules/jvp_runtime.py; the tape (loops,
rebinding, indexed writes) gets a tangent tape beside it: ``tape.append(v)`` is
followed by ``dtape.append(dv)``, ``v = rt.tape_pop(tape)`` by ``dv = rt.tape_pop(dtape)``.

* ``hvp(f, primals, tangents)`` is ``jvp(grad(f, wrt=all), primals, tangents)[1]``:
  one tuple entry per primal (None for an integer or boolean primal, which has no
  gradient). One forward and one backward sweep, each with its tangent: no Hessian
  is built.
* ``hessian(f, wrt)(*args)`` runs one hvp per basis vector of the input (the columns
  are not batched into one array operation yet); shape ``in.shape + in.shape``, for a
  tuple ``wrt`` JAX's nested tuple ``H[i][j]`` (d/d wrt[j] of the gradient for wrt[i]).

A gradient that forward mode cannot read again is refused, naming the user's function
and the line whose gradient calls what has no tangent rule; a custom Function whose
backward is ``once_differentiable`` is refused as such.
"""

import functools
import inspect
import threading

import numpy

from srcgrad.codegen import loader
from srcgrad.errors import SrcgradError, UnsupportedError

_grads = {}
_lock = threading.Lock()


def _differentiable(value):
    if isinstance(value, (bool, int, numpy.integer, numpy.bool_)):
        return False
    dtype = getattr(value, "dtype", None)
    return dtype is None or dtype.kind == "f"


def _gradient_of(fn, positions, args):
    """The composed gradient of ``fn`` w.r.t. ``positions`` for ``args``, as forward mode
    reads it (pipeline.compose_gradient with ``for_transform``), kept with the compile."""
    from srcgrad.api import grad
    from srcgrad import pipeline
    key = (fn, positions)
    g = _grads.get(key)
    if g is None:
        with _lock:
            g = _grads.setdefault(key, grad(fn, wrt=positions))
    compiled = g.compiled_for(args, {})
    info = compiled.load[0]
    pipeline.refuse_once_differentiable(compiled, "hessian: ")
    function = getattr(compiled, "for_transform", None)
    if function is None:
        if compiled.gradient_forward is None:
            raise UnsupportedError(
                f"hessian: the gradient of {fn.__qualname__} is not one function srcgrad can "
                f"differentiate again (several outputs, has_aux or fuse=True)",
                info.filename, info.first_lineno)
        function = compiled.for_transform = pipeline.compose_gradient(
            compiled, True, only_gradients=True, for_transform=True)
    return function, info


_programs = {}


def _tangent_of(function, primals, tangents):
    """``jvp(function, primals, tangents)[1]`` by a tangent program that returns the
    tangent only (forward_api.compile_jvp with ``values=False``): the gradient's own
    value (``dW1 = X.T @ g``) is not computed where no tangent reads it."""
    from srcgrad import forward_api
    bound = forward_api._bound(function, primals)
    params = list(bound.arguments)
    active = frozenset(p for p, primal, tangent in zip(params, primals, tangents)
                       if forward_api._carries_tangent(primal, tangent))
    key = (function, active)
    compiled = _programs.get(key)
    if compiled is None:
        with _lock:
            compiled = _programs.get(key)
            if compiled is None:
                compiled = _programs[key] = forward_api.compile_jvp(function, active, values=False)
    given = dict(zip(params, tangents))
    args = [bound.arguments[p] for p in compiled.params]
    args += [forward_api._as_tangent(given[p], bound.arguments[p]) for p in compiled.active]
    return compiled.function(*args)[1]


def _refused(exc, fn, info):
    """``exc`` (forward mode refusing the gradient's code) said of the user's function:
    the line of ``fn`` whose gradient holds what it refused."""
    origin = None
    for line in range(exc.lineno or 0, 0, -1):   # a statement nested in a guard: the guard's
        origin = loader.origin_at(exc.filename, line)
        if origin is not None:
            break
    where = (f"{origin.filename}:{origin.lineno}" if origin is not None
             else f"{info.filename}:{info.first_lineno}")
    message = exc.message.replace("srcgrad.runtime.", "rt.")
    if message.startswith("forward mode needs a jvp for "):
        what, _, detail = message[len("forward mode needs a jvp for "):].partition(", and ")
        message = f"no tangent for {what}, used by the gradient of {fn.__qualname__} at {where}"
    else:
        message = f"{message}, in the gradient of {fn.__qualname__} at {where}"
    new = type(exc)(f"hessian: {message}",
                    origin.filename if origin else info.filename,
                    origin.lineno if origin else info.first_lineno,
                    origin.col_offset if origin else None,
                    origin.source_line if origin else None, _HINT)
    return new


_HINT = ("srcgrad cannot differentiate this gradient again yet; use finite differences of "
         "sg.grad, or write the second derivative by hand.")


def hvp(fn, primals, tangents, wrt=None):
    """The Hessian-vector product ``H @ tangents`` of the scalar function ``fn`` at
    ``primals``: ``jvp(grad(fn, wrt=all), primals, tangents)[1]``, a tuple with one
    entry per primal (None for an integer or boolean primal). A tangent None is zero.
    ``wrt`` (positions or names, as in ``sg.grad``) restricts the gradient to those
    primals (the others' entries are None; their tangents still count): data such as
    a batch need not get a gradient of its own; such a primal's tangent that is all
    zeros counts as None (its terms are left out of the tangent program).

    Example:
        >>> (Hv,) = sg.hvp(f, (x,), (v,))   # doctest: +SKIP
    """
    from srcgrad.jacobians import _wrt_positions
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"srcgrad.hvp: {len(primals)} primals but {len(tangents)} tangents")
    if wrt is None:
        positions = tuple(k for k, p in enumerate(primals) if _differentiable(p))
    else:
        positions = tuple(_wrt_positions(fn, wrt)[0])
    if not positions:
        raise TypeError("srcgrad.hvp: no primal is a float scalar or array")
    function, info = _gradient_of(fn, positions, primals)
    # A primal outside ``wrt`` (data, a batch) usually comes with a zero tangent: none
    # at all lets forward mode leave out its terms (``dX @ W1``) instead of computing zeros.
    tangents = tuple(None if k not in positions and getattr(t, "ndim", 0)
                     and not numpy.any(t) else t for k, t in enumerate(tangents))
    try:
        products = _tangent_of(function, primals, tangents)
    except SrcgradError as exc:
        raise _refused(exc, fn, info) from None
    out = [None] * len(primals)
    for k, t in zip(positions, products):
        primal = primals[k]
        out[k] = t if numpy.shape(t) == numpy.shape(primal) else numpy.broadcast_to(
            t, numpy.shape(primal)).copy()
        if numpy.ndim(primal) == 0 and not hasattr(primal, "dtype"):
            out[k] = float(out[k])
    return tuple(out)


def hessian(fn, wrt=0):
    """``hessian(fn, wrt)(*args)``: the Hessian of the scalar function ``fn``, one hvp
    per input entry (forward-over-reverse); shape ``in.shape + in.shape``, for a tuple
    ``wrt`` the nested tuple ``H[i][j]`` of JAX."""
    from srcgrad.jacobians import _wrt_positions

    @functools.wraps(fn)
    def hessian_fn(*args):
        positions, many = _wrt_positions(fn, wrt)
        signature = inspect.signature(fn).bind(*args)
        signature.apply_defaults()
        args = tuple(signature.arguments.values())
        zero = [None] * len(args)
        blocks = {}
        for j in positions:
            x = args[j]
            shape = numpy.shape(x)
            columns = []
            for n in range(int(numpy.prod(shape, dtype=int))):
                e = numpy.zeros(shape, dtype=getattr(x, "dtype", numpy.float64))
                e.flat[n] = 1.0
                tangents = list(zero)
                tangents[j] = e if shape else 1.0
                products = hvp(fn, args, tangents, wrt=tuple(positions))
                columns.append([numpy.asarray(products[i], dtype=float) for i in positions])
            for r, i in enumerate(positions):
                rows = numpy.shape(args[i])
                if columns:
                    block = numpy.stack([c[r] for c in columns], axis=-1)
                else:
                    block = numpy.zeros(rows + (0,))
                blocks[i, j] = block.reshape(rows + shape)
        if many:
            return tuple(tuple(blocks[i, j] for j in positions) for i in positions)
        return blocks[positions[0], positions[0]]

    return hessian_fn
