"""The lazy dispatcher behind ``sg.grad(f, jit=True)``.

``JitGradFunction`` wraps a GradFunction (api.py). A call picks the compiled gradient
the NumPy path would run for its arguments (``compiled_for``: by ranks and structure),
translates it once (translate.py) and hands it to ``numba.njit``, which compiles on
the first call for each signature of argument types (dtype, ndim, layout; Python
float, int, bool) and reuses it for the same types. What is not compiled runs the
NumPy gradient, with one ``JitFallbackWarning`` naming the construct and the user's
file and line:

* the translation refuses a construct (``Refused``): once per compiled gradient;
* Numba's typing or lowering fails: once per signature, which is not tried again;
* the compiled code raises: that call is run again by the NumPy gradient, which
  raises its own error, or returns what the jit code could not (warned once).

The results are the NumPy gradient's, to rounding (the same operations in the same
order; NumPy's vectorised transcendental functions may round the last bit differently).
"""

import linecache
import os
import re
import sys
import time
import types
import warnings

import numpy
from numpy import ndarray

from srcgrad.analysis.ranks import checked_rank_keys as rank_keys   # a refusal: by gfn
from srcgrad.call_values import _LEAF_TYPES, _finish_values
from srcgrad.codegen import loader
from srcgrad.jit import fixed_tapes, hot as _hot_call, translate
from srcgrad.jit.arguments import (_SCALARS, _final, _integer_wrt, _signature,  # noqa: F401
                                   _unsupported)
from srcgrad.jit.errors import ZeroAdjoint

_NUMPY = object()   # in JitGradFunction._fast: arguments like these run the NumPy gradient
_DECLINED = _hot_call.DECLINED   # what a hot.py function returns for a call it does not take


class JitFallbackWarning(UserWarning):
    """A jit=True gradient runs the NumPy code for a construct Numba does not compile."""


class JitGradFunction:
    """``sg.grad(f, jit=True)``: the gradient ``gfn`` computes, compiled with Numba where
    the function allows it, and where that runs faster than the NumPy gradient on the first
    call (``_numpy_faster``). Attributes: ``gradient`` (the NumPy GradFunction),
    ``compile_times`` (a list of ``(signature, seconds)``, one per Numba compile)."""

    def __init__(self, gfn):
        self.gradient = gfn
        self.compile_times = []
        self._declines = bool(gfn.hook_names or gfn.has_aux)   # always the NumPy gradient
        self._entries = {}   # (id(compiled), variant) -> _Entry
        self._fast = {}      # (variant, rank_keys(args)) -> _Entry
        self._hot = {}          # rank_keys(args) -> grad's common call (hot.py), see __call__
        self._hot_seeded = {}   # the same with grad_outputs (one gradient, no value)
        self._last_grad = None     # the function of _hot the last such call ran
        self._last_seeded = None   # the same of _hot_seeded
        self._fn = gfn.fn

    @property
    def __name__(self):
        return self.gradient.__name__

    def __reduce__(self):
        """Pickled as its NumPy gradient (GradFunction.__reduce__: what it was made of),
        wrapped again when loaded: compiled code is not pickled, the first call compiles."""
        return _loaded, (self.gradient,)

    @property
    def source(self):
        return self.gradient.source

    def jit_source(self, *args, grad_outputs=None):
        """The Numba source a call with ``args`` compiles (raises Refused where none)."""
        return self._entry(self._variant(grad_outputs), args).translation().source

    def __call__(self, *args, grad_outputs=None, **kwargs):
        if not kwargs:
            # The common calls (grad's, and grad's with a seed: one gradient, no value),
            # compiled for these ranks already: hot.py's function for the ranks of the
            # last such call, else the one recorded for these ranks.
            call = self._last_grad if grad_outputs is None else self._last_seeded
            if call is not None:
                result = call(args, grad_outputs)
                if result is not _DECLINED:
                    return result
            table = self._hot if grad_outputs is None else self._hot_seeded
            if table:
                call = table.get(rank_keys(args))
                if call is not None:
                    result = call(args, grad_outputs)
                    if result is not _DECLINED:
                        if grad_outputs is None:
                            self._last_grad = call
                        else:
                            self._last_seeded = call
                        return result
        gfn = self.gradient
        if kwargs or self._declines:
            self._decline("keyword arguments" if kwargs else "hooks" if gfn.hook_names
                          else "has_aux")
            return gfn(*args, grad_outputs=grad_outputs, **kwargs)
        variant = "seeded" if grad_outputs is not None else "value" if gfn.preserve_result \
            else "grad"
        if _integer_wrt(gfn.wrt, args):   # the NumPy gradient refuses it (TypeError)
            return gfn(*args, grad_outputs=grad_outputs)
        entry = self._fast.get((variant, rank_keys(args)))
        if entry is _NUMPY:
            return gfn(*args, grad_outputs=grad_outputs)
        if entry is None or not entry.compiled.guard.holds(gfn.fn):
            for value in args:
                if type(value) not in _SCALARS and type(value) is not numpy.ndarray:
                    self._decline(f"a {type(value).__name__} argument")   # structures, CuPy, ...
                    self._fast[(variant, rank_keys(args))] = _NUMPY   # (rank_keys tells them apart)
                    return gfn(*args, grad_outputs=grad_outputs)
            entry = self._entry(variant, args)
            self._fast[(variant, rank_keys(args))] = entry
        return entry.call(self, args, grad_outputs)

    def _set_call(self, call):
        """``call`` (hot.py's call form, or None: the general ``__call__``) as this
        instance's call: a class of its own (made once) whose ``__call__`` it is, so
        that ``g(x)`` runs it with no call layer of its own."""
        cls = type(self)
        if cls is JitGradFunction:
            if call is None:
                return
            cls = type("JitGradFunction", (JitGradFunction,), {"__slots__": (),
                                                                 "__module__": __name__})
            self.__class__ = cls
        if call is None:
            cls.__call__ = JitGradFunction.__call__
        else:
            cls.__call__ = call
            if _hot_call.C is not None and type(call) is _hot_call.C.Entry:
                _hot_call.C.install(cls)   # g(x) without CPython's generic method call

    def _decline(self, what):
        """One warning per construct that runs the NumPy gradient without a translation."""
        declined = self.__dict__.setdefault("_declined", set())
        if what not in declined:
            declined.add(what)
            code = getattr(self.gradient.fn, "__code__", None)
            _warn(f"{what} is not compiled", code and code.co_filename,
                  code and code.co_firstlineno)

    def _variant(self, grad_outputs):
        if grad_outputs is not None:
            return "seeded"
        return "value" if self.gradient.preserve_result else "grad"

    def _entry(self, variant, args):
        compiled = self.gradient.compiled_for(args)
        key = (id(compiled), variant)
        entry = self._entries.get(key)
        if entry is None or entry.compiled is not compiled:
            entry = self._entries[key] = _Entry(compiled, variant)
        return entry

    def _numpy(self, args, grad_outputs):
        return self.gradient(*args, grad_outputs=grad_outputs)


def _loaded(gfn):
    """A pickled JitGradFunction loaded: ``gfn`` wrapped again, or ``gfn`` itself, with one
    warning, where Numba is not installed (as jit.wrap)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        warnings.warn("srcgrad jit: numba is not installed (pip install \"srcgrad[jit]\"); "
                      "running the NumPy gradient", JitFallbackWarning, stacklevel=2)
        return gfn
    return JitGradFunction(gfn)


def _general(self, args, grad_outputs, kwargs):
    """A call hot.py's call form does not take: the general path."""
    return JitGradFunction.__call__(self, *args, grad_outputs=grad_outputs, **kwargs)


class _Entry:
    """One compiled gradient in one variant: its translation and Numba dispatcher."""

    def __init__(self, compiled, variant):
        self.compiled = compiled
        self.variant = variant
        self.dispatcher = None
        self.refused = None        # the Refused, once the translation refused
        self.failed = set()        # signatures Numba could not compile
        self.warned = False        # the run-time fallback was warned about
        self.optional = frozenset()   # names Numba could not unify (translate, zeros.py)
        self.lists = frozenset()   # tapes kept lists: their array refused a value (fixed_tapes.py)
        self.slower = False        # the NumPy gradient ran faster on the first call (_numpy_faster)
        # the names of optional that zeros.predicted found before Numba typed anything (one
        # typing instead of one per name); emptied where a translation with them fails
        self.predicted = None
        self._translation = None
        self.holds = getattr(getattr(compiled, "guard", None), "holds", None)

    def translation(self):
        if self._translation is None:
            if self.predicted is None:   # the first translation: with the predicted names
                self.predicted = frozenset()
                try:
                    t = translate.translate(self.compiled, self.variant, self.optional,
                                            self.lists, predict=True)
                    self.predicted = t.optional - self.optional
                    self.optional = t.optional
                    self._translation = t
                    return t
                except translate.Refused:   # zeros.py does not take a read: as before
                    pass
            self._translation = translate.translate(self.compiled, self.variant, self.optional,
                                                    self.lists)
        return self._translation

    def _unpredict(self):
        """A translation with predicted names failed in Numba for another reason than a
        name it cannot unify: translated again without them (and found one by one, as
        before), so that a prediction never makes a gradient fall back."""
        if not self.predicted:
            return False
        self.optional, self.predicted = frozenset(), frozenset()
        self._translation, self.dispatcher = None, None
        return True

    def _dispatcher(self):
        from srcgrad.jit import runtime as jrt
        import numba
        t = self.translation()
        filename = f"<srcgrad-jit {t.name} {id(self):x}>"
        lines = t.source.splitlines(True)
        linecache.cache[filename] = (len(t.source), None, lines, filename)
        namespace = dict(t.namespace, _jrt=jrt)
        exec(compile(t.source, filename, "exec"), namespace)
        loader.release_with(filename, [f for f in namespace.values() if isinstance(
            f, types.FunctionType) and f.__code__.co_filename == filename])
        self._filename = filename
        for run in t.runs:   # the main function calls them through its globals
            namespace[run.name] = jrt.elementwise_run(
                run.name, run.params, run.n_inputs, run.targets, run.deps, namespace[run.loop.name],
                namespace[run.original.name])
        dispatcher = numba.njit(**jrt.JIT_OPTIONS)(namespace[t.name])
        dispatcher._can_compile = False   # compiled by _compile only, for types checked first
        return dispatcher

    def stale(self):
        """Whether a global or closure number compiled in as a constant has changed
        (Translation.frozen): then this translation and its compiled code are dropped."""
        t = self._translation
        if t is None or not t.frozen:
            return False
        holds = t.__dict__.get("frozen_holds")
        if holds is None:
            lines, values = translate.frozen_checks(t.frozen)
            namespace = dict(values)
            exec("def holds():\n    try:\n        return (" + "\n                and ".join(lines)
                 + ")\n    except Exception:   # an emptied cell, a deleted global\n"
                 "        return False\n", namespace)
            holds = t.frozen_holds = namespace["holds"]
        if holds():
            return False
        self._translation, self.dispatcher = None, None
        return True

    def call(self, owner, args, grad_outputs):
        if self.refused is not None or self.slower:
            return owner._numpy(args, grad_outputs)
        if self.stale():
            self._unhot(owner)
        if self.dispatcher is None:
            try:
                self.dispatcher = self._dispatcher()
            except translate.Refused as exc:
                self.refused = exc
                file, line = exc.where()
                _warn(f"{exc.construct} is not compiled", file, line)
                return owner._numpy(args, grad_outputs)
        seed = None
        if grad_outputs is not None:
            seed = grad_outputs
            if isinstance(seed, (list, tuple)):
                seed = numpy.asarray(seed)
            if not (type(seed) in _SCALARS or type(seed) is numpy.ndarray):
                return owner._numpy(args, grad_outputs)
        full = self._with_defaults(owner, args)
        buf = None
        if self.variant != "value":   # translate.py's _sg_buf (and _sg_keep)
            position = owner.gradient._plan_of(self.compiled).wrt_positions[0]
            buf = _hot_call.buffer(None if position is None else full[position])
        arrays = self.translation().arrays
        if arrays:   # the global and closure arrays it reads, as the NumPy code reads them now
            try:
                full = full + translate.global_values(arrays)
            except (KeyError, ValueError):   # deleted: the NumPy code raises its NameError
                return owner._numpy(args, grad_outputs)
        call_args = full + ((seed, buf, True) if self.variant == "seeded" else
                            (buf,) if self.variant == "grad" else ())
        if self.failed and _signature(call_args) in self.failed:
            return owner._numpy(args, grad_outputs)
        refused = _unsupported(call_args)
        if refused:
            self.failed.add(_signature(call_args))
            _warn(refused, *self._where())
            return owner._numpy(args, grad_outputs)
        dispatcher = self.dispatcher
        try:
            compile_s = _compile(dispatcher, call_args)
        except Exception as exc:   # Numba's typing or lowering
            if self._ununified(exc) or self._listed(exc) or self._unpredict():   # translated
                # again: that name's zero as None, the tapes as lists, or no predicted names
                self._unhot(owner)
                return self.call(owner, args, grad_outputs)
            self.failed.add(_signature(call_args))
            self._unhot(owner)
            construct, file, line = self._locate(exc)
            _warn(f"Numba cannot compile {construct}", file, line)
            return owner._numpy(args, grad_outputs)
        if compile_s is not None:
            owner.compile_times.append((_signature(call_args), compile_s))
            if _numpy_faster(dispatcher, call_args, owner, args, grad_outputs):
                self.slower = True
                self._unhot(owner)
                return owner._numpy(args, grad_outputs)
        try:
            result = dispatcher(*call_args)
        except ZeroAdjoint:
            return owner._numpy(args, grad_outputs)
        except Exception as exc:
            value = owner._numpy(args, grad_outputs)   # raises the NumPy gradient's error
            self.failed.add(_signature(call_args))   # these types run NumPy from now on
            self._unhot(owner)
            if not self.warned:
                self.warned = True
                _warn(f"the compiled gradient raised {type(exc).__name__}: {exc}",
                      *self._where())
            return value
        if self.variant in ("grad", "seeded") and not self.failed and full is args and \
                not owner.gradient.preserve_result and not owner._declines and \
                self.holds is not None:
            plan = owner.gradient._plan_of(self.compiled)
            if len(plan.wrt_positions) == 1 and not plan.many and plan.wrt_positions[0] is not None:
                self._record_hot(owner, args, plan.wrt_positions[0], call_args)
        return self._finish(owner, args, grad_outputs, seed, result, buf)

    def _with_defaults(self, owner, args):
        """``args`` and the default of each parameter the call leaves out (the compiled
        function takes every parameter, keyword-only ones included, positionally)."""
        params = self.translation().params
        if len(args) >= len(params):
            return args
        inputs = owner.gradient._plan_of(self.compiled).inputs(args, {})
        return tuple(inputs[n] for n in params)

    def _ununified(self, exc):
        """Where Numba could not unify a number and an array for one name: whether a
        translation writing that name's zero number None (zeros.py) replaced this one."""
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
        found = re.search(r"Cannot unify [^\n]*? for '([A-Za-z_]\w*)(?:\.\d+)*'", text)
        name = found and found.group(1)
        if not found and re.search(r"function i(add|sub|mul)>\) found for signature", text):
            lines = re.findall(re.escape(self._filename) + r'", line (\d+)', text)
            source = self.translation().source.splitlines()
            if lines and int(lines[-1]) <= len(source):   # v += an array, v a number
                found = re.match(r"\s*([A-Za-z_]\w*) [-+*]= ", source[int(lines[-1]) - 1])
                name = found and found.group(1)
        if not name or name in self.optional or len(self.optional - self.predicted) >= 8:
            return False
        optional = self.optional | {name}
        try:
            translation = translate.translate(self.compiled, self.variant, optional, self.lists)
        except translate.Refused:
            return False
        self.optional, self._translation = optional, translation
        self.dispatcher = None
        return True

    def _listed(self, exc):
        """Where an array tape refused its value's type (an int: fixed_tapes.py): whether
        a translation with that tape a list replaced this one."""
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
        if fixed_tapes.TAPE_REFUSAL not in text:
            return False
        lines = re.findall(re.escape(self._filename) + r'", line (\d+)', text)
        source = self.translation().source.splitlines()
        if not lines or int(lines[-1]) > len(source):
            return False
        found = re.match(r"\s*_sg_tn(_tape_\w+) = _jrt\.tape_(push|new)\b", source[int(lines[-1]) - 1])
        if not found:
            found = re.match(r"\s*(_tape_\w+) = _jrt\.tape_new\b", source[int(lines[-1]) - 1])
        if not found or found.group(1) in self.lists:
            return False
        self.lists = self.lists | {found.group(1)}
        self._translation, self.dispatcher = None, None
        return True

    def _unhot(self, owner):
        """Calls of these types fail: the common calls no longer take this entry."""
        for name in ("_hot", "_hot_seeded"):
            setattr(owner, name, {k: h for k, h in getattr(owner, name).items()
                                  if h.entry is not self})
        for name in ("_last_grad", "_last_seeded"):
            if getattr(getattr(owner, name), "entry", None) is self:
                setattr(owner, name, None)
        if getattr(type(owner).__dict__.get("__call__"), "entry", None) is self:
            owner._set_call(None)

    def _record_hot(self, owner, args, position, call_args):
        """hot.py's function for calls of these ranks, the one the next call tries first;
        for grad's common call also the class call of ``owner`` (hot.py's call form)."""
        import numba
        seeded = self.variant == "seeded"
        keys = rank_keys(args)
        signature = tuple(numba.typeof(a) for a in call_args)

        def finish(args, grad_outputs, result):
            return self._finish(owner, args, grad_outputs, None, result, None)
        frozen = self.translation().frozen
        numbers = translate.frozen_checks(frozen)
        hot = _hot_call.hot_function(self.compiled.guard, owner._fn, keys, position,
                                     self.dispatcher, seeded, finish, signature,
                                     numbers=numbers)
        hot.entry = self
        (owner._hot_seeded if seeded else owner._hot)[keys] = hot
        if seeded:
            owner._last_seeded = hot
        else:
            owner._last_grad = hot
            call = _hot_call.hot_function(self.compiled.guard, owner._fn, keys, position,
                                          self.dispatcher, False, finish, signature, "call",
                                          _general, numbers, translate.frozen_forms(frozen))
            call.entry = self
            owner._set_call(call)

    def _finish(self, owner, args, grad_outputs, seed, result, buf):
        gfn = owner.gradient
        if self.variant == "grad":
            grads, out = result, None
        elif self.variant == "seeded":
            out, _, grads = result
            if numpy.shape(out) != numpy.shape(seed):
                return owner._numpy(args, grad_outputs)   # raises the NumPy path's error
        else:
            out, grads = result
        if self.variant != "value" and grads[0] is None:   # written into buf
            grads = (buf,) + tuple(grads[1:])
        plan = gfn._plan_of(self.compiled)
        likes = [None if k is None else args[k] for k in plan.wrt_positions]
        if not all(map(_final, grads, likes)):
            grads = _finish_values(grads, self.compiled.wrt, likes, gfn.allow_unused,
                                   gfn.materialize_grads)
        grads = grads if plan.many else grads[0]
        return (out, grads) if gfn.preserve_result else grads

    def _locate(self, exc):
        """What Numba refused (its message's first line) and the user's file and line
        of the generated line it names."""
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
        construct = type(exc).__name__
        mine = re.search(r"srcgrad jit: (rt\.\w+ of [^\n]*)", text)   # runtime.py's refusals
        for line in ([mine.group(1)] if mine else []) + text.splitlines():
            line = line.strip()
            if line and not line.startswith(("Failed in ", "- Resolution failure", "File ")):
                construct = line[:200]
                break
        found = re.findall(re.escape(self._filename) + r'", line (\d+)', text)
        if found:
            origin = self._origin_of(int(found[-1]))
            if origin is not None:
                return construct, origin.filename, origin.lineno
        return (construct,) + self._where()

    def _where(self):
        """The user's file and first line of the function."""
        info = self.compiled.load[0]
        return info.filename, info.first_lineno

    def _origin_of(self, lineno):
        return self.translation().origins().get(lineno)


def _numpy_faster(dispatcher, call_args, owner, args, grad_outputs):
    """Whether the compiled gradient just made fails to beat the NumPy gradient clearly (by
    10%) on this first call's arguments: one warm-up run each, then the fastest of up to
    three runs each, alternating, at most about half a second. The two give the same
    result, and jit=True must not be slower than no jit, so near a tie NumPy is kept: W7's
    loop of BLAS products and W5's products run no faster in Numba. Off with
    SRCGRAD_JIT_RACE=0 (the test suite, whose LLVM runs at -O0, sets it)."""
    if os.environ.get("SRCGRAD_JIT_RACE", "1") == "0":
        return False
    clock = time.perf_counter
    compiled = numpy_time = float("inf")
    try:
        start = clock()
        dispatcher(*call_args)   # warm-up: the first runs touch cold memory
        owner._numpy(args, grad_outputs)
        if clock() - start > 0.25:
            return False
        for _ in range(3):
            start = clock()
            dispatcher(*call_args)
            compiled = min(compiled, clock() - start)
            start = clock()
            owner._numpy(args, grad_outputs)
            numpy_time = min(numpy_time, clock() - start)
            if compiled + numpy_time > 0.25:
                break
    except Exception:   # the call below meets it again and decides
        return False
    return numpy_time < 1.1 * compiled


def _compile(dispatcher, args):
    """Compile ``dispatcher`` for the types of ``args`` (checked by ``_unsupported``), or
    do nothing where it has them: the seconds it took, or None. Implicit compiles stay
    off: a call with other types (another thread's, in the fast path) raises instead of
    compiling them, inside Numba's compiler lock, which this holds while it compiles."""
    import numba
    from numba.core.compiler_lock import global_compiler_lock
    signature = tuple(numba.typeof(a) for a in args)
    if signature in dispatcher.overloads:
        return None
    start = time.perf_counter()
    with global_compiler_lock:
        dispatcher._can_compile = True
        try:
            dispatcher.compile(signature)
        finally:
            dispatcher._can_compile = False
    from srcgrad.jit.numba_types import check_integer_widths
    check_integer_widths(dispatcher, signature)
    return time.perf_counter() - start


def _warn(message, filename, lineno, fn=None):
    """Warn that ``message``'s construct falls back to NumPy, at the user's line: a line of
    a gradient read again (``sg.jvp(sg.grad(f), jit=True)``) is said of the line it
    computes, else of the user's function ``fn`` differentiates."""
    from srcgrad.codegen.refusals import _origin
    while filename and loader.is_generated(filename):   # a gradient read again: the user's line
        origin = _origin(filename, lineno)
        if origin is None:
            break
        filename, lineno = origin.filename, origin.lineno
    while (not filename or loader.in_generated_directory(filename)) and fn is not None:
        code = getattr(fn, "__code__", None)   # (a tape gradient's wrapper: its function's)
        filename, lineno = (code.co_filename, code.co_firstlineno) if code else (None, None)
        fn = getattr(fn, "_srcgrad_gradient_of", None)
    where = f"{filename}, line {lineno}: " if filename else ""
    warnings.warn(f"srcgrad jit: {where}{message}; running the NumPy gradient",
                  JitFallbackWarning, stacklevel=_caller_level())


_HERE = __file__.rsplit("/", 1)[0] if "/" in __file__ else ""


def _caller_level():
    """warnings.warn's stacklevel of the first frame outside this package (the call
    of the gradient: through hot.py's call form or not)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and (frame.f_code.co_filename.startswith(_HERE) or
                                 frame.f_code.co_filename == "<hot call of a jit gradient>"):
        frame, level = frame.f_back, level + 1
    return level


class _JvpEntry(_Entry):
    """``sg.jvp(..., jit=True)``: one tangent program (forward_api.CompiledJVP), compiled
    with Numba per argument types, else run as it is (with one warning)."""

    def __init__(self, compiled, fn):
        super().__init__(compiled, "jvp")
        self.fn, self.user = fn, None

    def translation(self):
        if self._translation is None:
            self._translation = translate.translate_jvp(self.compiled, self.fn)
        return self._translation

    def _where(self):
        code = self.fn.__code__
        return code.co_filename, code.co_firstlineno

    def run(self, args):
        function = self.compiled.function
        if self.refused is not None:
            return function(*args)
        self.stale()
        if self.dispatcher is None:
            try:
                self.dispatcher = self._dispatcher()
            except translate.Refused as exc:
                self.refused = exc
                _warn(f"{exc.construct} is not compiled", *exc.where(), fn=self.user or self.fn)
                return function(*args)
        signature = _signature(args)
        if signature in self.failed:
            return function(*args)
        refused = _unsupported(args)
        if refused:
            self.failed.add(signature)
            _warn(refused, *self._where())
            return function(*args)
        dispatcher = self.dispatcher
        try:
            _compile(dispatcher, args)
        except Exception as exc:   # Numba's typing or lowering
            self.failed.add(signature)
            construct, file, line = self._locate(exc)
            _warn(f"Numba cannot compile {construct}", file, line)
            return function(*args)
        try:
            return dispatcher(*args)
        except Exception as exc:
            value = function(*args)   # raises the tangent program's own error
            self.failed.add(signature)
            _warn(f"the compiled tangent program raised {type(exc).__name__}: {exc}",
                  *self._where())
            return value


def run_jvp(fn, compiled, args, user=None):
    """``compiled.function(*args)`` (forward_api.jvp's call), compiled with Numba."""
    entry = compiled.__dict__.get("_srcgrad_jit")
    if entry is None:
        entry = compiled._srcgrad_jit = _JvpEntry(compiled, fn)
        entry.user = user   # the user's function of a gradient read again (its warnings)
    return entry.run(tuple(args))
