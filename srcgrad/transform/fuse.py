"""Fuse runs of elementwise statements into one kernel each (``grad(f, fuse=True)``).

A run of consecutive assignments ``name = <elementwise expression>`` in a
generated sweep (arithmetic operators and NumPy ufuncs over names and numbers,
and the adjoint helpers ``rt.unbroadcast``/``rt.unreduce`` that are identities
when shapes agree) becomes a function of its own, written against ``xp``::

    def fused_sin_x(x):
        sin_x = xp.sin(x)
        ...
        return sin_x, exp_neg_x_pow_2

and the run itself becomes::

    fused = rt.fused_kernel(fused_sin_x, (x,), ((0,), (0,)), ())
    if fused:
        sin_x, exp_neg_x_pow_2 = fused(x)
    else:
        <the original statements>

``rt.fused_kernel`` checks at run time what the kernel assumes (every array
input has one shape and one floating dtype, each unbroadcast target has that
shape, each output depends on such an array) and returns ``cupy.fuse`` of the
function on CuPy, or None, so the original statements run. One generated
gradient still serves NumPy and CuPy. The outputs are the names the rest of the
function reads; values used only inside the run never reach memory on the GPU.
"""

import copy

import gast
import numpy

from srcgrad.ast_util import reads, rewrite_blocks
from srcgrad.transform.base import local_names
from srcgrad import ast_util


_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)
_IDENTITY_HELPERS = ("unbroadcast", "unreduce")
_MIN_OPERATIONS = 2


def transform(function, resolve, namer, reductions=True):
    """Fuse the elementwise runs of ``function`` (a gast FunctionDef), in place.

    Args:
        resolve: name -> live object of the user's scope (raises NameError).
        namer: the gradient's Namer, for the kernel and guard names.
        reductions: end a forward kernel in its np.sum (cupy.fuse reduces in the kernel;
            CompileOptions.fuse_reductions).

    Returns:
        The kernel FunctionDefs to emit beside ``function``.
    """
    local = local_names(function)
    fuser = _Fuser(function, resolve, namer, local)
    fuser.reductions = reductions
    function.body = fuser.block(function.body)
    return fuser.kernels


class _Fuser:
    def __init__(self, function, resolve, namer, local):
        self.function = function
        self.resolve = resolve
        self.namer = namer
        self.local = local
        self.kernels = []
        self.reductions = True

    # ----- Finding runs -----

    def block(self, body):
        out = []
        run = []
        for s in body:
            if not isinstance(s, gast.FunctionDef):
                rewrite_blocks(s, self.block)
            if _is_comment(s) and run:
                run.append(s)
                continue
            if self.fusable_statement(s, run):
                run.append(s)
                continue
            if self.is_sum_of_run(s, run):
                fused = self.flush(run + [s])
                if fused[-1] is not s:
                    out += fused
                    run = []
                    continue
            out += self.flush(run)
            run = [s] if self.fusable_statement(s, []) else []
            if not run:
                out.append(s)
        out += self.flush(run)
        return out

    def is_sum_of_run(self, s, run):
        """``total = np.sum(v)`` of a value ``v`` the run computes (cupy.fuse can end in it)."""
        if not (self.reductions and run and isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and self.is_sum(s.value)):
            return False
        return s.value.args[0].id in {t.targets[0].id for t in run if not _is_comment(t)}

    def is_sum(self, value):
        return (isinstance(value, gast.Call) and not value.keywords and len(value.args) == 1
                and isinstance(value.args[0], gast.Name)
                and self.function_named(value.func) is numpy.sum)

    def fusable_statement(self, s, run):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name)):
            return False
        value = s.value
        if isinstance(value, (gast.Name, gast.Constant)):
            return False
        if not self.fusable_expression(value, []):
            return False
        return any(isinstance(n, gast.Name) for n in ast_util.walk(value))

    def fusable_expression(self, node, targets):
        if isinstance(node, gast.Name):
            return True
        if isinstance(node, gast.Constant):
            return type(node.value) in (int, float)
        if isinstance(node, gast.BinOp):
            return (isinstance(node.op, _ARITHMETIC) and self.fusable_expression(node.left, targets)
                    and self.fusable_expression(node.right, targets))
        if isinstance(node, gast.UnaryOp):
            return isinstance(node.op, (gast.USub, gast.UAdd)) and self.fusable_expression(
                node.operand, targets)
        if isinstance(node, gast.Call) and not node.keywords:
            helper = self.identity_helper(node)
            if helper is not None:
                targets.append(helper)
                return self.fusable_expression(node.args[0], targets)
            ufunc = self.ufunc(node.func)
            return (ufunc is not None and len(node.args) == ufunc.nin
                    and all(self.fusable_expression(a, targets) for a in node.args))
        return False

    def identity_helper(self, call):
        """The target name of ``rt.unbroadcast(g, t)`` / ``rt.unreduce(g, t, None, False)``."""
        f = call.func
        if not (isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name)
                and f.value.id == "rt" and f.attr in _IDENTITY_HELPERS):
            return None
        args = call.args
        if not args or len(args) < 2 or not isinstance(args[1], gast.Name):
            return None
        if f.attr == "unbroadcast" and len(args) == 2:
            return args[1].id
        if f.attr == "unreduce" and len(args) == 4 and all(
                isinstance(a, gast.Constant) and a.value in (None, False) for a in args[2:]) \
                and args[2].value is None and args[3].value is False:
            return args[1].id
        return None

    def ufunc(self, func):
        """The NumPy ufunc (one output) that ``func`` names, or None."""
        obj = self.function_named(func)
        if isinstance(obj, numpy.ufunc) and obj.nout == 1 and getattr(numpy, obj.__name__, None) is obj:
            return obj
        return None

    def function_named(self, func):
        """The NumPy function ``func`` denotes (``np.sin``, ``xp.sin``, ``cupy.sin``), or None."""
        path = []
        while isinstance(func, gast.Attribute):
            path.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name):
            return None
        if func.id == "xp":
            obj = numpy
        elif func.id in self.local:
            return None
        else:
            try:
                obj = self.resolve(func.id)
            except NameError:
                return None
        for attr in reversed(path):
            obj = getattr(obj, attr, None)
        module = getattr(obj, "__module__", None) or type(obj).__module__
        if module.startswith("cupy"):
            obj = getattr(numpy, getattr(obj, "__name__", ""), None)
        return obj

    # ----- Writing a kernel -----

    def flush(self, run):
        """The run as written, or as a kernel call with the run as its fallback."""
        end = len(run)
        while end and _is_comment(run[end - 1]):
            end -= 1
        return self.fuse_run(run[:end]) + run[end:]  # trailing comments stay outside

    def fuse_run(self, run):
        statements = [s for s in run if not _is_comment(s)]
        if sum(_operations(s.value) for s in statements) < _MIN_OPERATIONS:
            return run
        inputs, targets, outputs, deps, shapes = self.signature(run)
        if not outputs:
            return run
        total = statements[-1]
        if self.is_sum(total.value) and outputs != [total.targets[0].id]:
            return run  # cupy.fuse ends in a reduction only when it is the one result
        kernel_name = self.namer.new(f"fused_{statements[0].targets[0].id}")
        guard = self.namer.new("fused")
        body = [self.kernel_statement(s) for s in run]
        body.append(gast.Return(value=_tuple_of(outputs)))
        self.kernels.append(gast.FunctionDef(
            name=kernel_name, args=_arguments(inputs), body=body, decorator_list=[], returns=None,
            type_comment=None, type_params=[]))
        deps_text = "(" + ", ".join("(" + "".join(f"{i}, " for i in d) + ")"
                                    for d in deps + list(shapes.values())) + ",)"
        check = _parse(f"{guard} = rt.fused_kernel({kernel_name}, ({''.join(n + ', ' for n in inputs)}), "
                        f"{deps_text}, ({''.join(t + ', ' for t in targets)}))")
        call = _parse(f"{', '.join(outputs)} = {guard}({', '.join(inputs)})")
        for name, on in shapes.items():  # only its shape is read: any input of that shape
            call += _parse(f"{name} = rt.first_array({', '.join(inputs[i] for i in on)},)")
        branch = gast.If(test=gast.Name(id=guard, ctx=gast.Load(), annotation=None,
                                        type_comment=None),
                         body=call, orelse=list(run))
        return check + [branch]

    def signature(self, run):
        """Inputs (read before written), unbroadcast targets, live outputs, and output deps."""
        inputs, targets, assigned, checks = [], [], [], []
        depends = {}
        for s in run:
            if _is_comment(s):
                continue
            found = []
            self.fusable_expression(s.value, found)
            for t in found:
                if t in depends:  # computed in the run: it has the kernel's shape if
                    checks.append(tuple(sorted(depends[t])))  # it depends on an array
                elif t not in targets:
                    targets.append(t)
            reads = set()
            for n in _value_reads(s.value, self):
                if n in depends:
                    reads |= depends[n]
                else:
                    if n not in inputs:
                        inputs.append(n)
                    reads.add(inputs.index(n))
            name = s.targets[0].id
            depends[name] = reads
            if name not in assigned:
                assigned.append(name)
        run_ids = {id(n) for s in run for n in ast_util.walk(s)}
        shape_reads = {id(c.args[0]) for c in ast_util.walk(self.function) if _is_shape_of(c)}
        read_elsewhere, shape_read = set(), set()
        for n in ast_util.walk(self.function):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in run_ids:
                (shape_read if id(n) in shape_reads else read_elsewhere).add(n.id)
        outputs = [n for n in assigned if n in read_elsewhere or n in inputs]
        shapes = {n: tuple(sorted(depends[n])) for n in assigned
                  if n in shape_read and n not in outputs}
        deps = [tuple(sorted(depends[n])) for n in outputs]
        return inputs, targets, outputs, deps + checks, shapes

    def kernel_statement(self, s):
        if _is_comment(s):
            return s
        new = gast.Assign(targets=[gast.Name(id=s.targets[0].id, ctx=gast.Store(), annotation=None,
                                             type_comment=None)],
                          value=self.kernel_expression(s.value), type_comment=None)
        return new

    def kernel_expression(self, node):
        if isinstance(node, (gast.Name, gast.Constant)):
            return gast.Name(id=node.id, ctx=gast.Load(), annotation=None, type_comment=None) \
                if isinstance(node, gast.Name) else gast.Constant(value=node.value, kind=None)
        if isinstance(node, gast.BinOp):
            left, right = self.kernel_expression(node.left), self.kernel_expression(node.right)
            if isinstance(left, gast.Constant) and isinstance(right, gast.Constant):
                folded = _fold(left.value, node.op, right.value)
                if folded is not None:
                    return gast.Constant(value=folded, kind=None)
            if isinstance(node.op, gast.Pow) and isinstance(right, gast.Constant) \
                    and isinstance(left, gast.Name) and right.value in (1, 2):
                # x ** 2 is exactly x * x, and a multiply is far cheaper than powf on a GPU.
                if right.value == 1:
                    return left
                return gast.BinOp(left=left, op=gast.Mult(), right=copy.deepcopy(left))
            return gast.BinOp(left=left, op=node.op, right=right)
        if isinstance(node, gast.UnaryOp):
            return gast.UnaryOp(op=node.op, operand=self.kernel_expression(node.operand))
        if self.identity_helper(node) is not None:
            return self.kernel_expression(node.args[0])
        function = numpy.sum if self.is_sum(node) else self.ufunc(node.func)
        func = gast.Attribute(value=gast.Name(id="xp", ctx=gast.Load(), annotation=None,
                                              type_comment=None),
                              attr=function.__name__, ctx=gast.Load())
        return gast.Call(func=func, args=[self.kernel_expression(a) for a in node.args], keywords=[])


def _fold(a, op, b):
    """``a op b`` for two integer constants (``2 - 1`` in a power rule), else None."""
    if type(a) is not int or type(b) is not int:
        return None
    if isinstance(op, gast.Add):
        return a + b
    if isinstance(op, gast.Sub):
        return a - b
    if isinstance(op, gast.Mult):
        return a * b
    return None


def _parse(text):
    return gast.parse(text).body


def _value_reads(value, fuser):
    """Names an expression reads as values (unbroadcast targets only give a shape)."""
    if isinstance(value, gast.Name):
        return [value.id]
    if isinstance(value, gast.Call) and fuser.identity_helper(value) is not None:
        return _value_reads(value.args[0], fuser)
    names = []
    for child in gast.iter_child_nodes(value):
        if isinstance(child, gast.expr):
            if isinstance(value, gast.Call) and child is value.func:
                continue
            names += _value_reads(child, fuser)
    return names


def _operations(value):
    """Array operations in an expression (the identity helpers cost nothing)."""
    count = 0
    for n in ast_util.walk(value):
        if isinstance(n, (gast.BinOp, gast.UnaryOp)):
            count += 1
        elif isinstance(n, gast.Call) and not (isinstance(n.func, gast.Attribute)
                                               and isinstance(n.func.value, gast.Name)
                                               and n.func.value.id == "rt"):
            count += 1
    return count


def _is_shape_of(node):
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name) and node.func.value.id == "rt"
            and node.func.attr == "shape_of" and len(node.args) == 1
            and isinstance(node.args[0], gast.Name))


def _is_comment(s):
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) and isinstance(
        s.value.value, str)


def _tuple_of(names):
    elts = [gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None) for n in names]
    return elts[0] if len(elts) == 1 else gast.Tuple(elts=elts, ctx=gast.Load())


def _arguments(names):
    return gast.arguments(
        args=[gast.Name(id=n, ctx=gast.Param(), annotation=None, type_comment=None) for n in names],
        posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])



# ----- Recomputing saved elementwise values in the backward sweep -----

def rematerialize(forward, backward, resolve):
    """Recompute saved elementwise values in ``backward`` instead of saving them.

    A value is recomputed when the forward sweep binds it once, at its top level,
    from an elementwise expression of parameters it never rebinds or writes and of
    other such values, all available in the backward sweep. Its slot in the saved
    tuple becomes ``None``; its statements are copied in front of the backward
    statement that first reads it, where fusion makes them part of the adjoint's
    kernel: on the GPU, reading ``x`` again costs less than writing and reading
    ``sin(x)``. (On NumPy it costs the recomputation.) Changes both trees in place.
    """
    saved_out, saved_in = _saved_tuples(forward, backward)
    if saved_out is None:
        return
    checker = _Fuser(forward, resolve, None, local_names(forward))
    stores = {}
    for n in ast_util.walk(forward):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
        if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
            base = n.value
            while isinstance(base, (gast.Subscript, gast.Attribute)):
                base = base.value
            if isinstance(base, gast.Name):
                stores[base.id] = stores.get(base.id, 0) + 2
    params = {a.id for a in forward.args.args + forward.args.posonlyargs + forward.args.kwonlyargs}
    definition = {}
    for s in forward.body:
        if checker.fusable_statement(s, []) and stores.get(s.targets[0].id) == 1 and not any(
                checker.identity_helper(c) is not None for c in ast_util.walk(s.value)
                if isinstance(c, gast.Call)):
            definition[s.targets[0].id] = s
    available = {}  # saved names the backward receives (unpacked by the same name)
    for out, into in zip(saved_out, saved_in):
        if isinstance(out, gast.Name) and isinstance(into, gast.Name) and out.id == into.id:
            available[out.id] = out
    leaves = {p for p in params if p not in stores and p in available}

    def chain(name, seen):
        """Forward statements computing ``name`` from leaves, in order; None if impossible."""
        if name in leaves or name in seen:
            return []
        s = definition.get(name)
        if s is None:
            return None
        out = []
        for read in _value_reads(s.value, checker):
            part = chain(read, seen)
            if part is None:
                return None
            out += part
        seen.add(name)
        return out + [s]

    recompute = {}
    for name in available:
        if name in definition:
            steps = chain(name, set())
            if steps is not None:
                recompute[name] = steps
    if not recompute:
        return
    for k, out in enumerate(saved_out):
        if isinstance(out, gast.Name) and out.id in recompute:
            saved_out[k] = gast.Constant(value=None, kind=None)
    done = set()
    body = []
    for s in backward.body:
        for name in sorted(reads(s) & set(recompute) - done, key=list(recompute).index):
            for step in recompute[name]:
                target = step.targets[0].id
                if target not in done:
                    body.append(copy.deepcopy(step))
                    done.add(target)
        body.append(s)
    backward.body = body


def _saved_tuples(forward, backward):
    """The elements of the forward's saved tuple and of the backward's unpacking of it."""
    ret = forward.body[-1] if forward.body else None
    if not (isinstance(ret, gast.Return) and isinstance(ret.value, gast.Tuple)
            and len(ret.value.elts) == 2 and isinstance(ret.value.elts[1], gast.Tuple)):
        return None, None
    for s in backward.body:
        if (isinstance(s, gast.Assign) and isinstance(s.value, gast.Name) and s.value.id == "saved"
                and len(s.targets) == 1):
            target = s.targets[0]
            if isinstance(target, gast.Tuple) and len(target.elts) == len(ret.value.elts[1].elts):
                return ret.value.elts[1].elts, target.elts
            return None, None
    return None, None
