"""gast FunctionDefs -> the text astor prints for them, without astor.

``emit.to_source`` printed by converting each tree to ``ast`` and running astor's
``SourceGenerator`` and line wrapper: a third of a short function's first compile was
spent there and in the conversion. This prints the same text from the gast trees
directly, for the statements and expressions generated code is made of, with astor's
precedence rules (``astor.op_util``; a node whose parent sets no precedence takes the
highest, as in astor). Whatever it does not print the way astor would for certain is
printed by astor itself, one statement at a time (or one function):

* a line longer than astor's 79 characters, which astor wraps (``source_repr``);
* a string anywhere but as an argument (astor may choose triple quotes by where the
  string stands on its line), a string with a line break, a ``kind`` prefix;
* any node class not handled below (comprehensions, lambdas, f-strings, ``try``, ...),
  a decorated or annotated function.

tests/test_printer.py checks the text against astor's on every generated source of the
test catalogue.
"""

import math

import gast
from astor.code_gen import SourceGenerator
from astor.op_util import op_data, Precedence
from srcgrad.codegen.wrap import split_lines
from astor.string_repr import pretty_string

_LINE = 79
_P = {getattr(gast, name): value for name, _, value in op_data if hasattr(gast, name)}
_SYMBOL = {getattr(gast, name): symbol for name, symbol, _ in op_data
           if symbol and hasattr(gast, name)}
HIGHEST = Precedence.highest
COMMA = Precedence.Comma
ONE_ARG = Precedence.call_one_arg
P_CONSTANT = _P[gast.Constant]
P_SUBSCRIPT, P_SLICE, P_TUPLE = _P[gast.Subscript], _P[gast.Slice], _P[gast.Tuple]
P_ASSIGN, P_AUG, P_EXPR, P_RETURN = _P[gast.Assign], _P[gast.AugAssign], _P[gast.Expr], \
    _P[gast.Return]
P_IF, P_FOR, P_WHILE = _P[gast.If], _P[gast.For], _P[gast.While]
P_ASSERT = Precedence.Assert
P_POW, P_POW_RHS, P_IFEXP = _P[gast.Pow], Precedence.PowRHS, _P[gast.IfExp]


class _Astor(Exception):
    """Raised where astor prints the node: its statement (or function) is printed by it."""


def to_source(functions, to_ast):
    """The text ``astor.to_source`` makes of ``gast.Module(body=functions)`` converted by
    ``to_ast`` (emit._ToAst), comment markers not yet turned into comments."""
    texts = []
    for function in functions:
        try:
            if function.__class__ is not gast.FunctionDef:
                raise _Astor
            lines = []
            _function(function, lines, to_ast)
            texts.append("\n".join(lines))
        except _Astor:
            texts.append(_with_astor(function, 0, to_ast).lstrip("\n"))
    return "\n\n\n".join(texts) + "\n"


def _with_astor(node, depth, to_ast):
    """astor's text of statement ``node`` at indentation ``depth``, its lines wrapped as
    astor wraps them (the text starts with the line break before the statement).

    ``split_lines`` wraps astor's list of written pieces, so the pieces must be astor's:
    ``_pieces`` writes them for the statements and expressions ``_statement`` prints (the
    conversion to ``ast`` and astor's visit were most of the time of a long line); what
    it does not write as astor would, astor writes."""
    if node.__class__ is not gast.FunctionDef:
        result = []
        try:
            _pieces(node, depth, result)
        except _Astor:
            result = None
        if result is not None:
            result.append("\n")
            return "".join(split_lines(result))[:-1]
    generator = SourceGenerator(" " * 4, False, pretty_string)
    generator.indentation = depth
    generator.visit(to_ast(node))
    generator.result.append("\n")
    return "".join(split_lines(generator.result))[:-1]


def _own_line_string(text, indent):
    """astor's ``pretty_string(text, 1, indent)`` for a string statement (a comment marker):
    on a line of its own astor writes it in triple quotes where ``eval`` gives it back.
    Printable ASCII without a backslash or a double quote is written as it is between
    them, which ``eval`` always gives back: no ``eval`` (most of printing a comment)."""
    if text.isascii() and text.isprintable() and "\\" not in text and '"' not in text:
        return '"""' + text + '"""'
    return pretty_string(text, 1, indent)


def _pieces(s, depth, out):
    """Append to ``out`` the pieces astor's ``SourceGenerator`` writes for statement ``s``
    at indentation ``depth`` (its ``result``: the line break and indentation first, an
    empty piece where it drops a parenthesis it wrote); ``_Astor`` where it may differ."""
    indent = "    " * depth
    out.append("\n")
    out.append(indent)
    cls = s.__class__
    if cls is gast.Assign:
        for t in s.targets:
            _expr_pieces(t, P_ASSIGN, out)
            out.append(" = ")
        _expr_pieces(s.value, P_ASSIGN, out)
    elif cls is gast.Expr:
        value = s.value
        if value.__class__ is gast.Constant and value.value.__class__ is str:
            if value.kind:
                raise _Astor
            text = _own_line_string(value.value, indent)
            if "\n" in text:
                raise _Astor
            out.append(text)
        else:
            _expr_pieces(value, P_EXPR, out, True)
    elif cls is gast.AugAssign:
        _expr_pieces(s.target, P_AUG, out)
        out.append(" " + _SYMBOL[s.op.__class__] + "= ")
        _expr_pieces(s.value, P_AUG, out)
    elif cls is gast.Return:
        out.append("return")
        if s.value is not None:
            out.append(" ")
            _expr_pieces(s.value, P_RETURN, out)
    elif cls is gast.If:
        out.append("if ")
        _expr_pieces(s.test, P_IF, out)
        out.append(":")
        _body_pieces(s.body, depth + 1, out)
        node = s
        while True:
            orelse = node.orelse
            if len(orelse) == 1 and orelse[0].__class__ is gast.If:
                node = orelse[0]
                out.extend(("\n", indent, "elif "))
                _expr_pieces(node.test, P_IF, out)
                out.append(":")
                _body_pieces(node.body, depth + 1, out)
            else:
                if orelse:
                    out.extend(("\n", indent, "else:"))
                    _body_pieces(orelse, depth + 1, out)
                break
    elif cls is gast.For or cls is gast.While:
        if cls is gast.For:
            out.append("for ")
            _expr_pieces(s.target, P_FOR, out)
            out.append(" in ")
            _expr_pieces(s.iter, HIGHEST, out)
        else:
            out.append("while ")
            _expr_pieces(s.test, P_WHILE, out)
        out.append(":")
        _body_pieces(s.body, depth + 1, out)
        if s.orelse:
            out.extend(("\n", indent, "else:"))
            _body_pieces(s.orelse, depth + 1, out)
    elif cls is gast.Pass:
        out.append("pass")
    elif cls is gast.Break:
        out.append("break")
    elif cls is gast.Continue:
        out.append("continue")
    elif cls is gast.Delete:
        out.append("del ")
        for k, t in enumerate(s.targets):
            if k:
                out.append(", ")
            _expr_pieces(t, COMMA, out)
    elif cls is gast.Assert:
        out.append("assert ")
        _expr_pieces(s.test, P_ASSERT, out)
        if s.msg is not None:
            out.append(", ")
            _expr_pieces(s.msg, P_ASSERT, out)
    else:
        raise _Astor


def _body_pieces(body, depth, out):
    for s in body:
        _pieces(s, depth, out)


def _expr_pieces(e, pp, out, first=False):
    """Append astor's pieces of expression ``e`` where its parent set precedence ``pp``
    (``_expr``'s cases; a parenthesis astor drops is an empty piece, as astor leaves it)."""
    cls = e.__class__
    if cls is gast.Name:
        out.append(e.id)
    elif cls is gast.Attribute:
        _expr_pieces(e.value, HIGHEST, out, first)
        out.append(".")
        out.append(e.attr)
    elif cls is gast.Call:
        args, keywords = e.args, e.keywords
        p = COMMA if len(args) + len(keywords) > 1 else ONE_ARG
        _expr_pieces(e.func, HIGHEST, out, first)
        out.append("(")
        comma = False
        for a in args:
            if comma:
                out.append(", ")
            comma = True
            _expr_pieces(a, p, out)
        for k in keywords:
            if comma:
                out.append(", ")
            comma = True
            if k.arg:
                out.append(k.arg)
                out.append("=")
            else:
                out.append("**")
            _expr_pieces(k.value, COMMA, out)
        out.append(")")
    elif cls is gast.BinOp:
        op = e.op.__class__
        p = _P[op]
        start = len(out)
        out.append("(")
        if op is gast.Pow:
            _expr_pieces(e.left, P_POW + 1, out, first and p >= pp)
            out.append(" ** ")
            _expr_pieces(e.right, P_POW_RHS, out)
        else:
            _expr_pieces(e.left, p, out, first and p >= pp)
            out.append(" " + _SYMBOL[op] + " ")
            _expr_pieces(e.right, p + 1, out)
        _close(out, start, p >= pp, ")")
    elif cls is gast.Constant:
        value = e.value
        vcls = value.__class__
        if vcls is float or vcls is int or vcls is bool or vcls is complex \
                or vcls is not str and isinstance(value, (int, float, complex)):
            out.append("(")
            out.append(_number(value))
            _close(out, len(out) - 2, P_CONSTANT >= pp, ")")
        elif isinstance(value, str):
            if vcls is not str or first or e.kind or "\n" in value \
                    or (pp > P_EXPR) + (pp >= P_ASSIGN) < 1:
                raise _Astor
            out.append(repr(value))
        elif value is Ellipsis:
            out.append("...")
        else:
            out.append(repr(value))
    elif cls is gast.UnaryOp:
        op = e.op.__class__
        p = _P[op]
        symbol = _SYMBOL[op]
        start = len(out)
        out.append("(")
        out.append(symbol)
        if symbol.isalpha():
            out.append(" ")
        _expr_pieces(e.operand, p, out)
        _close(out, start, p >= pp, ")")
    elif cls is gast.Subscript:
        _expr_pieces(e.value, HIGHEST, out, first)
        out.append("[")
        _expr_pieces(e.slice, P_SUBSCRIPT, out)
        out.append("]")
    elif cls is gast.Tuple:
        elts = e.elts
        start = len(out)
        out.append("(")
        discard = bool(elts) and P_TUPLE >= pp
        for k, x in enumerate(elts):
            if k:
                out.append(", ")
                _expr_pieces(x, COMMA, out)
            else:
                _expr_pieces(x, COMMA, out, first and discard)
        if len(elts) == 1:
            out.append(",")
        _close(out, start, discard, ")")
    elif cls is gast.Compare:
        p = _P[e.ops[0].__class__]
        start = len(out)
        out.append("(")
        _expr_pieces(e.left, p + 1, out, first and p >= pp)
        for op, right in zip(e.ops, e.comparators):
            out.append(" " + _SYMBOL[op.__class__] + " ")
            _expr_pieces(right, p + 1, out)
        _close(out, start, p >= pp, ")")
    elif cls is gast.Slice:
        if e.lower is not None:
            _expr_pieces(e.lower, P_SLICE, out)
        out.append(":")
        if e.upper is not None:
            _expr_pieces(e.upper, P_SLICE, out)
        step = e.step
        if step is not None:
            out.append(":")
            if not (step.__class__ is gast.Name and step.id == "None"):
                _expr_pieces(step, P_SLICE, out)
    elif cls is gast.List:
        out.append("[")
        for k, x in enumerate(e.elts):
            if k:
                out.append(", ")
            _expr_pieces(x, COMMA, out)
        out.append("]")
    elif cls is gast.BoolOp:
        p = _P[e.op.__class__]
        symbol = " " + _SYMBOL[e.op.__class__] + " "
        start = len(out)
        out.append("(")
        for k, v in enumerate(e.values):
            if k:
                out.append(symbol)
                _expr_pieces(v, p + 1, out)
            else:
                _expr_pieces(v, p + 1, out, first and p >= pp)
        _close(out, start, p >= pp, ")")
    elif cls is gast.IfExp:
        p = P_IFEXP
        start = len(out)
        out.append("(")
        _expr_pieces(e.body, p + 1, out, first and p >= pp)
        out.append(" if ")
        _expr_pieces(e.test, p + 1, out)
        out.append(" else ")
        _expr_pieces(e.orelse, p, out)
        _close(out, start, p >= pp, ")")
    elif cls is gast.Starred:
        out.append("*")
        _expr_pieces(e.value, HIGHEST, out)
    elif cls is gast.Dict:
        out.append("{")
        for k, (key, value) in enumerate(zip(e.keys, e.values)):
            if k:
                out.append(", ")
            if key is not None:
                _expr_pieces(key, HIGHEST, out)
                out.append(": ")
            else:
                out.append("**")
            _expr_pieces(value, COMMA, out)
        out.append("}")
    else:
        raise _Astor


def _close(out, start, discard, closing):
    """astor's ``Delimit`` leaving: the opening piece at ``start`` emptied (``discard``)
    or the closing one written."""
    if discard:
        out[start] = ""
    else:
        out.append(closing)


def _function(f, lines, to_ast):
    if f.decorator_list or f.returns is not None:
        raise _Astor
    header = f"def {f.name}({_arguments(f.args)}):"
    if len(header) > _LINE:
        raise _Astor
    lines.append(header)
    _body(f.body, 1, lines, to_ast)


def _arguments(a):
    parts = []

    def loop(args, defaults):
        padding = [None] * (len(args) - len(defaults))
        for arg, default in zip(args, padding + defaults):
            if arg.__class__ is not gast.Name or arg.annotation is not None:
                raise _Astor
            parts.append(arg.id if default is None else arg.id + "=" + _expr(default, COMMA))

    offset = 0
    if a.posonlyargs:
        offset = len(a.defaults) - len(a.args)
        loop(a.posonlyargs, a.defaults[:offset])
        parts.append("/")
    loop(a.args, a.defaults[offset:])
    for star, arg in (("*", a.vararg), ("**", a.kwarg)):
        if arg is not None and (arg.__class__ is not gast.Name or arg.annotation is not None):
            raise _Astor
    if a.vararg is not None:
        parts.append("*" + a.vararg.id)
    if a.kwonlyargs:
        if a.vararg is None:
            parts.append("*")
        loop(a.kwonlyargs, a.kw_defaults)
    if a.kwarg is not None:
        parts.append("**" + a.kwarg.id)
    return ", ".join(parts)


def _body(body, depth, lines, to_ast):
    indent = "    " * depth
    for s in body:
        try:
            _statement(s, depth, indent, lines, to_ast)
        except _Astor:
            lines.append(_with_astor(s, depth, to_ast)[1:])


def _line(lines, text):
    if len(text) > _LINE:
        raise _Astor
    lines.append(text)


def _statement(s, depth, indent, lines, to_ast):
    cls = s.__class__
    if cls is gast.Assign:
        text = " = ".join(_expr(t, P_ASSIGN) for t in s.targets)
        _line(lines, indent + text + " = " + _expr(s.value, P_ASSIGN))
    elif cls is gast.Expr:
        value = s.value
        if value.__class__ is gast.Constant and value.value.__class__ is str:
            if value.kind:
                raise _Astor
            text = _own_line_string(value.value, indent)   # astor's: on a line of its own
            if "\n" in text:
                raise _Astor
            lines.append(indent + text)   # (never wrapped: astor has nowhere to break it)
        else:
            _line(lines, indent + _expr(value, P_EXPR, True))
    elif cls is gast.AugAssign:
        _line(lines, indent + _expr(s.target, P_AUG) + " " + _SYMBOL[s.op.__class__] + "= "
              + _expr(s.value, P_AUG))
    elif cls is gast.Return:
        _line(lines, indent + ("return" if s.value is None else "return " + _expr(s.value, P_RETURN)))
    elif cls is gast.If:
        start = len(lines)
        _line(lines, indent + "if " + _expr(s.test, P_IF) + ":")
        try:
            _body(s.body, depth + 1, lines, to_ast)
            node = s
            while True:
                orelse = node.orelse
                if len(orelse) == 1 and orelse[0].__class__ is gast.If:
                    node = orelse[0]
                    _line(lines, indent + "elif " + _expr(node.test, P_IF) + ":")
                    _body(node.body, depth + 1, lines, to_ast)
                else:
                    if orelse:
                        lines.append(indent + "else:")
                        _body(orelse, depth + 1, lines, to_ast)
                    break
        except _Astor:   # a header astor wraps: the whole statement by astor
            del lines[start:]
            raise
    elif cls is gast.For:
        start = len(lines)
        _line(lines, indent + "for " + _expr(s.target, P_FOR) + " in " + _expr(s.iter, HIGHEST)
              + ":")
        _block_or_else(s, depth, indent, lines, to_ast, start)
    elif cls is gast.While:
        start = len(lines)
        _line(lines, indent + "while " + _expr(s.test, P_WHILE) + ":")
        _block_or_else(s, depth, indent, lines, to_ast, start)
    elif cls is gast.Pass:
        lines.append(indent + "pass")
    elif cls is gast.Break:
        lines.append(indent + "break")
    elif cls is gast.Continue:
        lines.append(indent + "continue")
    elif cls is gast.Delete:
        _line(lines, indent + "del " + ", ".join(_expr(t, COMMA) for t in s.targets))
    elif cls is gast.Assert:
        text = "assert " + _expr(s.test, P_ASSERT)
        if s.msg is not None:
            text += ", " + _expr(s.msg, P_ASSERT)
        _line(lines, indent + text)
    else:
        raise _Astor


def _block_or_else(s, depth, indent, lines, to_ast, start):
    try:
        _body(s.body, depth + 1, lines, to_ast)
        if s.orelse:
            lines.append(indent + "else:")
            _body(s.orelse, depth + 1, lines, to_ast)
    except _Astor:
        del lines[start:]
        raise


def _number(x):
    """astor's ``_handle_numeric_constant``."""
    def part(p, imaginary):
        s = "j" if imaginary else ""
        try:
            if math.isinf(p):
                return ("-1e1000" if p < 0 else "1e1000") + s
            if math.isnan(p):
                return "(1e1000%s-1e1000%s)" % (s, s)
        except OverflowError:
            pass
        return repr(p) + s

    real = part(x.real if isinstance(x, complex) else x, imaginary=False)
    if isinstance(x, complex):
        imag = part(x.imag, imaginary=True)
        if x.real == 0:
            return imag
        if x.imag == 0:
            return "(%s+0j)" % real
        return "(%s%s%s)" % (real, ["+", ""][imag.startswith("-")], imag)
    return real


def _paren(text, p, pp):
    return text if p >= pp else "(" + text + ")"


def _expr(e, pp, first=False):
    """``e``'s text where its parent set precedence ``pp``. ``first``: nothing precedes
    it on its line (a string there is astor's to print)."""
    cls = e.__class__
    if cls is gast.Name:
        return e.id
    if cls is gast.Attribute:
        return _expr(e.value, HIGHEST, first) + "." + e.attr
    if cls is gast.Call:
        args, keywords = e.args, e.keywords
        p = COMMA if len(args) + len(keywords) > 1 else ONE_ARG
        parts = [_expr(a, p) for a in args]
        for k in keywords:
            parts.append((k.arg + "=" if k.arg else "**") + _expr(k.value, COMMA))
        return _expr(e.func, HIGHEST, first) + "(" + ", ".join(parts) + ")"
    if cls is gast.BinOp:
        op = e.op.__class__
        p = _P[op]
        if op is gast.Pow:
            text = _expr(e.left, P_POW + 1, first and p >= pp) + " ** " + _expr(e.right, P_POW_RHS)
        else:
            text = _expr(e.left, p, first and p >= pp) + " " + _SYMBOL[op] + " " \
                + _expr(e.right, p + 1)
        return text if p >= pp else "(" + text + ")"
    if cls is gast.Constant:
        value = e.value
        vcls = value.__class__
        if vcls is float or vcls is int or vcls is bool or vcls is complex:
            return _paren(_number(value), P_CONSTANT, pp)
        if vcls is str:
            # astor: repr() unless on a line's start, with a line break or barely embedded
            if first or e.kind or "\n" in value or (pp > P_EXPR) + (pp >= P_ASSIGN) < 1:
                raise _Astor
            return repr(value)
        if value is Ellipsis:
            return "..."
        if isinstance(value, (int, float, complex)):   # a subclass: astor's numeric path
            return _paren(_number(value), P_CONSTANT, pp)
        if isinstance(value, str):
            raise _Astor
        return repr(value)
    if cls is gast.UnaryOp:
        op = e.op.__class__
        p = _P[op]
        symbol = _SYMBOL[op]
        text = symbol + (" " if symbol.isalpha() else "") + _expr(e.operand, p)
        return _paren(text, p, pp)
    if cls is gast.Subscript:
        return _expr(e.value, HIGHEST, first) + "[" + _expr(e.slice, P_SUBSCRIPT) + "]"
    if cls is gast.Tuple:
        elts = e.elts
        if not elts:
            return "()"
        parens = P_TUPLE < pp
        text = ", ".join([_expr(elts[0], COMMA, first and not parens)]
                         + [_expr(x, COMMA) for x in elts[1:]])
        if len(elts) == 1:
            text += ","
        return "(" + text + ")" if parens else text
    if cls is gast.Compare:
        p = _P[e.ops[0].__class__]
        text = _expr(e.left, p + 1, first and p >= pp)
        for op, right in zip(e.ops, e.comparators):
            text += " " + _SYMBOL[op.__class__] + " " + _expr(right, p + 1)
        return _paren(text, p, pp)
    if cls is gast.Slice:
        text = "" if e.lower is None else _expr(e.lower, P_SLICE)
        text += ":"
        if e.upper is not None:
            text += _expr(e.upper, P_SLICE)
        step = e.step
        if step is not None:
            text += ":"
            if not (step.__class__ is gast.Name and step.id == "None"):
                text += _expr(step, P_SLICE)
        return text
    if cls is gast.List:
        return "[" + ", ".join([_expr(x, COMMA) for x in e.elts]) + "]"
    if cls is gast.BoolOp:
        p = _P[e.op.__class__]
        symbol = " " + _SYMBOL[e.op.__class__] + " "
        values = e.values
        text = symbol.join([_expr(values[0], p + 1, first and p >= pp)]
                           + [_expr(v, p + 1) for v in values[1:]])
        return _paren(text, p, pp)
    if cls is gast.IfExp:
        p = P_IFEXP
        text = _expr(e.body, p + 1, first and p >= pp) + " if " + _expr(e.test, p + 1) \
            + " else " + _expr(e.orelse, p)
        return _paren(text, p, pp)
    if cls is gast.Starred:
        return "*" + _expr(e.value, HIGHEST)
    if cls is gast.Dict:
        parts = []
        for key, value in zip(e.keys, e.values):
            parts.append(_expr(key, HIGHEST) + ": " + _expr(value, COMMA) if key is not None
                         else "**" + _expr(value, COMMA))
        return "{" + ", ".join(parts) + "}"
    raise _Astor

