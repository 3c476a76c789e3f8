"""What the Numba forms of the runtime helpers (runtime.py, writes.py, products.py) share:
the compile options, the refusal that sends a gradient to its NumPy code, and tests of
Numba types. Importing this module needs numba."""

import operator

from numba import types
from numba.core.errors import TypingError

JIT_OPTIONS = dict(error_model="numpy", boundscheck=True, nogil=True)


def refuse(helper, *values):
    raise TypingError(f"srcgrad jit: rt.{helper} of {', '.join(str(v) for v in values)}")


def is_number(t):
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


def is_shape(t):
    return isinstance(t, types.UniTuple) and isinstance(t.dtype, types.Integer) or \
        (isinstance(t, types.Tuple) and len(t.types) == 0)


def ndim_of(t):
    if isinstance(t, types.Array):
        return t.ndim
    if is_shape(t):
        return len(t)
    if is_number(t):
        return 0
    return None


def none(t):
    return t is None or isinstance(t, (types.NoneType, types.Omitted)) and \
        getattr(t, "value", None) is None


def false(t):
    return t is False or isinstance(t, types.Omitted) and t.value is False or \
        isinstance(t, types.BooleanLiteral) and t.literal_value is False


def basic_item(t):
    """An integer, a slice, None or Ellipsis: srcgrad.runtime.arrays._is_basic_index's items."""
    return isinstance(t, (types.Integer, types.SliceType, types.NoneType, types.EllipsisType)) \
        and not isinstance(t, types.Boolean)


def basic_index(index):
    """An index of integers, slices, None and Ellipsis only (no position repeats)."""
    return basic_item(index) or isinstance(index, types.BaseTuple) and len(index) > 0 and \
        all(basic_item(t) for t in index)


def mask_index(index):
    """A 1-D boolean array, alone or in a tuple of integers and slices (no position repeats)."""
    def mask(t):
        return isinstance(t, types.Array) and t.ndim == 1 and isinstance(t.dtype, types.Boolean)
    if mask(index):
        return True
    return isinstance(index, types.BaseTuple) and sum(map(mask, index)) == 1 and all(
        mask(t) or isinstance(t, (types.Integer, types.SliceType)) and
        not isinstance(t, types.Boolean) for t in index)


_ORDER_TESTS = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "is_", "is_not", "contains",
                          "not_", "truth"})


def check_integer_widths(dispatcher, signature, _seen=None, _filename=None):
    """Raise TypingError at the first line of ``dispatcher``'s code for ``signature``
    doing arithmetic on integer scalars only, one narrower than 64 bits (``np.int8(100) +
    np.int8(100)``): NumPy keeps the width and wraps (-56), Numba widens (200), so the
    compiled gradient would differ; the NumPy gradient runs instead. The same for
    arithmetic on bool scalars only (``_BOOL_DIFFERS``) or a bool unified with a number,
    and for arithmetic on a float32 scalar that Numba widens to float64. Comparisons, and
    arithmetic with a float, give the same in both. The elementwise runs it calls
    (loops.py's ``_run_*``, runtime.elementwise_run) are checked too, every signature
    they were compiled for: the user's arithmetic is moved into them."""
    from numba.core import ir
    seen = set() if _seen is None else _seen
    if _seen is None:
        for value in list(getattr(dispatcher.py_func, "__globals__", {}).values()):
            for kernel in getattr(value, "_srcgrad_kernels", ()) if callable(value) else ():
                for kernel_signature in list(kernel.overloads):
                    check_integer_widths(kernel, kernel_signature, seen, "")
    if (id(dispatcher), signature) in seen:
        return
    seen.add((id(dispatcher), signature))
    overload = dispatcher.overloads.get(signature)
    if overload is None:
        return
    annotation = overload.type_annotation
    if _filename and annotation.filename != _filename:
        return   # srcgrad's runtime helpers: not the user's arithmetic
    typemap = annotation.typemap
    for block in annotation.blocks.values():
        for statement in block.body:
            value = getattr(statement, "value", None)
            where = f'File "{annotation.filename}", line {statement.loc.line}'
            if isinstance(statement, ir.Assign) and isinstance(value, ir.Var) and isinstance(
                    typemap.get(value.name), types.Boolean) and isinstance(
                    typemap.get(statement.target.name), (types.Integer, types.Float)):
                raise TypingError(   # n = x[0] > 0, then n = n + ...: one Numba type
                    f"a name bound to a bool and to a number (Numba makes the bool a number, "
                    f"where NumPy's np.bool_ adds as 'or')\n{where}")
            if not (isinstance(statement, ir.Assign) and isinstance(value, ir.Expr)):
                continue
            if value.op == "call":
                callee = typemap.get(value.func.name)
                called = annotation.calltypes.get(value)
                exact = _exact_operator(callee)
                if exact is not None:   # _jrt.exact_add(a, b): a + b (integers.py)
                    _check_operation(exact, value.args, typemap,
                                     typemap.get(statement.target.name), where)
                elif isinstance(callee, types.Dispatcher) and called is not None:
                    check_integer_widths(callee.dispatcher, tuple(called.args), seen,
                                         annotation.filename)
                continue
            if value.op == "arrayexpr":   # Numba's rewrite of elementwise array arithmetic
                narrow = _narrow_array_expression(value.expr, typemap, value.ty)
                if narrow:
                    raise TypingError(
                        f"arithmetic on {narrow} arrays (NumPy keeps their width with a Python "
                        f"number, and wraps around or rounds there; Numba widens them)\n{where}")
                continue
            if value.op in ("binop", "inplace_binop", "unary"):
                _check_operation(value.fn, value.list_vars(), typemap,
                                 typemap.get(statement.target.name), where)


_EXACT = {"exact_add": operator.add, "exact_sub": operator.sub, "exact_mul": operator.mul,
          "exact_lshift": operator.lshift}


def _exact_operator(callee):
    """The operator (``operator.add``...) an integers.py helper Numba typed stands for,
    else None."""
    key = getattr(callee, "typing_key", None)
    if key is None or getattr(key, "__module__", "") != "srcgrad.jit.integers":
        return None
    return _EXACT.get(getattr(key, "__name__", ""))


def _check_operation(fn, operands, typemap, result, where):
    """Raise TypingError where ``fn`` (an operator) on ``operands`` (Numba IR variables)
    computes in Numba another value than NumPy's or Python's would (see
    check_integer_widths); ``where``: the ``File ..., line ...`` the message ends with."""
    name = getattr(fn, "__name__", "")
    if name in _ORDER_TESTS:
        return
    kinds = [typemap.get(v.name) for v in operands]
    if all(isinstance(k, types.Boolean) for k in kinds) and name in _BOOL_DIFFERS:
        raise TypingError(
            f"arithmetic on bool scalars (NumPy's np.bool_ adds as 'or' and multiplies "
            f"as 'and', Python's bool as an int; Numba cannot tell them apart)\n{where}")
    if any(isinstance(k, types.Float) and k.bitwidth < 64 for k in kinds) and \
            name in _ARITHMETIC and not _narrow_float(result):
        raise TypingError(   # np.float32(c) * 1e20: float32 in NumPy, float64 here
            f"arithmetic on {' and '.join(sorted({str(k) for k in kinds}))} scalars "
            f"(NumPy keeps float32 with a Python number, Numba widens it)\n{where}")
    if all(isinstance(k, types.Integer) for k in kinds) and any(
            k.bitwidth < 64 for k in kinds):
        raise TypingError(
            f"arithmetic on {' and '.join(sorted({str(k) for k in kinds}))} scalars "
            f"(NumPy keeps their width and wraps around, Numba widens them)\n{where}")
    narrow = _narrow_array_expression((fn, list(operands)), typemap, result)
    if narrow:
        raise TypingError(
            f"arithmetic on {narrow} arrays (NumPy keeps their width with a Python "
            f"number, and wraps around or rounds there; Numba widens them)\n{where}")


# Operators whose result on two bools differs between np.bool_ (a comparison of NumPy
# numbers: ``x[0] > 0``) and Python's bool: ``np.True_ + np.True_`` is True, ``True + True`` 2.
_BOOL_DIFFERS = frozenset({"add", "sub", "mul", "neg", "pos", "invert", "iadd", "isub", "imul",
                           "floordiv", "mod", "pow", "ifloordiv", "imod", "ipow"})

def _narrow_float(t):
    """An array (NumPy's rules: _narrow_array_expression) or a float narrower than 64 bits."""
    return isinstance(t, types.Array) or isinstance(t, types.Float) and t.bitwidth < 64


_ARITHMETIC = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos",
                         "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow",
                         "and_", "or_", "xor", "invert", "lshift", "rshift", "iand", "ior",
                         "ixor", "ilshift", "irshift"})


def _narrow_array_expression(tree, typemap, result):
    """The narrow dtype (an integer narrower than 64 bits, float32) of an array operand of
    ``tree`` whose result Numba types other than NumPy would compute it (``int32 array *
    1000000000`` wraps in int32 in NumPy, a Python number being weak there, and is int64
    in Numba), else None. ``tree``: a binop's or unary's ``(fn, [variables])``, or one of
    Numba's ``arrayexpr`` trees (operands: variables, constants, trees); None where a
    function other than arithmetic and bitwise operators takes part, or a type is unknown."""
    import numpy
    from numba.core import ir
    narrow = []

    def dtype(node):   # (numpy dtype, weak) or None
        if isinstance(node, ir.Var):
            t = typemap.get(node.name)
            if isinstance(t, types.Array):
                if isinstance(t.dtype, (types.Integer, types.Float)) and t.dtype.bitwidth < 64:
                    narrow.append(str(t.dtype))
                try:
                    return numpy.dtype(str(t.dtype)), False
                except TypeError:
                    return None
            return _scalar_dtype(t)
        if isinstance(node, ir.Const):
            if type(node.value) in (int, float, bool):
                return numpy.dtype(type(node.value)), True
            return None
        if not (isinstance(node, tuple) and len(node) == 2):
            return None
        fn, operands = node
        name = getattr(fn, "__name__", "")
        if name not in _ARITHMETIC:
            return None
        found = [dtype(o) for o in operands]
        if any(f is None for f in found):
            return None
        strong = [d for d, weak in found if not weak]
        weak = [d for d, weak in found if weak]
        if strong:
            out = numpy.result_type(*strong)
            if any(d.kind == "f" for d in weak) and out.kind in "biu":
                out = numpy.dtype(numpy.float64)
        else:
            out = numpy.result_type(*weak)
        if name in ("truediv", "itruediv") and out.kind in "biu":
            out = numpy.dtype(numpy.float64)
        return out, not strong

    try:
        found = dtype(tree)
    except (TypeError, ValueError):   # a type NumPy has no dtype for: not NumPy's arithmetic
        return None
    if found is None or not narrow or not isinstance(result, types.Array):
        return None
    return None if str(result.dtype) == str(found[0]) else narrow[0]


def _scalar_dtype(t):
    """(NumPy dtype, weak) of a Numba number type (its literal types too:
    ``Literal[int](5)`` is int64), else None."""
    import numpy
    if isinstance(t, types.Boolean):
        return numpy.dtype(bool), True
    if isinstance(t, types.Integer):
        return numpy.dtype(f"{'i' if t.signed else 'u'}{t.bitwidth // 8}"), True
    if isinstance(t, types.Float):
        return numpy.dtype(f"f{t.bitwidth // 8}"), True
    return None
