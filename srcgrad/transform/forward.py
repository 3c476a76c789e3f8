"""Forward mode: the tangent program of a normalized function (issue 14).

The function is read as the reverse mode reads it (``pipeline.front_end``: fenced,
canonicalized, in A-normal form, helpers inlined). Each statement is kept, and the
statement computing its tangent follows it; control flow stays control flow (``if``,
``for``, ``while``, ``break``/``continue`` as the front end lowers them); there is
no tape. A tangent is named like the value's differential: ``dx`` is the tangent of
``x`` (in the adjoint listings ``dx`` is an adjoint; here it is ``x``'s directional
derivative along the tangents passed in: ``dy = cos(x) * dx``).

* Only values that depend on an input with a tangent (analysis/activity.py's
  ``active``) get one; integers and booleans (analysis/kinds.py) never do, nor does
  a value a gradient pops back from its tape when no other binding of its name has
  one (analysis/tangent_activity.py ``carriers``: a branch condition, a loop counter). A value that is sometimes
  bound to a constant gets the zero of its shape there (``0.0`` for a number literal,
  else ``rt.tangent_zero``).
* ``y = prim(args)`` inlines the primitive's tangent rule (transform/tangent_rules.py;
  the table is srcgrad/rules/). A primitive without one is refused at compile time,
  naming the line.
* ``b[i] = v`` is followed by ``db[i] = dv`` (``0.0`` when ``v`` has none). A tangent
  that may share memory with another while its value does not (``y = x + c`` has
  ``dy = dx``) is copied (``rt.own``) before such writes change it.
* ``finish`` tidies the program: unread tangent lines dropped, repeated NumPy calls
  computed once, single-use temporaries folded, ``# tangent of:`` only over lines a
  tangent line follows.
* Where the statement's value reads its own target (``s = s * v``), the tangent is
  computed before the statement when it needs only the old values, else through a
  fresh name.
"""

import gast
import numpy

from srcgrad import anno, ast_util, rules, runtime
from srcgrad.analysis import kinds
from srcgrad.analysis.activity import primitive_of
from srcgrad.analysis.tangent_activity import carriers
from srcgrad.ast_util import assigned_name, walk_statements
from srcgrad.codegen import emit
from srcgrad.errors import NonDifferentiableError, UnsupportedError
from srcgrad.rules import Method
from srcgrad.templates import clone, name, replace_as_expression as expr
from srcgrad.transform import forward_memory, outside_effects, tangent_rules
from srcgrad.transform.adjoint_rules import _describe
from srcgrad.transform.as_array import is_runtime_helper
from srcgrad.transform.base import Base
from srcgrad.transform.forward_complex import ComplexStatements
from srcgrad.transform.forward_helpers import (_applied_class, _is_custom_function,  # noqa: F401
                                               _pure_library_call, constant, gated, written_names)

Static = anno.Static
_Y = "__srcgrad_output__"   # stands for the statement's new value in its tangent


def _names(node):
    return {n.id for n in ast_util.walk(node) if isinstance(n, gast.Name)} if node is not None else set()


def _assign(target, value):
    return gast.Assign(targets=[target], value=value, type_comment=None)


# Values whose result may share memory with their operand (a tangent of the same kind does too).
_VIEWS = {Method("reshape"), Method("ravel"), Method("transpose"), Method("squeeze"),
          rules.Attribute("T"), rules.Attribute("mT")}


def _calls_at_zero(body):
    """Whether statements ``body`` call a run-time helper declared ``rules.run_at_zero``."""
    return any(isinstance(n, gast.Call) and rules.runs_at_zero(anno.getanno(n, Static.PRIMITIVE, None))
               for stmt in body for n in gast.walk(stmt))


class ForwardAD(ComplexStatements, Base):
    """The tangent program of one normalized function.

    Args:
        info: the parse.EntityInfo (errors name its file and lines).
        active: names that carry a tangent.
        namer: the Namer of the compile (tangent names, template locals).
        written: names whose arrays are written in place (``b[i] = v``).
    """

    def __init__(self, info, active, namer, written, sequences=frozenset(), kinds=None,
                 wrt=None, values=True, aux=None, bindings=None):
        super().__init__(info)
        self.bindings = {} if bindings is None else bindings   # names the program reads (errors)
        self.aux = aux         # has_aux: the name of the aux, returned third, with no tangent
        self.at_zero_tests = None   # names an ``if`` tests whose block calls a rules.run_at_zero helper
        self.kinds = kinds
        self.active = frozenset(active)
        self.paired = frozenset()
        self.wrt = wrt
        self.values = values   # False: the program returns its tangent only
        self.created = set()   # ids of the statements this pass wrote (tangent lines)
        self.primal = set()    # names it binds to the statement's own value (``fresh``)
        self.namer = namer
        self.written = frozenset(written)
        self.sequences = frozenset(sequences)
        self.tangents = {}

    def d(self, primal):
        if primal not in self.tangents:
            self.tangents[primal] = self.namer.new("d" + primal)
        return self.tangents[primal]

    def visit_block(self, body):
        if self.at_zero_tests is None:   # the function's body
            self.at_zero_tests = frozenset(
                n.test.id for stmt in body for n in gast.walk(stmt)
                if isinstance(n, gast.If) and isinstance(n.test, gast.Name) and _calls_at_zero(n.body))
        if self.wrt is not None:   # the function's body: refine activity once, before it
            self.active, self.paired = carriers(body, self.active, self.wrt, self.kinds)
            self.wrt = None
        return super().visit_block(body)

    def inherit(self, node, like=None):
        self.created.add(id(node))
        return super().inherit(node, like)

    def is_active(self, node):
        return isinstance(node, gast.Name) and node.id in self.active

    # ----- the finished program -----

    def finish(self, body, keep=()):
        """The tangent function's statements ``body`` tidied, with a ``# tangent of:``
        comment over each user line that a tangent line follows.

        Tangent lines nothing reads are dropped; so are the compiler's own primal
        bindings nothing reads whose value cannot raise (``returned = True``), never a
        name in ``keep`` (the user's). A product with a seed of 1.0 is its other factor
        (``_unit_factors``). A NumPy call repeated is computed once
        (optimize/repeated_calls.py). Then a temporary used once folds into its use
        (optimize/forward_temporaries.py, with effects.py's rules: an error is raised
        where the program raised it). The user's statements stay as they were.
        """
        from srcgrad.optimize import dead, effects, forward_temporaries, repeated_calls
        from srcgrad.optimize.facts import Facts
        made, primal = set(), set()
        for stmt in walk_statements(body):
            target = assigned_name(stmt)
            if target is not None:
                (made if id(stmt) in self.created else primal).add(target)
        made -= primal | self.primal
        compiler = primal - set(keep) - set(self.namer.original) - {"tape", "xp"}
        # Without the value (a generated gradient read again by hvp), its own statements
        # that no tangent reads go too: the gradient itself is not computed.
        values = primal - {"tape", "xp"} if not self.values else compiler
        while dead.eliminate(body, made, set(), lambda v: effects.kind(v, None) is not None) \
                | dead.eliminate(body, compiler, set(), lambda v: effects.kind(v, None) == effects.SAFE) \
                | (not self.values and dead.eliminate(body, values, set(),
                                                      lambda v: effects.kind(v, None) is not None)):
            pass
        self._unit_factors(body, made)
        repeated_calls.run(body)
        forward_temporaries.run(body, Facts(generated=made | compiler, classes={}))
        return self._comments(emit.comment_blocks(body, "tangent of: ", 1))

    def _unit_factors(self, body, tangents):
        """``t = one * e`` (or ``e * one``, ``e / one``) is ``t = e`` where ``one`` is bound
        once to 1.0 (a gradient's seed, read again) or to such a name, ``e`` is a name
        holding floats (a tangent, or a value kinds.py says is one), and nothing can
        change an array in place (no indexed write, no call but effects.py's pure ones):
        ``t`` and ``e`` then share one array."""
        from srcgrad.optimize import effects
        bound, ones = {}, set()
        for stmt in walk_statements(body):
            for n in ast_util.walk(stmt):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    bound[n.id] = bound.get(n.id, 0) + 1
                if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store) \
                        or isinstance(n, gast.AugAssign) \
                        or isinstance(n, gast.Call) and not effects.pure_call(n, {}):
                    return
        changed = True
        while changed:
            changed = False
            for stmt in walk_statements(body):
                target = assigned_name(stmt)
                if target is None or target in ones or bound[target] != 1:
                    continue
                v = stmt.value
                if isinstance(v, gast.Constant) and type(v.value) is float and v.value == 1.0 \
                        or isinstance(v, gast.Name) and v.id in ones:
                    ones.add(target)
                    changed = True
        if not ones:
            return

        def floats(e):
            return isinstance(e, gast.Name) and (e.id in tangents or self.kinds is not None
                                                and self.kinds.of(e) == kinds.FLOAT)

        for stmt in walk_statements(body):
            v = stmt.value if assigned_name(stmt) is not None else None
            if not isinstance(v, gast.BinOp) or not isinstance(v.op, (gast.Mult, gast.Div)):
                continue
            one = lambda e: isinstance(e, gast.Name) and e.id in ones   # noqa: E731
            if one(v.right) and floats(v.left):
                stmt.value = v.left
            elif isinstance(v.op, gast.Mult) and one(v.left) and floats(v.right):
                stmt.value = v.right

    def _comments(self, block):
        """``block`` less the comments over statements none of which has a tangent line."""
        out = []
        for k, stmt in enumerate(block):
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    setattr(stmt, field, self._comments(inner))
            text = _comment_text(stmt)
            if text is not None:
                group = []
                for after in block[k + 1:]:
                    if _comment_text(after) is not None or emit._origin_text(after) != text:
                        break
                    group.append(after)
                if not any(self._has_tangent(g) for g in group):
                    continue
            out.append(stmt)
        return out

    def _has_tangent(self, stmt):
        return isinstance(stmt, gast.Return) or any(
            id(t) in self.created for t in walk_statements([stmt]))

    # ----- statements -----

    def visit_Assign(self, s):
        if len(s.targets) != 1:
            raise self.error(s, UnsupportedError, "forward mode: chained assignment is not supported")
        target = s.targets[0]
        self.complex_value = self.maybe_complex = None   # check_real marks complex statements
        s.value = self.has_grad(s.value, target=target.id if isinstance(target, gast.Name) else None)
        cls = _applied_class(s.value)
        if cls is not None and _names(s.value) & self.active:
            return self.function_apply(s, target, cls)
        if isinstance(target, gast.Name):
            return self.assign_name(s, target)
        if isinstance(target, gast.Subscript):
            return self.assign_item(s, target)
        if isinstance(target, (gast.Tuple, gast.List)):
            return self.assign_unpack(s, target)
        if not _names(s.value) & self.active:
            return s
        raise self.error(s, UnsupportedError,
                         f"forward mode: an assignment to {type(target).__name__} is not supported")

    def assign_name(self, s, target):
        if target.id not in self.active:
            return s
        held = constant(s)
        if held is True:   # its operands' tangents do not reach it
            return [s, self.inherit(_assign(name(self.d(target.id), True), self.zero_of(s.value, target)))]
        self.check_real(s.value)
        stmts, tangent = self.tangent(s.value, name(_Y))
        if tangent is None:
            return [s, self.inherit(_assign(name(self.d(target.id), True), self.zero_of(s.value, target)))]
        if forward_memory.needs_memory(self, target.id, s.value, _Y):
            tangent = self.memory_of(s, tangent)
        if held is not None:
            tangent = gated(held, tangent, expr("rt.tangent_zero(Y)", Y=name(_Y)))
        reads = set().union(_names(tangent), *[_names(t) for t in stmts])
        if target.id not in reads:   # after the statement: y is the new value
            new = self._set_y(stmts + [_assign(name(self.d(target.id), True), tangent)], target.id)
            return [s] + self.tag(new)
        if _Y not in reads:          # before: it reads the old values only
            return self.tag(stmts + [_assign(name(self.d(target.id), True), tangent)]) + [s]
        fresh = self.namer.new(target.id)   # both: the new value under a name of its own
        self.primal.add(fresh)
        new = [_assign(name(fresh, True), s.value)] + self._set_y(stmts, fresh)
        new += [_assign(name(self.d(target.id), True), self._set_y([tangent], fresh)[0]),
                _assign(name(target.id, True), name(fresh))]
        return self.tag(new)

    def memory_of(self, s, tangent):
        """The tangent of ``y = value``, ``y`` written into later (forward_memory.py)."""
        return forward_memory.memory_of(self, s, tangent, _Y)

    @staticmethod
    def _set_y(nodes, to):
        sub = {_Y: to}
        from srcgrad.templates import _Substitute
        return [_Substitute(sub).visit(n) for n in nodes]

    def tag(self, stmts):
        return [self.inherit(t) for t in stmts]

    def is_view(self, value):
        if isinstance(value, (gast.Name, gast.Subscript)):
            return True
        primitive = primitive_of(value)
        try:
            return primitive in _VIEWS
        except TypeError:
            return False

    def assign_item(self, s, target):
        base = target.value
        while isinstance(base, gast.Subscript):
            base = base.value
        if not isinstance(base, gast.Name):
            raise self.error(s, UnsupportedError, "forward mode: this indexed write is not supported")
        if base.id not in self.active:
            return s
        self.check_real(s.value)
        read = clone(target)
        for n in ast_util.walk(read):
            if hasattr(n, "ctx"):
                n.ctx = gast.Load()
        held = constant(s)
        stmts, tangent = ([], None) if held is True else self.tangent(s.value, read)
        zero = forward_memory.stored_zero(self, base, s.value)
        if tangent is not None and held is not None:
            tangent = gated(held, tangent, zero)
        tangent = zero if tangent is None else tangent
        tangent = forward_memory.stored_tangent(self, base, tangent)
        d_target = self._tangent_target(target)
        reads = set().union(_names(tangent), *[_names(t) for t in stmts])
        if base.id in reads:   # computed before the write changes what it reads
            if _Y in reads:
                raise self.error(s, UnsupportedError,
                                 "forward mode: this indexed write reads the array it writes")
            fresh = self.namer.new("d" + base.id + "_item")
            return self.tag(stmts + [_assign(name(fresh, True), tangent)]) + [
                s, self.inherit(_assign(d_target, name(fresh)))]
        return [s] + self.tag(self._set_y(stmts, "_unused") + [_assign(d_target, tangent)])

    def _tangent_target(self, target):
        new = clone(target)
        node = new
        while isinstance(node.value, gast.Subscript):
            node = node.value
        node.value = name(self.d(node.value.id))
        return new

    def assign_unpack(self, s, target):
        targets = target.elts
        if not any(isinstance(t, gast.Name) and t.id in self.active for t in targets):
            return s
        if not all(isinstance(t, gast.Name) for t in targets):
            raise self.error(s, UnsupportedError, "forward mode: this unpacking is not supported")
        value = s.value
        held = constant(s)
        if held is True:
            tangents = [None] * len(targets)
        elif isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(targets):
            tangents = [self.operand(e) for e in value.elts]
        elif isinstance(value, gast.Name):
            tangents = ([expr(f"{self.d(value.id)}[{k}]") for k in range(len(targets))]
                        if value.id in self.active else [None] * len(targets))
        else:
            what = _describe(primitive_of(value), value) if primitive_of(value) is not None else "this value"
            raise self.error(s, UnsupportedError,
                             f"forward mode: unpacking the results of {what} is not supported yet",
                             "Bind the result to one name and index it.")
        names_ = [t.id for t in targets]
        fresh = self.namer.new("d" + "_".join(names_))
        out = [self.inherit(_assign(name(fresh, True), gast.Tuple(elts=[
            t if t is not None else gast.Constant(value=None, kind=None) for t in tangents],
            ctx=gast.Load())))] if any(n in _names(s.value) for n in names_) else []
        out.append(s)
        for k, (t, tangent) in enumerate(zip(names_, tangents)):
            if t not in self.active:
                continue
            if out[0] is not s:
                tangent = expr(f"{fresh}[{k}]") if tangent is not None else None
            value_ = tangent if tangent is not None else expr("rt.tangent_zero(Y)", Y=name(t))
            if tangent is not None and held is not None:
                value_ = gated(held, value_, expr("rt.tangent_zero(Y)", Y=name(t)))
            out.append(self.inherit(_assign(name(self.d(t), True), value_)))
        return out

    def function_apply(self, s, target, cls):
        """``y = Func.apply(a, b)`` of a custom Function that defines ``jvp``: its forward
        runs with a ctx (as in reverse mode), then ``Func.jvp`` on the arguments' tangents
        (custom_function.function_jvp). Without ``jvp`` it is refused (``apply``)."""
        from srcgrad.custom_function import has_jvp
        call = s.value
        if constant(s) is not None:
            raise self.error(s, UnsupportedError, f"forward mode: a call of {cls.__name__}.apply "
                             "under sg.no_grad or sg.set_grad_enabled is not supported",
                             "Use reverse mode (sg.grad, sg.jacrev), or call it outside the block.")
        if not has_jvp(cls):
            return self.apply(primitive_of(call), list(call.args), {}, None, call)
        targets = target.elts if isinstance(target, (gast.Tuple, gast.List)) else [target]
        if call.keywords or any(isinstance(a, gast.Starred) for a in call.args) or \
                not all(isinstance(t, gast.Name) for t in targets):
            raise self.error(s, UnsupportedError, f"forward mode: this call of {cls.__name__}.apply "
                             "is not supported", "Pass its arguments positionally and bind its "
                             "outputs to names.")
        tangents = [self.operand(a) for a in call.args]
        none = gast.Constant(value=None, kind=None)
        ctx = self.namer.new(f"{cls.__name__}_ctx")
        forward_call = expr("rt.function_forward(CLS, ARGS, FLAGS)", CLS=clone(call.func.value),
                            ARGS=gast.Tuple(elts=list(call.args), ctx=gast.Load()),
                            FLAGS=gast.Tuple(elts=[gast.Constant(value=t is not None, kind=None)
                                                   for t in tangents], ctx=gast.Load()))
        run = _assign(gast.Tuple(elts=[target, name(ctx, True)], ctx=gast.Store()), forward_call)
        d_target = gast.Tuple(elts=[name(self.d(t.id), True) for t in targets], ctx=gast.Store()) \
            if target is not targets[0] else name(self.d(target.id), True)
        jvp = _assign(d_target, expr(f"rt.function_jvp(CLS, {ctx}, TANGENTS)", CLS=clone(call.func.value),
                                     TANGENTS=gast.Tuple(elts=[t if t is not None else none
                                                               for t in tangents], ctx=gast.Load())))
        self.primal.add(ctx)
        return [self.inherit(run, s), self.inherit(jvp, s)]

    def has_grad(self, value, body=(), target=None):
        """``rt.has_grad(g)`` of an adjoint that carries a tangent (a gradient read again)
        is ``rt.has_grad_jvp(g, dg)``: the block it guards runs while either is nonzero,
        and at a computed zero too where the block (``body``, or the one an ``if`` testing
        ``target`` guards) calls a helper ``rules.run_at_zero``."""
        if isinstance(value, gast.Call) and len(value.args) == 1 and self.is_active(value.args[0]) \
                and anno.getanno(value, Static.PRIMITIVE) is runtime.has_grad:
            at_zero = _calls_at_zero(body) or target in (self.at_zero_tests or ())
            return expr("rt.has_grad_jvp(G, T, True)" if at_zero else "rt.has_grad_jvp(G, T)",
                        G=value.args[0], T=name(self.d(value.args[0].id)))
        return value

    def visit_If(self, s):
        s.test = self.has_grad(s.test, s.body)
        return self.generic_visit(s)

    def visit_AugAssign(self, s):
        raise self.error(s, UnsupportedError, "forward mode: augmented assignment left by the front end")

    def visit_For(self, s):
        if _names(s.target) & self.active:
            raise self.error(s, UnsupportedError,
                             "forward mode: a for loop whose items carry a tangent is not supported",
                             "Loop over an index: for i in range(len(xs)): x = xs[i]")
        return self.sequence_checks(s) + [self.generic_visit(s)]   # not over a dict (base.py)

    def visit_Return(self, s):
        value = s.value
        if isinstance(value, (gast.Tuple, gast.List)):
            tangent = gast.Tuple(elts=[self.operand(e) or expr("rt.tangent_zero(Y)", Y=clone(e))
                                       for e in value.elts], ctx=gast.Load())
        else:
            tangent = self.operand(value) or expr("rt.tangent_zero(Y)", Y=clone(value))
        if not self.values:
            value = gast.Constant(value=None, kind=None)
        elts = [value, tangent] + ([name(self.aux)] if self.aux is not None else [])
        s.value = gast.Tuple(elts=elts, ctx=gast.Load())
        return s

    def visit_Expr(self, s):
        self.complex_value = self.maybe_complex = None
        call = s.value
        if not _names(call) & self.active:
            return s
        if isinstance(call, gast.Call):
            primitive = anno.getanno(call, Static.PRIMITIVE)
            if is_runtime_helper(primitive) and primitive.__name__.startswith("check") \
                    or outside_effects.changes_no_argument(primitive):
                # print, warnings.warn, a logger: changes no value (kept as in reverse mode)
                return s
            if _pure_library_call(primitive):
                return s   # np.sort(y) alone: its value is dropped, so is its tangent
            if primitive is runtime.restore_item and not self.is_active(call.args[0]):
                # an item of a container without a tangent, popped from a tape that holds
                # values with tangents too (c4[0] *= v beside n['a'][1] = v): it had none
                return s
            if primitive is runtime.restore_item:
                # a gradient read again undoes a dict write: its tangent's too
                base, index, value = call.args
                t = self.operand(value) or gast.Constant(value=None, kind=None)
                return [s, self.inherit(gast.Expr(value=expr(
                    "rt.restore_item_tangent(DB, INDEX, V, T)", DB=name(self.d(base.id)),
                    INDEX=clone(index), V=clone(value), T=t)))]
            f = call.func
            if isinstance(f, gast.Attribute) and f.attr == "append" and isinstance(f.value, gast.Name) \
                    and f.value.id in self.active and len(call.args) == 1:
                item = call.args[0]
                if f.value.id in self.paired and not self.is_active(item):
                    return s   # its pop has no tangent either (``carriers``)
                held = constant(s)
                t = None if held is True else self.operand(item)
                if t is not None and held is not None:
                    t = gated(held, t, expr("rt.tangent_zero(Y)", Y=clone(item)))
                t = t or expr("rt.tangent_zero(Y)", Y=clone(item))
                return [s, self.inherit(gast.Expr(value=expr(f"{self.d(f.value.id)}.append(T)", T=t)))]
        raise self.error(s, UnsupportedError,
                         "forward mode: a statement called for its effect on values that carry a "
                         "tangent is not supported")

    # ----- expressions -----

    def operand(self, node):
        """The tangent of an operand (a name, constant or display), or None for zero."""
        if isinstance(node, gast.Name):
            return name(self.d(node.id)) if node.id in self.active else None
        if isinstance(node, (gast.Tuple, gast.List)):
            elts = [self.operand(e) for e in node.elts]
            if all(e is None for e in elts):
                return None
            return type(node)(elts=[e if e is not None else expr("rt.tangent_zero(E)", E=clone(x))
                                    for e, x in zip(elts, node.elts)], ctx=gast.Load())
        if isinstance(node, gast.Dict):
            values = [self.operand(v) for v in node.values]
            if all(v is None for v in values):
                return None
            if any(k is None for k in node.keys):
                raise self.error(node, UnsupportedError,
                                 "forward mode: ** in a dict of values that carry a tangent")
            return gast.Dict(keys=[clone(k) for k in node.keys], values=[
                v if v is not None else expr("rt.tangent_zero(E)", E=clone(x))
                for v, x in zip(values, node.values)])
        if not _names(node) & self.active:
            return None
        stmts, t = self.tangent(node, None)
        if stmts:
            raise self.error(node, UnsupportedError, "forward mode: this operand is not supported")
        return t

    def tangent(self, value, y):
        """``(statements, expression)``: the tangent of ``value`` (None: zero). ``y`` is the
        expression that holds the value once computed."""
        if isinstance(value, (gast.Name, gast.Constant, gast.Tuple, gast.List, gast.Dict)):
            return [], self.operand(value)
        if isinstance(value, (gast.Compare, gast.BoolOp)) or not _names(value) & self.active:
            return [], None
        if isinstance(value, gast.Subscript):
            if not self.is_active(value.value):
                return [], None
            new = clone(value)
            new.value = name(self.d(value.value.id))
            return [], new
        if isinstance(value, gast.IfExp):
            raise self.error(value, UnsupportedError, "forward mode: a conditional expression was not lowered")
        primitive = primitive_of(value)
        if primitive is runtime.save_item and self.is_active(value.args[0]):
            # what a dict write overwrites, for the tape: its tangent's entry is saved too
            return [], expr("rt.save_item(DB, INDEX)", DB=name(self.d(value.args[0].id)),
                            INDEX=clone(value.args[1]))
        if primitive is not None and rules.is_nondifferentiable(primitive):
            return [], None
        if isinstance(value, gast.Attribute):
            complex_rule = self.complex_rule(primitive) and tangent_rules.lookup_complex(primitive) is not None
            method = any(callable(getattr(t, str(primitive), None)) for t in (numpy.ndarray, dict, list))
            if (tangent_rules.lookup(primitive) is None or method) and not complex_rule and self.is_active(value.value):
                # a structure's field (p.mean, p.items read, not called): its tangent's (pytree.py)
                return [], forward_memory.field_tangent(self, value)
            return self.apply(primitive, [value.value], {}, y, value)
        if isinstance(value, gast.BinOp):
            return self.apply(primitive, [value.left, value.right], {}, y, value)
        if isinstance(value, gast.UnaryOp):
            return self.apply(primitive, [value.operand], {}, y, value)
        if isinstance(value, gast.Call):
            args = list(value.args)
            if isinstance(primitive, Method):
                args = [value.func.value] + args
            if any(isinstance(a, gast.Starred) for a in args):
                raise self.error(value, UnsupportedError, "forward mode: *args in a call is not supported")
            return self.apply(primitive, args, {k.arg: k.value for k in value.keywords}, y, value)
        raise self.error(value, UnsupportedError,
                         f"forward mode: the expression {type(value).__name__} is not supported")

    def zero_of(self, value, target):
        """The zero tangent of ``target`` just bound to ``value``, which carries none."""
        return _zero_of(value, target)

    def apply(self, primitive, args, kwargs, y, value):
        template = self.lookup(primitive)
        what = _describe(primitive, value) if primitive is not None else "this call"
        applied = _applied_class(value)
        if applied is not None:
            what = f"{applied.__qualname__}.apply"
        if template is None:
            hint = ("Use reverse mode (sg.grad, sg.jacrev) for this function, or sg.detach the "
                    "argument if no derivative should flow through it.")
            rule = rules.lookup(primitive)
            active = sorted(_names(value) & self.active)
            if rule is not None and not rule.builtin:
                detail = "its @srcgrad.adjoint rule gives the reverse mode only"
            elif getattr(primitive, "__srcgrad_function__", False) or _is_custom_function(primitive) \
                    or applied is not None:
                detail = f"the custom srcgrad.Function {getattr(applied, '__qualname__', '')} defines no jvp"
                hint = ("Define a jvp(ctx, *tangents) staticmethod on it (forward keeps what it "
                        "needs with ctx.save_for_forward), as PyTorch's forward-mode AD asks; or "
                        "use reverse mode (sg.grad, sg.jacrev).")
            elif rule is None:
                detail = "srcgrad has no gradient rule for it"
            else:
                detail = "srcgrad has its adjoint but no tangent (JVP) rule yet"
            raise self.error(value, NonDifferentiableError,
                             f"forward mode needs a jvp for {what}, and "
                             f"{_which(active)} a tangent: {detail}", hint)
        try:
            bound = template.signature.bind(*args, **kwargs)
            bound.apply_defaults()
        except TypeError as exc:
            raise self.error(value, UnsupportedError,
                             f"forward mode: this call to {what} is not supported ({exc})")
        unsupported = rules.unsupported_literal(rules.lookup(primitive), bound.arguments)
        if unsupported is not None:   # an option the adjoint refuses: refused here too
            raise self.error(value, UnsupportedError, "forward mode: srcgrad's derivative of "
                             f"{what} does not support %s=%r (supported: %r)" % unsupported)
        subs = {template.output: y}
        for p in template.params:
            v = bound.arguments[p.name]
            if p.kind == p.VAR_POSITIONAL:
                v = gast.Tuple(elts=list(v), ctx=gast.Load())
            elif p.kind == p.VAR_KEYWORD:
                raise self.error(value, UnsupportedError, f"forward mode: **kwargs of {what}")
            elif not isinstance(v, gast.AST):
                try:
                    v = tangent_rules.default_value(v)
                except TypeError:
                    raise self.error(value, UnsupportedError,
                                     f"forward mode: the default of {p.name!r} of {what}") from None
            subs[p.name] = v
            subs["t_" + p.name] = self.operand(v)
            if subs["t_" + p.name] is not None and template.ignores(p.name, isinstance(primitive, Method)):
                raise self.error(value, NonDifferentiableError,
                                 f"forward mode: the tangent rule of {what} has no tangent for its "
                                 f"argument {p.name!r}, which carries one",
                                 "Use reverse mode (sg.grad, sg.jacrev), or sg.detach that argument.")
        stmts, result = tangent_rules.instantiate(template, subs, self.namer)
        return stmts, result


def _comment_text(stmt):
    """The user line a ``# tangent of:`` comment marker names, else None."""
    prefix = emit._MARK + "tangent of: "
    if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Constant) \
            and isinstance(stmt.value.value, str) and stmt.value.value.startswith(prefix):
        return stmt.value.value[len(prefix):]
    return None


def _zero_of(value, target):
    """The zero tangent of ``target``, just bound to ``value`` (which carries none): ``0.0``
    for a number literal, ``[]`` for ``[]`` (a tape), None for None, else
    ``rt.tangent_zero(target)``."""
    if isinstance(value, gast.List) and not value.elts:
        return gast.List(elts=[], ctx=gast.Load())
    if isinstance(value, gast.Constant) and type(value.value) in (int, float):
        return gast.Constant(value=0.0, kind=None)
    if isinstance(value, gast.Constant) and value.value is None:
        return gast.Constant(value=None, kind=None)
    return expr("rt.tangent_zero(Y)", Y=name(target.id))


def _which(active):
    if len(active) == 1:
        return f"its argument {active[0]!r} carries"
    return f"its arguments {', '.join(repr(a) for a in active)} carry"
