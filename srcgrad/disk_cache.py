"""The on-disk cache of generated gradients (like Numba's ``cache=True``).

A compiled gradient is written to one file of the cache directory; another process
that differentiates the same function loads it instead of compiling it again (a few
milliseconds instead of tens). On by default; ``SRCGRAD_CACHE=0`` in the environment, or
``srcgrad.disk_cache.settings.enabled = False``, turns it off; ``SRCGRAD_CACHE_DIR``
(else ``$XDG_CACHE_HOME/srcgrad``, else ``~/.cache/srcgrad``) says where it lives. The
directory is made private to the user (mode 0700).

**The key** (the file's name is its hash; the whole key is stored in the file too, and
an entry whose stored key differs is foreign and not used):

* this srcgrad: its version and a hash of every one of its source files (computed once
  per process), the Python version (``sys.implementation.cache_tag``) and NumPy's;
* the function: its module, qualified name, code object (``marshal``: the bytecode,
  constants, names, file and line numbers) and the text of its source lines;
* the compile's arguments: wrt, hook names, the CompileOptions, the argument ranks,
  has_aux;
* the rules users registered (``sg.adjoint``): each one's primitive and the code of
  its rule.

**What the code resolves to** (srcgrad/guard.py's reads) is checked when an entry is
loaded, before anything of it runs: every name the compile resolved (``np``, ``np.sin``,
a helper it inlined, a global float a helper bound into the code) is resolved again in
this process and described again (a module by name, a function by its module, name, code
and defaults, a number by its value, an array's kind by type and dtype where only its
kind was read); an entry any of whose descriptions differs is not used (and is rewritten
by the compile that follows). The objects the generated code binds (runtime helpers,
rules) are found again by import and checked the same way. Then an in-memory Guard is
built from what was resolved, as a compile builds it.

**Not cached** (compiled every process, as before): a function whose compile read or
bound something that cannot be described that way (an array or other object whose
identity the compile relied on, a bound method, a lambda or nested function bound into
the code, a local class), functions without source lines (``exec`` of a string without
``linecache``), bound methods and partials, callables passed as arguments (compiled per
object), structured arguments (pytrees), and any compile while a user-registered rule
cannot be described.

**Safety**: an entry is written to a temporary file in the directory and moved into
place with ``os.replace``, so a reader sees a whole entry or none; any error while
reading or checking an entry (a truncated or corrupted file, a foreign one, a stale one)
makes it a miss, and the compile that follows rewrites it. Entries are pickles of plain
data (strings, numbers, tuples, dicts), read by an unpickler that refuses any class or
function, so a tampered file cannot run code when it is read; and the directory is private
to the user, like Numba's and pip's caches. The generated code an entry holds (the
sweeps' source text, compiled when a loading process first asks for them, and ``grad``'s
composed gradient's text and code object marshalled, so a loaded ``grad`` compiles
nothing: disk_entries.py) does run, once its checks pass: point ``SRCGRAD_CACHE_DIR``
only at a directory nobody else can write.
"""

import builtins
import hashlib
import importlib
import linecache
import marshal
import os
import pickle
import sys
import tempfile
import types

import numpy

from srcgrad import caches

FORMAT = 3   # the layout of an entry; bumped when it changes


class Settings:
    """Whether the cache is used and where it lives (read from the environment once;
    set the attributes to change them in this process)."""

    def __init__(self):
        self.enabled = os.environ.get("SRCGRAD_CACHE", "1").strip().lower() not in (
            "0", "false", "no", "off")
        self.directory = os.environ.get("SRCGRAD_CACHE_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
            "srcgrad")

    def __repr__(self):
        return f"Settings(enabled={self.enabled!r}, directory={self.directory!r})"


settings = Settings()
stats = {"hits": 0, "misses": 0, "stores": 0, "uncacheable": 0, "rejected": 0}


class Uncacheable(Exception):
    """What a compile read or bound cannot be described in another process."""


# ----------------------------------------------------------------- srcgrad itself

_SRCGRAD_KEY = []


def srcgrad_key():
    """srcgrad's version, a hash of its source files, Python's and NumPy's versions."""
    if not _SRCGRAD_KEY:
        root = os.path.dirname(os.path.abspath(__file__))
        h = hashlib.sha256()
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    h.update(os.path.relpath(path, root).encode())
                    with open(path, "rb") as file:
                        h.update(file.read())
        package = sys.modules.get(__name__.rpartition(".")[0])   # srcgrad (no import: no cycle)
        _SRCGRAD_KEY.append((getattr(package, "__version__", "?"), h.hexdigest(),
                             sys.implementation.cache_tag, numpy.__version__))
    return _SRCGRAD_KEY[0]


# ----------------------------------------------------------------- descriptions

_MISSING_NAME = "<missing>"
_digests = caches.LRU()   # id(code) -> (code, digest): the code is kept so its id stays its own


def code_digest(code):
    found = _digests.get(id(code))
    if found is None or found[0] is not code:
        found = _digests[id(code)] = (code, hashlib.sha256(marshal.dumps(code)).hexdigest())
    return found[1]


def _importable(obj, module, qualname):
    """Whether ``module`` and ``qualname`` find ``obj`` again by import."""
    if not module or not qualname or "<" in qualname:
        return False
    found = sys.modules.get(module)
    if found is None:
        return False
    try:
        for part in qualname.split("."):
            found = getattr(found, part)
    except AttributeError:
        return False
    return found is obj


def _ufunc_module(ufunc):
    """The module to import ``ufunc`` from (a ufunc names none): NumPy's own, else the
    loaded module holding it under its name, public before private, then the shortest
    (``scipy.special.expit`` is also ``scipy.special._ufuncs.expit``)."""
    name = ufunc.__name__
    if getattr(numpy, name, None) is ufunc:
        return "numpy"
    found = []
    for module_name, module in list(sys.modules.items()):
        # (its namespace, not getattr: a lazy module's __getattr__ would import or warn)
        if module_name != "__main__" and getattr(module, "__dict__", {}).get(name) is ufunc:
            found.append((any(part.startswith("_") for part in module_name.split(".")),
                          len(module_name), module_name))
    return min(found)[2] if found else None


def describe(obj, missing=None):
    """A description of ``obj`` that another process can compare (and, for what the
    generated code binds, find the object again from): plain data only.

    Raises:
        Uncacheable: ``obj`` has no such description.
    """
    if missing is not None and obj is missing:
        return ("missing",)
    kind = type(obj)
    if obj is None or kind in (bool, int, float, complex, str, bytes):
        return ("value", kind.__name__, obj)
    if kind is tuple:
        return ("tuple",) + tuple(describe(v, missing) for v in obj)
    if kind is frozenset:
        return ("frozenset",) + tuple(sorted((describe(v, missing) for v in obj), key=repr))
    if kind is types.ModuleType:
        return ("module", obj.__name__)
    if kind is types.FunctionType:
        return ("function", obj.__module__, obj.__qualname__, code_digest(obj.__code__),
                describe(obj.__defaults__, missing),
                describe(tuple(sorted((obj.__kwdefaults__ or {}).items())), missing))
    if isinstance(obj, type):
        module, qualname = obj.__module__, obj.__qualname__
        if not _importable(obj, module, qualname):
            raise Uncacheable(f"the class {qualname}")
        methods = []
        for klass in obj.__mro__:
            if klass.__module__ == "builtins":
                continue
            for name, value in sorted(vars(klass).items()):
                value = getattr(value, "__func__", value)   # staticmethod, classmethod
                if isinstance(value, types.FunctionType):
                    methods.append((klass.__qualname__, name, code_digest(value.__code__)))
        return ("class", module, qualname, tuple(methods))
    if isinstance(obj, numpy.ndarray) or kind is types.MethodType:
        raise Uncacheable(f"an object of type {kind.__name__}")
    if isinstance(obj, (types.BuiltinFunctionType, numpy.ufunc)) or callable(obj):
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        if module is None and isinstance(obj, numpy.ufunc):
            module = _ufunc_module(obj)
        if _importable(obj, module, qualname):
            return ("ref", module, qualname)
    if isinstance(obj, numpy.generic) and obj.shape == ():
        return ("scalar", str(obj.dtype), obj.item())
    if isinstance(obj, numpy.dtype):
        return ("dtype", str(obj))
    from srcgrad.errors import SrcgradError
    if isinstance(obj, SrcgradError) and _importable(kind, kind.__module__, kind.__qualname__):
        return ("error", kind.__module__, kind.__qualname__, obj.message, obj.filename,
                obj.lineno, obj.col_offset, obj.source_line, obj.hint)
    raise Uncacheable(f"an object of type {kind.__name__}")


def _import(module, qualname):
    found = sys.modules.get(module) or importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def rebuild(description):
    """The object a ``describe`` description of a bound object denotes in this process.

    Raises:
        Uncacheable: it cannot be found, or what is found is described differently.
    """
    tag = description[0]
    try:
        if tag == "value":
            return description[2]
        if tag == "tuple":
            return tuple(rebuild(d) for d in description[1:])
        if tag == "frozenset":
            return frozenset(rebuild(d) for d in description[1:])
        if tag == "module":
            return sys.modules.get(description[1]) or importlib.import_module(description[1])
        if tag == "scalar":
            return numpy.dtype(description[1]).type(description[2])
        if tag == "dtype":
            return numpy.dtype(description[1])
        if tag == "error":
            cls = _import(description[1], description[2])
            return cls(*description[3:8], hint=description[8])
        if tag in ("function", "class", "ref"):
            obj = _import(description[1], description[2])
            if describe(obj) != description:
                raise Uncacheable(f"{description[2]} changed")
            return obj
    except Uncacheable:
        raise
    except Exception as exc:
        raise Uncacheable(f"{description!r}: {exc}") from None
    raise Uncacheable(f"{tag}")


# ----------------------------------------------------------------- the key

def _source_text(code):
    """The source lines of ``code`` (and its nested code), from linecache, or None."""
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return None
    last = code.co_firstlineno
    todo = [code]
    while todo:
        c = todo.pop()
        for _, _, line in c.co_lines():
            if line is not None and line > last:
                last = line
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return "".join(lines[code.co_firstlineno - 1:last])


def _user_rules():
    """A description of the rules users registered (``sg.adjoint``)."""
    from srcgrad import rules
    found = []
    for rule in list(rules.RULES.values()):
        if not rule.builtin:
            found.append((describe(rule.primitive), describe(rule.function),
                          tuple(sorted(rule.sequences)), repr(sorted(rule.literals.items()))))
    return tuple(sorted(found, key=repr))


def _plain(value):
    """``value`` if it is plain data (ints, strings, None, tuples of them), else raise."""
    if value is None or type(value) in (int, str, bool):
        return value
    if type(value) is tuple:
        return tuple(_plain(v) for v in value)
    raise Uncacheable(f"the argument {value!r}")


def key_of(fn, wrt, hook_names, options, arg_ranks, has_aux):
    """The full key of a compile of ``fn`` (a str), or None where it is not cached."""
    if type(fn) is not types.FunctionType or getattr(fn, "__wrapped__", None) is not None \
            or getattr(fn, "__srcgrad_bound__", None) is not None:
        return None
    from srcgrad.entry import bound_of
    if bound_of(fn) is not None:
        return None
    code = fn.__code__
    text = _source_text(code)
    if text is None:
        return None
    try:
        parts = (FORMAT, srcgrad_key(), fn.__module__, fn.__qualname__, code_digest(code),
                 hashlib.sha256(text.encode()).hexdigest(), _plain(wrt if not isinstance(wrt, list)
                                                                   else tuple(wrt)),
                 _plain(tuple(hook_names)), repr(options), _plain(arg_ranks), bool(has_aux),
                 _user_rules())
    except Uncacheable:
        return None
    return repr(parts)


def _path(key):
    digest = hashlib.sha256(key.encode()).hexdigest()
    return os.path.join(settings.directory, digest[:2], digest[2:] + ".pkl")


def _ensure_directory(folder):
    os.makedirs(settings.directory, mode=0o700, exist_ok=True)
    os.makedirs(folder, mode=0o700, exist_ok=True)


# ----------------------------------------------------------------- reading and writing

class _Unpickler(pickle.Unpickler):
    """Plain data only: an entry is dicts, tuples, strings and numbers, so a file that
    names any class or function (a foreign or tampered one) is refused, not run."""

    _ALLOWED = {("builtins", "frozenset"), ("builtins", "set"), ("builtins", "complex")}

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return getattr(builtins, name)
        raise pickle.UnpicklingError(f"srcgrad cache entry names {module}.{name}")


def read(key):
    """The entry stored under ``key`` (a dict), or None: absent, unreadable, corrupted or
    foreign entries are all misses."""
    path = _path(key)
    try:
        with open(path, "rb") as file:
            entry = _Unpickler(file).load()
    except FileNotFoundError:
        return None
    except Exception:   # truncated, corrupted, written by another version: rewritten later
        stats["rejected"] += 1
        return None
    if type(entry) is not dict or entry.get("format") != FORMAT or entry.get("key") != key:
        stats["rejected"] += 1
        return None
    return entry


def write(key, entry):
    """Store ``entry`` under ``key``: a temporary file moved into place (readers see a
    whole entry or none). Errors (a read-only directory, a full disk) are ignored."""
    path = _path(key)
    entry = dict(entry, format=FORMAT, key=key)
    tmp = None
    try:
        data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        folder = os.path.dirname(path)
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        except FileNotFoundError:   # (the folders made once, not asked before each write)
            _ensure_directory(folder)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
        tmp = None
        stats["stores"] += 1
        return True
    except Exception:
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def update(key, **fields):
    """Add ``fields`` to the entry under ``key`` (the composed gradient, made later)."""
    entry = read(key)
    if entry is not None:
        entry.update(fields)
        write(key, entry)


# ----------------------------------------------------------------- what the compile read

class _Read:
    """What guard.Guard reads of an EntityInfo, rebuilt in this process."""

    def __init__(self, fn, globals_, closure):
        self.fn = fn
        self.globals = globals_
        self.closure = closure
        self.extra = {}
        self.reads = {}
        self.kind_reads = {}


def scope_of(fn):
    """``fn``'s globals and its closure's cells by name."""
    code = fn.__code__
    return fn.__globals__, dict(zip(code.co_freevars, fn.__closure__ or ()))


def resolutions(fn, infos):
    """A description of every name the compile resolved, per EntityInfo in ``infos``
    (the function's and each inlined helper's): how to find the helper again, and each
    read's description.

    Raises:
        Uncacheable: a helper cannot be found again, or a read cannot be described.
    """
    from srcgrad.parse import MISSING
    functions = [fn]
    out = []
    for info in infos:
        helper = info.fn
        where = None
        for k, known in enumerate(functions):
            if helper is known:
                where = ("same", k)
                break
        if where is None:
            for k, earlier in enumerate(infos[:len(out)]):
                for path, obj in earlier.reads.items():
                    if obj is helper:
                        where = ("read", k, path)
                        break
                if where is not None:
                    break
        if where is None or type(helper) is not types.FunctionType:
            raise Uncacheable(f"the helper {getattr(helper, '__qualname__', helper)}")
        if info.extra and any(path[0] in info.extra for path in info.reads if len(path) > 1):
            raise Uncacheable("a read through a name srcgrad bound")
        if any(not isinstance(part, str) for path in info.reads for part in path):
            raise Uncacheable("a read of an item of a list, tuple or dict")
        if info.globals is not helper.__globals__:
            raise Uncacheable("a helper with other globals")
        functions.append(helper)
        reads = tuple((path, describe(obj, MISSING)) for path, obj in info.reads.items())
        kinds = tuple((root, _kind(key)) for root, key in info.kind_reads.items())
        out.append({"where": where, "reads": reads, "kinds": kinds,
                    "own": describe((helper.__defaults__,
                                     tuple(sorted((helper.__kwdefaults__ or {}).items()))))})
    return out


def _kind(key):
    kind, dtype = key
    return (kind.__module__, kind.__qualname__, None if dtype is None else str(dtype))


def _resolve(info, path):
    from srcgrad.parse import MISSING
    root = path[0]
    if root in info.closure:
        try:
            obj = info.closure[root].cell_contents
        except ValueError:
            return MISSING
    elif root in info.globals:
        obj = info.globals[root]
    elif hasattr(builtins, root):
        obj = getattr(builtins, root)
    else:
        return MISSING
    for part in path[1:]:
        obj = getattr(obj, part, MISSING)
        if obj is MISSING:
            return MISSING
    return obj


def check_resolutions(fn, described):
    """The EntityInfo stand-ins (for guard.Guard) of ``described`` resolved again from
    ``fn``, or None when anything resolves to something described otherwise."""
    from srcgrad.parse import MISSING, value_kind_key
    infos = []
    for item in described:
        where = item["where"]
        if where[0] == "same":
            helper = ([fn] + [i.fn for i in infos])[where[1]]
        else:
            helper = infos[where[1]].reads.get(where[2], MISSING)
        if type(helper) is not types.FunctionType:
            return None
        globals_, closure = scope_of(helper)
        info = _Read(helper, globals_, closure)
        try:
            if describe((helper.__defaults__, tuple(sorted((helper.__kwdefaults__ or {}).items())))) \
                    != item["own"]:
                return None
            for path, description in item["reads"]:
                obj = _resolve(info, path)
                if describe(obj, MISSING) != description:
                    return None
                info.reads[path] = obj
            for root, kind in item["kinds"]:
                obj = _resolve(info, (root,))
                key = value_kind_key(obj) if obj is not MISSING else None
                if key is None or _kind(key) != kind:
                    return None
                info.kind_reads[root] = key
        except Uncacheable:
            return None
        infos.append(info)
    return infos
