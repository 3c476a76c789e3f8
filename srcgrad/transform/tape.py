"""The tape and the saved values: what the forward sweep records for the reverse sweep.

The forward sweep pushes each value a statement overwrites (``push(x)``, tagged
with the key ``x``, or ``("item", x, n)`` for the n-th indexed write into ``x``) and the reverse
sweep pops it back (``x = pop()``, tagged the same). Once both sweeps are built
and optimized, this module

* drops the pushes and pops of values the adjoint never reads (``prune``),
* moves a value pushed once at the top level into the saved tuple instead of the
  tape (``untape_top_level``), and saves only the shape of a value the adjoint
  reads for its shape (``shape_only``),
* packs what the reverse sweep may read before binding it into the ``saved`` tuple
  the forward sweep returns and the backward sweep unpacks (``pack``), and starts with
  ``x = None`` only a name a push or the saved tuple may read unbound (``initial_values``).

It also answers, before the sweeps are built, which bindings need no save at all
(``constant_names``, ``first_bindings``) and which are saved where their block ends
(``block_locals``).
"""

import copy
from dataclasses import dataclass

import gast

from srcgrad import anno
from srcgrad.analysis.activity import names_in
from srcgrad.ast_util import name, rewrite_blocks
from srcgrad.templates import replace, replace_as_expression as replace_expr
from srcgrad import optimize
from srcgrad import ast_util, ast_walks
from srcgrad.analysis import liveness

Static = anno.Static

_LEAVING = (gast.Break, gast.Continue, gast.Return)   # statements that leave a block early


# ----- push and pop -----

def push(value_node, origin, key):
    """``push(value)``: saves what the tape key ``key`` names."""
    stmt = gast.Expr(value=gast.Call(func=name("push"), args=[value_node], keywords=[]))
    anno.setanno(stmt, Static.ORIGIN, origin)
    anno.setanno(stmt, Static.TAPE, key)
    return stmt


def pop_into(target, key=None):
    """``target = pop()`` as a one-statement list, tagged with its tape key (default: ``target``)."""
    stmts = replace(f"{target} = pop()")
    anno.setanno(stmts[0], Static.TAPE, target if key is None else key)
    return stmts


def tag_pushes_and_pops(stmts, origin, skip=()):
    """Tag the ``push(x)``/``push(x[...])`` and ``x = pop()`` statements a control-flow template
    wrote with their tape key ``x`` (and the pushes with the user statement ``origin``);
    statements in ``skip`` (ids: the blocks spliced into the template, tagged already)
    are left alone."""
    for s in optimize.walk_statements(stmts):
        if id(s) in skip:
            continue
        if isinstance(s, gast.Expr) and _calls(s.value, "push"):
            saved = s.value.args[0]
            anno.setanno(s, Static.TAPE, (saved.value if isinstance(saved, gast.Subscript) else saved).id)
            anno.setanno(s, Static.ORIGIN, origin)
        elif isinstance(s, gast.Assign) and _calls(s.value, "pop"):
            anno.setanno(s, Static.TAPE, s.targets[0].id)
    return stmts


def _calls(value, function):
    return isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id == function


def key_of(stmt):
    """The tape key of a push or pop statement, or None."""
    return anno.getanno(stmt, Static.TAPE)


# ----- what needs no save -----

class FunctionNodes:
    """The ``Name``, ``Call`` and ``Assign`` nodes of a FunctionDef (``names``, ``calls``,
    ``assigns``; in no particular order), and each top-level statement's names
    (``statement_names``), found in one walk: the questions asked before its sweeps are
    built (``store_counts``, ``first_bindings``, ``load_counts`` of its body, the hooked
    calls, ...) each walked the whole function."""

    def __init__(self, node):
        classes = (gast.Name, gast.Call, gast.Assign)
        names, calls, assigns = [], [], []
        self.statement_names = []
        for s in node.body:
            found = ast_walks.nodes_of_classes(s, classes)
            self.statement_names.append(found[0])
            names += found[0]
            calls += found[1]
            assigns += found[2]
        self.body_loads = _load_counts(names)   # (the body's, as load_counts(node.body))
        for field, value in node.__dict__.items():   # the parameters, decorators, ...
            if field != "body" and field in node._fields:
                for part in value if value.__class__ is list else [value]:
                    if isinstance(part, gast.AST):
                        found = ast_walks.nodes_of_classes(part, classes)
                        names += found[0]
                        calls += found[1]
                        assigns += found[2]
        self.names, self.calls, self.assigns = names, calls, assigns


def store_counts(node, nodes=None):
    """Name -> how many times the function binds it (parameters count once). ``nodes``:
    its ``FunctionNodes``, when the caller has them."""
    counts = {}
    for n in ast_util.nodes_of(node, gast.Name) if nodes is None else nodes.names:
        if not isinstance(n.ctx, gast.Load):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def constant_names(node, excluded, counts=None):
    """Names bound once, to arithmetic on number literals and other such names: every
    execution of the binding gives the same number, so it needs no tape (``dt / C`` in
    a loop, with ``dt = 0.25`` and ``C = 10.0`` bound before it). ``counts``: ``node``'s
    ``store_counts``, when the caller has them."""
    counts = store_counts(node) if counts is None else counts
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


def first_bindings(node, excluded, nodes=None):
    """ids of the top-level assignments that bind a local name for the first time: the
    value before them is no value at all, so nothing needs saving. ``nodes``: ``node``'s
    ``FunctionNodes``."""
    params = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    seen = set(params)
    first = set()
    for k, s in enumerate(node.body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and s.targets[0].id not in seen and s.targets[0].id not in excluded:
            first.add(id(s))
        found = ast_util.nodes_of(s, gast.Name) if nodes is None else nodes.statement_names[k]
        seen |= {n.id for n in found if not isinstance(n.ctx, gast.Load)}
    return first


def load_counts(body):
    """Name -> how many times the statements of ``body`` read it."""
    counts = {}
    for s in body:
        for n in ast_util.nodes_of(s, gast.Name):
            if isinstance(n.ctx, gast.Load):
                counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _load_counts(names):
    counts = {}
    for n in names:
        if isinstance(n.ctx, gast.Load):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def block_locals(node, excluded, store_counts, loads=None):
    """ids of the assignments ``x = ...`` at the top level of a block (a loop's or a branch's
    body) that alone bind ``x``, which only the statements after them in that block read.

    Their value is saved after the block ran (``push(x)`` at its end, ``x = pop()`` first
    thing in its reverse): pushed once bound, so the forward sweep needs no ``x = None``
    for a first push, and the backward sweep binds ``x`` before reading it. ``loads``:
    ``load_counts(node.body)``, when the caller has them.
    """
    found = set()
    if not any(isinstance(s, (gast.If, gast.For, gast.While)) for s in node.body):
        return found   # (no block below the function's own: straight-line code)
    loads = load_counts(node.body) if loads is None else loads

    def visit(body, nested):
        if not nested:   # (the function's own body: only its blocks are looked at)
            for s in body:
                if isinstance(s, (gast.If, gast.For, gast.While)):
                    visit(s.body, True)
                    visit(s.orelse, True)
            return
        # The block's statements before the ``if stop: break`` that may end it (the push goes
        # before it), in a block nothing else leaves early.
        inner = body[:-1] if body and anno.getanno(body[-1], Static.BREAK_EXIT) else body
        if any(any(ast_walks.nodes_of_classes(s, _LEAVING)) for s in inner):
            inner = []
        if nested and inner:
            after = {}   # name -> its reads in body[k + 1:], built from the end (linear)
            for k in range(len(body) - 1, -1, -1):
                s = body[k]
                if k < len(inner) and isinstance(s, gast.Assign) and len(s.targets) == 1 \
                        and isinstance(s.targets[0], gast.Name):
                    x = s.targets[0].id
                    if x not in excluded and store_counts.get(x) == 1 \
                            and loads.get(x, 0) == after.get(x, 0):
                        found.add(id(s))
                for n, c in load_counts([s]).items():
                    after[n] = after.get(n, 0) + c
        for s in body:
            if isinstance(s, (gast.If, gast.For, gast.While)):
                visit(s.body, True)
                visit(s.orelse, True)

    visit(node.body, False)
    return found


def outside(body, loop):
    """The parts of ``body`` outside ``loop``: simple statements, and the headers
    (test, target, iterable) of compound ones."""
    for s in body:
        if s is loop:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            yield from (getattr(s, f) for f in ("test", "target", "iter") if hasattr(s, f))
            yield from outside(s.body, loop)
            yield from outside(s.orelse, loop)
        else:
            yield s


# ----- pruning -----

def _filter(body, drop):
    out = []
    for s in body:
        if drop(s):
            continue
        rewrite_blocks(s, lambda inner: _filter(inner, drop), keep_body=True)
        out.append(s)
    return out


# Statements whose reads are ``NameSets.loads`` of their own parts (``ast_util.own_parts``):
# no ``del`` (a ``Del`` name is no read, but not stored either), no part left out
# (``raise``'s cause, an annotation).
_BY_NAME_SETS = frozenset((gast.Assign, gast.AugAssign, gast.Expr, gast.Return, gast.If, gast.For,
                           gast.While, gast.Assert, gast.Pass, gast.Break, gast.Continue))


def loads(body, skip=lambda s: False, name_sets=None):
    """Names the statements of ``body`` read (nested blocks included). ``name_sets``: a
    ``NameSets`` of ``body`` to ask (shared by the steps after the sweep's optimization)."""
    names = set()
    for s in optimize.walk_statements(body):
        if skip(s):
            continue
        if name_sets is not None and s.__class__ in _BY_NAME_SETS:
            for part in ast_util.own_parts(s):
                names |= name_sets.loads(part)
            continue
        for field in ("test", "iter", "value", "targets", "target", "msg", "exc"):
            part = getattr(s, field, None)
            parts = part if isinstance(part, list) else [part]
            for p in parts:
                if isinstance(p, gast.AST):
                    names |= names_in(p)
    return names


def read_before_bound(body, bound=frozenset(), counted=None, name_sets=None):
    """(names ``body`` may read before binding them, names bound after it on every path),
    given the names ``bound`` before it; ``counted``: only the reads of the simple
    statements with these ids count (default: every read).

    The backward sweep's are what it needs saved (a loop index the reversed loop binds,
    or a value popped before its reads, is not); the forward sweep's pushes' and the
    saved tuple's are what needs a ``None`` to start with. ``name_sets``: a ``NameSets``
    of ``body`` to ask instead of walking its statements.
    """
    if name_sets is not None:
        return _read_before_bound(body, set(bound), counted, name_sets)
    reads, bound = set(), set(bound)
    for s in body:
        header = counted is None
        if isinstance(s, gast.For):
            reads |= names_in(s.iter) - bound if header else set()
            inner = bound | {n.id for n in ast_util.walk(s.target) if isinstance(n, gast.Name)}
            reads |= read_before_bound(s.body, inner, counted)[0] | read_before_bound(s.orelse, bound, counted)[0]
        elif isinstance(s, (gast.If, gast.While)):
            reads |= names_in(s.test) - bound if header else set()
            body_reads, body_bound = read_before_bound(s.body, bound, counted)
            else_reads, else_bound = read_before_bound(s.orelse, bound, counted)
            reads |= body_reads | else_reads
            if isinstance(s, gast.If):
                bound |= body_bound & else_bound
        else:
            found = ast_util.nodes_of(s, gast.Name)
            if counted is None or id(s) in counted:
                reads |= {n.id for n in found if (
                    isinstance(n.ctx, gast.Load) or isinstance(s, gast.AugAssign))} - bound
            if not isinstance(s, gast.AugAssign):
                bound |= {n.id for n in found if isinstance(n.ctx, gast.Store)}
    return reads, bound


def _read_before_bound(body, bound, counted, names):
    """``read_before_bound`` with the name sets of ``names``, the same answer."""
    reads = set()
    for s in body:
        header = counted is None
        cls = s.__class__
        if cls is gast.For:
            if header:
                reads |= names.loads(s.iter) - bound
            inner = bound | names.loads(s.target) | names.stores(s.target)
            reads |= _read_before_bound(s.body, inner, counted, names)[0] \
                | _read_before_bound(s.orelse, set(bound), counted, names)[0]
        elif cls is gast.If or cls is gast.While:
            if header:
                reads |= names.loads(s.test) - bound
            body_reads, body_bound = _read_before_bound(s.body, set(bound), counted, names)
            else_reads, else_bound = _read_before_bound(s.orelse, set(bound), counted, names)
            reads |= body_reads | else_reads
            if cls is gast.If:
                bound |= body_bound & else_bound
        elif cls not in _BY_NAME_SETS:
            found_reads, found_bound = read_before_bound([s], bound, counted)
            reads |= found_reads
            bound = found_bound
        elif cls is gast.AugAssign:
            if counted is None or id(s) in counted:
                reads |= names.refs(s) - bound
        else:
            if counted is None or id(s) in counted:
                reads |= names.loads(s) - bound
            bound |= names.stores(s)
    return reads, bound


def initial_values(body, params):
    """``x = None`` for each local name a push, an alias check or the saved tuple of the
    forward sweep ``body`` (ending with its return) may read before any binding of it ran:
    a value exists to push (or save) even if no binding ran. The user's own reads are left
    as they are (reading an unbound name stays an error)."""
    counted = {id(s) for s in optimize.walk_statements(body) if key_of(s) is not None or (
        isinstance(s, gast.Expr) and optimize.is_rt_call(s.value, "check_unshared"))}
    ret = body[-1]
    saved = gast.Expr(value=ret.value.elts[1])   # the saved tuple, not the user's output
    counted.add(id(saved))
    stored = {n.id for s in body for n in ast_util.nodes_of(s, gast.Name) if isinstance(n.ctx, gast.Store)}
    unbound = read_before_bound(body[:-1] + [saved], set(params), counted)[0] & stored
    return [s for n in sorted(unbound) for s in replace(f"{n} = None")]


def prune(fwd, rev, name_sets=None, sharing=None):
    """Drop pushes and pops of values the adjoint never reads (to-be-recorded analysis).
    Returns (fwd, rev, whether a tape is still used). ``name_sets``: a ``NameSets`` of
    ``rev`` to ask (and keep: the statements are dropped, none is edited).
    ``sharing(names)``: the names that may share memory with ``names`` (analysis/aliasing.py);
    an indexed write's save is kept where the adjoint reads such a name (``r = c.reshape(6)``
    read by ``y * r``'s adjoint, ``c[0] = v`` later: undoing the write restores ``r`` too)."""
    keys = {key_of(s) for s in optimize.walk_statements(fwd) if key_of(s) is not None}
    # ``xs.pop()`` undoing an append keeps a list as the adjoint reads it: with no read
    # of ``xs`` left it goes too (the push of the list a loop rebinds, ``elems = []``
    # of an inner comprehension, is dropped, and the pop would empty the wrong list).
    keys |= {key_of(s) for s in optimize.walk_statements(rev)
             if isinstance(key_of(s), tuple) and key_of(s)[0] == "list"}
    if not keys:   # no push (straight-line code): nothing to drop, no tape
        return fwd, rev, False
    reads = loads(rev, skip=lambda s: key_of(s) is not None, name_sets=name_sets)
    drop = set()
    for key in keys:
        primal = key[1] if isinstance(key, tuple) else key
        if primal not in reads and not (sharing is not None and isinstance(key, tuple)
                                        and key[0] == "item" and sharing({primal}) & reads):
            drop.add(key)
    drop |= _dead_restores(rev, keys - drop, name_sets)
    if drop:
        fwd = _filter(fwd, lambda s: key_of(s) in drop)
        rev = _filter(rev, lambda s: key_of(s) in drop)
    uses_tape = any(key_of(s) is not None and not (isinstance(key_of(s), tuple) and key_of(s)[0] == "list")
                    for s in optimize.walk_statements(fwd))
    return fwd, rev, uses_tape


def _dead_restores(rev, keys, name_sets=None):
    """Plain-name keys none of whose ``x = pop()`` is read before ``x`` is bound again:
    the reverse sweep reads ``x`` only before its pops (the last value, saved), as
    where a loop over layers unrolled at compile time rebinds ``x`` once per layer."""
    pops = [s for s in optimize.walk_statements(rev) if isinstance(key_of(s), str) and key_of(s) in keys]
    read = {key_of(s) for s in pops if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                                            and isinstance(s.targets[0], gast.Name))}
    pops = [s for s in pops if key_of(s) not in read]
    if not pops:
        return set()
    live = liveness.analyze(rev, set(), names=name_sets, only={s.targets[0].id for s in pops})
    read |= {key_of(s) for s in pops if s.targets[0].id in live.live_after(s)}
    return {key_of(s) for s in pops} - read


def untape_top_level(fwd, rev):
    """A push the forward sweep runs once (at the function's top level) of a name it
    never rebinds afterwards (a loop's trip count or range) goes in ``saved`` instead:
    W3's while loop then needs no tape at all. Returns (fwd, rev, the names)."""
    moved = set()
    for k, s in enumerate(fwd):
        key = key_of(s)
        if isinstance(s, gast.Expr) and isinstance(key, str) and isinstance(s.value.args[0], gast.Name) \
                and s.value.args[0].id == key \
                and not any(isinstance(n, gast.Name) and n.id == key for later in fwd[k + 1:]
                            for t in _binding_targets(later) for n in ast_util.walk(t)):
            moved.add(key)
    pops = {key: [s for s in rev if key_of(s) == key] for key in moved}
    moved = {key for key in moved if len(pops[key]) == 1
             and sum(key_of(s) == key for s in optimize.walk_statements(rev)) == 1
             and sum(key_of(s) == key for s in optimize.walk_statements(fwd)) == 1}
    if not moved:
        return fwd, rev, moved
    fwd = [s for s in fwd if not (isinstance(s, gast.Expr) and key_of(s) in moved)]
    rev = [s for s in rev if key_of(s) not in moved]
    return fwd, rev, moved


def _binding_targets(s):
    """The targets statement ``s`` (or a statement nested in it) binds."""
    for st in optimize.walk_statements([s]):
        if isinstance(st, gast.Assign):
            yield from st.targets
        elif isinstance(st, (gast.AugAssign, gast.For)):
            yield st.target


_SHAPE_READERS = {"unbroadcast": 1, "unreduce": 1}


def shape_only(rev, primal_names):
    """Primal names the reverse sweep reads only for their shape (``rt.unbroadcast(g, x)``).

    The forward sweep saves their shapes instead of the arrays, so the tape
    does not keep intermediate results alive that the adjoint never reads.
    """
    shape_uses, other_uses = set(), set()
    shape_args = set()   # id() of the Name nodes read for their shape
    # Each statement's own parts (a loop's or branch's header, not its blocks, whose
    # statements come on their own); a pop (``key_of``) reads only ``pop``, never a primal.
    Name, Attribute, Load, classes = gast.Name, gast.Attribute, gast.Load, (gast.Name, gast.Call)
    for s in optimize.walk_statements(rev):
        if key_of(s) is not None:
            continue
        for part in ast_util.own_parts(s):
            # the part's Names and Calls in one walk (no order needed, no contexts visited)
            names, calls = ast_walks.nodes_of_classes(part, classes)
            for node in calls:
                if node.func.__class__ is Attribute and node.func.attr in _SHAPE_READERS \
                        and isinstance(node.func.value, Name) and node.func.value.id == "rt":
                    k = _SHAPE_READERS[node.func.attr]
                    if len(node.args) > k and isinstance(node.args[k], Name):
                        shape_uses.add(node.args[k].id)
                        shape_args.add(id(node.args[k]))
            for node in names:
                if node.ctx.__class__ is Load and id(node) not in shape_args:
                    other_uses.add(node.id)
    return (shape_uses - other_uses) & primal_names


def save_shapes(fwd, names):
    """The pushes of ``names`` in ``fwd`` push ``rt.shape_of(x)`` instead of ``x``."""
    for s in optimize.walk_statements(fwd):
        if key_of(s) in names:
            s.value.args[0] = replace_expr("rt.shape_of(V)", V=key_of(s))


# ----- the saved tuple -----

@dataclass
class Saved:
    """What crosses from the forward sweep to the backward sweep.

    ``names``: the primal names the backward sweep may read before binding them, in the
    saved tuple after ``tape`` when ``uses_tape``; ``tape_setup``: creates the tape;
    ``packed``: the tuple the forward sweep returns beside its output;
    ``unpack``: the backward sweep's first statements; ``mutated``: names of arrays
    and lists the reverse sweep writes into (restoring what indexed writes overwrote).
    """
    names: list
    uses_tape: bool
    tape_setup: list
    packed: gast.Tuple
    unpack: list
    mutated: set


def pack(rev, primal_names, uses_tape, shapes, name_sets=None):
    """The saved tuple of the backward sweep ``rev`` (after pruning): see ``Saved``.
    ``shapes``: names saved as their shape only; ``name_sets``: a ``NameSets`` of ``rev``."""
    saved_names = sorted(n for n in read_before_bound(rev, name_sets=name_sets)[0]
                         if n in primal_names)
    tape_setup = replace("tape = []\npush = tape.append") if uses_tape else []
    saved_tuple = (["tape"] if uses_tape else []) + saved_names
    mutated = {k[1] for k in (key_of(s) for s in optimize.walk_statements(rev)) if isinstance(k, tuple)}
    packed = gast.Tuple(elts=[replace_expr(f"rt.shape_of({n})") if n in shapes else name(n)
                              for n in saved_tuple], ctx=gast.Load())
    unpack = []
    if saved_tuple:
        unpack += replace(f"{', '.join(saved_tuple)}{',' if len(saved_tuple) == 1 else ''} = saved")
    if uses_tape:
        unpack += replace("pop = tape.pop")
    return Saved(saved_names, uses_tape, tape_setup, packed, unpack, mutated)


def copy_mutated(value, mutated, saved_names=None):
    """``value`` (the returned expression) as the caller gets it: where the reverse sweep
    writes into arrays or lists (``mutated``, restoring what indexed writes overwrote),
    ``rt.copy_restored`` copies each one in it that shares their memory, at any depth (a
    view of one, an entry of a returned dict, the aux). ``saved_names``: the names bound
    when the forward sweep returns (the mutated ones it may read)."""
    written = sorted(n for n in mutated if saved_names is None or n in saved_names)
    if not written:
        return value
    return replace_expr(f"rt.copy_restored(V, ({', '.join(written)},))", V=value)


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
