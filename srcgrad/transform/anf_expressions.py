"""A-normal form of expressions: each operation over atoms, its operands named first.

The expression half of anf.py's ``ANF`` (a mixin it inherits): ``atom`` names a
value (``sin_x``), ``simple`` makes one operation over atoms, ``call`` resolves a
call to the live object it denotes (annotation PRIMITIVE), ``condition`` names a
branch's test. Each writes the statements its operands need to ``out`` through
``ANF.assign``. Comparisons and boolean operators stay whole: they carry no gradient.
"""

import ast
import builtins
import inspect
import operator

import gast
import numpy

from srcgrad import anno, grad_mode, runtime
from srcgrad.templates import clone
from srcgrad.entry import ByArity, bound_of, call_method
from srcgrad.ast_util import name, reads
from srcgrad.errors import SrcgradError, UnsupportedError
from srcgrad.parse import NO_KEY, Item, constant_key, dotted
from srcgrad.rules import Attribute, Method
from srcgrad.transform import as_array
from srcgrad.transform.inline import is_inlinable
from srcgrad.transform.local_functions import LocalFunction
from srcgrad import ast_util

Static = anno.Static

_OP_WORDS = {
    gast.Add: "plus", gast.Sub: "minus", gast.Mult: "times", gast.Div: "over",
    gast.Pow: "pow", gast.MatMult: "matmul", gast.FloorDiv: "floordiv", gast.Mod: "mod",
}


class NameError_(UnsupportedError):
    """A name in the user's function that is not defined."""


_OPERATORS = {operator.add: gast.Add, operator.sub: gast.Sub, operator.mul: gast.Mult,
              operator.truediv: gast.Div, operator.floordiv: gast.FloorDiv, operator.mod: gast.Mod,
              operator.pow: gast.Pow, operator.matmul: gast.MatMult}


def is_atom(node):
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return isinstance(node.operand, gast.Constant)
    if isinstance(node, gast.Tuple):
        return all(isinstance(e, gast.Constant) or is_atom(e) and not isinstance(e, gast.Name)
                   for e in node.elts)
    return False



def _is_constant(node):
    try:
        gast.literal_eval(node)
    except ValueError:
        return False
    return True


class Expressions:
    """The expression methods of ``ANF`` (anf.py), which provides ``info``, ``namer``,
    ``locals``, ``bindings``, ``namespaces``, ``modes``, ``assign`` and ``error``."""

    def resolve(self, func):
        """The live object a dotted name denotes, or None when rooted at a local."""
        parts = []
        while isinstance(func, (gast.Attribute, gast.Subscript)):
            if isinstance(func, gast.Subscript):   # OPS["sin"]: an item read with a constant key
                key = constant_key(func.slice)
                if key is NO_KEY:
                    return None
                parts.append(Item(key))
            else:
                parts.append(func.attr)
            func = func.value
        if any(isinstance(p, Item) for p in parts) and not isinstance(func, gast.Name):
            return None
        if isinstance(func, gast.Call):   # super().energy
            return self.resolve_super(func, tuple(reversed(parts)))
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
        except TypeError:   # an item of something other than a list, tuple or dict
            return None
        except NameError:
            raise self.error(func, NameError_, f"name {func.id!r} is not defined")
        except AttributeError as exc:   # np.trapz on a NumPy without it: refused, not a crash
            raise self.error(func, NameError_, f"{dotted(path)} is not defined ({exc})") from None

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
            if fname == "__call__" and node.args:   # Linear.__call__(layer, x): as layer(x)
                fname, node = self.hint(node.args[0]), gast.Call(func=func, args=node.args[1:], keywords=[])
            elif fname.startswith("__") and fname.endswith("__"):   # Vec.__add__(p, q): add_p
                fname = fname.strip("_")
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

    def resolve_super(self, call, parts):
        """``super().energy`` or ``super(Cls, self).energy`` where ``self`` is a constant
        (a bound method's, as ``self.energy`` is): the method the MRO gives, resolved
        now, or None (then a method call on a run-time value, refused without a rule).
        The class that defines it is recorded, so redefining that method recompiles."""
        if self.resolve_safe(call.func) is not builtins.super or call.keywords or not parts:
            return None
        if not call.args:
            bound = bound_of(self.info.fn)
            code = getattr(bound.target if bound is not None else self.info.fn, "__code__", None)
            if code is None or not code.co_argcount:
                return None
            names = ("__class__", code.co_varnames[0])
        elif len(call.args) == 2 and all(isinstance(a, gast.Name) for a in call.args):
            names = tuple(a.id for a in call.args)
        else:
            return None
        if any(n in self.locals for n in names):
            return None
        try:
            cls, obj = (self.info.resolve(n) for n in names)
            proxy = super(cls, obj)
            getattr(proxy, parts[0])
        except Exception:
            return None
        mro = type(obj).__mro__ if not isinstance(obj, type) else obj.__mro__
        after = mro[mro.index(cls) + 1:] if cls in mro else ()
        owner = next((k for k in after if parts[0] in vars(k)), None)
        if owner is None:
            return None
        owner_name = self.bind(f"super_{owner.__name__}", owner)
        self.info.reads[(owner_name, parts[0])] = getattr(owner, parts[0])
        found = getattr(proxy, parts[0])
        for part in parts[1:]:
            found = getattr(found, part)
        return found

    def resolve_safe(self, func):
        try:
            return self.resolve(func)
        except Exception:
            return None

    def atom(self, node, out, hint, force=False):
        if is_atom(node) and not force:
            return node
        if isinstance(node, gast.IfExp):
            temp = self.namer.new(hint)
            self.locals.add(temp)
            self.ifexp(temp, node, out)
            return name(temp)
        value = self.simple(node, out, hint)
        if is_atom(value) and not force:
            return value
        temp = self.namer.new(hint)
        self.locals.add(temp)
        self.assign(out, temp, value)
        return name(temp)

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
                raise self.error(node, UnsupportedError, "`**` unpacking in a dict display is not supported",
                                 "Write the keys out: {'a': d['a'], ...}.")
            return gast.Dict(keys=[k if isinstance(k, gast.Constant) else self.atom(k, out, "key")
                                   for k in node.keys],
                             values=[self.atom(v, out, self.hint(v)) for v in node.values])
        if isinstance(node, (gast.JoinedStr, gast.Set)):
            return node
        if isinstance(node, gast.IfExp):
            return self.atom(node, out, hint)
        raise self.error(node, UnsupportedError, f"the expression {type(node).__name__} is not supported")

    def index_concat(self, node, out):
        """``np.r_[x, y]`` / ``np.c_[x, y]`` is a join of its items: the call
        ``rt.index_concat(np.r_, [x, y])``; a slice item (``np.r_[x, 1:4]``) is the array
        of its values, ``rt.slice_values(slice(1, 4))`` (``np.r_[1:4]``, a constant). With
        string directives it is ``rt.index_concat_directives``, which has no rule."""
        items = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        directives = any(isinstance(e, gast.Constant) and isinstance(e.value, str) for e in items)
        helper = runtime.index_concat_directives if directives else runtime.index_concat
        bound = self.bind(helper.__name__, helper)
        elts = [self.slice_item(e, out, directives) if isinstance(e, gast.Slice)
                else self.atom(e, out, self.hint(e)) for e in items]
        call = gast.Call(func=name(bound), args=[node.value, gast.List(elts=elts, ctx=gast.Load())],
                         keywords=[])
        anno.setanno(call, Static.PRIMITIVE, helper)
        return call

    def slice_item(self, node, out, directives):
        """A slice item of ``np.r_[...]``: the slice itself beside string directives, else
        the array of its values."""
        item = self.slice_object(node, out)
        if directives:
            return item
        call = gast.Call(func=name(self.bind("slice_values", runtime.slice_values)), args=[item],
                         keywords=[])
        anno.setanno(call, Static.PRIMITIVE, runtime.slice_values)
        temp = self.namer.new("k_values")
        self.locals.add(temp)
        self.assign(out, temp, call)
        return name(temp)

    def slice_object(self, node, out):
        parts = [gast.Constant(value=None, kind=None) if p is None else self.atom(p, out, "k")
                 for p in (node.lower, node.upper, node.step)]
        call = gast.Call(func=name(self.bind("slice", builtins.slice)), args=parts, keywords=[])
        anno.setanno(call, Static.PRIMITIVE, builtins.slice)
        temp = self.namer.new("k_slice")
        self.locals.add(temp)
        self.assign(out, temp, call)
        return name(temp)

    def bind(self, hint, obj):
        return as_array.bind(self.namer, self.info, self.bindings, hint, obj)

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
        raise self.error(node, UnsupportedError, "this condition calls a function srcgrad must transform",
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
            return all(Expressions.is_condition(v) for v in node.values)
        return isinstance(node, gast.Constant) and isinstance(node.value, bool)

    def is_boolean(self, node):
        """A condition, where a name is a flag (truthiness only, never a value that
        needs a gradient)."""
        if isinstance(node, gast.BoolOp):
            return all(self.is_boolean(v) for v in node.values)
        return self.is_condition(node) or isinstance(node, gast.Name)

    def needs_statements(self, node):
        """Whether ``node`` calls a user function that must be inlined."""
        for child in ast_util.walk(node):
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
                and not (reads(test) & stored):
            return test
        if isinstance(test, gast.Constant):
            return test
        boolean = self.is_boolean(test) or isinstance(test, gast.BoolOp)
        value = self.opaque(test, out, condition=True) if boolean else self.simple(test, out, "cond")
        temp = self.namer.new("cond")
        self.locals.add(temp)
        node = self.assign(out, temp, value)
        anno.setanno(node, Static.NO_ADJOINT, True)
        return name(temp)

    def call(self, node, out):
        func = node.func
        gradient_of = getattr(self.resolve_safe(func.func), "srcgrad_value_and_grad", None) \
            if isinstance(func, gast.Call) else None
        if gradient_of is not None:   # sg.value_and_grad(fn)(x): fn(x) and sg.grad(fn)(x)
            return self.value_and_gradient(node, out, gradient_of)
        if isinstance(func, gast.Call):   # sg.grad(energy)(x)
            obj = self.inline_gradient(func)
        else:
            obj = self.resolve(func) if not (isinstance(func, gast.Attribute) and self._method_receiver(func)) else None
            if obj is not None and call_method(obj) is not None:
                # layer(x): its __call__ is inlined; read through the name, so redefining
                # the class's __call__ compiles anew (guard.py compares the bound method)
                self.resolve(gast.Attribute(value=func, attr="__call__", ctx=gast.Load()))
        if isinstance(obj, ByArity) and not any(isinstance(a, gast.Starred) for a in node.args) \
                and all(k.arg is not None for k in node.keywords):   # sg.grad(f) of f(w, *xs)
            obj = obj.derivative(len(node.args), tuple(sorted(
                k.arg for k in node.keywords if k.arg not in obj.own)))
        if type(obj) is type(operator.add) and obj in _OPERATORS and len(node.args) == 2 and not node.keywords and not any(
                isinstance(a, gast.Starred) for a in node.args):
            # operator.add(a, b) is a + b: two lists join, a list times an int repeats
            # (NumPy's rule took its list displays for arrays and added them)
            return self.simple(gast.BinOp(left=node.args[0], op=_OPERATORS[obj](),
                                          right=node.args[1]), out, "t")
        if obj is not None and type(obj).__name__ == "GradFunction":
            # A gradient called here: the custom Function whose adjoint is its hvp (nested.py).
            try:
                cls = obj.gradient_class()
            except UnsupportedError as exc:
                raise self.error(node, UnsupportedError, exc.message) from None
            func = gast.Attribute(value=name(self.bind(cls.__name__, cls)), attr="apply",
                                  ctx=gast.Load())
            obj = cls.apply
        from srcgrad.custom_function import is_apply
        applied = is_apply(obj) if obj is not None else None
        if applied is not None and not (isinstance(func, gast.Attribute) and func.attr == "apply"):
            # relu = MyReLU.apply called by its own name (PyTorch's idiom): spelled
            # Class.apply, which the sweeps read the class from
            func = gast.Attribute(value=name(self.bind(applied.__name__, applied)), attr="apply",
                                  ctx=gast.Load())
        jvp_class = getattr(obj, "srcgrad_jvp_class", None)
        fn = self.resolve_safe(node.args[0]) if jvp_class is not None and len(node.args) == 3 \
            and not node.keywords else None
        if inspect.isfunction(fn) and all(
                isinstance(a, (gast.Tuple, gast.List)) and not any(isinstance(e, gast.Starred)
                                                                  for e in a.elts)
                for a in node.args[1:]) and len(node.args[1].elts) == len(node.args[2].elts):
            # sg.jvp(f, (x,), (t,)) called here: the custom Function whose backward is
            # reverse over forward (nested_jvp.py), of the primals and the tangents
            cls = jvp_class(fn, len(node.args[1].elts))
            func = gast.Attribute(value=name(self.bind(cls.__name__, cls)), attr="apply",
                                  ctx=gast.Load())
            obj = cls.apply
            node = gast.Call(func=func, args=list(node.args[1].elts) + list(node.args[2].elts),
                             keywords=[])
        if obj is None and isinstance(func, gast.Attribute):
            receiver = self.atom(func.value, out, self.hint(func.value))
            func = gast.Attribute(value=receiver, attr=func.attr, ctx=gast.Load())
            primitive = Method(func.attr)
        elif obj is None:
            raise self.error(node, UnsupportedError, *self.unknown_callee(func))
        else:
            primitive = obj
        if primitive is grad_mode.is_grad_enabled and self.modes[-1] is not True:
            # Inside a grad-mode block the answer is the block's mode.
            mode = self.modes[-1]
            return gast.Constant(value=False, kind=None) if mode is False else name(mode)
        if primitive is grad_mode.set_grad_enabled:
            raise self.error(node, UnsupportedError, "set_grad_enabled as a statement is not supported in a function "
                                   "srcgrad differentiates",
                             "Use it as a block: `with srcgrad.set_grad_enabled(flag):`.")
        if primitive is grad_mode.register_hook and node.args and not isinstance(node.args[0], gast.Name):
            # a hook belongs to a variable's binding: ``d["y"]`` would hook a copy of the name
            raise self.error(node, UnsupportedError, "register_hook of an expression (an item, an "
                             "attribute, a call) is not supported: srcgrad hooks a variable",
                             "Bind it to a variable first: `y = d['y']`, then "
                             "`srcgrad.register_hook(y, fn)`, and read `y` afterwards.")
        node_args, node_keywords = as_array.array_arguments(primitive, node.args, node.keywords,
                                                            self.bind)
        args = [self.arg(a, out) for a in node_args]
        keywords = [gast.keyword(arg=k.arg, value=self.arg(k.value, out)) for k in node_keywords]
        new = gast.Call(func=func, args=args, keywords=keywords)
        anno.setanno(new, Static.PRIMITIVE, primitive)
        where = self.info.origin(node)   # the call's own column, for an error about it
        if where is not None:
            anno.setanno(new, Static.ORIGIN, where)
        return new


    def unknown_callee(self, func):
        """(message, hint) refusing a call of ``func``, which is not known when compiling."""
        text = ast.unparse(gast.gast_to_ast(func))
        hint = ("srcgrad compiles calls of functions known when the gradient is compiled: a "
                "global, closure or bound (`self.`) function or callable object, an item of a "
                "list, tuple or dict held by one of those read with a constant key "
                "(`OPS[\"sin\"](x)`, `self.layers[0](x)`), or a loop over such a container "
                "(`for layer in self.layers: x = layer(x)`), or a function given as an argument "
                "of the function differentiated (not to a keyword-only parameter).")
        if isinstance(func, gast.Subscript):
            root = func
            while isinstance(root, (gast.Attribute, gast.Subscript)):
                root = root.value
            if isinstance(root, gast.Name) and root.id not in self.locals and \
                    constant_key(func.slice) is NO_KEY:
                return (f"calling `{text}`, an item read with a key computed when the function "
                        f"runs, is not supported", hint)
            return (f"calling `{text}`, an item of a container that is a local variable or an "
                    f"argument (known only when the function runs), is not supported", hint)
        if isinstance(func, gast.Name):
            return (f"calling the local variable `{text}` (a value known only when the function "
                    f"runs) is not supported", hint)
        return f"calling `{text}` (a value known only when the function runs) is not supported", hint

    def value_and_gradient(self, node, out, gradient_of):
        """``sg.value_and_grad(fn, ...)(args)`` called here: ``fn(args)`` and
        ``sg.grad(fn, ...)(args)`` (with ``has_aux``, its gradients; ``gradient_of`` is
        ``sg.grad``), each argument computed once, as the tuple ``value_and_grad`` returns."""
        inner = node.func
        if node.keywords or not inner.args or any(isinstance(a, gast.Starred) for a in node.args):
            raise self.error(node, UnsupportedError, "sg.value_and_grad(f)(...) called inside a "
                             "differentiated function with keyword or starred arguments is not "
                             "supported", "Pass its arguments positionally.")
        args = [self.atom(a, out, self.hint(a)) for a in node.args]
        value = self.atom(gast.Call(func=clone(inner.args[0]), args=list(args), keywords=[]),
                          out, "value")
        gradient = gast.Call(func=name(self.bind("grad", gradient_of)),
                             args=[clone(a) for a in inner.args],
                             keywords=[clone(k) for k in inner.keywords])
        grads = self.atom(gast.Call(func=gradient, args=[clone(a) for a in args], keywords=[]),
                          out, "grads")
        if any(k.arg == "has_aux" and not (isinstance(k.value, gast.Constant) and not k.value.value)
               for k in inner.keywords):   # sg.grad's (gradients, aux): the gradients
            grads = self.atom(gast.Subscript(value=grads, slice=gast.Constant(value=0, kind=None),
                                             ctx=gast.Load()), out, "grads")
        return gast.Tuple(elts=[value, grads], ctx=gast.Load())

    def inline_gradient(self, call):
        """The GradFunction ``sg.grad(fn, wrt)`` denotes, for a call of it: ``fn`` a global
        name and ``wrt`` a constant."""
        grad_of = getattr(self.resolve_safe(call.func), "srcgrad_grad_of", None)  # sg.grad's
        if grad_of is None:   # getattr(np, name)(x), make_act(0.1)(x)
            text = ast.unparse(gast.gast_to_ast(call))
            raise self.error(call, UnsupportedError, f"calling the result of a call, `{text}(...)`, "
                             f"a function known only when the function runs, is not supported",
                             "Call the function by its name (np.tanh(x)), or pick it from a "
                             "module-level dict of functions by a key (ACTS[name](x)).")
        if not call.args or len(call.args) > 2 \
                or any(k.arg not in ("wrt", "has_aux") for k in call.keywords):
            raise self.error(call, UnsupportedError, "calling the result of a call is not supported",
                             "Bind the function to a global name first (g = sg.grad(f)).")
        wrt = call.args[1:] + [k.value for k in call.keywords if k.arg == "wrt"]
        aux = [k.value for k in call.keywords if k.arg == "has_aux"]
        first = call.args[0]
        if isinstance(first, gast.Call) and getattr(self.resolve_safe(first.func), "srcgrad_grad_of",
                                                    None) is not None:
            fn = self.inline_gradient(first)   # sg.grad(sg.grad(u))(x): u's second derivative
        else:
            fn = self.resolve_safe(first)
        if fn is None or any(not _is_constant(v) for v in wrt[:1] + aux):
            raise self.error(call, UnsupportedError, "sg.grad(f, wrt) called inside a differentiated "
                             "function needs f a global function and wrt a constant (has_aux too)",
                             "Make g = sg.grad(f, wrt) outside and call g.")
        if isinstance(fn, LocalFunction) and getattr(fn, "free_positional", None) is not None:
            fn = fn.as_function()   # (local_functions.differentiated: its free locals passed)
        if isinstance(fn, LocalFunction):
            raise self.error(call, UnsupportedError, "sg.grad of a lambda or nested def called "
                             "inside a differentiated function is not supported",
                             "Define the function at module level, with what it reads from "
                             "here as parameters: sg.grad(energy)(x, k).")
        try:
            return grad_of(fn, gast.literal_eval(wrt[0]) if wrt else 0,
                           bool(gast.literal_eval(aux[0])) if aux else False)
        except SrcgradError as exc:   # said at the user's call, not in srcgrad's files
            if exc.filename is not None and exc.lineno is not None:
                raise
            raise self.error(call, type(exc), exc.message, exc.hint) from None

    def _method_receiver(self, func):
        root = func
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(root, gast.Name) and root.id in self.namespaces:
            return False
        if isinstance(root, gast.Call) and self.resolve_safe(func) is not None:
            return False   # super().energy, resolved
        return not (isinstance(root, gast.Name) and root.id not in self.locals)

    def arg(self, node, out):
        if isinstance(node, gast.Starred):   # g(a, *xs) into g's *vs (methods.py allowed it)
            return gast.Starred(value=self.atom(node.value, out, self.hint(node.value)), ctx=gast.Load())
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
