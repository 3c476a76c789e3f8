"""Load generated source as functions that see the user's live globals and closure.

The source gets a file of its own in a temporary directory (removed when the
process exits), registered in ``linecache`` under that name, so tracebacks,
``inspect.getsource`` and pdb show the generated lines; the file is written
when an exception first passes through it (the default excepthook reads the
disk). What a file keeps here (its lines, source, origins, the file itself) is dropped
when the last function loaded from it dies (``release_with``): a gradient evicted from
the caches (srcgrad/caches.py) that nobody holds takes its lines with it, and a live one
keeps them. Each generated line that computes a user statement is
mapped to that statement's origin (``origin_at``; tracebacks.py names the
user's line when an exception escapes a gradient). The
functions get the user function's globals dictionary (a rebinding of a global
is seen) and closure cells for the user's own free variables (live too); names
srcgrad adds (``rt``, rules called at run time, objects of inlined helpers from
other modules) come through cells of their own.
"""

import atexit
import itertools
import linecache
import marshal
import os
import shutil
import tempfile
import types
import weakref

_counter = itertools.count()
_directory = None       # the temporary directory of this process's generated files
_unwritten = {}   # generated file name -> its source, not yet written to disk
_offsets = {}   # generated file name -> the number of lines of the factory header
_origins = {}   # generated file name -> {line: parse.Origin of the user's statement}, or
               # (line offset, the function that makes it) until first asked
_watched = {}   # generated file name -> weak references to the code objects loaded from it


def write(source, hint):
    """The file name of ``source`` (registered in ``linecache``, so ``inspect``, pdb and
    the ``traceback`` module read it): a file of this process's temporary directory,
    named after ``hint``, written to disk when a traceback first needs it
    (``on_disk``; a compile does not pay for the disk); a ``<srcgrad ...>`` name
    where no directory can be made."""
    global _directory
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)[:60]
    number = next(_counter)
    filename = f"<srcgrad {hint} #{number}>"
    try:
        if _directory is None:
            _directory = tempfile.mkdtemp(prefix="srcgrad-")
            atexit.register(_remove, _directory, os.getpid())
        filename = os.path.join(_directory, f"{name}_{number}.py")
    except OSError:
        pass
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    _unwritten[filename] = source
    return filename


def on_disk(filename):
    """Write the generated file ``filename`` if it is not yet (the default excepthook
    of CPython before 3.13 reads a traceback's lines from disk, not ``linecache``)."""
    source = _unwritten.pop(filename, None)
    if source is not None and not filename.startswith("<"):
        try:
            with open(filename, "w", encoding="utf-8") as file:
                file.write(source)
        except OSError:
            pass


def release_with(filename, functions):
    """Keep what is registered for ``filename`` (its ``linecache`` lines, unwritten
    source, offset, origins, the file on disk) while a code object of ``functions``
    (or one nested in it: a closure made by the code may outlive it) is alive, and drop
    it when the last one dies."""
    codes, todo = [], [f.__code__ for f in functions]
    while todo:
        code = todo.pop()
        codes.append(code)
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    refs = set()

    def dead(ref):
        refs.discard(ref)
        try:
            if not refs and _watched.get(filename) is refs:
                release(filename)
        except Exception:   # at interpreter exit, the modules it uses may be gone
            pass
    refs.update(weakref.ref(c, dead) for c in codes)
    _watched[filename] = refs


def release(filename):
    """Forget the generated file ``filename``: its lines, source, origins and file."""
    _watched.pop(filename, None)
    _offsets.pop(filename, None)
    _origins.pop(filename, None)
    entry = linecache.cache.get(filename)
    if entry is not None and entry[1] is None:   # ours (a file read from disk has its mtime)
        linecache.cache.pop(filename, None)
    if _unwritten.pop(filename, None) is None and not filename.startswith("<"):
        try:
            os.remove(filename)
        except OSError:
            pass


def _remove(directory, pid):
    if os.getpid() == pid:   # not a forked child's exit
        shutil.rmtree(directory, ignore_errors=True)


def has_origins(filename):
    """Whether ``filename`` is generated code whose lines map to the user's statements."""
    return filename in _origins


def is_generated(filename):
    """Whether ``filename`` is the file of a program srcgrad generated (and loaded)."""
    return filename in _origins


def in_generated_directory(filename):
    """Whether ``filename`` is any file srcgrad wrote and loaded (a generated program, or
    the small wrappers of nested.py, which have no origins)."""
    return bool(filename) and _directory is not None and \
        os.path.dirname(filename) == _directory


def origin_at(filename, lineno):
    """The origin of the user statement that generated line ``lineno`` computes, or None."""
    lines = _origins.get(filename)
    if lines is None:
        return None
    if isinstance(lines, tuple):   # made when first asked: a compile does not pay for it
        offset, origins = lines
        lines = _origins[filename] = {line + offset: o for line, o in origins().items()}
    return lines.get(lineno)


def load(source, function_names, user_globals, user_cells, bindings, hint="f", origins=None):
    """Compile ``source`` and return its functions, in the order of ``function_names``.

    Args:
        source: module source with one def per name in ``function_names``.
        user_globals: the dict the functions use as globals.
        user_cells: dict name -> cell of the user function's closure.
        bindings: dict name -> object for srcgrad's own free names.
        origins: a function returning the dict line of ``source`` -> the Origin
            of the user statement it computes (emit.line_origins), called the
            first time an exception passes through the code.
    """
    free = sorted(set(user_cells) | set(bindings))
    # A factory whose locals are the free names makes them closure variables of the defs.
    header = "def __srcgrad_factory__():\n"
    header += "".join(f"    {n} = None\n" for n in free) or "    pass\n"
    indented = "".join("    " + line + "\n" if line.strip() else "\n" for line in source.splitlines())
    footer = f"    return ({', '.join(function_names)},)\n"
    full = header + indented + footer
    filename = write(full, hint)
    try:
        code = compile(full, filename, "exec")
    except BaseException:
        release(filename)
        raise
    offset = _offsets[filename] = header.count("\n")
    if origins is not None:
        _origins[filename] = (offset, origins)
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = {c.co_name: c for c in factory_code.co_consts if isinstance(c, types.CodeType)}
    functions = _make(inner, function_names, free, user_globals, user_cells, bindings)
    release_with(filename, functions)
    return functions, full, filename


def loaded(functions):
    """``(text, offset, codes)`` of functions ``load`` made from one source: the text
    compiled (as registered in ``linecache``), the number of header lines before the
    source's first line, and each function's code marshalled (``load_marshalled``
    makes the functions again without compiling)."""
    filename = functions[0].__code__.co_filename
    text = "".join(linecache.cache[filename][2])
    return text, _offsets[filename], tuple(marshal.dumps(f.__code__) for f in functions)


def _refile(code, filename):
    consts = tuple(_refile(c, filename) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def load_marshalled(text, offset, codes, function_names, user_globals, user_cells, bindings,
                    hint="f", origins=None):
    """The functions of ``loaded``'s ``(text, offset, codes)``, in another process (same
    Python: the cache tag is in the disk cache's key): the code is unmarshalled, not
    compiled, and given a file of this process with ``text``'s lines, so tracebacks and
    ``origin_at`` work as after ``load``."""
    filename = write(text, hint)
    _offsets[filename] = offset
    if origins is not None:
        _origins[filename] = (offset, origins)
    try:
        inner = {n: _refile(marshal.loads(c), filename) for n, c in zip(function_names, codes)}
        free = set(user_cells) | set(bindings)
        for c in inner.values():
            missing = set(c.co_freevars) - free - set(function_names)
            if missing:
                raise KeyError(f"free names {sorted(missing)} are not bound")
        functions = _make(inner, function_names, free, user_globals, user_cells, bindings)
    except BaseException:
        release(filename)
        raise
    release_with(filename, functions)
    return functions


def _make(inner, function_names, free, user_globals, user_cells, bindings):
    cells = {n: user_cells[n] if n in user_cells else types.CellType(bindings[n]) for n in free}
    functions = []
    for fname in function_names:  # a function may call those listed before it
        fcode = inner[fname]
        closure = tuple(cells[n] for n in fcode.co_freevars)
        functions.append(types.FunctionType(fcode, user_globals, fname, None, closure or None))
        cells.setdefault(fname, types.CellType(functions[-1]))
    return functions
