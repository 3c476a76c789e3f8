"""Generated trees -> Python source a person can read (printed with astor).

Comments are carried through the tree as marker string statements and turned
into ``#`` lines after printing: ``# grad of: <user line>`` over each adjoint
block, and ``# <user line>`` over forward statements that normalization split.
"""

import ast
import re

import astor

import gast
from gast.ast3 import GAstToAst3

from srcgrad import anno
from srcgrad.codegen import printer

Static = anno.Static
_MARK = "__srcgrad_comment__:"
_MARK_LINE = re.compile(r"^(\s*)(?:[rubf]*)(['\"]{1,3})" + re.escape(_MARK) + r"(.*?)\2\s*$")


def _comment(text):
    return gast.Expr(value=gast.Constant(value=_MARK + text, kind=None))


def note_after(body, heading, note):
    """Insert the comment ``note`` after the comment ``heading`` in ``body`` (top level),
    or before its last statement where no such heading was printed."""
    marked = _MARK + heading
    at = next((i + 1 for i, s in enumerate(body) if isinstance(s, gast.Expr)
               and isinstance(s.value, gast.Constant) and s.value.value == marked),
              len(body) - 1)
    body.insert(at, _comment(note))


def _origin_text(stmt):
    origin = anno.getanno(stmt, Static.ORIGIN)
    return origin.source_line.strip() if origin is not None else None


def _compound(s):
    return isinstance(s, (gast.For, gast.While, gast.If)) and not anno.getanno(s, Static.GUARD)


def comment_blocks(body, prefix, min_group, enclosing=None):
    """Insert a comment before each run of statements coming from one user line
    (not inside a compound statement from that same line, ``enclosing``: the loop
    a comprehension or a one-line ``for`` became)."""
    out = []
    k = 0
    previous = None   # the user line of the group before
    texts = [_origin_text(s) for s in body]   # (each statement's, asked once)
    while k < len(body):
        s = body[k]
        text = texts[k]
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                setattr(s, field, comment_blocks(inner, prefix, min_group, text))
        j = k + 1
        joins = text is not None and not _compound(s)
        while joins and j < len(body) and texts[j] == text and not _compound(body[j]):
            inner_s = body[j]
            for field in ("body", "orelse"):
                inner = getattr(inner_s, field, None)
                if isinstance(inner, list) and inner:
                    setattr(inner_s, field, comment_blocks(inner, prefix, min_group, text))
            j += 1
        group = body[k:j]
        # A loop of the reverse sweep names the loop it replays; other compound
        # statements carry their user line in their own header.
        loop = isinstance(s, (gast.For, gast.While)) and prefix
        if text is not None and text != enclosing and (
                len(group) >= min_group and not _compound(s) or loop and text != previous):
            out.append(_comment(prefix + text))
        out.extend(group)
        previous = text
        k = j
    return out


_LINE = 79   # astor breaks longer lines (inside brackets it adds)


def _released(function):
    """``function`` as printed: where a chained release is too long for a line
    (``_split_releases``), a copy of it whose changed blocks are new lists (the statements
    not split, the trees' own); else ``function`` itself."""
    body = _split_releases(function.body, 4)
    if body is function.body:
        return function
    return _with_block(function, "body", body)


def _with_block(node, field, block):
    """A shallow copy of ``node`` holding ``block`` as its ``field``."""
    new = node.__class__.__new__(node.__class__)
    new.__dict__.update(node.__dict__)
    setattr(new, field, block)
    return new


def _split_releases(body, indent):
    """``body`` with its ``a = b = ... = None`` statements (and nested blocks') too long
    for a line split into several that fit (astor would break one by wrapping its names
    in parentheses, ``(a) = (b) = ... = None``): ``body`` itself where none is, else a new
    list (a compound statement whose block changed, copied; ``body`` is not changed)."""
    out = None   # the new list, from the first statement that changed
    for k, s in enumerate(body):
        new = s
        if s.__class__ is not gast.Assign:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(s, field, None)
                if isinstance(inner, list):
                    split = _split_releases(inner, indent + 4)
                    if split is not inner:
                        new = _with_block(new, field, split)
        elif len(s.targets) > 1 and all(isinstance(t, gast.Name) for t in s.targets) \
                and isinstance(s.value, gast.Constant) and s.value.value is None:
            lines, line = [], []
            for t in s.targets:
                if line and indent + sum(len(n.id) + 3 for n in line + [t]) + 4 > _LINE:
                    lines.append(line)
                    line = []
                line.append(t)
            lines.append(line)
            if len(lines) > 1:
                new = [anno.copyanno(s, gast.Assign(targets=names, value=gast.Constant(
                    value=None, kind=None), type_comment=None), Static.ORIGIN) for names in lines]
        if new is not s and out is None:
            out = body[:k]
        if out is not None:
            if new.__class__ is list:
                out.extend(new)
            else:
                out.append(new)
    return body if out is None else out


def to_source(functions):
    """Source text of gast FunctionDefs, with comment markers turned into comments.

    A chained release too long for a line is printed as several (``_released``); the
    trees are not changed (the sweeps are printed without copying them), and
    ``line_origins`` matches the printed statements the same way."""
    text = printer.to_source([_released(f) for f in functions], _ToAst().visit)
    return _comments(text)


def astor_source(functions):
    """``to_source`` printed by astor itself (what ``printer`` reproduces; tests compare)."""
    module = gast.Module(body=[_released(f) for f in functions], type_ignores=[])
    return _comments(astor.to_source(_ToAst().visit(module)))


def _comments(text):
    """``text`` with its comment markers turned into comments."""
    lines = []
    for line in text.splitlines():
        m = _MARK_LINE.match(line)
        if m:
            lines.append(f"{m.group(1)}# {m.group(3)}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


class _ToAst(GAstToAst3):
    """``gast.gast_to_ast``, the same tree, without its per-node ``NodeTransformer``
    dispatch, ``hasattr``/``getattr`` pairs and ``copy_location``: it converted every
    node of both printed sources, a tenth of a short function's compile. Only the
    nodes gast converts specially (``arguments``, ``FunctionDef``, ...) take gast's
    own methods."""

    _classes = {}   # gast class -> (the ast class or None, gast's own method or None)
    _AST = gast.AST
    _CONTEXTS = {gast.Load: ast.Load(), gast.Store: ast.Store(), gast.Del: ast.Del()}

    def visit(self, node):
        cls = node.__class__
        found = self._classes.get(cls)
        if found is None:
            method = getattr(_ToAst, "visit_" + cls.__name__, None)
            if method is getattr(ast.NodeVisitor, "visit_" + cls.__name__, None):
                method = None   # NodeVisitor.visit_Constant: the plain conversion
            found = self._classes[cls] = (getattr(ast, cls.__name__, None), method)
        target, method = found
        if method is not None:
            return method(self, node)
        if target is None:
            return None   # not a node of ast (gast's generic_visit drops it too)
        return self._convert(node, target)

    def _visit(self, node):
        if isinstance(node, self._AST):
            return self.visit(node)
        if node.__class__ is list:
            return [self.visit(n) if isinstance(n, self._AST) else n for n in node]
        return node

    def generic_visit(self, node):
        cls = node.__class__
        return self._convert(node, getattr(ast, cls.__name__)) if hasattr(ast, cls.__name__) \
            else None

    def _convert(self, node, target):
        state = node.__dict__
        new = target(**{field: self._visit(state[field]) for field in node._fields
                        if field in state})   # as gast makes it: every field given
        new_state = new.__dict__
        for attr in node._attributes:
            if attr in state:
                new_state[attr] = state[attr]
        return new

    def visit_Name(self, node):
        state = node.__dict__
        new = ast.Name(id=node.id, ctx=self._CONTEXTS.get(node.ctx.__class__) or self._visit(node.ctx))
        for attr in node._attributes:
            if attr in state:
                setattr(new, attr, state[attr])
        return new

    def visit_Assign(self, node):
        return ast.copy_location(ast.Assign(targets=self._visit(node.targets),
                                            value=self._visit(node.value)), node)


def line_origins(functions, text):
    """Line of ``text`` (``to_source(functions)``) -> the Origin of the user statement
    the generated statement on it computes: the printed source parsed again, its
    statements matched in order with the tree's (comment markers left out)."""
    return _lines_of(_skeletons(functions), text)


def origins_later(functions, text):
    """``line_origins(functions, text)`` as a call made when a traceback first asks
    (loader.py), keeping only the statements' origins, not the trees: a compiled gradient
    kept for the process's life would otherwise keep a copy of every printed tree."""
    return Origins(_skeletons(functions), text)


class Origins:
    """``line_origins`` made when called, from ``skeletons`` (``_skeletons``: the
    statements' origins and blocks) and the printed ``text``: the on-disk cache stores
    the skeletons, not the lines, so a compile does not parse what it printed."""

    __slots__ = ("skeletons", "text")

    def __init__(self, skeletons, text):
        self.skeletons = skeletons
        self.text = text

    def __call__(self):
        return _lines_of(self.skeletons, self.text)


def _skeletons(functions):
    """Per function, its body as printed (``_released``) as [(origin, [(field, nested
    body)])], comment markers left out."""
    def skeleton(body):
        return [(anno.getanno(s, Static.ORIGIN),
                 [(f, skeleton(getattr(s, f))) for f in ("body", "orelse", "finalbody")
                  if isinstance(getattr(s, f, None), list)])
                for s in body if not _is_comment(s)]
    return [skeleton(_released(f).body) for f in functions]


def _lines_of(skeletons, text):
    """``line_origins`` of the functions whose ``_skeletons`` are ``skeletons``."""
    lines = {}

    def match(tree_body, printed_body):
        if len(tree_body) != len(printed_body):
            return   # printed differently than expected: this block gets no lines
        for (origin, nested), printed in zip(tree_body, printed_body):
            if origin is not None:
                last = printed.end_lineno if not nested else printed.lineno
                for line in range(printed.lineno, last + 1):
                    lines.setdefault(line, origin)
            for field, inner in nested:
                match(inner, getattr(printed, field, []))

    module = ast.parse(text)
    printed_functions = [s for s in module.body if isinstance(s, ast.FunctionDef)]
    if len(printed_functions) == len(skeletons):
        for skeleton, printed in zip(skeletons, printed_functions):
            match(skeleton, printed.body)
    return lines


def _is_comment(stmt):
    return isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Constant) \
        and isinstance(stmt.value.value, str) and stmt.value.value.startswith(_MARK)
