"""The values that go into a gradient call and come out of it: which inputs can be
differentiated, the seed of the reverse sweep (``grad_outputs``), and each gradient
finished with the type, shape and dtype of its input (api.py calls these)."""

import dataclasses
import numpy

from srcgrad import pytree, runtime
from srcgrad.errors import matrix_refusal
from srcgrad.analysis.ranks import attribute_matrix
from srcgrad.runtime.dask_forms import is_dask

_LEAF_TYPES = (float, numpy.ndarray, int)


def _check_differentiable(name, value):
    kind = type(value)
    if kind is float or (kind is numpy.ndarray and value.dtype.kind == "f"):
        return
    if pytree.is_node(value):
        if value is None:
            return
        for path, leaf in pytree.leaves_with_paths(value, name):
            if leaf is not None:
                _check_differentiable(path, leaf)
                if not (isinstance(leaf, (float, complex)) or getattr(leaf, "dtype", None) is not None):
                    raise TypeError(
                        f"srcgrad: cannot differentiate with respect to {path!r}: it is a "
                        f"{type(leaf).__name__}, not a float or an array. Keep such values out "
                        f"of the structure you differentiate (pass them as another argument).")
        return
    if isinstance(value, (bool, numpy.bool_)) or isinstance(value, (int, numpy.integer)):
        raise TypeError(
            f"srcgrad: cannot differentiate with respect to {name!r}: it is an integer or boolean "
            f"({type(value).__name__}); only floating point inputs have gradients. Pass a float "
            f"(e.g. {float(value)!r}) or a float array.")
    if isinstance(value, (complex, numpy.complexfloating)) or getattr(value, "dtype", None) is not None \
            and value.dtype.kind == "c":
        raise TypeError(
            f"srcgrad: cannot differentiate with respect to {name!r}: it is complex "
            f"({getattr(value, 'dtype', type(value).__name__)}); srcgrad differentiates with respect to "
            f"real inputs only. Pass the real and imaginary parts as two real arrays and build "
            f"the complex value inside the function (re + 1j * im).")
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.kind not in "fc":
        raise TypeError(
            f"srcgrad: cannot differentiate with respect to {name!r}: its dtype is {dtype}; only "
            f"floating point inputs have gradients. Use .astype(float).")
    if dtype is None and not isinstance(value, float):
        raise TypeError(
            f"srcgrad: cannot differentiate with respect to {name!r}: it is a "
            f"{type(value).__name__} object, which is neither a float, an array nor a structure "
            f"srcgrad knows (a dict, list, tuple, namedtuple or dataclass of those). Make its "
            f"class a dataclass, or register it with srcgrad.register_pytree_node.")


def refuse_matrices(args):
    """Refuse an argument that is a ``numpy.matrix`` (errors.matrix_refusal says why)."""
    for k, value in enumerate(args):
        if isinstance(value, numpy.matrix):
            raise matrix_refusal(f"argument {k}")
        if attribute_matrix(value):
            raise matrix_refusal(f"an attribute of argument {k}")


def _seed(out, grad_outputs, tuple_output):
    if tuple_output:
        outs = tuple(out)
        if grad_outputs is None:
            return [runtime.default_seed(o) for o in outs]
        if not isinstance(grad_outputs, (tuple, list)) or len(grad_outputs) != len(outs):
            raise ValueError(f"srcgrad: the function returns {len(outs)} outputs; pass a tuple of "
                             f"{len(outs)} grad_outputs (None for an output that is not seeded)")
        return [0.0 if g is None else _check_seed(o, g) for o, g in zip(outs, grad_outputs)]
    if grad_outputs is None:
        return runtime.default_seed(out)
    return _check_seed(out, grad_outputs)


def _check_seed(out, g):
    if out is None:
        raise runtime.returned_none()
    if pytree.is_node(out) and type(out) not in _LEAF_TYPES:
        return _tree_seed(out, g, "grad_outputs")
    if isinstance(g, (list, tuple)):
        g = runtime.namespace(out).asarray(g)
    oshape = getattr(out, "shape", ())
    gshape = getattr(g, "shape", ())
    if tuple(oshape) != tuple(gshape):
        if not (runtime.is_scalar(out) and runtime.is_scalar(g)):
            raise ValueError(f"srcgrad: grad_outputs has shape {tuple(gshape)} but the output has "
                             f"shape {tuple(oshape)}")
        if not oshape:
            g = g.reshape(())  # a scalar output's adjoint is a scalar (the sweep relies on it)
    if getattr(out, "dtype", None) is not None and out.dtype.kind == "c" or isinstance(out, complex):
        # PyTorch's seed dL/dRe + 1j dL/dIm is the conjugate of the sweep's (rules/__init__.py).
        g = runtime.namespace(out, g).conj(g) if runtime.is_array(g) else complex(g).conjugate()
    return g


def _tree_seed(out, g, path):
    """The seed of a structured output ``out``: ``g`` mirrors it (None: not seeded), made
    into the adjoint the reverse sweep reads (pytree.py: lists, dicts, Fields)."""
    if g is None:
        return 0.0
    if not pytree.is_node(out):
        return _check_seed(out, g)
    if isinstance(out, dict):
        if not isinstance(g, dict) or set(g) != set(out):
            raise ValueError(f"srcgrad: {path} must be a dict with the output's keys "
                             f"{sorted(map(repr, out))}")
        return {k: _tree_seed(v, g[k], f"{path}[{k!r}]") for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        if not isinstance(g, (list, tuple)) or len(g) != len(out):
            raise ValueError(f"srcgrad: {path} must be a {type(out).__name__} of {len(out)} "
                             f"entries, like the output")
        return [_tree_seed(v, gk, f"{path}[{k}]") for k, (v, gk) in enumerate(zip(out, g))]
    if out is None:
        return 0.0
    if pytree.is_dataclass_instance(out):   # its adjoint: pytree.Fields, field -> adjoint
        if type(g) is not type(out):
            raise ValueError(f"srcgrad: {path} must be a {type(out).__name__}, like the output")
        return pytree.Fields({f.name: _tree_seed(getattr(out, f.name), getattr(g, f.name),
                                                 f"{path}.{f.name}")
                              for f in dataclasses.fields(out)})
    raise TypeError(f"srcgrad: an output that is a {type(out).__name__} cannot be seeded; return "
                    f"a dict, list, tuple or dataclass")


def _finish(compiled, grads, inputs, out, allow_unused, materialize_grads, seed=None):
    likes = [inputs.get(name) for name in compiled.wrt]
    return _finish_values(grads, compiled.wrt, likes, allow_unused, materialize_grads, seed)


def distinct(grads, seed=None):
    """``grads`` (a tuple) with each array leaf in memory of its own: not the seed's (the
    caller's ``grad_outputs`` or cotangent, which the sweep may hand through: the adjoint of
    ``x + y`` is the seed itself) nor an earlier gradient's (``x + y`` gives ``x`` and ``y``
    one adjoint), so that changing one gradient in place (clipping, scaling) changes no other."""
    ndarray = numpy.ndarray
    if seed is None or type(seed) is float or type(seed) is ndarray:   # the common call:
        owners = set() if type(seed) is not ndarray else {id(seed if seed.base is None else seed.base)}
        for g in grads:   # NumPy arrays whose owners (``base``) are distinct arrays
            if type(g) is not ndarray:
                break
            owner = g if g.base is None else g.base
            if type(owner) is not ndarray or id(owner) in owners:
                break
            owners.add(id(owner))
        else:
            return grads
    taken = [leaf for leaf in (pytree.tree_leaves(seed) if pytree.is_node(seed) else (seed,))
             if runtime.is_array(leaf) and not is_dask(leaf)]

    def own(leaf):
        if runtime.is_array(leaf) and not is_dask(leaf):   # (a Dask array has no memory)
            if any(type(leaf) is type(t) and runtime.may_share_memory(leaf, t) for t in taken):
                leaf = leaf.copy()
            taken.append(leaf)
        return leaf
    return tuple(pytree.tree_map(own, g) if pytree.is_node(g) else own(g) for g in grads)


def _finish_values(grads, names, likes, allow_unused, materialize_grads, seed=None):
    """Each gradient with the type, shape and dtype of its input, in memory the caller owns
    (``distinct``: none of the seed's ``seed``, none another gradient's)."""
    finished = []
    for name, g, like in zip(names, grads, likes):
        if g is None:
            if materialize_grads:
                finished.append(runtime.zeros_like(like) if like is not None else None)
                continue
            if allow_unused:
                finished.append(None)
                continue
            raise RuntimeError(
                f"srcgrad: {name!r} appears not to have been used in computing the output "
                f"(its gradient is undefined). Set allow_unused=True if this is the desired "
                f"behavior (or materialize_grads=True for zeros).")
        if like is not None and not (type(g) is type(like) is numpy.ndarray and g.shape == like.shape
                                     and g.dtype == like.dtype):
            g = runtime.materialize(g, like)
        elif type(g) is numpy.ndarray and not g.flags.writeable:
            g = g.copy()  # the seed, or a broadcast view of it: the caller gets an array of its own
        finished.append(g)
    if len(finished) == 1 and type(finished[0]) is numpy.ndarray and not runtime.is_array(seed) \
            and not pytree.is_node(seed):
        return tuple(finished)   # one array, no array seed: nothing to share
    return distinct(tuple(finished), seed)
