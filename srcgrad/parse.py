"""Function -> gast FunctionDef plus EntityInfo (where it came from, what its names mean).

Every statement is annotated with its Origin (file, line, column and source text)
so later passes can name the user's line in comments and errors.
"""

import ast
import builtins
import importlib.machinery
import inspect
import linecache
import re
import textwrap
import types
from dataclasses import dataclass, field

import gast
from gast.ast3 import Ast3ToGAst
import numpy

from srcgrad import anno, ast_util, source_block
from srcgrad.entry import bound_of
from srcgrad.errors import SourceNotFoundError, SrcgradError, UnsupportedError, matrix_refusal


@dataclass(frozen=True)
class Origin:
    filename: str
    lineno: int
    col_offset: int
    source_line: str
    function: str = None   # the name of the function the line is in

    def error(self, cls, message, hint=None):
        return cls(message, self.filename, self.lineno, self.col_offset, self.source_line, hint)


MISSING = object()   # in EntityInfo.reads: the name was not defined


@dataclass(frozen=True)
class Item:
    """A step of a read path (EntityInfo.reads) that subscripts a list, tuple or dict held
    by a constant (``OPS["sin"]``, ``self.layers[1]``): guard.py checks ``base[key]``."""

    key: object

    def get(self, obj):
        """``obj[key]``. Raises TypeError for anything but a list, tuple or dict (an
        array's item is a new view each time: it cannot be compared by identity)."""
        if not isinstance(obj, (list, tuple, dict)):
            raise TypeError(f"{type(obj).__name__} is not a list, tuple or dict")
        return obj[self.key]


@dataclass(frozen=True)
class Length:
    """The read path step ``len(base)``: a loop unrolled over a constant list or tuple."""


@dataclass(frozen=True)
class Keys:
    """The read path step ``tuple(base)``: a loop unrolled over a constant dict's items,
    in their order."""


NO_KEY = object()   # constant_key: the subscript is not a literal


def constant_key(node):
    """The literal key of a subscript (``"sin"``, ``1``, ``-1``, ``(0, 1)``), else NO_KEY."""
    try:
        key = gast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return NO_KEY
    try:
        hash(key)
    except TypeError:
        return NO_KEY
    return key


def dotted(path):
    """``path`` as the user wrote it: ``self.layers[1]``."""
    out = str(path[0])
    for part in path[1:]:
        out += f"[{part.key!r}]" if isinstance(part, Item) else f".{part}"
    return out


@dataclass
class EntityInfo:
    """What srcgrad knows about a user function besides its tree."""

    fn: object
    name: str
    filename: str
    first_lineno: int
    indent: int
    source_lines: list = field(repr=False)
    globals: dict = field(repr=False)
    closure: dict = field(repr=False)
    extra: dict = field(default_factory=dict, repr=False)  # names srcgrad bound itself

    reads: dict = field(default_factory=dict, repr=False)  # dotted name -> what it denoted
    kind_reads: dict = field(default_factory=dict, repr=False)  # name -> value_kind_key of it

    def resolve(self, name):
        """The live object ``name`` denotes in the function's scope.

        Raises:
            NameError: the name is not defined in the closure, globals or builtins.
        """
        return self.resolve_path((name,))

    def resolve_path(self, parts):
        """The live object the dotted name ``parts`` (``("np", "sin")``) denotes.

        Every name resolved is recorded in ``reads`` (``MISSING`` for one that is not
        defined): what a compile decided from them (a primitive's rule, an inlined
        helper, a name bound into the generated code) holds only while they still
        denote the same objects (srcgrad/guard.py checks that before reusing it).

        Raises:
            NameError: the name is not defined in the closure, globals or builtins.
            AttributeError: an attribute along the path is missing.
        """
        name = parts[0]
        try:
            obj = self._lookup(name)
        except NameError:
            self.reads[(name,)] = MISSING
            raise
        if name not in self.extra:
            self.reads[(name,)] = obj
        path = tuple(parts)
        for i in range(1, len(path)):
            part = path[i]
            if isinstance(part, Item):   # raises TypeError for a non-container: not recorded
                try:
                    obj = part.get(obj)
                except LookupError:
                    self.reads[path[:i + 1]] = MISSING
                    raise AttributeError(f"{dotted(path[:i + 1])} raises KeyError or "
                                         f"IndexError") from None
                self.reads[path[:i + 1]] = obj
                continue
            try:
                obj = getattr(obj, part)
            except AttributeError:
                self.reads[path[:i + 1]] = MISSING
                raise
            self.reads[path[:i + 1]] = obj
        if isinstance(obj, numpy.ndarray) and type(obj) is not numpy.ndarray:
            self._refuse_matrix(path, obj)
        return obj

    def _refuse_matrix(self, path, obj):
        """A global, closure variable or attribute that is a ``numpy.matrix``: refused."""
        if isinstance(obj, numpy.matrix):
            raise matrix_refusal(f"{dotted(path)}, read by {self.name},", self.filename,
                                 self.first_lineno)

    def record(self, path, value):
        """Record that the read ``path`` gave ``value`` (one srcgrad made itself: an item
        of a container unrolled, its ``Length()`` or ``Keys()``)."""
        self.reads[tuple(path)] = value

    def peek(self, name):
        """The live object ``name`` denotes, for a fact that depends only on its kind.

        A plain number or array (``K = 2.0``, a global weight matrix) is recorded by
        its type and dtype (``kind_reads``), not its identity: the generated code reads
        the value itself when it runs, so rebinding it to another value of the same
        kind needs no new compile. Anything else is recorded as ``resolve`` does.
        """
        try:
            obj = self._lookup(name)
        except NameError:
            return self.resolve(name)   # records the name as missing, then raises
        if isinstance(obj, numpy.ndarray) and type(obj) is not numpy.ndarray:
            self._refuse_matrix((name,), obj)
        key = value_kind_key(obj)
        if key is None or name in self.extra:
            return self.resolve(name)
        self.kind_reads[name] = key
        return obj

    def lookup(self, name):
        """What ``name`` denotes now, without recording it (``resolve`` records it).

        Raises:
            NameError: the name is not defined.
        """
        return self._lookup(name)

    def _lookup(self, name):
        if name in self.extra:
            return self.extra[name]
        if name in self.closure:
            try:
                return self.closure[name].cell_contents
            except ValueError:   # an empty cell: a free variable not assigned yet
                raise NameError(name) from None
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise NameError(name)

    def origin(self, node):
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return None
        line = self.first_lineno + lineno - 1
        text = linecache.getline(self.filename, line) or (
            self.source_lines[lineno - 1] if lineno - 1 < len(self.source_lines) else "")
        return Origin(self.filename, line, getattr(node, "col_offset", 0) + self.indent,
                      text.rstrip("\n"), self.name)


_NO_SOURCE = {"<string>": "typed at `python -c`", "<stdin>": "typed at the interactive prompt "
              "or piped to python through stdin"}


# ``inspect.findsource``'s pattern of the line a code object's source starts at.
_DEF_LINE = re.compile(r'^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)')
_COMPILED_SUFFIXES = tuple(importlib.machinery.DEBUG_BYTECODE_SUFFIXES
                           + importlib.machinery.OPTIMIZED_BYTECODE_SUFFIXES
                           + importlib.machinery.EXTENSION_SUFFIXES)


def _sourcelines(code):
    """``inspect.getsourcelines(code)``. A file linecache holds without a time to check
    it against (a notebook cell, ``exec`` of a string given a name, srcgrad's generated
    code) is read from there directly, as inspect would read it: inspect first asks
    ``getmodule``, which scans every module in ``sys.modules`` twice for a file that
    does not exist (about 1% of a compile). The block is found by ``source_block``
    (``inspect.getblock`` without the tokenizer where it can)."""
    entry = linecache.cache.get(getattr(code, "co_filename", None))
    if code.__class__ is not types.CodeType or entry is None or len(entry) != 4 \
            or entry[1] is not None or not entry[2] or code.co_filename.endswith(_COMPILED_SUFFIXES):
        if code.__class__ is not types.CodeType:
            return inspect.getsourcelines(code)
        lines, lnum = inspect.findsource(code)   # (inspect.getsourcelines of a code object)
        return source_block.block(lines[lnum:]), lnum + 1
    lines = entry[2]
    lnum = code.co_firstlineno - 1
    while lnum > 0:
        if lnum >= len(lines):
            raise OSError('lineno is out of bounds')
        if _DEF_LINE.match(lines[lnum]):
            break
        lnum -= 1
    return source_block.block(lines[lnum:]), lnum + 1


def _source_of(fn):
    try:
        # of the code object: inspect would read the function a decorator wraps
        lines, first = _sourcelines(getattr(fn, "__code__", fn))
    except (OSError, TypeError) as exc:
        code = getattr(fn, "__code__", None)
        where = _NO_SOURCE.get(getattr(code, "co_filename", None))
        if where is not None:   # Python keeps no source of these: one line says what to do
            error = SourceNotFoundError(
                f"cannot read the source of {getattr(fn, '__qualname__', fn)}: it was {where}, "
                f"and Python keeps no source of that; put the function in a .py file (or a "
                f"notebook cell) and differentiate it there")
            error.filename, error.lineno = code.co_filename, code.co_firstlineno
            raise error from None
        raise SourceNotFoundError(
            f"cannot find the source of {getattr(fn, '__qualname__', fn)!r} ({exc})",
            getattr(getattr(fn, "__code__", None), "co_filename", None),
            getattr(getattr(fn, "__code__", None), "co_firstlineno", None),
            hint="srcgrad reads the function's source: define it in a .py file or a "
                 "notebook cell, or register a rule with @srcgrad.adjoint.") from None
    return lines, first


_GRAD_MODE = "_sg_grad_mode"


def _read_through(fn):
    """(the function whose source srcgrad reads for ``fn``, the grad-mode class it runs
    under or None). A decorator's wrapper is read itself, never the function it wraps
    (``functools.wraps`` sets ``__wrapped__``, but the wrapper may compute something
    else: ``2 * f(x)``), except wrappers that return what they wrap returns:
    ``functools.cache``/``lru_cache`` and srcgrad's own ``@sg.no_grad()`` /
    ``@sg.enable_grad()`` (the body then runs under that block)."""
    mode = None
    while True:
        made_by = getattr(fn, "__srcgrad_derivative__", None)
        if made_by is not None:
            _refuse_derivative(fn, made_by)
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is None:
            return fn, mode
        grad_mode_flag = getattr(fn, "__srcgrad_grad_mode__", None)
        if grad_mode_flag is not None:
            from srcgrad import grad_mode
            mode = mode or (grad_mode.enable_grad if grad_mode_flag else grad_mode.no_grad)
        elif inspect.isfunction(fn) or not hasattr(fn, "cache_info"):
            return fn, mode   # a wrapper of the user's: its own code is differentiated
        fn = wrapped


def _refuse_derivative(fn, made_by):
    """A function ``sg.jacfwd``/``jacrev``/``hessian`` made runs programs and assembles
    their columns: it has no source to differentiate (its ``__wrapped__`` is the function
    it differentiates, which is not what it computes)."""
    inner = inspect.unwrap(fn)
    composed_from = getattr(inner, "_srcgrad_composed_from", None)   # sg.grad(f)'s code
    inner = composed_from.fn if composed_from is not None else inner
    code = getattr(inner, "__code__", None)
    first = made_by in ("sg.jacfwd", "sg.jacrev")
    raise UnsupportedError(
        f"the function {made_by}({getattr(inner, '__qualname__', inner)}){')' * made_by.count('(')} "
        f"returns is not source srcgrad can differentiate again (it assembles the derivative "
        f"from runs of generated programs)", getattr(code, "co_filename", None),
        getattr(code, "co_firstlineno", None),
        hint=("A Jacobian of it is the second derivative: sg.jacfwd(sg.jacrev(f)) and the other "
              "three spellings work, as does sg.hessian(f) of any output. " if first else
              "It is a second derivative; a third comes from code: sg.jacfwd(sg.jacrev("
              "sg.grad(f))) or sg.hessian(sg.grad(f)) of a scalar f. ") +
             "Else differentiate the gradient, which is code srcgrad reads again: "
             "sg.grad(sg.grad(f)) and sg.hvp(sg.grad(f), ...) go to any order.")


class _ToGast(Ast3ToGAst):
    """``gast.ast_to_gast``, the same tree, without its per-node ``NodeTransformer``
    dispatch and ``hasattr``/``getattr`` pairs (half of parsing a function): only the
    nodes gast converts specially (``Name``, ``arg``, ``FunctionDef``, ...) take gast's own
    methods; the others are made as gast's ``generic_visit`` makes them (every field the
    node has, then its location attributes)."""

    _classes = {}   # ast class -> (the gast class or None, gast's own method or None)
    _AST = ast.AST

    def visit(self, node):
        cls = node.__class__
        found = self._classes.get(cls)
        if found is None:
            method = getattr(_ToGast, "visit_" + cls.__name__, None)
            if method is getattr(ast.NodeVisitor, "visit_" + cls.__name__, None):
                method = None   # NodeVisitor.visit_Constant: the plain conversion
            found = self._classes[cls] = (getattr(gast, cls.__name__, None), method)
        target, method = found
        if method is not None:
            return method(self, node)
        if target is None:
            return None   # not a node of gast (gast's generic_visit drops it too)
        return self._convert(node, target)

    def _visit(self, node):
        if isinstance(node, self._AST):
            return self.visit(node)
        if node.__class__ is list:
            return [self._visit(n) for n in node]
        return node

    def generic_visit(self, node):
        target = getattr(gast, node.__class__.__name__, None)
        return None if target is None else self._convert(node, target)

    def _convert(self, node, target):
        state = node.__dict__
        new = target.__new__(target)   # gast's constructor with keywords: __dict__.update
        new_state = new.__dict__
        visit, AST = self.visit, self._AST
        for field in node._fields:
            if field in state:
                value = state[field]
            elif hasattr(node, field):
                value = getattr(node, field)
            else:
                continue
            if value.__class__ is list:
                value = [visit(v) if isinstance(v, AST) else self._visit(v) for v in value]
            elif isinstance(value, AST):
                value = visit(value)
            new_state[field] = value
        for attr in node._attributes:
            if attr in state:
                new_state[attr] = state[attr]
            elif hasattr(node, attr):
                setattr(new, attr, getattr(node, attr))
        return new

    def visit_Name(self, node):
        """gast's ``visit_Name`` (a Name with no annotation, then ``ast.copy_location``)."""
        state = node.__dict__
        new = _NAME.__new__(_NAME)
        new_state = new.__dict__
        new_state["id"] = node.id
        new_state["ctx"] = self.visit(node.ctx)
        new_state["annotation"] = None
        new_state["type_comment"] = None
        for attr in _LOCATION:
            if attr in state:
                value = state[attr]
            else:
                value = getattr(node, attr, None)
            if value is not None or attr.startswith("end_") and hasattr(node, attr):
                new_state[attr] = value
        return new


_NAME = gast.Name
_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _gast_parse(source):
    """``gast.parse(source)``: the same tree, converted by ``_ToGast``."""
    return _ToGast().visit(source_block.parsed(source))


def parse_function(fn):
    """Parse ``fn`` into a gast FunctionDef annotated with origins.

    Returns:
        (node, EntityInfo)

    Raises:
        SourceNotFoundError: no source can be found for ``fn``.
    """
    parse_it = getattr(fn, "__srcgrad_parse__", None)
    if parse_it is not None:   # a function srcgrad rewrote (function_derivatives.py, composed_entry.py)
        return parse_it()
    return parse_source(fn)


def parse_source(fn):
    """``parse_function`` of ``fn``'s own source (no ``__srcgrad_parse__``)."""
    fn, mode = _read_through(fn)
    if not inspect.isfunction(fn):
        raise TypeError(f"srcgrad differentiates Python functions, got {fn!r}")
    bound = bound_of(fn)
    # A bound method or partial (entry.py): the target's source, its bound
    # parameters read from the wrapper's closure cells.
    source_fn = fn if bound is None else _read_through(bound.target)[0]
    lines, first = _source_of(source_fn)
    raw = "".join(lines)
    dedented = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    code = source_fn.__code__
    closure = dict(zip(code.co_freevars, source_fn.__closure__ or ()))
    if bound is not None:
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__))
        closure.update((name, cells[name]) for name in bound.names)
    info = EntityInfo(fn, source_fn.__name__, code.co_filename, first, indent,
                      dedented.splitlines(), source_fn.__globals__, closure)
    fn = source_fn
    if fn.__name__ == "<lambda>":
        node = _parse_lambda(fn, dedented, info)
    else:
        try:
            module = _gast_parse(dedented)
        except SyntaxError as exc:
            raise SrcgradError(f"cannot parse the source of {fn.__qualname__}: {exc.msg}",
                               code.co_filename, first) from None
        node = module.body[0]
        if not isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
            raise SourceNotFoundError(f"the source found for {fn.__qualname__} is not a def",
                                      code.co_filename, first)
        node.decorator_list = []
    if mode is not None:   # @sg.no_grad() / @sg.enable_grad(): the body under that block
        info.extra[_GRAD_MODE] = mode
        node.body = [gast.With(items=[gast.withitem(
            context_expr=gast.Call(func=gast.Name(id=_GRAD_MODE, ctx=gast.Load(), annotation=None,
                                                  type_comment=None), args=[], keywords=[]),
            optional_vars=None)], body=node.body, type_comment=None)]
        gast.copy_location(node.body[0], node.body[0].body[0])
    decorated = getattr(fn, "__srcgrad_decorated__", None)
    if decorated is not None:   # entry.py's function calling a decorator's wrapper
        info = _at_the_decorated_function(node, info, decorated)
    _annotate_origins(node, info)
    if bound is not None:
        _bind_parameters(node, info, bound)
    return node, info


def _at_the_decorated_function(node, info, wrapper):
    """``info`` placed at the user's decorated function (the first line of its source):
    what is said of the function entry.py wrote for a decorator's wrapper (that a
    parameter holds a structure) is said there, not in srcgrad's file."""
    try:
        lines, first = _source_of(inspect.unwrap(wrapper))
    except SrcgradError:
        return info
    code = inspect.unwrap(wrapper).__code__
    for child in gast.walk(node):
        if hasattr(child, "lineno"):
            child.lineno, child.col_offset = 1, 0
    return EntityInfo(info.fn, info.name, code.co_filename, first, 0,
                      [line.rstrip("\n") for line in lines], info.globals, info.closure)


def _bind_parameters(node, info, bound):
    """The def's parameters become those of the wrapper ``info.fn``: the bound ones
    are free names (its closure cells), the others as its signature orders them."""
    args = node.args
    by_name = {a.id: a for a in args.posonlyargs + args.args + args.kwonlyargs}
    for name in bound.names:
        for child in ast_util.walk(node):
            if isinstance(child, gast.Name) and child.id == name \
                    and isinstance(child.ctx, (gast.Store, gast.Del)):
                origin = info.origin(child) or info.origin(node)
                raise origin.error(
                    SrcgradError, f"{info.fn.__qualname__} assigns to {name!r}, which is bound to "
                    f"a constant ({type(info.closure[name].cell_contents).__name__} object) when "
                    f"it is differentiated as a bound method or partial",
                    hint=f"Assign to a new name instead of {name!r}.")
    posonly, positional, keyword_only = [], [], []
    for p in inspect.signature(info.fn).parameters.values():
        param = by_name.get(p.name) or gast.copy_location(gast.Name(   # an item of *args
            id=p.name, ctx=gast.Param(), annotation=None, type_comment=None), node)
        if p.kind is p.POSITIONAL_ONLY:
            posonly.append(param)
        elif p.kind is p.POSITIONAL_OR_KEYWORD:
            positional.append(param)
        elif p.kind is p.KEYWORD_ONLY:
            keyword_only.append(param)
    args.posonlyargs, args.args, args.kwonlyargs = posonly, positional, keyword_only
    if bound.packed:   # ``batch = (batch_0, batch_1)``, ``options = {'scale': scale}``, at the def
        args.vararg = args.kwarg = None
        node.body[_docstring_count(node):0] = [_packing(node, name, items, keys)
                                               for name, items, keys in bound.packed]
    # The defaults are the wrapper's (the forward sweep takes them over).
    args.defaults, args.kw_defaults = [], [None] * len(keyword_only)


def _docstring_count(node):
    first = node.body[0] if node.body else None
    return int(isinstance(first, gast.Expr) and isinstance(first.value, gast.Constant)
               and isinstance(first.value.value, str))


def _packing(node, name, items, keys):
    """``name = (items...)``, or ``name = {'key': key, ...}`` (``keys``), at ``node``'s line."""
    def load(n):
        return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)
    value = gast.Dict(keys=[gast.Constant(value=k, kind=None) for k in items],
                      values=[load(k) for k in items]) if keys else \
        gast.Tuple(elts=[load(k) for k in items], ctx=gast.Load())
    assign = gast.Assign(targets=[gast.Name(id=name, ctx=gast.Store(), annotation=None,
                                            type_comment=None)], value=value, type_comment=None)
    for child in gast.walk(assign):
        gast.copy_location(child, node)
    return assign


def _parse_lambda(fn, source, info):
    """A lambda's source is the line(s) around it: find the one lambda with these parameters."""
    code = fn.__code__
    try:
        module = gast.parse(source)
    except SyntaxError:
        try:
            module = gast.parse("(" + source.strip().rstrip(",") + ")")
        except SyntaxError:
            module = _lambda_by_positions(code, *_source_of(fn))
            if module is None:
                raise SourceNotFoundError(
                    "cannot isolate the source of this lambda", code.co_filename,
                    code.co_firstlineno, hint="Define the function with def.") from None
    params = list(code.co_varnames[: code.co_argcount])
    found = [n for n in ast_util.walk(module) if isinstance(n, gast.Lambda)
             and [a.id for a in n.args.args] == params]
    if len(found) != 1:
        raise SourceNotFoundError(
            "cannot tell which lambda on this line to differentiate", code.co_filename,
            code.co_firstlineno, hint="Define the function with def.")
    lam = found[0]
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam.body)
    node = gast.FunctionDef(name="lambda_fn", args=lam.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    gast.copy_location(node, lam)
    return node


def _lambda_by_positions(code, lines, first):
    """The lambda cut out of its source ``lines`` (as read, the first at line ``first``)
    by the columns Python records for its body (``co_positions``): from a ``lambda``
    keyword on its first line to the body's end, for a lambda inside a call or display
    that spans lines."""
    lines = [line.encode() for line in lines]
    ends = [(end, end_col) for _, end, _, end_col in code.co_positions()
            if end is not None and end_col is not None]
    if not lines or not ends:
        return None
    end, end_col = max(ends)
    end -= first   # an index into lines
    if not 0 <= end < len(lines):
        return None
    params = list(code.co_varnames[: code.co_argcount])
    start = lines[0].find(b"lambda")
    while start >= 0:
        text = lines[0][start:] if end else lines[0][start:end_col]
        if end:
            text += b"".join(lines[1:end]) + lines[end][:end_col]
        try:
            module = gast.parse("(" + text.decode() + ")")
        except (SyntaxError, UnicodeDecodeError):
            module = None
        if module is not None:
            found = [n for n in ast_util.walk(module) if isinstance(n, gast.Lambda)]
            if found and [a.id for a in found[0].args.args] == params:
                shift = start - 1 - (len(lines[0]) - len(lines[0].lstrip()))
                for node in ast_util.walk(module):   # columns as in the dedented source
                    if getattr(node, "lineno", None) == 1:
                        node.col_offset += shift
                        if getattr(node, "end_lineno", None) == 1:
                            node.end_col_offset += shift
                return module
        start = lines[0].find(b"lambda", start + 1)
    return None


def _annotate_origins(node, info):
    """Each statement's Origin (its file, line and text), for the messages and comments."""
    todo = [node]
    for stmt in todo:   # (statements hold statements only in these fields: no expression does)
        origin = info.origin(stmt)
        if origin is not None:
            anno.setanno(stmt, anno.Static.ORIGIN, origin)
        state = stmt.__dict__
        for part in ("body", "orelse", "finalbody"):
            inner = state.get(part)
            if inner.__class__ is list:
                todo.extend(inner)
        for holders in (state.get("handlers"), state.get("cases")):
            for holder in holders or ():
                todo.extend(holder.body)


_PLAIN_VALUES = (bool, int, float, complex, numpy.number, numpy.bool_, numpy.ndarray)


def value_kind_key(obj):
    """(type, dtype) of a plain number or NumPy array, else None (guard.py compares it)."""
    if isinstance(obj, _PLAIN_VALUES):
        return type(obj), getattr(obj, "dtype", None)
    return None
