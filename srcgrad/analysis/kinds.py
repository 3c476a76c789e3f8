"""What kind of number each of a function's values holds: float, integer, complex.

The one place srcgrad knows about dtypes. Activity (activity.py) reads it: a value
that is certainly an integer or boolean (``x.astype(int)``, ``np.zeros(3,
dtype=int)``, ``int(v)``, a comparison) carries no gradient, like PyTorch's and
JAX's integer casts, whatever it was computed from. The reverse transform reads
it: a statement on a value that is certainly complex uses the complex rules
(rules/complex_rules.py) or is refused.

Kinds form a small lattice: FLOAT, INT (integer or boolean), COMPLEX, and
UNKNOWN above them all (a parameter other than ``wrt``, a value srcgrad cannot see
through). A name's kind is the join of every binding's kind (flow-insensitive,
like ranks.py); stores into an array (``y[0] = v``) never change its dtype.
UNKNOWN only keeps the general code: the rules that cast to a dtype given at run
time decide at run time (``rt.dtype_grad``).

Names bound to dtypes (``dt = np.int32``, ``dt = x.dtype``) have the kind
``Dtype(kind)``, so ``x.astype(dt)`` is known too.

    >>> def f(x, n):
    ...     i = x.astype(int)
    ...     z = 1j * x
    ...     return np.abs(z) + i * n
    >>> infer(node, {"x": FLOAT}, resolve).env
    {"x": "f", "n": "?", "i": "i", "z": "c", ...}
"""

import builtins
import warnings
from collections import namedtuple

import gast
import numpy

from srcgrad import anno
from srcgrad.analysis import ranks
from srcgrad.analysis.read_names import ReadNames
from srcgrad.rules import Attribute, Method

Static = anno.Static

FLOAT = "f"
INT = "i"        # integer or boolean: no gradient
COMPLEX = "c"
UNKNOWN = "?"

Dtype = namedtuple("Dtype", "kind")   # a name that holds a dtype (``dt = np.int32``)

_KIND_OF_DTYPE = {"b": INT, "i": INT, "u": INT, "f": FLOAT, "c": COMPLEX}
_SAMPLE = {INT: numpy.dtype(numpy.int64), FLOAT: numpy.dtype(numpy.float64),
           COMPLEX: numpy.dtype(numpy.complex128)}

# Calls whose result has the kind of their first argument (a float array stays float).
_KEEPS_KIND = {numpy.sum, numpy.prod, numpy.max, numpy.min, numpy.amax, numpy.amin, numpy.cumsum,
               numpy.cumprod, numpy.reshape, numpy.transpose, numpy.ravel, numpy.squeeze,
               numpy.expand_dims, numpy.copy, numpy.flip, numpy.roll, numpy.diag, numpy.diagonal,
               numpy.trace, numpy.tile, numpy.repeat, numpy.sort, numpy.atleast_1d, numpy.atleast_2d,
               numpy.broadcast_to, numpy.negative, numpy.conj, numpy.conjugate,
               numpy.zeros_like, numpy.ones_like, numpy.empty_like, numpy.full_like}
_KEEPS_KIND_METHODS = {"sum", "prod", "max", "min", "cumsum", "cumprod", "reshape", "transpose",
                       "ravel", "flatten", "squeeze", "copy", "conj", "conjugate", "repeat", "item",
                       "T"}
_REAL_PARTS = {numpy.real, numpy.imag, numpy.angle, numpy.abs, numpy.absolute, builtins.abs}
_FLOAT_MAKERS = {numpy.zeros, numpy.ones, numpy.empty, numpy.eye, numpy.identity, numpy.linspace,
                 builtins.float}
_COMPLEX_MAKERS = {numpy.fft.fft, numpy.fft.ifft, numpy.fft.fft2, numpy.fft.ifft2, numpy.fft.fftn,
                   numpy.fft.ifftn, numpy.fft.rfft, builtins.complex}
_INT_MAKERS = {builtins.int, builtins.bool, builtins.len, numpy.argmax, numpy.argmin,
               numpy.argsort, numpy.nonzero, numpy.flatnonzero, numpy.searchsorted, numpy.isnan,
               numpy.isfinite, numpy.isinf, numpy.shape, numpy.ndim, numpy.size,
               numpy.count_nonzero, numpy.all, numpy.any, numpy.array_equal, numpy.allclose}
# Casts and constructors taking a ``dtype`` (keyword, or positional at this index).
_DTYPE_POSITION = {numpy.array: 1, numpy.asarray: 1, numpy.asanyarray: 1, numpy.ascontiguousarray: 1,
                   numpy.zeros: 1, numpy.ones: 1, numpy.empty: 1, numpy.full: 2, numpy.zeros_like: 1,
                   numpy.ones_like: 1, numpy.empty_like: 1, numpy.full_like: 2, numpy.eye: None,
                   numpy.identity: 1, numpy.arange: None, numpy.linspace: None,
                   Method("astype"): 0, numpy.sum: None, numpy.prod: None, numpy.mean: None,
                   numpy.cumsum: None}


def join(a, b):
    return a if a == b else UNKNOWN


def dtype_kind(obj):
    """The kind of the numbers a dtype-like object (``int``, ``"i8"``, ``np.float32``) makes."""
    if obj is None:
        return UNKNOWN
    try:
        with warnings.catch_warnings():   # "a" and other aliases NumPy 2 deprecates
            warnings.simplefilter("ignore", DeprecationWarning)
            return _KIND_OF_DTYPE.get(numpy.dtype(obj).kind, UNKNOWN)
    except (TypeError, ValueError):
        return UNKNOWN


def value_kind(value):
    """The kind of a live value (a global or closure variable), or UNKNOWN."""
    if isinstance(value, (bool, int, numpy.bool_, numpy.integer)):
        return INT
    if isinstance(value, (float, numpy.floating)):
        return FLOAT
    if isinstance(value, (complex, numpy.complexfloating)):
        return COMPLEX
    if isinstance(value, numpy.ndarray):
        return _KIND_OF_DTYPE.get(value.dtype.kind, UNKNOWN)
    if isinstance(value, (type, numpy.dtype)):
        kind = dtype_kind(value)
        return Dtype(kind) if kind != UNKNOWN or isinstance(value, numpy.dtype) else UNKNOWN
    return UNKNOWN


def infer(node, param_kinds, resolve=None):
    """Name -> kind (FLOAT, INT, COMPLEX, UNKNOWN or a Dtype) for every name ``node`` binds.

    Args:
        node: the FunctionDef, in A-normal form.
        param_kinds: dict, parameter name -> kind, for the parameters whose kind is
            known (the ``wrt`` inputs are floats: api.py refuses any other).
        resolve: the function's ``EntityInfo.resolve``, to read the kinds of the
            global and closure values it uses; None treats them as UNKNOWN.
    """
    params = [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    for extra in (node.args.vararg, node.args.kwarg):
        if extra is not None:
            params.append(extra.id)
    bindings = []
    ranks._collect(node.body, bindings)
    bound = {n for n, _ in bindings} | set(params)
    env = ReadNames({p: param_kinds.get(p, UNKNOWN) for p in params})
    analysis = _Kinds(env, bound, resolve)
    changed = True
    while changed:   # kinds only rise (unset -> a kind -> UNKNOWN): this ends
        changed = False
        seen = env.seen = set()   # (read_names.py: a pass no later one would change ends it)
        for target, value in bindings:
            k = UNKNOWN if value is None else INT if value is ranks._RANGE else analysis.kind(value)
            if k is None:
                continue
            old = dict.get(env, target)
            new = k if old is None else join(old, k)
            if new != old:
                env[target] = new
                changed = changed or target in seen
    analysis.env = {n: env.get(n, UNKNOWN) for n in bound}
    return analysis


class _Kinds:
    """The kinds of a function's names, and of any expression in it (``kind``)."""

    def __init__(self, env, bound, resolve):
        self.env = env
        self.bound = bound
        self.resolve = resolve

    def __getitem__(self, name):
        return self.env.get(name, UNKNOWN)

    def get(self, name, default=UNKNOWN):
        return self.env.get(name, default)

    def of(self, e):
        """The kind of expression ``e`` (UNKNOWN where it is not known)."""
        k = self.kind(e)
        return UNKNOWN if k is None or isinstance(k, Dtype) else k

    def is_integer(self, e):
        """``e`` certainly holds integers or booleans: it carries no gradient."""
        return self.of(e) == INT

    def kind(self, e):
        """The kind of ``e``, a Dtype for a dtype, or None (reads a name not known yet)."""
        if isinstance(e, gast.Constant):
            if isinstance(e.value, str):
                return Dtype(dtype_kind(e.value))
            return value_kind(e.value) if e.value is not None else UNKNOWN
        if isinstance(e, gast.Name):
            if e.id in self.bound:
                return self.env.get(e.id)
            return self._static(e)
        if isinstance(e, gast.BinOp):
            k = self.combine(self.kind(e.left), self.kind(e.right))
            if k == INT and isinstance(e.op, (gast.Div, gast.Pow)):
                return UNKNOWN if isinstance(e.op, gast.Pow) else FLOAT
            return k if isinstance(e.op, (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow,
                                          gast.MatMult, gast.Mod, gast.FloorDiv)) else \
                INT if k == INT else UNKNOWN
        if isinstance(e, gast.UnaryOp):
            return INT if isinstance(e.op, gast.Not) else self.kind(e.operand)
        if isinstance(e, gast.Compare):
            return INT
        if isinstance(e, (gast.BoolOp, gast.IfExp)):
            parts = e.values if isinstance(e, gast.BoolOp) else [e.body, e.orelse]
            kinds = [self.kind(p) for p in parts]
            if None in kinds:
                return None
            out = kinds[0]
            for k in kinds[1:]:
                out = join(out, k)
            return out
        if isinstance(e, gast.Subscript):
            base = self.kind(e.value)
            return base if base in (FLOAT, INT, COMPLEX, None) else UNKNOWN
        if isinstance(e, gast.Attribute):
            return self._attribute(e)
        if isinstance(e, gast.Call):
            return self._call(e)
        return UNKNOWN

    def combine(self, *kinds):
        """The kind of an arithmetic result: complex beats float beats integer."""
        if any(isinstance(k, Dtype) for k in kinds):
            return UNKNOWN
        if COMPLEX in kinds:
            return COMPLEX   # whatever the other operand, the result is complex
        if UNKNOWN in kinds:
            return UNKNOWN
        if None in kinds:
            return None
        for k in (COMPLEX, FLOAT):
            if k in kinds:
                return k
        return INT

    def _static(self, e):
        """The kind of a global, closure or module value ``e`` (Name or Attribute chain)."""
        obj = self._object(e)
        return UNKNOWN if obj is _NOTHING else value_kind(obj)

    def _object(self, e):
        if self.resolve is None:
            return _NOTHING
        if isinstance(e, gast.Name):
            if e.id in self.bound:
                return _NOTHING
            try:
                return self.resolve(e.id)
            except NameError:
                return _NOTHING
        if isinstance(e, gast.Attribute):
            base = self._object(e.value)
            if base is _NOTHING or not _is_module(base):
                return _NOTHING
            return getattr(base, e.attr, _NOTHING)
        return _NOTHING

    def _attribute(self, e):
        if e.attr == "dtype":
            k = self.kind(e.value)
            return None if k is None else Dtype(k) if k in (FLOAT, INT, COMPLEX) else UNKNOWN
        if e.attr in ("real", "imag"):
            k = self.kind(e.value)
            return FLOAT if k in (FLOAT, COMPLEX) else k
        if e.attr == "T":
            return self.kind(e.value)
        if e.attr in ("shape", "ndim", "size"):
            return UNKNOWN   # ints or tuples of ints: constants either way
        return self._static(e)

    def _call(self, e):
        primitive = anno.getanno(e, Static.PRIMITIVE)
        if primitive is None:
            return UNKNOWN
        args = list(e.args)
        if isinstance(primitive, Method):
            args = [e.func.value] + args
        keywords = {k.arg: k.value for k in e.keywords}
        first = self.kind(args[0]) if args else UNKNOWN
        dtype = self._dtype_argument(primitive, args, keywords)
        if dtype is None:
            return None
        if dtype != UNKNOWN and dtype is not _ABSENT:
            return dtype
        if dtype is UNKNOWN:
            return UNKNOWN
        if _is(primitive, _KEEPS_KIND) or (isinstance(primitive, (Method, Attribute))
                                          and str(primitive) in _KEEPS_KIND_METHODS):
            return first   # (a sum of booleans is an integer: INT either way)
        if _is(primitive, _REAL_PARTS):
            return FLOAT if first in (FLOAT, COMPLEX) else first
        if _is(primitive, (numpy.mean, numpy.average)):
            return FLOAT if first == INT else first
        if _is(primitive, (numpy.std, numpy.var)):
            return FLOAT if first in (INT, COMPLEX) else first
        if _is(primitive, _FLOAT_MAKERS):
            return FLOAT
        if _is(primitive, _COMPLEX_MAKERS):
            return COMPLEX
        if _is(primitive, _INT_MAKERS):
            return INT
        if isinstance(primitive, type) and issubclass(primitive, numpy.generic):
            return dtype_kind(primitive)   # np.int64(x), np.float32(x)
        if _is(primitive, (numpy.array, numpy.asarray, numpy.asanyarray, numpy.ascontiguousarray)):
            if isinstance(args[0], (gast.List, gast.Tuple)):
                # A literal's elements (a list held in a name may be appended to: unknown)
                return self._literal(args[0])
            return first if isinstance(args[0], gast.Name) else UNKNOWN
        if primitive is numpy.full:
            return self.kind(args[1]) if len(args) > 1 else UNKNOWN
        if isinstance(primitive, numpy.ufunc) and primitive.nout == 1 and len(args) == primitive.nin \
                and not keywords:
            kinds = [self.kind(a) for a in args]
            if None in kinds:
                return None
            if not all(k in _SAMPLE for k in kinds):
                return UNKNOWN
            try:
                out = primitive.resolve_dtypes(tuple(_SAMPLE[k] for k in kinds) + (None,))[-1]
            except (TypeError, ValueError, AttributeError):
                return UNKNOWN
            return _KIND_OF_DTYPE.get(out.kind, UNKNOWN)
        return UNKNOWN

    def _literal(self, e):
        """The kind of the array a (nested) list or tuple literal makes."""
        kinds = [self._literal(v) if isinstance(v, (gast.List, gast.Tuple)) else self.kind(v)
                 for v in e.elts]
        return self.combine(*kinds) if kinds else UNKNOWN

    def _dtype_argument(self, primitive, args, keywords):
        """The kind a ``dtype`` argument asks for, _ABSENT without one, None if not known yet."""
        if not _is(primitive, _DTYPE_POSITION):
            return _ABSENT
        node = keywords.get("dtype")
        position = _DTYPE_POSITION[primitive]
        if node is None and position is not None and isinstance(primitive, Method):
            position += 1   # args[0] is the receiver
        if node is None and position is not None and len(args) > position:
            node = args[position]
        if node is None or (isinstance(node, gast.Constant) and node.value is None):
            return _ABSENT
        k = self.kind(node)
        if k is None:
            return None
        if isinstance(k, Dtype):
            return k.kind
        return UNKNOWN


_NOTHING = object()
_ABSENT = "absent"


def _is(primitive, table):
    try:
        return primitive in table
    except TypeError:
        return False


def _is_module(obj):
    import types
    return isinstance(obj, types.ModuleType)
