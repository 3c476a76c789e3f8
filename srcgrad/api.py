"""The functional API: grad, value_and_grad, vjp, source, active_variables, function."""

import functools
import threading
import types

import numpy

from srcgrad import runtime
from srcgrad.runtime.arrays import is_cupy_array_type
from srcgrad.grad_mode import OFF as _GRAD_OFF, _state as _grad_state, check_grad_enabled
from srcgrad import caches, disk_cache, disk_entries, pipeline, pytree, rules, show
from srcgrad.pipeline import compile_gradient
from srcgrad.custom_function import is_once_differentiable
from srcgrad.errors import SrcgradError, located_at
from srcgrad.analysis.argument_keys import ClassKey, StaticKey
from srcgrad.analysis.ranks import checked_rank_key, rank_keys
from srcgrad.codegen import tracebacks
from srcgrad.codegen.refusals import in_user_code
from srcgrad import entry
from srcgrad.entry import entry_function
from srcgrad.call_values import (_LEAF_TYPES, _check_differentiable, _finish,
                                  _finish_values, _seed)
from srcgrad import fast_call as _fast_call
from srcgrad import saved_watch as _saved_watch
from srcgrad.backward_call import Backward as _Backward
from srcgrad.saved_watch import watch as _watch
from srcgrad.fast_call import DECLINED as _DECLINED, FastAuxCall as _FastAuxCall, \
    FastCall as _FastCall

_cache = caches.LRU()   # the key (_compiled) -> Compiled, the most recently used kept
_cache_lock = threading.RLock()   # re-entered: sg.grad(sg.grad(u)) inside f compiles while f compiles


def _compiled(fn, wrt, hook_names=(), fuse=False, arg_ranks=None, has_aux=False):
    """The compiled gradient of ``fn``, from the cache while ``compiled.guard.holds(fn)``:
    the one check every reuse of a compiled gradient makes (srcgrad/guard.py). The key
    tells apart what can be hashed cheaply (the code, the closure's cells, the globals,
    the defaults: their objects are kept alive by the entry, so their ids stay theirs);
    the guard checks what the compile read through them."""
    options = pipeline.default_options(fuse)   # a compile under other options is another
    key = (fn.__code__, _closure_key(fn), id(fn.__globals__), id(fn.__defaults__),
           id(fn.__kwdefaults__), _wrt_key(wrt), hook_names, options, rules.VERSION[0],
           arg_ranks, bool(has_aux))
    found = _cache.get(key)
    if found is None or not found.guard.holds(fn):
        with _cache_lock:
            found = _cache.get(key)
            if found is None or not found.guard.holds(fn):
                try:
                    found = _compile(fn, wrt, hook_names, options, arg_ranks, bool(has_aux))
                except SrcgradError as exc:   # in a gradient srcgrad generated: the user's line
                    raise in_user_code(exc, "grad of grad: ") from None
                _cache[key] = found
    return found


def _compile(fn, wrt, hook_names, options, arg_ranks, has_aux):
    """A compile of ``fn``'s gradient, or its entry in the on-disk cache (disk_cache.py)."""
    def compile_it():
        return compile_gradient(fn, wrt, hook_names, options.fuse, arg_ranks, has_aux, options)

    key = disk_cache.key_of(fn, wrt, hook_names, options, arg_ranks, has_aux) \
        if disk_cache.settings.enabled else None
    if key is None:
        return compile_it()
    found = disk_entries.from_disk(fn, key, compile_it)
    if found is None:
        found = compile_it()
        disk_entries.store(found, key, fn)
    return found


def _closure_key(fn):
    return tuple(id(c) for c in fn.__closure__) if fn.__closure__ else ()


def _on_device(args, kwargs):
    """Whether a CuPy array is among the arguments (at the top level)."""
    for value in (*args, *kwargs.values()) if kwargs else args:
        if is_cupy_array_type(type(value)):
            return True
    return False


def _wrt_key(wrt):
    return tuple(wrt) if isinstance(wrt, list) else wrt


class GradFunction:
    """The gradient of a function; call it with the function's arguments.

    Attributes:
        source: the generated gradient source (the generic forward and backward sweeps,
            under a header comment: ``sg.source(fn, wrt)``).
    """

    _fast_any = None   # the _FastCall of a gradient that holds for any ranks
    # Set by srcgrad.nested (which imports this module): the gradient of tape code as a
    # plain function whose adjoint is an hvp, and the custom Function it calls.
    tape_gradient = None
    gradient_class = None
    through_hvp = None   # a gradient differentiated again, called with structures (nested.py)
    differentiable_gradient = None   # what a GradFunction of a GradFunction differentiates
    _inner = None        # the GradFunction whose gradient fn is (as_function), or None
    _refused = None      # why that gradient has no code for arrays (it reads fields: p.a)
    _fast = {}         # (shared, empty) rank_keys(args) -> _FastCall, set per instance
    _hot = None        # the hot call (fast_call.py) of the _FastCall that ran last

    def __init__(self, fn, wrt=0, allow_unused=False, materialize_grads=False,
                 preserve_result=False, hooks=None, fuse=False, has_aux=False):
        self._made_of = (fn, wrt, allow_unused, materialize_grads, preserve_result, hooks, fuse,
                         has_aux)   # what __reduce__ pickles
        if isinstance(fn, GradFunction):
            fn = self.differentiable_gradient(fn, has_aux)
        self.fn = entry_function(fn)
        self._inner = getattr(self.fn, "_srcgrad_composed_from", None)
        if getattr(self.fn, "_srcgrad_is_gradient", False) and not allow_unused:
            # a gradient is zero along what it does not read (jax.grad of jax.grad): an
            # argument only the first derivative used is no mistake of the user's
            materialize_grads = True
        self.hooks = dict(hooks) if hooks else {}
        self.hook_names = tuple(sorted(self.hooks)) if hooks else ()
        self.wrt = wrt
        self.allow_unused = allow_unused
        self.materialize_grads = materialize_grads
        self.preserve_result = preserve_result
        self.fuse = fuse
        self.has_aux = bool(has_aux)

    @property
    def __name__(self):
        return f"grad_{getattr(self.fn, '__name__', 'f')}"

    def __reduce__(self):
        """Pickled as what it was made of (the function, pickled by reference, and the
        options), not its compiled code and caches: loaded, it compiles again on its first
        call (or reads the on-disk cache). A function pickle cannot find by name (a
        lambda, a local function) raises pickle's error naming it."""
        cls = type(self)
        while "_srcgrad_hot" in cls.__dict__:   # the class of a hot call (_set_hot)
            cls = cls.__bases__[0]
        return cls, self._made_of

    @property
    def __doc__(self):
        return f"Gradient of {getattr(self.fn, '__qualname__', self.fn)} with respect to {self.wrt!r}."

    @property
    def compiled(self):
        """The compiled gradient for arguments of any rank (what ``source`` shows)."""
        found = self.__dict__.get("_compiled")
        if found is None or not found.guard.holds(self.fn):
            found = self._compiled = _compiled(self.fn, self.wrt, self.hook_names, self.fuse,
                                               has_aux=self.has_aux)
        return found

    def compiled_for(self, args, kwargs=None):
        """The compiled gradient a call with ``args`` runs: specialised for their ranks
        (a scalar's gradient needs no unbroadcasting), when passed positionally, and for
        the structure of each structured argument (pytree.py), however passed."""
        short = len(args) < self._n_params()
        structured = _any_node(args) or (short and self._node_defaults())
        static_defaults = short and _any_static(getattr(self.fn, "__defaults__", None) or ())
        if kwargs or static_defaults:
            # (a callable or plain object by keyword or default: compiled for it, as if passed)
            kwargs = kwargs or {}
            if not (structured or static_defaults or _any_node(kwargs.values())
                    or self._node_defaults() or _any_static(kwargs.values())):
                return self.compiled
            plan = self.__dict__.get("_signature_plan")
            if plan is None or plan.defaults is not self.fn.__defaults__:   # (the ones it binds)
                plan = self._signature_plan = _CallPlan(self.fn, None, self.wrt)
            inputs = plan.inputs(args, kwargs)
            for n, value in inputs.items():
                if n not in plan.positional and pytree.is_node(value):
                    raise TypeError(f"srcgrad: the keyword-only parameter {n!r} is given a "
                                    f"{type(value).__name__}; pass structures to positional "
                                    f"parameters")
            args = tuple(inputs[n] for n in plan.positional)
            structured = True
        found = self.__dict__.get("_any_rank")
        if found is not None and not structured:
            if found.guard.holds(self.fn):
                return found
            del self._any_rank
        try:
            key = rank_keys(args)
        except SrcgradError as exc:   # (a numpy.matrix argument)
            raise located_at(exc, self.fn) from None
        by_rank = self.__dict__.get("_by_rank")
        if by_rank is None:
            by_rank = self._by_rank = {}
        found = by_rank.get(key)
        if found is None or not found.guard.holds(self.fn):
            found = by_rank[key] = _compiled(self.fn, self.wrt, self.hook_names, self.fuse, key,
                                             self.has_aux)
            if found.rank_free:
                self._any_rank = found  # nothing in it depends on the ranks: skip the key
        return found

    def _n_params(self):
        found = self.__dict__.get("_n_params_found")
        if found is None:
            import inspect
            try:
                found = len(inspect.signature(self.fn).parameters)
            except (TypeError, ValueError):
                found = 0
            self._n_params_found = found
        return found

    def _node_defaults(self):
        """Whether a default value of ``fn`` is a structure (the call may not pass it)."""
        return _any_node(getattr(self.fn, "__defaults__", None) or ()) or _any_node(
            (getattr(self.fn, "__kwdefaults__", None) or {}).values())

    def _plan_of(self, compiled):
        plan = compiled.plan
        if plan is None:
            plan = compiled.plan = _CallPlan(self.fn, compiled, self.wrt)
        return plan

    def _backward(self, compiled, seed, saved):
        if self.hook_names:
            return compiled.backward(seed, saved, self.hooks)
        return compiled.backward(seed, saved)

    @property
    def source(self):
        """The generic code, under its header (show.py): ``sg.source(fn, wrt)``."""
        return show.shown(self.compiled)

    def as_function(self, has_aux=False):
        """The gradient as one plain Python function srcgrad can differentiate again. Of
        ``grad(f, has_aux=True)`` it returns ``(gradients, aux)``: differentiate it with
        ``has_aux=True`` too (``has_aux``, as JAX's ``jacfwd(grad(f, has_aux=True),
        has_aux=True)``), which passes the aux through."""
        if self.preserve_result:
            raise TypeError("srcgrad: differentiate grad(f), not value_and_grad(f)")
        if self.has_aux and not has_aux:
            raise TypeError("srcgrad: grad(f, has_aux=True) returns (gradients, aux): differentiate "
                            "it with has_aux=True too (sg.grad(sg.grad(f, has_aux=True), "
                            "has_aux=True)), which passes the aux through")
        from srcgrad.pipeline import compose_gradient
        if getattr(self.fn, "_srcgrad_gradient_of", None) is not None \
                and not getattr(self.fn, "_srcgrad_composed", False):
            return self.tape_gradient()   # an hvp's wrapper (nested.py): refused there
        try:
            compiled = self.compiled
        except SrcgradError as exc:   # no code for arrays (it reads fields: p.a)
            return self.structured_only(exc)
        if (compiled.uses_tape or compiled.mutates_saved) and not compiled.tuple_output and \
                not any(is_once_differentiable(c) for c in compiled.functions):
            if compiled.gradient_forward is None and not (self.has_aux and not self.fuse):
                return self.tape_gradient()   # its own adjoint is an hvp (nested.py)
            # Reverse over reverse: the tape as a list (reverse.py differentiates rt.tape_pop).
            function = compose_gradient(compiled, isinstance(self.wrt, (tuple, list)),
                                        only_gradients=True, for_transform=True,
                                        check_structures=True, aux=self.has_aux)
            function._srcgrad_gradient_of = self.fn
            function._srcgrad_composed = True   # a derivative of any order reads it again
            try:   # what reverse mode cannot read again gets the hvp adjoint instead
                GradFunction(function, self.wrt, has_aux=self.has_aux).compiled
            except SrcgradError as exc:
                wrapper = self.tape_gradient()
                wrapper._srcgrad_refusal = exc   # at the user's line: a third derivative says it
                return wrapper
        else:
            function = compose_gradient(compiled, isinstance(self.wrt, (tuple, list)), aux=self.has_aux)
        function._srcgrad_composed_from = self   # what a structured argument goes through
        return function

    def _inputs(self, compiled, args, kwargs):
        return self._plan_of(compiled).inputs(args, kwargs)

    def __call__(self, *args, grad_outputs=None, **kwargs):
        # (A gradient with a hot call has a class of its own whose __call__ is the hot
        # call's ``method``, which does what this does: ``_set_hot``.)
        if _GRAD_OFF[0] and not _grad_state.enabled:   # (no thread has them off: skipped)
            check_grad_enabled()
        hot = self._hot   # set only where _inner and _refused are None
        if hot is not None and not kwargs:
            try:   # free until something raises (CPython 3.11+)
                result = hot(args, grad_outputs)
            except Exception as exc:
                mapped = _raised(exc)
                if mapped is None:
                    raise
                raise mapped from None
            if result is not _DECLINED:
                return result
        return self._general(args, grad_outputs, kwargs)

    def _general(self, args, grad_outputs, kwargs):
        """A call the hot call does not take (or made before there is one)."""
        if _GRAD_OFF[0] and not _grad_state.enabled:
            check_grad_enabled()
        try:
            if self.fuse is None and self._inner is None and _on_device(args, kwargs):
                return self._fused()._general(args, grad_outputs, kwargs)
            if self._inner is not None and (_any_node(args) or _any_node(kwargs.values())
                                            or self._node_defaults()):
                return self.through_hvp(args, kwargs, grad_outputs)
            if self._refused is not None:
                raise self._refused
            if not kwargs:
                fast = self._fast_any or self._fast.get(rank_keys(args))
                if fast is not None:
                    if self._inner is None and type(fast) is _FastCall:
                        self._set_hot(fast.hot)   # the next call like this one runs it
                    result = fast.run(args, grad_outputs)
                    if result is not _DECLINED:
                        return result
            return self._call(args, grad_outputs, kwargs)
        except Exception as exc:
            mapped = _raised(exc, self.fn)
            if mapped is None:
                raise
            raise mapped from None

    def _fused(self):
        """This gradient with ``fuse=True``: what ``fuse=None`` runs for CuPy arguments
        (its own compiled code, caches and fast calls, apart from the NumPy ones)."""
        twin = self.__dict__.get("_fused_twin")
        if twin is None:
            twin = self._fused_twin = GradFunction(
                self.fn, self.wrt, self.allow_unused, self.materialize_grads,
                self.preserve_result, self.hooks, fuse=True, has_aux=self.has_aux)
        return twin

    def _set_hot(self, hot):
        """Run ``hot`` from the next call on: as ``self._hot``, and as the ``__call__`` of a
        class of this gradient's own (a subclass of its class, one per hot call, kept with
        it), which saves ``__call__``'s own Python call. A class with a ``__call__`` of its
        own keeps it."""
        self._hot = hot
        cls = type(self)
        base = cls.__bases__[0] if "_srcgrad_hot" in cls.__dict__ else cls
        if base.__call__ is not GradFunction.__call__:
            return
        own = hot.classes.get(base)
        if own is None:
            doc = next(vars(k)["__doc__"] for k in base.__mro__ if "__doc__" in vars(k))
            own = hot.classes[base] = type(base.__name__, (base,), {
                "__call__": hot.method, "_srcgrad_hot": hot, "__doc__": doc,
                "__module__": base.__module__, "__qualname__": base.__qualname__})
        self.__class__ = own

    def _call(self, args, grad_outputs, kwargs):
        """Any call: keyword arguments, grad_outputs, hooks, the value returned."""
        compiled = self.compiled_for(args, kwargs)
        plan = compiled.plan or self._plan_of(compiled)
        if kwargs or len(args) != plan.n_positional or not plan.simple:
            likes = plan.wrt_values(args, kwargs)
        else:
            likes = [None if k is None else args[k] for k in plan.wrt_positions]
        for value in likes:
            if value is not None and not (type(value) is numpy.ndarray and value.dtype.kind == "f"):
                for name, like in zip(compiled.wrt, likes):   # raises for the first that is not
                    _check_differentiable(name, like)
                break
        if grad_outputs is None and not kwargs and not self.has_aux:
            fast = self._record_fast(compiled, plan, args)
            if fast is not None:   # the composed function, which later calls run, runs now
                result = fast.run(args, checked=True)   # (compiled_for checked the guard)
                if result is not _DECLINED:
                    return result
        for_grad = compiled.forward_for_grad
        if for_grad is not None and grad_outputs is None and not self.preserve_result:
            # A scalar output whose value nobody sees: its seed is 1 and it need not be computed.
            out, saved = for_grad(*args, **kwargs) if kwargs else for_grad(*args)
            seed = 1.0
        else:
            out, saved = compiled.forward(*args, **kwargs) if kwargs else compiled.forward(*args)
            if self.has_aux:
                out, aux = out   # the forward sweep checked it is a pair (transform/aux.py)
            if grad_outputs is None and not compiled.tuple_output:
                seed = runtime.default_seed(out)
            else:
                seed = _seed(out, grad_outputs, compiled.tuple_output)
        if self.hook_names:
            grads = compiled.backward(seed, saved, self.hooks)
        else:
            grads = compiled.backward(seed, saved)
        grads = _finish_values(grads, compiled.wrt, likes, self.allow_unused, self.materialize_grads,
                               seed)
        result = grads if plan.many else grads[0]
        if self.has_aux:
            result = ((out, aux), result) if self.preserve_result else (result, aux)
        elif self.preserve_result:
            return out, result
        if not kwargs:
            self._record_fast(compiled, plan, args)
        return result

    def _record_fast(self, compiled, plan, args):
        """The FastCall later calls like this one (positional, no ``grad_outputs``) run,
        recorded and, without has_aux, its composed function made now, with the compile:
        the second call compiles nothing. None where it does not apply."""
        if len(args) != plan.n_positional or not _FastCall.applies(self, compiled, plan):
            return None
        fast = (_FastAuxCall if self.has_aux else _FastCall)(self, compiled, plan, rank_keys(args))
        if not self.has_aux:
            fast.gradient = fast._gradient()
            if self._inner is None:
                self._set_hot(fast.hot)
        if compiled.rank_free:
            self._fast_any = fast
        else:
            self._fast_any = None   # it was compiled from what no longer holds, if any
            if "_fast" not in self.__dict__:
                self._fast = {}
            self._fast[rank_keys(args)] = fast
        return fast


def _raised(exc, fn=None):
    """What a gradient's call raises for ``exc``: None for ``exc`` itself (its traceback
    shows the user's line after each generated frame), or a refusal at the user's line
    (a refusal of an argument, which names no line: at ``fn``'s def)."""
    tracebacks.locate(exc)
    if isinstance(exc, SrcgradError) and exc.filename is None and fn is not None:
        return located_at(exc, fn)
    if isinstance(exc, SrcgradError):   # refused by code srcgrad generated: the user's line
        mapped = in_user_code(exc, "grad of grad: ")
        if mapped is not exc:
            return mapped
    return None


# The hot call's method (fast_call.py) does what __call__ does, with these.
_fast_call.CALLS.update(GENERAL=GradFunction._general, RAISED=_raised, GRAD_OFF=_GRAD_OFF)


def _any_node(values):
    """Whether any of ``values`` is a structure (a list, dict, dataclass, ...: pytree.py)."""
    for value in values:
        if type(value) not in _LEAF_TYPES and pytree.is_node(value) and value is not None:
            return True
    return False


def _any_static(values):
    """Whether any of ``values`` is compiled for as a static argument (a callable object,
    an instance of a plain class: argument_keys.StaticKey, ClassKey)."""
    return any(type(v) not in _LEAF_TYPES and isinstance(checked_rank_key(v), (StaticKey, ClassKey))
               for v in values)


class _CallPlan:
    """What a call needs to know about the parameters, prepared once per gradient."""

    def __init__(self, fn, compiled, wrt):
        import inspect
        self.signature = inspect.signature(fn)
        params = list(self.signature.parameters.values())
        self.positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.simple = len(self.positional) == len(params) and all(p.default is p.empty for p in params)
        self.n_positional = len(self.positional)
        if compiled is None:   # (binding arguments only)
            self.defaults = fn.__defaults__   # (kept: a tuple, whose identity fixes its items)
            return
        self.wrt_positions = tuple(self.positional.index(n) if n in self.positional else None
                                   for n in compiled.wrt)
        self.wrt_names = compiled.wrt
        self.many = isinstance(wrt, (tuple, list))

    def inputs(self, args, kwargs):
        if self.simple and not kwargs and len(args) == self.n_positional:
            return dict(zip(self.positional, args))
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.arguments

    def wrt_values(self, args, kwargs):
        """The argument bound to each wrt name (None for a local variable)."""
        if self.simple and not kwargs and len(args) == self.n_positional:
            return [None if k is None else args[k] for k in self.wrt_positions]
        inputs = self.inputs(args, kwargs)
        return [inputs.get(n) for n in self.wrt_names]


def grad(fn, wrt=0, *, allow_unused=False, materialize_grads=False, preserve_result=False,
         hooks=None, fuse=None, has_aux=False, jit=False):
    """The gradient of ``fn`` with respect to ``wrt``, as a function of ``fn``'s arguments.

    Args:
        fn: a Python function over NumPy (or CuPy) arrays and floats.
        wrt: a parameter position (int), a parameter or local variable name (str:
            a local gives the gradient with respect to that intermediate), or a
            tuple/list of those (then a tuple of gradients is returned).
        allow_unused: an input the output does not depend on gets None
            instead of an error.
        materialize_grads: such an input gets zeros instead.
        preserve_result: return ``(fn(*args), gradients)``.
        hooks: a dict from variable names of ``fn`` to functions called with
            that variable's complete gradient during the reverse sweep; a hook
            that returns an array replaces the gradient (PyTorch's
            ``register_hook``). A variable bound several times (in a loop)
            calls its hook once per binding, last binding first.
        fuse: on CuPy, run each chain of elementwise operations (forward and
            adjoint) as one fused kernel (``cupy.fuse``); NumPy runs the same
            code unfused. The default, None, fuses calls with CuPy arrays and
            not others; False never fuses. See docs/performance.md.
        has_aux: ``fn`` returns a pair ``(output, aux)`` (JAX): only ``output`` is
            differentiated (``grad_outputs`` seeds it), and the call returns
            ``(gradients, aux)`` (with ``preserve_result``, ``((output, aux), gradients)``).
            ``aux`` is any value, computed as ``fn`` computes it, with no gradient.
        jit: compile the gradient with Numba (``pip install "srcgrad[jit]"``) on its
            first call for each argument types; what Numba cannot compile runs the
            NumPy gradient, with one warning (srcgrad/jit/).

    Returns:
        A GradFunction (with ``jit=True``, a jit.JitGradFunction); call it as ``g(*args, grad_outputs=None, **kwargs)``.

    Example:
        >>> import numpy as np, srcgrad as sg
        >>> def f(x):
        ...     return np.sum(x ** 2)
        >>> sg.grad(f)(np.array([1.0, 2.0]))
        array([2., 4.])
    """
    target = entry.variadic(fn)
    if target is not None:   # one gradient per call's arity (entry.ByArity)
        return entry.ByArity(target, functools.partial(
            grad, wrt=wrt, allow_unused=allow_unused, materialize_grads=materialize_grads,
            preserve_result=preserve_result, hooks=hooks, fuse=fuse, has_aux=has_aux, jit=jit),
            own=("grad_outputs",))
    gfn = GradFunction(fn, wrt, allow_unused, materialize_grads, preserve_result, hooks, fuse,
                       has_aux)
    if jit:
        from srcgrad import jit as _jit
        return _jit.wrap(gfn)
    return gfn


def value_and_grad(fn, wrt=0, **options):
    """Like ``grad(..., preserve_result=True)``: returns ``(value, gradients)``, or with
    ``has_aux=True`` ``((value, aux), gradients)``."""
    options["preserve_result"] = True
    return grad(fn, wrt, **options)


value_and_grad.srcgrad_value_and_grad = grad   # inside a differentiated function: its value
                                               # and sg.grad (transform/anf_expressions.py)


def _of_user(exc, fn):
    """``exc`` said at the user's line: ``fn`` may be a gradient read again
    (``sg.jacrev(sg.grad(f))``), whose refusals name generated code."""
    inner = getattr(fn, "_srcgrad_gradient_of", None)
    code = getattr(inner, "__code__", None)
    info = code and types.SimpleNamespace(filename=code.co_filename,
                                          first_lineno=code.co_firstlineno)
    return in_user_code(exc, "grad of grad: ", inner if code else None, info)


def vjp(fn, wrt=0, *, allow_unused=False, materialize_grads=False, hooks=None, fuse=False,
        has_aux=False, jit=False):
    """Split reverse mode: ``out, backward = vjp(f, wrt)(*args)``.

    ``backward(grad_outputs=None, retain_graph=False)`` returns the gradients;
    calling it again requires ``retain_graph=True`` on the previous call, as in
    PyTorch. With ``has_aux=True`` (``fn`` returns ``(output, aux)``):
    ``out, backward, aux = vjp(f, wrt, has_aux=True)(*args)``, ``backward`` seeding
    the output only. ``jit``: ``backward`` runs the gradient compiled with Numba
    (srcgrad/jit/, as ``grad(..., jit=True)``).
    """
    target = entry.variadic(fn)
    if target is not None:   # one vjp per call's arity (entry.ByArity)
        return entry.ByArity(target, functools.partial(
            vjp, wrt=wrt, allow_unused=allow_unused, materialize_grads=materialize_grads,
            hooks=hooks, fuse=fuse, has_aux=has_aux, jit=jit))
    gfn = GradFunction(fn, wrt, allow_unused, materialize_grads, hooks=hooks, fuse=fuse,
                       has_aux=has_aux)

    def run(*args, **kwargs):
        check_grad_enabled()
        try:
            compiled = gfn.compiled_for(args, kwargs)
            inputs = gfn._inputs(compiled, args, kwargs)
            for name in compiled.wrt:
                if name in inputs:
                    _check_differentiable(name, inputs[name])
            out, saved = compiled.forward(*args, **kwargs)
        except Exception as exc:
            tracebacks.locate(exc)
            if isinstance(exc, SrcgradError):   # refused in code srcgrad generated
                raise _of_user(exc, fn) from None
            raise
        options = (allow_unused, materialize_grads, isinstance(wrt, (tuple, list)))
        # what backward reads by a global or closure name, and the arrays reachable from
        # what both sweeps read so, must not change before it runs either
        # read by name when backward runs (with jit, both sweeps run again from the arguments)
        free = _saved_watch.free_objects((compiled.backward,) + ((compiled.forward,) if jit else ()))
        objects = [o for _, _, o in free + _saved_watch.free_objects((compiled.forward,))]
        watched = _watch((saved, [o for _, _, o in free if runtime.is_array(o)]),
                         (args, kwargs, out, _saved_watch.reachable(objects)))
        if has_aux:
            out, aux = out
            return out, _Backward(gfn, compiled, saved, out, inputs, options, watched, free), aux
        return out, _Backward(gfn, compiled, saved, out, inputs, options, watched, free)

    run.__name__ = f"vjp_{getattr(fn, '__name__', 'f')}"
    if jit:
        from srcgrad import jit as _jit
        return _jit.wrap_vjp(run, gfn)
    return run


def source(fn, wrt=0, fuse=False, args=None, has_aux=False, composed=False, mode="vjp"):
    """The generated gradient source of ``fn`` with respect to ``wrt``, as a str, under
    a header comment that says which code it is.

    Without ``args``: the generic code, for arguments of any rank. With ``args``
    (example arguments, a tuple): the code the cache holds for arguments like those
    (the sweeps, which ``value_and_grad``, ``vjp`` and ``grad_outputs=`` run; ``composed=True``:
    the one function ``grad(fn, wrt)(*args)`` composes from them and runs).
    ``has_aux``: as for ``grad``. ``mode="jvp"``: the tangent program of forward mode
    (``sg.jvp``) for tangents of the parameters ``wrt`` names.
    """
    if mode == "jvp":
        return show.tangent_program(fn, wrt)
    if mode != "vjp":
        raise ValueError(f"srcgrad.source: mode is 'vjp' or 'jvp', not {mode!r}")
    target = entry.variadic(fn)
    if target is not None and args is not None:   # the function of those arguments' count
        fn = entry.fixed_arity(target, len(tuple(args)))
    gfn = GradFunction(fn, wrt, fuse=fuse, has_aux=has_aux)
    if args is None:
        return show.shown(gfn.compiled)
    args = tuple(args)
    return show.shown(gfn.compiled_for(args), args, composed)


def active_variables(fn, wrt=0):
    """Names of ``fn``'s variables that depend on ``wrt`` (PyTorch's requires_grad, statically)."""
    compiled = _compiled(entry_function(fn), wrt)
    return {n for n in compiled.activity.active if n in compiled.user_locals}


def function(fn):
    """Mark ``fn`` for srcgrad; it stays callable exactly as before."""
    fn.__srcgrad__ = True
    return fn
