"""The array namespace and facts about values that every other helper reads.

Helpers work on NumPy, CuPy and Dask arrays alike: ``namespace`` finds the module
from the arrays among their arguments (Python numbers mix with any; for Dask it is
dask_forms.py's stand-in for ``dask.array``). The
scalar-or-array functions (``rt.sin``, ``rt.log``...) call ``math`` for a Python
number, so a host float never becomes a device array.
"""

import math as _math

import numpy

from srcgrad.runtime import dask_forms as _dask_forms

_cupy = None
_cupy_checked = False


def _cupy_module():
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy  # noqa: F401
            _cupy = cupy
        except Exception:  # ImportError, or CUDA missing at import
            _cupy = None
    return _cupy


def namespace(*values):
    """NumPy, CuPy or Dask (``dask_forms.namespace()``), from the arrays among ``values``
    (scalars mix with any; NumPy arrays mix with Dask arrays, as in Dask itself).

    Raises:
        TypeError: NumPy and CuPy arrays are mixed, or CuPy and Dask arrays.
    """
    found = None
    for value in values:
        module = type(value).__module__
        if module == "numpy":
            continue
        if module.startswith("cupy") or type(value) is DeviceShape:
            kind = "cupy"
        elif module.startswith("dask.array") or type(value) is DaskShape:
            kind = "dask"
        elif isinstance(value, (list, tuple, dict)):
            if not value:
                continue
            sub = namespace(*(value.values() if isinstance(value, dict) else value))
            kind = None if sub is numpy else "cupy" if sub is _cupy else "dask"
            if kind is None:
                continue
        else:
            continue
        if found is None:
            found = kind
        elif kind != found:
            raise TypeError("srcgrad: CuPy and Dask arrays are mixed in one call; give "
                            "the Dask arrays CuPy chunks or move the CuPy arrays to the host.")
    if found == "cupy":
        cupy = _cupy_module()
        for value in values:
            if isinstance(value, numpy.ndarray):
                raise TypeError(
                    "srcgrad: NumPy and CuPy arrays are mixed in one call; move them to "
                    "one device first (cupy.asarray or .get()).")
        return cupy
    if found == "dask":
        return _dask_forms.namespace()
    return numpy


def is_array(value):
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, (int, float))


def may_share_memory(a, b):
    """Whether arrays ``a`` and ``b`` may share memory (their namespace's bounds test; only
    identity where it cannot say, as for Dask)."""
    if a is b:
        return True
    if _dask_forms.is_dask(a) or _dask_forms.is_dask(b):
        return False   # a write into a Dask array rebinds that one object, no view sees it
    try:
        return bool(namespace(a).may_share_memory(a, b))
    except (AttributeError, TypeError, NotImplementedError):
        return False


class DeviceShape(tuple):
    """The shape of a CuPy array saved in place of the array: it keeps the namespace,
    so a scalar adjoint broadcast to it (``rt.unreduce``) lands on the device."""

    __slots__ = ()

    @property
    def shape(self):
        return tuple(self)


class DaskShape(tuple):
    """The shape of a Dask array saved in place of the array: it keeps the namespace and
    the chunks, so a scalar adjoint broadcast to it (``rt.unreduce``) is a Dask array
    chunked like the array was."""

    @property
    def shape(self):
        return tuple(self)


def shape_of(value):
    if isinstance(value, (list, tuple)):
        return value   # a container operand keeps itself (rt.unbroadcast tells it from a shape)
    shape = getattr(value, "shape", ())
    module = type(value).__module__
    if module.startswith("cupy"):
        return DeviceShape(shape)
    if module.startswith("dask.array"):
        saved = DaskShape(shape)
        saved.chunks = value.chunks
        return saved
    return shape


def normalize_axis(axis, ndim):
    """``axis`` as a sorted tuple of non-negative ints (None: all axes)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % ndim if ndim else 0 for a in axis))
    return (axis % ndim if ndim else 0,)


def float_dtype(x, xp):
    """The dtype of ``x`` if it is floating or complex, else float64: a gradient's dtype."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "fc":
        return xp.float64
    return dtype


def _writeable(array):
    """Whether ``array`` accepts writes (CuPy arrays have no ``writeable`` flag, Dask arrays no flags; a NumPy
    scalar such as ``np.float64`` has a shape but takes no item assignment)."""
    if isinstance(array, numpy.generic):
        return False
    flags = getattr(array, "flags", None)   # None: a Dask array (immutable; x[i] = v rebinds it)
    return flags is None or getattr(flags, "writeable", True)


def _is_basic_index(index):
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, (int, slice)):
            continue
        if isinstance(item, numpy.integer):
            continue
        return False
    return True


_CUPY_ARRAY_TYPES = {}   # type -> whether it is CuPy's ndarray


def is_cupy_array_type(kind):
    """Whether ``kind`` is CuPy's ndarray (without importing CuPy; cached per type)."""
    found = _CUPY_ARRAY_TYPES.get(kind)
    if found is None:
        found = _CUPY_ARRAY_TYPES[kind] = kind.__name__ == "ndarray" and \
            getattr(kind, "__module__", "").split(".")[0] == "cupy"
    return found


def _is_array_object(value):
    return isinstance(value, numpy.ndarray) or type(value).__module__.startswith("cupy")


def shape_tuple(value):
    """The shape of ``value`` as a tuple (of an array, a list NumPy would read, a number)."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return tuple(shape)
    return numpy.shape(value)


def sign(x):
    """sign(x) as a float (0 at 0), for Python numbers and arrays."""
    if is_array(x):
        return namespace(x).sign(x)
    return float(bool(x > 0)) - float(bool(x < 0))


def _scalar_or_xp(name):
    def fn(x):
        if is_array(x):
            return getattr(namespace(x), name)(x)
        return getattr(_math, name)(x)
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"``{name}`` of a Python number (math.{name}) or of an array (xp.{name})."
    return fn


sin = _scalar_or_xp("sin")
cos = _scalar_or_xp("cos")
exp = _scalar_or_xp("exp")
sinh = _scalar_or_xp("sinh")
cosh = _scalar_or_xp("cosh")
log = _scalar_or_xp("log")


def divide(a, b):
    """``a / b`` with NumPy's meaning for Python numbers too: inf or nan and a RuntimeWarning
    where the divisor is 0 (Python raises ZeroDivisionError) or the quotient overflows. The gradients of ``math.sqrt``,
    ``asin``, ``acos``, ``acosh``, ``atan2`` and ``pow`` divide by it at their singular
    points, where NumPy floats and PyTorch give inf or nan."""
    try:
        return a / b
    except (ZeroDivisionError, OverflowError):
        return numpy.divide(a, b).item()


def power(x1, x2):
    """``x1 ** x2`` with NumPy's meaning for Python numbers too: inf and a RuntimeWarning
    where Python raises (``0.0 ** -0.5``: ZeroDivisionError; an overflow: OverflowError).
    The power rule's ``x2 * x1 ** (x2 - 1)`` reads it: ``x ** 0.5`` at 0 has slope inf."""
    try:
        return x1 ** x2
    except (ZeroDivisionError, OverflowError):
        return numpy.power(x1 * 1.0, x2).item()


def dtype_of(a, dtype=None):
    """``dtype`` if given, else the dtype of ``a`` (what ``np.full_like(a, v)`` makes)."""
    if dtype is not None:
        return dtype
    found = getattr(a, "dtype", None)
    return found if found is not None else numpy.asarray(a).dtype


def array_dtype(a):
    """The dtype of array ``a``; None for a list or dict (whose items keep what is stored)."""
    return getattr(a, "dtype", None)


def _is_integer_dtype(dtype):
    try:
        return numpy.dtype(dtype).kind in "biu"
    except TypeError:
        return False   # a CuPy or other library's dtype object: never an integer one here


def _is_complex(x):
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return dtype.kind == "c"
    if isinstance(x, (list, tuple)):
        return any(_is_complex(v) for v in x)
    return isinstance(x, complex)


def log_or_zero(a):
    """log(a) where a > 0, else 0: the exponent's gradient of ``a ** b``."""
    if is_array(a):
        xp = namespace(a)
        return xp.where(a > 0, xp.log(xp.where(a > 0, a, 1)), 0)
    import math
    return math.log(a) if a > 0 else 0.0


def log_or_zero_grad(a):
    """1/a where a > 0, else 0: the derivative of ``log_or_zero``."""
    if is_array(a):
        xp = namespace(a)
        return xp.where(a > 0, 1 / xp.where(a > 0, a, 1), 0)
    return 1.0 / a if a > 0 else 0.0


def grad_zeros(xp, x, *others):
    """Zeros of ``x``'s shape in the floating dtype ``x`` and ``others`` promote to."""
    dtype = numpy.result_type(*[getattr(v, "dtype", numpy.float64) for v in (x,) + others],
                              numpy.float16)
    return xp.zeros(shape_tuple(x), dtype=dtype)


def scatter_add(xp, target, index, values):
    """``target[index] += values`` where repeated indices accumulate (``add.at``)."""
    if xp is numpy:
        numpy.add.at(target, index, values)
    elif _dask_forms.is_dask(target):
        import sys
        helper = sys._getframe(1).f_code.co_name   # the rule's run-time helper writing in place
        raise _dask_forms.refuse(f"rt.{helper} (an in-place scatter-add into a view)")
    else:
        xp.add.at(target, index, values)


def refuse_dask(value, what):
    """Refuse (``dask_forms.refuse``, naming ``what`` and the user's line) where ``value`` is a
    Dask array: one line in a rule's helper that has no Dask form (one that writes into a
    view of its result, which on Dask would not reach the result)."""
    if _dask_forms.is_dask(value):
        raise _dask_forms.refuse(what)


def split_pieces(xp, dy, sizes, axis):
    """``dy`` cut along ``axis`` into consecutive pieces of ``sizes``."""
    pieces = []
    start = 0
    for n in sizes:
        index = [slice(None)] * dy.ndim
        index[axis] = slice(start, start + n)
        pieces.append(dy[tuple(index)])
        start += n
    return pieces


def is_scalar(value):
    """A Python or NumPy number, or an array of one element."""
    size = getattr(value, "size", None)
    if size is not None:
        return size == 1
    return isinstance(value, (int, float, complex, numpy.number))
