"""Jacobians: ``sg.jacfwd`` (forward mode over the columns) and ``sg.jacobian``, alias
``sg.jacrev`` (reverse mode over the rows). Shapes follow JAX: ``out.shape + in.shape``.

``jacfwd`` runs the tangent program (forward_api.py) once per basis vector of the input;
``jacobian`` one backward sweep per basis vector of the output, of one forward sweep
(``sg.vjp`` with ``retain_graph``). Neither batches its basis vectors into one array
operation yet.
"""

import functools
import inspect

import numpy

from srcgrad.api import vjp
from srcgrad.forward_api import jvp


def _wrt_positions(fn, wrt):
    params = [p.name for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    many = isinstance(wrt, (tuple, list))
    positions = []
    for item in (wrt if many else [wrt]):
        if isinstance(item, str):
            if item not in params:
                raise ValueError(f"srcgrad: wrt={item!r} is not a positional parameter of "
                                 f"{fn.__qualname__}")
            item = params.index(item)
        if not -len(params) <= item < len(params):
            raise ValueError(f"srcgrad: wrt={item} but the function has {len(params)} positional parameters")
        positions.append(item % len(params))
    return positions, many


def jacfwd(fn, wrt=0):
    """``jacfwd(fn, wrt)(*args)``: the Jacobian of ``fn`` by forward mode, one tangent
    program run per input entry (column); shape ``out.shape + in.shape``, a tuple of
    them for a tuple ``wrt``."""

    @functools.wraps(fn)
    def jacobian_fn(*args):
        positions, many = _wrt_positions(fn, wrt)
        results = []
        for k in positions:
            x = numpy.asarray(args[k], dtype=float)
            columns = []
            out = None
            for j in range(x.size):
                e = numpy.zeros(x.size)
                e[j] = 1.0
                tangents = [None] * len(args)
                tangents[k] = e.reshape(x.shape) if numpy.ndim(args[k]) else 1.0
                out, t = jvp(fn, args, tangents)
                columns.append(numpy.asarray(t, dtype=float))
            out_shape = numpy.shape(out) if out is not None else numpy.shape(fn(*args))
            if columns:
                jac = numpy.stack(columns, axis=-1).reshape(out_shape + x.shape)
            else:
                jac = numpy.zeros(out_shape + x.shape)
            results.append(jac)
        return tuple(results) if many else results[0]

    return jacobian_fn


def jacobian(fn, wrt=0):
    """``jacobian(fn, wrt)(*args)``: the Jacobian of ``fn`` by reverse mode, one backward
    sweep per output entry (row) of one forward sweep (``sg.vjp``, ``retain_graph``);
    shape ``out.shape + in.shape``, a tuple of them for a tuple ``wrt``."""
    @functools.wraps(fn)
    def jacobian_fn(*args):
        positions, many = _wrt_positions(fn, wrt)
        out, backward = vjp(fn, wrt=tuple(positions), materialize_grads=True,
                            allow_unused=True)(*args)
        out_arr = numpy.asarray(out, dtype=float)
        rows = [[] for _ in positions]
        for i in range(out_arr.size):
            seed = numpy.zeros(out_arr.size)
            seed[i] = 1.0
            seed = seed.reshape(out_arr.shape) if numpy.ndim(out) else 1.0
            grads = backward(seed, retain_graph=True)
            for r, g in zip(rows, grads):
                r.append(numpy.asarray(g, dtype=float))
        results = []
        for k, r in zip(positions, rows):
            in_shape = numpy.shape(args[k])
            jac = numpy.stack(r).reshape(out_arr.shape + in_shape) if r else \
                numpy.zeros(out_arr.shape + in_shape)
            results.append(jac)
        return tuple(results) if many else results[0]

    return jacobian_fn


jacrev = jacobian
