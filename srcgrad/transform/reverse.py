"""Reverse mode: the forward sweep (primal plus tape pushes) and the adjoint sweep.

Requires A-normal form, canonical control flow and an Activity. ``build`` produces
two FunctionDefs (a ``Reversed``):

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

The parts: this module visits statements (``ReverseAD.visit_<Node>``) and
assembles the two functions; transform/adjoint_rules.py writes the adjoint of an
expression from its rule; transform/control_flow.py holds the loop and branch
templates; transform/tape.py pushes, pops, prunes and packs what is saved, and
transform/recompute.py finds the reads the reverse sweep recomputes instead;
transform/seeds.py writes the backward sweep's seed, zero adjoints and results.
"""

import builtins
import copy
from dataclasses import dataclass, field

import gast

from srcgrad import anno, grad_mode, runtime
from srcgrad.analysis import aliasing, kinds as kinds_
from srcgrad.analysis.activity import names_in
from srcgrad.analysis.ranks import INT, UNKNOWN
from srcgrad.errors import UnsupportedError
from srcgrad.rules import Method
from srcgrad.ast_util import name
from srcgrad.templates import replace, replace_as_expression as replace_expr
from srcgrad import optimize
from srcgrad.optimize import powers
from srcgrad.transform import argument_effects, control_flow, outside_effects, recompute, seeds, tape
from srcgrad.transform.adjoint_rules import RuleApplication
from srcgrad.transform.base import Base
from srcgrad.transform.control_flow import tag as _tag
from srcgrad.transform.tape import index_value
from srcgrad import ast_util

Static = anno.Static

# Calls that change their receiver or an out= array are rewritten or refused
# before this pass, from one table (transform/mutation.py).


class ReverseAD(Base, RuleApplication):
    """The two sweeps of one function's statements (see the module docstring).

    A ``visit_<Node>`` method returns the statement's (forward statements, reverse
    statements); ``visit`` hands the forward ones to the base's block splicing and
    collects the reverse ones, in reverse order, for ``block``. ``self.origin`` is the
    user's statement being visited (transform/base.py).
    """

    def __init__(self, node, info, activity, namer, wrt, fixed, hook_names=(), kinds=None,
                 containers=frozenset(), param_checks=()):
        super().__init__(info)
        self.node = node
        self.kinds = kinds   # analysis/kinds.py: which values are complex, which integer
        # Names that may hold a container (analysis/ranks.py ``containers``).
        self.containers = containers
        self.param_checks = param_checks   # aliasing.check: (written, other, error) on entry
        self.reverse = []   # the reverse statements of each block being visited, innermost last
        self.act = activity
        self.namer = namer
        self.wrt = wrt
        self.fixed = fixed
        self.adjoints = {}
        self.captures = {}
        self.in_place = False
        self.bindings = {}
        self.bound = {}   # names the front end bound to objects (an inlined method's self)
        self.copied_params = set()
        self.item_writes = 0   # numbers each indexed write's tape key: one value type each
        self.flag = None
        self.functions = set()  # custom Function classes applied in the function
        # hooks= option: called at every binding of the name.
        self.hooks = {}
        # register_hook(y, fn) in the code: hooks live in a list made at each binding of y,
        # so a hook belongs to the binding it was registered on, and only if the call ran.
        self.hook_lists = {}
        # The function's names, calls and assignments, walked once (tape.FunctionNodes).
        self.nodes = nodes = tape.FunctionNodes(node)
        register = grad_mode.register_hook   # (most functions call none: no ordered walk)
        hooked_calls = any(anno.getanno(c, Static.PRIMITIVE) is register for c in nodes.calls)
        for stmt in ast_util.walk(node) if hooked_calls else ():
            call = _register_hook_call(stmt)
            if call is not None:
                if len(call.args) != 2 or not isinstance(call.args[0], gast.Name):
                    raise self.error(stmt, UnsupportedError,
                                     "register_hook takes a variable and a function",
                                     "Write srcgrad.register_hook(y, fn).")
                hooked = call.args[0].id
                seeds.refuse_alias_hook(self, stmt, node, hooked)
                if hooked not in self.hook_lists:
                    self.hook_lists[hooked] = namer.new(f"{hooked}_hooks")
        for hooked in hook_names:
            self.hooks.setdefault(hooked, []).append(replace_expr(f"hooks[{hooked!r}]"))
        # A local asked for by wrt: its gradient is taken where its last value is made
        # (its last binding, or an indexed write after it), not at the end of the sweep.
        written = {s.targets[0].value.id for s in nodes.assigns
                   if isinstance(s.targets[0], gast.Subscript) and isinstance(s.targets[0].value, gast.Name)}
        for w in wrt:
            if w not in activity.params and (w in activity.saved or w in written):
                self.captures[w] = namer.new(f"grad_{w}")
        special = set(wrt) | set(self.hook_lists) | set(hook_names)
        self.store_counts = tape.store_counts(node, nodes)
        self.constants = tape.constant_names(node, special, self.store_counts)
        self.first_bindings = tape.first_bindings(node, special, nodes)
        # Loop id -> the bindings its reversed body recomputes instead of popping.
        self.recomputed = recompute.find(node, special, self.store_counts, nodes.body_loads)
        self.recomputed_ids = {id(b) for bindings in self.recomputed.values() for b in bindings}
        # Bindings saved at the end of their block (tape.block_locals), and the names they bind.
        self.block_locals = tape.block_locals(node, special, self.store_counts, nodes.body_loads)
        self.saved_at_end = {}   # id(binding) -> name, for those that are saved

    # ----- names -----

    def d(self, primal):
        if primal not in self.adjoints:
            self.adjoints[primal] = self.namer.new("d" + primal)
        return self.adjoints[primal]

    def needs(self, node):
        return isinstance(node, gast.Name) and node.id in self.act.adjoint

    # ----- statements -----

    def block(self, body):
        """(forward statements, reverse statements) of the block ``body``."""
        self.reverse.append([])
        try:
            fwd = self.visit_block(body)
        finally:
            rev = self.reverse.pop()
        # Saved once the block ran (before the ``if stop: break`` that may end it), restored
        # before its reverse (tape.block_locals).
        end = len(fwd) - 1 if body and anno.getanno(body[-1], Static.BREAK_EXIT) else len(fwd)
        for stmt in body:
            if id(stmt) in self.saved_at_end:
                x, origin = self.saved_at_end[id(stmt)], anno.getanno(stmt, Static.ORIGIN)
                fwd.insert(end, tape.push(name(x), origin, x))
                end += 1
                rev[:0] = _tag(tape.pop_into(x), origin)
        return fwd, rev

    def visit(self, s):
        """The forward statements of ``s``; its reverse ones go before the block's so far."""
        self.flag = anno.getanno(s, Static.GRAD_FLAG)
        call = _register_hook_call(s)
        fwd, rev = self.register_hook(s, call) if call is not None else super().visit(s)
        self.reverse[-1][:0] = rev
        return fwd

    def generic_visit(self, s):
        raise self.error(s, UnsupportedError, f"statement {type(s).__name__} is not supported")

    def register_hook(self, s, call):
        """Forward: add the hook to the list of the binding current now; nothing to undo."""
        hooks = self.hook_lists[call.args[0].id]
        if isinstance(s, gast.Assign):
            fwd = replace(f"TARGET = rt.hook_handle({hooks}, FN)", TARGET=s.targets[0], FN=call.args[1])
        else:
            fwd = replace(f"{hooks}.append(FN)", FN=call.args[1])
        return _tag(fwd, self.origin), []

    def visit_Assign(self, s):
        target = s.targets[0]
        if isinstance(s.value, gast.Call):   # y = D.setdefault(k, v): changes D too
            prim = anno.getanno(s.value, Static.PRIMITIVE)
            if getattr(prim, "__name__", None) in outside_effects.MUTATORS:
                outside_effects.check(self, s, s.value, prim)
            elif isinstance(prim, Method) and not self.needs(target):   # t = o.sub.step(x),
                outside_effects.check_opaque(self, s, s.value, prim, bound=s)   # t unused: an effect
        if isinstance(target, gast.Name):
            return self.assign(s, target.id)
        return self.assign_item(s, target)

    def visit_If(self, s):
        if anno.getanno(s, Static.BREAK_EXIT):
            return [s], []
        body_f, body_r = self.block(s.body)
        else_f, else_r = self.block(s.orelse)
        return control_flow.branch(s.test, body_f, else_f, body_r, else_r, self.origin)

    def visit_Assert(self, s):
        return [s], []

    visit_Raise = visit_Break = visit_Pass = visit_Assert

    def visit_Return(self, s):
        raise self.error(s, UnsupportedError, "return inside a block after canonicalization")

    # ----- loops -----

    def _loop_body(self, body):
        """Split a trailing `if stop: break` so the iteration's pushes come before it."""
        if body and anno.getanno(body[-1], Static.BREAK_EXIT):
            return body[:-1], [body[-1]]
        return body, []

    def visit_For(self, s):
        index = s.target.id
        body, exit_ = self._loop_body(s.body)
        checks = _tag(self.sequence_checks(s, self.containers), self.origin)
        if anno.getanno(s.iter, Static.PRIMITIVE) is builtins.range and not any(
                n.id == index and not isinstance(n.ctx, gast.Load)
                for st in body for n in ast_util.nodes_of(st, gast.Name)):
            fwd, rev = self.range_for(s, index, body, exit_)
            return checks + fwd, rev
        count = self.namer.new(f"n_{index}")
        body_f, body_r = self.block(body)
        body_r = self.recomputations(s) + body_r
        fwd, rev = control_flow.for_loop(index, s.iter, count, body_f, body_r, exit_, self.origin)
        return checks + fwd, rev

    def range_for(self, s, index, body, exit_):
        """A loop over a range whose body never rebinds the index: the reverse sweep
        runs the same range backwards, so the tape holds one range per loop instead
        of one index per iteration."""
        steps = self.namer.new(f"range_{index}")
        body_f, body_r = self.block(body)
        body_r = self.recomputations(s) + body_r
        # An index used only in its loop: the value it had before is never read again.
        local = self.store_counts[index] == 1 and not any(
            n.id == index for st in tape.outside(self.node.body, s)
            for n in ast_util.nodes_of(st, gast.Name))
        count = self.namer.new(f"n_{index}") if exit_ else None
        return control_flow.range_loop(index, s.iter, steps, count, body_f, body_r, exit_,
                                       not local, self.origin)

    def recomputations(self, loop):
        """The values the reversed iteration of ``loop`` recomputes first (recompute.py)."""
        return recompute.statements(self.recomputed.get(id(loop), ()), anno.getanno(loop, Static.ORIGIN))

    def visit_While(self, s):
        count = self.namer.new("n_loop")
        body_f, body_r = self.block(s.body)
        return control_flow.while_loop(s.test, count, body_f, body_r, self.origin)

    # ----- assignments -----

    def assign(self, s, target):
        """``target = value``, and the hooks registered on ``target``."""
        origin = self.origin
        fwd, rev = self._assign(s, target)
        hooks = self.hook_lists.get(target)
        if hooks is None:
            return fwd, rev
        saved = target in self.act.saved
        fwd = fwd + _tag(([tape.push(name(hooks), origin, hooks)] if saved else []) + replace(f"{hooks} = []"),
                         origin)
        run = []
        if target in self.act.adjoint:
            dt = self.d(target)
            run = replace(f"{dt} = rt.run_hooks({hooks}, {dt}, {target})")
        restore = tape.pop_into(hooks) if saved else []
        # Pushed after the binding's own save, so popped before it.
        return fwd, _tag(run + restore, origin) + rev

    def _assign(self, s, target):
        origin = self.origin
        saved = target in self.act.saved and target not in self.constants \
            and id(s) not in self.first_bindings
        # A recomputed value is overwritten like a saved one, but neither pushed nor popped;
        # a block's local is pushed and popped where its block ends and its reverse begins.
        taped = saved and id(s) not in self.recomputed_ids and id(s) not in self.block_locals
        if saved and id(s) in self.block_locals and id(s) not in self.recomputed_ids:
            self.saved_at_end[id(s)] = target
        fwd = [tape.push(name(target), origin, target)] if taped else []
        fwd += self.alias_checks(s, target)
        fwd.append(s)
        restore = tape.pop_into(target) if taped else []
        if isinstance(s.value, gast.Call) and anno.getanno(s.value, Static.PRIMITIVE) is runtime.tape_pop:
            return _tag(fwd, origin), _tag(self.tape_pop(s.value.args[0].id, target) + restore, origin)
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
            return self.function_apply(s, target, function_cls, fwd, restore, rev)
        if target in self.captures:
            cap = self.captures[target]
            rev += replace(f"if {cap} is None:\n    {cap} = {dt}")
        reads_self = target in names_in(value)
        if not saved:
            rev += self.guarded(value, dt, self.contributions(value, name(dt), name(target)))
        elif not reads_self:
            rev += self.guarded(value, dt, self.contributions(value, name(dt), name(target)))
            rev += replace(f"{dt} = 0.0")
            rev += restore
        else:
            d_new = self.namer.new(dt + "_new")
            contribs = self.contributions(value, name(d_new), name(target))
            reads_out = target in set().union(*[names_in(c) for c in contribs]) if contribs else False
            if reads_out:
                y_new = self.namer.new(target + "_new")
                contribs = self.contributions(value, name(d_new), name(y_new))
                rev += replace(f"{d_new} = {dt}\n{y_new} = {target}\n{dt} = 0.0")
            else:
                rev += replace(f"{d_new} = {dt}\n{dt} = 0.0")
            rev += restore
            rev += self.guarded(value, d_new, contribs)
        return _tag(fwd, origin), _tag(rev, origin)

    def tape_pop(self, lst, target):
        """Reverse of ``target = rt.tape_pop(lst)`` (a gradient differentiated again): the
        value goes back on the list, its adjoint back on the list's, active or not."""
        rev = replace(f"{lst}.append({target})")
        if lst in self.act.adjoint:
            dt = self.d(target) if target in self.act.adjoint else "0.0"
            rev += replace(f"{self.d(lst)} = rt.tape_unpop({self.d(lst)}, {dt}, {lst})")
        if target in self.act.adjoint:
            rev += replace(f"{self.d(target)} = 0.0")
        return rev

    def function_apply(self, s, target, cls, fwd, restore, rev):
        """``t = Func.apply(...)``: forward keeps ctx on the tape, the adjoint calls Func.backward."""
        call = s.value
        if call.keywords:
            raise self.error(s, UnsupportedError, f"{cls.__name__}.apply takes positional arguments only")
        origin = self.origin
        self.functions.add(cls)
        ctx = self.namer.new(f"{cls.__name__}_ctx")
        flags = gast.Tuple(elts=[gast.Constant(value=self._any_needed(a), kind=None) for a in call.args],
                           ctx=gast.Load())
        args = gast.Tuple(elts=list(call.args), ctx=gast.Load())
        forward_call = replace(f"{target}, {ctx} = rt.function_forward(CLS, ARGS, FLAGS)",
                               CLS=call.func.value, ARGS=args, FLAGS=flags)
        fwd = fwd[:-1] + forward_call + [tape.push(name(ctx), origin, ctx)]
        dt = self.d(target)
        rev = tape.pop_into(ctx) + rev
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

    def alias_checks(self, s, written):
        """Run-time checks that an in-place write does not reach another name (aliasing.py)."""
        return alias_checks(s, written, self.namer, self.bindings)

    def argument_checks(self):
        """Checks on entry that arguments written in place share no memory with the others."""
        out = []
        for written, other, error in self.param_checks:
            error_name = self.namer.new("aliasing_error")
            self.bindings[error_name] = error
            out += replace(f"rt.check_unshared({written}, {other}, {error_name})")
        return out

    def assign_item(self, s, target):
        """``base[index] = value``: the overwritten item is saved, the adjoint read from ``dbase``."""
        base = target.value.id
        index = target.slice
        origin = self.origin
        self.check_fresh(base)
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
        self.item_writes += 1
        key = ("item", base, self.item_writes)
        fwd = [tape.push(saved_value, origin, key)] + self.alias_checks(s, base) + [s]
        if keyed and isinstance(index, gast.Slice):   # l[1:2] = [a, b] would move l's items
            error_name = self.namer.new("resize_error")
            self.bindings[error_name] = self.error(
                s, UnsupportedError, f"a write into a slice of the list {base!r} that changes "
                f"its length is not supported", "Build the new list: l = l[:i] + new + l[j:].")
            fwd[1:1] = replace(f"rt.check_resize({base}, INDEX, V, {error_name})",
                               INDEX=index_value(index), V=copy.deepcopy(s.value))
        anno.setanno(restore, Static.TAPE, key)
        rev, later = [], False
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
                if dv == db:   # b[k] = b (NumPy copies b first): read before the zeroing below
                    held = self.namer.new(f"{db}_stored")
                    rev += replace(f"{held} = G", G=grad)
                    grad, keyed, later = name(held), False, True
                into_array = replace(f"{dv} = {dv} + G", G=grad)
                if keyed:   # a list or dict, or (known only at run time) an array
                    into_container = self.accumulate(s.value, replace_expr(
                        f"rt.take_grad({db}, INDEX)", INDEX=index_value(index)))
                    into_array = [gast.If(test=replace_expr(f"rt.is_node({base})"),
                                          body=into_container or [gast.Pass()], orelse=into_array)]
                if not later:
                    rev += self.flagged(into_array)
            rev += replace(f"{db} = rt.zero_grad_at({db}, {base}, INDEX)", INDEX=index_value(index))
            if later:
                rev += self.flagged(into_array)
        rev.append(restore)
        return _tag(fwd, origin), _tag(rev, origin)

    def check_fresh(self, base):
        """An indexed write into a parameter writes into a copy: inputs are never mutated."""
        if base in self.act.params:
            self.copied_params.add(base)

    def visit_Expr(self, s):
        call = s.value
        func = call.func
        prim = anno.getanno(call, Static.PRIMITIVE)
        if isinstance(prim, Method) and isinstance(func.value, gast.Name):
            receiver = func.value.id
            if prim == "append":
                rev = []
                if receiver in self.act.adjoint:
                    dl = self.d(receiver)
                    item = call.args[0]   # a name, or a tuple/list of atoms: xs.append((a, b))
                    if any(self.needs(n) for n in ast_util.walk(item)) \
                            and not anno.getanno(s, Static.NO_ADJOINT):
                        last = self.namer.new(f"d{item.id if isinstance(item, gast.Name) else 'elt'}_item")
                        rev += replace(f"{dl}, {last} = rt.seq_pop({dl})")
                        # A container appended (a dict a comprehension built) adds by entry.
                        rev += self.flagged(self.accumulate(item, name(last)))
                    else:   # not ``_``: a loop reversed by control_flow.py counts with it
                        rev += replace(f"{dl}, {self.namer.new(f'd{receiver}_dropped')} = rt.seq_pop({dl})")
                rev += replace(f"{receiver}.pop()")
                anno.setanno(rev[-1], Static.TAPE, ("list", receiver))
                return _tag(self.alias_checks(s, receiver) + [s], self.origin), _tag(rev, self.origin)
        outside_effects.check(self, s, call, prim)
        return [s], []


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



# ----- Assembly -----

@dataclass
class Reversed:
    """The two sweeps ``build`` makes of one function, and what the caller needs to know."""
    forward: gast.FunctionDef    # f_forward(<f's parameters>) -> (output, saved)
    backward: gast.FunctionDef   # f_backward(d<output>, saved[, hooks]) -> gradients
    bindings: dict               # extra names the generated code reads (errors, rules called)
    tuple_output: bool           # f returns a tuple: the seed is a tuple of seeds
    uses_tape: bool              # saved holds a tape (a backward runs once unless kept)
    mutates_saved: bool          # the reverse sweep restores arrays the forward sweep wrote into
    functions: tuple = ()        # custom Function classes applied in f
    rank_facts_used: set = field(default_factory=set)   # names whose rank facts the code relies on
    names: object = None         # the backward's statements' ast_util.NameSets, kept valid


def alias_checks(s, written, namer, bindings, checks=None):
    """The ``rt.check_unshared`` statements of ``checks`` (default ``s``'s Static.ALIAS_CHECK),
    their errors bound in ``bindings`` (shared with forward mode: forward_program.alias_checks)."""
    out = []
    item_error = anno.getanno(s, Static.ITEM_ALIAS)
    update = ""
    if item_error is True:   # b[i] op= v: the item b[i] is updated in place
        update = ", update=True"
    elif item_error is not None:   # and b's other items, read later, must not hold it
        update = f", update={namer.new('aliasing_error')}"
        bindings[update[len(', update='):]] = item_error
    for other, index, error in anno.getanno(s, Static.ALIAS_CHECK) or () if checks is None else checks:
        error_name = namer.new("aliasing_error")
        bindings[error_name] = error
        if index is None:
            out += replace(f"rt.check_unshared({written}, {other}, {error_name})")
        else:
            out += replace(f"rt.check_unshared({written}, {other}, {error_name}, INDEX{update})",
                           INDEX=index_value(index))
    return out


def build(node, info, activity, namer, wrt, fixed, name_prefix, hook_names=(), optimized=True,
          ranks=None, classes=None, scalar_reductions=False, fused=False, kinds=None,
          containers=frozenset(), aux=None, param_checks=(), bound=None):
    """The forward and backward FunctionDefs for FunctionDef ``node``, as a ``Reversed``.

    ``aux``: the name of the value returned beside the output (has_aux, transform/aux.py):
    the forward sweep returns ``((output, aux), saved)``.
    ``param_checks``: the argument pairs checked on entry for shared memory
    (analysis/aliasing.check).
    ``scalar_reductions``: the caller broadcasts each parameter's gradient to its
    argument's shape, so a full reduction's gradient may stay a scalar up to the
    return (``optimize.keep_reductions_scalar``). ``fused``: the elementwise statements
    will be fused into kernels, so the sweep keeps accumulating by assignment.
    """
    taken_before = set(namer.taken)
    ad = ReverseAD(node, info, activity, namer, wrt, fixed, hook_names, kinds, containers,
                   param_checks)
    ad.bound = bound or {}
    ret = node.body[-1]
    fwd, rev = ad.block(node.body[:-1])

    tuple_output = isinstance(ret.value, gast.Tuple)
    outputs = list(ret.value.elts) if tuple_output else [ret.value]
    # (The names bound before the sweeps were built: building them edits no user statement.)
    primal_names = set(activity.params) | {n.id for n in ad.nodes.names if isinstance(n.ctx, gast.Store)}
    seed = namer.new("dout") if tuple_output else ad.d(outputs[0].id) if ad.needs(outputs[0]) \
        else namer.new("dout")
    # Named before the prologue, so that an active input whose every use has no gradient
    # (``y`` of ``np.copysign(x, y)``: the rule's entry is None) gets its zero adjoint there.
    results = seeds.results(ad, wrt)
    prologue = seeds.prologue(ad, seed, outputs, tuple_output)

    # Hooks on parameters see their gradient once the whole reverse sweep is done.
    rev += seeds.parameter_hooks(ad)
    fwd = [s for p in activity.params if p in ad.hook_lists
           for s in replace(f"{ad.hook_lists[p]} = []")] + fwd
    primal_names |= set(ad.hook_lists.values())

    rev = prologue + rev + [gast.Return(value=gast.Tuple(elts=results, ctx=gast.Load()))]
    generated = (set(namer.taken) - taken_before - primal_names) | set(ad.adjoints.values())
    rank_facts_used = set()
    # The reverse sweep's name sets: the optimizer's, kept valid by its passes, then asked
    # by the steps below (which drop and replace statements, and edit none in place).
    names = ast_util.NameSets()
    if optimized:
        rank_facts_used = _optimize(ad, rev, node, generated, primal_names, ranks, classes,
                                    scalar_reductions, fused, names)
        fwd, rev, untaped = tape.untape_top_level(fwd, rev)
        primal_names |= untaped
        rev = seeds.without_seed_copy(rev, seed)
    primal_names -= recompute.prune(rev)   # bound by the reverse sweep itself
    shares = aliasing.sharer(node, info, ad.bindings)
    fwd, rev, uses_tape = tape.prune(fwd, rev, names, lambda names: shares(names) - set(names))
    if optimized:   # a loop left with only d = d * 2 in it (its pops pruned): fewer steps
        powers.run(rev, None)
    shapes = tape.shape_only(rev, primal_names) if optimized else set()
    tape.save_shapes(fwd, shapes)

    saved = tape.pack(rev, primal_names, uses_tape, shapes, names)
    if any(fixed["xp"] in names.refs(s) for s in rev):
        args = ", ".join([seed] + [p for p in activity.params if p in saved.names])
        rev = replace(f"{fixed['xp']} = rt.namespace({args})") + rev
    copies = ad.argument_checks() + [s for p in sorted(ad.copied_params) for s in replace(f"{p} = rt.save({p})")]
    kept = argument_effects.callers_kept(fwd)   # (the caller's objects: before the copies)
    copies, fwd = fwd[:kept] + copies, fwd[kept:]

    # The reverse sweep restores arrays and lists it wrote into; the caller gets its own copy.
    out_expr = tape.copy_mutated(ret.value, saved.mutated, saved.names)
    if aux is not None:
        out_expr = gast.Tuple(elts=[out_expr, tape.copy_mutated(name(aux), saved.mutated, saved.names)],
                              ctx=gast.Load())
    fwd_return = gast.Return(value=gast.Tuple(elts=[out_expr, saved.packed], ctx=gast.Load()))
    init = tape.initial_values(copies + fwd + [fwd_return], activity.params)
    forward = _function(f"{name_prefix}_forward", copy.deepcopy(node.args),
                        saved.tape_setup + copies + init + fwd + [fwd_return])
    forward.args.defaults = []
    forward.args.kw_defaults = [None] * len(forward.args.kwonlyargs)
    params = [name(seed), name("saved")] + ([name("hooks")] if hook_names else [])
    for a in params:
        a.ctx = gast.Param()
    backward = _function(f"{name_prefix}_backward", gast.arguments(
        args=params, posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        saved.unpack + rev)
    return Reversed(forward, backward, ad.bindings, tuple_output, uses_tape, bool(saved.mutated),
                    tuple(ad.functions), rank_facts_used, names)


def _function(function_name, args, body):
    return gast.FunctionDef(name=function_name, args=args, body=body, decorator_list=[], returns=None,
                            type_comment=None, type_params=[])


def _optimize(ad, rev, node, generated, primal_names, ranks, classes, scalar_reductions, fused,
              names=None):
    """Optimize the backward sweep ``rev`` in place (transform/optimize.py), its statements'
    name sets kept in ``names``; returns the primal names whose rank or shape facts the
    result relies on."""
    activity = ad.act
    adjoint_names = set(ad.adjoints.values())
    ranks = ranks or {}
    shapes = {n: c for n, c in (classes or {}).items() if c != UNKNOWN}
    shapes.update((ad.adjoints[p], c) for p, c in list(shapes.items()) if p in ad.adjoints)
    roots = {p for p in activity.params if shapes.get(p) == p}
    # (The function's Names as the build found them: building the sweeps edits no user statement.)
    stored = {n.id for n in ad.nodes.names if isinstance(n.ctx, (gast.Store, gast.Del))}
    buffers = {ad.adjoints[p]: (p, ranks[p]) for p in activity.params
               if p in ad.adjoints and p not in stored and type(ranks.get(p)) is int}
    indices = {n for n, r in ranks.items() if r == INT}
    returned = {k for k, w in enumerate(ad.wrt) if w in activity.params and w not in ad.captures}
    used = optimize.transform(rev, adjoint_names, generated, shapes,
                              primal_names | adjoint_names, roots, buffers, indices,
                              returned if scalar_reductions else None, in_place=not fused,
                              names=names)
    primal_of = {d: p for p, d in ad.adjoints.items()}
    return {primal_of.get(n, n) for n in used}
