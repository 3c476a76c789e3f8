"""A compiled gradient as an entry of the on-disk cache (disk_cache.py: the key, the
files, the descriptions of what the compile read and bound): what is stored of it, and
the Compiled made of a stored entry.

An entry holds the sweeps printed (their text, which the process that loads the entry
compiles when something first asks for them: ``value_and_grad``, ``vjp``, hooks, the
generic code) and, once ``grad``'s first call made it, the composed gradient with its
code marshalled (a loaded ``grad`` compiles nothing). Each holds the origins of its
statements (the user's line of each generated line, for tracebacks) as the printed
statements' skeleton (emit.Origins), matched with the text when a traceback asks.
"""

import types

from srcgrad import disk_cache, rules, runtime
from srcgrad.codegen import emit, loader
from srcgrad.compiled import LATER, Compiled, Sweeps, gc_paused
from srcgrad.disk_cache import Uncacheable, describe, rebuild, stats
from srcgrad.guard import Guard
from srcgrad.parse import EntityInfo, Origin


def _free_names(functions):
    names = set()
    todo = [f.__code__ for f in functions]
    while todo:
        code = todo.pop()
        names.update(code.co_freevars)
        todo.extend(k for k in code.co_consts if isinstance(k, types.CodeType))
    return names


def _described(used, bindings):
    """A description of each object of ``bindings`` named in ``used`` (``rt``: srcgrad's
    runtime, bound by every load)."""
    described = {}
    for n in sorted(used):
        if n not in bindings:
            raise Uncacheable(f"the free name {n}")
        if n != "rt":
            described[n] = describe(bindings[n])
    return described


def _skeleton_data(skeletons):
    """``emit.Origins.skeletons`` as plain data: each Origin a tuple."""
    def block(skeleton):
        return [(o if o is None else (o.filename, o.lineno, o.col_offset, o.source_line,
                                      o.function),
                 [(field, block(inner)) for field, inner in nested])
                for o, nested in skeleton]
    return [block(s) for s in skeletons]


def _origins_of(part):
    """The line origins of a stored part's source, made when a traceback first asks."""
    origins = emit.Origins(part["origins"], part["source"])
    return lambda: {line: Origin(*o) for line, o in origins().items()}


def _part(source, names, functions, bindings, info, origins):
    """What loading the composed gradient (``source``, loaded as ``functions``) again
    needs: the text compiled and the functions' code marshalled (loader.loaded), their
    names, a description of each object it binds, its statements' origins."""
    described = _described(_free_names(functions) - set(info.closure) - set(names), bindings)
    text, offset, codes = loader.loaded(functions)
    return {"source": source, "text": text, "offset": offset, "codes": codes, "names": tuple(names),
            "bindings": described, "origins": _skeleton_data(origins.skeletons)}


def _named_in(text, name):
    """Whether ``name`` stands in ``text`` as a whole word (perhaps not a name: enough)."""
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        if not (at and (text[at - 1].isalnum() or text[at - 1] == "_")) and not (
                end < len(text) and (text[end].isalnum() or text[end] == "_")):
            return True
        at = text.find(name, end)
    return False


def _printed_part(printed, bindings, info):
    """What loading the sweeps again needs: their text (compiled by the process that
    loads it, when something first asks for them: ``load_sweeps``), the functions'
    names, a description of each object of ``bindings`` the text names, the statements'
    origins. The objects described are those whose name stands in the text, of which
    the code's free names are some: the text loaded with them binds each name as the
    compile's load did."""
    closure = info.closure
    used = [n for n in bindings if n not in closure and _named_in(printed.source, n)]
    return {"source": printed.source, "names": tuple(printed.names),
            "bindings": _described(set(used) - set(printed.names), bindings),
            "origins": _skeleton_data(printed.origins.skeletons)}


def _load_part(part, info):
    bindings = _bindings_of(part)
    functions = loader.load_marshalled(
        part["text"], part["offset"], part["codes"], list(part["names"]), info.globals,
        info.closure, bindings, hint=info.fn.__qualname__, origins=_origins_of(part))
    return functions, bindings


def _bindings_of(part):
    """The objects a stored part binds, found again in this process."""
    bindings = {n: rebuild(d) for n, d in part["bindings"].items()}
    bindings["rt"] = runtime
    rules._load_library_rules()   # SciPy's rules bind rt.special_* the code may call
    return bindings


def load_sweeps(part, info, bindings):
    """The sweeps of a loaded entry (``part``: ``_printed_part``) compiled: the functions,
    in the order of ``part["names"]``."""
    functions, _, _ = loader.load(part["source"], list(part["names"]), info.globals,
                                  info.closure, bindings, hint=info.fn.__qualname__,
                                  origins=_origins_of(part))
    return functions


@gc_paused   # (it prints the sweeps: a collection would scan the compile's trees)
def store(compiled, key, fn):
    """Write ``compiled`` (just compiled from ``fn``) under ``key``; returns whether it was
    (a compile that read or bound what cannot be described is not). The sweeps are
    printed (``compiled.printed``), not loaded: the process that reads the entry compiles
    them if something asks for them; ``grad``'s call runs the composed gradient, which
    ``store_composed`` adds with its code."""
    info, bindings = compiled.load
    try:
        if compiled.printed is None:
            raise Uncacheable("the sweeps were not printed")
        printed = compiled.printed()
        entry = {
            "sweeps": _printed_part(printed, bindings, info),
            "reads": disk_cache.resolutions(fn, compiled.infos),
            "info": (info.name, info.filename, info.first_lineno, info.indent),
            "facts": {"wrt": compiled.wrt, "active": frozenset(compiled.activity.active),
                      "user_locals": compiled.user_locals,
                      "tuple_output": compiled.tuple_output, "uses_tape": compiled.uses_tape,
                      "mutates_saved": compiled.mutates_saved, "rank_free": compiled.rank_free,
                      "scalars": compiled.scalars,
                      "functions": tuple(describe(c) for c in compiled.functions),
                      "for_grad": printed.for_grad,
                      "composable": compiled.gradient_forward is not None},
            "composed": None,
        }
    except Uncacheable:
        stats["uncacheable"] += 1
        return False
    compiled.disk_key = key
    compiled.disk_entry = entry
    return disk_cache.write(key, entry)


def load(fn, key):
    """``(entry, infos, info, bindings, classes)`` of the entry stored under ``key`` for
    ``fn``, its reads resolved again and the objects its sweeps bind found again (the
    sweeps are compiled when first asked: ``load_sweeps``); or None (a miss: absent,
    unreadable, or compiled from what no longer resolves the same).
    ``from_disk`` makes the Compiled of it."""
    entry = disk_cache.read(key)
    if entry is None:
        stats["misses"] += 1
        return None
    try:
        infos = disk_cache.check_resolutions(fn, entry["reads"])
        if infos is None:
            stats["rejected"] += 1
            return None
        name, filename, first_lineno, indent = entry["info"]
        globals_, closure = disk_cache.scope_of(fn)
        info = EntityInfo(fn, name, filename, first_lineno, indent, [], globals_, closure)
        bindings = _bindings_of(entry["sweeps"])
        classes = tuple(rebuild(d) for d in entry["facts"]["functions"])
    except Exception:   # anything unexpected in an entry: a miss, rewritten by the compile
        stats["rejected"] += 1
        return None
    stats["hits"] += 1
    return entry, infos, info, bindings, classes


def store_composed(compiled, function):
    """Add the composed gradient (pipeline.compose_gradient) to ``compiled``'s entry."""
    info, bindings = compiled.load
    text, origins = function._srcgrad_text
    try:
        part = _part(text, (function.__name__,), [function], dict(bindings), info, origins)
    except Exception:
        return
    entry = getattr(compiled, "disk_entry", None)
    if entry is None:   # loaded from disk without it: read the entry again
        disk_cache.update(compiled.disk_key, composed=part)
    else:
        entry["composed"] = part
        disk_cache.write(compiled.disk_key, entry)


def load_composed(compiled):
    """The composed gradient of a loaded entry (no transform, no compile: its code is
    unmarshalled)."""
    info = compiled.load[0]
    (function,), _ = _load_part(compiled.composed_part, info)
    function.__defaults__ = info.fn.__defaults__
    function.__kwdefaults__ = info.fn.__kwdefaults__
    return function


class _Activity:
    """What a gradient loaded from disk keeps of its activity analysis."""

    def __init__(self, active):
        self.active = active


# A loaded gradient's gradient_forward: compose_gradient compiles the trees again.
COMPOSABLE = ("loaded from the on-disk cache: compose_gradient compiles the trees again",)


def from_disk(fn, key, recompile):
    """The Compiled stored under ``key`` in the on-disk cache (disk_cache.py), or None.
    It has no trees: ``recompile()`` makes them when something asks (compose_gradient).
    Its sweeps are compiled from the stored text when something first asks for them
    (``grad``'s call runs the stored composed gradient: it compiles nothing)."""
    found = load(fn, key)
    if found is None:
        return None
    entry, infos, info, bindings, classes = found
    facts = entry["facts"]
    part = entry["sweeps"]

    def sweeps():
        """The stored text compiled (an entry whose text does not load, compiled again)."""
        try:
            functions = load_sweeps(part, info, bindings)
        except Exception:   # a damaged entry: the sweeps of a compile, their text rewritten
            made = recompile()
            try:
                disk_cache.update(key, sweeps=_printed_part(made.printed(), made.load[1],
                                                            made.load[0]))
            except Uncacheable:
                pass
            return made.sweeps()
        forward, backward = functions[-3 if facts["for_grad"] else -2], functions[-1]
        for_grad = functions[-2] if facts["for_grad"] else None
        for f in (forward, for_grad):
            if f is not None:
                f.__defaults__ = fn.__defaults__
                f.__kwdefaults__ = fn.__kwdefaults__
        return Sweeps(forward, backward, part["source"], for_grad)

    return Compiled(
        LATER, LATER, LATER, facts["wrt"], _Activity(facts["active"]),
        facts["user_locals"], Guard(fn, infos), tuple_output=facts["tuple_output"],
        uses_tape=facts["uses_tape"], mutates_saved=facts["mutates_saved"], functions=classes,
        rank_free=facts["rank_free"], forward_for_grad=LATER, trees=(),
        gradient_forward=COMPOSABLE if facts["composable"] else None, load=(info, bindings),
        scalars=facts["scalars"], disk_key=key, composed_part=entry.get("composed"),
        recompile=recompile, sweeps=sweeps)
