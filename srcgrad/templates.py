"""Quasi-quoting: build statements from code templates, and inline rule templates.

``replace("d = d + g", d="dx", g=node)`` parses the template and substitutes
names (a str becomes a Name, a node is copied in); Load/Store contexts follow
the position. A name standing alone as a statement (``BODY``) whose substitute is
a list of statements is replaced by those statements, not copied; a block left
empty becomes ``pass``. ``instantiate(rule, ...)`` inlines a rule's body (see the rule
contract in srcgrad/rules/__init__.py).
"""

import builtins
import inspect
import textwrap

import gast

from srcgrad.ast_util import name, reads
from srcgrad import ast_util, template_copies
from srcgrad.template_shapes import shape as _shape


def is_literal(value):
    """Whether ``value`` can be written into generated code as a constant."""
    if isinstance(value, tuple):
        return all(is_literal(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str, complex))


def clone(node):
    """A copy of a gast tree: new nodes, the same leaf values and annotation values.

    ``copy.deepcopy`` does the same in several times the time; templates are
    cloned for every rule application, which makes this the compiler's hot path
    (each node's ``__dict__`` is copied whole, the attributes and leaf values with it,
    and only its fields that may hold nodes or lists are looked at). A node
    without fields or attributes (a context, ``gast.Load()``; an operator) is shared,
    as in the trees CPython's parser makes: a third of a sweep's nodes, never edited.
    """
    if node.__class__ is list:
        return [clone(item) if isinstance(item, _AST) or item.__class__ is list else item
                for item in node]
    if not isinstance(node, _AST):
        return node
    cls = node.__class__
    state = node.__dict__
    if cls in _SHARED and not state:
        return node
    new = cls.__new__(cls)
    state = new.__dict__ = state.copy()
    for key in cls._fields:
        value = state.get(key)
        kind = value.__class__
        if kind is list:
            state[key] = [clone(item) if isinstance(item, _AST) or item.__class__ is list
                          else item for item in value]
        elif kind in _SHARED:   # a context or an operator: shared unless annotated
            if value.__dict__:
                state[key] = clone(value)
        elif isinstance(value, _AST):
            state[key] = clone(value)
    if "_srcgrad_anno" in state:
        state["_srcgrad_anno"] = dict(state["_srcgrad_anno"])
    return new


# Statements without blocks: ``pipeline._compose`` never edits one of these in place (its steps
# edit the blocks of compound statements, or replace a statement: unit_seed).
_SIMPLE = frozenset((gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return,
                     gast.Pass, gast.Break, gast.Continue, gast.Delete, gast.Assert))


def composing_copy(tree):
    """What ``pipeline._compose`` (for ``grad``'s composed gradient) may change of sweep ``tree``:
    a new FunctionDef whose statement lists are new lists, down every compound statement
    (each copied, its header shared), holding the sweep's own simple statements. The steps
    of ``pipeline._compose`` edit the statement lists (dead code, scalar items, releases,
    the printer's split releases) and the blocks of compound statements (the unwrapped
    ``if rt.has_grad``, dead code's ``pass``), and replace a statement they change otherwise
    (unit_seed; scalar_items copies a loop it rewrites); the sweeps are read again after
    (printed, composed again, the jit), so those parts are copied."""
    new = tree.__class__.__new__(tree.__class__)
    state = new.__dict__
    state.update(tree.__dict__)
    if "_srcgrad_anno" in state:
        state["_srcgrad_anno"] = dict(state["_srcgrad_anno"])
    state["body"] = [s if s.__class__ in _SIMPLE else _blocks_copy(s) for s in tree.body]
    return new


def _blocks_copy(node):
    """``node`` (a compound statement, or an except handler) copied with its statement
    lists, down every compound statement in them; its other parts and the simple
    statements are ``node``'s own."""
    cls = node.__class__
    new = cls.__new__(cls)
    state = new.__dict__ = node.__dict__.copy()
    for field in _BLOCK_LISTS:
        block = state.get(field)
        if block.__class__ is list:
            state[field] = [s if s.__class__ in _SIMPLE else _blocks_copy(s) for s in block]
    if "_srcgrad_anno" in state:
        state["_srcgrad_anno"] = dict(state["_srcgrad_anno"])
    return new


_BLOCK_LISTS = ("body", "orelse", "finalbody", "handlers")


_AST = gast.AST
_FIELD_SETS = {}   # node class -> its fields, as a set
# Node classes without fields (contexts, operators): ``clone`` shares their instances.
_SHARED = frozenset(c for c in vars(gast).values()
                    if isinstance(c, type) and issubclass(c, _AST) and not c._fields
                    and c.__name__ not in ("AST", "Pass", "Break", "Continue"))


def _new_like(node):
    """An empty node of ``node``'s class, its ``__dict__``, and the class's fields (a set)."""
    cls = node.__class__
    fields = _FIELD_SETS.get(cls)
    if fields is None:
        fields = _FIELD_SETS[cls] = frozenset(cls._fields)
    new = cls.__new__(cls)
    return new, new.__dict__, fields


class _Substitute(ast_util.NodeTransformer):
    def __init__(self, subs):
        self.subs = subs

    def visit_Name(self, node, subs=None):
        subs = self.subs if subs is None else subs
        if node.id not in subs:
            return node
        value = subs[node.id]
        if isinstance(value, str):
            return name(value, isinstance(node.ctx, gast.Store))
        new = clone(value)
        if isinstance(node.ctx, gast.Store):
            for child in ast_util.walk(new):
                if hasattr(child, "ctx"):
                    child.ctx = gast.Store()
        return new

    def visit_Expr(self, node):
        if isinstance(node.value, gast.Name) and isinstance(self.subs.get(node.value.id), list):
            return list(self.subs[node.value.id])
        return self.generic_visit(node)

    def _block(self, node):
        self.generic_visit(node)
        if not node.body:
            node.body = [gast.Pass()]
        return node

    visit_If = visit_For = visit_While = _block


_SUBSTITUTE_NAMES = _Substitute({})   # its visit_Name, given the substitutions


def _substituted(node, subs, renames=None):
    """``_Substitute(subs).visit(clone(node))`` in one pass: the copy is made with the
    names already substituted (templates are copied for every use; copying and then
    visiting the copy walked each twice). ``renames``: names whose copy only takes
    another ``id`` (``replace``'s placeholders; the node keeps its position)."""
    cls = node.__class__
    if cls is gast.Name:
        if renames is not None and node.id in renames:
            new = clone(node)
            new.id = renames[node.id]
            return new
        return _Substitute.visit_Name(_SUBSTITUTE_NAMES, node, subs) if node.id in subs \
            else clone(node)
    if cls is gast.Expr and node.value.__class__ is gast.Name \
            and isinstance(subs.get(node.value.id), list):
        return list(subs[node.value.id])
    if cls in _SHARED and not node.__dict__:
        return node   # a context or an operator, as ``clone`` shares them
    new, state, fields = _new_like(node)
    for key, value in node.__dict__.items():
        if key in fields:
            if value.__class__ is list:
                items = []
                for item in value:
                    if isinstance(item, _AST):
                        item = _substituted(item, subs, renames)
                        if item is None:
                            continue
                        if not isinstance(item, _AST):
                            items.extend(item)
                            continue
                    items.append(item)
                value = items
            elif value.__class__ in _SHARED and not value.__dict__:
                pass   # a context or an operator, shared (as below)
            elif isinstance(value, _AST):
                value = _substituted(value, subs, renames)
                if value is None:
                    continue
        elif key == "_srcgrad_anno":
            value = dict(value)
        state[key] = value
    if cls in _BLOCKS and not new.body:
        new.body = [gast.Pass()]
    return new


_BLOCKS = (gast.If, gast.For, gast.While)
_TEMPLATES = {}       # (template, the substitutions' keys) -> (parsed shape, its renames, its copies)
_PARSED_SHAPES = {}   # a template's shape (``_shape``) -> its statements, parsed
_SHAPE_COPIES = {}    # (shape, its substitutions', renames' keys) -> [its uses, its plan]


def replace(template, **subs):
    """Statements of ``template`` with names (and statement blocks) substituted.

    Most templates are f-strings naming the sweep's variables (``f"{dt} = {dt} + G"``):
    each is parsed once in the form ``_shape`` gives it, its variables' names as
    placeholders, and the copy takes the names back."""
    found = _TEMPLATES.get((template, tuple(subs)))
    if found is None:
        shaped, renames = _shape(template, subs)
        parsed = _PARSED_SHAPES.get(shaped)
        if parsed is None:
            parsed = _PARSED_SHAPES[shaped] = gast.parse(textwrap.dedent(shaped)).body
        copies = _SHAPE_COPIES.setdefault((shaped, tuple(subs), tuple(renames or ())), [0, None])
        found = _TEMPLATES[(template, tuple(subs))] = (parsed, renames or None, copies)
    parsed, renames, copies = found
    return _copied(parsed, subs, renames, copies)


def _copied(tree, subs, renames, copies):
    """``_substituted``'s copy of ``tree`` (a list of statements: each one's), from its
    plan once used more than ``template_copies.USES`` times (``copies``: [uses, plan])."""
    plan = copies[1]
    if plan is None:
        copies[0] += 1
        if copies[0] > template_copies.USES:
            plan = copies[1] = template_copies.plan(tree, subs, renames, _SHARED) or False
    if plan:
        return template_copies.copy(plan, subs, renames, _SUBSTITUTE_NAMES.visit_Name, _substituted)
    if tree.__class__ is list:
        return [_substituted(s, subs, renames) for s in tree]
    return _substituted(tree, subs, renames)


def replace_as_expression(template, **subs):
    return replace(template, **subs)[0].value


# ----- Rule templates -----

_PARSED = {}


class NotATemplate(Exception):
    """The rule's body cannot be inlined; it is called at run time instead."""


def _parse_rule(function):
    if function in _PARSED:
        return _PARSED[function]
    try:
        source = textwrap.dedent(inspect.getsource(function))
        node = gast.parse(source).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        _PARSED[function] = None
        return None
    body = [s for s in node.body if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant))]
    ok = bool(body) and isinstance(body[-1], gast.Return) and all(
        isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
        for s in body[:-1])
    params = {a.id for a in node.args.args + node.args.kwonlyargs}
    if node.args.vararg:
        params.add(node.args.vararg.id)
    if node.args.kwarg:
        ok = False
    local = {s.targets[0].id for s in body[:-1]} if ok else set()
    if local & params:
        ok = False  # rebinding a parameter: inlined, the parameter would be read unbound
    if ok:
        for child in ast_util.walk(gast.Module(body=body, type_ignores=[])):
            if isinstance(child, gast.Name) and isinstance(child.ctx, gast.Load):
                if child.id not in params | local | {"xp", "rt"} and not hasattr(builtins, child.id):
                    ok = False
            if isinstance(child, (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.IfExp,
                                  gast.DictComp, gast.SetComp, gast.NamedExpr)):
                ok = False
    _PARSED[function] = (body, local) if ok else None
    return _PARSED[function]


def is_template(rule):
    return _parse_rule(rule.function) is not None


def array_parameters(rule):
    """Names of the parameters a built-in template rule differentiates as arrays:
    those with a gradient entry, less var-positional ones and the rule's sequences."""
    parsed = _parse_rule(rule.function) if rule.builtin else None
    if parsed is None:
        return frozenset()
    result = parsed[0][-1].value
    entries = result.elts if isinstance(result, gast.Tuple) else [result]
    return frozenset(
        p.name for p, g in zip(rule.params, entries)
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        and not (isinstance(g, gast.Constant) and g.value is None) and p.name not in rule.sequences)


_FOLDABLE = {gast.Add: lambda a, b: a + b, gast.Sub: lambda a, b: a - b,
             gast.Mult: lambda a, b: a * b}


def _number(node):
    return isinstance(node, gast.Constant) and type(node.value) in (int, float)


def _operand(node):
    return node.args[0]


def _first(count):
    def shortened(node):
        node.args = node.args[:count]
        return node
    return shortened


def _where_size(node):
    """``rt.where_size(a, axis, True)`` is ``rt.reduction_size(a, axis, 1)``."""
    node.args[2] = gast.Constant(value=1, kind=None)
    node.func.attr = "reduction_size"
    return node


def _plain_diff(node):
    """``rt.diff_zero_ends(g, n, axis, None, None)`` is ``xp.diff(g, n=n, axis=axis)``."""
    g, n, axis = node.args[:3]
    return gast.Call(func=gast.Attribute(value=name("xp"), attr="diff", ctx=gast.Load()),
                     args=[g], keywords=[gast.keyword(arg="n", value=n),
                                         gast.keyword(arg="axis", value=axis)])


# A rule's helper call with a keyword of its primitive left at the default, written as the
# call it then is: (positions of the arguments, their default, the rewrite).
# ``dtype_grad(g, None, x)`` is ``g``; ``tie_share(m, axis, a, None, y, keepdims)`` is
# ``tie_share(m, axis, a)``; ``where_size(a, axis, True)`` is ``reduction_size(a, axis, 1)``.
_AT_DEFAULT = {
    "dtype_grad": ((1,), None, _operand),
    "reduction_cast": ((1,), None, _operand),
    "where_mask": ((1,), True, _operand),
    "take_indices": ((3,), "raise", _operand),
    "tie_share": ((3,), None, _first(3)),
    "diff_vjp": ((4, 5), None, _first(4)),
    "where_size": ((2,), True, _where_size),
    "diff_zero_ends": ((3, 4), None, _plain_diff),
    "index_order": ((1,), "C", lambda node: node.args[1]),
}


def _is_literal(node, value):
    return node.__class__ is gast.Constant and type(node.value) is type(value) \
        and node.value == value


class _FoldConstants(ast_util.NodeTransformer):
    """Arithmetic on literal numbers a rule's parameters became, done once at compile time:
    ``x ** (2 - 1)`` in the power rule for ``x ** 2`` is written ``x``; helpers at their
    defaults (``_AT_DEFAULT``) too."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        fold = _FOLDABLE.get(type(node.op))
        if fold is not None and _number(node.left) and _number(node.right):
            return gast.Constant(value=fold(node.left.value, node.right.value), kind=None)
        if isinstance(node.op, gast.BitAnd) and (_is_false(node.left) or _is_false(node.right)):
            # ``(2 == 0) & (x == 0)``, the mask of the power rule for ``x ** 2``, is never set
            folded = gast.Constant(value=0, kind=None)
            folded.never_set = True
            return folded
        # ``e ** 1`` inside a larger product is ``e``: the outer operation still
        # makes a new array, so nothing is aliased; so is ``e + mask`` where the mask
        # is never set (the power rule's base).
        node.left, node.right = _unit_power(node.left), _unit_power(node.right)
        return node

    def visit_Call(self, node):
        """A helper given its primitive's default (``_AT_DEFAULT``) is the call it then is:
        the generated code of a call without the keyword is what it was before it."""
        self.generic_visit(node)
        func = node.func
        found = _AT_DEFAULT.get(func.attr) if func.__class__ is gast.Attribute else None
        if found is not None and ast_util.is_rt_call(node, func.attr):
            positions, default, rewrite = found
            if all(len(node.args) > k and _is_literal(node.args[k], default) for k in positions):
                return rewrite(node)
        if func.__class__ is gast.Attribute and func.attr == "power" and len(node.args) == 2 \
                and not node.keywords and ast_util.is_rt_call(node, "power"):
            node.args[0] = _unit_power(node.args[0])   # the power rule's base, mask never set
            if _number(node.args[1]) and node.args[1].value >= 0:
                # ``rt.power(x, 1)`` in the rule for ``x ** 2``: 0.0 to a power of at least 0
                # raises no ZeroDivisionError, so it is ``x ** 1`` (then ``x``), as before
                return gast.BinOp(left=node.args[0], op=gast.Pow(), right=node.args[1])
        return node

    def visit_Compare(self, node):
        """``(2 == 0)`` in the power rule for ``x ** 2`` is written ``0``."""
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], gast.Eq) and _number(node.left) \
                and _number(node.comparators[0]):
            return gast.Constant(value=int(node.left.value == node.comparators[0].value), kind=None)
        return node


def _unit_power(node):
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Pow) and _number(node.right) \
            and node.right.value == 1 and type(node.right.value) is int:
        return _unit_power(node.left)
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add) \
            and getattr(node.right, "never_set", False):
        return node.left
    return node


def _is_false(node):
    """A literal 0 that a folded comparison (``2 == 0``) left."""
    return isinstance(node, gast.Constant) and type(node.value) is int and node.value == 0


# ----- Prepared instances of rule templates -----
#
# A rule's body is substituted and folded (``_FoldConstants``) the same way for every
# call whose arguments have the same shape: what folding sees of an argument is whether
# it is a literal number (and which), and nothing of a name's spelling. So the first call
# of a shape substitutes placeholders for the arguments, folds, and keeps the result;
# each later call copies that tree with the arguments and the locals' fresh names put in
# (one ``_substituted`` pass, as before, without the fold's second walk).

_PREPARED = {}   # (rule function, fixed names, argument shapes) -> _Prepared
_PREPARED_LIMIT = 4096   # entries kept (a literal's value is part of the key); then cleared
_ARGUMENT = "_srcgrad_argument"   # marks a literal argument's copy while preparing
_NAME_SHAPE = "name"      # an argument folding sees as a name: a placeholder stands for it
_FOLDED_CLASSES = (gast.BinOp, gast.Call, gast.Compare)


def _argument_shape(node):
    """What ``_FoldConstants`` can see of an argument: ``_NAME_SHAPE`` for one it reads as
    an opaque operand (a name, or an expression with nothing foldable inside), a literal's
    type and spelling for a constant; None where it could look inside (a call, an
    arithmetic expression): such a call is instantiated as before."""
    cls = node.__class__
    if cls is gast.Name:
        return None if node.id == "rt" else _NAME_SHAPE
    if cls is gast.Constant:
        value = node.value
        return (type(value), repr(value), node.kind, "never_set" in node.__dict__)
    for child in ast_util.walk(node):
        if isinstance(child, _FOLDED_CLASSES) or "never_set" in child.__dict__ \
                or (child.__class__ is gast.Name and child.id == "rt"):
            return None
    return _NAME_SHAPE


class _Prepared:
    """A rule's body substituted and folded for one argument shape: ``stmts`` and ``grads``
    (one per gradient entry, None where it folded to None) with placeholders for the
    arguments (``params``: placeholder -> parameter) and the locals (``locals``:
    (local, placeholder), in the order their fresh names are asked for); ``kept``: the
    statements each set of wanted gradients reads."""

    __slots__ = ("stmts", "grads", "params", "locals", "kept", "copies")


def _prepare(body, local, args, fixed):
    """The ``_Prepared`` instance of a rule's body for the shape of ``args``."""
    subs = dict(fixed)
    params = {}
    for k, (param, node) in enumerate(args.items()):
        placeholder = f"\0arg{k}"
        if node.__class__ is gast.Constant:
            marked = clone(node)   # folded with its value; where it is left, a placeholder
            setattr(marked, _ARGUMENT, placeholder)
            subs[param] = marked
        else:
            subs[param] = placeholder
        params[placeholder] = param
    locals_ = tuple((loc, f"\0local{k}") for k, loc in enumerate(sorted(local)))
    subs.update(locals_)
    folder = _FoldConstants()
    prepared = _Prepared()
    prepared.stmts = [_unmark(folder.visit(_substituted(s, subs))) for s in body[:-1]]
    result = body[-1].value
    entries = result.elts if isinstance(result, gast.Tuple) else [result]
    grads = []
    for g in entries:
        g = folder.visit(_substituted(g, subs))
        grads.append(None if isinstance(g, gast.Constant) and g.value is None else _unmark(g))
    prepared.grads = grads
    prepared.params = params
    prepared.locals = locals_
    prepared.kept = {}   # the wanted positions (a frozenset, or None) -> ``_kept``'s answer
    prepared.copies = {}   # id(a tree of it) -> [its uses, its plan] (``_copied``)
    return prepared


def _unmark(node):
    """``node`` with each literal argument's marked copy that folding left replaced by its
    placeholder (a ``Name``), so each use puts its own argument's copy there."""
    placeholder = node.__dict__.get(_ARGUMENT)
    if placeholder is not None:
        return name(placeholder)
    fields = _FIELD_SETS.get(node.__class__)
    if fields is None:
        fields = _FIELD_SETS[node.__class__] = frozenset(node.__class__._fields)
    state = node.__dict__
    for key in fields:
        value = state.get(key)
        if value.__class__ is list:
            state[key] = [_unmark(item) if isinstance(item, _AST) else item for item in value]
        elif isinstance(value, _AST) and value.__class__ not in _SHARED:
            state[key] = _unmark(value)
    return node


def instantiate(rule, args, namer, fixed, wanted=None):
    """Inline ``rule`` for one call.

    Args:
        rule: a Rule.
        args: dict parameter name -> gast expression, for ``dy``, ``y`` and every
            parameter of the primitive (defaults already filled in).
        namer: a Namer for the template's own locals.
        fixed: dict of fixed generated names, e.g. {"xp": "xp", "rt": "rt"}.
        wanted: the positions (in ``rule.params``) whose gradients the caller uses, or
            None for all; the others are None, not copied (a constant operand's).

    Returns:
        (statements, gradients): the statements computing the shared subexpressions
        that the wanted gradients read (the others are left out), and one expression
        (or None) per parameter after ``(dy, y)``.

    Raises:
        NotATemplate: the rule cannot be inlined.
    """
    parsed = _parse_rule(rule.function)
    if parsed is None:
        raise NotATemplate(rule.name)
    body, local = parsed
    n_params = len(rule.params)
    shapes = []
    for node in args.values():
        shape = _argument_shape(node)
        if shape is None:
            break
        shapes.append(shape)
    else:
        key = (rule.function, tuple(fixed.items()), tuple(args), tuple(shapes))
        prepared = _PREPARED.get(key)
        if prepared is None:
            if len(_PREPARED) >= _PREPARED_LIMIT:
                _PREPARED.clear()
            prepared = _PREPARED[key] = _prepare(body, local, args, fixed)
        return _from_prepared(prepared, args, namer, n_params, wanted)
    return _instantiated(body, local, args, namer, fixed, n_params, wanted)


def _instantiated(body, local, args, namer, fixed, n_params, wanted):
    """``instantiate``'s answer made for this call alone: the rule's body substituted and
    folded (an argument folding could look inside; the prepared instances are checked
    against it in tests/test_compile_speed.py)."""
    subs = dict(fixed)
    subs.update(args)
    for loc in sorted(local):
        subs[loc] = namer.new(loc)
    folder = _FoldConstants()
    stmts = [folder.visit(_substituted(s, subs)) for s in body[:-1]]
    result = body[-1].value
    if isinstance(result, gast.Tuple):
        grads = [folder.visit(_substituted(g, subs)) if wanted is None or k in wanted else None
                 for k, g in enumerate(result.elts)]
    else:
        grads = [folder.visit(_substituted(result, subs)) if wanted is None or 0 in wanted else None]
    grads += [None] * (n_params - len(grads))
    grads = [None if isinstance(g, gast.Constant) and g.value is None else g for g in grads]
    return [stmts[k] for k in _kept(stmts, grads, n_params, wanted)], grads


def _kept(stmts, grads, n_params, wanted):
    """The positions of the statements ``grads`` (those wanted, of the first ``n_params``)
    read, directly or through other statements."""
    used = set()
    for k, g in enumerate(grads[:n_params]):
        if g is not None and (wanted is None or k in wanted):
            used |= reads(g)
    kept = []
    for k in range(len(stmts) - 1, -1, -1):
        st = stmts[k]
        if st.targets[0].id in used:
            kept.append(k)
            used |= reads(st.value)
    kept.reverse()
    return tuple(kept)


def _from_prepared(prepared, args, namer, n_params, wanted):
    """``instantiate``'s answer from a prepared instance: its trees copied with this call's
    arguments and fresh names for the locals (asked for in ``instantiate``'s order)."""
    renames = {placeholder: namer.new(loc) for loc, placeholder in prepared.locals}
    subs = {placeholder: args[param] for placeholder, param in prepared.params.items()}
    known = frozenset(wanted) if wanted is not None else None
    kept = prepared.kept.get(known)
    if kept is None:   # (the names it reads are placeholders: fresh names never meet them)
        kept = prepared.kept[known] = _kept(prepared.stmts, prepared.grads, n_params, wanted)
    copies = prepared.copies
    stmts = [_copied(prepared.stmts[k], subs, renames, _uses(copies, prepared.stmts[k]))
             for k in kept]
    grads = [None if g is None or (wanted is not None and k not in wanted)
             else _copied(g, subs, renames, _uses(copies, g)) for k, g in enumerate(prepared.grads)]
    grads += [None] * (n_params - len(grads))
    return stmts, grads


def _uses(copies, tree):
    found = copies.get(id(tree))
    if found is None:
        found = copies[id(tree)] = [0, None]
    return found
