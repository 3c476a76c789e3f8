"""Vectorised transcendental functions in the jit's elementwise loops (glibc's libmvec).

Numba lowers ``np.sin`` of a number to one libm call per element, which LLVM cannot
vectorise: W6's loop spent most of its time in scalar ``sin``/``exp``/``cos``. In a
loop of loops.py, ``np.sin(x)`` of a float64 becomes ``_jrt.vm_sin(x)``: the same libm
call, declared with LLVM's ``vector-function-abi-variant`` attribute naming glibc's
4-lane AVX2 form (``_ZGVdN4v_sin``), so that LLVM's loop vectorizer calls it on four
elements at a time (the loop's remainder calls libm). libmvec's results are within
4 ulp of libm's (glibc's documented bound; 3 ulp measured for sin on [-3, 3]), as
NumPy's own SIMD loops differ from libm in the last bits.

Used only where it is safe: glibc's libmvec has the function, Numba compiles for the
host CPU (no ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``) and the host has AVX2 (the
4-lane form's calling convention); ``SRCGRAD_JIT_VECTOR_MATH=0`` turns it off. Else
``vm_<name>`` is ``np.<name>``. Importing this module needs numba.
"""

import ctypes
import os

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import config
from numba.extending import intrinsic, overload

from srcgrad.jit.loops import VECTOR_UFUNCS as UFUNCS

_LANES = 4
_ISA = "d"   # x86-64 vector ABI: AVX2, 4 doubles


def _available():
    """The C names whose 4-lane libmvec form can be called here (empty where none)."""
    if os.environ.get("SRCGRAD_JIT_VECTOR_MATH", "1") == "0":
        return frozenset()
    if config.CPU_NAME or config.CPU_FEATURES:   # a generic target: AVX2 not assumed
        return frozenset()
    try:
        import llvmlite.binding as llvm
        if not llvm.get_host_cpu_features().get("avx2"):
            return frozenset()
        mvec = ctypes.CDLL("libmvec.so.1")
        llvm.load_library_permanently("libmvec.so.1")
    except Exception:   # not glibc, not x86-64, no libmvec
        return frozenset()
    return frozenset(c for c in UFUNCS.values() if hasattr(mvec, _vector_name(c)))


def _vector_name(c_name):
    return f"_ZGV{_ISA}N{_LANES}v_{c_name}"


AVAILABLE = _available()


def _declare(module, c_name):
    """``double c_name(double)`` in ``module``, with its vector variant declared and
    kept referenced (a weak function that calls it: LLVM drops unused declarations
    before the loop vectorizer looks for the variant)."""
    double = ir.DoubleType()
    vector = ir.VectorType(double, _LANES)
    vname = _vector_name(c_name)
    scalar = module.globals.get(c_name)
    if scalar is None:
        scalar = ir.Function(module, ir.FunctionType(double, [double]), c_name)
    # llvmlite accepts only the attributes it knows by name: added as the set they are
    for attribute in ("nounwind", "readnone",
                      f'"vector-function-abi-variant"="_ZGV_LLVM_N{_LANES}v_{c_name}({vname})"'):
        set.add(scalar.attributes, attribute)
    if vname not in module.globals:
        variant = ir.Function(module, ir.FunctionType(vector, [vector]), vname)
        set.add(variant.attributes, "nounwind")
        set.add(variant.attributes, "readnone")
        keep = ir.Function(module, ir.FunctionType(ir.VoidType(), [vector.as_pointer()]),
                           "srcgrad_keep_" + vname)
        keep.linkage = "weak"
        b = ir.IRBuilder(keep.append_basic_block())
        b.store(b.call(variant, [b.load(keep.args[0])]), keep.args[0])
        b.ret_void()
    return scalar


def _scalar_call(c_name):
    @intrinsic
    def call(typingctx, x):
        def codegen(context, builder, signature, args):
            return builder.call(_declare(builder.module, c_name), args)
        return types.float64(types.float64), codegen
    return call


def _define(ufunc_name, c_name):
    ufunc = getattr(np, ufunc_name)

    def vm(x):
        return ufunc(x)
    vm.__name__ = vm.__qualname__ = f"vm_{ufunc_name}"
    vm.__doc__ = f"``np.{ufunc_name}`` of a number (libmvec's {_vector_name(c_name)} in vectorised loops)"
    call = _scalar_call(c_name) if c_name in AVAILABLE else None

    @overload(vm)
    def _vm(x):
        if call is not None and x == types.float64:
            return lambda x: call(x)
        return lambda x: ufunc(x)
    return vm


FUNCTIONS = {name: _define(name, c) for name, c in UFUNCS.items()}
