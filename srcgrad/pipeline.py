"""The ordered stages from a user function to its compiled gradient, and nothing else."""

from dataclasses import dataclass, field

import gast

from srcgrad import runtime
from srcgrad.analysis import activity
from srcgrad.codegen import emit, loader
from srcgrad.naming import Namer
from srcgrad.parse import parse_function
from srcgrad.transform import anf, canonicalize, fence, inline, reverse

# Names the generated code uses for itself; a user's variable of that name is renamed.
RESERVED = ("rt", "xp", "tape", "push", "pop", "saved", "_")


@dataclass
class Compiled:
    """A compiled gradient: the generated functions, their source, and facts about them."""

    forward: object
    backward: object
    source: str
    wrt: tuple
    activity: object = field(repr=False)
    meta: dict = field(repr=False)
    user_locals: frozenset = frozenset()


def _rename_reserved(node, info, namer, bindings):
    """Rename user names that collide with the generated code's own names."""
    locals_ = anf.local_names(node)
    rename = {}
    for child in gast.walk(node):
        if isinstance(child, gast.Name) and child.id in RESERVED:
            if child.id not in rename:
                rename[child.id] = namer.new(child.id + "_")
                if child.id not in locals_:
                    try:
                        bindings[rename[child.id]] = info.resolve(child.id)
                    except NameError:
                        pass
            child.id = rename[child.id]
    for arg in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
        if arg.id in rename:
            raise ValueError(f"srcgrad: rename the parameter {arg.id!r}: the name is reserved")
    return node


def normalize(fn, stack=()):
    """Parse, check, canonicalize, normalize and inline ``fn``: the shared prefix of every mode."""
    node, info = parse_function(fn)
    namer = Namer({n.id for n in gast.walk(node) if isinstance(n, gast.Name)} | set(RESERVED))
    fence.check(node, info)
    bindings = {}
    node = _rename_reserved(node, info, namer, bindings)
    node = canonicalize.transform(node, info, namer)  # before ANF: it introduces flags and indexing
    node = anf.transform(node, info, namer)
    node, inlined = inline.transform(node, info, namer, stack or (fn.__code__,))
    bindings.update(inlined)
    node._srcgrad_namer = namer
    return node, info, bindings


def wrt_names(node, wrt):
    """Normalize ``wrt`` (int, str, or a sequence of them) to a tuple of names."""
    params = [a.id for a in node.args.posonlyargs + node.args.args]
    all_params = params + [a.id for a in node.args.kwonlyargs]
    many = isinstance(wrt, (tuple, list))
    items = list(wrt) if many else [wrt]
    names = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise TypeError(f"srcgrad: wrt entries are parameter positions or names, got {item!r}")
        if isinstance(item, int):
            if not -len(params) <= item < len(params):
                raise ValueError(f"srcgrad: wrt={item} but the function has {len(params)} positional parameters")
            names.append(params[item])
        else:
            names.append(item)
    return tuple(names), many, all_params


def compile_gradient(fn, wrt):
    """Compile the reverse-mode gradient of ``fn`` with respect to ``wrt``."""
    node, info, bindings = normalize(fn)
    namer = node._srcgrad_namer
    names, _, _ = wrt_names(node, wrt)
    user_locals = frozenset(anf.local_names(parse_function(fn)[0]))
    for n in names:
        if n not in user_locals:
            raise ValueError(f"srcgrad: wrt={n!r} is neither a parameter nor a local variable of "
                             f"{fn.__qualname__}")
    act = activity.resolve(node, names)
    fixed = {"xp": "xp", "rt": "rt"}
    forward, backward, meta = reverse.build(node, info, act, namer, names, fixed, fn.__name__)
    forward.body = emit.comment_blocks(forward.body, "", 2)
    backward.body = emit.comment_blocks(backward.body, "grad of: ", 1)
    source = emit.to_source([forward, backward])
    bindings.update(meta["bindings"])
    bindings["rt"] = runtime
    functions, _, _ = loader.load(source, [forward.name, backward.name], info.globals,
                                  info.closure, bindings, hint=fn.__qualname__)
    fwd, bwd = functions
    fwd.__defaults__ = fn.__defaults__
    fwd.__kwdefaults__ = fn.__kwdefaults__
    return Compiled(fwd, bwd, source, names, act, meta, user_locals)
