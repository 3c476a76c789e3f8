"""The composed gradient as source Numba compiles: ``sg.grad(f, jit=True)``.

The input is what the NumPy gradient is made from (pipeline.Compiled: the forward and
backward sweeps as gast trees, with each statement's Origin in the user's source); the
output is one function source, its namespace, and its name. The NumPy code is not
changed: the trees are cloned, composed as pipeline.compose_gradient composes them, and
the clone is rewritten:

* ``rt.f(...)`` becomes ``_jrt.f(...)``, a Numba-compatible form of the helper
  (srcgrad/jit/runtime.py); a helper not in ``HELPERS`` is refused.
* ``xp = rt.namespace(...)`` is dropped and ``xp.f`` becomes ``np.f``.
* The tape (``tape = []``, ``push(v)``, ``v = pop()``) becomes one typed list per tape
  key (``_tape_v``): a pop reads the key its push wrote (transform/tape.py tags both
  with it), so each list keeps the one type its values have. A key of numbers pushed
  in one top-level loop is a float64 array sized by its trip count (fixed_tapes.py).
* ``reversed(range_i)`` becomes ``_jrt.rev_range(range_i)``; ``a ** b`` becomes
  ``_jrt.power(a, b)``, which Numba compiles for all but two integers (a Python int
  power does not overflow, Numba's would).
* An ``is`` comparison is refused (the releases ``x = None`` are dropped).
* A release ``x = None`` is dropped (a name keeps one type in compiled code). An
  initial value ``x = None`` (tape.initial_values: a loop pushes ``x`` before binding
  it) is not a release, since ``x`` is read after it: a flag (``skip``, ``stop``: bound
  only to True, False or its tape's pops, read only as a condition or pushed) starts
  ``False``, which its reads take as they take None; any other name keeps ``None``
  (Numba types it "None or ...", and reading the None raises: that call runs NumPy).
* ``if rt.container_op(a, b):`` (whether ``+`` or ``*`` joins lists or tuples) keeps
  its test, False on arrays and numbers, and its body becomes ``_jrt.unreached()``;
  ``rt.check_array_operand(v, error)`` keeps ``v`` (containers.py).
* ``np.stack([a, b])`` (and the other joins) of a list display joins the tuple ``(a, b)``;
  a list display read only at constant positions is a tuple (displays.py).
* ``np.reshape`` and ``.reshape`` become ``_jrt.reshape``; reductions with an axis or
  keepdims (``x.mean(axis=1)``) become ``_jrt.reduce_mean(...)`` and the like (calls.py).
* ``push(steps[:count])`` of a loop ended by a break (control_flow.RANGE_BREAK_FORWARD)
  becomes ``_jrt.range_head(steps, count)`` (Numba does not slice a range).
* Free names must be numbers, NumPy or math (or a NumPy function), or the builtins
  Numba knows; a global or closure array is a parameter, passed at each call; anything
  else (a user function, a class) is refused.

A refusal is a ``Refused`` naming the construct and the user's statement (its Origin).
Whatever Numba's typing then rejects is found when it compiles (dispatch.py).
"""

import re

import gast

from srcgrad import anno, optimize, pipeline
from srcgrad.codegen import emit
from srcgrad.jit import calls, displays, fixed_tapes, inplace, loops, python_numbers, zeros
from srcgrad.jit.python_numbers import _assign, _call, _name
from srcgrad.optimize import unit_seed
from srcgrad.jit.errors import Refused
from srcgrad.jit.names import (BUILTINS, checked_math as _checked_math,  # noqa: F401
                               frozen_checks, frozen_forms, global_arrays as _global_arrays, global_values,
                               is_builtin as _is_builtin, namespace as _namespace)
from srcgrad.templates import clone
from srcgrad.transform import tape as tapes

Static = anno.Static

# The rt helpers runtime.py has Numba forms of: any other rt.* call is refused.
HELPERS = ("default_seed", "owned_zeros", "unbroadcast", "has_grad", "shape_of", "unreduce",
           "reduction_size", "own", "tangent_zero", "tangent_like", "add_at", "check_unshared",
           "save", "written_grad", "zero_grad_at", "matmul_grad_a", "matmul_grad_b",
           "dot_grad_a", "dot_grad_b", "sign", "log_or_zero", "cast_like", "dtype_grad", "unreduce_like",
           "tie_share", "copy_restored", "check_sequence", "check_array_operand", "container_op",
           "add_grad", "seq_item", "array_vjp", "stack_vjp", "concatenate_vjp", "seq_add",
           "prod_others", "builtin_sum_vjp", "minmax_vjp", "log_base", "log_base_grad", "sin",
           "cos", "exp", "sinh", "cosh", "log", "clip_below", "clip_above", "either",
           "inverse_axes", "method_axes", "share", "divide", "power")
SEED = "_sg_seed"
OUT = "_sg_out"
BUF = "_sg_buf"     # "grad", "seeded": a float64 array the first gradient is written into
KEEP = "_sg_keep"   # "seeded": whether the output is returned (else None: not boxed)

# What a variant composes: "grad" the gradient-only forward and the known seed (grad's
# common call), "value" the whole forward and the default seed (value_and_grad), "seeded"
# the whole forward and a seed passed in (grad_outputs=, vjp). "value" returns
# ``(out, gradients)``, "seeded" ``(out or None, out's shape is the seed's, gradients)``.
# "grad" and "seeded" write their first gradient into ``_sg_buf`` where it is a float64
# array of that shape and return None in its place (hot.py: Numba boxes an array it
# made through a Python call, a tenth of W2's hand-written time; an argument it does not).
VARIANTS = ("grad", "value", "seeded")


class Translation:
    """The jit function's ``name``, ``source``, ``namespace``, and ``origins()``: line of
    the source -> the Origin of the user statement it computes."""

    def __init__(self, name, source, namespace, function, runs=(), trees=(), frozen=(),
                 arrays=()):
        self.name, self.source, self.namespace = name, source, namespace
        # (where, name, value) of each global or closure array, a parameter after the
        # user's: dispatch.py passes its value at each call (_global_arrays)
        self.arrays = list(arrays)
        # (dict or cell, name, value) of each global or closure number compiled in as a
        # constant: where one changes, the translation is stale (dispatch.py, hot.py)
        self.frozen = list(frozen)
        self.runs = list(runs)   # the elementwise runs (loops.Run), defined in the source
        self._function, self._origins = function, None
        # the parameters of the user's function it takes, in order (then its own)
        self.params = [a.id for a in function.args.args if a.id not in (SEED, BUF, KEEP) and
                       a.id not in {n for _, n, _ in self.arrays}]
        self._kernel_trees = list(trees)

    def origins(self):
        if self._origins is None:
            self._origins = emit.line_origins(self._kernel_trees + [self._function], self.source)
        return self._origins


def translate(compiled, variant, optional=frozenset(), lists=frozenset(), predict=False):
    """``compiled``'s gradient as Numba source (a Translation), or raises Refused.
    ``optional``: the names whose zero number is written None (zeros.py), with
    ``predict`` also those zeros.predicted finds (``Translation.optional``: all of them);
    ``lists``: the tapes (``_tape_k``) kept lists (else one of numbers in a loop is an
    array: fixed_tapes.py)."""
    info, bindings = pipeline.with_trees(compiled).load   # trees of a gradient loaded from disk
    if compiled.tuple_output or compiled.functions:
        what = "a tuple output" if compiled.tuple_output else "a custom Function"
        raise Refused(what, _first_origin(compiled.trees[0]))
    if variant == "grad":
        if compiled.gradient_forward is None:
            raise Refused("a gradient the NumPy code runs as two sweeps",
                          _first_origin(compiled.trees[0]))
        forward, seed_is_one = compiled.gradient_forward
        forward = clone(forward)
        seed = gast.Constant(value=1.0, kind=None) if seed_is_one else _call(
            "rt", "default_seed", [clone(forward.body[-1].value.elts[0])])
    else:
        forward = clone(compiled.trees[0])
        seed = _name(SEED) if variant == "seeded" else _call(
            "rt", "default_seed", [_name(OUT)])
    backward = clone(compiled.trees[1])
    body = _compose(forward, backward, seed, variant)
    name = "jit_" + re.sub(r"\W", "_", backward.name[:-len("_backward")])
    args = clone(forward.args)   # every parameter positional (dispatch.py passes defaults)
    args.args = args.posonlyargs + args.args + args.kwonlyargs
    args.posonlyargs, args.kwonlyargs, args.kw_defaults, args.defaults = [], [], [], []
    if variant != "value":
        extra = [SEED, BUF, KEEP] if variant == "seeded" else [BUF]
        args.args = args.args + [_name(n, gast.Param()) for n in extra]
    rewrite = _Rewrite(_first_origin(compiled.trees[0]), _initial_values(body),
                       _is_builtin("abs", body, info, bindings))
    body = rewrite.block(body)
    arrays = fixed_tapes.fix(body, compiled.scalars, lists)
    tape_lists = [_assign(key, gast.List(elts=[], ctx=gast.Load()))
                  for key in sorted(rewrite.tapes - arrays)]
    function = gast.FunctionDef(name=name, args=args, body=tape_lists + body, decorator_list=[],
                                returns=None, type_comment=None, type_params=[])
    function.body = _zero_adjoints_typed(function.body)
    displays.as_tuples(function)
    calls.scalar_methods(function)
    inplace.rewrite(function, compiled.scalars)
    if predict:
        optional = frozenset(optional) | zeros.predicted(function)
    if optional:
        try:
            zeros.optional_zeros(function, optional)
        except zeros.Unsupported as exc:
            raise Refused(str(exc), _first_origin(compiled.trees[0])) from None
    arrays = _global_arrays(function, info, bindings)
    if arrays:   # parameters after the user's (before _sg_seed, _sg_buf, _sg_keep)
        at = next((k for k, a in enumerate(function.args.args) if a.id in (SEED, BUF, KEEP)),
                  len(function.args.args))
        function.args.args[at:at] = [_name(n, gast.Param()) for _, n, _ in arrays]
    kernels = loops.fuse(function, compiled.scalars)
    python_numbers.rewrite(function, compiled.scalars)
    frozen = []
    namespace = _namespace(function, info, bindings, {k.name for k in kernels}, frozen)
    trees = [t for k in kernels for t in (k.loop, k.original)]
    _checked_math(trees + [function], namespace)
    translation = Translation(name, emit.to_source(trees + [function]), namespace, function,
                              kernels, trees, frozen, arrays)
    translation.optional = frozenset(optional)
    return translation


def _initial_values(body):
    """id -> value of each top-level ``x = None`` that must stay: the first appearance of
    ``x`` after it, in source order, reads it (tape.initial_values: a loop pushes ``x``
    before binding it; Numba refuses a name read in a loop before any binding). A release
    (release.py: after the name's last appearance) and an initial value bound before it
    is read are dropped, as before. The value is False for a flag (``_is_flag``), else None."""
    found = {}
    for k, s in enumerate(body):
        if not (isinstance(s, gast.Assign) and isinstance(s.value, gast.Constant) and
                s.value.value is None and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name)):
            continue
        n = s.targets[0].id
        updated = {id(a.target) for t in body[k + 1:] for a in gast.walk(t)
                   if isinstance(a, gast.AugAssign)}   # ``x += v`` reads x
        first = next((node for t in body[k + 1:] for node in _in_order(t)
                      if isinstance(node, gast.Name) and node.id == n), None)
        if first is not None and (isinstance(first.ctx, gast.Load) or id(first) in updated):
            found[id(s)] = False if _is_flag(n, body, s) else None
    return found


def _in_order(node):
    """The nodes of ``node`` in source order (an assignment's value before its targets)."""
    if isinstance(node, gast.AugAssign):
        yield node
        yield from _in_order(node.target)
        yield from _in_order(node.value)
        return
    if isinstance(node, (gast.Assign, gast.AnnAssign)):
        yield node
        if node.value is not None:
            yield from _in_order(node.value)
        for t in getattr(node, "targets", None) or [node.target]:
            yield from _in_order(t)
        return
    if isinstance(node, gast.For):
        yield node
        yield from _in_order(node.iter)
        yield from _in_order(node.target)
        for s in node.body + node.orelse:
            yield from _in_order(s)
        return
    yield node
    for child in gast.iter_child_nodes(node):
        yield from _in_order(child)


def _is_flag(n, body, initial):
    """Whether name ``n`` is a loop's flag: every other binding of it ``n = True``,
    ``n = False`` or ``n = pop()``, every read a condition (``if n``, ``while n``,
    ``not n``) or a push. Then None and False read alike wherever it is read."""
    tree = gast.Module(body=body, type_ignores=[])
    allowed = set()   # the Name nodes of n a read or binding of the kinds above may be
    for node in gast.walk(tree):
        if isinstance(node, (gast.If, gast.While)):
            allowed.add(id(node.test))
        elif isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not):
            allowed.add(id(node.operand))
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
                node.func.id == "push" and len(node.args) == 1:
            allowed.add(id(node.args[0]))
        elif isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name) and (
                    node is initial or
                    (isinstance(node.value, gast.Constant) and type(node.value.value) is bool) or
                    (isinstance(node.value, gast.Call) and isinstance(node.value.func, gast.Name)
                     and node.value.func.id == "pop" and not node.value.args)):
            allowed.add(id(node.targets[0]))
    return all(id(node) in allowed for node in gast.walk(tree)
               if isinstance(node, gast.Name) and node.id == n)


def _zero_adjoints_typed(body):
    """``v = 0.0 ... if _jrt.has_grad(s): v = <an array>`` (a gradient that starts as a
    number and becomes an array where ``s`` is not zero: Numba types one name one way)
    at the function's top level becomes ``_jrt.need_grad(s)`` and the branch's body:
    need_grad raises ZeroAdjoint where ``s`` is a zero number, and that call runs the
    NumPy gradient (dispatch.py), so the result is the NumPy gradient's either way.
    Where ``s`` is that zero for certain (its last binding, at the top level, is ``s = 0``:
    a dead store's adjoint), the branch, which the NumPy code never runs, is dropped (else
    need_grad would hand every call to the NumPy gradient)."""
    zeros, certain, out = set(), set(), []
    for s in body:
        zero = isinstance(s, gast.Assign) and len(s.targets) == 1 and \
            isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Constant) and \
            s.value.value == 0 and type(s.value.value) in (int, float)
        if zero:
            zeros.add(s.targets[0].id)
        if isinstance(s, gast.If) and not s.orelse and _is_has_grad(s.test) and \
                s.test.args[0].id in certain:
            continue
        certain -= {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and
                    not isinstance(n.ctx, gast.Load)}
        if zero:
            certain.add(s.targets[0].id)
        if isinstance(s, gast.If) and not s.orelse and _is_has_grad(s.test) and any(
                isinstance(t, gast.Assign) and any(isinstance(n, gast.Name) and n.id in zeros
                                                   for n in t.targets) for t in s.body):
            check = gast.Expr(value=_call("_jrt", "need_grad", [s.test.args[0]]))
            anno.setanno(check, Static.ORIGIN, anno.getanno(s, Static.ORIGIN))
            out += [check] + s.body
            continue
        out.append(s)
    return out


def _is_has_grad(test):
    return isinstance(test, gast.Call) and isinstance(test.func, gast.Attribute) and \
        isinstance(test.func.value, gast.Name) and test.func.value.id == "_jrt" and \
        test.func.attr == "has_grad" and len(test.args) == 1 and not test.keywords and \
        isinstance(test.args[0], gast.Name)


def translate_jvp(compiled, fn):
    """The tangent program ``compiled`` (forward_api.CompiledJVP) of ``fn`` as Numba source
    (a Translation), or raises Refused. Its text is parsed again (the CompiledJVP keeps no
    tree): a refusal names ``fn``'s first line."""
    import textwrap
    import types
    from srcgrad.parse import Origin
    code = fn.__code__
    origin = Origin(code.co_filename, code.co_firstlineno, 0, None, fn.__name__)
    tree = gast.parse(textwrap.dedent(compiled.source)).body[0]
    name = "jit_" + re.sub(r"\W", "_", tree.name)
    rewrite = _Rewrite(origin)
    body = rewrite.block(tree.body)
    if rewrite.tapes:
        raise Refused("a tape in a tangent program", origin)
    function = gast.FunctionDef(name=name, args=tree.args, body=body, decorator_list=[],
                                returns=None, type_comment=None, type_params=[])
    runs = loops.fuse(function, ())
    python_numbers.rewrite(function)
    loaded = compiled.function
    cells = dict(zip(loaded.__code__.co_freevars, loaded.__closure__ or ()))
    scope = types.SimpleNamespace(closure=cells, globals=loaded.__globals__)
    frozen = []
    namespace = _namespace(function, scope, {}, {r.name for r in runs}, frozen)
    trees = [t for r in runs for t in (r.loop, r.original)]
    _checked_math(trees + [function], namespace)
    return Translation(name, emit.to_source(trees + [function]), namespace, function, runs, trees,
                       frozen)


def _compose(forward, backward, seed_value, variant):
    """Forward's body, the seed, backward's body (pipeline._compose's order), returning
    the gradients (and the output first, except for "grad")."""
    seed = backward.args.args[0].id
    out = forward.body[-1].value.elts[0]
    body = forward.body[:-1]
    if variant != "grad":
        body.append(_assign(OUT, out))
    body.append(_assign(seed, seed_value))
    back = [s for s in backward.body if not (isinstance(s, gast.Assign) and isinstance(s.value, gast.Name)
                                            and s.value.id == "saved")]
    if variant == "grad" and isinstance(seed_value, gast.Constant):
        back = unit_seed.known_seed(back, seed)
    grads = gast.Tuple(elts=back[-1].value.elts, ctx=gast.Load())
    if variant != "value":
        if isinstance(grads.elts[0], gast.Constant) and grads.elts[0].value is None:
            # into's None means "written into the buffer": the caller would hand back the
            # buffer's uninitialised memory for a gradient that is None
            raise Refused("a gradient that no path from the input reaches (None)",
                          _first_origin(forward))
        grads.elts[0] = _call("_jrt", "into", [_name(BUF), grads.elts[0]])
    if variant == "seeded":
        grads = gast.Tuple(elts=[_call("_jrt", "out_if", [_name(KEEP), _name(OUT)]),
                                 _call("_jrt", "same_shape", [_name(OUT), _name(SEED)]), grads],
                           ctx=gast.Load())
    elif variant == "value":
        grads = gast.Tuple(elts=[_name(OUT), grads], ctx=gast.Load())
    back[-1] = gast.Return(value=grads)
    return body + back


class _Rewrite:
    """The statement rewrites of the module docstring, with the user's line of each."""

    def __init__(self, origin, initials=None, builtin_abs=False):
        self.tapes = set()
        self.builtin_abs = builtin_abs   # ``abs`` is Python's: ``abs(v)`` is _jrt.builtin_abs
        self.origin = origin   # the user's statement, else the function's first
        self.initials = initials or {}   # id of an initial ``x = None`` -> its value (_initial_values)

    def block(self, body):
        out = []
        for s in body:
            origin = anno.getanno(s, Static.ORIGIN)
            outer = self.origin
            if origin is not None:
                self.origin = origin
            out.extend(self.statement(s))
            self.origin = outer
        return out

    def refuse(self, construct):
        raise Refused(construct, self.origin)

    def statement(self, s):
        if isinstance(s, gast.Assign):
            if isinstance(s.value, gast.Constant) and s.value.value is None and \
                    all(isinstance(t, gast.Name) for t in s.targets):
                if id(s) in self.initials:
                    s.value = gast.Constant(value=self.initials[id(s)], kind=None)
                    return [s]
                return []   # a release
            if len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
                target = s.targets[0].id
                if target == "tape" and isinstance(s.value, gast.List) and not s.value.elts:
                    return []
                if target in ("push", "pop") and isinstance(s.value, gast.Attribute) and \
                        isinstance(s.value.value, gast.Name) and s.value.value.id == "tape":
                    return []
                if target == "xp" and optimize.is_rt_call(s.value, "namespace"):
                    return []
            if len(s.targets) == 1 and isinstance(s.value, gast.Call) and \
                    isinstance(s.value.func, gast.Name) and s.value.func.id == "pop" \
                    and not s.value.args:   # v = pop(), or x[i] = pop() restoring a write
                key = tapes.key_of(s)
                if key is None:
                    self.refuse("a tape pop without its key")
                s.targets = [self.expression(s.targets[0])]
                s.value = _call(self._tape(key), "pop", [])
                return [s]
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                isinstance(s.value.func, gast.Name) and s.value.func.id == "push":
            key = tapes.key_of(s)
            if key is None or len(s.value.args) != 1:
                self.refuse("a tape push without its key")
            value = s.value.args[0]
            if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and \
                    isinstance(value.slice, gast.Slice) and value.slice.lower is None and \
                    value.slice.step is None and value.slice.upper is not None:
                value = _call("_jrt", "range_head", [value.value, value.slice.upper])
            s.value = _call(self._tape(key), "append", [self.expression(value)])
            return [s]
        if isinstance(s, (gast.With, gast.AsyncWith, gast.Try, gast.Raise, gast.Global,
                          gast.Nonlocal, gast.Delete, gast.ClassDef, gast.FunctionDef,
                          gast.AsyncFunctionDef, gast.AsyncFor, gast.Assert, gast.Import,
                          gast.ImportFrom)):
            self.refuse(f"a {type(s).__name__.lower()} statement")
        if isinstance(s, gast.If) and optimize.is_rt_call(s.test, "container_op"):
            # ``a + b`` of two lists concatenates, ``a * b`` of a list repeats: on the
            # arrays and numbers compiled code holds container_op is False (containers.py),
            # and the container branch (rt.seq_repeat_vjp, ...) is never typed
            s.test = self.expression(s.test)
            s.body = [gast.Expr(value=_call("_jrt", "unreached", []))]
            s.orelse = self.block(s.orelse)
            return [s]
        if isinstance(s, (gast.For, gast.While, gast.If)):
            if isinstance(s, gast.For):
                s.target = self.expression(s.target)
                s.iter = self.expression(s.iter)
            else:
                s.test = self.expression(s.test)
            s.body = self.block(s.body) or [gast.Pass()]
            s.orelse = self.block(s.orelse)
            return [s]
        for field in s._fields:
            value = getattr(s, field)
            if isinstance(value, gast.expr):
                setattr(s, field, self.expression(value))
            elif isinstance(value, list):
                setattr(s, field, [self.expression(v) if isinstance(v, gast.expr) else v
                                   for v in value])
        return [s]

    def _tape(self, key):
        name = "_tape_" + re.sub(r"\W", "_", str(key))
        self.tapes.add(name)
        return name

    def expression(self, e):
        for node in gast.walk(e):
            if isinstance(node, (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
                                 gast.GeneratorExp, gast.Dict, gast.Set, gast.JoinedStr,
                                 gast.Yield, gast.YieldFrom, gast.Await, gast.Starred,
                                 gast.NamedExpr)):
                self.refuse(_describe(node))
            if isinstance(node, gast.Compare) and any(isinstance(op, (gast.Is, gast.IsNot))
                                                      for op in node.ops):
                self.refuse("an `is` comparison (a release `x = None` is dropped here)")
            if isinstance(node, gast.Call) and any(k.arg is None for k in node.keywords):
                self.refuse("a call with **keywords")
            if isinstance(node, gast.Name) and node.id in ("tape", "push", "pop") and \
                    isinstance(node.ctx, gast.Load):
                self.refuse(f"the tape used as a value ({node.id})")
        return _Expressions(self).visit(e)


class _Expressions(gast.NodeTransformer):
    def __init__(self, rewrite):
        self.rewrite = rewrite

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.value, gast.Name):
            if node.value.id == "xp":
                node.value = _name("np")
            elif node.value.id == "rt":
                if node.attr not in HELPERS:
                    self.rewrite.refuse(f"the srcgrad runtime helper rt.{node.attr}")
                node.value = _name("_jrt")
                if node.attr == "power":   # NumPy's inf at 0.0 ** -1, never checked
                    node.attr = "numpy_power"   # as _jrt.power is (_PythonNumbers)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.Pow):   # Python's int ** int does not overflow; Numba's does
            return _call("_jrt", "power", [node.left, node.right])
        if isinstance(node.op, gast.MatMult):   # Numba's takes no batch (products.py)
            return _call("_jrt", "matmul", [node.left, node.right])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if _is_jrt(node.func, "check_unshared"):
            node.args = node.args[:2]   # the value written and the other (not the error)
            node.keywords = []
            return node
        if _is_jrt(node.func, "check_sequence"):
            node.args = node.args[:1]   # the value looped over (not the error)
            node.keywords = []
            return node
        if _is_jrt(node.func, "check_array_operand"):
            node.args = node.args[:1]   # the value (the error is a structure's)
            node.keywords = []
            return node
        if isinstance(node.func, gast.Attribute) and node.func.attr in _JOINS and \
                isinstance(node.func.value, gast.Name) and node.func.value.id == "np" and \
                node.args and isinstance(node.args[0], gast.List):
            # Numba joins a tuple of arrays, not a list: the same values to NumPy
            node.args[0] = gast.Tuple(elts=node.args[0].elts, ctx=gast.Load())
            return node
        f = node.func
        if isinstance(f, gast.Attribute) and f.attr == "matmul" and isinstance(f.value, gast.Name) \
                and f.value.id == "np" and len(node.args) == 2 and not node.keywords:
            return _call("_jrt", "matmul", node.args)   # Numba has no np.matmul
        numba_form = calls.numba_form(node)
        if numba_form is not None:
            return numba_form
        if isinstance(node.func, gast.Name) and node.func.id == "reversed" and len(node.args) == 1:
            return _call("_jrt", "rev_range", node.args)
        if isinstance(node.func, gast.Name) and node.func.id == "abs" and len(node.args) == 1 \
                and not node.keywords and self.rewrite.builtin_abs:
            return _call("_jrt", "builtin_abs", node.args)   # Numba's abs takes no array
        f = node.func
        if isinstance(f, gast.Attribute) and f.attr == "norm" and isinstance(f.value, gast.Attribute) \
                and f.value.attr == "linalg" and isinstance(f.value.value, gast.Name) and \
                f.value.value.id == "np" and len(node.args) == 1 and not node.keywords:
            return _call("_jrt", "norm", node.args)   # NumPy's formula (Numba's differs)
        return node


_JOINS = ("stack", "concatenate", "hstack", "vstack", "dstack", "column_stack")


def _is_jrt(func, helper):
    return isinstance(func, gast.Attribute) and func.attr == helper and \
        isinstance(func.value, gast.Name) and func.value.id == "_jrt"


def _describe(node):
    return {"Lambda": "a lambda", "ListComp": "a list comprehension", "Dict": "a dict",
            "Set": "a set", "JoinedStr": "an f-string", "Starred": "a starred expression",
            "GeneratorExp": "a generator expression"}.get(type(node).__name__,
                                                           f"a {type(node).__name__}")


def _first_origin(tree):
    for stmt in optimize.walk_statements(tree.body):
        origin = anno.getanno(stmt, Static.ORIGIN)
        if origin is not None:
            return origin
    return None
