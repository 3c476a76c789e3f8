"""``match`` written as the ``if``/``elif``/``else`` chain it stands for, before the checks
(pipeline.front_end), so that every later pass sees only ``if`` statements.

    match mode:                        subject = mode
        case "relu":                   if subject == "relu":
            y = np.maximum(x, 0)           y = np.maximum(x, 0)
        case "tanh" | "sigmoid":       elif subject == "tanh" or subject == "sigmoid":
            y = np.tanh(x)                 y = np.tanh(x)
        case n if n > 0:               elif (n := subject) is subject and n > 0:
            y = x * n                      y = x * n
        case _:                        else:
            y = x                          y = x

The subject is evaluated once, into a name of its own. Value patterns compare with ``==``,
``None``/``True``/``False`` with ``is``, as Python's; a capture (``case n``, ``... as n``)
binds the subject when its pattern matched, before the guard (a walrus, which
assignment_expressions.py writes as a statement in Python's order). Sequence, mapping and
class patterns are refused at their line.
"""

import gast

from srcgrad.ast_util import name
from srcgrad.errors import UnsupportedError
from srcgrad.transform.base import Base, local_names

_REFUSED = {
    "MatchSequence": "a sequence pattern (case [a, b])",
    "MatchStar": "a sequence pattern (case [a, *rest])",
    "MatchMapping": "a mapping pattern (case {'k': v})",
    "MatchClass": "a class pattern (case Point(x=0))",
}
_HINT = ("Use if/elif/else: test the length or the keys (len(v) == 2, 'k' in d), then unpack "
         "or index the value.")


def may_hold(info):
    """Whether the source may hold a ``match`` statement (most functions do not: no walk)."""
    return any(line.lstrip().startswith("match") for line in info.source_lines)


def transform(node, ctx):
    """``node`` with each ``match`` statement replaced by its ``if`` chain."""
    captures = {getattr(n, "name", None) for n in gast.walk(node)} - {None}
    ctx.namer.taken.update(c for c in captures if isinstance(c, str))   # no temporary named so
    _Lowering(ctx).block(node.body)
    ctx.user_locals = frozenset(local_names(node))   # the captures, now assigned names
    return node


class _Lowering:
    def __init__(self, ctx):
        self.ctx = ctx
        self.base = Base(ctx.info)

    def block(self, body):
        k = 0
        while k < len(body):
            stmt = body[k]
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                    self.block(inner)
            if isinstance(stmt, getattr(gast, "Try", ())):
                for handler in stmt.handlers:
                    self.block(handler.body)
            if isinstance(stmt, getattr(gast, "Match", ())):
                for case in stmt.cases:
                    self.block(case.body)
                lowered = self.lower(stmt)
                body[k:k + 1] = lowered
                k += len(lowered)
                continue
            k += 1

    def lower(self, stmt):
        subject = self.ctx.namer.new("subject")
        statements = [gast.copy_location(gast.Assign(
            targets=[name(subject, store=True)], value=stmt.subject, type_comment=None), stmt)]
        chain = None
        for case in reversed(stmt.cases):
            pattern = case.pattern
            if type(pattern).__name__ == "MatchAs" and pattern.pattern is None \
                    and pattern.name is not None and case.guard is None:   # case n: n = subject
                chain = [gast.copy_location(gast.Assign(targets=[name(pattern.name, store=True)],
                                                        value=name(subject), type_comment=None),
                                            pattern)] + case.body
                continue
            test = self.test(pattern, subject)
            if case.guard is not None:
                test = _and(test, case.guard)
            if test is None:   # irrefutable: the rest of the chain is never reached
                chain = case.body
                continue
            branch = gast.copy_location(gast.If(test=test, body=case.body, orelse=chain or []),
                                        case.pattern)
            chain = [branch]
        statements.extend(chain or [])
        for s in statements:
            for child in gast.walk(s):
                if not hasattr(child, "lineno") and isinstance(child, (gast.expr, gast.stmt)):
                    gast.copy_location(child, stmt)
        return statements

    def test(self, pattern, subject):
        """The condition under which ``pattern`` matches the name ``subject`` (None: always),
        binding its captures with walruses where it matched."""
        kind = type(pattern).__name__
        if kind == "MatchValue":
            return _compare(subject, gast.Eq(), pattern.value)
        if kind == "MatchSingleton":
            return _compare(subject, gast.Is(), gast.Constant(value=pattern.value, kind=None))
        if kind == "MatchAs":
            inner = None if pattern.pattern is None else self.test(pattern.pattern, subject)
            if pattern.name is None:
                return inner
            capture = _compare_expr(gast.NamedExpr(target=name(pattern.name, store=True),
                                                   value=name(subject)), gast.Is(), name(subject))
            return _and(inner, capture) if inner is not None else capture
        if kind == "MatchOr":
            tests = [self.test(p, subject) for p in pattern.patterns]
            if any(t is None for t in tests):
                return None
            return gast.BoolOp(op=gast.Or(), values=tests)
        raise self.base.error(pattern, UnsupportedError,
                              f"{_REFUSED.get(kind, 'this pattern')} in a match statement is not "
                              f"supported in a function srcgrad differentiates", _HINT)


def _compare(subject, op, value):
    return _compare_expr(name(subject), op, value)


def _compare_expr(left, op, right):
    return gast.Compare(left=left, ops=[op], comparators=[right])


def _and(left, right):
    if left is None:
        return right
    return gast.BoolOp(op=gast.And(), values=[left, right])
