"""Scalar loops on Python floats, in a composed gradient (pipeline.py runs it on the
composed function's body, like ``release``).

A loop that reads items of float64 vectors and does scalar arithmetic with them
runs on NumPy scalars; the same arithmetic on Python floats is about three times
faster and gives the same IEEE double results for ``+``, ``-``, ``*``, negation and
comparisons (the only operations allowed on such values here: ``/`` raises
ZeroDivisionError on floats where NumPy gives inf, ``**`` raises OverflowError).

    for t in range_t:                          items_ok = rt.float64_vectors(u, p)
        T = T + k * u[t]                       ...
        du[t] += g * p[t]              ->      u_items, p_items, du_items = rt.items(
                                                   u, p, du) if items_ok else (u, p, du)
                                               for t in range_t:
                                                   T = T + k * u_items[t]
                                                   du_items[t] += g * p_items[t]

(``rt.items`` gives memoryviews of the arrays: their items are Python floats, read
and written in place, nothing is copied.)

Only when every array the loops read (parameters never rebound or written) and every
adjoint they write (``rt.owned_zeros`` of such a parameter, written only at the loop's
integer index) is a 1-D float64 array does ``items_ok`` hold; otherwise the loops run
on the arrays themselves, as written. Every other value the loop reads must be built
only from numeric literals, such items, loop indices and the tape's values (when
every value pushed is such a value), so no NumPy scalar of another dtype and no array
meets a Python float. Assignments in the loop nothing reads are dropped first.

An adjoint item 0.0 when each step begins (the owned zeros, written only by this loop at
its ``range(n)`` index) takes its first contributions in a step as one statement:
``du_items[t] += a`` ... ``du_items[t] += b`` -> ``du_items[t] = 0.0 + a + b``, the same
additions in the same order without writing and reading the item between them. Only
Python floats may be added so (on float32 items two roundings would become one), so
such a loop is written twice: ``if items_ok: <on items> else: <as written>``.
"""

import gast

from srcgrad import ast_util
from srcgrad.optimize import dead
from srcgrad.templates import clone, replace

NONE, BOOL, SCALAR, PYTHON = 0, 1, 2, 3   # what a name is known to hold (see _Levels)
_SAFE_OPS = (gast.Add, gast.Sub, gast.Mult)


def run(body, params, name_sets=None):
    """Rewrite ``body`` (a composed gradient's statements) in place; returns the names
    it made (views and flags: releasing them frees nothing). ``params``: the
    function's parameter names. ``name_sets``: a ``NameSets`` of ``body`` to ask and
    keep valid (cleared once the loops are rewritten)."""
    loops = [s for s in body if isinstance(s, gast.For)]
    if not loops:   # (before the walk: straight-line code has nothing to rewrite)
        return set()
    if name_sets is None:
        names = {n.id for s in body for n in ast_util.nodes_of(s, gast.Name)}
    else:   # (the statements' sets, kept for release_dead after)
        names = set()
        for s in body:
            names |= name_sets.refs(s)
    if "range" in names and "range" in _stored(body if name_sets is None else [
            s for s in body if "range" in name_sets.refs(s)]):   # (only those name it)
        return set()
    _drop_unread(body, loops, name_sets)
    # A loop is rewritten only where it reads or writes an item of a named array
    # (``_arrays``): where none does, nothing else is asked of the function.
    if not any(n.value.__class__ is gast.Name for loop in loops
               for n in ast_util.nodes_of(loop, gast.Subscript)):
        return set()
    stored = _stored(body)
    levels = _Levels(body, params)
    plans = [(loop, _arrays(loop, params, stored, levels)) for loop in loops]
    plans = [(loop, plan) for loop, plan in plans if plan is not None]
    while plans:   # the loops' arrays are read as items together: solve, drop a loop, again
        levels.solve({a for _, (reads, accs) in plans for a in list(reads) + list(accs)})
        kept = [(loop, plan) for loop, plan in plans if _block_ok(loop.body, levels, *plan)]
        if len(kept) == len(plans):
            break
        plans = kept
    if not plans:
        return set()
    if name_sets is not None:
        name_sets.clear()   # what follows rewrites the loops
    # Each loop rewritten is a copy: _hoist and _Rename edit its statements in place, and a
    # composed gradient's loops hold the sweeps' own (templates.composing_copy).
    for k, (loop, plan) in enumerate(plans):
        at = next(j for j, s in enumerate(body) if s is loop)
        body[at] = clone(loop)
        plans[k] = (body[at], plan)
    ok = _fresh("items_ok", names)
    made = {ok}
    guarded = []
    for _, (reads, accs) in plans:
        guarded += [a for a in reads if a not in guarded]
        guarded += [src for src in accs.values() if src not in guarded]
    body.insert(0, replace(f"{ok} = rt.float64_vectors({', '.join(guarded)},)")[0])
    for loop, (reads, accs) in plans:
        renamed = {a: _fresh(f"{a}_items", names) for a in list(reads) + list(accs)}
        made |= set(renamed.values())
        at = next(k for k, s in enumerate(body) if s is loop)
        hoisted = _hoist(loop, levels, names)
        arrays = list(reads) + list(accs)
        targets = ", ".join(renamed[a] for a in arrays)
        zeroed = [renamed[a] for a in accs if _zero_each_step(body, at, loop, a, levels)]
        items_loop = clone(loop) if zeroed else loop
        _Rename(renamed).visit(items_loop)
        if zeroed and _first_contributions(items_loop, zeroed):
            # The loop on items differs from the loop as written: each has its own copy.
            versioned = replace(f"if {ok}:\n    {targets} = rt.items({', '.join(arrays)})\n"
                                f"    pass\nelse:\n    pass")[0]
            versioned.body[-1:] = [items_loop]
            versioned.orelse[:] = [loop]
            body[at:at + 1] = hoisted + [versioned]
            continue
        listed = ", ".join(arrays) if len(arrays) > 1 else arrays[0]
        body[at:at + 1] = hoisted + replace(
            f"{targets} = rt.items({', '.join(arrays)}) if {ok} else ({listed})") + [items_loop]
    return made | {n for n, level in levels.level.items() if level >= BOOL}   # one number


def _zero_each_step(body, at, loop, a, levels):
    """Whether the adjoint ``a`` (``a = rt.owned_zeros(p)``, its one binding) holds 0.0 at
    ``a[t]`` whenever a step of ``loop`` (``body[at]``) begins: nothing between the zeros
    and the loop mentions ``a``, and the loop writes ``a`` only at its own index ``t``,
    which takes each value of ``range(n)`` once (no negative index meets a positive one)."""
    t = loop.target
    if not (isinstance(t, gast.Name) and levels.is_index(t) and _one_range(loop.iter, levels)):
        return False
    made = next((k for k, s in enumerate(body[:at]) if isinstance(s, gast.Assign)
                 and isinstance(s.targets[0], gast.Name) and s.targets[0].id == a), None)
    if made is None or any(a in ast_util.refs(s) for s in body[made + 1:at]):
        return False
    for n in ast_util.walk(loop):
        if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and n.value.id == a \
                and not (isinstance(n.slice, gast.Name) and n.slice.id == t.id):
            return False
    return True


def _one_range(e, levels):
    """``range(n)``, ``reversed(range(n))`` or a name bound only to ``range(n)``: one argument."""
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and e.func.id == "reversed":
        e = e.args[0]
    if isinstance(e, gast.Name):
        values = levels.bindings.get(e.id, []) if e.id in levels.ranges else []
        return bool(values) and all(_one_range(v, levels) for v in values)
    return _range_call(e) and len(e.args) == 1 and not isinstance(e.args[0], gast.Starred)


def _first_contributions(loop, zeroed):
    """In the loop on items: the first statements of a step that touch ``a[t]`` (``a`` in
    ``zeroed``, 0.0 when the step begins), ``a[t] += e1`` ... ``a[t] += en`` at the top of
    its body, become ``a[t] = 0.0 + e1 + ... + en`` at the last of them: the same float
    operations in the same order (Python adds left to right), without writing and reading
    the item between them. Each ``e`` must be arithmetic of names and items that nothing
    between it and the last rebinds or writes, with no ``continue`` or ``break`` between.
    Returns whether anything changed."""
    changed = False
    for a in zeroed:
        group = []
        for k, s in enumerate(loop.body):
            if a not in ast_util.refs(s):
                continue
            e = _contribution(s, a, loop.target.id)
            if e is None:
                break
            group.append(k)
        while group and not _movable(loop.body, group):
            group.pop()
        if not group:
            continue
        total = gast.Constant(value=0.0, kind=None)
        for k in group:
            s = loop.body[k]
            total = gast.BinOp(left=total, op=s.op, right=s.value)
        last = loop.body[group[-1]]
        loop.body[group[-1]] = gast.Assign(targets=[last.target], value=total, type_comment=None)
        for k in reversed(group[:-1]):
            del loop.body[k]
        changed = True
    return changed


def _contribution(s, a, t):
    """``e`` of ``a[t] += e`` (or ``-=``) where ``e`` is pure arithmetic without ``a``, else None."""
    if not (isinstance(s, gast.AugAssign) and isinstance(s.op, (gast.Add, gast.Sub))):
        return None
    target = s.target
    if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)
            and target.value.id == a and isinstance(target.slice, gast.Name) and target.slice.id == t):
        return None
    if a in ast_util.refs(s.value) or not all(isinstance(n, _PURE) for n in ast_util.walk(s.value)):
        return None
    return s.value


_PURE = (gast.BinOp, gast.UnaryOp, gast.Name, gast.Constant, gast.Subscript, gast.Load,
         gast.operator, gast.unaryop)


def _movable(block, group):
    """Whether each contribution of ``group`` (indices into ``block``) computes the same
    value at the last one: nothing between rebinds a name or writes an array it reads,
    and no ``continue``/``break`` between skips the last one."""
    last = group[-1]
    for k in group[:-1]:
        read = ast_util.refs(block[k].value)
        for s in block[k + 1:last]:
            for n in ast_util.walk(s):
                if isinstance(n, (gast.Continue, gast.Break)):
                    return False
                if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load) and n.id in read:
                    return False
                if isinstance(n, gast.Subscript) and not isinstance(n.ctx, gast.Load) \
                        and isinstance(n.value, gast.Name) and n.value.id in read:
                    return False
    return True


def _fresh(base, names):
    name, k = base, 1
    while name in names:
        k += 1
        name = f"{base}{k}"
    names.add(name)
    return name


def _stored(body):
    return {n.id for s in body for n in ast_util.nodes_of(s, gast.Name)
            if not isinstance(n.ctx, gast.Load)}


def _statements(body):
    """Every statement of ``body`` and of the statement lists in it (``nodes_of``'s
    statements: a statement stands only in these lists), without walking expressions."""
    todo = list(body)
    while todo:
        s = todo.pop()
        yield s
        state = s.__dict__
        for field in _STATEMENT_LISTS:
            inner = state.get(field)
            if inner.__class__ is list:
                for item in inner:   # (an except handler or a match case holds a body)
                    if isinstance(item, gast.stmt):
                        todo.append(item)
                    elif isinstance(item, gast.AST):
                        todo.extend(getattr(item, "body", ()))


_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _pure(e):
    return all(isinstance(n, (gast.BinOp, gast.UnaryOp, gast.Name, gast.Constant, gast.Load,
                               gast.operator, gast.unaryop))
               for n in ast_util.walk(e))


def _drop_unread(body, loops, name_sets=None):
    """Drop ``a = <arithmetic of names, or an item a[i]>`` in the loops where nothing
    reads ``a`` before it is bound again (analysis/liveness.py)."""
    if name_sets is None:
        removable = {n.id for loop in loops for n in ast_util.nodes_of(loop, gast.Name)
                     if isinstance(n.ctx, gast.Store)}
    else:   # (the same names: a loop's sets are its parts')
        removable = set().union(*(name_sets.stores(loop) for loop in loops))
    removable -= {n.target.id for n in _statements(loops)
                  if n.__class__ is gast.For and isinstance(n.target, gast.Name)}

    def pure(v):
        if isinstance(v, gast.Subscript):
            return isinstance(v.value, gast.Name) and isinstance(v.slice, gast.Name)
        return _pure(v)
    if dead.eliminate(body, removable, set(), pure=pure, names=name_sets):
        for s in body:
            _fill(s)
        return True
    return False


def _fill(s):
    for block in (s.body, s.orelse) if isinstance(s, (gast.For, gast.While, gast.If)) else ():
        if block is s.body and all(_comment(c) for c in block):   # comments emit nothing
            block.append(gast.Pass())
        for inner in block:
            _fill(inner)


def _comment(s):
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) \
        and isinstance(s.value.value, str)


# The nodes ``_Levels._binding`` reads (it does nothing for the others).
_BINDERS = frozenset((gast.Assign, gast.AugAssign, gast.For, gast.With, gast.FunctionDef,
                      gast.Lambda, gast.comprehension, gast.NamedExpr, gast.ExceptHandler,
                      gast.Import, gast.ImportFrom, gast.Global, gast.Nonlocal, gast.Delete,
                      gast.AnnAssign))


def _range_call(e):
    return isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and e.func.id == "range" \
        and not e.keywords


class _Levels:
    """What each name of the function is known to hold, the least over its bindings:
    PYTHON, a Python number in the user's code too (literals and their arithmetic,
    ``range`` indices, never a bool); SCALAR, arithmetic (+ - *) of items of arrays and
    PYTHON values; BOOL, a number or a bool (a comparison: np.bool_ in the user's code,
    which meets a number as a bool does, but not another bool); NONE, anything else.
    ``pop()`` gives the least of every value ``push``ed."""

    def __init__(self, body, params):
        self.bindings = {}   # name -> [value expressions, or a marker]
        assigned = {}
        stores = {}   # name -> how often it is bound (one walk: not one per name)
        nodes = [n for s in body for n in ast_util.walk(s)]   # one walk, read three times
        for n in nodes:
            if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                    and isinstance(n.targets[0], gast.Name):
                assigned.setdefault(n.targets[0].id, []).append(n.value)
            elif isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
                stores[n.id] = stores.get(n.id, 0) + 1
        self.ranges = {name for name, values in assigned.items() if all(map(_range_call, values))
                       and stores.get(name, 0) == len(values)}   # names bound only to range(...)
        for n in nodes:
            if n.__class__ in _BINDERS:
                self._binding(n)
        for p in params:
            self.bindings.setdefault(p, []).append("none")
        self.pushed = [n.args[0] for n in nodes
                       if isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
                       and n.func.id == "push" and len(n.args) == 1]
        self.level = {n: PYTHON for n in self.bindings}
        self.items = set()   # names of arrays whose items count as SCALAR (set by _plan)

    def _binding(self, n):
        if isinstance(n, gast.Assign):
            if len(n.targets) == 1 and isinstance(n.targets[0], gast.Name):
                self.bindings.setdefault(n.targets[0].id, []).append(n.value)
            else:
                for t in n.targets:
                    for m in ast_util.walk(t):
                        if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Store):
                            self.bindings.setdefault(m.id, []).append("none")
        elif isinstance(n, gast.AugAssign):
            if isinstance(n.target, gast.Name):
                self.bindings.setdefault(n.target.id, []).append(
                    gast.BinOp(left=n.target, op=n.op, right=n.value))
        elif isinstance(n, gast.For):
            if isinstance(n.target, gast.Name) and self.range_iter(n.iter):
                self.bindings.setdefault(n.target.id, []).append("index")
            else:
                for m in ast_util.walk(n.target):
                    if isinstance(m, gast.Name):
                        self.bindings.setdefault(m.id, []).append("none")
        elif isinstance(n, (gast.With, gast.FunctionDef, gast.Lambda, gast.comprehension,
                            gast.NamedExpr, gast.ExceptHandler, gast.Import, gast.ImportFrom,
                            gast.Global, gast.Nonlocal, gast.Delete, gast.AnnAssign)):
            for m in ast_util.walk(n):
                if isinstance(m, gast.Name) and not isinstance(m.ctx, gast.Load):
                    self.bindings.setdefault(m.id, []).append("none")
            if isinstance(n, gast.ExceptHandler) and n.name:
                self.bindings.setdefault(getattr(n.name, "id", n.name), []).append("none")

    def range_iter(self, e):
        if _range_call(e):
            return True
        if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) \
                and e.func.id == "reversed" and len(e.args) == 1 and not e.keywords:
            e = e.args[0]
            if _range_call(e):
                return True
        return isinstance(e, gast.Name) and e.id in self.ranges

    def solve(self, items):
        """Levels of every name, given ``items``: arrays whose ``a[i]`` is SCALAR."""
        self.items = set(items)
        self.level = {n: PYTHON for n in self.bindings}
        changed = True
        while changed:
            changed = False
            for name, values in self.bindings.items():
                low = min((self._value(v) for v in values), default=NONE)
                if low < self.level[name]:
                    self.level[name] = low
                    changed = True
        return self.level

    def _value(self, v):
        if v == "index":
            return PYTHON
        if isinstance(v, str):
            return NONE
        if _range_call(v):
            return NONE   # a range object: only iterated
        if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and v.func.id == "pop" \
                and not v.args:
            return min((self.expr(p) for p in self.pushed), default=NONE)
        return self.expr(v)

    def expr(self, e):
        """The level of expression ``e``."""
        if isinstance(e, gast.Constant):
            return PYTHON if type(e.value) in (int, float) else BOOL if type(e.value) is bool \
                else NONE
        if isinstance(e, gast.Name):
            return self.level.get(e.id, NONE)
        if isinstance(e, gast.Subscript):
            if isinstance(e.value, gast.Name) and e.value.id in self.items \
                    and self.is_index(e.slice):
                return SCALAR
            return NONE
        if isinstance(e, gast.BinOp):
            a, b = self.expr(e.left), self.expr(e.right)
            if a == PYTHON and b == PYTHON:
                return PYTHON
            # A bool meets a number the same way as NumPy's bool; two bools do not
            # (np.bool_ + np.bool_ is a logical or).
            if isinstance(e.op, _SAFE_OPS) and min(a, b) >= BOOL and max(a, b) >= SCALAR:
                return SCALAR
            return NONE
        if isinstance(e, gast.UnaryOp):
            a = self.expr(e.operand)
            if isinstance(e.op, gast.Not):
                return BOOL if a >= BOOL else NONE
            if isinstance(e.op, (gast.USub, gast.UAdd)) and a >= SCALAR:
                return a
            return NONE
        if isinstance(e, gast.Compare):
            parts = [self.expr(x) for x in [e.left] + e.comparators]
            return BOOL if min(parts) >= SCALAR and all(
                isinstance(op, (gast.Lt, gast.LtE, gast.Gt, gast.GtE, gast.Eq, gast.NotEq))
                for op in e.ops) else NONE
        return NONE

    def is_index(self, e):
        return isinstance(e, gast.Name) and self.bindings.get(e.id) \
            and all(v == "index" for v in self.bindings[e.id])


def _arrays(loop, params, stored, levels):
    """(arrays read, {adjoint written: the parameter it is the zeros of}) of a loop
    this pass rewrites, or None."""
    reads, accs = [], {}
    for n in ast_util.walk(loop):
        if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name):
            a = n.value.id
            if isinstance(n.ctx, gast.Load):
                if a not in reads:
                    reads.append(a)
            elif a not in accs:
                accs[a] = None
    reads = [a for a in reads if a not in accs]
    for a in reads:
        if a not in params or a in stored:
            return None
    for a in list(accs):
        values = levels.bindings.get(a, [])
        if len(values) != 1 or isinstance(values[0], str) or not _owned_zeros_of(values[0]):
            return None
        src = values[0].args[0].id
        if src not in params or src in stored:
            return None
        accs[a] = src
    if not reads and not accs or not levels.range_iter(loop.iter):
        return None
    return reads, accs


def _owned_zeros_of(v):
    return isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) \
        and isinstance(v.func.value, gast.Name) and v.func.value.id == "rt" \
        and v.func.attr == "owned_zeros" and len(v.args) == 1 and not v.keywords \
        and isinstance(v.args[0], gast.Name)


def _block_ok(block, levels, reads, accs):
    reads, accs = set(reads), set(accs)
    for s in block:
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) \
                and isinstance(s.value.value, str):
            continue   # a comment
        if isinstance(s, gast.Assign):
            if len(s.targets) != 1 or not isinstance(s.targets[0], gast.Name):
                return False
            name = s.targets[0].id
            if name in reads or name in accs:
                return False
            if not _uses_ok(s.value, levels, reads, accs):
                return False
            if levels.level.get(name, NONE) < BOOL:
                return False
        elif isinstance(s, gast.AugAssign):
            if not isinstance(s.op, _SAFE_OPS) or levels.expr(s.value) < SCALAR \
                    or not _uses_ok(s.value, levels, reads, accs):
                return False
            t = s.target
            if isinstance(t, gast.Name):
                if levels.level.get(t.id, NONE) < SCALAR:
                    return False
            elif not (isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name)
                      and t.value.id in accs and levels.is_index(t.slice)):
                return False
        elif isinstance(s, gast.If):
            if levels.expr(s.test) < BOOL or not _uses_ok(s.test, levels, reads, accs) \
                    or not _block_ok(s.body, levels, reads, accs) \
                    or not _block_ok(s.orelse, levels, reads, accs):
                return False
        elif isinstance(s, gast.Expr):
            v = s.value
            if not (isinstance(v, gast.Call) and isinstance(v.func, gast.Name)
                    and v.func.id == "push" and len(v.args) == 1 and not v.keywords
                    and levels.expr(v.args[0]) >= BOOL):
                return False
        elif not isinstance(s, (gast.Pass, gast.Continue, gast.Break)):
            return False
    return True


def _uses_ok(e, levels, reads, accs):
    """Every array ``e`` touches is read at an index, every value is known: ``e`` is
    a pop() or has a level."""
    if isinstance(e, gast.Call):
        return isinstance(e.func, gast.Name) and e.func.id == "pop" and not e.args \
            and not e.keywords
    indexed = set()
    for n in ast_util.walk(e):
        if isinstance(n, gast.Subscript):
            if not (isinstance(n.value, gast.Name) and n.value.id in reads | accs
                    and levels.is_index(n.slice)):
                return False
            indexed.add(id(n.value))
    for n in ast_util.walk(e):
        if isinstance(n, gast.Name) and (n.id in reads or n.id in accs) and id(n) not in indexed:
            return False   # an array only ever as a[i]
    return levels.expr(e) >= BOOL


def _hoist(loop, levels, names):
    """``a * b`` (``+``, ``-``) of Python numbers the loop does not rebind, computed
    once before it: the same operation on the same values (no operation of these
    raises)."""
    stored = {n.id for n in ast_util.walk(loop) if isinstance(n, gast.Name)
              and not isinstance(n.ctx, gast.Load)}
    hoisted, seen = [], {}

    def invariant(e):
        if isinstance(e, gast.Constant):
            return type(e.value) in (int, float)
        if isinstance(e, gast.Name):
            return e.id not in stored and levels.level.get(e.id, NONE) == PYTHON
        return isinstance(e, gast.BinOp) and isinstance(e.op, _SAFE_OPS) \
            and invariant(e.left) and invariant(e.right)

    class Hoist(ast_util.NodeTransformer):
        def visit_BinOp(self, e):
            if invariant(e) and not (isinstance(e.left, gast.Constant)
                                     and isinstance(e.right, gast.Constant)):
                key = gast.dump(e)
                if key not in seen:
                    described = _describe(e)
                    seen[key] = _fresh(described if len(described) <= 40 else "invariant", names)
                    hoisted.append(gast.Assign(
                        targets=[gast.Name(id=seen[key], ctx=gast.Store(), annotation=None,
                                           type_comment=None)], value=e, type_comment=None))
                return gast.Name(id=seen[key], ctx=gast.Load(), annotation=None,
                                 type_comment=None)
            return self.generic_visit(e)

    for s in loop.body:
        Hoist().visit(s)
    return hoisted


def _describe(e):
    if isinstance(e, gast.Name):
        return e.id
    if isinstance(e, gast.Constant):
        return str(e.value).replace(".", "_").replace("-", "minus")
    op = {gast.Add: "plus", gast.Sub: "minus", gast.Mult: "times"}[type(e.op)]
    return f"{_describe(e.left)}_{op}_{_describe(e.right)}"


class _Rename(ast_util.NodeTransformer):
    """``a[i]`` of the arrays in ``renamed`` reads ``a_items[i]``."""

    def __init__(self, renamed):
        self.renamed = renamed

    def visit_Subscript(self, n):
        self.generic_visit(n)
        if isinstance(n.value, gast.Name) and n.value.id in self.renamed:
            n.value = gast.Name(id=self.renamed[n.value.id], ctx=gast.Load(), annotation=None,
                                type_comment=None)
        return n
