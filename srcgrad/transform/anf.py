"""A-normal form: every operation gets its own statement over names and constants.

Requires canonical control flow (see canonicalize.py). Afterwards each assignment
is ``name = OP(atoms)``, ``name[index] = atom`` or ``name = atom``; temporaries
are named after what they hold (``sin_x``, ``w_times_x``). Calls are resolved to
live objects (annotation PRIMITIVE). Conditions of ``if`` become names so the
adjoint can replay the branch taken; comparisons and boolean operators stay
whole, since they carry no gradient.

    y = np.sin(x) * w + b     becomes     sin_x = np.sin(x)
                                          sin_x_times_w = sin_x * w
                                          y = sin_x_times_w + b

Statements are handled here, one ``visit_<Node>`` per class (transform/base.py);
expressions in anf_expressions.py; list displays passed where a rule expects an
array in as_array.py.
"""

import ast
import builtins

import gast

from srcgrad import anno, grad_mode, runtime
from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.transform.anf_expressions import Expressions
from srcgrad.transform.base import Base, local_names
from srcgrad import ast_util
# Re-exported for the passes that import them from here (reverse.py).

Static = anno.Static



class ANF(Expressions, Base):
    """One ``visit_<Statement>`` per statement class (transform/base.py): each returns the
    statements it becomes, its operands' first. The expressions are anf_expressions.py's."""

    def __init__(self, info, namer, locals_, bindings=None):
        super().__init__(info)
        self.namer = namer
        self.locals = locals_
        self.bindings = {} if bindings is None else bindings  # srcgrad's own free names
        self.namespaces = set()
        self.modes = [True]  # grad mode of the enclosing with blocks: True, False or a flag name

    def emit(self, out, node):
        self.inherit(node)
        mode = self.modes[-1]
        if mode is False:
            anno.setanno(node, Static.NO_ADJOINT, True)
        elif mode is not True:
            anno.setanno(node, Static.GRAD_FLAG, mode)
        out.append(node)
        return node

    def assign(self, out, target, value):
        node = gast.Assign(targets=[name(target, True) if isinstance(target, str) else target],
                           value=value, type_comment=None)
        return self.emit(out, node)

    # ----- statements -----

    def generic_visit(self, s):
        raise self.error(s, UnsupportedError, f"the statement {type(s).__name__} is not supported")

    def visit_Assign(self, s):
        out = []
        first, *others = s.targets
        if others:
            tmp = self.atom(s.value, out, self.hint(s.value))
            for target in s.targets:
                self.store(target, tmp, out)
            return out
        self.store(first, s.value, out)
        if anno.getanno(s, Static.AUGMENTED) and isinstance(first, (gast.Name, gast.Subscript)):
            # xs = xs[:-1] for xs.pop() (methods.py, item_updates.py), c[k] = item for
            # c[k][i] = v (item_updates.py)
            anno.setanno(out[-1], Static.AUGMENTED, True)
        for key in (Static.MUTATES, Static.FIELD):   # self = rt.dataclass_replace(self, ...)
            if anno.hasanno(s, key):
                anno.setanno(out[-1], key, anno.getanno(s, key))
        return out

    def visit_AugAssign(self, s):
        out = []
        target = s.target
        if isinstance(target, gast.Subscript):
            base = self.base_name(target)
            index = self.index(target.slice, out)
            load = gast.Subscript(value=name(base), slice=index, ctx=gast.Load())
            store = gast.Subscript(value=name(base), slice=index, ctx=gast.Store())
            value = gast.BinOp(left=load, op=s.op, right=s.value)
            tmp = self.atom(value, out, self.hint(value))
            self.emit(out, gast.Assign(targets=[store], value=tmp, type_comment=None))
            # lst[i] += v updates an array or list item in place (aliasing.check)
            anno.setanno(out[-1], Static.AUGMENTED, True)
        else:
            load = name(target.id)
            self.store(target, gast.BinOp(left=load, op=s.op, right=s.value), out)
            anno.setanno(out[-1], Static.AUGMENTED, True)
        return out

    def visit_Expr(self, s):
        out = []
        if isinstance(s.value, gast.Call):
            call = self.call(s.value, out)
            self.emit(out, gast.Expr(value=call))
        # Docstrings and bare names have no effect.
        return out

    def visit_If(self, s):
        out = []
        stored = {n.id for b in s.body + s.orelse for n in ast_util.walk(b)
                  if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        test = self.condition(s.test, out, stored)
        node = gast.If(test=test, body=self.visit_block(s.body) or [gast.Pass()],
                       orelse=self.visit_block(s.orelse))
        anno.copyanno(s, node, Static.BREAK_EXIT)
        self.emit(out, node)
        return out

    def visit_For(self, s):
        out = []
        it = s.iter
        args = [self.atom(a, out, "n") for a in it.args]
        it = gast.Call(func=it.func, args=args, keywords=[])
        anno.setanno(it, Static.PRIMITIVE, builtins.range)
        node = gast.For(target=s.target, iter=it, body=self.visit_block(s.body) or [gast.Pass()],
                        orelse=[], type_comment=None)
        anno.copyanno(s, node, Static.ITERATES)
        self.emit(out, node)
        return out

    def visit_While(self, s):
        if self.needs_statements(s.test):
            raise self.error(s, UnsupportedError,
                             "this while condition calls a function srcgrad must transform",
                             "Compute the condition into a variable before the loop and at the "
                             "end of its body.")
        node = gast.While(test=s.test, body=self.visit_block(s.body) or [gast.Pass()], orelse=[])
        return self.emit([], node)

    def visit_Return(self, s):
        out = []
        value = s.value
        if isinstance(value, gast.Tuple):
            value = gast.Tuple(elts=[self.atom(e, out, self.hint(e)) for e in value.elts], ctx=gast.Load())
        elif value is not None:
            value = self.atom(value, out, self.hint(value))
        self.emit(out, gast.Return(value=value))
        return out

    def visit_Break(self, s):
        return self.emit([], s)

    visit_Continue = visit_Break

    def visit_Pass(self, s):
        return []

    def visit_With(self, s):
        out = []
        for item in s.items:
            kind, arg = grad_mode_of(item, self.info)
            if kind == "set" and not isinstance(arg, gast.Constant):
                flag = self.namer.new("grad_enabled")
                self.locals.add(flag)
                value = gast.Call(func=name("bool"), args=[self.atom(arg, out, "flag")], keywords=[])
                node = self.assign(out, flag, value)
                anno.setanno(node, Static.NO_ADJOINT, True)
                self.modes.append(flag)
            elif kind == "set":
                self.modes.append(bool(arg.value))
            else:
                self.modes.append(kind == "enable")
        try:
            out.extend(self.visit_block(s.body))
        finally:
            del self.modes[-len(s.items):]
        return out

    def visit_Assert(self, s):
        anno.setanno(s, Static.NO_ADJOINT, True)
        return self.emit([], s)

    visit_Raise = visit_Assert

    def store(self, target, value, out):
        if isinstance(target, gast.Name):
            if isinstance(value, gast.IfExp):
                self.ifexp(target.id, value, out)
                return
            value = self.simple(value, out, target.id)
            self.assign(out, target.id, value)
        elif isinstance(target, gast.Subscript):
            base = self.base_name(target)
            index = self.index(target.slice, out)
            atom = self.atom(value, out, self.hint(value))
            node = gast.Subscript(value=name(base), slice=index, ctx=gast.Store())
            self.emit(out, gast.Assign(targets=[node], value=atom, type_comment=None))
        elif isinstance(target, (gast.Tuple, gast.List)):
            if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts):
                temps = [self.atom(v, out, self.hint(v) if not isinstance(v, gast.Name) else v.id + "_old",
                                   force=isinstance(v, gast.Name)) for v in value.elts]
                for t, v in zip(target.elts, temps):
                    self.store(t, v, out)
                return
            seq = self.atom(value, out, self.hint(value))
            starred = [k for k, t in enumerate(target.elts) if isinstance(t, gast.Starred)]
            n = len(target.elts)
            for k, t in enumerate(target.elts):
                if starred and k == starred[0]:
                    # `first, *rest, last = seq`: rest is the list of the items between,
                    # as Python makes it: list(seq[k:-after]).
                    after = n - k - 1
                    part = gast.Slice(lower=gast.Constant(value=k, kind=None),
                                      upper=gast.Constant(value=-after, kind=None) if after else None,
                                      step=None)
                    item = gast.Call(func=name("list"), args=[gast.Subscript(
                        value=seq, slice=part, ctx=gast.Load())], keywords=[])
                    self.store(t.value, item, out)
                    continue
                index = k if not starred or k < starred[0] else k - n
                item = gast.Subscript(value=seq, slice=gast.Constant(value=index, kind=None),
                                      ctx=gast.Load())
                self.store(t, item, out)
        else:
            raise self.error(target, UnsupportedError,
                             f"assignment to {type(target).__name__} is not supported")

    def base_name(self, target):
        if isinstance(target.value, gast.Attribute):   # h.a[0] = v, c.T[0] = v
            raise self.error(target, UnsupportedError, "assignment into an item of an attribute "
                             f"({ast.unparse(gast.gast_to_ast(target.value))}[...] = ...) is not "
                             "supported", "Keep the value in a local variable (a = h.a.copy(); "
                             "a[0] = v) and read that.")
        if not isinstance(target.value, gast.Name):
            raise self.error(target, UnsupportedError, "assignment into a nested subscript is not supported",
                             "Index with one subscript: x[i, j] = v rather than x[i][j] = v.")
        return target.value.id

    def ifexp(self, target, node, out):
        test = self.condition(node.test, out)
        body, orelse = [], []
        self.store(name(target, True), node.body, body)
        self.store(name(target, True), node.orelse, orelse)
        self.emit(out, gast.If(test=test, body=body, orelse=orelse))


def grad_mode_of(item, info):
    """("no"/"enable"/"set", argument) for a `with` item srcgrad understands, else None."""
    call = item.context_expr
    if item.optional_vars is not None or not isinstance(call, gast.Call):
        return None
    parts = []
    func = call.func
    while isinstance(func, gast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, gast.Name):
        return None
    try:
        obj = info.resolve_path((func.id,) + tuple(reversed(parts)))
    except (NameError, AttributeError):
        return None
    if obj is grad_mode.no_grad and not call.args:
        return ("no", None)
    if obj is grad_mode.enable_grad and not call.args:
        return ("enable", None)
    if obj is grad_mode.set_grad_enabled and len(call.args) == 1 and not call.keywords:
        return ("set", call.args[0])
    return None


def _namespace_names(node, info):
    """Locals bound to ``rt.namespace(...)``: the array module, in code srcgrad generated."""
    found = set()
    for child in ast_util.nodes_of(node, gast.Assign):
        if isinstance(child.value, gast.Call) \
                and isinstance(child.targets[0], gast.Name):
            func = child.value.func
            if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                    and func.attr == "namespace":
                try:
                    if info.resolve(func.value.id) is runtime:
                        found.add(child.targets[0].id)
                except NameError:
                    pass
    return found



def transform(node, ctx):
    """Rewrite FunctionDef ``node``'s body into A-normal form, in place.

    ``ctx``: the CompileContext; names srcgrad binds for itself (``rt.as_array``) go
    into ``ctx.bindings``.
    """
    anf = ANF(ctx.info, ctx.namer, local_names(node), ctx.bindings)
    anf.namespaces = _namespace_names(node, ctx.info)
    node.body = anf.visit_block(node.body)
    return node
