"""Which of a function's values are scalars (rank 0), given the ranks of its arguments.

A gradient specialised for the ranks of the call's arguments (``grad`` keys its
compiled code on them) knows, for example, that ``T_out[t]`` is a scalar when
``T_out`` is a vector and ``t`` a loop counter. For a value that is a scalar,
and whose adjoint therefore is one too, ``rt.unbroadcast`` is the identity and
its shape need not be saved: the scalar loops of simulations then run without
either (srcgrad/optimize/, ``drop_scalar_unbroadcasts``).

The analysis is flow-insensitive: a name has a rank when every binding of it
gives that rank. Anything it cannot see through (calls it does not know, lists,
attributes) has an unknown rank, which only keeps the general code.
"""

import builtins
import inspect
import math

import gast
import numpy

from srcgrad import anno, pytree
from srcgrad import runtime as rt
from srcgrad.analysis.argument_keys import ClassKey, StaticKey, plain_instance
from srcgrad.analysis.matrices import attribute_matrix
from srcgrad.analysis.read_names import ReadNames, _get
from srcgrad.errors import SrcgradError, matrix_refusal
from srcgrad.rules import Method
from srcgrad import ast_util

Static = anno.Static

UNKNOWN = "?"          # not a single known rank
INT = "i"              # a Python or NumPy integer scalar (an index)

_ELEMENTWISE_HELPERS = {rt.divide: 2, rt.power: 2}
_ELEMENTWISE_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow, gast.FloorDiv, gast.Mod)
_INT_OPS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)
_FULL_REDUCTIONS = {numpy.sum, numpy.mean, numpy.prod, numpy.max, numpy.min, numpy.amax, numpy.amin,
                    numpy.std, numpy.var, numpy.linalg.norm}
_REDUCING_METHODS = {"sum", "mean", "prod", "max", "min", "std", "var", "item"}


def rank_key(value):
    """What a gradient is specialised on for one argument: ndim, INT, a structure's
    ``pytree.TreeKey`` (the kinds of its nodes, the ranks of its leaves), or None (unknown)."""
    kind = type(value)
    if kind is numpy.ndarray:
        return value.ndim
    if kind is float:
        return 0
    if kind is int or isinstance(value, numpy.integer):
        return INT
    if isinstance(value, numpy.floating):
        return 0
    if isinstance(value, numpy.matrix):
        raise matrix_refusal("an argument")
    ndim = getattr(value, "ndim", None)  # CuPy arrays
    if type(ndim) is int and hasattr(value, "shape"):
        return ndim
    if pytree.is_node(value):
        return pytree.tree_key(value, rank_key)
    if callable(value):
        return StaticKey(value)
    if attribute_matrix(value):
        raise matrix_refusal("an attribute of an argument")
    if plain_instance(value):
        return ClassKey(kind)
    return None


REFUSED_KEY = ("refused",)   # equal to no rank key a call records


def checked_rank_key(value):
    """``rank_key`` for the hot calls' checks: a value it refuses gives a key no call
    recorded, so the call goes to the general path, which raises the refusal located at
    the user's function."""
    try:
        return rank_key(value)
    except SrcgradError:
        return REFUSED_KEY


def checked_rank_keys(args):
    """``rank_keys`` whose refused values give REFUSED_KEY (checked_rank_key)."""
    if len(args) == 1 and type(args[0]) is numpy.ndarray:
        return (args[0].ndim,)
    return tuple(map(checked_rank_key, args))


def _tree_child(key, index, attr=False):
    """The key of a structure's part: ``index`` a subscript's constant (or INT: any
    position of a list whose items all have one key), or an attribute name with ``attr``;
    None when the key does not tell."""
    kind = key[0]
    if not isinstance(kind, type):
        return None
    if attr:
        if hasattr(kind, "_fields") and issubclass(kind, tuple):
            names = kind._fields
            return key[1 + names.index(index)] if index in names else None
        import dataclasses
        if dataclasses.is_dataclass(kind) and kind not in pytree._REGISTRY:
            names = [f.name for f in dataclasses.fields(kind)]
            return key[1 + names.index(index)] if index in names else None
        return None
    if kind in pytree._REGISTRY:
        return None
    if issubclass(kind, dict):
        keys = key[1]
        try:
            return key[2 + keys.index(index)] if index in keys else None
        except TypeError:
            return None
    if issubclass(kind, (list, tuple)):
        items = key[1:]
        if index is INT:
            return items[0] if items and all(k == items[0] for k in items) else None
        if type(index) is int and -len(items) <= index < len(items):
            return items[index]
    return None


def _global_attribute_may_be(e, resolve):
    """Whether ``obj.attr`` of a global object may hold a container: any attribute of an
    object may (``c.extra`` a tuple), read when the gradient runs; a module's number or
    array (``np.pi``) does not."""
    try:
        obj = resolve(e.value.id)
    except Exception:
        return True
    if inspect.ismodule(obj):
        value = inspect.getattr_static(obj, e.attr, None)
        return not isinstance(value, (int, float, complex, numpy.ndarray, numpy.generic))
    return True


_CONTAINER_CALLS = (builtins.list, builtins.tuple, builtins.dict, builtins.zip, builtins.enumerate,
                    builtins.sorted, builtins.reversed)


def containers(node, rank_map, param_keys, resolve, specialised):
    """The names that may hold a container (list, tuple, dict, dataclass, registered
    class) rather than an array or a number: their adjoints add with ``rt.add_grad``,
    and ``+``/``*`` on them may concatenate or repeat (transform/reverse.py).

    ``param_keys`` maps parameters to their ``rank_key``. ``specialised``: the keys come
    from the call's arguments, so a parameter with no key (an unknown object, a default)
    may be anything; otherwise (the gradient for arguments of any rank) parameters are
    leaves, and api.py never runs that code on a structure. A flow-insensitive
    over-approximation: a leaf counted as a container only costs a run-time test.
    """
    from srcgrad import grad_mode
    from srcgrad.custom_function import is_apply
    params = [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    bindings = []
    _collect(node.body, bindings)
    bound = {n for n, _ in bindings} | set(params)
    may = set()
    for p in params:
        key = param_keys.get(p)
        if isinstance(key, pytree.TreeKey) or (specialised and key is None):
            may.add(p)

    def leaf(n):
        r = rank_map.get(n)
        return type(r) is int or r == INT

    may |= {n for n, r in rank_map.items() if isinstance(r, pytree.TreeKey)}

    def may_be(e):
        if isinstance(e, gast.Name):
            if e.id in bound:
                return e.id in may
            try:
                obj = resolve(e.id)
            except Exception:
                return True
            return pytree.is_node(obj) and obj is not None or isinstance(obj, (set, frozenset))
        if isinstance(e, (gast.List, gast.Tuple, gast.Dict, gast.Set)):
            return True
        if isinstance(e, gast.Attribute) and isinstance(e.value, gast.Name) and e.value.id not in bound:
            return _global_attribute_may_be(e, resolve)
        if isinstance(e, (gast.Subscript, gast.Attribute)):
            return may_be(e.value)
        if isinstance(e, gast.BinOp):
            # (as rt.container_op decides: only two lists or two tuples concatenate)
            if isinstance(e.op, gast.Add):
                return may_be(e.left) and may_be(e.right)
            return isinstance(e.op, gast.Mult) and (may_be(e.left) or may_be(e.right))
        if isinstance(e, gast.IfExp):
            return may_be(e.body) or may_be(e.orelse)
        if isinstance(e, gast.BoolOp):
            return any(may_be(v) for v in e.values)
        if isinstance(e, gast.Call):
            primitive = anno.getanno(e, Static.PRIMITIVE)
            if isinstance(primitive, Method):
                return may_be(e.func.value)
            if primitive is None or is_apply(primitive) is not None:
                return True   # unknown, or a custom Function (its outputs may be a tuple)
            try:
                if primitive in _CONTAINER_CALLS or isinstance(primitive, type) and issubclass(
                        primitive, (list, tuple, dict)):   # OrderedDict(), defaultdict(float)
                    return True
                from srcgrad import rules
                if rules.is_sequence_result(primitive):   # np.split, rt.dict_merge ...
                    return True
                if primitive in (grad_mode.detach, grad_mode.stop_gradient):
                    return any(may_be(a) for a in e.args)
            except TypeError:   # an unhashable primitive
                return True
            return False
        return False

    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            if target in may or leaf(target):
                continue
            if value is None or (value is not _RANGE and may_be(value)):
                may.add(target)
                changed = True
    return frozenset(n for n in may if not leaf(n))


def rank_keys(args):
    """``rank_key`` of each argument, as a tuple (a call with one array kept cheap)."""
    if len(args) == 1 and type(args[0]) is numpy.ndarray:
        return (args[0].ndim,)
    return tuple(map(rank_key, args))


def infer(node, param_ranks):
    """Name -> rank (int), INT or UNKNOWN, for every name ``node`` binds."""
    params = [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    for extra in (node.args.vararg, node.args.kwarg):
        if extra is not None:
            params.append(extra.id)
    env = {}
    for p in params:
        r = param_ranks.get(p)
        env[p] = UNKNOWN if r is None else r
    bindings = []          # (name, expression or None for "unknown")
    _collect(node.body, bindings)
    bound = {n for n, _ in bindings} | set(params)
    env = ReadNames(env)
    changed = True
    while changed:   # ranks only rise (unset -> a rank -> UNKNOWN): this ends
        changed = False
        seen = env.seen = set()
        for target, value in bindings:
            r = UNKNOWN if value is None else INT if value is _RANGE else _rank(value, env, bound)
            if r is None:       # reads a name that has no rank yet
                continue
            old = _get(env, target)
            new = r if old is None else _join(old, r)
            if new != old:
                env[target] = new
                changed = changed or target in seen
    if any(isinstance(r, pytree.TreeKey) for r in env.values()) \
            and any(isinstance(env.get(n), pytree.TreeKey) for n in _mutated(node)):
        # A structure changed in place (d["k"] = v, lst.append(v)) no longer has its
        # argument's key: infer again without any structure facts.
        return infer(node, {p: None if isinstance(r, pytree.TreeKey) else r
                            for p, r in param_ranks.items()})
    return {n: UNKNOWN if env.get(n) is _SHAPE else env.get(n, UNKNOWN) for n in bound}


_READING_METHODS = {"get", "keys", "values", "items", "copy", "index", "count"}


def _mutated(node):
    """Names whose value may change in place: subscript stores into them, and methods
    called on them other than ones that only read."""
    out = set()
    for n in ast_util.nodes_of(node, gast.Subscript):
        if isinstance(n.ctx, gast.Store) and isinstance(n.value, gast.Name):
            out.add(n.value.id)
    for n in ast_util.nodes_of(node, gast.Call):
        if isinstance(n.func, gast.Attribute) \
                and isinstance(n.func.value, gast.Name) and n.func.attr not in _READING_METHODS:
            out.add(n.func.value.id)
    return out


_RANGE = object()   # marks the target of ``for i in range(...)``
_SHAPE = "shape"    # while inferring: an array's ``.shape`` (UNKNOWN in the result)


def _join(a, b):
    if a == b:
        return a
    if {a, b} == {0, INT}:
        return 0
    return UNKNOWN


def _collect(body, bindings, in_loop=None, looping=False):
    """Append (name, value) for every binding in ``body``; ``in_loop`` (a set) gets the
    names bound inside loops."""
    for s in body:
        before = len(bindings)
        _collect_statement(s, bindings, in_loop, looping)
        if looping and in_loop is not None:
            in_loop.update(n for n, _ in bindings[before:])


def _collect_statement(s, bindings, in_loop, looping):
    if isinstance(s, gast.Assign):
        for t in s.targets:
            if isinstance(t, gast.Name):
                bindings.append((t.id, s.value if len(s.targets) == 1 else None))
            else:
                _unknown_stores(t, bindings)
    elif isinstance(s, gast.For):
        before = len(bindings)
        is_range = (isinstance(s.target, gast.Name) and isinstance(s.iter, gast.Call)
                    and anno.getanno(s.iter, Static.PRIMITIVE) is builtins.range)
        if is_range:
            bindings.append((s.target.id, _RANGE))
        else:
            _unknown_stores(s.target, bindings)
        if in_loop is not None:
            in_loop.update(n for n, _ in bindings[before:])
        _collect(s.body, bindings, in_loop, True)
        _collect(s.orelse, bindings, in_loop, looping)
    elif isinstance(s, gast.While):
        _collect(s.body, bindings, in_loop, True)
        _collect(s.orelse, bindings, in_loop, looping)
    elif isinstance(s, gast.If):
        _collect(s.body, bindings, in_loop, looping)
        _collect(s.orelse, bindings, in_loop, looping)
    elif isinstance(s, (gast.Global, gast.Nonlocal)):
        bindings.extend((n, None) for n in s.names)
    else:
        for n in ast_util.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                bindings.append((n.id, None))
        for field in ("body", "orelse", "handlers", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                _collect([x for x in inner if isinstance(x, gast.stmt)], bindings, in_loop,
                              looping)


def _unknown_stores(target, bindings):
    """Names ``target`` rebinds to values not known here. ``y[k] = v`` and ``p.w = v``
    write into an object and rebind no name (whatever ctx a pass gave ``y``)."""
    if isinstance(target, gast.Name):
        bindings.append((target.id, None))
    elif isinstance(target, (gast.Tuple, gast.List)):
        for elt in target.elts:
            _unknown_stores(elt, bindings)
    elif isinstance(target, gast.Starred):
        _unknown_stores(target.value, bindings)


def _combine(*ranks):
    if UNKNOWN in ranks or _SHAPE in ranks or any(isinstance(r, pytree.TreeKey) for r in ranks):
        return UNKNOWN
    if None in ranks:
        return None
    if all(r == INT for r in ranks):
        return INT
    return max(0 if r == INT else r for r in ranks)


def _rank(e, env, bound):
    """The rank of expression ``e``: int, INT, UNKNOWN, or None (not known yet)."""
    if isinstance(e, gast.Constant):
        v = e.value
        if type(v) is int:
            return INT
        if type(v) in (float, bool, complex):
            return 0
        return UNKNOWN
    if isinstance(e, gast.Name):
        if e.id not in bound:
            return UNKNOWN   # a global or closure variable: its rank is not part of the key
        return env.get(e.id)   # a structure's pytree.TreeKey too (read by subscripts)
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.MatMult):
        return _matmul_rank(_rank(e.left, env, bound), _rank(e.right, env, bound))
    if isinstance(e, gast.BinOp):
        if not isinstance(e.op, _ELEMENTWISE_OPS):
            return UNKNOWN
        r = _combine(_rank(e.left, env, bound), _rank(e.right, env, bound))
        if r == INT and not isinstance(e.op, _INT_OPS):
            return 0
        return r
    if isinstance(e, gast.UnaryOp):
        r = _rank(e.operand, env, bound)
        if isinstance(r, pytree.TreeKey):
            return UNKNOWN
        if isinstance(e.op, gast.Not):
            return UNKNOWN if r == UNKNOWN else 0 if r is not None else None
        return UNKNOWN if r is _SHAPE else r
    if isinstance(e, gast.Compare):
        if len(e.ops) != 1 or not isinstance(e.ops[0], (gast.Lt, gast.LtE, gast.Gt, gast.GtE,
                                                          gast.Eq, gast.NotEq)):
            return UNKNOWN
        r = _combine(_rank(e.left, env, bound), _rank(e.comparators[0], env, bound))
        return 0 if r == INT else r
    if isinstance(e, gast.IfExp):
        a, b = _rank(e.body, env, bound), _rank(e.orelse, env, bound)
        if a is None or b is None:
            return None if UNKNOWN not in (a, b) else UNKNOWN
        return _join(a, b)
    if isinstance(e, gast.Subscript) and isinstance(e.value, gast.Name) \
            and isinstance(env.get(e.value.id), pytree.TreeKey) and e.value.id in bound:
        index = e.slice    # a part of a structured argument: its key says what it is
        if isinstance(index, gast.Constant):
            child = _tree_child(env[e.value.id], index.value)
        elif isinstance(index, gast.Name) and env.get(index.id) == INT:
            child = _tree_child(env[e.value.id], INT)
        else:
            child = None
        return UNKNOWN if child is None else child
    if isinstance(e, gast.Attribute) and isinstance(e.value, gast.Name) \
            and isinstance(env.get(e.value.id), pytree.TreeKey) and e.value.id in bound:
        child = _tree_child(env[e.value.id], e.attr, attr=True)
        return UNKNOWN if child is None else child
    if isinstance(e, gast.Attribute) and e.attr == "shape":
        owner = _rank(e.value, env, bound)   # an array's shape: a tuple of ints
        return None if owner is None else _SHAPE if type(owner) is int else UNKNOWN
    if isinstance(e, gast.Subscript):
        base = _rank(e.value, env, bound)
        if base is _SHAPE:   # its length along one axis
            index = _rank(e.slice, env, bound)
            return None if index is None else INT if index == INT else UNKNOWN
        if isinstance(base, pytree.TreeKey):
            return UNKNOWN
        index = e.slice
        indices = index.elts if isinstance(index, gast.Tuple) else [index]
        index_ranks = [_rank(i, env, bound) for i in indices]
        if base is None or None in index_ranks:
            return None if UNKNOWN not in index_ranks + [base] else UNKNOWN
        if base == UNKNOWN or base == INT or any(r != INT for r in index_ranks) \
                or len(indices) > base:
            return UNKNOWN
        return base - len(indices)
    if isinstance(e, gast.Call):
        return _call_rank(e, env, bound)
    return UNKNOWN


def _matmul_rank(a, b):
    """The rank of ``a @ b`` for operands of ranks ``a`` and ``b``: a 1-D operand's axis
    is contracted away, stacks of matrices broadcast."""
    if a is None or b is None:
        return None if UNKNOWN not in (a, b) else UNKNOWN
    if type(a) is not int or type(b) is not int or a < 1 or b < 1:
        return UNKNOWN
    if a == 1 or b == 1:
        return a + b - 2
    return max(a, b)


def _axis_reduction_rank(e, env, bound):
    """``np.sum(x, axis, keepdims=...)`` and the like: ``x``'s rank less the axes reduced
    (all of it without ``keepdims``), for constant axes and ``keepdims``."""
    keywords = {k.arg: k.value for k in e.keywords}
    if len(e.args) not in (1, 2) or set(keywords) - {"axis", "keepdims", "ddof"} \
            or (len(e.args) == 2 and "axis" in keywords):
        return UNKNOWN
    r = _rank(e.args[0], env, bound)
    if type(r) is not int:
        return None if r is None else UNKNOWN
    keep = keywords.get("keepdims", gast.Constant(value=False, kind=None))
    if not (isinstance(keep, gast.Constant) and type(keep.value) is bool):
        return UNKNOWN
    axis = e.args[1] if len(e.args) == 2 else keywords.get("axis")
    if axis is None or isinstance(axis, gast.Constant) and axis.value is None:
        return r if keep.value else 0
    axes = axis.elts if isinstance(axis, gast.Tuple) else [axis]
    axes = [a.operand if isinstance(a, gast.UnaryOp) and isinstance(a.op, gast.USub) else a
            for a in axes]   # axis=-1
    if not all(isinstance(a, gast.Constant) and type(a.value) is int for a in axes) \
            or len(axes) > r:
        return UNKNOWN
    return r if keep.value else r - len(axes)


def _call_rank(e, env, bound):
    primitive = anno.getanno(e, Static.PRIMITIVE)
    if primitive is None:
        return UNKNOWN
    if isinstance(primitive, Method):
        if str(primitive) in _REDUCING_METHODS and not e.args and not e.keywords:
            receiver = _rank(e.func.value, env, bound)
            return None if receiver is None else UNKNOWN if receiver == UNKNOWN else 0
        return UNKNOWN
    try:
        reduction = primitive in _FULL_REDUCTIONS and primitive is not numpy.linalg.norm
    except TypeError:
        return UNKNOWN
    if reduction and (e.keywords or len(e.args) == 2):
        return _axis_reduction_rank(e, env, bound)
    if e.keywords:
        return UNKNOWN
    args = [_rank(a, env, bound) for a in e.args]
    if _SHAPE in args:
        return INT if primitive is builtins.len and len(args) == 1 else UNKNOWN
    if isinstance(primitive, numpy.ufunc) and primitive.nout == 1 and len(args) == primitive.nin:
        r = _combine(*args)
        return 0 if r == INT else r
    if primitive in _ELEMENTWISE_HELPERS and len(args) == _ELEMENTWISE_HELPERS[primitive]:
        r = _combine(*args)   # the rules' NumPy-meaning divisions and powers (rt.divide)
        return 0 if r == INT else r
    if primitive in (builtins.len, builtins.int) and len(args) == 1:
        return INT
    if primitive is builtins.float and len(args) == 1:
        return 0
    if primitive is builtins.abs and len(args) == 1:
        return args[0]
    if getattr(primitive, "__module__", None) == "math" and getattr(math, getattr(
            primitive, "__name__", ""), None) is primitive:
        return 0   # math functions return Python numbers or raise
    try:
        full_reduction = primitive in _FULL_REDUCTIONS
    except TypeError:
        return UNKNOWN
    if full_reduction and len(args) == 1:   # one number, whatever the operand's rank
        return None if args[0] is None else UNKNOWN if isinstance(args[0], pytree.TreeKey) else 0
    return UNKNOWN


# ----- Shape classes: which values always have the same shape -----

SCALAR = "()"   # the class of scalars: they broadcast into every shape


def shape_classes(node, rank_map):
    """Name -> shape class: names of one class always hold arrays of one shape.

    A class is named after its root: a parameter whose argument's rank is known
    (the shape of the argument the call passed), or a name bound once, outside
    any loop. Elementwise operations keep their operand's class when the other
    operand is a scalar or of the same class. SCALAR is the class of rank-0
    values; UNKNOWN marks a name with no single class.
    """
    params = [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    bindings, in_loop = [], set()
    _collect(node.body, bindings, in_loop)
    counts = {}
    for n, _ in bindings:
        counts[n] = counts.get(n, 0) + 1
    bound = set(counts) | set(params)
    env = {}
    for p in params:
        r = rank_map.get(p)
        env[p] = SCALAR if r in (0, INT) else p if type(r) is int else UNKNOWN
    env = ReadNames(env)
    changed = True
    while changed:   # classes only rise (unset -> a class -> UNKNOWN): this ends
        changed = False
        seen = env.seen = set()
        for target, value in bindings:
            if value is None or value is _RANGE:
                c = SCALAR if value is _RANGE else UNKNOWN
            elif rank_map.get(target) in (0, INT):
                c = SCALAR
            else:
                c = _class(value, env, rank_map, bound)
            if c is None:
                continue
            if c == UNKNOWN and counts[target] == 1 and target not in in_loop \
                    and target not in params and _makes_array(value):
                c = target   # an array bound once: a root of its own
            old = _get(env, target)
            new = c if old is None or old == c else UNKNOWN
            if new != old:
                env[target] = new
                changed = changed or target in seen
    return {n: env.get(n, UNKNOWN) for n in bound}


def _class(e, env, rank_map, bound):
    r = _rank(e, rank_map, bound)
    if r == 0 or r == INT:
        return SCALAR
    if isinstance(e, gast.Name):
        return env.get(e.id) if e.id in bound else UNKNOWN
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _class(e.operand, env, rank_map, bound)
    if isinstance(e, gast.BinOp) and isinstance(e.op, _ELEMENTWISE_OPS):
        return combine_classes(_class(e.left, env, rank_map, bound),
                                _class(e.right, env, rank_map, bound))
    if isinstance(e, gast.Call) and not e.keywords:
        primitive = anno.getanno(e, Static.PRIMITIVE)
        if isinstance(primitive, numpy.ufunc) and primitive.nout == 1 \
                and len(e.args) == primitive.nin:
            return combine_classes(*(_class(a, env, rank_map, bound) for a in e.args))
    return UNKNOWN


def _makes_array(value):
    """Whether ``value`` certainly evaluates to a new NumPy (or CuPy) array or scalar."""
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.MatMult):
        return True
    if isinstance(value, gast.Call):
        primitive = anno.getanno(value, Static.PRIMITIVE)
        module = getattr(primitive, "__module__", None) or ""
        return isinstance(primitive, numpy.ufunc) or module == "numpy" or module.startswith("numpy.")
    return False


def combine_classes(*classes):
    """The class of an elementwise operation's result: a SCALAR operand takes the other's."""
    if UNKNOWN in classes:
        return UNKNOWN
    if None in classes:
        return None
    arrays = {c for c in classes if c != SCALAR}
    if not arrays:
        return SCALAR
    return arrays.pop() if len(arrays) == 1 else UNKNOWN
