"""NumPy calls Numba does not compile as written, as calls of their Numba forms (``_jrt.*``).

``np.reshape(a, shape, order='C')`` and ``a.reshape(3, 2)`` become ``_jrt.reshape`` (Numba's
takes no order and reshapes only contiguous arrays); reductions given an axis or keepdims
(``np.mean(x, axis=1)``, ``x.max(axis=(0, 2), keepdims=True)``, ``x.var(axis=0, ddof=1)``)
become ``_jrt.reduce_mean(x, axis, keepdims, ddof)`` and the like (reductions.py);
``np.flip(a, None)`` drops its None axis; ``np.array([a, b])`` of a display that is not all
constants becomes ``_jrt.array_of((a, b))`` (Numba's ``np.array`` takes no list of arrays),
and ``s.sum()`` of a name bound once to a full reduction (a NumPy scalar, whose methods
Numba's float has not) becomes ``np.sum(s)`` (``scalar_methods``). A call
with other arguments stays as it is (Numba's typing decides).
"""

import gast


def numba_form(node):
    """The ``_jrt`` call that replaces the Call ``node``, or None."""
    return _reshape(node) or _reduction(node) or _without_none_axis(node) or _array_of(node)


def _array_of(node):
    """``np.array([a, b])`` (one list display, not all constants, no keywords) as
    ``_jrt.array_of((a, b))`` (runtime.py: the arrays stacked, as np.array stacks arrays of
    one shape), else None."""
    f = node.func
    if not (isinstance(f, gast.Attribute) and f.attr == "array" and isinstance(f.value, gast.Name)
            and f.value.id == "np" and len(node.args) == 1 and not node.keywords and
            isinstance(node.args[0], gast.List) and node.args[0].elts) or \
            all(isinstance(e, gast.Constant) for e in node.args[0].elts):
        return None
    return _jrt_call("array_of", [gast.Tuple(elts=node.args[0].elts, ctx=gast.Load())])


_FULL = ("sum", "mean", "max", "min", "prod")   # full reductions: a NumPy scalar


def scalar_methods(function):
    """``s.sum()`` (``mean``, ``max``, ``min``, ``prod``; no arguments) where ``s`` is bound
    once, to a full reduction (``x.sum()``, ``np.sum(x)``: always a NumPy scalar, whose
    ``.sum()`` is itself), as ``np.sum(s)``: Numba types a NumPy scalar as a float, which has
    no such method. Any other receiver keeps its method call (Numba's typing decides)."""
    stores, full = {}, set()
    for node in gast.walk(function):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name) and _full_reduction(node.value):
            full.add(node.targets[0].id)
    params = {a.id for a in function.args.args + function.args.posonlyargs +
              function.args.kwonlyargs}
    for node in gast.walk(function):
        if isinstance(node, gast.Call) and _method_of_nothing(node) and \
                isinstance(node.func.value, gast.Name) and node.func.value.id in full and \
                stores.get(node.func.value.id) == 1 and node.func.value.id not in params:
            receiver = node.func.value
            node.func = gast.Attribute(value=gast.Name(id="np", ctx=gast.Load(), annotation=None,
                                                       type_comment=None),
                                       attr=node.func.attr, ctx=gast.Load())
            node.args = [receiver]


def _method_of_nothing(node):
    return isinstance(node.func, gast.Attribute) and node.func.attr in _FULL and \
        not node.args and not node.keywords


def _full_reduction(value):
    if not isinstance(value, gast.Call):
        return False
    f = value.func
    if _method_of_nothing(value):
        return not (isinstance(f.value, gast.Name) and f.value.id in ("np", "_jrt", "math"))
    return isinstance(f, gast.Attribute) and f.attr in _FULL + ("amax", "amin") and \
        isinstance(f.value, gast.Name) and f.value.id == "np" and len(value.args) == 1 and \
        not value.keywords


_WHOLE = ("flip", "cumsum", "cumprod")   # axis=None: every axis, as with no axis given


def _without_none_axis(node):
    """``np.flip(a, None)`` (``np.cumsum``, ``np.cumprod``; axis=None) as ``np.flip(a)``:
    Numba takes these without an axis only."""
    f = node.func
    if not (isinstance(f, gast.Attribute) and f.attr in _WHOLE and isinstance(f.value, gast.Name)
            and f.value.id == "np" and node.args):
        return None
    axis = node.args[1:] or [k.value for k in node.keywords if k.arg == "axis"]
    if len(node.args) > 2 or len(axis) != 1 or len(node.keywords) != (len(node.args) == 1) or \
            not (isinstance(axis[0], gast.Constant) and axis[0].value is None):
        return None
    node.args, node.keywords = node.args[:1], []
    return node


def _jrt_call(attr, args):
    return gast.Call(func=gast.Attribute(value=gast.Name(id="_jrt", ctx=gast.Load(), annotation=None,
                                                         type_comment=None),
                                         attr=attr, ctx=gast.Load()), args=list(args), keywords=[])


_REDUCTIONS = {"sum": "sum", "mean": "mean", "max": "max", "min": "min", "amax": "max",
               "amin": "min", "var": "var", "std": "std", "prod": "prod"}


def _reduction(node):
    """``np.mean(x, axis=1)``, ``x.mean(axis=1, keepdims=True)`` and the other reductions
    of ``_REDUCTIONS`` given an axis or keepdims as ``_jrt.reduce_mean(x, axis, keepdims,
    ddof)`` (reductions.py: Numba has no keepdims, and only sum takes an axis), else None."""
    f = node.func
    if not isinstance(f, gast.Attribute) or f.attr not in _REDUCTIONS:
        return None
    if isinstance(f.value, gast.Name) and f.value.id == "np":
        if not node.args:
            return None
        x, rest = node.args[0], node.args[1:]
    elif isinstance(f.value, gast.Name) and f.value.id in ("_jrt", "math"):
        return None
    else:
        x, rest = f.value, node.args
    given = {k.arg: k.value for k in node.keywords}
    op = _REDUCTIONS[f.attr]
    if len(rest) > 1 or set(given) - {"axis", "keepdims", "ddof"} or rest and "axis" in given \
            or "ddof" in given and op not in ("var", "std"):
        return None
    axis = rest[0] if rest else given.get("axis")
    if axis is None and "keepdims" not in given:
        return None
    none, false = gast.Constant(value=None, kind=None), gast.Constant(value=False, kind=None)
    return _jrt_call("reduce_" + op, [x, axis or none, given.get("keepdims", false),
                                          given.get("ddof", gast.Constant(value=0, kind=None))])


def _reshape(node):
    """``np.reshape(a, shape[, order='C'])`` and ``a.reshape(*shape)`` as
    ``_jrt.reshape(a, shape)`` (shapes.py: Numba's reshape takes no ``order`` and only a
    contiguous array), else None."""
    f = node.func
    if not (isinstance(f, gast.Attribute) and f.attr == "reshape") or any(
            k.arg != "order" or not (isinstance(k.value, gast.Constant) and k.value.value == "C")
            for k in node.keywords):
        return None
    if isinstance(f.value, gast.Name) and f.value.id == "np":
        if len(node.args) != 2:
            return None
        return _jrt_call("reshape", node.args)
    if isinstance(f.value, gast.Name) and f.value.id in ("_jrt", "math") or not node.args:
        return None
    shape = node.args[0] if len(node.args) == 1 else gast.Tuple(elts=node.args, ctx=gast.Load())
    return _jrt_call("reshape", [f.value, shape])
