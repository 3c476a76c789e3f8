"""Reverse mode: the forward sweep (primal plus tape pushes) and the adjoint sweep.

Requires A-normal form, canonical control flow and an Activity. Produces two
FunctionDefs:

* ``f_forward(<f's parameters>)`` runs the user's statements, pushing on a tape
  each value a rebinding or an indexed write overwrites, each loop's trip count
  and index; it returns ``(output, saved)``.
* ``f_backward(d<output>, saved)`` walks the statements in reverse: for each one
  it adds the rule's contributions into the adjoints of the arguments, then
  pops what the statement overwrote, so every adjoint reads the values the
  forward sweep saw. Branches replay their recorded conditions; loops run their
  recorded trip counts backwards.

Adjoints start as the Python number 0.0 ("nothing yet") and are accumulated
with ``+``; every generated statement carries the Origin of the user statement
it comes from, so code generation can comment ``# grad of: <line>``.
"""

import builtins
import copy
import inspect
import operator

import gast

from srcgrad import anno, grad_mode, rules, templates
from srcgrad import optimize
from srcgrad.transform.anf import is_runtime_helper
from srcgrad.analysis import kinds as kinds_
from srcgrad.analysis.ranks import INT, UNKNOWN
from srcgrad.analysis.activity import names_in, primitive_of
from srcgrad.errors import NonDifferentiableError, UnsupportedError
from srcgrad.rules import Attribute, Method
from srcgrad.templates import name, replace

Static = anno.Static

# Calls that change their receiver or an out= array are rewritten or refused
# before this pass, from one table (transform/mutation.py).

def _push(value_node, origin, key):
    stmt = gast.Expr(value=gast.Call(func=name("push"), args=[value_node], keywords=[]))
    anno.setanno(stmt, Static.ORIGIN, origin)
    anno.setanno(stmt, Static.TAPE, key)
    return stmt


def _guard(test, body):
    node = gast.If(test=test, body=body, orelse=[])
    anno.setanno(node, Static.GUARD, True)
    return node


def _tag(stmts, origin):
    for s in stmts:
        if origin is not None and not anno.hasanno(s, Static.ORIGIN):
            anno.setanno(s, Static.ORIGIN, origin)
    return stmts


class ReverseAD:
    def __init__(self, node, info, activity, namer, wrt, fixed, hook_names=(), kinds=None,
                 containers=frozenset()):
        self.node = node
        self.kinds = kinds   # analysis/kinds.py: which values are complex, which integer
        # Names that may hold a container (analysis/ranks.py ``containers``).
        self.containers = containers
        self.info = info
        self.act = activity
        self.namer = namer
        self.wrt = wrt
        self.fixed = fixed
        self.adjoints = {}
        self.captures = {}
        self.in_place = False
        self.bindings = {}
        self.copied_params = set()
        self.flag = None
        self.functions = set()  # custom Function classes applied in the function
        # hooks= option: called at every binding of the name.
        self.hooks = {}
        # register_hook(y, fn) in the code: hooks live in a list made at each binding of y,
        # so a hook belongs to the binding it was registered on, and only if the call ran.
        self.hook_lists = {}
        for stmt in gast.walk(node):
            call = _register_hook_call(stmt)
            if call is not None:
                if len(call.args) != 2 or not isinstance(call.args[0], gast.Name):
                    raise self.error(anno.getanno(stmt, Static.ORIGIN), UnsupportedError,
                                     "register_hook takes a variable and a function",
                                     "Write srcgrad.register_hook(y, fn).")
                hooked = call.args[0].id
                if hooked not in self.hook_lists:
                    self.hook_lists[hooked] = namer.new(f"{hooked}_hooks")
        for hooked in hook_names:
            self.hooks.setdefault(hooked, []).append(replace_expr(f"hooks[{hooked!r}]"))
        # A local asked for by wrt: its gradient is taken where its last value is made
        # (its last binding, or an indexed write after it), not at the end of the sweep.
        written = {s.targets[0].value.id for s in gast.walk(node) if isinstance(s, gast.Assign)
                   and isinstance(s.targets[0], gast.Subscript) and isinstance(s.targets[0].value, gast.Name)}
        for w in wrt:
            if w not in activity.params and (w in activity.saved or w in written):
                self.captures[w] = namer.new(f"grad_{w}")
        special = set(wrt) | set(self.hook_lists) | set(hook_names)
        self.constants = _constant_names(node, special)
        self.first_bindings = _first_bindings(node, special)
        self.store_counts = _store_counts(node)

    # ----- names -----

    def d(self, primal):
        if primal not in self.adjoints:
            self.adjoints[primal] = self.namer.new("d" + primal)
        return self.adjoints[primal]

    def needs(self, node):
        return isinstance(node, gast.Name) and node.id in self.act.adjoint

    def error(self, origin, cls, message, hint=None):
        if origin is None:
            return cls(message, self.info.filename, hint=hint)
        return origin.error(cls, message, hint)

    # ----- blocks -----

    def block(self, body):
        fwd, rev = [], []
        for stmt in body:
            f, r = self.visit(stmt)
            fwd.extend(f)
            rev[:0] = r
        return fwd, rev

    def visit(self, s):
        origin = anno.getanno(s, Static.ORIGIN)
        self.flag = anno.getanno(s, Static.GRAD_FLAG)
        call = _register_hook_call(s)
        if call is not None:
            # Forward: add the hook to the list of the binding current now; nothing to undo.
            hooks = self.hook_lists[call.args[0].id]
            if isinstance(s, gast.Assign):
                fwd = replace(f"TARGET = rt.hook_handle({hooks}, FN)", TARGET=s.targets[0], FN=call.args[1])
            else:
                fwd = replace(f"{hooks}.append(FN)", FN=call.args[1])
            return _tag(fwd, origin), []
        if isinstance(s, gast.Assign):
            target = s.targets[0]
            if isinstance(target, gast.Name):
                return self.visit_assign(s, target.id, origin)
            return self.visit_setitem(s, target, origin)
        if isinstance(s, gast.Expr):
            return self.visit_expr(s, origin)
        if isinstance(s, gast.If):
            if anno.getanno(s, Static.BREAK_EXIT):
                return [s], []
            body_f, body_r = self.block(s.body)
            else_f, else_r = self.block(s.orelse)
            fwd = gast.If(test=s.test, body=body_f or [gast.Pass()], orelse=else_f)
            _tag([fwd], origin)
            if not body_r and not else_r:
                return [fwd], []
            rev = gast.If(test=copy.deepcopy(s.test), body=body_r or [gast.Pass()], orelse=else_r)
            return [fwd], _tag([rev], origin)
        if isinstance(s, gast.For):
            return self.visit_for(s, origin)
        if isinstance(s, gast.While):
            return self.visit_while(s, origin)
        if isinstance(s, (gast.Assert, gast.Raise, gast.Break, gast.Pass)):
            return [s], []
        if isinstance(s, gast.Return):
            raise self.error(origin, UnsupportedError, "return inside a block after canonicalization")
        raise self.error(origin, UnsupportedError, f"statement {type(s).__name__} is not supported")

    # ----- loops -----

    def _loop_body(self, body):
        """Split a trailing `if stop: break` so the iteration's pushes come before it."""
        if body and anno.getanno(body[-1], Static.BREAK_EXIT):
            return body[:-1], [body[-1]]
        return body, []

    def sequence_checks(self, s, origin):
        """``for v in X`` over a name that may hold a container reads ``X[i]``: a run-time
        check that X is a list, tuple or array (a dict's items are not its keys)."""
        if not anno.getanno(s, Static.ITERATES):
            return []
        bases = []
        for st in s.body:
            if isinstance(st, gast.Assign) and isinstance(st.value, gast.Subscript) \
                    and isinstance(st.value.value, gast.Name) and isinstance(st.value.slice, gast.Name) \
                    and st.value.slice.id == s.target.id and st.value.value.id in self.containers \
                    and st.value.value.id not in bases:
                bases.append(st.value.value.id)
        checks = []
        for b in bases:
            error_name = self.namer.new("loop_error")
            self.bindings[error_name] = self.error(
                origin, UnsupportedError, f"a for loop over {b!r}, which holds a dict (or another "
                f"structure that is not a sequence), is not supported",
                "Iterate over list(d) (the keys), list(d.values()) or list(d.items()).")
            checks += replace(f"rt.check_sequence({b}, {error_name})")
        return _tag(checks, origin)

    def visit_for(self, s, origin):
        index = s.target.id
        body, exit_ = self._loop_body(s.body)
        checks = self.sequence_checks(s, origin)
        if anno.getanno(s.iter, Static.PRIMITIVE) is builtins.range and not any(
                isinstance(n, gast.Name) and n.id == index and not isinstance(n.ctx, gast.Load)
                for st in body for n in gast.walk(st)):
            fwd, rev = self.visit_range_for(s, index, body, exit_, origin)
            return checks + fwd, rev
        count = self.namer.new(f"n_{index}")
        body_f, body_r = self.block(body)
        fwd = [_push(name(index), origin, index)]
        fwd += replace(f"{count} = 0")
        loop = gast.For(target=s.target, iter=s.iter, orelse=[], type_comment=None,
                        body=replace(f"{count} = {count} + 1") + body_f
                        + [_push(name(index), origin, index)] + exit_)
        fwd += [loop, _push(name(count), origin, count)]
        fwd = checks + fwd
        pop_count = replace(f"{count} = pop()")
        anno.setanno(pop_count[0], Static.TAPE, count)
        pop_index = replace(f"{index} = pop()")
        anno.setanno(pop_index[0], Static.TAPE, index)
        pop_before = replace(f"{index} = pop()")
        anno.setanno(pop_before[0], Static.TAPE, index)
        rev_loop = gast.For(target=name("_", True), iter=replace_expr(f"range({count})"),
                            body=pop_index + body_r, orelse=[], type_comment=None)
        rev = pop_count + [rev_loop] + pop_before
        return _tag(fwd, origin), _tag(rev, origin)

    def visit_range_for(self, s, index, body, exit_, origin):
        """A loop over a range whose body never rebinds the index: the reverse sweep
        runs the same range backwards, so the tape holds one range per loop instead
        of one index per iteration."""
        steps = self.namer.new(f"range_{index}")
        body_f, body_r = self.block(body)
        # An index used only in its loop: the value it had before is never read again.
        local = self.store_counts[index] == 1 and not any(
            isinstance(n, gast.Name) and n.id == index for st in _outside(self.node.body, s)
            for n in gast.walk(st))
        fwd = [] if local else [_push(name(index), origin, index)]
        fwd += replace(f"{steps} = ITER", ITER=s.iter)
        count = []
        if exit_:   # a break: the iterations run are a prefix of the range
            count = [self.namer.new(f"n_{index}")]
            fwd += replace(f"{count[0]} = 0")
        loop = gast.For(target=s.target, iter=name(steps), orelse=[], type_comment=None,
                        body=[s for c in count for s in replace(f"{c} = {c} + 1")] + body_f + exit_)
        ran = f"{steps}[:{count[0]}]" if count else steps
        fwd += [loop, _push(replace_expr(ran), origin, steps)]
        pop_steps = replace(f"{steps} = pop()")
        anno.setanno(pop_steps[0], Static.TAPE, steps)
        pop_before = replace(f"{index} = pop()")
        anno.setanno(pop_before[0], Static.TAPE, index)
        rev_loop = gast.For(target=name(index, True), iter=replace_expr(f"reversed({steps})"),
                            body=body_r or [gast.Pass()], orelse=[], type_comment=None)
        return _tag(fwd, origin), _tag(pop_steps + [rev_loop] + ([] if local else pop_before), origin)

    def visit_while(self, s, origin):
        count = self.namer.new("n_loop")
        body_f, body_r = self.block(s.body)
        fwd = replace(f"{count} = 0")
        fwd.append(gast.While(test=s.test, orelse=[],
                              body=replace(f"{count} = {count} + 1") + body_f))
        fwd.append(_push(name(count), origin, count))
        pop_count = replace(f"{count} = pop()")
        anno.setanno(pop_count[0], Static.TAPE, count)
        rev = pop_count + [gast.For(target=name("_", True), iter=replace_expr(f"range({count})"),
                                    body=body_r or [gast.Pass()], orelse=[], type_comment=None)]
        return _tag(fwd, origin), _tag(rev, origin)

    # ----- assignments -----

    def visit_assign(self, s, target, origin):
        fwd, rev = self._visit_assign(s, target, origin)
        hooks = self.hook_lists.get(target)
        if hooks is None:
            return fwd, rev
        saved = target in self.act.saved
        fwd = fwd + _tag(([_push(name(hooks), origin, hooks)] if saved else []) + replace(f"{hooks} = []"),
                         origin)
        run = []
        if target in self.act.adjoint:
            dt = self.d(target)
            run = replace(f"{dt} = rt.run_hooks({hooks}, {dt}, {target})")
        restore = replace(f"{hooks} = pop()") if saved else []
        if restore:
            anno.setanno(restore[0], Static.TAPE, hooks)
        # Pushed after the binding's own save, so popped before it.
        return fwd, _tag(run + restore, origin) + rev

    def _visit_assign(self, s, target, origin):
        saved = target in self.act.saved and target not in self.constants \
            and id(s) not in self.first_bindings
        fwd = [_push(name(target), origin, target)] if saved else []
        fwd += self.alias_checks(s, target)
        fwd.append(s)
        restore = replace(f"{target} = pop()") if saved else []
        if restore:
            anno.setanno(restore[0], Static.TAPE, target)
        if target not in self.act.adjoint:
            return _tag(fwd, origin), _tag(restore, origin)
        if anno.getanno(s, Static.NO_ADJOINT):
            # A constant binding: no gradient flows through it, and none to the value it replaced.
            reset = replace(f"{self.d(target)} = 0.0") if saved else []
            return _tag(fwd, origin), _tag(reset + restore, origin)
        value = s.value
        dt = self.d(target)
        rev = []
        for hook in self.hooks.get(target, ()):
            rev += replace(f"{dt} = rt.run_hook(HOOK, {dt}, {target})", HOOK=hook)
        function_cls = _custom_function(value)
        if function_cls is not None:
            return self.visit_function_apply(s, target, function_cls, fwd, restore, rev, origin)
        if target in self.captures:
            cap = self.captures[target]
            rev += replace(f"if {cap} is None:\n    {cap} = {dt}")
        reads_self = target in names_in(value)
        if not saved:
            rev += self.guarded(value, dt, self.contributions(value, name(dt), name(target), origin))
        elif not reads_self:
            rev += self.guarded(value, dt, self.contributions(value, name(dt), name(target), origin))
            rev += replace(f"{dt} = 0.0")
            rev += restore
        else:
            d_new = self.namer.new(dt + "_new")
            contribs = self.contributions(value, name(d_new), name(target), origin)
            reads_out = target in set().union(*[names_in(c) for c in contribs]) if contribs else False
            if reads_out:
                y_new = self.namer.new(target + "_new")
                contribs = self.contributions(value, name(d_new), name(y_new), origin)
                rev += replace(f"{d_new} = {dt}\n{y_new} = {target}\n{dt} = 0.0")
            else:
                rev += replace(f"{d_new} = {dt}\n{dt} = 0.0")
            rev += restore
            rev += self.guarded(value, d_new, contribs)
        return _tag(fwd, origin), _tag(rev, origin)

    def visit_function_apply(self, s, target, cls, fwd, restore, rev, origin):
        """``t = Func.apply(...)``: forward keeps ctx on the tape, the adjoint calls Func.backward."""
        call = s.value
        if call.keywords:
            raise self.error(origin, UnsupportedError, f"{cls.__name__}.apply takes positional arguments only")
        self.functions.add(cls)
        ctx = self.namer.new(f"{cls.__name__}_ctx")
        flags = gast.Tuple(elts=[gast.Constant(value=self._any_needed(a), kind=None) for a in call.args],
                           ctx=gast.Load())
        args = gast.Tuple(elts=list(call.args), ctx=gast.Load())
        forward_call = replace(f"{target}, {ctx} = rt.function_forward(CLS, ARGS, FLAGS)",
                               CLS=call.func.value, ARGS=args, FLAGS=flags)
        fwd = fwd[:-1] + forward_call + [_push(name(ctx), origin, ctx)]
        pop_ctx = replace(f"{ctx} = pop()")
        anno.setanno(pop_ctx[0], Static.TAPE, ctx)
        dt = self.d(target)
        rev = pop_ctx + rev
        if target in self.captures:
            cap = self.captures[target]
            rev += replace(f"if {cap} is None:\n    {cap} = {dt}")
        grads = self.namer.new(f"{cls.__name__}_grads")
        needed = [k for k, a in enumerate(call.args) if self._any_needed(a)]
        if needed:
            rev += replace(f"{grads} = rt.function_backward(CLS, {ctx}, {dt})", CLS=call.func.value)
        if target in self.act.saved:
            rev += replace(f"{dt} = 0.0") + restore
        for k in needed:
            rev += self.flagged(self.accumulate(call.args[k], replace_expr(f"rt.or_zero({grads}[{k}])")))
        return _tag(fwd, origin), _tag(rev, origin)

    def guarded(self, value, dt, contribs):
        """Skip contributions while ``dt`` is still the scalar zero, for rules that reshape it.

        Elementwise rules broadcast a scalar zero harmlessly; reductions, reshapes
        and matrix products need ``dt`` to have the output's shape. Under
        ``set_grad_enabled(flag)`` the contributions also wait for the flag.
        """
        if contribs and not self.elementwise(value):
            contribs = [_guard(replace_expr(f"rt.has_grad({dt})"), contribs)]
        return self.flagged(contribs)

    def flagged(self, contribs):
        if contribs and self.flag is not None:
            return [_guard(name(self.flag), contribs)]
        return contribs

    @staticmethod
    def elementwise(value):
        import numpy
        if isinstance(value, (gast.Name, gast.Subscript, gast.UnaryOp, gast.Constant)):
            return True
        if isinstance(value, gast.BinOp):
            return not isinstance(value.op, gast.MatMult)
        if isinstance(value, gast.Call):
            return isinstance(anno.getanno(value, Static.PRIMITIVE), numpy.ufunc)
        return False

    def alias_checks(self, s, written):
        """Run-time checks that an in-place write does not reach another name (aliasing.py)."""
        out = []
        for other, index, error in anno.getanno(s, Static.ALIAS_CHECK) or ():
            error_name = self.namer.new("aliasing_error")
            self.bindings[error_name] = error
            if index is None:
                out += replace(f"rt.check_unshared({written}, {other}, {error_name})")
            else:
                out += replace(f"rt.check_unshared({written}, {other}, {error_name}, INDEX)",
                               INDEX=index_value(index))
        return out

    def argument_checks(self):
        """Checks on entry that arguments written in place share no memory with the others."""
        out = []
        for written, other, error in getattr(self.node, "_srcgrad_param_checks", ()):
            error_name = self.namer.new("aliasing_error")
            self.bindings[error_name] = error
            out += replace(f"rt.check_unshared({written}, {other}, {error_name})")
        return out

    def visit_setitem(self, s, target, origin):
        base = target.value.id
        index = target.slice
        self.check_fresh(base, origin)
        # A base that may be a dict: the key may be new (then undoing the write deletes it).
        keyed = base in self.containers
        if keyed:
            saved_value = replace_expr("rt.save_item(B, INDEX)", B=name(base), INDEX=index_value(index))
            restore = replace(f"rt.restore_item({base}, INDEX, pop())", INDEX=index_value(index))[0]
        else:
            saved_value = gast.Call(func=replace_expr("rt.save"), args=[
                gast.Subscript(value=name(base), slice=copy.deepcopy(index), ctx=gast.Load())], keywords=[])
            restore = gast.Assign(targets=[gast.Subscript(value=name(base, False), slice=copy.deepcopy(index),
                                                          ctx=gast.Store())],
                                  value=replace_expr("pop()"), type_comment=None)
        fwd = [_push(saved_value, origin, ("item", base))] + self.alias_checks(s, base) + [s]
        anno.setanno(restore, Static.TAPE, ("item", base))
        rev = []
        if base in self.act.adjoint:
            self.in_place = True
            db = self.d(base)
            if base in self.captures:   # the value base holds when the function returns
                cap = self.captures[base]
                rev += replace(f"if {cap} is None:\n    {cap} = rt.save({db})")
            if self.needs(s.value) and not anno.getanno(s, Static.NO_ADJOINT):
                dv = self.d(s.value.id)
                grad = replace_expr(f"rt.unbroadcast(rt.written_grad({db}, {base}, INDEX), {s.value.id})",
                                    INDEX=index_value(index))
                base_kind = self.kind_of(name(base))
                if base_kind not in (kinds_.FLOAT, kinds_.COMPLEX):
                    # An array whose dtype is known only at run time: a store into an
                    # integer array truncates (no gradient).
                    grad = replace_expr(f"rt.dtype_grad(G, rt.array_dtype({base}), {s.value.id})", G=grad)
                if base_kind != kinds_.FLOAT and self.kind_of(s.value) != kinds_.COMPLEX:
                    grad = replace_expr(f"rt.real_like(G, {s.value.id})", G=grad)
                into_array = replace(f"{dv} = {dv} + G", G=grad)
                if keyed:   # a list or dict, or (known only at run time) an array
                    into_container = self.accumulate(s.value, replace_expr(
                        f"rt.take_grad({db}, INDEX)", INDEX=index_value(index)))
                    into_array = [gast.If(test=replace_expr(f"rt.is_node({base})"),
                                          body=into_container or [gast.Pass()], orelse=into_array)]
                rev += self.flagged(into_array)
            rev += replace(f"{db} = rt.zero_grad_at({db}, {base}, INDEX)", INDEX=index_value(index))
        rev.append(restore)
        return _tag(fwd, origin), _tag(rev, origin)

    def check_fresh(self, base, origin):
        """An indexed write into a parameter writes into a copy: inputs are never mutated."""
        if base in self.act.params:
            self.copied_params.add(base)

    def visit_expr(self, s, origin):
        call = s.value
        func = call.func
        prim = anno.getanno(call, Static.PRIMITIVE)
        if isinstance(prim, Method) and isinstance(func.value, gast.Name):
            receiver = func.value.id
            if prim == "append":
                rev = []
                if receiver in self.act.adjoint:
                    dl = self.d(receiver)
                    item = call.args[0]
                    if self.needs(item) and not anno.getanno(s, Static.NO_ADJOINT):
                        last = self.namer.new(f"d{item.id}_item")
                        di = self.d(item.id)
                        rev += replace(f"{dl}, {last} = rt.seq_pop({dl})")
                        rev += self.flagged(replace(f"{di} = {di} + {last}"))
                    else:
                        rev += replace(f"{dl}, _ = rt.seq_pop({dl})")
                rev += replace(f"{receiver}.pop()")
                anno.setanno(rev[-1], Static.TAPE, ("list", receiver))
                return _tag(self.alias_checks(s, receiver) + [s], origin), _tag(rev, origin)
        return [s], []

    # ----- rules -----

    def contributions(self, value, dy, y, origin):
        """Statements adding ``value``'s contributions to its arguments' adjoints."""
        if isinstance(value, gast.Name):
            return self.accumulate(value, dy)
        if isinstance(value, gast.Constant) or isinstance(value, (gast.Compare, gast.BoolOp)):
            return []
        if isinstance(value, (gast.Tuple, gast.List)):
            out = []
            for k, elt in enumerate(value.elts):
                out += self.accumulate(elt, replace_expr(f"rt.seq_item(DY, {k})", DY=dy))
            return out
        if isinstance(value, gast.Dict):
            out = []
            for key, elt in zip(value.keys, value.values):
                out += self.accumulate(elt, replace_expr("rt.seq_item(DY, KEY)", DY=dy,
                                                         KEY=copy.deepcopy(key)))
            return out
        if isinstance(value, gast.Subscript):
            base = value.value
            if not self.needs(base):
                return []
            self.in_place = True
            db = self.d(base.id)
            return replace(f"{db} = rt.add_at({db}, {base.id}, INDEX, DY)", INDEX=index_value(value.slice), DY=dy)
        primitive = primitive_of(value)
        if isinstance(value, gast.Attribute):
            receiver = value.value
            if self.maybe_container(receiver):
                return self.attribute_of_container(primitive, receiver, value, dy, y, origin)
            return self.apply_rule(primitive, [receiver], {}, dy, y, origin, value)
        if isinstance(value, (gast.BinOp,)):
            if isinstance(value.op, (gast.Add, gast.Mult)) and (
                    self.maybe_container(value.left) or self.maybe_container(value.right)):
                return self.container_binop(primitive, value, dy, y, origin)
            return self.apply_rule(primitive, [value.left, value.right], {}, dy, y, origin, value)
        if isinstance(value, gast.UnaryOp):
            return self.apply_rule(primitive, [value.operand], {}, dy, y, origin, value)
        if isinstance(value, gast.Call):
            args = list(value.args)
            if isinstance(primitive, Method):
                args = [value.func.value] + args
            kwargs = {k.arg: k.value for k in value.keywords}
            return self.apply_rule(primitive, args, kwargs, dy, y, origin, value)
        return []

    def maybe_container(self, node):
        return isinstance(node, (gast.List, gast.Tuple, gast.Dict)) or (
            isinstance(node, gast.Name) and node.id in self.containers)

    def container_binop(self, primitive, value, dy, y, origin):
        """``a + b`` or ``a * b`` where an operand may be a list or tuple: concatenation or
        repetition (the adjoint splits, or sums the copies), decided at run time unless
        both operands are displays; otherwise the arithmetic rule."""
        a, b = value.left, value.right
        if not any(self._any_needed(x) for x in (a, b)):
            return []
        if isinstance(value.op, gast.Add):
            grads = self.namer.new("concat_grads")
            seq = [gast.Assign(targets=[name(grads, True)], value=replace_expr(
                "rt.seq_concat_vjp(DY, A, B)", DY=dy, A=copy.deepcopy(a), B=copy.deepcopy(b)),
                type_comment=None)]
            seq += self.accumulate(a, replace_expr(f"{grads}[0]"))
            seq += self.accumulate(b, replace_expr(f"{grads}[1]"))
        else:
            grads = self.namer.new("repeat_grads")
            seq = [gast.Assign(targets=[name(grads, True)], value=replace_expr(
                "rt.seq_repeat_vjp(DY, A, B)", DY=dy, A=copy.deepcopy(a), B=copy.deepcopy(b)),
                type_comment=None)]
            into_a = self.accumulate(a, name(grads))
            into_b = self.accumulate(b, name(grads))
            seq.append(gast.If(test=replace_expr("rt.is_node(A)", A=copy.deepcopy(a)),
                               body=into_a or [gast.Pass()], orelse=into_b))
        if isinstance(a, (gast.List, gast.Tuple)) or isinstance(b, (gast.List, gast.Tuple)):
            return seq
        arithmetic = self.apply_rule(primitive, [a, b], {}, dy, y, origin, value)
        test = replace_expr("rt.container_op(A, B)" if isinstance(value.op, gast.Add)
                            else "rt.container_op(A, B, True)", A=copy.deepcopy(a), B=copy.deepcopy(b))
        return [gast.If(test=test, body=seq or [gast.Pass()], orelse=arithmetic)]

    def attribute_of_container(self, primitive, receiver, value, dy, y, origin):
        """``y = p.w`` where ``p`` may be a structure (a dataclass, namedtuple or registered
        object): the adjoint adds ``dy`` into ``dp``'s field ``w``; an array attribute
        (``x.T``) keeps its rule, chosen at run time."""
        if not self.needs(receiver):
            return []
        dp = self.d(receiver.id)
        error_name = self.namer.new("attribute_error")
        self.bindings[error_name] = self.error(
            origin, NonDifferentiableError, f"a gradient reaches the attribute .{value.attr} of "
            f"{receiver.id!r}, which is not a structure srcgrad knows",
            "Make its class a dataclass, or register it with srcgrad.register_pytree_node.")
        field = replace(f"{dp} = rt.attr_add({dp}, {receiver.id}, {value.attr!r}, DY, {error_name})",
                        DY=dy)
        if rules.lookup(primitive) is None:
            return field
        arithmetic = self.apply_rule(primitive, [receiver], {}, dy, y, origin, value)
        return [gast.If(test=replace_expr(f"rt.is_node({receiver.id})"), body=field,
                        orelse=arithmetic or [gast.Pass()])]

    def accumulate(self, target, grad, sequence=False):
        """``d<target> += grad`` for each name in ``target`` that needs an adjoint.

        ``sequence``: ``grad`` may be a list (the gradient of a rule's parameter that
        takes a sequence, such as ``rt.seq_item``'s: a second-order sweep meets the
        list adjoint of a tuple result), so it is added with ``rt.seq_add``."""
        if isinstance(target, (gast.List, gast.Tuple)):
            out = []
            if not isinstance(grad, gast.Name):
                # One gradient list for all elements: compute it once.
                temp = self.namer.new("grads")
                out += [gast.Assign(targets=[name(temp, True)], value=grad, type_comment=None)]
                grad = name(temp)
            for k, elt in enumerate(target.elts):
                out += self.accumulate(elt, replace_expr(f"rt.seq_item(G, {k})", G=grad))
            return out
        if not self.needs(target):
            return []
        dt = self.d(target.id)
        if sequence or target.id in self.act.sequences:
            return replace(f"{dt} = rt.seq_add({dt}, G)", G=grad)
        if target.id in self.containers:
            return replace(f"{dt} = rt.add_grad({dt}, G)", G=grad)
        return replace(f"{dt} = {dt} + G", G=grad)

    def kind_of(self, node):
        return kinds_.UNKNOWN if self.kinds is None else self.kinds.of(node)

    def is_complex(self, value, args):
        """Whether the statement computing ``value`` from ``args`` is certainly on complex values."""
        return self.kinds is not None and any(
            self.kinds.of(v) == kinds_.COMPLEX for v in [value] + args if not isinstance(v, gast.List))

    def complex_rule(self, primitive, value, origin):
        """The rule of ``primitive`` on complex values (rules/complex_rules.py), or refuse."""
        rule = rules.lookup_complex(primitive)
        if rule is None:
            raise self.error(
                origin, UnsupportedError,
                f"srcgrad has no gradient for {_describe(primitive, value)} on complex values",
                "Complex intermediates support + - * /, exp, abs, angle, real, imag, conj, sum, "
                "mean, reshape, @ and np.fft.fft/ifft. Split the value into its real and imaginary "
                "parts (z.real, z.imag) before this operation, or write a custom srcgrad.Function.")
        return rule

    def apply_rule(self, primitive, args, kwargs, dy, y, origin, value):
        active = [a for a in list(args) + list(kwargs.values()) if self._any_needed(a)]
        if not active or rules.is_nondifferentiable(primitive):
            return []
        checks = self.sequence_operand_checks(primitive, active, origin, value)
        return checks + self._apply_rule(primitive, args, kwargs, dy, y, origin, value, active)

    def sequence_operand_checks(self, primitive, active, origin, value):
        """A list or tuple that NumPy reads as an array (``np.prod(lst)``, ``x * lst``) would
        need its gradient split into items, which the rules do not do: refused, at compile
        time for a display, at run time for a name that may hold one."""
        rule = rules.lookup(primitive)
        if rule is None or not rule.builtin or rules.takes_sequence_args(primitive) \
                or is_runtime_helper(primitive):
            # A user's rule gets the list as it is, and its gradient is that of the array
            # NumPy makes of it (rt.seq_item splits it); srcgrad's own adjoints take lists.
            return []
        checks = []
        for a in active:
            if isinstance(a, (gast.List, gast.Tuple)):
                raise self.error(origin, UnsupportedError,
                                 f"a list or tuple passed to {_describe(primitive, value)} is read "
                                 f"as an array; srcgrad does not split its gradient into items",
                                 "Convert it first: np.stack([...]) or np.asarray([...]).")
            if isinstance(a, gast.Name) and (a.id in self.containers or a.id in self.act.sequences):
                error_name = self.namer.new("operand_error")
                self.bindings[error_name] = self.error(
                    origin, UnsupportedError,
                    f"{a.id!r} holds a list or tuple, which {_describe(primitive, value)} reads as "
                    f"an array; srcgrad does not split its gradient into items",
                    "Convert it first: np.stack(...) or np.asarray(...).")
                checks += replace(f"rt.check_array_operand({a.id}, {error_name})")
        return checks

    def _apply_rule(self, primitive, args, kwargs, dy, y, origin, value, active):
        on_complex = self.is_complex(value, list(args) + list(kwargs.values()))
        if on_complex:
            rule = self.complex_rule(primitive, value, origin)
        else:   # (np.imag of a real value has only its complex rule)
            rule = rules.lookup(primitive) or rules.lookup_complex(primitive)
        if rule is None:
            what = _describe(primitive, value)
            raise self.error(
                origin, NonDifferentiableError,
                f"srcgrad has no gradient rule for {what}, and its argument "
                f"{', '.join(repr(_show(a)) for a in active)} needs a gradient",
                "Register one with @srcgrad.adjoint, wrap the computation in a custom "
                "srcgrad.Function, or use srcgrad.detach if no gradient should flow through it.")
        try:
            bound = rule.signature.bind(dy, y, *args, **kwargs)
        except TypeError as exc:
            raise self.error(origin, UnsupportedError,
                             f"this call to {_describe(primitive, value)} is not supported by "
                             f"srcgrad's rule ({exc})") from None
        self.check_literals(rule, bound, primitive, origin, value)
        params = rule.params
        arg_nodes = {}
        for p in list(rule.signature.parameters.values()):
            if p.name in bound.arguments:
                v = bound.arguments[p.name]
                if p.kind is inspect.Parameter.VAR_POSITIONAL:
                    v = gast.Tuple(elts=list(v), ctx=gast.Load())
                arg_nodes[p.name] = v
            elif p.default is not inspect.Parameter.empty:
                arg_nodes[p.name] = gast.Constant(value=p.default, kind=None) \
                    if templates.is_literal(p.default) else None
            elif p.kind is inspect.Parameter.VAR_POSITIONAL:
                arg_nodes[p.name] = gast.Tuple(elts=[], ctx=gast.Load())
        out = []
        if rule.builtin and templates.is_template(rule) and None not in arg_nodes.values():
            stmts, grads = templates.instantiate(rule, arg_nodes, self.namer, self.fixed)
            stmts = [_NoDtypeCast().visit(st) for st in stmts]
            grads = [None if g is None else _NoDtypeCast().visit(g) for g in grads]
            needed = [(p, g) for p, g in zip(params, grads)
                      if g is not None and self._any_needed(arg_nodes.get(p.name))]
            used = set()
            for _, g in needed:
                used |= names_in(g)
            # Keep only the template statements the emitted gradients read.
            keep = []
            for st in reversed(stmts):
                if st.targets[0].id in used:
                    keep.insert(0, st)
                    used |= names_in(st.value)
            out += keep
            for p, g in needed:
                out += self.accumulate(arg_nodes[p.name], self.real_part(arg_nodes[p.name], g, on_complex),
                                       sequence=p.name in rule.sequences)
            return out
        # A rule that is not a template: called at run time.
        rule_name = self.namer.new(f"{rule.name}_rule")
        self.bindings[rule_name] = rule.function
        call = gast.Call(func=name(rule_name), args=[dy, y] + list(args),
                         keywords=[gast.keyword(arg=k, value=v) for k, v in kwargs.items()])
        g = self.namer.new(f"{rule.name}_grads")
        out.append(gast.Assign(targets=[name(g, True)], value=call, type_comment=None))
        single = len([p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                     inspect.Parameter.POSITIONAL_OR_KEYWORD)]) <= 1
        for k, p in enumerate(params):
            node = arg_nodes.get(p.name)
            if not self._any_needed(node):
                continue
            grad = name(g) if single and k == 0 else replace_expr(f"{g}[{k}]")
            out += self.accumulate(node, self.real_part(node, grad, on_complex),
                                   sequence=p.name in rule.sequences)
        return out

    def real_part(self, node, grad, on_complex):
        """``grad`` of ``node``, a real value that entered complex arithmetic: its real part."""
        if on_complex and isinstance(node, gast.Name) and self.kind_of(node) != kinds_.COMPLEX:
            return replace_expr(f"rt.real_like(G, {node.id})", G=grad)
        return grad

    def check_literals(self, rule, bound, primitive, origin, value):
        """A literal option the rule does not support (``np.pad(x, 1, mode="mean")``)
        is refused here, at its line, rather than when the reverse sweep runs."""
        for param, allowed in rule.literals.items():
            arg = bound.arguments.get(param)
            if isinstance(arg, gast.Constant) and arg.value not in allowed:
                raise self.error(
                    origin, UnsupportedError,
                    f"srcgrad's gradient of {_describe(primitive, value)} does not support "
                    f"{param}={arg.value!r} (supported: {', '.join(map(repr, allowed))})",
                    "Write a custom srcgrad.Function, or register your own rule with @srcgrad.adjoint.")

    def _any_needed(self, node):
        if node is None:
            return False
        if isinstance(node, (gast.List, gast.Tuple)):
            return any(self._any_needed(e) for e in node.elts)
        return self.needs(node)


class _NoDtypeCast(gast.NodeTransformer):
    """``rt.dtype_grad(g, None, x)`` (a rule's cast with no dtype given) is ``g``."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if optimize.is_rt_call(node, "dtype_grad") and len(node.args) == 3 \
                and isinstance(node.args[1], gast.Constant) and node.args[1].value is None:
            return node.args[0]
        return node


def _store_counts(node):
    """Name -> how many times the function binds it (parameters count once)."""
    counts = {}
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _constant_names(node, excluded):
    """Names bound once, to arithmetic on number literals and other such names: every
    execution of the binding gives the same number, so it needs no tape (``dt / C`` in
    a loop, with ``dt = 0.25`` and ``C = 10.0`` bound before it)."""
    counts = _store_counts(node)
    values = {}
    for s in optimize.walk_statements(node.body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            values[s.targets[0].id] = s.value
    constants = set()

    def arithmetic(e):
        if isinstance(e, gast.Constant):
            return type(e.value) in (int, float)
        if isinstance(e, gast.Name):
            return e.id in constants
        if isinstance(e, gast.BinOp):
            return not isinstance(e.op, gast.MatMult) and arithmetic(e.left) and arithmetic(e.right)
        if isinstance(e, gast.UnaryOp):
            return isinstance(e.op, (gast.USub, gast.UAdd)) and arithmetic(e.operand)
        return False

    changed = True
    while changed:
        changed = False
        for n, value in values.items():
            if n not in constants and n not in excluded and counts.get(n) == 1 and arithmetic(value):
                constants.add(n)
                changed = True
    return constants


def _first_bindings(node, excluded):
    """ids of the top-level assignments that bind a local name for the first time: the
    value before them is no value at all, so nothing needs saving."""
    params = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    seen = set(params)
    first = set()
    for s in node.body:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and s.targets[0].id not in seen and s.targets[0].id not in excluded:
            first.add(id(s))
        seen |= {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
    return first


def _outside(body, loop):
    """The parts of ``body`` outside ``loop``: simple statements, and the headers
    (test, target, iterable) of compound ones."""
    for s in body:
        if s is loop:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            yield from (getattr(s, f) for f in ("test", "target", "iter") if hasattr(s, f))
            yield from _outside(s.body, loop)
            yield from _outside(s.orelse, loop)
        else:
            yield s


def index_value(index):
    """A subscript index as an ordinary expression (slices become slice(...) calls)."""
    index = copy.deepcopy(index)
    if isinstance(index, gast.Slice):
        parts = [p if p is not None else gast.Constant(value=None, kind=None)
                 for p in (index.lower, index.upper, index.step)]
        return gast.Call(func=name("slice"), args=parts, keywords=[])
    if isinstance(index, gast.Tuple):
        return gast.Tuple(elts=[index_value(e) for e in index.elts], ctx=gast.Load())
    return index


def _register_hook_call(stmt):
    """The ``srcgrad.register_hook(y, fn)`` call ``stmt`` makes, or None."""
    call = stmt.value if isinstance(stmt, (gast.Expr, gast.Assign)) else None
    if isinstance(call, gast.Call) and anno.getanno(call, Static.PRIMITIVE) is grad_mode.register_hook:
        return call
    return None


def _custom_function(value):
    """The srcgrad.Function subclass whose ``apply`` ``value`` calls, or None."""
    if not isinstance(value, gast.Call) or not isinstance(value.func, gast.Attribute):
        return None
    from srcgrad.custom_function import is_apply
    return is_apply(anno.getanno(value, Static.PRIMITIVE))


def replace_expr(template, **subs):
    return templates.replace_as_expression(template, **subs)




def _show(node):
    if isinstance(node, gast.Name):
        return node.id
    return type(node).__name__


_OPERATOR_SYMBOLS = {operator.add: "+", operator.sub: "-", operator.mul: "*",
                     operator.truediv: "/", operator.floordiv: "//", operator.matmul: "@",
                     operator.pow: "**", operator.mod: "%", operator.neg: "unary -",
                     operator.pos: "unary +"}


def _describe(primitive, value):
    try:
        symbol = _OPERATOR_SYMBOLS.get(primitive)
    except TypeError:   # an unhashable primitive
        symbol = None
    if symbol is not None:
        return f"the operator {symbol}"
    if isinstance(primitive, Method):
        return f"the method .{primitive}()"
    if isinstance(primitive, Attribute):
        return f"the attribute .{primitive}"
    mod = getattr(primitive, "__module__", None)
    qual = getattr(primitive, "__qualname__", None) or getattr(primitive, "__name__", None)
    if qual is None:
        return repr(primitive)
    return f"{mod}.{qual}" if mod and mod != "builtins" else qual


# ----- Assembly -----

def _tape_key(stmt):
    return anno.getanno(stmt, Static.TAPE)


def _filter(body, drop):
    out = []
    for s in body:
        if drop(s):
            continue
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                new = _filter(inner, drop)
                if field == "body" and not new:
                    new = [gast.Pass()]
                setattr(s, field, new)
        out.append(s)
    return out


def _loads(body, skip=lambda s: False):
    names = set()
    for s in optimize.walk_statements(body):
        if skip(s):
            continue
        for field in ("test", "iter", "value", "targets", "target", "msg", "exc"):
            part = getattr(s, field, None)
            parts = part if isinstance(part, list) else [part]
            for p in parts:
                if isinstance(p, gast.AST):
                    names |= names_in(p)
    return names


def prune_tape(fwd, rev):
    """Drop pushes and pops of values the adjoint never reads (to-be-recorded analysis)."""
    reads = _loads(rev, skip=lambda s: _tape_key(s) is not None)
    keys = {_tape_key(s) for s in optimize.walk_statements(fwd) if _tape_key(s) is not None}
    drop = set()
    for key in keys:
        primal = key[1] if isinstance(key, tuple) else key
        if primal not in reads:
            drop.add(key)
    fwd = _filter(fwd, lambda s: _tape_key(s) in drop)
    rev = _filter(rev, lambda s: _tape_key(s) in drop)
    uses_tape = any(_tape_key(s) is not None and not (isinstance(_tape_key(s), tuple)
                                                      and _tape_key(s)[0] == "list")
                    for s in optimize.walk_statements(fwd))
    return fwd, rev, uses_tape


def untape_top_level(fwd, rev):
    """A push the forward sweep runs once (at the function's top level) of a name it
    never rebinds afterwards (a loop's trip count or range) goes in ``saved`` instead:
    W3's while loop then needs no tape at all. Returns (fwd, rev, the names)."""
    moved = set()
    for k, s in enumerate(fwd):
        key = _tape_key(s)
        if isinstance(s, gast.Expr) and isinstance(key, str) and isinstance(s.value.args[0], gast.Name) \
                and s.value.args[0].id == key \
                and not any(isinstance(n, gast.Name) and n.id == key for later in fwd[k + 1:]
                            for t in _binding_targets(later) for n in gast.walk(t)):
            moved.add(key)
    pops = {key: [s for s in rev if _tape_key(s) == key] for key in moved}
    moved = {key for key in moved if len(pops[key]) == 1
             and sum(_tape_key(s) == key for s in optimize.walk_statements(rev)) == 1
             and sum(_tape_key(s) == key for s in optimize.walk_statements(fwd)) == 1}
    if not moved:
        return fwd, rev, moved
    fwd = [s for s in fwd if not (isinstance(s, gast.Expr) and _tape_key(s) in moved)]
    rev = [s for s in rev if _tape_key(s) not in moved]
    return fwd, rev, moved


def _binding_targets(s):
    """The targets statement ``s`` (or a statement nested in it) binds."""
    for st in optimize.walk_statements([s]):
        if isinstance(st, gast.Assign):
            yield from st.targets
        elif isinstance(st, (gast.AugAssign, gast.For)):
            yield st.target


def _top_level_bound(body):
    bound = set()
    for s in body:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            bound.add(s.targets[0].id)
    return bound


_SHAPE_READERS = {"unbroadcast": 1, "unreduce": 1}


def _shape_only(rev, primal_names):
    """Primal names the reverse sweep reads only for their shape (``rt.unbroadcast(g, x)``).

    The forward sweep saves their shapes instead of the arrays, so the tape
    does not keep intermediate results alive that the adjoint never reads.
    """
    shape_uses, other_uses = set(), set()
    for s in optimize.walk_statements(rev):
        if _tape_key(s) is not None:
            continue
        for node in gast.walk(s):
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                    and isinstance(node.func.value, gast.Name) and node.func.value.id == "rt" \
                    and node.func.attr in _SHAPE_READERS:
                k = _SHAPE_READERS[node.func.attr]
                if len(node.args) > k and isinstance(node.args[k], gast.Name):
                    shape_uses.add(node.args[k].id)
                    node.args[k]._srcgrad_shape_use = True
        for node in gast.walk(s):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) \
                    and not getattr(node, "_srcgrad_shape_use", False):
                other_uses.add(node.id)
    return (shape_uses - other_uses) & primal_names


def _copy_mutated(value, mutated):
    if isinstance(value, gast.Name) and value.id in mutated:
        return replace_expr("rt.save(V)", V=value.id)
    if isinstance(value, gast.Tuple):
        return gast.Tuple(elts=[_copy_mutated(e, mutated) for e in value.elts], ctx=gast.Load())
    return value


def build(node, info, activity, namer, wrt, fixed, name_prefix, hook_names=(), optimized=True,
          ranks=None, classes=None, scalar_reductions=False, fused=False, kinds=None,
          containers=frozenset(), aux=None):
    """The forward and backward FunctionDefs for FunctionDef ``node``.

    ``aux``: the name of the value returned beside the output (has_aux, transform/aux.py):
    the forward sweep returns ``((output, aux), saved)``.
    ``scalar_reductions``: the caller broadcasts each parameter's gradient to its
    argument's shape, so a full reduction's gradient may stay a scalar up to the
    return (``optimize.keep_reductions_scalar``). ``fused``: the elementwise statements
    will be fused into kernels, so the sweep keeps accumulating by assignment.

    Returns:
        (forward, backward, meta) where meta is a dict with ``bindings`` (extra
        names the generated code needs), ``outputs`` (returned names or None per
        output), ``tuple_output`` and ``unused`` (wrt names with no gradient).
    """
    taken_before = set(namer.taken)
    ad = ReverseAD(node, info, activity, namer, wrt, fixed, hook_names, kinds, containers)
    body = node.body[:-1]
    ret = node.body[-1]
    fwd, rev = ad.block(body)

    tuple_output = isinstance(ret.value, gast.Tuple)
    outputs = list(ret.value.elts) if tuple_output else [ret.value]
    primal_names = set(activity.params) | {n.id for n in gast.walk(node)
                                          if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    seed = namer.new("dout") if tuple_output else ad.d(outputs[0].id) if ad.needs(outputs[0]) \
        else namer.new("dout")

    # Results: one gradient per wrt name. Named before the prologue, so that an
    # active input whose every use has no gradient (``y`` of ``np.copysign(x, y)``:
    # the rule's entry is None) gets its zero adjoint there like any other.
    results = []
    unused = []
    for w in wrt:
        if w in ad.captures:
            results.append(name(ad.captures[w]))
        elif w in activity.adjoint:
            results.append(name(ad.d(w)))
        else:
            unused.append(w)
            results.append(gast.Constant(value=None, kind=None))

    # Backward prologue: seeds, zero adjoints, the array namespace.
    prologue = []
    seeded = set()
    own = "rt.own({})" if ad.in_place else "{}"
    if not tuple_output:
        if ad.needs(outputs[0]):
            seeded.add(outputs[0].id)
            if ad.in_place:
                prologue += replace(f"{seed} = rt.own({seed})")
    for primal, dname in sorted(ad.adjoints.items()):
        if primal not in seeded:
            prologue += replace(f"{dname} = 0.0")
    if tuple_output:
        for k, out in enumerate(outputs):
            if ad.needs(out):
                dname = ad.d(out.id)
                if dname not in {ad.adjoints[p] for p in ad.adjoints if p not in seeded}:
                    prologue += replace(f"{dname} = 0.0")
                prologue += replace(f"{dname} = {dname} + " + own.format(f"rt.seq_item({seed}, {k})"))
    for cap in ad.captures.values():
        prologue += replace(f"{cap} = None")

    # Hooks on parameters see their gradient once the whole reverse sweep is done.
    for param in activity.params:
        if param in ad.adjoints:
            for hook in ad.hooks.get(param, ()):
                rev += replace(f"{ad.d(param)} = rt.run_hook(HOOK, {ad.d(param)}, {param})", HOOK=hook)
            if param in ad.hook_lists:
                rev += replace(f"{ad.d(param)} = rt.run_hooks({ad.hook_lists[param]}, {ad.d(param)}, {param})")
    fwd = [s for p in activity.params if p in ad.hook_lists
           for s in replace(f"{ad.hook_lists[p]} = []")] + fwd
    primal_names = primal_names | set(ad.hook_lists.values())

    back_return = gast.Return(value=gast.Tuple(elts=results, ctx=gast.Load()))
    rev = prologue + rev + [back_return]
    generated = (set(namer.taken) - taken_before - primal_names) | set(ad.adjoints.values())
    if optimized:
        adjoint_names = set(ad.adjoints.values())
        ranks = ranks or {}
        shapes = {n: c for n, c in (classes or {}).items() if c != UNKNOWN}
        shapes.update((ad.adjoints[p], c) for p, c in list(shapes.items()) if p in ad.adjoints)
        roots = {p for p in activity.params if shapes.get(p) == p}
        stored = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
                  and isinstance(n.ctx, (gast.Store, gast.Del))}
        buffers = {ad.adjoints[p]: (p, ranks[p]) for p in activity.params
                   if p in ad.adjoints and p not in stored and type(ranks.get(p)) is int}
        indices = {n for n, r in ranks.items() if r == INT}
        returned = {k for k, w in enumerate(wrt) if w in activity.params and w not in ad.captures}
        used = optimize.transform(rev, adjoint_names, generated, shapes,
                                  primal_names | adjoint_names, roots, buffers, indices,
                                  returned if scalar_reductions else None, in_place=not fused)
        primal_of = {d: p for p, d in ad.adjoints.items()}
        rank_facts_used = {primal_of.get(n, n) for n in used}
    else:
        rank_facts_used = set()
    if optimized:
        fwd, rev, untaped = untape_top_level(fwd, rev)
        primal_names |= untaped
    fwd, rev, uses_tape = prune_tape(fwd, rev)

    shape_only = _shape_only(rev, primal_names) if optimized else set()
    for s in optimize.walk_statements(fwd):
        if _tape_key(s) in shape_only:
            s.value.args[0] = replace_expr("rt.shape_of(V)", V=_tape_key(s))

    uses_xp = any(isinstance(n, gast.Name) and n.id == fixed["xp"] for s in rev for n in gast.walk(s))
    rev_reads = _loads(rev) | set()
    saved_names = sorted(n for n in rev_reads if n in primal_names)
    if uses_xp:
        args = ", ".join([seed] + [p for p in activity.params if p in saved_names])
        rev = replace(f"{fixed['xp']} = rt.namespace({args})") + rev

    tape_stmts_fwd = replace("tape = []\npush = tape.append") if uses_tape else []
    needs_init = set()
    pushed = {(_tape_key(s) if not isinstance(_tape_key(s), tuple) else None)
              for s in optimize.walk_statements(fwd)} - {None}
    top = _top_level_bound(fwd)
    checked = {n.args[1].id for st in optimize.walk_statements(fwd) for n in gast.walk(st)
               if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
               and n.func.attr == "check_unshared" and isinstance(n.args[1], gast.Name)}
    checked &= {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    first_bound = {s.targets[0].id for s in node.body if id(s) in ad.first_bindings}
    for n in pushed | set(saved_names) | checked:
        if n not in activity.params and (n in pushed or n not in top) \
                and (n not in first_bound or n in checked):
            needs_init.add(n)   # a value exists to push (or save) even if no binding ran
    init = [s for n in sorted(needs_init) for s in replace(f"{n} = None")]
    copies = ad.argument_checks() + [s for p in sorted(ad.copied_params) for s in replace(f"{p} = rt.save({p})")]

    saved_tuple = (["tape"] if uses_tape else []) + saved_names
    pack = ", ".join(saved_tuple)
    # The reverse sweep restores arrays and lists it wrote into; the caller gets its own copy.
    mutated = {k[1] for k in (_tape_key(s) for s in optimize.walk_statements(rev)) if isinstance(k, tuple)}
    out_expr = _copy_mutated(ret.value, mutated)
    if aux is not None:
        out_expr = gast.Tuple(elts=[out_expr, _copy_mutated(name(aux), mutated)], ctx=gast.Load())
    packed = gast.Tuple(elts=[replace_expr(f"rt.shape_of({n})") if n in shape_only else name(n)
                              for n in saved_tuple], ctx=gast.Load())
    fwd_return = gast.Return(value=gast.Tuple(elts=[out_expr, packed], ctx=gast.Load()))
    forward = gast.FunctionDef(
        name=f"{name_prefix}_forward", args=copy.deepcopy(node.args),
        body=tape_stmts_fwd + copies + init + fwd + [fwd_return],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    forward.args.defaults = []
    forward.args.kw_defaults = [None] * len(forward.args.kwonlyargs)

    unpack = []
    if saved_tuple:
        unpack += replace(f"{pack}{',' if len(saved_tuple) == 1 else ''} = saved")
    if uses_tape:
        unpack += replace("pop = tape.pop")
    backward = gast.FunctionDef(
        name=f"{name_prefix}_backward",
        args=gast.arguments(args=[name(seed, False), name("saved", False)]
                            + ([name("hooks", False)] if hook_names else []), posonlyargs=[],
                            vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=unpack + rev,
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    for a in backward.args.args:
        a.ctx = gast.Param()
    meta = {"bindings": ad.bindings, "tuple_output": tuple_output, "unused": unused,
            "n_outputs": len(outputs), "uses_tape": uses_tape, "mutates_saved": bool(mutated),
            "functions": tuple(ad.functions), "rank_facts_used": rank_facts_used}
    return forward, backward, meta
