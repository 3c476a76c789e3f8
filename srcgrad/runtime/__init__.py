"""The only module generated gradient code calls (bound there as ``rt``).

Helpers here work on NumPy and CuPy arrays alike: they take the namespace from
their arguments. An adjoint that is still a Python ``0.0`` means "no gradient
has arrived yet"; helpers keep it a scalar as long as they can, so nothing is
allocated for gradients that stay zero.

The package gathers its modules into one namespace, ``rt``:

* ``arrays``: the array namespace (NumPy or CuPy), shapes, dtypes, and the
  scalar-or-array functions;
* ``broadcast``: ``unbroadcast``/``unreduce`` and their transposes;
* ``containers``: adjoints of lists, tuples, dicts and other structures;
* ``caller_effects``: a list or dict argument changed in place, written back to the caller;
* ``sweep``: indexing into adjoints, in-place accumulation, the tape's saves;
* ``boundary``: the default seed and gradients handed back to the caller;
* ``hooks``: gradient hooks and the guard of in-place writes;
* ``dask_forms``: the namespace ``xp`` of Dask inputs, its refusals, and the Dask
  forms of indexed writes (docs/scaling_out.md);
* this module: fused elementwise kernels (transform/fuse.py) and ``helper``.

A rule's own run-time mathematics (``rt.norm_vjp``, ``rt.einsum_vjp``...) lives
beside the rule in ``srcgrad/rules/`` and joins ``rt`` through ``@rt.helper``
when the rules are imported (``import srcgrad`` does that); custom Functions'
``rt.function_forward``/``rt.function_backward`` join it from custom_function.py.
Generated code reads every helper as a plain attribute of this module.
"""

import types

import numpy

from srcgrad.runtime.arrays import *  # noqa: F401,F403 (the helpers, re-exported as rt.<name>)
from srcgrad.runtime.arrays import _cupy_module
from srcgrad.runtime.boundary import *  # noqa: F401,F403
from srcgrad.runtime.broadcast import *  # noqa: F401,F403
from srcgrad.runtime.caller_effects import *  # noqa: F401,F403
from srcgrad.runtime.containers import *  # noqa: F401,F403
from srcgrad.runtime.hooks import *  # noqa: F401,F403
from srcgrad.runtime.items import *  # noqa: F401,F403
from srcgrad.runtime.sweep import *  # noqa: F401,F403


def helper(function):
    """Decorator: ``function`` becomes the run-time helper ``rt.<its name>``.

    Generated code calls it as ``rt.<name>``; like every helper of this package it
    reports this module as its own (``__module__``), which is how the compiler
    tells srcgrad's helpers from the user's functions (transform/anf.py) and how
    error messages name it. Two different helpers may not share a name.
    """
    name = function.__name__
    existing = globals().get(name)
    if existing is not None and existing is not function and (
            getattr(existing, "__qualname__", None) != function.__qualname__
            or getattr(getattr(existing, "__code__", None), "co_filename", None)
            != function.__code__.co_filename):
        raise ValueError(f"srcgrad: two run-time helpers are named rt.{name}")
    function.__module__ = __name__
    globals()[name] = function
    return function


def _adopt():
    """Every function and class of this package's modules reports the package as its
    module, as when they were one module (see ``helper``)."""
    import sys
    prefix = __name__ + "."
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith(prefix):
            for value in vars(module).values():
                if isinstance(value, (types.FunctionType, type)) and value.__module__ == module_name:
                    value.__module__ = __name__


# ----- Fused elementwise kernels (transform/fuse.py) -----

# Run fused kernels on NumPy too, as plain Python (tests check the fused code path
# on the CPU this way; on NumPy it saves nothing). Tests set ``rt.FUSE_ON_NUMPY``,
# so the switch, and ``fused_kernel`` that reads it, live in this module.
FUSE_ON_NUMPY = False
_WEAK_SCALARS = (int, float)


def fused_kernel(kernel, inputs, output_deps, targets):
    """``kernel`` ready to run on ``inputs``, or None where its assumptions fail.

    A fused kernel drops ``rt.unbroadcast``/``rt.unreduce``, so it needs every
    array among ``inputs`` and every shape in ``targets`` to have one shape, and
    one floating dtype (Python numbers mix in as NumPy 2 does); each output must
    depend (``output_deps``: input positions) on such an array, so it has that
    shape. On CuPy the kernel is ``cupy.fuse`` of it, compiled once per kernel.
    """
    shape = dtype = None
    module = None
    for value in inputs:
        kind = type(value)
        if kind in _WEAK_SCALARS:
            continue
        if kind.__module__.startswith("cupy"):
            this = "cupy"
        elif isinstance(value, (numpy.ndarray, numpy.generic)):
            this = "numpy"
        else:
            return None
        if module is None:
            module = this
        elif module != this:
            return None
        if dtype is None:
            dtype = value.dtype
        elif value.dtype != dtype:
            return None
        if value.ndim:
            if shape is None:
                shape = value.shape
            elif value.shape != shape:
                return None
    if shape is None or dtype.kind != "f" or module is None:
        return None
    if module == "numpy" and not FUSE_ON_NUMPY:
        return None
    for target in targets:
        if (target if type(target) is tuple else getattr(target, "shape", None)) != shape:
            return None
    for deps in output_deps:
        if not any(getattr(inputs[i], "ndim", 0) for i in deps):
            return None
    compiled = kernel.__dict__.get("_srcgrad_fused")
    if compiled is None:
        compiled = kernel._srcgrad_fused = {}
    found = compiled.get(module)
    if found is None:
        xp = numpy if module == "numpy" else _cupy_module()
        bound = types.FunctionType(kernel.__code__, {"xp": xp, "__builtins__": __builtins__},
                                   kernel.__name__)
        found = compiled[module] = bound if module == "numpy" else xp.fuse(bound)
    return found


def first_array(*values):
    """The first of ``values`` that is an array of at least one dimension."""
    for value in values:
        if getattr(value, "ndim", 0):
            return value
    raise ValueError("srcgrad: internal error: a fused kernel ran without an array input")


_adopt()
