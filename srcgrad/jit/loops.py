"""Runs of elementwise statements as one compiled loop (the jit form of transform/fuse.py).

A run of consecutive statements ``name = <elementwise expression>`` (arithmetic, unary
minus, NumPy ufuncs, ``_jrt.unbroadcast``/``_jrt.unreduce`` of a full reduction, which
are identities when shapes agree) and ``name op= <...>`` of a name the run computed,
in the jit function (translate.py's output), becomes a kernel::

    def _loop_dx(x, d):          # each array input read element by element
        ... for _i in range(n): x_ = x[_i]; <the statements on numbers>; out[_i] = dx

and the run becomes::

    <the run's statements on numbers only (read no array), hoisted>
    if _jrt.fusable((x, d), (targets,)) and _jrt.any_array(x):
        dx, = _loop_dx(x, d)
    else:
        <the run's other statements, as they were>

``_jrt.fusable`` checks what the kernel assumes (runtime.py): every array input is a
float64 C-contiguous array of one shape, each unbroadcast target has that shape, each
output depends on an array (``any_array``, decided when Numba types the call). Else
the statements run as they were, so a result never changes. The kernel's statements
are the run's own, in order, on one element at a time: the same operations in the same
order as NumPy's elementwise passes. ``names_holding_numbers`` (pipeline.Compiled.scalars)
are the names known to hold one number: a statement reading only those is not part of
the loop.
"""

import gast
import numpy

from srcgrad.ast_util import reads as _all_reads, rewrite_blocks
from srcgrad.templates import clone

_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)
# NumPy ufuncs a loop calls as ``_jrt.vm_<name>`` (vmath.py: glibc's vector forms where
# they can be used), with their C names
VECTOR_UFUNCS = {"sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "exp2": "exp2",
                 "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
                 "log1p": "log1p", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
                 "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
                 "arccosh": "acosh", "arctanh": "atanh", "cbrt": "cbrt"}
_MIN_ARRAY_STATEMENTS = 2


def fuse(function, names_holding_numbers):
    """Rewrite ``function``'s elementwise runs in place; the kernel FunctionDefs to emit."""
    fuser = _Loops(function, set(names_holding_numbers))
    function.body = fuser.block(function.body)
    return fuser.kernels


class _Loops:
    def __init__(self, function, numbers):
        self.function = function
        self.numbers = numbers
        self.kernels = []

    def block(self, body):
        out, run = [], []
        for s in body:
            rewrite_blocks(s, self.block)
            if _is_comment(s):
                (run if run else out).append(s)
                continue
            if self.joins(s, run):
                run.append(s)
                continue
            out += self.flush(run)
            run = [s] if self.joins(s, []) else []
            if not run:
                out.append(s)
        return out + self.flush(run)

    # ----- Which statements -----

    def joins(self, s, run):
        if isinstance(s, gast.Assign):
            if len(s.targets) != 1 or not isinstance(s.targets[0], gast.Name):
                return False
            if isinstance(s.value, gast.Name):   # a copy: only of a number (no alias to break)
                constants = {_target(t) for t in run if isinstance(t, gast.Assign)
                             and isinstance(t.value, gast.Constant)}
                return s.value.id in self.numbers | constants
            return self.elementwise(s.value)
        if isinstance(s, gast.AugAssign):   # in place into an array the run made itself
            if not (isinstance(s.target, gast.Name) and isinstance(s.op, _ARITHMETIC)
                    and self.elementwise(s.value)):
                return False
            made = [t for t in run if not _is_comment(t) and _target(t) == s.target.id]
            copied = any(isinstance(t, gast.Assign) and isinstance(t.value, gast.Name)
                         and t.value.id == s.target.id for t in run)
            return bool(made) and isinstance(made[0], gast.Assign) and \
                not isinstance(made[0].value, gast.Name) and not copied
        return False

    def elementwise(self, node):
        if isinstance(node, gast.Name):
            return node.id not in ("np", "_jrt")
        if isinstance(node, gast.Constant):
            return type(node.value) in (int, float)
        if isinstance(node, gast.BinOp):
            return isinstance(node.op, _ARITHMETIC) and self.elementwise(node.left) and \
                self.elementwise(node.right)
        if isinstance(node, gast.UnaryOp):
            return isinstance(node.op, (gast.USub, gast.UAdd)) and self.elementwise(node.operand)
        if isinstance(node, gast.Call) and not node.keywords:
            if _identity_target(node) is not None:
                return self.elementwise(node.args[0])
            if _is_power(node):   # translate.py's a ** b
                return all(map(self.elementwise, node.args))
            f = node.func
            if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and f.value.id == "np":
                ufunc = getattr(numpy, f.attr, None)
                return isinstance(ufunc, numpy.ufunc) and ufunc.nout == 1 and \
                    ufunc.nin == len(node.args) and all(map(self.elementwise, node.args))
        return False

    # ----- Writing the loop -----

    def flush(self, run):
        statements = [s for s in run if not _is_comment(s)]
        if not statements:
            return run
        numbers, arrays, hoisted = set(self.numbers), [], []
        for s in statements:
            value_reads = reads(s.value) | ({s.target.id} if isinstance(s, gast.AugAssign) else set())
            if value_reads <= numbers and isinstance(s, gast.Assign):
                written = {_target(a) for a in arrays} | {n for a in arrays for n in reads(a.value)}
                if _target(s) in written:
                    return self.flush_split(run, s)
                numbers.add(_target(s))
                hoisted.append(s)
            else:
                numbers.discard(_target(s))
                arrays.append(s)
        if len(arrays) < _MIN_ARRAY_STATEMENTS:
            return run
        inputs, depends, targets, assigned = [], {}, [], []
        for s in arrays:
            deps = set()
            on_numbers = _scalar_statement(clone(s))   # an identity helper's target is not read
            for n in sorted(reads(on_numbers.value)) + ([s.target.id] if isinstance(s, gast.AugAssign) else []):
                if n in depends:
                    deps |= depends[n]
                else:
                    if n not in inputs:
                        inputs.append(n)
                    deps.add(n)
            for call in gast.walk(s.value):
                t = _identity_target(call) if isinstance(call, gast.Call) else None
                if t is not None:
                    deps.add(t)   # the value has the target's shape
                    if t not in targets:
                        targets.append(t)
            depends[_target(s)] = deps if isinstance(s, gast.Assign) else depends.get(_target(s), set()) | deps
            if _target(s) not in assigned:
                assigned.append(_target(s))
        if any(t in depends or t in assigned for t in targets):
            # An unbroadcast to a shape the run computes: two runs (a forward run and its
            # adjoint's, with no full reduction between them to end the first), else NumPy.
            first = _reads_a_computed_shape(arrays)
            if first is not None and first is not statements[0]:
                return self.flush_split(run, first)
            return run
        run_ids = {id(n) for s in run for n in gast.walk(s)}
        read_elsewhere = {n.id for n in gast.walk(self.function) if isinstance(n, gast.Name)
                          and isinstance(n.ctx, gast.Load) and id(n) not in run_ids}
        outputs = [n for n in assigned if n in read_elsewhere or n in inputs]
        if not outputs:
            return run
        params = inputs + [t for t in targets if t not in inputs]
        name = f"_run_{outputs[0]}_{len(self.kernels)}"
        deps = [tuple(params.index(d) for d in sorted(depends[n])) for n in outputs]
        self.kernels.append(Run(name, params, len(inputs), [params.index(t) for t in targets],
                                outputs, deps,
                                _loop(f"_loop{name}", params, inputs, arrays, outputs),
                                _original(f"_orig{name}", params, arrays, outputs)))
        call = gast.Assign(targets=[gast.Tuple(elts=[_name(n, gast.Store()) for n in outputs],
                                               ctx=gast.Store())],
                           value=gast.Call(func=_name(name), args=[_name(n) for n in params],
                                           keywords=[]), type_comment=None)
        comments = [s for s in run if _is_comment(s)][:1]
        return comments + hoisted + [call]

    def flush_split(self, run, s):
        k = run.index(s)
        return self.flush(run[:k]) + self.flush(run[k:])


def _reads_a_computed_shape(statements):
    """The first statement whose unbroadcast (or unreduce) targets a name an earlier
    statement of ``statements`` assigns, or None."""
    assigned = set()
    for s in statements:
        for call in gast.walk(s.value):
            if isinstance(call, gast.Call) and _identity_target(call) in assigned:
                return s
        assigned.add(_target(s))
    return None


def reads(node):
    """The variables ``node`` reads (not the modules ``np`` and ``_jrt``)."""
    return _all_reads(node) - {"np", "_jrt"}


class Run:
    """One run as a call ``outputs = name(*params)`` (params: its inputs, then the shapes
    its unbroadcasts target that it does not read): ``loop`` (a FunctionDef) computes it element by element,
    ``original`` runs its statements as they were; runtime.elementwise_run picks one
    when Numba types the call. ``deps``: per output, the params it depends on."""

    def __init__(self, name, params, n_inputs, targets, outputs, deps, loop, original):
        self.name, self.params, self.n_inputs = name, params, n_inputs
        self.targets = targets   # the positions of the unbroadcast targets among params
        self.outputs, self.deps, self.loop, self.original = outputs, deps, loop, original


def _loop(name, params, inputs, statements, outputs):
    """``def name(params): <one loop over the elements>; return outputs``."""
    args = [f"_p_{n}" for n in params]
    lines = [f"def {name}({', '.join(args)}):",
             f"    _ref = _jrt.first_array(({', '.join(args)},))",
             "    _n = _ref.size"]
    lines += [f"    _f_{n} = _jrt.flat(_p_{n})" for n in inputs]
    lines += [f"    _o_{n} = np.empty(_n)" for n in outputs]
    lines += ["    for _i in range(_n):"]
    lines += [f"        {n} = _jrt.item(_f_{n}, _i)" for n in inputs]
    lines += ["        pass"]
    lines += [f"        _o_{n}[_i] = {n}" for n in outputs]
    lines += [f"    return ({''.join(f'_o_{n}.reshape(_ref.shape), ' for n in outputs)})"]
    tree = gast.parse("\n".join(lines)).body[0]
    loop = tree.body[-2]
    at = len(inputs)
    loop.body[at:at + 1] = [_vector_calls(_scalar_statement(clone(s))) for s in statements]
    return tree


def _original(name, params, statements, outputs):
    """``def name(params): <statements>; return outputs``."""
    tree = gast.parse(f"def {name}({', '.join(params)}):\n    return "
                      f"({''.join(n + ', ' for n in outputs)})").body[0]
    tree.body[0:0] = [clone(s) for s in statements]
    return tree


def _scalar_statement(s):
    """``s`` on numbers: the identity helpers dropped (the guard checked their shapes)."""
    class Strip(gast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            return node.args[0] if _identity_target(node) is not None else node
    return Strip().visit(s)


def _vector_calls(s):
    """``np.sin(v)`` in ``s`` (a loop's statement on numbers) as ``_jrt.vm_sin(v)``."""
    for node in gast.walk(s):
        f = node.func if isinstance(node, gast.Call) else None
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                f.value.id == "np" and f.attr in VECTOR_UFUNCS and len(node.args) == 1 \
                and not node.keywords:
            node.func = gast.Attribute(value=_name("_jrt"), attr="vm_" + f.attr, ctx=gast.Load())
    return s


def _identity_target(call):
    """The target name of ``_jrt.unbroadcast(g, t)`` / ``_jrt.unreduce(g, t, None, False)``."""
    f = call.func
    if not (isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and f.value.id == "_jrt"):
        return None
    args = call.args
    if len(args) < 2 or not isinstance(args[1], gast.Name) or call.keywords:
        return None
    if f.attr == "unbroadcast" and len(args) == 2:
        return args[1].id
    if f.attr == "unreduce" and len(args) == 4 and isinstance(args[2], gast.Constant) and \
            args[2].value is None and isinstance(args[3], gast.Constant) and args[3].value is False:
        return args[1].id
    return None


def _is_power(call):
    f = call.func
    return isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
        f.value.id == "_jrt" and f.attr == "power" and len(call.args) == 2


def _target(s):
    return s.targets[0].id if isinstance(s, gast.Assign) else s.target.id


def _is_comment(s):
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) and isinstance(s.value.value, str)


def _name(n, ctx=None):
    return gast.Name(id=n, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def _tuple(names):
    return gast.Tuple(elts=[_name(n) for n in names], ctx=gast.Load())


def _call(owner, attr, args):
    return gast.Call(func=gast.Attribute(value=_name(owner), attr=attr, ctx=gast.Load()),
                     args=list(args), keywords=[])
