"""Adjoints of lists, tuples, dicts and other structures (pytree.py).

A container's adjoint is a container of per-item adjoints, and a Python ``0.0``
(or None) stands for "no gradient yet" anywhere in it (``is_zero_grad``).
"""

import builtins
import dataclasses
import inspect
import types

import numpy

from srcgrad import pytree as _pytree
from srcgrad.runtime.arrays import _is_array_object, namespace


def seq_item(dseq, index):
    """Adjoint of element ``index`` of a container (0.0 while none has arrived).

    An array adjoint is that of the array NumPy made of the sequence (a rule given
    a list, such as a user's rule for ``f([x, y])``): its entry ``index``.
    """
    if isinstance(dseq, dict):
        return dseq.get(index, 0.0)
    if isinstance(dseq, (list, tuple)) or getattr(dseq, "ndim", 0):
        return dseq[index]
    _array_into_container(dseq)
    return dseq


def seq_add(dseq, g):
    """Elementwise sum of two container adjoints (either may be a scalar zero)."""
    if not isinstance(g, (list, tuple, dict)):
        return dseq if (isinstance(g, (int, float)) and g == 0) else _seq_add_scalar(dseq, g)
    if isinstance(g, dict) or isinstance(dseq, dict):
        return add_grad(dseq, g)
    if not isinstance(dseq, (list, tuple)):
        return [gi if gi is not None else 0.0 for gi in g]
    return [add_grad(a, b) if b is not None else a for a, b in zip(dseq, g)]


def _seq_add_scalar(dseq, g):
    """``dseq + g`` for a gradient ``g`` that is not a container: a number adds into every
    item; an array is the gradient of the array NumPy made of the list (a rule given it, or
    the array a name that also held a list holds), split by ``seq_item``/``seq_pop``, and
    may not be spread over items that already have gradients of their own."""
    if isinstance(dseq, (list, tuple, dict)):
        _array_into_container(g)
        return [a + g for a in dseq]
    return dseq + g


def _array_into_container(g):
    """Refuse the gradient of an array (not a scalar) reaching a list, tuple or dict: it
    was used as an array (NumPy arithmetic), whose gradient srcgrad does not split."""
    if getattr(g, "ndim", 0):
        from srcgrad.errors import UnsupportedError
        raise UnsupportedError(
            "srcgrad: a list, tuple or dict was used as an array (in NumPy arithmetic or a "
            "NumPy function other than stack/concatenate); its gradient is not supported. "
            "Convert it first with np.asarray(...) or np.stack(...).")


class Zero(float):
    """The adjoint no contribution has reached yet, in code that is differentiated again
    (pipeline.compose_gradient marks it ``rt.ZERO``): a constant 0 whatever the inputs, so
    a rule may be skipped on it (``touched``), never on a computed zero, whose derivative
    can be nonzero. A product or quotient of it is itself; a sum is the other term."""

    __slots__ = ()

    def __mul__(self, other):
        return self

    __rmul__ = __truediv__ = __mul__

    def __neg__(self):
        return self

    __pos__ = __neg__

    def __add__(self, other):
        return other

    __radd__ = __rsub__ = __add__

    def __sub__(self, other):
        return -other

    def __repr__(self):
        return "rt.ZERO"

    def __reduce__(self):
        return "ZERO"


ZERO = Zero(0.0)


def is_zero_grad(g):
    """Whether ``g`` means "no gradient yet": None or a Python zero."""
    return g is None or g is ZERO or (type(g) in (float, int) and g == 0)


def add_grad(a, b):
    """``a + b`` for adjoints of any structure: containers add entry by entry, a
    scalar zero (or None) is "nothing yet" (Tangent's ``add_grad``)."""
    if is_zero_grad(b):
        return a
    if is_zero_grad(a):
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        out = type(a)(a)
        for k, v in b.items():
            out[k] = add_grad(out[k], v) if k in out else v
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            raise ValueError(f"srcgrad: internal error: adjoints of lengths {len(a)} and "
                             f"{len(b)} added")
        return [add_grad(p, q) for p, q in zip(a, b)]
    if isinstance(a, (list, tuple, dict)) or isinstance(b, (list, tuple, dict)):
        raise TypeError(f"srcgrad: a gradient of a container ({type(a).__name__}) met a "
                        f"gradient of a value ({type(b).__name__}): a name holds a container "
                        f"in one place and an array in another")
    return a + b


def is_node(value):
    """Whether ``value`` is a container (list, tuple, dict, dataclass, registered class)."""
    return _pytree.is_node(value) and value is not None


def check_leaves(values, names, strict, error, fallback=None):
    """Refuse a structure passed to a gradient composed for arrays and floats
    (``grad(f).as_function()``, what higher-order derivatives differentiate): any, for a
    parameter the code adds or multiplies (``strict``), else one holding float data.
    ``error(message)`` makes the error, located at the user's function. ``fallback`` (the
    composed function called directly by the user, pipeline.py): True instead of the
    error where the gradient it was composed from can take the structure."""
    for value, name, exact in zip(values, names, strict):
        if value is not None and type(value) not in (float, numpy.ndarray) and _pytree.is_node(value) \
                and (exact or any(type(leaf) not in (int, bool, str) for leaf in _pytree.tree_leaves(value))):
            if fallback is not None and fallback.gradient() is not None:
                return True
            raise error(f"higher-order derivatives (grad of grad, as_function) take arrays and "
                        f"floats; {name!r} is a {type(value).__name__}")
    return False


def check_sequence(value, error):
    """Raise ``error`` for ``for v in value`` over a dict or another structure that is not
    a sequence (the loop reads ``value[i]``): a set or a dict view among them."""
    if isinstance(value, (list, tuple)) or value is None or not _pytree.is_node(value) and \
            hasattr(type(value), "__getitem__"):
        return
    raise error


def check_resize(base, index, value, error):
    """Raise ``error`` where ``base[index] = value`` (``index`` a slice) would change the
    length of the list ``base``: its adjoint reads the list by position after the write."""
    if isinstance(base, list) and len(base[index]) != (len(value) if hasattr(value, "__len__") else -1):
        raise error


def check_array_operand(value, error):
    """Raise ``error`` when ``value``, passed where NumPy reads an array, is a list,
    tuple or other structure that needs a gradient (see reverse.py)."""
    if type(value) is not numpy.ndarray and value is not None and _pytree.is_node(value):
        raise error


def container_op(a, b, repeat=False):
    """Whether ``a + b`` (``a * b`` with ``repeat``) concatenates (repeats) a list or tuple,
    as Python decides it: two lists or two tuples concatenate; a list or tuple times
    anything but an array repeats; with an array, NumPy broadcasts (arithmetic)."""
    if not repeat:
        return (isinstance(a, list) and isinstance(b, list)) or (
            isinstance(a, tuple) and isinstance(b, tuple))
    if isinstance(a, (list, tuple)):
        return not _is_array_object(b)
    if isinstance(b, (list, tuple)):
        return not _is_array_object(a)
    return False


def seq_concat_vjp(dy, a, b):
    """Adjoints of ``a`` and ``b`` from that of ``a + b`` (two lists or two tuples)."""
    if is_zero_grad(dy):
        return 0.0, 0.0
    n = len(a)
    return list(dy[:n]), list(dy[n:])


def seq_repeat_vjp(dy, a, b):
    """Adjoint of the container among ``a``, ``b`` from that of ``a * b`` (its copies summed)."""
    seq = a if isinstance(a, (list, tuple)) else b
    if is_zero_grad(dy) or not seq:
        return 0.0
    n = len(seq)
    total = list(dy[:n])
    for start in range(n, len(dy), n):
        total = [add_grad(p, q) for p, q in zip(total, dy[start:start + n])]
    return total


def seq_pop(dseq):
    """Split the adjoint of a list into (adjoint without its last item, last item's)."""
    if isinstance(dseq, list) and dseq:
        return dseq[:-1], dseq[-1]
    if getattr(dseq, "ndim", 0):   # the gradient of the array NumPy made of the list
        return dseq[:-1], dseq[-1]
    return dseq, 0.0


def as_array(seq):
    """The array NumPy makes of a list or tuple of equally shaped values (``np.asarray``):
    what a rule expecting an array is given for ``np.mean([x, y])`` or ``np.sum(values)``."""
    if not isinstance(seq, (list, tuple)):
        return seq   # a name that held a list and now holds an array
    if not seq:
        return numpy.asarray(seq, dtype=numpy.float64)
    xp = namespace(*seq)
    return xp.stack([as_array(v) if isinstance(v, (list, tuple)) else v for v in seq])


def seq_onehot(dz, dseq, index):
    """A list like ``dseq`` holding ``dz`` at ``index`` and zeros elsewhere (an array
    like it where ``dseq`` is an array: the adjoint of ``seq_item``)."""
    if getattr(dseq, "ndim", 0) and not isinstance(dseq, (list, tuple)):
        xp = namespace(dseq, dz)
        out = xp.zeros(dseq.shape, dtype=numpy.result_type(dseq.dtype, getattr(dz, "dtype", float)))
        out[index] = dz
        return out
    if isinstance(dseq, dict):   # a dict's adjoint: the key's entry alone, the rest zero
        return {index: dz}
    if not isinstance(dseq, (list, tuple)):
        return dz
    out = [0.0] * len(dseq)
    out[index] = dz
    return out


def seq_unpop(dz, popped=None):
    """Adjoint of ``seq_pop``: ``(d_rest, d_last)`` joined back into one list. ``popped``:
    what ``seq_pop`` returned, ``(rest, last)``: a zero ``d_rest`` of a rest that has
    items is that many zeros, so that ``d_last`` stays at the last item's position."""
    rest, last = dz
    rest = list(rest) if isinstance(rest, (list, tuple)) else []
    if popped is not None and isinstance(popped[0], (list, tuple)):
        rest += [0.0] * (len(popped[0]) - len(rest))
    return rest + [last]


def field_tangent(x, dx, attr, error=None):
    """The tangent of ``x.attr`` for a structure ``x`` (a dataclass, namedtuple or
    registered class) whose tangent ``dx`` has its structure (forward mode); ``error``
    (located at the user's line) raised for anything else."""
    if not is_node(x) or isinstance(x, (list, dict)) or isinstance(x, tuple) \
            and not _pytree.is_namedtuple(x):
        if error is not None:
            raise error
        from srcgrad.errors import NonDifferentiableError
        raise NonDifferentiableError(
            f"srcgrad: forward mode needs a jvp for the attribute .{attr} of a "
            f"{type(x).__name__}, which carries a tangent and is not a structure srcgrad knows; "
            f"make its class a dataclass, or register it with srcgrad.register_pytree_node")
    if _pytree.is_namedtuple(x) and isinstance(dx, (list, tuple)) and not hasattr(dx, attr):
        return dx[type(x)._fields.index(attr)]   # a rule's tangent of a named result: a tuple
    kind = attribute_kind(x, attr)
    if kind == CONSTANT or type(dx) is float and dx == 0.0:   # a class attribute: the same
        value = getattr(x, attr)   # for every instance; a structure built of constants
        return _zero_tangent(value)
    if kind == COMPUTED:
        raise not_a_field(x, attr, error)
    return getattr(dx, attr)


def _zero_tangent(value):
    """Zeros in ``value``'s structure: an array's, 0.0 for a number, a list's (``self.items
    = []``) or a dict's items' zeros."""
    if isinstance(value, (list, tuple)):
        return [_zero_tangent(v) for v in value]
    if isinstance(value, dict):
        return {k: _zero_tangent(v) for k, v in value.items()}
    return namespace(value).zeros_like(value) if _is_array_object(value) else 0.0


FIELD, CONSTANT, COMPUTED = "field", "constant", "computed"
_ATTRIBUTE_KINDS = {}   # (class, attribute) -> its kind


def attribute_kind(x, attr):
    """What ``x.attr`` is for a structure ``x``: FIELD (a leaf or node of its tree: a
    dataclass field, a namedtuple's, any attribute of a registered class), CONSTANT (a
    class attribute, the same for every instance), or COMPUTED (a property, an attribute
    set outside the fields: from fields srcgrad cannot name)."""
    cls = type(x)
    key = (cls, attr)
    kind = _ATTRIBUTE_KINDS.get(key)
    if kind is None:
        if cls in _pytree._REGISTRY or not dataclasses.is_dataclass(cls) or attr in {
                f.name for f in dataclasses.fields(cls)}:
            kind = FIELD
        else:
            raw = inspect.getattr_static(cls, attr, _NOWHERE)
            kind = COMPUTED if raw is _NOWHERE or hasattr(raw, "__get__") and not isinstance(
                raw, (staticmethod, classmethod)) else CONSTANT
        if len(_ATTRIBUTE_KINDS) < 4096:
            _ATTRIBUTE_KINDS[key] = kind
    return kind


_NOWHERE = object()


def not_a_field(x, attr, error):
    """The error of a derivative through ``x.attr``, which is computed, not a field
    (located where ``error`` is, the attribute's read)."""
    from srcgrad.errors import NonDifferentiableError
    message = (f"a derivative reaches .{attr} of a {type(x).__name__}, which is not one of its "
               f"fields but computed from them (a property, or an attribute set outside the "
               f"fields), and srcgrad cannot tell from which")
    hint = ("Make it a field, or a method called as p.name() (srcgrad reads a property of an "
            "argument whose class it knows as its getter).")
    if error is None:
        return NonDifferentiableError("srcgrad: " + message, hint=hint)
    return NonDifferentiableError(message, error.filename, error.lineno, error.col_offset,
                                  error.source_line, hint)


def concat_tangent(t, y, right, zero):
    """The tangent of ``y``, a concatenation of two lists or tuples where only one, with
    tangent ``t``, moves: ``zero`` (of a value) for the other's items."""
    if not isinstance(t, (list, tuple)) or len(t) == len(y):
        return t
    rest = y[:len(y) - len(t)] if right else y[len(t):]
    zeros = [zero(v) for v in rest]
    return zeros + list(t) if right else list(t) + zeros


class GlobalsOf(types.ModuleType):
    """The globals of a function no loaded module holds (code run by exec), as a module:
    what ``read_global``/``write_global`` take (the alias analysis knows a module holds no
    array of the function's)."""

    def __init__(self, namespace):
        super().__init__("<globals>")
        self.__dict__["_srcgrad_globals"] = namespace


def _globals_of(module):
    return module.__dict__.get("_srcgrad_globals", module.__dict__)


class _Unbound:
    """What ``read_global`` gives for a global the module does not define (yet): the
    function binds it before reading it, or reading it fails."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<global {self.name!r}, not defined>"


def read_global(module, name):
    """The value of the global ``name`` of ``module`` (a module or ``GlobalsOf``) as a
    function declaring ``global name`` starts (transform/global_statements.py)."""
    namespace = _globals_of(module)
    if name in namespace:
        return namespace[name]
    return getattr(builtins, name, _Unbound(name))


def write_global(module, name, value):
    """Bind the global ``name`` of ``module`` to ``value``: a function declaring ``global
    name`` has just bound it (transform/global_statements.py); one it never bound stays
    undefined."""
    if type(value) is not _Unbound:
        _globals_of(module)[name] = value
