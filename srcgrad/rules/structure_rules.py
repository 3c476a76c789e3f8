"""Rules of the helpers that build and update structures inside ``f``
(transform/methods.py): a namedtuple ``Point(x, y)`` and ``p._replace(x=v)``, a dataclass
``Params(w=x, b=v)`` and ``dataclasses.replace(p, b=v)``. A namedtuple's adjoint is a list
of its items'; a dataclass's a ``pytree.Fields`` (field name -> adjoint). And
``rt.lookup_fails`` and ``rt.call_fails``, the tests ``try: v = d[k] except KeyError:``
and ``try: L = np.linalg.cholesky(K) except LinAlgError:`` stand for
(transform/plain_statements.py)."""

import copy
import numpy

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, linear, nondifferentiable, returns_sequence, tangent
from srcgrad.runtime.containers import is_zero_grad, seq_item


# ----- namedtuples built inside f (transform/methods.py): Point(x, y), p._replace(x=v) -----

@rt.helper
def namedtuple_new(cls, items):
    """``cls(*items)``: the namedtuple ``Point(x, y)`` builds (its fields in order)."""
    return cls(*items)


@adjoint(rt.namedtuple_new, sequences=("items",))
def namedtuple_new_rule(dy, y, cls, items):
    return None, rt.namedtuple_items_vjp(dy, items)


@rt.helper
def namedtuple_items_vjp(dy, items):
    """Adjoint of the fields a namedtuple was built from: its adjoint's items (a list)."""
    if is_zero_grad(dy):
        return 0.0
    return [seq_item(dy, k) for k in range(len(items))]


linear(rt.namedtuple_items_vjp, "dy", no_tangent=("items",))


@rt.helper
def namedtuple_replace(value, fields, items):
    """``value._replace(**dict(zip(fields, items)))``."""
    return value._replace(**dict(zip(fields, items)))


@adjoint(rt.namedtuple_replace, sequences=("value", "items"))
def namedtuple_replace_rule(dy, y, value, fields, items):
    return (rt.namedtuple_replace_vjp(dy, value, fields, False), None,
            rt.namedtuple_replace_vjp(dy, value, fields, True))


@rt.helper
def namedtuple_replace_vjp(dy, value, fields, of_items):
    """Adjoint of ``value._replace(...)`` with respect to the new items (``of_items``), or to
    ``value`` (its adjoint with the replaced fields' entries zero)."""
    if is_zero_grad(dy):
        return 0.0
    positions = [type(value)._fields.index(f) for f in fields]
    if of_items:
        return [seq_item(dy, k) for k in positions]
    return [0.0 if k in positions else seq_item(dy, k) for k in range(len(value))]


linear(rt.namedtuple_replace_vjp, "dy", no_tangent=("value", "fields", "of_items"))



# ----- dataclasses built inside f (transform/methods.py): P(w=x), dataclasses.replace -----

@rt.helper
def dataclass_new(cls, fields, items):
    """``cls(**dict(zip(fields, items)))``: the dataclass ``P(x, b=v)`` builds."""
    return cls(**dict(zip(fields, items)))


@adjoint(rt.dataclass_new, sequences=("items",))
def dataclass_new_rule(dy, y, cls, fields, items):
    return None, None, rt.dataclass_items_vjp(dy, fields)


@rt.helper
def dataclass_items_vjp(dy, fields):
    """Adjoint of the fields a dataclass was built from, or replaced with: each field's
    entry of its adjoint (a ``pytree.Fields``, or an instance handed in as a seed)."""
    if is_zero_grad(dy):
        return 0.0
    if isinstance(dy, dict):
        return [dy.get(f, 0.0) for f in fields]
    return [getattr(dy, f) for f in fields]


linear(rt.dataclass_items_vjp, "dy", no_tangent=("fields",))


@rt.helper
def dataclass_replace(value, fields, items):
    """``dataclasses.replace(value, **dict(zip(fields, items)))``."""
    import dataclasses
    return dataclasses.replace(value, **dict(zip(fields, items)))


@adjoint(rt.dataclass_replace, sequences=("items",))
def dataclass_replace_rule(dy, y, value, fields, items):
    return rt.dataclass_kept_vjp(dy, fields), None, rt.dataclass_items_vjp(dy, fields)


@rt.helper
def dataclass_kept_vjp(dy, fields):
    """Adjoint of ``dataclasses.replace(value, ...)`` with respect to ``value``: its
    adjoint less the replaced fields."""
    if is_zero_grad(dy):
        return 0.0
    import dataclasses
    entries = dy if isinstance(dy, dict) else {f.name: getattr(dy, f.name) for f in dataclasses.fields(dy)}
    from srcgrad.pytree import Fields
    return Fields({k: v for k, v in entries.items() if k not in fields})


linear(rt.dataclass_kept_vjp, "dy", no_tangent=("fields",))


# The containers the helpers above return (analysis/ranks.py, analysis/activity.py).
returns_sequence(rt.namedtuple_new, rt.namedtuple_replace, rt.dataclass_new, rt.dataclass_replace)


# ----- copy.copy(v), copy.deepcopy(v): a new value of v's structure and numbers -----
# (an array's copy; a list's or dict's, holding the same items or copies of them). The
# adjoint of each is the copy's; the tangent a copy of v's, as deep as the value's.

@adjoint(copy.copy, sequences=("x",))
def copy_copy(dy, y, x):
    return dy


@adjoint(copy.deepcopy, sequences=("x",))
def copy_deepcopy(dy, y, x, memo=None, _nil=None):
    return dy


# (a list's or dict's copy is a container, whose adjoint is added item by item:
# c[k][i] = v is an update of ``copy.copy(c[k])``, transform/item_updates.py)
returns_sequence(copy.copy)


@tangent(copy.copy)
def copy_copy_tangent(y, x, *, t_x):
    return rt.tangent_array(t_x, y)


@tangent(copy.deepcopy)
def copy_deepcopy_tangent(y, x, memo=None, _nil=None, *, t_x):
    return rt.deepcopy_tangent(t_x)


@rt.helper
def deepcopy_tangent(t):
    """The tangent of ``copy.deepcopy(v)`` from ``v``'s: a copy of it, as deep."""
    return copy.deepcopy(t)


@rt.helper
def lookup_fails(base, key, errors):
    """Whether ``base[key]`` raises one of ``errors`` (``try: v = d[k]`` / ``except KeyError:``
    is ``if rt.lookup_fails(d, k, (KeyError,)): <handler> else: v = d[k]``); a
    ``defaultdict`` stores its default, as the read Python makes does."""
    try:
        base[key]
    except errors:
        return True
    return False


nondifferentiable(rt.lookup_fails)


@rt.helper
def call_fails(function, args, errors, /, **kwargs):
    """Whether ``function(*args, **kwargs)`` raises one of ``errors`` (``try: L =
    np.linalg.cholesky(K)`` / ``except LinAlgError:`` is ``if rt.call_fails(...):
    <handler> else: L = np.linalg.cholesky(K)``; a NumPy or SciPy function, pure)."""
    try:
        function(*args, **kwargs)
    except errors:
        return True
    return False


nondifferentiable(rt.call_fails)


@rt.helper
def item_key(container, key, error, tuple_error):
    """``key`` of ``c[key][i] = v`` (transform/item_updates.py: ``c[key]`` updated in
    place: an item, or an array's view), or raise ``error`` where ``c[key]`` is a new value
    (a slice of a list, an index by a list, mask or array): Python's write would be lost;
    ``tuple_error`` where ``c`` is a tuple, whose item cannot be stored back."""
    if isinstance(container, tuple):
        raise tuple_error
    if view_key(container, key):
        return key
    for part in key if type(key) is tuple else (key,):
        if part is None or part is Ellipsis or isinstance(part, (slice, list, bool, numpy.bool_)) \
                or getattr(part, "ndim", 0) != 0 or getattr(part, "dtype", None) == bool:
            raise error
    return key


@rt.helper
def view_key(base, key):
    """Whether ``base[key]`` is a view of the array ``base`` (a basic index: integers,
    slices, None, Ellipsis), where ``np.f(a, out=base[key])`` writes into ``base``."""
    if not hasattr(base, "ndim") or not hasattr(base, "__array_namespace__") and not \
            isinstance(base, numpy.ndarray):
        return False
    for part in key if type(key) is tuple else (key,):
        if not (part is None or part is Ellipsis or isinstance(part, slice) or isinstance(
                part, (int, numpy.integer)) and not isinstance(part, (bool, numpy.bool_))):
            return False
    return True


nondifferentiable(rt.item_key, rt.view_key)
