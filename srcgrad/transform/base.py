"""The base of srcgrad's statement transformers: block visiting, origins, one error().

In the spirit of AutoGraph's ``pyct.transformer.Base``. A pass subclasses ``Base``
and writes one ``visit_<Node>`` method per statement class it handles::

    class Example(Base):
        def visit_Pass(self, stmt):
            return None                     # dropped

        def visit_For(self, loop):
            self.visit_children(loop)       # its nested blocks first
            count = gast.parse("count = 0").body[0]
            return [self.inherit(count, loop), loop]   # spliced in its place

``visit_block(body)`` is the one driver: it visits each statement of a block and
splices what the visitor returns into the new block. A visitor returns

* a node: it replaces the statement;
* a list of nodes: they replace it, in order (``[]`` or ``None`` drops it).

A statement class without a ``visit_<Node>`` method goes to ``generic_visit``,
which visits its nested blocks (``body``, ``orelse``, ``finalbody``) and keeps it.

While a statement is visited, ``self.origin`` is its Origin (its ``Static.ORIGIN``
annotation, else the origin of the statement it is nested in): the user's line
that new nodes stand for. ``inherit(new)`` annotates a new node with it (or with
another node's), and ``error(node, cls, message, hint)`` builds the exception that
names the user's file and line.

The interface is deliberately small: ``visit_block``, ``visit``, ``generic_visit``,
``visit_children``, ``inherit``, ``origin_of`` and ``error`` (and ``local_names``, the
scope every pass asks about; ``rename_reserved``, the first pass's renaming). Expressions are not dispatched: a pass handles them
in its own helpers (A-normal form, the adjoint rules), since what an expression
becomes depends on the statement around it.
"""

import gast

from srcgrad import anno
from srcgrad import ast_util

Static = anno.Static

# The fields of a statement that hold nested blocks of statements.
BLOCK_FIELDS = ("body", "orelse", "finalbody")


class Base:
    """A statement transformer over gast trees (see the module docstring).

    Args:
        info: the parse.EntityInfo of the function transformed: where its lines are,
            for ``origin_of`` and ``error``.
    """

    def __init__(self, info):
        self.info = info
        self.origin = None   # the Origin of the statement being visited

    # ----- blocks -----

    def visit_block(self, body):
        """The new block made of what each statement of ``body`` is visited into."""
        out = []
        for stmt in body:
            saved = self.origin
            self.origin = anno.getanno(stmt, Static.ORIGIN, self.origin)
            try:
                result = self.visit(stmt)
            finally:
                self.origin = saved
            if result is None:
                continue
            if isinstance(result, (list, tuple)):
                out.extend(result)
            else:
                out.append(result)
        return out

    def visit(self, stmt):
        """Dispatch ``stmt`` to ``visit_<its class>``, else ``generic_visit``."""
        method = getattr(self, "visit_" + type(stmt).__name__, None)
        if method is None:
            return self.generic_visit(stmt)
        return method(stmt)

    def generic_visit(self, stmt):
        """Keep ``stmt``, its nested blocks visited."""
        self.visit_children(stmt)
        return stmt

    def visit_children(self, stmt):
        """Visit the nested blocks of ``stmt`` in place (``body``, ``orelse``, ``finalbody``)."""
        for field in BLOCK_FIELDS:
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                setattr(stmt, field, self.visit_block(block))
        return stmt

    # ----- origins and errors -----

    def inherit(self, node, like=None):
        """Annotate the new ``node`` with the origin of ``like`` (when it has one), or with
        the origin of the statement being visited. Returns ``node``."""
        origin = self.origin if like is None else anno.getanno(like, Static.ORIGIN)
        if origin is not None:
            anno.setanno(node, Static.ORIGIN, origin)
        return node

    def origin_of(self, node):
        """Where ``node`` is in the user's source: its own ``Static.ORIGIN`` annotation,
        else the statement being visited, else its parsed line (None when unknown)."""
        origin = anno.getanno(node, Static.ORIGIN) if node is not None else None
        if origin is None:
            origin = self.origin
        if origin is None and node is not None:
            origin = self.info.origin(node)
        return origin

    def error(self, node, cls, message, hint=None):
        """The exception ``cls`` (an ``errors.SrcgradError`` subclass) naming the user's
        file and line of ``node``: raise it (``raise self.error(...)``)."""
        origin = self.origin_of(node)
        if origin is None:
            return cls(message, self.info.filename, None, hint=hint)
        return origin.error(cls, message, hint)

    def _free_structure(self, name):
        """Whether the global or closure name ``name`` holds a structure that is not a
        sequence (a dict, a set), which a loop over it must refuse (``containers`` has
        local names only)."""
        from srcgrad import pytree
        try:
            value = self.info.resolve(name)
        except Exception:
            return False
        return isinstance(value, (set, frozenset)) or pytree.is_node(value) and not isinstance(
            value, (list, tuple))

    def sequence_checks(self, s, containers=None):
        """``for v in X`` over a name that may hold a container reads ``X[i]``: a run-time
        check that X is a list, tuple or array (a dict's items are not its keys), for
        each such X of loop ``s`` (among ``containers``, None: any name). Uses
        ``self.namer`` and ``self.bindings``."""
        from srcgrad.errors import UnsupportedError
        from srcgrad.templates import replace
        if not anno.getanno(s, Static.ITERATES):
            return []
        bases = []
        for st in s.body:
            if isinstance(st, gast.Assign) and isinstance(st.value, gast.Subscript) \
                    and isinstance(st.value.value, gast.Name) and isinstance(st.value.slice, gast.Name) \
                    and st.value.slice.id == s.target.id and st.value.value.id not in bases \
                    and (containers is None or st.value.value.id in containers
                         or self._free_structure(st.value.value.id)):
                bases.append(st.value.value.id)
        checks = []
        for b in bases:
            error_name = self.namer.new("loop_error")
            self.bindings[error_name] = self.error(
                s, UnsupportedError, f"a for loop over {b!r}, which holds a dict (or another "
                f"structure that is not a sequence), is not supported",
                "Iterate over list(d) (the keys), list(d.values()) or list(d.items()); over "
                "sorted(s) for a set.")
            checks += replace(f"rt.check_sequence({b}, {error_name})")
        return [self.inherit(c) for c in checks]


def local_names(node, found=None):
    """The parameters of FunctionDef ``node`` and every name it assigns (or deletes).
    ``found``: ``ast_util.nodes_of(node, gast.Name)``, when the caller has it."""
    names = {a.id for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
    names.update(a.id for a in (node.args.vararg, node.args.kwarg) if a is not None)
    for child in ast_util.nodes_of(node, gast.Name) if found is None else found:
        if isinstance(child.ctx, (gast.Store, gast.Del)):
            names.add(child.id)
    return names


def rename_reserved(node, info, namer, bindings, reserved, census=None, top=True):
    """Rename user names that collide with the generated code's own names ``reserved``
    (pipeline.RESERVED; a nested def's name too: it is no Name node, def push(...)).
    A helper's parameter is renamed too (Static.RENAMED_PARAMS: inline binds it); one of
    the differentiated function (``top``) is refused: its name is the signature's.
    ``census``: an ``ast_walks.Census`` of ``node`` (renaming keeps it valid)."""
    names, defs = (census.of(gast.Name), census.of(gast.FunctionDef)) if census is not None else (
        ast_util.nodes_of(node, gast.Name), ast_util.nodes_of(node, gast.FunctionDef))
    if frozenset(reserved).isdisjoint({n.id for n in names}) and all(
            d is node or d.name not in reserved for d in defs):
        return node   # (most functions: nothing to rename, no ordered walk)
    locals_ = None   # (asked at the first rename, before any: most functions have none)
    rename = {}
    params = [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    params += [a.id for a in (node.args.vararg, node.args.kwarg) if a is not None]
    for child in ast_util.walk(node):
        nested = child is not node and isinstance(child, gast.FunctionDef)
        text = child.name if nested else child.id if isinstance(child, gast.Name) else None
        if text in reserved:
            if locals_ is None:
                locals_ = local_names(node)
            if text not in rename:
                rename[text] = namer.new(text + "_")
                namer.original[rename[text]] = text   # a user's variable still
                if text not in locals_:
                    try:
                        bindings[rename[text]] = info.extra[rename[text]] = info.resolve(text)
                    except NameError:
                        pass
            setattr(child, "name" if nested else "id", rename[text])
    anno.setanno(node, Static.RENAMED_PARAMS, {p: rename[p] for p in params if p in rename})
    taken = [p for p in params if p in rename] if top else ()
    if taken:
        from srcgrad.errors import UnsupportedError
        raise info.origin(node).error(
            UnsupportedError, f"the parameter name {taken[0]!r} of {info.name} is one srcgrad's "
            f"generated code uses ({', '.join(reserved)})", "Rename the parameter.")
    return node


def lookup_dotted(expr, info, shadowed=()):
    """The object the dotted name ``expr`` (``sg.grad``, ``dataclasses.dataclass``) denotes
    in ``info``'s scope now, without recording the read; None where it is no dotted name,
    its root is one of ``shadowed`` (a local), or it denotes nothing."""
    parts = []
    while isinstance(expr, gast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, gast.Name) or expr.id in shadowed:
        return None
    try:
        obj = info.lookup(expr.id)
        for part in reversed(parts):
            obj = getattr(obj, part)
    except (NameError, AttributeError):
        return None
    return obj
