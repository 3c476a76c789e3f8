"""Small AST idioms shared by the passes: names, statement walking, accumulation matching.

* Name sets: ``loads``, ``stores`` and ``refs`` of a node (``NameSets`` memoizes them
  for passes that ask about one statement many times); ``reads``, the names in a
  ``Load`` context only (a parameter or a ``del`` is not a read).
* Walking: ``blocks`` (every statement list, nested ones included),
  ``walk_statements`` (every statement in source order), ``child_blocks`` (a
  compound statement's ``body`` and ``orelse``), ``rewrite_blocks`` (replace them),
  ``own_parts`` (what a statement evaluates itself, not its blocks).
* Matching: ``assigned_name`` (``x = ...``), ``is_zero`` (``0.0``),
  ``accumulation`` / ``is_accumulation`` (``d = d + E`` with ``E`` not reading
  ``d``), ``is_rt_call`` (``rt.<helper>(...)``).
"""

import os

import gast


def name(id_, store=False):
    """A ``gast.Name`` that loads (or stores) ``id_``: what ``gast.Name(id=id_, ctx=gast.Load(),
    annotation=None, type_comment=None)`` makes (the same ``__dict__``), without gast's
    generic constructor, twice per name (the compile's most common node)."""
    new = _NAME_CLASS.__new__(_NAME_CLASS)
    ctx = _STORE_CLASS if store else _LOAD_CLASS
    new.__dict__.update(id=id_, ctx=ctx.__new__(ctx), annotation=None, type_comment=None)
    return new


_NAME_CLASS, _LOAD_CLASS, _STORE_CLASS = gast.Name, gast.Load, gast.Store


# ----- Name sets -----

_BLOCKS = (gast.If, gast.For, gast.While)


def own_parts(s):
    """What statement ``s`` evaluates itself: a compound statement's header, not its blocks."""
    if isinstance(s, (gast.If, gast.While)):
        return [s.test]
    if isinstance(s, gast.For):
        return [s.target, s.iter]
    return [s]


# Node class -> the fields that may hold nodes, for ``walk``, ``nodes_of`` and ``_collect``
# (a name, an attribute's name, a constant's value: never a node, not looked at). A list
# field may hold what is not a node (the ``None`` of a keyword-only parameter without a
# default): its class maps to ``_NOT_A_NODE``, skipped when taken from the queue.
_FIELDS = {}
# The same less ``ctx`` and the operators (``op``, ``ops``: nodes without fields):
# nodes_of and _names_and_calls never look for a context or an operator.
_INNER = {}
_NOT_INNER = {"ctx", "op", "ops"}
_NOT_A_NODE = ("not a node",)
_LEAVES = {"id", "attr", "kind", "type_comment", "conversion", "is_async", "simple", "level",
           "module", "asname", "tag", "arg"}
_CLASS_LEAVES = {"Constant": {"value"}, "FunctionDef": {"name"}, "AsyncFunctionDef": {"name"},
                 "ClassDef": {"name"}, "alias": {"name"}, "MatchAs": {"name"},
                 "MatchStar": {"name"}, "MatchMapping": {"rest"}, "MatchClass": {"kwd_attrs"},
                 "Global": {"names"}, "Nonlocal": {"names"}}


def _fields(cls):
    if not issubclass(cls, gast.AST):
        fields = _FIELDS[cls] = _INNER[cls] = _NOT_A_NODE
        return fields
    leaves = _LEAVES | _CLASS_LEAVES.get(cls.__name__, set())
    fields = _FIELDS[cls] = tuple(f for f in cls._fields if f not in leaves)
    _INNER[cls] = tuple(f for f in fields if f not in _NOT_INNER)
    return fields


def _inner(cls):
    _fields(cls)
    return _INNER[cls]


def walk(node):
    """``ast.walk`` (the same nodes in the same order: breadth first, a node's children
    taken before it is yielded), without its two generator layers per node, which made
    it the compiler's largest single cost. The nodes are read from their ``__dict__``:
    a field never set is skipped, as ``ast.walk`` skips it."""
    todo = [node]
    push, extend = todo.append, todo.extend
    AST = gast.AST
    fields_of = _FIELDS
    for node in todo:   # a list iterator sees what is appended while it runs
        cls = node.__class__
        fields = fields_of.get(cls)
        if fields is None:
            fields = _fields(cls)
        if fields is _NOT_A_NODE:
            continue
        state = node.__dict__
        for field in fields:
            if field in state:
                value = state[field]
                if value.__class__ is list:
                    extend(value)
                elif isinstance(value, AST):
                    push(value)
        yield node


def nodes_and_parents(node):
    """(the nodes of ``node``, itself included, in ``walk``'s order; id(n) -> the node
    holding ``n``, for each of them but ``node``): one walk, for a path up from a node."""
    nodes = [node]
    parents = {}
    AST = gast.AST
    fields_of = _FIELDS
    for parent in nodes:   # (a list iterator sees what is appended while it runs)
        cls = parent.__class__
        fields = fields_of.get(cls)
        if fields is None:
            fields = _fields(cls)
        if fields is _NOT_A_NODE:
            continue
        state = parent.__dict__
        for field in fields:
            if field in state:
                value = state[field]
                if value.__class__ is list:
                    for item in value:
                        if isinstance(item, AST):
                            nodes.append(item)
                            parents[id(item)] = parent
                elif isinstance(value, AST):
                    nodes.append(value)
                    parents[id(value)] = parent
    return nodes, parents


def _collect(node):
    loads, stores = set(), set()
    Store = gast.Store
    for n in nodes_of(node, gast.Name):
        (stores if n.ctx.__class__ is Store else loads).add(n.id)
    return loads, stores


def _names_and_calls(node):
    """(names loaded, names stored, the ``gast.Call`` nodes) of ``node``: ``_collect`` and
    ``nodes_of(node, gast.Call)`` (the same calls in the same order) in one walk, for
    ``NameSets``."""
    loads, stores, calls = set(), set(), []
    load, store, call = loads.add, stores.add, calls.append
    Name, Call, Store = gast.Name, gast.Call, gast.Store
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    AST = gast.AST
    fields_of = _INNER
    while stack:
        n = pop()
        c = n.__class__
        if c is Name:
            (store if n.ctx.__class__ is Store else load)(n.id)
        elif c is Call:
            call(n)
        fields = fields_of.get(c)
        if fields is None:
            fields = _inner(c)
        if fields is _NOT_A_NODE:
            continue
        state = n.__dict__
        for field in fields:
            value = state.get(field)
            if value.__class__ is list:
                extend(value)
            elif isinstance(value, AST):
                push(value)
    return loads, stores, calls


def nodes_of(node, cls):
    """The nodes of class ``cls`` (exactly: ``gast.Name``, ``gast.Call``; not a context,
    ``gast.Load``, nor an operator, ``gast.Add``) in ``node``, itself included, in no particular order: what a set built
    from ``walk`` needs, in a fraction of its time (no generator, no test of the other
    nodes' classes)."""
    found = []
    stack = [node]
    pop, push, extend, add = stack.pop, stack.append, stack.extend, found.append
    AST = gast.AST
    fields_of = _INNER
    while stack:
        n = pop()
        c = n.__class__
        if c is cls:
            add(n)
        fields = fields_of.get(c)
        if fields is None:
            fields = _inner(c)
        if fields is _NOT_A_NODE:
            continue
        state = n.__dict__
        for field in fields:
            value = state.get(field)
            if value.__class__ is list:
                extend(value)
            elif isinstance(value, AST):
                push(value)
    return found


def places_of(node, cls, own_parts=False):
    """(n, its parent, the parent's field holding it, its index in that list or None) for
    each node ``n`` of class ``cls`` inside ``node`` (not ``node`` itself), a parent's
    before those inside it. ``own_parts``: ``node`` is a statement, and only what it
    evaluates itself is looked in (a compound statement's header, not its blocks). What
    a transformer visiting those nodes needs to replace them, without visiting the rest.
    ``cls`` is not a context nor an operator (``nodes_of``): those are not looked in."""
    found = []
    add = found.append
    AST = gast.AST
    stack = [node]
    pop, push = stack.pop, stack.append
    skip = BLOCK_FIELDS if own_parts and isinstance(node, _BLOCKS) else ()
    fields_of = _INNER
    while stack:
        parent = pop()
        c = parent.__class__
        fields = fields_of.get(c)
        if fields is None:
            fields = _inner(c)
        if fields is _NOT_A_NODE:
            continue
        state = parent.__dict__
        for field in fields:
            value = state.get(field)
            if value is None or (skip and parent is node and field in skip):
                continue
            if value.__class__ is list:
                for k, item in enumerate(value):
                    if isinstance(item, AST):
                        if item.__class__ is cls:
                            add((item, parent, field, k))
                        push(item)
            elif isinstance(value, AST):
                if value.__class__ is cls:
                    add((value, parent, field, None))
                push(value)
    return found


class NodeTransformer(gast.NodeTransformer):
    """``gast.NodeTransformer`` (the same visits and rewrites), with each node class's
    ``visit_`` method looked up once per transformer class and the fields read from the
    node's ``__dict__``: its dispatch and ``generic_visit`` were a tenth of a compile."""

    def visit(self, node):
        cls = self.__class__
        table = cls.__dict__.get("_sg_visitors")
        if table is None:
            table = {}
            setattr(cls, "_sg_visitors", table)   # the class's own (not a base's)
        method = table.get(node.__class__)
        if method is None:
            method = getattr(cls, "visit_" + node.__class__.__name__, None)
            if method is None or method is getattr(gast.NodeVisitor, "visit_Constant", None):
                method = cls.generic_visit
            table[node.__class__] = method
        return method(self, node)

    def generic_visit(self, node):
        AST = gast.AST
        state = node.__dict__
        for field in node._fields:
            if field not in state:
                continue
            old = state[field]
            if old.__class__ is list:
                new_values = []
                for value in old:
                    if isinstance(value, AST):
                        value = self.visit(value)
                        if value is None:
                            continue
                        if not isinstance(value, AST):
                            new_values.extend(value)
                            continue
                    new_values.append(value)
                old[:] = new_values
            elif isinstance(old, AST):
                new = self.visit(old)
                if new is None:
                    delattr(node, field)
                else:
                    state[field] = new
        return node


class StatementTransformer(NodeTransformer):
    """A ``NodeTransformer`` that knows the statement it is in (``statement``, the
    innermost) and lists in ``edited`` those where ``edit()`` was called: what a pass
    gives ``NameSets.forget_edited`` after rewriting expressions in place."""

    statement = None

    def __init__(self):
        self.edited = []

    def visit(self, node):
        if isinstance(node, gast.stmt):
            outer, self.statement = self.statement, node
            try:
                return NodeTransformer.visit(self, node)
            finally:
                self.statement = outer
        return NodeTransformer.visit(self, node)

    def visit_own_parts(self, s):
        """Visit what statement ``s`` evaluates itself (``own_parts``: a compound
        statement's header), not its blocks, whose statements are visited on their own."""
        if not isinstance(s, _BLOCKS):
            self.visit(s)
            return
        outer, self.statement = self.statement, s
        try:
            for field in ("test", "target", "iter"):
                if field in s.__dict__:
                    setattr(s, field, self.visit(s.__dict__[field]))
        finally:
            self.statement = outer

    def rewrite_own_parts(self, s, cls, rewrite):
        """``visit_own_parts(s)`` for a transformer whose only ``visit_`` method is for
        ``cls`` and visits its node's children first (``generic_visit``), then returns
        ``rewrite(node)``: the nodes of class ``cls`` are taken where they are
        (``places_of``), those inside a node before it, and replaced there, without a
        visit of every node. ``rewrite`` must read only its node's subtree (nodes apart
        are then taken in any order) and must not edit the tree above it."""
        outer, self.statement = self.statement, s
        try:
            for n, parent, field, index in reversed(places_of(s, cls, own_parts=True)):
                new = rewrite(n)
                if new is not n:
                    if index is None:
                        setattr(parent, field, new)
                    else:
                        getattr(parent, field)[index] = new
        finally:
            self.statement = outer

    def edit(self):
        """The statement being visited was rewritten."""
        if not self.edited or self.edited[-1] is not self.statement:
            self.edited.append(self.statement)


# SRCGRAD_CHECK_NAME_SETS=1 (tests/conftest.py sets it for some test modules): every
# memoized name set handed out is computed again and compared, so a pass that edits a
# node in place and forgets to ``forget`` it fails loudly instead of optimizing on stale
# sets (a wrong derivative).
CHECK_NAME_SETS = os.environ.get("SRCGRAD_CHECK_NAME_SETS", "") not in ("", "0")


class StaleNameSets(AssertionError):
    """A memoized name set no longer matches its node (a missing ``forget``)."""


class NameSets:
    """The names each node loads and stores, and the calls it makes, memoized by node.

    A pass that rewrites a node in place calls ``forget(node)`` (or ``clear()``) so
    that its sets are computed again; the memo holds the node, so a new node at a
    recycled address is never mistaken for an old one.
    """

    def __init__(self):
        self._memo = {}   # id(node) -> (node, loads, stores)

    def clear(self):
        self._memo.clear()

    def forget(self, *nodes):
        """Compute the sets of ``nodes`` again when next asked (they were edited in place)."""
        for node in nodes:
            self._memo.pop(id(node), None)

    def forget_edited(self, *statements):
        """Forget what a pass rewrote inside each of ``statements`` in place: the
        statement and every node of its own parts (a compound statement's header, not
        its blocks, whose statements keep their sets)."""
        memo = self._memo
        for s in statements:
            memo.pop(id(s), None)
            for part in own_parts(s):
                for node in walk(part):
                    memo.pop(id(node), None)

    def _sets(self, node):
        found = self._memo.get(id(node))
        if found is not None and found[0] is node:
            if len(found) == 6 and not self._same_parts(node, found):
                found = None   # a statement added to or dropped from its blocks, or one forgotten
            elif CHECK_NAME_SETS and (_collect(node) != found[1:3] or not _same_nodes(
                    nodes_of(node, gast.Call), found[3])):
                raise StaleNameSets(f"stale name sets or calls of a {type(node).__name__} at "
                                    f"line {getattr(node, 'lineno', '?')}: {found[1:3]} and "
                                    f"{len(found[3])} calls memoized, {_collect(node)} and "
                                    f"{len(nodes_of(node, gast.Call))} calls now")
            else:
                return found
        if isinstance(node, _BLOCKS):
            # A block's names are its statements' (memoized): nested loops are walked once.
            # Its entry keeps its parts and their entries, so that it is computed again
            # when one of them is (a pass forgot it) or its blocks' statements change.
            loads, stores, calls = set(), set(), []
            parts = own_parts(node) + node.body + node.orelse
            entries = []
            for part in parts:
                entry = self._sets(part)
                entries.append(entry)
                loads |= entry[1]
                stores |= entry[2]
                calls += entry[3]
            found = (node, loads, stores, calls, parts, entries)
        else:
            found = (node,) + _names_and_calls(node)
        self._memo[id(node)] = found
        return found

    def _same_parts(self, node, found):
        parts, entries = found[4], found[5]
        now = own_parts(node) + node.body + node.orelse
        if len(now) != len(parts):
            return False
        for part, was, entry in zip(now, parts, entries):
            if part is not was or self._sets(part) is not entry:
                return False
        return True

    # Each ask reads the memo itself: a node that is not a compound statement, memoized,
    # is answered without ``_sets``' checks (the common ask, thousands per compile; a
    # call level per ask was a visible cost); a compound statement's entry is checked
    # against its parts there.
    def loads(self, node):
        found = self._memo.get(id(node))
        if found is None or found[0] is not node or len(found) != 4 or CHECK_NAME_SETS:
            found = self._sets(node)
        return found[1]

    def stores(self, node):
        found = self._memo.get(id(node))
        if found is None or found[0] is not node or len(found) != 4 or CHECK_NAME_SETS:
            found = self._sets(node)
        return found[2]

    def refs(self, node):
        found = self._memo.get(id(node))
        if found is None or found[0] is not node or len(found) != 4 or CHECK_NAME_SETS:
            found = self._sets(node)
        return found[1] | found[2]

    def refs_among(self, node, wanted):
        """The names of ``wanted`` that ``node`` holds (``refs(node) & wanted``, without
        the union of every name of ``node`` first)."""
        found = self._memo.get(id(node))
        if found is None or found[0] is not node or len(found) != 4 or CHECK_NAME_SETS:
            found = self._sets(node)
        loads, stores = found[1], found[2]
        if loads.isdisjoint(wanted):
            return stores & wanted if not stores.isdisjoint(wanted) else _NO_NAMES
        return (loads & wanted) | (stores & wanted)

    def calls(self, node):
        """The ``gast.Call`` nodes in ``node`` (nested blocks included), in no particular
        order: a list the caller must not change. Which calls a node holds is memoized,
        not what they are: their function and arguments are read from the nodes."""
        found = self._memo.get(id(node))
        if found is None or found[0] is not node or len(found) != 4 or CHECK_NAME_SETS:
            found = self._sets(node)
        return found[3]


_NO_NAMES = frozenset()


def _same_nodes(found, kept):
    """The same nodes, in any order (by identity)."""
    return len(found) == len(kept) and {id(n) for n in found} == {id(n) for n in kept}


def loads(node):
    """Names ``node`` reads (``Load`` context), nested blocks included."""
    return _collect(node)[0]


def stores(node):
    """Names ``node`` binds (``Store`` context), nested blocks included."""
    return _collect(node)[1]


def refs(*nodes):
    """Every name the ``nodes`` hold, in any context."""
    found = set()
    for node in nodes:
        found_loads, found_stores = _collect(node)
        found |= found_loads | found_stores
    return found


def reads(*nodes):
    """Names the ``nodes`` read in a ``Load`` context (unlike ``loads``, a parameter or
    a ``del`` is not a read), nested blocks and scopes included."""
    Load = gast.Load
    return {n.id for node in nodes for n in nodes_of(node, gast.Name) if n.ctx.__class__ is Load}


# ----- Walking statements -----

BLOCK_FIELDS = ("body", "orelse")


def child_blocks(s):
    """The statement lists a compound statement holds (``body``, ``orelse``): a list (a
    generator per statement was a visible cost of every walk over statements)."""
    state = s.__dict__
    if "body" not in state:
        return _NO_BLOCKS
    return [inner for inner in (state["body"], state.get("orelse")) if inner.__class__ is list]


_NO_BLOCKS = ()


def rewrite_blocks(s, rewrite, keep_body=False):
    """Set each non-empty statement list ``s`` holds (``body``, ``orelse``) to
    ``rewrite(block)``. ``keep_body``: a body rewritten to nothing becomes ``pass``."""
    for field in BLOCK_FIELDS:
        inner = getattr(s, field, None)
        if isinstance(inner, list) and inner:
            new = rewrite(inner)
            if keep_body and field == "body" and not new:
                new = [gast.Pass()]
            setattr(s, field, new)


def blocks(body):
    """``body`` and every non-empty statement list nested in it, outermost first."""
    yield body
    for s in body:
        for inner in child_blocks(s):
            if inner:
                yield from blocks(inner)


def walk_statements(body):
    """Every statement of ``body``, nested blocks included, in source order."""
    for s in body:
        yield s
        if "body" in s.__dict__:
            for inner in child_blocks(s):
                yield from walk_statements(inner)


# ----- Matching -----

def assigned_name(s):
    """The name ``s`` assigns when it is ``name = value`` (one target), else None."""
    if s.__class__ is gast.Assign:   # (gast's classes have no subclasses)
        targets = s.targets
        if len(targets) == 1 and targets[0].__class__ is gast.Name:
            return targets[0].id
    return None


def is_zero(value):
    """``value`` is the float constant ``0.0``."""
    return isinstance(value, gast.Constant) and value.value == 0.0 and type(value.value) is float


def is_zero_assign(s, d):
    """``s`` is ``d = 0.0``."""
    return isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) \
        and s.targets[0].id == d and is_zero(s.value)


def accumulation(s, names=None):
    """``d = d + E`` where ``E`` does not read ``d``: returns (d, E), else None.

    ``names``: a ``NameSets`` to ask (default: computed afresh).
    """
    value = getattr(s, "value", None)
    if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
            and isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add)
            and isinstance(value.left, gast.Name) and value.left.id == s.targets[0].id):
        return None
    d = s.targets[0].id
    if d in (names.loads(value.right) if names is not None else loads(value.right)):
        return None
    return d, value.right


def is_accumulation(s, d, names=None):
    """``s`` is ``d = d + E`` with ``E`` not reading ``d``."""
    found = accumulation(s, names)
    return found is not None and found[0] == d


def dotted(node):
    """``("np", "linalg", "norm")`` for the expression ``np.linalg.norm``, else None."""
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id,) + tuple(reversed(parts)) if isinstance(node, gast.Name) else None


def is_rt_call(node, attr):
    """``node`` is ``rt.<attr>(...)`` without keywords."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name) and node.func.value.id == "rt"
            and node.func.attr == attr and not node.keywords)
