"""Numba-compatible forms of the srcgrad runtime helpers (``rt.*``) the jit sweeps call.

Each helper has the NumPy helper's meaning for the types it accepts (srcgrad/runtime/);
for any other type its typing raises ``TypingError``, so that the whole gradient falls
back to the NumPy code (dispatch.py) rather than compute something else. A helper that
cannot tell at compile time whether it applies (shapes are run-time values) raises
``ValueError`` at run time: the call is run again by the NumPy gradient.

Importing this module needs numba.
"""

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from srcgrad.jit.errors import ZeroAdjoint
from srcgrad.jit.vmath import FUNCTIONS as _VECTOR_MATH
from srcgrad.jit.numba_types import (JIT_OPTIONS, basic_index as _basic_index,  # noqa: F401
                                    basic_item as _basic_item, false as _false,
                                    is_number as _is_number, is_shape as _is_shape,
                                    ndim_of as _ndim_of, none as _none, refuse as _refuse)
# The forms of the helpers of indexed writes and of products, signs and casts (_jrt.*).
from srcgrad.jit.writes import (check_sequence, check_unshared, written_grad,  # noqa: F401,E402
                                  zero_grad_at)
from srcgrad.jit.products import (cast_like, dot_grad_a, dot_grad_b, dtype_grad,  # noqa: F401,E402
                                  log_or_zero, matmul, matmul_grad_a, matmul_grad_b, share,
                                  sign,
                                  tie_share)
# The checks of values that might be lists or tuples (never, in compiled code).
from srcgrad.jit.containers import (add_grad, array_of, check_array_operand,  # noqa: F401,E402
                                    concatenate_vjp, container_op, items as _items, seq_add,
                                    seq_item, stack_vjp, unreached)
# Gradients moved between shapes: broadcasts, reductions along axes, reshapes.
from srcgrad.jit.shapes import (reduction_size, reshape, unbroadcast,  # noqa: F401,E402
                                unreduce, unreduce_like)
from srcgrad.jit.reductions import (prod_others, reduce_max, reduce_mean,  # noqa: F401,E402
                                    reduce_min, reduce_prod, reduce_std, reduce_sum, reduce_var)
# The helpers of Python's builtins and math, of np.clip and of transposes.
from srcgrad.jit.builtins_math import (builtin_abs, builtin_sum_vjp, cos,  # noqa: F401,E402
                                       cosh, divide, exp, log, log_base, log_base_grad, minmax_vjp,
                                       sin, sinh)
from srcgrad.jit.elementwise import (clip_above, clip_below, either,  # noqa: F401,E402
                                     inverse_axes, method_axes)
# The adjoint of indexing (rt.add_at): arrays, and the tuples a function unpacks.
from srcgrad.jit.indexing import add_at  # noqa: F401,E402
# Python's exact integers: + - * << of two numbers outside the kernels (translate.py).
from srcgrad.jit import integers as _integers  # noqa: E402
exact_add, exact_sub, exact_mul, exact_lshift = (_integers.exact_add, _integers.exact_sub,
                                                 _integers.exact_mul, _integers.exact_lshift)
int_range = _integers.int_range
# The reads of a name whose zero number is None (zeros.py).
from srcgrad.jit.optional import (iadd, imul, isub, nz, zadd, zmul, zsub,  # noqa: F401,E402
                                  iadd_at, isub_at, imul_at, is_zero_form as _is_zero_form)


def default_seed(out):
    """See srcgrad.runtime.default_seed."""


def owned_zeros(x):
    """See srcgrad.runtime.owned_zeros."""


def has_grad(g):
    """See srcgrad.runtime.has_grad."""


def shape_of(value):
    """See srcgrad.runtime.shape_of."""


@overload(default_seed)
def _default_seed(out):
    if isinstance(out, types.Float):
        return lambda out: 1.0
    if isinstance(out, types.Array) and isinstance(out.dtype, types.Float):
        def seed(out):
            if out.size != 1:
                raise ValueError("srcgrad jit: the output is not a scalar")
            return np.ones_like(out)
        return seed
    _refuse("default_seed", out)


@overload(owned_zeros)
def _owned_zeros(x):
    if isinstance(x, types.Array):
        dtype = x.dtype if isinstance(x.dtype, (types.Float, types.Complex)) else types.float64
        return lambda x: np.zeros(x.shape, dtype)
    _refuse("owned_zeros", x)


@overload(has_grad)
def _has_grad(g):
    if isinstance(g, types.NoneType):   # None: the zero number (zeros.py)
        return lambda g: False
    if _is_zero_form(g):
        return lambda g: False if g is None else has_grad(nz(g))
    if _is_number(g):
        return lambda g: g != 0
    if isinstance(g, types.Array) and g.ndim > 0 or isinstance(g, types.BaseTuple):
        return lambda g: True   # a tuple: the gradient of one (indexing.py), as a list is
    _refuse("has_grad", g)


def need_grad(g):
    """``has_grad(g)`` holds, else ZeroAdjoint (translate._zero_adjoints_typed)."""


@overload(need_grad)
def _need_grad(g):
    if isinstance(g, types.NoneType):   # None: ZeroAdjoint
        return lambda g: nz(g)
    if _is_zero_form(g):
        return lambda g: need_grad(nz(g))
    if _is_number(g):
        def need(g):
            if g == 0:
                raise ZeroAdjoint("srcgrad jit: a zero adjoint stays a number here")
        return need
    if isinstance(g, types.Array) and g.ndim > 0 or isinstance(g, types.BaseTuple):
        return lambda g: None
    _refuse("need_grad", g)


@overload(shape_of)
def _shape_of(value):
    if isinstance(value, types.Array):
        return lambda value: value.shape
    if _is_number(value):
        return lambda value: ()
    _refuse("shape_of", value)


def own(value):
    """See srcgrad.runtime.own."""


@overload(own)
def _own(value):
    if isinstance(value, types.Array):
        return lambda value: value.copy()
    if _is_number(value):
        return lambda value: value
    _refuse("own", value)


save = own   # rt.save's form: the entry an indexed write overwrites, copied where an array


def copy_restored(value, written):
    """See srcgrad.runtime.copy_restored."""


@overload(copy_restored)
def _copy_restored(value, written):
    # What the sweep restores is an array written into: a returned array is copied (it
    # may be one of them, or a view), a number is its own value.
    if isinstance(value, types.Array):
        return lambda value, written: value.copy()
    if _is_number(value):
        return lambda value, written: value
    _refuse("copy_restored", value)


def tangent_zero(value):
    """See srcgrad.rules.jvp.tangent_zero."""


@overload(tangent_zero)
def _tangent_zero(value):
    if isinstance(value, types.Array):
        dtype = value.dtype if isinstance(value.dtype, (types.Float, types.Complex)) else types.float64
        return lambda value: np.zeros(value.shape, dtype)
    if _is_number(value):
        return lambda value: 0.0
    _refuse("tangent_zero", value)


def tangent_like(t, y, right=False):
    """See srcgrad.rules.jvp.tangent_like (``right`` matters to lists only)."""


@overload(tangent_like)
def _tangent_like(t, y, right=False):
    if _is_number(y) and _is_number(t):
        return lambda t, y, right=False: t
    if isinstance(y, types.Array) and isinstance(t, types.Array) and t.ndim == y.ndim:
        def same(t, y, right=False):
            if t.shape != y.shape:
                raise ValueError("srcgrad jit: tangent_like of another shape")
            return t
        return same
    if isinstance(y, types.Array) and _is_number(t):
        return lambda t, y, right=False: np.full(y.shape, t, np.float64)
    _refuse("tangent_like", t, y)


def fits(target, value):
    """Whether ``target op= value`` computes ``target = target op value`` (inplace.py):
    ``target`` a writable float64 array, ``value`` a real number or an array of its shape
    whose dtype float64 arithmetic takes (float64, int64, bool)."""


_FITS = (types.float64, types.int64, types.boolean)


@overload(fits)
def _fits(target, value):
    if isinstance(target, types.NoneType):
        return lambda target, value: False
    if _is_zero_form(target):
        return lambda target, value: False if target is None else fits(nz(target), value)
    if not (isinstance(target, types.Array) and target.dtype == types.float64 and target.mutable):
        return lambda target, value: False
    if isinstance(value, (types.Float, types.Integer, types.Boolean)) and value in _FITS + (
            types.intp, types.int32, types.float32):
        return lambda target, value: True
    if isinstance(value, types.Array) and value.ndim == target.ndim and value.dtype in _FITS:
        return lambda target, value: value.shape == target.shape
    return lambda target, value: False


def power(a, b):
    """``a ** b``."""


@overload(power)
def _power(a, b):
    _refuse_integer_power(a, b)
    return lambda a, b: a ** b


def _refuse_integer_power(a, b):
    if isinstance(a, types.Integer) and isinstance(b, types.Integer) or \
            isinstance(a, types.Array) and isinstance(a.dtype, types.Integer) and \
            isinstance(b, (types.Integer, types.Array)) and not isinstance(b, types.Boolean):
        _refuse("power of integers", a, b)   # Python ints do not overflow


def numpy_power(a, b):
    """See srcgrad.runtime.power: ``a ** b``, inf where Python raises (``0.0 ** -0.5``,
    an overflow), as NumPy's and JIT_OPTIONS' error model give."""


@overload(numpy_power)
def _numpy_power(a, b):
    _refuse_integer_power(a, b)
    return lambda a, b: a ** b


def checked_power(a, b):
    """``a ** b`` outside the fused kernels (translate.py): numbers raise as Python's."""


@overload(checked_power)
def _checked_power(a, b):
    _refuse_integer_power(a, b)
    if _is_scalar(a) and _is_scalar(b):
        def checked(a, b):
            # Python's float ** raises where NumPy's gives inf or NaN (0.0 ** -1, an
            # overflow) and is complex for a negative base and a fractional power: raise,
            # so that the NumPy gradient runs the call and gives Python's answer.
            if a == 0 and b < 0:
                raise ZeroDivisionError("zero to a negative power")
            if a < 0 and b != np.floor(b):
                raise ValueError("a negative number to a fractional power")
            r = a ** b
            if np.isinf(r) and np.isfinite(a) and np.isfinite(b):
                raise OverflowError("numerical result out of range")
            return r
        return checked
    return lambda a, b: power(a, b)


def _is_scalar(t):
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


def true_div(a, b):
    """``a / b``, where a number divided by zero raises as Python's does."""


def floor_div(a, b):
    """``a // b``, the same."""


def mod(a, b):
    """``a % b``, the same."""


def _checked(operation):
    """An overload of ``operation`` raising ZeroDivisionError on numbers divided by zero.
    Python raises there and NumPy's scalars give inf or NaN; Numba cannot tell a Python
    float from ``np.float64``, so it raises for both and the NumPy gradient, run instead
    (dispatch.py), gives whichever answer the call's own values give. Arrays divide as
    NumPy's do; only the statements outside the fused kernels are checked (translate.py),
    so elementwise loops keep their vector code."""
    def typer(a, b):
        if not (_is_scalar(a) and _is_scalar(b)):
            return lambda a, b: operation(a, b)
        def checked(a, b):
            if b == 0:
                raise ZeroDivisionError("division by zero")
            return operation(a, b)
        return checked
    return typer


def _checked_into(operation, in_place):
    """The same for ``a op= b`` on a name: an array ``a`` is written in place."""
    scalar = _checked(operation)

    def typer(a, b):
        if isinstance(a, types.Array):
            return in_place
        return scalar(a, b)
    return typer


def true_div_into(a, b):
    """``a /= b``, where a number divided by zero raises as Python's does."""


def floor_div_into(a, b):
    """``a //= b``, the same."""


def mod_into(a, b):
    """``a %= b``, the same."""


def _div_in_place(a, b):
    a /= b
    return a


def _floor_div_in_place(a, b):
    a //= b
    return a


def _mod_in_place(a, b):
    a %= b
    return a


overload(true_div_into)(_checked_into(njit(**JIT_OPTIONS)(lambda a, b: a / b), _div_in_place))
overload(floor_div_into)(_checked_into(njit(**JIT_OPTIONS)(lambda a, b: a // b),
                                       _floor_div_in_place))
overload(mod_into)(_checked_into(njit(**JIT_OPTIONS)(lambda a, b: a % b), _mod_in_place))
overload(true_div)(_checked(njit(**JIT_OPTIONS)(lambda a, b: a / b)))
overload(floor_div)(_checked(njit(**JIT_OPTIONS)(lambda a, b: a // b)))
overload(mod)(_checked(njit(**JIT_OPTIONS)(lambda a, b: a % b)))


@njit(**JIT_OPTIONS)
def rev_range(r):
    """``reversed(r)`` of a range: the same values, last first."""
    n = len(r)
    return range(r.start + (n - 1) * r.step, r.start - r.step, -r.step)


def range_head(r, n):
    """``r[:n]`` of a range ``r`` (Numba does not slice ranges): the iterations a loop ended
    by a break ran (control_flow.RANGE_BREAK_FORWARD), with Python's slice rules."""


@overload(range_head, jit_options=JIT_OPTIONS)
def _range_head(r, n):
    if not (isinstance(r, types.RangeType) and isinstance(n, types.Integer)):
        _refuse("range_head", r, n)

    def head(r, n):
        size = len(r)
        if n < 0:
            n += size
        n = min(max(n, 0), size)
        return range(r.start, r.start + n * r.step, r.step)
    return head


def array_vjp(dy, obj):
    """See srcgrad.rules.numpy_shape.array_vjp (``np.array(obj)``'s gradient): of an array
    or a number, ``dy`` cast and unbroadcast as that helper does; of a list or tuple of
    numbers or of arrays, a list, entry ``i`` of ``dy`` for item ``i`` (a number ``dy``
    for each: a scalar adjoint stands for itself everywhere)."""


@overload(array_vjp, jit_options=JIT_OPTIONS)
def _array_vjp(dy, obj):
    if isinstance(obj, types.Array):   # np.asarray(x) of an array
        return lambda dy, obj: cast_like(unbroadcast(dy, obj), obj)
    if _is_number(obj) and not isinstance(obj, types.Boolean):
        return lambda dy, obj: dy
    if not _items(obj) or not (_is_number(obj.dtype) or isinstance(obj.dtype, types.Array)) \
            or isinstance(obj.dtype, types.Boolean):
        _refuse("array_vjp", dy, obj)
    if _is_number(dy) and not isinstance(dy, types.Boolean):
        def each_gets_dy(dy, obj):
            out = []
            for item in obj:
                out.append(cast_like(unbroadcast(dy, item), item))
            return out
        return each_gets_dy
    if not (isinstance(dy, types.Array) and dy.ndim >= 1):
        _refuse("array_vjp", dy, obj)   # a 0-d array: the NumPy gradient

    def entries(dy, obj):
        if len(dy) != len(obj):
            raise ValueError("srcgrad jit: array_vjp of another length")
        out = []
        for i in range(len(obj)):
            out.append(cast_like(unbroadcast(dy[i], obj[i]), obj[i]))
        return out
    return entries


# ----- The elementwise loops of loops.py -----

def any_array(values):
    """Whether any of ``values`` is an array (decided when Numba types the call)."""


def first_array(values):
    """The first array among ``values``."""


def flat(value):
    """An array as one dimension (a view of a C-contiguous one); a number as it is."""


def item(value, i):
    """Element ``i`` of a flat array; a number as it is."""


def _float64_c(t):
    return isinstance(t, types.Array) and t.dtype == types.float64 and t.layout == "C" and t.ndim > 0


def _made(source, name, **names):
    namespace = {"np": np, **names}
    exec(source, namespace)
    return namespace[name]


def elementwise_run(name, params, n_inputs, targets, deps, loop, original):
    """The function ``name(*params)`` an elementwise run of loops.py is called as: when
    Numba types a call, ``loop`` (one loop over the elements) where every array among
    the inputs is float64, C-contiguous, of one number of dimensions, and each output
    depends on an array (``deps``); else ``original`` (the run's statements as they were).
    The loop checks at run time that the arrays have one shape, and that each target
    (``params[k]`` for k in ``targets``: an array or a shape an unbroadcast sums to) has it too, else
    it runs ``original``: a result never changes."""
    # the loop indexes only in range (each array has the first's shape, checked first):
    # without bounds checks LLVM vectorises it (vmath.py)
    loop = njit(**dict(JIT_OPTIONS, boundscheck=False))(loop)
    original = njit(**JIT_OPTIONS)(original)
    args = ", ".join(params)
    stub = _made(f"def {name}({args}):\n    pass\n", name)

    def typing(*types_):
        arrays = [k for k in range(n_inputs) if isinstance(types_[k], types.Array)]
        fits = arrays and all(_float64_c(types_[k]) for k in arrays) and \
            all(_is_number(types_[k]) for k in range(n_inputs) if k not in arrays) and \
            len({types_[k].ndim for k in arrays}) == 1 and \
            all(any(isinstance(types_[k], types.Array) for k in d) for d in deps)
        checks = []
        if fits:
            ndim = types_[arrays[0]].ndim
            checks = [f"{params[k]}.shape != shape" for k in arrays[1:]]
            for k in targets:
                t = types_[k]
                if isinstance(t, types.Array) and t.ndim == ndim:
                    checks.append(f"{params[k]}.shape != shape")
                elif _is_shape(t) and len(t) == ndim:
                    checks.append(f"{params[k]} != shape")
                else:
                    fits = False
        if not fits:
            return _made(f"def impl({args}):\n    return original({args})\n", "impl",
                         original=original)
        body = "".join(f"    if {c}:\n        return original({args})\n" for c in checks)
        return _made(f"def impl({args}):\n    shape = {params[arrays[0]]}.shape\n{body}"
                     f"    return loop({args})\n", "impl", loop=loop, original=original)

    typing.__signature__ = __import__("inspect").signature(stub)
    overload(stub, jit_options=JIT_OPTIONS)(typing)
    stub._srcgrad_kernels = (loop, original)   # numba_types.check_integer_widths reads their IR
    return stub


@overload(any_array)
def _any_array(values):
    found = any(isinstance(t, types.Array) for t in values.types)
    return (lambda values: True) if found else (lambda values: False)


@overload(first_array)
def _first_array(values):
    for k, t in enumerate(values.types):
        if isinstance(t, types.Array):
            return _made(f"def impl(values):\n    return values[{k}]\n", "impl")
    _refuse("first_array", values)   # elementwise_run calls a loop only with an array


@overload(flat)
def _flat(value):
    if isinstance(value, types.Array):
        if value.layout == "C":
            return lambda value: value.reshape(value.size)
        return lambda value: np.ascontiguousarray(value).reshape(value.size)
    if _is_number(value):
        return lambda value: value
    _refuse("flat", value)


@overload(item)
def _item(value, i):
    if isinstance(value, types.Array):
        return lambda value, i: value[i]
    if _is_number(value):
        return lambda value, i: value
    _refuse("item", value)


def into(buf, value):
    """The gradient ``value``, or None where it was written into ``buf`` (a float64
    array of its shape the caller allocated: returned in its place)."""


@overload(into)
def _into(buf, value):
    if isinstance(buf, types.Array) and isinstance(value, types.Array) and buf.layout == "C" \
            and value.dtype == types.float64 and buf.dtype == types.float64 and value.ndim == buf.ndim:
        if value.layout == "C":
            def impl(buf, value):
                if value.shape != buf.shape:
                    return value
                _copy_data(buf, value)
                return None
            return impl
    return lambda buf, value: value


@intrinsic
def _copy_data(typingctx, to, of):
    """memcpy of C-contiguous ``of`` into ``to`` (of its shape and dtype): ``to[...] = of``
    took Numba 3 s to compile, a loop over ``reshape``s 0.3 s."""
    def codegen(context, builder, signature, args):
        dst = context.make_array(signature.args[0])(context, builder, args[0])
        src = context.make_array(signature.args[1])(context, builder, args[1])
        cgutils.raw_memcpy(builder, dst.data, src.data, src.nitems, src.itemsize)
        return context.get_dummy_value()
    return types.void(to, of), codegen
    return lambda buf, value: value


def out_if(keep, out):
    """``out`` where ``keep``, else None (not boxed)."""


@overload(out_if)
def _out_if(keep, out):
    return lambda keep, out: out if keep else None


def same_shape(out, seed):
    """Whether ``np.shape(out) == np.shape(seed)`` (the seeded call's check)."""


@overload(same_shape)
def _same_shape(out, seed):
    if isinstance(out, types.Array) and isinstance(seed, types.Array) and out.ndim == seed.ndim:
        return lambda out, seed: out.shape == seed.shape
    if _ndim_of(out) == 0 and _ndim_of(seed) == 0:
        return lambda out, seed: True
    return lambda out, seed: False


def norm(x):
    """``np.linalg.norm(x)``: NumPy's ``sqrt(dot(x, x))`` for a float64 array (Numba's
    own calls BLAS ``nrm2``, rounding otherwise and five times slower on W3's vectors)."""


@overload(norm)
def _norm(x):
    if isinstance(x, types.Array) and x.dtype == types.float64:
        if x.ndim == 1 and x.layout == "C":
            return lambda x: np.sqrt(np.dot(x, x))
        def impl(x):
            flat = np.ascontiguousarray(x).reshape(x.size)
            return np.sqrt(np.dot(flat, flat))
        return impl
    return lambda x: np.linalg.norm(x)


globals().update({f"vm_{name}": f for name, f in _VECTOR_MATH.items()})   # _jrt.vm_sin, ...


# The tapes of fixed_tapes.py: a float64 array sized by a loop's trip count, and a count.

def tape_new(iterable, pushes):
    """An empty float64 tape for ``pushes`` values a turn of a loop over ``iterable``."""


@overload(tape_new)
def _tape_new(iterable, pushes):
    if isinstance(iterable, (types.RangeType, types.Array)) and isinstance(pushes, types.Integer):
        return lambda iterable, pushes: np.empty(len(iterable) * pushes)
    _refuse("tape_new", iterable)


def tape_push(tape, n, value):
    """``tape[n] = value``; ``n + 1`` (IndexError past the end: the loop ran longer)."""


@overload(tape_push, jit_options=JIT_OPTIONS)
def _tape_push(tape, n, value):
    if value == types.float64:   # an int64 or a bool would come back as another number
        def impl(tape, n, value):
            if n >= len(tape):
                raise IndexError("srcgrad jit: a tape past its trip count")
            tape[n] = value
            return n + 1
        return impl
    _refuse("tape_push", value)


def tape_down(n):
    """``n - 1``, the index of a tape's last value (IndexError where it is empty)."""


@overload(tape_down, jit_options=JIT_OPTIONS)
def _tape_down(n):
    def impl(n):
        if n <= 0:
            raise IndexError("srcgrad jit: pop from an empty tape")
        return n - 1
    return impl
