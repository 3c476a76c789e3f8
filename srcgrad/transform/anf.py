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
"""

import builtins

import gast
import numpy

from srcgrad import anno, rules, templates
from srcgrad.errors import UnsupportedError
from srcgrad.rules import Attribute, Method

Static = anno.Static

_OP_WORDS = {
    gast.Add: "plus", gast.Sub: "minus", gast.Mult: "times", gast.Div: "over",
    gast.Pow: "pow", gast.MatMult: "matmul", gast.FloorDiv: "floordiv", gast.Mod: "mod",
}


def local_names(node):
    """Parameters and every name the function assigns."""
    names = {a.id for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
    names.update(a.id for a in (node.args.vararg, node.args.kwarg) if a is not None)
    for child in gast.walk(node):
        if isinstance(child, gast.Name) and isinstance(child.ctx, (gast.Store, gast.Del)):
            names.add(child.id)
    return names


def is_atom(node):
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return isinstance(node.operand, gast.Constant)
    if isinstance(node, gast.Tuple):
        return all(isinstance(e, gast.Constant) or is_atom(e) and not isinstance(e, gast.Name)
                   for e in node.elts)
    return False


def _name(id_, store=False):
    return gast.Name(id=id_, ctx=gast.Store() if store else gast.Load(), annotation=None,
                     type_comment=None)


class ANF:
    def __init__(self, info, namer, locals_, bindings=None):
        self.info = info
        self.namer = namer
        self.locals = locals_
        self.bindings = {} if bindings is None else bindings  # srcgrad's own free names
        self.origin = None
        self.namespaces = set()
        self.modes = [True]  # grad mode of the enclosing with blocks: True, False or a flag name

    # ----- helpers -----

    def error(self, node, message, hint=None, cls=UnsupportedError):
        origin = self.origin or self.info.origin(node)
        if origin is None:
            return cls(message, self.info.filename, hint=hint)
        return origin.error(cls, message, hint)

    def emit(self, out, node):
        if self.origin is not None:
            anno.setanno(node, Static.ORIGIN, self.origin)
        mode = self.modes[-1]
        if mode is False:
            anno.setanno(node, Static.NO_ADJOINT, True)
        elif mode is not True:
            anno.setanno(node, Static.GRAD_FLAG, mode)
        out.append(node)
        return node

    def assign(self, out, target, value):
        node = gast.Assign(targets=[_name(target, True) if isinstance(target, str) else target],
                           value=value, type_comment=None)
        return self.emit(out, node)

    def resolve(self, func):
        """The live object a dotted name denotes, or None when rooted at a local."""
        parts = []
        while isinstance(func, gast.Attribute):
            parts.append(func.attr)
            func = func.value
        if isinstance(func, gast.Name) and func.id in self.namespaces:
            obj = numpy  # generated code's `xp`: its functions have NumPy's rules
            for part in reversed(parts):
                obj = getattr(obj, part)
            return obj
        if not isinstance(func, gast.Name) or func.id in self.locals:
            return None
        path = (func.id,) + tuple(reversed(parts))
        try:
            return self.info.resolve_path(path)
        except NameError:
            raise self.error(func, f"name {func.id!r} is not defined", cls=NameError_)
        except AttributeError as exc:   # np.trapz on a NumPy without it: refused, not a crash
            raise self.error(func, f"{'.'.join(path)} is not defined ({exc})", cls=NameError_) from None

    def hint(self, node):
        """A readable name for the value of ``node``."""
        if isinstance(node, gast.Name):
            return node.id
        if isinstance(node, gast.Constant):
            return "c" if not isinstance(node.value, (int, float)) else str(node.value).replace(".", "_").replace("-", "neg")
        if isinstance(node, gast.BinOp):
            return f"{self.hint(node.left)}_{_OP_WORDS.get(type(node.op), 'op')}_{self.hint(node.right)}"
        if isinstance(node, gast.UnaryOp):
            return "neg_" + self.hint(node.operand)
        if isinstance(node, gast.Call):
            func = node.func
            if isinstance(func, gast.Attribute) and self.resolve_safe(func) is None:
                return f"{self.hint(func.value)}_{func.attr}"
            fname = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", "call")
            arg = self.hint(node.args[0]) if node.args else ""
            return f"{fname}_{arg}" if arg else fname
        if isinstance(node, gast.Subscript):
            return self.hint(node.value) + "_item"
        if isinstance(node, gast.Attribute):
            return f"{self.hint(node.value)}_{node.attr}"
        if isinstance(node, gast.IfExp):
            return "choice"
        if isinstance(node, gast.BoolOp):
            return "either" if isinstance(node.op, gast.Or) else "both"
        if isinstance(node, gast.Compare):
            return "test"
        return "t"

    def resolve_safe(self, func):
        try:
            return self.resolve(func)
        except Exception:
            return None

    # ----- statements -----

    def block(self, body):
        out = []
        for stmt in body:
            saved_origin = self.origin
            self.origin = anno.getanno(stmt, Static.ORIGIN, self.origin)
            self.stmt(stmt, out)
            self.origin = saved_origin
        return out

    def stmt(self, s, out):
        if isinstance(s, gast.Assign):
            value = s.value
            first, *others = s.targets
            if others:
                tmp = self.atom(value, out, self.hint(value))
                for target in s.targets:
                    self.store(target, tmp, out)
                return
            self.store(first, value, out)
        elif isinstance(s, gast.AugAssign):
            target = s.target
            if isinstance(target, gast.Subscript):
                base = self.base_name(target)
                index = self.index(target.slice, out)
                load = gast.Subscript(value=_name(base), slice=index, ctx=gast.Load())
                store = gast.Subscript(value=_name(base, True), slice=index, ctx=gast.Store())
                value = gast.BinOp(left=load, op=s.op, right=s.value)
                tmp = self.atom(value, out, self.hint(value))
                self.emit(out, gast.Assign(targets=[store], value=tmp, type_comment=None))
            else:
                load = _name(target.id)
                self.store(target, gast.BinOp(left=load, op=s.op, right=s.value), out)
                anno.setanno(out[-1], Static.AUGMENTED, True)
        elif isinstance(s, gast.Expr):
            if isinstance(s.value, gast.Call):
                call = self.call(s.value, out)
                self.emit(out, gast.Expr(value=call))
            # Docstrings and bare names have no effect.
        elif isinstance(s, gast.If):
            stored = {n.id for b in s.body + s.orelse for n in gast.walk(b)
                      if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
            test = self.condition(s.test, out, stored)
            node = gast.If(test=test, body=self.block(s.body) or [gast.Pass()], orelse=self.block(s.orelse))
            anno.copyanno(s, node, Static.BREAK_EXIT)
            self.emit(out, node)
        elif isinstance(s, gast.For):
            it = s.iter
            args = [self.atom(a, out, "n") for a in it.args]
            it = gast.Call(func=it.func, args=args, keywords=[])
            anno.setanno(it, Static.PRIMITIVE, builtins.range)
            node = gast.For(target=s.target, iter=it, body=self.block(s.body) or [gast.Pass()],
                            orelse=[], type_comment=None)
            anno.copyanno(s, node, Static.ITERATES)
            self.emit(out, node)
        elif isinstance(s, gast.While):
            if self.needs_statements(s.test):
                raise self.error(s, "this while condition calls a function srcgrad must transform",
                                 "Compute the condition into a variable before the loop and at the "
                                 "end of its body.")
            node = gast.While(test=s.test, body=self.block(s.body) or [gast.Pass()], orelse=[])
            self.emit(out, node)
        elif isinstance(s, gast.Return):
            value = s.value
            if isinstance(value, gast.Tuple):
                value = gast.Tuple(elts=[self.atom(e, out, self.hint(e)) for e in value.elts], ctx=gast.Load())
            elif value is not None:
                value = self.atom(value, out, self.hint(value))
            self.emit(out, gast.Return(value=value))
        elif isinstance(s, (gast.Break, gast.Continue, gast.Pass)):
            if not isinstance(s, gast.Pass):
                self.emit(out, s)
        elif isinstance(s, gast.With):
            for item in s.items:
                kind, arg = grad_mode_of(item, self.info)
                if kind == "set" and not isinstance(arg, gast.Constant):
                    flag = self.namer.new("grad_enabled")
                    self.locals.add(flag)
                    value = gast.Call(func=_name("bool"), args=[self.atom(arg, out, "flag")], keywords=[])
                    node = self.assign(out, flag, value)
                    anno.setanno(node, Static.NO_ADJOINT, True)
                    self.modes.append(flag)
                elif kind == "set":
                    self.modes.append(bool(arg.value))
                else:
                    self.modes.append(kind == "enable")
            try:
                out.extend(self.block(s.body))
            finally:
                del self.modes[-len(s.items):]
        elif isinstance(s, (gast.Assert, gast.Raise)):
            anno.setanno(s, Static.NO_ADJOINT, True)
            self.emit(out, s)
        else:
            raise self.error(s, f"the statement {type(s).__name__} is not supported")

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
            node = gast.Subscript(value=_name(base), slice=index, ctx=gast.Store())
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
                    item = gast.Call(func=_name("list"), args=[gast.Subscript(
                        value=seq, slice=part, ctx=gast.Load())], keywords=[])
                    self.store(t.value, item, out)
                    continue
                index = k if not starred or k < starred[0] else k - n
                item = gast.Subscript(value=seq, slice=gast.Constant(value=index, kind=None),
                                      ctx=gast.Load())
                self.store(t, item, out)
        else:
            raise self.error(target, f"assignment to {type(target).__name__} is not supported")

    def base_name(self, target):
        if not isinstance(target.value, gast.Name):
            raise self.error(target, "assignment into a nested subscript is not supported",
                             "Index with one subscript: x[i, j] = v rather than x[i][j] = v.")
        return target.value.id

    def ifexp(self, target, node, out):
        test = self.condition(node.test, out)
        body, orelse = [], []
        self.store(_name(target, True), node.body, body)
        self.store(_name(target, True), node.orelse, orelse)
        self.emit(out, gast.If(test=test, body=body, orelse=orelse))

    # ----- expressions -----

    def atom(self, node, out, hint, force=False):
        if is_atom(node) and not force:
            return node
        if isinstance(node, gast.IfExp):
            name = self.namer.new(hint)
            self.locals.add(name)
            self.ifexp(name, node, out)
            return _name(name)
        value = self.simple(node, out, hint)
        if is_atom(value) and not force:
            return value
        name = self.namer.new(hint)
        self.locals.add(name)
        self.assign(out, name, value)
        return _name(name)

    def simple(self, node, out, hint):
        """``node`` as one operation over atoms; prerequisite statements go to ``out``."""
        if is_atom(node):
            return node
        if isinstance(node, gast.BinOp):
            left = self.atom(node.left, out, self.hint(node.left))
            right = self.atom(node.right, out, self.hint(node.right))
            return gast.BinOp(left=left, op=node.op, right=right)
        if isinstance(node, gast.UnaryOp):
            if isinstance(node.op, gast.Not):
                return self.opaque(node, out)
            return gast.UnaryOp(op=node.op, operand=self.atom(node.operand, out, self.hint(node.operand)))
        if isinstance(node, gast.Call):
            return self.call(node, out)
        if isinstance(node, gast.Subscript):
            if isinstance(node.value, (gast.Name, gast.Attribute)) and any(
                    self.resolve_safe(node.value) is c for c in (numpy.r_, numpy.c_)):
                return self.index_concat(node, out)
            value = self.atom(node.value, out, self.hint(node.value))
            return gast.Subscript(value=value, slice=self.index(node.slice, out), ctx=gast.Load())
        if isinstance(node, gast.Attribute):
            if self._rooted_global(node):
                # A module constant such as np.pi, an attribute of a global or closure
                # object (a method's self.w): read when the code runs, as the function
                # reads it, so the compile does not depend on its value (guard.py).
                return node
            value = self.atom(node.value, out, self.hint(node.value))
            new = gast.Attribute(value=value, attr=node.attr, ctx=gast.Load())
            anno.setanno(new, Static.PRIMITIVE, Attribute(node.attr))
            return new
        if isinstance(node, (gast.Tuple, gast.List)):
            elts = [self.atom(e, out, self.hint(e)) for e in node.elts]
            return type(node)(elts=elts, ctx=gast.Load())
        if isinstance(node, gast.BoolOp) and not self.is_condition(node):
            return self.atom(self.pick(node, out), out, hint)
        if isinstance(node, (gast.Compare, gast.BoolOp)):
            return self.opaque(node, out)
        if isinstance(node, gast.Dict):
            if any(k is None for k in node.keys):
                raise self.error(node, "`**` unpacking in a dict display is not supported",
                                 "Write the keys out: {'a': d['a'], ...}.")
            return gast.Dict(keys=[k if isinstance(k, gast.Constant) else self.atom(k, out, "key")
                                   for k in node.keys],
                             values=[self.atom(v, out, self.hint(v)) for v in node.values])
        if isinstance(node, (gast.JoinedStr, gast.Set)):
            return node
        if isinstance(node, gast.IfExp):
            return self.atom(node, out, hint)
        raise self.error(node, f"the expression {type(node).__name__} is not supported")

    def index_concat(self, node, out):
        """``np.r_[x, y]`` / ``np.c_[x, y]`` is a join of its items: the call
        ``rt.index_concat(np.r_, [x, y])``. With slices (``np.r_[0:3, x]``) or string
        directives it is ``rt.index_concat_directives``, which has no rule."""
        from srcgrad import runtime
        items = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        directives = any(isinstance(e, gast.Slice) or isinstance(e, gast.Constant)
                         and isinstance(e.value, str) for e in items)
        helper = runtime.index_concat_directives if directives else runtime.index_concat
        name = self.bind(helper.__name__, helper)
        elts = [self.slice_object(e, out) if isinstance(e, gast.Slice)
                else self.atom(e, out, self.hint(e)) for e in items]
        call = gast.Call(func=_name(name), args=[node.value, gast.List(elts=elts, ctx=gast.Load())],
                         keywords=[])
        anno.setanno(call, Static.PRIMITIVE, helper)
        return call

    def slice_object(self, node, out):
        parts = [gast.Constant(value=None, kind=None) if p is None else self.atom(p, out, "k")
                 for p in (node.lower, node.upper, node.step)]
        call = gast.Call(func=_name(self.bind("slice", builtins.slice)), args=parts, keywords=[])
        anno.setanno(call, Static.PRIMITIVE, builtins.slice)
        name = self.namer.new("k_slice")
        self.locals.add(name)
        self.assign(out, name, call)
        return _name(name)

    def bind(self, hint, obj):
        return bind(self.namer, self.info, self.bindings, hint, obj)

    def _rooted_global(self, node):
        while isinstance(node, gast.Attribute):
            node = node.value
        return isinstance(node, gast.Name) and (node.id not in self.locals or node.id in self.namespaces)

    def opaque(self, node, out, condition=False):
        """Comparisons and boolean operators: no gradient, kept whole when possible
        (an ``and``/``or`` used for its value is lowered by ``pick`` first)."""
        if not self.needs_statements(node):
            return node
        if isinstance(node, gast.Compare):
            left = self.atom(node.left, out, self.hint(node.left))
            comps = [self.atom(c, out, self.hint(c)) for c in node.comparators]
            return gast.Compare(left=left, ops=node.ops, comparators=comps)
        if isinstance(node, gast.UnaryOp):
            return gast.UnaryOp(op=node.op, operand=self.atom(node.operand, out, "cond"))
        raise self.error(node, "this condition calls a function srcgrad must transform",
                         "Compute the parts into variables first.")

    def pick(self, node, out):
        """``a or b`` used for its value is ``a if a else b``, and ``a and b`` is
        ``b if a else a``: Python returns one of the operands, and the gradient flows
        to the one it returned. ``a`` is evaluated once; the rest only when picked."""
        first = self.atom(node.values[0], out, self.hint(node.values[0]))
        rest = node.values[1] if len(node.values) == 2 else \
            gast.BoolOp(op=node.op, values=node.values[1:])
        if isinstance(node.op, gast.Or):
            return gast.IfExp(test=first, body=first, orelse=rest)
        return gast.IfExp(test=first, body=rest, orelse=first)

    @staticmethod
    def is_condition(node):
        """Whether a value is plainly a truth value (comparisons, ``not``, True/False):
        an ``and``/``or`` of those carries no gradient and stays whole."""
        if isinstance(node, (gast.Compare,)):
            return True
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not):
            return True
        if isinstance(node, gast.BoolOp):
            return all(ANF.is_condition(v) for v in node.values)
        return isinstance(node, gast.Constant) and isinstance(node.value, bool)

    def is_boolean(self, node):
        """A condition, where a name is a flag (truthiness only, never a value that
        needs a gradient)."""
        if isinstance(node, gast.BoolOp):
            return all(self.is_boolean(v) for v in node.values)
        return self.is_condition(node) or isinstance(node, gast.Name)

    def needs_statements(self, node):
        """Whether ``node`` calls a user function that must be inlined."""
        from srcgrad.transform.inline import is_inlinable
        for child in gast.walk(node):
            if isinstance(child, gast.Call):
                obj = self.resolve_safe(child.func)
                if obj is not None and is_inlinable(obj):
                    return True
        return False

    def condition(self, test, out, stored=frozenset()):
        """``test`` as a name the adjoint can read to replay the branch.

        A name the branch itself rebinds is copied first: the adjoint must see
        the value the test had, not the one the branch left behind.
        """
        if (isinstance(test, gast.Name) or (isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not)
                                            and isinstance(test.operand, gast.Name))) \
                and not (names_loaded(test) & stored):
            return test
        if isinstance(test, gast.Constant):
            return test
        boolean = self.is_boolean(test) or isinstance(test, gast.BoolOp)
        value = self.opaque(test, out, condition=True) if boolean else self.simple(test, out, "cond")
        name = self.namer.new("cond")
        self.locals.add(name)
        node = self.assign(out, name, value)
        anno.setanno(node, Static.NO_ADJOINT, True)
        return _name(name)

    def call(self, node, out):
        func = node.func
        obj = self.resolve(func) if not (isinstance(func, gast.Attribute) and self._method_receiver(func)) else None
        if obj is None and isinstance(func, gast.Attribute):
            receiver = self.atom(func.value, out, self.hint(func.value))
            func = gast.Attribute(value=receiver, attr=func.attr, ctx=gast.Load())
            primitive = Method(func.attr)
        elif obj is None:
            raise self.error(node, "calling a local variable is not supported",
                             "Call the function by its global name; a function given as an "
                             "argument of the function differentiated must be passed "
                             "positionally (the gradient is compiled for that callable).")
        else:
            primitive = obj
        from srcgrad import grad_mode
        if primitive is grad_mode.is_grad_enabled and self.modes[-1] is not True:
            # Inside a grad-mode block the answer is the block's mode.
            mode = self.modes[-1]
            return gast.Constant(value=False, kind=None) if mode is False else _name(mode)
        if primitive is grad_mode.set_grad_enabled:
            raise self.error(node, "set_grad_enabled as a statement is not supported in a function "
                                   "srcgrad differentiates",
                             "Use it as a block: `with srcgrad.set_grad_enabled(flag):`.")
        node_args, node_keywords = self.array_arguments(primitive, node.args, node.keywords)
        args = [self.arg(a, out) for a in node_args]
        keywords = [gast.keyword(arg=k.arg, value=self.arg(k.value, out)) for k in node_keywords]
        new = gast.Call(func=func, args=args, keywords=keywords)
        anno.setanno(new, Static.PRIMITIVE, primitive)
        where = self.info.origin(node)   # the call's own column, for an error about it
        if where is not None:
            anno.setanno(new, Static.ORIGIN, where)
        return new

    def array_arguments(self, primitive, args, keywords):
        """A list or tuple display of values where a built-in rule expects an array
        becomes the array NumPy makes of it: ``np.mean([x, y])`` is computed as
        ``np.mean(rt.as_array([x, y]))`` (nested displays too), so the rule sees one
        array. Parameters that take sequences (``np.stack(arrays)``, ``sum(iterable)``)
        keep their displays, and so do srcgrad's own helpers."""
        if not any(_is_display(a) for a in args + [k.value for k in keywords]):
            return args, keywords
        rule = rules.lookup(primitive)
        if rule is None or is_runtime_helper(primitive):
            return args, keywords
        arrays = templates.array_parameters(rule)
        receiver = [None] if isinstance(primitive, Method) else []
        try:
            bound = rule.signature.bind(None, None, *receiver, *args,
                                        **{k.arg: k.value for k in keywords})
        except TypeError:
            return args, keywords  # refused, naming the call, when it is differentiated
        made = {id(v): self.as_array(v) for p, v in bound.arguments.items()
                if p in arrays and _is_display(v)}
        if (getattr(primitive, "__module__", None) or "").startswith("numpy"):
            # np.concatenate([x, [y, 1.0]]): NumPy makes each element of a sequence of
            # arrays an array (builtins' sum([...], []) joins lists: not those).
            made.update({id(v): type(v)(elts=[self.as_array(e) if _is_display(e) else e
                                              for e in v.elts], ctx=gast.Load())
                         for p, v in bound.arguments.items()
                         if p in rule.sequences and isinstance(v, (gast.List, gast.Tuple))
                         and any(_is_display(e) for e in v.elts)})
        if not made:
            return args, keywords
        return ([made.get(id(a), a) for a in args],
                [gast.keyword(arg=k.arg, value=made.get(id(k.value), k.value)) for k in keywords])

    def as_array(self, display):
        """``rt.as_array(display)``, its element displays made arrays first."""
        from srcgrad import runtime
        elts = [self.as_array(e) if _is_display(e) else e for e in display.elts]
        call = gast.Call(func=_name(self.bind("as_array", runtime.as_array)),
                         args=[gast.List(elts=elts, ctx=gast.Load())], keywords=[])
        for n in gast.walk(call):
            anno.copyanno(display, n, Static.ORIGIN)
        return call

    def _method_receiver(self, func):
        root = func
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(root, gast.Name) and root.id in self.namespaces:
            return False
        return not (isinstance(root, gast.Name) and root.id not in self.locals)

    def arg(self, node, out):
        if isinstance(node, (gast.List, gast.Tuple)) and not is_atom(node):
            return type(node)(elts=[self.atom(e, out, self.hint(e)) for e in node.elts], ctx=gast.Load())
        return self.atom(node, out, self.hint(node))

    def index(self, node, out):
        """A subscript index whose parts are atoms (slices keep their shape)."""
        if isinstance(node, gast.Slice):
            parts = {}
            for field in ("lower", "upper", "step"):
                part = getattr(node, field)
                parts[field] = None if part is None else self.atom(part, out, "k")
            return gast.Slice(**parts)
        if isinstance(node, gast.Tuple):
            return gast.Tuple(elts=[self.index(e, out) for e in node.elts], ctx=gast.Load())
        if isinstance(node, gast.Attribute) and self._rooted_global(node):
            return node  # np.newaxis
        if isinstance(node, (gast.Compare, gast.BoolOp)):
            return self.atom(self.opaque(node, out), out, "mask")
        return self.atom(node, out, "k")


def grad_mode_of(item, info):
    """("no"/"enable"/"set", argument) for a `with` item srcgrad understands, else None."""
    from srcgrad import grad_mode
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
    from srcgrad import runtime
    found = set()
    for child in gast.walk(node):
        if isinstance(child, gast.Assign) and isinstance(child.value, gast.Call) \
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


def names_loaded(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


class NameError_(UnsupportedError):
    """A name in the user's function that is not defined."""


def is_runtime_helper(primitive):
    return getattr(primitive, "__module__", None) == "srcgrad.runtime"


def bind(namer, info, bindings, hint, obj):
    """The name the generated code reads ``obj`` by (one per object, added to ``bindings``)."""
    for name, bound in bindings.items():
        if bound is obj:
            return name
    name = namer.new(hint)
    bindings[name] = info.extra[name] = obj
    return name


def as_array_arguments(node, sequences, info, namer, bindings):
    """A name holding a list or tuple (``sequences``, from the activity analysis) passed
    where a built-in rule expects an array becomes ``rt.as_array(name)``, the array NumPy
    makes of it: ``np.mean(values)`` after ``values.append(...)`` in a loop. Returns
    whether ``node`` changed (the activity analysis must then run again)."""
    from srcgrad import runtime
    state = {"changed": False}

    def convert(value, out, origin):
        name = bind(namer, info, bindings, "as_array", runtime.as_array)
        call = gast.Call(func=_name(name), args=[_name(value.id)], keywords=[])
        anno.setanno(call, Static.PRIMITIVE, runtime.as_array)
        temp = namer.new(f"{value.id}_array")
        assign = gast.Assign(targets=[_name(temp, True)], value=call, type_comment=None)
        anno.setanno(assign, Static.ORIGIN, origin)
        out.append(assign)
        state["changed"] = True
        return _name(temp)

    def block(body):
        out = []
        for s in body:
            for field in ("body", "orelse"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, block(getattr(s, field)))
            call = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
            primitive = anno.getanno(call, Static.PRIMITIVE) if isinstance(call, gast.Call) else None
            rule = rules.lookup(primitive) if primitive is not None else None
            if rule is not None and not is_runtime_helper(primitive) \
                    and not anno.getanno(s, Static.NO_ADJOINT):
                arrays = templates.array_parameters(rule)
                receiver = [None] if isinstance(primitive, Method) else []
                try:
                    bound = rule.signature.bind(None, None, *receiver, *call.args,
                                                **{k.arg: k.value for k in call.keywords})
                except TypeError:
                    bound = None
                made = {} if bound is None else {
                    id(v): v for p, v in bound.arguments.items()
                    if p in arrays and isinstance(v, gast.Name) and v.id in sequences}
                origin = anno.getanno(s, Static.ORIGIN)
                for key, value in list(made.items()):
                    made[key] = convert(value, out, origin)
                call.args = [made.get(id(a), a) for a in call.args]
                for k in call.keywords:
                    k.value = made.get(id(k.value), k.value)
            out.append(s)
        return out

    node.body = block(node.body)
    return state["changed"]


def _is_literal(node):
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return _is_literal(node.operand)
    return isinstance(node, (gast.List, gast.Tuple)) and all(_is_literal(e) for e in node.elts)


def _is_display(node):
    """A list or tuple display of values (not only literals; no starred elements)."""
    return isinstance(node, (gast.List, gast.Tuple)) and bool(node.elts) and not _is_literal(node) \
        and not any(isinstance(e, gast.Starred) for e in node.elts)


def transform(node, info, namer, bindings=None):
    """Rewrite FunctionDef ``node``'s body into A-normal form, in place.

    Names srcgrad binds for itself (``rt.as_array``) go into ``bindings``.
    """
    anf = ANF(info, namer, local_names(node), bindings)
    anf.namespaces = _namespace_names(node, info)
    node.body = anf.block(node.body)
    return node
