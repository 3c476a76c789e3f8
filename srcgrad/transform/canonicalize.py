"""Canonical control flow: indexed for-loops, a single return, no break/continue jumps.

Three rewrites, each semantics-preserving on the forward run:

* ``for target in X`` becomes ``for i in range(len(X)): target = X[i]`` (zip,
  enumerate and reversed are unpacked the same way), so iterating over an
  array's elements is differentiated through ordinary subscripts.
* Returns inside compound statements become ``retval = v; returned = True``,
  with the rest of each block guarded by ``if not returned:``; one ``return``
  ends the function.
* ``break`` and ``continue`` become flags; the statements after them are
  guarded, and a loop with a break ends its body with ``if brk: break``
  (annotated BREAK_EXIT), so every started iteration runs its whole body and
  the adjoint can replay iterations by count. A loop's ``else`` becomes
  ``if completed:`` after it, a flag its breaks clear.
"""

import gast

from srcgrad import anno
from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.transform import generators
from srcgrad.transform.base import Base
from srcgrad import ast_util

Static = anno.Static



def _assign(target, value, origin_of=None):
    node = gast.Assign(targets=[name(target, True) if isinstance(target, str) else target],
                       value=value, type_comment=None)
    if origin_of is not None:
        anno.copyanno(origin_of, node, Static.ORIGIN)
    return node


def _const(value):
    return gast.Constant(value=value, kind=None)


def _call(fn, *args):
    return gast.Call(func=name(fn) if isinstance(fn, str) else fn, args=list(args), keywords=[])


def _not(expr):
    return gast.UnaryOp(op=gast.Not(), operand=expr)


def _if(test, body, orelse=(), origin_of=None):
    node = gast.If(test=test, body=list(body) or [gast.Pass()], orelse=list(orelse))
    if origin_of is not None:
        anno.copyanno(origin_of, node, Static.ORIGIN)
    return node


class Canonicalizer(Base):
    """The three rewrites' shared helpers; ``_Loops`` and ``_Jumps`` visit the blocks."""

    def __init__(self, info, namer):
        super().__init__(info)
        self.namer = namer

    def _resolves_to(self, func, obj):
        if isinstance(func, gast.Name):
            try:
                return self.info.resolve(func.id) is obj
            except NameError:
                return False
        return False

    # ----- for loops -----

    def _index_loop(self, loop):
        import builtins
        it = loop.iter
        if isinstance(it, gast.Call) and self._resolves_to(it.func, builtins.range):
            if isinstance(loop.target, gast.Name):
                return [loop]
        prelude, length, bind = self._sequence(it, loop)
        index = self.namer.new("i")
        body = bind(loop.target, name(index)) + loop.body
        new = gast.For(target=name(index, True), iter=_call("range", length), body=body,
                       orelse=[], type_comment=None)
        anno.copyanno(loop, new, Static.ORIGIN)
        anno.setanno(new, Static.ITERATES, True)
        return prelude + [new]

    sequences = None   # CompileContext.loop_sequences
    root = None        # the function

    def _sequence(self, it, loop, partial=None):
        """Prelude statements, a length expression, and a binder of targets at an index.
        ``partial``: why the loop may not read every item of ``it`` (in a zip)."""
        import builtins
        if isinstance(it, gast.Call) and it.args and all(k.arg == "start" for k in it.keywords):
            if self._resolves_to(it.func, builtins.zip):
                parts = [self._sequence(a, loop, "zip stops at its shortest sequence")
                         for a in it.args]
                prelude = [s for p in parts for s in p[0]]
                length = _call("min", *[p[1] for p in parts])

                def bind_zip(target, index):
                    if not isinstance(target, (gast.Tuple, gast.List)) or len(target.elts) != len(parts):
                        raise self.error(loop, UnsupportedError, "unpack zip(...) into one name per sequence",
                                          "Write `for a, b in zip(x, y):`.")
                    return [s for t, p in zip(target.elts, parts) for s in p[2](t, index)]
                return prelude, length, bind_zip
            if self._resolves_to(it.func, builtins.enumerate) and len(it.args) + len(it.keywords) <= 2:
                inner = self._sequence(it.args[0], loop, partial)
                start = it.args[1] if len(it.args) == 2 else it.keywords[0].value if it.keywords else None

                def bind_enum(target, index):
                    if not isinstance(target, (gast.Tuple, gast.List)) or len(target.elts) != 2:
                        raise self.error(loop, UnsupportedError, "unpack enumerate(...) into two targets",
                                          "Write `for i, v in enumerate(x):`.")
                    count = index if start is None else gast.BinOp(left=index, op=gast.Add(),
                                                                   right=start)
                    return [_assign(target.elts[0], count, loop)] + inner[2](target.elts[1], index)
                return inner[0], inner[1], bind_enum
            if self._resolves_to(it.func, builtins.reversed) and len(it.args) == 1:
                inner = self._sequence(it.args[0], loop, partial)
                n = self.namer.new("n")

                def bind_rev(target, index):
                    flipped = gast.BinOp(left=gast.BinOp(left=name(n), op=gast.Sub(), right=_const(1)),
                                         op=gast.Sub(), right=index)
                    return inner[2](target, flipped)
                return inner[0] + [_assign(n, inner[1], loop)], name(n), bind_rev
        rebound = {n.id for s in loop.body for n in ast_util.walk(s)
                   if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        if isinstance(it, gast.Name):
            self._refuse_resized(it.id, loop)
        if isinstance(it, gast.Name) and it.id not in rebound:
            seq = it.id
            prelude = []
        else:
            seq = self.namer.new("seq")
            value = it
            if isinstance(it, gast.Call) and not self._is_indexable_call(it) or isinstance(
                    it, (gast.Set, gast.SetComp, gast.GeneratorExp, gast.Dict, gast.DictComp)):
                value = _call("list", it)   # (a set or generator has no items by index)
                if isinstance(it, gast.Call) and self.sequences is not None:
                    # read whole? (a generator's call: generators.py)
                    self.sequences[seq] = partial or generators.loop_verdict(
                        loop, it, self.root, self.info)
            prelude = [_assign(seq, value, loop)]

        def bind(target, index):
            item = gast.Subscript(value=name(seq), slice=index, ctx=gast.Load())
            return [_assign(target, item, loop)]
        return prelude, _call("len", name(seq)), bind

    _RESIZING = frozenset({"append", "extend", "insert", "pop", "remove", "clear"})

    def _refuse_resized(self, seq, loop):
        """``for v in L`` whose body appends to (or pops from) ``L`` itself: Python's loop
        sees the new length, the indexed loop (``range(len(L))``) would not: refused."""
        for n in (n for st in loop.body for n in ast_util.walk(st)):
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                    and n.func.attr in self._RESIZING and isinstance(n.func.value, gast.Name) \
                    and n.func.value.id == seq:
                raise self.error(n, UnsupportedError,
                                 f"a for loop over {seq!r} whose body changes its length "
                                 f"({seq}.{n.func.attr}(...)) is not supported",
                                 f"Loop with an index instead: `i = 0`, `while i < len({seq}):`, "
                                 f"`v = {seq}[i]`, ..., `i += 1`.")

    def _is_indexable_call(self, call):
        import builtins
        return self._resolves_to(call.func, builtins.range)

    # ----- returns -----

    def returns(self, node):
        body = node.body
        returns = [n for s in body for n in ast_util.nodes_of(s, gast.Return)]
        if not returns:
            node.body = body + [gast.Return(value=_const(None))]
            return node
        if len(returns) == 1 and body and body[-1] is returns[0]:
            return node
        self.retval = self.namer.new("retval")
        self.returned = self.namer.new("returned")
        new_body = [_assign(self.retval, _const(None)), _assign(self.returned, _const(False))]
        new_body += self._return_block(body, in_loop=False)
        new_body.append(gast.Return(value=name(self.retval)))
        node.body = new_body
        return node

    @staticmethod
    def _may_return(stmt):
        return any(isinstance(n, gast.Return) for n in ast_util.walk(stmt))

    def _return_block(self, body, in_loop):
        out = []
        for k, stmt in enumerate(body):
            if isinstance(stmt, gast.Return):
                value = stmt.value if stmt.value is not None else _const(None)
                out.append(_assign(self.retval, value, stmt))
                out.append(_assign(self.returned, _const(True), stmt))
                if in_loop:
                    out.append(gast.Break())
                return out
            if not self._may_return(stmt):
                out.append(stmt)
                continue
            if isinstance(stmt, gast.If):
                stmt.body = self._return_block(stmt.body, in_loop)
                stmt.orelse = self._return_block(stmt.orelse, in_loop)
            elif isinstance(stmt, gast.With):
                stmt.body = self._return_block(stmt.body, in_loop)
            elif isinstance(stmt, (gast.For, gast.While)):
                stmt.body = self._return_block(stmt.body, in_loop=True)
            out.append(stmt)
            rest = body[k + 1:]
            if in_loop:
                out.append(_if(name(self.returned), [gast.Break()]))
                out.extend(self._return_block(rest, in_loop))
            elif rest:
                out.append(_if(_not(name(self.returned)), self._return_block(rest, in_loop)))
            return out
        return out

    # ----- break and continue -----

    def _loop_jumps(self, loop):
        prelude = []
        if self._has_jump(loop.body, gast.Continue):
            flag = self.namer.new("skip")
            loop.body = [_assign(flag, _const(False), loop)] + self._guard(loop.body, gast.Continue, flag)
        if self._has_jump(loop.body, gast.Break):
            flag = self.namer.new("stop")
            prelude.append(_assign(flag, _const(False), loop))
            exit_ = _if(name(flag), [gast.Break()])
            anno.setanno(exit_, Static.BREAK_EXIT, True)
            loop.body = self._guard(loop.body, gast.Break, flag) + [exit_]
        return prelude + [loop]

    @staticmethod
    def _has_jump(body, kind):
        def walk(stmts):
            for s in stmts:
                if isinstance(s, kind):
                    return True
                if isinstance(s, gast.If) and (walk(s.body) or walk(s.orelse)):
                    return True
                if isinstance(s, gast.With) and walk(s.body):
                    return True
            return False
        return walk(body)

    def _guard(self, body, kind, flag):
        out = []
        for k, stmt in enumerate(body):
            if isinstance(stmt, kind):
                out.append(_assign(flag, _const(True), stmt))
                return out
            if isinstance(stmt, (gast.If, gast.With)) and self._has_jump([stmt], kind):
                stmt.body = self._guard(stmt.body, kind, flag)
                if isinstance(stmt, gast.If):
                    stmt.orelse = self._guard(stmt.orelse, kind, flag)
                out.append(stmt)
                rest = body[k + 1:]
                if rest:
                    out.append(_if(_not(name(flag)), self._guard(rest, kind, flag)))
                return out
            out.append(stmt)
        return out


class _Loops(Canonicalizer):
    """``for target in X`` becomes a loop over an index; a loop's ``else`` a flag."""

    def visit_For(self, stmt):
        before, after = self._else(stmt)
        return before + self._index_loop(stmt) + after

    def visit_While(self, stmt):
        before, after = self._else(stmt)
        return before + [stmt] + after

    def _else(self, loop):
        """A loop's ``else`` runs when no ``break`` ended it: ``completed = True`` before
        the loop, each of its breaks clears it, and ``if completed: <else>`` follows."""
        self.visit_children(loop)
        if not loop.orelse:
            return [], []
        flag = self.namer.new("completed")

        def clear(body):
            out = []
            for s in body:
                if isinstance(s, gast.Break):
                    out.append(_assign(flag, _const(False), s))
                elif isinstance(s, gast.If):
                    s.body, s.orelse = clear(s.body), clear(s.orelse)
                elif isinstance(s, gast.With):
                    s.body = clear(s.body)
                out.append(s)
            return out
        loop.body = clear(loop.body)
        after = _if(name(flag), loop.orelse, origin_of=loop)
        loop.orelse = []
        return [_assign(flag, _const(True), loop)], [after]


class _Jumps(Canonicalizer):
    """``break`` and ``continue`` become flags (innermost loops first)."""

    def visit_For(self, stmt):
        self.visit_children(stmt)
        return self._loop_jumps(stmt)

    visit_While = visit_For


def transform(node, ctx):
    """Canonicalize loops, returns and jumps of FunctionDef ``node`` in place
    (``ctx``: the CompileContext, for its EntityInfo and Namer)."""
    loops = _Loops(ctx.info, ctx.namer)
    loops.sequences, loops.root = ctx.loop_sequences, node
    node.body = loops.visit_block(node.body)
    node = Canonicalizer(ctx.info, ctx.namer).returns(node)
    node.body = _Jumps(ctx.info, ctx.namer).visit_block(node.body)
    return node
